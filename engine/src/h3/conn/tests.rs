//! One connection's streams as byte scripts: the critical streams' rules
//! and each request stream's frames, with the RFC's codes.

use super::*;
use crate::h3::qpack::vectors as qpack_vectors;

const LIMITS: Limits = Limits {
    retry_above: 0,
    max_field_section_size: 1000,
};

fn fresh() -> Conn {
    Conn::new(LIMITS)
}

fn settings_frame() -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_settings(4096, &mut out);
    out
}

/// A HEADERS frame of `fields`.
fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut section = Vec::new();
    qpack::begin(&mut section);
    for (n, v) in fields {
        qpack::field(n.as_bytes(), v.as_bytes(), &mut section);
    }
    let mut out = Vec::new();
    frame::write_head(frame::HEADERS, section.len() as u64, &mut out);
    out.extend_from_slice(&section);
    out
}

fn data(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_head(frame::DATA, bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

const GET: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "a.test"),
    (":path", "/index.html"),
];

/// Feeds `pieces` (the last with `fin`) to request stream 0: what it
/// told, as text, and the failure it stopped at.
fn script(c: &mut Conn, pieces: &[&[u8]], fin: bool) -> (Vec<String>, Option<Failure>) {
    let mut told = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        let last = i + 1 == pieces.len();
        let r = c.request_data(0, piece, fin && last, &mut |ev| {
            told.push(match ev {
                RequestEvent::Head { end } => format!("head end={end}"),
                RequestEvent::Body(b) => format!("body {}", String::from_utf8_lossy(b)),
                RequestEvent::End([]) => "end".to_string(),
                RequestEvent::End(t) => format!("end {}", String::from_utf8_lossy(t)),
            })
        });
        if let Err(f) = r {
            return (told, Some(f));
        }
    }
    (told, None)
}

fn code(f: Option<Failure>) -> (bool, Code) {
    match f.expect("a failure") {
        Failure::Stream(e) => (false, e.code),
        Failure::Connection(e) => (true, e.code),
    }
}

#[test]
fn the_server_s_control_stream_opens_with_its_settings() {
    let mut out = Vec::new();
    fresh().control_stream(&mut out);
    // Type 0, SETTINGS: table capacity 4096, blocked streams 0, field
    // section 1000.
    assert_eq!(
        out,
        [0x00, 0x04, 0x08, 0x01, 0x50, 0x00, 0x07, 0x00, 0x06, 0x43, 0xe8]
    );
}

#[test]
fn the_control_stream_takes_settings_first_and_once() {
    let mut c = fresh();
    let mut s = vec![0x00];
    s.extend_from_slice(&settings_frame());
    // The type and the frame in pieces.
    for piece in s.chunks(3) {
        assert_eq!(c.uni(2, piece, false), Ok(true));
    }
    assert_eq!(c.settings().unwrap().max_field_section_size, Some(4096));
    let mut goaway = Vec::new();
    frame::write_goaway(0, &mut goaway);
    assert_eq!(c.uni(2, &goaway, false), Ok(true));
    assert_eq!(
        c.uni(2, &settings_frame(), false).unwrap_err().code,
        Code::FRAME_UNEXPECTED
    );
    assert_eq!(
        fresh()
            .uni(2, &[0x00, 0x07, 0x01, 0x00], false)
            .unwrap_err()
            .code,
        Code::MISSING_SETTINGS
    );
    let mut c = fresh();
    c.uni(2, &s, false).unwrap();
    assert_eq!(
        c.uni(2, &data(b"x"), false).unwrap_err().code,
        Code::FRAME_UNEXPECTED
    );
    let mut c = fresh();
    c.uni(2, &s, false).unwrap();
    assert_eq!(
        c.uni(6, &[0x00], false).unwrap_err().code,
        Code::STREAM_CREATION_ERROR
    );
    assert_eq!(
        c.uni(2, &[], true).unwrap_err().code,
        Code::CLOSED_CRITICAL_STREAM
    );
}

#[test]
fn the_control_stream_s_frames_are_checked() {
    let opened = || {
        let mut c = fresh();
        let mut s = vec![0x00];
        s.extend_from_slice(&settings_frame());
        c.uni(2, &s, false).unwrap();
        c
    };
    let frame_of = |kind: u64, payload: &[u8]| {
        let mut out = Vec::new();
        frame::write_head(kind, payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    };
    // What the control stream never carries (§7.2.1, §7.2.2), whatever
    // its size; before SETTINGS, H3_MISSING_SETTINGS (§6.2.1).
    let mut big_headers = Vec::new();
    frame::write_head(frame::HEADERS, 100_000, &mut big_headers);
    for bytes in [frame_of(frame::DATA, b""), big_headers.clone()] {
        assert_eq!(
            opened().uni(2, &bytes, false).unwrap_err().code,
            Code::FRAME_UNEXPECTED
        );
        let mut first = vec![0x00];
        first.extend_from_slice(&bytes);
        assert_eq!(
            fresh().uni(2, &first, false).unwrap_err().code,
            Code::MISSING_SETTINGS
        );
    }
    // A push ID, exactly (§7.1), that GOAWAY never raises and MAX_PUSH_ID
    // never lowers; brisk promised nothing to cancel (§7.2.3).
    for (frames, code) in [
        (vec![frame_of(frame::GOAWAY, &[])], Some(Code::FRAME_ERROR)),
        (
            vec![frame_of(frame::GOAWAY, &[4, 4])],
            Some(Code::FRAME_ERROR),
        ),
        (
            vec![frame_of(frame::MAX_PUSH_ID, &[0x40])],
            Some(Code::FRAME_ERROR),
        ),
        (
            vec![frame_of(frame::GOAWAY, &[8]), frame_of(frame::GOAWAY, &[4])],
            None,
        ),
        (
            vec![frame_of(frame::GOAWAY, &[4]), frame_of(frame::GOAWAY, &[8])],
            Some(Code::ID_ERROR),
        ),
        (
            vec![
                frame_of(frame::MAX_PUSH_ID, &[4]),
                frame_of(frame::MAX_PUSH_ID, &[8]),
            ],
            None,
        ),
        (
            vec![
                frame_of(frame::MAX_PUSH_ID, &[8]),
                frame_of(frame::MAX_PUSH_ID, &[4]),
            ],
            Some(Code::ID_ERROR),
        ),
        (
            vec![frame_of(frame::CANCEL_PUSH, &[0])],
            Some(Code::ID_ERROR),
        ),
    ] {
        let mut c = opened();
        let got = frames
            .iter()
            .try_for_each(|f| c.uni(2, f, false).map(|_| ()));
        assert_eq!(got.err().map(|e| e.code), code, "{frames:?}");
    }
}

#[test]
fn an_empty_data_frame_out_of_place_is_an_error() {
    let mut before = data(b"");
    before.extend_from_slice(&headers(GET));
    let (_, failed) = script(&mut fresh(), &[&before], true);
    assert_eq!(code(failed), (true, Code::FRAME_UNEXPECTED));
    let mut after_trailers = headers(GET);
    after_trailers.extend_from_slice(&headers(&[("x", "y")]));
    after_trailers.extend_from_slice(&data(b""));
    let (_, failed) = script(&mut fresh(), &[&after_trailers], true);
    assert_eq!(code(failed), (true, Code::FRAME_UNEXPECTED));
    // In the body, nothing.
    let mut body = headers(GET);
    body.extend_from_slice(&data(b""));
    body.extend_from_slice(&data(b"ab"));
    let (told, failed) = script(&mut fresh(), &[&body], true);
    assert!(failed.is_none());
    assert_eq!(told, ["head end=false", "body ab", "end"]);
}

#[test]
fn push_streams_are_refused_and_unknown_ones_left_unread() {
    assert_eq!(
        fresh().uni(2, &[0x01], false).unwrap_err().code,
        Code::STREAM_CREATION_ERROR
    );
    let mut c = fresh();
    // A reserved type (0x21), then a two-byte one split in two reads.
    assert_eq!(c.uni(2, &[0x21, 0xff], false), Ok(false));
    assert_eq!(c.uni(6, &[0x40], false), Ok(true));
    assert_eq!(c.uni(6, &[0x54, 9, 9], false), Ok(false));
}

#[test]
fn a_critical_stream_reset_is_the_connection_s_error_and_others_are_forgotten() {
    let mut c = fresh();
    let mut control = vec![0x00];
    control.extend_from_slice(&settings_frame());
    assert_eq!(c.uni(2, &control, false), Ok(true));
    assert_eq!(c.uni(6, &[0x02], false), Ok(true));
    assert_eq!(c.uni(10, &[0x03], false), Ok(true));
    // A reserved type, and one whose type has not all come.
    assert_eq!(c.uni(14, &[0x21], false), Ok(false));
    assert_eq!(c.uni(18, &[0x40], false), Ok(true));
    // The control stream, the QPACK encoder and decoder streams may not
    // close (§6.2.1, RFC 9204 §4.2): reset, H3_CLOSED_CRITICAL_STREAM.
    for id in [2, 6, 10] {
        assert_eq!(c.reset(id).unwrap_err().code, Code::CLOSED_CRITICAL_STREAM);
    }
    // The others, and request streams, are forgotten.
    for id in [14, 18, 0] {
        assert_eq!(c.reset(id), Ok(()));
    }
    assert_eq!(c.uni.len(), 3);
}

#[test]
fn a_stream_that_ends_before_its_type_is_forgotten() {
    let mut c = fresh();
    // Empty, or the first byte of a two-byte type, then its end: nothing
    // is kept of any of them (§6.2), however many come.
    for id in 0..1000u64 {
        let bytes: &[u8] = if id % 2 == 0 { &[] } else { &[0x40] };
        assert_eq!(c.uni(4 * id + 2, bytes, true), Ok(true));
    }
    assert!(c.uni.is_empty());
    // One still open is kept until its type is whole.
    assert_eq!(c.uni(2, &[0x40], false), Ok(true));
    assert_eq!(c.uni.len(), 1);
}

#[test]
fn the_encoder_stream_builds_the_table_and_brisk_acknowledges_what_it_used() {
    let mut c = fresh();
    // The encoder stream of a real encoder (see qpack's tests): its type,
    // then the capacity (4096) and four insertions, in two reads.
    let stream = qpack_vectors::encoder_stream();
    assert_eq!(c.uni(2, &[0x02, stream[0]], false), Ok(true));
    assert_eq!(c.decoder_bytes(), b"");
    assert_eq!(c.uni(2, &stream[1..], false), Ok(true));
    // The decoder stream opens (type 3) with an Insert Count Increment 4.
    assert_eq!(c.decoder_bytes(), [0x03, 0x04]);
    c.decoder_sent(1);
    // A request on stream 4 whose head references the four entries: a
    // Section Acknowledgment for stream 4.
    let section = qpack_vectors::dynamic_section();
    let mut h = Vec::new();
    frame::write_head(frame::HEADERS, section.len() as u64, &mut h);
    h.extend_from_slice(&section);
    let mut told = Vec::new();
    let r = c.request_data(4, &h, true, &mut |ev| told.push(format!("{ev:?}")));
    assert_eq!(r, Ok(()));
    assert_eq!(told, ["Head { end: true }", "End([])"]);
    assert_eq!(c.request().authority(), Some(&b"example.com"[..]));
    assert_eq!(c.decoder_bytes(), [0x04, 0x84]);
    c.decoder_sent(2);
    // A stream whose head is never read is cancelled (Stream
    // Cancellation 8); one that ended is not; one whose body is left
    // unread (its answer did not need it) is, as trailers may follow
    // (Stream Cancellation 12).
    assert_eq!(c.request_data(8, &h[..3], false, &mut |_| {}), Ok(()));
    c.forget(8);
    assert_eq!(c.decoder_bytes(), [0x48]);
    c.forget(4);
    assert_eq!(c.decoder_bytes(), [0x48]);
    assert_eq!(c.request_data(12, &h, false, &mut |_| {}), Ok(()));
    assert_eq!(c.decoder_bytes(), [0x48, 0x8c]);
    c.forget(12);
    assert_eq!(c.decoder_bytes(), [0x48, 0x8c, 0x4c]);
    // An insertion the table cannot take closes the connection: capacity
    // 1 (which evicts all), then an entry of 33 bytes.
    assert_eq!(
        c.uni(2, &[0x21, 0x41, b'a', 0x00], false).unwrap_err().code,
        Code::QPACK_ENCODER_STREAM_ERROR
    );
    for bad in [
        &[0x02, 0x3f, 0xe2, 0x1f][..],
        &[0x02, 0x80, 0x00],
        &[0x02, 0x00],
    ] {
        assert_eq!(
            fresh().uni(2, bad, false).unwrap_err().code,
            Code::QPACK_ENCODER_STREAM_ERROR
        );
    }
    // Decoder: Stream Cancellations only.
    let mut c = fresh();
    assert_eq!(c.uni(6, &[0x03, 0x44, 0x7f], false), Ok(true));
    assert_eq!(c.uni(6, &[0x01], false), Ok(true));
    for bad in [&[0x03, 0x84][..], &[0x03, 0x01]] {
        assert_eq!(
            fresh().uni(6, bad, false).unwrap_err().code,
            Code::QPACK_DECODER_STREAM_ERROR
        );
    }
    assert_eq!(
        c.uni(6, &[], true).unwrap_err().code,
        Code::CLOSED_CRITICAL_STREAM
    );
}

#[test]
fn a_request_without_a_body() {
    let mut c = fresh();
    let h = headers(GET);
    let (told, failed) = script(&mut c, &[&h], true);
    assert_eq!(
        (told, failed),
        (vec!["head end=true".to_string(), "end".to_string()], None)
    );
    assert_eq!(c.request().method(), b"GET");
    assert_eq!(c.request().path(), b"/index.html");
    assert_eq!(c.request().authority(), Some(&b"a.test"[..]));
    // The same, its FIN in an empty read of its own.
    let (told, _) = script(&mut fresh(), &[&h, b""], true);
    assert_eq!(told, ["head end=false", "end"]);
}

#[test]
fn a_request_with_a_body_and_trailers() {
    let mut fields = GET.to_vec();
    fields[0] = (":method", "POST");
    fields.push(("content-length", "10"));
    let mut all = headers(&fields);
    all.extend_from_slice(&data(b"hello"));
    all.extend_from_slice(&data(b"world"));
    // (What a trailer must not hold is left out, RFC 9110 §6.5.1.)
    all.extend_from_slice(&headers(&[
        ("x-sum", "1"),
        ("content-length", "9"),
        ("grpc-status", "0"),
    ]));
    for step in [1, 4, all.len()] {
        let pieces: Vec<&[u8]> = all.chunks(step).collect();
        let (told, failed) = script(&mut fresh(), &pieces, true);
        assert_eq!(failed, None);
        let body: String = told
            .iter()
            .filter_map(|t| t.strip_prefix("body "))
            .collect();
        assert_eq!(body, "helloworld", "step {step}");
        assert_eq!(told.first().unwrap(), "head end=false");
        assert_eq!(told.last().unwrap(), "end x-sum: 1\r\ngrpc-status: 0\r\n");
    }
}

#[test]
fn malformed_requests_are_the_stream_s_error() {
    let cases: &[&[(&str, &str)]] = &[
        &[(":method", "GET"), (":scheme", "https")],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/"),
            ("Upper", "x"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/"),
            ("connection", "close"),
        ],
        &[
            (":method", "CONNECT"),
            (":scheme", "https"),
            (":path", "/"),
            (":authority", "a"),
            (":protocol", "websocket"),
        ],
        &[
            (":method", "GET"),
            ("x", "y"),
            (":scheme", "https"),
            (":path", "/"),
        ],
        // No authority, or an empty one (§4.3.1).
        &[(":method", "GET"), (":scheme", "https"), (":path", "/")],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", ""),
            (":path", "/"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("host", ""),
        ],
    ];
    for fields in cases {
        let (_, failed) = script(&mut fresh(), &[&headers(fields)], true);
        assert_eq!(code(failed), (false, Code::MESSAGE_ERROR), "{fields:?}");
    }
    let mut post = GET.to_vec();
    post.push(("content-length", "3"));
    let mut h = headers(&post);
    h.extend_from_slice(&data(b"ab"));
    assert_eq!(
        code(script(&mut fresh(), &[&h], true).1),
        (false, Code::MESSAGE_ERROR)
    );
    h.extend_from_slice(&data(b"cd"));
    assert_eq!(
        code(script(&mut fresh(), &[&h], false).1),
        (false, Code::MESSAGE_ERROR)
    );
    assert_eq!(
        code(script(&mut fresh(), &[b""], true).1),
        (false, Code::REQUEST_INCOMPLETE)
    );
    // `host` in place of `:authority` will do.
    let host = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/"),
        ("host", "a.test"),
    ];
    assert!(script(&mut fresh(), &[&headers(&host)], true).1.is_none());
}

#[test]
fn frames_out_of_place_are_the_connection_s_error() {
    let h = headers(GET);
    let mut trailers_then_data = h.clone();
    trailers_then_data.extend_from_slice(&headers(&[("x", "y")]));
    trailers_then_data.extend_from_slice(&data(b"x"));
    let mut settings_on_request = h.clone();
    settings_on_request.extend_from_slice(&settings_frame());
    for (script_bytes, expected) in [
        (data(b"x"), Code::FRAME_UNEXPECTED),
        (trailers_then_data, Code::FRAME_UNEXPECTED),
        (settings_on_request, Code::FRAME_UNEXPECTED),
        (h[..h.len() - 1].to_vec(), Code::FRAME_ERROR),
        // A dynamic table reference (Required Insert Count 1).
        (
            vec![0x01, 0x02, 0x01, 0x00],
            Code::QPACK_DECOMPRESSION_FAILED,
        ),
    ] {
        let (_, failed) = script(&mut fresh(), &[&script_bytes], true);
        assert_eq!(code(failed), (true, expected));
    }
}

#[test]
fn a_head_over_the_size_limit_is_told_too_large() {
    let long = "v".repeat(990);
    let mut fields = GET.to_vec();
    fields.push(("x-long", &long));
    let mut c = fresh();
    let (told, failed) = script(&mut c, &[&headers(&fields)], true);
    assert_eq!((told.len(), failed), (2, None));
    assert!(c.request().too_large());
    // A HEADERS frame over the limit is not read, and told too large
    // (431, as over HTTP/1.1 and HTTP/2; it closed the connection), the
    // stream's body still read; the section is cancelled on the decoder
    // stream, never to be acknowledged (RFC 9204 §4.4.2).
    let mut big = Vec::new();
    frame::write_head(frame::HEADERS, 1001, &mut big);
    big.extend_from_slice(&[0x2a; 1001]);
    let mut c = fresh();
    let (told, failed) = script(&mut c, &[&big, &data(b"x")], true);
    assert_eq!(
        (told, failed),
        (
            vec!["head end=false".into(), "body x".into(), "end".into()],
            None
        )
    );
    assert!(c.request().too_large());
    // (The decoder stream's type, then Stream Cancellation of stream 0.)
    assert_eq!(c.decoder_bytes(), [0x03, 0x40]);
    // One over twice the limit (as much as is decoded) is refused before
    // it is read: the connection closes.
    let mut huge = Vec::new();
    frame::write_head(frame::HEADERS, 2 * 1000 + 1025, &mut huge);
    assert_eq!(
        code(script(&mut fresh(), &[&huge], false).1),
        (true, Code::EXCESSIVE_LOAD)
    );
}
