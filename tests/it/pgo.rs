//! scripts/pgo, the profile-guided build: its training load, run against
//! this build's binary (a fiftieth of it, `--quick`). The script itself
//! fails when a part of the load does not get the answers it trains on
//! (a profile of error pages would make the wrong paths fast); here each
//! part this build can serve must have run, and each it cannot must be
//! said to be left out.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{have, have_from, skip, TempDir};

#[test]
fn the_training_load_gets_the_answers_it_trains_on() {
    if !have_from("h2load", "nghttp2-client") || !have("openssl") {
        return;
    }
    let dir = TempDir::new("pgo");
    let work = dir.path.join("train");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/pgo");
    let out = Command::new(script)
        .args(["--train", crate::common::brisk_exe()])
        .arg(&work)
        .arg("--quick")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // (The parts whose tools are missing are said to be skipped.)
    let upstreams = cfg!(feature = "upstreams");
    let cc = upstreams && have_from("cc", "gcc");
    let php = upstreams
        && std::fs::read_dir("/usr/sbin")
            .unwrap()
            .any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("php-fpm")));
    if upstreams && !php {
        skip("its FastCGI part: no php-fpm (scripts/test installs it as root on Debian)");
    }
    // (part of the load, whether this build serves it, its line)
    let parts = [
        ("HTTP/1.1", true, "plain HTTP/1.1, 100 B: 1200 answers 2xx"),
        ("304", true, "HTTP/1.1, 304: 400 answers 3xx"),
        ("404", true, "HTTP/1.1, 404: 200 answers 4xx"),
        ("listing", true, "HTTP/1.1, a listing: 40 answers 2xx"),
        ("CGI", true, "CGI, HTTP/1.1: 20 answers 2xx"),
        (
            "h2c",
            cfg!(feature = "http2"),
            "plain HTTP/2, 100 B: 800 answers 2xx",
        ),
        (
            "TLS",
            cfg!(feature = "tls"),
            "TLS handshakes, HTTP/1.1: 100 answers 2xx",
        ),
        (
            "h2",
            cfg!(all(feature = "tls", feature = "http2")),
            "TLS HTTP/2, 1 KiB files: 400 answers 2xx",
        ),
        ("proxy", cc, "proxied, HTTP/1.1: 800 answers 2xx"),
        ("FastCGI", php, "FastCGI, HTTP/1.1: 400 answers 2xx"),
        (
            "servlets",
            cfg!(feature = "servlets"),
            "servlet, HTTP/1.1: 400 answers 2xx",
        ),
    ];
    for (what, served, line) in parts {
        assert_eq!(said.contains(line), served, "{what}: {line:?} in\n{said}");
    }
    for (part, served) in [
        ("tls", cfg!(feature = "tls")),
        ("http2", cfg!(feature = "http2")),
        ("servlets", cfg!(feature = "servlets")),
    ] {
        let left = format!("left out: {part} (this build refuses it");
        assert_eq!(said.contains(&left), !served, "{left:?} in\n{said}");
    }
    // brisk served them (its access log), and nothing of it is left running.
    let log = std::fs::read_to_string(work.join("access.log")).unwrap();
    assert!(
        log.lines().filter(|l| l.contains("\" 200 ")).count() >= 1200,
        "{log}"
    );
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(work.to_str().unwrap()))
        .collect();
    assert!(left.is_empty(), "still running: {left:?}");
}
