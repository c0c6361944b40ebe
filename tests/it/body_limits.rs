//! A rule's own `max_body` (`[[cgi]]`, `[[reverse_proxy]]`,
//! `[[fastcgi]]`): the bodies it takes may be larger than
//! `limits.max_body` (a `git push` through git-http-backend, an upload
//! application behind the proxy), every other request keeps the limit,
//! whether the body says its length, is chunked and held whole, or
//! streams over HTTP/2 with no length (which was not bounded at all).

use std::os::unix::fs::PermissionsExt;

use crate::common::*;

/// `[limits] max_body` 64 KiB; `/big/` CGI scripts take up to 3 MiB,
/// `/cgi-bin/` ones the limit; each script says how many bytes it read.
fn site() -> Server {
    let mut b = Builder::new();
    for dir in ["big", "cgi-bin"] {
        let path = b.base().join(dir).join("count.sh");
        write_file(
            &path,
            b"#!/bin/sh\necho 'Content-Type: text/plain'\necho\nwc -c | tr -d ' '\n",
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    b.config(
        "[limits]\nmax_body = \"64KiB\"\n\
         [[cgi]]\nurl = \"/big/\"\ndir = \"big\"\nmax_body = \"3MiB\"\n\
         [[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n",
    );
    b.start()
}

fn post(s: &Server, path: &str, body: &[u8], chunked: bool) -> Response {
    let (framing, body) = match chunked {
        true => (
            "Transfer-Encoding: chunked".to_string(),
            chunked_body(body, 60_000),
        ),
        false => (format!("Content-Length: {}", body.len()), body.to_vec()),
    };
    let mut raw =
        format!("POST {path} HTTP/1.1\r\nHost: x\r\n{framing}\r\nConnection: close\r\n\r\n")
            .into_bytes();
    raw.extend_from_slice(&body);
    s.request(&raw)
}

#[test]
fn a_cgi_rule_s_max_body_lets_its_scripts_take_more_and_no_other() {
    let s = site();
    let body = vec![b'x'; 1_000_000];
    // (Refused bodies are over their limit by less than what brisk reads
    // and drops after its answer, 256 KiB: this client writes all before
    // it reads, and would meet a closed socket.)
    let over = &body[..(64 << 10) + 100_000];
    for chunked in [false, true] {
        let r = post(&s, "/big/count.sh", &body, chunked);
        assert_eq!(
            (r.status, r.text()),
            (200, "1000000\n".into()),
            "chunked {chunked}"
        );
        let r = post(&s, "/cgi-bin/count.sh", over, chunked);
        assert_eq!(r.status, 413, "chunked {chunked}");
    }
    // Past the rule's own, 413 too.
    let r = post(&s, "/big/count.sh", &vec![b'x'; (3 << 20) + 100_000], true);
    assert_eq!(r.status, 413);
}

#[cfg(feature = "http2")]
#[test]
fn over_http_2_a_body_with_no_length_is_bounded_too() {
    use crate::common::h2::H2;
    let s = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let body = vec![b'x'; 1_000_000];
    let ids = [
        c.request("POST", "/big/count.sh", &[], Some(&body)),
        c.request("POST", "/cgi-bin/count.sh", &[], Some(&body)),
    ];
    let a = c.answers(&ids);
    assert_eq!((a[0].status(), &a[0].body[..]), ("200", &b"1000000\n"[..]));
    assert_eq!(a[1].status(), "413");
}

/// A proxy rule's `max_body` bounds a body that streams upstream with no
/// length (over HTTP/2): the limit's 64 KiB once was no bound at all.
#[cfg(all(feature = "http2", feature = "upstreams"))]
#[test]
fn a_body_streamed_upstream_with_no_length_is_bounded_by_its_rule() {
    use crate::common::h2::H2;
    use crate::reverse_proxy::{Say, Upstream};
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let mut b = Builder::new();
    b.config(&format!(
        "[limits]\nmax_body = \"64KiB\"\n\
         [[reverse_proxy]]\npath = \"/big/\"\nto = \"http://{0}\"\nmax_body = \"1MiB\"\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{0}\"\n",
        up.addr
    ));
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let body = vec![b'y'; 200_000];
    let id = c.request("PUT", "/api/f", &[], Some(&body));
    assert_eq!(c.answers(&[id])[0].status(), "413");
    let id = c.request("PUT", "/big/f", &[], Some(&body));
    assert_eq!(c.answers(&[id])[0].status(), "201");
    let got = up.requests();
    let last = got.last().expect("a request upstream");
    assert!(
        last.starts_with("PUT /big/f HTTP/1.1\r\n"),
        "{}",
        &last[..100]
    );
    assert!(
        last.contains("Transfer-Encoding: chunked\r\n"),
        "{}",
        &last[..300]
    );
}

/// A body refused for its size as it streams upstream with no length
/// (413) gives back the window credit of the frame that took it past the
/// limit too: many such uploads on one connection do not eat its window
/// (RFC 9113 §6.9), and the next one is still answered.
#[cfg(all(feature = "http2", feature = "upstreams"))]
#[test]
fn bodies_refused_as_they_stream_give_all_their_credit_back() {
    use crate::common::h2::Uploader;
    use crate::reverse_proxy::{Say, Upstream};
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let mut b = Builder::new();
    b.config(&format!(
        "[limits]\nmax_body = \"64KiB\"\n[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{}\"\n",
        up.addr
    ));
    let s = b.start();
    let mut u = Uploader::connect(s.addr());
    let body = vec![b'y'; 100_000];
    // (A frame, 16 KiB, lost each time would eat the 1 MiB window long
    // before the last round.)
    for round in 0..80 {
        let a = u.post("/api/f", &body, false, || {});
        assert_eq!(a.status(), "413", "round {round}");
    }
}

/// A browser still uploading a body the server will not read (refused
/// for its length with a 413 at once, or answered without it on a
/// connection that ends) reads the answer only once its upload is sent
/// or fails: the server must read and drop the rest rather than reset
/// the connection under the answer. Chromium over HTTPS/1.1 showed
/// "connection reset" ("Failed to fetch") for uploads over
/// `limits.max_body`, even 50 KB over: the close came at once, the socket
/// having looked drained when the answer went. Now the close lingers for
/// as much as the body said it had (here 1.5 MB, past the 256 KiB that
/// every other close reads), plain and over TLS.
#[test]
fn a_body_answered_without_being_read_is_read_and_dropped_not_reset_under_the_answer() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    #[cfg(feature = "tls")]
    b.config(&format!(
        "[limits]\nmax_body = \"64KiB\"\n{}",
        crate::common::tls::section(&["a"], "")
    ))
    .listeners(2);
    #[cfg(not(feature = "tls"))]
    b.config("[limits]\nmax_body = \"64KiB\"\n");
    let s = b.start();
    let cases = [
        // Refused for its length, before any of it came.
        ("Content-Length: 2000000\r\n", 413, 1_500_000),
        // Answered (405, a static file) without it, the connection
        // closing after (the client said so).
        (
            "Content-Length: 60000\r\nConnection: close\r\n",
            405,
            60_000,
        ),
    ];
    for tls in [false, cfg!(feature = "tls")] {
        for (head, status, rest) in cases {
            let mut c = match tls {
                #[cfg(feature = "tls")]
                true => s.connect_tls_to(s.addrs[1]),
                _ => s.connect(),
            };
            c.send(format!("POST /index.html HTTP/1.1\r\nHost: x\r\n{head}\r\n").as_bytes());
            let r = c.read_response(false);
            assert_eq!(r.status, status, "tls {tls}");
            // The upload goes on after the answer came, as a browser's does.
            let piece = vec![b'x'; 20_000];
            for sent in (0..rest).step_by(piece.len()) {
                assert!(
                    c.try_send(&piece),
                    "tls {tls}, {status}: the server reset the connection after {sent} bytes of the rest"
                );
            }
            let (local, peer) = c.ends();
            wait_until("the upload's last bytes to be acknowledged", || {
                tcp_socket(local, peer).is_none_or(|t| t.tx_queue == 0)
            });
            assert_eq!(
                tcp_socket(local, peer).map(|t| t.state),
                Some(TCP_CLOSE_WAIT),
                "tls {tls}, {status}: the client's socket (7 is CLOSE: reset; none: gone)"
            );
        }
    }
}

/// A body refused for its size leaves a line naming the client, the
/// length it said and the limit it is over (nginx: "client intended to
/// send too large body"): over `limits.max_body` before routing, over a
/// rule's own after it, and over HTTP/2.
#[test]
fn a_body_refused_for_its_length_is_logged_with_the_limit() {
    let s = site();
    let r = post(&s, "/cgi-bin/count.sh", &vec![b'x'; 70_000], false);
    assert_eq!(r.status, 413);
    s.wait_stderr_line(
        "client 127.0.0.1: request body of 70000 bytes is over the limit of 65536 bytes: 413 \"POST /cgi-bin/count.sh\"",
    );
    let r = post(&s, "/big/count.sh", &vec![b'x'; 70_000], false);
    assert_eq!(r.status, 200);
    let mut raw =
        b"POST /big/count.sh HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n".to_vec();
    raw.extend_from_slice(b"x");
    let r = s.request(&raw);
    assert_eq!(r.status, 413);
    s.wait_stderr_line(
        "client 127.0.0.1: request body of 4000000 bytes is over the limit of 3145728 bytes: 413 \"POST /big/count.sh\"",
    );
    let mut raw = b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n".to_vec();
    raw.extend_from_slice(b"x");
    assert_eq!(s.request(&raw).status, 413);
    s.wait_stderr_line(
        "client 127.0.0.1: request body of 4000000 bytes is over the limit of 3145728 bytes: 413 \"POST /a.txt\"",
    );
}

#[cfg(feature = "http2")]
#[test]
fn over_http_2_a_body_refused_for_its_size_is_logged_with_the_limit() {
    use crate::common::h2::H2;
    let s = site();
    let mut c = H2::connect(s.addr(), &[], 0);
    let body = vec![b'x'; 70_000];
    let ids = [
        c.request(
            "POST",
            "/cgi-bin/count.sh",
            &[("content-length", "70000")],
            Some(&body),
        ),
        c.request("POST", "/cgi-bin/count.sh?streamed", &[], Some(&body)),
    ];
    let a = c.answers(&ids);
    assert_eq!((a[0].status(), a[1].status()), ("413", "413"));
    s.wait_stderr_line(
        "client 127.0.0.1: request body of 70000 bytes is over the limit of 65536 bytes: 413 \"POST /cgi-bin/count.sh\"",
    );
    s.wait_stderr_line(
        "client 127.0.0.1: request body is over the limit of 65536 bytes: 413 \"POST /cgi-bin/count.sh?streamed\"",
    );
}
