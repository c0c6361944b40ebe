//! The kernel sandbox: which paths Landlock allows (and for which
//! setting), opening them before the privilege drop, applying Landlock
//! and seccomp, and checking a reload against what was applied.

use std::path::{Path, PathBuf};

use super::allowed::{effective, Allowed};
use super::Notes;
use crate::config::{CgiTarget, Config, Level, LogTarget, SiteConfig};
use crate::process::Error;
use crate::sys::privileged::Grants;
use crate::sys::privileges;
use crate::sys::sandbox::{self, fs_access, Extra, RulePath, Ruleset};
use crate::sys::syscalls;

/// Directories a CGI program typically needs to start: its interpreter,
/// shared libraries, and `/etc` (ld.so.cache, locale, passwd for `id`).
const SYSTEM_DIRS: &[&str] = &["/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc"];

/// Read-only for CGI programs: language runtimes read `/proc/self`.
const PROC: &str = "/proc";

/// Device files scripts use (`2>/dev/null`, random numbers).
const DEVICES: &[(&str, u64)] = &[
    ("/dev/null", fs_access::READ_FILE | fs_access::WRITE_FILE),
    ("/dev/zero", fs_access::READ_FILE),
    ("/dev/urandom", fs_access::READ_FILE),
];

/// One Landlock rule: a path, the rights beneath it, and the setting it
/// serves, so that an error can say which one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// As configured (outside any chroot).
    pub path: PathBuf,
    /// `fs_access` rights beneath it (or on it, for a file).
    pub rights: u64,
    /// The setting that needs it: `root`, `cgi[1].dir`, `auth[2].htpasswd`…
    pub what: String,
    /// Skipped when missing (system directories not every system has);
    /// every other path was checked when the configuration loaded.
    pub optional: bool,
}

impl Rule {
    pub(super) fn new(path: impl Into<PathBuf>, rights: u64, what: impl Into<String>) -> Rule {
        Rule {
            path: path.into(),
            rights,
            what: what.into(),
            optional: false,
        }
    }
}

/// What CGI programs may do beneath a `writable` directory: read, write,
/// truncate, create and remove files and directories, and move them
/// around inside it (git renames objects across directories: REFER). Not
/// run what they find there, nor make symlinks, devices, FIFOs or sockets.
pub const WRITABLE: u64 = fs_access::READ_FILE
    | fs_access::READ_DIR
    | fs_access::WRITE_FILE
    | fs_access::TRUNCATE
    | fs_access::MAKE_REG
    | fs_access::MAKE_DIR
    | fs_access::REMOVE_FILE
    | fs_access::REMOVE_DIR
    | fs_access::REFER;

/// The rules for the `writable` directories `set`, each named after the
/// first `[[cgi]]` rule that lists it.
fn writable_rules(cfg: &Config, set: &[PathBuf]) -> Vec<Rule> {
    set.iter()
        .map(|dir| {
            let first = SiteConfig::all_keyed(cfg).find_map(|(prefix, site)| {
                let i = site.cgi.iter().position(|r| r.writable.contains(dir))?;
                Some(format!("{prefix}cgi[{}].writable", i + 1))
            });
            Rule::new(
                dir,
                WRITABLE,
                first.unwrap_or_else(|| "cgi[0].writable".into()),
            )
        })
        .collect()
}

/// The distinct `writable` sets of the `[[cgi]]` rules, in file order:
/// one CGI launcher each.
pub fn writable_sets(cfg: &Config) -> Vec<Vec<PathBuf>> {
    let mut sets: Vec<Vec<PathBuf>> = Vec::new();
    for rule in SiteConfig::all(cfg).flat_map(|site| &site.cgi) {
        if !sets.contains(&rule.writable) {
            sets.push(rule.writable.clone());
        }
    }
    sets
}

/// The file rules of a sandbox, from `cfg` as configured (outside any
/// chroot: the paths are opened before it). With `programs`, the sandbox
/// is the one CGI programs inherit (a CGI launcher's): they may also run
/// the scripts and interpreters, read and run the system directories
/// (those inside the jail, with `chroot`), and write beneath the
/// `writable` directories given (those of the rules this launcher starts
/// programs for). With `privileged`, a separate process reopens the logs
/// and removes the pid file, so the server needs no rights on them.
/// Every site's root, CGI paths, htpasswd and types files are in it, and
/// nothing else of theirs.
pub fn landlock_rules(cfg: &Config, programs: Option<&[PathBuf]>, privileged: bool) -> Vec<Rule> {
    use fs_access::*;
    let writable = programs;
    let programs = programs.is_some();
    let read = READ_FILE | READ_DIR;
    let exec = if programs { EXECUTE } else { 0 };
    let mut rules = Vec::new();
    for (prefix, site) in SiteConfig::all_keyed(cfg) {
        // A `pattern` rule runs scripts found anywhere under the root.
        let patterns = site
            .cgi
            .iter()
            .any(|r| matches!(r.target, CgiTarget::Pattern(_)));
        let root_rights = if patterns { read | exec } else { read };
        rules.push(Rule::new(&site.root, root_rights, format!("{prefix}root")));
        if !programs {
            // The `[[webdav]]` trees: the server's only writable trees
            // apart from its own files (logs, temp_dir, ACME storage).
            for (i, rule) in site.webdav.iter().enumerate() {
                let rights = if rule.read_only { read } else { WRITABLE };
                rules.push(Rule::new(
                    &rule.root,
                    rights,
                    format!("{prefix}webdav[{}].root", i + 1),
                ));
            }
        }
        for (i, rule) in site.cgi.iter().enumerate() {
            let n = i + 1;
            match &rule.target {
                CgiTarget::Dir { dir, .. } => {
                    rules.push(Rule::new(dir, read | exec, format!("{prefix}cgi[{n}].dir")));
                }
                CgiTarget::Program { program, .. } => rules.push(Rule::new(
                    program,
                    READ_FILE | exec,
                    format!("{prefix}cgi[{n}].program"),
                )),
                CgiTarget::Pattern(_) => {}
            }
            if let (Some(i), true) = (&rule.interpreter, programs) {
                rules.push(Rule::new(
                    i,
                    READ_FILE | EXECUTE,
                    format!("{prefix}cgi[{n}].interpreter"),
                ));
            }
        }
    }
    if programs && cfg.any_cgi() {
        // Inside a chroot, programs find their system where it is.
        let system = |p: &str| match &cfg.chroot {
            Some(jail) => jail.join(p.trim_start_matches('/')),
            None => PathBuf::from(p),
        };
        let mut optional = |path: PathBuf, rights: u64| {
            rules.push(Rule {
                optional: true,
                ..Rule::new(path, rights, "a system directory CGI programs need")
            })
        };
        for d in SYSTEM_DIRS {
            optional(system(d), read | EXECUTE);
        }
        for (d, a) in DEVICES {
            optional(system(d), *a);
        }
        optional(system(PROC), read);
    }
    rules.extend(writable_rules(cfg, writable.unwrap_or_default()));
    for (prefix, site) in SiteConfig::all_keyed(cfg) {
        // htpasswd files are read by the workers and again when they
        // change; tools that replace the file (write a new one, rename it
        // over) make a new inode, so the right is on the directory:
        // reading files there, not listing it.
        for (i, rule) in site.auth.iter().enumerate() {
            let what = format!("{prefix}auth[{}].htpasswd", i + 1);
            rules.push(Rule::new(&rule.htpasswd, READ_FILE, what.clone()));
            if let Some(dir) = rule.htpasswd.parent() {
                rules.push(Rule::new(dir, READ_FILE, format!("{what} (its directory)")));
            }
        }
        // Read again on each reload. The right is on the file alone, not
        // on its directory (that would be all of /etc): a file replaced
        // since start (a package upgrade renames a new one over it) is a
        // new inode it does not cover, and the reload says so.
        if let (Some(types), false) = (&site.static_files.mime_types, programs) {
            let what = format!("{prefix}static.mime_types");
            if !rules.iter().any(|r| r.path == types.path) {
                rules.push(Rule::new(&types.path, READ_FILE, what));
            }
        }
        if !programs {
            rules.extend(upstream_roots_rules(&prefix, &site.reverse_proxy, &rules));
        }
    }
    if let (Some(acme), false) = (cfg.acme(), programs) {
        // The ACME thread's account, certificates and locks.
        rules.push(Rule::new(&acme.storage, WRITABLE, "acme.storage"));
        // Read again on each reload (the right on the file alone, as for
        // `mime_types`).
        if let Some(file) = &acme.eab_hmac_key_file {
            rules.push(Rule::new(file, READ_FILE, "acme.eab_hmac_key_file"));
        }
    }
    if let (Some(dir), false) = (ticket_keys(cfg).and_then(Path::parent), programs) {
        // The session-ticket keys: read again when they change, written
        // whole (a new file renamed over them, the directory synced)
        // beside their lock file.
        let rights = fs_access::READ_FILE
            | fs_access::READ_DIR
            | fs_access::WRITE_FILE
            | fs_access::MAKE_REG
            | fs_access::REMOVE_FILE;
        rules.push(Rule::new(dir, rights, TICKET_KEYS_DIR));
    }
    if !programs && (cfg.holds_bodies() || cfg.holds_answers()) {
        // Bodies held whole (`handlers::spool`: a chunked one for a CGI
        // program or a FastCGI script, any with `buffer_request`), and
        // answers read ahead of slow clients (`buffer_answer`): unnamed
        // O_TMPFILE files, which Landlock lets a process make and use with
        // these two rights alone; without MAKE_REG no named file can be
        // made there. (For answers alone, a `temp_dir` that is not there
        // is none: they go as the client takes them.)
        let mut rule = Rule::new(&cfg.temp_dir, READ_FILE | WRITE_FILE, "temp_dir");
        rule.optional = !cfg.holds_bodies();
        rules.push(rule);
    }
    // With a privileged helper, the helper reads them (they are often
    // root's only); without one, the server does, as the same user that
    // read them at start.
    if let (Some(tls), false, false) = (&cfg.tls, privileged, programs) {
        rules.extend(tls_rules(&tls.files()));
    }
    if !privileged {
        let logs = [
            (&cfg.log.access, "log.access"),
            (&cfg.log.error, "log.error"),
        ];
        let logs = logs.into_iter().filter_map(|(t, key)| match t {
            LogTarget::File(file) => Some((file.as_path(), key)),
            _ => None,
        });
        rules.extend(log_rules(logs, cfg.pid_file.as_deref()));
    }
    // Read again on SIGHUP (never inside a chroot). Editors save by writing
    // a new file and renaming it over the old one, so the right is on the
    // directory, as for the htpasswd files: reading files there, not
    // listing it.
    if let (Some(file), None) = (&cfg.config_file, &cfg.chroot) {
        rules.push(Rule::new(file, READ_FILE, "the configuration file"));
        if let Some(dir) = file.parent() {
            rules.push(Rule::new(
                dir,
                READ_FILE,
                "the configuration file (its directory)",
            ));
        }
    }
    rules
}

/// The setting the ticket keys' directory is allowed for.
const TICKET_KEYS_DIR: &str = "tls.ticket_keys (its directory)";

/// `[tls] ticket_keys`, if set.
fn ticket_keys(cfg: &Config) -> Option<&Path> {
    Some(&cfg.tls.as_ref()?.ticket_keys()?.file)
}

/// What reading the TLS files again (SIGHUP, a renewal) takes: the file,
/// and reading files in its directory, since renewals write a new file
/// and rename it over the old one (a new inode); for a symlink (certbot's
/// `live/` into `archive/`), reading in its target's directory too, where
/// the next renewal puts the next file.
/// The roots https upstreams are verified against, read again on each
/// reload (the right on each file alone, as for `mime_types`): each
/// rule's `ca`, and the system's bundle that was read (none when it is
/// granted already, in `have`).
#[cfg(feature = "tls")]
fn upstream_roots_rules(
    prefix: &str,
    proxy: &[crate::config::ProxyRule],
    have: &[Rule],
) -> Vec<Rule> {
    use crate::tls::client::SYSTEM_BUNDLES;
    let mut rules: Vec<Rule> = Vec::new();
    let granted =
        |rules: &[Rule], path: &std::path::Path| have.iter().chain(rules).any(|r| r.path == path);
    for (i, rule) in proxy.iter().enumerate() {
        if rule.tls_client.is_none() || !rule.tls_verify {
            continue;
        }
        if let Some(ca) = rule.ca.as_ref().filter(|ca| !granted(&rules, ca)) {
            let what = format!("{prefix}reverse_proxy[{}].ca", i + 1);
            rules.push(Rule::new(ca, fs_access::READ_FILE, what));
        }
        let system = SYSTEM_BUNDLES
            .iter()
            .map(std::path::Path::new)
            .find(|p| p.is_file());
        if let Some(bundle) = system.filter(|b| !granted(&rules, b)) {
            let what = "the system's roots (https upstreams)";
            rules.push(Rule::new(bundle, fs_access::READ_FILE, what));
        }
    }
    rules
}

/// (Without the feature `tls` there are no https upstreams.)
#[cfg(not(feature = "tls"))]
fn upstream_roots_rules(_: &str, _: &[crate::config::ProxyRule], _: &[Rule]) -> Vec<Rule> {
    Vec::new()
}

pub(super) fn tls_rules(files: &[(PathBuf, String)]) -> Vec<Rule> {
    use fs_access::*;
    let mut rules = Vec::new();
    for (file, key) in files {
        rules.push(Rule::new(file, READ_FILE, key.clone()));
        let dirs = [
            (file.parent().map(Path::to_path_buf), "its directory"),
            (
                crate::sys::fs::canonical(file)
                    .ok()
                    .and_then(|t| t.parent().map(Path::to_path_buf)),
                "the directory it links to",
            ),
        ];
        for (dir, what) in dirs.into_iter().filter_map(|(d, w)| Some((d?, w))) {
            if !rules.iter().any(|r| r.path == dir) {
                rules.push(Rule::new(dir, READ_FILE, format!("{key} ({what})")));
            }
        }
    }
    rules
}

/// What writing the logs takes: appending to each file (named by its
/// setting), creating it anew in its directory (a rename-style rotation),
/// and removing the pid file at the end.
fn log_rules<'a>(
    logs: impl Iterator<Item = (&'a Path, &'a str)>,
    pid_file: Option<&Path>,
) -> Vec<Rule> {
    use fs_access::*;
    let mut rules = Vec::new();
    for (file, key) in logs {
        rules.push(Rule::new(file, WRITE_FILE, key));
        if let Some(dir) = file.parent() {
            rules.push(Rule::new(
                dir,
                WRITE_FILE | MAKE_REG,
                format!("{key} (its directory)"),
            ));
        }
    }
    if let Some(dir) = pid_file.and_then(Path::parent) {
        rules.push(Rule::new(dir, REMOVE_FILE, "pid_file (its directory)"));
    }
    rules
}

/// Warns when a directory the sandbox lets the server or CGI programs
/// write beneath (a log directory, `temp_dir`, `[acme] storage`, a
/// `writable` one) holds
/// files brisk serves or runs.
fn note_writable_trees(rules: &[Rule], notes: &mut Notes) {
    let reads = |r: &&Rule| {
        r.rights & fs_access::READ_DIR != 0
            && !r.optional
            && !r.what.ends_with(".writable")
            && r.what != "acme.storage"
            && r.what != TICKET_KEYS_DIR
            && !is_webdav(r)
    };
    let writable = |r: &&Rule| {
        r.rights & fs_access::WRITE_FILE != 0
            && (r.rights & fs_access::MAKE_REG != 0 || r.what == "temp_dir")
    };
    for dir in rules.iter().filter(writable) {
        if rules
            .iter()
            .filter(reads)
            .any(|t| t.path.starts_with(&dir.path))
        {
            let own = [TICKET_KEYS_DIR, "temp_dir", "acme.storage"];
            let (what, advice) = if own.contains(&&dir.what[..]) {
                (dir.what.clone(), "give it a directory of its own")
            } else if dir.what.ends_with(".writable") {
                (
                    dir.what.clone(),
                    "CGI programs could change what is served or run",
                )
            } else if is_webdav(dir) {
                (
                    dir.what.clone(),
                    "WebDAV clients could change what is served",
                )
            } else {
                (
                    "the log directory".to_string(),
                    "keep logs in a directory of their own",
                )
            };
            let note = format!(
                "sandbox: {what} {} contains the document root or a CGI directory, so files beneath them stay writable; {advice}",
                dir.path.display()
            );
            // (The access and error logs in one directory: said once.)
            if !notes.iter().any(|(_, n)| *n == note) {
                notes.push((Level::Warn, note));
            }
        }
    }
}

/// A sandbox ready to be applied: its rule paths already opened, while
/// the process can still reach them.
pub struct Plan {
    /// `None` when the kernel has no Landlock.
    landlock: Option<Opened>,
    /// For CGI programs (no seccomp filter, TCP and signals allowed).
    programs: bool,
    /// The TCP ports of the `[[reverse_proxy]]` upstreams and of the
    /// ACME CA, connected to; `None` without either (no socket is made
    /// then).
    upstreams: Option<Vec<u16>>,
    /// Whether the ACME thread talks to a CA (`[acme]` naming a public
    /// name; not when `hosts` names only local names).
    asks_ca: bool,
    /// Files shared by a fleet are written (`[acme]`, `[tls] ticket_keys`).
    storage: bool,
    /// A `[[webdav]]` rule reads (and maybe writes) extended attributes.
    xattrs: bool,
    /// PUT bodies go into their files through pipes (a `[[webdav]]` tree
    /// is written).
    pipes: bool,
    /// A summary for the error log.
    summary: String,
}

/// Opens every path of the sandbox that `cfg` asks for (see
/// `landlock_rules`); call it before `chroot` and the user switch, so
/// that a document root beneath a directory the serving user cannot
/// enter is still confined. A path that cannot be opened is an error
/// naming it and the setting.
pub fn prepare(
    cfg: &Config,
    programs: Option<&[PathBuf]>,
    privileged: bool,
) -> Result<Plan, Error> {
    let rules = landlock_rules(cfg, programs, privileged);
    let programs = programs.is_some();
    // (Where a file is read again, its directory's files may be read,
    // not listed: no site root can be there.)
    let auth = SiteConfig::all(cfg).any(|site| !site.auth.is_empty());
    let config_dir = cfg.config_file.is_some() && cfg.chroot.is_none();
    let summary = format!(
        "read-only beneath the document root{}{}{}{}; {}",
        if cfg.sites.is_empty() {
            ""
        } else {
            "s of every site"
        },
        if !cfg.any_cgi() {
            ""
        } else {
            ", CGI directories"
        },
        if auth {
            "; files read in the htpasswd files' directories"
        } else {
            ""
        },
        if config_dir {
            "; files read in the configuration file's directory"
        } else {
            ""
        },
        writes(&rules),
    );
    Ok(Plan {
        landlock: open_rules(rules)?,
        programs,
        upstreams: cfg.connect_ports(),
        asks_ca: cfg.asks_a_ca(),
        storage: cfg.acme().is_some() || ticket_keys(cfg).is_some() || writes_webdav(cfg),
        xattrs: SiteConfig::all(cfg).any(|site| !site.webdav.is_empty()),
        pipes: writes_webdav(cfg),
        summary,
    })
}

/// Landlock rules with their paths opened, and the kernel's Landlock ABI.
type Opened = (u32, Vec<(Rule, RulePath)>);

/// Opens the paths of `rules`; `None` when the kernel has no Landlock.
fn open_rules(rules: Vec<Rule>) -> Result<Option<Opened>, Error> {
    let Some(abi) = sandbox::landlock_abi() else {
        return Ok(None);
    };
    let mut opened = Vec::with_capacity(rules.len());
    for rule in rules {
        match RulePath::open(&rule.path) {
            Ok(Some(p)) => opened.push((rule, p)),
            Ok(None) if rule.optional => {}
            Ok(None) => {
                return Err(rule_error(&rule, None));
            }
            Err(e) => return Err(rule_error(&rule, Some(e))),
        }
    }
    Ok(Some((abi, opened)))
}

/// Builds the Landlock ruleset of `rules` and enforces it on the calling
/// thread (and what it starts afterwards).
fn enforce(rules: &[(Rule, RulePath)], extra: Extra, ports: &[u16]) -> Result<(), Error> {
    let mut ruleset = Ruleset::new(extra)
        .map_err(|e| failed("cannot create a Landlock ruleset", e))?
        .ok_or(Error::LandlockGone)?;
    for (rule, path) in rules {
        ruleset
            .allow(path, rule.rights)
            .map_err(|e| rule_error(rule, Some(e)))?;
    }
    for &port in ports {
        ruleset
            .allow_connect(port)
            .map_err(|e| failed("cannot allow connections to an upstream's port", e))?;
    }
    ruleset
        .restrict_self()
        .map_err(|e| failed("cannot enforce the Landlock rules", e))
}

fn failed(what: &'static str, source: std::io::Error) -> Error {
    Error::Sandbox { what, source }
}

/// Whether `rule` is a `[[webdav]]` rule's root.
fn is_webdav(rule: &Rule) -> bool {
    rule.what.contains("webdav[")
}

/// Where a sandbox with `rules` lets the process write, for its summary.
fn writes(rules: &[Rule]) -> String {
    let writing = |r: &&Rule| r.rights & fs_access::WRITE_FILE != 0 && !r.optional;
    let mut places = Vec::new();
    if rules
        .iter()
        .filter(writing)
        .any(|r| r.what.starts_with("log."))
    {
        places.push("the logs".to_string());
    }
    if let Some(t) = rules.iter().filter(writing).find(|r| r.what == "temp_dir") {
        places.push(format!(
            "unnamed files in {} (request bodies and answers held)",
            t.path.display()
        ));
    }
    if let Some(a) = rules
        .iter()
        .filter(writing)
        .find(|r| r.what == "acme.storage")
    {
        places.push(format!("the ACME storage {}", a.path.display()));
    }
    if let Some(t) = rules.iter().find(|r| r.what == TICKET_KEYS_DIR) {
        places.push(format!("the ticket keys' directory {}", t.path.display()));
    }
    let dav: Vec<String> = rules
        .iter()
        .filter(writing)
        .filter(|r| is_webdav(r))
        .map(|r| r.path.display().to_string())
        .collect();
    if !dav.is_empty() {
        places.push(format!("the WebDAV trees {}", dav.join(", ")));
    }
    let programs: Vec<String> = rules
        .iter()
        .filter(writing)
        .filter(|r| r.what.ends_with(".writable"))
        .map(|r| r.path.display().to_string())
        .collect();
    if !programs.is_empty() {
        places.push(format!("beneath {}", programs.join(", ")));
    }
    if places.is_empty() {
        "writes nowhere".to_string()
    } else {
        format!("writes only to {}", places.join(" and "))
    }
}

/// `rule` cannot be added: `source` says why (`None`: its path is
/// missing).
fn rule_error(rule: &Rule, source: Option<std::io::Error>) -> Error {
    Error::SandboxRule {
        path: rule.path.clone(),
        setting: rule.what.clone(),
        source,
    }
}

impl Plan {
    /// What the sandbox will allow once applied.
    pub fn allowed(&self) -> Allowed {
        let Some((abi, rules)) = &self.landlock else {
            return Allowed {
                files: None,
                abi: 0,
                upstreams: self.upstreams.clone(),
                asks_ca: self.asks_ca,
            };
        };
        let files = rules
            .iter()
            .map(|(r, p)| {
                let path = crate::sys::fs::canonical(&r.path).unwrap_or_else(|_| r.path.clone());
                (path, p.is_dir(), effective(*abi, p.is_dir(), r.rights))
            })
            .collect();
        Allowed {
            files: Some(files),
            abi: *abi,
            upstreams: self.upstreams.clone(),
            asks_ca: self.asks_ca,
        }
    }

    /// Applies the sandbox to the calling process (and every thread and
    /// child it starts afterwards). What the kernel does not offer at all
    /// (Landlock before Linux 5.13 or not enabled at boot; seccomp on an
    /// architecture this build does not filter) is noted as a warning;
    /// anything that is there but fails is an error, and the server does
    /// not start.
    pub fn apply(self, notes: &mut Notes) -> Result<(), Error> {
        sandbox::no_new_privs().map_err(|e| failed("cannot set no_new_privs", e))?;
        let allowed = self.system_calls();
        match self.landlock {
            Some((abi, rules)) => {
                // CGI programs may talk to databases (by TCP, or an
                // abstract UNIX socket) and signal their own children,
                // which share their sandbox, but not the server nor
                // anything else outside it: they run as the user the
                // server serves as, so one kill(2) would stop it.
                let extra = Extra {
                    deny_tcp: !self.programs,
                    scope_signals: true,
                    scope_abstract_unix: !self.programs,
                };
                let ports = self.upstreams.as_deref().unwrap_or_default();
                enforce(&rules, extra, ports)?;
                notes.push((
                    Level::Info,
                    format!(
                        "sandbox: Landlock (ABI {abi}) on: {}; {}",
                        self.summary,
                        match self.programs {
                            true => "TCP not confined (CGI programs connect anywhere)".into(),
                            false => sandbox::tcp_confinement(abi, self.upstreams.as_deref()),
                        }
                    ),
                ));
            }
            None => notes.push((
                Level::Warn,
                "sandbox: this kernel has no Landlock (Linux 5.13 or later, with landlock among the boot-time LSMs): files are confined only by the document root checks and file permissions".to_string(),
            )),
        }
        if self.programs {
            return Ok(());
        }
        match sandbox::seccomp_allow_only(&allowed, syscalls::GUARDED) {
            Ok(true) => notes.push((
                Level::Info,
                format!(
                    "sandbox: seccomp on: {} system calls allowed, every other one fails with EPERM",
                    allowed.len()
                ),
            )),
            Ok(false) => notes.push((
                Level::Warn,
                "sandbox: no seccomp filtering on this kernel or architecture; system calls run unconfined"
                    .to_string(),
            )),
            Err(e) => return Err(failed("cannot install the seccomp filter", e)),
        }
        Ok(())
    }
}

impl Plan {
    /// The system calls seccomp lets the server make (without CGI): the
    /// serving ones, and those of what it connects to and of the ACME
    /// thread, only when there is some.
    fn system_calls(&self) -> Vec<libc::c_long> {
        let mut allowed = syscalls::ALLOWED.to_vec();
        if self.upstreams.is_some() {
            allowed.extend_from_slice(syscalls::UPSTREAMS);
        } else if self.pipes {
            allowed.extend_from_slice(syscalls::PIPES);
        }
        if self.storage {
            allowed.extend_from_slice(syscalls::STORAGE);
        }
        if self.asks_ca {
            allowed.extend_from_slice(syscalls::ACME_CA);
        }
        if self.xattrs {
            allowed.extend_from_slice(syscalls::XATTRS);
        }
        allowed
    }
}

/// Whether a `[[webdav]]` rule writes its tree (`fsync`, `renameat2`,
/// `mkdirat`, `linkat`: the calls of [`syscalls::STORAGE`]).
fn writes_webdav(cfg: &Config) -> bool {
    SiteConfig::all(cfg).any(|site| site.webdav.iter().any(|r| !r.read_only))
}

/// The notes that go with `plan` as the server's own sandbox (what it
/// lets the server write, by the paths as seen from outside a chroot:
/// ask before entering it).
pub fn server_notes(cfg: &Config, plan: &Plan, privileged: bool) -> Notes {
    let mut notes = Notes::new();
    if cfg.any_cgi() {
        notes.push((
            Level::Info,
            "sandbox: CGI programs start from a separate process (brisk-cgi) whose sandbox lets them read and run the system directories; the server keeps its own".to_string(),
        ));
    }
    if plan.landlock.is_some() {
        let mut rules = landlock_rules(cfg, None, privileged);
        for set in writable_sets(cfg) {
            rules.extend(writable_rules(cfg, &set));
        }
        note_writable_trees(&rules, &mut notes);
    }
    notes
}

/// Confines `brisk-priv`, in it, just after the fork: it keeps only the
/// capabilities its errands need (opening files whatever their owner,
/// binding ports below 1024) and, with the sandbox on, Landlock lets it
/// only create and append to the log files and remove the pid file (no
/// reading at all), and seccomp only the calls it makes. Landlock and
/// seccomp missing from the kernel are no error here: the server's own
/// sandbox has said so already.
pub fn confine_privileged(grants: &Grants, sandbox_on: bool) -> Result<(), Error> {
    privileges::keep_capabilities(&[
        // (A log file it makes is the serving user's: `fs::own_logs_as`.)
        privileges::CAP_CHOWN,
        privileges::CAP_DAC_OVERRIDE,
        privileges::CAP_NET_BIND_SERVICE,
    ])
    .map_err(Error::Capabilities)?;
    if !sandbox_on {
        return Ok(());
    }
    sandbox::no_new_privs().map_err(|e| failed("cannot set no_new_privs", e))?;
    let logs = grants.logs.iter().map(|p| (p.as_path(), "a log file"));
    let mut rules = log_rules(logs, grants.pid_file.as_deref());
    let tls: Vec<_> = grants
        .tls
        .iter()
        .map(|p| (p.clone(), "a TLS file".to_string()))
        .collect();
    rules.extend(tls_rules(&tls));
    if let Some((_, rules)) = open_rules(rules)? {
        // It binds listeners; it signals nobody.
        let extra = Extra {
            deny_tcp: false,
            scope_signals: true,
            scope_abstract_unix: true,
        };
        enforce(&rules, extra, &[])?;
    }
    sandbox::seccomp_allow_only(syscalls::PRIVILEGED, &[])
        .map_err(|e| failed("cannot install the seccomp filter", e))?;
    Ok(())
}

#[cfg(test)]
mod tests;
