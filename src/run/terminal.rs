//! The person at the terminal, as the core's `User` port: when a run is stuck, the circuit
//! breaker asks here (on stderr, answered on stdin) before it stops. Only when both are a
//! terminal and the live view is the human one; otherwise the run is headless and stops.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use ralph_actors::ports::user::{BreakerChoice, Stuck, User, UserError};

use crate::cli::OutputFormat;

/// Whoever answers at this terminal, if a person can: `None` for a headless run.
pub(crate) fn user(output: OutputFormat) -> Option<Arc<dyn User>> {
    let interactive = output == OutputFormat::Human
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    interactive.then(|| Arc::new(TerminalUser) as Arc<dyn User>)
}

struct TerminalUser;

#[async_trait::async_trait]
impl User for TerminalUser {
    async fn on_entropy(&self, stuck: &Stuck) -> Result<BreakerChoice, UserError> {
        let stuck = stuck.clone();
        // Reading a terminal blocks; a Ctrl+C meanwhile ends the run without waiting for it.
        tokio::task::spawn_blocking(move || {
            ask(
                &stuck,
                &mut std::io::stdin().lock(),
                &mut std::io::stderr().lock(),
            )
        })
        .await
        .map_err(|e| UserError(e.to_string()))?
    }
}

/// Asks what to do about a stuck run until the answer is one of the choices; the end of input
/// stops the run.
fn ask(
    stuck: &Stuck,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<BreakerChoice, UserError> {
    let io = |e: std::io::Error| UserError(e.to_string());
    let raised = stuck.threshold.saturating_mul(2).max(stuck.threshold + 1);
    writeln!(
        out,
        "\nstuck: the same failure ended {} iterations (threshold {}): {}",
        stuck.seen, stuck.threshold, stuck.failure
    )
    .map_err(io)?;
    loop {
        write!(
            out,
            "  [s] stop here · [g] go on with guidance for the Artisan · [c] go on · \
             [r] raise the threshold to {raised} > "
        )
        .map_err(io)?;
        out.flush().map_err(io)?;
        let Some(answer) = read_line(input).map_err(io)? else {
            return Ok(BreakerChoice::Stop);
        };
        match answer.as_str() {
            "s" | "stop" => return Ok(BreakerChoice::Stop),
            "c" | "continue" => return Ok(BreakerChoice::Continue { guidance: None }),
            "r" | "raise" => return Ok(BreakerChoice::RaiseThreshold(raised)),
            "g" | "guidance" => {
                write!(out, "  guidance for the Artisan (one line): ").map_err(io)?;
                out.flush().map_err(io)?;
                let guidance = read_line(input).map_err(io)?.filter(|g| !g.is_empty());
                return Ok(BreakerChoice::Continue { guidance });
            }
            _ => writeln!(out, "  answer s, g, c or r").map_err(io)?,
        }
    }
}

/// One line, trimmed; `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stuck() -> Stuck {
        Stuck {
            iteration: 3,
            failure: "AssertionError: 3 != 2".into(),
            seen: 3,
            threshold: 3,
        }
    }

    fn answer(typed: &str) -> (BreakerChoice, String) {
        let mut out = Vec::new();
        let choice = ask(&stuck(), &mut typed.as_bytes(), &mut out).expect("asked");
        (choice, String::from_utf8(out).expect("utf-8"))
    }

    #[test]
    fn each_answer_is_a_choice() {
        let (choice, shown) = answer("s\n");
        assert_eq!(choice, BreakerChoice::Stop);
        assert!(shown
            .contains("the same failure ended 3 iterations (threshold 3): AssertionError: 3 != 2"));
        assert!(shown.contains("[r] raise the threshold to 6"));
        assert_eq!(answer("c\n").0, BreakerChoice::Continue { guidance: None });
        assert_eq!(answer("r\n").0, BreakerChoice::RaiseThreshold(6));
        assert_eq!(
            answer("g\n  sort before picking the middle  \n").0,
            BreakerChoice::Continue {
                guidance: Some("sort before picking the middle".into())
            }
        );
        let (choice, shown) = answer("what?\nc\n");
        assert_eq!(choice, BreakerChoice::Continue { guidance: None });
        assert!(shown.contains("answer s, g, c or r"));
        assert_eq!(answer("").0, BreakerChoice::Stop, "the end of input stops");
    }
}
