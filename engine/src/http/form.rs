//! Form bodies and query strings, sans-IO: `application/x-www-form-urlencoded`
//! (WHATWG URL §5: `&`-separated `name=value`, `+` for space,
//! percent-escapes) and `multipart/form-data` (RFC 7578 over RFC 2046
//! §5.1). Bytes in, pieces out, every count bounded; what a servlet's
//! `req:form()` returns is built from these. Fuzzed (`fuzz/form`).

use crate::ascii::IgnoreCase;

/// Most fields taken from one form or query (the rest are ignored).
pub const MAX_FIELDS: usize = 1000;
/// Most bytes of a part's header block in a multipart body.
const MAX_PART_HEAD: usize = 8 * 1024;

/// Appends `s` with `%XX` escapes decoded (and `+` as a space when
/// `plus` is set) to `out`; a `%` not followed by two hex digits stays
/// as it is, as browsers and PHP leave it.
pub fn percent_decode(s: &[u8], plus: bool, out: &mut Vec<u8>) {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' if plus => out.push(b' '),
            b'%' if i + 2 < s.len() => match (hex(s[i + 1]), hex(s[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The fields of a urlencoded form or query string, decoded, in order:
/// `a=1&b=x+y&c` gives (`a`, `1`), (`b`, `x y`), (`c`, ``). At most
/// [`MAX_FIELDS`].
pub fn urlencoded(input: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, value) in urlencoded_raw(input) {
        let (mut n, mut v) = (Vec::new(), Vec::new());
        percent_decode(name, true, &mut n);
        percent_decode(value, true, &mut v);
        out.push((n, v));
    }
    out
}

/// The fields of [`urlencoded`] still encoded (name, value), for a caller
/// that decodes them into buffers of its own ([`percent_decode`]).
pub fn urlencoded_raw(input: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    input
        .split(|&b| b == b'&')
        .filter(|pair| !pair.is_empty())
        .take(MAX_FIELDS)
        .map(|pair| match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &pair[pair.len()..]),
        })
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    /// The field's name (`Content-Disposition: form-data; name="…"`).
    pub name: Vec<u8>,
    /// The file's name, for an uploaded file.
    pub filename: Option<Vec<u8>>,
    /// The part's `Content-Type`, if given.
    pub content_type: Option<&'a [u8]>,
    /// Its content.
    pub data: &'a [u8],
}

/// The boundary of a `multipart/form-data` content type
/// (`multipart/form-data; boundary=XyZ`, quoted or not); `None` for
/// another type or a boundary RFC 2046 §5.1.1 does not allow.
pub fn boundary(content_type: &[u8]) -> Option<&[u8]> {
    let mut params = content_type.split(|&b| b == b';');
    let kind = params.next()?.trim_ascii();
    if !kind.eq_ignore_case(b"multipart/form-data") {
        return None;
    }
    for p in params {
        let p = p.trim_ascii();
        let Some(eq) = p.iter().position(|&b| b == b'=') else {
            continue;
        };
        if !p[..eq].trim_ascii().eq_ignore_case(b"boundary") {
            continue;
        }
        let v = p[eq + 1..].trim_ascii();
        let v = match v {
            [b'"', inner @ .., b'"'] => inner,
            v => v,
        };
        return (1..=70).contains(&v.len()).then_some(v);
    }
    None
}

/// Why a multipart body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// The parts of a `multipart/form-data` body with `boundary`, in order
/// (at most [`MAX_FIELDS`]); an error for a body that does not follow
/// RFC 2046 §5.1.1 (no first boundary, a part without its head, no
/// closing boundary).
pub fn multipart<'a>(body: &'a [u8], boundary: &[u8]) -> Result<Vec<Part<'a>>, Malformed> {
    let mut delim = Vec::with_capacity(boundary.len() + 4);
    delim.extend_from_slice(b"--");
    delim.extend_from_slice(boundary);
    // The first delimiter may come after a preamble.
    let mut at = if body.starts_with(&delim) {
        delim.len()
    } else {
        let mut d2 = b"\r\n".to_vec();
        d2.extend_from_slice(&delim);
        find(body, &d2).ok_or(Malformed("no boundary"))? + d2.len()
    };
    delim.splice(0..0, *b"\r\n");
    let mut parts = Vec::new();
    loop {
        let rest = &body[at..];
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        // Transport padding, then the line break that ends the delimiter line.
        let line_end = find(rest, b"\r\n").ok_or(Malformed("a boundary line without its end"))?;
        if rest[..line_end].iter().any(|&b| b != b' ' && b != b'\t') {
            return Err(Malformed("text after a boundary"));
        }
        let start = at + line_end + 2;
        let end = find(&body[start..], &delim).ok_or(Malformed("no closing boundary"))? + start;
        if parts.len() < MAX_FIELDS {
            parts.push(part(&body[start..end])?);
        }
        at = end + delim.len();
    }
}

/// One part: its head (up to the empty line), then its content.
fn part(p: &[u8]) -> Result<Part<'_>, Malformed> {
    let (head, data) = match p.strip_prefix(b"\r\n") {
        // No header lines at all.
        Some(data) => (&p[..0], data),
        None => {
            let end = find(p, b"\r\n\r\n").ok_or(Malformed("a part without its head"))?;
            (&p[..end], &p[end + 4..])
        }
    };
    if head.len() > MAX_PART_HEAD {
        return Err(Malformed("a part's head is too long"));
    }
    let mut out = Part {
        name: Vec::new(),
        filename: None,
        content_type: None,
        data,
    };
    let mut disposition = false;
    for line in head.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Err(Malformed("a header line without a colon"));
        };
        let (name, value) = (line[..colon].trim_ascii(), line[colon + 1..].trim_ascii());
        if name.eq_ignore_case(b"content-type") {
            out.content_type = Some(value);
        } else if name.eq_ignore_case(b"content-disposition") {
            disposition = true;
            let mut params = value.split(|&b| b == b';');
            let kind = params.next().unwrap_or_default().trim_ascii();
            if !kind.eq_ignore_case(b"form-data") {
                return Err(Malformed("a part that is not form-data"));
            }
            for p in params {
                let p = p.trim_ascii();
                let Some(eq) = p.iter().position(|&b| b == b'=') else {
                    continue;
                };
                let key = p[..eq].trim_ascii();
                let v = unquote(p[eq + 1..].trim_ascii());
                if key.eq_ignore_case(b"name") {
                    out.name = v;
                } else if key.eq_ignore_case(b"filename") {
                    out.filename = Some(v);
                }
            }
        }
    }
    if !disposition {
        return Err(Malformed("a part without Content-Disposition"));
    }
    Ok(out)
}

/// A parameter value: quoted (`"a \"b\""`, backslash escapes as browsers
/// send them) or a token.
fn unquote(v: &[u8]) -> Vec<u8> {
    match v {
        [b'"', inner @ .., b'"'] => {
            let mut out = Vec::with_capacity(inner.len());
            let mut esc = false;
            for &b in inner {
                if esc || b != b'\\' {
                    out.push(b);
                    esc = false;
                } else {
                    esc = true;
                }
            }
            out
        }
        v => v.to_vec(),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(s: &str) -> Vec<(String, String)> {
        urlencoded(s.as_bytes())
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }

    #[test]
    fn urlencoded_fields_decode_as_browsers_send_them() {
        assert_eq!(
            fields("a=1&b=x+y%21&c&&d=%zz%4"),
            [("a", "1"), ("b", "x y!"), ("c", ""), ("d", "%zz%4")]
                .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(fields("%C3%A9=%E2%82%AC")[0].1, "€");
        assert_eq!(urlencoded(&b"a=1&".repeat(5000)).len(), MAX_FIELDS);
        let mut out = Vec::new();
        percent_decode(b"a%2", false, &mut out);
        assert_eq!(out, b"a%2");
        out.clear();
        percent_decode(b"%41+%", false, &mut out);
        assert_eq!(out, b"A+%");
    }

    #[test]
    fn boundaries_are_read_quoted_or_not() {
        assert_eq!(
            boundary(b"multipart/form-data; boundary=----x1"),
            Some(&b"----x1"[..])
        );
        assert_eq!(
            boundary(b"Multipart/Form-Data;charset=utf-8; BOUNDARY=\"a b\""),
            Some(&b"a b"[..])
        );
        assert_eq!(boundary(b"multipart/mixed; boundary=x"), None);
        assert_eq!(boundary(b"multipart/form-data"), None);
        assert_eq!(boundary(b"multipart/form-data; boundary="), None);
    }

    #[test]
    fn multipart_parts_as_curl_sends_them() {
        let body = b"preamble\r\n--XX\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello\r\n--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".txt\"\r\nContent-Type: text/plain\r\n\r\nline1\r\n--X not yet\r\n--XX--\r\nepilogue";
        let parts = multipart(body, b"XX").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, b"title");
        assert_eq!(parts[0].data, b"hello");
        assert_eq!(parts[0].filename, None);
        assert_eq!(parts[1].filename.as_deref(), Some(&b"a \"b\".txt"[..]));
        assert_eq!(parts[1].content_type, Some(&b"text/plain"[..]));
        assert_eq!(parts[1].data, b"line1\r\n--X not yet");
    }

    #[test]
    fn malformed_multipart_bodies_are_refused() {
        for (body, why) in [
            (&b"no boundary at all"[..], "no boundary"),
            (
                b"--XX\r\nContent-Disposition: form-data; name=a\r\n\r\nunended",
                "no closing boundary",
            ),
            (
                b"--XX\r\nX: y\r\n\r\nv\r\n--XX--",
                "a part without Content-Disposition",
            ),
            (
                b"--XX\r\nContent-Disposition: attachment\r\n\r\nv\r\n--XX--",
                "a part that is not form-data",
            ),
            (b"--XXjunk\r\n", "text after a boundary"),
            (b"--XX", "a boundary line without its end"),
        ] {
            assert_eq!(multipart(body, b"XX"), Err(Malformed(why)), "{body:?}");
        }
        assert_eq!(multipart(b"--XX--", b"XX"), Ok(vec![]));
    }
}
