//! Turns a handler's [`Plan`] into bytes on a connection's output queue:
//! the head and a small body in one buffer (so they leave in one write),
//! large file ranges as `sendfile` pieces.

use std::io;
use std::os::unix::fs::FileExt;
use std::rc::Rc;

use super::output::Out;
use crate::handlers::file_cache::SMALL_FILE;
use crate::handlers::{Body, Plan, Scratch, Seg, Source};
use crate::http::response::{Connection, Framing, Head, Stamp};

/// The per-response values the server adds around the handler's headers.
#[derive(Debug, Clone, Copy)]
pub struct HeadParts<'a> {
    /// `Server` and `Date`.
    pub stamp: Stamp<'a>,
    /// The `Connection` field.
    pub connection: Connection,
    /// HEAD request: send the head only (with the GET's Content-Length).
    pub head_only: bool,
    /// Large file ranges go by `sendfile`; else they are copied through
    /// memory (`[static] sendfile`).
    pub sendfile: bool,
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
    let head = Head {
        status: plan.status.0,
        reason: plan.status.reason().as_bytes(),
        headers: &s.headers,
        framing,
        connection: parts.connection,
    };
    head.write(&parts.stamp, out.buf_mut());
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
        // A pipe is pumped by the worker as its process writes, never
        // queued whole: nothing to queue here.
        Body::Pipe(_) => Ok(()),
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
