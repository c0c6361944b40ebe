//! One worker thread: its own epoll, its own `SO_REUSEPORT` listeners, its
//! connections in a slab, one coarse timer sweep a second. No locks on the
//! request path.

use std::io;
use std::net::TcpListener as StdListener;
use std::num::NonZeroU32;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token, Waker};

use super::conn::{Conn, Proto};
use super::drain::{Drain, DrainOrder};
use super::exchange::Exchanges;
use super::listen::Speaks;
use super::router::Router;
use super::transport::Setup;
use crate::access::verify::Verifier;
use crate::config::Level;
use crate::http::Status;
use crate::log::Logger;
use crate::server::counters::Counters;
use crate::server::h1::Timer;
use crate::sys::launcher::Launchers;

mod accept;
mod access_log;
mod clock;
mod counting;
mod dispatch;
mod drain;
mod drive;
#[cfg(feature = "http2")]
mod h2;
#[cfg(feature = "http3")]
mod h3;
mod listen;
mod pipe;
mod pools;
mod produced;
mod proxied;
#[cfg(feature = "http3")]
mod quic;
mod rest;
mod settings;
mod slab;
mod timers;
#[cfg(feature = "upstreams")]
mod tunnel;
#[cfg(feature = "upstreams")]
#[cfg(feature = "upstreams")]
mod upstream;
mod waits;
mod wakeups;
mod warm;

use access_log::settle;
use clock::Clock;
use counting::Counts;
use dispatch::{answering, request_record};
use drain::Draining;
use listen::Listen;
use pools::{Pools, Request};
use settings::Settings;
use slab::Slab;
use timers::Timers;
use wakeups::Wakeups;

/// Token of the waker that tells a worker to shut down.
const WAKER: Token = Token(usize::MAX);
/// Listener `i` has token `LISTENER_BASE + i`.
const LISTENER_BASE: usize = usize::MAX / 2;
/// The pipes of the programs answering exchanges have tokens from
/// `PIPE_BASE` up, three an exchange (see `pipe`).
const PIPE_BASE: usize = usize::MAX / 8;
/// A tunnel's sources' tokens: `TUNNEL_BASE` up, three a connection (see
/// `tunnel`).
#[cfg(feature = "upstreams")]
const TUNNEL_BASE: usize = usize::MAX / 16;
/// A worker's UDP socket `i` (QUIC) has token `QUIC_BASE + i`.
#[cfg(feature = "http3")]
const QUIC_BASE: usize = usize::MAX / 32;
/// Size of the per-thread read buffer.
const READ_BUF: usize = 64 * 1024;
/// Output queues larger than this are not kept for reuse.
const OUT_KEEP: usize = 512 * 1024;
/// How long a closing connection may keep sending before it is dropped.
const LINGER: Duration = Duration::from_secs(2);
/// How many bytes a closing connection may still send before it is
/// dropped (read and thrown away, so that the close sends no reset).
const LINGER_BYTES: NonZeroU32 = NonZeroU32::new(256 * 1024).expect("not zero");
/// How many bytes of a request body left unread (a 413 for its
/// length) a closing connection may still send, at most, each arrival
/// starting its [`LINGER`] timer again: a browser reads the answer only
/// once its upload is sent or fails, and a reset before then loses it.
const LINGER_BODY_BYTES: NonZeroU32 = NonZeroU32::new(64 * 1024 * 1024).expect("not zero");
/// What a connection over the limits gets before it is closed.
const REFUSED: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// Scratch buffers grown beyond this by one answer are given back after it.
const SCRATCH_KEEP: usize = 256 * 1024;
/// Most bytes a throttled connection writes at once.
const THROTTLE_CHUNK: usize = 16 * 1024;
/// Most bytes a connection moves (written, and read) before the worker's
/// other connections have their turn. A client that takes a large file
/// as fast as the worker sends it (loopback, a fast LAN) kept every other
/// client of the worker waiting while one `sendfile` moved up to 90 MB
/// (50 ms), and one that uploads as fast as the worker takes it, for the
/// whole upload (seconds). nginx stops at `sendfile_max_chunk`, 2 MiB
/// too; 512 KiB cost 1 MiB answers ~10 % more CPU (three `sendfile`s
/// each instead of one).
const TURN: usize = 2 * 1024 * 1024;
/// Most spare buffers and queues a worker keeps.
const SPARES: usize = 16;
/// Timer sweep period.
const TICK: Duration = Duration::from_secs(1);
/// Most 403s and 404s a worker explains in the error log per second (at
/// `debug`); the rest are counted in one line.
const REFUSALS_PER_SEC: u32 = 20;

/// What a worker needs from the server that started it.
pub struct WorkerInit {
    /// The static handler's settings.
    pub files: crate::server::sites::SiteFiles,
    /// What the workers of this configuration count in together.
    pub counters: Arc<Counters>,
    /// Embedded handlers, in mount order.
    pub mounts: crate::server::sites::SiteMounts,
    /// Starts CGI programs; `None`: the worker starts them itself.
    pub launcher: Option<Arc<Launchers>>,
    /// Hashes passwords off the loop.
    pub verifier: Arc<Verifier>,
    /// Wakes this worker's loop (an order, a finished password check).
    pub waker: Arc<Waker>,
    /// Its `SO_REUSEPORT` socket of each listen address, and what its
    /// clients speak.
    pub listeners: Vec<(StdListener, Speaks)>,
    /// Its UDP socket of each QUIC address (`[http3] enable`).
    #[cfg(feature = "http3")]
    pub udp: Vec<std::net::UdpSocket>,
    /// Its generation's TLS (certificates, limits), with TLS listeners.
    pub tls: Option<Setup>,
    /// Its log handle.
    pub logger: Logger,
    /// When to wind down, and how (see [`crate::server::drain`]).
    pub order: Arc<DrainOrder>,
    /// Its event loop (made with the waker, see [`poll_and_waker`]).
    pub poll: Poll,
    /// Told each time the loop goes round its timer pass.
    pub heartbeat: Arc<super::lifecycle::Heartbeat>,
    /// What it counts (for the built-in `metrics` and `status`).
    pub stats: Arc<crate::handlers::stats::WorkerStats>,
}

/// Creates the poll instance and the waker for a worker, so the main
/// thread can hold the waker before the worker starts.
pub fn poll_and_waker() -> io::Result<(Poll, Arc<Waker>)> {
    let poll = Poll::new()?;
    let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
    Ok((poll, waker))
}

/// A worker's state.
pub struct Worker {
    poll: Poll,
    /// Its listeners, with TLS's acceptor.
    listen: Listen,
    /// Its connections.
    conns: Slab,
    /// What it counts.
    counts: Counts,
    /// Chooses who answers each request.
    router: Router,
    /// What wakes it besides its sockets.
    wakeups: Wakeups,
    /// Its configuration, and the limits worked out from it.
    settings: Settings,
    logger: Logger,
    /// The time of this pass of the loop.
    clock: Clock,
    /// The buffers it lends and reuses.
    pools: Pools,
    /// Connections to drive at a time, the sweep, the quiet time.
    timers: Timers,
    /// Where it is in winding down.
    drain: Draining,
    /// The requests on their way that wait (see [`super::exchange`]).
    exchanges: Exchanges,
}

impl Worker {
    /// Prepares a worker; registers its listeners.
    pub fn new(init: WorkerInit) -> io::Result<Worker> {
        let cfg = Arc::clone(&init.files[0].cfg);
        let now = Instant::now();
        #[allow(unused_mut)]
        let mut listen = Listen::new(init.poll.registry(), init.listeners, init.tls.as_ref(), now)?;
        #[cfg(feature = "http3")]
        {
            listen.quic = match init.tls.as_ref().and_then(|t| t.quic.clone()) {
                Some(config) if !init.udp.is_empty() => {
                    let limits = crate::h3::conn::Limits {
                        retry_above: cfg.http3.retry_above as usize,
                        // (As HTTP/2's: the same count, RFC 9114 §4.2.2.)
                        max_field_section_size: cfg.http2.max_header_list_size as usize,
                    };
                    let budget = quic::Budget {
                        max: cfg.http3.max_cancels.into(),
                        window: cfg.http3.flood_window,
                    };
                    Some(quic::Quic::new(
                        init.poll.registry(),
                        init.udp,
                        config,
                        (limits, budget),
                        Arc::clone(&init.waker),
                    )?)
                }
                _ => None,
            };
            if let Some(q) = listen.quic.as_mut() {
                let ports = listen.listeners.iter().map(|(l, speaks)| {
                    let port = l.local_addr().ok().map(|a| a.port());
                    port.filter(|_| speaks.tls())
                });
                q.advertise(ports);
            }
        }
        let failures = init.counters.auth_failures.clone();
        let (wakeups, wake) = Wakeups::new(init.verifier, init.waker);
        let mut router = Router::new(init.files, init.mounts, failures, init.launcher, wake)?;
        router.count_in(Arc::clone(&init.stats));
        router.share_rates(init.counters.rates.clone());
        Ok(Worker {
            poll: init.poll,
            listen,
            conns: Slab::new(),
            counts: Counts::new(init.counters, init.stats, now),
            router,
            wakeups,
            settings: Settings::new(cfg),
            logger: init.logger,
            clock: Clock::new(now),
            pools: Pools::new(),
            timers: Timers::new(now, init.heartbeat),
            drain: Draining::new(init.order),
            exchanges: Exchanges::new(),
        })
    }

    /// Runs the event loop until shutdown has drained every connection.
    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        loop {
            // (The wait is reckoned from the pass's time, not read again:
            // as nginx does, its timers may fire a pass's work late.)
            let now = self.clock.now;
            let mut timeout = if self.drain.until.is_some() || self.listen.paused() {
                Duration::from_millis(100)
            } else {
                self.timers
                    .next_tick
                    .saturating_duration_since(now)
                    .max(Duration::from_millis(10))
            };
            if let Some(first) = self.timers.earliest() {
                timeout = timeout.min(first.saturating_duration_since(now));
            }
            // (QUIC's timers pace packets and detect their loss: their
            // wait is reckoned from the time read now.)
            #[cfg(feature = "http3")]
            if let Some(quic) = self.listen.quic.as_ref() {
                let now = Instant::now();
                if let Some(first) = quic.earliest(now) {
                    timeout = timeout.min(first.saturating_duration_since(now));
                }
            }
            if self.listen.handshakes_waiting() {
                // Handshakes wait: look at what else is ready, then go on.
                timeout = Duration::ZERO;
            }
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.logger
                        .log(Level::Error, format_args!("poll failed: {e}"));
                    break;
                }
            }
            self.clock.tick();
            self.router.set_now(self.clock.now);
            if !events.is_empty() {
                self.timers.worked(self.clock.now);
            }
            // The main thread's news first: a drain ordered before a
            // request arrived applies to that request's answer even when
            // both come in one batch (an idle connection's next request
            // after a reload is answered `Connection: close`).
            if events.iter().any(|ev| ev.token() == WAKER) {
                self.take_checks();
                #[cfg(feature = "cold-lookups")]
                self.take_colds();
                self.take_streams();
                self.take_order();
                #[cfg(feature = "http3")]
                self.quic_mail();
            }
            for ev in events.iter() {
                match ev.token() {
                    WAKER => {}
                    Token(t) if t >= LISTENER_BASE => self.accept_all(t - LISTENER_BASE),
                    #[cfg(feature = "http3")]
                    Token(t) if self.listen.quic.as_ref().is_some_and(|q| q.owns(t)) => {
                        self.quic_readable(t, ev.is_error() || ev.is_write_closed());
                    }
                    Token(t) if t >= PIPE_BASE => {
                        let (index, source) = pipe::split_token(t);
                        let failed = ev.is_error() || ev.is_write_closed();
                        let read = ev.is_readable() || ev.is_read_closed() || failed;
                        self.on_pipe_event(index, source, read, ev.is_writable() || failed);
                    }
                    #[cfg(feature = "upstreams")]
                    Token(t) if t >= TUNNEL_BASE => {
                        let (index, source) = tunnel::split_token(t);
                        self.on_tunnel_event(index, source);
                    }
                    Token(i) => {
                        if ev.is_read_closed() || ev.is_error() {
                            // The FIN may have come with the last data: read
                            // on until read() says so, or it goes unseen.
                            if let Some(c) = self.conns.get_mut(i) {
                                c.transport.tcp_mut().hangup = true;
                            }
                        }
                        let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
                        if !self.handshake_later(i, readable) {
                            self.on_event(i, readable);
                        }
                    }
                }
            }
            self.take_handshake_turn();
            if !self.timers.is_empty() {
                self.fire_timers();
            }
            #[cfg(feature = "http3")]
            self.quic_fire();
            self.accept_waiting_tls();
            if self.timers.sweep_due(self.clock.now) || self.drain.until.is_some() {
                self.sweep();
            }
            if self.listen.resume_due(self.clock.now) {
                for i in 0..self.listen.listeners.len() {
                    self.accept_all(i);
                }
            }
            self.logger.flush();
            if self.drain.done(self.clock.now, self.conns.live()) {
                break;
            }
        }
        if self.drain.mode == Drain::Serve {
            // (The loop failed: the listeners close with the worker.)
            self.listen.listeners.clear();
            self.drain.order.listeners_closed();
        }
        // Whatever still runs is abandoned: no child outlives its worker.
        for i in 0..self.conns.slots() {
            self.last_words(i);
            self.close(i);
        }
        self.router.reap(self.clock.now, true, &mut self.logger);
        self.logger.flush();
    }

    /// Drives connection `i` after an event (`readable`: its socket may
    /// have input), a timer or a pipe event.
    fn on_event(&mut self, i: usize, readable: bool) {
        let Some(mut conn) = self.conns.take(i) else {
            return;
        };
        // (Throttled output moves on timers, without a socket event.)
        self.timers.worked(self.clock.now);
        let keep = catch_unwind(AssertUnwindSafe(|| {
            // (A QUIC connection's input is in its session already.)
            #[cfg(feature = "http3")]
            if conn.speaks_h3() {
                return self.drive_h3(&mut conn);
            }
            if readable {
                conn.transport.tcp_mut().read_more = true;
            }
            self.drive(&mut conn)
        }));
        match keep {
            Ok(true) => self.conns.put(i, conn),
            Ok(false) => {
                self.conns.put(i, conn);
                self.close(i);
            }
            Err(_) => {
                self.logger.log(
                    Level::Error,
                    format_args!("internal error serving {}; connection closed", conn.peer),
                );
                self.pools.restore();
                self.conns.put(i, conn);
                self.close(i);
            }
        }
    }

    /// An event on pipe `source` of the process answering the exchange in
    /// slot `index`: it is ready (to be read, written, as `read` and
    /// `write` say), and its connection moves.
    fn on_pipe_event(&mut self, index: usize, source: usize, read: bool, write: bool) {
        // (An idle upstream connection may be watched under it still.)
        #[cfg(feature = "upstreams")]
        if read && source == 0 {
            self.router.stir_pool(pipe::token_at(index, 0).0);
        }
        let Some(id) = self.exchanges.id_at(index) else {
            return;
        };
        let Some(conn) = self.exchanges.get(id).map(|ex| ex.conn) else {
            return;
        };
        if let Some(run) = self.exchanges.run_mut(id) {
            run.ready_for(source, read, write);
        }
        if self.conns.get(conn).is_some() {
            self.on_event(conn, false);
        }
        // What the answer's turn left unread, the client being slower,
        // may be read on ahead of it (FastCGI's `buffer_answer`).
        #[cfg(feature = "upstreams")]
        if let (true, Some(run)) = (read, self.exchanges.run_mut(id)) {
            run.hold_ahead(&mut self.logger, false);
            pipe::retire(self.poll.registry(), run);
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut c) = self.conns.take(i) {
            #[cfg(feature = "http3")]
            if c.speaks_h3() {
                self.h3_close(&mut c);
            }
            #[cfg(feature = "http2")]
            if let Some(mut s) = c.proto.h2_mut().map(|s| std::mem::take(&mut s.answers)) {
                // Every answer still on its way is logged with what it
                // sent, and every process still answering is stopped.
                for a in s.drain(..) {
                    self.h2_forget(&mut c, a);
                }
            }
            if c.producing() {
                self.abandon_produced(&mut c);
            }
            #[cfg(feature = "upstreams")]
            self.end_tunnel(&mut c, true);
            if let Some(wait) = c
                .take_wait(None)
                .and_then(|id| self.exchanges.take_wait(id))
            {
                self.abandon_wait(&mut c, None, wait);
            }
            // What never left (the client went away) counts as not sent.
            settle(&mut self.logger, &mut c.out, c.sent, true);
            // Closing the socket (dropping it) removes it from epoll.
            self.counts.release(c.peer.ip(), c.awaiting_proxy());
            self.conns.free(i);
        }
    }

    /// Closes idle connection `i` gracefully (see
    /// [`Worker::close_gracefully`]).
    fn close_idle(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        match Self::close_gracefully(c) {
            true => self.on_event(i, false),
            false => self.close(i),
        }
    }

    /// Idle connection `i`'s keep-alive time is up, `age` after its last
    /// answer was handed to the kernel: it closes once its client has
    /// read that answer, not before. While the kernel still holds bytes
    /// the client has not acknowledged (`SIOCOUTQ`, asked only now and
    /// then once a tick), it waits, and its idle time starts again once
    /// they are; a client that has not read it all `send` after it was
    /// handed over is closed all the same (`timeouts.send`).
    fn idle_timeout(&mut self, i: usize, age: Duration, send: Duration) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        if age < send {
            if c.transport.tcp().unsent() > 0 {
                c.life.wait_unread();
                return;
            }
            if c.life.unread() {
                c.life.touch(self.clock.now);
                return;
            }
        }
        self.close_idle(i);
    }

    /// Wakes the throttled connections whose time has come.
    fn fire_timers(&mut self) {
        for idx in self.timers.due(self.clock.now) {
            self.on_event(idx, false);
        }
    }

    /// The once-a-second timer pass over every connection.
    fn sweep(&mut self) {
        self.timers.swept(self.clock.now);
        self.publish_stats();
        self.maybe_rest();
        self.report_refusals_not_logged();
        self.report_tls_errors_not_logged();
        self.router.reap(self.clock.now, false, &mut self.logger);
        let t = self.settings.cfg.timeouts.clone();
        // Winding down, whether HTTP/2 connections hear GOAWAY now, busy
        // or not (at a reload, `timeouts.keepalive` after it, or when
        // `timeouts.reload_drain` is about to end). `None`: serving.
        #[cfg(feature = "http2")]
        let goaway_at_once = self.drain.goaway_at_once(self.clock.now, t.keepalive);
        for i in 0..self.conns.slots() {
            let Some(c) = self.conns.get_mut(i) else {
                continue;
            };
            if c.awaiting_proxy()
                && self.clock.now.saturating_duration_since(c.life.since()) >= t.header
            {
                // The balancer never said who the client is: no HTTP
                // answer (it would go to nobody in particular).
                let peer = c.peer.ip();
                self.client_info(format_args!(
                    "client {peer}: no PROXY header within timeouts.header on a [proxy] \
                     listener; connection closed"
                ));
                self.close(i);
                continue;
            }
            if c.transport
                .deadline()
                .is_some_and(|at| self.clock.now >= at)
            {
                // The TLS handshake did not end in time (a client that
                // sends nothing, or dribbles): like the head timeout.
                self.close(i);
                continue;
            }
            #[cfg(feature = "http2")]
            if let Some(at_once) = goaway_at_once {
                // At a reload, a connection hears it once it has opened
                // no stream for a second (a client in the middle of a
                // burst of requests finishes it here: one that opens no
                // stream after a GOAWAY and does not connect again, as
                // h2load, would lose the rest), or at the latest as said
                // above (`timeouts.keepalive`, as an idle HTTP/1.1
                // connection is kept); at a stop, at once.
                let quiet = |h2: &crate::server::h2::Session| {
                    self.clock
                        .now
                        .saturating_duration_since(h2.conn.last_opened())
                        >= TICK
                };
                if let Some(h2) = c
                    .proto
                    .h2_mut()
                    .filter(|h2| (at_once || quiet(h2)) && !h2.conn.shutting_down())
                {
                    // Winding down: GOAWAY (RFC 9113 §6.8), so the client
                    // opens nothing more (the final one a round trip
                    // later: the streams it opened meanwhile are served);
                    // its open streams finish and the connection closes
                    // once they have. A connection
                    // stalled on flow control hears it too (it waited for
                    // the shutdown grace and a bare close before); its
                    // `timeouts.send` still runs from the next sweep.
                    h2::shut_down(h2, i, self.clock.now, &mut self.timers);
                    self.on_event(i, false);
                    continue;
                }
            }
            if let Some(blocked) = c.blocked_since {
                if self.clock.now.saturating_duration_since(blocked) >= t.send {
                    self.close(i);
                }
                continue;
            }
            let age = self.clock.now.saturating_duration_since(c.life.since());
            let stopping = self.drain.mode == Drain::Stop;
            // A TLS handshake under way is timed by `handshake_timeout`
            // alone (above), not by the keep-alive timer of the HTTP/1.1
            // state it waits in: a slow client's handshake used to be
            // cut at `timeouts.keepalive` when that was the shorter.
            let handshaking = c.transport.deadline().is_some();
            // (An HTTP/2 connection that sent its GOAWAY lingers as
            // HTTP/1.1 does.)
            if c.life.lingers() {
                if drive::linger_due(c, self.clock.now, age, t.send) {
                    self.close(i);
                }
                continue;
            }
            let timer = match &mut c.proto {
                Proto::H1(h1) => h1.timer(),
                // (QUIC's idle timeout closes a connection whose client
                // sends nothing; HTTP's timeouts, which any packet would
                // otherwise put off, are timed here. At a stop, one with
                // nothing under way closes at once.)
                #[cfg(feature = "http3")]
                Proto::H3(s) => {
                    let now = self.clock.now;
                    if !s.idle() {
                        s.busy_at = now;
                    }
                    // An answer the client lets nothing of through for
                    // timeouts.send is reset, as over HTTP/2.
                    let stalled = |a: &crate::server::h3::Answer| {
                        a.window_since
                            .is_some_and(|at| now.saturating_duration_since(at) >= t.send)
                    };
                    // One whose client acknowledges nothing of its
                    // answers for timeouts.send is closed, as a TCP one
                    // whose socket takes nothing.
                    if !s.acknowledging(now, t.send) {
                        let Some(mut conn) = self.conns.take(i) else {
                            continue;
                        };
                        self.h3_unacknowledged(&mut conn);
                        self.conns.put(i, conn);
                        self.on_event(i, false);
                        continue;
                    }
                    if s.answers.iter().any(stalled) {
                        let Some(mut conn) = self.conns.take(i) else {
                            continue;
                        };
                        self.h3_send_timeouts(&mut conn, t.send);
                        self.conns.put(i, conn);
                        self.on_event(i, false);
                        continue;
                    }
                    // Winding down, as HTTP/2's: GOAWAY once quiet a
                    // second (at a reload) or at once (at a stop), then
                    // closed (H3_NO_ERROR) once its answers are done.
                    let Some(at_once) = goaway_at_once else {
                        // Serving: HTTP/1.1's and HTTP/2's timeouts. (QUIC's
                        // own idle timeout counts any packet, a PING too.)
                        if s.winding_down {
                            // (Its GOAWAY went for idleness: closed once
                            // what it was asked since is answered.)
                            if s.idle() {
                                self.close(i);
                            }
                            continue;
                        }
                        if s.idle_due(now, (t.header, t.keepalive, t.body)) {
                            // Idle: GOAWAY (the client opens nothing more,
                            // and sends again what crossed it), then closed.
                            s.idle_close = true;
                            match s.go_away() {
                                true => self.on_event(i, false),
                                false => self.close(i),
                            }
                            continue;
                        }
                        // A request body that makes no progress for
                        // timeouts.body is answered 408, as over HTTP/2.
                        let quiet = now.saturating_duration_since(s.last_read);
                        if quiet >= t.body && s.answers.iter().any(|a| a.wait.is_some()) {
                            let Some(mut conn) = self.conns.take(i) else {
                                continue;
                            };
                            let late = self.h2_body_timeouts(&mut conn);
                            self.conns.put(i, conn);
                            if late {
                                self.on_event(i, false);
                            }
                        }
                        continue;
                    };
                    let quiet = now.saturating_duration_since(s.last_opened) >= TICK;
                    if !s.winding_down && (at_once || quiet) {
                        if s.go_away() {
                            self.on_event(i, false);
                        }
                    } else if s.winding_down && s.idle() {
                        self.close(i);
                    }
                    continue;
                }
                #[cfg(feature = "upstreams")]
                Proto::Tunnel(tunnel) => {
                    // Its producer's idle timeout (`read_timeout`), from
                    // the last byte either way.
                    if age >= tunnel.producer.idle_timeout(t.handler) {
                        let mut conn = self.conns.take(i).expect("present");
                        self.tunnel_timed_out(&mut conn);
                        self.conns.put(i, conn);
                        self.on_event(i, false);
                    } else if age >= TICK {
                        // (Idle a second or more: TLS keeps its keys'
                        // bytes, not their expanded forms.)
                        c.transport.rest();
                    }
                    continue;
                }
                #[cfg(feature = "http2")]
                Proto::H2(h2) => {
                    let now = self.clock.now;
                    // A header block begun and not whole within
                    // timeouts.header closes the connection, as HTTP/1.1
                    // answers a head that does not come.
                    let head_since = h2.conn.head_since();
                    if head_since.is_some_and(|at| now.saturating_duration_since(at) >= t.header) {
                        let peer = c.peer.ip();
                        self.client_info(format_args!(
                            "client {peer}: an HTTP/2 header block not whole within timeouts.header"
                        ));
                        self.close_idle(i);
                        continue;
                    }
                    // An HTTP/2 connection is idle when no stream is open
                    // (one whose socket takes nothing is timed out above,
                    // as `blocked`; an answer that waits for a window,
                    // below).
                    let answered = h2.answers.is_empty() && h2.conn.all_answered();
                    let idle = answered && h2.conn.open_streams() == 0;
                    if idle && age >= t.keepalive {
                        self.idle_timeout(i, age, t.send);
                        continue;
                    }
                    // Streams answered whole that the client leaves open
                    // (a request body it never ends, unwanted or not):
                    // nothing is under way, and a client that sends
                    // nothing more for timeouts.body is closed (GOAWAY),
                    // as HTTP/1.1 closes where a body stops coming. They
                    // used to keep the connection forever.
                    if answered && age >= t.body {
                        self.idle_timeout(i, age, t.send);
                        continue;
                    }
                    if idle && age >= TICK {
                        // Idle a second or more: it holds its HPACK table,
                        // not its buffers (nor expanded TLS keys).
                        h2.rest();
                        c.transport.rest();
                    }
                    // (A body's time runs from the last request bytes: see
                    // `Session::body_at`.)
                    let quiet = now.saturating_duration_since(h2.body_at);
                    let Some(mut conn) = self.conns.take(i) else {
                        continue;
                    };
                    // An answer whose bytes wait for a window the client
                    // keeps shut ends at timeouts.send (its stream reset).
                    let stalled = self.h2_send_timeouts(&mut conn, t.send);
                    // A request body that makes no progress for
                    // timeouts.body is answered 408 (HTTP/1.1 closes).
                    let late = quiet >= t.body && self.h2_body_timeouts(&mut conn);
                    self.conns.put(i, conn);
                    if stalled || late {
                        self.on_event(i, false);
                    }
                    continue;
                }
            };
            match timer {
                Timer::Idle if stopping && c.out.is_empty() => self.close_idle(i),
                Timer::Idle if handshaking => {}
                Timer::Idle if age >= t.keepalive => self.idle_timeout(i, age, t.send),
                // Idle a second or more: TLS keeps its keys' bytes, not
                // their expanded forms.
                Timer::Idle if age >= TICK => c.transport.rest(),
                Timer::Body if age >= t.body => {
                    // No progress on a request body: what waits for it is
                    // answered 408 (as over HTTP/2, and as a streamed
                    // body is), then the connection closes.
                    let mut conn = self.conns.take(i).expect("present");
                    let Some(h1) = conn.proto.h1_mut() else {
                        self.conns.put(i, conn);
                        self.close(i);
                        continue;
                    };
                    let waiting = h1.body_over(&mut self.exchanges);
                    let e = crate::http::parse::ParseError {
                        status: Status::REQUEST_TIMEOUT,
                        reason: "no progress for timeouts.body (408)",
                    };
                    self.body_refused(&mut conn, e, waiting);
                    conn.life.close();
                    self.conns.put(i, conn);
                    self.on_event(i, false);
                }
                Timer::Head if age >= t.header => {
                    // Slowloris: the head did not arrive in time.
                    let mut conn = self.conns.take(i).expect("present");
                    conn.pending = Vec::new();
                    // (Reading its head since its first byte.)
                    let mut r = self.pools.lend_request(conn.life.since());
                    let why = "request head timed out";
                    self.reject(&mut conn, &mut r, Status::REQUEST_TIMEOUT, (why, b""));
                    self.pools.take_back_request(r);
                    self.conns.put(i, conn);
                    self.on_event(i, false);
                }
                _ => {}
            }
        }
        self.run_timeouts();
    }
}
