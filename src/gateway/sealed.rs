//! A request body masked string by string, remembering what each long string was masked to:
//! an agent sends its whole conversation again with every call, so all of it but the newest
//! messages was masked before, and masking it again would cost the most of a call's time.
//!
//! A remembered text stands only while the run's table of values holds as many as when it was
//! masked: a value found later (in a file read since) must be masked in the old text too, so a
//! grown table sends every text through the guard again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ralph_guard::{Guard, GuardError};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_128;

/// Strings shorter than this are masked again each time: cheaper than remembering them.
const REMEMBERED_FROM: usize = 256;
/// The masked text kept at the most, in bytes; past it, what is kept is forgotten at once.
const REMEMBERED_AT_MOST: usize = 64 << 20;

/// The guard, and what it masked.
pub(crate) struct Sealer {
    guard: Arc<Guard>,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// The table's size when the texts were masked.
    known: usize,
    /// By the hash of a text: what it was masked to.
    masked: HashMap<u128, Arc<str>>,
    bytes: usize,
}

impl Sealer {
    pub fn new(guard: Arc<Guard>) -> Self {
        Self {
            guard,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Masks every string of `value`, as a call to a model is masked; `Err` in block mode when
    /// one holds a value.
    pub fn seal(&self, value: &mut Value) -> Result<(), GuardError> {
        match value {
            Value::String(s) => *s = self.seal_text(s)?,
            Value::Array(items) => {
                for item in items {
                    self.seal(item)?;
                }
            }
            Value::Object(map) => {
                for (_, item) in map.iter_mut() {
                    self.seal(item)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn seal_text(&self, text: &str) -> Result<String, GuardError> {
        if text.len() < REMEMBERED_FROM {
            return Ok(self.guard.seal(text)?.text);
        }
        let key = xxh3_128(text.as_bytes());
        if let Some(masked) = self.current().masked.get(&key) {
            return Ok(masked.to_string());
        }
        let masked = self.guard.seal(text)?.text;
        // Masking it may have found new values: it is remembered under the table as it is now,
        // which the next look checks again.
        let mut seen = self.current();
        if seen.bytes + masked.len() > REMEMBERED_AT_MOST {
            seen.masked.clear();
            seen.bytes = 0;
        }
        seen.bytes += masked.len();
        seen.masked.insert(key, Arc::from(masked.as_str()));
        Ok(masked)
    }

    /// What is remembered, forgotten first if the table has changed since it was masked.
    fn current(&self) -> std::sync::MutexGuard<'_, Seen> {
        let known = self.guard.known();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.known != known {
            *seen = Seen {
                known,
                ..Seen::default()
            };
        }
        seen
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use ralph_guard::GuardConfig;
    use serde_json::json;

    #[test]
    fn a_text_masked_before_is_masked_again_once_a_value_in_it_is_found_elsewhere() {
        let guard = Arc::new(Guard::new(&GuardConfig::all()).unwrap());
        let sealer = Sealer::new(guard.clone());
        // A password no rule finds on its own, in a long text.
        let long = format!(
            "{}\nthe backup password is Kx9pq2Lm\n",
            "fn main() {}\n".repeat(40)
        );
        let mut first = json!({"content": long.clone()});
        sealer.seal(&mut first).unwrap();
        assert!(first["content"].as_str().unwrap().contains("Kx9pq2Lm"));
        // Found by a rule in another message: from now on it is masked everywhere.
        let mut found = json!({"content": "DB_PASSWORD=Kx9pq2Lm"});
        sealer.seal(&mut found).unwrap();
        let mut again = json!({"content": long});
        sealer.seal(&mut again).unwrap();
        assert!(
            !again["content"].as_str().unwrap().contains("Kx9pq2Lm"),
            "{again}"
        );
    }

    #[test]
    fn a_remembered_text_is_masked_as_the_guard_masks_it() {
        let guard = Arc::new(Guard::new(&GuardConfig::all()).unwrap());
        let sealer = Sealer::new(guard.clone());
        let text = format!(
            "{}\nAWS_ACCESS_KEY_ID=AKIAZ2QXLW6HKJH7TRBQ\n",
            "x = 1\n".repeat(60)
        );
        let mut a = json!([text.clone()]);
        let mut b = json!([text.clone()]);
        sealer.seal(&mut a).unwrap();
        sealer.seal(&mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[0], guard.seal(&text).unwrap().text);
    }
}
