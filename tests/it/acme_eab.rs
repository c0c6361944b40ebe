//! External Account Binding (RFC 8555 §7.3.4) against Pebble requiring
//! it (`externalAccountBindingRequired`, its `externalAccountMACKeys`),
//! as ZeroSSL, Google Trust Services and private CAs do: `[acme]
//! eab_kid` with `eab_hmac_key` or `eab_hmac_key_file`. Pebble and
//! challtestsrv as in `acme.rs` (skipped without them; one Pebble at a
//! time).

use std::time::Duration;

use crate::acme::{acme_builder, leaf_of, Pebble};
use crate::common::{poll, TempDir};

/// The key ID and MAC key (base64url, 32 bytes) Pebble knows.
const KID: &str = "kid-1";
const MAC: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY";

fn pebble() -> Option<Pebble> {
    Pebble::start_binding(
        &[("PEBBLE_VA_NOSLEEP", "1")],
        90 * 86_400,
        &[],
        &[(KID, MAC)],
    )
}

/// How many accounts Pebble made with a binding (its log says each).
fn bound(pebble: &Pebble) -> usize {
    pebble
        .log()
        .matches(&format!(
            "Successful newAccount Binding with CA using kid \"{KID}\""
        ))
        .count()
}

#[test]
fn a_bound_account_gets_its_certificate_and_once_stored_needs_no_binding() {
    let Some(pebble) = pebble() else {
        return;
    };
    let storage = TempDir::new("acme-eab-storage");
    let secrets = TempDir::new("acme-eab-secrets");
    // The MAC key kept out of the configuration, in a file of its own
    // (a newline at its end, as `echo` writes it).
    let key_file = secrets.path.join("eab.key");
    std::fs::write(&key_file, format!("{MAC}\n")).unwrap();
    let extra = format!(
        "eab_kid = \"{KID}\"\neab_hmac_key_file = \"{}\"\n",
        key_file.display()
    );
    let (b, tls) = acme_builder(&pebble, &["a.test"], &[], "", Some(&storage.path), &extra);
    let server = b.start();
    let root = pebble.root();
    let served = poll(Duration::from_secs(60), || leaf_of(tls, "a.test", &root));
    assert!(served.is_some(), "never served: {}", server.stderr());
    let log = server.stderr();
    assert!(!log.contains("[error]"), "{log}");
    assert!(log.contains("seccomp on"), "in its sandbox: {log}");
    assert_eq!(bound(&pebble), 1, "{}", pebble.log());
    drop(server);

    // The account is stored: the next server finds it by its key, with
    // no binding (the CA makes no account: none is needed), and orders
    // another name with it.
    let (b, tls) = acme_builder(&pebble, &["b.test"], &[], "", Some(&storage.path), "");
    let server = b.start();
    let served = poll(Duration::from_secs(60), || leaf_of(tls, "b.test", &root));
    assert!(served.is_some(), "never served: {}", server.stderr());
    assert!(!server.stderr().contains("[error]"), "{}", server.stderr());
    assert_eq!(bound(&pebble), 1, "{}", pebble.log());
}

#[test]
fn a_wrong_mac_key_is_one_clear_line_and_no_certificate() {
    let Some(pebble) = pebble() else {
        return;
    };
    // Another key of the same length.
    let wrong = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA";
    let extra = format!("eab_kid = \"{KID}\"\neab_hmac_key = \"{wrong}\"\n");
    let (b, tls) = acme_builder(&pebble, &["a.test"], &[], "", None, &extra);
    let server = b.start();
    let line = server.wait_stderr_line("next try in");
    assert!(
        line.contains(
            "[error] acme: a.test: the CA refused to make the account bound to eab_kid \"kid-1\" (check eab_kid and eab_hmac_key against those the CA gave): urn:ietf:params:acme:error:unauthorized (403): external account binding JWS verification error"
        ),
        "{line}"
    );
    assert!(
        line.ends_with(
            "no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)"
        ),
        "{line}"
    );
    // Neither key is ever written in the log.
    let log = server.stderr();
    assert!(!log.contains(wrong) && !log.contains(MAC), "{log}");
    assert!(leaf_of(tls, "a.test", &pebble.root()).is_none());
    assert_eq!(bound(&pebble), 0);
}

#[test]
fn a_ca_that_requires_a_binding_none_is_configured_for_says_which_keys_to_set() {
    let Some(pebble) = pebble() else {
        return;
    };
    let (b, _) = acme_builder(&pebble, &["a.test"], &[], "", None, "");
    let server = b.start();
    let line = server.wait_stderr_line("next try in");
    let want = format!(
        "[error] acme: a.test: the CA {} requires an external account binding to make an account (RFC 8555 §7.3.4): set eab_kid and eab_hmac_key (or eab_hmac_key_file) in [acme] to the key ID and MAC key the CA gives with your account at its site; no certificate for it yet: its handshakes fail; next try in 60 s (failure 1)",
        pebble.directory
    );
    assert!(line.ends_with(&want), "{line}\nwanted: {want}");
    // Said from the directory's meta.externalAccountRequired: no account
    // was asked for.
    assert!(
        !pebble.log().contains("POST /sign-me-up"),
        "{}",
        pebble.log()
    );
}
