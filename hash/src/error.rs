//! Why a password hash in an htpasswd file cannot be used.

/// Why a password hash cannot be used: the text after `user:` in an
/// htpasswd line, read as a message by whoever maintains the file.
#[derive(Debug)]
pub enum HashError {
    /// Malformed or refused, as the text says (what the scheme looks like,
    /// or why it is not supported).
    Invalid(&'static str),
    /// A `$…` or `{…}` scheme brisk does not know; its name.
    UnknownScheme(String),
    /// A bcrypt cost outside 04 to [`super::bcrypt::MAX_COST`].
    BcryptCost,
    /// SHA-crypt `rounds=` above [`super::sha_crypt::MAX_ROUNDS`].
    ShaCryptRounds,
    /// A SHA-crypt digest of the wrong length or alphabet; the length
    /// wanted.
    ShaCryptDigest(usize),
    /// argon2id costs above the limits of [`super::argon2id`].
    Argon2Costs,
    /// argon2id parameters the argon2 crate refuses.
    Argon2Params(argon2::Error),
}

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use super::{argon2id, bcrypt, sha_crypt};
        match self {
            HashError::Invalid(why) => f.write_str(why),
            HashError::UnknownScheme(name) => write!(
                f,
                "unknown password hash scheme {name}; supported: $2y$/$2b$/$2a$ (bcrypt), $5$, $6$ (SHA-crypt), $apr1$, {{SHA}}, $argon2id$"
            ),
            HashError::BcryptCost => {
                write!(f, "bcrypt cost must be from 04 to {}", bcrypt::MAX_COST)
            }
            HashError::ShaCryptRounds => write!(
                f,
                "SHA-crypt rounds must be at most {}",
                sha_crypt::MAX_ROUNDS
            ),
            HashError::ShaCryptDigest(want) => write!(
                f,
                "SHA-crypt digest must be {want} characters of ./0-9A-Za-z"
            ),
            HashError::Argon2Costs => write!(
                f,
                "argon2id costs must be at most m={} (1 GiB), t={}, p={}",
                argon2id::MAX_M,
                argon2id::MAX_T,
                argon2id::MAX_P
            ),
            HashError::Argon2Params(e) => write!(f, "argon2id parameters: {e}"),
        }
    }
}

impl std::error::Error for HashError {}
