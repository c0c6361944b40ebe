//! `[tls]`, `[[tls.certificate]]` and `--tls-cert`/`--tls-key`: what they
//! serve, and every refusal with its file, line and key.

use super::{args, TempDir};
use crate::config::{Command, Config, ConfigError};

/// A directory with `public/` and the test certificates of `engine/src/tls`.
pub(super) fn site() -> TempDir {
    let dir = TempDir::new();
    let data = crate::source_dir().join("engine/src/tls/testdata");
    for name in ["a", "b", "c", "expired"] {
        for ext in ["pem", "key"] {
            let file = format!("{name}.{ext}");
            std::fs::copy(data.join(&file), dir.path().join(&file)).unwrap();
        }
    }
    dir
}

pub(super) fn run(dir: &TempDir, toml: &str, extra: &[&str]) -> Result<Config, String> {
    let file = dir.write("site.toml", &format!("root = \"public\"\n{toml}"));
    let mut argv = vec!["--config", file.to_str().unwrap()];
    argv.extend_from_slice(extra);
    match args(&argv) {
        Ok(Command::Run(c)) => Ok(c),
        Ok(other) => panic!("expected Run, got {other:?}"),
        Err(ConfigError { message }) => Err(message.replace(dir.path().to_str().unwrap(), "DIR")),
    }
}

const ONE: &str = "[tls]\nlisten = [\"127.0.0.1:8443\"]\n[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n";

#[test]
fn a_tls_section_serves_https_only_when_there_is_no_plain_listen() {
    let dir = site();
    let c = run(&dir, ONE, &[]).unwrap();
    let tls = c.tls.expect("tls");
    assert_eq!(tls.listen, vec!["127.0.0.1:8443".parse().unwrap()]);
    assert!(c.listen.is_empty(), "no top-level listen: HTTPS only");
    assert_eq!(tls.certificates.len(), 1);
    assert_eq!(tls.certificates[0].names, ["a.test", "*.a.test"]);
    assert_eq!(tls.certificates[0].files.key, dir.path().join("a.key"));
    assert!(tls.session_tickets);
    assert_eq!(tls.session_cache, 10_000);

    let both = run(&dir, &format!("listen = [\"127.0.0.1:8080\"]\n{ONE}"), &[]).unwrap();
    assert_eq!(both.listen, vec!["127.0.0.1:8080".parse().unwrap()]);
    assert!(both.tls.is_some());
}

#[test]
fn every_key_format_and_several_certificates_load() {
    let dir = site();
    let toml = "[tls]\nlisten = \"127.0.0.1:8443\"\nsession_tickets = false\nsession_cache = 0\n\
        handshake_timeout = \"3s\"\nmax_handshakes = 8\n\
        [[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n\
        [[tls.certificate]]\ncert = \"b.pem\"\nkey = \"b.key\"\n\
        [[tls.certificate]]\ncert = \"c.pem\"\nkey = \"c.key\"\n";
    let tls = run(&dir, toml, &[]).unwrap().tls.unwrap();
    let names: Vec<_> = tls.certificates.iter().map(|c| c.names.join(" ")).collect();
    assert_eq!(names, ["a.test *.a.test", "b.test", "c.test"]);
    assert!(!tls.session_tickets);
    assert_eq!(tls.session_cache, 0);
    assert_eq!(tls.handshake_timeout, std::time::Duration::from_secs(3));
    assert_eq!(tls.max_handshakes, 8);
}

/// A certificate whose renewal failed must not stop every other site at
/// the next start: it is served (as nginx serves it), and said, at start,
/// at a reload and by `--check-config`.
#[test]
fn a_certificate_outside_its_validity_is_served_with_a_warning() {
    let dir = site();
    let toml = format!("{ONE}[[tls.certificate]]\ncert = \"expired.pem\"\nkey = \"expired.key\"\n");
    let c = run(&dir, &toml, &[]).unwrap();
    let expired = format!(
        "tls: {}: the certificate expired on 2021-01-01 00:00:00 UTC; renew it (clients refuse an expired certificate; brisk serves it meanwhile)",
        dir.path().join("expired.pem").display()
    );
    let warned: Vec<_> = c
        .warnings()
        .into_iter()
        .filter(|w| w.contains(": the certificate "))
        .collect();
    assert_eq!(warned, [expired]);
    let mut certs = c.tls.expect("tls").certificates;
    assert_eq!(certs[1].names, ["expired.test"]);
    assert_eq!(certs[0].validity_warning(crate::tls::certs::now()), None);
    let early = &mut certs[0];
    early.not_before = early.not_after - 1;
    assert_eq!(
        early.validity_warning(early.not_before - 1).unwrap(),
        format!(
            "tls: {}: the certificate is not valid before 2125-12-31 23:59:59 UTC (is the clock right? clients refuse it until then)",
            dir.path().join("a.pem").display()
        )
    );
}

#[test]
fn broken_files_are_refused_with_file_line_and_key() {
    let dir = site();
    dir.write("empty.pem", "");
    dir.write("ocsp.pem", "-----BEGIN X-----\n");
    let cert = |cert: &str, key: &str| {
        format!("[tls]\nlisten = [\"127.0.0.1:8443\"]\n[[tls.certificate]]\ncert = \"{cert}\"\nkey = \"{key}\"\n")
    };
    assert_eq!(
        run(&dir, &cert("a.pem", "b.key"), &[]).unwrap_err(),
        "DIR/site.toml:6: tls.certificate[1].key: DIR/b.key: this key does not match the certificate in DIR/a.pem"
    );
    assert_eq!(
        run(&dir, &cert("empty.pem", "a.key"), &[]).unwrap_err(),
        "DIR/site.toml:5: tls.certificate[1].cert: DIR/empty.pem: no certificate in it (expected a PEM \"-----BEGIN CERTIFICATE-----\" block)"
    );
    assert_eq!(
        run(&dir, &cert("a.pem", "a.pem"), &[]).unwrap_err(),
        "DIR/site.toml:6: tls.certificate[1].key: DIR/a.pem: no private key in it (expected a PEM \"PRIVATE KEY\", \"EC PRIVATE KEY\" or \"RSA PRIVATE KEY\" block)"
    );
    let missing = run(&dir, &cert("a.pem", "gone.key"), &[]).unwrap_err();
    assert!(
        missing
            .starts_with("DIR/site.toml:6: tls.certificate[1].key: DIR/gone.key: cannot read it: "),
        "{missing}"
    );
    let ocsp = format!("{}ocsp = \"ocsp.pem\"\n", cert("a.pem", "a.key"));
    assert_eq!(
        run(&dir, &ocsp, &[]).unwrap_err(),
        "DIR/site.toml:7: tls.certificate[1].ocsp: DIR/ocsp.pem: not a DER OCSP response (openssl ocsp -respout writes one)"
    );
}

#[test]
fn section_errors() {
    let dir = site();
    assert_eq!(
        run(&dir, "[tls]\nlisten = [\"127.0.0.1:8443\"]\n", &[]).unwrap_err(),
        "DIR/site.toml:2: tls: needs at least one [[tls.certificate]] with cert and key (or --tls-cert FILE --tls-key FILE)"
    );
    assert_eq!(
        run(&dir, "[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n", &[]).unwrap_err(),
        "DIR/site.toml:2: tls: needs listen = [\"ADDRESS:PORT\", ...], the addresses that serve HTTPS (or --tls-cert with --listen; listen = [] for the sockets systemd passes named https)"
    );
    assert_eq!(
        run(
            &dir,
            "[tls]\nlisten = [\"127.0.0.1:8443\"]\n[[tls.certificate]]\ncert = \"a.pem\"\n",
            &[]
        )
        .unwrap_err(),
        "DIR/site.toml:4: tls.certificate[1]: needs key = \"privkey.pem\" (the PEM private key)"
    );
    assert!(run(
        &dir,
        "[tls]\nlisten = [\"127.0.0.1:8443\"]\nsesion_cache = 1\n",
        &[]
    )
    .unwrap_err()
    .starts_with(
        "DIR/site.toml:4: unknown key \"tls.sesion_cache\"; did you mean \"session_cache\"?"
    ));
    assert_eq!(
        run(&dir, &format!("listen = \"127.0.0.1:8443\"\n{ONE}"), &[]).unwrap_err(),
        "DIR/site.toml:3: tls: 127.0.0.1:8443 is in both listen and tls.listen; an address serves either plain HTTP or HTTPS"
    );
    // Port 0 is a new port for each: no address twice.
    let c = run(
        &dir,
        &format!("listen = \"127.0.0.1:0\"\n{}", ONE.replace("8443", "0")),
        &[],
    )
    .unwrap();
    assert_eq!(c.listen, c.tls.expect("tls").listen);
    // An empty list: the sockets systemd passes named https (the start
    // refuses it when none was passed); the certificates are needed.
    assert_eq!(
        run(&dir, "[tls]\nlisten = []\n", &[]).unwrap_err(),
        "DIR/site.toml:2: tls: needs at least one [[tls.certificate]] with cert and key (or --tls-cert FILE --tls-key FILE)"
    );
    let c = run(&dir, &ONE.replace("[\"127.0.0.1:8443\"]", "[]"), &[]).unwrap();
    assert!(c.tls.expect("tls").listen.is_empty() && c.listen.is_empty());
    assert!(c.listen_default, "the passed sockets are the listeners");
}

#[test]
fn tls_flags_make_the_listen_flags_serve_https() {
    let dir = site();
    let a = dir.path().join("a.pem");
    let k = dir.path().join("a.key");
    let (a, k) = (a.to_str().unwrap(), k.to_str().unwrap());
    let c = run(
        &dir,
        "",
        &[
            "--tls-cert",
            a,
            "--tls-key",
            k,
            "--listen",
            "127.0.0.1:9443",
        ],
    )
    .unwrap();
    assert!(c.listen.is_empty());
    assert_eq!(
        c.tls.unwrap().listen,
        vec!["127.0.0.1:9443".parse().unwrap()]
    );

    // Without --listen, the file's (or the default) plain addresses do.
    let c = run(
        &dir,
        "listen = \"127.0.0.1:9000\"\n",
        &["--tls-cert", a, "--tls-key", k],
    )
    .unwrap();
    assert!(c.listen.is_empty());
    assert_eq!(
        c.tls.unwrap().listen,
        vec!["127.0.0.1:9000".parse().unwrap()]
    );

    // With a [tls] section, its addresses stay, its certificates give way.
    let toml = format!(
        "listen = \"127.0.0.1:9000\"\n{}",
        ONE.replace("a.pem", "b.pem").replace("a.key", "b.key")
    );
    let c = run(&dir, &toml, &["--tls-cert", a, "--tls-key", k]).unwrap();
    assert_eq!(c.listen, vec!["127.0.0.1:9000".parse().unwrap()]);
    let tls = c.tls.unwrap();
    assert_eq!(tls.listen, vec!["127.0.0.1:8443".parse().unwrap()]);
    assert_eq!(tls.certificates.len(), 1);
    assert_eq!(tls.certificates[0].names[0], "a.test");

    assert_eq!(
        run(&dir, "", &["--tls-cert", a]).unwrap_err(),
        "--tls-cert: needs --tls-key FILE too (see brisk --help)"
    );
    assert_eq!(
        run(&dir, "", &["--tls-cert", a, "--tls-key", a]).unwrap_err(),
        "--tls-key: DIR/a.pem: no private key in it (expected a PEM \"PRIVATE KEY\", \"EC PRIVATE KEY\" or \"RSA PRIVATE KEY\" block)"
    );
}

/// `[tls] listen = []`: the summary says where the certificates serve
/// instead of an empty list ("tls: listen  (TLS ...").
#[test]
#[cfg(feature = "ops")]
fn check_config_says_where_a_tls_section_without_an_address_serves() {
    let dir = site();
    let toml = "root = \"public\"\n[tls]\nlisten = []\n[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n";
    let file = dir.write("site.toml", toml);
    let out = match args(&["--config", file.to_str().unwrap(), "--check-config"]) {
        Ok(Command::CheckOk(s)) => s,
        other => panic!("{other:?}"),
    };
    let line = out
        .lines()
        .find(|l| l.starts_with("tls: "))
        .expect("a tls line");
    assert!(
        line.starts_with("tls: no listen address of its own ([proxy] tls_listen, or the sockets systemd passes named https or tls) (TLS 1.3 and 1.2, ALPN "),
        "{line}"
    );
}

// The report of what will serve is the feature `ops`'s.
#[cfg(feature = "ops")]
#[test]
fn check_config_shows_the_certificates() {
    let dir = site();
    let file = dir.write("site.toml", &format!("root = \"public\"\n{ONE}"));
    let out = match args(&["--config", file.to_str().unwrap(), "--check-config"]) {
        Ok(Command::CheckOk(s)) => s.replace(dir.path().to_str().unwrap(), "DIR"),
        other => panic!("{other:?}"),
    };
    assert!(out.contains("listen: none (see tls and proxy)\n"), "{out}");
    let alpn = if cfg!(feature = "http2") {
        "h2, http/1.1"
    } else {
        "http/1.1"
    };
    assert!(
        out.contains(&format!(
            "tls: listen 127.0.0.1:8443 (TLS 1.3 and 1.2, ALPN {alpn}, no 0-RTT)\n"
        )),
        "{out}"
    );
    assert!(out.contains(
        "  certificate 1 (default, and for clients without SNI): DIR/a.pem, key DIR/a.key; names a.test, *.a.test; expires 2126-01-01 00:00:00 UTC\n"
    ), "{out}");
    let plain = match args(&["--check-config"]) {
        Ok(Command::CheckOk(s)) => s,
        other => panic!("{other:?}"),
    };
    assert!(plain.contains("tls: off\n"), "{plain}");
}

#[test]
fn a_key_readable_by_everyone_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let dir = site();
    let file = dir.write("site.toml", &format!("root = \"public\"\n{ONE}"));
    let key = dir.path().join("a.key");
    let summary = |mode: u32| {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        match args(&["--config", file.to_str().unwrap(), "--check-config"]) {
            Ok(Command::CheckOk(s)) => s.replace(dir.path().to_str().unwrap(), "DIR"),
            other => panic!("{other:?}"),
        }
    };
    assert!(summary(0o644).contains(
        "\nwarning: tls: the private key DIR/a.key is readable by every user (mode 644); chmod 600 it"
    ));
    assert!(!summary(0o600).contains("warning"));
    assert!(!summary(0o640).contains("warning"));
}

#[test]
#[cfg(feature = "ops")]
fn proxy_tls_listen_needs_certificates_and_an_address_of_its_own() {
    let dir = site();
    let c = run(
        &dir,
        &format!("[proxy]\ntls_listen = \"127.0.0.1:8444\"\n{ONE}"),
        &[],
    )
    .unwrap();
    assert_eq!(c.proxy.tls_listen, vec!["127.0.0.1:8444".parse().unwrap()]);
    assert!(c.listen.is_empty(), "no plain listener without the header");
    assert_eq!(
        run(&dir, "[proxy]\ntls_listen = \"127.0.0.1:8444\"\n", &[]).unwrap_err(),
        "DIR/site.toml:3: proxy.tls_listen: TLS after the PROXY header needs a certificate: add [[tls.certificate]] (or --tls-cert and --tls-key)"
    );
    assert_eq!(
        run(
            &dir,
            &format!("[proxy]\ntls_listen = \"127.0.0.1:8443\"\n{ONE}"),
            &[]
        )
        .unwrap_err(),
        "DIR/site.toml:3: proxy.tls_listen: 127.0.0.1:8443 is also in listen, tls.listen or proxy.listen; an address serves one kind of client (proxy.tls_listen: a PROXY protocol header, then TLS)"
    );
    assert!(run(
        &dir,
        &format!("[proxy]\nlisten = \"127.0.0.1:8081\"\ntls_listen = \"127.0.0.1:8081\"\n{ONE}"),
        &[]
    )
    .unwrap_err()
    .contains("proxy.tls_listen: 127.0.0.1:8081 is also in"));
}

/// `[proxy] tls_listen` alone is where the certificates serve: `[tls]`
/// needs no `listen` of its own then (it was refused with a line about
/// `[tls] listen` that said nothing of tls_listen).
#[test]
#[cfg(feature = "ops")]
fn proxy_tls_listen_alone_needs_no_tls_listen() {
    let dir = site();
    let c = run(
        &dir,
        "[proxy]\ntls_listen = \"127.0.0.1:8444\"\n[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n",
        &[],
    )
    .unwrap();
    assert_eq!(c.proxy.tls_listen, vec!["127.0.0.1:8444".parse().unwrap()]);
    let tls = c.tls.expect("tls");
    assert!(tls.listen.is_empty());
    assert_eq!(tls.certificates.len(), 1);
    assert!(c.listen.is_empty(), "no plain listener without the header");
    // Plain PROXY listeners alone still leave [tls] without an address.
    assert!(run(
        &dir,
        "[proxy]\nlisten = \"127.0.0.1:8081\"\n[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n",
        &[],
    )
    .unwrap_err()
    .contains("tls: needs listen = ["));
}

#[test]
#[cfg(feature = "ops")]
fn ticket_keys_name_a_file_and_its_rotation() {
    let dir = site();
    let tls = run(&dir, ONE, &[]).unwrap().tls.unwrap();
    assert_eq!(tls.ticket_keys, None);
    let with = |keys: &str| {
        ONE.replace(
            "[[tls.certificate]]",
            &format!("{keys}\n[[tls.certificate]]"),
        )
    };
    let tls = run(&dir, &with("ticket_keys = \"keys/tickets\""), &[])
        .unwrap()
        .tls
        .unwrap();
    let keys = tls.ticket_keys.expect("ticket_keys");
    assert_eq!(keys.file, dir.path().join("keys/tickets"));
    assert_eq!(keys.rotation, std::time::Duration::from_secs(6 * 3600));
    let tls = run(
        &dir,
        &with("ticket_rotation = \"1h\"\nticket_keys = \"/srv/k\""),
        &[],
    )
    .unwrap()
    .tls
    .unwrap();
    assert_eq!(
        tls.ticket_keys.map(|k| (k.file, k.rotation)),
        Some(("/srv/k".into(), std::time::Duration::from_secs(3600)))
    );
    assert_eq!(
        run(&dir, &with("ticket_rotation = \"1h\""), &[]).unwrap_err(),
        "DIR/site.toml:4: tls.ticket_rotation: needs ticket_keys = \"FILE\" (the keys it rotates)"
    );
    assert_eq!(
        run(&dir, &with("ticket_keys = \"k\"\nticket_rotation = \"30s\""), &[]).unwrap_err(),
        "DIR/site.toml:5: tls.ticket_rotation: expected at least a minute (a ticket is accepted for up to two)"
    );
    assert_eq!(
        run(&dir, &with("ticket_keys = \"k\"\nsession_tickets = false"), &[]).unwrap_err(),
        "DIR/site.toml:2: tls: ticket_keys needs session_tickets = true (the keys encrypt session tickets)"
    );
    // Never where brisk serves from: their files appear by rename, so
    // they could not be told apart as its other files are.
    assert_eq!(
        run(&dir, &with("ticket_keys = \"public/keys/k\""), &[]).unwrap_err(),
        "DIR/site.toml:4: tls.ticket_keys: DIR/public/keys lies beneath the document root DIR/public, where the session-ticket keys could be served: put it outside every root"
    );
    // Nor beneath a WebDAV root, which clients read and write.
    #[cfg(feature = "webdav")]
    {
        std::fs::create_dir(dir.path().join("dav")).unwrap();
        let dav = "\n[[webdav]]\npath = \"/dav/\"\nroot = \"dav\"\n";
        assert_eq!(
            run(&dir, &(with("ticket_keys = \"dav/keys/k\"") + dav), &[]).unwrap_err(),
            "DIR/site.toml:4: tls.ticket_keys: DIR/dav/keys lies beneath the WebDAV root DIR/dav, where the session-ticket keys could be served: put it outside every root"
        );
    }
}

#[test]
#[cfg(not(feature = "ops"))]
fn ticket_keys_need_the_feature_ops() {
    let dir = site();
    let toml = ONE.replace(
        "[[tls.certificate]]",
        "ticket_keys = \"k\"\n[[tls.certificate]]",
    );
    let err = run(&dir, &toml, &[]).unwrap_err();
    assert_eq!(
        err,
        "DIR/site.toml:4: tls.ticket_keys: this brisk was built without session-ticket keys shared by a fleet (the cargo feature `ops`); remove it, or build with the feature"
    );
}
