//! Trailer fields through the reverse proxy (RFC 9110 §6.5): an
//! upstream's chunked answer ends with fields (gRPC's `grpc-status`, a
//! checksum) that reach an HTTP/1.1 client in the chunked coding's end
//! (RFC 9112 §7.1.2) and an HTTP/2 client as a HEADERS frame that ends
//! the stream (RFC 9113 §8.1), less the fields a trailer must not hold
//! (§6.5.1). The upstream is reverse_proxy.rs's scripted thread.

use std::io::{Read, Write};
use std::net::TcpStream;

use crate::common;
use crate::reverse_proxy::{brisk, Say, Upstream};

use common::*;

/// A chunked answer whose trailers hold fields that pass and fields a
/// trailer must not hold (framing, `Content-*`, `Set-Cookie`, hop-by-hop).
const WITH_TRAILERS: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\n\
      Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\ngrpc-status: 0\r\n\
      Content-Length: 99\r\ngrpc-message: all  good\r\nSet-Cookie: a=b\r\nConnection: close\r\n\
      X-Checksum:abc\r\n\r\n";

/// What an HTTP/1.1 client gets of [`WITH_TRAILERS`] after its head.
const CHUNKED_WITH_TRAILERS: &str =
    "5\r\nhello\r\n0\r\ngrpc-status: 0\r\ngrpc-message: all  good\r\nX-Checksum: abc\r\n\r\n";

/// Everything the server sends to `raw` (which asks it to close), its
/// `Date` masked.
fn exchange(s: &Server, raw: &[u8]) -> String {
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    c.write_all(raw).unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    let text = String::from_utf8(got).unwrap();
    let date = text
        .split("\r\nDate: ")
        .nth(1)
        .and_then(|rest| rest.split("\r\n").next())
        .unwrap_or_else(|| panic!("no Date in {text:?}"))
        .to_string();
    text.replacen(&date, DATE, 1)
}

#[test]
fn an_upstreams_trailers_reach_an_http_1_1_client_in_the_chunked_end() {
    let up = Upstream::start(vec![Say::Bytes(WITH_TRAILERS)]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let got = exchange(
        &s,
        b"GET /api/x HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        got,
        format!(
            "HTTP/1.1 200 OK\r\nDate: {DATE}\r\nContent-Type: application/grpc\r\n\
             Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n{CHUNKED_WITH_TRAILERS}"
        )
    );
    // A client that closes and takes no trailers gets a body delimited
    // by the close (as before): the trailers have no place. Nor in
    // HTTP/1.0, which has no chunked coding.
    let got = exchange(
        &s,
        b"GET /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        got,
        format!(
            "HTTP/1.1 200 OK\r\nDate: {DATE}\r\nContent-Type: application/grpc\r\n\
             Connection: close\r\n\r\nhello"
        )
    );
    let got = exchange(&s, b"GET /api/x HTTP/1.0\r\nHost: x\r\n\r\n");
    assert_eq!(
        got,
        format!(
            "HTTP/1.1 200 OK\r\nDate: {DATE}\r\nContent-Type: application/grpc\r\n\
             Connection: close\r\n\r\nhello"
        )
    );
}

#[test]
fn an_answer_whose_trailers_hold_nothing_that_may_pass_ends_as_before() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\
          Content-Type: text/plain\r\nHost: evil\r\n\r\n",
    )]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let got = exchange(
        &s,
        b"GET /api/x HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        got,
        format!(
            "HTTP/1.1 200 OK\r\nDate: {DATE}\r\nTransfer-Encoding: chunked\r\n\
             Connection: close\r\n\r\n2\r\nok\r\n0\r\n\r\n"
        )
    );
}

#[cfg(feature = "http2")]
#[test]
fn an_upstreams_trailers_reach_an_http_2_client_as_the_last_headers() {
    use brisk::h2::frame::{flag, kind};
    use common::h2::H2;
    let up = Upstream::start(vec![Say::Bytes(WITH_TRAILERS)]);
    let s = brisk(&format!("http://{}", up.addr), "");
    let mut c = H2::connect(s.addr(), &[], 0);
    // (Twice on one connection: the second trailers' fields are indexes
    // into the table the first ones filled.)
    for _ in 0..2 {
        let id = c.get("/api/x", &[("te", "trailers")]);
        let mut frames = Vec::new();
        while let Some(f) = c.frame() {
            if f.stream != id {
                continue;
            }
            let end = f.flags & flag::END_STREAM != 0;
            frames.push(f);
            if end {
                break;
            }
        }
        let shown: Vec<(u8, u8, usize)> = frames
            .iter()
            .map(|f| (f.kind, f.flags, f.payload.len()))
            .collect();
        assert_eq!(
            shown[1..],
            [
                (kind::DATA, 0, 5),
                (
                    kind::HEADERS,
                    flag::END_HEADERS | flag::END_STREAM,
                    shown[2].2
                )
            ],
            "{frames:?}"
        );
        assert_eq!(frames[0].fields[0], (":status".into(), "200".into()));
        assert_eq!(frames[1].payload, b"hello");
        let trailers: Vec<(&str, &str)> = frames[2]
            .fields
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            trailers,
            [
                ("grpc-status", "0"),
                ("grpc-message", "all  good"),
                ("x-checksum", "abc")
            ]
        );
    }
}

/// An upstream that records one request per connection, read to the end
/// of its chunked body (trailers included), and answers 204.
pub(crate) fn recording_upstream() -> (std::net::SocketAddr, std::sync::mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            conn.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
            let mut got = Vec::new();
            let mut piece = [0u8; 4096];
            // The last chunk, then the trailer section's empty line.
            let ended = |b: &[u8]| {
                let at = b.windows(5).position(|w| w == b"\r\n0\r\n");
                at.is_some_and(|at| b[at + 3..].windows(4).any(|w| w == b"\r\n\r\n"))
            };
            while !ended(&got) {
                match conn.read(&mut piece) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&piece[..n]),
                }
            }
            let _ = conn.write_all(b"HTTP/1.1 204 No Content\r\n\r\n");
            let _ = tx.send(String::from_utf8_lossy(&got).into_owned());
        }
    });
    (addr, rx)
}

/// Checks that the upstream `got` a PUT of `hello` for `host`, chunked,
/// its head ending with brisk's `own` fields (`Trailer`, `TE`), its body
/// with `trailers`.
fn assert_sent(got: &std::sync::mpsc::Receiver<String>, host: &str, own: &str, trailers: &str) {
    // (Who brisk says the client is, as reverse_proxy.rs's FORWARDED.)
    let fwd = crate::reverse_proxy::FORWARDED
        .replace("\"x\"", &format!("\"{host}\""))
        .replace("Host: x\r\n", &format!("Host: {host}\r\n"));
    assert_eq!(
        got.recv_timeout(IO_TIMEOUT).unwrap(),
        format!(
            "PUT /api/f HTTP/1.1\r\nHost: {host}\r\n{fwd}Transfer-Encoding: chunked\r\n{own}\r\n\
             5\r\nhello\r\n0\r\n{trailers}\r\n"
        )
    );
}

#[test]
fn an_http_1_1_clients_trailers_reach_the_upstream_in_the_chunked_end() {
    let (addr, got) = recording_upstream();
    let s = brisk(&format!("http://{addr}"), "keepalive = 0");
    let answer = exchange(
        &s,
        b"PUT /api/f HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
          5\r\nhello\r\n0\r\nX-Sum: 5\r\nHost: evil\r\nContent-Type: a/b\r\ngrpc-status:0\r\n\r\n",
    );
    assert!(
        answer.starts_with("HTTP/1.1 204 No Content\r\n"),
        "{answer}"
    );
    assert_sent(&got, "x", "", "X-Sum: 5\r\ngrpc-status: 0\r\n");
    // A client that takes trailers (TE, named by Connection) and
    // announces its own: brisk takes them too (it passes the answer's
    // on), and announces those it sends (RFC 9110 §6.6.2, §10.1.4).
    let answer = exchange(
        &s,
        b"PUT /api/f HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close, TE\r\n\
          TE: trailers\r\nTrailer: X-Sum, Host\r\nTrailer: grpc-status\r\n\r\n\
          5\r\nhello\r\n0\r\nX-Sum: 5\r\nHost: evil\r\ngrpc-status:0\r\n\r\n",
    );
    assert!(
        answer.starts_with("HTTP/1.1 204 No Content\r\n"),
        "{answer}"
    );
    assert_sent(
        &got,
        "x",
        "Trailer: X-Sum, grpc-status\r\nTE: trailers\r\nConnection: TE\r\n",
        "X-Sum: 5\r\ngrpc-status: 0\r\n",
    );
}

#[cfg(feature = "http2")]
#[test]
fn an_http_2_clients_trailing_headers_reach_the_upstream_as_chunked_trailers() {
    use brisk::h2::frame;
    use brisk::h2::hpack;
    use common::h2::H2;
    let (addr, got) = recording_upstream();
    let s = brisk(&format!("http://{addr}"), "keepalive = 0");
    let mut c = H2::connect(s.addr(), &[], 0);
    // A body of unknown length (no content-length), then trailers; the
    // client takes trailers (gRPC's `te: trailers`) and announces its
    // own.
    let mut out = Vec::new();
    let fields = [
        ("te", "trailers"),
        ("trailer", "x-sum, content-type, grpc-status"),
    ];
    frame::write_headers(
        &mut out,
        1,
        &H2::block("PUT", "/api/f", &fields),
        false,
        16_384,
    );
    out.extend_from_slice(&frame::data_head(1, 5, false));
    out.extend_from_slice(b"hello");
    let mut block = Vec::new();
    for (n, v) in [
        ("x-sum", "5"),
        ("content-type", "a/b"),
        ("grpc-status", "0"),
    ] {
        hpack::encode_field(n.as_bytes(), v.as_bytes(), &mut block);
    }
    frame::write_headers(&mut out, 1, &block, true, 16_384);
    c.send(&out);
    assert_eq!(c.answers(&[1])[0].status(), "204");
    // (Said to the upstream for brisk's hop: TE named by Connection.)
    assert_sent(
        &got,
        "localhost",
        "Trailer: x-sum, grpc-status\r\nTE: trailers\r\nConnection: TE\r\n",
        "x-sum: 5\r\ngrpc-status: 0\r\n",
    );
}

/// A client's trailers are held to what its head is: the forwarding
/// fields brisk writes, `headers.set` and `headers.remove` (spelt with
/// `_` too) never reach the upstream from a trailer section, which an
/// application that merges trailers into the head would take.
#[test]
fn a_clients_trailers_cannot_stand_for_fields_brisk_sets_or_removes() {
    let (addr, got) = recording_upstream();
    let s = brisk(
        &format!("http://{addr}"),
        "keepalive = 0\nheaders = { set = { \"X-User\" = \"anonymous\" }, remove = [\"X-Debug\"] }",
    );
    let answer = exchange(
        &s,
        b"PUT /api/f HTTP/1.1\r\nHost: x\r\nX-User: admin\r\nTransfer-Encoding: chunked\r\n\
          Connection: close, TE\r\nTE: trailers\r\nTrailer: X-User, X-Debug, X-Sum\r\n\r\n\
          5\r\nhello\r\n0\r\nX-User: admin\r\nX-Debug: 1\r\nX-Forwarded-For: 6.6.6.6\r\n\
          X_User: admin\r\nforwarded: for=1.2.3.4\r\nX-Sum: 5\r\n\r\n",
    );
    assert!(
        answer.starts_with("HTTP/1.1 204 No Content\r\n"),
        "{answer}"
    );
    let fwd = crate::reverse_proxy::FORWARDED;
    assert_eq!(
        got.recv_timeout(IO_TIMEOUT).unwrap(),
        format!(
            "PUT /api/f HTTP/1.1\r\nHost: x\r\n{fwd}X-User: anonymous\r\n\
             Transfer-Encoding: chunked\r\nTrailer: X-Sum\r\nTE: trailers\r\nConnection: TE\r\n\r\n\
             5\r\nhello\r\n0\r\nX-Sum: 5\r\n\r\n"
        )
    );
}

/// An upstream's trailers are held to what its head is:
/// `response_headers` removes and sets there too.
#[test]
fn an_upstreams_trailers_keep_to_response_headers() {
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\
          X-T: 1\r\nX-Set: up\r\nX-Sum: 2\r\n\r\n",
    )]);
    let s = brisk(
        &format!("http://{}", up.addr),
        "response_headers = { set = { \"X-Set\" = \"brisk\" }, remove = [\"X-T\"] }",
    );
    let got = exchange(
        &s,
        b"GET /api/x HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(
        got,
        format!(
            "HTTP/1.1 200 OK\r\nDate: {DATE}\r\nX-Set: brisk\r\nTransfer-Encoding: chunked\r\n\
             Connection: close\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 2\r\n\r\n"
        )
    );
}
