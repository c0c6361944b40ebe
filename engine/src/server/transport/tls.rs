//! TLS over TCP: the second implementation of [`Transport`], over
//! [`crate::tls`]: rustls's handshake and brisk's own sans-IO record layer.
//!
//! `read` reads records from the socket and hands back the plaintext they
//! carry (the handshake goes on inside it: its flights are written as
//! they are made); `flush` takes the output queue's front piece (a file
//! range is read with `pread` into the worker's buffer, never
//! `sendfile`: the kernel cannot encrypt), encrypts it into records and
//! writes them, saying how much of the piece it consumed; records the
//! socket does not take wait in the connection ([`Transport::has_backlog`]).
//! `shutdown_write` sends close_notify before the FIN.
//!
//! The buffers are the worker's ([`Acceptor`] lends them to each call), so
//! an idle TLS connection is its keys and the socket, nothing more.
//!
//! What a worker needs to start TLS connections is an [`Acceptor`], made
//! from its generation's [`Setup`] (the rustls configuration of its
//! certificates), itself made with the process's [`Sessions`] (the ticket
//! key and the session cache, shared by every worker of every
//! generation, so that a client resumes on any worker, across reloads).

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ServerConfig;

use super::queue::{Front, Out};
use super::{Flushed, Limit, Tcp, Transport};
use crate::config::Config;
use crate::http::TlsSession;
use crate::tls::conn::{HandshakeSlot, Handshakes, TlsConn};
use crate::tls::context::{cache, server_config_offering, ticketer, Shared, ALPN, ALPN_H2};
use crate::tls::stream::{Scratch, TlsStream, MAX_WRITE};

/// What every generation of workers shares: the session-ticket key (it
/// rotates) and the bounded session cache.
#[derive(Debug, Clone)]
pub struct Sessions {
    shared: Shared,
    /// The cache's size, as configured.
    cache_entries: usize,
    /// The ticket keys' file and period, as configured (`[tls]
    /// ticket_keys`).
    ticket_keys: Option<crate::config::TicketKeys>,
}

impl Sessions {
    /// The certificates obtained while running, and the challenges'.
    pub fn live(&self) -> Arc<crate::tls::sni::Live> {
        Arc::clone(&self.shared.live)
    }

    /// The ticket key and the cache for `cfg` (`[tls] session_cache`
    /// entries), `None` without `[tls]`. With the `previous` ones (a
    /// reload), the ticket key is kept, so that tickets issued before
    /// stay good (unless `ticket_keys` changed), and the cache too unless
    /// its size changed. Shared ticket keys log through what `log` makes.
    pub fn new(
        cfg: &Config,
        previous: Option<&Sessions>,
        log: &dyn Fn() -> crate::log::Logger,
    ) -> Result<Option<Sessions>, String> {
        let Some(tls) = &cfg.tls else {
            return Ok(previous.cloned());
        };
        let ticketer = match previous {
            Some(p) if p.ticket_keys.as_ref() == tls.ticket_keys() => {
                Arc::clone(&p.shared.ticketer)
            }
            _ => ticketer(
                tls.ticket_keys().map(|k| (k.file.as_path(), k.rotation)),
                log,
            )?,
        };
        let shared = Shared {
            ticketer,
            cache: match previous {
                Some(p) if p.cache_entries == tls.session_cache => Arc::clone(&p.shared.cache),
                _ => cache(tls.session_cache),
            },
            live: previous.map_or_else(Arc::default, |p| Arc::clone(&p.shared.live)),
        };
        Ok(Some(Sessions {
            shared,
            cache_entries: tls.session_cache,
            ticket_keys: tls.ticket_keys().cloned(),
        }))
    }
}

/// One generation's TLS: the rustls configuration of its certificates,
/// and its limits.
#[derive(Debug, Clone)]
pub struct Setup {
    config: Arc<ServerConfig>,
    timeout: Duration,
    max_handshakes: usize,
    /// QUIC's, with `[http3] enable`.
    #[cfg(feature = "http3")]
    pub(crate) quic: Option<Arc<quinn_proto::ServerConfig>>,
}

impl Setup {
    /// The setup for `cfg`, with the process's `sessions`; `None`
    /// without `[tls]`.
    pub fn new(cfg: &Config, sessions: Option<&Sessions>) -> Result<Option<Setup>, String> {
        let (Some(tls), Some(sessions)) = (&cfg.tls, sessions) else {
            return Ok(None);
        };
        // (`enable` is false in a build without HTTP/2.)
        let alpn = if cfg.http2.enable { ALPN_H2 } else { ALPN };
        let config = server_config_offering(
            &tls.certificates,
            tls.session_tickets,
            &sessions.shared,
            alpn,
        )
        .map_err(|e| format!("cannot set up TLS with these certificates: {e}"))?;
        #[cfg(feature = "http3")]
        let quic = match cfg.http3.enable {
            true => {
                let limits = crate::tls::quic::Limits {
                    max_streams: cfg.http3.max_streams,
                    idle_timeout: cfg.http3.idle_timeout,
                };
                let shared = &sessions.shared;
                let quic = crate::tls::quic::server_config(
                    &tls.certificates,
                    tls.session_tickets,
                    shared,
                    limits,
                )
                .map_err(|e| format!("cannot set up QUIC with these certificates: {e}"))?;
                Some(quic)
            }
            false => None,
        };
        Ok(Some(Setup {
            config,
            timeout: tls.handshake_timeout,
            max_handshakes: tls.max_handshakes,
            #[cfg(feature = "http3")]
            quic,
        }))
    }
}

/// A worker's means to start TLS connections: its generation's rustls
/// configuration, its cap on handshakes in progress, and the buffers its
/// TLS connections share.
#[derive(Debug)]
pub struct Acceptor {
    config: Arc<ServerConfig>,
    timeout: Duration,
    handshakes: Handshakes,
    scratch: Rc<RefCell<Scratch>>,
}

/// One handshake's place under a worker's cap.
pub type Slot = HandshakeSlot;

impl Acceptor {
    /// The acceptor of one worker of `setup`'s generation.
    pub fn new(setup: &Setup) -> Acceptor {
        Acceptor {
            config: Arc::clone(&setup.config),
            timeout: setup.timeout,
            handshakes: Handshakes::new(setup.max_handshakes),
            scratch: Rc::new(RefCell::new(Scratch::new())),
        }
    }

    /// A place for one more handshake, or `None` while the worker has
    /// as many in progress as it may (`[tls] max_handshakes`): new TLS
    /// connections then wait in the kernel's accept queue.
    pub fn slot(&self) -> Option<Slot> {
        self.handshakes.try_begin()
    }

    /// Gives back the buffers the worker's TLS connections share (they
    /// grow again with the next read or write): a resting worker's.
    pub fn rest(&self) {
        *self.scratch.borrow_mut() = Scratch::new();
    }

    /// The cap on handshakes in progress.
    pub fn max_handshakes(&self) -> usize {
        self.handshakes.max()
    }

    /// Whether a handshake could begin now.
    pub fn has_room(&self) -> bool {
        self.handshakes.active() < self.handshakes.max()
    }

    /// TLS over `tcp`, a connection just accepted at `now`, holding `slot`
    /// until its handshake ends.
    pub fn wrap(&self, tcp: Tcp, slot: Slot, now: Instant) -> io::Result<Tls> {
        let conn = TlsConn::new(Arc::clone(&self.config), now, self.timeout, Some(slot))
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Tls {
            tcp,
            stream: TlsStream::new(conn),
            scratch: Rc::clone(&self.scratch),
            closed: false,
            notified: false,
        })
    }
}

/// A TLS connection: the TCP socket (and what epoll said of it) and the
/// record layer's state.
#[derive(Debug)]
pub struct Tls {
    tcp: Tcp,
    stream: TlsStream,
    /// The worker's buffers.
    scratch: Rc<RefCell<Scratch>>,
    /// The client has closed after plaintext that was handed up: the next
    /// read says so.
    closed: bool,
    /// close_notify has been sent.
    notified: bool,
}

impl Tls {
    /// The socket and its readiness flags.
    pub fn tcp(&self) -> &Tcp {
        &self.tcp
    }

    /// The socket and its readiness flags.
    pub fn tcp_mut(&mut self) -> &mut Tcp {
        &mut self.tcp
    }

    /// When the handshake must be done by, while it is not.
    pub fn deadline(&self) -> Option<Instant> {
        self.stream.conn().handshake_deadline()
    }

    /// The server name (SNI) the client asked for, lower case.
    pub fn server_name(&self) -> Option<&str> {
        self.stream.conn().server_name()
    }

    /// Whether the handshake stalled before the ClientHello was whole
    /// (see [`TlsStream::hello_stalled`]).
    pub fn hello_stalled(&self) -> bool {
        self.stream.hello_stalled()
    }

    /// Gives back what an idle connection can build again (its expanded
    /// keys, see `tls::record`): called once it has been idle a while.
    pub fn rest(&mut self) {
        self.stream.rest();
    }

    /// Whether the client chose HTTP/2 by ALPN (`h2`).
    pub fn alpn_h2(&self) -> bool {
        self.stream.conn().alpn() == Some(&b"h2"[..])
    }

    /// The protocol version and cipher suite, once negotiated.
    pub fn session(&self) -> Option<TlsSession> {
        let conn = self.stream.conn();
        Some(TlsSession {
            protocol: conn.protocol()?,
            cipher: conn.cipher()?,
        })
    }

    /// Writes the queue's pieces as records, a file range's head held
    /// for the range's first records (see [`Transport::flush`]).
    fn flush_pieces(
        &mut self,
        s: &mut Scratch,
        out: &mut Out,
        mut limit: usize,
        fin_follows: bool,
    ) -> io::Result<Flushed> {
        let sock = self.tcp.socket();
        loop {
            if limit == 0 && !out.is_empty() {
                return Ok(Flushed::Limit);
            }
            let Some((front, last)) = out.front() else {
                // What is held (tickets, the last records) goes now.
                self.stream.park(&mut s.out);
                if !self.stream.flush(sock)? {
                    return Ok(Flushed::Blocked);
                }
                self.stream.release();
                return Ok(Flushed::All);
            };
            // The connection's last bytes take close_notify with them, so
            // that the FIN is all shutdown_write has left to send.
            let closing =
                |n: usize, left: u64| fin_follows && last && n as u64 == left && n <= MAX_WRITE;
            let (data, ends): (&[u8], bool) = match front {
                Front::Bytes(bytes) => {
                    let end = bytes.len().min(limit);
                    (&bytes[..end], closing(end, bytes.len() as u64))
                }
                Front::File(range) => {
                    let want = (range.len.min(MAX_WRITE as u64) as usize).min(limit);
                    if s.plain.len() < want {
                        // Once per worker: zeroed up to MAX_WRITE, then kept.
                        s.plain.resize(MAX_WRITE.max(want), 0);
                    }
                    match range.file.read_at(&mut s.plain[..want], range.offset) {
                        // The file shrank under us: the promised length
                        // cannot be kept, so the connection must end.
                        Ok(0) => {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "file truncated while sending",
                            ))
                        }
                        Ok(n) => (&s.plain[..n], closing(n, range.len)),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                }
                // (The sinks queue pipes on plain TCP only.)
                Front::Pipe(_) => {
                    return Err(io::Error::other("a pipe queued on a TLS connection"))
                }
                Front::Mapped(_) => {
                    return Err(io::Error::other("a mapping queued on a TLS connection"))
                }
            };
            // A head with a file range behind it: held, to leave with the
            // range's first records in one write.
            let head = !last && matches!(front, Front::Bytes(_));
            let taken = match (ends && !self.notified, head) {
                (true, _) => self.stream.write_last(sock, &mut s.out, data),
                (false, true) => self.stream.write_held(sock, &mut s.out, data),
                (false, false) => self.stream.write(sock, &mut s.out, data),
            };
            if ends && matches!(taken, Ok(n) if n > 0) {
                self.notified = true;
            }
            match taken {
                // Output is only made for requests, which only come once
                // the handshake is done; never wait for it here (there is
                // no event to wait for).
                Ok(0) => {
                    return Err(io::Error::other(
                        "output queued before the TLS handshake ended",
                    ))
                }
                Ok(n) => {
                    limit -= n;
                    out.advance(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flushed::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Transport for Tls {
    fn read(&mut self, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
        if self.closed {
            return Ok(0);
        }
        // As much as the caller has room for: the engine takes a read
        // that fills its buffer (or `max`) as "more may wait"
        // (edge-triggered polling), and one that does not as "drained".
        let want = (buf.capacity() - buf.len()).min(max).max(1);
        let mut s = self.scratch.borrow_mut();
        let got = self.stream.read(self.tcp.socket(), &mut s, buf, want)?;
        if got.closed {
            if got.plaintext == 0 {
                return Ok(0);
            }
            // The end is said at the next read, which the engine makes
            // at once: the client's end is like a FIN epoll reported.
            self.closed = true;
            self.tcp.hangup = true;
        } else if got.plaintext == 0 {
            // The handshake went on, or a record is still arriving.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(got.plaintext)
    }

    fn flush(&mut self, out: &mut Out, limit: Limit, fin_follows: bool) -> io::Result<Flushed> {
        let scratch = Rc::clone(&self.scratch);
        let mut s = scratch.borrow_mut();
        let flushed = self.flush_pieces(&mut s, out, limit.bytes, fin_follows);
        // A head held for a range's records that did not follow in this
        // call stays with the connection.
        self.stream.park(&mut s.out);
        flushed
    }

    fn has_backlog(&self) -> bool {
        self.stream.wants_write()
    }

    fn shutdown_write(&mut self) {
        if !self.notified {
            self.notified = true;
            let mut s = self.scratch.borrow_mut();
            // A clean end that the client can tell from a cut (RFC 8446
            // §6.1); if the socket does not take it now, the FIN alone.
            let _ = self.stream.close_notify(self.tcp.socket(), &mut s.out);
        }
        self.tcp.shutdown_write();
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        self.tcp.local_addr()
    }
}

#[cfg(test)]
mod tests;
