//! The detector: every rule, pattern and personal-data kind over a text, in one pass each.
//!
//! Rules run only near their keywords: one Aho-Corasick pass (ASCII case-insensitive) finds
//! every keyword of every rule, and each rule's regex then runs in a window around its
//! keywords' occurrences (the line, from 256 bytes before to 4 KiB after; 16 KiB on for rules
//! that span lines). A text that mentions no keyword costs that one pass. The personal-data
//! detectors scan bytes ([`crate::pii`]). Encoded runs ([`crate::decode`]) are scanned again
//! as they decode, to a depth of 2.
//!
//! A rule's match is a finding when its secret has the entropy the rule asks (bounded for its
//! alphabet, [`crate::entropy`]), tokenizes like a random string where the rule asks for
//! entropy ([`crate::efficiency`]), and no allowlist lets it through. Overlapping findings keep
//! the earliest, then the longest, then the more specific (a rule without an entropy bound).

use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Input, MatchKind};
use regex::Regex;

use crate::decode;
use crate::efficiency::{self, TokenLens};
use crate::entropy;
use crate::kind::{Finding, Kind};
use crate::pii::PiiKind;
use crate::placeholder;
use crate::rules::{Rule, RuleSet};

/// How far from a keyword a rule's match may lie, on the keyword's line: a name is written just
/// before its value, and the longest single-line values (a kubeconfig's base64 key, a GCP key's
/// escaped PEM) run to about 3 KiB.
const BEFORE: usize = 256;
const AFTER: usize = 4096;
/// How far past its keyword a multi-line rule's match may run.
const AFTER_MULTILINE: usize = 16 * 1024;
/// How deep encoded values are decoded (an encoded value inside an encoded value: 2).
pub const DECODE_DEPTH: u8 = 2;

/// Values never masked: literals (a test fixture's dummy key) and patterns.
#[derive(Debug, Default)]
pub struct Allowlist {
    pub literals: Vec<String>,
    pub patterns: Vec<Regex>,
}

impl Allowlist {
    pub fn allows(&self, value: &str) -> bool {
        self.literals.iter().any(|l| l == value) || self.patterns.iter().any(|p| p.is_match(value))
    }
}

/// What a scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// In order, none overlapping.
    pub findings: Vec<Finding>,
    /// Values an allowlist let through, each as a hash of the value (never the value): the
    /// guard counts the distinct ones.
    pub allowlisted: Vec<u64>,
}

/// Texts up to this long are searched for keywords without the automaton while it is not built
/// yet ([`Detector::keyword_hits`]).
const PLAIN_MAX: usize = 512;

/// Finds secrets and personal data in texts. Built once per run; shared between threads.
pub struct Detector {
    rules: RuleSet,
    /// The rules' keywords, and the automaton that finds them, built at the first scan or by
    /// [`Detector::warm`]: building it takes about 4 ms, which a run spends beside its
    /// baseline test run rather than before it (issue 18).
    words: Vec<String>,
    keywords: std::sync::OnceLock<Option<AhoCorasick>>,
    /// For each keyword pattern, the rules that list it.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords (a team's file may have them): they run on the whole text.
    unkeyed: Vec<usize>,
    /// The user's named patterns (`local_guard.patterns`).
    patterns: Vec<(Kind, Regex)>,
    pii: Vec<PiiKind>,
    allow: Allowlist,
    lens: Option<Arc<dyn TokenLens>>,
    /// Hashes allowlisted values, keyed afresh for each detector.
    hasher: std::collections::hash_map::RandomState,
}

impl std::fmt::Debug for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detector")
            .field("rules", &self.rules.rules.len())
            .field("patterns", &self.patterns.len())
            .field("pii", &self.pii)
            .finish()
    }
}

impl Detector {
    pub fn new(
        rules: RuleSet,
        patterns: Vec<(Kind, Regex)>,
        pii: Vec<PiiKind>,
        allow: Allowlist,
        lens: Option<Arc<dyn TokenLens>>,
    ) -> Self {
        let mut words: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut unkeyed = Vec::new();
        for (i, rule) in rules.rules.iter().enumerate() {
            if rule.spec.keywords.is_empty() {
                unkeyed.push(i);
            }
            for k in &rule.spec.keywords {
                // Keywords are matched without regard to ASCII case, so two that differ only
                // in case are one keyword.
                match words.iter().position(|w| w.eq_ignore_ascii_case(k)) {
                    Some(p) => keyword_rules[p].push(i),
                    None => {
                        words.push(k.clone());
                        keyword_rules.push(vec![i]);
                    }
                }
            }
        }
        // A keyword's match stands for the keywords it starts with too (`secret_` for
        // `secret`): the search below reports the longest keyword at each place only.
        for (i, word) in words.iter().enumerate() {
            for (j, other) in words.iter().enumerate() {
                let prefix = word
                    .as_bytes()
                    .get(..other.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(other.as_bytes()));
                if i != j && prefix {
                    let extra = keyword_rules[j].clone();
                    for r in extra {
                        if !keyword_rules[i].contains(&r) {
                            keyword_rules[i].push(r);
                        }
                    }
                }
            }
        }
        Self {
            rules,
            words,
            keywords: std::sync::OnceLock::new(),
            keyword_rules,
            unkeyed,
            patterns,
            pii,
            allow,
            lens,
            hasher: Default::default(),
        }
    }

    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Builds what the first scan would (the keyword automaton), so that it does not wait for
    /// it. A scan on another thread meanwhile waits for this build rather than making its own.
    pub fn warm(&self) {
        self.keywords();
    }

    fn keywords(&self) -> Option<&AhoCorasick> {
        self.keywords
            .get_or_init(|| {
                (!self.words.is_empty())
                    .then(|| {
                        AhoCorasickBuilder::new()
                            .ascii_case_insensitive(true)
                            // Leftmost-longest over a DFA: one table lookup a byte in an
                            // unrolled loop, twice as fast as an overlapping search;
                            // `rules_into` restarts just after each match's start, so no
                            // occurrence of any keyword is missed.
                            .match_kind(MatchKind::LeftmostLongest)
                            .kind(Some(AhoCorasickKind::DFA))
                            .build(&self.words)
                            .ok()
                    })
                    .flatten()
            })
            .as_ref()
    }

    /// Everything found in `text`, none overlapping: rules, patterns, personal data, and
    /// encoded values that decode to any of them.
    pub fn scan(&self, text: &str) -> Scan {
        let mut scan = Scan::default();
        self.scan_into(text, 0, &mut scan);
        scan.findings = resolve(scan.findings);
        // Our own placeholders are never findings (a masked text scanned again).
        let placeholders = placeholder::find_all(text);
        if !placeholders.is_empty() {
            scan.findings.retain(|f| {
                !placeholders
                    .iter()
                    .any(|p| p.start < f.end && f.start < p.end)
            });
        }
        scan
    }

    fn scan_into(&self, text: &str, depth: u8, scan: &mut Scan) {
        self.rules_into(text, scan);
        for (kind, regex) in &self.patterns {
            for caps in regex.captures_iter(text) {
                if let Some(m) = caps.get(1).or_else(|| caps.get(0)) {
                    self.push(
                        scan,
                        Finding::new(m.start(), m.end(), kind.clone(), "pattern"),
                        text,
                    );
                }
            }
        }
        let mut pii = Vec::new();
        PiiKind::find_all(&self.pii, text, &mut pii);
        for f in pii {
            self.push(scan, f, text);
        }
        if depth < DECODE_DEPTH {
            self.decoded_into(text, depth, scan);
        }
    }

    /// Pushes `f` unless the user's allowlist lets its value through.
    fn push(&self, scan: &mut Scan, f: Finding, text: &str) {
        if f.is_empty() {
            return;
        }
        if self.allow.allows(&text[f.start..f.end]) {
            scan.allowlisted
                .push(self.hasher.hash_one(&text[f.start..f.end]));
        } else {
            scan.findings.push(f);
        }
    }

    fn rules_into(&self, text: &str, scan: &mut Scan) {
        // The windows of each rule, merged.
        let mut windows: Vec<(usize, Range<usize>)> = Vec::new();
        let plain = text.len() <= PLAIN_MAX && self.keywords.get().is_none();
        for (start, end, k) in self.keyword_hits(text, plain) {
            for &r in &self.keyword_rules[k] {
                windows.push((r, window(text, start, end, self.rules.rules[r].multiline)));
            }
        }
        for &r in &self.unkeyed {
            windows.push((r, 0..text.len()));
        }
        windows.sort_by_key(|(r, w)| (*r, w.start));
        let mut merged: Vec<(usize, Range<usize>)> = Vec::with_capacity(windows.len());
        for (r, w) in windows {
            match merged.last_mut() {
                Some((lr, lw)) if *lr == r && w.start <= lw.end => lw.end = lw.end.max(w.end),
                _ => merged.push((r, w)),
            }
        }
        for (r, w) in merged {
            self.rule_into(&self.rules.rules[r], text, w, scan);
        }
    }

    /// The longest keyword starting at each place of `text` where one starts, in order, as
    /// `(start, end, keyword)`: with those it starts with, that is every occurrence of every
    /// keyword. `plain` tries each keyword at each place instead of running the automaton,
    /// which a short text (a path, a command) takes less time for than the automaton's build:
    /// the run's first scan, of what the user typed, comes before its baseline test run.
    pub(crate) fn keyword_hits(&self, text: &str, plain: bool) -> Vec<(usize, usize, usize)> {
        if plain {
            let bytes = text.as_bytes();
            // The longest keyword at each place; on a tie, the first (as the automaton).
            let mut longest: Vec<Option<(usize, usize)>> = vec![None; bytes.len()];
            for (k, word) in self.words.iter().map(String::as_bytes).enumerate() {
                if word.is_empty() || word.len() > bytes.len() {
                    continue;
                }
                for start in 0..=bytes.len() - word.len() {
                    let found = bytes[start..start + word.len()].eq_ignore_ascii_case(word);
                    if found && longest[start].is_none_or(|(len, _)| len < word.len()) {
                        longest[start] = Some((word.len(), k));
                    }
                }
            }
            return longest
                .into_iter()
                .enumerate()
                .filter_map(|(start, l)| l.map(|(len, k)| (start, start + len, k)))
                .collect();
        }
        let mut hits = Vec::new();
        if let Some(ac) = self.keywords() {
            // The longest keyword starting at the leftmost place, then the search goes on
            // from the next byte.
            let mut at = 0;
            while let Some(m) = ac.find(Input::new(text).range(at..)) {
                hits.push((m.start(), m.end(), m.pattern().as_usize()));
                at = m.start() + 1;
            }
        }
        hits
    }

    fn rule_into(&self, rule: &Rule, text: &str, w: Range<usize>, scan: &mut Scan) {
        let Some((regex, allow)) = rule.compiled() else {
            return;
        };
        let slice = &text.as_bytes()[w.clone()];
        // Most windows hold no match: the lazy DFA says so alone, without setting up captures.
        if !regex.is_match(slice) {
            return;
        }
        for caps in regex.captures_iter(slice) {
            let (Some(whole), Some(secret)) = (caps.get(0), caps.get(rule.spec.secret_group))
            else {
                continue;
            };
            // The pattern runs on bytes: a match may cut a character, so it is kept to whole
            // characters.
            let (start, end) = (
                ceil_char(text, w.start + secret.start()),
                floor_char(text, w.start + secret.end()),
            );
            if start >= end {
                continue;
            }
            let value = &text[start..end];
            if let Some(min) = rule.spec.entropy {
                if !entropy::passes(value, min) {
                    continue;
                }
                if let Some(lens) = &self.lens {
                    if !efficiency::looks_random(lens.as_ref(), value) {
                        continue;
                    }
                }
            }
            let matched = &text
                [floor_char(text, w.start + whole.start())..ceil_char(text, w.start + whole.end())];
            let line = line_around(text, start, end);
            if allow
                .iter()
                .chain(&self.rules.allow)
                .any(|a| a.allows(value, matched, line))
            {
                scan.allowlisted.push(self.hasher.hash_one(value));
                continue;
            }
            self.push(
                scan,
                Finding::new(start, end, rule.kind.clone(), &rule.spec.id),
                text,
            );
        }
    }

    /// Encoded runs that hold a finding once decoded become findings themselves, of the kind
    /// found inside.
    fn decoded_into(&self, text: &str, depth: u8, scan: &mut Scan) {
        for (run, encoding, plain) in decode::decoded(text) {
            if scan
                .findings
                .iter()
                .any(|f| f.start < run.end && run.start < f.end)
            {
                continue;
            }
            let mut inner = Scan::default();
            self.scan_into(&plain, depth + 1, &mut inner);
            scan.allowlisted.extend(inner.allowlisted);
            if let Some(first) = resolve(inner.findings).into_iter().next() {
                let rule = format!("{}+{}", first.rule, encoding.name());
                scan.findings
                    .push(Finding::new(run.start, run.end, first.kind, rule));
            }
        }
    }
}

/// The window a rule runs in for a keyword at `start..end`.
fn window(text: &str, start: usize, end: usize, multiline: bool) -> Range<usize> {
    let bytes = text.as_bytes();
    let line_start = memchr::memrchr(b'\n', &bytes[..start]).map_or(0, |i| i + 1);
    let from = floor_char(text, line_start.max(start.saturating_sub(BEFORE)));
    let to = if multiline {
        (end + AFTER_MULTILINE).min(bytes.len())
    } else {
        let line_end = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i);
        line_end.min(end + AFTER)
    };
    from..ceil_char(text, to)
}

/// The line holding `start..end`, for allowlists that look at lines.
fn line_around(text: &str, start: usize, end: usize) -> &str {
    let bytes = text.as_bytes();
    let from = memchr::memrchr(b'\n', &bytes[..start]).map_or(0, |i| i + 1);
    let to = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i);
    &text[from..to]
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i.min(text.len())
}

/// Findings in order, none overlapping: the earliest start wins, then the longest, then the
/// more specific rule (one that needs no entropy bound: its format said enough).
pub fn resolve(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.len().cmp(&a.len()))
            .then(generic(a).cmp(&generic(b)))
    });
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    for f in findings {
        if out.last().is_some_and(|l| f.start < l.end) {
            continue;
        }
        out.push(f);
    }
    out
}

/// Generic rules' ids start with `generic`; a specific rule's finding is preferred.
fn generic(f: &Finding) -> bool {
    f.rule.starts_with("generic")
}
