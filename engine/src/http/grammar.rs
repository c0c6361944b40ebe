//! The small rules of HTTP's grammar that many parsers share: tokens and
//! optional whitespace (RFC 9110 §5.6), field-value bytes (§5.5) and
//! hexadecimal digits (RFC 5234 Appendix B.1 `HEXDIG`, used by chunk sizes,
//! percent-encoding and entity tags).
//!
//! One definition of each, so that a header name is the same set of bytes
//! whether a client, a CGI script, a config file or an embedded handler
//! sends it, and so that the request parser's lookup table serves them all.

use crate::ascii::IgnoreCase;

/// A byte table that holds the ASCII letters and digits and `others`:
/// the sets of bytes the parsers check byte by byte (tokens, host
/// names), where a lookup is cheaper than the comparisons.
pub const fn alnum_and(others: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = (i as u8).is_ascii_alphanumeric();
        i += 1;
    }
    let mut j = 0;
    while j < others.len() {
        table[others[j] as usize] = true;
        j += 1;
    }
    table
}

/// `tchar` as a table: the request line and every header name go through
/// it byte by byte.
static TCHAR: [bool; 256] = alnum_and(b"!#$%&'*+-.^_`|~");

/// Whether `b` may appear in a token (RFC 9110 §5.6.2 `tchar`).
#[inline]
pub fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

/// Whether the comma-separated list `value` (a `Connection` or
/// `Upgrade` field's, RFC 9110 §5.6.1) holds `token`, compared ASCII
/// case-insensitively.
pub fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_case(token))
}

/// Whether `s` is a token: one or more `tchar` (RFC 9110 §5.6.2), the
/// syntax of field names, methods and media type names.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// Whether `b` is optional whitespace: SP or HTAB (RFC 9110 §5.6.3 `OWS`).
#[inline]
pub fn is_ows(b: u8) -> bool {
    // A `matches!` rather than `==` || `==`: in the chunk-extension state
    // machine (http/body.rs) it compiles to fewer instructions per byte.
    matches!(b, b' ' | b'\t')
}

/// `v` without optional whitespace (SP / HTAB, RFC 9110 §5.6.3) on either
/// end: a field value's own leading and trailing whitespace is not part of
/// it (§5.5), nor is the whitespace around list elements (§5.6.1).
#[inline(never)]
pub fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// The position of the first `needle` in `hay`, eight bytes at a time:
/// a word's bytes equal to it are found with the classic "has a zero
/// byte" test, whose lowest flagged byte is always a true one. For the
/// scans that run over every CGI head, trailer and HTTP/2 head.
pub fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO.wrapping_mul(u64::from(needle));
    let mut chunks = hay.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ pattern;
        let found = w.wrapping_sub(LO) & !w & HI;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    (chunks.remainder().iter())
        .position(|&x| x == needle)
        .map(|i| at + i)
}

/// The position of the first control byte in `hay` (below 0x20, tab,
/// CR and LF among them, or DEL), eight bytes at a time: a word's bytes
/// below 0x20 are found with the "has a byte less than" test and DEL
/// with the "has a zero byte" one, whose lowest flagged byte is always a
/// true one (a borrow runs up from a flagged byte only). A field value
/// of visible bytes, spaces and obs-text ends at its CR: one pass finds
/// the line's end and checks what comes before it.
#[inline(never)]
pub fn first_control(hay: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut chunks = hay.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let del = w ^ (LO * 0x7f);
        let found = (w.wrapping_sub(LO * 0x20) & !w | del.wrapping_sub(LO) & !del) & HI;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    (chunks.remainder().iter())
        .position(|&b| b < 0x20 || b == 0x7f)
        .map(|i| at + i)
}

/// Whether `b` may appear in a field value: VCHAR, obs-text, SP, HTAB
/// (RFC 9110 §5.5). NUL, CR, LF, the other controls and DEL may not: a CR
/// or LF would end the field (and could start a forged one).
#[inline]
pub fn is_field_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// Whether every byte of `v` may appear in a field value ([`is_field_byte`]):
/// its controls ([`first_control`], eight bytes at a time) are tabs, if
/// any. Every request's field values go through it.
#[inline(never)]
pub fn is_field_value(mut v: &[u8]) -> bool {
    while let Some(at) = first_control(v) {
        if v[at] != b'\t' {
            return false;
        }
        v = &v[at + 1..];
    }
    true
}

/// The value of one hexadecimal digit, either case (RFC 5234 `HEXDIG` is
/// case-insensitive, as every ABNF string is).
#[inline]
pub fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The two uppercase hexadecimal digits of `b`: uppercase as RFC 3986 §2.1
/// asks of percent-encoding, and as nginx writes its `\xHH` log escapes.
#[inline]
pub fn hex_pair(b: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]]
}

const LOWER_HEX: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hexadecimal digits, two a byte (keys and digests
/// in brisk's own files).
pub fn hex_lower(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(char::from(LOWER_HEX[usize::from(b >> 4)]));
        out.push(char::from(LOWER_HEX[usize::from(b & 0xf)]));
    }
    out
}

/// The `N` bytes that `2 * N` hexadecimal digits (either case) write.
pub fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(s.chunks(2)) {
        *o = hex_value(pair[0])? << 4 | hex_value(pair[1])?;
    }
    Some(out)
}

/// The 16 lowercase hexadecimal digits of `n`, zero-padded.
pub fn hex_u64(n: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, d) in out.iter_mut().enumerate() {
        *d = LOWER_HEX[((n >> (60 - 4 * i)) & 0xf) as usize];
    }
    out
}

/// Appends `n` in lowercase hexadecimal without leading zeros (`0` for
/// zero): a chunk-size (RFC 9112 §7.1) or a part of an entity tag. Only
/// the digits `n` has are computed: chunk sizes are small.
pub fn push_hex(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = LOWER_HEX[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// `1*DIGIT` as a u64; `None` if empty, not digits, or overflowing.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_byte_agrees_with_a_plain_search() {
        let hay: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        for needle in [0u8, 1, 10, 58, 127, 128, 200, 255] {
            for start in 0..20 {
                for len in [0, 1, 7, 8, 9, 15, 16, 17, 100, 280] {
                    let h = &hay[start..(start + len).min(hay.len())];
                    assert_eq!(
                        find_byte(h, needle),
                        h.iter().position(|&b| b == needle),
                        "{needle} in {h:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn first_control_agrees_with_a_plain_search() {
        // Every byte value at every place of a word and of the tail, after
        // plain bytes and after obs-text (whose high bit the test must not
        // take for a borrow), and with more controls after the first.
        for fill in [b'a', b' ', 0x80, 0xff, 0x7e, 0x20] {
            for len in [0, 1, 7, 8, 9, 16, 17, 23] {
                for at in 0..len {
                    for b in 0..=255u8 {
                        let mut hay = vec![fill; len];
                        hay[at] = b;
                        if at + 1 < len {
                            hay[at + 1] = 0x1f;
                        }
                        let want = hay.iter().position(|&x| x < 0x20 || x == 0x7f);
                        assert_eq!(first_control(&hay), want, "{hay:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn tchar_is_exactly_the_rfc_set() {
        let specials = b"!#$%&'*+-.^_`|~";
        for b in 0..=255u8 {
            let want = b.is_ascii_alphanumeric() || specials.contains(&b);
            assert_eq!(is_tchar(b), want, "byte {b:#04x}");
        }
        assert!(is_token(b"Cache-Control"));
        assert!(is_token(b"x-a.b_c~d|e"));
        assert!(!is_token(b""));
        assert!(!is_token(b"Bad Name"));
        assert!(!is_token(b"X:Y"));
        assert!(!is_token(b"caf\xc3\xa9"));
    }

    #[test]
    fn ows_is_space_and_tab_only() {
        assert_eq!(trim_ows(b" \t a b \t "), b"a b");
        assert_eq!(trim_ows(b"\t\t"), b"");
        assert_eq!(trim_ows(b""), b"");
        assert_eq!(trim_ows(b"\r\na\x0b"), b"\r\na\x0b");
        for b in 0..=255u8 {
            assert_eq!(is_ows(b), b == b' ' || b == b'\t', "byte {b:#04x}");
        }
    }

    #[test]
    fn field_values_refuse_controls_but_keep_obs_text() {
        assert!(is_field_value(b"text/html; q=0.5\tx"));
        assert!(is_field_value(b"caf\xc3\xa9 \xff"));
        assert!(is_field_value(b""));
        for bad in [
            &b"a\r\nSet-Cookie: x"[..],
            b"a\nb",
            b"a\0",
            b"\x7f",
            b"\x1b[31m",
        ] {
            assert!(!is_field_value(bad), "{bad:?}");
        }
        // Every byte at every place of a value longer than a word: the
        // word-at-a-time test agrees with the byte's.
        for b in 0..=255u8 {
            for at in 0..19 {
                let mut v = *b"Mozilla/5.0 (X11; L";
                v[at] = b;
                assert_eq!(is_field_value(&v), is_field_byte(b), "{b:#04x} at {at}");
            }
        }
    }

    #[test]
    fn hex_digits_both_ways() {
        for b in 0..=255u8 {
            let want = (b as char).to_digit(16).map(|d| d as u8);
            assert_eq!(hex_value(b), want, "byte {b:#04x}");
            let [hi, lo] = hex_pair(b);
            assert_eq!(format!("{b:02X}").as_bytes(), [hi, lo]);
            assert_eq!(hex_value(hi).zip(hex_value(lo)), Some((b >> 4, b & 0xf)));
        }
        assert_eq!(&hex_u64(0x1a4), b"00000000000001a4");
        assert_eq!(&hex_u64(u64::MAX), b"ffffffffffffffff");
        for n in [0, 1, 0xf, 0x10, 0x5f3a_1c2b, u64::MAX] {
            let mut out = Vec::new();
            push_hex(&mut out, n);
            assert_eq!(out, format!("{n:x}").as_bytes());
        }
    }
}
