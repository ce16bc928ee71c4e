//! JUnit XML, as pytest writes it (`--junitxml`, `junit_family` xunit1 with `file` and `line`
//! attributes, or xunit2 without), and as most other tools do: `<testsuites>` /
//! `<testsuite>` / `<testcase>` with `<failure>`, `<error>`, `<skipped>`, `<system-out>` and
//! `<system-err>`. A pytest collection error is an `<error>` testcase with an empty classname.

use std::collections::HashMap;
use std::path::Path;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use quick_xml::XmlVersion;
use ralph_actors::schema::test_run::{CaseStatus, Location, TestCase};

use super::ids::{join_id, unique_ids};
use crate::runner::reading::pytest_ids::{module_parts, node_id};
use crate::runner::reading::text::{clip, is_timeout_message};
use crate::runner::reading::trace::{self, regex, OUTPUT_MAX_BYTES, STACK_MAX_BYTES};

/// One `<testcase>` as read.
#[derive(Default)]
struct RawCase {
    classname: String,
    name: String,
    file: Option<String>,
    line: Option<u32>,
    time: Option<f64>,
    /// `failure`, `error` or `skipped`, with its `message` and `type` attributes and its text.
    results: Vec<RawResult>,
    stdout: String,
    stderr: String,
}

struct RawResult {
    kind: Kind,
    message: Option<String>,
    kind_attr: Option<String>,
    text: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Failure,
    Error,
    Skipped,
}

/// The elements that matter; the others are walked through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    Suites,
    Suite,
    Case,
    Result(Kind),
    Stdout,
    Stderr,
    Other,
}

impl Tag {
    fn of(name: &[u8]) -> Tag {
        match name {
            b"testsuites" => Tag::Suites,
            b"testsuite" => Tag::Suite,
            b"testcase" => Tag::Case,
            b"failure" => Tag::Result(Kind::Failure),
            b"error" => Tag::Result(Kind::Error),
            b"skipped" => Tag::Result(Kind::Skipped),
            b"system-out" => Tag::Stdout,
            b"system-err" => Tag::Stderr,
            _ => Tag::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Tag::Suites => "<testsuites>",
            Tag::Suite => "<testsuite>",
            Tag::Case => "<testcase>",
            Tag::Result(Kind::Failure) => "<failure>",
            Tag::Result(Kind::Error) => "<error>",
            Tag::Result(Kind::Skipped) => "<skipped>",
            Tag::Stdout => "<system-out>",
            Tag::Stderr => "<system-err>",
            Tag::Other => "an element",
        }
    }
}

/// Where text inside a testcase goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sink {
    None,
    Result,
    Stdout,
    Stderr,
}

pub(crate) fn parse(data: &str, cwd: &Path) -> Result<(&'static str, Vec<TestCase>), String> {
    let mut reader = Reader::from_str(data);
    let mut open: Vec<Tag> = Vec::new();
    let mut saw_root = false;
    let mut pytest = false;
    let mut current: Option<RawCase> = None;
    let mut sink = Sink::None;
    let mut raw: Vec<RawCase> = Vec::new();

    loop {
        let event = reader.read_event().map_err(|e| match e {
            // Every syntax error is something left open when the input ended.
            quick_xml::Error::Syntax(_) => format!("the XML ends early (truncated?): {e}"),
            _ => format!(
                "not well-formed XML near byte {}: {e}",
                reader.error_position()
            ),
        })?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let tag = Tag::of(e.local_name().as_ref());
                if !saw_root {
                    if !matches!(tag, Tag::Suites | Tag::Suite) {
                        let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                        return Err(format!(
                            "not JUnit XML: the root element is <{name}>, not <testsuites>"
                        ));
                    }
                    saw_root = true;
                }
                match tag {
                    Tag::Suites | Tag::Suite => {
                        let [name] = attrs(e, [b"name".as_slice()]);
                        let name = name.unwrap_or_default();
                        pytest |= name == "pytest" || name == "pytest tests";
                    }
                    Tag::Case => {
                        let [classname, name, file, line, time] = attrs(
                            e,
                            [b"classname".as_slice(), b"name", b"file", b"line", b"time"],
                        );
                        let case = RawCase {
                            classname: classname.unwrap_or_default(),
                            name: name.unwrap_or_default(),
                            file,
                            line: line.and_then(|l| l.parse().ok()),
                            time: time.and_then(|t| t.parse().ok()),
                            ..RawCase::default()
                        };
                        if empty {
                            raw.push(case);
                        } else {
                            current = Some(case);
                        }
                    }
                    Tag::Result(kind) => {
                        if let Some(case) = current.as_mut() {
                            let [message, kind_attr] = attrs(e, [b"message".as_slice(), b"type"]);
                            case.results.push(RawResult {
                                kind,
                                message,
                                kind_attr,
                                text: String::new(),
                            });
                            sink = if empty { Sink::None } else { Sink::Result };
                        }
                    }
                    Tag::Stdout if current.is_some() && !empty => sink = Sink::Stdout,
                    Tag::Stderr if current.is_some() && !empty => sink = Sink::Stderr,
                    _ => {}
                }
                if !empty {
                    open.push(tag);
                }
            }
            Event::End(_) => match open.pop() {
                Some(Tag::Case) => raw.extend(current.take()),
                Some(Tag::Result(_) | Tag::Stdout | Tag::Stderr) => sink = Sink::None,
                _ => {}
            },
            Event::Text(t) => {
                let text = t.xml10_content().map_err(|e| format!("bad text: {e}"))?;
                push_text(current.as_mut(), sink, &text);
            }
            Event::CData(t) => {
                let text = t.xml10_content().map_err(|e| format!("bad CDATA: {e}"))?;
                push_text(current.as_mut(), sink, &text);
            }
            Event::GeneralRef(r) => {
                let name = r.decode().map_err(|e| format!("bad reference: {e}"))?;
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_predefined_entity(&name)
                        .map_or_else(|| format!("&{name};"), String::from),
                };
                push_text(current.as_mut(), sink, &resolved);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root {
        return Err("no XML elements: not a JUnit report".into());
    }
    if let Some(tag) = open.last() {
        return Err(format!("the XML ends inside {} (truncated?)", tag.name()));
    }

    // The module of a classname is looked up once (it may take a look at the disk).
    let mut modules: HashMap<String, usize> = HashMap::new();
    let mut tests: Vec<TestCase> = raw
        .iter()
        .map(|r| case(r, pytest, cwd, &mut modules))
        .collect();
    unique_ids(&mut tests);
    Ok((if pytest { "pytest" } else { "junit" }, tests))
}

fn push_text(case: Option<&mut RawCase>, sink: Sink, text: &str) {
    let Some(case) = case else {
        return;
    };
    match sink {
        Sink::Result => {
            if let Some(r) = case.results.last_mut() {
                r.text.push_str(text);
            }
        }
        Sink::Stdout => case.stdout.push_str(text),
        Sink::Stderr => case.stderr.push_str(text),
        Sink::None => {}
    }
}

/// The values of the named attributes, entities resolved, in one pass over the element.
fn attrs<const N: usize>(e: &BytesStart<'_>, names: [&[u8]; N]) -> [Option<String>; N] {
    let mut values: [Option<String>; N] = std::array::from_fn(|_| None);
    // No duplicate check: a repeated attribute is the writer's bug, and the first one is kept.
    for a in e.attributes().with_checks(false).flatten() {
        let key = a.key.local_name();
        if let Some(i) = names.iter().position(|n| *n == key.as_ref()) {
            if values[i].is_none() {
                values[i] = a
                    .normalized_value(XmlVersion::Implicit1_0)
                    .ok()
                    .map(|v| v.into_owned());
            }
        }
    }
    values
}

fn case(r: &RawCase, pytest: bool, cwd: &Path, modules: &mut HashMap<String, usize>) -> TestCase {
    let (id, name, file) = if pytest {
        let parts: Vec<&str> = r.classname.split('.').collect();
        let k = match modules.get(r.classname.as_str()) {
            Some(&k) => k,
            None => {
                let k = module_parts(&parts, r.file.as_deref(), cwd);
                modules.insert(r.classname.clone(), k);
                k
            }
        };
        node_id(&r.classname, &parts, k, &r.name, r.file.as_deref(), cwd)
    } else {
        let file = r.file.as_deref().map(|f| trace::relative(f, cwd));
        let scope = file.clone().unwrap_or_else(|| r.classname.clone());
        (join_id(Some(&scope), &r.name), r.name.clone(), file)
    };
    let mut case = TestCase {
        id,
        name,
        file,
        duration_ms: r.time.map(|t| t * 1000.0),
        stdout: captured(&r.stdout),
        stderr: captured(&r.stderr),
        ..TestCase::default()
    };
    // A failure outranks the teardown error pytest may add to the same test.
    let failed = r
        .results
        .iter()
        .find(|x| x.kind == Kind::Failure)
        .or_else(|| r.results.iter().find(|x| x.kind == Kind::Error));
    let Some(f) = failed else {
        case.status = if r.results.iter().any(|x| x.kind == Kind::Skipped) {
            CaseStatus::Skip
        } else {
            CaseStatus::Pass
        };
        return case;
    };
    case.status = CaseStatus::Fail;
    let text = f.text.trim_matches('\n');
    let message = f
        .message
        .as_deref()
        .filter(|m| !m.trim().is_empty() && *m != "collection failure")
        .map(|m| clip(m.lines()))
        .unwrap_or_else(|| {
            // pytest's `E   ` lines hold the error; otherwise the text's first lines.
            let e_lines: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix('E'))
                .filter(|l| l.is_empty() || l.starts_with(' '))
                .collect();
            if e_lines.is_empty() {
                clip(text.lines().take(5))
            } else {
                clip(e_lines)
            }
        });
    if message.as_deref().is_some_and(is_timeout_message) {
        case.status = CaseStatus::Timeout;
    }
    case.message = message;
    case.error_type = f
        .kind_attr
        .clone()
        .filter(|t| !t.is_empty())
        .or_else(|| trace::python_error_type(text))
        .or_else(|| case.message.as_deref().and_then(trace::js_error_type));
    case.location = trace::location(text, Some(cwd)).or_else(|| {
        // xunit1's `line` is the test's definition, counted from 0.
        Some(Location {
            file: case.file.clone()?,
            line: r.line.map(|l| l.saturating_add(1)),
            column: None,
        })
        .filter(|_| r.line.is_some())
    });
    if !text.is_empty() {
        case.stack = Some(trace::cap(text, STACK_MAX_BYTES));
    }
    case
}

/// Captured output without pytest's section rules (`----- Captured Out -----`); `None` when
/// nothing is left.
fn captured(text: &str) -> Option<String> {
    let rule = regex!(r"^-{3,} Captured \w+(?: \w+)? -{3,}$");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !rule.is_some_and(|re| re.is_match(l)))
        .collect();
    let kept = kept.join("\n");
    let kept = kept.trim_matches('\n');
    (!kept.trim().is_empty()).then(|| trace::cap(kept, OUTPUT_MAX_BYTES))
}
