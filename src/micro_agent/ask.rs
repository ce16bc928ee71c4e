//! Questions at the terminal, as micro-agent asks them: a question, a default taken on an empty
//! answer, an answer checked before it is taken. On stderr, answered on stdin.

use std::io::{BufRead, Write};

use crate::error::{Error, Result};

/// Asks on `out`, reads answers from `input`.
pub(crate) struct Asker<I, O> {
    pub input: I,
    pub out: O,
}

impl<I: BufRead, O: Write> Asker<I, O> {
    /// Says something without asking.
    pub fn say(&mut self, text: &str) -> Result<()> {
        writeln!(self.out, "{text}").map_err(io)
    }

    /// One answer to `question`: `default` when the answer is empty, and asked again until
    /// `check` passes (it returns what is wrong). The end of input is an error: the question
    /// cannot be answered.
    pub fn ask(
        &mut self,
        question: &str,
        default: Option<&str>,
        check: impl Fn(&str) -> Option<String>,
    ) -> Result<String> {
        loop {
            match default {
                Some(d) if !d.is_empty() => write!(self.out, "? {question} ({d}) › "),
                _ => write!(self.out, "? {question} › "),
            }
            .map_err(io)?;
            self.out.flush().map_err(io)?;
            let mut line = String::new();
            if self.input.read_line(&mut line).map_err(io)? == 0 {
                return Err(Error::Io {
                    context: format!("no answer to \"{question}\""),
                    source: std::io::ErrorKind::UnexpectedEof.into(),
                });
            }
            let answer = match line.trim() {
                "" => default.unwrap_or_default().to_string(),
                typed => typed.to_string(),
            };
            match check(&answer) {
                None => return Ok(answer),
                Some(problem) => writeln!(self.out, "  {problem}").map_err(io)?,
            }
        }
    }
}

fn io(e: std::io::Error) -> Error {
    Error::io("cannot talk to the terminal", e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_answer_takes_the_default_and_a_bad_one_is_asked_again() {
        let mut asker = Asker {
            input: "\nshort\nA function that adds two numbers\n".as_bytes(),
            out: Vec::new(),
        };
        assert_eq!(
            asker
                .ask("What file?", Some("src/add.ts"), |_| None)
                .expect("default"),
            "src/add.ts"
        );
        let long_enough =
            |a: &str| (a.len() < 10).then(|| "Please describe it in a sentence".to_string());
        assert_eq!(
            asker
                .ask("What would you like to do?", None, long_enough)
                .expect("answer"),
            "A function that adds two numbers"
        );
        let shown = String::from_utf8(asker.out).expect("utf-8");
        assert!(shown.contains("? What file? (src/add.ts) › "));
        assert!(shown.contains("Please describe it in a sentence"));
        let mut done = Asker {
            input: "".as_bytes(),
            out: Vec::new(),
        };
        assert!(done.ask("Anything?", None, |_| None).is_err());
    }
}
