//! Taking new connections from the worker's listeners: the connection
//! limits, plain TCP or TLS by listener, and what keeps a flood of TLS
//! handshakes from starving the established connections: the cap on
//! handshakes in progress (beyond it, new TLS connections wait in the
//! kernel's accept queue; at the cap, a handshake stalled before its
//! ClientHello was whole gives its place), and the turn handshakes take in each pass of
//! the event loop (the established connections' events first, then at
//! most [`HANDSHAKES_PER_TURN`](super::listen::HANDSHAKES_PER_TURN) handshaking connections'); and the debug
//! line of a TLS connection that failed.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use mio::{Interest, Token};

use super::{Worker, REFUSED};
use crate::access::limits::Refused;

/// The most idle connections closed at once to make room for new ones
/// (see [`Worker::reclaim_idle`]).
const RECLAIM_BATCH: usize = 16;
/// How long after a look for idle connections found none the next one
/// waits.
const RECLAIM_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
use crate::config::Level;
use crate::server::conn::Conn;
use crate::server::drain::Drain;
use crate::server::transport::{Link, Tcp};
use crate::sys::net;

impl Worker {
    /// Accepts every connection waiting on listener `li`.
    pub(super) fn accept_all(&mut self, li: usize) {
        while !self.listen.paused() {
            let Some(&(_, speaks)) = self.listen.listeners.get(li) else {
                return;
            };
            let tls = speaks.tls();
            // A TLS connection is accepted only with a place for its
            // handshake: a flood of handshakes waits in the kernel's queue
            // while established connections are served.
            let slot = match tls {
                true => match self.handshake_slot() {
                    Some(slot) => Some(slot),
                    None => {
                        self.listen.tls_waiting = true;
                        return;
                    }
                },
                false => None,
            };
            let accepted = match self.listen.listeners.get(li) {
                Some((listener, _)) => listener.accept(),
                None => return,
            };
            match accepted {
                Ok((stream, peer)) => {
                    // An IPv4 client of a dual-stack socket (systemd's
                    // `ListenStream=80` passes one) is its IPv4 address
                    // everywhere: limits, logs, `X-Forwarded-For`, CGI.
                    let peer = canonical(peer);
                    // Behind a PROXY header the client is not known yet:
                    // it counts against its address once the header says.
                    let proxied = speaks.proxied();
                    let admit = |w: &Self| match proxied {
                        true => w.counts.counters.conn_limits.admit_total(),
                        false => w.counts.counters.conn_limits.admit(peer.ip()),
                    };
                    let mut admitted = admit(self);
                    if admitted == Err(Refused::Total) && self.reclaim_idle() {
                        admitted = admit(self);
                    }
                    if let Err(why) = admitted {
                        // Refused early, before any state exists for it;
                        // connections with a request under way are not
                        // touched. (A TLS client could not read a plain
                        // answer.)
                        if !tls {
                            let _ = net::send(&stream, REFUSED, false);
                            // (Counted as an answer, as the access log has it.)
                            let no_wait = std::time::Duration::ZERO;
                            self.counts.stats.answered(b"", 503, no_wait);
                        }
                        // (Within the budget of refusals' lines: a flood
                        // of clients over the limit is not a flood of lines.)
                        if self.logger.enabled(Level::Warn)
                            && self.counts.refusals.allow(self.clock.now)
                        {
                            self.logger.log(
                                Level::Warn,
                                format_args!("refused connection from {}: {why}", peer.ip()),
                            );
                        }
                        continue;
                    }
                    let tcp = Tcp::new(stream, self.settings.cfg.site.static_files.sendfile)
                        .accepted_by(li);
                    let link = match (slot, &self.listen.tls) {
                        (Some(slot), Some(acceptor)) => {
                            match acceptor.wrap(tcp, slot, self.clock.now) {
                                Ok(t) => Link::Tls(Box::new(t)),
                                Err(e) => {
                                    self.counts.counters.conn_limits.release(peer.ip());
                                    self.logger
                                        .log(Level::Error, format_args!("cannot start TLS: {e}"));
                                    continue;
                                }
                            }
                        }
                        _ => Link::Tcp(tcp),
                    };
                    self.add_conn(link, peer, proxied);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // Out of descriptors or memory: back off instead of
                // spinning on a listener that stays readable.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                    ) =>
                {
                    match self.listen.pause(self.clock.now) {
                        Some(0) => self.logger.log(
                            Level::Warn,
                            format_args!("accept: {e}; pausing new connections for 100 ms (said at most once a minute while it lasts)"),
                        ),
                        Some(n) => self.logger.log(
                            Level::Warn,
                            format_args!("accept: {e}; pausing new connections for 100 ms ({n} more such pauses since the last line)"),
                        ),
                        None => {}
                    }
                }
                Err(_) => {}
            }
        }
    }

    /// At `limits.max_connections`, room for a new connection: one of
    /// this worker's idle keep-alive connections in 16 (at least one, at
    /// most [`RECLAIM_BATCH`]), those idle longest first, are closed now (their last words said:
    /// TLS's close_notify, HTTP/2's GOAWAY, then the FIN), as nginx
    /// closes reusable connections when it runs out. Else a client that
    /// holds the limit's worth of idle connections, one request each per
    /// keep-alive time, would keep everyone else out. Whether any was
    /// closed. A look that finds none is not made again for
    /// [`RECLAIM_WAIT`]: a flood of new connections at the limit costs
    /// no pass over every connection each.
    pub(super) fn reclaim_idle(&mut self) -> bool {
        if self
            .listen
            .none_idle_at
            .is_some_and(|at| self.clock.now.saturating_duration_since(at) < RECLAIM_WAIT)
        {
            return false;
        }
        let idle: Vec<(Instant, usize)> = (0..self.conns.slots())
            .filter_map(|i| {
                let c = self.conns.get(i)?;
                let quiet = c.idle()
                    && c.pending.is_empty()
                    && c.transport.deadline().is_none()
                    && !c.awaiting_proxy()
                    && !c.speaks_h3();
                quiet.then(|| (c.life.since(), i))
            })
            .collect();
        if idle.is_empty() {
            self.listen.none_idle_at = Some(self.clock.now);
            return false;
        }
        // (One at least; more when many are idle, so that the next new
        // connections find room without a look each.)
        let batch = (idle.len() / 16).clamp(1, RECLAIM_BATCH);
        let idle = earliest(idle, batch);
        self.listen.none_idle_at = None;
        if self.logger.enabled(Level::Info) && self.counts.refusals.allow(self.clock.now) {
            self.logger.log(
                Level::Info,
                format_args!(
                    "limits.max_connections reached: {} idle keep-alive connections closed \
                     to make room",
                    idle.len()
                ),
            );
        }
        for (_, i) in idle {
            self.last_words(i);
            self.close(i);
        }
        true
    }

    /// A place for one more handshake: a free one, or else the place of
    /// the oldest handshake that stalled before its ClientHello was
    /// whole, which is closed. A peer that sends part of a hello and
    /// goes quiet costs no CPU, the cap's concern (a flood of whole
    /// hellos, each a key exchange and a signature, still waits in the
    /// kernel's queue), and must not keep new clients out until its
    /// `handshake_timeout`: at the cap, it gives its place to the next
    /// client, as a server without a cap would have served that client.
    fn handshake_slot(&mut self) -> Option<crate::server::transport::Slot> {
        let acceptor = self.listen.tls.as_ref()?;
        if let Some(slot) = acceptor.slot() {
            return Some(slot);
        }
        let conns = &self.conns;
        let stalled = self.listen.oldest_tls(
            |j, at| handshaking(conns, j, at),
            |j, _| conns.get(j).is_some_and(|c| c.transport.hello_stalled()),
        )?;
        // (Within the budget of lines on failed TLS connections: a flood
        // of stalled hellos must not flood the log.)
        if self.logger.enabled(Level::Debug) && self.listen.tls_errors.allow(self.clock.now) {
            if let Some(c) = self.conns.get(stalled) {
                let peer = c.peer.ip();
                self.logger.log(
                    Level::Debug,
                    format_args!(
                        "{peer}: TLS handshake stalled before its ClientHello was whole; \
                         closed at the handshake cap for a new connection"
                    ),
                );
            }
        }
        self.close(stalled);
        self.listen.tls.as_ref()?.slot()
    }

    /// Registers a connection just accepted and serves what it holds.
    fn add_conn(&mut self, link: Link, peer: SocketAddr, proxied: bool) {
        let idx = self.conns.reserve();
        let mut conn = Conn::new(link, idx, peer, self.clock.now);
        conn.life.awaiting_proxy = proxied;
        if self
            .poll
            .registry()
            .register(
                conn.transport.tcp_mut().source(),
                Token(idx),
                Interest::READABLE,
            )
            .is_err()
        {
            self.conns.unreserve(idx);
            self.counts.release(peer.ip(), proxied);
            return;
        }
        let tls = conn.transport.is_tls();
        let deadline = conn.transport.deadline();
        self.conns.insert(idx, conn);
        if let Some(deadline) = deadline {
            let conns = &self.conns;
            self.listen
                .accepted_tls(idx, deadline, |j, at| handshaking(conns, j, at));
        }
        // With TCP_DEFER_ACCEPT the request (or the ClientHello) is
        // normally already here: serve it now rather than after another
        // epoll round trip (a ClientHello in the handshakes' turn).
        // (Registered first, so bytes that arrive after this read still
        // raise an event.) At a stop, what it holds is served now or
        // never.
        if !self.settings.cfg.timeouts.defer_accept.is_zero() || self.drain.mode == Drain::Stop {
            if tls {
                self.listen.handshake_later(idx);
            } else {
                self.on_event(idx, true);
            }
        }
    }

    /// Puts off an event of connection `i` to the handshakes' turn if the
    /// connection is in its TLS handshake; returns whether it did.
    pub(super) fn handshake_later(&mut self, i: usize, readable: bool) -> bool {
        let Some(c) = self.conns.get_mut(i) else {
            return false;
        };
        if c.transport.deadline().is_none() {
            return false;
        }
        if readable {
            c.transport.tcp_mut().read_more = true;
        }
        self.listen.handshake_later(i);
        true
    }

    /// The handshakes' turn: drives a few of the handshaking connections
    /// that have had an event (or were just accepted with their hello).
    pub(super) fn take_handshake_turn(&mut self) {
        for _ in 0..self.listen.handshake_turn() {
            let Some(i) = self.listen.next_handshake() else {
                return;
            };
            // (A connection closed meanwhile is gone: nothing happens.)
            self.on_event(i, true);
            // Stalled before its hello was whole: at the cap, a new
            // connection may take its place (`handshake_slot`).
            if self.listen.tls_waiting
                && self
                    .conns
                    .get(i)
                    .is_some_and(|c| c.transport.hello_stalled())
            {
                self.listen.stalled = true;
            }
        }
    }

    /// Accepts the TLS connections left waiting at the handshake cap,
    /// once handshakes have ended (no new event would come for them).
    pub(super) fn accept_waiting_tls(&mut self) {
        if !self.listen.take_tls_waiting() {
            return;
        }
        for li in 0..self.listen.listeners.len() {
            if self.listen.listeners[li].1.tls() {
                self.accept_all(li);
            }
        }
    }

    /// Says at `debug` why a TLS connection failed (garbage, plain HTTP,
    /// a handshake refused), within the worker's budget of such lines: a
    /// scanner must not flood the error log.
    pub(super) fn tls_failed(&mut self, c: &Conn, e: &io::Error) {
        if !c.transport.is_tls()
            || e.kind() != io::ErrorKind::InvalidData
            || !self.logger.enabled(Level::Debug)
        {
            return;
        }
        self.report_tls_errors_not_logged();
        if self.listen.tls_errors.allow(self.clock.now) {
            self.logger
                .log(Level::Debug, format_args!("{}: {e}", c.peer.ip()));
        }
    }

    /// Says how many TLS failures the budget kept out of the log.
    pub(super) fn report_tls_errors_not_logged(&mut self) {
        let what = "failed TLS connections were not explained";
        self.listen
            .tls_errors
            .report_refused(self.clock.now, &mut self.logger, what);
    }
}

/// Whether connection `i` of `conns` is the TLS connection accepted with
/// handshake deadline `at`, still in its handshake.
fn handshaking(conns: &super::slab::Slab, i: usize, at: Instant) -> bool {
    conns
        .get(i)
        .is_some_and(|c| c.transport.deadline() == Some(at))
}

/// The `n` earliest of `all`, earliest first: one pass keeping them in a
/// short sorted list (the standard library's selection would cost the
/// binary some 6 KB, for a path taken only at `limits.max_connections`).
fn earliest(all: Vec<(Instant, usize)>, n: usize) -> Vec<(Instant, usize)> {
    let mut out: Vec<(Instant, usize)> = Vec::with_capacity(n + 1);
    for e in all {
        if out.len() == n && out.last().is_some_and(|last| e >= *last) {
            continue;
        }
        let at = out.partition_point(|o| *o <= e);
        out.insert(at, e);
        out.truncate(n);
    }
    out
}

/// `peer` with an IPv4-mapped IPv6 address as the IPv4 address it is.
/// (Out of line: inlined in `accept_all`, +1.4 KB of the size-gated build.)
#[inline(never)]
fn canonical(peer: SocketAddr) -> SocketAddr {
    match peer {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => peer,
        },
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_come_first_and_no_more() {
        let t0 = Instant::now();
        let at = |ms: u64, i: usize| (t0 + std::time::Duration::from_millis(ms), i);
        let all = vec![at(5, 0), at(1, 1), at(9, 2), at(3, 3), at(1, 4), at(7, 5)];
        assert_eq!(earliest(all.clone(), 3), [at(1, 1), at(1, 4), at(3, 3)]);
        assert_eq!(earliest(all.clone(), 1), [at(1, 1)]);
        assert_eq!(earliest(all.clone(), 6).len(), 6);
        assert_eq!(earliest(all, 0), []);
        assert_eq!(earliest(Vec::new(), 2), []);
    }
}
