//! One TLS connection, sans-IO: the transport feeds it the ciphertext
//! it read and gets plaintext out; it hands it plaintext and gets records
//! to write. rustls's unbuffered server connection does the handshake;
//! then rustls hands the traffic keys over and brisk's own record layer
//! ([`super::record`]) seals and opens the records.
//!
//! It owns no buffer: the caller's (per-worker, reused) buffers go in and
//! out of every call, so an idle TLS connection is only its keys (0.4 KiB
//! with this struct, `tests/alone/tls_memory.rs`; rustls's established state
//! was 3.3 KiB), and a request allocates nothing.
//!
//! Around rustls it adds what a server facing the internet needs:
//! - a handshake deadline ([`TlsConn::handshake_deadline`]) that the
//!   event loop's timer enforces, as it does the request-head timeout;
//! - a per-worker cap on handshakes in progress ([`Handshakes`]), so that
//!   a flood of handshakes cannot take the CPU from established clients;
//! - plain HTTP sent to a TLS port is answered with a readable `400` in
//!   plaintext (nginx's "plain HTTP request was sent to HTTPS port"), then
//!   closed, instead of a TLS alert the browser shows as gibberish;
//! - anything else that is not TLS is a [`TlsError`] after which the
//!   caller writes what is in `out` (a fatal alert, when rustls made one)
//!   and closes; [`TlsError::log_line`] says what happened for a debug
//!   line, which the caller rate-limits (`log::budget::LineBudget`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, UnbufferedStatus};
use rustls::ServerConfig;

use super::context::ALPN_H2;
use super::record::{Records, MAX_PLAIN, OVERHEAD};
use super::secrets::TrafficSecrets;

/// The answer to plain HTTP on a TLS port (RFC 9110 §15.5.1: the request
/// cannot be processed as sent).
pub const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Content-Length: 71\r\n\
Connection: close\r\n\
\r\n\
This port speaks HTTPS: the plain HTTP request was sent to a TLS port.\n";

/// Handshakes in progress on one worker, against its cap.
#[derive(Debug, Clone)]
pub struct Handshakes {
    active: Arc<AtomicUsize>,
    max: usize,
}

/// One handshake's place under the cap; given back when the handshake
/// ends (done or failed) or the connection goes.
#[derive(Debug)]
pub struct HandshakeSlot(Arc<AtomicUsize>);

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Handshakes {
    /// A cap of `max` handshakes at once (at least 1).
    pub fn new(max: usize) -> Handshakes {
        Handshakes {
            active: Arc::new(AtomicUsize::new(0)),
            max: max.max(1),
        }
    }

    /// A place for one more handshake, or `None` while the cap is
    /// reached: the caller then leaves new connections in the kernel's
    /// accept queue until one ends.
    pub fn try_begin(&self) -> Option<HandshakeSlot> {
        let prev = self.active.fetch_add(1, Ordering::Relaxed);
        if prev >= self.max {
            self.active.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(HandshakeSlot(Arc::clone(&self.active)))
    }

    /// Handshakes in progress.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// Why a TLS connection must close. Whatever `out` holds after the call
/// that returned it (a readable 400, a fatal alert) is written first.
#[derive(Debug, Clone, PartialEq)]
pub enum TlsError {
    /// The client sent plain HTTP; `out` holds [`PLAIN_HTTP_ANSWER`].
    PlainHttp,
    /// Not TLS at all, or TLS that breaks the protocol (a garbage record,
    /// a bad MAC, a handshake rustls refuses).
    Protocol(rustls::Error),
}

impl TlsError {
    /// A short line for the debug log.
    pub fn log_line(&self) -> String {
        match self {
            TlsError::PlainHttp => "plain HTTP sent to a TLS port: answered 400".to_string(),
            TlsError::Protocol(e) => format!("TLS error, connection closed: {e}"),
        }
    }
}

/// What a call to [`TlsConn::receive`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Received {
    /// Plaintext bytes appended to the caller's buffer.
    pub plaintext: usize,
    /// The handshake completed during this call.
    pub handshake_done: bool,
    /// The client sent close_notify: no more plaintext will come.
    pub peer_closed: bool,
}

/// Where a connection is: rustls doing the handshake, or brisk's own
/// record layer after it.
enum Stage {
    /// rustls's state (large: boxed, and for the handshake only), and
    /// the traffic secrets once rustls has told them (`super::secrets`).
    Handshake(Box<UnbufferedServerConnection>, TrafficSecrets),
    /// What the handshake agreed, and the keys.
    Traffic(Established),
    /// Between the two, for the moment of the move (or after a failed
    /// one).
    Gone,
}

/// An established connection: its record layer and what was negotiated.
struct Established {
    records: Records,
    /// The ALPN protocol, one of those brisk offers ([`ALPN_H2`]).
    alpn: Option<&'static [u8]>,
    resumed: bool,
}

/// A TLS connection's state, without buffers.
pub struct TlsConn {
    stage: Stage,
    /// Until the handshake ends: its deadline and its place under the cap.
    handshake: Option<(Instant, Option<HandshakeSlot>)>,
    /// Whether the first bytes were looked at (plain HTTP or TLS).
    sniffed: bool,
    /// The ClientHello's server name: `None` until its record is in (read
    /// from that record first, then as rustls read it).
    sni: Option<Option<Box<str>>>,
    peer_closed: bool,
    /// An error ended the connection: rustls is not called again.
    failed: bool,
    /// During the handshake: the bytes at the front of the input, whole
    /// records, that rustls has read but not discarded (the start of a
    /// handshake message in records of its own), which it must see again
    /// at the next call ([`drive`]).
    fed: u32,
    /// During the handshake: the bytes of rejected 0-RTT records skipped
    /// ([`skipped_early_data`]).
    early: u16,
}

impl std::fmt::Debug for TlsConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConn")
            .field("handshaking", &self.handshake.is_some())
            .field("peer_closed", &self.peer_closed)
            .finish_non_exhaustive()
    }
}

impl TlsConn {
    /// A new server connection with `config`; its handshake must end
    /// within `timeout` of `now`. `slot` is its place under the worker's
    /// cap ([`Handshakes::try_begin`]), held until the handshake ends.
    pub fn new(
        config: Arc<ServerConfig>,
        now: Instant,
        timeout: Duration,
        slot: Option<HandshakeSlot>,
    ) -> Result<TlsConn, rustls::Error> {
        Ok(TlsConn {
            stage: Stage::Handshake(
                Box::new(UnbufferedServerConnection::new(config)?),
                TrafficSecrets::NONE,
            ),
            handshake: Some((now + timeout, slot)),
            sniffed: false,
            sni: None,
            peer_closed: false,
            failed: false,
            fed: 0,
            early: 0,
        })
    }

    /// When the handshake must be done by, while it is not.
    pub fn handshake_deadline(&self) -> Option<Instant> {
        self.handshake.as_ref().map(|(at, _)| *at)
    }

    /// Whether the handshake is still going on.
    pub fn is_handshaking(&self) -> bool {
        self.handshake.is_some()
    }

    /// The server name (SNI) the client asked for, lower case.
    pub fn server_name(&self) -> Option<&str> {
        self.sni.as_ref().and_then(|n| n.as_deref())
    }

    /// Whether the handshake still waits for a whole ClientHello: rustls
    /// has chosen no version yet, so nothing has cost more than reading.
    pub fn awaits_hello(&self) -> bool {
        !self.failed
            && matches!(&self.stage, Stage::Handshake(conn, _) if conn.protocol_version().is_none())
    }

    /// Whether the client sent close_notify.
    pub fn peer_closed(&self) -> bool {
        self.peer_closed
    }

    /// Processes the ciphertext in `incoming` (what the socket gave, in
    /// order; bytes of an incomplete record stay in it for the next call):
    /// decrypted application data is appended to `plaintext`, and
    /// whatever must go to the client (handshake flights, session tickets,
    /// alerts) to `out`.
    pub fn receive(
        &mut self,
        incoming: &mut Vec<u8>,
        plaintext: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<Received, TlsError> {
        if self.failed {
            return Err(failed());
        }
        if !self.sniffed && !incoming.is_empty() {
            match sniff(incoming) {
                First::Tls => self.sniffed = true,
                First::Http => {
                    self.sniffed = true;
                    self.failed = true;
                    self.handshake = None;
                    incoming.clear();
                    out.extend_from_slice(PLAIN_HTTP_ANSWER);
                    return Err(TlsError::PlainHttp);
                }
                First::TooShort => return Ok(Received::default()),
            }
        }
        if self.sni.is_none() {
            // Before rustls takes the ClientHello's record.
            use super::client_hello::{server_name, Sni};
            match server_name(incoming) {
                Sni::Incomplete => {}
                Sni::Name(name) => self.sni = Some(Some(name)),
                Sni::None => self.sni = Some(None),
            }
        }
        let mut got = Received::default();
        let result = match &mut self.stage {
            Stage::Handshake(conn, secrets) => {
                // (Nothing another connection's hello left, a QUIC one's.)
                let _ = super::sni::heard();
                let _ = super::sni::unresolved();
                let start = out.len();
                let result = drive(
                    conn,
                    incoming,
                    plaintext,
                    out,
                    &mut got,
                    &mut self.fed,
                    &mut self.early,
                );
                // What rustls told the key log while it ran, before any
                // other connection of this thread is driven.
                if let Some(caught) = super::secrets::caught() {
                    *secrets = caught;
                }
                // The name rustls chose the certificate by, read from the
                // whole ClientHello: it stands over what the first record
                // said (nothing, when the hello was split over records).
                if let Some(name) = super::sni::heard() {
                    self.sni = Some(name);
                }
                if let Err(e) = &result {
                    // rustls queued a fatal alert for most errors: let it
                    // go out. (Before a version is chosen, nothing but
                    // brisk's own alert, `next_record`'s, is in `out`.)
                    flush_alert(conn, incoming, out);
                    if super::sni::unresolved() {
                        // No certificate for the name: rustls says
                        // access_denied (49), which is for a peer refused
                        // after its certificate or PSK was checked. RFC
                        // 6066 §3 gives unrecognized_name (112) for a
                        // server name the server does not recognise (as
                        // nginx's ssl_reject_handshake sends); without a
                        // name, handshake_failure (40). Nothing is
                        // encrypted yet: the certificate is chosen before
                        // the ServerHello.
                        out.truncate(start);
                        let alert = match self.sni {
                            Some(Some(_)) => rustls::AlertDescription::UnrecognisedName,
                            _ => rustls::AlertDescription::HandshakeFailure,
                        };
                        plaintext_alert(alert, out);
                    } else if out.len() == start {
                        unexpected_alert(conn, e, out);
                    }
                }
                let done = !conn.is_handshaking();
                match result {
                    Ok(closed) => {
                        self.peer_closed |= closed;
                        match done {
                            true => self.establish(incoming, plaintext, out, &mut got),
                            false => Ok(()),
                        }
                    }
                    Err(e) => Err(e),
                }
            }
            Stage::Traffic(_) => self.open(incoming, plaintext, out, &mut got),
            Stage::Gone => Err(rustls::Error::HandshakeNotComplete),
        };
        if let Err(e) = result {
            self.handshake = None;
            self.failed = true;
            return Err(TlsError::Protocol(e));
        }
        got.peer_closed = self.peer_closed;
        Ok(got)
    }

    /// The handshake is done: the keys go to brisk's record layer, and
    /// rustls's state goes, but for what a TLS 1.3 KeyUpdate needs.
    fn establish(
        &mut self,
        incoming: &mut Vec<u8>,
        plaintext: &mut Vec<u8>,
        out: &mut Vec<u8>,
        got: &mut Received,
    ) -> Result<(), rustls::Error> {
        self.handshake = None;
        got.handshake_done = true;
        let Stage::Handshake(conn, secrets) = std::mem::replace(&mut self.stage, Stage::Gone)
        else {
            return Err(rustls::Error::HandshakeNotComplete);
        };
        if cfg!(feature = "acme") && conn.alpn_protocol() == Some(super::sni::ACME_TLS_ALPN) {
            // A CA's tls-alpn-01 validation: it has seen the certificate,
            // and nothing else is to be said (RFC 8737 §3).
            return Err(rustls::Error::General(
                "a tls-alpn-01 validation (ALPN acme-tls/1) ends at its handshake".into(),
            ));
        }
        let alpn = conn
            .alpn_protocol()
            .and_then(|p| ALPN_H2.iter().copied().find(|&o| o == p));
        let resumed = conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        // rustls stopped with nothing left to send (`drive`), as this
        // asks; it fails if secret extraction is off in the config.
        let (keys, kernel) = conn.dangerous_into_kernel_connection()?;
        self.stage = Stage::Traffic(Established {
            records: Records::new(keys, kernel.negotiated_cipher_suite(), secrets)?,
            alpn,
            resumed,
        });
        // Records behind the client's Finished that rustls left (the
        // start of one still arriving).
        self.open(incoming, plaintext, out, got)
    }

    /// Opens records with brisk's record layer (once established).
    fn open(
        &mut self,
        incoming: &mut Vec<u8>,
        plaintext: &mut Vec<u8>,
        out: &mut Vec<u8>,
        got: &mut Received,
    ) -> Result<(), rustls::Error> {
        let Stage::Traffic(t) = &mut self.stage else {
            return Ok(());
        };
        if self.peer_closed {
            incoming.clear();
            return Ok(());
        }
        let opened = t.records.receive(incoming, plaintext, out)?;
        got.plaintext += opened.plaintext;
        self.peer_closed |= opened.peer_closed;
        Ok(())
    }

    /// Encrypts `data` into records appended to `out`, once the handshake
    /// is done (`Ok(false)` before: nothing was taken). `incoming` is
    /// unused since brisk seals its records itself (kept so that callers
    /// need not know).
    pub fn send(
        &mut self,
        data: &[u8],
        _incoming: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<bool, TlsError> {
        if self.failed {
            return Err(failed());
        }
        let Stage::Traffic(t) = &mut self.stage else {
            return Ok(false);
        };
        let start = out.len();
        out.reserve(data.len() + data.len().div_ceil(MAX_PLAIN).max(1) * OVERHEAD);
        if let Err(e) = t.records.seal_data(data, out) {
            out.truncate(start);
            self.failed = true;
            return Err(TlsError::Protocol(e));
        }
        Ok(true)
    }

    /// Appends a close_notify alert to `out` (a clean end that a client
    /// can tell from a truncation, RFC 8446 §6.1), once the handshake is
    /// done; before, closing is all there is.
    pub fn close_notify(&mut self, _incoming: &mut Vec<u8>, out: &mut Vec<u8>) {
        if self.failed {
            return;
        }
        if let Stage::Traffic(t) = &mut self.stage {
            let _ = t.records.close_notify(out);
        }
    }

    /// Drops what an idle connection can build again when it wakes (the
    /// expanded AEAD keys): the worker calls it once the connection has
    /// been idle a while.
    pub fn rest(&mut self) {
        if let Stage::Traffic(t) = &mut self.stage {
            t.records.rest();
        }
    }

    /// The protocol version, once negotiated: `TLSv1.3` or `TLSv1.2`
    /// (the names of CGI's `SSL_PROTOCOL` and the access log).
    pub fn protocol(&self) -> Option<&'static str> {
        let version = match &self.stage {
            Stage::Handshake(conn, _) => conn.protocol_version()?,
            Stage::Traffic(t) => t.records.suite().version().version,
            Stage::Gone => return None,
        };
        Some(match version {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2",
            _ => "TLS",
        })
    }

    /// The cipher suite, once negotiated, by the name OpenSSL gives it
    /// (`TLS_AES_128_GCM_SHA256`, `ECDHE-ECDSA-AES128-GCM-SHA256`): what
    /// Apache's `SSL_CIPHER` and nginx's `$ssl_cipher` show, so CGI
    /// scripts and log readers see the names they know. (Every suite of
    /// ring's provider has one: rustls's own names, the only others, are
    /// not in the binary.)
    pub fn cipher(&self) -> Option<&'static str> {
        let suite = match &self.stage {
            Stage::Handshake(conn, _) => conn.negotiated_cipher_suite()?,
            Stage::Traffic(t) => t.records.suite(),
            Stage::Gone => return None,
        }
        .suite();
        openssl_name(suite)
    }

    /// The ALPN protocol agreed on, if any.
    pub fn alpn(&self) -> Option<&[u8]> {
        match &self.stage {
            Stage::Handshake(conn, _) => conn.alpn_protocol(),
            Stage::Traffic(t) => t.alpn,
            Stage::Gone => None,
        }
    }

    /// Whether this connection resumed an earlier session.
    pub fn resumed(&self) -> bool {
        match &self.stage {
            Stage::Handshake(conn, _) => {
                conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
            }
            Stage::Traffic(t) => t.resumed,
            Stage::Gone => false,
        }
    }
}

/// Runs rustls's handshake on what came in; `Ok(true)` if the client
/// sent close_notify.
///
/// rustls sees one more complete record each time it wants more, and none
/// once the handshake is done: every record after the client's Finished
/// is left in `incoming` for brisk's record layer, however TCP cut the
/// stream. Were rustls to read a KeyUpdate(update_requested) that came in
/// the same read as the Finished, it would queue its own KeyUpdate for
/// its next write, which the hand-over drops
/// (`dangerous_into_kernel_connection` checks only the records already
/// made), and brisk's records would follow under keys the client never
/// learnt (RFC 8446 §4.6.3).
fn drive(
    conn: &mut UnbufferedServerConnection,
    incoming: &mut Vec<u8>,
    plaintext: &mut Vec<u8>,
    out: &mut Vec<u8>,
    got: &mut Received,
    fed: &mut u32,
    early: &mut u16,
) -> Result<bool, rustls::Error> {
    let mut peer_closed = false;
    // The bytes of `incoming` rustls may see (`seen`): whole records (and
    // the start of one still arriving), from the front. What it has read
    // but not discarded (a handshake message still incomplete) stays in
    // front, and it goes on from where it was: it must see at least that
    // much again (it would index past a shorter slice). `whole` is where
    // the whole records shown end: the start of the record still
    // arriving, if one was shown. Only it is a record's start past the
    // front: rustls joins the pieces of a handshake message in place,
    // over the headers of the records that carried them.
    let mut seen = (*fed as usize).min(incoming.len());
    let mut whole = seen;
    // Each turn consumes input or produces output; the bound is only a
    // guard (a flight plus its records is far fewer turns).
    for _ in 0..MAX_STEPS + incoming.len() / 5 {
        if seen == 0 && conn.is_handshaking() {
            (seen, whole) = next_record(conn, incoming, 0, out)?;
        }
        let mut blocked = false;
        let UnbufferedStatus { mut discard, state } =
            conn.process_tls_records(&mut incoming[..seen]);
        let state = match state {
            Ok(state) => state,
            Err(e) => {
                drain(incoming, discard);
                return Err(e);
            }
        };
        // (An error after some records were read: those are discarded
        // first, as rustls counts on for the alert, [`flush_alert`].)
        let mut failed = Ok(());
        let more = match state {
            // Application data that came with the client's Finished.
            ConnectionState::ReadTraffic(mut traffic) => {
                while let Some(record) = traffic.next_record() {
                    let record = match record {
                        Ok(record) => record,
                        Err(e) => {
                            failed = Err(e);
                            break;
                        }
                    };
                    discard += record.discard;
                    plaintext.extend_from_slice(record.payload);
                    got.plaintext += record.payload.len();
                }
                true
            }
            ConnectionState::EncodeTlsData(mut encode) => {
                failed = encode_into(out, |buf| encode.encode(buf).map_err(encode_size));
                true
            }
            // What was encoded is in `out`, which the caller writes
            // before anything later: it counts as sent.
            ConnectionState::TransmitTlsData(transmit) => {
                transmit.done();
                true
            }
            ConnectionState::PeerClosed => {
                peer_closed = true;
                true
            }
            // Needs more bytes (the next record, below), or has nothing
            // more to do with them.
            ConnectionState::BlockedHandshake => {
                blocked = true;
                false
            }
            ConnectionState::WriteTraffic(_) | ConnectionState::Closed => false,
            // 0-RTT is off (max_early_data_size = 0).
            ConnectionState::ReadEarlyData(_) => {
                return Err(rustls::Error::General("unexpected early data".into()))
            }
            _ => false,
        };
        drain(incoming, discard);
        failed?;
        seen -= discard.min(seen);
        whole -= discard.min(whole);
        let skipped = skipped_early_data(conn, &incoming[..seen]);
        if skipped {
            // Gone past for good: shown again, rustls would try it again
            // and count it again against what it skips. (Counted here
            // too, against the same limit, for a record that was all
            // zeros before rustls saw it.)
            let payload = u16::try_from(seen - 5).unwrap_or(u16::MAX);
            *early = early.saturating_add(payload);
            if usize::from(*early) > MAX_PLAINTEXT {
                return Err(rustls::Error::DecryptError);
            }
            drain(incoming, seen);
            (seen, whole) = (0, 0);
        }
        if (blocked || skipped) && conn.is_handshaking() && seen < incoming.len() {
            // (From the start of the record rustls saw part of, when it
            // had not fully arrived then: that record, whole.)
            (seen, whole) = next_record(conn, incoming, whole, out)?;
            continue;
        }
        if !more {
            // (Shown again from there: rustls read no record that had
            // not fully arrived.)
            *fed = u32::try_from(whole).unwrap_or(u32::MAX);
            return Ok(peer_closed);
        }
    }
    Err(rustls::Error::General(
        "too many TLS steps for one read".into(),
    ))
}

/// Whether `kept`, what rustls was shown and did not discard, is one
/// whole record of rejected 0-RTT data that rustls tried and skipped (RFC 8446
/// §4.2.10: the server skips the records it cannot decrypt, up to a
/// limit, 16 KiB in rustls, where the client offered early data and it
/// was not accepted). rustls says nothing of it: it discards a skipped
/// record only with a message after it in the same slice, and sees it
/// again (trying it again, and counting it again) at each later call,
/// however many records follow one by one ([`drive`]): some 5 KiB of
/// early data then went past the limit.
///
/// A record rustls decrypted (the start of a Finished split into
/// records, which rustls keeps and must see again) has its plaintext in
/// place, which ends with a content type that is not 0 (§5.4); one it
/// could not decrypt has no plaintext: ring zeroes what it opened when
/// the tag does not match, and a record too short for a tag is not
/// opened. (Should a provider leave the bytes, the record is shown
/// again, as before.)
fn skipped_early_data(conn: &UnbufferedServerConnection, kept: &[u8]) -> bool {
    const APPLICATION_DATA: u8 = 23;
    const TAG: usize = 16;
    let Some((&[kind, _, _, hi, lo], payload)) = kept.split_first_chunk::<5>() else {
        return false;
    };
    kind == APPLICATION_DATA
        && usize::from(u16::from_be_bytes([hi, lo])) == payload.len()
        && conn.is_handshaking()
        && conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3)
        && payload[..payload.len().saturating_sub(TAG)]
            .iter()
            .all(|&b| b == 0)
}

/// Largest fragment of a record in plaintext (RFC 8446 §5.1).
const MAX_PLAINTEXT: usize = 1 << 14;

/// The record that starts `from` bytes into `incoming`, which rustls is
/// to see next: where the bytes to show it end, and where the whole
/// records among them end (`from` while that record has not fully
/// arrived; its header says how long it is, RFC 8446 §5.1).
///
/// A plaintext record over 2^14 bytes while nothing is encrypted yet (a
/// ClientHello in one record too large, which rustls takes) is refused:
/// the connection ends with a record_overflow alert, in plaintext, as
/// §5.1 requires, and `incoming` keeps only what rustls read before it
/// (which it must be shown again for its alert, [`flush_alert`]). So is
/// a first handshake message that is not a ClientHello (§4.1.2), with
/// unexpected_message (§6): rustls reads the bodies of some types
/// (compressed_certificate, message_hash) before it looks at the type,
/// and says decode_error when they do not parse. (Once a version is
/// chosen, rustls checks its records itself, and only it has the keys an
/// alert would need.)
fn next_record(
    conn: &UnbufferedServerConnection,
    incoming: &mut Vec<u8>,
    from: usize,
    out: &mut Vec<u8>,
) -> Result<(usize, usize), rustls::Error> {
    use rustls::{AlertDescription as A, InvalidMessage as M};
    const HANDSHAKE: u8 = 22;
    const APPLICATION_DATA: u8 = 23;
    const CLIENT_HELLO: u8 = 1;
    let Some(&[kind, _, _, hi, lo]) = incoming.get(from..from + 5) else {
        return Ok((incoming.len(), from));
    };
    let len = usize::from(u16::from_be_bytes([hi, lo]));
    // (Nothing kept and no version yet: `from` is 0 at the first message.)
    let first = match incoming.get(5) {
        Some(&typ) if from == 0 && kind == HANDSHAKE && len > 0 => typ,
        _ => CLIENT_HELLO,
    };
    let refused = match () {
        _ if conn.protocol_version().is_some() => None,
        _ if kind != APPLICATION_DATA && len > MAX_PLAINTEXT => {
            Some((A::RecordOverflow, M::MessageTooLarge))
        }
        _ if first != CLIENT_HELLO => Some((
            A::UnexpectedMessage,
            M::UnexpectedMessage("a first message other than a ClientHello"),
        )),
        _ => None,
    };
    if let Some((alert, e)) = refused {
        incoming.truncate(from);
        plaintext_alert(alert, out);
        return Err(rustls::Error::InvalidMessage(e));
    }
    let end = from + 5 + len;
    Ok(match end <= incoming.len() {
        true => (end, end),
        false => (incoming.len(), from),
    })
}

/// After an error: the fatal alert rustls queued, if any, into `out`,
/// with what it queued before it in the step that failed.
///
/// rustls hands out what it queued before it looks at the input again.
/// An error in a record (a bad MAC, garbage) comes before anything else
/// is queued: the alert is the only thing, and it is handed out in one
/// call; looking at the input again would fail again (rustls asserts
/// it sends one fatal alert at most). An error in a handshake message
/// comes after what its step queued first (the ServerHello, when no
/// ALPN protocol is common, RFC 7301 §3.2): those records, then the
/// alert, each in a call of its own; rustls remembers such an error and
/// does not send another alert. So the calls go on while they encode,
/// after a first record that is a handshake one (type 22, in
/// plaintext), and stop after one otherwise.
fn flush_alert(conn: &mut UnbufferedServerConnection, incoming: &mut Vec<u8>, out: &mut Vec<u8>) {
    const HANDSHAKE: u8 = 22;
    let start = out.len();
    for _ in 0..MAX_STEPS {
        let UnbufferedStatus { discard, state } = conn.process_tls_records(incoming);
        let encoded = match state {
            Ok(ConnectionState::EncodeTlsData(mut encode)) => {
                encode_into(out, |buf| encode.encode(buf).map_err(encode_size)).is_ok()
            }
            Ok(ConnectionState::TransmitTlsData(transmit)) => {
                transmit.done();
                false
            }
            _ => false,
        };
        drain(incoming, discard);
        if !encoded || out.get(start) != Some(&HANDSHAKE) {
            return;
        }
    }
}

/// The fatal alert rustls does not send for some errors, while nothing
/// is encrypted yet (no version chosen: the ClientHello is not whole):
/// in plaintext, an unexpected_message for a record of another type
/// inside a split ClientHello (RFC 8446 §5.1, whether both came in one
/// read or not), a decode_error for a handshake message rustls cannot
/// take (§6.2), such as one whose length says more than 64 KiB, which
/// rustls refuses as it joins its records. Later, its records would
/// need the handshake keys, which only rustls has.
fn unexpected_alert(conn: &UnbufferedServerConnection, e: &rustls::Error, out: &mut Vec<u8>) {
    if conn.protocol_version().is_some() {
        return;
    }
    match e {
        rustls::Error::PeerMisbehaved(_) => {
            plaintext_alert(rustls::AlertDescription::UnexpectedMessage, out);
        }
        rustls::Error::InvalidMessage(_) => {
            plaintext_alert(rustls::AlertDescription::DecodeError, out);
        }
        _ => {}
    }
}

/// A fatal alert in plaintext (type 21, version 0x0303, length 2, level
/// fatal), while nothing is encrypted yet.
fn plaintext_alert(alert: rustls::AlertDescription, out: &mut Vec<u8>) {
    out.extend_from_slice(&[21, 3, 3, 0, 2, 2, u8::from(alert)]);
}

/// OpenSSL's name of each suite rustls speaks (`openssl ciphers -stdname`).
fn openssl_name(suite: rustls::CipherSuite) -> Option<&'static str> {
    use rustls::CipherSuite as C;
    Some(match suite {
        C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        _ => return None,
    })
}

/// Steps of rustls's state machine one call may take (a flight, the
/// tickets, an alert): a bound, so that no state can spin a worker.
const MAX_STEPS: usize = 32;

/// The error of a call on a connection that failed before.
fn failed() -> TlsError {
    TlsError::Protocol(rustls::Error::General(
        "the TLS connection failed before".into(),
    ))
}

/// Drops the `n` bytes rustls is done with from the front of `incoming`.
fn drain(incoming: &mut Vec<u8>, n: usize) {
    incoming.drain(..n.min(incoming.len()));
}

/// `InsufficientSize` becomes the size wanted; anything else an error.
fn encode_size(e: EncodeError) -> Result<usize, rustls::Error> {
    match e {
        EncodeError::InsufficientSize(s) => Ok(s.required_size),
        e => Err(rustls::Error::General(e.to_string())),
    }
}

/// Runs `write` on free space at the end of `out`, growing it to the size
/// `write` asks for (`Err(Ok(size))`) once; keeps what it wrote.
fn encode_into(
    out: &mut Vec<u8>,
    mut write: impl FnMut(&mut [u8]) -> Result<usize, Result<usize, rustls::Error>>,
) -> Result<(), rustls::Error> {
    let start = out.len();
    let mut room = 1024;
    for _ in 0..2 {
        out.resize(start + room, 0);
        match write(&mut out[start..]) {
            Ok(n) => {
                out.truncate(start + n);
                return Ok(());
            }
            Err(Ok(need)) if need > room => room = need,
            Err(Ok(_)) => {
                out.truncate(start);
                return Err(rustls::Error::General("record encoding failed".into()));
            }
            Err(Err(e)) => {
                out.truncate(start);
                return Err(e);
            }
        }
    }
    out.truncate(start);
    Err(rustls::Error::General(
        "record encoding needs more room than it said".into(),
    ))
}

/// What the first bytes of a connection are.
#[derive(Debug, PartialEq, Eq)]
enum First {
    /// TLS, or at least not HTTP: rustls judges.
    Tls,
    /// An HTTP request line.
    Http,
    /// Upper-case letters so far: a method whose end has not come yet.
    TooShort,
}

/// A TLS record starts with its content type, 22 for the ClientHello's
/// handshake record (RFC 8446 §5.1); an HTTP request with a method, an
/// upper-case token of 3 to 7 letters and a space (`GET `, `OPTIONS `).
fn sniff(first: &[u8]) -> First {
    const LONGEST: usize = 7;
    let letters = first
        .iter()
        .take(LONGEST + 1)
        .take_while(|b| b.is_ascii_uppercase())
        .count();
    match first.get(letters) {
        Some(b' ') if letters >= 3 => First::Http,
        None if letters > 0 && letters <= LONGEST => First::TooShort,
        _ => First::Tls,
    }
}

#[cfg(test)]
mod tests;
