//! A large file on a disk that is slow to answer (a router's USB drive,
//! a cold NAS disk), or a file whose name must be read from it: the
//! worker does not wait for the disk, its other clients are served
//! meanwhile. The disk here is a FUSE filesystem
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

    /// How many reads of the large file came so far.
    fn reads(&mut self) -> u64 {
        let stdin = self.child.stdin.as_mut().expect("gatefs's input");
        stdin.write_all(b"count\n").expect("gatefs's input");
        stdin.flush().expect("gatefs's input");
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.out.read_line(&mut line).expect("gatefs's output");
            assert!(n > 0, "gatefs ended");
            if let Some(n) = line.trim().strip_prefix("reads ") {
                return n.parse().expect("a count");
            }
        }
    }

    /// Holds the reads to come again.
    fn hold(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("gatefs's input");
        stdin.write_all(b"hold\n").expect("gatefs's input");
        stdin.flush().expect("gatefs's input");
        // (Answered once the line was read: a count after it.)
        self.reads();
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
/// Bound in this order, the gate is dropped before the server: should an
/// assertion fail while a read is held, the disk lets it go first (a
/// process killed while its read waits in the FUSE daemon cannot end
/// until the daemon answers).
fn on_the_gated_disk(config: &str, listeners: usize) -> Option<(Server, Gate)> {
    on_the_gated_disk_of(config, listeners, LARGE)
}

/// As [`on_the_gated_disk`], the large file `large` bytes long.
fn on_the_gated_disk_of(config: &str, listeners: usize, large: usize) -> Option<(Server, Gate)> {
    // SAFETY: no arguments, no side effects.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/dev/fuse").exists() {
        skip("a FUSE mount needs root and /dev/fuse");
        return None;
    }
    let mut b = Builder::new();
    // (`{base}/show`: a CGI interpreter that answers with its script's text.)
    let show = b.base().join("show");
    std::fs::write(
        &show,
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nexec cat \"$1\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&show, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = config.replace("{base}", &b.base().display().to_string());
    let config = config.replace("{root}", &b.root().display().to_string());
    b.workers(1).config(&config);
    if listeners > 1 {
        b.listeners(listeners);
    }
    let source = b.base().join("large.src");
    std::fs::write(&source, pattern(large)).unwrap();
    let gate = match Gate::mount(b.root(), &source) {
        Ok(g) => g,
        Err(e) => {
            skip(&format!(
                "the FUSE filesystem could not be mounted here: {e}"
            ));
            return None;
        }
    };
    Some((b.start(), gate))
}

/// Asks for the large file while the disk holds its reads, then for the
/// small one on another connection: the small answer comes while the
/// large file's read is still held. Then the disk answers, and the large
/// file arrives whole. `tls`: over TLS (the site's second listener).
fn the_others_are_served_while_the_disk_is_read(config: &str, tls: bool) {
    let Some((s, mut gate)) = on_the_gated_disk(config, 1 + usize::from(tls)) else {
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
    let Some((s, mut gate)) = on_the_gated_disk("", 1) else {
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

/// A small file whose name the kernel has not cached: looking it up
/// would wait for the disk (held here: `cold.txt`), so it is looked up
/// off the loop, and the small file is answered on another connection
/// meanwhile; then the cold one, whole. Before, the worker waited inside
/// `openat2` and answered no one. A client that leaves while its lookup
/// waits takes nothing with it: the same file is served after.
#[cfg(feature = "cold-lookups")]
#[test]
fn a_file_whose_name_the_disk_must_be_read_for_holds_no_other_client() {
    let Some((s, mut gate)) = on_the_gated_disk("", 1) else {
        return;
    };
    let mut cold = Client::connect(s.addr());
    cold.send(b"GET /cold.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    gate.wait_held();
    let mut gone = Client::connect(s.addr());
    gone.send(b"GET /cold.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    let mut small = Client::connect(s.addr());
    small.send(b"GET /small.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    // (A worker waiting for the disk answers nothing: the read times out.)
    the_small_answer(&mut small);
    drop(gone);
    gate.open();
    let r = cold.response();
    assert_eq!((r.status, &r.body[..]), (200, &b"cold\n"[..]), "{}", r.head);
    let r = s.get("/cold.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"cold\n"[..]), "{}", r.head);
}

/// The same over HTTP/2, on one connection: the stream whose file the
/// disk must be read for waits, the next stream's small file is answered.
#[cfg(all(feature = "http2", feature = "cold-lookups"))]
#[test]
fn a_file_whose_name_the_disk_must_be_read_for_holds_no_other_stream() {
    use common::h2::H2;
    let Some((s, mut gate)) = on_the_gated_disk("", 1) else {
        return;
    };
    let mut c = H2::connect(s.addr(), &[], 0);
    let cold = c.get("/cold.txt", &[]);
    gate.wait_held();
    let small = c.get("/small.txt", &[]);
    let a = c.answers(&[small]);
    assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"small\n"[..]));
    gate.open();
    let a = c.answers(&[cold]);
    assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"cold\n"[..]));
}

/// The answer to a GET of `path`, which the gated disk holds: the small
/// file is answered on another connection while it is held (a worker
/// waiting for the disk answers nothing: the read times out), then the
/// gate lets it go.
#[cfg(feature = "cold-lookups")]
fn held_beside_the_small_answer(s: &Server, gate: &mut Gate, path: &str) -> Response {
    let mut held = Client::connect(s.addr());
    held.send(format!("GET {path} HTTP/1.1\r\nHost: a.test\r\n\r\n").as_bytes());
    gate.wait_held();
    let mut small = Client::connect(s.addr());
    small.send(b"GET /small.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    the_small_answer(&mut small);
    gate.open();
    held.response()
}

/// A file on a filesystem that asks its server at each open (FUSE
/// here; sshfs, rclone, s3fs and NFS do): its open (held: `open.bin`,
/// 100,000 bytes, larger than what the cache reads in) is made off the
/// loop with its lookup, and the small file is answered on another
/// connection meanwhile; then the held file, whole, and again from the
/// cache. Before, the name was looked up off the loop, but the open was
/// the worker's, which waited for the server and answered no one.
#[cfg(feature = "cold-lookups")]
#[test]
fn a_file_whose_open_the_server_holds_holds_no_other_client() {
    let Some((s, mut gate)) = on_the_gated_disk("", 1) else {
        return;
    };
    let r = held_beside_the_small_answer(&s, &mut gate, "/open.bin");
    let whole = pattern(LARGE);
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.body == whole[..100_000],
        "{} bytes, not open.bin's",
        r.body.len()
    );
    let r = s.get("/open.bin");
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.body == whole[..100_000],
        "{} bytes, not open.bin's",
        r.body.len()
    );
}

/// An `[errors]` page whose name the disk must be read for (held:
/// `cold.txt`), for a file that is not there: the page is looked up off
/// the loop as the file was, the small file is answered on another
/// connection meanwhile, then the 404 with the page. Before, the page
/// was looked up on the loop once the answer was made.
#[cfg(feature = "cold-lookups")]
#[test]
fn an_error_page_whose_name_the_disk_must_be_read_for_holds_no_other_client() {
    let Some((s, mut gate)) = on_the_gated_disk("[errors]\n404 = \"/cold.txt\"\n", 1) else {
        return;
    };
    let r = held_beside_the_small_answer(&s, &mut gate, "/missing.html");
    assert_eq!((r.status, &r.body[..]), (404, &b"cold\n"[..]), "{}", r.head);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
}

/// A CGI script whose name the disk must be read for (held: `cold.txt`,
/// run by an interpreter that prints its text): the `[[cgi]]` rule's
/// resolving of the path is made off the loop, the small file is
/// answered on another connection meanwhile, then the script's answer.
/// Before, the rule's lookups waited on the loop.
#[cfg(feature = "cold-lookups")]
#[test]
fn a_cgi_script_whose_name_the_disk_must_be_read_for_holds_no_other_client() {
    let rule = "[[cgi]]\npattern = \"cold.txt\"\ninterpreter = \"{base}/show\"\n";
    let Some((s, mut gate)) = on_the_gated_disk(rule, 1) else {
        return;
    };
    let r = held_beside_the_small_answer(&s, &mut gate, "/cold.txt/more");
    assert_eq!((r.status, &r.body[..]), (200, &b"cold\n"[..]), "{}", r.head);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain"),
        "the script's answer"
    );
}

/// A file of a `[[webdav]]` tree (whose every lookup is checked against
/// the disk: clients write it) whose name the disk must be read for
/// (held: `cold.txt`): looked up off the loop, the small file answered
/// on another connection meanwhile, then the file; a GET again asks the
/// disk again (off the loop: the same answer). Before, the tree's
/// lookups waited on the loop.
#[cfg(all(feature = "cold-lookups", feature = "webdav"))]
#[test]
fn a_webdav_file_whose_name_the_disk_must_be_read_for_holds_no_other_client() {
    let rule = "[[webdav]]\npath = \"/dav/\"\nroot = \"{root}\"\nread_only = true\n";
    let Some((s, mut gate)) = on_the_gated_disk(rule, 1) else {
        return;
    };
    let r = held_beside_the_small_answer(&s, &mut gate, "/dav/cold.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"cold\n"[..]), "{}", r.head);
    let r = s.get("/dav/cold.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"cold\n"[..]), "{}", r.head);
}

/// A FastCGI rule's script whose name the disk must be read for (held:
/// `cold.txt`, which php-fpm runs as a script that prints its text): its
/// lookup is made off the loop as a static file's is, the small file is
/// answered on another connection meanwhile, then the script's answer.
/// Before, the rule's lookup of its script waited on the loop.
#[cfg(all(feature = "cold-lookups", feature = "upstreams"))]
#[test]
fn a_fastcgi_script_whose_name_the_disk_must_be_read_for_holds_no_other_client() {
    // (php-fpm runs `.php` files alone unless told otherwise.)
    let Some(fpm) = super::fastcgi::Fpm::start_with("security.limit_extensions = .txt\n") else {
        return;
    };
    let rule = format!(
        "[[fastcgi]]\npattern = \"/cold.txt\"\nto = \"unix:{}\"\n",
        fpm.sock.display()
    );
    let Some((s, mut gate)) = on_the_gated_disk(&rule, 1) else {
        return;
    };
    let r = held_beside_the_small_answer(&s, &mut gate, "/cold.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"cold\n"[..]), "{}", r.head);
    let php = r
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/html"));
    assert!(php, "php-fpm's answer, not the file's: {}", r.head);
}

/// HTTP/1.1, a multipart answer whose first range is short (100 KB: a
/// file range, but sent without asking; in the page cache here, read
/// before the disk held its reads again) and whose second is not: the second waits for the
/// disk off the loop, the small file on another connection is answered
/// meanwhile, and the answer then comes whole. (Before, a short range
/// let the flush run on into the next part's range unasked, and read it
/// on the loop.)
#[test]
fn a_multipart_answer_whose_second_range_is_not_cached_holds_no_other_client() {
    const RANGE: &str = "bytes=0-99999,4000000-4599999";
    let Some((s, mut gate)) = on_the_gated_disk("", 1) else {
        return;
    };
    let get = |range: &str| {
        let mut c = Client::connect(s.addr());
        c.send(
            format!("GET /large.bin HTTP/1.1\r\nHost: a.test\r\nRange: {range}\r\n\r\n").as_bytes(),
        );
        c
    };
    gate.open();
    let first = get("bytes=0-99999").response();
    assert_eq!(
        (first.status, &first.body[..]),
        (206, &pattern(100_000)[..])
    );
    gate.hold();
    let mut parts = get(RANGE);
    gate.wait_held();
    let mut small = Client::connect(s.addr());
    small.send(b"GET /small.txt HTTP/1.1\r\nHost: a.test\r\n\r\n");
    the_small_answer(&mut small);
    gate.open();
    let r = parts.response();
    assert_eq!(r.status, 206, "{}", r.head);
    let whole = pattern(LARGE);
    for range in [&whole[..100_000], &whole[4_000_000..4_600_000]] {
        let found = r.body.windows(range.len()).any(|w| w == range);
        assert!(found, "a range of {} bytes in the answer", range.len());
    }
}

/// Clients that ask for ranges of a large file and go while the disk
/// holds the reads: once it lets go, each read stops with its client (a
/// step, not its turn of 2 MiB), and the descriptors the reads held are
/// given back. (Before, each read went on to its turn's end: a client
/// that asked and went cost the disk 2 MiB, as often as it liked.)
#[test]
fn reads_for_clients_that_went_stop_with_them() {
    const CLIENTS: u64 = 12;
    let Some((s, mut gate)) = on_the_gated_disk_of("", 1, 64 << 20) else {
        return;
    };
    // The server's descriptors of the large file: the file cache's, and
    // a duplicate for each read in under way or queued.
    // The server's descriptors whose link says `what`: of the large file,
    // the file cache's and a duplicate for each read in under way or
    // queued.
    let fds = |what: &str| {
        let links = std::fs::read_dir(format!("/proc/{}/fd", s.pid())).unwrap();
        let links = links.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok());
        links.filter(|l| l.to_string_lossy().contains(what)).count()
    };
    let until = |what: &str, done: &dyn Fn(usize) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !done(fds(what)) {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: {}",
                fds(what)
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let clients: Vec<Client> = (0..CLIENTS)
        .map(|i| {
            let mut c = Client::connect(s.addr());
            let range = i * (4 << 20);
            c.send(
                format!("GET /large.bin HTTP/1.1\r\nHost: a.test\r\nRange: bytes={range}-\r\n\r\n")
                    .as_bytes(),
            );
            c
        })
        .collect();
    gate.wait_held();
    // (Every read asked for: the file cache's descriptor, and each's.)
    until("large.bin", &|n| n > CLIENTS as usize);
    drop(clients);
    gate.open();
    // (The reads' descriptors given back.)
    until("large.bin", &|n| n <= 1);
    let reads = gate.reads();
    // (Each read goes on until its connection finds its client gone,
    // trying to send what was read: a step or two, and the kernel's
    // read-ahead beside them; more while the worker is slow to come to
    // it: 30-55 reads in all on a quiet machine, 97 once under the whole
    // suite's load. The reads' turns were 16 steps each: 192 reads and
    // more.)
    assert!(reads <= 12 * CLIENTS, "{reads} reads of the large file");
}

/// Over HTTP/3, on a site of the gated disk: `request` (aioquic's
/// client's form) asked for, the disk holding its read; meanwhile the
/// small file, asked for on another QUIC connection, is answered; then
/// the disk lets go. The server, the disk (dropped first: see
/// [`on_the_gated_disk`]) and the answer to `request`. `None` (said) without root, FUSE or aioquic. (Before, the worker read a
/// frame of the file on its loop: the small answer did not come, and
/// aioquic's client gave up after its 10 s.)
#[cfg(feature = "http3")]
fn over_http3_while_held(request: serde_json::Value) -> Option<(Server, Gate, serde_json::Value)> {
    use serde_json::json;
    let config = format!("{}[http3]\nenable = true\n", tls::section(&["a"], ""));
    let (s, mut gate) = on_the_gated_disk(&config, 2)?;
    let port = s.addrs[1].port();
    let spec = super::h3::spec(port, json!([request]), json!({"timeout": 60}))?;
    let large = super::h3::client_with(&spec);
    gate.wait_held();
    let get = json!([{"method": "GET", "path": "/small.txt"}]);
    let spec = super::h3::spec(port, get, json!({"timeout": 10})).expect("aioquic");
    let small = super::h3::answer("client.py", &spec);
    let small = &small["responses"][0];
    assert_eq!(
        (&small["headers"][0][1], &small["text"]),
        (&json!("200"), &json!("small\n"))
    );
    gate.open();
    let large = super::h3::printed("client.py", large);
    Some((s, gate, large["responses"][0].clone()))
}

/// HTTP/3: a large file from the slow disk holds no other connection,
/// and arrives whole.
#[cfg(feature = "http3")]
#[test]
fn a_large_file_over_http3_from_a_slow_disk_holds_no_other_connection() {
    use sha2::Digest;
    let get = serde_json::json!({"method": "GET", "path": "/large.bin"});
    let Some((_s, _gate, large)) = over_http3_while_held(get) else {
        return;
    };
    assert_eq!(large["headers"][0][1], "200");
    assert_eq!(large["length"], LARGE);
    let sum = super::h3::hex(&sha2::Sha256::digest(pattern(LARGE)));
    assert_eq!(large["sha256"], sum);
}

/// HTTP/3, a multipart answer of two ranges of the large file (each
/// behind its part's head): its second range waits for the disk as its
/// first did, off the loop. (Before, only an answer's first piece was
/// asked about: the second was read on the loop once the part's head
/// before it went.) The answer is byte for byte HTTP/1.1's, asked for
/// after.
#[cfg(feature = "http3")]
#[test]
fn a_multipart_answer_over_http3_from_a_slow_disk_holds_no_other_connection() {
    use sha2::Digest;
    const RANGE: &str = "bytes=0-299999,4000000-4599999";
    let get = serde_json::json!({"method": "GET", "path": "/large.bin",
                                 "headers": [["range", RANGE]]});
    let Some((s, _gate, parts)) = over_http3_while_held(get) else {
        return;
    };
    assert_eq!(parts["headers"][0][1], "206");
    let mut c = Client::connect(s.addr());
    c.send(format!("GET /large.bin HTTP/1.1\r\nHost: a.test\r\nRange: {RANGE}\r\n\r\n").as_bytes());
    let r = c.response();
    assert_eq!(r.status, 206, "{}", r.head);
    assert!(r.body.len() > 900_000, "{}", r.head);
    // (Each answer draws its own boundary: HTTP/1.1's body, with the
    // boundary of HTTP/3's, must be its bytes.)
    let boundary = |content_type: &str| content_type.split("boundary=").nth(1).unwrap().to_string();
    let ours = boundary(r.header("content-type").expect("content-type"));
    let fields = parts["headers"].as_array().expect("fields");
    let theirs = fields
        .iter()
        .find(|f| f[0] == "content-type")
        .expect("content-type");
    let theirs = boundary(theirs[1].as_str().expect("a value"));
    assert_eq!(ours.len(), theirs.len());
    let mut body = r.body.clone();
    let at: Vec<usize> = (0..body.len() - ours.len())
        .filter(|&i| body[i..].starts_with(ours.as_bytes()))
        .collect();
    assert_eq!(at.len(), 3, "two parts' heads and the end");
    for i in at {
        body[i..i + ours.len()].copy_from_slice(theirs.as_bytes());
    }
    assert_eq!(
        parts["sha256"],
        super::h3::hex(&sha2::Sha256::digest(&body))
    );
}
