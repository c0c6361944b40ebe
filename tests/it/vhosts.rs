//! Virtual hosts (`[[site]]`): the host of a request (HTTP/1.1 `Host`, an
//! absolute-form target, HTTP/2 `:authority`) picks the site, whose own
//! root and rules answer; a host no site names goes to the default site
//! or gets `unknown_host`'s status; over TLS, a host naming another site
//! than the server name (SNI) is misdirected (421), unless the
//! connection's certificate is for the host too. Raw bytes on
//! 127.0.0.1.
use crate::common;

use std::fs;
use std::path::Path;

use common::*;

/// The default site (the harness's root), `example.org` and its
/// subdomains (`<base>/a`), and `b.test` (`<base>/b`): each with an
/// `index.html` and a `same.txt` saying whose they are.
fn three_sites(extra: &str) -> Builder {
    let mut b = Builder::new();
    b.file("index.html", b"default index\n")
        .file("same.txt", b"default same\n");
    for site in ["a", "b"] {
        let dir = b.base().join(site);
        write_file(
            &dir.join("index.html"),
            format!("{site} index\n").as_bytes(),
        );
        write_file(&dir.join("same.txt"), format!("{site} same\n").as_bytes());
    }
    b.config(&format!(
        "{extra}\n\
         [[site]]\nhosts = [\"example.org\", \"*.example.org\"]\nroot = \"a\"\n\
         [[site.headers]]\npath = \"/\"\nset = {{ X-Site = \"a\" }}\n\
         [[vhost]]\nhosts = \"b.test\"\nroot = \"b\"\n"
    ));
    b
}

/// `GET path` with the header block `host` (`Host: …\r\n`, or nothing).
fn get_on(c: &mut Client, target: &str, host: &str) -> Response {
    c.send(format!("GET {target} HTTP/1.1\r\n{host}\r\n").as_bytes());
    c.response()
}

#[test]
fn the_host_picks_the_site_whatever_its_case_port_or_trailing_dot() {
    let s = three_sites("").start();
    let mut c = s.connect();
    for (host, want) in [
        ("Host: example.org", "a index\n"),
        ("Host: EXAMPLE.Org.:8080", "a index\n"),
        ("Host: www.example.org", "a index\n"),
        ("Host: Cdn.Example.Org:443", "a index\n"),
        ("Host: b.test", "b index\n"),
        ("Host: b.test.", "b index\n"),
        // `*.example.org` is one label: not deeper, not the apex's lookalikes.
        ("Host: a.b.example.org", "default index\n"),
        ("Host: notexample.org", "default index\n"),
        ("Host: localhost", "default index\n"),
        ("Host: 127.0.0.1:1", "default index\n"),
    ] {
        let r = get_on(&mut c, "/", &format!("{host}\r\n"));
        assert_eq!((r.status, r.text()), (200, want.to_string()), "{host}");
        let site_header = r.header("X-Site");
        assert_eq!(site_header.is_some(), want.starts_with('a'), "{host}");
    }
    // An absolute-form target names the host, whatever Host says
    // (RFC 9112 §3.2.2).
    let r = get_on(&mut c, "http://b.test/same.txt", "Host: example.org\r\n");
    assert_eq!(r.text(), "b same\n");
    let r = get_on(&mut c, "http://www.example.org:80/", "Host: b.test\r\n");
    assert_eq!(r.text(), "a index\n");
    // HTTP/1.0 without a Host: the default site.
    let mut c10 = s.connect();
    c10.send(b"GET /same.txt HTTP/1.0\r\n\r\n");
    assert_eq!(c10.response().text(), "default same\n");
}

/// An IPv6 literal is one address however it is written (RFC 4291
/// §2.2: leading zeros, `::`, hex case): the host and the `hosts` entry
/// are compared in the one form of RFC 5952.
#[test]
fn an_ipv6_literal_host_picks_its_site_however_it_is_written() {
    let s = three_sites("[[site]]\nhosts = [\"::1\", \"[2001:DB8::a:0]\"]\nroot = \"b\"\n").start();
    let mut c = s.connect();
    for (host, want) in [
        ("[::1]", "b index\n"),
        ("[0:0::1]:8080", "b index\n"),
        ("[0000:0:0:0:0:0:0:0001]", "b index\n"),
        ("[2001:db8::a:0]", "b index\n"),
        ("[2001:0DB8:0:0:0:0:A:0]:443", "b index\n"),
        ("[::2]", "default index\n"),
        ("[2001:db8::a]", "default index\n"),
    ] {
        let r = get_on(&mut c, "/", &format!("Host: {host}\r\n"));
        assert_eq!((r.status, r.text()), (200, want.to_string()), "{host}");
    }
}

#[test]
fn a_file_of_one_site_is_never_served_for_another() {
    // The open-file cache is the worker's, shared by every site: the
    // same path, one after another on one keep-alive connection, many
    // times (each answer from the cache after the first of its site).
    let s = three_sites("").start();
    let mut c = s.connect();
    for round in 0..20 {
        for (host, want) in [
            ("example.org", "a same\n"),
            ("localhost", "default same\n"),
            ("b.test", "b same\n"),
        ] {
            let r = get_on(&mut c, "/same.txt", &format!("Host: {host}\r\n"));
            assert_eq!(r.text(), want, "round {round}, {host}");
        }
    }
}

#[test]
fn each_site_has_its_own_rules() {
    let mut b = three_sites("");
    let htpasswd = b.base().join("htpasswd");
    // (A user of hash/testdata/vectors.htpasswd.)
    fs::write(&htpasswd, "apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n").unwrap();
    let cgi_dir = b.base().join("b");
    write_file(
        &cgi_dir.join("env.cgi"),
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s\\n' \"$DOCUMENT_ROOT\"\n",
    );
    set_mode(&cgi_dir.join("env.cgi"), 0o755);
    b.file("env.cgi", b"default's env.cgi source\n");
    b.file("private/x.txt", b"open\n");
    write_file(&b.base().join("a/private/x.txt"), b"closed\n");
    b.config(&format!(
        "[[headers]]\npath = \"/\"\nset = {{ X-Default = \"1\" }}\n\
         [[site]]\nhosts = [\"example.org\"]\nroot = \"a\"\n\
         [[site.auth]]\npath = \"/private/\"\nrealm = \"A\"\nhtpasswd = \"{}\"\n\
         [[site.redirect]]\nfrom = \"^/old$\"\nto = \"/new\"\nstatus = 301\n\
         [[site]]\nhosts = [\"b.test\"]\nroot = \"b\"\n\
         [[site.cgi]]\npattern = \"*.cgi\"\n\
         [site.static]\nindex = [\"none.html\"]\nautoindex = true\n",
        htpasswd.display()
    ));
    let s = b.start();
    let mut c = s.connect();
    // [[headers]] of the default site only.
    let r = get_on(&mut c, "/same.txt", "Host: localhost\r\n");
    assert_eq!(r.header("X-Default"), Some("1"));
    let r = get_on(&mut c, "/same.txt", "Host: example.org\r\n");
    assert_eq!(
        (r.text().as_str(), r.header("X-Default")),
        ("a same\n", None)
    );
    // [[auth]] of example.org only.
    let r = get_on(&mut c, "/private/x.txt", "Host: localhost\r\n");
    assert_eq!((r.status, r.text().as_str()), (200, "open\n"));
    let r = get_on(&mut c, "/private/x.txt", "Host: example.org\r\n");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("WWW-Authenticate"),
        Some("Basic realm=\"A\", charset=\"UTF-8\"")
    );
    // [[cgi]] of b.test only: its program, with its root.
    let r = get_on(&mut c, "/env.cgi", "Host: b.test\r\n");
    let b_root = fs::canonicalize(s.base.path.join("b")).unwrap();
    assert_eq!(
        (r.status, r.text()),
        (200, format!("{}\n", b_root.display()))
    );
    let r = get_on(&mut c, "/env.cgi", "Host: localhost\r\n");
    assert_eq!(r.text(), "default's env.cgi source\n");
    // [[redirect]] of example.org only.
    let r = get_on(&mut c, "/old", "Host: example.org\r\n");
    assert_eq!((r.status, r.header("Location")), (301, Some("/new")));
    assert_eq!(get_on(&mut c, "/old", "Host: localhost\r\n").status, 404);
    // [site.static] of b.test: no index file, a listing.
    let r = get_on(&mut c, "/", "Host: b.test\r\n");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("same.txt"), "{}", r.text());
    let r = get_on(&mut c, "/", "Host: example.org\r\n");
    assert_eq!(r.text(), "a index\n");
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_host_no_site_names_can_be_refused_with_421_or_404() {
    for (status, reason) in [(421, "Misdirected Request"), (404, "Not Found")] {
        let s = three_sites(&format!(
            "hosts = [\"main.test\"]\nunknown_host = {status}\n"
        ))
        .start();
        let mut c = s.connect();
        let r = get_on(&mut c, "/same.txt", "Host: main.test\r\n");
        assert_eq!(r.text(), "default same\n");
        let r = get_on(&mut c, "/same.txt", "Host: example.org\r\n");
        assert_eq!(r.text(), "a same\n");
        for host in ["Host: other.test\r\n", "Host: a.b.example.org\r\n"] {
            let r = get_on(&mut c, "/same.txt", host);
            assert_eq!(r.status, status, "{host}");
            assert_eq!(r.body, error_page(status, reason).as_bytes(), "{host}");
        }
        let mut c10 = s.connect();
        c10.send(b"GET /same.txt HTTP/1.0\r\n\r\n");
        assert_eq!(c10.response().status, status);
    }
}

#[test]
fn the_access_log_names_the_host() {
    let mut b = three_sites("[log]\nfields = [\"vhost\"]\n");
    b.access_log();
    let s = b.start();
    let mut c = s.connect();
    get_on(&mut c, "/same.txt", "Host: WWW.Example.ORG.:8080\r\n");
    let line = s.wait_access_line(|l| l.ends_with(b"\"www.example.org\""));
    assert!(
        line.starts_with(b"127.0.0.1 - - ["),
        "{}",
        String::from_utf8_lossy(&line)
    );
    let mut c10 = s.connect();
    c10.send(b"GET /same.txt HTTP/1.0\r\n\r\n");
    assert_eq!(c10.response().status, 200);
    s.wait_access_line(|l| l.ends_with(b"HTTP/1.0\" 200 13 \"-\" \"-\" \"-\""));
}

#[test]
fn check_config_lists_every_site_with_its_hosts_and_rules() {
    let b = three_sites("unknown_host = 421\n");
    let config = b.base().join("check.toml");
    fs::write(
        &config,
        "root = \"a\"\n[[site]]\nhosts = [\"Example.org\", \"*.example.org\"]\nroot = \"b\"\n\
         unknown_host = 404\n",
    )
    .unwrap();
    let (st, _, err) = run_brisk(&["--config", config.to_str().unwrap(), "--check-config"]);
    assert!(!st.success());
    assert!(
        err.contains("site[1].unknown_host: is server-wide"),
        "{err}"
    );
    fs::write(
        &config,
        "root = \"a\"\nunknown_host = 421\nhosts = \"main.test\"\n\
         [[site]]\nhosts = [\"Example.org\", \"*.example.org\"]\nroot = \"b\"\n\
         [[site.headers]]\npath = \"/\"\nset = { X-Site = \"a\" }\n",
    )
    .unwrap();
    let (st, out, err) = run_brisk(&["--config", config.to_str().unwrap(), "--check-config"]);
    assert!(st.success(), "{err}");
    let b_root = fs::canonicalize(b.base().join("b")).unwrap();
    for want in [
        "(hosts main.test)".to_string(),
        "sites: 1 besides the default one; a host no site names gets 421".to_string(),
        format!(
            "site[1]: hosts example.org, *.example.org; root {}",
            b_root.display()
        ),
        "\n  headers: 1 rule\n    path /: X-Site: a\n".to_string(),
    ] {
        assert!(out.contains(&want), "{want:?} not in\n{out}");
    }
}

#[test]
fn sighup_picks_up_site_changes() {
    let mut b = three_sites("[log]\nlevel = \"info\"\n");
    let base = b.base().to_path_buf();
    let s = std::mem::take(&mut b).start();
    let mut c = s.connect();
    assert_eq!(
        get_on(&mut c, "/", "Host: new.test\r\n").text(),
        "default index\n"
    );
    let before = s.stderr().matches("SIGHUP:").count();
    fs::write(
        base.join("brisk.toml"),
        "[log]\nlevel = \"info\"\n[[site]]\nhosts = [\"new.test\"]\nroot = \"b\"\n",
    )
    .unwrap();
    s.signal(libc::SIGHUP);
    wait_until("the reload to be logged", || {
        s.stderr().matches("SIGHUP:").count() > before
    });
    assert!(
        s.stderr().contains("configuration reloaded"),
        "{}",
        s.stderr()
    );
    let mut c = s.connect();
    assert_eq!(
        get_on(&mut c, "/", "Host: new.test\r\n").text(),
        "b index\n"
    );
    assert_eq!(
        get_on(&mut c, "/", "Host: example.org\r\n").text(),
        "default index\n"
    );
}

#[cfg(feature = "http2")]
#[test]
fn over_h2c_the_authority_picks_the_site() {
    use brisk::h2::{frame, hpack};
    use common::h2::H2;
    let s = three_sites("").start();
    let mut h = H2::connect(s.addr(), &[], 0);
    let mut ids = Vec::new();
    for (authority, host, path) in [
        ("www.example.org:80", None, "/same.txt"),
        ("b.test", None, "/same.txt"),
        ("other.test", None, "/same.txt"),
        ("EXAMPLE.ORG", Some("example.org"), "/same.txt"),
        // A Host naming another authority: malformed (RFC 9113 §8.3.1).
        ("example.org", Some("b.test"), "/same.txt"),
        // So is a :path that is no absolute path (§8.3.1): read as an
        // HTTP/1.1 absolute-form target, its host would pick the site.
        ("b.test", None, "http://example.org/same.txt"),
        ("b.test", None, "same.txt"),
        // An empty :authority names no host, which an http URI must
        // have (RFC 9110 §4.2.1): malformed, the stream is reset
        // (RFC 9113 §8.1.1), as HTTP/3 does (RFC 9114 §4.3.1). A host
        // field does not make up for it.
        ("", None, "/same.txt"),
        ("", Some("b.test"), "/same.txt"),
    ] {
        let mut block = Vec::new();
        hpack::encode_field(b":method", b"GET", &mut block);
        hpack::encode_field(b":scheme", b"http", &mut block);
        hpack::encode_field(b":path", path.as_bytes(), &mut block);
        hpack::encode_field(b":authority", authority.as_bytes(), &mut block);
        if let Some(host) = host {
            hpack::encode_field(b"host", host.as_bytes(), &mut block);
        }
        let id = h.next;
        h.next += 2;
        let mut out = Vec::new();
        frame::write_headers(&mut out, id, &block, true, 16_384);
        h.send(&out);
        ids.push(id);
    }
    let answers = h.answers(&ids);
    let bodies: Vec<String> = answers
        .iter()
        .map(|a| String::from_utf8_lossy(&a.body).into_owned())
        .collect();
    assert_eq!(
        bodies[..4],
        ["a same\n", "b same\n", "default same\n", "a same\n"]
    );
    assert_eq!(answers[4].status(), "400");
    assert_eq!(answers[5].status(), "400");
    assert_eq!(answers[6].status(), "400");
    for a in &answers[7..] {
        assert_eq!((a.status(), a.reset), ("", Some(1)), "PROTOCOL_ERROR");
    }
    assert_eq!(answers[0].field("x-site"), Some("a"));
    assert_eq!(answers[1].field("x-site"), None);
}

#[cfg(feature = "tls")]
#[test]
fn over_tls_a_host_naming_another_site_than_the_server_name_is_misdirected() {
    use common::tls::{client_conn, section};
    let mut b = Builder::new();
    b.file("same.txt", b"default same\n");
    for site in ["a", "b"] {
        write_file(
            &b.base().join(site).join("same.txt"),
            format!("{site} same\n").as_bytes(),
        );
    }
    b.config(&format!(
        "[[site]]\nhosts = [\"a.test\", \"*.a.test\"]\nroot = \"a\"\n\
         [[site]]\nhosts = [\"b.test\"]\nroot = \"b\"\n{}",
        section(&["a", "b"], "")
    ))
    .listeners(2);
    let s = b.start();
    let tls = s.addrs[1];
    let mut c = Client::connect_tls(tls, client_conn("a.test"));
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: a.test\r\n").text(),
        "a same\n"
    );
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: www.a.test:443\r\n").text(),
        "a same\n"
    );
    let r = get_on(&mut c, "/same.txt", "Host: b.test\r\n");
    assert_eq!(r.status, 421);
    assert_eq!(r.body, error_page(421, "Misdirected Request").as_bytes());
    // A host no site names is the default site's, as over plain HTTP.
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: c.test\r\n").text(),
        "default same\n"
    );
    let mut c = Client::connect_tls(tls, client_conn("b.test"));
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: b.test\r\n").text(),
        "b same\n"
    );
    assert_eq!(get_on(&mut c, "/same.txt", "Host: a.test\r\n").status, 421);
    // The same with the ClientHello split over two records (RFC 8446
    // §5.1): the server name is the whole hello's.
    let mut hello = Vec::new();
    let mut conn = client_conn("b.test");
    while conn.wants_write() {
        conn.write_tls(&mut hello).expect("hello");
    }
    let mut c = Client::connect(tls);
    c.send(&split_record(&hello, 40));
    c.start_tls(conn);
    assert_eq!(get_on(&mut c, "/same.txt", "Host: a.test\r\n").status, 421);
    // Plain HTTP has no server name to disagree with.
    let mut c = s.connect();
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: b.test\r\n").text(),
        "b same\n"
    );
}

/// Two sites whose names one certificate covers (`*.a.test`): a browser
/// that verified it for the first sends the second's requests on the
/// same connection (HTTP/2 and HTTP/3 connection reuse, RFC 9113
/// §9.1.1), and gets them answered (Chromium met a 421 with a new
/// connection, or over HTTP/3 a failed load). A host the certificate is
/// not for is still misdirected.
#[cfg(feature = "tls")]
#[test]
fn over_tls_a_site_the_same_certificate_covers_is_answered_on_the_connection() {
    use common::tls::{client_conn, section};
    let mut b = Builder::new();
    b.file("same.txt", b"default same\n");
    for site in ["x", "y", "b"] {
        write_file(
            &b.base().join(site).join("same.txt"),
            format!("{site} same\n").as_bytes(),
        );
    }
    b.config(&format!(
        "[[site]]\nhosts = [\"x.a.test\"]\nroot = \"x\"\n\
         [[site]]\nhosts = [\"y.a.test\"]\nroot = \"y\"\n\
         [[site]]\nhosts = [\"b.test\"]\nroot = \"b\"\n{}",
        section(&["a", "b"], "")
    ))
    .listeners(2);
    let s = b.start();
    let tls = s.addrs[1];
    let mut c = Client::connect_tls(tls, client_conn("x.a.test"));
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: x.a.test\r\n").text(),
        "x same\n"
    );
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: Y.A.TEST.:443\r\n").text(),
        "y same\n"
    );
    let r = get_on(&mut c, "/same.txt", "Host: b.test\r\n");
    assert_eq!(r.status, 421);
    assert_eq!(r.body, error_page(421, "Misdirected Request").as_bytes());
    let mut c = Client::connect_tls(tls, client_conn("b.test"));
    assert_eq!(
        get_on(&mut c, "/same.txt", "Host: y.a.test\r\n").status,
        421
    );
}

/// `records`, whose first record is split in two records after `at`
/// bytes of its payload.
#[cfg(feature = "tls")]
fn split_record(records: &[u8], at: usize) -> Vec<u8> {
    let len = usize::from(u16::from_be_bytes([records[3], records[4]]));
    let (payload, rest) = records[5..].split_at(len);
    let mut out = Vec::new();
    for part in [&payload[..at], &payload[at..]] {
        out.extend_from_slice(&records[..3]);
        out.extend_from_slice(&(part.len() as u16).to_be_bytes());
        out.extend_from_slice(part);
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(feature = "servlets")]
#[test]
fn servlets_run_on_their_site_only_each_with_its_own_files() {
    let servlet = |who: &str| {
        format!(
            "function handle_request(req, res)\n  res:write(200, {{[\"Content-Type\"] = \"text/plain\"}}, \"{who} servlet \" .. req.path .. \"\\n\")\nend\n"
        )
    };
    let mut b = three_sites("");
    b.file("servlets/hi.lua", servlet("default").as_bytes());
    for site in ["a", "b"] {
        write_file(
            &b.base().join(site).join("servlets/hi.lua"),
            servlet(site).as_bytes(),
        );
    }
    b.config(
        "[servlets]\nenable = true\ncpu_time = \"1s\"\n\
         [[site]]\nhosts = [\"example.org\"]\nroot = \"a\"\n\
         [site.servlets]\nenable = true\n\
         [[site]]\nhosts = [\"b.test\"]\nroot = \"b\"\n",
    );
    let s = b.start();
    let mut c = s.connect();
    for round in 0..3 {
        for (host, want) in [
            (
                "localhost",
                "default servlet /servlets/hi.lua\n".to_string(),
            ),
            ("example.org", "a servlet /servlets/hi.lua\n".to_string()),
            // b.test has no servlets: its file is a file.
            ("b.test", servlet("b")),
        ] {
            let r = get_on(&mut c, "/servlets/hi.lua", &format!("Host: {host}\r\n"));
            assert_eq!(r.text(), want, "round {round}, {host}");
        }
    }
}

#[test]
fn named_handlers_answer_on_their_own_site_only_behind_its_guards() {
    // A top-level `[[handlers]]` entry is the default site's, as its
    // `[[access]]` guard is: another site's host must not reach it
    // unguarded. A `[[site.handlers]]` entry is that site's.
    let mut b = three_sites("");
    b.config(
        "[[handlers]]\npath = \"/echo/\"\nhandler = \"echo\"\nconfig = { say = \"default echo\" }\n\
         [[access]]\npath = \"/echo/\"\ndeny = [\"all\"]\n\
         [[site]]\nhosts = [\"example.org\"]\nroot = \"a\"\n\
         [[site.handlers]]\npath = \"/echo/\"\nhandler = \"echo\"\nconfig = { say = \"a echo\" }\n\
         [[site]]\nhosts = [\"b.test\"]\nroot = \"b\"\n",
    );
    let s = b.start();
    let mut c = s.connect();
    let r = get_on(&mut c, "/echo/x", "Host: localhost\r\n");
    assert_eq!(r.status, 403, "the default site's guard");
    let r = get_on(&mut c, "/echo/x", "Host: example.org\r\n");
    assert_eq!(r.status, 200);
    assert!(
        r.text().starts_with("a echo\nGET /echo/x\n"),
        "{}",
        r.text()
    );
    let r = get_on(&mut c, "/echo/x", "Host: b.test\r\n");
    assert_eq!(r.status, 404, "b.test has no handlers: {}", r.text());
    // A site's entry is checked as the top level's, by its own key.
    let (ok, out, err) = check_config(
        "root = \".\"\n[[handlers]]\npath = \"/-/health\"\nhandler = \"health\"\n\
         [[site]]\nhosts = [\"b.test\"]\nroot = \".\"\n\
         [[site.handlers]]\npath = \"/echo/\"\nhandler = \"ecko\"\n",
    );
    assert!(!ok, "{out}");
    assert!(
        err.contains("site[1].handlers[1].handler: no handler is registered as \"ecko\""),
        "{err}"
    );
}
