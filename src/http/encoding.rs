//! Content-coding negotiation (`Accept-Encoding`, RFC 9110 §12.5.3).

use super::grammar::trim_ows;

/// Whether an `Accept-Encoding` value makes `coding` acceptable: listed
/// with a non-zero weight, or matched by `*` with a non-zero weight while
/// not listed itself.
pub fn accepts(header: &[u8], coding: &[u8]) -> bool {
    let mut star = false;
    for item in header.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let name = trim_ows(parts.next().unwrap_or_default());
        let mut q_zero = false;
        for param in parts {
            let param = trim_ows(param);
            if param.len() >= 2 && param[..2].eq_ignore_ascii_case(b"q=") {
                q_zero = is_zero_weight(trim_ows(&param[2..]));
            }
        }
        if name.eq_ignore_ascii_case(coding) {
            return !q_zero;
        }
        if name == b"*" {
            star = !q_zero;
        }
    }
    star
}

/// `0`, `0.`, `0.0`, `0.00`, `0.000` (RFC 9110 §12.4.2 qvalue syntax).
fn is_zero_weight(q: &[u8]) -> bool {
    match q.split_first() {
        Some((b'0', rest)) => {
            rest.is_empty() || (rest[0] == b'.' && rest[1..].iter().all(|&b| b == b'0'))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::accepts;

    #[test]
    fn listed_codings_and_weights() {
        assert!(accepts(b"gzip, deflate, br", b"br"));
        assert!(accepts(b"gzip, deflate, br", b"gzip"));
        assert!(!accepts(b"gzip, deflate", b"br"));
        assert!(accepts(b"GZIP;q=0.5", b"gzip"));
        assert!(!accepts(b"gzip;q=0", b"gzip"));
        assert!(!accepts(b"gzip; q=0.000", b"gzip"));
        assert!(accepts(b"gzip;q=0.001", b"gzip"));
        assert!(!accepts(b"", b"gzip"));
        assert!(!accepts(b"identity", b"gzip"));
    }

    #[test]
    fn star_matches_unlisted_only() {
        assert!(accepts(b"*", b"br"));
        assert!(!accepts(b"*;q=0", b"br"));
        assert!(!accepts(b"*, br;q=0", b"br"));
        assert!(accepts(b"br;q=0, *", b"gzip"));
    }
}
