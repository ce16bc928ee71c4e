//! Agents without a structured mode (Aider, goose, Auggie's text): every line is text.

use ralph_actors::schema::agent::AgentEvent;

use super::reader::Reader;

#[derive(Debug, Default)]
pub struct PlainReader;

impl Reader for PlainReader {
    fn line(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        out.push(AgentEvent::Text {
            text: line.to_string(),
        });
    }
}
