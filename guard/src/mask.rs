//! The guard: masks what the detector finds, puts it back in what comes back, and counts.
//!
//! - [`Guard::mask`] is for text coming in from the machine (files, test output): every value
//!   found becomes its placeholder, and a placeholder-like text already there is escaped behind
//!   a placeholder of its own, so it comes back as it was and is never taken for ours.
//! - [`Guard::seal`] is for text going out to a model: the same masking (a value the way in
//!   missed, the user's own guidance), without escaping, since the run's placeholders are in it.
//!   In `block` mode it refuses instead, naming the kind and where the value came from.
//! - [`Guard::check`] is for a model's reply: a placeholder it invented or mangled is an error,
//!   and no value is ever guessed.
//! - [`Guard::unmask`] is for text about to be written: each placeholder becomes its value; one
//!   that cannot be restored stops the write.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::{GuardConfig, Mode};
use crate::kind::{Finding, Kind};
use crate::literals::Literals;
use crate::placeholder;
use crate::rules::RuleError;
use crate::scan::{resolve, Detector};
use crate::table::{Origin, Table};

/// Why the guard refused a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    #[error("`{placeholder}` is not a placeholder of this run: a model invented it or changed its number; its value cannot be restored")]
    Unknown { placeholder: String },
    #[error("`{text}` looks like a placeholder written wrongly (they read `<<KIND_N>>`, exactly): its value cannot be restored")]
    Mangled { text: String },
    #[error("local_guard.mode is block and the call would send {kind}{}: nothing was sent", origin.as_ref().map(|o| format!(" (from {o})")).unwrap_or_default())]
    Blocked {
        kind: String,
        origin: Option<String>,
    },
}

/// A masked text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Masked {
    pub text: String,
    /// Values masked in this text, by kind (`SECRET_AWS_ACCESS_KEY_ID`): occurrences.
    pub found: BTreeMap<String, usize>,
}

/// What the guard did in a run: counts and kinds, never values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Distinct values masked, by kind.
    pub masked: BTreeMap<String, usize>,
    /// Placeholders put back into text written to the project.
    pub restored: usize,
    /// Distinct values an allowlist let through.
    pub allowlisted: usize,
}

/// The run's guard. Thread-safe: the table is behind a lock.
pub struct Guard {
    mode: Mode,
    /// Compiled once, shared by the guards built from one config (a batch's runs).
    detector: Arc<Detector>,
    /// The values known so far (the environment's secret ones, then the table's), and how many
    /// of the table's entries they include: each is masked wherever it appears.
    literals: Mutex<(Literals, usize)>,
    table: Mutex<Table>,
    /// Placeholders put back, and the hashes of the values an allowlist let through.
    counts: Mutex<(usize, HashSet<u64>)>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("mode", &self.mode)
            .field("detector", &self.detector)
            .finish()
    }
}

impl Guard {
    pub fn new(config: &GuardConfig) -> Result<Self, RuleError> {
        Ok(Self::sharing(Arc::new(config.detector()?), config))
    }

    /// A guard with `config`'s mode and environment values, an empty table, and an already
    /// compiled `detector` (from [`Guard::shared_detector`] of a guard built from the same
    /// rules): compiling the rules is most of what building a guard costs.
    pub fn sharing(detector: Arc<Detector>, config: &GuardConfig) -> Self {
        Self {
            mode: config.mode,
            detector,
            literals: Mutex::new((
                {
                    let mut l = Literals::default();
                    l.extend(config.env_literals().into_iter().map(|(k, v)| (v, k)));
                    l
                },
                0,
            )),
            table: Mutex::new(Table::default()),
            counts: Mutex::new((0, HashSet::new())),
        }
    }

    /// A guard that lets everything through (`mode: off`).
    pub fn off() -> Self {
        Self {
            mode: Mode::Off,
            detector: Arc::new(Detector::new(
                crate::rules::RuleSet::empty(),
                Vec::new(),
                Vec::new(),
                Default::default(),
                None,
            )),
            literals: Mutex::new((Literals::default(), 0)),
            table: Mutex::new(Table::default()),
            counts: Mutex::new((0, HashSet::new())),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    /// The compiled detector, to build more guards on ([`Guard::sharing`]).
    pub fn shared_detector(&self) -> Arc<Detector> {
        self.detector.clone()
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn counts(&self) -> MutexGuard<'_, (usize, HashSet<u64>)> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Masks text coming in from `origin` (a file, a test run).
    pub fn mask(&self, text: &str, origin: Option<&str>) -> Masked {
        self.masked(text, origin, true)
    }

    /// Masks what the user typed for the run to keep and show (a test command, guidance): the
    /// values in it are masked, and the run's own placeholders are left as they are, since the
    /// user may quote one from what the run showed them.
    pub fn mask_typed(&self, text: &str, origin: Option<&str>) -> Masked {
        self.masked(text, origin, false)
    }

    /// Masks text going out to a model; in `block` mode, refuses it if it holds anything.
    pub fn seal(&self, text: &str) -> Result<Masked, GuardError> {
        let masked = self.masked(text, None, false);
        if self.mode == Mode::Block {
            let table = self.table();
            let first = placeholder::find_all(&masked.text)
                .into_iter()
                .find_map(|r| table.origin(&masked.text[r]));
            if let Some(Origin { kind, origin }) = first {
                return Err(GuardError::Blocked {
                    kind: kind.to_string(),
                    origin,
                });
            }
        }
        Ok(masked)
    }

    fn masked(&self, text: &str, origin: Option<&str>, ingress: bool) -> Masked {
        if self.mode == Mode::Off || text.is_empty() {
            return Masked {
                text: text.to_string(),
                found: BTreeMap::new(),
            };
        }
        let scan = self.detector.scan(text);
        let mut table = self.table();
        let mut findings = scan.findings;
        // Values already masked elsewhere in the run, and the environment's, wherever they are.
        let mut literal = Vec::new();
        {
            let mut known = self.literals.lock().unwrap_or_else(|e| e.into_inner());
            let (literals, seen) = &mut *known;
            if table.len() > *seen {
                literals.extend(
                    table
                        .values_since(*seen)
                        .map(|(v, k)| (v.to_string(), k.clone())),
                );
                *seen = table.len();
            }
            literals.find(text, &mut literal);
        }
        let placeholders = placeholder::find_all(text);
        if ingress {
            // The user's own placeholder-like text: escaped, so it is never taken for ours.
            for r in &placeholders {
                findings.push(Finding::new(
                    r.start,
                    r.end,
                    Kind::secret("lookalike"),
                    "lookalike",
                ));
            }
        } else {
            literal.retain(|f| {
                !placeholders
                    .iter()
                    .any(|p| p.start < f.end && f.start < p.end)
            });
        }
        findings.extend(literal);
        let findings = resolve(findings);
        self.counts().1.extend(scan.allowlisted);
        let mut out = String::with_capacity(text.len());
        let mut found = BTreeMap::new();
        let mut at = 0;
        for f in &findings {
            out.push_str(&text[at..f.start]);
            let value = &text[f.start..f.end];
            if f.rule == "lookalike" {
                out.push_str(table.intern_lookalike(value));
            } else {
                out.push_str(table.intern(value, &f.kind, origin));
                *found.entry(f.kind.to_string()).or_insert(0) += 1;
            }
            at = f.end;
        }
        out.push_str(&text[at..]);
        Masked { text: out, found }
    }

    /// Checks a model's reply: every placeholder in it is one of the run's, written exactly.
    pub fn check(&self, text: &str) -> Result<(), GuardError> {
        if self.mode == Mode::Off {
            return Ok(());
        }
        let table = self.table();
        let good = placeholder::find_all(text);
        for r in &good {
            if table.value(&text[r.clone()]).is_none() {
                return Err(GuardError::Unknown {
                    placeholder: text[r.clone()].to_string(),
                });
            }
        }
        if let Some(r) = placeholder::mangled(text, &good, table.kinds())
            .into_iter()
            .next()
        {
            return Err(GuardError::Mangled {
                text: text[r].to_string(),
            });
        }
        Ok(())
    }

    /// `text` with every placeholder replaced by its value, for writing to the project; `Err`
    /// when one cannot be restored (and nothing is to be written).
    pub fn unmask(&self, text: &str) -> Result<String, GuardError> {
        if self.mode == Mode::Off {
            return Ok(text.to_string());
        }
        self.check(text)?;
        let table = self.table();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut restored = 0;
        for r in placeholder::find_all(text) {
            out.push_str(&text[at..r.start]);
            let p = &text[r.clone()];
            let value = table.value(p).ok_or_else(|| GuardError::Unknown {
                placeholder: p.to_string(),
            })?;
            out.push_str(value);
            if !table.is_lookalike(p) {
                restored += 1;
            }
            at = r.end;
        }
        out.push_str(&text[at..]);
        self.counts().0 += restored;
        Ok(out)
    }

    /// `text` with every placeholder of the run's table replaced by its value, and any other
    /// placeholder-like text left as it is: for a reply passed on to a program that writes it
    /// itself (a coding agent behind the gateway), where nothing may be held back or refused.
    pub fn restore(&self, text: &str) -> String {
        self.restore_with(text, &|value| value.to_string())
    }

    /// [`Guard::restore`], each value written as `escape` writes it: inside a JSON string that
    /// a reply streams in pieces (a tool call's arguments), a value's quotes and newlines must
    /// be escaped as the JSON around them is.
    pub fn restore_with(&self, text: &str, escape: &dyn Fn(&str) -> String) -> String {
        if self.mode == Mode::Off {
            return text.to_string();
        }
        let table = self.table();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut restored = 0;
        for r in placeholder::find_all(text) {
            let p = &text[r.clone()];
            if let Some(value) = table.value(p) {
                out.push_str(&text[at..r.start]);
                out.push_str(&escape(value));
                restored += usize::from(!table.is_lookalike(p));
                at = r.end;
            }
        }
        out.push_str(&text[at..]);
        drop(table);
        self.counts().0 += restored;
        out
    }

    /// The run's placeholders in `text`, by kind: distinct values (for the `masked` event of a
    /// call).
    pub fn census(&self, text: &str) -> BTreeMap<String, usize> {
        let table = self.table();
        let mut seen = std::collections::BTreeSet::new();
        let mut out = BTreeMap::new();
        for r in placeholder::find_all(text) {
            let p = &text[r];
            if table.is_lookalike(p) || !seen.insert(p.to_string()) {
                continue;
            }
            if let Some(o) = table.origin(p) {
                *out.entry(o.kind.to_string()).or_insert(0) += 1;
            }
        }
        out
    }

    /// The last placeholder number of each kind, for a resumed session to number on from.
    pub fn counters(&self) -> BTreeMap<String, u32> {
        self.table().counters()
    }

    /// Numbers on from a stopped run's `counters`.
    pub fn continue_from(&self, counters: &BTreeMap<String, u32>) {
        self.table().continue_from(counters);
    }

    /// Where the value behind `placeholder` came from, and its kind.
    pub fn origin(&self, placeholder: &str) -> Option<Origin> {
        self.table().origin(placeholder)
    }

    /// How many values the run's table holds: it only grows, so a text masked when it held as
    /// many is masked the same way now (a cache of masked texts keys on it).
    pub fn known(&self) -> usize {
        self.table().len()
    }

    pub fn stats(&self) -> Stats {
        let (restored, allowlisted) = {
            let counts = self.counts();
            (counts.0, counts.1.len())
        };
        Stats {
            masked: self.table().counts(),
            restored,
            allowlisted,
        }
    }

    /// Forgets every value now, zeroising it (a process that exits without unwinding skips
    /// the table's own drop).
    pub fn wipe(&self) {
        self.table().wipe();
        *self.literals.lock().unwrap_or_else(|e| e.into_inner()) = (Literals::default(), 0);
    }
}
