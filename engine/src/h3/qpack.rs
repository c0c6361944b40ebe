//! QPACK (RFC 9204) with the static table and literal field lines only:
//! brisk advertises `SETTINGS_QPACK_MAX_TABLE_CAPACITY = 0`, so a client
//! may reference no dynamic table entry (a field section that does, or
//! whose Required Insert Count is not 0, is QPACK_DECOMPRESSION_FAILED,
//! §4.5.1.1), and brisk's own sections use none either (so it needs no
//! acknowledgement on the decoder stream). The integers and the Huffman
//! code are HPACK's (§4.1.1, §4.1.2), shared with `crate::h2::hpack`.
//!
//! Left (dev/plan-30-h3.md): the dynamic table, bounded, both ways.

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

/// Decodes the field section `section` (a HEADERS payload), telling
/// `field` each name and value in order; `scratch` holds them while they
/// are told. A section that decodes to more than `max_decoded` (names,
/// values and 32 bytes a field, as RFC 9114 §4.2.2 counts) is refused
/// there: the static table makes one byte stand for up to 73, so the
/// bound is on what is decoded, not on what came.
pub fn decode(
    section: &[u8],
    max_decoded: usize,
    scratch: &mut (Vec<u8>, Vec<u8>),
    field: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<(), Error> {
    // The prefix (§4.5.1): Required Insert Count, then the sign and the
    // Delta Base. With no dynamic table the count must be 0 and the base
    // means nothing.
    let (required, n) = int(section, 8)?;
    if required != 0 {
        return Err(failed("a dynamic table reference (its capacity is 0)"));
    }
    let (_, m) = int(&section[n..], 7)?;
    let mut pos = n + m;
    let mut decoded = 0usize;
    let (name, value) = scratch;
    while pos < section.len() {
        let rest = &section[pos..];
        let b = rest[0];
        let (n, v): (&[u8], &[u8]);
        if b & 0x80 != 0 {
            // Indexed field line (§4.5.2): 1 T index(6).
            if b & 0x40 == 0 {
                return Err(failed("a dynamic table reference (its capacity is 0)"));
            }
            let (i, used) = int(rest, 6)?;
            pos += used;
            let &(sn, sv) = STATIC
                .get(i as usize)
                .ok_or(failed("static index out of range"))?;
            (n, v) = (sn.as_bytes(), sv.as_bytes());
        } else if b & 0x40 != 0 {
            // Literal field line with name reference (§4.5.4): 0 1 N T
            // index(4), then the value.
            if b & 0x10 == 0 {
                return Err(failed("a dynamic table reference (its capacity is 0)"));
            }
            let (i, used) = int(rest, 4)?;
            pos += used;
            let &(sn, _) = STATIC
                .get(i as usize)
                .ok_or(failed("static index out of range"))?;
            value.clear();
            pos += string(&section[pos..], 7, value)?;
            (n, v) = (sn.as_bytes(), value.as_slice());
        } else if b & 0x20 != 0 {
            // Literal field line with literal name (§4.5.6): 0 0 1 N H
            // length(3), the name, then the value.
            name.clear();
            pos += string(rest, 3, name)?;
            value.clear();
            pos += string(&section[pos..], 7, value)?;
            (n, v) = (name.as_slice(), value.as_slice());
        } else {
            // Post-base references (§4.5.3, §4.5.5): dynamic entries only.
            return Err(failed("a dynamic table reference (its capacity is 0)"));
        }
        decoded += n.len() + v.len() + 32;
        if decoded > max_decoded {
            return Err(Error::new(Code::EXCESSIVE_LOAD, "field section too large"));
        }
        field(n, v);
    }
    Ok(())
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
/// nothing is ever put in a dynamic table here.
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
