//! SHA-crypt (`$5$` SHA-256, `$6$` SHA-512), from Ulrich Drepper's
//! specification "Unix crypt using SHA-256 and SHA-512", on RustCrypto's
//! `sha2`.

use sha2::{Digest, Sha256, Sha512};

use super::{crypt64_push, ct_eq, is_crypt64, HashError};

const DEFAULT_ROUNDS: u32 = 5000;
/// The specification clamps smaller counts up to this.
const MIN_ROUNDS: u32 = 1000;
/// The specification allows up to 999,999,999; anything near that would
/// stall a worker for minutes per login, so such a line is refused.
pub(crate) const MAX_ROUNDS: u32 = 10_000_000;

/// Byte triples of the SHA-256 output in encoding order (then 31, 30).
const ORDER_256: [[usize; 3]; 10] = [
    [0, 10, 20],
    [21, 1, 11],
    [12, 22, 2],
    [3, 13, 23],
    [24, 4, 14],
    [15, 25, 5],
    [6, 16, 26],
    [27, 7, 17],
    [18, 28, 8],
    [9, 19, 29],
];

/// Byte triples of the SHA-512 output in encoding order (then 63).
const ORDER_512: [[usize; 3]; 21] = [
    [0, 21, 42],
    [22, 43, 1],
    [44, 2, 23],
    [3, 24, 45],
    [25, 46, 4],
    [47, 5, 26],
    [6, 27, 48],
    [28, 49, 7],
    [50, 8, 29],
    [9, 30, 51],
    [31, 52, 10],
    [53, 11, 32],
    [12, 33, 54],
    [34, 55, 13],
    [56, 14, 35],
    [15, 36, 57],
    [37, 58, 16],
    [59, 17, 38],
    [18, 39, 60],
    [40, 61, 19],
    [62, 20, 41],
];

/// A parsed SHA-crypt hash.
#[derive(Clone)]
pub struct ShaCrypt {
    /// `$6$` (SHA-512) rather than `$5$`.
    wide: bool,
    rounds: u32,
    /// At most 16 bytes: longer salts are cut, as the specification says.
    salt: Box<[u8]>,
    /// The encoded digest as in the file (43 or 86 characters).
    encoded: Box<[u8]>,
}

impl ShaCrypt {
    /// Its rounds.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// `$5$[rounds=N$]salt$digest` or the same with `$6$`.
    pub fn parse(s: &[u8]) -> Result<ShaCrypt, HashError> {
        let wide = s[1] == b'6';
        let mut rest = &s[3..];
        let mut rounds = DEFAULT_ROUNDS;
        if let Some(r) = rest.strip_prefix(b"rounds=") {
            let end = r.iter().position(|&b| b == b'$').unwrap_or(r.len());
            let digits = &r[..end];
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(HashError::Invalid("SHA-crypt rounds= must be a number"));
            }
            // (Saturating: a number too large to hold is too many rounds,
            // not "not a number".)
            let n = digits.iter().fold(0u32, |n, &d| {
                n.saturating_mul(10).saturating_add(u32::from(d - b'0'))
            });
            if n > MAX_ROUNDS {
                return Err(HashError::ShaCryptRounds);
            }
            rounds = n.max(MIN_ROUNDS);
            rest = r.get(end + 1..).unwrap_or_default();
        }
        let Some(dollar) = rest.iter().position(|&b| b == b'$') else {
            return Err(HashError::Invalid(
                "SHA-crypt hashes look like $5$salt$digest",
            ));
        };
        let (salt, digest) = (&rest[..dollar], &rest[dollar + 1..]);
        let want = if wide { 86 } else { 43 };
        if digest.len() != want || !digest.iter().all(|&b| is_crypt64(b)) {
            return Err(HashError::ShaCryptDigest(want));
        }
        Ok(ShaCrypt {
            wide,
            rounds,
            salt: salt[..salt.len().min(16)].into(),
            encoded: digest.into(),
        })
    }

    pub fn verify(&self, password: &[u8]) -> bool {
        let mut out = Vec::with_capacity(86);
        if self.wide {
            let d = sha_crypt::<Sha512>(password, &self.salt, self.rounds);
            for [a, b, c] in ORDER_512 {
                crypt64_push(&mut out, d[a], d[b], d[c], 4);
            }
            crypt64_push(&mut out, 0, 0, d[63], 2);
        } else {
            let d = sha_crypt::<Sha256>(password, &self.salt, self.rounds);
            for [a, b, c] in ORDER_256 {
                crypt64_push(&mut out, d[a], d[b], d[c], 4);
            }
            crypt64_push(&mut out, 0, d[31], d[30], 3);
        }
        ct_eq(&out, &self.encoded)
    }

    pub fn scheme(&self) -> &'static str {
        if self.wide {
            "SHA-512-crypt"
        } else {
            "SHA-256-crypt"
        }
    }
}

/// `data` repeated to exactly `len` bytes.
fn repeat_to(data: &[u8], len: usize) -> Vec<u8> {
    data.iter().copied().cycle().take(len).collect()
}

/// The raw SHA-crypt digest (steps 1–21 of the specification).
fn sha_crypt<D: Digest>(password: &[u8], salt: &[u8], rounds: u32) -> Vec<u8> {
    let size = <D as Digest>::output_size();

    let b = D::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();

    let mut a = D::new().chain_update(password).chain_update(salt);
    let mut n = password.len();
    while n > size {
        a.update(&b);
        n -= size;
    }
    a.update(&b[..n]);
    let mut n = password.len();
    while n > 0 {
        if n & 1 != 0 {
            a.update(&b);
        } else {
            a.update(password);
        }
        n >>= 1;
    }
    let a = a.finalize();

    let mut dp = D::new();
    for _ in 0..password.len() {
        dp.update(password);
    }
    let p_seq = repeat_to(&dp.finalize(), password.len());

    let mut ds = D::new();
    for _ in 0..16 + usize::from(a[0]) {
        ds.update(salt);
    }
    let s_seq = repeat_to(&ds.finalize(), salt.len());

    let mut c = a.to_vec();
    for i in 0..rounds {
        let mut h = D::new();
        if i & 1 != 0 {
            h.update(&p_seq);
        } else {
            h.update(&c);
        }
        if i % 3 != 0 {
            h.update(&s_seq);
        }
        if i % 7 != 0 {
            h.update(&p_seq);
        }
        if i & 1 != 0 {
            h.update(&c);
        } else {
            h.update(&p_seq);
        }
        c.copy_from_slice(&h.finalize());
    }
    c
}
