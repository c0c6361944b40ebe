//! How a connection opens: HTTP/1.x, or HTTP/2 chosen by ALPN (RFC 9113
//! §3.2) or by prior knowledge, the preface as its first bytes (§3.3).
//! Sans-IO: the caller says what it knows of the connection, and gives
//! the bytes read so far.

use crate::h2::PREFACE;

/// Length of the preface's first line, `PRI * HTTP/2.0`.
const PREFACE_LINE: usize = 14;

/// What the first bytes of a connection say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// HTTP/1.x: go on as always.
    Http1,
    /// Maybe HTTP/2: wait for more bytes (or for the TLS handshake).
    Partial,
    /// HTTP/2.
    Http2,
}

/// How a connection opens, given `input`, its first bytes: `alpn_h2`,
/// its client chose `h2` by ALPN (`handshaking`: the TLS handshake is
/// not done yet); `cleartext`, the server speaks h2c (`[http2]
/// cleartext`); `tls`, the connection is TLS; `fresh`, no request has
/// been read on it yet, nor begun beyond its head.
pub fn opening(
    alpn_h2: bool,
    handshaking: bool,
    cleartext: bool,
    tls: bool,
    fresh: bool,
    input: &[u8],
) -> Opening {
    if alpn_h2 {
        // ALPN said h2 (RFC 9113 §3.2): HTTP/2 from the first byte, the
        // client's preface included, which the protocol checks; our
        // SETTINGS go once the handshake is done (nothing is written
        // before it).
        return match handshaking {
            true => Opening::Partial,
            false => Opening::Http2,
        };
    }
    if !prior_knowledge(cleartext, tls, fresh) || input.is_empty() {
        return Opening::Http1;
    }
    // Bytes that begin with the preface's request line are HTTP/2's (no
    // HTTP/1.x request is `PRI * HTTP/2.0`): a preface that goes wrong
    // after it fails as HTTP/2 (RFC 9113 §3.4), not as HTTP/1.1.
    let line = PREFACE_LINE.min(input.len());
    let n = input.len().min(PREFACE.len());
    match (input[..n] == PREFACE[..n], input[..line] == PREFACE[..line]) {
        (true, _) if n == PREFACE.len() => Opening::Http2,
        (_, true) if line == PREFACE_LINE => Opening::Http2,
        (true, _) => Opening::Partial,
        _ => Opening::Http1,
    }
}

/// Whether a plain connection may still open as h2c with prior
/// knowledge (arguments as for [`opening`]). If so, first bytes that
/// are neither an HTTP/1.x request line (their version does not even
/// begin like `HTTP/`) nor the preface are a failed preface: a
/// connection error (RFC 9113 §3.4), which closes the connection
/// without a word (the GOAWAY "MAY be omitted": the peer is not using
/// HTTP/2), since no HTTP/1.x client is there to read a 400.
pub fn prior_knowledge(cleartext: bool, tls: bool, fresh: bool) -> bool {
    cleartext && !tls && fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a fresh plain connection of a server that speaks h2c opens
    /// as, with `input` read.
    fn plain(input: &[u8]) -> Opening {
        opening(false, false, true, false, true, input)
    }

    #[test]
    fn alpn_h2_is_http2_once_the_handshake_is_done() {
        for input in [&b""[..], PREFACE, b"GET / HTTP/1.1\r\n\r\n"] {
            // Whatever the bytes, h2c or not, TLS or not, fresh or not.
            for (cleartext, tls, fresh) in [(false, true, false), (true, false, true)] {
                assert_eq!(
                    opening(true, true, cleartext, tls, fresh, input),
                    Opening::Partial
                );
                assert_eq!(
                    opening(true, false, cleartext, tls, fresh, input),
                    Opening::Http2
                );
            }
        }
    }

    #[test]
    fn the_preface_or_its_first_line_is_http2() {
        let mut more = PREFACE.to_vec();
        more.extend_from_slice(b"\0\0\0\x04\0\0\0\0\0");
        for input in [
            PREFACE,
            &more[..],
            b"PRI * HTTP/2.0",
            b"PRI * HTTP/2.0\r\n",
            // It goes wrong after the line: HTTP/2 fails it (§3.4).
            b"PRI * HTTP/2.0\r\nGET / HTTP/1.1\r\n",
        ] {
            assert_eq!(plain(input), Opening::Http2, "{input:?}");
        }
    }

    #[test]
    fn a_prefix_of_the_preface_waits() {
        for n in 1..PREFACE_LINE {
            assert_eq!(plain(&PREFACE[..n]), Opening::Partial, "{n}");
        }
    }

    #[test]
    fn http1_is_http1() {
        for input in [
            &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            b"POST / HTTP/1.1\r\n",
            b"PO",
            b"PRI / HTTP/1.1\r\n",
            b"PRI * HTTP/1.1\r\n",
            b"\r\n",
        ] {
            assert_eq!(plain(input), Opening::Http1, "{input:?}");
        }
    }

    #[test]
    fn no_prior_knowledge_is_http1() {
        // h2c off, TLS, a connection that has served or is reading a
        // request: the preface is an HTTP/1.x mistake there.
        for (cleartext, tls, fresh) in [
            (false, false, true),
            (true, true, true),
            (true, false, false),
        ] {
            assert!(!prior_knowledge(cleartext, tls, fresh));
            for input in [PREFACE, &PREFACE[..3]] {
                assert_eq!(
                    opening(false, false, cleartext, tls, fresh, input),
                    Opening::Http1
                );
            }
        }
        assert!(prior_knowledge(true, false, true));
    }

    #[test]
    fn nothing_read_is_http1() {
        assert_eq!(plain(b""), Opening::Http1);
    }
}
