//! Nothing outside the document root, ever: traversal, encodings,
//! symlinks, dotfiles, special files.

use crate::common;

use common::*;
use std::os::unix::fs::symlink;

const SECRET: &[u8] = b"TOP-SECRET-OUTSIDE-THE-ROOT\n";

/// A root with a secret file and directory next to it (outside).
fn builder() -> Builder {
    let mut b = Builder::new();
    write_file(&b.base().join("secret.txt"), SECRET);
    write_file(&b.base().join("outside/inner.txt"), SECRET);
    b.file("pub.txt", b"public");
    b.file("a/b.txt", b"in a");
    b.file("index.html", b"<p>index</p>");
    b
}

fn assert_no_secret(r: &Response, what: &str) {
    assert!(
        find(&r.raw, b"TOP-SECRET").is_none(),
        "{what}: secret leaked: {:?}",
        String::from_utf8_lossy(&r.raw)
    );
    assert_ne!(r.status, 200, "{what}");
}

/// Sends a raw request target and returns the response.
fn raw_get(s: &Server, target: &[u8]) -> Response {
    let mut req = b"GET ".to_vec();
    req.extend_from_slice(target);
    req.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    s.request(&req)
}

#[test]
fn traversal_attempts_never_leave_the_root() {
    let s = builder().start();
    let targets: &[&[u8]] = &[
        b"/../secret.txt",
        b"/../../../../../../secret.txt",
        b"/a/../../secret.txt",
        b"/%2e%2e/secret.txt",
        b"/%2E%2E/secret.txt",
        b"/%2E%2E%2Fsecret.txt",
        b"/a/..%2f..%2fsecret.txt",
        b"/a/%2e%2e%2f%2e%2e%2fsecret.txt",
        b"/.%2e/secret.txt",
        b"/%2e./secret.txt",
        b"/..%5csecret.txt",
        b"/..\\secret.txt",
        b"/a/..\\..\\secret.txt",
        b"/a\\..\\..\\secret.txt",
        b"/%252e%252e/secret.txt",
        b"/../outside/inner.txt",
        b"/%2e%2e/outside/inner.txt",
        b"//../secret.txt",
        b"/./../secret.txt",
        b"/a/./../.././secret.txt",
        b"http://localhost/../secret.txt",
        b"http://localhost/%2e%2e/secret.txt",
        b"../secret.txt",
        b"/..;/secret.txt",
    ];
    for t in targets {
        let r = raw_get(&s, t);
        assert_no_secret(&r, &String::from_utf8_lossy(t));
    }
}

#[test]
fn traversal_exact_statuses() {
    let s = builder().start();
    // Dot-segments that climb above the root: refused (400) or clamped at
    // the root (then /secret.txt inside the root does not exist: 404).
    for t in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/a/..%2f..%2fsecret.txt",
    ] {
        let r = raw_get(&s, t.as_bytes());
        match r.status {
            400 => assert_error(&r, 400, "Bad Request", "", Conn::Close),
            _ => assert_error(&r, 404, "Not Found", "", Conn::Close),
        }
    }
    // Backslash is an ordinary byte, a double-encoded dot a literal name.
    for t in [
        "/a\\..\\pub.txt",
        "/a%5c..%5cpub.txt",
        "/%252e%252e/secret.txt",
        "/%252e%252e%252fsecret.txt",
    ] {
        let r = raw_get(&s, t.as_bytes());
        assert_error(&r, 404, "Not Found", "", Conn::Close);
    }
    // A name starting with ".." and a backslash is a dotfile name: refused
    // as one (403 by default), or absent (404).
    let r = raw_get(&s, b"/..\\..\\secret.txt");
    match r.status {
        403 => assert_error(&r, 403, "Forbidden", "", Conn::Close),
        _ => assert_error(&r, 404, "Not Found", "", Conn::Close),
    }
    // An encoded NUL is refused.
    for t in ["/pub.txt%00", "/pub.txt%00.html", "/%00"] {
        let r = raw_get(&s, t.as_bytes());
        assert_error(&r, 400, "Bad Request", "", Conn::Close);
    }
}

#[test]
fn dot_segments_inside_the_root_resolve() {
    let s = builder().start();
    for t in [
        "/a/../pub.txt",
        "/a/%2e%2e/pub.txt",
        "/./pub.txt",
        "/a/./b.txt",
    ] {
        let r = raw_get(&s, t.as_bytes());
        assert_eq!(r.status, 200, "{t}");
    }
    assert_eq!(raw_get(&s, b"/a/./b.txt").body, b"in a");
    assert_eq!(raw_get(&s, b"/a/../pub.txt").body, b"public");
}

#[test]
fn absolute_form_is_the_path() {
    let s = builder().start();
    let r = raw_get(&s, b"http://localhost/pub.txt");
    assert_file(&r, b"public", "text/plain; charset=utf-8", "", Conn::Close);
    // The authority names no file system place.
    let r = raw_get(&s, b"http://secret.txt/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"<p>index</p>");
}

#[test]
fn symlinks_out_of_the_root_are_refused() {
    let b = builder();
    let root = b.root().to_path_buf();
    symlink(b.base().join("secret.txt"), root.join("abs_link.txt")).expect("symlink");
    symlink("../secret.txt", root.join("rel_link.txt")).expect("symlink");
    symlink(b.base().join("outside"), root.join("outdir")).expect("symlink");
    symlink("/etc/passwd", root.join("passwd")).expect("symlink");
    symlink("/etc", root.join("etc")).expect("symlink");
    symlink("/", root.join("sysroot")).expect("symlink");
    let s = b.start();
    for t in [
        "/abs_link.txt",
        "/rel_link.txt",
        "/outdir/inner.txt",
        "/passwd",
        "/etc/passwd",
        "/sysroot/etc/passwd",
    ] {
        let r = raw_get(&s, t.as_bytes());
        assert_error(&r, 403, "Forbidden", "", Conn::Close);
        assert!(find(&r.raw, b"root:").is_none(), "{t}: passwd leaked");
        assert_no_secret(&r, t);
    }
    // Directory URLs through an outside symlink: refused, not redirected
    // (a redirect would confirm that the outside directory exists).
    for t in ["/outdir", "/outdir/", "/etc/", "/sysroot/"] {
        let r = raw_get(&s, t.as_bytes());
        assert_eq!(r.status, 403, "{t}");
    }
}

#[test]
fn relative_symlinks_within_the_root_are_served() {
    let b = builder();
    let root = b.root().to_path_buf();
    symlink("pub.txt", root.join("rel_inside.txt")).expect("symlink");
    symlink("a", root.join("alias")).expect("symlink");
    symlink("../pub.txt", root.join("a/up.txt")).expect("symlink");
    let s = b.start();
    for t in ["/rel_inside.txt", "/a/up.txt"] {
        let r = raw_get(&s, t.as_bytes());
        assert_file(&r, b"public", "text/plain; charset=utf-8", "", Conn::Close);
    }
    let r = raw_get(&s, b"/alias/b.txt");
    assert_file(&r, b"in a", "text/plain; charset=utf-8", "", Conn::Close);
}

#[test]
fn absolute_symlink_to_a_file_inside_the_root_is_served() {
    let b = builder();
    let root = b.root().to_path_buf();
    symlink(root.join("pub.txt"), root.join("abs_inside.txt")).expect("symlink");
    let s = b.start();
    let r = raw_get(&s, b"/abs_inside.txt");
    assert_file(&r, b"public", "text/plain; charset=utf-8", "", Conn::Close);
}

fn dot_builder(cfg: Option<&str>) -> Server {
    let mut b = builder();
    b.file(".git/config", b"[core] secret");
    b.file("a/.htpasswd", b"user:hash");
    b.file(".well-known/x", b"well known");
    b.file(".env", b"KEY=1");
    // (vfat's short alias of a name brisk keeps: refused as one.)
    b.file("BRISK-~1", b"alias");
    if let Some(c) = cfg {
        b.config(c);
    }
    b.start()
}

#[test]
fn dotfiles_denied_by_default() {
    let s = dot_builder(None);
    for t in [
        "/.git/config",
        "/.git/",
        "/.git",
        "/a/.htpasswd",
        "/.env",
        "/%2egit/config",
        "/a/%2Ehtpasswd",
        "/a/../.env",
        "/.git/missing",
        "/BRISK-~1",
    ] {
        let r = raw_get(&s, t.as_bytes());
        assert_error(&r, 403, "Forbidden", "", Conn::Close);
    }
    let r = raw_get(&s, b"/.well-known/x");
    assert_file(
        &r,
        b"well known",
        "application/octet-stream",
        "",
        Conn::Close,
    );
}

#[test]
fn dotfiles_ignored() {
    let s = dot_builder(Some("[static]\ndotfiles = \"ignore\"\n"));
    for t in ["/.git/config", "/a/.htpasswd", "/.env", "/%2egit/config"] {
        let r = raw_get(&s, t.as_bytes());
        assert_error(&r, 404, "Not Found", "", Conn::Close);
    }
    assert_eq!(raw_get(&s, b"/.well-known/x").body, b"well known");
}

#[test]
fn dotfiles_allowed() {
    let s = dot_builder(Some("[static]\ndotfiles = \"allow\"\n"));
    let r = raw_get(&s, b"/.git/config");
    assert_file(
        &r,
        b"[core] secret",
        "application/octet-stream",
        "",
        Conn::Close,
    );
    assert_eq!(raw_get(&s, b"/a/.htpasswd").body, b"user:hash");
    assert_eq!(raw_get(&s, b"/.env").body, b"KEY=1");
    // Allowing dotfiles does not allow leaving the root.
    assert_no_secret(&raw_get(&s, b"/../secret.txt"), "/../secret.txt");
    // With the dotfile rule out of the way, a backslash name is just absent.
    assert_error(
        &raw_get(&s, b"/..\\..\\secret.txt"),
        404,
        "Not Found",
        "",
        Conn::Close,
    );
}

#[test]
fn fifo_is_refused_without_hanging() {
    let b = builder();
    let fifo = b.root().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8 path")).expect("cstring");
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo");
    let s = b.start();
    let r = raw_get(&s, b"/fifo");
    assert_error(&r, 403, "Forbidden", "", Conn::Close);
    let mut c = s.connect();
    c.send(b"HEAD /fifo HTTP/1.1\r\nHost: x\r\n\r\nGET /fifo HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n");
    assert_eq!(c.head_response().status, 403);
    assert_eq!(c.response().status, 403);
    // The single worker is still serving.
    assert_eq!(raw_get(&s, b"/pub.txt").body, b"public");
}

#[test]
fn long_and_odd_paths_are_answered() {
    let s = builder().start();
    // A name longer than NAME_MAX, deep nesting, and a directory used as a
    // file: clear answers, never a crash.
    let long = format!("/{}", "n".repeat(300));
    assert_eq!(raw_get(&s, long.as_bytes()).status, 404);
    let deep = "/x".repeat(1000);
    assert_eq!(raw_get(&s, deep.as_bytes()).status, 404);
    assert_eq!(raw_get(&s, b"/pub.txt/").status, 404);
    assert_eq!(raw_get(&s, b"/pub.txt/more").status, 404);
    assert_eq!(raw_get(&s, b"/pub.txt").body, b"public");
}

#[test]
fn symlink_loop_is_refused() {
    let b = builder();
    let root = b.root().to_path_buf();
    symlink("loop", root.join("loop")).expect("symlink");
    symlink("pong", root.join("ping")).expect("symlink");
    symlink("ping", root.join("pong")).expect("symlink");
    let s = b.start();
    for t in ["/loop", "/ping", "/loop/x"] {
        let r = raw_get(&s, t.as_bytes());
        assert!(r.status == 403 || r.status == 404, "{t}: {}", r.status);
    }
    assert_eq!(raw_get(&s, b"/pub.txt").body, b"public");
}

/// `scripts/old-kernel.c` compiled into `dir`: a program that runs
/// another as on Linux 4.19; `None` (said loudly) without a C compiler.
fn old_kernel_shim(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/old-kernel.c");
    let out = dir.join("old-kernel");
    cc(&src, &out, "the seccomp profile that refuses openat2").then_some(out)
}

/// A container's or service manager's seccomp profile written before
/// `openat2` refuses it with EPERM, not ENOSYS (Docker's default before
/// 20.10): brisk walks paths itself there, as on a kernel without the
/// call, symlinks beneath the root followed and none out. Before, every
/// lookup was refused (403, "Operation not permitted").
#[test]
fn where_a_seccomp_profile_refuses_openat2_with_eperm_files_are_served() {
    let mut b = builder();
    symlink("../pub.txt", b.root().join("a/link.txt")).unwrap();
    symlink("../secret.txt", b.root().join("out.txt")).unwrap();
    let Some(shim) = old_kernel_shim(b.base()) else {
        return;
    };
    b.through(&shim, &["--eperm"]);
    let s = b.start();
    assert_eq!(s.get("/pub.txt").body, b"public");
    assert_eq!(s.get("/a/b.txt").body, b"in a");
    assert_eq!(s.get("/a/link.txt").body, b"public");
    let r = s.get("/out.txt");
    assert_no_secret(&r, "a symlink out of the root");
    assert_eq!(r.status, 403);
    let r = raw_get(&s, b"/a/../../secret.txt");
    assert_no_secret(&r, "dot-dot");
    assert!(!s.stderr().contains("not permitted"), "{}", s.stderr());
}

/// Under such a profile glibc's realpath refuses a path ending in `/.`
/// (`root = "."` in a configuration file): it asks `faccessat2` and falls
/// back only on ENOSYS. brisk resolves the path itself there; before, the
/// start stopped ("cannot use /srv/www/. as the document root: Operation
/// not permitted").
#[cfg(feature = "webdav")]
#[test]
fn where_a_seccomp_profile_refuses_faccessat2_a_tree_named_with_a_dot_is_found() {
    let mut b = builder();
    let Some(shim) = old_kernel_shim(b.base()) else {
        return;
    };
    b.config("[[webdav]]\npath = \"/dav/\"\nroot = \"root/a/.\"\n");
    b.through(&shim, &["--eperm"]);
    let s = b.start();
    assert_eq!(s.get("/dav/b.txt").body, b"in a");
}

/// `--check-config` says how paths are confined: by the kernel, or,
/// where `openat2` is missing or refused, by brisk's own walk. (Its
/// report is the feature `ops`'s.)
#[cfg(feature = "ops")]
#[test]
fn check_config_says_who_confines_paths() {
    let b = builder();
    let Some(shim) = old_kernel_shim(b.base()) else {
        return;
    };
    let root = b.root().display().to_string();
    for through in [&["--eperm"][..], &[]] {
        let out = std::process::Command::new(&shim)
            .args(through)
            .arg(brisk_exe())
            .args(root_args())
            .args(["--root", &root, "--check-config"])
            .output()
            .expect("run brisk through the shim");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("\n  paths: walked by brisk one name at a time beneath each root (openat2 is missing: Linux before 5.6, or a seccomp profile that refuses it)\n"),
            "{text}"
        );
    }
    let (status, text, _) = run_brisk(&["--root", &root, "--check-config"]);
    assert!(status.success());
    assert!(text.contains("\n  paths: "), "{text}");
}
