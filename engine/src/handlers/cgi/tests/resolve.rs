use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::rule;
use crate::config::{CgiRule, CgiTarget};
use crate::handlers::cgi::{resolve, Resolved, Resolver, Script};

/// A temporary tree:
///
/// ```text
/// tool                     program (0755)
/// www/                     document root
///   index.html data.txt app.pl (0644) exec.cgi (0755) noexec.cgi (0644)
///   sub/deep.pl  dir.cgi/inner.txt  fifo.cgi  out.pl -> ../outside/evil.pl
/// cgi-bin/
///   script nph-raw sub/inner (0755)  plain.txt (0644)  fifo
///   escape -> ../outside/evil   inlink -> script
/// outside/evil outside/evil.pl (0755)
/// ```
struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Tree {
    fn new() -> Tree {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!("brisk-cgi-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let t = Tree(base);
        for d in ["www/sub", "www/dir.cgi", "cgi-bin/sub", "outside"] {
            std::fs::create_dir_all(t.0.join(d)).unwrap();
        }
        for (f, mode) in [
            ("tool", 0o755),
            ("www/index.html", 0o644),
            ("www/data.txt", 0o644),
            ("www/app.pl", 0o644),
            ("www/exec.cgi", 0o755),
            ("www/noexec.cgi", 0o644),
            ("www/sub/deep.pl", 0o644),
            ("www/dir.cgi/inner.txt", 0o644),
            ("cgi-bin/script", 0o755),
            ("cgi-bin/nph-raw", 0o755),
            ("cgi-bin/sub/inner", 0o755),
            ("cgi-bin/plain.txt", 0o644),
            ("outside/evil", 0o755),
            ("outside/evil.pl", 0o755),
        ] {
            let p = t.0.join(f);
            std::fs::write(&p, b"#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        symlink("../outside/evil", t.0.join("cgi-bin/escape")).unwrap();
        symlink("script", t.0.join("cgi-bin/inlink")).unwrap();
        symlink("../outside/evil.pl", t.0.join("www/out.pl")).unwrap();
        for fifo in ["www/fifo.cgi", "cgi-bin/fifo"] {
            crate::sys::fs::make_fifo(&t.0.join(fifo), 0o755).unwrap();
        }
        t
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn root(&self) -> PathBuf {
        self.p("www")
    }

    fn rules(&self) -> Vec<CgiRule> {
        vec![
            rule(CgiTarget::Program {
                url: "/tool".into(),
                program: self.p("tool"),
            }),
            rule(CgiTarget::Dir {
                url: "/cgi-bin/".into(),
                dir: self.p("cgi-bin").canonicalize().unwrap(),
            }),
            CgiRule {
                interpreter: Some(PathBuf::from("/usr/bin/perl")),
                ..rule(CgiTarget::Pattern("*.pl".into()))
            },
            rule(CgiTarget::Pattern("*.cgi".into())),
        ]
    }
}

/// Resolves with a held [`Resolver`] and with the one-shot function, which
/// must agree.
fn both(rules: &[CgiRule], root: &Path, path: &str) -> Resolved {
    let held = Resolver::new(rules, root).unwrap().resolve(path.as_bytes());
    let once = resolve(rules, root, path.as_bytes());
    assert_eq!(held, once, "{path}");
    held
}

fn cgi(t: &Tree, path: &str) -> Script {
    match both(&t.rules(), &t.root(), path) {
        Resolved::Cgi(s) => s,
        other => panic!("{path}: {other:?}"),
    }
}

fn denied(t: &Tree, path: &str) -> u16 {
    match both(&t.rules(), &t.root(), path) {
        Resolved::Denied(d) => d.status.0,
        other => panic!("{path}: {other:?}"),
    }
}

fn not_cgi(t: &Tree, path: &str) {
    assert_eq!(
        both(&t.rules(), &t.root(), path),
        Resolved::NotCgi,
        "{path}"
    );
}

#[test]
fn program_rule_takes_the_whole_prefix() {
    let t = Tree::new();
    let s = cgi(&t, "/tool");
    assert_eq!(
        s,
        Script {
            rule: 0,
            program: t.p("tool"),
            args: vec![],
            script_filename: t.p("tool"),
            script_name: b"/tool".to_vec(),
            path_info: b"".to_vec(),
            cwd: t.0.clone(),
            nph: false,
        }
    );
    assert_eq!(cgi(&t, "/tool/").path_info, b"/");
    let s = cgi(&t, "/tool/x/y");
    assert_eq!(
        (&s.script_name[..], &s.path_info[..]),
        (&b"/tool"[..], &b"/x/y"[..])
    );
    not_cgi(&t, "/toolbox");
    not_cgi(&t, "/index.html");
}

#[test]
fn program_at_slash_with_interpreter() {
    let t = Tree::new();
    let rules = [CgiRule {
        interpreter: Some(PathBuf::from("/bin/sh")),
        ..rule(CgiTarget::Program {
            url: "/".into(),
            program: t.p("www/app.pl"),
        })
    }];
    let Resolved::Cgi(s) = both(&rules, &t.root(), "/any/thing") else {
        panic!()
    };
    assert_eq!(s.program, PathBuf::from("/bin/sh"));
    assert_eq!(s.args, [t.p("www/app.pl")]);
    assert_eq!(s.script_name, b"");
    assert_eq!(s.path_info, b"/any/thing");
}

#[test]
fn dir_rule_finds_the_first_file_and_path_info() {
    let t = Tree::new();
    let cgi_bin = t.p("cgi-bin").canonicalize().unwrap();
    let s = cgi(&t, "/cgi-bin/script");
    assert_eq!(
        s,
        Script {
            rule: 1,
            program: cgi_bin.join("script"),
            args: vec![],
            script_filename: cgi_bin.join("script"),
            script_name: b"/cgi-bin/script".to_vec(),
            path_info: b"".to_vec(),
            cwd: cgi_bin.clone(),
            nph: false,
        }
    );
    let s = cgi(&t, "/cgi-bin/script/a/b c/d");
    assert_eq!(s.script_name, b"/cgi-bin/script");
    assert_eq!(s.path_info, b"/a/b c/d");
    assert_eq!(cgi(&t, "/cgi-bin/script/").path_info, b"/");
    let s = cgi(&t, "/cgi-bin/sub/inner/x");
    assert_eq!(s.script_filename, cgi_bin.join("sub/inner"));
    assert_eq!(s.script_name, b"/cgi-bin/sub/inner");
    assert_eq!(s.path_info, b"/x");
    assert_eq!(s.cwd, cgi_bin.join("sub"));
    assert!(cgi(&t, "/cgi-bin/nph-raw/p").nph);
    // A symlink that stays inside the directory is fine.
    assert_eq!(cgi(&t, "/cgi-bin/inlink").script_name, b"/cgi-bin/inlink");
}

#[test]
fn dir_rule_refuses_everything_else() {
    let t = Tree::new();
    // Directories: no listing, no index.
    for p in ["/cgi-bin", "/cgi-bin/", "/cgi-bin/sub", "/cgi-bin/sub/"] {
        assert_eq!(denied(&t, p), 403, "{p}");
    }
    assert_eq!(denied(&t, "/cgi-bin/plain.txt"), 403);
    assert_eq!(denied(&t, "/cgi-bin/plain.txt/x"), 403);
    assert_eq!(denied(&t, "/cgi-bin/fifo"), 403);
    assert_eq!(denied(&t, "/cgi-bin/escape"), 403);
    assert_eq!(denied(&t, "/cgi-bin/missing"), 404);
    assert_eq!(denied(&t, "/cgi-bin/missing/x"), 404);
    assert_eq!(denied(&t, "/cgi-bin/sub/missing"), 404);
    // Even names a pattern rule would match.
    assert_eq!(denied(&t, "/cgi-bin/x.pl"), 404);
    // Not under the prefix.
    not_cgi(&t, "/cgi-binx/script");
}

#[test]
fn dir_rule_with_interpreter_needs_only_read() {
    let t = Tree::new();
    let cgi_bin = t.p("cgi-bin").canonicalize().unwrap();
    let rules = [CgiRule {
        interpreter: Some(PathBuf::from("/bin/sh")),
        ..rule(CgiTarget::Dir {
            url: "/c".into(),
            dir: cgi_bin.clone(),
        })
    }];
    let Resolved::Cgi(s) = both(&rules, &t.root(), "/c/plain.txt/more") else {
        panic!()
    };
    assert_eq!(s.program, PathBuf::from("/bin/sh"));
    assert_eq!(s.args, [cgi_bin.join("plain.txt")]);
    assert_eq!(
        (&s.script_name[..], &s.path_info[..]),
        (&b"/c/plain.txt"[..], &b"/more"[..])
    );
}

#[test]
fn pattern_rule_with_interpreter() {
    let t = Tree::new();
    let root = t.root();
    let s = cgi(&t, "/app.pl");
    assert_eq!(
        s,
        Script {
            rule: 2,
            program: PathBuf::from("/usr/bin/perl"),
            args: vec![root.join("app.pl")],
            script_filename: root.join("app.pl"),
            script_name: b"/app.pl".to_vec(),
            path_info: b"".to_vec(),
            cwd: root.clone(),
            nph: false,
        }
    );
    let s = cgi(&t, "/sub/deep.pl/extra/path");
    assert_eq!(s.script_filename, root.join("sub/deep.pl"));
    assert_eq!(s.script_name, b"/sub/deep.pl");
    assert_eq!(s.path_info, b"/extra/path");
    assert_eq!(s.cwd, root.join("sub"));
}

#[test]
fn pattern_rule_without_interpreter() {
    let t = Tree::new();
    let s = cgi(&t, "/exec.cgi/p");
    assert_eq!((s.rule, &s.program), (3, &t.root().join("exec.cgi")));
    assert!(s.args.is_empty());
    assert_eq!(s.path_info, b"/p");
    // A matching file that cannot run is refused, never served.
    assert_eq!(denied(&t, "/noexec.cgi"), 403);
    assert_eq!(denied(&t, "/fifo.cgi"), 403);
    assert_eq!(denied(&t, "/out.pl"), 403);
    assert_eq!(denied(&t, "/missing.pl"), 404);
}

#[test]
fn pattern_rule_leaves_other_paths_to_static() {
    let t = Tree::new();
    for p in [
        "/",
        "/index.html",
        "/data.txt",
        "/data.txt/x.pl",
        "/dir.cgi",
        "/dir.cgi/",
        "/dir.cgi/inner.txt",
        "/missing",
        "/missingdir/x.pl",
        "/sub/",
    ] {
        not_cgi(&t, p);
    }
}

#[test]
fn no_rules_no_cgi() {
    let t = Tree::new();
    assert_eq!(both(&[], &t.root(), "/app.pl"), Resolved::NotCgi);
}
