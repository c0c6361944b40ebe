//! FastCGI records byte for byte, and the decoder fed in every split.

use super::peer::{decode_all, end_request, read_pair, read_record, stdout, Said};
use super::record::*;

fn said_out(s: &[u8]) -> Said {
    Said::Stdout(s.to_vec())
}

#[test]
fn begin_request_asks_for_the_responder_role() {
    let mut out = Vec::new();
    begin_request(&mut out, 1, false);
    begin_request(&mut out, 0x0102, true);
    assert_eq!(
        out,
        [
            1, 1, 0, 1, 0, 8, 0, 0, /* role */ 0, 1, /* flags */ 0, 0, 0, 0, 0,
            0, //
            1, 1, 1, 2, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0,
        ]
    );
}

#[test]
fn abort_and_stream_ends_are_bare_headers() {
    let mut out = Vec::new();
    abort_request(&mut out, 1);
    params_end(&mut out, 1);
    stdin_end(&mut out, 0x0203);
    assert_eq!(
        out,
        [1, 2, 0, 1, 0, 0, 0, 0, 1, 4, 0, 1, 0, 0, 0, 0, 1, 5, 2, 3, 0, 0, 0, 0]
    );
}

#[test]
fn short_params_use_one_byte_lengths_and_are_padded() {
    let mut out = vec![0xAA];
    let pairs: [(&[u8], &[u8]); 2] = [(b"A", b"bc"), (b"", b"")];
    params(&mut out, 1, pairs.into_iter());
    // Content: 01 02 'A' 'b' 'c' 00 00 = 7 bytes, padded with 1.
    assert_eq!(
        out,
        [0xAA, 1, 4, 0, 1, 0, 7, 1, 0, 1, 2, b'A', b'b', b'c', 0, 0, 0]
    );
}

#[test]
fn no_params_write_nothing() {
    // An empty PARAMS record would end the stream.
    let mut out = Vec::new();
    params(&mut out, 1, std::iter::empty());
    stdin(&mut out, 1, b"");
    assert!(out.is_empty());
}

#[test]
fn long_names_and_values_use_four_byte_lengths() {
    let name = [b'N'; 128];
    let value = [b'v'; 130];
    let mut out = Vec::new();
    params(
        &mut out,
        1,
        [(&name[..], &b"x"[..]), (b"SHORT", &value[..])].into_iter(),
    );
    // 4 + 1 + 128 + 1 = 134, then 1 + 4 + 5 + 130 = 140: 274 bytes, padded with 6.
    let mut want = vec![1, 4, 0, 1, 0x01, 0x12, 6, 0];
    want.extend_from_slice(&[0x80, 0, 0, 128, 1]);
    want.extend_from_slice(&name);
    want.push(b'x');
    want.extend_from_slice(&[5, 0x80, 0, 0, 130]);
    want.extend_from_slice(b"SHORT");
    want.extend_from_slice(&value);
    want.extend_from_slice(&[0; 6]);
    assert_eq!(out, want);
    let content = &out[8..8 + 274];
    let ((n, v), used) = read_pair(content).unwrap();
    assert_eq!((n, v, used), (&name[..], &b"x"[..], 134));
    let ((n, v), used) = read_pair(&content[134..]).unwrap();
    assert_eq!((n, v, used), (&b"SHORT"[..], &value[..], 140));
}

#[test]
fn a_pair_spans_two_records() {
    let value = vec![b'v'; 70_000];
    let mut out = Vec::new();
    params(&mut out, 1, [(&b"V"[..], &value[..])].into_iter());
    // The stream: 01 80 00 11 70 'V' then 70,000 bytes = 70,006 bytes:
    // 65,528 in the first record (no padding), 4,478 = 0x117E in the
    // second, padded with 2.
    assert_eq!(out.len(), 8 + 65_528 + 8 + 4_478 + 2);
    assert_eq!(
        out[..14],
        [1, 4, 0, 1, 0xFF, 0xF8, 0, 0, 1, 0x80, 0x01, 0x11, 0x70, b'V']
    );
    let second = 8 + 65_528;
    assert_eq!(out[second..second + 8], [1, 4, 0, 1, 0x11, 0x7E, 2, 0]);
    assert_eq!(out[out.len() - 2..], [0, 0]);
    let mut stream = out[8..second].to_vec();
    stream.extend_from_slice(&out[second + 8..out.len() - 2]);
    let ((n, v), used) = read_pair(&stream).unwrap();
    assert_eq!((n, v, used), (&b"V"[..], &value[..], stream.len()));
}

#[test]
fn a_long_body_goes_in_records_of_65528_bytes() {
    let data: Vec<u8> = (0..140_000u32).map(|i| i as u8).collect();
    let mut out = Vec::new();
    stdin(&mut out, 7, &data);
    // 65,528 + 65,528 + 8,944 (a multiple of 8: no padding).
    let mut at = 0;
    let mut body = Vec::new();
    for (len, head) in [
        (65_528, [1, 5, 0, 7, 0xFF, 0xF8, 0, 0]),
        (65_528, [1, 5, 0, 7, 0xFF, 0xF8, 0, 0]),
        (8_944, [1, 5, 0, 7, 0x22, 0xF0, 0, 0]),
    ] {
        assert_eq!(out[at..at + 8], head);
        body.extend_from_slice(&out[at + 8..at + 8 + len]);
        at += 8 + len;
    }
    assert_eq!(at, out.len());
    assert_eq!(body, data);
}

#[test]
fn stdin_pads_to_eight() {
    let mut out = Vec::new();
    stdin(&mut out, 1, b"abc");
    assert_eq!(
        out,
        [1, 5, 0, 1, 0, 3, 5, 0, b'a', b'b', b'c', 0, 0, 0, 0, 0]
    );
    let r = read_record(&out).unwrap();
    assert_eq!(
        (r.kind, r.id, r.content, r.size()),
        (STDIN, 1, &b"abc"[..], 16)
    );
}

/// An answer: STDOUT (padded), a management record, STDERR, a record of
/// a type the spec does not define, STDOUT without padding, the end of
/// STDOUT, END_REQUEST (padded).
const ANSWER: &[u8] = &[
    1, 6, 0, 1, 0, 17, 7, 0, b'S', b't', b'a', b't', b'u', b's', b':', b' ', b'2', b'0', b'0',
    b'\r', b'\n', b'\r', b'\n', b'h', b'i', 0, 0, 0, 0, 0, 0, 0, //
    1, 10, 0, 0, 0, 3, 5, 0, b'a', b'b', b'c', 0, 0, 0, 0, 0, //
    1, 7, 0, 1, 0, 4, 4, 0, b'w', b'a', b'r', b'n', 0, 0, 0, 0, //
    1, 42, 0, 1, 0, 2, 0, 0, b'z', b'z', //
    1, 6, 0, 1, 0, 1, 0, 0, b'!', //
    1, 6, 0, 1, 0, 0, 0, 0, //
    1, 3, 0, 1, 0, 8, 3, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0,
];

fn answer_said() -> Vec<Said> {
    vec![
        said_out(b"Status: 200\r\n\r\nhi"),
        Said::Stderr(b"warn".to_vec()),
        said_out(b"!"),
        Said::End {
            app_status: 0x0102_0304,
            protocol_status: REQUEST_COMPLETE,
        },
    ]
}

#[test]
fn every_split_of_an_answer_says_the_same() {
    let want = (answer_said(), None);
    assert_eq!(decode_all(1, [ANSWER]), want);
    for cut in 1..ANSWER.len() {
        let (a, b) = ANSWER.split_at(cut);
        assert_eq!(decode_all(1, [a, b]), want, "cut at {cut}");
        assert_eq!(decode_all(1, ANSWER.chunks(cut)), want, "pieces of {cut}");
    }
}

#[test]
fn data_is_lent_from_the_input_and_the_end_waits_for_its_padding() {
    let mut dec = Decoder::new(1);
    assert_eq!(dec.decode(&ANSWER[..3]), Ok((3, None)));
    let rest = &ANSWER[3..];
    let (used, event) = dec.decode(rest).unwrap();
    assert_eq!(used, 5 + 17);
    let Some(Event::Stdout(data)) = event else {
        panic!("{event:?}")
    };
    assert_eq!(data.as_ptr(), rest[5..].as_ptr());
    // All but the last padding byte: no end yet, everything consumed.
    let mut dec = Decoder::new(1);
    let cut = ANSWER.len() - 1;
    let mut at = 0;
    while let (used, Some(_)) = dec.decode(&ANSWER[at..cut]).unwrap() {
        at += used;
    }
    assert!(!dec.is_ended());
    assert_eq!(
        dec.decode(&ANSWER[cut..]),
        Ok((
            1,
            Some(Event::End {
                app_status: 0x0102_0304,
                protocol_status: 0
            })
        ))
    );
    assert!(dec.is_ended());
}

/// ANSWER's first record, then `tail`.
fn after_stdout(tail: &[u8]) -> Vec<u8> {
    let mut v = ANSWER[..32].to_vec();
    v.extend_from_slice(tail);
    v
}

#[test]
fn what_can_never_be_valid_is_an_error() {
    let head = || vec![said_out(b"Status: 200\r\n\r\nhi")];
    let cases: [(&[u8], Error); 10] = [
        (&[2, 6, 0, 1, 0, 0, 0, 0], Error::Version(2)),
        (&[1, 6, 0, 2, 0, 1, 0, 0, b'x'], Error::OtherRequest(2)),
        (&[1, 3, 0, 1, 0, 7, 0, 0], Error::EndLength(7)),
        (&[1, 5, 0, 1, 0, 0, 0, 0], Error::Unexpected(STDIN)),
        (&[1, 11, 0, 1, 0, 8, 0, 0], Error::Unexpected(UNKNOWN_TYPE)),
        (
            &[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0],
            Error::CantMpxConn,
        ),
        (
            &[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0],
            Error::Overloaded,
        ),
        (
            &[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0],
            Error::UnknownRole,
        ),
        (
            &[1, 6, 0, 1, 0, 0, 0, 0, 1, 6, 0, 1, 0, 1, 7, 0],
            Error::AfterStreamEnd(STDOUT),
        ),
        (
            &[
                1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 6, 0, 1, 0, 1, 7, 0,
            ],
            Error::AfterEnd,
        ),
    ];
    for (tail, error) in cases {
        let input = after_stdout(tail);
        let mut want = head();
        if error == Error::AfterEnd {
            want.push(Said::End {
                app_status: 0,
                protocol_status: 0,
            });
        }
        assert_eq!(decode_all(1, [&input[..]]), (want.clone(), Some(error)));
        assert_eq!(decode_all(1, input.chunks(1)), (want, Some(error)));
    }
}

#[test]
fn an_error_is_repeated() {
    let mut dec = Decoder::new(1);
    assert_eq!(
        dec.decode(&[0, 0, 0, 0, 0, 0, 0, 0]),
        Err(Error::Version(0))
    );
    assert_eq!(dec.decode(ANSWER), Err(Error::Version(0)));
}

#[test]
fn a_status_the_spec_does_not_define_ends_the_request() {
    let mut input = Vec::new();
    stdout(&mut input, 1, b"x");
    end_request(&mut input, 1, 5, 9);
    assert_eq!(
        decode_all(1, [&input[..]]),
        (
            vec![
                said_out(b"x"),
                Said::End {
                    app_status: 5,
                    protocol_status: 9
                }
            ],
            None
        )
    );
}

/// A FastCGI application gets the variables a CGI script would, straight
/// in PARAMS records, but for brisk's `PATH` and with the
/// `Authorization` field (`HTTP_AUTHORIZATION`); the rule's `env` over
/// them, `PATH` included.
#[test]
fn an_application_gets_a_scripts_variables_but_path_and_with_authorization() {
    use crate::handlers::cgi::tests::env::{h, request, script};
    use crate::handlers::cgi::{build_env, vars, Names};
    let headers = [
        h("Host", "example.org"),
        h("Authorization", "Basic dTpw"),
        h("Cookie", "a=1"),
        h("Content-Type", "text/plain"),
        h("cookie", "b=2"),
    ];
    let mut req = request(&headers);
    req.remote = "[2001:db8::7]:4000".parse().unwrap();
    req.forwarded_https = Some(true);
    let script = script(b"/x");
    for extra in [vec![], vec![("PATH".to_string(), "/opt/bin".to_string())]] {
        let mut out = Vec::new();
        let mut w = Params::new(&mut out, 1);
        vars(Names::of(&script), &req, &extra, &mut w);
        w.close();
        // One record (no pair spans two), read back pair by pair.
        let record = read_record(&out).unwrap();
        assert_eq!(
            (record.kind, record.id, record.size()),
            (PARAMS, 1, out.len())
        );
        let (mut stream, mut got) = (record.content, Vec::new());
        while !stream.is_empty() {
            let ((name, value), used) = read_pair(stream).unwrap();
            got.push(format!(
                "{}={}",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value)
            ));
            stream = &stream[used..];
        }
        got.sort();
        let env = build_env(&script, &req, &extra);
        let mut want: Vec<String> = env
            .into_iter()
            .map(|e| e.into_string().unwrap())
            .filter(|e| extra.len() == 1 || !e.starts_with("PATH="))
            .chain(["HTTP_AUTHORIZATION=Basic dTpw".to_string()])
            .collect();
        want.sort();
        assert_eq!(got, want);
        for expected in [
            "HTTP_COOKIE=a=1; b=2",
            "HTTPS=on",
            "REMOTE_ADDR=2001:db8::7",
        ] {
            assert!(got.contains(&expected.to_string()), "{got:?}");
        }
    }
}
