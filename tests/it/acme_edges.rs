//! ACME's edges (issue #28): a CA refusing one of the names, a first
//! start without network, the local CA's certificate made again when the
//! addresses change, a server that is not root. The Pebble helpers are
//! `acme.rs`'s; every test holding Pebble holds its `ONE_PEBBLE`.

use std::net::SocketAddr;
use std::time::Duration;

use rustls::pki_types::{pem::PemObject as _, CertificateDer};

use crate::acme::{acme_server, served_chain, Pebble};
use crate::common::{poll, Builder, Server};

/// The `[tls] listen` address of `server` (its second listening line).
fn tls_addr(server: &Server) -> SocketAddr {
    server.addrs[1]
}

/// Rewrites `server`'s configuration file and sends SIGHUP; the line that
/// says what became of it.
fn reload(server: &Server, toml: &str) -> String {
    let before = server.stderr().matches("SIGHUP:").count();
    std::fs::write(server.base.path.join("brisk.toml"), toml).unwrap();
    server.signal(libc::SIGHUP);
    let line = poll(Duration::from_secs(10), || {
        let err = server.stderr();
        err.lines()
            .filter(|l| l.contains("SIGHUP:"))
            .nth(before)
            .map(str::to_string)
    });
    line.unwrap_or_else(|| panic!("no SIGHUP line: {}", server.stderr()))
}

#[test]
fn the_local_certificate_is_made_again_when_an_address_is_added_to_hosts() {
    let mut b = Builder::new();
    let base = b.base().to_path_buf();
    let toml = |hosts: &str| {
        format!(
            "listen = [\"127.0.0.1:0\"]\n[tls]\nlisten = [\"127.0.0.1:0\"]\n[acme]\n\
             storage = \"{}/acme\"\nhosts = [{hosts}]\n",
            base.display()
        )
    };
    b.file("index.html", b"local\n");
    b.config(&toml("\"localhost\", \"127.0.0.1\""))
        .listen_from_config()
        .listeners(2);
    let server = b.start();
    server.wait_stderr_line("from brisk's local CA");
    let ca = CertificateDer::from_pem_file(base.join("acme/local/ca.pem")).unwrap();
    let addresses = |server: &Server| {
        // (No SNI: the local certificate is the default.)
        let chain = served_chain(tls_addr(server), "127.0.0.1", ca.clone())
            .unwrap_or_else(|e| panic!("{e}: {}", server.stderr()));
        brisk::tls::x509::parse(&chain[0]).unwrap().addresses
    };
    let v4 = |s: &str| -> std::net::IpAddr { s.parse().unwrap() };
    assert_eq!(addresses(&server), [v4("127.0.0.1")]);

    let line = reload(
        &server,
        &toml("\"localhost\", \"127.0.0.1\", \"127.0.0.2\""),
    );
    assert!(line.contains("configuration reloaded"), "{line}");
    let made = poll(Duration::from_secs(10), || {
        (server.stderr().matches("from brisk's local CA").count() == 2).then_some(())
    });
    assert!(made.is_some(), "not made again: {}", server.stderr());
    let now = poll(Duration::from_secs(10), || {
        let a = addresses(&server);
        (a.len() == 2).then_some(a)
    });
    assert_eq!(now, Some(vec![v4("127.0.0.1"), v4("127.0.0.2")]));
    assert!(!server.stderr().contains("[error]"), "{}", server.stderr());
}

#[test]
fn a_name_the_ca_refuses_is_logged_with_its_problem_and_does_not_hold_back_the_other() {
    // Pebble refuses to issue for blocked.test (its domainBlocklist):
    // the new order for it is a rejectedIdentifier problem.
    let Some(pebble) = Pebble::start_refusing(
        &[("PEBBLE_VA_NOSLEEP", "1")],
        90 * 86_400,
        &["blocked.test"],
    ) else {
        return;
    };
    // (Names are tried in order: the refused one first.)
    let (server, tls) = acme_server(&pebble, &["ok.test", "blocked.test"], &[]);
    let line = server.wait_stderr_line("acme: blocked.test: urn:");
    assert!(
        line.ends_with(
            "[error] acme: blocked.test: urn:ietf:params:acme:error:rejectedIdentifier (400): \
             Order included an identifier for which issuance is forbidden by policy: \"blocked.test\"; \
             blocked.test: blocked.test is a forbidden domain; \
             no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)"
        ),
        "{line}"
    );
    let root = pebble.root();
    let chain = poll(Duration::from_secs(60), || {
        served_chain(tls, "ok.test", root.clone()).ok()
    });
    let chain = chain.unwrap_or_else(|| panic!("ok.test never served: {}", server.stderr()));
    assert_eq!(
        brisk::tls::x509::parse(&chain[0]).unwrap().names,
        ["ok.test"]
    );
    // One order a name: the refusal was blocked.test's alone.
    let log = server.stderr();
    for name in ["ok.test", "blocked.test"] {
        let ordering = format!("acme: {name}: ordering a certificate");
        assert_eq!(log.matches(&ordering).count(), 1, "{log}");
    }
    assert_eq!(log.matches("[error]").count(), 1, "{log}");
    // The refused name's handshakes end with an alert, at once.
    let refused = served_chain(tls, "blocked.test", root).unwrap_err();
    assert!(refused.contains("alert"), "{refused}");
}

#[test]
fn a_first_start_without_network_serves_what_it_can_and_says_when_it_tries_again() {
    // The CA's name resolves nowhere (RFC 6761's .invalid), as on a
    // machine started before its network: nothing is stored yet.
    let mut b = Builder::new();
    let base = b.base().to_path_buf();
    let (cert, key) = (
        crate::common::tls::testdata("b.pem"),
        crate::common::tls::testdata("b.key"),
    );
    let toml = format!(
        "listen = [\"127.0.0.1:0\"]\n[tls]\nlisten = [\"127.0.0.1:0\"]\n\
         [[tls.certificate]]\ncert = \"{}\"\nkey = \"{}\"\n\
         [acme]\ndirectory = \"https://acme.invalid/directory\"\n\
         storage = \"{}/acme\"\nhosts = [\"a.test\"]\nredirect_http = false\n",
        cert.display(),
        key.display(),
        base.display()
    );
    b.file("index.html", b"still here\n");
    b.config(&toml).listen_from_config().listeners(2);
    let server = b.start();
    let line = server.wait_stderr_line("next try in");
    assert!(
        line.contains(
            "[error] acme: a.test: GET https://acme.invalid/directory: cannot resolve its name"
        ),
        "{line}"
    );
    assert!(
        line.contains("restart it once the network is up")
            && line.ends_with(
                "no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)"
            ),
        "{line}"
    );
    let log = server.stderr();
    assert_eq!(log.matches("[error]").count(), 1, "one line a try: {log}");
    assert!(log.contains("seccomp on"), "{log}");
    // Plain HTTP is served, and the other site over HTTPS.
    let r = server.get("/");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"still here\n"[..]));
    let mut c = crate::common::Client::connect_tls(
        tls_addr(&server),
        crate::common::tls::client_conn("b.test"),
    );
    c.send(b"GET / HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n");
    let r = c.response();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"still here\n"[..]));
    // a.test's handshakes fail at once, no hang: with a certificate
    // configured, the default one (b.test's) is all brisk has for it,
    // and the client refuses it.
    let ca = CertificateDer::from_pem_file(crate::common::tls::testdata("ca.pem")).unwrap();
    let refused = served_chain(tls_addr(&server), "a.test", ca).unwrap_err();
    assert!(
        refused.contains("certificate not valid for name \"a.test\""),
        "{refused}"
    );
}
