//! The tests: found from the project's manifests ([`detect`]), planned ([`plan`]), run as
//! supervised process groups with a timeout, a memory limit, a capped output and no secrets in
//! their environment, here or in a Docker container ([`command`], [`env`], [`sandbox`]), and
//! read into the unified result schema ([`ralph_actors::schema::test_run::TestRun`], documented
//! in `docs/test-runners.md`): each tool's report ([`report`]) or its text ([`parse`]),
//! failures categorised ([`classify`]), coverage and lint added ([`coverage`], [`lint`]), every
//! language of a project merged ([`project`]).

pub(crate) mod classify;
pub(crate) mod command;
pub(crate) mod coverage;
pub mod detect;
pub(crate) mod env;
pub mod language;
pub(crate) mod lint;
pub(crate) mod parse;
pub mod plan;
pub mod project;
mod reading;
pub mod report;
pub(crate) mod sandbox;
mod tools;

pub use command::{note, ProcessRunner, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT};
pub use env::is_secret_var;
pub use parse::{parse, strip_ansi, Parsed};
pub use sandbox::{check_docker, default_image, SandboxError, DEFAULT_MEMORY_LIMIT_MB};
