//! h3-load: HTTP/3 requests over QUIC from one thread, for bench/h3 (issue #30).
//!
//! `-c` connections, each running `-m` requests at a time (one bidirectional stream each),
//! for `-d` seconds or until `-n` requests in all; the URLs are taken in turn (bench/h3 writes
//! them in a random order, as bench/h2 does for h2load). Every answer is read to its end; an
//! answer other than 2xx, a reset or a body of another length than the first answer to the same
//! URL counts as an error. One line of `key=value` results at the end, for bench/h3 to parse.
//!
//! With `--hold SECONDS`, each connection makes one request and then stays open, idle, that
//! long before it closes (bench/h3's idle-connection scenario: the server's memory per idle
//! connection is read meanwhile); `held=` in the results counts the connections answered, and
//! a line on standard error says when all of them are held.
//!
//! With `--stats`, a second line sums the client's QUIC counts over its connections
//! (quinn's `Connection::stats`): datagrams, bytes and packets each way, ACK, STREAM and
//! MAX_STREAMS frames, losses, path MTU probes; what the client sent is what the server read
//! (bench/h3's CPU figures per request, issue #30 section 8.2).
//!
//! The server's certificate is verified against `--ca` (bench/tls's self-signed one) with the
//! name `--name` (default `localhost`); the client offers ALPN `h3` only.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Buf;

struct Args {
    conns: usize,
    streams: usize,
    seconds: f64,
    total: u64,
    hold: f64,
    stats: bool,
    ca: String,
    name: String,
    urls: Vec<http::Uri>,
}

fn usage() -> ! {
    eprintln!(
        "usage: h3-load [-c CONNS] [-m STREAMS] [-d SECONDS | -n REQUESTS] --ca CERT.pem \
         [--name localhost] [--hold SECONDS] [--stats] URL... | -i FILE"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        conns: 1,
        streams: 1,
        seconds: 0.0,
        total: 0,
        hold: 0.0,
        stats: false,
        ca: String::new(),
        name: "localhost".into(),
        urls: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "-c" => a.conns = val().parse().unwrap_or_else(|_| usage()),
            "-m" => a.streams = val().parse().unwrap_or_else(|_| usage()),
            "-d" => a.seconds = val().parse().unwrap_or_else(|_| usage()),
            "-n" => a.total = val().parse().unwrap_or_else(|_| usage()),
            "--hold" => a.hold = val().parse().unwrap_or_else(|_| usage()),
            "--stats" => a.stats = true,
            "--ca" => a.ca = val(),
            "--name" => a.name = val(),
            "-i" => {
                let list = std::fs::read_to_string(val()).unwrap_or_else(|e| {
                    eprintln!("h3-load: {e}");
                    std::process::exit(2)
                });
                for line in list.lines().filter(|l| !l.trim().is_empty()) {
                    a.urls.push(line.trim().parse().unwrap_or_else(|_| usage()));
                }
            }
            _ if arg.starts_with("https://") => {
                a.urls.push(arg.parse().unwrap_or_else(|_| usage()))
            }
            _ => usage(),
        }
    }
    if a.urls.is_empty() || a.ca.is_empty() || a.conns == 0 || a.streams == 0 {
        usage();
    }
    if a.hold > 0.0 {
        a.streams = 1;
        a.total = 0;
        a.seconds = 0.0;
    } else if a.seconds <= 0.0 && a.total == 0 {
        a.total = 1;
    }
    a
}

/// What all the request loops count, shared on the one thread.
#[derive(Default)]
struct Tally {
    ok: u64,
    errors: u64,
    bytes: u64,
    started: u64,
    /// Connections answered and held (`--hold`).
    held: u64,
    /// The body length of the first answer to each URL.
    lengths: HashMap<usize, u64>,
    first_error: Option<String>,
    /// With `--stats`: the client's QUIC counts, summed over its connections (what it sent is
    /// what the server received): [`QUIC_COUNTS`] in that order.
    quic: [u64; QUIC_COUNTS.len()],
}

/// The names `--stats` prints `Tally::quic` under.
const QUIC_COUNTS: [&str; 14] = [
    "tx_datagrams",
    "tx_bytes",
    "tx_ios",
    "rx_datagrams",
    "rx_bytes",
    "tx_packets",
    "tx_acks",
    "rx_acks",
    "tx_stream_frames",
    "rx_stream_frames",
    "rx_max_streams",
    "lost_packets",
    "tx_mtu_probes",
    "lost_mtu_probes",
];

/// `conn`'s counts, in [`QUIC_COUNTS`]' order.
fn quic_counts(conn: &quinn::Connection) -> [u64; QUIC_COUNTS.len()] {
    let s = conn.stats();
    [
        s.udp_tx.datagrams,
        s.udp_tx.bytes,
        s.udp_tx.ios,
        s.udp_rx.datagrams,
        s.udp_rx.bytes,
        s.path.sent_packets,
        s.frame_tx.acks,
        s.frame_rx.acks,
        s.frame_tx.stream,
        s.frame_rx.stream,
        s.frame_rx.max_streams_bidi,
        s.path.lost_packets,
        s.path.sent_plpmtud_probes,
        s.path.lost_plpmtud_probes,
    ]
}

struct Plan {
    urls: Vec<http::Uri>,
    total: u64,
    deadline: Option<Instant>,
    hold: Option<Duration>,
    conns: u64,
    next: RefCell<usize>,
    tally: RefCell<Tally>,
}

impl Plan {
    /// The next URL to ask for, or None when the run is over.
    fn take(&self) -> Option<usize> {
        let mut t = self.tally.borrow_mut();
        if self.hold.is_some() {
            // One request a connection; each loop asks once (see `connection`).
            t.started += 1;
            return Some(0);
        }
        if self.total > 0 && t.started >= self.total {
            return None;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        t.started += 1;
        let mut next = self.next.borrow_mut();
        let i = *next;
        *next = (i + 1) % self.urls.len();
        Some(i)
    }

    fn fail(&self, why: String) {
        let mut t = self.tally.borrow_mut();
        t.errors += 1;
        t.first_error.get_or_insert(why);
    }

    fn done(&self, url: usize, len: u64) {
        let mut t = self.tally.borrow_mut();
        let want = *t.lengths.entry(url).or_insert(len);
        if want == len {
            t.ok += 1;
            t.bytes += len;
        } else {
            drop(t);
            self.fail(format!(
                "{}: {len} bytes, first answer had {want}",
                self.urls[url]
            ));
        }
    }
}

fn client_config(args: &Args) -> quinn::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(&args.ca).unwrap_or_else(|e| {
        eprintln!("h3-load: {}: {e}", args.ca);
        std::process::exit(2)
    });
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        roots
            .add(cert.expect("a PEM certificate"))
            .expect("a usable CA certificate");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("a QUIC TLS config");
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    // Held connections must outlive the server's idle timeout while the others connect.
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(Some(Duration::from_secs(5)));
    config.transport_config(Arc::new(transport));
    config
}

/// One request loop: a request at a time on its own stream, until the plan says stop.
async fn requests(
    plan: Rc<Plan>,
    mut send: h3::client::SendRequest<h3_quinn::OpenStreams, bytes::Bytes>,
) -> u64 {
    let mut once = plan.hold.is_some();
    let mut answered = 0;
    while let Some(i) = plan.take() {
        let req = match http::Request::get(plan.urls[i].clone()).body(()) {
            Ok(r) => r,
            Err(e) => {
                plan.fail(format!("request: {e}"));
                return answered;
            }
        };
        let mut stream = match send.send_request(req).await {
            Ok(s) => s,
            Err(e) => {
                plan.fail(format!("send: {e}"));
                return answered;
            }
        };
        if let Err(e) = stream.finish().await {
            plan.fail(format!("finish: {e}"));
            continue;
        }
        let resp = match stream.recv_response().await {
            Ok(r) => r,
            Err(e) => {
                plan.fail(format!("response: {e}"));
                continue;
            }
        };
        let mut len = 0u64;
        let mut broken = None;
        loop {
            match stream.recv_data().await {
                Ok(Some(chunk)) => len += chunk.remaining() as u64,
                Ok(None) => break,
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        match broken {
            Some(e) => plan.fail(format!("body: {e}")),
            None if !resp.status().is_success() => plan.fail(format!("status {}", resp.status())),
            None => {
                plan.done(i, len);
                answered += 1;
            }
        }
        if std::mem::take(&mut once) {
            break;
        }
    }
    answered
}

/// In `--hold` mode: handshakes in flight at most (10,000 at once would time out on a
/// one-core server), and the count of connections that have had their turn.
struct Holding {
    permits: tokio::sync::Semaphore,
    finished: std::cell::Cell<u64>,
    all: tokio::sync::Notify,
}

impl Holding {
    /// One more connection answered (or failed); the last one says so and wakes the others.
    fn finished(&self, plan: &Plan) {
        self.finished.set(self.finished.get() + 1);
        if self.finished.get() == plan.conns {
            // bench/h3 reads the server's memory once this line is out.
            eprintln!("h3-load: {} connections held", plan.tally.borrow().held);
            self.all.notify_waiters();
        }
    }
}

async fn connection(
    plan: Rc<Plan>,
    holding: Rc<Holding>,
    endpoint: quinn::Endpoint,
    addr: SocketAddr,
    name: String,
    streams: usize,
) {
    let hold = plan.hold;
    let permit = match hold {
        Some(_) => holding.permits.acquire().await.ok(),
        None => None,
    };
    let conn = match endpoint.connect(addr, &name) {
        Ok(connecting) => connecting.await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let conn = match conn {
        Ok(c) => c,
        Err(e) => {
            plan.fail(format!("connect: {e}"));
            if hold.is_some() {
                holding.finished(&plan);
            }
            return;
        }
    };
    let (mut driver, send) = match h3::client::new(h3_quinn::Connection::new(conn.clone())).await {
        Ok(pair) => pair,
        Err(e) => return plan.fail(format!("h3: {e}")),
    };
    let drive = tokio::task::spawn_local(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let loops: Vec<_> = (0..streams)
        .map(|_| tokio::task::spawn_local(requests(plan.clone(), send.clone())))
        .collect();
    drop(send);
    let mut answered = 0;
    for l in loops {
        answered += l.await.unwrap_or(0);
    }
    if let Some(hold) = hold {
        drop(permit);
        if answered > 0 {
            plan.tally.borrow_mut().held += 1;
        }
        let all = holding.all.notified();
        holding.finished(&plan);
        if holding.finished.get() < plan.conns {
            all.await;
        }
        tokio::time::sleep(hold).await;
    }
    let counts = quic_counts(&conn);
    for (sum, n) in plan.tally.borrow_mut().quic.iter_mut().zip(counts) {
        *sum += n;
    }
    conn.close(0u32.into(), b"done");
    drive.abort();
}

fn main() {
    let args = parse_args();
    let first = &args.urls[0];
    let host = first.host().unwrap_or_else(|| usage());
    let port = first.port_u16().unwrap_or(443);
    let addr = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| usage());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    let started = Instant::now();
    let plan = Rc::new(Plan {
        urls: args.urls.clone(),
        total: args.total,
        deadline: (args.seconds > 0.0).then(|| started + Duration::from_secs_f64(args.seconds)),
        hold: (args.hold > 0.0).then(|| Duration::from_secs_f64(args.hold)),
        conns: args.conns as u64,
        next: RefCell::new(0),
        tally: RefCell::new(Tally::default()),
    });
    let config = client_config(&args);
    let holding = Rc::new(Holding {
        permits: tokio::sync::Semaphore::new(64),
        finished: std::cell::Cell::new(0),
        all: tokio::sync::Notify::new(),
    });
    local.block_on(&rt, async {
        let bind: SocketAddr = if addr.is_ipv6() {
            "[::1]:0"
        } else {
            "127.0.0.1:0"
        }
        .parse()
        .unwrap();
        // One UDP socket (endpoint) a connection, as h2load has one TCP connection each.
        let tasks: Vec<_> = (0..args.conns)
            .map(|_| {
                let mut endpoint = quinn::Endpoint::client(bind).expect("a UDP socket");
                endpoint.set_default_client_config(config.clone());
                tokio::task::spawn_local(connection(
                    plan.clone(),
                    holding.clone(),
                    endpoint,
                    addr,
                    args.name.clone(),
                    args.streams,
                ))
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    let secs = started.elapsed().as_secs_f64();
    let t = plan.tally.borrow();
    println!(
        "requests={} ok={} errors={} bytes={} seconds={:.3} req_per_s={:.0} held={}",
        t.ok + t.errors,
        t.ok,
        t.errors,
        t.bytes,
        secs,
        t.ok as f64 / secs,
        t.held
    );
    if args.stats {
        let line: Vec<_> = QUIC_COUNTS
            .iter()
            .zip(t.quic)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!("{}", line.join(" "));
    }
    if let Some(e) = &t.first_error {
        eprintln!("h3-load: first error: {e}");
    }
    std::process::exit(if t.errors > 0 || t.ok == 0 { 1 } else { 0 });
}
