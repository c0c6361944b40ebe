//! `[[webdav]]`: a tree served and written by WebDAV (RFC 4918), per
//! site; the cargo feature `webdav` (without it the key is refused).

use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(feature = "webdav")]
use toml::{
    de::{DeTable, DeValue},
    Spanned,
};

#[cfg(feature = "webdav")]
use super::load::{sorted, Loader};
#[cfg(feature = "webdav")]
use super::ConfigError;
use super::{CgiTarget, Config, SiteConfig};

pub(super) const WEBDAV_KEYS: &[&str] = &[
    "path",
    "root",
    "read_only",
    "max_upload",
    "locks",
    "listing_cache",
    "fsync",
    "properties",
];

/// Where a rule keeps dead properties (`properties`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropStore {
    /// Extended attributes, or the sidecar store on a filesystem without
    /// user xattrs (found by the call's `EOPNOTSUPP`).
    Auto,
    /// Extended attributes only (507 where there are none).
    Xattr,
    /// The sidecar store only (`.brisk-props` in each collection).
    Sidecar,
}

/// `listing_cache`'s default: how long a collection's cached listing is
/// trusted for changes made beside brisk (lighttpd's stat cache trusts
/// its entries about as long).
pub const LISTING_CACHE: Duration = Duration::from_secs(1);

/// A site's `[[webdav]]` rules: none at all without the feature, so that
/// the sandbox's, the summary's and the loader's code for them is not in
/// such a binary.
#[cfg(feature = "webdav")]
pub type DavRules = Vec<WebdavRule>;
/// A site's `[[webdav]]` rules: none at all without the feature, so that
/// the sandbox's, the summary's and the loader's code for them is not in
/// such a binary.
#[cfg(not(feature = "webdav"))]
pub type DavRules = super::absent::NoRules<WebdavRule>;

/// One `[[webdav]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebdavRule {
    /// The URL prefix it answers beneath, ending in `/` (`/dav/`).
    pub path: String,
    /// The tree it serves and writes (absolute, canonical): the only one
    /// the sandbox lets the server write.
    pub root: PathBuf,
    /// Only the reading methods (GET, HEAD, OPTIONS, PROPFIND).
    pub read_only: bool,
    /// The largest PUT body; `None`: `limits.max_body`.
    pub max_upload: Option<u64>,
    /// LOCK and UNLOCK (class 2), the `If:` header's lock tokens.
    pub locks: bool,
    /// How long a collection's members as PROPFIND `Depth: 1` found them
    /// are reused (zero: never) while the collection itself is unchanged
    /// and brisk wrote nothing meanwhile.
    pub listing_cache: Duration,
    /// PUT and MKCOL sync the file and its directory before answering.
    pub fsync: bool,
    /// Where dead properties are kept.
    pub properties: PropStore,
}

impl WebdavRule {
    /// How many bytes of `path` (a decoded, normalised request path) are
    /// the rule's prefix, if the rule takes it: `/dav/x` and `/dav` (the
    /// collection itself, without its slash) for `/dav/`.
    pub fn takes(&self, path: &[u8]) -> Option<usize> {
        let prefix = self.path.as_bytes();
        if path.starts_with(prefix) {
            Some(prefix.len())
        } else if path == &prefix[..prefix.len() - 1] {
            Some(path.len())
        } else {
            None
        }
    }
}

/// A warning for each `[[auth]]` rule whose `methods` list guards some
/// of the methods that change a writable `[[webdav]]` tree it covers (a
/// prefix of it, or beneath it) but not all: `methods = ["PUT",
/// "DELETE"]` leaves COPY and MOVE, which overwrite and remove as well,
/// to anyone. (`except_methods` is the way: webdav.md.)
#[cfg(all(feature = "webdav", feature = "sites"))]
pub(crate) fn half_guarded(config: &Config) -> Vec<String> {
    use crate::access::auth::AuthMethods;
    use crate::http::glob::PathMatch;
    let mut out = Vec::new();
    for (prefix, site) in super::SiteConfig::all_keyed(config) {
        for (i, auth) in site.auth.iter().enumerate() {
            let (AuthMethods::Only(_), PathMatch::Prefix(path)) = (&auth.methods, &auth.matcher)
            else {
                continue;
            };
            for dav in site.webdav.iter().filter(|d| !d.read_only) {
                if !(dav.path.starts_with(path.as_str()) || path.starts_with(dav.path.as_str())) {
                    continue;
                }
                let changing: &[&str] = match dav.locks {
                    true => &[
                        "PUT",
                        "DELETE",
                        "MKCOL",
                        "COPY",
                        "MOVE",
                        "PROPPATCH",
                        "LOCK",
                        "UNLOCK",
                    ],
                    false => &["PUT", "DELETE", "MKCOL", "COPY", "MOVE", "PROPPATCH"],
                };
                let open: Vec<&str> = (changing.iter())
                    .filter(|m| !auth.methods.covers(m.as_bytes()))
                    .copied()
                    .collect();
                // (A COPY reads its source as a GET does, and a
                // PROPFIND shows names, sizes and times: a rule that
                // guards reading by GET alone leaves the file to copy
                // out into an open place.)
                if auth.methods.covers(b"GET") && !auth.methods.covers(b"COPY") {
                    out.push(format!(
                        "{prefix}auth[{}].methods guards GET at the WebDAV tree {} but not COPY, \
                         which reads a file too (to copy it where anyone may GET it): list COPY \
                         (and PROPFIND, which shows names and sizes) with it",
                        i + 1,
                        dav.path
                    ));
                }
                if !open.is_empty() && open.len() < changing.len() {
                    out.push(format!(
                        "{prefix}auth[{}].methods guards some of the methods that change the \
                         WebDAV tree at {} but not {}, which change it as well: anyone may; \
                         list them too, or guard all but the reading ones with except_methods \
                         = [\"GET\", \"HEAD\", \"OPTIONS\", \"PROPFIND\"]",
                        i + 1,
                        dav.path,
                        open.join(", ")
                    ));
                }
            }
        }
    }
    out
}

/// Why the workers cannot write in the tree of `rule`, a writable rule
/// (see [`crate::sys::fs::cannot_write_dir`]): they run as `user` (or as
/// `nobody`, started as root without one), with `group` or its own and
/// the user's other groups; `None` when they can, or the rule is
/// read-only.
#[cfg(feature = "webdav")]
pub(crate) fn cannot_write(config: &Config, rule: &WebdavRule) -> Option<String> {
    if rule.read_only {
        return None;
    }
    let euid = crate::sys::privileges::euid();
    let user = config.user.clone().or_else(|| config.default_user());
    let (who, name) = match &user {
        Some(u) if u.uid != euid => {
            let gid = config.group.as_ref().map(|g| g.gid).or(u.gid)?;
            (
                Some((u.uid, u.group_list(gid))),
                format!("user \"{}\" (uid {}, gid {gid})", u.name, u.uid),
            )
        }
        _ => (None, format!("uid {euid}")),
    };
    let why =
        crate::sys::fs::cannot_write_dir(&rule.root, who.as_ref().map(|(u, g)| (*u, &g[..])))?;
    Some(match why.strip_prefix("cannot tell: ") {
        Some(why) => format!(
            "cannot tell whether the workers, running as {name}, may write there: {why}"
        ),
        None => format!(
            "the workers, running as {name}, cannot write there: {why}; PUT, MKCOL, DELETE, MOVE, COPY and PROPPATCH will fail (make the tree theirs, or set read_only = true)"
        ),
    })
}

/// [`cannot_write`] for every writable `[[webdav]]` tree, as warnings
/// (`webdav[1].root: /srv/dav: …`).
#[cfg(feature = "webdav")]
pub(super) fn unwritable_trees(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for (k, site) in SiteConfig::all_keyed(config) {
        for (i, rule) in site.webdav.iter().enumerate() {
            if let Some(why) = cannot_write(config, rule) {
                out.push(format!(
                    "{k}webdav[{}].root: {}: {why}",
                    i + 1,
                    rule.root.display()
                ));
            }
        }
    }
    out
}

/// Why `rule` is refused: its tree holds, or lies beneath, a tree whose
/// files brisk runs, in any site (a `[[cgi]]` directory or
/// program, a root where a `pattern` rule or a `[[fastcgi]]` rule finds
/// scripts, a `[servlets]` prefix's directory), so WebDAV clients could
/// upload programs that then run, or (read-only) read their sources.
pub(super) fn runs_programs(config: &Config, rule: &WebdavRule) -> Option<String> {
    let overlaps = |p: &Path| p.starts_with(&rule.root) || rule.root.starts_with(p);
    let mut trees: Vec<(String, PathBuf)> = Vec::new();
    for (k, site) in SiteConfig::all_keyed(config) {
        for (i, cgi) in site.cgi.iter().enumerate() {
            let n = i + 1;
            trees.push(match &cgi.target {
                CgiTarget::Dir { dir, .. } => (format!("{k}cgi[{n}].dir"), dir.clone()),
                CgiTarget::Program { program, .. } => {
                    (format!("{k}cgi[{n}].program"), program.clone())
                }
                CgiTarget::Pattern(_) => {
                    (format!("{k}cgi[{n}].pattern (the root)"), site.root.clone())
                }
            });
        }
        for (i, f) in site.fastcgi.iter().enumerate() {
            let root = f.root.as_ref().unwrap_or(&site.root).clone();
            trees.push((format!("{k}fastcgi[{}] (its scripts' root)", i + 1), root));
        }
        // (Servlets under a prefix are loaded from the directory beneath
        // the root that the prefix names: `.lua` files put there would run.)
        if site.servlets.enable {
            for p in &site.servlets.paths {
                let dir = site.root.join(p.trim_matches('/'));
                trees.push((format!("{k}servlets.paths \"{p}\""), dir));
            }
        }
    }
    let (what, path) = trees.into_iter().find(|(_, p)| overlaps(p))?;
    // (Read-only, its GET would still serve their sources: WebDAV comes
    // before the CGI and FastCGI stages.)
    let why = match rule.read_only {
        true => "WebDAV clients could read the sources of programs brisk runs there",
        false => "WebDAV clients could put programs there that brisk then runs",
    };
    Some(format!(
        "{} overlaps {what} {}: {why}; give WebDAV a tree of its own",
        rule.root.display(),
        path.display()
    ))
}

#[cfg(feature = "webdav")]
impl Loader<'_> {
    /// One table of the `[[webdav]]` array (`webdav[N]`, `section`).
    pub(super) fn webdav_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<WebdavRule, ConfigError> {
        let (mut path, mut root) = (None, None);
        let (mut read_only, mut max_upload, mut locks) = (false, None, false);
        let (mut listing_cache, mut fsync) = (LISTING_CACHE, true);
        let mut properties = PropStore::Auto;
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            match name {
                "path" => {
                    let s = self.string(&full, value)?;
                    if !super::cgi::is_url_prefix(s) {
                        let what = "a URL prefix starting with \"/\" without \".\", \"..\" or empty segments";
                        return Err(self.expected(value, &full, what));
                    }
                    let mut s = s.to_string();
                    if !s.ends_with('/') {
                        s.push('/');
                    }
                    path = Some(s);
                }
                "root" => {
                    let p = self.path(&full, value)?;
                    root = Some(self.existing_dir(&full, value, &p, "the WebDAV root")?);
                }
                "read_only" => read_only = self.boolean(&full, value)?,
                "max_upload" => max_upload = Some(self.size(&full, value, 0, u64::MAX)?),
                "locks" => locks = self.boolean(&full, value)?,
                "listing_cache" => listing_cache = self.duration(&full, value, true)?,
                "fsync" => fsync = self.boolean(&full, value)?,
                "properties" => {
                    properties = match self.string(&full, value)? {
                        "auto" => PropStore::Auto,
                        "xattr" => PropStore::Xattr,
                        "sidecar" => PropStore::Sidecar,
                        _ => {
                            let what = "one of \"auto\", \"xattr\", \"sidecar\"";
                            return Err(self.expected(value, &full, what));
                        }
                    }
                }
                _ => return Err(self.unknown(key, section, WEBDAV_KEYS)),
            }
        }
        let Some(path) = path else {
            return Err(self.fail(item, section, "needs path = \"/dav/\""));
        };
        let Some(root) = root else {
            return Err(self.fail(item, section, "needs root = \"/srv/dav\""));
        };
        Ok(WebdavRule {
            path,
            root,
            read_only,
            max_upload,
            locks,
            listing_cache,
            fsync,
            properties,
        })
    }
}
