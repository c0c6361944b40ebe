//! HTTP/1.1's sink for produced answers ([`crate::server::run::Sink`]):
//! the head through [`stream_head`] (which chooses the framing: the
//! length the producer gave, else chunked where the connection may stay
//! open, else the close), the body framed by its [`Encoder`] into the
//! connection's output queue, and a file as a range for the transport
//! (`sendfile`); on a plain connection, body bytes relayed in a pipe
//! are queued as they are, for `splice` (a body framed by its length or
//! by the close only: a chunk's size would have to be known before its
//! bytes are read). A HEAD answer's body is pumped and dropped by its
//! encoder; one past its length is cut there by it.

use std::fs::File;
use std::rc::Rc;

use super::write::{stream_head, Answering, StreamFor};
use crate::handlers::pipe::ReplyHead;
use crate::http::body::BodyDecoder;
use crate::http::grammar::has_token;
use crate::http::request::OwnedRequest;
use crate::http::response::{Connection, Encoder, Framing as HeadFraming, Head, CONTINUE};
use crate::http::{Method, Version};
use crate::server::exchange::ExchangeId;
use crate::server::run::{Sink, Wanted};
use crate::server::transport::Out;
use crate::sys::splice::Pipe;

/// Output buffered for the client before the producer is asked for more.
pub const OUT_CAP: usize = 256 * 1024;

/// A produced answer on an HTTP/1.1 connection: its exchange (which
/// holds the producer, a [`crate::server::run::Run`]), how it is framed, and the request
/// body's decoder while that body still arrives for the producer
/// ([`crate::server::h1::State::Streaming`]).
#[derive(Debug)]
pub struct Producing {
    /// Its exchange (`Task::Run`).
    pub ex: ExchangeId,
    /// Its framing.
    pub framing: Framing,
    /// Reads the request body on its way to the producer's input.
    pub body: Option<BodyDecoder>,
    /// The trailer field lines of that body, if chunked, as they came:
    /// given to the input with the body's end.
    pub trailers: Vec<u8>,
}

/// How a produced answer is framed on the connection, chosen with its
/// head, and what the connection does after it.
#[derive(Debug)]
pub struct Framing {
    /// Frames the body once the head is written.
    encoder: Option<Encoder>,
    /// The connection stays open after the answer (decided with its head).
    pub keep: bool,
    /// The request lets the connection stay open.
    wanted: bool,
    /// The request takes trailers (`TE: trailers`) on a connection that
    /// closes after it (see [`StreamFor::trailers`]).
    trailers: bool,
    version: Version,
    head_only: bool,
    /// The connection's byte position where the body begins (for the log).
    pub body_from: u64,
    /// The answer was cut short: the connection must close after it.
    pub broken: bool,
    /// Its head was a 101 (Switching Protocols): the connection is a
    /// tunnel, its bytes both ways the producer's, until it closes.
    pub tunnel: bool,
    /// The tunnel's client bytes go to the producer's input (set once,
    /// when they start to).
    pub tunnel_reads: bool,
}

impl Framing {
    /// The framing of an answer to `req`, whose bytes would start at the
    /// connection's byte `at`.
    pub fn new(req: &OwnedRequest, at: u64) -> Framing {
        let wanted = req.keep_alive();
        // (Looked for only where it changes the framing.)
        let trailers = !wanted
            && req.version() == Version::Http11
            && req.header("te").is_some_and(|v| has_token(v, b"trailers"));
        Framing {
            encoder: None,
            keep: false,
            wanted,
            trailers,
            version: req.version(),
            head_only: req.method() == Method::Head,
            body_from: at,
            broken: false,
            tunnel: false,
            tunnel_reads: false,
        }
    }
}

/// The sink of one produced answer, borrowed from its connection for
/// one pump.
pub struct H1Sink<'a> {
    /// The connection's output queue.
    pub out: &'a mut Out,
    /// The answer's framing.
    pub framing: &'a mut Framing,
    /// Requests read on the connection so far.
    pub served: u32,
    /// The connection's bytes sent so far.
    pub sent: u64,
    /// The server's side of answering (`Server`, `Date`, keep-alive limits).
    pub cx: &'a Answering<'a>,
    /// The connection is plain TCP: body bytes may wait in pipes.
    pub pipes: bool,
}

impl Sink for H1Sink<'_> {
    fn room(&self) -> usize {
        OUT_CAP.saturating_sub(self.out.buffered() + self.out.piped())
    }

    fn head(&mut self, head: &ReplyHead) -> Wanted {
        let f = &mut *self.framing;
        let to = StreamFor {
            served: self.served,
            wanted: f.wanted,
            version: f.version,
            head_only: f.head_only,
            trailers: f.trailers,
        };
        let start = self.out.buf_mut().len();
        if head.status == 101 && f.version == Version::Http11 {
            // Switching protocols (RFC 9110 §15.2.2): the head as the
            // producer gave it (its `Upgrade`, `Connection: upgrade`),
            // no framing; then the new protocol's bytes as they come.
            // (The producer's own `Server` and `Date` stand for brisk's.)
            let stamp = head.own.stamp(&self.cx.stamp);
            let head = Head {
                status: 101,
                reason: b"Switching Protocols",
                headers: &head.headers,
                framing: HeadFraming::Close,
                connection: Connection::Default,
            };
            head.write(&stamp, self.out.buf_mut());
            f.keep = false;
            f.tunnel = true;
            f.encoder = Some(Encoder::Close);
        } else {
            let stream = stream_head(head, to, self.out.buf_mut(), self.cx);
            f.keep = stream.keep;
            f.encoder = Some(stream.encoder);
        }
        // (The head is counted: `unsent` holds it, committed or not.)
        f.body_from = self.sent + self.out.unsent();
        self.out.commit(start);
        Wanted::Body
    }

    fn data(&mut self, bytes: &[u8]) -> bool {
        // (Past the head's length: the encoder drops the rest.)
        let over = matches!(self.framing.encoder, Some(Encoder::Length(left)) if bytes.len() as u64 > left);
        if let Some(e) = self.framing.encoder.as_mut() {
            let start = self.out.buf_mut().len();
            e.encode(bytes, self.out.buf_mut());
            self.out.commit(start);
        }
        !over
    }

    fn file(&mut self, file: File, len: u64) {
        // (Queued behind the head, sent as static files are.)
        if let Some(Encoder::Length(left)) = self.framing.encoder.as_mut() {
            let n = len.min(*left);
            self.out.push_file(Rc::new(file), 0, n);
            *left -= n;
        }
    }

    fn takes_pipes(&self) -> bool {
        let as_is = matches!(
            self.framing.encoder,
            Some(Encoder::Length(_) | Encoder::Close)
        );
        self.pipes && as_is && !self.framing.tunnel
    }

    fn pipe(&mut self, pipe: Pipe) -> bool {
        let n = pipe.held() as u64;
        match self.framing.encoder.as_mut() {
            Some(Encoder::Close) => {}
            Some(Encoder::Length(left)) if n <= *left => *left -= n,
            // (Never asked to: `takes_pipes`, and the producer's length
            // is the head's.)
            _ => return false,
        }
        self.out.push_pipe(pipe);
        true
    }

    fn finish(&mut self, trailers: &[u8]) -> u64 {
        let Some(e) = self.framing.encoder.as_mut() else {
            return 0;
        };
        let start = self.out.buf_mut().len();
        // (Trailers go in a chunked coding's end, RFC 9112 §7.1.2; a body
        // framed otherwise has no place for them: dropped.)
        let missing = e.finish_with(trailers, self.out.buf_mut());
        self.out.commit(start);
        missing
    }

    fn cut(&mut self) {
        self.framing.broken = true;
    }

    fn takes_raw(&self) -> bool {
        true
    }

    fn raw(&mut self, bytes: &[u8]) {
        let f = &mut *self.framing;
        if f.encoder.is_none() {
            // A whole answer of its own: it ends with the connection.
            f.encoder = Some(Encoder::Close);
            f.keep = false;
            f.body_from = self.sent + self.out.unsent();
        }
        self.data(bytes);
    }

    fn interim(&mut self, status: u16, lines: &[u8]) {
        if self.framing.version != Version::Http11 {
            return;
        }
        // (Only an upstream's answer brings another: a 103.)
        if status == 100 || !cfg!(feature = "upstreams") {
            return self.out.push_bytes(CONTINUE);
        }
        let start = self.out.buf_mut().len();
        let buf = self.out.buf_mut();
        let reason = crate::http::Status(status).reason();
        buf.extend_from_slice(b"HTTP/1.1 ");
        buf.extend_from_slice(status.to_string().as_bytes());
        buf.push(b' ');
        buf.extend_from_slice(reason.as_bytes());
        buf.extend_from_slice(b"\r\n");
        buf.extend_from_slice(lines);
        buf.extend_from_slice(b"\r\n");
        self.out.commit(start);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::http::parse::Limits;
    use crate::http::response::Stamp;
    use crate::server::transport::Front;

    fn request(head: &str) -> OwnedRequest {
        let mut req = OwnedRequest::default();
        let limits = Limits {
            max_request_line: 8192,
            max_head: 8192,
            max_headers: 100,
        };
        assert!(req.parse(head.as_bytes(), &limits).unwrap().is_some());
        req
    }

    fn reply(len: Option<u64>) -> ReplyHead {
        ReplyHead {
            len: 0,
            status: 200,
            reason: None,
            headers: b"X-A: 1\r\n".to_vec(),
            content_length: len,
            chunked: false,
            own: Default::default(),
        }
    }

    /// What the queue holds, files written as `<file N>`.
    fn queued(out: &mut Out) -> String {
        let mut text = String::new();
        while let Some((front, _)) = out.front() {
            let n = match front {
                Front::Bytes(b) => {
                    text.push_str(&String::from_utf8_lossy(b));
                    b.len()
                }
                Front::File(range) => {
                    text.push_str(&format!("<file {}>", range.len));
                    range.len as usize
                }
                Front::Pipe(pipe) => {
                    text.push_str(&format!("<pipe {}>", pipe.held()));
                    pipe.held()
                }
                Front::Mapped(m) => {
                    text.push_str(&format!("<mapped {}>", m.len));
                    m.len
                }
            };
            out.advance(n);
        }
        text
    }

    /// A server that says it is `server`, at `<date>`.
    fn answering(server: &'static [u8]) -> Answering<'static> {
        Answering {
            stamp: Stamp {
                server,
                date: b"<date>",
                #[cfg(feature = "http3")]
                alt_svc: b"",
            },
            max_requests: 100,
            draining: false,
            now: Instant::now(),
        }
    }

    /// Gives `head` and `pieces` to a sink for `req`, ends the body, and
    /// returns what went out, what was missing, and the framing; every
    /// piece must be taken whole.
    fn script(req: &str, head: ReplyHead, pieces: &[&[u8]]) -> (String, u64, Framing) {
        let (text, missing, framing, taken) = script_taking(req, head, pieces);
        assert!(taken.iter().all(|t| *t), "{taken:?}");
        (text, missing, framing)
    }

    /// As [`script`], with what [`Sink::data`] said of each piece.
    fn script_taking(
        req: &str,
        head: ReplyHead,
        pieces: &[&[u8]],
    ) -> (String, u64, Framing, Vec<bool>) {
        let cx = answering(b"brisk");
        let mut out = Out::with_capacity(1024);
        out.push_bytes(b"(before)");
        let mut framing = Framing::new(&request(req), 0);
        let mut sink = H1Sink {
            out: &mut out,
            framing: &mut framing,
            served: 1,
            sent: 100,
            cx: &cx,
            pipes: false,
        };
        assert_eq!(sink.head(&head), Wanted::Body);
        let taken = pieces.iter().map(|p| sink.data(p)).collect();
        let missing = sink.finish(b"");
        assert!(sink.room() > 0);
        let text = queued(&mut out);
        (text, missing, framing, taken)
    }

    const GET: &str = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    const HEAD: &str = "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n";

    #[test]
    fn a_body_of_unknown_length_is_chunked() {
        let (text, missing, f) = script(GET, reply(None), &[b"hel", b"", b"lo"]);
        assert_eq!(
            text,
            "(before)HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: <date>\r\nX-A: 1\r\n\
             Transfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n"
        );
        assert_eq!((missing, f.keep, f.broken), (0, true, false));
        // (The body starts after the head: 100 sent, 8 queued before it.)
        let head = "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: <date>\r\nX-A: 1\r\n\
                    Transfer-Encoding: chunked\r\n\r\n";
        assert_eq!(f.body_from, 108 + head.len() as u64);
    }

    #[test]
    fn trailers_end_a_chunked_body_and_are_dropped_from_one_of_known_length() {
        let trailers = b"grpc-status: 0\r\nX-Sum: 1\r\n";
        let chunked = |req: &str| {
            let (text, _, f) = with_request(req, reply(None), |sink| sink.finish(trailers));
            (text, f.keep)
        };
        let (text, keep) = chunked(GET);
        assert!(
            text.ends_with("\r\n\r\n2\r\nhi\r\n0\r\ngrpc-status: 0\r\nX-Sum: 1\r\n\r\n"),
            "{text}"
        );
        assert!(keep);
        // A client that closes takes them in chunks only if it says so.
        let (text, keep) = chunked("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
        assert!(text.ends_with("Connection: close\r\n\r\nhi"), "{text}");
        assert!(!keep);
        let (text, keep) =
            chunked("GET / HTTP/1.1\r\nHost: a\r\nTE: gzip, trailers\r\nConnection: close\r\n\r\n");
        assert!(
            text.ends_with(
                "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
                            2\r\nhi\r\n0\r\ngrpc-status: 0\r\nX-Sum: 1\r\n\r\n"
            ),
            "{text}"
        );
        assert!(!keep);
        let (text, missing, _) = with_request(GET, reply(Some(2)), |sink| sink.finish(trailers));
        assert!(text.ends_with("Content-Length: 2\r\n\r\nhi"), "{text}");
        assert_eq!(missing, 0);
    }

    /// A sink for `req` given `head` and `hi`, ended by `end`: what went
    /// out, what `end` said was missing, and the framing.
    fn with_request(
        req: &str,
        head: ReplyHead,
        end: impl FnOnce(&mut H1Sink) -> u64,
    ) -> (String, u64, Framing) {
        let cx = answering(b"");
        let mut out = Out::with_capacity(1024);
        let mut framing = Framing::new(&request(req), 0);
        let mut sink = H1Sink {
            out: &mut out,
            framing: &mut framing,
            served: 1,
            sent: 0,
            cx: &cx,
            pipes: false,
        };
        sink.head(&head);
        assert!(sink.data(b"hi"));
        let missing = end(&mut sink);
        (queued(&mut out), missing, framing)
    }

    #[test]
    fn a_body_of_known_length_is_cut_at_it_and_a_short_one_says_so() {
        let (text, missing, f, taken) = script_taking(GET, reply(Some(4)), &[b"ab", b"cdef"]);
        assert_eq!(
            text,
            "(before)HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: <date>\r\nX-A: 1\r\n\
             Content-Length: 4\r\n\r\nabcd"
        );
        assert_eq!((missing, f.keep), (0, true));
        // (Past the length: said, so that the answer ends there, logged.)
        assert_eq!(taken, [true, false]);
        let (text, missing, _) = script(GET, reply(Some(4)), &[b"ab"]);
        assert!(text.ends_with("Content-Length: 4\r\n\r\nab"), "{text}");
        assert_eq!(missing, 2);
    }

    #[test]
    fn a_head_answer_drops_the_body_it_is_given() {
        let (text, missing, f) = script(HEAD, reply(Some(5)), &[b"hello"]);
        assert_eq!(
            text,
            "(before)HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: <date>\r\nX-A: 1\r\n\
             Content-Length: 5\r\n\r\n"
        );
        assert_eq!((missing, f.keep), (0, true));
    }

    #[test]
    fn http_1_0_is_delimited_by_the_close() {
        let req = "GET / HTTP/1.0\r\n\r\n";
        let (text, _, f) = script(req, reply(None), &[b"hello"]);
        assert!(
            text.ends_with("X-A: 1\r\nConnection: close\r\n\r\nhello"),
            "{text}"
        );
        assert!(!f.keep);
    }

    #[test]
    fn a_101_is_its_head_then_the_new_protocols_bytes_to_the_close() {
        let head = ReplyHead {
            status: 101,
            headers: b"Upgrade: websocket\r\nConnection: upgrade\r\n".to_vec(),
            ..reply(None)
        };
        let (text, missing, f) = script(GET, head, &[b"\x81\x02hi", b"", b"0\r\n\r\n"]);
        assert_eq!(
            text,
            "(before)HTTP/1.1 101 Switching Protocols\r\nServer: brisk\r\nDate: <date>\r\n\
             Upgrade: websocket\r\nConnection: upgrade\r\n\r\n\u{fffd}\u{2}hi0\r\n\r\n"
        );
        assert_eq!((missing, f.keep, f.tunnel), (0, false, true));
    }

    /// Lends `f` a sink for a GET on a connection that sent nothing yet
    /// (a server that says it is `server`); what it queued, and the framing.
    fn with_sink(server: &'static [u8], f: impl FnOnce(&mut H1Sink)) -> (String, Framing) {
        let cx = answering(server);
        let mut out = Out::with_capacity(1024);
        let mut framing = Framing::new(&request(GET), 0);
        f(&mut H1Sink {
            out: &mut out,
            framing: &mut framing,
            served: 1,
            sent: 0,
            cx: &cx,
            pipes: false,
        });
        (queued(&mut out), framing)
    }

    #[test]
    fn raw_bytes_pass_as_they_are_and_the_connection_closes_after() {
        let (text, framing) = with_sink(b"brisk", |sink| {
            assert!(sink.takes_raw());
            sink.interim(100, b"");
            sink.raw(b"HTTP/1.1 299 Raw\r\n\r\nra");
            sink.raw(b"w");
            assert_eq!(sink.finish(b""), 0);
        });
        assert_eq!(
            text,
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 299 Raw\r\n\r\nraw"
        );
        assert!(!framing.keep);
        assert_eq!(framing.body_from, 25);
    }

    #[test]
    fn a_file_goes_as_a_range_behind_the_head() {
        let (text, framing) = with_sink(b"", |sink| {
            sink.head(&reply(Some(3)));
            sink.file(File::open("/dev/null").unwrap(), 3);
            assert_eq!(sink.finish(b""), 0);
            sink.cut();
        });
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nDate: <date>\r\nX-A: 1\r\nContent-Length: 3\r\n\r\n<file 3>"
        );
        assert!(framing.broken);
    }
}
