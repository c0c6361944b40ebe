//! Harness for the integration tests: a temporary site, the real `brisk`
//! binary on an ephemeral port, and a raw HTTP/1.1 client that keeps every
//! byte it receives so responses can be compared byte for byte.
//!
//! Every socket read has a timeout, the server child is killed in `Drop`,
//! and the temporary directory is removed in `Drop`.

#![allow(dead_code)]

pub mod embedded;
#[cfg(feature = "http2")]
pub mod h2;
#[path = "../../engine/src/test_skip.rs"]
mod skip;
// Not every test binary has a test that may skip.
#[allow(unused_imports)]
pub use skip::skip;
#[cfg(feature = "tls")]
pub mod tls;

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Whether `tool` is on the PATH; if not, the test says it skipped.
pub fn have(tool: &str) -> bool {
    have_from(tool, tool)
}

/// [`have`] for a `tool` that Debian's `package` brings.
pub fn have_from(tool: &str, package: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip(&format!(
            "{tool} is not installed (scripts/test installs it as root on Debian: apt-get install {package})"
        ));
    }
    found
}

/// The brisk binary the tests run: this build's, or the one
/// `BRISK_TEST_BINARY` names (another build of the same features, such as
/// scripts/pgo's: `BRISK_TEST_BINARY=$PWD/target/pgo/release/brisk cargo
/// test --test it`).
pub fn brisk_exe() -> &'static str {
    static EXE: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    EXE.get_or_init(|| match std::env::var("BRISK_TEST_BINARY") {
        Ok(path) if !path.is_empty() => Box::leak(path.into_boxed_str()),
        _ => env!("CARGO_BIN_EXE_brisk"),
    })
}

/// Timeout of every socket read and write.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The modification time given to every file the harness writes, so that
/// `ETag` and `Last-Modified` are known in advance:
/// Tue, 02 Jan 2024 03:04:05 GMT.
pub const MTIME: u64 = 1_704_164_645;

/// `Last-Modified` of a file written by the harness.
pub const MTIME_HTTP: &str = "Tue, 02 Jan 2024 03:04:05 GMT";

/// What a masked `Date` value looks like in [`Response::masked_head`].
pub const DATE: &str = "<date>";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A directory under the system temporary directory, removed on drop.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "brisk-itest-{}-{}-{}-{}",
            std::process::id(),
            n,
            nanos,
            tag
        ));
        fs::create_dir_all(&path).expect("create temp dir");
        TempDir { path }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Make everything writable again so that removal cannot fail on a
        // directory a test made unreadable.
        fn unlock(p: &Path) {
            if let Ok(meta) = fs::symlink_metadata(p) {
                if meta.is_dir() {
                    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o755));
                    if let Ok(rd) = fs::read_dir(p) {
                        for e in rd.flatten() {
                            unlock(&e.path());
                        }
                    }
                }
            }
        }
        unlock(&self.path);
        if fs::remove_dir_all(&self.path).is_ok() || !self.path.exists() {
            return;
        }
        // A filesystem a test mounted beneath (tmpfs, FUSE) whose guard
        // drops after the server that held this directory: unmounted
        // here, deepest first, or the directory would stay behind.
        let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut beneath: Vec<&str> = (info.lines())
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| Path::new(m).starts_with(&self.path))
            .collect();
        beneath.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in beneath {
            let _ = std::process::Command::new("umount")
                .args(["-l", m])
                .status();
        }
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// ETag of a file written by the harness with `size` bytes.
pub fn etag(size: usize) -> String {
    format!("\"{:x}-{:x}\"", MTIME, size)
}

/// The header lines every 200 file response starts with, in order.
pub fn file_headers(size: usize, content_type: &str) -> String {
    format!(
        "ETag: {}\r\nLast-Modified: {}\r\nContent-Type: {}\r\nAccept-Ranges: bytes\r\n",
        etag(size),
        MTIME_HTTP,
        content_type
    )
}

/// A whole expected response head with the `Date` value masked:
/// status line, `Server`, `Date`, then `headers` (each line ending in
/// CRLF), then the blank line.
pub fn head(status: &str, headers: &str) -> String {
    format!("HTTP/1.1 {status}\r\nServer: brisk\r\nDate: {DATE}\r\n{headers}\r\n")
}

/// The HTML body of an error response.
pub fn error_page(code: u16, reason: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><title>{code} {reason}</title></head>\n\
         <body><h1>{code} {reason}</h1><hr><p>brisk</p></body></html>\n"
    )
}

/// The `Connection` header a response is expected to carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conn {
    /// None (HTTP/1.1 keep-alive).
    None,
    Close,
    KeepAlive,
}

impl Conn {
    pub fn line(self) -> &'static str {
        match self {
            Conn::None => "",
            Conn::Close => "Connection: close\r\n",
            Conn::KeepAlive => "Connection: keep-alive\r\n",
        }
    }
}

/// The head (`Date` masked) of the error response `code reason`, with
/// `extra` header lines before `Content-Type` and the given `Connection`.
pub fn error_head(code: u16, reason: &str, extra: &str, conn: Conn) -> String {
    head(
        &format!("{code} {reason}"),
        &format!(
            "{extra}Content-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n{}",
            error_page(code, reason).len(),
            conn.line()
        ),
    )
}

/// Asserts that `r` is exactly the error response `code reason`, with
/// `extra` header lines before `Content-Type` and the given `Connection`.
pub fn assert_error(r: &Response, code: u16, reason: &str, extra: &str, conn: Conn) {
    let want = error_head(code, reason, extra, conn);
    assert_eq!(r.masked_head(), want, "head of the {code} response");
    assert_eq!(
        r.text(),
        error_page(code, reason),
        "body of the {code} response"
    );
}

/// Asserts that `r` is a complete 200 response for a harness-written file
/// with `body`, of type `ctype`, with `extra` header lines after
/// `Accept-Ranges`.
pub fn assert_file(r: &Response, body: &[u8], ctype: &str, extra: &str, conn: Conn) {
    let want = head(
        "200 OK",
        &format!(
            "{}{extra}Content-Length: {}\r\n{}",
            file_headers(body.len(), ctype),
            body.len(),
            conn.line()
        ),
    );
    assert_eq!(r.masked_head(), want, "head of the file response");
    assert!(r.body == body, "body differs: got {:?}", r.text());
}

/// Sets the modification time of `path` to [`MTIME`].
pub fn set_mtime(path: &Path) {
    let f = fs::File::options()
        .write(true)
        .open(path)
        .expect("open to set mtime");
    f.set_modified(UNIX_EPOCH + Duration::from_secs(MTIME))
        .expect("set mtime");
}

/// Everything needed before the server starts.
pub struct Builder {
    base: TempDir,
    root: PathBuf,
    config: Option<String>,
    workers: u32,
    access_log: Access,
    listen: String,
    args: Vec<String>,
    nofile: Option<u64>,
    stdout: Option<Stdio>,
    /// How many listening lines to wait for, when not one per `--listen`.
    listeners: Option<usize>,
    /// The working directory brisk starts in (the test's, if `None`).
    cwd: Option<PathBuf>,
    /// The user and group brisk is started as (the test's, if `None`).
    run_as: Option<(u32, u32)>,
    /// `--root` names the root (else brisk starts in it, with its
    /// default root: the directory it started in).
    root_flag: bool,
    /// Environment variables set for brisk (besides the test's).
    env: Vec<(String, String)>,
    /// A program (and its arguments) that runs brisk, named after them
    /// with its own arguments: a shim such as scripts/old-kernel.c.
    through: Vec<String>,
}

/// How the access log is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// `--access-log off`.
    Off,
    /// `--access-log <base>/access.log`.
    Flag,
    /// No flag: whatever the config file says.
    Config,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        let base = TempDir::new("site");
        let root = base.path.join("root");
        fs::create_dir(&root).expect("create root");
        Builder {
            base,
            root,
            config: None,
            workers: 1,
            access_log: Access::Off,
            listen: "127.0.0.1:0".to_string(),
            args: Vec::new(),
            nofile: None,
            stdout: None,
            listeners: None,
            cwd: None,
            run_as: None,
            root_flag: true,
            env: Vec::new(),
            through: Vec::new(),
        }
    }

    /// Starts brisk in the root with no `--root`: its default root.
    pub fn root_by_default(&mut self) -> &mut Self {
        self.root_flag = false;
        self.cwd = Some(self.root.clone());
        self
    }

    /// Starts brisk with the environment variable `key` set to `value`.
    pub fn env(&mut self, key: &str, value: &str) -> &mut Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Starts brisk as user `uid` and group `gid` (no supplementary
    /// groups), not as the test's user: a server that is not root from the
    /// start. The test runs as root to do that.
    pub fn run_as(&mut self, uid: u32, gid: u32) -> &mut Self {
        self.run_as = Some((uid, gid));
        self
    }

    /// Starts brisk in `dir` (relative paths on its command line are
    /// relative to it).
    pub fn cwd(&mut self, dir: &Path) -> &mut Self {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    /// The document root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding the root, the config and the logs (outside
    /// the root).
    pub fn base(&self) -> &Path {
        &self.base.path
    }

    /// Writes a file under the root (creating directories) with
    /// modification time [`MTIME`].
    pub fn file(&mut self, rel: &str, contents: &[u8]) -> &mut Self {
        let path = self.root.join(rel);
        write_file(&path, contents);
        self
    }

    /// Creates a directory under the root.
    pub fn dir(&mut self, rel: &str) -> &mut Self {
        fs::create_dir_all(self.root.join(rel)).expect("create dir");
        self
    }

    /// Writes the TOML config file and passes `--config`.
    pub fn config(&mut self, toml: &str) -> &mut Self {
        self.config = Some(toml.to_string());
        self
    }

    pub fn workers(&mut self, n: u32) -> &mut Self {
        self.workers = n;
        self
    }

    /// Writes the access log to `<base>/access.log`.
    pub fn access_log(&mut self) -> &mut Self {
        self.access_log = Access::Flag;
        self
    }

    /// Passes no `--access-log` flag, so the config file decides.
    pub fn access_log_from_config(&mut self) -> &mut Self {
        self.access_log = Access::Config;
        self
    }

    /// The `--listen` address (default `127.0.0.1:0`).
    pub fn listen(&mut self, addr: &str) -> &mut Self {
        self.listen = addr.to_string();
        self
    }

    /// Starts brisk through `program` (with `args` before brisk's path).
    pub fn through(&mut self, program: &Path, args: &[&str]) -> &mut Self {
        self.through = std::iter::once(program.display().to_string())
            .chain(args.iter().map(|a| a.to_string()))
            .collect();
        self
    }

    /// Passes no `--listen` flag, so the config file decides (it must
    /// list one address).
    pub fn listen_from_config(&mut self) -> &mut Self {
        self.listen.clear();
        self
    }

    /// An extra command-line argument.
    pub fn arg(&mut self, a: &str) -> &mut Self {
        self.args.push(a.to_string());
        self
    }

    /// Serves HTTPS on the `--listen` address with the test certificate
    /// `a` (`a.test`; see [`tls`]).
    #[cfg(feature = "tls")]
    pub fn tls(&mut self) -> &mut Self {
        self.args.extend(tls::cert_args("a"));
        self
    }

    /// Starts the server with this descriptor limit (RLIMIT_NOFILE, soft
    /// and hard), to make it run out of descriptors.
    pub fn nofile(&mut self, n: u64) -> &mut Self {
        self.nofile = Some(n);
        self
    }

    /// Waits for `n` listening lines at start (a configuration with more
    /// addresses than `--listen` flags: `[tls] listen`).
    pub fn listeners(&mut self, n: usize) -> &mut Self {
        self.listeners = Some(n);
        self
    }

    /// The server's stdout, instead of a file at [`Server::stdout_path`].
    pub fn stdout(&mut self, out: Stdio) -> &mut Self {
        self.stdout = Some(out);
        self
    }

    /// Starts the server and waits until it reports its port.
    pub fn start(mut self) -> Server {
        let mut args: Vec<String> = Vec::new();
        if !self.listen.is_empty() {
            args.extend(["--listen".into(), self.listen.clone()]);
        }
        if self.root_flag {
            args.extend(["--root".into(), self.root.display().to_string()]);
        }
        args.extend(["--workers".into(), self.workers.to_string()]);
        let access_path = self.base.path.join("access.log");
        match self.access_log {
            Access::Off => args.extend(["--access-log".into(), "off".into()]),
            Access::Flag => args.extend(["--access-log".into(), access_path.display().to_string()]),
            Access::Config => {}
        }
        if let Some(cfg) = &self.config {
            let path = self.base.path.join("brisk.toml");
            fs::write(&path, cfg).expect("write config");
            args.push("--config".into());
            args.push(path.display().to_string());
        }
        args.extend(self.args.iter().cloned());
        let stderr_path = self.base.path.join("stderr.log");
        let (child, addrs) = spawn(
            &args,
            &stderr_path,
            (
                self.nofile,
                self.listeners,
                self.cwd.as_deref(),
                self.run_as,
                &self.env,
                &self.through,
            ),
            self.stdout.take(),
        );
        Server {
            child: Some(child),
            port: addrs[0].port(),
            addrs,
            root: self.root,
            access_path,
            stdout_path: stdout_path(&stderr_path),
            stderr_path,
            base: self.base,
        }
    }
}

/// How long [`wait_until`] waits for its condition before failing the test.
pub const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// Waits until `cond` holds, polling it every millisecond at first and
/// backing off to every 20 ms; panics with "timed out … waiting for
/// `what`" after [`WAIT_LIMIT`]. Tests wait for what they need (a log
/// line, a file, a socket's state, a process) rather than sleeping for a
/// guessed time: fast when the machine is, and a clear failure when the
/// thing never happens.
pub fn wait_until(what: &str, cond: impl FnMut() -> bool) {
    wait_until_within(WAIT_LIMIT, what, cond);
}

/// [`wait_until`] with another limit.
pub fn wait_until_within(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    wait_for_within(limit, what, || cond().then_some(()));
}

/// Waits until `find` returns something, and returns it (as
/// [`wait_until`]: bounded by [`WAIT_LIMIT`], panics naming `what`).
pub fn wait_for<T>(what: &str, find: impl FnMut() -> Option<T>) -> T {
    wait_for_within(WAIT_LIMIT, what, find)
}

pub fn wait_for_within<T>(limit: Duration, what: &str, find: impl FnMut() -> Option<T>) -> T {
    poll(limit, find).unwrap_or_else(|| panic!("timed out after {limit:?} waiting for {what}"))
}

/// Polls `find` (every millisecond at first, backing off to every 20 ms)
/// until it returns something or `limit` has passed; for tests that
/// want to say more than [`wait_until`] when the wait fails.
pub fn poll<T>(limit: Duration, mut find: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(found) = find() {
            return Some(found);
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The kernel's state numbers for TCP sockets (`include/net/tcp_states.h`).
pub const TCP_ESTABLISHED: u8 = 1;
pub const TCP_SYN_RECV: u8 = 3;
pub const TCP_CLOSE_WAIT: u8 = 8;
pub const TCP_LISTEN: u8 = 10;

/// One socket of the kernel's TCP table (`/proc/net/tcp` and `tcp6`):
/// what the tests look at instead of sleeping — whether the server has
/// accepted a connection, read what was sent on it, let its output back
/// up, or closed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSocket {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// One of the `TCP_*` states (`TCP_ESTABLISHED`, …).
    pub state: u8,
    /// Bytes written and not yet acknowledged by the peer.
    pub tx_queue: u64,
    /// Bytes received and not yet read by the process that holds it.
    pub rx_queue: u64,
    /// The socket's inode, 0 while no process holds it: not accepted yet,
    /// or closed by its process and left to the kernel.
    pub inode: u64,
}

/// Every TCP socket of this network namespace.
pub fn tcp_sockets() -> Vec<TcpSocket> {
    fn addr(s: &str) -> Option<SocketAddr> {
        let (ip, port) = s.split_once(':')?;
        let port = u16::from_str_radix(port, 16).ok()?;
        // Each 32-bit word of the address is printed as a number in the
        // host's byte order.
        let mut bytes = Vec::with_capacity(16);
        for i in (0..ip.len()).step_by(8) {
            let word = u32::from_str_radix(ip.get(i..i + 8)?, 16).ok()?;
            bytes.extend_from_slice(&word.to_ne_bytes());
        }
        let ip: std::net::IpAddr = match bytes.len() {
            4 => <[u8; 4]>::try_from(bytes).ok()?.into(),
            16 => <[u8; 16]>::try_from(bytes).ok()?.into(),
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }
    fn socket(line: &str) -> Option<TcpSocket> {
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode …
        let f: Vec<&str> = line.split_whitespace().collect();
        let (tx, rx) = f.get(4)?.split_once(':')?;
        Some(TcpSocket {
            local: addr(f.get(1)?)?,
            remote: addr(f.get(2)?)?,
            state: u8::from_str_radix(f.get(3)?, 16).ok()?,
            tx_queue: u64::from_str_radix(tx, 16).ok()?,
            rx_queue: u64::from_str_radix(rx, 16).ok()?,
            inode: f.get(9)?.parse().ok()?,
        })
    }
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .flat_map(|p| {
            fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .skip(1)
                .filter_map(socket)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The socket with this local and remote address, if the kernel has one.
pub fn tcp_socket(local: SocketAddr, remote: SocketAddr) -> Option<TcpSocket> {
    tcp_sockets()
        .into_iter()
        .find(|s| s.local == local && s.remote == remote)
}

/// Asserts that `got` is one whole 200 answer whose head starts with
/// `head_start` and whose body is `body`, and nothing else.
pub fn assert_whole_download(got: &[u8], head_start: &str, body: &[u8]) {
    let head_end = find(got, b"\r\n\r\n").expect("head") + 4;
    let head = String::from_utf8_lossy(&got[..head_end]).into_owned();
    assert!(head.starts_with(head_start), "{head}");
    let length = format!("\r\nContent-Length: {}\r\n", body.len());
    assert!(head.contains(&length), "{head}");
    assert_eq!(got.len() - head_end, body.len(), "body truncated");
    assert!(got[head_end..] == body[..], "body differs");
}

/// A port of 127.0.0.1 free for TCP and UDP now, below the kernel's
/// ephemeral range (32768 and up by default): a port picked there may be
/// taken as the source port of some connection before the program meant
/// to listen on it binds it.
///
/// The walk starts once a process, at a place of its own, and steps by a
/// prime not dividing 12,000: it meets no port twice before 12,000 picks,
/// so two ports picked in one test process (its tests run at once, and a
/// port picked is not bound until later) are never the same.
pub fn free_port() -> u16 {
    use std::sync::atomic::AtomicU32;
    use std::sync::OnceLock;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static SEED: OnceLock<u32> = OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        (std::process::id()
            ^ SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .subsec_nanos())
            % 12_000
    });
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (20_000 + (seed + n * 7919) % 12_000) as u16;
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
        if tcp.is_ok() && udp.is_ok() {
            return port;
        }
    }
}

/// Writes `contents` to `path` (creating directories), mtime [`MTIME`].
pub fn write_file(path: &Path, contents: &[u8]) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("create parent dirs");
    }
    fs::write(path, contents).expect("write file");
    set_mtime(path);
}

/// `--allow-root` when the tests run as root (as in CI), since brisk
/// refuses to serve as root without it; nothing otherwise.
pub fn root_args() -> &'static [&'static str] {
    if brisk::sys::privileges::euid() == 0 {
        &["--allow-root"]
    } else {
        &[]
    }
}

/// Spawns brisk with `args`, stderr to `stderr_path` and stdout to
/// [`stdout_path`]`(stderr_path)`, and waits (10 s at most) for the
/// banner brisk prints on stderr, `brisk: serving …` and one
/// `brisk: listening on http://ADDR/` (or `https://`) line per
/// `--listen` flag; returns
/// the child and those addresses.
pub fn spawn_brisk(args: &[String], stderr_path: &Path) -> (Child, Vec<SocketAddr>) {
    spawn_brisk_with(args, stderr_path, None)
}

/// Where [`spawn_brisk`] sends the server's stdout: beside `stderr_path`,
/// with the extension `stdout`.
pub fn stdout_path(stderr_path: &Path) -> PathBuf {
    stderr_path.with_extension("stdout")
}

/// Like [`spawn_brisk`], with an optional RLIMIT_NOFILE for the child.
pub fn spawn_brisk_with(
    args: &[String],
    stderr_path: &Path,
    nofile: Option<u64>,
) -> (Child, Vec<SocketAddr>) {
    spawn(
        args,
        stderr_path,
        (nofile, None, None, None, &[], &[]),
        None,
    )
}

/// The descriptor limit, how many listening lines to wait for, the
/// working directory, the user and group, the environment added, the
/// program brisk runs through (if any) of [`spawn`].
type SpawnOptions<'a> = (
    Option<u64>,
    Option<usize>,
    Option<&'a Path>,
    Option<(u32, u32)>,
    &'a [(String, String)],
    &'a [String],
);

/// [`spawn_brisk_with`], with `stdout` instead of the file.
/// `listeners`: how many listening lines to wait for (default: one per
/// `--listen` flag, at least one).
fn spawn(
    args: &[String],
    stderr_path: &Path,
    (nofile, listeners, cwd, run_as, env, through): SpawnOptions<'_>,
    stdout: Option<Stdio>,
) -> (Child, Vec<SocketAddr>) {
    use std::os::unix::process::CommandExt;
    let stderr = fs::File::create(stderr_path).expect("create stderr file");
    let stdout = match stdout {
        Some(out) => out,
        None => {
            Stdio::from(fs::File::create(stdout_path(stderr_path)).expect("create stdout file"))
        }
    };
    let mut cmd = match through.split_first() {
        Some((program, args)) => {
            let mut cmd = Command::new(program);
            cmd.args(args).arg(brisk_exe());
            cmd
        }
        None => Command::new(brisk_exe()),
    };
    cmd.args(root_args())
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(stderr))
        .envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(n) = nofile {
        let lim = libc::rlimit {
            rlim_cur: n as libc::rlim_t,
            rlim_max: n as libc::rlim_t,
        };
        // SAFETY: the closure runs in the child between fork and exec and
        // only calls setrlimit, which is async-signal-safe, on a struct it
        // owns.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    if let Some((uid, gid)) = run_as {
        // (std drops the supplementary groups when root sets a uid.)
        cmd.uid(uid).gid(gid);
    }
    let mut child = cmd.spawn().expect("spawn brisk");
    let want = listeners.unwrap_or_else(|| {
        args.iter()
            .filter(|a| *a == "--listen" || a.starts_with("--listen="))
            .count()
            .max(1)
    });
    let fail = |child: &mut Child, why: &str| -> ! {
        let _ = child.kill();
        let _ = child.wait();
        let err = fs::read_to_string(stderr_path).unwrap_or_default();
        panic!("brisk did not start ({why}); args {args:?}\nstderr: {err}");
    };
    let started = poll(WAIT_LIMIT, || {
        let err = fs::read_to_string(stderr_path).unwrap_or_default();
        // Only whole lines: the file may end in the middle of one.
        let whole = &err[..err.rfind('\n').map_or(0, |i| i + 1)];
        let Some(addrs) = whole
            .lines()
            .filter_map(|l| {
                let l = l.strip_prefix("brisk: listening on ")?;
                l.strip_prefix("http://")
                    .or_else(|| l.strip_prefix("https://"))
            })
            // (A PROXY protocol listener's line ends in a note.)
            .map(|a| a.split(' ').next()?.strip_suffix('/')?.parse().ok())
            .collect::<Option<Vec<SocketAddr>>>()
        else {
            return Some(Err("a listening line without an address".to_string()));
        };
        if addrs.len() >= want {
            if !whole.lines().any(|l| l.starts_with("brisk: serving ")) {
                return Some(Err("no serving line before the listening lines".to_string()));
            }
            return Some(Ok(addrs));
        }
        match child.try_wait() {
            Ok(Some(st)) => Some(Err(format!("exited with {st}"))),
            _ => None,
        }
    });
    match started {
        Some(Ok(addrs)) => (child, addrs),
        Some(Err(why)) => fail(&mut child, &why),
        None => fail(
            &mut child,
            &format!("no listening line within {WAIT_LIMIT:?}"),
        ),
    }
}

/// Waits up to `limit` for `child` to exit; past it, kills and reaps it
/// and returns `None`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let status = poll(limit, || child.try_wait().ok().flatten());
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    status
}

/// A child process killed (and reaped) on drop.
pub struct KillOnDrop(pub Child);

/// HAProxy (the tests that need it check it is installed) in the
/// foreground with `config`, written to `dir/haproxy.cfg`; its messages
/// go to `dir/haproxy.err`. Stopped when dropped.
pub fn haproxy(dir: &Path, config: &str) -> KillOnDrop {
    let cfg = dir.join("haproxy.cfg");
    fs::write(&cfg, config).expect("write haproxy.cfg");
    let err = fs::File::create(dir.join("haproxy.err")).expect("haproxy.err");
    KillOnDrop(
        Command::new("haproxy")
            .args(["-db", "-f", cfg.to_str().expect("a path")])
            .stdout(Stdio::null())
            .stderr(Stdio::from(err))
            .spawn()
            .expect("start haproxy"),
    )
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running brisk; killed on drop.
pub struct Server {
    child: Option<Child>,
    /// Port of the first listener (127.0.0.1).
    pub port: u16,
    /// Every listener, in the order brisk printed them.
    pub addrs: Vec<SocketAddr>,
    pub root: PathBuf,
    pub access_path: PathBuf,
    pub stderr_path: PathBuf,
    /// Where the server's stdout goes (the access log with `-`).
    pub stdout_path: PathBuf,
    pub base: TempDir,
}

impl Server {
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("child").id()
    }

    /// A new connection.
    /// Sends `slow` (a request the server takes long to answer) and then
    /// `quick` on two connections accepted beforehand, one right after
    /// the other, and reads `quick`'s answer: that connection (patient:
    /// a loaded machine may take seconds) and that answer.
    pub fn slow_then_quick(&self, slow: &[u8], quick: &[u8]) -> (Client, Response) {
        let (mut first, mut second) = (self.connect(), self.connect());
        first.wait_until_accepted();
        second.wait_until_accepted();
        let patient = Some(Duration::from_secs(60));
        first.stream.set_read_timeout(patient).expect("timeout");
        first.send(slow);
        second.send(quick);
        let answer = second.response();
        (first, answer)
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.addr())
    }

    /// A new TLS 1.3 connection to `a.test` (see [`tls::client_conn`]).
    #[cfg(feature = "tls")]
    pub fn connect_tls(&self) -> Client {
        self.connect_tls_to(self.addr())
    }

    /// A new TLS 1.3 connection to `a.test` at `addr`, one of the
    /// server's listeners.
    #[cfg(feature = "tls")]
    pub fn connect_tls_to(&self, addr: SocketAddr) -> Client {
        Client::connect_tls(addr, tls::client_conn("a.test"))
    }

    /// Sends `raw` on a new connection and reads one response (not to a
    /// HEAD request).
    pub fn request(&self, raw: &[u8]) -> Response {
        let mut c = self.connect();
        c.send(raw);
        c.response()
    }

    /// `GET path` with `Connection: close`; reads one response and checks
    /// that the connection then closes.
    pub fn get(&self, path: &str) -> Response {
        self.get_with(path, "")
    }

    /// Like [`Server::get`] with extra header lines (each ending in CRLF).
    pub fn get_with(&self, path: &str, headers: &str) -> Response {
        let mut c = self.connect();
        c.send(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n")
                .as_bytes(),
        );
        let r = c.response();
        c.expect_closed();
        r
    }

    /// Sends SIGTERM (or another signal).
    pub fn signal(&self, sig: i32) {
        let pid = self.pid() as libc::pid_t;
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        let rc = unsafe { libc::kill(pid, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig})");
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        poll(timeout, || {
            self.child
                .as_mut()
                .expect("child")
                .try_wait()
                .ok()
                .flatten()
        })
    }

    /// Whether the server process is still running (not exited).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// The server's resident set size in KiB (`VmRSS` in
    /// `/proc/<pid>/status`), or 0 when it cannot be read.
    pub fn rss_kib(&self) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// CPU time (user + system) the server has used so far, from
    /// `/proc/<pid>/stat`, in clock ticks (usually 1/100 s).
    pub fn cpu_ticks(&self) -> u64 {
        let stat = fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // The command name may hold spaces: count fields after its ')'.
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let f: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 and 15 of the whole line are 12 and 13 after ')'.
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        ticks(11) + ticks(12)
    }

    /// How many descriptors the server has open (`/proc/<pid>/fd`).
    pub fn fd_count(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// How many pipe ends the server has open (those of its splices
    /// among them: a worker keeps a few for the next ones).
    pub fn pipe_ends(&self) -> usize {
        let Ok(dir) = fs::read_dir(format!("/proc/{}/fd", self.pid())) else {
            return 0;
        };
        dir.filter_map(Result::ok)
            .filter_map(|e| fs::read_link(e.path()).ok())
            .filter(|l| l.to_string_lossy().starts_with("pipe:"))
            .count()
    }

    /// Everything the server wrote to stdout so far.
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout_path).unwrap_or_default()
    }

    /// How many threads the server runs (`/proc/<pid>/task`): the workers
    /// of every generation still alive, the log writer, the main thread.
    pub fn thread_count(&self) -> usize {
        fs::read_dir(format!("/proc/{}/task", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Waits ([`WAIT_LIMIT`] at most) until a line of the server's error
    /// log (its stderr) contains `text`; returns that line.
    pub fn wait_stderr_line(&self, text: &str) -> String {
        let found = poll(WAIT_LIMIT, || {
            let err = self.stderr();
            // Only whole lines: the file may end in the middle of one.
            let whole = &err[..err.rfind('\n').map_or(0, |i| i + 1)];
            whole.lines().find(|l| l.contains(text)).map(str::to_string)
        });
        found.unwrap_or_else(|| {
            panic!(
                "no line with {text:?} in the error log within {WAIT_LIMIT:?}; it holds: {}",
                self.stderr()
            )
        })
    }

    /// Rotates the access log as logrotate does: renames it to
    /// `access.log.1` and sends SIGUSR1; returns once brisk has opened a
    /// new `access.log` (lines from then on go there), with the rotated
    /// file's path.
    pub fn rotate_access_log(&self) -> PathBuf {
        let rotated = self.base.path.join("access.log.1");
        fs::rename(&self.access_path, &rotated).expect("rotate the access log");
        self.signal(libc::SIGUSR1);
        let reopened = poll(WAIT_LIMIT, || self.access_path.exists().then_some(()));
        if reopened.is_none() {
            panic!(
                "no new access log within {WAIT_LIMIT:?} of SIGUSR1; stderr: {}",
                self.stderr()
            );
        }
        rotated
    }

    /// Whether a new connection to the first listener is refused: the
    /// server has closed every copy of its listening sockets (it is
    /// stopping, or gone).
    pub fn refuses_connections(&self) -> bool {
        match TcpStream::connect_timeout(&self.addr(), IO_TIMEOUT) {
            Ok(_) => false,
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => true,
            // Queued on a listening socket as it closed: closing, maybe
            // not every copy yet.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => false,
            Err(e) => panic!("connect to {}: {e}", self.addr()),
        }
    }

    /// How many connections to its listeners the server holds (has
    /// accepted and not closed), from the kernel's TCP table.
    pub fn held_connections(&self) -> usize {
        tcp_sockets()
            .iter()
            .filter(|t| self.addrs.contains(&t.local) && t.state != TCP_LISTEN && t.inode != 0)
            .count()
    }

    /// Waits ([`WAIT_LIMIT`] at most) until a line of the access log
    /// satisfies `pred`; returns that line.
    pub fn wait_access_line(&self, pred: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        let found = poll(WAIT_LIMIT, || {
            let data = fs::read(&self.access_path).unwrap_or_default();
            data.split(|&b| b == b'\n')
                .find(|l| pred(l))
                .map(<[u8]>::to_vec)
        });
        found.unwrap_or_else(|| {
            panic!(
                "no matching access log line within {WAIT_LIMIT:?}; log so far: {:?}",
                String::from_utf8_lossy(&fs::read(&self.access_path).unwrap_or_default())
            )
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A client socket to `addr` (IPv4) with a receive buffer of `rcvbuf`
/// bytes, set before connecting so that the window is sized to it;
/// `force`: beyond `net.core.rmem_max` (`SO_RCVBUFFORCE`, root only:
/// `None` when refused).
pub fn connect_rcvbuf(addr: SocketAddr, rcvbuf: i32, force: bool) -> Option<TcpStream> {
    let SocketAddr::V4(v4) = addr else {
        panic!("an IPv4 address: {addr}");
    };
    let opt = if force {
        libc::SO_RCVBUFFORCE
    } else {
        libc::SO_RCVBUF
    };
    // SAFETY: plain socket calls on a descriptor this function owns (a
    // `TcpStream` once connected, closed by `OwnedFd` before); the
    // address is a valid sockaddr_in.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket");
        let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
        let r = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            &rcvbuf as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
        if r != 0 {
            return None;
        }
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as libc::sa_family_t;
        sa.sin_port = v4.port().to_be();
        sa.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
        let r = libc::connect(
            fd,
            &sa as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(r, 0, "connect to {addr}");
        let stream = TcpStream::from(owned);
        stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        stream.set_write_timeout(Some(IO_TIMEOUT)).expect("timeout");
        Some(stream)
    }
}

/// One HTTP response as received.
#[derive(Debug, Clone)]
pub struct Response {
    /// Every byte of the response, head and body.
    pub raw: Vec<u8>,
    /// The head up to and including the blank line.
    pub head: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The value of the first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The head with the `Date` value replaced by [`DATE`], after checking
    /// that it is a valid IMF-fixdate.
    pub fn masked_head(&self) -> String {
        let date = self
            .header("date")
            .unwrap_or_else(|| panic!("no Date header in {:?}", self.head));
        assert_imf_fixdate(date);
        self.head.replacen(
            &format!("\r\nDate: {date}\r\n"),
            &format!("\r\nDate: {DATE}\r\n"),
            1,
        )
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Asserts that `s` is an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn assert_imf_fixdate(s: &str) {
    let t = httpdate::parse_http_date(s).unwrap_or_else(|e| panic!("bad date {s:?}: {e}"));
    // Only the IMF-fixdate form survives a round trip unchanged.
    assert_eq!(httpdate::fmt_http_date(t), s, "not an IMF-fixdate: {s:?}");
}

/// A client connection that keeps unread bytes between responses.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
    eof: bool,
    /// This end's address and the server's, kept: the socket forgets its
    /// peer once the connection is reset.
    ends: (SocketAddr, SocketAddr),
    /// Over TLS: the client's record layer (reads and writes go through
    /// it; `stream` carries the records).
    #[cfg(feature = "tls")]
    pub tls: Option<Box<rustls::ClientConnection>>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
        stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        stream.set_write_timeout(Some(IO_TIMEOUT)).expect("timeout");
        Client::over(stream)
    }

    /// A client over `stream`, a connection made by the test.
    pub fn over(stream: TcpStream) -> Client {
        let ends = (
            stream.local_addr().expect("local address"),
            stream.peer_addr().expect("peer address"),
        );
        Client {
            stream,
            buf: Vec::new(),
            eof: false,
            ends,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// A TLS connection with `conn` (see [`tls::client_conn`]), its
    /// handshake done.
    #[cfg(feature = "tls")]
    pub fn connect_tls(addr: SocketAddr, conn: rustls::ClientConnection) -> Client {
        let mut c = Client::connect(addr);
        c.start_tls(conn);
        c
    }

    /// Makes the handshake of `conn` (which may have written its first
    /// bytes already) on this connection, which then speaks TLS.
    #[cfg(feature = "tls")]
    pub fn start_tls(&mut self, conn: rustls::ClientConnection) {
        let mut conn = Box::new(conn);
        while conn.is_handshaking() {
            conn.complete_io(&mut self.stream).expect("TLS handshake");
        }
        self.tls = Some(conn);
    }

    /// With `tls`, makes a TLS handshake on this connection for the test
    /// certificate's name `a.test` (a test over TLS needs the feature).
    pub fn tls_if(&mut self, tls: bool) {
        #[cfg(feature = "tls")]
        if tls {
            self.start_tls(tls::client_conn("a.test"));
        }
        #[cfg(not(feature = "tls"))]
        assert!(!tls, "a test over TLS without the feature tls");
    }

    /// Writes `bytes`, through TLS if the connection speaks it.
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        #[cfg(feature = "tls")]
        if let Some(conn) = self.tls.as_mut() {
            return rustls::Stream::new(&mut **conn, &mut self.stream).write_all(bytes);
        }
        self.stream.write_all(bytes)
    }

    /// Reads what comes, through TLS if the connection speaks it (a
    /// close without close_notify is an end, as for curl).
    fn read_some(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        #[cfg(feature = "tls")]
        if let Some(conn) = self.tls.as_mut() {
            return match rustls::Stream::new(&mut **conn, &mut self.stream).read(buf) {
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(0),
                r => r,
            };
        }
        self.stream.read(buf)
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.write_all(bytes).expect("send request");
    }

    /// Sends `bytes` if the server still reads them: false once it has
    /// closed (a request answered before its body's end, as a 413 is).
    pub fn try_send(&mut self, bytes: &[u8]) -> bool {
        self.write_all(bytes).is_ok()
    }

    /// This end's address and the server's.
    pub fn ends(&self) -> (SocketAddr, SocketAddr) {
        self.ends
    }

    /// The server's end of this connection in the kernel's TCP table.
    pub fn server_side(&self) -> Option<TcpSocket> {
        let (local, peer) = self.ends();
        tcp_socket(peer, local)
    }

    /// Waits until the server has accepted this connection (its process
    /// holds the socket).
    pub fn wait_until_accepted(&self) {
        wait_until("the server to accept the connection", || {
            self.server_side().is_some_and(|t| t.inode != 0)
        });
    }

    /// Waits until the server has accepted this connection and read every
    /// byte sent on it so far (its kernel acknowledged them all and none
    /// waits in its receive queue), or has closed its end after reading.
    /// For a request that must arrive in pieces (each piece a read of its
    /// own), or a server that must be in the middle of a request when
    /// something else happens.
    pub fn wait_until_read(&self) {
        let (local, peer) = self.ends();
        wait_until(
            "the server to read everything sent on the connection",
            || {
                let acked = tcp_socket(local, peer).is_some_and(|m| m.tx_queue == 0);
                acked
                    && match tcp_socket(peer, local) {
                        // Open: accepted (brisk holds it), nothing unread.
                        Some(t) if t.state == TCP_ESTABLISHED || t.state == TCP_SYN_RECV => {
                            t.inode != 0 && t.rx_queue == 0
                        }
                        // Half-closed by the client: brisk holds it still.
                        Some(t) if t.state == TCP_CLOSE_WAIT => t.inode != 0 && t.rx_queue == 0,
                        // Closed by brisk (FIN_WAIT…), or gone.
                        _ => true,
                    }
            },
        );
    }

    /// Waits until the server's kernel has acknowledged every byte sent
    /// on this connection (whether or not brisk has read them: a stopped
    /// server's too).
    pub fn wait_until_delivered(&self) {
        let (local, peer) = self.ends();
        wait_until("the server's kernel to take everything sent", || {
            tcp_socket(local, peer).is_some_and(|m| m.tx_queue == 0)
        });
    }

    /// Whether nothing the server sent waits to be read (not yet
    /// answered, for one), without waiting.
    pub fn nothing_came(&self) -> bool {
        self.stream.set_nonblocking(true).expect("nonblocking");
        let peeked = self.stream.peek(&mut [0u8; 1]);
        self.stream.set_nonblocking(false).expect("blocking");
        matches!(peeked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Reads more bytes; returns false at end of stream (or reset).
    fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        let mut tmp = [0u8; 65536];
        match self.read_some(&mut tmp) {
            Ok(0) => {
                self.eof = true;
                false
            }
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => true,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!(
                    "read timed out after {:?}; unread so far: {:?}",
                    self.stream.read_timeout().ok().flatten(),
                    String::from_utf8_lossy(&self.buf)
                )
            }
            Err(_) => {
                // A reset counts as the end of the stream.
                self.eof = true;
                false
            }
        }
    }

    /// Reads one response to a non-HEAD request.
    pub fn response(&mut self) -> Response {
        self.read_response(false)
    }

    /// Reads one response to a HEAD request (no body whatever the headers).
    pub fn head_response(&mut self) -> Response {
        self.read_response(true)
    }

    /// Reads one complete response: Content-Length, chunked or
    /// close-delimited; no body for HEAD, 1xx, 204 and 304.
    pub fn read_response(&mut self, head_only: bool) -> Response {
        let head_end = loop {
            if let Some(p) = find(&self.buf, b"\r\n\r\n") {
                break p + 4;
            }
            if !self.fill() {
                panic!(
                    "connection closed before a complete response head; got {:?}",
                    String::from_utf8_lossy(&self.buf)
                );
            }
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec())
            .unwrap_or_else(|_| panic!("non-UTF-8 head {:?}", &self.buf[..head_end]));
        let mut lines = head[..head_end - 4].split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status: u16 = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|s| s.get(..3))
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l
                    .split_once(": ")
                    .unwrap_or_else(|| panic!("bad header line {l:?}"));
                (n.to_string(), v.to_string())
            })
            .collect();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let bodiless = head_only || status / 100 == 1 || status == 204 || status == 304;
        let (body, end) = if bodiless {
            (Vec::new(), head_end)
        } else if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            self.read_chunked(head_end)
        } else if let Some(cl) = get("content-length") {
            let n: usize = cl
                .parse()
                .unwrap_or_else(|_| panic!("bad Content-Length {cl:?}"));
            while self.buf.len() < head_end + n {
                if !self.fill() {
                    panic!(
                        "connection closed after {} of {} body bytes",
                        self.buf.len() - head_end,
                        n
                    );
                }
            }
            (self.buf[head_end..head_end + n].to_vec(), head_end + n)
        } else {
            while self.fill() {}
            (self.buf[head_end..].to_vec(), self.buf.len())
        };
        let raw: Vec<u8> = self.buf.drain(..end).collect();
        if let Some(d) = get("date") {
            assert_imf_fixdate(&d);
        }
        Response {
            raw,
            head,
            status,
            headers,
            body,
        }
    }

    /// Decodes a chunked body starting at `start`; returns it and where
    /// the message ends.
    fn read_chunked(&mut self, start: usize) -> (Vec<u8>, usize) {
        let mut pos = start;
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(p) = find(&self.buf[pos..], b"\r\n") {
                    break pos + p;
                }
                assert!(self.fill(), "closed inside a chunked body");
            };
            let line = String::from_utf8_lossy(&self.buf[pos..line_end]).into_owned();
            let size_hex = line.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_hex, 16)
                .unwrap_or_else(|_| panic!("bad chunk size line {line:?}"));
            pos = line_end + 2;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    let end = loop {
                        if let Some(p) = find(&self.buf[pos..], b"\r\n") {
                            break pos + p;
                        }
                        assert!(self.fill(), "closed inside trailers");
                    };
                    let empty = end == pos;
                    pos = end + 2;
                    if empty {
                        return (body, pos);
                    }
                }
            }
            while self.buf.len() < pos + size + 2 {
                assert!(self.fill(), "closed inside a chunk");
            }
            body.extend_from_slice(&self.buf[pos..pos + size]);
            assert_eq!(&self.buf[pos + size..pos + size + 2], b"\r\n", "chunk end");
            pos += size + 2;
        }
    }

    /// Asserts that the server closes the connection without sending
    /// anything more (within [`IO_TIMEOUT`]).
    pub fn expect_closed(&mut self) {
        while self.fill() {}
        assert!(
            self.buf.is_empty(),
            "unexpected bytes before close: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }

    /// Reads everything until the server closes.
    /// Reads until at least `n` bytes have arrived; they stay unread.
    pub fn read_at_least(&mut self, n: usize) {
        while self.buf.len() < n {
            assert!(self.fill(), "closed after {} bytes", self.buf.len());
        }
    }

    pub fn read_to_end(&mut self) -> Vec<u8> {
        while self.fill() {}
        std::mem::take(&mut self.buf)
    }

    /// Bytes received but not yet consumed by a response.
    pub fn unread(&self) -> &[u8] {
        &self.buf
    }

    /// Asserts that nothing arrives within `wait` and the connection stays
    /// open (used where the server must keep waiting for more input).
    pub fn expect_silence(&mut self, wait: Duration) {
        self.stream.set_read_timeout(Some(wait)).expect("timeout");
        let mut tmp = [0u8; 1024];
        let r = self.read_some(&mut tmp);
        self.stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("timeout");
        match r {
            Ok(0) => panic!("connection closed; expected it to stay open"),
            Ok(n) => panic!("unexpected bytes: {:?}", String::from_utf8_lossy(&tmp[..n])),
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                "unexpected error {e}"
            ),
        }
    }
}

/// Waits until the server has closed its end of the connection between
/// `client` and `server` (the ends as [`Client::ends`] gave them, before
/// the client went away): its process no longer holds the socket.
///
/// Gone means gone in three reads of the table in a row: the kernel lists
/// /proc/net/tcp a page per `read`, each resuming at an offset into a
/// table that other connections (other tests) may have left meanwhile, so
/// one read can skip a socket that is there all along; it then looked
/// closed early (CI: tests/it/embedded.rs's next request found the share of
/// a body its connection held not freed yet, and was refused 503).
pub fn wait_until_server_closed(client: SocketAddr, server: SocketAddr) {
    let mut gone_in_a_row = 0;
    wait_until("the server to close its end of the connection", || {
        if tcp_socket(server, client).is_none_or(|t| t.inode == 0) {
            gone_in_a_row += 1;
        } else {
            gone_in_a_row = 0;
        }
        gone_in_a_row >= 3
    });
}

/// Position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads exactly `n` responses from one connection after one write.
pub fn exchange(server: &Server, raw: &[u8], head_only: &[bool]) -> (Client, Vec<Response>) {
    let mut c = server.connect();
    c.send(raw);
    let rs = head_only.iter().map(|&h| c.read_response(h)).collect();
    (c, rs)
}

/// A deterministic pseudo-random byte pattern of `len` bytes.
pub fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// Runs `brisk` with `args` to completion (10 s at most) and returns
/// (exit status, stdout, stderr).
pub fn run_brisk(args: &[&str]) -> (ExitStatus, String, String) {
    let dir = TempDir::new("run");
    let out = dir.path.join("out");
    let err = dir.path.join("err");
    let mut child = Command::new(brisk_exe())
        .args(root_args())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(fs::File::create(&out).expect("out")))
        .stderr(Stdio::from(fs::File::create(&err).expect("err")))
        .spawn()
        .expect("spawn brisk");
    let status = wait_exit(&mut child, WAIT_LIMIT)
        .unwrap_or_else(|| panic!("brisk {args:?} did not exit within {WAIT_LIMIT:?}"));
    (
        status,
        fs::read_to_string(&out).unwrap_or_default(),
        fs::read_to_string(&err).unwrap_or_default(),
    )
}

/// Chunked bodies whose framing is invalid (RFC 9112 §7.1): each must be
/// refused with 400 (or 413 where a chunk size alone is over
/// `limits.max_body`), wherever it is sent (tests/it/smuggling.rs for static
/// routes, tests/it/cgi/bodies.rs for CGI programs).
pub const BAD_CHUNK_FRAMING: &[&[u8]] = &[
    b"0x5\r\nhello\r\n0\r\n\r\n",
    b"-1\r\nhello\r\n0\r\n\r\n",
    b"+5\r\nhello\r\n0\r\n\r\n",
    b"5 ;\r\nhello\r\n0\r\n\r\n",
    b"5 \r\nhello\r\n0\r\n\r\n",
    b" 5\r\nhello\r\n0\r\n\r\n",
    b"\r\nhello\r\n0\r\n\r\n",
    b"g\r\nhello\r\n0\r\n\r\n",
    b"5\nhello\r\n0\r\n\r\n",
    b"5\rhello\r\n0\r\n\r\n",
    b"5\r\nhelloXX\r\n0\r\n\r\n",
    b"5\r\nhello\n0\r\n\r\n",
    b"5\r\nhello\r\n0\n\n",
    // 17 hex digits: more than a u64 holds (and more than anyone sends).
    b"00000000000000005\r\nhello\r\n0\r\n\r\n",
    b"10000000000000000\r\nhello\r\n0\r\n\r\n",
    b"fffffffffffffffff\r\nhello\r\n0\r\n\r\n",
    b"5;\r\nhello\r\n0\r\n\r\n",
    b"5;=x\r\nhello\r\n0\r\n\r\n",
    b"5;a=\"unterminated\r\nhello\r\n0\r\n\r\n",
    b"5;a\x00b\r\nhello\r\n0\r\n\r\n",
];

/// Chunked bodies whose trailer section is malformed: 400 as well.
pub const BAD_TRAILERS: &[&[u8]] = &[
    b"0\r\nX-A: 1\r\n folded\r\n\r\n",
    b"0\r\nX-A : 1\r\n\r\n",
    b"0\r\nX-A: 1\n\r\n",
    b"0\r\nX-A: 1\r\n\n",
    b"0\r\nX-A: 1\rX: 2\r\n\r\n",
    b"0\r\nX-A: \x00\r\n\r\n",
    b"0\r\nNo-Colon\r\n\r\n",
    b"0\r\n: empty name\r\n\r\n",
];

/// Runs `cmd` with its output captured, for at most `limit` (then it is
/// killed and the test fails); `None` if the tool is not installed.
pub fn run_for(cmd: &mut Command, limit: Duration) -> Option<std::process::Output> {
    run_with_input(cmd, Stdio::null(), limit)
}

/// [`run_for`] with `stdin` as the command's standard input.
pub fn run_with_input(
    cmd: &mut Command,
    stdin: Stdio,
    limit: Duration,
) -> Option<std::process::Output> {
    let child = cmd
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("spawn {cmd:?}: {e}"),
    };
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Some(out.expect("wait")),
        Err(_) => {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("{cmd:?} did not finish within {limit:?}");
        }
    }
}

/// A Basic `Authorization` value for `user` and `pass` (RFC 7617), by a
/// tiny base64 encoder of the tests' own, so that they share no code with
/// the server.
pub fn basic_auth(user: &str, pass: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let raw = format!("{user}:{pass}").into_bytes();
    let mut out = String::new();
    for chunk in raw.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

/// `brisk --config <toml> --check-config` in a fresh directory (with a
/// `root/` the document may name): whether it passed, and its stdout and
/// stderr.
pub fn check_config(toml: &str) -> (bool, String, String) {
    let dir = TempDir::new("check");
    fs::create_dir(dir.path.join("root")).expect("create root");
    let cfg = dir.path.join("brisk.toml");
    write_file(&cfg, toml.as_bytes());
    let (st, out, err) = run_brisk(&["--config", cfg.to_str().expect("utf-8"), "--check-config"]);
    (st.success(), out, err)
}

/// `data` as a chunked body in chunks of `piece` bytes, with the last chunk.
pub fn chunked_body(data: &[u8], piece: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / piece.max(1) * 8 + 8);
    for p in data.chunks(piece.max(1)) {
        out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// GETs `path` of `s` (whose `buffer_answer` is 1 MiB, its `temp_dir`
/// `dir`) on a connection that then stops reading; checks that the
/// unnamed file the answer is held in, once as full as it may be, is
/// past 1 MiB (its first 64 KiB held in memory) by two pieces at most
/// (a ring of what may be held and two pieces); then reads the answer,
/// and checks that the file was closed with it.
pub fn held_one_mib(s: &Server, dir: &Path, path: &str) -> Response {
    let mut slow = s.connect();
    slow.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    slow.read_at_least(1000);
    let held = || open_file_in(s.pid(), dir);
    let size = wait_for("1 MiB held", || {
        held()
            .map(|m| m.len())
            .filter(|&n| n >= (1 << 20) - (64 << 10))
    });
    assert!(size <= (1 << 20) + (128 << 10), "{size} bytes held");
    let r = slow.response();
    assert!(held().is_none(), "the file is closed with its answer");
    r
}

/// A file process `pid` holds open beneath `dir` (an unnamed one too,
/// by `/proc/PID/fd`): its metadata, if there is one.
pub fn open_file_in(pid: u32, dir: &Path) -> Option<fs::Metadata> {
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    fds.flatten().find_map(|fd| {
        let to = fs::read_link(fd.path()).ok()?;
        to.starts_with(dir).then(|| fs::metadata(fd.path()).ok())?
    })
}

/// Compiles the C file `src` to the program `out` with `cc -O2`; true when
/// it is there. Where no `cc` is on PATH the test says so loudly (`what`
/// names what goes untested) and gets false; a compile error fails it.
pub fn cc(src: &Path, out: &Path, what: &str) -> bool {
    match Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(out)
        .arg(src)
        .output()
    {
        Ok(o) => {
            assert!(
                o.status.success(),
                "cc {} failed: {}",
                src.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            true
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            skip(&format!("no `cc` on PATH: {what} is not tried"));
            false
        }
        Err(e) => panic!("cannot run cc: {e}"),
    }
}

/// Standard base64 with padding (RFC 4648 §4).
pub fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
