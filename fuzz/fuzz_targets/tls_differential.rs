//! Differential: the same records, sealed with a real client's keys after
//! a real handshake, go to rustls's own `ServerConnection` (its record
//! layer) and to brisk's (`brisk::tls::record`), and both must make the
//! same of them: the same plaintext, the same end (an error or not), and
//! the same alert, as the client reads it.
//!
//! The first byte picks TLS 1.2 (bit 0) or 1.3; then pieces, each a
//! length byte, a content type and the content (a length of 255 stands
//! for a record of 2^14 + 1 bytes; a length that is a multiple of 13
//! has one byte of its record flipped, a bad MAC). brisk's side here has
//! the keys alone (`Records::mirrored`), not rustls's key schedule: a
//! KeyUpdate, which needs it, ends the comparison, as does the first
//! error, and so does a content type TLS does not define (brisk answers
//! unexpected_message, as the RFCs say; rustls decode_error). Where
//! rustls ends the connection without an alert, brisk may send one.

#![no_main]

use brisk::tls::record::Records;
use libfuzzer_sys::fuzz_target;

#[path = "tls_common.rs"]
mod tls_common;

/// Content types (RFC 8446 §5.1).
const CHANGE_CIPHER_SPEC: u8 = 20;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;
/// A TLS 1.3 KeyUpdate's message type (§4.6.3).
const KEY_UPDATE: u8 = 24;

/// A rustls client and server after a handshake in memory; the client's
/// tickets and the like read.
fn handshake(tls12: bool) -> (rustls::ClientConnection, rustls::ServerConnection) {
    let mut client = tls_common::client(tls12);
    let mut server = rustls::ServerConnection::new(tls_common::config()).expect("server");
    for _ in 0..10 {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).expect("client writes");
        }
        let mut rd = &wire[..];
        while !rd.is_empty() {
            server.read_tls(&mut rd).expect("server reads");
            server.process_new_packets().expect("server accepts");
        }
        let mut wire = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut wire).expect("server writes");
        }
        let mut rd = &wire[..];
        while !rd.is_empty() {
            client.read_tls(&mut rd).expect("client reads");
            client.process_new_packets().expect("client accepts");
        }
        if !server.is_handshaking() && !client.is_handshaking() && !server.wants_write() {
            break;
        }
    }
    (client, server)
}

/// What the client reads of `out`: the alert in it, if any.
fn alert_in(reader: &mut Records, out: &[u8]) -> Option<rustls::AlertDescription> {
    let (mut incoming, mut plain, mut answer) = (out.to_vec(), Vec::new(), Vec::new());
    match reader.receive(&mut incoming, &mut plain, &mut answer) {
        Err(rustls::Error::AlertReceived(a)) => Some(a),
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let tls12 = mode & 1 == 1;
    let (client, mut theirs) = handshake(tls12);
    let suite = client.negotiated_cipher_suite().expect("suite");
    let secrets = client.dangerous_extract_secrets().expect("client keys");
    let mut sealer = Records::from_secrets(secrets, suite).expect("client records");
    let mut ours = sealer.mirrored();
    // The client's view twice, to read each server's answer from the
    // same point.
    let (mut read_theirs, mut read_ours) = (ours.mirrored(), ours.mirrored());
    while let Some((&len, tail)) = rest.split_first() {
        let n = (usize::from(len) + 1).min(tail.len());
        let Some((&typ, content)) = tail[..n].split_first() else {
            return;
        };
        rest = &tail[n..];
        let big = [0u8; 16 * 1024 + 1];
        let content = if len == 255 { &big[..] } else { content };
        if !(CHANGE_CIPHER_SPEC..=APPLICATION_DATA).contains(&typ) {
            // A type TLS does not define: brisk answers unexpected_message
            // as RFC 8446 §5 and RFC 5246 §6 say; rustls decode_error.
            return;
        }
        if !tls12 && typ == HANDSHAKE && content.contains(&KEY_UPDATE) {
            // (Perhaps a KeyUpdate, perhaps not: either way beyond what
            // brisk's keys-alone side can follow.)
            return;
        }
        let mut wire = Vec::new();
        if sealer.seal(typ, content, &mut wire).is_err() {
            return;
        }
        // (A bit of the header's type or version changed: see below.)
        let mut flipped = None;
        if len % 13 == 0 && !wire.is_empty() {
            let at = usize::from(len) % wire.len();
            wire[at] ^= 0x40;
            flipped = Some(at);
        }
        let retyped = flipped == Some(0);
        // rustls.
        let mut rd = &wire[..];
        let mut theirs_failed = false;
        while !rd.is_empty() && !theirs_failed {
            match theirs.read_tls(&mut rd) {
                Ok(0) | Err(_) => theirs_failed = true,
                Ok(_) => theirs_failed = theirs.process_new_packets().is_err(),
            }
        }
        let mut theirs_plain = Vec::new();
        let _ = std::io::Read::read_to_end(&mut theirs.reader(), &mut theirs_plain);
        let mut theirs_out = Vec::new();
        while theirs.wants_write() {
            if theirs.write_tls(&mut theirs_out).is_err() {
                break;
            }
        }
        // brisk.
        let (mut incoming, mut ours_plain, mut ours_out) = (wire.clone(), Vec::new(), Vec::new());
        let got = ours.receive(&mut incoming, &mut ours_plain, &mut ours_out);
        if !tls12 && flipped == Some(2) {
            // TLS 1.3's AAD is the header as received (RFC 8446 §5.2):
            // brisk fails the record; rustls builds its AAD with 3,3
            // whatever the header says.
            assert!(got.is_err(), "a changed version read: {got:?}");
            return;
        }
        assert_eq!(ours_plain, theirs_plain, "the same plaintext");
        let refused =
            matches!(&got, Err(rustls::Error::General(m)) if m == "unexpected handshake message");
        let early = typ == CHANGE_CIPHER_SPEC && got.is_err();
        if (typ == HANDSHAKE && refused || early) && !theirs_failed {
            // (A change_cipher_spec is refused from its header's first
            // byte; rustls waits for the record to be whole, which a
            // changed length may put off.)
            // A message no server takes after the handshake (a
            // HelloRequest), then the start of another in the same
            // record: brisk refuses the first once it is whole, rustls
            // judges none before the record's last is whole.
            return;
        }
        let (a, b) = (
            alert_in(&mut read_ours, &ours_out),
            alert_in(&mut read_theirs, &theirs_out),
        );
        let refusal = got.is_ok() || a == Some(rustls::AlertDescription::NoRenegotiation);
        if tls12 && typ == HANDSHAKE && content.first() == Some(&1) && refusal {
            // A ClientHello after a TLS 1.2 handshake: brisk refuses the
            // renegotiation (a no_renegotiation warning, fatal the second
            // time, RFC 5746 §4.4) without reading the hello; rustls
            // parses it first, and ends the connection when it does not
            // parse.
            return;
        }
        assert_eq!(got.is_err(), theirs_failed, "the same end: {got:?}");
        // A change_cipher_spec after the handshake: brisk refuses the
        // type (unexpected_message, RFC 5246 §7.1), rustls parses its
        // body first (decode_error when it is not the one byte 1). An
        // empty alert: brisk says unexpected_message (no alert fragment
        // is empty, RFC 5246 §6.2.1, as tlsfuzzer expects), rustls
        // decode_error. A handshake message of a type a server never
        // takes after the handshake: brisk judges the type first
        // (unexpected_message), rustls parses the body first.
        // rustls ends some misbehaviour without an alert (a
        // `PeerMisbehaved` error, a handshake message too long): brisk
        // may say which alert, as RFC 8446 §6.2 asks.
        // A TLS 1.3 alert of warning level other than user_canceled:
        // brisk takes it as the error it is (RFC 8446 §6, "regardless of
        // the AlertLevel") and says nothing back; rustls answers
        // decode_error.
        let received = matches!(got, Err(rustls::Error::AlertReceived(_)));
        let silent = theirs_failed && b.is_none() || received && a.is_none();
        // A type TLS does not define in the header (a bit changed on
        // the way): brisk says unexpected_message, rustls decode_error.
        let body_first = (typ == HANDSHAKE || retyped)
            && a == Some(rustls::AlertDescription::UnexpectedMessage)
            && b == Some(rustls::AlertDescription::DecodeError);
        let either = (typ == CHANGE_CIPHER_SPEC || typ == ALERT && content.is_empty())
            && a.is_some()
            && b.is_some()
            || body_first;
        if !either && !silent {
            assert_eq!(a, b, "the same alert");
        }
        if theirs_failed || got.is_ok_and(|g| g.peer_closed) {
            return;
        }
    }
});
