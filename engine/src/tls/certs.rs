//! One `[[tls.certificate]]`: its files read and checked, as the
//! configuration loads (at start, as root, before the privilege drop; on
//! SIGHUP, through whoever may still read them), so that every mistake is
//! reported with the file, line and key and a running server never meets
//! a broken certificate.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use super::x509;

/// Where a certificate's parts are (absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateFiles {
    /// The PEM chain: the server's certificate first, then intermediates.
    pub cert: PathBuf,
    /// The PEM private key (PKCS#8, SEC1 or PKCS#1; RSA, ECDSA P-256 and
    /// P-384, Ed25519).
    pub key: PathBuf,
    /// A DER OCSP response to staple, if any.
    pub ocsp: Option<PathBuf>,
}

/// A certificate ready to serve: its chain and key, and what SNI and the
/// summary need to know about it.
#[derive(Clone)]
pub struct Certificate {
    /// Where it came from.
    pub files: CertificateFiles,
    /// The names it is for (subjectAltName DNS names, lower-cased).
    pub names: Vec<String>,
    /// When it becomes valid, seconds since the Unix epoch.
    pub not_before: u64,
    /// When it expires, seconds since the Unix epoch.
    pub not_after: u64,
    /// The chain and the signing key, as rustls uses them.
    pub key: Arc<CertifiedKey>,
}

impl std::fmt::Debug for Certificate {
    // Never the key, not even its type's fields.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate")
            .field("files", &self.files)
            .field("names", &self.names)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// Which file of a certificate an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The PEM chain (`cert`).
    Cert,
    /// The private key (`key`).
    Key,
    /// The OCSP response (`ocsp`).
    Ocsp,
}

/// Why a certificate was refused: which file, and a message that names
/// it.
#[derive(Debug)]
pub struct CertError {
    /// The file at fault.
    pub part: Part,
    /// `PATH: what is wrong`.
    pub message: String,
}

impl std::fmt::Display for CertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CertError {}

/// Reads a file's bytes: `std::fs::read` at start; on a reload inside
/// the sandbox, the privileged helper's read.
pub type ReadFile<'a> = &'a dyn Fn(&Path) -> io::Result<Vec<u8>>;

/// Reads and checks `files`: the chain must hold a certificate, the key
/// must be one rustls can sign with and match the certificate, the OCSP
/// response must not be empty. A certificate outside its validity is
/// loaded and served (as nginx does: the other sites, and clients that
/// accept it, are served); [`Certificate::validity_warning`] says so.
pub fn load(files: &CertificateFiles, read: ReadFile<'_>) -> Result<Certificate, CertError> {
    let cert_error = |part: Part, path: &Path, what: String| CertError {
        part,
        message: format!("{}: {what}", path.display()),
    };
    let read_file = |part: Part, path: &Path| {
        read(path).map_err(|e| cert_error(part, path, format!("cannot read it: {e}")))
    };
    let fail = |path: &Path, what: String| cert_error(Part::Cert, path, what);

    let pem = read_file(Part::Cert, &files.cert)?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&files.cert, pem_error(e)))?;
    let Some(leaf) = chain.first() else {
        return Err(fail(
            &files.cert,
            "no certificate in it (expected a PEM \"-----BEGIN CERTIFICATE-----\" block)".into(),
        ));
    };
    let facts = x509::parse(leaf).map_err(|e| fail(&files.cert, e.to_string()))?;
    let fail = |path: &Path, what: String| cert_error(Part::Key, path, what);
    let pem = read_file(Part::Key, &files.key)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        pem::Error::NoItemsFound => fail(
            &files.key,
            "no private key in it (expected a PEM \"PRIVATE KEY\", \"EC PRIVATE KEY\" or \"RSA PRIVATE KEY\" block)".into(),
        ),
        e => fail(&files.key, pem_error(e)),
    })?;
    let signer = super::provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| {
            fail(
                &files.key,
                format!(
                    "unsupported private key ({e}); RSA, ECDSA P-256/P-384 and Ed25519 keys are"
                ),
            )
        })?;
    let mut certified = CertifiedKey::new(chain, signer);
    certified.keys_match().map_err(|_| {
        fail(
            &files.key,
            format!(
                "this key does not match the certificate in {}",
                files.cert.display()
            ),
        )
    })?;
    if let Some(ocsp) = &files.ocsp {
        let der = read_file(Part::Ocsp, ocsp)?;
        let fail = |path: &Path, what: String| cert_error(Part::Ocsp, path, what);
        // An OCSPResponse is a DER SEQUENCE; a PEM or empty file is a
        // mistake to say now rather than a staple clients reject.
        if der.first() != Some(&0x30) {
            return Err(fail(
                ocsp,
                "not a DER OCSP response (openssl ocsp -respout writes one)".into(),
            ));
        }
        certified.ocsp = Some(der);
    }
    Ok(Certificate {
        files: files.clone(),
        names: facts.names,
        not_before: facts.not_before,
        not_after: facts.not_after,
        key: Arc::new(certified),
    })
}

impl Certificate {
    /// A warning when the certificate is not valid at `now` (seconds since
    /// the epoch): expired, or not valid yet. Said at start, at a reload
    /// and by `--check-config`; the certificate is served all the same,
    /// so that one renewal that failed does not stop every other site.
    #[cold]
    pub fn validity_warning(&self, now: u64) -> Option<String> {
        let what = if now > self.not_after {
            format!(
                "expired on {}; renew it (clients refuse an expired certificate; brisk serves it meanwhile)",
                utc(self.not_after)
            )
        } else if now < self.not_before {
            format!(
                "is not valid before {} (is the clock right? clients refuse it until then)",
                utc(self.not_before)
            )
        } else {
            return None;
        };
        Some(format!(
            "tls: {}: the certificate {what}",
            self.files.cert.display()
        ))
    }
}

fn pem_error(e: pem::Error) -> String {
    match e {
        pem::Error::Io(e) => format!("cannot read it: {e}"),
        e => format!("not a valid PEM file ({e:?})"),
    }
}

/// A warning when the key file at `path` may be read by every user of
/// the machine (mode `o+r`): its secret is the server's identity.
pub fn key_warning(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    (mode & 0o004 != 0).then(|| {
        format!(
            "tls: the private key {} is readable by every user (mode {:o}); chmod 600 it (brisk reads it as root before dropping privileges, as nginx does)",
            path.display(),
            mode & 0o777
        )
    })
}

/// `2026-11-23 14:22:00 UTC`.
pub fn utc(secs: u64) -> String {
    let t = crate::http::date::civil_time(secs);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// Seconds since the Unix epoch, now.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
