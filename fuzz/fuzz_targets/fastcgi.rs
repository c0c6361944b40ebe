//! FastCGI records (brisk::handlers::fastcgi). Arbitrary bytes as an
//! application's answer never panic the decoder, and it says the same
//! whether fed whole, a byte at a time or in pieces of a size the input
//! picks (`decode_all` also checks that data is a non-empty slice of the
//! input and that no bytes are left over without an event). Then the
//! input is cut into name-value pairs and a body: what the encoders write
//! of them reads back record by record (version 1, our id, content at
//! most 65,535 bytes padded with zeros to a multiple of 8, streams ended
//! by one empty record), and an answer written from them decodes back.

#![no_main]

use brisk::handlers::fastcgi::peer::{self, decode_all, read_pair, read_record, Said};
use brisk::handlers::fastcgi::record::*;
use libfuzzer_sys::fuzz_target;

/// The content of the stream of `kind` that starts at `*at` (records up
/// to and including its empty one), checking every record on the way.
fn read_stream(out: &[u8], at: &mut usize, kind: u8, id: u16) -> Vec<u8> {
    let mut content = Vec::new();
    loop {
        let r = read_record(&out[*at..]).expect("a whole record");
        assert_eq!((r.version, r.kind, r.id), (1, kind, id));
        assert!(r.content.len() <= MAX_CONTENT);
        assert_eq!((r.content.len() + r.padding.len()) % 8, 0);
        assert!(r.padding.iter().all(|&b| b == 0));
        *at += r.size();
        if r.content.is_empty() {
            return content;
        }
        content.extend_from_slice(r.content);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, input)) = data.split_first() else {
        return;
    };
    let id = 1 + u16::from(ctl >> 6);

    // The decoder on arbitrary bytes, in three splits.
    let whole = decode_all(id, [input]);
    assert_eq!(decode_all(id, input.chunks(1)), whole);
    assert_eq!(
        decode_all(id, input.chunks(1 + usize::from(ctl & 63))),
        whole
    );

    // Pairs: the input cut at each 0xFF, fields taken two by two; a field
    // starting with 0xFE stands for a long one (over 127 bytes, and with
    // 0xFD, once, over 65,535, so that it spans records).
    let mut long = Vec::new();
    let mut huge = false;
    for f in input.split(|&b| b == 0xFF) {
        long.push(match f.first() {
            Some(0xFE) => f.repeat(128 / f.len() + 1),
            Some(0xFD) if !huge => {
                huge = true;
                f.repeat(65_536 / f.len() + 1)
            }
            _ => f.to_vec(),
        });
    }
    let pairs: Vec<(&[u8], &[u8])> = long
        .chunks_exact(2)
        .map(|p| (&p[0][..], &p[1][..]))
        .collect();
    let body = long.last().map_or(&[][..], |b| &b[..]);
    let keep = ctl & 1 == 1;

    let mut out = Vec::new();
    begin_request(&mut out, id, keep);
    params(&mut out, id, pairs.iter().copied());
    params_end(&mut out, id);
    stdin(&mut out, id, body);
    stdin_end(&mut out, id);
    abort_request(&mut out, id);

    let mut at = 0;
    let begin = read_record(&out).expect("BEGIN_REQUEST");
    assert_eq!(
        (begin.version, begin.kind, begin.id),
        (1, BEGIN_REQUEST, id)
    );
    assert_eq!(begin.content, [0, 1, u8::from(keep), 0, 0, 0, 0, 0]);
    assert!(begin.padding.is_empty());
    at += begin.size();
    let stream = read_stream(&out, &mut at, PARAMS, id);
    let mut rest = &stream[..];
    for pair in &pairs {
        let (read, used) = read_pair(rest).expect("a whole pair");
        assert_eq!(read, *pair);
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
    assert_eq!(read_stream(&out, &mut at, STDIN, id), body);
    assert_eq!(
        &out[at..],
        [1, ABORT_REQUEST, (id >> 8) as u8, id as u8, 0, 0, 0, 0]
    );

    // An answer written from the same pieces reads back.
    let (text, errors) = body.split_at(body.len() / 2);
    let app_status = u32::from(ctl) << 8 | input.len() as u32;
    let mut answer = Vec::new();
    peer::stdout(&mut answer, id, text);
    peer::stderr(&mut answer, id, errors);
    peer::stdout_end(&mut answer, id);
    peer::end_request(&mut answer, id, app_status, REQUEST_COMPLETE);
    let mut want = Vec::new();
    if !text.is_empty() {
        want.push(Said::Stdout(text.to_vec()));
    }
    if !errors.is_empty() {
        want.push(Said::Stderr(errors.to_vec()));
    }
    want.push(Said::End {
        app_status,
        protocol_status: REQUEST_COMPLETE,
    });
    let step = 1 + usize::from(ctl & 63);
    assert_eq!(decode_all(id, [&answer[..]]), (want.clone(), None));
    assert_eq!(decode_all(id, answer.chunks(step)), (want, None));
});
