//! What the ACME thread does, one step at a time: for each name it looks
//! after, the certificate stored for it is served (`tls::sni::Live`), a
//! missing one is ordered, and one two thirds through its lifetime is
//! renewed; the new one replaces the old for new handshakes only
//! (connections keep the certificate they were made with).
//!
//! When the CA offers ACME Renewal Information (RFC 9773), each served
//! certificate's suggested window is asked for (again as its
//! `Retry-After` says, see [`super::ari`]) and a time chosen in it; the
//! certificate is renewed then if that is before the two-thirds point,
//! and the order names the certificate it replaces. Without ARI, or when
//! asking fails, two thirds it stays.
//!
//! One certificate a name, as Caddy does: a name that fails does not hold
//! back the others. Before ordering, the name's lock in the storage is
//! taken, so that of several servers sharing the storage (a fleet) one
//! orders and the others, finding the lock held, look again later and
//! serve what it stored. Failures back off exponentially, from
//! [`FIRST_RETRY`] to [`LAST_RETRY`], each with a log line naming the
//! name, what failed and when the next try is; a certificate still valid
//! is served meanwhile.

use crate::ascii::IgnoreCase;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use super::ari;
use super::cert;
use super::client::{Account, AcmeError, Challenge, Directory, Eab, Responder};
use super::http::Client;
use super::key::{certificate_key, Key, KeyType};
use super::store::{pem_der, Store, Stored};
use crate::log::Level;
use crate::sys::fs::Lock;
use crate::tls::certs;
use crate::tls::sni::Live;

/// The first pause after a failure; it doubles with each failure after.
pub const FIRST_RETRY: Duration = Duration::from_secs(60);
/// The longest pause between two tries.
pub const LAST_RETRY: Duration = Duration::from_secs(24 * 3600);
/// The local CA's name (its certificate's subject).
pub const LOCAL_CA: &str = "brisk local CA";

/// How long a local certificate lasts (renewed two thirds through).
pub const LOCAL_VALIDITY: u64 = 7 * 86_400;

/// How long a certificate this server obtained is kept at least, what
/// ever the CA's renewal information (ARI) says: a window in the past
/// asked about for the new certificate too would renew it again and
/// again (RFC 9773 §4.3 leaves the time in the window to the client).
pub const RENEWED_NO_SOONER: Duration = Duration::from_secs(6 * 3600);

/// How long a server waits for another making the account.
pub const ACCOUNT_WAIT: Duration = Duration::from_secs(30);
/// How soon a server that found a name's lock held looks again (at the
/// storage, for what the holder stored).
pub const LOCK_RECHECK: Duration = Duration::from_secs(10);

/// What the manager is told to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The CA's directory URL.
    pub directory: String,
    /// The account's contact, if any.
    pub email: Option<String>,
    /// The names it looks after (one certificate each).
    pub names: Vec<String>,
    /// The challenge kinds allowed, preferred first.
    pub kinds: Vec<&'static str>,
    /// The storage directory (as seen from inside a chroot).
    pub storage: PathBuf,
    /// The chroot directory, if any: paths in messages are given as the
    /// operator finds them, from outside it.
    pub jail: Option<PathBuf>,
    /// Who this server is, in lock files (host name and pid).
    pub holder: String,
    /// `localhost` and addresses: one certificate for them all from the
    /// local CA, made in the storage (no CA is asked).
    pub local: Vec<String>,
    /// The kind of the certificates' keys (the account's and the local
    /// CA's are P-256).
    pub key_type: KeyType,
    /// The external account binding a new account carries (`eab_kid`,
    /// `eab_hmac_key`), for a CA that requires one.
    pub eab: Option<Eab>,
}

/// Why a new account cannot be made at the CA of `directory`: it requires
/// an external account binding, and none is configured.
fn eab_required(directory: &str) -> String {
    format!(
        "the CA {directory} requires an external account binding to make an account (RFC 8555 §7.3.4): set eab_kid and eab_hmac_key (or eab_hmac_key_file) in [acme] to the key ID and MAC key the CA gives with your account at its site"
    )
}

/// How a name stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct NameState {
    /// The served certificate's validity, seconds since the epoch (0:
    /// none served).
    not_before: u64,
    not_after: u64,
    /// Failures in a row.
    failures: u32,
    /// Not before this (seconds since the epoch): a back-off, or a lock
    /// another holds.
    wait_until: u64,
    /// When the CA's renewal information (ARI) is next asked for (None:
    /// not at all: no certificate served, or no ARI).
    ari_check: Option<u64>,
    /// The last suggested window (start, end), and the time chosen in it
    /// (0: none).
    ari_window: (u64, u64),
    ari_at: u64,
    /// When this server's own order got the served certificate (0: it
    /// found it stored).
    obtained: u64,
    /// The challenge kind whose validation failed last: the next order
    /// tries another first.
    failed_kind: Option<&'static str>,
}

impl NameState {
    /// Two thirds through the served certificate's lifetime (0: none is
    /// served).
    fn two_thirds(&self) -> u64 {
        match self.not_after {
            0 => 0,
            end => self.not_before + (end - self.not_before) * 2 / 3,
        }
    }

    /// When the served certificate is due for renewal: two thirds
    /// through its lifetime, or sooner when ARI said so, though not
    /// within [`RENEWED_NO_SOONER`] of obtaining it (0: now, none is
    /// served).
    fn renew_at(&self) -> u64 {
        match self.ari_at {
            0 => self.two_thirds(),
            at => {
                let kept = match self.obtained {
                    0 => 0,
                    t => t + RENEWED_NO_SOONER.as_secs(),
                };
                self.two_thirds().min(at.max(kept))
            }
        }
    }

    /// When it is to be renewed, a back-off or a lock permitting.
    fn renewal_due(&self) -> u64 {
        self.renew_at().max(self.wait_until)
    }

    /// When something is next to be done for it.
    fn due(&self) -> u64 {
        self.renewal_due().min(self.ari_check.unwrap_or(u64::MAX))
    }
}

/// The ACME manager of one server.
pub struct Manager {
    settings: Settings,
    client: Client,
    store: Store,
    account: Option<Account>,
    live: Arc<Live>,
    responder: Arc<dyn Responder + Send + Sync>,
    names: HashMap<String, NameState>,
    /// The local CA's certificate for `settings.local`.
    local: NameState,
    /// The CA's directory, once read.
    directory: Option<Directory>,
    /// Whether the CA's lack of ARI was said in the log.
    no_ari_said: bool,
    /// Why each name's stored certificate was last not served, as said
    /// in the log: said once, not at each look (a step looks up to three
    /// times: before the lock, after it, after the order).
    unserved_said: HashMap<String, String>,
    /// Set when its thread is told to stop (a reload replaced it): no
    /// name is ordered after that.
    stopped: Option<Stop>,
}

/// A thread's stop: the flag and its wake-up.
pub(crate) type Stop = Arc<(Mutex<bool>, std::sync::Condvar)>;

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("settings", &self.settings)
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// A log line's level and text.
pub type Log<'a> = &'a mut dyn FnMut(Level, std::fmt::Arguments<'_>);

impl Manager {
    /// The manager of `settings`, serving into `live`, answering
    /// challenges through `responder`; its storage opened.
    pub fn new(
        settings: Settings,
        client: Client,
        live: Arc<Live>,
        responder: Arc<dyn Responder + Send + Sync>,
    ) -> Result<Manager, String> {
        let store = Store::open(&settings.storage, &settings.directory).map_err(|e| {
            // (Started as root, brisk made the storage and gave it to the
            // user it serves as; a directory above it may still be closed
            // to that user, or the storage not writable by it.)
            let why = match e.kind() {
                std::io::ErrorKind::PermissionDenied => format!(
                    " (brisk serves as uid {}: that user must be able to search every directory above the storage, and to write in the storage; see their modes with ls -ld)",
                    crate::sys::privileges::euid()
                ),
                _ => String::new(),
            };
            format!("acme: storage {}: {e}{why}", settings.storage.display())
        })?;
        let names = settings
            .names
            .iter()
            .map(|n| (n.clone(), NameState::default()))
            .collect();
        Ok(Manager {
            settings,
            client,
            store,
            account: None,
            live,
            responder,
            names,
            local: NameState::default(),
            directory: None,
            no_ari_said: false,
            unserved_said: HashMap::new(),
            stopped: None,
        })
    }

    /// Serves what the storage holds for each name (valid now), whatever
    /// its age: the first thing done at start, so that a restart serves
    /// at once and orders nothing new. The names served that it does not
    /// look after (a reload took them out of `hosts`) are served no more.
    pub fn load_stored(&mut self, now: u64, log: Log<'_>) {
        let mut managed = self.settings.names.clone();
        managed.extend(self.settings.local.iter().cloned());
        self.live
            .keep_only(&managed, !self.settings.local.is_empty());
        let names: Vec<String> = self.names.keys().cloned().collect();
        for name in names {
            self.serve_stored(&name, now, log);
        }
    }

    /// Serves the stored certificate of `name` if it is valid at `now`
    /// and newer than the one served; whether it did.
    fn serve_stored(&mut self, name: &str, now: u64, log: Log<'_>) -> bool {
        let stored = match self.store.certificate(name) {
            Ok(Some(s)) => s,
            Ok(None) => return false,
            Err(e) => {
                log(
                    Level::Error,
                    format_args!("acme: {name}: cannot read its certificate: {e}"),
                );
                return false;
            }
        };
        self.serve(name, &stored, now, log)
    }

    /// Serves `stored` for `name` from now on, unless it cannot be, or the
    /// one served is as new (see [`Manager::serve_stored`]).
    fn serve(&mut self, name: &str, stored: &Stored, now: u64, log: Log<'_>) -> bool {
        let (key, not_before, not_after) = match usable(stored, &[name], now, true) {
            Ok(k) => k,
            Err(e) => {
                if self.unserved_said.get(name) != Some(&e) {
                    // (Where it is: a user may look at it, or remove it.)
                    let dir = self.store.cert_dir(name).unwrap_or_default();
                    log(
                        Level::Warn,
                        format_args!(
                            "acme: {name}: the stored certificate ({}) is not served: {e}",
                            dir.join("chain.pem").display()
                        ),
                    );
                    self.unserved_said.insert(name.to_string(), e);
                }
                return false;
            }
        };
        self.unserved_said.remove(name);
        // Not an older one, nor the one served (a renewal may end in the
        // same second as the certificate it replaces).
        let served = self.live.issued(name);
        let same = served.is_some_and(|s| s.cert.first() == key.cert.first());
        let state = self.names.entry(name.to_string()).or_default();
        if not_after < state.not_after || (not_after == state.not_after && same) {
            return false;
        }
        state.not_before = not_before;
        state.not_after = not_after;
        // Its renewal information is asked for at the next step.
        state.ari_check = Some(now);
        state.ari_window = (0, 0);
        state.ari_at = 0;
        state.obtained = 0;
        if self.is_stopped() {
            // (Its successor decides what is served now.)
            return false;
        }
        self.live.set(&[name.to_string()], Some(key));
        match now >= not_after {
            true => log(
                Level::Warn,
                format_args!(
                    "acme: {name}: serving the stored certificate, which expired on {}, until its renewal comes (clients refuse it meanwhile)",
                    certs::utc(not_after)
                ),
            ),
            false => log(
                Level::Info,
                format_args!(
                    "acme: {name}: serving the certificate valid until {}",
                    certs::utc(not_after)
                ),
            ),
        }
        true
    }

    /// Does what is due at `now` (seconds since the epoch): orders the
    /// missing certificates and renews those due, one name after the
    /// other. Returns how long to wait before the next step.
    pub fn step(&mut self, now: u64, log: Log<'_>) -> Duration {
        if !self.settings.local.is_empty() && self.local.due() <= now {
            self.local_step(now, log);
        }
        self.ask_renewal_info(now, log);
        let mut due: Vec<String> = self
            .names
            .iter()
            .filter(|(_, s)| s.renewal_due() <= now)
            .map(|(n, _)| n.clone())
            .collect();
        due.sort();
        for name in due {
            if self.is_stopped() {
                // (Its successor, with the configuration that replaced
                // it, orders what is still wanted.)
                return Duration::from_secs(1);
            }
            self.renew(&name, now, log);
        }
        // (Those just served: what the CA suggests for them.)
        self.ask_renewal_info(now, log);
        let local = (!self.settings.local.is_empty()).then_some(self.local.due());
        let next = self
            .names
            .values()
            .map(NameState::due)
            .chain(local)
            .min()
            .unwrap_or(u64::MAX);
        Duration::from_secs(next.saturating_sub(now).clamp(1, LAST_RETRY.as_secs()))
    }

    /// Orders nothing more once `stop` is set (its thread's).
    pub(crate) fn watch(&mut self, stop: &Stop) {
        self.stopped = Some(Arc::clone(stop));
    }

    /// Whether its thread was told to stop.
    fn is_stopped(&self) -> bool {
        self.stopped
            .as_ref()
            .is_some_and(|s| *s.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Serves the local CA's certificate for `localhost` and addresses:
    /// the stored one while it is valid, names the same, and not due; a
    /// new one else (the CA made first, once, ten years long).
    fn local_step(&mut self, now: u64, log: Log<'_>) {
        let names = self.settings.local.clone();
        let mut made = None;
        let got = self.local_certificate(&names, now, &mut made);
        match got {
            Ok((key, not_before, not_after)) => {
                self.live.set(&names, Some(Arc::clone(&key)));
                self.live.set_default(Some(key));
                self.local = NameState {
                    not_before,
                    not_after,
                    ..NameState::default()
                };
                // (Said once it is served: a client told by the log may
                // connect at once.)
                if let Some(said) = made {
                    log(Level::Info, format_args!("{said}"));
                }
            }
            Err(e) => {
                let s = &mut self.local;
                s.failures += 1;
                let pause = FIRST_RETRY
                    .saturating_mul(1u32 << (s.failures - 1).min(16))
                    .min(LAST_RETRY);
                s.wait_until = now + pause.as_secs();
                log(
                    Level::Error,
                    format_args!(
                        "acme: local CA for {}: {e}; next try in {} s",
                        names.join(", "),
                        pause.as_secs()
                    ),
                );
            }
        }
    }

    /// The local certificate for `names`: the stored one if it will do,
    /// else a new one, stored (and what to log of it in `made`).
    fn local_certificate(
        &mut self,
        names: &[String],
        now: u64,
        made: &mut Option<String>,
    ) -> Result<(Arc<CertifiedKey>, u64, u64), String> {
        if let Some(stored) = self.store.local_certificate().map_err(|e| e.to_string())? {
            if let Ok((key, nb, na)) = certified(&stored) {
                let leaf = key
                    .cert
                    .first()
                    .map(|c| c.as_ref().to_vec())
                    .unwrap_or_default();
                let same = crate::tls::x509::parse(&leaf)
                    .is_ok_and(|f| same_names(names, &f.names, &f.addresses));
                let fresh = NameState {
                    not_before: nb,
                    not_after: na,
                    ..NameState::default()
                };
                if same && fresh.renew_at() > now {
                    return Ok((key, nb, na));
                }
            }
        }
        let (ca_key, ca_cert) = match self.store.local_ca().map_err(|e| e.to_string())? {
            Some((pkcs8, cert)) => (Key::from_pkcs8(&pkcs8).map_err(|e| e.0)?, cert),
            None => {
                let key = Key::generate().map_err(|e| e.0)?;
                let t = cert::Template {
                    names: &[],
                    common_name: Some(LOCAL_CA),
                    serial: cert::serial().map_err(|e| e.0)?,
                    not_before: now.saturating_sub(3600),
                    not_after: now + 10 * 365 * 86_400,
                    ca: true,
                    acme_identifier: None,
                };
                let der = cert::certificate(&t, &key, None).map_err(|e| e.0)?;
                self.store
                    .save_local_ca(key.pkcs8(), &der)
                    .map_err(|e| e.to_string())?;
                (key, der)
            }
        };
        let alts: Vec<cert::Alt<'_>> = names
            .iter()
            .map(|n| n.parse().map_or(cert::Alt::Dns(n), cert::Alt::Ip))
            .collect();
        let key = certificate_key(self.settings.key_type).map_err(|e| e.0)?;
        let t = cert::Template {
            names: &alts,
            common_name: None,
            serial: cert::serial().map_err(|e| e.0)?,
            not_before: now.saturating_sub(3600),
            not_after: now + LOCAL_VALIDITY,
            ca: false,
            acme_identifier: None,
        };
        let leaf = cert::certificate(&t, &*key, Some((&ca_key, LOCAL_CA))).map_err(|e| e.0)?;
        let stored = Stored {
            chain_pem: cert::pem("CERTIFICATE", &leaf) + &cert::pem("CERTIFICATE", &ca_cert),
            key_pem: cert::pem("PRIVATE KEY", key.pkcs8()),
        };
        self.store
            .save_local_certificate(&stored)
            .map_err(|e| e.to_string())?;
        let mut ca_path = self
            .store
            .local_dir()
            .map_err(|e| e.to_string())?
            .join("ca.pem");
        if let Some(jail) = &self.settings.jail {
            ca_path = jail.join(ca_path.strip_prefix("/").unwrap_or(&ca_path));
        }
        *made = Some(format!(
            "acme: {}: a certificate from brisk's local CA, valid until {}; trust {} to use it without warnings",
            names.join(", "),
            certs::utc(t.not_after),
            ca_path.display()
        ));
        certified(&stored)
    }

    /// Gets `name` a new certificate, or what another server of the
    /// fleet stored for it.
    fn renew(&mut self, name: &str, now: u64, log: Log<'_>) {
        // Another server may have renewed it since we last looked.
        if self.serve_stored(name, now, log) && self.names[name].renew_at() > now {
            return;
        }
        let lock = match self.store.lock(name, &self.settings.holder) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                let who = self.store.lock_holder(name);
                if who.as_deref() == Some(self.settings.holder.as_str()) {
                    // (Its own lock: the thread a reload replaced, still
                    // ordering.)
                    log(
                        Level::Info,
                        format_args!(
                            "acme: {name}: its order from before the reload is still under way; looking again in {} s",
                            LOCK_RECHECK.as_secs()
                        ),
                    );
                } else {
                    let who = who.as_deref().unwrap_or("a server starting to");
                    log(
                        Level::Info,
                        format_args!(
                            "acme: {name}: another server orders it (its lock is held by {who}); looking again in {} s",
                            LOCK_RECHECK.as_secs()
                        ),
                    );
                }
                let s = self.names.entry(name.to_string()).or_default();
                s.wait_until = now + LOCK_RECHECK.as_secs();
                return;
            }
            Err(e) => return self.failed(name, now, &format!("cannot take its lock: {e}"), log),
        };
        // Stored while we waited for the lock?
        if self.serve_stored(name, now, log) && self.names[name].renew_at() > now {
            drop(lock);
            return;
        }
        let replaces = match self.names.get(name) {
            Some(s) if s.not_after != 0 => self.served_id(name).ok(),
            _ => None,
        };
        let replacing = replaces
            .as_deref()
            .map(|id| format!(" to replace {id}"))
            .unwrap_or_default();
        log(
            Level::Info,
            format_args!(
                "acme: {name}: ordering a certificate from {} (as {}){replacing}",
                self.settings.directory, self.settings.holder
            ),
        );
        let got = self.order(name, replaces.as_deref(), now, log);
        drop(lock);
        for w in self.responder.take_warnings() {
            log(Level::Warn, format_args!("acme: {name}: {w}"));
        }
        match got {
            Ok(unstored) => {
                let s = self.names.entry(name.to_string()).or_default();
                s.failures = 0;
                s.wait_until = 0;
                let served = match unstored {
                    Some(stored) => self.serve(name, &stored, now, log),
                    None => self.serve_stored(name, now, log),
                };
                if served {
                    if let Some(s) = self.names.get_mut(name) {
                        s.obtained = now;
                    }
                }
            }
            Err(e) => self.failed(name, now, &e, log),
        }
    }

    /// Orders the certificate of `name` (replacing the one identified by
    /// `replaces`, RFC 9773 §5) and stores it, if it is [`usable`] at
    /// `now`: one that is not is an error, and what is stored stays. One
    /// the storage refused comes back, to be served from memory.
    fn order(
        &mut self,
        name: &str,
        replaces: Option<&str>,
        now: u64,
        log: Log<'_>,
    ) -> Result<Option<Stored>, String> {
        let mut account = self.account(log)?;
        let key = certificate_key(self.settings.key_type).map_err(|e| e.0)?;
        let kinds = self.kinds_for(name);
        let failed_last = self.names.get(name).and_then(|s| s.failed_kind);
        if let (Some(failed), Some(first)) = (failed_last, kinds.first()) {
            if *first != failed {
                log(
                    Level::Info,
                    format_args!(
                        "acme: {name}: its {failed} validation failed last time: trying {first} first"
                    ),
                );
            }
        }
        let issued =
            account.obtain_replacing(&[name], &kinds, &*key, self.responder.as_ref(), replaces);
        let failed = account.take_failed_kind();
        self.account = Some(account);
        let failed = failed.and_then(|f| self.settings.kinds.iter().copied().find(|k| *k == f));
        if let (Some(kind), Some(s)) = (failed, self.names.get_mut(name)) {
            s.failed_kind = Some(kind);
        }
        let issued = issued.map_err(|e| match failed {
            Some(kind) => format!("{kind} validation: {e}"),
            None => e.to_string(),
        })?;
        if let (Some(old), Some(why)) = (replaces, &issued.replaces_refused) {
            log(
                Level::Warn,
                format_args!(
                    "acme: {name}: the CA refused an order replacing {old} ({why}); ordered without `replaces`"
                ),
            );
        }
        if let Some(old) = &issued.replaces {
            log(
                Level::Info,
                format_args!(
                    "acme: {name}: the new certificate replaces {old} (its order says so)"
                ),
            );
        }
        let stored = Stored {
            chain_pem: issued.chain_pem,
            key_pem: super::cert::pem("PRIVATE KEY", key.pkcs8()),
        };
        // Checked before it replaces anything: the CA's word is not
        // taken for it (RFC 8555 §7.4.2 leaves the check to the client).
        usable(&stored, &[name], now, false)
            .map_err(|e| format!("the CA issued a certificate brisk cannot serve: {e}"))?;
        // One the storage does not take (full, read-only, another
        // owner's) is served all the same, from memory, rather than
        // thrown away and ordered again at each try (the CA's limits:
        // five of the same names a week at Let's Encrypt).
        match self.store.save_certificate(name, &stored) {
            Ok(()) => Ok(None),
            Err(e) => {
                log(
                    Level::Error,
                    format_args!(
                        "acme: {name}: cannot store its new certificate: {e}; serving it from memory (a restart will not find it: mend the storage)"
                    ),
                );
                Ok(Some(stored))
            }
        }
    }

    /// The challenge kinds to offer for `name`, preferred first: those
    /// allowed, in their order, but the one whose validation failed last
    /// goes last; so that a failure of one kind (port 443 unreachable
    /// from the CA, say) is followed by a try of another the CA offers,
    /// by turns, as Caddy (acmez) does. RFC 8555 §7.1.4: any one of an
    /// authorization's challenges validates it.
    fn kinds_for(&self, name: &str) -> Vec<&'static str> {
        let mut kinds = self.settings.kinds.clone();
        if let Some(failed) = self.names.get(name).and_then(|s| s.failed_kind) {
            if kinds.len() > 1 && kinds.contains(&failed) {
                kinds.retain(|k| *k != failed);
                kinds.push(failed);
            }
        }
        kinds
    }

    /// The account (taken: put it back): the stored one, or a new one
    /// (stored at once); its contact made the configured one if it was
    /// not (`email` changed, or removed).
    fn account(&mut self, log: Log<'_>) -> Result<Account, String> {
        if let Some(a) = self.account.take() {
            return Ok(a);
        }
        let dir = self.directory()?;
        // (`_lock`: held until the new account's URL is stored.)
        let (key, url, _lock) = self.account_key()?;
        let pkcs8 = key.pkcs8().to_vec();
        let mut account = Account::new(self.client.clone(), dir, key);
        // Registered again each start: the CA answers with the
        // account the key has (RFC 8555 §7.3.1), or makes it.
        // A stored account is found by its key, and needs no binding: a
        // binding is made for a new account only (RFC 8555 §7.3.4).
        let mut eab = self.settings.eab.as_ref().filter(|_| url.is_none());
        if url.is_none() && eab.is_none() && account.directory.external_account_required {
            return Err(eab_required(&self.settings.directory));
        }
        let email = self.settings.email.as_deref();
        let required = |r: &Result<(String, bool), AcmeError>| {
            matches!(r, Err(AcmeError::Problem { kind, .. })
                if kind == "urn:ietf:params:acme:error:externalAccountRequired")
        };
        let mut registered = account.register_bound(email, eab);
        if required(&registered) && eab.is_none() && self.settings.eab.is_some() {
            // (A CA that wants the binding even to find a stored account.)
            eab = self.settings.eab.as_ref();
            registered = account.register_bound(email, eab);
        }
        if required(&registered) && eab.is_none() {
            return Err(eab_required(&self.settings.directory));
        }
        let (url_now, updated) = registered.map_err(|e| match (e, eab) {
            (e @ AcmeError::Problem { .. }, Some(eab)) => format!(
                "the CA refused to make the account bound to eab_kid {:?} (check eab_kid and eab_hmac_key against those the CA gave): {e}",
                eab.kid
            ),
            (e, _) => e.to_string(),
        })?;
        if updated {
            let now = email.map_or("none".to_string(), |e| format!("mailto:{e}"));
            log(
                Level::Info,
                format_args!("acme: the account {url_now}'s contact is now {now}"),
            );
        }
        if url.as_deref() != Some(url_now.as_str()) {
            self.store
                .save_account(&pkcs8, Some(&url_now))
                .map_err(|e| format!("cannot store the account: {e}"))?;
        }
        Ok(account)
    }

    /// The CA's directory: read once (again after a failure).
    fn directory(&mut self) -> Result<Directory, String> {
        if let Some(d) = &self.directory {
            return Ok(d.clone());
        }
        let d =
            Directory::fetch(&self.client, &self.settings.directory).map_err(|e| e.to_string())?;
        self.directory = Some(d.clone());
        Ok(d)
    }

    /// The identifier (RFC 9773 §4.1) of the certificate served for
    /// `name`.
    fn served_id(&self, name: &str) -> Result<String, String> {
        let key = self.live.issued(name).ok_or("none is served")?;
        let leaf = key.cert.first().ok_or("no certificate in the chain")?;
        ari::cert_id(leaf)
    }

    /// Asks the CA's renewal information (RFC 9773) of the certificates
    /// due to be asked about; a window is honoured by choosing a time in
    /// it, which brings the renewal forward when it comes before two
    /// thirds of the lifetime. A CA without ARI is said once; a failure
    /// once a try, the next after [`ari::DEFAULT_POLL`].
    fn ask_renewal_info(&mut self, now: u64, log: Log<'_>) {
        let mut asking: Vec<String> = self
            .names
            .iter()
            .filter(|(_, s)| s.ari_check.is_some_and(|t| t <= now))
            .map(|(n, _)| n.clone())
            .collect();
        if asking.is_empty() {
            return;
        }
        asking.sort();
        let url = match self.directory().map(|d| d.renewal_info) {
            Ok(Some(url)) => url,
            Ok(None) => {
                for name in &asking {
                    if let Some(s) = self.names.get_mut(name) {
                        s.ari_check = None;
                    }
                }
                if !self.no_ari_said {
                    self.no_ari_said = true;
                    log(
                        Level::Info,
                        format_args!(
                            "acme: {} offers no renewal information (ARI, RFC 9773): certificates are renewed two thirds through their lifetime",
                            self.settings.directory
                        ),
                    );
                }
                return;
            }
            Err(e) => {
                for name in &asking {
                    if let Some(s) = self.names.get_mut(name) {
                        s.ari_check = Some(now + ari::DEFAULT_POLL.as_secs());
                    }
                }
                log(
                    Level::Warn,
                    format_args!(
                        "acme: renewal information (ARI) for {}: {e}; renewing two thirds through, asking again in {} s",
                        asking.join(", "),
                        ari::DEFAULT_POLL.as_secs()
                    ),
                );
                return;
            }
        };
        for name in asking {
            self.ask_one(&name, &url, now, log);
        }
    }

    /// [`Manager::ask_renewal_info`] of `name`, at the CA's
    /// `renewal_info`.
    fn ask_one(&mut self, name: &str, renewal_info: &str, now: u64, log: Log<'_>) {
        let Some(s) = self.names.get(name).copied() else {
            return;
        };
        // Not for an expired certificate (§4.2).
        let id = match self.served_id(name) {
            Ok(id) if s.not_after > now => id,
            Ok(_) => return self.set_ari_check(name, None),
            Err(e) => {
                log(
                    Level::Info,
                    format_args!(
                        "acme: {name}: no renewal information (ARI) for its certificate ({e}): renewed two thirds through"
                    ),
                );
                return self.set_ari_check(name, None);
            }
        };
        let info = match ari::fetch(&self.client, renewal_info, &id) {
            Ok(info) => info,
            Err(e) => {
                log(
                    Level::Warn,
                    format_args!(
                        "acme: {name}: renewal information (ARI): {e}; renewing at {} unless it says otherwise, asking again in {} s",
                        certs::utc(s.renew_at()),
                        ari::DEFAULT_POLL.as_secs()
                    ),
                );
                return self.set_ari_check(name, Some(now + ari::DEFAULT_POLL.as_secs()));
            }
        };
        let w = &info.window;
        let Some(st) = self.names.get_mut(name) else {
            return;
        };
        st.ari_check = Some(now + info.poll.as_secs());
        if st.ari_window == (w.start, w.end) {
            return;
        }
        st.ari_window = (w.start, w.end);
        st.ari_at = ari::choose(w, ari::random());
        let plan = match st.renew_at() {
            at if at <= now => "renewing it now".to_string(),
            at if at < st.two_thirds() => format!("renewing it at {}", certs::utc(at)),
            at => format!("renewing it two thirds through, at {}", certs::utc(at)),
        };
        let why = w
            .explanation
            .as_deref()
            .map(|u| format!(" (why: {u})"))
            .unwrap_or_default();
        log(
            Level::Info,
            format_args!(
                "acme: {name}: the CA suggests renewing between {} and {}{why}; {plan}",
                certs::utc(w.start),
                certs::utc(w.end)
            ),
        );
    }

    fn set_ari_check(&mut self, name: &str, at: Option<u64>) {
        if let Some(s) = self.names.get_mut(name) {
            s.ari_check = at;
        }
    }

    /// The stored account key and URL; or, for an account not yet
    /// registered, the stored key or a new one (stored at once) with the
    /// storage's `account` lock, held until its URL is stored: so that a
    /// fleet starting together makes one account, and registers it once
    /// (Pebble answered three servers registering one key at once with
    /// 500 "Error saving account" for two of them).
    fn account_key(&self) -> Result<(Key, Option<String>, Option<Lock>), String> {
        let read = |store: &Store| -> Result<Option<(Key, Option<String>)>, String> {
            match store.account() {
                Ok(Some((der, url))) => Key::from_pkcs8(&der)
                    .map(|k| Some((k, url)))
                    .map_err(|e| format!("account.key: {}", e.0)),
                Ok(None) => Ok(None),
                Err(e) => Err(format!("cannot read the account: {e}")),
            }
        };
        for _ in 0..ACCOUNT_WAIT.as_secs() * 10 {
            if let Some((key, Some(url))) = read(&self.store)? {
                return Ok((key, Some(url), None));
            }
            let lock = self.store.lock("account", &self.settings.holder);
            if let Some(lock) = lock.map_err(|e| format!("cannot take the account's lock: {e}"))? {
                // (Made, or registered, while we took the lock?)
                return match read(&self.store)? {
                    Some((key, Some(url))) => Ok((key, Some(url), None)),
                    Some((key, None)) => Ok((key, None, Some(lock))),
                    None => {
                        let key = Key::generate().map_err(|e| e.0)?;
                        self.store
                            .save_account(key.pkcs8(), None)
                            .map_err(|e| format!("cannot store the account key: {e}"))?;
                        Ok((key, None, Some(lock)))
                    }
                };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!(
            "another server has held the account's lock for over {} s",
            ACCOUNT_WAIT.as_secs()
        ))
    }

    /// `name` failed with `why`: the back-off grows, a line says when the
    /// next try is.
    fn failed(&mut self, name: &str, now: u64, why: &str, log: Log<'_>) {
        // (A connection's failure may be the account's, or the
        // directory's: found again next time.)
        self.account = None;
        self.directory = None;
        let s = self.names.entry(name.to_string()).or_default();
        s.failures += 1;
        let pause = FIRST_RETRY
            .saturating_mul(1u32 << (s.failures - 1).min(16))
            .min(LAST_RETRY);
        s.wait_until = now + pause.as_secs();
        let serving = match s.not_after {
            0 => "no certificate for it yet: its handshakes fail".to_string(),
            t if t > now => format!("still serving the one valid until {}", certs::utc(t)),
            _ => "its certificate has expired".to_string(),
        };
        log(
            Level::Error,
            format_args!(
                "acme: {name}: {why}; {serving}; next try in {} s (failure {})",
                pause.as_secs(),
                s.failures
            ),
        );
    }

    /// When `name`'s served certificate expires (0: none served).
    pub fn not_after(&self, name: &str) -> u64 {
        self.names.get(name).map_or(0, |s| s.not_after)
    }
}

/// The ACME thread, running: told to stop when dropped (it stops at its
/// next pause; an order under way is not waited for: its lock goes stale
/// and is broken by the next to order).
#[derive(Debug)]
pub struct Thread {
    stop: Stop,
}

impl Drop for Thread {
    fn drop(&mut self) {
        super::fleet::answer_from(None);
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
    }
}

/// Seconds since the Unix epoch, now.
fn now() -> u64 {
    certs::now()
}

/// Starts the ACME thread of `settings`: it serves what is stored, then
/// orders and renews as [`Manager::step`] says, its lines in `log`.
pub fn spawn(
    settings: Settings,
    client: Client,
    live: Arc<Live>,
    mut log: crate::log::Logger,
) -> std::io::Result<Thread> {
    let stop: Stop = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let told = Arc::clone(&stop);
    // The challenges other servers of a fleet publish in the storage are
    // answered here too, while the thread runs (those of a dead one's,
    // left there, removed).
    let storage = settings.storage.clone();
    let answers = Arc::clone(&live);
    std::thread::Builder::new()
        .name("acme".into())
        .spawn(move || {
            let mut say = |level: Level, args: std::fmt::Arguments<'_>| {
                log.log(level, args);
                log.flush();
            };
            let responder = Arc::new(super::fleet::Fleet {
                published: Published {
                    live: Arc::clone(&live),
                },
                storage: settings.storage.clone(),
                unstored: Default::default(),
            });
            let mut m = match Manager::new(settings, client, live, responder) {
                Ok(m) => m,
                Err(e) => {
                    return say(
                        Level::Error,
                        format_args!("{e}; no certificate will be ordered"),
                    )
                }
            };
            m.watch(&told);
            m.load_stored(now(), &mut say);
            let (stopped, wake) = &*told;
            loop {
                let pause = m.step(now(), &mut say);
                let guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = wake
                    .wait_timeout_while(guard, pause, |s| !*s)
                    .unwrap_or_else(|e| e.into_inner());
                if *guard {
                    return;
                }
            }
        })?;
    super::fleet::sweep(&storage, std::time::SystemTime::now());
    super::fleet::answer_from(Some(storage));
    answers.challenges_from(Some(Box::new(super::fleet::stored_alpn)));
    Ok(Thread { stop })
}

/// Whether a certificate for the host names `have_dns` and the addresses
/// `have_ips` is for exactly `names` (as `hosts` lists them): the local
/// certificate is made again when either changes.
fn same_names(names: &[String], have_dns: &[String], have_ips: &[std::net::IpAddr]) -> bool {
    let (mut dns, mut ips) = (Vec::new(), Vec::new());
    for n in names {
        match n.parse::<std::net::IpAddr>() {
            Ok(ip) => ips.push(ip),
            Err(_) => dns.push(n.to_ascii_lowercase()),
        }
    }
    let (mut have_dns, mut have_ips) = (have_dns.to_vec(), have_ips.to_vec());
    for v in [&mut dns, &mut have_dns] {
        v.sort();
        v.dedup();
    }
    for v in [&mut ips, &mut have_ips] {
        v.sort();
        v.dedup();
    }
    dns == have_dns && ips == have_ips
}

/// The stored certificate as rustls serves it, and its validity; an error
/// if it cannot be served at all (its key does not match, a file is not
/// what it should be). Whether it is valid now is the caller's to judge.
pub fn certified(stored: &Stored) -> Result<(Arc<CertifiedKey>, u64, u64), String> {
    let chain: Vec<CertificateDer<'static>> = stored
        .chain_pem
        .split_inclusive("-----END CERTIFICATE-----")
        .filter_map(|block| pem_der(block, "CERTIFICATE"))
        .map(CertificateDer::from)
        .collect();
    let leaf = chain.first().ok_or("no certificate in the chain")?;
    let facts = crate::tls::x509::parse(leaf).map_err(|e| e.to_string())?;
    let der = pem_der(&stored.key_pem, "PRIVATE KEY").ok_or("no PRIVATE KEY in key.pem")?;
    let signer = crate::tls::provider()
        .key_provider
        .load_private_key(PrivateKeyDer::Pkcs8(der.into()))
        .map_err(|e| format!("its key: {e}"))?;
    let key = CertifiedKey::new(chain, signer);
    key.keys_match()
        .map_err(|_| "its key does not match it".to_string())?;
    Ok((Arc::new(key), facts.not_before, facts.not_after))
}

/// [`certified`], and more: a certificate that can be served for `names`
/// at `now`: valid already, its key the one stored with it, every one of
/// `names` among its DNS names (the identifiers ordered: RFC 8555 §7.4
/// asks the CA for a certificate of them, and §7.4.2 hands back whatever
/// it issued, unchecked), and not expired unless `expired` may be (a
/// stored one at start: served, as nginx serves an expired file, until
/// its renewal comes, rather than no certificate at all).
pub fn usable(
    stored: &Stored,
    names: &[&str],
    now: u64,
    expired: bool,
) -> Result<(Arc<CertifiedKey>, u64, u64), String> {
    let (key, not_before, not_after) = certified(stored)?;
    if now >= not_after && !expired {
        return Err(format!("it expired on {}", certs::utc(not_after)));
    }
    // (`now` is when the step began: an order since may have taken
    // minutes, and the CA dates its certificate when it makes it.)
    if now.max(certs::now()) < not_before {
        return Err(format!("it is not valid before {}", certs::utc(not_before)));
    }
    let leaf = key.cert.first().ok_or("no certificate in the chain")?;
    let facts = crate::tls::x509::parse(leaf).map_err(|e| e.to_string())?;
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !facts.names.iter().any(|have| have.eq_ignore_case(n)))
        .collect();
    if !missing.is_empty() {
        let has = match facts.names.is_empty() {
            true => "no host name".to_string(),
            false => facts.names.join(", "),
        };
        return Err(format!("it is for {has}, not for {}", missing.join(", ")));
    }
    Ok((key, not_before, not_after))
}

/// Challenges published where brisk's listeners answer them: http-01
/// tokens in the process's table ([`http01_answer`]), tls-alpn-01
/// certificates in `live`.
#[derive(Debug)]
pub struct Published {
    /// Where tls-alpn-01 answers go.
    pub live: Arc<Live>,
}

/// The http-01 tokens being validated, and their key authorizations
/// (process-wide: the ACME thread writes, the workers read).
static TOKENS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The key authorization to answer at
/// `/.well-known/acme-challenge/{token}`, while it is being validated:
/// by this process, or by another server of its fleet (in the storage).
pub fn http01_answer(token: &str) -> Option<String> {
    let held = {
        let tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
        tokens
            .iter()
            .find(|(t, _)| t == token)
            .map(|(_, ka)| ka.clone())
    };
    held.or_else(|| super::fleet::stored_http01(token))
}

impl Responder for Published {
    fn publish(&self, c: &Challenge) {
        match c {
            Challenge::Http01 {
                token,
                key_authorization,
            } => {
                let mut tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
                tokens.push((token.clone(), key_authorization.clone()));
            }
            Challenge::TlsAlpn01 {
                name,
                certificate,
                key,
                ..
            } => {
                let signer = crate::tls::provider()
                    .key_provider
                    .load_private_key(PrivateKeyDer::Pkcs8(key.clone().into()));
                if let Ok(signer) = signer {
                    let chain = vec![CertificateDer::from(certificate.clone())];
                    self.live
                        .challenge(name, Some(Arc::new(CertifiedKey::new(chain, signer))));
                }
            }
        }
    }

    fn withdraw(&self, c: &Challenge) {
        match c {
            Challenge::Http01 { token, .. } => {
                let mut tokens = TOKENS.lock().unwrap_or_else(|e| e.into_inner());
                tokens.retain(|(t, _)| t != token);
            }
            Challenge::TlsAlpn01 { name, .. } => self.live.challenge(name, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::client::{HTTP_01, TLS_ALPN_01};
    use super::super::fake_ca::{self, FakeCa, Mode};

    /// A manager of `e.test` in front of `ca`, its storage empty, both
    /// challenge kinds allowed (tls-alpn-01 first, as by default).
    fn manager_at(ca: &FakeCa, tag: &str) -> Manager {
        let storage =
            std::env::temp_dir().join(format!("brisk-acme-mgr-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&storage);
        ca.storages.borrow_mut().push(storage.clone());
        let settings = Settings {
            directory: ca.url.clone(),
            email: None,
            names: vec!["e.test".into()],
            kinds: vec![TLS_ALPN_01, HTTP_01],
            storage,
            jail: None,
            holder: "test 1".into(),
            local: Vec::new(),
            key_type: Default::default(),
            eab: None,
        };
        let live = Arc::new(Live::default());
        let client = Client::new(rustls::RootCertStore::empty(), Duration::from_secs(5)).unwrap();
        let responder = Arc::new(Published {
            live: Arc::clone(&live),
        });
        Manager::new(settings, client, live, responder).unwrap()
    }

    /// The lines a step logs, with their levels.
    fn stepped(m: &mut Manager, now: u64) -> Vec<String> {
        let mut lines = Vec::new();
        let mut log = |l: Level, a: std::fmt::Arguments<'_>| lines.push(format!("{l:?} {a}"));
        m.step(now, &mut log);
        lines
    }

    fn stored_chain(m: &Manager) -> Option<String> {
        m.store.certificate("e.test").unwrap().map(|s| s.chain_pem)
    }

    #[test]
    fn an_unusable_certificate_is_a_failure_that_backs_off_and_replaces_nothing() {
        let ca = fake_ca::start(Mode::Expired);
        let mut m = manager_at(&ca, "expired");
        let t = certs::now();
        let lines = stepped(&mut m, t);
        assert_eq!(ca.orders(), 1);
        assert!(
            lines.iter().any(|l| l.starts_with("Error acme: e.test: the CA issued a certificate brisk cannot serve: it expired on ")
                && l.ends_with("; no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)")),
            "{lines:?}"
        );
        assert_eq!(stored_chain(&m), None);
        assert!(m.live.issued("e.test").is_none());
        // Backed off: not ordered again before the minute is out.
        stepped(&mut m, t + 1);
        stepped(&mut m, t + 59);
        assert_eq!(ca.orders(), 1);
        stepped(&mut m, t + 60);
        assert_eq!(ca.orders(), 2);

        // A good one, then the CA goes wrong at the renewal: the good
        // one stays, on disk and served.
        *ca.mode.lock().unwrap() = Mode::Good;
        let lines = stepped(&mut m, t + 180);
        assert_eq!(ca.orders(), 3, "{lines:?}");
        let good = stored_chain(&m).unwrap();
        let served = m.live.issued("e.test").unwrap();
        *ca.mode.lock().unwrap() = Mode::OtherKey;
        let later = t + 61 * 86_400;
        let lines = stepped(&mut m, later);
        assert_eq!(ca.orders(), 4);
        assert!(
            lines.iter().any(|l| l.contains(
                "the CA issued a certificate brisk cannot serve: its key does not match it; still serving the one valid until"
            )),
            "{lines:?}"
        );
        assert_eq!(stored_chain(&m).unwrap(), good);
        assert!(Arc::ptr_eq(&m.live.issued("e.test").unwrap(), &served));
        stepped(&mut m, later + 30);
        assert_eq!(ca.orders(), 4);
    }

    /// A certificate the storage does not take (full, read-only, another
    /// owner's) is served from memory, with an error line, and not ordered
    /// again: it was thrown away and ordered at every try (three issued,
    /// one stored, in half an hour), toward the CA's weekly limit.
    #[test]
    fn a_certificate_the_storage_refuses_is_served_from_memory_not_ordered_again() {
        let ca = fake_ca::start(Mode::Good);
        let mut m = manager_at(&ca, "unstorable");
        let dir = m.store.cert_dir("e.test").unwrap();
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        std::fs::write(&dir, b"in the way").unwrap();
        let t = certs::now();
        let lines = stepped(&mut m, t);
        assert_eq!(ca.orders(), 1);
        assert!(
            lines.iter().any(|l| l
                .starts_with("Error acme: e.test: cannot store its new certificate: ")
                && l.ends_with(
                    "; serving it from memory (a restart will not find it: mend the storage)"
                )),
            "{lines:?}"
        );
        assert!(m.live.issued("e.test").is_some(), "{lines:?}");
        stepped(&mut m, t + 60);
        stepped(&mut m, t + 3_600);
        assert_eq!(ca.orders(), 1, "ordered again");
    }

    /// A stored certificate that expired (its renewal failed while the
    /// CA was down, then brisk restarted) is served until a new one
    /// comes, as nginx serves an expired file, with a warning: "at start
    /// it serves the certificates in storage, whatever their age". It
    /// was not served: no certificate at all for the name.
    #[test]
    fn an_expired_stored_certificate_is_served_until_its_renewal() {
        let ca = fake_ca::start(Mode::Good);
        let mut other = manager_at(&ca, "expired-stored-from");
        stepped(&mut other, certs::now());
        let good = other.store.certificate("e.test").unwrap().unwrap();
        let (_, _, not_after) = certified(&good).unwrap();
        let mut m = manager_at(&ca, "expired-stored");
        m.store.save_certificate("e.test", &good).unwrap();
        let mut lines = Vec::new();
        let mut log = |l: Level, a: std::fmt::Arguments<'_>| lines.push(format!("{l:?} {a}"));
        assert!(m.serve_stored("e.test", not_after + 1, &mut log));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "Warn acme: e.test: serving the stored certificate, which expired on "
            ) && lines[0].ends_with(", until its renewal comes (clients refuse it meanwhile)"),
            "{lines:?}"
        );
        assert!(m.live.issued("e.test").is_some());
    }

    #[test]
    fn a_certificate_for_other_names_than_those_ordered_is_refused() {
        let ca = fake_ca::start(Mode::OtherName);
        let mut m = manager_at(&ca, "othername");
        let lines = stepped(&mut m, certs::now());
        assert!(
            lines.iter().any(|l| l.starts_with(
                "Error acme: e.test: the CA issued a certificate brisk cannot serve: it is for other.test, not for e.test; no certificate for it yet"
            )),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("serving")), "{lines:?}");
        assert_eq!(stored_chain(&m), None);
        assert!(m.live.issued("e.test").is_none());
        // Nor is one stored for the name served (another server's, or
        // one stored before brisk checked).
        *ca.mode.lock().unwrap() = Mode::Good;
        let mut other = manager_at(&ca, "othername-good");
        stepped(&mut other, certs::now());
        let good = other.store.certificate("e.test").unwrap().unwrap();
        let mut lines = Vec::new();
        let mut log = |l: Level, a: std::fmt::Arguments<'_>| lines.push(format!("{l:?} {a}"));
        assert!(usable(&good, &["e.test"], certs::now(), false).is_ok());
        let e = usable(&good, &["e.test", "f.test"], certs::now(), false).err();
        assert_eq!(e.as_deref(), Some("it is for e.test, not for f.test"));
        m.store.save_certificate("e.test", &good).unwrap();
        m.store.save_certificate("f.test", &good).unwrap();
        assert!(!m.serve_stored("f.test", certs::now(), &mut log));
        assert!(m.serve_stored("e.test", certs::now(), &mut log));
        let chain = m.store.cert_dir("f.test").unwrap().join("chain.pem");
        assert_eq!(
            lines[0],
            format!(
                "Warn acme: f.test: the stored certificate ({}) is not served: it is for e.test, not for f.test",
                chain.display()
            ),
        );
    }

    #[test]
    fn a_stored_certificate_that_cannot_be_served_is_said_once_not_at_each_look() {
        let ca = fake_ca::start(Mode::Good);
        let mut other = manager_at(&ca, "said-once-good");
        stepped(&mut other, certs::now());
        let good = other.store.certificate("e.test").unwrap().unwrap();
        let mut m = manager_at(&ca, "said-once");
        m.store.save_certificate("f.test", &good).unwrap();
        let mut lines = Vec::new();
        let mut log = |l: Level, a: std::fmt::Arguments<'_>| lines.push(format!("{l:?} {a}"));
        // At start, before the lock, after it: one line, not three.
        for _ in 0..3 {
            assert!(!m.serve_stored("f.test", certs::now(), &mut log));
        }
        // Another fault is said again; so is the first once it was fixed
        // and came back.
        let mut broken = good.clone();
        broken.chain_pem.clear();
        m.store.save_certificate("f.test", &broken).unwrap();
        assert!(!m.serve_stored("f.test", certs::now(), &mut log));
        m.store.save_certificate("f.test", &good).unwrap();
        assert!(!m.serve_stored("f.test", certs::now(), &mut log));
        let said: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("is not served"))
            .collect();
        assert_eq!(said.len(), 3, "{lines:?}");
        assert!(
            said[0].ends_with("it is for e.test, not for f.test"),
            "{said:?}"
        );
        assert!(
            said[2].ends_with("it is for e.test, not for f.test"),
            "{said:?}"
        );
    }

    #[test]
    fn a_name_no_longer_looked_after_is_served_no_more() {
        let ca = fake_ca::start(Mode::Good);
        let mut m = manager_at(&ca, "kept");
        stepped(&mut m, certs::now());
        let key = m.live.issued("e.test").unwrap();
        // As a reload finds it: the process's live set still serving a
        // name taken out of `hosts`, and the local CA's default.
        let live = Arc::clone(&m.live);
        live.set(
            &["gone.test".into(), "E.test".into()],
            Some(Arc::clone(&key)),
        );
        live.set_default(Some(Arc::clone(&key)));
        let responder = Arc::new(Published {
            live: Arc::clone(&live),
        });
        let mut next = Manager::new(
            m.settings.clone(),
            m.client.clone(),
            Arc::clone(&live),
            responder,
        )
        .unwrap();
        let mut log = |_: Level, _: std::fmt::Arguments<'_>| {};
        next.load_stored(certs::now(), &mut log);
        assert!(live.issued("gone.test").is_none());
        assert!(live.issued("e.test").is_some());
        assert!(live.default_key().is_none());
    }

    #[test]
    fn a_certificate_just_obtained_is_not_renewed_again_for_hours_whatever_ari_says() {
        let ca = fake_ca::start(Mode::Good);
        let mut m = manager_at(&ca, "aripast");
        let t = certs::now();
        stepped(&mut m, t);
        assert_eq!(ca.orders(), 1);
        // The CA's window for it is in the past (as `ask_one` keeps it:
        // the fake CA's certificates have no identifier to ask with).
        let s = m.names.get_mut("e.test").unwrap();
        (s.ari_window, s.ari_at) = ((1, 2), 1);
        stepped(&mut m, t + 1);
        stepped(&mut m, t + 3600);
        assert_eq!(ca.orders(), 1);
        stepped(&mut m, t + RENEWED_NO_SOONER.as_secs());
        assert_eq!(ca.orders(), 2);
        // One found stored (not obtained here) is renewed at once.
        let mut other = manager_at(&ca, "aripast-stored");
        let stored = m.store.certificate("e.test").unwrap().unwrap();
        other.store.save_certificate("e.test", &stored).unwrap();
        other.load_stored(t, &mut |_, _| {});
        let s = other.names.get_mut("e.test").unwrap();
        (s.ari_window, s.ari_at, s.ari_check) = ((1, 2), 1, None);
        stepped(&mut other, t + 1);
        assert_eq!(ca.orders(), 3);
    }

    #[test]
    fn after_a_failed_validation_the_next_try_takes_the_other_kind() {
        let ca = fake_ca::start(Mode::Good);
        ca.alpn_fails
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let mut m = manager_at(&ca, "alternate");
        let t = certs::now();
        let lines = stepped(&mut m, t);
        assert!(
            lines.iter().any(|l| l.starts_with(
                "Error acme: e.test: tls-alpn-01 validation: urn:ietf:params:acme:error:connection (0): 127.0.0.1: Connection refused;"
            )),
            "{lines:?}"
        );
        let lines = stepped(&mut m, t + 60);
        assert!(
            lines.contains(
                &"Info acme: e.test: its tls-alpn-01 validation failed last time: trying http-01 first"
                    .to_string()
            ),
            "{lines:?}"
        );
        assert!(m.live.issued("e.test").is_some(), "{lines:?}");
        assert_eq!(
            ca.seen.lock().unwrap().challenges,
            ["tls-alpn-01", "http-01"]
        );
    }

    /// `m` started again on its storage, with `name` to order.
    fn restarted(m: &Manager, name: &str) -> Manager {
        let live = Arc::new(Live::default());
        let client = Client::new(rustls::RootCertStore::empty(), Duration::from_secs(5)).unwrap();
        let responder = Arc::new(Published {
            live: Arc::clone(&live),
        });
        let settings = Settings {
            names: vec![name.into()],
            ..m.settings.clone()
        };
        Manager::new(settings, client, live, responder).unwrap()
    }

    /// RFC 8555 §7.3.4: the binding goes with the request that makes
    /// the account, and only with it; a CA that requires one and none
    /// configured is said at once, without asking for an account.
    #[test]
    fn an_external_account_binding_goes_with_a_new_account_only() {
        let ca = fake_ca::start(Mode::Good);
        ca.eab_required
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let mut m = manager_at(&ca, "eab");
        let t = certs::now();
        let lines = stepped(&mut m, t);
        let want = format!(
            "Error acme: e.test: the CA {} requires an external account binding to make an account (RFC 8555 §7.3.4): set eab_kid and eab_hmac_key (or eab_hmac_key_file) in [acme] to the key ID and MAC key the CA gives with your account at its site; no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)",
            ca.url
        );
        assert!(lines.contains(&want), "{lines:?}");
        assert!(ca.seen.lock().unwrap().bound.is_empty());

        // Configured (a reload): the new account is bound.
        m.settings.eab = Some(Eab {
            kid: "kid-1".into(),
            hmac_key: vec![1; 32],
        });
        let lines = stepped(&mut m, t + 60);
        assert!(m.live.issued("e.test").is_some(), "{lines:?}");
        assert_eq!(ca.seen.lock().unwrap().bound, [true]);

        // A restart with a name to order: the stored account is found
        // by its key, unbound.
        let mut again = restarted(&m, "f.test");
        let lines = stepped(&mut again, t + 120);
        assert!(again.live.issued("f.test").is_some(), "{lines:?}");
        assert_eq!(ca.seen.lock().unwrap().bound, [true, false]);
    }

    /// Servers of a fleet starting together make one account key and
    /// register it once: the first registration is made under the
    /// storage's account lock (concurrent ones for one key made Pebble
    /// answer 500); later starts, finding its URL stored, take no lock.
    #[test]
    fn a_new_account_is_registered_under_the_storage_s_account_lock() {
        let ca = fake_ca::start(Mode::Good);
        let mut m = manager_at(&ca, "acctlock");
        let lock = m.settings.storage.join("locks").join("account.lock");
        ca.seen.lock().unwrap().watch = Some(lock.clone());
        let t = certs::now();
        let lines = stepped(&mut m, t);
        assert!(m.live.issued("e.test").is_some(), "{lines:?}");
        assert_eq!(ca.seen.lock().unwrap().watched, [true]);
        assert!(!lock.exists());

        // A restart: the stored account is registered again (found by
        // its key), without the lock.
        let mut again = restarted(&m, "f.test");
        let lines = stepped(&mut again, t + 60);
        assert!(again.live.issued("f.test").is_some(), "{lines:?}");
        assert_eq!(ca.seen.lock().unwrap().watched, [true, false]);
    }

    #[test]
    fn its_own_lock_held_by_the_thread_before_a_reload_is_said_so() {
        let ca = fake_ca::start(Mode::Good);
        let mut m = manager_at(&ca, "ownlock");
        let held = m.store.lock("e.test", "test 1").unwrap().unwrap();
        let lines = stepped(&mut m, certs::now());
        assert_eq!(
            lines,
            ["Info acme: e.test: its order from before the reload is still under way; looking again in 10 s"]
        );
        drop(held);
        let held = m.store.lock("e.test", "other 2").unwrap().unwrap();
        let lines = stepped(&mut m, certs::now() + 10);
        assert_eq!(
            lines,
            ["Info acme: e.test: another server orders it (its lock is held by other 2); looking again in 10 s"]
        );
        drop(held);
    }

    #[test]
    fn renewal_is_due_two_thirds_through() {
        let s = NameState {
            not_before: 1_000,
            not_after: 1_000 + 90 * 86_400,
            ..NameState::default()
        };
        assert_eq!(s.renew_at(), 1_000 + 60 * 86_400);
        assert_eq!(NameState::default().renew_at(), 0);
        let waiting = NameState {
            wait_until: 5,
            ..NameState::default()
        };
        assert_eq!(waiting.due(), 5);
    }

    #[test]
    fn ari_brings_the_renewal_forward_never_back_and_its_next_question_is_due() {
        let day = 86_400;
        let mut s = NameState {
            not_before: 1_000,
            not_after: 1_000 + 90 * day,
            ari_check: Some(1_000 + 6 * 3600),
            ari_at: 1_000 + 30 * day,
            ..NameState::default()
        };
        assert_eq!(s.renew_at(), 1_000 + 30 * day);
        assert_eq!(s.due(), 1_000 + 6 * 3600);
        s.ari_at = 1_000 + 70 * day;
        assert_eq!(s.renew_at(), 1_000 + 60 * day);
        s.ari_check = None;
        s.wait_until = 1_000 + 61 * day;
        assert_eq!(s.renewal_due(), 1_000 + 61 * day);
        assert_eq!(s.due(), 1_000 + 61 * day);
    }

    #[test]
    fn the_local_certificate_is_compared_by_names_and_addresses() {
        let dns = ["localhost".to_string()];
        let ips = ["127.0.0.1".parse().unwrap()];
        let same = |h: &[&str]| {
            let hosts: Vec<String> = h.iter().map(|s| s.to_string()).collect();
            same_names(&hosts, &dns, &ips)
        };
        assert!(same(&["127.0.0.1", "localhost"]));
        assert!(!same(&["localhost", "127.0.0.1", "127.0.0.2"]));
        assert!(!same(&["localhost"]));
        assert!(!same(&["127.0.0.1"]));
    }

    #[test]
    fn http01_tokens_are_answered_while_published() {
        let p = Published {
            live: Arc::default(),
        };
        let c = Challenge::Http01 {
            token: "tok-manager-test".into(),
            key_authorization: "tok-manager-test.thumb".into(),
        };
        assert_eq!(http01_answer("tok-manager-test"), None);
        p.publish(&c);
        assert_eq!(
            http01_answer("tok-manager-test").as_deref(),
            Some("tok-manager-test.thumb")
        );
        p.withdraw(&c);
        assert_eq!(http01_answer("tok-manager-test"), None);
    }
}
