//! Feeds arbitrary bytes to the upstream response parser. Beyond "never
//! panics": every error is a 502, a parsed head ends with CRLF CRLF within
//! the limits, its reason and fields lie inside it, every prefix of a
//! valid head is "incomplete" (the parser refuses only what can never
//! become valid), and a body is delimited the one way RFC 9112 §6.3 says.

#![no_main]

use brisk::http::parse::response::{parse_response, ResponseFraming};
use brisk::http::parse::Limits;
use libfuzzer_sys::fuzz_target;

const LIMITS: [Limits; 2] = [
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

fn within(outer: &[u8], inner: &[u8]) -> bool {
    let range = outer.as_ptr_range();
    let start = inner.as_ptr();
    inner.is_empty() || (range.start <= start && start as usize + inner.len() <= range.end as usize)
}

fuzz_target!(|data: &[u8]| {
    for limits in &LIMITS {
        for head_request in [false, true] {
            let mut fields = 0;
            let head = match parse_response(data, limits, head_request, &mut |h| {
                assert!(within(data, h.name) && within(data, h.value));
                fields += 1;
            }) {
                Err(e) => {
                    assert_eq!(e.status.0, 502, "{e:?}");
                    continue;
                }
                Ok(None) => continue,
                Ok(Some(head)) => head,
            };
            assert!((100..=599).contains(&head.status));
            assert!(head.head_len <= limits.max_head && head.head_len <= data.len());
            assert!(data[..head.head_len].ends_with(b"\r\n\r\n"));
            assert!(within(&data[..head.head_len], head.reason));
            assert!(fields <= limits.max_headers);
            let bodiless = head_request || head.status < 200 || matches!(head.status, 204 | 304);
            assert_eq!(bodiless, head.framing == ResponseFraming::None);
            assert!(!(head.keep_alive && head.framing == ResponseFraming::Close));
            for cut in [0, head.head_len / 2, head.head_len - 1] {
                let prefix = parse_response(&data[..cut], limits, head_request, &mut |_| {});
                assert!(matches!(prefix, Ok(None)), "prefix {cut}: {prefix:?}");
            }
        }
    }
});
