//! The command line: a hand-written parser (a flag library would cost more
//! binary than the whole config module), flag overrides, final checks, and
//! the `--check-config` summary.

use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::jail;
use super::load::{self, Origins, Readable, Source};
use super::proxy::ProxySection;
use super::summary;
use super::tls::{self, CertificateSource, Read, TlsSection};
use super::units::{self, LISTEN_HELP};
use super::{Command, Config, ConfigError, Level, LogTarget, ProxyConfig};

/// The TOML document baked in at build time (`BRISK_DEFAULT_CONFIG`), or
/// empty; see `build.rs`.
pub(super) const BUILT_IN: &str = include_str!(concat!(env!("OUT_DIR"), "/default.toml"));

/// How errors name the baked-in document.
const BUILT_IN_NAME: &str = "<built-in>";

/// `--help`'s line for `--http3`. Every build lists it (the shells'
/// completions are one file for all builds); one without the feature
/// `http3` refuses it by name, as it refuses the `[http3]` table.
macro_rules! http3_help {
    () => {
        "  --http3              serve HTTP/3 over QUIC on the UDP side of every TLS
                       address too ([http3] enable = true; needs HTTPS)
"
    };
}

/// `--help`.
const USAGE: &str = concat!(
    "\
Usage: brisk [OPTIONS]

Serves static files, CGI programs and Lua servlets over HTTP/1.1, HTTPS and
HTTP/2 (builds without the tls, http2 or servlets features lack those).
Without --config, the built-in configuration is used (by default: the current
directory on 127.0.0.1:8080). Flags override the configuration file. Both
`--flag value` and `--flag=value` are accepted.

Options:
  --config FILE        read the configuration from this TOML file
  --listen ADDR        listen on ADDR; repeat for several; replaces the file's
                       whole `listen` list. ADDR is IPv4:PORT (127.0.0.1:8080),
                       [IPv6]:PORT ([::1]:8080), or PORT alone (0.0.0.0:PORT)
  --port N             listen on port N at every address of `listen` (by
                       default 127.0.0.1); 0 picks a free port. Not together
                       with --listen, which names its own ports
  --root DIR           serve files from DIR
  --autoindex          list the directories that have no index file
  --workers N          worker threads, 0 = one per CPU core (at most 1024)
  --daemon             run in the background; both logs must then go to
                       files or be off (a daemon has no stdout or stderr)
  --pid-file FILE      write the process id to FILE
  --log-level LEVEL    error log level: off, error, warn, info, debug
  --access-log TARGET  access log: a file path, - (stdout), or off
  --error-log TARGET   error log: a file path, - (stderr), or off
  --user NAME|UID      once listening, switch to this user (needs root)
  --group NAME|GID     and to this group (default: the user's primary group;
                       needed for a UID with no entry in the user database)
  --allow-root         serve as root when no other user is given; without
                       it, brisk started as root serves as nobody
  --no-sandbox         do not confine the server with Landlock and seccomp
  --tls-cert FILE      serve HTTPS with this PEM certificate chain (with
                       --tls-key): every --listen address speaks TLS; without
                       --listen, the [tls] listen addresses of the file, or
                       else the `listen` ones, do. Replaces [[tls.certificate]]
  --tls-key FILE       the PEM private key of --tls-cert
",
    http3_help!(),
    "  --check-config       validate the configuration, print a summary, and exit
  --reload             validate the configuration, then tell the running
                       brisk (by its pid_file) to load it again (SIGHUP)
  --stop               tell the running brisk to finish and exit (SIGTERM)
  --upgrade            tell the running brisk to start its binary again with
                       no connection refused (SIGUSR2), which also applies
                       what only a start can (sandbox, user, workers, …)
  --reopen-logs        tell the running brisk to reopen its logs (SIGUSR1)
  --version, -V        print the version and exit
  --help, -h           print this help and exit

Relative paths on the command line are relative to the current directory;
in a configuration file, to the file's directory.
"
);

/// Everything the flags can say.
#[derive(Default)]
struct Flags {
    config: Option<PathBuf>,
    listen: Vec<SocketAddr>,
    port: Option<u16>,
    root: Option<PathBuf>,
    autoindex: bool,
    workers: Option<usize>,
    daemon: bool,
    pid_file: Option<PathBuf>,
    check: bool,
    /// `--reload`, `--stop`, `--upgrade`, `--reopen-logs`: the signal
    /// and what it asks for.
    signal: Option<(i32, &'static str)>,
    log_level: Option<Level>,
    access_log: Option<LogTarget>,
    error_log: Option<LogTarget>,
    user: Option<String>,
    group: Option<String>,
    allow_root: bool,
    no_sandbox: bool,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    http3: bool,
}

/// See [`super::from_args`].
pub(crate) fn from_args<I: IntoIterator<Item = OsString>>(args: I) -> Result<Command, ConfigError> {
    run(args, BUILT_IN)
}

/// [`from_args`] with the built-in document as a parameter, for tests.
pub(crate) fn run<I: IntoIterator<Item = OsString>>(
    args: I,
    built_in: &str,
) -> Result<Command, ConfigError> {
    let cwd = std::env::current_dir()
        .map_err(|e| error(format!("cannot read the current directory: {e}")))?;
    run_in(args, built_in, &cwd, None, None)
}

/// [`run`] with relative paths on the command line resolved against `cwd`
/// (a reload resolves them as the start did, wherever the process is now),
/// and `workers = 0` meaning `auto_workers` if given (a reload: the count
/// the start found, which a sandboxed process may not be able to find
/// again) or else one per CPU core.
pub(crate) fn run_in<I: IntoIterator<Item = OsString>>(
    args: I,
    built_in: &str,
    cwd: &Path,
    auto_workers: Option<usize>,
    readable: Option<Readable<'_>>,
) -> Result<Command, ConfigError> {
    run_with(args, built_in, cwd, auto_workers, readable, None)
}

/// [`run_in`] where the TLS certificates and keys are read with `read`
/// (on a reload, maybe through the privileged helper) rather than
/// `std::fs::read`.
pub(crate) fn run_with<I: IntoIterator<Item = OsString>>(
    args: I,
    built_in: &str,
    cwd: &Path,
    auto_workers: Option<usize>,
    readable: Option<Readable<'_>>,
    read: Option<Read<'_>>,
) -> Result<Command, ConfigError> {
    let args: Vec<OsString> = args.into_iter().collect();
    load_command(args, built_in, cwd, auto_workers, readable, read)
}

/// [`run_with`]'s body, not generic: the loader is instantiated once
/// rather than once per kind of argument list (the start's `Vec`, a
/// reload's cloned slice), 18 KiB of binary each.
fn load_command(
    args: Vec<OsString>,
    built_in: &str,
    cwd: &Path,
    auto_workers: Option<usize>,
    readable: Option<Readable<'_>>,
    read: Option<Read<'_>>,
) -> Result<Command, ConfigError> {
    let flags = match parse_flags(args)? {
        Parsed::Flags(flags) => flags,
        Parsed::Exit(cmd) => return Ok(cmd),
    };

    // Defaults, then one document, then flags.
    let mut config = Config {
        workers: 0,
        ..Config::default()
    };
    let (source_name, mut origins) = match &flags.config {
        Some(path) => {
            let name = path.display().to_string();
            let bytes = std::fs::read(path)
                .map_err(|e| error(format!("{name}: cannot read the configuration file: {e}")))?;
            let text =
                String::from_utf8(bytes).map_err(|_| error(format!("{name}: not valid UTF-8")))?;
            let dir = path.parent().unwrap_or(Path::new(""));
            let base = cwd.join(dir);
            let src = Source {
                name: &name,
                text: &text,
                base: &base,
                readable,
            };
            let origins = load::load(&src, &mut config)?;
            config.config_file = Some(cwd.join(path));
            (name, origins)
        }
        None => {
            let src = Source {
                name: BUILT_IN_NAME,
                text: built_in,
                base: cwd,
                readable,
            };
            (BUILT_IN_NAME.to_string(), load::load(&src, &mut config)?)
        }
    };

    if let Some(port) = flags.port {
        if !flags.listen.is_empty() {
            return Err(flag_error(
                "--port",
                "cannot be used with --listen, which names its own port (--listen 127.0.0.1:PORT)",
            ));
        }
        // Addresses that differed only in their port become one.
        let mut listen: Vec<SocketAddr> = Vec::with_capacity(config.listen.len());
        for mut addr in config.listen.drain(..) {
            addr.set_port(port);
            if !listen.contains(&addr) {
                listen.push(addr);
            }
        }
        config.listen = listen;
    }
    let listen_flags = !flags.listen.is_empty();
    if listen_flags {
        config.listen = flags.listen;
    }
    // Where each address was set, the flags' first (see
    // `Config::listen_origins`).
    let flag = match (listen_flags, flags.port.is_some()) {
        (true, _) => Some("--listen"),
        (false, true) => Some("--port"),
        (false, false) => None,
    };
    let mut listen_at: Vec<(SocketAddr, String)> = flag
        .map(|flag| {
            config
                .listen
                .iter()
                .map(|&a| (a, flag.to_string()))
                .collect()
        })
        .unwrap_or_default();
    listen_at.append(&mut origins.listen_at);
    config.site.static_files.autoindex |= flags.autoindex;
    if let Some(root) = flags.root {
        config.site.root = cwd.join(root);
        origins.site.root = Some("--root".to_string());
    }
    if let Some(n) = flags.workers {
        config.workers = n;
    }
    if flags.daemon {
        config.daemon = true;
        origins.daemon = Some("--daemon".to_string());
    }
    if let Some(p) = flags.pid_file {
        config.pid_file = Some(cwd.join(p));
        origins.pid_file = Some("--pid-file".to_string());
    }
    if let Some(level) = flags.log_level {
        config.log.level = level;
    }
    if let Some(target) = flags.access_log {
        config.log.access = target.relative_to(cwd);
        origins.access = Some("--access-log".to_string());
    }
    if let Some(target) = flags.error_log {
        config.log.error = target.relative_to(cwd);
        origins.error = Some("--error-log".to_string());
    }
    if let Some(name) = &flags.user {
        config.user = Some(jail::user(name).map_err(|e| flag_error("--user", &e.to_string()))?);
        origins.user = None;
    }
    if let Some(name) = &flags.group {
        config.group = Some(jail::group(name).map_err(|e| flag_error("--group", &e.to_string()))?);
        origins.group = None;
    }
    config.allow_root |= flags.allow_root;
    if flags.no_sandbox {
        config.sandbox = false;
    }
    if flags.http3 {
        #[cfg(feature = "http3")]
        {
            config.http3.enable = true;
        }
        #[cfg(not(feature = "http3"))]
        return Err(flag_error(
            "--http3",
            "this brisk was built without HTTP/3 (the cargo feature `http3`)",
        ));
    }
    if let Some(section) = &mut origins.tls {
        listen_at.append(&mut section.listen_at);
    }
    // `--tls-cert` alone makes the built-in default address serve HTTPS:
    // it is still the default, which passed sockets replace.
    let no_listener = !(origins.listen || listen_flags || flags.port.is_some());
    let tls_takes_default = no_listener
        && flags.tls_cert.is_some()
        && origins.tls.as_ref().is_none_or(|t| !t.has_listen);
    let tls = tls_section(
        &mut config,
        origins.tls.take(),
        origins.listen,
        listen_flags,
        (flags.tls_cert, flags.tls_key),
        cwd,
    )?;
    #[cfg(feature = "acme")]
    let acme = origins.acme.take();
    #[cfg(not(feature = "acme"))]
    let acme: Option<super::acme::AcmeSection> = None;
    if let (Some(a), None) = (&acme, &tls) {
        return Err(ConfigError {
            message: format!(
                "{}: needs [tls] listen = [\"ADDRESS:443\"], where the certificates it obtains are served",
                a.origin()
            ),
        });
    }
    if let Some(mut section) = tls {
        // `[proxy] tls_listen` is where these certificates serve, as
        // `[tls] listen = []` would say: no address of `[tls]`'s own is
        // needed then.
        let proxy_tls = origins
            .proxy
            .as_ref()
            .is_some_and(|p| cfg!(feature = "ops") && !p.config.tls_listen.is_empty());
        section.has_listen |= proxy_tls;
        let origin = section.origin.clone();
        let read_file = read.unwrap_or(&|p| std::fs::read(p));
        config.tls = Some(tls::finish(section, read_file, acme.is_some())?);
        // (`[tls]` has a listen address by now: checked by `finish`.)
        if config.tls.as_ref().is_some_and(|t| t.redirect_http) {
            // `site.toml:3: tls` → `site.toml:3`, as rules' origins are.
            let at = origin.split(": ").next().unwrap_or_default();
            let rule = super::rules::UrlRule::to_https(at);
            for site in std::iter::once(&mut config.site).chain(config.sites.iter_mut()) {
                site.rules.url.insert(0, rule.clone());
            }
        }
    }
    #[cfg(feature = "acme")]
    if let (Some(section), Some(tls)) = (acme, &config.tls) {
        let site_hosts: Vec<String> = std::iter::once(&config.site)
            .chain(&config.sites)
            .flat_map(|s| s.hosts.iter().cloned())
            .collect();
        let by = crate::tls::sni::ByName::new(&tls.certificates);
        let acme = super::acme::finish(section, &site_hosts, &|host| by.covers(host), &|host| {
            by.names(host)
        })?;
        // As `[tls] redirect_http` (unless it said so already): plain
        // HTTP to HTTPS; http-01 validations are answered before rules.
        // Only for the names a certificate is for, as Caddy redirects
        // the names it manages: a site name nothing certifies (a
        // wildcard ACME cannot order by http-01, an unknown host the
        // default site takes) stays served over plain HTTP, not sent
        // to an HTTPS that can only fail its handshake.
        let names: Vec<String> = (acme.hosts.iter().chain(&acme.local))
            .chain(tls.certificates.iter().flat_map(|c| &c.names))
            .cloned()
            .collect();
        if acme.redirect_http && cfg!(feature = "sites") && !tls.redirect_http && !names.is_empty()
        {
            let at = acme.origin.split(": ").next().unwrap_or_default();
            let mut rule = super::rules::UrlRule::to_https(at);
            rule.hosts = names;
            for site in std::iter::once(&mut config.site).chain(config.sites.iter_mut()) {
                site.rules.url.insert(0, rule.clone());
            }
        }
        config.acme = Some(acme);
    }
    #[cfg(feature = "http3")]
    if config.http3.enable && config.tls.is_none() {
        let origin = match (&origins.http3, flags.http3) {
            (_, true) => "--http3",
            (Some(o), false) => o.as_str(),
            (None, false) => "http3",
        };
        return Err(error(format!(
            "{origin}: HTTP/3 runs over QUIC, which is always encrypted: it needs HTTPS ([tls] with a listen address and a certificate, or --tls-cert and --tls-key)"
        )));
    }
    config.listen_default = no_listener
        && (tls_takes_default || config.tls.as_ref().is_none_or(|t| t.listen.is_empty()));
    // http-01 alone with no plain-HTTP address (nor sockets systemd
    // passes): every validation would fail with the CA's "connection
    // refused", which does not point here.
    #[cfg(feature = "acme")]
    if let Some(a) = config.acme.as_mut().filter(|a| {
        a.challenges == ["http-01"]
            && !a.hosts.is_empty()
            && config.listen.is_empty()
            && !config.listen_default
            && std::env::var_os("LISTEN_FDS").is_none()
    }) {
        let at = a.origin.split(": ").next().unwrap_or_default();
        a.unordered.push(format!(
            "{at}: acme.challenges: http-01 alone, and no plain-HTTP listen address: the CA's validations reach nothing (listen = [\"0.0.0.0:80\"], or allow tls-alpn-01)"
        ));
    }
    config.listen_default_tls = config.listen_default && tls_takes_default;
    // (Always `None` without the cargo feature `ops`: `[proxy]` is refused.)
    if let Some(mut section) = origins.proxy.take().filter(|_| cfg!(feature = "ops")) {
        listen_at.append(&mut section.listen_at);
        let listen_given = origins.listen || listen_flags || flags.port.is_some();
        config.proxy = proxy_section(&mut config, section, listen_given)?;
        config.listen_default &=
            config.proxy.listen.is_empty() && config.proxy.tls_listen.is_empty();
    }

    if config.listen_default {
        let at = "listen (not set: the default)";
        listen_at.extend(config.listen.iter().map(|&a| (a, at.to_string())));
    }
    config.listen_origins = listen_at;

    // Final checks, after every layer had its say.
    if config.workers == 0 {
        config.workers = auto_workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    }
    let sites = std::iter::once(&mut config.site).chain(config.sites.iter_mut());
    for (i, (site, from)) in sites
        .zip(std::iter::once(&origins.site).chain(&origins.sites))
        .enumerate()
    {
        let root_from = from
            .root
            .as_deref()
            .unwrap_or("root (default: the current directory)");
        // The default root, `.`, is the directory brisk started in, also
        // on a reload (the process's own may differ by then, and the
        // sandbox's filter refuses the getcwd(2) that realpath(3) makes
        // for a relative path: every SIGHUP of a file without `root` was).
        let written: PathBuf = cwd.join(&site.root).components().collect();
        site.root = check_root(&written, root_from)?;
        // A root reached through a symlink (a deploy's `current`): what
        // it leads to is watched (see `SiteConfig::root_link`).
        if written != site.root && std::fs::read_link(&written).is_ok() {
            site.root_link = Some(written);
        }
        if config.sandbox && site.static_files.symlinks_outside_root {
            // Landlock lets the server read only beneath the root (and what
            // else it was given at start), so such links would be 403s; the
            // links can change at any time, and a sandbox cannot widen.
            let key = match i {
                0 => "static.symlinks_outside_root".to_string(),
                i => format!("site[{i}].static.symlinks_outside_root"),
            };
            let from = from.symlinks.as_deref().unwrap_or(&key);
            return Err(error(format!(
                "{from}: true cannot work with the sandbox on: its Landlock rules let brisk read only beneath the document root, so files behind symlinks that leave it would all be refused (403); set sandbox = false (or --no-sandbox) to follow them, or keep the links' targets inside the root"
            )));
        }
    }
    config.secrets_outside_roots().map_err(error)?;
    let sites = std::iter::once(&config.site).chain(&config.sites);
    for (site, from) in sites.zip(std::iter::once(&origins.site).chain(&origins.sites)) {
        for (rule, key) in site.webdav.iter().zip(&from.webdav) {
            if let Some(why) = super::webdav::runs_programs(&config, rule) {
                return Err(error(format!("{key}: {why}")));
            }
        }
    }
    config.fold_case(|site, tree, dir, why| {
        let from = (site.checked_sub(1)).map_or(&origins.site, |i| &origins.sites[i]);
        let key = match tree {
            Some(i) => from.webdav[i].as_str(),
            None => from
                .root
                .as_deref()
                .unwrap_or("root (default: the current directory)"),
        };
        Err(error(format!(
            "{key}: {} is on a filesystem that finds a name whatever its case (exFAT, vfat, SMB), and {why} (or keep the tree on a filesystem that tells case apart: ext4, btrfs, f2fs)",
            dir.display()
        )))
    })?;
    if config.holds_bodies() {
        // Used only for request bodies held whole (CGI, FastCGI,
        // `buffer_request`).
        let from = origins
            .temp_dir
            .as_deref()
            .unwrap_or("temp_dir (default: $TMPDIR or /tmp)");
        config.temp_dir = check_dir(
            &config.temp_dir,
            from,
            "the directory for request bodies held for CGI programs",
        )?;
    }
    jail::check(&mut config, &origins)?;
    // Files are created at start-up, but their directories must exist:
    // better said here, with the line, than by a failing open later.
    let files = [
        (config.pid_file.as_deref(), &origins.pid_file),
        (target_file(&config.log.access), &origins.access),
        (target_file(&config.log.error), &origins.error),
    ];
    for (file, from) in files {
        if let (Some(file), Some(from)) = (file, from) {
            check_parent(file, from)?;
        }
    }
    if config.daemon {
        check_daemon_logs(&config, &origins)?;
    }
    // A user switch needs root: said with the line (at start, and by
    // --check-config run as the user brisk will start as), not by the
    // start alone; `brisk --stop` and the like need no switch.
    if flags.signal.is_none() {
        check_user_switch(&config, &origins)?;
        check_chroot(&config, &origins)?;
    }

    // The brisk command's handlers are its built-ins (an embedder's
    // server checks its own registry when it starts).
    config.check_handlers(super::BUILT_IN_HANDLERS)?;
    config.temp_dir_origin = origins.temp_dir.take();
    config.log_origins = [origins.access.clone(), origins.error.clone()];

    if flags.check {
        // Read at start, before the sandbox (a reload keeps them): the
        // check reads them as the start would.
        #[cfg(feature = "acme")]
        if let Some(a) = config.acme().filter(|a| !a.ca_roots.is_empty()) {
            let cas: Vec<&std::path::Path> = a.ca_roots.iter().map(|p| p.as_path()).collect();
            crate::tls::client::roots(&cas).map_err(|e| ConfigError {
                message: format!("{}: {e}", a.ca_roots_origin),
            })?;
        }
        return Ok(Command::CheckOk(summary::summary(&config, &source_name)));
    }
    if let Some((signal, what)) = flags.signal {
        let kill = match signal {
            libc::SIGHUP => "HUP",
            libc::SIGTERM => "TERM",
            libc::SIGUSR2 => "USR2",
            _ => "USR1",
        };
        let pid_file = config.pid_file.clone().ok_or_else(|| {
            error(format!(
                "{source_name}: no pid_file, so the running brisk cannot be found to {what}: set pid_file = \"/run/brisk/brisk.pid\" (the Debian package's brisk.toml does) before it starts, or signal it yourself (kill -{kill} PID; under systemd, systemctl kill --kill-whom=main --signal=SIG{kill} brisk)"
            ))
        })?;
        return Ok(Command::Signal {
            pid_file,
            signal,
            what,
        });
    }
    Ok(Command::Run(config))
}

/// `[tls]` after the flags: `--tls-cert`/`--tls-key` replace the file's
/// certificates and make the command line's `--listen` addresses (or,
/// without any, the file's TLS addresses, or else its plain ones) serve
/// HTTPS. A document whose only listeners are TLS ones (no top-level
/// `listen`) serves no plain HTTP. An address cannot be both.
fn tls_section(
    config: &mut Config,
    file: Option<TlsSection>,
    listen_in_file: bool,
    listen_flags: bool,
    flags: (Option<PathBuf>, Option<PathBuf>),
    cwd: &Path,
) -> Result<Option<TlsSection>, ConfigError> {
    let mut section = match flags {
        (Some(cert), Some(key)) => {
            let mut section = file.unwrap_or_else(|| TlsSection {
                config: tls::defaults(),
                has_listen: false,
                origin: "--tls-cert".to_string(),
                certificates: Vec::new(),
                listen_at: Vec::new(),
            });
            section.certificates = vec![CertificateSource {
                cert: (cwd.join(cert), "--tls-cert".to_string()),
                key: (cwd.join(key), "--tls-key".to_string()),
                ocsp: None,
            }];
            if listen_flags || !section.has_listen {
                section.config.listen = std::mem::take(&mut config.listen);
                section.has_listen = true;
            }
            section
        }
        (Some(_), None) => return Err(flag_error("--tls-cert", "needs --tls-key FILE too")),
        (None, Some(_)) => return Err(flag_error("--tls-key", "needs --tls-cert FILE too")),
        (None, None) => match file {
            Some(section) => {
                if section.has_listen && !listen_in_file && !listen_flags {
                    config.listen.clear();
                }
                section
            }
            None => return Ok(None),
        },
    };
    // (Port 0 is a new port for each entry, not one address twice.)
    if let Some(addr) = section
        .config
        .listen
        .iter()
        .find(|a| a.port() != 0 && config.listen.contains(a))
    {
        return Err(error(format!(
            "{}: {addr} is in both listen and tls.listen; an address serves either plain HTTP or HTTPS",
            section.origin
        )));
    }
    section.config.certificates.clear();
    Ok(Some(section))
}

/// `[proxy]` after the flags: a document whose listeners are all PROXY
/// (or TLS) ones, with no top-level `listen`, serves no plain HTTP
/// without the header; an address serves one kind of client only.
fn proxy_section(
    config: &mut Config,
    section: ProxySection,
    listen_given: bool,
) -> Result<ProxyConfig, ConfigError> {
    let proxy = section.config;
    if section.listen_origin.is_none() && section.tls_listen_origin.is_none() {
        return Ok(proxy);
    }
    if !listen_given {
        config.listen.clear();
    }
    let tls = config.tls.iter().flat_map(|t| t.listen.iter());
    let others: Vec<SocketAddr> = config.listen.iter().chain(tls).copied().collect();
    let clash = |list: &[SocketAddr], also: &[SocketAddr]| {
        list.iter()
            .find(|a| a.port() != 0 && (others.contains(a) || also.contains(a)))
            .copied()
    };
    if let Some(origin) = &section.listen_origin {
        if let Some(addr) = clash(&proxy.listen, &[]) {
            return Err(error(format!(
                "{origin}: {addr} is also in listen or tls.listen; an address either expects a PROXY protocol header on every connection or never"
            )));
        }
    }
    if let Some(origin) = &section.tls_listen_origin {
        if config.tls.is_none() {
            return Err(error(format!(
                "{origin}: TLS after the PROXY header needs a certificate: add [[tls.certificate]] (or --tls-cert and --tls-key)"
            )));
        }
        if let Some(addr) = clash(&proxy.tls_listen, &proxy.listen) {
            return Err(error(format!(
                "{origin}: {addr} is also in listen, tls.listen or proxy.listen; an address serves one kind of client (proxy.tls_listen: a PROXY protocol header, then TLS)"
            )));
        }
    }
    Ok(proxy)
}

/// The root must be an existing directory; it is stored canonical so that
/// the containment checks downstream compare like with like.
fn check_root(root: &Path, from: &str) -> Result<PathBuf, ConfigError> {
    check_dir(root, from, "the document root")
}

/// `dir` (used as `role`) must be an existing directory; returns it
/// canonical.
fn check_dir(dir: &Path, from: &str, role: &str) -> Result<PathBuf, ConfigError> {
    // Without its `.` components (`--root .` resolved against the working
    // directory is `/srv/www/.`): the sandbox's seccomp filter refused
    // what realpath(3) does for one on a reload, though not for the
    // same directory named without it.
    let dir: PathBuf = dir.components().collect();
    let dir = dir.as_path();
    let canonical = crate::sys::fs::canonical(dir).map_err(|e| {
        error(format!(
            "{from}: cannot use {} as {role}: {e}",
            dir.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(error(format!(
            "{from}: {} is not a directory",
            dir.display()
        )));
    }
    Ok(canonical)
}

/// A daemon's standard output and error lead to /dev/null: a log sent
/// there would be lost without a word, so it is refused (as a setting
/// that cannot do what it says) rather than quietly dropped.
fn check_daemon_logs(config: &Config, origins: &Origins) -> Result<(), ConfigError> {
    let daemon = origins.daemon.as_deref().unwrap_or("daemon");
    let logs = [
        (&config.log.access, &origins.access, "access", true),
        (
            &config.log.error,
            &origins.error,
            "error",
            config.log.level != Level::Off,
        ),
    ];
    for (target, from, which, written) in logs {
        let stream = match target {
            LogTarget::Stdout => "standard output",
            LogTarget::Stderr => "standard error",
            _ => continue,
        };
        if !written {
            continue;
        }
        let from = from
            .clone()
            .unwrap_or_else(|| format!("log.{which} (default \"-\")"));
        return Err(error(format!(
            "{daemon}: {from} sends the {which} log to {stream}, which a daemon points at /dev/null: \
             every line would be lost; set [log] {which} to a file or \"off\" \
             (or --{which}-log PATH|off)"
        )));
    }
    Ok(())
}

fn target_file(t: &LogTarget) -> Option<&Path> {
    match t {
        LogTarget::File(p) => Some(p),
        _ => None,
    }
}

/// The directory a file is to be created in must exist.
fn check_parent(file: &Path, from: &str) -> Result<(), ConfigError> {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => Err(error(format!(
            "{from}: cannot create {}: the directory {} does not exist",
            file.display(),
            dir.display()
        ))),
        // (A file brisk opens or replaces: a directory there is no file.)
        _ if file.is_dir() => Err(error(format!(
            "{from}: {} is a directory: name a file (in it, or elsewhere)",
            file.display()
        ))),
        _ => Ok(()),
    }
}

/// `user` names another user than the one brisk runs as, which only root
/// can switch to.
fn check_user_switch(config: &Config, origins: &Origins) -> Result<(), ConfigError> {
    let euid = crate::sys::privileges::euid();
    match &config.user {
        Some(u) if euid != 0 && u.uid != euid => Err(error(format!(
            "{}: cannot switch to user \"{}\" (uid {}): brisk runs as uid {euid}, and only root can change user (start it as root, or leave user out)",
            origins.user.as_deref().unwrap_or("--user"),
            u.name,
            u.uid
        ))),
        _ => Ok(()),
    }
}

/// `chroot` needs root (or `CAP_SYS_CHROOT`): said with the line, as a
/// user switch is, rather than by a start that fails once it listens.
fn check_chroot(config: &Config, origins: &Origins) -> Result<(), ConfigError> {
    /// `CAP_SYS_CHROOT`, from linux/capability.h.
    const CAP_SYS_CHROOT: u32 = 18;
    let euid = crate::sys::privileges::euid();
    match &config.chroot {
        Some(jail) if euid != 0 && !crate::sys::privileges::has_capability(CAP_SYS_CHROOT) => {
            Err(error(format!(
                "{}: cannot chroot to {}: brisk runs as uid {euid}, and only root can chroot (start it as root, or leave chroot out)",
                origins.chroot.as_deref().unwrap_or("chroot"),
                jail.display()
            )))
        }
        _ => Ok(()),
    }
}

fn error(message: String) -> ConfigError {
    ConfigError { message }
}

/// An error about a flag, with the pointer to `--help`.
fn flag_error(flag: &str, msg: &str) -> ConfigError {
    error(format!("{flag}: {msg} (see brisk --help)"))
}

/// What the flags ask for. The size gap between variants does not matter:
/// it exists once, at start-up.
#[allow(clippy::large_enum_variant)]
enum Parsed {
    Flags(Flags),
    Exit(Command),
}

fn parse_flags(args: Vec<OsString>) -> Result<Parsed, ConfigError> {
    let mut flags = Flags::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let bytes = arg.as_bytes();
        let (name, inline) = match bytes.iter().position(|&b| b == b'=') {
            Some(i) if bytes.starts_with(b"--") => {
                (&bytes[..i], Some(OsStr::from_bytes(&bytes[i + 1..])))
            }
            _ => (bytes, None),
        };
        let name = String::from_utf8_lossy(name).into_owned();
        // Switches take no value.
        let switch = match name.as_str() {
            "--help" | "-h" => Some(Parsed::Exit(Command::Help(USAGE.to_string()))),
            "--version" | "-V" => Some(Parsed::Exit(Command::Version(format!(
                "brisk {}",
                env!("CARGO_PKG_VERSION")
            )))),
            "--daemon" | "--check-config" | "--allow-root" | "--no-sandbox" | "--autoindex"
            | "--reload" | "--stop" | "--upgrade" | "--reopen-logs" => None,
            "--http3" => None,
            _ if !VALUE_FLAGS.contains(&name.as_str()) => return Err(unknown_flag(&name)),
            _ => {
                let value = match inline {
                    Some(v) => v.to_os_string(),
                    None => match args.next() {
                        Some(v) if !v.as_bytes().starts_with(b"--") => v,
                        _ => return Err(flag_error(&name, "missing value")),
                    },
                };
                apply_value(&mut flags, &name, &value)?;
                continue;
            }
        };
        if inline.is_some() {
            return Err(flag_error(&name, "takes no value"));
        }
        match switch {
            Some(exit) => return Ok(exit),
            None if name == "--daemon" => flags.daemon = true,
            None if name == "--allow-root" => flags.allow_root = true,
            None if name == "--no-sandbox" => flags.no_sandbox = true,
            None if name == "--autoindex" => flags.autoindex = true,
            None if name == "--http3" => flags.http3 = true,
            None if name == "--check-config" => flags.check = true,
            None => {
                let signal = match name.as_str() {
                    "--reload" => (libc::SIGHUP, "reload"),
                    "--stop" => (libc::SIGTERM, "stop"),
                    "--upgrade" => (libc::SIGUSR2, "upgrade"),
                    _ => (libc::SIGUSR1, "reopen its logs"),
                };
                if let Some((_, other)) = flags.signal.replace(signal) {
                    return Err(flag_error(
                        &name,
                        &format!("one signal at a time (and {other} was asked for too)"),
                    ));
                }
            }
        }
    }
    // (Either alone is clear; together, one of the two would be dropped
    // without a word: a script's `--check-config --reload` that reloads
    // nothing, or checks it did not mean to signal.)
    if let (true, Some((_, what))) = (flags.check, flags.signal) {
        return Err(flag_error(
            "--check-config",
            &format!(
                "not together with a signal ({what}): that checks the configuration \
                 itself before it signals, and refuses to signal if it is wrong"
            ),
        ));
    }
    Ok(Parsed::Flags(flags))
}

/// Applies one `--flag value`.
fn apply_value(flags: &mut Flags, name: &str, value: &OsStr) -> Result<(), ConfigError> {
    let text = || {
        value
            .to_str()
            .ok_or_else(|| flag_error(name, "not valid UTF-8"))
    };
    let nonempty_path = || {
        if value.is_empty() {
            Err(flag_error(name, "expected a path; got an empty string"))
        } else {
            Ok(PathBuf::from(value))
        }
    };
    match name {
        "--config" => flags.config = Some(nonempty_path()?),
        "--root" => flags.root = Some(nonempty_path()?),
        "--pid-file" => flags.pid_file = Some(nonempty_path()?),
        "--listen" => {
            let s = text()?;
            let addr = units::parse_listen(s)
                .ok_or_else(|| flag_error(name, &format!("expected {LISTEN_HELP}; got {s:?}")))?;
            if flags.listen.contains(&addr) {
                return Err(flag_error(name, &format!("{addr} is given twice")));
            }
            flags.listen.push(addr);
        }
        "--port" => {
            let s = text()?;
            let port = s.parse::<u16>().map_err(|_| {
                flag_error(
                    name,
                    &format!("expected a port number from 0 to 65535; got {s:?}"),
                )
            })?;
            flags.port = Some(port);
        }
        "--workers" => {
            let s = text()?;
            match s.parse::<usize>() {
                Ok(n) if n <= 1024 => flags.workers = Some(n),
                _ => {
                    return Err(flag_error(
                        name,
                        &format!("expected an integer from 0 to 1024; got {s:?}"),
                    ))
                }
            }
        }
        "--log-level" => {
            let s = text()?;
            let level = Level::ALL
                .into_iter()
                .find(|l| l.as_str() == s)
                .ok_or_else(|| {
                    let names = Level::ALL.map(Level::as_str);
                    flag_error(
                        name,
                        &format!("expected {}; got {s:?}", units::one_of(&names)),
                    )
                })?;
            flags.log_level = Some(level);
        }
        "--tls-cert" => flags.tls_cert = Some(nonempty_path()?),
        "--tls-key" => flags.tls_key = Some(nonempty_path()?),
        "--user" => flags.user = Some(text()?.to_string()),
        "--group" => flags.group = Some(text()?.to_string()),
        "--access-log" | "--error-log" => {
            let target = match value.as_bytes() {
                b"-" if name == "--access-log" => LogTarget::Stdout,
                b"-" => LogTarget::Stderr,
                b"stdout" => LogTarget::Stdout,
                b"stderr" => LogTarget::Stderr,
                b"off" => LogTarget::Off,
                _ => LogTarget::File(nonempty_path()?),
            };
            if name == "--access-log" {
                flags.access_log = Some(target);
            } else {
                flags.error_log = Some(target);
            }
        }
        _ => return Err(unknown_flag(name)),
    }
    Ok(())
}

/// An unknown option or a stray argument, with the nearest flag if any.
fn unknown_flag(name: &str) -> ConfigError {
    if !name.starts_with('-') {
        return error(format!("unexpected argument {name:?} (see brisk --help)"));
    }
    match units::nearest(name, FLAG_NAMES) {
        Some(n) => flag_error(name, &format!("unknown option; did you mean {n}?")),
        None => flag_error(name, "unknown option"),
    }
}

/// Flags that take a value.
const VALUE_FLAGS: &[&str] = &[
    "--config",
    "--listen",
    "--port",
    "--root",
    "--workers",
    "--pid-file",
    "--log-level",
    "--access-log",
    "--error-log",
    "--user",
    "--group",
    "--tls-cert",
    "--tls-key",
];

/// Every flag, for "did you mean".
const FLAG_NAMES: &[&str] = &[
    "--config",
    "--listen",
    "--port",
    "--root",
    "--autoindex",
    "--workers",
    "--daemon",
    "--pid-file",
    "--check-config",
    "--reload",
    "--stop",
    "--upgrade",
    "--reopen-logs",
    "--version",
    "--help",
    "--log-level",
    "--access-log",
    "--error-log",
    "--user",
    "--group",
    "--allow-root",
    "--no-sandbox",
    "--tls-cert",
    "--tls-key",
    "--http3",
];
