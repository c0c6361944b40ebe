//! `[[reverse_proxy]]` and `[[fastcgi]]` as loaded: the defaults, every
//! key, every error (naming file, line and key), rules inside a site.
//! (A build without the cargo feature `upstreams`: see `features.rs`.)

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use super::{load, load_err};
use crate::config::{
    Balance, FastcgiRule, HeaderEdits, Health, HostMode, PathMatch, ProxyRule, ServerMode, Upstream,
};

fn tcp(addr: &str, host: &str, tls: bool) -> Upstream {
    Upstream::Tcp {
        addr: addr.parse::<SocketAddr>().unwrap(),
        host: host.into(),
        also: [].into(),
        reached: Default::default(),
        tls,
    }
}

fn proxy(text: &str) -> Vec<ProxyRule> {
    load(text).unwrap().site.reverse_proxy
}

fn fastcgi(text: &str) -> Vec<FastcgiRule> {
    load(text).unwrap().site.fastcgi
}

/// `[[reverse_proxy]]` with `to` first, then `rest`, each on a line:
/// errors about `rest`'s first line are on line 4.
fn proxy_err(rest: &str) -> String {
    load_err(&format!(
        "[[reverse_proxy]]\nto = \"http://127.0.0.1:9001\"\n{rest}\n"
    ))
}

#[test]
fn none_by_default() {
    let c = load("").unwrap();
    assert!(c.site.reverse_proxy.is_empty() && c.site.fastcgi.is_empty());
}

#[test]
fn a_proxy_rule_has_the_documented_defaults() {
    let rules = proxy("[[reverse_proxy]]\npath = \"/api/\"\nto = \"http://127.0.0.1:9001\"\n");
    let [r] = &rules[..] else { panic!("{rules:?}") };
    assert_eq!(r.matches, PathMatch::Prefix("/api/".into()));
    assert_eq!(r.to, [tcp("127.0.0.1:9001", "127.0.0.1", false)]);
    assert_eq!(r.balance, Balance::RoundRobin);
    assert!(!r.strip_prefix);
    assert_eq!(r.connect_timeout, Duration::from_secs(5));
    assert_eq!(r.read_timeout, Duration::from_secs(60));
    assert_eq!(r.send_timeout, Duration::from_secs(60));
    assert_eq!(r.fail_timeout, Duration::from_secs(10));
    assert_eq!(r.max_fails, 1);
    assert_eq!(r.health, None);
    assert!(r.headers.is_empty() && r.response_headers.is_empty());
    assert_eq!(r.host, HostMode::Client);
    assert!(!r.via);
    assert_eq!(r.server, ServerMode::Upstream);
    assert_eq!(r.keepalive, 64);
    assert_eq!(r.keepalive_timeout, Duration::from_secs(60));
    assert!(r.tls_verify);
    assert_eq!(r.ca, None);
    assert!(r.websocket);
    assert!(!r.buffer_request);
}

#[test]
fn every_proxy_key() {
    let rules = proxy(
        "[[reverse_proxy]]\n\
         path = \"/api/\"\n\
         to = [\"http://127.0.0.1:9001\", \"HTTP://[::1]:9002\", \"unix:/run/app.sock\", \"http://localhost:80\"]\n\
         balance = \"least_conn\"\n\
         strip_prefix = true\n\
         connect_timeout = \"250ms\"\n\
         read_timeout = \"2m\"\n\
         send_timeout = 7\n\
         fail_timeout = \"30s\"\n\
         max_fails = 3\n\
         health = { path = \"/healthz?full=1\", interval = \"2s\" }\n\
         headers = { set = { \"X-App\" = \"brisk\", \"X-Empty\" = \"\" }, remove = [\"X-Powered-By\", \"x-powered-by\", \"Cookie\"] }\n\
         response_headers = { remove = \"Server-Timing\" }\n\
         host = \"upstream\"\n\
         via = true\n\
         server = \"brisk\"\n\
         keepalive = 0\n\
         keepalive_timeout = \"5s\"\n\
         websocket = false\n\
         buffer_request = true\n\
         [[reverse_proxy]]\n\
         pattern = \"*.json\"\n\
         to = \"unix:/run/json.sock\"\n\
         balance = \"ip_hash\"\n\
         health = { path = \"/\" }\n\
         [[reverse_proxy]]\n\
         path = \"/b/\"\n\
         to = [\"http://127.0.0.1:1\"]\n\
         balance = \"first\"\n\
         host = \"client\"\n\
         server = \"upstream\"\n",
    );
    let [a, b, c] = &rules[..] else {
        panic!("{rules:?}")
    };
    assert_eq!(a.matches, PathMatch::Prefix("/api/".into()));
    assert_eq!(a.to.len(), 4);
    assert_eq!(a.to[0], tcp("127.0.0.1:9001", "127.0.0.1", false));
    assert_eq!(a.to[1], tcp("[::1]:9002", "[::1]", false));
    assert_eq!(a.to[2], Upstream::Unix(Path::new("/run/app.sock").into()));
    // A name, resolved now (localhost: from /etc/hosts).
    match &a.to[3] {
        Upstream::Tcp {
            addr, host, tls, ..
        } => {
            assert!(addr.ip().is_loopback() && addr.port() == 80, "{addr}");
            assert_eq!((&**host, *tls), ("localhost", false));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(a.balance, Balance::LeastConn);
    assert!(a.strip_prefix);
    assert_eq!(a.connect_timeout, Duration::from_millis(250));
    assert_eq!(a.read_timeout, Duration::from_secs(120));
    assert_eq!(a.send_timeout, Duration::from_secs(7));
    assert_eq!(a.fail_timeout, Duration::from_secs(30));
    assert_eq!(a.max_fails, 3);
    assert_eq!(
        a.health,
        Some(Health {
            path: "/healthz?full=1".into(),
            interval: Duration::from_secs(2)
        })
    );
    assert_eq!(
        *a.headers,
        HeaderEdits {
            set: vec![
                ("X-App".into(), "brisk".into()),
                ("X-Empty".into(), "".into())
            ],
            remove: vec!["X-Powered-By".into(), "Cookie".into()],
        }
    );
    assert_eq!(
        *a.response_headers,
        HeaderEdits {
            set: vec![],
            remove: vec!["Server-Timing".into()],
        }
    );
    assert_eq!(a.host, HostMode::Upstream);
    assert!(a.via);
    assert_eq!(a.server, ServerMode::Brisk);
    assert_eq!(a.keepalive, 0);
    assert_eq!(a.keepalive_timeout, Duration::from_secs(5));
    assert!(!a.websocket);
    assert!(a.buffer_request);

    assert_eq!(b.matches, PathMatch::Glob("*.json".into()));
    assert_eq!(b.to, [Upstream::Unix(Path::new("/run/json.sock").into())]);
    assert_eq!(b.balance, Balance::IpHash);
    assert_eq!(
        b.health.as_ref().map(|h| h.interval),
        Some(Duration::from_secs(5))
    );
    assert_eq!(c.balance, Balance::First);
    assert_eq!(c.host, HostMode::Client);
    assert_eq!(c.server, ServerMode::Upstream);
}

#[cfg(feature = "tls")]
#[test]
fn https_upstreams_and_their_keys() {
    let dir = super::TempDir::new();
    let pem = crate::source_dir().join("engine/src/tls/testdata/a.pem");
    std::fs::copy(pem, dir.path().join("ca.pem")).unwrap();
    dir.write("not-pem.txt", "hello\n");
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n[[reverse_proxy]]\npath = \"/\"\n\
         to = [\"https://127.0.0.1\", \"https://[::1]:8443\"]\n\
         tls_verify = false\nca = \"ca.pem\"\n",
    );
    let c = super::config(&["--config", file.to_str().unwrap()]);
    let r = &c.site.reverse_proxy[0];
    assert_eq!(r.to[0], tcp("127.0.0.1:443", "127.0.0.1", true));
    assert_eq!(r.to[1], tcp("[::1]:8443", "[::1]", true));
    assert!(!r.tls_verify);
    assert_eq!(r.ca.as_deref(), Some(dir.path().join("ca.pem").as_path()));

    let e = |ca: &str| {
        let text = format!(
            "root = \"public\"\n[[reverse_proxy]]\npath = \"/\"\n\
             to = \"https://127.0.0.1\"\nca = \"{ca}\"\n"
        );
        let file = dir.write("site.toml", &text);
        match super::args(&["--config", file.to_str().unwrap()]) {
            Err(e) => e.message.replace(dir.path().to_str().unwrap(), "DIR"),
            Ok(c) => panic!("{c:?}"),
        }
    };
    assert_eq!(
        e("not-pem.txt"),
        "DIR/site.toml:5: reverse_proxy[1].ca: DIR/not-pem.txt: no certificate in it \
         (expected PEM \"-----BEGIN CERTIFICATE-----\" blocks)"
    );
    assert!(
        e("missing.pem")
            .starts_with("DIR/site.toml:5: reverse_proxy[1].ca: cannot read DIR/missing.pem: "),
        "{}",
        e("missing.pem")
    );
}

#[cfg(not(feature = "tls"))]
#[test]
fn https_upstreams_need_the_feature_tls() {
    assert_eq!(
        load_err("[[reverse_proxy]]\npath = \"/\"\nto = [\"http://127.0.0.1:1\", \"https://127.0.0.1\"]\n"),
        "DIR/site.toml:4: reverse_proxy[1].to: this brisk was built without https:// upstreams \
         (the cargo feature `tls`); use http://, or build with the feature"
    );
}

#[test]
fn tls_keys_need_an_https_upstream() {
    assert_eq!(
        proxy_err("path = \"/\"\ntls_verify = false"),
        "DIR/site.toml:5: reverse_proxy[1].tls_verify: is used with https:// upstreams only, \
         and this rule has none"
    );
}

#[test]
fn a_fastcgi_rule_has_the_documented_defaults() {
    let rules =
        fastcgi("[[fastcgi]]\npattern = \"*.php\"\nto = \"unix:/run/php/php8.2-fpm.sock\"\n");
    let [r] = &rules[..] else { panic!("{rules:?}") };
    assert_eq!(r.matches, PathMatch::Glob("*.php".into()));
    assert_eq!(
        r.to,
        [Upstream::Unix(Path::new("/run/php/php8.2-fpm.sock").into())]
    );
    assert_eq!(
        (&r.index, &r.split_path, &r.fallback),
        (&None, &None, &None)
    );
    assert_eq!(r.root, None);
    assert!(r.env.is_empty());
    assert_eq!(r.connect_timeout, Duration::from_secs(5));
    assert_eq!(r.read_timeout, Duration::from_secs(60));
    assert_eq!(r.send_timeout, Duration::from_secs(60));
    assert_eq!(r.balance, Balance::RoundRobin);
    assert_eq!(r.fail_timeout, Duration::from_secs(10));
    assert_eq!(r.max_fails, 1);
    assert_eq!(r.keepalive, 0);
    assert_eq!(r.keepalive_timeout, Duration::from_secs(60));
    assert!(r.buffer_request);
}

#[test]
fn every_fastcgi_key() {
    let dir = super::TempDir::new();
    std::fs::create_dir_all(dir.path().join("app/public")).unwrap();
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n[[fastcgi]]\npath = \"/app/\"\n\
         to = [\"127.0.0.1:9000\", \"[::1]:9001\", \"unix:/run/php.sock\"]\n\
         index = \"index.php\"\nsplit_path = \".php\"\nfallback = \"/index.php\"\n\
         root = \"app/public\"\nenv = { APP_ENV = \"prod\", _X1 = \"\" }\n\
         connect_timeout = \"1s\"\nread_timeout = \"300s\"\nsend_timeout = \"10s\"\n\
         keepalive = 8\nkeepalive_timeout = \"1m\"\n\
         balance = \"least_conn\"\nfail_timeout = \"30s\"\nmax_fails = 3\n\
         buffer_request = false\n",
    );
    let c = super::config(&["--config", file.to_str().unwrap()]);
    let [r] = &c.site.fastcgi[..] else {
        panic!("{:?}", c.site.fastcgi)
    };
    assert_eq!(r.matches, PathMatch::Prefix("/app/".into()));
    assert_eq!(
        r.to,
        [
            tcp("127.0.0.1:9000", "127.0.0.1", false),
            tcp("[::1]:9001", "[::1]", false),
            Upstream::Unix(Path::new("/run/php.sock").into()),
        ]
    );
    assert_eq!(r.index.as_deref(), Some("index.php"));
    assert_eq!(r.split_path.as_deref(), Some(".php"));
    assert_eq!(r.fallback.as_deref(), Some("/index.php"));
    let root = dir.path().join("app/public").canonicalize().unwrap();
    assert_eq!(r.root.as_deref(), Some(root.as_path()));
    assert_eq!(
        r.env,
        [
            ("APP_ENV".to_string(), "prod".to_string()),
            ("_X1".to_string(), String::new())
        ]
    );
    assert_eq!(r.connect_timeout, Duration::from_secs(1));
    assert_eq!(r.balance, Balance::LeastConn);
    assert_eq!(r.fail_timeout, Duration::from_secs(30));
    assert_eq!(r.max_fails, 3);
    assert_eq!(r.read_timeout, Duration::from_secs(300));
    assert_eq!(r.send_timeout, Duration::from_secs(10));
    assert_eq!(r.keepalive, 8);
    assert!(!r.buffer_request);
    assert_eq!(r.keepalive_timeout, Duration::from_secs(60));
}

#[test]
fn proxy_errors_name_file_line_and_key() {
    let key = "reverse_proxy[1]";
    let cases: &[(&str, String)] = &[
        (
            "[[reverse_proxy]]\npath = \"/\"\n",
            format!("DIR/site.toml:2: {key}: needs to = \"http://127.0.0.1:9001\" (or a list of upstreams)"),
        ),
        (
            "[[reverse_proxy]]\nto = \"unix:/a\"\n",
            format!("DIR/site.toml:2: {key}: needs path = \"/prefix/\" or pattern = \"*.ext\""),
        ),
        (
            "[reverse_proxy]\npath = \"/\"\n",
            "DIR/site.toml:2: reverse_proxy: expected an array of tables ([[reverse_proxy]]); got a table".into(),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = []\n",
            format!("DIR/site.toml:4: {key}.to: expected at least one upstream; got an array"),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = 9001\n",
            format!("DIR/site.toml:4: {key}.to: expected a string or an array of strings; got 9001"),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = [\"unix:/a\", \"127.0.0.1:9001\"]\n",
            format!(
                "DIR/site.toml:4: {key}.to: expected an upstream like \"http://127.0.0.1:9001\", \
                 \"https://app.example\" or \"unix:/run/app.sock\"; got \"127.0.0.1:9001\""
            ),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"http://127.0.0.1\"\n",
            format!(
                "DIR/site.toml:4: {key}.to: \"http://127.0.0.1\" names no port: write it, as in \
                 \"http://127.0.0.1:8080\""
            ),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"http://127.0.0.1:9001/api\"\n",
            format!(
                "DIR/site.toml:4: {key}.to: \"http://127.0.0.1:9001/api\": an upstream is an \
                 address only, with nothing after host:port (the request's own path is sent; \
                 see strip_prefix)"
            ),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"unix:run/app.sock\"\n",
            format!(
                "DIR/site.toml:4: {key}.to: \"unix:run/app.sock\": the socket's path must be \
                 absolute, as in \"unix:/run/app.sock\""
            ),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"http://user@x:1\"\n",
            format!("DIR/site.toml:4: {key}.to: \"http://user@x:1\": no user name or password in an upstream"),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"http://x:99999\"\n",
            format!("DIR/site.toml:4: {key}.to: \"http://x:99999\": \"99999\" is no port (1 to 65535)"),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"http://*.x:1\"\n",
            format!(
                "DIR/site.toml:4: {key}.to: \"http://*.x:1\": \"*.x\" is no host name or IP \
                 address (IPv6 in brackets)"
            ),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\npattern = \"*.x\"\n",
            format!("DIR/site.toml:4: {key}.pattern: give either path or pattern, not both"),
        ),
        (
            "[[reverse_proxy]]\npattern = \"*.x\"\nto = \"unix:/a\"\nstrip_prefix = true\n",
            format!(
                "DIR/site.toml:5: {key}.strip_prefix: is used with path = \"/prefix/\" only (a \
                 pattern has no prefix to strip)"
            ),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"unix:/a\"\nbalance = \"random\"\n",
            format!(
                "DIR/site.toml:5: {key}.balance: expected one of \"round_robin\", \"least_conn\", \
                 \"ip_hash\", \"first\"; got \"random\""
            ),
        ),
        (
            "[[reverse_proxy]]\npath = \"/\"\nto = \"unix:/a\"\ntimeout = 1\n",
            "unknown key".into(),
        ),
    ];
    for (text, want) in cases {
        let got = load_err(text);
        if want == "unknown key" {
            assert!(
                got.starts_with(&format!(
                    "DIR/site.toml:5: unknown key \"{key}.timeout\"; expected one of \"path\", \"pattern\", \"to\","
                )),
                "{got}"
            );
        } else {
            assert_eq!(&got, want, "{text}");
        }
    }
}

#[test]
fn a_name_that_does_not_resolve_is_an_error() {
    // (.invalid never resolves: RFC 6761 §6.4.)
    let e = proxy_err(
        "path = \"/\"\n[[reverse_proxy]]\npath = \"/\"\nto = \"http://nothing.invalid:80\"",
    );
    let want = "DIR/site.toml:7: reverse_proxy[2].to: cannot resolve nothing.invalid: ";
    assert!(e.starts_with(want), "{e}");
    let e = load_err("[[fastcgi]]\npath = \"/\"\nto = \"nothing.invalid:9000\"\n");
    let want = "DIR/site.toml:4: fastcgi[1].to: cannot resolve nothing.invalid: ";
    assert!(e.starts_with(want), "{e}");
}

#[test]
fn proxy_value_errors() {
    let cases = [
        (
            "path = \"/\"\nconnect_timeout = 0",
            "connect_timeout: expected a duration greater than zero; got 0",
        ),
        ("path = \"/\"\nread_timeout = \"soon\"", "read_timeout: expected a number of seconds or a duration like \"250ms\", \"5s\", \"2m\", \"1h\"; got \"soon\""),
        ("path = \"/\"\nmax_fails = -1", "max_fails: expected an integer from 0 to 1000; got -1"),
        ("path = \"/\"\nkeepalive = 10001", "keepalive: expected an integer from 0 to 10000; got 10001"),
        ("path = \"/\"\nvia = \"yes\"", "via: expected true or false; got \"yes\""),
        ("path = \"/\"\nhost = \"server\"", "host: expected one of \"client\", \"upstream\"; got \"server\""),
        ("path = \"/\"\nserver = \"none\"", "server: expected one of \"upstream\", \"brisk\"; got \"none\""),
        ("path = \"/\"\nhealth = { interval = \"1s\" }", "health: needs path = \"/healthz\""),
        (
            "path = \"/\"\nhealth = { path = \"healthz\" }",
            "health.path: expected a path like \"/healthz\" (no spaces or control characters); got \"healthz\"",
        ),
        (
            "path = \"/\"\nhealth = { path = \"/a b\" }",
            "health.path: expected a path like \"/healthz\" (no spaces or control characters); got \"/a b\"",
        ),
        (
            "path = \"/\"\nhealth = { path = \"/\", interval = 0 }",
            "health.interval: expected a duration greater than zero; got 0",
        ),
        (
            "path = \"/\"\nheaders = { set = { \"X-A\" = \"a\\r\\nX-Evil: 1\" } }",
            "headers.set.\"X-A\": control characters (CR, LF, NUL…) are not allowed in a header value",
        ),
        (
            "path = \"/\"\nresponse_headers = { set = { \"X-A\" = \"a\\nb\" } }",
            "response_headers.set.\"X-A\": control characters (CR, LF, NUL…) are not allowed in a header value",
        ),
        (
            "path = \"/\"\nheaders = { set = { \"X A\" = \"a\" } }",
            "headers.set.\"X A\": not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)",
        ),
        (
            "path = \"/\"\nheaders = { set = { \"X-A\" = \"1\", \"x-a\" = \"2\" } }",
            "headers.set.\"x-a\": this header is set twice (names are case-insensitive)",
        ),
        ("path = \"/\"\nheaders = { set = {} }", "headers.set: expected at least one header"),
        (
            "path = \"/\"\nheaders = { remove = [\"X:A\"] }",
            "headers.remove: expected a header name (letters, digits and !#$%&'*+-.^_`|~ only); got \"X:A\"",
        ),
        ("path = \"/\"\nheaders = [\"X-A\"]", "headers: expected a table; got an array"),
    ];
    for (rest, want) in cases {
        let got = proxy_err(rest);
        let want = format!("DIR/site.toml:5: reverse_proxy[1].{want}");
        assert_eq!(got, want, "{rest}");
    }
    let got = proxy_err("path = \"/\"\nheaders = { add = {} }");
    assert!(
        got.starts_with("DIR/site.toml:5: unknown key \"reverse_proxy[1].headers.add\"; "),
        "{got}"
    );
    let got = proxy_err("path = \"/\"\nhealth = { path = \"/\", every = 1 }");
    assert!(
        got.starts_with("DIR/site.toml:5: unknown key \"reverse_proxy[1].health.every\"; "),
        "{got}"
    );
}

#[test]
fn hop_by_hop_and_framing_fields_are_brisks() {
    let why = "Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Content-Length \
               and Host are brisk's to write on a forwarded message (hop-by-hop and framing \
               fields, RFC 9110 §7.6.1); for the upstream's own Host, set host = \"upstream\"";
    for name in [
        "Connection",
        "Transfer-Encoding",
        "content-length",
        "HOST",
        "Upgrade",
        "TE",
        "Trailer",
        "Keep-Alive",
    ] {
        for table in ["headers", "response_headers"] {
            let got = proxy_err(&format!(
                "path = \"/\"\n{table} = {{ set = {{ \"{name}\" = \"x\" }} }}"
            ));
            let want = format!("DIR/site.toml:5: reverse_proxy[1].{table}.set.\"{name}\": {why}");
            assert_eq!(got, want);
            let got = proxy_err(&format!(
                "path = \"/\"\n{table} = {{ remove = \"{name}\" }}"
            ));
            let want = format!("DIR/site.toml:5: reverse_proxy[1].{table}.remove: {why}");
            assert_eq!(got, want);
        }
    }
    // Other fields may be set and removed, Date and Server among them.
    let rules = proxy(
        "[[reverse_proxy]]\npath = \"/\"\nto = \"unix:/a\"\n\
         headers = { set = { Date = \"x\", X-Forwarded-Proto = \"https\" } }\n\
         response_headers = { remove = [\"Server\"] }\n",
    );
    assert_eq!(rules[0].headers.set.len(), 2);
}

#[test]
fn fastcgi_errors_name_file_line_and_key() {
    let rule = "[[fastcgi]]\npath = \"/\"\nto = \"127.0.0.1:9000\"\n";
    let key = "fastcgi[1]";
    let cases = [
        ("index = \"a/index.php\"", format!("{key}.index: expected a file name like \"index.php\"; got \"a/index.php\"")),
        ("index = \"\"", format!("{key}.index: expected a file name like \"index.php\"; got \"\"")),
        ("split_path = \"php\"", format!("{key}.split_path: expected an extension like \".php\"; got \"php\"")),
        ("split_path = \".php/\"", format!("{key}.split_path: expected an extension like \".php\"; got \".php/\"")),
        ("fallback = \"index.php\"", format!("{key}.fallback: expected the path of a script like \"/index.php\"; got \"index.php\"")),
        ("fallback = \"/a/../index.php\"", format!("{key}.fallback: expected the path of a script like \"/index.php\"; got \"/a/../index.php\"")),
        ("fallback = \"/app/\"", format!("{key}.fallback: expected the path of a script like \"/index.php\"; got \"/app/\"")),
        ("env = { \"1X\" = \"a\" }", format!("{key}.env.1X: not a valid environment variable name (letters, digits and _, not starting with a digit)")),
        ("keepalive_timeout = 0", format!("{key}.keepalive_timeout: expected a duration greater than zero; got 0")),
        ("strip_prefix = true", "unknown".to_string()),
    ];
    for (line, want) in cases {
        let got = load_err(&format!("{rule}{line}\n"));
        if want == "unknown" {
            assert!(got.starts_with("DIR/site.toml:5: unknown key \"fastcgi[1].strip_prefix\"; expected one of \"path\", \"pattern\", \"to\", \"index\""), "{got}");
        } else {
            assert_eq!(got, format!("DIR/site.toml:5: {want}"), "{line}");
        }
    }
    // (A quoted key: `load_err` adds a root unless a line starts with `root`.)
    let got = load_err(&format!("{rule}\"root\" = \"nowhere\"\n"));
    assert!(
        got.starts_with("DIR/site.toml:5: fastcgi[1].root: cannot use DIR/nowhere as the FastCGI scripts' root: "),
        "{got}"
    );
    for (to, why) in [
        ("127.0.0.1", "\"127.0.0.1\" names no port: write it, as in \"127.0.0.1:9000\""),
        (
            "http://127.0.0.1:9000",
            "expected a FastCGI server like \"127.0.0.1:9000\" or \"unix:/run/php/php-fpm.sock\" (no scheme); got \"http://127.0.0.1:9000\"",
        ),
        ("unix:php.sock", "\"unix:php.sock\": the socket's path must be absolute, as in \"unix:/run/app.sock\""),
    ] {
        let got = load_err(&format!("[[fastcgi]]\npattern = \"*.php\"\nto = \"{to}\"\n"));
        assert_eq!(got, format!("DIR/site.toml:4: fastcgi[1].to: {why}"));
    }
    assert_eq!(
        load_err("[[fastcgi]]\npattern = \"*.php\"\n"),
        "DIR/site.toml:2: fastcgi[1]: needs to = \"unix:/run/php/php-fpm.sock\" or \"127.0.0.1:9000\""
    );
}

#[cfg(feature = "sites")]
#[test]
fn rules_inside_a_site_are_its_own() {
    let dir = super::TempDir::new();
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    let text = "root = \"public\"\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = \"http://127.0.0.1:9001\"\n\
         [[site]]\nhosts = [\"a.test\"]\nroot = \"a\"\n\
         [[site.reverse_proxy]]\npath = \"/\"\nto = \"unix:/run/a.sock\"\n\
         [[site.fastcgi]]\npattern = \"*.php\"\nto = \"127.0.0.1:9000\"\n";
    let file = dir.write("site.toml", text);
    let c = super::config(&["--config", file.to_str().unwrap()]);
    assert_eq!(c.site.reverse_proxy.len(), 1);
    assert!(c.site.fastcgi.is_empty());
    let a = &c.sites[0];
    // Not inherited from the default site: its own rules only.
    assert_eq!(a.reverse_proxy.len(), 1);
    assert_eq!(
        a.reverse_proxy[0].to,
        [Upstream::Unix(Path::new("/run/a.sock").into())]
    );
    assert_eq!(a.fastcgi.len(), 1);
    assert_eq!(a.fastcgi[0].matches, PathMatch::Glob("*.php".into()));

    let bad = format!("{text}[[site.fastcgi]]\npath = \"/x/\"\nto = \"unix:x\"\n");
    let file = dir.write("site.toml", &bad);
    let e = super::args(&["--config", file.to_str().unwrap()]).unwrap_err();
    assert_eq!(
        e.message.replace(dir.path().to_str().unwrap(), "DIR"),
        "DIR/site.toml:16: site[1].fastcgi[2].to: \"unix:x\": the socket's path must be \
         absolute, as in \"unix:/run/app.sock\""
    );
}

#[test]
fn the_summary_lists_the_rules() {
    let dir = super::TempDir::new();
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n\
         [[reverse_proxy]]\npath = \"/api/\"\nto = [\"http://127.0.0.1:9001\", \"unix:/run/app.sock\", \"http://localhost:9002\"]\n\
         strip_prefix = true\nhealth = { path = \"/healthz\" }\n\
         headers = { set = { X-App = \"brisk\" }, remove = [\"Cookie\"] }\n\
         [[reverse_proxy]]\npattern = \"*.json\"\nto = \"http://127.0.0.1:9003\"\nbalance = \"first\"\n\
         host = \"upstream\"\nserver = \"brisk\"\nvia = true\nwebsocket = false\nkeepalive = 0\n\
         buffer_request = true\n\
         [[fastcgi]]\npattern = \"*.php\"\nto = \"127.0.0.1:9000\"\nindex = \"index.php\"\n\
         split_path = \".php\"\nfallback = \"/index.php\"\nenv = { SECRET = \"s3cr3t\" }\n",
    );
    let c = super::config(&["--config", file.to_str().unwrap()]);
    let Upstream::Tcp { addr, .. } = &c.site.reverse_proxy[0].to[2] else {
        panic!("{c:?}")
    };
    let s = match super::args(&["--config", file.to_str().unwrap(), "--check-config"]) {
        Ok(crate::config::Command::CheckOk(s)) => s,
        other => panic!("{other:?}"),
    };
    let want = format!(
        "reverse proxy: 2 rules\n\
        \x20 path /api/ (prefix stripped): to http://127.0.0.1:9001, unix:/run/app.sock, \
        http://localhost:9002 ({addr}) by round_robin; timeouts connect 5s, read 60s, \
        send 60s; down after 1 failure for 10s; health GET /healthz every 5s; request headers \
        set X-App, remove Cookie; 64 idle connections kept 60s\n\
        \x20 pattern *.json: to http://127.0.0.1:9003; timeouts connect 5s, read 60s, \
        send 60s; never marked down (the only upstream); Host the upstream's; Server brisk's; Via \
        added; no WebSocket; request bodies held whole first; no idle connections kept\n\
        fastcgi: 1 rule\n\
        \x20 pattern *.php: to 127.0.0.1:9000; index index.php; PATH_INFO after .php; else \
        /index.php; env SECRET; timeouts connect 5s, read 60s, send 60s; no idle connections \
        kept\n"
    );
    assert!(s.contains(&want), "{s}\n{want}");
    assert!(!s.contains("s3cr3t"), "{s}");
}

#[test]
fn new_connections_start_past_an_address_that_failed() {
    let at = |s: &str| s.parse::<std::net::SocketAddr>().unwrap();
    let (a, b, c) = (at("[::1]:9"), at("127.0.0.1:9"), at("127.0.0.2:9"));
    let to = Upstream::Tcp {
        addr: a,
        also: [b, c].into(),
        reached: Default::default(),
        host: "app.test".into(),
        tls: false,
    };
    // Each address once, in the resolver's order.
    let mut t = to.tried();
    assert_eq!(to.address(t), Some(a));
    let mut walk = vec![];
    let mut again = to.tried();
    assert_eq!(to.address(again), Some(a));
    while let Some(x) = to.next_address(&mut t) {
        walk.push(x);
    }
    assert_eq!(walk, [b, c]);
    // The first two failed: the next connection starts at the last, then
    // wraps around, each once again.
    let mut t = to.tried();
    assert_eq!(to.address(t), Some(c));
    let walk: Vec<_> = std::iter::from_fn(|| to.next_address(&mut t)).collect();
    assert_eq!(walk, [a, b]);
    // Those two failed again: the start is the second now. A walk that
    // began before the start moved does not move it back, nor skip an
    // address of its own.
    assert_eq!(to.next_address(&mut again), Some(b));
    assert_eq!(to.address(to.tried()), Some(b));
    // Copies share it (the workers hold copies); a unix socket has none.
    assert_eq!(to.clone().address(to.tried()), Some(b));
    let unix = Upstream::Unix(std::path::Path::new("/run/app.sock").into());
    assert_eq!(unix.address(unix.tried()), None);
    assert_eq!(unix.next_address(&mut unix.tried()), None);
}

/// A `path` rule without `split_path` runs every file beneath it: a PHP
/// site's (its index or fallback a `.php`) images and uploads would go
/// to php-fpm as scripts. Said at load; a directory of FastCGI programs
/// (no `.php` named) and a rule with `split_path` are not warned of.
#[test]
fn a_php_path_rule_without_split_path_is_warned_of() {
    let to = "to = \"unix:/run/php.sock\"\n";
    let warned = |text: &str| -> Vec<String> {
        let c = load(text).unwrap();
        c.warnings()
            .into_iter()
            .filter(|w| w.contains("fastcgi["))
            .collect()
    };
    let w = warned(&format!(
        "[[fastcgi]]\npath = \"/\"\n{to}index = \"index.php\"\nfallback = \"/index.php\"\n"
    ));
    assert_eq!(
        w,
        [
            "fastcgi[1]: path / has no split_path, so every file beneath it (a stylesheet, an \
          image, an upload) is sent to the application as a script to run: php-fpm refuses \
          each with 403 \"Access denied.\", or runs it as PHP where security.limit_extensions \
          allows; add split_path = \".php\" (the other files are then served as files)"
        ]
    );
    let w = warned(&format!(
        "[[fastcgi]]\npattern = \"*.cgi\"\n{to}\n[[fastcgi]]\npath = \"/app/\"\n{to}fallback = \"/app/index.php\"\n"
    ));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("fastcgi[2]: path /app/ has no split_path"),
        "{w:?}"
    );
    for fine in [
        format!(
            "[[fastcgi]]\npath = \"/\"\n{to}split_path = \".php\"\nfallback = \"/index.php\"\n"
        ),
        format!("[[fastcgi]]\npath = \"/fcgi/\"\n{to}"),
        format!("[[fastcgi]]\npattern = \"*.php\"\n{to}index = \"index.php\"\n"),
    ] {
        assert_eq!(warned(&fine), Vec::<String>::new(), "{fine}");
    }
}

/// A `pattern` rule's `fallback` takes only the missing paths the
/// pattern matches (`/x.php`), not `/users/3`: `pattern = "*.php"` with
/// `fallback = "/index.php"` reads like a front controller and is none.
/// Said at load; a `path` rule's fallback is not warned of.
#[test]
fn a_pattern_rule_with_a_fallback_is_warned_of() {
    let to = "to = \"unix:/run/php.sock\"\n";
    let c = load(&format!(
        "[[fastcgi]]\npattern = \"*.php\"\n{to}split_path = \".php\"\nfallback = \"/index.php\"\n"
    ))
    .unwrap();
    let w: Vec<String> = c
        .warnings()
        .into_iter()
        .filter(|w| w.contains("fastcgi["))
        .collect();
    assert_eq!(
        w,
        [
            "fastcgi[1].fallback: /index.php takes only the missing paths that the rule's pattern \
          *.php matches, not /users/3 nor any other path: for a front controller of every path \
          that is no file, write path = \"/\" (with split_path = \".php\") instead of the \
          pattern"
        ]
    );
    let c = load(&format!(
        "[[fastcgi]]\npath = \"/\"\n{to}split_path = \".php\"\nfallback = \"/index.php\"\n"
    ))
    .unwrap();
    assert!(!c.warnings().iter().any(|w| w.contains("fastcgi[")));
}
