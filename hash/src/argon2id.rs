//! Argon2id (RFC 9106) in the PHC string format that the reference `argon2`
//! tool and libraries print: `$argon2id$v=19$m=65536,t=3,p=4$SALT$HASH`,
//! salt and hash in unpadded standard base64. The PHC string is parsed
//! here (a few lines) rather than through the `password-hash` crate, which
//! would bring a random-number generator the server never uses.

use argon2::{Algorithm, Argon2, Params, Version};
use base64ct::{Base64Unpadded, Encoding};

use super::{ct_eq, HashError};

/// Most memory a verification may take: 1 GiB, in KiB.
pub(crate) const MAX_M: u32 = 1 << 20;
pub(crate) const MAX_T: u32 = 64;
pub(crate) const MAX_P: u32 = 64;

/// A parsed argon2id hash.
#[derive(Clone)]
pub struct Argon2id {
    version: Version,
    params: Params,
    salt: Box<[u8]>,
    hash: Box<[u8]>,
}

impl Argon2id {
    /// Its memory (KiB) times its passes.
    pub fn work(&self) -> u64 {
        u64::from(self.params.m_cost()) * u64::from(self.params.t_cost())
    }

    pub fn parse(s: &[u8]) -> Result<Argon2id, HashError> {
        const FORM: &str = "argon2id hashes look like $argon2id$v=19$m=65536,t=3,p=4$salt$hash";
        let text = std::str::from_utf8(s).map_err(|_| HashError::Invalid(FORM))?;
        let mut fields = text.split('$').skip(2).peekable();
        let version = match fields.peek().and_then(|f| f.strip_prefix("v=")) {
            Some("19") => Version::V0x13,
            Some("16") => Version::V0x10,
            Some(_) => return Err(HashError::Invalid("argon2id version must be v=19 or v=16")),
            None => Version::V0x10,
        };
        if fields.peek().is_some_and(|f| f.starts_with("v=")) {
            fields.next();
        }
        let (Some(params), Some(salt), Some(hash), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(HashError::Invalid(FORM));
        };
        let mut values = [0u32; 3];
        let mut names = ["m=", "t=", "p="].iter();
        for (value, part) in values.iter_mut().zip(params.split(',')) {
            let digits = names
                .next()
                .and_then(|n| part.strip_prefix(n))
                .ok_or(HashError::Invalid(FORM))?;
            if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(HashError::Invalid(FORM));
            }
            *value = digits.parse().map_err(|_| HashError::Invalid(FORM))?;
        }
        let [m, t, p] = values;
        if params.split(',').count() != 3 {
            return Err(HashError::Invalid(FORM));
        }
        if m > MAX_M || t > MAX_T || p > MAX_P {
            return Err(HashError::Argon2Costs);
        }
        let salt =
            decode(salt).ok_or(HashError::Invalid("argon2id salt is not unpadded base64"))?;
        let hash =
            decode(hash).ok_or(HashError::Invalid("argon2id hash is not unpadded base64"))?;
        if !(8..=64).contains(&salt.len()) || !(4..=64).contains(&hash.len()) {
            return Err(HashError::Invalid(
                "argon2id salt must be 8 to 64 bytes and the hash 4 to 64",
            ));
        }
        let params = Params::new(m, t, p, Some(hash.len())).map_err(HashError::Argon2Params)?;
        Ok(Argon2id {
            version,
            params,
            salt,
            hash,
        })
    }

    pub fn verify(&self, password: &[u8]) -> bool {
        let argon = Argon2::new(Algorithm::Argon2id, self.version, self.params.clone());
        let mut out = [0u8; 64];
        let out = &mut out[..self.hash.len()];
        match argon.hash_password_into(password, &self.salt, out) {
            Ok(()) => ct_eq(out, &self.hash),
            Err(_) => false,
        }
    }
}

fn decode(s: &str) -> Option<Box<[u8]>> {
    let mut buf = [0u8; 64];
    Base64Unpadded::decode(s, &mut buf).ok().map(|d| d.into())
}
