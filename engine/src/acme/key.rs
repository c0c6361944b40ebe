//! The keys brisk makes for ACME: the account's key, ECDSA on P-256
//! (RFC 8555 §6.2 asks servers for ES256; every client and CA takes
//! P-256), and each certificate's, P-256 too or RSA 2048 (`[acme]
//! key_type`, for clients without ECDSA). ring makes the P-256 keys
//! and signs with both kinds; the RSA keys are made by [`super::rsa`].
//! They are kept as PKCS#8 documents (RFC 5958), the form ring reads back
//! and rustls takes as a certificate key, and wiped from memory when
//! dropped.

use ring::rand::SystemRandom;
use ring::signature::{
    EcdsaKeyPair, KeyPair as _, RsaKeyPair, ECDSA_P256_SHA256_ASN1_SIGNING,
    ECDSA_P256_SHA256_FIXED_SIGNING, RSA_PKCS1_SHA256,
};

use super::rsa::{RSA_ENCRYPTION, SHA256_WITH_RSA};
use crate::tls::der::{Writer, BIT_STRING, NULL};

/// The kind of key of each certificate brisk obtains (`key_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeyType {
    /// ECDSA on P-256 (`"ecdsa-p256"`, the default): small and fast.
    #[default]
    EcdsaP256,
    /// RSA 2048 (`"rsa2048"`): for clients without ECDSA.
    Rsa2048,
}

impl KeyType {
    /// Its name in the file.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::EcdsaP256 => "ecdsa-p256",
            KeyType::Rsa2048 => "rsa2048",
        }
    }
}

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

/// What a certificate's key does in DER: its public key in a request or
/// a certificate, the signatures over them (the P-256 [`Key`] and the
/// [`RsaKey`]).
pub trait Signer {
    /// Its PKCS#8 document (the private key: stored 0600, never logged).
    fn pkcs8(&self) -> &[u8];
    /// Its public key as an X.509 `SubjectPublicKeyInfo`.
    fn spki(&self, w: &mut Writer);
    /// The `AlgorithmIdentifier` of its signatures in DER.
    fn algorithm(&self, w: &mut Writer);
    /// Its signature of `msg`, as a request or certificate holds it.
    fn sign_der(&self, msg: &[u8]) -> Result<Vec<u8>, KeyError>;
}

/// A new certificate key of the kind `kind`: P-256 in a few
/// microseconds, RSA 2048 in a fraction of a second (a few seconds in a
/// debug build; the ACME thread makes it, off the event loops).
pub fn certificate_key(kind: KeyType) -> Result<Box<dyn Signer>, KeyError> {
    Ok(match kind {
        KeyType::EcdsaP256 => Box::new(Key::generate()?),
        KeyType::Rsa2048 => Box::new(RsaKey::generate()?),
    })
}

/// Zeros over a private key's document, before its memory is given back.
fn wipe(pkcs8: &mut [u8]) {
    pkcs8.fill(0);
    std::hint::black_box(&pkcs8);
}

impl Drop for Key {
    fn drop(&mut self) {
        wipe(&mut self.pkcs8);
    }
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

impl Signer for Key {
    fn pkcs8(&self) -> &[u8] {
        Key::pkcs8(self)
    }

    fn spki(&self, w: &mut Writer) {
        Key::spki(self, w);
    }

    /// ecdsa-with-SHA256, no parameters (RFC 5758 §3.2).
    fn algorithm(&self, w: &mut Writer) {
        w.seq(|w| w.oid(ECDSA_WITH_SHA256));
    }

    fn sign_der(&self, msg: &[u8]) -> Result<Vec<u8>, KeyError> {
        Key::sign_der(self, msg)
    }
}

/// An RSA key pair (2048 bits when brisk made it), for certificates.
pub struct RsaKey {
    pkcs8: Vec<u8>,
    pair: RsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RsaKey({} bits)", 8 * self.pair.public().modulus_len())
    }
}

impl Drop for RsaKey {
    fn drop(&mut self) {
        wipe(&mut self.pkcs8);
    }
}

impl RsaKey {
    /// A new RSA 2048 key ([`super::rsa`]).
    pub fn generate() -> Result<RsaKey, KeyError> {
        let mut doc = super::rsa::generate_pkcs8()
            .map_err(|e| KeyError(format!("no RSA key could be made: {}", e.0)))?;
        let key = RsaKey::from_pkcs8(&doc);
        wipe(&mut doc);
        key
    }

    /// The key a PKCS#8 document holds (ring checks it: RFC 8017's
    /// relations between its numbers, 2048 to 4096 bits).
    pub fn from_pkcs8(pkcs8: &[u8]) -> Result<RsaKey, KeyError> {
        let pair = RsaKeyPair::from_pkcs8(pkcs8)
            .map_err(|e| KeyError(format!("not an RSA key in PKCS#8 ring takes: {e}")))?;
        Ok(RsaKey {
            pkcs8: pkcs8.to_vec(),
            pair,
            rng: SystemRandom::new(),
        })
    }
}

impl Signer for RsaKey {
    fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// rsaEncryption with NULL parameters, the `RSAPublicKey` in the BIT
    /// STRING (RFC 3279 §2.3.1).
    fn spki(&self, w: &mut Writer) {
        w.seq(|w| {
            w.seq(|w| {
                w.oid(RSA_ENCRYPTION);
                w.prim(NULL, &[]);
            });
            w.bits(self.pair.public_key().as_ref());
        });
    }

    /// sha256WithRSAEncryption, NULL parameters (RFC 4055 §5).
    fn algorithm(&self, w: &mut Writer) {
        w.seq(|w| {
            w.oid(SHA256_WITH_RSA);
            w.prim(NULL, &[]);
        });
    }

    /// PKCS#1 v1.5 with SHA-256 (RFC 8017 §8.2).
    fn sign_der(&self, msg: &[u8]) -> Result<Vec<u8>, KeyError> {
        let mut sig = vec![0; self.pair.public().modulus_len()];
        self.pair
            .sign(&RSA_PKCS1_SHA256, &self.rng, msg, &mut sig)
            .map_err(|_| KeyError("RSA signing failed".into()))?;
        Ok(sig)
    }
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
    fn certificate_keys_of_either_kind_sign_what_their_spki_verifies() {
        use ring::signature::{ECDSA_P256_SHA256_ASN1, RSA_PKCS1_2048_8192_SHA256};
        for kind in [KeyType::EcdsaP256, KeyType::Rsa2048] {
            let key = certificate_key(kind).unwrap();
            let mut spki = Writer::new();
            key.spki(&mut spki);
            let spki = spki.finish();
            // The BIT STRING's contents: the point, or RSAPublicKey.
            let public = &spki[spki.len() - if kind == KeyType::Rsa2048 { 270 } else { 65 }..];
            let msg = b"tbs";
            let sig = key.sign_der(msg).unwrap();
            let (alg, verify): (&[u64], &dyn ring::signature::VerificationAlgorithm) = match kind {
                KeyType::EcdsaP256 => (ECDSA_WITH_SHA256, &ECDSA_P256_SHA256_ASN1),
                KeyType::Rsa2048 => (SHA256_WITH_RSA, &RSA_PKCS1_2048_8192_SHA256),
            };
            UnparsedPublicKey::new(verify, public)
                .verify(msg, &sig)
                .unwrap();
            // (RSA's with NULL parameters, RFC 4055 §5; ECDSA's without,
            // RFC 5758 §3.2.)
            let mut want = Writer::new();
            want.seq(|w| {
                w.oid(alg);
                if kind == KeyType::Rsa2048 {
                    w.prim(NULL, &[]);
                }
            });
            let mut got = Writer::new();
            key.algorithm(&mut got);
            assert_eq!(got.finish(), want.finish());
            // Each reads back only as its own kind.
            assert_eq!(
                Key::from_pkcs8(key.pkcs8()).is_ok(),
                kind == KeyType::EcdsaP256
            );
            assert_eq!(
                RsaKey::from_pkcs8(key.pkcs8()).is_ok(),
                kind == KeyType::Rsa2048
            );
        }
        let rsa = RsaKey::generate().unwrap();
        assert_eq!(format!("{rsa:?}"), "RsaKey(2048 bits)");
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
