//! Real clients fetch files byte for byte: curl, wget, python3.

use crate::common;

use common::*;
use std::process::{Command, Output};
use std::time::Duration;

fn site() -> (Server, Vec<u8>) {
    let data = pattern(300 * 1024 + 3);
    let mut b = Builder::new();
    b.file("data.bin", &data);
    b.file("small.txt", b"small text\n");
    b.file("dir/index.html", b"<p>dir</p>");
    (b.start(), data)
}

/// Runs a command with a 20 s limit; None if the tool is missing.
fn run(cmd: &mut Command) -> Option<Output> {
    run_for(cmd, Duration::from_secs(20))
}

#[test]
fn curl_fetches_byte_exact() {
    let (s, data) = site();
    let base = format!("http://127.0.0.1:{}", s.port);
    let dir = TempDir::new("curl");
    let out = dir.path.join("out.bin");
    let Some(o) = run(Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "10", "-o"])
        .arg(&out)
        .arg(format!("{base}/data.bin"))
        .arg("-o")
        .arg(dir.path.join("small.txt"))
        .arg(format!("{base}/small.txt")))
    else {
        skip("curl not installed");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(&out).expect("out") == data);
    assert_eq!(
        std::fs::read(dir.path.join("small.txt")).expect("small"),
        b"small text\n"
    );
    // A range, and the redirect of a directory followed.
    let o = run(Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "10", "-r", "1000-1999"])
        .arg(format!("{base}/data.bin")))
    .expect("curl");
    assert!(o.status.success());
    assert!(o.stdout == data[1000..2000]);
    let o = run(Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "10", "-L"])
        .arg(format!("{base}/dir")))
    .expect("curl");
    assert!(o.status.success());
    assert_eq!(o.stdout, b"<p>dir</p>");
    // HTTP/1.0 mode too.
    let o = run(Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "10", "--http1.0"])
        .arg(format!("{base}/small.txt")))
    .expect("curl");
    assert!(o.status.success());
    assert_eq!(o.stdout, b"small text\n");
}

#[test]
fn wget_fetches_byte_exact() {
    let (s, data) = site();
    let dir = TempDir::new("wget");
    let out = dir.path.join("out.bin");
    let Some(o) = run(Command::new("wget")
        .args(["-q", "--timeout=10", "--tries=1", "-O"])
        .arg(&out)
        .arg(format!("http://127.0.0.1:{}/data.bin", s.port)))
    else {
        skip("wget not installed");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(&out).expect("out") == data);
}

#[test]
fn python_http_client_fetches_byte_exact() {
    let (s, data) = site();
    let script = r#"
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
out = sys.stdout.buffer
for path in ("/data.bin", "/small.txt", "/data.bin"):
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    assert r.status == 200, r.status
    assert int(r.getheader("Content-Length")) == len(body)
    out.write(body)
c.request("HEAD", "/small.txt")
r = c.getresponse()
assert r.status == 200 and r.read() == b""
c.request("GET", "/nope")
r = c.getresponse()
assert r.status == 404, r.status
r.read()
c.close()
"#;
    let o = run(Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(s.port.to_string()))
    .expect("python3 is required");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut want = data.clone();
    want.extend_from_slice(b"small text\n");
    want.extend_from_slice(&data);
    assert!(o.stdout == want, "python got {} bytes", o.stdout.len());
}

/// The user's scenario: `wget -r -np` of a tree where packages link to
/// each other's directories and files (as `/usr/share/doc` does) mirrors
/// every file that lies inside the root, and exits 0.
#[test]
fn wget_mirrors_a_listed_tree_with_symlinks() {
    use std::os::unix::fs::symlink;
    let mut b = Builder::new();
    b.file("doc/pkg-a/README", b"read me\n");
    b.file("doc/pkg-a/changelog.gz", b"GZ");
    b.file("doc/pkg-c/NEWS", b"news\n");
    let doc = b.root().join("doc");
    symlink("pkg-a", doc.join("pkg-b")).expect("symlink");
    symlink("../pkg-a/README", doc.join("pkg-c/copyright")).expect("symlink");
    symlink("nowhere", doc.join("pkg-c/dangling")).expect("symlink");
    symlink("/etc", doc.join("etc")).expect("symlink");
    b.config("[static]\nautoindex = true\n");
    let s = b.start();
    let dir = TempDir::new("wget-r");
    let Some(o) = run(Command::new("wget")
        .args(["-r", "-np", "-nH", "-nv", "-e", "robots=off"])
        .args(["--timeout=10", "--tries=1", "-P"])
        .arg(&dir.path)
        .arg(format!("http://127.0.0.1:{}/doc/", s.port)))
    else {
        skip("wget not installed");
        return;
    };
    let log = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "wget failed:\n{log}");
    let got = |rel: &str| {
        std::fs::read(dir.path.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}\n{log}"))
    };
    assert_eq!(got("doc/pkg-a/README"), b"read me\n");
    assert_eq!(got("doc/pkg-a/changelog.gz"), b"GZ");
    assert_eq!(got("doc/pkg-b/README"), b"read me\n");
    assert_eq!(got("doc/pkg-b/changelog.gz"), b"GZ");
    assert_eq!(got("doc/pkg-c/copyright"), b"read me\n");
    assert_eq!(got("doc/pkg-c/NEWS"), b"news\n");
    assert!(!dir.path.join("doc/pkg-c/dangling").exists(), "{log}");
    assert!(!dir.path.join("doc/etc").exists(), "{log}");
    assert!(!log.contains("ERROR"), "{log}");
}
