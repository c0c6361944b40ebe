//! HTTPS (issue #12): TLS 1.3 and 1.2 with rustls, through its sans-IO
//! connection API, so that the per-core event loops drive it like any
//! other transport (no second runtime, no thread per connection).
//!
//! - [`certs`]: a `[[tls.certificate]]`'s files read and checked (PEM
//!   chain, key of any common form, optional OCSP staple; the key must
//!   match; an expired one is served with a warning);
//! - [`x509`]: the validity and the names of a certificate;
//! - [`der`]: DER's tags, and a writer for what brisk signs itself
//!   (ACME's certification requests and challenge certificates);
//! - [`sni`]: the certificate for a ClientHello, by its SAN names, the
//!   first one for clients without SNI;
//! - [`context`]: one rustls server configuration per generation of
//!   workers, with the session-ticket key and session cache shared by
//!   all workers (and kept across reloads);
//! - [`conn`]: one connection, sans-IO: ciphertext in, plaintext out
//!   and back, with reused buffers, a handshake deadline, plain HTTP
//!   detection and garbage handling; rustls for the handshake, then
//! - [`record`]: brisk's own record layer (ring's AEADs on the keys
//!   rustls hands over), so that an idle connection keeps only its keys;
//! - [`secrets`]: TLS 1.3's traffic secrets, learnt from rustls's key
//!   log, for the record layer's KeyUpdates;
//! - [`stream`]: that record layer over a non-blocking socket, with a
//!   worker's scratch buffers: what the engine's TLS transport delegates
//!   to;
//! - [`tickets`]: session-ticket keys shared by a fleet through a file
//!   (`[tls] ticket_keys`, with the feature `ops`), rotated by whichever
//!   server finds it due;
//! - [`quic`]: (feature `http3`) the configuration of QUIC's TLS 1.3
//!   handshakes, for quinn-proto;
//! - [`client`]: the client side, for `https://` upstreams of the
//!   reverse proxy (rustls's own connection over the upstream's socket).
//!
//! The crypto provider is *ring*, chosen by measurement (see
//! `bench/tls-provider` and the commit that added it): aws-lc-rs
//! handshakes faster but doubles the binary. Everything here is behind
//! the cargo feature `tls` (on by default).

pub mod certs;
pub mod client;
pub mod client_hello;
pub mod conn;
pub mod context;
pub mod der;
#[cfg(feature = "http3")]
pub mod quic;
pub mod record;
pub mod secrets;
pub mod sni;
pub mod stream;
#[cfg(test)]
pub(crate) mod testing;
pub mod tickets;
pub mod x509;

pub use certs::{Certificate, CertificateFiles};

/// The crypto provider every TLS object of brisk uses: ring's, with
/// AES-128-GCM first among the suites a server picks by its own order
/// (`ignore_client_order`): 128-bit keys are as safe for TLS as 256-bit
/// ones (RFC 8446 §9.1 makes AES-128-GCM the one every client must have),
/// their 10 rounds encrypt faster than AES-256's 14, and two of their key
/// schedules (one each way) are 128 bytes fewer per connection.
pub fn provider() -> rustls::crypto::CryptoProvider {
    let mut p = rustls::crypto::ring::default_provider();
    // A stable sort: AES-128 before AES-256 in each version, the rest in
    // rustls's order (TLS 1.3 first, ChaCha20 last).
    use rustls::CipherSuite as C;
    crate::sort::sort_by_key(&mut p.cipher_suites, |s| {
        let aes128 = matches!(
            s.suite(),
            C::TLS13_AES_128_GCM_SHA256
                | C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
                | C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        );
        (s.version() != &rustls::version::TLS13, !aes128)
    });
    p
}
