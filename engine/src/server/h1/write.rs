//! Writing answers: the keep-alive decision, the head (through
//! [`crate::http::response`]) and the body, into the connection's output
//! queue. A head and a small body share one buffer, so they leave in one
//! write; large file ranges are queued as ranges for the transport to
//! send (by `sendfile`, or copied).

use std::io;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::time::Instant;

use super::{BodyRead, Conn, Life, State};
use crate::handlers::file_cache::SMALL_FILE;
use crate::handlers::pipe::ReplyHead;
use crate::handlers::{Body, Plan, Scratch, Seg, Source};
use crate::http::body::BodyDecoder;
use crate::http::request::OwnedRequest;
use crate::http::response::{Connection, Encoder, Framing, Head, Stamp, CONTINUE};
use crate::http::{Method, Status, Version};
use crate::server::exchange::ExchangeId;
use crate::server::transport::Out;

/// What writing an answer needs to know about the server.
#[derive(Debug, Clone, Copy)]
pub struct Answering<'a> {
    /// `Server` and `Date`.
    pub stamp: Stamp<'a>,
    /// `limits.keepalive_requests`.
    pub max_requests: u32,
    /// The server is winding down (a reload or a stop): every answer
    /// from now on closes its connection.
    pub draining: bool,
    /// Now.
    pub now: Instant,
}

/// The framing of an answer whose body streams (from a pipe), chosen
/// when its head is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    /// Frames the body's bytes.
    pub encoder: Encoder,
    /// Whether the connection stays open after it.
    pub keep: bool,
}

/// The one keep-alive decision (RFC 9112 §9.3, §9.6): the client allows
/// it (`wanted`: its version's default, or its `Connection` field),
/// nothing about the answer forbids it (`close`), the connection has
/// read fewer than `limits.keepalive_requests` requests (`served`), and
/// the server is not winding down.
pub fn keeps_alive(served: u32, wanted: bool, close: bool, cx: &Answering) -> bool {
    wanted && !close && served < cx.max_requests && !cx.draining
}

impl Conn {
    /// Queues `plan` (its header lines and body bytes in `s`) as the
    /// answer to `req`; `decoder` reads the request's body, if it has one
    /// left to read, which is then dropped. Returns the status and the
    /// body bytes queued. On a read error nothing of the answer is queued
    /// and the connection closes (the error is returned). (`life` and
    /// `out` are two parts of the connection, borrowed apart.)
    #[allow(clippy::too_many_arguments)]
    pub fn answer(
        &mut self,
        life: &mut Life,
        req: &OwnedRequest,
        plan: Plan,
        s: &Scratch,
        decoder: Option<BodyDecoder>,
        out: &mut Out,
        cx: &Answering,
    ) -> io::Result<u64> {
        let now = cx.now;
        // A final answer sent without `100 Continue` leaves it open whether
        // the body follows (RFC 9110 §10.1.1), so the connection cannot be
        // reused.
        let expect_unread = req.expect_continue() && decoder.is_some();
        let keep = keeps_alive(
            life.served(),
            req.keep_alive(),
            plan.close || expect_unread,
            cx,
        );
        let connection = Connection::new(keep, req.version());
        let head_only = req.method() == Method::Head;
        let queued = queue(out, plan, s, cx, connection, head_only);
        match (keep, decoder, &queued) {
            (true, Some(decoder), Ok(_)) => {
                self.set(State::Body(BodyRead { decoder, to: None }), life, now)
            }
            (true, _, Ok(_)) => self.set(State::Idle, life, now),
            (_, decoder, _) => {
                self.set(State::Idle, life, now);
                match decoder {
                    // (Its client may still be sending it.)
                    Some(d) if !d.is_done() => life.close_body_unread(d.length_left()),
                    _ => life.close(),
                }
            }
        }
        queued
    }

    /// Answers `plan` to a request whose head could not be parsed (or did
    /// not arrive in time), and closes: where the next request would start
    /// cannot be known. Returns the body bytes queued.
    pub fn reject(
        &mut self,
        life: &mut Life,
        plan: Plan,
        s: &Scratch,
        out: &mut Out,
        cx: &Answering,
    ) -> u64 {
        self.set(State::Idle, life, cx.now);
        life.close();
        queue(out, plan, s, cx, Connection::Close, false).unwrap_or(0)
    }

    /// Queues an error `plan` after whatever is queued already, for an
    /// answer that has not started (a failed pipe: `head_only` for a
    /// HEAD request); the connection closes after it. Returns the body
    /// bytes queued.
    pub fn fail(
        life: &mut Life,
        plan: Plan,
        s: &Scratch,
        head_only: bool,
        out: &mut Out,
        cx: &Answering,
    ) -> u64 {
        life.close();
        queue(out, plan, s, cx, Connection::Close, head_only).unwrap_or(0)
    }

    /// Holds the request until its body is read (for `to`), telling the
    /// client to send it if it waits to be told (`expect_continue`, RFC
    /// 9110 §10.1.1).
    pub fn wait_for_body(
        &mut self,
        life: &mut Life,
        expect_continue: bool,
        decoder: BodyDecoder,
        to: ExchangeId,
        out: &mut Out,
        now: Instant,
    ) {
        if expect_continue {
            out.push_bytes(CONTINUE);
        }
        self.set(
            State::Body(BodyRead {
                decoder,
                to: Some(to),
            }),
            life,
            now,
        );
    }
}

/// What a streamed answer is for: the request's keep-alive wish (`wanted`,
/// [`keeps_alive`]), its version, and whether it is a HEAD request.
#[derive(Debug, Clone, Copy)]
pub struct StreamFor {
    /// Requests read on the connection so far.
    pub served: u32,
    /// What the request allows for keep-alive.
    pub wanted: bool,
    /// The request's version.
    pub version: Version,
    /// A HEAD request: no body is sent.
    pub head_only: bool,
    /// The request says `TE: trailers` (RFC 9110 §10.1.4): an HTTP/1.1
    /// body of unknown length is chunked, to carry trailer fields, even
    /// on a connection that closes after it.
    pub trailers: bool,
}

/// Writes the head of an answer whose body streams from a pipe and
/// chooses how that body is framed: by its length if the process said
/// it, else chunked where the connection may stay open or the client
/// takes trailers (HTTP/1.1), else by closing the connection.
pub fn stream_head(head: &ReplyHead, to: StreamFor, buf: &mut Vec<u8>, cx: &Answering) -> Stream {
    let StreamFor {
        served,
        wanted,
        version,
        head_only,
        trailers,
    } = to;
    let status = Status(head.status);
    let framing = if status.is_bodiless() {
        Framing::Bodiless
    } else if let Some(n) = head.content_length {
        Framing::Length(n)
    } else if !head_only && (wanted || trailers) && version == Version::Http11 {
        Framing::Chunked
    } else {
        // (A HEAD answer has no body to delimit: its connection may
        // stay open all the same.)
        Framing::Close
    };
    let delimits = framing == Framing::Close && !head_only;
    let keep = keeps_alive(served, wanted, delimits, cx);
    let reason: &[u8] = match &head.reason {
        Some(r) if !status.has_reason() => r,
        _ => status.reason().as_bytes(),
    };
    Head {
        status: head.status,
        reason,
        headers: &head.headers,
        framing,
        connection: Connection::new(keep, version),
    }
    .write(&head.own.stamp(&cx.stamp), buf);
    Stream {
        encoder: Encoder::new(framing, head_only),
        keep,
    }
}

/// Queues an answer: its head, then its body (none for HEAD or a
/// bodiless status). Returns the body bytes queued; on a read error,
/// nothing of the answer is queued and the error is returned.
fn queue(
    out: &mut Out,
    plan: Plan,
    s: &Scratch,
    cx: &Answering,
    connection: Connection,
    head_only: bool,
) -> io::Result<u64> {
    let body_len = plan.body_len(s);
    let start = out.buf_mut().len();
    let bodiless = plan.status.is_bodiless();
    // RFC 9110 §8.6: no Content-Length on 1xx and 204; on 304 it would
    // have to be the 200's length, so it is left out.
    let framing = if bodiless {
        Framing::Bodiless
    } else {
        Framing::Length(body_len)
    };
    let head = Head {
        status: plan.status.0,
        reason: plan.status.reason().as_bytes(),
        headers: &s.headers,
        framing,
        connection,
    };
    head.write(&cx.stamp, out.buf_mut());
    if head_only || bodiless {
        out.commit(start);
        return Ok(0);
    }
    let mut mark = start;
    let result = match plan.body {
        // A pipe is pumped as its process writes, never queued whole.
        Body::Empty | Body::Pipe(_) | Body::Stream(_) => Ok(()),
        #[cfg(feature = "upstreams")]
        Body::Upstream(_) | Body::Fastcgi(_) => Ok(()),
        Body::Static(b) => {
            out.buf_mut().extend_from_slice(b);
            Ok(())
        }
        Body::Buffer => {
            out.buf_mut().extend_from_slice(&s.body);
            Ok(())
        }
        Body::File { src, offset, len } => queue_file(out, &mut mark, &src, offset, len),
        Body::Multipart { src } => {
            let mut r = Ok(());
            for seg in &s.segs {
                r = match *seg {
                    Seg::Bytes { start: at, len } => {
                        out.buf_mut().extend_from_slice(&s.body[at..at + len]);
                        Ok(())
                    }
                    Seg::File { offset, len } => queue_file(out, &mut mark, &src, offset, len),
                };
                if r.is_err() {
                    break;
                }
            }
            r
        }
    };
    match result {
        Ok(()) => {
            out.commit(mark);
            Ok(body_len)
        }
        Err(e) => {
            // Whatever was committed already is a truncated response; the
            // connection closes after it.
            out.buf_mut().truncate(mark);
            Err(e)
        }
    }
}

/// Queues a file range: copied behind what is already buffered when it
/// is in memory or small, as a range for the transport when large (it
/// sends it by `sendfile`, or copies it).
fn queue_file(
    out: &mut Out,
    mark: &mut usize,
    src: &Source,
    offset: u64,
    len: u64,
) -> io::Result<()> {
    match src {
        Source::Mem(content) => {
            let (start, end) = (offset as usize, (offset + len) as usize);
            match content.get(start..end) {
                Some(bytes) => {
                    out.buf_mut().extend_from_slice(bytes);
                    Ok(())
                }
                None => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "range outside cached content",
                )),
            }
        }
        Source::File(file) if len <= SMALL_FILE => {
            let buf = out.buf_mut();
            let at = buf.len();
            buf.resize(at + len as usize, 0);
            if let Err(e) = file.read_exact_at(&mut buf[at..], offset) {
                buf.truncate(at);
                return Err(e);
            }
            Ok(())
        }
        Source::File(file) => {
            out.commit(*mark);
            out.push_file(Rc::clone(file), offset, len);
            *mark = out.buf_mut().len();
            Ok(())
        }
    }
}
