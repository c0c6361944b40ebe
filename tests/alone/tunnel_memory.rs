//! What an idle WebSocket tunnel through the reverse proxy holds on the
//! heap (issue #27, bench/proxy scenario 5: bytes per idle tunnel). The
//! server runs in this process under the counting allocator; the
//! upstream (a thread that answers each handshake with a 101 and keeps
//! the connection) and the clients are the test's, not counted. A few
//! hundred tunnels are opened and left idle; then one of them carries
//! bytes both ways, so what an idle tunnel gave back is made again when
//! it wakes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::counting::{not_counted, LIVE};
use crate::embedded::Embedded;

const TUNNELS: usize = 200;

/// Heap bytes an idle tunnel may hold at most: 626 now (debug build,
/// 200 tunnels), of which its connection's slot in the worker's slab 272
/// (342 with the slab's room to grow at 200 connections), the
/// connection's tunnel state (`server/tunnel.rs`: the producer's box,
/// what the access-log line needs, where the tunnel's bytes began) 104,
/// the tunnel producer (`engine/src/handlers/proxy/tunnel.rs`) 168, the
/// log line's request fields 12 (`GET`, `/ws/chat`, `x`). 1,465 were held
/// before the connection became a tunnel of its own (`Proto::Tunnel`):
/// its exchange's slot (352), the whole request kept for the log (its
/// head, fields and path: 283) and the HTTP/1.1 answer's state (136)
/// went, and the producer's empty outbox (80) is boxed only while the
/// client's bytes wait. 2,713 were held before the `ProxyBody` that
/// opened it handed the tunnel over to a producer of its own. (The
/// bound leaves 14 bytes for a connection that grows a field.)
const BOUND: i64 = 640;

const HANDSHAKE: &[u8] = b"GET /ws/chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n\
    Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    Sec-WebSocket-Version: 13\r\n\r\n";

/// RFC 6455 §1.3's answer to that key.
const SWITCH: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
    Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";

/// Reads from `s` through the end of a head; what followed it.
fn head(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return buf.split_off(end + 4);
        }
        let n = s.read(&mut piece).expect("read a head");
        assert!(n > 0, "closed before its head ended");
        buf.extend_from_slice(&piece[..n]);
    }
}

/// The upstream: answers every handshake with a 101, then keeps the
/// connection (in the list it returns), reading nothing more.
fn upstream() -> (SocketAddr, Arc<Mutex<Vec<TcpStream>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let kept = Arc::new(Mutex::new(Vec::new()));
    let list = kept.clone();
    std::thread::spawn(move || {
        not_counted(true);
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            conn.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let rest = head(&mut conn);
            assert!(rest.is_empty(), "bytes after the handshake: {rest:?}");
            conn.write_all(SWITCH).unwrap();
            list.lock().unwrap().push(conn);
        }
    });
    (addr, kept)
}

#[test]
fn an_idle_websocket_tunnel_holds_little_heap() {
    let _alone = crate::counting::alone();
    not_counted(true);
    let (up, upstreams) = upstream();
    let rule = format!("[[reverse_proxy]]\npath = \"/ws/\"\nto = \"http://{up}\"\n");
    let server = Embedded::start("tunnel-memory", &rule);
    let open = || {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(HANDSHAKE).unwrap();
        let mut answer = Vec::new();
        let mut piece = [0u8; 1024];
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut piece).unwrap();
            assert!(n > 0, "closed before the 101");
            answer.extend_from_slice(&piece[..n]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 101 "), "{answer:?}");
        s
    };
    // Warm: one tunnel first, closed, so lazily made state exists.
    drop(open());
    std::thread::sleep(Duration::from_millis(300));
    let before = LIVE.load(Ordering::Relaxed);
    let clients: Vec<TcpStream> = (0..TUNNELS).map(|_| open()).collect();
    let busy = (LIVE.load(Ordering::Relaxed) - before) / TUNNELS as i64;
    // Idle: at once, or within a few of the worker's one-second sweeps.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut idle = busy;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        idle = (LIVE.load(Ordering::Relaxed) - before) / TUNNELS as i64;
        if idle < BOUND {
            break;
        }
    }
    // An idle tunnel still carries bytes both ways, unchanged.
    let mut client = clients.last().unwrap().try_clone().unwrap();
    let mut upstream = {
        let list = upstreams.lock().unwrap();
        assert_eq!(list.len(), TUNNELS + 1, "every tunnel reached the upstream");
        list.last().unwrap().try_clone().unwrap()
    };
    upstream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let ping = [
        0x89u8,
        0x84,
        1,
        2,
        3,
        4,
        b'p' ^ 1,
        b'i' ^ 2,
        b'n' ^ 3,
        b'g' ^ 4,
    ];
    client.write_all(&ping).unwrap();
    let mut got = [0u8; 10];
    upstream.read_exact(&mut got).unwrap();
    assert_eq!(
        got, ping,
        "the client's frame reached the upstream as it was"
    );
    let pong = [0x8au8, 4, b'p', b'o', b'n', b'g'];
    upstream.write_all(&pong).unwrap();
    let mut got = [0u8; 6];
    client.read_exact(&mut got).unwrap();
    assert_eq!(
        got, pong,
        "the upstream's frame reached the client as it was"
    );
    eprintln!("heap per tunnel: {busy} bytes once open, {idle} bytes idle");
    drop(clients);
    server.stop();
    assert!(idle < BOUND, "{busy} -> {idle} bytes per idle tunnel");
}
