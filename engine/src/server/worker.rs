//! One worker thread: its own epoll, its own `SO_REUSEPORT` listeners, its
//! connections in a slab, one coarse timer sweep a second. No locks on the
//! request path.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token, Waker};

use super::conn::Conn;
use super::drain::{Drain, DrainOrder};
use super::listen::Speaks;
use super::transport::{Acceptor, Flushed, Link, Out, Setup, Tcp, Transport};
use crate::access::verify::Verifier;
use crate::access::Checked;
use crate::channel;
use crate::config::{Config, Level};
use crate::handlers::{Plan, Scratch};
use crate::http::body::{BodyDecoder, BodyLimits};
use crate::http::date::DateCache;
use crate::http::parse::{self, BodyFraming};
use crate::http::request::{OwnedRequest, MAX_HEADERS};
use crate::http::response::Stamp;
use crate::http::Status;
use crate::log::budget::LineBudget;
use crate::log::{AccessRecord, Logger};
use crate::server::counters::Counters;
use crate::sys::launcher::Launchers;
use crate::sys::net;

mod accept;
mod access_log;
mod bodies;
mod counting;
mod dispatch;
mod drain;
mod drive;
#[cfg(feature = "http2")]
mod h2;
mod pipe;
mod produced;
mod proxied;
mod rest;

use access_log::settle;
use dispatch::{answering, request_record};
pub use pipe::PipeRun;

use super::router::{Client, Deferred, Routed, Router};
use crate::access::Check;
use crate::handlers::Body;
use crate::server::h1::{Linger, State, Timer};
use crate::server::waits::WholeBody;
use pipe::End;

/// Token of the waker that tells a worker to shut down.
const WAKER: Token = Token(usize::MAX);
/// Listener `i` has token `LISTENER_BASE + i`.
const LISTENER_BASE: usize = usize::MAX / 2;
/// The pipes of connection `i`'s pipe body have tokens `PIPE_BASE + 3i + k`.
const PIPE_BASE: usize = usize::MAX / 8;
/// Size of the per-thread read buffer.
const READ_BUF: usize = 64 * 1024;
/// Output queues larger than this are not kept for reuse.
const OUT_KEEP: usize = 512 * 1024;
/// How long a closing connection may keep sending before it is dropped.
const LINGER: Duration = Duration::from_secs(2);
/// How many bytes a closing connection may still send before it is
/// dropped (read and thrown away, so that the close sends no reset).
const LINGER_BYTES: u32 = 256 * 1024;
/// What a connection over the limits gets before it is closed.
const REFUSED: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// Scratch buffers grown beyond this by one answer are given back after it.
const SCRATCH_KEEP: usize = 256 * 1024;
/// Most bytes a throttled connection writes at once.
const THROTTLE_CHUNK: usize = 16 * 1024;
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
    /// Its listeners, each with what its clients speak.
    listeners: Vec<(TcpListener, Speaks)>,
    /// Starts TLS connections (with TLS listeners).
    tls: Option<Acceptor>,
    /// A TLS listener has connections waiting for a handshake slot.
    tls_waiting: bool,
    /// TLS connections in their handshake with an event not handled yet:
    /// their turn comes after the established connections', a few per
    /// pass of the loop (see [`accept`]).
    handshakes_due: VecDeque<usize>,
    /// Caps the debug lines that explain failed TLS connections.
    tls_errors: LineBudget,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    live: usize,
    counters: Arc<Counters>,
    /// Chooses who answers each request.
    router: Router,
    /// The request being answered (its buffers reused from one to the next).
    req: OwnedRequest,
    verifier: Arc<Verifier>,
    waker: Arc<Waker>,
    /// Finished password checks: connection, request id, outcome.
    checks_tx: channel::Sender<(usize, u64, Checked)>,
    checks_rx: channel::Receiver<(usize, u64, Checked)>,
    next_check: u64,
    /// Connections whose handler's later answer has moved (see
    /// [`crate::handlers::stream::Later`]).
    streams_rx: mpsc::Receiver<usize>,
    cfg: Arc<Config>,
    logger: Logger,
    date: DateCache,
    now: Instant,
    wall: SystemTime,
    rbuf: Vec<u8>,
    scratch: Scratch,
    /// Emptied output queues and input buffers kept for reuse: a
    /// connection borrows a queue while it has output waiting.
    spare_outs: Vec<Out>,
    spare_bufs: Vec<Vec<u8>>,
    /// Bytes of request bodies held for embedded handlers (all connections).
    handler_bodies: u64,
    /// Read buffer for pipe bodies.
    pipe_buf: Vec<u8>,
    /// When the first byte of the request being answered arrived (kept
    /// here rather than in every connection: only a request that waits,
    /// for its body, a password check or a CGI program, keeps its own).
    req_start: Instant,
    /// Throttled connections waiting for their rate: when, and which.
    timers: Vec<(Instant, usize)>,
    limits: parse::Limits,
    body_limits: BodyLimits,
    order: Arc<DrainOrder>,
    /// The order being carried out (`Serve` until one comes).
    draining: Drain,
    /// When the worker exits whatever its connections still hold.
    drain_until: Option<Instant>,
    /// When the sweep first saw the order to wind down.
    #[cfg(feature = "http2")]
    draining_since: Option<Instant>,
    accept_paused_until: Option<Instant>,
    next_tick: Instant,
    /// Caps the debug lines that explain 403s and 404s.
    refusals: LineBudget,
    /// Told each time the loop goes round its timer pass.
    heartbeat: Arc<super::lifecycle::Heartbeat>,
    /// What it counts (for the built-in `metrics` and `status`).
    stats: Arc<crate::handlers::stats::WorkerStats>,
    /// Buffers for HTTP/2 heads.
    #[cfg(feature = "http2")]
    h2_scratch: crate::server::h2::Scratch,
    /// Buffers of HTTP/2 connections that have no stream open, for the
    /// next that opens one.
    #[cfg(feature = "http2")]
    h2_spares: Vec<crate::server::h2::Spares>,
    /// The HTTP/2 limits of its connections (`[http2]`'s), shared.
    #[cfg(feature = "http2")]
    h2_limits: Option<Arc<crate::h2::Limits>>,
    /// Since when no socket or pipe has had an event, if the worker has
    /// worked since it last rested (see [`rest`]).
    quiet_since: Option<Instant>,
}

impl Worker {
    /// Prepares a worker; registers its listeners.
    pub fn new(init: WorkerInit) -> io::Result<Worker> {
        let cfg = Arc::clone(&init.files[0].cfg);
        let mut listeners = Vec::new();
        for (i, (socket, speaks)) in init.listeners.into_iter().enumerate() {
            let mut listener = TcpListener::from_std(socket);
            init.poll.registry().register(
                &mut listener,
                Token(LISTENER_BASE + i),
                Interest::READABLE,
            )?;
            listeners.push((listener, speaks));
        }
        let limits = parse::Limits {
            max_request_line: cfg.limits.max_request_line,
            max_head: cfg.limits.max_header_bytes,
            max_headers: cfg.limits.max_headers.min(MAX_HEADERS),
        };
        let body_limits = BodyLimits {
            max_body: cfg.limits.max_body,
            max_chunk_ext: 4096,
            max_trailers: cfg.limits.max_header_bytes,
        };
        let now = Instant::now();
        let failures = init.counters.auth_failures.clone();
        let (streams_tx, streams_rx) = mpsc::channel();
        let wake = crate::handlers::stream::Wake {
            tx: streams_tx,
            waker: Arc::clone(&init.waker),
            conn: 0,
        };
        let mut router = Router::new(init.files, init.mounts, failures, init.launcher, wake)?;
        router.count_in(Arc::clone(&init.stats));
        router.share_rates(init.counters.rates.clone());
        let (checks_tx, checks_rx) = channel::channel();
        Ok(Worker {
            poll: init.poll,
            listeners,
            tls: init.tls.as_ref().map(Acceptor::new),
            tls_waiting: false,
            handshakes_due: VecDeque::new(),
            tls_errors: LineBudget::new(accept::TLS_ERRORS_PER_SEC, now),
            conns: Vec::new(),
            free: Vec::new(),
            live: 0,
            counters: init.counters,
            router,
            req: OwnedRequest::default(),
            verifier: init.verifier,
            waker: init.waker,
            checks_tx,
            checks_rx,
            next_check: 0,
            streams_rx,
            cfg,
            logger: init.logger,
            date: DateCache::new(),
            now,
            wall: SystemTime::now(),
            rbuf: Vec::with_capacity(READ_BUF),
            scratch: Scratch::default(),
            spare_outs: vec![Out::with_capacity(READ_BUF)],
            spare_bufs: Vec::new(),
            handler_bodies: 0,
            pipe_buf: Vec::with_capacity(READ_BUF),
            timers: Vec::new(),
            req_start: now,
            limits,
            body_limits,
            order: init.order,
            draining: Drain::Serve,
            drain_until: None,
            #[cfg(feature = "http2")]
            draining_since: None,
            accept_paused_until: None,
            next_tick: now + TICK,
            quiet_since: None,
            refusals: LineBudget::new(REFUSALS_PER_SEC, now),
            heartbeat: init.heartbeat,
            stats: init.stats,
            #[cfg(feature = "http2")]
            h2_scratch: Default::default(),
            #[cfg(feature = "http2")]
            h2_spares: Vec::new(),
            #[cfg(feature = "http2")]
            h2_limits: None,
        })
    }

    /// Runs the event loop until shutdown has drained every connection.
    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        loop {
            let mut timeout = if self.drain_until.is_some() || self.accept_paused_until.is_some() {
                Duration::from_millis(100)
            } else {
                self.next_tick
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(10))
            };
            if let Some(first) = self.timers.iter().map(|t| t.0).min() {
                timeout = timeout.min(first.saturating_duration_since(Instant::now()));
            }
            if !self.handshakes_due.is_empty() {
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
            self.now = Instant::now();
            self.wall = SystemTime::now();
            self.date.update(self.wall);
            self.router.set_now(self.now);
            if !events.is_empty() {
                self.quiet_since = Some(self.now);
            }
            // The main thread's news first: a drain ordered before a
            // request arrived applies to that request's answer even when
            // both come in one batch (an idle connection's next request
            // after a reload is answered `Connection: close`).
            if events.iter().any(|ev| ev.token() == WAKER) {
                self.take_checks();
                self.take_streams();
                self.take_order();
            }
            for ev in events.iter() {
                match ev.token() {
                    WAKER => {}
                    Token(t) if t >= LISTENER_BASE => self.accept_all(t - LISTENER_BASE),
                    Token(t) if t >= PIPE_BASE => {
                        let (i, slot, end) = pipe::split_token(t);
                        self.on_pipe_event(i, slot, end);
                    }
                    Token(i) => {
                        if ev.is_read_closed() || ev.is_error() {
                            // The FIN may have come with the last data: read
                            // on until read() says so, or it goes unseen.
                            if let Some(Some(c)) = self.conns.get_mut(i) {
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
            self.accept_waiting_tls();
            if self.now >= self.next_tick || self.drain_until.is_some() {
                self.sweep();
            }
            if let Some(until) = self.accept_paused_until {
                if self.now >= until {
                    self.accept_paused_until = None;
                    for i in 0..self.listeners.len() {
                        self.accept_all(i);
                    }
                }
            }
            self.logger.flush();
            if self.draining != Drain::Serve
                && (self.live == 0 || self.drain_until.is_some_and(|u| self.now >= u))
            {
                break;
            }
        }
        if self.draining == Drain::Serve {
            // (The loop failed: the listeners close with the worker.)
            self.listeners.clear();
            self.order.listeners_closed();
        }
        // Whatever still runs is abandoned: no child outlives its worker.
        for i in 0..self.conns.len() {
            self.close(i);
        }
        self.router.reap(self.now, true, &mut self.logger);
        self.logger.flush();
    }

    /// Drives connection `i` after an event (`readable`: its socket may
    /// have input), a timer or a pipe event.
    fn on_event(&mut self, i: usize, readable: bool) {
        let Some(mut conn) = self.conns.get_mut(i).and_then(Option::take) else {
            return;
        };
        // (Throttled output moves on timers, without a socket event.)
        self.quiet_since = Some(self.now);
        if readable {
            conn.transport.tcp_mut().read_more = true;
        }
        let keep = catch_unwind(AssertUnwindSafe(|| self.drive(&mut conn)));
        match keep {
            Ok(true) => self.conns[i] = Some(conn),
            Ok(false) => {
                self.conns[i] = Some(conn);
                self.close(i);
            }
            Err(_) => {
                self.logger.log(
                    Level::Error,
                    format_args!("internal error serving {}; connection closed", conn.peer),
                );
                // Buffers lent out (mem::take) when the panic struck must
                // not stay empty for every later connection.
                if self.rbuf.capacity() == 0 {
                    self.rbuf = Vec::with_capacity(READ_BUF);
                }
                if self.pipe_buf.capacity() == 0 {
                    self.pipe_buf = Vec::with_capacity(READ_BUF);
                }
                self.conns[i] = Some(conn);
                self.close(i);
            }
        }
    }

    /// An event on a pipe of a process answering on connection `i` (in
    /// `slot`: 0 for HTTP/1.1, another for an HTTP/2 stream).
    fn on_pipe_event(&mut self, i: usize, slot: usize, end: End) {
        if let Some(Some(c)) = self.conns.get_mut(i) {
            Self::pipe_ready(c, slot, end);
            self.on_event(i, false);
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut c) = self.conns.get_mut(i).and_then(Option::take) {
            if c.h1.pipe().is_some() {
                self.pipe_abandon(&mut c);
            }
            #[cfg(feature = "http2")]
            if let Some(mut s) = c.h2.as_mut().map(|s| std::mem::take(&mut s.answers)) {
                // Every answer still on its way is logged with what it
                // sent, and every process still answering is stopped.
                for a in s.drain(..) {
                    self.h2_forget(&mut c, a);
                }
            }
            if c.h1.produced().is_some() {
                self.abandon_produced(&mut c);
            }
            // What never left (the client went away) counts as not sent.
            settle(&mut self.logger, &mut c.out, c.sent, true);
            self.forget_handler_body(&mut c);
            // Closing the socket (dropping it) removes it from epoll.
            if c.awaiting_proxy() {
                self.counters.conn_limits.release_total();
            } else {
                self.counters.conn_limits.release(c.peer.ip());
            }
            self.free.push(i);
            self.live -= 1;
        }
    }

    /// Closes idle connection `i` gracefully (see
    /// [`Worker::close_gracefully`]).
    fn close_idle(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i).and_then(Option::as_mut) else {
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
        let Some(c) = self.conns.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        if age < send {
            if c.transport.tcp().unsent() > 0 {
                c.h1.wait_unread();
                return;
            }
            if c.h1.unread() {
                c.h1.touch(self.now);
                return;
            }
        }
        self.close_idle(i);
    }

    /// Wakes the throttled connections whose time has come.
    fn fire_timers(&mut self) {
        let now = self.now;
        let mut due = Vec::new();
        self.timers.retain(|&(when, idx)| {
            if when <= now {
                due.push(idx);
                false
            } else {
                true
            }
        });
        for idx in due {
            self.on_event(idx, false);
        }
    }

    /// The once-a-second timer pass over every connection.
    fn sweep(&mut self) {
        self.next_tick = self.now + TICK;
        self.heartbeat.beat(self.now);
        self.publish_stats();
        self.maybe_rest();
        self.report_refusals_not_logged();
        self.report_tls_errors_not_logged();
        self.router.reap(self.now, false, &mut self.logger);
        let t = self.cfg.timeouts.clone();
        // Winding down, whether HTTP/2 connections hear GOAWAY now, busy
        // or not: at a stop; at a reload, `timeouts.keepalive` after it,
        // or when `timeouts.reload_drain` is about to end (time for both
        // steps first). `None`: serving.
        #[cfg(feature = "http2")]
        let goaway_at_once = match self.draining {
            Drain::Serve => None,
            Drain::Stop => Some(true),
            Drain::Retire => {
                let since = *self.draining_since.get_or_insert(self.now);
                let ending = self.drain_until.is_some_and(|u| {
                    u.saturating_duration_since(self.now) <= crate::h2::GOAWAY_WAIT + TICK
                });
                Some(ending || self.now.saturating_duration_since(since) >= t.keepalive)
            }
        };
        for i in 0..self.conns.len() {
            let Some(c) = self.conns[i].as_mut() else {
                continue;
            };
            if c.awaiting_proxy() && self.now.saturating_duration_since(c.h1.since()) >= t.header {
                // The balancer never said who the client is: no HTTP
                // answer (it would go to nobody in particular).
                self.close(i);
                continue;
            }
            if c.transport.deadline().is_some_and(|at| self.now >= at) {
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
                    self.now.saturating_duration_since(h2.conn.last_opened()) >= TICK
                };
                if let Some(h2) =
                    c.h2.as_mut()
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
                    h2::shut_down(h2, i, self.now, &mut self.timers);
                    self.on_event(i, false);
                    continue;
                }
            }
            if let Some(blocked) = c.blocked_since {
                if self.now.saturating_duration_since(blocked) >= t.send {
                    self.close(i);
                }
                continue;
            }
            let age = self.now.saturating_duration_since(c.h1.since());
            let stopping = self.draining == Drain::Stop;
            // (An HTTP/2 connection that sent its GOAWAY lingers as
            // HTTP/1.1 does: its h1 state says so.)
            #[cfg(feature = "http2")]
            if let (Some(h2), false) = (c.h2.as_mut(), matches!(c.h1.state(), State::Lingering(_)))
            {
                // An HTTP/2 connection is idle when no stream is open
                // (a stalled one is timed out above, as `blocked`).
                let idle = h2.conn.open_streams() == 0 && h2.answers.is_empty();
                if idle && age >= t.keepalive {
                    self.idle_timeout(i, age, t.send);
                    continue;
                }
                if idle && age >= TICK {
                    // Idle a second or more: it holds its HPACK table,
                    // not its buffers (nor expanded TLS keys).
                    h2.rest();
                    c.transport.rest();
                }
                let Some(mut conn) = self.conns[i].take() else {
                    continue;
                };
                // A request body that makes no progress for
                // timeouts.body is answered 408 (HTTP/1.1 closes).
                let mut late = age >= t.body && self.h2_body_timeouts(&mut conn);
                late |= self.h2_pipe_timeouts(&mut conn);
                late |= self.h2_run_timeouts(&mut conn);
                self.conns[i] = Some(conn);
                if late {
                    self.on_event(i, false);
                }
                continue;
            }
            match c.h1.timer() {
                Timer::Idle if stopping && c.out.is_empty() => self.close_idle(i),
                Timer::Idle if age >= t.keepalive => self.idle_timeout(i, age, t.send),
                // Idle a second or more: TLS keeps its keys' bytes, not
                // their expanded forms.
                Timer::Idle if age >= TICK => c.transport.rest(),
                Timer::Body if age >= t.body => self.close(i),
                Timer::Linger if drive::linger_due(c, self.now, age, t.send) => self.close(i),
                Timer::Pipe(limit) if age >= limit => {
                    let mut conn = self.conns[i].take().expect("present");
                    self.pipe_timeout(&mut conn);
                    self.conns[i] = Some(conn);
                    self.on_event(i, false);
                }
                Timer::Stream if age >= t.handler => {
                    let mut conn = self.conns[i].take().expect("present");
                    self.produced_timeout(&mut conn);
                    self.conns[i] = Some(conn);
                    self.on_event(i, false);
                }
                Timer::Head if age >= t.header => {
                    // Slowloris: the head did not arrive in time.
                    let mut conn = self.conns[i].take().expect("present");
                    conn.pending = Vec::new();
                    // (Reading its head since its first byte.)
                    self.req_start = conn.h1.since();
                    self.reject(&mut conn, Status::REQUEST_TIMEOUT, "request head timed out");
                    self.conns[i] = Some(conn);
                    self.on_event(i, false);
                }
                _ => {}
            }
        }
    }
}
