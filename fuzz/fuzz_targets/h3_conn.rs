//! Feeds arbitrary bytes to one HTTP/3 connection's streams
//! (`brisk::h3::conn`): the first byte picks how the rest is cut and
//! which stream each piece goes to (client unidirectional streams 2, 6,
//! 10, 14; request streams 0, 4, 8), the low bit of each cut whether the
//! stream ends there. Beyond "never panics": a request's body is never
//! more than what its stream carried, a head is told before any of its
//! body, and nothing is told for a stream after its end or failure.

#![no_main]

use std::collections::HashMap;

use brisk::h3::conn::{Conn, Limits, RequestEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let mut c = Conn::new(Limits {
        retry_above: 0,
        max_field_section_size: 512,
    });
    let mut c_out = Vec::new();
    c.control_stream(&mut c_out);
    // Per request stream: bytes fed, body told, head told, done.
    let mut seen: HashMap<u64, (usize, usize, bool, bool)> = HashMap::new();
    for (n, piece) in rest.chunks(cut as usize % 32 + 1).enumerate() {
        let pick = piece[0] as usize;
        let fin = pick & 1 == 1;
        let body = &piece[1..];
        if pick & 2 == 0 {
            let id = [2u64, 6, 10, 14][(pick >> 2) % 4];
            if c.uni(id, body, fin).is_err() {
                return;
            }
            continue;
        }
        let id = [0u64, 4, 8][(pick >> 2) % 3];
        let state = seen.entry(id).or_default();
        if state.3 {
            continue;
        }
        state.0 += body.len();
        let (fed, told_body, head, _) = *state;
        let mut told = told_body;
        let mut has_head = head;
        let mut ended = false;
        let r = c.request_data(id, body, fin, &mut |ev| match ev {
            RequestEvent::Head { .. } => {
                assert!(!has_head, "one head a request");
                has_head = true;
            }
            RequestEvent::Body(b) => {
                assert!(has_head, "body before its head");
                told += b.len();
                assert!(told <= fed, "more body than bytes ({n})");
            }
            RequestEvent::End(_) => ended = true,
        });
        *state = (fed, told, has_head, fin || ended || r.is_err());
        if r.is_err() {
            // (A connection error ends it all; a stream's, the stream.)
            if matches!(r, Err(brisk::h3::conn::Failure::Connection(_))) {
                return;
            }
        }
    }
});
