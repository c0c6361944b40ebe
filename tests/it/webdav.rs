//! `[[webdav]]` on the wire (RFC 4918): OPTIONS, GET/HEAD through the
//! static handler, PUT (streamed into an unnamed file, then renamed in
//! place), MKCOL, DELETE; paths kept beneath the root; the sandbox on
//! (the default) throughout.

use super::webdav_clients::have;
use super::webdav_locks::send as send_with;
use crate::common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};

/// A server whose `/dav/` is `<base>/dav` (with `extra` keys in the
/// rule), holding `files`.
pub(crate) fn start(extra: &str, files: &[(&str, &[u8])]) -> (Server, PathBuf) {
    start_with(1, extra, files)
}

/// [`start`] with `workers` workers.
pub(crate) fn start_with(workers: u32, extra: &str, files: &[(&str, &[u8])]) -> (Server, PathBuf) {
    let (mut b, dav) = builder(extra);
    b.workers(workers);
    for (rel, body) in files {
        write_file(&dav.join(rel), body);
    }
    (b.start(), dav)
}

/// A server to start with a `[[webdav]]` rule at `/dav/` over
/// `<base>/dav` (empty), `extra` lines in the rule; and that directory.
pub(crate) fn builder(extra: &str) -> (Builder, PathBuf) {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir(&dav).unwrap();
    b.config(&format!(
        "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n{extra}",
        dav.display()
    ));
    (b, dav)
}

/// Sends `method path` with `body` (by its length; none when empty and
/// `method` is not PUT) and reads the answer.
pub(crate) fn send(s: &Server, method: &str, path: &str, body: &[u8]) -> Response {
    let length = match (body.is_empty(), method) {
        (true, m) if m != "PUT" => String::new(),
        _ => format!("Content-Length: {}\r\n", body.len()),
    };
    let mut raw =
        format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n{length}\r\n").into_bytes();
    raw.extend_from_slice(body);
    s.request(&raw)
}

/// The names in `dir`, sorted.
pub(crate) fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

#[test]
fn options_says_class_1_and_the_methods() {
    let (s, _) = start("", &[]);
    let r = send(&s, "OPTIONS", "/dav/", b"");
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.header("DAV"), Some("1"));
    assert_eq!(
        r.header("Allow"),
        Some("OPTIONS, GET, HEAD, PROPFIND, PUT, DELETE, MKCOL, COPY, MOVE, PROPPATCH")
    );
    assert_eq!(r.header("Content-Length"), Some("0"));
    // The collection itself, without its slash, is the rule's too.
    assert_eq!(send(&s, "OPTIONS", "/dav", b"").header("DAV"), Some("1"));
    // Outside the prefix: the static handler's OPTIONS, no DAV.
    assert_eq!(send(&s, "OPTIONS", "/other", b"").header("DAV"), None);
    let (ro, _) = start("read_only = true\n", &[]);
    let r = send(&ro, "OPTIONS", "/dav/", b"");
    assert_eq!(r.header("Allow"), Some("OPTIONS, GET, HEAD, PROPFIND"));
}

#[test]
fn put_creates_replaces_and_get_serves_it_as_a_static_file() {
    let (s, dav) = start("", &[]);
    let r = send(&s, "PUT", "/dav/a%20b.txt", b"hello");
    assert_eq!(
        (r.status, r.header("Content-Length")),
        (201, Some("0")),
        "{}",
        r.head
    );
    assert_eq!(fs::read(dav.join("a b.txt")).unwrap(), b"hello");
    let r = send(&s, "PUT", "/dav/a%20b.txt", b"bye!");
    assert_eq!(r.status, 204, "{}", r.head);
    let r = s.get("/dav/a%20b.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"bye!"[..]));
    // The static handler's validators, for the file in the WebDAV tree.
    let (etag, _) = validators(&dav.join("a b.txt"));
    assert_eq!(r.header("ETag"), Some(etag.as_str()));
    // An empty body makes an empty file.
    assert_eq!(send(&s, "PUT", "/dav/empty", b"").status, 201);
    assert_eq!(fs::read(dav.join("empty")).unwrap(), b"");
    // No parent: 409; onto a collection: 405; the root itself: 405.
    assert_eq!(send(&s, "PUT", "/dav/no/such", b"x").status, 409);
    fs::create_dir(dav.join("c")).unwrap();
    assert_eq!(send(&s, "PUT", "/dav/c", b"x").status, 405);
    assert_eq!(send(&s, "PUT", "/dav/", b"x").status, 405);
    assert_eq!(names(&dav), ["a b.txt", "c", "empty"]);
    // Nothing was written to the site's root.
    assert!(names(&s.root).is_empty());
}

#[test]
fn a_chunked_put_streams_into_the_file() {
    let (s, dav) = start("", &[]);
    let mut c = s.connect();
    c.send(b"PUT /dav/big HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n");
    let piece = vec![b'z'; 100_000];
    let mut sent = 0;
    for _ in 0..5 {
        c.send(format!("{:x}\r\n", piece.len()).as_bytes());
        c.send(&piece);
        c.send(b"\r\n");
        sent += piece.len();
    }
    c.send(b"0\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 201, "{}", r.head);
    assert_eq!(fs::read(dav.join("big")).unwrap().len(), sent);
}

/// `fsync = false`: the same answers and files (the PUT's end runs on
/// the event loop then), several PUTs on one connection, either framing.
#[test]
fn without_fsync_the_changes_and_answers_are_the_same() {
    let (s, dav) = start("fsync = false\n", &[("old", b"old")]);
    let mut c = s.connect();
    let body = vec![b'q'; 300_000];
    for (i, status) in [(0, 201), (1, 204), (2, 204)] {
        let mut raw = format!(
            "PUT /dav/f HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
            body.len() + i
        )
        .into_bytes();
        raw.extend_from_slice(&body);
        raw.extend(std::iter::repeat_n(b'!', i));
        c.send(&raw);
        let r = c.response();
        assert_eq!(r.status, status, "{}", r.head);
        assert_eq!(fs::read(dav.join("f")).unwrap().len(), body.len() + i);
    }
    c.send(b"PUT /dav/old HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nnew\r\n0\r\n\r\n");
    assert_eq!(c.response().status, 204);
    assert_eq!(fs::read(dav.join("old")).unwrap(), b"new");
    assert_eq!(send(&s, "MKCOL", "/dav/c", b"").status, 201);
    let r = transfer(&s, "COPY", "/dav/old", "/dav/c/copy", "");
    assert_eq!(r.status, 201, "{}", r.head);
    assert_eq!(fs::read(dav.join("c/copy")).unwrap(), b"new");
    assert_eq!(send(&s, "DELETE", "/dav/c", b"").status, 204);
    assert_eq!(names(&dav), ["f", "old"]);
}

#[test]
fn a_put_that_stops_halfway_leaves_the_old_file_and_nothing_else() {
    let (s, dav) = start("", &[("f", b"old contents")]);
    let mut c = s.connect();
    c.send(b"PUT /dav/f HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000\r\n\r\n");
    c.send(&vec![b'n'; 300_000]);
    // (The server may not have read them all when the next request is
    // answered: the check holds at any point of the upload.)
    let r = send(&s, "OPTIONS", "/dav/", b"");
    assert_eq!(r.status, 200);
    // ...and the directory shows no partial file, while the upload is
    // under way nor after the client left.
    assert_eq!(names(&dav), ["f"]);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"old contents");
    drop(c);
    let r = send(&s, "OPTIONS", "/dav/", b"");
    assert_eq!(r.status, 200);
    assert_eq!(names(&dav), ["f"]);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"old contents");
}

/// A PUT's body framed by its length goes from the socket into its file
/// through a pipe (`splice(2)`, the bytes never in brisk's memory), the
/// sandbox on: every byte in its place whatever pieces it comes in, a
/// partial PUT's at its range, the request that follows a body on the
/// connection read as a request; the worker keeps the pipe it used.
#[test]
fn a_put_body_goes_into_its_file_through_a_pipe_byte_for_byte() {
    let (s, dav) = start("max_upload = \"16MiB\"\n", &[("part", &[b'o'; 1000])]);
    let before = s.pipe_ends();
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut c = s.connect();
    let head = format!(
        "PUT /dav/big HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.send(head.as_bytes());
    // In uneven pieces (1 byte to 200 KB); the last with the next request.
    let (mut at, mut step) = (0, 1);
    while at < body.len() - 1000 {
        let n = step.min(body.len() - 1000 - at);
        c.send(&body[at..at + n]);
        at += n;
        step = (step * 7 + 13) % 200_000 + 1;
    }
    let mut tail = body[at..].to_vec();
    tail.extend_from_slice(b"OPTIONS /dav/ HTTP/1.1\r\nHost: localhost\r\n\r\n");
    c.send(&tail);
    let r = c.response();
    assert_eq!(r.status, 201, "{}", r.head);
    let r = c.response();
    assert_eq!(
        (r.status, r.header("DAV").is_some()),
        (200, true),
        "{}",
        r.head
    );
    assert!(
        fs::read(dav.join("big")).unwrap() == body,
        "not the bytes sent"
    );
    // A partial PUT: its body at its range, the old bytes before it kept.
    let part = &body[..500_000];
    let mut raw = format!(
        "PUT /dav/part HTTP/1.1\r\nHost: localhost\r\nContent-Range: bytes 100-500099/*\r\n\
         Content-Length: {}\r\n\r\n",
        part.len()
    )
    .into_bytes();
    raw.extend_from_slice(part);
    assert_eq!(s.request(&raw).status, 204);
    let got = fs::read(dav.join("part")).unwrap();
    assert!(
        got[..100] == [b'o'; 100] && got[100..] == *part,
        "not old + range"
    );
    let after = s.pipe_ends();
    assert!(
        after > before,
        "no pipe used: {before} pipe ends, then {after}"
    );
    assert_eq!(names(&dav), ["big", "part"]);
}

#[test]
fn mkcol_makes_a_collection_once() {
    let (s, dav) = start("", &[]);
    assert_eq!(send(&s, "MKCOL", "/dav/d/", b"").status, 201);
    assert!(dav.join("d").is_dir());
    assert_eq!(send(&s, "MKCOL", "/dav/d", b"").status, 405);
    assert_eq!(send(&s, "MKCOL", "/dav/x/y/", b"").status, 409);
    // RFC 4918 §9.3.1: a body MKCOL does not understand is 415.
    assert_eq!(send(&s, "MKCOL", "/dav/e/", b"<x/>").status, 415);
    assert_eq!(names(&dav), ["d"]);
}

#[test]
fn delete_removes_files_and_whole_collections() {
    let files: &[(&str, &[u8])] = &[("f", b"1"), ("d/g", b"2"), ("d/e/h", b"3"), ("keep", b"4")];
    let (s, dav) = start("", files);
    assert_eq!(send(&s, "DELETE", "/dav/f", b"").status, 204);
    assert_eq!(send(&s, "DELETE", "/dav/f", b"").status, 404);
    // A collection goes whole, or not at all: a Depth other than
    // infinity is 400 (RFC 4918 §9.6.1), and nothing is removed.
    for depth in ["0", "1"] {
        let r = s.request(
            format!("DELETE /dav/d/ HTTP/1.1\r\nHost: localhost\r\nDepth: {depth}\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(r.status, 400, "Depth: {depth}");
        assert_eq!(fs::read(dav.join("d/e/h")).unwrap(), b"3");
    }
    let r = s.request(b"DELETE /dav/d/ HTTP/1.1\r\nHost: localhost\r\nDepth: Infinity\r\n\r\n");
    assert_eq!(r.status, 204);
    assert_eq!(names(&dav), ["keep"]);
    // Never the root itself.
    assert_eq!(send(&s, "DELETE", "/dav/", b"").status, 403);
}

#[test]
fn a_collection_that_cannot_all_go_is_a_207_naming_what_stayed() {
    use std::os::unix::fs::PermissionsExt;
    let (s, dav) = start("", &[("d/ok", b"1"), ("d/locked/x y", b"2")]);
    let stuck = dav.join("d/locked/x y");
    // A member that cannot be removed: for root, whom directory modes
    // bind nothing, an immutable file (chattr +i, ext4 and the like);
    // for others, a directory without write permission.
    let root = brisk::sys::privileges::euid() == 0;
    let pin = |on: bool| -> bool {
        if root {
            std::process::Command::new("chattr")
                .arg(if on { "+i" } else { "-i" })
                .arg(&stuck)
                .status()
                .is_ok_and(|st| st.success())
        } else {
            let mode = if on { 0o555 } else { 0o755 };
            fs::set_permissions(dav.join("d/locked"), fs::Permissions::from_mode(mode)).is_ok()
        }
    };
    if !pin(true) {
        skip("as root, needs chattr +i on the temporary directory's filesystem");
        return;
    }
    let r = send(&s, "DELETE", "/dav/d/", b"");
    assert!(pin(false));
    assert_eq!(r.status, 207, "{}", r.head);
    assert_eq!(
        r.header("Content-Type"),
        Some("application/xml; charset=utf-8")
    );
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n\
         <D:response><D:href>/dav/d/locked/x%20y</D:href><D:status>HTTP/1.1 403 Forbidden</D:status></D:response>\n\
         </D:multistatus>\n"
    );
    assert_eq!(names(&dav.join("d")), ["locked"]);
    // The error log says why (it said nothing: the 207 was the one sign).
    let why = if root {
        "Operation not permitted (os error 1)"
    } else {
        "Permission denied (os error 13)"
    };
    let line = s.wait_stderr_line("webdav: DELETE /dav/d/: ");
    let want = format!(
        "[warn] webdav: DELETE /dav/d/: \"{}\": cannot be changed: {why} (file permissions for the user brisk runs as, a read-only mount, or the sandbox)",
        stuck.display()
    );
    assert!(line.ends_with(&want), "{line}");
}

#[test]
fn read_only_refuses_every_change() {
    let (s, dav) = start("read_only = true\n", &[("f", b"1")]);
    for (m, p) in [
        ("PUT", "/dav/g"),
        ("DELETE", "/dav/f"),
        ("MKCOL", "/dav/d/"),
        ("COPY", "/dav/f"),
        ("MOVE", "/dav/f"),
        ("PROPPATCH", "/dav/f"),
        ("LOCK", "/dav/f"),
        ("UNLOCK", "/dav/f"),
    ] {
        let r = transfer(&s, m, p, "/dav/h", "Content-Length: 0\r\n");
        assert_eq!(r.status, 405, "{m}");
        assert_eq!(r.header("Allow"), Some("OPTIONS, GET, HEAD, PROPFIND"));
    }
    assert_eq!(names(&dav), ["f"]);
    assert_eq!(s.get("/dav/f").body, b"1");
}

/// A path that cannot be decoded (a control character, `%00`) is 400
/// whatever the method, not a 405 that says the method is never taken.
#[test]
fn a_path_that_cannot_be_read_is_400_for_every_method() {
    let (s, dav) = start("", &[("f", b"1")]);
    for m in ["GET", "PUT", "DELETE", "PROPFIND", "MKCOL", "POST", "FOO"] {
        for p in ["/dav/a%01b", "/dav/a%00", "/dav/%7f", "/dav/a%09b"] {
            let r = transfer(&s, m, p, "/dav/h", "Content-Length: 0\r\n");
            assert_eq!(r.status, 400, "{m} {p}");
        }
    }
    assert_eq!(names(&dav), ["f"]);
}

#[test]
fn nothing_is_written_or_removed_through_a_symlink_or_a_dotfile() {
    let (s, dav) = start("", &[]);
    let outside = s.base.path.join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret"), b"keep").unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), dav.join("link")).unwrap();
    std::os::unix::fs::symlink(&outside, dav.join("out")).unwrap();
    // A PUT onto a symlink replaces the link, not what it names.
    assert_eq!(send(&s, "PUT", "/dav/link", b"new").status, 204);
    assert!(!fs::symlink_metadata(dav.join("link")).unwrap().is_symlink());
    assert_eq!(fs::read(outside.join("secret")).unwrap(), b"keep");
    // Through a symlinked directory that leads out: refused.
    assert_eq!(send(&s, "PUT", "/dav/out/secret", b"x").status, 403);
    assert_eq!(send(&s, "DELETE", "/dav/out/secret", b"").status, 403);
    assert_eq!(send(&s, "MKCOL", "/dav/out/d/", b"").status, 403);
    assert_eq!(fs::read(outside.join("secret")).unwrap(), b"keep");
    assert_eq!(names(&outside), ["secret"]);
    // Deleting the link removes the link.
    assert_eq!(send(&s, "DELETE", "/dav/out", b"").status, 204);
    assert_eq!(names(&outside), ["secret"]);
    // Dotfiles, as [static] dotfiles says (deny: 403), for every method.
    assert_eq!(send(&s, "PUT", "/dav/.htaccess", b"x").status, 403);
    assert_eq!(send(&s, "MKCOL", "/dav/.git/", b"").status, 403);
    assert_eq!(names(&dav), ["link"]);
}

/// A symlink beneath the root that names a directory there is no way to
/// change anything: not a source, a destination, a parent or a file to
/// lock, make or patch (403), so a MOVE or COPY through one cannot take
/// the destination for another than the source's ancestor and remove it,
/// and a guard or a lock on the directory it names is not passed by.
/// Reads through it are as before.
#[test]
fn nothing_is_changed_through_a_symlink_that_stays_beneath_the_root() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    write_file(&dav.join("d/b/f.txt"), b"precious\n");
    write_file(&dav.join("sub/x"), b"alice's\n");
    write_file(&dav.join("pub.txt"), b"public\n");
    std::os::unix::fs::symlink("d", dav.join("L")).unwrap();
    std::os::unix::fs::symlink("sub", dav.join("linkin")).unwrap();
    write_file(
        &b.base().join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    b.config(&format!(
        "[[auth]]\npath = \"/dav/sub/\"\nrealm = \"Sub\"\nhtpasswd = \"htpasswd\"\n\
         except_methods = [\"GET\", \"HEAD\", \"OPTIONS\", \"PROPFIND\"]\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nlocks = true\n",
        dav.display()
    ));
    let s = b.start();
    // The source through the link, the destination its directory.
    assert_eq!(transfer(&s, "MOVE", "/dav/L/b/", "/dav/d/", "").status, 403);
    assert_eq!(
        transfer(&s, "COPY", "/dav/L/b/f.txt", "/dav/d", "").status,
        403
    );
    assert_eq!(fs::read(dav.join("d/b/f.txt")).unwrap(), b"precious\n");
    let lockinfo = "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
                    <D:locktype><D:write/></D:locktype></D:lockinfo>";
    let prop = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop>\
                <x xmlns=\"urn:x\">1</x></D:prop></D:set></D:propertyupdate>";
    for (method, path, to, body) in [
        ("PUT", "/dav/linkin/x", "", "evil"),
        ("PUT", "/dav/linkin/new", "", "evil"),
        ("DELETE", "/dav/linkin/x", "", ""),
        ("MKCOL", "/dav/linkin/m/", "", ""),
        ("LOCK", "/dav/linkin/made", "", lockinfo),
        ("PROPPATCH", "/dav/linkin/x", "", prop),
        ("COPY", "/dav/pub.txt", "/dav/linkin/c", ""),
        ("MOVE", "/dav/pub.txt", "/dav/linkin/x", ""),
        ("MOVE", "/dav/linkin/x", "/dav/stolen", ""),
    ] {
        let to = match to {
            "" => String::new(),
            to => format!("Destination: {to}\r\n"),
        };
        let r = send_with(&s, method, path, &to, body.as_bytes());
        assert_eq!(r.status, 403, "{method} {path} {to}: {}", r.head);
    }
    assert_eq!(names(&dav.join("sub")), ["x"]);
    assert_eq!(fs::read(dav.join("sub/x")).unwrap(), b"alice's\n");
    assert_eq!(names(&dav), ["L", "d", "linkin", "pub.txt", "sub"]);
    // Read through, as a static file is.
    assert_eq!(s.get("/dav/L/b/f.txt").body, b"precious\n");
    assert_eq!(propfind(&s, "/dav/linkin/x", "0", "").status, 207);
}

/// `method path` with `Destination: dest` and `extra` header lines.
pub(crate) fn transfer(s: &Server, method: &str, path: &str, dest: &str, extra: &str) -> Response {
    s.request(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nDestination: {dest}\r\n{extra}\r\n"
        )
        .as_bytes(),
    )
}

#[test]
fn copy_files_and_trees_with_depth_and_overwrite() {
    let files: &[(&str, &[u8])] = &[("f", b"one"), ("g", b"two"), ("d/a", b"A"), ("d/e/b", b"B")];
    let (s, dav) = start("", files);
    let r = transfer(&s, "COPY", "/dav/f", "http://localhost/dav/f%20copy", "");
    assert_eq!(
        (r.status, r.header("Content-Length")),
        (201, Some("0")),
        "{}",
        r.head
    );
    assert_eq!(fs::read(dav.join("f copy")).unwrap(), b"one");
    // RFC 4918 §10.6: Overwrite: F onto what exists is 412, and nothing
    // changes; T (the default) replaces it: 204.
    assert_eq!(
        transfer(&s, "COPY", "/dav/g", "/dav/f", "Overwrite: F\r\n").status,
        412
    );
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"one");
    assert_eq!(transfer(&s, "COPY", "/dav/g", "/dav/f", "").status, 204);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"two");
    // A tree, all of it; with Depth: 0 the collection alone. Files keep
    // their permission bits (a private file stays private, a script
    // executable).
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &str| fs::metadata(dav.join(p)).unwrap().permissions().mode() & 0o777;
    fs::set_permissions(dav.join("d/a"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::set_permissions(dav.join("d/e/b"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(transfer(&s, "COPY", "/dav/d/", "/dav/d2/", "").status, 201);
    assert_eq!(fs::read(dav.join("d2/e/b")).unwrap(), b"B");
    assert_eq!(fs::read(dav.join("d2/a")).unwrap(), b"A");
    assert_eq!((mode("d2/a"), mode("d2/e/b")), (0o600, 0o755));
    assert_eq!(
        transfer(&s, "COPY", "/dav/d/", "/dav/d3/", "Depth: 0\r\n").status,
        201
    );
    assert!(names(&dav.join("d3")).is_empty());
    // A collection replaced by a file: what was there goes first.
    assert_eq!(transfer(&s, "COPY", "/dav/f", "/dav/d3", "").status, 204);
    assert_eq!(fs::read(dav.join("d3")).unwrap(), b"two");
    assert_eq!(
        transfer(&s, "COPY", "/dav/d/", "/dav/d4/", "Depth: 1\r\n").status,
        400
    );
    assert_eq!(names(&dav), ["d", "d2", "d3", "f", "f copy", "g"]);
}

/// COPY, MOVE, DELETE, MKCOL and PROPPATCH are made off the event loop
/// (a COPY of a film took the worker seconds, every other client of it
/// waiting): while one waits for the disk, here for the lock of the
/// sidecar store it writes (which this test holds, as another brisk
/// process would), the same worker (the only one) answers another
/// client; once the lock is free, each ends as before, with its answer
/// and its change.
#[test]
fn a_change_waiting_for_the_disk_keeps_no_other_client_waiting() {
    use std::os::fd::AsRawFd;
    let files: &[(&str, &[u8])] = &[("f", b"one"), ("g", b"two"), ("d/h", b"three")];
    let (s, dav) = start("properties = \"sidecar\"\n", files);
    let flock = |dir: &Path| {
        let f = fs::File::open(dir).unwrap();
        // SAFETY: an open descriptor.
        assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
        f
    };
    let patch = "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\">\
                 <D:set><D:prop><Z:color>red</Z:color></D:prop></D:set></D:propertyupdate>";
    // (Which store each writes: the destination's collection for a
    // COPY, the source's for a MOVE and a DELETE, the resource's
    // collection for a PROPPATCH.)
    let changes = [
        ("COPY", "/dav/f", "Destination: /dav/d/f2\r\n", "", "d", 201),
        ("MOVE", "/dav/g", "Destination: /dav/d/g2\r\n", "", "", 201),
        ("DELETE", "/dav/d/h", "", "", "d", 204),
        ("PROPPATCH", "/dav/f", "", patch, "", 207),
    ];
    for (method, path, extra, body, store, status) in changes {
        let held = flock(&dav.join(store));
        let mut c = s.connect();
        let length = body.len();
        c.send(
            format!(
                "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{extra}\
                 Content-Length: {length}\r\n\r\n{body}"
            )
            .as_bytes(),
        );
        let other = send(&s, "GET", "/dav/f", b"");
        assert_eq!(other.status, 200, "{method}: {}", other.head);
        drop(held);
        let r = c.response();
        assert_eq!(r.status, status, "{method}: {}", r.head);
    }
    assert_eq!(fs::read(dav.join("d/f2")).unwrap(), b"one");
    assert_eq!(fs::read(dav.join("d/g2")).unwrap(), b"two");
    assert_eq!(names(&dav.join("d")), ["f2", "g2"]);
    let found = propfind(&s, "/dav/f", "0", "");
    assert!(found.text().contains(">red</"), "{}", found.text());
}

/// A PROPFIND of a collection's members is made off the event loop: one
/// of 100,000 members takes a quarter of a second to list here (a
/// `statx` each), seconds on a cold or slow disk, and the worker answers
/// its other clients meanwhile; its document is then written as the
/// client takes it, as before.
#[test]
fn a_propfind_being_listed_keeps_no_other_client_waiting() {
    let (s, dav) = start("", &[("f", b"one")]);
    fs::create_dir(dav.join("big")).unwrap();
    for i in 0..100_000 {
        fs::File::create(dav.join(format!("big/m{i:06}"))).unwrap();
    }
    // (The worker reads the PROPFIND first.)
    let (mut slow, got) = s.slow_then_quick(
        b"PROPFIND /dav/big/ HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\n\r\n",
        b"GET /dav/f HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    assert_eq!(got.status, 200, "{}", got.head);
    assert!(slow.nothing_came(), "the PROPFIND came before the GET");
    let found = slow.response();
    assert_eq!(found.status, 207, "{}", found.head);
    assert_eq!(found.header("transfer-encoding"), Some("chunked"));
    let text = found.text();
    assert_eq!(text.matches("<D:response>").count(), 100_001);
    assert!(text.contains("<D:href>/dav/big/m099999</D:href>"));
    assert!(
        text.ends_with("</D:multistatus>\n"),
        "{}",
        &text[text.len() - 100..]
    );
}

/// A change that takes longer than `timeouts.handler` (a COPY of a
/// large tree on a slow disk) is answered when it is made: its thread's
/// work is the server's own, and a 504 would not stop it.
#[test]
fn a_change_longer_than_the_handler_timeout_is_answered_when_made() {
    use std::os::fd::AsRawFd;
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir_all(dav.join("d")).unwrap();
    fs::write(dav.join("f"), b"one").unwrap();
    b.config(&format!(
        "[timeouts]\nhandler = \"1s\"\n[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n\
         properties = \"sidecar\"\n",
        dav.display()
    ));
    let s = b.start();
    let held = fs::File::open(dav.join("d")).unwrap();
    // SAFETY: an open descriptor.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
    let mut c = s.connect();
    c.send(b"COPY /dav/f HTTP/1.1\r\nHost: localhost\r\nDestination: /dav/d/f\r\n\r\n");
    // (Past the timeout and the sweep that would see it.)
    std::thread::sleep(std::time::Duration::from_millis(2500));
    drop(held);
    let r = c.response();
    assert_eq!(r.status, 201, "{}", r.head);
    assert_eq!(fs::read(dav.join("d/f")).unwrap(), b"one");
}

/// A destination that is the source by another name (a hard link here;
/// another spelling where names are matched without regard to case: see
/// `webdav_fuse`) is never removed first: COPY is 403, MOVE leaves the
/// one file under the destination's name.
#[test]
fn a_copy_or_move_onto_the_source_by_another_name_keeps_it() {
    let (s, dav) = start("", &[("f", b"one")]);
    fs::hard_link(dav.join("f"), dav.join("g")).unwrap();
    assert_eq!(transfer(&s, "COPY", "/dav/f", "/dav/g", "").status, 403);
    assert_eq!(names(&dav), ["f", "g"]);
    assert_eq!(fs::read(dav.join("g")).unwrap(), b"one");
    assert_eq!(transfer(&s, "MOVE", "/dav/f", "/dav/g", "").status, 204);
    assert_eq!(names(&dav), ["g"]);
    assert_eq!(fs::read(dav.join("g")).unwrap(), b"one");
}

/// A destination that holds the source (one of the collections above
/// it) is never removed first: that would take the source with it, and
/// a COPY must leave its source as it was. 403, and nothing changes.
#[test]
fn a_copy_or_move_onto_a_collection_that_holds_the_source_keeps_both() {
    let files: &[(&str, &[u8])] = &[("t/a/b/f", b"F"), ("t/a/other", b"O")];
    let (s, dav) = start("", files);
    for (method, from, to) in [
        ("MOVE", "/dav/t/a/b/", "/dav/t/a/"),
        ("COPY", "/dav/t/a/b/", "/dav/t/a/"),
        ("MOVE", "/dav/t/a/b/f", "/dav/t/a/"),
        ("COPY", "/dav/t/a/b/f", "/dav/t/a"),
        ("MOVE", "/dav/t/a/b/f", "/dav/t"),
        ("COPY", "/dav/t/a/b", "/dav/t/"),
    ] {
        assert_eq!(
            transfer(&s, method, from, to, "").status,
            403,
            "{method} {from} {to}"
        );
        assert_eq!(fs::read(dav.join("t/a/b/f")).unwrap(), b"F");
        assert_eq!(fs::read(dav.join("t/a/other")).unwrap(), b"O");
    }
    // Overwrite is "T" or "F" in either case (RFC 5234 §2.3).
    assert_eq!(
        transfer(
            &s,
            "COPY",
            "/dav/t/a/other",
            "/dav/t/a/b/f",
            "Overwrite: f\r\n"
        )
        .status,
        412
    );
    assert_eq!(
        transfer(
            &s,
            "COPY",
            "/dav/t/a/other",
            "/dav/t/a/b/f",
            "Overwrite: t\r\n"
        )
        .status,
        204
    );
    assert_eq!(fs::read(dav.join("t/a/b/f")).unwrap(), b"O");
    assert_eq!(
        transfer(&s, "COPY", "/dav/t/a/other", "/dav/t/g", "Overwrite: x\r\n").status,
        400
    );
}

#[test]
fn move_renames_in_one_step() {
    let files: &[(&str, &[u8])] = &[("f", b"one"), ("g", b"two"), ("d/a", b"A")];
    let (s, dav) = start("", files);
    assert_eq!(transfer(&s, "MOVE", "/dav/f", "/dav/h", "").status, 201);
    assert_eq!(fs::read(dav.join("h")).unwrap(), b"one");
    assert_eq!(
        transfer(&s, "MOVE", "/dav/h", "/dav/g", "Overwrite: F\r\n").status,
        412
    );
    assert_eq!(transfer(&s, "MOVE", "/dav/h", "/dav/g", "").status, 204);
    assert_eq!(fs::read(dav.join("g")).unwrap(), b"one");
    assert_eq!(transfer(&s, "MOVE", "/dav/d/", "/dav/e/", "").status, 201);
    assert_eq!(fs::read(dav.join("e/a")).unwrap(), b"A");
    // A collection moves whole or not at all (§9.9.2).
    assert_eq!(
        transfer(&s, "MOVE", "/dav/e/", "/dav/x/", "Depth: 0\r\n").status,
        400
    );
    assert_eq!(
        transfer(&s, "MOVE", "/dav/nothing", "/dav/x", "").status,
        404
    );
    assert_eq!(names(&dav), ["e", "g"]);
}

/// A filesystem mounted at a directory until dropped (lazily unmounted
/// then).
pub(crate) struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Mounts a new filesystem of type `kind` (`tmpfs`, `ramfs`) at the
/// directory `at`; `None`, said loudly, where this process may not (not
/// root, or no right to mount here).
pub(crate) fn mount(kind: &str, at: &Path) -> Option<Mounted> {
    mount_with(kind, "defaults", at)
}

/// [`mount`] with mount `options` (`size=1m`).
pub(crate) fn mount_with(kind: &str, options: &str, at: &Path) -> Option<Mounted> {
    let mounted = std::process::Command::new("mount")
        .args(["-t", kind, "-o", options, "brisk-test"])
        .arg(at)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        skip(&format!(
            "cannot mount a {kind} at {} (run as root)",
            at.display()
        ));
    }
    mounted.then(|| Mounted(at.to_path_buf()))
}

/// A PUT that fills the disk (a 1 MiB tmpfs) is 507 Insufficient
/// Storage (RFC 4918 §11.5), over either framing: the old file is
/// untouched, nothing of the body is left, and the room is there again
/// for the next PUT.
#[test]
fn a_put_that_fills_the_disk_is_507_and_leaves_the_old_file() {
    let (b, dav) = builder("max_upload = \"8MiB\"\n");
    let Some(_small) = mount_with("tmpfs", "size=1m", &dav) else {
        return;
    };
    write_file(&dav.join("f"), b"old");
    let s = b.start();
    // (Past the disk by less than brisk reads and throws away once it
    // has answered (256 KiB): this client sends all before it reads, and
    // a close with more unread would reset the connection under it.)
    let big = vec![b'x'; (1 << 20) + (160 << 10)];
    let r = send(&s, "PUT", "/dav/f", &big);
    assert_eq!(r.status, 507, "{}", r.head);
    let mut raw =
        b"PUT /dav/g HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    raw.extend_from_slice(&chunked_body(&big, 100_000));
    assert_eq!(s.request(&raw).status, 507);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"old");
    assert_eq!(names(&dav), ["f"]);
    let half = vec![b'y'; 600_000];
    assert_eq!(send(&s, "PUT", "/dav/f", &half).status, 204);
    assert_eq!(fs::read(dav.join("f")).unwrap(), half);
}

/// Under a file-size limit (`ulimit -f`, systemd's `LimitFSIZE=`), a
/// PUT past it is 413 and the server goes on serving: the write fails
/// with EFBIG, where SIGXFSZ's default action would have killed brisk.
#[test]
fn a_put_past_the_file_size_limit_is_413_and_the_server_lives() {
    let (s, dav) = start("max_upload = \"8MiB\"\n", &[("f", b"old")]);
    let limit = libc::rlimit {
        rlim_cur: 1 << 20,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: a valid limit for a process this test started.
    let set = unsafe {
        libc::prlimit(
            s.pid() as libc::pid_t,
            libc::RLIMIT_FSIZE,
            &limit,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(set, 0, "{}", std::io::Error::last_os_error());
    let r = send(&s, "PUT", "/dav/f", &vec![b'x'; 2 << 20]);
    assert_eq!(r.status, 413, "{}", r.head);
    assert_eq!(send(&s, "GET", "/dav/f", b"").body, b"old");
    assert_eq!(names(&dav), ["f"]);
    assert_eq!(send(&s, "PUT", "/dav/g", b"small").status, 201);
}

/// A MOVE onto another filesystem mounted beneath the root (where
/// `rename` fails with EXDEV) is a copy then a removal of the source
/// (RFC 4918 §9.9): files, a file over a file, whole trees, and the dead
/// properties with them.
#[test]
fn a_move_across_filesystems_beneath_the_root_copies_then_removes() {
    let (mut b, dav) = builder("properties = \"sidecar\"\n");
    fs::create_dir(dav.join("usb")).unwrap();
    let Some(usb) = mount("tmpfs", &dav.join("usb")) else {
        return;
    };
    let files: &[(&str, &[u8])] = &[
        ("f", b"one"),
        ("old", b"old"),
        ("d/a", b"A"),
        ("d/e/b", b"B"),
        ("usb/g", b"two"),
    ];
    for (rel, body) in files {
        write_file(&dav.join(rel), body);
    }
    b.workers(1);
    let s = b.start();
    let tint = |path: &str| {
        let body = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop>\
            <Z:tint xmlns:Z=\"urn:z\">red</Z:tint></D:prop></D:set></D:propertyupdate>";
        proppatch(&s, path, body).status
    };
    let tinted = |path: &str| {
        let ask = "<propfind xmlns=\"DAV:\"><prop><tint xmlns=\"urn:z\"/></prop></propfind>";
        let r = propfind(&s, path, "0", ask);
        String::from_utf8_lossy(&r.body).contains(">red</R:tint>")
    };
    assert_eq!(tint("/dav/f"), 207);
    assert_eq!(tint("/dav/d/"), 207);
    assert_eq!(transfer(&s, "MOVE", "/dav/f", "/dav/usb/f", "").status, 201);
    assert_eq!(fs::read(dav.join("usb/f")).unwrap(), b"one");
    assert!(!dav.join("f").exists());
    assert!(tinted("/dav/usb/f"));
    // A file over a file: replaced.
    assert_eq!(
        transfer(&s, "MOVE", "/dav/usb/g", "/dav/old", "").status,
        204
    );
    assert_eq!(fs::read(dav.join("old")).unwrap(), b"two");
    assert!(!dav.join("usb/g").exists());
    assert_eq!(
        transfer(&s, "MOVE", "/dav/old", "/dav/usb/f", "Overwrite: F\r\n").status,
        412
    );
    // A tree, whole, its own properties with it.
    assert_eq!(
        transfer(&s, "MOVE", "/dav/d/", "/dav/usb/d/", "").status,
        201
    );
    assert_eq!(fs::read(dav.join("usb/d/a")).unwrap(), b"A");
    assert_eq!(fs::read(dav.join("usb/d/e/b")).unwrap(), b"B");
    assert!(!dav.join("d").exists());
    assert!(tinted("/dav/usb/d/"));
    // And back onto a collection that is there: replaced.
    fs::create_dir(dav.join("d")).unwrap();
    write_file(&dav.join("d/stale"), b"x");
    assert_eq!(
        transfer(&s, "MOVE", "/dav/usb/d/", "/dav/d/", "").status,
        204
    );
    assert_eq!(names(&dav.join("d")), [".brisk-props", "a", "e"]);
    assert_eq!(names(&dav.join("usb")), [".brisk-props", "f"]);
    // (The root's store went empty with f's entry gone: removed.)
    assert_eq!(names(&dav), ["d", "old", "usb"]);
    // (Unmounted before the server's directory is removed.)
    drop(usb);
}

/// A MOVE onto another filesystem that fills it (507) leaves the file it
/// would have replaced as it was, and a tree that could not be copied
/// whole leaves no part of it there; the source stays either way.
#[test]
fn a_move_across_filesystems_that_fills_the_disk_loses_nothing() {
    let (b, dav) = builder("");
    fs::create_dir(dav.join("small")).unwrap();
    let Some(_small) = mount_with("tmpfs", "size=1m", &dav.join("small")) else {
        return;
    };
    let big = vec![b'b'; 1_500_000];
    write_file(&dav.join("small/existing.txt"), b"existing\n");
    write_file(&dav.join("bigfile"), &big);
    write_file(&dav.join("tree/a"), &big[..700_000]);
    write_file(&dav.join("tree/b"), &big[..700_000]);
    let s = b.start();
    let r = transfer(&s, "MOVE", "/dav/bigfile", "/dav/small/existing.txt", "");
    assert_eq!(r.status, 507, "{}", r.head);
    assert_eq!(
        fs::read(dav.join("small/existing.txt")).unwrap(),
        b"existing\n"
    );
    assert_eq!(fs::read(dav.join("bigfile")).unwrap(), big);
    let r = transfer(&s, "MOVE", "/dav/tree/", "/dav/small/tree/", "");
    assert_eq!(r.status, 207, "{}", r.head);
    assert_eq!(names(&dav.join("small")), ["existing.txt"]);
    assert_eq!(names(&dav.join("tree")), ["a", "b"]);
    assert_eq!(fs::read(dav.join("tree/b")).unwrap(), &big[..700_000]);
    // The error log says why, of the member that did not fit (a or b,
    // whichever was copied second), named where it was to go. (It said
    // "Invalid cross-device link", the move's own way of stopping.)
    let why = |method: &str, to: &str| {
        let line = s.wait_stderr_line(&format!("webdav: {method} /dav/tree/: "));
        let named = ["a", "b"].map(|m| {
            format!(
                "[error] webdav: {method} /dav/tree/: \"{}/small/{to}/{m}\": not copied there: \
                 No space left on device (os error 28)",
                dav.display()
            )
        });
        assert!(named.iter().any(|n| line.ends_with(n)), "{line}");
    };
    why("MOVE", "tree");
    // A COPY copied in part keeps what fitted, and says the same.
    let r = transfer(&s, "COPY", "/dav/tree/", "/dav/small/copy/", "");
    assert_eq!(r.status, 207, "{}", r.head);
    why("COPY", "copy");
}

#[test]
fn a_destination_must_stay_beneath_the_same_root_on_the_same_host() {
    let (s, dav) = start("", &[("f", b"one"), ("d/a", b"A")]);
    fs::write(s.root.join("site-file"), b"site").unwrap();
    let cases = [
        // Another server (RFC 4918 §9.8.5), another namespace of this one.
        ("http://elsewhere.example/dav/x", 502),
        ("/other/x", 502),
        ("/dav/../site-file", 502),
        ("/dav/../../etc/passwd", 400),
        ("/dav/%zz", 400),
        // Onto itself, into itself; a missing parent; a dotfile.
        ("/dav/f", 403),
        ("/dav/no/such", 409),
        ("/dav/.hidden", 403),
    ];
    for (dest, status) in cases {
        assert_eq!(
            transfer(&s, "COPY", "/dav/f", dest, "").status,
            status,
            "{dest}"
        );
        assert_eq!(
            transfer(&s, "MOVE", "/dav/f", dest, "").status,
            status,
            "{dest}"
        );
    }
    assert_eq!(
        transfer(&s, "COPY", "/dav/d/", "/dav/d/in/", "").status,
        403
    );
    assert_eq!(
        s.request(b"COPY /dav/f HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .status,
        400
    );
    assert_eq!(names(&dav), ["d", "f"]);
    assert_eq!(names(&s.root), ["site-file"]);
    assert_eq!(fs::read(s.root.join("site-file")).unwrap(), b"site");
}

/// A COPY or MOVE whose `Destination` is another server's, or no share's,
/// is 502 (RFC 4918 §9.8.5), said in the log at `info` with the
/// Destination: the client's doing, not a bare "[error] 502 answering"
/// (the server's trouble, which any client could fill the log with).
/// Where the request's own path needs a login, a client without one is
/// asked for it first: it was told 502 before any login.
#[test]
fn a_destination_elsewhere_asks_for_a_login_first_and_is_logged_as_the_clients() {
    // (Its [[auth]] after the [[webdav]] rule `builder` writes.)
    let (b, dav) = builder(
        "[[auth]]\npath = \"/dav/\"\nrealm = \"Dav\"\nhtpasswd = \"htpasswd\"\n\
         except_methods = [\"GET\", \"HEAD\", \"OPTIONS\", \"PROPFIND\"]\n",
    );
    write_file(&dav.join("f"), b"one");
    write_file(
        &b.base().join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    let s = b.start();
    let login = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    for (method, to) in [
        ("COPY", "http://elsewhere.example/dav/g"),
        ("MOVE", "/elsewhere.txt"),
    ] {
        assert_eq!(transfer(&s, method, "/dav/f", to, "").status, 401, "{to}");
        assert_eq!(
            transfer(&s, method, "/dav/f", to, &login).status,
            502,
            "{to}"
        );
        let line = s.wait_stderr_line("webdav: /dav/f: ");
        assert!(
            line.contains(
                "[info] webdav: /dav/f: its Destination is another server's, \
                 a path no WebDAV rule of this site serves, or unreadable; 502"
            ),
            "{line}"
        );
    }
    assert!(!s.stderr().contains("502 answering"), "{}", s.stderr());
    assert_eq!(names(&dav), ["f"]);
}

/// A `Destination` that another `[[webdav]]` rule serves (one nested in
/// the request's: another tree, maybe read only, with its own locks) is
/// on "another server" (RFC 4918 §9.8.5, §9.9.4): 502, as Apache answers
/// for another repository, and nothing is written there.
#[test]
fn a_destination_another_rule_serves_is_502() {
    let mut b = Builder::new();
    let share = b.base().join("share");
    write_file(&share.join("public/keep.txt"), b"keep\n");
    write_file(&share.join("mine.txt"), b"mine\n");
    write_file(&share.join("evil/x"), b"evil\n");
    b.config(&format!(
        "[[webdav]]\npath = \"/dav/public/\"\nroot = \"{0}/public\"\nread_only = true\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{0}\"\nlocks = true\n",
        share.display()
    ));
    let s = b.start();
    for (method, from, to) in [
        ("COPY", "/dav/mine.txt", "/dav/public/injected.txt"),
        ("MOVE", "/dav/mine.txt", "/dav/public/keep.txt"),
        ("MOVE", "/dav/evil", "/dav/public"),
        ("COPY", "/dav/evil/", "http://localhost/dav/public/"),
    ] {
        let r = transfer(&s, method, from, to, "");
        assert_eq!(r.status, 502, "{method} {from} -> {to}: {}", r.head);
    }
    assert_eq!(names(&share.join("public")), ["keep.txt"]);
    assert_eq!(fs::read(share.join("public/keep.txt")).unwrap(), b"keep\n");
    assert_eq!(names(&share), ["evil", "mine.txt", "public"]);
    // Within the rule, as before.
    let r = transfer(&s, "COPY", "/dav/mine.txt", "/dav/evil/m.txt", "");
    assert_eq!(r.status, 201, "{}", r.head);
}

/// A collection that holds another rule's prefix (a read-only share
/// nested in a writable one) is not the outer rule's to remove or
/// replace: DELETE, MOVE away, and a COPY or MOVE onto it are 403, and the
/// inner tree is whole; COPY from it (a read) goes on.
#[test]
fn a_collection_holding_another_rules_tree_is_not_removed_through_the_outer_rule() {
    let mut b = Builder::new();
    let share = b.base().join("share");
    write_file(&share.join("a/ro/precious.txt"), b"precious\n");
    write_file(&share.join("b/x.txt"), b"x\n");
    b.config(&format!(
        "[[webdav]]\npath = \"/share/a/ro/\"\nroot = \"{0}/a/ro\"\nread_only = true\n\
         [[webdav]]\npath = \"/share/\"\nroot = \"{0}\"\n",
        share.display()
    ));
    let s = b.start();
    for path in ["/share/a/", "/share/a"] {
        let r = s.request(format!("DELETE {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
        assert_eq!(r.status, 403, "DELETE {path}: {}", r.head);
    }
    for (method, from, to) in [
        ("MOVE", "/share/a/", "/share/free/"),
        ("MOVE", "/share/b/", "/share/a/"),
        ("COPY", "/share/b/", "/share/a/"),
        ("MOVE", "/share/b/", "/share/"),
    ] {
        let r = transfer(&s, method, from, to, "");
        assert_eq!(r.status, 403, "{method} {from} -> {to}: {}", r.head);
    }
    assert_eq!(
        fs::read(share.join("a/ro/precious.txt")).unwrap(),
        b"precious\n"
    );
    let r = transfer(&s, "COPY", "/share/a/", "/share/copy/", "");
    assert_eq!(r.status, 201, "{}", r.head);
    assert_eq!(
        fs::read(share.join("copy/ro/precious.txt")).unwrap(),
        b"precious\n"
    );
    // A collection beside it is the outer rule's, as before.
    let r = s.request(b"DELETE /share/b/ HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(r.status, 204, "{}", r.head);
}

/// A pattern without `/` (`*.key`) judges a request that reaches into a
/// collection (it may hold a `.key` file), but a DELETE, COPY or MOVE of
/// a file (onto no collection) by its own name and its Destination's:
/// renaming `a.txt` is no request for a key.
#[test]
fn a_file_is_judged_by_its_own_name_not_by_what_a_collection_may_hold() {
    let files: &[(&str, &[u8])] = &[("a.txt", b"A"), ("b.txt", b"B"), ("docs/c.txt", b"C")];
    let (s, dav) = start("[[access]]\npattern = \"*.key\"\ndeny = [\"all\"]\n", files);
    let r = transfer(&s, "MOVE", "/dav/a.txt", "/dav/c.txt", "");
    assert_eq!(r.status, 201, "{}", r.head);
    let r = transfer(&s, "COPY", "/dav/b.txt", "/dav/d.txt", "");
    assert_eq!(r.status, 201, "{}", r.head);
    assert_eq!(send(&s, "DELETE", "/dav/b.txt", b"").status, 204);
    // Its own name, or its Destination's, still decides.
    assert_eq!(
        transfer(&s, "MOVE", "/dav/c.txt", "/dav/x.key", "").status,
        403
    );
    assert_eq!(send(&s, "PUT", "/dav/y.key", b"k").status, 403);
    // Onto a collection, or of one: what it holds is reached.
    assert_eq!(
        transfer(&s, "MOVE", "/dav/c.txt", "/dav/docs", "").status,
        403
    );
    assert_eq!(send(&s, "DELETE", "/dav/docs/", b"").status, 403);
    assert_eq!(names(&dav), ["c.txt", "d.txt", "docs"]);
}

/// A COPY or MOVE of a file to a Destination that ends in `/` (which
/// names a collection) is 409, and makes nothing: it made a plain file
/// under the name without the slash, 404 at the URL the client named
/// (lighttpd answers 409 too).
#[test]
fn a_file_sent_to_a_collections_url_is_409() {
    let (s, dav) = start("", &[("z.txt", b"Z"), ("y.txt", b"Y")]);
    for (method, from, to) in [
        ("MOVE", "/dav/z.txt", "/dav/zdir/"),
        ("COPY", "/dav/y.txt", "/dav/ydir/"),
    ] {
        let r = transfer(&s, method, from, to, "");
        assert_eq!(r.status, 409, "{method} {from} -> {to}: {}", r.head);
    }
    assert_eq!(names(&dav), ["y.txt", "z.txt"]);
}

/// An `[[auth]]` rule whose `methods` guard some of the methods that
/// change a writable tree but not all is warned about: COPY and MOVE
/// overwrite and remove too. `except_methods` is not.
#[cfg(feature = "sites")]
#[test]
fn auth_methods_that_leave_copy_and_move_open_are_warned_about() {
    let dir = TempDir::new("half-guarded");
    fs::create_dir_all(dir.path.join("dav")).unwrap();
    write_file(
        &dir.path.join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    let cfg = dir.path.join("brisk.toml");
    let check = |methods: &str| {
        fs::write(
            &cfg,
            format!(
                "root = \"{0}\"\n[[webdav]]\npath = \"/dav/\"\nroot = \"{0}/dav\"\n\
                 [[auth]]\npath = \"/dav/\"\nrealm = \"Share\"\nhtpasswd = \"htpasswd\"\n{methods}\n",
                dir.path.display()
            ),
        )
        .unwrap();
        let (st, out, err) = run_brisk(&["--config", cfg.to_str().unwrap(), "--check-config"]);
        assert!(st.success(), "{err}");
        out
    };
    let out = check("methods = [\"PUT\", \"DELETE\"]");
    assert!(
        out.contains("warning: auth[1].methods guards some of the methods that change the WebDAV tree at /dav/ but not MKCOL, COPY, MOVE, PROPPATCH, which change it as well: anyone may;"),
        "{out}"
    );
    let out = check("except_methods = [\"GET\", \"HEAD\", \"OPTIONS\", \"PROPFIND\"]");
    assert!(!out.contains("warning: auth"), "{out}");
    // A download-only guard: a COPY reads the file out all the same.
    let out = check("methods = [\"GET\"]");
    assert!(
        out.contains("warning: auth[1].methods guards GET at the WebDAV tree /dav/ but not COPY, which reads a file too"),
        "{out}"
    );
    assert!(!check("methods = [\"GET\", \"COPY\"]").contains("but not COPY"));
}

/// A PUT whose collection is moved while its body comes is 409 (its
/// collection is no longer where its URL leads), and lands nowhere: it
/// was 201 with the file in the moved collection, 404 at its URL.
#[test]
fn a_put_whose_collection_moved_while_its_body_came_is_409() {
    let (s, dav) = start("", &[("mv1/keep.txt", b"k")]);
    let mut put = s.connect();
    put.send(
        b"PUT /dav/mv1/f.bin HTTP/1.1\r\nHost: localhost\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n",
    );
    // (Routed, its collection opened, once told to send its body.)
    assert_eq!(put.response().status, 100);
    let r = transfer(&s, "MOVE", "/dav/mv1/", "/dav/mv2/", "");
    assert_eq!(r.status, 201, "{}", r.head);
    put.send(b"abcdef");
    let r = put.response();
    assert_eq!(r.status, 409, "{}", r.head);
    assert_eq!(names(&dav.join("mv2")), ["keep.txt"]);
    assert!(!dav.join("mv1").exists());
}

/// litmus (Debian's `litmus`, the WebDAV test suite): its `basic`,
/// `copymove`, `props`, `http` and `locks` suites pass in full against
/// brisk with the sandbox on.
#[test]
fn litmus_passes_in_full() {
    if !have("litmus") {
        return;
    }
    let (s, _) = start("locks = true\n", &[]);
    let (summaries, ok, text) = litmus(&s, "basic copymove props http locks", &[]);
    assert_eq!(summaries, LITMUS_PASSES, "{text}");
    assert!(ok, "{text}");
}

/// litmus over HTTPS (its client, neon, is told to take any
/// certificate: the test's own is for `a.test`): all five suites pass
/// in full there too, the sandbox on (but `http`'s `expect100`, which
/// litmus skips over SSL).
#[cfg(feature = "tls")]
#[test]
fn litmus_passes_in_full_over_https() {
    if !have("litmus") {
        return;
    }
    let (mut b, _) = builder("locks = true\n");
    b.tls();
    let s = b.start();
    let suites = "basic copymove props http locks";
    let (summaries, ok, text) = litmus_over("https", &s, suites, &[]);
    // (litmus skips its `expect100` test against an SSL server.)
    assert!(text.contains("expect100............. SKIPPED (skipping for SSL server)"));
    let mut want = LITMUS_PASSES.map(str::to_string);
    want[3] = "<- summary for `http': of 3 tests run: 3 passed, 0 failed. 100.0%".into();
    assert_eq!(summaries, want, "{text}");
    assert!(ok, "{text}");
}

/// Every suite of litmus passing in full, as it sums each up.
pub(crate) const LITMUS_PASSES: [&str; 5] = [
    "<- summary for `basic': of 16 tests run: 16 passed, 0 failed. 100.0%",
    "<- summary for `copymove': of 13 tests run: 13 passed, 0 failed. 100.0%",
    "<- summary for `props': of 30 tests run: 30 passed, 0 failed. 100.0%",
    "<- summary for `http': of 4 tests run: 4 passed, 0 failed. 100.0%",
    "<- summary for `locks': of 41 tests run: 41 passed, 0 failed. 100.0%",
];

/// Runs litmus's `suites` against `s`'s `/dav/` (logging in with `login`,
/// a user and a password, if given): its summary lines, whether it
/// passed, and all it printed.
pub(crate) fn litmus(s: &Server, suites: &str, login: &[&str]) -> (Vec<String>, bool, String) {
    litmus_over("http", s, suites, login)
}

/// [`litmus`] with the URL's `scheme` (`https` for a TLS server).
pub(crate) fn litmus_over(
    scheme: &str,
    s: &Server,
    suites: &str,
    login: &[&str],
) -> (Vec<String>, bool, String) {
    let out = std::process::Command::new("litmus")
        .arg(format!("{scheme}://{}/dav/", s.addr()))
        .args(login)
        .env("TESTS", suites)
        // (It writes its debug.log where it runs.)
        .current_dir(&s.base.path)
        .output()
        .expect("run litmus");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let summaries = text
        .lines()
        .filter(|l| l.starts_with("<- summary"))
        .map(str::to_string)
        .collect();
    (summaries, out.status.success(), text)
}

/// PROPFIND `path` with `Depth: depth` (none if empty) and `body`.
pub(crate) fn propfind(s: &Server, path: &str, depth: &str, body: &str) -> Response {
    let depth = match depth {
        "" => String::new(),
        d => format!("Depth: {d}\r\n"),
    };
    s.request(
        format!(
            "PROPFIND {path} HTTP/1.1\r\nHost: localhost\r\n{depth}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

/// The `<D:creationdate>` of `path`, if its filesystem keeps a birth
/// time (RFC 3339, UTC).
fn creationdate(path: &Path) -> String {
    let Some(secs) = birth_time(path) else {
        return String::new();
    };
    let t = brisk::http::date::civil_time(secs);
    format!(
        "<D:creationdate>{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z</D:creationdate>",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// The birth time of `path` (seconds), where its filesystem keeps one:
/// `statx` asked directly (the standard library's `created()` answers
/// only on glibc, not in the static musl build).
pub(crate) fn birth_time(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain old data the kernel fills.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    let r = unsafe { libc::statx(libc::AT_FDCWD, name.as_ptr(), 0, libc::STATX_BTIME, &mut st) };
    (r == 0 && st.stx_mask & libc::STATX_BTIME != 0).then_some(st.stx_btime.tv_sec as u64)
}

/// What the live properties of file `path` in `dav` say: its ETag and
/// Last-Modified, as the static handler writes them.
pub(crate) fn validators(path: &Path) -> (String, String) {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(path).unwrap();
    let mtime = meta.modified().unwrap();
    // (Seconds, then the nanoseconds where there are any.)
    let fraction = match meta.mtime_nsec() {
        0 => String::new(),
        n => format!(".{n:x}"),
    };
    (
        format!("\"{:x}{fraction}-{:x}\"", meta.mtime(), meta.len()),
        httpdate::fmt_http_date(mtime),
    )
}

const XML: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";

#[test]
fn propfind_depth_0_answers_the_live_properties() {
    let (s, dav) = start("", &[("a&b <c>.txt", b"hello")]);
    let (etag, date) = validators(&dav.join("a&b <c>.txt"));
    let born = creationdate(&dav.join("a&b <c>.txt"));
    let r = propfind(&s, "/dav/a%26b%20%3Cc%3E.txt", "0", "");
    assert!(
        r.head.starts_with("HTTP/1.1 207 Multi-Status\r\n"),
        "{}",
        r.head
    );
    assert_eq!(
        r.header("Content-Type"),
        Some("application/xml; charset=utf-8")
    );
    let want = format!(
        "{XML}<D:multistatus xmlns:D=\"DAV:\">\n<D:response><D:href>/dav/a%26b%20%3Cc%3E.txt</D:href>\
         <D:propstat><D:prop>{born}<D:resourcetype/><D:displayname>a&amp;b &lt;c&gt;.txt</D:displayname>\
         <D:getcontentlength>5</D:getcontentlength><D:getcontenttype>text/plain; charset=utf-8</D:getcontenttype>\
         <D:getetag>{}</D:getetag><D:getlastmodified>{date}</D:getlastmodified></D:prop>\
         <D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>\n</D:multistatus>\n",
        etag.replace('"', "&quot;")
    );
    assert_eq!(String::from_utf8_lossy(&r.body), want);
    // The same ETag as a GET's.
    assert_eq!(
        s.get("/dav/a%26b%20%3Cc%3E.txt").header("ETag"),
        Some(etag.as_str())
    );
    assert_eq!(propfind(&s, "/dav/nothing", "0", "").status, 404);
}

#[test]
fn propfind_depth_1_lists_members_and_infinity_is_refused() {
    // (No request can name `line\nbreak`, a control character in it:
    // not a member, as not a line of a static listing.)
    let files: [(&str, &[u8]); 4] = [
        ("d/f", b"1"),
        ("d/.hidden", b"2"),
        ("d/sub/g", b"3"),
        ("d/line\nbreak", b"4"),
    ];
    let (s, dav) = start("", &files);
    let body = "<?xml version=\"1.0\"?><propfind xmlns=\"DAV:\"><prop><resourcetype/>\
                <getcontentlength/><x xmlns=\"urn:other\"/></prop></propfind>";
    let r = propfind(&s, "/dav/d/", "1", body);
    assert_eq!(r.status, 207, "{}", r.head);
    let text = String::from_utf8_lossy(&r.body);
    let hrefs: Vec<&str> = text
        .split("<D:href>")
        .skip(1)
        .map(|h| h.split("</D:href>").next().unwrap())
        .collect();
    let mut members = hrefs[1..].to_vec();
    members.sort();
    assert_eq!(
        (hrefs[0], members),
        ("/dav/d/", vec!["/dav/d/f", "/dav/d/sub/"])
    );
    // A property brisk does not have is listed with 404 (§9.1.2), a
    // collection's length among them.
    assert!(
        text.contains(
            "<D:response><D:href>/dav/d/</D:href><D:propstat><D:prop><D:resourcetype><D:collection/>\
             </D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>\
             <D:propstat><D:prop><D:getcontentlength/><R:x xmlns:R=\"urn:other\"/></D:prop>\
             <D:status>HTTP/1.1 404 Not Found</D:status></D:propstat></D:response>"
        ),
        "{text}"
    );
    // None of those asked: the 404 propstat alone, no empty 200 one.
    let body = "<?xml version=\"1.0\"?><propfind xmlns=\"DAV:\"><prop>\
                <x xmlns=\"urn:other\"/></prop></propfind>";
    let r = propfind(&s, "/dav/d/f", "0", body);
    assert!(
        String::from_utf8_lossy(&r.body).contains(
            "<D:response><D:href>/dav/d/f</D:href><D:propstat><D:prop>\
             <R:x xmlns:R=\"urn:other\"/></D:prop><D:status>HTTP/1.1 404 Not Found</D:status>\
             </D:propstat></D:response>"
        ),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let names = propfind(
        &s,
        "/dav/d/f",
        "0",
        "<propfind xmlns=\"DAV:\"><propname/></propfind>",
    );
    let born = match birth_time(&dav.join("d/f")) {
        Some(_) => "<D:creationdate/>",
        None => "",
    };
    assert!(String::from_utf8_lossy(&names.body).contains(&format!(
        "<D:prop>{born}<D:resourcetype/><D:displayname/><D:getcontentlength/><D:getcontenttype/>\
         <D:getetag/><D:getlastmodified/></D:prop>"
    )));
    // RFC 4918 §9.1: infinity (no Depth means it) is refused with the
    // propfind-finite-depth precondition.
    for depth in ["infinity", ""] {
        let r = propfind(&s, "/dav/d/", depth, "");
        assert_eq!(r.status, 403, "{depth:?}");
        assert_eq!(
            String::from_utf8_lossy(&r.body),
            format!("{XML}<D:error xmlns:D=\"DAV:\"><D:propfind-finite-depth/></D:error>\n")
        );
        // (Of a file, which has no members: its Depth 0; of nothing, 404.)
        let file = propfind(&s, "/dav/d/f", depth, "");
        assert_eq!(
            file.body,
            propfind(&s, "/dav/d/f", "0", "").body,
            "{depth:?}"
        );
        assert_eq!(file.status, 207);
        assert_eq!(propfind(&s, "/dav/none", depth, "").status, 404);
    }
}

#[test]
fn propfind_bodies_are_parsed_strictly_and_bounded() {
    let (s, _) = start("", &[("f", b"1")]);
    let laughs = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">\
                  <!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]>\
                  <propfind xmlns=\"DAV:\"><prop><displayname>&lol2;</displayname></prop></propfind>";
    let external = "<!DOCTYPE propfind SYSTEM \"file:///etc/passwd\"><propfind xmlns=\"DAV:\"><allprop/></propfind>";
    for bad in [
        "<propfind xmlns=\"DAV:\"><allprop></propfind>",
        "<propfind xmlns=\"DAV:\" xmlns:bad=\"\"><allprop/></propfind>",
        "<other xmlns=\"DAV:\"/>",
        laughs,
        external,
    ] {
        assert_eq!(propfind(&s, "/dav/f", "0", bad).status, 400, "{bad}");
    }
    let big = format!(
        "<propfind xmlns=\"DAV:\"><allprop/></propfind>{}",
        " ".repeat(70_000)
    );
    assert_eq!(propfind(&s, "/dav/f", "0", &big).status, 413);
    let ok = "<propfind xmlns=\"DAV:\"><allprop/></propfind>";
    assert_eq!(propfind(&s, "/dav/f", "0", ok).status, 207);
}

#[test]
fn max_upload_bounds_a_put_whatever_its_framing() {
    let (s, dav) = start("max_upload = 1000\n", &[("f", b"old")]);
    assert_eq!(send(&s, "PUT", "/dav/f", &[b'x'; 1000]).status, 204);
    assert_eq!(send(&s, "PUT", "/dav/g", &[b'x'; 1001]).status, 413);
    // A chunked body is counted as it arrives: refused once whole, and
    // nothing of it is left.
    let mut c = s.connect();
    c.send(b"PUT /dav/f HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send(format!("{:x}\r\n{}\r\n0\r\n\r\n", 1500, "y".repeat(1500)).as_bytes());
    assert_eq!(c.response().status, 413);
    assert_eq!(names(&dav), ["f"]);
    assert_eq!(fs::read(dav.join("f")).unwrap(), [b'x'; 1000]);
}

#[test]
fn auth_in_front_decides_who_writes() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir(&dav).unwrap();
    write_file(
        &b.base().join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    b.config(&format!(
        "[[auth]]\npath = \"/dav/\"\nrealm = \"DAV\"\nhtpasswd = \"htpasswd\"\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n",
        dav.display()
    ));
    let s = b.start();
    let put = |auth: &str| {
        s.request(
            format!("PUT /dav/f HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Length: 2\r\n\r\nhi")
                .as_bytes(),
        )
    };
    assert_eq!(put("").status, 401);
    assert!(names(&dav).is_empty());
    let auth = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    assert_eq!(put(&auth).status, 201);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"hi");
}

/// A guarded collection named without its slash is the same collection
/// to WebDAV: `[[auth]]` and `[[access]]` rules on `/dav/private/` cover
/// `/dav/private` too, as the path and as a `Destination`, so a PROPFIND,
/// MOVE, DELETE, COPY onto it or LOCK of it does not pass them by.
#[test]
fn a_guarded_collection_named_without_its_slash_is_guarded() {
    let (s, dav, auth) = guarded_share();
    for (private, guard) in [("/dav/private", 401), ("/dav/lan", 403)] {
        for slash in ["", "/"] {
            let p = format!("{private}{slash}");
            assert_eq!(propfind(&s, &p, "1", "").status, guard, "{p}");
            assert_eq!(
                transfer(&s, "MOVE", &p, "/dav/pub/stolen", "").status,
                guard,
                "{p}"
            );
            assert_eq!(
                transfer(&s, "COPY", &p, "/dav/pub/copied", "").status,
                guard,
                "{p}"
            );
            assert_eq!(send(&s, "DELETE", &p, b"").status, guard, "{p}");
            for m in ["COPY", "MOVE"] {
                let r = transfer(&s, m, "/dav/pub/p.txt", &p, "");
                assert_eq!(r.status, guard, "{m} onto {p}");
            }
        }
    }
    assert_eq!(fs::read(dav.join("private/s.txt")).unwrap(), b"secret\n");
    assert_eq!(fs::read(dav.join("lan/l.txt")).unwrap(), b"lan\n");
    assert_eq!(names(&dav.join("pub")), ["p.txt"]);
    // A name that only starts the same is not the collection.
    assert_eq!(send(&s, "PUT", "/dav/privately", b"x").status, 201);
    let r = s.request(
        format!(
            "PROPFIND /dav/private HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\n\
             {auth}Content-Length: 0\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 207, "{}", r.head);
}

/// A PUT with `Content-Range` (RFC 9110 §14.5) changes that range of the
/// file and keeps the rest, in one step as a whole PUT does; a body that
/// is not the range's length, or a range that cannot be read, changes
/// nothing (400), and a coded body is refused (415), not kept as its
/// coding's bytes.
#[test]
fn a_partial_put_changes_its_range_and_keeps_the_rest() {
    let (s, dav) = start("fsync = false\n", &[("f", b"0123456789")]);
    let put = |path: &str, range: &str, body: &[u8], chunked: bool| {
        let framing = match chunked {
            true => "Transfer-Encoding: chunked\r\n".to_string(),
            false => format!("Content-Length: {}\r\n", body.len()),
        };
        let mut raw = format!(
            "PUT {path} HTTP/1.1\r\nHost: localhost\r\nContent-Range: {range}\r\n{framing}\r\n"
        )
        .into_bytes();
        match chunked {
            true => raw.extend_from_slice(&common::chunked_body(body, 3)),
            false => raw.extend_from_slice(body),
        }
        s.request(&raw).status
    };
    let file = || fs::read(dav.join("f")).unwrap();
    assert_eq!(put("/dav/f", "bytes 2-3/10", b"AB", false), 204);
    assert_eq!(file(), b"01AB456789");
    // Past the end: the file grows; beyond it, a hole of zeros.
    assert_eq!(put("/dav/f", "bytes 10-12/*", b"XYZ", true), 204);
    assert_eq!(file(), b"01AB456789XYZ");
    assert_eq!(put("/dav/f", "bytes 15-15/16", b"!", false), 204);
    assert_eq!(file(), b"01AB456789XYZ\0\0!");
    // A new file: what is before the range is a hole.
    assert_eq!(put("/dav/new", "bytes 2-3/*", b"hi", false), 201);
    assert_eq!(fs::read(dav.join("new")).unwrap(), b"\0\0hi");
    // Nothing changes for a body of another length, in either framing,
    // or a range that cannot be read.
    let before = file();
    for (range, body, chunked) in [
        ("bytes 0-4/*", &b"hi"[..], false),
        ("bytes 0-4/*", b"hi", true),
        ("bytes 0-1/*", b"hello", true),
        ("bytes */10", b"hi", false),
        ("bytes 3-2/10", b"hi", false),
        ("lines 0-1/2", b"hi", false),
    ] {
        assert_eq!(
            put("/dav/f", range, body, chunked),
            400,
            "{range} {chunked}"
        );
        assert_eq!(file(), before, "{range} {chunked}");
    }
    // Two ranges in two lines are no one range (RFC 9110 §5.3).
    let r = s.request(
        b"PUT /dav/f HTTP/1.1\r\nHost: localhost\r\nContent-Range: bytes 0-1/*\r\n\
          Content-Range: bytes 4-5/*\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!(r.status, 400, "{}", r.head);
    assert_eq!(file(), before);
    let r = s.request(
        b"PUT /dav/g HTTP/1.1\r\nHost: localhost\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!(r.status, 415, "{}", r.head);
    assert_eq!(names(&dav), ["f", "new"]);
    // A 400 here is the client's: no error line.
    assert!(!s.stderr().contains("[error]"), "{}", s.stderr());
}

/// A share at `/dav/` with `pub/p.txt`, `private/s.txt` behind a login
/// (`[[auth]]`, its `Authorization` line given back) and `lan/l.txt` for
/// 10.0.0.0/8 only (`[[access]]`): the server, the share's directory
/// and the login.
fn guarded_share() -> (Server, PathBuf, String) {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    for d in ["pub", "private", "lan"] {
        fs::create_dir_all(dav.join(d)).unwrap();
    }
    write_file(&dav.join("pub/p.txt"), b"public\n");
    write_file(&dav.join("private/s.txt"), b"secret\n");
    write_file(&dav.join("lan/l.txt"), b"lan\n");
    write_file(
        &b.base().join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    b.config(&format!(
        "[[auth]]\npath = \"/dav/private/\"\nrealm = \"Private\"\nhtpasswd = \"htpasswd\"\n\
         [[access]]\npath = \"/dav/lan/\"\nallow = [\"10.0.0.0/8\"]\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n",
        dav.display()
    ));
    let s = b.start();
    let auth = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    (s, dav, auth)
}

/// A COPY or MOVE writes at its Destination too: `[[auth]]` and
/// `[[access]]` judge that path as they judge the request's, so a share
/// open to all cannot be a way into (or out of) a folder behind a login
/// or open to some addresses only, whatever spelling the Destination has.
#[test]
fn a_copy_or_move_is_judged_at_its_destination_too() {
    let (s, dav, auth) = guarded_share();
    for (method, from, to, status) in [
        ("COPY", "/dav/private/s.txt", "/dav/pub/leak.txt", 401),
        ("COPY", "/dav/pub/p.txt", "/dav/private/planted.txt", 401),
        ("MOVE", "/dav/pub/p.txt", "/dav/private/s.txt", 401),
        ("MOVE", "/dav/pub/p.txt", "/dav/%70rivate/s.txt", 401),
        (
            "MOVE",
            "/dav/pub/p.txt",
            "http://localhost/dav/pub/../private//s.txt",
            401,
        ),
        ("COPY", "/dav/lan/l.txt", "/dav/pub/leak.txt", 403),
        ("MOVE", "/dav/pub/p.txt", "/dav/lan/l.txt", 403),
        ("COPY", "/dav/pub/p.txt", "/dav/l%61n/x.txt", 403),
        // A Destination that cannot be read is refused before any rule.
        (
            "COPY",
            "/dav/pub/p.txt",
            "http://elsewhere/dav/private/x",
            502,
        ),
        ("COPY", "/dav/pub/p.txt", "/dav/%zz", 400),
    ] {
        let r = transfer(&s, method, from, to, "");
        assert_eq!(r.status, status, "{method} {from} -> {to}: {}", r.head);
        // With the credentials, the login no longer stands in the way
        // (the addresses still do).
        if status == 401 && method == "COPY" {
            let r = transfer(&s, method, from, to, &auth);
            assert_eq!(
                r.status, 201,
                "{method} {from} -> {to} with a login: {}",
                r.head
            );
        }
    }
    assert_eq!(fs::read(dav.join("private/s.txt")).unwrap(), b"secret\n");
    assert_eq!(fs::read(dav.join("pub/p.txt")).unwrap(), b"public\n");
    assert_eq!(fs::read(dav.join("lan/l.txt")).unwrap(), b"lan\n");
    assert_eq!(names(&dav.join("lan")), ["l.txt"]);
    assert_eq!(names(&dav.join("private")), ["planted.txt", "s.txt"]);
    assert_eq!(names(&dav.join("pub")), ["leak.txt", "p.txt"]);
}

/// A COPY, MOVE or DELETE of a collection, and a LOCK with a `Depth`,
/// reach what the collection holds: a folder behind a login (`[[auth]]`,
/// by `path` or by `pattern`) or open to some addresses only
/// (`[[access]]`) is not copied out, moved, removed or locked through a
/// collection above it, nor by its name without the slash. A `Depth: 1`
/// PROPFIND above it leaves it out of the listing (with the login, it is
/// listed).
#[test]
fn a_guarded_folder_is_not_reached_through_a_collection_above_it() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    for (rel, body) in [
        ("a/private/s.txt", &b"secret\n"[..]),
        ("a/open.txt", b"open\n"),
        ("g/private/s.txt", b"glob\n"),
        ("h/lan/l.txt", b"lan\n"),
        ("pub/p.txt", b"public\n"),
    ] {
        write_file(&dav.join(rel), body);
    }
    write_file(
        &b.base().join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    b.config(&format!(
        "[[auth]]\npath = \"/dav/a/private/\"\nrealm = \"Private\"\nhtpasswd = \"htpasswd\"\n\
         [[auth]]\npattern = \"/dav/g/private/*\"\nrealm = \"Private\"\nhtpasswd = \"htpasswd\"\n\
         [[access]]\npattern = \"/dav/h/lan/*\"\nallow = [\"10.0.0.0/8\"]\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nlocks = true\n",
        dav.display()
    ));
    let s = b.start();
    let auth = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    let lockinfo = "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
                    <D:locktype><D:write/></D:locktype></D:lockinfo>";
    for (above, guard) in [
        ("/dav/a", 401),
        ("/dav/g", 401),
        ("/dav/g/private", 401),
        ("/dav/h", 403),
        ("/dav/h/lan", 403),
    ] {
        for slash in ["", "/"] {
            let p = format!("{above}{slash}");
            let to = "/dav/pub/stolen";
            assert_eq!(transfer(&s, "COPY", &p, to, "").status, guard, "COPY {p}");
            assert_eq!(transfer(&s, "MOVE", &p, to, "").status, guard, "MOVE {p}");
            assert_eq!(send(&s, "DELETE", &p, b"").status, guard, "DELETE {p}");
            let r = propfind(&s, &p, "1", "");
            match above.matches('/').count() {
                2 => {
                    let listing = r.text();
                    assert_eq!(r.status, 207, "PROPFIND {p}");
                    assert!(listing.contains(&format!("<D:href>{above}/</D:href>")));
                    assert!(!listing.contains("/private") && !listing.contains("/lan"));
                }
                _ => assert_eq!(r.status, guard, "PROPFIND {p}"),
            }
            // (Onto it: what it holds would go.)
            let r = transfer(&s, "MOVE", "/dav/pub/p.txt", &p, "");
            assert_eq!(r.status, guard, "MOVE onto {p}");
            let r = send_with(&s, "LOCK", &p, "", lockinfo.as_bytes());
            assert_eq!(r.status, guard, "LOCK {p}: {}", r.head);
        }
    }
    assert_eq!(fs::read(dav.join("a/private/s.txt")).unwrap(), b"secret\n");
    assert_eq!(fs::read(dav.join("g/private/s.txt")).unwrap(), b"glob\n");
    assert_eq!(fs::read(dav.join("h/lan/l.txt")).unwrap(), b"lan\n");
    assert_eq!(names(&dav.join("pub")), ["p.txt"]);
    // What reaches no guarded path is as before: the collection alone
    // (Depth 0), another one.
    assert_eq!(propfind(&s, "/dav/a", "0", "").status, 207);
    assert_eq!(propfind(&s, "/dav/pub/", "1", "").status, 207);
    let r = transfer(&s, "COPY", "/dav/a", "/dav/pub/a0", "Depth: 0\r\n");
    assert_eq!(r.status, 201, "{}", r.head);
    // With the login, the login no longer stands in the way: the folder
    // lists what it holds. (Above it, the open listing leaves it out
    // all the same: its login is another than the listing's, none.)
    let listing = |path: &str| {
        let raw = format!(
            "PROPFIND {path} HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\n\
             {auth}Content-Length: 0\r\n\r\n"
        );
        let r = s.request(raw.as_bytes());
        assert_eq!(r.status, 207, "{}", r.head);
        r.text()
    };
    assert!(listing("/dav/a/private/").contains("<D:href>/dav/a/private/s.txt</D:href>"));
    assert!(!listing("/dav/a/").contains("/dav/a/private/"));
    let r = transfer(&s, "COPY", "/dav/a", "/dav/pub/a", &auth);
    assert_eq!(r.status, 201, "{}", r.head);
    assert_eq!(
        fs::read(dav.join("pub/a/private/s.txt")).unwrap(),
        b"secret\n"
    );
}

/// A rule that names files by pattern (`*.key`, refused to all; `*.secret`,
/// behind a login) leaves those files out of a `Depth: 1` listing of any
/// collection, instead of refusing the listing (every WebDAV client lists
/// with `Depth: 1`: the share would be unusable). Each member is judged as
/// its own path is: a rule before the pattern that lets it through lists
/// it. A member behind another login than the listing's (an open one
/// here) is left out with credentials too, and a client whose credentials
/// the collection's rule takes, but not another member's, is not refused
/// the listing (it was 401 for every collection).
#[test]
fn a_listing_leaves_out_the_members_a_guard_refuses() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    for rel in ["a.txt", "b.key", "c.secret", "keys/k.key"] {
        write_file(&dav.join(rel), b"x");
    }
    write_file(
        &b.base().join("htpasswd"),
        b"apr1:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    );
    b.config(&format!(
        "[[access]]\npath = \"/dav/keys/\"\nallow = [\"all\"]\n\
         [[access]]\npattern = \"*.key\"\ndeny = [\"all\"]\n\
         [[auth]]\npattern = \"*.secret\"\nrealm = \"S\"\nhtpasswd = \"htpasswd\"\n\
         [[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n",
        dav.display()
    ));
    let s = b.start();
    let auth = format!("Authorization: {}\r\n", basic_auth("apr1", "correct horse"));
    let listed = |path: &str, auth: &str| {
        let r = s.request(
            format!(
                "PROPFIND {path} HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\n\
                 {auth}Content-Length: 0\r\n\r\n"
            )
            .as_bytes(),
        );
        assert_eq!(r.status, 207, "{path}: {}", r.head);
        let text = r.text();
        let mut hrefs: Vec<String> = text
            .split("<D:href>")
            .skip(1)
            .map(|h| h[..h.find('<').unwrap()].to_string())
            .collect();
        hrefs.sort();
        hrefs
    };
    assert_eq!(listed("/dav/", ""), ["/dav/", "/dav/a.txt", "/dav/keys/"]);
    assert_eq!(listed("/dav/keys/", ""), ["/dav/keys/", "/dav/keys/k.key"]);
    assert_eq!(
        listed("/dav/", &auth),
        ["/dav/", "/dav/a.txt", "/dav/keys/"]
    );
    // (Credentials a member's rule would not take: the listing all the
    // same, the open one, as a share's users get theirs.)
    let other = format!("Authorization: {}\r\n", basic_auth("apr1", "not this"));
    assert_eq!(
        listed("/dav/", &other),
        ["/dav/", "/dav/a.txt", "/dav/keys/"]
    );
    // Named, each is judged as before.
    assert_eq!(s.get("/dav/b.key").status, 403);
    assert_eq!(s.get("/dav/c.secret").status, 401);
    assert_eq!(propfind(&s, "/dav/b.key", "0", "").status, 403);
    assert_eq!(s.get("/dav/keys/k.key").status, 200);
}

/// An `If` header's tagged lists read the entity tags and locks of what
/// they name (RFC 4918 §10.4.3): `[[auth]]` and `[[access]]` judge those
/// paths too, so a client that may not read a file cannot test guesses
/// of its tag (its size and date) through one it may write.
#[test]
fn an_if_header_is_judged_at_what_it_names_too() {
    let (s, dav, auth) = guarded_share();
    let tag = s.get_with("/dav/private/s.txt", &auth);
    assert_eq!(tag.status, 200);
    let etag = tag.header("ETag").unwrap().to_string();
    let put = |path: &str, condition: &str, extra: &str| {
        let raw = format!(
            "PUT {path} HTTP/1.1\r\nHost: localhost\r\nIf: {condition}\r\n{extra}Content-Length: 1\r\n\r\nx"
        );
        s.request(raw.as_bytes()).status
    };
    let wrong = "\"0-0\"";
    for guess in [etag.as_str(), wrong] {
        let named = format!("</dav/private/s.txt> ([{guess}])");
        assert_eq!(put("/dav/pub/n.txt", &named, ""), 401, "{named}");
        let spelt = format!("<http://localhost/dav/pub/../%70rivate/s.txt> ([{guess}])");
        assert_eq!(put("/dav/pub/n.txt", &spelt, ""), 401, "{spelt}");
        let lan = format!("</dav/lan/l.txt> (Not [{guess}])");
        assert_eq!(put("/dav/pub/n.txt", &lan, ""), 403, "{lan}");
    }
    assert!(!dav.join("pub/n.txt").exists());
    // With the login, the condition is what it says.
    let named = |guess: &str| format!("</dav/private/s.txt> ([{guess}])");
    assert_eq!(put("/dav/pub/n.txt", &named(wrong), &auth), 412);
    assert_eq!(put("/dav/pub/n.txt", &named(&etag), &auth), 201);
    // Tags on the request's own resource, and on another host (which
    // holds nothing here), are as before.
    assert_eq!(
        put(
            "/dav/pub/n.txt",
            &format!("</dav/pub/n.txt> ([{wrong}])"),
            ""
        ),
        412
    );
    let elsewhere = format!("<http://elsewhere/dav/private/s.txt> ([{etag}])");
    assert_eq!(put("/dav/pub/n.txt", &elsewhere, ""), 412);
}

/// A GET after a PUT answers the new file, whatever the open-file cache
/// held (it is checked against the disk on every WebDAV GET: another
/// worker may have written the file).
#[test]
fn a_get_after_a_put_is_the_new_file() {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir(&dav).unwrap();
    write_file(&dav.join("f"), b"old");
    b.config(&format!(
        "[static]\nopen_file_cache_valid = \"1h\"\n[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n",
        dav.display()
    ));
    let s = b.start();
    assert_eq!(s.get("/dav/f").body, b"old");
    let r = s.request(b"PUT /dav/f HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nnewer");
    assert_eq!(r.status, 204);
    let r = s.get("/dav/f");
    assert_eq!(r.body, b"newer");
    assert_eq!(
        r.header("ETag"),
        Some(validators(&dav.join("f")).0.as_str())
    );
}

/// A collection of more than 256 members is answered as the client
/// reads (chunked): the same responses as a small one's, each member's
/// what a `Depth: 0` PROPFIND of it says.
#[test]
fn a_large_collection_is_streamed_alike() {
    let files: Vec<(String, Vec<u8>)> = (0..300)
        .map(|i| (format!("big/f{i:03}.txt"), vec![b'x'; i]))
        .collect();
    let mut all: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
    all.push(("big/.hidden", b"h"));
    let (s, dav) = start("", &all);
    std::os::unix::fs::symlink("f007.txt", dav.join("big/link")).unwrap();
    let r = propfind(&s, "/dav/big/", "1", "");
    assert_eq!(r.status, 207);
    assert_eq!(r.header("Transfer-Encoding"), Some("chunked"));
    assert_eq!(r.header("Content-Length"), None);
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert!(text.starts_with(&format!(
        "{XML}<D:multistatus xmlns:D=\"DAV:\">\n<D:response><D:href>/dav/big/</D:href>"
    )));
    assert!(
        text.ends_with("</D:response>\n</D:multistatus>\n"),
        "{text}"
    );
    // The collection, its 300 files and the link; no dotfile.
    assert_eq!(text.matches("<D:response>").count(), 302);
    // Over HTTP/2, the same bytes.
    #[cfg(feature = "http2")]
    {
        let mut c = common::h2::H2::connect(s.addr(), &[], 0);
        let find = c.request("PROPFIND", "/dav/big/", &[("depth", "1")], None);
        let [h2] = &c.answers(&[find])[..] else {
            panic!()
        };
        assert_eq!(h2.status(), "207");
        assert_eq!(h2.body, r.body);
    }
    assert!(!text.contains("hidden"));
    let one = |path: &str| {
        let t = String::from_utf8_lossy(&propfind(&s, path, "0", "").body).into_owned();
        let start = t.find("<D:response>").unwrap();
        let end = t.find("</D:response>").unwrap() + "</D:response>".len();
        t[start..end].to_string()
    };
    for path in ["/dav/big/f000.txt", "/dav/big/f299.txt"] {
        assert!(text.contains(&one(path)), "{path}: {text}");
    }
    // The link, as the file it names (its href and name its own).
    let target = one("/dav/big/f007.txt");
    let etag = &target[target.find("<D:getetag>").unwrap()..target.find("</D:getetag>").unwrap()];
    let link = &text[text.find("<D:href>/dav/big/link</D:href>").unwrap()..];
    let link = &link[..link.find("</D:response>").unwrap()];
    assert!(
        link.contains(etag) && link.contains("<D:displayname>link</D:displayname>"),
        "{link}"
    );
}

/// A member's dead properties are listed with `Depth: 1` in the
/// collection a MOVE took it to (the collection is marked as holding
/// members with some: `props::marked`).
#[test]
fn dead_properties_are_listed_where_a_move_takes_them() {
    let (s, dav) = start("", &[("a/f", b"1"), ("b/g", b"2")]);
    let set =
        "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><Z:tint xmlns:Z=\"urn:z\">blue</Z:tint>\
               </D:prop></D:set></D:propertyupdate>";
    match proppatch(&s, "/dav/a/f", set).status {
        507 => {
            skip("the temporary directory's filesystem has no user extended attributes");
            return;
        }
        status => assert_eq!(status, 207),
    }
    let shown = |dir: &str| {
        let r = propfind(&s, dir, "1", "");
        String::from_utf8_lossy(&r.body)
            .matches(">blue</R:tint>")
            .count()
    };
    assert_eq!((shown("/dav/a/"), shown("/dav/b/")), (1, 0));
    let r =
        s.request(b"MOVE /dav/a/f HTTP/1.1\r\nHost: localhost\r\nDestination: /dav/b/f\r\n\r\n");
    assert_eq!(r.status, 201);
    assert!(dav.join("b/f").exists());
    assert_eq!((shown("/dav/a/"), shown("/dav/b/")), (0, 1));
}

/// PROPPATCH `path` with `body`.
pub(crate) fn proppatch(s: &Server, path: &str, body: &str) -> Response {
    s.request(
        format!(
            "PROPPATCH {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

#[test]
fn proppatch_keeps_dead_properties_all_or_nothing() {
    let (s, dav) = start("", &[("f", b"1")]);
    let set = "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\">\
               <D:set><D:prop><Z:color>red &amp; &lt;blue&gt;</Z:color><plain xmlns=\"\">x</plain></D:prop></D:set>\
               </D:propertyupdate>";
    let r = proppatch(&s, "/dav/f", set);
    match r.status {
        507 => {
            skip("the temporary directory's filesystem has no user extended attributes");
            return;
        }
        status => assert_eq!(status, 207, "{}", String::from_utf8_lossy(&r.body)),
    }
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        format!(
            "{XML}<D:multistatus xmlns:D=\"DAV:\">\n<D:response><D:href>/dav/f</D:href><D:propstat><D:prop>\
             <R:color xmlns:R=\"urn:z\"/><plain xmlns=\"\"/></D:prop><D:status>HTTP/1.1 200 OK</D:status>\
             </D:propstat></D:response>\n</D:multistatus>\n"
        )
    );
    let get = "<propfind xmlns=\"DAV:\"><prop><color xmlns=\"urn:z\"/><plain xmlns=\"\"/></prop></propfind>";
    let text = String::from_utf8_lossy(&propfind(&s, "/dav/f", "0", get).body).into_owned();
    assert!(
        text.contains(
            "<D:prop><R:color xmlns:R=\"urn:z\">red &amp; &lt;blue&gt;</R:color><plain xmlns=\"\">x</plain></D:prop>\
             <D:status>HTTP/1.1 200 OK</D:status>"
        ),
        "{text}"
    );
    // A member's dead properties are listed with Depth: 1 (allprop, and
    // asked by name), another member's none.
    fs::write(dav.join("g"), b"2").unwrap();
    let all = String::from_utf8_lossy(&propfind(&s, "/dav/", "1", "").body).into_owned();
    assert!(
        all.contains(
            "</D:getlastmodified><R:color xmlns:R=\"urn:z\">red &amp; &lt;blue&gt;</R:color>\
             <plain xmlns=\"\">x</plain></D:prop>"
        ),
        "{all}"
    );
    assert_eq!(all.matches("<R:color").count(), 1, "{all}");
    let some = String::from_utf8_lossy(&propfind(&s, "/dav/", "1", get).body).into_owned();
    assert!(
        some.contains(
            "<D:href>/dav/g</D:href><D:propstat><D:prop><R:color xmlns:R=\"urn:z\"/><plain xmlns=\"\"/></D:prop>\
             <D:status>HTTP/1.1 404 Not Found</D:status>"
        ),
        "{some}"
    );
    assert_eq!(
        some.matches(">red &amp; &lt;blue&gt;<").count(),
        1,
        "{some}"
    );
    fs::remove_file(dav.join("g")).unwrap();
    // All or nothing (RFC 4918 §9.2): a protected property fails the
    // whole request, the others 424, and nothing changes.
    let bad = "<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\"><D:remove><D:prop><Z:color/></D:prop></D:remove>\
               <D:set><D:prop><D:getetag>x</D:getetag></D:prop></D:set></D:propertyupdate>";
    let text = String::from_utf8_lossy(&proppatch(&s, "/dav/f", bad).body).into_owned();
    assert!(
        text.contains("<D:prop><D:getetag/></D:prop><D:status>HTTP/1.1 403 Forbidden</D:status>"),
        "{text}"
    );
    assert!(
        text.contains("<D:prop><R:color xmlns:R=\"urn:z\"/></D:prop><D:status>HTTP/1.1 424 Failed Dependency</D:status>"),
        "{text}"
    );
    let text = String::from_utf8_lossy(&propfind(&s, "/dav/f", "0", get).body).into_owned();
    assert!(text.contains("red &amp; &lt;blue&gt;"), "{text}");
    // A value with elements inside is kept as XML (RFC 4918 §4.4), the
    // namespaces in force declared where it starts (webdav_props.rs).
    let complex = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><x xmlns=\"urn:z\"><y/></x></D:prop></D:set></D:propertyupdate>";
    assert_eq!(proppatch(&s, "/dav/f", complex).status, 207);
    let text = String::from_utf8_lossy(&propfind(&s, "/dav/f", "0", "").body).into_owned();
    assert!(
        text.contains("<R:x xmlns:R=\"urn:z\"><y xmlns=\"urn:z\" xmlns:D=\"DAV:\"/></R:x>"),
        "{text}"
    );
    // Removed, it is gone.
    let remove = "<D:propertyupdate xmlns:D=\"DAV:\"><D:remove><D:prop><c:color xmlns:c=\"urn:z\"/></D:prop></D:remove></D:propertyupdate>";
    assert_eq!(proppatch(&s, "/dav/f", remove).status, 207);
    let text = String::from_utf8_lossy(&propfind(&s, "/dav/f", "0", get).body).into_owned();
    assert!(
        text.contains(
            "<D:prop><R:color xmlns:R=\"urn:z\"/></D:prop><D:status>HTTP/1.1 404 Not Found"
        ),
        "{text}"
    );
    assert_eq!(proppatch(&s, "/dav/nothing", remove).status, 404);
    assert_eq!(proppatch(&s, "/dav/f", "<a/>").status, 400);
    assert_eq!(names(&dav), ["f"]);
}

/// Over HTTP/2 (h2c, on by default), as over HTTP/1.1: a PUT's body
/// streams into its file, and the other methods answer the same.
#[cfg(feature = "http2")]
#[test]
fn over_http2_alike() {
    use common::h2::H2;
    let (s, dav) = start("", &[]);
    let mut c = H2::connect(s.addr(), &[], 0);
    let body: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    let len = body.len().to_string();
    let put = c.request(
        "PUT",
        "/dav/f",
        &[("content-length", len.as_str())],
        Some(&body),
    );
    let [a] = &c.answers(&[put])[..] else {
        panic!()
    };
    assert_eq!(a.status(), "201");
    assert_eq!(fs::read(dav.join("f")).unwrap(), body);
    let mkcol = c.request("MKCOL", "/dav/d/", &[], None);
    let find = c.request("PROPFIND", "/dav/f", &[("depth", "0")], None);
    let answers = c.answers(&[mkcol, find]);
    assert_eq!((answers[0].status(), answers[1].status()), ("201", "207"));
    let text = String::from_utf8_lossy(&answers[1].body);
    assert!(
        text.contains("<D:getcontentlength>50000</D:getcontentlength>"),
        "{text}"
    );
    assert!(dav.join("d").is_dir());
}

#[test]
fn conditional_put_and_delete_go_by_the_static_etag() {
    let (s, dav) = start("", &[("f", b"old")]);
    let etag = s.get("/dav/f").header("ETag").unwrap().to_string();
    let cond = |m: &str, path: &str, h: &str| {
        s.request(
            format!("{m} {path} HTTP/1.1\r\nHost: localhost\r\n{h}Content-Length: 3\r\n\r\nnew")
                .as_bytes(),
        )
    };
    // If-None-Match: * asks for a new resource only (RFC 9110 §13.1.2).
    assert_eq!(cond("PUT", "/dav/f", "If-None-Match: *\r\n").status, 412);
    assert_eq!(cond("PUT", "/dav/g", "If-None-Match: *\r\n").status, 201);
    assert_eq!(cond("PUT", "/dav/f", "If-Match: \"0-0\"\r\n").status, 412);
    assert_eq!(cond("PUT", "/dav/h", "If-Match: *\r\n").status, 412);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"old");
    assert_eq!(
        cond("PUT", "/dav/f", &format!("If-Match: {etag}\r\n")).status,
        204
    );
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"new");
    let r = s.request(
        format!("DELETE /dav/f HTTP/1.1\r\nHost: localhost\r\nIf-Match: {etag}\r\n\r\n").as_bytes(),
    );
    assert_eq!(r.status, 412, "the ETag changed with the PUT");
    assert_eq!(names(&dav), ["f", "g"]);
}

/// A path that ends in a slash names a collection: a file there is no
/// such resource (404) to PROPFIND, PROPPATCH, DELETE, COPY, MOVE, LOCK
/// and UNLOCK, as to GET. PROPFIND listed the file under that href (207)
/// and DELETE removed it (204). A collection's path with its slash works
/// as ever.
#[test]
fn a_file_is_not_found_under_a_collections_path() {
    let (s, dav) = start("locks = true\n", &[("f", b"f"), ("c/m", b"m")]);
    let lockinfo = "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
                    <D:locktype><D:write/></D:locktype></D:lockinfo>";
    let patch = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><Z:t xmlns:Z=\"urn:z\">x</Z:t>\
                 </D:prop></D:set></D:propertyupdate>";
    assert_eq!(s.get("/dav/f/").status, 404);
    for (method, extra, body) in [
        ("PROPFIND", "Depth: 0\r\n", ""),
        ("PROPPATCH", "", patch),
        ("LOCK", "", lockinfo),
        (
            "UNLOCK",
            "Lock-Token: <urn:uuid:00000000-0000-0000-0000-000000000000>\r\n",
            "",
        ),
        ("COPY", "Destination: /dav/g\r\n", ""),
        ("MOVE", "Destination: /dav/g\r\n", ""),
        ("DELETE", "", ""),
    ] {
        let r = s.request(
            format!(
                "{method} /dav/f/ HTTP/1.1\r\nHost: localhost\r\n{extra}Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        assert_eq!(r.status, 404, "{method}: {}", r.head);
    }
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"f");
    assert!(!dav.join("g").exists());
    // A collection, with its slash: as ever.
    let r = s.request(
        b"PROPFIND /dav/c/ HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(r.status, 207);
    assert_eq!(send(&s, "DELETE", "/dav/c/", b"").status, 204);
    assert!(!dav.join("c").exists());
}

/// Two PUTs of the same size within one second make two ETags: the
/// first tag no longer passes `If-Match` (the lost-update guard: the
/// second client's change stays) nor gets a 304 for the new content.
/// They were `"<seconds>-<size>"` alike, so the stale `If-Match` PUT
/// was 204 over the other change and a GET with the old tag 304.
#[test]
fn same_size_puts_within_a_second_change_the_etag() {
    let (s, dav) = start("", &[]);
    let second = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_164_645);
    // (Each version dated in the same second, 0.1 s and 0.2 s into it,
    // as two PUTs a moment apart are.)
    let date = |ms: u64| {
        let f = fs::File::options().write(true).open(dav.join("f")).unwrap();
        f.set_modified(second + std::time::Duration::from_millis(ms))
            .unwrap();
    };
    assert_eq!(send(&s, "PUT", "/dav/f", b"aaaaa").status, 201);
    date(100);
    let first = s.get("/dav/f").header("ETag").unwrap().to_string();
    assert_eq!(send(&s, "PUT", "/dav/f", b"bbbbb").status, 204);
    date(200);
    let r = s.get("/dav/f");
    let second_tag = r.header("ETag").unwrap().to_string();
    assert_ne!(first, second_tag);
    assert_eq!(second_tag, validators(&dav.join("f")).0);
    let stale = s.request(
        format!(
            "PUT /dav/f HTTP/1.1\r\nHost: localhost\r\nIf-Match: {first}\r\n\
             Content-Length: 5\r\n\r\nccccc"
        )
        .as_bytes(),
    );
    assert_eq!(stale.status, 412);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"bbbbb");
    let r = s.request(
        format!("GET /dav/f HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: {first}\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!((r.status, &r.body[..]), (200, &b"bbbbb"[..]));
    // PROPFIND's getetag is the GET's.
    let r = s.request(
        b"PROPFIND /dav/f HTTP/1.1\r\nHost: localhost\r\nDepth: 0\r\nContent-Length: 0\r\n\r\n",
    );
    let text = String::from_utf8_lossy(&r.body);
    assert!(
        text.contains(&format!(
            "<D:getetag>{}</D:getetag>",
            second_tag.replace('"', "&quot;")
        )),
        "{text}"
    );
}

/// Two PUTs with `If-None-Match: *` (make it, only if nobody has) whose
/// bodies are both under way: the one that ends first makes the file
/// (201), the other is 412 when it ends and the file stays the first's.
/// Both were judged when their heads came (nothing there yet) and both
/// answered 201, the second replacing the first ("only if nobody has
/// made it" held for neither). Apache and lighttpd: one 201, one 412.
#[test]
fn if_none_match_star_puts_at_once_make_the_file_once() {
    let (s, dav) = start("", &[]);
    let head = "PUT /dav/n HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: *\r\n\
                Expect: 100-continue\r\nContent-Length: 5\r\n\r\n";
    // (Each head judged, the file still missing, before either body.)
    let mut first = s.connect();
    first.send(head.as_bytes());
    assert_eq!(first.response().status, 100);
    let mut other = s.connect();
    other.send(head.as_bytes());
    assert_eq!(other.response().status, 100);
    first.send(b"first");
    assert_eq!(first.response().status, 201);
    other.send(b"other");
    assert_eq!(other.response().status, 412);
    assert_eq!(fs::read(dav.join("n")).unwrap(), b"first");
    // An If-Match judged before another PUT changed the file fails too.
    let etag = s.get("/dav/n").header("ETag").unwrap().to_string();
    let mut stale = s.connect();
    stale.send(
        format!(
            "PUT /dav/n HTTP/1.1\r\nHost: localhost\r\nIf-Match: {etag}\r\n\
             Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(stale.response().status, 100);
    assert_eq!(send(&s, "PUT", "/dav/n", b"changed").status, 204);
    stale.send(b"stale");
    assert_eq!(stale.response().status, 412);
    assert_eq!(fs::read(dav.join("n")).unwrap(), b"changed");
}

/// Eight partial PUTs (`Content-Range`) of eight parts of one file, their
/// bodies sent at once: every part is in the file. Each copied the old
/// file around its part and renamed over it, so the last rename dropped
/// the parts of the PUTs that ended meanwhile (2 of 8 kept, all eight
/// answered 204). Apache (in place): all kept.
#[test]
fn partial_puts_at_once_keep_every_part() {
    const PART: usize = 256 * 1024;
    let (s, dav) = start("max_upload = \"16MiB\"\n", &[("f", &vec![b'.'; 8 * PART])]);
    let parts: Vec<_> = (0..8u8)
        .map(|i| {
            let mut c = s.connect();
            let (from, to) = (usize::from(i) * PART, (usize::from(i) + 1) * PART - 1);
            c.send(
                format!(
                    "PUT /dav/f HTTP/1.1\r\nHost: localhost\r\n\
                     Content-Range: bytes {from}-{to}/*\r\nExpect: 100-continue\r\n\
                     Content-Length: {PART}\r\n\r\n"
                )
                .as_bytes(),
            );
            assert_eq!(c.response().status, 100);
            (i, c)
        })
        .collect();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(parts.len()));
    let threads: Vec<_> = parts
        .into_iter()
        .map(|(i, mut c)| {
            let barrier = std::sync::Arc::clone(&barrier);
            std::thread::spawn(move || {
                let body = vec![b'A' + i; PART];
                barrier.wait();
                c.send(&body);
                c.response().status
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 204);
    }
    let got = fs::read(dav.join("f")).unwrap();
    assert_eq!(got.len(), 8 * PART);
    for i in 0..8u8 {
        let part = &got[usize::from(i) * PART..(usize::from(i) + 1) * PART];
        assert!(part.iter().all(|&b| b == b'A' + i), "part {i} lost");
    }
}

/// `If-Match`, `If-None-Match` and `If-Unmodified-Since` hold for every
/// WebDAV method, against the request's resource (RFC 9110 §13.1.1,
/// §13.2.1): COPY, LOCK, MKCOL and PROPFIND as PUT (412, nothing done);
/// MKCOL's resource does not exist yet (`If-Match` fails, `If-None-Match:
/// *` holds).
#[test]
fn preconditions_hold_for_every_method() {
    let (s, dav) = start("locks = true\n", &[("f", b"old")]);
    let etag = s.get("/dav/f").header("ETag").unwrap().to_string();
    let lockinfo = "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
                    <D:locktype><D:write/></D:locktype></D:lockinfo>";
    let wrong = "If-Match: \"0-0\"\r\n";
    let old = "If-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n";
    for (method, path, h, body) in [
        (
            "COPY",
            "/dav/f",
            format!("Destination: /dav/c\r\n{wrong}"),
            "",
        ),
        (
            "COPY",
            "/dav/f",
            format!("Destination: /dav/c\r\n{old}"),
            "",
        ),
        (
            "LOCK",
            "/dav/f",
            "If-None-Match: *\r\n".to_string(),
            lockinfo,
        ),
        (
            "LOCK",
            "/dav/f",
            format!("If-None-Match: {etag}\r\n"),
            lockinfo,
        ),
        ("MKCOL", "/dav/m/", "If-Match: *\r\n".to_string(), ""),
        ("PROPFIND", "/dav/f", format!("Depth: 0\r\n{wrong}"), ""),
    ] {
        let r = send_with(&s, method, path, &h, body.as_bytes());
        assert_eq!(r.status, 412, "{method} {h}: {}", r.head);
    }
    assert_eq!(names(&dav), ["f"]);
    let r = send_with(&s, "MKCOL", "/dav/m/", "If-None-Match: *\r\n", b"");
    assert_eq!(r.status, 201);
    let h = format!("Destination: /dav/c\r\nIf-Match: {etag}\r\n");
    assert_eq!(send_with(&s, "COPY", "/dav/f", &h, b"").status, 201);
}

/// The `If` header does not tell the entity tag of a file brisk serves
/// no client (a dotfile here): a list tagged with it fails (412) whether
/// the guess is right or wrong, as for a resource without one.
#[test]
fn the_if_header_tells_nothing_of_a_hidden_file() {
    let (s, dav) = start("", &[("f", b"1"), (".secret", b"hidden")]);
    let (etag, _) = validators(&dav.join(".secret"));
    for guess in [etag.as_str(), "\"0-0\""] {
        let h = format!("Depth: 0\r\nIf: </dav/.secret> ([{guess}])\r\n");
        assert_eq!(
            send_with(&s, "PROPFIND", "/dav/f", &h, b"").status,
            412,
            "{guess}"
        );
    }
    let (etag, _) = validators(&dav.join("f"));
    let h = format!("Depth: 0\r\nIf: </dav/f> ([{etag}])\r\n");
    assert_eq!(send_with(&s, "PROPFIND", "/dav/f", &h, b"").status, 207);
}
