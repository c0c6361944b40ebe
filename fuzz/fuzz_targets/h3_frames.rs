//! Feeds an arbitrary stream to HTTP/3's frame reader (`brisk::h3::frame`),
//! cut into pieces as the first byte says, and every SETTINGS payload it
//! finds to the SETTINGS parser. Beyond "never panics": the same bytes
//! read the same however they are cut, DATA is never more than what came,
//! and no whole frame is larger than its bound.

#![no_main]

use brisk::h3::frame::{parse_settings, Event, Reader, HEADERS, MAX_CONTROL_PAYLOAD, SETTINGS};
use libfuzzer_sys::fuzz_target;

const MAX_HEADERS: usize = 1024;

/// What `input` reads as in pieces of `step`: the events, and the error
/// it stopped at.
fn read(input: &[u8], step: usize) -> (Vec<(u64, Vec<u8>)>, Option<brisk::h3::Error>) {
    let mut r = Reader::new(MAX_HEADERS);
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    for piece in input.chunks(step) {
        let fed = r.feed(piece, &mut |ev| {
            match ev {
                // (DATA pieces joined: their cuts follow the input's.)
                Event::Data(d) => match out.last_mut() {
                    Some((u64::MAX, buf)) => buf.extend_from_slice(d),
                    _ => out.push((u64::MAX, d.to_vec())),
                },
                Event::Frame(kind, payload) => {
                    let max = if kind == HEADERS {
                        MAX_HEADERS
                    } else {
                        MAX_CONTROL_PAYLOAD
                    };
                    assert!(payload.len() <= max);
                    if kind == SETTINGS {
                        let _ = parse_settings(payload);
                    }
                    out.push((kind, payload.to_vec()));
                }
                // (A HEADERS frame over the bound: skipped, unread.)
                Event::TooLarge => out.push((u64::MAX - 1, Vec::new())),
            }
            Ok(())
        });
        if let Err(e) = fed {
            return (out, Some(e));
        }
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let whole = read(rest, rest.len().max(1));
    let pieces = read(rest, cut as usize + 1);
    assert_eq!(whole, pieces);
    let data: usize = whole
        .0
        .iter()
        .filter(|e| e.0 == u64::MAX)
        .map(|e| e.1.len())
        .sum();
    assert!(data <= rest.len());
});
