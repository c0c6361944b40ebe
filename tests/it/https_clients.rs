//! Real clients over HTTPS (issue #12): curl (TLS 1.3 and 1.2 forced,
//! SNI with two certificates, ALPN), `openssl s_client` (a session saved
//! and resumed: "Reused"), Python's `ssl`, wget; a key brisk refuses at
//! start, naming the file, and an expired certificate it serves. A missing tool is a counted
//! skip (`scripts/test` installs them).
use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::tls::{section, testdata};
use common::*;

/// A site on a plain listener (`addrs[0]`) and a TLS one (`addrs[1]`)
/// with certificates `a` (a.test, *.a.test; the default) and `b`
/// (b.test).
fn site() -> (Server, Vec<u8>) {
    let data = pattern(300 * 1024 + 3);
    let mut b = Builder::new();
    b.file("data.bin", &data)
        .file("index.html", b"<p>hello</p>\n")
        .config(&section(&["a", "b"], ""))
        .listeners(2);
    (b.start(), data)
}

fn port(s: &Server) -> u16 {
    s.addrs[1].port()
}

/// Runs a command with a 20 s limit; `None` (after saying the test
/// skips) if the tool is missing.
fn run(tool: &str, cmd: &mut Command) -> Option<Output> {
    let out = run_for(cmd, Duration::from_secs(20));
    if out.is_none() {
        skip(&format!("{tool} not installed"));
    }
    out
}

/// curl trusting the test CA, with `name` resolving to 127.0.0.1.
fn curl(s: &Server, names: &[&str]) -> Command {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--fail", "--max-time", "10", "--cacert"])
        .arg(testdata("ca.pem"));
    for name in names {
        cmd.arg("--resolve")
            .arg(format!("{name}:{}:127.0.0.1", port(s)));
    }
    cmd
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn curl_over_tls_1_3_and_1_2_with_alpn() {
    let (s, data) = site();
    let url = format!("https://a.test:{}/data.bin", port(&s));
    for (flags, version) in [
        (&["--tlsv1.3"][..], "TLSv1.3"),
        (&["--tlsv1.2", "--tls-max", "1.2"][..], "TLSv1.2"),
    ] {
        let Some(o) = run(
            "curl",
            curl(&s, &["a.test"])
                .args(flags)
                .args(["--http1.1", "-v", "-w", "%{http_version}"])
                .arg(&url),
        ) else {
            return;
        };
        let err = text(&o.stderr);
        assert!(o.status.success(), "{err}");
        // The body, then what -w printed: HTTP/1.1, agreed by ALPN.
        assert_eq!(o.stdout.len(), data.len() + 3);
        assert!(o.stdout[..data.len()] == data, "the file, byte for byte");
        assert_eq!(&o.stdout[data.len()..], b"1.1");
        assert!(
            err.contains(&format!("SSL connection using {version} / ")),
            "{err}"
        );
        assert!(err.contains("ALPN: server accepted http/1.1"), "{err}");
    }
    // Left to choose, curl takes h2 when the server offers it by ALPN.
    let (version, alpn) = match cfg!(feature = "http2") {
        true => ("2", "h2"),
        false => ("1.1", "http/1.1"),
    };
    let o = run(
        "curl",
        curl(&s, &["a.test"])
            .args(["-v", "-o", "/dev/null", "-w", "%{http_version}"])
            .arg(&url),
    )
    .expect("curl");
    assert!(o.status.success());
    assert_eq!(text(&o.stdout), version);
    assert!(text(&o.stderr).contains(&format!("ALPN: server accepted {alpn}")));
    // A range and keep-alive (two URLs, one connection) over TLS.
    let o = run(
        "curl",
        curl(&s, &["a.test"])
            .args(["--http1.1", "-v", "-r", "1000-1999"])
            .arg(&url)
            .arg(&url),
    )
    .expect("curl");
    assert!(o.status.success());
    assert_eq!(o.stdout, [&data[1000..2000], &data[1000..2000]].concat());
    assert!(text(&o.stderr).contains("Re-using existing connection"));
}

#[test]
fn curl_sees_the_certificate_sni_asks_for() {
    let (s, _) = site();
    for (name, cn) in [("a.test", "a"), ("www.a.test", "a"), ("b.test", "b")] {
        let Some(o) = run(
            "curl",
            curl(&s, &[name])
                .arg("-v")
                .arg(format!("https://{name}:{}/index.html", port(&s))),
        ) else {
            return;
        };
        let err = text(&o.stderr);
        // Verified against the CA for that name: the right certificate.
        assert!(o.status.success(), "{name}: {err}");
        assert_eq!(o.stdout, b"<p>hello</p>\n");
        assert!(err.contains(&format!("subject: CN={cn}")), "{name}: {err}");
    }
    // No SNI (an address): the first certificate, the default.
    let o = run(
        "curl",
        curl(&s, &[])
            .args(["-v", "-k"])
            .arg(format!("https://127.0.0.1:{}/index.html", port(&s))),
    )
    .expect("curl");
    assert!(o.status.success());
    assert!(text(&o.stderr).contains("subject: CN=a"));
}

/// `openssl s_client` to the TLS listener (see [`common::tls::s_client`]).
fn s_client(s: &Server, dir: &Path, args: &[&str]) -> Option<Output> {
    common::tls::s_client(port(s), dir, args)
}

#[test]
fn openssl_s_client_resumes_a_saved_session() {
    let (s, _) = site();
    let dir = TempDir::new("s_client");
    // TLS 1.3 by ticket; TLS 1.2 by ticket, and by the session cache
    // when the client takes no ticket.
    for (version, extra) in [
        ("TLSv1.3", &["-tls1_3"][..]),
        ("TLSv1.2", &["-tls1_2"][..]),
        ("TLSv1.2", &["-tls1_2", "-no_ticket"][..]),
    ] {
        let sess = dir.path.join("session.pem");
        let _ = fs::remove_file(&sess);
        let sess_arg = sess.display().to_string();
        let mut first: Vec<&str> = extra.to_vec();
        first.extend(["-sess_out", &sess_arg]);
        let Some(o) = s_client(&s, &dir.path, &first) else {
            return;
        };
        let out = text(&o.stdout);
        assert!(out.contains(&format!("New, {version}, Cipher is")), "{out}");
        assert!(out.contains("Verify return code: 0 (ok)"), "{out}");
        assert!(out.contains("<p>hello</p>"), "{out}");
        let mut second: Vec<&str> = extra.to_vec();
        second.extend(["-sess_in", &sess_arg]);
        let o = s_client(&s, &dir.path, &second).expect("openssl");
        let out = text(&o.stdout);
        assert!(
            out.contains(&format!("Reused, {version}, Cipher is")),
            "{extra:?}: {out}"
        );
        assert!(out.contains("<p>hello</p>"), "{out}");
    }
}

#[test]
fn python_ssl_fetches_over_tls_1_3() {
    let (s, data) = site();
    let script = format!(
        r#"
import socket, ssl, sys
ctx = ssl.create_default_context(cafile="{ca}")
ctx.set_alpn_protocols(["http/1.1"])
with socket.create_connection(("127.0.0.1", {port}), timeout=10) as raw:
    with ctx.wrap_socket(raw, server_hostname="a.test") as s:
        s.sendall(b"GET /data.bin HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        sys.stderr.write("%s %s %s\n" % (s.version(), s.selected_alpn_protocol(), s.cipher()[0]))
sys.stdout.buffer.write(got[got.index(b"\r\n\r\n") + 4:])
"#,
        ca = testdata("ca.pem").display(),
        port = port(&s)
    );
    let Some(o) = run("python3", Command::new("python3").arg("-c").arg(&script)) else {
        return;
    };
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(o.stdout == data, "the file, byte for byte");
    assert_eq!(err.trim(), "TLSv1.3 http/1.1 TLS_AES_128_GCM_SHA256");
}

#[test]
fn wget_fetches_over_https() {
    // wget cannot point a.test at 127.0.0.1: a certificate for the
    // address itself, made here, and trusted as its own CA.
    let dir = TempDir::new("wget");
    let (cert, key) = (dir.path.join("cert.pem"), dir.path.join("key.pem"));
    let Some(made) = run(
        "openssl",
        Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=127.0.0.1", "-addext"])
            .arg("subjectAltName=IP:127.0.0.1")
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert),
    ) else {
        return;
    };
    assert!(made.status.success(), "{}", text(&made.stderr));
    let data = pattern(200 * 1024 + 9);
    let mut b = Builder::new();
    b.file("data.bin", &data)
        .arg("--tls-cert")
        .arg(&cert.display().to_string())
        .arg("--tls-key")
        .arg(&key.display().to_string());
    let s = b.start();
    let out = dir.path.join("out.bin");
    let Some(o) = run(
        "wget",
        Command::new("wget")
            .args(["-q", "--timeout=10", "--tries=1", "--ca-certificate"])
            .arg(&cert)
            .arg("-O")
            .arg(&out)
            .arg(format!("https://127.0.0.1:{}/data.bin", s.port)),
    ) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(fs::read(&out).expect("out") == data);
}

#[test]
fn a_key_that_does_not_match_is_refused_at_start() {
    let root = TempDir::new("refused");
    let root = root.path.display().to_string();
    let file = |n: &str| testdata(n).display().to_string();
    let (status, _, err) = run_brisk(&[
        "--root",
        &root,
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        &file("a.pem"),
        "--tls-key",
        &file("b.key"),
    ]);
    let says = format!(
        "brisk: --tls-key: {}: this key does not match the certificate in {}",
        file("b.key"),
        file("a.pem")
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.starts_with(&says), "{err}");
    assert!(!err.contains("listening on"), "{err}");
}

/// A certificate whose renewal failed stops neither the start nor the
/// other sites (nginx serves it too): brisk warns, serves the valid
/// certificate to its names, and the expired one to its own, where the
/// client says why it refuses.
#[test]
fn an_expired_certificate_is_served_with_a_warning_and_stops_no_other_site() {
    let mut b = Builder::new();
    b.file("index.html", b"<p>hello</p>\n")
        .config(&section(&["a", "expired"], ""))
        .listeners(2);
    let s = b.start();
    s.wait_stderr_line(&format!(
        "tls: {}: the certificate expired on 2021-01-01 00:00:00 UTC; renew it",
        testdata("expired.pem").display()
    ));
    assert_eq!(s.get("/index.html").body, b"<p>hello</p>\n");
    let Some(o) = run(
        "curl",
        curl(&s, &["a.test"]).arg(format!("https://a.test:{}/index.html", port(&s))),
    ) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(o.stdout, b"<p>hello</p>\n");
    let o = run(
        "curl",
        curl(&s, &["expired.test"]).arg(format!("https://expired.test:{}/index.html", port(&s))),
    )
    .expect("curl");
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("expired"), "{}", text(&o.stderr));
}
