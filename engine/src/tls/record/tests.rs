//! The record layer on its own, against itself with made-up keys: the
//! paths a rustls client does not take (renegotiation, oversized and
//! split records, exhausted sequence numbers, the confidentiality limit,
//! alerts of every kind). `conn/tests.rs` runs it against rustls.

use rustls::crypto::ring::cipher_suite as suites;

use super::*;

/// A server's record layer and a client's, with each other's keys.
fn pair(suite: SupportedCipherSuite, cipher: Cipher) -> (Records, Records) {
    let half = |fill: u8| Half {
        key: [fill; 32],
        iv: [fill ^ 0x55; aead::NONCE_LEN],
        seq: 0,
        live: None,
    };
    let records = |rx: u8, tx: u8| Records {
        suite,
        cipher,
        rx: half(rx),
        tx: half(tx),
        tls13: suite.tls13().is_some(),
        secrets: TrafficSecrets::NONE,
        warnings: 0,
        renegotiations: 0,
        key_updates: 0,
        empty: 0,
        pending: Vec::new(),
    };
    (records(1, 2), records(2, 1))
}

fn all() -> Vec<(SupportedCipherSuite, Cipher)> {
    vec![
        (suites::TLS13_AES_128_GCM_SHA256, Cipher::Aes128Gcm),
        (suites::TLS13_AES_256_GCM_SHA384, Cipher::Aes256Gcm),
        (
            suites::TLS13_CHACHA20_POLY1305_SHA256,
            Cipher::Chacha20Poly1305,
        ),
        (
            suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            Cipher::Aes128Gcm,
        ),
        (
            suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            Cipher::Aes256Gcm,
        ),
        (
            suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
            Cipher::Chacha20Poly1305,
        ),
    ]
}

fn tls12() -> (Records, Records) {
    pair(
        suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        Cipher::Aes128Gcm,
    )
}

fn tls13() -> (Records, Records) {
    pair(suites::TLS13_AES_128_GCM_SHA256, Cipher::Aes128Gcm)
}

/// What `from` makes of `wire`: (plaintext, out, result).
fn feed(to: &mut Records, wire: &[u8]) -> (Vec<u8>, Vec<u8>, Result<Opened, Fail>) {
    let (mut incoming, mut plain, mut out) = (wire.to_vec(), Vec::new(), Vec::new());
    let r = to.receive(&mut incoming, &mut plain, &mut out);
    (plain, out, r)
}

/// The alert a fatal `out` carries, as the peer reads it.
fn alert_in(peer: &mut Records, out: &[u8]) -> Option<AlertDescription> {
    match feed(peer, out).2 {
        Err(Error::AlertReceived(a)) => Some(a),
        _ => None,
    }
}

#[test]
fn records_carry_data_in_pieces_of_any_size_both_ways() {
    for (suite, cipher) in all() {
        let (mut s, mut c) = pair(suite, cipher);
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
        let mut wire = Vec::new();
        c.seal_data(&data, &mut wire).expect("seal");
        assert_eq!(
            wire.len(),
            data.len() + 4 * (HEADER + TAG) + {
                match (suite.tls13().is_some(), cipher) {
                    (true, _) => 4,
                    (false, Cipher::Chacha20Poly1305) => 0,
                    (false, _) => 4 * EXPLICIT,
                }
            }
        );
        // A byte at a time, as a slow socket would: records open once
        // whole, the start of one stays.
        let (mut incoming, mut plain, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for &b in &wire {
            incoming.push(b);
            s.receive(&mut incoming, &mut plain, &mut out)
                .expect("open");
            s.rest();
        }
        assert!(incoming.is_empty() && out.is_empty());
        assert_eq!(plain, data, "{suite:?}");
        // And back.
        let mut back = Vec::new();
        s.seal_data(b"answer", &mut back).expect("seal");
        s.close_notify(&mut back).expect("close");
        let (plain, _, got) = feed(&mut c, &back);
        assert_eq!(plain, b"answer");
        assert_eq!(got.map(|g| g.peer_closed), Ok(true));
    }
}

#[test]
fn a_tls12_renegotiation_is_refused_with_a_warning_then_fatally() {
    let (mut s, mut c) = tls12();
    let mut hello = Vec::new();
    c.seal(HANDSHAKE, &[CLIENT_HELLO, 0, 0, 0], &mut hello)
        .expect("seal");
    let (_, out, got) = feed(&mut s, &hello);
    assert!(got.is_ok(), "{got:?}");
    // The client reads a warning (ignored), not a fatal alert.
    let (_, _, read) = feed(&mut c, &out);
    assert!(read.is_ok(), "{read:?}");
    assert_eq!(c.warnings, 1);
    assert_eq!((s.renegotiations, s.warnings), (1, 0));
    let mut again = Vec::new();
    c.seal(HANDSHAKE, &[CLIENT_HELLO, 0, 0, 0], &mut again)
        .expect("seal");
    let (_, out, got) = feed(&mut s, &again);
    assert!(got.is_err());
    assert_eq!(
        alert_in(&mut c, &out),
        Some(AlertDescription::NoRenegotiation)
    );
}

#[test]
fn oversized_records_are_refused_before_and_after_decryption() {
    for (mut s, mut c) in [tls13(), tls12()] {
        // A header announcing more than the version allows: at once.
        let (_, out, got) = feed(&mut s, &[APPLICATION_DATA, 3, 3, 0x48, 0x01]);
        assert!(got.is_err());
        assert_eq!(
            alert_in(&mut c, &out),
            Some(AlertDescription::RecordOverflow)
        );
        // A record that authenticates but carries more than 2^14 bytes.
        let (mut s, mut c) = pair(s.suite, s.cipher);
        let mut wire = Vec::new();
        c.seal_record(APPLICATION_DATA, &[b'x'; MAX_PLAIN + 1], &mut wire)
            .expect("seal");
        let (plain, out, got) = feed(&mut s, &wire);
        assert!(got.is_err() && plain.is_empty());
        assert_eq!(
            alert_in(&mut c, &out),
            Some(AlertDescription::RecordOverflow)
        );
    }
}

#[test]
fn garbage_is_refused_from_its_first_bytes() {
    for (first, alert) in [
        (&[0x16][..], AlertDescription::UnexpectedMessage),
        (
            &[0x14, 3, 3, 0, 1, 1][..],
            AlertDescription::UnexpectedMessage,
        ),
        (&[APPLICATION_DATA, 0x47][..], AlertDescription::DecodeError),
    ] {
        let (mut s, mut c) = tls13();
        let (_, out, got) = feed(&mut s, first);
        assert!(got.is_err(), "{first:?}");
        assert_eq!(alert_in(&mut c, &out), Some(alert), "{first:?}");
    }
    // TLS 1.2 takes alerts and handshakes, not change_cipher_spec.
    let (mut s, mut c) = tls12();
    let (_, out, got) = feed(&mut s, &[0x14, 3, 3, 0, 1, 1]);
    assert!(got.is_err());
    assert_eq!(
        alert_in(&mut c, &out),
        Some(AlertDescription::UnexpectedMessage)
    );
}

#[test]
fn handshake_messages_must_be_known_and_well_formed() {
    for (body, alert) in [
        // A KeyUpdate followed by more in the same record (§5.1).
        (
            &[KEY_UPDATE, 0, 0, 1, 0, 1, 0, 0, 0][..],
            AlertDescription::UnexpectedMessage,
        ),
        (
            &[KEY_UPDATE, 0, 0, 1, 7][..],
            AlertDescription::IllegalParameter,
        ),
        (
            &[KEY_UPDATE, 0, 0, 2, 0, 0][..],
            AlertDescription::DecodeError,
        ),
        // A NewSessionTicket, from a client.
        (&[4, 0, 0, 0][..], AlertDescription::UnexpectedMessage),
        (&[][..], AlertDescription::UnexpectedMessage),
    ] {
        let (mut s, mut c) = tls13();
        let mut wire = Vec::new();
        c.seal_record(HANDSHAKE, body, &mut wire).expect("seal");
        let (_, out, got) = feed(&mut s, &wire);
        assert!(got.is_err(), "{body:?}");
        assert_eq!(alert_in(&mut c, &out), Some(alert), "{body:?}");
    }
}

#[test]
fn alerts_close_cleanly_or_fatally_and_warnings_are_bounded() {
    // close_notify: nothing after it is read.
    let (mut s, mut c) = tls13();
    let mut wire = Vec::new();
    c.close_notify(&mut wire).expect("seal");
    c.seal_data(b"after", &mut wire).expect("seal");
    let (plain, _, got) = feed(&mut s, &wire);
    assert_eq!(got.map(|g| g.peer_closed), Ok(true));
    assert!(plain.is_empty());
    // A fatal alert ends the connection, and is not answered.
    let (mut s, mut c) = tls13();
    let mut wire = Vec::new();
    c.seal(ALERT, &[FATAL, 40], &mut wire).expect("seal");
    let (_, out, got) = feed(&mut s, &wire);
    assert_eq!(
        got,
        Err(Error::AlertReceived(AlertDescription::HandshakeFailure))
    );
    assert!(out.is_empty());
    // TLS 1.2 warnings: a few are ignored.
    let (mut s, mut c) = tls12();
    let mut wire = Vec::new();
    for _ in 0..MAX_WARNINGS + 1 {
        c.seal(ALERT, &[WARNING, 100], &mut wire).expect("seal");
    }
    let (_, _, got) = feed(&mut s, &wire);
    assert!(got.is_err());
    assert_eq!(s.warnings, MAX_WARNINGS);
    // An alert of the wrong length; an empty one (no fragment of an
    // alert is empty, RFC 5246 §6.2.1), over TLS 1.3 and 1.2
    // (tlsfuzzer's "empty alert ... using application keys"); one of an
    // unknown level (as rustls answers, fuzz/tls_differential).
    for (content, alert) in [
        (&[WARNING, 0, 0][..], AlertDescription::DecodeError),
        (&[WARNING][..], AlertDescription::DecodeError),
        (&[][..], AlertDescription::UnexpectedMessage),
        // A level neither warning (1) nor fatal (2).
        (&[3, 0][..], AlertDescription::IllegalParameter),
        (&[0, 40][..], AlertDescription::IllegalParameter),
    ] {
        for (mut s, mut c) in [tls13(), tls12()] {
            let mut wire = Vec::new();
            c.seal_record(ALERT, content, &mut wire).expect("seal");
            let (_, out, got) = feed(&mut s, &wire);
            assert!(got.is_err(), "{content:?}");
            assert_eq!(alert_in(&mut c, &out), Some(alert), "{content:?}");
        }
    }
}

#[test]
fn a_bad_mac_or_a_record_too_short_is_bad_record_mac() {
    for (suite, cipher) in all() {
        let (mut s, mut c) = pair(suite, cipher);
        let mut wire = Vec::new();
        c.seal_data(b"hello", &mut wire).expect("seal");
        wire[HEADER] ^= 0x80;
        let (plain, out, got) = feed(&mut s, &wire);
        assert_eq!(got, Err(Error::DecryptError), "{suite:?}");
        assert!(plain.is_empty());
        assert_eq!(alert_in(&mut c, &out), Some(AlertDescription::BadRecordMac));
        let (mut s, mut c) = pair(suite, cipher);
        let short = [APPLICATION_DATA, 3, 3, 0, 3, 1, 2, 3];
        let (_, out, got) = feed(&mut s, &short);
        assert_eq!(got, Err(Error::DecryptError), "{suite:?}");
        assert_eq!(alert_in(&mut c, &out), Some(AlertDescription::BadRecordMac));
    }
}

#[test]
fn sequence_numbers_end_and_limits_close_or_rekey() {
    // ChaCha20's limit is the sequence's end (AES-GCM's is 2^24).
    let (mut s, mut c) = pair(
        suites::TLS13_CHACHA20_POLY1305_SHA256,
        Cipher::Chacha20Poly1305,
    );
    s.rx.seq = u64::MAX;
    let mut wire = Vec::new();
    c.rx.seq = 0;
    c.tx.seq = u64::MAX - 1;
    c.seal_data(b"x", &mut wire).expect("the last number");
    assert!(
        c.seal_data(b"y", &mut Vec::new()).is_err(),
        "no number left"
    );
    assert!(feed(&mut s, &wire).2.is_err());
    // TLS 1.2 cannot change keys: at the suite's limit, it stops.
    let (mut s, _) = tls12();
    s.tx.seq = s.confidentiality_limit();
    assert!(s.seal_data(b"x", &mut Vec::new()).is_err());
    // TLS 1.3 would change keys (here without rustls's secrets: refused
    // with an alert rather than sealed under a worn key).
    let (mut s, _) = tls13();
    s.tx.seq = s.confidentiality_limit();
    let mut out = Vec::new();
    assert!(s.seal_data(b"x", &mut out).is_err());
}

#[test]
fn empty_records_are_allowed_a_few_in_a_row() {
    let (mut s, mut c) = tls13();
    let mut wire = Vec::new();
    for _ in 0..MAX_EMPTY {
        c.seal_record(APPLICATION_DATA, b"", &mut wire)
            .expect("seal");
    }
    c.seal_data(b"x", &mut wire).expect("seal");
    for _ in 0..MAX_EMPTY {
        c.seal_record(APPLICATION_DATA, b"", &mut wire)
            .expect("seal");
    }
    let (plain, _, got) = feed(&mut s, &wire);
    assert!(got.is_ok() && plain == b"x", "{got:?}");
    let mut more = Vec::new();
    c.seal_record(APPLICATION_DATA, b"", &mut more)
        .expect("seal");
    let (_, out, got) = feed(&mut s, &more);
    assert!(got.is_err());
    assert_eq!(
        alert_in(&mut c, &out),
        Some(AlertDescription::UnexpectedMessage)
    );
}

/// §5.4: the TLSInnerPlaintext (content, type, padding) is 2^14 + 1 bytes
/// at most, checked before the padding is removed; the ciphertext is
/// 2^14 + 256 at most.
#[test]
fn padding_counts_towards_the_inner_plaintext_limit() {
    let (mut s, mut c) = tls13();
    // 2^14 bytes of data, its type, 239 bytes of padding: the ciphertext
    // is within its limit, the inner plaintext is not.
    let mut inner = vec![b'x'; MAX_PLAIN];
    inner.push(APPLICATION_DATA);
    inner.extend_from_slice(&[0; 239]);
    let mut wire = Vec::new();
    c.seal_record(0, &inner[..inner.len() - 1], &mut wire)
        .expect("seal");
    assert_eq!(wire.len(), HEADER + MAX_PLAIN + 240 + TAG);
    assert!(wire.len() - HEADER <= MAX_CIPHER_13);
    let (plain, out, got) = feed(&mut s, &wire);
    assert!(got.is_err() && plain.is_empty(), "{got:?}");
    assert_eq!(
        alert_in(&mut c, &out),
        Some(AlertDescription::RecordOverflow)
    );
    // Exactly 2^14 + 1 with padding: accepted.
    let (mut s, mut c) = tls13();
    let mut wire = Vec::new();
    let mut inner = vec![b'y'; MAX_PLAIN - 10];
    inner.push(APPLICATION_DATA);
    inner.extend_from_slice(&[0; 10]);
    c.seal_record(0, &inner[..inner.len() - 1], &mut wire)
        .expect("seal");
    let (plain, _, got) = feed(&mut s, &wire);
    assert!(got.is_ok(), "{got:?}");
    assert_eq!(plain, vec![b'y'; MAX_PLAIN - 10]);
}

/// §5.4: a TLSInnerPlaintext of zeros only has no content type: that is
/// unexpected_message (the record authenticated; its MAC was good).
#[test]
fn an_all_zero_inner_plaintext_is_unexpected_message() {
    for len in [0, 1, 100] {
        let (mut s, mut c) = tls13();
        let mut wire = Vec::new();
        // Type 0 with zeros: the inner plaintext is all zeros.
        c.seal_record(0, &vec![0; len], &mut wire).expect("seal");
        let (_, out, got) = feed(&mut s, &wire);
        assert!(matches!(got, Err(Error::General(_))), "{len}: {got:?}");
        assert_eq!(
            alert_in(&mut c, &out),
            Some(AlertDescription::UnexpectedMessage),
            "{len}"
        );
    }
}

/// §5.1: a handshake message may be split over records (none of another
/// type between them); the pieces are joined, within a bound.
#[test]
fn a_handshake_message_split_over_records_is_reassembled() {
    // A KeyUpdate in two records, then data: the keys changed.
    for cut in 1..5 {
        let (mut s, mut c) = tls13();
        let msg = [KEY_UPDATE, 0, 0, 1, 0];
        let mut wire = Vec::new();
        c.seal_record(HANDSHAKE, &msg[..cut], &mut wire)
            .expect("seal");
        c.seal_record(HANDSHAKE, &msg[cut..], &mut wire)
            .expect("seal");
        let (plain, out, got) = feed(&mut s, &wire);
        // Without rustls's secrets the update itself cannot be made:
        // what matters is that the message was whole when judged.
        assert_eq!(
            got,
            Err(Error::General("key update failed".into())),
            "cut {cut}"
        );
        assert!(plain.is_empty());
        assert_eq!(
            alert_in(&mut c, &out),
            Some(AlertDescription::InternalError)
        );
    }
    // A TLS 1.2 renegotiation ClientHello in three records: one warning.
    let (mut s, mut c) = tls12();
    let mut hello = vec![CLIENT_HELLO, 0, 0x01, 0x00];
    hello.extend_from_slice(&[7; 0x100]);
    let mut wire = Vec::new();
    for piece in hello.chunks(100) {
        c.seal(HANDSHAKE, piece, &mut wire).expect("seal");
    }
    c.seal_data(b"after", &mut wire).expect("seal");
    let (plain, out, got) = feed(&mut s, &wire);
    assert!(got.is_ok(), "{got:?}");
    assert_eq!(plain, b"after");
    assert!(s.pending.is_empty());
    let (_, _, read) = feed(&mut c, &out);
    assert!(read.is_ok(), "{read:?}");
    assert_eq!((c.warnings, s.renegotiations), (1, 1));
    // Another record between the pieces: unexpected_message.
    let (mut s, mut c) = tls13();
    let mut wire = Vec::new();
    c.seal_record(HANDSHAKE, &[KEY_UPDATE, 0], &mut wire)
        .expect("seal");
    c.seal_data(b"between", &mut wire).expect("seal");
    let (plain, out, got) = feed(&mut s, &wire);
    assert!(got.is_err() && plain.is_empty());
    assert_eq!(
        alert_in(&mut c, &out),
        Some(AlertDescription::UnexpectedMessage)
    );
    // A message longer than brisk keeps, announced in its header: refused
    // at once (decode_error, as rustls), not buffered.
    for (old, typ) in [(true, CLIENT_HELLO), (false, 22)] {
        let (mut s, mut c) = if old { tls12() } else { tls13() };
        let mut wire = Vec::new();
        c.seal(HANDSHAKE, &[typ, 1, 0, 0], &mut wire).expect("seal");
        let (_, out, got) = feed(&mut s, &wire);
        assert!(got.is_err() && s.pending.is_empty());
        assert_eq!(alert_in(&mut c, &out), Some(AlertDescription::DecodeError));
    }
}

/// rustls's counts, each its own: warning alerts (4), renegotiations
/// (1), KeyUpdates (32) between records of data; an empty record does
/// not count as data.
#[test]
fn key_updates_and_warnings_are_counted_apart_and_empty_records_reset_nothing() {
    // Empty records between KeyUpdates do not reset their count.
    let (mut s, mut c) = tls13();
    s.key_updates = MAX_KEY_UPDATES;
    let mut wire = Vec::new();
    c.seal_record(APPLICATION_DATA, b"", &mut wire)
        .expect("seal");
    c.seal_record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0], &mut wire)
        .expect("seal");
    let (_, out, got) = feed(&mut s, &wire);
    assert_eq!(got, Err(Error::General("too many KeyUpdates".into())));
    assert_eq!(
        alert_in(&mut c, &out),
        Some(AlertDescription::UnexpectedMessage)
    );
    // Data does.
    let (mut s, mut c) = tls13();
    s.key_updates = MAX_KEY_UPDATES;
    let mut wire = Vec::new();
    c.seal_data(b"d", &mut wire).expect("seal");
    let (_, _, got) = feed(&mut s, &wire);
    assert!(got.is_ok());
    assert_eq!(s.key_updates, 0);
    // A renegotiation attempt does not use up the warnings, nor they it.
    let (mut s, mut c) = tls12();
    let mut wire = Vec::new();
    for _ in 0..MAX_WARNINGS {
        c.seal(ALERT, &[WARNING, 100], &mut wire).expect("seal");
    }
    c.seal(HANDSHAKE, &[CLIENT_HELLO, 0, 0, 0], &mut wire)
        .expect("seal");
    c.seal_data(b"still here", &mut wire).expect("seal");
    let (plain, _, got) = feed(&mut s, &wire);
    assert!(got.is_ok(), "{got:?}");
    assert_eq!(plain, b"still here");
    assert_eq!((s.warnings, s.renegotiations), (MAX_WARNINGS, 1));
}

/// A seal that cannot be made leaves `out` as it was: no plaintext, no
/// half record.
#[test]
fn a_failed_seal_leaves_out_as_it_was() {
    let (mut s, _) = tls12();
    s.tx.seq = s.confidentiality_limit() - 1;
    let mut out = b"earlier".to_vec();
    // The first record is sealed, the second is past the limit.
    assert!(s.seal_data(&vec![b'p'; MAX_PLAIN + 1], &mut out).is_err());
    assert_eq!(out, b"earlier");
    let (mut s, _) = tls13();
    s.tx.seq = u64::MAX;
    let mut out = b"earlier".to_vec();
    assert!(s
        .seal_record(APPLICATION_DATA, b"secret", &mut out)
        .is_err());
    assert_eq!(out, b"earlier");
}

/// The version a record's header says is authenticated: TLS 1.3's AAD is
/// the header as received (RFC 8446 §5.2), TLS 1.2's holds the version
/// as the record says (RFC 5246 §6.2.3.3; it held 3,3 whatever the
/// record said, and such a record was read: fuzz/tls_differential, where
/// rustls answers bad_record_mac).
#[test]
fn a_record_whose_version_was_changed_fails_its_mac() {
    for (mut s, mut c) in [tls13(), tls12()] {
        let mut wire = Vec::new();
        c.seal_data(b"hello", &mut wire).expect("seal");
        wire[2] ^= 0x40;
        let (plain, out, got) = feed(&mut s, &wire);
        assert!(got.is_err() && plain.is_empty(), "{got:?}");
        assert_eq!(alert_in(&mut c, &out), Some(AlertDescription::BadRecordMac));
    }
}
