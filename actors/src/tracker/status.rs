//! The agent's own account of an iteration: `---RALPH_STATUS---` blocks and completion
//! indicators, read from its text as it streams, line by line.
//!
//! ```text
//! ---RALPH_STATUS---
//! STATUS: IN_PROGRESS | COMPLETE | BLOCKED
//! TASKS_COMPLETED_THIS_LOOP: <n>
//! FILES_MODIFIED: <n>
//! TESTS_STATUS: PASSING | FAILING | NOT_RUN
//! WORK_TYPE: IMPLEMENTATION | TESTING | DOCUMENTATION | REFACTORING
//! EXIT_SIGNAL: true | false
//! RECOMMENDATION: <one line>
//! ---END_RALPH_STATUS---
//! ```
//!
//! A block needs its STATUS; the other fields may be missing. A block with an unknown value, an
//! unknown field, no STATUS, no end (another start, or the text ends), or more lines than a block
//! holds is malformed: reported as such and otherwise ignored. The text may arrive in pieces cut
//! anywhere, even inside a line or a UTF-8 character: [`StatusScanner::feed`] keeps the unfinished
//! line for the next piece. Lines are scanned once; only lines that may matter reach a pattern,
//! so the scanner reads hundreds of megabytes a second.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// A block's lines at most, beyond which it is malformed (an agent that opened one and went on
/// with its work).
const MAX_BLOCK_LINES: usize = 32;

/// A line longer than this is cut (its start kept) before it is read: a block's lines are short,
/// and an agent's output may hold a multi-megabyte line of JSON or base64.
const MAX_LINE: usize = 4096;

const START: &str = "---RALPH_STATUS---";
const END: &str = "---END_RALPH_STATUS---";

/// What the agent says of its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    InProgress,
    Complete,
    Blocked,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::InProgress => "IN_PROGRESS",
            Status::Complete => "COMPLETE",
            Status::Blocked => "BLOCKED",
        }
    }
}

/// What the agent says of the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TestsStatus {
    Passing,
    Failing,
    NotRun,
}

impl TestsStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TestsStatus::Passing => "PASSING",
            TestsStatus::Failing => "FAILING",
            TestsStatus::NotRun => "NOT_RUN",
        }
    }
}

/// What kind of work the agent says it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WorkType {
    Implementation,
    Testing,
    Documentation,
    Refactoring,
}

/// One parsed `---RALPH_STATUS---` block. The agent's claims: the loop measures progress itself
/// and believes none of these but `exit_signal`, and that only with the tests' agreement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusBlock {
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_completed: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_modified: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_status: Option<TestsStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_type: Option<WorkType>,
    /// `EXIT_SIGNAL: true`: the agent asks to end the loop. Missing is false.
    #[serde(default)]
    pub exit_signal: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<String>,
}

impl StatusBlock {
    /// A block that says only its status.
    pub fn new(status: Status) -> StatusBlock {
        StatusBlock {
            status,
            tasks_completed: None,
            files_modified: None,
            tests_status: None,
            work_type: None,
            exit_signal: false,
            recommendation: None,
        }
    }
}

/// What the scanner found in a piece of text, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Block(StatusBlock),
    /// A block that cannot be read, and why (for the log).
    Malformed(String),
    /// A line that says the work is done ("all tasks completed", "nothing left to do").
    Indicator(String),
}

// Constants, exercised by the tests below: a bad one fails every test run.
#[allow(clippy::expect_used)]
static INDICATORS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)all\s+(?:the\s+)?(?:tasks?|items?|work)\s+(?:(?:are|is|have\s+been|has\s+been)\s+)?(?:completed?|done|finished)|(?:completed?|finished)\s+all\s+(?:the\s+)?(?:tasks?|items?|work)|nothing\s+(?:left|remaining|more)\s+to\s+do|no\s+more\s+(?:tasks?|items?|work)\b|everything\s+(?:is\s+)?(?:completed?|done)",
    )
    .expect("static regex")
});

/// Compiles the indicator pattern now, off the path to the first iteration's reading.
pub fn warm() {
    LazyLock::force(&INDICATORS);
}

/// Reads status blocks and completion indicators from text fed in pieces.
#[derive(Debug, Default)]
pub struct StatusScanner {
    /// The unfinished last line of the text so far (bytes: a piece may end inside a character).
    partial: Vec<u8>,
    /// The lines of the block being read, when one is open.
    block: Option<Vec<String>>,
}

impl StatusScanner {
    pub fn new() -> StatusScanner {
        StatusScanner::default()
    }

    /// Reads the whole lines `piece` completes.
    pub fn feed(&mut self, piece: &[u8], found: &mut Vec<Found>) {
        let mut rest = piece;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            let (line, after) = rest.split_at(at);
            rest = &after[1..];
            if self.partial.is_empty() {
                self.line(line, found);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                extend_capped(&mut whole, line);
                self.line(&whole, found);
                whole.clear();
                self.partial = whole;
            }
        }
        extend_capped(&mut self.partial, rest);
    }

    /// Reads the last line (text that ended without a newline); a block still open is
    /// malformed.
    pub fn finish(&mut self, found: &mut Vec<Found>) {
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            self.line(&last, found);
        }
        if self.block.take().is_some() {
            found.push(Found::Malformed(
                "the output ended inside a status block".into(),
            ));
        }
    }

    fn line(&mut self, raw: &[u8], found: &mut Vec<Found>) {
        let line = raw[..raw.len().min(MAX_LINE)].trim_ascii();
        let Some(lines) = self.block.as_mut() else {
            // Outside a block, most lines are read as bytes and no further: only a block's
            // start and a line that may be an indicator become text.
            if line == START.as_bytes() {
                self.block = Some(Vec::new());
            } else if line.len() >= 10 && may_indicate(line) {
                if let Some(m) = INDICATORS.find(&String::from_utf8_lossy(line)) {
                    found.push(Found::Indicator(m.as_str().to_string()));
                }
            }
            return;
        };
        if line == START.as_bytes() {
            found.push(Found::Malformed(
                "a status block began before the last one ended".into(),
            ));
            lines.clear();
        } else if line == END.as_bytes() {
            let lines = self.block.take().unwrap_or_default();
            found.push(match parse_block(&lines) {
                Ok(block) => Found::Block(block),
                Err(why) => Found::Malformed(why),
            });
        } else if lines.len() >= MAX_BLOCK_LINES {
            self.block = None;
            found.push(Found::Malformed(format!(
                "a status block ran past {MAX_BLOCK_LINES} lines without its end"
            )));
        } else if !line.is_empty() {
            lines.push(String::from_utf8_lossy(line).into_owned());
        }
    }
}

/// Whether a line holds a word every indicator holds one of, in any case: "all", "not" (of
/// "nothing"), "no" and a space, or "eve" (of "everything"). One pass over the bytes keeps
/// most lines from the pattern.
fn may_indicate(line: &[u8]) -> bool {
    // `| 0x20` lower-cases ASCII letters (and maps other bytes to bytes no word here holds).
    let (mut before, mut last) = (0u8, 0u8);
    for &byte in line {
        let c = byte | 0x20;
        match (before, last, c) {
            (b'a', b'l', b'l') | (b'n', b'o', b't') | (b'e', b'v', b'e') => return true,
            (b'n', b'o', _) if byte == b' ' || byte == b'\t' => return true,
            _ => {}
        }
        before = last;
        last = c;
    }
    false
}

/// Appends to a line kept for later, at most [`MAX_LINE`] bytes of it.
fn extend_capped(line: &mut Vec<u8>, more: &[u8]) {
    let room = MAX_LINE.saturating_sub(line.len());
    line.extend_from_slice(&more[..more.len().min(room)]);
}

fn parse_block(lines: &[String]) -> Result<StatusBlock, String> {
    let mut status = None;
    let mut block = StatusBlock::new(Status::InProgress);
    for line in lines {
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("a status block line without a field: {line:?}"));
        };
        let value = value.trim();
        let bad = || format!("{}: {value:?} is not a value it takes", key.trim());
        let word = value.to_ascii_uppercase();
        match key.trim().to_ascii_uppercase().as_str() {
            "STATUS" => {
                status = Some(match word.as_str() {
                    "IN_PROGRESS" => Status::InProgress,
                    "COMPLETE" => Status::Complete,
                    "BLOCKED" => Status::Blocked,
                    _ => return Err(bad()),
                })
            }
            "TASKS_COMPLETED_THIS_LOOP" => {
                block.tasks_completed = Some(value.parse().map_err(|_| bad())?)
            }
            "FILES_MODIFIED" => block.files_modified = Some(value.parse().map_err(|_| bad())?),
            "TESTS_STATUS" => {
                block.tests_status = Some(match word.as_str() {
                    "PASSING" => TestsStatus::Passing,
                    "FAILING" => TestsStatus::Failing,
                    "NOT_RUN" => TestsStatus::NotRun,
                    _ => return Err(bad()),
                })
            }
            "WORK_TYPE" => {
                block.work_type = Some(match word.as_str() {
                    "IMPLEMENTATION" => WorkType::Implementation,
                    "TESTING" => WorkType::Testing,
                    "DOCUMENTATION" => WorkType::Documentation,
                    "REFACTORING" => WorkType::Refactoring,
                    _ => return Err(bad()),
                })
            }
            "EXIT_SIGNAL" => {
                block.exit_signal = match word.as_str() {
                    "TRUE" => true,
                    "FALSE" => false,
                    _ => return Err(bad()),
                }
            }
            "RECOMMENDATION" => block.recommendation = Some(value.to_string()),
            other => return Err(format!("a status block field it does not know: {other}")),
        }
    }
    block.status = status.ok_or("a status block without its STATUS")?;
    Ok(block)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn scan(pieces: &[&[u8]]) -> Vec<Found> {
        let mut scanner = StatusScanner::new();
        let mut found = Vec::new();
        for piece in pieces {
            scanner.feed(piece, &mut found);
        }
        scanner.finish(&mut found);
        found
    }

    const FULL: &str = "Working on it.\n---RALPH_STATUS---\nSTATUS: COMPLETE\nTASKS_COMPLETED_THIS_LOOP: 2\nFILES_MODIFIED: 3\nTESTS_STATUS: PASSING\nWORK_TYPE: IMPLEMENTATION\nEXIT_SIGNAL: true\nRECOMMENDATION: ship it\n---END_RALPH_STATUS---\n";

    fn full_block() -> StatusBlock {
        StatusBlock {
            status: Status::Complete,
            tasks_completed: Some(2),
            files_modified: Some(3),
            tests_status: Some(TestsStatus::Passing),
            work_type: Some(WorkType::Implementation),
            exit_signal: true,
            recommendation: Some("ship it".into()),
        }
    }

    #[test]
    fn a_whole_block_is_read_with_every_field() {
        assert_eq!(scan(&[FULL.as_bytes()]), [Found::Block(full_block())]);
    }

    /// Cut at every byte, even inside a line or a character, the text reads the same.
    #[test]
    fn a_block_split_anywhere_reads_the_same() {
        let text = format!("{FULL}é all tasks are complete\n");
        let bytes = text.as_bytes();
        let whole = scan(&[bytes]);
        assert_eq!(whole.len(), 2);
        for cut in 0..bytes.len() {
            assert_eq!(scan(&[&bytes[..cut], &bytes[cut..]]), whole, "cut at {cut}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(scan(&singles), whole);
    }

    #[test]
    fn missing_optional_fields_are_none_and_exit_signal_false() {
        let found = scan(&[b"  ---RALPH_STATUS---  \n  status: blocked\n---END_RALPH_STATUS---"]);
        assert_eq!(found, [Found::Block(StatusBlock::new(Status::Blocked))]);
    }

    #[test]
    fn malformed_blocks_are_reported_and_the_next_block_still_read() {
        let text = "---RALPH_STATUS---\nEXIT_SIGNAL: true\n---END_RALPH_STATUS---\n\
                    ---RALPH_STATUS---\nSTATUS: DONE\n---END_RALPH_STATUS---\n\
                    ---RALPH_STATUS---\nSTATUS: COMPLETE\nFILES_MODIFIED: many\n---END_RALPH_STATUS---\n\
                    ---RALPH_STATUS---\nSTATUS: COMPLETE\nMOOD: great\n---END_RALPH_STATUS---\n\
                    ---RALPH_STATUS---\nSTATUS: IN_PROGRESS\n\
                    ---RALPH_STATUS---\nSTATUS: IN_PROGRESS\nEXIT_SIGNAL: false\n---END_RALPH_STATUS---\n\
                    ---RALPH_STATUS---\nSTATUS: COMPLETE\n";
        let found = scan(&[text.as_bytes()]);
        let malformed: Vec<&str> = found
            .iter()
            .filter_map(|f| match f {
                Found::Malformed(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(malformed.len(), 6, "{found:?}");
        assert!(malformed[0].contains("without its STATUS"));
        assert!(malformed[1].contains("\"DONE\""));
        assert!(malformed[2].contains("FILES_MODIFIED"));
        assert!(malformed[3].contains("MOOD"));
        assert!(malformed[4].contains("began before"));
        assert!(malformed[5].contains("ended inside"));
        let blocks: Vec<&StatusBlock> = found
            .iter()
            .filter_map(|f| match f {
                Found::Block(b) => Some(b),
                _ => None,
            })
            .collect();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].status, Status::InProgress);
    }

    #[test]
    fn several_blocks_in_one_output_are_each_read_in_order() {
        let second = FULL.replace("STATUS: COMPLETE", "STATUS: IN_PROGRESS");
        let found = scan(&[FULL.as_bytes(), second.as_bytes(), FULL.as_bytes()]);
        let statuses: Vec<Status> = found
            .iter()
            .filter_map(|f| match f {
                Found::Block(b) => Some(b.status),
                _ => None,
            })
            .collect();
        assert_eq!(
            statuses,
            [Status::Complete, Status::InProgress, Status::Complete]
        );
    }

    /// A block that never ends is malformed once it has run past a block's length; the lines
    /// after it are read again.
    #[test]
    fn an_unended_block_does_not_swallow_the_rest_of_the_output() {
        let mut text = String::from("---RALPH_STATUS---\nSTATUS: COMPLETE\n");
        for i in 0..40 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("Everything is done.\n");
        let found = scan(&[text.as_bytes()]);
        assert!(matches!(&found[0], Found::Malformed(why) if why.contains("ran past")));
        assert_eq!(found[1], Found::Indicator("Everything is done".into()));
    }

    #[test]
    fn completion_indicators_are_found_and_ordinary_lines_are_not() {
        for yes in [
            "All tasks are complete.",
            "all work done",
            "I have completed all the tasks in the list",
            "There is nothing left to do here.",
            "No more tasks remain.",
            "EVERYTHING IS COMPLETED",
            "all items have been finished",
        ] {
            let found = scan(&[yes.as_bytes()]);
            assert!(
                matches!(found.as_slice(), [Found::Indicator(_)]),
                "{yes}: {found:?}"
            );
        }
        for no in [
            "Running all the tests now",
            "nothing to see",
            "no more than three items",
            "Finished task 3 of 5",
        ] {
            assert_eq!(scan(&[no.as_bytes()]), [], "{no}");
        }
    }

    /// A line of megabytes (a base64 blob, a JSON document) is read in bounded memory, and a
    /// block after it is still found.
    #[test]
    fn a_huge_line_is_cut_not_kept() {
        let mut scanner = StatusScanner::new();
        let mut found = Vec::new();
        let blob = vec![b'x'; 1 << 20];
        for _ in 0..8 {
            scanner.feed(&blob, &mut found);
            assert!(scanner.partial.len() <= MAX_LINE);
        }
        scanner.feed(b"\n", &mut found);
        scanner.feed(FULL.as_bytes(), &mut found);
        scanner.finish(&mut found);
        assert_eq!(found, [Found::Block(full_block())]);
    }
}
