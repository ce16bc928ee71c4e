//! A pipe's bytes cut into lines, as an agent's output reader and the line stream take them.

/// The longest line kept whole. A line past it is cut there and its rest comes as the lines
/// after, so a child that prints without a newline holds no more than this of the parent's
/// memory. An agent's longest JSON event (a tool's result holding a file) is far below it.
pub const MAX_LINE: usize = 16 << 20;

/// The start of a line whose end has not come yet.
#[derive(Debug, Default)]
pub struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// Each line `data` completes, without its `\n` (nor a `\r` before it), read lossily.
    /// Only `data` is searched for line ends, so a line arriving a byte at a time costs its
    /// length, not its square.
    pub fn push(&mut self, data: &[u8], mut each: impl FnMut(String)) {
        let mut rest = data;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.hold(&rest[..end], &mut each);
            let line = std::mem::take(&mut self.partial);
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            each(String::from_utf8_lossy(line).into_owned());
            rest = &rest[end + 1..];
        }
        self.hold(rest, &mut each);
    }

    /// The last line, when the output did not end with a newline.
    pub fn finish(&mut self, mut each: impl FnMut(String)) {
        if !self.partial.is_empty() {
            each(String::from_utf8_lossy(&std::mem::take(&mut self.partial)).into_owned());
        }
    }

    fn hold(&mut self, piece: &[u8], each: &mut impl FnMut(String)) {
        self.partial.extend_from_slice(piece);
        while self.partial.len() > MAX_LINE {
            let rest = self.partial.split_off(MAX_LINE);
            let line = std::mem::replace(&mut self.partial, rest);
            each(String::from_utf8_lossy(&line).into_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pieces: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for piece in pieces {
            lines.push(piece, |l| out.push(l));
        }
        lines.finish(|l| out.push(l));
        out
    }

    #[test]
    fn lines_come_whole_however_the_pipe_cuts_them() {
        assert_eq!(
            read(&[b"one\r\ntw", b"o\n", b"", b"thr", b"ee"]),
            ["one", "two", "three"]
        );
        assert_eq!(read(&[b"\n\n"]), ["", ""]);
    }

    #[test]
    fn a_line_past_the_cap_is_cut_into_lines_of_the_cap() {
        let long = vec![b'x'; MAX_LINE * 2 + 5];
        let lines = read(&[&long[..MAX_LINE - 1], &long[MAX_LINE - 1..], b"\nend"]);
        let lengths: Vec<usize> = lines.iter().map(String::len).collect();
        assert_eq!(lengths, [MAX_LINE, MAX_LINE, 5, 3]);
    }
}
