//! The model picker (`m`): who may change model (a fix run's roles, or a loop's agent), what
//! each may change to, and what choosing one does. The view shows [`Row`]s; the run's side is
//! the [`Picker`]'s `choose`, which puts the choice into effect from the next call (a role) or
//! the next iteration (the agent).

use tokio::sync::oneshot;

/// One who can change model.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// A role (`artisan`), or the agent's name.
    pub who: String,
    /// The model it is on (or is switched to, from its next call).
    pub now: String,
    /// What it may change to.
    pub choices: Vec<String>,
    /// Why there is nothing to choose from yet (the agent's models being listed, or why they
    /// cannot be).
    pub note: Option<String>,
}

/// Puts row `i` on a model; what to tell the person, or why it cannot.
pub type Choose = Box<dyn FnMut(usize, &str) -> Result<String, String>>;

/// Choices that come later: an agent's models, as the agent lists them.
pub type Later = (usize, oneshot::Receiver<Result<Vec<String>, String>>);

/// The picker of a run: its rows, choices still to come, and what a choice does.
pub struct Picker {
    pub rows: Vec<Row>,
    pub later: Option<Later>,
    pub choose: Choose,
}

/// Where the picker's overlay stands: on a row, and on one of its choices once opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub row: usize,
    pub choice: Option<usize>,
}

/// What a key does in the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Stay open, here.
    Stay(Cursor),
    /// Close the overlay.
    Close,
    /// Put `row` on `model`.
    Pick { row: usize, model: String },
}

impl Cursor {
    /// The step for `key` over `rows`.
    pub fn key(self, key: crossterm::event::KeyCode, rows: &[Row]) -> Step {
        use crossterm::event::KeyCode as K;
        let Some(row) = rows.get(self.row) else {
            return Step::Close;
        };
        let down = |at: usize, len: usize| (at + 1).min(len.saturating_sub(1));
        match (self.choice, key) {
            (None, K::Up | K::Char('k')) => Step::Stay(Cursor {
                row: self.row.saturating_sub(1),
                ..self
            }),
            (None, K::Down | K::Char('j')) => Step::Stay(Cursor {
                row: down(self.row, rows.len()),
                ..self
            }),
            (None, K::Enter | K::Right | K::Char('l')) if !row.choices.is_empty() => {
                let now = row.choices.iter().position(|c| *c == row.now);
                Step::Stay(Cursor {
                    choice: Some(now.unwrap_or(0)),
                    ..self
                })
            }
            (None, K::Esc | K::Char('q') | K::Char('m')) => Step::Close,
            (Some(at), K::Up | K::Char('k')) => Step::Stay(Cursor {
                choice: Some(at.saturating_sub(1)),
                ..self
            }),
            (Some(at), K::Down | K::Char('j')) => Step::Stay(Cursor {
                choice: Some(down(at, row.choices.len())),
                ..self
            }),
            (Some(at), K::Enter) => match row.choices.get(at) {
                Some(model) => Step::Pick {
                    row: self.row,
                    model: model.clone(),
                },
                None => Step::Stay(self),
            },
            (Some(_), K::Esc | K::Left | K::Char('h')) => Step::Stay(Cursor {
                choice: None,
                ..self
            }),
            _ => Step::Stay(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyCode;

    fn rows() -> Vec<Row> {
        let choices = vec!["openai/a".to_string(), "openai/b".into(), "openai/c".into()];
        vec![
            Row {
                who: "librarian".into(),
                now: "openai/a".into(),
                choices: choices.clone(),
                note: None,
            },
            Row {
                who: "artisan".into(),
                now: "openai/b".into(),
                choices,
                note: None,
            },
            Row {
                who: "claude".into(),
                now: "default".into(),
                choices: Vec::new(),
                note: Some("listing".into()),
            },
        ]
    }

    /// Where `key` moves the cursor `at` to, which must stay open (`what` it should have done).
    fn stays(at: Cursor, key: KeyCode, rows: &[Row], what: &str) -> Cursor {
        match at.key(key, rows) {
            Step::Stay(at) => at,
            other => panic!("{what}: {other:?}"),
        }
    }

    #[test]
    fn a_choice_opens_on_the_model_in_use_and_picks_the_one_moved_to() {
        let rows = rows();
        let at = Cursor {
            row: 0,
            choice: None,
        };
        let at = stays(at, KeyCode::Down, &rows, "moves");
        let at = stays(at, KeyCode::Enter, &rows, "opens");
        assert_eq!(at.choice, Some(1), "opens on the artisan's model now");
        let at = stays(at, KeyCode::Down, &rows, "moves");
        let at = stays(at, KeyCode::Down, &rows, "stays at the end");
        assert_eq!(
            at.key(KeyCode::Enter, &rows),
            Step::Pick {
                row: 1,
                model: "openai/c".into()
            }
        );
        assert_eq!(
            at.key(KeyCode::Esc, &rows),
            Step::Stay(Cursor {
                row: 1,
                choice: None
            })
        );
    }

    #[test]
    fn a_row_without_choices_does_not_open_and_esc_closes() {
        let rows = rows();
        let at = Cursor {
            row: 2,
            choice: None,
        };
        assert_eq!(at.key(KeyCode::Enter, &rows), Step::Stay(at));
        assert_eq!(at.key(KeyCode::Esc, &rows), Step::Close);
        assert_eq!(at.key(KeyCode::Char('m'), &rows), Step::Close);
    }
}
