use std::path::{Path, PathBuf};

use crate::handlers::cgi::{build_env, EnvRequest, Script};
use crate::http::parse::Header;
use crate::http::TlsSession;

/// A script at `/srv/cgi-bin/env.cgi` with `path_info`.
pub(crate) fn script(path_info: &[u8]) -> Script {
    Script {
        rule: 0,
        program: PathBuf::from("/srv/cgi-bin/env.cgi"),
        args: Vec::new(),
        script_filename: PathBuf::from("/srv/cgi-bin/env.cgi"),
        script_name: b"/cgi-bin/env.cgi".to_vec(),
        path_info: path_info.to_vec(),
        cwd: PathBuf::from("/srv/cgi-bin"),
        nph: false,
    }
}

/// A header field.
pub(crate) fn h<'a>(name: &'a str, value: &'a str) -> Header<'a> {
    Header {
        name: name.as_bytes(),
        value: value.as_bytes(),
    }
}

/// A POST with `headers` from 192.0.2.7 to 10.0.0.1:8080 (IPv4-mapped).
pub(crate) fn request<'a>(headers: &'a [Header<'a>]) -> EnvRequest<'a> {
    EnvRequest {
        method: b"POST",
        raw_target: b"/cgi-bin/env.cgi/a%20b/c?x=1&y=%2F",
        query: b"x=1&y=%2F",
        version: "HTTP/1.1",
        headers: headers.iter().copied(),
        remote: "192.0.2.7:51234".parse().unwrap(),
        local: "[::ffff:10.0.0.1]:8080".parse().unwrap(),
        server_name: b"example.org",
        document_root: Path::new("/srv/www"),
        content_length: Some(11),
        remote_user: None,
        auth_type: None,
        forwarded_https: None,
        tls: None,
    }
}

/// The entries, sorted (an environment has no order: the variables are
/// set in the order `vars` finds them).
fn strings(env: Vec<std::ffi::CString>) -> Vec<String> {
    let mut env: Vec<String> = env.into_iter().map(|c| c.into_string().unwrap()).collect();
    env.sort();
    env
}

#[test]
fn full_environment_byte_exact() {
    let headers = [
        h("Host", "example.org:8080"),
        h("User-Agent", "test/1.0"),
        h("Content-Type", "application/x-www-form-urlencoded"),
        h("Content-Length", "11"),
        h("Accept", "text/html"),
        h("accept", "text/plain"),
        h("Cookie", "a=1"),
        h("Cookie", "b=2"),
        h("Proxy", "http://evil.example:3128"),
        h("Authorization", "Basic dXNlcjpwYXNz"),
        h("Proxy-Authorization", "Basic eDp5"),
        h("X_Forwarded_For", "6.6.6.6"),
        h("X-Forwarded-For", "198.51.100.1"),
        h("X.Odd", "1"),
        h("X-Empty", ""),
    ];
    let env = strings(build_env(&script(b"/a b/c"), &request(&headers), &[]));
    let expected = [
        "CONTENT_LENGTH=11",
        "CONTENT_TYPE=application/x-www-form-urlencoded",
        "DOCUMENT_ROOT=/srv/www",
        "GATEWAY_INTERFACE=CGI/1.1",
        "HTTP_ACCEPT=text/html, text/plain",
        "HTTP_COOKIE=a=1; b=2",
        "HTTP_HOST=example.org:8080",
        "HTTP_USER_AGENT=test/1.0",
        "HTTP_X_EMPTY=",
        "HTTP_X_FORWARDED_FOR=198.51.100.1",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "PATH_INFO=/a b/c",
        "PATH_TRANSLATED=/srv/www/a b/c",
        "QUERY_STRING=x=1&y=%2F",
        "REDIRECT_STATUS=200",
        "REMOTE_ADDR=192.0.2.7",
        "REMOTE_HOST=192.0.2.7",
        "REMOTE_PORT=51234",
        "REQUEST_METHOD=POST",
        "REQUEST_SCHEME=http",
        "REQUEST_URI=/cgi-bin/env.cgi/a%20b/c?x=1&y=%2F",
        "SCRIPT_FILENAME=/srv/cgi-bin/env.cgi",
        "SCRIPT_NAME=/cgi-bin/env.cgi",
        "SERVER_ADDR=10.0.0.1",
        "SERVER_NAME=example.org",
        "SERVER_PORT=8080",
        "SERVER_PROTOCOL=HTTP/1.1",
        "SERVER_SOFTWARE=brisk/0.1.0",
    ];
    assert_eq!(env, expected);
}

#[test]
fn minimal_request_leaves_optional_variables_unset() {
    let mut req = request(&[]);
    req.method = b"GET";
    req.raw_target = b"/cgi-bin/env.cgi";
    req.query = b"";
    req.version = "HTTP/1.0";
    req.content_length = None;
    req.remote = "[2001:db8::1]:443".parse().unwrap();
    req.document_root = Path::new("/");
    let env = strings(build_env(&script(b""), &req, &[]));
    let names: Vec<&str> = env.iter().map(|e| e.split('=').next().unwrap()).collect();
    for absent in [
        "AUTH_TYPE",
        "CONTENT_LENGTH",
        "CONTENT_TYPE",
        "PATH_INFO",
        "PATH_TRANSLATED",
        "REMOTE_USER",
    ] {
        assert!(!names.contains(&absent), "{absent} in {env:?}");
    }
    assert!(env.contains(&"QUERY_STRING=".to_string()));
    assert!(env.contains(&"REMOTE_ADDR=2001:db8::1".to_string()));
    assert!(env.contains(&"SERVER_PROTOCOL=HTTP/1.0".to_string()));
    // Each name once.
    let mut once = names.clone();
    once.sort();
    once.dedup();
    assert_eq!(names.len(), once.len(), "{env:?}");
}

#[test]
fn over_tls_https_and_the_ssl_variables_are_set() {
    let mut req = request(&[]);
    req.local = "127.0.0.1:8443".parse().unwrap();
    let plain = strings(build_env(&script(b""), &req, &[]));
    for absent in ["HTTPS", "SSL_PROTOCOL", "SSL_CIPHER"] {
        assert!(
            !plain.iter().any(|e| e.starts_with(&format!("{absent}="))),
            "{absent} over plain HTTP: {plain:?}"
        );
    }
    req.tls = Some(TlsSession {
        protocol: "TLSv1.3",
        cipher: "TLS_AES_256_GCM_SHA384",
    });
    let env = strings(build_env(&script(b""), &req, &[]));
    let added: Vec<&String> = env.iter().filter(|e| !plain.contains(e)).collect();
    assert_eq!(
        added,
        [
            "HTTPS=on",
            "REQUEST_SCHEME=https",
            "SSL_CIPHER=TLS_AES_256_GCM_SHA384",
            "SSL_PROTOCOL=TLSv1.3",
        ]
    );
    assert!(env.contains(&"SERVER_PORT=8443".to_string()));
}

#[test]
fn path_translated_on_a_root_of_slash() {
    let mut req = request(&[]);
    req.document_root = Path::new("/");
    let env = strings(build_env(&script(b"/x/y"), &req, &[]));
    assert!(env.contains(&"PATH_TRANSLATED=/x/y".to_string()), "{env:?}");
}

#[test]
fn auth_variables_when_authenticated() {
    let mut req = request(&[]);
    req.remote_user = Some(b"alice");
    req.auth_type = Some(b"Basic");
    let env = strings(build_env(&script(b""), &req, &[]));
    assert!(env.contains(&"AUTH_TYPE=Basic".to_string()));
    assert!(env.contains(&"REMOTE_USER=alice".to_string()));
}

#[test]
fn rule_env_overrides_everything() {
    let headers = [h("Host", "h")];
    let extra = [
        ("TOOL_ROOT".to_string(), "/srv/tool".to_string()),
        ("PATH".to_string(), "/opt/bin".to_string()),
        ("SERVER_NAME".to_string(), "fixed".to_string()),
        ("HTTP_HOST".to_string(), "pinned".to_string()),
    ];
    let env = strings(build_env(&script(b""), &request(&headers), &extra));
    assert!(env.contains(&"TOOL_ROOT=/srv/tool".to_string()));
    assert!(env.contains(&"PATH=/opt/bin".to_string()));
    assert!(env.contains(&"SERVER_NAME=fixed".to_string()));
    assert!(env.contains(&"HTTP_HOST=pinned".to_string()));
    assert_eq!(env.iter().filter(|e| e.starts_with("PATH=")).count(), 1);
}

#[test]
fn only_listed_variables_nothing_from_the_server() {
    // The server's own environment (HOME, USER, …) never appears.
    let env = strings(build_env(&script(b""), &request(&[]), &[]));
    assert!(env.iter().all(|e| !e.starts_with("HOME=")));
    assert_eq!(env.len(), 19, "{env:?}");
}

/// A variable that would hold a NUL byte is left out of the environment
/// (here from the rule's `env`, which the configuration refuses; a
/// parsed request holds none), and only it.
#[test]
fn a_variable_holding_a_nul_is_left_out_and_only_it() {
    let headers = [h("Host", "h"), h("X-A", "1")];
    let script = script(b"/p");
    let extra = [
        ("CUT".to_string(), "a\0b".to_string()),
        ("KEPT".to_string(), "c".to_string()),
    ];
    let with = strings(build_env(&script, &request(&headers), &extra));
    let without = strings(build_env(&script, &request(&headers), &extra[1..]));
    assert_eq!(with, without);
    assert!(with.contains(&"KEPT=c".to_string()));
}

/// A field sent several times, apart and in any case, is one variable
/// holding each value in order; fields whose names only look alike (the
/// same length and last letter) stay apart; a name too long for the
/// stack buffer comes through whole.
#[test]
fn repeated_fields_join_in_order_and_only_theirs() {
    let long = format!("X-{}", "Long-".repeat(20));
    let headers = [
        h("X-Ab", "1"),
        h("Accept", "a"),
        h("X-Bb", "2"),
        h("ACCEPT", "b"),
        h("Host", "h"),
        h("accept", "c"),
        h(&long, "v"),
        h("x-ab", "3"),
    ];
    let env = strings(build_env(&script(b""), &request(&headers), &[]));
    let http: Vec<&String> = env.iter().filter(|e| e.starts_with("HTTP_")).collect();
    let long_var = format!("HTTP_X_{}=v", "LONG_".repeat(20));
    assert_eq!(
        http,
        [
            "HTTP_ACCEPT=a, b, c",
            "HTTP_HOST=h",
            "HTTP_X_AB=1, 3",
            "HTTP_X_BB=2",
            &long_var,
        ]
    );
    // The same fields, none repeated: each as sent.
    let once = [h("X-Ab", "1"), h("X-Bb", "2")];
    let env = strings(build_env(&script(b""), &request(&once), &[]));
    assert!(env.contains(&"HTTP_X_AB=1".to_string()), "{env:?}");
    assert!(env.contains(&"HTTP_X_BB=2".to_string()), "{env:?}");
}

/// The rule's `env` sets a name twice: the later wins, once.
#[test]
fn a_name_the_rule_sets_twice_is_its_later_value() {
    let extra = [
        ("APP".to_string(), "one".to_string()),
        ("APP".to_string(), "two".to_string()),
    ];
    let env = strings(build_env(&script(b""), &request(&[]), &extra));
    let app: Vec<&String> = env.iter().filter(|e| e.starts_with("APP=")).collect();
    assert_eq!(app, ["APP=two"]);
}
