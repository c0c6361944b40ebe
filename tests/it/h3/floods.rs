//! HTTP/3 as a UDP service under abuse (issue #30's floods), each with
//! aioquic as the abusive client (`tests/it/h3/flood.py`): streams opened
//! and cancelled in a loop, QPACK bombs and a dynamic table the server
//! never offered, connection floods from one address, and Initials from
//! many (spoofed) addresses. Each is bounded, and each fails without its
//! defence.

use serde_json::{json, Value};

use super::{aioquic, fields, h3, peak_kib, server};
use crate::common::{skip, tls::testdata, Builder, Server};

/// `H3_EXCESSIVE_LOAD` (RFC 9114 §8.1).
const H3_EXCESSIVE_LOAD: u64 = 0x107;
/// `QPACK_DECOMPRESSION_FAILED` (RFC 9204 §6).
const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
/// `QPACK_ENCODER_STREAM_ERROR` (RFC 9204 §6).
const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;
/// `H3_CLOSED_CRITICAL_STREAM` (RFC 9114 §8.1).
const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
/// `H3_NO_ERROR` (RFC 9114 §8.1).
const H3_NO_ERROR: u64 = 0x100;

/// Runs the abusive client on `spec` (its mode and what it needs) against
/// `server`'s UDP port; `None`, after saying the test skips, without
/// aioquic.
fn flood(server: &Server, mut spec: Value) -> Option<Value> {
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return None;
    }
    spec["port"] = json!(server.addr().port());
    spec["ca"] = json!(testdata("ca.pem"));
    Some(super::answer("flood.py", &spec))
}

/// The server still answers a new client: a GET of `/index.html`.
fn still_serves(s: &Server) {
    let out = h3(s, json!([{"method": "GET", "path": "/index.html"}])).expect("aioquic");
    assert_eq!(fields(&out["responses"][0])[0], ":status: 200");
    assert_eq!(super::text(&out["responses"][0]), "hello\n");
}

/// Streams opened and cancelled in a loop on one connection to `s` (each:
/// a GET's HEADERS, then RESET_STREAM and STOP_SENDING at once; the
/// server routes it, then drops its answer), 2000 of them: the connection
/// is closed with H3_EXCESSIVE_LOAD after a number of streams within
/// `closed_after`, and a new client is still served. `None` without
/// aioquic.
fn cancel_flood(s: &Server, closed_after: std::ops::RangeInclusive<u64>) -> Option<Value> {
    let spec = json!({"mode": "reset", "streams": 2000, "path": "/index.html"});
    flood_closes(s, spec, closed_after)
}

/// The flood `spec` on one connection to `s`: closed with
/// H3_EXCESSIVE_LOAD after a number of streams within `closed_after`,
/// and a new client is still served. What the flood client said.
fn flood_closes(
    s: &Server,
    spec: Value,
    closed_after: std::ops::RangeInclusive<u64>,
) -> Option<Value> {
    let out = flood(s, spec)?;
    assert_eq!(
        out["terminated"],
        json!([H3_EXCESSIVE_LOAD, "too many streams cancelled"]),
        "{out}"
    );
    let n = out["cancelled"].as_u64().expect("cancelled");
    assert!(closed_after.contains(&n), "{n} streams cancelled");
    still_serves(s);
    Some(out)
}

#[test]
fn streams_opened_and_cancelled_in_a_loop_close_the_connection() {
    let s = server(&[("index.html", b"hello\n")]);
    let before = peak_kib(&s);
    // Past 400 such frames (200 streams) in 10 s the connection is
    // closed; without the budget the 2000 all go (the stream limit never
    // stops them: each cancelled stream frees its place). (What the
    // client sent before it heard the close: at most one stream credit
    // more, 100.)
    if cancel_flood(&s, 200..=400).is_none() {
        return;
    }
    let grew = peak_kib(&s).saturating_sub(before);
    assert!(grew < 8 * 1024, "peak RSS grew by {grew} KiB");
}

#[test]
fn a_second_connection_from_the_same_address_and_port_has_its_own_cancel_budget() {
    // Two connections from one UDP socket; the first closes, and once the
    // server has let go of it, the second cancels streams in a loop. Its
    // budget is its own: closed past 400 frames, as a lone connection is.
    // (Kept by client address, the second's was the first's entry, which
    // went with the first: all 2000 went.)
    let s = server(&[("index.html", b"hello\n")]);
    let spec = json!({"mode": "shared", "streams": 2000, "path": "/index.html"});
    if let Some(out) = flood_closes(&s, spec, 200..=400) {
        assert_eq!(out["forgotten"], true, "{out}");
    }
}

#[test]
fn streams_the_client_makes_the_server_reset_are_counted_as_cancels() {
    // "MadeYouReset" (CVE-2025-8671, as HTTP/2's): each stream's body
    // overruns its content-length, a stream error; the client cancels
    // nothing, and its ended streams give their credit back. Each counts
    // once: closed past 400 of them, where without the count all 2000
    // go.
    let s = server(&[("index.html", b"hello\n")]);
    let spec = json!({"mode": "reset", "overrun": true, "streams": 2000, "path": "/index.html"});
    flood_closes(&s, spec, 400..=600);
}

#[test]
fn streams_that_end_short_of_their_content_length_are_counted_as_cancels() {
    // As the overrun above, each body 3 bytes of a content-length of 10:
    // the server answers the GET first, and reads the body's short end
    // in what it drops (it was read without its frames: all 2000 went).
    // The close is said in the error log, as HTTP/2's are (it said
    // nothing).
    let s = server(&[("index.html", b"hello\n")]);
    let spec = json!({"mode": "reset", "underrun": true, "streams": 2000, "path": "/index.html"});
    if flood_closes(&s, spec, 400..=600).is_some() {
        s.wait_stderr_line(
            "client 127.0.0.1: HTTP/3 connection closed: too many streams cancelled",
        );
    }
}

#[test]
fn a_stream_the_server_resets_counts_once_though_the_client_answers_with_a_reset() {
    // 300 malformed POSTs (a user-agent that ends in a space), each reset
    // by the server (H3_MESSAGE_ERROR) and stopped before its body came;
    // the client, as RFC 9000 §3.5 asks, answers each STOP_SENDING with a
    // RESET_STREAM.
    // Each stream counts once, 300 within the 400: the connection lives
    // and still answers. (Its reset counted too, 600: closed at ~200.)
    let s = server(&[("index.html", b"hello\n")]);
    let spec = json!({"mode": "reset", "malformed": true, "streams": 300, "path": "/index.html"});
    let Some(out) = flood(&s, spec) else {
        return;
    };
    assert_eq!(out["terminated"], Value::Null, "{out}");
    assert_eq!(out["cancelled"], 300, "{out}");
    // H3_MESSAGE_ERROR (RFC 9114 §8.1), every one.
    assert_eq!(out["server_resets"], json!({"270": 300}), "{out}");
    assert_eq!(out["after"], "200", "{out}");
}

#[test]
fn the_cancel_budget_is_configured() {
    // `[http3] max_cancels = 40`: closed after 20 streams cancelled both
    // ways (and at most one stream credit more, 100), far below the
    // default's 200.
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.tls()
        .config("[http3]\nenable = true\nmax_cancels = 40\nflood_window = \"1m\"\n");
    cancel_flood(&b.start(), 20..=120);
}

/// A HEADERS frame (type 0x01) of `payload`.
fn headers_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x01];
    varint(payload.len() as u64, &mut f);
    f.extend_from_slice(payload);
    f
}

/// QUIC's variable-length integer (RFC 9000 §16).
fn varint(v: u64, out: &mut Vec<u8>) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16_383 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        16_384..=1_073_741_823 => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

/// A field section's start (Required Insert Count 0, Delta Base 0) and a
/// GET of `/` for `a.test`: static entries 17 (`:method GET`), 23
/// (`:scheme https`), 1 (`:path /`), and `:authority` (entry 0) named
/// with a literal value.
fn get_section() -> Vec<u8> {
    let mut p = vec![0x00, 0x00, 0xc0 | 17, 0xc0 | 23, 0xc0 | 1, 0x50, 6];
    p.extend_from_slice(b"a.test");
    p
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// `raw` mode: `request` (a request stream's bytes) and `encoder` (on the
/// client's QPACK encoder stream).
fn raw(s: &Server, request: Option<&[u8]>, encoder: &[u8]) -> Option<Value> {
    let spec = json!({
        "mode": "raw",
        "request": request.map(hex),
        "encoder": hex(encoder),
        "wait": 10,
    });
    flood(s, spec)
}

#[test]
fn a_qpack_bomb_of_static_references_is_refused_before_it_expands() {
    let s = server(&[("index.html", b"hello\n")]);
    let before = peak_kib(&s);
    // 30,000 two-byte references to static entry 81 (a 53-byte
    // content-security-policy), 108 bytes each as RFC 9114 §4.2.2 counts
    // them: a 60 KB frame, under the field section size (64 KiB), that
    // decodes to 3.2 MB.
    let mut p = get_section();
    for _ in 0..30_000 {
        p.extend_from_slice(&[0xff, 81 - 63]);
    }
    assert!(p.len() < 64 * 1024);
    let Some(out) = raw(&s, Some(&headers_frame(&p)), b"") else {
        return;
    };
    // Decoding stops once twice the limit is decoded: the connection is
    // closed, H3_EXCESSIVE_LOAD, the rest never expanded.
    assert_eq!(
        out["terminated"],
        json!([H3_EXCESSIVE_LOAD, "field section too large"]),
        "{out}"
    );
    // (What a connection costs, at most: 2.4 MiB measured, the first
    // connection's buffers and TLS state; without the bound the decoded
    // fields are refused by the request's own limit as they come, 431.)
    let grew = peak_kib(&s).saturating_sub(before);
    assert!(grew < 8 * 1024, "peak RSS grew by {grew} KiB");
    still_serves(&s);
}

#[test]
fn a_headers_frame_over_the_field_section_size_is_refused_unread() {
    let s = server(&[("index.html", b"hello\n")]);
    // A HEADERS frame that says 1 MiB (the limit is 64 KiB): refused at
    // its head, before a byte of it is held.
    let mut f = vec![0x01];
    varint(1 << 20, &mut f);
    f.extend_from_slice(&get_section());
    let Some(out) = raw(&s, Some(&f), b"") else {
        return;
    };
    assert_eq!(
        out["terminated"],
        json!([H3_EXCESSIVE_LOAD, "frame too large"]),
        "{out}"
    );
}

#[test]
fn too_many_field_lines_are_answered_431_and_the_connection_lives() {
    let s = server(&[("index.html", b"hello\n")]);
    // 3,000 literal lines `x-a: b` (six bytes each, 36 as counted): an
    // 18 KB frame whose 108 KB of fields are over the 64 KiB limit.
    let mut p = get_section();
    for _ in 0..3000 {
        p.extend_from_slice(b"\x23x-a\x01b");
    }
    let Some(out) = raw(&s, Some(&headers_frame(&p)), b"") else {
        return;
    };
    assert_eq!(out["headers"][0], json!([":status", "431"]), "{out}");
    assert_eq!(out["terminated"], Value::Null);
}

#[test]
fn qpack_s_dynamic_table_is_held_to_its_capacity_as_rfc_9204_says() {
    let s = server(&[("index.html", b"hello\n")]);
    // The server's SETTINGS say QPACK_MAX_TABLE_CAPACITY 4096 and
    // QPACK_BLOCKED_STREAMS 0 (h3.rs checks them). Setting the capacity
    // to 0 is fine (§4.3.1) ...
    let get = headers_frame(&get_section());
    let Some(out) = raw(&s, Some(&get), &[0x20]) else {
        return;
    };
    assert_eq!(out["headers"][0], json!([":status", "200"]), "{out}");
    assert_eq!(out["terminated"], Value::Null);
    // ... a capacity above 4096 (4097: 0x3f, then 4066) is a connection
    // error, QPACK_ENCODER_STREAM_ERROR (§4.3.1) ...
    let out = raw(&s, None, &[0x3f, 0xe2, 0x1f]).expect("aioquic");
    assert_eq!(out["terminated"][0], QPACK_ENCODER_STREAM_ERROR, "{out}");
    // ... so is an insertion larger than the table (a literal name,
    // `abc`, and 4,100 bytes of value: more than 4,096 whether aioquic's
    // own Set Dynamic Table Capacity 4096 came first or not, §3.2.2) ...
    let mut insert = b"\x43abc\x7f\x85\x1f".to_vec();
    insert.resize(insert.len() + 4100, b'd');
    let out = raw(&s, None, &insert).expect("aioquic");
    assert_eq!(out["terminated"][0], QPACK_ENCODER_STREAM_ERROR, "{out}");
    // ... and a field section whose Required Insert Count is above what
    // was inserted (it would block, and no blocked stream is allowed) is
    // QPACK_DECOMPRESSION_FAILED (§2.1.2), as is a reference to a
    // dynamic entry that is not there (an indexed line with T = 0).
    let mut p = get_section();
    p[0] = 0x01;
    let out = raw(&s, Some(&headers_frame(&p)), b"").expect("aioquic");
    assert_eq!(out["terminated"][0], QPACK_DECOMPRESSION_FAILED, "{out}");
    let mut p = get_section();
    p.push(0x80);
    let out = raw(&s, Some(&headers_frame(&p)), b"").expect("aioquic");
    assert_eq!(out["terminated"][0], QPACK_DECOMPRESSION_FAILED, "{out}");
    still_serves(&s);
}

#[test]
fn a_critical_stream_reset_or_stopped_closes_the_connection() {
    // The control stream and the QPACK streams may not close, either
    // side's (RFC 9114 §6.2.1, RFC 9204 §4.2): the client's reset by
    // RESET_STREAM, or the server's control stream stopped by
    // STOP_SENDING, is H3_CLOSED_CRITICAL_STREAM, as their end is (both
    // were ignored: the connection stayed open).
    let s = server(&[("index.html", b"hello\n")]);
    let cases = [
        json!({"reset": "control"}),
        json!({"reset": "encoder"}),
        json!({"reset": "decoder"}),
        json!({"stop": 3}),
    ];
    for mut spec in cases {
        spec["mode"] = json!("critical");
        let Some(out) = flood(&s, spec.clone()) else {
            return;
        };
        assert_eq!(
            out["terminated"],
            json!([
                H3_CLOSED_CRITICAL_STREAM,
                "a control or QPACK stream closed"
            ]),
            "{spec}: {out}"
        );
    }
    still_serves(&s);
}

/// Client `i` of an `initials` run.
fn client(out: &Value, i: usize) -> &Value {
    &out["clients"][i]
}

#[test]
fn spoofed_initials_from_many_addresses_get_a_retry_once_over_the_threshold() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[http3]\nenable = true\nretry_above = 4\n");
    b.tls();
    let s = b.start();
    // Twelve clients' first flights from 127.0.0.2 ... 127.0.0.13 (the
    // loopback takes all of 127/8), none of which ever answers, sent at
    // once: read in one turn, those not accepted yet count too.
    let sources: Vec<String> = (2..14).map(|i| format!("127.0.0.{i}")).collect();
    let spec = json!({"mode": "initials", "sources": sources, "wait": 3, "gap": 0});
    let Some(out) = flood(&s, spec) else {
        return;
    };
    for i in 0..12 {
        let c = client(&out, i);
        let sent = c["sent"].as_u64().expect("sent");
        let got = c["bytes"].as_u64().expect("bytes");
        if i < 4 {
            // Under the threshold: a handshake begins (Initial, Handshake),
            // and what goes to an address not validated, resent as often
            // as the server's timers say, is at most three times what came
            // from it (RFC 9000 §8.1).
            assert_eq!(c["first"], "initial", "client {i}: {c}");
            assert!(got <= 3 * sent, "client {i}: {got} bytes for {sent}: {c}");
        } else {
            // Over it (4 connections held): one Retry, nothing kept, so
            // nothing is ever sent again (RFC 9000 §8.1.2).
            assert_eq!(c["first"], "retry", "client {i}: {c}");
            assert_eq!(c["datagrams"], 1, "client {i}: {c}");
            assert!(got < sent, "client {i}: {got} bytes for {sent}");
        }
    }
    still_serves(&s);
}

#[test]
fn a_connection_flood_from_one_address_is_held_to_its_limit() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[limits]\nmax_connections_per_ip = 3\n[http3]\nenable = true\n");
    b.tls();
    let s = b.start();
    // Twenty first flights (each a new connection ID) "from" 127.0.0.1,
    // never answered, as a spoofer sends them: with connections counted
    // per address, each gets a Retry (RFC 9000 §8.1.2) and nothing is
    // kept, so none holds a place of the address's own.
    let sources = vec!["127.0.0.1"; 20];
    let spec = json!({"mode": "initials", "sources": sources, "wait": 1});
    let Some(out) = flood(&s, spec) else {
        return;
    };
    for i in 0..20 {
        let c = client(&out, i);
        assert_eq!(c["first"], "retry", "client {i}: {c}");
        assert_eq!(c["datagrams"], 1, "client {i}: {c}");
    }
    // The address's owner is served at once (its handshake's idle timeout,
    // 30 s, would otherwise keep it out), after proving its address.
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "requests": [{"method": "GET", "path": "/index.html"}],
        "timeout": 5,
    });
    let out = super::answer("client.py", &spec);
    assert_eq!(out["retries"], 1, "{out}");
    assert_eq!(out["responses"][0]["text"], "hello\n", "{out}");
    // Clients that prove their address are held to the limit: three hold
    // their connections, a fourth is refused (CONNECTION_REFUSED).
    let hold = json!({"port": s.addr().port(), "ca": testdata("ca.pem"), "hold": 20});
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut child = super::client_with(&hold);
        let mut line = String::new();
        let stdout = child.stdout.as_mut().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("connected");
        assert_eq!(line, "connected\n");
        held.push(child);
    }
    let refused = super::client_with(&spec)
        .wait_with_output()
        .expect("client");
    assert!(
        !refused.status.success(),
        "a fourth connection was served: {}",
        String::from_utf8_lossy(&refused.stdout)
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("ConnectionError"), "{said}");
    s.wait_stderr_line(
        "refused connection from 127.0.0.1 (HTTP/3): limits.max_connections_per_ip reached",
    );
    for mut child in held {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[test]
fn spoofed_initials_never_take_more_than_half_of_max_connections() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[limits]\nmax_connections = 4\n[http3]\nenable = true\n");
    b.tls();
    let s = b.start();
    // Six first flights from six addresses, never answered: the first two
    // begin a handshake; once half of max_connections are open, the
    // others are asked to prove their address (a Retry) and hold nothing,
    // so Initials from made-up addresses cannot fill the server.
    let sources: Vec<String> = (2..8).map(|i| format!("127.0.9.{i}")).collect();
    let spec = json!({"mode": "initials", "sources": sources, "wait": 1});
    let Some(out) = flood(&s, spec) else {
        return;
    };
    for i in 0..6 {
        let c = client(&out, i);
        let first = if i < 2 { "initial" } else { "retry" };
        assert_eq!(c["first"], first, "client {i}: {c}");
    }
    // Room is left for real clients, over TCP and over QUIC.
    let mut tls = s.connect_tls();
    tls.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
    assert_eq!(tls.read_response(false).status, 200);
    drop(tls);
    still_serves(&s);
}

#[test]
fn at_max_connections_idle_keep_alive_ones_give_way_to_a_quic_client() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[limits]\nmax_connections = 2\n[http3]\nenable = true\n");
    b.tls();
    let s = b.start();
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    // Two HTTPS clients, answered and idle: the limit is reached.
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut c = s.connect_tls();
        c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
        assert_eq!(c.read_response(false).status, 200);
        idle.push(c);
    }
    // A new QUIC client is served, as a new TCP one would be: an idle
    // connection is closed to make room (it was refused).
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "requests": [{"method": "GET", "path": "/index.html"}],
        "timeout": 5,
    });
    let out = super::answer("client.py", &spec);
    assert_eq!(out["responses"][0]["text"], "hello\n", "{out}");
    drop(idle);
}

#[test]
fn a_datagram_of_a_connection_from_a_new_address_gets_no_reset_and_the_connection_lives() {
    // Two workers: a datagram of a connection sent from a new port (a
    // client whose address changed, or anyone who saw the connection
    // ID) goes to whichever socket the kernel's hash picks; another
    // worker hands it to the connection's own (quic/route.rs), which
    // drops it: the path does not migrate, and RFC 9000 §9 forbids a
    // stateless reset there (it would let a third party close the
    // connection). Without the hand-over, the other worker would not
    // know the connection ID and would answer with a stateless reset
    // made with the process's key: one the client believes.
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.workers(2).tls().arg("--http3");
    let s = b.start();
    let spec = json!({"mode": "stray", "path": "/index.html", "tries": 16, "wait": 0.3});
    let Some(out) = flood(&s, spec) else {
        return;
    };
    assert_eq!(out["status"], "200", "{out}");
    assert_eq!(out["token"].as_str().expect("token").len(), 32, "{out}");
    assert_eq!(out["replies"], json!([]), "{out}");
    assert_eq!(out["after"], "200", "{out}");
}

/// A server of `/index.html` and a CGI program (`/cgi-bin/cat.sh`, which
/// echoes its body) with HTTP/3 and `timeouts` (TOML lines).
fn timed_server(timeouts: &str) -> Server {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    let path = b.base().join("cgi-bin").join("cat.sh");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &path,
        "#!/bin/sh\necho 'Content-Type: text/plain'\necho\ncat\n",
    )
    .expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config(&format!(
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n[timeouts]\n{timeouts}\n"
    ));
    b.tls().arg("--http3");
    b.start()
}

/// `raw` mode on a request stream (`request`: its bytes; `open`: not
/// ended), the client sending a PING every 0.2 s (QUIC's idle timeout
/// never ends the connection), for at most `wait` seconds; `until_close`:
/// waits for the connection's close, not for an answer.
fn held(s: &Server, request: &[u8], open: bool, until_close: bool, wait: u64) -> Option<Value> {
    held_dripping(s, request, &[], until_close, wait, open)
}

/// As [`held`], with `drip` sent on the request stream with each PING.
fn held_dripping(
    s: &Server,
    request: &[u8],
    drip: &[u8],
    until_close: bool,
    wait: u64,
    open: bool,
) -> Option<Value> {
    let spec = json!({
        "drip": hex(drip),
        "mode": "raw",
        "request": hex(request),
        "open": open,
        "ping": true,
        "until_close": until_close,
        "wait": wait,
    });
    flood(s, spec)
}

/// A POST with no content-length to `/cgi-bin/cat.sh` (its body held
/// whole before the program starts: RFC 3875 wants its length), and 3
/// bytes of its body: a request stream's bytes, not ended.
fn stalled_post() -> Vec<u8> {
    let mut p = vec![0x00, 0x00, 0xc0 | 20, 0xc0 | 23, 0x50, 6];
    p.extend_from_slice(b"a.test");
    p.extend_from_slice(&[0x51, 15]);
    p.extend_from_slice(b"/cgi-bin/cat.sh");
    let mut request = headers_frame(&p);
    request.extend_from_slice(&[0x00, 3]);
    request.extend_from_slice(b"abc");
    request
}

#[test]
fn a_body_that_stops_coming_is_answered_408_over_h3_however_the_client_pings() {
    // A POST with no content-length to a CGI program, whose body is held
    // whole before the program starts (RFC 3875 wants its length): 3
    // bytes of it, then nothing but PINGs. It held its place (and the
    // memory of the body) for as long as the client pinged: QUIC's idle
    // timeout counts any packet, and HTTP/3 had no `timeouts.body`;
    // HTTP/2 answers 408.
    let s = timed_server("body = \"1s\"\nkeepalive = \"30s\"");
    let request = stalled_post();
    let Some(out) = held(&s, &request, true, false, 10) else {
        return;
    };
    assert_eq!(out["headers"][0], json!([":status", "408"]), "{out}");
    assert!(out["terminated"].is_null(), "{out}");
    still_serves(&s);
}

#[test]
fn an_idle_connection_closes_at_the_keepalive_timeout_over_h3_however_the_client_pings() {
    // A GET answered, then nothing but PINGs: the connection is closed
    // (H3_NO_ERROR) at timeouts.keepalive, as an HTTP/1.1 or HTTP/2 one
    // is. It lived as long as the client pinged, holding its place in
    // the connection limits.
    let s = timed_server("keepalive = \"1s\"");
    let Some(out) = held(&s, &headers_frame(&get_section()), false, true, 10) else {
        return;
    };
    assert_eq!(out["headers"][0], json!([":status", "200"]), "{out}");
    assert_eq!(out["terminated"], json!([H3_NO_ERROR, "idle"]), "{out}");
    still_serves(&s);
}

/// A reserved frame type of HTTP/3 (0x1f * N + 0x21, RFC 9114 §7.2.8),
/// empty: a frame a receiver must ignore.
const GREASE: [u8; 2] = [0x21, 0x00];

#[test]
fn a_request_head_never_finished_closes_the_connection_at_the_header_timeout() {
    // Half a HEADERS frame, then nothing but PINGs (or, in the second
    // case, no HEADERS but a frame the server ignores on the request
    // stream with each PING): closed (H3_NO_ERROR) at timeouts.header, as
    // HTTP/1.1 answers a head that does not come 408 (the keep-alive
    // timeout, longer, does not apply).
    let s = timed_server("header = \"1s\"\nkeepalive = \"60s\"");
    let whole = headers_frame(&get_section());
    let half = &whole[..whole.len() - 3];
    for (request, drip) in [(half, &[][..]), (&[], &GREASE)] {
        let Some(out) = held_dripping(&s, request, drip, true, 10, true) else {
            return;
        };
        assert!(
            out["headers"].as_array().is_some_and(Vec::is_empty),
            "{out}"
        );
        assert_eq!(out["terminated"], json!([H3_NO_ERROR, "idle"]), "{out}");
    }
    still_serves(&s);
}

#[test]
fn frames_to_ignore_do_not_keep_a_body_from_its_timeout() {
    // A POST's body stops after 3 bytes while a frame the server ignores
    // comes every 0.2 s: answered 408 at timeouts.body, as a body that
    // stops coming is.
    let s = timed_server("body = \"1s\"\nkeepalive = \"30s\"");
    let request = stalled_post();
    let Some(out) = held_dripping(&s, &request, &GREASE, false, 10, true) else {
        return;
    };
    assert_eq!(out["headers"][0], json!([":status", "408"]), "{out}");
    still_serves(&s);
}
