//! Finding a target's project root, manifest, tests and test file from the files around it, for
//! runs without `-t` / `-f` (see `docs/test-runners.md`).
//!
//! [`detect_plans`] turns the nearest manifests into [`TestPlan`](crate::runner::plan::TestPlan)s: one per language found, each
//! asking its tool for a machine-readable report.
//!
//! The detection itself and its errors: `plans`; the directories searched, the project root and
//! the test file: `search`; the stacks a directory's manifests name and the optional tools that
//! pick a stack's framework: `stack`; each stack's plan: `node`, `python`, `rust`, from the
//! pieces every plan shares (`command`: the report file and the command run as is).

mod command;
mod node;
mod plans;
mod python;
mod rust;
mod search;
mod stack;

pub use command::custom_plan;
pub use plans::{detect_plans, detect_plans_with, framework_plan, DetectError};
pub use search::{find_manifest, find_test_file, project_root};
pub use stack::Probe;
