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
use crate::handlers::proxy::body::ProxyBody;
use crate::handlers::proxy::link::Link;
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
        // (Before a kept connection is taken or a new one made: a stream
        // refused costs the upstream nothing.)
        self.room_for(c, stream, &plan.opts.label, r)?;
        let kept = plan.opts.keep.as_ref().and_then(|k| {
            let fits = |link: &Link| link.fits(&plan.tls);
            let (sock, link) = k.pool.borrow_mut().take(&plan.to, fits, self.clock.now)?;
            // (In case its last answer was dropped still watched.)
            let _ = self
                .poll
                .registry()
                .deregister(&mut SourceFd(&sock.as_raw_fd()));
            Some((sock, link))
        });
        if let Some((sock, link)) = kept {
            let body = ProxyBody::new(sock, &plan.head, plan.opts)
                .with_link(link)
                .on_kept_connection();
            return self.start_watched(c, r, stream, Box::new(body), redirects, decoder);
        }
        let made = connect(&plan.to)
            .map_err(|e| e.to_string())
            .and_then(|sock| {
                let link = Link::new(&plan.to, &plan.tls)?;
                Ok((sock, link))
            });
        let (sock, link) = match made {
            Ok(made) => made,
            Err(e) => {
                self.logger.log(
                    Level::Error,
                    format_args!("{}: cannot connect: {e}; 502", plan.opts.label),
                );
                return Err(Plan::error(Status::BAD_GATEWAY, &mut r.scratch));
            }
        };
        let body = ProxyBody::new(sock, &plan.head, plan.opts).with_link(link);
        self.start_watched(c, r, stream, Box::new(body), redirects, decoder)
    }
}
