//! Bounding the texts the vault keeps and shows.

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
pub fn cut_to(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut end = max.saturating_sub(4);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(" ...");
}
