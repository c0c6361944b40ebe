//! Challenges a fleet shares through the storage. Behind a load balancer
//! the CA's validation requests (several at once, from several vantage
//! points) reach any server of the fleet, not only the one that ordered;
//! so the server that orders writes each challenge it publishes into the
//! storage before it asks the CA to validate, and removes it when the
//! authorization is done (valid or not); every server answers a challenge
//! it does not hold in memory from there:
//!
//! ```text
//! storage/challenges/http-01/<token>        the key authorization, 0600
//! storage/challenges/tls-alpn-01/<name>     the SHA-256 of the key authorization, hex, 0600
//! ```
//!
//! A file older than [`STALE_CHALLENGE`] (its server died before removing
//! it) is ignored, and removed by the next server that starts. Tokens are
//! checked against the base64url alphabet and a length bound, names
//! against a host name's characters, before they name a file.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::{CertifiedKey, SigningKey};

use super::cert;
use super::client::{Challenge, Responder, HTTP_01, TLS_ALPN_01};
use super::key::Key;
use super::manager::Published;
use super::store::{is_storable, mkdir, write_atomic, STALE_LOCK};
use crate::http::grammar::{hex_lower as hex, unhex};

/// A challenge file older than this is a dead server's: ignored. As long
/// as a lock lives (an order takes less).
pub const STALE_CHALLENGE: Duration = STALE_LOCK;

/// The longest token answered (RFC 8555 §8.3: base64url of at least 128
/// bits; Let's Encrypt's are 43 characters).
pub const MAX_TOKEN: usize = 128;

/// The most read of a challenge file.
const MAX_FILE: u64 = 1024;

/// Whether `token` may name a file: base64url characters only (RFC 4648
/// §5, no padding), 1 to [`MAX_TOKEN`] of them.
pub fn is_token(token: &str) -> bool {
    (1..=MAX_TOKEN).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Where the challenge of `kind` for `key` (a token, or a name) is
/// stored in `storage`; None when `key` may not name a file.
pub fn path(storage: &Path, kind: &str, key: &str) -> Option<PathBuf> {
    let file = match kind {
        HTTP_01 if is_token(key) => key.to_string(),
        TLS_ALPN_01 if is_storable(key) => key.to_ascii_lowercase(),
        _ => return None,
    };
    Some(storage.join("challenges").join(kind).join(file))
}

/// Writes `c` into `storage` (its directories made 0700, the file 0600,
/// whole or not at all).
pub fn store(storage: &Path, c: &Challenge) -> std::io::Result<()> {
    let (kind, key, text) = match c {
        Challenge::Http01 {
            token,
            key_authorization,
        } => (HTTP_01, token, key_authorization.clone()),
        Challenge::TlsAlpn01 { name, digest, .. } => (TLS_ALPN_01, name, hex(digest)),
    };
    let path = path(storage, kind, key).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{key:?} may not name a file"),
        )
    })?;
    mkdir(&storage.join("challenges"))?;
    mkdir(&storage.join("challenges").join(kind))?;
    write_atomic(&path, text.as_bytes())
}

/// Removes `c` from `storage` (gone already: done).
pub fn remove(storage: &Path, c: &Challenge) {
    let found = match c {
        Challenge::Http01 { token, .. } => path(storage, HTTP_01, token),
        Challenge::TlsAlpn01 { name, .. } => path(storage, TLS_ALPN_01, name),
    };
    if let Some(p) = found {
        let _ = std::fs::remove_file(p);
    }
}

/// Removes the stale challenge files of `storage` (a dead server's).
pub fn sweep(storage: &Path, now: SystemTime) {
    for kind in [HTTP_01, TLS_ALPN_01] {
        let Ok(dir) = std::fs::read_dir(storage.join("challenges").join(kind)) else {
            continue;
        };
        for entry in dir.flatten() {
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| is_stale(t, now));
            if stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

fn is_stale(modified: SystemTime, now: SystemTime) -> bool {
    // (A file from the future: another machine's clock; fresh.)
    now.duration_since(modified)
        .is_ok_and(|age| age > STALE_CHALLENGE)
}

/// The text of the file at `path` if it is fresh at `now` and small.
fn read_fresh(path: &Path, now: SystemTime) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let modified = f.metadata().and_then(|m| m.modified()).ok()?;
    if is_stale(modified, now) {
        return None;
    }
    let mut text = String::new();
    f.take(MAX_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The key authorization stored in `storage` for the http-01 `token`,
/// if fresh at `now`.
pub fn http01(storage: &Path, token: &str, now: SystemTime) -> Option<String> {
    let text = read_fresh(&path(storage, HTTP_01, token)?, now)?;
    // `token.thumbprint` (RFC 8555 §8.1), nothing else.
    let thumbprint = text.strip_prefix(token)?.strip_prefix('.')?;
    is_token(thumbprint).then_some(text)
}

/// The acmeIdentifier stored in `storage` for a tls-alpn-01 validation
/// of `name`, if fresh at `now`.
pub fn alpn_digest(storage: &Path, name: &str, now: SystemTime) -> Option<[u8; 32]> {
    let text = read_fresh(&path(storage, TLS_ALPN_01, name)?, now)?;
    unhex(text.trim())
}

/// The storage this process answers from, while its ACME thread runs.
static STORAGE: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Answers challenges found in `storage` from now on (None: no more).
pub fn answer_from(storage: Option<PathBuf>) {
    *STORAGE.write().unwrap_or_else(|e| e.into_inner()) = storage;
}

fn storage() -> Option<PathBuf> {
    STORAGE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// [`http01`] in the storage this process answers from.
pub fn stored_http01(token: &str) -> Option<String> {
    http01(&storage()?, token, SystemTime::now())
}

/// The answers made from the storage lately: (name, digest, certificate).
/// (The CA validates from several places at once.)
static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());
type Made = (String, [u8; 32], Arc<CertifiedKey>);
const MADE_KEPT: usize = 8;

/// The tls-alpn-01 answer for `name` from the storage this process
/// answers from: a certificate with the stored acmeIdentifier, made with
/// this process's key for them.
pub fn stored_alpn(name: &str) -> Option<Arc<CertifiedKey>> {
    let digest = alpn_digest(&storage()?, name, SystemTime::now())?;
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, k)) = made.iter().find(|(n, d, _)| n == name && *d == digest) {
        return Some(Arc::clone(k));
    }
    let key = alpn_certificate(name, digest)?;
    if made.len() >= MADE_KEPT {
        made.remove(0);
    }
    made.push((name.to_string(), digest, Arc::clone(&key)));
    Some(key)
}

/// This process's key for the tls-alpn-01 answers it makes (any key will
/// do: the CA checks only the name and the acmeIdentifier), and rustls's
/// signer of it.
fn alpn_key() -> Option<&'static (Key, Arc<dyn SigningKey>)> {
    static KEY: OnceLock<Option<(Key, Arc<dyn SigningKey>)>> = OnceLock::new();
    KEY.get_or_init(|| {
        let key = Key::generate().ok()?;
        let signer = crate::tls::provider()
            .key_provider
            .load_private_key(PrivateKeyDer::Pkcs8(key.pkcs8().to_vec().into()))
            .ok()?;
        Some((key, signer))
    })
    .as_ref()
}

fn alpn_certificate(name: &str, digest: [u8; 32]) -> Option<Arc<CertifiedKey>> {
    let (key, signer) = alpn_key()?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let der = cert::alpn_certificate(name, digest, key, now).ok()?;
    let chain = vec![CertificateDer::from(der)];
    Some(Arc::new(CertifiedKey::new(chain, Arc::clone(signer))))
}

/// Publishes challenges as [`Published`] does, and in the storage for
/// the rest of the fleet.
#[derive(Debug)]
pub struct Fleet {
    /// This process's answers.
    pub published: Published,
    /// The storage the fleet shares.
    pub storage: PathBuf,
    /// Challenges that could not be stored (see
    /// [`Responder::take_warnings`]).
    pub unstored: Mutex<Vec<String>>,
}

impl Responder for Fleet {
    fn publish(&self, c: &Challenge) {
        // (Failing, the other servers cannot answer: the validation
        // fails if it reaches them; said in the log after the order.)
        if let Err(e) = store(&self.storage, c) {
            let why = format!(
                "cannot store a challenge in {} for the other servers of the fleet ({e}): a validation that reaches one of them fails",
                self.storage.join("challenges").display()
            );
            self.unstored
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(why);
        }
        self.published.publish(c);
    }

    fn withdraw(&self, c: &Challenge) {
        self.published.withdraw(c);
        remove(&self.storage, c);
    }

    fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.unstored.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// The responder of a server ordering into `storage`.
    fn fleet_on(storage: &Path) -> Fleet {
        Fleet {
            published: Published {
                live: Arc::new(crate::tls::sni::Live::default()),
            },
            storage: storage.to_path_buf(),
            unstored: Default::default(),
        }
    }

    fn tmp(tag: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!(
            "brisk-fleet-{tag}-{}-{:?}",
            std::process::id(),
            SystemTime::now()
        ));
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    #[test]
    fn tokens_and_names_are_checked_before_they_name_a_file() {
        let s = Path::new("/s");
        let tok = "a".repeat(MAX_TOKEN);
        assert!(path(s, HTTP_01, &tok).is_some());
        assert!(path(s, HTTP_01, &(tok + "a")).is_none());
        for bad in ["", "..", "../x", "a/b", "a.b", "a%2Fb", "a b", "a=", "é"] {
            assert!(path(s, HTTP_01, bad).is_none(), "{bad:?}");
        }
        assert_eq!(
            path(s, HTTP_01, "Ab-_9").unwrap(),
            Path::new("/s/challenges/http-01/Ab-_9")
        );
        for bad in ["", "..", "a/b", "a..b", ".a"] {
            assert!(path(s, TLS_ALPN_01, bad).is_none(), "{bad:?}");
        }
        assert_eq!(
            path(s, TLS_ALPN_01, "A.test").unwrap(),
            Path::new("/s/challenges/tls-alpn-01/a.test")
        );
        assert!(path(s, "dns-01", "a.test").is_none());
    }

    #[test]
    fn challenges_go_into_the_storage_0600_and_out_again_and_stale_ones_are_not_answered() {
        let dir = tmp("store");
        let now = SystemTime::now();
        let http = Challenge::Http01 {
            token: "tok_1-x".into(),
            key_authorization: "tok_1-x.thumb-print_".into(),
        };
        let digest = cert::acme_identifier("tok.thumb");
        let alpn = Challenge::TlsAlpn01 {
            name: "a.test".into(),
            certificate: vec![],
            key: vec![],
            digest,
        };
        assert_eq!(http01(&dir, "tok_1-x", now), None);
        store(&dir, &http).unwrap();
        store(&dir, &alpn).unwrap();
        assert_eq!(
            http01(&dir, "tok_1-x", now).as_deref(),
            Some("tok_1-x.thumb-print_")
        );
        assert_eq!(alpn_digest(&dir, "A.test", now), Some(digest));
        assert_eq!(alpn_digest(&dir, "b.test", now), None);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let ch = dir.join("challenges");
        assert_eq!(mode(&ch), 0o700);
        assert_eq!(mode(&ch.join("http-01")), 0o700);
        assert_eq!(mode(&ch.join("http-01/tok_1-x")), 0o600);
        assert_eq!(mode(&ch.join("tls-alpn-01/a.test")), 0o600);
        // Ten minutes on: a dead server's, not answered, swept.
        let later = now + STALE_CHALLENGE + Duration::from_secs(1);
        assert_eq!(http01(&dir, "tok_1-x", later), None);
        assert_eq!(alpn_digest(&dir, "a.test", later), None);
        sweep(&dir, now);
        assert!(ch.join("http-01/tok_1-x").exists());
        sweep(&dir, later);
        assert!(!ch.join("http-01/tok_1-x").exists());
        assert!(!ch.join("tls-alpn-01/a.test").exists());
        // Removed when withdrawn.
        store(&dir, &http).unwrap();
        store(&dir, &alpn).unwrap();
        remove(&dir, &http);
        remove(&dir, &alpn);
        assert_eq!(std::fs::read_dir(ch.join("http-01")).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_dir(ch.join("tls-alpn-01")).unwrap().count(),
            0
        );
        // Only `token.thumbprint` is answered.
        std::fs::write(ch.join("http-01/tok"), "other.thumb").unwrap();
        assert_eq!(http01(&dir, "tok", now), None);
        std::fs::write(ch.join("http-01/tok"), "tok.thumb\n<html>").unwrap();
        assert_eq!(http01(&dir, "tok", now), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_orderer_stores_what_it_publishes_until_withdrawn_and_the_others_answer_it() {
        let dir = tmp("responder");
        let orderer = fleet_on(&dir);
        let c = Challenge::Http01 {
            token: "fleet-tok".into(),
            key_authorization: "fleet-tok.print".into(),
        };
        let now = SystemTime::now();
        orderer.publish(&c);
        assert_eq!(
            http01(&dir, "fleet-tok", now).as_deref(),
            Some("fleet-tok.print")
        );
        // Another server of the fleet (this process, once it answers from
        // the storage, the orderer's memory aside) answers it.
        orderer.published.withdraw(&c);
        assert_eq!(super::super::manager::http01_answer("fleet-tok"), None);
        answer_from(Some(dir.clone()));
        assert_eq!(
            super::super::manager::http01_answer("fleet-tok").as_deref(),
            Some("fleet-tok.print")
        );
        assert_eq!(super::super::manager::http01_answer("../fleet-tok"), None);
        answer_from(None);
        assert_eq!(super::super::manager::http01_answer("fleet-tok"), None);
        orderer.withdraw(&c);
        assert_eq!(http01(&dir, "fleet-tok", now), None);
        assert!(orderer.take_warnings().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_challenge_that_cannot_be_stored_is_still_served_and_said_once() {
        let file = tmp("unstorable").join("storage");
        std::fs::write(&file, b"a file where the storage should be").unwrap();
        let orderer = fleet_on(&file);
        let c = Challenge::Http01 {
            token: "tok".into(),
            key_authorization: "tok.print".into(),
        };
        orderer.publish(&c);
        assert_eq!(
            super::super::manager::http01_answer("tok").as_deref(),
            Some("tok.print"),
            "this server answers it"
        );
        let said = orderer.take_warnings();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("cannot store a challenge in"),
            "{}",
            said[0]
        );
        assert!(orderer.take_warnings().is_empty());
        std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    }

    #[test]
    fn the_answer_made_from_the_storage_is_for_the_name_with_the_digest() {
        let digest = cert::acme_identifier("tok.thumb");
        let k = alpn_certificate("b.test", digest).unwrap();
        let der = k.cert[0].as_ref();
        assert_eq!(crate::tls::x509::parse(der).unwrap().names, ["b.test"]);
        let mut ext = vec![0x04, 0x20];
        ext.extend_from_slice(&digest);
        assert!(der.windows(ext.len()).any(|w| w == ext));
        // (rustls's `keys_match` parses with webpki, which refuses the
        // critical acmeIdentifier: the key is compared by hand.)
        let spki = k.key.public_key().unwrap();
        assert!(der.windows(spki.len()).any(|w| w == spki.as_ref()));
        assert_eq!(unhex(&hex(&digest)), Some(digest));
        assert_eq!(unhex::<32>("zz"), None);
    }
}
