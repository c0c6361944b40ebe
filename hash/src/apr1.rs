//! APR1-MD5 (`$apr1$`): Poul-Henning Kamp's MD5-crypt with Apache's magic
//! string, on RustCrypto's `md-5`. Old and weak, but still `htpasswd`'s
//! default, so every existing file has it.

use md5::{Digest, Md5};

use super::{crypt64_push, ct_eq, is_crypt64, HashError};

const MAGIC: &[u8] = b"$apr1$";

/// A parsed APR1 hash.
#[derive(Clone)]
pub struct Apr1 {
    /// At most 8 bytes.
    salt: Box<[u8]>,
    /// The 22 encoded characters, as in the file.
    encoded: [u8; 22],
}

impl Apr1 {
    /// `$apr1$salt$digest`.
    pub fn parse(s: &[u8]) -> Result<Apr1, HashError> {
        let rest = &s[MAGIC.len()..];
        let Some(dollar) = rest.iter().position(|&b| b == b'$') else {
            return Err(HashError::Invalid(
                "APR1 hashes look like $apr1$salt$digest",
            ));
        };
        let (salt, digest) = (&rest[..dollar], &rest[dollar + 1..]);
        if salt.len() > 8 {
            return Err(HashError::Invalid("APR1 salt must be at most 8 characters"));
        }
        if digest.len() != 22 || !digest.iter().all(|&b| is_crypt64(b)) {
            return Err(HashError::Invalid(
                "APR1 digest must be 22 characters of ./0-9A-Za-z",
            ));
        }
        let mut encoded = [0u8; 22];
        encoded.copy_from_slice(digest);
        Ok(Apr1 {
            salt: salt.into(),
            encoded,
        })
    }

    pub fn verify(&self, password: &[u8]) -> bool {
        let f = apr1(password, &self.salt);
        let mut out = Vec::with_capacity(22);
        for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
            crypt64_push(&mut out, f[a], f[b], f[c], 4);
        }
        crypt64_push(&mut out, 0, 0, f[11], 2);
        ct_eq(&out, &self.encoded)
    }
}

/// The raw 16-byte MD5-crypt digest.
fn apr1(password: &[u8], salt: &[u8]) -> [u8; 16] {
    let alt: [u8; 16] = Md5::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize()
        .into();

    let mut ctx = Md5::new()
        .chain_update(password)
        .chain_update(MAGIC)
        .chain_update(salt);
    let mut n = password.len();
    while n > 0 {
        ctx.update(&alt[..n.min(16)]);
        n = n.saturating_sub(16);
    }
    // The original adds a byte of a cleared buffer for set bits, and the
    // first byte of the password for clear ones.
    let mut n = password.len();
    while n > 0 {
        if n & 1 != 0 {
            ctx.update([0u8]);
        } else {
            ctx.update(&password[..1]);
        }
        n >>= 1;
    }
    let mut f: [u8; 16] = ctx.finalize().into();

    for i in 0..1000 {
        let mut h = Md5::new();
        if i & 1 != 0 {
            h.update(password);
        } else {
            h.update(f);
        }
        if i % 3 != 0 {
            h.update(salt);
        }
        if i % 7 != 0 {
            h.update(password);
        }
        if i & 1 != 0 {
            h.update(f);
        } else {
            h.update(password);
        }
        f = h.finalize().into();
    }
    f
}
