//! A worker's QUIC side (feature `http3`): its UDP socket of each `[tls]
//! listen` address (bound with `SO_REUSEPORT`, one per worker, so the
//! kernel hands each client's datagrams, by their 4-tuple, to one
//! worker), watched by the worker's own epoll, and one quinn-proto
//! [`Endpoint`] fed from them, sans-IO: datagrams in, datagrams out,
//! and each connection's next deadline kept here for the loop's timeout.
//! No thread, no runtime: the worker's loop drives it all.
//!
//! Each QUIC connection is a connection of the worker's slab (its
//! protocol `Proto::H3`, see `server::h3`), so its requests go through
//! the same router, waits and producers as HTTP/1.1's and HTTP/2's;
//! this keeps which slot each connection handle names. The connection's
//! own driving (its streams, their answers, its datagrams) is
//! `worker/h3.rs`.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::{SocketAddr, UdpSocket as StdUdp};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};
use quinn_proto::{
    ConnectionEvent, ConnectionHandle, DatagramEvent, Endpoint, EndpointEvent, Incoming,
    ServerConfig, Transmit,
};

mod route;

use super::QUIC_BASE;
use crate::h3::conn::Limits;
use crate::h3::Code;
use crate::hash::FnvMap;
use crate::server::h3::Session;

/// Room for each datagram of a batch read: QUIC's fit 1,500-byte
/// packets (quinn-proto's path MTU discovery stops at 1,452 bytes; a
/// client's larger probe is cut, dropped, and so taken as lost, which is
/// what a path that cannot carry it does anyway).
const SLOT: usize = 2048;

/// Datagrams quinn-proto is asked for at once, sent in one system call
/// with GSO (`UDP_SEGMENT`) where the kernel has it.
const BATCH: usize = 16;

/// Datagrams read from one socket per readiness event (in batches of
/// `sys::net::RECV_BATCH`, one `recvmmsg` each) before the other sockets
/// and connections get their turn (the socket stays readable: epoll is
/// edge-triggered, so the rest waits for [`Quic::more`]).
const READS_PER_TURN: usize = 64;

/// RESET_STREAM and STOP_SENDING frames a client may send (its resets of
/// streams brisk had stopped aside, see `Session::resets`), and streams
/// it makes us reset (see `Session::faults`), in its flood window
/// (`[http3] max_cancels`, `flood_window`; by default 400 in 10 s: two
/// for each stream it cancels, so HTTP/2's budget of 200
/// cancelled streams, `[http2] max_resets`' default). Each stream opened
/// and cancelled at once costs a request's work and frees its place at
/// once (QUIC's rapid reset, as CVE-2023-44487 is HTTP/2's): past it the
/// connection is closed with H3_EXCESSIVE_LOAD.
#[derive(Debug, Clone, Copy)]
pub(super) struct Budget {
    pub(super) max: u64,
    pub(super) window: Duration,
}

/// The cancellations a connection had sent when its current flood
/// window began, and when that was.
struct Cancels {
    since: Instant,
    base: u64,
}

/// What the endpoint keeps of each connection: its slot, and its own
/// flood window. (Each connection's, not its client address's: two
/// connections from one address and port each have theirs, and the end
/// of one does not clear the other's.)
struct Held {
    slot: usize,
    cancels: Cancels,
}

/// What a datagram brought.
pub(super) enum Arrival {
    /// A new client's first packet, on socket `.1`: accept or refuse it.
    Incoming(Incoming, usize),
    /// Input for connection slot `.0`.
    Event(usize, ConnectionEvent),
}

/// A worker's QUIC endpoint and its sockets.
pub(super) struct Quic {
    endpoint: Endpoint,
    /// Socket `i` has token `QUIC_BASE + i`.
    sockets: Vec<UdpSocket>,
    /// Sockets that still had datagrams when their turn ended.
    more: Vec<usize>,
    /// The slot and flood window of each connection (looked up for every
    /// datagram: hashed with FNV-1a, the handles are quinn-proto's own
    /// small indexes, not the client's choice).
    slots: FnvMap<ConnectionHandle, Held>,
    /// Every connection's next deadline, earliest first (with its slot).
    deadlines: BTreeSet<(Instant, usize)>,
    /// What a batch of datagrams is read into, [`SLOT`] bytes each.
    recv: Vec<u8>,
    /// What a datagram is written into.
    send: Vec<u8>,
    /// Where the kernel says each datagram of a batch was sent, on a
    /// wildcard socket (`sys::net::udp`): the connection answers from
    /// there.
    to: Box<[crate::sys::net::Control; crate::sys::net::RECV_BATCH]>,
    /// Each connection's HTTP/3 limits.
    pub(super) limits: Limits,
    /// The cancellations each connection may send.
    budget: Budget,
    /// The `Alt-Svc` value of each TCP listener's answers (empty for one
    /// that speaks no TLS).
    alt_svc: Vec<Box<[u8]>>,
    /// Whether the kernel cuts a batch of datagrams itself (GSO); off
    /// once it has said it cannot.
    gso: bool,
    /// Its place among the process's endpoints (see [`route`]).
    route: route::Route,
    /// The sockets are an upgrade's, not read until the previous brisk
    /// has gone (see `server::quic_handover`).
    shut: bool,
    /// The address each socket is bound to.
    locals: Vec<Option<SocketAddr>>,
}

impl Quic {
    /// Registers `sockets` with `registry`, for `config`'s connections.
    pub(super) fn new(
        registry: &Registry,
        sockets: Vec<StdUdp>,
        config: Arc<ServerConfig>,
        (limits, budget): (Limits, Budget),
        waker: Arc<mio::Waker>,
    ) -> io::Result<Quic> {
        let registered: Vec<UdpSocket> = sockets.into_iter().map(UdpSocket::from_std).collect();
        // Sockets an upgrade handed over are read once the previous brisk
        // has gone (see `server::quic_handover`); until then its pipe is
        // watched instead, under the token after the sockets'.
        let shut = crate::server::quic_handover::gate().is_some_and(|gate| {
            let gate = &mut mio::unix::SourceFd(&gate.fd());
            let token = Token(QUIC_BASE + registered.len());
            registry.register(gate, token, Interest::WRITABLE).is_ok()
        });
        let mut registered = registered;
        if !shut {
            Quic::watch(registry, &mut registered)?;
        }
        let locals = registered.iter().map(|s| s.local_addr().ok()).collect();
        let route = route::Route::new(waker);
        let endpoint = Endpoint::new(Arc::new(route.endpoint_config()), Some(config), true, None);
        Ok(Quic {
            shut,
            route,
            locals,
            endpoint,
            sockets: registered,
            more: Vec::new(),
            slots: HashMap::default(),
            deadlines: BTreeSet::new(),
            recv: vec![0; SLOT * crate::sys::net::RECV_BATCH],
            send: Vec::new(),
            to: Box::new([[0; 8]; crate::sys::net::RECV_BATCH]),
            limits,
            budget,
            alt_svc: Vec::new(),
            gso: true,
        })
    }

    /// Registers `sockets` with `registry`: socket `i` as `QUIC_BASE + i`.
    fn watch(registry: &Registry, sockets: &mut [UdpSocket]) -> io::Result<()> {
        for (i, s) in sockets.iter_mut().enumerate() {
            registry.register(s, Token(QUIC_BASE + i), Interest::READABLE)?;
        }
        Ok(())
    }

    /// An event of the previous brisk's pipe while the sockets are shut:
    /// `gone` (the pipe in error: that brisk has closed its end) opens
    /// them. Whether `token` was the pipe's.
    pub(super) fn gate_event(&mut self, registry: &Registry, token: usize, gone: bool) -> bool {
        if !self.shut || token != QUIC_BASE + self.sockets.len() {
            return false;
        }
        let Some(gate) = crate::server::quic_handover::gate_any() else {
            return true;
        };
        if gone || gate.is_open() {
            gate.opened();
            let _ = registry.deregister(&mut mio::unix::SourceFd(&gate.fd()));
            self.shut = false;
            if Quic::watch(registry, &mut self.sockets).is_ok() {
                // (Edge-triggered: what came meanwhile is read now.)
                self.more = (0..self.sockets.len()).collect();
            }
        }
        true
    }

    /// Advertises HTTP/3 on the answers of TCP listeners `ports` (each
    /// listener's port, `None`: no TLS): `h3=":PORT"; ma=86400`, the
    /// port of the UDP socket bound next to it (RFC 7838 §3: the same
    /// host; a day, as nginx and Caddy say).
    pub(super) fn advertise(&mut self, ports: impl Iterator<Item = Option<u16>>) {
        self.alt_svc = ports
            .map(|p| {
                p.map_or_else(Box::default, |p| {
                    format!("h3=\":{p}\"; ma=86400").into_bytes().into()
                })
            })
            .collect();
    }

    /// The `Alt-Svc` value of TCP listener `i`'s answers: none while an
    /// upgrade's sockets are not read yet, nor once they are handed over
    /// (a client sent to QUIC then would be refused, and a browser
    /// remembers that as QUIC broken for the origin).
    pub(super) fn alt_svc(&self, i: usize) -> &[u8] {
        if self.shut || crate::server::quic_handover::retired() {
            return b"";
        }
        self.alt_svc.get(i).map_or(b"", |v| v)
    }

    /// Whether `token` is one of its sockets'.
    pub(super) fn owns(&self, token: usize) -> bool {
        (QUIC_BASE..=QUIC_BASE + self.sockets.len()).contains(&token)
    }

    /// The earliest deadline of a connection, or now when a socket has
    /// datagrams waiting.
    pub(super) fn earliest(&self, now: Instant) -> Option<Instant> {
        if !self.more.is_empty() {
            return Some(now);
        }
        self.deadlines.first().map(|d| d.0)
    }

    /// The address socket `i` is bound to.
    pub(super) fn local(&self, i: usize) -> Option<SocketAddr> {
        *self.locals.get(i)?
    }

    /// Socket `token`'s datagrams, up to a turn's worth, into `arrived`:
    /// read many at a time (`recvmmsg`), until a batch comes short (the
    /// socket is empty then: each datagram that comes later wakes epoll
    /// again, so no call is spent to hear `EAGAIN`).
    pub(super) fn readable(&mut self, token: usize, now: Instant, arrived: &mut Vec<Arrival>) {
        use crate::sys::net::{recv_batch, Datagram, RECV_BATCH};
        let i = token - QUIC_BASE;
        let mut got = [Datagram::default(); RECV_BATCH];
        // (Where each was sent: on a wildcard socket only, see `Quic::to`.)
        let wildcard = self.locals[i].is_some_and(|l| l.ip().is_unspecified());
        let mut read = 0;
        loop {
            if read >= READS_PER_TURN {
                if !self.more.contains(&i) {
                    self.more.push(i);
                }
                break;
            }
            let to = wildcard.then_some(&mut *self.to);
            let came = match recv_batch(&self.sockets[i], &mut self.recv, SLOT, &mut got, to) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock, or an error (an ICMP report of an earlier
                // send): nothing more for now.
                Err(_) => break,
            };
            read += came;
            for (k, d) in got[..came].iter().enumerate() {
                // (A datagram cut short, or from no address: dropped.)
                let Some(from) = d.from.filter(|_| d.len > 0) else {
                    continue;
                };
                let bytes = &self.recv[k * SLOT..k * SLOT + d.len];
                let data = bytes::BytesMut::from(bytes);
                match (self.route.elsewhere(bytes), self.locals[i]) {
                    // Another worker's connection (a reload's): its own.
                    (Some(owner), Some(local)) => {
                        let to = d.to;
                        owner.post(route::Mail {
                            local,
                            from,
                            to,
                            data,
                        });
                    }
                    _ => self.datagram(i, (from, d.to), data, now, arrived),
                }
            }
            if came < RECV_BATCH {
                break;
            }
        }
    }

    /// The datagrams other workers read for this endpoint's connections,
    /// taken in through the socket bound where each arrived.
    pub(super) fn mail(&mut self, now: Instant, arrived: &mut Vec<Arrival>) {
        for m in self.route.take() {
            if let Some(i) = self.locals.iter().position(|l| *l == Some(m.local)) {
                self.datagram(i, (m.from, m.to), m.data, now, arrived);
            }
        }
    }

    /// The sockets whose turn ended with datagrams left: a turn more each.
    pub(super) fn more(&mut self, now: Instant, arrived: &mut Vec<Arrival>) {
        for i in std::mem::take(&mut self.more) {
            self.readable(QUIC_BASE + i, now, arrived);
        }
    }

    /// One datagram on socket `i`, from `from` (to `to`, on a wildcard
    /// socket: the connection's answers then go from there).
    fn datagram(
        &mut self,
        i: usize,
        (from, to): (SocketAddr, Option<std::net::IpAddr>),
        data: bytes::BytesMut,
        now: Instant,
        arrived: &mut Vec<Arrival>,
    ) {
        self.send.clear();
        match self
            .endpoint
            .handle(now, from, to, None, data, &mut self.send)
        {
            Some(DatagramEvent::NewConnection(incoming))
                if !incoming.remote_address_validated()
                    && self.slots.len() + incoming_in(arrived) >= self.limits.retry_above =>
            {
                // Under load, a new client proves first that it receives
                // at the address it sends from (RFC 9000 §8.1.2): a
                // spoofed address gets one small Retry, no connection.
                self.retry(incoming, i);
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                arrived.push(Arrival::Incoming(incoming, i));
            }
            Some(DatagramEvent::ConnectionEvent(ch, event)) => {
                if let Some(held) = self.slots.get(&ch) {
                    arrived.push(Arrival::Event(held.slot, event));
                }
            }
            Some(DatagramEvent::Response(t)) => send(&self.sockets[i], &self.send[..t.size], &t),
            None => {}
        }
    }

    /// Accepts `incoming` into slot `slot`: the connection, or `None`
    /// (its refusal, if any, sent).
    pub(super) fn accept(
        &mut self,
        incoming: Incoming,
        socket: usize,
        slot: usize,
        now: Instant,
    ) -> Option<(ConnectionHandle, quinn_proto::Connection)> {
        self.send.clear();
        match self.endpoint.accept(incoming, now, &mut self.send, None) {
            Ok((ch, conn)) => {
                let cancels = Cancels {
                    since: now,
                    base: 0,
                };
                self.slots.insert(ch, Held { slot, cancels });
                Some((ch, conn))
            }
            Err(e) => {
                if let Some(t) = e.response {
                    send(&self.sockets[socket], &self.send[..t.size], &t);
                }
                None
            }
        }
    }

    /// Asks `incoming`'s client to prove that it receives at the address
    /// it sends from (a Retry, RFC 9000 §8.1.2): one small datagram, and no
    /// state kept; a client that does comes back with its token.
    pub(super) fn retry(&mut self, incoming: Incoming, socket: usize) {
        self.send.clear();
        match self.endpoint.retry(incoming, &mut self.send) {
            Ok(t) => send(&self.sockets[socket], &self.send[..t.size], &t),
            Err(e) => self.endpoint.ignore(e.into_incoming()),
        }
    }

    /// Refuses `incoming` (the client's address is over its connection
    /// limit): CONNECTION_REFUSED, and no state kept.
    pub(super) fn refuse(&mut self, incoming: Incoming, socket: usize) {
        self.send.clear();
        let t = self.endpoint.refuse(incoming, &mut self.send);
        send(&self.sockets[socket], &self.send[..t.size], &t);
    }

    /// The slots of the connections whose deadline has come (each taken
    /// off the timers: it files its next one when driven).
    pub(super) fn due(&mut self, now: Instant, slots: &mut Vec<usize>) {
        while let Some(&(at, slot)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            slots.push(slot);
        }
    }

    /// Hands the endpoint an event of connection `ch`; what it says back.
    pub(super) fn endpoint_event(
        &mut self,
        ch: ConnectionHandle,
        event: EndpointEvent,
    ) -> Option<ConnectionEvent> {
        self.endpoint.handle_event(ch, event)
    }

    /// Sends session `s`'s datagrams by its socket: up to [`BATCH`] at
    /// once, in one system call where GSO works. (First, [`Quic::calm`].)
    pub(super) fn transmit(&mut self, s: &mut Session, now: Instant) {
        self.calm(s, now);
        let (socket, conn) = (&self.sockets[s.socket], &mut s.quic);
        let batch = if self.gso { BATCH } else { 1 };
        loop {
            self.send.clear();
            let Some(t) = conn.poll_transmit(now, batch, &mut self.send) else {
                break;
            };
            let size = within_three_times(conn, &t);
            let buf = &self.send[..size];
            let Some(segment) = t.segment_size.filter(|&s| s < size) else {
                if size > 0 {
                    send(socket, buf, &t);
                }
                continue;
            };
            let gso = u16::try_from(segment).ok().map(|s| {
                crate::sys::net::send_segments(socket, buf, &t.destination, Some(s), t.src_ip)
            });
            if let Some(Err(e)) = &gso {
                let no_gso = Some(libc::EIO) == e.raw_os_error()
                    || Some(libc::EINVAL) == e.raw_os_error()
                    || Some(libc::ENOPROTOOPT) == e.raw_os_error();
                // (Not here: one datagram a call from now on.)
                self.gso &= !no_gso;
            }
            if !matches!(gso, Some(Ok(_))) {
                for one in buf.chunks(segment) {
                    send(socket, one, &t);
                }
            }
        }
    }

    /// Closes `s`'s connection with H3_EXCESSIVE_LOAD if its client
    /// cancelled more streams (its STOP_SENDING frames counted by
    /// quinn-proto as they came, its resets as brisk read them), or made
    /// us reset more (`Session::faults`), than its [`Budget`] allows in
    /// its flood window. (Not quinn-proto's count of RESET_STREAM frames:
    /// it has those that answer brisk's own STOP_SENDING, and a stream
    /// brisk reset for the client's fault would count twice.)
    fn calm(&mut self, s: &mut Session, now: Instant) {
        let conn = &mut s.quic;
        let rx = conn.stats().frame_rx;
        let sent = s.resets + rx.stop_sending + s.faults;
        if sent <= self.budget.max || conn.is_closed() {
            return;
        }
        // (Every connection the endpoint accepted has its own, kept until
        // it goes.)
        let Some(c) = self.slots.get_mut(&s.handle).map(|h| &mut h.cancels) else {
            return;
        };
        if now.saturating_duration_since(c.since) >= self.budget.window || sent < c.base {
            *c = Cancels {
                since: now,
                base: sent,
            };
        }
        if sent - c.base > self.budget.max {
            let (code, why) = (Code::EXCESSIVE_LOAD.0, "too many streams cancelled");
            let code = quinn_proto::VarInt::from_u32(code);
            conn.close(now, code, bytes::Bytes::from_static(why.as_bytes()));
            s.closed_for = Some(why);
        }
    }

    /// Files slot `slot`'s next deadline `next` in place of `old`.
    pub(super) fn reschedule(&mut self, slot: usize, old: Option<Instant>, next: Option<Instant>) {
        if old == next {
            return;
        }
        if let Some(old) = old {
            self.deadlines.remove(&(old, slot));
        }
        if let Some(at) = next {
            self.deadlines.insert((at, slot));
        }
    }

    /// Connection `ch` (in slot `slot`, its deadline `deadline`) is gone.
    pub(super) fn forget(&mut self, ch: ConnectionHandle, slot: usize, deadline: Option<Instant>) {
        if let Some(at) = deadline {
            self.deadlines.remove(&(at, slot));
        }
        // (Its handle may be a newer connection's already, once quinn-proto
        // let go of it: that one's is kept.)
        if self.slots.get(&ch).is_some_and(|h| h.slot == slot) {
            self.slots.remove(&ch);
        }
    }
}

/// New clients in `arrived`, not accepted yet: they count towards
/// `retry_above` with the connections held (a burst of Initials read in
/// one turn would otherwise all pass it).
fn incoming_in(arrived: &[Arrival]) -> usize {
    arrived
        .iter()
        .filter(|a| matches!(a, Arrival::Incoming(..)))
        .count()
}

/// The least a client's first datagram holds (RFC 9000 §14.1).
const FIRST_DATAGRAM: u64 = 1200;

/// How much of `t` (a datagram, or a batch of them cut by GSO) goes:
/// while its handshake is under way, never more than three times what the
/// client sent (RFC 9000 §8.1: before its address is validated, a spoofed
/// one's victim must not get more). quinn-proto keeps that limit itself
/// but lets a whole datagram go when any of it is left (quinn issue
/// #1082): up to a datagram more than three times, as its timers resend
/// its first flight to an address that never answers. Whole datagrams
/// only; what is held back counts as lost, and is sent again once the
/// client has sent more (a real client's padded Initials and its
/// handshake do; a spoofed address's never come). Once the client's
/// handshake is done (its address proven long before), all goes. (A
/// client that came back with a Retry's token proved its address at once;
/// it is held to this too, which costs it at most a round trip.)
fn within_three_times(conn: &quinn_proto::Connection, t: &Transmit) -> usize {
    if !conn.is_handshaking() {
        return t.size;
    }
    let stats = conn.stats();
    // (quinn-proto counted `t` as sent already, and not the client's
    // first datagram as received: at least 1,200 bytes, RFC 9000 §14.1,
    // which the endpoint checked.)
    let before = stats.udp_tx.bytes.saturating_sub(t.size as u64);
    let came = stats.udp_rx.bytes + FIRST_DATAGRAM;
    let room = (3 * came).saturating_sub(before);
    let room = usize::try_from(room).unwrap_or(usize::MAX);
    if room >= t.size {
        return t.size;
    }
    match t.segment_size {
        Some(s) if s > 0 => room / s * s,
        _ => 0,
    }
}

/// Sends one datagram, `buf`, on `socket` to `t`'s destination (from its
/// source address, on a wildcard socket). A full socket buffer drops it:
/// QUIC's loss recovery sends its frames again.
fn send(socket: &UdpSocket, buf: &[u8], t: &Transmit) {
    let _ = crate::sys::net::send_segments(socket, buf, &t.destination, None, t.src_ip);
}
