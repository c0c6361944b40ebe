//! QPACK (RFC 9204). Decoding: the static table, and the dynamic table
//! the client's encoder stream builds ([`Table`], bounded by
//! [`MAX_CAPACITY`]); brisk advertises no blocked streams, so a field
//! section that references an entry not inserted yet is
//! QPACK_DECOMPRESSION_FAILED (§2.1.2) rather than held. Encoding:
//! brisk's own sections use the static table and literals only (its
//! encoder inserts nothing, so it needs no acknowledgement). The integers
//! and the Huffman code are HPACK's (§4.1.1, §4.1.2), shared with
//! `crate::h2::hpack`.

mod table;

pub use table::{Table, MAX_CAPACITY};

use super::{Code, Error};
use crate::h2::hpack::{huffman, read_int, write_int};

/// The static table (RFC 9204 Appendix A): index, name, value.
pub const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Why a field section is refused.
const FAILED: Code = Code::QPACK_DECOMPRESSION_FAILED;

fn failed(reason: &'static str) -> Error {
    Error::new(FAILED, reason)
}

/// Decodes the field section `section` (a HEADERS payload) with the
/// connection's dynamic `table`, telling `field` each name and value in
/// order; `scratch` holds them while they are told. Returns its Required
/// Insert Count (not 0: the caller acknowledges the section, §4.4.1). A
/// section that decodes to more than `max_decoded` (names, values and 32
/// bytes a field, as RFC 9114 §4.2.2 counts) is refused there: a table
/// entry makes one byte stand for many, so the bound is on what is
/// decoded, not on what came.
pub fn decode(
    section: &[u8],
    max_decoded: usize,
    table: &Table,
    scratch: &mut (Vec<u8>, Vec<u8>),
    field: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<u64, Error> {
    // The prefix (§4.5.1): Required Insert Count, then the sign and the
    // Delta Base.
    let (encoded, n) = int(section, 8)?;
    let required = table.required(u64::from(encoded))?;
    if required > table.inserted() {
        // (A client may not block a stream: none is allowed, §2.1.2.)
        return Err(failed("a reference to an entry not inserted yet"));
    }
    let sign = section.get(n).ok_or(failed("truncated prefix"))? & 0x80;
    let (delta, m) = int(&section[n..], 7)?;
    let base = match sign {
        0 => required + u64::from(delta),
        _ => (required.checked_sub(u64::from(delta) + 1)).ok_or(failed("a negative base"))?,
    };
    // An entry a line names: below the Required Insert Count (§2.2.3).
    let entry = |abs: Option<u64>| {
        abs.filter(|&i| i < required)
            .and_then(|i| table.get(i))
            .ok_or(failed("a reference to no dynamic entry"))
    };
    let fixed = |i: u32| {
        STATIC
            .get(i as usize)
            .map(|&(n, v)| (n.as_bytes(), v.as_bytes()))
            .ok_or(failed("static index out of range"))
    };
    let mut pos = n + m;
    let mut decoded = 0usize;
    let (name, value) = scratch;
    while pos < section.len() {
        let rest = &section[pos..];
        let b = rest[0];
        let (n, v): (&[u8], &[u8]);
        if b & 0x80 != 0 {
            // Indexed field line (§4.5.2): 1 T index(6).
            let (i, used) = int(rest, 6)?;
            pos += used;
            (n, v) = match b & 0x40 {
                0 => entry(base.checked_sub(u64::from(i) + 1))?,
                _ => fixed(i)?,
            };
        } else if b & 0x40 != 0 {
            // Literal field line with name reference (§4.5.4): 0 1 N T
            // index(4), then the value.
            let (i, used) = int(rest, 4)?;
            pos += used;
            n = match b & 0x10 {
                0 => entry(base.checked_sub(u64::from(i) + 1))?.0,
                _ => fixed(i)?.0,
            };
            value.clear();
            pos += string(&section[pos..], 7, value)?;
            v = value.as_slice();
        } else if b & 0x20 != 0 {
            // Literal field line with literal name (§4.5.6): 0 0 1 N H
            // length(3), the name, then the value.
            name.clear();
            pos += string(rest, 3, name)?;
            value.clear();
            pos += string(&section[pos..], 7, value)?;
            (n, v) = (name.as_slice(), value.as_slice());
        } else if b & 0x10 != 0 {
            // Indexed field line with post-base index (§4.5.3): 0 0 0 1
            // index(4).
            let (i, used) = int(rest, 4)?;
            pos += used;
            (n, v) = entry(base.checked_add(u64::from(i)))?;
        } else {
            // Literal field line with post-base name reference (§4.5.5):
            // 0 0 0 0 N index(3), then the value.
            let (i, used) = int(rest, 3)?;
            pos += used;
            n = entry(base.checked_add(u64::from(i)))?.0;
            value.clear();
            pos += string(&section[pos..], 7, value)?;
            v = value.as_slice();
        }
        decoded += n.len() + v.len() + 32;
        if decoded > max_decoded {
            return Err(Error::new(Code::EXCESSIVE_LOAD, "field section too large"));
        }
        field(n, v);
    }
    Ok(required)
}

/// An integer with an `n`-bit prefix from the start of `input`.
fn int(input: &[u8], n: u32) -> Result<(u32, usize), Error> {
    read_int(input, n).map_err(|_| failed("truncated or overflowing integer"))
}

/// A string literal whose length has an `n`-bit prefix, the Huffman flag
/// the bit above it (§4.1.2), into `out`; the bytes it took.
fn string(input: &[u8], n: u32, out: &mut Vec<u8>) -> Result<usize, Error> {
    let huffman = input.first().ok_or(failed("truncated field line"))? & (1 << n) != 0;
    let (len, used) = int(input, n)?;
    let end = used
        .checked_add(len as usize)
        .ok_or(failed("truncated field line"))?;
    let raw = input.get(used..end).ok_or(failed("truncated field line"))?;
    if huffman {
        huffman::decode(raw, out).map_err(|_| failed("bad Huffman string"))?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(end)
}

/// Appends a string literal with an `n`-bit length prefix whose other
/// bits are `flags`, Huffman-coded (the bit above the prefix) when that
/// is shorter.
fn write_string(s: &[u8], n: u32, flags: u8, out: &mut Vec<u8>) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        write_int(coded, n, flags | (1 << n), out);
        huffman::encode(s, out);
    } else {
        write_int(s.len(), n, flags, out);
        out.extend_from_slice(s);
    }
}

/// Starts a field section: Required Insert Count 0, Delta Base 0.
pub fn begin(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0]);
}

/// Appends a field line for `name` (lower case) and `value`: the static
/// entry when it has both, a literal naming the static entry when it
/// has the name, a literal name otherwise. Never indexed (N) is not set:
/// brisk's encoder puts nothing in the client's dynamic table.
pub fn field(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    let mut by_name = None;
    for (i, &(n, v)) in STATIC.iter().enumerate() {
        if n.as_bytes() == name {
            if v.as_bytes() == value {
                write_int(i, 6, 0xc0, out);
                return;
            }
            by_name.get_or_insert(i);
        }
    }
    match by_name {
        Some(i) => write_int(i, 4, 0x50, out),
        None => write_string(name, 3, 0x20, out),
    }
    write_string(value, 7, 0, out);
}

/// Appends `:status`.
pub fn status(code: u16, out: &mut Vec<u8>) {
    let mut digits = [0u8; 3];
    let s = code.min(999);
    digits[0] = b'0' + (s / 100) as u8;
    digits[1] = b'0' + (s / 10 % 10) as u8;
    digits[2] = b'0' + (s % 10) as u8;
    field(b":status", &digits, out);
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod vectors;
