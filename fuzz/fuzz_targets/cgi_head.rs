//! A CGI program's (or FastCGI application's) header block
//! (brisk::handlers::cgi::parse_head), arbitrary bytes as its output. It
//! never panics; a head it takes ends within the input, and what it passes
//! on to the client is well-formed field lines (`token: value\r\n`, no CR,
//! LF or NUL in a value), none of them a field brisk owns ([`DROPPED`],
//! `Status`, `Content-Length`) nor one a `Connection` line names; the
//! status is three digits; the same input cut short at any point before
//! the head's end is incomplete or refused, never another head.

#![no_main]

use brisk::handlers::cgi::{parse_head, DROPPED};
use libfuzzer_sys::fuzz_target;

const MAX: usize = 4096;

fn token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fuzz_target!(|data: &[u8]| {
    let Ok(Some(h)) = parse_head(data, MAX) else {
        return;
    };
    assert!(h.head_len <= data.len() && h.head_len <= MAX);
    assert!((100..=999).contains(&h.status), "{}", h.status);
    // The Connection lines of the input, and the names they list.
    let mut named: Vec<Vec<u8>> = Vec::new();
    for line in data[..h.head_len].split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(v) = line
            .get(..11)
            .filter(|p| p.eq_ignore_ascii_case(b"connection:"))
        {
            let _ = v;
            for t in line[11..].split(|&b| b == b',') {
                named.push(t.trim_ascii().to_ascii_lowercase());
            }
        }
    }
    let mut rest = &h.headers[..];
    while !rest.is_empty() {
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a CRLF ends each line");
        let line = &rest[..end];
        rest = &rest[end + 2..];
        let colon = line.iter().position(|&b| b == b':').expect("name: value");
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        assert!(
            !name.is_empty() && name.iter().all(|&b| token(b)),
            "{line:?}"
        );
        assert!(value.starts_with(b" "), "{line:?}");
        assert!(
            !value.iter().any(|&b| b == b'\r' || b == b'\n' || b == 0),
            "{line:?}"
        );
        let lower = name.to_ascii_lowercase();
        assert!(!DROPPED.iter().any(|d| d.as_bytes() == lower), "{line:?}");
        assert!(lower != b"status" && lower != b"content-length", "{line:?}");
        assert!(!named.contains(&lower), "{line:?} named by Connection");
    }
    for cut in 0..h.head_len {
        if let Ok(Some(other)) = parse_head(&data[..cut], MAX) {
            panic!(
                "a head of {} bytes in {cut} of {}",
                other.head_len, h.head_len
            );
        }
    }
});
