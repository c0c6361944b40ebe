//! Clients behind proxies (see [`crate::access::proxy`]): the PROXY
//! protocol header a `[proxy] listen` connection must open with, which
//! makes its client the connection's peer (and so what the access log,
//! `limits.max_connections_per_ip`, the failed-login counter and CGI's
//! `REMOTE_ADDR` see); and the forwarding headers of a request from a
//! trusted peer (`[proxy] trusted`), which name the client of that one
//! request (not of the connection: a proxy's pooled connection carries
//! many clients' requests, so the per-address connection count stays
//! with the connection's peer).

use std::io;
use std::io::Read as _;
use std::net::SocketAddr;

use super::{Worker, REFUSED};
use crate::access::proxy::{forwarded, header};
use crate::config::Level;
use crate::http::request::{Forwarded, OwnedRequest};
use crate::server::conn::Conn;
use crate::sys::net;

impl Worker {
    /// Takes the PROXY header from the start of `input` on a connection
    /// that waits for one: how many bytes it took (0: it is not all
    /// there yet). An error closes the connection: no header (or a
    /// malformed one), or a client over `limits.max_connections_per_ip`
    /// (it gets a 503 first, as at accept).
    pub(super) fn take_proxy_header(&mut self, c: &mut Conn, input: &[u8]) -> io::Result<usize> {
        let (len, source) = match header::parse(input) {
            Ok(header::Parsed::Incomplete) => return Ok(0),
            Ok(header::Parsed::Done { len, source, .. }) => (len, source),
            Err(e) => {
                self.client_info(format_args!(
                    "client {}: {e} on a [proxy] listener; connection closed",
                    c.peer.ip()
                ));
                return Err(io::Error::new(io::ErrorKind::InvalidData, e.0));
            }
        };
        // LOCAL (the balancer's own check) and UNKNOWN keep the peer.
        if let Some(client) = source {
            c.peer = client;
        }
        c.life.awaiting_proxy = false;
        if let Err(why) = self.counts.counters.conn_limits.admit_ip(c.peer.ip()) {
            // Counted in the total only, as at accept.
            c.life.awaiting_proxy = true;
            let _ = net::send(c.transport.tcp().socket(), REFUSED, false);
            if self.logger.enabled(Level::Warn) {
                self.logger.log(
                    Level::Warn,
                    format_args!("refused connection from {}: {why}", c.peer.ip()),
                );
            }
            return Err(io::Error::other("over the connection limit"));
        }
        Ok(len)
    }

    /// Takes the PROXY header of a `[proxy] tls_listen` connection from
    /// its socket itself, before TLS begins: looked at in place (`peek`),
    /// then exactly its bytes read, so that the TLS engine's first read
    /// starts at the ClientHello. Whether it was taken (false: it is not
    /// all there yet; its next bytes raise an event). Errors as
    /// [`Worker::take_proxy_header`], and a client that leaves first.
    pub(super) fn take_proxy_header_before_tls(&mut self, c: &mut Conn) -> io::Result<bool> {
        let mut head = [0u8; header::MAX_HEADER];
        let seen = match c.transport.tcp().socket().peek(&mut head) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        };
        let len = self.take_proxy_header(c, &head[..seen])?;
        if len == 0 {
            return Ok(false);
        }
        let mut sock = c.transport.tcp().socket();
        // (All `len` bytes are in the socket's queue: they were seen.)
        sock.read_exact(&mut head[..len])?;
        Ok(true)
    }

    /// Records in request `req` who trusted proxies say its client is,
    /// when its connection's peer is one of them; an error (a 400) when
    /// what they say cannot be read (see [`forwarded::Malformed`]).
    pub(super) fn see_through_proxies(
        &self,
        c: &Conn,
        req: &mut OwnedRequest,
    ) -> Result<(), forwarded::Malformed> {
        let trusted = &self.settings.cfg.proxy.trusted;
        if !cfg!(feature = "ops") || trusted.is_empty() {
            return Ok(());
        }
        let headers = req.headers().map(|h| (h.name, h.value));
        let by = self.settings.cfg.proxy.header;
        if let Some(client) = forwarded::client(trusted, by, c.peer, headers)? {
            req.set_forwarded(Forwarded {
                addr: client.addr,
                https: client.https,
                by: c.peer.ip(),
            });
        }
        Ok(())
    }
}

/// The client of `req` on `c`: as trusted proxies name it, else the
/// connection's peer.
pub(super) fn client_of(c: &Conn, req: &OwnedRequest) -> SocketAddr {
    req.forwarded().map_or(c.peer, |f| f.addr)
}
