//! HTTP/3 over a lossy path: a UDP relay in the test, between aioquic and
//! brisk, drops about one datagram in ten and swaps some with the next,
//! both ways (a fixed seed, so the same choices in every run, whatever
//! the packets they fall on); every byte must still arrive right.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::{aioquic, fields, hex, server};
use crate::common::{skip, tls::testdata};

/// What the relay did in one direction.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    forwarded: u64,
    dropped: u64,
    /// Held back and sent after the datagram that followed it.
    reordered: u64,
}

/// A relay from a port of its own to `server`, dropping and reordering.
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Towards the server, towards the client.
    counts: Arc<Mutex<[Counts; 2]>>,
    threads: Vec<JoinHandle<()>>,
}

/// A small deterministic generator (xorshift32).
struct Dice(u32);

impl Dice {
    /// A number from 0 to 99.
    fn roll(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0 % 100
    }
}

/// Where a direction's datagrams go.
enum To {
    /// By the socket connected to the server.
    Server(UdpSocket),
    /// By the client-facing socket, to the client's address once known.
    Client(UdpSocket, Arc<Mutex<Option<SocketAddr>>>),
}

impl To {
    fn send(&self, d: &[u8]) {
        let _ = match self {
            To::Server(s) => s.send(d),
            To::Client(s, peer) => match *peer.lock().expect("peer") {
                Some(p) => s.send_to(d, p),
                None => Ok(0),
            },
        };
    }
}

impl Relay {
    /// Drops `drop` % and holds back `swap` % of the datagrams each way.
    fn start(server: SocketAddr, drop: u32, swap: u32) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").expect("relay socket");
        let back = UdpSocket::bind("127.0.0.1:0").expect("relay socket");
        back.connect(server).expect("connect");
        let addr = front.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Mutex::new([Counts::default(); 2]));
        let peer = Arc::new(Mutex::new(None));
        let mut threads = Vec::new();
        let ways = [
            (
                front.try_clone().expect("clone"),
                To::Server(back.try_clone().expect("clone")),
                0x2545_f491,
            ),
            (back, To::Client(front, Arc::clone(&peer)), 0x9e37_79b9),
        ];
        for (way, (from, to, seed)) in ways.into_iter().enumerate() {
            let (stop, counts, peer) = (Arc::clone(&stop), Arc::clone(&counts), Arc::clone(&peer));
            threads.push(std::thread::spawn(move || {
                from.set_read_timeout(Some(Duration::from_millis(5)))
                    .expect("timeout");
                let mut dice = Dice(seed);
                let mut buf = vec![0u8; 65_536];
                let mut held: Option<Vec<u8>> = None;
                while !stop.load(Ordering::Relaxed) {
                    let (n, who) = match from.recv_from(&mut buf) {
                        Ok(got) => got,
                        Err(_) => {
                            // A quiet moment: what was held goes now.
                            if let Some(d) = held.take() {
                                to.send(&d);
                            }
                            continue;
                        }
                    };
                    if way == 0 {
                        *peer.lock().expect("peer") = Some(who);
                    }
                    let roll = dice.roll();
                    let mut c = counts.lock().expect("counts");
                    let c = &mut c[way];
                    if roll < drop {
                        c.dropped += 1;
                    } else if roll < drop + swap && held.is_none() {
                        c.reordered += 1;
                        held = Some(buf[..n].to_vec());
                    } else {
                        c.forwarded += 1;
                        to.send(&buf[..n]);
                        if let Some(d) = held.take() {
                            to.send(&d);
                        }
                    }
                }
            }));
        }
        Relay {
            addr,
            stop,
            counts,
            threads,
        }
    }

    fn counts(&self) -> [Counts; 2] {
        *self.counts.lock().expect("counts")
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn sha256(b: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(b))
}

#[test]
fn a_4_mib_file_and_small_ones_arrive_whole_through_loss_and_reordering() {
    if !aioquic() {
        skip("python3 with aioquic not available (pip install aioquic)");
        return;
    }
    let big = super::noise(4 << 20, 0x1234_5678);
    let small: Vec<Vec<u8>> = (0..5)
        .map(|i| {
            format!("small file {i}\n")
                .repeat(100 * (i + 1))
                .into_bytes()
        })
        .collect();
    let mut files: Vec<(String, &[u8])> = vec![("big.bin".into(), &big)];
    for (i, s) in small.iter().enumerate() {
        files.push((format!("s{i}.txt"), s));
    }
    let named: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    let s = server(&named);
    let relay = Relay::start(s.addr(), 10, 10);
    let requests: Vec<Value> = files
        .iter()
        .map(|(n, _)| json!({"method": "GET", "path": format!("/{n}")}))
        .collect();
    let spec = json!({
        "port": relay.addr.port(),
        "ca": testdata("ca.pem"),
        "sni": "a.test",
        "requests": requests,
        "timeout": 120,
    });
    let out = super::answer("client.py", &spec);
    for (r, (name, body)) in out["responses"]
        .as_array()
        .expect("responses")
        .iter()
        .zip(&files)
    {
        assert_eq!(fields(r)[0], ":status: 200", "{name}");
        assert_eq!(r["length"], body.len(), "{name}");
        assert_eq!(r["sha256"], sha256(body), "{name}");
    }
    // The relay did drop and reorder, both ways.
    let counts = relay.counts();
    for (way, c) in ["to the server", "to the client"].iter().zip(counts) {
        assert!(c.dropped > 0 && c.reordered > 0, "{way}: {c:?}");
    }
    // (About one in ten of them lost, towards the client where the file
    // goes: so the server resent what was lost.)
    let c = counts[1];
    let total = c.forwarded + c.dropped + c.reordered;
    assert!(c.dropped * 20 > total && c.dropped * 5 < total, "{c:?}");
}
