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

use ralph_guard::{Guard, Mode};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The line a role's system prompt gets when its request holds placeholders.
pub const NOTE: &str = "Some values are hidden from you behind placeholders such as \
<<SECRET_AWS_ACCESS_KEY_ID_1>> or <<PII_EMAIL_1>> (credentials and personal data). Treat each as \
the value it stands for: keep it exactly as written, where it is, and never write one that you \
were not given; they are put back in the file after you reply.";

/// `value` with every string in it masked as text coming in (`origin`: where it came from,
/// for `block` mode's message). `Err` only if the document cannot be rebuilt, which a
/// plain-data type never hits.
pub fn mask_strings<T: Serialize + DeserializeOwned>(
    guard: &Guard,
    value: T,
    origin: Option<&str>,
) -> Result<T, String> {
    if guard.mode() == Mode::Off {
        return Ok(value);
    }
    rewrite(value, &mut |s: &mut String| {
        *s = guard.mask(s, origin).text;
        Ok(())
    })
}

/// `value` with every string in it sealed as text going out (a record for the shared vault).
pub fn seal_strings<T: Serialize + DeserializeOwned>(guard: &Guard, value: T) -> Result<T, String> {
    if guard.mode() == Mode::Off {
        return Ok(value);
    }
    rewrite(value, &mut |s: &mut String| {
        *s = guard.seal(s).map_err(|e| e.to_string())?.text;
        Ok(())
    })
}

fn rewrite<T: Serialize + DeserializeOwned>(
    value: T,
    f: &mut dyn FnMut(&mut String) -> Result<(), String>,
) -> Result<T, String> {
    let mut json = serde_json::to_value(&value).map_err(|e| e.to_string())?;
    walk(&mut json, f)?;
    serde_json::from_value(json).map_err(|e| e.to_string())
}

fn walk(
    value: &mut serde_json::Value,
    f: &mut dyn FnMut(&mut String) -> Result<(), String>,
) -> Result<(), String> {
    use serde_json::Value;
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().try_for_each(|v| walk(v, f)),
        Value::Object(map) => map.values_mut().try_for_each(|v| walk(v, f)),
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
}
