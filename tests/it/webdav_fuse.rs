//! A `[[webdav]]` tree on a filesystem that makes no unnamed files
//! (`O_TMPFILE` fails with `EOPNOTSUPP`): exFAT, as on the USB disk of a
//! router, through its FUSE driver on a loop device, and a directory
//! seen through bindfs (FUSE too). PUT and COPY write their files under
//! a temporary name of brisk's own there (`.brisk-put.*`), which no
//! client sees and which goes when a client leaves halfway. Needs root,
//! `/dev/fuse`, litmus, and exfatprogs with exfat-fuse (and a loop
//! device) or bindfs; says loudly what it skipped.

use super::webdav::{litmus, propfind, send, transfer, LITMUS_PASSES};
use super::webdav_clients::{have, have_from};
use crate::common;

use common::*;
use std::fs;
use std::io::Write;
use std::net::TcpStream;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A FUSE mount made by a test, undone when dropped (and its loop
/// device let go).
struct Mount {
    point: PathBuf,
    device: Option<String>,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.point).status();
        if let Some(dev) = &self.device {
            let _ = Command::new("losetup").arg("-d").arg(dev).status();
        }
    }
}

/// Runs `cmd`: `Err` with what it printed when it fails.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
        false => Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// A 64 MiB exFAT image in `place`, on a loop device, mounted at `point`
/// by exfat-fuse, writable by all.
fn exfat(place: &Path, point: &Path) -> Result<Mount, String> {
    let image = place.join("exfat.img");
    fs::File::create(&image)
        .and_then(|f| f.set_len(64 << 20))
        .map_err(|e| e.to_string())?;
    run(Command::new("mkfs.exfat").arg(&image))?;
    let device = run(Command::new("losetup").args(["-f", "--show"]).arg(&image))?;
    let mut mount = Mount {
        point: point.to_path_buf(),
        device: Some(device.clone()),
    };
    if let Err(e) = run(Command::new("mount.exfat-fuse")
        .args(["-o", "umask=0"])
        .arg(&device)
        .arg(point))
    {
        // (Nothing mounted: only the loop device to let go.)
        mount.point = PathBuf::from("/nonexistent");
        return Err(e);
    }
    Ok(mount)
}

/// `place/under` seen at `point` through bindfs.
fn bindfs(place: &Path, point: &Path) -> Result<Mount, String> {
    let under = place.join("under");
    fs::create_dir(&under).map_err(|e| e.to_string())?;
    run(Command::new("bindfs").arg(&under).arg(point))?;
    Ok(Mount {
        point: point.to_path_buf(),
        device: None,
    })
}

/// The names starting `.brisk-put.` anywhere beneath `dir`.
fn staged_names(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        if e.file_type().unwrap().is_dir() {
            found.extend(staged_names(&path));
        } else if e.file_name().to_string_lossy().starts_with(".brisk-put.") {
            found.push(path);
        }
    }
    found
}

/// Waits (at most 20 s) until `done` holds; whether it did.
fn until(mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(20);
    while !done() {
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// On the filesystem `mount` makes: no unnamed files there; litmus's
/// five suites pass in full; a PUT cut halfway is never seen (not
/// listed, not served) and leaves neither a file nor the old one
/// changed; a COPY and a PUT over a file land whole; a name the
/// filesystem cannot hold is a 4xx; nothing of brisk's staging is left.
/// `folds_case`: the filesystem matches names without regard to case.
fn serves_in_full(what: &str, mount: fn(&Path, &Path) -> Result<Mount, String>, folds_case: bool) {
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        skip(&format!("{what}: a FUSE mount needs root and /dev/fuse"));
        return;
    }
    // (Dropped last: after the server stops and the mount is undone.)
    let place = TempDir::new("fuse");
    let point = place.path.join("dav");
    fs::create_dir(&point).unwrap();
    let _mounted = match mount(&place.path, &point) {
        Ok(m) => m,
        Err(e) => {
            skip(&format!("{what} could not be mounted here: {e}"));
            return;
        }
    };
    let tmpfile = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(&point);
    assert_eq!(
        tmpfile.err().and_then(|e| e.raw_os_error()),
        Some(libc::EOPNOTSUPP),
        "{what} makes unnamed files now: this test no longer tries the other way"
    );
    fs::create_dir(point.join("sw")).unwrap();
    let (stale, fresh) = (
        point.join("sw/.brisk-put.1.0"),
        point.join("sw/.brisk-put.1.1"),
    );
    for part in [&stale, &fresh] {
        fs::write(part, b"part").unwrap();
    }
    // (Once the file is closed: a FUSE driver sets the time of a file
    // written through it again as it is released.)
    run(Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(&stale))
    .unwrap();
    let mut b = Builder::new();
    b.config(&format!(
        "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nlocks = true\nmax_upload = \"64MiB\"\n",
        point.display()
    ));
    let s = b.start();

    // (`http` last: its `expect100` leaves an upload that brisk ends when
    // it reads the closed connection, and FUSE keeps a file removed while
    // open as `.fuse_hidden*` until then: a DELETE of the collection that
    // brisk takes first answers 207, not empty, and the next suite's MKCOL
    // of it 405. Seen under load, 1 run in 5 with mounts made meanwhile.)
    let (summaries, ok, text) = litmus(&s, "basic copymove props locks http", &[]);
    let want = [0, 1, 2, 4, 3].map(|i| LITMUS_PASSES[i]);
    assert_eq!(summaries, want, "{what}: {text}");
    assert!(ok, "{what}: {text}");

    // What a crash left (before this server started): swept by the
    // first PUT into its directory once an hour old (not before: it could
    // be a living upload's).
    assert_eq!(send(&s, "PUT", "/dav/sw/x.txt", b"x").status, 201);
    assert!(!stale.exists(), "{what}: a crash's part file is left");
    assert!(
        fresh.exists(),
        "{what}: a fresh part file was taken for a leftover"
    );
    fs::remove_file(&fresh).unwrap();

    assert_eq!(send(&s, "PUT", "/dav/f.txt", b"old").status, 201);
    let mut cut = TcpStream::connect(s.addr()).unwrap();
    let size = 8 << 20;
    write!(
        cut,
        "PUT /dav/f.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: {size}\r\n\r\n"
    )
    .unwrap();
    cut.write_all(&vec![b'n'; 1 << 20]).unwrap();
    assert!(
        until(|| !staged_names(&point).is_empty()),
        "{what}: the body is not being written"
    );
    let staged = staged_names(&point);
    let staged_name = staged[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let listing = propfind(&s, "/dav/", "1", "").text();
    assert!(
        listing.contains("f.txt") && !listing.contains(".brisk-put"),
        "{listing}"
    );
    assert_eq!(
        send(&s, "GET", &format!("/dav/{staged_name}"), b"").status,
        404
    );
    assert_eq!(send(&s, "GET", "/dav/f.txt", b"").body, b"old");
    drop(cut);
    assert!(
        until(|| staged_names(&point).is_empty()),
        "{what}: left {:?}",
        staged_names(&point)
    );
    assert_eq!(fs::read(point.join("f.txt")).unwrap(), b"old");

    // Another spelling of the same name is the same file where names
    // are matched without regard to case: a MOVE changes the case, a COPY
    // onto itself is 403, and neither removes the file it names twice.
    assert_eq!(send(&s, "PUT", "/dav/case.txt", b"kept").status, 201);
    assert_eq!(point.join("CASE.TXT").exists(), folds_case, "{what}");
    if folds_case {
        let m = transfer(&s, "MOVE", "/dav/case.txt", "/dav/Case.txt", "");
        assert_eq!(m.status, 201, "{what}: {}", m.head);
        let c = transfer(&s, "COPY", "/dav/Case.txt", "/dav/CASE.txt", "");
        assert_eq!(c.status, 403, "{what}: {}", c.head);
        assert_eq!(send(&s, "MKCOL", "/dav/Dir", b"").status, 201);
        assert_eq!(send(&s, "PUT", "/dav/Dir/f", b"deep").status, 201);
        let d = transfer(&s, "MOVE", "/dav/Dir/", "/dav/dir/", "");
        assert_eq!(d.status, 201, "{what}: {}", d.head);
        let listed = |dir: &Path| {
            let mut n: Vec<String> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| ["case.txt", "dir"].contains(&n.to_lowercase().as_str()))
                .collect();
            n.sort();
            n
        };
        assert_eq!(listed(&point), ["Case.txt", "dir"], "{what}");
        assert_eq!(fs::read(point.join("Case.txt")).unwrap(), b"kept");
        assert_eq!(fs::read(point.join("dir/f")).unwrap(), b"deep");
        // The collection that holds the source, by another spelling: it
        // is not removed first (it would take the source with it).
        let up = transfer(&s, "MOVE", "/dav/dir/f", "/dav/DIR", "");
        assert_eq!(up.status, 403, "{what}: {}", up.head);
        assert_eq!(fs::read(point.join("dir/f")).unwrap(), b"deep");
        // A name exFAT cannot hold: the name's fault, said so in the log,
        // and its page is its own status's (a 409 went with a "500"
        // page).
        let r = send(&s, "PUT", "/dav/co:lon.txt", b"x");
        assert!(matches!(r.status, 400 | 409), "{what}: {}", r.head);
        let title = format!("<title>{} ", r.status);
        assert!(r.text().contains(&title), "{what}: {}", r.text());
        s.wait_stderr_line("a name this filesystem cannot hold");
    }

    let new: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(send(&s, "PUT", "/dav/f.txt", &new).status, 204);
    assert_eq!(send(&s, "MKCOL", "/dav/c", b"").status, 201);
    let copy = transfer(&s, "COPY", "/dav/f.txt", "/dav/c/g.txt", "");
    assert_eq!(copy.status, 201, "{}", copy.head);
    assert_eq!(fs::read(point.join("f.txt")).unwrap(), new);
    assert_eq!(fs::read(point.join("c/g.txt")).unwrap(), new);
    assert!(
        staged_names(&point).is_empty(),
        "{:?}",
        staged_names(&point)
    );
}

#[test]
fn exfat_through_fuse_serves_in_full() {
    if !have("litmus")
        || !have_from("mkfs.exfat", "exfatprogs")
        || !have_from("mount.exfat-fuse", "exfat-fuse")
        || !have_from("losetup", "mount")
    {
        return;
    }
    serves_in_full("exFAT (exfat-fuse on a loop device)", exfat, true);
}

#[test]
fn a_bindfs_tree_serves_in_full() {
    if !have("litmus") || !have("bindfs") {
        return;
    }
    serves_in_full("bindfs", bindfs, false);
}

/// A tree on a filesystem that finds a name whatever its case (exFAT
/// here), or with one mounted beneath it (a USB disk in a router's
/// share, plugged in before brisk starts or after): `[[auth]]`,
/// `[[access]]` and `[[rate_limit]]` match a path there in any case (and
/// count its spellings as one), so `/usb/PRIVATE/` is
/// guarded as `/usb/private/` is, a COPY's `Destination` too; outside
/// it paths are matched as spelt. Rules that run programs and could
/// reach into it, and brisk's own files beneath it, are refused, naming
/// the key; a tree that tells case apart (bindfs over this one) takes
/// them.
#[test]
fn rules_match_in_any_case_where_names_are_found_in_any_case() {
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        skip("a FUSE mount needs root and /dev/fuse");
        return;
    }
    if !have_from("mkfs.exfat", "exfatprogs")
        || !have_from("mount.exfat-fuse", "exfat-fuse")
        || !have("bindfs")
    {
        return;
    }
    // (Dropped last: after the server stops and the mounts are undone.)
    let place = TempDir::new("fold");
    let (folding, telling) = (place.path.join("exfat"), place.path.join("bind"));
    let under = place.path.join("under");
    let images = ["one", "two", "three"].map(|d| place.path.join(d));
    for d in [&folding, &telling, &under].into_iter().chain(&images) {
        fs::create_dir(d).unwrap();
    }
    let _exfat = match exfat(&images[0], &folding) {
        Ok(m) => m,
        Err(e) => {
            skip(&format!("exFAT could not be mounted here: {e}"));
            return;
        }
    };
    let _bind = match bindfs(&under, &telling) {
        Ok(m) => m,
        Err(e) => {
            skip(&format!("bindfs could not be mounted here: {e}"));
            return;
        }
    };
    for tree in [&folding, &telling] {
        fs::create_dir_all(tree.join("private")).unwrap();
        fs::write(tree.join("private/s.txt"), b"secret\n").unwrap();
    }
    fs::write(
        place.path.join("htpasswd"),
        b"a:$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/\n",
    )
    .unwrap();
    let auth = "[[auth]]\npath = \"/private/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n";
    let check = |file: &Path, text: &str| {
        fs::write(file, text).unwrap();
        run_brisk(&["--config", file.to_str().unwrap(), "--check-config"])
    };
    let outside = place.path.join("brisk.toml");
    let blind = "is on a filesystem that finds a name whatever its case (exFAT, vfat, SMB), and";
    let root = |tree: &Path, rules: &str| format!("root = \"{}\"\n{rules}", tree.display());
    // Path rules are taken; a program rule that reaches into it is not.
    let (st, _, err) = check(&outside, &root(&folding, auth));
    assert!(st.success(), "{err}");
    let php = "[[fastcgi]]\npattern = \"*.php\"\nto = \"127.0.0.1:9\"\n";
    let (st, _, err) = check(&outside, &root(&folding, php));
    assert!(
        !st.success()
            && err.contains(&format!(
                "brisk.toml:1: root: {} {blind} its [[fastcgi]] pattern *.php rule",
                folding.display()
            )),
        "{err}"
    );
    // A share at /dav/ on it: a program rule elsewhere is no matter.
    let dav = format!(
        "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n[[fastcgi]]\npath = \"/php/\"\nto = \"127.0.0.1:9\"\n",
        folding.display()
    );
    let (st, out, err) = check(&outside, &dav);
    assert!(st.success(), "{err}");
    assert!(
        out.contains("any case: /dav/ (names found whatever their case: rules match paths there in any case)"),
        "{out}"
    );
    let (st, _, err) = check(&outside, &dav.replace("/php/", "/dav/php/"));
    assert!(
        !st.success() && err.contains(&format!("webdav[1].root: {} {blind}", folding.display())),
        "{err}"
    );
    let inside = folding.join("brisk.toml");
    let (st, _, err) = check(&inside, "root = \".\"\n");
    assert!(
        !st.success() && err.contains("(the configuration file) lies beneath it"),
        "{err}"
    );
    fs::remove_file(&inside).unwrap();
    let (st, _, err) = check(&outside, &root(&telling, php));
    assert!(st.success(), "{err}");

    // Served: a share whose `usb` is the exFAT disk, mounted before the
    // start, and whose `later` gets one after it.
    let mut b = Builder::new();
    b.dir("share/later").file("share/pub/p.txt", b"public\n");
    let share = b.root().join("share");
    let usb = share.join("usb");
    fs::create_dir(&usb).unwrap();
    let _usb = match exfat(&images[1], &usb) {
        Ok(m) => m,
        Err(e) => panic!("a second exFAT disk: {e}"),
    };
    fs::create_dir(usb.join("private")).unwrap();
    fs::write(usb.join("private/s.txt"), b"secret\n").unwrap();
    fs::write(
        b.base().join("htpasswd"),
        fs::read(place.path.join("htpasswd")).unwrap(),
    )
    .unwrap();
    let guard = |prefix: &str| {
        format!(
            "[[auth]]\npath = \"{prefix}private/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n\
             [[access]]\npath = \"{prefix}staff/\"\nallow = [\"192.0.2.0/24\"]\n"
        )
    };
    let rate = "[[rate_limit]]\npath = \"/dav/usb/r/\"\nrate = \"1/m\"\nkey = \"address+path\"\n";
    b.config(&format!(
        "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nlocks = true\n{}{}{}{rate}\
         [[webdav]]\npath = \"/b/\"\nroot = \"{}\"\n{}",
        share.display(),
        guard("/dav/usb/"),
        guard("/dav/later/"),
        guard("/dav/pub/"),
        telling.display(),
        guard("/b/"),
    ));
    let server = b.start();
    let status = |method: &str, path: &str, extra: &str| {
        let raw =
            format!("{method} {path} HTTP/1.1\r\nHost: h\r\n{extra}Content-Length: 0\r\n\r\n");
        server.request(raw.as_bytes()).status
    };
    let login = format!("Authorization: {}\r\n", basic_auth("a", "correct horse"));
    for spelt in [
        "/dav/usb/private/s.txt",
        "/dav/usb/PRIVATE/s.txt",
        "/dav/usb/Private/x",
    ] {
        assert_eq!(status("GET", spelt, ""), 401, "{spelt}");
    }
    assert_eq!(status("GET", "/dav/usb/PRIVATE/s.txt", &login), 200);
    assert_eq!(status("GET", "/dav/usb/STAFF/x", ""), 403);
    // One bucket a path, however it is spelt.
    assert_eq!(status("GET", "/dav/usb/r/x", ""), 404);
    assert_eq!(status("GET", "/dav/usb/R/X", ""), 429);
    let to = |path: &str| format!("Destination: http://h{path}\r\n");
    assert_eq!(
        status("COPY", "/dav/pub/p.txt", &to("/dav/usb/PRIVATE/p.txt")),
        401
    );
    assert!(!usb.join("private/p.txt").exists());
    // A lock holds for every spelling of what it locks.
    let info = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/>\
                </D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>";
    let locked = server.request(
        format!(
            "LOCK /dav/usb/l.txt HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n{info}",
            info.len()
        )
        .as_bytes(),
    );
    assert_eq!(locked.status, 201, "{}", locked.head);
    let token = locked
        .header("Lock-Token")
        .expect("a Lock-Token")
        .to_string();
    for spelt in ["/dav/usb/L.TXT", "/dav/usb/l.txt"] {
        assert_eq!(status("PUT", spelt, ""), 423, "{spelt}");
    }
    assert_eq!(
        status("PUT", "/dav/usb/L.txt", &format!("If: ({token})\r\n")),
        204
    );
    let unlock = format!("Lock-Token: {token}\r\n");
    assert_eq!(status("UNLOCK", "/dav/usb/l.TXT", &unlock), 204);
    assert_eq!(status("PUT", "/dav/usb/l.txt", ""), 204);
    // Outside the disk, as spelt: no such directory, no such rule.
    assert_eq!(status("GET", "/dav/PUB/private/x", ""), 404);
    assert_eq!(status("GET", "/dav/pub/PRIVATE/x", ""), 404);
    // A disk plugged in while brisk serves; meanwhile the tree that tells
    // case apart was emptied, which leaves nothing to tell it by: it is
    // still taken as it was found.
    assert_eq!(status("GET", "/b/PRIVATE/s.txt", ""), 404);
    fs::remove_dir_all(telling.join("private")).unwrap();
    // The file on disk now holds an error (an edit waiting for a restart):
    // the running configuration is what is served again, not the file.
    let cfg = server.base.path.join("brisk.toml");
    let text = fs::read_to_string(&cfg).unwrap();
    fs::write(&cfg, format!("{text}\nnot toml [\n")).unwrap();
    let later = share.join("later");
    let _later = match exfat(&images[2], &later) {
        Ok(m) => m,
        Err(e) => panic!("a later exFAT disk: {e}"),
    };
    server.wait_stderr_line(
        "was mounted (or one unmounted) beneath a tree brisk serves: serving the configuration again",
    );
    fs::create_dir(later.join("private")).unwrap();
    fs::write(later.join("private/s.txt"), b"secret\n").unwrap();
    assert_eq!(status("GET", "/dav/later/PRIVATE/s.txt", ""), 401);
    assert_eq!(status("GET", "/dav/later/private/s.txt", &login), 200);
    assert_eq!(status("GET", "/b/PRIVATE/s.txt", ""), 404);
    assert_eq!(status("GET", "/b/private/s.txt", ""), 401);
}
