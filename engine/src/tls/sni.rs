//! Which certificate a ClientHello gets: the one whose subjectAltName
//! covers the SNI name (an exact name first, then a wildcard one level
//! deep, RFC 6125 §6.4.3), else one obtained while the server runs
//! ([`Live`]: ACME's), else the first configured one, which is also what
//! clients without SNI get (nginx's default server, in effect). With no
//! certificate at all for a name the handshake fails at once (rustls
//! sends an alert), never hangs.
//!
//! A ClientHello that offers only the ALPN protocol `acme-tls/1` is a CA
//! validating a tls-alpn-01 challenge (RFC 8737 §3): it gets the
//! challenge's certificate for its SNI name, or none.

#[cfg(feature = "acme")]
use crate::ascii::IgnoreCase;
#[cfg(feature = "acme")]
use std::collections::HashMap;
use std::sync::Arc;
#[cfg(feature = "acme")]
use std::sync::RwLock;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::Certificate;

/// The certificates of one configuration, by name.
#[derive(Debug)]
pub struct ByName {
    /// (name, index into `keys`), exact names and `*.` names alike,
    /// sorted by name for a binary search.
    names: Vec<(String, usize)>,
    /// In configuration order; the first is the default.
    keys: Vec<Arc<CertifiedKey>>,
    /// Those obtained while the server runs, shared by every generation.
    live: Arc<Live>,
}

/// The ALPN protocol of tls-alpn-01 validations (RFC 8737 §6.2).
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Certificates that come and go while the server runs, by exact name:
/// those ACME obtains and renews (a renewed one replaces the old for new
/// handshakes; connections made with the old keep it), and the
/// tls-alpn-01 challenges' while they are validated. Made once per
/// process and kept across reloads.
/// (Empty without the cargo feature `acme`: nothing is obtained then.)
#[derive(Default)]
pub struct Live {
    #[cfg(feature = "acme")]
    issued: RwLock<HashMap<String, Arc<CertifiedKey>>>,
    #[cfg(feature = "acme")]
    challenges: RwLock<HashMap<String, Arc<CertifiedKey>>>,
    /// For clients that name no server (an address in the URL, where
    /// SNI cannot name it) when no certificate is configured: the local
    /// CA's.
    #[cfg(feature = "acme")]
    default: RwLock<Option<Arc<CertifiedKey>>>,
    /// Where a tls-alpn-01 answer not held here is looked for: the
    /// storage a fleet shares, where the server that orders a name writes
    /// its challenges (ACME installs it: `tls` cannot name `acme`).
    #[cfg(feature = "acme")]
    elsewhere: RwLock<Option<Box<ChallengeSource>>>,
}

/// Finds the tls-alpn-01 answer for a name (lower-case) that another
/// process published, if any (see [`Live::challenges_from`]).
#[cfg(feature = "acme")]
pub type ChallengeSource = dyn Fn(&str) -> Option<Arc<CertifiedKey>> + Send + Sync;

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live { .. }")
    }
}

#[cfg(feature = "acme")]
impl Live {
    /// Serves `key` for `names` from now on (none: stops serving them).
    pub fn set(&self, names: &[String], key: Option<Arc<CertifiedKey>>) {
        let mut issued = self.issued.write().unwrap_or_else(|e| e.into_inner());
        for name in names {
            match &key {
                Some(k) => issued.insert(name.to_ascii_lowercase(), Arc::clone(k)),
                None => issued.remove(&name.to_ascii_lowercase()),
            };
        }
    }

    /// Serves nothing more for the names not in `kept` (compared
    /// without case), nor, with `default` false, to clients without SNI:
    /// what a reload took out of ACME's hands is then served as after a
    /// restart (the process keeps one `Live` across reloads).
    pub fn keep_only(&self, kept: &[String], default: bool) {
        let mut issued = self.issued.write().unwrap_or_else(|e| e.into_inner());
        issued.retain(|name, _| kept.iter().any(|k| k.eq_ignore_case(name)));
        drop(issued);
        if !default {
            self.set_default(None);
        }
    }

    /// Answers tls-alpn-01 validations of `name` with `key` (none: no
    /// more).
    pub fn challenge(&self, name: &str, key: Option<Arc<CertifiedKey>>) {
        let mut c = self.challenges.write().unwrap_or_else(|e| e.into_inner());
        match key {
            Some(k) => c.insert(name.to_ascii_lowercase(), k),
            None => c.remove(&name.to_ascii_lowercase()),
        };
    }

    /// The certificate served for `name`, if one is.
    pub fn issued(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        let issued = self.issued.read().unwrap_or_else(|e| e.into_inner());
        issued.get(name).cloned()
    }

    /// Serves `key` to clients without SNI when no certificate is
    /// configured.
    pub fn set_default(&self, key: Option<Arc<CertifiedKey>>) {
        *self.default.write().unwrap_or_else(|e| e.into_inner()) = key;
    }

    /// The certificate for clients without SNI, if one is set.
    pub fn default_key(&self) -> Option<Arc<CertifiedKey>> {
        self.default
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Looks in `source` for the tls-alpn-01 answers this process does
    /// not hold (none: only those it holds are answered).
    pub fn challenges_from(&self, source: Option<Box<ChallengeSource>>) {
        *self.elsewhere.write().unwrap_or_else(|e| e.into_inner()) = source;
    }

    fn challenge_for(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        let held = {
            let c = self.challenges.read().unwrap_or_else(|e| e.into_inner());
            c.get(name).cloned()
        };
        held.or_else(|| {
            let source = self.elsewhere.read().unwrap_or_else(|e| e.into_inner());
            source.as_ref().and_then(|find| find(name))
        })
    }
}

#[cfg(not(feature = "acme"))]
impl Live {
    /// (None without the feature `acme`.)
    pub fn issued(&self, _name: &str) -> Option<Arc<CertifiedKey>> {
        None
    }

    fn challenge_for(&self, _name: &str) -> Option<Arc<CertifiedKey>> {
        None
    }

    /// (None without the feature `acme`.)
    pub fn default_key(&self) -> Option<Arc<CertifiedKey>> {
        None
    }
}

impl ByName {
    /// The table for `certs` (at least one) and nothing obtained while
    /// running. When two certificates name the same host, the first in
    /// the file wins.
    pub fn new(certs: &[Certificate]) -> ByName {
        ByName::with_live(certs, Arc::default())
    }

    /// The table for `certs` (maybe none), and those `live` holds.
    pub fn with_live(certs: &[Certificate], live: Arc<Live>) -> ByName {
        let mut names: Vec<(String, usize)> = Vec::new();
        for (i, cert) in certs.iter().enumerate() {
            for name in &cert.names {
                if !names.iter().any(|(n, _)| n == name) {
                    names.push((name.clone(), i));
                }
            }
        }
        crate::sort::sort_by(&mut names, |a, b| a.cmp(b));
        ByName {
            names,
            keys: certs.iter().map(|c| Arc::clone(&c.key)).collect(),
            live,
        }
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.names
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| self.names[i].1)
    }

    /// The index of the certificate for `sni` (already lower-cased by
    /// rustls, without a trailing dot).
    pub fn index_for(&self, sni: Option<&str>) -> usize {
        let Some(host) = sni else {
            return 0;
        };
        if let Some(i) = self.find(host) {
            return i;
        }
        // `*.example.org` covers `www.example.org`, not `example.org` nor
        // `a.b.example.org`.
        if let Some(dot) = host.find('.') {
            let mut wild = String::with_capacity(host.len() + 1 - dot);
            wild.push('*');
            wild.push_str(&host[dot..]);
            if let Some(i) = self.find(&wild) {
                return i;
            }
        }
        0
    }

    /// Whether a configured certificate names `host` exactly (it is then
    /// served for `host` before any obtained while running).
    pub fn names(&self, host: &str) -> bool {
        self.find(host).is_some()
    }

    /// Whether a configured certificate is for `host` (exactly, or by a
    /// wildcard), rather than the default for any name.
    pub fn covers(&self, host: &str) -> bool {
        let wild = |dot: usize| self.find(&format!("*{}", &host[dot..])).is_some();
        self.find(host).is_some() || host.find('.').is_some_and(wild)
    }

    /// Whether a ClientHello naming `sni` gets the configured
    /// certificate that one naming `host` would get, and that
    /// certificate is for both by name (exactly or by a wildcard): a
    /// client that verified it for `sni` may send `host`'s requests on
    /// that connection (RFC 9113 §9.1.1, RFC 9114 §3.3), as browsers do
    /// for two names one certificate covers. Both lower case, without a
    /// port or trailing dot. Certificates obtained while running are not
    /// known here: a table with any is asked only without them.
    pub fn one_for_both(&self, sni: &str, host: &str) -> bool {
        self.covers(sni)
            && self.covers(host)
            && self.live.issued(sni).is_none()
            && self.live.issued(host).is_none()
            && self.index_for(Some(sni)) == self.index_for(Some(host))
    }

    /// The certificate for a ClientHello naming `sni` and offering the
    /// ALPN protocols `alpn` (none: no ALPN extension).
    pub fn pick(
        &self,
        sni: Option<&str>,
        mut alpn: Option<impl Iterator<Item = impl AsRef<[u8]>>>,
    ) -> Option<Arc<CertifiedKey>> {
        let only_acme = cfg!(feature = "acme")
            && alpn.as_mut().is_some_and(|a| {
                let mut n = 0;
                let all_acme = a.all(|p| {
                    n += 1;
                    p.as_ref() == ACME_TLS_ALPN
                });
                all_acme && n > 0
            });
        if only_acme {
            return sni.and_then(|name| self.live.challenge_for(name));
        }
        let exact = sni.and_then(|name| self.find(name));
        if let Some(i) = exact {
            return self.keys.get(i).cloned();
        }
        if let Some(k) = sni.and_then(|name| self.live.issued(name)) {
            return Some(k);
        }
        let configured = self.keys.get(self.index_for(sni)).cloned();
        match (configured, sni) {
            (None, None) => self.live.default_key(),
            (configured, _) => configured,
        }
    }
}

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = hello.server_name();
        HEARD.with(|h| *h.borrow_mut() = Some(name.map(normalized)));
        let picked = self.pick(name, hello.alpn());
        UNRESOLVED.with(|u| u.set(picked.is_none()));
        picked
    }
}

thread_local! {
    /// Whether the last ClientHello rustls asked for a certificate on
    /// this thread, since the last [`unresolved`], got none.
    static UNRESOLVED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the ClientHello rustls asked a certificate for on this thread
/// since the last call got none (rustls then refuses the handshake with
/// access_denied, which `super::conn` replaces: see there).
pub fn unresolved() -> bool {
    UNRESOLVED.with(|u| u.replace(false))
}

thread_local! {
    /// The server name of the last ClientHello rustls chose a
    /// certificate for on this thread, since the last [`heard`].
    static HEARD: std::cell::RefCell<Option<Option<Box<str>>>> =
        const { std::cell::RefCell::new(None) };
}

/// The server name (lower case, no trailing dot; `Some(None)`: none) of
/// the ClientHello rustls chose a certificate for on this thread since
/// the last call, if it did: rustls reads it from the whole hello,
/// however many records carried it, and its unbuffered connection does
/// not tell it otherwise. The connection driven since the last call
/// takes it (`super::conn`), as it takes its secrets.
pub fn heard() -> Option<Option<Box<str>>> {
    HEARD.with(|h| h.borrow_mut().take())
}

/// `name` as the router compares it: lower case, no trailing dot.
fn normalized(name: &str) -> Box<str> {
    name.strip_suffix('.')
        .unwrap_or(name)
        .to_ascii_lowercase()
        .into()
}

#[cfg(all(test, feature = "acme"))]
mod tests {
    use super::*;
    use crate::tls::testing::certificate;

    type Offered = std::iter::Copied<std::slice::Iter<'static, &'static [u8]>>;

    fn alpn(protocols: &'static [&'static [u8]]) -> Option<Offered> {
        Some(protocols.iter().copied())
    }

    const NONE: Option<Offered> = None;

    #[test]
    fn configured_names_then_live_ones_then_the_default() {
        let (a, b, c) = (certificate("a"), certificate("b"), certificate("c"));
        let live = Arc::new(Live::default());
        let table = ByName::with_live(std::slice::from_ref(&a), Arc::clone(&live));
        let is = |got: Option<Arc<CertifiedKey>>, want: &crate::tls::Certificate| {
            got.is_some_and(|k| Arc::ptr_eq(&k, &want.key))
        };
        assert!(
            is(table.pick(Some("b.test"), NONE), &a),
            "the default before"
        );
        live.set(&["b.test".into()], Some(Arc::clone(&b.key)));
        assert!(is(table.pick(Some("b.test"), alpn(&[b"h2"])), &b));
        assert!(is(table.pick(Some("a.test"), NONE), &a));
        // A live one never shadows a configured name, wildcards included.
        live.set(&["www.a.test".into()], Some(Arc::clone(&c.key)));
        assert!(is(table.pick(Some("www.a.test"), NONE), &c));
        live.set(&["b.test".into(), "www.a.test".into()], None);
        assert!(is(table.pick(Some("b.test"), NONE), &a));
        assert!(is(table.pick(Some("www.a.test"), NONE), &a), "*.a.test");

        // With no configured certificate, a name without one gets none:
        // the handshake fails at once.
        let bare = ByName::with_live(&[], Arc::clone(&live));
        assert!(bare.pick(Some("b.test"), NONE).is_none());
        assert!(bare.pick(None, NONE).is_none());
        live.set(&["b.test".into()], Some(Arc::clone(&b.key)));
        assert!(is(bare.pick(Some("b.test"), NONE), &b));
    }

    #[test]
    fn only_acme_tls_alpn_gets_the_challenge_certificate() {
        let (a, c) = (certificate("a"), certificate("c"));
        let live = Arc::new(Live::default());
        let table = ByName::with_live(std::slice::from_ref(&a), Arc::clone(&live));
        assert!(table.pick(Some("a.test"), alpn(&[ACME_TLS_ALPN])).is_none());
        live.challenge("A.test", Some(Arc::clone(&c.key)));
        let got = table.pick(Some("a.test"), alpn(&[ACME_TLS_ALPN])).unwrap();
        assert!(Arc::ptr_eq(&got, &c.key));
        // Offered beside another protocol, or with no name: not a
        // validation.
        let other = table
            .pick(Some("a.test"), alpn(&[b"h2", ACME_TLS_ALPN]))
            .unwrap();
        assert!(Arc::ptr_eq(&other, &a.key));
        assert!(table.pick(None, alpn(&[ACME_TLS_ALPN])).is_none());
        live.challenge("a.test", None);
        assert!(table.pick(Some("a.test"), alpn(&[ACME_TLS_ALPN])).is_none());
    }

    #[test]
    fn a_challenge_not_held_here_is_looked_for_elsewhere() {
        let (a, c) = (certificate("a"), certificate("c"));
        let live = Arc::new(Live::default());
        let table = ByName::with_live(std::slice::from_ref(&a), Arc::clone(&live));
        let theirs = Arc::clone(&c.key);
        live.challenges_from(Some(Box::new(move |name: &str| {
            (name == "b.test").then(|| Arc::clone(&theirs))
        })));
        let got = table.pick(Some("b.test"), alpn(&[ACME_TLS_ALPN])).unwrap();
        assert!(Arc::ptr_eq(&got, &c.key));
        assert!(table.pick(Some("x.test"), alpn(&[ACME_TLS_ALPN])).is_none());
        // Not for other handshakes; one held here comes first.
        let other = table.pick(Some("b.test"), alpn(&[b"h2"])).unwrap();
        assert!(Arc::ptr_eq(&other, &a.key));
        live.challenge("b.test", Some(Arc::clone(&a.key)));
        let held = table.pick(Some("b.test"), alpn(&[ACME_TLS_ALPN])).unwrap();
        assert!(Arc::ptr_eq(&held, &a.key));
        live.challenge("b.test", None);
        live.challenges_from(None);
        assert!(table.pick(Some("b.test"), alpn(&[ACME_TLS_ALPN])).is_none());
    }
}
