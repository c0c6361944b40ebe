//! Turns a handler's [`Plan`] into bytes on a connection's output queue:
//! the head and a small body in one buffer (so they leave in one write),
//! large file ranges as `sendfile` pieces.

use std::io;
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use super::output::Out;
use crate::handlers::{Body, Plan, Scratch, Seg, Source};
use crate::http::push_u64;

/// File ranges up to this size are read into the output buffer behind the
/// head; larger ones go by `sendfile`.
pub const SMALL_BODY: u64 = 16 * 1024;

/// The `Connection` header a response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnHeader {
    /// HTTP/1.1 keep-alive: the default, nothing to say.
    None,
    /// HTTP/1.0 keep-alive.
    KeepAlive,
    Close,
}

/// The per-response values the server adds around the handler's headers.
#[derive(Debug, Clone, Copy)]
pub struct HeadParts<'a> {
    pub server: &'a [u8],
    pub date: &'a [u8],
    pub connection: ConnHeader,
    /// HEAD request: send the head only (with the GET's Content-Length).
    pub head_only: bool,
    /// Large file ranges go by `sendfile`; else they are copied through
    /// memory (`[static] sendfile`).
    pub sendfile: bool,
}

/// How a response body is delimited on the wire.
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

/// Writes a status line and head: Server, Date, the handler's `headers`,
/// the framing header, the Connection header, and the empty line.
pub fn write_head(
    buf: &mut Vec<u8>,
    status: u16,
    reason: &[u8],
    headers: &[u8],
    framing: Framing,
    parts: &HeadParts,
) {
    buf.extend_from_slice(b"HTTP/1.1 ");
    push_u64(buf, u64::from(status));
    buf.push(b' ');
    buf.extend_from_slice(reason);
    buf.extend_from_slice(b"\r\n");
    // `server_header = ""` hides the software name entirely.
    if !parts.server.is_empty() {
        buf.extend_from_slice(b"Server: ");
        buf.extend_from_slice(parts.server);
        buf.extend_from_slice(b"\r\n");
    }
    buf.extend_from_slice(b"Date: ");
    buf.extend_from_slice(parts.date);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(headers);
    match framing {
        Framing::Bodiless | Framing::Close => {}
        Framing::Length(n) => {
            buf.extend_from_slice(b"Content-Length: ");
            push_u64(buf, n);
            buf.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => buf.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
    }
    match parts.connection {
        ConnHeader::None => {}
        ConnHeader::KeepAlive => buf.extend_from_slice(b"Connection: keep-alive\r\n"),
        ConnHeader::Close => buf.extend_from_slice(b"Connection: close\r\n"),
    }
    buf.extend_from_slice(b"\r\n");
}

/// Queues the response; returns the number of body bytes queued. On a
/// read error nothing of this response is queued and the error is returned
/// (the connection must then close).
pub fn queue(out: &mut Out, plan: Plan, s: &Scratch, parts: &HeadParts) -> io::Result<u64> {
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
    let reason = plan.status.reason().as_bytes();
    write_head(
        out.buf_mut(),
        plan.status.0,
        reason,
        &s.headers,
        framing,
        parts,
    );
    if parts.head_only || bodiless {
        out.commit(start);
        return Ok(0);
    }
    let mut mark = start;
    let result = match plan.body {
        Body::Empty => Ok(()),
        Body::Static(b) => {
            out.buf_mut().extend_from_slice(b);
            Ok(())
        }
        Body::Buffer => {
            out.buf_mut().extend_from_slice(&s.body);
            Ok(())
        }
        Body::File { src, offset, len } => {
            queue_file(out, &mut mark, &src, offset, len, parts.sendfile)
        }
        Body::Multipart { src } => {
            let mut r = Ok(());
            for seg in &s.segs {
                r = match *seg {
                    Seg::Bytes { start: at, len } => {
                        out.buf_mut().extend_from_slice(&s.body[at..at + len]);
                        Ok(())
                    }
                    Seg::File { offset, len } => {
                        queue_file(out, &mut mark, &src, offset, len, parts.sendfile)
                    }
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
            // caller closes the connection after it.
            out.buf_mut().truncate(mark);
            Err(e)
        }
    }
}

/// Queues a file range: copied behind what is already buffered when it
/// is in memory or small, as a `sendfile` piece when large (or one copied
/// a chunk at a time as the socket drains, without `sendfile`).
fn queue_file(
    out: &mut Out,
    mark: &mut usize,
    src: &Source,
    offset: u64,
    len: u64,
    sendfile: bool,
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
        Source::File(file) if len <= SMALL_BODY => {
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
            if sendfile {
                out.push_file(Rc::clone(file), offset, len);
            } else {
                out.push_copy(Rc::clone(file), offset, len);
            }
            *mark = out.buf_mut().len();
            Ok(())
        }
    }
}
