//! HTTP/1.1 connections that became byte tunnels (see
//! [`crate::server::tunnel`]): made from a produced answer whose head was
//! a 101, once it is out of the sink; then driven here, the client's
//! bytes to the producer's input and the producer's to the connection's
//! output, as each side takes them; timed out by the producer's idle
//! timeout (`read_timeout`); logged once it closes (status 101, the bytes
//! it passed to the client, its whole time, its upstream), whoever
//! closes it.

use std::io;
use std::os::fd::AsRawFd;

use mio::unix::SourceFd;
use mio::Token;

use super::proxied::client_of;
use super::{access_log, Worker, TUNNEL_BASE};
use crate::config::Level;
use crate::handlers::produce::{Cx, Gave, InputEnd, Produce};
use crate::server::conn::{Conn, Proto};
use crate::server::h1;
use crate::server::h1::sink::OUT_CAP;
use crate::server::transport::Transport;
use crate::server::tunnel::{Logged, Tunnel};

/// The token of source `i` of the tunnel of connection `index`.
fn token_at(index: usize, i: usize) -> Token {
    Token(TUNNEL_BASE + index * 3 + i)
}

/// Maps a tunnel's token back to its connection and its source.
pub(super) fn split_token(t: usize) -> (usize, usize) {
    let n = t - TUNNEL_BASE;
    (n / 3, n % 3)
}

/// What a tunnel's pump came to.
enum Pumped {
    Idle,
    Moved,
    /// It is over: the upstream closed, or (`true`: its producer is to
    /// be stopped) it failed, or the client cannot be read any more.
    Over(bool),
}

/// Takes what `producer` is done with out of the watch, and lets it
/// close.
fn retire(registry: &mio::Registry, producer: &mut dyn Produce) {
    while let Some(fd) = producer.retired() {
        let _ = registry.deregister(&mut SourceFd(&fd.as_raw_fd()));
    }
}

impl Worker {
    /// Makes `c` a tunnel if its HTTP/1.1 produced answer was a 101 (its
    /// head went to the sink): the producer leaves the exchanges (its
    /// sources are watched under the connection's tokens from now on),
    /// the request goes back to the pools but for what its log line
    /// says, the HTTP/1.1 state goes.
    pub(super) fn become_tunnel(&mut self, c: &mut Conn) {
        let Some(h1) = c.proto.h1_mut() else {
            return;
        };
        let Some(p) = h1.produced().filter(|p| p.framing.tunnel) else {
            return;
        };
        let client_done = p.framing.tunnel_reads && p.body.is_none();
        let Some(p) = h1.end_produced(&mut c.life, self.clock.now) else {
            return;
        };
        let Some(mut run) = self.exchanges.take_run(p.ex) else {
            return;
        };
        let registry = self.poll.registry();
        super::pipe::retire(registry, &mut run);
        let status = run.status();
        let (producer, mut held) = run.into_tunnel();
        for (i, source) in producer.sources().into_iter().enumerate() {
            let Some((fd, want)) = source else { continue };
            let (token, interest) = (token_at(c.index, i), super::pipe::interest(want));
            // (Should it fail, the tunnel times out as a silent one.)
            if registry
                .reregister(&mut SourceFd(&fd), token, interest)
                .is_err()
            {
                let _ = registry.register(&mut SourceFd(&fd), token, interest);
            }
        }
        let client = client_of(c, &held.req);
        let https = held.req.https(c.transport.session().is_some());
        let logged = Logged::new(&held.req, (client, https), held.started, status);
        self.pools.take_back_held(&mut held);
        c.proto = Proto::Tunnel(Box::new(Tunnel {
            producer,
            logged,
            body_from: p.framing.body_from,
            client_done,
        }));
    }

    /// An event on source `source` of the tunnel of connection `i`: it
    /// is ready, and the connection moves.
    pub(super) fn on_tunnel_event(&mut self, i: usize, source: usize) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        if let Some(t) = c.tunnel() {
            t.producer.ready(source);
        }
        self.on_event(i, false);
    }

    /// Moves tunnel `c` as far as it goes now: the client's bytes to the
    /// producer's input while it has room, then the producer's to the
    /// output while that has room. Whether anything moved; a tunnel that
    /// is over is ended (logged), and the connection closes after what
    /// is queued.
    pub(super) fn pump_tunnel(&mut self, c: &mut Conn) -> bool {
        let pumped = match self.tunnel_input(c) {
            Pumped::Over(stop) => Pumped::Over(stop),
            input => match (self.tunnel_output(c), input) {
                (Pumped::Idle, Pumped::Idle) => Pumped::Idle,
                (Pumped::Over(stop), _) => Pumped::Over(stop),
                _ => Pumped::Moved,
            },
        };
        if let Some(t) = c.tunnel() {
            retire(self.poll.registry(), &mut *t.producer);
        }
        match pumped {
            Pumped::Idle => false,
            Pumped::Moved => {
                c.life.touch(self.clock.now);
                true
            }
            Pumped::Over(stop) => {
                self.end_tunnel(c, stop);
                true
            }
        }
    }

    /// The client's bytes (those left over first) to the producer's
    /// input while it has room (dropped once it takes no more), and its
    /// end once it sent its last; then the input's write.
    fn tunnel_input(&mut self, c: &mut Conn) -> Pumped {
        let Proto::Tunnel(t) = &mut c.proto else {
            return Pumped::Idle;
        };
        let Some(input) = t.producer.input() else {
            return Pumped::Idle;
        };
        let mut moved = false;
        loop {
            if !c.pending.is_empty() {
                let n = match input.is_closed() {
                    true => c.pending.len(),
                    false => input.room().min(c.pending.len()),
                };
                if n == 0 {
                    break;
                }
                if !input.is_closed() {
                    input.feed(&c.pending[..n]);
                }
                c.pending.drain(..n);
                moved = true;
                if !c.pending.is_empty() {
                    break;
                }
                self.pools.take_back_buf(std::mem::take(&mut c.pending));
            }
            let tcp = c.transport.tcp();
            if !tcp.read_more || tcp.eof || (!input.is_closed() && input.room() == 0) {
                break;
            }
            self.pools.rbuf.clear();
            // (No more than the input takes: the rest would wait aside.)
            let spare = match input.is_closed() {
                true => self.pools.rbuf.capacity(),
                false => self.pools.rbuf.capacity().min(input.room()),
            };
            match c.transport.read(&mut self.pools.rbuf, spare) {
                Ok(0) => {
                    let tcp = c.transport.tcp_mut();
                    tcp.eof = true;
                    tcp.read_more = false;
                }
                Ok(n) => {
                    let tcp = c.transport.tcp_mut();
                    if n < spare && !tcp.hangup {
                        // (Drained: the next arrival raises an event.)
                        tcp.read_more = false;
                    }
                    let mut p = self.pools.lend_buf();
                    p.extend_from_slice(&self.pools.rbuf);
                    c.pending = p;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.transport.tcp_mut().read_more = false;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // (A reset, a broken TLS record: the client is gone.)
                Err(_) => return Pumped::Over(true),
            }
        }
        if c.transport.tcp().eof && c.pending.is_empty() && !t.client_done {
            // Its last byte came: the upstream is told (a half-close),
            // and may still answer.
            t.client_done = true;
            input.end();
            moved = true;
        }
        match input.write() {
            Ok(wrote) => moved |= wrote.moved,
            // (It takes no more: what comes is dropped.)
            Err(InputEnd::Refused) => moved = true,
            Err(InputEnd::Unreadable(_)) => return Pumped::Over(true),
        }
        match moved {
            true => Pumped::Moved,
            false => Pumped::Idle,
        }
    }

    /// The producer's bytes to the output while it has room.
    fn tunnel_output(&mut self, c: &mut Conn) -> Pumped {
        let mut moved = false;
        loop {
            let room = OUT_CAP.saturating_sub(c.out.buffered());
            let Proto::Tunnel(t) = &mut c.proto else {
                return Pumped::Idle;
            };
            if room == 0 {
                break;
            }
            let buf = &mut self.pools.pipe_buf;
            buf.clear();
            let mut cx = Cx {
                log: &mut self.logger,
                raw_ok: false,
            };
            // (Over: whether it is, and whether it failed, so is stopped.)
            let (over, why) = match t.producer.next(room, buf, &mut cx) {
                Gave::Pending => {
                    if let Some(next) = t.producer.successor() {
                        t.producer = next;
                    }
                    break;
                }
                // (A tunnel's bytes are the producer's: nothing interim.)
                Gave::Bytes | Gave::Interim(_) => (None, None),
                Gave::Last | Gave::End => (Some(false), None),
                Gave::Cut(why) | Gave::Fail(_, why) => (Some(true), Some(why)),
                Gave::Head(..) | Gave::Redirect(_) => {
                    (Some(true), Some("gave a second head".into()))
                }
            };
            if let Some(why) = why {
                let label = t.producer.label();
                self.logger
                    .log(Level::Error, format_args!("{label}: {why}"));
            }
            if !buf.is_empty() {
                moved = true;
                if c.out.capacity() == 0 {
                    c.out = self.pools.lend_out();
                }
                c.out.push_bytes(&self.pools.pipe_buf);
            }
            if let Some(stop) = over {
                return Pumped::Over(stop);
            }
        }
        match moved {
            true => Pumped::Moved,
            false => Pumped::Idle,
        }
    }

    /// Tunnel `c` made no progress for its idle timeout: it is closed,
    /// and the error log says why.
    pub(super) fn tunnel_timed_out(&mut self, c: &mut Conn) {
        let Some(t) = c.tunnel() else {
            return;
        };
        let why = t.producer.timeout_why();
        let label = t.producer.label();
        self.logger
            .log(Level::Error, format_args!("{label}: {why}"));
        self.end_tunnel(c, true);
    }

    /// Ends tunnel `c` (`stop`: its producer is stopped first, as when
    /// the client is gone or it timed out): its sources leave the watch,
    /// its access-log line is written (once what is queued has left, or
    /// the connection ends first), and the connection closes after what
    /// is queued, an HTTP/1.1 connection again with nothing under way.
    pub(super) fn end_tunnel(&mut self, c: &mut Conn, stop: bool) {
        if c.tunnel().is_none() {
            return;
        }
        let Proto::Tunnel(mut t) = std::mem::replace(&mut c.proto, Proto::H1(h1::Conn::new()))
        else {
            return;
        };
        if stop {
            t.producer.stop();
            t.producer.tend(&mut Cx {
                log: &mut self.logger,
                raw_ok: false,
            });
        }
        let registry = self.poll.registry();
        retire(registry, &mut *t.producer);
        for (fd, _) in t.producer.sources().into_iter().flatten() {
            let _ = registry.deregister(&mut SourceFd(&fd));
        }
        let l = &t.logged;
        let took = self.clock.now.saturating_duration_since(l.started);
        self.counts.stats.answered(l.method(), l.status, took);
        if self.logger.access_enabled() {
            let mut rec = l.record(self.clock.wall(), c.transport.session());
            rec.upstream = t.producer.upstream();
            access_log::push_record(c, &mut self.logger, &rec, t.body_from, l.started);
        }
        c.life.close();
    }
}
