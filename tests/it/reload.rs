//! SIGHUP: the configuration file is read again and served by a new set
//! of workers on the same sockets, while the previous set finishes its
//! requests; a configuration that is broken, or that changes what only a
//! restart can, is refused and the old one keeps serving.

use crate::common;

use std::fs;
use std::path::Path;

use common::*;

const LOG: &str = "[log]\nlevel = \"info\"\n";

fn start(cfg: &str) -> Server {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.file("big.bin", &pattern(20 * 1024 * 1024));
    b.config(&format!("{cfg}\n{LOG}"));
    b.start()
}

/// Rewrites the config file and sends SIGHUP; waits for the error log to
/// say what became of it (`reloaded` or `still serving`), and returns that
/// line.
fn reload(s: &Server, cfg: &str) -> String {
    reload_with(s, |file| {
        fs::write(file, format!("{cfg}\n{LOG}")).expect("write config")
    })
}

/// [`reload`] with `change` doing what it likes to the config file.
fn reload_with(s: &Server, change: impl FnOnce(&Path)) -> String {
    let before = s.stderr().matches("SIGHUP:").count();
    change(&s.base.path.join("brisk.toml"));
    s.signal(libc::SIGHUP);
    let mut line = String::new();
    wait_until("the reload to be logged", || {
        let err = s.stderr();
        match err.lines().filter(|l| l.contains("SIGHUP:")).nth(before) {
            Some(l) => {
                line = l.to_string();
                true
            }
            None => false,
        }
    });
    line
}

fn server_header(s: &Server) -> String {
    s.get("/a.txt").header("Server").unwrap_or("").to_string()
}

#[test]
fn a_changed_file_is_served_after_sighup_on_the_same_port() {
    let s = start("server_header = \"one\"");
    assert_eq!(server_header(&s), "one");
    let line = reload(
        &s,
        "server_header = \"two\"\n[[headers]]\npattern = \"*.txt\"\nset = { \"X-Reloaded\" = \"yes\" }\n",
    );
    assert!(line.contains("configuration reloaded"), "{line}");
    // Every connection made after the log line is the new workers'.
    let r = s.get("/a.txt");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Server"), Some("two"));
    assert_eq!(r.header("X-Reloaded"), Some("yes"));
    assert_eq!(r.body, b"AAAA");
    // And again: the listening sockets survive any number of reloads.
    let line = reload(&s, "server_header = \"three\"");
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(server_header(&s), "three");
    assert_eq!(s.get("/a.txt").header("X-Reloaded"), None);
}

#[test]
fn no_connection_made_after_the_reload_is_logged_meets_the_previous_configuration() {
    // The listening sockets are shared by the previous workers and the
    // new ones: a previous worker going through a batch of events with
    // its listener in it accepted whatever was queued, and could take a
    // connection made after "configuration reloaded" was logged. A
    // client keeps connecting through each reload (so such batches are
    // common); every connection it begins once the line is out must be
    // answered by the new configuration.
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let s = start("server_header = \"c0\"");
    // The number of the reloads logged so far, as the client last saw it.
    let logged = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicUsize::new(0));
    let addr = s.addr();
    let client = {
        let (logged, stop) = (Arc::clone(&logged), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut wrong = Vec::new();
            let mut made = 0;
            while stop.load(Ordering::SeqCst) == 0 && made < 20_000 {
                let at_least = logged.load(Ordering::SeqCst);
                let mut c = Client::connect(addr);
                c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                let r = c.response();
                made += 1;
                let served: usize = r
                    .header("Server")
                    .and_then(|v| v.strip_prefix('c'))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(usize::MAX);
                if served < at_least {
                    wrong.push((at_least, served));
                }
            }
            (made, wrong)
        })
    };
    for n in 1..=10 {
        let line = reload(&s, &format!("server_header = \"c{n}\""));
        assert!(line.contains("configuration reloaded"), "{line}");
        logged.store(n, Ordering::SeqCst);
    }
    stop.store(1, Ordering::SeqCst);
    let (made, wrong) = client.join().expect("the client");
    assert!(
        wrong.is_empty(),
        "{} of {made} connections made after a reload was logged were served by an earlier configuration (reload, configuration): {wrong:?}",
        wrong.len()
    );
}

#[test]
fn a_response_in_flight_completes_and_an_idle_connection_is_closed_by_its_next_answer() {
    let s = start("server_header = \"one\"");
    let big = pattern(20 * 1024 * 1024);
    let mut idle = s.connect();
    idle.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(idle.response().header("Server"), Some("one"));
    let mut busy = s.connect();
    busy.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    busy.read_at_least(256 * 1024);
    let line = reload(&s, "server_header = \"two\"");
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(server_header(&s), "two");
    // The old workers finish what they hold: a client that sends its next
    // request on a connection they kept idle gets it answered (by the
    // configuration it connected under) and the connection then closes,
    // so no request is lost to the reload; the download runs to its end.
    idle.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = idle.response();
    assert_eq!(r.header("Server"), Some("one"));
    assert_eq!(r.header("Connection"), Some("close"));
    assert_eq!(r.body, b"AAAA");
    idle.expect_closed();
    assert_old_download(&mut busy, &big);
}

/// Reads one whole answer for `big`, served by the first configuration.
/// (The connection then stays open: it is idle, and its next request
/// would be answered with `Connection: close`.)
fn assert_old_download(c: &mut Client, big: &[u8]) {
    let r = c.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Server"), Some("one"));
    assert_eq!(r.body.len(), big.len(), "body truncated");
    assert!(r.body == big, "body differs");
}

#[test]
fn a_download_in_flight_outlasts_the_shutdown_grace_at_a_reload() {
    // `timeouts.shutdown` bounds a stop, not a reload: with it at 0, a
    // download started before SIGHUP still arrives whole, however slowly
    // the client reads.
    let cfg = "server_header = \"one\"\n[timeouts]\nshutdown = 0\n";
    let s = start(cfg);
    let big = pattern(20 * 1024 * 1024);
    let mut busy = s.connect();
    busy.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    busy.read_at_least(64 * 1024);
    let line = reload(&s, &cfg.replace("one", "two"));
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(server_header(&s), "two");
    assert_old_download(&mut busy, &big);
}

#[test]
fn reload_drain_bounds_what_the_previous_workers_may_finish() {
    let cfg = "server_header = \"one\"\n[timeouts]\nreload_drain = \"0s\"\n";
    let s = start(cfg);
    let mut busy = s.connect();
    busy.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    busy.read_at_least(64 * 1024);
    let line = reload(&s, &cfg.replace("one", "two"));
    assert!(line.contains("configuration reloaded"), "{line}");
    // No time at all: the download is cut (what the socket buffers held
    // still arrives).
    let got = busy.read_to_end();
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\nServer: one\r\n"));
    assert!(got.len() < 20 * 1024 * 1024, "{} bytes arrived", got.len());
    assert_eq!(server_header(&s), "two");
}

#[test]
fn idle_connections_of_the_previous_workers_answer_once_or_time_out() {
    let cfg = "server_header = \"one\"\n[timeouts]\nkeepalive = \"2s\"\n";
    let s = start(cfg);
    let mut http10 = s.connect();
    http10.send(b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(http10.response().header("Connection"), Some("keep-alive"));
    // Counted once a worker answers (the address is printed before the
    // threads start).
    let threads = s.thread_count();
    let mut silent = s.connect();
    silent.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(silent.response().status, 200);
    let line = reload(&s, &cfg.replace("one", "two"));
    assert!(line.contains("configuration reloaded"), "{line}");
    // An HTTP/1.0 client's next request is answered without keep-alive.
    http10.send(b"GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = http10.response();
    assert_eq!(r.header("Server"), Some("one"));
    assert_eq!(r.header("Connection"), Some("close"));
    http10.expect_closed();
    // One that sends nothing more is closed at its idle timeout, and the
    // previous workers then exit.
    silent.expect_closed();
    wait_until("the previous workers to exit", || {
        s.thread_count() == threads
    });
}

/// Requests a client pipelined on a connection of the previous workers,
/// read together after a reload, are all answered by them, the last one
/// read with `Connection: close`: none is dropped for the client to
/// retry (a POST may not be retried).
#[test]
fn pipelined_requests_read_after_a_reload_are_all_answered() {
    let cfg = "server_header = \"one\"\n";
    let s = start(cfg);
    let mut c = s.connect();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 200);
    let line = reload(&s, &cfg.replace("one", "two"));
    assert!(line.contains("configuration reloaded"), "{line}");
    c.send(
        b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n\
          POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\
          HEAD /a.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    let first = c.response();
    assert_eq!((first.status, first.header("Server")), (200, Some("one")));
    assert_eq!(first.header("Connection"), None);
    assert_eq!(c.response().status, 405);
    let last = c.head_response();
    assert_eq!(last.status, 200);
    assert_eq!(last.header("Connection"), Some("close"));
    c.expect_closed();
}

#[test]
fn a_stop_after_a_reload_closes_the_previous_workers_idle_connections() {
    let mut s = start("server_header = \"one\"");
    let mut idle = s.connect();
    idle.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(idle.response().status, 200);
    let line = reload(&s, "server_header = \"two\"");
    assert!(line.contains("configuration reloaded"), "{line}");
    s.signal(libc::SIGTERM);
    // At once: well before the 15 s keep-alive timeout.
    idle.expect_closed();
    let st = s
        .wait_exit(std::time::Duration::from_secs(10))
        .expect("brisk did not exit");
    assert!(st.success(), "exit status {st:?}; stderr: {}", s.stderr());
}

#[test]
fn a_broken_file_is_refused_and_the_old_configuration_serves_on() {
    let mut s = start("server_header = \"one\"");
    let line = reload(
        &s,
        "server_header = \"two\"\n[static]\ndotfiles = \"maybe\"\n",
    );
    assert!(line.contains("[error]"), "{line}");
    assert!(line.contains("brisk.toml:3: static.dotfiles"), "{line}");
    assert!(
        line.contains("still serving the previous configuration"),
        "{line}"
    );
    assert_eq!(server_header(&s), "one");
    assert!(s.is_running());
    // A missing file too.
    let line = reload_with(&s, |file| fs::remove_file(file).expect("remove config"));
    assert!(
        line.contains("cannot read the configuration file"),
        "{line}"
    );
    assert_eq!(server_header(&s), "one");
}

#[test]
fn a_change_that_needs_a_restart_is_refused_by_name() {
    let s = start("server_header = \"one\"");
    let line = reload(
        &s,
        "server_header = \"two\"\nworkers = 3\nsandbox = false\n[timeouts]\ndefer_accept = \"0s\"\n",
    );
    // `--workers 1` on the command line still wins over the file.
    assert!(
        line.contains("sandbox, timeouts.defer_accept changed, which takes effect only at start; restart brisk, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), to apply the change"),
        "{line}"
    );
    assert_eq!(server_header(&s), "one");
}

/// Another `user` is a change only a restart makes, said as such: not a
/// look-up the sandbox refuses ("cannot look up user: Permission
/// denied"), nor "only root can change user" to a brisk started as root.
#[test]
fn a_new_user_is_refused_as_a_change_that_needs_a_restart() {
    for sandbox in [true, false] {
        let s = start(&format!("sandbox = {sandbox}"));
        let line = reload(
            &s,
            &format!("sandbox = {sandbox}\nuser = \"nobody\"\nserver_header = \"two\""),
        );
        assert!(
            line.contains("brisk.toml:2: user: changed to \"nobody\", which takes effect only at start; restart brisk, or upgrade it in place"),
            "sandbox = {sandbox}: {line}"
        );
        assert!(
            line.contains("still serving the previous configuration"),
            "{line}"
        );
        assert_eq!(server_header(&s), "brisk", "{line}");
    }
}

/// Starts with `sandbox` on or off, then reloads with an `[[auth]]` rule
/// whose htpasswd file (user ann, password test) lies in `pw`, a new
/// directory outside the configuration file's; returns the server and
/// the reload's log line.
fn add_auth(sandbox: bool, pw: &TempDir) -> (Server, String) {
    let s = start(&format!("sandbox = {sandbox}"));
    fs::write(
        pw.path.join("htpasswd"),
        "ann:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\n",
    )
    .expect("htpasswd");
    let line = reload(
        &s,
        &format!(
            "sandbox = {sandbox}\n[[auth]]\npath = \"/\"\nrealm = \"r\"\nhtpasswd = \"{}/htpasswd\"\n",
            pw.path.display()
        ),
    );
    (s, line)
}

fn landlock() -> bool {
    let on = brisk::sys::sandbox::landlock_abi().is_some();
    if !on {
        skip("no Landlock on this kernel, so any path reloads");
    }
    on
}

/// The end of every refusal the sandbox causes.
const WAY_OUT: &str = "restart brisk to apply this configuration, or upgrade it in place with no connection refused (brisk --upgrade, or SIGUSR2; upgrade = true, the default), which starts it anew with a sandbox made for this configuration; still serving the previous configuration";

#[test]
fn with_the_sandbox_a_new_htpasswd_file_needs_a_restart() {
    if !landlock() {
        return;
    }
    let pw = TempDir::new("pw");
    let (s, line) = add_auth(true, &pw);
    let want = format!(
        "[error] SIGHUP: {}/brisk.toml:5: auth[1].htpasswd: the sandbox does not allow reading {}/htpasswd: its Landlock rules were fixed at start and cannot be widened while brisk runs; {WAY_OUT}",
        s.base.path.display(),
        pw.path.display()
    );
    assert!(line.ends_with(&want), "{line}");
    assert_eq!(s.get("/a.txt").status, 200);
}

#[test]
fn with_the_sandbox_a_new_cgi_directory_is_named() {
    if !landlock() {
        return;
    }
    let cgi = |dir: &str| format!("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"{dir}\"\n");
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    fs::create_dir(b.base().join("cgi-a")).expect("mkdir");
    fs::create_dir(b.base().join("cgi-b")).expect("mkdir");
    b.config(&format!("{}\n{LOG}", cgi("cgi-a")));
    let s = b.start();
    let line = reload(&s, &cgi("cgi-b"));
    let want = format!(
        "[error] SIGHUP: the sandbox does not allow cgi[1].dir = {}/cgi-b: its Landlock rules were fixed at start and cannot be widened while brisk runs; {WAY_OUT}",
        s.base.path.display()
    );
    assert!(line.ends_with(&want), "{line}");
}

#[test]
fn with_the_sandbox_new_writable_paths_need_a_restart() {
    // A launcher's writable directories are its Landlock sandbox's, fixed
    // at start; the same set again (in another order) reloads.
    if !landlock() {
        return;
    }
    let cgi = |writable: &str| {
        format!("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\nwritable = [{writable}]\n")
    };
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    for d in ["cgi-bin", "w1", "w2"] {
        fs::create_dir(b.base().join(d)).expect("mkdir");
    }
    b.config(&format!("{}\n{LOG}", cgi("\"w1\", \"w2\"")));
    let s = b.start();
    let line = reload(
        &s,
        &format!("server_header = \"two\"\n{}", cgi("\"w2\", \"w1\"")),
    );
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(server_header(&s), "two");
    let line = reload(&s, &cgi("\"w1\""));
    let want = format!(
        "[error] SIGHUP: the sandbox does not allow cgi[1].writable = [\"{}/w1\"]: its Landlock rules were fixed at start and cannot be widened while brisk runs; {WAY_OUT}",
        s.base.path.canonicalize().expect("base").display()
    );
    assert!(line.ends_with(&want), "{line}");
    assert_eq!(server_header(&s), "two");
}

#[test]
fn with_the_sandbox_cgi_cannot_be_turned_on_by_a_reload() {
    let s = start("server_header = \"one\"");
    fs::create_dir(s.base.path.join("cgi-bin")).expect("mkdir");
    let line = reload(&s, "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    assert!(
        line.ends_with(&format!("[error] SIGHUP: the sandbox cannot start CGI programs: [[cgi]] rules were added, but brisk started without any, so no CGI launcher runs and the server's seccomp filter allows no program to start; {WAY_OUT}")),
        "{line}"
    );
    assert_eq!(server_header(&s), "one");
}

/// Starts with the listen addresses of the config file (no `--listen`).
fn start_listening(cfg: &str) -> Server {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.listen_from_config();
    b.config(&format!("{cfg}\n{LOG}"));
    b.start()
}

#[test]
fn with_the_sandbox_a_new_listen_address_is_named() {
    let s = start_listening("listen = [\"127.0.0.1:0\"]");
    let port = free_port();
    let line = reload(
        &s,
        &format!("listen = [\"127.0.0.1:0\", \"127.0.0.1:{port}\"]"),
    );
    assert!(
        line.ends_with(&format!("[error] SIGHUP: listen address 127.0.0.1:{port} needs a restart while the sandbox is on (it keeps brisk from opening sockets); {WAY_OUT}")),
        "{line}"
    );
    assert_eq!(s.get("/a.txt").status, 200);
}

#[test]
fn without_the_sandbox_a_new_listen_address_serves() {
    let s = start_listening("sandbox = false\nlisten = [\"127.0.0.1:0\"]");
    let port = free_port();
    let line = reload(
        &s,
        &format!("sandbox = false\nlisten = [\"127.0.0.1:0\", \"127.0.0.1:{port}\"]"),
    );
    assert!(line.contains("configuration reloaded"), "{line}");
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"AAAA");
}

/// A listen address the new file no longer lists closes, and the error
/// log says so beside the one it adds (it said only `now also listening`,
/// as if both served).
#[test]
fn a_listen_address_a_reload_drops_is_said_to_close() {
    let (p1, p2) = (free_port(), free_port());
    let s = start_listening(&format!("sandbox = false\nlisten = [\"127.0.0.1:{p1}\"]"));
    let line = reload(
        &s,
        &format!("sandbox = false\nlisten = [\"127.0.0.1:{p2}\"]"),
    );
    assert!(line.contains("configuration reloaded"), "{line}");
    s.wait_stderr_line("SIGHUP: no longer listening");
    let said: Vec<String> = s
        .stderr()
        .lines()
        .filter_map(|l| Some(l.split_once("[info] SIGHUP: ")?.1.to_string()))
        .filter(|l| l.contains("listening"))
        .collect();
    assert_eq!(
        said,
        [
            format!("now also listening on http://127.0.0.1:{p2}/"),
            format!("no longer listening on http://127.0.0.1:{p1}/")
        ]
    );
    wait_until("the dropped address to refuse connections", || {
        std::net::TcpStream::connect(("127.0.0.1", p1)).is_err()
    });
    let mut c = Client::connect(([127, 0, 0, 1], p2).into());
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"AAAA");
}

#[test]
fn without_the_sandbox_a_new_auth_rule_applies() {
    let pw = TempDir::new("pw");
    let (s, line) = add_auth(false, &pw);
    assert!(line.contains("configuration reloaded"), "{line}");
    let r = s.get("/a.txt");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("WWW-Authenticate"),
        Some("Basic realm=\"r\", charset=\"UTF-8\"")
    );
    // "ann:test"
    let r = s.get_with("/a.txt", "Authorization: Basic YW5uOnRlc3Q=\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"AAAA");
}

#[test]
fn connections_of_the_previous_workers_still_count_against_the_limit() {
    let limits = "[limits]\nmax_connections = 2\n";
    let s = start(&format!("server_header = \"one\"\n{limits}"));
    // A download in flight, served by the workers of the first
    // configuration until it ends…
    let mut busy = s.connect();
    busy.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    busy.read_at_least(256 * 1024);
    let line = reload(&s, &format!("server_header = \"two\"\n{limits}"));
    assert!(line.contains("configuration reloaded"), "{line}");
    // …still counts: one more connection fits, the next is refused
    // (the second busy too: an idle one would give way to it).
    let mut second = s.connect();
    second.send(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(second.response().header("Server"), Some("two"));
    second.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    second.read_at_least(256 * 1024);
    assert_eq!(s.get("/a.txt").status, 503);
    drop(busy);
    drop(second);
    wait_until("the connections to be released", || {
        s.get("/a.txt").status == 200
    });
}

#[test]
fn a_reload_reads_the_mime_types_file_again() {
    let mut b = Builder::new();
    b.file("x.foo", b"foo");
    // Outside the config file's directory (which the sandbox lets the
    // server read again), as /etc/mime.types is.
    let elsewhere = TempDir::new("types");
    let types = elsewhere.path.join("mime.types");
    write_file(&types, b"application/x-one foo\n");
    let cfg = format!("[static]\nmime_types = \"{}\"\n", types.display());
    b.config(&format!("{cfg}{LOG}"));
    let s = b.start();
    assert_eq!(
        s.get("/x.foo").header("Content-Type"),
        Some("application/x-one")
    );
    // Changed in place (the sandbox allows reading that file again).
    let line = reload_with(&s, |_| {
        fs::write(&types, b"application/x-two foo\n").expect("rewrite types")
    });
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(
        s.get("/x.foo").header("Content-Type"),
        Some("application/x-two")
    );
    // A broken file is refused like a broken config, naming file and line.
    let line = reload_with(&s, |_| {
        fs::write(&types, b"application/x-three foo\n\nbroken\n").expect("rewrite types")
    });
    assert!(line.contains("static.mime_types"), "{line}");
    assert!(
        line.contains("mime.types:3: expected a media type"),
        "{line}"
    );
    assert_eq!(
        s.get("/x.foo").header("Content-Type"),
        Some("application/x-two")
    );
    // Replaced by a new file (as a package upgrade does): the sandbox
    // fixed at start covers the old one only, and the refusal says so.
    let line = reload_with(&s, |_| {
        let new = elsewhere.path.join("mime.types.new");
        fs::write(&new, b"application/x-four foo\n").expect("write types");
        fs::rename(&new, &types).expect("rename types");
    });
    if line.contains("configuration reloaded") {
        skip("no Landlock sandbox here: the refusal of a replaced mime_types file is not tested");
        assert_eq!(
            s.get("/x.foo").header("Content-Type"),
            Some("application/x-four")
        );
    } else {
        assert!(line.contains("static.mime_types: cannot read"), "{line}");
        assert!(line.contains("can only be read after a restart"), "{line}");
    }
}

/// HTTPS (issue #12): SIGHUP reads the certificates again. A download
/// begun under the old certificate runs to its end on its session; new
/// connections get the new certificate; a broken new key is refused by
/// name and the running certificate stays.
#[cfg(feature = "tls")]
#[test]
fn a_reload_swaps_the_certificate_while_a_download_goes_on() {
    use common::tls::{client_conn, served_name, testdata};
    let copy = |name: &str, to: &Path| {
        fs::copy(testdata(&format!("{name}.pem")), to.join("site.pem")).expect("cert");
        fs::copy(testdata(&format!("{name}.key")), to.join("site.key")).expect("key");
    };
    let big = pattern(20 * 1024 * 1024);
    let mut b = Builder::new();
    b.file("big.bin", &big);
    copy("a", b.base());
    b.config(&format!(
        "server_header = \"one\"\n{LOG}\n[tls]\nlisten = [\"127.0.0.1:0\"]\n\
         [[tls.certificate]]\ncert = \"site.pem\"\nkey = \"site.key\"\n"
    ))
    .listeners(2);
    let s = b.start();
    let tls = s.addrs[1];
    let mut busy = Client::connect_tls(tls, client_conn("a.test"));
    busy.send(b"GET /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\n");
    busy.read_at_least(256 * 1024);

    copy("b", &s.base.path);
    let line = reload_with(&s, |file| {
        let cfg = fs::read_to_string(file).expect("config");
        fs::write(file, cfg.replace("\"one\"", "\"two\"")).expect("config");
    });
    assert!(line.contains("configuration reloaded"), "{line}");
    // (The test key is 0644, as copied: said at a reload too.)
    s.wait_stderr_line(&format!(
        "[warn] reload: tls: the private key {} is readable by every user (mode 644)",
        s.base.path.join("site.key").display()
    ));
    let fresh = Client::connect_tls(tls, client_conn("b.test"));
    assert_eq!(served_name(fresh.tls.as_deref().expect("tls")), "b");
    // The old name is not on the new certificate: verification fails.
    let mut old_name = client_conn("a.test");
    let mut sock = std::net::TcpStream::connect(tls).expect("connect");
    sock.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
    let refused = (0..10).find_map(|_| old_name.complete_io(&mut sock).err());
    assert!(
        refused
            .as_ref()
            .is_some_and(|e| format!("{e:?}").contains("presented: [\"DnsName(\\\"b.test\\\")\"]")),
        "a.test is refused: {refused:?}"
    );

    // The download started before goes on, to its end, on its session.
    assert_eq!(served_name(busy.tls.as_deref().expect("tls")), "a");
    assert_old_download(&mut busy, &big);

    // A broken key is refused by name; the new certificate serves on.
    fs::write(s.base.path.join("site.key"), b"not a key").expect("key");
    let line = reload_with(&s, |_| {});
    assert!(line.contains("still serving"), "{line}");
    assert!(line.contains("site.key"), "{line}");
    let again = Client::connect_tls(tls, client_conn("b.test"));
    assert_eq!(served_name(again.tls.as_deref().expect("tls")), "b");
}

/// `brisk --reload` and `brisk --stop` find the running brisk by its pid
/// file and signal it, after checking the configuration; a brisk started
/// with `--root .` reloads (its root was `DIR/.` on a reload, which the
/// sandbox refused).
#[test]
fn reload_and_stop_signal_the_running_brisk_by_its_pid_file() {
    let mut b = Builder::new();
    b.file("index.html", b"one\n");
    let pid_file = b.base().join("brisk.pid");
    let root = b.root().to_path_buf();
    let pid_arg = pid_file.display().to_string();
    b.cwd(&root)
        .arg("--root")
        .arg(".")
        .arg("--pid-file")
        .arg(&pid_arg);
    let mut s = b.start();
    let brisk = |what: &str| {
        std::process::Command::new(crate::common::brisk_exe())
            .args(["--pid-file", &pid_arg, what])
            .current_dir(&root)
            .output()
            .expect("run brisk")
    };
    let out = brisk("--reload");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "told brisk (pid {}, from {pid_arg}) to reload; its error log says how it went\n",
            s.pid()
        )
    );
    s.wait_stderr_line("SIGHUP: configuration reloaded");
    assert_eq!(s.get("/index.html").body, b"one\n");
    // A second brisk given the same pid file (on another port) is
    // refused: it would take the file, and `--stop` would find it alone.
    let (status, _, err) = run_brisk(&[
        "--pid-file",
        &pid_arg,
        "--listen",
        "127.0.0.1:0",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(
        err,
        format!(
            "brisk: pid_file {pid_arg}: brisk is running with that pid file (pid {}): stop it first (brisk --stop), or give this one a pid_file of its own\n",
            s.pid()
        )
    );
    assert_eq!(
        fs::read_to_string(&pid_file).unwrap().trim(),
        s.pid().to_string()
    );
    let out = brisk("--stop");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        s.wait_exit(std::time::Duration::from_secs(10)).is_some(),
        "brisk did not stop"
    );
    let out = brisk("--reload");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("brisk: {pid_arg} does not exist: brisk is not running (or was started with another pid_file)\n")
    );
}

/// An upstream on this machine, answering `up` to every request (one a
/// connection), at the address `localhost` resolves to first.
#[cfg(feature = "upstreams")]
fn upstream_at_localhost() -> u16 {
    use std::io::{Read, Write};
    use std::net::ToSocketAddrs;
    let ip = ("localhost", 0)
        .to_socket_addrs()
        .expect("localhost resolves")
        .next()
        .expect("an address")
        .ip();
    let listener = std::net::TcpListener::bind((ip, 0)).expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut head = Vec::new();
            let mut piece = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut piece) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&piece[..n]),
                }
            }
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nup");
        }
    });
    port
}

#[cfg(feature = "upstreams")]
#[test]
fn with_the_sandbox_a_reload_keeps_an_upstream_named_by_a_host_name() {
    if !landlock() {
        return;
    }
    // Inside the sandbox the system's resolver is out of reach (its
    // files, /etc/hosts among them, and its sockets): the reload failed
    // with "cannot resolve localhost: ... Temporary failure in name
    // resolution" whatever the configuration. A name resolved at start
    // keeps its address.
    let port = upstream_at_localhost();
    let rule = format!(
        "sandbox = true\n[[reverse_proxy]]\npath = \"/p/\"\nto = \"http://localhost:{port}\"\n"
    );
    let s = start(&rule);
    assert_eq!(s.get("/p/x").body, b"up");
    let line = reload(&s, &format!("server_header = \"two\"\n{rule}"));
    assert!(line.contains("configuration reloaded"), "{line}");
    assert_eq!(server_header(&s), "two");
    let r = s.get("/p/x");
    assert_eq!((r.status, &r.body[..]), (200, &b"up"[..]));
}

#[test]
fn a_root_symlink_that_moves_is_told_of_and_a_reload_follows_it() {
    // A deploy's `current -> releases/N`, swapped by `mv -T`: brisk says
    // so at once (it serves the directory it opened), and a reload (here
    // without the sandbox, whose Landlock rules name the directory)
    // serves the new release.
    let mut b = Builder::new();
    let base = b.base().to_path_buf();
    for n in ["1", "2"] {
        write_file(&base.join(format!("releases/{n}/v.txt")), n.as_bytes());
    }
    // (The harness's root, given by --root, becomes the link.)
    let current = b.root().to_path_buf();
    fs::remove_dir_all(&current).unwrap();
    std::os::unix::fs::symlink(base.join("releases/1"), &current).unwrap();
    b.config(&format!("sandbox = false\n{LOG}"));
    let s = b.start();
    assert_eq!(s.get("/v.txt").body, b"1");
    std::os::unix::fs::symlink(base.join("releases/2"), base.join("current.new")).unwrap();
    fs::rename(base.join("current.new"), &current).unwrap();
    let line = s.wait_stderr_line("now leads to");
    let target = fs::canonicalize(base.join("releases/2")).unwrap();
    assert!(
        line.contains(&format!(
            "the document root {} now leads to {}",
            current.display(),
            target.display()
        )) && line.contains("until a reload"),
        "{line}"
    );
    assert_eq!(s.get("/v.txt").body, b"1", "served as opened");
    let line = reload_with(&s, |_| {});
    assert!(line.contains("reloaded"), "{line}");
    assert_eq!(s.get("/v.txt").body, b"2");
}

#[test]
fn a_reload_reopens_the_log_files_as_logrotate_snippets_expect() {
    // logrotate moves the file, then its postrotate reloads (as many
    // snippets written for nginx do): brisk wrote on to the moved file,
    // which logrotate then compresses and removes, its lines lost. A
    // reload reopens the logs as SIGUSR1 does.
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config(LOG).access_log();
    let s = b.start();
    assert_eq!(s.get("/before").status, 404);
    let log = s.base.path.join("access.log");
    let moved = s.base.path.join("access.log.1");
    wait_until("the first line", || {
        fs::read_to_string(&log).is_ok_and(|l| l.contains("/before"))
    });
    fs::rename(&log, &moved).expect("rotate");
    let line = reload(&s, "");
    assert!(line.contains("configuration reloaded"), "{line}");
    s.wait_stderr_line(&format!("reload (SIGHUP): reopened {}", log.display()));
    assert_eq!(s.get("/after").status, 404);
    wait_until("the line in the new file", || {
        fs::read_to_string(&log).is_ok_and(|l| l.contains("/after"))
    });
    let old = fs::read_to_string(&moved).expect("moved log");
    assert!(old.contains("/before") && !old.contains("/after"), "{old}");
}

/// In a container brisk is often process 1 of its PID namespace: it stays
/// there as init, and the server it forks, process 2, writes the pid
/// file (see `sys::init`): `brisk --reload` and `--stop` (run in the
/// container, as `docker exec` does) signal it, as any other brisk, and
/// process 1 ends with it. (Without the feature `ops` brisk is process 1
/// itself.)
#[test]
fn reload_and_stop_signal_a_brisk_that_is_process_one_of_its_namespace() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    if brisk::sys::privileges::euid() != 0 {
        skip("a PID namespace (unshare) needs root");
        return;
    }
    let dir = TempDir::new("pid-one");
    fs::create_dir(dir.path.join("www")).expect("mkdir www");
    write_file(&dir.path.join("www/index.html"), b"one\n");
    let port = free_port();
    let cfg = dir.path.join("brisk.toml");
    let pid_file = dir.path.join("brisk.pid");
    let err_log = dir.path.join("error.log");
    write_file(
        &cfg,
        format!(
            "root = \"www\"\nworkers = 1\nlisten = [\"127.0.0.1:{port}\"]\nallow_root = true\n\
             sandbox = false\npid_file = \"{}\"\n[log]\naccess = \"off\"\nerror = \"{}\"\nlevel = \"info\"\n",
            pid_file.display(),
            err_log.display()
        )
        .as_bytes(),
    );
    let cfg_arg = cfg.display().to_string();
    let unshare = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--kill-child"])
        .arg(crate::common::brisk_exe())
        .args(["--config", &cfg_arg])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(unshare) = unshare else {
        skip("no unshare (util-linux)");
        return;
    };
    let mut unshare = KillOnDrop(unshare);
    // brisk as seen from here: the child unshare forked.
    let children = format!("/proc/{0}/task/{0}/children", unshare.0.id());
    let host_pid = wait_for("unshare to start brisk", || {
        if let Ok(Some(status)) = unshare.0.try_wait() {
            panic!("unshare exited at once ({status})");
        }
        let text = fs::read_to_string(&children).ok()?;
        text.split_whitespace().next()?.parse::<u32>().ok()
    });
    // (Without the feature `ops`, brisk serves as process 1 itself.)
    let server = if cfg!(feature = "ops") { 2 } else { 1 };
    wait_until("brisk to write its pid file", || {
        fs::read_to_string(&pid_file).is_ok_and(|t| t == format!("{server}\n"))
    });
    let brisk = |what: &str| {
        Command::new("nsenter")
            .args(["-t", &host_pid.to_string(), "-p", "-m", "--"])
            .arg(crate::common::brisk_exe())
            .args(["--config", &cfg_arg, what])
            .output()
            .expect("run nsenter")
    };
    let out = brisk("--reload");
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (
            Some(0),
            format!(
                "told brisk (pid {server}, from {}) to reload; its error log says how it went\n",
                pid_file.display()
            ),
            String::new()
        )
    );
    wait_until("the reload to be logged", || {
        fs::read_to_string(&err_log).is_ok_and(|t| t.contains("SIGHUP: configuration reloaded"))
    });
    // (Once process 1 exits, with the server, the kernel kills what is
    // left in its namespace: this command too, if it has not exited by
    // then.)
    let out = brisk("--stop");
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGKILL),
        "{out:?}"
    );
    assert!(
        wait_exit(&mut unshare.0, std::time::Duration::from_secs(10)).is_some_and(|s| s.success()),
        "brisk did not stop"
    );
    assert!(!pid_file.exists(), "the pid file is left");
}
