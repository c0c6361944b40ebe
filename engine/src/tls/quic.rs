//! The QUIC side of HTTPS (feature `http3`): the rustls configuration a
//! QUIC handshake uses (RFC 9001: TLS 1.3 only, ALPN `h3`, the same
//! certificates by SNI and the same session cache as TCP's), wrapped for
//! quinn-proto with the transport limits of `[http3]`.

use std::sync::Arc;
use std::time::Duration;

use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{AckFrequencyConfig, IdleTimeout, ServerConfig, TransportConfig, VarInt};
use rustls::ServerConfig as TlsConfig;

use super::context::Shared;
use super::sni::ByName;
use super::Certificate;

/// ALPN of HTTP/3 (RFC 9114 §3.1).
pub const ALPN_H3: &[u8] = b"h3";

/// Ack-eliciting packets a client that supports the ACK frequency
/// extension may receive without acknowledging them at once (QUIC's
/// default is 1: an ACK for every other packet).
const ACK_ELICITING_THRESHOLD: u32 = 10;

/// The limits `[http3]` sets on each QUIC connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Request streams open at once.
    pub max_streams: u32,
    /// Closed after this long without a packet.
    pub idle_timeout: Duration,
}

/// Unidirectional streams a client may open: its control stream and the
/// two QPACK streams (RFC 9114 §6.2), and one spare for a stream of an
/// extension (ignored).
const UNI_STREAMS: u32 = 4;

/// What quinn-proto holds of a connection's answers, sent or not, until
/// the client acknowledges it (its default is 10 MB: with a client that
/// grants credit and never reads, each connection held that much of a
/// file). The bytes in flight, so a connection's pace is at most this
/// much a round trip: 2 MiB is 40 MB/s at 50 ms, what a kernel's TCP
/// buffers give a connection too.
const SEND_WINDOW: u64 = 2 << 20;

/// What a client may send on all its streams of a connection before brisk
/// reads it (quinn-proto's default is unbounded: 100 streams each with
/// its own window, of 1.25 MB).
pub const RECEIVE_WINDOW: u32 = 4 << 20;

/// What a client may send on one stream before brisk reads it
/// (quinn-proto's default, said here: the bodies that wait for their
/// turn unread are bounded by it, see `Worker::wait_turn`).
pub const STREAM_WINDOW: u32 = 1_250_000;

/// The quinn-proto server configuration for `certs`: TLS 1.3 only (QUIC
/// has no other, RFC 9001 §4.2), ALPN `h3` only, no 0-RTT (replayable
/// requests, as over TCP), certificates by SNI as over TCP; the path
/// does not migrate (the 4-tuple steers packets to their worker: see
/// docs/src/http3.md).
pub fn server_config(
    certs: &[Certificate],
    tickets: bool,
    shared: &Shared,
    limits: Limits,
) -> Result<Arc<ServerConfig>, String> {
    let mut tls = TlsConfig::builder_with_provider(Arc::new(super::provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(ByName::with_live(certs, Arc::clone(&shared.live))));
    tls.alpn_protocols = vec![ALPN_H3.to_vec()];
    tls.session_storage = Arc::clone(&shared.cache);
    if tickets {
        tls.ticketer = Arc::clone(&shared.ticketer);
    }
    tls.ignore_client_order = true;
    tls.max_early_data_size = 0;
    let crypto = QuicServerConfig::try_from(Arc::new(tls)).map_err(|e| e.to_string())?;
    let mut transport = TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(limits.max_streams))
        .max_concurrent_uni_streams(VarInt::from_u32(UNI_STREAMS))
        .max_idle_timeout(Some(
            IdleTimeout::try_from(limits.idle_timeout).map_err(|e| e.to_string())?,
        ))
        .send_window(SEND_WINDOW)
        .receive_window(VarInt::from_u32(RECEIVE_WINDOW))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        // No unreliable datagrams (RFC 9221): HTTP/3 does not use them here.
        .datagram_receive_buffer_size(None);
    // A client that can (QUIC's ACK frequency extension: quinn's does,
    // browsers do not say so yet) is asked to acknowledge every eleventh
    // packet, not every other one, within its own max_ack_delay (at most
    // an RTT): fewer datagrams that only acknowledge, each one costing
    // the server a decryption and its ACK processing. Measured (bench/h3
    // scenario 1's load, callgrind): 7 % fewer instructions a request.
    let mut ack = AckFrequencyConfig::default();
    ack.ack_eliciting_threshold(VarInt::from_u32(ACK_ELICITING_THRESHOLD));
    transport.ack_frequency_config(Some(ack));
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    config.migration(false);
    Ok(Arc::new(config))
}
