//! QPACK field sections: the RFC's example, round trips, and every
//! refusal.

use super::*;

fn decoded(section: &[u8], max: usize) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    let mut scratch = (Vec::new(), Vec::new());
    decode(section, max, &mut scratch, &mut |n, v| {
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
fn dynamic_references_are_refused() {
    let code = |s: &[u8]| decoded(s, 1000).unwrap_err().code;
    // Required Insert Count 1.
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
