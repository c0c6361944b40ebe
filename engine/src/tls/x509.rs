//! The few facts brisk needs from an X.509 certificate (RFC 5280): its
//! validity period, to warn of an expired certificate at start, and the
//! names it is for, to pick a certificate by SNI; and, for ACME Renewal
//! Information (RFC 9773 §4.1), its serial number and its issuer's key
//! identifier. A small DER walker rather than a certificate-parsing
//! crate: it reads a few fields, never allocates more than the names, and
//! rejects whatever it does not understand instead of guessing. The signature and the chain are the
//! client's to check; the key's match with the certificate is rustls's.

use crate::http::date::days_from_civil;

/// What [`parse`] finds in a DER certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// `notBefore`, seconds since the Unix epoch (0 for earlier dates).
    pub not_before: u64,
    /// `notAfter`, seconds since the Unix epoch.
    pub not_after: u64,
    /// The DNS names of the subjectAltName extension, lower-cased (a
    /// wildcard stays `*.example.org`); with none, the subject's common
    /// name if it looks like a host name (old self-made certificates).
    pub names: Vec<String>,
    /// The iPAddress entries of the subjectAltName extension (what the
    /// local CA certifies besides `localhost`).
    pub addresses: Vec<std::net::IpAddr>,
}

/// What names a certificate to its issuer (RFC 9773 §4.1's certificate
/// identifier is made of both), borrowed from its DER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity<'a> {
    /// The contents of the serialNumber INTEGER as encoded: two's
    /// complement, a leading 0x00 kept when the first byte's high bit is
    /// set.
    pub serial: &'a [u8],
    /// The keyIdentifier of the Authority Key Identifier extension
    /// (RFC 5280 §4.2.1.1), when there is one.
    pub authority_key_id: Option<&'a [u8]>,
}

/// Why a certificate could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a valid X.509 certificate ({})", self.0)
    }
}

use super::der::{
    context, BOOLEAN, DNS_NAME, GENERALIZED_TIME, INTEGER, IP_ADDRESS, OCTET_STRING, OID, SEQUENCE,
    SET, UTC_TIME,
};

/// `[0] EXPLICIT` version, `[3] EXPLICIT` extensions.
const VERSION: u8 = context(0);
const EXTENSIONS: u8 = context(3);
/// id-ce-subjectAltName, 2.5.29.17.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
/// id-ce-authorityKeyIdentifier, 2.5.29.35.
const AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];
/// AuthorityKeyIdentifier's `keyIdentifier [0] IMPLICIT OCTET STRING`.
const KEY_IDENTIFIER: u8 = 0x80;
/// id-at-commonName, 2.5.4.3.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// A DER reader over a byte slice: each call takes one element off the
/// front.
struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn peek(&self) -> Option<u8> {
        self.0.first().copied()
    }

    /// The next element: its tag and contents.
    fn any(&mut self) -> Result<(u8, &'a [u8]), Malformed> {
        let bad = Malformed("truncated or invalid DER");
        let [tag, first, rest @ ..] = self.0 else {
            return Err(bad);
        };
        if tag & 0x1f == 0x1f {
            return Err(Malformed("multi-byte DER tag"));
        }
        let (len, rest) = if first & 0x80 == 0 {
            (usize::from(*first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return Err(bad);
            }
            let len = rest[..n]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (len, &rest[n..])
        };
        if rest.len() < len {
            return Err(bad);
        }
        let (contents, after) = rest.split_at(len);
        self.0 = after;
        Ok((*tag, contents))
    }

    /// The next element, which must have tag `want`.
    fn expect(&mut self, want: u8, what: &'static str) -> Result<&'a [u8], Malformed> {
        match self.any()? {
            (tag, contents) if tag == want => Ok(contents),
            _ => Err(Malformed(what)),
        }
    }
}

/// The fields of a TBSCertificate that brisk reads.
struct Tbs<'a> {
    serial: &'a [u8],
    validity: &'a [u8],
    subject: &'a [u8],
    /// The `[3] EXPLICIT` extensions' contents.
    extensions: Option<&'a [u8]>,
}

/// Walks a DER certificate's TBSCertificate.
fn tbs(der: &[u8]) -> Result<Tbs<'_>, Malformed> {
    let mut outer = Der(der);
    let cert = outer.expect(SEQUENCE, "no Certificate sequence")?;
    let mut cert = Der(cert);
    let mut tbs = Der(cert.expect(SEQUENCE, "no TBSCertificate")?);
    if tbs.peek() == Some(VERSION) {
        tbs.any()?;
    }
    let serial = tbs.expect(INTEGER, "no serial number")?;
    if serial.is_empty() {
        return Err(Malformed("empty serial number"));
    }
    tbs.expect(SEQUENCE, "no signature algorithm")?;
    tbs.expect(SEQUENCE, "no issuer")?;
    let validity = tbs.expect(SEQUENCE, "no validity")?;
    let subject = tbs.expect(SEQUENCE, "no subject")?;
    tbs.expect(SEQUENCE, "no subjectPublicKeyInfo")?;
    let mut extensions = None;
    while !tbs.is_empty() {
        let (tag, contents) = tbs.any()?;
        if tag == EXTENSIONS {
            extensions = Some(contents);
        }
    }
    Ok(Tbs {
        serial,
        validity,
        subject,
        extensions,
    })
}

/// Reads the validity period and the names of a DER certificate.
pub fn parse(der: &[u8]) -> Result<Facts, Malformed> {
    let tbs = tbs(der)?;
    let mut validity = Der(tbs.validity);
    let not_before = time(&mut validity)?;
    let not_after = time(&mut validity)?;
    let (mut names, addresses) = match tbs.extensions {
        Some(ext) => match extension(ext, SUBJECT_ALT_NAME)? {
            Some(value) => alt_names(value)?,
            None => Default::default(),
        },
        None => Default::default(),
    };
    if names.is_empty() {
        if let Some(cn) = common_name(tbs.subject)? {
            names.push(cn);
        }
    }
    Ok(Facts {
        not_before,
        not_after,
        names,
        addresses,
    })
}

/// Reads the serial number and the issuer's key identifier of a DER
/// certificate.
pub fn identity(der: &[u8]) -> Result<Identity<'_>, Malformed> {
    let tbs = tbs(der)?;
    let aki = match tbs.extensions {
        Some(ext) => extension(ext, AUTHORITY_KEY_ID)?,
        None => None,
    };
    let authority_key_id = match aki {
        Some(value) => {
            let mut fields = Der(Der(value).expect(SEQUENCE, "invalid authorityKeyIdentifier")?);
            let mut key_id = None;
            while !fields.is_empty() {
                let (tag, contents) = fields.any()?;
                if tag == KEY_IDENTIFIER {
                    key_id = Some(contents);
                }
            }
            key_id
        }
        None => None,
    };
    Ok(Identity {
        serial: tbs.serial,
        authority_key_id,
    })
}

/// `Time ::= UTCTime | GeneralizedTime`, both `…Z` in DER (RFC 5280
/// §4.1.2.5): YYMMDDHHMMSSZ (years 1950–2049) or YYYYMMDDHHMMSSZ.
fn time(der: &mut Der<'_>) -> Result<u64, Malformed> {
    let bad = Malformed("invalid validity time");
    let (tag, t) = der.any()?;
    let (year, rest) = match (tag, t.len()) {
        (UTC_TIME, 13) => {
            let yy = number(&t[..2]).ok_or(bad)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &t[2..])
        }
        (GENERALIZED_TIME, 15) => (number(&t[..4]).ok_or(bad)?, &t[4..]),
        _ => return Err(bad),
    };
    if rest.last() != Some(&b'Z') {
        return Err(bad);
    }
    let field = |i: usize| number(&rest[i..i + 2]).ok_or(bad);
    let (month, day, hour, minute, second) =
        (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad);
    }
    // Before 1970 only for notBefore, where "long ago" is all that counts.
    let days = days_from_civil(year, month, day).unwrap_or(0);
    Ok(days * 86_400 + u64::from(hour * 3600 + minute * 60 + second))
}

fn number(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
    })
}

/// The value (the OCTET STRING's contents) of extension `id` among the
/// `[3] EXPLICIT` extensions, every extension checked on the way.
fn extension<'a>(explicit: &'a [u8], id: &[u8]) -> Result<Option<&'a [u8]>, Malformed> {
    let mut found = None;
    let mut list = Der(Der(explicit).expect(SEQUENCE, "invalid extensions")?);
    while !list.is_empty() {
        let mut ext = Der(list.expect(SEQUENCE, "invalid extension")?);
        let ext_id = ext.expect(OID, "invalid extension id")?;
        if ext.peek() == Some(BOOLEAN) {
            ext.any()?;
        }
        let value = ext.expect(OCTET_STRING, "invalid extension value")?;
        if ext_id == id {
            // RFC 5280 §4.2: one instance of an extension at most.
            if found.is_some() {
                return Err(Malformed("a repeated extension"));
            }
            found = Some(value);
        }
    }
    Ok(found)
}

/// The dNSName and iPAddress entries of a subjectAltName extension's
/// value.
type AltNames = (Vec<String>, Vec<std::net::IpAddr>);

fn alt_names(value: &[u8]) -> Result<AltNames, Malformed> {
    let (mut names, mut addresses) = (Vec::new(), Vec::new());
    let mut general = Der(Der(value).expect(SEQUENCE, "invalid subjectAltName")?);
    while !general.is_empty() {
        let (tag, name) = general.any()?;
        if tag == DNS_NAME {
            names.push(host_name(name).ok_or(Malformed("invalid dNSName"))?);
        } else if tag == IP_ADDRESS {
            // (RFC 5280 §4.2.1.6: four octets, or sixteen.)
            let ip = match name.len() {
                4 => <[u8; 4]>::try_from(name).map(std::net::IpAddr::from),
                16 => <[u8; 16]>::try_from(name).map(std::net::IpAddr::from),
                _ => return Err(Malformed("invalid iPAddress")),
            };
            addresses.push(ip.map_err(|_| Malformed("invalid iPAddress"))?);
        }
    }
    Ok((names, addresses))
}

/// The subject's common name, when it is a plausible host name.
fn common_name(subject: &[u8]) -> Result<Option<String>, Malformed> {
    let mut rdns = Der(subject);
    while !rdns.is_empty() {
        let mut set = Der(rdns.expect(SET, "invalid subject")?);
        while !set.is_empty() {
            let mut attr = Der(set.expect(SEQUENCE, "invalid subject attribute")?);
            let id = attr.expect(OID, "invalid subject attribute id")?;
            let (_, value) = attr.any()?;
            if id == COMMON_NAME {
                return Ok(host_name(value).filter(|n| n.contains('.') || n == "localhost"));
            }
        }
    }
    Ok(None)
}

/// A DNS name as SNI compares it: ASCII letters, digits, `-`, `.`, and a
/// leading `*.`; lower-cased.
fn host_name(raw: &[u8]) -> Option<String> {
    let body = raw.strip_prefix(b"*.").unwrap_or(raw);
    let ok = !body.is_empty()
        && body
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.'));
    ok.then(|| String::from_utf8_lossy(raw).to_ascii_lowercase())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    fn leaf(name: &str) -> Vec<u8> {
        let path = crate::source_dir()
            .join("engine/src/tls/testdata")
            .join(format!("{name}.pem"));
        CertificateDer::from_pem_file(path).expect("pem").to_vec()
    }

    #[test]
    fn validity_and_names_of_the_test_certificates() {
        let a = parse(&leaf("a")).expect("a");
        assert_eq!(a.names, ["a.test", "*.a.test"]);
        // 2020-01-01 as UTCTime, 2126-01-01 as GeneralizedTime.
        assert_eq!(a.not_before, 1_577_836_800);
        assert_eq!(
            a.not_after,
            days_from_civil(2126, 1, 1).expect("date") * 86_400
        );
        let expired = parse(&leaf("expired")).expect("expired");
        assert_eq!(expired.not_after, 1_609_459_200);
        assert_eq!(expired.names, ["expired.test"]);
    }

    /// RFC 9773 §4.1's example certificate (serial 0x87654321, with the
    /// 0x00 its DER INTEGER needs; validity in the year 1).
    const RFC_9773_EXAMPLE: &str = "-----BEGIN CERTIFICATE-----
MIIBQzCB66ADAgECAgUAh2VDITAKBggqhkjOPQQDAjAVMRMwEQYDVQQDEwpFeGFt
cGxlIENBMCIYDzAwMDEwMTAxMDAwMDAwWhgPMDAwMTAxMDEwMDAwMDBaMBYxFDAS
BgNVBAMTC2V4YW1wbGUuY29tMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEeBZu
7cbpAYNXZLbbh8rNIzuOoqOOtmxA1v7cRm//AwyMwWxyHz4zfwmBhcSrf47NUAFf
qzLQ2PPQxdTXREYEnKMjMCEwHwYDVR0jBBgwFoAUaYhba4dGQEHhs3uEe6CuLN4B
yNQwCgYIKoZIzj0EAwIDRwAwRAIge09+S5TZAlw5tgtiVvuERV6cT4mfutXIlwTb
+FYN/8oCIClDsqBklhB9KAelFiYt9+6FDj3z4KGVelYM5MdsO3pK
-----END CERTIFICATE-----
";

    /// The example certificate of RFC 9773 §4.1, DER.
    pub(crate) fn rfc_9773_example() -> Vec<u8> {
        CertificateDer::from_pem_slice(RFC_9773_EXAMPLE.as_bytes())
            .expect("pem")
            .to_vec()
    }

    #[test]
    fn serial_and_authority_key_id_of_the_rfc_9773_example() {
        let der = rfc_9773_example();
        let id = identity(&der).expect("identity");
        assert_eq!(id.serial, [0x00, 0x87, 0x65, 0x43, 0x21]);
        assert_eq!(
            id.authority_key_id,
            Some(
                &[
                    0x69, 0x88, 0x5b, 0x6b, 0x87, 0x46, 0x40, 0x41, 0xe1, 0xb3, 0x7b, 0x84, 0x7b,
                    0xa0, 0xae, 0x2c, 0xde, 0x01, 0xc8, 0xd4
                ][..]
            )
        );
    }

    #[test]
    fn serial_and_authority_key_id_of_the_test_certificates() {
        // As `openssl x509 -serial -ext authorityKeyIdentifier` prints
        // them: the CA's key id, in its own certificate and in its leaves.
        let ca_key_id: &[u8] = &[
            0x36, 0x57, 0x8a, 0x42, 0xc0, 0xf8, 0x55, 0x7c, 0xd4, 0x11, 0xa9, 0xfb, 0xef, 0x63,
            0x95, 0xfb, 0x08, 0xd0, 0x0b, 0xd4,
        ];
        for (name, serial) in [("a", &[0x01][..]), ("b", &[0x02]), ("expired", &[0x04])] {
            let der = leaf(name);
            let id = identity(&der).expect(name);
            assert_eq!(id.serial, serial, "{name}");
            assert_eq!(id.authority_key_id, Some(ca_key_id), "{name}");
        }
        let ca = leaf("ca");
        let id = identity(&ca).expect("ca");
        assert_eq!(id.serial.len(), 20);
        assert_eq!(id.serial[..3], [0x0f, 0xc4, 0xe9]);
        assert_eq!(id.authority_key_id, Some(ca_key_id));
    }

    #[test]
    fn a_certificate_without_extensions_has_no_authority_key_id() {
        // The RFC's example with its extensions cut off: the TBS (at 4,
        // a 3-byte header) ends with the [3] element.
        let der = rfc_9773_example();
        let tbs_end = 7 + usize::from(der[6]);
        let ext_at = der[..tbs_end]
            .windows(2)
            .rposition(|w| w == [EXTENSIONS, 0x23])
            .expect("extensions");
        let tbs = &der[7..ext_at];
        let mut inner = vec![SEQUENCE, 0x81, tbs.len() as u8];
        inner.extend_from_slice(tbs);
        inner.extend_from_slice(&der[tbs_end..]);
        let mut cut = vec![SEQUENCE, 0x82];
        cut.extend_from_slice(&(inner.len() as u16).to_be_bytes());
        cut.extend_from_slice(&inner);
        let id = identity(&cut).expect("identity");
        assert_eq!(id.serial, [0x00, 0x87, 0x65, 0x43, 0x21]);
        assert_eq!(id.authority_key_id, None);
    }

    #[test]
    fn the_common_name_stands_in_only_without_alt_names() {
        let ca = parse(&leaf("ca")).expect("ca");
        // "brisk test CA" is no host name.
        assert!(ca.names.is_empty());
    }

    #[test]
    fn truncated_or_altered_certificates_are_errors_not_panics() {
        let der = leaf("b");
        for n in 0..der.len() {
            let _ = parse(&der[..n]);
            assert!(identity(&der[..n]).is_err());
        }
        for i in 0..der.len() {
            let mut bent = der.clone();
            bent[i] ^= 0xff;
            let _ = parse(&bent);
            let _ = identity(&bent);
        }
        assert!(parse(b"").is_err());
        assert!(parse(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn times() {
        let utc = |s: &[u8]| time(&mut Der(&[&[UTC_TIME, s.len() as u8][..], s].concat()));
        assert_eq!(utc(b"700101000000Z"), Ok(0));
        assert_eq!(utc(b"491231235959Z"), Ok(2_524_607_999));
        assert!(utc(b"701301000000Z").is_err());
        assert!(utc(b"7001010000000").is_err());
        let gen = |s: &[u8]| {
            time(&mut Der(
                &[&[GENERALIZED_TIME, s.len() as u8][..], s].concat()
            ))
        };
        assert_eq!(gen(b"20500101000000Z"), Ok(2_524_608_000));
        assert!(gen(b"2050010100000Z").is_err());
    }
}
