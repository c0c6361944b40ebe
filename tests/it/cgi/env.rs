//! The environment a script sees, byte for byte, in four languages, and
//! how SCRIPT_NAME and PATH_INFO come from the request path.

use super::*;

/// Prints the working directory, stdin, and the sorted environment.
const ENV_SH: &str = "#!/bin/sh\n\
printf 'Content-Type: text/plain\\r\\n\\r\\n'\n\
printf 'cwd=%s\\nstdin=%s\\n' \"$(pwd -P)\" \"$(cat)\"\n\
env | LC_ALL=C sort\n";

pub(super) const ENV_PL: &str = r#"#!/usr/bin/perl
use strict;
use Cwd qw(getcwd);
binmode STDIN;
binmode STDOUT;
my $in = do { local $/; <STDIN> };
$in = '' unless defined $in;
print "Content-Type: text/plain\r\n\r\n";
print "cwd=", getcwd(), "\nstdin=$in\n";
print "$_\n" for sort map { "$_=$ENV{$_}" } keys %ENV;
"#;

/// Python reads the environment it was started with from /proc: its own
/// `os.environ` gains `LC_CTYPE` when it coerces the C locale (PEP 538).
const ENV_PY: &str = r#"#!/usr/bin/env python3
import os, sys
body = sys.stdin.buffer.read()
with open("/proc/self/environ", "rb") as f:
    env = [e for e in f.read().split(b"\0") if e]
out = sys.stdout.buffer
out.write(b"Content-Type: text/plain\r\n\r\n")
out.write(b"cwd=" + os.getcwdb() + b"\nstdin=" + body + b"\n")
for line in sorted(env):
    out.write(line + b"\n")
"#;

const ENV_C: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}
int main(void) {
    size_t n = 0;
    while (environ[n]) n++;
    qsort(environ, n, sizeof *environ, cmp);
    char cwd[4096], body[4096];
    if (!getcwd(cwd, sizeof cwd)) return 1;
    size_t len = fread(body, 1, sizeof body, stdin);
    printf("Content-Type: text/plain\r\n\r\n");
    printf("cwd=%s\nstdin=%.*s\n", cwd, (int)len, body);
    for (size_t i = 0; i < n; i++) printf("%s\n", environ[i]);
    return 0;
}
"#;

/// The variables every script of [`env_byte_exact`] should see, before
/// the per-request ones.
fn base_env(server: &Server, root: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("DOCUMENT_ROOT", root.to_string()),
        ("GATEWAY_INTERFACE", "CGI/1.1".into()),
        ("QUERY_STRING", String::new()),
        ("REDIRECT_STATUS", "200".into()),
        ("REMOTE_ADDR", "127.0.0.1".into()),
        ("REMOTE_HOST", "127.0.0.1".into()),
        ("REQUEST_SCHEME", "http".into()),
        ("SERVER_ADDR", "127.0.0.1".into()),
        ("SERVER_PORT", server.port.to_string()),
        (
            "SERVER_SOFTWARE",
            format!("brisk/{}", env!("CARGO_PKG_VERSION")),
        ),
        // The rule's `env`: one addition, one override.
        ("APP_MODE", "test run".into()),
        ("PATH", "/usr/bin:/bin".into()),
    ] {
        m.insert(k.to_string(), v);
    }
    m
}

/// The body an env script prints for `env`, `cwd` and `stdin`.
fn env_body(cwd: &str, stdin: &str, env: &BTreeMap<String, String>) -> String {
    let mut lines: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    // The scripts sort whole lines bytewise, as `sort` in the C locale does.
    lines.sort();
    let mut s = format!("cwd={cwd}\nstdin={stdin}\n");
    for l in lines {
        s.push_str(&l);
        s.push('\n');
    }
    s
}

#[test]
fn env_byte_exact() {
    let mut b = builder(&format!(
        "{CGI_BIN}env = {{ APP_MODE = \"test run\", PATH = \"/usr/bin:/bin\" }}\n\
         [[cgi]]\nurl = \"/tool\"\nprogram = \"cgi-bin/env.pl\"\n\
         env = {{ APP_MODE = \"test run\", PATH = \"/usr/bin:/bin\" }}\n"
    ));
    script(&b, "cgi-bin/env.sh", ENV_SH);
    script(&b, "cgi-bin/env.pl", ENV_PL);
    script(&b, "cgi-bin/env.py", ENV_PY);
    let mut names = vec!["env.sh", "env.pl", "env.py"];
    if compile(&b, "cgi-bin/env.bin", ENV_C) {
        names.push("env.bin");
    }
    b.file("index.html", b"x");
    let server = b.start();
    let root = canon(&server.root);
    let bin = canon(&server.base.path.join("cgi-bin"));

    for name in names {
        // A POST with a query, path info, repeated and odd headers.
        let body = "hello=world";
        let target = format!("/cgi-bin/{name}/extra/path%20x?a=1&b=%20two");
        let req = format!(
            "POST {target} HTTP/1.1\r\n\
             Host: example.test:8080\r\n\
             User-Agent: brisk-test\r\n\
             Accept: text/plain\r\n\
             Accept: text/html\r\n\
             Cookie: a=1\r\n\
             Cookie: b=2\r\n\
             X-Custom-Header: custom value\r\n\
             Proxy: http://evil.example/\r\n\
             X_Under: skipped\r\n\
             Authorization: Basic dTpw\r\n\
             Content-Type: application/x-www-form-urlencoded\r\n\
             Content-Length: {}\r\n\
             Connection: close\r\n\
             \r\n{body}",
            body.len()
        );
        let mut c = server.connect();
        let client_port = c.stream.local_addr().expect("local addr").port();
        c.send(req.as_bytes());
        let r = c.response();
        c.expect_closed();
        let mut env = base_env(&server, &root);
        for (k, v) in [
            ("CONTENT_LENGTH", body.len().to_string()),
            ("CONTENT_TYPE", "application/x-www-form-urlencoded".into()),
            ("HTTP_ACCEPT", "text/plain, text/html".into()),
            ("HTTP_CONNECTION", "close".into()),
            ("HTTP_COOKIE", "a=1; b=2".into()),
            ("HTTP_HOST", "example.test:8080".into()),
            ("HTTP_USER_AGENT", "brisk-test".into()),
            ("HTTP_X_CUSTOM_HEADER", "custom value".into()),
            ("PATH_INFO", "/extra/path x".into()),
            ("PATH_TRANSLATED", format!("{root}/extra/path x")),
            ("QUERY_STRING", "a=1&b=%20two".into()),
            ("REMOTE_PORT", client_port.to_string()),
            ("REQUEST_METHOD", "POST".into()),
            ("REQUEST_URI", target.clone()),
            ("SCRIPT_FILENAME", format!("{bin}/{name}")),
            ("SCRIPT_NAME", format!("/cgi-bin/{name}")),
            ("SERVER_NAME", "example.test".into()),
            ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        ] {
            env.insert(k.to_string(), v);
        }
        assert_eq!(
            r.masked_head(),
            head(
                "200 OK",
                "Content-Type: text/plain\r\nConnection: close\r\n"
            ),
            "{name}"
        );
        if name == "env.sh" {
            // The shell itself exports PWD.
            env.insert("PWD".into(), bin.clone());
        }
        assert_eq!(r.text(), env_body(&bin, body, &env), "{name}: POST");

        // HTTP/1.0, no Host, no body, no query, no path info: the
        // variables that do not apply are unset, QUERY_STRING is empty.
        let mut c = server.connect();
        let client_port = c.stream.local_addr().expect("local addr").port();
        c.send(format!("GET /cgi-bin/{name} HTTP/1.0\r\n\r\n").as_bytes());
        let raw = c.read_to_end();
        let mut env = base_env(&server, &root);
        for (k, v) in [
            ("REMOTE_PORT", client_port.to_string()),
            ("REQUEST_METHOD", "GET".into()),
            ("REQUEST_URI", format!("/cgi-bin/{name}")),
            ("SCRIPT_FILENAME", format!("{bin}/{name}")),
            ("SCRIPT_NAME", format!("/cgi-bin/{name}")),
            ("SERVER_NAME", "127.0.0.1".into()),
            ("SERVER_PROTOCOL", "HTTP/1.0".into()),
        ] {
            env.insert(k.to_string(), v);
        }
        if name == "env.sh" {
            env.insert("PWD".into(), bin.clone());
        }
        let text = String::from_utf8_lossy(&raw);
        let (h, body) = text.split_once("\r\n\r\n").expect("a head");
        assert!(h.starts_with("HTTP/1.1 200 OK\r\n"), "{name}: {h}");
        assert_eq!(body, env_body(&bin, "", &env), "{name}: HTTP/1.0 GET");
    }

    // A program rule: everything below /tool runs it, the rest of the
    // path is PATH_INFO and SCRIPT_NAME is the prefix.
    let mut c = server.connect();
    let client_port = c.stream.local_addr().expect("local addr").port();
    c.send(b"GET /tool/x/y?q HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let r = c.response();
    let mut env = base_env(&server, &root);
    for (k, v) in [
        ("HTTP_CONNECTION", "close".to_string()),
        ("HTTP_HOST", "localhost".into()),
        ("PATH_INFO", "/x/y".into()),
        ("PATH_TRANSLATED", format!("{root}/x/y")),
        ("QUERY_STRING", "q".into()),
        ("REMOTE_PORT", client_port.to_string()),
        ("REQUEST_METHOD", "GET".into()),
        ("REQUEST_URI", "/tool/x/y?q".into()),
        ("SCRIPT_FILENAME", format!("{bin}/env.pl")),
        ("SCRIPT_NAME", "/tool".into()),
        ("SERVER_NAME", "localhost".into()),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
    ] {
        env.insert(k.to_string(), v);
    }
    assert_eq!(r.text(), env_body(&bin, "", &env), "program rule");
    stop(server);
}

#[test]
fn hello_in_four_languages() {
    let mut b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/hello.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nhello from sh\\n'\n",
    );
    script(
        &b,
        "cgi-bin/hello.py",
        "#!/usr/bin/env python3\nimport sys\n\
         sys.stdout.write('Content-Type: text/plain\\n\\nhello from python\\n')\n",
    );
    script(
        &b,
        "cgi-bin/hello.pl",
        "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\r\\n\\r\\nhello from perl\\n\";\n",
    );
    let mut names = vec![
        ("hello.sh", "sh"),
        ("hello.py", "python"),
        ("hello.pl", "perl"),
    ];
    if compile(
        &b,
        "cgi-bin/hello",
        "#include <stdio.h>\nint main(void) {\n\
         fputs(\"Content-Type: text/plain\\r\\nContent-Length: 13\\r\\n\\r\\nhello from C\\n\", stdout);\n\
         return 0;\n}\n",
    ) {
        names.push(("hello", "C"));
    }
    b.file("file.txt", b"static\n");
    let server = b.start();
    // All on one keep-alive connection, one after the other.
    let mut c = server.connect();
    for (name, lang) in names {
        c.send(format!("GET /cgi-bin/{name} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
        let r = c.response();
        let body = format!("hello from {lang}\n");
        let framing = if lang == "C" {
            format!("Content-Length: {}\r\n", body.len())
        } else {
            "Transfer-Encoding: chunked\r\n".to_string()
        };
        assert_eq!(
            r.masked_head(),
            head("200 OK", &format!("Content-Type: text/plain\r\n{framing}")),
            "{name}"
        );
        assert_eq!(r.text(), body, "{name}");
    }
    c.send(b"GET /file.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_file(&c.response(), b"static\n", TXT, "", Conn::Close);
    c.expect_closed();
    stop(server);
}

/// The `NAME=value` lines of an env script's body.
fn vars(body: &str) -> BTreeMap<String, String> {
    body.lines()
        .skip(2)
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn script_name_and_path_info_are_decoded_and_normalised() {
    let b = builder(CGI_BIN);
    script(&b, "cgi-bin/env.pl", ENV_PL);
    let server = b.start();
    for (target, script_name, path_info) in [
        ("/cgi-bin/env%2epl/%41%20b", "/cgi-bin/env.pl", Some("/A b")),
        (
            "/cgi-bin//env.pl//a/b.c/c..",
            "/cgi-bin/env.pl",
            Some("/a/b.c/c.."),
        ),
        ("/cgi-bin//env.pl", "/cgi-bin/env.pl", None),
        ("/cgi-bin/env.pl/", "/cgi-bin/env.pl", Some("/")),
    ] {
        let v = vars(&server.get(target).text());
        assert_eq!(
            v.get("SCRIPT_NAME").map(String::as_str),
            Some(script_name),
            "{target}"
        );
        assert_eq!(
            v.get("PATH_INFO").map(String::as_str),
            path_info,
            "{target}"
        );
        assert_eq!(
            v.get("REQUEST_URI").map(String::as_str),
            Some(target),
            "{target}"
        );
    }
    // Dot segments: the script would read them in REQUEST_URI as sent,
    // and one that routes on it would not resolve them as brisk's rules
    // did (`/admin/../x` passed them as `/x`). No browser sends them.
    for target in [
        "/cgi-bin/./env.pl",
        "/cgi-bin/env.pl/a/../b",
        "/x/../cgi-bin/env.pl",
        "/cgi-bin/env.pl/a/%2e%2E/b",
        "/cgi-bin/env.pl/a%2F..%2Fb",
    ] {
        let r = server.request(
            format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(r.status, 400, "{target}: {}", r.text());
    }
    stop(server);
}

#[test]
fn any_method_reaches_a_script_and_static_paths_keep_405_and_501() {
    // WebDAV and newer methods (PROPFIND, MKCOL, QUERY, …) go to the
    // script that covers the path, as sent (RFC 3875 §4.1.12), with their
    // bodies; where no script covers the path the static handler answers
    // 405 (a method it knows) or 501 (one it does not).
    let mut b = builder(CGI_BIN);
    script(
        &b,
        "cgi-bin/method.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s %s [%s]' \
         \"$REQUEST_METHOD\" \"${CONTENT_LENGTH:-none}\" \"$(cat)\"\n",
    );
    b.file("a.txt", b"A");
    let server = b.start();
    for (method, body) in [
        ("PROPFIND", "<propfind xmlns=\"DAV:\"/>"),
        ("MKCOL", ""),
        ("QUERY", "select 1"),
        ("PROPPATCH", "<x/>"),
        ("BREW", ""),
        ("DELETE", ""),
    ] {
        let length = if body.is_empty() {
            String::new()
        } else {
            format!("Content-Length: {}\r\n", body.len())
        };
        let r = server.request(
            format!(
                "{method} /cgi-bin/method.sh HTTP/1.1\r\nHost: h\r\n{length}Connection: close\r\n\r\n{body}"
            )
            .as_bytes(),
        );
        assert_eq!(
            r.masked_head(),
            head(
                "200 OK",
                "Content-Type: text/plain\r\nConnection: close\r\n"
            ),
            "{method}"
        );
        let length = if body.is_empty() {
            "none".to_string()
        } else {
            body.len().to_string()
        };
        assert_eq!(r.text(), format!("{method} {length} [{body}]"));
    }
    for (method, code, reason, extra) in [
        ("PROPFIND", 501, "Not Implemented", ""),
        ("MKCOL", 501, "Not Implemented", ""),
        ("QUERY", 501, "Not Implemented", ""),
        (
            "DELETE",
            405,
            "Method Not Allowed",
            "Allow: GET, HEAD, OPTIONS\r\n",
        ),
    ] {
        for path in ["/a.txt", "/missing", "/"] {
            let r = server.request(
                format!("{method} {path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            );
            assert_error(&r, code, reason, extra, Conn::Close);
        }
    }
    stop(server);
}
