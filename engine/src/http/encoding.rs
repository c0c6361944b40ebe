//! Content-coding negotiation (`Accept-Encoding`, RFC 9110 §12.5.3).

use super::grammar::trim_ows;
use crate::ascii::IgnoreCase;

/// The weights an `Accept-Encoding` value gives each of `offered`, and
/// `identity`, in thousandths (RFC 9110 §12.4.2): 0 refuses a coding. A
/// coding not listed takes the weight of `*`, if present (else 0);
/// `identity` takes its own or that of `*`, and `None` when the value
/// names neither (it is acceptable then, §12.5.3, but not preferred).
/// A malformed weight counts as 0, which can only ever refuse a coding.
pub fn weights<const N: usize>(header: &[u8], offered: [&[u8]; N]) -> ([u16; N], Option<u16>) {
    let mut listed = [None; N];
    let mut identity = None;
    let mut star = None;
    for item in header.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let name = trim_ows(parts.next().unwrap_or_default());
        if name.is_empty() {
            continue;
        }
        // RFC 9110 §8.4.1.3: a recipient SHOULD take "x-gzip" for "gzip".
        let name = match name.eq_ignore_case(b"x-gzip") {
            true => &b"gzip"[..],
            false => name,
        };
        let mut q = 1000;
        for param in parts {
            let param = trim_ows(param);
            if param.len() >= 2 && param[..2].eq_ignore_case(b"q=") {
                q = qvalue(trim_ows(&param[2..])).unwrap_or(0);
            }
        }
        if name == b"*" {
            star = Some(q);
        } else if name.eq_ignore_case(b"identity") {
            identity = Some(q);
        } else if let Some(i) = offered.iter().position(|c| name.eq_ignore_case(c)) {
            // (The first mention counts, as in `accepts`.)
            listed[i] = listed[i].or(Some(q));
        }
    }
    let codings = listed.map(|q| q.or(star).unwrap_or(0));
    (codings, identity.or(star))
}

/// A qvalue in thousandths: `0`, `0.5`, `1`, `1.000` (RFC 9110 §12.4.2).
fn qvalue(q: &[u8]) -> Option<u16> {
    let (int, frac) = match q.iter().position(|&b| b == b'.') {
        Some(dot) => (&q[..dot], &q[dot + 1..]),
        None => (q, &b""[..]),
    };
    if int.len() != 1 || frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match int[0] {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{qvalue, weights};

    #[test]
    fn weights_follow_q_values_star_and_identity() {
        let offer = [&b"br"[..], b"zstd", b"gzip"];
        assert_eq!(weights(b"gzip, br", offer), ([1000, 0, 1000], None));
        assert_eq!(
            weights(b"gzip;q=0.5, br;q=0.8, zstd;q=0", offer),
            ([800, 0, 500], None)
        );
        assert_eq!(weights(b"*", offer), ([1000; 3], Some(1000)));
        assert_eq!(weights(b"*;q=0", offer), ([0; 3], Some(0)));
        assert_eq!(weights(b"*;q=0, identity", offer), ([0; 3], Some(1000)));
        assert_eq!(
            weights(b"br;q=0, *;q=0.3", offer),
            ([0, 300, 300], Some(300))
        );
        assert_eq!(
            weights(b"identity;q=0, GZIP", offer),
            ([0, 0, 1000], Some(0))
        );
        assert_eq!(weights(b"", offer), ([0; 3], None));
        // x-gzip is gzip (RFC 9110 §8.4.1.3); the first mention counts.
        assert_eq!(weights(b"X-GZIP;q=0.5", offer), ([0, 0, 500], None));
        assert_eq!(weights(b"gzip;q=0, x-gzip", offer), ([0, 0, 0], None));
        // A malformed weight refuses rather than accepts.
        assert_eq!(weights(b"gzip;q=2, br;q=x", offer), ([0, 0, 0], None));
    }

    #[test]
    fn qvalues() {
        assert_eq!(qvalue(b"1"), Some(1000));
        assert_eq!(qvalue(b"1.000"), Some(1000));
        assert_eq!(qvalue(b"1.001"), None);
        assert_eq!(qvalue(b"0.5"), Some(500));
        assert_eq!(qvalue(b"0.125"), Some(125));
        assert_eq!(qvalue(b"0."), Some(0));
        assert_eq!(qvalue(b"0.1234"), None);
        assert_eq!(qvalue(b".5"), None);
    }
}
