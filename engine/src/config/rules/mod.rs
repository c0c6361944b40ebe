//! A site's request rules: `[[redirect]]` and `[[rewrite]]` (one list,
//! in file order), `[errors]` (custom error pages) and `[[cors]]`. Each
//! parser takes one TOML value, so the same functions read the top level
//! (the default site) and the tables of a `[[site]]`.
//!
//! What the rules do with a request is in `handlers::rewrite`,
//! `handlers::cors` and `handlers::error_pages`.

mod parse;
#[cfg(feature = "ops")]
mod summary;

#[cfg(feature = "ops")]
pub(super) use summary::{describe, fallback};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::PathMatch;

pub(in crate::config) const REDIRECT_KEYS: &[&str] =
    &["from", "exact", "prefix", "to", "status", "scheme", "host"];
pub(in crate::config) const REWRITE_KEYS: &[&str] =
    &["from", "exact", "prefix", "to", "scheme", "host"];
pub(in crate::config) const CORS_KEYS: &[&str] = &[
    "path",
    "pattern",
    "origins",
    "methods",
    "headers",
    "credentials",
    "max_age",
    "expose_headers",
];

/// Rewrites a request may go through before brisk gives up with 500
/// (a rule whose target matches its own `from` again, and so on).
pub const MAX_REWRITES: usize = 10;

/// A site's rules; empty by default (then the request path does nothing
/// new but look at three empty lists).
#[derive(Debug, Clone, Default)]
pub struct SiteRules {
    /// `[[redirect]]` and `[[rewrite]]` rules, in file order.
    pub url: Vec<UrlRule>,
    /// `[errors]`: custom pages by status.
    pub errors: Vec<ErrorPage>,
    /// `[[cors]]` rules, in file order (the first that matches applies).
    pub cors: Vec<CorsRule>,
}

impl SiteRules {
    /// No rule of any kind.
    pub fn is_empty(&self) -> bool {
        self.url.is_empty() && self.errors.is_empty() && self.cors.is_empty()
    }
}

/// How a `[[redirect]]` or `[[rewrite]]` rule selects paths.
#[derive(Debug, Clone)]
pub enum UrlMatch {
    /// `exact = "/old"`: the whole path.
    Exact(String),
    /// `prefix = "/old/"`: paths starting with it; `$1` is the rest.
    Prefix(String),
    /// `from = "^/old/(.*)$"`: a regular expression, captures `$1`…`$9`.
    Regex(Pattern),
}

/// A regular expression compiled when the configuration loaded.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The expression.
    pub re: regex_lite::Regex,
}

/// What a URL rule does with a request it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlAction {
    /// Answer with this status (301, 302, 307, 308) and a `Location`.
    Redirect(u16),
    /// Serve the target instead, internally.
    Rewrite,
}

/// A scheme a rule may be limited to (`scheme = "http"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTPS (TLS here, or at a trusted proxy that says so).
    Https,
}

impl Scheme {
    /// `"http"` or `"https"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// One piece of a rule's target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes as written.
    Literal(String),
    /// `$1`…`$9` (a prefix rule's `$1` is the rest of the path).
    Capture(usize),
    /// `$host`: the request's host name, lower case, without the port.
    Host,
    /// `$uri`: the decoded, normalised path (percent-encoded again).
    Uri,
    /// `$scheme`: `http` or `https`.
    Scheme,
    /// `$query`: the query as sent, without `?` (empty without one).
    Query,
    /// `$port`: the port the client connected to (nginx's `$server_port`).
    Port,
    /// `$https_port`: `:` and the port of the first `[tls] listen`
    /// address, or nothing for 443 or without one, so that
    /// `https://$host$https_port$uri` names the HTTPS side of the site.
    HttpsPort,
}

/// A rule's target, parsed: literal text and variables, and where its
/// query starts (variables there are encoded for a query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The pieces, in order.
    pub pieces: Vec<Piece>,
    /// Index of the first piece after the target's own `?`, if it has
    /// one; then the request's query is not appended (a lone trailing
    /// `?` drops it, as in nginx).
    pub query_from: Option<usize>,
    /// The target as written (for the summary and logs).
    pub text: String,
}

/// One `[[redirect]]` or `[[rewrite]]` rule.
#[derive(Debug, Clone)]
pub struct UrlRule {
    /// Which paths.
    pub matcher: UrlMatch,
    /// Where to.
    pub to: Target,
    /// Redirect or rewrite.
    pub action: UrlAction,
    /// Only for requests over this scheme.
    pub scheme: Option<Scheme>,
    /// Only for these hosts (lower case; `*.example.org` matches its
    /// subdomains); empty: any host.
    pub hosts: Vec<String>,
    /// `brisk.toml:12`, where the rule is (for logs and the summary).
    pub origin: String,
    /// Byte offset of the rule in its file: redirects and rewrites are
    /// kept in file order together.
    pub(in crate::config) at: usize,
}

impl UrlRule {
    /// `[tls] redirect_http`'s rule, first in every site: a plain-HTTP
    /// request of any path is answered 308 (the method and body kept,
    /// RFC 9110 §15.4.9) to the same host, path and query over HTTPS.
    pub fn to_https(origin: &str) -> UrlRule {
        UrlRule {
            matcher: UrlMatch::Prefix("/".to_string()),
            to: Target {
                pieces: vec![
                    Piece::Literal("https://".to_string()),
                    Piece::Host,
                    Piece::HttpsPort,
                    Piece::Uri,
                ],
                query_from: None,
                text: "https://$host$https_port$uri".to_string(),
            },
            action: UrlAction::Redirect(308),
            scheme: Some(Scheme::Http),
            hosts: Vec::new(),
            origin: origin.to_string(),
            at: 0,
        }
    }
}

/// One `[errors]` entry: the page for a status.
#[derive(Debug, Clone)]
pub struct ErrorPage {
    /// 400..=599.
    pub status: u16,
    /// The page, relative to the document root (no leading `/`).
    pub page: String,
    /// Set once a failure to open the page was logged (every worker of
    /// the configuration shares it): logged once, not per request.
    pub warned: Arc<AtomicBool>,
}

/// Which origins a `[[cors]]` rule allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origins {
    /// `"*"`: any, answered `Access-Control-Allow-Origin: *`.
    Any,
    /// These (as sent in `Origin`, compared case-insensitively), echoed
    /// back with `Vary: Origin`.
    List(Vec<String>),
}

/// One `[[cors]]` rule; the header values are joined at load.
#[derive(Debug, Clone)]
pub struct CorsRule {
    /// Which paths.
    pub matcher: PathMatch,
    /// Which origins.
    pub origins: Origins,
    /// `Access-Control-Allow-Methods` (preflight).
    pub methods: String,
    /// `Access-Control-Allow-Headers` (preflight); empty: not sent.
    pub headers: String,
    /// `Access-Control-Allow-Credentials: true`.
    pub credentials: bool,
    /// `Access-Control-Max-Age` in seconds (preflight).
    pub max_age: Option<u64>,
    /// `Access-Control-Expose-Headers`; empty: not sent.
    pub expose: String,
}

/// The default of `methods`: the CORS-safelisted ones (Fetch standard).
pub const DEFAULT_CORS_METHODS: &str = "GET, HEAD, POST";

/// The default of `[static] fallback_exclude`: extensions of files a
/// page loads (scripts, styles, images, fonts, media, data), whose absence
/// must stay a 404 rather than become the application's HTML.
pub const DEFAULT_FALLBACK_EXCLUDE: &[&str] = &[
    "js", "mjs", "css", "map", "json", "wasm", "png", "jpg", "jpeg", "gif", "webp", "avif", "svg",
    "ico", "bmp", "woff", "woff2", "ttf", "otf", "eot", "mp4", "webm", "mp3", "ogg", "wav", "pdf",
    "zip", "gz", "br", "txt", "xml",
];

/// Puts redirects and rewrites read from two arrays back in file order.
pub(in crate::config) fn in_file_order(rules: &mut [UrlRule]) {
    crate::sort::sort_by_key(rules, |r| r.at);
}

/// The configuration a TOML document makes (on the defaults), for the
/// unit tests of the rules' users.
#[cfg(all(test, feature = "sites"))]
pub(crate) fn from_toml(text: &str) -> Result<super::Config, super::ConfigError> {
    let src = super::load::Source {
        name: "test.toml",
        text,
        base: std::path::Path::new("/"),
        readable: None,
    };
    let mut cfg = super::Config::default();
    super::load::load(&src, &mut cfg)?;
    Ok(cfg)
}
