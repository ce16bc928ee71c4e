mod support;

mod cli;
mod lifecycle;
mod loop_runs;
mod micro_agent;
mod providers;
