//! A worker's QUIC side (feature `http3`): its UDP socket of each `[tls]
//! listen` address (bound with `SO_REUSEPORT`, one per worker, so the
//! kernel hands each client's datagrams, by their 4-tuple, to one
//! worker), watched by the worker's own epoll, and one quinn-proto
//! [`Endpoint`] fed from them, sans-IO: datagrams in, datagrams out,
//! and each connection's next deadline kept here for the loop's timeout.
//! No thread, no runtime: the worker's loop drives it all.
//!
//! Each connection speaks HTTP/3 through `crate::h3::conn` (sans-IO):
//! the server's control stream with its SETTINGS, the client's control
//! and QPACK streams read and held to their rules (a breach closes the
//! connection with the RFC's code), each request stream's frames decoded
//! and checked (a malformed request resets its stream, H3_MESSAGE_ERROR).
//! Answers are not produced yet (the router and the producers are
//! reached through a `Conn`, which a QUIC connection is not; see
//! dev/plan-30-h3.md): a well-formed request is refused as not processed,
//! `H3_REQUEST_REJECTED` (RFC 9114 §4.1.1), which a client may retry
//! elsewhere.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::{SocketAddr, UdpSocket as StdUdp};
use std::sync::Arc;
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};
use quinn_proto::{
    ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, Event, ReadError, ServerConfig,
    StreamEvent, StreamId, Transmit, VarInt,
};

use super::QUIC_BASE;
use crate::h3::conn::{Conn as H3, Failure, Limits, RequestEvent};
use crate::h3::{Code, Error};

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
    /// What its streams say in HTTP/3.
    h3: H3,
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
    /// Each connection's HTTP/3 limits.
    limits: Limits,
}

impl Quic {
    /// Registers `sockets` with `registry`, for `config`'s connections.
    pub(super) fn new(
        registry: &Registry,
        sockets: Vec<StdUdp>,
        config: Arc<ServerConfig>,
        limits: Limits,
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
            limits,
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
            Some(DatagramEvent::NewConnection(incoming))
                if !incoming.remote_address_validated()
                    && self.conns.len() >= self.limits.retry_above =>
            {
                // Under load, a new client proves first that it receives
                // at the address it sends from (RFC 9000 §8.1.2): a
                // spoofed address gets one small Retry, no connection.
                self.send.clear();
                match self.endpoint.retry(incoming, &mut self.send) {
                    Ok(t) => send(&self.sockets[i], &self.send, &t),
                    Err(e) => self.endpoint.ignore(e.into_incoming()),
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                self.send.clear();
                match self.endpoint.accept(incoming, now, &mut self.send, None) {
                    Ok((ch, conn)) => {
                        self.conns.insert(
                            ch,
                            Live {
                                conn,
                                h3: H3::new(self.limits),
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

    /// Closes every connection (the worker stops, or its generation was
    /// replaced by a reload): CONNECTION_CLOSE with H3_NO_ERROR, so each
    /// client knows at once and connects again, rather than after its
    /// idle timeout (or, its datagrams reaching another worker, never).
    pub(super) fn close_all(&mut self, now: Instant) {
        let all: Vec<ConnectionHandle> = self.conns.keys().copied().collect();
        for ch in all {
            if let Some(live) = self.conns.get_mut(&ch) {
                close(
                    live,
                    Error::new(Code::NO_ERROR, "the server is stopping"),
                    now,
                );
            }
            self.drive(ch, now);
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
            serve(live, event, now);
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

/// What a connection tells its application: the server's control stream
/// opened once the handshake is done, the client's streams read as they
/// open and as their bytes come.
fn serve(live: &mut Live, event: Event, now: Instant) {
    match event {
        Event::Connected => {
            // (Its few bytes fit the client's initial credit: a stream
            // that took less is closed with the connection, see below.)
            let mut bytes = Vec::with_capacity(16);
            live.h3.control_stream(&mut bytes);
            let written = live
                .conn
                .streams()
                .open(Dir::Uni)
                .map(|id| live.conn.send_stream(id).write(&bytes));
            if !matches!(written, Some(Ok(n)) if n == bytes.len()) {
                let e = Error::new(Code::INTERNAL_ERROR, "no room for the control stream");
                close(live, e, now);
            }
        }
        Event::Stream(StreamEvent::Opened { dir }) => {
            while let Some(id) = live.conn.streams().accept(dir) {
                read(live, id, now);
            }
        }
        Event::Stream(StreamEvent::Readable { id }) => read(live, id, now),
        _ => {}
    }
}

/// What to do with a stream once its bytes are read.
enum Then {
    Nothing,
    /// Stop reading it and reset it with this code.
    Reset(Code),
    /// Stop reading it (a unidirectional stream of an unknown type).
    Stop,
    /// Close the connection.
    Close(Error),
}

/// Reads what client stream `id` has and hands it to the HTTP/3 state.
fn read(live: &mut Live, id: StreamId, now: Instant) {
    let key = u64::from(id);
    let uni = id.dir() == Dir::Uni;
    let mut then = Then::Nothing;
    let h3 = &mut live.h3;
    let mut stream = live.conn.recv_stream(id);
    let Ok(mut chunks) = stream.read(true) else {
        return;
    };
    loop {
        let (bytes, fin) = match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => (chunk.bytes, false),
            Ok(None) => (bytes::Bytes::new(), true),
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(_)) => {
                h3.forget(key);
                break;
            }
        };
        then = if uni {
            match h3.uni(key, &bytes, fin) {
                Ok(true) => Then::Nothing,
                Ok(false) => Then::Stop,
                Err(e) => Then::Close(e),
            }
        } else {
            let mut head = false;
            let r = h3.request_data(key, &bytes, fin, &mut |ev| {
                head |= matches!(ev, RequestEvent::Head { .. });
            });
            match r {
                Err(Failure::Stream(e)) => Then::Reset(e.code),
                Err(Failure::Connection(e)) => Then::Close(e),
                // Not answered yet (see the module's note): refused
                // whole, before any of its body is wanted.
                Ok(()) if head => Then::Reset(Code::REQUEST_REJECTED),
                Ok(()) => Then::Nothing,
            }
        };
        if fin || !matches!(then, Then::Nothing) {
            break;
        }
    }
    let _ = chunks.finalize();
    match then {
        Then::Nothing => {}
        Then::Stop => {
            let code = VarInt::from_u32(Code::STREAM_CREATION_ERROR.0);
            let _ = live.conn.recv_stream(id).stop(code);
            live.h3.forget(key);
        }
        Then::Reset(code) => {
            let code = VarInt::from_u32(code.0);
            let _ = live.conn.recv_stream(id).stop(code);
            let _ = live.conn.send_stream(id).reset(code);
            live.h3.forget(key);
        }
        Then::Close(e) => close(live, e, now),
    }
}

/// Closes `live` with `e`'s code and reason (CONNECTION_CLOSE).
fn close(live: &mut Live, e: Error, now: Instant) {
    let reason = bytes::Bytes::from_static(e.reason.as_bytes());
    live.conn.close(now, VarInt::from_u32(e.code.0), reason);
}

/// Sends `t`'s datagram from `buf` on `socket`. A full socket buffer
/// drops it: QUIC's loss recovery sends its frames again.
fn send(socket: &UdpSocket, buf: &[u8], t: &Transmit) {
    let _ = socket.send_to(&buf[..t.size], t.destination);
}
