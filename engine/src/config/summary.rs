//! What `--check-config` prints: the verdict, the report of what will
//! serve (with the feature `ops`, [`super::report`]), then the warnings,
//! which every build gives.

use super::Config;

/// The whole answer; `source` names the configuration document.
pub(super) fn summary(config: &Config, source: &str) -> String {
    let mut s = format!("configuration OK ({source})\n");
    // The report is 46 KiB of the binary: left out of builds without
    // `ops` (#12's 2.5 MiB for the `tls` build), which say so.
    #[cfg(feature = "ops")]
    super::report::report(config, &mut s);
    #[cfg(not(feature = "ops"))]
    s.push_str("(the report of what will serve is in builds with the feature `ops`)\n");
    for warning in warnings(config) {
        s.push_str("warning: ");
        s.push_str(&warning);
        s.push('\n');
    }
    s
}

/// What may be a mistake though the configuration is valid: brisk's own
/// files beneath a root, private keys other users can read.
fn warnings(config: &Config) -> Vec<String> {
    let own = config.warnings();
    #[cfg(feature = "tls")]
    let own = {
        let mut all = own;
        let keys = config.tls.iter().flat_map(|t| &t.certificates);
        all.extend(keys.filter_map(|c| crate::tls::certs::key_warning(&c.files.key)));
        all
    };
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_then_the_report_or_what_has_it() {
        let s = summary(&Config::default(), "brisk.toml");
        let (verdict, rest) = s.split_once('\n').unwrap();
        assert_eq!(verdict, "configuration OK (brisk.toml)");
        let report = "(the report of what will serve is in builds with the feature `ops`)\n";
        assert_eq!(rest == report, !cfg!(feature = "ops"), "{s}");
        if cfg!(feature = "ops") {
            assert!(rest.starts_with("listen: "), "{s}");
        }
    }
}
