//! Each defence of `Conn`, as a byte script that goes past its budget by
//! one (and stays within it, where that shows the budget is the line).

use super::*;

impl Script {
    /// Stream 1 asked and answered: closed both ways.
    fn closed_stream_1(&mut self) {
        let mut input = Vec::new();
        headers(&mut input, 1, &get("/"), END);
        self.feed(&input);
        self.conn.send_headers(1, &[0x88], true);
        self.take();
    }
}

/// Rapid reset (CVE-2023-44487): streams opened and cancelled at once.
fn open_and_cancel(n: u32) -> (Vec<String>, Vec<Sent>) {
    made_to_reset(n, rst)
}

#[test]
fn rapid_reset_is_sent_goaway() {
    let (events, sent) = open_and_cancel(200);
    assert_eq!(
        goaway_code(&sent),
        None,
        "200 cancels are within the budget"
    );
    assert_eq!(events.len(), 400);
    let (events, sent) = open_and_cancel(201);
    assert_eq!(goaway_code(&sent), Some(ErrorCode::EnhanceYourCalm as u32));
    assert_eq!(events.last().unwrap(), "close");
    // A new window starts the count again.
    let mut s = Script::new(Limits::default());
    let mut id = 1;
    for round in 0..3 {
        let mut input = Vec::new();
        for _ in 0..150 {
            headers(&mut input, id, &get("/"), flag::END_HEADERS);
            rst(&mut input, id);
            id += 2;
        }
        assert!(!s.feed(&input), "round {round}");
        s.now += Duration::from_secs(10);
    }
}

#[test]
fn a_continuation_flood_is_sent_goaway() {
    let flood = |frames: u32, each: usize| {
        let mut s = Script::new(Limits::default());
        let mut input = Vec::new();
        headers(&mut input, 1, &get("/")[..2], 0);
        for _ in 0..frames {
            frame::write_head(&mut input, each, kind::CONTINUATION, 0, 1);
            input.extend(std::iter::repeat_n(0x82u8, each));
        }
        s.feed(&input);
        goaway_code(&s.take())
    };
    assert_eq!(flood(16, 100), None, "16 continuations are allowed");
    assert_eq!(flood(17, 100), Some(ErrorCode::EnhanceYourCalm as u32));
    // Few frames, but a block past twice the header list size.
    assert_eq!(flood(10, 14_000), Some(ErrorCode::EnhanceYourCalm as u32));
    // Empty continuations count as empty frames too.
    let mut s = Script::new(Limits {
        max_continuations: 10_000,
        ..Limits::default()
    });
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/")[..2], 0);
    for _ in 0..1001 {
        frame::write_head(&mut input, 0, kind::CONTINUATION, 0, 1);
    }
    assert!(s.feed(&input));
    assert_eq!(
        goaway_code(&s.take()),
        Some(ErrorCode::EnhanceYourCalm as u32)
    );
}

/// A header block that adds one large entry to the table and then names
/// it `refs` times.
fn bomb(refs: usize) -> Vec<u8> {
    let mut block = get("/");
    block.extend_from_slice(&[0x40, 0x01, b'x', 0x7f, 0x9e, 0x1e]); // 127 + 30 + 30 * 128 = 3997
    block.extend_from_slice(&[b'v'; 3997]);
    block.extend(std::iter::repeat_n(0xbeu8, refs));
    block
}

#[test]
fn an_hpack_bomb_gets_431_or_goaway() {
    // 20 copies of a 4 KiB field: 80 KiB decoded, over the 64 KiB list.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &bomb(20), END);
    assert!(!s.feed(&input));
    assert!(s.events.is_empty(), "no request reaches the application");
    let sent = s.take();
    assert_eq!(sent[0].kind, kind::HEADERS);
    let mut d = hpack::Decoder::new(4096);
    let mut status = Vec::new();
    d.decode(&sent[0].payload, 1 << 20, &mut |_, v| status = v.to_vec())
        .unwrap();
    assert_eq!(status, b"431");
    // 40 copies decode past twice the bound: the connection ends.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &bomb(40), END);
    assert!(s.feed(&input));
    assert_eq!(
        goaway_code(&s.take()),
        Some(ErrorCode::EnhanceYourCalm as u32)
    );
    // (Within the list size, the same block is a request.)
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 1, &bomb(5), END);
    s.feed(&input);
    assert_eq!(s.events, ["request 1 true"]);
}

fn flood_of(kind_: u8, n: usize) -> Option<u32> {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    if kind_ == kind::DATA {
        headers(&mut input, 1, &get("/"), flag::END_HEADERS);
    }
    for _ in 0..n {
        match kind_ {
            kind::SETTINGS => frame::write_settings(&mut input, &[]),
            kind::PING => {
                frame::write_head(&mut input, 8, kind::PING, 0, 0);
                input.extend_from_slice(&[1; 8]);
            }
            _ => data(&mut input, 1, b"", 0),
        }
    }
    s.feed(&input);
    goaway_code(&s.take())
}

#[test]
fn settings_ping_and_empty_data_floods_are_sent_goaway() {
    // (The script's own first SETTINGS counts among the 1000 control
    // frames, which PING and SETTINGS share.)
    for (k, budget) in [(kind::SETTINGS, 999), (kind::PING, 999), (kind::DATA, 1000)] {
        assert_eq!(flood_of(k, budget), None, "kind {k}: within the budget");
        assert_eq!(
            flood_of(k, budget + 1),
            Some(ErrorCode::EnhanceYourCalm as u32),
            "kind {k}"
        );
    }
}

#[test]
fn empty_data_on_a_body_being_dropped_is_counted_too() {
    // A body answered without it (a static file, a 405) is read and
    // dropped: its empty DATA frames spent none of its allowance and
    // were not counted, so they never ended.
    let flood = |n: usize| {
        let mut s = Script::new(Limits::default());
        let mut input = Vec::new();
        headers(&mut input, 1, &get("/"), flag::END_HEADERS);
        s.feed(&input);
        s.conn.discard_body(1, 1 << 20);
        let mut input = Vec::new();
        for _ in 0..n {
            data(&mut input, 1, b"", 0);
        }
        s.feed(&input);
        goaway_code(&s.take())
    };
    assert_eq!(flood(1000), None);
    assert_eq!(flood(1001), Some(ErrorCode::EnhanceYourCalm as u32));
}

#[test]
fn streams_over_the_concurrent_limit_are_refused() {
    let mut s = Script::new(Limits {
        max_concurrent_streams: 2,
        ..Limits::default()
    });
    let mut input = Vec::new();
    for id in [1, 3, 5] {
        headers(&mut input, id, &get("/"), END);
    }
    s.feed(&input);
    assert_eq!(s.events, ["request 1 true", "request 3 true"]);
    assert_eq!(rst_codes(&s.take()), [(5, ErrorCode::RefusedStream as u32)]);
    assert_eq!(s.conn.open_streams(), 2);
}

#[test]
fn stream_ids_are_never_used_again() {
    // A stream that ended, opened again: STREAM_CLOSED.
    let mut s = Script::new(Limits::default());
    s.closed_stream_1();
    let mut input = Vec::new();
    headers(&mut input, 1, &get("/"), END);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::StreamClosed as u32));
    // An id below one already used: PROTOCOL_ERROR.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 5, &get("/"), END);
    headers(&mut input, 3, &get("/"), END);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
    // An even id: PROTOCOL_ERROR.
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    headers(&mut input, 2, &get("/"), END);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
}

#[test]
fn frames_on_closed_streams_are_refused_and_counted() {
    let mut s = Script::new(Limits::default());
    s.closed_stream_1();
    let mut input = Vec::new();
    data(&mut input, 1, b"late", 0);
    s.feed(&input);
    assert_eq!(rst_codes(&s.take()), [(1, ErrorCode::StreamClosed as u32)]);
    // DATA on a stream never opened: a connection error.
    let mut input = Vec::new();
    data(&mut input, 7, b"x", 0);
    assert!(s.feed(&input));
    assert_eq!(goaway_code(&s.take()), Some(ErrorCode::Protocol as u32));
    // A flood of them ends the connection.
    let mut s = Script::new(Limits::default());
    s.closed_stream_1();
    let mut input = Vec::new();
    for _ in 0..1001 {
        data(&mut input, 1, b"", 0);
    }
    assert!(s.feed(&input));
    assert_eq!(
        goaway_code(&s.take()),
        Some(ErrorCode::EnhanceYourCalm as u32)
    );
    // RST_STREAM and WINDOW_UPDATE on it are frames on a closed stream
    // too: one for the stream that ended is taken (it may cross its
    // end), then counted, so a flood ends the connection (they were
    // never counted).
    let flood = |n: usize, frame_: fn(&mut Vec<u8>)| {
        let mut s = Script::new(Limits::default());
        s.closed_stream_1();
        let mut input = Vec::new();
        for _ in 0..n {
            frame_(&mut input);
        }
        s.feed(&input);
        goaway_code(&s.take())
    };
    let frames: [fn(&mut Vec<u8>); 2] = [|b| rst(b, 1), |b| frame::write_window_update(b, 1, 100)];
    for frame_ in frames {
        assert_eq!(flood(1001, frame_), None);
        assert_eq!(flood(1002, frame_), Some(ErrorCode::EnhanceYourCalm as u32));
    }
}

/// A client that gives credit back for every DATA frame, and gets a
/// stream's frames at once, sends their WINDOW_UPDATEs after the stream
/// ended (RFC 9113 §6.9: they crossed its end, and are no error):
/// thousands of streams so served are never taken for a flood.
#[test]
fn credit_given_back_after_each_stream_ends_is_not_a_flood() {
    let mut s = Script::new(Limits::default());
    for i in 0..3000u32 {
        let id = 2 * i + 1;
        let mut input = Vec::new();
        headers(&mut input, id, &get("/"), END);
        s.feed(&input);
        s.conn.send_headers(id, &[0x88], false);
        for last in [false, false, true] {
            s.conn.send_data(id, &[7; 100], last);
        }
        s.take();
        let mut input = Vec::new();
        for _ in 0..3 {
            frame::write_window_update(&mut input, id, 100);
            frame::write_window_update(&mut input, 0, 100);
        }
        s.feed(&input);
        assert_eq!(goaway_code(&s.take()), None, "stream {id}");
    }
}

/// Writes, after a stream's HEADERS, what ends it: a cancel, or a frame
/// that makes the server reset it.
type Provoke = fn(&mut Vec<u8>, u32);

/// `n` streams opened, each ended at once by `provoke`: its events and
/// what the server sent.
fn made_to_reset(n: u32, provoke: Provoke) -> (Vec<String>, Vec<Sent>) {
    let mut s = Script::new(Limits::default());
    let mut input = Vec::new();
    for i in 0..n {
        let id = 1 + 2 * i;
        headers(&mut input, id, &get("/"), flag::END_HEADERS);
        provoke(&mut input, id);
    }
    s.feed(&input);
    let sent = s.take();
    (s.events, sent)
}

/// "MadeYouReset" (CVE-2025-8671): streams opened, then made to be reset
/// by the server with a frame that is a stream error. Each has cost a
/// request's work as a cancel has, so each is counted with resets.
#[test]
fn streams_the_client_makes_the_server_reset_are_counted_as_resets() {
    let provocations: [(&str, Provoke); 6] = [
        ("WINDOW_UPDATE of 0", |b, id| {
            frame::write_window_update(b, id, 0)
        }),
        ("a window past 2^31-1", |b, id| {
            frame::write_window_update(b, id, 0x7fff_ffff)
        }),
        ("PRIORITY on itself", |b, id| {
            frame::write_head(b, 5, kind::PRIORITY, 0, id);
            b.extend_from_slice(&id.to_be_bytes());
            b.push(15);
        }),
        ("DATA after the body ended", |b, id| {
            data(b, id, b"", flag::END_STREAM);
            data(b, id, b"late", 0);
        }),
        ("trailers without END_STREAM's pair", |b, id| {
            // Trailers carrying a pseudo-header: malformed (§8.1).
            headers(b, id, &[0x84], END);
        }),
        ("HEADERS after the body ended", |b, id| {
            data(b, id, b"", flag::END_STREAM);
            headers(b, id, &[0x40, 0x01, b'a', 0x01, b'b'], END);
        }),
    ];
    for (what, provoke) in provocations {
        let (events, sent) = made_to_reset(200, provoke);
        assert_eq!(
            goaway_code(&sent),
            None,
            "{what}: 200 are within the budget"
        );
        let resets = events.iter().filter(|e| e.starts_with("reset")).count();
        assert_eq!(resets, 200, "{what}: {:?}", &events[..4]);
        let (events, sent) = made_to_reset(201, provoke);
        assert_eq!(
            goaway_code(&sent),
            Some(ErrorCode::EnhanceYourCalm as u32),
            "{what}"
        );
        assert_eq!(events.last().unwrap(), "close", "{what}");
    }
}
