//! Basic authentication on the wire (RFC 7617): challenges, every
//! htpasswd format Apache's tool writes, the failed-attempt limit, reload
//! without restart, REMOTE_USER for CGI, and the user in the access log.

use crate::common;

use common::*;
use std::time::Duration;

const VECTORS: &str = include_str!("../../hash/testdata/vectors.htpasswd");

fn basic(user: &str, pass: &str) -> String {
    basic_auth(user, pass)
}

fn site(extra: &str) -> Builder {
    let mut b = Builder::new();
    b.file("private/secret.txt", b"the secret");
    b.file("public.txt", b"open");
    write_file(&b.base().join("htpasswd"), VECTORS.as_bytes());
    b.config(&format!(
        "[[auth]]\npath = \"/private/\"\nrealm = \"Private Area\"\nhtpasswd = \"htpasswd\"\n{extra}"
    ));
    b
}

fn get(s: &Server, path: &str, auth: Option<&str>) -> Response {
    let h = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    s.request(format!("GET {path} HTTP/1.1\r\nHost: x\r\n{h}Connection: close\r\n\r\n").as_bytes())
}

#[test]
fn challenge_then_every_format_is_accepted() {
    let s = site("").start();
    let r = get(&s, "/private/secret.txt", None);
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("WWW-Authenticate"),
        Some("Basic realm=\"Private Area\", charset=\"UTF-8\"")
    );
    assert_ne!(r.body, b"the secret");
    // Other spellings of the protected path are protected too.
    for p in [
        "/%70rivate/secret.txt",
        "//private/./secret.txt",
        "/x/../private/secret.txt",
    ] {
        assert_eq!(get(&s, p, None).status, 401, "{p}");
    }
    assert_eq!(get(&s, "/public.txt", None).body, b"open");
    for user in ["bcrypt4", "apr1", "sha1", "sha256", "sha512", "argon2id"] {
        let r = get(
            &s,
            "/private/secret.txt",
            Some(&basic(user, "correct horse")),
        );
        assert_eq!(r.status, 200, "{user}");
        assert_eq!(r.body, b"the secret");
        let r = get(&s, "/private/secret.txt", Some(&basic(user, "wrong horse")));
        assert_eq!(r.status, 401, "{user} with a wrong password");
    }
    // A password with a colon and non-ASCII bytes (split at the first colon).
    let r = get(
        &s,
        "/private/secret.txt",
        Some(&basic("bcrypt5", "pa:ss wörd")),
    );
    assert_eq!(r.status, 200);
}

/// Authorization holds one credential (RFC 9110 §11.6.2): a request
/// with two is refused, as nginx does, rather than judged by the first
/// while a proxy or an application may read the last.
#[test]
fn two_authorization_fields_are_a_bad_request() {
    let s = site("").start();
    let good = basic("sha1", "correct horse");
    let bad = basic("sha1", "wrong");
    for fields in [
        format!("Authorization: {bad}\r\nAuthorization: {good}\r\n"),
        format!("Authorization: {good}\r\nauthorization: {bad}\r\n"),
        format!("Authorization: {good}\r\nAuthorization: {good}\r\n"),
    ] {
        let r = s.request(
            format!(
                "GET /private/secret.txt HTTP/1.1\r\nHost: x\r\n{fields}Connection: close\r\n\r\n"
            )
            .as_bytes(),
        );
        assert_error(&r, 400, "Bad Request", "", Conn::Close);
    }
    // One is judged as ever.
    assert_eq!(
        get(&s, "/private/secret.txt", Some(&good)).body,
        b"the secret"
    );
}

#[test]
fn too_many_failures_get_429_with_retry_after() {
    let s = site("[limits]\nauth_failures = 3\n").start();
    for _ in 0..3 {
        assert_eq!(
            get(&s, "/private/secret.txt", Some(&basic("apr1", "guess"))).status,
            401
        );
    }
    let r = get(
        &s,
        "/private/secret.txt",
        Some(&basic("apr1", "correct horse")),
    );
    assert_eq!(r.status, 429);
    assert!(r
        .header("Retry-After")
        .is_some_and(|v| v.parse::<u64>().is_ok()));
    assert!(r.head.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
    // Unprotected paths are still served to that client.
    assert_eq!(get(&s, "/public.txt", None).status, 200);
}

#[test]
fn the_failure_limit_holds_across_workers() {
    // Each request comes on a new connection, which the kernel hands to
    // any of the four workers: the count must be the server's, not one
    // worker's, or a correct guess would get through.
    let mut b = site("[limits]\nauth_failures = 3\n");
    b.workers(4);
    let s = b.start();
    for _ in 0..3 {
        assert_eq!(
            get(&s, "/private/secret.txt", Some(&basic("apr1", "guess"))).status,
            401
        );
    }
    for _ in 0..12 {
        let r = get(
            &s,
            "/private/secret.txt",
            Some(&basic("apr1", "correct horse")),
        );
        assert_eq!(r.status, 429);
    }
}

#[test]
fn a_slow_password_check_does_not_hold_up_other_clients() {
    // bcrypt at cost 10 (htpasswd -B -C 10): a noticeable hash.
    let mut b = site("");
    let slow = "slow:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
    write_file(
        &b.base().join("htpasswd"),
        format!("{VECTORS}{slow}").as_bytes(),
    );
    b.workers(1);
    let s = b.start();
    let request = format!(
        "GET /private/secret.txt HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\r\n",
        basic("slow", "correct horse")
    );
    let mut c = s.connect();
    c.send(request.as_bytes());
    // While the one worker has that password hashed, it answers another
    // client, and the first answer is not there yet.
    assert_eq!(get(&s, "/public.txt", None).body, b"open");
    c.expect_silence(Duration::from_millis(1));
    let r = c.response();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"the secret"[..]));
    // Verified once: the next request is answered from memory, also on a
    // new connection.
    c.send(request.as_bytes());
    assert_eq!(c.response().status, 200);
    let mut again = s.connect();
    again.send(request.as_bytes());
    assert_eq!(again.response().status, 200);
    // A wrong password is hashed away from the loop too, and refused.
    let r = get(&s, "/private/secret.txt", Some(&basic("slow", "wrong")));
    assert_eq!(r.status, 401);
}

#[test]
fn an_unknown_user_does_not_hold_up_other_clients() {
    // An unknown user costs the hash of the file's first entry (a decoy,
    // so that times do not tell which names exist): here bcrypt at cost
    // 10. It is hashed away from the loop as a known user's password is,
    // not on the one worker, which would keep every other client waiting.
    let mut b = site("");
    let slow = "slow:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
    write_file(
        &b.base().join("htpasswd"),
        format!("{slow}{VECTORS}").as_bytes(),
    );
    b.workers(1);
    let s = b.start();
    let mut c = s.connect();
    c.send(
        format!(
            "GET /private/secret.txt HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\r\n",
            basic("nobody-by-this-name", "guess")
        )
        .as_bytes(),
    );
    assert_eq!(get(&s, "/public.txt", None).body, b"open");
    c.expect_silence(Duration::from_millis(1));
    assert_eq!(c.response().status, 401);
}

/// A site whose htpasswd file adds `slow` ("correct horse", bcrypt at
/// cost 10, the costliest entry: an unknown user's decoy too), with the
/// built-in `metrics` handler, on two workers; the process's first
/// password check waits until `waiters` identical ones wait for it (a
/// hook of debug builds: see `Check::hold`), if not 0.
#[cfg(feature = "ops")]
fn slow_site(waiters: usize) -> Server {
    let mut b = site("[[handlers]]\npath = \"/-/metrics\"\nhandler = \"metrics\"\n");
    let slow = "slow:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
    write_file(
        &b.base().join("htpasswd"),
        format!("{VECTORS}{slow}").as_bytes(),
    );
    b.workers(2);
    if waiters > 0 {
        b.env("BRISK_TEST_HASH_WAITERS", &waiters.to_string());
    }
    b.start()
}

/// The statuses of requests with these `Authorization` values, each on a
/// connection of its own, all sent before any answer is read.
#[cfg(feature = "ops")]
fn all_at_once(s: &Server, auths: &[String]) -> Vec<u16> {
    let mut conns: Vec<Client> = auths.iter().map(|_| s.connect()).collect();
    for (c, a) in conns.iter_mut().zip(auths) {
        c.send(
            format!(
                "GET /private/secret.txt HTTP/1.1\r\nHost: x\r\nAuthorization: {a}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        );
    }
    conns.iter_mut().map(|c| c.response().status).collect()
}

/// `brisk_auth_hashes_total`, all workers.
#[cfg(feature = "ops")]
fn hashes(s: &Server) -> u64 {
    let m = s.get("/-/metrics").text();
    m.lines()
        .filter_map(|l| l.strip_prefix("brisk_auth_hashes_total{")?.split_once("} "))
        .map(|(_, n)| n.parse::<u64>().unwrap())
        .sum()
}

#[cfg(feature = "ops")]
#[test]
fn identical_logins_at_once_share_one_hash() {
    // An application's 30 requests at once, just after a start: one
    // password hashed, and none of them a failure, so none gets the 429
    // of `limits.auth_failures` (10).
    let s = slow_site(29);
    let login = basic("slow", "correct horse");
    assert_eq!(all_at_once(&s, &vec![login; 30]), vec![200; 30]);
    assert_eq!(hashes(&s), 1);
}

#[cfg(feature = "ops")]
#[test]
fn one_wrong_password_sent_at_once_is_one_failure() {
    let s = slow_site(29);
    let guess = basic("slow", "wrong");
    assert_eq!(all_at_once(&s, &vec![guess; 30]), vec![401; 30]);
    assert_eq!(hashes(&s), 1);
    // One failure of the ten: nine more guesses are refused, then the
    // client is over its limit.
    for i in 0..9 {
        let guess = basic("apr1", &format!("guess {i}"));
        assert_eq!(get(&s, "/private/secret.txt", Some(&guess)).status, 401);
    }
    let login = basic("apr1", "correct horse");
    assert_eq!(get(&s, "/private/secret.txt", Some(&login)).status, 429);
}

#[cfg(feature = "ops")]
#[test]
fn different_logins_at_once_are_each_checked() {
    let s = slow_site(0);
    let logins = [
        basic("slow", "correct horse"),
        basic("slow", "wrong"),
        basic("slow", "correct horse "),
        basic("nobody", "correct horse"),
    ];
    assert_eq!(all_at_once(&s, &logins), [200, 401, 401, 401]);
    assert_eq!(hashes(&s), 4);
}

#[test]
fn the_file_is_reread_when_it_changes() {
    // No failure limit: the polling below fails until the reload is seen.
    let b = site("[limits]\nauth_failures = 0\n");
    let path = b.base().join("htpasswd");
    let s = b.start();
    let apr1_line = VECTORS.lines().find(|l| l.starts_with("apr1:")).unwrap();
    assert_eq!(
        get(
            &s,
            "/private/secret.txt",
            Some(&basic("apr1", "correct horse"))
        )
        .status,
        200
    );
    // Replace the file with one where apr1's hash belongs to "newuser"
    // (a file of another size, so the change shows whatever the clocks).
    let new = format!("newuser:{}\n", &apr1_line[5..]);
    assert_ne!(
        new.len() as u64,
        std::fs::metadata(&path).expect("htpasswd").len()
    );
    write_file(&path, new.as_bytes());
    wait_until("the new file to be read", || {
        get(
            &s,
            "/private/secret.txt",
            Some(&basic("newuser", "correct horse")),
        )
        .status
            == 200
    });
    assert_eq!(
        get(
            &s,
            "/private/secret.txt",
            Some(&basic("apr1", "correct horse"))
        )
        .status,
        401
    );
}

#[test]
fn remote_user_reaches_cgi_and_the_log() {
    let mut b = site("[[cgi]]\nurl = \"/private/cgi/\"\ndir = \"cgi\"\n");
    let script = b.base().join("cgi/who.sh");
    write_file(&script, b"#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s %s' \"$REMOTE_USER\" \"$AUTH_TYPE\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    b.access_log();
    let s = b.start();
    let r = get(
        &s,
        "/private/cgi/who.sh",
        Some(&basic("sha1", "correct horse")),
    );
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.body.ends_with(b"sha1 Basic"),
        "{:?}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(get(&s, "/private/cgi/who.sh", None).status, 401);
    let line = s.wait_access_line(|l| l.windows(12).any(|w| w == b"/private/cgi"));
    assert!(
        line.starts_with(b"127.0.0.1 - sha1 ["),
        "{}",
        String::from_utf8_lossy(&line)
    );
    assert!(
        !s.stderr().contains("correct horse"),
        "no password in the logs"
    );
}

// (`[proxy] trusted` is the cargo feature `ops`.)
#[cfg(feature = "ops")]
#[test]
fn behind_a_proxy_clients_share_the_failure_count_unless_it_is_trusted() {
    // What the book says of a reverse proxy: every client arrives from the
    // proxy's address (here 127.0.0.1), so one client's failures lock out
    // another one on a connection of its own…
    let guess_then_other = |s: &Server| {
        let mut guesser = s.connect();
        for want in [401, 401, 401, 429] {
            guesser.send(
                format!(
                    "GET /private/secret.txt HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.1\r\nAuthorization: {}\r\n\r\n",
                    basic("apr1", "guess")
                )
                .as_bytes(),
            );
            assert_eq!(guesser.response().status, want);
        }
        let mut other = s.connect();
        other.send(
            format!(
                "GET /private/secret.txt HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.2\r\nAuthorization: {}\r\n\r\n",
                basic("apr1", "correct horse")
            )
            .as_bytes(),
        );
        other.response().status
    };
    let s = site("[limits]\nauth_failures = 3\n").start();
    assert_eq!(guess_then_other(&s), 429);
    drop(s);
    // …unless the proxy is trusted ([proxy] trusted): its X-Forwarded-For
    // names each client, whose failures are its own.
    let s = site("[limits]\nauth_failures = 3\n[proxy]\ntrusted = \"127.0.0.1\"\n").start();
    assert_eq!(guess_then_other(&s), 200);
    s.wait_stderr_line("auth: 203.0.113.1 is over its failed-attempt limit; 429");
}

/// The README's shared folder: everyone reads, users write
/// (`except_methods`, as nginx's `limit_except`); a method nobody listed
/// needs the login too.
#[cfg(all(feature = "webdav", feature = "sites"))]
#[test]
fn a_share_everyone_reads_and_users_write() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    write_file(&dav.join("a.txt"), b"old");
    write_file(&b.base().join("htpasswd"), VECTORS.as_bytes());
    b.config(&format!(
        "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n\n\
         [[auth]]\npath = \"/dav/\"\nrealm = \"Writers\"\nhtpasswd = \"htpasswd\"\n\
         except_methods = [\"GET\", \"HEAD\", \"OPTIONS\", \"PROPFIND\"]\n",
        dav.display()
    ));
    let s = b.start();
    let send = |method: &str, path: &str, auth: Option<&str>, body: &str| {
        let mut h = auth
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        if method == "PROPFIND" {
            h.push_str("Depth: 1\r\n");
        }
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\n{h}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.request(raw.as_bytes())
    };
    assert_eq!(send("GET", "/dav/a.txt", None, "").body, b"old");
    let mut c = s.connect();
    c.send(b"HEAD /dav/a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.head_response().status, 200);
    assert_eq!(send("OPTIONS", "/dav/", None, "").status, 200);
    let r = send("PROPFIND", "/dav/", None, "");
    assert_eq!(r.status, 207, "{}", r.head);
    for method in ["PUT", "DELETE", "MKCOL", "PROPPATCH", "FROB"] {
        let r = send(method, "/dav/a.txt", None, "new");
        assert_eq!(r.status, 401, "{method}");
        assert_eq!(
            r.header("WWW-Authenticate"),
            Some("Basic realm=\"Writers\", charset=\"UTF-8\""),
            "{method}"
        );
    }
    let r = send("PUT", "/dav/a.txt", Some(&basic("apr1", "wrong")), "new");
    assert_eq!(r.status, 401);
    assert_eq!(std::fs::read(dav.join("a.txt")).unwrap(), b"old");
    let r = send(
        "PUT",
        "/dav/a.txt",
        Some(&basic("apr1", "correct horse")),
        "new",
    );
    assert_eq!(r.status, 204, "{}", r.head);
    assert_eq!(std::fs::read(dav.join("a.txt")).unwrap(), b"new");
}

/// A directory's index file is judged by the guards as its own path is:
/// `pattern = "/members/*.html"` (a login) and `pattern = "/staff/*.html"`
/// (refused to all) guard `/members/` and `/staff/` when their
/// `index.html` is what they serve, as nginx's `index` (an internal
/// redirect) and Apache's `DirectoryIndex` (a subrequest) do. It was
/// served to anyone. With the login (a bcrypt check off the loop, the
/// request routed again after it), the index is served.
#[test]
fn a_directory_s_index_file_is_guarded_as_its_own_path() {
    let mut b = Builder::new();
    b.file("members/index.html", b"members only")
        .file("staff/index.html", b"staff only")
        .file("open/index.html", b"open");
    write_file(&b.base().join("htpasswd"), VECTORS.as_bytes());
    // (A WebDAV share's GET of a collection serves its index too.)
    let dav = b.base().join("dav");
    write_file(&dav.join("board/index.html"), b"board only");
    let share = match cfg!(feature = "webdav") {
        true => format!(
            "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n",
            dav.display()
        ),
        false => String::new(),
    };
    b.config(&format!(
        "[[auth]]\npattern = \"/members/*.html\"\nrealm = \"Members\"\nhtpasswd = \"htpasswd\"\n\
         [[access]]\npattern = \"/staff/*.html\"\ndeny = [\"all\"]\n\
         [[access]]\npattern = \"/dav/board/*.html\"\ndeny = [\"all\"]\n{share}",
    ));
    let s = b.start();
    if cfg!(feature = "webdav") {
        assert_eq!(get(&s, "/dav/board/", None).status, 403);
    }
    for path in ["/members/", "/members/index.html"] {
        let r = get(&s, path, None);
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(
            r.header("WWW-Authenticate"),
            Some("Basic realm=\"Members\", charset=\"UTF-8\"")
        );
        assert!(r.header("ETag").is_none(), "{}", r.head);
    }
    for user in ["apr1", "bcrypt4"] {
        let r = get(&s, "/members/", Some(&basic(user, "correct horse")));
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "members only"),
            "{user}"
        );
    }
    let r = get(&s, "/members/", Some(&basic("apr1", "wrong")));
    assert_eq!(r.status, 401);
    for path in ["/staff/", "/staff/index.html"] {
        assert_eq!(get(&s, path, None).status, 403, "{path}");
    }
    s.wait_stderr_line("refused /staff/index.html by the [[access]] rule at ");
    assert_eq!(get(&s, "/open/", None).text(), "open");
}
