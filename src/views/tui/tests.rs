//! Frames of the TUI for each state it shows, drawn on ratatui's test backend and held as
//! snapshots: a recorded run of the bundled example (mid-run and finished), a paused run, the
//! breaker's question, the overlays, a loop's breaker, a model's escape codes, a small terminal.

use chrono::{DateTime, TimeZone, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ralph_actors::events::event::{Envelope, Event};
use ralph_actors::ports::user::{BreakerChoice, Stuck};
use ralph_actors::role::Role;
use ralph_actors::schema::promise::{Check, CheckStatus};
use ralph_actors::tracker::circuit::{Reason, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use crate::testkit::projects::git;
use crate::views::board::{Board, TaskNews};
use crate::views::state::{Mark, ViewState};
use crate::views::tui::draw;
use crate::views::tui::ui::{Action, Modal, Ui};

/// The bundled example's session as `--replay` ran it: 44 events, two iterations, Chaos.
fn recorded() -> Vec<Envelope> {
    include_str!("testdata/median-js.events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event"))
        .collect()
}

/// The first `n` events of the recorded run, as session `session`'s.
fn recorded_as(session: &str, n: usize) -> Vec<Envelope> {
    recorded()[..n]
        .iter()
        .map(|e| Envelope {
            session: session.into(),
            ..e.clone()
        })
        .collect()
}

fn fold(events: &[Envelope]) -> ViewState {
    let mut view = ViewState::new();
    for e in events {
        view.apply(e);
    }
    view
}

fn at(view: &ViewState, secs: i64) -> DateTime<Utc> {
    view.started.expect("started") + chrono::Duration::seconds(secs)
}

fn render(view: &ViewState, ui: &Ui, now: DateTime<Utc>, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    terminal
        .draw(|f| {
            draw::frame(f, view, ui, now);
        })
        .expect("draws");
    let buffer = terminal.backend().buffer().clone();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            text.push_str(buffer[(x, y)].symbol());
        }
        text.push('\n');
    }
    text
}

fn ui() -> Ui {
    Ui::new(None)
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

/// A batch's board after every piece of news `rx` holds so far.
fn board_of(rx: &mut tokio::sync::mpsc::UnboundedReceiver<TaskNews>) -> Board {
    let mut board = Board::default();
    while let Ok(news) = rx.try_recv() {
        board.apply(news);
    }
    board
}

fn envelope(seq: u64, event: Event) -> Envelope {
    Envelope {
        session: "s-1".into(),
        seq,
        time: Utc
            .with_ymd_and_hms(2026, 11, 27, 12, 0, seq as u32)
            .single()
            .expect("time"),
        event,
    }
}

#[test]
fn a_recorded_run_mid_way_shows_its_iteration_phase_and_thought_stream() {
    let events = recorded();
    // Up to the Critic's verdict of iteration 2.
    let view = fold(&events[..35]);
    assert_eq!(view.iteration, 2);
    insta::assert_snapshot!(render(&view, &ui(), at(&view, 75), 100, 30));
}

#[test]
fn a_finished_run_shows_its_end_every_iteration_and_the_promise_it_kept() {
    let mut events = recorded();
    // The recording predates the report's promise: the one a default run of it keeps now.
    if let Some(Event::SessionFinished { report }) = events.last_mut().map(|e| &mut e.event) {
        report.promise.checks = ["tests", "critic", "adversarial", "coverage", "mutation"]
            .map(|name| Check::new(name, CheckStatus::Met, ""))
            .to_vec();
    }
    let view = fold(&events);
    assert!(view.is_finished());
    assert_eq!(
        view.items.iter().map(|i| i.mark).collect::<Vec<_>>(),
        [Mark::Failed, Mark::Done]
    );
    let mut ui = ui();
    ui.finished = true;
    ui.message = Some("the run has ended: q to quit".into());
    insta::assert_snapshot!(render(&view, &ui, at(&view, 3600), 100, 30));
}

#[test]
fn a_paused_run_says_so_and_offers_to_resume() {
    let mut events = recorded()[..20].to_vec();
    events.push(envelope(21, Event::Paused { iteration: 1 }));
    let view = fold(&events);
    assert!(view.paused);
    insta::assert_snapshot!(render(&view, &ui(), at(&view, 5), 90, 24));
}

#[test]
fn the_breaker_asks_on_top_and_each_key_answers() {
    let view = fold(&recorded()[..16]);
    let stuck = Stuck {
        iteration: 3,
        failure: "AssertionError: 3 != 2".into(),
        seen: 3,
        threshold: 3,
    };
    let mut ui = ui();
    ui.ask(stuck.clone());
    insta::assert_snapshot!(render(&view, &ui, at(&view, 9), 90, 24));
    assert_eq!(
        ui.key(key('r')),
        Action::Answer(BreakerChoice::RaiseThreshold(6))
    );
    ui.ask(stuck.clone());
    assert_eq!(ui.key(key('s')), Action::Answer(BreakerChoice::Stop));
    ui.ask(stuck);
    assert_eq!(ui.key(key('g')), Action::None);
    for c in "sort first".chars() {
        ui.key(key(c));
    }
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        ui.key(enter),
        Action::Answer(BreakerChoice::Continue {
            guidance: Some("sort first".into())
        })
    );
}

#[test]
fn help_and_the_log_open_over_the_run_and_close() {
    let view = fold(&recorded());
    let mut ui = ui();
    ui.finished = true;
    assert_eq!(ui.key(key('h')), Action::None);
    insta::assert_snapshot!("help", render(&view, &ui, at(&view, 4), 90, 24));
    ui.key(key('x'));
    assert_eq!(ui.modal, Modal::None, "any key closes the help");
    ui.key(key('l'));
    insta::assert_snapshot!("log_at_its_end", render(&view, &ui, at(&view, 4), 90, 24));
    // Scrolled to the top, then one line down.
    ui.key(key('g'));
    ui.key(key('j'));
    insta::assert_snapshot!("log_scrolled", render(&view, &ui, at(&view, 4), 90, 24));
    ui.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!(ui.modal, Modal::None);
}

#[test]
fn quitting_a_running_run_asks_first_and_ctrl_c_aborts_then_kills() {
    let mut ui = ui();
    assert_eq!(ui.key(key('q')), Action::None);
    assert!(matches!(ui.modal, Modal::Confirm(_)));
    assert_eq!(ui.key(key('n')), Action::None);
    assert_eq!(ui.modal, Modal::None);
    ui.key(key('q'));
    assert_eq!(ui.key(key('y')), Action::Quit);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut ui = Ui::new(None);
    assert_eq!(ui.key(ctrl_c), Action::Quit, "aborts and closes once saved");
    assert!(ui.aborting);
    assert_eq!(ui.key(ctrl_c), Action::Kill);
    ui.finished = true;
    assert_eq!(ui.key(key('q')), Action::Quit);
}

#[test]
fn escape_codes_in_a_models_reply_never_reach_the_screen() {
    let mut events = recorded()[..8].to_vec();
    events.push(envelope(
        9,
        Event::Thought {
            iteration: 1,
            role: Role::Artisan,
            text: "clear\u{1b}[2J\u{1b}[H screen, \u{1b}]0;title\u{7}bell\u{7} and \u{1b}[31mred\u{1b}[0m\r\n\ttabbed\u{8}\n"
                .into(),
        },
    ));
    let view = fold(&events);
    let drawn = render(&view, &ui(), at(&view, 2), 90, 24);
    assert!(!drawn.contains('\u{1b}') && !drawn.contains('\u{7}') && !drawn.contains('\u{8}'));
    assert!(drawn.contains("clear screen, bell  and red"), "{drawn}");
    assert!(drawn.contains("    tabbed"), "{drawn}");
}

#[test]
fn a_loops_breaker_shows_its_state() {
    let events = vec![
        envelope(
            1,
            Event::LoopStarted {
                agent: "claude".into(),
                model: Some("sonnet".into()),
                prompt_file: "PROMPT.md".into(),
                tasks_file: None,
                max_iterations: 10,
                max_cost_usd: 5.0,
            },
        ),
        envelope(
            2,
            Event::AgentStarted {
                iteration: 1,
                run: 1,
                agent: "claude".into(),
                model: None,
            },
        ),
        envelope(
            3,
            Event::BreakerChanged {
                iteration: 1,
                from: State::Closed,
                to: State::HalfOpen,
                reason: Reason::NoProgressWarning,
            },
        ),
    ];
    let view = fold(&events);
    assert_eq!(view.phase.as_deref(), Some("agent"), "the agent's turn");
    insta::assert_snapshot!(render(&view, &ui(), at(&view, 61), 90, 20));
    let mut ended = events;
    ended.push(envelope(
        4,
        Event::AgentEnded {
            iteration: 1,
            run: 1,
            ending: "exited".into(),
            exit_code: Some(0),
            duration_ms: 1_000,
            cost_usd: 0.01,
            cost_estimated: false,
            total_cost_usd: 0.01,
        },
    ));
    let view = fold(&ended);
    assert_eq!(view.phase.as_deref(), Some("tests"), "its work checked");
}

#[test]
fn a_terminal_too_small_is_told_to_grow() {
    let view = fold(&recorded()[..5]);
    insta::assert_snapshot!(render(&view, &ui(), at(&view, 1), 50, 10));
}

#[test]
fn the_model_picker_lists_the_roles_then_a_roles_choices_and_picks_one() {
    use crate::views::tui::picker::Row;
    let view = fold(&recorded()[..16]);
    let choices: Vec<String> = [
        "openai/gpt-4.1-mini",
        "openai/gpt-4.1",
        "anthropic/claude-haiku-4-5",
    ]
    .map(String::from)
    .to_vec();
    let mut ui = ui();
    ui.models = ["librarian", "artisan", "critic"]
        .iter()
        .zip(&choices)
        .map(|(who, now)| Row {
            who: who.to_string(),
            now: now.clone(),
            choices: choices.clone(),
            note: None,
        })
        .collect();
    assert_eq!(ui.key(key('m')), Action::None);
    let down = KeyEvent::new(KeyCode::Down, KeyModifiers::NONE);
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    ui.key(down);
    insta::assert_snapshot!("models_roles", render(&view, &ui, at(&view, 9), 90, 24));
    ui.key(enter);
    ui.key(down);
    insta::assert_snapshot!("models_choices", render(&view, &ui, at(&view, 9), 90, 24));
    assert_eq!(
        ui.key(enter),
        Action::Pick {
            row: 1,
            model: "anthropic/claude-haiku-4-5".into()
        }
    );
    assert_eq!(ui.modal, Modal::None, "a pick closes the picker");
    // A run without a picker says so.
    let mut bare = Ui::new(None);
    assert_eq!(bare.key(key('m')), Action::None);
    assert_eq!(bare.modal, Modal::None);
    assert_eq!(
        bare.message.as_deref(),
        Some("this run has no models to switch")
    );
}

#[test]
fn the_header_shows_the_model_that_answered_and_the_agents_model_per_run() {
    let mut events = recorded()[..16].to_vec();
    events.push(envelope(
        17,
        Event::LlmCallFinished {
            iteration: 1,
            role: Role::Critic,
            model: "anthropic/claude-haiku-4-5".into(),
            usage: Default::default(),
            cost_usd: 0.0,
            total_cost_usd: 0.01,
            duration_ms: 10,
            context_used: None,
        },
    ));
    let view = fold(&events);
    assert!(view.models.contains(&(
        "critic".to_string(),
        "anthropic/claude-haiku-4-5".to_string()
    )));
    let started = |model: Option<&str>| Event::AgentStarted {
        iteration: 2,
        run: 1,
        agent: "claude".into(),
        model: model.map(String::from),
    };
    let view = fold(&[
        envelope(1, started(None)),
        envelope(2, started(Some("opus"))),
    ]);
    assert_eq!(view.models, [("model".to_string(), "opus".to_string())]);
}

#[test]
fn a_batch_shows_its_tasks_beside_the_one_in_focus_and_asks_before_a_skip() {
    use crate::views::board::Tasks;
    let view = fold(&recorded()[..16]);
    let (tasks, mut rx) = Tasks::new();
    tasks.cap(1.0);
    tasks.task("entry-1", "src/mean.py", Mark::Done, "success", 0.0123);
    tasks.task("entry-2", "median.js", Mark::Running, "", 0.0065);
    tasks.task("entry-3", "specs/parse.md", Mark::Pending, "", 0.0);
    let board = board_of(&mut rx);
    let mut ui = ui();
    ui.focus = board.running();
    ui.board = Some(board);
    insta::assert_snapshot!("batch_tasks", render(&view, &ui, at(&view, 9), 100, 30));
    let tab = KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE);
    ui.key(tab);
    assert_eq!(ui.selected, Some(2), "Tab looks at the next task");
    ui.focus = ui.selected;
    assert_eq!(ui.key(key('s')), Action::None);
    assert_eq!(ui.modal, Modal::Confirm(super::ui::Confirm::Skip(2)));
    insta::assert_snapshot!("batch_skip", render(&view, &ui, at(&view, 9), 100, 30));
    assert_eq!(ui.key(key('y')), Action::Skip("entry-3".into()));
    // A task that has ended cannot be skipped.
    ui.selected = Some(0);
    ui.focus = Some(0);
    ui.key(key('s'));
    assert_eq!(ui.modal, Modal::None);
    assert_eq!(ui.message.as_deref(), Some("src/mean.py has ended already"));
    ui.key(key('f'));
    assert_eq!(ui.selected, None, "f follows the task that runs again");
}

#[test]
fn a_tasks_next_session_starts_the_view_afresh_and_keeps_its_thought_stream() {
    let mut events = recorded();
    let first_log_lines = {
        let view = fold(&events);
        assert!(view.is_finished());
        view.log.len()
    };
    // A spec's second target: a session of its own, in the same task's view.
    let next = recorded_as("second", 12);
    events.extend(next);
    let view = fold(&events);
    assert!(!view.is_finished(), "the new session has not ended");
    assert_eq!(view.session, "second");
    assert!(view.items.len() <= 1, "{:?}", view.items);
    assert!(view.log.len() > first_log_lines, "the log goes on");
    assert!(!view.thought.is_empty());
}

#[test]
fn tasks_running_side_by_side_keep_their_views_apart() {
    use crate::views::board::Tasks;
    let (tasks, mut rx) = Tasks::new();
    tasks.task("entry-1", "median.js", Mark::Running, "", 0.0);
    tasks.task("entry-2", "mean.py", Mark::Running, "", 0.0);
    tasks.task("entry-3", "mode.py", Mark::Pending, "", 0.0);
    let board = board_of(&mut rx);
    let mut views = super::Views::default();
    let first = recorded();
    let second = recorded_as("other", 10);
    // Interleaved, as two runs at once send them.
    for (i, e) in first.iter().enumerate() {
        views.apply("entry-1".into(), e);
        if let Some(e) = second.get(i) {
            views.apply("entry-2".into(), e);
        }
    }
    let mut ui = ui();
    ui.board = Some(board);
    ui.focus = Some(0);
    assert!(
        views.focused(&ui).is_finished(),
        "the first task's run ended"
    );
    ui.focus = Some(1);
    let view = views.focused(&ui);
    assert_eq!(view.session, "other");
    assert!(!view.is_finished(), "the second's has not");
    ui.focus = Some(2);
    let view = views.focused(&ui);
    assert_eq!(
        view.title, "mode.py",
        "a task not started shows its name alone"
    );
    assert!(view.items.is_empty());
    ui.focus = None;
    assert_eq!(views.focused(&ui).session, "other", "the one begun last");
}

#[test]
fn a_loop_s_diff_is_its_work_since_the_last_commit_read_through_the_time_limited_probe() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("work.txt"), "one\n").expect("write");
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    assert_eq!(
        super::git_diff(dir.path()),
        ["no change since the last commit"]
    );
    std::fs::write(dir.path().join("work.txt"), "two\n").expect("write");
    let lines = super::git_diff(dir.path());
    assert!(lines.iter().any(|l| l == "-one"), "{lines:?}");
    assert!(lines.iter().any(|l| l == "+two"), "{lines:?}");
    let outside = tempfile::tempdir().expect("temp dir");
    let failed = super::git_diff(outside.path());
    assert!(failed[0].starts_with("git diff failed"), "{failed:?}");
}
