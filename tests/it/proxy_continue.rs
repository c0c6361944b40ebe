//! `Expect: 100-continue` through the reverse proxy (RFC 9110 §10.1.1):
//! a client that waits for `100 Continue` before it sends its body gets
//! it from brisk once the request goes upstream, over HTTP/1.1 and over
//! HTTP/2 (an interim HEADERS, RFC 9113 §8.1), and its body reaches the
//! upstream, which sees no expectation (brisk answered it). The upstream
//! is reverse_proxy.rs's scripted thread; curl, which sends the
//! expectation with large uploads, is tried too. An upstream's own
//! interim answers: a `103 Early Hints` passes on (RFC 8297) over
//! HTTP/1.1 and HTTP/2, never to an HTTP/1.0 client (RFC 9110 §15.2);
//! its `100` and `102` do not.

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common;
use crate::reverse_proxy::{brisk, Say, Upstream, FORWARDED};

use common::*;

const CREATED: &[u8] = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";

#[test]
fn an_http_1_1_client_gets_its_100_then_its_body_goes_upstream() {
    let up = Upstream::start(vec![Say::Bytes(CREATED)]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    c.write_all(
        b"PUT /api/f HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\
          Connection: close\r\n\r\n",
    )
    .unwrap();
    // Nothing of the body goes before the 100.
    let mut got = [0u8; 25];
    c.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.write_all(b"hello").unwrap();
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    let rest = String::from_utf8(rest).unwrap();
    assert!(rest.starts_with("HTTP/1.1 201 Created\r\n"), "{rest}");
    assert!(rest.ends_with("\r\n\r\nok"), "{rest}");
    assert_eq!(
        up.requests(),
        [format!(
            "PUT /api/f HTTP/1.1\r\nHost: x\r\n{FORWARDED}Content-Length: 5\r\n\r\nhello"
        )]
    );
}

#[cfg(feature = "http2")]
#[test]
fn an_http_2_client_gets_an_interim_100_then_its_body_goes_upstream() {
    use brisk::h2::frame::{self, flag, kind};
    use common::h2::H2;
    let up = Upstream::start(vec![Say::Bytes(CREATED)]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = H2::connect(s.addr(), &[], 0);
    let extra = [("expect", "100-continue"), ("content-length", "5")];
    let block = H2::block("PUT", "/api/f", &extra);
    let mut out = Vec::new();
    frame::write_headers(&mut out, 1, &block, false, 16_384);
    c.send(&out);
    // The 100 first, as HEADERS that do not end the stream.
    let f = loop {
        let f = c.frame().expect("a frame");
        if f.stream == 1 {
            break f;
        }
    };
    assert_eq!((f.kind, f.flags), (kind::HEADERS, flag::END_HEADERS));
    assert_eq!(f.fields, [(":status".to_string(), "100".to_string())]);
    let mut out = frame::data_head(1, 5, true).to_vec();
    out.extend_from_slice(b"hello");
    c.send(&out);
    let a = c.answers(&[1]);
    assert_eq!((a[0].status(), &a[0].body[..]), ("201", &b"ok"[..]));
    // (No `Expect`: brisk answered it.)
    let fwd = FORWARDED.replace('x', "localhost");
    assert_eq!(
        up.requests(),
        [format!(
            "PUT /api/f HTTP/1.1\r\nHost: localhost\r\n{fwd}Content-Length: 5\r\n\r\nhello"
        )]
    );
}

#[test]
fn curl_uploads_with_its_expectation_over_both_protocols() {
    let up = Upstream::start(vec![Say::Bytes(CREATED)]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let file = s.base.path.join("up.bin");
    std::fs::write(&file, vec![b'x'; 300_000]).unwrap();
    let mut protocols = vec!["--http1.1"];
    if cfg!(feature = "http2") {
        protocols.push("--http2-prior-knowledge");
    }
    for &protocol in &protocols {
        let url = format!("http://{}/api/up", s.addr());
        let mut curl = std::process::Command::new("curl");
        curl.args(["-sS", "-v", "--max-time", "10", protocol])
            .args(["-H", "Expect: 100-continue", "-T"])
            .arg(&file)
            .arg(&url);
        let Some(out) = run_for(&mut curl, std::time::Duration::from_secs(20)) else {
            skip("curl not installed");
            return;
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stdout, "ok", "{protocol}: {stderr}");
        assert!(
            stderr.contains("< HTTP/") && stderr.contains(" 201"),
            "{stderr}"
        );
        if protocol == "--http1.1" {
            assert!(stderr.contains("< HTTP/1.1 100 Continue"), "{stderr}");
        }
    }
    let got = up.requests();
    assert_eq!(got.len(), protocols.len());
    for r in got {
        assert!(r.ends_with(&"x".repeat(300_000)), "{}", &r[..200]);
    }
}

/// An answer with two hints ahead, between an upstream 100 and a 102.
const HINTED: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n\
    HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload; as=style\r\nConnection: x\r\nX: 1\r\n\
    Set-Cookie: s=1\r\nX-Powered-By: app\r\nContent-Security-Policy: default-src 'self'\r\n\r\n\
    HTTP/1.1 102 Processing\r\n\r\n\
    HTTP/1.1 103 Early Hints\r\nLink: </b.js>; rel=preload; as=script\r\n\r\n\
    HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

#[test]
fn early_hints_pass_on_to_http_1_1_clients_and_not_to_http_1_0_ones() {
    let up = Upstream::start(vec![Say::Bytes(HINTED)]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let all = |raw: &[u8]| {
        let mut c = s.connect();
        c.send(raw);
        String::from_utf8(c.read_to_end()).unwrap()
    };
    let r = all(b"GET /api/page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    // (Only the fields a browser reads in a hint: no cookie, no
    // application field, none Connection names.)
    let hints = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload; as=style\r\n\
                 Content-Security-Policy: default-src 'self'\r\n\r\n\
                 HTTP/1.1 103 Early Hints\r\nLink: </b.js>; rel=preload; as=script\r\n\r\n\
                 HTTP/1.1 200 OK\r\n";
    assert!(r.starts_with(hints), "{r}");
    assert!(r.ends_with("\r\n\r\nok"), "{r}");
    let r = all(b"GET /api/page HTTP/1.0\r\nHost: x\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
}

#[cfg(feature = "http2")]
#[test]
fn early_hints_are_interim_headers_over_http_2() {
    use brisk::h2::frame::{flag, kind};
    use common::h2::H2;
    let up = Upstream::start(vec![Say::Bytes(HINTED)]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = H2::connect(s.addr(), &[], 0);
    let id = c.get("/api/page", &[]);
    let mut heads = Vec::new();
    let body = loop {
        let f = c.frame().expect("a frame");
        if f.stream != id {
            continue;
        }
        match f.kind {
            kind::HEADERS => heads.push((f.flags, f.fields.clone())),
            kind::DATA if f.flags & flag::END_STREAM != 0 => break f.payload,
            _ => {}
        }
    };
    let field = |n: &str, v: &str| (n.to_string(), v.to_string());
    assert_eq!(heads.len(), 3, "{heads:?}");
    assert_eq!(
        heads[0],
        (
            flag::END_HEADERS,
            vec![
                field(":status", "103"),
                field("link", "</a.css>; rel=preload; as=style"),
                field("content-security-policy", "default-src 'self'")
            ]
        )
    );
    assert_eq!(
        heads[1].1[1],
        field("link", "</b.js>; rel=preload; as=script")
    );
    assert_eq!(heads[2].1[0], field(":status", "200"));
    assert_eq!(body, b"ok");
}

/// An answer after `n` interim `100 Continue`s.
fn after_interims(n: usize) -> &'static [u8] {
    let mut b = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(n);
    b.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    Box::leak(b.into_boxed_slice())
}

#[test]
fn an_upstream_s_interim_answers_are_bounded() {
    // Up to 32 the final answer follows; past them it is a 502 (an
    // upstream that sends them without end held the request forever).
    for (n, status) in [(32, 200), (33, 502), (100_000, 502)] {
        let up = Upstream::start(vec![Say::Bytes(after_interims(n))]);
        let s = brisk(&format!("http://{}", up.addr), "");
        let r = s.get("/api/x");
        assert_eq!(r.status, status, "{n} interim answers: {}", r.head);
    }
}
