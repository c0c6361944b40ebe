//! Command-line flags: forms, errors, and precedence over the file.

use super::{args, config, TempDir};
use crate::config::{Command, Level, LogTarget};

fn err(a: &[&str]) -> String {
    match args(a) {
        Err(e) => e.message,
        Ok(c) => panic!("expected an error, got {c:?}"),
    }
}

#[test]
fn help_and_version() {
    match args(&["--help"]).unwrap() {
        Command::Help(text) => {
            for flag in [
                "--config",
                "--listen",
                "--root",
                "--workers",
                "--daemon",
                "--pid-file",
                "--check-config",
                "--version",
                "--help",
                "--log-level",
                "--access-log",
                "--error-log",
            ] {
                assert!(text.contains(flag), "usage lacks {flag}");
            }
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(args(&["-h"]).unwrap(), Command::Help(_)));
    match args(&["--version"]).unwrap() {
        Command::Version(v) => assert_eq!(v, "brisk 0.1.0"),
        other => panic!("{other:?}"),
    }
    // Help wins over whatever follows it.
    assert!(matches!(
        args(&["--help", "--bogus"]).unwrap(),
        Command::Help(_)
    ));
}

#[test]
fn flag_errors_point_to_help() {
    assert_eq!(
        err(&["--bogus"]),
        "--bogus: unknown option (see brisk --help)"
    );
    assert_eq!(
        err(&["--listn", "80"]),
        "--listn: unknown option; did you mean --listen? (see brisk --help)"
    );
    assert_eq!(
        err(&["serve"]),
        "unexpected argument \"serve\" (see brisk --help)"
    );
    assert_eq!(err(&["--root"]), "--root: missing value (see brisk --help)");
    assert_eq!(
        err(&["--root", "--daemon"]),
        "--root: missing value (see brisk --help)"
    );
    assert_eq!(
        err(&["--daemon=yes"]),
        "--daemon: takes no value (see brisk --help)"
    );
    assert_eq!(
        err(&["--workers", "many"]),
        "--workers: expected an integer from 0 to 1024; got \"many\" (see brisk --help)"
    );
    assert_eq!(
        err(&["--log-level=loud"]),
        "--log-level: expected one of \"off\", \"error\", \"warn\", \"info\", \"debug\"; got \"loud\" (see brisk --help)"
    );
    assert!(err(&["--listen", "localhost"]).starts_with("--listen: expected \"IPv4:PORT\""));
    assert_eq!(
        err(&["--listen", "80", "--listen=0.0.0.0:80"]),
        "--listen: 0.0.0.0:80 is given twice (see brisk --help)"
    );
    assert_eq!(
        err(&["--config="]),
        "--config: expected a path; got an empty string (see brisk --help)"
    );
    assert!(err(&["--config", "/nonexistent/brisk.toml"])
        .starts_with("/nonexistent/brisk.toml: cannot read the configuration file:"));
    assert!(err(&["--root", "/nonexistent/dir"])
        .starts_with("--root: cannot use /nonexistent/dir as the document root"));
    assert_eq!(
        err(&["--access-log", "/nonexistent/a.log"]),
        "--access-log: cannot create /nonexistent/a.log: the directory /nonexistent does not exist"
    );
    assert!(err(&["--pid-file=/nonexistent/p"]).starts_with("--pid-file: cannot create"));
    // A check and a signal: one of the two would be dropped.
    assert_eq!(
        err(&["--check-config", "--reload"]),
        "--check-config: not together with a signal (reload): that checks the configuration \
         itself before it signals, and refuses to signal if it is wrong (see brisk --help)"
    );
    assert!(err(&["--stop", "--check-config"]).contains("not together with a signal (stop)"));
}

#[test]
fn both_flag_forms() {
    let dir = TempDir::new();
    let root = dir.path().join("public");
    let root = root.to_str().unwrap();
    let a = config(&[
        "--root",
        root,
        "--listen",
        "127.0.0.1:9001",
        "--workers",
        "3",
        "--log-level",
        "warn",
    ]);
    let b = config(&[
        &format!("--root={root}"),
        "--listen=127.0.0.1:9001",
        "--workers=3",
        "--log-level=warn",
    ]);
    for c in [a, b] {
        assert_eq!(
            c.site.root,
            dir.path().join("public").canonicalize().unwrap()
        );
        assert_eq!(c.listen, vec!["127.0.0.1:9001".parse().unwrap()]);
        assert_eq!(c.workers, 3);
        assert_eq!(c.log.level, Level::Warn);
    }
}

#[test]
fn flags_override_the_file() {
    let dir = TempDir::new();
    std::fs::create_dir(dir.path().join("other")).unwrap();
    let file = dir.write(
        "site.toml",
        "listen = [\"127.0.0.1:8001\", \"[::1]:8001\"]\nroot = \"public\"\nworkers = 2\nserver_header = \"x\"\n[log]\naccess = \"off\"\nlevel = \"error\"\n",
    );
    let other = dir.path().join("other");
    let c = config(&[
        "--config",
        file.to_str().unwrap(),
        "--listen",
        "127.0.0.1:9000",
        "--listen",
        "[::1]:9000",
        "--root",
        other.to_str().unwrap(),
    ]);
    assert_eq!(
        c.listen,
        vec![
            "127.0.0.1:9000".parse().unwrap(),
            "[::1]:9000".parse().unwrap()
        ]
    );
    assert_eq!(c.site.root, other.canonicalize().unwrap());
    // Everything else still comes from the file.
    assert_eq!(c.workers, 2);
    assert_eq!(c.server_header, "x");
    assert_eq!(c.log.access, LogTarget::Off);
    assert_eq!(c.log.level, Level::Error);

    let c = config(&[
        "--config",
        file.to_str().unwrap(),
        "--workers=5",
        "--access-log=/tmp/brisk-test-access.log",
        "--error-log=off",
        "--log-level=debug",
        "--daemon",
        "--pid-file",
        "/tmp/brisk-test.pid",
    ]);
    assert_eq!(c.workers, 5);
    assert_eq!(
        c.log.access,
        LogTarget::File("/tmp/brisk-test-access.log".into())
    );
    assert_eq!(c.log.error, LogTarget::Off);
    assert_eq!(c.log.level, Level::Debug);
    assert!(c.daemon);
    assert_eq!(
        c.pid_file.as_deref(),
        Some(std::path::Path::new("/tmp/brisk-test.pid"))
    );
}

#[test]
fn root_flag_hides_a_bad_root_in_the_file() {
    let dir = TempDir::new();
    let file = dir.write("site.toml", "root = \"missing\"\n");
    let root = dir.path().join("public");
    let c = config(&[
        "--config",
        file.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert_eq!(c.site.root, root.canonicalize().unwrap());
}

#[test]
fn relative_flag_paths_are_relative_to_cwd() {
    let cwd = std::env::current_dir().unwrap();
    let c = config(&[
        "--root",
        "../src",
        "--access-log",
        "access.log",
        "--pid-file",
        "b.pid",
    ]);
    assert_eq!(c.site.root, cwd.join("../src").canonicalize().unwrap());
    assert_eq!(c.log.access, LogTarget::File(cwd.join("access.log")));
    assert_eq!(c.pid_file, Some(cwd.join("b.pid")));
    assert_eq!(config(&["--access-log", "off"]).log.access, LogTarget::Off);
}

#[test]
fn workers_zero_means_one_per_core() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(config(&["--workers", "0"]).workers, cores);
    assert_eq!(config(&[]).workers, cores);
}

#[test]
#[cfg(feature = "ops")] // the report
fn check_config_summarises() {
    let dir = TempDir::new();
    dir.write("cgi-bin/run.cgi", "#!/bin/sh\n");
    dir.write("users", "alice:secret\n");
    let file = dir.write(
        "site.toml",
        "listen = [\"127.0.0.1:8001\", \"[::1]:8001\"]\nroot = \"public\"\nworkers = 2\n\
         server_header = \"x\"\n\
         [log]\naccess = \"a.log\"\nformat = \"json\"\n\
         [static]\nautoindex = true\ndotfiles = \"ignore\"\nindex = [\"index.htm\", \"home.html\"]\n\
         query_in_filename = [\"/mirror/\"]\nopen_file_cache = 0\n\
         default_type = \"text/plain; charset=utf-8\"\n\
         [limits]\nmax_body = \"10MiB\"\nauth_failures = 0\n\
         [timeouts]\nheader = \"250ms\"\n\
         [mime]\nmd = \"text/markdown\"\n\
         [[headers]]\npath = \"/assets/\"\nset = { \"Cache-Control\" = \"no-cache\", \"X-A\" = \"b\" }\n\
         [[headers]]\npattern = \"*.html\"\nset = { \"X-B\" = \"c\" }\n\
         [[throttle]]\npattern = \"*.mp4\"\nrate = \"200KiB/s\"\nconnection_rate = 51200\n\
         [[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\nenv = { SECRET = \"hidden\" }\n\
         [[cgi]]\npattern = \"*.pl\"\ninterpreter = \"/usr/bin/perl\"\n\
         [[auth]]\npath = \"/private/\"\nrealm = \"Private\"\nhtpasswd = \"users\"\nallow_plaintext = true\n",
    );
    let name = file.to_str().unwrap();
    let summary = match args(&["--check-config", "--config", name]).unwrap() {
        Command::CheckOk(s) => s,
        other => panic!("{other:?}"),
    };
    let d = dir.path().canonicalize().unwrap();
    let d = d.display();
    let tmp = std::env::temp_dir().canonicalize().unwrap();
    let tmp = tmp.display();
    let http2 = if cfg!(feature = "http2") {
        "http2: on TLS listeners (ALPN h2) and as h2c with prior knowledge on plain ones\nhttp2 limits: the defaults\n"
    } else {
        "http2: off\n"
    };
    let upstreams = match cfg!(feature = "upstreams") {
        true => "reverse proxy: none\nfastcgi: none\n",
        false => "",
    };
    let expected = format!(
        "configuration OK ({name})
listen: 127.0.0.1:8001, [::1]:8001
root: {d}/public
workers: 2
server header: \"x\"
tls: off
proxy: none (the client is the connection's peer)
{http2}static: index index.htm, home.html; autoindex on; dotfiles ignore (404); precompressed on; symlinks outside the root refused
  open-file cache: off
  types: the built-in table; otherwise text/plain; charset=utf-8
  query in the file name under: /mirror/
compress: off
mime overrides: 1 rule
  .md: text/markdown
headers: 2 rules
  path /assets/: Cache-Control: no-cache; X-A: b
  pattern *.html: X-B: c
throttles: 1 rule
  pattern *.mp4: 200KiB/s shared by all its clients, 50KiB/s per connection
cgi: 2 rules
  url /cgi-bin/: scripts in {d}/cgi-bin, env SECRET
  pattern *.pl: scripts beneath the root, run by /usr/bin/perl
  chunked request bodies held in {tmp} (past 64 KiB)
{upstreams}access: none
rate limits: none
auth: 1 rule
  path /private/: realm \"Private\", users from {d}/users, plaintext passwords allowed
redirects and rewrites: none
error pages: none
cors: none
handlers: none
servlets: off
limits: max_body 10MiB (default 1MiB), auth_failures 0 (default 10)
timeouts: header 250ms (default 20s)
access log: {d}/a.log (json)
error log: stderr (level info)
"
    );
    let (head, rest) = summary.split_at(summary.find("user: ").unwrap());
    assert_eq!(head, expected);
    assert!(
        !summary.contains("hidden"),
        "an env value is shown: {summary}"
    );
    // Who serves and how it is confined depend on who runs the test.
    let sandbox = &rest[rest.find("sandbox: ").unwrap()..];
    assert!(sandbox.starts_with("sandbox: on\n"), "{sandbox}");
    if crate::sys::sandbox::landlock_abi().is_some() {
        assert!(
            sandbox.contains(&format!(
                "reads beneath the document root, the CGI directories and programs, the htpasswd \
                 files' directories and the configuration file's directory; writes only to the log \
                 files and unnamed files in {tmp};"
            )),
            "{sandbox}"
        );
        let tcp = match crate::sys::sandbox::landlock_abi() >= Some(4) {
            true => "; no TCP bind or connect\n",
            false => "; TCP not confined (Landlock ABI 4 needed)\n",
        };
        assert!(sandbox.contains(tcp), "{sandbox}");
    }
    assert!(
        sandbox.contains("\n  CGI programs start from a launcher"),
        "{sandbox}"
    );
    let off = match args(&["--check-config", "--config", name, "--no-sandbox"]).unwrap() {
        Command::CheckOk(s) => s,
        other => panic!("{other:?}"),
    };
    assert!(
        off.ends_with("sandbox: off: no Landlock, no seccomp filter\n"),
        "{off}"
    );
    // Errors still come first.
    assert!(args(&["--check-config", "--workers", "9999"]).is_err());
}

/// `--check-config` says which TCP ports the sandbox lets brisk connect
/// to: its upstreams' (not "no connect", which the sandbox's rules deny).
#[cfg(feature = "upstreams")]
#[test]
fn check_config_names_the_ports_the_sandbox_connects_to() {
    let Some(abi) = crate::sys::sandbox::landlock_abi() else {
        return crate::test_skip::skip("this kernel has no Landlock");
    };
    let dir = TempDir::new();
    dir.write("public/a", "a");
    let summary = |rules: &str| {
        let file = dir.write("site.toml", &format!("root = \"public\"\n{rules}"));
        match args(&["--check-config", "--config", file.to_str().unwrap()]).unwrap() {
            Command::CheckOk(s) => s,
            other => panic!("{other:?}"),
        }
    };
    let tcp = |s: &str| {
        let line = s.lines().find(|l| l.starts_with("  Landlock")).unwrap();
        // After what it reads ("...; ") and writes ("...; ").
        line.splitn(3, "; ").nth(2).unwrap().to_string()
    };
    let both = summary(
        "[[reverse_proxy]]\npath = \"/a/\"\nto = [\"http://127.0.0.1:9002\", \"http://127.0.0.1:9001\"]\n\
         [[fastcgi]]\npattern = \"*.php\"\nto = \"127.0.0.1:9002\"\n",
    );
    let unix = summary("[[reverse_proxy]]\npath = \"/a/\"\nto = \"unix:/run/app.sock\"\n");
    let none = summary("");
    if abi < 4 {
        for s in [&both, &unix, &none] {
            assert_eq!(tcp(s), "TCP not confined (Landlock ABI 4 needed)");
        }
        return;
    }
    assert_eq!(
        tcp(&both),
        "no TCP bind; TCP connects to port 9001, 9002 only"
    );
    assert_eq!(tcp(&unix), "no TCP bind or connect");
    assert_eq!(tcp(&none), "no TCP bind or connect");
}

#[test]
#[cfg(feature = "ops")] // the report
fn check_config_names_who_serves() {
    let dir = TempDir::new();
    let root = dir.path().join("public");
    let root = root.to_str().unwrap();
    let summary = |extra: &[&str]| {
        let mut argv = vec!["--check-config", "--root", root];
        argv.extend(extra);
        match args(&argv).unwrap() {
            Command::CheckOk(s) => s,
            other => panic!("{other:?}"),
        }
    };
    let euid = crate::sys::privileges::euid();
    let plain = summary(&[]);
    if euid != 0 {
        assert!(
            plain.contains(&format!(
                "(uid {euid}), the user that started brisk (no switch)\n"
            )),
            "{plain}"
        );
        return;
    }
    match crate::sys::privileges::lookup_user("nobody").unwrap() {
        Some(a) => assert!(
            plain.contains(&format!(
                "user: nobody (uid {}): started as root with no user set, brisk serves as nobody\ngroup: gid {} (nobody's primary group)\n",
                a.uid, a.gid
            )),
            "{plain}"
        ),
        None => assert!(plain.contains("brisk would refuse to start"), "{plain}"),
    }
    assert!(summary(&["--allow-root"]).contains("user: root (allow_root): brisk serves as root\n"));
    assert!(summary(&["--user", "root", "--group", "0"])
        .contains("user: root (uid 0)\ngroup: 0 (gid 0)\n"));
}

/// Where each listen address was configured, for the error when it
/// cannot be bound: the file, the item's line and the key, or the flag,
/// or the default.
#[test]
fn listen_origins_name_the_file_line_and_key_or_the_flag() {
    let dir = TempDir::new();
    let text = String::from(
        "root = \"public\"\nlisten = [\n  \"127.0.0.1:8001\",\n  \"[::1]:8002\",\n]\n",
    );
    #[cfg(feature = "ops")]
    let text = format!("{text}[proxy]\nlisten = \"127.0.0.1:8003\"\n");
    let file = dir.write("site.toml", &text);
    let file = file.to_str().unwrap();
    let at = |c: &crate::config::Config, a: &str| c.listen_origin(a.parse().unwrap());
    let c = config(&["--config", file]);
    assert_eq!(at(&c, "127.0.0.1:8001"), Some(format!("{file}:3: listen")));
    assert_eq!(at(&c, "[::1]:8002"), Some(format!("{file}:4: listen")));
    #[cfg(feature = "ops")]
    assert_eq!(
        at(&c, "127.0.0.1:8003"),
        Some(format!("{file}:7: proxy.listen"))
    );
    let c = config(&["--config", file, "--port", "9000"]);
    assert_eq!(at(&c, "127.0.0.1:9000"), Some("--port".to_string()));
    assert_eq!(at(&c, "[::1]:9000"), Some("--port".to_string()));
    let c = config(&["--config", file, "--listen", "127.0.0.1:8001"]);
    assert_eq!(at(&c, "127.0.0.1:8001"), Some("--listen".to_string()));
    let plain = dir.write("plain.toml", "root = \"public\"\n");
    let plain = plain.to_str().unwrap();
    let c = config(&["--config", plain]);
    assert_eq!(
        at(&c, "127.0.0.1:8080"),
        Some("listen (not set: the default)".to_string())
    );
    let root = dir.path().join("public");
    let c = config(&["--root", root.to_str().unwrap()]);
    assert_eq!(
        at(&c, "127.0.0.1:8080"),
        Some("listen (not set: the default)".to_string())
    );
}
