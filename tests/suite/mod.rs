mod support;

mod architecture;
mod budget;
mod chaos;
mod cli;
mod context;
mod criteria;
mod guard;
mod lifecycle;
mod loop_runs;
mod memory;
mod micro_agent;
mod mutation;
mod output;
mod pace;
mod providers;
mod runners;
