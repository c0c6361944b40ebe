//! A large file on a disk that is slow to answer (a router's USB drive,
//! a cold NAS disk): the worker does not wait for the disk, its other
//! clients are served meanwhile. The disk here is a FUSE filesystem
//! (`cold_disk/gatefs.py`) whose reads of the large file are held until
//! the test lets them go. Before, `sendfile` (or `pread`) waited inside
//! the call, and every other client of the worker with it: the small
//! answer below never came while the read was held. Needs root and
//! `/dev/fuse`; says loudly when it skips.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use common::*;

use super::turns::the_small_answer;

/// The large file: several turns (2 MiB each).
const LARGE: usize = 8 << 20;

/// The gated FUSE filesystem mounted on a site's root, unmounted (its
/// held reads let go first) when dropped.
struct Gate {
    child: Child,
    out: BufReader<ChildStdout>,
    point: PathBuf,
}

impl Gate {
    /// Mounts it at `point`, its large file the bytes of `source`.
    fn mount(point: &Path, source: &Path) -> Result<Gate, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/cold_disk/gatefs.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(point)
            .arg(source)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3: {e}"))?;
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let _ = out.read_line(&mut line);
        if line.trim() != "mounted" {
            let _ = child.kill();
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
            let _ = child.wait();
            return Err(err.trim().to_string());
        }
        Ok(Gate {
            child,
            out,
            point: point.to_path_buf(),
        })
    }

    /// Waits until a read of the large file is held: whoever asked for
    /// its bytes waits for the disk now.
    fn wait_held(&mut self) {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.out.read_line(&mut line).expect("gatefs's output");
            assert!(n > 0, "gatefs ended before any read of the large file");
            if line.trim() == "held" {
                return;
            }
        }
    }

    /// Lets every read, held and to come, go.
    fn open(&mut self) {
        if let Some(stdin) = self.child.stdin.as_mut() {
            let _ = stdin.write_all(b"open\n");
            let _ = stdin.flush();
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.open();
        let _ = Command::new("umount").arg("-l").arg(&self.point).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A site of one worker with `config` whose root is the gated disk
/// (`listeners` of them), started: `None` (said) without root or FUSE.
/// The gate is declared first: dropped after the server.
fn on_the_gated_disk(config: &str, listeners: usize) -> Option<(Gate, Server)> {
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        skip("a FUSE mount needs root and /dev/fuse");
        return None;
    }
    let mut b = Builder::new();
    b.workers(1).config(config);
    if listeners > 1 {
        b.listeners(listeners);
    }
    let source = b.base().join("large.src");
    std::fs::write(&source, pattern(LARGE)).unwrap();
    let gate = match Gate::mount(b.root(), &source) {
        Ok(g) => g,
        Err(e) => {
            skip(&format!(
                "the FUSE filesystem could not be mounted here: {e}"
            ));
            return None;
        }
    };
    Some((gate, b.start()))
}

/// Asks for the large file while the disk holds its reads, then for the
/// small one on another connection: the small answer comes while the
/// large file's read is still held. Then the disk answers, and the large
/// file arrives whole. `tls`: over TLS (the site's second listener).
fn the_others_are_served_while_the_disk_is_read(config: &str, tls: bool) {
    let Some((mut gate, s)) = on_the_gated_disk(config, 1 + usize::from(tls)) else {
        return;
    };
    let addr = s.addrs[usize::from(tls)];
    let mut large = Client::connect(addr);
    let mut small = Client::connect(addr);
    large.tls_if(tls);
    small.tls_if(tls);
    large.send(b"GET /large.bin HTTP/1.1\r\nHost: a.test\r\n\r\n");
    gate.wait_held();
    small.send(b"GET /small.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    // (A worker waiting for the disk answers nothing: the read times out.)
    the_small_answer(&mut small);
    gate.open();
    let r = large.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body == pattern(LARGE), "the large file, byte for byte");
}

#[test]
fn a_large_file_by_sendfile_from_a_slow_disk_holds_no_other_client() {
    the_others_are_served_while_the_disk_is_read("", false);
}

#[test]
fn a_large_file_copied_from_a_slow_disk_holds_no_other_client() {
    the_others_are_served_while_the_disk_is_read("[static]\nsendfile = false\n", false);
}

#[cfg(feature = "tls")]
#[test]
fn a_large_file_over_tls_from_a_slow_disk_holds_no_other_client() {
    the_others_are_served_while_the_disk_is_read(&tls::section(&["a"], ""), true);
}

/// HTTP/2 in cleartext (a file's frames from a mapping of it): the small
/// file, asked for on the same connection and on another, is answered on
/// both while the large file's read is held.
#[cfg(feature = "http2")]
#[test]
fn a_large_file_over_http2_from_a_slow_disk_holds_no_other_stream() {
    use common::h2::{Answer, H2};
    let Some((mut gate, s)) = on_the_gated_disk("", 1) else {
        return;
    };
    let mut c = H2::connect(s.addr(), &[], 0);
    let large = c.get("/large.bin", &[]);
    gate.wait_held();
    let mut other = H2::connect(s.addr(), &[], 0);
    let small = other.get("/small.txt", &[]);
    let a = other.answers(&[small]);
    assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"small\n"[..]));
    // The small answer on the same connection, then (the disk let go)
    // the large one, its head sent before its body waited.
    let small = c.get("/small.txt", &[]);
    let (mut a, mut done) = ([Answer::default(), Answer::default()], [false, false]);
    while !done[1] {
        let f = c.frame().expect("the answers");
        if f.stream == 0 {
            continue;
        }
        let i = usize::from(f.stream == large);
        assert!(f.stream == large || f.stream == small, "{f:?}");
        let mut credit = Vec::new();
        done[i] |= a[i].take(f, &mut credit);
        c.send(&credit);
        if i == 0 && done[0] && !done[1] {
            assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"small\n"[..]));
            gate.open();
        }
    }
    assert!(done[0], "the small answer");
    assert_eq!(a[1].status(), "200");
    assert!(a[1].body == pattern(LARGE), "the large file, byte for byte");
}

/// HTTP/3: the small file, asked for on another QUIC connection, is
/// answered while the large file's read is held; then the large one
/// arrives whole. (Before, the worker read a frame of the file on its
/// loop: the small answer did not come, and aioquic's client gave up.)
#[cfg(feature = "http3")]
#[test]
fn a_large_file_over_http3_from_a_slow_disk_holds_no_other_connection() {
    use serde_json::json;
    use sha2::Digest;
    let config = format!("{}[http3]\nenable = true\n", tls::section(&["a"], ""));
    let Some((mut gate, s)) = on_the_gated_disk(&config, 2) else {
        return;
    };
    let port = s.addrs[1].port();
    let get = |path: &str| json!([{"method": "GET", "path": path}]);
    let Some(spec) = super::h3::spec(port, get("/large.bin"), json!({"timeout": 60})) else {
        return;
    };
    let large = super::h3::client_with(&spec);
    gate.wait_held();
    // (A worker waiting for the disk answers nothing: the client's 10 s
    // run out, and it says so.)
    let spec = super::h3::spec(port, get("/small.txt"), json!({"timeout": 10})).expect("aioquic");
    let small = super::h3::answer("client.py", &spec);
    let small = &small["responses"][0];
    assert_eq!(
        (&small["headers"][0][1], &small["text"]),
        (&json!("200"), &json!("small\n"))
    );
    gate.open();
    let large = super::h3::printed("client.py", large);
    let large = &large["responses"][0];
    assert_eq!(large["headers"][0][1], "200");
    assert_eq!(large["length"], LARGE);
    let sum = super::h3::hex(&sha2::Sha256::digest(pattern(LARGE)));
    assert_eq!(large["sha256"], sum);
}
