//! Throttling: a `[[throttle]]` rate is never exceeded (the lower bound on
//! the transfer time is a property of the server, not of the machine's
//! speed), it is shared by all clients of a rule, and unthrottled paths are
//! not slowed.

use crate::common;

use common::*;
use std::time::{Duration, Instant};

/// 100 ms of burst at the configured rate (see access::throttle).
fn burst(rate: u64) -> u64 {
    rate / 10
}

fn min_duration(bytes: u64, rate: u64) -> Duration {
    Duration::from_secs_f64((bytes - burst(rate)) as f64 / rate as f64)
}

#[test]
fn a_throttled_file_never_exceeds_its_rate() {
    let body: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
    let mut b = Builder::new();
    b.file("v.mp4", &body);
    b.file("free.bin", &body);
    b.config("[[throttle]]\npattern = \"*.mp4\"\nrate = \"256KiB/s\"\n");
    let s = b.start();
    let rate = 256 * 1024;
    let t0 = Instant::now();
    let r = s.get("/v.mp4");
    let took = t0.elapsed();
    assert_eq!(r.body, body, "throttled content intact");
    assert!(
        took >= min_duration(body.len() as u64, rate),
        "600 kB at 256 KiB/s in {took:?}"
    );
    // The same bytes under a path no rule matches are not paced.
    assert_eq!(s.get("/free.bin").body, body);
}

#[test]
fn a_rule_rate_is_shared_by_all_its_clients() {
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 241) as u8).collect();
    let mut b = Builder::new();
    b.file("a/x.iso", &body);
    b.workers(2);
    b.config("[[throttle]]\npath = \"/a/\"\nrate = \"300KiB/s\"\n");
    let s = b.start();
    let rate = 300 * 1024;
    let t0 = Instant::now();
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let addr = s.addr();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                c.send(b"GET /a/x.iso HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                c.response().body
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().expect("client").len(), body.len());
    }
    // Three clients, two workers, one rate: 900 kB take at least ~2.9 s.
    let took = t0.elapsed();
    assert!(
        took >= min_duration(3 * body.len() as u64, rate),
        "{took:?}"
    );
}

#[test]
fn a_connection_rate_paces_each_client() {
    let body = vec![b'z'; 200_000];
    let mut b = Builder::new();
    b.file("big.dat", &body);
    b.config("[[throttle]]\npattern = \"*.dat\"\nconnection_rate = \"200KiB/s\"\n");
    let s = b.start();
    let t0 = Instant::now();
    assert_eq!(s.get("/big.dat").body, body);
    assert!(t0.elapsed() >= min_duration(body.len() as u64, 200 * 1024));
}

#[test]
fn bad_rates_are_config_errors() {
    let dir = TempDir::new("throttle-cfg");
    let cfg = dir.path.join("site.toml");
    std::fs::create_dir_all(dir.path.join("www")).unwrap();
    std::fs::write(
        &cfg,
        "root = \"www\"\n[[throttle]]\npattern = \"*.mp4\"\nrate = \"fast\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(crate::common::brisk_exe())
        .arg("--check-config")
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("site.toml:4") && err.contains("throttle[1].rate"),
        "{err}"
    );
}

/// A request pipelined behind a throttled answer is paced by its own
/// rule: read at once, it went out under the first answer's rule, so a
/// file under a slow rule came at a faster rule's rate when a small file
/// under that rule was asked for first on the same connection.
#[test]
fn a_pipelined_request_keeps_its_own_rules_rate() {
    let small: Vec<u8> = (0..20_000u32).map(|i| (i % 239) as u8).collect();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 233) as u8).collect();
    let mut b = Builder::new();
    b.file("s.bin", &small);
    b.file("v.mp4", &big);
    b.config(
        "[[throttle]]\npattern = \"*.bin\"\nconnection_rate = \"4MiB/s\"\n\
         [[throttle]]\npattern = \"*.mp4\"\nconnection_rate = \"100KiB/s\"\n",
    );
    let s = b.start();
    let mut c = Client::connect(s.addr());
    let t0 = Instant::now();
    c.send(b"GET /s.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /v.mp4 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().body, small);
    assert_eq!(c.response().body, big, "throttled content intact");
    let took = t0.elapsed();
    let rate = 100 * 1024;
    assert!(
        took >= min_duration(big.len() as u64, rate),
        "200 kB at 100 KiB/s behind a 4 MiB/s answer in {took:?}"
    );
}
