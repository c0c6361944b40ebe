//! The sans-IO pieces: paths split, hrefs and text escaped, Destination
//! read, PROPFIND and PROPPATCH bodies understood.

use super::multistatus::{escape, push_href};
use super::*;

#[test]
fn a_path_splits_into_its_directory_and_name() {
    assert_eq!(split(b"a/b/c"), Some((&b"a/b"[..], &b"c"[..])));
    assert_eq!(split(b"a/b/"), Some((&b"a"[..], &b"b"[..])));
    assert_eq!(split(b"c"), Some((&b""[..], &b"c"[..])));
    assert_eq!(split(b""), None);
    assert_eq!(split(b"/"), None);
}

#[test]
fn hrefs_are_percent_encoded_and_text_escaped() {
    let mut out = Vec::new();
    push_href(&mut out, "/dav/a b/ü&<x>%.txt".as_bytes());
    assert_eq!(out, b"/dav/a%20b/%C3%BC%26%3Cx%3E%25.txt");
    out.clear();
    escape(&mut out, b"a&b<c>\"d'");
    assert_eq!(out, b"a&amp;b&lt;c&gt;&quot;d&apos;");
}

#[test]
fn a_destination_names_a_path_of_the_same_host() {
    let mut out = Vec::new();
    let host = Some(&b"example.org:8080"[..]);
    assert_eq!(
        destination(b"http://Example.org:8080/dav/a%20b", host, &mut out),
        Ok(())
    );
    assert_eq!(out, b"/dav/a b");
    assert_eq!(destination(b"/dav/x/../y?q", host, &mut out), Ok(()));
    assert_eq!(out, b"/dav/y");
    assert_eq!(
        destination(b"https://other.org/dav/x", host, &mut out),
        Err(Status::BAD_GATEWAY)
    );
    // The scheme's default port, written on either side or not.
    for (dest, host) in [
        (&b"https://example.org:443/x"[..], &b"example.org"[..]),
        (b"https://example.org/x", b"Example.org:443"),
        (b"HTTP://example.org:80/x", b"example.org"),
    ] {
        assert_eq!(destination(dest, Some(host), &mut out), Ok(()));
        assert_eq!(out, b"/x");
    }
    assert_eq!(
        destination(b"https://example.org:80/x", Some(b"example.org"), &mut out),
        Err(Status::BAD_GATEWAY)
    );
    assert_eq!(
        destination(b"http://example.org:8080/../../x", host, &mut out),
        Err(Status::BAD_REQUEST)
    );
    assert_eq!(
        destination(b"dav/x", host, &mut out),
        Err(Status::BAD_REQUEST)
    );
    // Another scheme is another server; a fragment has no place.
    assert_eq!(
        destination(b"ftp://example.org:8080/dav/x", host, &mut out),
        Err(Status::BAD_GATEWAY)
    );
    for dest in [&b"/dav/a#b"[..], b"http://example.org:8080/dav/a#b"] {
        assert_eq!(destination(dest, host, &mut out), Err(Status::BAD_REQUEST));
    }
}

/// What a `propfind` asks is its `allprop`, `propname` or `prop`
/// wherever it stands: elements it does not know, an `include` before
/// `allprop`, are passed over (RFC 4918 §17: order is irrelevant, and
/// an extension's elements are ignored). They were the answer (400)
/// when they came first; Apache and lighttpd answered 207.
#[test]
fn propfind_passes_over_elements_it_does_not_know() {
    assert_eq!(
        asked(b"<D:propfind xmlns:D=\"DAV:\"><D:include><D:getetag/></D:include><D:allprop/></D:propfind>"),
        Some(Asked::All)
    );
    assert_eq!(
        asked(
            b"<D:propfind xmlns:D=\"DAV:\"><D:future/><D:prop><D:getetag/></D:prop></D:propfind>"
        ),
        Some(Asked::Some(vec![("DAV:".into(), "getetag".into())]))
    );
    assert_eq!(
        asked(b"<D:propfind xmlns:D=\"DAV:\"><D:future/><D:propname/></D:propfind>"),
        Some(Asked::Names)
    );
    // Nothing it knows: still 400.
    assert_eq!(
        asked(b"<D:propfind xmlns:D=\"DAV:\"><D:future/></D:propfind>"),
        None
    );
    assert_eq!(asked(b"<D:propfind xmlns:D=\"DAV:\"></D:propfind>"), None);
}

#[test]
fn propfind_and_proppatch_bodies() {
    assert_eq!(asked(b""), Some(Asked::All));
    assert_eq!(
        asked(b"<propfind xmlns=\"DAV:\"><propname/></propfind>"),
        Some(Asked::Names)
    );
    assert_eq!(
        asked(b"<D:propfind xmlns:D=\"DAV:\"><D:prop><x xmlns=\"u\"/><D:getetag/></D:prop></D:propfind>"),
        Some(Asked::Some(vec![
            ("u".into(), "x".into()),
            ("DAV:".into(), "getetag".into())
        ]))
    );
    assert_eq!(
        asked(b"<propfind><allprop/></propfind>"),
        None,
        "not in DAV:"
    );
    let ops = proppatch_ops(
        b"<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><a xmlns=\"u\">1</a></D:prop></D:set>\
          <D:remove><D:prop><b xmlns=\"u\"/></D:prop></D:remove></D:propertyupdate>",
    )
    .unwrap();
    assert!(
        matches!(&ops[..], [props::Op::Set(a, v, false), props::Op::Remove(b)]
        if a.1 == "a" && v == "1" && b.1 == "b")
    );
    assert!(proppatch_ops(b"<D:propertyupdate xmlns:D=\"DAV:\"/>").is_none());
    // A value with elements: kept as XML, its namespaces declared.
    let ops = proppatch_ops(
        b"<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\"><D:set><D:prop><Z:a><Z:b>1</Z:b></Z:a>\
          </D:prop></D:set></D:propertyupdate>",
    )
    .unwrap();
    assert!(
        matches!(&ops[..], [props::Op::Set(a, v, true)]
        if a.1 == "a" && v == "\0<Z:b xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\">1</Z:b>"),
        "{ops:?}"
    );
}
