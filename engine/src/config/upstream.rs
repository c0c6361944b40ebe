//! `[[reverse_proxy]]` and `[[fastcgi]]`: which requests go to an
//! application behind brisk, and how (issue #27). Per site, like
//! `[[cgi]]`; the cargo feature `upstreams` serves them.
//!
//! Upstream addresses are checked and host names resolved when the file
//! loads (and again at each reload, not per request), so that a typo or a
//! name that does not resolve is reported with its file, line and key
//! rather than as a 502 later.
//!
//! Without the feature the keys are refused before they are read
//! (`require!`): the reading half is dead code then, and left out.
#![cfg_attr(not(feature = "upstreams"), allow(dead_code))]

use crate::ascii::IgnoreCase;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

use super::load::{sorted, Loader};
use super::{ConfigError, PathMatch};
use crate::http::grammar;

pub(super) const REVERSE_PROXY_KEYS: &[&str] = &[
    "path",
    "pattern",
    "to",
    "balance",
    "strip_prefix",
    "connect_timeout",
    "read_timeout",
    "send_timeout",
    "fail_timeout",
    "max_fails",
    "health",
    "headers",
    "response_headers",
    "host",
    "via",
    "server",
    "keepalive",
    "keepalive_timeout",
    "tls_verify",
    "ca",
    "websocket",
    "buffer_request",
    "buffer_answer",
    "max_body",
];

pub(super) const FASTCGI_KEYS: &[&str] = &[
    "path",
    "pattern",
    "to",
    "index",
    "split_path",
    "fallback",
    "root",
    "env",
    "balance",
    "connect_timeout",
    "read_timeout",
    "send_timeout",
    "fail_timeout",
    "max_fails",
    "keepalive",
    "keepalive_timeout",
    "max_body",
    "buffer_request",
    "buffer_answer",
];

const HEALTH_KEYS: &[&str] = &["path", "interval"];
const EDIT_KEYS: &[&str] = &["set", "remove"];

/// Fields brisk writes itself on a forwarded message (hop-by-hop ones,
/// RFC 9110 §7.6.1, the framing, and `Host`), lower case: `headers` and
/// `response_headers` may neither set nor remove them.
const OWN_FIELDS: &[&str] = &[
    "connection",
    "transfer-encoding",
    "content-length",
    "host",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
];
const OWN_FIELDS_WHY: &str = "Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, \
     Content-Length and Host are brisk's to write on a forwarded message (hop-by-hop and framing \
     fields, RFC 9110 §7.6.1); for the upstream's own Host, set host = \"upstream\"";

const PROXY_TO_HELP: &str = "an upstream like \"http://127.0.0.1:9001\", \
     \"https://app.example\" or \"unix:/run/app.sock\"";
const FASTCGI_TO_HELP: &str =
    "a FastCGI server like \"127.0.0.1:9000\" or \"unix:/run/php/php-fpm.sock\"";

/// The longest path a unix socket address holds (`sun_path`, 108 bytes
/// with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where a request is forwarded to: one entry of a rule's `to`.
#[derive(Debug, Clone, Eq)]
pub enum Upstream {
    /// A TCP address (`http://host:port`, `https://host[:port]`, or for
    /// FastCGI `host:port`), its name resolved when the file loaded.
    Tcp {
        /// The first address the name resolved to (an IP literal as is).
        addr: SocketAddr,
        /// The other addresses it resolved to, in the resolver's order
        /// (`localhost` is often `::1`, then `127.0.0.1`): each is tried
        /// in turn when a connection to the one before fails before a
        /// byte of the request went, as nginx tries each address of a
        /// name. Empty for an IP literal.
        also: std::sync::Arc<[SocketAddr]>,
        /// Which of them a new connection tries first: the first, until
        /// one fails (see [`Upstream::next_address`]).
        reached: Reached,
        /// The host as written, lower case, IPv6 literals in brackets:
        /// the upstream's `Host` (with `:port` unless the scheme's
        /// default) and, for https, the name sent (SNI) and verified.
        host: std::sync::Arc<str>,
        /// `https://`: TLS to the upstream.
        tls: bool,
    },
    /// A unix socket (`unix:/path`), absolute; it need not exist yet.
    /// (Shared: a request's answer, the pool and the log take copies.)
    Unix(std::sync::Arc<Path>),
}

impl PartialEq for Upstream {
    /// The same address, scheme and host as written (which of a name's
    /// addresses was reached last is no part of it). The worker's pool
    /// compares a kept connection's upstream with a request's as it takes
    /// and keeps connections: those of one configuration share their
    /// host and addresses (`Arc`s), told apart with no walk through them.
    fn eq(&self, other: &Upstream) -> bool {
        use std::sync::Arc;
        match (self, other) {
            (
                Upstream::Tcp {
                    addr,
                    also,
                    host,
                    tls,
                    reached: _,
                },
                Upstream::Tcp {
                    addr: addr2,
                    also: also2,
                    host: host2,
                    tls: tls2,
                    reached: _,
                },
            ) => {
                addr == addr2
                    && tls == tls2
                    && (Arc::ptr_eq(host, host2) || host == host2)
                    && (Arc::ptr_eq(also, also2) || also == also2)
            }
            (Upstream::Unix(a), Upstream::Unix(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        }
    }
}

/// Which of a name's addresses new connections try first (an index into
/// `addr` then `also`), shared by the workers; learnt as brisk runs, so
/// no part of what the configuration compares.
#[derive(Debug, Clone, Default)]
pub struct Reached(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl PartialEq for Reached {
    fn eq(&self, _: &Reached) -> bool {
        true
    }
}

impl Eq for Reached {}

/// Where a new connection to an upstream is in its name's addresses:
/// from the one it tried first (`start`), the `k`-th after it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tried {
    start: usize,
    k: usize,
}

impl Upstream {
    /// Where a new connection starts: the address no connection failed
    /// on since it was first tried (the first, at the start).
    pub fn tried(&self) -> Tried {
        let start = match self {
            Upstream::Tcp { reached, .. } => reached.0.load(Ordering::Relaxed),
            Upstream::Unix(_) => 0,
        };
        Tried { start, k: 0 }
    }

    /// The address a new connection at `tried` dials.
    pub fn address(&self, tried: Tried) -> Option<SocketAddr> {
        let Upstream::Tcp { addr, also, .. } = self else {
            return None;
        };
        let n = also.len() + 1;
        match (tried.start + tried.k) % n {
            0 => Some(*addr),
            i => also.get(i - 1).copied(),
        }
    }

    /// The connection at `tried` failed before it took a byte: the
    /// address to try next, each once, as nginx tries each address of a
    /// name (`localhost` is often `::1`, then `127.0.0.1`, and an
    /// application may listen on one of them only). New connections
    /// start past the one that failed from now on, so that each does
    /// not wait on a dead address first.
    pub fn next_address(&self, tried: &mut Tried) -> Option<SocketAddr> {
        let Upstream::Tcp { also, reached, .. } = self else {
            return None;
        };
        let n = also.len() + 1;
        if tried.k + 1 >= n {
            return None;
        }
        let failed = (tried.start + tried.k) % n;
        // (Unless another connection moved it first.)
        let _ = reached.0.compare_exchange(
            failed,
            (failed + 1) % n,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        tried.k += 1;
        self.address(*tried)
    }
}

/// `balance`: how a rule with several upstreams picks one per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    /// Each in turn (`"round_robin"`).
    #[default]
    RoundRobin,
    /// The one with the fewest requests in progress (`"least_conn"`).
    LeastConn,
    /// The same client address to the same upstream (`"ip_hash"`).
    IpHash,
    /// The first that is up, the others as spares (`"first"`).
    First,
}

/// `health = { path, interval }`: active checks of every upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// The path asked for with GET; a 2xx or 3xx answer is up.
    pub path: String,
    /// How often (default 5 s).
    pub interval: Duration,
}

/// `headers` / `response_headers`: fields set (replacing any of the same
/// name) and removed on the forwarded request or its answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderEdits {
    /// Name (a token, as written) and value (a valid field value), in
    /// file order, no name twice.
    pub set: Vec<(Box<str>, Box<str>)>,
    /// Names (tokens, as written; compared without case), no name twice.
    pub remove: Vec<Box<str>>,
}

impl HeaderEdits {
    /// Nothing set and nothing removed.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.remove.is_empty()
    }
}

/// `host`: the `Host` the upstream is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostMode {
    /// The client's own (`"client"`).
    #[default]
    Client,
    /// The upstream's, from `to` (`"upstream"`).
    Upstream,
}

/// `server`: the `Server` field of a proxied answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerMode {
    /// The upstream's, as it sent it (`"upstream"`).
    #[default]
    Upstream,
    /// brisk's own (`server_header`) in its place (`"brisk"`).
    Brisk,
}

/// One `[[reverse_proxy]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRule {
    /// Which requests it forwards (`path` or `pattern`).
    pub matches: PathMatch,
    /// Where (at least one).
    pub to: Vec<Upstream>,
    /// How one of several is picked.
    pub balance: Balance,
    /// Forward the path without the rule's `path` prefix (`/api/x` with
    /// `path = "/api/"` as `/x`); only with `path`.
    pub strip_prefix: bool,
    /// How long a connection to an upstream may take.
    pub connect_timeout: Duration,
    /// The longest wait between two reads from the upstream (then 504
    /// before the answer's head).
    pub read_timeout: Duration,
    /// The longest wait between two writes to the upstream.
    pub send_timeout: Duration,
    /// How long an upstream that failed `max_fails` times is skipped.
    pub fail_timeout: Duration,
    /// Failures (refused or timed out) within `fail_timeout` that mark an
    /// upstream down; 0 never marks it.
    pub max_fails: u32,
    /// Active health checks, if any.
    pub health: Option<Health>,
    /// Edits of the request sent upstream. (Shared: each request's
    /// plan takes a reference, not a copy of every name and value.)
    pub headers: Arc<HeaderEdits>,
    /// Edits of the answer sent to the client (shared likewise).
    pub response_headers: Arc<HeaderEdits>,
    /// Which `Host` the upstream is sent.
    pub host: HostMode,
    /// Add `Via: 1.1 brisk` both ways.
    pub via: bool,
    /// Whose `Server` the client sees.
    pub server: ServerMode,
    /// Idle connections kept per worker and upstream (0 keeps none).
    pub keepalive: usize,
    /// How long an idle kept connection is kept.
    pub keepalive_timeout: Duration,
    /// The largest request body it forwards (`max_body`), when not
    /// `limits.max_body`.
    pub max_body: Option<u64>,
    /// Verify https upstreams' certificates (and names).
    pub tls_verify: bool,
    /// Extra trusted roots for https upstreams (a PEM file, read and
    /// checked when the file loaded), beside the system's.
    pub ca: Option<PathBuf>,
    /// The TLS client for its https upstreams, made when the file loaded
    /// (with `tls_verify` and `ca`, the system's roots read then); none
    /// without https upstreams.
    #[cfg(feature = "tls")]
    pub tls_client: Option<crate::tls::client::UpstreamTls>,
    /// Let `Upgrade` requests (WebSocket) through to the upstream.
    pub websocket: bool,
    /// `buffer_request`: a request's body is held whole (in memory, then
    /// a temporary file) before the upstream is contacted, and sent with
    /// its length; else it streams as it arrives.
    pub buffer_request: bool,
    /// `buffer_answer`, as a FastCGI rule's: the most of an answer read
    /// ahead of a client slower than the upstream and held for it.
    pub buffer_answer: u64,
}

/// One `[[fastcgi]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastcgiRule {
    /// Which requests run a script (`path` or `pattern`).
    pub matches: PathMatch,
    /// The FastCGI servers (at least one; several are balanced).
    pub to: Vec<Upstream>,
    /// As [`ProxyRule::balance`].
    pub balance: Balance,
    /// The directory index tried after `[static] index` (`index.php`).
    pub index: Option<String>,
    /// What ends the script's name in a path (`.php`): what follows it is
    /// `PATH_INFO`.
    pub split_path: Option<String>,
    /// The script a path that is no file is given to (a front
    /// controller, `/index.php`), with the request's own `REQUEST_URI`.
    pub fallback: Option<String>,
    /// Where the scripts are (absolute, canonical); `None`: the site's root.
    pub root: Option<PathBuf>,
    /// Extra parameters, in file order; they replace the CGI ones of the
    /// same name.
    pub env: Vec<(String, String)>,
    /// As [`ProxyRule::connect_timeout`].
    pub connect_timeout: Duration,
    /// As [`ProxyRule::read_timeout`].
    pub read_timeout: Duration,
    /// As [`ProxyRule::send_timeout`].
    pub send_timeout: Duration,
    /// As [`ProxyRule::fail_timeout`].
    pub fail_timeout: Duration,
    /// As [`ProxyRule::max_fails`].
    pub max_fails: u32,
    /// As [`ProxyRule::keepalive`].
    pub keepalive: usize,
    /// As [`ProxyRule::keepalive_timeout`].
    pub keepalive_timeout: Duration,
    /// As [`ProxyRule::max_body`].
    pub max_body: Option<u64>,
    /// `buffer_request` (true by default, unlike a proxy rule's): a
    /// request's body is held whole before the application is connected
    /// to, so that a client slow to send it holds none of its processes.
    pub buffer_request: bool,
    /// `buffer_answer` (1 GiB by default, `false`: 0): the most of an
    /// answer read ahead of a client slower than the application, and
    /// held for it (64 KiB in memory, the rest in an unnamed file in
    /// `temp_dir`), so that a slow reader holds none of its processes.
    pub buffer_answer: u64,
}

/// `buffer_answer`'s default (`true`) in `[[fastcgi]]` and
/// `[[reverse_proxy]]`: nginx's `fastcgi_max_temp_file_size` and
/// `proxy_max_temp_file_size`, 1 GiB.
pub const BUFFER_ANSWER: u64 = 1 << 30;

/// A site's `[[reverse_proxy]]` or `[[fastcgi]]` rules: a list where the
/// upstreams are built, nothing at all where they are not
/// ([`NoRules`](super::absent::NoRules)).
#[cfg(feature = "upstreams")]
pub type Rules<T> = Vec<T>;
/// A site's `[[reverse_proxy]]` or `[[fastcgi]]` rules: a list where the
/// upstreams are built, nothing at all where they are not
/// ([`NoRules`](super::absent::NoRules)).
#[cfg(not(feature = "upstreams"))]
pub type Rules<T> = super::absent::NoRules<T>;

/// The keys both kinds of rule take, with their defaults.
struct Pool {
    balance: Balance,
    connect_timeout: Duration,
    read_timeout: Duration,
    send_timeout: Duration,
    fail_timeout: Duration,
    max_fails: u32,
    keepalive: usize,
    keepalive_timeout: Duration,
    max_body: Option<u64>,
}

/// The keys both kinds of rule take, as read so far.
#[derive(Default)]
struct Common {
    matcher: Option<PathMatch>,
    to: Option<Vec<Upstream>>,
    pool: Pool,
}

/// How a rule reads one entry of its `to`.
type ReadFn = fn(&str) -> Result<Written<'_>, String>;

impl Default for Pool {
    fn default() -> Pool {
        Pool {
            balance: Balance::RoundRobin,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
            fail_timeout: Duration::from_secs(10),
            max_fails: 1,
            // (Above the requests a worker usually proxies to one upstream
            // at once: below them, every swing of the load closes idle
            // connections that the next requests open again.)
            keepalive: 64,
            keepalive_timeout: Duration::from_secs(60),
            max_body: None,
        }
    }
}

impl Default for ProxyRule {
    /// The defaults of every key but `path`/`pattern` (`/`) and `to`
    /// (none).
    fn default() -> ProxyRule {
        let p = Pool::default();
        ProxyRule {
            matches: PathMatch::Prefix("/".to_string()),
            to: Vec::new(),
            balance: p.balance,
            strip_prefix: false,
            connect_timeout: p.connect_timeout,
            read_timeout: p.read_timeout,
            send_timeout: p.send_timeout,
            fail_timeout: p.fail_timeout,
            max_fails: p.max_fails,
            health: None,
            headers: Arc::default(),
            response_headers: Arc::default(),
            host: HostMode::Client,
            via: false,
            server: ServerMode::Upstream,
            keepalive: p.keepalive,
            keepalive_timeout: p.keepalive_timeout,
            max_body: p.max_body,
            tls_verify: true,
            ca: None,
            #[cfg(feature = "tls")]
            tls_client: None,
            websocket: true,
            buffer_request: false,
            buffer_answer: BUFFER_ANSWER,
        }
    }
}

/// An upstream as written, before its name is resolved.
#[derive(Debug, PartialEq, Eq)]
enum Written<'a> {
    /// Host (IPv6 in brackets) and port.
    Tcp {
        host: &'a str,
        port: u16,
        tls: bool,
    },
    Unix(&'a str),
}

/// `unix:/path`: the path, or why not.
fn unix_path(s: &str) -> Option<Result<Written<'_>, String>> {
    let path = s.strip_prefix("unix:")?;
    Some(if !path.starts_with('/') {
        Err(format!(
            "{s:?}: the socket's path must be absolute, as in \"unix:/run/app.sock\""
        ))
    } else if path.len() > MAX_SOCKET_PATH || path.contains('\0') {
        Err(format!(
            "{s:?}: a unix socket's path has at most {MAX_SOCKET_PATH} bytes and no NUL"
        ))
    } else {
        Ok(Written::Unix(path))
    })
}

/// `host[:port]` (IPv6 in brackets): the host and the port if given, or
/// why not. `written` is the whole entry, for messages.
fn authority<'a>(a: &'a str, written: &str) -> Result<(&'a str, Option<u16>), String> {
    if a.contains(['/', '?', '#']) {
        return Err(format!(
            "{written:?}: an upstream is an address only, with nothing after host:port \
             (the request's own path is sent; see strip_prefix)"
        ));
    }
    if a.contains('@') {
        return Err(format!(
            "{written:?}: no user name or password in an upstream"
        ));
    }
    let (host, port) = match a.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, "")) => (&a[..v6.len() + 2], None),
            Some((v6, p)) if p.starts_with(':') => (&a[..v6.len() + 2], Some(&p[1..])),
            _ => return Err(format!("{written:?}: not a host and port")),
        },
        None => match a.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        },
    };
    let name_ok = match host.strip_prefix('[') {
        Some(v6) => v6
            .strip_suffix(']')
            .is_some_and(|v6| v6.parse::<std::net::Ipv6Addr>().is_ok()),
        None => !host.contains('*') && super::site::host_name(host).is_ok(),
    };
    if !name_ok {
        return Err(format!(
            "{written:?}: {host:?} is no host name or IP address (IPv6 in brackets)"
        ));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err(format!("{written:?}: {p:?} is no port (1 to 65535)")),
        },
    };
    Ok((host, port))
}

/// A `[[reverse_proxy]]` `to` entry: `http://host:port`,
/// `https://host[:port]` or `unix:/path`.
fn proxy_upstream(s: &str) -> Result<Written<'_>, String> {
    if let Some(unix) = unix_path(s) {
        return unix;
    }
    let lower = |p: &str| s.get(..p.len()).is_some_and(|h| h.eq_ignore_case(p));
    let (rest, tls) = if lower("http://") {
        (&s[7..], false)
    } else if lower("https://") {
        (&s[8..], true)
    } else {
        return Err(format!("expected {PROXY_TO_HELP}; got {s:?}"));
    };
    let (host, port) = authority(rest, s)?;
    let port = match (port, tls) {
        (Some(p), _) => p,
        (None, true) => 443,
        (None, false) => {
            return Err(format!(
                "{s:?} names no port: write it, as in \"http://{host}:8080\""
            ))
        }
    };
    Ok(Written::Tcp { host, port, tls })
}

/// A `[[fastcgi]]` `to` entry: `host:port` or `unix:/path`.
fn fastcgi_upstream(s: &str) -> Result<Written<'_>, String> {
    if let Some(unix) = unix_path(s) {
        return unix;
    }
    if s.contains("://") {
        return Err(format!("expected {FASTCGI_TO_HELP} (no scheme); got {s:?}"));
    }
    match authority(s, s)? {
        (host, Some(port)) => Ok(Written::Tcp {
            host,
            port,
            tls: false,
        }),
        (host, None) => Err(format!(
            "{s:?} names no port: write it, as in \"{host}:9000\""
        )),
    }
}

/// The addresses each name had when the system's resolver last gave
/// them (at start, or at a reload that could ask it), by name and port.
type Addresses = Vec<SocketAddr>;
static RESOLVED: Mutex<Vec<(String, u16, Addresses)>> = Mutex::new(Vec::new());

/// Resolves what [`proxy_upstream`] or [`fastcgi_upstream`] read: an IP
/// literal as is, a name to the addresses the system's resolver gives
/// (`/etc/hosts`, DNS), in its order, each once.
fn resolve(w: Written<'_>) -> Result<Upstream, String> {
    resolve_with(w, &|name, port| {
        let mut all: Addresses = Vec::new();
        for a in (name, port).to_socket_addrs()? {
            if !all.contains(&a) {
                all.push(a);
            }
        }
        Ok(all)
    })
}

/// The address of `host` (a name or an IP literal) and `port`, resolved
/// and remembered as upstream names are (see [`resolve_with`]).
#[cfg(feature = "acme")]
pub(super) fn resolve_name(host: &str, port: u16) -> Result<SocketAddr, String> {
    match resolve(Written::Tcp {
        host,
        port,
        tls: true,
    })? {
        Upstream::Tcp { addr, .. } => Ok(addr),
        Upstream::Unix(_) => Err(format!("{host} is no host")),
    }
}

/// [`resolve`] with `lookup` for the system's resolver. A name it cannot
/// resolve keeps the address it had last: a reload inside the sandbox
/// cannot reach the resolver (its files, `/etc/hosts` among them, and
/// its sockets are out of reach), nor can one while DNS fails; a name it
/// never had is an error that says so.
fn resolve_with(
    w: Written<'_>,
    lookup: &dyn Fn(&str, u16) -> std::io::Result<Addresses>,
) -> Result<Upstream, String> {
    let (host, port, tls) = match w {
        Written::Unix(p) => return Ok(Upstream::Unix(Path::new(p).into())),
        Written::Tcp { host, port, tls } => (host, port, tls),
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let name = bare.to_ascii_lowercase();
    let mut resolved = RESOLVED.lock().unwrap_or_else(|e| e.into_inner());
    let known = resolved
        .iter()
        .position(|(n, p, _)| *n == name && *p == port);
    let all = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => match (lookup(bare, port), known) {
            (Ok(a), Some(i)) if !a.is_empty() => {
                resolved[i].2.clone_from(&a);
                a
            }
            (Ok(a), None) if !a.is_empty() => {
                resolved.push((name, port, a.clone()));
                a
            }
            (_, Some(i)) => resolved[i].2.clone(),
            (Ok(_), None) => return Err(format!("{host} has no address")),
            (Err(e), None) => {
                return Err(format!(
                    "cannot resolve {host}: {e} (inside the sandbox, a reload cannot \
                     resolve a name brisk did not resolve at start: write its address, \
                     or restart brisk)"
                ))
            }
        },
    };
    Ok(Upstream::Tcp {
        addr: all[0],
        also: all[1..].into(),
        reached: Reached::default(),
        host: host.to_ascii_lowercase().into(),
        tls,
    })
}

impl Loader<'_> {
    /// The `[[reverse_proxy]]` array.
    pub(super) fn reverse_proxies(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<ProxyRule>, ConfigError> {
        self.each_table("reverse_proxy", v, |section, item, table| {
            self.proxy_rule(section, item, table)
        })
    }

    /// The `[[fastcgi]]` array.
    pub(super) fn fastcgi(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<FastcgiRule>, ConfigError> {
        self.each_table("fastcgi", v, |section, item, table| {
            self.fastcgi_rule(section, item, table)
        })
    }

    fn proxy_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<ProxyRule, ConfigError> {
        let mut rule = ProxyRule::default();
        let mut common = Common::default();
        let mut strip = None;
        // Where the keys that need an https upstream were set.
        let mut tls_keys = Vec::new();
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            if self.common_key(key, &full, value, &mut common, proxy_upstream)? {
                continue;
            }
            match name {
                "strip_prefix" => {
                    rule.strip_prefix = self.boolean(&full, value)?;
                    strip = Some((value, full));
                }
                "health" => rule.health = Some(self.health(&full, value)?),
                "headers" => rule.headers = Arc::new(self.header_edits(&full, value)?),
                "response_headers" => {
                    rule.response_headers = Arc::new(self.header_edits(&full, value)?)
                }
                "host" => {
                    let choices = [
                        ("client", HostMode::Client),
                        ("upstream", HostMode::Upstream),
                    ];
                    rule.host = self.choice(&full, value, &choices)?;
                }
                "via" => rule.via = self.boolean(&full, value)?,
                "server" => {
                    let choices = [
                        ("upstream", ServerMode::Upstream),
                        ("brisk", ServerMode::Brisk),
                    ];
                    rule.server = self.choice(&full, value, &choices)?;
                }
                "tls_verify" => {
                    rule.tls_verify = self.boolean(&full, value)?;
                    tls_keys.push((value, full));
                }
                "ca" => {
                    rule.ca = Some(self.ca_file(&full, value)?);
                    tls_keys.push((value, full));
                }
                "websocket" => rule.websocket = self.boolean(&full, value)?,
                "buffer_request" => rule.buffer_request = self.boolean(&full, value)?,
                "buffer_answer" => rule.buffer_answer = self.buffer_answer(&full, value)?,
                _ => return Err(self.unknown(key, section, REVERSE_PROXY_KEYS)),
            }
        }
        let needs = "needs to = \"http://127.0.0.1:9001\" (or a list of upstreams)";
        let (matches, to, pool) = self.common_done(common, item, section, needs)?;
        rule.matches = matches;
        rule.to = to;
        if let (Some((value, full)), PathMatch::Glob(_)) = (strip, &rule.matches) {
            let msg = "is used with path = \"/prefix/\" only (a pattern has no prefix to strip)";
            return Err(self.fail(value, &full, msg));
        }
        let https = rule
            .to
            .iter()
            .any(|u| matches!(u, Upstream::Tcp { tls: true, .. }));
        if let Some((value, full)) = tls_keys.into_iter().find(|_| !https) {
            let msg = "is used with https:// upstreams only, and this rule has none";
            return Err(self.fail(value, &full, msg));
        }
        #[cfg(feature = "tls")]
        if https {
            let tls = crate::tls::client::UpstreamTls::new(rule.tls_verify, rule.ca.as_deref());
            rule.tls_client = Some(tls.map_err(|e| self.fail(item, section, &e))?);
        }
        let Pool {
            balance,
            connect_timeout,
            read_timeout,
            send_timeout,
            fail_timeout,
            max_fails,
            keepalive,
            keepalive_timeout,
            max_body,
        } = pool;
        Ok(ProxyRule {
            balance,
            connect_timeout,
            read_timeout,
            send_timeout,
            fail_timeout,
            max_fails,
            keepalive,
            keepalive_timeout,
            max_body,
            ..rule
        })
    }

    /// `buffer_answer`: a size, `true` ([`BUFFER_ANSWER`]) or `false` (0).
    fn buffer_answer(&self, key: &str, value: &Spanned<DeValue<'_>>) -> Result<u64, ConfigError> {
        match value.get_ref().as_bool() {
            Some(on) => Ok(BUFFER_ANSWER * u64::from(on)),
            None => self.size(key, value, 0, u64::MAX),
        }
    }

    fn fastcgi_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<FastcgiRule, ConfigError> {
        let mut common = Common::default();
        // No connection kept by default: each one kept holds one of the
        // application server's processes (php-fpm's children) idle.
        common.pool.keepalive = 0;
        let (mut index, mut split_path, mut fallback) = (None, None, None);
        let mut root = None;
        let mut env = Vec::new();
        let mut buffer_request = true;
        let mut buffer_answer = BUFFER_ANSWER;
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            if self.common_key(key, &full, value, &mut common, fastcgi_upstream)? {
                continue;
            }
            match name {
                "index" => {
                    let s = self.string(&full, value)?;
                    if s.is_empty() || s == "." || s == ".." || s.contains('/') || !printable(s) {
                        return Err(self.expected(value, &full, "a file name like \"index.php\""));
                    }
                    index = Some(s.to_string());
                }
                "split_path" => {
                    let s = self.string(&full, value)?;
                    if s.len() < 2 || !s.starts_with('.') || s.contains('/') || !printable(s) {
                        return Err(self.expected(value, &full, "an extension like \".php\""));
                    }
                    split_path = Some(s.to_string());
                }
                "fallback" => {
                    let s = self.string(&full, value)?;
                    if s.ends_with('/') || !super::cgi::is_url_prefix(s) || !printable(s) {
                        let what = "the path of a script like \"/index.php\"";
                        return Err(self.expected(value, &full, what));
                    }
                    fallback = Some(s.to_string());
                }
                "root" => {
                    let path = self.path(&full, value)?;
                    let what = "the FastCGI scripts' root";
                    root = Some(self.existing_dir(&full, value, &path, what)?);
                }
                "env" => env = self.cgi_env(&full, value)?,
                "buffer_request" => buffer_request = self.boolean(&full, value)?,
                "buffer_answer" => buffer_answer = self.buffer_answer(&full, value)?,
                _ => return Err(self.unknown(key, section, FASTCGI_KEYS)),
            }
        }
        let needs = "needs to = \"unix:/run/php/php-fpm.sock\" or \"127.0.0.1:9000\"";
        let (matches, to, pool) = self.common_done(common, item, section, needs)?;
        Ok(FastcgiRule {
            matches,
            to,
            index,
            split_path,
            fallback,
            root,
            env,
            balance: pool.balance,
            connect_timeout: pool.connect_timeout,
            read_timeout: pool.read_timeout,
            send_timeout: pool.send_timeout,
            fail_timeout: pool.fail_timeout,
            max_fails: pool.max_fails,
            keepalive: pool.keepalive,
            keepalive_timeout: pool.keepalive_timeout,
            max_body: pool.max_body,
            buffer_request,
            buffer_answer,
        })
    }

    /// One of the keys both rules take (`to` read by `read`) into
    /// `common`: whether `key` was one.
    fn common_key(
        &self,
        key: &Spanned<DeString<'_>>,
        full: &str,
        v: &Spanned<DeValue<'_>>,
        common: &mut Common,
        read: ReadFn,
    ) -> Result<bool, ConfigError> {
        let name = key.get_ref().as_ref();
        let pool = &mut common.pool;
        match name {
            "path" | "pattern" => self.set_matcher(&mut common.matcher, key, name, full, v)?,
            "to" => common.to = Some(self.upstreams(full, v, read)?),
            "balance" => {
                let choices = [
                    ("round_robin", Balance::RoundRobin),
                    ("least_conn", Balance::LeastConn),
                    ("ip_hash", Balance::IpHash),
                    ("first", Balance::First),
                ];
                pool.balance = self.choice(full, v, &choices)?;
            }
            "fail_timeout" => pool.fail_timeout = self.duration(full, v, false)?,
            "max_fails" => pool.max_fails = self.integer(full, v, 0, 1000)? as u32,
            "connect_timeout" => pool.connect_timeout = self.duration(full, v, false)?,
            "read_timeout" => pool.read_timeout = self.duration(full, v, false)?,
            "send_timeout" => pool.send_timeout = self.duration(full, v, false)?,
            "keepalive" => pool.keepalive = self.integer(full, v, 0, 10_000)? as usize,
            "keepalive_timeout" => pool.keepalive_timeout = self.duration(full, v, false)?,
            "max_body" => pool.max_body = Some(self.size(full, v, 0, u64::MAX)?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The keys both rules need, or the error naming what is missing
    /// (`needs`: how to write `to`).
    fn common_done(
        &self,
        common: Common,
        item: &Spanned<DeValue<'_>>,
        section: &str,
        needs: &str,
    ) -> Result<(PathMatch, Vec<Upstream>, Pool), ConfigError> {
        let matches = self.required_matcher(common.matcher, item, section)?;
        let to = common.to.ok_or_else(|| self.fail(item, section, needs))?;
        Ok((matches, to, common.pool))
    }

    /// `to`: one upstream or a non-empty array of them, each read by
    /// `read` and resolved.
    fn upstreams(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
        read: ReadFn,
    ) -> Result<Vec<Upstream>, ConfigError> {
        let items = self.strings(full, v)?;
        if items.is_empty() {
            return Err(self.expected(v, full, "at least one upstream"));
        }
        let mut out = Vec::with_capacity(items.len());
        for (s, item) in items {
            let written = read(s).map_err(|e| self.fail(item, full, &e))?;
            if let Written::Tcp { tls: true, .. } = written {
                let what = "https:// upstreams";
                let fix = "use http://, or build with the feature";
                require!(self, "tls", item, full, what, fix);
            }
            out.push(resolve(written).map_err(|e| self.fail(item, full, &e))?);
        }
        Ok(out)
    }

    /// `health = { path = "/healthz", interval = "5s" }`.
    fn health(&self, full: &str, v: &Spanned<DeValue<'_>>) -> Result<Health, ConfigError> {
        let mut path = None;
        let mut interval = Duration::from_secs(5);
        for (key, value) in sorted(self.table(full, v)?) {
            let name = key.get_ref().as_ref();
            let key_name = format!("{full}.{name}");
            match name {
                "path" => {
                    let s = self.string(&key_name, value)?;
                    if !s.starts_with('/') || !s.bytes().all(|b| b.is_ascii_graphic()) {
                        let what = "a path like \"/healthz\" (no spaces or control characters)";
                        return Err(self.expected(value, &key_name, what));
                    }
                    path = Some(s.to_string());
                }
                "interval" => interval = self.duration(&key_name, value, false)?,
                _ => return Err(self.unknown(key, full, HEALTH_KEYS)),
            }
        }
        let path = path.ok_or_else(|| self.fail(v, full, "needs path = \"/healthz\""))?;
        Ok(Health { path, interval })
    }

    /// `headers` / `response_headers`: `{ set = { "Name" = "value" },
    /// remove = ["Name"] }`.
    fn header_edits(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<HeaderEdits, ConfigError> {
        let mut out = HeaderEdits::default();
        for (key, value) in sorted(self.table(full, v)?) {
            let name = key.get_ref().as_ref();
            let key_name = format!("{full}.{name}");
            match name {
                "set" => {
                    let set = self.header_set(&key_name, value, OWN_FIELDS, OWN_FIELDS_WHY)?;
                    out.set = set.into_iter().map(|(n, v)| (n.into(), v.into())).collect();
                }
                "remove" => {
                    for (s, item) in self.strings(&key_name, value)? {
                        if !grammar::is_token(s.as_bytes()) {
                            let what = "a header name (letters, digits and !#$%&'*+-.^_`|~ only)";
                            return Err(self.expected(item, &key_name, what));
                        }
                        if OWN_FIELDS.iter().any(|h| h.eq_ignore_case(s)) {
                            return Err(self.fail(item, &key_name, OWN_FIELDS_WHY));
                        }
                        if !out.remove.iter().any(|r| r.eq_ignore_case(s)) {
                            out.remove.push(s.into());
                        }
                    }
                }
                _ => return Err(self.unknown(key, full, EDIT_KEYS)),
            }
        }
        Ok(out)
    }

    /// `ca`: a PEM file of at least one certificate, read now.
    fn ca_file(&self, full: &str, v: &Spanned<DeValue<'_>>) -> Result<PathBuf, ConfigError> {
        let path = self.path(full, v)?;
        if let Some(readable) = self.src.readable {
            readable(&path).map_err(|e| self.fail(v, full, &e.to_string()))?;
        }
        let pem = std::fs::read(&path)
            .map_err(|e| self.fail(v, full, &format!("cannot read {}: {e}", path.display())))?;
        pem_certificates(&pem).map_err(|e| {
            let msg = format!("{}: {e}", path.display());
            self.fail(v, full, &msg)
        })?;
        Ok(path)
    }
}

/// Whether `s` has no control characters (nor DEL).
fn printable(s: &str) -> bool {
    !s.chars().any(char::is_control)
}

/// How many certificates a PEM file holds; none is an error.
#[cfg(feature = "tls")]
fn pem_certificates(pem: &[u8]) -> Result<usize, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a valid PEM file ({e:?})"))?;
    match certs.len() {
        0 => {
            Err("no certificate in it (expected PEM \"-----BEGIN CERTIFICATE-----\" blocks)".into())
        }
        n => Ok(n),
    }
}

/// (Without the feature `tls`, https upstreams are refused before.)
#[cfg(not(feature = "tls"))]
fn pem_certificates(_: &[u8]) -> Result<usize, String> {
    Err("this brisk was built without TLS (the cargo feature `tls`)".into())
}

/// What may be a mistake in the `[[fastcgi]]` rules though they are
/// valid (see [`super::Config::warnings`]).
pub(super) fn fastcgi_warnings(config: &super::Config) -> Vec<String> {
    let mut out = Vec::new();
    for (prefix, site) in super::SiteConfig::all_keyed(config) {
        for (i, rule) in site.fastcgi.iter().enumerate() {
            let php = |name: &Option<String>| name.as_deref().is_some_and(|n| n.ends_with(".php"));
            // A `path` rule runs every file beneath it: right for a
            // directory of FastCGI programs, not for PHP, whose site
            // keeps its images and uploads beside its scripts.
            if let PathMatch::Prefix(path) = &rule.matches {
                if rule.split_path.is_none() && (php(&rule.index) || php(&rule.fallback)) {
                    out.push(format!(
                        "{prefix}fastcgi[{}]: path {path} has no split_path, so every file \
                         beneath it (a stylesheet, an image, an upload) is sent to the \
                         application as a script to run: php-fpm refuses each with 403 \
                         \"Access denied.\", or runs it as PHP where \
                         security.limit_extensions allows; add split_path = \".php\" (the \
                         other files are then served as files)",
                        i + 1
                    ));
                }
            }
            // A pattern rule's fallback is for the missing paths its
            // pattern matches (a missing x.php), never /users/3: no front
            // controller, though it reads like one.
            if let (PathMatch::Glob(pattern), Some(fallback)) = (&rule.matches, &rule.fallback) {
                out.push(format!(
                    "{prefix}fastcgi[{}].fallback: {fallback} takes only the missing paths that \
                     the rule's pattern {pattern} matches, not /users/3 nor any other path: for \
                     a front controller of every path that is no file, write path = \"/\" (with \
                     split_path = \".php\") instead of the pattern",
                    i + 1
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fastcgi_upstream, proxy_upstream, resolve_with, Upstream, Written};

    /// Two upstreams are the same by address, scheme and host as
    /// written, whether they share their parts or not (a reload's are
    /// new ones), and whichever address was reached last.
    #[test]
    fn upstreams_are_the_same_by_what_they_name() {
        let tcp = |host: &str, also: &[&str], tls| Upstream::Tcp {
            addr: "127.0.0.1:9001".parse().unwrap(),
            also: also.iter().map(|a| a.parse().unwrap()).collect(),
            reached: Default::default(),
            host: host.into(),
            tls,
        };
        let a = tcp("app.test", &["[::1]:9001"], false);
        assert_eq!(a, a.clone());
        assert_eq!(
            a,
            tcp("app.test", &["[::1]:9001"], false),
            "parts not shared"
        );
        if let Upstream::Tcp { reached, .. } = &a {
            reached.0.store(1, std::sync::atomic::Ordering::Relaxed);
        }
        assert_eq!(
            a,
            tcp("app.test", &["[::1]:9001"], false),
            "reached is learnt"
        );
        assert_ne!(a, tcp("app2.test", &["[::1]:9001"], false));
        assert_ne!(a, tcp("app.test", &[], false));
        assert_ne!(a, tcp("app.test", &["[::1]:9001"], true));
        let unix = |p: &str| Upstream::Unix(std::path::Path::new(p).into());
        assert_eq!(unix("/run/a.sock"), unix("/run/a.sock"));
        assert_ne!(unix("/run/a.sock"), unix("/run/b.sock"));
        assert_ne!(unix("/run/a.sock"), a);
    }

    #[test]
    fn a_name_the_resolver_cannot_resolve_again_keeps_its_address() {
        use std::io::Error;
        use std::net::SocketAddr;
        let at = |a: &str| a.parse::<SocketAddr>().unwrap();
        let found = |a: SocketAddr| move |_: &str, _: u16| Ok(vec![a]);
        let gone = |_: &str, _: u16| Err(Error::other("out of reach"));
        let written = || tcp("App-Kept.Test", 9001, false).unwrap();
        let addr = |u: Upstream| match u {
            Upstream::Tcp { addr, .. } => addr,
            Upstream::Unix(_) => panic!("a TCP upstream"),
        };
        // At start, and at a reload that can ask the resolver: its answer.
        let first = resolve_with(written(), &found(at("192.0.2.1:9001"))).unwrap();
        assert_eq!(addr(first), at("192.0.2.1:9001"));
        let moved = resolve_with(written(), &found(at("192.0.2.2:9001"))).unwrap();
        assert_eq!(addr(moved), at("192.0.2.2:9001"));
        // A reload that cannot (inside the sandbox): the address it had.
        let kept = resolve_with(written(), &gone).unwrap();
        assert_eq!(addr(kept), at("192.0.2.2:9001"));
        // Several addresses: the first, then the others in order (each
        // once), tried when the one before refuses.
        let two = |_: &str, _: u16| Ok(vec![at("[::1]:9001"), at("127.0.0.1:9001")]);
        let both = resolve_with(tcp("dual.test", 9001, false).unwrap(), &two).unwrap();
        match both {
            Upstream::Tcp { addr, also, .. } => {
                assert_eq!(
                    (addr, &*also),
                    (at("[::1]:9001"), &[at("127.0.0.1:9001")][..])
                );
            }
            Upstream::Unix(_) => panic!("a TCP upstream"),
        }
        // Not on another port, nor for a name never resolved.
        let other = tcp("app-kept.test", 9002, false).unwrap();
        let e = resolve_with(other, &gone).unwrap_err();
        assert!(
            e.starts_with("cannot resolve app-kept.test: out of reach (inside the sandbox, a reload cannot resolve a name brisk did not resolve at start"),
            "{e}"
        );
    }

    fn tcp(host: &str, port: u16, tls: bool) -> Result<Written<'_>, String> {
        Ok(Written::Tcp { host, port, tls })
    }

    #[test]
    fn proxy_upstreams_as_written() {
        assert_eq!(
            proxy_upstream("http://127.0.0.1:9001"),
            tcp("127.0.0.1", 9001, false)
        );
        assert_eq!(
            proxy_upstream("HTTP://App.Example:80"),
            tcp("App.Example", 80, false)
        );
        assert_eq!(
            proxy_upstream("https://app.example"),
            tcp("app.example", 443, true)
        );
        assert_eq!(
            proxy_upstream("https://[::1]:8443"),
            tcp("[::1]", 8443, true)
        );
        assert_eq!(proxy_upstream("http://[::1]:1"), tcp("[::1]", 1, false));
        assert_eq!(
            proxy_upstream("unix:/run/app.sock"),
            Ok(Written::Unix("/run/app.sock"))
        );
        for bad in [
            "",
            "127.0.0.1:9001",
            "ftp://x:1",
            "http://x",
            "http://x:0",
            "http://x:65536",
            "http://x:+80",
            "http://x:1/",
            "http://x:1/api",
            "http://x:1?q",
            "http://u@x:1",
            "http://:1",
            "http://*.x:1",
            "http://x y:1",
            "http://[::1:1",
            "http://[nope]:1",
            "http://[::1]x",
            "http://::1:80",
            "unix:run/app.sock",
            "unix:",
        ] {
            assert!(proxy_upstream(bad).is_err(), "{bad}");
        }
        let long = format!("unix:/{}", "a".repeat(107));
        assert!(proxy_upstream(&long).is_err());
        assert!(proxy_upstream(&long[..long.len() - 1]).is_ok());
    }

    #[test]
    fn fastcgi_upstreams_as_written() {
        assert_eq!(
            fastcgi_upstream("127.0.0.1:9000"),
            tcp("127.0.0.1", 9000, false)
        );
        assert_eq!(fastcgi_upstream("[::1]:9000"), tcp("[::1]", 9000, false));
        assert_eq!(fastcgi_upstream("php:9000"), tcp("php", 9000, false));
        assert_eq!(
            fastcgi_upstream("unix:/run/php/php8.2-fpm.sock"),
            Ok(Written::Unix("/run/php/php8.2-fpm.sock"))
        );
        for bad in [
            "127.0.0.1",
            "http://127.0.0.1:9000",
            "php:9000/x",
            "unix:php.sock",
        ] {
            assert!(fastcgi_upstream(bad).is_err(), "{bad}");
        }
    }
}
