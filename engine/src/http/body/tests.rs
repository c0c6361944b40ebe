//! Unit tests for the body decoder, including exhaustive input splits.

use super::*;

const LIMITS: BodyLimits = BodyLimits {
    max_body: 1000,
    max_chunk_ext: 64,
    max_trailers: 64,
};

/// What a whole decode run produced.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    output: Vec<u8>,
    consumed: usize,
    done: bool,
    error: Option<u16>,
}

/// Decodes `input` fed in the pieces that `cuts` (sorted offsets) make.
/// Like a server, it offers unconsumed bytes again with the next piece.
fn run_split(framing: BodyFraming, limits: &BodyLimits, input: &[u8], cuts: &[usize]) -> Outcome {
    let mut out = Outcome {
        output: Vec::new(),
        consumed: 0,
        done: false,
        error: None,
    };
    let mut dec = match BodyDecoder::new(framing, limits) {
        Ok(d) => d,
        Err(e) => {
            out.error = Some(e.status.0);
            return out;
        }
    };
    for &end in cuts.iter().chain(std::iter::once(&input.len())) {
        if end < out.consumed {
            continue;
        }
        let mut sink = |d: &[u8]| out.output.extend_from_slice(d);
        match dec.decode(&input[out.consumed..end], &mut sink) {
            Ok(n) => {
                assert!(n <= end - out.consumed);
                out.consumed += n;
            }
            Err(e) => {
                out.error = Some(e.status.0);
                // How much earlier pieces consumed depends on the cuts.
                out.consumed = 0;
                // A failed decoder stays failed.
                assert_eq!(dec.decode(b"0\r\n\r\n", &mut |_| ()), Err(e));
                break;
            }
        }
    }
    out.done = dec.is_done();
    out
}

fn run(framing: BodyFraming, input: &[u8]) -> Outcome {
    run_split(framing, &LIMITS, input, &[])
}

fn chunked(input: &[u8]) -> Outcome {
    run(BodyFraming::Chunked, input)
}

#[track_caller]
fn assert_chunked_ok(input: &[u8], body: &[u8], consumed: usize) {
    let o = chunked(input);
    assert_eq!(o.error, None, "{:?}", String::from_utf8_lossy(input));
    assert_eq!(o.output, body);
    assert_eq!(o.consumed, consumed);
    assert!(o.done);
}

#[track_caller]
fn assert_chunked_err(input: &[u8], status: u16) {
    let o = chunked(input);
    assert_eq!(
        o.error,
        Some(status),
        "{:?}",
        String::from_utf8_lossy(input)
    );
}

#[test]
fn no_body_and_empty_length() {
    for framing in [BodyFraming::None, BodyFraming::Length(0)] {
        let o = run(framing, b"GET / HTTP/1.1\r\n");
        assert_eq!((o.consumed, o.done, o.error), (0, true, None));
    }
}

#[test]
fn content_length() {
    let o = run(BodyFraming::Length(5), b"helloGET /");
    assert_eq!(o.output, b"hello");
    assert_eq!(o.consumed, 5);
    assert!(o.done);
    let o = run(BodyFraming::Length(5), b"hel");
    assert_eq!((o.consumed, o.done), (3, false));
    let o = run(BodyFraming::Length(1000), &[b'x'; 1000]);
    assert!(o.done);
    assert_eq!(run(BodyFraming::Length(1001), b"").error, Some(413));
    assert_eq!(run(BodyFraming::Length(u64::MAX), b"").error, Some(413));
}

#[test]
fn chunked_basics() {
    assert_chunked_ok(b"a\r\n0123456789\r\n0\r\n\r\n", b"0123456789", 20);
    assert_chunked_ok(b"A\r\n0123456789\r\n0\r\n\r\nGET", b"0123456789", 20);
    assert_chunked_ok(
        b"5\r\nhello\r\n6\r\n world\r\n000\r\n\r\n",
        b"hello world",
        28,
    );
    assert_chunked_ok(b"0\r\n\r\n", b"", 5);
    assert_chunked_ok(b"0000000000000001\r\nx\r\n0\r\n\r\n", b"x", 26);
    let o = chunked(b"5\r\nhel");
    assert_eq!(
        (o.output.as_slice(), o.consumed, o.done),
        (&b"hel"[..], 6, false)
    );
}

#[test]
fn chunk_extensions() {
    for ext in [
        &b";foo"[..],
        b";foo=bar",
        b";a;b=c;d",
        b" ;foo",
        b"\t; foo = bar ",
        b";foo=\"I \\\"love\\\"; \\\\extensions\\\\\"",
        b";foo=\"\";bar",
        b";ilovew3;somuchlove=aretheseparametersfor;another=withvalue",
    ] {
        let input = [b"3", ext, b"\r\nabc\r\n0", ext, b"\r\n\r\n"].concat();
        assert_chunked_ok(&input, b"abc", input.len());
    }
    for ext in [
        &b";"[..],
        b"; ",
        b";=x",
        b";foo=",
        b";foo=\"abc",
        b";foo=\"a\rb\"",
        b";foo=a b",
        b";foo=\"a\"b",
        b"; foo bar",
        b"x",
        b" ",
        b" x",
        b";f\x00o",
        b";foo=\"\x01\"",
    ] {
        let input = [b"3", ext, b"\r\nabc\r\n0\r\n\r\n"].concat();
        assert_chunked_err(&input, 400);
    }
}

#[test]
fn chunk_extension_limit() {
    let ext = format!(";{}", "e".repeat(63));
    let input = format!("3{ext}\r\nabc\r\n0{ext}\r\n\r\n");
    assert_chunked_ok(input.as_bytes(), b"abc", input.len());
    let ext = format!(";{}", "e".repeat(64));
    assert_chunked_err(format!("3{ext}\r\nabc\r\n0\r\n\r\n").as_bytes(), 400);
}

#[test]
fn chunk_size_errors() {
    assert_chunked_err(b"\r\n", 400);
    assert_chunked_err(b"g\r\n", 400);
    assert_chunked_err(b"-1\r\n", 400);
    assert_chunked_err(b"0x5\r\n", 400);
    assert_chunked_err(b"+5\r\n", 400);
    assert_chunked_err(b" 5\r\n", 400);
    assert_chunked_err(b"a \r\n0123456789\r\n0\r\n\r\n", 400);
    assert_chunked_err(b"2 erfrferferf\r\naa\r\n0 rrrr\r\n\r\n", 400);
    assert_chunked_err(b"3 \n  \r\nfoo\r\n\r\n", 400);
    assert_chunked_err(b"5\nhello\r\n0\r\n\r\n", 400);
    assert_chunked_err(b"5\r\r;ABCD\r\n34\r\nE\r\n0\r\n\r\n", 400);
    // Missing last-chunk.
    assert_chunked_err(b"3\r\nfoo\r\n\r\n", 400);
    // 17 digits are refused even as leading zeros; 16 may overflow nothing.
    assert_chunked_err(b"00000000000000001\r\nx\r\n0\r\n\r\n", 400);
    let big = BodyLimits {
        max_body: u64::MAX,
        ..LIMITS
    };
    let o = run_split(BodyFraming::Chunked, &big, b"ffffffffffffffff\r\nabc", &[]);
    assert_eq!((o.error, o.consumed), (None, 21));
    let o = run_split(BodyFraming::Chunked, &big, b"10000000000000000\r\n", &[]);
    assert_eq!(o.error, Some(400));
}

#[test]
fn chunk_data_must_end_with_crlf() {
    assert_chunked_err(b"5\r\nABCDE0\r\n", 400);
    assert_chunked_err(b"5\r\nABCDE\n0\r\n\r\n", 400);
    assert_chunked_err(b"5\r\nABCDE\r0\r\n\r\n", 400);
    assert_chunked_err(b"5\r\nABCDEF\r\n0\r\n\r\n", 400);
}

#[test]
fn chunked_body_limit_413() {
    let o = chunked(b"3e8\r\n");
    assert_eq!(o.error, None);
    // Refused on the digit that makes the size too large.
    let o = chunked(b"3e9");
    assert_eq!(o.error, Some(413));
    // The limit counts all chunks together.
    let mut input = b"1f4\r\n".to_vec();
    input.extend_from_slice(&[b'x'; 500]);
    input.extend_from_slice(b"\r\n1f5\r\n");
    assert_eq!(chunked(&input).error, Some(413));
}

#[test]
fn trailers() {
    let input = b"5\r\nhello\r\n0\r\nVary: *\r\nContent-Type: text/plain\r\nE:\r\n\r\nX";
    assert_chunked_ok(input, b"hello", input.len() - 1);
    for bad_trailer in [
        &b"Vary : *\r\n\r\n"[..],
        b" Vary: *\r\n\r\n",
        b"Vary: *\r\n\tmore\r\n\r\n",
        b": *\r\n\r\n",
        b"Vary\r\n\r\n",
        b"Vary: a\x00b\r\n\r\n",
        b"Vary: *\n\r\n",
        b"Vary: *\r\n\n",
        b"Vary: *\r\r\n",
        b"Va@ry: *\r\n\r\n",
    ] {
        assert_chunked_err(&[&b"0\r\n"[..], bad_trailer].concat(), 400);
    }
    // 64 bytes of field lines fit, 65 do not.
    let fits = format!("0\r\nX: {}\r\n\r\n", "v".repeat(59));
    assert_chunked_ok(fits.as_bytes(), b"", fits.len());
    let over = format!("0\r\nX: {}\r\n\r\n", "v".repeat(60));
    assert_chunked_err(over.as_bytes(), 431);
}

#[test]
fn trailers_are_kept_when_asked_however_the_input_is_cut() {
    let input = b"5\r\nhello\r\n0\r\ngrpc-status: 0\r\nX-Sum:abc\r\n\r\nNEXT";
    let limits = BodyLimits {
        max_body: 1 << 20,
        max_chunk_ext: 64,
        max_trailers: 64,
    };
    for cut in 0..input.len() {
        let mut d = BodyDecoder::new(BodyFraming::Chunked, &limits).unwrap();
        let (mut body, mut kept) = (Vec::new(), Vec::new());
        let mut sink = |b: &[u8]| body.extend_from_slice(b);
        let mut used = d
            .decode_keeping(&input[..cut], &mut sink, Some(&mut kept))
            .unwrap();
        if !d.is_done() {
            let rest = &input[used..];
            used += d.decode_keeping(rest, &mut sink, Some(&mut kept)).unwrap();
        }
        assert!(d.is_done(), "cut at {cut}");
        assert_eq!(used, input.len() - 4, "cut at {cut}");
        assert_eq!(body, b"hello");
        assert_eq!(kept, b"grpc-status: 0\r\nX-Sum:abc\r\n", "cut at {cut}");
    }
    // None kept unless asked, nor from a body without trailers.
    let mut d = BodyDecoder::new(BodyFraming::Chunked, &limits).unwrap();
    let mut kept = Vec::new();
    d.decode_keeping(b"2\r\nok\r\n0\r\n\r\n", &mut |_| {}, Some(&mut kept))
        .unwrap();
    assert!(d.is_done() && kept.is_empty());
}

/// Every way of cutting `input` in two or three pieces, and one byte at a
/// time, gives the same outcome as one call.
fn assert_split_invariant(framing: BodyFraming, input: &[u8]) {
    let whole = run(framing, input);
    let bytewise: Vec<usize> = (1..input.len()).collect();
    assert_eq!(run_split(framing, &LIMITS, input, &bytewise), whole);
    for a in 0..=input.len() {
        for b in a..=input.len() {
            let o = run_split(framing, &LIMITS, input, &[a, b]);
            assert_eq!(
                o,
                whole,
                "cuts {a} {b} of {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }
}

#[test]
fn any_split_gives_the_same_result() {
    let samples: [&[u8]; 10] = [
        b"a\r\n0123456789\r\n0\r\n\r\nNEXT",
        b"5;ext=\"q\\\"s\";x\r\nhello\r\n6 ; y = z\r\n world\r\n0\r\nT: v\r\nU:\r\n\r\nGET",
        b"5\r\nhel",
        b"5\r\nhello\r\n0\r\nBad : x\r\n\r\n",
        b"3\r\nfoo\r\n\r\n",
        b"3;foo=\"abc\r\nfoo\r\n0\r\n\r\n",
        b"1\r\nx\r\n1\r\ny\r\n1\r\nz\r\n0\r\n\r\n",
        b"3e8\r\n",
        b"3e9\r\n",
        b"0\r\n\r",
    ];
    for s in samples {
        assert_split_invariant(BodyFraming::Chunked, s);
    }
    assert_split_invariant(BodyFraming::Length(7), b"0123456789");
    assert_split_invariant(BodyFraming::Length(7), b"0123");
}

#[test]
fn random_mutations_never_panic() {
    let seeds: [&[u8]; 3] = [
        b"5;a=b\r\nhello\r\n6\r\n world\r\n0\r\nT: v\r\n\r\n",
        b"1e\r\nall your base are belong to us\r\n0\r\n\r\n",
        b"a;q=\"x\\y\"\r\n0123456789\r\n0\r\n\r\n",
    ];
    let interesting = b"\r\n ;=\"\\\t:0aF\x00\xff";
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let mut buf = seeds[(next() % 3) as usize].to_vec();
        for _ in 0..=next() % 3 {
            let at = (next() % (buf.len() as u64 + 1)) as usize;
            let byte = interesting[(next() % interesting.len() as u64) as usize];
            match next() % 3 {
                0 if at < buf.len() => buf[at] = byte,
                1 if at < buf.len() => {
                    buf.remove(at);
                }
                _ => buf.insert(at, byte),
            }
        }
        let cut = (next() % (buf.len() as u64 + 1)) as usize;
        let o = run_split(BodyFraming::Chunked, &LIMITS, &buf, &[cut]);
        assert!(o.consumed <= buf.len());
        assert!(o.error.is_some() || o.output.len() <= o.consumed);
    }
}

/// Decoding in place gives what decoding into a sink gives, wherever
/// the input is split: the same bytes, the same count consumed (bytes
/// after the body's end left), the same error with what came before it.
#[test]
fn decoding_in_place_matches_decoding_into_a_sink() {
    let cases: [(BodyFraming, &[u8]); 5] = [
        (
            BodyFraming::Chunked,
            b"3\r\nabc\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\nNEXT",
        ),
        (BodyFraming::Chunked, b"1\r\na\r\n2\r\nbc\r\n0\r\n\r\n"),
        (BodyFraming::Chunked, b"2\r\nab\r\nzz\r\n"),
        (BodyFraming::Length(6), b"abcdefghij"),
        (BodyFraming::Length(20), b"abcdef"),
    ];
    for (framing, input) in cases {
        for cut in 0..=input.len() {
            let mut by_sink = BodyDecoder::new(framing, &LIMITS).unwrap();
            let mut in_place = BodyDecoder::new(framing, &LIMITS).unwrap();
            let (mut want, mut got) = (Vec::new(), Vec::new());
            let (mut fed, mut fed_in_place) = (0, 0);
            for end in [cut, input.len()] {
                let piece = &input[fed..end.max(fed)];
                let r1 = by_sink.decode(piece, &mut |d| want.extend_from_slice(d));
                let mut buf = input[fed_in_place..end.max(fed_in_place)].to_vec();
                let r2 = in_place.decode_in_place(&mut buf, None);
                got.extend_from_slice(&buf);
                assert_eq!(r1, r2, "{framing:?} cut at {cut}");
                fed += r1.unwrap_or(0);
                fed_in_place += r2.unwrap_or(0);
            }
            assert_eq!(got, want, "{framing:?} cut at {cut}");
            assert_eq!(in_place.is_done(), by_sink.is_done());
        }
    }
}
