//! Active health checks (`health = { path, interval }`): each worker
//! asks every upstream of the rule `GET path` each `interval`, on a
//! non-blocking connection moved on at the worker's once-a-second sweep
//! (no thread, nothing that blocks, one check in flight per upstream);
//! an answer other than 2xx or 3xx, or none within `connect_timeout` and
//! `read_timeout`, marks the upstream down until a check succeeds.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Instant;

use super::balance::Group;
use super::dial;
use super::link::{Link, Tls};
use crate::config::Health;

/// The most of an answer read for its status line.
const STATUS_LINE: usize = 512;

/// One upstream's active check in one worker.
#[derive(Debug, Default)]
pub(super) struct Check {
    /// When the next starts (none: at the next sweep).
    next: Option<Instant>,
    /// The one in flight.
    flight: Option<Flight>,
}

/// A check under way.
#[derive(Debug)]
struct Flight {
    sock: OwnedFd,
    /// Its transport: TLS to an https upstream, with the rule's client
    /// (its `ca`, `tls_verify`, the name it sends and verifies).
    link: Link,
    /// Given up then.
    until: Instant,
    /// The request, what of it is not written yet.
    out: Vec<u8>,
    /// The answer so far.
    got: Vec<u8>,
    /// The whole request, the upstream, and where the check is in its
    /// addresses (a name's: the check goes to the next when one cannot
    /// be reached, as requests do).
    request: Vec<u8>,
    to: crate::config::Upstream,
    tried: crate::config::Tried,
    tls: Tls,
}

/// What a check came to.
enum Verdict {
    Up,
    /// Down, and why (for the error log).
    Down(String),
    /// Not yet.
    Waiting,
}

impl Group {
    /// Moves the rule's active checks on at `now`: those in flight, and
    /// a new one to each upstream whose `interval` has passed. Nothing
    /// without `health`.
    pub fn check(&mut self, now: Instant) {
        let Some((health, timeout)) = self.health.clone() else {
            return;
        };
        for i in 0..self.to.len() {
            let due = self.peers[i].check.next.is_none_or(|t| now >= t);
            let verdict = match self.peers[i].check.flight.as_mut() {
                Some(flight) => flight.go_on(now),
                None if !due => continue,
                None => match self.start(i, &health, now + timeout) {
                    Ok(flight) => {
                        let c = &mut self.peers[i].check;
                        c.flight.insert(flight).go_on(now)
                    }
                    Err(e) => Verdict::Down(format!("cannot reach it: {e}")),
                },
            };
            let peer = &mut self.peers[i];
            match verdict {
                Verdict::Waiting => continue,
                Verdict::Up => {
                    if peer.check_down {
                        self.news.push((i, false, String::new()));
                    }
                    peer.check_down = false;
                }
                Verdict::Down(why) => {
                    if !peer.check_down {
                        self.news.push((i, true, why));
                    }
                    peer.check_down = true;
                }
            }
            peer.check.flight = None;
            peer.check.next = Some(now + health.interval);
        }
    }

    /// A check of upstream `i`, connecting, to give up at `until`.
    // (`Tls` is a unit without the feature `tls`.)
    #[cfg_attr(not(feature = "tls"), allow(clippy::clone_on_copy, clippy::unit_arg))]
    fn start(&self, i: usize, health: &Health, until: Instant) -> io::Result<Flight> {
        let to = &self.to[i];
        let tried = to.tried();
        let sock = dial::connect(to, tried)?;
        let link = Link::new(to, &self.tls).map_err(io::Error::other)?;
        let out = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: brisk health check\r\n\
             Connection: close\r\n\r\n",
            health.path,
            dial::own_host(to)
        );
        Ok(Flight {
            sock,
            link,
            until,
            request: out.clone().into_bytes(),
            out: out.into_bytes(),
            got: Vec::new(),
            to: to.clone(),
            tried,
            tls: self.tls.clone(),
        })
    }
}

impl Flight {
    /// Writes what it can of the request, reads what came of the answer:
    /// its verdict once its status line is there (or it failed).
    fn go_on(&mut self, now: Instant) -> Verdict {
        while !self.out.is_empty() {
            match self.link.send(&self.sock, &self.out) {
                Ok(n) => drop(self.out.drain(..n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.waiting(now),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) if self.next_address() => {}
                Err(e) => return Verdict::Down(format!("cannot reach it: {e}")),
            }
        }
        loop {
            if let Some(up) = status_ok(&self.got) {
                return match up {
                    true => Verdict::Up,
                    false => Verdict::Down(format!("answered {}", status_line(&self.got))),
                };
            }
            if self.got.len() >= STATUS_LINE {
                return Verdict::Down(format!("no status line in its first {STATUS_LINE} bytes"));
            }
            self.got.reserve(STATUS_LINE);
            match self.link.read(&self.sock, &mut self.got, STATUS_LINE) {
                Ok(0) => return Verdict::Down("closed the connection without an answer".into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.waiting(now),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Verdict::Down(format!("reading its answer: {e}")),
            }
        }
    }

    /// The connection failed before it took the request: to the next
    /// address, if one is left.
    fn next_address(&mut self) -> bool {
        while let Some(addr) = self.to.next_address(&mut self.tried) {
            if let (Ok(sock), Ok(link)) = (dial::connect_tcp(addr), Link::new(&self.to, &self.tls))
            {
                self.sock = sock;
                self.link = link;
                self.out.clone_from(&self.request);
                return true;
            }
        }
        false
    }

    /// Not done: down if past its time.
    fn waiting(&self, now: Instant) -> Verdict {
        match now >= self.until {
            true => Verdict::Down("no answer within connect_timeout and read_timeout".into()),
            false => Verdict::Waiting,
        }
    }
}

/// The status line that begins `got`, quoted for a log line (at most 64
/// bytes of it, anything but printable ASCII escaped).
fn status_line(got: &[u8]) -> String {
    let end = got
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(got.len());
    let line = &got[..end.min(64)];
    format!("\"{}\"", line.escape_ascii())
}

/// Whether the answer begun in `got` says 2xx or 3xx, once its status
/// line is whole (`HTTP/1.x NNN`); false for anything else.
fn status_ok(got: &[u8]) -> Option<bool> {
    let end = got.windows(2).position(|w| w == b"\r\n")?;
    let line = &got[..end];
    let ok = line.len() >= 12
        && line.starts_with(b"HTTP/1.")
        && line[8] == b' '
        && line[9..12].iter().all(u8::is_ascii_digit)
        && matches!(line[9], b'2' | b'3')
        && line.get(12).is_none_or(|&b| b == b' ');
    Some(ok)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    use super::*;
    use crate::config::{ProxyRule, Upstream};

    #[test]
    fn a_status_line_says_up_for_2xx_and_3xx_only() {
        assert_eq!(status_ok(b"HTTP/1.1 200 OK\r\n"), Some(true));
        assert_eq!(
            status_ok(b"HTTP/1.0 302 Found\r\nLocation: /\r\n"),
            Some(true)
        );
        assert_eq!(status_ok(b"HTTP/1.1 204\r\n"), Some(true));
        assert_eq!(status_ok(b"HTTP/1.1 500 Oops\r\n"), Some(false));
        assert_eq!(status_ok(b"HTTP/1.1 404 Not Found\r\n"), Some(false));
        assert_eq!(status_ok(b"HTTP/1.1 2000 X\r\n"), Some(false));
        assert_eq!(status_ok(b"SSH-2.0-x\r\n"), Some(false));
        assert_eq!(status_ok(b"HTTP/1.1 200 O"), None);
    }

    /// A group of one upstream listening on `listener`, checked with
    /// `/hz` every second.
    fn group(listener: &TcpListener) -> Group {
        let rule = ProxyRule {
            to: vec![Upstream::Tcp {
                addr: listener.local_addr().unwrap(),
                host: "127.0.0.1".into(),
                also: [].into(),
                reached: Default::default(),
                tls: false,
            }],
            health: Some(Health {
                path: "/hz".into(),
                interval: Duration::from_secs(1),
            }),
            ..ProxyRule::default()
        };
        Group::new(&rule)
    }

    /// Moves `g`'s check on until it has a verdict (the upstream's side
    /// served by `answer`).
    fn checked(g: &mut Group, listener: &TcpListener, answer: &[u8]) -> String {
        let now = Instant::now();
        g.check(now);
        let (conn, _) = listener.accept().unwrap();
        served(g, conn, answer, now)
    }

    /// Reads `g`'s check on `conn`, answers `answer`, and moves the check
    /// on until it has a verdict: what it asked.
    fn served(g: &mut Group, mut conn: std::net::TcpStream, answer: &[u8], now: Instant) -> String {
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut got = Vec::new();
        let mut piece = [0u8; 512];
        while !got.ends_with(b"\r\n\r\n") {
            g.check(now);
            let n = conn.read(&mut piece).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&piece[..n]);
        }
        conn.write_all(answer).unwrap();
        drop(conn);
        for _ in 0..1000 {
            g.check(now);
            if g.peers[0].check.flight.is_none() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(g.peers[0].check.flight.is_none(), "a verdict");
        String::from_utf8(got).unwrap()
    }

    #[test]
    fn a_check_goes_to_the_names_next_address_when_the_first_refuses() {
        let dead = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut g = group(&listener);
        g.to[0] = Upstream::Tcp {
            addr: dead,
            host: "localhost".into(),
            also: [listener.local_addr().unwrap()].into(),
            reached: Default::default(),
            tls: false,
        };
        listener.set_nonblocking(true).unwrap();
        let now = Instant::now();
        let mut conn = None;
        for _ in 0..1000 {
            g.check(now);
            if let Ok((c, _)) = listener.accept() {
                conn = Some(c);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let conn = conn.expect("checked on the second address");
        conn.set_nonblocking(false).unwrap();
        served(&mut g, conn, b"HTTP/1.1 200 OK\r\n\r\n", now);
        assert!(!g.peers[0].check_down, "up");
    }

    #[test]
    fn a_check_asks_its_path_and_an_error_marks_down_until_a_success() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut g = group(&listener);
        let port = listener.local_addr().unwrap().port();
        let asked = checked(&mut g, &listener, b"HTTP/1.1 503 Busy\r\n\r\n");
        assert_eq!(
            asked,
            format!(
                "GET /hz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
                 User-Agent: brisk health check\r\nConnection: close\r\n\r\n"
            )
        );
        let now = Instant::now();
        assert!(!g.is_up(0, now));
        let news = g.take_news();
        assert_eq!(news.len(), 1, "{news:?}");
        assert!(news[0].0, "down");
        assert_eq!(
            news[0].1,
            format!(
                "proxy http://127.0.0.1:{port}: health check GET /hz: \
                 answered \"HTTP/1.1 503 Busy\"; down until a check succeeds"
            )
        );
        // (None before its interval.)
        g.check(now);
        assert!(g.peers[0].check.flight.is_none());
        g.peers[0].check.next = None;
        // Another failure says nothing more: the log has the change.
        g.peers[0].check.next = None;
        checked(&mut g, &listener, b"HTTP/1.1 500 Oops\r\n\r\n");
        assert_eq!(g.take_news(), []);
        g.peers[0].check.next = None;
        checked(
            &mut g,
            &listener,
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        );
        assert!(g.is_up(0, now));
        assert_eq!(
            g.take_news(),
            [(
                false,
                format!("proxy http://127.0.0.1:{port}: health check GET /hz passed; up again")
            )]
        );
    }

    #[test]
    fn an_upstream_refusing_the_check_is_down() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut g = group(&listener);
        drop(listener);
        let now = Instant::now();
        for _ in 0..1000 {
            g.check(now);
            if !g.is_up(0, now) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!g.is_up(0, now));
    }

    #[test]
    fn a_silent_upstream_is_down_after_connect_and_read_timeouts() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut g = group(&listener);
        let now = Instant::now();
        g.check(now);
        let (_conn, _) = listener.accept().unwrap();
        g.check(now);
        assert!(g.is_up(0, now), "not yet");
        // (5 s to connect and 60 s to read, by default.)
        let late = now + Duration::from_secs(65);
        g.check(late);
        assert!(!g.is_up(0, late));
        assert!(g.peers[0].check.flight.is_none(), "given up");
    }
}
