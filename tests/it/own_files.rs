//! The files brisk itself reads (its configuration, password files, TLS
//! keys, servlet sources, log files) are never served when they lie under
//! a document root, whatever path leads to them (a symlink, a hard link,
//! `..`, a sidecar, a listing, a fallback, a CGI or servlet path): the
//! answer is a missing file's 404, byte for byte, explained at `debug`,
//! and start-up and `--check-config` warn about each.

use crate::common;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use common::*;

const HTPASSWD: &str = "alice:$2y$04$d2sgzZGxYA3G8ud2X2zTCOXf0mg3/fL.SVIjjlIrQLGeRPe9O7FcG\n\
                        apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n";

/// A site whose configuration (`root/brisk.toml`: `config`, then an
/// `[[auth]]` rule with `root/htpasswd`, and debug logging) lies in its
/// own document root, as `cp brisk.example.toml brisk.toml` leaves it.
fn site_with(config: &str, setup: impl FnOnce(&Builder)) -> Server {
    let mut b = Builder::new();
    b.file("page.txt", b"a page\n");
    b.file("htpasswd", HTPASSWD.as_bytes());
    let cfg = format!(
        "{config}\n[[auth]]\npath = \"/private/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n\n[log]\nlevel = \"debug\"\n"
    );
    b.file("brisk.toml", cfg.as_bytes());
    setup(&b);
    let file = b.root().join("brisk.toml");
    b.arg("--config").arg(file.to_str().expect("utf-8"));
    b.start()
}

#[cfg(any(feature = "http2", feature = "sites"))]
fn site(config: &str) -> Server {
    site_with(config, |_| {})
}

/// Links the configuration file at `rel` under the root: a symlink
/// (`soft`) or a hard link.
fn link_config(root: &Path, rel: &str, soft: bool) {
    let to = root.join(rel);
    if let Some(dir) = to.parent() {
        fs::create_dir_all(dir).expect("dir");
    }
    match soft {
        true => symlink(root.join("brisk.toml"), &to).expect("symlink"),
        false => fs::hard_link(root.join("brisk.toml"), &to).expect("hard link"),
    }
}

/// `raw` answers exactly as a request for a file that does not exist.
fn assert_missing(s: &Server, path: &str, headers: &str) {
    let r = s.get_with(path, headers);
    assert_error(&r, 404, "Not Found", "", Conn::Close);
    let missing = s.get_with("/no-such-file.toml", headers);
    assert_eq!(r.masked_head(), missing.masked_head(), "{path}");
    assert_eq!(r.body, missing.body, "{path}");
}

#[test]
fn the_configuration_and_the_password_file_answer_as_missing_files() {
    let s = site_with("[static]\nprecompressed = true\n", |b| {
        let root = b.root();
        link_config(root, "cfg-link.txt", true);
        link_config(root, "hard/copy.txt", false);
        write_file(&root.join("notes.txt"), b"notes\n");
        // The configuration as the gzip sidecar of another file.
        link_config(root, "notes.txt.gz", false);
    });
    for path in [
        "/brisk.toml",
        "/htpasswd",
        "/cfg-link.txt",
        "/hard/copy.txt",
        "/hard/../brisk.toml",
        "/./htpasswd",
        "/brisk%2etoml",
    ] {
        assert_missing(&s, path, "");
        assert_missing(&s, path, "Range: bytes=0-10\r\n");
        assert_missing(&s, path, "Accept-Encoding: gzip, br\r\n");
        let mut c = s.connect();
        c.send(format!("HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let h = c.head_response();
        assert_eq!(
            h.masked_head(),
            error_head(404, "Not Found", "", Conn::None),
            "HEAD {path}"
        );
    }
    // The sidecar that is the configuration is passed over: the file
    // itself is served.
    let r = s.get_with("/notes.txt", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, b"notes\n");
    // Other files are served as ever.
    assert_eq!(s.get("/page.txt").body, b"a page\n");
    // Each refusal is explained at debug, and the start warned.
    wait_until("the debug line", || {
        s.stderr()
            .contains("brisk.toml\": one of the files brisk itself reads")
    });
    let err = s.stderr();
    for (file, what) in [
        ("brisk.toml", "the configuration file"),
        ("htpasswd", "auth[1].htpasswd"),
    ] {
        let line = format!(
            "{}/{file} ({what}) lies under the document root {}",
            s.root.display(),
            s.root.display()
        );
        assert!(err.contains(&line), "no warning {line:?} in {err}");
    }
}

#[cfg(feature = "http2")]
#[test]
fn over_http2_too() {
    use common::h2::H2;
    let s = site("");
    let mut c = H2::connect(s.addr(), &[], 1 << 20);
    for path in ["/brisk.toml", "/htpasswd", "/no-such-file.toml"] {
        let id = c.get(path, &[("accept-encoding", "gzip")]);
        let a = c.answers(&[id]).pop().expect("an answer");
        assert_eq!(a.status(), "404", "{path}");
    }
    let id = c.get("/page.txt", &[]);
    assert_eq!(c.answers(&[id]).pop().expect("an answer").body, b"a page\n");
}

#[test]
fn listings_leave_them_out() {
    let s = site_with("[static]\nautoindex = true\n", |b| {
        link_config(b.root(), "cfg-link.txt", true);
        link_config(b.root(), "copy.txt", false);
    });
    let r = s.get("/");
    assert_eq!(r.status, 200);
    let html = r.text();
    assert!(html.contains("page.txt"), "{html}");
    for name in ["brisk.toml", "htpasswd", "cfg-link.txt", "copy.txt"] {
        assert!(!html.contains(name), "{name} listed: {html}");
    }
    let json = s.get_with("/?format=json", "").text();
    assert!(json.contains("page.txt"), "{json}");
    assert!(!json.contains("brisk.toml"), "{json}");
}

#[cfg(feature = "sites")]
#[test]
fn a_fallback_takes_them_as_missing() {
    let s = site_with("[static]\nspa = \"index.html\"\n", |b| {
        write_file(&b.root().join("index.html"), b"<p>app</p>\n")
    });
    for path in ["/brisk.toml", "/htpasswd", "/elsewhere"] {
        let r = s.get(path);
        assert_eq!(
            (r.status, &r.body[..]),
            (200, &b"<p>app</p>\n"[..]),
            "{path}"
        );
    }
    // A fallback that is one of them is not there either.
    let s = site("[static]\ntry_files = [\"$uri\", \"/brisk.toml\"]\n");
    assert_missing(&s, "/elsewhere", "");
}

#[test]
fn a_configuration_named_like_a_script_is_not_run() {
    let s = site_with("[[cgi]]\npattern = \"*.cgi\"\n", |b| {
        let root = b.root();
        link_config(root, "x.cgi", false);
        fs::set_permissions(root.join("x.cgi"), fs::Permissions::from_mode(0o755)).expect("chmod");
        write_file(
            &root.join("ok.cgi"),
            b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nran\\n'\n",
        );
        fs::set_permissions(root.join("ok.cgi"), fs::Permissions::from_mode(0o755)).expect("chmod");
    });
    assert_missing(&s, "/x.cgi", "");
    assert_missing(&s, "/x.cgi/more", "");
    assert_eq!(s.get("/ok.cgi").body, b"ran\n");
}

#[cfg(feature = "servlets")]
#[test]
fn servlets_neither_run_them_nor_are_served_elsewhere() {
    let s = site_with(
        "[servlets]\nenable = true\npaths = [\"/servlets/\"]\n",
        |b| {
            let root = b.root();
            write_file(
                &root.join("servlets/hi.lua"),
                b"function handle_request(req, res) res:write('hi') end\n",
            );
            link_config(root, "servlets/cfg.lua", false);
            // A servlet's source under another name, outside the prefix.
            fs::hard_link(root.join("servlets/hi.lua"), root.join("hi-source.txt"))
                .expect("hard link");
        },
    );
    assert_eq!(s.get("/servlets/hi.lua").body, b"hi");
    let r = s.get("/servlets/cfg.lua");
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(!r.text().contains("auth"), "{}", r.text());
    assert_missing(&s, "/hi-source.txt", "");
}

#[test]
fn a_file_replaced_by_another_is_known_without_a_reload() {
    let s = site_with("", |_| {});
    assert_missing(&s, "/htpasswd", "");
    // As an editor or `htpasswd` may save: a new file renamed over the
    // old one (a new inode), and a hard link to it elsewhere.
    for name in ["htpasswd", "brisk.toml"] {
        let file = s.root.join(name);
        let new = s.root.join(format!("{name}.new"));
        fs::copy(&file, &new).expect("copy");
        fs::rename(&new, &file).expect("rename over");
        fs::hard_link(&file, s.root.join(format!("{name}.link"))).expect("hard link");
        let path = format!("/{name}.link");
        wait_until("the new file to be known", || s.get(&path).status == 404);
        assert_missing(&s, &path, "");
        assert_missing(&s, &format!("/{name}"), "");
    }
    assert!(!s.stderr().contains("SIGHUP"), "{}", s.stderr());
}

#[test]
fn a_reload_takes_them_again() {
    let mut b = Builder::new();
    b.file("page.txt", b"a page\n");
    b.file("pw/htpasswd", HTPASSWD.as_bytes());
    b.config("[log]\nlevel = \"info\"\n");
    let s = b.start();
    assert_eq!(s.get("/pw/htpasswd").body, HTPASSWD.as_bytes());
    let before = s.stderr().matches("SIGHUP:").count();
    fs::write(
        s.base.path.join("brisk.toml"),
        format!(
            "[log]\nlevel = \"info\"\n[[auth]]\npath = \"/private/\"\nrealm = \"R\"\nhtpasswd = \"{}\"\n",
            s.root.join("pw/htpasswd").display()
        ),
    )
    .expect("write config");
    s.signal(libc::SIGHUP);
    wait_until("the reload", || {
        s.stderr().matches("SIGHUP:").count() > before
    });
    assert!(
        s.stderr().contains("SIGHUP: configuration reloaded"),
        "{}",
        s.stderr()
    );
    assert_missing(&s, "/pw/htpasswd", "");
    assert!(
        s.stderr().contains(&format!(
            "[warn] reload: {}/pw/htpasswd (auth[1].htpasswd) lies under the document root",
            s.root.display()
        )),
        "{}",
        s.stderr()
    );
}

#[test]
fn check_config_warns() {
    let dir = TempDir::new("cfg");
    let root = dir.path.join("root");
    fs::create_dir(&root).expect("root");
    fs::write(root.join("htpasswd"), HTPASSWD).expect("htpasswd");
    let cfg = root.join("brisk.toml");
    fs::write(
        &cfg,
        "[[auth]]\npath = \"/private/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n",
    )
    .expect("write");
    let (st, out, err) = run_brisk(&[
        "--config",
        cfg.to_str().expect("utf-8"),
        "--root",
        root.to_str().expect("utf-8"),
        "--check-config",
    ]);
    assert!(st.success(), "{err}");
    let root = fs::canonicalize(&root).expect("canonical");
    for (file, what) in [
        ("brisk.toml", "the configuration file"),
        ("htpasswd", "auth[1].htpasswd"),
    ] {
        let line = format!(
            "warning: {}/{file} ({what}) lies under the document root {}: brisk never serves it",
            root.display(),
            root.display()
        );
        assert!(out.contains(&line), "no {line:?} in {out}");
    }
}

#[test]
fn the_pid_file_and_logs_made_at_start_are_known_too() {
    let mut b = Builder::new();
    b.file("page.txt", b"a page\n");
    let root = b.root().to_path_buf();
    b.config(&format!(
        "[log]\naccess = \"{}/logs/access.log\"\nerror = \"{}/logs/error.log\"\n\
         [static]\nopen_file_cache_valid = 0\n",
        root.display(),
        root.display()
    ));
    b.access_log_from_config();
    fs::create_dir_all(root.join("logs")).expect("logs");
    b.arg("--pid-file")
        .arg(root.join("brisk.pid").to_str().expect("utf-8"));
    let s = b.start();
    assert_eq!(s.get("/page.txt").body, b"a page\n");
    for path in ["/brisk.pid", "/logs/access.log", "/logs/error.log"] {
        assert!(s.root.join(&path[1..]).exists(), "{path}");
        assert_missing(&s, path, "");
    }
    // A rotation as logrotate's `create` does it, then SIGUSR1: the new
    // file is known too, and the old one still.
    let log = s.root.join("logs/access.log");
    fs::rename(&log, s.root.join("logs/access.log.1")).expect("rename");
    fs::write(&log, b"").expect("create");
    s.signal(libc::SIGUSR1);
    wait_until("the access log reopened", || {
        s.get("/page.txt");
        fs::metadata(&log).is_ok_and(|m| m.len() > 0)
    });
    for path in ["/logs/access.log", "/logs/access.log.1"] {
        assert_missing(&s, path, "");
    }
    // A reload starts from the paths again: the rotated log is still
    // refused by its name, and so are the names logrotate and tools
    // give copies; the listing leaves them out.
    fs::write(s.root.join("logs/access.log.2.gz"), b"old lines").expect("gz");
    fs::write(s.root.join("logs/access.log-20261201"), b"old lines").expect("dated");
    fs::write(s.root.join("logs/access.logbook"), b"a book").expect("other");
    let reloads = || {
        let log = fs::read_to_string(s.root.join("logs/error.log")).unwrap_or_default();
        log.matches("SIGHUP:").count()
    };
    let before = reloads();
    s.signal(libc::SIGHUP);
    wait_until("the reload", || reloads() > before);
    for path in [
        "/logs/access.log.1",
        "/logs/access.log.2.gz",
        "/logs/access.log-20261201",
        "/brisk.pid~",
    ] {
        assert_missing(&s, path, "");
    }
    assert_eq!(s.get("/logs/access.logbook").body, b"a book");
}

#[test]
fn a_file_replaced_by_a_rename_is_refused_at_once() {
    // Before its new identity is learnt (twice a second), its name says
    // what it is: never a moment when the new file is served.
    let s = site_with("", |_| {});
    for round in 0..5 {
        for name in ["htpasswd", "brisk.toml"] {
            let file = s.root.join(name);
            let new = s.root.join(format!("{name}.{round}"));
            fs::copy(&file, &new).expect("copy");
            fs::rename(&new, &file).expect("rename over");
            assert_missing(&s, &format!("/{name}"), "");
        }
    }
}

#[cfg(feature = "tls")]
#[test]
fn tls_keys_and_certificates() {
    let mut b = Builder::new();
    b.file("page.txt", b"a page\n");
    let [cert_flag, cert, key_flag, key] = common::tls::cert_args("a");
    for (flag, from, name) in [(cert_flag, cert, "a.pem"), (key_flag, key, "a.key")] {
        let to = b.root().join("tls").join(name);
        write_file(&to, &fs::read(&from).expect("test key"));
        b.arg(&flag).arg(to.to_str().expect("utf-8"));
    }
    let s = b.start();
    for path in ["/tls/a.key", "/tls/a.pem"] {
        let mut c = s.connect_tls();
        c.send(
            format!("GET {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        let r = c.response();
        assert_error(&r, 404, "Not Found", "", Conn::Close);
    }
    let mut c = s.connect_tls();
    c.send(b"GET /page.txt HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"a page\n");
}

/// `method path` with `Destination: to` (if not empty) and `body`.
#[cfg(feature = "webdav")]
fn dav(s: &Server, method: &str, path: &str, to: &str, body: &str) -> Response {
    let to = match to {
        "" => String::new(),
        to => format!("Destination: {to}\r\n"),
    };
    s.request(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{to}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

/// A WebDAV share over the document root that holds the configuration,
/// its password file and (in `run/`) the pid file: no method reads,
/// copies, replaces, moves or removes them, or the directory they are
/// in; a copy of a tree leaves them out; a hard link to one is one.
#[cfg(feature = "webdav")]
#[test]
fn webdav_neither_reads_nor_changes_them() {
    let s = site_with(
        "pid_file = \"run/brisk.pid\"\n[[webdav]]\npath = \"/\"\nroot = \".\"\nlocks = true\n",
        |b| {
            let root = b.root();
            fs::create_dir_all(root.join("run")).expect("run");
            write_file(&root.join("run/notes.txt"), b"notes\n");
            link_config(root, "pub/hard.txt", false);
            link_config(root, "lnk/soft.txt", true);
            write_file(&root.join("pub/p.txt"), b"p\n");
        },
    );
    let root = s.root.clone();
    let before: Vec<(&str, Vec<u8>)> = ["brisk.toml", "htpasswd", "run/brisk.pid"]
        .into_iter()
        .map(|f| (f, fs::read(root.join(f)).expect(f)))
        .collect();
    let lock = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope>\
                <D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>";
    let prop = "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop>\
                <x xmlns=\"urn:x\">1</x></D:prop></D:set></D:propertyupdate>";
    for file in [
        "/brisk.toml",
        "/htpasswd",
        "/run/brisk.pid",
        "/pub/hard.txt",
    ] {
        // Missing to whatever would read or change it...
        for (method, to, body) in [
            ("PROPFIND", "", ""),
            ("PROPPATCH", "", prop),
            ("COPY", "/leak.txt", ""),
            ("MOVE", "/moved.txt", ""),
            ("DELETE", "", ""),
            ("UNLOCK", "", ""),
        ] {
            let r = dav(&s, method, file, to, body);
            assert_eq!(r.status, 404, "{method} {file}: {}", r.head);
        }
        // ... and not to be made anew.
        for (method, body) in [("PUT", "evil = true\n"), ("MKCOL", ""), ("LOCK", lock)] {
            let r = dav(&s, method, file, "", body);
            assert_eq!(r.status, 403, "{method} {file}: {}", r.head);
        }
        // Nor a destination, whatever the source.
        for method in ["COPY", "MOVE"] {
            let r = dav(&s, method, "/pub/p.txt", file, "");
            assert_eq!(r.status, 403, "{method} onto {file}: {}", r.head);
        }
    }
    // The directory that holds one stays where it is, whole.
    assert_eq!(dav(&s, "DELETE", "/run/", "", "").status, 403);
    assert_eq!(dav(&s, "MOVE", "/run/", "/run2/", "").status, 403);
    assert_eq!(dav(&s, "COPY", "/pub/", "/run", "").status, 403);
    assert_eq!(dav(&s, "PUT", "/run", "", "x").status, 403);
    // A copy of it, or of a tree with a hard link to one, leaves them out.
    assert_eq!(dav(&s, "COPY", "/run/", "/run-copy/", "").status, 201);
    assert_eq!(dav(&s, "COPY", "/pub/", "/pub-copy/", "").status, 201);
    let names = |d: &str| {
        let mut n: Vec<String> = fs::read_dir(root.join(d))
            .expect(d)
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names("run-copy"), ["notes.txt"]);
    assert_eq!(names("pub-copy"), ["p.txt"]);
    // A listing leaves them out too, and symlinks to them. (The root's
    // members hold `/private/`, behind a login: its listing needs it.)
    let login = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    for (dir, listed, left_out) in [
        ("/", "/run/", &["brisk.toml", "htpasswd"][..]),
        ("/run/", "/run/notes.txt", &["brisk.pid"]),
        ("/pub/", "/pub/p.txt", &["hard.txt"]),
        ("/lnk/", "/lnk/", &["soft.txt"]),
    ] {
        let auth = if dir == "/" { login.as_str() } else { "" };
        let r = s.request(
            format!("PROPFIND {dir} HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\n{auth}\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 207, "{}", r.head);
        let body = String::from_utf8_lossy(&r.body);
        assert!(body.contains(listed), "{dir}: {body}");
        for name in left_out {
            assert!(!body.contains(name), "{dir} lists {name}: {body}");
        }
    }
    for (file, bytes) in &before {
        assert_eq!(&fs::read(root.join(file)).expect(file), bytes, "{file}");
    }
    assert_eq!(names("run"), ["brisk.pid", "notes.txt"]);
    assert!(!root.join("leak.txt").exists() && !root.join("moved.txt").exists());
    wait_until("the debug line", || {
        s.stderr().contains(&format!(
            "403 for \"PUT /brisk.toml HTTP/1.1\": \"{}/brisk.toml\": one of the files brisk itself reads or writes, or a directory on the way to one: WebDAV may not make, replace, move or remove it",
            root.display()
        ))
    });
}
