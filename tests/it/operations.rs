//! The built-in handlers for operations, mounted by `[[handlers]]`:
//! `health`, `ready` (503 from the moment a stop begins), `metrics`
//! (Prometheus text) and `status` (HTML and JSON), on the wire.
use crate::common;

use std::time::Duration;

use common::*;

const OPS: &str = "[[handlers]]\npath = \"/-/health\"\nhandler = \"health\"\n\
[[handlers]]\npath = \"/-/ready\"\nhandler = \"ready\"\n\
[[handlers]]\npath = \"/-/metrics\"\nhandler = \"metrics\"\n\
[[handlers]]\npath = \"/-/status\"\nhandler = \"status\"\n";

/// A site with the four built-ins, `workers` workers and `extra` (tables),
/// and an htpasswd file `users` (Apache's `{SHA}` of "secret" for ann).
fn site(workers: u32, extra: &str) -> Server {
    let mut b = Builder::new();
    write_file(
        &b.base().join("users"),
        b"ann:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n",
    );
    b.file("index.html", b"hello\n")
        .file("big.bin", &vec![7u8; 64 * 1024])
        .workers(workers)
        .config(&format!("{extra}{OPS}"));
    b.start()
}

/// The value of the metric line that starts with `name` (labels and
/// all), if there is one.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn health_and_ready_answer_and_ready_says_no_once_a_stop_begins() {
    let s = site(1, "[timeouts]\nstop_delay = \"5s\"\n");
    let r = s.get("/-/health");
    assert_eq!((r.status, r.text().as_str()), (200, "ok\n"));
    assert_eq!(r.header("Cache-Control"), Some("no-store"));
    let r = s.get("/-/ready");
    assert_eq!((r.status, r.text().as_str()), (200, "ready\n"));
    s.signal(libc::SIGTERM);
    s.wait_stderr_line("stopping in 5s: still serving meanwhile");
    // Within the stop delay: not ready, yet still serving and alive.
    let r = s.get("/-/ready");
    assert_eq!((r.status, r.text().as_str()), (503, "stopping\n"));
    assert_eq!(r.header("Retry-After"), Some("1"));
    assert_eq!(s.get("/index.html").status, 200);
    assert_eq!(s.get("/-/health").status, 200);
    let r = s.get("/-/metrics");
    assert_eq!(metric(&r.text(), "brisk_stopping"), Some(1.0));
    // The handler's own 503 is its answer: no error line for each probe.
    assert!(
        !s.stderr().contains("503 answering /-/ready"),
        "{}",
        s.stderr()
    );
}

#[test]
fn metrics_count_requests_bytes_durations_and_failures() {
    let s = site(
        1,
        "[[throttle]]\npattern = \"*.bin\"\nrate = \"10MiB/s\"\n[[auth]]\npath = \"/private/\"\nrealm = \"x\"\nhtpasswd = \"users\"\n",
    );
    for _ in 0..3 {
        assert_eq!(s.get("/index.html").status, 200);
    }
    assert_eq!(s.get("/missing").status, 404);
    assert_eq!(
        s.request(b"POST /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            .status,
        405
    );
    assert_eq!(s.get("/big.bin").body.len(), 64 * 1024);
    let r = s.get_with(
        "/private/x",
        &format!("Authorization: {}\r\n", basic_auth("ann", "wrong")),
    );
    assert_eq!(r.status, 401);
    // A head that cannot be read is answered and counted too (`other`).
    assert_eq!(
        s.request(b"GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n")
            .status,
        400
    );
    let r = s.get("/-/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let m = r.text();
    let req = |method: &str, code: &str| {
        metric(
            &m,
            &format!("brisk_requests_total{{worker=\"0\",method=\"{method}\",code=\"{code}\"}}"),
        )
    };
    assert_eq!(req("GET", "2xx"), Some(4.0), "{m}");
    assert_eq!(req("GET", "4xx"), Some(2.0), "{m}");
    assert_eq!(req("POST", "4xx"), Some(1.0), "{m}");
    assert_eq!(req("other", "4xx"), Some(1.0), "{m}");
    assert_eq!(
        metric(&m, "brisk_request_duration_seconds_count"),
        Some(8.0),
        "{m}"
    );
    assert_eq!(
        metric(&m, "brisk_request_duration_seconds_bucket{le=\"+Inf\"}"),
        Some(8.0)
    );
    assert!(metric(&m, "brisk_sent_bytes_total{worker=\"0\"}").unwrap() > 64.0 * 1024.0);
    assert!(metric(&m, "brisk_throttled_bytes_total{worker=\"0\"}").unwrap() >= 64.0 * 1024.0);
    assert_eq!(
        metric(&m, "brisk_auth_failures_total{worker=\"0\"}"),
        Some(1.0)
    );
    assert_eq!(metric(&m, "brisk_reloads_total"), Some(0.0));
    for family in [
        "# TYPE brisk_requests_total counter",
        "# TYPE brisk_request_duration_seconds histogram",
        "# TYPE brisk_open_connections gauge",
        "# TYPE brisk_idle_connections gauge",
        "# TYPE brisk_cgi_processes gauge",
    ] {
        assert!(m.contains(family), "{family}");
    }
    // Gauges, published once a second: an idle keep-alive connection.
    let mut idle = s.connect();
    idle.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(idle.response().status, 200);
    wait_until("the idle connection in the gauges", || {
        let m = s.get("/-/metrics").text();
        metric(&m, "brisk_idle_connections{worker=\"0\"}").is_some_and(|n| n >= 1.0)
            && metric(&m, "brisk_open_connections{worker=\"0\"}").is_some_and(|n| n >= 1.0)
    });
    // A reload counts, and the counts go on from where they were.
    s.signal(libc::SIGHUP);
    s.wait_stderr_line("configuration reloaded");
    drop(idle);
    wait_until("the previous workers' counts kept", || {
        let m = s.get("/-/metrics").text();
        metric(&m, "brisk_reloads_total") == Some(1.0)
            && metric(
                &m,
                "brisk_requests_total{worker=\"0\",method=\"GET\",code=\"2xx\"}",
            )
            .is_some_and(|n| n >= 5.0)
    });
}

#[test]
fn the_status_page_in_html_and_json() {
    let s = site(2, "");
    for _ in 0..5 {
        s.get("/index.html");
    }
    let r = s.get("/-/status");
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    let html = r.text();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(
        html.contains("<h1>brisk ") && html.contains("serving;"),
        "{html}"
    );
    assert!(html.contains("<tr><td>all</td><td>5</td>"), "{html}");
    for r in [
        s.get("/-/status?json"),
        s.get_with("/-/status", "Accept: application/json\r\n"),
    ] {
        assert_eq!(r.header("Content-Type"), Some("application/json"));
        let v: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
        assert!(v["requests"].as_u64().unwrap() >= 5, "{v}");
        assert_eq!(v["stopping"], false);
        assert_eq!(v["workers"].as_array().unwrap().len(), 2);
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        assert!(v["by_class"]["2xx"].as_u64().unwrap() >= 5);
    }
}

#[test]
fn the_built_ins_take_no_settings() {
    let dir = TempDir::new("ops-cfg");
    let cfg = dir.path.join("b.toml");
    std::fs::write(
        &cfg,
        format!(
            "root = \"{}\"\n[[handlers]]\npath = \"/-/ready\"\nhandler = \"ready\"\nconfig = {{ delay = 1 }}\n",
            dir.path.display()
        ),
    )
    .unwrap();
    let (status, _, err) =
        run_brisk(&["--config", cfg.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    assert!(!status.success());
    assert!(
        err.contains("the handler \"ready\" at /-/ready did not start: config.delay: unknown key; this handler takes no settings"),
        "{err}"
    );
    let _ = Duration::ZERO;
}
