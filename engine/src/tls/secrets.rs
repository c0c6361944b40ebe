//! TLS 1.3's application traffic secrets (RFC 8446 §7.1), kept so that
//! the record layer can derive the next keys of a direction on a
//! KeyUpdate (§7.2) without rustls.
//!
//! rustls computes both secrets in the handshake and keeps them in its
//! `KernelConnection`, which brisk kept boxed for that one purpose:
//! 560 bytes of each idle TLS 1.3 connection's 2.5 KiB. rustls also tells
//! them to a configuration's [`rustls::KeyLog`] (what `SSLKEYLOGFILE`
//! uses), at once, on the thread that drives the handshake: [`Catch`]
//! puts them in a thread-local slot, and the connection that drove that
//! step takes them ([`caught`]) before any other connection of the
//! thread is driven. What a connection keeps are the two secrets
//! (97 bytes, inline, zeroed when dropped).

use std::cell::RefCell;

use ring::hkdf;

/// The longest secret: SHA-384's output (TLS_AES_256_GCM_SHA384).
const MAX: usize = 48;

/// The client's and the server's current application traffic secrets.
pub struct TrafficSecrets {
    client: [u8; MAX],
    server: [u8; MAX],
    /// Their length (the suite's hash: 32 or 48).
    len: u8,
    /// Which were learnt: 1 the client's, 2 the server's.
    learnt: u8,
}

impl TrafficSecrets {
    /// None learnt.
    pub const NONE: TrafficSecrets = TrafficSecrets {
        client: [0; MAX],
        server: [0; MAX],
        len: 0,
        learnt: 0,
    };

    /// Whether both secrets are known.
    pub fn known(&self) -> bool {
        self.learnt == 3
    }

    /// The next key and IV of one direction (`server`: ours), of
    /// `key_len` bytes and 12: its secret moves on (§7.2), then the keys
    /// come from it (§7.3). `None` if the secrets were never learnt.
    pub fn next(&mut self, server: bool, key_len: usize) -> Option<([u8; 32], [u8; 12])> {
        let len = usize::from(self.len);
        let alg = match (self.known(), len) {
            (true, 32) => hkdf::HKDF_SHA256,
            (true, 48) => hkdf::HKDF_SHA384,
            _ => return None,
        };
        let secret = match server {
            true => &mut self.server,
            false => &mut self.client,
        };
        let mut next = [0u8; MAX];
        expand_label(alg, &secret[..len], b"traffic upd", &mut next[..len])?;
        secret[..len].copy_from_slice(&next[..len]);
        next.fill(0);
        let (mut key, mut iv) = ([0u8; 32], [0u8; 12]);
        expand_label(alg, &secret[..len], b"key", key.get_mut(..key_len)?)?;
        expand_label(alg, &secret[..len], b"iv", &mut iv)?;
        Some((key, iv))
    }

    fn set(&mut self, label: &str, secret: &[u8]) {
        let (slot, bit) = match label {
            CLIENT => (&mut self.client, 1),
            SERVER => (&mut self.server, 2),
            _ => return,
        };
        // Both have the suite's hash length (§7.1).
        match slot.get_mut(..secret.len()) {
            Some(s) if self.learnt == 0 || usize::from(self.len) == secret.len() => {
                s.copy_from_slice(secret);
                self.len = secret.len() as u8;
                self.learnt |= bit;
            }
            _ => {}
        }
    }
}

impl Drop for TrafficSecrets {
    fn drop(&mut self) {
        // Secrets do not outlive the connection in freed memory.
        self.client.fill(0);
        self.server.fill(0);
    }
}

/// HKDF-Expand-Label(Secret, Label, "", out.len()) (RFC 8446 §7.1): the
/// label is "tls13 " and `label`, the context empty.
fn expand_label(alg: hkdf::Algorithm, secret: &[u8], label: &[u8], out: &mut [u8]) -> Option<()> {
    struct Len(usize);
    impl hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    const PREFIX: &[u8] = b"tls13 ";
    let length = u16::try_from(out.len()).ok()?.to_be_bytes();
    let label_len = [u8::try_from(PREFIX.len() + label.len()).ok()?];
    let info: [&[u8]; 5] = [&length, &label_len, PREFIX, label, &[0]];
    let prk = hkdf::Prk::new_less_safe(alg, secret);
    prk.expand(&info, Len(out.len())).ok()?.fill(out).ok()
}

/// The key log's labels of the two secrets (NSS's key log format).
const CLIENT: &str = "CLIENT_TRAFFIC_SECRET_0";
const SERVER: &str = "SERVER_TRAFFIC_SECRET_0";

thread_local! {
    /// What [`Catch`] was told since the last [`caught`] on this thread.
    static CAUGHT: RefCell<TrafficSecrets> = const { RefCell::new(TrafficSecrets::NONE) };
}

/// The key log of brisk's server configurations: keeps the two
/// application traffic secrets for the connection being driven.
#[derive(Debug)]
pub struct Catch;

impl rustls::KeyLog for Catch {
    fn will_log(&self, label: &str) -> bool {
        matches!(label, CLIENT | SERVER)
    }

    fn log(&self, label: &str, _client_random: &[u8], secret: &[u8]) {
        CAUGHT.with(|c| c.borrow_mut().set(label, secret));
    }
}

/// The secrets rustls told this thread's [`Catch`] since the last call
/// (both, or none): the caller drove one connection's handshake since.
pub fn caught() -> Option<TrafficSecrets> {
    let got = CAUGHT.with(|c| std::mem::replace(&mut *c.borrow_mut(), TrafficSecrets::NONE));
    got.known().then_some(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8448 §3 (a simple 1-RTT handshake, SHA-256): the server's
    /// application traffic secret and the write key and IV derived from it.
    #[test]
    fn keys_from_a_secret_are_rfc_8448s() {
        fn hex(s: &str) -> Vec<u8> {
            let s: String = s.split_whitespace().collect();
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        }
        let secret = hex("a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32
                          82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43");
        let (mut key, mut iv) = ([0u8; 16], [0u8; 12]);
        expand_label(hkdf::HKDF_SHA256, &secret, b"key", &mut key).unwrap();
        expand_label(hkdf::HKDF_SHA256, &secret, b"iv", &mut iv).unwrap();
        assert_eq!(
            key.to_vec(),
            hex("9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56")
        );
        assert_eq!(iv.to_vec(), hex("cf 78 2b 88 dd 83 54 9a ad f1 e9 84"));
    }

    /// A KeyUpdate moves only its own direction's secret on, and each
    /// step gives new keys.
    #[test]
    fn each_direction_moves_on_alone() {
        let mut s = TrafficSecrets::NONE;
        assert!(s.next(true, 16).is_none(), "nothing learnt");
        s.set(CLIENT, &[1; 32]);
        assert!(s.next(true, 16).is_none(), "one learnt");
        s.set(SERVER, &[2; 32]);
        s.set("EXPORTER_SECRET", &[3; 32]);
        let first = s.next(true, 16).unwrap();
        let second = s.next(true, 16).unwrap();
        assert_ne!(first, second);
        assert_eq!(s.client, {
            let mut c = [0; MAX];
            c[..32].fill(1);
            c
        });
        let rx = s.next(false, 16).unwrap();
        assert_ne!(rx, first);
        assert_eq!(&rx.0[16..], &[0; 16], "a 16-byte key");
    }

    #[test]
    fn only_both_secrets_are_caught_and_once() {
        use rustls::KeyLog;
        assert!(caught().is_none());
        assert!(Catch.will_log(CLIENT) && Catch.will_log(SERVER));
        assert!(!Catch.will_log("CLIENT_HANDSHAKE_TRAFFIC_SECRET"));
        Catch.log(CLIENT, &[0; 32], &[5; 48]);
        Catch.log(SERVER, &[0; 32], &[6; 48]);
        let got = caught().expect("caught");
        assert_eq!(got.len, 48);
        assert_eq!(got.server, [6; 48]);
        assert!(caught().is_none(), "taken");
    }
}
