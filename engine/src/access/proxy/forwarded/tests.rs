//! The walk from the right through trusted proxies, for `Forwarded`
//! and `X-Forwarded-For`, with the headers a client may forge.

use super::*;
use crate::access::proxy::Cidr;

fn trusted(ranges: &[&str]) -> Trusted {
    Trusted(ranges.iter().map(|r| Cidr::parse(r).unwrap()).collect())
}

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// The client `headers` name, read as `[proxy] header` says by default
/// (X-Forwarded-For).
fn run(t: &Trusted, peer: &str, headers: &[(&str, &str)]) -> Option<Client> {
    run_by(t, By::XForwardedFor, peer, headers)
}

fn run_by(t: &Trusted, by: By, peer: &str, headers: &[(&str, &str)]) -> Option<Client> {
    let h: Vec<(&[u8], &[u8])> = headers
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    client(t, by, sa(peer), h.iter().copied()).expect("well-formed")
}

/// The client `headers` name in `Forwarded`.
fn run_fwd(t: &Trusted, peer: &str, headers: &[(&str, &str)]) -> Option<Client> {
    run_by(t, By::Forwarded, peer, headers)
}

fn addr(c: Option<Client>) -> Option<String> {
    c.map(|c| c.addr.to_string())
}

#[test]
fn an_untrusted_peer_is_never_read() {
    let t = trusted(&["10.0.0.0/8"]);
    let h = [
        ("X-Forwarded-For", "203.0.113.7"),
        ("Forwarded", "for=203.0.113.7;proto=https"),
        ("X-Forwarded-Proto", "https"),
    ];
    assert_eq!(run(&t, "192.0.2.9:5000", &h), None);
    assert_eq!(run_fwd(&t, "192.0.2.9:5000", &h), None);
    assert_eq!(run(&Trusted::default(), "10.0.0.1:5000", &h), None);
}

/// A proxy that appends to X-Forwarded-For (nginx's
/// `$proxy_add_x_forwarded_for`, HAProxy's `option forwardfor`) passes a
/// client's own `Forwarded` on as it came: with X-Forwarded-For the
/// header read, that is never believed, nor its proto; and the other
/// way round.
#[test]
fn the_header_not_read_is_the_clients_to_forge() {
    let t = trusted(&["10.0.0.0/8"]);
    let h = [
        ("Forwarded", "for=127.0.0.1;proto=https"),
        ("X-Forwarded-For", "203.0.113.7"),
    ];
    let c = run(&t, "10.0.0.1:1", &h).unwrap();
    assert_eq!((c.addr, c.https), (sa("203.0.113.7:0"), None));
    let h = [("Forwarded", "for=127.0.0.1;proto=https")];
    assert_eq!(run(&t, "10.0.0.1:1", &h), None, "X-Forwarded-For only");
    let h = [
        ("X-Forwarded-For", "127.0.0.1"),
        ("X-Forwarded-Proto", "https"),
        ("Forwarded", "for=203.0.113.7"),
    ];
    let c = run_fwd(&t, "10.0.0.1:1", &h).unwrap();
    assert_eq!((c.addr, c.https), (sa("203.0.113.7:0"), None));
    let h = [("X-Forwarded-For", "127.0.0.1")];
    assert_eq!(run_fwd(&t, "10.0.0.1:1", &h), None, "Forwarded only");
}

#[test]
fn x_forwarded_for_from_the_right() {
    let t = trusted(&["10.0.0.0/8"]);
    // The client forged "1.1.1.1"; the trusted proxy appended what it saw.
    let h = [("X-Forwarded-For", "1.1.1.1, 203.0.113.7")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("203.0.113.7:0")
    );
    // Two trusted proxies in a row: the second's peer is the first.
    let h = [("x-forwarded-for", "1.1.1.1, 203.0.113.7, 10.9.9.9")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("203.0.113.7:0")
    );
    // Several lines are one list, in order.
    let h = [
        ("X-Forwarded-For", "1.1.1.1"),
        ("X-Forwarded-For", "203.0.113.7, 10.9.9.9"),
    ];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("203.0.113.7:0")
    );
    // Every hop trusted: the leftmost is as far as one can see.
    let h = [("X-Forwarded-For", "10.1.1.1, 10.2.2.2")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("10.1.1.1:0")
    );
    // IPv6, bracketed with a port, IPv4 with a port.
    let h = [("X-Forwarded-For", "2001:db8::7")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("[2001:db8::7]:0")
    );
    let h = [("X-Forwarded-For", "[2001:db8::7]:4711")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("[2001:db8::7]:4711")
    );
    let h = [("X-Forwarded-For", "203.0.113.7:4711")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("203.0.113.7:4711")
    );
}

#[test]
fn garbage_stops_at_the_proxy_that_added_it() {
    let t = trusted(&["10.0.0.0/8"]);
    let h = [("X-Forwarded-For", "203.0.113.7, unknown")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("10.0.0.1:5000")
    );
    let h = [("X-Forwarded-For", "203.0.113.7, bogus, 10.2.2.2")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("10.2.2.2:0")
    );
    // No header at all: nothing to say.
    assert_eq!(run(&t, "10.0.0.1:5000", &[]), None);
    assert_eq!(
        run(&t, "10.0.0.1:5000", &[("X-Forwarded-For", " , ")]),
        None
    );
    let h = [("X-Forwarded-For", "203.0.113.7,, ")];
    assert_eq!(
        addr(run(&t, "10.0.0.1:5000", &h)).as_deref(),
        Some("203.0.113.7:0")
    );
}

#[test]
fn forwarded_rfc7239_examples() {
    let t = trusted(&["10.0.0.0/8", "2001:db8:cafe::/48"]);
    // §4's examples.
    let h = [("Forwarded", "for=\"_gazonk\"")];
    assert_eq!(
        addr(run_fwd(&t, "10.0.0.1:1", &h)).as_deref(),
        Some("10.0.0.1:1")
    );
    let h = [("Forwarded", "For=\"[2001:db8:cafe::17]:4711\"")];
    assert_eq!(
        addr(run_fwd(&t, "10.0.0.1:1", &h)).as_deref(),
        Some("[2001:db8:cafe::17]:4711")
    );
    let h = [("Forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43")];
    let c = run_fwd(&t, "10.0.0.1:1", &h).unwrap();
    assert_eq!((c.addr, c.https), (sa("192.0.2.60:0"), Some(false)));
    let h = [("Forwarded", "for=192.0.2.43, for=198.51.100.17")];
    assert_eq!(
        addr(run_fwd(&t, "10.0.0.1:1", &h)).as_deref(),
        Some("198.51.100.17:0")
    );
    // Quoted strings may hold ; and , ; the proto that counts is the
    // client's element's.
    let h = [(
        "Forwarded",
        "for=198.51.100.17;proto=https;by=\"x;y,z\", for=10.3.3.3;proto=http",
    )];
    let c = run_fwd(&t, "10.0.0.1:1", &h).unwrap();
    assert_eq!((c.addr, c.https), (sa("198.51.100.17:0"), Some(true)));
    // Read in Forwarded, X-Forwarded-For and X-Forwarded-Proto are not.
    let h = [
        ("X-Forwarded-For", "203.0.113.99"),
        ("X-Forwarded-Proto", "https"),
        ("Forwarded", "for=192.0.2.60"),
    ];
    let c = run_fwd(&t, "10.0.0.1:1", &h).unwrap();
    assert_eq!((c.addr, c.https), (sa("192.0.2.60:0"), None));
}

#[test]
fn x_forwarded_proto_last_value_counts() {
    let t = trusted(&["127.0.0.0/8"]);
    let h = [
        ("X-Forwarded-For", "203.0.113.7"),
        ("X-Forwarded-Proto", "http, HTTPS"),
    ];
    let c = run(&t, "127.0.0.1:1", &h).unwrap();
    assert_eq!((c.addr, c.https), (sa("203.0.113.7:0"), Some(true)));
    let h = [("X-Forwarded-Proto", "ftp")];
    assert_eq!(run(&t, "127.0.0.1:1", &h), None, "not a scheme");
    let h = [("X-Forwarded-Proto", "https")];
    let c = run(&t, "127.0.0.1:1", &h).unwrap();
    assert_eq!(
        (c.addr, c.https),
        (sa("127.0.0.1:1"), Some(true)),
        "the proto alone"
    );
}

#[test]
fn mapped_peer_counts_as_ipv4() {
    let t = trusted(&["127.0.0.1"]);
    let h = [("X-Forwarded-For", "::ffff:203.0.113.7")];
    assert_eq!(
        addr(run(&t, "[::ffff:127.0.0.1]:9", &h)).as_deref(),
        Some("203.0.113.7:0")
    );
}

/// A quoted string a client leaves open would swallow the element the
/// proxy appends after it (on the same line, or on its own line once a
/// proxy joins them): the field is malformed, never read leniently.
#[test]
fn a_quoted_string_left_open_makes_the_field_malformed() {
    let t = trusted(&["10.0.0.0/8"]);
    for value in [
        "for=127.0.0.7;x=\"y, for=9.9.9.9",
        "for=\"1.2.3.4, for=9.9.9.9",
        // Closed by the quote of the proxy's own element.
        "for=127.0.0.7;x=\"a, for=\"[2001:db8::9]\"",
        "for=\"1.2.3.4\"x",
        "for=1.2.3.4;by=\"",
    ] {
        let h: Vec<(&[u8], &[u8])> = vec![(b"Forwarded", value.as_bytes())];
        let got = client(&t, By::Forwarded, sa("10.0.0.1:1"), h.iter().copied());
        assert_eq!(got, Err(Malformed), "{value}");
        // On two lines, the same.
        let (a, b) = value.split_once(", ").unwrap_or((value, "for=9.9.9.9"));
        let h: Vec<(&[u8], &[u8])> =
            vec![(b"Forwarded", a.as_bytes()), (b"Forwarded", b.as_bytes())];
        let got = client(&t, By::Forwarded, sa("10.0.0.1:1"), h.iter().copied());
        assert_eq!(got, Err(Malformed), "{a} / {b}");
    }
    // Closed, with white space before the separator: read.
    let h = [("Forwarded", "for=\"9.9.9.9\" ;proto=https , for=10.1.1.1")];
    assert_eq!(
        addr(run_fwd(&t, "10.0.0.1:1", &h)),
        Some("9.9.9.9:0".into())
    );
    // Not read at all from an untrusted peer, malformed or not.
    let h: Vec<(&[u8], &[u8])> = vec![(b"Forwarded", b"for=\"1.2.3.4")];
    assert_eq!(
        client(&t, By::Forwarded, sa("192.0.2.1:1"), h.iter().copied()),
        Ok(None)
    );
}
