//! What agents and models say: a coding agent's output in each of its formats (cut into lines
//! as its pipe delivers them), its model listing, its `RALPH_STATUS` blocks and task list, and
//! the replies the roles read (code, verdicts, judgements, plans, counterexamples).

use ralph_actors::schema::mutation::{Mutant, MutantStatus};
use ralph_actors::tracker::status::StatusScanner;

use super::input::{keep, pick, pieces, scratch, text};
use crate::agents::output::Format;
use crate::process::lines::Lines;

const FORMATS: [Format; 6] = [
    Format::ClaudeStreamJson,
    Format::CodexJson,
    Format::OpenCodeJson,
    Format::GeminiStreamJson,
    Format::Aider,
    Format::Plain,
];

/// An agent's stdout: the first byte picks its format (or its model listing); the rest comes
/// in pieces, cut into lines as the supervised pipe cuts them, each line read by the format's
/// reader and scanned for `RALPH_STATUS` blocks, as an agent run reads them.
pub fn agent_output(data: &[u8]) {
    let (choice, body) = pick(data, FORMATS.len() + 1);
    let Some(format) = FORMATS.get(choice) else {
        keep(crate::agents::registry::parse_list(&text(body)));
        return;
    };
    let mut reader = format.reader();
    let mut scanner = StatusScanner::new();
    let (mut events, mut found) = (Vec::new(), Vec::new());
    let mut lines = Lines::default();
    for piece in pieces(body) {
        scanner.feed(&piece, &mut found);
        lines.push(&piece, |line| reader.line(&line, &mut events));
    }
    lines.finish(|line| reader.line(&line, &mut events));
    reader.finish(&mut events);
    scanner.finish(&mut found);
}

/// A model's reply, read by each role's reader: the first byte picks which.
pub fn model_reply(data: &[u8]) {
    use ralph_actors::policy::adversarial;
    use ralph_actors::prompt::reply;
    let (choice, body) = pick(data, 9);
    let reply = text(body);
    match choice {
        0 => keep(reply::extract_code(&reply)),
        1 => keep(reply::parse_verdict(&reply)),
        2 => keep(reply::parse_judgement(
            &reply,
            &["median of one".into(), "empty".into()],
        )),
        3 => keep(reply::test_name(&reply)),
        4 => keep(ralph_actors::roles::chaos::parse_equivalent(
            &reply,
            &survivors(),
        )),
        5 => keep(crate::spec::planner::parse_reply(&reply, &scratch())),
        6 => {
            keep(adversarial::counterexample(&reply));
            keep(adversarial::fast_check_counterexample(&reply));
            keep(adversarial::proptest_counterexample(&reply));
        }
        7 => {
            let before = crate::regent::tasks::TaskList::parse("- [ ] one\n- [x] two\n");
            let list = crate::regent::tasks::TaskList::parse(&reply);
            keep((list.done(), list.total(), list.next().map(|t| t.label())));
            keep(list.checked_since(&before));
        }
        _ => {
            let mut found = Vec::new();
            let mut scanner = StatusScanner::new();
            for piece in pieces(body) {
                scanner.feed(&piece, &mut found);
            }
            scanner.finish(&mut found);
        }
    }
}

fn survivors() -> Vec<Mutant> {
    (1..=3)
        .map(|line| Mutant {
            id: line.to_string(),
            mutator: "ArithmeticOperator".into(),
            line,
            original: Some("return a + b;".into()),
            replacement: Some("return a - b;".into()),
            status: MutantStatus::Survived,
        })
        .collect()
}
