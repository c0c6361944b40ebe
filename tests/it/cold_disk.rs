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

/// Asks for the large file while the disk holds its reads, then for the
/// small one on another connection: the small answer comes while the
/// large file's read is still held. Then the disk answers, and the large
/// file arrives whole. `tls`: over TLS (the site's second listener).
fn the_others_are_served_while_the_disk_is_read(config: &str, tls: bool) {
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        skip("a FUSE mount needs root and /dev/fuse");
        return;
    }
    let mut b = Builder::new();
    b.workers(1).config(config);
    if tls {
        b.listeners(2);
    }
    let source = b.base().join("large.src");
    std::fs::write(&source, pattern(LARGE)).unwrap();
    // (Declared before the server: dropped after it.)
    let mut gate = match Gate::mount(b.root(), &source) {
        Ok(g) => g,
        Err(e) => {
            skip(&format!(
                "the FUSE filesystem could not be mounted here: {e}"
            ));
            return;
        }
    };
    let s = b.start();
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
