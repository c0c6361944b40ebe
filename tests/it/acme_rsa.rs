//! `[acme] key_type = "rsa2048"` against Pebble (issue #28): brisk makes
//! an RSA 2048 key (its own prime search, `acme::rsa`), orders with a
//! request signed by it (sha256WithRSAEncryption), stores the key and
//! serves the certificate. Pebble and challtestsrv as in `acme.rs`
//! (skipped without them; one Pebble at a time).

use std::process::{Command, Stdio};
use std::time::Duration;

use brisk::acme::cert;

use crate::acme::{acme_server_with, served_chain, Pebble};
use crate::common::{poll, skip};

/// `openssl` with `args`, `input` on its stdin: its stdout and stderr,
/// and whether it succeeded; None (a skip) without openssl.
fn openssl(args: &[&str], input: &[u8]) -> Option<(bool, String)> {
    use std::io::Write as _;
    let Ok(mut child) = Command::new("openssl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        skip("no openssl to look at the served certificate with");
        return None;
    };
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Some((out.status.success(), text))
}

/// The files named `name` under `dir`, at any depth.
fn find(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find(&path, name));
        } else if path.file_name().is_some_and(|n| n == name) {
            found.push(path);
        }
    }
    found
}

#[test]
fn key_type_rsa2048_gets_an_rsa_2048_certificate_that_brisk_serves() {
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    let (server, tls) = acme_server_with(&pebble, &["a.test"], &[], "key_type = \"rsa2048\"\n");
    let base = server.base.path.clone();
    let root = pebble.root();
    // Served, and verified against Pebble's root (rustls, TLS 1.3).
    let chain = poll(Duration::from_secs(90), || {
        served_chain(tls, "a.test", root.clone()).ok()
    });
    let chain = chain.unwrap_or_else(|| panic!("a.test never served: {}", server.stderr()));
    assert_eq!(
        brisk::tls::x509::parse(&chain[0]).unwrap().names,
        ["a.test"]
    );
    let log = server.stderr();
    assert!(!log.contains("[error]"), "{log}");

    // What the storage holds: an RSA key that passes OpenSSL's check
    // (0600, as every key).
    let keys = find(&base.join("acme"), "key.pem");
    let key = keys
        .iter()
        .find(|p| p.parent().is_some_and(|d| d.ends_with("a.test")))
        .unwrap_or_else(|| panic!("no key.pem for a.test in {keys:?}"));
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let pem = std::fs::read(key).unwrap();
    let Some((ok, text)) = openssl(&["rsa", "-check", "-noout", "-text"], &pem) else {
        return;
    };
    assert!(ok && text.contains("RSA key ok"), "{text}");
    assert!(text.contains("Private-Key: (2048 bit, 2 primes)"), "{text}");

    // What a client sees: openssl s_client, the chain verified against
    // Pebble's root, the server's key RSA 2048.
    let root_pem = base.join("root.pem");
    std::fs::write(&root_pem, cert::pem("CERTIFICATE", &root)).unwrap();
    let connect = tls.to_string();
    let root_arg = root_pem.to_str().unwrap();
    let Some((ok, text)) = openssl(
        &[
            "s_client",
            "-connect",
            &connect,
            "-servername",
            "a.test",
            "-CAfile",
            root_arg,
            "-verify_return_error",
            "-verify_hostname",
            "a.test",
        ],
        b"",
    ) else {
        return;
    };
    assert!(ok, "{text}");
    assert!(text.contains("Verify return code: 0 (ok)"), "{text}");
    assert!(text.contains("Server public key is 2048 bit"), "{text}");
    let leaf = text
        .split_inclusive("-----END CERTIFICATE-----")
        .next()
        .and_then(|t| t.find("-----BEGIN CERTIFICATE-----").map(|i| &t[i..]))
        .unwrap_or_else(|| panic!("no certificate in {text}"));
    let Some((ok, x509)) = openssl(&["x509", "-noout", "-text"], leaf.as_bytes()) else {
        return;
    };
    assert!(ok, "{x509}");
    assert!(
        x509.contains("Public Key Algorithm: rsaEncryption"),
        "{x509}"
    );
    assert!(x509.contains("Public-Key: (2048 bit)"), "{x509}");
    assert!(x509.contains("Exponent: 65537 (0x10001)"), "{x509}");
    assert!(x509.contains("DNS:a.test"), "{x509}");
}
