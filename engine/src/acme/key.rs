//! The keys brisk makes for ACME: the account's key and each
//! certificate's, ECDSA on P-256 (RFC 8555 §6.2 asks servers for ES256;
//! every client and CA takes P-256). ring makes and signs with them; they
//! are kept as PKCS#8 documents (RFC 5958), the form ring reads back and
//! rustls takes as a certificate key.

use ring::rand::SystemRandom;
use ring::signature::{
    EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P256_SHA256_FIXED_SIGNING,
};

use crate::tls::der::{Writer, BIT_STRING};

/// id-ecPublicKey (RFC 5480 §2.1.1).
pub const EC_PUBLIC_KEY: &[u64] = &[1, 2, 840, 10045, 2, 1];
/// secp256r1, P-256 (RFC 5480 §2.1.1.1).
pub const P256: &[u64] = &[1, 2, 840, 10045, 3, 1, 7];
/// ecdsa-with-SHA256 (RFC 5758 §3.2): the signature of what this key
/// signs in DER (requests, certificates).
pub const ECDSA_WITH_SHA256: &[u64] = &[1, 2, 840, 10045, 4, 3, 2];

/// An ECDSA P-256 key pair.
pub struct Key {
    pkcs8: Vec<u8>,
    /// Signs with the signature as `r || s` (JWS, RFC 7518 §3.4).
    fixed: EcdsaKeyPair,
    /// Signs with the signature in DER (X.509, PKCS#10).
    asn1: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // (Never the private key.)
        f.write_str("Key(P-256)")
    }
}

/// A key that could not be made or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(pub String);

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Key {
    /// A new key, from the system's random source.
    pub fn generate() -> Result<Key, KeyError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| KeyError("no ECDSA key could be made (no random source?)".into()))?;
        Key::from_pkcs8(doc.as_ref())
    }

    /// The key a PKCS#8 document holds (as [`Key::pkcs8`] wrote it).
    pub fn from_pkcs8(pkcs8: &[u8]) -> Result<Key, KeyError> {
        let rng = SystemRandom::new();
        let bad = |_| KeyError("not an ECDSA P-256 key in PKCS#8".into());
        let fixed =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng).map_err(bad)?;
        let asn1 =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8, &rng).map_err(bad)?;
        Ok(Key {
            pkcs8: pkcs8.to_vec(),
            fixed,
            asn1,
            rng,
        })
    }

    /// Its PKCS#8 document (the private key: stored 0600, never logged).
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The public point, uncompressed (`04 || x || y`, SEC 1 §2.3.3).
    pub fn public_point(&self) -> &[u8] {
        self.fixed.public_key().as_ref()
    }

    /// Its public key as an X.509 `SubjectPublicKeyInfo` (RFC 5480).
    pub fn spki(&self, w: &mut Writer) {
        w.seq(|w| {
            w.seq(|w| {
                w.oid(EC_PUBLIC_KEY);
                w.oid(P256);
            });
            w.nest(BIT_STRING, |w| {
                w.raw(&[0]);
                w.raw(self.public_point());
            });
        });
    }

    /// The JWK of its public key (RFC 7517, RFC 7518 §6.2), with its
    /// members in the order and form RFC 7638 §3 hashes: no white space,
    /// names sorted.
    pub fn jwk(&self) -> String {
        let point = self.public_point();
        format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            b64url(&point[1..33]),
            b64url(&point[33..65])
        )
    }

    /// Its JWK thumbprint (RFC 7638): base64url of the JWK's SHA-256,
    /// the second half of every key authorization (RFC 8555 §8.1).
    pub fn thumbprint(&self) -> String {
        b64url(ring::digest::digest(&ring::digest::SHA256, self.jwk().as_bytes()).as_ref())
    }

    /// ES256 over `msg`, `r || s` (a JWS signature).
    pub fn sign_jws(&self, msg: &[u8]) -> Result<Vec<u8>, KeyError> {
        let sig = self.fixed.sign(&self.rng, msg).map_err(|_| signing())?;
        Ok(sig.as_ref().to_vec())
    }

    /// ecdsa-with-SHA256 over `msg`, the signature in DER (a request's
    /// or a certificate's).
    pub fn sign_der(&self, msg: &[u8]) -> Result<Vec<u8>, KeyError> {
        let sig = self.asn1.sign(&self.rng, msg).map_err(|_| signing())?;
        Ok(sig.as_ref().to_vec())
    }
}

fn signing() -> KeyError {
    KeyError("ECDSA signing failed".into())
}

/// base64url without padding (RFC 7515 §2, RFC 4648 §5).
pub fn b64url(bytes: &[u8]) -> String {
    encode::<base64ct::Base64UrlUnpadded>(bytes)
}

/// `bytes` in base64 of the variant `E`.
pub fn encode<E: base64ct::Encoding>(bytes: &[u8]) -> String {
    let mut out = vec![0u8; E::encoded_len(bytes)];
    let len = E::encode(bytes, &mut out).map_or(0, |s| s.len());
    out.truncate(len);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_FIXED};

    #[test]
    fn a_key_goes_through_pkcs8_and_both_signatures_verify() {
        let key = Key::generate().unwrap();
        let again = Key::from_pkcs8(key.pkcs8()).unwrap();
        assert_eq!(key.public_point(), again.public_point());
        assert_eq!(key.public_point().len(), 65);
        let msg = b"protected.payload";
        let jws = again.sign_jws(msg).unwrap();
        assert_eq!(jws.len(), 64);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_point())
            .verify(msg, &jws)
            .unwrap();
        let der = again.sign_der(msg).unwrap();
        assert_eq!(der[0], 0x30);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, key.public_point())
            .verify(msg, &der)
            .unwrap();
        assert!(Key::from_pkcs8(&key.pkcs8()[1..]).is_err());
        assert_eq!(format!("{key:?}"), "Key(P-256)");
    }

    #[test]
    fn jwk_and_thumbprint_of_rfc_7638_form() {
        let key = Key::generate().unwrap();
        let jwk = key.jwk();
        assert!(
            jwk.starts_with(r#"{"crv":"P-256","kty":"EC","x":""#),
            "{jwk}"
        );
        assert!(!jwk.contains(' ') && !jwk.contains('='));
        // x and y: 32 bytes each, 43 base64url characters.
        assert_eq!(
            jwk.len(),
            r#"{"crv":"P-256","kty":"EC","x":"","y":""}"#.len() + 86
        );
        let thumb = key.thumbprint();
        assert_eq!(thumb.len(), 43);
        assert!(thumb
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    }

    #[test]
    fn base64url_has_no_padding_and_the_url_alphabet() {
        // RFC 7515 Appendix C's example.
        assert_eq!(b64url(&[3, 236, 255, 224, 193]), "A-z_4ME");
        assert_eq!(b64url(b""), "");
    }
}
