//! Password hashes as Apache's `htpasswd` writes them, parsed once when the
//! file is loaded and verified per login.
//!
//! Every format is checked completely at load time (prefix, cost, salt and
//! digest lengths, alphabet), so that a broken line is reported with its
//! number instead of failing every login later. Digests are compared with
//! [`ct_eq`], which has no early exit.
//!
//! Costs are capped (bcrypt ≤ 2^20, SHA-crypt ≤ 10,000,000 rounds,
//! argon2id ≤ 1 GiB and t ≤ 64): verification runs on a worker thread, and
//! an entry beyond those limits would stall it for minutes per request.
//!
//! A package of its own, used by brisk's engine (`access/htpasswd.rs`),
//! so that its code is built for size (the root Cargo.toml's
//! `[profile.release.package.brisk-hash]` says what that costs): a
//! credential is verified once, off the event loops, then found in the
//! engine's cache of verified credentials.

mod apr1;
mod argon2id;
mod bcrypt;
mod error;
mod sha_crypt;

pub use error::HashError;

use sha1::Sha1;
use sha2::{Digest, Sha256};

/// One parsed password hash.
#[derive(Clone)]
pub enum Hash {
    /// `$2y$`, `$2b$`, `$2a$` (all verified as `$2b$`).
    Bcrypt(bcrypt::Bcrypt),
    /// `$5$` and `$6$`, with optional `rounds=`.
    ShaCrypt(sha_crypt::ShaCrypt),
    /// `$apr1$`.
    Apr1(apr1::Apr1),
    /// `{SHA}`: unsalted SHA-1, base64.
    Sha1([u8; 20]),
    /// `$argon2id$…`: a PHC string.
    Argon2id(argon2id::Argon2id),
    /// A plaintext password (only with `allow_plaintext`), kept as its
    /// SHA-256 so that neither the password nor its length is held in
    /// memory or leaked by the comparison's timing.
    Plain([u8; 32]),
}

impl Hash {
    /// Parses the hash field of an htpasswd line.
    pub fn parse(s: &[u8], allow_plaintext: bool) -> Result<Hash, HashError> {
        if s.is_empty() {
            return Err(HashError::Invalid("empty password hash"));
        }
        if s.starts_with(b"$2y$") || s.starts_with(b"$2b$") || s.starts_with(b"$2a$") {
            return bcrypt::Bcrypt::parse(s).map(Hash::Bcrypt);
        }
        if s.starts_with(b"$5$") || s.starts_with(b"$6$") {
            return sha_crypt::ShaCrypt::parse(s).map(Hash::ShaCrypt);
        }
        if s.starts_with(b"$apr1$") {
            return apr1::Apr1::parse(s).map(Hash::Apr1);
        }
        if let Some(b64) = s.strip_prefix(b"{SHA}") {
            use base64ct::Encoding;
            let mut out = [0u8; 20];
            let len = base64ct::Base64::decode(b64, &mut out).map(|d| d.len());
            return match len {
                Ok(20) => Ok(Hash::Sha1(out)),
                _ => Err(HashError::Invalid(
                    "{SHA} must be followed by the base64 of 20 bytes (28 characters)",
                )),
            };
        }
        if s.starts_with(b"$argon2id$") {
            return argon2id::Argon2id::parse(s).map(Hash::Argon2id);
        }
        if s.starts_with(b"$argon2i$") || s.starts_with(b"$argon2d$") {
            return Err(HashError::Invalid(
                "only the argon2id variant of Argon2 is supported",
            ));
        }
        if s.starts_with(b"$1$") {
            return Err(HashError::Invalid(
                "MD5-crypt ($1$) is not supported; use htpasswd -B (bcrypt)",
            ));
        }
        if s.starts_with(b"$") || s.starts_with(b"{") {
            return Err(HashError::UnknownScheme(scheme_name(s)));
        }
        if allow_plaintext {
            return Ok(Hash::Plain(Sha256::digest(s).into()));
        }
        if s.len() == 13 && s.iter().all(|&b| is_crypt64(b)) {
            return Err(HashError::Invalid(
                "crypt(3) DES hashes are not supported (they use only 8 characters of the password); recreate the entry with htpasswd -B",
            ));
        }
        Err(HashError::Invalid(
            "not a supported password hash (a plaintext password needs allow_plaintext = true; better, hash it with htpasswd -B)",
        ))
    }

    /// Whether `password` matches. Costs what the scheme costs: tens of
    /// milliseconds for bcrypt and argon2id at their usual settings.
    pub fn verify(&self, password: &[u8]) -> bool {
        match self {
            Hash::Bcrypt(h) => h.verify(password),
            Hash::ShaCrypt(h) => h.verify(password),
            Hash::Apr1(h) => h.verify(password),
            Hash::Sha1(d) => ct_eq(&Sha1::digest(password), d),
            Hash::Argon2id(h) => h.verify(password),
            Hash::Plain(d) => ct_eq(&Sha256::digest(password), d),
        }
    }

    /// About what [`Hash::verify`] costs, in microseconds of an
    /// optimised build (to pick the costliest entry of a file; only the
    /// order matters): bcrypt about 70 per 2^cost, SHA-crypt 0.6 a round,
    /// argon2id 1 per KiB and pass, APR1 200, SHA-1 and plain next to
    /// nothing.
    pub fn cost(&self) -> u64 {
        match self {
            Hash::Bcrypt(h) => 70u64 << h.cost(),
            Hash::ShaCrypt(h) => u64::from(h.rounds()) * 3 / 5,
            Hash::Apr1(_) => 200,
            Hash::Argon2id(h) => h.work(),
            Hash::Sha1(_) | Hash::Plain(_) => 1,
        }
    }

    /// A short name of the scheme, for messages.
    pub fn scheme(&self) -> &'static str {
        match self {
            Hash::Bcrypt(_) => "bcrypt",
            Hash::ShaCrypt(h) => h.scheme(),
            Hash::Apr1(_) => "apr1",
            Hash::Sha1(_) => "{SHA}",
            Hash::Argon2id(_) => "argon2id",
            Hash::Plain(_) => "plaintext",
        }
    }
}

/// `$xyz$` or `{XYZ}` at the start of an unknown hash, for the message.
fn scheme_name(s: &[u8]) -> String {
    let close = if s[0] == b'{' { b'}' } else { b'$' };
    let end = s[1..]
        .iter()
        .position(|&b| b == close)
        .map_or(s.len().min(12), |i| i + 2);
    String::from_utf8_lossy(&s[..end.min(16)]).into_owned()
}

/// Equality without an early exit: the time taken depends on the lengths
/// only, never on where the first difference is.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    // Keeps the optimiser from turning the loop into an early-exit compare.
    std::hint::black_box(diff) == 0
}

/// The alphabet of crypt(3)'s base64 (`./0-9A-Za-z`), used by SHA-crypt
/// and APR1 with their own byte order.
const CRYPT64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn is_crypt64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'/'
}

/// Appends `n` characters encoding the 24 bits `b2 b1 b0`, least
/// significant six bits first (crypt(3)'s `b64_from_24bit`).
fn crypt64_push(out: &mut Vec<u8>, b2: u8, b1: u8, b0: u8, n: usize) {
    let mut w = (u32::from(b2) << 16) | (u32::from(b1) << 8) | u32::from(b0);
    for _ in 0..n {
        out.push(CRYPT64[(w & 0x3f) as usize]);
        w >>= 6;
    }
}

#[cfg(test)]
mod tests;
