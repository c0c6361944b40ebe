//! A build without the cargo features `sites`, `ops` or `upstreams` refuses the keys
//! of the subsystems they hold, naming the file, the line, the key and
//! the feature that serves it (and the switches set to false load).

#[cfg(not(all(feature = "sites", feature = "ops", feature = "upstreams")))]
use super::load_err;

/// `DIR/site.toml:LINE: KEY: this brisk was built without WHAT (the cargo
/// feature `FEATURE`); FIX`.
#[cfg(not(all(feature = "sites", feature = "ops", feature = "upstreams")))]
fn refusal(line: u32, key: &str, what: &str, feature: &str, fix: &str) -> String {
    format!(
        "DIR/site.toml:{line}: {key}: this brisk was built without {what} \
         (the cargo feature `{feature}`); {fix}"
    )
}

#[cfg(not(feature = "sites"))]
#[test]
fn a_build_without_sites_refuses_their_keys() {
    let remove = "remove it, or build with the feature";
    let vhosts = "virtual hosts";
    let fallbacks = "fallback pages (spa, try_files)";
    let cases = [
        ("[[site]]\nhosts = [\"a.example\"]\n", 2, "site", vhosts),
        ("[[vhost]]\nhosts = [\"a.example\"]\n", 2, "vhost", vhosts),
        ("hosts = [\"a.example\"]\n", 2, "hosts", vhosts),
        ("unknown_host = 421\n", 2, "unknown_host", vhosts),
        (
            "[[redirect]]\nfrom = \"/a\"\nto = \"/b\"\n",
            2,
            "redirect",
            "redirect and rewrite rules",
        ),
        (
            "[[rewrite]]\nfrom = \"/a\"\nto = \"/b\"\n",
            2,
            "rewrite",
            "redirect and rewrite rules",
        ),
        ("[errors]\n404 = \"404.html\"\n", 2, "errors", "error pages"),
        (
            "[[cors]]\npath = \"/api/\"\norigins = [\"*\"]\n",
            2,
            "cors",
            "CORS rules",
        ),
        (
            "[static]\nspa = \"index.html\"\n",
            3,
            "static.spa",
            fallbacks,
        ),
        (
            "[static]\ntry_files = [\"/index.html\"]\n",
            3,
            "static.try_files",
            fallbacks,
        ),
        (
            "[static]\nfallback_exclude = [\"js\"]\n",
            3,
            "static.fallback_exclude",
            fallbacks,
        ),
        (
            "[[auth]]\npath = \"/\"\nrealm = \"R\"\nhtpasswd = \"p\"\nexcept_methods = [\"GET\"]\n",
            6,
            "auth[1].except_methods",
            "per-method rules",
        ),
        (
            "[[auth]]\npath = \"/\"\nrealm = \"R\"\nhtpasswd = \"p\"\nmethods = [\"PUT\"]\n",
            6,
            "auth[1].methods",
            "per-method rules",
        ),
    ];
    for (text, line, key, what) in cases {
        assert_eq!(
            load_err(text),
            refusal(line, key, what, "sites", remove),
            "{text}"
        );
    }
}

#[cfg(not(feature = "ops"))]
#[test]
fn a_build_without_ops_refuses_their_keys_and_handlers() {
    use super::load;
    assert_eq!(
        load_err("[proxy]\ntrusted = [\"10.0.0.0/8\"]\n"),
        refusal(
            2,
            "proxy",
            "the PROXY protocol and trusted proxies",
            "ops",
            "remove it, or build with the feature"
        )
    );
    assert_eq!(
        load_err("upgrade = true\n"),
        refusal(
            2,
            "upgrade",
            "zero-downtime upgrades",
            "ops",
            "set it to false, or build with the feature"
        )
    );
    // Off by default there, and false is accepted.
    assert!(!load("").unwrap().upgrade);
    assert!(!load("upgrade = false\n").unwrap().upgrade);
    for name in ["health", "ready", "metrics", "status"] {
        let text = format!("[[handlers]]\npath = \"/-/x\"\nhandler = \"{name}\"\n");
        assert_eq!(
            load_err(&text),
            format!(
                "DIR/site.toml:4: handlers[1].handler: this brisk was built without the \
                 built-in handler \"{name}\" (the cargo feature `ops`); remove it, or build \
                 with the feature"
            )
        );
    }
    // `echo` is there in every build.
    assert!(load("[[handlers]]\npath = \"/-/echo\"\nhandler = \"echo\"\n").is_ok());
}

#[cfg(not(feature = "upstreams"))]
#[test]
fn a_build_without_upstreams_refuses_their_keys() {
    let what = "the reverse proxy and FastCGI";
    let remove = "remove it, or build with the feature";
    for (text, key) in [
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"http://127.0.0.1:9001\"\n",
            "reverse_proxy",
        ),
        (
            "[[fastcgi]]\npattern = \"*.php\"\nto = \"unix:/run/php.sock\"\n",
            "fastcgi",
        ),
    ] {
        assert_eq!(
            load_err(text),
            refusal(2, key, what, "upstreams", remove),
            "{text}"
        );
    }
}

#[cfg(not(feature = "webdav"))]
#[test]
fn a_build_without_webdav_refuses_its_key() {
    assert_eq!(
        load_err("[[webdav]]\npath = \"/dav/\"\nroot = \".\"\n"),
        refusal(
            1,
            "webdav",
            "WebDAV",
            "webdav",
            "remove it, or build with the feature"
        )
    );
}

#[cfg(not(feature = "http3"))]
#[test]
fn a_build_without_http3_refuses_its_flag() {
    // (Listed by --help in every build: the shells' completions are one file.)
    let err = super::super::from_args(["--http3", "--check-config"].map(std::ffi::OsString::from))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "--http3: this brisk was built without HTTP/3 (the cargo feature `http3`) (see brisk --help)"
    );
}
