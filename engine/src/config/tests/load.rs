//! The TOML loader: values, defaults, and one test per kind of error.
//! `load`/`load_err` put `root = "public"` on line 1 unless the text sets a
//! root, so the text's own lines start at 2.

use std::time::Duration;

use super::{load, load_err, TempDir};
use crate::config::{AccessFormat, Dotfiles, Level, LogField, LogTarget, PathMatch};

#[test]
fn full_document() {
    let c = load(
        r#"
listen = ["127.0.0.1:8081", "[::1]:8081", "9000"]
workers = 2
server_header = "brisk/test"
daemon = true
pid_file = "public/brisk.pid"
sandbox = false

[log]
access = "public/access.log"
format = "json"
fields = ["tls_cipher", "tls_version"]
level = "debug"
error = "off"

[static]
index = ["index.html", "index.htm"]
autoindex = true
dotfiles = "ignore"
query_in_filename = ["/mirror/"]
precompressed = false
symlinks_outside_root = true

[limits]
max_request_line = "4KiB"
max_header_bytes = 32768
max_headers = 50
max_body = "10M"
keepalive_requests = 10
max_connections = 100

[timeouts]
header = "5s"
keepalive = 30
send = "2m"
body = "250ms"
shutdown = 0
reload_drain = "10m"
defer_accept = 0

[mime]
WASM = "application/wasm"
md = "text/markdown; charset=utf-8"

[[headers]]
path = "/assets/"
set = { "Cache-Control" = "max-age=31536000, immutable", "X-B" = "b", "X-A" = "a" }

[[headers]]
pattern = "*.css"
set.X-Kind = "style"
"#,
    )
    .unwrap();
    assert_eq!(c.listen.len(), 3);
    assert_eq!(c.listen[2], "0.0.0.0:9000".parse().unwrap());
    assert_eq!(c.workers, 2);
    assert_eq!(c.server_header, "brisk/test");
    assert!(c.daemon);
    let base = c.site.root.parent().unwrap().to_path_buf();
    assert_eq!(
        c.pid_file.as_deref(),
        Some(base.join("public/brisk.pid").as_path())
    );
    assert_eq!(
        c.log.access,
        LogTarget::File(base.join("public/access.log"))
    );
    assert_eq!(c.log.format, AccessFormat::Json);
    assert_eq!(c.log.fields, [LogField::TlsCipher, LogField::TlsVersion]);
    assert_eq!(c.log.level, Level::Debug);
    assert_eq!(c.log.error, LogTarget::Off);
    assert_eq!(c.site.static_files.index, ["index.html", "index.htm"]);
    assert!(c.site.static_files.autoindex);
    assert_eq!(c.site.static_files.dotfiles, Dotfiles::Ignore);
    assert_eq!(c.site.static_files.query_in_filename, ["/mirror/"]);
    assert!(!c.site.static_files.precompressed);
    assert!(c.site.static_files.symlinks_outside_root);
    assert_eq!(c.limits.max_request_line, 4096);
    assert_eq!(c.limits.max_header_bytes, 32768);
    assert_eq!(c.limits.max_headers, 50);
    assert_eq!(c.limits.max_body, 10 << 20);
    assert_eq!(c.limits.keepalive_requests, 10);
    assert_eq!(c.limits.max_connections, 100);
    assert_eq!(c.timeouts.header, Duration::from_secs(5));
    assert_eq!(c.timeouts.keepalive, Duration::from_secs(30));
    assert_eq!(c.timeouts.send, Duration::from_secs(120));
    assert_eq!(c.timeouts.body, Duration::from_millis(250));
    assert_eq!(c.timeouts.shutdown, Duration::ZERO);
    assert_eq!(c.timeouts.reload_drain, Some(Duration::from_secs(600)));
    assert_eq!(c.timeouts.defer_accept, Duration::ZERO);
    assert_eq!(
        c.site.mime,
        [
            ("wasm".to_string(), "application/wasm".to_string()),
            ("md".to_string(), "text/markdown; charset=utf-8".to_string())
        ]
    );
    assert_eq!(c.site.headers.len(), 2);
    assert_eq!(
        c.site.headers[0].matcher,
        PathMatch::Prefix("/assets/".into())
    );
    // File order, not alphabetical.
    let names: Vec<&str> = c.site.headers[0]
        .set
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["Cache-Control", "X-B", "X-A"]);
    assert_eq!(c.site.headers[1].matcher, PathMatch::Glob("*.css".into()));
    assert_eq!(
        c.site.headers[1].set,
        [("X-Kind".to_string(), "style".to_string())]
    );
}

#[test]
fn dash_means_stdout_for_access_and_stderr_for_error() {
    let c = load("[log]\naccess = \"-\"\nerror = \"-\"\n").unwrap();
    assert_eq!(c.log.access, LogTarget::Stdout);
    assert_eq!(c.log.error, LogTarget::Stderr);
    let c = load("[log]\naccess = \"stderr\"\nerror = \"stdout\"\n").unwrap();
    assert_eq!(c.log.access, LogTarget::Stderr);
    assert_eq!(c.log.error, LogTarget::Stdout);
}

#[test]
fn single_strings_where_lists_are_expected() {
    let c = load("listen = \"127.0.0.1:1\"\n[static]\nindex = \"home.html\"\n").unwrap();
    assert_eq!(c.listen, vec!["127.0.0.1:1".parse().unwrap()]);
    assert_eq!(c.site.static_files.index, ["home.html"]);
}

#[test]
fn root_is_relative_to_the_file_and_canonical() {
    let dir = TempDir::new();
    std::fs::create_dir_all(dir.path().join("conf/site")).unwrap();
    let file = dir.write("conf/brisk.toml", "root = \"site/../site\"\n");
    let c = super::config(&["--config", file.to_str().unwrap()]);
    assert_eq!(
        c.site.root,
        dir.path().join("conf/site").canonicalize().unwrap()
    );
}

#[test]
fn syntax_error_has_line_and_column() {
    let e = load_err("workers = 2\nlisten = [\"a\"\n");
    assert!(e.starts_with("DIR/site.toml:3:"), "{e}");
}

#[test]
fn unknown_keys_suggest_the_nearest() {
    assert_eq!(
        load_err("[static]\nautoindx = true\n"),
        "DIR/site.toml:3: unknown key \"static.autoindx\"; did you mean \"autoindex\"? expected one of \"index\", \"autoindex\", \"autoindex_max_entries\", \"dotfiles\", \"query_in_filename\", \"precompressed\", \"symlinks_outside_root\", \"open_file_cache\", \"open_file_cache_valid\", \"default_type\", \"mime_types\", \"sendfile\", \"spa\", \"try_files\", \"fallback_exclude\", \"sniff\""
    );
    let e = load_err("wrokers = 2\n");
    assert!(
        e.starts_with("DIR/site.toml:2: unknown key \"wrokers\"; did you mean \"workers\"?"),
        "{e}"
    );
    let e = load_err("[limits]\nfoo = 1\n");
    assert!(
        e.starts_with("DIR/site.toml:3: unknown key \"limits.foo\"; expected one of"),
        "{e}"
    );
    let e = load_err("[[headers]]\npath = \"/\"\nset = { A = \"b\" }\nsett = 1\n");
    assert!(
        e.starts_with("DIR/site.toml:5: unknown key \"headers[1].sett\"; did you mean \"set\"?"),
        "{e}"
    );
}

#[test]
fn choices_list_what_is_allowed() {
    assert_eq!(
        load_err("\n[static]\ndotfiles = \"maybe\"\n"),
        "DIR/site.toml:4: static.dotfiles: expected one of \"deny\", \"ignore\", \"allow\"; got \"maybe\""
    );
    assert_eq!(
        load_err("[log]\nformat = \"apache\"\n"),
        "DIR/site.toml:3: log.format: expected one of \"common\", \"combined\", \"json\", or a line of your own with $variables (such as \"$remote_addr [$time_local] \\\"$request\\\" $status $body_bytes_sent\"); got \"apache\""
    );
    assert_eq!(
        load_err("[log]\nlevel = 3\n"),
        "DIR/site.toml:3: log.level: expected one of \"off\", \"error\", \"warn\", \"info\", \"debug\"; got 3"
    );
}

#[test]
fn log_fields_are_the_known_ones_each_once() {
    assert_eq!(
        load_err("[log]\nfields = [\"tls_version\", \"ssl_cipher\"]\n"),
        "DIR/site.toml:3: log.fields: expected one of \"tls_version\", \"tls_cipher\", \"vhost\", \"upstream_addr\", \"upstream_status\", \"upstream_header_time\", \"upstream_response_time\"; got \"ssl_cipher\""
    );
    assert_eq!(
        load_err("[log]\nfields = [\"tls_cipher\", \"tls_cipher\"]\n"),
        "DIR/site.toml:3: log.fields: tls_cipher is listed twice"
    );
}

#[test]
fn type_errors_name_the_expected_type() {
    assert_eq!(
        load_err("workers = \"four\"\n"),
        "DIR/site.toml:2: workers: expected an integer from 0 to 1024; got \"four\""
    );
    assert_eq!(
        load_err("daemon = \"yes\"\n"),
        "DIR/site.toml:2: daemon: expected true or false; got \"yes\""
    );
    assert_eq!(
        load_err("log = 1\n"),
        "DIR/site.toml:2: log: expected a table; got 1"
    );
    // (A bare port is an address, written as a number or a string.)
    let port = super::load("listen = [8080, \"8081\"]\n").unwrap();
    let want: [std::net::SocketAddr; 2] = [
        "0.0.0.0:8080".parse().unwrap(),
        "0.0.0.0:8081".parse().unwrap(),
    ];
    assert_eq!(port.listen, want);
    let help = crate::config::units::LISTEN_HELP;
    assert_eq!(
        load_err("listen = true\n"),
        format!("DIR/site.toml:2: listen: expected {help}; got true")
    );
    assert_eq!(
        load_err("listen = [\"1\", 2.5]\n"),
        format!("DIR/site.toml:2: listen: expected {help}; got 2.5")
    );
    assert_eq!(
        load_err("headers = { path = \"/\" }\n"),
        "DIR/site.toml:2: headers: expected an array of tables ([[headers]]); got a table"
    );
    assert_eq!(
        load_err("root = 1\n"),
        "DIR/site.toml:1: root: expected a string; got 1"
    );
}

#[test]
fn out_of_range_integers() {
    assert_eq!(
        load_err("workers = 2000\n"),
        "DIR/site.toml:2: workers: expected an integer from 0 to 1024; got 2000"
    );
    assert_eq!(
        load_err("[limits]\nmax_headers = 0\n"),
        "DIR/site.toml:3: limits.max_headers: expected an integer from 1 to 10000; got 0"
    );
    assert!(load_err("[limits]\nmax_connections = 0\n")
        .contains("limits.max_connections: expected an integer from 1"));
    assert!(load_err("[limits]\nkeepalive_requests = -1\n").contains("limits.keepalive_requests"));
    assert!(load_err("[limits]\nmax_request_line = 0\n")
        .contains("limits.max_request_line: expected a size from 16 to"));
    assert!(load_err("[limits]\nmax_header_bytes = \"1G\"\n")
        .contains("limits.max_header_bytes: expected a size"));
    assert!(load_err("workers = 99999999999999999999999\n").starts_with("DIR/site.toml:2"));
}

#[test]
fn sizes_and_durations() {
    assert!(load_err("[limits]\nmax_body = \"1.5M\"\n").starts_with(
        "DIR/site.toml:3: limits.max_body: expected a number of bytes or a size like \"512KiB\""
    ));
    assert!(load_err("[limits]\nmax_body = -5\n").contains("limits.max_body"));
    assert_eq!(load("[limits]\nmax_body = 0\n").unwrap().limits.max_body, 0);
    assert_eq!(
        load("[limits]\nmax_body = \"512KiB\"\n")
            .unwrap()
            .limits
            .max_body,
        512 << 10
    );
    assert_eq!(
        load_err("[timeouts]\nheader = \"5 parsecs\"\n"),
        "DIR/site.toml:3: timeouts.header: expected a number of seconds or a duration like \"250ms\", \"5s\", \"2m\", \"1h\"; got \"5 parsecs\""
    );
    assert_eq!(
        load_err("[timeouts]\nkeepalive = 0\n"),
        "DIR/site.toml:3: timeouts.keepalive: expected a duration greater than zero; got 0"
    );
    assert!(load_err("[timeouts]\nsend = \"25h\"\n").contains("at most 24 hours"));
    assert!(load_err("[timeouts]\nbody = 1.5\n")
        .contains("timeouts.body: expected a number of seconds"));
}

#[test]
fn listen_errors() {
    assert_eq!(
        load_err("listen = [\"127.0.0.1:80\", \"127.0.0.1:80\"]\n"),
        "DIR/site.toml:2: listen: 127.0.0.1:80 is listed twice"
    );
    assert!(load_err("listen = \"localhost:80\"\n")
        .starts_with("DIR/site.toml:2: listen: expected \"IPv4:PORT\""));
    assert_eq!(
        load_err("listen = []\n"),
        "DIR/site.toml:2: listen: expected at least one address (for HTTPS only, leave listen out and set [tls] listen)"
    );
}

#[test]
fn root_must_be_an_existing_directory() {
    let e = load_err("\nroot = \"nowhere\"\n");
    assert!(
        e.starts_with("DIR/site.toml:2: root: cannot use DIR/nowhere as the document root:"),
        "{e}"
    );
    let e = load_err("root = \"site.toml\"\n");
    assert_eq!(e, "DIR/site.toml:1: root: DIR/site.toml is not a directory");
    assert!(load_err("root = \"\"\n").contains("root: expected a non-empty path"));
}

#[test]
fn features_of_later_versions_are_refused() {
    assert!(load_err("[[throttle]]\npattern = \"*\"\n")
        .contains("throttle[1]: needs rate and/or connection_rate"));
}

/// A `connection_rate` not below the rule's shared `rate` never paces
/// anything: said at load.
#[test]
fn a_connection_rate_the_shared_rate_never_lets_bind_is_warned_of() {
    let c = load(
        "[[throttle]]\npattern = \"*.mp4\"\nrate = \"100KiB/s\"\nconnection_rate = \"200KiB/s\"\n\
         [[throttle]]\npattern = \"*.iso\"\nrate = \"1MiB/s\"\nconnection_rate = \"200KiB/s\"\n\
         [[throttle]]\npattern = \"*.zip\"\nconnection_rate = \"200KiB/s\"\n",
    )
    .unwrap();
    let w: Vec<String> = c
        .warnings()
        .into_iter()
        .filter(|w| w.contains("throttle"))
        .collect();
    assert_eq!(
        w,
        [
            "throttle[1].connection_rate (204800 bytes/s) is not below its rate (102400 bytes/s), \
          which every connection of the rule shares: it never paces anything; lower it, or \
          leave it out"
        ]
    );
}

#[test]
fn privilege_keys() {
    let c =
        load("user = \"root\"\ngroup = \"root\"\nallow_root = true\nsandbox = false\n").unwrap();
    assert_eq!(
        c.user.as_ref().map(|u| (u.name.as_str(), u.uid)),
        Some(("root", 0))
    );
    assert_eq!(c.group.as_ref().map(|g| g.gid), Some(0));
    assert!(c.allow_root);
    assert!(!c.sandbox);
    let d = load("").unwrap();
    assert!(d.user.is_none() && d.group.is_none() && d.chroot.is_none());
    assert!(!d.allow_root);
    assert!(d.sandbox);

    assert_eq!(
        load_err("user = \"no-such-user-x\"\n"),
        "DIR/site.toml:2: user: no user named \"no-such-user-x\" on this system (a numeric id is accepted too)"
    );
    assert_eq!(
        load_err("user = \"root\"\ngroup = \"no-such-group-x\"\n"),
        "DIR/site.toml:3: group: no group named \"no-such-group-x\" on this system (a numeric id is accepted too)"
    );
    assert_eq!(
        load_err("group = \"root\"\n"),
        "DIR/site.toml:2: group: a group is only used together with user = \"NAME\" (or --user NAME)"
    );
    // A bare number is a numeric id, as a quoted one is.
    let c = load("user = 4000000123\ngroup = 4000000124\n").unwrap();
    assert_eq!(c.user.as_ref().map(|u| u.uid), Some(4000000123));
    assert_eq!(c.group.as_ref().map(|g| g.gid), Some(4000000124));
    assert!(load_err("user = -3\n")
        .contains("site.toml:2: user: expected a name or a non-negative numeric id; got -3"));
    assert!(load_err("user = 1.5\n").contains("site.toml:2: user: expected a string; got 1.5"));
    // Numeric ids, known to the databases or not.
    let c = load("user = \"0\"\nallow_root = true\n").unwrap();
    assert_eq!(
        c.user,
        Some(crate::config::User {
            name: "0".to_string(),
            uid: 0,
            gid: Some(0),
            // (The groups of uid 0's name, as the database lists them.)
            groups: crate::sys::privileges::member_groups("root", 0),
        })
    );
    let c = load("user = \"4000000123\"\ngroup = \"4000000124\"\n").unwrap();
    assert_eq!(
        c.user.as_ref().map(|u| (u.uid, u.gid)),
        Some((4000000123, None))
    );
    assert_eq!(c.group.as_ref().map(|g| g.gid), Some(4000000124));
    assert_eq!(
        load_err("user = \"4000000123\"\n"),
        "DIR/site.toml:2: user: user id 4000000123 has no entry in the user database, so no primary group; set group = \"GID\" (or --group GID) too"
    );
    for bad in ["-1", "4294967295", "99999999999", "+5", "1e3"] {
        assert!(
            load_err(&format!("user = \"{bad}\"\n")).contains("no user named"),
            "{bad}"
        );
    }
    assert!(load_err("sandbox = \"yes\"\n").contains("sandbox: expected true or false"));
    assert!(load_err("allow_root = 1\n").contains("allow_root: expected true or false"));
}

/// The error loading `file` gives.
fn config_err(file: &std::path::Path) -> String {
    super::args(&["--config", file.to_str().unwrap()])
        .unwrap_err()
        .message
}

/// The configuration `file` loads to.
fn run_config(file: &std::path::Path) -> super::super::Config {
    match super::args(&["--config", file.to_str().unwrap()]) {
        Ok(super::Command::Run(c)) => c,
        other => panic!("{other:?}"),
    }
}

#[test]
fn chroot_must_hold_the_root_and_cgi() {
    let dir = super::TempDir::new();
    dir.write("jail/www/index.html", "x");
    dir.write("jail/cgi/run.cgi", "#!/bin/sh\n");
    dir.write("jail/tmp/.keep", "");
    dir.write("outside/index.html", "x");
    let ok = dir.write(
        "ok.toml",
        "root = \"jail/www\"\nchroot = \"jail\"\ntemp_dir = \"jail/tmp\"\n[[cgi]]\nurl = \"/c/\"\ndir = \"jail/cgi\"\n",
    );
    let c = run_config(&ok);
    let jail = dir.path().join("jail").canonicalize().unwrap();
    assert_eq!(c.chroot.as_deref(), Some(jail.as_path()));
    let mut inside = c;
    inside.rebase_in_jail();
    assert_eq!(inside.site.root, std::path::PathBuf::from("/www"));
    assert_eq!(inside.temp_dir, std::path::PathBuf::from("/tmp"));
    // CGI needs a temp_dir inside the jail (the default is outside).
    let no_tmp = dir.write(
        "tmp.toml",
        "root = \"jail/www\"\nchroot = \"jail\"\n[[cgi]]\nurl = \"/c/\"\ndir = \"jail/cgi\"\n",
    );
    let e = config_err(&no_tmp);
    assert!(
        e.starts_with("temp_dir (default: $TMPDIR or /tmp; set one inside the chroot): ")
            && e.contains("is outside the chroot directory"),
        "{e}"
    );

    let bad = dir.write("bad.toml", "root = \"outside\"\nchroot = \"jail\"\n");
    let e = config_err(&bad);
    let e = e.replace(dir.path().to_str().unwrap(), "DIR");
    assert!(
        e.starts_with("DIR/bad.toml:1: root: DIR/outside is outside the chroot directory DIR/jail (DIR/bad.toml:2: chroot)"),
        "{e}"
    );
    let bad_cgi = dir.write(
        "cgi.toml",
        "root = \"jail/www\"\nchroot = \"jail/www\"\n[[cgi]]\nurl = \"/c/\"\ndir = \"jail/cgi\"\n",
    );
    let e = config_err(&bad_cgi);
    assert!(
        e.contains("cgi.toml:5: cgi[1].dir: ") && e.contains("is outside the chroot"),
        "{e}"
    );
    // A WebDAV tree too (a worker opens it inside the jail), rebased.
    #[cfg(feature = "webdav")]
    {
        dir.write("jail/dav/.keep", "");
        dir.write("outside/dav/.keep", "");
        let dav = |root: &str| {
            format!("root = \"jail/www\"\nchroot = \"jail\"\n[[webdav]]\npath = \"/dav/\"\nroot = \"{root}\"\n")
        };
        let in_dav = dir.write("dav.toml", &dav("jail/dav"));
        let mut c = run_config(&in_dav);
        c.rebase_in_jail();
        assert_eq!(c.site.webdav[0].root, std::path::PathBuf::from("/dav"));
        let out_dav = dir.write("dav-out.toml", &dav("outside/dav"));
        let e = config_err(&out_dav);
        assert!(
            e.contains("dav-out.toml:3: webdav[1].root: ") && e.contains("is outside the chroot"),
            "{e}"
        );
    }
    // FastCGI: its socket and its scripts, seen from inside.
    #[cfg(feature = "upstreams")]
    {
        let real = dir.path().canonicalize().unwrap();
        let fcgi = |to: &str, root: &str| {
            format!(
                "root = \"jail/www\"\nchroot = \"jail\"\ntemp_dir = \"jail/tmp\"\n[[fastcgi]]\npattern = \"*.php\"\n\
                 to = \"unix:{to}\"\nroot = \"{root}\"\n"
            )
        };
        let sock = real.join("jail/run/php.sock");
        let ok = dir.write("f.toml", &fcgi(sock.to_str().unwrap(), "jail/www"));
        let mut inside = run_config(&ok);
        inside.rebase_in_jail();
        let rule = &inside.site.fastcgi[0];
        assert_eq!(
            rule.to,
            [super::super::Upstream::Unix(
                std::path::Path::new("/run/php.sock").into()
            )]
        );
        assert_eq!(rule.root.as_deref(), Some(std::path::Path::new("/www")));
        let bad = dir.write("f2.toml", &fcgi("/run/php/fpm.sock", "jail/www"));
        let e = config_err(&bad);
        assert!(
            e.contains("f2.toml:4: fastcgi[1].to: /run/php/fpm.sock is outside"),
            "{e}"
        );
        let bad = dir.write("f3.toml", &fcgi(sock.to_str().unwrap(), "outside"));
        let e = config_err(&bad);
        assert!(
            e.contains("f3.toml:4: fastcgi[1].root: ") && e.contains("is outside"),
            "{e}"
        );
    }
    // The ACME storage: written while serving, so inside too.
    #[cfg(feature = "acme")]
    {
        let acme = |storage: &str| {
            format!(
                "root = \"jail/www\"\nchroot = \"jail\"\n[tls]\nlisten = [\"127.0.0.1:0\"]\n\
                 [acme]\nstorage = \"{storage}\"\nhosts = [\"localhost\"]\n"
            )
        };
        let ok = dir.write("a.toml", &acme("jail/acme"));
        let mut inside = run_config(&ok);
        inside.rebase_in_jail();
        assert_eq!(
            inside.acme.unwrap().storage,
            std::path::PathBuf::from("/acme")
        );
        let bad = dir.write("a2.toml", &acme("outside/acme"));
        let e = config_err(&bad);
        assert!(
            e.contains("a2.toml:5: acme.storage: ") && e.contains("is outside"),
            "{e}"
        );
    }
    let missing = dir.write("m.toml", "root = \"jail/www\"\nchroot = \"nope\"\n");
    let e = config_err(&missing);
    assert!(
        e.contains("m.toml:2: chroot: cannot use") && e.contains("nope"),
        "{e}"
    );
}

#[test]
fn static_section_errors() {
    assert_eq!(
        load_err("[static]\nindex = [\"a/index.html\"]\n"),
        "DIR/site.toml:3: static.index: expected a plain file name (no \"/\"); got \"a/index.html\""
    );
    assert_eq!(
        load_err("[static]\nquery_in_filename = [\"mirror/\"]\n"),
        "DIR/site.toml:3: static.query_in_filename: expected a URL prefix starting with \"/\"; got \"mirror/\""
    );
    assert!(load_err("[static]\nautoindex = 1\n")
        .contains("static.autoindex: expected true or false; got 1"));
}

#[test]
fn mime_errors() {
    assert_eq!(
        load_err("[mime]\n\".html\" = \"text/html\"\n"),
        "DIR/site.toml:3: mime..html: expected a file extension without \".\" or \"/\", like html"
    );
    assert_eq!(
        load_err("[mime]\nhtml = \"html\"\n"),
        "DIR/site.toml:3: mime.html: expected a media type like \"text/html\" or \"text/plain; charset=utf-8\"; got \"html\""
    );
    assert!(load_err("[mime]\nhtml = \"text/html\\r\\nX: y\"\n")
        .contains("mime.html: expected a media type"));
    assert!(
        load_err("[mime]\nhtml = \"text/html\"\nHTML = \"text/plain\"\n").contains("listed twice")
    );
}

#[test]
fn default_type_and_mime_types_file() {
    let c = load("").unwrap();
    assert_eq!(c.site.static_files.default_type, "application/octet-stream");
    assert_eq!(c.site.static_files.mime_types, None);
    let dir = TempDir::new();
    dir.write(
        "my.types",
        "# types\ntext/x-foo foo FOO2\n\nimage/png png\n",
    );
    let text = format!(
        "[static]\ndefault_type = \"text/plain\"\nmime_types = \"{}\"\n",
        dir.path().join("my.types").display()
    );
    let c = load(&text).unwrap();
    assert_eq!(c.site.static_files.default_type, "text/plain");
    let types = c.site.static_files.mime_types.expect("read").types;
    let o = |e: &str, t: &str| (e.to_owned(), t.to_owned());
    assert_eq!(
        types,
        [
            o("foo", "text/x-foo"),
            o("FOO2", "text/x-foo"),
            o("png", "image/png")
        ]
    );
    assert_eq!(
        load_err("[static]\ndefault_type = \"plain\"\n"),
        "DIR/site.toml:3: static.default_type: expected a media type like \"text/plain\" or \"text/plain; charset=utf-8\"; got \"plain\""
    );
    let missing = load_err("[static]\nmime_types = \"nope.types\"\n");
    assert!(
        missing.starts_with(
            "DIR/site.toml:3: static.mime_types: cannot read DIR/nope.types: No such file"
        ),
        "{missing}"
    );
    dir.write("bad.types", "text/plain txt\nimage/png png\njunk\n");
    let err = load_err(&format!(
        "[static]\nmime_types = \"{}\"\n",
        dir.path().join("bad.types").display()
    ));
    assert!(
        err.ends_with(&format!(
            "static.mime_types: {}:3: expected a media type such as text/html first; got \"junk\"",
            dir.path().join("bad.types").display()
        )),
        "{err}"
    );
}

#[test]
fn header_rule_errors() {
    let set = "set = { \"X-A\" = \"1\" }";
    assert_eq!(
        load_err(&format!(
            "[[headers]]\npath = \"/a/\"\npattern = \"*.css\"\n{set}\n"
        )),
        "DIR/site.toml:4: headers[1].pattern: give either path or pattern, not both"
    );
    assert_eq!(
        load_err(&format!("[[headers]]\n{set}\n")),
        "DIR/site.toml:2: headers[1]: needs path = \"/prefix/\" or pattern = \"*.ext\""
    );
    assert_eq!(
        load_err("[[headers]]\npath = \"/\"\n"),
        "DIR/site.toml:2: headers[1]: needs set = { \"Header-Name\" = \"value\" }"
    );
    assert_eq!(
        load_err(&format!(
            "[[headers]]\npath = \"/\"\n{set}\n[[headers]]\npath = \"a/\"\n{set}\n"
        )),
        "DIR/site.toml:6: headers[2].path: expected a URL prefix starting with \"/\"; got \"a/\""
    );
    assert!(
        load_err(&format!("[[headers]]\npattern = \"a/*.css\"\n{set}\n"))
            .contains("headers[1].pattern: expected a glob")
    );
    assert_eq!(
        load_err("[[headers]]\npath = \"/\"\nset = { \"Content-Length\" = \"5\" }\n"),
        "DIR/site.toml:4: headers[1].set.\"Content-Length\": Content-Length, Transfer-Encoding, Connection, Date and Server are set by the server and cannot be configured (Server is server_header = \"...\", \"\" for none)"
    );
    // A rule's Server would be a second one, after server_header's.
    for framing in [
        "transfer-encoding",
        "CONNECTION",
        "Date",
        "Server",
        "server",
    ] {
        let e = load_err(&format!(
            "[[headers]]\npath = \"/\"\nset = {{ \"{framing}\" = \"x\" }}\n"
        ));
        assert!(e.contains("set by the server"), "{e}");
    }
    assert_eq!(
        load_err("[[headers]]\npath = \"/\"\nset = { \"Bad Name\" = \"x\" }\n"),
        "DIR/site.toml:4: headers[1].set.\"Bad Name\": not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)"
    );
    assert_eq!(
        load_err("[[headers]]\npath = \"/\"\nset = { \"X-A\" = \"1\\r\\nSet-Cookie: a=b\" }\n"),
        "DIR/site.toml:4: headers[1].set.\"X-A\": control characters (CR, LF, NUL…) are not allowed in a header value"
    );
    assert!(
        load_err("[[headers]]\npath = \"/\"\nset = { \"X-A\" = \"1\", \"x-a\" = \"2\" }\n")
            .contains("set twice")
    );
    assert!(load_err("[[headers]]\npath = \"/\"\nset = {}\n").contains("at least one header"));
    assert!(
        load_err("[[headers]]\npath = \"/\"\nset = { \"X-A\" = 1 }\n")
            .contains("expected a string; got 1")
    );
}

#[test]
fn server_header_may_not_contain_controls() {
    assert_eq!(
        load_err("server_header = \"a\\nb\"\n"),
        "DIR/site.toml:2: server_header: control characters are not allowed"
    );
    assert_eq!(load("server_header = \"\"\n").unwrap().server_header, "");
}

#[test]
fn files_must_go_in_existing_directories() {
    assert_eq!(
        load_err("pid_file = \"run/x.pid\"\n"),
        "DIR/site.toml:2: pid_file: cannot create DIR/run/x.pid: the directory DIR/run does not exist"
    );
    assert_eq!(
        load_err("[log]\n\naccess = \"logs/a.log\"\n"),
        "DIR/site.toml:4: log.access: cannot create DIR/logs/a.log: the directory DIR/logs does not exist"
    );
    assert!(load_err("[log]\nerror = \"logs/e.log\"\n")
        .starts_with("DIR/site.toml:3: log.error: cannot create"));
    assert!(load("[log]\naccess = \"a.log\"\nerror = \"public/e.log\"\n").is_ok());
}

#[test]
fn symlinks_outside_the_root_need_the_sandbox_off() {
    assert_eq!(
        load_err("[static]\nsymlinks_outside_root = true\n"),
        "DIR/site.toml:3: static.symlinks_outside_root: true cannot work with the sandbox on: its Landlock rules let brisk read only beneath the document root, so files behind symlinks that leave it would all be refused (403); set sandbox = false (or --no-sandbox) to follow them, or keep the links' targets inside the root"
    );
    let c = load("sandbox = false\n[static]\nsymlinks_outside_root = true\n").unwrap();
    assert!(c.site.static_files.symlinks_outside_root && !c.sandbox);
}

#[test]
fn every_table_the_loader_takes_is_suggested() {
    // `[compres]` once listed no `compress`: the list was kept by hand.
    let e = load_err("[compres]\nenable = true\n");
    assert!(
        e.starts_with("DIR/site.toml:2: unknown key \"compres\"; did you mean \"compress\"?"),
        "{e}"
    );
    // Every key the suggestions list is one the loader takes: none of
    // them is refused as unknown, whatever its value's type.
    for key in super::super::load::top_keys() {
        let e = load_err(&format!("{key} = 12345678\n"));
        assert!(!e.contains("unknown key"), "{key}: {e}");
    }
}

#[test]
fn a_duplicate_key_is_named() {
    let e = load_err("workers = 2\nworkers = 3\n");
    assert!(e.starts_with("DIR/site.toml:3:"), "{e}");
    assert!(e.contains("\"workers\""), "{e}");
    let e = load_err("[static]\nautoindex = true\n[static]\nindex = []\n");
    assert!(e.contains("\"static\""), "{e}");
}

#[test]
fn a_log_format_of_ones_own() {
    use crate::config::{AccessFormat, LogPiece, LogVar};
    let cfg =
        load("[log]\nformat = '$remote_addr $${x} \"${request}\" ${status}ms $request_time'\n")
            .unwrap();
    assert_eq!(cfg.log.format, AccessFormat::Custom);
    let t = |s: &str| LogPiece::Text(s.to_string());
    assert_eq!(
        cfg.log.template,
        [
            LogPiece::Var(LogVar::RemoteAddr),
            t(" ${x} \""),
            LogPiece::Var(LogVar::Request),
            t("\" "),
            LogPiece::Var(LogVar::Status),
            t("ms "),
            LogPiece::Var(LogVar::RequestTime),
        ]
    );
    let e = load_err("[log]\nformat = \"$remote_addr $upstream_cache_status\"\n");
    assert!(
        e.starts_with("DIR/site.toml:3: log.format: unknown variable $upstream_cache_status; expected $remote_addr, $remote_user,"),
        "{e}"
    );
    let e = load_err("[log]\nformat = \"$request_time $duration_us\"\n");
    assert!(e.contains("may each appear once"), "{e}");
    let e = load_err("[log]\nformat = \"$upstream_response_time ${upstream_response_time}\"\n");
    assert!(e.contains("may each appear once"), "{e}");
    let e = load_err("[log]\nformat = \"${status\"\n");
    assert!(e.ends_with("log.format: a ${ without its }"), "{e}");
    let e = load_err("[log]\nformat = \"apache\"\n");
    assert!(e.contains("or a line of your own with $variables"), "{e}");
}
