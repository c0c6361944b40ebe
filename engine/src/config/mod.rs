//! Configuration: schema, compiled-in defaults, TOML loading, command-line
//! flags, validation with errors that name file, line and key.
//!
//! Precedence, lowest first: [`Config::default`], then one TOML document
//! (the `--config` file, or else the one baked in at build time through
//! `BRISK_DEFAULT_CONFIG`), then command-line flags. `brisk.example.toml`
//! documents every key.

/// `require!(loader, "feature", spanned, key, WHAT, FIX)`: returns the
/// error `site.toml:12: key: this brisk was built without WHAT (the cargo
/// feature `feature`); FIX` from the enclosing function when the build
/// lacks the feature. A `return` written out (not a `?` on a `Result`)
/// makes what follows dead code to the compiler, which then leaves the
/// subsystem's code out of such a build.
macro_rules! require {
    ($loader:expr, $feature:literal, $v:expr, $key:expr, $what:expr, $fix:expr) => {
        if !cfg!(feature = $feature) {
            return Err($loader.built_without($v, $key, $what, $feature, $fix));
        }
    };
}

#[cfg(any(not(feature = "upstreams"), not(feature = "webdav")))]
mod absent;
mod acme;
pub mod admission;
mod auth;
mod cgi;
mod cli;
pub mod compress;
mod handlers;
mod http2;
mod http3;
mod jail;
mod load;
mod mime_types;
mod own;
mod proxy;
#[cfg(feature = "ops")]
mod report;
pub mod rules;
mod sections;
mod servlets;
mod site;
mod summary;
mod throttle;
mod tls;
mod units;
mod upstream;
mod value;
mod webdav;

#[cfg(feature = "acme")]
pub use crate::acme::key::KeyType;
pub use acme::{AcmeConfig, LETS_ENCRYPT};
pub use compress::{Coding, CompressConfig, Levels};
pub use handlers::{shadowed_handler, unknown_handler, HandlerRule, BUILT_IN_HANDLERS};
pub use servlets::ServletsConfig;
pub(crate) use units::FRAMING_HEADERS;
pub use upstream::{
    Balance, FastcgiRule, HeaderEdits, Health, HostMode, ProxyRule, Rules, ServerMode, Tried,
    Upstream, BUFFER_ANSWER,
};
pub use value::Value;
pub use webdav::{DavRules, PropStore, WebdavRule, LISTING_CACHE};

// The rules' own types, where what reads them lives, named here too.
pub use crate::access::auth::{AuthMethods, AuthRule};
pub use crate::http::glob::{Folding, PathMatch};

// What the logs are told: the log module's own types, named here too.
pub use crate::log::{AccessFormat, Level, LogConfig, LogField, LogPiece, LogTarget, LogVar};

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The whole server configuration, validated. Made once per load and
/// shared (`Arc`); `Clone` only with WebDAV, whose trees may need their
/// names' case folded again while serving (a filesystem mounted beneath
/// one): elsewhere nothing copies it (see [`RestartOnly`] and
/// [`Config::rebase_in_jail`]), and the copy's code is ~13 KiB.
#[derive(Debug)]
#[cfg_attr(feature = "webdav", derive(Clone))]
pub struct Config {
    /// Addresses to listen on (IPv4 and IPv6).
    pub listen: Vec<SocketAddr>,
    /// No listener of any kind was configured (`listen`, `--listen`,
    /// `--port`, `[tls] listen`, `[proxy] listen`): `listen` is the
    /// built-in default, which sockets passed by systemd replace.
    pub listen_default: bool,
    /// The built-in default address serves HTTPS (`--tls-cert` without
    /// `--listen`): so do passed sockets not named otherwise.
    pub listen_default_tls: bool,
    /// Where each listen address (of `listen`, `[tls] listen`, `[proxy]
    /// listen` and `tls_listen`) was configured, for the error when it
    /// cannot be bound: `site.toml:3: listen`, `--listen`, `--port`. The
    /// first entry for an address counts; empty for a configuration
    /// built in code.
    pub listen_origins: Vec<(SocketAddr, String)>,
    /// The default site: the top level's per-site settings (document
    /// root, `[static]`, rules), which answers every request no `[[site]]`
    /// claims.
    pub site: SiteConfig,
    /// `[[site]]` (or `[[vhost]]`) tables, in file order.
    pub sites: Vec<SiteConfig>,
    /// What a request whose host names no site gets (`unknown_host`).
    pub unknown_host: UnknownHost,
    /// Worker threads (event loops); already resolved (never 0).
    pub workers: usize,
    /// Run in the background (`--daemon`).
    pub daemon: bool,
    /// Where to write the pid when running as a daemon.
    pub pid_file: Option<PathBuf>,
    /// `Server` header value.
    /// An empty string means no `Server` header is sent at all.
    pub server_header: String,
    /// `[limits]`.
    pub limits: Limits,
    /// `[timeouts]`.
    pub timeouts: Timeouts,
    /// `[log]`.
    pub log: LogConfig,
    /// The user to run as once listeners and files are open (`user`,
    /// `--user`); `None` keeps the starting user.
    pub user: Option<User>,
    /// The group to run as (`group`, `--group`); `None` means the user's
    /// primary group.
    pub group: Option<Group>,
    /// Directory to `chroot` to after opening listeners, the document root
    /// and the logs (`chroot`); absolute and canonical.
    pub chroot: Option<PathBuf>,
    /// Serve as root when no other `user` is given (`allow_root`,
    /// `--allow-root`); otherwise brisk refuses to.
    pub allow_root: bool,
    /// Confine the running server with Landlock and seccomp where the
    /// kernel supports them (`sandbox`, `--no-sandbox`).
    pub sandbox: bool,
    /// Keep the upgrade helper (`brisk-upgrade`) so that SIGUSR2 can start
    /// a new binary with the listening sockets (`upgrade`).
    pub upgrade: bool,
    /// The configuration file (`--config`), absolute: read again on
    /// SIGHUP. `None` for the built-in document.
    pub config_file: Option<PathBuf>,
    /// Where request bodies are held while a CGI program waits for them
    /// (a chunked body larger than 64 KiB), as unnamed files (`temp_dir`;
    /// default `$TMPDIR` or `/tmp`). Checked only with `[[cgi]]` rules;
    /// then absolute and canonical.
    pub temp_dir: PathBuf,
    /// Where `temp_dir` was set (`site.toml:4: temp_dir`; `None`: the
    /// default), for an error found once the server runs.
    pub temp_dir_origin: Option<String>,
    /// Where the access and the error log were set (`site.toml:9:
    /// log.access`, `--access-log`; `None`: the default), for an error
    /// opening them at start.
    pub log_origins: [Option<String>; 2],
    /// `[tls]` (and `--tls-cert`/`--tls-key`): HTTPS listeners and their
    /// certificates; `None` without TLS.
    pub tls: Option<TlsConfig>,
    /// `[acme]`: certificates from an ACME CA; `None` without it (see
    /// [`Config::acme`]; only with the cargo feature `acme`).
    #[cfg(feature = "acme")]
    pub acme: Option<AcmeConfig>,
    /// `[http2]`: HTTP/2 on TLS (ALPN) and cleartext listeners, and its limits.
    pub http2: Http2Config,
    /// `[http3]`: HTTP/3 over QUIC on the `[tls]` addresses, and its limits.
    #[cfg(feature = "http3")]
    pub http3: Http3Config,
    /// `[proxy]`: PROXY protocol listeners and trusted proxies.
    pub proxy: ProxyConfig,
}

/// `unknown_host`: what a request gets whose host no site's `hosts`
/// names (or that names no host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownHost {
    /// The default site (the top level) answers it (`"default"`).
    #[default]
    Default,
    /// It is refused with this status: 421 Misdirected Request (RFC 9110
    /// §15.5.20) or 404 Not Found.
    Refuse(u16),
}

/// What one site serves and how: the per-site part of the configuration,
/// read by the same code from the top level (the default site) and from
/// each `[[site]]` table.
#[derive(Debug)]
#[cfg_attr(feature = "webdav", derive(Clone))]
pub struct SiteConfig {
    /// Host names this site answers (`hosts`): lower case, without a
    /// trailing dot or a port; `*.example.org` matches any name below
    /// `example.org`. Empty for the default site.
    pub hosts: Vec<String>,
    /// The document root, absolute and canonical.
    pub root: PathBuf,
    /// `[static]`.
    pub static_files: StaticConfig,
    /// Extension (no dot, lower case) → content type overrides from `[mime]`.
    pub mime: Vec<(String, String)>,
    /// Byte-rate limits by path, from `[[throttle]]`, in file order.
    pub throttle: Vec<ThrottleRule>,
    /// Extra response headers by path, from `[[headers]]`, in file order.
    pub headers: Vec<HeaderRule>,
    /// CGI rules from `[[cgi]]`, in file order (the first match wins).
    pub cgi: Vec<CgiRule>,
    /// `[[reverse_proxy]]` rules, in file order (the first match wins).
    pub reverse_proxy: Rules<ProxyRule>,
    /// `[[fastcgi]]` rules, in file order (the first match wins).
    pub fastcgi: Rules<FastcgiRule>,
    /// `[[webdav]]` rules, in file order (the first match wins); none
    /// without the cargo feature `webdav`.
    pub webdav: DavRules,
    /// Basic authentication rules from `[[auth]]`, in file order (the
    /// first match wins).
    pub auth: Vec<AuthRule>,
    /// `root` as written, when it is a symlink (`root` is where it led at
    /// load): a deploy that moves it is told of (see `process`).
    pub root_link: Option<PathBuf>,
    /// Named handlers mounted at paths, from `[[handlers]]`, in file
    /// order: the site's own, as its other rules.
    pub handlers: Vec<HandlerRule>,
    /// `[servlets]`: Lua servlets under URL prefixes.
    pub servlets: ServletsConfig,
    /// `[[redirect]]`, `[[rewrite]]`, `[errors]` and `[[cors]]`.
    pub rules: rules::SiteRules,
    /// `[[access]]` and `[[rate_limit]]`: which clients may send which
    /// requests, and how often.
    pub admission: admission::Admission,
    /// `[compress]`: on-the-fly gzip, brotli and zstd (its `cache_size`
    /// and `threads` are the top level's in every site).
    pub compress: CompressConfig,
    /// Where the site's trees find a name whatever its case (not a key:
    /// found when the file is loaded, from the trees' filesystems).
    pub folding: Folding,
}

impl SiteConfig {
    /// What a `[[site]]` starts from before its own keys: the default
    /// site's settings tables (`[static]`, `[mime]`), so that a site need
    /// not repeat them, but none of its rules (`[[headers]]`, `[[cgi]]`,
    /// `[[reverse_proxy]]`, `[[fastcgi]]`, `[[webdav]]`,
    /// `[[auth]]`, `[[throttle]]`, `[servlets]`, `[[redirect]]`,
    /// `[[rewrite]]`, `[errors]`, `[[cors]]`, `[[access]]`,
    /// `[[rate_limit]]`), which name paths and
    /// programs (and pages) of the default site. `[static] try_files`
    /// comes along with `[static]`. A per-site key added later decides
    /// here whether it is inherited.
    pub fn inherit(&self) -> SiteConfig {
        SiteConfig {
            hosts: Vec::new(),
            root: self.root.clone(),
            static_files: self.static_files.clone(),
            mime: self.mime.clone(),
            throttle: Vec::new(),
            headers: Vec::new(),
            cgi: Vec::new(),
            reverse_proxy: Rules::default(),
            fastcgi: Rules::default(),
            webdav: DavRules::default(),
            auth: Vec::new(),
            root_link: None,
            handlers: Vec::new(),
            // The limits are server-wide (one Lua state per worker).
            servlets: ServletsConfig {
                enable: false,
                paths: vec!["/servlets/".to_string()],
                config: Value::default(),
                ..self.servlets.clone()
            },
            rules: rules::SiteRules::default(),
            admission: admission::Admission::default(),
            // A settings table, as [static]: a site need not repeat it.
            compress: self.compress.clone(),
            folding: Folding::default(),
        }
    }

    /// The default site and then every `[[site]]`.
    pub fn all(config: &Config) -> impl Iterator<Item = &SiteConfig> {
        std::iter::once(&config.site).chain(config.sites.iter())
    }

    /// The prefix the keys of the `i`th site of [`SiteConfig::all`] have
    /// in the file: `""` for the default site, `site[2].` for the second
    /// `[[site]]`.
    pub fn key_prefix(i: usize) -> String {
        match i {
            0 => String::new(),
            i => format!("site[{i}]."),
        }
    }

    /// [`SiteConfig::all`], each site with its [`SiteConfig::key_prefix`].
    pub fn all_keyed(config: &Config) -> impl Iterator<Item = (String, &SiteConfig)> {
        SiteConfig::all(config)
            .enumerate()
            .map(|(i, site)| (SiteConfig::key_prefix(i), site))
    }

    /// Each directory of the site's trees (its root, its `[[webdav]]`
    /// roots) beneath which names are found whatever their case
    /// (`sys::fs::folding_dirs`), with the URL prefix it is served at
    /// and its tree: `None` for the root, `Some(i)` for `webdav[i]`.
    /// What [`SiteConfig::folding`] is made of.
    pub fn folding_areas(&self) -> Vec<(Option<usize>, PathBuf, String)> {
        // (Without `webdav`, the smallest builds: the document root alone.)
        #[cfg(not(feature = "webdav"))]
        return match crate::sys::fs::folds_case(&self.root) {
            true => vec![(None, self.root.clone(), "/".to_string())],
            false => Vec::new(),
        };
        #[cfg(feature = "webdav")]
        {
            let trees = std::iter::once((None, &self.root, "/")).chain(
                (self.webdav.iter().enumerate()).map(|(i, r)| (Some(i), &r.root, r.path.as_str())),
            );
            let mut areas = Vec::new();
            for (tree, root, prefix) in trees {
                for dir in crate::sys::fs::folding_dirs(root) {
                    // (A name that is not UTF-8: the whole tree, which covers it.)
                    let rest = dir.strip_prefix(root).ok().and_then(|r| r.to_str());
                    let area = match rest {
                        Some("") | None => prefix.to_string(),
                        Some(rest) => format!("{}/{rest}/", prefix.trim_end_matches('/')),
                    };
                    areas.push((tree, dir, area));
                }
            }
            areas
        }
    }

    /// The name a site goes by in messages: its first host, or
    /// `the default site`.
    pub fn name(&self) -> &str {
        self.hosts
            .first()
            .map_or("the default site", String::as_str)
    }
}

impl Config {
    /// `[acme]`, if any (never without the cargo feature `acme`).
    pub fn acme(&self) -> Option<&AcmeConfig> {
        #[cfg(feature = "acme")]
        return self.acme.as_ref();
        #[cfg(not(feature = "acme"))]
        None
    }

    /// Whether the ACME thread talks to a CA: `[acme]` names a public
    /// name (with only `localhost` and addresses, the local CA certifies
    /// them all and nothing is connected to).
    pub fn asks_a_ca(&self) -> bool {
        self.acme().is_some_and(|a| !a.hosts.is_empty())
    }

    /// The TCP ports brisk connects to: its upstreams' (the
    /// `[[reverse_proxy]]` and `[[fastcgi]]` rules of every site) and its
    /// ACME CA's when it asks one; `None` when no rule forwards anything
    /// and no CA is asked (the sandbox then denies every TCP connect).
    pub fn connect_ports(&self) -> Option<Vec<u16>> {
        if !cfg!(any(feature = "upstreams", feature = "acme")) {
            return None;
        }
        let mut rules = SiteConfig::all(self)
            .filter(|_| cfg!(feature = "upstreams"))
            .flat_map(|site| {
                let proxied = site.reverse_proxy.iter().map(|r| &r.to);
                proxied.chain(site.fastcgi.iter().map(|r| &r.to))
            })
            .peekable();
        let acme = self
            .acme()
            .filter(|_| self.asks_a_ca())
            .map(|a| a.directory_addr.1);
        if rules.peek().is_none() && acme.is_none() {
            return None;
        }
        let mut ports: Vec<u16> = rules
            .flatten()
            .filter_map(|to| match to {
                Upstream::Tcp { addr, .. } => Some(addr.port()),
                Upstream::Unix(_) => None,
            })
            .chain(acme)
            .collect();
        crate::sort::sort_by_key(&mut ports, |p| *p);
        ports.dedup();
        Some(ports)
    }

    /// Whether any site has `[[cgi]]` rules.
    pub fn any_cgi(&self) -> bool {
        SiteConfig::all(self).any(|site| !site.cgi.is_empty())
    }

    /// Whether request bodies may be held whole in `temp_dir` (a file of
    /// their own once large): for CGI programs and FastCGI scripts (a
    /// chunked body, whose length they must be told) and for
    /// `[[reverse_proxy]]` rules with `buffer_request`. A `temp_dir` that
    /// cannot take them is an error at start.
    pub fn holds_bodies(&self) -> bool {
        SiteConfig::all(self).any(|site| {
            !site.cgi.is_empty()
                || !site.fastcgi.is_empty()
                || site.reverse_proxy.iter().any(|r| r.buffer_request)
        })
    }

    /// Whether answers of `[[reverse_proxy]]` rules may be held in
    /// `temp_dir` for slow clients (`buffer_answer`): where it cannot
    /// take them, they go as the client takes them (a warning, not an
    /// error: a proxy that worked without `temp_dir` goes on working).
    pub fn holds_answers(&self) -> bool {
        SiteConfig::all(self).any(|site| site.reverse_proxy.iter().any(|r| r.buffer_answer > 0))
    }

    /// The port of the first `[tls] listen` address (`$https_port`).
    pub fn https_port(&self) -> Option<u16> {
        self.tls.as_ref()?.listen.first().map(|a| a.port())
    }

    /// Site `i`: 0 is the default site, `i` the `i`-th `[[site]]`
    /// (the order of [`SiteConfig::all`]).
    pub fn site(&self, i: usize) -> &SiteConfig {
        match i {
            0 => &self.site,
            i => self.sites.get(i - 1).unwrap_or(&self.site),
        }
    }
}

/// `[proxy]`: behind load balancers and reverse proxies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Plain HTTP listeners whose every connection must open with a
    /// PROXY protocol header (v1 or v2), which names the client.
    pub listen: Vec<SocketAddr>,
    /// HTTPS listeners whose every connection must open with a PROXY
    /// protocol header, then TLS (a balancer that passes TLS through, or
    /// HAProxy's `ssl` with `send-proxy-v2`); `[tls]` gives the
    /// certificates.
    pub tls_listen: Vec<SocketAddr>,
    /// Peers whose `Forwarded` / `X-Forwarded-For` / `X-Forwarded-Proto`
    /// headers name the client (nobody's by default).
    pub trusted: crate::access::proxy::Trusted,
    /// Which of those headers they name it in (`header`).
    pub header: crate::access::proxy::forwarded::By,
}

/// `[http3]`: HTTP/3 over QUIC on the UDP side of every `[tls] listen`
/// address (see `brisk.example.toml`); off by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Http3Config {
    /// A QUIC endpoint per worker on each `[tls] listen` address's UDP
    /// port, ALPN `h3`; HTTPS answers then carry `Alt-Svc`.
    pub enable: bool,
    /// Request streams a client may have open at once.
    pub max_streams: u32,
    /// A QUIC connection with no packet for this long is closed.
    pub idle_timeout: std::time::Duration,
    /// Once a worker holds this many QUIC connections, a new client's
    /// first packet is answered with a Retry (address validation); 0:
    /// every new client.
    pub retry_above: u32,
    /// RESET_STREAM and STOP_SENDING frames a client may send (and
    /// streams it makes us reset) in `flood_window` before its connection
    /// is closed (H3_EXCESSIVE_LOAD).
    pub max_cancels: u32,
    /// The window `max_cancels` counts in.
    pub flood_window: std::time::Duration,
}

impl Default for Http3Config {
    fn default() -> Http3Config {
        Http3Config {
            enable: false,
            max_streams: 100,
            idle_timeout: std::time::Duration::from_secs(30),
            retry_above: 1000,
            max_cancels: 400,
            flood_window: std::time::Duration::from_secs(10),
        }
    }
}

/// `[http2]`: where HTTP/2 is spoken, and the limits of each connection
/// (every one a defence; see `brisk.example.toml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Http2Config {
    /// ALPN `h2` on every TLS listener.
    pub enable: bool,
    /// A plaintext connection that opens with the HTTP/2 preface is
    /// served as h2c (prior knowledge).
    pub cleartext: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: a stream's receive window.
    pub stream_window: u32,
    /// The connection's receive window.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: larger request heads get 431.
    pub max_header_list_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK table a client may use.
    pub header_table_size: u32,
    /// CONTINUATION frames a header block may take.
    pub max_continuations: u32,
    /// Streams cancelled, refused, malformed or reset for the client's
    /// fault per 10 s (rapid reset, "MadeYouReset").
    pub max_resets: u32,
    /// SETTINGS, PING and PRIORITY frames per 10 s.
    pub max_control_frames: u32,
    /// Empty frames and frames on closed streams per 10 s.
    pub max_empty_frames: u32,
}

/// `[tls]`: HTTPS listeners, certificates, session resumption, limits.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// Addresses whose clients speak TLS (`[tls] listen`).
    pub listen: Vec<SocketAddr>,
    /// `[[tls.certificate]]`, read and checked when the configuration
    /// loaded; SNI picks by their names, the first is the default.
    pub certificates: Vec<TlsCertificate>,
    /// Resume sessions with stateless tickets (`session_tickets`).
    pub session_tickets: bool,
    /// Sessions the server keeps for clients without tickets, all workers
    /// together (`session_cache`); 0 keeps none.
    pub session_cache: usize,
    /// A handshake must be done within this (`handshake_timeout`).
    pub handshake_timeout: Duration,
    /// Handshakes in progress per worker (`max_handshakes`); new TLS
    /// connections wait in the kernel's queue beyond it.
    pub max_handshakes: usize,
    /// Answer every plain-HTTP request with a redirect to HTTPS
    /// (`redirect_http`): a first `[[redirect]]` rule in every site.
    pub redirect_http: bool,
    /// Session-ticket keys shared through a file by a fleet
    /// (`ticket_keys`, `ticket_rotation`); `None`: a random key per
    /// process, rotated by rustls. (Only with the feature `ops`: see
    /// [`TlsConfig::ticket_keys`].)
    #[cfg(feature = "ops")]
    pub ticket_keys: Option<TicketKeys>,
}

/// `[tls] ticket_keys`: the file of the session-ticket keys every server
/// naming it shares (see `tls::tickets`), and how often they rotate.
#[derive(Debug, Clone)]
pub struct TicketKeys {
    /// The keys' file (`ticket_keys`); its directory must be writable.
    pub file: PathBuf,
    /// The current key is replaced after this (`ticket_rotation`).
    pub rotation: Duration,
    /// Where `ticket_keys` was set (`site.toml:4: tls.ticket_keys`).
    pub origin: String,
}

/// The same keys, wherever they were set.
impl PartialEq for TicketKeys {
    fn eq(&self, other: &Self) -> bool {
        (&self.file, self.rotation) == (&other.file, other.rotation)
    }
}

impl TlsConfig {
    /// `ticket_keys`: always none without the feature `ops`, which
    /// refuses the key.
    pub fn ticket_keys(&self) -> Option<&TicketKeys> {
        #[cfg(feature = "ops")]
        return self.ticket_keys.as_ref();
        #[cfg(not(feature = "ops"))]
        None
    }

    /// Every file the certificates were read from, with its key
    /// (`tls.certificate[1].key`): what a reload reads again.
    pub fn files(&self) -> Vec<(PathBuf, String)> {
        #[cfg(feature = "tls")]
        {
            let mut out = Vec::new();
            for (i, c) in self.certificates.iter().enumerate() {
                let key = |k: &str| format!("tls.certificate[{}].{k}", i + 1);
                out.push((c.files.cert.clone(), key("cert")));
                out.push((c.files.key.clone(), key("key")));
                if let Some(ocsp) = &c.files.ocsp {
                    out.push((ocsp.clone(), key("ocsp")));
                }
            }
            out
        }
        #[cfg(not(feature = "tls"))]
        Vec::new()
    }
}

/// A `[[tls.certificate]]` ready to serve (see `tls::certs`).
#[cfg(feature = "tls")]
pub type TlsCertificate = crate::tls::Certificate;

/// A build without the `tls` feature refuses `[tls]`, so there is never
/// a certificate.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub enum TlsCertificate {}

/// A user from the user database, or a numeric user id, resolved when
/// the config is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The name as configured (a number for a numeric id).
    pub name: String,
    /// Its user id.
    pub uid: u32,
    /// Its primary group id; `None` for a numeric id that has no entry in
    /// the user database (a container's), which then needs `group`.
    pub gid: Option<u32>,
    /// The other groups it is a member of in the group database (looked
    /// up at load, as `initgroups` would: the serving process gets them
    /// too, as nginx's workers do).
    pub groups: Vec<u32>,
}

impl User {
    /// The groups the serving process has as this user with the group
    /// `gid`: that one first, then the user's others.
    pub fn group_list(&self, gid: u32) -> Vec<u32> {
        crate::sys::privileges::group_list(gid, &self.groups)
    }
}

/// A group from the group database, or a numeric group id, resolved when
/// the config is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The name as configured.
    pub name: String,
    /// Its group id.
    pub gid: u32,
}

/// Size and count limits (`[limits]`).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Longest request line accepted, in bytes (longer → 414).
    pub max_request_line: usize,
    /// Largest header block accepted, in bytes (larger → 431).
    pub max_header_bytes: usize,
    /// Most header fields accepted in one request (more → 431).
    pub max_headers: usize,
    /// Largest request body accepted, in bytes (larger → 413).
    pub max_body: u64,
    /// Requests served on one connection before it is closed.
    pub keepalive_requests: u32,
    /// Open client connections, all workers together; above it new ones
    /// are refused at once (a 503 and close).
    pub max_connections: usize,
    /// Open client connections from one IP address (all workers
    /// together); 0 means no limit.
    pub max_connections_per_ip: u32,
    /// CGI processes running at once per worker (unlike
    /// `max_connections`, a per-worker count, so the server-wide ceiling
    /// is this times `workers`); a request beyond it is answered 503.
    pub cgi_processes: usize,
    /// Largest header block a CGI script may print before its body, in
    /// bytes; a longer one is a bad gateway (502).
    pub cgi_header_bytes: usize,
    /// Request bodies held in memory for embedded handlers, per worker, at
    /// once; a request whose body would go beyond is answered 503.
    pub handler_bodies: u64,
    /// Failed logins per client address (IPv6: per /64), all workers
    /// together, within `timeouts.auth_failure_window` before further
    /// attempts are answered 429 without a password check; 0 means no
    /// limit.
    pub auth_failures: u32,
}

/// Timeouts (`[timeouts]`).
#[derive(Debug, Clone)]
pub struct Timeouts {
    /// Whole request head must arrive within this (slowloris) → 408.
    pub header: Duration,
    /// Idle keep-alive connection is closed after this.
    pub keepalive: Duration,
    /// No progress writing a response for this long → close.
    pub send: Duration,
    /// No progress reading a request body for this long → 408.
    pub body: Duration,
    /// On SIGINT/SIGTERM, in-flight responses get this long to finish.
    pub shutdown: Duration,
    /// On SIGHUP, how long the previous workers may take to finish what
    /// they hold; `None` (the default): as long as the send, idle and
    /// other timeouts let their connections live, so a reload cuts nothing.
    pub reload_drain: Option<Duration>,
    /// A CGI script that makes no progress (no output read, no input
    /// taken) for this long is killed with its process group; the client
    /// gets 504 if the response had not started.
    pub cgi: Duration,
    /// An embedded handler's answer that streams in pieces or comes later
    /// from another thread, and makes no progress for this long, is given
    /// up: 504 if it had not started, else cut short.
    pub handler: Duration,
    /// The window in which `limits.auth_failures` are counted; it starts
    /// at a client's first failure.
    pub auth_failure_window: Duration,
    /// How long the kernel may hold a new connection that has sent nothing
    /// before handing it over (`TCP_DEFER_ACCEPT`, whole seconds, rounded
    /// up); zero hands every connection over at once.
    pub defer_accept: Duration,
    /// On SIGTERM, how long to go on accepting and serving while
    /// readiness answers 503 (a load balancer's or Kubernetes' time to
    /// take the server out of rotation), before the listeners close and
    /// the drain starts; zero (the default) starts at once.
    pub stop_delay: Duration,
}

/// What to do with a request for a dotfile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dotfiles {
    /// 403 Forbidden.
    Deny,
    /// 404 Not Found, as if absent.
    Ignore,
    /// Serve them.
    Allow,
}

impl Dotfiles {
    /// Whether a request for the normalised `path` is refused for one of
    /// its segments: a dotfile unless they are allowed, and brisk's own
    /// names ([`crate::http::path::is_own_name`]) always.
    #[inline]
    pub fn refuses(self, path: &[u8]) -> bool {
        use crate::http::path;
        match self {
            Dotfiles::Allow => path::has_own_segment(path),
            // (A dotfile check covers the own names but vfat's aliases,
            // which have a `~`: one pass looks for both, on every request.)
            _ => match path::dots_and_tildes(path) {
                (true, _) => true,
                (false, tilde) => tilde && path::has_own_segment(path),
            },
        }
    }
}

/// `[static] autoindex_max_entries`'s default: a listing of 10,000
/// entries takes about 40 ms to read and render and is a page of about
/// 1.8 MB (60,000: 270 ms, 10.5 MB), which the worker's event loop
/// waits for.
pub const AUTOINDEX_MAX_ENTRIES: usize = 10_000;

/// `[static]`.
#[derive(Debug, Clone)]
pub struct StaticConfig {
    /// File names tried, in order, when a directory is requested.
    pub index: Vec<String>,
    /// List a directory that has no index file.
    pub autoindex: bool,
    /// The most entries of a directory a listing reads (0: all): past
    /// them it says it was cut short.
    pub autoindex_max_entries: usize,
    /// What to do with path segments starting with `.`.
    pub dotfiles: Dotfiles,
    /// URL prefixes under which the query is part of the file name.
    pub query_in_filename: Vec<String>,
    /// Serve `file.br` / `file.gz` sidecars when the client accepts them.
    pub precompressed: bool,
    /// Follow symlinks that lead outside the document root.
    pub symlinks_outside_root: bool,
    /// Entries in each worker's open-file cache (0 turns it off).
    pub open_file_cache: usize,
    /// How long a cached file is trusted before it is checked again: the
    /// most a response can lag behind a change on disk.
    pub open_file_cache_valid: Duration,
    /// `Content-Type` of files no type table names (`default_type`).
    pub default_type: String,
    /// The `mime_types` file, read when the configuration was loaded.
    pub mime_types: Option<MimeTypesFile>,
    /// Send large files with `sendfile` (else copy them with `pread`).
    pub sendfile: bool,
    /// `try_files` (or `spa = "index.html"`, which is `["/index.html"]`):
    /// what a GET or HEAD of a path that is no file (nor a directory with
    /// an index) is answered with, 200: the first of these paths (`$uri`
    /// stands for the request's) that is a file. Empty: 404 as usual.
    pub try_files: Vec<String>,
    /// Extensions (lower case, no dot) of paths that never fall back to
    /// `try_files`: a missing script or image stays a 404.
    pub fallback_exclude: Vec<String>,
    /// Tell the type of files without an extension from their first
    /// bytes (`sniff`; see `http::sniff`).
    pub sniff: bool,
}

/// A `mime.types` file (`[static] mime_types`) and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MimeTypesFile {
    /// Where it is (absolute, or relative to the working directory).
    pub path: PathBuf,
    /// (extension, media type) pairs in file order.
    pub types: Vec<(String, String)>,
}

/// One `[[throttle]]` rule: responses whose path matches are paced.
#[derive(Debug, Clone)]
pub struct ThrottleRule {
    /// The paths it paces (`path` or `pattern`).
    pub matcher: PathMatch,
    /// Bytes per second shared by every client of this rule (all workers).
    pub rate: Option<u64>,
    /// Bytes per second for each connection.
    pub connection_rate: Option<u64>,
}

/// One `[[headers]]` rule.
#[derive(Debug, Clone)]
pub struct HeaderRule {
    /// Which requests get the headers.
    pub matcher: PathMatch,
    /// Header name → value, in file order.
    pub set: Vec<(String, String)>,
}

/// What a `[[cgi]]` rule maps to a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgiTarget {
    /// A URL prefix mapped to a directory of scripts: `/cgi-bin/a/b` runs
    /// `dir/a` (the first regular file on the way) with `PATH_INFO=/b`.
    Dir {
        /// URL prefix, starting with `/`.
        url: String,
        /// The directory, absolute and canonical.
        dir: PathBuf,
    },
    /// A URL prefix mapped to one program (like Apache's `ScriptAlias` to
    /// a file): `/tool/x/y` runs it with `PATH_INFO=/x/y`.
    Program {
        /// URL prefix, starting with `/`.
        url: String,
        /// The program, absolute.
        program: PathBuf,
    },
    /// Files anywhere under the document root whose name matches this glob
    /// (`*.pl`: `*` and `?` over the one path segment, never across `/`).
    Pattern(String),
}

/// One `[[cgi]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiRule {
    /// Which requests run which program.
    pub target: CgiTarget,
    /// Runs the script as `interpreter SCRIPT` instead of executing it
    /// directly; the script then only needs to be readable.
    pub interpreter: Option<PathBuf>,
    /// Extra environment variables for the script, in file order; they
    /// override the CGI variables of the same name.
    pub env: Vec<(String, String)>,
    /// Directories the rule's programs may write beneath despite the
    /// sandbox (`writable`): existing, canonical, sorted, no duplicates.
    pub writable: Vec<PathBuf>,
    /// The largest request body its programs take (`max_body`), when not
    /// `limits.max_body`: a `git push` of a large pack.
    pub max_body: Option<u64>,
}

impl Config {
    /// Where `addr` (as configured, port 0 unresolved) was set: see
    /// [`Config::listen_origins`].
    pub fn listen_origin(&self, addr: SocketAddr) -> Option<String> {
        let at = self.listen_origins.iter().find(|(a, _)| *a == addr);
        at.map(|(_, origin)| origin.clone())
    }
}

impl Default for Config {
    /// The compiled-in defaults (before any baked-in or user config file).
    fn default() -> Config {
        Config {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 8080))],
            listen_default: true,
            listen_default_tls: false,
            listen_origins: Vec::new(),
            site: SiteConfig {
                hosts: Vec::new(),
                root: PathBuf::from("."),
                static_files: StaticConfig {
                    index: vec!["index.html".to_string()],
                    autoindex: false,
                    autoindex_max_entries: AUTOINDEX_MAX_ENTRIES,
                    dotfiles: Dotfiles::Deny,
                    query_in_filename: Vec::new(),
                    precompressed: true,
                    symlinks_outside_root: false,
                    open_file_cache: 1024,
                    open_file_cache_valid: Duration::from_secs(1),
                    default_type: crate::http::mime::DEFAULT_TYPE.to_string(),
                    mime_types: None,
                    sendfile: true,
                    try_files: Vec::new(),
                    fallback_exclude: rules::DEFAULT_FALLBACK_EXCLUDE
                        .iter()
                        .map(|e| e.to_string())
                        .collect(),
                    sniff: false,
                },
                mime: Vec::new(),
                headers: Vec::new(),
                throttle: Vec::new(),
                cgi: Vec::new(),
                reverse_proxy: Rules::default(),
                fastcgi: Rules::default(),
                webdav: DavRules::default(),
                auth: Vec::new(),
                root_link: None,
                handlers: Vec::new(),
                servlets: servlets::defaults(),
                rules: rules::SiteRules::default(),
                admission: admission::Admission::default(),
                compress: compress::defaults(),
                folding: Folding::default(),
            },
            sites: Vec::new(),
            unknown_host: UnknownHost::Default,
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            daemon: false,
            pid_file: None,
            server_header: "brisk".to_string(),
            limits: Limits {
                max_request_line: 8192,
                max_header_bytes: 16384,
                max_headers: 100,
                max_body: 1 << 20,
                keepalive_requests: 1000,
                max_connections: 16384,
                max_connections_per_ip: 0,
                cgi_processes: 64,
                cgi_header_bytes: 16384,
                handler_bodies: 64 << 20,
                auth_failures: 10,
            },
            timeouts: Timeouts {
                header: Duration::from_secs(20),
                keepalive: Duration::from_secs(15),
                send: Duration::from_secs(60),
                body: Duration::from_secs(60),
                shutdown: Duration::from_secs(5),
                reload_drain: None,
                cgi: Duration::from_secs(60),
                handler: Duration::from_secs(60),
                auth_failure_window: Duration::from_secs(60),
                defer_accept: Duration::from_secs(1),
                stop_delay: Duration::ZERO,
            },
            log: LogConfig {
                access: LogTarget::Stdout,
                format: AccessFormat::Combined,
                fields: Vec::new(),
                template: Vec::new(),
                level: Level::Info,
                error: LogTarget::Stderr,
            },
            user: None,
            group: None,
            chroot: None,
            allow_root: false,
            sandbox: true,
            upgrade: cfg!(feature = "ops"),
            config_file: None,
            temp_dir: std::env::temp_dir(),
            temp_dir_origin: None,
            log_origins: [None, None],
            tls: None,
            #[cfg(feature = "acme")]
            acme: None,
            http2: http2::defaults(),
            #[cfg(feature = "http3")]
            http3: Http3Config::default(),
            proxy: ProxyConfig::default(),
        }
    }
}

/// A configuration or command-line error, ready to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// e.g. `brisk.toml:12: static.dotfiles: expected one of "deny", "ignore", "allow"; got "maybe"`
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Why a file a reloaded configuration names may not be read (see
/// [`Reload::load_readable`]): the error of whoever says so (the process
/// layer's sandbox), which the configuration's error then follows the
/// file, line and key with.
pub type Unreadable = Box<dyn std::error::Error + Send + Sync>;

/// What the command line asks for.
// Made once per process, so the size of `Run` is not worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Command {
    /// Serve with this configuration.
    Run(Config),
    /// `--check-config`: the configuration is valid; print this summary and exit 0.
    CheckOk(String),
    /// `--help`: print this text and exit 0.
    Help(String),
    /// `--version`: print this text and exit 0.
    Version(String),
    /// `--reload`, `--stop`, `--upgrade`, `--reopen-logs`: the
    /// configuration is valid; send this signal to the brisk whose pid
    /// is in `pid_file` (see [`crate::process::signal_running`]).
    Signal {
        /// The configuration's `pid_file` (or `--pid-file`).
        pid_file: std::path::PathBuf,
        /// The signal, such as `libc::SIGHUP`.
        signal: i32,
        /// What it asks for, for the message: `reload`, `stop`, …
        what: &'static str,
    },
}

impl Config {
    /// The keys whose values differ between `self` and `new` but only
    /// take effect at start (see [`RestartOnly`]). Compare configurations
    /// as loaded, before the server fills in a default user.
    pub fn restart_only_changes(&self, new: &Config) -> Vec<&'static str> {
        self.restart_only().changes(&new.restart_only())
    }

    /// What only a restart can change, as this configuration has it.
    pub fn restart_only(&self) -> RestartOnly {
        RestartOnly {
            workers: self.workers,
            daemon: self.daemon,
            pid_file: self.pid_file.clone(),
            user: self.user.clone(),
            group: self.group.clone(),
            chroot: self.chroot.clone(),
            allow_root: self.allow_root,
            sandbox: self.sandbox,
            upgrade: self.upgrade,
            access_log: self.log.access.clone(),
            error_log: self.log.error.clone(),
            ca_roots: self.acme().map(|a| a.ca_roots.clone()),
            defer_accept: self.timeouts.defer_accept,
        }
    }
}

/// The settings that only take effect at start: the process's identity
/// and confinement, its log files, and the listeners' shape (one socket
/// per worker). The server keeps those it started with (not the whole
/// configuration, which is not `Clone`: one copy of each site's rules is
/// enough) and refuses a reload that changes one.
#[derive(Debug)]
pub struct RestartOnly {
    workers: usize,
    daemon: bool,
    /// `pid_file`, which the server removes when it stops.
    pub pid_file: Option<PathBuf>,
    user: Option<User>,
    group: Option<Group>,
    /// `chroot`: a jailed server does not reload.
    pub chroot: Option<PathBuf>,
    allow_root: bool,
    sandbox: bool,
    upgrade: bool,
    access_log: LogTarget,
    error_log: LogTarget,
    // The ACME thread's HTTPS client is made at start, with the roots
    // read then (the sandbox may not let it read them again).
    ca_roots: Option<Vec<PathBuf>>,
    defer_accept: Duration,
}

impl RestartOnly {
    /// The keys whose values differ between `self` (as started) and `new`.
    pub fn changes(&self, new: &RestartOnly) -> Vec<&'static str> {
        let (a, b) = (self, new);
        let ca_roots = matches!((&a.ca_roots, &b.ca_roots), (Some(x), Some(y)) if x != y);
        [
            (a.workers != b.workers, "workers"),
            (a.daemon != b.daemon, "daemon"),
            (a.pid_file != b.pid_file, "pid_file"),
            (a.user != b.user, "user"),
            (a.group != b.group, "group"),
            (a.chroot != b.chroot, "chroot"),
            (a.allow_root != b.allow_root, "allow_root"),
            (a.sandbox != b.sandbox, "sandbox"),
            (a.upgrade != b.upgrade, "upgrade"),
            (a.access_log != b.access_log, "log.access"),
            (a.error_log != b.error_log, "log.error"),
            (ca_roots, "acme.ca_roots"),
            (a.defer_accept != b.defer_accept, "timeouts.defer_accept"),
        ]
        .into_iter()
        .filter_map(|(changed, key)| changed.then_some(key))
        .collect()
    }
}

/// How to load the configuration again, for a reload (SIGHUP): the same
/// command line, with its relative paths resolved against the directory
/// the server started in (a daemon has moved to `/` since).
#[derive(Debug, Clone)]
pub struct Reload {
    args: Vec<std::ffi::OsString>,
    cwd: PathBuf,
    workers: usize,
}

impl Reload {
    /// Remembers `args` (as given to [`from_args`]), the current directory,
    /// and `started.workers` (what `workers = 0` came to at start).
    pub fn new(args: Vec<std::ffi::OsString>, started: &Config) -> std::io::Result<Reload> {
        Ok(Reload {
            args,
            cwd: std::env::current_dir()?,
            workers: started.workers,
        })
    }

    /// Loads the configuration file again and applies the flags, with the
    /// same checks as at start.
    pub fn load(&self) -> Result<Config, ConfigError> {
        self.load_readable(&|_| Ok(()))
    }

    /// [`Reload::load`] where `readable` says whether a file the
    /// configuration names (an htpasswd file) may be read, and if not,
    /// why: the error then names the file, line and key.
    pub fn load_readable(
        &self,
        readable: &dyn Fn(&std::path::Path) -> Result<(), Unreadable>,
    ) -> Result<Config, ConfigError> {
        self.load_with(readable, &|p| std::fs::read(p))
    }

    /// [`Reload::load_readable`] where the TLS certificates and keys are
    /// read with `read`: the privileged helper's, when only root may read
    /// them.
    pub fn load_with(
        &self,
        readable: &dyn Fn(&std::path::Path) -> Result<(), Unreadable>,
        read: &dyn Fn(&std::path::Path) -> std::io::Result<Vec<u8>>,
    ) -> Result<Config, ConfigError> {
        let _reloading = jail::Reloading::begin();
        match cli::run_with(
            self.args.iter().cloned(),
            cli::BUILT_IN,
            &self.cwd,
            Some(self.workers),
            Some(readable),
            Some(read),
        )? {
            Command::Run(cfg) => Ok(cfg),
            _ => Err(ConfigError {
                message: "the command line does not start a server".to_string(),
            }),
        }
    }
}

/// Every key a configuration file may hold, as `section.key` (top-level
/// keys alone; arrays of tables as `cgi.url`): what `brisk.toml(5)` and
/// the shell completions are checked against. `[mime]` takes any
/// extension as a key and is listed as `mime`.
pub fn known_keys() -> Vec<String> {
    let mut out: Vec<String> = load::top_keys().iter().map(|k| k.to_string()).collect();
    let sections: &[(&str, &[&str])] = &[
        ("log", sections::LOG_KEYS),
        ("static", sections::STATIC_KEYS),
        ("limits", sections::LIMIT_KEYS),
        ("timeouts", sections::TIMEOUT_KEYS),
        ("headers", sections::HEADER_RULE_KEYS),
        ("cgi", cgi::CGI_KEYS),
        ("reverse_proxy", upstream::REVERSE_PROXY_KEYS),
        ("fastcgi", upstream::FASTCGI_KEYS),
        ("webdav", webdav::WEBDAV_KEYS),
        ("auth", auth::AUTH_KEYS),
        ("throttle", throttle::THROTTLE_KEYS),
        ("handlers", handlers::HANDLER_KEYS),
        ("tls", tls::TLS_KEYS),
        ("tls.certificate", tls::CERTIFICATE_KEYS),
        ("acme", acme::ACME_KEYS),
        ("http2", http2::HTTP2_KEYS),
        ("http3", http3::HTTP3_KEYS),
        ("servlets", servlets::SERVLET_KEYS),
        ("proxy", proxy::PROXY_KEYS),
        ("site", &["hosts"]),
        ("redirect", rules::REDIRECT_KEYS),
        ("rewrite", rules::REWRITE_KEYS),
        ("cors", rules::CORS_KEYS),
        ("access", admission::ACCESS_KEYS),
        ("rate_limit", admission::RATE_LIMIT_KEYS),
        ("compress", compress::COMPRESS_KEYS),
    ];
    for (section, keys) in sections {
        out.extend(keys.iter().map(|k| format!("{section}.{k}")));
    }
    out
}

/// Parses the command line (without the program name), loads the config file
/// it names (or the compiled-in default), applies flag overrides, validates.
pub fn from_args<I: IntoIterator<Item = std::ffi::OsString>>(
    args: I,
) -> Result<Command, ConfigError> {
    cli::from_args(args)
}
