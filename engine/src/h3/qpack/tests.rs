//! QPACK field sections: the RFC's example, round trips, and every
//! refusal.

use super::*;

fn decoded(section: &[u8], max: usize) -> Result<Vec<(String, String)>, Error> {
    decoded_with(&Table::default(), section, max)
}

fn decoded_with(table: &Table, section: &[u8], max: usize) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    let mut scratch = (Vec::new(), Vec::new());
    decode(section, max, table, &mut scratch, &mut |n, v| {
        out.push((
            String::from_utf8_lossy(n).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ))
    })?;
    Ok(out)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|&(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// RFC 9204 Appendix B.1: a literal field line with a static name.
#[test]
fn the_rfc_example() {
    let section = [
        0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d, 0x6c,
    ];
    assert_eq!(
        decoded(&section, 1000).unwrap(),
        pairs(&[(":path", "/index.html")])
    );
    let mut out = Vec::new();
    begin(&mut out);
    // (brisk Huffman-codes the value: shorter.)
    field(b":path", b"/index.html", &mut out);
    assert_eq!(
        decoded(&out, 1000).unwrap(),
        pairs(&[(":path", "/index.html")])
    );
    assert_eq!(&out[..3], [0x00, 0x00, 0x51]);
}

#[test]
fn every_kind_of_line_round_trips() {
    let fields = [
        (":status", "200"),           // indexed, static
        (":status", "418"),           // static name, literal value
        ("content-type", "text/css"), // indexed, index 51 (one byte)
        ("content-type", "text/x-lua"),
        ("x-brisk", "a value that Huffman codes shorter"),
        ("x-raw", "\u{7f}\u{1}"), // not shorter in Huffman: raw
        ("etag", ""),
    ];
    let mut out = Vec::new();
    begin(&mut out);
    for (n, v) in fields {
        field(n.as_bytes(), v.as_bytes(), &mut out);
    }
    assert_eq!(decoded(&out, 10_000).unwrap(), pairs(&fields));
    // An indexed line below index 63 is one byte: 0xc0 | index.
    let mut one = Vec::new();
    field(b":status", b"200", &mut one);
    assert_eq!(one, [0xc0 | 25]);
    one.clear();
    status(404, &mut one);
    assert_eq!(one, [0xc0 | 27]);
    one.clear();
    field(b"content-type", b"text/css", &mut one);
    assert_eq!(one, [0xc0 | 51]);
    one.clear();
    status(299, &mut one);
    assert_eq!(one[0], 0x50 | 0x0f);
}

#[test]
fn references_to_an_empty_table_are_refused() {
    let code = |s: &[u8]| decoded(s, 1000).unwrap_err().code;
    // Required Insert Count 1 (nothing inserted: it would block).
    assert_eq!(code(&[0x01, 0x00]), FAILED);
    // Indexed, T = 0 (dynamic); with name reference, T = 0; post-base
    // indexed; post-base name reference.
    assert_eq!(code(&[0x00, 0x00, 0x80]), FAILED);
    assert_eq!(code(&[0x00, 0x00, 0x40, 0x00]), FAILED);
    assert_eq!(code(&[0x00, 0x00, 0x10]), FAILED);
    assert_eq!(code(&[0x00, 0x00, 0x00, 0x00]), FAILED);
}

#[test]
fn malformed_sections_are_refused() {
    let code = |s: &[u8]| decoded(s, 1000).unwrap_err().code;
    assert_eq!(code(&[]), FAILED);
    assert_eq!(code(&[0x00]), FAILED);
    // Static index 99 is past the table (0..=98).
    assert_eq!(code(&[0x00, 0x00, 0xc0 | 0x3f, 99 - 63]), FAILED);
    assert_eq!(code(&[0x00, 0x00, 0x5f, 99 - 15, 0x00]), FAILED);
    // A value longer than what is left; a name cut; a value missing.
    assert_eq!(code(&[0x00, 0x00, 0x51, 0x05, b'/']), FAILED);
    assert_eq!(code(&[0x00, 0x00, 0x23, b'a', b'b']), FAILED);
    assert_eq!(code(&[0x00, 0x00, 0x21, b'a']), FAILED);
    // An integer that overflows.
    assert_eq!(
        code(&[0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        FAILED
    );
    // Bad Huffman: EOS padding of all ones beyond 7 bits.
    assert_eq!(code(&[0x00, 0x00, 0x51, 0x82, 0xff, 0xff]), FAILED);
    assert!(decoded(&[0x00, 0x00], 0).unwrap().is_empty());
}

#[test]
fn what_a_section_decodes_to_is_bounded() {
    // 200 one-byte lines, each the longest static entry (73 bytes + 32).
    let mut s = vec![0x00, 0x00];
    for _ in 0..200 {
        s.extend_from_slice(&[0xff, 85 - 63]);
    }
    let one = STATIC[85].0.len() + STATIC[85].1.len() + 32;
    assert_eq!(decoded(&s[..2 + 2 * 10], one * 10).unwrap().len(), 10);
    assert_eq!(
        decoded(&s[..2 + 2 * 11], one * 10).unwrap_err().code,
        Code::EXCESSIVE_LOAD
    );
    assert_eq!(
        decoded(&s, one * 10).unwrap_err().code,
        Code::EXCESSIVE_LOAD
    );
}

use super::vectors::{dynamic_section, encoder_stream};

#[test]
fn a_real_encoder_s_insertions_are_read_in_any_cuts_and_referenced() {
    let stream = encoder_stream();
    for cut in 0..=stream.len() {
        let mut t = Table::default();
        t.encoder_stream(&stream[..cut]).unwrap();
        t.encoder_stream(&stream[cut..]).unwrap();
        assert_eq!(t.inserted(), 4);
        assert_eq!(
            t.get(2).unwrap(),
            (&b"x-custom"[..], &b"a fairly long custom header value"[..])
        );
        assert_eq!(t.unacked(), 4);
        assert_eq!(t.unacked(), 0);
        let mut scratch = (Vec::new(), Vec::new());
        let required = decode(&dynamic_section(), 1000, &t, &mut scratch, &mut |_, _| {});
        assert_eq!(required, Ok(4));
        assert_eq!(
            decoded_with(&t, &dynamic_section(), 1000).unwrap(),
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "example.com"),
                (":path", "/a"),
                ("x-custom", "a fairly long custom header value"),
                ("user-agent", "brisk-test/1.0"),
            ])
        );
    }
}

#[test]
fn post_base_lines_duplicates_and_evictions() {
    let mut t = Table::default();
    // Capacity 100: Insert with Literal Name "a" = "1" (34 bytes), then
    // Duplicate of it (68), then one more "b" = "2": the first is evicted.
    t.encoder_stream(&[0x3f, 0x45, 0x41, b'a', 0x01, b'1', 0x00])
        .unwrap();
    assert_eq!((t.inserted(), t.get(1)), (2, Some((&b"a"[..], &b"1"[..]))));
    t.encoder_stream(&[0x41, b'b', 0x01, b'2']).unwrap();
    assert_eq!((t.get(0), t.get(2)), (None, Some((&b"b"[..], &b"2"[..]))));
    // Required Insert Count 3 (encoded 4), base 1 (sign, delta 1): a
    // post-base indexed line (abs 2), a post-base name reference (abs 1)
    // with value "x".
    let section = [0x04, 0x81, 0x11, 0x00, 0x01, b'x'];
    assert_eq!(
        decoded_with(&t, &section, 1000).unwrap(),
        pairs(&[("b", "2"), ("a", "x")])
    );
    // The evicted entry, and one past the Required Insert Count.
    let code = |s: &[u8]| decoded_with(&t, s, 1000).unwrap_err().code;
    assert_eq!(code(&[0x04, 0x00, 0x82]), FAILED);
    assert_eq!(code(&[0x03, 0x00, 0x10]), FAILED);
    // A Required Insert Count beyond what was inserted, or out of range.
    assert_eq!(code(&[0x05, 0x00]), FAILED);
    assert_eq!(code(&[0xff, 0x01, 0x00]), FAILED);
}

#[test]
fn the_encoder_stream_is_held_to_the_table() {
    let code = |b: &[u8]| Table::default().encoder_stream(b).unwrap_err().code;
    // A capacity above 4096; an insertion with no capacity set; an entry
    // larger than the capacity (40: "a" = 8 bytes is 41); a reference to
    // no entry; a string announced longer than any entry could be.
    assert_eq!(code(&[0x3f, 0xe2, 0x1f]), Code::QPACK_ENCODER_STREAM_ERROR);
    assert_eq!(code(&[0x41, b'a', 0x00]), Code::QPACK_ENCODER_STREAM_ERROR);
    assert_eq!(
        code(&[0x3f, 0x09, 0x41, b'a', 0x08, b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8']),
        Code::QPACK_ENCODER_STREAM_ERROR
    );
    assert_eq!(code(&[0x3f, 0x45, 0x00]), Code::QPACK_ENCODER_STREAM_ERROR);
    assert_eq!(
        code(&[0x3f, 0x45, 0x80, 0x7f, 0xff, 0xff, 0x03]),
        Code::QPACK_ENCODER_STREAM_ERROR
    );
    // Memory: an instruction that never ends is refused past its bound.
    let mut t = Table::default();
    t.encoder_stream(&[0x3f, 0xe1, 0x1f, 0x5f]).unwrap();
    let mut e = Ok(());
    for _ in 0..20 {
        e = e.and_then(|()| t.encoder_stream(&[0xff; 1024]));
    }
    assert_eq!(e.unwrap_err().code, Code::QPACK_ENCODER_STREAM_ERROR);
}
