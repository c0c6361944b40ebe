//! HTTP/2 across a reload (SIGHUP) and a graceful stop (SIGTERM), issue
//! #25: the GOAWAY comes in two steps (RFC 9113 §6.8), so that requests
//! already on the wire are served. Raw h2c clients, frames checked byte
//! for byte.

#![cfg(feature = "http2")]

mod common;

use brisk::h2::frame::{self, flag, kind};
use brisk::h2::{ErrorCode, GOAWAY_PING};
use common::h2::H2;
use common::*;

/// The payload of a GOAWAY NO_ERROR naming `last`, without debug data.
fn goaway_payload(last: u32) -> Vec<u8> {
    let mut p = last.to_be_bytes().to_vec();
    p.extend_from_slice(&(ErrorCode::NoError as u32).to_be_bytes());
    p
}

/// A PING with `data`, or its answer (`ack`).
fn ping(data: &[u8], ack: bool) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_head(&mut out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    out.extend_from_slice(data);
    out
}

/// A connection with one stream answered; then `sig`; then requests on
/// streams 3, 5 and 7 sent right after the first GOAWAY arrives (as if
/// already on the wire when the server sent it), and the PING after it
/// answered (`pong`) or not: every one of them is answered, and the
/// final GOAWAY names stream 7.
fn requests_after_the_first_goaway_are_served(sig: i32, pong_it: bool) {
    let mut b = Builder::new();
    b.file("index.html", b"<h1>hi</h1>\n");
    let s = b.start();
    let mut c = H2::connect(s.addr(), &[], 0);
    let first = c.get("/index.html", &[]);
    assert_eq!(c.answers(&[first])[0].status(), "200");
    s.signal(sig);
    let goaway = loop {
        let f = c.frame().expect("a GOAWAY");
        if f.kind == kind::GOAWAY {
            break f;
        }
    };
    // The first GOAWAY names 2^31-1, and a PING follows it at once.
    assert_eq!(
        (goaway.flags, goaway.stream, goaway.payload),
        (0, 0, goaway_payload(0x7fff_ffff))
    );
    let goaway_ping = c.frame().expect("the PING after the GOAWAY");
    assert_eq!(
        (
            goaway_ping.kind,
            goaway_ping.flags,
            goaway_ping.stream,
            goaway_ping.payload.as_slice()
        ),
        (kind::PING, 0, 0, &b"goaway!\0"[..])
    );
    assert_eq!(GOAWAY_PING, *b"goaway!\0");
    let ids: Vec<u32> = (0..3).map(|_| c.get("/index.html", &[])).collect();
    assert_eq!(ids, [3, 5, 7]);
    if pong_it {
        c.send(&self::ping(&goaway_ping.payload, true));
    }
    // Every frame until the server closes: the answers (the protocol
    // frames them), and the final GOAWAY naming the last of them.
    let (mut answers, mut goaways) = (vec![(String::new(), Vec::new()); 3], Vec::new());
    while let Some(f) = c.frame() {
        let i = ids.iter().position(|&id| id == f.stream);
        match (f.kind, i) {
            (kind::HEADERS, Some(i)) => {
                let status = f.fields.iter().find(|(n, _)| n == ":status");
                answers[i].0 = status.map(|(_, v)| v.clone()).unwrap_or_default();
            }
            (kind::DATA, Some(i)) => answers[i].1.extend_from_slice(&f.payload),
            (kind::GOAWAY, _) => goaways.push((f.flags, f.stream, f.payload)),
            (kind::SETTINGS | kind::WINDOW_UPDATE, None) => {}
            (kind, _) => panic!("frame {kind} on stream {}", f.stream),
        }
    }
    for (id, (status, body)) in ids.iter().zip(&answers) {
        assert_eq!(
            (status.as_str(), body.as_slice()),
            ("200", &b"<h1>hi</h1>\n"[..]),
            "stream {id}"
        );
    }
    assert_eq!(goaways, [(0, 0, goaway_payload(7))]);
}

#[test]
fn requests_sent_after_a_reloads_first_goaway_are_served() {
    requests_after_the_first_goaway_are_served(libc::SIGHUP, true);
}

#[test]
fn requests_sent_after_a_stops_first_goaway_are_served_without_a_ping_answer() {
    // (A client that never answers the PING: the final GOAWAY comes
    // after GOAWAY_WAIT.)
    requests_after_the_first_goaway_are_served(libc::SIGTERM, false);
}
