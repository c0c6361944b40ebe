//! Which files the static handler must refuse as programs, and whether a
//! rule takes the site's front page.

use std::path::PathBuf;

use super::rule;
use crate::config::{CgiRule, CgiTarget};
use crate::handlers::cgi::{takes_root, Programs};

/// A document root `www/` holding `cgi-bin/` and `scripts/`, with a
/// `dir` rule on each of them and on `elsewhere/`, outside the root.
struct SiteTree(PathBuf);

impl Drop for SiteTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl SiteTree {
    fn new(name: &str) -> SiteTree {
        let base =
            std::env::temp_dir().join(format!("brisk-programs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["www/cgi-bin", "www/scripts", "elsewhere"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        SiteTree(base.canonicalize().unwrap())
    }

    fn dir(&self, url: &str, rel: &str) -> CgiRule {
        rule(CgiTarget::Dir {
            url: url.into(),
            dir: self.0.join(rel),
        })
    }
}

#[test]
fn files_of_dir_rules_inside_the_root_and_of_patterns_are_programs() {
    let site = SiteTree::new("mixed");
    let rules = [
        site.dir("/cgi-bin/", "www/cgi-bin"),
        // Inside the root under another URL: `/scripts/x` reaches it as
        // a static path.
        site.dir("/run/", "www/scripts"),
        site.dir("/ext/", "elsewhere"),
        rule(CgiTarget::Pattern("*.cgi".into())),
        rule(CgiTarget::Program {
            url: "/tool".into(),
            program: site.0.join("www/tool"),
        }),
    ];
    let programs = Programs::new(&rules, &site.0.join("www")).unwrap();
    for rel in [
        "cgi-bin",
        "cgi-bin/x.sh",
        "cgi-bin/sub/deep",
        "scripts/y.sh",
        "page.cgi",
        "app/page.cgi",
    ] {
        assert!(programs.contains(rel.as_bytes()), "{rel}");
    }
    for rel in [
        "cgi-binx/x.sh",
        "cgi-bin.txt",
        "index.html",
        "run/y.sh",
        "ext/z",
        "elsewhere/z",
        "page.cgi.txt",
        "dir.cgi/inner.txt",
        // A `program` rule's file is reached by its URL only.
        "tool",
    ] {
        assert!(!programs.contains(rel.as_bytes()), "{rel}");
    }
}

#[test]
fn a_dir_rule_on_the_root_itself_makes_every_file_a_program() {
    let site = SiteTree::new("root");
    let rules = [site.dir("/", "www")];
    let programs = Programs::new(&rules, &site.0.join("www")).unwrap();
    assert!(programs.contains(b"index.html"));
    assert!(programs.contains(b"a/b"));
}

#[test]
fn no_rules_no_programs() {
    let site = SiteTree::new("none");
    let programs = Programs::new(&[], &site.0.join("www")).unwrap();
    assert!(!programs.contains(b"x.cgi"));
    assert!(Programs::new(&[], &site.0.join("missing")).is_err());
}

#[test]
fn takes_root_only_for_a_url_covering_slash() {
    let site = SiteTree::new("front");
    assert!(takes_root(&[site.dir("/", "www/cgi-bin")]));
    assert!(takes_root(&[rule(CgiTarget::Program {
        url: "/".into(),
        program: site.0.join("tool"),
    })]));
    assert!(!takes_root(&[site.dir("/cgi-bin/", "www/cgi-bin")]));
    assert!(!takes_root(&[rule(CgiTarget::Pattern("*".into()))]));
    assert!(!takes_root(&[]));
}
