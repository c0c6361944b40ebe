//! Behind load balancers and proxies, on the wire: the PROXY protocol
//! (v1 and v2) on `[proxy] listen` listeners, and `Forwarded` /
//! `X-Forwarded-For` / `X-Forwarded-Proto` from `[proxy] trusted` peers;
//! the real client reaches the access log, CGI's `REMOTE_ADDR`, the
//! failed-login counter and `limits.max_connections_per_ip`. A missing or
//! malformed header closes the connection; an untrusted peer's
//! forwarding headers are ignored.
use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::*;

/// A CGI script that answers with its client as CGI names it.
const WHO: &str = "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s %s %s %s' \"$REMOTE_ADDR\" \"$REMOTE_PORT\" \"$REQUEST_SCHEME\" \"${HTTPS:-off}\"\n";

/// A site with `/cgi-bin/who` and `extra` configuration, its access log
/// in `<base>/access.log`; `listeners`: how many addresses it prints.
fn site(extra: &str, listeners: usize) -> Server {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    let script = b.base().join("cgi-bin/who");
    write_file(&script, WHO.as_bytes());
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    b.config(&format!(
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n{extra}"
    ));
    b.access_log().listeners(listeners);
    b.start()
}

/// A version 2 header (PROXY command) for a TCP client `src` → `dst`.
fn v2(src: std::net::SocketAddr, dst: std::net::SocketAddr) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n\x21".to_vec();
    let mut body = Vec::new();
    match (src, dst) {
        (std::net::SocketAddr::V4(s), std::net::SocketAddr::V4(d)) => {
            h.push(0x11);
            body.extend_from_slice(&s.ip().octets());
            body.extend_from_slice(&d.ip().octets());
        }
        (std::net::SocketAddr::V6(s), std::net::SocketAddr::V6(d)) => {
            h.push(0x21);
            body.extend_from_slice(&s.ip().octets());
            body.extend_from_slice(&d.ip().octets());
        }
        _ => panic!("one family"),
    }
    body.extend_from_slice(&src.port().to_be_bytes());
    body.extend_from_slice(&dst.port().to_be_bytes());
    // A TLV (PP2_TYPE_AUTHORITY), which is skipped.
    body.extend_from_slice(&[0x02, 0x00, 0x06]);
    body.extend_from_slice(b"a.test");
    h.extend_from_slice(&(body.len() as u16).to_be_bytes());
    h.extend_from_slice(&body);
    h
}

const WHO_REQ: &[u8] = b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\n\r\n";

#[test]
fn proxy_protocol_names_the_client_to_cgi_and_the_access_log() {
    let s = site("[proxy]\nlisten = \"127.0.0.1:0\"\n", 2);
    let proxied = s.addrs[1];
    // Version 1, then a second request on the same connection.
    let mut c = Client::connect(proxied);
    c.send(b"PROXY TCP4 203.0.113.7 127.0.0.1 4711 80\r\n");
    c.send(WHO_REQ);
    let r = c.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.text(), "203.0.113.7 4711 http off");
    c.send(WHO_REQ);
    assert_eq!(c.response().text(), "203.0.113.7 4711 http off");
    s.wait_access_line(|l| {
        l.starts_with(b"203.0.113.7 - - [") && find(l, b"/cgi-bin/who").is_some()
    });
    // Version 2 over IPv6, its header arriving in two pieces, the
    // request in the same write as the second.
    let header = v2(
        "[2001:db8::7]:5000".parse().unwrap(),
        "[2001:db8::1]:80".parse().unwrap(),
    );
    let mut c = Client::connect(proxied);
    c.send(&header[..10]);
    c.wait_until_read();
    let mut rest = header[10..].to_vec();
    rest.extend_from_slice(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    c.send(&rest);
    let r = c.response();
    assert_eq!((r.status, &r.body[..]), (200, &b"hello\n"[..]));
    s.wait_access_line(|l| {
        l.starts_with(b"2001:db8::7 - - [") && find(l, b"/index.html").is_some()
    });
    // LOCAL (the balancer's own health check): the connection's peer.
    let mut c = Client::connect(proxied);
    c.send(b"\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00");
    c.send(WHO_REQ);
    assert!(c.response().text().starts_with("127.0.0.1 "));
    // The plain listener does not take a PROXY header: it is no request.
    let r = s.request(b"PROXY TCP4 203.0.113.7 127.0.0.1 4711 80\r\nGET / HTTP/1.1\r\n\r\n");
    assert_eq!(r.status, 400);
}

#[test]
fn a_missing_or_malformed_proxy_header_closes_the_connection() {
    let s = site("[proxy]\nlisten = \"127.0.0.1:0\"\n", 2);
    let proxied = s.addrs[1];
    for bytes in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"PROXY TCP4 203.0.113.7 nowhere 4711 80\r\nGET / HTTP/1.1\r\n\r\n",
        b"PROXY TCP4 203.0.113.7 127.0.0.1 4711 80\nGET / HTTP/1.1\r\n\r\n",
        b"\r\n\r\n\0\r\nQUIT\n\x31\x11\x00\x0c",
        // Longer than any v1 line, no CRLF.
        &[b'P'; 200],
    ] {
        let mut c = Client::connect(proxied);
        c.send(bytes);
        c.expect_closed();
    }
    let err = s.wait_stderr_line("on a [proxy] listener; connection closed");
    assert!(err.contains("no PROXY protocol header"), "{err}");
    // What came after was served as before.
    let mut c = Client::connect(proxied);
    c.send(b"PROXY UNKNOWN\r\nGET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 200);
}

#[test]
fn a_proxy_header_that_never_comes_times_out_without_an_answer() {
    let s = site(
        "[proxy]\nlisten = \"127.0.0.1:0\"\n[timeouts]\nheader = 1\n",
        2,
    );
    let mut c = Client::connect(s.addrs[1]);
    c.send(b"PROXY TCP4 203.0.113.7");
    c.expect_closed();
    s.wait_stderr_line("client 127.0.0.1: no PROXY header within timeouts.header");
}

#[test]
fn max_connections_per_ip_counts_the_proxied_client() {
    let s = site(
        "[proxy]\nlisten = \"127.0.0.1:0\"\n[limits]\nmax_connections_per_ip = 1\n",
        2,
    );
    let open = |client: &str| {
        let mut c = Client::connect(s.addrs[1]);
        c.send(format!("PROXY TCP4 {client} 127.0.0.1 4711 80\r\n").as_bytes());
        c.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
        c
    };
    // Two balancer connections for two clients: both served, though the
    // balancer's address is the same.
    let mut a = open("203.0.113.1");
    assert_eq!(a.response().status, 200);
    let mut b = open("203.0.113.2");
    assert_eq!(b.response().status, 200);
    // A second connection of the first client is over its limit.
    let mut again = open("203.0.113.1");
    let r = again.response();
    assert_eq!(r.status, 503, "{}", r.head);
    s.wait_stderr_line(
        "refused connection from 203.0.113.1: limits.max_connections_per_ip reached for its address",
    );
    drop(a);
    drop(b);
}

#[test]
fn trusted_peers_forwarding_headers_name_the_client() {
    let s = site("[proxy]\ntrusted = [\"127.0.0.1\"]\n", 1);
    // X-Forwarded-For: the rightmost address the trusted peer added; the
    // one the client forged on its left does not count.
    let r = s.request(
        b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 1.1.1.1, 203.0.113.9\r\nX-Forwarded-Proto: https\r\n\r\n",
    );
    assert_eq!(r.text(), "203.0.113.9 0 https on");
    s.wait_access_line(|l| {
        l.starts_with(b"203.0.113.9 - - [") && find(l, b"/cgi-bin/who").is_some()
    });
    // A Forwarded the client wrote, which a proxy that appends to
    // X-Forwarded-For passes on as it came: not believed, nor its proto.
    let r = s.request(
        b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nForwarded: for=10.0.0.1;proto=https\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n",
    );
    assert_eq!(r.text(), "203.0.113.9 0 http off");
    // With header = "forwarded": Forwarded (RFC 7239), with a port, and
    // its proto; X-Forwarded-For is the client's then.
    let fwd = site(
        "[proxy]\ntrusted = [\"127.0.0.1\"]\nheader = \"forwarded\"\n",
        1,
    );
    let r = fwd.request(
        b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nForwarded: for=\"[2001:db8::9]:4711\";proto=http\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n",
    );
    assert_eq!(r.text(), "2001:db8::9 4711 http off");
    // A quoted string the client left open would swallow the element
    // the proxy appended: 400, whether on one line or two.
    for head in [
        "Forwarded: for=127.0.0.7;x=\"y, for=203.0.113.9\r\n",
        "Forwarded: for=127.0.0.7;x=\"y\r\nForwarded: for=203.0.113.9\r\n",
    ] {
        let r =
            fwd.request(format!("GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\n{head}\r\n").as_bytes());
        assert_eq!(r.status, 400, "{head}: {}", r.text());
    }
    // Each request of a connection is its own client's (a proxy's pool).
    let mut c = s.connect();
    for who in ["203.0.113.1", "203.0.113.2"] {
        c.send(
            format!("GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: {who}\r\n\r\n")
                .as_bytes(),
        );
        assert!(c.response().text().starts_with(&format!("{who} 0 ")));
    }
}

#[test]
fn an_untrusted_peers_forwarding_headers_are_ignored() {
    for extra in ["", "[proxy]\ntrusted = [\"10.0.0.0/8\", \"::1\"]\n"] {
        let s = site(extra, 1);
        let r = s.request(
            b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: https\r\nForwarded: for=203.0.113.8;proto=https\r\n\r\n",
        );
        assert!(r.text().starts_with("127.0.0.1 "), "{extra}: {}", r.text());
        assert!(r.text().ends_with(" http off"), "{extra}: {}", r.text());
        s.wait_access_line(|l| {
            l.starts_with(b"127.0.0.1 - - [") && find(l, b"/cgi-bin/who").is_some()
        });
    }
}

#[test]
fn behind_a_proxy_protocol_balancer_a_trusted_proxy_may_still_forward() {
    // A CDN (trusted) in front of the balancer: the PROXY header names
    // the CDN's address, whose X-Forwarded-For names the client.
    let s = site(
        "[proxy]\nlisten = \"127.0.0.1:0\"\ntrusted = [\"198.51.100.0/24\"]\n",
        2,
    );
    let mut c = Client::connect(s.addrs[1]);
    c.send(b"PROXY TCP4 198.51.100.5 127.0.0.1 4711 80\r\n");
    c.send(b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.77\r\n\r\n");
    assert_eq!(c.response().text(), "203.0.113.77 0 http off");
    // A client reaching the balancer directly cannot do the same.
    let mut c = Client::connect(s.addrs[1]);
    c.send(b"PROXY TCP4 203.0.113.5 127.0.0.1 4711 80\r\n");
    c.send(b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.77\r\n\r\n");
    assert_eq!(c.response().text(), "203.0.113.5 4711 http off");
}

#[cfg(feature = "tls")]
#[test]
fn proxy_protocol_then_tls_on_a_tls_listen_listener() {
    // `[proxy] tls_listen`: the header (v1 or v2) comes in plain text,
    // then the TLS handshake (HAProxy's `ssl` with `send-proxy-v2`, or a
    // balancer passing TLS through); the client it names is the one
    // CGI and the access log see.
    let tls = common::tls::section(&["a"], "");
    let s = site(&format!("[proxy]\ntls_listen = \"127.0.0.1:0\"\n{tls}"), 3);
    let (https, proxied) = (s.addrs[1], s.addrs[2]);
    // Version 1 in a write of its own, then TLS; two requests.
    let mut c = Client::connect(proxied);
    c.send(b"PROXY TCP4 203.0.113.7 127.0.0.1 4711 443\r\n");
    c.start_tls(common::tls::client_conn("a.test"));
    c.send(WHO_REQ);
    let r = c.response();
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.text(), "203.0.113.7 4711 https on");
    c.send(WHO_REQ);
    assert_eq!(c.response().text(), "203.0.113.7 4711 https on");
    s.wait_access_line(|l| {
        l.starts_with(b"203.0.113.7 - - [") && find(l, b"/cgi-bin/who").is_some()
    });
    // Version 2 with the ClientHello in the same write.
    let mut conn = common::tls::client_conn("a.test");
    let mut first = v2(
        "198.51.100.9:6000".parse().unwrap(),
        "192.0.2.1:443".parse().unwrap(),
    );
    conn.write_tls(&mut first).unwrap();
    let mut c = Client::connect(proxied);
    c.send(&first);
    c.start_tls(conn);
    c.send(WHO_REQ);
    assert_eq!(c.response().text(), "198.51.100.9 6000 https on");
    // No header: a ClientHello straight away is no PROXY header, and
    // the connection closes.
    let mut conn = common::tls::client_conn("a.test");
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    let mut c = Client::connect(proxied);
    c.send(&hello);
    c.expect_closed();
    assert!(s
        .wait_stderr_line("on a [proxy] listener; connection closed")
        .contains("no PROXY protocol header"));
    // And the [tls] listener takes no header: to it, that is plain text
    // on a TLS port (which it says in a plain 400).
    let mut c = Client::connect(https);
    c.send(b"PROXY TCP4 203.0.113.7 127.0.0.1 4711 443\r\n");
    c.send(&hello);
    assert_eq!(c.response().status, 400);
}

#[cfg(feature = "tls")]
#[test]
fn haproxy_send_proxy_v2_with_ssl_reaches_a_tls_listen_listener() {
    use std::process::{Command, Stdio};
    if Command::new("haproxy").arg("-v").output().is_err() {
        skip("no haproxy (Debian: haproxy; scripts/test installs it as root)");
        return;
    }
    let tls = common::tls::section(&["a"], "");
    let s = site(&format!("[proxy]\ntls_listen = \"127.0.0.1:0\"\n{tls}"), 3);
    let backend = s.addrs[2];
    // HAProxy connects to brisk from 127.0.0.3: only the PROXY header
    // can tell brisk the client is 127.0.0.1.
    let front = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let cfg = s.base.path.join("haproxy.cfg");
    fs::write(
        &cfg,
        format!(
            "global\n    maxconn 100\n\
defaults\n    mode http\n    timeout connect 5s\n    timeout client 10s\n    timeout server 10s\n\
frontend web\n    bind {front}\n    default_backend brisk\n\
backend brisk\n    server b {backend} ssl verify none sni str(a.test) send-proxy-v2 source 127.0.0.3\n"
        ),
    )
    .unwrap();
    let _haproxy = KillOnDrop(
        Command::new("haproxy")
            .args(["-db", "-f", cfg.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start haproxy"),
    );
    wait_until("HAProxy to listen", || {
        std::net::TcpStream::connect(front).is_ok()
    });
    let mut c = Client::connect(front);
    c.send(b"GET /cgi-bin/who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200, "{}", r.head);
    let who = r.text();
    assert!(
        who.starts_with("127.0.0.1 ") && who.ends_with(" https on"),
        "{who}"
    );
    s.wait_access_line(|l| l.starts_with(b"127.0.0.1 - - [") && find(l, b"/cgi-bin/who").is_some());
}
