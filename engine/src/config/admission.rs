//! `[[access]]` (which client addresses may reach which paths, as nginx's
//! `allow` / `deny`) and `[[rate_limit]]` (requests per client address,
//! as nginx's `limit_req`): the rules a request must pass before
//! `[[auth]]`. What they do with a request is in `access::admission` and
//! `access::rate`.

use std::time::Duration;

use toml::de::DeValue;
use toml::Spanned;

use super::load::{sorted, Loader};
use super::{ConfigError, PathMatch};
use crate::access::proxy::Cidr;

pub use crate::access::admission::AccessRule;

pub(super) const ACCESS_KEYS: &[&str] = &["path", "pattern", "allow", "deny"];
pub(super) const RATE_LIMIT_KEYS: &[&str] = &["path", "pattern", "rate", "burst", "key"];

/// The most requests a `rate` may name per second (a request every
/// microsecond: the table's clock ticks in microseconds).
const MAX_RATE: u64 = 1_000_000;
/// The largest `burst`.
const MAX_BURST: i64 = 1_000_000;

/// A site's admission rules; empty by default.
#[derive(Debug, Clone, Default)]
pub struct Admission {
    /// `[[access]]` rules, in file order (the first whose path matches
    /// decides).
    pub access: Vec<AccessRule>,
    /// `[[rate_limit]]` rules, in file order (every one whose path
    /// matches applies).
    pub rate: Vec<RateRule>,
}

impl Admission {
    /// No rule of either kind.
    pub fn is_empty(&self) -> bool {
        self.access.is_empty() && self.rate.is_empty()
    }
}

/// What a `[[rate_limit]]` rule counts requests by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateKey {
    /// `"address"`: the client address (an IPv6 one by its /64).
    Address,
    /// `"address+path"`: the client address and the request's path, so
    /// that each path under the rule has its own allowance.
    AddressPath,
}

/// One `[[rate_limit]]` rule: a leaky bucket per client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRule {
    /// Which paths it covers (`path` prefix or `pattern` glob).
    pub matcher: PathMatch,
    /// The time one request takes to leak out of the bucket (1 s / N for
    /// `"N/s"`), at least a microsecond.
    pub interval: Duration,
    /// Requests allowed beyond the rate at once (nginx's `burst`): a
    /// client that was quiet may send `burst + 1` requests back to back.
    pub burst: u32,
    /// What the requests are counted by.
    pub key: RateKey,
    /// `rate` as written, for the summary.
    pub rate_text: String,
}

impl Loader<'_> {
    /// The `[[access]]` array.
    pub(super) fn access_rules(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<AccessRule>, ConfigError> {
        self.each_table("access", v, |section, item, table| {
            let mut matcher = None;
            let mut entries = Vec::new();
            let mut has_allow = false;
            let mut has_list = false;
            for (key, value) in sorted(table) {
                let name = key.get_ref().as_ref();
                let full = format!("{section}.{name}");
                match name {
                    "path" | "pattern" => {
                        self.set_matcher(&mut matcher, key, name, &full, value)?
                    }
                    "allow" | "deny" => {
                        let allow = name == "allow";
                        has_allow |= allow;
                        has_list = true;
                        let list = self.strings(&full, value)?;
                        // (Empty, `allow` would refuse everyone and
                        // `deny` nobody, while shadowing every later
                        // rule: a list left half-written.)
                        if list.is_empty() {
                            let what = "at least one address, range or \"all\"";
                            return Err(self.expected(value, &full, what));
                        }
                        for (text, item) in list {
                            for cidr in self.ranges(text, item, &full)? {
                                entries.push((cidr, allow));
                            }
                        }
                    }
                    _ => return Err(self.unknown(key, section, ACCESS_KEYS)),
                }
            }
            let matcher = self.required_matcher(matcher, item, section)?;
            if !has_list {
                return Err(self.fail(
                    item,
                    section,
                    "needs allow = [\"10.0.0.0/8\", …] or deny = [\"192.0.2.0/24\", …] (or both)",
                ));
            }
            Ok(AccessRule {
                matcher,
                entries,
                rest_allowed: !has_allow,
                origin: self.at(item.span()),
            })
        })
    }

    /// One entry of `allow` or `deny`: a range, or `"all"` (every IPv4
    /// and IPv6 address, as nginx's `all`).
    fn ranges(
        &self,
        text: &str,
        item: &Spanned<DeValue<'_>>,
        full: &str,
    ) -> Result<Vec<Cidr>, ConfigError> {
        if text == "all" {
            let all = ["0.0.0.0/0", "::/0"].map(|r| Cidr::parse(r).expect("a valid range"));
            return Ok(all.to_vec());
        }
        let cidr =
            Cidr::parse(text).map_err(|e| self.fail(item, full, &format!("{e} (or \"all\")")))?;
        Ok(vec![cidr.unmapped()])
    }

    /// The `[[rate_limit]]` array.
    pub(super) fn rate_rules(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<RateRule>, ConfigError> {
        self.each_table("rate_limit", v, |section, item, table| {
            let mut matcher = None;
            let mut rate = None;
            let mut burst = 0;
            let mut key = RateKey::Address;
            for (k, value) in sorted(table) {
                let name = k.get_ref().as_ref();
                let full = format!("{section}.{name}");
                match name {
                    "path" | "pattern" => self.set_matcher(&mut matcher, k, name, &full, value)?,
                    "rate" => {
                        // (`rate = 5`, a number, is told the form too.)
                        let text = value.get_ref().as_str().unwrap_or_default();
                        let interval = parse_rate(text).ok_or_else(|| {
                            self.expected(
                                value,
                                &full,
                                &format!("requests per second or minute, like \"5/s\" or \"30/m\" (1 to {MAX_RATE} a second)"),
                            )
                        })?;
                        rate = Some((interval, text.to_string()));
                    }
                    "burst" => burst = self.integer(&full, value, 0, MAX_BURST)? as u32,
                    "key" => {
                        let choices = [
                            ("address", RateKey::Address),
                            ("address+path", RateKey::AddressPath),
                        ];
                        key = self.choice(&full, value, &choices)?;
                    }
                    _ => return Err(self.unknown(k, section, RATE_LIMIT_KEYS)),
                }
            }
            let matcher = self.required_matcher(matcher, item, section)?;
            let Some((interval, rate_text)) = rate else {
                return Err(self.fail(item, section, "needs rate = \"5/s\" (or \"N/m\")"));
            };
            Ok(RateRule {
                matcher,
                interval,
                burst,
                key,
                rate_text,
            })
        })
    }
}

/// `"5/s"`, `"30/m"` (nginx's `5r/s` too): the time one request takes at
/// that rate; `None` for anything else, a zero count or more than
/// [`MAX_RATE`] a second.
fn parse_rate(text: &str) -> Option<Duration> {
    let (count, unit) = text.trim().split_once('/')?;
    let count = count.trim();
    let count = count.strip_suffix('r').unwrap_or(count);
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = count.parse().ok()?;
    let per = match unit.trim() {
        "s" | "sec" | "second" => 1,
        "m" | "min" | "minute" => 60,
        _ => return None,
    };
    if n == 0 || n > MAX_RATE * per {
        return None;
    }
    Some(Duration::from_nanos(per * 1_000_000_000 / n))
}

/// A warning for each `[proxy] trusted` range that holds every address
/// of its family (`0.0.0.0/0`, `::/0`): every client is then a trusted
/// proxy, so the forwarding header it writes itself names whatever
/// address it likes to `[[access]]`, `[[rate_limit]]`, the failed-login
/// count and the log (nginx's `set_real_ip_from 0.0.0.0/0`, a common
/// copy-and-paste mistake).
#[cfg(feature = "ops")]
pub(super) fn trusting_everyone(config: &super::Config) -> Vec<String> {
    use crate::access::proxy::forwarded::By;
    let header = match config.proxy.header {
        By::XForwardedFor => "X-Forwarded-For",
        By::Forwarded => "Forwarded",
    };
    let everyone = config.proxy.trusted.everyone();
    everyone
        .map(|range| {
            format!(
                "proxy.trusted holds {range}, every address: any client there is taken for a \
                 proxy, so the {header} it writes itself names whatever client it likes \
                 ([[access]], [[rate_limit]], the failed-login count and the logs believe it); \
                 list only your proxies' addresses"
            )
        })
        .collect()
}

/// A warning for each `[[access]]` or `[[auth]]` rule that an earlier
/// rule of its site hides: the first rule that matches a path decides,
/// so a rule whose paths an earlier one all matches (`path = "/admin/"`,
/// then `path = "/admin/secret/"`; for `[[auth]]`, with every method
/// the later one covers) never decides a request for a path of its
/// own, whatever it says.
pub(super) fn hidden_guards(config: &super::Config) -> Vec<String> {
    let mut out = Vec::new();
    for (prefix, site) in super::SiteConfig::all_keyed(config) {
        let access: Vec<&PathMatch> = site.admission.access.iter().map(|r| &r.matcher).collect();
        hidden(&prefix, "access", &access, |_, _| true, &mut out);
        let auth: Vec<&PathMatch> = site.auth.iter().map(|r| &r.matcher).collect();
        let methods = |i: usize, j: usize| covers_all(&site.auth[i].methods, &site.auth[j].methods);
        hidden(&prefix, "auth", &auth, methods, &mut out);
        // (Methods are the feature `sites`' keys: without it each rule
        // covers all, and a hidden rule is hidden whole.)
        #[cfg(feature = "sites")]
        partly_hidden(&prefix, &site.auth, &mut out);
    }
    out
}

/// A warning for each `[[auth]]` rule an earlier one hides for some
/// methods only (a share whose `except_methods` lets reads through, then
/// a stricter rule beneath it): the earlier decides those methods on its
/// paths, which is easy to miss.
#[cfg(feature = "sites")]
fn partly_hidden(prefix: &str, rules: &[crate::access::auth::AuthRule], out: &mut Vec<String>) {
    use crate::access::auth::AuthMethods;
    let listed = |m: &AuthMethods| match m {
        AuthMethods::All => String::new(),
        AuthMethods::Only(m) | AuthMethods::Except(m) => m.to_string(),
    };
    for (j, later) in rules.iter().enumerate() {
        let (path, then) = (&later.matcher, &later.methods);
        // (Hidden whole: [`hidden`] said so.)
        if (0..j).any(|i| hides(&rules[i].matcher, path) && covers_all(&rules[i].methods, then)) {
            continue;
        }
        // Methods both rules cover: among those either lists, or any
        // other, all of which each rule treats alike.
        let shared = |i: usize| {
            let first = &rules[i].methods;
            let (a, b) = (listed(first), listed(then));
            let mut all = a
                .split(' ')
                .chain(b.split(' '))
                .chain(["GET", "HEAD", "BRISK-OTHER"]);
            all.any(|m| !m.is_empty() && first.covers(m.as_bytes()) && then.covers(m.as_bytes()))
        };
        if let Some(i) = (0..j).find(|&i| hides(&rules[i].matcher, path) && shared(i)) {
            let covered = match &rules[i].methods {
                AuthMethods::All => "every method".to_string(),
                AuthMethods::Only(m) => format!("the methods {m}"),
                AuthMethods::Except(m) => format!("every method but {m}"),
            };
            out.push(format!(
                "{prefix}auth[{}] ({}) decides only some methods: {prefix}auth[{}] ({}) comes \
                 first, matches every path it does and decides {covered} there; put the more \
                 specific rule first",
                j + 1,
                said(path),
                i + 1,
                said(&rules[i].matcher),
            ));
        }
    }
}

/// Whether an `[[auth]]` rule's methods `first` cover every method of a
/// later rule's `then` (every method, or the same list).
fn covers_all(
    first: &crate::access::auth::AuthMethods,
    then: &crate::access::auth::AuthMethods,
) -> bool {
    *first == crate::access::auth::AuthMethods::All || first == then
}

/// Whether the guard `first` matches every path `later` matches (so
/// that, coming first, it decides them).
fn hides(first: &PathMatch, later: &PathMatch) -> bool {
    match (first, later) {
        (PathMatch::Prefix(a), PathMatch::Prefix(b)) => b.starts_with(a.as_str()),
        (PathMatch::Glob(a), PathMatch::Glob(b)) => a == b,
        // `path = "/"` matches every path, so every pattern after it; a
        // prefix, every path of a whole-path pattern whose fixed start is
        // beneath it (`"/admin/"`, then `"/admin/*.php"`). (A pattern
        // without `/` matches a last segment anywhere.)
        (PathMatch::Prefix(a), PathMatch::Glob(g)) => {
            let fixed = g.find(['*', '?']).map_or(g.as_str(), |end| &g[..end]);
            a == "/" || (g.starts_with('/') && fixed.starts_with(a.as_str()))
        }
        _ => false,
    }
}

/// A guard as the configuration says it.
fn said(m: &PathMatch) -> String {
    match m {
        PathMatch::Prefix(p) => format!("path {p:?}"),
        PathMatch::Glob(g) => format!("pattern {g:?}"),
    }
}

fn hidden(
    prefix: &str,
    kind: &str,
    rules: &[&PathMatch],
    covers: impl Fn(usize, usize) -> bool,
    out: &mut Vec<String>,
) {
    for (j, later) in rules.iter().enumerate() {
        if let Some(i) = (0..j).find(|&i| hides(rules[i], later) && covers(i, j)) {
            out.push(format!(
                "{prefix}{kind}[{}] ({}) never decides: {prefix}{kind}[{}] ({}) comes first and \
                 matches every path it does, and the first rule that matches decides; put the \
                 more specific rule first",
                j + 1,
                said(later),
                i + 1,
                said(rules[i]),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("5/s"), Some(Duration::from_millis(200)));
        assert_eq!(parse_rate("5r/s"), Some(Duration::from_millis(200)));
        assert_eq!(parse_rate("30/m"), Some(Duration::from_secs(2)));
        assert_eq!(parse_rate("1000000/s"), Some(Duration::from_micros(1)));
        for bad in ["0/s", "5", "5/h", "-1/s", "/s", "1000001/s", "five/s", "5/"] {
            assert_eq!(parse_rate(bad), None, "{bad}");
        }
    }
}
