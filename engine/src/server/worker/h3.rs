//! HTTP/3 connections in the worker (feature `http3`): each QUIC
//! connection is a connection of the slab (`Proto::H3`, transport
//! `Link::Quic`), driven here when its datagrams, its deadline or one of
//! its exchanges move it: its streams read into `crate::h3::conn`
//! (sans-IO), each request through the same router as HTTP/1.1's and
//! HTTP/2's, each answer back as a HEADERS frame (QPACK) and DATA frames
//! into the stream, only as fast as the stream takes them (its
//! flow-control credit: a large file is read a frame at a time, never
//! held), then its datagrams out through the worker's UDP socket.

use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

use quinn_proto::{Dir, Event, ReadError, StreamEvent, StreamId, VarInt, WriteError};

use super::dispatch::answering;
use super::h2::streams::{upstream_time, Drove, H3};
use super::pipe::NoRoom;
use super::produced::{pump, Tools};
use super::quic::Arrival;
use super::{Request, Worker, SCRATCH_KEEP};
use crate::access::limits::Refused;
use crate::config::Level;
use crate::h3::conn::{Failure, RequestEvent};
use crate::h3::{Code, Error};
use crate::handlers::Plan;
use crate::http::parse::BodyFraming;
use crate::server::conn::{Conn, Proto};
use crate::server::drain::Drain;
use crate::server::exchange::Exchanges;
use crate::server::h2::{request, Piece};
use crate::server::h3::{head, stream, Answer, Session, FRAME};
use crate::server::run::{Fed, Outcome, Run, Sink};
use crate::server::transport::{self, Link};
use crate::sys::cached::Warmth;
use crate::sys::interleave::read_behind_prefixes;

/// What to do with a stream once its bytes are read.
enum Then {
    Nothing,
    /// Stop reading it (a unidirectional stream of an unknown type).
    Stop,
    /// The stream's failure, or the connection's (see [`failed`]).
    Fail(Failure),
}

/// Where an answer is after its stream took what it could.
enum Pushed {
    /// The stream takes no more now (`true`: it refused a write), or the
    /// producer has no more yet (`false`).
    Blocked(bool),
    /// Its `[[throttle]]` rates let it go on at this time.
    Wait(Instant),
    /// All of it went into the stream, which is finished (`true`: its
    /// client has yet to acknowledge it) or reset.
    Done(bool),
    /// The stream is gone (the client stopped it).
    Gone,
}

impl Worker {
    /// Datagrams on QUIC socket `token`.
    pub(super) fn quic_readable(&mut self, token: usize, failed: bool) {
        let Some(q) = self.listen.quic.as_mut() else {
            return;
        };
        if q.gate_event(self.poll.registry(), token, failed) {
            return;
        }
        let mut arrived = Vec::new();
        q.readable(token, self.clock.now, &mut arrived);
        self.quic_arrived(arrived);
    }

    /// The datagrams other workers read for this worker's connections
    /// (see `quic::route`).
    pub(super) fn quic_mail(&mut self) {
        let Some(q) = self.listen.quic.as_mut() else {
            return;
        };
        let mut arrived = Vec::new();
        q.mail(self.clock.now, &mut arrived);
        self.quic_arrived(arrived);
    }

    /// The QUIC side's turn in each pass of the loop: sockets with
    /// datagrams left from their last turn, connections whose deadline
    /// has come.
    pub(super) fn quic_fire(&mut self) {
        let Some(q) = self.listen.quic.as_mut() else {
            return;
        };
        let (mut arrived, mut due) = (Vec::new(), Vec::new());
        q.more(self.clock.now, &mut arrived);
        q.due(self.clock.now, &mut due);
        self.quic_arrived(arrived);
        for slot in due {
            if let Some(s) = self.conns.get_mut(slot).and_then(Conn::h3_mut) {
                s.deadline = None;
                s.quic.handle_timeout(self.clock.now);
                self.on_event(slot, false);
            }
        }
    }

    /// New clients accepted (or refused), and each connection that had
    /// input driven once.
    fn quic_arrived(&mut self, arrived: Vec<Arrival>) {
        let mut touched: Vec<usize> = Vec::new();
        for a in arrived {
            match a {
                Arrival::Incoming(incoming, socket) => {
                    if let Some(slot) = self.quic_accept(incoming, socket) {
                        touched.push(slot);
                    }
                }
                Arrival::Event(slot, event) => {
                    if let Some(s) = self.conns.get_mut(slot).and_then(Conn::h3_mut) {
                        s.quic.handle_event(event);
                        if !touched.contains(&slot) {
                            touched.push(slot);
                        }
                    }
                }
            }
        }
        for slot in touched {
            self.on_event(slot, false);
        }
    }

    /// A new client: a connection of the slab, if its address is within
    /// the connection limits and the worker serves.
    fn quic_accept(&mut self, incoming: quinn_proto::Incoming, socket: usize) -> Option<usize> {
        let q = self.listen.quic.as_mut()?;
        let peer = incoming.remote_address();
        let limits = &self.counts.counters.conn_limits;
        // An Initial's source address is whatever its sender wrote: counted
        // before the client proved it receives there, spoofed Initials
        // would hold another's place (its address's connections, or the
        // server's) until their handshakes time out. Where that matters,
        // the client proves it first (a Retry).
        if !incoming.remote_address_validated() && limits.needs_proof() {
            q.retry(incoming, socket);
            return None;
        }
        let mut admitted = limits.admit(peer.ip());
        // At the limit, idle keep-alive connections give way to a new
        // client, as to a TCP one (see `reclaim_idle`).
        if admitted == Err(Refused::Total) && self.reclaim_idle() {
            admitted = self.counts.counters.conn_limits.admit(peer.ip());
        }
        let q = self.listen.quic.as_mut()?;
        // (At a reload the generations share their UDP sockets, so an old
        // worker still takes the clients whose packets it reads; at a
        // stop, none.)
        // (After an upgrade, the new brisk's: refused, the client goes on
        // over TCP until the new brisk reads these sockets.)
        let handed = crate::server::quic_handover::retired();
        if admitted.is_err() || self.drain.mode == Drain::Stop || handed {
            if admitted.is_ok() {
                self.counts.release(peer.ip(), false);
            }
            q.refuse(incoming, socket);
            // (As a TCP client's refusal is, within the same budget.)
            if let Err(why) = admitted {
                if self.logger.enabled(Level::Warn) && self.counts.refusals.allow(self.clock.now) {
                    let ip = peer.ip();
                    let line = format_args!("refused connection from {ip} (HTTP/3): {why}");
                    self.logger.log(Level::Warn, line);
                }
            }
            return None;
        }
        let slot = self.conns.reserve();
        let Some((handle, quic)) = q.accept(incoming, socket, slot, self.clock.now) else {
            self.conns.unreserve(slot);
            self.counts.release(peer.ip(), false);
            return None;
        };
        let link = Link::Quic(Box::new(transport::Quic {
            local: q.local(socket).unwrap_or(peer),
            server_name: None,
        }));
        let mut c = Conn::new(link, slot, peer, self.clock.now);
        let session = Session::new(quic, handle, socket, q.limits, self.clock.now);
        c.proto = Proto::H3(Box::new(session));
        self.conns.insert(slot, c);
        Some(slot)
    }

    /// Everything QUIC connection `c` has to do after an input: its
    /// events (streams read, requests answered), its answers moved on,
    /// its events for the endpoint, its datagrams, its next deadline.
    /// Whether it stays (false: it is drained, and goes).
    pub(super) fn drive_h3(&mut self, c: &mut Conn) -> bool {
        // Requests whose password check is done are routed again.
        self.take_checked(c);
        loop {
            let Some(s) = c.h3_mut() else { return false };
            let Some(event) = s.quic.poll() else { break };
            match event {
                Event::Connected => self.h3_connected(c),
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = c.h3_mut().and_then(|s| s.quic.streams().accept(dir)) {
                        self.h3_read(c, id);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => self.h3_read(c, id),
                // ("Fully acknowledged or stopped".)
                Event::Stream(StreamEvent::Finished { id }) if id.dir() == Dir::Bi => {
                    if let Some(s) = c.h3_mut() {
                        s.acknowledged(id);
                    }
                }
                // The client may not ask brisk to stop its control stream or
                // its QPACK decoder stream (§6.2.1, RFC 9204 §4.2).
                Event::Stream(StreamEvent::Stopped { id, .. }) if id.dir() == Dir::Uni => {
                    let now = self.clock.now;
                    if let Some(s) = c.h3_mut().filter(|s| s.critical(id)) {
                        close(s, crate::h3::conn::closed_critical(), now);
                    }
                }
                Event::Stream(StreamEvent::Stopped { id, .. }) => {
                    if let Some(s) = c.h3_mut() {
                        s.acknowledged(id);
                    }
                    let a = u32::try_from(id.index())
                        .ok()
                        .and_then(|i| c.h3_mut()?.take(i));
                    if let Some(a) = a {
                        self.h3_forget(c, a);
                    }
                }
                _ => {}
            }
        }
        self.h3_pump_runs(c);
        // Streams whose producer took some of the body: read on.
        let more: Vec<u32> = c.h3_mut().map_or_else(Vec::new, |s| {
            let took = s.answers.iter_mut();
            took.filter_map(|a| std::mem::take(&mut a.own.read_more).then_some(a.id))
                .collect()
        });
        for &id in &more {
            self.h3_read(c, stream(id));
        }
        if !more.is_empty() {
            self.h3_pump_runs(c);
        }
        if let Some(s) = c.h3_mut() {
            // (What the reads acknowledge goes with this turn's packets; a
            // GOAWAY that waited for room goes before the answers take it.)
            s.flush_decoder();
            s.flush_control();
        }
        self.h3_send(c);
        let (now, index) = (self.clock.now, c.index);
        let (Some(s), Some(q)) = (c.h3_mut(), self.listen.quic.as_mut()) else {
            return false;
        };
        while let Some(event) = s.quic.poll_endpoint_events() {
            if let Some(back) = q.endpoint_event(s.handle, event) {
                s.quic.handle_event(back);
            }
        }
        q.transmit(s, now);
        let next = s.quic.poll_timeout();
        q.reschedule(index, s.deadline, next);
        s.deadline = next;
        let (drained, closed_for) = (s.quic.is_drained(), s.closed_for.take());
        if let Some(why) = closed_for {
            let ip = c.peer.ip();
            self.client_info(format_args!("client {ip}: HTTP/3 connection closed: {why}"));
        }
        !drained
    }

    /// The handshake is done: the server's control stream (its type and
    /// SETTINGS) opens, and the name the client asked for is kept.
    fn h3_connected(&mut self, c: &mut Conn) {
        let now = self.clock.now;
        let Some(s) = c.h3_mut() else { return };
        let name = s
            .quic
            .crypto_session()
            .handshake_data()
            .and_then(|d| {
                d.downcast::<quinn_proto::crypto::rustls::HandshakeData>()
                    .ok()
            })
            .and_then(|d| d.server_name)
            .map(|n| n.to_ascii_lowercase().into_boxed_str());
        // (Its few bytes fit the client's initial credit.)
        let mut bytes = Vec::with_capacity(16);
        s.h3.control_stream(&mut bytes);
        s.control = s.open_critical();
        let written = s.control.map(|id| s.quic.send_stream(id).write(&bytes));
        if !matches!(written, Some(Ok(n)) if n == bytes.len()) {
            let e = Error::new(Code::INTERNAL_ERROR, "no room for the control stream");
            close(s, e, now);
        }
        if let Link::Quic(q) = &mut c.transport {
            q.server_name = name;
        }
    }

    /// Reads what client stream `id` has and hands it to the HTTP/3
    /// state; a request's head is routed and answered.
    fn h3_read(&mut self, c: &mut Conn, id: StreamId) {
        let now = self.clock.now;
        let key = u64::from(id);
        let uni = id.dir() == Dir::Uni;
        let mut then = Then::Nothing;
        let (mut head, mut body, mut ended) = (None, Vec::new(), false);
        // (The trailers' fields that may pass: a producer's input passes
        // them on, as HTTP/2's.)
        let mut trailers = Vec::new();
        let (mut reread, mut reset) = (false, false);
        let Some(s) = c.h3_mut() else { return };
        if let Some(read) = s.drop_unwanted(id) {
            s.last_read = now;
            if let Err(f) = read {
                failed(s, id, f, now);
            }
            return;
        }
        // A producer that reads the body takes it as fast as it passes it
        // on: its stream is read no further than its input has room (the
        // rest waits in quinn-proto, its flow-control credit held back,
        // as HTTP/2 holds its window), and again once it took some
        // (`H3Frames::took_body`).
        // A request held while its password is checked has at most
        // HELD_WHILE_CHECKED of its body read meanwhile (the rest waits in
        // quinn-proto, as HTTP/2's stream window holds it back), one
        // waiting for its turn none (its bytes wait unread, bounded as
        // `Worker::wait_turn` says); it is read on once routed again
        // (`Worker::h3_read_on`). (Asked for none, a stream still says
        // whether the client reset it.)
        let index = u32::try_from(id.index()).ok().filter(|_| !uni);
        let answer = index.and_then(|i| s.answer(i)).map(|a| (a.run, a.wait));
        // (Whether its answer still reads its body: a wait's, or a
        // producer's whose input is open.)
        let mut reads = false;
        let mut left = match answer.unwrap_or_default() {
            (Some(ex), _) => {
                let input = (self.exchanges.run_mut(ex))
                    .and_then(|run| run.input())
                    .filter(|input| !input.is_closed());
                reads = input.is_some();
                input.map_or(usize::MAX, |input| input.room())
            }
            (None, Some(ex)) => match self.exchanges.wait(ex) {
                Some(crate::server::waits::Wait::Check(w)) if w.turn => 0,
                Some(crate::server::waits::Wait::Check(w)) => {
                    HELD_WHILE_CHECKED.saturating_sub(w.body.len())
                }
                _ => usize::MAX,
            },
            _ => usize::MAX,
        };
        reads |= matches!(answer, Some((None, Some(_))));
        let (h3, resets) = (&mut s.h3, &mut s.resets);
        let mut recv = s.quic.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        loop {
            let (bytes, fin) = match chunks.next(left) {
                // (Asked for none: bytes are there, left unread.)
                Ok(Some(_)) if left == 0 => break,
                Ok(Some(chunk)) => (chunk.bytes, false),
                Ok(None) => (bytes::Bytes::new(), true),
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(_)) => {
                    *resets += 1;
                    reset = true;
                    if let Err(e) = h3.reset(key) {
                        then = Then::Fail(Failure::Connection(e));
                    }
                    break;
                }
            };
            if left != usize::MAX {
                left -= bytes.len();
            }
            then = if uni {
                match h3.uni(key, &bytes, fin) {
                    Ok(true) => Then::Nothing,
                    Ok(false) => Then::Stop,
                    Err(e) => Then::Fail(Failure::Connection(e)),
                }
            } else {
                let r = h3.request_data(key, &bytes, fin, &mut |ev| match ev {
                    RequestEvent::Head { end } => head = Some(end),
                    RequestEvent::Body(b) => body.extend_from_slice(b),
                    RequestEvent::End(t) => {
                        ended = true;
                        trailers.extend_from_slice(t);
                    }
                });
                match r {
                    Err(f) => Then::Fail(f),
                    Ok(()) => Then::Nothing,
                }
            };
            if fin || !matches!(then, Then::Nothing) {
                break;
            }
            // (A head with some of its body behind it: routed first, so
            // that the rest is read as its route wants, bounded while it
            // waits for a password check, not read while it waits for its
            // turn.)
            if head.is_some() && !body.is_empty() {
                reread = true;
                break;
            }
        }
        let _ = chunks.finalize();
        // (Progress of a request, as `timeouts.body` counts it: a head,
        // body bytes, the end. Frames the protocol ignores, RFC 9114
        // §9, are no progress: dripped, they held a request and its
        // body for ever.)
        if head.is_some() || !body.is_empty() || ended {
            s.last_read = now;
        }
        match then {
            Then::Nothing => {}
            Then::Stop => {
                let code = VarInt::from_u32(Code::STREAM_CREATION_ERROR.0);
                let _ = s.quic.recv_stream(id).stop(code);
                s.h3.forget(key);
            }
            Then::Fail(f) => {
                failed(s, id, f, now);
                return;
            }
        }
        // The client reset a request whose body was still wanted (held for
        // its password check, its turn or its body, or read by a program
        // or an upstream): the rest of its body is gone, so it is let go
        // of (a producer stopped), its answer's half reset too, so that the
        // stream closes (H3_REQUEST_INCOMPLETE: its stream ended without a
        // whole request, RFC 9114 §4.1). Left as it was, a held one was
        // routed once its turn came and a program started, or one under
        // way went on, for a body that would never come. (An answer that
        // no longer reads the body goes on: the client may use it, §4.1.)
        if let (true, true, Some(i)) = (reset, reads, index) {
            let code = VarInt::from_u32(Code::REQUEST_INCOMPLETE.0);
            let _ = s.quic.send_stream(id).reset(code);
            if let Some(a) = s.take(i) {
                self.h3_forget(c, a);
            }
            return;
        }
        let index = u32::try_from(id.index()).ok();
        if let Some(i) = index.filter(|i| !uni && *i >= s.next_request) {
            s.next_request = i + 1;
            s.last_opened = now;
        }
        let Some(end) = head else {
            // More of a body (its head was answered before).
            if let Some(index) = index.filter(|_| !body.is_empty() || ended) {
                self.h2_data(c, index, &body, ended, Some(&trailers));
            }
            return;
        };
        let gone = s.going_away;
        let Some(index) = index.filter(|i| gone.is_none_or(|first| *i < first)) else {
            // After a GOAWAY (or past 2^32 streams): not processed, the
            // client may send it again elsewhere (RFC 9114 §5.2).
            end_request(s, id, key, Code::REQUEST_REJECTED);
            return;
        };
        // (A stream that ended in the same read with no body bytes, nor
        // trailers that pass, asks with no body, as if its HEADERS had
        // ended it: no STOP_SENDING for a body that will never come, a
        // frame a request saved.)
        let end = end || (ended && body.is_empty() && trailers.is_empty());
        if self.crowded(c) {
            // (As HTTP/2 refuses it: `Worker::crowded`.)
            if let Some(s) = c.h3_mut() {
                end_request(s, id, key, Code::REQUEST_REJECTED);
                s.faults += 1;
            }
            let why = NoRoom::Crowded {
                client: c.peer.ip(),
                budget: self.settings.stream_budget,
            };
            let what = "rejected (H3_REQUEST_REJECTED: the client may send it again)";
            self.log_no_room(why, "HTTP/3", format_args!("stream {index} {what}"));
            return;
        }
        let mut r = self.pools.lend_request(now);
        self.h3_request(c, &mut r, index, end);
        self.pools.take_back_request(r);
        if !body.is_empty() || (ended && !end) {
            // (Where the route said: a producer, a wait, or nowhere.)
            self.h2_data(c, index, &body, ended, Some(&trailers));
        }
        if reread {
            self.h3_read(c, id);
        }
    }

    /// A request head arrived on stream `id`: read into `r` (the
    /// buffers lent for it), and answered.
    fn h3_request(&mut self, c: &mut Conn, r: &mut Request, id: u32, end: bool) {
        r.scratch.clear();
        let Some(s) = c.h3_mut() else { return };
        let built = request::fill(
            &mut r.req,
            s.h3.request(),
            end,
            &self.settings.limits,
            &mut self.pools.h2_scratch.head,
        );
        if built.is_ok() {
            r.req.as_http3();
        }
        let Some(plan) = self.stream_plan(c, r, id, built) else {
            return;
        };
        self.h3_answer(c, r, id, plan, 0);
        self.h3_body_unless_read(c, id, end, r.req.body());
    }

    /// Stream `id` was answered: unless it has no body (`no_body`) or a
    /// producer or a wait reads it, its body is not wanted (a static
    /// file, an error answered without it).
    pub(super) fn h3_body_unless_read(
        &mut self,
        c: &mut Conn,
        id: u32,
        no_body: bool,
        framing: BodyFraming,
    ) {
        if !no_body && !self.stream_reads_body::<H3>(c, id) {
            self.h2_refuse_rest(c, id, framing);
        }
    }

    /// The rest of stream `id`'s request body is not wanted (its answer
    /// is complete without it): up to `allowance` more bytes are read and
    /// dropped, then the client is asked to stop sending
    /// ([`Session::refuse_rest`]).
    pub(super) fn h3_refuse_rest(&mut self, c: &mut Conn, id: u32, allowance: u64) {
        let now = self.clock.now;
        if let Some(s) = c.h3_mut() {
            if let Err(f) = s.refuse_rest(stream(id), allowance) {
                failed(s, stream(id), f, now);
            }
        }
    }

    /// Answers stream `id` of `c` with `plan` (for request `r`, which
    /// `redirects` CGI local redirects led to): a produced answer starts
    /// (its sink's framing is [`H3Frames`]), anything else is framed as it is.
    pub(super) fn h3_answer(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        id: u32,
        plan: Plan,
        redirects: u8,
    ) {
        let Some((mut answer, head)) = self.stream_ready::<H3>(c, r, id, plan, redirects) else {
            return;
        };
        let stamp = answering(
            &self.settings,
            &self.clock,
            self.drain.mode,
            (&self.listen, &c.transport),
        )
        .stamp;
        let name = &mut self.pools.h2_scratch.name;
        if let Some(s) = c.h3_mut() {
            answer.own.bytes = s.spare.take();
            let out = &mut answer.own.bytes;
            head::encode(&head, &stamp, out, name, Some(&mut s.heads));
            s.answers.push(answer);
        }
        r.scratch.trim(SCRATCH_KEEP);
    }

    /// Moves every answer of `c` into its stream as far as the stream
    /// takes it; those that are all in (or whose stream went) are done.
    pub(super) fn h3_send(&mut self, c: &mut Conn) {
        let (mut i, now, index) = (0, self.clock.now, c.index);
        let mut wake: Option<Instant> = None;
        let mut moved = false;
        // Streams that refused a write in this pass, and whether a write
        // to another stream went through after it (then theirs was
        // refused for their own window, not the connection's: the
        // connection's room only shrinks within a pass).
        let mut refused: Vec<(u32, bool)> = Vec::new();
        // (Each pass after one that left answers begins one answer
        // further on: each has its turn to take the connection's room
        // first, so one waiting only for the connection's room is not
        // passed over for long, and one whose own window is shut is found
        // so whatever its place. Answers all done need no turns: nothing
        // is moved then.)
        if let Some(s) = c.h3_mut().filter(|s| s.rotate && s.answers.len() > 1) {
            s.answers.rotate_left(1);
        }
        loop {
            let Some(s) = c.h3_mut() else { return };
            let Some(a) = s.answers.get_mut(i) else { break };
            if a.wait.is_some() {
                i += 1;
                continue;
            }
            // (A file's next bytes are framed only once they are cached:
            // if they are not, they are read in off the loop, whose wake
            // drives the connection again, and the other answers go on.)
            let mut ready = |file: &File, warmth: &mut Warmth, offset: u64, len: u64| {
                self.warm(index, file, warmth, offset, len)
            };
            let mut wrote = false;
            let pushed = push(&mut s.quic, a, now, &mut wrote, &mut ready);
            if wrote {
                moved = true;
                for r in &mut refused {
                    r.1 = true;
                }
            }
            match pushed {
                Ok(Pushed::Blocked(true)) => {
                    refused.push((a.id, false));
                    i += 1;
                }
                Ok(Pushed::Blocked(false)) => i += 1,
                Ok(Pushed::Wait(when)) => {
                    // (Throttled: the others are not held up.)
                    wake = Some(wake.map_or(when, |w| w.min(when)));
                    i += 1;
                }
                Ok(Pushed::Done(finished)) => {
                    let mut a = s.answers.swap_remove(i);
                    if finished {
                        s.finished(a.id, now);
                    }
                    // (Its buffer is the next answer's: a warm connection
                    // allocates none per answer.)
                    s.spare.keep(std::mem::take(&mut a.own.bytes));
                    s.spare_pieces.keep(std::mem::take(&mut a.pieces));
                    self.h3_log(a, true);
                }
                Ok(Pushed::Gone) => {
                    let a = s.answers.swap_remove(i);
                    self.h3_forget(c, a);
                }
                Err(e) => {
                    // (A file that cannot be read as far as its length
                    // said: never a frame of made-up bytes.)
                    self.logger.log(
                        Level::Error,
                        format_args!("reading a file for HTTP/3 failed: {e}"),
                    );
                    let code = VarInt::from_u32(Code::INTERNAL_ERROR.0);
                    let a = s.answers.swap_remove(i);
                    let _ = s.quic.send_stream(stream(a.id)).reset(code);
                    self.h3_log(a, false);
                }
            }
        }
        // An answer whose stream refused its bytes is timed (its
        // `window_since`, see `Worker::h3_send_timeouts`) if the stream's
        // own window held it (another stream took bytes after it), or if
        // no answer moved at all (the client acknowledges nothing, or
        // keeps the connection's window shut); one that may only have
        // waited for the connection's room while others took it is left
        // as it was, as HTTP/2 times one that waits for the connection's
        // window only when no other answer got any. (quinn-proto does not
        // say which window held a stream.)
        if let Some(s) = c.h3_mut() {
            s.rotate = s.answers.len() > 1;
            for (id, own) in refused {
                if let Some(a) = s.answer(id).filter(|_| own || !moved) {
                    a.window_since.get_or_insert(now);
                }
            }
        }
        if let (Some(when), Some(s)) = (wake, c.h3_mut()) {
            if s.pacing.throttle_wake(when, now) {
                self.timers.wake_at(when, index);
            }
        }
    }

    /// Logs answer `a` with the body bytes it framed (`whole`: all of
    /// them went into its stream).
    fn h3_log(&mut self, mut a: Answer, whole: bool) {
        if let Some((text, draft)) = a.log.take() {
            let sent = match whole {
                true => a.own.body_sent,
                false => a
                    .own
                    .body_sent
                    .saturating_sub((a.own.bytes.len() - a.own.at) as u64),
            };
            let us = self.clock.now.saturating_duration_since(a.started);
            self.logger
                .finish(&text, draft, sent, us.as_micros() as u64);
        }
    }

    /// Rejects request stream `id` of `c`, nothing of it processed
    /// (RFC 9114 §4.1.1: H3_REQUEST_REJECTED, on both halves, so that the
    /// client may send it again), letting go of a request held on it
    /// before (for a password check or its turn). False if `c` is no
    /// HTTP/3 connection.
    pub(super) fn h3_reject(&mut self, c: &mut Conn, id: u32) -> bool {
        let Some(s) = c.h3_mut() else {
            return false;
        };
        let sid = stream(id);
        end_request(s, sid, u64::from(sid), Code::REQUEST_REJECTED);
        s.faults += 1;
        if let Some(mut a) = s.take(id) {
            self.let_go(c, id, a.wait.take());
            self.h3_forget(c, a);
        }
        true
    }

    /// Forgets an answer whose stream (or connection) is gone: its log
    /// line says what it sent.
    pub(super) fn h3_forget(&mut self, c: &mut Conn, mut a: Answer) {
        if let Some(w) = a.wait.take().and_then(|id| self.exchanges.take_wait(id)) {
            self.abandon_wait(c, Some(a.id), w);
        }
        if let Some(mut run) = self.stream_take_run::<H3>(c, &mut a) {
            // (A producer that never answered is logged as 499.)
            let status = run.stop(&mut self.logger);
            upstream_time(&mut a, &run);
            self.unwatch_run(&mut run);
            if a.log.is_none() && !run.started() {
                self.log_produced(c, &run, status, c.queued_end());
            }
        }
        self.h3_log(a, false);
    }

    /// Stream `id` of `c`, whose request was held (a password check) and
    /// is routed again: what its client sent meanwhile beyond what was
    /// held ([`HELD_WHILE_CHECKED`]) is read on, now that it has
    /// somewhere to go.
    pub(super) fn h3_read_on(&mut self, c: &mut Conn, id: u32) {
        if c.speaks_h3() {
            self.h3_read(c, stream(id));
        }
    }

    /// Body bytes for stream `id`, whose producer reads its request body
    /// (`end`: the body ends with them). False if no producer on the
    /// stream reads a body.
    pub(super) fn h3_run_data(
        c: &mut Conn,
        exchanges: &mut Exchanges,
        id: u32,
        data: &[u8],
        (end, trailers): (bool, Option<&[u8]>),
    ) -> Fed {
        let Some(run) = c
            .h3_mut()
            .and_then(|s| s.answer(id))
            .and_then(|a| a.run)
            .and_then(|ex| exchanges.run_mut(ex))
        else {
            return Fed::NoInput;
        };
        run.feed_body(data, end.then(|| trailers.unwrap_or_default()))
    }

    /// Moves every produced answer on `c`'s streams forward.
    fn h3_pump_runs(&mut self, c: &mut Conn) {
        let has = |a: &Answer| a.run.is_some();
        if !c.h3().is_some_and(|s| s.answers.iter().any(has)) {
            return;
        }
        let mut last = None;
        while let Some(id) = c.h3().and_then(|s| s.next_answer(last, has)) {
            last = Some(id);
            self.h3_drive_stream(c, id, pump);
        }
    }

    /// Runs `drive` on the produced answer of stream `id` of `c` and a
    /// sink for its stream, carries out what it came to, and puts the
    /// answer back unless it ended.
    pub(super) fn h3_drive_stream(
        &mut self,
        c: &mut Conn,
        id: u32,
        drive: impl FnOnce(&mut Run, &mut dyn Sink, Tools<'_>) -> Outcome,
    ) {
        let Some(a) = c.h3_mut().and_then(|s| s.take(id)) else {
            return;
        };
        match self.stream_drive::<H3>(c, a, drive) {
            // (An answer that ended goes once what it queued has gone into
            // the stream.)
            Drove::Going(a) | Drove::Ended(a) => self.h3_put_back(c, a),
            Drove::Gone => {}
        }
    }

    /// Puts answer `a` back in `c`'s session.
    fn h3_put_back(&mut self, c: &mut Conn, a: Answer) {
        match c.h3_mut() {
            Some(s) => s.answers.push(a),
            None => self.h3_forget(c, a),
        }
    }

    /// Answers whose stream has taken none of their bytes for `send`
    /// (the client keeps its flow-control window shut, or acknowledges
    /// nothing) are reset (H3_REQUEST_CANCELLED), as HTTP/2's are
    /// (`Worker::h2_send_timeouts`): QUIC's idle timeout, which any
    /// packet restarts, never ended them. Whether any was.
    pub(super) fn h3_send_timeouts(&mut self, c: &mut Conn, send: Duration) -> bool {
        let now = self.clock.now;
        let late = |a: &Answer| {
            a.window_since
                .is_some_and(|t| now.saturating_duration_since(t) >= send)
        };
        let mut any = false;
        while let Some(id) = c.h3().and_then(|s| s.next_answer(None, late)) {
            let Some(s) = c.h3_mut() else { break };
            let sid = stream(id);
            end_request(s, sid, u64::from(sid), Code::REQUEST_CANCELLED);
            let Some(a) = s.take(id) else { break };
            if self.logger.enabled(Level::Info) {
                self.logger.log(
                    Level::Info,
                    format_args!(
                        "client {}: HTTP/3 stream {id} let nothing of its answer through for \
                         timeouts.send; reset (H3_REQUEST_CANCELLED)",
                        c.peer.ip()
                    ),
                );
            }
            self.h3_forget(c, a);
            any = true;
        }
        any
    }

    /// Connection `c`, whose client has acknowledged nothing of its
    /// answers for `timeouts.send` (see `Session::acknowledging`), is
    /// closed (CONNECTION_CLOSE, H3_NO_ERROR), its answers logged with
    /// what they sent.
    pub(super) fn h3_unacknowledged(&mut self, c: &mut Conn) {
        if self.logger.enabled(Level::Info) {
            self.logger.log(
                Level::Info,
                format_args!(
                    "client {}: HTTP/3 connection acknowledged nothing of its answers for \
                     timeouts.send; closed",
                    c.peer.ip()
                ),
            );
        }
        let answers = c.h3_mut().map(|s| std::mem::take(&mut s.answers));
        for a in answers.into_iter().flatten() {
            self.h3_forget(c, a);
        }
        let now = self.clock.now;
        if let Some(s) = c.h3_mut() {
            s.unacked.clear();
            let e = Error::new(Code::NO_ERROR, "nothing acknowledged for timeouts.send");
            close(s, e, now);
        }
    }

    /// Connection `c` goes (the worker closes it): its answers are
    /// logged with what they sent, and a connection not closed yet is
    /// closed (CONNECTION_CLOSE, H3_NO_ERROR: the server is going), each
    /// answer it cuts short reset first (RESET_STREAM,
    /// H3_REQUEST_CANCELLED), as HTTP/2's get RST_STREAM CANCEL: H3_NO_ERROR
    /// alone says a graceful end (RFC 9114 §5.2), and the client could
    /// take a cut download for a whole one.
    pub(super) fn h3_close(&mut self, c: &mut Conn) {
        let answers = c.h3_mut().map(|s| std::mem::take(&mut s.answers));
        let mut cut = Vec::new();
        for a in answers.into_iter().flatten() {
            cut.push(stream(a.id));
            self.h3_forget(c, a);
        }
        let (now, index) = (self.clock.now, c.index);
        let (Some(s), Some(q)) = (c.h3_mut(), self.listen.quic.as_mut()) else {
            return;
        };
        if !s.quic.is_drained() && !s.quic.is_closed() {
            let why = match (s.idle_close, self.drain.mode) {
                (true, _) => "idle",
                // (A reload's workers go; the server goes on.)
                (false, crate::server::drain::Drain::Retire) => "the server is reloading",
                (false, _) => "the server is stopping",
            };
            let cancelled = VarInt::from_u32(Code::REQUEST_CANCELLED.0);
            for id in &cut {
                let _ = s.quic.send_stream(*id).reset(cancelled);
            }
            // (Sent before the close: a closed connection sends nothing
            // but its CONNECTION_CLOSE.)
            if !cut.is_empty() {
                q.transmit(s, now);
            }
            close(s, Error::new(Code::NO_ERROR, why), now);
            q.transmit(s, now);
        }
        if !s.quic.is_drained() {
            // (Dropped before it drained: the endpoint forgets it now, its
            // connection IDs with it.)
            q.endpoint_event(s.handle, quinn_proto::EndpointEvent::drained());
        }
        q.forget(s.handle, index, s.deadline);
    }
}

/// Frames answer `a` into its stream as far as the stream takes it.
fn push(
    quic: &mut quinn_proto::Connection,
    a: &mut Answer,
    now: Instant,
    moved: &mut bool,
    ready: &mut Ready<'_>,
) -> io::Result<Pushed> {
    // (`timeouts.send` runs while the stream takes none of it: see
    // `Worker::h3_send`.)
    let id = stream(a.id);
    loop {
        if a.own.at == a.own.bytes.len() {
            a.own.bytes.clear();
            a.own.at = 0;
        }
        // (What waits, an answer's head, takes the next piece's frame with
        // it when it is short: a small answer goes in one write, so in one
        // buffer of quinn-proto's. Not a throttled one's: its rates are
        // asked once a piece, as before.)
        let empty = a.own.bytes.is_empty();
        let join = a.own.at == 0 && a.own.bytes.len() < JOINED && (empty || a.throttle.is_none());
        let held = match join {
            true => frame(a, now, ready)?,
            false => None,
        };
        if a.own.at < a.own.bytes.len() {
            match quic.send_stream(id).write(&a.own.bytes[a.own.at..]) {
                Ok(n) if n > 0 => {
                    a.own.at += n;
                    a.window_since = None;
                    *moved = true;
                }
                Ok(_) | Err(WriteError::Blocked) => return Ok(Pushed::Blocked(true)),
                Err(_) => return Ok(Pushed::Gone),
            }
            if a.own.at < a.own.bytes.len() {
                return Ok(Pushed::Blocked(false));
            }
            continue;
        }
        if let Some(when) = held {
            return Ok(Pushed::Wait(when));
        }
        // (A file's bytes not read in yet: see `Worker::h3_send`.)
        if a.open || !a.pieces.is_empty() {
            return Ok(Pushed::Blocked(false));
        }
        if a.broken {
            let _ = quic
                .send_stream(id)
                .reset(VarInt::from_u32(Code::INTERNAL_ERROR.0));
            return Ok(Pushed::Done(false));
        }
        return Ok(Pushed::Done(quic.send_stream(id).finish().is_ok()));
    }
}

/// Below this many bytes, what waits to go into a stream takes the next
/// piece's frame with it.
const JOINED: usize = 4096;

/// Most body bytes read of a request held while its password is checked
/// (QUIC gives the client credit back as brisk reads, so reading it all
/// would hold whatever the client sends meanwhile; HTTP/2's stream window,
/// 256 KiB by default, bounds it there).
const HELD_WHILE_CHECKED: usize = 256 << 10;

/// How many of a file's `len` bytes from `offset` may be framed now (see
/// `Worker::warm`; its answer's [`Warmth`] tells what is known of them).
type Ready<'a> = dyn FnMut(&File, &mut Warmth, u64, u64) -> usize + 'a;

/// Appends answer `a`'s next piece (up to [`FRAME`] bytes of it, and of
/// a file no more than `ready` says), if it has one, as a DATA frame to
/// its bytes; or, if its throttle holds the piece back, when it lets it
/// go.
fn frame(a: &mut Answer, now: Instant, ready: &mut Ready<'_>) -> io::Result<Option<Instant>> {
    let Some(piece) = a.pieces.front_mut() else {
        return Ok(None);
    };
    let mut n = (piece.len() as usize).min(FRAME);
    if let Piece::File(file, offset, len) = piece {
        n = n.min(ready(file, &mut a.warmth, *offset, *len));
        if n == 0 {
            return Ok(None);
        }
    }
    if let Some(t) = &a.throttle {
        match t.take(now, n) {
            Ok(allowed) => n = allowed,
            Err(when) => return Ok(Some(when)),
        }
    }
    match piece {
        Piece::Static(b, at) => {
            head::data_head(n, &mut a.own.bytes);
            a.own.bytes.extend_from_slice(&b[*at..*at + n]);
            *at += n;
        }
        Piece::Bytes(b, at) => {
            head::data_head(n, &mut a.own.bytes);
            a.own.bytes.extend_from_slice(&b[*at..*at + n]);
            *at += n;
        }
        Piece::Mem(m, at, len) => {
            head::data_head(n, &mut a.own.bytes);
            a.own.bytes.extend_from_slice(&m[*at..*at + n]);
            *at += n;
            *len -= n;
        }
        Piece::File(file, offset, len) => {
            let mut h = Vec::with_capacity(8);
            head::data_head(n, &mut h);
            read_behind_prefixes(&mut a.own.bytes, file, *offset, &[(&h, n)])?;
            *offset += n as u64;
            *len -= n as u64;
        }
    }
    a.own.body_sent += n as u64;
    if piece.is_empty() {
        a.piece_sent();
    }
    Ok(None)
}

/// Ends request stream `id` (the protocol's `key`) both ways with
/// `code` (STOP_SENDING and RESET_STREAM), and forgets it.
fn end_request(s: &mut Session, id: StreamId, key: u64, code: Code) {
    let code = VarInt::from_u32(code.0);
    let _ = s.quic.recv_stream(id).stop(code);
    let _ = s.quic.send_stream(id).reset(code);
    s.h3.forget(key);
}

/// Request stream `id` broke the protocol: a stream error ends it (and
/// counts as the client's fault), a connection error closes `s`.
fn failed(s: &mut Session, id: StreamId, f: Failure, now: Instant) {
    match f {
        Failure::Stream(e) => {
            s.faults += 1;
            end_request(s, id, u64::from(id), e.code);
        }
        Failure::Connection(e) => close(s, e, now),
    }
}

/// Closes `s` with `e`'s code and reason (CONNECTION_CLOSE).
fn close(s: &mut Session, e: Error, now: Instant) {
    if e.code != Code::NO_ERROR {
        s.closed_for = Some(e.reason);
    }
    let reason = bytes::Bytes::from_static(e.reason.as_bytes());
    s.quic.close(now, VarInt::from_u32(e.code.0), reason);
}
