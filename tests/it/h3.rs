//! HTTP/3 over QUIC (`[http3]`, `--http3`), with Python's aioquic as the
//! client (`tests/it/h3/client.py`; installed with pip when missing, and
//! the test skips, saying so, when it cannot be).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::Once;

use serde_json::{json, Value};

use crate::common::{skip, tls::testdata, write_file, Builder, Server};

mod floods;
mod loss;

/// `H3_MESSAGE_ERROR` (RFC 9114 §8.1).
const H3_MESSAGE_ERROR: u64 = 0x10e;

/// `H3_NO_ERROR` (RFC 9114 §8.1).
const H3_NO_ERROR: u64 = 0x100;

/// The client script.
fn client() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/h3/client.py")
}

/// Whether Python has aioquic, after one try at installing it.
fn aioquic() -> bool {
    static INSTALL: Once = Once::new();
    let has = || {
        Command::new("python3")
            .args(["-c", "import aioquic"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    INSTALL.call_once(|| {
        if !has() {
            let _ = Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "aioquic"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    });
    has()
}

/// Sends `requests` (aioquic's client's form: method, path, headers,
/// body in base64) on one QUIC connection to `server`'s port over UDP;
/// `None`, after saying the test skips, without aioquic.
fn h3(server: &Server, requests: Value) -> Option<Value> {
    h3_with(server, requests, false)
}

/// As [`h3`], each request sent once the one before is answered if
/// `sequential`.
fn h3_with(server: &Server, requests: Value, sequential: bool) -> Option<Value> {
    h3_spec(server, requests, json!({"sequential": sequential}))
}

/// As [`h3`], with the client's other options `more` (an object).
fn h3_spec(server: &Server, requests: Value, more: Value) -> Option<Value> {
    let spec = spec(server.addr().port(), requests, more)?;
    Some(answer("client.py", &spec))
}

/// The client's spec for `requests` to `port` (the UDP side of a TLS
/// listener) with its other options `more` (an object); `None`, after
/// saying the test skips, without aioquic.
pub(crate) fn spec(port: u16, requests: Value, more: Value) -> Option<Value> {
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return None;
    }
    let mut spec = json!({
        "port": port,
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": requests,
        "timeout": 20,
    });
    for (k, v) in more.as_object().expect("options") {
        spec[k] = v.clone();
    }
    Some(spec)
}

/// What script `name` of tests/it/h3/ printed for `spec` (its JSON), once
/// it ended well.
pub(crate) fn answer(name: &str, spec: &Value) -> Value {
    printed(name, script_with(name, spec))
}

/// What script `name` of tests/it/h3/, started as `child`, printed (its
/// JSON), once it ended well.
pub(crate) fn printed(name: &str, child: std::process::Child) -> Value {
    let out = child.wait_with_output().expect(name);
    assert!(
        out.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script's JSON")
}

/// The client script started on `spec` (given on its stdin, closed).
pub(crate) fn client_with(spec: &Value) -> std::process::Child {
    script_with("client.py", spec)
}

/// Script `name` of tests/it/h3/ started on `spec` (given on its stdin,
/// closed), its output piped.
fn script_with(name: &str, spec: &Value) -> std::process::Child {
    let mut child = Command::new("python3")
        .arg(client().with_file_name(name))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(spec.to_string().as_bytes())
        .expect("spec");
    child
}

/// `len` pseudo-random bytes from `seed` (xorshift32): a file the same
/// in every run.
fn noise(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed;
    let mut v = vec![0u8; len];
    for b in v.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    v
}

/// A server of `files` with HTTPS and HTTP/3 on one port.
fn server(files: &[(&str, &[u8])]) -> Server {
    let mut b = Builder::new();
    for (name, body) in files {
        b.file(name, body);
    }
    b.tls().arg("--http3");
    b.start()
}

/// Answer `r`'s fields as `name: value` lines, its `date` checked and
/// masked.
fn fields(r: &Value) -> Vec<String> {
    let mut v = Vec::new();
    for f in r["headers"].as_array().expect("headers") {
        let (n, val) = (f[0].as_str().expect("name"), f[1].as_str().expect("value"));
        match n {
            "date" => {
                crate::common::assert_imf_fixdate(val);
                v.push("date: <date>".to_string());
            }
            _ => v.push(format!("{n}: {val}")),
        }
    }
    v
}

/// Answer `r`'s body, as text.
fn text(r: &Value) -> &str {
    r["text"].as_str().expect("text")
}

/// The same request over HTTPS (HTTP/1.1): its head's fields as
/// [`fields`] gives them (names in lower case, `date` masked), less
/// `Connection`, which HTTP/3 has not, and `Alt-Svc`, which advertises
/// HTTP/3 to HTTPS's clients.
fn https_fields(s: &Server, raw: &str) -> Vec<String> {
    let mut c = s.connect_tls();
    c.send(raw.as_bytes());
    let r = c.read_response(raw.starts_with("HEAD "));
    let mut v = vec![format!(":status: {}", r.status)];
    for (n, val) in &r.headers {
        let n = n.to_ascii_lowercase();
        match &n[..] {
            "connection" | "alt-svc" => {}
            "date" => v.push("date: <date>".to_string()),
            _ => v.push(format!("{n}: {val}")),
        }
    }
    v
}

#[test]
fn get_head_404_range_and_conditionals_answer_as_over_https() {
    let s = server(&[("index.html", b"hello\n")]);
    let requests = json!([
        {"method": "GET", "path": "/index.html"},
        {"method": "HEAD", "path": "/index.html"},
        {"method": "GET", "path": "/nope"},
        {"method": "GET", "path": "/index.html", "headers": [["range", "bytes=1-3"]]},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    assert_eq!(out["alpn"], "h3");
    // (One connection, far below retry_above: no Retry.)
    assert_eq!(out["retries"], 0);
    let r = &out["responses"];
    // The same fields, in the same order, as HTTP/1.1 gives, as QPACK
    // literals and static entries; the body in DATA.
    let get = "GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n";
    assert_eq!(fields(&r[0]), https_fields(&s, get));
    assert_eq!(fields(&r[0])[0], ":status: 200");
    assert_eq!(text(&r[0]), "hello\n");
    let head = "HEAD /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n";
    assert_eq!(fields(&r[1]), https_fields(&s, head));
    assert!(fields(&r[1]).contains(&"content-length: 6".to_string()));
    assert_eq!(r[1]["length"], 0);
    assert_eq!(fields(&r[2])[0], ":status: 404");
    assert_eq!(
        fields(&r[2]),
        https_fields(&s, "GET /nope HTTP/1.1\r\nHost: a.test\r\n\r\n")
    );
    let range = "GET /index.html HTTP/1.1\r\nHost: a.test\r\nRange: bytes=1-3\r\n\r\n";
    assert_eq!(fields(&r[3]), https_fields(&s, range));
    assert!(fields(&r[3]).contains(&"content-range: bytes 1-3/6".to_string()));
    assert_eq!(text(&r[3]), "ell");
    for r in r.as_array().expect("responses") {
        assert_eq!(r["reset"], Value::Null);
    }
    assert_eq!(out["terminated"], Value::Null);
    // Conditionals: the ETag it gave.
    let etag = fields(&r[0])
        .iter()
        .find_map(|f| f.strip_prefix("etag: ").map(str::to_string))
        .expect("an etag");
    let requests = json!([
        {"method": "GET", "path": "/index.html", "headers": [["if-none-match", etag]]},
        {"method": "GET", "path": "/index.html", "headers": [["if-match", "\"other\""]]},
    ]);
    let out = h3(&s, requests).expect("aioquic");
    let r = &out["responses"];
    assert_eq!(fields(&r[0])[0], ":status: 304");
    assert_eq!(r[0]["length"], 0);
    assert_eq!(fields(&r[1])[0], ":status: 412");
}

/// A wildcard listener answers each datagram from the address it came to:
/// 127.0.0.2 on a `0.0.0.0` socket (whose own choice for an answer to
/// 127.0.0.1 would be 127.0.0.1, which the client never wrote to and a
/// connected client never reads), and `::1` on a `[::]` one.
#[test]
fn a_wildcard_listener_answers_from_the_address_each_client_wrote_to() {
    for (listen, host) in [("0.0.0.0", "127.0.0.2"), ("[::]", "::1")] {
        let port = crate::common::free_port();
        let mut b = Builder::new();
        b.file("index.html", b"hello\n");
        b.listen(&format!("{listen}:{port}")).tls().arg("--http3");
        let s = b.start();
        let requests = json!([{"method": "GET", "path": "/index.html"}]);
        let more = json!({"host": host, "timeout": 10});
        let Some(out) = h3_spec(&s, requests, more) else {
            return;
        };
        let r = &out["responses"][0];
        assert_eq!(fields(r)[0], ":status: 200", "{host}");
        assert_eq!(text(r), "hello\n");
        // Every datagram came from where the client sent its own.
        assert_eq!(out["senders"], json!([format!("{host} {port}")]), "{host}");
    }
}

#[test]
fn fifty_streams_at_once_and_a_20_mb_file_by_its_checksum() {
    let big = noise(20 << 20, 0x2545_f491);
    let sum = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(&big))
    };
    let s = server(&[("index.html", b"hello\n"), ("big.bin", &big)]);
    let before = peak_kib(&s);
    let mut requests = vec![json!({"method": "GET", "path": "/big.bin"})];
    for i in 0..50 {
        let path = match i % 2 {
            0 => "/index.html",
            _ => "/nope",
        };
        requests.push(json!({"method": "GET", "path": path}));
    }
    // (The time goes to the client: aioquic, in Python, takes 1.6 to 1.9
    // s of CPU to read the 14,800 packets of 20 MB on loopback, where
    // this debug build of brisk takes 0.36 s (the release build 0.07 s);
    // on CI's two busy cores that took longer than the client's usual
    // 20 s.)
    let Some(out) = h3_spec(&s, Value::Array(requests), json!({"timeout": 90})) else {
        return;
    };
    let r = out["responses"].as_array().expect("responses");
    assert_eq!(r.len(), 51);
    assert_eq!(fields(&r[0])[0], ":status: 200");
    assert_eq!(r[0]["length"], 20 << 20);
    assert_eq!(r[0]["sha256"], sum);
    for (i, r) in r[1..].iter().enumerate() {
        let (status, len) = match i % 2 {
            0 => (":status: 200", 6),
            _ => (":status: 404", 123),
        };
        assert_eq!(
            (fields(r)[0].as_str(), r["length"].as_u64()),
            (status, Some(len))
        );
    }
    // Streamed as the client's flow control allowed, never held whole
    // (which takes 32 MiB more at its peak): what grows is quinn-proto's
    // send buffer of data sent and not acknowledged yet, at most its
    // send window (10 MiB by default; 10.4 MiB measured here).
    let grew = peak_kib(&s).saturating_sub(before);
    assert!(grew < 16 * 1024, "peak RSS grew by {grew} KiB");
}

#[test]
fn a_body_sent_while_its_password_is_checked_is_not_held_whole() {
    // A request waits while its password is hashed (off the event loop).
    // Over HTTP/1.1 its body is not read meanwhile, over HTTP/2 its
    // stream's window bounds it; over HTTP/3 brisk read all the client
    // sent (QUIC gives credit back as bytes are read) and held it: a
    // 32 MB body to a login-protected path, with a wrong password and a
    // slow hash (bcrypt at cost 15, as `htpasswd -B -C 15`), took the
    // server's peak memory up by about the body's size before its 401.
    // Now at most 256 KiB of it is read while the check runs, the rest
    // held back by QUIC's flow control.
    let mut b = Builder::new();
    b.file("private/x", b"the secret");
    write_file(
        &b.base().join("htpasswd"),
        b"slow:$2y$15$N8FTUNDFFDd7qm4irFU1SubTSY.Zu1sSf1RHLfEnEZ61wuipHMmZu\n",
    );
    b.config("[[auth]]\npath = \"/private/\"\nrealm = \"x\"\nhtpasswd = \"htpasswd\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let before = peak_kib(&s);
    let wrong = crate::common::basic_auth("slow", "wrong");
    let body = "x".repeat(32 << 20);
    let request = json!({"method": "POST", "path": "/private/x",
        "headers": [["authorization", wrong]], "text": body});
    let Some(out) = h3_spec(&s, json!([request]), json!({"timeout": 90})) else {
        return;
    };
    let r = &out["responses"][0];
    assert_eq!(fields(r)[0], ":status: 401");
    let grew = peak_kib(&s).saturating_sub(before);
    assert!(grew < 12 * 1024, "peak RSS grew by {grew} KiB");
}

/// The server's peak resident memory (VmHWM), in KiB.
fn peak_kib(s: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid())).expect("status");
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"));
    let kib = line.map(|v| v.trim().trim_end_matches("kB").trim().parse());
    kib.expect("VmHWM").expect("a number")
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// A site with `/cgi-bin/echo.sh`, which says its method, length and
/// protocol, then its body.
fn cgi_server() -> Server {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let path = b.base().join("cgi-bin").join("echo.sh");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &path,
        "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho \"$REQUEST_METHOD $CONTENT_LENGTH $SERVER_PROTOCOL\"\ncat\n",
    )
    .expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let who = path.with_file_name("who.sh");
    std::fs::write(
        &who,
        "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho \"$HTTP_X_CUSTOM|$HTTP_USER_AGENT|$HTTP_HOST\"\n",
    )
    .expect("script");
    std::fs::set_permissions(&who, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.tls().arg("--http3");
    b.access_log();
    b.start()
}

#[test]
fn a_bodiless_post_and_a_redirected_head_are_answered_as_over_http1() {
    // A POST whose HEADERS end the stream has an empty body (RFC 9114
    // §4.1): it used to be answered 411. A HEAD that a program redirects
    // locally (`Location: /a.txt`) gets the file's head alone: it used
    // to be followed as a GET, whose DATA went on the HEAD's stream.
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("a.txt", b"a file\n");
    for (name, body) in [
        (
            "echo.sh",
            "echo 'Content-Type: text/plain'\necho\necho \"$REQUEST_METHOD $CONTENT_LENGTH\"",
        ),
        ("redirect.sh", "echo 'Location: /a.txt'\necho"),
    ] {
        let path = b.base().join("cgi-bin").join(name);
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let requests = json!([
        {"method": "POST", "path": "/cgi-bin/echo.sh"},
        {"method": "HEAD", "path": "/cgi-bin/redirect.sh"},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    let r = &out["responses"];
    assert_eq!(fields(&r[0])[0], ":status: 200", "{r}");
    assert_eq!(text(&r[0]), "POST \n");
    assert_eq!(fields(&r[1])[0], ":status: 200", "{r}");
    assert!(
        fields(&r[1]).contains(&"content-length: 7".to_string()),
        "{r}"
    );
    assert_eq!(text(&r[1]), "", "DATA on a HEAD stream");
}

#[test]
fn a_post_body_reaches_a_cgi_program_with_or_without_a_length() {
    let s = cgi_server();
    let data = "x".repeat(100_000);
    let requests = json!([
        // Streamed to the program as it comes (its length known) ...
        {"method": "POST", "path": "/cgi-bin/echo.sh",
         "headers": [["content-length", "100000"]], "text": data},
        // ... or held whole first (CGI needs CONTENT_LENGTH).
        {"method": "POST", "path": "/cgi-bin/echo.sh", "text": "short"},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    let r = &out["responses"];
    assert_eq!(fields(&r[0])[0], ":status: 200");
    assert_eq!(text(&r[0]), format!("POST 100000 HTTP/3.0\n{data}"));
    assert_eq!(text(&r[1]), "POST 5 HTTP/3.0\nshort");
    // The access log names the protocol.
    let line = s.wait_access_line(|l| l.windows(10).any(|w| w == b"HTTP/3.0\" "));
    let line = String::from_utf8_lossy(&line).into_owned();
    assert!(
        line.contains("\"POST /cgi-bin/echo.sh HTTP/3.0\" 200 "),
        "{line}"
    );
}

/// A content-length in a request's trailers (RFC 9110 §6.5.1: framing
/// fields may not be there) is dropped and ignored, as over HTTP/2: the
/// body is what its DATA frames carried, the request answered.
#[test]
fn a_content_length_in_request_trailers_is_ignored() {
    let s = cgi_server();
    let requests = json!([
        {"method": "POST", "path": "/cgi-bin/echo.sh", "text": "short",
         "trailers": [["content-length", "999"], ["x-sum", "1"]]},
        {"method": "POST", "path": "/cgi-bin/echo.sh",
         "headers": [["content-length", "5"]], "text": "short",
         "trailers": [["content-length", "1"]]},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    let r = &out["responses"];
    assert_eq!(text(&r[0]), "POST 5 HTTP/3.0\nshort", "{out}");
    assert_eq!(text(&r[1]), "POST 5 HTTP/3.0\nshort", "{out}");
}

#[test]
fn a_body_nobody_wants_is_read_and_dropped_before_the_client_is_stopped() {
    // As over HTTP/2: a body whose answer does not need it (405 for a
    // static file, 413 over limits.max_body, 1 MiB) is read and dropped up
    // to its declared length (at most 64 MiB), or limits.max_body without
    // one, before the client is asked to stop (STOP_SENDING, H3_NO_ERROR,
    // 0x100). Chromium, asked to stop before its upload is done, resets
    // the upload and never reads the answer: the request hangs.
    let s = server(&[("a.txt", b"a file\n")]);
    let body = |n: usize| "x".repeat(n);
    let requests = json!([
        {"method": "POST", "path": "/a.txt",
         "headers": [["content-length", "900000"]], "text": body(900_000)},
        {"method": "POST", "path": "/a.txt",
         "headers": [["content-length", "2000000"]], "text": body(2_000_000)},
        {"method": "POST", "path": "/a.txt", "text": body(3 << 20)},
        {"method": "GET", "path": "/a.txt"},
    ]);
    let Some(out) = h3_spec(&s, requests, json!({"await_uploads": true})) else {
        return;
    };
    let r = &out["responses"];
    let seen = |i: usize| {
        let status = fields(&r[i])[0].clone();
        (status, r[i]["stop_sending"].clone(), r[i]["reset"].clone())
    };
    assert_eq!(seen(0), (":status: 405".into(), Value::Null, Value::Null));
    assert_eq!(seen(1), (":status: 413".into(), Value::Null, Value::Null));
    assert_eq!(seen(2), (":status: 405".into(), json!(0x100), Value::Null));
    assert_eq!(text(&r[3]), "a file\n", "the connection goes on");
}

#[cfg(feature = "upstreams")]
#[test]
fn an_upstream_s_early_hints_are_interim_headers_over_h3() {
    use crate::reverse_proxy::{Say, Upstream};
    let up = Upstream::start(vec![Say::Bytes(
        b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload; as=style\r\n\r\n\
          HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    )]);
    let mut b = Builder::new();
    let to = up.addr;
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{to}\"\n"
    ));
    b.tls().arg("--http3");
    let s = b.start();
    let Some(out) = h3(&s, json!([{"method": "GET", "path": "/api/page"}])) else {
        return;
    };
    let r = &out["responses"][0];
    let f = fields(r);
    assert_eq!(
        f[..3],
        [
            ":status: 103",
            "link: </a.css>; rel=preload; as=style",
            ":status: 200"
        ],
        "{f:?}"
    );
    assert_eq!(text(r), "ok");
}

/// The head of a PUT of /api/f as brisk forwards it from an HTTP/3 client
/// of a.test, up to its framing.
#[cfg(feature = "upstreams")]
const PUT_F: &str = "PUT /api/f HTTP/1.1\r\nHost: a.test\r\nX-Forwarded-For: 127.0.0.1\r\n\
    X-Forwarded-Proto: https\r\nX-Forwarded-Host: a.test\r\n\
    Forwarded: for=127.0.0.1;proto=https;host=\"a.test\"\r\n";

/// An HTTP/3 request's trailers reach a proxied upstream as HTTP/2's
/// do (proxy_trailers.rs): at the end of the chunked body brisk sends,
/// announced by its `Trailer`, less what a trailer must not hold.
#[cfg(feature = "upstreams")]
#[test]
fn a_clients_trailers_reach_the_upstream_as_chunked_trailers() {
    let (addr, got) = crate::proxy_trailers::recording_upstream();
    let mut b = Builder::new();
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{addr}\"\nkeepalive = 0\n"
    ));
    b.tls().arg("--http3");
    let s = b.start();
    let requests = json!([
        {"method": "PUT", "path": "/api/f", "text": "hello",
         "headers": [["te", "trailers"], ["trailer", "x-sum, content-type, grpc-status"]],
         "trailers": [["x-sum", "5"], ["content-type", "a/b"], ["grpc-status", "0"]]},
        {"method": "PUT", "path": "/api/f", "text": "", "trailers": [["x-sum", "0"]]},
    ]);
    // (One after the other: the upstream sees them in order.)
    let Some(out) = h3_with(&s, requests, true) else {
        return;
    };
    assert_eq!(fields(&out["responses"][0])[0], ":status: 204", "{out}");
    assert_eq!(
        got.recv_timeout(crate::common::IO_TIMEOUT).unwrap(),
        format!(
            "{PUT_F}Transfer-Encoding: chunked\r\nTrailer: x-sum, grpc-status\r\n\
             TE: trailers\r\nConnection: TE\r\n\r\n\
             5\r\nhello\r\n0\r\nx-sum: 5\r\ngrpc-status: 0\r\n\r\n"
        )
    );
    // An empty body, then trailers: a body still, that ends with them.
    assert_eq!(fields(&out["responses"][1])[0], ":status: 204", "{out}");
    assert_eq!(
        got.recv_timeout(crate::common::IO_TIMEOUT).unwrap(),
        format!("{PUT_F}Transfer-Encoding: chunked\r\n\r\n0\r\nx-sum: 0\r\n\r\n")
    );
}

#[cfg(feature = "servlets")]
#[test]
fn a_post_body_reaches_a_servlet() {
    let mut b = Builder::new();
    b.file(
        "servlets/echo.lua",
        b"function handle_request(req, res) res:write(200, {['X-Got'] = #req.body}, req.method .. ' ' .. req.body) end",
    );
    b.config("[servlets]\nenable = true\npaths = [\"/servlets/\"]\n");
    b.tls().arg("--http3");
    let s = b.start();
    let requests = json!([
        {"method": "POST", "path": "/servlets/echo.lua",
         "headers": [["content-length", "4"]], "text": "ping"},
        {"method": "POST", "path": "/servlets/echo.lua", "text": "pong"},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    for (r, want) in out["responses"]
        .as_array()
        .expect("responses")
        .iter()
        .zip(["ping", "pong"])
    {
        let f = fields(r);
        assert_eq!(f[0], ":status: 200");
        assert!(f.contains(&"x-got: 4".to_string()), "{f:?}");
        assert_eq!(text(r), format!("POST {want}"));
    }
}

#[test]
fn the_server_s_settings_offer_a_qpack_table_and_malformed_requests_are_reset() {
    let s = server(&[("index.html", b"hello\n")]);
    let requests = json!([
        {"raw": [[":method", "GET"], [":scheme", "https"], [":path", "/"], ["X-Upper", "1"]]},
        {"raw": [[":method", "GET"], [":scheme", "https"]]},
        {"raw": [[":method", "GET"], [":scheme", "https"], [":path", "/"], ["connection", "close"]]},
        {"method": "GET", "path": "/"},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    // SETTINGS_QPACK_MAX_TABLE_CAPACITY 4096, SETTINGS_QPACK_BLOCKED_STREAMS
    // 0, SETTINGS_MAX_FIELD_SECTION_SIZE [http2] max_header_list_size.
    assert_eq!(out["settings"], json!({"1": 4096, "7": 0, "6": 65536}));
    let resets: Vec<Value> = out["responses"]
        .as_array()
        .expect("responses")
        .iter()
        .map(|r| r["reset"].clone())
        .collect();
    assert_eq!(
        resets,
        json!([H3_MESSAGE_ERROR, H3_MESSAGE_ERROR, H3_MESSAGE_ERROR, null])
            .as_array()
            .expect("array")[..]
    );
    assert_eq!(out["responses"][3]["headers"][0], json!([":status", "200"]));
    // (The connection lives on: a stream's error is the stream's.)
    assert_eq!(out["terminated"], Value::Null);
}

/// A request stream that ends inside a frame is a connection error
/// (H3_FRAME_ERROR, RFC 9114 §7.1), also where its body is not wanted (a
/// GET answered from a file, the rest of its stream dropped: read
/// without its frames, it went unseen and the connection on); the close
/// is said in the error log, as HTTP/2's are (nothing was).
#[test]
fn a_stream_that_ends_inside_a_frame_closes_the_connection_though_its_body_was_not_wanted() {
    let s = server(&[("index.html", b"hello\n")]);
    // DATA (type 0) of 100 bytes (a 2-byte varint), 5 of them, the end.
    let cut = crate::common::base64(&[0x00, 0x40, 0x64, b'a', b'b', b'c', b'd', b'e']);
    let requests = json!([{"method": "GET", "path": "/index.html", "raw_after": cut}]);
    let Some(out) = h3_spec(&s, requests, json!({"linger": 10})) else {
        return;
    };
    assert_eq!(
        out["terminated"],
        json!([0x106, "a request stream ends inside a frame"]),
        "{out}"
    );
    s.wait_stderr_line(
        "client 127.0.0.1: HTTP/3 connection closed: a request stream ends inside a frame",
    );
}

/// A head over the field section size (64 KiB) but within twice it is
/// answered 431 on its stream, its HEADERS frame skipped unread, as over
/// HTTP/1.1 and HTTP/2; the connection's other requests are answered.
/// (The frame was refused, and the connection closed with it.)
#[test]
fn a_head_just_over_the_field_section_size_is_answered_431() {
    let s = server(&[("index.html", b"hello\n")]);
    // (Four fields: aioquic takes none over 64 KiB. Their section, some
    // 105,000 bytes in QPACK's Huffman code, is between 64 and 129 KiB.)
    let big = "v".repeat(30_000);
    let heads: Vec<Value> = (0..4).map(|i| json!([format!("x-big-{i}"), big])).collect();
    let requests = json!([
        {"method": "GET", "path": "/index.html", "headers": heads},
        {"method": "GET", "path": "/index.html"},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    assert_eq!(out["terminated"], Value::Null, "{out}");
    let r = &out["responses"];
    assert_eq!(fields(&r[0])[0], ":status: 431", "{out}");
    assert_eq!(text(&r[1]), "hello\n");
}

/// A request whose `:scheme` is neither `http` nor `https` is malformed
/// (RFC 9114 §4.3.1): its stream is reset (H3_MESSAGE_ERROR), the
/// others answered. It used to be answered as if it were `https`.
#[test]
fn a_request_for_a_scheme_other_than_http_or_https_is_reset() {
    let s = server(&[("index.html", b"hello\n")]);
    let raw = |scheme: &str| {
        json!({"raw": [[":method", "GET"], [":scheme", scheme], [":authority", "a.test"],
                       [":path", "/"]]})
    };
    let requests = json!([raw("ftp"), raw("foo"), raw("http"), raw("https")]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    let r = &out["responses"];
    assert_eq!(r[0]["reset"], json!(H3_MESSAGE_ERROR), "{out}");
    assert_eq!(r[1]["reset"], json!(H3_MESSAGE_ERROR), "{out}");
    assert_eq!(text(&r[2]), "hello\n", "{out}");
    assert_eq!(text(&r[3]), "hello\n", "{out}");
}

/// A client's QPACK encoder inserts what it sends again into the
/// dynamic table brisk offers; brisk acknowledges the insertions and the
/// sections that use them on its decoder stream, so the client's later
/// requests reference the table, and brisk reads them right.
#[test]
fn a_client_s_qpack_table_is_acknowledged_used_and_read_right() {
    let s = cgi_server();
    let value = "a fairly long custom header value, sent again and again";
    let request = json!({"method": "GET", "path": "/cgi-bin/who.sh",
        "headers": [["x-custom", value], ["user-agent", "brisk-test/1.0"]]});
    let requests = Value::Array(vec![request; 6]);
    let Some(out) = h3_with(&s, requests, true) else {
        return;
    };
    assert_eq!(out["terminated"], Value::Null);
    for r in out["responses"].as_array().expect("responses") {
        assert_eq!(fields(r)[0], ":status: 200");
        assert_eq!(text(r), format!("{value}|brisk-test/1.0|a.test\n"));
    }
    // (ls-qpack inserts a field the second time it sends it, and
    // references it once brisk acknowledged the insertion.)
    assert!(
        out["qpack"]["dynamic"].as_u64() >= Some(3),
        "{}",
        out["qpack"]
    );
    assert!(
        out["qpack"]["decoder_bytes"].as_u64() > Some(0),
        "{}",
        out["qpack"]
    );
}

#[test]
fn a_stop_closes_each_quic_connection_with_no_error() {
    let mut s = server(&[("index.html", b"hello\n")]);
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "hold": 20,
    });
    let mut child = client_with(&spec);
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the client's first line");
    assert_eq!(line, "connected\n");
    s.signal(libc::SIGTERM);
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("the client's answer");
    assert!(child.wait().expect("client").success());
    let v: Value = serde_json::from_str(&rest).expect("the client's JSON");
    // CONNECTION_CLOSE (application) with H3_NO_ERROR at once, not the
    // client's idle timeout.
    assert_eq!(
        v["terminated"],
        json!([H3_NO_ERROR, "the server is stopping"])
    );
    assert!(s.wait_exit(std::time::Duration::from_secs(10)).is_some());
}

#[test]
fn with_retry_above_0_every_client_proves_its_address_first() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[http3]\nenable = true\nretry_above = 0\n");
    b.tls();
    let s = b.start();
    let Some(out) = h3(&s, json!([{"method": "GET", "path": "/"}])) else {
        return;
    };
    // A Retry (RFC 9000 §8.1.2), then the handshake with its token.
    assert_eq!(out["retries"], 1);
    assert_eq!(out["alpn"], "h3");
    assert_eq!(out["responses"][0]["headers"][0], json!([":status", "200"]));
}

#[test]
fn https_answers_advertise_h3_on_the_same_port_and_quic_ones_do_not() {
    let s = server(&[("index.html", b"hello\n")]);
    let port = s.addr().port();
    let mut c = s.connect_tls();
    c.send(b"GET /nope HTTP/1.1\r\nHost: a.test\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 404 Not Found\r\nServer: brisk\r\nDate: {}\r\nAlt-Svc: h3=\":{port}\"; ma=86400\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 123\r\n\r\n",
            crate::common::DATE
        )
    );
    // Every answer, a file's too, on a kept connection.
    c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
    let r = c.response();
    assert_eq!(
        r.header("alt-svc"),
        Some(format!("h3=\":{port}\"; ma=86400").as_str())
    );
    // Over HTTP/3 itself, none.
    let Some(out) = h3(&s, json!([{"method": "GET", "path": "/index.html"}])) else {
        return;
    };
    assert!(!fields(&out["responses"][0])
        .iter()
        .any(|f| f.starts_with("alt-svc")));
}

#[test]
fn without_http3_https_answers_advertise_nothing() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.tls();
    let s = b.start();
    let mut c = s.connect_tls();
    c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
    assert_eq!(c.response().header("alt-svc"), None);
}

/// A site whose `/cgi-bin/slow.sh` says it started (in the error log),
/// then answers two seconds later.
/// A server with two CGI programs that say on stderr that they started:
/// `slow.sh` answers "done" after 2 s, `drip.sh` 40 × 32 KiB of `a`
/// over 4 s.
fn slow_server() -> Server {
    slow_server_with("")
}

/// [`slow_server`] with `extra` in its configuration.
fn slow_server_with(extra: &str) -> Server {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let dir = b.base().join("cgi-bin");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let head = "#!/bin/sh\necho \"${0##*/} started\" >&2\necho 'Content-Type: text/plain'\necho\n";
    for (name, rest) in [
        ("slow.sh", "sleep 2\necho done\n"),
        (
            "drip.sh",
            "i=0\nwhile [ $i -lt 40 ]; do head -c 32768 /dev/zero | tr '\\0' a; sleep 0.1; \
             i=$((i+1)); done\n",
        ),
    ] {
        std::fs::write(dir.join(name), format!("{head}{rest}")).expect("script");
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    b.file("index.html", b"hello\n");
    b.config(&format!(
        "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n{extra}"
    ));
    b.workers(2).tls().arg("--http3");
    b.start()
}

/// A request to `slow.sh` on `s`, `signal` sent while its program runs:
/// the client's answer (with the server's control stream and how the
/// connection ended).
fn busy_when(s: &Server, signal: i32) -> Option<Value> {
    busy_with("slow.sh", s, signal)
}

/// As [`busy_when`], with program `name`.
fn busy_with(name: &str, s: &Server, signal: i32) -> Option<Value> {
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return None;
    }
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": [{"method": "GET", "path": format!("/cgi-bin/{name}")}],
        "timeout": 20,
        "linger": 10,
    });
    let child = client_with(&spec);
    s.wait_stderr_line(&format!("{name} started"));
    s.signal(signal);
    let out = child.wait_with_output().expect("client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("the client's JSON"))
}

/// `H3_REQUEST_REJECTED` (RFC 9114 §8.1).
const REQUEST_REJECTED: u64 = 0x10b;

/// Each answer of `out` as its status and reset code: `("-", code)` for
/// a stream reset before any head; sorted.
fn statuses_and_resets(out: &Value) -> Vec<(String, Option<u64>)> {
    let r = out["responses"].as_array().expect("responses");
    let mut got: Vec<_> = r
        .iter()
        .map(|r| {
            let status = fields(r).first().cloned().unwrap_or_else(|| "-".into());
            (status, r["reset"].as_u64())
        })
        .collect();
    got.sort();
    got
}

/// CGI requests beyond the connection's sixteen programs, without a
/// body, wait for their turn over HTTP/3 (as upstream requests do): they
/// were answered 503, an error for the page, where Chromium sends a
/// rejected request again at once and fails it when that is rejected
/// too. 18 at once on one connection: all answered, the 2 over once 2
/// of the 16 programs have ended.
#[test]
fn cgi_requests_beyond_the_connection_s_sixteen_wait_their_turn_over_h3() {
    let s = slow_server();
    let requests = vec![json!({"method": "GET", "path": "/cgi-bin/slow.sh"}); 18];
    let Some(out) = h3(&s, Value::Array(requests)) else {
        return;
    };
    assert_eq!(
        statuses_and_resets(&out),
        vec![(":status: 200".to_string(), None); 18]
    );
    let r = out["responses"].as_array().expect("responses");
    assert!(r.iter().all(|r| text(r) == "done\n"), "{r:?}");
}

/// A site whose `/cgi-bin/digest.sh` answers, a second after it
/// started, its body's length and SHA-256 (`sha256sum`'s hex), and
/// `files`.
fn digest_server(files: &[(&str, &[u8])]) -> Server {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    for (name, body) in files {
        b.file(name, body);
    }
    let path = b.base().join("cgi-bin").join("digest.sh");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &path,
        "#!/bin/sh\nsleep 1\necho 'Content-Type: text/plain'\necho\n\
         echo \"$CONTENT_LENGTH $(sha256sum | cut -d' ' -f1)\"\n",
    )
    .expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.tls().arg("--http3");
    b.start()
}

/// A POST of `body` to `digest.sh`, and the answer it should get.
fn digest_post(body: &str) -> (Value, String) {
    use sha2::Digest;
    let sum = hex(&sha2::Sha256::digest(body.as_bytes()));
    let request = json!({"method": "POST", "path": "/cgi-bin/digest.sh",
                         "headers": [["content-length", body.len().to_string()]],
                         "text": body});
    (request, format!("{} {sum}\n", body.len()))
}

/// CGI requests with a body beyond the connection's sixteen programs
/// wait for their turn over HTTP/3 as over HTTP/2, their bodies left
/// unread meanwhile (in QUIC's receive buffer, their credit held), then
/// read once they are routed again: they were rejected
/// (H3_REQUEST_REJECTED), and Chromium, which sends a rejected request
/// again at once and fails it when that is rejected too, lost 14 of a
/// page's 30 POSTs. 30 at once on one connection, a third of them of
/// 100 KB: all answered, each program given its whole body.
#[test]
fn cgi_requests_with_a_body_beyond_the_connection_s_sixteen_wait_their_turn_over_h3() {
    let s = digest_server(&[]);
    let (mut requests, mut want) = (Vec::new(), Vec::new());
    for i in 0..30 {
        let len = if i % 3 == 0 { 100_000 } else { 1000 + i };
        let body: String = (0..len)
            .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
            .collect();
        let (request, answer) = digest_post(&body);
        requests.push(request);
        want.push((":status: 200".to_string(), answer));
    }
    let Some(out) = h3(&s, Value::Array(requests)) else {
        return;
    };
    let r = out["responses"].as_array().expect("responses");
    let got: Vec<_> = r
        .iter()
        .map(|r| {
            let status = fields(r).first().cloned().unwrap_or_else(|| "-".into());
            (status, text(r).to_string())
        })
        .collect();
    assert_eq!(got, want);
}

/// Over HTTP/3 the bodies that wait for their turn, unread, hold the
/// connection's flow-control credit (RFC 9000 §4.1), which the requests
/// under way need for their own: they may take at most half of it (2 MiB
/// of the 4 MiB brisk gives a connection), each counted by its length.
/// Beyond 16 small POSTs under way, two of 1 MB wait and are answered,
/// the third is rejected (H3_REQUEST_REJECTED), nothing of it processed.
#[test]
fn over_h3_the_bodies_waiting_for_their_turn_are_bounded_by_half_the_connection_window() {
    let s = digest_server(&[]);
    let (mut requests, mut answers) = (Vec::new(), Vec::new());
    for i in 0..19 {
        let len = if i < 16 { 100 + i } else { 1_000_000 + i };
        let body: String = (0..len)
            .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
            .collect();
        let (request, answer) = digest_post(&body);
        requests.push(request);
        answers.push(answer);
    }
    let Some(out) = h3_spec(&s, Value::Array(requests), json!({"timeout": 60})) else {
        return;
    };
    let r = out["responses"].as_array().expect("responses");
    let small: Vec<_> = r[..16].iter().map(|r| text(r).to_string()).collect();
    assert_eq!(small, answers[..16]);
    let mut big: Vec<_> = (16..19)
        .map(|i| match r[i]["reset"].as_u64() {
            Some(code) => (code, String::new()),
            None => (0, (text(&r[i]) == answers[i]).to_string()),
        })
        .collect();
    big.sort();
    let want = [
        (0, "true".to_string()),
        (0, "true".to_string()),
        (REQUEST_REJECTED, String::new()),
    ];
    assert_eq!(big, want);
    s.wait_stderr_line("rejected (H3_REQUEST_REJECTED: the client may send it again)");
}

/// A request waiting for its turn over HTTP/3 whose client resets its
/// stream (a fetch aborted) is let go of, its answer's half reset
/// (H3_REQUEST_INCOMPLETE, RFC 9114 §4.1): left waiting, it was routed
/// when its turn came and its program started for a body that would
/// never come. (Sixteen
/// programs wait for a gate the test opens once the client has its
/// seventeenth request's answer.)
#[test]
fn a_request_waiting_for_its_turn_over_h3_whose_client_resets_it_is_let_go_of() {
    use std::os::unix::fs::PermissionsExt;
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let mut b = Builder::new();
    let gate = b.base().join("gate");
    let path = b.base().join("cgi-bin").join("gate.sh");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho 'gate.sh started' >&2\ni=0\n\
             while [ ! -e '{}' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n\
             echo 'Content-Type: text/plain'\necho\n\
             echo \"$CONTENT_LENGTH $(sha256sum | cut -d' ' -f1)\"\n",
            gate.display()
        ),
    )
    .expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let (mut requests, mut want) = (Vec::new(), Vec::new());
    for i in 0..16 {
        let (mut request, answer) = digest_post(&"x".repeat(100 + i));
        request["path"] = json!("/cgi-bin/gate.sh");
        requests.push(request);
        want.push((":status: 200".to_string(), answer, None));
    }
    // (Half its body, its stream left open.)
    requests.push(json!({"method": "POST", "path": "/cgi-bin/gate.sh",
                         "headers": [["content-length", "1000"]],
                         "text": "y".repeat(500), "open": true}));
    want.push(("-".to_string(), String::new(), Some(0x10d)));
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": requests,
        "timeout": 20,
        "reset_when_told": [16],
    });
    let mut child = Command::new("python3")
        .arg(client())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{spec}").expect("spec");
    let started = || s.stderr().matches("gate.sh started").count();
    crate::common::poll(crate::common::WAIT_LIMIT, || {
        (started() == 16).then_some(())
    })
    .expect("sixteen programs started");
    writeln!(stdin, "reset").expect("told");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("a line");
    assert_eq!(line, "answered\n");
    std::fs::write(&gate, b"").expect("gate");
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("the client's JSON");
    assert!(child.wait().expect("client").success());
    let out: Value = serde_json::from_str(&rest).expect("the client's JSON");
    let r = out["responses"].as_array().expect("responses");
    let got: Vec<_> = r
        .iter()
        .map(|r| {
            let status = fields(r).first().cloned().unwrap_or_else(|| "-".into());
            (status, text(r).to_string(), r["reset"].as_u64())
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(started(), 16);
}

/// An upstream on an address of its own that answers each request
/// (read whole) `200 ok`, but only once `n` requests are under way (or
/// the harness's wait limit has passed).
#[cfg(feature = "upstreams")]
fn upstream_answering_once(n: usize) -> std::net::SocketAddr {
    use std::net::TcpListener;
    use std::sync::{Arc, Condvar, Mutex};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let to = listener.local_addr().expect("address");
    let seen = Arc::new((Mutex::new(0usize), Condvar::new()));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                crate::reverse_proxy::read_request(&mut conn);
                let (count, under_way) = &*seen;
                let mut count = count.lock().expect("count");
                *count += 1;
                under_way.notify_all();
                let limit = crate::common::WAIT_LIMIT;
                drop(under_way.wait_timeout_while(count, limit, |c| *c < n));
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            });
        }
    });
    to
}

/// Requests with a body to an upstream beyond the connection's sixteen
/// wait for their turn over HTTP/3 as over HTTP/2, their bodies unread
/// meanwhile: they were answered 503, then rejected (H3_REQUEST_REJECTED,
/// which Chromium retries once). (The upstream holds its answers until
/// sixteen requests are under way, so that the two over find the
/// connection full.)
#[cfg(feature = "upstreams")]
#[test]
fn upstream_requests_with_a_body_beyond_the_connection_s_sixteen_wait_their_turn_over_h3() {
    let to = upstream_answering_once(16);
    let mut b = Builder::new();
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{to}\"\n"
    ));
    b.tls().arg("--http3");
    let s = b.start();
    let requests: Vec<Value> = (0..18)
        .map(|i| {
            json!({"method": "POST", "path": format!("/api/x?{i}"),
                   "headers": [["content-length", "5"]], "text": "hello"})
        })
        .collect();
    let Some(out) = h3(&s, Value::Array(requests)) else {
        return;
    };
    let r = out["responses"].as_array().expect("responses");
    let got: Vec<_> = r.iter().map(|r| (fields(r)[0].clone(), text(r))).collect();
    assert_eq!(got, vec![(":status: 200".to_string(), "ok"); 18]);
}

/// Requests to an upstream beyond the connection's sixteen, without a
/// body, wait for their turn over HTTP/3 as over HTTP/2: a page's many
/// API calls through the proxy were answered 503 past the sixteenth
/// (Chromium: 16 of 40 fetches answered, the rest 503), where HTTP/2
/// queued them. (The upstream holds its answers until sixteen requests
/// are under way, so that the two over find the connection full.)
#[cfg(feature = "upstreams")]
#[test]
fn upstream_requests_beyond_the_connection_s_sixteen_wait_their_turn_over_h3() {
    use std::net::TcpListener;
    use std::sync::{Arc, Condvar, Mutex};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let to = listener.local_addr().expect("address");
    let seen = Arc::new((Mutex::new(0usize), Condvar::new()));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                crate::reverse_proxy::read_request(&mut conn);
                let (n, under_way) = &*seen;
                let mut n = n.lock().expect("count");
                *n += 1;
                under_way.notify_all();
                let limit = crate::common::WAIT_LIMIT;
                drop(under_way.wait_timeout_while(n, limit, |n| *n < 16));
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            });
        }
    });
    let mut b = Builder::new();
    b.config(&format!(
        "[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://{to}\"\n"
    ));
    b.tls().arg("--http3");
    let s = b.start();
    let requests: Vec<Value> = (0..18)
        .map(|i| json!({"method": "GET", "path": format!("/api/x?{i}")}))
        .collect();
    let Some(out) = h3(&s, Value::Array(requests)) else {
        return;
    };
    let r = out["responses"].as_array().expect("responses");
    let got: Vec<_> = r.iter().map(|r| (fields(r)[0].clone(), text(r))).collect();
    assert_eq!(got, vec![(":status: 200".to_string(), "ok"); 18]);
}

#[test]
fn a_stop_sends_goaway_answers_what_was_asked_then_closes() {
    let mut s = slow_server();
    let Some(out) = busy_when(&s, libc::SIGTERM) else {
        return;
    };
    // The request under way is answered whole ...
    let r = &out["responses"][0];
    assert_eq!(fields(r)[0], ":status: 200");
    assert_eq!(text(r), "done\n");
    // ... after a GOAWAY (type 0x07, length 1) naming stream 4, the first
    // the client did not open (RFC 9114 §5.2), on the control stream
    // after its SETTINGS ...
    let control = out["control"].as_str().expect("control");
    assert!(control.starts_with("0004"), "{control}");
    assert!(control.ends_with("070104"), "{control}");
    // ... and then the connection closes, H3_NO_ERROR, once it is done.
    assert_eq!(
        out["terminated"],
        json!([H3_NO_ERROR, "the server is stopping"])
    );
    assert!(s.wait_exit(std::time::Duration::from_secs(10)).is_some());
}

/// An answer a stop cuts short at `timeouts.shutdown` is reset
/// (H3_REQUEST_CANCELLED) before the connection closes, as HTTP/2's
/// streams get RST_STREAM CANCEL: the close's H3_NO_ERROR alone says a
/// graceful end (RFC 9114 §5.2), and the client took the cut body for
/// a whole one (its stream never reset).
#[test]
fn a_stop_resets_the_answers_it_cuts_short() {
    let mut s = slow_server_with("[timeouts]\nshutdown = \"1s\"\n");
    let Some(out) = busy_with("drip.sh", &s, libc::SIGTERM) else {
        return;
    };
    let r = &out["responses"][0];
    assert_eq!(r["reset"], json!(0x10c), "{}", out["terminated"]);
    assert_eq!(
        out["terminated"],
        json!([H3_NO_ERROR, "the server is stopping"])
    );
    assert!(s.wait_exit(std::time::Duration::from_secs(10)).is_some());
}

#[test]
fn a_reload_sends_goaway_and_the_next_connection_is_served() {
    let s = slow_server();
    let Some(out) = busy_when(&s, libc::SIGHUP) else {
        return;
    };
    let r = &out["responses"][0];
    assert_eq!(text(r), "done\n");
    let control = out["control"].as_str().expect("control");
    assert!(control.ends_with("070104"), "{control}");
    // (It said "the server is stopping", which it was not.)
    assert_eq!(
        out["terminated"],
        json!([H3_NO_ERROR, "the server is reloading"])
    );
    // The new generation answers.
    let out = h3(&s, json!([{"method": "GET", "path": "/index.html"}])).expect("aioquic");
    assert_eq!(text(&out["responses"][0]), "hello\n");
}

/// A large answer to a client that grants much credit and reads slowly
/// arrives whole at a stop and at a reload: its last bytes wait in
/// quinn-proto, sent or not, until the client acknowledges them, and the
/// connection closes only then (a close throws away what it holds: 1 of
/// 8 MB came, then the client waited out its idle timeout). Its GOAWAY
/// comes too, though the answer fills the connection's send window: it
/// waits for room, and goes before the answer's bytes (it was dropped).
#[test]
fn a_large_answer_read_slowly_arrives_whole_after_a_goaway_at_a_stop_and_a_reload() {
    let body = noise(8_000_000, 7);
    let sum = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(&body))
    };
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let mut b = Builder::new();
        b.file("big.bin", &body);
        // (No stop's deadline for the transfer to beat.)
        b.config("[timeouts]\nshutdown = \"5m\"\n");
        b.tls().arg("--http3");
        let mut s = b.start();
        if !aioquic() {
            skip("python3 with aioquic not available (pip install aioquic)");
            return;
        }
        let spec = json!({
            "port": s.addr().port(),
            "ca": testdata("ca.pem"),
            "sni": "a.test",
            "path": "/big.bin",
            "window": 16 << 20,
            "mark": 1_000_000,
            "timeout": 120,
        });
        let mut child = script_with("slow.py", &spec);
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("the client's first line");
        assert_eq!(line, "mark\n");
        s.signal(signal);
        let mut rest = String::new();
        out.read_to_string(&mut rest).expect("the client's answer");
        assert!(child.wait().expect("client").success());
        let v: Value = serde_json::from_str(&rest).expect("the client's JSON");
        assert_eq!(
            (&v["length"], &v["sha256"], &v["ended"], &v["reset"]),
            (&json!(8_000_000), &json!(sum), &json!(true), &Value::Null),
            "{signal}"
        );
        // GOAWAY (type 0x07, length 1) naming stream 4, the first the
        // client did not open, after the SETTINGS; at a stop at once, so
        // before the answer's last 7 MB.
        let control = v["control"].as_str().expect("control");
        assert!(control.ends_with("070104"), "{signal}: {control}");
        if signal == libc::SIGTERM {
            assert_eq!(v["control_before_end"], json!(control), "{v}");
            assert_eq!(
                v["terminated"],
                json!([H3_NO_ERROR, "the server is stopping"])
            );
            assert!(s.wait_exit(std::time::Duration::from_secs(60)).is_some());
        }
    }
}

/// An answer whose stream the client never lets a byte of through (its
/// flow-control credit for the stream is 1,000 bytes, never raised) is
/// reset (H3_REQUEST_CANCELLED) at `timeouts.send`, as over HTTP/2: it
/// held its file (and its place among the streams under way) for as
/// long as the client sent anything, QUIC's idle timeout restarted by
/// each packet.
#[test]
fn an_answer_the_client_lets_nothing_through_is_reset_at_the_send_timeout() {
    let mut b = Builder::new();
    b.file("big.bin", &noise(1 << 20, 7));
    b.config("[timeouts]\nsend = \"1s\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let requests = json!([{"method": "GET", "path": "/big.bin"}]);
    let Some(out) = h3_spec(&s, requests, json!({"stream_window": 1000, "timeout": 15})) else {
        return;
    };
    let r = &out["responses"][0];
    assert_eq!(fields(r)[0], ":status: 200", "{r}");
    // H3_REQUEST_CANCELLED.
    assert_eq!(r["reset"], json!(0x10c), "{r}");
    assert!(r["length"].as_u64().is_some_and(|n| n < 1000), "{r}");
    s.wait_stderr_line("let nothing of its answer through for timeouts.send");
}

/// A client that keeps its connection alive (PINGs) but never
/// acknowledges the answer it was sent is closed at `timeouts.send`
/// (CONNECTION_CLOSE, H3_NO_ERROR), as a TCP client whose socket takes
/// nothing is: the answer, all in the stream but unacknowledged, held
/// the connection and its buffers for as long as the client sent
/// anything.
#[test]
fn a_client_that_never_acknowledges_its_answer_is_closed_at_the_send_timeout() {
    let mut b = Builder::new();
    b.file("small.txt", b"hello\n");
    b.config("[timeouts]\nsend = \"1s\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let spec = json!({
        "port": s.addr().port(), "ca": testdata("ca.pem"), "sni": "a.test",
        "path": "/small.txt", "timeout": 15,
    });
    let out = answer("noack.py", &spec);
    assert_eq!(out["length"], json!(6), "{out}");
    // H3_NO_ERROR.
    assert_eq!(out["terminated"][0], json!(0x100), "{out}");
    s.wait_stderr_line("acknowledged nothing of its answers for timeouts.send");
}

/// A stream the client stops reading (its window kept shut) is timed on
/// its own: it is reset at `timeouts.send` while another answer of the
/// same connection (a throttled one, for seconds) keeps moving, as over
/// HTTP/2. It used to be timed only while no other answer moved: reset
/// only once the throttled one had ended.
#[test]
fn a_stalled_stream_is_reset_at_the_send_timeout_while_another_moves() {
    let mut b = Builder::new();
    b.file("big.bin", &noise(1 << 20, 7));
    b.file("v.mp4", &noise(400_000, 8));
    b.config("[timeouts]\nsend = \"1s\"\n[[throttle]]\npattern = \"*.mp4\"\nrate = \"64KiB/s\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let requests = json!([
        {"method": "GET", "path": "/big.bin", "window": 1000},
        {"method": "GET", "path": "/v.mp4"},
    ]);
    let Some(out) = h3_spec(&s, requests, json!({"timeout": 30})) else {
        return;
    };
    let r = &out["responses"];
    let said = (&r[0]["reset"], &r[1]["length"], &out["finished"]);
    // H3_REQUEST_CANCELLED, before the throttled answer (6 s) ended.
    assert_eq!(r[0]["reset"], json!(0x10c), "{said:?}");
    assert_eq!(r[1]["length"], json!(400_000), "{said:?}");
    assert_eq!(out["finished"], json!([0, 1]), "{said:?}");
}

/// A client that grants much credit, asks for a large file and reads
/// nothing holds little of it in the server: quinn-proto's send window,
/// not the client's credit, bounds what waits for its acknowledgement
/// (10 such connections took the server from 6 to 109 MB).
#[test]
fn clients_that_never_read_hold_little_of_a_large_file() {
    let body = noise(32_000_000, 9);
    let s = server(&[("big.bin", &body)]);
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let before = s.rss_kib();
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "path": "/big.bin",
        "window": 256 << 20,
        "mark": 1u64 << 40,
        "stall": 4,
        "timeout": 60,
    });
    let mut clients: Vec<_> = (0..10).map(|_| script_with("slow.py", &spec)).collect();
    for child in &mut clients {
        let mut line = String::new();
        let out = child.stdout.as_mut().expect("stdout");
        let mut out = BufReader::new(out);
        out.read_line(&mut line).expect("the client's line");
        assert_eq!(line, "stalled\n");
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let grew = s.rss_kib().saturating_sub(before);
    for child in clients {
        assert!(child.wait_with_output().expect("client").status.success());
    }
    // 2 MiB each at most, and what a connection costs besides.
    assert!(
        grew < 40 * 1024,
        "RSS grew by {grew} KiB for 10 connections"
    );
}

#[test]
fn an_answer_under_way_at_a_reload_arrives_whole() {
    // The new generation's workers read the same UDP sockets as the old
    // ones: the client's ACKs of the answer reach either, and those the
    // new ones read are handed to the old worker that owns the
    // connection (quic/route.rs). A new worker that answered them itself
    // would send a stateless reset the client believes (one reset key a
    // process): the answer would be cut.
    let s = slow_server();
    let Some(out) = busy_with("drip.sh", &s, libc::SIGHUP) else {
        return;
    };
    assert_eq!(out["stateless_resets"], 0);
    let r = &out["responses"][0];
    assert_eq!(r["reset"], Value::Null);
    let sum = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(vec![b'a'; 40 * 32768]))
    };
    assert_eq!(r["sha256"], sum);
}

/// The brisk an upgrade of `s` started (stopped with SIGTERM when
/// dropped: it is not the test's child), once `s` says it serves.
#[cfg(feature = "ops")]
fn successor(s: &Server) -> Successor {
    let line = s.wait_stderr_line("serves; this one finishes its requests and exits");
    let at = line.find("(pid ").expect("a pid") + 5;
    let pid = line[at..].split(')').next().and_then(|p| p.parse().ok());
    Successor(pid.expect("pid"))
}

#[cfg(feature = "ops")]
struct Successor(i32);

#[cfg(feature = "ops")]
impl Drop for Successor {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid brisk reported for its successor.
        unsafe { libc::kill(self.0, libc::SIGTERM) };
    }
}

/// An upgrade (SIGUSR2) hands QUIC's UDP sockets over with the TCP
/// ones, and the new brisk reads them only once the old one has gone. A
/// new brisk that bound sockets of its own into the `SO_REUSEPORT` group
/// took every datagram of the old one's connections whose 4-tuple then
/// hashed to one of them (about half, with two sockets each), and could
/// not hand them over to another process: those answers stalled. Eight
/// answers under way at the signal arrive whole, with no reset; once the
/// old brisk has exited the new one serves HTTP/3 on the same port.
#[cfg(feature = "ops")]
#[test]
fn answers_under_way_at_an_upgrade_arrive_whole_then_the_new_brisk_serves_h3() {
    let mut s = slow_server();
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": [{"method": "GET", "path": "/cgi-bin/drip.sh"}],
        "timeout": 30,
    });
    let clients: Vec<_> = (0..8).map(|_| client_with(&spec)).collect();
    crate::common::wait_for_within(
        std::time::Duration::from_secs(90),
        "eight programs started",
        || (s.stderr().matches("drip.sh started").count() >= 8).then_some(()),
    );
    s.signal(libc::SIGUSR2);
    let new = successor(&s);
    // While the old brisk finishes, the new one answers over TCP and
    // sends no client to QUIC (the old one would refuse it).
    let alt_svc = |s: &Server| {
        let mut c = s.connect_tls();
        c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n");
        let r = c.response();
        assert_eq!(r.status, 200);
        r.header("alt-svc").map(str::to_string)
    };
    assert_eq!(alt_svc(&s), None);
    let sum = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(vec![b'a'; 40 * 32768]))
    };
    for c in clients {
        let out = c.wait_with_output().expect("client");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
        assert_eq!(out["stateless_resets"], 0);
        let r = &out["responses"][0];
        assert_eq!(r["reset"], Value::Null);
        assert_eq!(r["sha256"], sum);
    }
    let exited = s
        .wait_exit(std::time::Duration::from_secs(30))
        .expect("the old brisk exits");
    assert!(exited.success(), "{exited}");
    let out = h3(&s, json!([{"method": "GET", "path": "/index.html"}])).expect("aioquic");
    assert_eq!(text(&out["responses"][0]), "hello\n");
    let port = s.addr().port();
    assert_eq!(alt_svc(&s), Some(format!("h3=\":{port}\"; ma=86400")));
    assert!(new.0 > 0);
}

/// An upgrade to a configuration without HTTP/3 closes the UDP sockets
/// the old brisk handed over once it has gone: left open and unread they
/// would swallow every datagram sent to the port (clients that remember
/// its `Alt-Svc` would wait out a timeout instead of hearing at once
/// that nothing listens there).
#[cfg(feature = "ops")]
#[test]
fn an_upgrade_that_turns_http3_off_keeps_no_udp_socket() {
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config("[http3]\nenable = true\n");
    b.workers(2).tls();
    let config = b.base().join("brisk.toml");
    let mut s = b.start();
    // /proc/net/udp's local address column ends with the port in hex.
    let port = format!(":{:04X} ", s.addr().port());
    let bound = || {
        let table = std::fs::read_to_string("/proc/net/udp").expect("/proc/net/udp");
        table.lines().filter(|l| l.contains(&port)).count()
    };
    assert_eq!(bound(), 2);
    std::fs::write(&config, "[http3]\nenable = false\n").expect("config");
    s.signal(libc::SIGUSR2);
    let new = successor(&s);
    let exited = s
        .wait_exit(std::time::Duration::from_secs(30))
        .expect("the old brisk exits");
    assert!(exited.success(), "{exited}");
    assert_eq!(bound(), 0);
    assert!(new.0 > 0);
}

#[test]
fn a_body_is_read_only_as_fast_as_its_program_takes_it() {
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    let path = b.base().join("cgi-bin").join("count.sh");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    // It reads nothing for a second, then counts what comes.
    std::fs::write(
        &path,
        "#!/bin/sh\nsleep 1\necho 'Content-Type: text/plain'\necho\nwc -c\n",
    )
    .expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config("[limits]\nmax_body = \"64MiB\"\n[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let before = peak_kib(&s);
    let n = 16_000_000;
    let requests = json!([{"method": "POST", "path": "/cgi-bin/count.sh",
        "headers": [["content-length", n.to_string()]], "text": "x".repeat(n)}]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    assert_eq!(text(&out["responses"][0]).trim(), n.to_string());
    // The stream is read no further than the program's input has room:
    // the rest waits with the client, its flow-control credit held back
    // (2 MiB more at the peak measured; 20 MiB when it is all read as it
    // comes).
    let grew = peak_kib(&s).saturating_sub(before);
    assert!(grew < 8 * 1024, "peak RSS grew by {grew} KiB");
}

/// The SHA-256 of certificate `a.pem`'s public key (SPKI), in base64, as
/// Chromium's `--ignore-certificate-errors-spki-list` takes it (openssl
/// computes it: the test's own check that the certificate is the one).
fn spki_of_a() -> Option<String> {
    let sh = format!(
        "openssl x509 -in {} -pubkey -noout | openssl pkey -pubin -outform der \
         | openssl dgst -sha256 -binary | openssl base64",
        testdata("a.pem").display()
    );
    let out = Command::new("sh").args(["-c", &sh]).output().ok()?;
    let spki = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && spki.len() == 44).then_some(spki)
}

#[test]
fn chromium_loads_a_page_of_100_assets_over_h3_and_its_upload_is_answered() {
    let mut b = Builder::new();
    let mut fetches = String::new();
    for i in 0..100 {
        b.file(&format!("a/{i}.txt"), format!("asset {i}\n").as_bytes());
        fetches.push_str(&format!("'/a/{i}.txt',"));
    }
    // Then an upload that its answer (413: over limits.max_body) does not need:
    // Chromium, asked to stop (STOP_SENDING) before its upload was done,
    // never read that answer, and the page hung.
    let page = format!(
        "<!doctype html><html><head><title>loading</title></head><body><script>\
         Promise.all([{fetches}].map(u => fetch(u).then(r => r.text()))).then(t => \
         fetch('/a/0.txt', {{method: 'POST', body: new Uint8Array(2000000)}})\
         .then(r => {{ document.title = t.every((s, i) => s == 'asset ' + i + '\\n') \
         && r.status == 413 ? 'done' : 'bad ' + r.status; }}));\
         </script></body></html>\n"
    );
    b.file("page.html", page.as_bytes());
    b.tls().arg("--http3");
    let s = b.start();
    let (Some(spki), true) = (
        spki_of_a(),
        std::path::Path::new("/usr/bin/chromium").exists(),
    ) else {
        skip("chromium or openssl not available (apt-get install chromium)");
        return;
    };
    let spec = json!({"port": s.addr().port(), "spki": spki, "path": "/page.html"});
    let out = script_with("chromium.py", &spec)
        .wait_with_output()
        .expect("chromium.py");
    if out.status.code() == Some(2) {
        skip("Playwright not available (pip install playwright)");
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["title"], "done");
    assert_eq!(v["navigation"], "h3");
    let resources = v["resources"].as_array().expect("resources");
    // (The 100 fetches, the upload, and the favicon Chromium asks for.)
    assert!(resources.len() >= 101, "{resources:?}");
    assert!(resources.iter().all(|p| p == "h3"), "{resources:?}");
}

/// Chromium's 30 fetch POSTs at once to a slow CGI script over HTTP/3:
/// all answered with their bodies' digests. Those beyond the
/// connection's sixteen programs were rejected (H3_REQUEST_REJECTED);
/// Chromium sent each again at once and failed it when that was
/// rejected too: 14 of the 30 failed.
#[test]
fn chromium_s_30_fetch_posts_to_a_slow_script_over_h3_are_all_answered() {
    let (Some(spki), true) = (
        spki_of_a(),
        std::path::Path::new("/usr/bin/chromium").exists(),
    ) else {
        skip("chromium or openssl not available (apt-get install chromium)");
        return;
    };
    let page = "<!doctype html><html><head><title>loading</title></head><body><script>\n\
         const hex = async s => [...new Uint8Array(await crypto.subtle.digest('SHA-256',\n\
           new TextEncoder().encode(s)))].map(b => b.toString(16).padStart(2, '0')).join('');\n\
         const post = async i => {\n\
           const body = String.fromCharCode(97 + i % 26).repeat(i % 3 == 0 ? 100000 : 1000 + i);\n\
           try {\n\
             const r = await fetch('/cgi-bin/digest.sh', {method: 'POST', body});\n\
             return r.status == 200 && await r.text() == body.length + ' ' + await hex(body) + '\\n';\n\
           } catch (e) { return false; }\n\
         };\n\
         Promise.all([...Array(30).keys()].map(post)).then(ok => {\n\
           const n = ok.filter(x => x).length;\n\
           document.title = n == 30 ? 'done' : 'bad: ' + n + ' of 30 answered';\n\
         });\n\
         </script></body></html>\n";
    let s = digest_server(&[("page.html", page.as_bytes())]);
    let spec = json!({"port": s.addr().port(), "spki": spki, "path": "/page.html"});
    let out = script_with("chromium.py", &spec)
        .wait_with_output()
        .expect("chromium.py");
    if out.status.code() == Some(2) {
        skip("Playwright not available (pip install playwright)");
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["title"], "done");
    assert_eq!(v["navigation"], "h3");
    let resources = v["resources"].as_array().expect("resources");
    assert!(resources.iter().all(|p| p == "h3"), "{resources:?}");
}

#[test]
fn a_throttled_file_over_h3_never_exceeds_its_rate_and_others_are_not_held_up() {
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut b = Builder::new();
    b.file("v.mp4", &body);
    b.file("index.html", b"hello\n");
    b.config("[[throttle]]\npattern = \"*.mp4\"\nrate = \"64KiB/s\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let requests = json!([
        {"method": "GET", "path": "/v.mp4"},
        {"method": "GET", "path": "/index.html"},
    ]);
    let t0 = std::time::Instant::now();
    let Some(out) = h3(&s, requests) else {
        return;
    };
    let took = t0.elapsed();
    let r = &out["responses"];
    let sum = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(&body))
    };
    assert_eq!(r[0]["sha256"], sum);
    assert_eq!(text(&r[1]), "hello\n");
    // At most the rate, less its 100 ms burst: a lower bound, whatever
    // the machine's speed (as tests/it/throttle.rs).
    let rate = 256.0 * 1024.0;
    let least = (body.len() as f64 - rate / 10.0) / rate;
    assert!(
        took.as_secs_f64() >= least,
        "600 kB at 256 KiB/s in {took:?}"
    );
}

#[test]
fn a_password_check_holds_the_request_and_its_body_then_answers() {
    // bcrypt at cost 10: the hash runs off the loop while the request
    // (and its body) is held, then it is routed again (Wait::Check).
    use std::os::unix::fs::PermissionsExt;
    let mut b = Builder::new();
    b.file("p/secret.txt", b"the secret");
    let script = b.base().join("cgi-bin").join("echo.sh");
    std::fs::create_dir_all(script.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'Content-Type: text/plain'\necho\ncat\n",
    )
    .expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let slow = "slow:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
    std::fs::write(b.base().join("htpasswd"), slow).expect("htpasswd");
    b.config("[[auth]]\npath = \"/p/\"\nrealm = \"P\"\nhtpasswd = \"htpasswd\"\n[[cgi]]\nurl = \"/p/cgi/\"\ndir = \"cgi-bin\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    // "slow:correct horse"
    let auth = ["authorization", "Basic c2xvdzpjb3JyZWN0IGhvcnNl"];
    let upload = "u".repeat(100_000);
    let requests = json!([
        {"method": "GET", "path": "/p/secret.txt", "headers": [auth]},
        {"method": "GET", "path": "/p/secret.txt"},
        {"method": "POST", "path": "/p/cgi/echo.sh",
         "headers": [auth, ["content-length", "100000"]], "text": upload},
    ]);
    let Some(out) = h3(&s, requests) else {
        return;
    };
    let r = &out["responses"];
    assert_eq!(fields(&r[0])[0], ":status: 200");
    assert_eq!(text(&r[0]), "the secret");
    assert_eq!(fields(&r[1])[0], ":status: 401");
    assert_eq!(fields(&r[2])[0], ":status: 200");
    assert_eq!(text(&r[2]), upload);
}

#[test]
fn streams_that_never_get_a_window_cannot_take_every_descriptor() {
    // As over HTTP/2 (tests/it/h2.rs): streams whose client lets one
    // byte of each answer through hold their files open; past half the
    // descriptors (64 of 128 here), a connection with 8 answers under
    // way has its new streams rejected (H3_REQUEST_REJECTED, to send
    // again), and a new client is served.
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let mut b = Builder::new();
    for i in 0..200 {
        b.file(&format!("f/{i}.bin"), &noise(20 << 10, i + 1));
    }
    b.file("index.html", b"still here\n");
    b.config("[static]\nopen_file_cache = 0\n");
    b.nofile(128);
    b.tls().arg("--http3");
    let s = b.start();
    // Each client holds its connection open once it has said what came.
    let hold = |first: usize, n: usize| {
        let requests: Vec<_> = (first..first + n)
            .map(|i| json!({"method": "GET", "path": format!("/f/{i}.bin")}))
            .collect();
        let spec = json!({
            "port": s.addr().port(), "ca": testdata("ca.pem"), "sni": "a.test",
            "requests": requests, "timeout": 20,
            "stream_window": 1, "first_byte": true, "hold_after": 30,
        });
        let mut child = Command::new("python3")
            .arg(client())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3");
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{spec}").expect("spec");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the client's line");
        let out: Value = serde_json::from_str(&line).expect("the client's JSON");
        let (mut answered, mut rejected) = (0, 0);
        for r in out["responses"].as_array().expect("responses") {
            match (r["received"].as_u64(), r["reset"].as_u64()) {
                (Some(n), None) if n > 0 => answered += 1,
                // H3_REQUEST_REJECTED, before any byte.
                (Some(0), Some(0x10b)) => rejected += 1,
                _ => panic!("neither answered nor rejected: {r} ({})", out["terminated"]),
            }
        }
        (child, stdin, answered, rejected)
    };
    let (mut one, one_in, answered, rejected) = hold(0, 100);
    assert_eq!((answered, rejected), (64, 36));
    let (mut two, two_in, answered, rejected) = hold(100, 60);
    assert_eq!((answered, rejected), (8, 52));
    for _ in 0..3 {
        let mut c = s.connect_tls();
        c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
        let r = c.read_response(false);
        assert_eq!((r.status, &r.body[..]), (200, &b"still here\n"[..]));
    }
    s.wait_stderr_line("8 or more streams of this HTTP/3 connection are answered");
    drop((one_in, two_in));
    let _ = (one.kill(), two.kill(), one.wait(), two.wait());
}

/// `requests` on one QUIC connection to 127.0.0.1:`port` (as [`h3`]).
fn h3_at(port: u16, requests: Value) -> Value {
    let spec = json!({
        "port": port,
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": requests,
        "timeout": 20,
    });
    answer("client.py", &spec)
}

/// The `nobody` account's ids, when the tests run as root (else the test
/// skips, saying so).
fn nobody() -> Option<(u32, u32)> {
    let nobody = brisk::sys::privileges::lookup_user("nobody").ok().flatten();
    match nobody {
        Some(a) if brisk::sys::privileges::euid() == 0 => Some((a.uid, a.gid)),
        _ => {
            skip("needs root and a nobody user");
            None
        }
    }
}

/// A configuration serving HTTPS on 127.0.0.1 at each of `ports`, with
/// HTTP/3 if `h3`, logging at `info` (the reload's lines), and `extra`
/// at the top.
fn tls_ports(ports: &[u16], h3: bool, extra: &str) -> String {
    let listen: Vec<String> = ports.iter().map(|p| format!("\"127.0.0.1:{p}\"")).collect();
    format!(
        "{extra}\n[log]\nlevel = \"info\"\n[tls]\nlisten = [{}]\n[[tls.certificate]]\ncert = \"{}\"\nkey = \"{}\"\n[http3]\nenable = {h3}\n",
        listen.join(", "),
        testdata("a.pem").display(),
        testdata("a.key").display()
    )
}

/// Writes `cfg` as `s`'s configuration, reloads, and waits until the
/// error log says how the `n`th reload went; the error log then.
fn reload_with(s: &Server, cfg: &str, n: usize) -> String {
    std::fs::write(s.base.path.join("brisk.toml"), cfg).expect("config");
    s.signal(libc::SIGHUP);
    let done = |log: &str| {
        log.matches("SIGHUP: configuration reloaded").count()
            + log
                .matches("still serving the previous configuration")
                .count()
    };
    crate::common::wait_until("the reload", || done(&s.stderr()) >= n);
    s.stderr()
}

/// Started as root, brisk serves as nobody, with the sandbox on: its
/// seccomp filter keeps it from opening sockets, so `brisk-priv` binds
/// the listen addresses a reload adds. It bound the TCP socket of a new
/// `[tls] listen` address but not its UDP ones for HTTP/3, which the
/// server then tried itself: the reload failed with "cannot listen on
/// 127.0.0.1:PORT: Operation not permitted", and so did one that turned
/// HTTP/3 back on after a reload had turned it off. Both are bound
/// through the helper now, and served.
#[test]
fn http3_on_what_a_reload_adds_is_bound_through_the_helper() {
    if !aioquic() || nobody().is_none() {
        return;
    }
    let (first, second) = (crate::common::free_port(), crate::common::free_port());
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config(&tls_ports(&[first], true, "user = \"nobody\""))
        .listeners(2);
    let s = b.start();
    let get = json!([{"method": "GET", "path": "/index.html"}]);
    assert_eq!(text(&h3_at(first, get.clone())["responses"][0]), "hello\n");
    let err = reload_with(
        &s,
        &tls_ports(&[first, second], true, "user = \"nobody\""),
        1,
    );
    let added = format!("[info] SIGHUP: now also listening on https://127.0.0.1:{second}/");
    assert!(err.contains(&added), "{err}");
    assert_eq!(text(&h3_at(second, get.clone())["responses"][0]), "hello\n");
    // HTTP/3 off (its UDP sockets go with the previous workers), then on
    // again: new UDP sockets, through the helper.
    let off = tls_ports(&[first, second], false, "user = \"nobody\"");
    let err = reload_with(&s, &off, 2);
    assert_eq!(
        err.matches("SIGHUP: configuration reloaded").count(),
        2,
        "{err}"
    );
    // (Said, as a listener's coming and going is.)
    for port in [first, second] {
        let gone = format!("[info] SIGHUP: no longer answering HTTP/3 on UDP 127.0.0.1:{port}");
        crate::common::wait_until("the HTTP/3 lines", || s.stderr().contains(&gone));
    }
    let on = tls_ports(&[first, second], true, "user = \"nobody\"");
    let err = reload_with(&s, &on, 3);
    assert_eq!(
        err.matches("SIGHUP: configuration reloaded").count(),
        3,
        "{err}"
    );
    let back = format!("[info] SIGHUP: now also answering HTTP/3 on UDP 127.0.0.1:{first}");
    crate::common::wait_until("the HTTP/3 line", || s.stderr().contains(&back));
    assert!(!err.contains("[error]"), "{err}");
    for port in [first, second] {
        assert_eq!(text(&h3_at(port, get.clone())["responses"][0]), "hello\n");
    }
}

/// Started as an unprivileged user with the sandbox on, brisk has no
/// helper to bind for it: a reload that turns HTTP/3 on needs UDP
/// sockets the sandbox keeps it from opening, and is refused with a line
/// that says so and names the way out (it said only "cannot listen on
/// 127.0.0.1:PORT: Operation not permitted", with the TCP socket there).
#[test]
fn a_reload_that_needs_a_quic_socket_under_the_sandbox_says_why() {
    let Some((uid, gid)) = nobody() else {
        return;
    };
    let port = crate::common::free_port();
    let mut b = Builder::new();
    b.file("index.html", b"hello\n");
    b.config(&tls_ports(&[port], false, "")).listeners(2);
    b.run_as(uid, gid);
    let s = b.start();
    let err = reload_with(&s, &tls_ports(&[port], true, ""), 1);
    let want = format!(
        "[error] SIGHUP: HTTP/3 on 127.0.0.1:{port} needs a UDP socket, which the sandbox keeps brisk from opening: it needs a restart while the sandbox is on; restart brisk to apply this configuration, or upgrade it in place"
    );
    assert!(err.contains(&want), "{err}");
    assert!(
        err.contains("still serving the previous configuration"),
        "{err}"
    );
    // The previous configuration serves on.
    let mut c = s.connect_tls_to(([127, 0, 0, 1], port).into());
    c.send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assert_eq!(c.response().body, b"hello\n");
}

/// A CGI program under way over HTTP/3 whose client resets its request
/// stream halfway through the body (RESET_STREAM, a fetch aborted) is
/// stopped and the stream's answer half reset (H3_REQUEST_INCOMPLETE,
/// RFC 9114 §4.1): it went on waiting for a body that would never come,
/// the stream never answered.
/// A WebDAV PUT held whole for its body, reset by its client before the
/// body is all in (once a request sent after it was answered, so that
/// its head was read), is logged 499 with nothing sent, as over HTTP/1.1
/// and HTTP/2 (webdav_uploads), and nothing is written.
#[cfg(feature = "webdav")]
#[test]
fn an_upload_its_client_resets_is_logged_499() {
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let (mut b, dav) = super::webdav::builder("");
    b.file("index.html", b"hi");
    b.access_log();
    b.tls().arg("--http3");
    let s = b.start();
    let out = h3_spec(
        &s,
        json!([{"method": "PUT", "path": "/dav/cut", "headers": [["content-length", "1000"]],
                "text": "y".repeat(500), "open": true},
               {"method": "GET", "path": "/"}]),
        json!({"reset_when_told": [0], "reset_after": 1}),
    )
    .expect("aioquic");
    let r = &out["responses"];
    assert_eq!(r[1]["text"], "hi", "{out}");
    assert_eq!(r[0]["reset"], json!(0x10d), "{out}");
    let line = s.wait_access_line(|l| crate::common::find(l, b"/dav/cut ").is_some());
    let line = String::from_utf8_lossy(&line);
    assert!(line.contains("\"PUT /dav/cut HTTP/3.0\" 499 0 "), "{line}");
    assert!(super::webdav::names(&dav).is_empty());
}

#[test]
fn a_program_whose_client_resets_its_request_stream_over_h3_is_stopped() {
    use std::os::unix::fs::PermissionsExt;
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let mut b = Builder::new();
    let path = b.base().join("cgi-bin").join("count.sh");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &path,
        "#!/bin/sh\necho 'count.sh started' >&2\necho 'Content-Type: text/plain'\necho\nwc -c\n",
    )
    .expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    b.config("[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n");
    b.tls().arg("--http3");
    let s = b.start();
    let spec = json!({
        "port": s.addr().port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": [{"method": "POST", "path": "/cgi-bin/count.sh",
                      "headers": [["content-length", "1000"]],
                      "text": "y".repeat(500), "open": true}],
        "timeout": 20,
        "reset_when_told": [0],
    });
    let mut child = Command::new("python3")
        .arg(client())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{spec}").expect("spec");
    s.wait_stderr_line("count.sh started");
    writeln!(stdin, "reset").expect("told");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("a line");
    assert_eq!(line, "answered\n");
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("the client's JSON");
    assert!(child.wait().expect("client").success());
    let out: Value = serde_json::from_str(&rest).expect("the client's JSON");
    assert_eq!(out["responses"][0]["reset"], 0x10d);
}
