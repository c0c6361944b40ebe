//! A worker's QUIC side (feature `http3`): its UDP socket of each `[tls]
//! listen` address (bound with `SO_REUSEPORT`, one per worker, so the
//! kernel hands each client's datagrams, by their 4-tuple, to one
//! worker), watched by the worker's own epoll, and one quinn-proto
//! [`Endpoint`] fed from them, sans-IO: datagrams in, datagrams out,
//! and each connection's next deadline kept here for the loop's timeout.
//! No thread, no runtime: the worker's loop drives it all.
//!
//! What it serves on the streams is the HTTP/3 layer's (not there yet: a
//! request stream is refused as not processed, `H3_REQUEST_REJECTED`,
//! RFC 9114 §4.1.1, which a client may retry elsewhere; see
//! dev/plan-30-h3.md).

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::{SocketAddr, UdpSocket as StdUdp};
use std::sync::Arc;
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ServerConfig,
    StreamEvent, Transmit, VarInt,
};

use super::QUIC_BASE;

/// `H3_REQUEST_REJECTED` (RFC 9114 §8.1): the request was not processed.
const H3_REQUEST_REJECTED: u32 = 0x10b;

/// The largest UDP payload read: QUIC's datagrams fit in 1,500-byte
/// packets here (no GRO yet), a jumbo frame's in this.
const DATAGRAM: usize = 65_535;

/// Datagrams read from one socket per readiness event before the other
/// sockets and connections get their turn (the socket stays readable:
/// epoll is edge-triggered, so the rest waits for [`Quic::more`]).
const READS_PER_TURN: usize = 64;

/// One QUIC connection of a worker.
struct Live {
    conn: quinn_proto::Connection,
    /// The socket its datagrams came in by (and go out by).
    socket: usize,
    /// Its deadline as filed in [`Quic::deadlines`].
    deadline: Option<Instant>,
}

/// A worker's QUIC endpoint and its sockets.
pub(super) struct Quic {
    endpoint: Endpoint,
    /// Socket `i` has token `QUIC_BASE + i`.
    sockets: Vec<UdpSocket>,
    /// Sockets that still had datagrams when their turn ended.
    more: Vec<usize>,
    conns: HashMap<ConnectionHandle, Live>,
    /// Every connection's next deadline, earliest first.
    deadlines: BTreeSet<(Instant, usize)>,
    /// What a datagram is read into.
    recv: Vec<u8>,
    /// What a datagram is written into.
    send: Vec<u8>,
}

impl Quic {
    /// Registers `sockets` with `registry`, for `config`'s connections.
    pub(super) fn new(
        registry: &Registry,
        sockets: Vec<StdUdp>,
        config: Arc<ServerConfig>,
    ) -> io::Result<Quic> {
        let mut registered = Vec::with_capacity(sockets.len());
        for (i, s) in sockets.into_iter().enumerate() {
            let mut s = UdpSocket::from_std(s);
            registry.register(&mut s, Token(QUIC_BASE + i), Interest::READABLE)?;
            registered.push(s);
        }
        let endpoint = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(config),
            true,
            None,
        );
        Ok(Quic {
            endpoint,
            sockets: registered,
            more: Vec::new(),
            conns: HashMap::new(),
            deadlines: BTreeSet::new(),
            recv: vec![0; DATAGRAM],
            send: Vec::new(),
        })
    }

    /// Whether `token` is one of its sockets'.
    pub(super) fn owns(&self, token: usize) -> bool {
        (QUIC_BASE..QUIC_BASE + self.sockets.len()).contains(&token)
    }

    /// The earliest deadline of a connection, or now when a socket has
    /// datagrams waiting.
    pub(super) fn earliest(&self, now: Instant) -> Option<Instant> {
        if !self.more.is_empty() {
            return Some(now);
        }
        self.deadlines.first().map(|d| d.0)
    }

    /// Socket `token`'s datagrams, up to a turn's worth.
    pub(super) fn readable(&mut self, token: usize, now: Instant) {
        let i = token - QUIC_BASE;
        let mut touched = Vec::new();
        let mut read = 0;
        loop {
            if read == READS_PER_TURN {
                if !self.more.contains(&i) {
                    self.more.push(i);
                }
                break;
            }
            let (n, from) = match self.sockets[i].recv_from(&mut self.recv) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock, or an error (an ICMP report of an earlier
                // send): nothing more for now.
                Err(_) => break,
            };
            read += 1;
            let data = bytes::BytesMut::from(&self.recv[..n]);
            self.datagram(i, from, data, now, &mut touched);
        }
        for ch in touched {
            self.drive(ch, now);
        }
    }

    /// One datagram from `from` on socket `i`.
    fn datagram(
        &mut self,
        i: usize,
        from: SocketAddr,
        data: bytes::BytesMut,
        now: Instant,
        touched: &mut Vec<ConnectionHandle>,
    ) {
        self.send.clear();
        match self
            .endpoint
            .handle(now, from, None, None, data, &mut self.send)
        {
            Some(DatagramEvent::NewConnection(incoming)) => {
                self.send.clear();
                match self.endpoint.accept(incoming, now, &mut self.send, None) {
                    Ok((ch, conn)) => {
                        self.conns.insert(
                            ch,
                            Live {
                                conn,
                                socket: i,
                                deadline: None,
                            },
                        );
                        touched.push(ch);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            send(&self.sockets[i], &self.send, &t);
                        }
                    }
                }
            }
            Some(DatagramEvent::ConnectionEvent(ch, event)) => {
                if let Some(live) = self.conns.get_mut(&ch) {
                    live.conn.handle_event(event);
                    if !touched.contains(&ch) {
                        touched.push(ch);
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => send(&self.sockets[i], &self.send, &t),
            None => {}
        }
    }

    /// Connections whose deadline has come, and sockets with datagrams
    /// left from their last turn.
    pub(super) fn fire(&mut self, now: Instant) {
        for i in std::mem::take(&mut self.more) {
            self.readable(QUIC_BASE + i, now);
        }
        while let Some(&(at, ch)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            let ch = ConnectionHandle(ch);
            if let Some(live) = self.conns.get_mut(&ch) {
                live.deadline = None;
                live.conn.handle_timeout(now);
                self.drive(ch, now);
            }
        }
    }

    /// Everything connection `ch` has to do after an input: its events
    /// for the endpoint and for the application, its datagrams, its next
    /// deadline; forgotten once drained.
    fn drive(&mut self, ch: ConnectionHandle, now: Instant) {
        let Some(live) = self.conns.get_mut(&ch) else {
            return;
        };
        while let Some(event) = live.conn.poll() {
            serve(&mut live.conn, event);
        }
        while let Some(event) = live.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(ch, event) {
                live.conn.handle_event(back);
            }
        }
        let socket = &self.sockets[live.socket];
        loop {
            self.send.clear();
            match live.conn.poll_transmit(now, 1, &mut self.send) {
                Some(t) => send(socket, &self.send, &t),
                None => break,
            }
        }
        let next = live.conn.poll_timeout();
        if next != live.deadline {
            if let Some(old) = live.deadline {
                self.deadlines.remove(&(old, ch.0));
            }
            if let Some(at) = next {
                self.deadlines.insert((at, ch.0));
            }
            live.deadline = next;
        }
        if live.conn.is_drained() {
            if let Some(old) = live.deadline {
                self.deadlines.remove(&(old, ch.0));
            }
            self.conns.remove(&ch);
        }
    }
}

/// What a connection tells its application. Until the HTTP/3 layer
/// serves them, request streams are refused as not processed, and the
/// client's unidirectional streams (control, QPACK) are read and their
/// bytes dropped: flow control bounds them, and closing a critical
/// stream would be a connection error (RFC 9114 §6.2.1).
fn serve(conn: &mut quinn_proto::Connection, event: Event) {
    let rejected = VarInt::from_u32(H3_REQUEST_REJECTED);
    match event {
        Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
            while let Some(id) = conn.streams().accept(Dir::Bi) {
                let _ = conn.recv_stream(id).stop(rejected);
                let _ = conn.send_stream(id).reset(rejected);
            }
        }
        Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
            while let Some(id) = conn.streams().accept(Dir::Uni) {
                drain(conn, id);
            }
        }
        Event::Stream(StreamEvent::Readable { id }) if id.dir() == Dir::Uni => drain(conn, id),
        _ => {}
    }
}

/// Reads what unidirectional stream `id` has and drops it.
fn drain(conn: &mut quinn_proto::Connection, id: quinn_proto::StreamId) {
    let mut stream = conn.recv_stream(id);
    let Ok(mut chunks) = stream.read(true) else {
        return;
    };
    while let Ok(Some(_)) = chunks.next(usize::MAX) {}
    let _ = chunks.finalize();
}

/// Sends `t`'s datagram from `buf` on `socket`. A full socket buffer
/// drops it: QUIC's loss recovery sends its frames again.
fn send(socket: &UdpSocket, buf: &[u8], t: &Transmit) {
    let _ = socket.send_to(&buf[..t.size], t.destination);
}
