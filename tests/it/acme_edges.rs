//! ACME's edges (issue #28): a CA refusing one of the names, a first
//! start without network, the local CA's certificate made again when the
//! addresses change, a server that is not root. The Pebble helpers are
//! `acme.rs`'s; every test holding Pebble holds its `ONE_PEBBLE`.

use std::net::SocketAddr;
use std::time::Duration;

use rustls::pki_types::{pem::PemObject as _, CertificateDer};

use crate::acme::served_chain;
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
