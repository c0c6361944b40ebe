//! Upstreams in the event loop (`[[reverse_proxy]]`): the router decided
//! where a request goes ([`UpstreamPlan`]); here the worker connects to
//! it, non-blocking, and the answer is a producer ([`ProxyBody`]) whose
//! socket is watched like a program's pipes (see `pipe`), under its
//! exchange's token, for reading and writing at once. Nothing here
//! blocks the loop: the connection completes while other clients are
//! served, and `connect_timeout` bounds it as the run's idle timeout.
//! A kept connection to the same upstream (the pool, `keepalive`) is
//! taken instead of a new one when there is one.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use mio::unix::SourceFd;

use super::{Request, Worker};
use crate::config::{Level, Upstream};
use crate::handlers::fastcgi::body::FastcgiBody;
use crate::handlers::fastcgi::FastcgiPlan;
use crate::handlers::proxy::body::ProxyBody;
use crate::handlers::proxy::pool::Keep;
use crate::handlers::proxy::UpstreamPlan;
use crate::handlers::Plan;
use crate::http::body::BodyDecoder;
use crate::http::Status;
use crate::server::conn::Conn;

/// A non-blocking connection to `to`, under way (TCP) or made (a unix
/// socket connects at once, or fails).
fn connect(to: &Upstream) -> io::Result<OwnedFd> {
    match to {
        Upstream::Tcp { addr, .. } => {
            let sock = mio::net::TcpStream::connect(*addr)?;
            let _ = sock.set_nodelay(true);
            Ok(OwnedFd::from(std::net::TcpStream::from(sock)))
        }
        Upstream::Unix(path) => {
            let sock = mio::net::UnixStream::connect(path)?;
            Ok(OwnedFd::from(std::os::unix::net::UnixStream::from(sock)))
        }
    }
}

/// How the access log names `to` (`upstream_addr`): its address, as
/// nginx's `$upstream_addr` does, or `unix:` and its path.
fn logged(to: &Upstream) -> String {
    match to {
        Upstream::Tcp { addr, .. } => addr.to_string(),
        Upstream::Unix(path) => format!("unix:{}", path.display()),
    }
}

impl Worker {
    /// Starts forwarding request `r` on `c` (its HTTP/1.1 exchange,
    /// `stream` none, whose body `decoder` reads on its way upstream; or
    /// its HTTP/2 stream) as `plan` says. The answer to give instead when
    /// the upstream cannot be reached at once (502).
    pub(super) fn start_upstream(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        plan: UpstreamPlan,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        let (sock, kept) =
            self.upstream_socket(&plan.to, plan.opts.keep.as_ref(), &plan.opts.label, r)?;
        let body = ProxyBody::new(sock, &plan.head, plan.opts).logged_as(logged(&plan.to));
        let body = match kept {
            true => body.on_kept_connection(),
            false => body,
        };
        self.start_watched(c, r, stream, Box::new(body), redirects, decoder)
    }

    /// Starts handing request `r` to a FastCGI application as `plan`
    /// says, as [`Worker::start_upstream`] does; a 502 when it cannot be
    /// reached at once.
    pub(super) fn start_fastcgi(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        plan: FastcgiPlan,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        let (sock, kept) =
            self.upstream_socket(&plan.to, plan.opts.keep.as_ref(), &plan.opts.label, r)?;
        let body = FastcgiBody::new(sock, kept, &plan.params, plan.body, plan.opts);
        self.start_watched(c, r, stream, Box::new(body), redirects, decoder)
    }

    /// A connection to `to` for request `r`: one kept in the pool `keep`
    /// names (true), else a new one, connecting; the 502 to answer (the
    /// error logged after `label`) when none can be made.
    fn upstream_socket(
        &mut self,
        to: &Upstream,
        keep: Option<&Keep>,
        label: &str,
        r: &mut Request,
    ) -> Result<(OwnedFd, bool), Plan> {
        let kept = keep.and_then(|k| {
            let sock = k.pool.borrow_mut().take(to, self.clock.now)?;
            // (In case its last answer was dropped still watched.)
            let _ = self
                .poll
                .registry()
                .deregister(&mut SourceFd(&sock.as_raw_fd()));
            Some(sock)
        });
        if let Some(sock) = kept {
            return Ok((sock, true));
        }
        match connect(to) {
            Ok(sock) => Ok((sock, false)),
            Err(e) => {
                self.logger.log(
                    Level::Error,
                    format_args!("{label}: cannot connect: {e}; 502"),
                );
                Err(Plan::error(Status::BAD_GATEWAY, &mut r.scratch))
            }
        }
    }
}
