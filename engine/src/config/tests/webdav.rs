//! `[[webdav]]` as loaded: every key, every error (naming file, line and
//! key). (A build without the cargo feature `webdav`: see `features.rs`.)

use super::{load, load_err};

#[test]
fn every_key() {
    let c = load(
        "[[webdav]]\npath = \"/dav\"\nroot = \".\"\nread_only = true\nmax_upload = \"4GiB\"\nlocks = false\nlisting_cache = \"250ms\"\nfsync = false\nproperties = \"sidecar\"\n",
    )
    .unwrap();
    let [rule] = &c.site.webdav[..] else {
        panic!("{:?}", c.site.webdav)
    };
    // (The prefix is a directory's: `/dav` and `/dav/` are the same rule.)
    assert_eq!(rule.path, "/dav/");
    assert!(rule.root.is_absolute());
    assert!(rule.read_only);
    assert_eq!(rule.max_upload, Some(4 << 30));
    assert!(!rule.locks);
    assert_eq!(rule.listing_cache, std::time::Duration::from_millis(250));
    assert!(!rule.fsync);
    assert_eq!(rule.properties, crate::config::PropStore::Sidecar);
    let c = load("[[webdav]]\npath = \"/\"\nroot = \".\"\nlocks = true\n").unwrap();
    let rule = &c.site.webdav[0];
    assert_eq!(
        (
            rule.path.as_str(),
            rule.read_only,
            rule.max_upload,
            rule.locks
        ),
        ("/", false, None, true)
    );
    // (The defaults: listings trusted for a second, durable writes,
    // dead properties where the filesystem can keep them.)
    assert_eq!(
        (rule.listing_cache, rule.fsync, rule.properties),
        (
            crate::config::LISTING_CACHE,
            true,
            crate::config::PropStore::Auto
        )
    );
    let c = load("[[webdav]]\npath = \"/\"\nroot = \".\"\nproperties = \"xattr\"\n").unwrap();
    assert_eq!(c.site.webdav[0].properties, crate::config::PropStore::Xattr);
    let c = load("[[webdav]]\npath = \"/\"\nroot = \".\"\nlisting_cache = 0\n").unwrap();
    assert!(c.site.webdav[0].listing_cache.is_zero());
    assert!(load("").unwrap().site.webdav.is_empty());
}

#[test]
fn errors_name_file_line_and_key() {
    let cases = [
        (
            "[[webdav]]\nroot = \".\"\n",
            "DIR/site.toml:1: webdav[1]: needs path = \"/dav/\"",
        ),
        (
            // (`root = "public"` is put before it: line 2.)
            "[[webdav]]\npath = \"/dav/\"\n",
            "DIR/site.toml:2: webdav[1]: needs root = \"/srv/dav\"",
        ),
        (
            "[[webdav]]\npath = \"dav\"\nroot = \".\"\n",
            "DIR/site.toml:2: webdav[1].path: expected a URL prefix starting with \"/\" without \".\", \"..\" or empty segments; got \"dav\"",
        ),
        (
            "[[webdav]]\npath = \"/dav/\"\nroot = \"nowhere\"\n",
            "DIR/site.toml:3: webdav[1].root: cannot use DIR/nowhere as the WebDAV root: No such file or directory (os error 2)",
        ),
        (
            "[[webdav]]\npath = \"/dav/\"\nroot = \".\"\nlocks = 1\n",
            "DIR/site.toml:4: webdav[1].locks: expected true or false; got 1",
        ),
        (
            "[[webdav]]\npath = \"/dav/\"\nroot = \".\"\nreadonly = true\n",
            "DIR/site.toml:4: unknown key \"webdav[1].readonly\"; did you mean \"read_only\"? expected one of \"path\", \"root\", \"read_only\", \"max_upload\", \"locks\", \"listing_cache\", \"fsync\", \"properties\"",
        ),
        (
            "[[webdav]]\npath = \"/dav/\"\nroot = \".\"\nlisting_cache = \"soon\"\n",
            "DIR/site.toml:4: webdav[1].listing_cache: expected a number of seconds or a duration like \"250ms\", \"5s\", \"2m\", \"1h\"; got \"soon\"",
        ),
        (
            "[[webdav]]\npath = \"/dav/\"\nroot = \".\"\nfsync = \"no\"\n",
            "DIR/site.toml:4: webdav[1].fsync: expected true or false; got \"no\"",
        ),
        (
            "[[webdav]]\npath = \"/dav/\"\nroot = \".\"\nproperties = \"files\"\n",
            "DIR/site.toml:4: webdav[1].properties: expected one of \"auto\", \"xattr\", \"sidecar\"; got \"files\"",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(load_err(text), want, "{text}");
    }
}

#[test]
fn a_webdav_tree_may_not_hold_programs_brisk_runs() {
    let cgi = "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \".\"\n";
    let err = load_err(&format!(
        "{cgi}[[webdav]]\npath = \"/dav/\"\nroot = \".\"\n"
    ));
    assert_eq!(
        err,
        "DIR/site.toml:4: webdav[1].root: DIR overlaps cgi[1].dir DIR: WebDAV clients could put \
         programs there that brisk then runs; give WebDAV a tree of its own"
    );
    // Read-only, it would serve their sources.
    let err = load_err(&format!(
        "{cgi}[[webdav]]\npath = \"/dav/\"\nroot = \".\"\nread_only = true\n"
    ));
    assert!(
        err.ends_with("WebDAV clients could read the sources of programs brisk runs there; give WebDAV a tree of its own"),
        "{err}"
    );
    // A pattern rule runs scripts anywhere beneath the site's root.
    let err = load_err(
        "root = \".\"\n[[cgi]]\npattern = \"*.cgi\"\n[[webdav]]\npath = \"/dav/\"\nroot = \".\"\n",
    );
    assert!(err.contains("overlaps cgi[1].pattern (the root)"), "{err}");
    // Another site's programs count alike.
    let err = load_err(
        "root = \".\"\n[[webdav]]\npath = \"/dav/\"\nroot = \".\"\n\
         [[site]]\nhosts = [\"b.test\"]\nroot = \".\"\n[[site.cgi]]\npattern = \"*.cgi\"\n",
    );
    assert!(
        err.starts_with(
            "DIR/site.toml:2: webdav[1].root: DIR overlaps site[1].cgi[1].pattern (the root) DIR:"
        ),
        "{err}"
    );
}

#[test]
#[cfg(feature = "servlets")]
fn a_webdav_tree_may_not_hold_servlets() {
    // A COPY of an uploaded `.lua` file into the servlets' directory
    // would make it run.
    let servlets = "root = \".\"\n[servlets]\nenable = true\npaths = [\"/lua/\"]\n";
    let err = load_err(&format!(
        "{servlets}[[webdav]]\npath = \"/dav/\"\nroot = \".\"\n"
    ));
    assert_eq!(
        err,
        "DIR/site.toml:5: webdav[1].root: DIR overlaps servlets.paths \"/lua/\" DIR/lua: WebDAV \
         clients could put programs there that brisk then runs; give WebDAV a tree of its own"
    );
    assert!(load_err(&format!(
        "{servlets}[[webdav]]\npath = \"/dav/\"\nroot = \".\"\nread_only = true\n"
    ))
    .contains("could read the sources of programs brisk runs there"));
}
