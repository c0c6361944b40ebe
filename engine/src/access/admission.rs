//! `[[access]]`: which client addresses may reach which paths (nginx's
//! `allow` / `deny`, lighttpd's `mod_access`, Caddy's `remote_ip`).
//!
//! The order, exactly: the first rule (in file order) whose `path` or
//! `pattern` matches the request's decoded, normalised path decides, and
//! no later rule is looked at. Within it, the entries are tried in the
//! order written (every entry of the `allow` or `deny` key written first,
//! then those of the other), and the first range that holds the client's
//! address decides; an address no entry holds is refused when the rule
//! has an `allow` list and allowed when it has only `deny`. A request no
//! rule matches is allowed. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`,
//! from a dual-stack socket) is judged as its IPv4 address.

use std::net::IpAddr;

use crate::access::proxy::Cidr;
use crate::http::glob::{Folding, PathMatch, Reach};

/// One `[[access]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRule {
    /// Which paths it covers (`path` prefix or `pattern` glob).
    pub matcher: PathMatch,
    /// Its entries in the order written (an `allow` or `deny` key written
    /// first is tried first): a range, and whether it allows. The first
    /// range that holds the client's address decides.
    pub entries: Vec<(Cidr, bool)>,
    /// What an address no entry holds gets: refused when the rule has an
    /// `allow` list, allowed when it has only `deny`.
    pub rest_allowed: bool,
    /// `brisk.toml:12`, where the rule is (for the log).
    pub origin: String,
}

/// Whether `client` may send a request for `path` (matched in any case
/// where `folding` says so): `Err` names the rule that refuses it. The
/// first rule that covers the path decides; a request that reaches
/// beneath it (`reach`: a WebDAV COPY, MOVE or DELETE of a collection, a
/// PROPFIND or LOCK with a `Depth`) must be let through by each rule
/// that covers a path it reaches there too ([`PathMatch::covers_beneath`]).
pub fn judge<'r>(
    rules: &'r [AccessRule],
    (path, reach): (&[u8], Reach),
    folding: &Folding,
    client: IpAddr,
) -> Result<(), &'r AccessRule> {
    let first = rules.iter().find(|r| r.matcher.matches_in(path, folding));
    let beneath = rules
        .iter()
        .filter(|r| r.matcher.covers_beneath(path, reach, folding));
    let allowed = |rule: &AccessRule| {
        rule.entries
            .iter()
            .find(|(range, _)| range.contains(client))
            .map_or(rule.rest_allowed, |&(_, allow)| allow)
    };
    match first.into_iter().chain(beneath).find(|r| !allowed(r)) {
        Some(rule) => Err(rule),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(path: &str, entries: &[(&str, bool)]) -> AccessRule {
        AccessRule {
            matcher: PathMatch::Prefix(path.to_string()),
            entries: entries
                .iter()
                .map(|(r, a)| (Cidr::parse(r).unwrap().unmapped(), *a))
                .collect(),
            rest_allowed: !entries.iter().any(|(_, a)| *a),
            origin: "test.toml:1".to_string(),
        }
    }

    fn ok(rules: &[AccessRule], path: &str, ip: &str) -> bool {
        judge(
            rules,
            (path.as_bytes(), Reach::Own),
            &Folding::NONE,
            ip.parse().unwrap(),
        )
        .is_ok()
    }

    #[test]
    fn the_first_matching_rule_and_its_first_matching_entry_decide() {
        let rules = [
            rule("/admin/", &[("10.0.0.0/8", true), ("::1", true)]),
            rule("/", &[("192.0.2.0/24", false)]),
            rule("/admin/x", &[("0.0.0.0/0", true)]),
        ];
        // Only allow: the rest are refused.
        assert!(ok(&rules, "/admin/x", "10.1.2.3"));
        assert!(ok(&rules, "/admin/", "::1"));
        assert!(!ok(&rules, "/admin/x", "192.0.2.9"));
        assert!(!ok(&rules, "/admin/", "2001:db8::1"));
        // Mapped addresses are their IPv4 address.
        assert!(ok(&rules, "/admin/", "::ffff:10.0.0.1"));
        assert!(!ok(&rules, "/admin/", "::ffff:11.0.0.1"));
        // Only deny: the rest are allowed.
        assert!(!ok(&rules, "/index.html", "192.0.2.1"));
        assert!(!ok(&rules, "/index.html", "::ffff:192.0.2.1"));
        assert!(ok(&rules, "/index.html", "198.51.100.1"));
        // No rule, no refusal.
        assert!(ok(&rules[..1], "/index.html", "192.0.2.1"));
        // In order: the exception first, then the range.
        let both = [rule(
            "/",
            &[("10.1.2.3", true), ("10.0.0.0/8", false), ("::/0", true)],
        )];
        assert!(ok(&both, "/", "10.1.2.3"));
        assert!(!ok(&both, "/", "10.1.2.4"));
        assert!(ok(&both, "/", "::1"));
        // An allow list makes the rest refused, even after a deny.
        assert!(!ok(&both, "/", "192.0.2.1"));
        let deny_first = [rule("/", &[("10.0.0.0/8", false), ("10.1.2.3", true)])];
        assert!(!ok(&deny_first, "/", "10.1.2.3"));
        let refused = judge(
            &deny_first,
            (b"/", Reach::Own),
            &Folding::NONE,
            "10.1.2.3".parse().unwrap(),
        );
        assert_eq!(refused.unwrap_err().origin, "test.toml:1");
    }
}
