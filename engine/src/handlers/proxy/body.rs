//! An upstream's answer as a producer ([`Produce`] and [`Input`]): one
//! non-blocking socket (TCP or unix) per request, watched by the engine
//! for reading and writing at once ([`Want::Both`]). The request head
//! ([`super::request::write_head`]) goes first, then the request body as
//! the engine feeds it, framed again by brisk (by its length, or in a
//! chunked coding brisk writes itself); the answer's head is read as
//! strictly as a request ([`parse_response`]; interim 1xx answers are
//! skipped), given as a [`ReplyHead`] without its hop-by-hop fields, and
//! its body follows as it comes: by length, chunked (decoded), or to the
//! close. The producer knows no protocol of the client's.
//!
//! A request that asked to switch protocols ([`Options::upgrade`]: a
//! WebSocket handshake) and is answered `101 Switching Protocols` makes
//! the producer a tunnel (RFC 9110 §7.8): the 101's head is given with
//! its `Upgrade` and `Connection: upgrade`, then the upstream's bytes as
//! they come, to its close; its input takes the client's bytes as they
//! come, unframed, and the client's end of them (its FIN) is passed on
//! as one (`shutdown(SHUT_WR)`). The socket never goes back to the pool.
//! Once the 101 and the bytes that came with it went, the producer hands
//! the tunnel over to a smaller one ([`super::tunnel`]).
//! For an HTTP/2 client's extended CONNECT ([`Options::connect`], RFC
//! 8441) the 101 is given as a 200 without the fields of the HTTP/1.1
//! handshake, and any other 2xx is a 502 (the client would take it for
//! the tunnel).

use crate::ascii::IgnoreCase;
use std::io;
use std::net::IpAddr;
use std::os::fd::{OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::balance::{Lease, Shared};
use super::dial;
use super::link::{Link, Tls};
use super::pool::{give_back_to, pool_of, spare_buffer, Keep};
use super::request::{BodyOut, HOP_BY_HOP};
use super::UpstreamPlan;
use crate::config::{HeaderEdits, Level, ServerMode, Tried};
use crate::handlers::pipe::{Own, ReplyHead};
use crate::handlers::produce::{Cx, Gave, Input, InputEnd, Produce, Spliced, Want, Wrote};
use crate::handlers::relay::{Answered, Outbox, OutboxError, Socket, Unframe, Waiting};
use crate::handlers::spool::ReadAhead;
use crate::http::grammar::has_token;
use crate::http::parse::response::{parse_response, ResponseFraming, ResponseHead};
use crate::http::parse::{BodyFraming, Header, Limits};
use crate::http::request::{FEW_HEADERS, MAX_HEADERS};
use crate::http::trailers;
use crate::http::{Status, Version};
use crate::sys::net::shutdown_write;

/// What one read of the socket asks for at most.
const PIECE: usize = 64 * 1024;

/// Whether a field of an upstream's `103 Early Hints` goes on to the
/// client: those a browser reads in one (the HTML standard's early
/// hints): `Link` (what to preload or connect to) and the
/// `Content-Security-Policy` and `Referrer-Policy` the preloads are
/// fetched under. Any other (a `Set-Cookie`, an application's own) waits
/// for the final answer, which brings its own.
fn hints(name: &[u8]) -> bool {
    ["link", "content-security-policy", "referrer-policy"]
        .iter()
        .any(|n| name.eq_ignore_case(n.as_bytes()))
}

/// The `103 Early Hints` an answer passes on; more are dropped.
const MAX_HINTS: u8 = 8;

/// Interim (1xx) answers an upstream may send before its final one;
/// past them the answer is a 502 (an upstream that sends them without
/// end would hold the request, and a worker's time, forever).
const MAX_INTERIM: u8 = 32;

/// Beside the hop-by-hop fields ([`HOP_BY_HOP`]), the one of an answer
/// that brisk writes itself: the framing.
const OWN: [&str; 1] = ["content-length"];

/// How the answer is passed on (from the rule).
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// `response_headers`: fields set and removed (the rule's).
    pub edits: std::sync::Arc<HeaderEdits>,
    /// `via`: `Via: 1.1 brisk` is added.
    pub via: bool,
    /// `server`: the upstream's `Server` passes (if it sent one), or
    /// brisk's own replaces it.
    pub server: ServerMode,
    /// A `Location` that names the upstream itself is made one of
    /// brisk's (see [`relocated`]).
    pub relocate: Option<Relocate>,
}

/// How a `Location` naming the upstream is rewritten (nginx's
/// `proxy_redirect default`).
#[derive(Debug, Clone)]
pub struct Relocate {
    /// The upstream, as it would name itself: `http://HOST[:PORT]`, the
    /// name it is sent as `Host` with `host = "upstream"`.
    pub upstream: crate::config::Upstream,
    /// What stands for it: the rule's prefix with `strip_prefix` (its
    /// `/` left out: `/app`), else nothing.
    pub prefix: Box<str>,
}

/// `Location` value `v` with `r`'s upstream origin (`http://127.0.0.1:9001`,
/// any case) replaced by its prefix (`/app`), if it starts with it and a
/// path, query or nothing follows: `http://127.0.0.1:9001/login` becomes
/// `/app/login`, a path on the client's own origin. Any other value, as
/// it is.
pub fn relocated(v: &[u8], r: &Relocate) -> Option<Vec<u8>> {
    let crate::config::Upstream::Tcp { tls, .. } = &r.upstream else {
        return None;
    };
    let scheme: &[u8] = if *tls { b"https://" } else { b"http://" };
    let host = dial::own_host(&r.upstream);
    let origin_len = scheme.len() + host.len();
    let starts = v.len() >= origin_len
        && v[..scheme.len()].eq_ignore_case(scheme)
        && v[scheme.len()..origin_len].eq_ignore_case(host.as_bytes());
    let rest = &v[origin_len.min(v.len())..];
    if !starts || !matches!(rest.first(), None | Some(b'/' | b'?' | b'#')) {
        return None;
    }
    let mut out = Vec::with_capacity(r.prefix.len() + rest.len() + 3);
    out.extend_from_slice(r.prefix.as_bytes());
    if !rest.starts_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(rest);
    // A path that starts `//` (or `/\`, which browsers read so) would be
    // read as another host's (RFC 3986 §4.2, a network-path reference):
    // `http://up//evil.test/x` is a path on the upstream, not a way to
    // evil.test. `/.` before it keeps the same path on the client's own
    // origin (§5.2.4 removes the dot segment).
    if matches!(out.get(..2), Some(b"//" | b"/\\")) {
        out.splice(..0, *b"/.");
    }
    Some(out)
}

/// What a [`ProxyBody`] is started with besides its socket.
#[derive(Debug, Clone)]
pub struct Options {
    /// `buffer_answer`: the most of the answer read ahead of a slow
    /// client and held for it (0: none, it is read as the client takes
    /// it), in memory then in an unnamed file in `temp_dir`.
    pub hold: u64,
    /// The configuration whose `temp_dir` holds it (none when `hold` is
    /// 0).
    pub temp: Option<std::sync::Arc<crate::config::Config>>,
    /// Names it in log lines (`proxy http://127.0.0.1:9001`).
    pub label: std::rc::Rc<str>,
    /// How the request body goes (its head says so already).
    pub body: BodyOut,
    /// The request is a HEAD: the answer has no body.
    pub head_request: bool,
    /// `connect_timeout`: until the upstream took the first byte.
    pub connect_timeout: Duration,
    /// `read_timeout`: the longest silence of the upstream after that.
    pub read_timeout: Duration,
    /// `send_timeout`: the longest wait to write the request to it.
    pub send_timeout: Duration,
    /// The answer head's limits (those of requests).
    pub limits: Limits,
    /// The limit of a chunked answer's trailers.
    pub max_trailers: usize,
    /// The rule's `headers`: what it sets and removes in the request,
    /// which the client's trailers are held to as its head was
    /// ([`super::request::passes`]).
    pub forward: std::sync::Arc<HeaderEdits>,
    /// How the answer's head is edited.
    pub answer: Answer,
    /// Where the connection goes once the answer ended exactly and the
    /// upstream keeps it open (none: it closes).
    pub keep: Option<Keep>,
    /// The request asks to switch protocols to this `Upgrade` list (as
    /// its head says): a 101 to them makes the answer a tunnel (else a
    /// 101 is a 502).
    pub upgrade: Option<Box<[u8]>>,
    /// It does so for an HTTP/2 client's extended CONNECT (RFC 8441).
    pub connect: bool,
    /// The request's place among its rule's upstreams (none: the one
    /// socket it is given, never another).
    pub turn: Option<Turn>,
}

/// How an answer's head is passed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Switch {
    /// An answer.
    No,
    /// A 101, as it is (HTTP/1.1): its `Upgrade` kept.
    Upgrade,
    /// A 101 to an extended CONNECT, as the 200 that says the stream is
    /// the tunnel (RFC 8441 §5: without `Sec-WebSocket-Accept`).
    Connect,
}

/// Which upstream of its rule a request went to, and whether it may go
/// to another (see [`super::balance`]).
#[derive(Debug, Clone)]
pub struct Turn {
    /// The rule's upstreams in this worker.
    pub group: Shared,
    /// The one picked.
    pub index: usize,
    /// The client (for `ip_hash`).
    pub client: IpAddr,
    /// Its method is idempotent (RFC 9110 §9.2.2): it may be sent again.
    pub idempotent: bool,
    /// `host = "upstream"`: another upstream gets its own `Host`.
    pub host_upstream: bool,
}

/// An upstream's answer to one request (see the module documentation).
#[derive(Debug)]
pub struct ProxyBody {
    sock: Socket,
    /// Bytes as they are, or TLS.
    link: Link,
    /// The request head, kept to be sent again (another attempt) when
    /// its method is idempotent; else its request line alone (for the
    /// log: see `label`).
    head: Vec<u8>,
    /// The label with the request (`proxy URL ("GET /x")`), made when a
    /// line first asks for it (none is logged for most requests).
    named: std::cell::OnceCell<String>,
    /// Bytes written to this socket (the head's, then the body's).
    written: usize,
    /// The socket is a kept connection (the pool's), not a new one.
    kept: bool,
    /// A kept connection was found closed and replaced once already.
    stale_retried: bool,
    /// The upstreams tried (their index in the rule) before the one in
    /// use.
    tried: Vec<usize>,
    /// The hold on the upstream in use (`least_conn`).
    lease: Option<Lease>,
    /// What to log next (attempts that failed and were retried).
    notes: Vec<(Level, String)>,
    /// The upstream took a byte: the connection is up.
    connected: bool,
    /// The upstream a new connection is being made to, and how many of
    /// its other addresses were tried (see [`ProxyBody::next_address`]).
    dialed: Option<(super::Upstream, Tried)>,
    /// The request head, then its body (in the coding it goes in).
    outbox: Outbox,
    /// More request body may come (see [`Input::is_closed`]).
    body_open: bool,
    /// Why the upstream could not be written to before it took a byte:
    /// the answer is a 502.
    unreachable: Option<String>,
    /// The answer until its head is complete.
    head_buf: Vec<u8>,
    /// The head was given.
    started: bool,
    /// Interim answers (103) given before it.
    hints: u8,
    /// Interim answers read so far (see [`MAX_INTERIM`]).
    interim: u8,
    /// Body bytes read with the head, given next.
    rest: Vec<u8>,
    /// The answer's body read ahead of a slow client (see
    /// [`Produce::hold_ahead`]), given before anything else; then how it
    /// ended.
    ahead: ReadAhead,
    /// Takes the body out of its framing (none: to the close).
    unframe: Unframe,
    /// The body ended.
    finished: bool,
    /// The upstream keeps the connection open after this answer.
    keep_alive: bool,
    /// The upstream answered 101: bytes pass both ways as they come.
    tunnel: bool,
    /// The client's end of its bytes was passed on (`shutdown`).
    shut: bool,
    /// The client ended its side before the upstream switched (an
    /// extended CONNECT whose HEADERS end its stream): passed on once
    /// it has.
    ended_early: bool,
    /// The tunnel's bytes an HTTP/2 or HTTP/3 client sent before the
    /// upstream switched: held until it has (at most [`EARLY`]: HTTP/3's
    /// flow control holds the rest back, and over HTTP/2 more fails the
    /// tunnel), dropped if it does not (they must not reach an upstream
    /// that reads HTTP: RFC 9110 §7.8).
    early: Vec<u8>,
    /// More came than it holds: the tunnel does not open (a 502, never
    /// a tunnel that lost bytes).
    early_over: bool,
    /// The router's plan, in the box it came in (the producer is smaller
    /// for it, and nothing of it is copied; the box goes back to the
    /// worker's pool with the producer's: see `Drop`): its options, and
    /// the rule's TLS client for the connections made again; its head
    /// and held body are taken out at the start.
    plan: Planned,
    /// For the access log: the upstream (`127.0.0.1:9001`), and once
    /// its head came, its status and after how long.
    answered: Answered,
}

impl ProxyBody {
    /// The answer to the request whose `head` (from
    /// [`super::request::write_head`]) goes on `sock`, a socket
    /// connected, or connecting, to the upstream, non-blocking.
    /// (`plan` says the rest: its head, its options, its body if held.)
    pub fn new(sock: OwnedFd, plan: Box<UpstreamPlan>) -> Box<ProxyBody> {
        ProxyBody::on(Some(sock), plan)
    }

    /// As [`ProxyBody::new`], on `sock` if there is one yet. (Made in
    /// a box an answer before gave back to the worker's pool, if any:
    /// see `Produce::recycle`. No box is made a warm request.)
    fn on(sock: Option<OwnedFd>, mut plan: Box<UpstreamPlan>) -> Box<ProxyBody> {
        let head = std::mem::take(&mut plan.head);
        let held = plan.held.take();
        let opts = &plan.opts;
        // (Only a request that may go again keeps a copy of its head;
        // the outbox sends the head it is given.)
        let again = opts.turn.as_ref().is_some_and(|t| t.idempotent);
        // (In buffers an answer before gave back to the pool, if any:
        // see `Drop`.)
        let spare = || spare_buffer(&opts.keep);
        let pool = pool_of(&opts.keep);
        let mut kept_head = spare();
        match again {
            true => kept_head.extend_from_slice(&head),
            false => {
                let line = head.iter().position(|&b| b == b'\r');
                kept_head.extend_from_slice(&head[..line.unwrap_or(0)]);
            }
        }
        let head_buf = spare();
        let mut outbox = Outbox::starting_with(head);
        let body_open = opts.body != BodyOut::None;
        outbox.body_end = !body_open;
        let lease = opts.turn.as_ref().map(|t| Lease::take(&t.group, t.index));
        let ahead = ReadAhead::new(opts.hold, opts.temp.as_deref());
        let empty = super::pool::empty_box(pool.as_ref());
        let mut body = Box::write(
            empty,
            ProxyBody {
                sock: Socket::new(sock),
                link: Link::Plain,
                head: kept_head,
                named: std::cell::OnceCell::new(),
                written: 0,
                dialed: None,
                kept: false,
                stale_retried: false,
                tried: Vec::new(),
                lease,
                notes: Vec::new(),
                connected: false,
                outbox,
                body_open,
                unreachable: None,
                head_buf,
                started: false,
                hints: 0,
                interim: 0,
                rest: Vec::new(),
                ahead,
                unframe: Unframe::default(),
                finished: false,
                keep_alive: false,
                tunnel: false,
                shut: false,
                ended_early: false,
                early: Vec::new(),
                early_over: false,
                plan: Planned(Some(plan)),
                answered: Answered::new(),
            },
        );
        body.holding(held);
        body
    }

    /// Names the upstream in the access log (`upstream_addr`).
    pub fn logged_as(&mut self, addr: dial::Addr) {
        self.answered.to(addr);
    }

    /// Over `link` (TLS to an https upstream) rather than plain bytes.
    pub fn with_link(&mut self, link: Link) {
        self.link = link;
    }

    /// The socket is a kept connection, up already, still watched
    /// under the token `watched` if it is: the upstream's silence is
    /// bounded by `read_timeout` from the start.
    pub fn on_kept_connection(&mut self, watched: Option<usize>) {
        self.connected = true;
        self.kept = true;
        self.sock.watched = watched;
    }

    /// Sends `held`, the request's body held whole (`buffer_request`),
    /// after its head, if there is one: none comes from the client.
    fn holding(&mut self, held: Option<crate::handlers::spool::Spool>) {
        if let Some(held) = held {
            self.outbox.hold(held);
            self.body_open = false;
        }
    }

    /// Whether the request could go again on a new connection should
    /// its kept one turn out closed (see [`ProxyBody::try_again`]): an
    /// idempotent method without a body.
    pub fn may_go_again(opts: &Options) -> bool {
        opts.body == BodyOut::None && opts.turn.as_ref().is_some_and(|t| t.idempotent)
    }

    /// The answer to `plan`'s request, whose head goes to the upstream
    /// its `opts.turn` picked (or to its `to`, without one), on a new
    /// connection; when it cannot be made at once, to the next upstream
    /// as [`ProxyBody::try_again`] allows. Errs with the lines to log
    /// when none could be reached (502).
    pub fn connect(plan: Box<UpstreamPlan>) -> Result<Box<ProxyBody>, Vec<(Level, String)>> {
        let to = plan.to.clone();
        let tried = to.tried();
        let (made, failed) = match dial_link(&to, tried, &plan.tls) {
            Ok(made) => (Some(made), None),
            Err(e) => (None, Some(e)),
        };
        let (sock, link) = made.map_or((None, Link::Plain), |(s, l)| (Some(s), l));
        // (Made in its box and set there: the producer is most of a KiB,
        // and each builder step by value copied it whole.)
        let mut body = ProxyBody::on(sock, plan);
        body.logged_as(dial::addr_at(&to, tried));
        body.with_link(link);
        body.dialed = Some((to, tried));
        if failed.is_some() && body.next_address() {
            body.sock.unwatched();
            return Ok(body);
        }
        if let Some(e) = failed {
            let why = format!("cannot connect: {e}");
            let label = body.label().to_string();
            if !body.try_again(false, &why) {
                // (Tried again elsewhere, the notes tell this one too.)
                if body.notes.is_empty() {
                    body.notes.push((Level::Error, format!("{label}: {why}")));
                }
                return Err(std::mem::take(&mut body.notes));
            }
            // (Its sockets so far were never watched: the engine watches
            // the one it has when it starts.)
            body.sock.unwatched();
        }
        Ok(body)
    }

    /// Leaves the socket for the engine to take out of its watch and
    /// close.
    fn retire(&mut self) {
        self.sock.retire();
        self.body_open = false;
        self.outbox.clear();
    }

    /// The attempt failed before any byte of the answer (`why`): the
    /// upstream could not be reached (`stale` false: counted among its
    /// failures), or a kept connection was found closed by the upstream
    /// (`stale`). Whether the request goes again, on a new connection: to
    /// the next upstream up and not tried yet, or (`stale`) once to the
    /// same one; only when its method is idempotent and nothing of its
    /// body went (RFC 9110 §9.2.2). Every upstream is tried at most once.
    fn try_again(&mut self, stale: bool, why: &str) -> bool {
        let (Some(turn), Some(at)) = (
            self.plan.opts.turn.clone(),
            self.lease.as_ref().map(|l| l.index),
        ) else {
            return false;
        };
        let now = Instant::now();
        if !stale {
            turn.group.borrow_mut().failed(at, now);
        }
        if !turn.idempotent || self.written > self.head.len() || (stale && self.stale_retried) {
            return false;
        }
        if !self.tried.contains(&at) {
            self.tried.push(at);
        }
        let mut next = stale.then_some(at);
        self.stale_retried |= stale;
        let mut why = why.to_string();
        let mut first = true;
        loop {
            let pick = next.take().or_else(|| {
                let mut g = turn.group.borrow_mut();
                g.pick(turn.client, &self.tried, now)
            });
            let Some(i) = pick else {
                if !first {
                    // (The first failure is the caller's to tell.)
                    let note = format!("{}: {why}", self.label());
                    self.notes.push((Level::Error, note));
                }
                return false;
            };
            // (A kept connection the upstream had closed is a warning,
            // not an error, as FastCGI's: it is how keep-alive ends, the
            // client gets its answer and the upstream counts no failure.)
            let level = match stale && first {
                true => Level::Warn,
                false => Level::Error,
            };
            first = false;
            if !self.tried.contains(&i) {
                self.tried.push(i);
            }
            let to = turn.group.borrow().to[i].clone();
            self.notes.push((
                level,
                format!(
                    "{}: {why}; sent again to {}",
                    self.label(),
                    dial::label(&to)
                ),
            ));
            let tried = to.tried();
            match dial_link(&to, tried, &self.plan.tls) {
                Ok((sock, link)) => {
                    self.link = link;
                    self.restart(sock, i, &to, tried, &turn);
                    return true;
                }
                Err(e) => {
                    turn.group.borrow_mut().failed(i, now);
                    self.relabel(&to);
                    why = format!("cannot connect: {e}");
                }
            }
        }
    }

    /// Goes on with `sock`, a new connection to `to` (at its address
    /// `tried`), upstream `i` of `turn`'s rule: the request head again
    /// (with that upstream's `Host` when the rule sends its own), then
    /// the body as it comes.
    fn restart(
        &mut self,
        sock: OwnedFd,
        i: usize,
        to: &super::Upstream,
        tried: Tried,
        turn: &Turn,
    ) {
        self.sock.replace(sock);
        (self.connected, self.kept) = (false, false);
        self.dialed = Some((to.clone(), tried));
        self.unreachable = None;
        let head = match turn.host_upstream {
            true => rehost(&self.head, dial::own_host(to).as_bytes()),
            false => self.head.clone(),
        };
        // (What of the head did not go waits first in the outbox.)
        let unsent = self.head.len() - self.written.min(self.head.len());
        self.outbox.replace_front(unsent, &head);
        (self.head, self.written) = (head, 0);
        self.lease = Some(Lease::take(&turn.group, i));
        self.relabel(to);
        self.answered.to(dial::addr_at(to, tried));
        if let Some(keep) = self.plan.opts.keep.as_mut() {
            keep.to = to.clone();
        }
        // (A `Location` naming the upstream names the one that answers.)
        if let Some(r) = self.plan.opts.answer.relocate.as_mut() {
            r.upstream = to.clone();
        }
    }

    /// Names upstream `to` in its log lines from now on.
    fn relabel(&mut self, to: &super::Upstream) {
        self.plan.opts.label = dial::label(to).into();
        self.named = std::cell::OnceCell::new();
    }

    /// Why the socket's error `e` ended this attempt, for the log: a kept
    /// connection failed (the upstream was reached, earlier), or the
    /// upstream could not be reached.
    fn failed(&self, e: &io::Error) -> String {
        match self.kept {
            true => format!("a kept connection failed: {e}"),
            false => format!("cannot reach the upstream: {e}"),
        }
    }

    /// The socket failed or closed (`e` none) before the answer's head:
    /// none when the request went again ([`ProxyBody::try_again`]), else
    /// what to give.
    fn lost(&mut self, e: Option<io::Error>) -> Option<Gave> {
        if e.is_some() && self.next_address() {
            return None;
        }
        if !self.started && self.head_buf.is_empty() && (!self.connected || self.kept) {
            let why = match &e {
                Some(e) => self.failed(e),
                None if self.kept => "a kept connection was closed by the upstream".into(),
                None => "the upstream closed without answering".into(),
            };
            if self.try_again(self.kept, &why) {
                return None;
            }
        }
        Some(self.closed(e))
    }

    /// A new connection failed before it took a byte of the request: to
    /// the next address its upstream's name resolved to, if one is left
    /// (see [`super::Upstream::next_address`]). Any method may go: the
    /// upstream got nothing of it. The same upstream, so nothing counts
    /// against it, and nothing is logged unless every address fails.
    fn next_address(&mut self) -> bool {
        if self.connected || self.kept || self.written > 0 {
            return false;
        }
        let Some((to, tried)) = self.dialed.as_mut() else {
            return false;
        };
        while let Some(addr) = to.next_address(tried) {
            let Ok(sock) = dial::connect_tcp(addr) else {
                continue;
            };
            let Ok(link) = Link::new(to, &self.plan.tls) else {
                return false;
            };
            self.sock.replace(sock);
            self.link = link;
            self.unreachable = None;
            self.answered.to(dial::Addr::Tcp(addr));
            return true;
        }
        false
    }

    /// The body ended exactly: the socket goes to the pool at once
    /// (still watched), free for another request while the client takes
    /// what was read, if the upstream keeps it, the request went whole
    /// and nothing followed the answer; else it closes. The upstream is
    /// no longer counted busy (`least_conn`).
    fn finish(&mut self) {
        self.finished = true;
        self.lease = None;
        let reusable = self.keep_alive
            && self.outbox.done()
            && self.rest.is_empty()
            && !self.unframe.had_extra();
        match (&self.plan.opts.keep, reusable) {
            (Some(keep), true) => keep.keep(&mut self.sock, std::mem::take(&mut self.link)),
            _ => self.retire(),
        }
    }

    /// The answer so far in `head_buf`: its head if complete (interim
    /// answers skipped), none if more is needed, or its failure.
    fn read_head(&mut self) -> Option<Gave> {
        loop {
            // (On the stack while they are few; past FEW_HEADERS in a
            // vector, up to MAX_HEADERS: the head's limits allow no more.)
            let mut few = [Header::EMPTY; FEW_HEADERS];
            let mut more: Vec<Header<'_>> = Vec::new();
            let mut count = 0;
            let parsed = parse_response(
                &self.head_buf,
                &self.plan.opts.limits,
                self.plan.opts.head_request,
                &mut |f| {
                    if let Some(slot) = few.get_mut(count) {
                        *slot = f;
                    } else if count < MAX_HEADERS {
                        if more.is_empty() {
                            more.reserve(MAX_HEADERS);
                            more.extend_from_slice(&few);
                        }
                        more.push(f);
                    } else {
                        return;
                    }
                    count += 1;
                },
            );
            let fields = match more.is_empty() {
                true => &few[..count],
                false => &more[..],
            };
            let h = match parsed {
                Err(e) => {
                    let mut why = format!("malformed answer: {}", e.reason);
                    // (The limit, and the key that sets it.)
                    if e.reason == "upstream head too large" {
                        let limits = &self.plan.opts.limits;
                        let (line, head) = (limits.max_request_line, limits.max_head);
                        why += &format!(
                            " (over limits.max_request_line, {line} bytes, or \
                             limits.max_header_bytes, {head})"
                        );
                    }
                    return Some(Gave::Fail(Status::BAD_GATEWAY, why));
                }
                Ok(None) => return None,
                Ok(Some(h)) => h,
            };
            if h.status == 101 && self.plan.opts.upgrade.is_none() {
                let why = "101 Switching Protocols to a request that asked for none";
                return Some(Gave::Fail(Status::BAD_GATEWAY, why.into()));
            }
            if let (101, Some(offered)) = (h.status, self.plan.opts.upgrade.as_deref()) {
                if let Some(why) = switch_refused(&h, fields, offered) {
                    return Some(Gave::Fail(Status::BAD_GATEWAY, why.into()));
                }
            }
            if h.status == 101 && self.early_over {
                let why = "the client sent more than 64 KiB for the tunnel before it opened";
                return Some(Gave::Fail(Status::BAD_GATEWAY, why.into()));
            }
            if h.status == 101 {
                let switch = match self.plan.opts.connect {
                    true => Switch::Connect,
                    false => Switch::Upgrade,
                };
                let spare = spare_buffer(&self.plan.opts.keep);
                let mut head = reply_head(&h, fields, &self.plan.opts.answer, switch, spare);
                if self.plan.opts.connect {
                    (head.status, head.reason) = (200, None);
                }
                // (The access log's `upstream_*` fields, as for any head.)
                self.answered.head(h.status);
                self.open_tunnel(h.head_len);
                return Some(Gave::Head(head, None));
            }
            if self.plan.opts.connect && (200..300).contains(&h.status) {
                let why = "the upstream answered a WebSocket's extended CONNECT without a 101";
                return Some(Gave::Fail(Status::BAD_GATEWAY, why.into()));
            }
            if h.status < 200 {
                // An interim answer: the final one follows. A 103 Early
                // Hints goes on to the client (RFC 8297: a browser fetches
                // what its `Link` fields name while the answer is made),
                // up to [`MAX_HINTS`] of them; a 100 Continue is brisk's
                // own business with the client, a 102 obsolete.
                self.interim += 1;
                if self.interim > MAX_INTERIM {
                    let why = format!("more than {MAX_INTERIM} interim (1xx) answers");
                    return Some(Gave::Fail(Status::BAD_GATEWAY, why));
                }
                let len = h.head_len;
                let hints = (h.status == 103 && !self.plan.opts.connect && self.hints < MAX_HINTS)
                    .then(|| {
                        let hinted: Vec<Header<'_>> =
                            fields.iter().filter(|f| hints(f.name)).copied().collect();
                        reply_head(&h, &hinted, &self.plan.opts.answer, Switch::No, Vec::new())
                    });
                self.head_buf.drain(..len);
                if let Some(hints) = hints {
                    self.hints += 1;
                    return Some(Gave::Interim(hints));
                }
                continue;
            }
            if let Some(lease) = &self.lease {
                lease.group().borrow_mut().answered(lease.index);
            }
            let spare = spare_buffer(&self.plan.opts.keep);
            let head = reply_head(&h, fields, &self.plan.opts.answer, Switch::No, spare);
            let framing = match h.framing {
                ResponseFraming::None => BodyFraming::Length(0),
                ResponseFraming::Length(n) => BodyFraming::Length(n),
                ResponseFraming::Chunked => BodyFraming::Chunked,
                ResponseFraming::Close => BodyFraming::None,
            };
            self.unframe = Unframe::new(framing, self.plan.opts.max_trailers);
            self.started = true;
            self.answered.head(h.status);
            self.keep_alive = h.keep_alive;
            // (What followed the head is the body's: it stays where it
            // is, in the same buffer.)
            self.head_buf.drain(..h.head_len);
            self.rest = std::mem::take(&mut self.head_buf);
            if self.unframe.is_done() {
                self.finish();
            }
            return Some(Gave::Head(head, None));
        }
    }

    /// The upstream switched protocols with a head `head_len` long: what
    /// follows it is the tunnel's, both ways, to the close.
    fn open_tunnel(&mut self, head_len: usize) {
        self.tunnel = true;
        self.started = true;
        self.keep_alive = false;
        self.unframe = Unframe::new(BodyFraming::None, 0);
        self.head_buf.drain(..head_len);
        self.rest = std::mem::take(&mut self.head_buf);
        self.body_open = true;
        let early = std::mem::take(&mut self.early);
        if !early.is_empty() {
            self.outbox.push(&early, true);
        }
        self.outbox.body_end = self.ended_early;
    }

    /// Before the upstream switched, an upgrade's input takes the bytes
    /// to hold for the tunnel.
    fn holds_early(&self) -> bool {
        self.plan.opts.upgrade.is_some() && !self.tunnel && !self.body_open
    }

    /// Body bytes read into `buf`, taken out of their framing: what to
    /// give, or none when they held nothing (a chunk's framing alone).
    fn body(&mut self, buf: &mut Vec<u8>) -> Option<Gave> {
        self.unframe.take(buf);
        if self.unframe.is_done() {
            self.finish();
            return Some(Gave::Last);
        }
        (!buf.is_empty()).then_some(Gave::Bytes)
    }

    /// [`ProxyBody::body`], for bytes given now (counted: see
    /// [`ReadAhead::gave`]).
    fn give(&mut self, buf: &mut Vec<u8>) -> Option<Gave> {
        let gave = self.body(buf);
        self.ahead.gave(buf.len());
        gave
    }

    /// Reads the body on ahead of the client, up to `most` held (see
    /// [`Produce::hold_ahead`]).
    fn read_ahead(&mut self, most: u64, log: &mut crate::log::Logger) {
        let mut piece = std::mem::take(&mut self.ahead.buf);
        // (What came with the head goes before.)
        piece.clear();
        piece.extend_from_slice(&self.rest);
        self.rest.clear();
        let mut read = !piece.is_empty();
        loop {
            if read {
                let gave = self.body(&mut piece);
                if !piece.is_empty() {
                    let (temp, label) = (self.plan.opts.temp.as_deref(), &self.plan.opts.label);
                    self.ahead.push(&piece, temp, label, log);
                }
                if self.unframe.is_bad() {
                    self.retire();
                    let why = "bad chunked coding in the upstream's answer";
                    self.ahead.after = Some(Box::new(Gave::Cut(why.into())));
                } else if gave.is_some_and(|g| matches!(g, Gave::Last)) {
                    self.ahead.after = Some(Box::new(Gave::End));
                }
            }
            if self.ahead.is_off() || self.ahead.held() >= most {
                break;
            }
            let Some(fd) = self.sock.get().filter(|_| self.sock.readable) else {
                break;
            };
            piece.clear();
            piece.reserve(PIECE);
            read = false;
            match self.link.read(fd, &mut piece, PIECE) {
                Ok(0) => self.ahead.after = Some(Box::new(self.closed(None))),
                Ok(_) => read = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.sock.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => self.ahead.after = Some(Box::new(self.closed(Some(e)))),
            }
        }
        self.ahead.buf = piece;
    }

    /// The upstream closed its side (or the socket failed with `e`).
    fn closed(&mut self, e: Option<io::Error>) -> Gave {
        self.retire();
        if let Some(why) = self.unreachable.take() {
            return Gave::Fail(Status::BAD_GATEWAY, why);
        }
        if self.started {
            // (An answer that ends at the close, over TLS without
            // close_notify: not known to be whole, RFC 9112 §9.8.)
            let by_close = !self.unframe.is_framed() && !self.tunnel;
            return if let (true, Some(e)) = (self.tunnel, &e) {
                // (As the tunnel it becomes says, `super::tunnel`: a
                // reset cuts a tunnel, it does not end it.)
                Gave::Cut(format!("the upstream broke the tunnel off: {e}"))
            } else if self.unframe.is_short() {
                Gave::Cut("the upstream closed before the answer's end".into())
            } else if by_close && self.link.cut_short() {
                Gave::Cut(
                    "the upstream closed without TLS close_notify an answer that ends at its close"
                        .into(),
                )
            } else {
                self.finished = true;
                Gave::End
            };
        }
        let why = match (e, self.head_buf.is_empty()) {
            (Some(e), _) => self.failed(&e),
            (None, true) => "the upstream closed without answering".into(),
            (None, false) => "the upstream closed in its answer's head".into(),
        };
        Gave::Fail(Status::BAD_GATEWAY, why)
    }
}

/// A new connection to `to` (at its address `tried`), and its link (TLS with `tls` for an https
/// upstream); the reason when there can be none.
fn dial_link(to: &super::Upstream, tried: Tried, tls: &Tls) -> Result<(OwnedFd, Link), String> {
    let sock = dial::connect(to, tried).map_err(|e| e.to_string())?;
    Ok((sock, Link::new(to, tls)?))
}

/// `head` (from [`super::request::write_head`]) with `host` for its
/// `Host` (the first field, after the request line).
fn rehost(head: &[u8], host: &[u8]) -> Vec<u8> {
    const FIELD: &[u8] = b"\r\nHost: ";
    let Some(at) = head.windows(FIELD.len()).position(|w| w == FIELD) else {
        return head.to_vec();
    };
    let from = at + FIELD.len();
    let to = head[from..]
        .iter()
        .position(|&b| b == b'\r')
        .map_or(head.len(), |n| from + n);
    [&head[..from], host, &head[to..]].concat()
}

/// Why a 101 `h` with `fields`, to a request that offered the `Upgrade`
/// list `offered`, is no switch brisk opens a tunnel for: one in HTTP/1.0
/// (RFC 9110 §15.2.2: no 101 is sent to an HTTP/1.0 request, and brisk's
/// is HTTP/1.1 to it: HTTP/1.0 has no 101, its answer is malformed); one
/// without `Upgrade` (§15.2.2: it names the protocol now spoken); one to
/// a protocol that carries HTTP requests (`h2c`, `HTTP/x`, `TLS/x`),
/// which brisk never asks for (see [`super::request::switches_to_http`]):
/// through that tunnel the client would send requests straight to the
/// upstream, past brisk's rules; or one to any protocol the client did
/// not offer (§7.8: a server may not switch to one not asked for; its
/// `Upgrade` lines are one list).
fn switch_refused(
    h: &ResponseHead<'_>,
    fields: &[Header<'_>],
    offered: &[u8],
) -> Option<&'static str> {
    if h.version != Version::Http11 {
        return Some("101 Switching Protocols in HTTP/1.0, which has none");
    }
    let upgrades = fields
        .iter()
        .filter(|f| f.name.eq_ignore_case(b"upgrade"))
        .map(|f| f.value);
    let mut named = upgrades
        .clone()
        .flat_map(|v| v.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|p| !p.is_empty())
        .peekable();
    if named.peek().is_none() {
        return Some("101 Switching Protocols without Upgrade");
    }
    if upgrades.clone().any(super::request::switches_to_http) {
        return Some(
            "101 Switching Protocols to a protocol that carries HTTP requests, not asked for",
        );
    }
    (!named.all(|p| has_token(offered, p)))
        .then_some("101 Switching Protocols to a protocol the client did not offer")
}

/// Whether the upstream's field `name` goes on to the client, in the head
/// or in a trailer section: not a hop-by-hop one or the framing, nor its
/// `Server` with `server = "brisk"`, nor one `response_headers` sets or
/// removes.
fn answer_passes(name: &[u8], answer: &Answer) -> bool {
    let is = |known: &str| name.eq_ignore_case(known.as_bytes());
    !(HOP_BY_HOP.iter().chain(&OWN).any(|n| is(n))
        || (answer.server == ServerMode::Brisk && is("server"))
        || answer.edits.remove.iter().any(|n| is(n))
        || answer.edits.set.iter().any(|(n, _)| is(n)))
}

/// The head the client gets for the upstream's answer `h` with its
/// `fields`: the hop-by-hop ones and those `Connection` names left out,
/// then the rule's edits. A 101 passed on as it is keeps its `Upgrade`,
/// and says `Connection: upgrade` (RFC 9110 §7.8). Its `Server` is the
/// upstream's (none if it sent none) unless `server = "brisk"`, its
/// `Date` the upstream's if it sent one (else brisk's), as nginx does:
/// the sinks leave out their own.
/// The fields go in `headers` (empty: a buffer an answer before gave
/// back, or a new one).
fn reply_head(
    h: &ResponseHead<'_>,
    fields: &[Header<'_>],
    answer: &Answer,
    switch: Switch,
    mut headers: Vec<u8>,
) -> ReplyHead {
    let is = |name: &[u8], known: &str| name.eq_ignore_case(known.as_bytes());
    let named_by_connection = |name: &[u8]| {
        fields
            .iter()
            .filter(|f| is(f.name, "connection"))
            .any(|f| has_token(f.value, name))
    };
    let brisk_server = answer.server == ServerMode::Brisk;
    // (Sized once, at the first field passed, for all: no more than the
    // upstream's head and what brisk adds. None when no field passes.)
    let room = h.head_len
        + 64
        + (answer.edits.set.iter())
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum::<usize>();
    let field = |headers: &mut Vec<u8>, parts: &[&[u8]]| {
        if headers.is_empty() {
            headers.reserve(room);
        }
        for part in parts {
            headers.extend_from_slice(part);
        }
    };
    let mut own = Own {
        server: !brisk_server,
        date: false,
    };
    for f in fields {
        if switch == Switch::Connect && is(f.name, "sec-websocket-accept") {
            continue;
        }
        if switch == Switch::Upgrade && is(f.name, "upgrade") {
            field(&mut headers, &[f.name, b": ", f.value, b"\r\n"]);
            continue;
        }
        if !answer_passes(f.name, answer) || named_by_connection(f.name) {
            continue;
        }
        own.date |= is(f.name, "date");
        let moved = (answer.relocate.as_ref())
            .filter(|_| is(f.name, "location"))
            .and_then(|r| relocated(f.value, r));
        let value = moved.as_deref().unwrap_or(f.value);
        field(&mut headers, &[f.name, b": ", value, b"\r\n"]);
    }
    if switch == Switch::Upgrade {
        field(&mut headers, &[b"Connection: upgrade\r\n"]);
    }
    // (Not beside a `Via` the rule sets, nor when it removes `Via`: one
    // field, the rule's, as for the request.)
    let ruled = |name: &str| {
        answer.edits.set.iter().any(|(n, _)| is(n.as_bytes(), name))
            || answer.edits.remove.iter().any(|n| is(n.as_bytes(), name))
    };
    if answer.via && !ruled("via") {
        field(&mut headers, &[b"Via: 1.1 brisk\r\n"]);
    }
    for (name, value) in &answer.edits.set {
        own.server |= is(name.as_bytes(), "server");
        own.date |= is(name.as_bytes(), "date");
        field(
            &mut headers,
            &[name.as_bytes(), b": ", value.as_bytes(), b"\r\n"],
        );
    }
    ReplyHead {
        len: h.head_len,
        status: h.status,
        // (Kept only for a status brisk has no phrase for: the others go
        // with brisk's own, and need no copy.)
        reason: (!h.reason.is_empty() && !Status(h.status).has_reason()).then(|| h.reason.to_vec()),
        headers,
        content_length: match h.framing {
            ResponseFraming::Length(n) => Some(n),
            _ => h.head_length,
        },
        chunked: false,
        own,
    }
}

impl Produce for ProxyBody {
    fn label(&self) -> &str {
        self.named.get_or_init(|| {
            let mut line = self
                .head
                .split(|&b| b == b'\r')
                .next()
                .unwrap_or_default()
                .split(|&b| b == b' ');
            let (method, target) = (
                line.next().unwrap_or_default(),
                line.next().unwrap_or_default(),
            );
            let label = self.plan.opts.label.as_bytes().to_vec();
            crate::handlers::relay::with_request(label, method, target)
        })
    }

    fn head_written(&mut self, headers: Vec<u8>) {
        give_back_to(&self.plan.opts.keep, headers);
    }

    fn recycle(self: Box<Self>) {
        let pool = pool_of(&self.plan.opts.keep);
        super::pool::recycle(self, pool.as_ref());
    }

    fn upstream(&self) -> Option<crate::log::Upstream<'_>> {
        // (Asked at the answer's end, or once it was given up.)
        self.answered
            .upstream(self.finished || self.sock.get().is_none())
    }

    fn idle_timeout(&self, _handler: Duration) -> Duration {
        let o = &self.plan.opts;
        Waiting::now(self.connected, &self.outbox).pick([
            o.connect_timeout,
            o.send_timeout,
            o.read_timeout,
        ])
    }

    fn timeout_why(&self) -> &'static str {
        Waiting::now(self.connected, &self.outbox).pick([
            "no connection to the upstream within connect_timeout; given up",
            "the upstream took nothing of the request for send_timeout; given up",
            "the upstream was silent for read_timeout; given up",
        ])
    }

    fn timed_out(&mut self) -> Option<Status> {
        if self.started {
            return Some(Status::GATEWAY_TIMEOUT);
        }
        if !self.connected {
            // Not reached: the name's next address, else the next
            // upstream, if the request may go to it.
            if self.next_address() {
                return None;
            }
            let why = "no connection within connect_timeout";
            return match self.try_again(false, why) {
                true => None,
                false => Some(Status::BAD_GATEWAY),
            };
        }
        if self.outbox.is_empty() {
            // Silent for read_timeout before its answer: a failure.
            if let Some(lease) = &self.lease {
                let now = Instant::now();
                lease.group().borrow_mut().failed(lease.index, now);
            }
        }
        Some(Status::GATEWAY_TIMEOUT)
    }

    fn next(&mut self, room: usize, buf: &mut Vec<u8>, _cx: &mut Cx<'_>) -> Gave {
        // What was read ahead of the client goes first, then its end.
        if self.ahead.held() > 0 {
            return match self.ahead.take(buf, PIECE) {
                Ok(_) => Gave::Bytes,
                Err(e) => {
                    self.ahead.after = None;
                    self.retire();
                    Gave::Cut(format!(
                        "the answer held in temp_dir cannot be read back: {e}"
                    ))
                }
            };
        }
        if let Some(after) = self.ahead.after.take() {
            return *after;
        }
        if self.unframe.is_bad() {
            self.retire();
            return Gave::Cut("bad chunked coding in the upstream's answer".into());
        }
        if self.finished {
            return Gave::End;
        }
        if !self.rest.is_empty() {
            // (Copied into the buffer lent, which stays the worker's: a
            // swap would leave it this small one to grow again.)
            buf.clear();
            buf.extend_from_slice(&self.rest);
            // (Its room stays, for the pool: see `Drop`.)
            self.rest.clear();
            if let Some(gave) = self.give(buf) {
                return gave;
            }
        }
        if let (false, Some(why)) = (self.started, self.unreachable.take()) {
            self.retire();
            return Gave::Fail(Status::BAD_GATEWAY, why);
        }
        if !self.started && !self.head_buf.is_empty() {
            // (What followed an interim answer given last time.)
            if let Some(gave) = self.read_head() {
                return gave;
            }
        }
        loop {
            if !self.sock.readable {
                return Gave::Pending;
            }
            let Some(fd) = self.sock.get() else {
                return Gave::Pending;
            };
            // No more than the sink has room for: a client slower than
            // the upstream holds at most the sink's queue, not a piece
            // more (which would double the queue's allocation).
            let want = room.clamp(1, PIECE);
            buf.clear();
            buf.reserve(want);
            match self.link.read(fd, buf, want) {
                Ok(0) => match self.lost(None) {
                    Some(gave) => return gave,
                    None => continue,
                },
                Ok(_) if self.started => {
                    if let Some(gave) = self.give(buf) {
                        return gave;
                    }
                }
                Ok(_) => {
                    self.connected = true;
                    self.head_buf.extend_from_slice(buf);
                    buf.clear();
                    if let Some(gave) = self.read_head() {
                        return gave;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.sock.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => match self.lost(Some(e)) {
                    Some(gave) => return gave,
                    None => continue,
                },
            }
        }
    }

    fn splice(&mut self, room: usize) -> Option<Spliced> {
        self.splice_body(room)
    }

    fn trailers(&mut self) -> Option<Vec<u8>> {
        // The upstream's trailers, held to what its head was.
        let lines = self.unframe.trailers()?;
        let mut kept = Vec::new();
        trailers::keep(&lines, &mut kept, |n| {
            answer_passes(n, &self.plan.opts.answer)
        });
        (!kept.is_empty()).then_some(kept)
    }

    fn hold_ahead(&mut self, cx: &mut Cx<'_>, tick: bool) {
        if !self.started || self.finished || self.tunnel {
            return;
        }
        if !self.sock.readable {
            // (Nothing to read ahead: what came with the head, if any,
            // goes to the client as it takes it.)
            return;
        }
        match self.ahead.most(tick) {
            0 => {}
            most => self.read_ahead(most, cx.log),
        }
    }

    fn tend(&mut self, cx: &mut Cx<'_>) {
        for (level, note) in self.notes.drain(..) {
            cx.log.log(level, format_args!("{note}"));
        }
    }

    fn renewed(&mut self) -> Option<(RawFd, Want)> {
        self.sock.renewed()
    }

    fn stop(&mut self) {
        self.retire();
    }

    fn sources(&self) -> [Option<(RawFd, Want)>; 3] {
        self.sock.sources()
    }

    fn ready(&mut self, i: usize) {
        self.sock.ready_for(i, true, true);
    }

    fn ready_for(&mut self, i: usize, read: bool, write: bool) {
        self.sock.ready_for(i, read, write);
    }

    fn retired(&mut self) -> Option<OwnedFd> {
        self.sock.retired()
    }

    fn watch_slot(&mut self) -> Option<&mut Option<usize>> {
        Some(&mut self.sock.watched)
    }

    fn input(&mut self) -> Option<&mut dyn Input> {
        Some(self)
    }

    fn awaits_input(&self) -> bool {
        // (A tunnel's silence is either side's: `read_timeout`.)
        self.body_open && self.outbox.awaits_more() && !self.tunnel
    }

    fn successor(&mut self) -> Option<Box<dyn Produce>> {
        // Once the 101 went and what came with it, a tunnel (whose
        // socket is watched as it is: nothing retired or new; the
        // retries' notes logged).
        let told = self.notes.is_empty();
        if !self.tunnel || !self.rest.is_empty() || !self.sock.is_settled() || !told {
            return None;
        }
        let (readable, writable) = (self.sock.readable, self.sock.writable);
        let sock = self.sock.take()?;
        let (addr, began, answered) = std::mem::take(&mut self.answered).parts();
        Some(Box::new(super::tunnel::Tunnel::new(super::tunnel::Parts {
            sock,
            link: std::mem::take(&mut self.link),
            outbox: std::mem::take(&mut self.outbox),
            readable,
            writable,
            open: self.body_open,
            shut: self.shut,
            timeouts: (self.plan.opts.read_timeout, self.plan.opts.send_timeout),
            label: std::rc::Rc::clone(&self.plan.opts.label),
            began,
            addr,
            answered,
            lease: self.lease.take(),
        })))
    }
}

impl Drop for ProxyBody {
    fn drop(&mut self) {
        // (A kept connection went to the pool when its answer ended.)
        // The buffers go back to the pool, for the next answers (the
        // request's head, sent from the outbox's, the copy kept to send
        // it again, the answer's head), and so does the plan's box.
        let pool = pool_of(&self.plan.opts.keep);
        if let Some(pool) = &pool {
            let mut pool = pool.borrow_mut();
            pool.give_back(self.outbox.take_buf());
            pool.give_back(std::mem::take(&mut self.head));
            pool.give_back(std::mem::take(&mut self.head_buf));
            pool.give_back(std::mem::take(&mut self.rest));
        }
        if let Some(plan) = self.plan.0.take() {
            super::pool::recycle(plan, pool.as_ref());
        }
    }
}

/// The router's plan, in its box, until the producer is dropped
/// (which gives the box back: `Drop for ProxyBody`).
#[derive(Debug)]
struct Planned(Option<Box<UpstreamPlan>>);

impl std::ops::Deref for Planned {
    type Target = UpstreamPlan;

    fn deref(&self) -> &UpstreamPlan {
        self.0.as_deref().expect("the plan is there until the drop")
    }
}

impl std::ops::DerefMut for Planned {
    fn deref_mut(&mut self) -> &mut UpstreamPlan {
        self.0
            .as_deref_mut()
            .expect("the plan is there until the drop")
    }
}

/// Most of a tunnel's bytes held before the upstream switched.
const EARLY: usize = 64 * 1024;

impl Input for ProxyBody {
    fn room(&self) -> usize {
        match self.body_open {
            true => self.outbox.room(),
            false if self.holds_early() => EARLY - self.early.len(),
            false => usize::MAX,
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if self.holds_early() {
            match self.early.len() + data.len() <= EARLY {
                true => self.early.extend_from_slice(data),
                false => self.early_over = true,
            }
            return;
        }
        if !self.body_open || data.is_empty() {
            return;
        }
        if self.plan.opts.body == BodyOut::Chunked {
            self.outbox.push_chunk(data);
        } else {
            self.outbox.push(data, true);
        }
    }

    fn write(&mut self) -> Result<Wrote, InputEnd> {
        let Some((fd, writable)) = self.sock.for_writing() else {
            return Ok(Wrote::default());
        };
        let wrote = self
            .link
            .write_outbox(fd, &mut self.outbox, writable, &mut self.written);
        match wrote {
            Ok(wrote) => {
                self.connected |= self.link.is_up(wrote.moved);
                if self.outbox.done() {
                    self.body_open = false;
                }
                if self.tunnel && self.outbox.done() && !self.shut {
                    // The client sent its last byte: so does brisk, to
                    // the upstream, which may still answer (a half-close).
                    self.shut = true;
                    let _ = shutdown_write(fd);
                }
                Ok(wrote)
            }
            Err(OutboxError::Held(e)) => Err(InputEnd::Unreadable(e.to_string())),
            Err(OutboxError::Write(e)) => {
                if self.next_address() {
                    return Ok(Wrote {
                        moved: true,
                        client: 0,
                    });
                }
                let unanswered = !self.started && self.head_buf.is_empty();
                if unanswered && (!self.connected || self.kept) {
                    let why = self.failed(&e);
                    if self.try_again(self.kept, &why) {
                        return Ok(Wrote {
                            moved: true,
                            client: 0,
                        });
                    }
                }
                if !self.connected {
                    self.unreachable = Some(self.failed(&e));
                }
                // (It may have answered already: its answer is read on.)
                self.body_open = false;
                self.outbox.clear();
                Err(InputEnd::Refused)
            }
        }
    }

    fn end(&mut self) {
        self.end_with(b"");
    }

    fn end_with(&mut self, trailers: &[u8]) {
        if self.plan.opts.upgrade.is_some() && !self.tunnel {
            self.ended_early = true;
        }
        if !self.body_open || self.outbox.body_end {
            return;
        }
        if self.plan.opts.body == BodyOut::Chunked {
            // The last chunk, with the client's trailers (RFC 9112
            // §7.1.2) that may go on; a body sent by its length has no
            // place for them.
            let (f, via) = (&self.plan.opts.forward, self.plan.opts.answer.via);
            let mut kept = Vec::new();
            trailers::keep(trailers, &mut kept, |n| {
                super::request::passes(n, &f.set, &f.remove, via)
            });
            for part in [&b"0\r\n"[..], &kept, b"\r\n"] {
                self.outbox.push(part, false);
            }
        }
        self.outbox.body_end = true;
    }

    fn close(&mut self) {
        // (A request cut short: the upstream cannot be given the rest.)
        self.body_open = false;
        self.outbox.clear();
    }

    fn is_closed(&self) -> bool {
        !self.body_open
    }

    fn held(&self) -> bool {
        self.outbox.held()
    }
}

mod splice;
#[cfg(test)]
pub(crate) mod tests;
