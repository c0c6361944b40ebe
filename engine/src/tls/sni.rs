//! Which certificate a ClientHello gets: the one whose subjectAltName
//! covers the SNI name (an exact name first, then a wildcard one level
//! deep, RFC 6125 §6.4.3), else the first configured one, which is also
//! what clients without SNI get (nginx's default server, in effect).

use std::sync::Arc;

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
}

impl ByName {
    /// The table for `certs` (at least one). When two certificates name
    /// the same host, the first in the file wins.
    pub fn new(certs: &[Certificate]) -> ByName {
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
}

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.keys.get(self.index_for(hello.server_name())).cloned()
    }
}
