//! `[proxy]`: listeners whose clients are load balancers that open each
//! connection with a PROXY protocol header (`listen`; `tls_listen` where
//! TLS follows the header), and the peers whose
//! `Forwarded` / `X-Forwarded-For` / `X-Forwarded-Proto` headers are
//! believed (`trusted`, CIDR ranges). See `access::proxy`.

use std::net::SocketAddr;

use toml::de::DeValue;
use toml::Spanned;

use super::load::{sorted, Loader};
use super::{ConfigError, ProxyConfig};
use crate::access::proxy::forwarded::By;
use crate::access::proxy::{Cidr, Trusted};

pub(super) const PROXY_KEYS: &[&str] = &["listen", "tls_listen", "trusted", "header"];

/// What `[proxy]` said, and where: errors about its listeners name it.
pub(crate) struct ProxySection {
    pub(crate) config: ProxyConfig,
    /// Where `proxy.listen` was set.
    pub(crate) listen_origin: Option<String>,
    /// Where `proxy.tls_listen` was set.
    pub(crate) tls_listen_origin: Option<String>,
    /// Where each address of both was set.
    pub(crate) listen_at: Vec<(SocketAddr, String)>,
}

impl Loader<'_> {
    pub(super) fn proxy(&self, v: &Spanned<DeValue<'_>>) -> Result<ProxySection, ConfigError> {
        let mut section = ProxySection {
            config: ProxyConfig::default(),
            listen_origin: None,
            tls_listen_origin: None,
            listen_at: Vec::new(),
        };
        for (key, value) in sorted(self.table("proxy", v)?) {
            match key.get_ref().as_ref() {
                "listen" => {
                    section.config.listen = self.addresses("proxy.listen", value)?;
                    section.listen_origin = Some(self.origin("proxy.listen", value));
                    section.listen_at.extend(self.listed("proxy.listen", value));
                }
                "tls_listen" => {
                    section.config.tls_listen = self.addresses("proxy.tls_listen", value)?;
                    section.tls_listen_origin = Some(self.origin("proxy.tls_listen", value));
                    section
                        .listen_at
                        .extend(self.listed("proxy.tls_listen", value));
                }
                "trusted" => {
                    let mut ranges = Vec::new();
                    for (text, item) in self.strings("proxy.trusted", value)? {
                        // (An IPv4-mapped range is its IPv4 range: a
                        // client is matched by its IPv4 address, as in
                        // [[access]], so as written it would hold none.)
                        let cidr = Cidr::parse(text)
                            .map_err(|e| self.fail(item, "proxy.trusted", &e))?
                            .unmapped();
                        if !ranges.contains(&cidr) {
                            ranges.push(cidr);
                        }
                    }
                    section.config.trusted = Trusted(ranges);
                }
                "header" => {
                    let text = self.string("proxy.header", value)?;
                    section.config.header = match text.to_ascii_lowercase().as_str() {
                        "x-forwarded-for" => By::XForwardedFor,
                        "forwarded" => By::Forwarded,
                        _ => {
                            return Err(self.fail(
                                value,
                                "proxy.header",
                                "expected \"x-forwarded-for\" or \"forwarded\"",
                            ))
                        }
                    }
                }
                _ => return Err(self.unknown(key, "proxy", PROXY_KEYS)),
            }
        }
        Ok(section)
    }
}
