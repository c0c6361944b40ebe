//! What brisk writes in DER and signs itself: the certification request
//! it finalizes an order with (PKCS#10, RFC 2986), the certificate that
//! answers a tls-alpn-01 challenge (RFC 8737 §3), and a local CA's
//! certificates for `localhost` and addresses (RFC 5280).

use std::net::IpAddr;

use super::key::{KeyError, Signer};
use crate::tls::der::{
    context, Writer, BIT_STRING, DNS_NAME, IP_ADDRESS, OCTET_STRING, SET, UTF8_STRING,
};

/// id-at-commonName (X.520).
const COMMON_NAME: &[u64] = &[2, 5, 4, 3];
/// pkcs-9-at-extensionRequest (RFC 2985 §5.4.2).
const EXTENSION_REQUEST: &[u64] = &[1, 2, 840, 113549, 1, 9, 14];
/// id-ce-subjectAltName (RFC 5280 §4.2.1.6).
const SUBJECT_ALT_NAME: &[u64] = &[2, 5, 29, 17];
/// id-ce-basicConstraints (RFC 5280 §4.2.1.9).
const BASIC_CONSTRAINTS: &[u64] = &[2, 5, 29, 19];
/// id-ce-keyUsage (RFC 5280 §4.2.1.3).
const KEY_USAGE: &[u64] = &[2, 5, 29, 15];
/// id-ce-extKeyUsage (RFC 5280 §4.2.1.12).
const EXT_KEY_USAGE: &[u64] = &[2, 5, 29, 37];
/// id-kp-serverAuth.
const SERVER_AUTH: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 3, 1];
/// id-pe-acmeIdentifier (RFC 8737 §6.1).
const ACME_IDENTIFIER: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 1, 31];

/// A name a certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alt<'a> {
    /// A host name (`dNSName`).
    Dns(&'a str),
    /// An address (`iPAddress`).
    Ip(IpAddr),
}

impl Alt<'_> {
    /// The name as a user writes it.
    fn text(&self) -> String {
        match self {
            Alt::Dns(name) => (*name).to_string(),
            Alt::Ip(ip) => ip.to_string(),
        }
    }
}

/// A certificate to write: whom it is for, for how long, and what it
/// may do.
#[derive(Debug, Clone)]
pub struct Template<'a> {
    /// The names (subjectAltName); the first is also the subject's
    /// common name.
    pub names: &'a [Alt<'a>],
    /// The subject's common name when it is not the first name's (a
    /// CA's).
    pub common_name: Option<&'a str>,
    /// Positive, at most 20 bytes (RFC 5280 §4.1.2.2): random.
    pub serial: [u8; 16],
    /// Seconds since the Unix epoch.
    pub not_before: u64,
    /// Seconds since the Unix epoch.
    pub not_after: u64,
    /// A CA (it signs certificates) rather than a server's.
    pub ca: bool,
    /// For a tls-alpn-01 answer: the SHA-256 of the key authorization,
    /// in the critical acmeIdentifier extension.
    pub acme_identifier: Option<[u8; 32]>,
}

impl Template<'_> {
    fn subject_cn(&self) -> String {
        match (self.common_name, self.names.first()) {
            (Some(cn), _) => cn.to_string(),
            (None, Some(alt)) => alt.text(),
            (None, None) => String::new(),
        }
    }
}

/// A random serial number for a [`Template`]: 16 bytes, positive.
pub fn serial() -> Result<[u8; 16], KeyError> {
    use ring::rand::SecureRandom as _;
    let mut s = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut s)
        .map_err(|_| KeyError("no random source".into()))?;
    s[0] = (s[0] & 0x7f) | 0x01;
    Ok(s)
}

/// A `Name` holding only a common name.
fn name(w: &mut Writer, cn: &str) {
    w.seq(|w| {
        if cn.is_empty() {
            return;
        }
        w.nest(SET, |w| {
            w.seq(|w| {
                w.oid(COMMON_NAME);
                w.prim(UTF8_STRING, cn.as_bytes());
            })
        })
    });
}

/// One `Extension`, its value written by `value`.
fn extension(w: &mut Writer, id: &[u64], critical: bool, value: impl FnOnce(&mut Writer)) {
    w.seq(|w| {
        w.oid(id);
        if critical {
            w.boolean(true);
        }
        w.nest(OCTET_STRING, value);
    });
}

/// The subjectAltName extension of `names`.
fn alt_names(w: &mut Writer, names: &[Alt<'_>]) {
    extension(w, SUBJECT_ALT_NAME, false, |w| {
        w.seq(|w| {
            for alt in names {
                match alt {
                    Alt::Dns(name) => w.prim(DNS_NAME, name.as_bytes()),
                    Alt::Ip(IpAddr::V4(ip)) => w.prim(IP_ADDRESS, &ip.octets()),
                    Alt::Ip(IpAddr::V6(ip)) => w.prim(IP_ADDRESS, &ip.octets()),
                }
            }
        })
    });
}

/// `tbs` signed by `key`: a certificate or a request (`SEQUENCE { tbs,
/// the signature's algorithm (ecdsa-with-SHA256 or
/// sha256WithRSAEncryption), BIT STRING signature }`, the same in both).
fn signed(key: &dyn Signer, tbs: Vec<u8>) -> Result<Vec<u8>, KeyError> {
    let sig = key.sign_der(&tbs)?;
    let mut w = Writer::new();
    w.seq(|w| {
        w.raw(&tbs);
        key.algorithm(w);
        w.bits(&sig);
    });
    Ok(w.finish())
}

/// A certification request for `names`, by `key` (RFC 2986 §4; the names
/// in an extensionRequest, RFC 2985 §5.4.2, as RFC 8555 §7.4 wants them,
/// the first also as the common name).
pub fn request(key: &dyn Signer, names: &[Alt<'_>]) -> Result<Vec<u8>, KeyError> {
    let mut w = Writer::new();
    w.seq(|w| {
        w.uint(&[0]);
        name(w, &names.first().map(Alt::text).unwrap_or_default());
        key.spki(w);
        w.nest(context(0), |w| {
            w.seq(|w| {
                w.oid(EXTENSION_REQUEST);
                w.nest(SET, |w| w.seq(|w| alt_names(w, names)));
            })
        });
    });
    signed(key, w.finish())
}

/// A certificate of `t` for `subject`'s public key, signed by `issuer`
/// (its key, and the common name its own certificate has as subject);
/// self-signed when `issuer` is `None`.
pub fn certificate(
    t: &Template<'_>,
    subject: &dyn Signer,
    issuer: Option<(&dyn Signer, &str)>,
) -> Result<Vec<u8>, KeyError> {
    let subject_cn = t.subject_cn();
    let (signer, issuer_cn) = issuer.unwrap_or((subject, &subject_cn));
    let mut w = Writer::new();
    w.seq(|w| {
        w.nest(context(0), |w| w.uint(&[2])); // v3
        w.uint(&t.serial);
        signer.algorithm(w);
        name(w, issuer_cn);
        w.seq(|w| {
            w.time(t.not_before);
            w.time(t.not_after);
        });
        name(w, &subject_cn);
        subject.spki(w);
        w.nest(context(3), |w| {
            w.seq(|w| {
                if !t.names.is_empty() {
                    alt_names(w, t.names);
                }
                // cA TRUE for a CA; an empty sequence (cA FALSE) else.
                extension(w, BASIC_CONSTRAINTS, true, |w| {
                    w.seq(|w| {
                        if t.ca {
                            w.boolean(true);
                        }
                    })
                });
                // keyCertSign and cRLSign (bits 5, 6) for a CA,
                // digitalSignature (bit 0) else; the unused bits named
                // first (DER: trailing zero bits left out).
                let usage: &[u8] = if t.ca { &[1, 0x06] } else { &[7, 0x80] };
                extension(w, KEY_USAGE, true, |w| w.prim(BIT_STRING, usage));
                if !t.ca {
                    extension(w, EXT_KEY_USAGE, false, |w| w.seq(|w| w.oid(SERVER_AUTH)));
                }
                if let Some(digest) = &t.acme_identifier {
                    extension(w, ACME_IDENTIFIER, true, |w| w.prim(OCTET_STRING, digest));
                }
            })
        });
    });
    signed(signer, w.finish())
}

/// The SHA-256 of a key authorization: what the acmeIdentifier
/// extension of a tls-alpn-01 answer holds (RFC 8737 §3).
pub fn acme_identifier(key_authorization: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, key_authorization.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// The certificate answering a tls-alpn-01 validation of `name` (RFC
/// 8737 §3): self-signed by `key` (any key: the CA checks only the name
/// and the critical acmeIdentifier extension holding `digest`), valid a
/// day around `now`.
pub fn alpn_certificate(
    name: &str,
    digest: [u8; 32],
    key: &dyn Signer,
    now: u64,
) -> Result<Vec<u8>, KeyError> {
    let names = [Alt::Dns(name)];
    let t = Template {
        names: &names,
        common_name: None,
        serial: serial()?,
        not_before: now.saturating_sub(86_400),
        not_after: now + 7 * 86_400,
        ca: false,
        acme_identifier: Some(digest),
    };
    certificate(&t, key, None)
}

/// A PEM block of `der` labelled `label` (RFC 7468).
pub fn pem(label: &str, der: &[u8]) -> String {
    let b64 = super::key::encode::<base64ct::Base64>(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests;
