//! Which endpoint of this process owns a QUIC connection, told by the
//! connection IDs brisk gives out, so that a datagram another worker
//! reads still reaches it.
//!
//! The kernel hands each datagram to one socket of the `SO_REUSEPORT`
//! group by its 4-tuple, so while nothing changes a connection's
//! datagrams all reach the worker that owns it. A reload changes that:
//! the new generation's workers read duplicates of the old workers'
//! sockets while the old ones finish their answers, so about half of an
//! old connection's datagrams (its ACKs, its next requests) are read by
//! a new worker, whose endpoint does not know them.
//!
//! So each endpoint has a number, written into every connection ID it
//! issues, and a mailbox. A worker that reads a datagram whose
//! destination ID names another live endpoint posts it there and wakes
//! that worker, which takes it in as if its own socket had read it (it
//! answers through its socket bound to the same address, so the client
//! sees the same source). A datagram for an endpoint that has gone is
//! the reader's to answer: a stateless reset (RFC 9000 §10.3), believed
//! by the client because every endpoint of the process derives resets
//! from one key.
//!
//! RFC 9000 §5.1: an observer must not be able to tell that two IDs
//! belong to one connection. The number is therefore hidden: an ID is
//! 6 bytes that look random (a keyed hash of a count) after 2 bytes
//! that are the number XOR a keyed hash of those 6. Without the
//! process's keys every ID looks random; with them, one hash tells the
//! number.

use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

use mio::Waker;
use quinn_proto::{ConnectionId, ConnectionIdGenerator, EndpointConfig};

/// Length of the connection IDs brisk issues (as quinn-proto's own).
const CID_LEN: usize = 8;

/// Most datagrams waiting in one endpoint's mailbox; past it they are
/// dropped, as a full socket buffer drops them (QUIC sends again).
const MAIL_MAX: usize = 4096;

/// A datagram read by another endpoint's worker: which address it came
/// to, from whom, and its bytes.
pub(in crate::server::worker) struct Mail {
    pub(in crate::server::worker) local: SocketAddr,
    pub(in crate::server::worker) from: SocketAddr,
    /// Where it was sent, on a wildcard socket (see `sys::net::udp`).
    pub(in crate::server::worker) to: Option<std::net::IpAddr>,
    pub(in crate::server::worker) data: bytes::BytesMut,
}

/// Where other workers post an endpoint's datagrams.
pub(in crate::server::worker) struct Mailbox {
    mail: Mutex<Vec<Mail>>,
    waker: Arc<Waker>,
}

impl Mailbox {
    /// Posts `mail`, waking the owner when its mailbox was empty.
    pub(in crate::server::worker) fn post(&self, mail: Mail) {
        let mut box_ = self.mail.lock().unwrap_or_else(|e| e.into_inner());
        if box_.len() >= MAIL_MAX {
            return;
        }
        box_.push(mail);
        if box_.len() == 1 {
            drop(box_);
            let _ = self.waker.wake();
        }
    }
}

/// The process's keys: for the IDs' hidden numbers, for their random
/// look, for stateless resets.
struct Keys {
    hide: RandomState,
    look: RandomState,
    reset: Arc<ring::hmac::Key>,
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let rng = ring::rand::SystemRandom::new();
        Keys {
            hide: RandomState::new(),
            look: RandomState::new(),
            reset: Arc::new(
                ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng)
                    .expect("the system's random numbers"),
            ),
        }
    })
}

/// The live endpoints of the process, by number.
static LIVE: Mutex<Vec<(u16, Arc<Mailbox>)>> = Mutex::new(Vec::new());

/// The number hidden in connection ID `cid` (one of brisk's or not).
fn number(k: &Keys, cid: &[u8; CID_LEN]) -> u16 {
    u16::from_be_bytes([cid[0], cid[1]]) ^ k.hide.hash_one(&cid[2..]) as u16
}

/// The destination connection ID of datagram `data`, when it has the
/// length of brisk's (RFC 9000 §17.2: a long header gives its length;
/// a short one's is the receiver's own).
fn destination(data: &[u8]) -> Option<&[u8; CID_LEN]> {
    let cid = if *data.first()? & 0x80 == 0 {
        data.get(1..1 + CID_LEN)?
    } else {
        if usize::from(*data.get(5)?) != CID_LEN {
            return None;
        }
        data.get(6..6 + CID_LEN)?
    };
    cid.try_into().ok()
}

/// An endpoint's place among the process's: its number and mailbox.
/// Dropped with the endpoint, which leaves the live ones then.
pub(in crate::server::worker) struct Route {
    number: u16,
    mailbox: Arc<Mailbox>,
}

impl Route {
    /// A new endpoint's place, woken through `waker` when mail comes.
    pub(in crate::server::worker) fn new(waker: Arc<Waker>) -> Route {
        let k = keys();
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        // The first number not in use, from a random start.
        let mut number = k.hide.hash_one(live.len()) as u16;
        while live.iter().any(|(n, _)| *n == number) {
            number = number.wrapping_add(1);
        }
        let mailbox = Arc::new(Mailbox {
            mail: Mutex::new(Vec::new()),
            waker,
        });
        live.push((number, Arc::clone(&mailbox)));
        Route { number, mailbox }
    }

    /// The endpoint's configuration: the process's reset key, IDs with
    /// its number.
    pub(in crate::server::worker) fn endpoint_config(&self) -> EndpointConfig {
        let mut config = EndpointConfig::new(keys().reset.clone());
        let number = self.number;
        config.cid_generator(move || Box::new(Ids { number, count: 0 }));
        config
    }

    /// The live endpoint of another worker that datagram `data` is for,
    /// if any (`None`: this endpoint's to handle).
    pub(in crate::server::worker) fn elsewhere(&self, data: &[u8]) -> Option<Arc<Mailbox>> {
        let n = number(keys(), destination(data)?);
        if n == self.number {
            return None;
        }
        let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.iter()
            .find(|(m, _)| *m == n)
            .map(|(_, b)| Arc::clone(b))
    }

    /// The datagrams other workers posted here since the last time.
    pub(in crate::server::worker) fn take(&self) -> Vec<Mail> {
        std::mem::take(&mut *self.mailbox.mail.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|(n, _)| *n != self.number);
    }
}

/// Issues an endpoint's connection IDs.
struct Ids {
    number: u16,
    count: u64,
}

impl ConnectionIdGenerator for Ids {
    fn generate_cid(&mut self) -> ConnectionId {
        let k = keys();
        self.count += 1;
        let look = k.look.hash_one((self.number, self.count)).to_be_bytes();
        let mut cid = [0u8; CID_LEN];
        cid[2..].copy_from_slice(&look[..CID_LEN - 2]);
        let hidden = self.number ^ k.hide.hash_one(&cid[2..]) as u16;
        cid[..2].copy_from_slice(&hidden.to_be_bytes());
        ConnectionId::new(&cid)
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<std::time::Duration> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waker() -> Arc<Waker> {
        let poll = mio::Poll::new().expect("poll");
        Arc::new(Waker::new(poll.registry(), mio::Token(0)).expect("waker"))
    }

    /// A short-header packet to `cid`, with some payload.
    fn short(cid: &ConnectionId) -> Vec<u8> {
        let mut p = vec![0x41];
        p.extend_from_slice(cid);
        p.extend_from_slice(&[7; 30]);
        p
    }

    #[test]
    fn each_endpoint_reads_its_own_ids_and_posts_the_others_to_their_owner() {
        let (a, b) = (Route::new(waker()), Route::new(waker()));
        assert_ne!(a.number, b.number);
        let mut ids_a = Ids {
            number: a.number,
            count: 0,
        };
        let mut ids_b = Ids {
            number: b.number,
            count: 0,
        };
        let (x, y) = (ids_a.generate_cid(), ids_a.generate_cid());
        let z = ids_b.generate_cid();
        // IDs differ, and the number does not show in their first bytes.
        assert_ne!(x[..], y[..]);
        assert_eq!(x.len(), CID_LEN);
        // A's own: A handles them; B's: posted to B's mailbox.
        assert!(a.elsewhere(&short(&x)).is_none());
        assert!(b.elsewhere(&short(&z)).is_none());
        let to = a.elsewhere(&short(&z)).expect("B's");
        assert!(Arc::ptr_eq(&to, &b.mailbox));
        let from: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        to.post(Mail {
            local: from,
            from,
            to: None,
            data: bytes::BytesMut::from(&short(&z)[..]),
        });
        let got = b.take();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data[..], short(&z)[..]);
        assert!(b.take().is_empty());
        // A long header (a Handshake packet) names its ID with its length.
        let mut long = vec![0xe0, 0, 0, 0, 1, CID_LEN as u8];
        long.extend_from_slice(&z);
        long.extend_from_slice(&[0; 20]);
        assert!(a.elsewhere(&long).is_some());
        // Another length is a client's own choice: handled where read.
        long[5] = 9;
        assert!(a.elsewhere(&long).is_none());
        // Once B has gone, its IDs are A's to answer (a reset).
        drop(b);
        assert!(a.elsewhere(&short(&z)).is_none());
    }

    #[test]
    fn the_hidden_number_changes_with_every_id() {
        let mut ids = Ids {
            number: 7,
            count: 0,
        };
        let firsts: std::collections::HashSet<[u8; 2]> = (0..64)
            .map(|_| {
                let c = ids.generate_cid();
                let cid: [u8; CID_LEN] = c[..].try_into().expect("8 bytes");
                assert_eq!(number(keys(), &cid), 7);
                [c[0], c[1]]
            })
            .collect();
        // 64 IDs of one endpoint: their first two bytes are (nearly)
        // all different, so they do not name it to an observer.
        assert!(firsts.len() > 60, "{}", firsts.len());
    }
}
