//! The placeholder a masked value becomes: `<<SECRET_AWS_ACCESS_KEY_ID_1>>`, `<<PII_EMAIL_2>>`.
//!
//! Why this form: models copy identifier-like tokens between unusual brackets intact (they
//! read as template variables), the kind tells the model what the value was for (so a fix can
//! still use it sensibly), and the class word (`SECRET`, `PII`) and the double angle brackets
//! make a placeholder easy to tell apart from code, and a mangled one easy to spot. The number
//! counts the distinct values of the kind in the run, from 1, in the order they were seen.

use std::ops::Range;

use crate::kind::Kind;

/// The text of placeholder `n` of `kind`.
pub fn format(kind: &Kind, n: u32) -> String {
    format!("<<{kind}_{n}>>")
}

/// Whether `body` (what stands between `<<` and `>>`) has a placeholder's shape:
/// `SECRET_` or `PII_`, then upper-case letters, digits and underscores, ending in `_<number>`.
fn is_body(body: &[u8]) -> bool {
    let rest = if let Some(r) = body.strip_prefix(b"SECRET_") {
        r
    } else if let Some(r) = body.strip_prefix(b"PII_") {
        r
    } else {
        return false;
    };
    let Some(us) = rest.iter().rposition(|&b| b == b'_') else {
        return false;
    };
    let (label, number) = (&rest[..us], &rest[us + 1..]);
    !label.is_empty()
        && !number.is_empty()
        && number.iter().all(u8::is_ascii_digit)
        && label
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
}

/// The byte ranges of every well-formed placeholder in `text`, `<<` to `>>`, in order.
pub fn find_all(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = memchr::memmem::find(&bytes[from..], b"<<") {
        let start = from + i;
        let body_start = start + 2;
        // A placeholder is short: look for its end within 96 bytes.
        let limit = (body_start + 96).min(bytes.len());
        match memchr::memmem::find(&bytes[body_start..limit], b">>") {
            Some(j) if is_body(&bytes[body_start..body_start + j]) => {
                let end = body_start + j + 2;
                out.push(start..end);
                from = end;
            }
            _ => from = start + 1,
        }
    }
    out
}

/// Words that look like a placeholder of one of `kinds` written wrongly: without its brackets,
/// with one bracket, in lower case, with spaces inside (`SECRET_AWS_ACCESS_KEY_ID_1`,
/// `<SECRET_AWS_ACCESS_KEY_ID_1>`, `<< secret_aws_access_key_id_1 >>`). `well_formed` are the
/// ranges [`find_all`] gave, which are not reported. Only kinds of the run count, so a
/// constant such as `SECRET_KEY_1` in the user's code is left alone.
pub fn mangled<'k>(
    text: &str,
    well_formed: &[Range<usize>],
    kinds: impl Iterator<Item = &'k str>,
) -> Vec<Range<usize>> {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut out = Vec::new();
    for kind in kinds {
        let needle = kind.to_ascii_lowercase();
        let mut from = 0;
        while let Some(i) = memchr::memmem::find(&bytes[from..], needle.as_bytes()) {
            let start = from + i;
            let mut end = start + needle.len();
            from = end;
            // `_<number>` must follow, and no further word character.
            if bytes.get(end) != Some(&b'_') {
                continue;
            }
            let digits = bytes[end + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 {
                continue;
            }
            end += 1 + digits;
            let word = |b: Option<&u8>| b.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
            if word(bytes.get(end)) || (start > 0 && word(bytes.get(start - 1))) {
                continue;
            }
            if !well_formed.iter().any(|r| r.start <= start && end <= r.end) {
                out.push(start..end);
            }
        }
    }
    out.sort_by_key(|r| r.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_placeholders_are_found() {
        let kind = Kind::secret("aws-access-key-id");
        let p = format(&kind, 1);
        assert_eq!(p, "<<SECRET_AWS_ACCESS_KEY_ID_1>>");
        let text = format!("key = \"{p}\"; mail <<PII_EMAIL_12>> x << y >> <<SECRET_>> <<PII_X_>>");
        let found: Vec<&str> = find_all(&text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(found, [p.as_str(), "<<PII_EMAIL_12>>"]);
        assert!(find_all("a << b << c").is_empty());
        assert_eq!(find_all("<<<<PII_EMAIL_1>>").len(), 1);
    }

    #[test]
    fn mangled_forms_of_the_run_s_kinds_are_spotted() {
        let kinds = ["SECRET_AWS_ACCESS_KEY_ID", "PII_EMAIL"];
        for text in [
            "k = \"SECRET_AWS_ACCESS_KEY_ID_1\"",
            "k = \"<SECRET_AWS_ACCESS_KEY_ID_1>\"",
            "k = \"<<secret_aws_access_key_id_2>>\"",
            "to: PII_EMAIL_1",
        ] {
            let good = find_all(text);
            assert_eq!(mangled(text, &good, kinds.into_iter()).len(), 1, "{text}");
        }
        for text in [
            "k = \"<<SECRET_AWS_ACCESS_KEY_ID_1>>\"",
            "SECRET_KEY_1 = load()",
            "MY_PII_EMAIL_1_FIELD",
        ] {
            let good = find_all(text);
            assert!(mangled(text, &good, kinds.into_iter()).is_empty(), "{text}");
        }
    }
}
