//! Feeds arbitrary bytes to the request semantics that decide *what* is
//! served: path resolution, `Range`, and the conditional headers. Beyond
//! "never panics", each result is checked against a small independent model
//! of the RFC rule, and against the invariants the handlers rely on.
//!
//! Input layout: 8 bytes of representation length, 8 bytes of modification
//! time, 1 selector byte, then fields separated by 0xFF bytes (0xFF never
//! matters to the code under test except as obs-text, which the other
//! fields still cover through the raw remainder).

#![no_main]

use brisk::http::conditional::{
    evaluate, if_range_matches, Precondition, Preconditions, Validators,
};
use brisk::http::date::{format_http_date, parse_http_date, HTTP_DATE_LEN};
use brisk::http::path::{decode_and_normalize, has_dotfile_segment, split_target};
use brisk::http::range::{
    multipart_len, parse_range, write_multipart_end, write_part_header, ByteRange, RangeOutcome,
    MAX_RANGES,
};
use brisk::http::Method;
use libfuzzer_sys::fuzz_target;

/// Most satisfiable range-specs `parse_range` gathers before it gives up
/// (its documented bound, 4 × MAX_RANGES).
const MAX_SPECS: usize = 4 * MAX_RANGES;

// ---------------------------------------------------------------- paths

/// The model: decode every escape once (refusing malformed ones and control
/// bytes), then resolve segments with a stack (RFC 3986 §5.2.4), refusing a
/// `..` at the root. A trailing `/`, `.` or `..` segment leaves a trailing
/// slash.
fn model_normalize(path: &[u8]) -> Option<Vec<u8>> {
    if path.first() != Some(&b'/') {
        return None;
    }
    let mut decoded = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        let mut b = path[i];
        if b == b'%' {
            let h = std::str::from_utf8(path.get(i + 1..i + 3)?).ok()?;
            if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            b = u8::from_str_radix(h, 16).ok()?;
            i += 2;
        }
        if b < 0x20 || b == 0x7f {
            return None;
        }
        decoded.push(b);
        i += 1;
    }
    let segments: Vec<&[u8]> = decoded[1..].split(|&b| b == b'/').collect();
    let mut stack: Vec<&[u8]> = Vec::new();
    for seg in &segments {
        match *seg {
            b"" | b"." => {}
            b".." => {
                stack.pop()?;
            }
            s => stack.push(s),
        }
    }
    let trailing = matches!(segments.last().copied(), Some(b"" | b"." | b".."));
    let mut out = b"/".to_vec();
    out.extend_from_slice(&stack.join(&b'/'));
    if trailing && !stack.is_empty() {
        out.push(b'/');
    }
    Some(out)
}

fn check_path(target: &[u8]) {
    let (path, query) = split_target(target);
    assert!(!path.contains(&b'?'));
    match query {
        Some(q) => {
            assert_eq!(path.len() + 1 + q.len(), target.len());
            assert_eq!(target[path.len()], b'?');
        }
        None => assert_eq!(path, target),
    }
    let mut out = b"stale".to_vec();
    let got = decode_and_normalize(path, &mut out);
    let want = model_normalize(path);
    match (got, want) {
        (Err(e), None) => {
            assert_eq!(e.status.0, 400);
            assert!(out.is_empty(), "output left behind on error");
        }
        (Ok(()), Some(want)) => {
            assert_eq!(out, want, "normalising {path:?}");
            assert!(out.starts_with(b"/"));
            assert!(out.len() <= path.len());
            assert!(!out.windows(2).any(|w| w == b"//"), "{out:?}");
            assert!(
                !out.iter().any(|&b| b < 0x20 || b == 0x7f),
                "control byte in {out:?}"
            );
            for seg in out.split(|&b| b == b'/') {
                assert!(seg != b"." && seg != b"..", "dot-segment in {out:?}");
            }
            // Normalising again changes nothing (unless a decoded `%` would
            // now start an escape).
            if !out.contains(&b'%') {
                let mut again = Vec::new();
                assert!(decode_and_normalize(&out, &mut again).is_ok());
                assert_eq!(again, out);
            }
            let dotted = out
                .split(|&b| b == b'/')
                .filter(|s| !s.is_empty())
                .enumerate()
                .any(|(i, s)| s[0] == b'.' && !(i == 0 && s == b".well-known"));
            assert_eq!(has_dotfile_segment(&out), dotted, "{out:?}");
        }
        (got, want) => panic!("normalising {path:?}: brisk {got:?} / {out:?}, model {want:?}"),
    }
}

// --------------------------------------------------------------- ranges

/// The model's reading of a Range value: `None` for a syntax error or an
/// unknown unit; otherwise the satisfiable ranges, in request order.
fn model_specs(header: &[u8], len: u64) -> Option<Vec<ByteRange>> {
    fn ows(b: &u8) -> bool {
        *b == b' ' || *b == b'\t'
    }
    fn trim(s: &[u8]) -> &[u8] {
        let start = s.iter().position(|b| !ows(b)).unwrap_or(s.len());
        let end = s.iter().rposition(|b| !ows(b)).map_or(start, |e| e + 1);
        &s[start..end]
    }
    fn num(s: &[u8]) -> Option<u64> {
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    }
    let header = trim(header);
    let eq = header.iter().position(|&b| b == b'=')?;
    if !header[..eq].eq_ignore_ascii_case(b"bytes") {
        return None;
    }
    let mut any = false;
    let mut out = Vec::new();
    for el in header[eq + 1..].split(|&b| b == b',') {
        let el = trim(el);
        if el.is_empty() {
            continue;
        }
        any = true;
        let dash = el.iter().position(|&b| b == b'-')?;
        let (a, b) = (&el[..dash], &el[dash + 1..]);
        if a.is_empty() {
            let n = num(b)?;
            // The one satisfiable form on an empty representation (RFC
            // 9110 §14.1.1), which no 206 can carry: the Range is ignored.
            if n > 0 && len == 0 {
                return None;
            }
            if n > 0 {
                out.push(ByteRange {
                    start: len.saturating_sub(n),
                    end: len - 1,
                });
            }
            continue;
        }
        let start = num(a)?;
        let end = if b.is_empty() { u64::MAX } else { num(b)? };
        if end < start {
            return None;
        }
        if start < len {
            out.push(ByteRange {
                start,
                end: end.min(len - 1),
            });
        }
    }
    any.then_some(out)
}

/// Sorted union of `ranges` as disjoint, non-touching intervals.
fn union(ranges: &[ByteRange]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start, r.end)).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1.saturating_add(1) => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn check_range(header: &[u8], len: u64) {
    let outcome = parse_range(header, len);
    let model = model_specs(header, len);
    match (outcome, model) {
        (RangeOutcome::Ignore, None) => {}
        (RangeOutcome::Unsatisfiable, Some(specs)) => assert!(specs.is_empty()),
        (RangeOutcome::Ignore, Some(specs)) => {
            // Allowed only past the documented bounds.
            assert!(
                specs.len() > MAX_SPECS || union(&specs).len() > MAX_RANGES,
                "{header:?} (len {len}) ignored; model has {specs:?}"
            );
        }
        (RangeOutcome::Ranges(set), Some(specs)) => {
            let got = set.as_slice();
            assert!(!got.is_empty() && got.len() <= MAX_RANGES);
            assert!(specs.len() <= MAX_SPECS);
            for r in got {
                assert!(r.start <= r.end && r.end < len, "{r:?} outside {len}");
            }
            // Pairwise disjoint and not even touching (else coalesced).
            for (i, a) in got.iter().enumerate() {
                for b in &got[i + 1..] {
                    assert!(
                        a.end.saturating_add(1) < b.start || b.end.saturating_add(1) < a.start,
                        "{a:?} and {b:?} not coalesced"
                    );
                }
            }
            // Exactly the bytes asked for.
            assert_eq!(union(got), union(&specs), "{header:?} (len {len})");
            // Ranges that did not touch keep the client's order.
            if union(&specs).len() == specs.len() {
                assert_eq!(got, &specs[..], "order of {header:?}");
            }
            check_multipart(got, len);
        }
        (got, want) => panic!("{header:?} (len {len}): brisk {got:?}, model {want:?}"),
    }
}

/// The multipart body length computed up front equals what is written.
fn check_multipart(ranges: &[ByteRange], total: u64) {
    let (boundary, ctype) = ("0123456789abcdef", "text/plain; charset=utf-8");
    let mut out = Vec::new();
    let mut body: u64 = 0;
    for r in ranges {
        write_part_header(boundary, ctype, *r, total, &mut out);
        body += r.len();
    }
    write_multipart_end(boundary, &mut out);
    assert_eq!(
        multipart_len(boundary, ctype, ranges, total),
        out.len() as u64 + body
    );
}

// ---------------------------------------------------------- conditionals

const METHODS: [Method; 4] = [Method::Get, Method::Head, Method::Post, Method::Delete];

fn check_conditionals(fields: &[&[u8]], etag: &[u8], mtime: u64) {
    let v = Validators {
        etag,
        last_modified: mtime,
    };
    let field = |i: usize| fields.get(i).copied();
    let pre = Preconditions {
        if_match: field(1),
        if_none_match: field(2),
        if_modified_since: field(3),
        if_unmodified_since: field(4),
    };
    for m in METHODS {
        let safe = matches!(m, Method::Get | Method::Head);
        let r = evaluate(&pre, &v, m);
        if r == Precondition::NotModified {
            assert!(safe, "304 for {m:?}");
        }
        // §13.2.2: If-Unmodified-Since only counts without If-Match,
        // If-Modified-Since only without If-None-Match.
        if pre.if_match.is_some() {
            let p = Preconditions {
                if_unmodified_since: Some(b"Sun, 06 Nov 1994 08:49:37 GMT"),
                ..pre
            };
            assert_eq!(evaluate(&p, &v, m), r);
        }
        if pre.if_none_match.is_some() {
            let p = Preconditions {
                if_modified_since: Some(b"Sun, 06 Nov 1994 08:49:37 GMT"),
                ..pre
            };
            assert_eq!(evaluate(&p, &v, m), r);
        }
        // No preconditions: proceed.
        assert_eq!(
            evaluate(&Preconditions::default(), &v, m),
            Precondition::Proceed
        );
        // `If-None-Match: *` alone: 304 for GET/HEAD, 412 otherwise.
        let star = Preconditions {
            if_none_match: Some(b"*"),
            ..Preconditions::default()
        };
        let want = if safe {
            Precondition::NotModified
        } else {
            Precondition::Failed
        };
        assert_eq!(evaluate(&star, &v, m), want);
        // `If-Match: *` never fails step 1.
        let any = Preconditions {
            if_match: Some(b"*"),
            ..Preconditions::default()
        };
        assert_eq!(evaluate(&any, &v, m), Precondition::Proceed);
    }
    // If-Range: the current strong tag and the exact date match; a weak
    // version of the tag and any other date never do.
    // Validators hold what brisk formats itself, but compare trimmed, as
    // brisk does, so that odd fuzzed tags do not make false alarms.
    let etag_t = etag.trim_ascii();
    let strong = is_strong_tag(etag_t);
    let mut date = [0u8; HTTP_DATE_LEN];
    format_http_date(mtime, &mut date);
    if parse_http_date(&date) == Some(mtime) {
        assert!(if_range_matches(&date, &v), "own date {:?}", date);
        if mtime > 0 {
            let mut other = [0u8; HTTP_DATE_LEN];
            format_http_date(mtime - 1, &mut other);
            assert!(!if_range_matches(&other, &v));
        }
        // Same for `If-Unmodified-Since` / `If-Modified-Since`.
        let ims = Preconditions {
            if_modified_since: Some(&date),
            ..Preconditions::default()
        };
        assert_eq!(evaluate(&ims, &v, Method::Get), Precondition::NotModified);
        let ius = Preconditions {
            if_unmodified_since: Some(&date),
            ..Preconditions::default()
        };
        assert_eq!(evaluate(&ius, &v, Method::Post), Precondition::Proceed);
    }
    if strong {
        assert!(if_range_matches(etag_t, &v));
        let mut weak = b"W/".to_vec();
        weak.extend_from_slice(etag_t);
        assert!(!if_range_matches(&weak, &v));
        // Strong comparison for If-Match, weak for If-None-Match.
        let im = Preconditions {
            if_match: Some(&weak),
            ..Preconditions::default()
        };
        assert_eq!(evaluate(&im, &v, Method::Get), Precondition::Failed);
        let inm = Preconditions {
            if_none_match: Some(&weak),
            ..Preconditions::default()
        };
        assert_eq!(evaluate(&inm, &v, Method::Get), Precondition::NotModified);
        let im = Preconditions {
            if_match: Some(etag_t),
            ..Preconditions::default()
        };
        assert_eq!(evaluate(&im, &v, Method::Put), Precondition::Proceed);
    }
    if let Some(ir) = field(5) {
        if if_range_matches(ir, &v) {
            // Only the current strong tag or the exact date can match.
            let t = ir.trim_ascii();
            let tag_match = strong && t == etag_t;
            let date_match = parse_http_date(t) == Some(mtime);
            assert!(
                tag_match || date_match,
                "If-Range {ir:?} matched {etag:?}/{mtime}"
            );
        }
    }
}

/// `"opaque"` with etagc bytes only (RFC 9110 §8.8.3).
fn is_strong_tag(t: &[u8]) -> bool {
    t.len() >= 2
        && t[0] == b'"'
        && t[t.len() - 1] == b'"'
        && t[1..t.len() - 1]
            .iter()
            .all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let raw_len = u64::from_le_bytes(data[..8].try_into().unwrap_or_default());
    // Up to the end of year 9999, the last an HTTP-date can name.
    let mtime = u64::from_le_bytes(data[8..16].try_into().unwrap_or_default()) % 253_402_300_800;
    let selector = data[16];
    let rest = &data[17..];
    let fields: Vec<&[u8]> = rest.split(|&b| b == 0xff).collect();
    let first = fields.first().copied().unwrap_or_default();

    // A file is at most i64::MAX bytes (off_t); small lengths exercise
    // clipping and suffix ranges.
    let len = raw_len & (i64::MAX as u64);
    check_range(first, len);
    check_range(first, u64::from(selector));
    check_range(rest, len % 100_000);

    check_path(first);
    check_path(rest);

    let etag: &[u8] = match selector % 3 {
        0 => b"\"5f3a1c2b-1a4\"",
        1 => fields.get(6).copied().unwrap_or(b"\"x\""),
        _ => first,
    };
    check_conditionals(&fields, etag, mtime);
});
