//! The rules' lines in `--check-config`'s report.

use std::fmt::Write as _;

use super::{Origins, SiteRules, UrlAction, UrlMatch};
use crate::config::StaticConfig;

/// `redirects and rewrites: …`, `error pages: …`, `cors: …`: each rule on a line of its own, or `none`.
/// (Always `none` without the cargo feature `sites`, which refuses them:
/// the lines' code is then left out.)
pub(in crate::config) fn describe(rules: &SiteRules, s: &mut String) {
    let (url, errors, cors) = match cfg!(feature = "sites") {
        true => (&rules.url[..], &rules.errors[..], &rules.cors[..]),
        false => (&[][..], &[][..], &[][..]),
    };
    list(s, "redirects and rewrites", url.len());
    for r in url {
        let from = match &r.matcher {
            UrlMatch::Exact(p) => format!("exact {p}"),
            UrlMatch::Prefix(p) => format!("prefix {p}"),
            UrlMatch::Regex(p) => format!("from {}", p.re.as_str()),
        };
        let what = match r.action {
            UrlAction::Redirect(status) => format!("redirect {status} to"),
            UrlAction::Rewrite => "rewrite to".to_string(),
        };
        let mut when = Vec::new();
        if let Some(scheme) = r.scheme {
            when.push(format!("scheme {}", scheme.as_str()));
        }
        if !r.hosts.is_empty() {
            when.push(format!("host {}", r.hosts.join(", ")));
        }
        let when = match when.is_empty() {
            true => String::new(),
            false => format!(" (only {})", when.join("; ")),
        };
        let line = r.origin.rsplit_once(':').map_or("?", |(_, l)| l);
        let _ = writeln!(s, "  {from}: {what} {}{when} (line {line})", r.to.text);
    }
    list(s, "error pages", errors.len());
    for e in errors {
        let _ = writeln!(s, "  {}: {} (under the root; no-store)", e.status, e.page);
    }
    list(s, "cors", cors.len());
    for c in cors {
        let on = &c.matcher;
        let origins = match &c.origins {
            Origins::Any => "any origin (*)".to_string(),
            Origins::List(l) => l.join(", "),
        };
        let mut extra = format!("; methods {}", c.methods);
        if !c.headers.is_empty() {
            let _ = write!(extra, "; headers {}", c.headers);
        }
        if c.credentials {
            extra.push_str("; with credentials");
        }
        if let Some(age) = c.max_age {
            let _ = write!(extra, "; max-age {age}s");
        }
        if !c.expose.is_empty() {
            let _ = write!(extra, "; exposes {}", c.expose);
        }
        let _ = writeln!(s, "  {on}: {origins}{extra}");
    }
}

fn list(s: &mut String, name: &str, n: usize) {
    match n {
        0 => {
            let _ = writeln!(s, "{name}: none");
        }
        1 => {
            let _ = writeln!(s, "{name}: 1 rule");
        }
        n => {
            let _ = writeln!(s, "{name}: {n} rules");
        }
    }
}

/// The `[static]` section's fallback line, when there is one.
pub(in crate::config) fn fallback(st: &StaticConfig, s: &mut String) {
    if cfg!(feature = "sites") && !st.try_files.is_empty() {
        let _ = writeln!(
            s,
            "  try_files: {} (200), not for .{}",
            st.try_files.join(", then "),
            st.fallback_exclude.join(" .")
        );
    }
}
