//! Feeds arbitrary bytes, after the client preface, to an HTTP/2 server
//! connection (`brisk::h2::Conn`), cut into pieces where the first byte
//! says, answering every request with a small body as the engine would.
//! Beyond "never panics": every byte is consumed once or left for more
//! input, what the connection queues stays bounded by what it was fed,
//! and nothing is read after a connection error.

#![no_main]

use std::time::Instant;

use brisk::h2::{hpack, Conn, Event, Limits, PREFACE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let limits = Limits {
        max_concurrent_streams: 4,
        max_resets: 8,
        max_control_frames: 16,
        max_empty_frames: 16,
        max_continuations: 4,
        max_header_list_size: 1024,
        ..Limits::default()
    };
    let now = Instant::now();
    let mut conn = Conn::new(limits, now);
    let mut input = PREFACE.to_vec();
    let mut out = Vec::new();
    let step = (cut as usize % 64) + 1;
    let mut fed = 0;
    for piece in rest.chunks(step) {
        input.extend_from_slice(piece);
        fed += piece.len();
        let mut pos = 0;
        loop {
            match conn.read(&input, &mut pos, now) {
                Event::Stall => break,
                Event::Close => {
                    assert!(conn.failed());
                    let mut p = pos;
                    assert_eq!(conn.read(&input, &mut p, now), Event::Stall);
                    return;
                }
                Event::Request { stream, end_stream } => {
                    let mut block = Vec::new();
                    hpack::encode_status(200, &mut block);
                    hpack::encode_field(b"content-length", b"3", &mut block);
                    conn.send_headers(stream, &block, false);
                    if end_stream && conn.sendable(stream) >= 3 {
                        conn.send_data(stream, b"abc", true);
                    }
                }
                Event::Data { stream, data, .. } => conn.release(stream, data.len()),
                Event::Reset { .. } | Event::GoAway => {}
            }
        }
        assert!(pos <= input.len());
        input.drain(..pos);
        conn.drain_out(&mut out);
        // Control answers (acks, resets, 431s, window updates) are
        // bounded by the frames that caused them.
        assert!(
            out.len() <= 1024 + 64 * fed,
            "{} bytes queued for {fed} fed",
            out.len()
        );
    }
});
