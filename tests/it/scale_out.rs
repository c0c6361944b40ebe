//! Scale-out behind HAProxy (the Debian package): three brisk instances
//! on 127.0.0.1 behind one HAProxy that speaks the PROXY protocol to them
//! and checks their readiness (`/-/ready`), while a bounded load runs and
//! each instance in turn is (a) stopped and started again, (b) reloaded,
//! (c) upgraded to a new binary in place. Every request succeeds, and
//! each instance's access log names the real client (127.0.0.2, where
//! HAProxy itself connects from 127.0.0.1).
use crate::common;

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;

/// One brisk behind HAProxy: its PROXY protocol port and its files.
struct Instance {
    n: usize,
    port: u16,
    dir: PathBuf,
    /// The process now serving (after an upgrade, not our child).
    pid: i32,
    child: Option<Child>,
}

impl Instance {
    fn config(&self) -> PathBuf {
        self.dir.join(format!("brisk-{}.toml", self.n))
    }

    fn error_log(&self) -> String {
        fs::read_to_string(self.dir.join(format!("error-{}.log", self.n))).unwrap_or_default()
    }

    fn start(&mut self) {
        let stderr = self.dir.join(format!("stderr-{}", self.n));
        let child = Command::new(crate::common::brisk_exe())
            .args(root_args())
            .args(["--config", self.config().to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(fs::File::create(&stderr).unwrap()))
            .spawn()
            .expect("spawn brisk");
        self.pid = child.id() as i32;
        self.child = Some(child);
        wait_until("brisk to listen", || {
            fs::read_to_string(&stderr).is_ok_and(|t| t.contains("brisk: listening on"))
        });
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the brisk this test started (or its successor).
        unsafe { libc::kill(self.pid, sig) };
    }

    fn gone(&mut self) -> bool {
        match &mut self.child {
            Some(c) if c.id() as i32 == self.pid => c.try_wait().ok().flatten().is_some(),
            _ => !Path::new(&format!("/proc/{}", self.pid)).exists(),
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// HAProxy's view of server `name` in backend `briskes` (`UP`, `DOWN`,
/// …), through its stats socket.
fn haproxy_state(sock: &Path, name: &str) -> String {
    let Ok(mut s) = UnixStream::connect(sock) else {
        return String::new();
    };
    let _ = s.write_all(b"show stat\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.lines()
        .find(|l| l.starts_with(&format!("briskes,{name},")))
        .and_then(|l| l.split(',').nth(17))
        .unwrap_or_default()
        .to_string()
}

/// One GET through HAProxy from 127.0.0.2, on a keep-alive connection.
fn get(front: SocketAddr, conn: &mut Option<TcpStream>) -> Result<(), String> {
    if conn.is_none() {
        let sock = connect_as_client(front)?;
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        *conn = Some(sock);
    }
    let s = conn.as_mut().unwrap();
    s.write_all(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err(format!("closed after {} bytes", got.len()));
        }
        got.extend_from_slice(&buf[..n]);
        if got.ends_with(b"\r\n\r\nscaled\n") {
            break;
        }
        if got.len() > 100_000 {
            return Err("too long".into());
        }
    }
    let text = String::from_utf8_lossy(&got);
    if !text.starts_with("HTTP/1.1 200 OK\r\n") {
        return Err(format!("answer {text:?}"));
    }
    if text
        .to_ascii_lowercase()
        .contains("\r\nconnection: close\r\n")
    {
        *conn = None;
    }
    Ok(())
}

/// A TCP connection to `to` from 127.0.0.2 (the "real client").
fn connect_as_client(to: SocketAddr) -> Result<TcpStream, String> {
    // SAFETY: plain socket calls on a descriptor this function owns; the
    // sockaddr_in values are fully initialised.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err("socket".into());
        }
        use std::os::fd::FromRawFd;
        let stream = TcpStream::from_raw_fd(fd);
        let addr = |ip: [u8; 4], port: u16| libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(ip),
            },
            sin_zero: [0; 8],
        };
        let from = addr([127, 0, 0, 2], 0);
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(fd, (&from as *const libc::sockaddr_in).cast(), len) != 0 {
            return Err(format!("bind: {}", std::io::Error::last_os_error()));
        }
        let SocketAddr::V4(v4) = to else {
            return Err("v4".into());
        };
        let dest = addr(v4.ip().octets(), v4.port());
        if libc::connect(fd, (&dest as *const libc::sockaddr_in).cast(), len) != 0 {
            return Err(format!("connect: {}", std::io::Error::last_os_error()));
        }
        Ok(stream)
    }
}

#[test]
fn three_instances_behind_haproxy_lose_no_request() {
    if Command::new("haproxy").arg("-v").output().is_err() {
        skip("no haproxy (Debian: haproxy; scripts/test installs it as root)");
        return;
    }
    let dir = TempDir::new("scale");
    write_file(&dir.path.join("root/index.html"), b"scaled\n");
    let mut instances: Vec<Instance> = (0..3)
        .map(|n| Instance {
            n,
            port: free_port(),
            dir: dir.path.clone(),
            pid: 0,
            child: None,
        })
        .collect();
    for i in &instances {
        fs::write(
            i.config(),
            format!(
                "root = \"{root}\"\nworkers = 2\n[proxy]\nlisten = \"127.0.0.1:{port}\"\n[timeouts]\nstop_delay = \"1s\"\nshutdown = \"5s\"\n[log]\naccess = \"{d}/access-{n}.log\"\nerror = \"{d}/error-{n}.log\"\n[[handlers]]\npath = \"/-/ready\"\nhandler = \"ready\"\n",
                root = dir.path.join("root").display(),
                port = i.port,
                d = dir.path.display(),
                n = i.n
            ),
        )
        .unwrap();
    }
    for i in &mut instances {
        i.start();
    }
    let front: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let sock = dir.path.join("haproxy.sock");
    let servers: String = instances
        .iter()
        .map(|i| format!("    server b{} 127.0.0.1:{}\n", i.n, i.port))
        .collect();
    let _haproxy = haproxy(
        &dir.path,
        &format!(
            "global\n    stats socket {sock} mode 600 level admin\n    maxconn 2000\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n    retries 3\n    option redispatch 1\n    retry-on all-retryable-errors\n\
frontend web\n    bind {front}\n    default_backend briskes\n\
backend briskes\n    balance roundrobin\n    option httpchk GET /-/ready\n    http-check expect status 200\n    default-server check inter 100ms fall 1 rise 2 send-proxy check-send-proxy\n{servers}",
            sock = sock.display()
        ),
    );
    let all_up = |instances: &[Instance]| {
        instances
            .iter()
            .all(|i| haproxy_state(&sock, &format!("b{}", i.n)) == "UP")
    };
    wait_until("HAProxy to see every brisk up", || all_up(&instances));

    // The load: four clients, keep-alive, until told to stop (bounded).
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let (mut conn, mut ok, mut errors) = (None, 0u32, Vec::new());
                for _ in 0..500_000u32 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    match get(front, &mut conn) {
                        Ok(()) => ok += 1,
                        Err(e) => {
                            conn = None;
                            errors.push(e);
                        }
                    }
                }
                (ok, errors)
            })
        })
        .collect();

    // (a) Stop each and start it again.
    for k in 0..3 {
        let i = &mut instances[k];
        i.signal(libc::SIGTERM);
        wait_until_within(Duration::from_secs(20), "brisk to stop", || i.gone());
        i.start();
        wait_until("HAProxy to see it up again", || all_up(&instances));
    }
    // (b) Reload each.
    for i in &instances {
        let before = i.error_log().matches("configuration reloaded").count();
        i.signal(libc::SIGHUP);
        wait_until("the reload", || {
            i.error_log().matches("configuration reloaded").count() > before
        });
    }
    // (c) Upgrade each binary in place.
    for k in 0..3 {
        let i = &mut instances[k];
        let old = i.pid;
        let done = "serves; this one finishes";
        let before = i.error_log().matches(done).count();
        i.signal(libc::SIGUSR2);
        let line = wait_for("the upgrade", || {
            let log = i.error_log();
            let lines: Vec<&str> = log.lines().filter(|l| l.contains(done)).collect();
            (lines.len() > before).then(|| lines[lines.len() - 1].to_string())
        });
        let at = line.find("(pid ").unwrap() + 5;
        i.pid = line[at..].split(')').next().unwrap().parse().unwrap();
        assert_ne!(i.pid, old);
        wait_until_within(Duration::from_secs(30), "the old brisk to exit", || {
            i.child
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some())
        });
        wait_until("HAProxy to see it up", || all_up(&instances));
    }

    stop.store(true, Ordering::Relaxed);
    let (mut total, mut errors) = (0, Vec::new());
    for c in clients {
        let (ok, e) = c.join().unwrap();
        total += ok;
        errors.extend(e);
    }
    eprintln!("{total} requests through HAProxy while each brisk was restarted, reloaded and upgraded; {} failed", errors.len());
    assert!(
        errors.is_empty(),
        "{} failed, first: {:?}",
        errors.len(),
        errors.first()
    );
    assert!(total > 300, "only {total} requests");
    // Every instance served, and logged the real client, not HAProxy.
    for i in &instances {
        let log = fs::read_to_string(dir.path.join(format!("access-{}.log", i.n))).unwrap();
        let served: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("GET /index.html"))
            .collect();
        assert!(!served.is_empty(), "instance {} served nothing", i.n);
        assert!(served.iter().all(|l| l.starts_with("127.0.0.2 ")), "{log}");
    }
}
