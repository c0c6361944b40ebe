//! Driving one connection as far as it can go without blocking: its
//! output to the transport first, then its pipe body, then what the
//! transport has read, through the protocol (see [`dispatch`](super::dispatch)),
//! until nothing moves; and closing it the way HTTP/1.1 wants (RFC 9112
//! §9.6).

use std::io;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use mio::{Interest, Token};

use super::access_log::settle;
use super::dispatch::Processed;
use super::{Worker, LINGER, LINGER_BODY_BYTES, LINGER_BYTES, THROTTLE_CHUNK, TURN};
use crate::server::conn::Conn;
use crate::server::drain::Drain;
use crate::server::h1::{self, State};
use crate::server::life::Linger;
use crate::server::transport::{Flushed, Limit, Transport};

impl Worker {
    /// Moves a connection forward as far as it can go without blocking.
    /// Returns false when it must be closed.
    pub(super) fn drive(&mut self, c: &mut Conn) -> bool {
        // What this call may still move (write, and read) before the
        // worker's other connections have their turn (see [`TURN`]).
        let mut turn = TURN;
        loop {
            if c.life.lingers() {
                return self.linger(c);
            }
            if !c.out.is_empty() || c.transport.has_backlog() {
                // (Its file's bytes not read in yet: as far as they are.)
                let ready = self.file_ready(c);
                if ready == 0 {
                    // (Driven again as they come in.)
                    return true;
                }
                let before = c.out.written();
                let limit = match c
                    .throttle
                    .as_ref()
                    .map(|t| t.take(self.clock.now, THROTTLE_CHUNK))
                {
                    None => Limit {
                        bytes: turn.min(ready),
                        // (The bytes after wait for the disk, as for a
                        // throttle: none held back for them.)
                        throttled: ready < turn,
                    },
                    Some(Ok(n)) => Limit {
                        bytes: n.min(turn).min(ready),
                        throttled: true,
                    },
                    Some(Err(when)) => {
                        // Over its rate: no write until the bucket allows.
                        self.timers.wake_at(when, c.index);
                        return true;
                    }
                };
                let fin_follows = c.fin_follows();
                let flushed = c.transport.flush(&mut c.out, limit, fin_follows);
                let wrote = c.out.written() - before;
                turn = turn.saturating_sub(wrote as usize);
                c.sent += wrote;
                self.counts.stats.sent(wrote);
                if c.throttle.is_some() {
                    self.counts.stats.throttled(wrote);
                }
                settle(&mut self.logger, &mut c.out, c.sent, false);
                match flushed {
                    Ok(Flushed::All) => {
                        self.take_back_out(c);
                        self.want_write(c, false);
                        c.throttle = None;
                        if c.blocked_since.take().is_some() {
                            // The state's timer starts again after the wait.
                            c.life.touch(self.clock.now);
                        }
                    }
                    Ok(Flushed::Limit) => {
                        c.life.touch(self.clock.now);
                        if turn == 0 {
                            // The socket may take more, but the others
                            // go first: this one goes on after this
                            // pass's events, and again in the next pass.
                            self.timers.wake_once(self.clock.now, c.index);
                            return true;
                        }
                        continue;
                    }
                    Ok(Flushed::Blocked) => {
                        if c.out.written() != before || c.blocked_since.is_none() {
                            c.blocked_since = Some(self.clock.now);
                        }
                        self.want_write(c, true);
                        return true;
                    }
                    Err(_) => return false,
                }
            }
            #[cfg(feature = "http2")]
            if c.speaks_h2() && c.out.is_empty() && self.h2_queue_control(c) {
                // Frames the protocol queued by itself since (a GOAWAY
                // at a stop) go before the connection may end.
                continue;
            }
            #[cfg(feature = "http2")]
            if self.h2_done(c) && c.out.is_empty() {
                // GOAWAY sent (an error, or winding down with every
                // stream answered): the write side ends after it, and
                // what the client still sends (the rest of a flood) must
                // not reset the connection under it (RFC 9113 §6.8).
                return self.close_lingering(c);
            }
            if c.producing() {
                self.lend_out(c);
                if self.pump_produced(c) {
                    continue;
                }
            }
            #[cfg(feature = "upstreams")]
            if c.tunnel().is_some() && !c.life.closing() {
                if self.pump_tunnel(c) {
                    continue;
                }
                break;
            }
            if c.life.closing() && !c.producing() {
                return self.close_lingering(c);
            }
            let progressed = match self.read_and_process(c, &mut turn) {
                Ok(p) => p,
                Err(e) => {
                    self.tls_failed(c, &e);
                    return self.tls_fatal(c, &e);
                }
            };
            if !progressed && c.out.is_empty() && !c.transport.has_backlog() {
                break;
            }
            if turn == 0 {
                // (An upload as fast as the worker takes it: its turn is
                // over too, as a download's.)
                self.timers.wake_once(self.clock.now, c.index);
                return true;
            }
        }
        if c.out.is_empty() {
            self.take_back_out(c);
        }
        #[cfg(feature = "upstreams")]
        if c.tunnel().is_some() {
            // (Its client's end went on to the upstream, whose bytes
            // still come until it closes too.)
            return true;
        }
        if c.transport.tcp().eof && c.pending.is_empty() {
            // A tunnel's client closed its side: the end goes on to the
            // upstream, whose bytes still come until it closes too.
            match c
                .proto
                .h1_mut()
                .and_then(|h| h.tunnel_client_done(&mut self.exchanges))
            {
                // (Once: its input ends now, and is written.)
                Some(true) => return self.drive(c),
                Some(false) => return true,
                None => {}
            }
            // The client is gone (or sends nothing more): a body cut short
            // can never be complete, so whatever waits for it (an embedded
            // handler, a program reading its input, a held body) is
            // dropped now, not at a timeout. `close` stops a running
            // program and frees its slot.
            if c.reading_body() {
                self.client_info(format_args!(
                    "client {} closed the connection before its request body was complete{}",
                    c.peer.ip(),
                    if c.producing() {
                        "; what was answering it (a CGI program, a FastCGI or upstream request) is stopped"
                    } else {
                        ""
                    }
                ));
            }
            // Over TLS, close_notify before the FIN, whoever closed first
            // (RFC 8446 §6.1), when all was said (never after an answer
            // cut short: it would look complete); best effort, as the
            // client may not read it.
            if c.transport.is_tls() && c.out.is_empty() && !c.transport.has_backlog() {
                c.transport.shutdown_write();
            }
            return false;
        }
        // (HTTP/2 keeps its own timers.)
        let Some(h1) = c.proto.h1_mut() else {
            return true;
        };
        h1.settle(&mut c.life, !c.pending.is_empty(), self.clock.now);
        if self.drain.mode == Drain::Stop && matches!(h1.state(), State::Idle) {
            // (Once: it is closing now, and its next drive lingers.)
            return Self::close_gracefully(c) && self.drive(c);
        }
        true
    }

    /// Readies idle connection `c` for its graceful close, which the next
    /// [`Worker::drive`] carries out, in this order on the wire: HTTP/2's
    /// final GOAWAY (NO_ERROR, the last stream it served: RFC 9113 §6.8),
    /// TLS's close_notify (RFC 8446 §6.1; in the GOAWAY's write), the
    /// FIN, then the lingering close, so that what the client still sends
    /// (its own close_notify, a request that crossed ours) resets nothing.
    /// False when there is nothing to say yet (a TLS handshake or a PROXY
    /// header not done): close at once.
    pub(super) fn close_gracefully(c: &mut Conn) -> bool {
        // (A QUIC connection closes at once: CONNECTION_CLOSE, which
        // its client needs no lingering for; see `Worker::h3_close`.)
        if c.transport.deadline().is_some() || c.awaiting_proxy() || c.speaks_h3() {
            return false;
        }
        #[cfg(feature = "http2")]
        if let Some(h2) = c.proto.h2_mut() {
            h2.conn.go_away();
        }
        if c.transport.is_tls() || c.speaks_h2() {
            // The client is to answer (TLS asks it to send its own
            // close_notify): linger even if its socket was drained.
            c.transport.tcp_mut().read_more = true;
        }
        c.life.close();
        true
    }

    /// The last words of connection `i`, closed now whatever it is doing
    /// (the worker's deadline to stop or to hand over has come): best
    /// effort, in one write that waits for nothing. An HTTP/2 connection
    /// cancels the streams still open (see [`h2::Conn::abandon`]); then,
    /// if the socket took everything, TLS's close_notify (RFC 8446 §6.1)
    /// and the FIN. An idle HTTP/1.1 connection gets those two alone. An
    /// HTTP/1.1 answer cut short gets neither: a close_notify would make
    /// an answer that the close delimits look complete (RFC 9112 §6.3).
    ///
    /// [`h2::Conn::abandon`]: crate::h2::Conn::abandon
    pub(super) fn last_words(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        // (Lingering: said already. QUIC closes in `close`.)
        if c.life.lingers()
            || c.transport.deadline().is_some()
            || c.awaiting_proxy()
            || c.speaks_h3()
        {
            return;
        }
        #[cfg(feature = "http2")]
        let whole = match c.proto.h2_mut() {
            Some(s) => {
                s.conn.abandon();
                true
            }
            None => c.idle(),
        };
        #[cfg(not(feature = "http2"))]
        let whole = c.idle();
        if !whole {
            return;
        }
        let mut c = self.conns.take(i).expect("present");
        #[cfg(feature = "http2")]
        self.h2_queue_control(&mut c);
        let before = c.out.written();
        let flushed = c.transport.flush(&mut c.out, Limit::NONE, true);
        c.sent += c.out.written() - before;
        if matches!(flushed, Ok(Flushed::All)) {
            c.transport.shutdown_write();
            // Input left unread would make the close a reset, which
            // may drop all of the above before the client reads it.
            // (Up to what a lingering close reads: the worker is leaving.)
            self.discard_input(&mut c, &mut LINGER_BYTES.get());
        }
        self.conns.put(i, c);
    }

    /// Lends the connection an output queue (from the spares) if it has
    /// none, so that answers are written into reused memory.
    pub(super) fn lend_out(&mut self, c: &mut Conn) {
        if c.out.capacity() == 0 {
            c.out = self.pools.lend_out();
        }
    }

    /// Takes back the connection's emptied output queue for reuse.
    pub(super) fn take_back_out(&mut self, c: &mut Conn) {
        if c.out.capacity() == 0 {
            return;
        }
        self.pools.take_back_out(std::mem::take(&mut c.out));
    }

    /// Asks epoll for writability only while output waits: a socket that
    /// is always registered for it would wake the loop on every ACK.
    fn want_write(&self, c: &mut Conn, on: bool) {
        if c.transport.tcp().writable_interest != on {
            let interest = if on {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if self
                .poll
                .registry()
                .reregister(c.transport.tcp_mut().source(), Token(c.index), interest)
                .is_ok()
            {
                c.transport.tcp_mut().writable_interest = on;
            }
        }
    }

    /// Ends the write side once the output is out, and closes when the
    /// client has, as RFC 9112 §9.6 asks (nginx's lingering close): a
    /// close with unread input would send a reset, and the client's
    /// system could drop the last answer (a response, a fatal TLS alert,
    /// a GOAWAY) before its program reads it. Returns false to close now.
    /// (Every close after an answer, a GOAWAY or a fatal alert goes
    /// through here; see [`linger_due`] for its timer.)
    fn close_lingering(&mut self, c: &mut Conn) -> bool {
        // The answer's tail was held back for the FIN (see `Out::flush`):
        // send both now. A bare close would instead reset and drop them
        // if input arrived since the last read.
        c.transport.shutdown_write();
        // Lingering only matters when the client may still be sending:
        // unread input, a body in flight, a socket not known to be
        // drained, or an HTTP/2 client (it sends WINDOW_UPDATE and PING
        // frames as it reads, and while the socket's send queue still
        // holds the answers, whatever it sends next would reset the
        // connection under them), or a request body left unread (a 413
        // for its length: the rest is on its way, though the socket
        // looked drained). Otherwise, or once the client has closed,
        // close at once: an HTTP/1.1 client sends nothing after the
        // request answered with `Connection: close`.
        let t = c.transport.tcp();
        let quiet = t.eof
            || (c.pending.is_empty()
                && !c.reading_body()
                && !t.read_more
                && !c.speaks_h2()
                && c.life.body_unread() == 0);
        if quiet {
            return false;
        }
        c.pending.clear();
        // A request still held (a fatal TLS alert may end a connection
        // whose request waits) is let go of: nothing more is served.
        if let Some(w) = c
            .take_wait(None)
            .and_then(|id| self.exchanges.take_wait(id))
        {
            self.abandon_wait(c, None, w);
        }
        // (As is a produced answer on its way: its run leaves the
        // exchanges, and the HTTP/1.1 state is done with.)
        if let Some(h1) = c.proto.h1_mut() {
            if let Some(id) = h1.run_ex() {
                self.exchanges.discard(id);
            }
            h1.set(State::Idle, &mut c.life, self.clock.now);
        }
        // (A body left unread: as much of it as may still come, within
        // bounds, so that a browser still uploading reads its answer.)
        let body = c.life.body_unread().min(LINGER_BODY_BYTES.get().into());
        let linger = Linger {
            left: LINGER_BYTES.max(NonZeroU32::new(body as u32).unwrap_or(LINGER_BYTES)),
            unsent: c.transport.tcp().unsent(),
        };
        c.life.linger(linger, self.clock.now);
        self.linger(c)
    }

    /// A TLS record that breaks the protocol: its fatal alert (in the
    /// transport's backlog, or sent) goes out if the socket takes it
    /// now, and nothing else does; then the lingering close. Any other
    /// error closes at once. Returns false to close now.
    fn tls_fatal(&mut self, c: &mut Conn, e: &io::Error) -> bool {
        if !c.transport.is_tls() || e.kind() != io::ErrorKind::InvalidData {
            return false;
        }
        c.out.clear();
        if c.transport.has_backlog() {
            match c.transport.flush(&mut c.out, Limit::NONE, true) {
                Ok(Flushed::All) => {}
                // A client that does not read would not read the alert.
                _ => return false,
            }
        }
        self.close_lingering(c)
    }

    /// Discards input until the client closes, up to [`LINGER_BYTES`]
    /// (and [`LINGER`], the timer's): raw bytes from the socket, which
    /// no protocol reads any more. Returns false to close now.
    fn linger(&mut self, c: &mut Conn) -> bool {
        let Some(mut left) = c.life.lingering().map(|l| l.left.get()) else {
            return false;
        };
        let before = left;
        let done = self.discard_input(c, &mut left);
        if left != before && c.life.body_unread() > 0 {
            // A body left unread still coming: its timer starts again
            // (its bytes, not time, bound it).
            c.life.touch(self.clock.now);
        }
        // (What is left is never none while it lingers on.)
        if let (Some(l), Some(left)) = (c.life.lingering(), NonZeroU32::new(left)) {
            l.left = left;
        }
        !done
    }

    /// Reads and drops what `c`'s client sent, raw from the socket, up to
    /// `left` bytes (lowered by what was read): whether that is over (the
    /// client closed, the bound was reached, or the socket failed), not
    /// merely nothing more waiting now.
    fn discard_input(&mut self, c: &mut Conn, left: &mut u32) -> bool {
        // (A worker at rest has given its read buffer back.)
        self.pools.rbuf.reserve(16 * 1024);
        loop {
            self.pools.rbuf.clear();
            match c.transport.tcp_mut().read(&mut self.pools.rbuf, usize::MAX) {
                Ok(0) => return true,
                Ok(n) if n as u64 >= u64::from(*left) => return true,
                Ok(n) => *left -= n as u32,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return true,
            }
        }
    }

    /// Reads what is available and answers every complete request in it;
    /// what it read is taken from `turn`. Returns whether anything was
    /// consumed or produced.
    fn read_and_process(&mut self, c: &mut Conn, turn: &mut usize) -> io::Result<bool> {
        if c.awaiting_proxy() && c.transport.is_tls() {
            // (`[proxy] tls_listen`: the header comes before TLS.)
            if !c.transport.tcp().read_more || !self.take_proxy_header_before_tls(c)? {
                // Not all here: its next bytes raise an event.
                c.transport.tcp_mut().read_more = false;
                return Ok(false);
            }
        }
        self.pools.rbuf.clear();
        if !c.pending.is_empty() {
            let p = std::mem::take(&mut c.pending);
            self.pools.rbuf.extend_from_slice(&p);
            self.pools.take_back_buf(p);
        }
        let had = self.pools.rbuf.len();
        let unread = c.transport.tcp().read_more && !c.transport.tcp().eof;
        if had == 0 && !unread && c.h1().is_some_and(h1::Conn::idles_without_input) {
            // Nothing to read, nothing held, and HTTP/1.1 would make
            // nothing of no input (between requests, or while a producer
            // answers: no check to take, no body to finish).
            return Ok(false);
        }
        if had == 0 {
            if let Some(moved) = self.splice_body(c, turn) {
                return moved;
            }
        }
        // (A body streaming to a producer: no more than its input takes.)
        let room = c.h1().and_then(|h| h.body_room(&mut self.exchanges));
        let (link, rbuf) = (&mut c.transport, &mut self.pools.rbuf);
        let spare = (rbuf.capacity() - rbuf.len())
            .min(room.map_or(usize::MAX, |r| r.saturating_sub(rbuf.len())));
        // (`splice_body` changed nothing when it declined.)
        if unread && spare > 0 {
            let read = link.read(rbuf, spare);
            let t = link.tcp_mut();
            match read {
                Ok(0) => {
                    t.eof = true;
                    t.read_more = false;
                }
                // A short read means the socket is drained: with
                // edge-triggered polling the next arrival raises a new event.
                Ok(n) if n < spare && !t.hangup => t.read_more = false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => t.read_more = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let fresh = self.pools.rbuf.len() - had;
        *turn = turn.saturating_sub(fresh);
        let rbuf = std::mem::take(&mut self.pools.rbuf);
        let mut header = 0;
        if c.awaiting_proxy() {
            header = match self.take_proxy_header(c, &rbuf) {
                Ok(n) => n,
                Err(e) => {
                    self.pools.rbuf = rbuf;
                    return Err(e);
                }
            };
        }
        let consumed = match c.awaiting_proxy() {
            // (Kept as pending input until the header is whole.)
            true => 0,
            false => header + self.speak(c, &rbuf[header..], had.saturating_sub(header)),
        };
        if consumed < rbuf.len() && !c.life.closing() {
            if c.transport.tcp().eof {
                // The client left in the middle of a request: nothing to answer.
                c.life.close();
            } else {
                let mut p = self.pools.lend_buf();
                p.extend_from_slice(&rbuf[consumed..]);
                c.pending = p;
            }
        }
        self.pools.rbuf = rbuf;
        Ok(fresh > 0 || consumed > 0)
    }

    /// Moves what came of a request body from `c`'s socket straight into
    /// the file that holds it (a WebDAV PUT's), by `splice(2)` through a
    /// pipe: the kernel copies the bytes once, where a `read` and a
    /// `write` copy them twice (about a quarter less CPU a MiB here). Only
    /// over plain TCP, for a body framed by its length, with nothing of it
    /// read into memory before (what came with the head went the usual
    /// way), and when the worker has a pipe to spare; `None` otherwise,
    /// and the body is read as ever. Moves at most [`SPLICED_AT_ONCE`] a
    /// call, as a `read` fills at most its buffer (taken from `turn`);
    /// says whether anything moved, as [`Worker::read_and_process`] does.
    fn splice_body(&mut self, c: &mut Conn, turn: &mut usize) -> Option<io::Result<bool>> {
        use crate::server::transport::Link;
        use crate::sys::splice::Pipe;
        let Link::Tcp(tcp) = &mut c.transport else {
            return None;
        };
        if !tcp.read_more || tcp.eof || c.life.closing() {
            return None;
        }
        let (decoder, spool) = c.proto.h1_mut()?.body_to_pipe(&mut self.exchanges)?;
        let mut pipe = Pipe::take()?;
        let mut left = decoder.length_left().unwrap_or(0);
        let mut moved = 0;
        // (The pipe is empty before each fill: `EAGAIN` then means the
        // socket has nothing more, not that the pipe's slots are full.)
        while left > 0 && moved < SPLICED_AT_ONCE {
            let ask = usize::try_from(left).unwrap_or(usize::MAX).min(pipe.room());
            match pipe.fill_from(tcp.socket(), ask) {
                Ok(0) => {
                    tcp.eof = true;
                    tcp.read_more = false;
                    break;
                }
                Ok(n) => {
                    spool.take_from(&mut pipe);
                    (left, moved) = (left - n as u64, moved + n);
                    if pipe.held() > 0 {
                        // (The file took no more: its error is the
                        // spool's, answered below.)
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    tcp.read_more = false;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(Err(e)),
            }
        }
        decoder.skip_length(moved as u64);
        *turn = turn.saturating_sub(moved);
        if moved == 0 {
            return Some(Ok(false));
        }
        c.life.touch(self.clock.now);
        if self.body_grew(c, None) && c.proto.h1().is_some_and(|h| h.body_is_done()) {
            // (Its end, as the protocol reads it: what waited answers.)
            let _ = self.process(c, &[], 0);
        }
        Some(Ok(true))
    }

    /// Hands `input` (bytes from `fresh` on arrived just now) to the
    /// protocol connection `c` speaks; returns the bytes consumed. What
    /// it speaks is chosen here, before any protocol reads: a fresh plain
    /// connection whose first bytes are the HTTP/2 preface (h2c with
    /// prior knowledge, RFC 9113 §3.3), or whose client chose `h2` by
    /// ALPN, switches to HTTP/2; a request that asks for h2c (`Upgrade:
    /// h2c`, RFC 7540 §3.2), which HTTP/1.1 hands back unanswered,
    /// switches it if it may, else is answered over HTTP/1.1.
    fn speak(&mut self, c: &mut Conn, input: &[u8], fresh: usize) -> usize {
        #[cfg(feature = "http2")]
        {
            use super::h2::Opening;
            use crate::server::conn::Proto;
            if c.speaks_h2() {
                return self.process_h2(c, input);
            }
            match self.h2_opening(c, input) {
                Opening::Http1 => {}
                Opening::Partial => return 0,
                Opening::Http2 => {
                    c.proto = Proto::H2(self.h2_session());
                    return self.process_h2(c, input);
                }
            }
        }
        match self.process(c, input, fresh) {
            Processed::Consumed(n) => n,
            #[cfg(feature = "http2")]
            Processed::Upgrade(n, settings, mut r) => {
                // (The upgrade takes the rest of the connection: a client
                // waits for the 101 before its preface, so nothing follows
                // the request in `input`.)
                if !self.h2c_upgrade(c, &r, &settings) {
                    self.dispatch(c, &mut r, 0);
                }
                self.pools.take_back_request(r);
                n
            }
        }
    }
}

/// The most body bytes [`Worker::splice_body`] moves in one call (one
/// full pipe, as much as one `read` of the worker's buffer takes); a
/// drive moves a turn's worth ([`TURN`]) at most.
const SPLICED_AT_ONCE: usize = 256 * 1024;

/// The timer of lingering connection `c` (at the sweep, `age` since its
/// state's timer started): whether to close it now. It closes [`LINGER`]
/// after its socket's send queue last moved: while the queue still holds
/// the answer and drains (a slow reader of a large body), the timer
/// starts again, since a close would make the client's next bytes (an
/// HTTP/2 client's WINDOW_UPDATE or PING) reset the connection and drop
/// the rest; a queue that does not move for `send_timeout` (a client
/// that stopped reading) closes it as a stalled write would.
pub(super) fn linger_due(
    c: &mut Conn,
    now: Instant,
    age: Duration,
    send_timeout: Duration,
) -> bool {
    let unsent = c.transport.tcp().unsent();
    let Some(l) = c.life.lingering() else {
        return false;
    };
    if unsent != l.unsent {
        l.unsent = unsent;
        c.life.touch(now);
        return false;
    }
    age >= if unsent > 0 {
        send_timeout.max(LINGER)
    } else {
        LINGER
    }
}
