//! The files brisk itself reads or writes (the configuration, password
//! files, TLS keys and certificates, the `mime_types` file, servlet
//! sources, the pid file and log files): never served, even when they lie
//! under a document root (see `crate::handlers::protected`), and named in
//! a warning at start-up and by `--check-config` when they do.
//!
//! `[errors]` pages are not among them: they are meant to be seen.

use std::path::{Path, PathBuf};

use super::{CgiTarget, Config, LogTarget, SiteConfig};
use crate::http::glob::PathMatch;

/// Servlet sources looked at under each site's servlet directories at
/// most: a tree larger than that is not one of servlets.
const SERVLET_FILES: usize = 4096;

impl Config {
    /// Every file brisk reads or writes by its configuration, with what
    /// it is for messages (`auth[1].htpasswd`); files that do not exist
    /// (yet) included.
    pub fn own_files(&self) -> Vec<(PathBuf, String)> {
        self.own_files_with(true)
    }

    /// [`Config::own_files`], with the servlet sources or without them.
    pub fn own_files_with(&self, servlet_sources: bool) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        if let Some(f) = &self.config_file {
            out.push((f.clone(), "the configuration file".to_string()));
        }
        if let Some(tls) = &self.tls {
            out.extend(tls.files());
        }
        if let Some(f) = self.acme().and_then(|a| a.eab_hmac_key_file.as_ref()) {
            out.push((f.clone(), "acme.eab_hmac_key_file".to_string()));
        }
        if let Some(p) = &self.pid_file {
            out.push((p.clone(), "the pid file".to_string()));
        }
        for (t, key) in [
            (&self.log.access, "log.access"),
            (&self.log.error, "log.error"),
        ] {
            if let LogTarget::File(p) = t {
                out.push((p.clone(), key.to_string()));
            }
        }
        for (table, site) in SiteConfig::all_keyed(self) {
            if let Some(m) = &site.static_files.mime_types {
                out.push((m.path.clone(), format!("{table}static.mime_types")));
            }
            for (j, rule) in site.auth.iter().enumerate() {
                out.push((
                    rule.htpasswd.clone(),
                    format!("{table}auth[{}].htpasswd", j + 1),
                ));
            }
            // (A build without servlets refuses `enable = true`: known
            // false there, so that the walk is left out of it.)
            if cfg!(feature = "servlets") && servlet_sources && site.servlets.enable {
                let mut left = SERVLET_FILES;
                for prefix in &site.servlets.paths {
                    let dir = site.root.join(prefix.trim_start_matches('/'));
                    lua_files(&dir, &mut left, &mut out, &table);
                }
            }
        }
        out
    }

    /// An error when a directory of secrets brisk writes while it runs
    /// lies beneath a document root: `[acme] storage` (the account's and
    /// the certificates' keys) and the directory of `[tls] ticket_keys`
    /// (the keys, their lock). Files appear there by rename as brisk runs,
    /// so they cannot be told by their identity as [`Config::own_files`]
    /// are: they must live elsewhere.
    pub(super) fn secrets_outside_roots(&self) -> Result<(), String> {
        // (dir, its key, what it holds, whether beneath it too: the ACME
        // storage is a tree; the ticket keys lie in their directory.)
        let mut dirs: Vec<(&Path, String, &str, bool)> = Vec::new();
        #[cfg(feature = "acme")]
        if let Some(a) = self.acme() {
            let what = "its account and certificate keys";
            dirs.push((&a.storage, format!("{}.storage", a.origin), what, true));
        }
        if let Some(k) = self.tls.as_ref().and_then(|t| t.ticket_keys()) {
            let what = "the session-ticket keys";
            let dir = k.file.parent().unwrap_or(&k.file);
            dirs.push((dir, k.origin.clone(), what, false));
        }
        let trees = self.served_trees();
        for (dir, origin, what, tree) in dirs {
            let real = beneath_existing(dir);
            if let Some((root, kind)) = trees.iter().find(|(root, _)| real.starts_with(root)) {
                return Err(format!(
                    "{origin}: {} lies beneath the {kind} {}, where {what} could be served: put it outside every root",
                    dir.display(),
                    root.display()
                ));
            }
            // A root inside the storage serves what lies beneath it (its
            // keys at `<root>/certs/<name>/key.pem`, say).
            let inside = |root: &Path| tree && beneath_existing(root).starts_with(&real);
            if let Some((root, kind)) = trees.iter().find(|(root, _)| inside(root)) {
                return Err(format!(
                    "{origin}: the {kind} {} lies beneath {}, where {what} could be served from it: put every root outside it",
                    root.display(),
                    dir.display()
                ));
            }
        }
        Ok(())
    }

    /// Every tree requests reach: each site's document root, and each
    /// `[[webdav]]` root (which clients also write in), with what it is.
    fn served_trees(&self) -> Vec<(&Path, &'static str)> {
        let mut trees = Vec::new();
        for site in SiteConfig::all(self) {
            trees.push((site.root.as_path(), "document root"));
            trees.extend(
                site.webdav
                    .iter()
                    .map(|r| (r.root.as_path(), "WebDAV root")),
            );
        }
        trees
    }

    /// Has each site match paths in any case where its trees lie on a
    /// filesystem that finds names whatever their case (its `folding`,
    /// with `webdav`; without it paths are matched as spelt). `blind`
    /// hears of each such part that cannot be served ([`Config::case_blind`]):
    /// the site's index (0 the default), the `[[webdav]]` tree's (`None`
    /// the document root), the directory and why; its error ends the
    /// walk, with nothing set.
    pub fn fold_case<E>(
        &mut self,
        mut blind: impl FnMut(usize, Option<usize>, &Path, String) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut folded = Vec::new();
        for (i, site) in SiteConfig::all(self).enumerate() {
            let mut areas = Vec::new();
            for (tree, dir, area) in site.folding_areas() {
                if let Some(why) = self.case_blind(site, &dir, &area) {
                    blind(i, tree, &dir, why)?;
                }
                areas.push((tree, area));
            }
            let trees = site.webdav.iter().map(|r| r.path.clone()).collect();
            folded.push(crate::http::glob::Folding::new(trees, areas));
        }
        #[cfg(feature = "webdav")]
        for (site, folding) in std::iter::once(&mut self.site)
            .chain(&mut self.sites)
            .zip(folded)
        {
            site.folding = folding;
        }
        // (Without `webdav`, paths are matched as spelt: `Folding::covers`.)
        #[cfg(not(feature = "webdav"))]
        drop(folded);
        Ok(())
    }

    /// Why the directory `dir` of one of `site`'s trees, served at the
    /// URL prefix `area`, on a filesystem that finds a name whatever its
    /// case (exFAT, vfat, SMB: `sys::fs::folding_dirs`), cannot be served
    /// with this configuration. `[[auth]]`, `[[access]]` and
    /// `[[rate_limit]]` match paths there in any case
    /// (`PathMatch::matches_in`), but the rules that run programs do
    /// not: `/CGI-BIN/x.cgi` or `/x.PHP` would be a script's source, so a
    /// program rule that may reach into the area is refused. A spelling
    /// of one of brisk's own files other than its own would not be told
    /// by its identity through FUSE, so none may lie beneath it. `None`
    /// when it can be served.
    pub fn case_blind(&self, site: &SiteConfig, dir: &Path, area: &str) -> Option<String> {
        // (Without `webdav` the only such part is a whole document root,
        // which every rule reaches.)
        let reaches = |m: &PathMatch| !cfg!(feature = "webdav") || m.reaches(area);
        let mut rules: Vec<String> = Vec::new();
        for rule in &site.cgi {
            let m = match &rule.target {
                CgiTarget::Dir { url, .. } | CgiTarget::Program { url, .. } => {
                    PathMatch::Prefix(url.clone())
                }
                CgiTarget::Pattern(p) => PathMatch::Glob(p.clone()),
            };
            if reaches(&m) {
                rules.push(format!("[[cgi]] {m}"));
            }
        }
        let fastcgi = site.fastcgi.iter().filter(|r| reaches(&r.matches));
        rules.extend(fastcgi.map(|r| format!("[[fastcgi]] {}", r.matches)));
        if cfg!(feature = "servlets") && site.servlets.enable {
            let paths = site.servlets.paths.iter();
            let reaching = paths.filter(|p| reaches(&PathMatch::Prefix(p.to_string())));
            rules.extend(reaching.map(|p| format!("[servlets] path {p}")));
        }
        // (Without `webdav`, rules match paths as spelt everywhere:
        // `Folding::covers`. One for all of it is no such rule.)
        if !cfg!(feature = "webdav") {
            let auth = site.auth.iter().map(|r| ("auth", &r.matcher));
            let access = site.admission.access.iter().map(|r| ("access", &r.matcher));
            let rate = site
                .admission
                .rate
                .iter()
                .map(|r| ("rate_limit", &r.matcher));
            for (kind, m) in auth.chain(access).chain(rate) {
                if !matches!(m, PathMatch::Prefix(p) if area.starts_with(p.as_str())) {
                    rules.push(format!("[[{kind}]] {m}"));
                }
            }
        }
        if let Some(rule) = rules.first() {
            return Some(format!(
                "its {rule} rule would not take a path spelt in another case (`/PRIVATE/x` for `/private/x`, `/X.PHP` for `/x.php`): keep it out of there"
            ));
        }
        let own = self
            .own_files_with(false)
            .into_iter()
            .find(|(f, _)| canonical(f).is_some_and(|real| real.starts_with(dir)));
        own.map(|(f, what)| {
            format!(
                "{} ({what}) lies beneath it, where its name in another case would not be told from another file: move it out",
                f.display()
            )
        })
    }

    /// What may be a mistake though the configuration is valid, said at
    /// start, at a reload and by `--check-config`: brisk's own files
    /// beneath a root ([`Config::own_files_under_roots`]), `[[access]]`
    /// and `[[auth]]` rules an earlier one hides, site names that get no
    /// certificate from `[acme]`, `[[fastcgi]]` rules that would run a
    /// site's images as scripts, an `unknown_host` that leaves the default
    /// site no request, certificates expired or not valid yet, private
    /// keys every user may read.
    #[cold]
    pub fn warnings(&self) -> Vec<String> {
        let mut all = self.own_files_under_roots();
        all.extend(super::admission::hidden_guards(self));
        #[cfg(all(feature = "webdav", feature = "sites"))]
        all.extend(super::webdav::half_guarded(self));
        // (`[proxy]` is refused without the feature `ops`.)
        #[cfg(feature = "ops")]
        all.extend(super::admission::trusting_everyone(self));
        all.extend(super::throttle::idle_connection_rates(self));
        all.extend(super::upstream::fastcgi_warnings(self));
        #[cfg(feature = "sites")]
        all.extend(super::site::unknown_host_warnings(self));
        #[cfg(feature = "tls")]
        let all = {
            let mut all = all;
            let now = crate::tls::certs::now();
            for c in self.tls.iter().flat_map(|t| &t.certificates) {
                all.extend(c.validity_warning(now));
                all.extend(crate::tls::certs::key_warning(&c.files.key));
            }
            all
        };
        #[cfg(feature = "acme")]
        let all = {
            let mut all = all;
            all.extend(self.acme.iter().flat_map(|a| a.unordered.iter().cloned()));
            all
        };
        all
    }

    /// A warning for each of [`Config::own_files`] that lies under a
    /// document root or a WebDAV root (by its canonical path): it is
    /// never served (nor changed by WebDAV) there, but it should not be
    /// there.
    pub fn own_files_under_roots(&self) -> Vec<String> {
        let trees = self.served_trees();
        let mut out = Vec::new();
        // (Servlet sources are meant to be under the root.)
        for (file, what) in self.own_files_with(false) {
            let Some(real) = canonical(&file) else {
                continue;
            };
            let mut seen = Vec::new();
            for (root, kind) in &trees {
                if real.starts_with(root) && !seen.contains(root) {
                    seen.push(*root);
                    out.push(format!(
                        "{} ({what}) lies under the {kind} {}: brisk never serves it \
                         (it answers 404) nor lets WebDAV change it, but move it out of the root",
                        file.display(),
                        root.display()
                    ));
                }
            }
        }
        out
    }
}

/// `file`'s canonical path; for a file not made yet, its directory's
/// canonical path and its name.
fn canonical(file: &Path) -> Option<PathBuf> {
    if let Ok(p) = crate::sys::fs::canonical(file) {
        return Some(p);
    }
    let dir = crate::sys::fs::canonical(file.parent()?).ok()?;
    Some(dir.join(file.file_name()?))
}

/// `path` made canonical as far as it exists (the rest, not made yet,
/// joined as written).
fn beneath_existing(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = crate::sys::fs::canonical(at) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The `.lua` files beneath `dir` (at most `left` more), as servlet
/// sources.
fn lua_files(dir: &Path, left: &mut usize, out: &mut Vec<(PathBuf, String)>, table: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if *left == 0 {
            return;
        }
        *left -= 1;
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            lua_files(&path, left, out, table);
        } else if path.extension().is_some_and(|x| x == "lua") {
            out.push((path, format!("{table}servlets: a servlet")));
        }
    }
}
