//! Real WebDAV clients against brisk, with the sandbox on: `cadaver`
//! scripted, and `rclone`'s webdav backend syncing a tree of 1,000 files
//! up and down and moving a 2 GiB sparse file both ways. Each test says
//! loudly that it skipped when its client is missing (scripts/test
//! installs both as root on Debian).

use crate::common;

use super::webdav::{litmus, LITMUS_PASSES};
use common::*;
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// (Also the WebDAV tests' beside this one.)
pub(crate) use crate::common::{have, have_from};

/// brisk with a `[[webdav]]` rule at `/dav/` over `<base>/dav`.
fn start(extra: &str) -> (Server, PathBuf) {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir(&dav).unwrap();
    b.config(&format!(
        "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n{extra}",
        dav.display()
    ));
    (b.start(), dav)
}

/// Every file beneath `dir` by its path relative to `dir`, with its
/// contents.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Runs rclone (no config file) with `args`; its output if it failed.
fn rclone(args: &[&str]) {
    let out = Command::new("rclone")
        .args(["--config", "/dev/null", "--retries", "1"])
        .args(args)
        .output()
        .expect("run rclone");
    assert!(
        out.status.success(),
        "rclone {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// rclone's name for the rule's folder `path` on `s`.
fn remote(s: &Server, path: &str) -> String {
    format!(":webdav,url='http://{}/dav/',vendor=other:{path}", s.addr())
}

#[test]
fn cadaver_scripted() {
    if !have("cadaver") {
        return;
    }
    let (s, dav) = start("");
    let work = s.base.path.join("work");
    fs::create_dir(&work).unwrap();
    fs::write(work.join("a.txt"), b"from cadaver\n").unwrap();
    let script = "mkcol sub\nput a.txt sub/a.txt\ncopy sub/a.txt sub/b.txt\n\
                  move sub/b.txt sub/c.txt\npropset sub/c.txt colour blue\n\
                  propget sub/c.txt colour\nget sub/c.txt got.txt\ndelete sub/a.txt\n\
                  ls sub\nquit\n";
    let mut child = Command::new("cadaver")
        .arg(format!("http://{}/dav/", s.addr()))
        .current_dir(&work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cadaver");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // mkcol, put, copy, move, propset, get, delete, ls: each says so.
    assert_eq!(text.matches("succeeded").count(), 8, "{text}");
    assert!(text.contains("Value of colour is: blue"), "{text}");
    assert!(!text.contains("failed"), "{text}");
    assert_eq!(
        fs::read(work.join("got.txt")).unwrap(),
        b"from cadaver\n",
        "{text}"
    );
    let names: Vec<String> = tree(&dav).into_keys().collect();
    assert_eq!(names, ["sub/c.txt"], "{text}");
}

#[test]
fn rclone_syncs_a_tree_of_1000_files_up_and_down() {
    if !have("rclone") {
        return;
    }
    let (s, dav) = start("");
    let up = s.base.path.join("up");
    // 1,000 files of 0 to 20,000 random bytes in 17 directories, some
    // a level deeper.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let dir_of = |i: u32| match i % 5 {
        0 => format!("d{:02}/e{}", i % 17, i % 3),
        _ => format!("d{:02}", i % 17),
    };
    for i in 0..1000u32 {
        let dir = dir_of(i);
        let len = (next() % 20_000) as usize;
        let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        write_file(&up.join(dir).join(format!("f{i:04}.bin")), &body);
    }
    let tree_up = tree(&up);
    assert_eq!(tree_up.len(), 1000);
    rclone(&["sync", up.to_str().unwrap(), &remote(&s, "tree")]);
    assert!(
        tree(&dav.join("tree")) == tree_up,
        "the tree on the server differs"
    );
    // Changed, removed and new files: the next sync brings the server's
    // tree to the same state.
    for i in (0..1000u32).step_by(100) {
        let dir = up.join(dir_of(i));
        match i % 200 {
            0 => fs::remove_file(dir.join(format!("f{i:04}.bin"))).unwrap(),
            _ => fs::write(dir.join(format!("f{i:04}.bin")), format!("changed {i}")).unwrap(),
        }
        fs::write(dir.join(format!("new{i}.txt")), format!("new {i}")).unwrap();
    }
    let tree_up = tree(&up);
    rclone(&["sync", up.to_str().unwrap(), &remote(&s, "tree")]);
    assert!(
        tree(&dav.join("tree")) == tree_up,
        "the tree on the server differs after the second sync"
    );
    // And down again, into an empty directory.
    let down = s.base.path.join("down");
    rclone(&["sync", &remote(&s, "tree"), down.to_str().unwrap()]);
    assert!(tree(&down) == tree_up, "the tree synced down differs");
}

/// A sparse file of `SPARSE` bytes, zeros but for a few marks.
const SPARSE: u64 = 2 << 30;
const MARKS: [(u64, &[u8]); 3] = [(0, b"head"), (1 << 30, b"middle"), (SPARSE - 4, b"tail")];

#[test]
fn rclone_moves_a_2_gib_sparse_file_both_ways() {
    if !have("rclone") {
        return;
    }
    // The file is written in full on the server's side.
    let free = {
        let dir = std::ffi::CString::new(std::env::temp_dir().to_str().unwrap()).unwrap();
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(dir.as_ptr(), &mut st) }, 0);
        st.f_bavail as u64 * st.f_frsize as u64
    };
    if free < 3 * SPARSE {
        skip(&format!(
            "{free} bytes free in the temporary directory: the 2 GiB upload needs 6 GiB"
        ));
        return;
    }
    let (s, dav) = start("max_upload = \"3GiB\"\n");
    let source = s.base.path.join("big.img");
    {
        use std::os::unix::fs::FileExt;
        let f = fs::File::create(&source).unwrap();
        f.set_len(SPARSE).unwrap();
        for (at, mark) in MARKS {
            f.write_all_at(mark, at).unwrap();
        }
    }
    rclone(&["copyto", source.to_str().unwrap(), &remote(&s, "big.img")]);
    let stored = dav.join("big.img");
    assert_eq!(fs::metadata(&stored).unwrap().len(), SPARSE);
    {
        use std::os::unix::fs::FileExt;
        let f = fs::File::open(&stored).unwrap();
        for (at, mark) in MARKS {
            let mut buf = vec![0; mark.len()];
            f.read_exact_at(&mut buf, at).unwrap();
            assert_eq!(buf, mark, "at {at}");
        }
    }
    // Down, compared as it streams: zeros but for the marks.
    let mut child = Command::new("rclone")
        .args(["--config", "/dev/null", "cat", &remote(&s, "big.img")])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run rclone cat");
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let zeros = vec![0u8; 1 << 20];
    let mut at = 0u64;
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        // (Compared as slices first: a memcmp, fast in a debug build.)
        if buf[..n] == zeros[..n] {
            at += n as u64;
            continue;
        }
        for (i, &b) in buf[..n].iter().enumerate() {
            if b != 0 {
                let pos = at + i as u64;
                let mark = MARKS
                    .iter()
                    .find(|(m, text)| pos >= *m && pos < m + text.len() as u64);
                let want = mark.map(|(m, text)| text[(pos - m) as usize]);
                assert_eq!(Some(b), want, "byte {pos}");
            }
        }
        at += n as u64;
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(at, SPARSE);
    fs::remove_file(&stored).unwrap();
}

/// litmus with `[[auth]]` in front (it logs in with the user and
/// password it is given), over the suites that need no locks.
#[test]
fn litmus_passes_behind_auth() {
    if !have("litmus") {
        return;
    }
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
    let suites = "basic copymove props http";
    let (summaries, _, text) = litmus(&s, suites, &["apr1", "correct horse"]);
    assert_eq!(summaries, LITMUS_PASSES[..4], "{text}");
    // And without the password, nothing passes and nothing is written.
    let before = tree(&dav);
    let (_, ok, _) = litmus(&s, "basic", &[]);
    assert!(!ok);
    assert!(tree(&dav) == before);
}
