//! Request-target forms (RFC 9112 §3.2) and Host values (§3.2, RFC 3986 §3.2.2).

use crate::ascii::IgnoreCase;
use std::borrow::Cow;

use super::bad;
use super::ParseError;
use crate::http::grammar::alnum_and;
use crate::http::Method;

/// A request target reduced to what the rest of the server uses.
pub(super) struct Target<'a> {
    /// Borrowed from the request line, but for `http://host?query`,
    /// whose origin-form needs a `/` the client did not send.
    pub(super) target: Cow<'a, [u8]>,
    /// The host of an absolute-form target.
    pub(super) authority_host: Option<&'a [u8]>,
}

/// Classifies the target (RFC 9112 §3.2) and reduces absolute-form to
/// origin-form.
pub(super) fn parse_target<'a>(method: Method, target: &'a [u8]) -> Result<Target<'a>, ParseError> {
    let plain = Target {
        target: Cow::Borrowed(target),
        authority_host: None,
    };
    if method == Method::Connect {
        // Authority-form (§3.2.3): uri-host ":" port, nothing else.
        return match split_host_port(target)? {
            (host, Some(port)) if !host.is_empty() && !port.is_empty() => Ok(plain),
            _ => Err(bad("CONNECT target must be host:port")),
        };
    }
    if target == b"*" {
        // Asterisk-form (§3.2.4) only means something for OPTIONS.
        return if method == Method::Options {
            Ok(plain)
        } else {
            Err(bad("asterisk-form target is only allowed with OPTIONS"))
        };
    }
    if target.first() == Some(&b'/') {
        return Ok(plain);
    }
    parse_absolute_form(method, target)
}

/// Absolute-form (§3.2.2): `http[s]://authority[/path[?query]]`.
fn parse_absolute_form(method: Method, target: &[u8]) -> Result<Target<'_>, ParseError> {
    let Some(colon) = target.iter().position(|&b| b == b':') else {
        return Err(bad("request target must start with /"));
    };
    let scheme = &target[..colon];
    if !scheme.eq_ignore_case(b"http") && !scheme.eq_ignore_case(b"https") {
        return Err(bad("absolute-form target with a scheme other than http(s)"));
    }
    let Some(rest) = target[colon + 1..].strip_prefix(b"//") else {
        return Err(bad("absolute-form target without an authority"));
    };
    let auth_end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..auth_end];
    if authority.contains(&b'@') {
        // RFC 9110 §4.2.4: userinfo in an http(s) URI is to be treated as an error.
        return Err(bad("userinfo in request target"));
    }
    let (host, _port) = split_host_port(authority)?;
    if host.is_empty() {
        // RFC 9110 §4.2.1: an http URI with an empty host is invalid.
        return Err(bad("absolute-form target with an empty host"));
    }
    let path = &rest[auth_end..];
    let target: Cow<'_, [u8]> = match path.first() {
        Some(b'/') => Cow::Borrowed(path),
        // §3.2.4: `OPTIONS http://host` stands for the server as a whole.
        None if method == Method::Options => Cow::Borrowed(b"*"),
        None => Cow::Borrowed(b"/"),
        // `http://host?q`: the path is empty, which RFC 3986 §3.3
        // (path-abempty) allows and RFC 9110 §4.2.3 reads as `/`, so the
        // origin-form is `/?q` (the one target that is not a slice of
        // the request line: rare, hence an allocation rather than a copy
        // of every other target).
        Some(b'?') => Cow::Owned([&b"/"[..], path].concat()),
        // (`#` is refused with the rest of the request line already.)
        Some(_) => return Err(bad("absolute-form target with a fragment")),
    };
    Ok(Target {
        target,
        authority_host: Some(authority),
    })
}

/// What a byte is in a host: [`REG`] if it may appear in a reg-name
/// (RFC 3986 §3.2.2: unreserved and sub-delims) and is not a dot, [`DOT`],
/// [`COLON`] (the port follows), else 0; as a table: every request's
/// Host goes through it. Percent-encoding is refused on purpose: a host
/// is used to pick a virtual host, and `%2e%2e` or `%2f` have no
/// business there.
static HOST_BYTE: [u8; 256] = {
    let reg = alnum_and(b"-_~!$&'()*+,;=");
    let mut table = [0; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = reg[i] as u8 * REG;
        i += 1;
    }
    table[b'.' as usize] = DOT;
    table[b':' as usize] = COLON;
    table
};
const REG: u8 = 1;
const DOT: u8 = 2;
const COLON: u8 = 3;

/// Splits and checks `uri-host [":" port]`; the host may be empty (the
/// caller decides whether that is allowed).
pub(super) fn split_host_port(v: &[u8]) -> Result<(&[u8], Option<&[u8]>), ParseError> {
    let (host, after) = if v.first() == Some(&b'[') {
        // IP-literal: only IPv6 addresses (with an embedded IPv4 tail);
        // IPvFuture is refused.
        let close = v.iter().position(|&b| b == b']');
        let Some(close) = close else {
            return Err(bad("unterminated IPv6 literal in host"));
        };
        let inner = &v[1..close];
        let ipv6 = inner.contains(&b':')
            && inner
                .iter()
                .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
        if !ipv6 {
            return Err(bad("invalid IPv6 literal in host"));
        }
        (&v[..=close], &v[close + 1..])
    } else {
        // One pass: where the host ends, its bytes, and no `..` in it.
        let mut end = v.len();
        let (mut dot, mut dots) = (false, false);
        for (i, &b) in v.iter().enumerate() {
            match HOST_BYTE[b as usize] {
                REG => dot = false,
                DOT => {
                    dots |= dot;
                    dot = true;
                }
                COLON => {
                    end = i;
                    break;
                }
                _ => return Err(bad("invalid character in host")),
            }
        }
        if dots {
            return Err(bad("'..' in host"));
        }
        (&v[..end], &v[end..])
    };
    let port = match after {
        [] => None,
        [b':', port @ ..] => {
            if port.len() > 5 || !port.iter().all(u8::is_ascii_digit) {
                return Err(bad("invalid port in host"));
            }
            if host.is_empty() {
                return Err(bad("port without a host"));
            }
            Some(port)
        }
        _ => return Err(bad("invalid character after host")),
    };
    Ok((host, port))
}
