//! brisk's X.509 reader (`brisk::tls::x509`, what picks a certificate by
//! SNI and tells when it expires, and what ACME's manager reads of its
//! certificates) fed arbitrary DER. Beyond "never panics": what it reads
//! is the certificate's alone (bytes after it change nothing), every cut
//! of the certificate is an error, and names are lower-case host names.

#![no_main]

use brisk::tls::x509;
use libfuzzer_sys::fuzz_target;

/// The length of the DER element at the start of `der` (tag, length,
/// contents), if it is whole.
fn element_len(der: &[u8]) -> Option<usize> {
    let (&first, rest) = der.get(1).map(|f| (f, &der[2..]))?;
    if first & 0x80 == 0 {
        return Some(2 + usize::from(first));
    }
    let n = usize::from(first & 0x7f);
    let len = rest
        .get(..n)?
        .iter()
        .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
    Some(2 + n + len)
}

fuzz_target!(|data: &[u8]| {
    let Ok(facts) = x509::parse(data) else {
        return;
    };
    for name in &facts.names {
        let body = name.strip_prefix("*.").unwrap_or(name);
        assert!(!body.is_empty(), "{name:?}");
        assert!(
            body.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'),
            "{name:?}"
        );
    }
    let whole = element_len(data).expect("a certificate read is a whole element");
    assert!(whole <= data.len());
    assert_eq!(x509::parse(&data[..whole]).as_ref(), Ok(&facts));
    let mut longer = data[..whole].to_vec();
    longer.extend_from_slice(b"\x30\x00trailing");
    assert_eq!(x509::parse(&longer).as_ref(), Ok(&facts));
    for cut in [0, 1, whole / 2, whole - 1] {
        assert!(
            x509::parse(&data[..cut]).is_err(),
            "cut at {cut} of {whole}"
        );
    }
});
