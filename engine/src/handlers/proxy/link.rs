//! How a [`super::body::ProxyBody`] talks over its socket: bytes as they
//! are (`http://`, `unix:`), or through TLS (`https://`, the feature
//! `tls`), so that the head and body logic is the same for both. A kept
//! connection keeps its link (a TLS one, its session) in the pool.

use std::io;
use std::os::fd::AsRawFd;

use crate::config::Upstream;
use crate::handlers::produce::Wrote;
use crate::handlers::relay::{Outbox, OutboxError};
use crate::sys::net::{read_at_most, send};
#[cfg(feature = "tls")]
use crate::tls::client::{TlsLink, UpstreamTls};

/// The rule's TLS client for its https upstreams (none for the others);
/// a unit without the feature `tls`, where there are none.
#[cfg(feature = "tls")]
pub type Tls = Option<UpstreamTls>;
/// (Without the feature `tls` there are no https upstreams.)
#[cfg(not(feature = "tls"))]
pub type Tls = ();

/// A connection's transport.
#[derive(Debug, Default)]
pub enum Link {
    /// Bytes as they are.
    #[default]
    Plain,
    /// TLS to an https upstream.
    #[cfg(feature = "tls")]
    Tls(Box<TlsLink>),
}

impl Link {
    /// The transport of a new connection to `to` (TLS with `tls` for an
    /// https upstream); the reason when there can be none.
    pub fn new(to: &Upstream, tls: &Tls) -> Result<Link, String> {
        match (to, tls) {
            #[cfg(feature = "tls")]
            (
                Upstream::Tcp {
                    tls: true, host, ..
                },
                Some(tls),
            ) => Ok(Link::Tls(Box::new(tls.connect(host)?))),
            #[cfg(feature = "tls")]
            (Upstream::Tcp { tls: true, .. }, None) => Err("no TLS client for it".into()),
            _ => Ok(Link::Plain),
        }
    }

    /// Whether a kept connection with this link may carry a request of a
    /// rule whose TLS client is `tls` (a TLS one, only of the same rule's
    /// kind: one that was not verified never serves one that must be).
    pub fn fits(&self, tls: &Tls) -> bool {
        match (self, tls) {
            (Link::Plain, _) => true,
            #[cfg(feature = "tls")]
            (Link::Tls(link), Some(tls)) => link.made_with(tls),
            #[cfg(feature = "tls")]
            (Link::Tls(_), None) => false,
        }
    }

    /// Whether the connection is up, `moved` saying whether bytes were
    /// just taken: plain, once the socket took one; TLS, once the
    /// handshake is over (`connect_timeout` bounds it, as nginx's does).
    pub fn is_up(&self, moved: bool) -> bool {
        match self {
            Link::Plain => moved,
            #[cfg(feature = "tls")]
            Link::Tls(link) => !link.is_handshaking(),
        }
    }

    /// Whether the connection ended without TLS's close_notify (see
    /// `TlsLink::cut_short`); never over plain bytes.
    pub fn cut_short(&self) -> bool {
        match self {
            Link::Plain => false,
            #[cfg(feature = "tls")]
            Link::Tls(link) => link.cut_short(),
        }
    }

    /// Appends what came on `sock` to `buf`, as a read would.
    /// Plain bytes: at most `max` (TLS gives what a record holds).
    pub fn read(
        &mut self,
        sock: &impl AsRawFd,
        buf: &mut Vec<u8>,
        max: usize,
    ) -> io::Result<usize> {
        match self {
            Link::Plain => read_at_most(sock, buf, max),
            #[cfg(feature = "tls")]
            Link::Tls(link) => link.read(sock, buf),
        }
    }

    /// Sends what it can of `bytes` on `sock`, as a write would.
    pub fn send(&mut self, sock: &impl AsRawFd, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Link::Plain => send(sock, bytes, false),
            #[cfg(feature = "tls")]
            Link::Tls(link) => link.send(sock, bytes),
        }
    }

    /// Writes what waits in `outbox` on `sock` while `ready` (cleared
    /// when it would block), after what TLS has to send of its own (its
    /// handshake); `sent` counts the bytes the socket took.
    pub fn write_outbox(
        &mut self,
        sock: &impl AsRawFd,
        outbox: &mut Outbox,
        ready: &mut bool,
        sent: &mut usize,
    ) -> Result<Wrote, OutboxError> {
        match self.flush(sock) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(OutboxError::Write(e)),
            _ => {}
        }
        outbox.write_to(ready, &mut |b| {
            let n = self.send(sock, b)?;
            *sent += n;
            Ok(n)
        })
    }

    /// Writes what the transport itself has to send (TLS's handshake).
    pub fn flush(&mut self, sock: &impl AsRawFd) -> io::Result<()> {
        match self {
            // (Bytes as they are have nothing of their own to send.)
            Link::Plain => {
                let _ = sock;
                Ok(())
            }
            #[cfg(feature = "tls")]
            Link::Tls(link) => link.flush(sock),
        }
    }
}
