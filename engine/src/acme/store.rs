//! What ACME keeps on disk, in the `storage` directory, shared by every
//! brisk of a fleet that names the same one (a shared filesystem):
//!
//! ```text
//! storage/                          0700
//!   <ca>/                           one per CA directory URL
//!     account.key                   the account's key, PKCS#8 PEM, 0600
//!     account.url                   its URL at the CA (`kid`)
//!     certs/<name>/chain.pem        a certificate and its chain, 0600
//!     certs/<name>/key.pem          its key, PKCS#8 PEM, 0600
//!   locks/<name>.lock               who orders <name> now, and since when
//!   local/ca.pem, ca.key            the local CA (localhost, addresses), its key 0600
//!   local/chain.pem, key.pem        its certificate for them
//!   challenges/http-01/<token>      a challenge being validated, for the fleet
//!   challenges/tls-alpn-01/<name>   (see `super::fleet`)
//! ```
//!
//! `<ca>` is the directory URL's host, port and path made a file name
//! (`acme-v02.api.letsencrypt.org-443-directory`); `<name>` the first
//! name of a certificate (checked to be a host name: no `/`, no `..`).
//! Files are written whole or not at all (a temporary file, fsync,
//! rename), created 0600 in directories created 0700, whatever the umask.
//!
//! A lock is a file made with `O_EXCL`: whoever makes it orders, the
//! others wait and then read what it stored. One older than
//! [`STALE_LOCK`] (its holder died) is broken: renamed away first, so
//! that of two servers breaking it at once only one succeeds.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::sys::fs::Lock;

/// A lock older than this is taken to be a dead holder's: longer than an
/// order may take ([`super::client::ORDER_DEADLINE`]) with room to spare.
pub const STALE_LOCK: Duration = Duration::from_secs(600);

/// The storage directory, for one CA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    root: PathBuf,
    ca: String,
}

/// A certificate as stored: its chain and its key, both PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The chain, leaf first.
    pub chain_pem: String,
    /// Its key, PKCS#8 PEM.
    pub key_pem: String,
}

/// Whether `name` may name a file: a host name's characters only, no
/// empty label (so no `..`), not too long.
pub fn is_storable(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b':')
        && !name.split('.').any(str::is_empty)
}

/// `url` made a file name: its host, port and path, with anything but
/// letters, digits, `.` and `-` as `-`.
pub fn ca_dir_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let mut out: String = rest
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

impl Store {
    /// The storage at `root` for the CA whose directory is `directory`;
    /// its directories made (0700) when missing.
    pub fn open(root: &Path, directory: &str) -> io::Result<Store> {
        let store = Store {
            root: root.to_path_buf(),
            ca: ca_dir_name(directory),
        };
        for dir in [store.root.clone(), store.ca_dir(), store.root.join("locks")] {
            mkdir(&dir)?;
        }
        Ok(store)
    }

    fn ca_dir(&self) -> PathBuf {
        self.root.join(&self.ca)
    }

    /// The directory of `name`'s certificate and key.
    pub fn cert_dir(&self, name: &str) -> io::Result<PathBuf> {
        if !is_storable(name) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a host name"),
            ));
        }
        Ok(self.ca_dir().join("certs").join(name))
    }

    /// The account's key (PKCS#8 DER) and URL, when stored.
    pub fn account(&self) -> io::Result<Option<(Vec<u8>, Option<String>)>> {
        let key = match fs::read_to_string(self.ca_dir().join("account.key")) {
            Ok(pem) => pem,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let der = pem_der(&key, "PRIVATE KEY").ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "account.key holds no PRIVATE KEY",
            )
        })?;
        let url = fs::read_to_string(self.ca_dir().join("account.url"))
            .ok()
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty());
        Ok(Some((der, url)))
    }

    /// Stores the account's key (PKCS#8 DER) and, once known, its URL.
    pub fn save_account(&self, pkcs8: &[u8], url: Option<&str>) -> io::Result<()> {
        let pem = super::cert::pem("PRIVATE KEY", pkcs8);
        write_atomic(&self.ca_dir().join("account.key"), pem.as_bytes())?;
        if let Some(url) = url {
            write_atomic(
                &self.ca_dir().join("account.url"),
                format!("{url}\n").as_bytes(),
            )?;
        }
        Ok(())
    }

    /// The certificate stored for `name`, if any.
    pub fn certificate(&self, name: &str) -> io::Result<Option<Stored>> {
        let dir = self.cert_dir(name)?;
        let read = |f: &str| match fs::read_to_string(dir.join(f)) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", dir.join(f).display()),
            )),
        };
        Ok(match (read("chain.pem")?, read("key.pem")?) {
            (Some(chain_pem), Some(key_pem)) => Some(Stored { chain_pem, key_pem }),
            _ => None,
        })
    }

    /// Stores the certificate of `name`: the key first, then the chain
    /// (a reader that finds the new chain finds its key).
    pub fn save_certificate(&self, name: &str, cert: &Stored) -> io::Result<()> {
        let dir = self.cert_dir(name)?;
        mkdir(&self.ca_dir().join("certs"))?;
        mkdir(&dir)?;
        write_atomic(&dir.join("key.pem"), cert.key_pem.as_bytes())?;
        write_atomic(&dir.join("chain.pem"), cert.chain_pem.as_bytes())
    }

    /// Takes the lock of `name` for `holder` (a line naming this server:
    /// host, pid): `Ok(Some)` when this server now holds it, `Ok(None)`
    /// when another does (and is not stale: `sys::fs::lock`).
    pub fn lock(&self, name: &str, holder: &str) -> io::Result<Option<Lock>> {
        if !is_storable(name) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a host name"),
            ));
        }
        let path = self.root.join("locks").join(format!("{name}.lock"));
        // (Named in the error: "Permission denied" alone says not where.)
        crate::sys::fs::lock(&path, holder, STALE_LOCK)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }
}

impl Store {
    /// Who holds the lock of `name` (the line its holder wrote), if
    /// anyone.
    pub fn lock_holder(&self, name: &str) -> Option<String> {
        let path = self.root.join("locks").join(format!("{name}.lock"));
        // (Empty for the moment between its making and its writing.)
        fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }
}

impl Store {
    /// The local CA's directory (made 0700 when missing).
    pub fn local_dir(&self) -> io::Result<PathBuf> {
        let dir = self.root.join("local");
        mkdir(&dir)?;
        Ok(dir)
    }

    /// The local CA's key (PKCS#8 DER) and certificate (DER), if made.
    pub fn local_ca(&self) -> io::Result<Option<(Vec<u8>, Vec<u8>)>> {
        let dir = self.local_dir()?;
        let read = |f: &str| match fs::read_to_string(dir.join(f)) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        };
        let (Some(key), Some(cert)) = (read("ca.key")?, read("ca.pem")?) else {
            return Ok(None);
        };
        let bad = |what: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("local/{what} holds no PEM block"),
            )
        };
        Ok(Some((
            pem_der(&key, "PRIVATE KEY").ok_or_else(|| bad("ca.key"))?,
            pem_der(&cert, "CERTIFICATE").ok_or_else(|| bad("ca.pem"))?,
        )))
    }

    /// Stores the local CA (its key first).
    pub fn save_local_ca(&self, pkcs8: &[u8], cert: &[u8]) -> io::Result<()> {
        let dir = self.local_dir()?;
        write_atomic(
            &dir.join("ca.key"),
            super::cert::pem("PRIVATE KEY", pkcs8).as_bytes(),
        )?;
        write_atomic(
            &dir.join("ca.pem"),
            super::cert::pem("CERTIFICATE", cert).as_bytes(),
        )
    }

    /// The local CA's certificate for its names, if made.
    pub fn local_certificate(&self) -> io::Result<Option<Stored>> {
        let dir = self.local_dir()?;
        let read = |f: &str| fs::read_to_string(dir.join(f)).ok();
        Ok(match (read("chain.pem"), read("key.pem")) {
            (Some(chain_pem), Some(key_pem)) => Some(Stored { chain_pem, key_pem }),
            _ => None,
        })
    }

    /// Stores the local CA's certificate for its names.
    pub fn save_local_certificate(&self, cert: &Stored) -> io::Result<()> {
        let dir = self.local_dir()?;
        write_atomic(&dir.join("key.pem"), cert.key_pem.as_bytes())?;
        write_atomic(&dir.join("chain.pem"), cert.chain_pem.as_bytes())
    }
}

/// Makes `dir` (0700) if missing.
pub fn mkdir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot make {}: {e}", dir.display()),
        )),
    }
}

/// Writes `path` whole or not at all, 0600 (see `sys::fs::write_whole`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    crate::sys::fs::write_whole(path, bytes, 0o600)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

/// The DER of the first PEM block labelled `label` in `pem`.
pub fn pem_der(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    let b64: String = pem[start..stop].split_whitespace().collect();
    let mut out = vec![0u8; b64.len()];
    use base64ct::Encoding as _;
    let n = base64ct::Base64::decode(&b64, &mut out).ok()?.len();
    out.truncate(n);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;
    use std::time::SystemTime;

    fn tmp(tag: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!(
            "brisk-acme-store-{}-{tag}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&p);
        p
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_certificate_that_cannot_be_read_is_named_by_its_path() {
        let root = tmp("unreadable");
        let store = Store::open(&root, "https://ca.test/dir").unwrap();
        let chain = store.cert_dir("a.test").unwrap().join("chain.pem");
        // (As root nothing is denied: a directory cannot be read either.)
        fs::create_dir_all(&chain).unwrap();
        fs::write(chain.with_file_name("key.pem"), "k").unwrap();
        let e = store.certificate("a.test").unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", chain.display())), "{e}");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn ca_names_and_storable_names() {
        assert_eq!(
            ca_dir_name("https://acme-v02.api.letsencrypt.org/directory"),
            "acme-v02.api.letsencrypt.org-directory"
        );
        assert_eq!(
            ca_dir_name("https://127.0.0.1:14000/dir"),
            "127.0.0.1-14000-dir"
        );
        for ok in ["a.test", "www.example.org", "localhost", "::1", "127.0.0.1"] {
            assert!(is_storable(ok), "{ok}");
        }
        for bad in [
            "",
            "..",
            "a/b",
            "../etc",
            "a..b",
            ".a",
            "a.",
            "*.example.org",
            "a b",
        ] {
            assert!(!is_storable(bad), "{bad}");
        }
    }

    #[test]
    fn accounts_and_certificates_go_back_and_forth_0600_in_0700() {
        let root = tmp("files");
        // Whatever the umask: modes are set at creation.
        let store = Store::open(&root, "https://127.0.0.1:14000/dir").unwrap();
        assert_eq!(store.account().unwrap(), None);
        store.save_account(b"\x30\x03key", None).unwrap();
        assert_eq!(
            store.account().unwrap(),
            Some((b"\x30\x03key".to_vec(), None))
        );
        store
            .save_account(b"\x30\x03key", Some("https://ca/acct/1"))
            .unwrap();
        assert_eq!(
            store.account().unwrap().unwrap().1.as_deref(),
            Some("https://ca/acct/1")
        );
        assert_eq!(store.certificate("a.test").unwrap(), None);
        let cert = Stored {
            chain_pem: "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n".into(),
            key_pem: "k".into(),
        };
        store.save_certificate("a.test", &cert).unwrap();
        assert_eq!(store.certificate("a.test").unwrap(), Some(cert));
        assert!(store.certificate("../a.test").is_err());
        let ca = root.join("127.0.0.1-14000-dir");
        for dir in [&root, &ca, &ca.join("certs/a.test"), &root.join("locks")] {
            assert_eq!(mode(dir), 0o700, "{}", dir.display());
        }
        for file in [
            "account.key",
            "account.url",
            "certs/a.test/chain.pem",
            "certs/a.test/key.pem",
        ] {
            assert_eq!(mode(&ca.join(file)), 0o600, "{file}");
        }
        // No temporary file is left.
        let left: Vec<_> = fs::read_dir(ca.join("certs/a.test")).unwrap().collect();
        assert_eq!(left.len(), 2);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_lock_is_one_holders_until_dropped_or_stale() {
        let root = tmp("locks");
        let store = Store::open(&root, "https://ca.test/dir").unwrap();
        let held = store
            .lock("a.test", "one 1")
            .unwrap()
            .expect("the first takes it");
        assert!(store.lock("a.test", "two 2").unwrap().is_none());
        let path = root.join("locks/a.test.lock");
        assert_eq!(fs::read_to_string(&path).unwrap(), "one 1\n");
        assert_eq!(mode(&path), 0o600);
        // Another name is another lock.
        let other = store.lock("b.test", "two 2").unwrap();
        assert!(other.is_some());
        drop(held);
        let again = store.lock("a.test", "two 2").unwrap();
        assert!(again.is_some());
        // A holder that died long ago: its lock is broken.
        std::mem::forget(again);
        let old = SystemTime::now() - STALE_LOCK - Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let taken = store.lock("a.test", "three 3").unwrap();
        assert!(taken.is_some());
        assert_eq!(fs::read_to_string(&path).unwrap(), "three 3\n");
        assert!(store.lock("../x", "h").is_err());
        drop(taken);
        let names: Vec<_> = fs::read_dir(root.join("locks"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["b.test.lock"], "nothing set aside is left");
        drop(other);
        // One that cannot be taken says where (a file in the way of the
        // locks' directory).
        fs::remove_dir_all(root.join("locks")).unwrap();
        fs::write(root.join("locks"), b"in the way").unwrap();
        let e = store.lock("a.test", "four 4").expect_err("refused");
        assert!(
            e.to_string().starts_with(&format!("{}: ", path.display())),
            "{e}"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn pem_blocks_read_back() {
        let pem = super::super::cert::pem("PRIVATE KEY", &[1, 2, 3, 250]);
        assert_eq!(pem_der(&pem, "PRIVATE KEY"), Some(vec![1, 2, 3, 250]));
        assert_eq!(pem_der(&pem, "CERTIFICATE"), None);
    }
}
