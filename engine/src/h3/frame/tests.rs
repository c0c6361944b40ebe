//! Frames read as they come, byte by byte or whole.

use super::*;

/// What `input` reads as, fed in pieces of `step` bytes: each event as
/// (type, payload), DATA as type 0 with its pieces joined.
fn read(input: &[u8], step: usize, max_headers: usize) -> Result<Vec<(u64, Vec<u8>)>, Error> {
    let mut r = Reader::new(max_headers);
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut data_open = false;
    for piece in input.chunks(step) {
        r.feed(piece, &mut |ev| {
            match ev {
                Event::Data(d) => match out.last_mut() {
                    Some((DATA, buf)) if data_open => buf.extend_from_slice(d),
                    _ => {
                        out.push((DATA, d.to_vec()));
                        data_open = true;
                    }
                },
                Event::Frame(kind, payload) => {
                    out.push((kind, payload.to_vec()));
                    data_open = false;
                }
                Event::TooLarge => {
                    out.push((u64::MAX, Vec::new()));
                    data_open = false;
                }
            }
            Ok(())
        })?;
    }
    assert!(r.at_boundary(), "ends between frames");
    Ok(out)
}

#[test]
fn frames_read_the_same_in_any_pieces() {
    let mut input = Vec::new();
    write_head(HEADERS, 3, &mut input);
    input.extend_from_slice(b"abc");
    // An unknown type and a reserved one (0x21): skipped; an empty DATA
    // is told (it may be out of place), and joins the next here.
    write_head(0x3a, 2, &mut input);
    input.extend_from_slice(b"zz");
    write_head(0x21, 0, &mut input);
    write_head(DATA, 0, &mut input);
    write_head(DATA, 5, &mut input);
    input.extend_from_slice(b"hello");
    // A type in a two-byte varint, and a long DATA length.
    write_head(0x1f * 7 + 0x21, 1, &mut input);
    input.push(0);
    write_head(DATA, 300, &mut input);
    input.extend_from_slice(&[7; 300]);
    write_head(GOAWAY, 0, &mut input);
    let expected = vec![
        (HEADERS, b"abc".to_vec()),
        (DATA, b"hello".to_vec()),
        (DATA, vec![7; 300]),
        (GOAWAY, vec![]),
    ];
    for step in [1, 2, 3, 7, 16, input.len()] {
        let got = read(&input, step, 100).unwrap();
        // (Two DATA frames in a row join in `read`: split them back.)
        let mut joined = expected.clone();
        joined[1].1.extend_from_slice(&[7; 300]);
        joined.remove(2);
        assert_eq!(got, joined, "step {step}");
    }
}

#[test]
fn http2_frame_types_are_refused() {
    for kind in [0x2, 0x6, 0x8, 0x9] {
        let mut input = Vec::new();
        write_head(kind, 0, &mut input);
        assert_eq!(
            read(&input, 1, 100).unwrap_err().code,
            Code::FRAME_UNEXPECTED
        );
    }
}

#[test]
fn large_frames_are_refused_before_their_payload() {
    // HEADERS over the limit: skipped and told (answered 431), up to
    // twice the limit and 1 KiB; past that refused before its payload.
    let mut input = Vec::new();
    write_head(HEADERS, 101, &mut input);
    input.extend_from_slice(&[7; 101]);
    write_head(HEADERS, 1, &mut input);
    input.push(9);
    assert_eq!(
        read(&input, 1, 100).unwrap(),
        [(u64::MAX, vec![]), (HEADERS, vec![9])]
    );
    let mut input = Vec::new();
    write_head(HEADERS, 2 * 100 + 1025, &mut input);
    assert_eq!(read(&input, 1, 100).unwrap_err().code, Code::EXCESSIVE_LOAD);
    let mut input = Vec::new();
    write_head(SETTINGS, MAX_CONTROL_PAYLOAD as u64 + 1, &mut input);
    assert_eq!(read(&input, 1, 100).unwrap_err().code, Code::EXCESSIVE_LOAD);
    // An unknown frame of any length is skipped, not held.
    let mut r = Reader::new(100);
    let mut input = Vec::new();
    write_head(0x40, varint::MAX, &mut input);
    input.extend_from_slice(&[0; 1000]);
    r.feed(&input, &mut |_| panic!("nothing to report"))
        .unwrap();
    assert!(!r.at_boundary());
}

#[test]
fn a_stream_cut_in_a_frame_is_not_at_a_boundary() {
    let mut r = Reader::new(100);
    r.feed(&[0x01], &mut |_| Ok(())).unwrap();
    assert!(!r.at_boundary());
    r.feed(&[0x02, b'a'], &mut |_| Ok(())).unwrap();
    assert!(!r.at_boundary());
    let mut got = Vec::new();
    r.feed(b"b", &mut |ev| {
        got.push(format!("{ev:?}"));
        Ok(())
    })
    .unwrap();
    assert_eq!(got, ["Frame(1, [97, 98])"]);
    assert!(r.at_boundary());
}

#[test]
fn an_error_of_the_listener_stops_the_reading() {
    let mut input = Vec::new();
    write_head(DATA, 1, &mut input);
    input.push(b'x');
    let mut r = Reader::new(100);
    let no = Error::new(Code::FRAME_UNEXPECTED, "no DATA here");
    assert_eq!(r.feed(&input, &mut |_| Err(no)), Err(no));
}

#[test]
fn settings_are_read_and_refused_as_the_rfc_says() {
    let mut frame = Vec::new();
    write_settings(16_384, &mut frame);
    // Type 4, then 0x1=4096, 0x7=0, 0x6=16384 (a four-byte varint).
    assert_eq!(
        frame,
        [0x04, 0x0a, 0x01, 0x50, 0x00, 0x07, 0x00, 0x06, 0x80, 0x00, 0x40, 0x00]
    );
    let s = parse_settings(&frame[2..]).unwrap();
    assert_eq!(s.max_field_section_size, Some(16_384));
    assert_eq!(
        (s.qpack_max_table_capacity, s.qpack_blocked_streams),
        (4096, 0)
    );
    // Unknown (and reserved, 0x1f * N + 0x21) settings are ignored.
    assert_eq!(
        parse_settings(&[0x21, 0x05, 0x01, 0x40, 0x64])
            .unwrap()
            .qpack_max_table_capacity,
        100
    );
    assert_eq!(parse_settings(&[]).unwrap(), Settings::default());
    for h2 in [0x00, 0x02, 0x03, 0x04, 0x05] {
        assert_eq!(
            parse_settings(&[h2, 0x00]).unwrap_err().code,
            Code::SETTINGS_ERROR
        );
    }
    assert_eq!(
        parse_settings(&[0x06, 0x01, 0x06, 0x02]).unwrap_err().code,
        Code::SETTINGS_ERROR
    );
    assert_eq!(
        parse_settings(&[0x21, 0x01, 0x21, 0x02]).unwrap_err().code,
        Code::SETTINGS_ERROR
    );
    assert_eq!(parse_settings(&[0x06]).unwrap_err().code, Code::FRAME_ERROR);
    assert_eq!(
        parse_settings(&[0x06, 0x40]).unwrap_err().code,
        Code::FRAME_ERROR
    );
}

#[test]
fn goaway_names_a_stream() {
    let mut out = Vec::new();
    write_goaway(4, &mut out);
    assert_eq!(out, [0x07, 0x01, 0x04]);
    out.clear();
    write_goaway(400, &mut out);
    assert_eq!(out, [0x07, 0x02, 0x41, 0x90]);
}

#[test]
fn a_control_stream_s_reader_tells_frames_it_cannot_carry_at_once() {
    let mut input = Vec::new();
    // A HEADERS far larger than any control payload: told, not read.
    write_head(HEADERS, 1 << 20, &mut input);
    let mut r = Reader::control();
    let mut told = Vec::new();
    r.feed(&input, &mut |ev| {
        told.push(format!("{ev:?}"));
        Ok(())
    })
    .unwrap();
    assert_eq!(told, ["Frame(1, [])"]);
    let mut told = Vec::new();
    let mut input = Vec::new();
    write_head(DATA, 0, &mut input);
    write_head(PUSH_PROMISE, 2, &mut input);
    input.extend_from_slice(b"xx");
    write_head(GOAWAY, 1, &mut input);
    input.push(4);
    Reader::control()
        .feed(&input, &mut |ev| {
            told.push(format!("{ev:?}"));
            Ok(())
        })
        .unwrap();
    assert_eq!(told, ["Frame(0, [])", "Frame(5, [])", "Frame(7, [4])"]);
}
