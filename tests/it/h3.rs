//! HTTP/3 over QUIC (`[http3]`, `--http3`), with Python's aioquic as the
//! client (`tests/it/h3/client.py`; installed with pip when missing, and
//! the test skips, saying so, when it cannot be).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::Once;

use serde_json::{json, Value};

use crate::common::{skip, tls::testdata, Builder, Server};

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
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return None;
    }
    let spec = json!({
        "port": server.addr().port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": requests,
        "timeout": 20,
    });
    let child = client_with(&spec);
    let out = child.wait_with_output().expect("client");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("the client's JSON"))
}

/// The client script started on `spec` (given on its stdin, closed).
fn client_with(spec: &Value) -> std::process::Child {
    let mut child = Command::new("python3")
        .arg(client())
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

/// A server of `files` with HTTPS and HTTP/3 on one port.
fn server(files: &[(&str, &[u8])]) -> Server {
    let mut b = Builder::new();
    for (name, body) in files {
        b.file(name, body);
    }
    b.tls().arg("--http3");
    b.start()
}

#[test]
fn a_get_is_answered_with_its_file() {
    let s = server(&[("index.html", b"hello\n")]);
    let Some(out) = h3(&s, json!([{"method": "GET", "path": "/index.html"}])) else {
        return;
    };
    assert_eq!(out["alpn"], "h3");
    // (One connection, far below retry_above: no Retry.)
    assert_eq!(out["retries"], 0);
    let r = &out["responses"][0];
    eprintln!("{r}");
    assert_eq!(r["reset"], Value::Null);
    assert_eq!(out["terminated"], Value::Null);
}

#[test]
fn the_server_s_settings_say_no_qpack_table_and_malformed_requests_are_reset() {
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
    // SETTINGS_QPACK_MAX_TABLE_CAPACITY 0, SETTINGS_QPACK_BLOCKED_STREAMS
    // 0, SETTINGS_MAX_FIELD_SECTION_SIZE [http2] max_header_list_size.
    assert_eq!(out["settings"], json!({"1": 0, "7": 0, "6": 65536}));
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
