//! Whether an HTTP/1.1 request's `Upgrade: h2c` (RFC 7540 §3.2) may be
//! taken, and the client's SETTINGS it carries. Sans-IO: the request as
//! read, and what the caller knows of the connection and the server.

use crate::ascii::IgnoreCase;
use base64ct::{Base64UrlUnpadded, Encoding};

use crate::http::grammar::has_token;
use crate::http::parse::BodyFraming;
use crate::http::request::{Field, OwnedRequest};
use crate::http::Version;

/// The SETTINGS payload of `req`, an `Upgrade: h2c` request that the
/// connection may take: `cleartext`, the server speaks h2c (`[http2]
/// cleartext`); not `tls`; not `draining` (a stop or reload under way).
/// The request is HTTP/1.1, in origin form, with no body; `h2c` is one
/// of its `Upgrade` tokens; `Connection` names `Upgrade` and
/// `HTTP2-Settings`, which it holds once, in base64url (RFC 7540
/// §3.2.1; `=` padding is tolerated). `None`: the upgrade is ignored and
/// the request answered over HTTP/1.1 (RFC 9110 §7.8). Whether the
/// payload is a valid SETTINGS frame's is the protocol's to say.
pub fn settings(req: &OwnedRequest, cleartext: bool, tls: bool, draining: bool) -> Option<Vec<u8>> {
    if !cleartext
        || tls
        || draining
        || req.version() != Version::Http11
        || req.body() != BodyFraming::None
        || !req.original_target().starts_with(b"/")
        || !req
            .field(Field::Upgrade)
            .is_some_and(|v| has_token(v, b"h2c"))
    {
        return None;
    }
    let named = |token: &[u8]| {
        req.headers()
            .any(|h| h.name.eq_ignore_case(b"connection") && has_token(h.value, token))
    };
    if !named(b"upgrade") || !named(b"http2-settings") {
        return None;
    }
    let mut values = req
        .headers()
        .filter(|h| h.name.eq_ignore_case(b"http2-settings"));
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let value = value.value;
    let value = &value[..value.iter().rposition(|&b| b != b'=').map_or(0, |i| i + 1)];
    // (32 settings are many more than the six RFC 9113 defines.)
    let mut decoded = [0u8; 32 * 6];
    let n = Base64UrlUnpadded::decode(value, &mut decoded).ok()?.len();
    Some(decoded[..n].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::parse::Limits;

    /// `GET /index.html` asking for h2c with SETTINGS_INITIAL_WINDOW_SIZE
    /// = 100, as a client sends it.
    const ASK: &str = "GET /index.html HTTP/1.1\r\nHost: x\r\n\
        Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAQAAABk\r\n\r\n";

    /// Its payload.
    const WINDOW_100: &[u8] = &[0, 4, 0, 0, 0, 100];

    fn read(head: &str) -> OwnedRequest {
        let limits = Limits {
            max_request_line: 8192,
            max_head: 8192,
            max_headers: 100,
        };
        let mut req = OwnedRequest::default();
        let read = req.parse(head.as_bytes(), &limits);
        assert!(matches!(read, Ok(Some(_))), "{head:?}: {read:?}");
        req
    }

    /// [`settings`] of `head` on a plain connection of a server that
    /// speaks h2c and is not draining.
    fn plain(head: &str) -> Option<Vec<u8>> {
        settings(&read(head), true, false, false)
    }

    /// [`ASK`] with `from` replaced by `to`.
    fn ask_with(from: &str, to: &str) -> String {
        assert!(ASK.contains(from), "{from:?}");
        ASK.replacen(from, to, 1)
    }

    #[test]
    fn a_clients_upgrade_gives_its_settings() {
        assert_eq!(plain(ASK).as_deref(), Some(WINDOW_100));
        let taken = [
            // Padding, which base64url in HTTP2-Settings leaves out.
            ("AAQAAABk", "AAQAAA==", &[0u8, 4, 0, 0][..]),
            // No settings at all.
            ("HTTP2-Settings: AAQAAABk", "HTTP2-Settings: ", &[]),
            // Not six bytes a setting: h2::Conn::upgrade refuses that.
            ("AAQAAABk", "AAQA", &[0, 4, 0]),
            // h2c anywhere in Upgrade's list, tokens in any case, and
            // Connection in two lines.
            ("Upgrade: h2c", "Upgrade: websocket, H2C", WINDOW_100),
            (
                "Connection: Upgrade, HTTP2-Settings",
                "Connection: keep-alive, upgrade\r\nConnection: http2-settings",
                WINDOW_100,
            ),
            ("GET /index.html", "HEAD /index.html?a=1", WINDOW_100),
            // (Absolute form is read as origin form, RFC 9112 §3.2.2.)
            ("GET /index.html", "GET http://x/index.html", WINDOW_100),
        ];
        for (from, to, payload) in taken {
            assert_eq!(
                plain(&ask_with(from, to)).as_deref(),
                Some(payload),
                "{to:?}"
            );
        }
    }

    #[test]
    fn no_h2c_here_no_upgrade() {
        let req = read(ASK);
        assert_eq!(settings(&req, false, false, false), None, "h2c off");
        assert_eq!(settings(&req, true, true, false), None, "TLS");
        assert_eq!(settings(&req, true, false, true), None, "draining");
    }

    #[test]
    fn a_request_that_cannot_switch_is_not_upgraded() {
        let refused = [
            // Not HTTP/1.1.
            ("HTTP/1.1", "HTTP/1.0"),
            // A body (RFC 7540 §3.2 would have it sent before the switch).
            ("Host: x", "Host: x\r\nContent-Length: 3"),
            ("Host: x", "Host: x\r\nTransfer-Encoding: chunked"),
            // Not in origin form.
            ("GET /index.html", "OPTIONS *"),
            ("GET /index.html", "CONNECT x:80"),
        ];
        for (from, to) in refused {
            assert_eq!(plain(&ask_with(from, to)), None, "{to:?}");
        }
    }

    #[test]
    fn an_ill_formed_upgrade_is_ignored() {
        let too_many = "AAQAAABk".repeat(33);
        let refused = [
            // Not h2c.
            ("Upgrade: h2c\r\n", ""),
            ("Upgrade: h2c", "Upgrade: websocket"),
            ("Upgrade: h2c", "Upgrade: h2"),
            ("Upgrade: h2c", "Upgrade: h2c/1"),
            // Connection does not name Upgrade, or HTTP2-Settings.
            (
                "Connection: Upgrade, HTTP2-Settings",
                "Connection: HTTP2-Settings",
            ),
            ("Connection: Upgrade, HTTP2-Settings", "Connection: Upgrade"),
            // HTTP2-Settings missing, twice, not base64url, too long.
            ("HTTP2-Settings: AAQAAABk\r\n", ""),
            (
                "HTTP2-Settings: AAQAAABk",
                "HTTP2-Settings: AAQAAABk\r\nHTTP2-Settings: AAQAAABk",
            ),
            ("AAQAAABk", "not base64!"),
            ("AAQAAABk", "AAQAAAB+"),
            ("AAQAAABk", &too_many),
        ];
        for (from, to) in refused {
            assert_eq!(plain(&ask_with(from, to)), None, "{to:?}");
        }
        // 32 settings are not too many.
        let most = "AAQAAABk".repeat(32);
        assert_eq!(
            plain(&ask_with("AAQAAABk", &most)).map(|p| p.len()),
            Some(192)
        );
    }
}
