//! Feeds arbitrary bytes to the request parser and, when a head parses, the
//! bytes after it to the body decoder under several framings. Beyond "never
//! panics", it checks the invariants the connection code relies on.

#![no_main]

use brisk::http::body::{BodyDecoder, BodyLimits};
use brisk::http::parse::{parse_request, BodyFraming, Header, Limits, ParseError};
use libfuzzer_sys::fuzz_target;

/// Small limits reach the 414/431 paths; large ones reach deep heads.
const HEAD_LIMITS: [Limits; 2] = [
    Limits {
        max_request_line: 40,
        max_head: 160,
        max_headers: 4,
    },
    Limits {
        max_request_line: 8192,
        max_head: 65536,
        max_headers: 64,
    },
];

const BODY_LIMITS: BodyLimits = BodyLimits {
    max_body: 4096,
    max_chunk_ext: 64,
    max_trailers: 256,
};

const STATUSES: [u16; 7] = [400, 411, 414, 417, 431, 501, 505];

fn within(outer: &[u8], inner: &[u8]) -> bool {
    let range = outer.as_ptr_range();
    let start = inner.as_ptr();
    inner.is_empty() || (range.start <= start && start as usize + inner.len() <= range.end as usize)
}

fn check_error(e: ParseError) {
    assert!(STATUSES.contains(&e.status.0), "unexpected status {e:?}");
    assert!(!e.reason.is_empty());
}

/// What one decode run gave: (output, consumed or error status, done).
fn decode(framing: BodyFraming, input: &[u8], cut: usize) -> (Vec<u8>, Result<usize, u16>, bool) {
    let mut out = Vec::new();
    let Ok(mut dec) = BodyDecoder::new(framing, &BODY_LIMITS) else {
        return (out, Err(413), false);
    };
    let mut consumed = 0;
    for end in [cut.min(input.len()), input.len()] {
        let mut sink = |d: &[u8]| out.extend_from_slice(d);
        match dec.decode(&input[consumed..end], &mut sink) {
            Ok(n) => {
                assert!(n <= end - consumed);
                consumed += n;
            }
            Err(e) => {
                assert!(matches!(e.status.0, 400 | 413 | 431), "{e:?}");
                return (out, Err(e.status.0), false);
            }
        }
    }
    assert!(out.len() <= consumed);
    (out, Ok(consumed), dec.is_done())
}

fn check_body(framing: BodyFraming, input: &[u8]) {
    let whole = decode(framing, input, input.len());
    // The same bytes split in two pieces must decode the same way.
    for cut in [1, input.len() / 2, input.len().saturating_sub(1)] {
        let split = decode(framing, input, cut);
        assert_eq!(split.0, whole.0);
        assert_eq!(split.2, whole.2);
        match (split.1, whole.1) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a, b),
            (a, b) => panic!("split gave {a:?}, whole gave {b:?}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    for limits in &HEAD_LIMITS {
        let mut storage = [Header::EMPTY; 64];
        let req = match parse_request(data, limits, &mut storage) {
            Err(e) => {
                check_error(e);
                continue;
            }
            Ok(None) => continue,
            Ok(Some(req)) => req,
        };
        assert!(req.head_len <= data.len());
        assert!(req.head_len <= limits.max_head);
        assert!(data[..req.head_len].ends_with(b"\r\n\r\n"));
        assert!(req.headers.len() <= limits.max_headers);
        assert!(within(data, req.method_token));
        match &req.target {
            std::borrow::Cow::Borrowed(t) => {
                assert!(within(data, t) || *t == b"/" || *t == b"*")
            }
            // Only `http://host?query` makes a target: `/` and the query sent.
            std::borrow::Cow::Owned(t) => {
                assert!(t.starts_with(b"/?") && data.windows(t.len() - 1).any(|w| w == &t[1..]))
            }
        }
        // No fragment and no control byte ever reaches a handler.
        assert!(!req
            .target
            .iter()
            .any(|&b| b == b'#' || b <= 0x20 || b == 0x7f));
        for h in req.headers {
            assert!(
                within(&data[..req.head_len], h.name) && within(&data[..req.head_len], h.value)
            );
        }
        if let Some(host) = req.host {
            assert!(within(data, host));
        }
        let head_len = req.head_len;
        let framing = req.body;
        // A valid head is only ever "incomplete" while it is cut short:
        // the parser refuses only what can never become valid.
        for cut in [0, head_len / 2, head_len - 1] {
            let mut storage = [Header::EMPTY; 64];
            let prefix = parse_request(&data[..cut], limits, &mut storage);
            assert!(
                matches!(prefix, Ok(None)),
                "prefix {cut} of a valid head: {prefix:?}"
            );
        }
        let rest = &data[head_len..];
        check_body(framing, rest);
        check_body(BodyFraming::Chunked, rest);
        check_body(BodyFraming::Length(rest.len() as u64 / 2), rest);
    }
});
