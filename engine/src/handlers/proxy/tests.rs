//! The forwarded request's head, byte for byte.

use std::net::SocketAddr;

use super::request::{switches_to_http, write_head, BodyOut, Forward};
use crate::http::parse::Limits;
use crate::http::request::{Forwarded, OwnedRequest};

const LIMITS: Limits = Limits {
    max_request_line: 8192,
    max_head: 16384,
    max_headers: 64,
};

fn request(head: &str) -> OwnedRequest {
    let mut req = OwnedRequest::default();
    let n = req.parse(head.as_bytes(), &LIMITS).unwrap().unwrap();
    assert_eq!(n, head.len());
    req
}

fn forward<'a>(req: &'a OwnedRequest, client: &str) -> Forward<'a> {
    Forward {
        target: req.target(),
        host: req.host().unwrap(),
        client_host: req.host().unwrap(),
        hop: client.parse::<SocketAddr>().unwrap().ip(),
        https: false,
        trusted: false,
        via: false,
        body: BodyOut::None,
        upgrade: None,
        set: &[],
        remove: &[],
    }
}

fn written(req: &OwnedRequest, f: &Forward<'_>) -> String {
    let mut out = Vec::new();
    write_head(&mut out, req, f);
    String::from_utf8(out).unwrap()
}

#[test]
fn a_plain_get_goes_with_its_fields_and_who_asked() {
    let req =
        request("GET /a?b HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\nCookie: c=1\r\n\r\n");
    assert_eq!(
        written(&req, &forward(&req, "192.0.2.7:5000")),
        "GET /a?b HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\nCookie: c=1\r\n\
         X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n\
         X-Forwarded-Host: example.org\r\n\
         Forwarded: for=192.0.2.7;proto=http;host=\"example.org\"\r\n\r\n"
    );
}

#[test]
fn an_ipv4_client_is_written_with_octets_of_every_width() {
    let req = request("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    for ip in ["0.0.0.0", "9.10.99.100", "255.255.255.255", "127.0.0.1"] {
        let head = written(&req, &forward(&req, &format!("{ip}:1")));
        assert!(
            head.contains(&format!("\r\nX-Forwarded-For: {ip}\r\n")),
            "{head}"
        );
        assert!(
            head.contains(&format!("\r\nForwarded: for={ip};")),
            "{head}"
        );
    }
}

#[test]
fn hop_by_hop_fields_and_those_connection_names_stay_behind() {
    let req = request(
        "POST /f HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-Secret\r\nKeep-Alive: 5\r\n\
         X-Secret: s\r\nTE: trailers\r\nTrailer: X\r\nProxy-Authorization: Basic x\r\n\
         Proxy-Connection: close\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\
         Upgrade: websocket\r\nX-Kept: k\r\n\r\n",
    );
    let mut f = forward(&req, "[2001:db8::1]:1");
    f.body = BodyOut::Chunked;
    f.https = true;
    assert_eq!(
        written(&req, &f),
        "POST /f HTTP/1.1\r\nHost: h\r\nX-Kept: k\r\n\
         X-Forwarded-For: 2001:db8::1\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: h\r\n\
         Forwarded: for=\"[2001:db8::1]\";proto=https;host=\"h\"\r\n\
         Transfer-Encoding: chunked\r\nTrailer: X\r\nTE: trailers\r\nConnection: TE\r\n\r\n",
        "brisk's own TE and Trailer for its hop (below)"
    );
}

#[test]
fn te_trailers_and_the_trailer_announcement_are_brisks_own_for_its_hop() {
    // The client takes trailers and announces its own: brisk, which
    // passes trailers both ways, says so to the upstream (TE named by
    // Connection, RFC 9110 §10.1.4), and announces the trailer fields
    // it will send at the chunked body's end, less those a trailer may
    // not hold (RFC 9110 §6.5.1: they are dropped there).
    let req = request(
        "POST /rpc HTTP/1.1\r\nHost: h\r\nTE: deflate;q=0.5, Trailers\r\nConnection: TE\r\n\
         Trailer: x-sum, Content-Type\r\nTrailer: grpc-status,,bad name\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let mut f = forward(&req, "192.0.2.7:1");
    f.body = BodyOut::Chunked;
    let sent = written(&req, &f);
    let own = sent.split_once("\r\nForwarded: ").unwrap().1;
    assert_eq!(
        own,
        "for=192.0.2.7;proto=http;host=\"h\"\r\nTransfer-Encoding: chunked\r\n\
         Trailer: x-sum, grpc-status\r\nTE: trailers\r\nConnection: TE\r\n\r\n"
    );
    // A body sent by its length has no trailers: nothing announced.
    f.body = BodyOut::Length(3);
    let sent = written(&req, &f);
    assert!(
        sent.ends_with("Content-Length: 3\r\nTE: trailers\r\nConnection: TE\r\n\r\n"),
        "{sent}"
    );
    // Nor when none may pass; and no TE without `trailers` in it.
    let req = request(
        "POST /rpc HTTP/1.1\r\nHost: h\r\nTE: gzip\r\nTrailer: Content-MD5\r\n\
         Transfer-Encoding: chunked\r\n\r\n",
    );
    let mut f = forward(&req, "192.0.2.7:1");
    f.body = BodyOut::Chunked;
    let sent = written(&req, &f);
    assert!(
        sent.ends_with("\r\nTransfer-Encoding: chunked\r\n\r\n"),
        "{sent}"
    );
    // A WebSocket handshake's Connection names both.
    let req = request(
        "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, TE\r\nUpgrade: websocket\r\n\
         TE: trailers\r\n\r\n",
    );
    let mut f = forward(&req, "192.0.2.7:1");
    f.upgrade = Some(b"websocket");
    let sent = written(&req, &f);
    assert!(
        sent.ends_with("\r\nTE: trailers\r\nConnection: TE, upgrade\r\nUpgrade: websocket\r\n\r\n"),
        "{sent}"
    );
}

#[test]
fn a_client_cannot_name_itself_without_trusted_proxies() {
    let head = "GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-For: 10.0.0.2\r\n\
                X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\nForwarded: for=10.0.0.1\r\n\r\n";
    let req = request(head);
    let untrusted = written(&req, &forward(&req, "192.0.2.7:1"));
    assert!(!untrusted.contains("10.0.0"), "{untrusted}");
    assert!(!untrusted.contains("evil"), "{untrusted}");
    // Through a trusted proxy, its chain is kept and brisk's hop added.
    let mut req = request(head);
    req.set_forwarded(Forwarded {
        addr: "10.0.0.2:0".parse().unwrap(),
        https: Some(true),
        by: "192.0.2.7".parse().unwrap(),
    });
    let mut f = forward(&req, "192.0.2.7:1");
    f.trusted = true;
    assert_eq!(
        written(&req, &f),
        "GET / HTTP/1.1\r\nHost: h\r\n\
         X-Forwarded-For: 10.0.0.1, 10.0.0.2, 192.0.2.7\r\n\
         X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\n\
         Forwarded: for=10.0.0.1, for=192.0.2.7;proto=http;host=\"h\"\r\n\r\n"
    );
}

#[test]
fn lengths_via_set_and_remove() {
    let req = request(
        "PUT /u HTTP/1.0\r\nHost: h:8080\r\nContent-Length: 3\r\nVia: 1.1 edge\r\n\
         X-Powered-By: p\r\nX-App: client\r\n\r\n",
    );
    let set = [("X-App".into(), "brisk".into())];
    let remove = ["x-powered-by".into()];
    let mut f = forward(&req, "127.0.0.1:9");
    f.target = b"/stripped";
    f.host = b"app.internal";
    f.body = BodyOut::Length(3);
    f.via = true;
    f.set = &set;
    f.remove = &remove;
    assert_eq!(
        written(&req, &f),
        "PUT /stripped HTTP/1.1\r\nHost: app.internal\r\n\
         X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: h:8080\r\n\
         Forwarded: for=127.0.0.1;proto=http;host=\"h:8080\"\r\n\
         Via: 1.1 edge, 1.0 brisk\r\nX-App: brisk\r\nContent-Length: 3\r\n\r\n"
    );
    // A method that means a body says it has none.
    let req = request("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
    assert!(written(&req, &forward(&req, "127.0.0.1:9")).ends_with("\r\nContent-Length: 0\r\n\r\n"));
}

#[test]
fn an_upgrade_goes_on_only_when_asked() {
    let req = request(
        "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    let mut f = forward(&req, "127.0.0.1:9");
    assert!(!written(&req, &f).contains("pgrade"));
    f.upgrade = Some(b"websocket");
    assert!(written(&req, &f).ends_with(
        "Sec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\n\
         X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: h\r\n\
         Forwarded: for=127.0.0.1;proto=http;host=\"h\"\r\n\
         Connection: upgrade\r\nUpgrade: websocket\r\n\r\n"
    ));
}

#[test]
fn switches_to_protocols_that_carry_http_are_told_apart() {
    for v in [
        "h2c",
        "H2C",
        " h2c ",
        "websocket, h2c",
        "HTTP/2.0",
        "http/1.1",
        "TLS/1.0",
        "h2",
        // Not a list of protocols: never passed on.
        "h2c;",
        "\"h2c\"",
        "websocket, h2c;x",
        "web socket",
        "websocket/",
        "/1",
    ] {
        assert!(switches_to_http(v.as_bytes()), "{v}");
    }
    for v in [
        "websocket",
        "WebSocket",
        "foo/1, bar",
        "h2cx",
        "https",
        "tls1",
        "websocket, , foo",
    ] {
        assert!(!switches_to_http(v.as_bytes()), "{v}");
    }
}

#[test]
fn a_field_spelt_with_underscores_for_one_brisk_writes_stays_behind() {
    let req = request(
        "GET / HTTP/1.1\r\nHost: h\r\nX_Forwarded_For: 6.6.6.6\r\nx_forwarded_proto: https\r\n\
         X-Forwarded_Host: evil\r\nContent_Length: 5\r\nTransfer_Encoding: chunked\r\n\
         X_App: set-by-client\r\nX_Gone: 1\r\nApi_Key: k\r\nVia: 1.1 other\r\nVia_: x\r\n\r\n",
    );
    let set = [("X-App".into(), "brisk".into())];
    let remove = ["X-Gone".into()];
    let mut f = forward(&req, "192.0.2.7:5000");
    f.set = &set;
    f.remove = &remove;
    f.via = true;
    // (Other fields with `_` go on: `Api_Key` stands for nothing brisk
    // writes.)
    assert_eq!(
        written(&req, &f),
        "GET / HTTP/1.1\r\nHost: h\r\nApi_Key: k\r\nVia_: x\r\n\
         X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: h\r\n\
         Forwarded: for=192.0.2.7;proto=http;host=\"h\"\r\nVia: 1.1 other, 1.1 brisk\r\n\
         X-App: brisk\r\n\r\n"
    );
}

#[test]
fn a_forwarding_field_the_rule_sets_or_removes_is_sent_once_or_not_at_all() {
    let req =
        request("GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-Proto: http\r\nVia: 1.1 edge\r\n\r\n");
    let set = [
        ("X-Forwarded-Proto".into(), "https".into()),
        ("x-forwarded-for".into(), "10.0.0.1".into()),
        ("Via".into(), "1.1 front".into()),
    ];
    let remove = ["X-Forwarded-Host".into(), "forwarded".into()];
    let mut f = forward(&req, "192.0.2.7:5000");
    f.via = true;
    f.set = &set;
    f.remove = &remove;
    assert_eq!(
        written(&req, &f),
        "GET / HTTP/1.1\r\nHost: h\r\n\
         X-Forwarded-Proto: https\r\nx-forwarded-for: 10.0.0.1\r\nVia: 1.1 front\r\n\r\n"
    );
    // Behind trusted proxies too: what the rule says wins.
    f.trusted = true;
    assert_eq!(
        written(&req, &f),
        "GET / HTTP/1.1\r\nHost: h\r\n\
         X-Forwarded-Proto: https\r\nx-forwarded-for: 10.0.0.1\r\nVia: 1.1 front\r\n\r\n"
    );
}

#[test]
fn a_quoted_string_escapes_its_quotes_and_backslashes_only() {
    // RFC 9110 §5.6.4: `"` and `\` take a backslash; the rest is as it is.
    for (s, want) in [
        (&b"h:8080"[..], &b"\"h:8080\""[..]),
        (b"", b"\"\""),
        (b"a\"b\\c", b"\"a\\\"b\\\\c\""),
        (b"\"\\", b"\"\\\"\\\\\""),
    ] {
        let mut out = b"x".to_vec();
        super::request::quoted(&mut out, s);
        assert_eq!(out[1..], *want, "{:?}", String::from_utf8_lossy(s));
    }
}
