//! A process's output, capped: the first quarter and the last three quarters of the allowance
//! are kept, since a tool's summary comes at the end and the first error often at the start.

use std::collections::VecDeque;

/// `text` capped as a run's output is (see [`Capture`]), and whether anything was cut.
pub fn cap_output(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut capture = Capture::new(max);
    capture.push(text.as_bytes());
    capture.render()
}

/// The output, capped: the first quarter and the last three quarters of `max` bytes are kept,
/// since a tool's summary comes at the end and the first error often at the start.
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_max: usize,
    tail_max: usize,
    cut: usize,
}

impl Capture {
    pub fn new(max: usize) -> Self {
        let head_max = max / 4;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_max,
            tail_max: max - head_max,
            cut: 0,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        let to_head = data.len().min(self.head_max - self.head.len());
        self.head.extend_from_slice(&data[..to_head]);
        self.tail.extend(&data[to_head..]);
        if self.tail.len() > self.tail_max {
            let excess = self.tail.len() - self.tail_max;
            self.tail.drain(..excess);
            self.cut += excess;
        }
    }

    /// The text, with a marker where bytes were cut, and whether any were.
    pub fn render(&mut self) -> (String, bool) {
        let mut head = std::mem::take(&mut self.head);
        let mut tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        let mut cut = self.cut;
        if cut == 0 {
            head.extend_from_slice(&tail);
            return (String::from_utf8_lossy(&head).into_owned(), false);
        }
        // Cut at line ends when one is near, so neither part starts or ends mid-line.
        const NEAR: usize = 1024;
        if let Some(p) = head.iter().rposition(|&b| b == b'\n') {
            if head.len() - p <= NEAR {
                cut += head.len() - (p + 1);
                head.truncate(p + 1);
            }
        }
        if let Some(p) = tail.iter().take(NEAR).position(|&b| b == b'\n') {
            cut += p + 1;
            tail.drain(..=p);
        }
        let mut text = String::from_utf8_lossy(&head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("... [{cut} bytes cut] ...\n"));
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_the_cap_nothing_is_cut() {
        assert_eq!(cap_output("a\nb\n", 100), ("a\nb\n".to_string(), false));
    }

    #[test]
    fn over_the_cap_the_head_and_tail_stay_cut_at_line_ends() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (out, cut) = cap_output(&text, 400);
        assert!(cut);
        assert!(out.starts_with("line 0\n"), "{out}");
        assert!(out.ends_with("line 999\n"), "{out}");
        assert!(out.contains(" bytes cut] ...\n"), "{out}");
        assert!(
            out.lines()
                .all(|l| l.starts_with("line ") || l.starts_with("... [")),
            "{out}"
        );
        assert!(out.len() < 400 + 64, "{}", out.len());
    }
}
