mod support;

mod cli;
mod loop_runs;
