use super::*;
use crate::config::rules::from_toml;
use crate::http::parse::Limits;

const LIMITS: Limits = Limits {
    max_request_line: 8192,
    max_head: 8192,
    max_headers: 100,
};

fn request(target: &str, host: &str) -> OwnedRequest {
    let mut r = OwnedRequest::default();
    let head = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    assert!(r.parse(head.as_bytes(), &LIMITS).unwrap().is_some());
    r
}

const HTTP: Context = Context {
    scheme: Scheme::Http,
    https_port: None,
    local: &|| std::net::SocketAddr::from(([127, 0, 0, 1], 8080)),
    hosts: &[],
};
const HTTPS: Context = Context {
    scheme: Scheme::Https,
    https_port: None,
    local: &|| std::net::SocketAddr::from(([127, 0, 0, 1], 8443)),
    hosts: &[],
};

#[test]
fn ports_fill_in() {
    let toml = "[[redirect]]\nprefix = \"/\"\nto = \"https://$host$https_port$uri?p=$port\"\n";
    let on = |https_port| Context { https_port, ..HTTP };
    for (https_port, want) in [
        (Some(8443), "https://example.org:8443/a?p=8080"),
        (Some(443), "https://example.org/a?p=8080"),
        (None, "https://example.org/a?p=8080"),
    ] {
        let (out, loc) = run(toml, "/a", "Example.org:8080", on(https_port));
        assert_eq!((out, loc.as_str()), (Outcome::Redirect(302), want));
    }
}

/// A request that names no host (an empty `Host`; HTTP/1.0 may send
/// none) is redirected to the site's first name, else to the address it
/// came to: never to `https://:8443/`, which names no host (RFC 9110
/// §4.2.2).
#[test]
fn a_request_without_a_host_is_sent_to_the_site_or_the_address() {
    let toml = "[[redirect]]\nprefix = \"/\"\nto = \"https://$host$https_port$uri\"\n";
    let cx = Context {
        https_port: Some(8443),
        ..HTTP
    };
    let (_, loc) = run(toml, "/a", "", cx);
    assert_eq!(loc, "https://127.0.0.1:8443/a");
    let named = ["*.example.org".to_string(), "Site.example".to_lowercase()];
    let (_, loc) = run(
        toml,
        "/a",
        "",
        Context {
            hosts: &named,
            ..cx
        },
    );
    assert_eq!(loc, "https://site.example:8443/a");
}

/// What `toml`'s rules make of `GET target` to `host`: the outcome, and
/// the Location or the rewritten target.
fn run(toml: &str, target: &str, host: &str, cx: Context<'_>) -> (Outcome, String) {
    let cfg = from_toml(toml).unwrap();
    let mut req = request(target, host);
    let mut loc = Vec::new();
    let out = apply(&cfg.site.rules.url, &mut req, cx, &mut loc);
    let text = match out {
        Outcome::Redirect(_) => String::from_utf8(loc).unwrap(),
        _ => String::from_utf8(req.target().to_vec()).unwrap(),
    };
    (out, text)
}

#[test]
fn regex_redirect_with_captures_keeps_the_query() {
    let toml = "[[redirect]]\nfrom = \"^/old/(.*)$\"\nto = \"/new/$1\"\nstatus = 301\n";
    assert_eq!(
        run(toml, "/old/a/b?x=1", "h", HTTP),
        (Outcome::Redirect(301), "/new/a/b?x=1".into())
    );
    assert_eq!(
        run(toml, "/older", "h", HTTP),
        (Outcome::Route, "/older".into())
    );
}

#[test]
fn the_default_status_is_302() {
    let toml = "[[redirect]]\nexact = \"/a\"\nto = \"/b\"\n";
    assert_eq!(run(toml, "/a", "h", HTTP).0, Outcome::Redirect(302));
    // Exact means exact.
    assert_eq!(run(toml, "/a/", "h", HTTP).0, Outcome::Route);
}

#[test]
fn http_to_https_and_www_to_apex() {
    let toml = "[[redirect]]\nscheme = \"http\"\nprefix = \"/\"\nto = \"https://$host$uri\"\nstatus = 308\n\
                [[redirect]]\nhost = \"www.example.org\"\nprefix = \"/\"\nto = \"$scheme://example.org$uri\"\nstatus = 301\n";
    assert_eq!(
        run(toml, "/a%20b?q=1", "Example.ORG:8080", HTTP),
        (
            Outcome::Redirect(308),
            "https://example.org/a%20b?q=1".into()
        )
    );
    assert_eq!(run(toml, "/x", "example.org", HTTPS).0, Outcome::Route);
    assert_eq!(
        run(toml, "/x", "www.example.org.", HTTPS),
        (Outcome::Redirect(301), "https://example.org/x".into())
    );
}

#[test]
fn host_wildcards_match_subdomains_only() {
    let toml =
        "[[redirect]]\nhost = \"*.example.org\"\nprefix = \"/\"\nto = \"https://example.org/\"\n";
    assert_eq!(
        run(toml, "/", "a.example.org", HTTP).0,
        Outcome::Redirect(302)
    );
    assert_eq!(
        run(toml, "/", "A.B.EXAMPLE.org", HTTP).0,
        Outcome::Redirect(302)
    );
    assert_eq!(run(toml, "/", "example.org", HTTP).0, Outcome::Route);
    assert_eq!(run(toml, "/", "badexample.org", HTTP).0, Outcome::Route);
}

#[test]
fn rewrite_with_a_query_of_its_own() {
    let toml = "[[rewrite]]\nfrom = \"^/post/([0-9]+)$\"\nto = \"/post.html?id=$1\"\n";
    let cfg = from_toml(toml).unwrap();
    let mut req = request("/post/42?utm=x", "h");
    let mut loc = Vec::new();
    assert_eq!(
        apply(&cfg.site.rules.url, &mut req, HTTP, &mut loc),
        Outcome::Route
    );
    assert_eq!(req.target(), b"/post.html?id=42");
    assert_eq!(req.path().unwrap(), b"/post.html");
    assert_eq!(req.query(), Some(&b"id=42"[..]));
    assert_eq!(req.original_target(), b"/post/42?utm=x");
    // `$query` brings the request's along; a lone `?` drops it.
    let toml = "[[rewrite]]\nexact = \"/a\"\nto = \"/b?x=1&$query\"\n[[rewrite]]\nexact = \"/c\"\nto = \"/d?\"\n";
    assert_eq!(run(toml, "/a?y=2", "h", HTTP).1, "/b?x=1&y=2");
    assert_eq!(run(toml, "/c?y=2", "h", HTTP).1, "/d");
}

#[test]
fn captures_are_encoded_for_where_they_land() {
    let toml = "[[rewrite]]\nfrom = \"^/s/(.*)$\"\nto = \"/search?q=$1\"\n[[redirect]]\nprefix = \"/go/\"\nto = \"/to/$1\"\n";
    assert_eq!(
        run(toml, "/s/a%26b%3Dc%20d", "h", HTTP).1,
        "/search?q=a%26b%3Dc%20d"
    );
    // Spaces, quotes and angle brackets never reach a header raw (a
    // path with control characters does not decode: 400 before any rule).
    assert_eq!(
        run(toml, "/go/x%20%22%3Cb%3E%C3%A9", "h", HTTP),
        (Outcome::Redirect(302), "/to/x%20%22%3Cb%3E%C3%A9".into())
    );
}

#[test]
fn a_capture_cannot_make_a_scheme_relative_location() {
    let toml = "[[redirect]]\nfrom = \"^/r(.*)$\"\nto = \"/$1\"\n";
    assert_eq!(
        run(toml, "/r/evil.example", "h", HTTP),
        (Outcome::Redirect(302), "/evil.example".into())
    );
}

#[test]
fn rules_run_again_after_a_rewrite_and_loops_are_bounded() {
    // A rewrite, then a redirect of the rewritten path: in file order.
    let toml =
        "[[rewrite]]\nexact = \"/a\"\nto = \"/b\"\n[[redirect]]\nexact = \"/b\"\nto = \"/c\"\n";
    assert_eq!(
        run(toml, "/a", "h", HTTP),
        (Outcome::Redirect(302), "/c".into())
    );
    // A rule whose target is its own fixpoint stops.
    let toml = "[[rewrite]]\nfrom = \"^/app/\"\nto = \"/app/index.html\"\n";
    assert_eq!(
        run(toml, "/app/x/y", "h", HTTP),
        (Outcome::Route, "/app/index.html".into())
    );
    // One that grows for ever does not.
    let toml = "[[rewrite]]\nfrom = \"^/(.*)$\"\nto = \"/x/$1\"\n";
    let (out, _) = run(toml, "/a", "h", HTTP);
    assert_eq!(out, Outcome::Loop("test.toml:1".into()));
}

#[test]
fn redirects_and_rewrites_keep_file_order_across_arrays() {
    let toml = "[[redirect]]\nprefix = \"/a\"\nto = \"/first\"\n[[rewrite]]\nprefix = \"/\"\nto = \"/second\"\n[[redirect]]\nprefix = \"/\"\nto = \"/third\"\n";
    let cfg = from_toml(toml).unwrap();
    let order: Vec<&str> = cfg
        .site
        .rules
        .url
        .iter()
        .map(|r| r.to.text.as_str())
        .collect();
    assert_eq!(order, ["/first", "/second", "/third"]);
}

#[test]
fn bad_rules_are_config_errors_naming_file_line_and_key() {
    let err = |toml: &str| from_toml(toml).unwrap_err().message;
    assert!(
        err("[[redirect]]\nfrom = \"^/(a\"\nto = \"/\"\n")
            .starts_with("test.toml:2: redirect[1].from: not a valid regular expression"),
        "{}",
        err("[[redirect]]\nfrom = \"^/(a\"\nto = \"/\"\n")
    );
    assert_eq!(
        err("[[redirect]]\nfrom = \"^/(a)$\"\nto = \"/$2\"\n"),
        "test.toml:3: redirect[1].to: $2: this rule's match has 1 capture(s): $1 to $1"
    );
    assert_eq!(
        err("[[rewrite]]\nexact = \"/a\"\nto = \"https://x/\"\n"),
        "test.toml:3: rewrite[1].to: expected a path starting with \"/\" or $uri (a rewrite stays on this server); got \"https://x/\""
    );
    assert_eq!(
        err("[[redirect]]\nexact = \"/a\"\nto = \"/b\"\nstatus = 200\n"),
        "test.toml:4: redirect[1].status: expected 301, 302, 303, 307 or 308; got 200"
    );
    assert_eq!(
        err("[[redirect]]\nexact = \"/a\"\nto = \"/$path\"\n"),
        "test.toml:3: redirect[1].to: unknown variable $path; expected $1 to $9, $host, $uri, $scheme, $query, $port, $https_port or $$ for a \"$\""
    );
    assert_eq!(
        err("[[redirect]]\nto = \"/b\"\n"),
        "test.toml:1: redirect[1]: needs from = \"^/regex/(.*)$\", exact = \"/path\" or prefix = \"/path/\""
    );
}

#[test]
fn a_sites_rules_are_its_own() {
    let toml = "[[redirect]]\nexact = \"/a\"\nto = \"/b\"\n\n\
                [[site]]\nhosts = [\"example.org\"]\nroot = \"/tmp\"\n\
                [[site.rewrite]]\nexact = \"/x\"\nto = \"/y\"\n\
                [[site.cors]]\npath = \"/\"\norigins = \"*\"\n\
                [site.errors]\n404 = \"404.html\"\n";
    let cfg = from_toml(toml).unwrap();
    assert_eq!(cfg.site.rules.url.len(), 1);
    assert!(cfg.site.rules.cors.is_empty() && cfg.site.rules.errors.is_empty());
    let site = &cfg.sites[0].rules;
    assert_eq!(site.url.len(), 1);
    assert_eq!(site.url[0].action, UrlAction::Rewrite);
    assert_eq!((site.cors.len(), site.errors.len()), (1, 1));
    let err = from_toml("[[site]]\nhosts = [\"a.example\"]\nroot = \"/tmp\"\n[[site.redirect]]\nexact = \"/x\"\nto = \"/$1\"\n")
        .unwrap_err()
        .message;
    assert!(
        err.starts_with("test.toml:6: site[1].redirect[1].to: $1"),
        "{err}"
    );
}

#[test]
fn a_site_may_replace_the_fallback_it_inherits() {
    let toml = "[static]\nspa = \"index.html\"\n\n\
                [[site]]\nhosts = [\"a.example\"]\nroot = \"/tmp\"\n\
                [[site]]\nhosts = [\"b.example\"]\nroot = \"/tmp\"\n[site.static]\nspa = \"app.html\"\n";
    let cfg = from_toml(toml).unwrap();
    assert_eq!(cfg.site.static_files.try_files, ["/index.html"]);
    assert_eq!(cfg.sites[0].static_files.try_files, ["/index.html"]);
    assert_eq!(cfg.sites[1].static_files.try_files, ["/app.html"]);
}
