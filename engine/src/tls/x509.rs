//! The few facts brisk needs from an X.509 certificate (RFC 5280): its
//! validity period, to refuse an expired certificate at start, and the
//! names it is for, to pick a certificate by SNI. A small DER walker
//! rather than a certificate-parsing crate: it reads four fields, never
//! allocates more than the names, and rejects whatever it does not
//! understand instead of guessing. The signature and the chain are the
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

/// Why a certificate could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a valid X.509 certificate ({})", self.0)
    }
}

use super::der::{
    context, BOOLEAN, DNS_NAME, GENERALIZED_TIME, IP_ADDRESS, OCTET_STRING, OID, SEQUENCE, SET,
    UTC_TIME,
};

/// `[0] EXPLICIT` version, `[3] EXPLICIT` extensions.
const VERSION: u8 = context(0);
const EXTENSIONS: u8 = context(3);
/// id-ce-subjectAltName, 2.5.29.17.
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
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

/// Reads the validity period and the names of a DER certificate.
pub fn parse(der: &[u8]) -> Result<Facts, Malformed> {
    let mut outer = Der(der);
    let cert = outer.expect(SEQUENCE, "no Certificate sequence")?;
    let mut cert = Der(cert);
    let mut tbs = Der(cert.expect(SEQUENCE, "no TBSCertificate")?);
    if tbs.peek() == Some(VERSION) {
        tbs.any()?;
    }
    tbs.any()?; // serialNumber
    tbs.expect(SEQUENCE, "no signature algorithm")?;
    tbs.expect(SEQUENCE, "no issuer")?;
    let mut validity = Der(tbs.expect(SEQUENCE, "no validity")?);
    let not_before = time(&mut validity)?;
    let not_after = time(&mut validity)?;
    let subject = tbs.expect(SEQUENCE, "no subject")?;
    tbs.expect(SEQUENCE, "no subjectPublicKeyInfo")?;
    let (mut names, mut addresses) = (Vec::new(), Vec::new());
    while !tbs.is_empty() {
        let (tag, contents) = tbs.any()?;
        if tag == EXTENSIONS {
            (names, addresses) = alt_names(contents)?;
        }
    }
    if names.is_empty() {
        if let Some(cn) = common_name(subject)? {
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

/// The dNSName and iPAddress entries of the subjectAltName extension, if
/// it is there.
type AltNames = (Vec<String>, Vec<std::net::IpAddr>);

fn alt_names(explicit: &[u8]) -> Result<AltNames, Malformed> {
    let (mut names, mut addresses) = (Vec::new(), Vec::new());
    let mut list = Der(Der(explicit).expect(SEQUENCE, "invalid extensions")?);
    while !list.is_empty() {
        let mut ext = Der(list.expect(SEQUENCE, "invalid extension")?);
        let id = ext.expect(OID, "invalid extension id")?;
        if ext.peek() == Some(BOOLEAN) {
            ext.any()?;
        }
        let value = ext.expect(OCTET_STRING, "invalid extension value")?;
        if id != SUBJECT_ALT_NAME {
            continue;
        }
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
mod tests {
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

    #[cfg(feature = "acme")]
    #[test]
    fn addresses_are_read_apart_from_names() {
        use crate::acme::cert::{certificate, serial, Alt, Template};
        let key = crate::acme::key::Key::generate().expect("key");
        let names = [
            Alt::Dns("localhost"),
            Alt::Ip("127.0.0.2".parse().expect("v4")),
            Alt::Ip("::1".parse().expect("v6")),
        ];
        let t = Template {
            names: &names,
            common_name: None,
            serial: serial().expect("serial"),
            not_before: 0,
            not_after: 86_400,
            ca: false,
            acme_identifier: None,
        };
        let facts = parse(&certificate(&t, &key, None).expect("cert")).expect("parse");
        assert_eq!(facts.names, ["localhost"]);
        let want: Vec<std::net::IpAddr> =
            vec!["127.0.0.2".parse().expect("v4"), "::1".parse().expect("v6")];
        assert_eq!(facts.addresses, want);
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
        }
        for i in 0..der.len() {
            let mut bent = der.clone();
            bent[i] ^= 0xff;
            let _ = parse(&bent);
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
