//! IP addresses, in one pass over the digits and colons of a text (eight bytes at a time).
//!
//! IPv4, from each run of digits: a dotted quad of decimal octets 0-255 without leading zeros,
//! not glued to a letter, digit, `_` or `.` on either side (`1.2.3.4.5`, `v1.2.3.4`, `a1.2.3.4`
//! are left; a full stop after it is fine). Left as well: `0.x.x.x`, loopback `127.x.x.x`,
//! netmasks (`255.255.255.0`, and the broadcast `255.255.255.255`), object identifiers of the
//! arcs code quotes most (`1.3.x.x`, `2.5.x.x`, `2.23.x.x`), decimals of minified SVG paths
//! (`1.2.7 1.6.4.3`), and versions and section numbers: a quad after a word ending in
//! `version`, after `v`, `ver`, `v8` or a browser or runtime's name (`"version": "1.0.0.0"`,
//! `AssemblyVersion("1.0.0.0")`, `"chrome": "120.0.0.0"`), after `section`, `step`, `§` and
//! the like, after `name/` or `name-` (`Chrome/120.0.0.0`), after a requirement operator (`==`,
//! `>=`, `~=`, `^`, `~`), or followed by a pre-release tag (`1.2.3.4-beta`).
//!
//! IPv6, from each `:`: the run of hex digits, colons and dots around it (at most an address
//! long), parsed by `std::net::Ipv6Addr`, with at least 3 groups written (an embedded IPv4
//! address counts as 2), so that `a::b`, `std::io`, `dead::beef` and C++'s `::` never match.
//! Left: `::1` and `::` (and `::ffff:127.0.0.1`), netmasks and host masks (`ffff:ffff::`), MAC
//! and EUI-64 addresses (groups of two hex digits, no `::`), times (`12:30:45` does not parse).
//! An IPv4 address inside an IPv6 one (`::ffff:192.0.2.1`) is reported once, as IPv6.

use std::net::Ipv6Addr;

use super::scan;
use crate::kind::Finding;

const RULE: &str = "pii-ip";

/// The longest IPv6 address written out (with an IPv4 tail) is 45 bytes: a run around a colon
/// is not looked at further than this on either side, so that no text costs more than linear
/// time.
const MAX_V6: usize = 45;

/// Pushes every IPv4 and IPv6 address of `text`, in one pass over its digits and colons.
pub(super) fn find(text: &str, out: &mut Vec<Finding>) {
    let b = text.as_bytes();
    let mut pos = 0;
    while let Some(i) = scan::next_digit_or(b, pos, b':') {
        let next = if b.get(i) == Some(&b':') {
            colon(text, i, out)
        } else {
            digits(b, i, out)
        };
        // Always forward, whatever the helpers return.
        pos = next.max(i + 1);
    }
}

/// Looks at the run of digits starting at `start` as an IPv4 address; returns where to go on.
fn digits(b: &[u8], start: usize, out: &mut Vec<Finding>) -> usize {
    let end = start + scan::digit_run(b, start);
    if end - start > 3 || scan::at(b, end) != Some(b'.') {
        return end;
    }
    let Some((stop, octets)) = dotted_quad(b, start) else {
        return end;
    };
    let address = starts_clean(b, start) && ends_clean(b, stop) && public(octets);
    if address && !version_context(b, start) && !among_decimals(b, start, stop) {
        scan::push(out, start, stop, "ipv4", RULE);
    }
    stop
}

/// Looks at the run around the colon at `colon` as an IPv6 address; returns where to go on:
/// past the address if it is one, else past this colon (a later colon of the run may still
/// start one, as in `ip:10.0.0.1`, where the IPv4 address must be seen too).
fn colon(text: &str, colon: usize, out: &mut Vec<Finding>) -> usize {
    let b = text.as_bytes();
    let colons = b
        .get(colon..)
        .map_or(1, |r| r.iter().take_while(|&&c| c == b':').count());
    if hopeless(b, colon) {
        // `std::io` costs one look.
        return colon + colons;
    }
    let found = hex_run(b, colon)
        .and_then(|(start, end)| trim(b, start, end))
        .filter(|&(start, end)| address6(text, start, end));
    match found {
        // An address that ends before this colon (`1:2:3:4:5:6:7:8:`, its trailing colon
        // trimmed) was found from its own first colon already.
        Some((start, end)) if end > colon => {
            scan::push(out, start, end, "ipv6", RULE);
            end
        }
        _ => colon + colons,
    }
}

/// Four octets separated by dots from `start`: the end and the octets.
fn dotted_quad(b: &[u8], start: usize) -> Option<(usize, [u8; 4])> {
    let mut octets = [0u8; 4];
    let mut i = start;
    for (k, octet) in octets.iter_mut().enumerate() {
        if k > 0 {
            if scan::at(b, i) != Some(b'.') {
                return None;
            }
            i += 1;
        }
        let n = scan::digit_run(b, i);
        let digits = b.get(i..i + n)?;
        if n == 0 || n > 3 || (n > 1 && digits.first() == Some(&b'0')) {
            return None;
        }
        let value = digits
            .iter()
            .fold(0u32, |v, c| v * 10 + u32::from(c - b'0'));
        *octet = u8::try_from(value).ok()?;
        i += n;
    }
    Some((i, octets))
}

/// Not glued to an identifier byte or a dot before.
fn starts_clean(b: &[u8], start: usize) -> bool {
    !scan::before(b, start).is_some_and(|c| scan::is_word(c) || c == b'.')
}

/// Nothing glued after: no identifier byte, no `.x`, no `-beta`.
fn ends_clean(b: &[u8], end: usize) -> bool {
    let next_is_word = scan::at(b, end + 1).is_some_and(scan::is_word);
    match scan::at(b, end) {
        Some(c) if scan::is_word(c) => false,
        Some(b'.') => !next_is_word,
        Some(b'-') => !scan::at(b, end + 1).is_some_and(|c| c.is_ascii_alphabetic()),
        _ => true,
    }
}

/// Whether the quad stands between decimals separated by spaces, as in minified SVG path data
/// (`1.2.7 1.6.4.3 1.1.5`, that is `1.6 .4 .3`): a neighbour of digits and dots that has a dot
/// and is not a quad itself.
fn among_decimals(b: &[u8], start: usize, stop: usize) -> bool {
    let decimal = |t: &[u8]| {
        let dots = t.iter().filter(|&&c| c == b'.').count();
        !t.is_empty() && dots > 0 && dots != 3
    };
    let numeric = |c: &&u8| c.is_ascii_digit() || **c == b'.';
    let prev = match start.checked_sub(1).and_then(|i| b.get(..i)) {
        Some(head) if scan::before(b, start) == Some(b' ') => {
            let n = head.iter().rev().take(24).take_while(numeric).count();
            head.get(head.len() - n..).unwrap_or_default()
        }
        _ => &[],
    };
    let next = match b.get(stop + 1..) {
        Some(tail) if scan::at(b, stop) == Some(b' ') => {
            let n = tail.iter().take(24).take_while(numeric).count();
            tail.get(..n).unwrap_or_default()
        }
        _ => &[],
    };
    decimal(prev) || decimal(next)
}

/// Not "this network", loopback, a netmask or the broadcast address, nor an object identifier
/// of the arcs code quotes most (`1.3.x.x`, X.500's `2.5.x.x`, `2.23.x.x`).
fn public(o: [u8; 4]) -> bool {
    let v = u32::from_be_bytes(o);
    let inverse = !v;
    let netmask = o[0] == 255 && inverse & inverse.wrapping_add(1) == 0;
    let oid = matches!((o[0], o[1]), (1, 3) | (2, 5) | (2, 23));
    o[0] != 0 && o[0] != 127 && !netmask && !oid
}

/// Whether the quad at `start` reads as a version or a section number: after a requirement
/// operator, `name/`, `name-` or `§`, or after a word (and a few quotes, spaces, `:` or `=`)
/// ending in `version`, or that is `v`, `ver`, `v<digits>`, a section word or a versioned name.
fn version_context(b: &[u8], start: usize) -> bool {
    let prev = scan::before(b, start);
    let prev2 = start.checked_sub(1).and_then(|i| scan::before(b, i));
    let marked = match (prev2, prev) {
        (_, Some(b'^' | b'~')) => true,
        (Some(b'=' | b'>' | b'<' | b'~' | b'!'), Some(b'=')) => true,
        (Some(c), Some(b'/' | b'-')) => c.is_ascii_alphabetic(),
        _ => b
            .get(..start)
            .is_some_and(|h| h.ends_with("\u{a7}".as_bytes())),
    };
    if marked {
        return true;
    }
    let word = word_before(b, start);
    let engine = word.len() > 1 && word[0] == b'v' && word[1..].iter().all(u8::is_ascii_digit);
    word == b"v"
        || word == b"ver"
        || word.ends_with(b"version")
        || engine
        || SECTIONS.contains(&word.as_slice())
        || VERSIONED.contains(&word.as_slice())
}

/// The identifier before `start`, across up to 6 quotes, spaces, `:`, `=`, `(`, `>`, `[` or
/// `,`, lower-cased and without underscores (`__version__` is `version`).
fn word_before(b: &[u8], start: usize) -> Vec<u8> {
    let mut i = start;
    let mut skipped = 0;
    while skipped < 6 && scan::before(b, i).is_some_and(|c| b" \t:=\"'(>[,".contains(&c)) {
        i -= 1;
        skipped += 1;
    }
    let word_end = i;
    while word_end - i < 40 && scan::before(b, i).is_some_and(scan::is_word) {
        i -= 1;
    }
    b.get(i..word_end)
        .unwrap_or_default()
        .iter()
        .filter(|&&c| c != b'_')
        .map(u8::to_ascii_lowercase)
        .collect()
}

/// Names whose value is a version in code and data (`"v8": "9.4.146.26"`, `"chrome": ...`).
const VERSIONED: &[&[u8]] = &[
    b"chrome",
    b"chromium",
    b"electron",
    b"node",
    b"firefox",
    b"safari",
    b"edge",
    b"opera",
    b"webkit",
    b"gecko",
];

/// Words before a numbered part of a document (`section 4.1.2.8`).
const SECTIONS: &[&[u8]] = &[
    b"section",
    b"sec",
    b"clause",
    b"chapter",
    b"appendix",
    b"annex",
    b"paragraph",
    b"para",
    b"step",
    b"table",
    b"figure",
    b"rule",
    b"item",
];

/// Whether no address can hold the colon at `colon`, from the bytes next to it: more hex digits
/// before it than a group has, an identifier glued before (`std::`, `Vec::`, `self::`), or no
/// hex digit nor colon on either side (`x: u32`, `"a": 1`). A run that starts with the colon
/// itself after a word and goes on with a hex digit (`ip:2001:db8::1`) is still looked at.
fn hopeless(b: &[u8], colon: usize) -> bool {
    let hex = b
        .get(..colon)
        .unwrap_or_default()
        .iter()
        .rev()
        .take(5)
        .take_while(|c| c.is_ascii_hexdigit())
        .count();
    let next = scan::at(b, colon + 1);
    let next_hex = next.is_some_and(|c| c.is_ascii_hexdigit());
    let word_before = scan::before(b, colon - hex).is_some_and(scan::is_word);
    hex > 4
        || (hex == 0 && !next_hex && next != Some(b':'))
        || (word_before && (hex > 0 || !next_hex))
}

/// The run of hex digits and colons around the colon at `colon`, and dots after it (an
/// embedded IPv4 address ends an IPv6 address); none if it is longer than an address.
fn hex_run(b: &[u8], colon: usize) -> Option<(usize, usize)> {
    let left = b
        .get(..colon)
        .unwrap_or_default()
        .iter()
        .rev()
        .take(MAX_V6 + 1)
        .take_while(|&&c| c.is_ascii_hexdigit() || c == b':')
        .count();
    let right = b
        .get(colon..)
        .unwrap_or_default()
        .iter()
        .take(MAX_V6 + 2)
        .take_while(|&&c| c.is_ascii_hexdigit() || c == b':' || c == b'.')
        .count();
    // A sentence's full stop may follow the address: one byte of slack.
    (left + right <= MAX_V6 + 1).then_some((colon - left, colon + right))
}

/// Drops a full stop after the run, and a lone colon before or after it (`ip:2001:db8::1`,
/// `[2001:db8::1]:`).
fn trim(b: &[u8], mut start: usize, mut end: usize) -> Option<(usize, usize)> {
    while end > start && scan::at(b, end - 1) == Some(b'.') {
        end -= 1;
    }
    let run = b.get(start..end)?;
    if run.ends_with(b":") && !run.ends_with(b"::") {
        end -= 1;
    }
    let run = b.get(start..end)?;
    if run.starts_with(b":") && !run.starts_with(b"::") {
        start += 1;
    }
    (end > start).then_some((start, end))
}

/// Whether `text[start..end]` is an IPv6 address to take.
fn address6(text: &str, start: usize, end: usize) -> bool {
    let b = text.as_bytes();
    if scan::before(b, start).is_some_and(|c| scan::is_word(c) || c == b'.') {
        return false;
    }
    if !scan::ends_clean(b, end, b".") {
        return false;
    }
    let Some(s) = text.get(start..end) else {
        return false;
    };
    let groups: usize = s
        .split(':')
        .filter(|g| !g.is_empty())
        .map(|g| if g.contains('.') { 2 } else { 1 })
        .sum();
    let compressed = s.contains("::");
    let mac_like = !compressed && s.split(':').all(|g| g.len() == 2);
    if groups < 3 || mac_like {
        return false;
    }
    let Ok(addr) = s.parse::<Ipv6Addr>() else {
        return false;
    };
    let mapped_local = addr.to_ipv4_mapped().is_some_and(|v4| !public(v4.octets()));
    // Netmasks and host masks: ones from the top or from the bottom (`ffff:ffff::`, `::ffff`
    // alone is a mask too but has too few groups).
    let v = addr.to_bits();
    let mask = (!v) & (!v).wrapping_add(1) == 0 || v & v.wrapping_add(1) == 0;
    !addr.is_loopback() && !addr.is_unspecified() && !mapped_local && !mask
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pii::expect::{self, Find};

    const FIND: Find = Find::Text(find);

    #[test]
    fn finds_ipv4_addresses() {
        assert_eq!(FIND.spans("host=203.0.113.5:8080"), ["203.0.113.5"]);
        assert_eq!(
            FIND.spans("ssh root@10.0.0.1 and 8.8.8.8."),
            ["10.0.0.1", "8.8.8.8"]
        );
        assert_eq!(
            FIND.spans("[\"192.168.1.20\",\"1.1.1.1\"]"),
            ["192.168.1.20", "1.1.1.1"]
        );
        assert_eq!(FIND.spans("cidr 10.0.0.0/8"), ["10.0.0.0"]);
        assert_eq!(FIND.spans("server: 172.16.5.4"), ["172.16.5.4"]);
        assert_eq!(
            FIND.spans("nameserver 8.8.8.8 8.8.4.4"),
            ["8.8.8.8", "8.8.4.4"]
        );
        let f = expect::first(FIND, "ip 1.2.3.4", (3, 10), "PII_IPV4");
        assert_eq!(f.rule, "pii-ip");
    }

    #[test]
    fn leaves_quads_that_are_not_addresses() {
        let texts = [
            "127.0.0.1 0.0.0.0 255.255.255.255 255.255.255.0",
            "1.2.3.4.5 v1.2.3.4 a1.2.3.4 1.2.3.4a 1.2.3.4.x",
            "256.1.1.1 1.2.3.256 01.2.3.4 1.2.3",
            "\"version\": \"1.0.0.0\"",
            "[assembly: AssemblyVersion(\"1.0.0.0\")]",
            "<Version>4.5.6.7</Version> __version__ = '1.2.3.4'",
            "Chrome/120.0.0.0 Safari/537.36",
            "pkg==1.2.3.4 pkg>=1.2.3.4 ^1.2.3.4 1.2.3.4-beta",
            "oid 2.5.4.3 new_unwrap(\"2.5.6.0\") { 1.3.101.112 } 2.23.43.1",
            "1.3.6.1.4.1.311",
            "see section 5.7.1.1, RFC 5280 \u{a7}5.1.2.1 and Section 4.2.1.9",
            "pi 3.14159 date 26.11.2026",
            "\"v8\": \"9.4.146.26\", \"chrome\": \"120.0.0.0\"",
            "h2.4c0 .7.2 1.2.7 1.6.4.3 1.1.5 1.8.5s1.2",
        ];
        expect::none(FIND, &texts);
    }

    #[test]
    fn finds_ipv6_addresses() {
        let addresses = [
            "2001:db8::1",
            "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
            "fe80::1ff:fe23:4567:890a",
            "::ffff:192.0.2.128",
            "2a01:4f8::a:b",
        ];
        expect::each(FIND, &addresses, |a| format!("addr {a} ok"));
        expect::each(FIND, &addresses, |a| format!("[{a}]:443"));
        assert_eq!(FIND.spans("ip:2001:db8::7"), ["2001:db8::7"]);
        assert_eq!(FIND.spans("\"1:2:3:4:5:6:7:8:\""), ["1:2:3:4:5:6:7:8"]);
        assert_eq!(
            FIND.spans("a 2001:db8::1: b 2001:db8::2:"),
            ["2001:db8::1", "2001:db8::2"]
        );
        expect::first(FIND, "x 2001:db8::1", (2, 13), "PII_IPV6");
    }

    /// Random runs of address bytes: every call ends, and findings are in order, apart and
    /// within the text.
    #[test]
    fn random_address_bytes_terminate() {
        let alphabet = b"0123456789abcdefx:.::: ";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let len = (state % 40) as usize;
            let text: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    char::from(alphabet[(state % alphabet.len() as u64) as usize])
                })
                .collect();
            let out = FIND.findings(&text);
            assert!(out.len() <= text.len(), "{text}");
            assert!(
                out.windows(2).all(|w| w[0].end <= w[1].start),
                "{text}: {out:?}"
            );
            assert!(
                out.iter().all(|f| f.start < f.end && f.end <= text.len()),
                "{text}"
            );
        }
    }

    #[test]
    fn leaves_colon_runs_that_are_not_addresses() {
        let texts = [
            "::1 :: ::ffff:127.0.0.1",
            "std::io::Result a::b dead::beef Foo::Bar::baz",
            "12:30:45 10:00:00.123 2026-11-26T10:00:00Z",
            "00:1a:2b:3c:4d:5e 00:11:22:33:44:55:66:77",
            "a[1::2] x[::3] arr[10:20:2]",
            "u8::MAX css a::before cafe::dead::beef",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:0000 ::ff:ffff:ffff:ffff:ffff:ffff:ffff",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff::",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ];
        expect::none(FIND, &texts);
    }
}
