//! What the project's test code writes: the report files of five formats, the coverage reports,
//! and the text the test and lint commands print.

use std::path::Path;

use super::input::{keep, pick, scratch, text};
use crate::runner::classify::{classify_case, classify_output};
use crate::runner::coverage::{parse_summary, target_lines, CoverageTool};
use crate::runner::language::Language;
use crate::runner::lint::detect;
use crate::runner::report::{parse_report, ReportFormat};

const TOOLS: [CoverageTool; 6] = [
    CoverageTool::Jest,
    CoverageTool::Vitest,
    CoverageTool::C8,
    CoverageTool::CoveragePy,
    CoverageTool::LlvmCov,
    CoverageTool::Tarpaulin,
];

/// A report file: the first byte picks one of the five test-report formats or one of the six
/// coverage tools (its summary and then the target's lines).
pub fn test_report(data: &[u8]) {
    let formats = [
        ReportFormat::JestJson,
        ReportFormat::VitestJson,
        ReportFormat::MochaJson,
        ReportFormat::JunitXml,
        ReportFormat::LibtestJson,
    ];
    let (choice, body) = pick(data, formats.len() + TOOLS.len());
    let body = text(body);
    let cwd = scratch();
    match formats.get(choice) {
        Some(format) => {
            if let Ok(mut parsed) = parse_report(*format, &body, &cwd) {
                classify_all(&mut parsed.tests);
            }
        }
        None => {
            let tool = TOOLS[choice - formats.len()];
            keep(parse_summary(tool, &body));
            keep(target_lines(tool, &body, Path::new("src/median.ts"), &cwd));
        }
    }
}

/// What a test or lint command printed: read by every text parser in turn, as the first read
/// of a run does, its failures classified; and read as lint findings.
pub fn test_output(data: &[u8]) {
    let (choice, body) = pick(data, Language::ALL.len() + 1);
    let output = text(body);
    let cwd = scratch();
    match Language::ALL.get(choice) {
        Some(language) => {
            if let Some(mut parsed) = crate::runner::parse(&output, &cwd) {
                classify_all(&mut parsed.tests);
            }
            keep(classify_output(&output, Some(*language)));
        }
        None => keep(detect(&output, &cwd)),
    }
}

fn classify_all(cases: &mut [ralph_actors::schema::test_run::TestCase]) {
    for case in cases {
        classify_case(case, Some(Language::TypeScript));
    }
}
