//! Range requests (RFC 9110 §14): parsing `Range`, multipart/byteranges framing.
//!
//! STUB: signatures are the contract; bodies are filled in by the semantics work.

/// An inclusive byte range `start..=end` within a representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub start: u64,
    pub end: u64,
}

impl ByteRange {
    /// Number of bytes in the range.
    pub fn len(&self) -> u64 {
        self.end - self.start + 1
    }
}

/// Most ranges served in one response; a request with more is answered 200.
pub const MAX_RANGES: usize = 16;

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
#[derive(Debug, Clone, Copy)]
pub enum RangeOutcome {
    /// Invalid, unknown unit, or too many ranges: serve the whole representation (200).
    Ignore,
    /// At least one satisfiable range: 206.
    Ranges(RangeSet),
    /// Valid syntax, nothing satisfiable: 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
}

/// Evaluates a `Range` header value against a representation of `len` bytes.
pub fn parse_range(header: &[u8], len: u64) -> RangeOutcome {
    let _ = (header, len);
    todo!()
}

/// Appends a `Content-Range` value: `bytes a-b/len`.
pub fn write_content_range(r: ByteRange, total: u64, out: &mut Vec<u8>) {
    let _ = (r, total, out);
    todo!()
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
    let _ = (boundary, content_type, r, total, out);
    todo!()
}

/// Appends the closing delimiter: `\r\n--BOUNDARY--\r\n`.
pub fn write_multipart_end(boundary: &str, out: &mut Vec<u8>) {
    let _ = (boundary, out);
    todo!()
}
