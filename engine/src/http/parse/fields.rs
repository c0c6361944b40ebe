//! The header fields the parser itself interprets: framing, Host,
//! Connection and Expect.

use super::target::split_host_port;
use super::{bad, Header, ParseError};
use crate::http::grammar::{is_tchar, trim_ows};
use crate::http::Version;

/// Iterates the non-empty, trimmed elements of a comma list. Empty elements
/// are skipped as RFC 9110 §5.6.1.2 asks of recipients.
pub(super) fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// What the header fields said about framing and connection handling.
#[derive(Default)]
pub(super) struct Semantics<'a> {
    pub(super) host_header: Option<&'a [u8]>,
    pub(super) content_length: Option<u64>,
    pub(super) te_present: bool,
    pub(super) te_chunked: bool,
    pub(super) te_other: bool,
    pub(super) conn_close: bool,
    pub(super) conn_keep_alive: bool,
    pub(super) expect_continue: bool,
    pub(super) expect_other: bool,
}

impl<'a> Semantics<'a> {
    /// Takes in one field. Checks that can be made on a single field are
    /// made here, so a bad field fails before the head is complete.
    pub(super) fn apply(&mut self, h: &Header<'a>, version: Version) -> Result<(), ParseError> {
        let name = h.name;
        // Every request's fields pass here: the standard library's inlined
        // compare (against a literal of a known length), not the engine's
        // out-of-line `IgnoreCase` (crate::ascii) made for cold paths.
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        match name.len() {
            4 if is("host") => self.host(h.value),
            6 if is("expect") => {
                if h.value.eq_ignore_ascii_case(b"100-continue") {
                    self.expect_continue = true;
                } else {
                    self.expect_other = true;
                }
                Ok(())
            }
            10 if is("connection") => {
                for token in list_elements(h.value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        self.conn_close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        self.conn_keep_alive = true;
                    }
                }
                Ok(())
            }
            14 if is("content-length") => self.content_length(h.value),
            17 if is("transfer-encoding") => self.transfer_encoding(h.value, version),
            _ => Ok(()),
        }
    }

    /// Takes in one field of a response head (see
    /// [`parse_response`](super::response::parse_response)): framing and
    /// Connection, checked as in a request.
    pub(super) fn apply_response(
        &mut self,
        h: &Header<'a>,
        version: Version,
    ) -> Result<(), ParseError> {
        let is = |n: &str| h.name.eq_ignore_ascii_case(n.as_bytes());
        if is("connection") {
            for token in list_elements(h.value) {
                self.conn_close |= token.eq_ignore_ascii_case(b"close");
                self.conn_keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if is("content-length") {
            self.content_length(h.value)?;
        } else if is("transfer-encoding") {
            self.transfer_encoding(h.value, version)?;
        }
        Ok(())
    }

    fn host(&mut self, value: &'a [u8]) -> Result<(), ParseError> {
        // RFC 9112 §3.2: more than one Host field → 400.
        if self.host_header.is_some() {
            return Err(bad("more than one Host header"));
        }
        split_host_port(value)?;
        self.host_header = Some(value);
        Ok(())
    }

    fn content_length(&mut self, value: &[u8]) -> Result<(), ParseError> {
        // Even identical duplicates are refused: a single accepted form
        // leaves nothing for a front proxy to interpret differently.
        if self.content_length.is_some() {
            return Err(bad("more than one Content-Length"));
        }
        if self.te_present {
            return Err(bad("both Content-Length and Transfer-Encoding"));
        }
        if value.is_empty() {
            return Err(bad("empty Content-Length"));
        }
        let mut n: u64 = 0;
        for &b in value {
            if !b.is_ascii_digit() {
                return Err(bad("invalid Content-Length"));
            }
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(b - b'0')))
                .ok_or(bad("Content-Length overflow"))?;
        }
        self.content_length = Some(n);
        Ok(())
    }

    fn transfer_encoding(&mut self, value: &[u8], version: Version) -> Result<(), ParseError> {
        // RFC 9112 §6.3 item 3: both framings at once is a smuggling
        // attempt; §6.1: a 1.0 recipient cannot have been sent chunked.
        if self.content_length.is_some() {
            return Err(bad("both Content-Length and Transfer-Encoding"));
        }
        if version == Version::Http10 {
            return Err(bad("Transfer-Encoding in an HTTP/1.0 request"));
        }
        self.te_present = true;
        // Several TE lines form one list (RFC 9110 §5.3).
        for element in list_elements(value) {
            let (name, params) = match element.iter().position(|&b| b == b';') {
                Some(i) => (trim_ows(&element[..i]), true),
                None => (element, false),
            };
            if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
                return Err(bad("invalid transfer coding"));
            }
            // §6.3: chunked must be the final coding and appear once.
            if self.te_chunked {
                return Err(bad("transfer coding after chunked"));
            }
            if name.eq_ignore_ascii_case(b"chunked") {
                if params {
                    return Err(bad("parameters on chunked"));
                }
                self.te_chunked = true;
            } else {
                self.te_other = true;
            }
        }
        Ok(())
    }
}
