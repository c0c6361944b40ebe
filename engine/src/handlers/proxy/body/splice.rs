//! An upstream's answer body relayed zero-copy: read from the upstream's
//! socket into a pipe with `splice(2)` and given to the sink in it
//! ([`Spliced::Pipe`]), which sends it with `splice` again, the bytes never
//! in the worker's memory. Only over a plain link (not TLS), for a body
//! framed by its length or by the close (a chunked one is decoded,
//! through memory), once the bytes that came with the head went, and
//! when the worker has a pipe to spare ([`Pipe::take`]); otherwise the
//! body goes through [`ProxyBody::next`] as before.

use std::io;

use super::super::link::Link;
use super::ProxyBody;
use crate::handlers::produce::{Gave, Spliced};
use crate::sys::net::is_quiet;
use crate::sys::splice::Pipe;

/// Whether answers are relayed by splice at all (off: all copied, the
/// path that came before).
pub const SPLICE: bool = true;

impl ProxyBody {
    /// The next body bytes in a pipe, about `room` of them (see
    /// [`crate::handlers::produce::Produce::splice`]); none when they
    /// cannot go that way now.
    pub(super) fn splice_body(&mut self, room: usize) -> Option<Spliced> {
        let plain = matches!(self.link, Link::Plain);
        if !SPLICE
            || !plain
            || !self.started
            || self.tunnel
            || self.finished
            || !self.sock.readable
            || !self.rest.is_empty()
            || self.ahead.held() > 0
            || self.ahead.after.is_some()
            || self.unframe.is_bad()
        {
            return None;
        }
        let left = self.unframe.as_is().filter(|&n| n > 0)?;
        let want = room.max(1).min(usize::try_from(left).unwrap_or(usize::MAX));
        let mut pipe = Pipe::take()?;
        // Fills one pipe with what waits, up to `want`. Only an empty
        // pipe tells the socket's state for sure: into one that holds
        // bytes, `EAGAIN` may mean its slots are full (bytes from a socket
        // fill them a segment at a time), and an end or an error comes
        // again at the next call, after the bytes held went.
        loop {
            let fd = self.sock.get()?;
            let ask = want - pipe.held();
            if ask == 0 || pipe.room() == 0 {
                return Some(Spliced::Pipe(pipe, false));
            }
            let empty = pipe.held() == 0;
            match pipe.fill_from(fd, ask) {
                Ok(0) if empty => return Some(Spliced::Gave(self.closed(None))),
                Ok(n) if n > 0 => {
                    self.unframe.passed(n);
                    self.ahead.gave(n);
                    if self.unframe.is_done() {
                        // (Bytes after the body's end were read and
                        // dropped by the copy; here they would stay: a
                        // connection that holds any is not kept.)
                        self.keep_alive &= is_quiet(fd);
                        self.finish();
                        return Some(Spliced::Pipe(pipe, true));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && empty => {
                    self.sock.readable = false;
                    return Some(Spliced::Gave(Gave::Pending));
                }
                Err(e) if empty => return Some(Spliced::Gave(self.closed(Some(e)))),
                Ok(_) | Err(_) => return Some(Spliced::Pipe(pipe, false)),
            }
        }
    }
}
