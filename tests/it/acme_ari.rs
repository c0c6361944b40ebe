//! ACME Renewal Information (RFC 9773) against Pebble: a certificate is
//! renewed before its two-thirds point because the CA's suggested window
//! says so, the new order names the certificate it replaces (Pebble's
//! log says it took it as a replacement), and an order the CA refuses as
//! a replacement (`alreadyReplaced`) is made again without `replaces`.
//!
//! Pebble's management interface sets a certificate's renewal
//! information (`/set-renewal-info/`): here a window an hour in the past,
//! which RFC 9773 §4.2 says means "renew now".

use std::sync::Mutex;
use std::time::Duration;

use brisk::acme::ari;
use brisk::acme::cert;
use brisk::acme::client::HTTP_01;

use super::acme::{acme_server_on, keep, leaf_of, listeners, manager, now, Pebble};
use crate::common::{poll, TempDir};

/// Why the window moved, as the test's CA explains it.
const WHY: &str = "https://ca.test/incident/42";

/// `secs` as RFC 3339 (`2026-11-29T10:00:00Z`).
fn rfc3339(secs: u64) -> String {
    // certs::utc: `2026-11-29 10:00:00 UTC`.
    let t = brisk::tls::certs::utc(secs);
    format!("{}T{}Z", &t[..10], &t[11..19])
}

/// A JSON string literal of `s`.
fn quoted(s: &str) -> String {
    let mut out = Vec::new();
    brisk::http::json::push_string(s, &mut out);
    String::from_utf8(out).unwrap()
}

/// Has Pebble answer, for the certificate `leaf`, a window that ended an
/// hour ago, explained by [`WHY`].
fn window_passed(pebble: &Pebble, leaf: &[u8]) {
    let t = now();
    let info = format!(
        r#"{{"suggestedWindow":{{"start":"{}","end":"{}"}},"explanationURL":"{WHY}"}}"#,
        rfc3339(t - 7200),
        rfc3339(t - 3600)
    );
    let body = format!(
        r#"{{"Certificate":{},"ARIResponse":{}}}"#,
        quoted(&cert::pem("CERTIFICATE", leaf)),
        quoted(&info)
    );
    let url = format!("{}/set-renewal-info/", pebble.management);
    let a = pebble
        .client
        .request("POST", &url, Some(body.as_bytes()))
        .unwrap();
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
}

/// Waits until Pebble has marked the certificate `id` replaced (it does
/// so after the replacing order's finalization, on its own).
fn wait_replaced(pebble: &Pebble) {
    let marked = poll(Duration::from_secs(10), || {
        pebble
            .log()
            .contains("has been marked as replaced")
            .then_some(())
    });
    assert!(marked.is_some(), "{}", pebble.log());
}

#[test]
fn the_manager_renews_when_the_cas_window_says_so_and_orders_again_without_replaces_when_refused() {
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    let storage = TempDir::new("acme-ari");
    let (mut m, live) = manager(&pebble, &storage.path, &["a.test"], &[HTTP_01], "ari 1");
    let _l = listeners(&pebble, &live);
    let lines = Mutex::new(Vec::new());
    let t0 = now();
    m.load_stored(t0, &mut keep(&lines));
    let next = m.step(t0, &mut keep(&lines));
    let log = lines.lock().unwrap().join("\n");
    assert_eq!(log.matches("ordering a certificate").count(), 1, "{log}");
    // Asked at once: Pebble's window is a day either side of the two
    // thirds point; asked again after its Retry-After (6 h).
    assert!(
        log.contains("acme: a.test: the CA suggests renewing between"),
        "{log}"
    );
    assert_eq!(next, ari::DEFAULT_POLL, "{log}");
    assert!(!log.contains("Warn") && !log.contains("Error"), "{log}");
    let first = live.issued("a.test").unwrap().cert[0].to_vec();
    let first_id = ari::cert_id(&first).unwrap();
    // The storage as it is now, for a second server below.
    let copy = TempDir::new("acme-ari-copy");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", storage.path.display()))
        .arg(&copy.path)
        .status()
        .unwrap();
    assert!(cp.success());

    // The CA moves the window to the past: renew now. Not seen before
    // the manager asks again (Retry-After), seen when it does.
    window_passed(&pebble, &first);
    let lines = Mutex::new(Vec::new());
    m.step(t0 + ari::DEFAULT_POLL.as_secs() - 1, &mut keep(&lines));
    assert!(lines.lock().unwrap().is_empty(), "{:?}", lines.lock());
    assert_eq!(live.issued("a.test").unwrap().cert[0].as_ref(), first);
    let t1 = t0 + ari::DEFAULT_POLL.as_secs();
    m.step(t1, &mut keep(&lines));
    let log = lines.lock().unwrap().join("\n");
    assert!(
        log.contains(&format!("(why: {WHY}); renewing it now")),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "acme: a.test: ordering a certificate from {} (as ari 1) to replace {first_id}",
            pebble.directory
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "acme: a.test: the new certificate replaces {first_id} (its order says so)"
        )),
        "{log}"
    );
    assert!(!log.contains("Warn") && !log.contains("Error"), "{log}");
    let second = live.issued("a.test").unwrap().cert[0].to_vec();
    assert_ne!(second, first);
    assert!(
        pebble.log().contains("is a replacement of"),
        "{}",
        pebble.log()
    );
    wait_replaced(&pebble);

    // A second server, on the storage as it was: it serves the first
    // certificate, and the CA (still suggesting its renewal now) refuses
    // a second replacement of it: ordered again as a new certificate.
    let (mut m2, live2) = manager(&pebble, &copy.path, &["a.test"], &[HTTP_01], "ari 2");
    let lines = Mutex::new(Vec::new());
    m2.load_stored(now(), &mut keep(&lines));
    assert_eq!(live2.issued("a.test").unwrap().cert[0].as_ref(), first);
    m2.step(now(), &mut keep(&lines));
    let log = lines.lock().unwrap().join("\n");
    assert!(
        log.contains(&format!(
            "acme: a.test: the CA refused an order replacing {first_id} (urn:ietf:params:acme:error:alreadyReplaced"
        )),
        "{log}"
    );
    assert!(log.contains("ordered without `replaces`"), "{log}");
    assert!(!log.contains("the new certificate replaces"), "{log}");
    assert!(!log.contains("Error"), "{log}");
    let third = live2.issued("a.test").unwrap().cert[0].to_vec();
    assert!(third != first && third != second);
}

#[test]
fn brisk_renews_at_once_when_the_ca_says_so_and_its_order_names_the_certificate_it_replaces() {
    let Some(pebble) = Pebble::start(&[("PEBBLE_VA_NOSLEEP", "1")]) else {
        return;
    };
    let storage = TempDir::new("acme-ari-server");
    let root = pebble.root();
    let (server, tls) = acme_server_on(&pebble, &["a.test"], &[], Some(&storage.path));
    let first = poll(Duration::from_secs(60), || leaf_of(tls, "a.test", &root));
    let (first, _) = first.unwrap_or_else(|| panic!("never served: {}", server.stderr()));
    // Asked as soon as served.
    let line = server.wait_stderr_line("the CA suggests renewing between");
    assert!(line.contains("acme: a.test:"), "{line}");
    drop(server);

    // While brisk is down, the CA moves the window to the past; brisk
    // started again serves the stored certificate, asks, and renews at
    // once, naming the certificate its new order replaces.
    window_passed(&pebble, &first);
    let id = ari::cert_id(&first).unwrap();
    let (server, tls) = acme_server_on(&pebble, &["a.test"], &[], Some(&storage.path));
    let second = poll(Duration::from_secs(60), || {
        leaf_of(tls, "a.test", &root).filter(|(leaf, _)| *leaf != first)
    });
    assert!(second.is_some(), "never renewed: {}", server.stderr());
    let line = server.wait_stderr_line(&format!("the new certificate replaces {id}"));
    assert!(line.contains("acme: a.test:"), "{line}");
    let log = server.stderr();
    assert!(
        log.contains(&format!("(why: {WHY}); renewing it now")),
        "{log}"
    );
    assert!(log.contains(&format!("to replace {id}")), "{log}");
    assert!(log.contains("seccomp on"), "{log}");
    assert!(
        !log.contains("[error]") && !log.contains("[warn] acme"),
        "{log}"
    );
    // Pebble took the order as a replacement.
    assert!(
        pebble.log().contains("is a replacement of"),
        "{}",
        pebble.log()
    );
}
