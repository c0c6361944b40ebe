//! `[[access]]` (allow / deny by client address) and `[[rate_limit]]`
//! (requests per client) on the wire, over HTTP/1.1 and HTTP/2, from
//! 127.0.0.1 and ::1 and behind a trusted proxy: 403 before any 401,
//! 429 with `Retry-After`, the limit shared by the workers and holding
//! under a flood of addresses in bounded memory.

use crate::common;

use std::net::SocketAddr;

use common::*;

const VECTORS: &str = include_str!("../../hash/testdata/vectors.htpasswd");

/// A server on 127.0.0.1 and ::1 with `config`, its files `admin/a.txt`,
/// `v6/a.txt`, `x.secret`, `open.txt`, `private/p.txt` and
/// `login/{a,b}.txt`; an htpasswd beside the config.
fn site(config: &str, workers: u32) -> Server {
    let mut b = Builder::new();
    b.file("admin/a.txt", b"admin")
        .file("v6/a.txt", b"v6")
        .file("x.secret", b"secret")
        .file("open.txt", b"open")
        .file("private/p.txt", b"private")
        .file("login/a.txt", b"a")
        .file("login/b.txt", b"b");
    write_file(&b.base().join("htpasswd"), VECTORS.as_bytes());
    b.config(config).workers(workers);
    b.arg("--listen");
    b.arg("[::1]:0");
    b.start()
}

fn v4(s: &Server) -> SocketAddr {
    *s.addrs.iter().find(|a| a.is_ipv4()).expect("IPv4 listener")
}

fn v6(s: &Server) -> SocketAddr {
    *s.addrs.iter().find(|a| a.is_ipv6()).expect("IPv6 listener")
}

/// `GET path` from a fresh connection to `addr`, with `extra` header
/// lines; the connection closes after it.
fn get(addr: SocketAddr, path: &str, extra: &str) -> Response {
    let mut c = Client::connect(addr);
    c.send(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n").as_bytes(),
    );
    c.response()
}

/// `GET path` over HTTP/2 (prior knowledge) to `addr`: status, the
/// `retry-after` field and the body.
#[cfg(feature = "http2")]
fn get_h2(addr: SocketAddr, paths: &[&str]) -> Vec<(String, Option<String>, Vec<u8>)> {
    let mut c = common::h2::H2::connect(addr, &[], 0);
    let ids: Vec<u32> = paths.iter().map(|p| c.get(p, &[])).collect();
    c.answers(&ids)
        .into_iter()
        .map(|a| {
            (
                a.status().to_string(),
                a.field("retry-after").map(str::to_string),
                a.body,
            )
        })
        .collect()
}

const ACCESS: &str = "\
[[access]]
path = \"/admin/\"
allow = [\"127.0.0.0/8\"]
[[access]]
path = \"/v6/\"
allow = [\"::1\"]
[[access]]
pattern = \"*.secret\"
deny = [\"127.0.0.1\"]
";

#[test]
fn access_rules_allow_and_refuse_from_ipv4_and_ipv6_over_http1() {
    let s = site(ACCESS, 1);
    let (a4, a6) = (v4(&s), v6(&s));
    let ok = |addr, path, body: &[u8], ctype| {
        assert_file(&get(addr, path, ""), body, ctype, "", Conn::Close);
    };
    let refused = |addr, path| {
        assert_error(&get(addr, path, ""), 403, "Forbidden", "", Conn::Close);
    };
    let text = "text/plain; charset=utf-8";
    ok(a4, "/admin/a.txt", b"admin", text);
    refused(a6, "/admin/a.txt");
    ok(a6, "/v6/a.txt", b"v6", text);
    refused(a4, "/v6/a.txt");
    // Other spellings of a path are the same path.
    refused(a4, "/%76%36/a.txt");
    refused(a4, "//v6/./a.txt");
    // Only deny: the rest are allowed.
    refused(a4, "/x.secret");
    assert_eq!(get(a6, "/x.secret", "").body, b"secret");
    // No rule: everyone.
    ok(a4, "/open.txt", b"open", text);
    ok(a6, "/open.txt", b"open", text);
    // The refusal is in the error log with the rule that made it.
    let line = s.wait_stderr_line("refused /v6/a.txt");
    assert!(
        line.contains("client 127.0.0.1 refused /v6/a.txt by the [[access]] rule at ")
            && line.contains("brisk.toml:4; 403"),
        "{line}"
    );
}

#[cfg(feature = "http2")]
#[test]
fn access_rules_allow_and_refuse_over_http2() {
    let s = site(ACCESS, 1);
    let (a4, a6) = (v4(&s), v6(&s));
    let got = get_h2(a4, &["/admin/a.txt", "/v6/a.txt", "/x.secret", "/open.txt"]);
    let status: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(status, ["200", "403", "403", "200"]);
    assert_eq!(got[0].2, b"admin");
    assert_eq!(got[1].2, error_page(403, "Forbidden").as_bytes());
    let got = get_h2(a6, &["/admin/a.txt", "/v6/a.txt", "/x.secret", "/open.txt"]);
    let status: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(status, ["403", "200", "200", "200"]);
    assert_eq!(got[1].2, b"v6");
}

/// Behind a trusted proxy the client it names is judged; an untrusted
/// peer's forwarding headers are not believed.
#[cfg(feature = "ops")]
#[test]
fn access_rules_judge_the_client_a_trusted_proxy_names() {
    let s = site(
        "[proxy]\ntrusted = [\"127.0.0.1\"]\n[[access]]\npath = \"/admin/\"\nallow = [\"203.0.113.0/24\", \"2001:db8::/32\"]\n",
        1,
    );
    let (a4, a6) = (v4(&s), v6(&s));
    let xff = |ip: &str| format!("X-Forwarded-For: {ip}\r\n");
    assert_eq!(get(a4, "/admin/a.txt", &xff("203.0.113.5")).body, b"admin");
    assert_eq!(get(a4, "/admin/a.txt", &xff("2001:db8::5")).body, b"admin");
    for refused in [
        // A Forwarded the client wrote (X-Forwarded-For is the header read).
        get(a4, "/admin/a.txt", "Forwarded: for=\"[2001:db8::9]\"\r\n"),
        get(a4, "/admin/a.txt", &xff("198.51.100.1")),
        // The proxy itself.
        get(a4, "/admin/a.txt", ""),
        // ::1 is no trusted proxy: its header names nobody.
        get(a6, "/admin/a.txt", &xff("203.0.113.5")),
    ] {
        assert_error(&refused, 403, "Forbidden", "", Conn::Close);
    }
}

/// A refused client gets 403 before any password is asked for; an
/// allowed one then meets `[[auth]]`.
#[test]
fn access_refuses_before_auth_asks() {
    let s = site(
        "[[access]]\npath = \"/private/\"\nallow = \"::1\"\n\
         [[auth]]\npath = \"/private/\"\nrealm = \"P\"\nhtpasswd = \"htpasswd\"\n",
        1,
    );
    let (a4, a6) = (v4(&s), v6(&s));
    assert_error(
        &get(a4, "/private/p.txt", ""),
        403,
        "Forbidden",
        "",
        Conn::Close,
    );
    let good = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    assert_error(
        &get(a4, "/private/p.txt", &good),
        403,
        "Forbidden",
        "",
        Conn::Close,
    );
    let r = get(a6, "/private/p.txt", "");
    assert_eq!(r.status, 401, "{}", r.head);
    assert_eq!(get(a6, "/private/p.txt", &good).body, b"private");
}

#[test]
fn a_bad_range_is_a_config_error_naming_file_line_and_key() {
    let (ok, _, err) = check_config(
        "root = \"root\"\n[[access]]\npath = \"/admin/\"\nallow = [\"10.0.0.0/8\", \"10.0.0.1/8\"]\n",
    );
    assert!(!ok);
    assert!(
        err.contains(".toml:4: access[1].allow: \"10.0.0.1/8\" has bits set beyond its /8 prefix; did you mean \"10.0.0.0/8\"?"),
        "{err}"
    );
    let (ok, _, err) =
        check_config("root = \"root\"\n[[rate_limit]]\npath = \"/\"\nrate = \"5/h\"\n");
    assert!(!ok);
    assert!(
        err.contains(".toml:4: rate_limit[1].rate: expected requests per second or minute"),
        "{err}"
    );
    // In a [[site]] (the cargo feature `sites`), named as such.
    if cfg!(feature = "sites") {
        let (ok, _, err) = check_config(
            "root = \"root\"\n[[site]]\nhosts = \"a.test\"\n[[site.rate_limit]]\npath = \"/\"\nrate = \"5/h\"\n",
        );
        assert!(!ok);
        assert!(
            err.contains(
                ".toml:6: site[1].rate_limit[1].rate: expected requests per second or minute"
            ),
            "{err}"
        );
    }
}

/// `r` is a 429 with a `Retry-After` of at most `max` seconds, and
/// otherwise brisk's error page.
fn assert_429(r: &Response, max: u64) {
    let secs = retry_after(r, max);
    assert_error(
        r,
        429,
        "Too Many Requests",
        &format!("Retry-After: {secs}\r\n"),
        Conn::Close,
    );
}

/// The `Retry-After` of a 429: whole seconds, at most `max`.
fn retry_after(r: &Response, max: u64) -> u64 {
    let secs: u64 = r
        .header("Retry-After")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=max).contains(&secs), "{secs}");
    secs
}

/// A request another rule refuses is not counted by the rules before it
/// either: their buckets are as if it had not come.
#[test]
fn a_request_a_later_rule_refuses_is_not_counted_by_the_earlier() {
    let s = site(
        "[[rate_limit]]\npath = \"/login/\"\nrate = \"1/m\"\nburst = 2\n\
         [[rate_limit]]\npattern = \"b.txt\"\nrate = \"1/m\"\n",
        1,
    );
    let a4 = v4(&s);
    // Both rules let the first through; the second refuses the next ones.
    assert_eq!(get(a4, "/login/b.txt", "").body, b"b");
    for _ in 0..3 {
        assert_429(&get(a4, "/login/b.txt", ""), 60);
    }
    // The first rule counted one request of the four: two more pass.
    for _ in 0..2 {
        assert_eq!(get(a4, "/login/a.txt", "").body, b"a");
    }
    assert_429(&get(a4, "/login/a.txt", ""), 60);
}

/// `burst + 1` requests pass at once, the next gets 429 with
/// `Retry-After` (the bucket leaks one a minute); the other workers
/// count in the same table; other paths and clients are not counted.
#[test]
fn over_the_rate_a_client_gets_429_with_retry_after() {
    let s = site(
        "[[rate_limit]]\npath = \"/login/\"\nrate = \"1/m\"\nburst = 2\n",
        2,
    );
    let (a4, a6) = (v4(&s), v6(&s));
    // Each on its own connection: the two workers take turns.
    for _ in 0..3 {
        assert_eq!(get(a4, "/login/a.txt", "").body, b"a");
    }
    let r = get(a4, "/login/b.txt", "");
    assert_429(&r, 60);
    // Not limited: another path, another client.
    assert_eq!(get(a4, "/open.txt", "").body, b"open");
    assert_eq!(get(a6, "/login/a.txt", "").body, b"a");
}

#[test]
fn address_and_path_counts_each_path_apart() {
    let s = site(
        "[[rate_limit]]\npath = \"/login/\"\nrate = \"1/m\"\nkey = \"address+path\"\n",
        1,
    );
    let a4 = v4(&s);
    assert_eq!(get(a4, "/login/a.txt", "").status, 200);
    assert_eq!(get(a4, "/login/b.txt", "").status, 200);
    assert_eq!(get(a4, "/login/a.txt", "").status, 429);
    assert_eq!(get(a4, "/login/b.txt", "").status, 429);
}

#[cfg(feature = "http2")]
#[test]
fn rate_limits_hold_over_http2() {
    let s = site(
        "[[rate_limit]]\npath = \"/login/\"\nrate = \"1/m\"\nburst = 1\n",
        1,
    );
    let got = get_h2(
        v6(&s),
        &["/login/a.txt", "/login/b.txt", "/login/a.txt", "/open.txt"],
    );
    let status: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(status, ["200", "200", "429", "200"]);
    let secs: u64 = got[2].1.as_deref().expect("retry-after").parse().unwrap();
    assert!((1..=60).contains(&secs), "{secs}");
    assert_eq!(got[2].2, error_page(429, "Too Many Requests").as_bytes());
    // Over HTTP/1.1 too: one bucket for the client.
    assert_eq!(get(v6(&s), "/login/a.txt", "").status, 429);
    assert_eq!(get(v4(&s), "/login/a.txt", "").status, 200);
}

/// A request that waits for its password check (off the loop) and is
/// routed again is counted once.
#[test]
fn a_request_routed_again_after_its_password_check_counts_once() {
    let s = site(
        "[[rate_limit]]\npath = \"/private/\"\nrate = \"1/m\"\nburst = 2\n\
         [[auth]]\npath = \"/private/\"\nrealm = \"P\"\nhtpasswd = \"htpasswd\"\n",
        1,
    );
    let a4 = v4(&s);
    // bcrypt: checked by the hashing threads, then routed again.
    let good = format!(
        "Authorization: {}\r\n",
        basic_auth("bcrypt4", "correct horse")
    );
    for _ in 0..3 {
        assert_eq!(get(a4, "/private/p.txt", &good).body, b"private");
    }
    assert_eq!(get(a4, "/private/p.txt", &good).status, 429);
}

/// Many distinct clients behind a trusted proxy (more than the table
/// holds) leave memory where it was, and the client being limited stays
/// limited.
#[cfg(feature = "ops")]
#[test]
fn a_flood_of_addresses_keeps_memory_bounded_and_the_limit() {
    let s = site(
        "[proxy]\ntrusted = [\"127.0.0.1\"]\n[[rate_limit]]\npath = \"/login/\"\nrate = \"1/m\"\nburst = 10\n",
        1,
    );
    let a4 = v4(&s);
    let victim = "X-Forwarded-For: 198.51.100.7\r\n";
    for _ in 0..11 {
        assert_eq!(get(a4, "/login/a.txt", victim).status, 200);
    }
    assert_eq!(get(a4, "/login/a.txt", victim).status, 429);
    let before = s.rss_kib();
    // 40,000 new addresses (the table holds 32,768), 500 requests a
    // connection, in one write.
    let mut n = 0u32;
    while n < 40_000 {
        let mut c = Client::connect(a4);
        let mut batch = Vec::new();
        for _ in 0..500 {
            batch.extend_from_slice(
                format!(
                    "GET /login/a.txt HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.{}.{}.{}\r\n\r\n",
                    n >> 16,
                    (n >> 8) & 255,
                    n & 255
                )
                .as_bytes(),
            );
            n += 1;
        }
        c.send(&batch);
        for _ in 0..500 {
            assert_eq!(c.response().status, 200);
        }
    }
    let after = s.rss_kib();
    // An entry per address (a map) would take megabytes.
    assert!(
        after < before + 1024,
        "RSS {before} KiB before, {after} KiB after 40,000 addresses"
    );
    let r = get(a4, "/login/a.txt", victim);
    assert_eq!(r.status, 429);
    retry_after(&r, 60);
}

/// Behind a `[proxy] listen` balancer, the client its PROXY header names
/// is judged.
#[cfg(feature = "ops")]
#[test]
fn access_rules_judge_the_client_the_proxy_protocol_names() {
    let mut b = Builder::new();
    b.file("admin/a.txt", b"admin");
    b.config(
        "[proxy]\nlisten = \"127.0.0.1:0\"\n[[access]]\npath = \"/admin/\"\nallow = \"203.0.113.0/24\"\n",
    );
    b.listeners(2);
    let s = b.start();
    let via = |client: &str| {
        let mut c = Client::connect(s.addrs[1]);
        c.send(
            format!("PROXY TCP4 {client} 127.0.0.1 4711 80\r\nGET /admin/a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        c.response()
    };
    assert_eq!(via("203.0.113.7").body, b"admin");
    assert_error(&via("198.51.100.7"), 403, "Forbidden", "", Conn::Close);
    // The plain listener's client is the connection's peer, 127.0.0.1.
    assert_error(
        &get(s.addrs[0], "/admin/a.txt", ""),
        403,
        "Forbidden",
        "",
        Conn::Close,
    );
}

/// Over TLS as over plain HTTP.
#[cfg(feature = "tls")]
#[test]
fn access_and_rate_limits_hold_over_tls() {
    let mut b = Builder::new();
    b.file("admin/a.txt", b"admin").file("login/a.txt", b"a");
    b.config(
        "[[access]]\npath = \"/admin/\"\nallow = \"::1\"\n[[rate_limit]]\npath = \"/login/\"\nrate = \"1/m\"\n",
    );
    b.tls();
    let s = b.start();
    let get_tls = |path: &str| {
        let mut c = s.connect_tls();
        c.send(
            format!("GET {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        c.response()
    };
    assert_error(&get_tls("/admin/a.txt"), 403, "Forbidden", "", Conn::Close);
    assert_eq!(get_tls("/login/a.txt").body, b"a");
    let r = get_tls("/login/a.txt");
    assert_429(&r, 60);
}

/// A reload (SIGHUP) keeps the buckets (a limited client stays limited)
/// and applies the new rules.
#[test]
fn a_reload_keeps_the_buckets_and_applies_new_rules() {
    let cfg = "[log]\nlevel = \"info\"\n[[rate_limit]]\npath = \"/login/\"\nrate = \"1/m\"\n";
    let s = site(cfg, 1);
    let a4 = v4(&s);
    assert_eq!(get(a4, "/login/a.txt", "").status, 200);
    assert_eq!(get(a4, "/login/a.txt", "").status, 429);
    assert_eq!(get(a4, "/admin/a.txt", "").status, 200);
    std::fs::write(
        s.base.path.join("brisk.toml"),
        format!("{cfg}[[access]]\npath = \"/admin/\"\ndeny = \"all\"\n"),
    )
    .unwrap();
    s.signal(libc::SIGHUP);
    let line = s.wait_stderr_line("SIGHUP:");
    assert!(line.contains("reloaded"), "{line}");
    assert_error(
        &get(a4, "/admin/a.txt", ""),
        403,
        "Forbidden",
        "",
        Conn::Close,
    );
    assert_eq!(get(a4, "/login/a.txt", "").status, 429);
    assert_eq!(get(v6(&s), "/login/a.txt", "").status, 200);
}

/// A CGI local redirect (RFC 3875 §6.2.2) is the same request: counted
/// once, but its new path is judged by `[[access]]` again.
#[test]
fn a_cgi_local_redirect_counts_once_and_is_judged_again() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("login/a.txt", b"a").file("admin/a.txt", b"admin");
    for (name, to) in [("go", "/login/a.txt"), ("sneak", "/admin/a.txt")] {
        let script = b.base().join("cgi-bin").join(name);
        write_file(
            &script,
            format!("#!/bin/sh\nprintf 'Location: {to}\\n\\n'\n").as_bytes(),
        );
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    b.config(
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n\
         [[rate_limit]]\npath = \"/\"\nrate = \"1/m\"\nburst = 2\n\
         [[access]]\npath = \"/admin/\"\ndeny = \"127.0.0.1\"\n",
    );
    let s = b.start();
    for _ in 0..2 {
        assert_eq!(get(s.addr(), "/cgi-bin/go", "").body, b"a");
    }
    let r = get(s.addr(), "/cgi-bin/sneak", "");
    assert_error(&r, 403, "Forbidden", "", Conn::Close);
    assert_eq!(get(s.addr(), "/cgi-bin/go", "").status, 429);
}

/// A `[[site]]`'s rules are its own: the default site's do not reach it,
/// and its own do not reach the default site.
#[cfg(feature = "sites")]
#[test]
fn each_site_has_its_own_rules() {
    let mut b = Builder::new();
    b.file("admin/a.txt", b"admin");
    b.file("../b/admin/a.txt", b"b admin");
    b.config(
        "[[access]]\npath = \"/admin/\"\ndeny = \"all\"\n\
         [[site]]\nhosts = \"b.test\"\nroot = \"b\"\n\
         [[site.rate_limit]]\npath = \"/admin/\"\nrate = \"1/m\"\n",
    );
    let s = b.start();
    let host = |h: &str| format!("Host: {h}\r\n");
    let req = |h: &str| {
        s.request(
            format!(
                "GET /admin/a.txt HTTP/1.1\r\n{}Connection: close\r\n\r\n",
                host(h)
            )
            .as_bytes(),
        )
    };
    assert_error(&req("x"), 403, "Forbidden", "", Conn::Close);
    assert_eq!(req("b.test").body, b"b admin");
    assert_eq!(req("b.test").status, 429);
    assert_eq!(req("x").status, 403);
}
