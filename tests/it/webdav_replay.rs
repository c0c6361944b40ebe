//! What macOS Finder (WebDAVFS 3) and Windows' Mini-Redirector send,
//! replayed on one connection each (as those clients keep one), with
//! the answers each client needs checked: the classes and
//! `MS-Author-Via` in OPTIONS, PROPFIND with and without a body, LOCK
//! with Finder's and Windows' timeouts, PUT chunked with
//! `X-Expected-Entity-Length`, AppleDouble `._` files, Windows'
//! PROPPATCH of its Win32 times, `Translate: f`, MOVE by a full URL.
//! The requests are written from those clients' published captures
//! (their header lines, spellings and bodies; no Mac or Windows machine
//! here): `Host` is `localhost` (which a MOVE's `Destination` then
//! names) and the lock tokens are the server's. And davfs2, mounted
//! through FUSE, where the machine lets it mount.

use crate::common;

use common::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// brisk with a `[[webdav]]` rule with locks at `/dav/` over
/// `<base>/dav`, `extra` at the top of the configuration.
fn start(extra: &str) -> (Server, PathBuf) {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir(&dav).unwrap();
    b.config(&format!(
        "{extra}\n[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nlocks = true\n",
        dav.display()
    ));
    (b.start(), dav)
}

/// Sends `head` (lines joined with CRLF, ending the head) and `body`.
fn send(c: &mut Client, head: &[String], body: &[u8]) -> Response {
    let mut raw = head.join("\r\n").into_bytes();
    raw.extend_from_slice(b"\r\n\r\n");
    raw.extend_from_slice(body);
    c.send(&raw);
    c.response()
}

fn text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// `line` as Finder (WebDAVFS 3) sends it: its header lines around
/// `extra`, a `Content-Length` for a body (none with `chunked`).
fn finder(c: &mut Client, line: &str, extra: &[&str], body: &[u8]) -> Response {
    let mut head = vec![
        line.to_string(),
        "Host: localhost".into(),
        "User-Agent: WebDAVFS/3.0.0 (03008000) Darwin/22.6.0 (x86_64)".into(),
        "Accept: */*".into(),
    ];
    head.extend(extra.iter().map(|h| h.to_string()));
    if !extra.contains(&"Transfer-Encoding: chunked") {
        head.push(format!("Content-Length: {}", body.len()));
    }
    head.push("Connection: keep-alive".into());
    send(c, &head, body)
}

/// `line` as Windows' Mini-Redirector sends it: its header lines around
/// `extra` (`Content-Length` among them where Windows sends one).
fn windows(c: &mut Client, line: &str, extra: &[&str], body: &[u8]) -> Response {
    let mut head = vec![
        line.to_string(),
        "Connection: Keep-Alive".into(),
        "User-Agent: Microsoft-WebDAV-MiniRedir/10.0.19045".into(),
    ];
    head.extend(extra.iter().map(|h| h.to_string()));
    head.push("translate: f".into());
    head.push("Host: localhost".into());
    send(c, &head, body)
}

/// Finder's PROPFIND body (WebDAVFS asks for these four).
const FINDER_PROPS: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
<D:propfind xmlns:D=\"DAV:\">\n<D:prop>\n<D:getlastmodified/>\n<D:getcontentlength/>\n\
<D:creationdate/>\n<D:resourcetype/>\n</D:prop>\n</D:propfind>\n";

/// Finder's LOCK body.
const FINDER_LOCK: &str = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n\
<D:lockinfo xmlns:D=\"DAV:\">\n<D:lockscope><D:exclusive/></D:lockscope>\n\
<D:locktype><D:write/></D:locktype>\n<D:owner>\n<D:href>http://www.apple.com/webdav_fs/</D:href>\n\
</D:owner>\n</D:lockinfo>\n";

/// Finder mounts (OPTIONS: class 2, or it mounts read-only), lists,
/// looks for its dotfiles, then copies a file in: LOCK of the new name,
/// the body chunked with `X-Expected-Entity-Length`, its AppleDouble
/// `._` twin the same way, a refresh, UNLOCK.
#[test]
fn finder_mounts_and_copies_a_file_in() {
    // (Finder keeps `.DS_Store` and `._` files: a share for it allows
    // dotfiles.)
    let (s, dav) = start("[static]\ndotfiles = \"allow\"\n");
    fs::write(dav.join("old.txt"), b"old").unwrap();
    let mut c = s.connect();
    let r = finder(&mut c, "OPTIONS /dav/ HTTP/1.1", &[], b"");
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.header("DAV"), Some("1, 2"));
    assert!(r.header("Allow").unwrap().contains("LOCK"));
    let propfind = |c: &mut Client, path: &str, depth: &str| {
        let line = format!("PROPFIND {path} HTTP/1.1");
        let depth = format!("Depth: {depth}");
        let extra = ["Content-Type: text/xml", &depth];
        finder(c, &line, &extra, FINDER_PROPS.as_bytes())
    };
    let r = propfind(&mut c, "/dav/", "1");
    assert_eq!(r.status, 207);
    let t = text(&r);
    assert!(t.contains("<D:href>/dav/old.txt</D:href>"), "{t}");
    assert!(
        t.contains("<D:getcontentlength>3</D:getcontentlength>"),
        "{t}"
    );
    // (What is not there is 404, which Finder takes for "none".)
    for missing in ["/dav/.DS_Store", "/dav/._old.txt", "/dav/.localized"] {
        assert_eq!(propfind(&mut c, missing, "0").status, 404, "{missing}");
    }

    // The copy: LOCK the new name (an empty file, locked)...
    let lock = |c: &mut Client, path: &str| {
        let extra = [
            "Content-Type: text/xml; charset=\"utf-8\"",
            "Depth: 0",
            "Timeout: Second-600",
        ];
        let line = format!("LOCK {path} HTTP/1.1");
        let r = finder(c, &line, &extra, FINDER_LOCK.as_bytes());
        assert_eq!(r.status, 201, "{path}: {}", r.head);
        assert!(text(&r).contains("<D:timeout>Second-600</D:timeout>"));
        assert!(text(&r).contains("http://www.apple.com/webdav_fs/"));
        r.header("Lock-Token").unwrap().to_string()
    };
    // ...then the body, chunked, its length said beside.
    let put = |c: &mut Client, path: &str, token: &str, body: &[u8]| {
        let mut chunked = Vec::new();
        for piece in body.chunks(1000) {
            chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            chunked.extend_from_slice(piece);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let (cond, expected) = (
            format!("If: ({token})"),
            format!("X-Expected-Entity-Length: {}", body.len()),
        );
        let extra = [cond.as_str(), &expected, "Transfer-Encoding: chunked"];
        let r = finder(c, &format!("PUT {path} HTTP/1.1"), &extra, &chunked);
        assert!(matches!(r.status, 201 | 204), "{path}: {}", r.head);
    };
    let token = lock(&mut c, "/dav/report.pdf");
    assert_eq!(fs::read(dav.join("report.pdf")).unwrap(), b"");
    let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    put(&mut c, "/dav/report.pdf", &token, &body);
    // AppleDouble: magic 0x00051607, version 2, then Finder's info.
    let mut double = vec![0, 5, 0x16, 7, 0, 2, 0, 0];
    double.resize(4096, 0);
    let twin = lock(&mut c, "/dav/._report.pdf");
    put(&mut c, "/dav/._report.pdf", &twin, &double);
    // A refresh: no body, the token in `If`.
    let cond = format!("If: ({token})");
    let extra = [cond.as_str(), "Timeout: Second-600"];
    let r = finder(&mut c, "LOCK /dav/report.pdf HTTP/1.1", &extra, b"");
    assert_eq!(r.status, 200, "{}", r.head);
    for (path, token) in [("/dav/report.pdf", &token), ("/dav/._report.pdf", &twin)] {
        let held = format!("Lock-Token: {token}");
        let r = finder(&mut c, &format!("UNLOCK {path} HTTP/1.1"), &[&held], b"");
        assert_eq!(r.status, 204, "{path}: {}", r.head);
    }
    assert_eq!(fs::read(dav.join("report.pdf")).unwrap(), body);
    assert_eq!(fs::read(dav.join("._report.pdf")).unwrap(), double);
    // Listed as Finder then sees it.
    let t = text(&propfind(&mut c, "/dav/", "1"));
    assert!(t.contains("<D:href>/dav/._report.pdf</D:href>"), "{t}");
    assert!(
        t.contains("<D:getcontentlength>5000</D:getcontentlength>"),
        "{t}"
    );
}

/// Windows' PROPFIND body, with its own properties.
const WINDOWS_PROPS: &str = "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propfind xmlns:D=\"DAV:\">\
<D:prop xmlns:Z=\"urn:schemas-microsoft-com:\"><D:creationdate/><D:displayname/><D:getcontentlength/>\
<D:getcontenttype/><D:getetag/><D:getlastmodified/><D:resourcetype/><Z:Win32CreationTime/>\
<Z:Win32LastAccessTime/><Z:Win32LastModifiedTime/><Z:Win32FileAttributes/></D:prop></D:propfind>";

/// Windows maps the folder (OPTIONS, PROPFIND without a body), makes
/// "New Text Document.txt" (an empty PUT, LOCK with `Infinite,
/// Second-4100000000`, PROPPATCH of the Win32 times, PUT of the text,
/// which keeps them, UNLOCK), renames it (MOVE by a full URL,
/// `Overwrite: F`), lists it with its own properties and reads it.
#[test]
fn windows_maps_the_folder_and_makes_renames_and_reads_a_file() {
    let (s, dav) = start("");
    let mut c = s.connect();
    let r = windows(&mut c, "OPTIONS /dav HTTP/1.1", &[], b"");
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(
        (r.header("DAV"), r.header("MS-Author-Via")),
        (Some("1, 2"), Some("DAV"))
    );
    for (path, depth) in [("/dav", "0"), ("/dav/", "1")] {
        let line = format!("PROPFIND {path} HTTP/1.1");
        let depth = format!("Depth: {depth}");
        let r = windows(&mut c, &line, &[&depth, "Content-Length: 0"], b"");
        assert_eq!(r.status, 207, "{path}: {}", r.head);
        let t = text(&r);
        assert!(
            t.contains("<D:href>/dav/</D:href>") && t.contains("<D:collection/>"),
            "{t}"
        );
    }
    let name = "/dav/New%20Text%20Document.txt";
    let r = windows(
        &mut c,
        &format!("PUT {name} HTTP/1.1"),
        &["Content-Length: 0"],
        b"",
    );
    assert_eq!(r.status, 201, "{}", r.head);
    let lockinfo = "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:lockinfo xmlns:D=\"DAV:\">\
<D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>\
<D:href>DESKTOP-1\\user</D:href></D:owner></D:lockinfo>";
    let length = format!("Content-Length: {}", lockinfo.len());
    let extra = [
        "Cache-Control: no-cache",
        "Pragma: no-cache",
        "Content-Type: text/xml; charset=\"utf-8\"",
        "Timeout: Infinite, Second-4100000000",
        &length,
    ];
    let r = windows(
        &mut c,
        &format!("LOCK {name} HTTP/1.1"),
        &extra,
        lockinfo.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.head);
    let t = text(&r);
    // (Bounded at a day; Windows refreshes before it runs out.)
    assert!(t.contains("<D:timeout>Second-86400</D:timeout>"), "{t}");
    assert!(t.contains("DESKTOP-1\\user"), "{t}");
    let token = r.header("Lock-Token").unwrap().to_string();
    let cond = format!("If: ({token})");
    let date = "Mon, 30 Nov 2026 00:21:00 GMT";
    let update = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propertyupdate xmlns:D=\"DAV:\" \
xmlns:Z=\"urn:schemas-microsoft-com:\"><D:set><D:prop><Z:Win32CreationTime>{date}</Z:Win32CreationTime>\
<Z:Win32LastAccessTime>{date}</Z:Win32LastAccessTime><Z:Win32LastModifiedTime>{date}\
</Z:Win32LastModifiedTime><Z:Win32FileAttributes>00000020</Z:Win32FileAttributes></D:prop>\
</D:set></D:propertyupdate>"
    );
    let length = format!("Content-Length: {}", update.len());
    let extra = [
        "Cache-Control: no-cache",
        "Pragma: no-cache",
        "Content-Type: text/xml; charset=\"utf-8\"",
        &cond,
        &length,
    ];
    let line = format!("PROPPATCH {name} HTTP/1.1");
    let r = windows(&mut c, &line, &extra, update.as_bytes());
    let xattrs = match r.status {
        507 => {
            skip("no user extended attributes here: Windows' PROPPATCH is 507 (the rest goes on)");
            false
        }
        status => {
            assert_eq!(status, 207, "{}", r.head);
            let t = text(&r);
            assert_eq!(t.matches("HTTP/1.1 200 OK").count(), 1, "{t}");
            assert!(!t.contains("HTTP/1.1 4"), "{t}");
            true
        }
    };
    let body = b"Notes from Windows\r\n";
    let length = format!("Content-Length: {}", body.len());
    let r = windows(
        &mut c,
        &format!("PUT {name} HTTP/1.1"),
        &[&cond, &length],
        body,
    );
    assert_eq!(r.status, 204, "{}", r.head);
    let held = format!("Lock-Token: {token}");
    let r = windows(&mut c, &format!("UNLOCK {name} HTTP/1.1"), &[&held], b"");
    assert_eq!(r.status, 204, "{}", r.head);
    let extra = [
        "Destination: http://localhost/dav/notes.txt",
        "Overwrite: F",
        "Content-Length: 0",
    ];
    let r = windows(&mut c, &format!("MOVE {name} HTTP/1.1"), &extra, b"");
    assert_eq!(r.status, 201, "{}", r.head);
    let length = format!("Content-Length: {}", WINDOWS_PROPS.len());
    let extra = ["Depth: 1", &length];
    let r = windows(
        &mut c,
        "PROPFIND /dav/ HTTP/1.1",
        &extra,
        WINDOWS_PROPS.as_bytes(),
    );
    assert_eq!(r.status, 207);
    let t = text(&r);
    assert!(t.contains("<D:href>/dav/notes.txt</D:href>"), "{t}");
    assert!(
        t.contains("<D:getcontentlength>20</D:getcontentlength>"),
        "{t}"
    );
    if xattrs {
        // (The PUT of the text kept what PROPPATCH set.)
        assert!(t.contains(&format!(">{date}</")), "{t}");
        assert!(t.contains(">00000020</"), "{t}");
    }
    let r = windows(&mut c, "GET /dav/notes.txt HTTP/1.1", &[], b"");
    assert_eq!((r.status, &r.body[..]), (200, &body[..]));
    assert_eq!(fs::read(dav.join("notes.txt")).unwrap(), body);
    assert!(!dav.join("New Text Document.txt").exists());
}

/// Unmounts `path` when dropped (the test's end, or its failure).
struct Mounted<'a>(&'a Path);

impl Drop for Mounted<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

/// davfs2 (mount.davfs, through FUSE) mounts the folder and the shell's
/// file commands work in it: what they did is in the tree once it is
/// unmounted (davfs2 writes back then). Needs root, `/dev/fuse` and
/// davfs2; says loudly that it skipped otherwise.
#[test]
fn davfs2_mounts_and_writes_through_fuse() {
    if !super::webdav_clients::have("mount.davfs") {
        return;
    }
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        skip("davfs2 needs root and /dev/fuse to mount");
        return;
    }
    let (s, dav) = start("");
    fs::write(dav.join("hello.txt"), b"hello\n").unwrap();
    fs::create_dir(dav.join("docs")).unwrap();
    let base = dav.parent().unwrap();
    let mnt = base.join("mnt");
    fs::create_dir(&mnt).unwrap();
    let url = format!("http://{}/dav/", s.addr());
    let secrets = base.join("secrets");
    fs::write(&secrets, format!("{url} anonymous none\n")).unwrap();
    let conf = base.join("davfs2.conf");
    // (`buf_size 64`: davfs2 1.6's directory reads fail with EINVAL on
    // Linux 6.16 and later with its default 16 KiB buffer.)
    fs::write(
        &conf,
        format!("secrets {}\nbuf_size 64\nuse_locks 1\n", secrets.display()),
    )
    .unwrap();
    fs::set_permissions(
        &secrets,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let out = Command::new("mount.davfs")
        .arg("-o")
        .arg(format!("conf={}", conf.display()))
        .arg(&url)
        .arg(&mnt)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mount.davfs");
    if !out.status.success() {
        skip(&format!(
            "mount.davfs could not mount here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return;
    }
    let mounted = Mounted(&mnt);
    let mut names: Vec<String> = fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lost+found")
        .collect();
    names.sort();
    assert_eq!(names, ["docs", "hello.txt"]);
    assert_eq!(fs::read(mnt.join("hello.txt")).unwrap(), b"hello\n");
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
    fs::write(mnt.join("docs/big.bin"), &big).unwrap();
    fs::write(mnt.join("new.txt"), b"written through davfs2\n").unwrap();
    fs::create_dir(mnt.join("sub")).unwrap();
    fs::copy(mnt.join("hello.txt"), mnt.join("sub/copy.txt")).unwrap();
    fs::rename(mnt.join("new.txt"), mnt.join("sub/moved.txt")).unwrap();
    fs::remove_file(mnt.join("hello.txt")).unwrap();
    drop(mounted);
    let mut tree = Vec::new();
    for rel in ["docs/big.bin", "sub/copy.txt", "sub/moved.txt"] {
        tree.push((rel, fs::read(dav.join(rel)).unwrap()));
    }
    assert_eq!(tree[0].1, big);
    assert_eq!(tree[1].1, b"hello\n");
    assert_eq!(tree[2].1, b"written through davfs2\n");
    assert!(!dav.join("hello.txt").exists() && !dav.join("new.txt").exists());
}
