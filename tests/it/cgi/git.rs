//! `git push` over HTTP through git-http-backend, with the sandbox on:
//! the rule's `writable` directory is the only place its programs may
//! write to.

use super::*;

const BACKEND: &str = "/usr/lib/git-core/git-http-backend";

/// Runs git (bounded to 60 s by coreutils' `timeout`) with a clean
/// environment; returns the output.
fn git(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .arg("60")
        .arg("git")
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git")
}

fn git_ok(home: &Path, args: &[&str]) -> String {
    let out = git(home, args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn git_push_with_the_sandbox_on() {
    if Command::new("git").arg("--version").output().is_err() || !Path::new(BACKEND).exists() {
        skip(&format!(
            "git or {BACKEND} is not installed (scripts/test installs git)"
        ));
        return;
    }
    let b = builder("");
    let base = fs::canonicalize(b.base()).expect("base");
    let home = base.join("home");
    fs::create_dir_all(&home).expect("home");
    // Two project roots: one writable by its rule, one not.
    for root in ["srv/git", "srv/readonly"] {
        let repo = base.join(root).join("repo.git");
        fs::create_dir_all(&repo).expect("repo dir");
        git_ok(
            &home,
            &["init", "-q", "--bare", "-b", "main", repo.to_str().unwrap()],
        );
        git_ok(
            &home,
            &[
                "--git-dir",
                repo.to_str().unwrap(),
                "config",
                "http.receivepack",
                "true",
            ],
        );
    }
    let rule = |url: &str, root: &str, writable: &str| {
        format!(
            "[[cgi]]\nurl = \"{url}\"\nprogram = \"{BACKEND}\"\n\
             env = {{ GIT_PROJECT_ROOT = \"{}\", GIT_HTTP_EXPORT_ALL = \"1\" }}\n{writable}",
            base.join(root).display()
        )
    };
    let mut b = b;
    // (The rule's own `max_body`: a push's pack is past `limits.max_body`,
    // 1 MiB, which every other request keeps.)
    b.config(&format!(
        "{}{}{}",
        rule(
            "/git",
            "srv/git",
            "writable = [\"srv/git\"]\nmax_body = \"64MiB\"\n"
        ),
        rule("/ro", "srv/readonly", ""),
        // A script that tries to write where no rule of its own allows.
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n"
    ));
    script(
        &b,
        "cgi-bin/escape.sh",
        &format!(
            "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\n\
             for f in {0}/srv/git/evil {0}/srv/git/repo.git/evil {0}/evil /tmp/brisk-escape-$$; do\n\
             if echo x > \"$f\" 2>/dev/null; then echo \"wrote $f\"; else echo refused; fi; done\n",
            base.display()
        ),
    );
    let server = b.start();
    let url = |path: &str| format!("http://127.0.0.1:{}{path}", server.port);

    // A working copy with two commits: a small one (sent with a
    // Content-Length) and one with 3 MiB of incompressible data, which
    // git sends chunked (over http.postBuffer), so it only works with
    // CONTENT_LENGTH set for chunked bodies.
    let work = base.join("work");
    let w = work.to_str().unwrap();
    git_ok(&home, &["init", "-q", "-b", "main", w]);
    for (k, v) in [("user.name", "Test"), ("user.email", "test@example.org")] {
        git_ok(&home, &["-C", w, "config", k, v]);
    }
    fs::write(work.join("README"), b"hello\n").expect("README");
    git_ok(&home, &["-C", w, "add", "README"]);
    git_ok(&home, &["-C", w, "commit", "-q", "-m", "first commit"]);
    git_ok(
        &home,
        &["-C", w, "push", "-q", &url("/git/repo.git"), "main"],
    );
    let mut big = Vec::with_capacity(3 * MIB);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while big.len() < 3 * MIB {
        // xorshift: incompressible, so the pack stays over 1 MiB.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        big.extend_from_slice(&x.to_le_bytes());
    }
    fs::write(work.join("big.bin"), &big).expect("big.bin");
    git_ok(&home, &["-C", w, "add", "big.bin"]);
    git_ok(&home, &["-C", w, "commit", "-q", "-m", "second commit"]);
    git_ok(
        &home,
        &["-C", w, "push", "-q", &url("/git/repo.git"), "main"],
    );

    // The commits are in the bare repository, and a clone gets them back.
    let bare = base.join("srv/git/repo.git");
    let log = git_ok(
        &home,
        &[
            "--git-dir",
            bare.to_str().unwrap(),
            "log",
            "--format=%s",
            "main",
        ],
    );
    assert_eq!(log, "second commit\nfirst commit\n");
    let clone = base.join("clone");
    git_ok(
        &home,
        &[
            "clone",
            "-q",
            &url("/git/repo.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(fs::read(clone.join("big.bin")).expect("cloned big.bin") == big);

    // The same program under a rule without `writable` cannot push.
    let out = git(
        &home,
        &["-C", w, "push", "-q", &url("/ro/repo.git"), "main"],
    );
    assert!(
        !out.status.success(),
        "a push without writable paths succeeded"
    );
    let ro = base.join("srv/readonly/repo.git");
    let out = git(
        &home,
        &[
            "--git-dir",
            ro.to_str().unwrap(),
            "rev-parse",
            "--verify",
            "-q",
            "main",
        ],
    );
    assert!(
        !out.status.success(),
        "the read-only repository got a branch"
    );

    // Nor can another program write there, or anywhere else.
    let r = server.get("/cgi-bin/escape.sh");
    assert_eq!(r.text(), "refused\nrefused\nrefused\nrefused\n");
    assert!(!base.join("srv/git/evil").exists());
    stop(server);
}
