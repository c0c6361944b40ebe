//! `[[throttle]]`: byte rates by URL path, thttpd-style.

use toml::de::DeValue;
use toml::Spanned;

use super::load::{sorted, Loader};
use super::units;
use super::{ConfigError, ThrottleRule};

pub(super) const THROTTLE_KEYS: &[&str] = &["path", "pattern", "rate", "connection_rate"];
const RATE_HELP: &str = "a rate like \"200KiB/s\" or \"1MB/s\", or an integer of bytes per second";

impl Loader<'_> {
    /// The `[[throttle]]` array.
    pub(super) fn throttles(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<ThrottleRule>, ConfigError> {
        self.each_table("throttle", v, |section, item, table| {
            let mut matcher = None;
            let mut rate = None;
            let mut connection_rate = None;
            for (key, value) in sorted(table) {
                let name = key.get_ref().as_ref();
                let full = format!("{section}.{name}");
                match name {
                    "path" | "pattern" => {
                        self.set_matcher(&mut matcher, key, name, &full, value)?
                    }
                    "rate" => rate = Some(self.rate(&full, value)?),
                    "connection_rate" => connection_rate = Some(self.rate(&full, value)?),
                    _ => return Err(self.unknown(key, section, THROTTLE_KEYS)),
                }
            }
            let matcher = self.required_matcher(matcher, item, section)?;
            if rate.is_none() && connection_rate.is_none() {
                return Err(self.fail(item, section, "needs rate and/or connection_rate"));
            }
            Ok(ThrottleRule {
                matcher,
                rate,
                connection_rate,
            })
        })
    }

    /// A byte rate: `"200KiB/s"` (any size syntax followed by `/s`) or an
    /// integer of bytes per second; at least 1 KiB/s.
    fn rate(&self, key: &str, v: &Spanned<DeValue<'_>>) -> Result<u64, ConfigError> {
        let n = match v.get_ref() {
            DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix()).ok(),
            DeValue::String(s) => s
                .trim()
                .strip_suffix("/s")
                .and_then(|size| units::parse_size(size.trim())),
            _ => None,
        };
        match n {
            Some(n) if n >= 1024 => Ok(n),
            Some(_) => Err(self.expected(v, key, "at least 1KiB/s")),
            None => Err(self.expected(v, key, RATE_HELP)),
        }
    }
}

/// A warning for each `[[throttle]]` rule whose `connection_rate` is not
/// below its `rate`: a connection never gets more than the rule's shared
/// rate, so that `connection_rate` never paces anything (a rate the
/// writer likely meant the other way round).
pub(super) fn idle_connection_rates(config: &super::Config) -> Vec<String> {
    let mut out = Vec::new();
    for (prefix, site) in super::SiteConfig::all_keyed(config) {
        for (i, rule) in site.throttle.iter().enumerate() {
            if let (Some(rate), Some(own)) = (rule.rate, rule.connection_rate) {
                if own >= rate {
                    out.push(format!(
                        "{prefix}throttle[{}].connection_rate ({own} bytes/s) is not below its \
                         rate ({rate} bytes/s), which every connection of the rule shares: it \
                         never paces anything; lower it, or leave it out",
                        i + 1
                    ));
                }
            }
        }
    }
    out
}
