//! `[tls]` and `[[tls.certificate]]`: HTTPS listeners and certificates.
//!
//! Certificates and keys are read and checked as the configuration loads
//! (the key as root, at start, before the privilege drop; on SIGHUP
//! through the reader the process layer gives, the privileged helper when
//! only root may read the key), so that an unreadable file, a PEM without
//! a certificate or a key that does not match is refused with the file,
//! line and key, at start or by `--check-config`, and a reload with a
//! broken file keeps the running certificate. An expired certificate is
//! served, with a warning ([`super::Config::warnings`]): one failed renewal must
//! not stop the other sites at the next start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use toml::de::DeValue;
use toml::Spanned;

#[cfg(not(feature = "ops"))]
use super::load::REMOVE;
use super::load::{sorted, Loader, SET_FALSE};
use super::units::{self, LISTEN_HELP};
#[cfg(feature = "ops")]
use super::TicketKeys;
use super::{ConfigError, TlsConfig};

pub(super) const TLS_KEYS: &[&str] = &[
    "listen",
    "certificate",
    "session_tickets",
    "session_cache",
    "handshake_timeout",
    "max_handshakes",
    "redirect_http",
    "ticket_keys",
    "ticket_rotation",
];
pub(super) const CERTIFICATE_KEYS: &[&str] = &["cert", "key", "ocsp"];

/// `[tls]` defaults, for the keys a document leaves out.
pub(super) fn defaults() -> TlsConfig {
    TlsConfig {
        listen: Vec::new(),
        certificates: Vec::new(),
        session_tickets: true,
        session_cache: 10_000,
        handshake_timeout: Duration::from_secs(10),
        max_handshakes: 256,
        redirect_http: false,
        #[cfg(feature = "ops")]
        ticket_keys: None,
    }
}

/// What `ticket_keys` needs the feature `ops` for.
#[cfg(not(feature = "ops"))]
const FLEET: &str = "session-ticket keys shared by a fleet";

/// How often shared ticket keys rotate unless `[tls] ticket_rotation`
/// says otherwise: rustls's own period; a ticket is accepted for two.
#[cfg(feature = "ops")]
pub const TICKET_ROTATION: Duration = Duration::from_secs(6 * 3600);

/// What `[tls]` said before the command line and the final checks: the
/// certificate files with where each was set, read once the flags have
/// had their say (`--tls-cert` replaces them).
pub(crate) struct TlsSection {
    pub(crate) config: TlsConfig,
    /// Whether the section has `listen`.
    pub(crate) has_listen: bool,
    /// Where `[tls]` is, for errors about the whole section.
    pub(crate) origin: String,
    /// Each `[[tls.certificate]]`: its files and their origins.
    pub(crate) certificates: Vec<CertificateSource>,
    /// Where each `listen` address was set (`site.toml:5: tls.listen`).
    pub(crate) listen_at: Vec<(SocketAddr, String)>,
}

/// One `[[tls.certificate]]` before it is read.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
pub(crate) struct CertificateSource {
    pub(crate) cert: (PathBuf, String),
    pub(crate) key: (PathBuf, String),
    pub(crate) ocsp: Option<(PathBuf, String)>,
}

impl Loader<'_> {
    pub(super) fn tls(&self, v: &Spanned<DeValue<'_>>) -> Result<TlsSection, ConfigError> {
        let mut section = TlsSection {
            config: defaults(),
            has_listen: false,
            origin: self.origin("tls", v),
            certificates: Vec::new(),
            listen_at: Vec::new(),
        };
        let c = &mut section.config;
        #[cfg(feature = "ops")]
        let mut rotation = None;
        for (key, value) in sorted(self.table("tls", v)?) {
            match key.get_ref().as_ref() {
                "listen" => {
                    // `listen = []`: no address of its own, the sockets
                    // systemd passes named `https` (socket activation).
                    c.listen = match value.get_ref() {
                        DeValue::Array(items) if items.is_empty() => Vec::new(),
                        _ => self.addresses("tls.listen", value)?,
                    };
                    section.listen_at = self.listed("tls.listen", value);
                    section.has_listen = true;
                }
                "certificate" => {
                    section.certificates =
                        self.each_table("tls.certificate", value, |name, item, table| {
                            let mut cert = None;
                            let mut key = None;
                            let mut ocsp = None;
                            for (k, value) in sorted(table) {
                                let field = k.get_ref().as_ref();
                                let full = format!("{name}.{field}");
                                let slot = match field {
                                    "cert" => &mut cert,
                                    "key" => &mut key,
                                    "ocsp" => &mut ocsp,
                                    _ => return Err(self.unknown(k, name, CERTIFICATE_KEYS)),
                                };
                                *slot = Some((self.path(&full, value)?, self.origin(&full, value)));
                            }
                            let cert = cert.ok_or_else(|| {
                                self.fail(
                                    item,
                                    name,
                                    "needs cert = \"fullchain.pem\" (the PEM chain)",
                                )
                            })?;
                            let key = key.ok_or_else(|| {
                                self.fail(
                                    item,
                                    name,
                                    "needs key = \"privkey.pem\" (the PEM private key)",
                                )
                            })?;
                            Ok(CertificateSource { cert, key, ocsp })
                        })?;
                }
                "session_tickets" => {
                    c.session_tickets = self.boolean("tls.session_tickets", value)?
                }
                "session_cache" => {
                    c.session_cache =
                        self.integer("tls.session_cache", value, 0, 10_000_000)? as usize
                }
                "handshake_timeout" => {
                    c.handshake_timeout = self.duration("tls.handshake_timeout", value, false)?
                }
                "max_handshakes" => {
                    c.max_handshakes =
                        self.integer("tls.max_handshakes", value, 1, 1_000_000)? as usize
                }
                "redirect_http" => {
                    c.redirect_http = self.boolean("tls.redirect_http", value)?;
                    if c.redirect_http {
                        let what = "redirect rules";
                        require!(self, "sites", value, "tls.redirect_http", what, SET_FALSE);
                    }
                }
                #[cfg(not(feature = "ops"))]
                k @ ("ticket_keys" | "ticket_rotation") => {
                    require!(self, "ops", value, &format!("tls.{k}"), FLEET, REMOVE);
                }
                #[cfg(feature = "ops")]
                "ticket_keys" => {
                    c.ticket_keys = Some(TicketKeys {
                        file: self.path("tls.ticket_keys", value)?,
                        rotation: TICKET_ROTATION,
                        origin: self.origin("tls.ticket_keys", value),
                    })
                }
                #[cfg(feature = "ops")]
                "ticket_rotation" => {
                    let d = self.duration("tls.ticket_rotation", value, false)?;
                    if d.as_secs() < 60 {
                        let what =
                            "expected at least a minute (a ticket is accepted for up to two)";
                        return Err(self.fail(value, "tls.ticket_rotation", what));
                    }
                    rotation = Some((d, value));
                }
                _ => return Err(self.unknown(key, "tls", TLS_KEYS)),
            }
        }
        #[cfg(feature = "ops")]
        if let Some((d, value)) = rotation {
            let Some(keys) = &mut c.ticket_keys else {
                return Err(self.fail(
                    value,
                    "tls.ticket_rotation",
                    "needs ticket_keys = \"FILE\" (the keys it rotates)",
                ));
            };
            keys.rotation = d;
        }
        #[cfg(feature = "ops")]
        if c.ticket_keys.is_some() && !c.session_tickets {
            return Err(ConfigError {
                message: format!("{}: ticket_keys needs session_tickets = true (the keys encrypt session tickets)", section.origin),
            });
        }
        Ok(section)
    }

    /// A non-empty list of distinct listen addresses: strings, or bare
    /// port numbers (`listen = [8080]`, as `"8080"`).
    pub(super) fn addresses(
        &self,
        key: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<SocketAddr>, ConfigError> {
        let items = listen_items(v);
        if items.is_empty() {
            // (A site served over HTTPS only leaves the plain `listen`
            // out: "with no top-level listen, HTTPS only".)
            let what = match key {
                "listen" => "expected at least one address (for HTTPS only, leave listen out and set [tls] listen)",
                _ => "expected at least one address",
            };
            return Err(self.fail(v, key, what));
        }
        let mut out = Vec::with_capacity(items.len());
        for (addr, item) in items {
            let addr = addr.ok_or_else(|| self.expected(item, key, LISTEN_HELP))?;
            if out.contains(&addr) {
                return Err(self.fail(item, key, &format!("{addr} is listed twice")));
            }
            out.push(addr);
        }
        Ok(out)
    }

    /// Where each address of `v`, a list [`Loader::addresses`] accepted,
    /// was set: `site.toml:3: listen`, the line of the item itself.
    pub(super) fn listed(&self, key: &str, v: &Spanned<DeValue<'_>>) -> Vec<(SocketAddr, String)> {
        listen_items(v)
            .into_iter()
            .filter_map(|(addr, item)| Some((addr?, self.origin(key, item))))
            .collect()
    }
}

/// The addresses `v` lists (one, or an array), each with its item: `None`
/// for one that is neither an address nor a port.
fn listen_items<'t, 'i>(
    v: &'t Spanned<DeValue<'i>>,
) -> Vec<(Option<SocketAddr>, &'t Spanned<DeValue<'i>>)> {
    let one = |item: &'t Spanned<DeValue<'i>>| {
        let addr = match item.get_ref() {
            DeValue::String(s) => units::parse_listen(s),
            DeValue::Integer(i) if i.radix() == 10 => units::parse_listen(i.as_str()),
            _ => None,
        };
        (addr, item)
    };
    match v.get_ref() {
        DeValue::Array(items) => items.iter().map(one).collect(),
        _ => vec![one(v)],
    }
}

/// Reads a file the configuration names (see [`super::ReadFile`]).
pub(crate) type Read<'a> = &'a dyn Fn(&std::path::Path) -> std::io::Result<Vec<u8>>;

/// Reads and checks every certificate of `section` with `read`, into its
/// configuration; errors name where each file was set.
#[cfg(feature = "tls")]
pub(crate) fn finish(
    mut section: TlsSection,
    read: Read<'_>,
    acme: bool,
) -> Result<TlsConfig, ConfigError> {
    use crate::tls::certs::{self, CertificateFiles};
    if section.certificates.is_empty() && !acme {
        return Err(ConfigError {
            message: format!(
                "{}: needs at least one [[tls.certificate]] with cert and key (or --tls-cert FILE --tls-key FILE)",
                section.origin
            ),
        });
    }
    if section.config.listen.is_empty() && !section.has_listen {
        return Err(ConfigError {
            message: format!(
                "{}: needs listen = [\"ADDRESS:PORT\", ...], the addresses that serve HTTPS (or --tls-cert with --listen; listen = [] for the sockets systemd passes named https)",
                section.origin
            ),
        });
    }
    for source in section.certificates {
        let files = CertificateFiles {
            cert: source.cert.0.clone(),
            key: source.key.0.clone(),
            ocsp: source.ocsp.as_ref().map(|(p, _)| p.clone()),
        };
        let cert = certs::load(&files, read).map_err(|e| {
            let from = match (e.part, &source.ocsp) {
                (certs::Part::Key, _) => &source.key.1,
                (certs::Part::Ocsp, Some((_, origin))) => origin,
                _ => &source.cert.1,
            };
            ConfigError {
                message: format!("{from}: {e}"),
            }
        })?;
        section.config.certificates.push(cert);
    }
    Ok(section.config)
}

/// A build without TLS refuses `[tls]` and the TLS flags.
#[cfg(not(feature = "tls"))]
pub(crate) fn finish(
    section: TlsSection,
    _read: Read<'_>,
    _acme: bool,
) -> Result<TlsConfig, ConfigError> {
    Err(ConfigError {
        message: format!(
            "{}: this brisk was built without TLS (cargo feature \"tls\"); build it with the default features to serve HTTPS",
            section.origin
        ),
    })
}

#[cfg(all(test, feature = "tls"))]
impl TlsConfig {
    /// `[tls]` with the test certificates `names` (tls/testdata), the
    /// first the default, for the unit tests.
    pub(crate) fn testing(names: &[&str]) -> TlsConfig {
        TlsConfig {
            listen: Vec::new(),
            certificates: crate::tls::testing::certificates(names),
            session_tickets: true,
            session_cache: 100,
            handshake_timeout: Duration::from_secs(10),
            max_handshakes: 10,
            redirect_http: false,
            #[cfg(feature = "ops")]
            ticket_keys: None,
        }
    }
}
