//! Connection limits per client address: the excess from one address is
//! refused at once while other addresses are still served.

use crate::common;

use common::*;

#[test]
fn per_ip_limit_refuses_only_that_address() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA");
    b.config("[limits]\nmax_connections_per_ip = 2\n");
    b.arg("--listen");
    b.arg("[::1]:0");
    let s = b.start();
    let v4 = s
        .addrs
        .iter()
        .find(|a| a.is_ipv4())
        .copied()
        .expect("IPv4 listener");
    let v6 = s
        .addrs
        .iter()
        .find(|a| a.is_ipv6())
        .copied()
        .expect("IPv6 listener");
    let get = b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = Client::connect(v4);
        c.send(get);
        assert!(c.response().head.starts_with("HTTP/1.1 200 OK\r\n"));
        held.push(c);
    }
    // A third from 127.0.0.1: refused with a 503 (or closed), never served.
    let mut c3 = Client::connect(v4);
    let _ = std::io::Write::write_all(&mut c3.stream, get);
    let raw = c3.read_to_end();
    assert!(
        raw.is_empty()
            || raw.starts_with(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
    // Another address (::1) is not affected.
    let mut other = Client::connect(v6);
    other.send(get);
    assert!(other.response().head.starts_with("HTTP/1.1 200 OK\r\n"));
    // The held ones still work.
    for c in &mut held {
        c.send(get);
        assert!(c.response().head.starts_with("HTTP/1.1 200 OK\r\n"));
    }
}

// (Its clients come through a PROXY listener: the feature `ops`.)
#[cfg(feature = "ops")]
#[test]
fn an_address_whose_unkeyed_hash_is_another_s_does_not_share_its_limit() {
    // 198.3.105.153 and 203.0.113.1 fall in the same slot of the 65,536
    // under FNV-1a, a hash anyone can compute: an attacker who picks such
    // an address and holds max_connections_per_ip connections keeps the
    // victim out. The slot's hash is keyed now (two addresses share a
    // slot one time in 65,536, by chance, never by choice). The PROXY
    // protocol names each connection's client, as a balancer would.
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[proxy]\nlisten = \"127.0.0.1:0\"\n[limits]\nmax_connections_per_ip = 1\n");
    b.listeners(2);
    let s = b.start();
    let open = |client: &str| {
        let mut c = Client::connect(s.addrs[1]);
        c.send(format!("PROXY TCP4 {client} 127.0.0.1 4711 80\r\n").as_bytes());
        c.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
        c
    };
    let mut attacker = open("198.3.105.153");
    assert_eq!(attacker.response().status, 200);
    let mut victim = open("203.0.113.1");
    let r = victim.response();
    assert_eq!(r.status, 200, "{}", r.head);
    // The attacker's own address is still held to its limit.
    let mut again = open("198.3.105.153");
    let r = again.response();
    assert_eq!(r.status, 503, "{}", r.head);
    drop(attacker);
}

#[test]
fn a_max_connections_the_descriptor_limit_cannot_hold_is_warned_of_at_start() {
    // As nginx warns that its worker_connections exceed the open-file
    // limit: 16,384 connections (the default) cannot be open with 256
    // descriptors, and the start says so; 100 can, and it does not.
    let mut b = Builder::new();
    b.file("index.html", b"hi\n").nofile(256);
    let s = b.start();
    let line = s.wait_stderr_line("limits.max_connections = 16384 is more than the 256");
    assert!(line.contains("[warn]"), "{line}");
    assert_eq!(s.get("/index.html").body, b"hi\n");
    let mut b = Builder::new();
    b.nofile(256).config("[limits]\nmax_connections = 100\n");
    let s = b.start();
    s.wait_stderr_line("started 1 worker");
    assert!(!s.stderr().contains("max_connections"), "{}", s.stderr());
}
