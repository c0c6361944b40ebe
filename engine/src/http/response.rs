//! Response heads and body framing for HTTP/1.1, sans-IO: a status line
//! and header block written into a buffer, the one [`Framing`] type that
//! says how a body is delimited on the wire, and the [`Encoder`] that
//! frames body bytes accordingly (the one chunk encoder included).
//!
//! Nothing here decides *whether* a connection stays open or *which*
//! framing a response gets: the connection's protocol does, once per
//! response, and hands the outcome in.

use super::grammar::push_hex;
use super::push_u64;

/// The interim response that tells a client to send the body it
/// announced with `Expect: 100-continue` (RFC 9110 §10.1.1, §15.2.1).
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The last chunk and the empty trailer section that end a chunked body
/// (RFC 9112 §7.1).
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// How a response body is delimited on the wire (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body at all (1xx, 204, 304): no length header either.
    Bodiless,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked` (HTTP/1.1 streams of unknown length).
    Chunked,
    /// Delimited by closing the connection (HTTP/1.0 streams).
    Close,
}

/// The `Connection` field a response carries (RFC 9112 §9.3, §9.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    /// HTTP/1.1 keep-alive: the default, nothing to say.
    Default,
    /// HTTP/1.0 keep-alive, which must be said.
    KeepAlive,
    /// The connection closes after this response.
    Close,
}

impl Connection {
    /// The field for a response to a request of `version`, the
    /// connection staying open (`keep`) or not.
    pub fn new(keep: bool, version: super::Version) -> Connection {
        match (keep, version) {
            (false, _) => Connection::Close,
            (true, super::Version::Http10) => Connection::KeepAlive,
            (true, _) => Connection::Default,
        }
    }
}

/// What the server writes into every head, besides the handler's lines.
#[derive(Debug, Clone, Copy)]
pub struct Stamp<'a> {
    /// The `Server` value (`server_header`); empty: no `Server` field.
    pub server: &'a [u8],
    /// The `Date` value, formatted once a second; empty only for an
    /// answer that brings its own (see [`crate::handlers::pipe::Own`]).
    pub date: &'a [u8],
    /// The `Alt-Svc` value (RFC 7838) of an answer over HTTPS (TCP)
    /// where HTTP/3 is on (`h3=":PORT"; ma=86400`); empty: none.
    #[cfg(feature = "http3")]
    pub alt_svc: &'a [u8],
}

/// A response head to write.
#[derive(Debug, Clone, Copy)]
pub struct Head<'a> {
    /// The status code.
    pub status: u16,
    /// The reason phrase.
    pub reason: &'a [u8],
    /// The handler's header lines (`Name: value\r\n` each).
    pub headers: &'a [u8],
    /// How the body is delimited (decides the framing field).
    pub framing: Framing,
    /// The `Connection` field.
    pub connection: Connection,
}

impl Head<'_> {
    /// Appends the status line and head to `buf`: `Server`, `Date`, the
    /// handler's lines, the framing field, `Connection`, the empty line.
    pub fn write(&self, stamp: &Stamp, buf: &mut Vec<u8>) {
        // One reservation for all of it: the fields' names, the digits
        // and `Connection: keep-alive` take less than 96 bytes.
        buf.reserve(
            96 + self.reason.len() + stamp.server.len() + stamp.date.len() + self.headers.len(),
        );
        match self.status {
            // (A status is three digits: RFC 9110 §15.)
            100..=999 => {
                let mut line = *b"HTTP/1.1 000 ";
                line[9] += (self.status / 100) as u8;
                line[10] += (self.status / 10 % 10) as u8;
                line[11] += (self.status % 10) as u8;
                buf.extend_from_slice(&line);
            }
            _ => {
                buf.extend_from_slice(b"HTTP/1.1 ");
                push_u64(buf, u64::from(self.status));
                buf.push(b' ');
            }
        }
        buf.extend_from_slice(self.reason);
        buf.extend_from_slice(b"\r\n");
        // `server_header = ""` hides the software name entirely.
        if !stamp.server.is_empty() {
            buf.extend_from_slice(b"Server: ");
            buf.extend_from_slice(stamp.server);
            buf.extend_from_slice(b"\r\n");
        }
        if !stamp.date.is_empty() {
            buf.extend_from_slice(b"Date: ");
            buf.extend_from_slice(stamp.date);
            buf.extend_from_slice(b"\r\n");
        }
        #[cfg(feature = "http3")]
        if !stamp.alt_svc.is_empty() {
            buf.extend_from_slice(b"Alt-Svc: ");
            buf.extend_from_slice(stamp.alt_svc);
            buf.extend_from_slice(b"\r\n");
        }
        buf.extend_from_slice(self.headers);
        match self.framing {
            Framing::Bodiless | Framing::Close => {}
            Framing::Length(n) => {
                buf.extend_from_slice(b"Content-Length: ");
                push_u64(buf, n);
                buf.extend_from_slice(b"\r\n");
            }
            Framing::Chunked => buf.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        }
        match self.connection {
            Connection::Default => {}
            Connection::KeepAlive => buf.extend_from_slice(b"Connection: keep-alive\r\n"),
            Connection::Close => buf.extend_from_slice(b"Connection: close\r\n"),
        }
        buf.extend_from_slice(b"\r\n");
    }
}

/// Appends `data` as one chunk (RFC 9112 §7.1: chunk-size in hex, CRLF,
/// data, CRLF). Empty data writes nothing: an empty chunk would end the body.
pub fn push_chunk(buf: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    push_hex(buf, data.len() as u64);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(data);
    buf.extend_from_slice(b"\r\n");
}

/// Frames the bytes of a body that arrives in pieces (a stream whose
/// head has been written) according to its [`Framing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoder {
    /// Nothing of the body is sent (a HEAD request, a bodiless status).
    Discard,
    /// At most this many more bytes are sent; anything beyond is dropped.
    Length(u64),
    /// Each piece becomes a chunk; [`Encoder::finish`] adds the last one.
    Chunked,
    /// Bytes pass as they come; closing the connection ends the body.
    Close,
}

impl Encoder {
    /// The encoder for a body framed by `framing`; `head_only` (a HEAD
    /// request) sends none of it, whatever the framing says.
    pub fn new(framing: Framing, head_only: bool) -> Encoder {
        match framing {
            _ if head_only => Encoder::Discard,
            Framing::Bodiless => Encoder::Discard,
            Framing::Length(n) => Encoder::Length(n),
            Framing::Chunked => Encoder::Chunked,
            Framing::Close => Encoder::Close,
        }
    }

    /// Appends `data`, framed, to `buf`.
    pub fn encode(&mut self, data: &[u8], buf: &mut Vec<u8>) {
        match self {
            Encoder::Discard => {}
            Encoder::Close => buf.extend_from_slice(data),
            Encoder::Length(left) => {
                let n = (data.len() as u64).min(*left) as usize;
                buf.extend_from_slice(&data[..n]);
                *left -= n as u64;
            }
            Encoder::Chunked => push_chunk(buf, data),
        }
    }

    /// Ends the body: appends the last chunk of a chunked one. Returns
    /// how many bytes a `Content-Length` promised and did not get (0
    /// when the body is complete): such a response is cut short.
    pub fn finish(&mut self, buf: &mut Vec<u8>) -> u64 {
        self.finish_with(b"", buf)
    }

    /// As [`Encoder::finish`], a chunked body's last chunk carrying
    /// `trailers` (field lines, `Name: value` CRLF each; RFC 9112
    /// §7.1.2). A body framed otherwise has no place for them: they are
    /// dropped.
    pub fn finish_with(&mut self, trailers: &[u8], buf: &mut Vec<u8>) -> u64 {
        match *self {
            Encoder::Chunked if trailers.is_empty() => {
                buf.extend_from_slice(LAST_CHUNK);
                0
            }
            Encoder::Chunked => {
                for part in [&b"0\r\n"[..], trailers, b"\r\n"] {
                    buf.extend_from_slice(part);
                }
                0
            }
            Encoder::Length(left) => left,
            Encoder::Discard | Encoder::Close => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Version;

    #[test]
    fn trailers_end_a_chunked_body_and_have_no_place_in_others() {
        let trailers = b"grpc-status: 0\r\n";
        let mut buf = Vec::new();
        assert_eq!(Encoder::Chunked.finish_with(trailers, &mut buf), 0);
        assert_eq!(buf, b"0\r\ngrpc-status: 0\r\n\r\n");
        for (mut e, missing) in [
            (Encoder::Length(2), 2),
            (Encoder::Close, 0),
            (Encoder::Discard, 0),
        ] {
            let mut buf = Vec::new();
            assert_eq!(e.finish_with(trailers, &mut buf), missing);
            assert!(buf.is_empty(), "{e:?}");
        }
    }

    fn head(framing: Framing, connection: Connection, server: &[u8]) -> String {
        let mut buf = Vec::new();
        let h = Head {
            status: 404,
            reason: b"Not Found",
            headers: b"X-A: b\r\n",
            framing,
            connection,
        };
        h.write(
            &Stamp {
                server,
                date: b"<date>",
                #[cfg(feature = "http3")]
                alt_svc: b"",
            },
            &mut buf,
        );
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn heads_are_written_in_order() {
        assert_eq!(
            head(Framing::Length(12), Connection::Default, b"brisk"),
            "HTTP/1.1 404 Not Found\r\nServer: brisk\r\nDate: <date>\r\nX-A: b\r\nContent-Length: 12\r\n\r\n"
        );
        assert_eq!(
            head(Framing::Chunked, Connection::KeepAlive, b""),
            "HTTP/1.1 404 Not Found\r\nDate: <date>\r\nX-A: b\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        );
        for framing in [Framing::Bodiless, Framing::Close] {
            assert_eq!(
                head(framing, Connection::Close, b"x"),
                "HTTP/1.1 404 Not Found\r\nServer: x\r\nDate: <date>\r\nX-A: b\r\nConnection: close\r\n\r\n"
            );
        }
    }

    #[test]
    fn the_connection_field_follows_the_version() {
        assert_eq!(Connection::new(true, Version::Http11), Connection::Default);
        assert_eq!(
            Connection::new(true, Version::Http10),
            Connection::KeepAlive
        );
        assert_eq!(Connection::new(false, Version::Http11), Connection::Close);
        assert_eq!(Connection::new(false, Version::Http10), Connection::Close);
    }

    #[test]
    fn chunks_carry_their_size_in_hex() {
        let mut buf = Vec::new();
        push_chunk(&mut buf, b"");
        assert!(buf.is_empty(), "an empty chunk would end the body");
        push_chunk(&mut buf, b"hello");
        push_chunk(&mut buf, &[b'x'; 26]);
        assert_eq!(
            buf,
            [&b"5\r\nhello\r\n1a\r\n"[..], &[b'x'; 26], b"\r\n"].concat()
        );
        let mut big = Vec::new();
        push_chunk(&mut big, &vec![0; 0x10000]);
        assert!(big.starts_with(b"10000\r\n"));
    }

    #[test]
    fn encoders_frame_and_finish() {
        let mut buf = Vec::new();
        let mut e = Encoder::new(Framing::Length(5), false);
        e.encode(b"abc", &mut buf);
        e.encode(b"defg", &mut buf);
        assert_eq!(buf, b"abcde", "nothing beyond the length");
        assert_eq!(e.finish(&mut buf), 0);

        let mut short = Encoder::new(Framing::Length(5), false);
        short.encode(b"ab", &mut buf);
        assert_eq!(short.finish(&mut buf), 3, "three bytes missing");

        let mut buf = Vec::new();
        let mut e = Encoder::new(Framing::Chunked, false);
        e.encode(b"ab", &mut buf);
        e.encode(b"", &mut buf);
        assert_eq!(e.finish(&mut buf), 0);
        assert_eq!(buf, b"2\r\nab\r\n0\r\n\r\n");

        let mut buf = Vec::new();
        for (framing, head_only) in [
            (Framing::Chunked, true),
            (Framing::Length(3), true),
            (Framing::Bodiless, false),
        ] {
            let mut e = Encoder::new(framing, head_only);
            e.encode(b"abc", &mut buf);
            assert_eq!(e.finish(&mut buf), 0);
        }
        assert!(buf.is_empty(), "HEAD and bodiless statuses send no body");

        let mut e = Encoder::new(Framing::Close, false);
        e.encode(b"raw", &mut buf);
        assert_eq!(e.finish(&mut buf), 0);
        assert_eq!(buf, b"raw");
    }
}
