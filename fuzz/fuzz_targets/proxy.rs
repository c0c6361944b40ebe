//! Feeds arbitrary bytes to what brisk reads from proxies: the PROXY
//! protocol header at the start of a `[proxy] listen` connection, and
//! `Forwarded` / `X-Forwarded-For` / `X-Forwarded-Proto` values from a
//! trusted peer. Beyond "never panics": a header is never longer than
//! the input nor than its bound, every shorter prefix of a whole header
//! asks for more, and an untrusted peer's headers are never read.
//!
//! Input layout: 1 selector byte, then the bytes (for the headers,
//! three values separated by 0xFF).

#![no_main]

use std::net::SocketAddr;

use brisk::access::proxy::forwarded::{client, By};
use brisk::access::proxy::header::{parse, Parsed, MAX_HEADER};
use brisk::access::proxy::{Cidr, Trusted};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if selector & 1 == 0 {
        header(rest);
    } else {
        headers(rest);
    }
});

fn header(input: &[u8]) {
    match parse(input) {
        Ok(Parsed::Done { len, .. }) => {
            assert!(len <= input.len() && len <= MAX_HEADER);
            for cut in [0, len / 2, len.saturating_sub(1)] {
                if cut < len {
                    assert_eq!(parse(&input[..cut]), Ok(Parsed::Incomplete));
                }
            }
            // What follows the header does not change it.
            assert_eq!(parse(&input[..len]), parse(input));
        }
        Ok(Parsed::Incomplete) => assert!(input.len() < MAX_HEADER),
        Err(_) => {}
    }
}

fn headers(input: &[u8]) {
    let mut values = input.split(|&b| b == 0xff);
    let forwarded = values.next().unwrap_or_default();
    let xff = values.next().unwrap_or_default();
    let proto = values.next().unwrap_or_default();
    let list: [(&[u8], &[u8]); 3] = [
        (b"Forwarded", forwarded),
        (b"X-Forwarded-For", xff),
        (b"X-Forwarded-Proto", proto),
    ];
    let trusted = Trusted(vec![
        Cidr::parse("10.0.0.0/8").unwrap(),
        Cidr::parse("::1").unwrap(),
    ]);
    let peer: SocketAddr = "10.0.0.1:1234".parse().unwrap();
    for by in [By::XForwardedFor, By::Forwarded] {
        let found = client(&trusted, by, peer, list.iter().copied()).unwrap_or(None);
        if input.is_empty() {
            assert_eq!(found, None, "no header, nothing to say");
        }
        // The walk from the right ends at the first untrusted address:
        // the client is never a trusted one unless every hop was; and
        // only the header read names it.
        if let Some(c) = found {
            let read = match by {
                By::XForwardedFor => !xff.is_empty() || !proto.is_empty(),
                By::Forwarded => !forwarded.is_empty(),
            };
            assert!(read, "named by the header not read");
            assert!(
                c.addr.port() == 0 || c.addr == peer || !forwarded.is_empty() || !xff.is_empty()
            );
        }
        let stranger: SocketAddr = "192.0.2.1:1".parse().unwrap();
        assert_eq!(
            client(&trusted, by, stranger, list.iter().copied()),
            Ok(None)
        );
    }
}
