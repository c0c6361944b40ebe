//! A worker's listening side: its listeners, TLS's acceptor with its cap
//! on handshakes in progress, the turn handshaking connections wait for
//! (see [`accept`](super::accept)), and the pause after `accept` ran out
//! of descriptors or memory.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Interest, Registry, Token};

use super::LISTENER_BASE;
use crate::log::budget::LineBudget;
use crate::server::listen::Speaks;
#[cfg(feature = "http3")]
use crate::server::transport::Link;
use crate::server::transport::{Acceptor, Setup, Tcp};

/// Most TLS failures (garbage, plain HTTP, a handshake rustls refused)
/// a worker explains in the error log per second (at `debug`); the rest
/// are counted in one line.
const TLS_ERRORS_PER_SEC: u32 = 10;

/// Handshaking connections served per pass of the event loop, after the
/// other connections' events: a full handshake costs some 150 µs of CPU
/// (a key exchange and a signature), so a pass that took every
/// ClientHello of a flood at once would keep an established client
/// waiting for tens of milliseconds. (With nothing else to do, the loop
/// comes straight back for the next ones.)
pub(super) const HANDSHAKES_PER_TURN: usize = 8;

/// How long accepting stops once `accept` ran out of descriptors or
/// memory.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// While pauses go on, the error log says so at most once in this long
/// (a pause every 100 ms wrote 600 lines a minute).
const PAUSE_LINE_EVERY: Duration = Duration::from_secs(60);

/// What a worker listens with.
pub(super) struct Listen {
    /// Its listeners, each with what its clients speak (listener `i` has
    /// token `LISTENER_BASE + i`).
    pub(super) listeners: Vec<(TcpListener, Speaks)>,
    /// The address each listener is bound to, where it is bound to one
    /// address only (not `0.0.0.0` or `[::]`): that of every connection
    /// it accepts.
    pub(super) bound: Vec<Option<SocketAddr>>,
    /// Starts TLS connections (with TLS listeners).
    pub(super) tls: Option<Acceptor>,
    /// A TLS listener has connections waiting for a handshake slot.
    pub(super) tls_waiting: bool,
    /// TLS connections accepted, oldest first, with their handshake
    /// deadline (which tells a connection from a later one in its slab
    /// slot; one accepted in the same pass of the loop has the same, and
    /// is then named twice, which does no harm): where to look for a
    /// stalled handshake to give its place to a new one. Entries of
    /// handshakes that ended are dropped as they are met, and all at
    /// once when they are many.
    accepted: VecDeque<(usize, Instant)>,
    /// A handshake stalled (its ClientHello incomplete) since the cap
    /// last kept connections waiting: one of them may take its place.
    pub(super) stalled: bool,
    /// TLS connections in their handshake with an event not handled yet:
    /// their turn comes after the established connections', a few per
    /// pass of the loop.
    handshakes_due: VecDeque<usize>,
    /// Caps the debug lines that explain failed TLS connections.
    pub(super) tls_errors: LineBudget,
    /// Until when accepting stops.
    paused_until: Option<Instant>,
    /// When the error log last said of a pause, and the pauses since.
    pause_said: Option<(Instant, u64)>,
    /// When a look for idle connections to close, at
    /// `limits.max_connections`, found none: the next waits a while
    /// (see [`Worker::reclaim_idle`](super::Worker::reclaim_idle)).
    pub(super) none_idle_at: Option<Instant>,
    /// Its QUIC endpoint and UDP sockets (`[http3] enable`).
    #[cfg(feature = "http3")]
    pub(super) quic: Option<super::quic::Quic>,
}

impl Listen {
    /// Registers `listeners` with `registry`; `tls` is their
    /// generation's TLS (with TLS listeners).
    pub(super) fn new(
        registry: &Registry,
        listeners: Vec<(StdListener, Speaks)>,
        tls: Option<&Setup>,
        now: Instant,
    ) -> io::Result<Listen> {
        let mut registered = Vec::new();
        let mut bound = Vec::new();
        for (i, (socket, speaks)) in listeners.into_iter().enumerate() {
            bound.push(socket.local_addr().ok().and_then(one_address));
            let mut listener = TcpListener::from_std(socket);
            registry.register(&mut listener, Token(LISTENER_BASE + i), Interest::READABLE)?;
            registered.push((listener, speaks));
        }
        Ok(Listen {
            listeners: registered,
            bound,
            tls: tls.map(Acceptor::new),
            tls_waiting: false,
            accepted: VecDeque::new(),
            stalled: false,
            handshakes_due: VecDeque::new(),
            tls_errors: LineBudget::new(TLS_ERRORS_PER_SEC, now),
            paused_until: None,
            pause_said: None,
            none_idle_at: None,
            #[cfg(feature = "http3")]
            quic: None,
        })
    }

    /// The `Alt-Svc` value of answers on `link`: HTTP/3's port where the
    /// connection came by a TLS listener whose address also speaks QUIC
    /// (RFC 7838 §3, RFC 9114 §3.1.1), else empty.
    #[cfg(feature = "http3")]
    pub(super) fn alt_svc(&self, link: &Link) -> &[u8] {
        let (Link::Tls(t), Some(q)) = (link, &self.quic) else {
            return b"";
        };
        t.tcp().listener().map_or(b"", |i| q.alt_svc(i))
    }

    /// Closes the listeners (the sockets close once every copy is gone).
    pub(super) fn close(&mut self, registry: &Registry) {
        for (mut l, _) in self.listeners.drain(..) {
            let _ = registry.deregister(&mut l);
        }
        self.bound.clear();
    }

    /// The address the client of `tcp` connected to, if the listener
    /// that accepted it is bound to one.
    pub(super) fn bound_of(&self, tcp: &Tcp) -> Option<SocketAddr> {
        *self.bound.get(tcp.listener()?)?
    }

    /// Connection `i`, in its handshake, had an event: it waits for the
    /// handshakes' turn.
    pub(super) fn handshake_later(&mut self, i: usize) {
        self.handshakes_due.push_back(i);
    }

    /// Whether handshaking connections wait for their turn.
    pub(super) fn handshakes_waiting(&self) -> bool {
        !self.handshakes_due.is_empty()
    }

    /// How many handshaking connections this pass's turn drives: those
    /// waiting for it, up to [`HANDSHAKES_PER_TURN`].
    pub(super) fn handshake_turn(&self) -> usize {
        self.handshakes_due.len().min(HANDSHAKES_PER_TURN)
    }

    /// The next handshaking connection, in the order they came.
    pub(super) fn next_handshake(&mut self) -> Option<usize> {
        self.handshakes_due.pop_front()
    }

    /// Whether TLS connections left waiting at the handshake cap may be
    /// accepted now (handshakes have ended, or one stalled and may give
    /// its place); if so, they no longer wait.
    pub(super) fn take_tls_waiting(&mut self) -> bool {
        let room = self.stalled || self.tls.as_ref().is_some_and(Acceptor::has_room);
        if !self.tls_waiting || !room {
            return false;
        }
        self.tls_waiting = false;
        self.stalled = false;
        true
    }

    /// TLS connection `i`, whose handshake must end by `deadline`, was
    /// just accepted. (Entries of ended handshakes go first: `live` says
    /// whether an entry's handshake goes on.)
    pub(super) fn accepted_tls(
        &mut self,
        i: usize,
        deadline: Instant,
        live: impl Fn(usize, Instant) -> bool,
    ) {
        while let Some(&(j, at)) = self.accepted.front() {
            if live(j, at) {
                break;
            }
            self.accepted.pop_front();
        }
        // Bounded by twice the handshakes there can be (the cap's, per
        // worker), however long the oldest one lasts.
        let cap = self.tls.as_ref().map_or(0, Acceptor::max_handshakes);
        if self.accepted.len() >= 2 * cap.max(1) {
            self.accepted.retain(|&(j, at)| live(j, at));
        }
        self.accepted.push_back((i, deadline));
    }

    /// The oldest accepted TLS connection `pick` chooses (given its
    /// index and handshake deadline); entries of ended handshakes met on
    /// the way (`live` false) are dropped.
    pub(super) fn oldest_tls(
        &mut self,
        live: impl Fn(usize, Instant) -> bool,
        pick: impl Fn(usize, Instant) -> bool,
    ) -> Option<usize> {
        let mut k = 0;
        while let Some(&(j, at)) = self.accepted.get(k) {
            if !live(j, at) {
                self.accepted.remove(k);
                continue;
            }
            if pick(j, at) {
                self.accepted.remove(k);
                return Some(j);
            }
            k += 1;
        }
        None
    }

    /// Stops accepting for [`ACCEPT_PAUSE`] from `now`. Whether to say
    /// so in the error log (at most once in [`PAUSE_LINE_EVERY`]), with
    /// the number of pauses not said since the last line.
    pub(super) fn pause(&mut self, now: Instant) -> Option<u64> {
        self.paused_until = Some(now + ACCEPT_PAUSE);
        match &mut self.pause_said {
            Some((at, unsaid)) if now.saturating_duration_since(*at) < PAUSE_LINE_EVERY => {
                *unsaid += 1;
                None
            }
            said => Some(said.replace((now, 0)).map_or(0, |(_, unsaid)| unsaid)),
        }
    }

    /// Whether accepting is paused.
    pub(super) fn paused(&self) -> bool {
        self.paused_until.is_some()
    }

    /// Whether a pause ended by `now` (then accepting starts again).
    pub(super) fn resume_due(&mut self, now: Instant) -> bool {
        let due = self.paused_until.is_some_and(|until| now >= until);
        if due {
            self.paused_until = None;
        }
        due
    }
}

/// `addr`, a listener's, if it is one address (not `0.0.0.0` or `[::]`,
/// where which one a client connected to is the kernel's to say).
fn one_address(addr: SocketAddr) -> Option<SocketAddr> {
    (!addr.ip().is_unspecified()).then_some(addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};

    fn listen(poll: &Poll, n: usize) -> Listen {
        let sockets = (0..n)
            .map(|_| {
                let l = StdListener::bind("127.0.0.1:0").unwrap();
                l.set_nonblocking(true).unwrap();
                (l, Speaks::Http)
            })
            .collect();
        Listen::new(poll.registry(), sockets, None, Instant::now()).unwrap()
    }

    #[test]
    fn a_connection_to_listener_i_raises_its_token() {
        let mut poll = Poll::new().unwrap();
        let l = listen(&poll, 2);
        let addr = l.listeners[1].0.local_addr().unwrap();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        let mut events = Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        let tokens: Vec<_> = events.iter().map(|e| e.token()).collect();
        assert_eq!(tokens, [Token(LISTENER_BASE + 1)]);
    }

    #[test]
    fn a_listener_bound_to_one_address_tells_its_connections_theirs() {
        let poll = Poll::new().unwrap();
        let l = listen(&poll, 2);
        let at = |i: usize| l.listeners[i].0.local_addr().unwrap();
        let tcp = |i: usize| {
            let client = std::net::TcpStream::connect(at(i)).unwrap();
            Tcp::new(mio::net::TcpStream::from_std(client), false)
        };
        assert_eq!(l.bound_of(&tcp(0).accepted_by(0)), Some(at(0)));
        assert_eq!(l.bound_of(&tcp(1).accepted_by(1)), Some(at(1)));
        assert_eq!(l.bound_of(&tcp(0)), None, "a listener not known");
        assert_eq!(l.bound_of(&tcp(0).accepted_by(7)), None);
        // Bound to every address: which one is the kernel's to say.
        for any in ["0.0.0.0:80", "[::]:80"] {
            assert_eq!(one_address(any.parse().unwrap()), None);
        }
        let one = "[::1]:80".parse().unwrap();
        assert_eq!(one_address(one), Some(one));
    }

    #[test]
    fn each_turn_takes_the_first_few_handshakes_in_order() {
        let poll = Poll::new().unwrap();
        let mut l = listen(&poll, 0);
        assert!(!l.handshakes_waiting());
        assert_eq!(l.handshake_turn(), 0);
        for i in 0..HANDSHAKES_PER_TURN + 3 {
            l.handshake_later(100 + i);
        }
        let turn = |l: &mut Listen| -> Vec<usize> {
            (0..l.handshake_turn())
                .map_while(|_| l.next_handshake())
                .collect()
        };
        let first = turn(&mut l);
        assert_eq!(first, (100..100 + HANDSHAKES_PER_TURN).collect::<Vec<_>>());
        assert!(l.handshakes_waiting());
        let n = HANDSHAKES_PER_TURN;
        assert_eq!(turn(&mut l), [100 + n, 101 + n, 102 + n]);
        assert!(!l.handshakes_waiting());
        assert_eq!(l.next_handshake(), None);
    }

    #[test]
    fn a_pause_ends_once() {
        let poll = Poll::new().unwrap();
        let mut l = listen(&poll, 0);
        let now = Instant::now();
        assert!(!l.paused());
        assert!(!l.resume_due(now + ACCEPT_PAUSE));
        l.pause(now);
        assert!(l.paused());
        assert!(!l.resume_due(now));
        assert!(l.resume_due(now + ACCEPT_PAUSE));
        assert!(!l.paused());
        assert!(!l.resume_due(now + ACCEPT_PAUSE));
    }

    #[test]
    fn pauses_are_said_once_a_minute_with_the_count_of_the_others() {
        let poll = Poll::new().unwrap();
        let mut l = listen(&poll, 0);
        let t0 = Instant::now();
        assert_eq!(l.pause(t0), Some(0));
        for i in 1..=5 {
            assert_eq!(l.pause(t0 + ACCEPT_PAUSE * i), None);
        }
        assert_eq!(l.pause(t0 + PAUSE_LINE_EVERY), Some(5));
        assert_eq!(l.pause(t0 + PAUSE_LINE_EVERY + ACCEPT_PAUSE), None);
        assert_eq!(l.pause(t0 + PAUSE_LINE_EVERY * 3), Some(1));
    }

    #[test]
    fn without_tls_nothing_waits_for_a_handshake_slot() {
        let poll = Poll::new().unwrap();
        let mut l = listen(&poll, 0);
        l.tls_waiting = true;
        assert!(!l.take_tls_waiting());
        assert!(l.tls_waiting);
    }

    #[test]
    fn closed_listeners_refuse_connections() {
        let poll = Poll::new().unwrap();
        let mut l = listen(&poll, 1);
        let addr = l.listeners[0].0.local_addr().unwrap();
        l.close(poll.registry());
        assert!(l.listeners.is_empty());
        assert!(l.bound.is_empty());
        assert!(std::net::TcpStream::connect(addr).is_err());
    }
}
