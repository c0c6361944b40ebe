//! The `Authorization` field value of the Basic scheme (RFC 7617 §2).

use crate::ascii::IgnoreCase;
use base64ct::{Base64, Encoding};

use crate::http::grammar::{is_tchar, trim_ows};

/// Why a credential could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Malformed {
    /// Another scheme (Bearer, Digest…): not ours, but still no access.
    Scheme,
    /// Not `Basic` + SP + a token68.
    Syntax,
    /// The token68 is not strict padded base64 (RFC 4648 §4).
    Base64,
    /// No `:`, an empty user-id, or a control character (§2).
    UserPass,
}

/// Decodes `value` (e.g. `Basic YWxpY2U6c2VjcmV0`) into `buf` and returns
/// where the first colon is: the user-id is `buf[..colon]`, the password
/// `buf[colon + 1..]`. `buf` keeps its capacity between calls, so after the
/// first few requests this allocates nothing.
pub(crate) fn decode(value: &[u8], buf: &mut Vec<u8>) -> Result<usize, Malformed> {
    buf.clear();
    // RFC 9110 §11.4: credentials = auth-scheme [ 1*SP ( token68 / … ) ].
    // The scheme is case-insensitive (§11.1). The field value's own
    // leading and trailing whitespace is not part of it (§5.5).
    let value = trim_ows(value);
    if value.len() < 5 || !value[..5].eq_ignore_case(b"basic") {
        return Err(Malformed::Scheme);
    }
    match value.get(5) {
        None => return Err(Malformed::Syntax),
        Some(b' ') => {}
        Some(&b) => {
            return Err(if is_tchar(b) {
                Malformed::Scheme
            } else {
                Malformed::Syntax
            })
        }
    }
    let mut token = &value[6..];
    while let [b' ', rest @ ..] = token {
        token = rest;
    }
    // token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    // RFC 7617 §2 then narrows it to base64 (RFC 4648 §4, with padding).
    if token.is_empty() {
        return Err(Malformed::Syntax);
    }
    if !token.len().is_multiple_of(4) {
        return Err(Malformed::Base64);
    }
    buf.resize(token.len() / 4 * 3, 0);
    let len = Base64::decode(token, buf)
        .map_err(|_| Malformed::Base64)?
        .len();
    buf.truncate(len);
    // user-pass = userid ":" password; the user-id cannot contain a colon,
    // the password can, so the first colon splits (§2).
    let colon = buf
        .iter()
        .position(|&b| b == b':')
        .ok_or(Malformed::UserPass)?;
    // §2: "The user-id and password MUST NOT contain any control
    // characters". An empty user-id names nobody.
    if colon == 0 || buf.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(Malformed::UserPass);
    }
    Ok(colon)
}
