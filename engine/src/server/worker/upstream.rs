//! Upstreams in the event loop (`[[reverse_proxy]]`): the router decided
//! where a request goes ([`UpstreamPlan`]); here the worker connects to
//! it, non-blocking, and the answer is a producer ([`ProxyBody`]) whose
//! socket is watched like a program's pipes (see `pipe`), under its
//! exchange's token, for reading and writing at once. Nothing here
//! blocks the loop: the connection completes while other clients are
//! served, and `connect_timeout` bounds it as the run's idle timeout.
//! A kept connection to the same upstream (the pool, `keepalive`) is
//! taken instead of a new one when there is one. An upstream that cannot
//! be reached, or a kept connection it had closed, may make the request
//! go again on a new connection (see `ProxyBody::try_again`).

use std::os::fd::OwnedFd;

use super::{Request, Worker};
use crate::config::{Level, Upstream};
use crate::handlers::fastcgi::body::{BodyIn, FastcgiBody};
use crate::handlers::fastcgi::FastcgiPlan;
use crate::handlers::proxy::body::ProxyBody;
use crate::handlers::proxy::dial;
use crate::handlers::proxy::link::{Link, Tls};
use crate::handlers::proxy::pool::Keep;
use crate::handlers::proxy::UpstreamPlan;
use crate::handlers::Plan;
use crate::http::body::BodyDecoder;
use crate::http::Status;
use crate::server::conn::Conn;

impl Worker {
    /// Whether request `r` of HTTP/2 or HTTP/3 stream `stream` of `c`
    /// waits for its turn ([`Worker::wait_turn`]): the connection has no
    /// room for one more upstream request now (see `pipe::H2_PIPES`),
    /// and the request may wait (not one whose body was held whole
    /// before, `body_read`: a wait could not give it again; over HTTP/3
    /// not one past the bound of bodies waiting unread). (A page's many
    /// API calls through the proxy were answered 503 past the limit;
    /// one that may not wait is refused: [`Worker::refuses`].)
    fn waits_turn(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        redirects: u8,
        body_read: bool,
    ) -> bool {
        #[cfg(feature = "http2")]
        if let Some(id) = stream.filter(|_| super::pipe::programs_full(c)) {
            return self.wait_turn(c, r, id, redirects, body_read);
        }
        let _ = (c, r, stream, redirects, body_read);
        false
    }

    /// Whether HTTP/2 or HTTP/3 stream `stream` of `c` is refused
    /// (RST_STREAM REFUSED_STREAM; HTTP/3: H3_REQUEST_REJECTED;
    /// [`Worker::refuse_stream`]) because the connection
    /// has no room for one more upstream request (one that may not wait
    /// its turn: [`Worker::waits_turn`]): nothing was sent
    /// anywhere, so the client may send it again (RFC 9113 §8.7;
    /// browsers and curl do), where a 503 would be an answer to show.
    /// (A CGI program is refused so too, before it starts: see
    /// `Worker::route`.)
    fn refuses(&mut self, c: &mut Conn, stream: Option<u32>, label: &str) -> bool {
        #[cfg(feature = "http2")]
        if let Some(id) = stream.filter(|_| super::pipe::programs_full(c)) {
            return self.refuse_stream(c, id, super::pipe::NoRoom::Programs(&label));
        }
        let _ = (c, stream, label);
        false
    }

    /// Starts forwarding request `r` on `c` (its HTTP/1.1 exchange,
    /// `stream` none, whose body `decoder` reads on its way upstream; or
    /// its HTTP/2 stream) as `plan` says (its fields are moved out of its
    /// box one by one: it is some 600 bytes). The answer to give instead when
    /// the upstream cannot be reached at once (502).
    pub(super) fn start_upstream(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        plan: Box<UpstreamPlan>,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        // (Before a kept connection is taken or a new one made: a stream
        // that waits for its turn costs the upstream nothing.)
        if self.waits_turn(c, r, stream, redirects, plan.held.is_some()) {
            return Ok(());
        }
        if self.refuses(c, stream, &plan.opts.label) {
            return Ok(());
        }
        let check = !ProxyBody::may_go_again(&plan.opts);
        let keep = plan.opts.keep.as_ref();
        if let Some((sock, link, watched)) = self.kept_socket(&plan.to, keep, &plan.tls, check) {
            let addr = dial::addr(&plan.to);
            let mut body = ProxyBody::new(sock, plan);
            body.with_link(link);
            body.on_kept_connection(watched);
            body.logged_as(addr);
            return self.start_watched(c, r, stream, body, redirects, decoder);
        }
        let body = match ProxyBody::connect(plan) {
            Ok(body) => body,
            Err(lines) => {
                for (level, line) in lines {
                    self.logger.log(level, format_args!("{line}"));
                }
                return Err(Plan::told_error(Status::BAD_GATEWAY, &mut r.scratch));
            }
        };
        self.start_watched(c, r, stream, body, redirects, decoder)
    }

    /// Starts handing request `r` to a FastCGI application as `plan`
    /// says, as [`Worker::start_upstream`] does; a 502 when none of its
    /// rule's servers up can be reached at once.
    pub(super) fn start_fastcgi(
        &mut self,
        c: &mut Conn,
        r: &mut Request,
        stream: Option<u32>,
        plan: Box<FastcgiPlan>,
        redirects: u8,
        decoder: &mut Option<BodyDecoder>,
    ) -> Result<(), Plan> {
        let held = matches!(plan.body, crate::handlers::fastcgi::body::BodyIn::Held(_));
        if self.waits_turn(c, r, stream, redirects, held) {
            return Ok(());
        }
        if self.refuses(c, stream, &plan.opts.label) {
            return Ok(());
        }
        // (The plan moved out of its box, which goes back to the pool with
        // the producer's: see `crate::handlers::proxy::pool::empty_box`.)
        let (plan, empty) = crate::sys::boxes::take(plan);
        let pool = crate::handlers::proxy::pool::pool_of(&plan.opts.keep);
        crate::handlers::proxy::pool::keep_box(pool.as_ref(), empty);
        let FastcgiPlan {
            mut tries,
            params,
            body,
            idempotent,
            mut opts,
        } = plan;
        // (A request that can go again on a new connection finds out by
        // sending whether a kept one was closed: it is not looked at.)
        let again = idempotent && matches!(body, BodyIn::None);
        let mut to = tries.to();
        // A kept connection to the server picked, or a new one; one that
        // cannot be made sends the request to the next server up.
        let (sock, kept, tried) = loop {
            let keep = opts.keep.as_ref();
            let tried = to.tried();
            if let Some((sock, _, watched)) = self.kept_socket(&to, keep, &Tls::default(), !again) {
                break (sock, Some(watched), tried);
            }
            let e = match dial::connect(&to, tried) {
                Ok(sock) => break (sock, None, tried),
                Err(e) => e,
            };
            let failed = dial::addr_at(&to, tried);
            let Some(next) = tries.next(self.clock.now) else {
                self.logger.log(
                    Level::Error,
                    format_args!("{}: {failed}: cannot connect: {e}; 502", opts.label),
                );
                return Err(Plan::told_error(Status::BAD_GATEWAY, &mut r.scratch));
            };
            self.logger.log(
                Level::Error,
                format_args!(
                    "{}: {failed}: cannot connect: {e}; sent to {}",
                    opts.label,
                    dial::addr(&next)
                ),
            );
            to = next;
        };
        if let Some(keep) = opts.keep.as_mut() {
            keep.to = to.clone();
        }
        // (Made in the box of an answer before, if any: see
        // `ProxyBody::on`.)
        let empty = crate::handlers::proxy::pool::empty_box(pool.as_ref());
        let mut body = FastcgiBody::new_in(empty, sock, kept.is_some(), &params, body, opts);
        body.watched(kept.flatten());
        body.with_tries(tries, &to, tried);
        match (again, kept) {
            (true, Some(_)) => body.may_go_again(params),
            _ => {
                if let Some(pool) = &pool {
                    pool.borrow_mut().give_back(params);
                }
            }
        }
        self.start_watched(c, r, stream, body, redirects, decoder)
    }

    /// A connection to `to` kept in the pool `keep` names, if there is
    /// one whose link fits `tls` (see [`Link::fits`]), with its link and
    /// the token it is still watched under, if it is (the next exchange's
    /// first); found quiet first when `check` says so (see
    /// [`crate::handlers::proxy::pool::Pool::take`]).
    fn kept_socket(
        &mut self,
        to: &Upstream,
        keep: Option<&Keep>,
        tls: &Tls,
        check: bool,
    ) -> Option<(OwnedFd, Link, Option<usize>)> {
        let fits = |link: &Link| link.fits(tls);
        let token = self.next_watch_token();
        keep?
            .pool
            .borrow_mut()
            .take(to, fits, check, self.clock.now, Some(token))
    }
}
