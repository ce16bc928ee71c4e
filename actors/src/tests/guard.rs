//! LocalGuard around a run's ports: what the roles are sent is masked, what the session stores
//! is masked, and what is written to the target holds the values.

use std::sync::Arc;

use ralph_guard::{Guard, GuardConfig};

use crate::schema::report::Status;
use crate::schema::state::SessionState;

use super::session::*;
use super::*;

const KEY: &str = "AKIAZ4Q7XW2PLM3NB5VC";
const MAIL: &str = "ops.oncall@analytical.example.org";

fn guarded(session: &mut Session) {
    session.guard = Arc::new(Guard::new(&GuardConfig::all()).expect("bundled rules"));
}

/// An Artisan that keeps the target's first line as it was shown it, and fixes the rest.
fn keeps_the_first_line(log: &Log) -> MockLlmClient {
    llm(log, |request, _| {
        Ok(match request.role {
            Role::Librarian => reply(ANALYSIS, LIBRARIAN_USAGE),
            Role::Artisan => {
                let prompt = user_prompt(request);
                let shown = prompt
                    .lines()
                    .find(|l| l.starts_with("AWS_KEY"))
                    .expect("the target's first line");
                reply(&code_reply(&format!("{shown}\n{FIXED}")), ARTISAN_USAGE)
            }
            _ => reply("Sorted and averaged.\nVERDICT: APPROVE", CRITIC_USAGE),
        })
    })
}

#[actix_rt::test]
async fn the_roles_see_placeholders_the_store_keeps_them_and_the_file_gets_the_values() {
    let log = Log::default();
    let mut first = failing("AssertionError: 3 != 2.5");
    first.output.push_str(&format!("paging {MAIL}\n"));
    let mut session = Session::new(
        settings(),
        keeps_the_first_line(&log),
        runner(vec![first, passing()]),
    );
    guarded(&mut session);
    *session.file.lock().unwrap() = format!("AWS_KEY = \"{KEY}\"\n{TARGET}");
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    assert_eq!(session.file(), format!("AWS_KEY = \"{KEY}\"\n{FIXED}"));
    let requests = log.lock().unwrap().clone();
    assert!(!requests.is_empty());
    for r in &requests {
        for m in &r.messages {
            assert!(
                !m.content.contains(KEY) && !m.content.contains(MAIL),
                "{}",
                m.content
            );
        }
    }
    let artisan = requests
        .iter()
        .find(|r| r.role == Role::Artisan)
        .expect("asked");
    let prompt = user_prompt(artisan);
    assert!(
        prompt.contains("AWS_KEY = \"<<SECRET_AWS_ACCESS_KEY_ID_1>>\""),
        "{prompt}"
    );
    assert!(prompt.contains("paging <<PII_EMAIL_1>>"), "{prompt}");
    let system = &artisan.messages[0].content;
    assert!(
        system.contains("placeholders"),
        "the note on placeholders: {system}"
    );
    // What the session keeps is masked: results, checkpoints, the iteration log, the report.
    let saved = session.store.saved();
    let kept = serde_json::to_string(&(
        &saved.results,
        &saved.checkpoints,
        &saved.iterations,
        &saved.reports,
        &saved.states,
    ))
    .expect("json");
    assert!(!kept.contains(KEY) && !kept.contains(MAIL));
    assert!(kept.contains("<<SECRET_AWS_ACCESS_KEY_ID_1>>"));
    let g = &report.local_guard;
    assert!(g.enabled);
    assert_eq!(g.masked.get("SECRET_AWS_ACCESS_KEY_ID"), Some(&1));
    assert_eq!(g.masked.get("PII_EMAIL"), Some(&1));
    assert_eq!(g.restored, 1);
    // The numbers a resumed session goes on from are kept, never the values.
    let state = saved.states.last().expect("a state");
    assert_eq!(
        state.guard_counters.get("SECRET_AWS_ACCESS_KEY_ID"),
        Some(&1)
    );
}

#[actix_rt::test]
async fn a_resumed_session_never_gives_an_old_placeholder_a_new_value() {
    let log = Log::default();
    let mut session = Session::fixing_once(keeps_the_first_line(&log));
    guarded(&mut session);
    let mut state = SessionState::new("session-test", TARGET_PATH, "pytest", 3);
    state.guard_counters = [("SECRET_AWS_ACCESS_KEY_ID".to_string(), 4)].into();
    session.state = Some(state);
    *session.file.lock().unwrap() = format!("AWS_KEY = \"{KEY}\"\n{TARGET}");
    let report = session.run().await;
    assert_eq!(report.status, Status::Success, "{}", report.reason);
    let requests = log.lock().unwrap().clone();
    let artisan = requests
        .iter()
        .find(|r| r.role == Role::Artisan)
        .expect("asked");
    assert!(
        user_prompt(artisan).contains("<<SECRET_AWS_ACCESS_KEY_ID_5>>"),
        "numbered on from the stopped run's 4"
    );
    assert_eq!(session.file(), format!("AWS_KEY = \"{KEY}\"\n{FIXED}"));
}
