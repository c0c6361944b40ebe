//! The rustls server configuration of one generation of workers, and the
//! state that outlives generations: the session-ticket key (rotated by
//! rustls every 6 hours, tickets accepted for 12; or a fleet's keys from
//! a file, [`super::tickets`]) and the session cache, so that a client
//! resumes on any worker, and across a reload.

use std::sync::Arc;

use rustls::server::{
    NoServerSessionStorage, ProducesTickets, ServerSessionMemoryCache, StoresServerSessions,
};
use rustls::ServerConfig;

use super::sni::{ByName, Live};
use super::Certificate;

/// ALPN protocols offered, most preferred first (RFC 7301), without
/// HTTP/2 (`[http2] enable = false`, or a build without it).
pub const ALPN: &[&[u8]] = &[b"http/1.1"];

/// ALPN protocols offered with HTTP/2: `h2` first (RFC 9113 §3.2).
pub const ALPN_H2: &[&[u8]] = &[b"h2", b"http/1.1"];

/// What every generation of workers shares: made once per process.
#[derive(Debug, Clone)]
pub struct Shared {
    /// Encrypts and decrypts session tickets; its key rotates.
    pub ticketer: Arc<dyn ProducesTickets>,
    /// Sessions kept by the server for clients that do not take tickets
    /// (TLS 1.2 session ids, or tickets off), bounded.
    pub cache: Arc<dyn StoresServerSessions>,
    /// Certificates obtained while the server runs (ACME's), and the
    /// tls-alpn-01 challenges'.
    pub live: Arc<Live>,
}

impl Shared {
    /// The ticket key and a cache of `cache_entries` sessions (0: none).
    pub fn new(cache_entries: usize) -> Result<Shared, rustls::Error> {
        Ok(Shared {
            ticketer: ticketer(None, &|| unreachable!()).map_err(rustls::Error::General)?,
            cache: cache(cache_entries),
            live: Arc::default(),
        })
    }
}

/// The session-ticket maker: with `keys` (`[tls] ticket_keys`: the file
/// and its rotation period; the configuration refuses it without the
/// feature `ops`), the fleet's keys from the file, kept by a thread that
/// logs through the logger `log` makes; without, a random key of this
/// process, rotated by rustls. An error says why, naming the file.
pub fn ticketer(
    keys: Option<(&std::path::Path, std::time::Duration)>,
    log: &dyn Fn() -> crate::log::Logger,
) -> Result<Arc<dyn ProducesTickets>, String> {
    #[cfg(feature = "ops")]
    if let Some((file, period)) = keys {
        return super::tickets::shared(file, period, log());
    }
    #[cfg(not(feature = "ops"))]
    let _ = (keys, log);
    rustls::crypto::ring::Ticketer::new()
        .map_err(|e| format!("cannot make the session-ticket key: {e}"))
}

/// A session cache of `entries` sessions (0: none).
pub fn cache(entries: usize) -> Arc<dyn StoresServerSessions> {
    if entries == 0 {
        Arc::new(NoServerSessionStorage {})
    } else {
        ServerSessionMemoryCache::new(entries)
    }
}

/// The server configuration for `certs` (`[tls] certificates`, the first
/// the default): TLS 1.3 and 1.2 only (rustls has nothing older, and only
/// AEAD suites with forward secrecy), ALPN `http/1.1`, certificates by
/// SNI, the cache from `shared` and, if `tickets` (`[tls]
/// session_tickets`), its ticket key, no 0-RTT (replayable requests are
/// not worth one round trip).
pub fn server_config(
    certs: &[Certificate],
    tickets: bool,
    shared: &Shared,
) -> Result<Arc<ServerConfig>, rustls::Error> {
    server_config_offering(certs, tickets, shared, ALPN)
}

/// [`server_config`], offering the ALPN protocols `alpn` (see [`ALPN_H2`]).
pub fn server_config_offering(
    certs: &[Certificate],
    tickets: bool,
    shared: &Shared,
    alpn: &[&[u8]],
) -> Result<Arc<ServerConfig>, rustls::Error> {
    let mut config = ServerConfig::builder_with_provider(Arc::new(super::provider()))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(ByName::with_live(certs, Arc::clone(&shared.live))));
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // Last, so that no client that offers anything else gets it: a CA's
    // tls-alpn-01 validation (`sni`; the connection ends after the
    // handshake, `conn`).
    if cfg!(feature = "acme") {
        config
            .alpn_protocols
            .push(super::sni::ACME_TLS_ALPN.to_vec());
    }
    config.session_storage = Arc::clone(&shared.cache);
    if tickets {
        config.ticketer = Arc::clone(&shared.ticketer);
    }
    // The server's order (provider()'s: AES-128-GCM, AES-256-GCM,
    // ChaCha20) rather than the client's, as testssl.sh expects of a
    // server.
    config.ignore_client_order = true;
    config.max_early_data_size = 0;
    config.send_half_rtt_data = false;
    // After the handshake brisk runs the record layer itself
    // (`super::record`), with the keys rustls hands over.
    config.enable_secret_extraction = true;
    // And for TLS 1.3's KeyUpdates, the traffic secrets, which rustls
    // tells its key log (`super::secrets`).
    config.key_log = Arc::new(super::secrets::Catch);
    Ok(Arc::new(config))
}
