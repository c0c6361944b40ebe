//! Byte-exact PROXY headers, as HAProxy's specification shows them and
//! as balancers send them; each prefix of a valid header is incomplete,
//! never malformed.

use super::*;

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A version 2 header: command, family byte, address block and TLVs.
fn v2_header(cmd: u8, fam: u8, body: &[u8]) -> Vec<u8> {
    let mut h = V2_SIGNATURE.to_vec();
    h.push(0x20 | cmd);
    h.push(fam);
    h.extend_from_slice(&(body.len() as u16).to_be_bytes());
    h.extend_from_slice(body);
    h
}

fn v4_block() -> Vec<u8> {
    let mut b = vec![192, 0, 2, 1, 198, 51, 100, 7];
    b.extend_from_slice(&56324u16.to_be_bytes());
    b.extend_from_slice(&443u16.to_be_bytes());
    b
}

/// Every proper prefix of `header` asks for more.
fn prefixes_incomplete(header: &[u8]) {
    for n in 0..header.len() {
        assert_eq!(
            parse(&header[..n]),
            Ok(Parsed::Incomplete),
            "prefix of {n} bytes of {header:?}"
        );
    }
}

#[test]
fn v1_tcp4_with_the_request_behind_it() {
    let line = b"PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n";
    prefixes_incomplete(line);
    let mut input = line.to_vec();
    input.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(
        parse(&input),
        Ok(Parsed::Done {
            len: line.len(),
            source: Some(sa("192.0.2.1:56324")),
            destination: Some(sa("198.51.100.7:443")),
        })
    );
}

#[test]
fn v1_tcp6_and_unknown() {
    let line = b"PROXY TCP6 2001:db8::1 2001:db8::2 4711 80\r\n";
    prefixes_incomplete(line);
    assert_eq!(
        parse(line),
        Ok(Parsed::Done {
            len: line.len(),
            source: Some(sa("[2001:db8::1]:4711")),
            destination: Some(sa("[2001:db8::2]:80")),
        })
    );
    for line in [
        &b"PROXY UNKNOWN\r\n"[..],
        b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n",
    ] {
        assert_eq!(
            parse(line),
            Ok(Parsed::Done {
                len: line.len(),
                source: None,
                destination: None
            })
        );
    }
}

#[test]
fn v1_the_longest_line_fits_and_one_more_byte_does_not() {
    // (§2.1's worst case: UNKNOWN with the longest addresses and ports.)
    let long = "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_eq!(long.len(), MAX_V1);
    assert!(matches!(
        parse(long.as_bytes()),
        Ok(Parsed::Done { len: MAX_V1, .. })
    ));
    let mut longer = b"PROXY UNKNOWN ".to_vec();
    longer.resize(MAX_V1, b'x');
    assert!(parse(&longer).is_err(), "107 bytes and no CRLF");
    assert_eq!(parse(&longer[..MAX_V1 - 1]), Ok(Parsed::Incomplete));
}

#[test]
fn v1_malformed() {
    let bad: &[&[u8]] = &[
        b"GET / HTTP/1.1\r\n\r\n",
        b"PROXY",
        b"PROXYX",
        b"proxy TCP4 192.0.2.1 198.51.100.7 1 2\r\n",
        b"PROXY TCP5 192.0.2.1 198.51.100.7 1 2\r\n",
        b"PROXY TCP4 2001:db8::1 198.51.100.7 1 2\r\n",
        b"PROXY TCP6 192.0.2.1 2001:db8::2 1 2\r\n",
        b"PROXY TCP4 192.0.2.256 198.51.100.7 1 2\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 65536 2\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 01 2\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 -1 2\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1 2 3\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1\r\n",
        b"PROXY TCP4  192.0.2.1 198.51.100.7 1 2\r\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1 2\n",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1 2\rX",
        b"PROXY TCP4 192.0.2.1 198.51.100.7 1 2 \r\n",
    ];
    for input in bad {
        let got = parse(input);
        // "PROXY" alone is a prefix: more may come.
        if *input == b"PROXY" {
            assert_eq!(got, Ok(Parsed::Incomplete));
            continue;
        }
        assert!(
            got.is_err(),
            "{:?} gave {got:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn v2_proxy_tcp4_tcp6_with_tlvs() {
    let mut body = v4_block();
    // A TLV (PP2_TYPE_AUTHORITY "example.org"), skipped.
    body.extend_from_slice(&[0x02, 0, 11]);
    body.extend_from_slice(b"example.org");
    let h = v2_header(1, 0x11, &body);
    prefixes_incomplete(&h);
    let mut input = h.clone();
    input.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(
        parse(&input),
        Ok(Parsed::Done {
            len: h.len(),
            source: Some(sa("192.0.2.1:56324")),
            destination: Some(sa("198.51.100.7:443")),
        })
    );
    let src: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let dst: Ipv6Addr = "2001:db8::2".parse().unwrap();
    let mut body = src.octets().to_vec();
    body.extend_from_slice(&dst.octets());
    body.extend_from_slice(&4711u16.to_be_bytes());
    body.extend_from_slice(&80u16.to_be_bytes());
    let h = v2_header(1, 0x21, &body);
    assert_eq!(
        parse(&h),
        Ok(Parsed::Done {
            len: 52,
            source: Some(sa("[2001:db8::1]:4711")),
            destination: Some(sa("[2001:db8::2]:80")),
        })
    );
}

#[test]
fn v2_local_unspec_and_unix_name_no_client() {
    // LOCAL (a health check from the balancer itself), with or without
    // addresses; UNSPEC; a UNIX socket's 216 bytes.
    for h in [
        v2_header(0, 0x00, &[]),
        v2_header(0, 0x11, &v4_block()),
        v2_header(1, 0x00, &[]),
        v2_header(1, 0x31, &[0; 216]),
    ] {
        assert_eq!(
            parse(&h),
            Ok(Parsed::Done {
                len: h.len(),
                source: None,
                destination: None
            }),
            "{h:?}"
        );
    }
}

#[test]
fn v2_malformed() {
    let mut bad_version = v2_header(1, 0x11, &v4_block());
    bad_version[12] = 0x11;
    let mut bad_command = v2_header(1, 0x11, &v4_block());
    bad_command[12] = 0x22;
    let cases = [
        bad_version,
        bad_command,
        // Family 4 and protocol 3 do not exist.
        v2_header(1, 0x41, &v4_block()),
        v2_header(1, 0x13, &v4_block()),
        // Shorter than the family's addresses.
        v2_header(1, 0x11, &[0; 11]),
        v2_header(1, 0x21, &[0; 35]),
        // A signature that goes wrong.
        b"\r\n\r\n\0\r\nQUIX\n\x21\x11\x00\x0c".to_vec(),
        b"\r\nGET".to_vec(),
    ];
    for h in cases {
        assert!(parse(&h).is_err(), "{h:?}");
    }
}

#[test]
fn v2_length_is_bounded_before_anything_is_buffered() {
    // A length field over the bound is refused from the first 16 bytes.
    let mut h = V2_SIGNATURE.to_vec();
    h.extend_from_slice(&[0x21, 0x11]);
    h.extend_from_slice(&((MAX_HEADER - 16 + 1) as u16).to_be_bytes());
    assert!(parse(&h).is_err());
    // The largest allowed: waits for its bytes, then is done.
    let mut body = v4_block();
    body.resize(MAX_HEADER - 16, 0);
    let h = v2_header(1, 0x11, &body);
    assert_eq!(parse(&h[..h.len() - 1]), Ok(Parsed::Incomplete));
    assert!(matches!(parse(&h), Ok(Parsed::Done { len, .. }) if len == MAX_HEADER));
}

/// A line ended by a bare LF is refused as such (it was read on to the
/// request's CR, and refused for its "port", or, after UNKNOWN, taken
/// with the request line as the header's).
#[test]
fn v1_a_bare_lf_is_no_line_end() {
    for line in [
        &b"PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\nGET / HTTP/1.1\r\n\r\n"[..],
        b"PROXY UNKNOWN ffff::1\nGET / HTTP/1.1\r\n\r\n",
        b"PROXY TCP4 192.0.2.1\n",
    ] {
        assert_eq!(
            parse(line),
            Err(Malformed("PROXY v1 line ends with a bare LF, not CRLF")),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}
