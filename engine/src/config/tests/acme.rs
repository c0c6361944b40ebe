//! `[acme]`: what it orders, and every refusal with its file, line and
//! key. (The CA named is 127.0.0.1's, so that nothing here asks a DNS
//! server.)

use super::{args, TempDir};
use crate::config::{Command, Config, ConfigError, KeyType, LETS_ENCRYPT};

fn run(toml: &str) -> Result<Config, String> {
    let dir = TempDir::new();
    let data = crate::source_dir().join("engine/src/tls/testdata");
    for f in ["a.pem", "a.key"] {
        std::fs::copy(data.join(f), dir.path().join(f)).unwrap();
    }
    let file = dir.write("site.toml", &format!("root = \"public\"\n{toml}"));
    match args(&["--config", file.to_str().unwrap()]) {
        Ok(Command::Run(c)) => Ok(c),
        Ok(other) => panic!("expected Run, got {other:?}"),
        Err(ConfigError { message }) => Err(message.replace(dir.path().to_str().unwrap(), "DIR")),
    }
}

const TLS: &str = "[tls]\nlisten = [\"127.0.0.1:8443\"]\n";
const CA: &str = "directory = \"https://127.0.0.1:14000/dir\"\n";

#[test]
fn hosts_as_written_or_every_sites_not_covered_by_a_certificate() {
    let c = run(&format!(
        "{TLS}[acme]\n{CA}email = \"ops@example.org\"\nhosts = [\"Example.org\", \"www.example.org\", \"example.org\"]\nstorage = \"acme\"\n"
    ))
    .unwrap();
    let a = c.acme.unwrap();
    assert_eq!(a.hosts, ["example.org", "www.example.org"]);
    assert_eq!(a.email.as_deref(), Some("ops@example.org"));
    assert!(a.storage.ends_with("acme") && a.storage.is_absolute());
    assert_eq!(a.challenges, ["tls-alpn-01", "http-01"]);
    assert_eq!(
        a.directory_addr,
        (
            "127.0.0.1".into(),
            14000,
            Some("127.0.0.1:14000".parse().unwrap())
        )
    );
    assert!(a.redirect_http);
    // No certificate is needed in [tls] then.
    assert!(c.tls.unwrap().certificates.is_empty());

    // By default: the sites' names, less those a certificate covers
    // (a.test and *.a.test), wildcards and localhost.
    let sites = "[[site]]\nhosts = [\"a.test\", \"www.a.test\", \"b.test\", \"*.c.test\", \"localhost\"]\nroot = \"public\"\n\
                 [[site]]\nhosts = [\"d.test\"]\nroot = \"public\"\n";
    let cert = "[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n";
    let c = run(&format!("{TLS}{cert}[acme]\n{CA}{sites}")).unwrap();
    // The wildcard no certificate covers is said, not silently left
    // without HTTPS (with the other warnings: start, reload, the check).
    let warnings = c.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].ends_with(": acme: no certificate for the site name *.c.test: wildcard names need the dns-01 challenge, which brisk does not answer; name each host; it has no HTTPS (a [[tls.certificate]] that covers it serves it)"),
        "{warnings:?}"
    );
    // Plain HTTP is redirected for the names a certificate is for only
    // (ordered, local, or configured): not *.c.test, nor an unknown host
    // the default site takes, which would meet a handshake that fails.
    let sites = std::iter::once(&c.site).chain(&c.sites);
    for site in sites.filter(|_| cfg!(feature = "sites")) {
        let rule = &site.rules.url[0];
        assert_eq!(rule.to.text, "https://$host$https_port$uri");
        assert_eq!(
            rule.hosts,
            ["b.test", "d.test", "localhost", "a.test", "*.a.test"]
        );
    }
    let a = c.acme.unwrap();
    assert_eq!(a.hosts, ["b.test", "d.test"]);
    // localhost and addresses: the local CA's.
    assert_eq!(a.local, ["localhost"]);
    // (A fully qualified name's dot is left out; local names, .local
    // as Caddy has it too, are the local CA's.)
    let c = run(&format!(
        "{TLS}[acme]\nhosts = [\"localhost\", \"::1\", \"a.test.\", \"printer.local\"]\n{CA}"
    ))
    .unwrap();
    let a = c.acme.unwrap();
    assert_eq!(
        (a.hosts, a.local),
        (
            vec!["a.test".to_string()],
            vec![
                "localhost".to_string(),
                "::1".to_string(),
                "printer.local".to_string()
            ]
        )
    );
}

#[test]
fn the_defaults_and_the_challenges_in_brisks_order() {
    let c = run(&format!(
        "{TLS}[acme]\nhosts = [\"a.test\"]\nchallenges = [\"http-01\", \"tls-alpn-01\"]\nredirect_http = false\n"
    ))
    .unwrap();
    let a = c.acme.unwrap();
    assert_eq!(a.directory, LETS_ENCRYPT);
    assert_eq!(a.challenges, ["tls-alpn-01", "http-01"]);
    assert!(!a.redirect_http);
    assert_eq!(a.key_type, KeyType::EcdsaP256);
    // (Resolved when the file loads; none here, without DNS: the ACME
    // thread says so when it tries.)
    assert_eq!(a.directory_addr.1, 443);
    let only = run(&format!(
        "{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nchallenges = \"http-01\"\n"
    ))
    .unwrap();
    // (HTTPS only: nothing the CA's http-01 validations could reach.)
    let said = only.warnings();
    assert!(
        said.iter().any(|w| w.ends_with(": acme.challenges: http-01 alone, and no plain-HTTP listen address: the CA's validations reach nothing (listen = [\"0.0.0.0:80\"], or allow tls-alpn-01)")),
        "{said:?}"
    );
    assert_eq!(only.acme.unwrap().challenges, ["http-01"]);
    let plain = run(&format!(
        "listen = [\"127.0.0.1:8080\"]\n{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nchallenges = \"http-01\"\n"
    ))
    .unwrap();
    assert!(!plain.warnings().iter().any(|w| w.contains("http-01 alone")));
    for (written, kind) in [
        ("rsa2048", KeyType::Rsa2048),
        ("ecdsa-p256", KeyType::EcdsaP256),
    ] {
        let c = run(&format!(
            "{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nkey_type = \"{written}\"\n"
        ))
        .unwrap();
        assert_eq!(c.acme.unwrap().key_type, kind);
    }
}

#[test]
fn mistakes_are_refused_with_file_line_and_key() {
    let cases = [
        (
            "[acme]\nhosts = [\"a.test\"]\n",
            "DIR/site.toml:2: acme: needs [tls] listen",
        ),
        (
            &format!("{TLS}[acme]\n{CA}hostz = 1\n"),
            "DIR/site.toml:6: unknown key \"acme.hostz\"; did you mean \"hosts\"?",
        ),
        (
            &format!("{TLS}[acme]\n{CA}email = \"ops\"\n"),
            "DIR/site.toml:6: acme.email: expected an address",
        ),
        (
            &format!("{TLS}[acme]\n{CA}email = \"mailto:ops@example.org\"\n"),
            "DIR/site.toml:6: acme.email: expected an address such as \"ops@example.org\" (without \"mailto:\")",
        ),
        (
            &format!("{TLS}[acme]\n{CA}hosts = [\"bücher.example\"]\n"),
            "DIR/site.toml:6: acme.hosts: bücher.example: an internationalized name: write it in its ASCII form",
        ),
        (
            &format!("{TLS}[acme]\n{CA}hosts = [\"*.a.test\"]\n"),
            "DIR/site.toml:6: acme.hosts: *.a.test: wildcard names need the dns-01 challenge",
        ),
        (
            &format!("{TLS}[acme]\n{CA}hosts = [\"a/b.test\"]\n"),
            "DIR/site.toml:6: acme.hosts: a/b.test: expected a host name",
        ),
        (
            &format!("{TLS}[acme]\n{CA}challenges = [\"dns-01\"]\n"),
            "DIR/site.toml:6: acme.challenges: expected \"tls-alpn-01\" or \"http-01\"",
        ),
        (
            &format!("{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nkey_type = \"rsa4096\"\n"),
            "DIR/site.toml:7: acme.key_type: expected \"ecdsa-p256\" or \"rsa2048\"",
        ),
        (
            &format!("{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nkey_type = 2048\n"),
            "DIR/site.toml:7: acme.key_type: expected a string",
        ),
        (
            &format!("{TLS}[acme]\ndirectory = \"http://ca.test/dir\"\n"),
            "DIR/site.toml:5: acme.directory: expected an https:// URL",
        ),
        (
            &format!("{TLS}[acme]\n{CA}"),
            "DIR/site.toml:4: acme: names no host to order a certificate for",
        ),
        (
            &format!("{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nstorage = \"public/../public/acme\"\n"),
            "DIR/site.toml:4: acme.storage: DIR/public/../public/acme lies beneath the document root DIR/public, where its account and certificate keys could be served: put it outside every root",
        ),
        (
            // The other way round: a root inside the storage would serve
            // `certs/<name>/key.pem` and `account.key` from it.
            &format!("{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nstorage = \".\"\n"),
            "DIR/site.toml:4: acme.storage: the document root DIR/public lies beneath DIR/., where its account and certificate keys could be served from it: put every root outside it",
        ),
    ];
    for (toml, want) in cases {
        let e = run(toml).unwrap_err();
        assert!(e.starts_with(want), "{toml}\n{e}\nwanted: {want}");
    }
}

#[test]
fn the_summary_says_what_is_ordered_from_where() {
    let dir = TempDir::new();
    let file = dir.write(
        "site.toml",
        &format!("root = \"public\"\n{TLS}[acme]\n{CA}hosts = [\"a.test\", \"b.test\"]\nstorage = \"/srv/acme\"\n"),
    );
    let Ok(Command::CheckOk(report)) =
        args(&["--config", file.to_str().unwrap(), "--check-config"])
    else {
        panic!("a check");
    };
    assert!(
        report.contains("acme: https://127.0.0.1:14000/dir (at 127.0.0.1:14000), tls-alpn-01 then http-01, one certificate each for a.test, b.test\n  storage /srv/acme, plain HTTP redirected to HTTPS\n"),
        "{report}"
    );
    // The sandbox's summary names the storage the ACME thread writes
    // in, as the running server's line does (it said "writes nowhere").
    if report.contains("Landlock (kernel ABI") {
        assert!(
            report.contains("; writes only to the ACME storage /srv/acme;"),
            "{report}"
        );
    }
    // Local names only: no dangling list, and the local CA's names
    // named as the others are.
    let file = dir.write(
        "local.toml",
        &format!("root = \"public\"\n{TLS}[acme]\n{CA}hosts = [\"localhost\", \"127.0.0.1\"]\nstorage = \"/srv/acme\"\n"),
    );
    let Ok(Command::CheckOk(report)) =
        args(&["--config", file.to_str().unwrap(), "--check-config"])
    else {
        panic!("a check");
    };
    assert!(
        report.contains(
            "then http-01, no public name; one for localhost, 127.0.0.1 from brisk's local CA\n"
        ),
        "{report}"
    );
    // Both: the public names, then the local CA's.
    let file = dir.write(
        "both.toml",
        &format!("root = \"public\"\n{TLS}[acme]\n{CA}hosts = [\"a.test\", \"localhost\"]\nstorage = \"/srv/acme\"\n"),
    );
    let Ok(Command::CheckOk(report)) =
        args(&["--config", file.to_str().unwrap(), "--check-config"])
    else {
        panic!("a check");
    };
    assert!(
        report.contains("then http-01, one certificate each for a.test; one for localhost from brisk's local CA\n"),
        "{report}"
    );
}

#[test]
fn the_default_storage_is_the_users_own_and_never_a_shared_directory() {
    use crate::config::acme::default_storage_in;
    use std::ffi::OsString;
    use std::path::PathBuf;
    let some = |s: &str| Some(OsString::from(s));
    let at = |s: &str| Some(PathBuf::from(s));
    // Root: the system's place, whatever the environment says.
    assert_eq!(
        default_storage_in(0, some("/x"), some("/root")),
        at("/var/lib/brisk/acme")
    );
    assert_eq!(
        default_storage_in(1000, some("/d"), some("/home/u")),
        at("/d/brisk/acme")
    );
    assert_eq!(
        default_storage_in(1000, None, some("/home/u")),
        at("/home/u/.local/share/brisk/acme")
    );
    // Relative values are no directory of the user's: the next one, or
    // none.
    assert_eq!(
        default_storage_in(1000, some("rel"), some("/home/u")),
        at("/home/u/.local/share/brisk/acme")
    );
    // Without either, no default at all (it was /tmp/brisk/acme, which
    // another user could make first and fill with challenges).
    assert_eq!(default_storage_in(1000, None, None), None);
    assert_eq!(default_storage_in(1000, some("rel"), some("")), None);
    assert_eq!(default_storage_in(1000, None, some("home")), None);
}

#[test]
fn a_reload_that_changes_the_ca_roots_needs_a_restart() {
    let with = |roots: &str| {
        run(&format!(
            "{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nstorage = \"/srv/acme\"\n{roots}"
        ))
        .unwrap()
    };
    let started = with("ca_roots = [\"/etc/ca/a.pem\"]\n");
    // The same roots, another host: the ACME thread starts again.
    let more = run(&format!(
        "{TLS}[acme]\n{CA}hosts = [\"a.test\", \"b.test\"]\nstorage = \"/srv/acme\"\nca_roots = [\"/etc/ca/a.pem\"]\n"
    ))
    .unwrap();
    assert!(started.restart_only_changes(&more).is_empty());
    // Its HTTPS client was made at start with the roots read then: other
    // roots (or none) would be ignored, so the reload is refused.
    for roots in ["ca_roots = [\"/etc/ca/b.pem\"]\n", ""] {
        assert_eq!(
            started.restart_only_changes(&with(roots)),
            ["acme.ca_roots"],
            "{roots}"
        );
    }
}

#[test]
fn a_host_a_configured_certificate_names_is_not_ordered_and_a_warning_says_why() {
    // a.pem names a.test and *.a.test. The configured certificate is
    // served for a name it names exactly, before any obtained: ordering
    // a.test would renew a certificate forever that is never served. A
    // name it covers by its wildcard (www.a.test) gets ACME's, as
    // written.
    let cert = "[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n";
    let c = run(&format!(
        "{TLS}{cert}[acme]\n{CA}hosts = [\"A.test\", \"www.a.test\", \"b.test\"]\n"
    ))
    .unwrap();
    let warnings = c.warnings();
    assert_eq!(
        warnings,
        ["DIR/site.toml:9: acme.hosts: a.test: a [[tls.certificate]] names it, and is served for it before any certificate obtained: it is not ordered (take it out of hosts, or out of that certificate, to say which)"
            .replace("DIR", c.config_file.as_ref().unwrap().parent().unwrap().to_str().unwrap())],
    );
    assert_eq!(c.acme.unwrap().hosts, ["www.a.test", "b.test"]);
    // Only such names: nothing to order, and the refusal says why.
    let e = run(&format!("{TLS}{cert}[acme]\n{CA}hosts = [\"a.test\"]\n")).unwrap_err();
    assert_eq!(
        e,
        "DIR/site.toml:9: acme.hosts: a.test: a [[tls.certificate]] names it, and is served for it before any certificate obtained: it is not ordered (take it out of hosts, or out of that certificate, to say which)"
    );
}

#[test]
fn the_check_reads_the_ca_roots_as_the_start_does_and_names_their_line() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("notes.txt"), "no certificate here\n").unwrap();
    for (roots, want) in [
        (
            "missing.pem",
            "DIR/site.toml:6: acme.ca_roots: cannot read DIR/missing.pem: No such file or directory (os error 2)",
        ),
        (
            "notes.txt",
            "DIR/site.toml:6: acme.ca_roots: no usable CA certificate in DIR/notes.txt",
        ),
    ] {
        let file = dir.write(
            "site.toml",
            &format!("root = \"public\"\n{TLS}[acme]\n{CA}ca_roots = [\"{roots}\"]\nhosts = [\"a.test\"]\n"),
        );
        let got = match args(&["--config", file.to_str().unwrap(), "--check-config"]) {
            Err(ConfigError { message }) => message.replace(dir.path().to_str().unwrap(), "DIR"),
            Ok(_) => panic!("{roots}: the check said OK, and the start would fail"),
        };
        assert_eq!(got, want);
    }
}

/// A MAC key as CAs give it (base64url, 32 bytes), and its bytes.
const MAC: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY";
const MAC_BYTES: &[u8] = b"0123456789abcdef0123456789abcdef";

#[test]
fn an_external_account_binding_is_a_key_id_and_a_mac_key_inline_or_in_a_file() {
    let dir = TempDir::new();
    // A file as an editor or `echo` leaves it: a newline at the end;
    // the padding some tools add is taken too.
    dir.write("eab.key", &format!("{MAC}=\n"));
    for (mac, file) in [
        (format!("eab_hmac_key = \"{MAC}\"\n"), None),
        (
            format!("eab_hmac_key_file = \"{}/eab.key\"\n", dir.path().display()),
            Some(dir.path().join("eab.key")),
        ),
    ] {
        let c = run(&format!(
            "{TLS}[acme]\n{CA}hosts = [\"a.test\"]\neab_kid = \"kid-1\"\n{mac}"
        ))
        .unwrap();
        let a = c.acme.as_ref().unwrap();
        let eab = a.eab.as_ref().unwrap();
        assert_eq!((eab.kid.as_str(), &eab.hmac_key[..]), ("kid-1", MAC_BYTES));
        assert_eq!(a.eab_hmac_key_file, file);
        // The file is brisk's own (never served), and the report names
        // the key ID, never the MAC key.
        if let Some(f) = &file {
            assert!(c
                .own_files()
                .iter()
                .any(|(p, k)| p == f && k == "acme.eab_hmac_key_file"));
        }
        assert!(!format!("{a:?}").contains("48, 49"), "{a:?}");
    }
    // None: none.
    let c = run(&format!("{TLS}[acme]\n{CA}hosts = [\"a.test\"]\n")).unwrap();
    assert!(c.acme.unwrap().eab.is_none());
    // --check-config says a new account will be bound, by its key ID.
    let file = dir.write(
        "site.toml",
        &format!("root = \"public\"\n{TLS}[acme]\n{CA}hosts = [\"a.test\"]\nstorage = \"/srv/acme\"\neab_kid = \"kid-1\"\neab_hmac_key = \"{MAC}\"\n"),
    );
    let Ok(Command::CheckOk(report)) =
        args(&["--config", file.to_str().unwrap(), "--check-config"])
    else {
        panic!("a check");
    };
    assert!(
        report.contains("\n  a new account bound to the external account \"kid-1\"\n"),
        "{report}"
    );
    assert!(!report.contains(MAC), "{report}");
}

#[test]
fn a_half_or_a_malformed_external_account_binding_is_refused_with_file_line_and_key() {
    let dir = TempDir::new();
    dir.write("empty.key", "\n");
    let d = dir.path().display();
    let head = format!("{TLS}[acme]\n{CA}hosts = [\"a.test\"]\n");
    let cases = [
        (
            "eab_kid = \"kid-1\"\n".to_string(),
            "DIR/site.toml:7: acme.eab_kid: needs eab_hmac_key (or eab_hmac_key_file) beside it: the CA gives the key ID and the MAC key together".to_string(),
        ),
        (
            format!("eab_hmac_key = \"{MAC}\"\n"),
            "DIR/site.toml:7: acme.eab_hmac_key: needs eab_kid beside it: the CA gives the key ID and the MAC key together".into(),
        ),
        (
            format!("eab_hmac_key_file = \"{d}/empty.key\"\n"),
            "DIR/site.toml:7: acme.eab_hmac_key_file: DIR/empty.key: expected the MAC key the CA gives (its EAB HMAC key), in base64url: letters, digits, - and _".into(),
        ),
        (
            format!("eab_kid = \"kid-1\"\neab_hmac_key = \"{MAC}\"\neab_hmac_key_file = \"{d}/x.key\"\n"),
            "DIR/site.toml:9: acme.eab_hmac_key_file: give eab_hmac_key or eab_hmac_key_file, not both".into(),
        ),
        (
            // Standard base64's '+' and '/' are not base64url's.
            "eab_kid = \"kid-1\"\neab_hmac_key = \"ab+/cd\"\n".into(),
            "DIR/site.toml:8: acme.eab_hmac_key: expected the MAC key the CA gives (its EAB HMAC key), in base64url: letters, digits, - and _".into(),
        ),
        (
            "eab_kid = \"kid-1\"\neab_hmac_key = \"\"\n".into(),
            "DIR/site.toml:8: acme.eab_hmac_key: expected the MAC key the CA gives".into(),
        ),
        (
            format!("eab_kid = \"kid-1\"\neab_hmac_key_file = \"{d}/missing.key\"\n"),
            "DIR/site.toml:8: acme.eab_hmac_key_file: cannot read DIR/missing.key: No such file or directory (os error 2)".into(),
        ),
        (
            format!("eab_kid = \"\"\neab_hmac_key = \"{MAC}\"\n"),
            "DIR/site.toml:7: acme.eab_kid: expected the key ID the CA gives (its EAB KID); got".into(),
        ),
        (
            format!("eab_kid = 7\neab_hmac_key = \"{MAC}\"\n"),
            "DIR/site.toml:7: acme.eab_kid: expected a string".into(),
        ),
    ];
    for (keys, want) in cases {
        let toml = format!("{head}{keys}");
        let e = run(&toml).unwrap_err().replace(&d.to_string(), "DIR");
        assert!(e.starts_with(&want), "{toml}\n{e}\nwanted: {want}");
        // --check-config says the same.
        let file = dir.write("check.toml", &format!("root = \"public\"\n{toml}"));
        let got = match args(&["--config", file.to_str().unwrap(), "--check-config"]) {
            Err(ConfigError { message }) => message.replace(&d.to_string(), "DIR"),
            Ok(_) => panic!("{keys}: the check said OK"),
        };
        assert!(
            got.replace("check.toml", "site.toml").starts_with(&want),
            "{got}"
        );
    }
}
