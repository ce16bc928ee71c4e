//! LocalGuard at the ports: what the core reads from the machine comes in masked, and what it
//! writes to the project goes out with the values put back. So the core itself only ever holds
//! masked text: every prompt, log, report, event and vault record is masked by construction,
//! and only the files written to the project (the target, Chaos's test files) hold the values.
//! A run wraps its ports in these itself ([`crate::supervisor::run::Run`]): no caller can pass
//! an unguarded one.
//!
//! The way out to a model is guarded apart, by type: [`crate::ports::llm::GuardedRequest`].
//!
//! - `workspace`: the project's files;
//! - `runner`: the unit tests' and Chaos's runs (their output, failures, mutants);
//! - this module: masking every string of a document.

mod runner;
mod workspace;

pub use runner::{GuardedChaos, GuardedRunner};
pub use workspace::GuardedWorkspace;

use ralph_guard::{Guard, GuardError, Mode};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The line a role's system prompt gets when its request holds placeholders.
pub const NOTE: &str = "Some values are hidden from you behind placeholders such as \
<<SECRET_AWS_ACCESS_KEY_ID_1>> or <<PII_EMAIL_1>> (credentials and personal data). Treat each as \
the value it stands for: keep it exactly as written, where it is, and never write one that you \
were not given; they are put back in the file after you reply.";

/// Why the strings of a document could not be masked or sealed.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// A string holds what LocalGuard lets no further (`block` mode).
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// The document is not plain data: it does not go to JSON and back (a plain-data type
    /// never is).
    #[error("the document cannot be rebuilt: {0}")]
    Rebuild(#[from] serde_json::Error),
}

/// `value` with every string in it masked as text coming in (`origin`: where it came from,
/// for `block` mode's message).
pub fn mask_strings<T: Serialize + DeserializeOwned>(
    guard: &Guard,
    value: T,
    origin: Option<&str>,
) -> Result<T, DocumentError> {
    if guard.mode() == Mode::Off {
        return Ok(value);
    }
    rewrite(value, &mut |s: &mut String| {
        *s = guard.mask(s, origin).text;
        Ok(())
    })
}

/// `value` with every string in it sealed as text going out (a record for the shared vault).
pub fn seal_strings<T: Serialize + DeserializeOwned>(
    guard: &Guard,
    value: T,
) -> Result<T, DocumentError> {
    if guard.mode() == Mode::Off {
        return Ok(value);
    }
    rewrite(value, &mut |s: &mut String| {
        *s = guard.seal(s)?.text;
        Ok(())
    })
}

/// What is done to each string of a document.
type Each<'a> = &'a mut dyn FnMut(&mut String) -> Result<(), DocumentError>;

fn rewrite<T: Serialize + DeserializeOwned>(value: T, f: Each<'_>) -> Result<T, DocumentError> {
    let mut json = serde_json::to_value(&value)?;
    walk(&mut json, f)?;
    Ok(serde_json::from_value(json)?)
}

fn walk(value: &mut serde_json::Value, f: Each<'_>) -> Result<(), DocumentError> {
    use serde_json::Value;
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().try_for_each(|v| walk(v, &mut *f)),
        Value::Object(map) => map.values_mut().try_for_each(|v| walk(v, &mut *f)),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_guard::GuardConfig;

    #[derive(Debug, Serialize, serde::Deserialize, PartialEq)]
    struct Doc {
        name: String,
        lines: Vec<String>,
        n: u32,
    }

    #[test]
    fn every_string_of_a_document_is_masked() {
        let guard = Guard::new(&GuardConfig::all()).expect("guard");
        let doc = Doc {
            name: "mail ada@example.org".into(),
            lines: vec![
                "ok".into(),
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789".into(),
            ],
            n: 3,
        };
        let masked = mask_strings(&guard, doc, Some("tests")).expect("masked");
        assert_eq!(masked.name, "mail <<PII_EMAIL_1>>");
        assert_eq!(masked.lines[0], "ok");
        assert!(!masked.lines[1].contains("ghp_"), "{}", masked.lines[1]);
        assert_eq!(masked.n, 3);
    }

    #[test]
    fn a_document_that_block_mode_stops_fails_as_its_own_kind() {
        let guard = Guard::new(&GuardConfig {
            mode: Mode::Block,
            ..GuardConfig::all()
        })
        .expect("guard");
        let doc = Doc {
            name: "token ghp_abcdefghijklmnopqrstuvwxyz0123456789".into(),
            lines: Vec::new(),
            n: 1,
        };
        let err = seal_strings(&guard, doc).expect_err("blocked");
        assert!(matches!(err, DocumentError::Guard(_)), "{err}");
        // A document that is not plain data (a map with a key JSON cannot hold) says so.
        let odd = std::collections::HashMap::from([((1, 2), "x".to_string())]);
        let err = seal_strings(&guard, odd).expect_err("not plain data");
        assert!(matches!(err, DocumentError::Rebuild(_)), "{err}");
    }
}
