//! E-mail addresses, `local@domain.tld`, found from each `@` (a rare byte, found by `memchr`)
//! by expanding left over the local part and right over the domain.
//!
//! Taken: a local part of letters, digits and `.!#$%&*+?^_~-` (RFC 5322's atext without the
//! bytes code uses as delimiters: `'`, `=`, `/`, `{`, `}`, `|` and the backtick, so that
//! `email='ann@x.org'` yields the address alone), no leading, trailing or doubled dot; a domain
//! of at least two labels whose last one (the TLD) is 2-24 letters, all lower or all upper case.
//!
//! Left: hosts without a dot (`user@localhost`), npm scopes and decorators (`@types/node`,
//! `@Override`: nothing before the `@`), versions (`lodash@4.17.21`: the TLD must be letters),
//! asset names (`icon@2x.png`: the TLD is a file extension), Kotlin labels
//! (`this@Activity.finish`), method calls (`x@self.weight(`), and SSH remotes
//! (`git@github.com:owner/repo`): `git` is a service account, never a person. And the userinfo
//! of a URL (`postgres://app:s3cret@db.example.com`, `redis://:s3cret@cache.example.io`,
//! `jdbc:oracle:thin:app/s3cret@db.example.com`): what stands before its `@` is a user name
//! or a password, which the secret rules read, not an address.

use memchr::memchr_iter;

use super::scan;
use crate::kind::Finding;

const RULE: &str = "pii-email";
const LABEL: &str = "email";

/// RFC 5321's limits.
const MAX_LOCAL: usize = 64;
const MAX_DOMAIN: usize = 253;

/// Top-level "domains" that are file extensions in code (`logo@2x.png`, `chunk@hash.js`); real
/// TLDs that are also extensions of source files (`.py`, `.rs`, `.sh`, `.pl`) are kept.
const FILE_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff", "js", "mjs",
    "cjs", "jsx", "ts", "tsx", "css", "scss", "sass", "less", "map", "json", "html", "htm", "xml",
    "txt", "yml", "yaml", "toml", "lock", "ttf", "otf", "eot", "woff", "mp3", "mp4", "wav", "ogg",
    "webm", "pdf", "zip", "gz", "tgz", "wasm", "vue", "svelte", "min",
];

/// Local parts that make `x@Y.z` Kotlin's labelled `this`/`return`, or a service account.
const NOT_PEOPLE: &[&str] = &["this", "super", "return", "break", "continue", "git"];

/// Pushes every e-mail address of `text`.
pub(super) fn find(text: &str, out: &mut Vec<Finding>) {
    let b = text.as_bytes();
    let mut resume = 0;
    for at in memchr_iter(b'@', b) {
        if at < resume {
            continue;
        }
        if let Some((start, end)) = address_around(b, at) {
            scan::push(out, start, end, LABEL, RULE);
            resume = end;
        }
    }
}

/// The address whose `@` is at `at`, as `start..end`.
fn address_around(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let start = local_start(b, at)?;
    let end = domain_end(b, at + 1)?;
    let local = b.get(start..at)?;
    if NOT_PEOPLE
        .iter()
        .any(|w| local.eq_ignore_ascii_case(w.as_bytes()))
    {
        return None;
    }
    // `x@self.weight(`: a method call, not an address.
    if scan::at(b, end) == Some(b'(') || in_userinfo(b, start) {
        return None;
    }
    Some((start, end))
}

/// How far back from a local part [`in_userinfo`] looks for the URL it may belong to.
const URL_HEAD: usize = 256;

/// Whether the local part starting at `start` is a URL's userinfo: `scheme://` then at most a
/// user name and a colon before it, with no `/` or `@` between (or Oracle's `thin:user/`).
fn in_userinfo(b: &[u8], start: usize) -> bool {
    let head = &b[start.saturating_sub(URL_HEAD)..start];
    let token = head
        .iter()
        .rposition(|c| c.is_ascii_whitespace() || b"\"'`<>(),;".contains(c))
        .map_or(head, |i| &head[i + 1..]);
    if let Some(i) = token.windows(3).rposition(|w| w == b"://") {
        let userinfo = &token[i + 3..];
        return !userinfo.iter().any(|&c| c == b'/' || c == b'@')
            && userinfo.iter().filter(|&&c| c == b':').count() <= 1
            && (userinfo.is_empty() || userinfo.last() == Some(&b':'));
    }
    let lower = token.to_ascii_lowercase();
    lower
        .windows(5)
        .rposition(|w| w == b"thin:")
        .is_some_and(|i| {
            let user = &token[i + 5..];
            user.last() == Some(&b'/') && user.iter().filter(|&&c| c == b'/').count() == 1
        })
}

fn is_local(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b".!#$%&*+?^_~-".contains(&c)
}

fn is_domain(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'.' || c == b'-'
}

/// How many of `bytes` in a row are of `class`, if no more than `max`: a longer run is no
/// address, and is read no further than that.
fn bounded_run<'a>(
    bytes: impl Iterator<Item = &'a u8>,
    max: usize,
    class: impl Fn(u8) -> bool,
) -> Option<usize> {
    let len = bytes.take(max + 1).take_while(|&&c| class(c)).count();
    (len <= max).then_some(len)
}

/// Where the local part before the `@` at `at` starts, if it is a valid one.
fn local_start(b: &[u8], at: usize) -> Option<usize> {
    let head = b.get(..at)?;
    let len = bounded_run(head.iter().rev(), MAX_LOCAL, is_local)?;
    let mut start = at - len;
    // Leading dots are punctuation (`see...ann@x.org`), not part of the address.
    while start < at && b.get(start) == Some(&b'.') {
        start += 1;
    }
    let local = b.get(start..at)?;
    let valid = !local.is_empty()
        && local.last() != Some(&b'.')
        && !local.windows(2).any(|w| w == b"..")
        && local.iter().any(u8::is_ascii_alphanumeric);
    valid.then_some(start)
}

/// Where the domain starting at `from` ends, if it is a valid one.
fn domain_end(b: &[u8], from: usize) -> Option<usize> {
    let tail = b.get(from..)?;
    let mut len = bounded_run(tail.iter(), MAX_DOMAIN, is_domain)?;
    // A sentence's full stop or a dash after the address is not part of it.
    while len > 0 && matches!(tail.get(len - 1), Some(b'.' | b'-')) {
        len -= 1;
    }
    if len == 0 {
        return None;
    }
    let end = from + len;
    if matches!(scan::at(b, end), Some(b'_' | b'@')) {
        return None;
    }
    valid_domain(tail.get(..len)?).then_some(end)
}

/// At least two labels of letters, digits and inner dashes; a TLD of letters, not a file
/// extension.
fn valid_domain(domain: &[u8]) -> bool {
    let mut labels = 0;
    let mut last: &[u8] = &[];
    for label in domain.split(|&c| c == b'.') {
        let ok = (1..=63).contains(&label.len())
            && label.first() != Some(&b'-')
            && label.last() != Some(&b'-');
        if !ok {
            return false;
        }
        labels += 1;
        last = label;
    }
    labels >= 2 && valid_tld(last)
}

fn valid_tld(tld: &[u8]) -> bool {
    let letters = (2..=24).contains(&tld.len()) && tld.iter().all(u8::is_ascii_alphabetic);
    let one_case = tld.iter().all(u8::is_ascii_lowercase) || tld.iter().all(u8::is_ascii_uppercase);
    letters
        && one_case
        && !FILE_EXTENSIONS
            .iter()
            .any(|e| tld.eq_ignore_ascii_case(e.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pii::expect::{self, Find};

    const FIND: Find = Find::Text(find);

    #[test]
    fn finds_addresses_with_exact_bounds() {
        assert_eq!(
            FIND.spans("mail ann.lee+tag@mail.example.co.uk."),
            ["ann.lee+tag@mail.example.co.uk"]
        );
        assert_eq!(FIND.spans("email='bob@corp.io'"), ["bob@corp.io"]);
        assert_eq!(
            FIND.spans("<a href=\"mailto:x_y-z@sub-d.org\">"),
            ["x_y-z@sub-d.org"]
        );
        assert_eq!(
            FIND.spans("{\"email\":\"JOHN@EXAMPLE.COM\"}"),
            ["JOHN@EXAMPLE.COM"]
        );
        assert_eq!(FIND.spans("a@b.io, c@d.fr"), ["a@b.io", "c@d.fr"]);
        let f = expect::first(FIND, "to: q@w.de", (4, 10), "PII_EMAIL");
        assert_eq!(f.rule, "pii-email");
    }

    #[test]
    fn a_url_s_user_and_password_are_no_address() {
        for text in [
            "DATABASE_URL=postgres://app:s3cr3tPw9x@db.example.com:5432/app",
            "redis://:Hq81kLzP0q@cache.example.io:6379/0",
            "\"mongodb+srv://svc-backend:Zb2Cqpm0Ay7p@cluster0.example.net/app\"",
            "url = https://ann@example.com/path",
            "jdbc:oracle:thin:app/Fw4hgJy9UoQZ@db.acme-corp.com:1521/ORCL",
        ] {
            assert!(FIND.spans(text).is_empty(), "{text}");
        }
        // An address after a URL, or in a URL's path or query, is still one.
        assert_eq!(
            FIND.spans("see https://example.com/u ann@corp.io"),
            ["ann@corp.io"]
        );
        assert_eq!(
            FIND.spans("https://example.com/invite?to=bob@corp.io"),
            ["bob@corp.io"]
        );
        assert_eq!(FIND.spans("mailto:x@sub-d.org"), ["x@sub-d.org"]);
    }

    #[test]
    fn parts_over_rfc_5321_s_limits_are_left() {
        let address = |local: usize, last_label: usize| {
            let labels = ["a".repeat(63), "b".repeat(63), "c".repeat(63)].join(".");
            format!(
                "{}@{labels}.{}.org",
                "x".repeat(local),
                "d".repeat(last_label)
            )
        };
        let longest = address(MAX_LOCAL, 57);
        assert_eq!(longest.len(), MAX_LOCAL + 1 + MAX_DOMAIN);
        assert_eq!(FIND.spans(&longest), [longest.as_str()]);
        for text in [address(MAX_LOCAL + 1, 57), address(MAX_LOCAL, 58)] {
            assert!(FIND.spans(&text).is_empty(), "{text}");
        }
    }

    #[test]
    fn leaves_code_that_has_an_at() {
        let texts = [
            "import x from '@types/node'",
            "\"@babel/core\": \"^7.22.5\"",
            "@Override public void run()",
            "user@localhost",
            "lodash@4.17.21 react@18.2.0",
            "<img src=\"icon@2x.png\"> logo@3x.webp app@1.0.js",
            "git@github.com:owner/repo.git",
            "this@MainActivity.finish() return@forEach",
            "y = x@self.weight(1)",
            "image@sha256:abc123",
            "a..b@x.org",
            "a.@x.org",
            "x@y.c0m x@y.Com",
            "${array[@]} \"$@\" @@ -1,4 +1,5 @@",
        ];
        expect::none(FIND, &texts);
    }
}
