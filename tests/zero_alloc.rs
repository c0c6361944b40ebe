//! The engine's promise: once warm, answering static requests allocates
//! nothing (small file, many 1 KiB files, 1 MiB files, 16-deep
//! pipelining). The server runs in this process, embedded through the
//! library API, under a global allocator that counts every allocation on
//! every thread; the client loop itself allocates nothing, so any count
//! is the server's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use brisk::config::{Config, Level, LogTarget};
use brisk::log::LogService;
use brisk::server::Server;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: defers to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Reads until `n` complete responses (Content-Length framed) have arrived;
/// returns the total body bytes. Uses only `buf`, which must be big enough
/// for one batch of heads (bodies are skipped as they stream in).
fn read_responses(s: &mut TcpStream, buf: &mut [u8], mut n: usize) -> u64 {
    let mut filled = 0;
    let mut body_left: u64 = 0;
    let mut total = 0;
    while n > 0 {
        if filled == 0 || (body_left == 0 && find_head_end(&buf[..filled]).is_none()) {
            let r = s.read(&mut buf[filled..]).expect("read");
            assert!(r > 0, "server closed early");
            filled += r;
        }
        if body_left > 0 {
            let take = body_left.min(filled as u64) as usize;
            buf.copy_within(take..filled, 0);
            filled -= take;
            body_left -= take as u64;
            total += take as u64;
            if body_left == 0 {
                n -= 1;
            }
            continue;
        }
        let Some(end) = find_head_end(&buf[..filled]) else {
            continue;
        };
        let head = &buf[..end];
        assert!(
            head.starts_with(b"HTTP/1.1 200 OK\r\n"),
            "{}",
            String::from_utf8_lossy(head)
        );
        body_left = content_length(head);
        buf.copy_within(end..filled, 0);
        filled -= end;
        if body_left == 0 {
            n -= 1;
        }
    }
    assert_eq!(filled, 0, "unexpected extra bytes");
    total
}

fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

fn content_length(head: &[u8]) -> u64 {
    let key = b"\r\nContent-Length: ";
    let at = head
        .windows(key.len())
        .position(|w| w == key)
        .expect("Content-Length")
        + key.len();
    head[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0, |n, &d| n * 10 + u64::from(d - b'0'))
}

struct Site {
    dir: PathBuf,
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn steady_state_requests_do_not_allocate() {
    let dir = std::env::temp_dir().join(format!("brisk-zero-alloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let _site = Site { dir: dir.clone() };
    std::fs::write(dir.join("index.html"), [b'x'; 100]).unwrap();
    for i in 0..100 {
        std::fs::write(
            dir.join(format!("f{i}.txt")),
            vec![b'a' + (i % 26) as u8; 1024],
        )
        .unwrap();
    }
    for i in 0..4 {
        std::fs::write(dir.join(format!("big{i}.bin")), vec![i as u8; 1 << 20]).unwrap();
    }
    let mut cfg = Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        root: dir.clone(),
        workers: 1,
        ..Config::default()
    };
    cfg.log.access = LogTarget::Off;
    cfg.log.error = LogTarget::Off;
    cfg.log.level = Level::Off;
    cfg.limits.keepalive_requests = u32::MAX;
    let logs = LogService::start(&cfg.log).unwrap();
    let server = Server::bind(cfg).unwrap();
    let addr = server.local_addrs()[0];
    let running = server.start(&logs).unwrap();

    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let small = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    let files: Vec<Vec<u8>> = (0..100)
        .map(|i| format!("GET /f{i}.txt HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes())
        .collect();
    let bigs: Vec<Vec<u8>> = (0..4)
        .map(|i| format!("GET /big{i}.bin HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes())
        .collect();
    let pipelined: Vec<u8> = small.repeat(16);

    // Each scenario: warm up (caches fill, buffers reach their size), then count.
    let mut scenario =
        |name: &str, rounds: usize, step: &mut dyn FnMut(&mut TcpStream, &mut [u8], usize)| {
            for i in 0..rounds {
                step(&mut s, &mut buf, i);
            }
            let before = ALLOCS.load(Ordering::Relaxed);
            for i in 0..rounds {
                step(&mut s, &mut buf, i);
            }
            let spent = ALLOCS.load(Ordering::Relaxed) - before;
            assert_eq!(spent, 0, "{name}: {spent} allocations in {rounds} rounds");
        };
    scenario("small file", 2000, &mut |s, buf, _| {
        s.write_all(&small).unwrap();
        assert_eq!(read_responses(s, buf, 1), 100);
    });
    scenario("1 KiB files", 2000, &mut |s, buf, i| {
        s.write_all(&files[(i * 37) % files.len()]).unwrap();
        assert_eq!(read_responses(s, buf, 1), 1024);
    });
    scenario("1 MiB files", 40, &mut |s, buf, i| {
        s.write_all(&bigs[i % bigs.len()]).unwrap();
        assert_eq!(read_responses(s, buf, 1), 1 << 20);
    });
    scenario("pipelined 16 deep", 300, &mut |s, buf, _| {
        s.write_all(&pipelined).unwrap();
        assert_eq!(read_responses(s, buf, 16), 1600);
    });
    drop(s);
    running.stop();
    logs.shutdown();
}
