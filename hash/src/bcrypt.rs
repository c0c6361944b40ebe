//! bcrypt (`$2y$`, `$2b$`, `$2a$`): the EksBlowfish key schedule on top of
//! RustCrypto's `blowfish` (its `bcrypt` feature exposes the salted key
//! expansion), with the hash layout of OpenBSD's `bcrypt.c`.
//!
//! `$2y$` (what `htpasswd -B` writes), `$2b$` and `$2a$` are the same
//! algorithm for every password shorter than 255 bytes; `$2a$` differs only
//! in OpenBSD's old length wrap-around, which no `htpasswd` reproduces.

use base64ct::{Base64Bcrypt, Encoding};
use blowfish::Blowfish;

use super::{ct_eq, HashError};

/// Highest cost accepted: 2^20 rounds already take over a minute.
pub(crate) const MAX_COST: u32 = 20;

/// A parsed bcrypt hash.
#[derive(Clone)]
pub struct Bcrypt {
    cost: u32,
    salt: [u8; 16],
    /// The 31 characters of the encoded digest, as in the file.
    encoded: [u8; 31],
}

impl Bcrypt {
    /// Its cost: 2^cost rounds.
    pub fn cost(&self) -> u32 {
        self.cost
    }

    /// `$2y$05$` + 22 characters of salt + 31 of digest.
    pub fn parse(s: &[u8]) -> Result<Bcrypt, HashError> {
        const FORM: &str = "bcrypt hashes look like $2y$05$ followed by 53 characters";
        if s.len() != 60 || s[6] != b'$' {
            return Err(HashError::Invalid(FORM));
        }
        let cost = match (s[4], s[5]) {
            (a @ b'0'..=b'9', b @ b'0'..=b'9') => u32::from(a - b'0') * 10 + u32::from(b - b'0'),
            _ => return Err(HashError::Invalid(FORM)),
        };
        if !(4..=MAX_COST).contains(&cost) {
            return Err(HashError::BcryptCost);
        }
        let mut salt = [0u8; 16];
        // 22 characters carry 132 bits, of which the last 4 must be zero:
        // the strict decoder refuses a salt that no bcrypt would write.
        let salt_ok = Base64Bcrypt::decode(&s[7..29], &mut salt).map(|d| d.len()) == Ok(16);
        let mut digest = [0u8; 23];
        let digest_ok = Base64Bcrypt::decode(&s[29..], &mut digest).map(|d| d.len()) == Ok(23);
        if !salt_ok || !digest_ok {
            return Err(HashError::Invalid(
                "bcrypt salt or digest is not valid bcrypt base64",
            ));
        }
        let mut encoded = [0u8; 31];
        encoded.copy_from_slice(&s[29..]);
        Ok(Bcrypt {
            cost,
            salt,
            encoded,
        })
    }

    pub fn verify(&self, password: &[u8]) -> bool {
        let digest = bcrypt_raw(self.cost, &self.salt, password);
        let mut out = [0u8; 31];
        match Base64Bcrypt::encode(&digest[..23], &mut out) {
            Ok(enc) => ct_eq(enc.as_bytes(), &self.encoded),
            Err(_) => false,
        }
    }
}

/// The 24-byte bcrypt output (only 23 are encoded, as everyone does).
fn bcrypt_raw(cost: u32, salt: &[u8; 16], password: &[u8]) -> [u8; 24] {
    // The key is the password with its C string terminator, at most 72
    // bytes: longer passwords are cut there, as in every bcrypt.
    let mut key = [0u8; 72];
    let n = password.len().min(72);
    key[..n].copy_from_slice(&password[..n]);
    let key = &key[..(password.len() + 1).min(72)];

    let mut state = Blowfish::bc_init_state();
    state.salted_expand_key(salt, key);
    for _ in 0..1u64 << cost {
        state.bc_expand_key(key);
        state.bc_expand_key(salt);
    }
    // "OrpheanBeholderScryDoubt", encrypted 64 times.
    let mut text: [u32; 6] = [
        0x4f72_7068,
        0x6561_6e42,
        0x6568_6f6c,
        0x6465_7253,
        0x6372_7944,
        0x6f75_6274,
    ];
    for pair in text.chunks_exact_mut(2) {
        let mut lr = [pair[0], pair[1]];
        for _ in 0..64 {
            lr = state.bc_encrypt(lr);
        }
        pair.copy_from_slice(&lr);
    }
    let mut out = [0u8; 24];
    for (chunk, word) in out.chunks_exact_mut(4).zip(text) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}
