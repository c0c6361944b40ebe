//! Range requests (RFC 9110 §14): parsing `Range`, multipart/byteranges framing.
//!
//! Parsing never allocates: satisfiable ranges are gathered in a fixed
//! scratch array, then overlapping or touching ones are sorted and
//! coalesced (RFC 9110 §14.2 allows it), which defeats the classic
//! "many overlapping ranges" amplification attack.

use super::grammar::{self, trim_ows};
use super::push_u64;
use crate::ascii::IgnoreCase;

/// An inclusive byte range `start..=end` within a representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte, counted from 0.
    pub start: u64,
    /// Last byte, inclusive; never less than `start`.
    pub end: u64,
}

impl ByteRange {
    /// Number of bytes in the range.
    #[allow(clippy::len_without_is_empty)] // a range holds at least one byte
    pub fn len(&self) -> u64 {
        self.end - self.start + 1
    }
}

/// Most ranges served in one response; a request with more is answered 200.
pub const MAX_RANGES: usize = 16;

/// Most satisfiable range-specs gathered before coalescing. A header with
/// more is ignored (200) even if they would coalesce into few: no honest
/// client sends that many, and it bounds the work per request.
const MAX_SPECS: usize = 4 * MAX_RANGES;

const EMPTY: ByteRange = ByteRange { start: 0, end: 0 };

/// Satisfiable ranges, in a fixed array (no allocation).
#[derive(Debug, Clone, Copy)]
pub struct RangeSet {
    ranges: [ByteRange; MAX_RANGES],
    len: usize,
}

impl RangeSet {
    /// The ranges, in the order they will be sent.
    pub fn as_slice(&self) -> &[ByteRange] {
        &self.ranges[..self.len]
    }
}

/// What to do with a `Range` header.
// Large by design: the ranges live inline so that parsing never allocates,
// and the value only ever lives briefly on the stack.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
pub enum RangeOutcome {
    /// Invalid, unknown unit, or too many ranges: serve the whole representation (200).
    Ignore,
    /// At least one satisfiable range: 206.
    Ranges(RangeSet),
    /// Valid syntax, nothing satisfiable: 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
}

/// One range-spec: `Err(())` on a syntax error, `Ok(None)` if valid but
/// unsatisfiable for `len` bytes, else the range clipped to the representation.
fn parse_spec(spec: &[u8], len: u64) -> Result<Option<ByteRange>, ()> {
    let dash = spec.iter().position(|&b| b == b'-').ok_or(())?;
    let (first, last) = (&spec[..dash], &spec[dash + 1..]);
    if first.is_empty() {
        // suffix-range: the last `n` bytes; `-0` asks for nothing.
        let n = grammar::parse_u64(last).ok_or(())?;
        if n == 0 {
            return Ok(None);
        }
        if len == 0 {
            // Satisfiable (RFC 9110 §14.1.1: the one form that is, on an
            // empty representation), yet no 206 can carry nothing: the
            // Range is ignored and the empty file sent whole (§14.2).
            return Err(());
        }
        return Ok(Some(ByteRange {
            start: len.saturating_sub(n),
            end: len - 1,
        }));
    }
    let start = grammar::parse_u64(first).ok_or(())?;
    let end = if last.is_empty() {
        u64::MAX
    } else {
        let end = grammar::parse_u64(last).ok_or(())?;
        // RFC 9110 §14.1.1: last-pos < first-pos makes the int-range invalid.
        if end < start {
            return Err(());
        }
        end
    };
    if start >= len {
        return Ok(None);
    }
    Ok(Some(ByteRange {
        start,
        end: end.min(len - 1),
    }))
}

/// Evaluates a `Range` header value against a representation of `len` bytes.
///
/// Follows RFC 9110 §14.1–14.2: the unit is case-insensitive `bytes`; the
/// range-set is a comma list with optional whitespace and tolerated empty
/// elements; `a-b`, `a-` and `-n` forms; the end is clipped to `len - 1`.
/// Any syntax error, unknown unit, number overflowing u64, or more than
/// [`MAX_RANGES`] ranges after coalescing gives `Ignore`. Ranges are sent in
/// the order asked unless some overlap or touch, in which case all are
/// sorted and merged.
pub fn parse_range(header: &[u8], len: u64) -> RangeOutcome {
    let header = trim_ows(header);
    let Some(eq) = header.iter().position(|&b| b == b'=') else {
        return RangeOutcome::Ignore;
    };
    if !header[..eq].eq_ignore_case(b"bytes") {
        return RangeOutcome::Ignore;
    }
    let mut specs = [EMPTY; MAX_SPECS];
    let mut count = 0;
    let mut any_spec = false;
    for element in header[eq + 1..].split(|&b| b == b',') {
        let element = trim_ows(element);
        if element.is_empty() {
            continue;
        }
        any_spec = true;
        match parse_spec(element, len) {
            Err(()) => return RangeOutcome::Ignore,
            Ok(None) => {}
            Ok(Some(r)) => {
                if count == MAX_SPECS {
                    return RangeOutcome::Ignore;
                }
                specs[count] = r;
                count += 1;
            }
        }
    }
    // `1#range-spec`: an empty set is a syntax error, not "nothing satisfiable".
    if !any_spec {
        return RangeOutcome::Ignore;
    }
    if count == 0 {
        return RangeOutcome::Unsatisfiable;
    }
    let specs = &mut specs[..count];
    let count = coalesce_if_overlapping(specs);
    if count > MAX_RANGES {
        return RangeOutcome::Ignore;
    }
    let mut set = RangeSet {
        ranges: [EMPTY; MAX_RANGES],
        len: count,
    };
    set.ranges[..count].copy_from_slice(&specs[..count]);
    RangeOutcome::Ranges(set)
}

/// If any two ranges overlap or are adjacent, sorts and merges them in
/// place; returns how many remain at the front of `ranges`. Ranges that are
/// all disjoint keep the client's order, which a client may rely on.
fn coalesce_if_overlapping(ranges: &mut [ByteRange]) -> usize {
    let mut sorted = [EMPTY; MAX_SPECS];
    let sorted = &mut sorted[..ranges.len()];
    sorted.copy_from_slice(ranges);
    // By start, by insertion: at most MAX_SPECS ranges, and no copy of
    // the standard library's whole sort for them (see `crate::sort`).
    for i in 1..sorted.len() {
        let mut j = i;
        while j > 0 && sorted[j - 1].start > sorted[j].start {
            sorted.swap(j - 1, j);
            j -= 1;
        }
    }
    // `end + 1` cannot overflow: ends are clipped to len - 1 < u64::MAX.
    let touching = sorted.windows(2).any(|w| w[1].start <= w[0].end + 1);
    if !touching {
        return ranges.len();
    }
    let mut n = 0;
    for &r in sorted.iter() {
        if n > 0 && r.start <= ranges[n - 1].end + 1 {
            ranges[n - 1].end = ranges[n - 1].end.max(r.end);
        } else {
            ranges[n] = r;
            n += 1;
        }
    }
    n
}

fn decimal_len(mut n: u64) -> u64 {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// Appends a `Content-Range` value: `bytes a-b/len`.
pub fn write_content_range(r: ByteRange, total: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b"bytes ");
    push_u64(out, r.start);
    out.push(b'-');
    push_u64(out, r.end);
    out.push(b'/');
    push_u64(out, total);
}

/// A request's `Content-Range` (RFC 9110 §14.4, a partial PUT: §14.5):
/// `bytes first-last/complete` or `bytes first-last/*`; the range, and
/// the complete length if given. `None` for anything else (another unit,
/// `bytes */len`, `last < first`, a complete length not past `last`).
pub fn parse_content_range(value: &[u8]) -> Option<(ByteRange, Option<u64>)> {
    let value = trim_ows(value);
    let (unit, rest) = value.split_at(value.iter().position(|&b| b == b' ')?);
    if !unit.eq_ignore_case(b"bytes") {
        return None;
    }
    let (range, complete) = rest[1..].split_at(rest.iter().position(|&b| b == b'/')? - 1);
    let dash = range.iter().position(|&b| b == b'-')?;
    let start = grammar::parse_u64(&range[..dash])?;
    let end = grammar::parse_u64(&range[dash + 1..])?;
    let complete = match &complete[1..] {
        b"*" => None,
        n => Some(grammar::parse_u64(n)?),
    };
    if end < start || complete.is_some_and(|c| c <= end) {
        return None;
    }
    Some((ByteRange { start, end }, complete))
}

/// Appends the `Content-Range` value of a 416 response: `bytes */len`
/// (RFC 9110 §14.4), telling the client the current length.
pub fn write_unsatisfied_range(total: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b"bytes */");
    push_u64(out, total);
}

/// Appends the part header that precedes range `r` in a multipart/byteranges
/// body: `\r\n--BOUNDARY\r\nContent-Type: ...\r\nContent-Range: bytes a-b/len\r\n\r\n`
/// (the leading CRLF of the first part is harmless preamble).
pub fn write_part_header(
    boundary: &str,
    content_type: &str,
    r: ByteRange,
    total: u64,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"\r\n--");
    out.extend_from_slice(boundary.as_bytes());
    out.extend_from_slice(b"\r\nContent-Type: ");
    out.extend_from_slice(content_type.as_bytes());
    out.extend_from_slice(b"\r\nContent-Range: ");
    write_content_range(r, total, out);
    out.extend_from_slice(b"\r\n\r\n");
}

/// Appends the closing delimiter: `\r\n--BOUNDARY--\r\n`.
pub fn write_multipart_end(boundary: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\r\n--");
    out.extend_from_slice(boundary.as_bytes());
    out.extend_from_slice(b"--\r\n");
}

/// The exact length of a multipart/byteranges body made of
/// [`write_part_header`] + range bytes for each of `ranges`, then
/// [`write_multipart_end`]: the response's `Content-Length`, known before
/// a single byte is read from the file.
pub fn multipart_len(boundary: &str, content_type: &str, ranges: &[ByteRange], total: u64) -> u64 {
    let b = boundary.len() as u64;
    // "\r\n--" B "\r\nContent-Type: " CT "\r\nContent-Range: " "bytes " a "-" b "/" t "\r\n\r\n"
    let fixed_part = 4 + b + 16 + content_type.len() as u64 + 17 + 6 + 1 + 1 + 4;
    let total_digits = decimal_len(total);
    let parts: u64 = ranges
        .iter()
        .map(|r| fixed_part + decimal_len(r.start) + decimal_len(r.end) + total_digits + r.len())
        .sum();
    // "\r\n--" B "--\r\n"
    parts + 4 + b + 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn br(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    fn ranges(h: &str, len: u64) -> Vec<(u64, u64)> {
        match parse_range(h.as_bytes(), len) {
            RangeOutcome::Ranges(set) => set.as_slice().iter().map(|r| (r.start, r.end)).collect(),
            other => panic!("{h:?} (len {len}): expected ranges, got {other:?}"),
        }
    }

    fn ignored(h: &str, len: u64) {
        assert!(
            matches!(parse_range(h.as_bytes(), len), RangeOutcome::Ignore),
            "{h:?} (len {len}) should be ignored"
        );
    }

    fn unsatisfiable(h: &str, len: u64) {
        assert!(
            matches!(parse_range(h.as_bytes(), len), RangeOutcome::Unsatisfiable),
            "{h:?} (len {len}) should be unsatisfiable"
        );
    }

    #[test]
    fn single_ranges() {
        assert_eq!(ranges("bytes=0-4", 10), [(0, 4)]);
        assert_eq!(ranges("bytes=0-0", 10), [(0, 0)]);
        assert_eq!(ranges("bytes=9-9", 10), [(9, 9)]);
        assert_eq!(ranges("bytes=0-", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=5-", 10), [(5, 9)]);
        assert_eq!(ranges("bytes=-3", 10), [(7, 9)]);
        assert_eq!(ranges("bytes=-10", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=-1000", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=3-1000", 10), [(3, 9)]);
        assert_eq!(ranges("bytes=0-18446744073709551615", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=00-04", 10), [(0, 4)]);
    }

    #[test]
    fn unit_and_whitespace() {
        assert_eq!(ranges("BYTES=0-1", 10), [(0, 1)]);
        assert_eq!(ranges("Bytes=0-1", 10), [(0, 1)]);
        assert_eq!(ranges("  bytes=0-1\t", 10), [(0, 1)]);
        assert_eq!(ranges("bytes=0-1 , 5-6", 10), [(0, 1), (5, 6)]);
        assert_eq!(ranges("bytes=0-1,\t5-6", 10), [(0, 1), (5, 6)]);
        assert_eq!(ranges("bytes= 0-1", 10), [(0, 1)]);
        // RFC 9110 §5.6.1.2: empty list elements are tolerated.
        assert_eq!(ranges("bytes=,0-1,,5-6,", 10), [(0, 1), (5, 6)]);
        assert_eq!(ranges("bytes= , 0-1", 10), [(0, 1)]);
    }

    #[test]
    fn syntax_errors_are_ignored() {
        for h in [
            "",
            "bytes",
            "bytes=",
            "bytes=,",
            "bytes= , ",
            "bytes =0-1",
            "bytes= 0 -1",
            "bytes=0 - 1",
            "bits=0-1",
            "items=0-1",
            "byte=0-1",
            "bytes=a-b",
            "bytes=1",
            "bytes=-",
            "bytes=--1",
            "bytes=1--2",
            "bytes=1-2-3",
            "bytes=+1-2",
            "bytes=1-+2",
            "bytes=-+2",
            "bytes=0x1-2",
            "bytes=1-2;3-4",
            "bytes=5-4",
            "bytes=0-1,5-4",
            "bytes=0-1,x",
        ] {
            ignored(h, 10);
        }
        // Overflow anywhere, even in an otherwise unsatisfiable range.
        ignored("bytes=18446744073709551616-", 10);
        ignored("bytes=0-18446744073709551616", 10);
        ignored("bytes=-18446744073709551616", 10);
        ignored("bytes=0-1,99999999999999999999-", 10);
        // Non-ASCII and control bytes.
        assert!(matches!(
            parse_range(b"bytes=0-1\xff", 10),
            RangeOutcome::Ignore
        ));
        assert!(matches!(
            parse_range(b"bytes=0-1\r\n", 10),
            RangeOutcome::Ignore
        ));
    }

    #[test]
    fn unsatisfiable_ranges_are_dropped() {
        unsatisfiable("bytes=10-", 10);
        unsatisfiable("bytes=10-20", 10);
        unsatisfiable("bytes=-0", 10);
        unsatisfiable("bytes=-0,10-,99-100", 10);
        unsatisfiable("bytes=0-0", 0);
        unsatisfiable("bytes=0-", 0);
        unsatisfiable("bytes=-0", 0);
        // A suffix of an empty file is satisfiable, but no 206 can say
        // so: the file is sent whole (RFC 9110 §14.1.1).
        ignored("bytes=-5", 0);
        ignored("bytes=0-0,-1", 0);
        assert_eq!(ranges("bytes=10-20,2-3", 10), [(2, 3)]);
        assert_eq!(ranges("bytes=-0,-1", 10), [(9, 9)]);
        // Syntax still checked in unsatisfiable elements.
        ignored("bytes=10-x", 10);
        ignored("bytes=20-10", 10);
        // The largest representation: ends clip to len - 1, so merging
        // arithmetic (`end + 1`) cannot overflow.
        assert_eq!(ranges("bytes=0-1", u64::MAX), [(0, 1)]);
        assert_eq!(ranges("bytes=5-,0-", u64::MAX), [(0, u64::MAX - 1)]);
        assert_eq!(
            ranges("bytes=-1,0-0", u64::MAX),
            [(u64::MAX - 1, u64::MAX - 1), (0, 0)]
        );
    }

    #[test]
    fn disjoint_ranges_keep_their_order() {
        assert_eq!(ranges("bytes=5-6,0-1", 10), [(5, 6), (0, 1)]);
        assert_eq!(ranges("bytes=-2,0-1", 10), [(8, 9), (0, 1)]);
        assert_eq!(ranges("bytes=0-0,2-2,4-4", 10), [(0, 0), (2, 2), (4, 4)]);
    }

    #[test]
    fn overlapping_or_touching_ranges_are_sorted_and_merged() {
        assert_eq!(ranges("bytes=0-4,5-9", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=5-9,0-4", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=0-5,3-7", 10), [(0, 7)]);
        assert_eq!(ranges("bytes=0-0,0-0,0-0", 10), [(0, 0)]);
        assert_eq!(ranges("bytes=0-,-5", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=8-9,2-3,3-4", 10), [(2, 4), (8, 9)]);
        assert_eq!(ranges("bytes=0-9,2-3", 10), [(0, 9)]);
        assert_eq!(ranges("bytes=6-7,0-1,1-2", 10), [(0, 2), (6, 7)]);
        // The classic amplification attack collapses to one range.
        let attack = vec!["0-"; MAX_SPECS].join(",");
        assert_eq!(ranges(&format!("bytes={attack}"), 1000), [(0, 999)]);
    }

    #[test]
    fn range_count_limits() {
        let list = |n: u64| {
            let specs: Vec<String> = (0..n).map(|i| format!("{}-{}", i * 2, i * 2)).collect();
            format!("bytes={}", specs.join(","))
        };
        assert_eq!(ranges(&list(MAX_RANGES as u64), 1000).len(), MAX_RANGES);
        ignored(&list(MAX_RANGES as u64 + 1), 1000);
        // Many specs that coalesce into few are fine up to the scratch size…
        let mut touching = list(MAX_SPECS as u64 - 1);
        touching.push_str(",0-999");
        assert_eq!(ranges(&touching, 1000), [(0, 999)]);
        // …but not beyond it.
        let mut too_many = list(MAX_SPECS as u64);
        too_many.push_str(",0-999");
        ignored(&too_many, 1000);
        // Unsatisfiable specs do not count.
        let mut far = vec!["5000-6000"; 200].join(",");
        far.push_str(",1-2");
        assert_eq!(ranges(&format!("bytes={far}"), 1000), [(1, 2)]);
    }

    #[test]
    fn content_range_of_a_request() {
        assert_eq!(
            parse_content_range(b"bytes 2-3/10"),
            Some((br(2, 3), Some(10)))
        );
        assert_eq!(parse_content_range(b" Bytes 0-0/*"), Some((br(0, 0), None)));
        for bad in [
            "bytes 3-2/10",
            "bytes 0-9/9",
            "bytes */10",
            "bytes 1-/10",
            "bytes -1/10",
            "bytes 0-1",
            "items 0-1/2",
            "bytes 0-1/2x",
            "bytes 0-99999999999999999999/*",
            "bytes  0-1/2",
            "",
        ] {
            assert_eq!(parse_content_range(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn content_range_values() {
        let mut out = Vec::new();
        write_content_range(br(0, 4), 10, &mut out);
        assert_eq!(out, b"bytes 0-4/10");
        out.clear();
        write_content_range(br(u64::MAX - 1, u64::MAX - 1), u64::MAX, &mut out);
        assert_eq!(
            out,
            b"bytes 18446744073709551614-18446744073709551614/18446744073709551615"
        );
        out.clear();
        write_unsatisfied_range(10, &mut out);
        assert_eq!(out, b"bytes */10");
        assert_eq!(br(3, 3).len(), 1);
        assert_eq!(br(0, 9).len(), 10);
    }

    #[test]
    fn multipart_framing_bytes() {
        let mut out = Vec::new();
        write_part_header("B0UND", "text/plain; charset=utf-8", br(0, 4), 10, &mut out);
        assert_eq!(
            out,
            b"\r\n--B0UND\r\nContent-Type: text/plain; charset=utf-8\r\n\
              Content-Range: bytes 0-4/10\r\n\r\n"
        );
        out.clear();
        write_multipart_end("B0UND", &mut out);
        assert_eq!(out, b"\r\n--B0UND--\r\n");
    }

    #[test]
    fn multipart_len_matches_the_bytes_produced() {
        let body: Vec<u8> = (0..=255u8).cycle().take(123_457).collect();
        let total = body.len() as u64;
        let cases: &[&[ByteRange]] = &[
            &[br(0, 0)],
            &[br(0, 4), br(6, 9)],
            &[br(120_000, 123_456), br(0, 9), br(99, 99_999)],
            &[br(0, 123_456)],
        ];
        for (boundary, ct) in [("b", "x/y"), ("3d6b6a416f9b5", "text/html; charset=utf-8")] {
            for &rs in cases {
                let mut out = Vec::new();
                for &r in rs {
                    write_part_header(boundary, ct, r, total, &mut out);
                    out.extend_from_slice(&body[r.start as usize..=r.end as usize]);
                }
                write_multipart_end(boundary, &mut out);
                assert_eq!(multipart_len(boundary, ct, rs, total), out.len() as u64);
            }
        }
        assert_eq!(
            multipart_len("b", "x", &[], 0),
            b"\r\n--b--\r\n".len() as u64
        );
    }

    #[test]
    fn decimal_helpers() {
        for n in [0, 9, 10, 99, 100, 12_345, u64::MAX] {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
            assert_eq!(decimal_len(n), out.len() as u64);
        }
    }
}
