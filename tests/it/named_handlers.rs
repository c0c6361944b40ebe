//! `[[handlers]]`: named handlers mounted from the configuration (the
//! brisk binary's built-in `echo`), checked on the wire; an unknown name
//! and a failing init are configuration errors naming file, line and key.

use crate::common;

use std::fs;

use common::*;

const ECHO: &str = "[[handlers]]\npath = \"/echo/\"\nhandler = \"echo\"\nconfig = { say = \"hello from config\" }\n";

#[test]
fn a_configured_echo_answers_with_its_config_and_the_request() {
    let mut b = Builder::new();
    b.file("a.txt", b"AAAA").config(ECHO);
    let s = b.start();
    let mut c = s.connect();
    c.send(b"POST /echo/x?q=1 HTTP/1.1\r\nHost: h\r\nX-A: b\r\nContent-Length: 5\r\n\r\nabcde");
    let r = c.response();
    let body = "hello from config\nPOST /echo/x?q=1\nHost: h\nX-A: b\nContent-Length: 5\n\nabcde";
    assert_eq!(
        r.masked_head(),
        format!(
            "HTTP/1.1 200 OK\r\nServer: brisk\r\nDate: {DATE}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
    );
    assert_eq!(r.text(), body);
    // Beside it, the static files; the exact prefix needs its slash.
    assert_eq!(s.get("/a.txt").body, b"AAAA");
    assert_eq!(s.get("/echo").status, 404);
}

#[test]
fn a_reload_initialises_the_handler_again_with_the_new_config() {
    let mut b = Builder::new();
    b.config(ECHO);
    let s = b.start();
    assert!(s.get("/echo/").text().starts_with("hello from config\n"));
    let before = s.stderr().matches("configuration reloaded").count();
    let cfg = s.base.path.join("brisk.toml");
    fs::write(&cfg, ECHO.replace("hello from config", "second")).unwrap();
    s.signal(libc::SIGHUP);
    wait_until("the reload", || {
        s.stderr().matches("configuration reloaded").count() > before
    });
    assert!(s.get("/echo/").text().starts_with("second\n"));
    // An init that fails refuses the reload, naming the entry; the
    // running handler stays.
    fs::write(&cfg, ECHO.replace("say =", "shout =")).unwrap();
    s.signal(libc::SIGHUP);
    let line = s.wait_stderr_line("did not start");
    assert!(line.contains("handlers[1].handler"), "{line}");
    assert!(line.contains("config.shout: unknown key"), "{line}");
    assert!(s.get("/echo/").text().starts_with("second\n"));
}

fn config_error(toml: &str, check: bool) -> String {
    let dir = TempDir::new("handlers");
    fs::create_dir(dir.path.join("root")).unwrap();
    let file = dir.path.join("site.toml");
    fs::write(&file, toml).unwrap();
    let path = file.display().to_string();
    let root = dir.path.join("root").display().to_string();
    let mut args = vec![
        "--config",
        &path,
        "--root",
        &root,
        "--listen",
        "127.0.0.1:0",
    ];
    if check {
        args.push("--check-config");
    }
    let (st, _out, err) = run_brisk(&args);
    assert!(!st.success(), "{err}");
    err
}

#[test]
fn an_unknown_name_is_a_config_error_listing_the_registered_ones() {
    let toml = "workers = 1\n\n[[handlers]]\npath = \"/e/\"\nhandler = \"ecko\"\n";
    let err = config_error(toml, true);
    assert!(
        err.contains("site.toml:5: handlers[1].handler: no handler is registered as \"ecko\"; did you mean \"echo\"? registered: one of \"echo\""),
        "{err}"
    );
}

/// An entry that one above it covers would never answer (the first
/// match does): refused by --check-config and at start, naming it.
#[test]
fn an_entry_an_earlier_one_covers_is_a_config_error() {
    let toml = "[[handlers]]\npath = \"/e/\"\nhandler = \"echo\"\n\n\
                [[handlers]]\npath = \"/e/x\"\nhandler = \"echo\"\n";
    for check in [true, false] {
        let err = config_error(toml, check);
        assert!(
            err.contains("site.toml:7: handlers[2].handler: the handler \"echo\" at /e/x would never answer: the one at /e/ before it takes every path there (the first match answers: list the longer path first)"),
            "{err}"
        );
    }
}

#[test]
fn entries_are_checked_key_by_key() {
    for (toml, want) in [
        (
            "[[handlers]]\npath = \"/a/../b\"\nhandler = \"echo\"\n",
            "site.toml:2: handlers[1].path: expected a normalised absolute path",
        ),
        (
            "[[handlers]]\npath = \"/a\"\n",
            "site.toml:1: handlers[1]: needs handler = \"name\"",
        ),
        (
            "[[handlers]]\npath = \"/a\"\nhandler = \"echo\"\nconfig = 3\n",
            "site.toml:4: handlers[1].config: expected a table; got 3",
        ),
        (
            "[[handlers]]\npath = \"/a\"\nhandler = \"echo\"\nmode = 3\n",
            "site.toml:4: unknown key \"handlers[1].mode\"",
        ),
    ] {
        let err = config_error(toml, true);
        assert!(err.contains(want), "{toml}: {err}");
    }
}

#[test]
fn an_init_that_fails_stops_the_start_naming_the_entry() {
    let toml = "[[handlers]]\npath = \"/e/\"\nhandler = \"echo\"\nconfig = { volume = 11 }\n";
    let err = config_error(toml, false);
    assert!(
        err.contains("site.toml:3: handlers[1].handler: the handler \"echo\" at /e/ did not start: config.volume: unknown key; expected \"say\""),
        "{err}"
    );
}

#[test]
#[cfg(feature = "ops")] // the report
fn check_config_lists_the_handlers_without_their_values() {
    let dir = TempDir::new("handlers");
    fs::create_dir(dir.path.join("root")).unwrap();
    let file = dir.path.join("site.toml");
    fs::write(
        &file,
        ECHO.replace("say = \"hello from config\"", "say = \"secret\""),
    )
    .unwrap();
    let root = dir.path.join("root").display().to_string();
    let (st, out, err) = run_brisk(&[
        "--config",
        &file.display().to_string(),
        "--root",
        &root,
        "--check-config",
    ]);
    assert!(st.success(), "{err}");
    assert!(
        out.contains("handlers: 1 rule\n  path /echo/: echo, config say\n"),
        "{out}"
    );
    assert!(!out.contains("secret"), "{out}");
}
