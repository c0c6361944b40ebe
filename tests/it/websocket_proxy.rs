//! WebSocket through the reverse proxy (`[[reverse_proxy]]`, `websocket`):
//! a WebSocket echo upstream written here (a thread on 127.0.0.1 that
//! answers the handshake with its `Sec-WebSocket-Accept`, RFC 6455 §4.2.2,
//! then echoes every frame) behind the real binary. What each side gets is
//! checked byte for byte: the forwarded handshake, the 101's head, the
//! frames both ways (the client's masked, unmodified by brisk), a 1 MiB
//! message, the closes from either side, the idle timeout, a rule with
//! `websocket = false`, and an upstream that refuses the switch.

use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;

use common::*;
use sha1::{Digest, Sha1};

/// RFC 6455 §1.3's example key, and the accept value it makes.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// Who brisk says the client is (the test's client, on 127.0.0.1).
const FORWARDED: &str = "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n\
     X-Forwarded-Host: x\r\nForwarded: for=127.0.0.1;proto=http;host=\"x\"\r\n";

/// The handshake a client sends for `path`.
fn handshake(path: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// `Sec-WebSocket-Accept` for `key` (RFC 6455 §4.2.2: SHA-1 of the key
/// and the protocol's GUID, in base64).
fn accept(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64(&h.finalize())
}

/// One frame (RFC 6455 §5.2), final, masked with `mask` if given (a
/// client's frames are, a server's are not).
fn frame(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut f = vec![0x80 | opcode];
    let bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => f.push(bit | n as u8),
        n if n < 65536 => {
            f.push(bit | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(bit | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(m) => {
            f.extend_from_slice(&m);
            f.extend(payload.iter().enumerate().map(|(i, b)| b ^ m[i % 4]));
        }
        None => f.extend_from_slice(payload),
    }
    f
}

/// A frame as read: its opcode, its payload (unmasked), whether it was
/// masked.
#[derive(Debug, PartialEq, Eq)]
struct Frame {
    opcode: u8,
    payload: Vec<u8>,
    masked: bool,
}

/// A byte stream: a socket, or TLS over one.
trait Rw: Read + Write + Send {}
impl<T: Read + Write + Send> Rw for T {}

/// Bytes from a socket (or TLS over it), kept between reads.
struct Wire {
    stream: Box<dyn Rw>,
    /// The socket under it.
    tcp: TcpStream,
    buf: Vec<u8>,
}

impl Wire {
    fn new(tcp: TcpStream) -> Wire {
        tcp.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        tcp.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        Wire {
            stream: Box::new(tcp.try_clone().unwrap()),
            tcp,
            buf: Vec::new(),
        }
    }

    /// TLS (to `a.test`, the harness's certificate) over `tcp`.
    #[cfg(feature = "tls")]
    fn tls(tcp: TcpStream) -> Wire {
        let mut w = Wire::new(tcp);
        let conn = common::tls::client_conn("a.test");
        w.stream = Box::new(rustls::StreamOwned::new(conn, w.tcp.try_clone().unwrap()));
        w
    }

    /// Reads more; false at the end (or an error).
    fn fill(&mut self) -> bool {
        let mut piece = [0u8; 64 * 1024];
        match self.stream.read(&mut piece) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&piece[..n]);
                true
            }
        }
    }

    /// Takes `n` bytes, reading as needed; none if the stream ends first.
    fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.buf.len() < n {
            if !self.fill() {
                return None;
            }
        }
        Some(self.buf.drain(..n).collect())
    }

    /// Takes a head, through its blank line.
    fn head(&mut self) -> Option<String> {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = self.buf.drain(..end + 4).collect();
                return Some(String::from_utf8(head).unwrap());
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Takes one frame.
    fn frame(&mut self) -> Option<Frame> {
        let h = self.take(2)?;
        let masked = h[1] & 0x80 != 0;
        let len = match h[1] & 0x7f {
            126 => u16::from_be_bytes(self.take(2)?.try_into().unwrap()) as usize,
            127 => u64::from_be_bytes(self.take(8)?.try_into().unwrap()) as usize,
            n => n as usize,
        };
        let mask = if masked { self.take(4)? } else { vec![0; 4] };
        let mut payload = self.take(len)?;
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
        assert_eq!(h[0] & 0x80, 0x80, "a final frame");
        Some(Frame {
            opcode: h[0] & 0x0f,
            payload,
            masked,
        })
    }

    /// Whether the peer closes now, with nothing more sent.
    fn ends(&mut self) -> bool {
        !self.fill() && self.buf.is_empty()
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
        self.stream.flush().unwrap();
    }
}

/// A WebSocket echo upstream: what it saw, in order, comes on `seen`
/// (each handshake's head, then `frame OPCODE LEN masked|unmasked`,
/// `close`, `eof`).
struct Echo {
    addr: SocketAddr,
    seen: mpsc::Receiver<String>,
}

impl Echo {
    /// Echoes every frame; a handshake to a path with `deny` is answered
    /// 403, and a request without `Upgrade` 200 (both then close); one
    /// to a path with `reset-at-once` has its connection reset (a TCP
    /// RST) right after the 101 and its first frame. A text frame `bye`
    /// makes it close (a close frame, then its socket), a text frame
    /// `reset` reset its connection; a
    /// client's close frame is echoed, then the socket closes; at the
    /// client's end of input (a half-close) it sends a text frame `after
    /// eof`, then closes.
    fn start() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tell, seen) = mpsc::channel();
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let tell = tell.clone();
                thread::spawn(move || Echo::serve(Wire::new(conn), &tell));
            }
        });
        Echo { addr, seen }
    }

    fn serve(mut w: Wire, tell: &mpsc::Sender<String>) {
        let Some(head) = w.head() else { return };
        let _ = tell.send(head.clone());
        let lower = head.to_ascii_lowercase();
        if head.contains("deny") {
            w.send(
                b"HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\nConnection: close\r\n\r\ndenied",
            );
            return;
        }
        let asked = lower
            .split("\r\n")
            .filter_map(|l| l.strip_prefix("upgrade: "))
            .any(|v| v.split(',').any(|p| p.trim() == "websocket"));
        if !asked {
            w.send(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nno upgrade");
            return;
        }
        let key = head
            .split("\r\n")
            .find(|l| l.to_ascii_lowercase().starts_with("sec-websocket-key: "))
            .map(|l| &l["sec-websocket-key: ".len()..])
            .expect("a key");
        // The switch, and a first frame in the same write.
        let mut answer = format!(
            "HTTP/1.1 101 Switching Protocols\r\nServer: echo\r\n\
             Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\n\r\n",
            accept(key)
        )
        .into_bytes();
        answer.extend_from_slice(&frame(1, b"hello", None));
        w.send(&answer);
        if head.contains("reset-at-once") {
            reset(&w.tcp);
            return;
        }
        loop {
            let Some(f) = w.frame() else {
                let _ = tell.send("eof".into());
                let _ = w.stream.write_all(&frame(1, b"after eof", None));
                let _ = w.stream.flush();
                return;
            };
            let masked = if f.masked { "masked" } else { "unmasked" };
            let _ = tell.send(format!("frame {} {} {masked}", f.opcode, f.payload.len()));
            match (f.opcode, &f.payload[..]) {
                (8, _) => {
                    let _ = tell.send("close".into());
                    w.send(&frame(8, &f.payload, None));
                    return;
                }
                (1, b"bye") => {
                    w.send(&frame(8, &1000u16.to_be_bytes(), None));
                    return;
                }
                (1, b"reset") => {
                    reset(&w.tcp);
                    return;
                }
                (op, payload) => w.send(&frame(op, payload, None)),
            }
        }
    }

    /// The next thing it saw.
    fn next(&self) -> String {
        self.seen
            .recv_timeout(IO_TIMEOUT)
            .expect("the upstream saw nothing")
    }
}

/// Makes the close of `tcp` (and of every handle on its socket) a reset
/// (RST) instead of a FIN: SO_LINGER with a zero time.
fn reset(tcp: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let size = std::mem::size_of::<libc::linger>() as libc::socklen_t;
    // SAFETY: setsockopt reads `linger` (of the size given) and has no
    // other memory effects; the descriptor is owned by `tcp`, alive here.
    let set = unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size,
        )
    };
    assert_eq!(set, 0);
}

/// brisk with `/api/` forwarded to `up`, and `extra` keys on the rule.
fn brisk(up: &Echo, extra: &str) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"static\n");
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\n{extra}\n",
        up.addr
    ));
    b.start()
}

/// The head with its `Date` value masked.
fn masked(head: &str) -> String {
    let start = head.find("\r\nDate: ").expect("a Date") + 8;
    let end = start + head[start..].find("\r\n").unwrap();
    format!("{}{DATE}{}", &head[..start], &head[end..])
}

/// A client that did the handshake to `path` on `s`, and the 101's head.
fn open(s: &Server, path: &str) -> (Wire, String) {
    let mut w = Wire::new(TcpStream::connect(s.addr()).unwrap());
    w.send(handshake(path).as_bytes());
    let head = w.head().expect("an answer");
    (w, head)
}

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// The upstream's close frame (status 1000, unmasked).
fn close_frame() -> Frame {
    Frame {
        opcode: 8,
        payload: 1000u16.to_be_bytes().to_vec(),
        masked: false,
    }
}

/// The head of the 101 a client gets (its `Date` masked): the upstream's
/// `Server` and `Date` stand for brisk's, once each.
const SWITCHED: &str = "HTTP/1.1 101 Switching Protocols\r\nServer: echo\r\nDate: <date>\r\n\
     Upgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\
     Connection: upgrade\r\n\r\n";

/// The handshake to `/api/chat` as the upstream gets it, with `upgrade`
/// (the fields that ask for the switch, or none) last.
fn forwarded_handshake(upgrade: &str) -> String {
    format!(
        "GET /api/chat HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Key: {KEY}\r\n\
         Sec-WebSocket-Version: 13\r\n{FORWARDED}{upgrade}\r\n"
    )
}

/// A tunnel through brisk (with `extra` keys on its rule) to a new echo
/// upstream: the handshake as forwarded and the 101's head checked, and
/// the upstream's first frame read.
fn tunnel(extra: &str) -> (Echo, Server, Wire) {
    let up = Echo::start();
    let s = brisk(&up, extra);
    let (mut w, head) = open(&s, "/api/chat");
    assert_eq!(
        up.next(),
        forwarded_handshake("Connection: upgrade\r\nUpgrade: websocket\r\n")
    );
    assert_eq!(masked(&head), SWITCHED);
    // The frame the upstream wrote with its 101 follows it.
    assert_eq!(w.frame().unwrap().payload, b"hello");
    (up, s, w)
}

#[test]
fn the_accept_value_is_rfc_6455s() {
    assert_eq!(accept(KEY), ACCEPT);
}

#[test]
fn a_handshake_switches_and_frames_pass_both_ways_unmodified() {
    let (up, s, mut w) = tunnel("");
    // The client's masked frames reach the upstream as they were sent.
    let text = frame(1, b"Hello, upstream", Some(MASK));
    w.send(&text);
    assert_eq!(up.next(), "frame 1 15 masked");
    let echoed = w.frame().unwrap();
    assert_eq!((echoed.opcode, echoed.masked), (1, false));
    assert_eq!(echoed.payload, b"Hello, upstream");
    // Byte for byte: the echo is the unmasked frame exactly.
    w.send(&frame(2, &[0, 1, 2, 255], Some([9, 9, 9, 9])));
    assert_eq!(up.next(), "frame 2 4 masked");
    assert_eq!(w.take(6).unwrap(), frame(2, &[0, 1, 2, 255], None));
    // A ping is a frame like any other to brisk.
    w.send(&frame(9, b"p", Some(MASK)));
    assert_eq!(up.next(), "frame 9 1 masked");
    assert_eq!(w.frame().unwrap().opcode, 9);
    // The client closes: its close frame goes on, the upstream's comes
    // back, then the upstream closes and so does the connection.
    w.send(&frame(8, &1000u16.to_be_bytes(), Some(MASK)));
    assert_eq!(up.next(), "frame 8 2 masked");
    assert_eq!(up.next(), "close");
    assert_eq!(w.frame().unwrap(), close_frame());
    assert!(w.ends(), "the connection ends after the upstream's close");
    // Elsewhere a handshake is still refused.
    let (_, refused) = open(&s, "/chat");
    assert!(
        refused.starts_with("HTTP/1.1 501 Not Implemented\r\n"),
        "{refused}"
    );
}

#[test]
fn a_message_of_a_mebibyte_goes_through_and_back() {
    let (up, _s, mut w) = tunnel("");
    let message = pattern(1 << 20);
    let sent = frame(2, &message, Some(MASK));
    let mut writer = w.tcp.try_clone().unwrap();
    let sending = thread::spawn(move || writer.write_all(&sent).unwrap());
    let echoed = w.frame().expect("the echo");
    sending.join().unwrap();
    assert_eq!(up.next(), format!("frame 2 {} masked", 1 << 20));
    assert_eq!(echoed.opcode, 2);
    assert!(echoed.payload == message, "the echo differs");
}

#[test]
fn the_upstreams_close_ends_the_connection() {
    let (up, _s, mut w) = tunnel("");
    w.send(&frame(1, b"bye", Some(MASK)));
    assert_eq!(up.next(), "frame 1 3 masked");
    assert_eq!(w.frame().unwrap(), close_frame());
    assert!(w.ends(), "closed after the upstream closed");
}

#[test]
fn the_clients_half_close_reaches_the_upstream_which_may_still_answer() {
    let (up, _s, mut w) = tunnel("");
    w.send(&frame(1, b"last", Some(MASK)));
    w.tcp.shutdown(Shutdown::Write).unwrap();
    assert_eq!(up.next(), "frame 1 4 masked");
    assert_eq!(up.next(), "eof", "the client's end is passed on");
    assert_eq!(w.frame().unwrap().payload, b"last");
    assert_eq!(w.frame().unwrap().payload, b"after eof");
    assert!(w.ends());
}

#[test]
fn a_tunnel_idle_for_read_timeout_is_closed() {
    let (up, _s, mut w) = tunnel("read_timeout = \"1s\"");
    // Nobody says anything more: brisk closes both sides.
    assert!(w.ends(), "closed for its silence");
    assert_eq!(up.next(), "eof");
}

#[test]
fn a_handshake_that_says_content_length_0_is_one_still() {
    let up = Echo::start();
    let s = brisk(&up, "");
    let mut w = Wire::new(TcpStream::connect(s.addr()).unwrap());
    let hs = handshake("/api/chat").replace("\r\n\r\n", "\r\nContent-Length: 0\r\n\r\n");
    w.send(hs.as_bytes());
    let head = w.head().expect("an answer");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(up.next().contains("\r\nUpgrade: websocket\r\n"));
}

#[test]
fn without_websocket_the_request_goes_plain() {
    let up = Echo::start();
    let s = brisk(&up, "websocket = false");
    let (mut w, head) = open(&s, "/api/chat");
    assert_eq!(up.next(), forwarded_handshake(""));
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(!head.to_ascii_lowercase().contains("upgrade"), "{head}");
    assert_eq!(w.take(10).unwrap(), b"no upgrade");
}

#[test]
fn an_answer_other_than_101_is_passed_on_as_an_answer() {
    let up = Echo::start();
    let s = brisk(&up, "");
    let mut c = s.connect();
    c.send(handshake("/api/deny").as_bytes());
    let r = c.response();
    assert!(up.next().contains("\r\nUpgrade: websocket\r\n"));
    assert_eq!(r.status, 403, "{}", r.head);
    assert_eq!(r.body, b"denied");
    assert_eq!(r.header("upgrade"), None);
    // The connection is no tunnel: it answers its next request.
    c.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body, b"static\n");
}

/// brisk over TLS with `/api/` forwarded to `up`, and a TLS client of it.
#[cfg(feature = "tls")]
fn over_tls(up: &Echo) -> (Server, Wire) {
    let mut b = Builder::new();
    b.tls();
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\n",
        up.addr
    ));
    let s = b.start();
    let w = Wire::tls(TcpStream::connect(s.addr()).unwrap());
    (s, w)
}

#[cfg(feature = "tls")]
#[test]
fn a_tls_client_tunnels_as_a_plain_one() {
    let up = Echo::start();
    let (_s, mut w) = over_tls(&up);
    w.send(handshake("/api/chat").as_bytes());
    let head = w.head().expect("an answer");
    assert_eq!(masked(&head), SWITCHED);
    assert!(up.next().contains("\r\nX-Forwarded-Proto: https\r\n"));
    assert_eq!(w.frame().unwrap().payload, b"hello");
    let message = pattern(256 * 1024);
    w.send(&frame(2, &message, Some(MASK)));
    assert_eq!(up.next(), format!("frame 2 {} masked", 256 * 1024));
    assert!(w.frame().unwrap().payload == message, "the echo differs");
    w.send(&frame(1, b"bye", Some(MASK)));
    assert_eq!(w.frame().unwrap().opcode, 8);
    assert!(w.ends(), "closed after the upstream closed");
}

/// brisk with `/api/` forwarded to `up`, `extra` keys at the top of its
/// configuration, and an access log that says what a tunnel's line says.
fn logged(up: &Echo, extra: &str) -> Server {
    let mut b = Builder::new();
    b.access_log_from_config();
    b.config(&format!(
        "{extra}\n[log]\naccess = \"access.log\"\n\
         format = '$remote_addr \"$request\" $status $body_bytes_sent \"$http_user_agent\" \
         $upstream_addr $upstream_status $upstream_response_time $request_time'\n\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\n",
        up.addr
    ));
    b.start()
}

/// The access-log line of the tunnel to `/api/chat` from `ua` (waited
/// for), which says it sent one of `bytes` to the client after its head,
/// checked up to its two times, which are seconds with milliseconds.
fn tunnel_line(s: &Server, up: &Echo, ua: &str, bytes: &[usize]) -> String {
    let start = "127.0.0.1 \"GET /api/chat HTTP/1.1\" 101 ";
    let line = s.wait_access_line(|l| {
        l.starts_with(start.as_bytes()) && find(l, format!(" \"{ua}\" ").as_bytes()).is_some()
    });
    let line = String::from_utf8(line).unwrap();
    let rest = line[start.len()..].to_string();
    let fields: Vec<&str> = rest.split(' ').collect();
    assert_eq!(fields.len(), 6, "{line:?}");
    let sent: usize = fields[0].parse().unwrap();
    assert!(bytes.contains(&sent), "{line:?}: not {bytes:?} bytes");
    assert_eq!(fields[1], format!("\"{ua}\""), "{line:?}");
    let fields = &fields[2..];
    assert_eq!(fields[..2], [up.addr.to_string(), "101".into()], "{line:?}");
    for time in &fields[2..] {
        let (secs, ms) = time.split_once('.').expect("seconds with milliseconds");
        assert!(secs.parse::<u64>().is_ok() && ms.len() == 3, "{line:?}");
    }
    line
}

/// The handshake to `path` from `ua`.
fn handshake_from(path: &str, ua: &str) -> String {
    handshake(path).replacen(
        "Host: x\r\n",
        &format!("Host: x\r\nUser-Agent: {ua}\r\n"),
        1,
    )
}

/// A client from `ua` whose handshake to `/api/chat` on `s` reached
/// `up`, and who got the 101 and `up`'s first frame.
fn open_from(s: &Server, up: &Echo, ua: &str) -> Wire {
    let mut w = Wire::new(TcpStream::connect(s.addr()).unwrap());
    w.send(handshake_from("/api/chat", ua).as_bytes());
    assert_eq!(masked(&w.head().unwrap()), SWITCHED);
    assert!(up.next().contains(&format!("\r\nUser-Agent: {ua}\r\n")));
    assert_eq!(w.frame().unwrap().payload, b"hello");
    w
}

#[test]
fn a_closed_tunnel_is_logged_101_with_its_bytes_time_and_upstream() {
    let up = Echo::start();
    let s = logged(&up, "");
    let mut w = open_from(&s, &up, "ws-test/1");
    w.send(&frame(1, b"Hello", Some(MASK)));
    assert_eq!(up.next(), "frame 1 5 masked");
    assert_eq!(w.frame().unwrap().payload, b"Hello");
    // Open, it has no line yet (another request's line is there by now).
    assert_eq!(s.get("/api/deny").status, 403);
    s.wait_access_line(|l| l.starts_with(b"127.0.0.1 \"GET /api/deny "));
    let log = std::fs::read_to_string(s.base.path.join("access.log")).unwrap();
    assert!(!log.contains(" 101 "), "{log}");
    // The upstream ends it: one line, with what went to the client after
    // the 101's head (the frames `hello`, `Hello` and the close: 7 + 7 +
    // 4 bytes).
    w.send(&frame(8, &1000u16.to_be_bytes(), Some(MASK)));
    assert_eq!(w.frame().unwrap(), close_frame());
    assert!(w.ends());
    tunnel_line(&s, &up, "ws-test/1", &[18]);
}

#[test]
fn a_tunnel_closed_for_its_silence_or_by_its_client_is_logged_too() {
    let up = Echo::start();
    let s = logged(&up, "");
    // Its client goes away (and the upstream then writes to nobody).
    let w = open_from(&s, &up, "gone/1");
    drop(w);
    assert_eq!(up.next(), "eof");
    // (The upstream's `after eof` may have left before the client's
    // system refused it.)
    tunnel_line(&s, &up, "gone/1", &[7, 7 + 11]);
    // Silent for read_timeout.
    let up = Echo::start();
    let mut b = Builder::new();
    b.access_log_from_config();
    b.config(&format!(
        "[log]\naccess = \"access.log\"\nformat = '$request $status $body_bytes_sent'\n\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\nread_timeout = \"1s\"\n",
        up.addr
    ));
    let s = b.start();
    let (mut w, head) = open(&s, "/api/chat");
    assert_eq!(masked(&head), SWITCHED);
    assert_eq!(w.frame().unwrap().payload, b"hello");
    assert!(w.ends(), "closed for its silence");
    let line = s.wait_access_line(|l| l.starts_with(b"GET /api/chat "));
    assert_eq!(line, b"GET /api/chat HTTP/1.1 101 7");
    s.wait_stderr_line("the tunnel was idle for read_timeout; closed");
}

#[test]
fn a_tunnel_whose_client_resets_it_is_logged_with_its_whole_time() {
    use std::os::fd::AsRawFd;
    let up = Echo::start();
    let s = logged(&up, "");
    let w = open_from(&s, &up, "reset/1");
    // SO_LINGER 0: the close is a reset (RST), not a FIN.
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let size = std::mem::size_of::<libc::linger>() as libc::socklen_t;
    let fd = w.tcp.as_raw_fd();
    let set = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size,
        )
    };
    assert_eq!(set, 0);
    drop(w);
    // The upstream's connection closes, and the line has the upstream's
    // time (`tunnel_line` checks it is one).
    assert_eq!(up.next(), "eof");
    tunnel_line(&s, &up, "reset/1", &[7]);
}

#[test]
fn a_tunnel_outlives_a_reload_and_is_logged_at_its_end() {
    let up = Echo::start();
    let s = logged(&up, "");
    let mut w = open_from(&s, &up, "before/1");
    s.signal(libc::SIGHUP);
    let line = s.wait_stderr_line("SIGHUP:");
    assert!(line.contains("reloaded"), "{line}");
    // The new workers serve (a tunnel of their own)...
    let _fresh = open_from(&s, &up, "after/1");
    // ...while the old tunnel still carries bytes both ways, to its end.
    w.send(&frame(1, b"still", Some(MASK)));
    assert_eq!(up.next(), "frame 1 5 masked");
    assert_eq!(w.frame().unwrap().payload, b"still");
    w.send(&frame(1, b"bye", Some(MASK)));
    assert_eq!(w.frame().unwrap(), close_frame());
    assert!(w.ends());
    tunnel_line(&s, &up, "before/1", &[7 + 7 + 4]);
}

#[test]
fn a_stop_closes_an_open_tunnel_at_its_deadline_and_logs_it() {
    let up = Echo::start();
    let s = logged(&up, "[timeouts]\nshutdown = \"1s\"\n");
    let mut w = open_from(&s, &up, "stopped/1");
    s.signal(libc::SIGTERM);
    assert!(w.ends(), "closed when the server stops");
    assert_eq!(up.next(), "eof", "the upstream's connection closes too");
    tunnel_line(&s, &up, "stopped/1", &[7]);
}

/// An upstream that resets its tunnel (a crash, a TCP RST) has not ended
/// it: the error log says so, as for any answer cut short, where an
/// orderly close says nothing.
#[test]
fn an_upstream_that_resets_a_tunnel_is_logged_as_cutting_it() {
    let (up, s, mut w) = tunnel("");
    w.send(&frame(1, b"reset", Some(MASK)));
    assert_eq!(up.next(), "frame 1 5 masked");
    assert!(w.ends(), "the client's connection closes");
    let line = s.wait_stderr_line("the upstream broke the tunnel off");
    assert!(line.contains("[error] proxy http://"), "{line}");
    assert!(line.contains("reset"), "{line}");
}

/// Whether the peer of `w` has closed its connection (a FIN or a
/// reset) by the time a read returns: a read that times out (the peer
/// left it open) is no close. (`Wire::ends` takes a timeout for an end.)
fn closed_now(w: &mut Wire) -> Result<(), String> {
    let mut piece = [0u8; 64 * 1024];
    loop {
        match w.tcp.read(&mut piece) {
            Ok(0) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
            // (What came before the close.)
            Ok(_) => {}
            Err(e) => return Err(format!("no close, {e}: the connection was left open")),
        }
    }
}

/// The client's connection is closed at once when the upstream resets
/// its tunnel, not left open for `read_timeout` (far longer than the
/// client's wait here).
#[test]
fn an_upstream_that_resets_a_tunnel_has_the_clients_connection_closed() {
    let (up, _s, mut w) = tunnel("read_timeout = \"60s\"");
    w.send(&frame(1, b"reset", Some(MASK)));
    assert_eq!(up.next(), "frame 1 5 masked");
    closed_now(&mut w).unwrap();
}

/// The same when the reset comes with the 101 (the answer's reader has
/// not handed the socket to the tunnel's yet).
#[test]
fn an_upstream_that_resets_right_after_its_101_is_logged_as_cutting_it() {
    let up = Echo::start();
    let s = brisk(&up, "read_timeout = \"60s\"");
    let (mut w, head) = open(&s, "/api/reset-at-once");
    up.next();
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    closed_now(&mut w).unwrap();
    let line = s.wait_stderr_line("the upstream broke the tunnel off");
    assert!(line.contains("reset"), "{line}");
}

/// WebSockets over HTTP/2 (RFC 8441): an extended CONNECT on a stream.
#[cfg(feature = "http2")]
mod h2 {
    use super::*;
    use brisk::h2::frame::{self, flag, kind, setting};
    use brisk::h2::hpack;
    use common::h2::{Frame as H2Frame, H2};

    /// The settings of the server's first SETTINGS frame.
    fn server_settings(c: &mut H2) -> Vec<(u16, u32)> {
        let f = c.frame().expect("SETTINGS");
        assert_eq!((f.kind, f.flags), (kind::SETTINGS, 0));
        f.payload
            .chunks(6)
            .map(|p| {
                let id = u16::from_be_bytes([p[0], p[1]]);
                (id, u32::from_be_bytes([p[2], p[3], p[4], p[5]]))
            })
            .collect()
    }

    /// Opens stream `id` with an extended CONNECT for `protocol` to `path`.
    fn connect(c: &mut H2, id: u32, path: &str, protocol: &str) {
        connect_ending(c, id, path, protocol, false);
    }

    /// [`connect`], its HEADERS ending the stream if `end`.
    fn connect_ending(c: &mut H2, id: u32, path: &str, protocol: &str, end: bool) {
        let mut block = Vec::new();
        for (n, v) in [
            (":method", "CONNECT"),
            (":protocol", protocol),
            (":scheme", "http"),
            (":path", path),
            (":authority", "x"),
            ("sec-websocket-version", "13"),
        ] {
            hpack::encode_field(n.as_bytes(), v.as_bytes(), &mut block);
        }
        let mut out = Vec::new();
        frame::write_headers(&mut out, id, &block, end, 16_384);
        c.send(&out);
        c.next = c.next.max(id + 2);
    }

    /// The head of stream `id` (frames before it passed over).
    fn head_of(c: &mut H2, id: u32, window: &mut i64) -> H2Frame {
        loop {
            if let Some(f) = on_stream(c, id, window) {
                assert_eq!(f.kind, kind::HEADERS, "{f:?}");
                return f;
            }
        }
    }

    /// The next frame on stream `id` (other streams' and the
    /// connection's are passed over; DATA's credit goes back, and a
    /// WINDOW_UPDATE for the stream adds to `window`: `None` then).
    fn on_stream(c: &mut H2, id: u32, window: &mut i64) -> Option<H2Frame> {
        loop {
            let f = c.frame().expect("the stream's frames");
            if f.kind == kind::WINDOW_UPDATE && f.stream == id {
                *window += i64::from(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
                return None;
            }
            if f.stream != id {
                continue;
            }
            if f.kind == kind::DATA && !f.payload.is_empty() {
                let mut out = Vec::new();
                let n = f.payload.len() as u32;
                frame::write_window_update(&mut out, 0, n);
                frame::write_window_update(&mut out, id, n);
                c.send(&out);
            }
            return Some(f);
        }
    }

    /// Sends `bytes` as DATA on stream `id` within its window (waiting
    /// for the server's credit), and reads what comes back meanwhile
    /// until `want` bytes of DATA have: those bytes.
    fn exchange(c: &mut H2, id: u32, bytes: &[u8], want: usize, window: &mut i64) -> Vec<u8> {
        let (mut sent, mut got) = (0, Vec::new());
        while got.len() < want {
            while sent < bytes.len() && *window > 0 {
                let n = (bytes.len() - sent).min(16_384).min(*window as usize);
                let mut out = frame::data_head(id, n, false).to_vec();
                out.extend_from_slice(&bytes[sent..sent + n]);
                c.send(&out);
                sent += n;
                *window -= n as i64;
            }
            if let Some(f) = on_stream(c, id, window) {
                assert_eq!(f.kind, kind::DATA, "{f:?}");
                got.extend_from_slice(&f.payload);
            }
        }
        assert_eq!(sent, bytes.len());
        got
    }

    #[test]
    fn an_extended_connect_is_a_websocket_to_an_http1_upstream() {
        let up = Echo::start();
        let s = brisk(&up, "");
        let mut c = H2::connect(s.addr(), &[], 0);
        assert!(
            server_settings(&mut c).contains(&(setting::ENABLE_CONNECT_PROTOCOL, 1)),
            "RFC 8441 §3: advertised"
        );
        connect(&mut c, 1, "/api/chat", "websocket");
        // The upstream gets the HTTP/1.1 handshake, with a key of brisk's.
        let head = up.next();
        let key_at = head.find("sec-websocket-key: ").expect("a key") + 19;
        let key = &head[key_at..key_at + 24];
        assert_eq!(key.len(), 24);
        assert!(key.ends_with("=="), "16 bytes in base64: {key}");
        assert_eq!(
            head.replace(key, "<key>"),
            "GET /api/chat HTTP/1.1\r\nHost: x\r\nsec-websocket-version: 13\r\n\
             sec-websocket-key: <key>\r\nX-Forwarded-For: 127.0.0.1\r\n\
             X-Forwarded-Proto: http\r\nX-Forwarded-Host: x\r\n\
             Forwarded: for=127.0.0.1;proto=http;host=\"x\"\r\n\
             Connection: upgrade\r\nUpgrade: websocket\r\n\r\n"
        );
        // Its 101 is a 200 on the stream, which stays open.
        let mut window = 256 * 1024;
        let h = on_stream(&mut c, 1, &mut window).expect("a head");
        assert_eq!(h.kind, kind::HEADERS);
        assert_eq!(h.flags & flag::END_STREAM, 0, "the stream stays open");
        let names: Vec<&str> = h.fields.iter().map(|(n, _)| n.as_str()).collect();
        // The upstream's `server` and `date` (`server = "upstream"`),
        // once each.
        assert_eq!(names, [":status", "server", "date"], "{:?}", h.fields);
        assert_eq!(h.fields[0].1, "200");
        assert_eq!(h.fields[1].1, "echo");
        assert_eq!(h.fields[2].1, "Sun, 06 Nov 1994 08:49:37 GMT");
        // Then DATA ⇄ bytes: the upstream's first frame, then echoes.
        let hello = frame(1, b"hello", None);
        let got = exchange(&mut c, 1, &[], hello.len(), &mut window);
        assert_eq!(got, hello);
        let text = frame(1, b"over h2", Some(MASK));
        let got = exchange(&mut c, 1, &text, 9, &mut window);
        assert_eq!(up.next(), "frame 1 7 masked");
        assert_eq!(got, frame(1, b"over h2", None));
        // A message past the stream's window: sent as brisk gives credit.
        let message = pattern(1 << 20);
        let echo = frame(2, &message, None);
        let got = exchange(
            &mut c,
            1,
            &frame(2, &message, Some(MASK)),
            echo.len(),
            &mut window,
        );
        assert_eq!(up.next(), format!("frame 2 {} masked", 1 << 20));
        assert!(got == echo, "the echo differs");
        // END_STREAM is the client's half-close: the upstream sees its
        // end, answers, closes, and the stream ends.
        c.send(&frame::data_head(1, 0, true));
        assert_eq!(up.next(), "eof");
        // (Its last bytes and END_STREAM: in one frame or two.)
        let mut rest = Vec::new();
        loop {
            let Some(f) = on_stream(&mut c, 1, &mut window) else {
                continue;
            };
            assert_eq!(f.kind, kind::DATA, "{f:?}");
            rest.extend_from_slice(&f.payload);
            if f.flags & flag::END_STREAM != 0 {
                break;
            }
        }
        assert_eq!(rest, frame(1, b"after eof", None));
        // Elsewhere, and for another protocol: refused on the stream.
        connect(&mut c, 3, "/chat", "websocket");
        connect(&mut c, 5, "/api/chat", "connect-udp");
        let answers = c.answers(&[3, 5]);
        assert_eq!((answers[0].status(), answers[1].status()), ("501", "501"));
    }

    #[test]
    fn an_extended_connects_access_log_line_names_its_upstream() {
        let up = Echo::start();
        let s = logged(&up, "");
        let mut c = H2::connect(s.addr(), &[], 0);
        server_settings(&mut c);
        connect(&mut c, 1, "/api/chat", "websocket");
        up.next();
        let mut window = 256 * 1024;
        let h = on_stream(&mut c, 1, &mut window).expect("a head");
        assert_eq!((h.kind, &*h.fields[0].1), (kind::HEADERS, "200"));
        let hello = frame(1, b"hello", None);
        assert_eq!(exchange(&mut c, 1, &[], hello.len(), &mut window), hello);
        // The upstream's 101, its address and the tunnel's whole time.
        c.send(&frame::data_head(1, 0, true));
        assert_eq!(up.next(), "eof");
        // (Logged as the HTTP/1.1 request it became.)
        let line = s.wait_access_line(|l| find(l, b"HTTP/2.0\" 200 ").is_some());
        let line = String::from_utf8(line).unwrap();
        let upstream = format!(" 200 {} \"-\" {} 101 0.", 7 + 11, up.addr);
        assert!(line.contains(&upstream), "{line:?}: not {upstream:?}…");
    }

    /// A tunnel whose client goes away (its connection closed, as a
    /// browser's tab) is logged with its upstream's whole time as one
    /// the upstream ended, not `-`.
    #[test]
    fn an_extended_connect_whose_client_leaves_is_logged_with_its_whole_time() {
        let up = Echo::start();
        let s = logged(&up, "");
        let mut c = H2::connect(s.addr(), &[], 0);
        server_settings(&mut c);
        connect(&mut c, 1, "/api/chat", "websocket");
        up.next();
        let mut window = 256 * 1024;
        let h = on_stream(&mut c, 1, &mut window).expect("a head");
        assert_eq!((h.kind, &*h.fields[0].1), (kind::HEADERS, "200"));
        let hello = frame(1, b"hello", None);
        assert_eq!(exchange(&mut c, 1, &[], hello.len(), &mut window), hello);
        drop(c);
        assert_eq!(up.next(), "eof", "the upstream's connection closes");
        let line = s.wait_access_line(|l| find(l, b"HTTP/2.0\" 200 ").is_some());
        let line = String::from_utf8(line).unwrap();
        let upstream = format!(" 200 7 \"-\" {} 101 ", up.addr);
        let at = line.find(&upstream).map(|i| i + upstream.len());
        let at = at.unwrap_or_else(|| panic!("{line:?}: not {upstream:?}…"));
        let time = line[at..].split(' ').next().unwrap();
        let (secs, ms) = time.split_once('.').unwrap_or_else(|| panic!("{line:?}"));
        assert!(secs.parse::<u64>().is_ok() && ms.len() == 3, "{line:?}");
    }

    #[test]
    fn without_websocket_rules_nothing_is_advertised() {
        let up = Echo::start();
        let s = brisk(&up, "websocket = false");
        let mut c = H2::connect(s.addr(), &[], 0);
        let settings = server_settings(&mut c);
        assert!(
            settings
                .iter()
                .all(|&(id, _)| id != setting::ENABLE_CONNECT_PROTOCOL),
            "{settings:?}"
        );
        // An extended CONNECT all the same is refused, not sent on as a
        // plain request whose 200 would stand for an open tunnel (RFC
        // 8441 §5).
        connect(&mut c, 1, "/api/chat", "websocket");
        assert_eq!(c.answers(&[1])[0].status(), "501");
        // Nor where another rule takes WebSockets (and the setting is
        // offered).
        let mut b = Builder::new();
        b.config(&format!(
            "[[reverse_proxy]]\npath = \"/plain/\"\nto = \"http://{0}\"\nwebsocket = false\n\
             [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{0}\"\n",
            up.addr
        ));
        let s = b.start();
        let mut c = H2::connect(s.addr(), &[], 0);
        assert!(server_settings(&mut c).contains(&(setting::ENABLE_CONNECT_PROTOCOL, 1)));
        connect(&mut c, 1, "/plain/chat", "websocket");
        assert_eq!(c.answers(&[1])[0].status(), "501");
    }

    /// A WebSocket's tunnel lives for hours: open ones do not count among
    /// the 16 upstream requests a connection runs at once, so a page with
    /// many sockets still gets its other requests (and more sockets)
    /// answered; the stream limit bounds tunnels.
    #[test]
    fn open_tunnels_do_not_hold_up_a_connections_other_requests() {
        let up = Echo::start();
        let s = brisk(&up, "");
        let mut c = H2::connect(s.addr(), &[], 1 << 24);
        server_settings(&mut c);
        let mut window = 256 * 1024;
        for i in 0..20u32 {
            let id = 1 + 2 * i;
            connect(&mut c, id, "/api/chat", "websocket");
            assert!(up.next().starts_with("GET /api/chat "), "tunnel {i}");
            assert_eq!(head_of(&mut c, id, &mut window).fields[0].1, "200");
        }
        let id = c.get("/api/plain", &[]);
        let a = &c.answers(&[id])[0];
        assert_eq!((a.status(), &a.body[..]), ("200", &b"no upgrade"[..]));
    }

    /// Bytes a client sends on its tunnel before the upstream switched
    /// are held, then passed on once it has; a client whose HEADERS end
    /// the stream has its half-close passed on then too.
    #[test]
    fn a_tunnels_early_bytes_and_early_end_are_passed_on_once_it_opens() {
        let up = Echo::start();
        let s = brisk(&up, "");
        let mut c = H2::connect(s.addr(), &[], 0);
        server_settings(&mut c);
        connect(&mut c, 1, "/api/chat", "websocket");
        let early = frame(1, b"early", Some(MASK));
        let mut out = frame::data_head(1, early.len(), false).to_vec();
        out.extend_from_slice(&early);
        c.send(&out);
        assert!(up.next().starts_with("GET /api/chat "));
        assert_eq!(up.next(), "frame 1 5 masked");
        let mut window = 256 * 1024;
        assert_eq!(head_of(&mut c, 1, &mut window).fields[0].1, "200");
        let hello = frame(1, b"hello", None);
        let echo = frame(1, b"early", None);
        let got = exchange(&mut c, 1, &[], hello.len() + echo.len(), &mut window);
        assert_eq!(got, [hello, echo].concat());
        // Ended with its HEADERS: the upstream sees the end after the
        // switch, answers, closes; the stream ends.
        connect_ending(&mut c, 3, "/api/chat", "websocket", true);
        assert!(up.next().starts_with("GET /api/chat "));
        assert_eq!(up.next(), "eof");
        let a = &c.answers(&[3])[0];
        assert_eq!(a.status(), "200");
        assert_eq!(
            a.body,
            [frame(1, b"hello", None), frame(1, b"after eof", None)].concat()
        );
    }

    /// RFC 8441 §5: an orderly close of the upstream's TCP connection is
    /// END_STREAM, its reset (RST) is RST_STREAM with CANCEL. A client
    /// told END_STREAM would take a cut stream for a whole one.
    #[test]
    fn an_upstream_that_resets_a_tunnel_has_its_stream_reset() {
        let up = Echo::start();
        let s = brisk(&up, "");
        let mut c = H2::connect(s.addr(), &[], 0);
        server_settings(&mut c);
        connect(&mut c, 1, "/api/chat", "websocket");
        assert!(up.next().starts_with("GET /api/chat "));
        let mut window = 256 * 1024;
        assert_eq!(head_of(&mut c, 1, &mut window).fields[0].1, "200");
        let hello = frame(1, b"hello", None);
        assert_eq!(exchange(&mut c, 1, &[], hello.len(), &mut window), hello);
        let reset = frame(1, b"reset", Some(MASK));
        let mut out = frame::data_head(1, reset.len(), false).to_vec();
        out.extend_from_slice(&reset);
        c.send(&out);
        assert_eq!(up.next(), "frame 1 5 masked");
        let end = loop {
            let Some(f) = on_stream(&mut c, 1, &mut window) else {
                continue;
            };
            match f.kind {
                kind::DATA if f.flags & flag::END_STREAM == 0 => continue,
                _ => break f,
            }
        };
        assert_eq!(
            (end.kind, &end.payload[..]),
            (kind::RST_STREAM, &8u32.to_be_bytes()[..]),
            "RST_STREAM CANCEL: {end:?}"
        );
        s.wait_stderr_line("the upstream broke the tunnel off");
    }
}

/// "h2c smuggling": a switch to a protocol that carries HTTP requests on
/// (h2c, HTTP/x, TLS/x) would let the client send requests to the
/// upstream through the tunnel, past every rule brisk holds them to. It
/// is never passed on: the request goes plain, as with `websocket =
/// false`, on a plain listener where brisk does not take h2c itself and
/// over TLS, where h2c is not spoken.
#[test]
fn an_upgrade_to_a_protocol_that_carries_http_is_never_passed_on() {
    let up = Echo::start();
    let mut b = Builder::new();
    b.config(&format!(
        "[http2]\ncleartext = false\n\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\n",
        up.addr
    ));
    let s = b.start();
    for upgrade in ["h2c", "H2C", "websocket, h2c", "HTTP/2.0", "TLS/1.2", "h2"] {
        let mut w = Wire::new(TcpStream::connect(s.addr()).unwrap());
        w.send(
            format!(
                "GET /api/chat HTTP/1.1\r\nHost: x\r\nUpgrade: {upgrade}\r\n\
                 HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\
                 Connection: Upgrade, HTTP2-Settings\r\n\r\n"
            )
            .as_bytes(),
        );
        let head = w.head().expect("an answer");
        assert_eq!(
            up.next(),
            format!("GET /api/chat HTTP/1.1\r\nHost: x\r\n{FORWARDED}\r\n"),
            "{upgrade}"
        );
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{upgrade}: {head}");
        assert_eq!(w.take(10).unwrap(), b"no upgrade", "{upgrade}");
    }
    // A WebSocket still switches on the same server.
    let (mut w, head) = open(&s, "/api/chat");
    assert_eq!(masked(&head), SWITCHED);
    assert_eq!(w.frame().unwrap().payload, b"hello");
}

/// A connection to `s` that sent the WebSocket handshake for /api/chat
/// with `upgrade` (its lines) in place of its `Upgrade` line.
fn handshake_with(s: &Server, upgrade: &str) -> Wire {
    let mut w = Wire::new(TcpStream::connect(s.addr()).unwrap());
    let head = handshake("/api/chat").replace("Upgrade: websocket\r\n", upgrade);
    w.send(head.as_bytes());
    w
}

/// `Upgrade` on two lines is one list (RFC 9110 §5.3, §7.8): the
/// upstream is asked for all of it, as brisk checked it, not for the
/// first line's protocols alone.
#[test]
fn an_upgrade_on_two_lines_goes_on_as_one_list() {
    let up = Echo::start();
    let s = brisk(&up, "");
    let mut w = handshake_with(&s, "Upgrade: foo\r\nUpgrade: websocket\r\n");
    assert_eq!(
        up.next(),
        forwarded_handshake("Connection: upgrade\r\nUpgrade: foo, websocket\r\n")
    );
    assert_eq!(masked(&w.head().expect("an answer")), SWITCHED);
    assert_eq!(w.frame().unwrap().payload, b"hello");
}

/// One whose second line names h2c is a switch to a protocol that
/// carries HTTP, as `Upgrade: websocket, h2c` is: the request goes plain
/// (its first line alone was checked, and passed on, before).
#[test]
fn an_upgrade_whose_second_line_names_h2c_is_not_passed_on() {
    let up = Echo::start();
    let s = brisk(&up, "");
    let mut w = handshake_with(&s, "Upgrade: websocket\r\nUpgrade: h2c\r\n");
    assert_eq!(up.next(), forwarded_handshake(""));
    let head = w.head().expect("an answer");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(w.take(10).unwrap(), b"no upgrade");
}

/// An `Upgrade` that names no protocol (empty, or empty elements only)
/// asks for no switch: the request goes plain, not with an empty
/// `Upgrade` that `Connection` names.
#[test]
fn an_upgrade_that_names_no_protocol_is_not_passed_on() {
    let up = Echo::start();
    let s = brisk(&up, "");
    for upgrade in [
        "Upgrade:\r\n",
        "Upgrade: , \r\n",
        "Upgrade: ,\r\nUpgrade:\r\n",
    ] {
        let mut w = Wire::new(TcpStream::connect(s.addr()).unwrap());
        w.send(
            handshake("/api/chat")
                .replace("Upgrade: websocket\r\n", upgrade)
                .as_bytes(),
        );
        assert_eq!(up.next(), forwarded_handshake(""), "{upgrade:?}");
        let head = w.head().expect("an answer");
        assert!(
            head.starts_with("HTTP/1.1 200 OK\r\n"),
            "{upgrade:?}: {head}"
        );
    }
}

/// An upstream that answers every request with `answer` and a first
/// frame `hello`, then reads on: what it saw comes on the channel (each
/// head, then `eof` once brisk closed the connection, or `bytes` if
/// brisk sent it anything more).
fn switching(answer: &'static str) -> (SocketAddr, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tell, seen) = mpsc::channel();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let tell = tell.clone();
            thread::spawn(move || {
                let mut w = Wire::new(conn);
                let Some(head) = w.head() else { return };
                let _ = tell.send(head);
                let mut out = answer.as_bytes().to_vec();
                out.extend_from_slice(&frame(1, b"hello", None));
                w.send(&out);
                let _ = tell.send(if w.fill() { "bytes" } else { "eof" }.into());
            });
        }
    });
    (addr, seen)
}

/// What a client that sent `request` to brisk (a rule to an upstream
/// answering `answer`, with `extra` keys) gets: the answer's head, and
/// what the upstream saw after it answered.
fn switched_to(answer: &'static str, extra: &str, request: &str) -> (String, String) {
    let (addr, seen) = switching(answer);
    let mut b = Builder::new();
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{addr}\"\n{extra}\n"
    ));
    let s = b.start();
    let mut w = Wire::new(TcpStream::connect(s.addr()).unwrap());
    w.send(request.as_bytes());
    let head = w.head().expect("an answer");
    seen.recv_timeout(IO_TIMEOUT).expect("a request");
    if head.starts_with("HTTP/1.1 101 ") {
        // (A tunnel: it closes with its client.)
        drop(w);
    }
    let after = seen.recv_timeout(IO_TIMEOUT).expect("the upstream's end");
    (head, after)
}

/// A 101 that is no switch the client asked for is a 502, and no
/// tunnel: from an HTTP/1.0 upstream (RFC 9110 §15.2.2: 101 is not
/// HTTP/1.0's, a server never sends it to an HTTP/1.0 request, which is
/// what brisk's would be to it), to a request that asked for no switch,
/// or to a protocol the client did not offer (RFC 9110 §7.8).
#[test]
fn a_101_that_is_no_switch_asked_for_is_a_502() {
    let cases = [
        (
            "HTTP/1.0 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            "",
            handshake("/api/chat"),
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            "websocket = false",
            handshake("/api/chat"),
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            "",
            "GET /api/chat HTTP/1.1\r\nHost: x\r\n\r\n".to_string(),
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\n",
            "",
            handshake("/api/chat"),
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket, foo\r\nConnection: Upgrade\r\n\r\n",
            "",
            handshake("/api/chat"),
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\n",
            "",
            handshake("/api/chat"),
        ),
    ];
    let mut wrong = Vec::new();
    for (answer, extra, request) in cases {
        let (head, after) = switched_to(answer, extra, &request);
        // (Then the upstream's connection is closed.)
        if !head.starts_with("HTTP/1.1 502 ") || after != "eof" {
            wrong.push(format!("{answer:?} {extra:?}: {head} {after}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // A 101 to a protocol offered, any case, or to one of several.
    let offered = handshake("/api/chat").replace("Upgrade: websocket", "Upgrade: foo, WebSocket");
    let (head, _) = switched_to(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "",
        &offered,
    );
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
}

#[cfg(feature = "tls")]
#[test]
fn an_h2c_upgrade_over_tls_is_not_passed_on() {
    let up = Echo::start();
    let (_s, mut w) = over_tls(&up);
    w.send(
        b"GET /api/chat HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\
          HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n",
    );
    let head = w.head().expect("an answer");
    let seen = up.next();
    assert!(seen.starts_with("GET /api/chat HTTP/1.1\r\n"), "{seen}");
    let lower = seen.to_ascii_lowercase();
    assert!(
        !lower.contains("upgrade") && !lower.contains("http2-settings"),
        "{seen}"
    );
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
}
