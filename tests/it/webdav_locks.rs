//! `[[webdav]]` with `locks = true` on the wire (RFC 4918 class 2): LOCK
//! and UNLOCK, the `If` header, 423 for who holds no token, the table
//! shared by every worker, bounded, and kept across a reload. The
//! sandbox on (the default) throughout. (Timeouts run out by a clock the
//! unit tests control: `handlers::webdav::locks::tests`.)

use crate::common;

use common::*;
use std::fs;
use std::path::PathBuf;

/// A server with `workers` workers whose `/dav/` is `<base>/dav` with
/// locks on (and `extra` keys in the rule), holding `files`.
fn start(workers: u32, extra: &str, files: &[(&str, &[u8])]) -> (Server, PathBuf) {
    super::webdav::start_with(workers, &format!("locks = true\n{extra}"), files)
}

/// `method path` with header lines `headers` (each ending in CRLF) and
/// `body` (by its length; none when empty and not a PUT).
fn raw(method: &str, path: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let length = match (body.is_empty(), method) {
        (true, m) if m != "PUT" => String::new(),
        _ => format!("Content-Length: {}\r\n", body.len()),
    };
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n{headers}{length}\r\n")
        .into_bytes();
    out.extend_from_slice(body);
    out
}

pub(crate) fn send(s: &Server, method: &str, path: &str, headers: &str, body: &[u8]) -> Response {
    s.request(&raw(method, path, headers, body))
}

/// A `lockinfo` body asking for a write lock of `scope` owned by `owner`.
fn lockinfo(scope: &str, owner: &str) -> Vec<u8> {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:lockinfo xmlns:D=\"DAV:\">\
         <D:lockscope><D:{scope}/></D:lockscope><D:locktype><D:write/></D:locktype>\
         <D:owner>{owner}</D:owner></D:lockinfo>"
    )
    .into_bytes()
}

/// LOCK `path` with `headers`, asking for a lock of `scope`.
fn try_lock(s: &Server, path: &str, headers: &str, scope: &str) -> Response {
    send(s, "LOCK", path, headers, &lockinfo(scope, "me"))
}

/// The token of a LOCK's answer (its `Lock-Token`, without `<>`).
fn token(r: &Response) -> String {
    let t = r
        .header("Lock-Token")
        .unwrap_or_else(|| panic!("{}", r.head));
    let t = t
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .unwrap();
    assert!(t.starts_with("urn:uuid:") && t.len() == 45, "{t}");
    t.to_string()
}

/// Takes a lock of `scope` and `depth` on `path` for `timeout`; its token.
fn lock(s: &Server, path: &str, scope: &str, depth: &str, timeout: &str) -> String {
    let headers = format!("Depth: {depth}\r\nTimeout: {timeout}\r\n");
    let r = try_lock(s, path, &headers, scope);
    assert!(matches!(r.status, 200 | 201), "{}{}", r.head, r.text());
    token(&r)
}

const XML: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";

/// The body of a 423 naming the lock root `href`.
fn submitted(href: &str) -> String {
    format!(
        "{XML}<D:error xmlns:D=\"DAV:\"><D:lock-token-submitted><D:href>{href}</D:href>\
         </D:lock-token-submitted></D:error>\n"
    )
}

#[test]
fn options_says_class_2_and_lock_answers_byte_exact() {
    let (s, dav) = start(1, "", &[("f.txt", b"hello")]);
    let r = send(&s, "OPTIONS", "/dav/", "", b"");
    assert_eq!(r.header("DAV"), Some("1, 2"));
    assert_eq!(
        r.header("Allow"),
        Some(
            "OPTIONS, GET, HEAD, PROPFIND, PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH, LOCK, UNLOCK"
        )
    );
    let r = send(
        &s,
        "LOCK",
        "/dav/f.txt",
        "Depth: 0\r\nTimeout: Second-600\r\n",
        &lockinfo("exclusive", "<D:href>mailto:me@example.com</D:href>"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("Content-Type"),
        Some("application/xml; charset=utf-8")
    );
    let t = token(&r);
    assert_eq!(
        r.text(),
        format!(
            "{XML}<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery><D:activelock>\
             <D:locktype><D:write/></D:locktype><D:lockscope><D:exclusive/></D:lockscope>\
             <D:depth>0</D:depth><D:owner><D:href>mailto:me@example.com</D:href></D:owner>\
             <D:timeout>Second-600</D:timeout><D:locktoken><D:href>{t}</D:href></D:locktoken>\
             <D:lockroot><D:href>/dav/f.txt</D:href></D:lockroot></D:activelock>\
             </D:lockdiscovery></D:prop>\n"
        )
    );
    // PROPFIND shows it (lockdiscovery, supportedlock).
    let body = "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\"><D:prop>\
                <D:lockdiscovery/><D:supportedlock/></D:prop></D:propfind>";
    let r = send(
        &s,
        "PROPFIND",
        "/dav/f.txt",
        "Depth: 0\r\n",
        body.as_bytes(),
    );
    assert_eq!(r.status, 207);
    let text = r.text();
    assert!(
        text.contains(&format!("<D:locktoken><D:href>{t}</D:href></D:locktoken>")),
        "{text}"
    );
    assert!(
        text.contains(
            "<D:supportedlock><D:lockentry><D:lockscope><D:exclusive/></D:lockscope>\
             <D:locktype><D:write/></D:locktype></D:lockentry><D:lockentry><D:lockscope>\
             <D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>\
             </D:supportedlock>"
        ),
        "{text}"
    );
    // The file is as it was.
    assert_eq!(fs::read(dav.join("f.txt")).unwrap(), b"hello");
    // Depth 1 is no lock depth (§9.10.3); another type than write, 400.
    let r = try_lock(&s, "/dav/f.txt", "Depth: 1\r\n", "shared");
    assert_eq!(r.status, 400);
    let odd = lockinfo("shared", "x");
    let odd = String::from_utf8(odd)
        .unwrap()
        .replace("<D:write/>", "<D:read/>");
    assert_eq!(send(&s, "LOCK", "/dav/g", "", odd.as_bytes()).status, 400);
}

#[test]
fn without_locks_the_rule_is_class_1() {
    let (s, _) = super::webdav::start_with(1, "", &[]);
    let r = send(&s, "OPTIONS", "/dav/", "", b"");
    assert_eq!(r.header("DAV"), Some("1"));
    assert!(!r.header("Allow").unwrap().contains("LOCK"));
    let r = try_lock(&s, "/dav/f", "", "exclusive");
    assert_eq!(r.status, 501);
    // The If header is still read: its entity tags hold or not.
    let r = send(&s, "PUT", "/dav/f", "If: ([\"nope\"])\r\n", b"x");
    assert_eq!(r.status, 412);
    let r = send(&s, "PUT", "/dav/f", "If: (Not <DAV:no-lock>)\r\n", b"x");
    assert_eq!(r.status, 201);
}

/// Two (here eight) clients lock one file at once, over connections the
/// workers share out: one gets it, every other 423 (the table is every
/// worker's: with one table per worker, several would get it).
#[test]
fn two_clients_locking_one_file() {
    let (s, dav) = start(4, "", &[("f.txt", b"hello"), ("h.txt", b"h")]);
    let mut clients: Vec<Client> = (0..8).map(|_| s.connect()).collect();
    let body = lockinfo("exclusive", "me");
    for c in &mut clients {
        c.send(&raw("LOCK", "/dav/f.txt", "Depth: 0\r\n", &body));
    }
    let answers: Vec<Response> = clients.iter_mut().map(|c| c.response()).collect();
    let won: Vec<&Response> = answers.iter().filter(|r| r.status == 200).collect();
    assert_eq!(
        won.len(),
        1,
        "{:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    let t = token(won[0]);
    let conflict = format!(
        "{XML}<D:error xmlns:D=\"DAV:\"><D:no-conflicting-lock><D:href>/dav/f.txt</D:href>\
         </D:no-conflicting-lock></D:error>\n"
    );
    for r in answers.iter().filter(|r| r.status != 200) {
        assert_eq!(r.status, 423, "{}", r.head);
        assert_eq!(r.text(), conflict);
    }
    // A shared lock is refused too; every change without the token is 423.
    let r = try_lock(&s, "/dav/f.txt", "", "shared");
    assert_eq!(r.status, 423);
    for (method, headers, body) in [
        ("PUT", "", &b"other"[..]),
        ("DELETE", "", b""),
        ("MOVE", "Destination: /dav/g.txt\r\n", b""),
        ("PROPPATCH", "", b"<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><x xmlns=\"urn:x\">1</x></D:prop></D:set></D:propertyupdate>"),
    ] {
        let r = send(&s, method, "/dav/f.txt", headers, body);
        assert_eq!((method, r.status), (method, 423), "{}", r.text());
        assert_eq!(r.text(), submitted("/dav/f.txt"));
    }
    let r = send(&s, "COPY", "/dav/h.txt", "Destination: /dav/f.txt\r\n", b"");
    assert_eq!(r.status, 423);
    assert_eq!(fs::read(dav.join("f.txt")).unwrap(), b"hello");
    // With it, on any connection.
    let r = send(
        &s,
        "PUT",
        "/dav/f.txt",
        &format!("If: (<{t}>)\r\n"),
        b"mine",
    );
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(fs::read(dav.join("f.txt")).unwrap(), b"mine");
    // A GET needs none.
    assert_eq!(s.get("/dav/f.txt").body, b"mine");
}

#[test]
fn a_lock_taken_while_a_put_uploads_stops_its_end() {
    // A PUT under way when another client locks its file (or, for a new
    // file, its collection) was put in place all the same: the lock's
    // holder found the file replaced under its lock. Its end is now 423,
    // its body dropped; the file stays as it was locked.
    let (s, dav) = start(2, "", &[("f.txt", b"hello")]);
    for (path, lock_path, before) in [
        ("/dav/f.txt", "/dav/f.txt", Some(&b"hello"[..])),
        ("/dav/new.txt", "/dav/", None),
    ] {
        let mut c = s.connect();
        c.send(
            format!(
                "PUT {path} HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\
                 Content-Length: 10\r\n\r\n"
            )
            .as_bytes(),
        );
        assert_eq!(c.response().status, 100, "{path}: routed, no lock then");
        c.send(b"01234");
        let t = lock(&s, lock_path, "exclusive", "0", "Second-60");
        c.send(b"56789");
        let r = c.response();
        assert_eq!(r.status, 423, "{path}: {}", r.head);
        let name = path.strip_prefix("/dav/").unwrap();
        assert_eq!(fs::read(dav.join(name)).ok().as_deref(), before, "{path}");
        // Its holder's PUT goes in (the collection's token tagged with it).
        let tag = match lock_path == path {
            true => String::new(),
            false => format!("<http://localhost{lock_path}> "),
        };
        let r = send(&s, "PUT", path, &format!("If: {tag}(<{t}>)\r\n"), b"mine");
        assert!(matches!(r.status, 201 | 204), "{path}: {}", r.head);
        assert_eq!(fs::read(dav.join(name)).unwrap(), b"mine");
        let r = send(
            &s,
            "UNLOCK",
            lock_path,
            &format!("Lock-Token: <{t}>\r\n"),
            b"",
        );
        assert_eq!(r.status, 204);
    }
}

#[test]
fn shared_locks_and_collections() {
    let (s, dav) = start(1, "", &[("c/m.txt", b"m"), ("d/n.txt", b"n")]);
    // Two shared locks on one file: either token is enough.
    let a = lock(&s, "/dav/c/m.txt", "shared", "0", "Second-60");
    let b = lock(&s, "/dav/c/m.txt", "shared", "0", "Second-60");
    assert_ne!(a, b);
    assert_eq!(send(&s, "PUT", "/dav/c/m.txt", "", b"x").status, 423);
    let r = send(&s, "PUT", "/dav/c/m.txt", &format!("If: (<{b}>)\r\n"), b"x");
    assert_eq!(r.status, 204);
    // A depth-infinity lock of a collection holding a locked member
    // meets the member's locks; one of depth 0 does not, and guards the
    // collection's names only: a new member needs its token...
    let r = try_lock(&s, "/dav/c/", "Depth: infinity\r\n", "exclusive");
    assert_eq!(r.status, 423);
    let c = lock(&s, "/dav/c/", "exclusive", "0", "Second-60");
    let r = send(&s, "PUT", "/dav/c/new.txt", "", b"x");
    assert_eq!(r.status, 423);
    assert_eq!(r.text(), submitted("/dav/c"));
    assert_eq!(send(&s, "MKCOL", "/dav/c/sub", "", b"").status, 423);
    // (Tagged: an untagged list is about the new member, which no lock
    // covers, so it would not hold.)
    let untagged = format!("If: (<{c}>)\r\n");
    assert_eq!(
        send(&s, "PUT", "/dav/c/new.txt", &untagged, b"x").status,
        412
    );
    let tagged = format!("If: </dav/c/> (<{c}>)\r\n");
    assert_eq!(send(&s, "PUT", "/dav/c/new.txt", &tagged, b"x").status, 201);
    // ...the member's content, only the member's.
    let r = send(&s, "PUT", "/dav/c/m.txt", &format!("If: (<{a}>)\r\n"), b"y");
    assert_eq!(r.status, 204);
    // Removing the member needs both (the collection's names change).
    let r = send(
        &s,
        "DELETE",
        "/dav/c/m.txt",
        &format!("If: (<{a}>)\r\n"),
        b"",
    );
    assert_eq!(r.status, 423);
    assert_eq!(r.text(), submitted("/dav/c"));
    let r = send(
        &s,
        "DELETE",
        "/dav/c/m.txt",
        &format!("If: (<{a}>) (<{c}>)\r\n"),
        b"",
    );
    assert_eq!(r.status, 204);
    // Depth infinity: everything beneath is locked, and a refresh through
    // a member works (the lock's root is the collection).
    let d = lock(&s, "/dav/d/", "exclusive", "infinity", "Second-60");
    assert_eq!(send(&s, "PUT", "/dav/d/n.txt", "", b"x").status, 423);
    let r = send(
        &s,
        "PUT",
        "/dav/d/n.txt",
        &format!("If: </dav/d/> (<{d}>)\r\n"),
        b"x",
    );
    assert_eq!(r.status, 204);
    let r = send(
        &s,
        "LOCK",
        "/dav/d/n.txt",
        &format!("If: (<{d}>)\r\nTimeout: Second-90\r\n"),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.text().contains("<D:timeout>Second-90</D:timeout>"),
        "{}",
        r.text()
    );
    assert!(r
        .text()
        .contains("<D:lockroot><D:href>/dav/d</D:href></D:lockroot>"));
    // Deleting the collection with its token drops its lock.
    let r = send(&s, "DELETE", "/dav/d/", &format!("If: (<{d}>)\r\n"), b"");
    assert_eq!(r.status, 204);
    assert!(!dav.join("d").exists());
    assert_eq!(send(&s, "MKCOL", "/dav/d/", "", b"").status, 201);
    assert_eq!(send(&s, "PUT", "/dav/d/n.txt", "", b"free").status, 201);
}

#[test]
fn a_lock_on_an_unmapped_url_makes_an_empty_file() {
    let (s, dav) = start(1, "", &[]);
    let r = try_lock(&s, "/dav/new.txt", "", "exclusive");
    assert_eq!(r.status, 201, "{}", r.text());
    let t = token(&r);
    assert_eq!(fs::read(dav.join("new.txt")).unwrap(), b"");
    // Nothing to put it in: 409.
    let r = try_lock(&s, "/dav/no/new.txt", "", "exclusive");
    assert_eq!(r.status, 409);
    assert!(!dav.join("no").exists());
    let r = send(
        &s,
        "PUT",
        "/dav/new.txt",
        &format!("If: (<{t}>)\r\n"),
        b"now",
    );
    assert_eq!(r.status, 204);
    assert_eq!(fs::read(dav.join("new.txt")).unwrap(), b"now");
}

#[test]
fn the_if_header_is_evaluated() {
    let (s, dav) = start(1, "", &[("f.txt", b"hello"), ("g.txt", b"other")]);
    // (As the file is now: a GET may answer from a worker's file cache.)
    let etag_of = |name: &str| super::webdav::validators(&dav.join(name)).0;
    let (etag, g_etag) = (etag_of("f.txt"), etag_of("g.txt"));
    assert_eq!(s.get("/dav/g.txt").header("ETag"), Some(g_etag.as_str()));
    let t = lock(&s, "/dav/f.txt", "exclusive", "0", "Second-60");
    let cases: &[(String, u16)] = &[
        // The token and the ETag.
        (format!("(<{t}> [{etag}])"), 204),
        // The token with another ETag: the list does not hold.
        (format!("(<{t}> [\"nope\"])"), 412),
        // litmus's: no list holds, 412 before 423.
        ("(<DAV:no-lock>)".to_string(), 412),
        (
            format!("(<{t}> [W/\"bad\"]) (Not <DAV:no-lock> [W/\"bad\"])"),
            412,
        ),
        // The second list holds, but no token of the lock is given: 423.
        (format!("(<{t}x>) (Not <DAV:no-lock>)"), 423),
        // Given (in a list that does not hold): enough.
        (format!("(<{t}>) (Not <DAV:no-lock>)"), 204),
        (format!("(Not <DAV:no-lock> [{etag}]) (<{t}> [\"x\"])"), 204),
        // Tagged lists are about the resource they name.
        (format!("<http://localhost/dav/f.txt> (<{t}>)"), 204),
        (
            format!("</dav/g.txt> ([{g_etag}]) </dav/f.txt> (<{t}>)"),
            204,
        ),
        (format!("</dav/g.txt> (<{t}>)"), 412),
        // Another host, or outside the rule: a resource with no state.
        (format!("<http://elsewhere/dav/f.txt> (<{t}>)"), 412),
        // Malformed.
        (format!("(<{t}>"), 400),
        (format!("(<{t}>) </dav/f.txt> (<{t}>)"), 400),
    ];
    for (value, want) in cases {
        // (Each 204 rewrites the file: its ETag is taken again.)
        let etag_now = etag_of("f.txt");
        let value = value.replace(&etag, &etag_now);
        let r = send(
            &s,
            "PUT",
            "/dav/f.txt",
            &format!("If: {value}\r\n"),
            b"hello",
        );
        assert_eq!(r.status, *want, "If: {value}: {}", r.text());
    }
}

#[test]
fn refresh_and_unlock() {
    let (s, _) = start(1, "", &[("f.txt", b"hello")]);
    let t = lock(&s, "/dav/f.txt", "exclusive", "0", "Second-100");
    // A refresh: no body, the token in If; the Timeout it asks for.
    let r = send(
        &s,
        "LOCK",
        "/dav/f.txt",
        &format!("If: (<{t}>)\r\nTimeout: Second-500\r\n"),
        b"",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Lock-Token"), None);
    assert!(
        r.text().contains("<D:timeout>Second-500</D:timeout>"),
        "{}",
        r.text()
    );
    // Bounded: a day at most.
    let r = send(
        &s,
        "LOCK",
        "/dav/f.txt",
        &format!("If: (<{t}>)\r\nTimeout: Infinite\r\n"),
        b"",
    );
    assert!(
        r.text().contains("<D:timeout>Second-86400</D:timeout>"),
        "{}",
        r.text()
    );
    // Without a token of it: 412; without If at all: 400.
    let other = "urn:uuid:00000000-0000-4000-8000-000000000000";
    let r = send(
        &s,
        "LOCK",
        "/dav/f.txt",
        &format!("If: (<{other}>)\r\n"),
        b"",
    );
    assert_eq!(r.status, 412);
    assert_eq!(send(&s, "LOCK", "/dav/f.txt", "", b"").status, 400);
    // UNLOCK with a token that is no lock of the resource: 409 (§9.11.1).
    let wrong =
        format!("{XML}<D:error xmlns:D=\"DAV:\"><D:lock-token-matches-request-uri/></D:error>\n");
    let r = send(
        &s,
        "UNLOCK",
        "/dav/f.txt",
        &format!("Lock-Token: <{other}>\r\n"),
        b"",
    );
    assert_eq!(r.status, 409);
    assert_eq!(r.text(), wrong);
    // (The right token on another resource: the same.)
    send(&s, "PUT", "/dav/g.txt", "", b"g");
    let r = send(
        &s,
        "UNLOCK",
        "/dav/g.txt",
        &format!("Lock-Token: <{t}>\r\n"),
        b"",
    );
    assert_eq!(r.status, 409);
    assert_eq!(send(&s, "UNLOCK", "/dav/f.txt", "", b"").status, 400);
    assert_eq!(send(&s, "PUT", "/dav/f.txt", "", b"x").status, 423);
    let r = send(
        &s,
        "UNLOCK",
        "/dav/f.txt",
        &format!("Lock-Token: <{t}>\r\n"),
        b"",
    );
    assert_eq!(r.status, 204);
    assert_eq!(send(&s, "PUT", "/dav/f.txt", "", b"x").status, 204);
    // Gone: its token no longer holds, and a second UNLOCK is 409.
    let r = send(&s, "PUT", "/dav/f.txt", &format!("If: (<{t}>)\r\n"), b"x");
    assert_eq!(r.status, 412);
    let r = send(
        &s,
        "UNLOCK",
        "/dav/f.txt",
        &format!("Lock-Token: <{t}>\r\n"),
        b"",
    );
    assert_eq!(r.status, 409);
}

/// A root holds at most 1,024 locks: the next LOCK is 503 until one goes.
#[test]
fn the_table_is_bounded() {
    let (s, _) = start(1, "", &[("f.txt", b"hello")]);
    let body = lockinfo("shared", "me");
    let mut first = String::new();
    for i in 0..1024 {
        let r = s.request(&raw("LOCK", "/dav/f.txt", "Depth: 0\r\n", &body));
        assert_eq!(r.status, 200, "lock {i}: {}", r.text());
        if i == 0 {
            first = token(&r);
        }
    }
    let lock = raw("LOCK", "/dav/f.txt", "Depth: 0\r\n", &body);
    assert_eq!(s.request(&lock).status, 503);
    // (The bound is the root's: a lock of another of its files too.)
    let other = raw("LOCK", "/dav/g.txt", "Depth: 0\r\n", &body);
    assert_eq!(s.request(&other).status, 503);
    let unlock = format!("Lock-Token: <{first}>\r\n");
    assert_eq!(send(&s, "UNLOCK", "/dav/f.txt", &unlock, b"").status, 204);
    assert_eq!(s.request(&lock).status, 200);
}

/// A reload keeps the locks (the table is the process's).
#[test]
fn a_reload_keeps_the_locks() {
    let (s, _) = start(2, "", &[("f.txt", b"hello")]);
    let t = lock(&s, "/dav/f.txt", "exclusive", "0", "Second-600");
    let before = s.stderr().matches("SIGHUP:").count();
    let file = s.base.path.join("brisk.toml");
    let mut cfg = fs::read_to_string(&file).unwrap();
    cfg.push_str("\n# reloaded\n");
    fs::write(&file, cfg).unwrap();
    s.signal(libc::SIGHUP);
    wait_until("the reload to be logged", || {
        s.stderr()
            .lines()
            .filter(|l| l.contains("SIGHUP:"))
            .nth(before)
            .is_some_and(|l| l.contains("configuration reloaded"))
    });
    assert_eq!(send(&s, "PUT", "/dav/f.txt", "", b"x").status, 423);
    let r = send(&s, "PUT", "/dav/f.txt", &format!("If: (<{t}>)\r\n"), b"x");
    assert_eq!(r.status, 204);
}

/// With `[[auth]]` in front a lock belongs to the user who took it (RFC
/// 4918 §6.4): another user who holds its token can neither change what
/// it locks (423), refresh it (412) nor remove it (403); its creator can.
#[test]
fn a_lock_serves_only_the_user_who_took_it() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir(&dav).unwrap();
    fs::write(dav.join("f"), b"old").unwrap();
    // (Both passwords are "correct horse".)
    let hash = "$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/";
    write_file(
        &b.base().join("htpasswd"),
        format!("alice:{hash}\nbob:{hash}\n").as_bytes(),
    );
    b.config(&format!(
        "[[auth]]\npath = \"/dav/\"\nrealm = \"DAV\"\nhtpasswd = \"htpasswd\"\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nlocks = true\n",
        dav.display()
    ));
    let s = b.start();
    let alice = format!(
        "Authorization: {}\r\n",
        basic_auth("alice", "correct horse")
    );
    let bob = format!("Authorization: {}\r\n", basic_auth("bob", "correct horse"));
    let r = send(
        &s,
        "LOCK",
        "/dav/f",
        &format!("{alice}Depth: 0\r\n"),
        &lockinfo("exclusive", "alice"),
    );
    assert_eq!(r.status, 200, "{}", r.head);
    let t = token(&r);
    let holds = format!("If: (<{t}>)\r\n");
    let refresh = format!("{holds}Timeout: Second-60\r\n");
    let unlock = format!("Lock-Token: <{t}>\r\n");
    // Bob with Alice's token, then Alice: a change, a refresh, an UNLOCK.
    for (who, want, file) in [
        (&bob, [423, 412, 403], "old"),
        (&alice, [204, 200, 204], "new"),
    ] {
        let put = send(&s, "PUT", "/dav/f", &format!("{who}{holds}"), b"new");
        let refreshed = send(&s, "LOCK", "/dav/f", &format!("{who}{refresh}"), b"");
        let unlocked = send(&s, "UNLOCK", "/dav/f", &format!("{who}{unlock}"), b"");
        let got = [put.status, refreshed.status, unlocked.status];
        assert_eq!(got, want, "{who}");
        assert_eq!(fs::read(dav.join("f")).unwrap(), file.as_bytes());
        if put.status == 423 {
            assert_eq!(put.text(), submitted("/dav/f"));
        }
    }
    // Unlocked: Bob writes.
    assert_eq!(send(&s, "PUT", "/dav/f", &bob, b"bob").status, 204);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"bob");
}

/// A lock's `owner` comes back as it was sent (RFC 4918 §14.17: kept as
/// a dead property is): its text where it was, an element's attributes
/// and namespaces with it.
#[test]
fn a_lock_owner_comes_back_as_sent() {
    let (s, _) = start(1, "", &[("f", b"1")]);
    let owner = r#"text &amp; <z:who xmlns:z="urn:z" z:attr="1">me</z:who> tail"#;
    let r = send(&s, "LOCK", "/dav/f", "", &lockinfo("exclusive", owner));
    assert_eq!(r.status, 200, "{}", r.head);
    let body = String::from_utf8(r.body.clone()).unwrap();
    assert!(
        body.contains(&format!("<D:owner>{owner}</D:owner>")),
        "{body}"
    );
    let r = super::webdav::propfind(&s, "/dav/f", "0", "");
    let body = String::from_utf8(r.body.clone()).unwrap();
    assert!(
        body.contains(&format!("<D:owner>{owner}</D:owner>")),
        "{body}"
    );
}
