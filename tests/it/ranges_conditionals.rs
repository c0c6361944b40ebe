//! Range requests (RFC 9110 §14) and conditional requests (§13).

use crate::common;

use common::*;

const DIGITS: &[u8] = b"0123456789abcdefghij";
const TEXT: &str = "text/plain; charset=utf-8";

fn site() -> Server {
    let mut b = Builder::new();
    b.file("d.txt", DIGITS);
    b.file("big.bin", &pattern(200 * 1024));
    b.start()
}

/// The expected head of a single-range 206 of d.txt.
fn partial_head(first: usize, last: usize) -> String {
    head(
        "206 Partial Content",
        &format!(
            "{}Content-Range: bytes {first}-{last}/20\r\nContent-Length: {}\r\nConnection: close\r\n",
            file_headers(20, TEXT),
            last - first + 1
        ),
    )
}

fn range(s: &Server, path: &str, spec: &str) -> Response {
    s.get_with(path, &format!("Range: {spec}\r\n"))
}

#[test]
fn single_ranges() {
    let s = site();
    for (spec, first, last) in [
        ("bytes=0-4", 0, 4),
        ("bytes=5-5", 5, 5),
        ("bytes=15-", 15, 19),
        ("bytes=-5", 15, 19),
        ("bytes=10-100", 10, 19),
        ("bytes=-100", 0, 19),
        ("bytes=0-", 0, 19),
        ("bytes=19-19", 19, 19),
    ] {
        let r = range(&s, "/d.txt", spec);
        assert_eq!(r.masked_head(), partial_head(first, last), "{spec}");
        assert_eq!(r.body, &DIGITS[first..=last], "{spec}");
    }
}

#[test]
fn unit_and_whitespace_variants() {
    let s = site();
    // The unit is case-insensitive; OWS around commas is allowed.
    let r = range(&s, "/d.txt", "Bytes=2-3");
    assert_eq!(r.masked_head(), partial_head(2, 3));
    let r = range(&s, "/d.txt", "bytes=1-2 , 8-9");
    assert_eq!(r.status, 206);
    assert!(r
        .header("content-type")
        .is_some_and(|v| v.starts_with("multipart/byteranges; boundary=")));
}

/// Extracts the boundary and checks its form.
fn boundary(r: &Response) -> String {
    let ct = r.header("content-type").expect("Content-Type");
    let b = ct
        .strip_prefix("multipart/byteranges; boundary=")
        .unwrap_or_else(|| panic!("not multipart: {ct}"));
    let hex = b.strip_prefix("brisk-0x").expect("boundary prefix");
    assert_eq!(hex.len(), 16, "{b}");
    assert!(
        hex.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)),
        "{b}"
    );
    b.to_string()
}

fn multipart_body(b: &str, ctype: &str, total: usize, parts: &[(usize, usize, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (first, last, data) in parts {
        out.extend_from_slice(
            format!(
                "\r\n--{b}\r\nContent-Type: {ctype}\r\nContent-Range: bytes {first}-{last}/{total}\r\n\r\n"
            )
            .as_bytes(),
        );
        out.extend_from_slice(data);
    }
    out.extend_from_slice(format!("\r\n--{b}--\r\n").as_bytes());
    out
}

#[test]
fn multiple_ranges_are_multipart() {
    let s = site();
    let r = range(&s, "/d.txt", "bytes=0-1,5-6,-2");
    let b = boundary(&r);
    let body = multipart_body(
        &b,
        TEXT,
        20,
        &[(0, 1, b"01"), (5, 6, b"56"), (18, 19, b"ij")],
    );
    assert_eq!(
        r.masked_head(),
        head(
            "206 Partial Content",
            &format!(
                "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\nAccept-Ranges: bytes\r\n\
                 Content-Type: multipart/byteranges; boundary={b}\r\nContent-Length: {}\r\nConnection: close\r\n",
                etag(20),
                body.len()
            )
        )
    );
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        String::from_utf8_lossy(&body)
    );
}

#[test]
fn multipart_from_a_large_file() {
    let s = site();
    let data = pattern(200 * 1024);
    let r = range(&s, "/big.bin", "bytes=0-19999,50000-99999,204700-");
    assert_eq!(r.status, 206);
    let b = boundary(&r);
    let body = multipart_body(
        &b,
        "application/octet-stream",
        data.len(),
        &[
            (0, 19999, &data[..20000]),
            (50000, 99999, &data[50000..100000]),
            (204700, 204799, &data[204700..]),
        ],
    );
    assert_eq!(
        r.header("content-length"),
        Some(body.len().to_string().as_str())
    );
    assert!(r.body == body, "multipart body differs");
}

#[test]
fn large_single_range() {
    let s = site();
    let data = pattern(200 * 1024);
    let r = range(&s, "/big.bin", "bytes=1000-150000");
    assert_eq!(
        r.masked_head(),
        head(
            "206 Partial Content",
            &format!(
                "{}Content-Range: bytes 1000-150000/{}\r\nContent-Length: 149001\r\nConnection: close\r\n",
                file_headers(data.len(), "application/octet-stream"),
                data.len()
            )
        )
    );
    assert!(r.body == data[1000..=150000]);
}

#[test]
fn overlapping_and_adjacent_ranges_are_coalesced() {
    let s = site();
    let r = range(&s, "/d.txt", "bytes=0-4,3-8");
    assert_eq!(r.masked_head(), partial_head(0, 8));
    assert_eq!(r.body, &DIGITS[0..=8]);
    let r = range(&s, "/d.txt", "bytes=0-4,5-9");
    assert_eq!(r.masked_head(), partial_head(0, 9));
    let r = range(&s, "/d.txt", "bytes=10-12,0-2,11-15");
    let b = boundary(&r);
    let parts: Vec<(usize, usize, &[u8])> = r
        .text()
        .split(&format!("--{b}"))
        .filter_map(|p| {
            let cr = p.split("Content-Range: bytes ").nth(1)?;
            let (range, _) = cr.split_once('/')?;
            let (a, z) = range.split_once('-')?;
            Some((a.parse().ok()?, z.parse().ok()?, &b""[..]))
        })
        .collect();
    let spans: Vec<(usize, usize)> = parts.iter().map(|(a, z, _)| (*a, *z)).collect();
    assert!(
        spans == vec![(0, 2), (10, 15)] || spans == vec![(10, 15), (0, 2)],
        "{spans:?}"
    );
}

#[test]
fn unsatisfiable_range_is_416() {
    let s = site();
    for spec in ["bytes=20-30", "bytes=100-", "bytes=20-"] {
        let r = range(&s, "/d.txt", spec);
        assert_error(
            &r,
            416,
            "Range Not Satisfiable",
            "Content-Range: bytes */20\r\n",
            Conn::Close,
        );
    }
}

#[test]
fn invalid_range_is_ignored() {
    let s = site();
    for spec in [
        "bytes=abc",
        "items=0-1",
        "bytes=5-2",
        "bytes=",
        "bytes=-",
        "0-5",
        "bytes=1-2;x",
    ] {
        let r = range(&s, "/d.txt", spec);
        assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    }
}

#[test]
fn range_on_head_is_ignored() {
    let s = site();
    let mut c = s.connect();
    c.send(b"HEAD /d.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-4\r\n\r\n");
    let r = c.head_response();
    assert_eq!(
        r.masked_head(),
        head(
            "200 OK",
            &format!("{}Content-Length: 20\r\n", file_headers(20, TEXT))
        )
    );
}

#[test]
fn if_range() {
    let s = site();
    let tag = etag(20);
    let r = s.get_with(
        "/d.txt",
        &format!("Range: bytes=0-4\r\nIf-Range: {tag}\r\n"),
    );
    assert_eq!(r.masked_head(), partial_head(0, 4));
    let r = s.get_with("/d.txt", "Range: bytes=0-4\r\nIf-Range: \"other\"\r\n");
    assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    // A weak tag never matches (strong comparison).
    let r = s.get_with(
        "/d.txt",
        &format!("Range: bytes=0-4\r\nIf-Range: W/{tag}\r\n"),
    );
    assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    // A date equal to Last-Modified matches.
    let r = s.get_with(
        "/d.txt",
        &format!("Range: bytes=0-4\r\nIf-Range: {MTIME_HTTP}\r\n"),
    );
    assert_eq!(r.masked_head(), partial_head(0, 4));
    let r = s.get_with(
        "/d.txt",
        "Range: bytes=0-4\r\nIf-Range: Wed, 01 Jan 2020 00:00:00 GMT\r\n",
    );
    assert_file(&r, DIGITS, TEXT, "", Conn::Close);
}

fn not_modified_head(extra: &str) -> String {
    head(
        "304 Not Modified",
        &format!(
            "ETag: {}\r\nLast-Modified: {MTIME_HTTP}\r\n{extra}Connection: close\r\n",
            etag(20)
        ),
    )
}

#[test]
fn if_none_match() {
    let s = site();
    let tag = etag(20);
    for value in [
        tag.clone(),
        "*".to_string(),
        format!("W/{tag}"),
        format!("\"nope\", {tag}"),
        format!("\"a\",{tag} , \"b\""),
    ] {
        let r = s.get_with("/d.txt", &format!("If-None-Match: {value}\r\n"));
        assert_eq!(r.masked_head(), not_modified_head(""), "{value}");
        assert!(r.body.is_empty());
    }
    for value in ["\"nope\"", "W/\"nope\"", "\"1-2\", \"3-4\""] {
        let r = s.get_with("/d.txt", &format!("If-None-Match: {value}\r\n"));
        assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    }
    // HEAD too.
    let mut c = s.connect();
    c.send(format!("HEAD /d.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: {tag}\r\n\r\n").as_bytes());
    let r = c.head_response();
    assert_eq!(r.status, 304);
    assert_eq!(r.header("content-length"), None);
}

#[test]
fn if_modified_since() {
    let s = site();
    for date in [MTIME_HTTP, "Wed, 01 Jan 2025 00:00:00 GMT"] {
        let r = s.get_with("/d.txt", &format!("If-Modified-Since: {date}\r\n"));
        assert_eq!(r.masked_head(), not_modified_head(""), "{date}");
    }
    // The obsolete formats are dates too (RFC 9110 §5.6.7).
    let r = s.get_with(
        "/d.txt",
        "If-Modified-Since: Tuesday, 02-Jan-24 03:04:05 GMT\r\n",
    );
    assert_eq!(r.status, 304);
    for date in [
        "Mon, 01 Jan 2024 03:04:05 GMT",
        "Tue, 02 Jan 2024 03:04:04 GMT",
        "garbage",
        "",
    ] {
        let r = s.get_with("/d.txt", &format!("If-Modified-Since: {date}\r\n"));
        assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    }
}

#[test]
fn if_none_match_takes_precedence_over_if_modified_since() {
    let s = site();
    let tag = etag(20);
    // Tag does not match, date says not modified: the tag decides → 200.
    let r = s.get_with(
        "/d.txt",
        &format!("If-None-Match: \"nope\"\r\nIf-Modified-Since: {MTIME_HTTP}\r\n"),
    );
    assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    // Tag matches, date says modified: the tag decides → 304.
    let r = s.get_with(
        "/d.txt",
        &format!("If-None-Match: {tag}\r\nIf-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT\r\n"),
    );
    assert_eq!(r.masked_head(), not_modified_head(""));
}

#[test]
fn if_match() {
    let s = site();
    let tag = etag(20);
    for value in [tag.clone(), "*".to_string(), format!("\"x\", {tag}")] {
        let r = s.get_with("/d.txt", &format!("If-Match: {value}\r\n"));
        assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    }
    for value in ["\"nope\"".to_string(), format!("W/{tag}")] {
        let r = s.get_with("/d.txt", &format!("If-Match: {value}\r\n"));
        assert_error(&r, 412, "Precondition Failed", "", Conn::Close);
    }
}

#[test]
fn if_unmodified_since() {
    let s = site();
    let r = s.get_with(
        "/d.txt",
        "If-Unmodified-Since: Mon, 01 Jan 2024 00:00:00 GMT\r\n",
    );
    assert_error(&r, 412, "Precondition Failed", "", Conn::Close);
    for date in [MTIME_HTTP, "Wed, 01 Jan 2025 00:00:00 GMT", "garbage"] {
        let r = s.get_with("/d.txt", &format!("If-Unmodified-Since: {date}\r\n"));
        assert_file(&r, DIGITS, TEXT, "", Conn::Close);
    }
    // If-Match present: If-Unmodified-Since is not evaluated.
    let r = s.get_with(
        "/d.txt",
        &format!(
            "If-Match: {}\r\nIf-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT\r\n",
            etag(20)
        ),
    );
    assert_file(&r, DIGITS, TEXT, "", Conn::Close);
}

#[test]
fn if_match_failure_comes_before_if_none_match() {
    let s = site();
    let r = s.get_with(
        "/d.txt",
        &format!("If-Match: \"nope\"\r\nIf-None-Match: {}\r\n", etag(20)),
    );
    assert_error(&r, 412, "Precondition Failed", "", Conn::Close);
}

#[test]
fn conditional_range_combination() {
    let s = site();
    // A 304 wins over Range.
    let r = s.get_with(
        "/d.txt",
        &format!("If-None-Match: {}\r\nRange: bytes=0-1\r\n", etag(20)),
    );
    assert_eq!(r.masked_head(), not_modified_head(""));
    // If-Match passes, the range applies.
    let r = s.get_with(
        "/d.txt",
        &format!("If-Match: {}\r\nRange: bytes=0-1\r\n", etag(20)),
    );
    assert_eq!(r.masked_head(), partial_head(0, 1));
}

#[test]
fn range_on_an_empty_file_is_416() {
    let mut b = Builder::new();
    b.file("empty.txt", b"");
    let s = b.start();
    let r = s.get_with("/empty.txt", "Range: bytes=0-\r\n");
    assert_error(
        &r,
        416,
        "Range Not Satisfiable",
        "Content-Range: bytes */0\r\n",
        Conn::Close,
    );
}

#[test]
fn a_suffix_range_of_an_empty_file_sends_it_whole() {
    // RFC 9110 §14.1.1: the one satisfiable range of an empty file, and
    // no 206 can carry it: 200, as nginx and lighttpd answer.
    let mut b = Builder::new();
    b.file("empty.txt", b"");
    let s = b.start();
    let r = s.get_with("/empty.txt", "Range: bytes=-5\r\n");
    assert_eq!((r.status, r.header("Content-Length")), (200, Some("0")));
    assert_eq!(r.header("Content-Range"), None);
}

#[test]
fn list_fields_sent_on_several_lines_are_one_list() {
    // RFC 9110 §5.3: two If-None-Match lines are one list, so a tag on
    // the second line matches; the same for If-Match.
    let s = site();
    let r = s.get_with(
        "/d.txt",
        &format!("If-None-Match: \"a\"\r\nIf-None-Match: {}\r\n", etag(20)),
    );
    assert_eq!(r.masked_head(), not_modified_head(""));
    let r = s.get_with(
        "/d.txt",
        &format!("If-Match: \"a\"\r\nIf-Match: {}\r\n", etag(20)),
    );
    assert_eq!((r.status, r.body.as_slice()), (200, DIGITS));
    let r = s.get_with("/d.txt", "If-Match: \"a\"\r\nIf-Match: \"b\"\r\n");
    assert_eq!(r.status, 412);
}

/// A date field is not a list (RFC 9110 §13.1.3, §13.1.4): sent on two
/// lines, its value is not one HTTP-date (§5.3) and it is ignored, as
/// one line holding two dates is. The first line was taken: a 304 for
/// two `If-Modified-Since` lines, a 412 for two `If-Unmodified-Since`.
/// Two `If-Range` lines match nothing: the whole file, as for any
/// `If-Range` that is neither a date nor a strong tag (§13.1.5).
#[test]
fn date_fields_sent_on_several_lines_are_ignored() {
    let s = site();
    let early = "Mon, 01 Jan 2024 00:00:00 GMT";
    for extra in [
        format!("If-Modified-Since: {MTIME_HTTP}\r\nIf-Modified-Since: {MTIME_HTTP}\r\n"),
        format!("If-Modified-Since: {MTIME_HTTP}, {MTIME_HTTP}\r\n"),
        format!("If-Unmodified-Since: {early}\r\nif-unmodified-since: {early}\r\n"),
        format!("If-Unmodified-Since: {early}, {early}\r\n"),
        format!("Range: bytes=0-4\r\nIf-Range: {MTIME_HTTP}\r\nIf-Range: {MTIME_HTTP}\r\n"),
        format!(
            "Range: bytes=0-4\r\nIf-Range: {0}\r\nIf-Range: {0}\r\n",
            etag(20)
        ),
        format!("Range: bytes=0-4\r\nIf-Range: {MTIME_HTTP}, {MTIME_HTTP}\r\n"),
    ] {
        eprintln!("{extra}");
        assert_file(&s.get_with("/d.txt", &extra), DIGITS, TEXT, "", Conn::Close);
    }
    // One line each still counts.
    let r = s.get_with("/d.txt", &format!("If-Modified-Since: {MTIME_HTTP}\r\n"));
    assert_eq!(r.status, 304);
}

/// [`date_fields_sent_on_several_lines_are_ignored`] over HTTP/2, whose
/// fields are repeated the same way.
#[cfg(feature = "http2")]
#[test]
fn date_fields_sent_twice_over_http2_are_ignored() {
    use common::h2::H2;
    let s = site();
    let mut c = H2::connect(s.addr(), &[], 65_535);
    let ims = ("if-modified-since", MTIME_HTTP);
    let ius = ("if-unmodified-since", "Mon, 01 Jan 2024 00:00:00 GMT");
    let (range, if_range) = (("range", "bytes=0-4"), ("if-range", MTIME_HTTP));
    let ids = [
        c.get("/d.txt", &[ims, ims]),
        c.get("/d.txt", &[ius, ius]),
        c.get("/d.txt", &[range, if_range, if_range]),
        c.get("/d.txt", &[ims]),
    ];
    let a = c.answers(&ids);
    for a in &a[..3] {
        assert_eq!((a.status(), a.body.as_slice()), ("200", DIGITS));
    }
    assert_eq!(a[3].status(), "304");
}

/// `Range` is no list of field lines (RFC 9110 §14.2: one
/// ranges-specifier), so two lines joined as §5.3 would (`bytes=0-4,
/// bytes=10-14`) are no valid range set, and the whole file is sent (a
/// server may always ignore Range). Taking the first line, as nginx,
/// lighttpd and Caddy do, would answer with a part that a cache or
/// proxy in front that took the last line files under another range.
#[test]
fn range_sent_on_several_lines_is_ignored() {
    let s = site();
    for extra in [
        "Range: bytes=0-4\r\nRange: bytes=10-14\r\n",
        "Range: bytes=0-4\r\nrange: bytes=0-4\r\n",
        "Range: bytes=0-4\r\nRange: bytes=\r\n",
    ] {
        assert_file(&s.get_with("/d.txt", extra), DIGITS, TEXT, "", Conn::Close);
    }
    // One line still counts, a list in it too.
    let r = s.get_with("/d.txt", "Range: bytes=0-4\r\n");
    assert_eq!((r.status, r.body.as_slice()), (206, &DIGITS[..5]));
}

/// [`range_sent_on_several_lines_is_ignored`] over HTTP/2.
#[cfg(feature = "http2")]
#[test]
fn range_sent_twice_over_http2_is_ignored() {
    use common::h2::H2;
    let s = site();
    let mut c = H2::connect(s.addr(), &[], 65_535);
    let ids = [
        c.get(
            "/d.txt",
            &[("range", "bytes=0-4"), ("range", "bytes=10-14")],
        ),
        c.get("/d.txt", &[("range", "bytes=0-4")]),
    ];
    let a = c.answers(&ids);
    assert_eq!((a[0].status(), a[0].body.as_slice()), ("200", DIGITS));
    assert_eq!((a[1].status(), a[1].body.as_slice()), ("206", &DIGITS[..5]));
}

#[test]
fn a_listing_has_no_validators_so_only_a_star_matches() {
    let mut b = Builder::new();
    b.config("[static]\nautoindex = true\n")
        .file("sub/a.txt", b"a");
    let s = b.start();
    let r = s.get_with("/sub/", "If-Match: \"zz\"\r\n");
    assert_eq!(r.status, 412);
    let r = s.get_with("/sub/", "If-Match: *\r\n");
    assert_eq!(r.status, 200);
    let r = s.get_with("/sub/", "If-None-Match: *\r\n");
    assert_eq!((r.status, r.body.len()), (304, 0));
    let r = s.get_with("/sub/", "If-None-Match: \"zz\"\r\n");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("a.txt"), "{}", r.text());
}

#[test]
fn a_file_dated_in_the_future_is_said_modified_now() {
    // RFC 9110 §8.8.2.1: Last-Modified is never later than Date.
    let mut b = Builder::new();
    b.file("future.txt", b"from the future");
    let f = std::fs::File::options()
        .write(true)
        .open(b.root().join("future.txt"))
        .unwrap();
    let in_2300 = std::time::UNIX_EPOCH + std::time::Duration::from_secs(10_413_792_000);
    f.set_modified(in_2300).unwrap();
    let s = b.start();
    let r = s.get("/future.txt");
    assert_eq!(r.status, 200);
    let date = r.header("Date").unwrap().to_string();
    let lm = r.header("Last-Modified").unwrap().to_string();
    assert!(!lm.contains("2300"), "{lm}");
    // Same second or the one before (the file was looked at first).
    let secs = |d: &str| {
        let t = httpdate::parse_http_date(d).unwrap();
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
    };
    assert!(
        secs(&lm) <= secs(&date) && secs(&date) - secs(&lm) <= 2,
        "{lm} / {date}"
    );
}

#[test]
fn conditionals_on_a_missing_file_are_404() {
    let s = site();
    let r = s.get_with("/missing.txt", "If-None-Match: *\r\n");
    assert_error(&r, 404, "Not Found", "", Conn::Close);
    let r = s.get_with("/missing.txt", "If-Match: *\r\n");
    assert!(r.status == 404 || r.status == 412, "{}", r.status);
}

/// A file dated before 1970 (an old archive's, a bad clock's) keeps its
/// time in its entity tag, with a `-` as nginx writes it: every such
/// file of one size once had the tag `"0-<size>"`, so a new version
/// dated otherwise before 1970 was answered 304 to the old tag.
#[test]
fn a_file_dated_before_1970_has_its_own_tag() {
    use std::time::{Duration, UNIX_EPOCH};
    let set = |path: &std::path::Path, before_epoch: u64| {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(UNIX_EPOCH - Duration::from_secs(before_epoch)))
            .expect("set mtime");
    };
    let mut b = Builder::new();
    b.file("old.txt", b"v1");
    let path = b.root().join("old.txt");
    // 1960-01-01T00:00:00Z.
    set(&path, 315_619_200);
    b.config("[static]\nopen_file_cache = 0\n");
    let s = b.start();
    let r = s.get("/old.txt");
    assert_eq!(r.status, 200);
    let first = r.header("ETag").expect("ETag").to_string();
    assert_eq!(first, "\"-12cff780-2\"");
    // A new version of the same size, dated 1965.
    write_file(&path, b"v2");
    set(&path, 157_766_400);
    let r = s.get_with("/old.txt", &format!("If-None-Match: {first}\r\n"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"v2"[..]));
    let second = r.header("ETag").expect("ETag").to_string();
    assert_ne!(second, first);
    // And brisk matches what it wrote.
    let r = s.get_with("/old.txt", &format!("If-None-Match: {second}\r\n"));
    assert_eq!(r.status, 304);
}
