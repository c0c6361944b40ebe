//! Feeds arbitrary bytes to a TLS server connection (`brisk::tls::conn`),
//! in pieces, as a socket would: before any handshake (ClientHellos,
//! plain HTTP, garbage), and, when the first byte is odd, after a real
//! handshake with an in-memory rustls client (TLS 1.2 when its bit 2 is
//! set), so that the bytes hit brisk's record layer (`brisk::tls::record`):
//! as raw ciphertext (bad MACs, garbage headers), or, when bit 1 is set,
//! as records the client seals with its real keys, each piece's first
//! byte its content type (alerts, handshake messages, KeyUpdates, empty
//! and oversized contents) so that the fuzzer reaches what is behind the
//! MAC. The connection's keys are dropped at rest now and then. When
//! the first byte is even and bit 1 is set, a real client's ClientHello
//! comes first, in handshake records of 1 to 32 bytes, each piece's
//! bytes changed by the input's (XOR: zeros leave it as it was), in
//! reads of one record or of several: rustls joins such pieces in place,
//! which the record boundaries brisk keeps must not lose.
//! Beyond "never panics": no plaintext before a handshake, and nothing
//! is ever called on rustls again after an error.

#![no_main]

use std::time::{Duration, Instant};

use brisk::tls::conn::TlsConn;
use brisk::tls::record::Records;
use libfuzzer_sys::fuzz_target;

#[path = "tls_common.rs"]
mod tls_common;

/// A server connection after a full handshake with a rustls client, and
/// the client's record layer.
fn established(
    tls12: bool,
    incoming: &mut Vec<u8>,
    plaintext: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> (TlsConn, Records) {
    let mut client = tls_common::client(tls12);
    let mut server = TlsConn::new(
        tls_common::config(),
        Instant::now(),
        Duration::from_secs(10),
        None,
    )
    .expect("server");
    for _ in 0..10 {
        while client.wants_write() {
            client.write_tls(incoming).expect("client writes");
        }
        server.receive(incoming, plaintext, out).expect("handshake");
        let mut rd = &out[..];
        while !rd.is_empty() {
            client.read_tls(&mut rd).expect("client reads");
            client.process_new_packets().expect("client accepts");
        }
        out.clear();
        if !server.is_handshaking() && !client.is_handshaking() {
            break;
        }
    }
    let suite = client.negotiated_cipher_suite().expect("suite");
    let secrets = client.dangerous_extract_secrets().expect("client keys");
    let peer = Records::from_secrets(secrets, suite).expect("client records");
    (server, peer)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let (mut incoming, mut plaintext, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let (mut conn, mut peer) = if mode & 1 == 1 {
        let (conn, peer) = established(mode & 4 != 0, &mut incoming, &mut plaintext, &mut out);
        (conn, Some(peer))
    } else {
        let conn = TlsConn::new(
            tls_common::config(),
            Instant::now(),
            Duration::from_secs(10),
            None,
        )
        .expect("server");
        (conn, None)
    };
    let seal = mode & 2 != 0;
    let handshaking = conn.is_handshaking();
    let mut failed = false;
    if peer.is_none() && seal {
        let mut client = tls_common::client(mode & 4 != 0);
        let mut hello = Vec::new();
        client.write_tls(&mut hello).expect("hello");
        let mut pieces = hello.get(5..).unwrap_or_default();
        while let (Some((&len, tail)), false) = (rest.split_first(), pieces.is_empty()) {
            let n = (usize::from(len % 32) + 1).min(pieces.len());
            let (piece, more) = pieces.split_at(n);
            let edits = &tail[..n.min(tail.len())];
            incoming.extend_from_slice(&[22, 3, 1, 0, n as u8]);
            incoming.extend(
                piece
                    .iter()
                    .zip(edits.iter().chain(std::iter::repeat(&0)))
                    .map(|(a, b)| a ^ b),
            );
            (pieces, rest) = (more, &tail[edits.len()..]);
            if len & 0x80 == 0 && !pieces.is_empty() {
                continue;
            }
            match conn.receive(&mut incoming, &mut plaintext, &mut out) {
                Ok(_) => assert!(!failed, "a call after an error succeeded"),
                Err(_) => failed = true,
            }
        }
    }
    // Pieces of 1 to 256 bytes, each length taken from the input.
    while let Some((&len, tail)) = rest.split_first() {
        let n = (usize::from(len) + 1).min(tail.len());
        match (&mut peer, tail[..n].split_first()) {
            (Some(peer), Some((&typ, content))) if seal => {
                // A piece of 255 bytes stands for the largest record and
                // one byte more.
                let content = match len {
                    255 => &[0u8; 16 * 1024 + 1][..],
                    _ => content,
                };
                let _ = peer.seal(typ, content, &mut incoming);
            }
            _ => incoming.extend_from_slice(&tail[..n]),
        }
        rest = &tail[n..];
        if len % 7 == 0 {
            conn.rest();
        }
        match conn.receive(&mut incoming, &mut plaintext, &mut out) {
            Ok(_) => assert!(!failed, "a call after an error succeeded"),
            Err(_) => failed = true,
        }
        if handshaking && conn.is_handshaking() {
            assert!(plaintext.is_empty(), "plaintext before the handshake");
        }
        if conn
            .send(b"HTTP/1.1 200 OK\r\n\r\n", &mut incoming, &mut out)
            .is_ok()
        {
            assert!(!failed, "a send after an error succeeded");
        }
    }
    conn.close_notify(&mut incoming, &mut out);
});
