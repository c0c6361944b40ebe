use std::process::Command;
use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use super::*;
use crate::acme::key::{Key, RsaKey, Signer};

const DAY: u64 = 86_400;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `openssl` with `args`, `input` written to a file it names `in`; its
/// stdout and stderr, or None (said as a skip) without openssl.
fn openssl(args: &[&str], input: &[u8]) -> Option<String> {
    let dir = std::env::temp_dir().join(format!(
        "brisk-acme-cert-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("in");
    std::fs::write(&file, input).unwrap();
    let args: Vec<&str> = args
        .iter()
        .map(|a| {
            if *a == "in" {
                file.to_str().unwrap()
            } else {
                a
            }
        })
        .collect();
    let out = match Command::new("openssl").args(&args).output() {
        Ok(out) => out,
        Err(_) => {
            crate::test_skip::skip("no openssl to check the DER against");
            return None;
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

fn leaf<'a>(names: &'a [Alt<'a>], ca: bool) -> Template<'a> {
    Template {
        names,
        common_name: None,
        serial: serial().unwrap(),
        not_before: now() - DAY,
        not_after: now() + 30 * DAY,
        ca,
        acme_identifier: None,
    }
}

#[test]
fn a_request_names_every_host_and_its_signature_verifies() {
    let keys: [(Box<dyn Signer>, &str, &str); 2] = [
        (
            Box::new(Key::generate().unwrap()),
            "id-ecPublicKey\n                Public-Key: (256 bit)",
            "Signature Algorithm: ecdsa-with-SHA256",
        ),
        (
            Box::new(RsaKey::generate().unwrap()),
            "rsaEncryption\n                Public-Key: (2048 bit)",
            "Signature Algorithm: sha256WithRSAEncryption",
        ),
    ];
    for (key, public, signature) in keys {
        let der = request(&*key, &[Alt::Dns("a.test"), Alt::Dns("www.a.test")]).unwrap();
        let Some(text) = openssl(
            &[
                "req", "-inform", "DER", "-in", "in", "-noout", "-verify", "-text",
            ],
            &der,
        ) else {
            return;
        };
        assert!(text.contains("verify OK"), "{text}");
        assert!(text.contains("Subject: CN = a.test"), "{text}");
        assert!(text.contains("DNS:a.test, DNS:www.a.test"), "{text}");
        assert!(text.contains(public), "{text}");
        assert!(text.contains(signature), "{text}");
    }
}

#[test]
fn the_tls_alpn_01_certificate_holds_the_digest_in_a_critical_extension() {
    let key = Key::generate().unwrap();
    let digest: [u8; 32] = std::array::from_fn(|i| i as u8);
    let names = [Alt::Dns("a.test")];
    let t = Template {
        acme_identifier: Some(digest),
        ..leaf(&names, false)
    };
    let der = certificate(&t, &key, None).unwrap();
    // brisk's own reader finds what the SNI table needs.
    let facts = crate::tls::x509::parse(&der).unwrap();
    assert_eq!(facts.names, ["a.test"]);
    assert_eq!(
        (facts.not_before, facts.not_after),
        (t.not_before, t.not_after)
    );
    let Some(text) = openssl(
        &["x509", "-inform", "DER", "-in", "in", "-noout", "-text"],
        &der,
    ) else {
        return;
    };
    assert!(text.contains("1.3.6.1.5.5.7.1.31: critical"), "{text}");
    // The extension's value: an OCTET STRING (04 20) of the digest,
    // marked critical (BOOLEAN 255).
    let Some(parsed) = openssl(&["asn1parse", "-inform", "DER", "-in", "in"], &der) else {
        return;
    };
    let hex: String = [4u8, 32]
        .iter()
        .chain(&digest)
        .map(|b| format!("{b:02X}"))
        .collect();
    let ext = parsed
        .split(":1.3.6.1.5.5.7.1.31")
        .nth(1)
        .unwrap_or_default();
    let mut lines = ext.lines().skip(1);
    assert!(
        lines
            .next()
            .unwrap_or_default()
            .ends_with("BOOLEAN           :255"),
        "{parsed}"
    );
    assert!(
        lines
            .next()
            .unwrap_or_default()
            .ends_with(&format!("[HEX DUMP]:{hex}")),
        "{parsed}"
    );
    assert!(text.contains("DNS:a.test"), "{text}");
    assert!(text.contains("Issuer: CN = a.test") && text.contains("Subject: CN = a.test"));
}

#[test]
fn a_local_ca_issues_certificates_rustls_accepts_for_names_and_addresses() {
    let ca_key = Key::generate().unwrap();
    let ca_t = Template {
        common_name: Some("brisk local CA"),
        not_after: now() + 3650 * DAY,
        ..leaf(&[], true)
    };
    let ca = certificate(&ca_t, &ca_key, None).unwrap();
    let key = Key::generate().unwrap();
    let names = [
        Alt::Dns("localhost"),
        Alt::Ip("127.0.0.1".parse().unwrap()),
        Alt::Ip("::1".parse().unwrap()),
    ];
    let cert = certificate(
        &leaf(&names, false),
        &key,
        Some((&ca_key, "brisk local CA")),
    )
    .unwrap();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(ca.clone())).unwrap();
    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(crate::tls::provider()),
    )
    .build()
    .unwrap();
    let end = CertificateDer::from(cert.clone());
    for name in ["localhost", "127.0.0.1", "::1"] {
        let name = ServerName::try_from(name).unwrap();
        verifier
            .verify_server_cert(&end, &[], &name, &[], UnixTime::now())
            .unwrap_or_else(|e| panic!("{name:?}: {e}"));
    }
    let other = ServerName::try_from("example.org").unwrap();
    assert!(verifier
        .verify_server_cert(&end, &[], &other, &[], UnixTime::now())
        .is_err());
    // Expired: refused.
    let late = UnixTime::since_unix_epoch(std::time::Duration::from_secs(now() + 60 * DAY));
    assert!(verifier
        .verify_server_cert(
            &end,
            &[],
            &ServerName::try_from("localhost").unwrap(),
            &[],
            late
        )
        .is_err());
    // And the key goes into a server's configuration as it is stored.
    let pkcs8 = rustls::pki_types::PrivateKeyDer::Pkcs8(key.pkcs8().to_vec().into());
    rustls::ServerConfig::builder_with_provider(Arc::new(crate::tls::provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![end], pkcs8)
        .unwrap();
}

#[test]
fn pem_blocks_wrap_at_64() {
    let pem = pem("CERTIFICATE", &[0u8; 100]);
    let lines: Vec<&str> = pem.lines().collect();
    assert_eq!(lines[0], "-----BEGIN CERTIFICATE-----");
    assert_eq!(lines[1].len(), 64);
    assert_eq!(lines.last(), Some(&"-----END CERTIFICATE-----"));
    assert_eq!(lines.len(), 5);
}

#[test]
fn addresses_are_read_apart_from_names_by_the_x509_reader() {
    use crate::tls::x509::parse;
    let key = crate::acme::key::Key::generate().expect("key");
    let names = [
        Alt::Dns("localhost"),
        Alt::Ip("127.0.0.2".parse().expect("v4")),
        Alt::Ip("::1".parse().expect("v6")),
    ];
    let t = Template {
        names: &names,
        common_name: None,
        serial: serial().expect("serial"),
        not_before: 0,
        not_after: 86_400,
        ca: false,
        acme_identifier: None,
    };
    let facts = parse(&certificate(&t, &key, None).expect("cert")).expect("parse");
    assert_eq!(facts.names, ["localhost"]);
    let want: Vec<std::net::IpAddr> =
        vec!["127.0.0.2".parse().expect("v4"), "::1".parse().expect("v6")];
    assert_eq!(facts.addresses, want);
}
