//! `[[access]]` and `[[rate_limit]]`: what they load to, and every error
//! naming file, line and key.

use std::time::Duration;

use super::{load, load_err};
use crate::access::proxy::Cidr;
use crate::config::admission::RateKey;
use crate::config::PathMatch;

fn cidr(s: &str) -> Cidr {
    Cidr::parse(s).unwrap()
}

#[test]
fn access_rules_keep_their_entries_in_the_order_written() {
    let c = load(
        "[[access]]\npath = \"/admin/\"\nallow = [\"10.0.0.0/8\", \"::ffff:127.0.0.1\", \"::1\"]\n\
         [[access]]\npattern = \"*.php\"\ndeny = \"192.0.2.0/24\"\nallow = \"all\"\n\
         [[access]]\npath = \"/\"\ndeny = [\"198.51.100.7\"]\n",
    )
    .unwrap();
    let rules = &c.site.admission.access;
    assert_eq!(rules.len(), 3);
    assert_eq!(rules[0].matcher, PathMatch::Prefix("/admin/".into()));
    assert_eq!(
        rules[0].entries,
        vec![
            (cidr("10.0.0.0/8"), true),
            (cidr("127.0.0.1"), true),
            (cidr("::1"), true)
        ]
    );
    assert!(!rules[0].rest_allowed);
    assert!(
        rules[0].origin.ends_with("site.toml:2"),
        "{}",
        rules[0].origin
    );
    assert_eq!(rules[1].matcher, PathMatch::Glob("*.php".into()));
    assert_eq!(
        rules[1].entries,
        vec![
            (cidr("192.0.2.0/24"), false),
            (cidr("0.0.0.0/0"), true),
            (cidr("::/0"), true)
        ]
    );
    assert!(!rules[1].rest_allowed);
    assert!(rules[2].rest_allowed);
}

#[test]
fn access_errors_name_file_line_and_key() {
    assert_eq!(
        load_err("[[access]]\npath = \"/admin/\"\nallow = [\"10.0.0.0/8\", \"10.1.2.3/8\"]\n"),
        "DIR/site.toml:4: access[1].allow: \"10.1.2.3/8\" has bits set beyond its /8 prefix; did you mean \"10.0.0.0/8\"? (or \"all\")"
    );
    assert_eq!(
        load_err("[[access]]\npath = \"/\"\n\ndeny = [\"192.0.2.0/33\"]\n"),
        "DIR/site.toml:5: access[1].deny: the prefix length of \"192.0.2.0/33\" must be a number from 0 to 32 (or \"all\")"
    );
    assert_eq!(
        load_err("[[access]]\npath = \"/\"\nallow = [\"localhost\"]\n"),
        "DIR/site.toml:4: access[1].allow: expected an IP address or a CIDR range such as \"10.0.0.0/8\" or \"fd00::/8\"; got \"localhost\" (or \"all\")"
    );
    assert_eq!(
        load_err("[[access]]\npath = \"/\"\nallow = [1]\n"),
        "DIR/site.toml:4: access[1].allow: expected a string; got 1"
    );
    // An empty list would refuse everyone (allow) or no one (deny), and
    // shadow every later rule.
    assert_eq!(
        load_err("[[access]]\npath = \"/\"\ndeny = []\n"),
        "DIR/site.toml:4: access[1].deny: expected at least one address, range or \"all\"; got an array"
    );
    assert_eq!(
        load_err("[[access]]\npath = \"/\"\nallow = []\ndeny = [\"all\"]\n"),
        "DIR/site.toml:4: access[1].allow: expected at least one address, range or \"all\"; got an array"
    );
    assert_eq!(
        load_err("[[access]]\npath = \"/\"\n"),
        "DIR/site.toml:2: access[1]: needs allow = [\"10.0.0.0/8\", …] or deny = [\"192.0.2.0/24\", …] (or both)"
    );
    assert_eq!(
        load_err("[[access]]\nallow = \"all\"\n"),
        "DIR/site.toml:2: access[1]: needs path = \"/prefix/\" or pattern = \"*.ext\""
    );
    assert_eq!(
        load_err("[[access]]\npath = \"/\"\nalow = \"all\"\n"),
        "DIR/site.toml:4: unknown key \"access[1].alow\"; did you mean \"allow\"? expected one of \"path\", \"pattern\", \"allow\", \"deny\""
    );
}

#[test]
fn rate_limits_load() {
    let c = load(
        "[[rate_limit]]\npath = \"/login\"\nrate = \"5/s\"\nburst = 10\n\
         [[rate_limit]]\npattern = \"*.php\"\nrate = \"30r/m\"\nkey = \"address+path\"\n",
    )
    .unwrap();
    let rules = &c.site.admission.rate;
    assert_eq!(rules[0].interval, Duration::from_millis(200));
    assert_eq!((rules[0].burst, rules[0].key), (10, RateKey::Address));
    assert_eq!(rules[1].interval, Duration::from_secs(2));
    assert_eq!((rules[1].burst, rules[1].key), (0, RateKey::AddressPath));
    assert_eq!(rules[1].rate_text, "30r/m");
}

#[test]
fn rate_limit_errors_name_file_line_and_key() {
    let want =
        "expected requests per second or minute, like \"5/s\" or \"30/m\" (1 to 1000000 a second)";
    for bad in ["\"5/h\"", "\"0/s\"", "\"fast\"", "\"2000000/s\""] {
        assert_eq!(
            load_err(&format!("[[rate_limit]]\npath = \"/\"\nrate = {bad}\n")),
            format!("DIR/site.toml:4: rate_limit[1].rate: {want}; got {bad}")
        );
    }
    assert_eq!(
        load_err("[[rate_limit]]\npath = \"/\"\nrate = 5\n"),
        "DIR/site.toml:4: rate_limit[1].rate: expected requests per second or minute, like \"5/s\" or \"30/m\" (1 to 1000000 a second); got 5"
    );
    assert_eq!(
        load_err("[[rate_limit]]\npath = \"/\"\nrate = \"1/s\"\nburst = -1\n"),
        "DIR/site.toml:5: rate_limit[1].burst: expected an integer from 0 to 1000000; got -1"
    );
    assert_eq!(
        load_err("[[rate_limit]]\npath = \"/\"\nrate = \"1/s\"\nkey = \"path\"\n"),
        "DIR/site.toml:5: rate_limit[1].key: expected one of \"address\", \"address+path\"; got \"path\""
    );
    assert_eq!(
        load_err("[[rate_limit]]\npath = \"/\"\nburst = 3\n"),
        "DIR/site.toml:2: rate_limit[1]: needs rate = \"5/s\" (or \"N/m\")"
    );
    assert_eq!(
        load_err("[[rate_limit]]\npath = \"/\"\nrate = \"1/s\"\nbursts = 3\n"),
        "DIR/site.toml:5: unknown key \"rate_limit[1].bursts\"; did you mean \"burst\"? expected one of \"path\", \"pattern\", \"rate\", \"burst\", \"key\""
    );
}

#[test]
fn both_go_inside_a_site_and_are_listed_as_keys() {
    let e = load_err("[acces]\n");
    assert!(
        e.contains("expected one of") && e.contains("access") && e.contains("rate_limit"),
        "{e}"
    );
    let keys = crate::config::known_keys();
    for k in [
        "access.allow",
        "access.deny",
        "rate_limit.rate",
        "rate_limit.burst",
        "rate_limit.key",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k}");
    }
}

/// The first rule that matches decides: a rule an earlier one hides is
/// said at load (a more specific rule written after a broader one).
#[test]
fn a_rule_an_earlier_one_hides_is_warned_of() {
    let c = load(
        "[[access]]\npath = \"/admin/\"\nallow = \"10.0.0.0/8\"\n\
         [[access]]\npath = \"/admin/secret/\"\ndeny = \"all\"\n\
         [[access]]\npath = \"/administration\"\ndeny = \"all\"\n",
    )
    .unwrap();
    assert_eq!(
        crate::config::admission::hidden_guards(&c),
        [
            "access[2] (path \"/admin/secret/\") never decides: access[1] (path \"/admin/\") \
          comes first and matches every path it does, and the first rule that matches decides; \
          put the more specific rule first"
        ]
    );
    assert!(c
        .warnings()
        .iter()
        .any(|w| w.starts_with("access[2] (path")));
    // In that order, or for paths the first does not all match, none.
    let c = load(
        "[[access]]\npath = \"/admin/secret/\"\ndeny = \"all\"\n\
         [[access]]\npath = \"/admin/\"\nallow = \"10.0.0.0/8\"\n\
         [[access]]\npattern = \"*.php\"\ndeny = \"all\"\n",
    )
    .unwrap();
    assert!(crate::config::admission::hidden_guards(&c).is_empty());
    // A pattern after a prefix that holds all it matches: `path = "/"`
    // first decides for every `.php` too, whatever the pattern's rule says.
    let c = load(
        "[[access]]\npath = \"/\"\ndeny = \"192.0.2.0/24\"\n\
         [[access]]\npattern = \"*.php\"\nallow = \"10.0.0.0/8\"\n\
         [[access]]\npath = \"/admin/\"\nallow = \"10.0.0.0/8\"\n\
         [[access]]\npattern = \"/admin/*.php\"\ndeny = \"all\"\n",
    )
    .unwrap();
    let hidden = crate::config::admission::hidden_guards(&c);
    assert_eq!(hidden.len(), 3, "{hidden:?}");
    assert!(hidden[0].starts_with(
        "access[2] (pattern \"*.php\") never decides: access[1] (path \"/\") comes first"
    ));
    assert!(hidden[1].starts_with("access[3] (path \"/admin/\") never decides: access[1]"));
    assert!(hidden[2].starts_with("access[4] (pattern \"/admin/*.php\") never decides"));
    // A pattern a prefix does not hold all of: none.
    let c = load(
        "[[access]]\npath = \"/admin/\"\nallow = \"10.0.0.0/8\"\n\
         [[access]]\npattern = \"*.php\"\ndeny = \"all\"\n\
         [[access]]\npattern = \"/ad*/x.php\"\ndeny = \"all\"\n",
    )
    .unwrap();
    assert!(crate::config::admission::hidden_guards(&c).is_empty());
}

#[test]
#[cfg(feature = "ops")] // the report
fn check_config_lists_them() {
    let c = load(
        "[[access]]\npath = \"/admin/\"\ndeny = \"192.0.2.0/24\"\nallow = [\"10.0.0.0/8\", \"::1\"]\n\
         [[rate_limit]]\npath = \"/login\"\nrate = \"5/s\"\nburst = 10\nkey = \"address+path\"\n",
    )
    .unwrap();
    let s = crate::config::summary::summary(&c, "site.toml");
    assert!(
        s.contains(
            "access: 1 rule\n  path /admin/: deny 192.0.2.0/24, allow 10.0.0.0/8, allow ::1/128, then deny the rest (line 2)\n\
             rate limits: 1 rule\n  path /login: 5/s per client address and path, burst 10\nauth: none\n"
        ),
        "{s}"
    );
}

/// Where a document root finds names whatever their case, a build with
/// `webdav` matches path rules in any case there and so takes them; the
/// smallest builds match them as spelt, so refuse one for a part of it
/// (`/PRIVATE/` would get round it) but take one for all of it.
#[test]
fn where_names_fold_path_rules_are_matched_in_any_case_or_refused() {
    let c = load(
        "[[access]]\npath = \"/\"\ndeny = [\"198.51.100.7\"]\n\
         [[rate_limit]]\npath = \"/private/\"\nrate = \"5/s\"\n",
    )
    .unwrap();
    let why = c.case_blind(&c.site, &c.site.root, "/");
    match cfg!(feature = "webdav") {
        true => assert_eq!(why, None),
        false => assert_eq!(
            why.as_deref(),
            Some(
                "its [[rate_limit]] path /private/ rule would not take a path spelt in another \
                 case (`/PRIVATE/x` for `/private/x`, `/X.PHP` for `/x.php`): keep it out of there"
            )
        ),
    }
    let c = load("[[access]]\npath = \"/\"\ndeny = [\"198.51.100.7\"]\n").unwrap();
    assert_eq!(c.case_blind(&c.site, &c.site.root, "/"), None);
}

/// A `[proxy] trusted` range of every address makes every client a
/// proxy that names itself: said at load, not silently taken.
#[test]
#[cfg(feature = "ops")]
fn trusting_every_address_is_warned_of() {
    let c = load("[proxy]\ntrusted = [\"10.0.0.0/8\", \"0.0.0.0/0\", \"::/0\"]\n").unwrap();
    let w = c.warnings();
    let said: Vec<&String> = w
        .iter()
        .filter(|w| w.starts_with("proxy.trusted"))
        .collect();
    assert_eq!(said.len(), 2, "{w:?}");
    assert_eq!(
        *said[0],
        "proxy.trusted holds 0.0.0.0/0, every address: any client there is taken for a proxy, \
         so the X-Forwarded-For it writes itself names whatever client it likes ([[access]], \
         [[rate_limit]], the failed-login count and the logs believe it); list only your \
         proxies' addresses"
    );
    assert!(said[1].starts_with("proxy.trusted holds ::/0, every address"));
    let c = load("[proxy]\ntrusted = [\"10.0.0.0/8\", \"::1\"]\n").unwrap();
    assert!(!c.warnings().iter().any(|w| w.starts_with("proxy.trusted")));
}
