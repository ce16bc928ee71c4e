//! A server-sent-events body cut into whole lines before the SSE parser (`eventsource-stream`)
//! reads it. That parser searches its whole buffer again on every chunk while a line is
//! incomplete, and copies the rest of its buffer for every line it takes off, so a long line
//! in many chunks, or many lines in one chunk, cost the square of their size (10 MB took
//! minutes). Given one whole line at a time, it does linear work; and a line longer than any
//! event is refused instead of held.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use futures::stream::{Stream, StreamExt};

/// The longest line taken: a model's event is far smaller; a stream past it is refused.
pub const MAX_LINE: usize = 16 << 20;

/// `bytes` as its whole lines, each with its end (`\n`, `\r\n` or `\r`, as SSE allows), and a
/// last line without one when the body ends; `too_long()` ends the stream at a line past
/// [`MAX_LINE`].
pub fn whole_lines<S, E>(bytes: S, too_long: fn() -> E) -> impl Stream<Item = Result<Bytes, E>>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    let state = Cut {
        bytes,
        held: BytesMut::new(),
        searched: 0,
        ready: VecDeque::new(),
        done: false,
    };
    futures::stream::unfold(state, move |mut cut| async move {
        loop {
            if let Some(line) = cut.ready.pop_front() {
                return Some((Ok(line), cut));
            }
            if cut.done {
                if cut.held.is_empty() {
                    return None;
                }
                let last = cut.held.split().freeze();
                return Some((Ok(last), cut));
            }
            match cut.bytes.next().await {
                None => cut.done = true,
                Some(Err(e)) => {
                    cut.stop();
                    return Some((Err(e), cut));
                }
                Some(Ok(chunk)) => {
                    cut.held.extend_from_slice(&chunk);
                    cut.take_lines();
                    if cut.held.len() > MAX_LINE {
                        cut.stop();
                        return Some((Err(too_long()), cut));
                    }
                }
            }
        }
    })
}

struct Cut<S> {
    bytes: S,
    /// What has come and is not yet a whole line.
    held: BytesMut,
    /// How far `held` was searched for a line end: only what came since is searched.
    searched: usize,
    ready: VecDeque<Bytes>,
    done: bool,
}

impl<S> Cut<S> {
    /// Moves each whole line of `held` to `ready`. A `\r` last is held back: a `\n` may follow.
    fn take_lines(&mut self) {
        let mut at = self.searched;
        while let Some(offset) = self.held[at..]
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')
        {
            let end = at + offset;
            let line_end = match self.held[end] {
                b'\r' => match self.held.get(end + 1) {
                    None => {
                        self.searched = end;
                        return;
                    }
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                },
                _ => end + 1,
            };
            self.ready.push_back(self.held.split_to(line_end).freeze());
            at = 0;
        }
        self.searched = self.held.len();
    }

    fn stop(&mut self) {
        self.done = true;
        self.held.clear();
        self.searched = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(pieces: &[&str]) -> Vec<String> {
        let chunks: Vec<Result<Bytes, ()>> = pieces
            .iter()
            .map(|p| Ok(Bytes::copy_from_slice(p.as_bytes())))
            .collect();
        let stream = whole_lines(futures::stream::iter(chunks), || ());
        futures::executor::block_on(stream.collect::<Vec<_>>())
            .into_iter()
            .map(|line| String::from_utf8(line.unwrap().to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn each_line_comes_whole_with_its_end_however_the_body_is_cut() {
        assert_eq!(
            lines(&["data: a\r", "\ndata: b\n\nda", "ta: c\rdata: d", "\r"]),
            ["data: a\r\n", "data: b\n", "\n", "data: c\r", "data: d\r"]
        );
        assert_eq!(lines(&["data: last"]), ["data: last"]);
    }

    #[test]
    fn a_line_past_the_cap_ends_the_stream() {
        let long = "x".repeat(MAX_LINE / 2 + 1);
        let chunks: Vec<Result<Bytes, &str>> = vec![
            Ok(Bytes::from_static(b"data: ok\n")),
            Ok(Bytes::from(long.clone())),
            Ok(Bytes::from(long)),
            Ok(Bytes::from_static(b"\n")),
        ];
        let stream = whole_lines(futures::stream::iter(chunks), || "too long");
        let got: Vec<Result<Bytes, &str>> = futures::executor::block_on(stream.collect());
        assert_eq!(got.len(), 2);
        assert_eq!(got[1], Err("too long"));
    }
}
