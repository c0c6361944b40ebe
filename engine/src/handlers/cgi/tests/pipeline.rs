//! The pieces together, as the event loop uses them: resolve a path, build
//! the environment, spawn the script, feed it a body, parse what it prints.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::CgiTarget;
use crate::handlers::cgi::{build_env, parse_head, resolve, CgiReply, EnvRequest, Resolved};
use crate::http::parse::Header;
use crate::sys::spawn::{spawn, try_reap, Exit};

#[test]
fn resolve_spawn_and_parse() {
    let base = std::env::temp_dir().join(format!("brisk-cgi-pipeline-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("cgi-bin")).unwrap();
    std::fs::create_dir_all(base.join("www")).unwrap();
    let script = base.join("cgi-bin/echo");
    std::fs::write(
        &script,
        "#!/bin/sh\nbody=$(cat)\nprintf 'Content-Type: text/plain\\nX-Len: %s\\n\\n' \"$CONTENT_LENGTH\"\n\
         printf '%s|%s|%s|%s|%s' \"$REQUEST_METHOD\" \"$PATH_INFO\" \"$QUERY_STRING\" \"$HTTP_X_TEST\" \"$body\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rules = [super::rule(CgiTarget::Dir {
        url: "/cgi-bin/".into(),
        dir: base.join("cgi-bin").canonicalize().unwrap(),
    })];
    let root = base.join("www");
    let Resolved::Cgi(s) = resolve(&rules, &root, b"/cgi-bin/echo/p/q") else {
        panic!("not resolved");
    };
    let headers = [Header {
        name: b"X-Test",
        value: b"yes",
    }];
    let req = EnvRequest {
        method: b"POST",
        raw_target: b"/cgi-bin/echo/p/q?a=b",
        query: b"a=b",
        version: "HTTP/1.1",
        headers: headers.iter().copied(),
        remote: "127.0.0.1:40000".parse().unwrap(),
        local: "127.0.0.1:8080".parse().unwrap(),
        server_name: b"localhost",
        document_root: &root,
        content_length: Some(5),
        remote_user: None,
        auth_type: None,
        forwarded_https: None,
        tls: None,
    };
    let env = build_env(&s, &req, &rules[s.rule].env);
    // ETXTBSY: a child forked by another test while the script was still
    // open for writing may hold it until its own exec.
    let mut tries = 0;
    let child = loop {
        match spawn(s.command(&env)) {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => break other.unwrap(),
        }
    };
    std::fs::File::from(child.stdin)
        .write_all(b"hello")
        .unwrap();

    let mut out = std::fs::File::from(child.stdout);
    let mut buf = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut chunk = [0u8; 512];
    loop {
        match out.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "no EOF");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
    }
    let head = parse_head(&buf, 16384).unwrap().unwrap();
    assert_eq!(head.kind, CgiReply::Document);
    assert_eq!(head.status, 200);
    assert_eq!(head.headers, b"Content-Type: text/plain\r\nX-Len: 5\r\n");
    assert_eq!(&buf[head.head_len..], b"POST|/p/q|a=b|yes|hello");
    let status = loop {
        if let Some(st) = try_reap(child.pid).unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "not reaped");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(Exit::from_status(status), Exit::Code(0));
    assert!(!Path::new(&format!("/proc/{}", child.pid)).exists());
    let _ = std::fs::remove_dir_all(&base);
}
