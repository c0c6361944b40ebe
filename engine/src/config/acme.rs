//! `[acme]`: certificates obtained and renewed from an ACME CA (RFC 8555)
//! by brisk itself (the cargo feature `acme`; see `crate::acme`).
//!
//! The section is read with the rest of the file; what depends on the
//! other sections (the names to order: `hosts`, or every site's that no
//! `[[tls.certificate]]` covers) is settled once they are read
//! ([`finish`]). The CA's directory host is resolved when the file loads,
//! as upstream names are, and kept: inside the sandbox the ACME thread
//! cannot reach the system's resolver, so every URL the CA gives must be
//! on that host (Let's Encrypt's all are).

use std::net::SocketAddr;
use std::path::PathBuf;

#[cfg(feature = "acme")]
use super::load::{sorted, Loader};
#[cfg(feature = "acme")]
use super::ConfigError;
#[cfg(feature = "acme")]
use crate::acme::client::Eab;
#[cfg(feature = "acme")]
use crate::acme::key::KeyType;
#[cfg(feature = "acme")]
use toml::{de::DeValue, Spanned};

pub(super) const ACME_KEYS: &[&str] = &[
    "email",
    "directory",
    "ca_roots",
    "storage",
    "hosts",
    "challenges",
    "redirect_http",
    "key_type",
    "eab_kid",
    "eab_hmac_key",
    "eab_hmac_key_file",
];

/// Let's Encrypt's production directory: the default CA.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// The challenge kinds, by their protocol names, in brisk's order of
/// preference.
#[cfg(feature = "acme")]
pub const CHALLENGES: &[&str] = &["tls-alpn-01", "http-01"];

/// `[acme]`, settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcmeConfig {
    /// Where `[acme]` is (`brisk.toml:12: acme`), for messages.
    pub origin: String,
    /// The account's contact.
    pub email: Option<String>,
    /// The CA's directory URL.
    pub directory: String,
    /// Its host and port, and the host's address when the file loaded
    /// (none when it could not be resolved then: a first start without
    /// network; the ACME thread asks the resolver, which only works
    /// without the sandbox, and a reload resolves it again).
    pub directory_addr: (String, u16, Option<SocketAddr>),
    /// Extra roots for the directory's own HTTPS (PEM files), beside the
    /// system's.
    pub ca_roots: Vec<PathBuf>,
    /// Where `ca_roots` is (`brisk.toml:14: acme.ca_roots`), for messages.
    pub ca_roots_origin: String,
    /// The storage directory (account, certificates, locks).
    pub storage: PathBuf,
    /// The names ordered, one certificate each.
    pub hosts: Vec<String>,
    /// `localhost` and addresses, which no public CA certifies: one
    /// certificate for them all from a local CA brisk makes in the
    /// storage (as Caddy's `tls internal`).
    pub local: Vec<String>,
    /// The challenge kinds allowed, brisk's preference first.
    pub challenges: Vec<&'static str>,
    /// Plain HTTP is redirected to HTTPS (but for http-01 challenges).
    pub redirect_http: bool,
    /// The certificates' keys (the account's is P-256 whatever this is).
    #[cfg(feature = "acme")]
    pub key_type: KeyType,
    /// The external account binding of a new account (`eab_kid` and
    /// `eab_hmac_key` or `eab_hmac_key_file`), for a CA that requires one.
    #[cfg(feature = "acme")]
    pub eab: Option<Eab>,
    /// `eab_hmac_key_file`, read when the file loads (a reload reads it
    /// again).
    pub eab_hmac_key_file: Option<PathBuf>,
    /// Why each site name no certificate covers is not ordered either (a
    /// wildcard, a name of one label): warnings, as that site then has
    /// no HTTPS (`--check-config` and the start say so).
    pub unordered: Vec<String>,
}

/// `[acme]` as written, before the other sections are known.
#[derive(Debug)]
#[cfg_attr(not(feature = "acme"), allow(dead_code))]
pub(crate) struct AcmeSection {
    origin: String,
    email: Option<String>,
    directory: (String, String),
    ca_roots: Vec<PathBuf>,
    ca_roots_origin: String,
    storage: Option<PathBuf>,
    hosts: Option<(Vec<String>, String)>,
    challenges: Vec<&'static str>,
    redirect_http: bool,
    #[cfg(feature = "acme")]
    key_type: KeyType,
    /// `eab_kid`, and where.
    eab_kid: Option<(String, String)>,
    /// The decoded MAC key, where it was given (`eab_hmac_key` or
    /// `eab_hmac_key_file`), and the file.
    eab_hmac_key: Option<(Vec<u8>, String, Option<PathBuf>)>,
}

impl AcmeSection {
    /// Where it is, for messages.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }
}

#[cfg(feature = "acme")]
impl Loader<'_> {
    pub(super) fn acme(&self, v: &Spanned<DeValue<'_>>) -> Result<AcmeSection, ConfigError> {
        let mut s = AcmeSection {
            origin: self.origin("acme", v),
            email: None,
            directory: (LETS_ENCRYPT.to_string(), self.origin("acme", v)),
            ca_roots: Vec::new(),
            ca_roots_origin: self.origin("acme.ca_roots", v),
            storage: None,
            hosts: None,
            challenges: CHALLENGES.to_vec(),
            redirect_http: true,
            key_type: KeyType::default(),
            eab_kid: None,
            eab_hmac_key: None,
        };
        for (key, value) in sorted(self.table("acme", v)?) {
            match key.get_ref().as_ref() {
                "email" => {
                    let e = self.string("acme.email", value)?;
                    // (The address alone: brisk makes the `mailto:`
                    // URL the CA is sent, RFC 8555 §7.3.)
                    let ok = !e.starts_with("mailto:")
                        && e.split_once('@').is_some_and(|(u, d)| {
                            !u.is_empty() && d.contains('.') && !e.contains([' ', ',', '<', '>'])
                        });
                    if !ok {
                        return Err(self.fail(
                            value,
                            "acme.email",
                            "expected an address such as \"ops@example.org\" (without \"mailto:\")",
                        ));
                    }
                    s.email = Some(e.to_string());
                }
                "directory" => {
                    let d = self.string("acme.directory", value)?;
                    if crate::acme::http::Url::parse(d).map_or(true, |u| !u.tls) {
                        return Err(self.fail(
                            value,
                            "acme.directory",
                            "expected an https:// URL (the CA's directory)",
                        ));
                    }
                    s.directory = (d.to_string(), self.origin("acme.directory", value));
                }
                "ca_roots" => {
                    s.ca_roots = self
                        .strings("acme.ca_roots", value)?
                        .into_iter()
                        .map(|(_, item)| self.path("acme.ca_roots", item))
                        .collect::<Result<_, _>>()?;
                    s.ca_roots_origin = self.origin("acme.ca_roots", value);
                }
                "storage" => s.storage = Some(self.path("acme.storage", value)?),
                "hosts" => {
                    let mut hosts = Vec::new();
                    for (h, item) in self.strings("acme.hosts", value)? {
                        // (A fully qualified name's last dot is no part
                        // of the name certified, RFC 1034 §3.1.)
                        let h = h.strip_suffix('.').unwrap_or(h).to_ascii_lowercase();
                        if let Err(why) =
                            orderable(&h).or_else(|e| is_local(&h).then_some(()).ok_or(e))
                        {
                            return Err(self.fail(item, "acme.hosts", &why));
                        }
                        if !hosts.contains(&h) {
                            hosts.push(h);
                        }
                    }
                    s.hosts = Some((hosts, self.origin("acme.hosts", value)));
                }
                "challenges" => {
                    let mut kinds = Vec::new();
                    for (c, item) in self.strings("acme.challenges", value)? {
                        let Some(k) = CHALLENGES.iter().find(|k| **k == c) else {
                            return Err(self.fail(
                                item,
                                "acme.challenges",
                                "expected \"tls-alpn-01\" or \"http-01\"",
                            ));
                        };
                        if !kinds.contains(k) {
                            kinds.push(*k);
                        }
                    }
                    if kinds.is_empty() {
                        return Err(self.fail(
                            value,
                            "acme.challenges",
                            "expected at least one of \"tls-alpn-01\" and \"http-01\"",
                        ));
                    }
                    // (Tried in brisk's order whatever the file's.)
                    s.challenges = CHALLENGES
                        .iter()
                        .copied()
                        .filter(|k| kinds.contains(k))
                        .collect();
                }
                "redirect_http" => s.redirect_http = self.boolean("acme.redirect_http", value)?,
                "key_type" => {
                    s.key_type = match self.string("acme.key_type", value)? {
                        "ecdsa-p256" => KeyType::EcdsaP256,
                        "rsa2048" => KeyType::Rsa2048,
                        _ => {
                            return Err(self.fail(
                                value,
                                "acme.key_type",
                                "expected \"ecdsa-p256\" or \"rsa2048\"",
                            ))
                        }
                    }
                }
                "eab_kid" => {
                    let kid = self.string("acme.eab_kid", value)?;
                    if kid.is_empty() || kid.chars().any(char::is_control) {
                        return Err(self.expected(
                            value,
                            "acme.eab_kid",
                            "the key ID the CA gives (its EAB KID)",
                        ));
                    }
                    s.eab_kid = Some((kid.to_string(), self.origin("acme.eab_kid", value)));
                }
                "eab_hmac_key" | "eab_hmac_key_file" => {
                    let name = key.get_ref().as_ref();
                    let full = format!("acme.{name}");
                    if s.eab_hmac_key.is_some() {
                        return Err(self.fail(
                            key,
                            &full,
                            "give eab_hmac_key or eab_hmac_key_file, not both",
                        ));
                    }
                    let (text, file) = if name == "eab_hmac_key" {
                        (self.string(&full, value)?.to_string(), None)
                    } else {
                        let path = self.path(&full, value)?;
                        if let Some(readable) = self.src.readable {
                            readable(&path).map_err(|e| self.fail(value, &full, &e.to_string()))?;
                        }
                        let text = std::fs::read_to_string(&path).map_err(|e| {
                            self.fail(
                                value,
                                &full,
                                &format!("cannot read {}: {e}", path.display()),
                            )
                        })?;
                        (text, Some(path))
                    };
                    let mac = hmac_key(&text).map_err(|why| match &file {
                        Some(path) => {
                            self.fail(value, &full, &format!("{}: {why}", path.display()))
                        }
                        None => self.fail(value, &full, &why),
                    })?;
                    s.eab_hmac_key = Some((mac, self.origin(&full, value), file));
                }
                _ => return Err(self.unknown(key, "acme", ACME_KEYS)),
            }
        }
        Ok(s)
    }
}

/// The MAC key of an external account binding as the CA gives it:
/// base64url (RFC 4648 §5), its padding and the white space around it
/// (a file's last newline) left out.
#[cfg(feature = "acme")]
fn hmac_key(text: &str) -> Result<Vec<u8>, String> {
    use base64ct::Encoding as _;
    let b64 = text.trim().trim_end_matches('=');
    let mut out = vec![0u8; b64.len()];
    let n = base64ct::Base64UrlUnpadded::decode(b64, &mut out)
        .map(|d| d.len())
        .unwrap_or(0);
    out.truncate(n);
    if n == 0 {
        out.fill(0);
        return Err(
            "expected the MAC key the CA gives (its EAB HMAC key), in base64url: letters, digits, - and _".into(),
        );
    }
    Ok(out)
}

/// Whether `host` is certified by the local CA: `localhost` (or a name
/// beneath it, RFC 6761 §6.3), a name no public CA certifies because it
/// is local by definition (`.local`, mDNS, RFC 6762; `.internal`;
/// `.home.arpa`, RFC 8375), as Caddy serves them from its own CA, or an
/// IP address.
#[cfg(feature = "acme")]
fn is_local(host: &str) -> bool {
    host == "localhost"
        || [".localhost", ".local", ".internal", ".home.arpa"]
            .iter()
            .any(|s| host.ends_with(s))
        || host.parse::<std::net::IpAddr>().is_ok()
}

#[cfg(feature = "acme")]
/// Whether a public CA can be asked for `host`: a host name of two labels
/// at least, no wildcard, no address, not `localhost`.
fn orderable(host: &str) -> Result<(), String> {
    if host.starts_with("*.") {
        return Err(format!("{host}: wildcard names need the dns-01 challenge, which brisk does not answer; name each host"));
    }
    if is_local(host) {
        return Err(format!(
            "{host}: a public CA gives no certificate for an address, localhost or a local name (.local, .internal, .home.arpa): the local CA does"
        ));
    }
    if !host.is_ascii() {
        return Err(format!(
            "{host}: an internationalized name: write it in its ASCII form, \"xn--\" labels (as `idn2` gives it), which the CA certifies"
        ));
    }
    // (RFC 1035 §2.3.1 as RFC 1123 §2.1 relaxes it: labels of 1 to 63
    // letters, digits and hyphens, none at either end; 253 in all.)
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if !crate::acme::store::is_storable(host)
        || !host.contains('.')
        || host.len() > 253
        || !host.split('.').all(label_ok)
    {
        return Err(format!(
            "{host}: expected a host name such as \"example.org\""
        ));
    }
    Ok(())
}

#[cfg(feature = "acme")]
/// Where the storage is by default: `/var/lib/brisk/acme` for a server
/// started as root, else under the user's data directory; None when the
/// environment names none (see [`default_storage_in`]).
pub fn default_storage() -> Option<PathBuf> {
    default_storage_in(
        crate::sys::privileges::euid(),
        std::env::var_os("XDG_DATA_HOME"),
        std::env::var_os("HOME"),
    )
}

#[cfg(feature = "acme")]
/// [`default_storage`] for the effective user `euid` and the values of
/// `XDG_DATA_HOME` and `HOME`: `$XDG_DATA_HOME/brisk/acme`, else
/// `$HOME/.local/share/brisk/acme`, each only when absolute. None
/// without either: never a shared directory such as `/tmp`, where
/// another user could make the storage first and answer the CA's
/// challenges for brisk's names from it.
pub fn default_storage_in(
    euid: u32,
    xdg_data_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    if euid == 0 {
        return Some(PathBuf::from("/var/lib/brisk/acme"));
    }
    let absolute = |p: &PathBuf| p.is_absolute();
    let data = xdg_data_home
        .map(PathBuf::from)
        .filter(absolute)
        .or_else(|| {
            home.map(PathBuf::from)
                .filter(absolute)
                .map(|h| h.join(".local/share"))
        })?;
    Some(data.join("brisk/acme"))
}

#[cfg(feature = "acme")]
/// Settles `[acme]` once the sites and `[tls]` are known: the names to
/// order (`hosts`, or every site's that no certificate covers), the
/// directory's address.
///
/// `covered` says whether a configured certificate covers a name (by a
/// wildcard too), `named` whether one names it exactly: that one is
/// served for it before any certificate obtained, so a name of `hosts`
/// it names is not ordered (it would be renewed forever, never served),
/// and a warning says so.
pub(crate) fn finish(
    s: AcmeSection,
    site_hosts: &[String],
    covered: &dyn Fn(&str) -> bool,
    named: &dyn Fn(&str) -> bool,
) -> Result<AcmeConfig, ConfigError> {
    let fail = |at: &str, what: String| ConfigError {
        message: format!("{at}: {what}"),
    };
    let mut unordered = Vec::new();
    let explicit = s.hosts.is_some();
    let all = match s.hosts {
        Some((hosts, origin)) => {
            for h in hosts.iter().filter(|h| named(h)) {
                unordered.push(format!(
                    "{origin}: {h}: a [[tls.certificate]] names it, and is served for it before any certificate obtained: it is not ordered (take it out of hosts, or out of that certificate, to say which)"
                ));
            }
            hosts.into_iter().filter(|h| !named(h)).collect()
        }
        None => site_hosts
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .filter(|h| !covered(h))
            .filter(|h| match orderable(h) {
                Ok(()) => true,
                _ if is_local(h) => true,
                Err(why) => {
                    let said = format!("{}: no certificate for the site name {why}; it has no HTTPS (a [[tls.certificate]] that covers it serves it)", s.origin);
                    if !unordered.contains(&said) {
                        unordered.push(said);
                    }
                    false
                }
            })
            .fold(Vec::new(), |mut v, h| {
                if !v.contains(&h) {
                    v.push(h);
                }
                v
            }),
    };
    let (local, hosts): (Vec<String>, Vec<String>) = all.into_iter().partition(|h| is_local(h));
    if hosts.is_empty() && local.is_empty() {
        if let Some(said) = unordered.first().filter(|_| explicit) {
            // (Every name written is a configured certificate's.)
            return Err(ConfigError {
                message: said.clone(),
            });
        }
        return Err(fail(&s.origin, "names no host to order a certificate for: write hosts = [\"example.org\"], or give a [[site]] hosts that no [[tls.certificate]] covers".into()));
    }
    let storage = match s.storage {
        Some(dir) => dir,
        None => default_storage().ok_or_else(|| {
            fail(
                &s.origin,
                "storage is not set, and a user other than root has no default one without HOME or XDG_DATA_HOME (an absolute path): set storage = \"DIR\", a directory only the user brisk runs as may write".into(),
            )
        })?,
    };
    let url = crate::acme::http::Url::parse(&s.directory.0).map_err(|e| fail(&s.directory.1, e))?;
    let host = url
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let addr = super::upstream::resolve_name(&host, url.port).ok();
    let (eab, eab_hmac_key_file) = match (s.eab_kid, s.eab_hmac_key) {
        (None, None) => (None, None),
        (Some((kid, _)), Some((hmac_key, _, file))) => (Some(Eab { kid, hmac_key }), file),
        (Some((_, at)), None) => {
            return Err(fail(&at, "needs eab_hmac_key (or eab_hmac_key_file) beside it: the CA gives the key ID and the MAC key together".into()))
        }
        (None, Some((_, at, _))) => {
            return Err(fail(&at, "needs eab_kid beside it: the CA gives the key ID and the MAC key together".into()))
        }
    };
    Ok(AcmeConfig {
        origin: s.origin,
        email: s.email,
        directory: s.directory.0,
        directory_addr: (host, url.port, addr),
        ca_roots: s.ca_roots,
        ca_roots_origin: s.ca_roots_origin,
        storage,
        hosts,
        local,
        challenges: s.challenges,
        redirect_http: s.redirect_http,
        key_type: s.key_type,
        eab,
        eab_hmac_key_file,
        unordered,
    })
}

#[cfg(all(test, feature = "acme"))]
mod tests {
    use super::*;

    #[test]
    fn only_public_host_names_are_orderable() {
        let longest = format!("{}.test", "a".repeat(63));
        for ok in [
            "example.org",
            "www.example.org",
            "a.test",
            "x-1.a.test",
            &longest,
        ] {
            assert_eq!(orderable(ok), Ok(()), "{ok}");
        }
        for bad in [
            "*.example.org",
            "localhost",
            "a.localhost",
            "printer.local",
            "nas.home.arpa",
            "bücher.example",
            "127.0.0.1",
            "::1",
            "example",
            "a..b",
            "a/b",
            "-a.test",
            "a-.test",
            "a_b.test",
            &format!("{}.test", "a".repeat(64)),
            &format!("{}.test", "a.".repeat(130)),
        ] {
            assert!(orderable(bad).is_err(), "{bad}");
        }
        for local in ["localhost", "a.localhost", "127.0.0.1", "::1"] {
            assert!(is_local(local), "{local}");
        }
        assert!(!is_local("example.org") && !is_local("localhost.example.org"));
    }
}
