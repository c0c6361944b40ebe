//! JSON (RFC 8259), sans-IO: a strict decoder into [`Json`] with a
//! bounded nesting depth, and the string escaping its encoder needs.
//! Servlets decode request bodies with it (`brisk.json.decode`) and
//! encode their answers (`brisk.json.encode`). Fuzzed (`fuzz/form`).

/// Deepest nesting of arrays and objects accepted: deeper input is an
/// error, not a stack overflow.
pub const MAX_DEPTH: usize = 128;

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number without fraction or exponent that fits an i64.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string (UTF-8; escapes decoded).
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, its members in order (a repeated name keeps both).
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The member `name` of an object (the first of that name).
    pub fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of an array (none for anything else).
    pub fn items(&self) -> &[Json] {
        match self {
            Json::Array(items) => items,
            _ => &[],
        }
    }
}

/// Where and why a document is not JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset.
    pub at: usize,
    /// What was wrong.
    pub why: &'static str,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid JSON at byte {}: {}", self.at, self.why)
    }
}

/// Decodes one JSON document (whitespace around it allowed).
pub fn decode(input: &[u8]) -> Result<Json, JsonError> {
    let mut p = Parser { s: input, i: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != input.len() {
        return Err(p.err("text after the value"));
    }
    Ok(v)
}

/// Appends `s` as a JSON string (quotes included) to `out`: `"`, `\`
/// and control characters escaped, and `<`, `>`, `&` as `\u00XX` so the
/// result is safe inside an HTML `<script>` too.
pub fn push_string(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Runs of bytes that need no escape are copied whole.
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !ESCAPED[b as usize] {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        start = i + 1;
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(b >> 4) as usize],
                    HEX[(b & 15) as usize],
                ]);
                continue;
            }
        };
        out.extend_from_slice(escape);
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends `bytes` as [`push_string`] does when they are UTF-8, else
/// appends nothing and says why. Printable ASCII without a byte to escape
/// (keys, names, most short values) is checked and copied in one pass;
/// other strings are validated and escaped as `push_string` does.
pub fn push_utf8(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), std::str::Utf8Error> {
    if bytes.iter().all(|&b| PLAIN[b as usize]) {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
        return Ok(());
    }
    push_string(std::str::from_utf8(bytes)?, out);
    Ok(())
}

/// The length [`push_string`] gives `bytes` (quotes included).
pub fn escaped_len(bytes: &[u8]) -> usize {
    bytes.iter().fold(2, |n, &b| {
        n + match b {
            _ if !ESCAPED[b as usize] => 1,
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' => 2,
            _ => 6,
        }
    })
}

/// [`push_utf8`] if `out` stays within `max` bytes; `Ok(false)` (and
/// nothing appended) if it would not.
pub fn push_utf8_within(
    bytes: &[u8],
    out: &mut Vec<u8>,
    max: usize,
) -> Result<bool, std::str::Utf8Error> {
    let room = max.saturating_sub(out.len());
    // (Escaped, a byte takes at most 6.)
    if bytes.len() + 2 > room
        || (bytes.len().saturating_mul(6) + 2 > room && escaped_len(bytes) > room)
    {
        return Ok(false);
    }
    push_utf8(bytes, out)?;
    Ok(true)
}

/// Printable ASCII that [`push_string`] copies as it is.
pub(crate) static PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x80 && !ESCAPED[b];
        b += 1;
    }
    t
};

/// The bytes [`push_string`] escapes: `"`, `\`, control characters, DEL,
/// `<`, `>`, `&` (one lookup a byte rather than a chain of tests).
static ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x20 || b == 0x7f || matches!(b as u8, b'"' | b'\\' | b'<' | b'>' | b'&');
        b += 1;
    }
    t
};

/// Appends the finite `n` as JSON: its shortest decimal that reads back
/// as `n` (Lua's `tonumber` too), with a `.0` if it has no fraction, as
/// Rust's `{:?}` writes it (an exponent past 1e16 rather than sixteen
/// zeros and more). Numbers with at most 7 decimals and under 2^50 once
/// scaled (prices, measures: most of what servlets send) are written
/// from integers; the others by `{:?}`.
pub fn push_f64(out: &mut Vec<u8>, n: f64) {
    if let Some((neg, m, k)) = short_decimal(n) {
        // Right to left: the k decimals (one 0 if none), the point, the
        // integer part, the sign; m < 2^50 has at most 16 digits.
        let mut buf = [0u8; 24];
        let scale = POW10_U[k];
        let mut i = crate::http::digits_before(&mut buf, 24, m % scale, k);
        i -= 1;
        buf[i] = b'.';
        i = crate::http::digits_before(&mut buf, i, m / scale, 1);
        if neg {
            i -= 1;
            buf[i] = b'-';
        }
        out.extend_from_slice(&buf[i..]);
        return;
    }
    use std::io::Write as _;
    let _ = write!(out, "{n:?}");
}

const POW10: [f64; 8] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7];
/// The same powers as integers (`u64::pow` is a loop: 16 instructions a
/// float more, bench scenario 10).
const POW10_U: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// `n` as `m / 10^k` (with its sign apart), `k` the fewest decimals that
/// read back as `n`, when `k` is at most 7, `m` under 2^50 and `n` at
/// least 1e-4 (`{:?}` writes smaller numbers with an exponent).
///
/// Why that is the shortest form: below 2^50, decimals with `k` digits
/// are at least 4 units in the last place of `n` apart, so at most one
/// of them reads back as `n`, and it is `fl(n * 10^k)` when that is an
/// integer `m` and `m / 10^k` (both exact, the division rounded once, as
/// reading the decimal is) gives `n` back. A shorter form would be one
/// with `k - 1` digits, the one nearest `m / 10`: both neighbours are
/// tried, and if either reads back, the general path decides.
fn short_decimal(n: f64) -> Option<(bool, u64, usize)> {
    let neg = n.is_sign_negative();
    let a = n.abs();
    if a == 0.0 {
        return Some((neg, 0, 0));
    }
    if !(1e-4..1e15).contains(&a) {
        return None;
    }
    const LIMIT: f64 = (1u64 << 50) as f64;
    for k in 0..POW10.len() {
        let m = a * POW10[k];
        if m >= LIMIT {
            return None;
        }
        // (Positive and under 2^50: `as u64` truncates exactly, where
        // `trunc`, `floor` and `ceil` are calls into libm on x86-64's
        // baseline, which has no rounding instruction: 2.5 times the
        // cost of the rest, bench scenario 10.)
        if (m as u64) as f64 != m {
            continue;
        }
        if m / POW10[k] != a {
            return None;
        }
        if k > 0 {
            let tenth = m / 10.0;
            let floor = (tenth as u64) as f64;
            let ceil = if floor == tenth { floor } else { floor + 1.0 };
            for c in [floor, ceil] {
                if c / POW10[k - 1] == a {
                    return None;
                }
            }
        }
        return Some((neg, m as u64, k));
    }
    None
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, why: &'static str) -> JsonError {
        JsonError { at: self.i, why }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn lit(&mut self, word: &[u8], v: Json) -> Result<Json, JsonError> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("unknown literal"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        match self.s.get(self.i) {
            None => Err(self.err("unexpected end")),
            Some(b'n') => self.lit(b"null", Json::Null),
            Some(b't') => self.lit(b"true", Json::Bool(true)),
            Some(b'f') => self.lit(b"false", Json::Bool(false)),
            Some(b'"') => self.string().map(Json::Str),
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    self.ws();
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(self.err("expected , or ]")),
                    }
                }
            }
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a member name"));
                    }
                    let name = self.string()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return Err(self.err("expected :"));
                    }
                    self.i += 1;
                    self.ws();
                    members.push((name, self.value(depth + 1)?));
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Object(members));
                        }
                        _ => return Err(self.err("expected , or }")),
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.i;
        let digits = |p: &mut Parser<'_>| {
            let from = p.i;
            while let Some(b'0'..=b'9') = p.s.get(p.i) {
                p.i += 1;
            }
            p.i - from
        };
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        let n = digits(self);
        if n == 0 || (n > 1 && self.s[int_start] == b'0') {
            return Err(self.err("a malformed number"));
        }
        let mut float = false;
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            float = true;
            if digits(self) == 0 {
                return Err(self.err("a malformed number"));
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            float = true;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return Err(self.err("a malformed number"));
            }
        }
        // (Only ASCII digits and signs were taken.)
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("0");
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Json::Int(i));
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Json::Float(f)),
            // Beyond f64 (1e400): RFC 8259 §6 leaves the range to the
            // implementation and has no Infinity, which no encoder could
            // write back (fuzz/acme_answer found it decoded as inf).
            Ok(_) => Err(self.err("a number out of range")),
            Err(_) => Err(self.err("a malformed number")),
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .ok_or_else(|| self.err("a short \\u escape"))?;
        let mut v = 0;
        for &b in h {
            let d = (b as char)
                .to_digit(16)
                .ok_or_else(|| self.err("a bad \\u escape"))?;
            v = v * 16 + d;
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.s.get(self.i) else {
                return Err(self.err("an unterminated string"));
            };
            self.i += 1;
            match b {
                b'"' => break,
                0..=0x1f => return Err(self.err("a control character in a string")),
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(self.err("an unterminated string"));
                    };
                    self.i += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if !self.s[self.i..].starts_with(b"\\u") {
                                    return Err(self.err("a lone surrogate"));
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("a lone surrogate"));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            char::from_u32(cp).ok_or_else(|| self.err("a lone surrogate"))?
                        }
                        _ => return Err(self.err("an unknown escape")),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("a string that is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_decode() {
        assert_eq!(
            decode(br#" {"a": [1, -2.5e1, true, null], "b": "x\"\u00e9\ud83d\ude00"} "#),
            Ok(Json::Object(vec![
                (
                    "a".into(),
                    Json::Array(vec![
                        Json::Int(1),
                        Json::Float(-25.0),
                        Json::Bool(true),
                        Json::Null
                    ])
                ),
                ("b".into(), Json::Str("x\"é😀".into())),
            ]))
        );
        assert_eq!(
            decode(b"18446744073709551616"),
            Ok(Json::Float(1.8446744073709552e19))
        );
    }

    #[test]
    fn malformed_documents_say_where() {
        for (doc, at) in [
            (&b"[1,]"[..], 3),
            (b"{\"a\" 1}", 5),
            (b"01", 2),
            (b"\"\\ud800\"", 7),
            (b"[1] x", 4),
            (b"\"a\x01\"", 3),
            (b"tru", 0),
            (b"", 0),
        ] {
            assert_eq!(decode(doc).map_err(|e| e.at), Err(at), "{doc:?}");
        }
        for huge in [&b"1e400"[..], b"-1e400", b"[0,1.5E+999]"] {
            assert_eq!(decode(huge).unwrap_err().why, "a number out of range");
        }
        assert_eq!(decode(b"1e-400"), Ok(Json::Float(0.0)));
        let deep = "[".repeat(MAX_DEPTH + 2);
        assert_eq!(
            decode(deep.as_bytes()).unwrap_err().why,
            "nested too deeply"
        );
    }

    #[test]
    fn escaped_lengths_and_the_cap() {
        for s in ["", "plain", "a\"b\\c\n\r\t<>&\u{1}\u{7f}é"] {
            let mut out = Vec::new();
            push_string(s, &mut out);
            assert_eq!(escaped_len(s.as_bytes()), out.len(), "{s:?}");
            let mut capped = Vec::new();
            assert_eq!(
                push_utf8_within(s.as_bytes(), &mut capped, out.len()),
                Ok(true)
            );
            assert_eq!(capped, out);
            let mut capped = vec![b'x'];
            assert_eq!(
                push_utf8_within(s.as_bytes(), &mut capped, out.len()),
                Ok(false)
            );
            assert_eq!(capped, b"x");
        }
    }

    #[test]
    fn strings_encode_safely() {
        let mut out = Vec::new();
        push_string("a\"\\\n</script>\u{1}é", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"\\\n\u003c/script\u003e\u0001é""#
        );
    }

    #[test]
    fn bytes_encode_as_strings_do() {
        // Every byte alone, and in ASCII company: the same bytes as
        // push_string's, or an error for what is not UTF-8.
        let mut cases: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        cases.extend((0..=255u8).map(|b| vec![b'k', b, b'e', b'y']));
        cases.extend(
            ["", "item 12", "a\"b", "é", "日本", "<&>", "\u{7f}x"].map(|s| s.as_bytes().to_vec()),
        );
        cases.push(vec![b'a', 0xc3]);
        cases.push(vec![0xed, 0xa0, 0x80]);
        for bytes in cases {
            let mut got = b"x".to_vec();
            let r = push_utf8(&bytes, &mut got);
            match std::str::from_utf8(&bytes) {
                Ok(s) => {
                    let mut want = b"x".to_vec();
                    push_string(s, &mut want);
                    assert_eq!((r, got), (Ok(()), want), "{bytes:?}");
                }
                Err(e) => assert_eq!((r, got), (Err(e), b"x".to_vec()), "{bytes:?}"),
            }
        }
    }

    /// `push_f64` writes what `{:?}` writes (the shortest round trip):
    /// numbers with few decimals (its fast path), and others.
    #[test]
    fn floats_encode_as_shortest() {
        let mut cases = vec![
            0.0,
            -0.0,
            3.25,
            -3.25,
            0.1,
            0.2,
            0.3,
            0.1 + 0.2,
            1.0,
            100.0,
            1e-4,
            1.5e-4,
            9.99e-5,
            1e15,
            999999999999999.9,
            1e16,
            123456.7891234,
            0.0001234567,
            2.5e-7,
            1.0 / 3.0,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            1125899906842624.0,
            1125899906842623.5,
            112589990684262.4,
            4503599627370495.5,
            0.30000000000000004,
        ];
        // Prices and measures (the fast path), and arbitrary bits.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (i % 9) as i32;
            cases.push((x % 100_000_000_000) as f64 / 10f64.powi(k));
            cases.push((i as f64) * 3.0 + 0.25);
            let f = f64::from_bits(x);
            if f.is_finite() {
                cases.push(f);
            }
        }
        for n in cases {
            let mut out = Vec::new();
            push_f64(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{n:?}"), "{n:e}");
        }
    }
}
