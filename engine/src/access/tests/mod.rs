//! `Auth` end to end, sans IO towards the network: rules, headers, the
//! failure limit; files, reloading and the cache are in `files`. htpasswd files are written to
//! fresh temporary directories; time is simulated through `now`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::auth::{Auth, AuthMethods, AuthRule, Failure, FailureReason, Verdict};
use super::SharedFailures;
use crate::http::glob::{PathMatch, Reach};

const VECTORS: &str = include_str!("../../../../hash/testdata/vectors.htpasswd");

/// "alice:correct horse" as the client sends it.
const ALICE: &[u8] = b"Basic YWxpY2U6Y29ycmVjdCBob3JzZQ==";

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("brisk-auth-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The hash line of `user` in the committed vectors.
fn vector(user: &str) -> &'static str {
    VECTORS
        .lines()
        .find_map(|l| l.strip_prefix(user).and_then(|r| r.strip_prefix(':')))
        .unwrap()
}

fn rule(matcher: PathMatch, realm: &str, htpasswd: &Path) -> AuthRule {
    AuthRule {
        matcher,
        realm: realm.to_string(),
        htpasswd: htpasswd.to_path_buf(),
        allow_plaintext: false,
        methods: AuthMethods::All,
        origin: String::new(),
    }
}

fn prefix(p: &str) -> PathMatch {
    PathMatch::Prefix(p.to_string())
}

/// `Auth` for `rules`, allowing `failures` a minute (0: no limit).
fn auth_with(rules: Vec<AuthRule>, failures: u32) -> Auth {
    load(&rules, failures).unwrap()
}

/// `Auth` for `rules`, or the error loading their files.
fn load(rules: &[AuthRule], failures: u32) -> Result<Auth, crate::access::Error> {
    Auth::sharing(
        rules,
        0,
        SharedFailures::new(failures, Duration::from_secs(60)),
    )
}

/// One rule over /private/ with alice (apr1: fast) and the vectors' users.
fn setup(failures: u32) -> (TempDir, Auth) {
    let dir = TempDir::new();
    let text = format!("alice:{}\n{VECTORS}", vector("apr1"));
    let file = dir.write("htpasswd", &text);
    let auth = auth_with(vec![rule(prefix("/private/"), "Private", &file)], failures);
    (dir, auth)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn basic(user_pass: &[u8]) -> Vec<u8> {
    use base64ct::Encoding;
    let mut buf = vec![0u8; user_pass.len().div_ceil(3) * 4];
    let encoded = base64ct::Base64::encode(user_pass, &mut buf).unwrap();
    format!("Basic {encoded}").into_bytes()
}

const CHALLENGE: &[u8] = b"Basic realm=\"Private\", charset=\"UTF-8\"";

fn challenged(reason: Option<FailureReason>) -> impl Fn(&Verdict<'_>) -> bool {
    move |v| match v {
        Verdict::Challenge {
            realm_header,
            failure,
        } => *realm_header == CHALLENGE && failure.map(|f| f.reason) == reason,
        _ => false,
    }
}

mod files;

#[test]
fn paths_outside_every_rule_are_open() {
    let (_d, mut auth) = setup(10);
    let now = Instant::now();
    assert!(auth.is_active());
    for path in [&b"/"[..], b"/privat", b"/privately", b"/public/private/"] {
        assert_eq!(
            auth.check(path, b"GET", None, ip("192.0.2.1"), now),
            Verdict::Open
        );
    }
    // The collection `/private/` names, without its slash, is the rule's
    // (to WebDAV the same collection).
    assert_ne!(
        auth.check(b"/private", b"GET", None, ip("192.0.2.1"), now),
        Verdict::Open
    );
}

#[cfg(feature = "sites")]
#[test]
fn a_rule_covers_only_its_methods_and_the_next_rule_is_tried() {
    let dir = TempDir::new();
    let text = format!("alice:{}\n", vector("apr1"));
    let file = dir.write("htpasswd", &text);
    let admins = dir.write("admins", &text);
    let list = |m: &[&str]| m.join(" ").into();
    let mut writers = rule(prefix("/dav/"), "Private", &file);
    writers.methods = AuthMethods::Except(list(&["GET", "HEAD", "OPTIONS", "PROPFIND"]));
    let mut purge = rule(prefix("/"), "Admins", &admins);
    purge.methods = AuthMethods::Only(list(&["PURGE"]));
    let mut auth = auth_with(vec![purge, writers], 10);
    let now = Instant::now();
    let client = ip("192.0.2.1");
    for method in ["GET", "HEAD", "OPTIONS", "PROPFIND"] {
        let v = auth.check(b"/dav/a", method.as_bytes(), None, client, now);
        assert_eq!(v, Verdict::Open, "{method}");
    }
    // Every other method needs the login, made-up ones and the wrong
    // case too (methods are case-sensitive).
    for method in ["PUT", "DELETE", "MOVE", "LOCK", "FROB", "get"] {
        let v = auth.check(b"/dav/a", method.as_bytes(), None, client, now);
        assert!(challenged(None)(&v), "{method}: {v:?}");
    }
    let alice = basic(b"alice:correct horse");
    let v = auth.check(b"/dav/a", b"PUT", Some(&alice), client, now);
    assert_eq!(v, Verdict::Allowed { user: b"alice" });
    // PURGE is the first rule's, beneath /dav/ too (its own realm); the
    // first rule passes every other method over; GET elsewhere is open.
    for path in [&b"/dav/a"[..], b"/x"] {
        match auth.check(path, b"PURGE", None, client, now) {
            Verdict::Challenge { realm_header, .. } => {
                assert_eq!(realm_header, b"Basic realm=\"Admins\", charset=\"UTF-8\"")
            }
            v => panic!("{v:?}"),
        }
    }
    assert_eq!(auth.check(b"/x", b"GET", None, client, now), Verdict::Open);
}

#[cfg(feature = "sites")]
#[test]
fn get_brings_head_with_it() {
    // `methods = ["GET", "POST"]` guards HEAD too (a HEAD runs the CGI
    // and tells a file's length and ETag), and `except_methods = ["GET"]`
    // lets HEAD through with GET.
    let dir = TempDir::new();
    let file = dir.write("htpasswd", &format!("alice:{}\n", vector("apr1")));
    let list = |m: &[&str]| m.join(" ").into();
    let client = ip("192.0.2.1");
    let now = Instant::now();
    let mut only = rule(prefix("/m/"), "Private", &file);
    only.methods = AuthMethods::Only(list(&["GET", "POST"]));
    let mut auth = auth_with(vec![only], 10);
    for method in ["GET", "HEAD", "POST"] {
        let v = auth.check(b"/m/a", method.as_bytes(), None, client, now);
        assert!(challenged(None)(&v), "{method}: {v:?}");
    }
    assert_eq!(
        auth.check(b"/m/a", b"PUT", None, client, now),
        Verdict::Open
    );
    let mut except = rule(prefix("/m/"), "Private", &file);
    except.methods = AuthMethods::Except(list(&["GET"]));
    let mut auth = auth_with(vec![except], 10);
    for method in ["GET", "HEAD"] {
        assert_eq!(
            auth.check(b"/m/a", method.as_bytes(), None, client, now),
            Verdict::Open
        );
    }
    let v = auth.check(b"/m/a", b"PUT", None, client, now);
    assert!(challenged(None)(&v), "{v:?}");
}

#[test]
fn no_rules_means_everything_is_open() {
    let mut auth = auth_with(Vec::new(), 10);
    assert!(!auth.is_active());
    let v = auth.check(
        b"/private/x",
        b"GET",
        Some(ALICE),
        ip("192.0.2.1"),
        Instant::now(),
    );
    assert_eq!(v, Verdict::Open);
}

#[test]
fn no_credentials_gets_the_challenge_and_is_not_a_failure() {
    let (_d, mut auth) = setup(1);
    let now = Instant::now();
    for _ in 0..5 {
        let v = auth.check(b"/private/x", b"GET", None, ip("192.0.2.1"), now);
        assert!(challenged(None)(&v), "{v:?}");
    }
    assert_eq!(auth.tracked_clients(), 0);
}

#[test]
fn valid_credentials_are_allowed_with_the_user_name() {
    let (_d, mut auth) = setup(10);
    let now = Instant::now();
    let v = auth.check(b"/private/x", b"GET", Some(ALICE), ip("192.0.2.1"), now);
    assert_eq!(v, Verdict::Allowed { user: b"alice" });
    // Every format through the whole path, header to verdict.
    let logins: &[(&str, &[u8])] = &[
        ("bcrypt4", b"correct horse"),
        ("bcrypt5", "pa:ss wörd".as_bytes()),
        ("apr1colon", "pa:ss wörd".as_bytes()),
        ("sha1", b"correct horse"),
        ("sha256r", "pa:ss wörd".as_bytes()),
        ("sha512", b"correct horse"),
        ("argon2id", b"correct horse"),
        ("apr1bin", b"bin\xffary"),
    ];
    for (user, password) in logins {
        let mut cred = format!("{user}:").into_bytes();
        cred.extend_from_slice(password);
        let v = auth.check(
            b"/private/",
            b"GET",
            Some(&basic(&cred)),
            ip("192.0.2.1"),
            now,
        );
        assert_eq!(
            v,
            Verdict::Allowed {
                user: user.as_bytes()
            },
            "{user}"
        );
    }
}

#[test]
fn wrong_password_and_unknown_user_are_failures_with_the_user_name() {
    let (_d, mut auth) = setup(10);
    let now = Instant::now();
    let client = ip("192.0.2.1");
    let v = auth.check(
        b"/private/x",
        b"GET",
        Some(&basic(b"alice:wrong")),
        client,
        now,
    );
    assert!(challenged(Some(FailureReason::WrongPassword))(&v), "{v:?}");
    if let Verdict::Challenge {
        failure: Some(f), ..
    } = v
    {
        assert_eq!(f.user, Some(&b"alice"[..]));
        assert_eq!(
            f.log_line(client),
            "auth failed for user \"alice\" from 192.0.2.1: wrong password"
        );
    }
    let v = auth.check(
        b"/private/x",
        b"GET",
        Some(&basic(b"mallory:x")),
        client,
        now,
    );
    assert!(challenged(Some(FailureReason::UnknownUser))(&v), "{v:?}");
    // The password is split at the first colon: "alice" + "correct horse:".
    let v = auth.check(
        b"/private/x",
        b"GET",
        Some(&basic(b"alice:correct horse:")),
        client,
        now,
    );
    assert!(challenged(Some(FailureReason::WrongPassword))(&v), "{v:?}");
}

#[test]
fn malformed_authorization_values() {
    let (_d, mut auth) = setup(0);
    let now = Instant::now();
    let client = ip("192.0.2.1");
    let ok: &[&[u8]] = &[
        ALICE,
        b"basic YWxpY2U6Y29ycmVjdCBob3JzZQ==",
        b"BASIC YWxpY2U6Y29ycmVjdCBob3JzZQ==",
        b"Basic   YWxpY2U6Y29ycmVjdCBob3JzZQ==",
        b" Basic YWxpY2U6Y29ycmVjdCBob3JzZQ== \t",
    ];
    for v in ok {
        let verdict = auth.check(b"/private/", b"GET", Some(v), client, now);
        assert_eq!(verdict, Verdict::Allowed { user: b"alice" }, "{v:?}");
    }
    let bad: &[&[u8]] = &[
        b"",
        b"Basic",
        b"Basic ",
        b"Basic\tYWxpY2U6Y29ycmVjdCBob3JzZQ==",
        b"Basicx YWxpY2U6Y29ycmVjdCBob3JzZQ==",
        b"Bearer YWxpY2U6Y29ycmVjdCBob3JzZQ==",
        b"Digest username=\"alice\"",
        b"Basic YWxpY2U6Y29ycmVjdCBob3JzZQ",    // padding missing
        b"Basic YWxpY2U6Y29ycmVjdCBob3JzZQ===", // too much padding
        b"Basic YWxpY2U6Y29ycmVjdCBob3JzZR==",  // non-zero trailing bits
        b"Basic YWxp Y2U6Y29ycmVjdCBob3JzZQ==",
        b"Basic YWxpY2U6Y29ycmVjdCBob3JzZQ==,",
        b"Basic YWxp-2U6Y29ycmVjdCBob3JzZQ==", // base64url alphabet
        b"Basic =YWxpY2U6Y29ycmVjdCBob3JzZQ=",
        b"Basic YWxpY2U=",                     // "alice": no colon
        b"Basic OmNvcnJlY3QgaG9yc2U=",         // ":correct horse": empty user
        b"Basic YWwJaWNlOng=",                 // "al\ice:x": control character
        b"Basic YWxpY2U6Y29ycmVjdAhob3JzZQ==", // control character in password
    ];
    for v in bad {
        let verdict = auth.check(b"/private/", b"GET", Some(v), client, now);
        assert!(
            challenged(Some(FailureReason::Malformed))(&verdict),
            "{:?}: {verdict:?}",
            String::from_utf8_lossy(v)
        );
        if let Verdict::Challenge {
            failure: Some(f), ..
        } = verdict
        {
            assert_eq!(f.user, None);
            assert_eq!(
                f.log_line(client),
                "auth failed from 192.0.2.1: malformed Authorization header"
            );
        }
    }
}

#[test]
fn failures_are_limited_per_client_within_the_window() {
    let (_d, mut auth) = setup(3);
    let t0 = Instant::now();
    let attacker = ip("192.0.2.66");
    let wrong = basic(b"alice:guess");
    for i in 0..3 {
        let at = t0 + Duration::from_secs(i);
        let v = auth.check(b"/private/", b"GET", Some(&wrong), attacker, at);
        assert!(
            challenged(Some(FailureReason::WrongPassword))(&v),
            "{i}: {v:?}"
        );
    }
    // Blocked now, even with the right password, and not for open paths.
    let at = t0 + Duration::from_millis(10_500);
    let v = auth.check(b"/private/", b"GET", Some(ALICE), attacker, at);
    assert_eq!(
        v,
        Verdict::TooManyFailures {
            retry_after_secs: 50
        }
    );
    let v = auth.check(b"/private/", b"GET", None, attacker, at);
    assert_eq!(
        v,
        Verdict::TooManyFailures {
            retry_after_secs: 50
        }
    );
    assert_eq!(
        auth.check(b"/open", b"GET", None, attacker, at),
        Verdict::Open
    );
    // Others are not affected, and their success resets nothing.
    let v = auth.check(b"/private/", b"GET", Some(ALICE), ip("192.0.2.1"), at);
    assert_eq!(v, Verdict::Allowed { user: b"alice" });
    let v = auth.check(b"/private/", b"GET", Some(ALICE), attacker, at);
    assert!(matches!(v, Verdict::TooManyFailures { .. }));
    // The window started at the first failure; after it, a fresh start.
    let later = t0 + Duration::from_secs(60);
    let v = auth.check(b"/private/", b"GET", Some(ALICE), attacker, later);
    assert_eq!(v, Verdict::Allowed { user: b"alice" });
    // A success does not reset the client's own count either.
    for _ in 0..2 {
        auth.check(b"/private/", b"GET", Some(&wrong), attacker, later);
    }
    auth.check(b"/private/", b"GET", Some(ALICE), attacker, later);
    auth.check(b"/private/", b"GET", Some(&wrong), attacker, later);
    let v = auth.check(b"/private/", b"GET", Some(ALICE), attacker, later);
    assert_eq!(
        v,
        Verdict::TooManyFailures {
            retry_after_secs: 60
        }
    );
}

#[test]
fn malformed_headers_count_as_failures() {
    let (_d, mut auth) = setup(2);
    let now = Instant::now();
    let client = ip("192.0.2.9");
    auth.check(b"/private/", b"GET", Some(b"Basic !!!!"), client, now);
    auth.check(b"/private/", b"GET", Some(b"Bearer x"), client, now);
    let v = auth.check(b"/private/", b"GET", Some(ALICE), client, now);
    assert!(matches!(v, Verdict::TooManyFailures { .. }), "{v:?}");
}

#[test]
fn an_ipv6_slash_64_is_one_client_and_mapped_ipv4_is_ipv4() {
    let (_d, mut auth) = setup(2);
    let now = Instant::now();
    let wrong = basic(b"alice:guess");
    auth.check(
        b"/private/",
        b"GET",
        Some(&wrong),
        ip("2001:db8:1:2::1"),
        now,
    );
    auth.check(
        b"/private/",
        b"GET",
        Some(&wrong),
        ip("2001:db8:1:2:ffff::9"),
        now,
    );
    let v = auth.check(
        b"/private/",
        b"GET",
        Some(ALICE),
        ip("2001:db8:1:2::77"),
        now,
    );
    assert!(matches!(v, Verdict::TooManyFailures { .. }), "{v:?}");
    let v = auth.check(
        b"/private/",
        b"GET",
        Some(ALICE),
        ip("2001:db8:1:3::1"),
        now,
    );
    assert_eq!(v, Verdict::Allowed { user: b"alice" });

    auth.check(
        b"/private/",
        b"GET",
        Some(&wrong),
        ip("::ffff:192.0.2.5"),
        now,
    );
    auth.check(b"/private/", b"GET", Some(&wrong), ip("192.0.2.5"), now);
    let v = auth.check(b"/private/", b"GET", Some(ALICE), ip("192.0.2.5"), now);
    assert!(matches!(v, Verdict::TooManyFailures { .. }), "{v:?}");
}

#[test]
fn the_failure_map_is_bounded_and_forgets_the_oldest() {
    use super::failures::Failures;
    let t0 = Instant::now();
    let mut f = Failures::new(1, Duration::from_secs(60), 3);
    for i in 0..3u8 {
        f.record(
            IpAddr::from([10, 0, 0, i]),
            t0 + Duration::from_secs(u64::from(i)),
        );
    }
    assert_eq!(f.len(), 3);
    let at = t0 + Duration::from_secs(5);
    f.record(ip("10.0.0.9"), at);
    assert_eq!(f.len(), 3);
    assert!(f.blocked(ip("10.0.0.0"), at).is_none(), "oldest forgotten");
    for who in ["10.0.0.1", "10.0.0.2", "10.0.0.9"] {
        assert!(f.blocked(ip(who), at).is_some(), "{who}");
    }
    // Expired windows go first, whatever their age order.
    let much_later = t0 + Duration::from_secs(120);
    f.record(ip("10.0.0.10"), much_later);
    assert_eq!(f.len(), 1);
    // Limit 0: nothing is tracked.
    let mut off = Failures::new(0, Duration::from_secs(60), 3);
    off.record(ip("10.0.0.1"), t0);
    assert_eq!(off.len(), 0);
    assert!(off.blocked(ip("10.0.0.1"), t0).is_none());
}

#[test]
fn a_full_failure_map_makes_room_for_many_clients_at_once() {
    // Full of windows still running, the map forgets its oldest eighth
    // at once, not one client a new client: each scan of it (under the
    // lock every worker takes) is paid once per capacity / 8 newcomers.
    use super::failures::Failures;
    let t0 = Instant::now();
    let mut f = Failures::new(1, Duration::from_secs(60), 16);
    for i in 0..16u8 {
        f.record(
            IpAddr::from([10, 0, 0, i]),
            t0 + Duration::from_millis(u64::from(i)),
        );
    }
    let at = t0 + Duration::from_secs(1);
    f.record(ip("10.0.1.0"), at);
    assert_eq!(f.len(), 16 - 2 + 1);
    for gone in ["10.0.0.0", "10.0.0.1"] {
        assert!(f.blocked(ip(gone), at).is_none(), "{gone} forgotten");
    }
    for kept in ["10.0.0.2", "10.0.0.15", "10.0.1.0"] {
        assert!(f.blocked(ip(kept), at).is_some(), "{kept} kept");
    }
    // The room made is used before the next scan.
    f.record(ip("10.0.1.1"), at);
    assert_eq!(f.len(), 16);
    assert!(f.blocked(ip("10.0.0.2"), at).is_some());
}

#[test]
fn the_first_matching_rule_decides() {
    let dir = TempDir::new();
    let inner = dir.write("inner", &format!("bob:{}\n", vector("sha1")));
    let outer = dir.write("outer", &format!("alice:{}\n", vector("apr1")));
    let mut auth = auth_with(
        vec![
            rule(prefix("/private/inner/"), "Inner", &inner),
            rule(prefix("/private/"), "Outer", &outer),
            rule(PathMatch::Glob("*.pdf".into()), "Docs", &inner),
        ],
        0,
    );
    let now = Instant::now();
    let client = ip("192.0.2.1");
    let realm = |v: Verdict<'_>| match v {
        Verdict::Challenge { realm_header, .. } => {
            String::from_utf8(realm_header.to_vec()).unwrap()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(
        realm(auth.check(b"/private/inner/x", b"GET", None, client, now)),
        "Basic realm=\"Inner\", charset=\"UTF-8\""
    );
    assert_eq!(
        realm(auth.check(b"/private/inner.pdf", b"GET", None, client, now)),
        "Basic realm=\"Outer\", charset=\"UTF-8\""
    );
    assert_eq!(
        realm(auth.check(b"/docs/a.pdf", b"GET", None, client, now)),
        "Basic realm=\"Docs\", charset=\"UTF-8\""
    );
    let bob = basic(b"bob:correct horse");
    assert_eq!(
        auth.check(b"/private/inner/x", b"GET", Some(&bob), client, now),
        Verdict::Allowed { user: b"bob" }
    );
    let v = auth.check(b"/private/x", b"GET", Some(&bob), client, now);
    assert!(matches!(v, Verdict::Challenge { .. }), "{v:?}");
    assert_eq!(
        auth.check(b"/private/x", b"GET", Some(ALICE), client, now),
        Verdict::Allowed { user: b"alice" }
    );
}

#[test]
fn user_names_are_escaped_in_log_lines() {
    let f = Failure {
        user: Some(b"ev\"il\\\n\x1b[31m\xff"),
        reason: FailureReason::UnknownUser,
    };
    assert_eq!(
        f.log_line(ip("2001:db8::1")),
        "auth failed for user \"ev\\x22il\\x5c\\x0a\\x1b[31m\\xff\" from 2001:db8::1: unknown user"
    );
}

#[test]
fn offloaded_checks_hash_elsewhere_once_and_settle_the_verdict() {
    let (_d, mut auth) = setup(10);
    auth.offload();
    let now = Instant::now();
    let client = ip("192.0.2.9");
    // Not hashed here: the caller gets the check to run.
    let check = match auth.check(b"/private/x", b"GET", Some(ALICE), client, now) {
        Verdict::Verify(c) => c,
        other => panic!("expected Verify, got {other:?}"),
    };
    auth.settle(check.run());
    assert_eq!(
        auth.check(b"/private/x", b"GET", Some(ALICE), client, now),
        Verdict::Allowed { user: b"alice" }
    );
    // Remembered: no further check for it.
    assert_eq!(
        auth.check(b"/private/x", b"GET", Some(ALICE), client, now),
        Verdict::Allowed { user: b"alice" }
    );
    // A wrong password: checked elsewhere, then refused and counted once.
    let wrong = b"Basic YWxpY2U6d3Jvbmc="; // alice:wrong
    let check = match auth.check(b"/private/x", b"GET", Some(wrong), client, now) {
        Verdict::Verify(c) => c,
        other => panic!("expected Verify, got {other:?}"),
    };
    // (Counted from when it is handed out: see the test below.)
    assert_eq!(auth.failures_of(client), 1);
    auth.settle(check.run());
    let v = auth.check(b"/private/x", b"GET", Some(wrong), client, now);
    assert!(challenged(Some(FailureReason::WrongPassword))(&v), "{v:?}");
    assert_eq!(auth.failures_of(client), 1);
    assert_eq!(auth.tracked_clients(), 1);
    // An unknown user costs the decoy's hash (as much as a known one's,
    // so that times do not tell names): elsewhere too, never on the
    // caller's thread (an event loop, with every connection of its
    // worker behind it), then refused as unknown, and counted once.
    let bob = b"Basic Ym9iOng="; // bob:x
    let check = match auth.check(b"/private/x", b"GET", Some(bob), client, now) {
        Verdict::Verify(c) => c,
        other => panic!("expected Verify for an unknown user, got {other:?}"),
    };
    auth.settle(check.run());
    let v = auth.check(b"/private/x", b"GET", Some(bob), client, now);
    assert!(challenged(Some(FailureReason::UnknownUser))(&v), "{v:?}");
}

#[test]
fn a_client_has_no_more_checks_at_once_than_it_may_fail() {
    // Each check handed to the hashing threads counts as a failure of its
    // client until it verifies: one client cannot queue more hashes than
    // `limits.auth_failures` (here 3), which everyone's logins then wait
    // behind; they would all be failures, and the limit only counted them
    // once hashed.
    let (_d, mut auth) = setup(3);
    auth.offload();
    let now = Instant::now();
    let attacker = ip("192.0.2.66");
    let mut checks = Vec::new();
    for i in 0..3 {
        let guess = basic(format!("alice:guess {i}").as_bytes());
        match auth.check(b"/private/x", b"GET", Some(&guess), attacker, now) {
            Verdict::Verify(c) => checks.push(c),
            other => panic!("{i}: expected Verify, got {other:?}"),
        }
    }
    let guess = basic(b"alice:one more");
    let v = auth.check(b"/private/x", b"GET", Some(&guess), attacker, now);
    assert!(matches!(v, Verdict::TooManyFailures { .. }), "{v:?}");
    // Others are not held back.
    let v = auth.check(b"/private/x", b"GET", Some(ALICE), ip("192.0.2.1"), now);
    assert!(matches!(v, Verdict::Verify(_)), "{v:?}");
    // (Not run: no longer in flight.)
    drop(v);
    // Each one handed out is answered (401), and counted once only.
    for (i, c) in checks.into_iter().enumerate() {
        auth.settle(c.run());
        let guess = basic(format!("alice:guess {i}").as_bytes());
        let v = auth.check(b"/private/x", b"GET", Some(&guess), attacker, now);
        assert!(
            challenged(Some(FailureReason::WrongPassword))(&v),
            "{i}: {v:?}"
        );
    }
    assert_eq!(auth.failures_of(attacker), 3);
    // A check that verifies is taken off the count again.
    let client = ip("192.0.2.7");
    let c = match auth.check(b"/private/x", b"GET", Some(ALICE), client, now) {
        Verdict::Verify(c) => c,
        other => panic!("expected Verify, got {other:?}"),
    };
    assert_eq!(auth.failures_of(client), 1);
    auth.settle(c.run());
    assert_eq!(
        auth.check(b"/private/x", b"GET", Some(ALICE), client, now),
        Verdict::Allowed { user: b"alice" }
    );
    assert_eq!(auth.failures_of(client), 0);
}

#[test]
fn identical_checks_in_flight_share_one_hash_and_count_once() {
    use super::verify::Verifier;
    use super::Checked;
    let (_d, mut auth) = setup(3);
    auth.offload();
    let now = Instant::now();
    let client = ip("192.0.2.9");
    // Handed out while the first is in flight: counted once, so the
    // limit (3) lets them all in.
    let hand_out = |auth: &mut Auth, credential: &[u8]| {
        (0..5)
            .map(
                |i| match auth.check(b"/private/x", b"GET", Some(credential), client, now) {
                    Verdict::Verify(c) => c,
                    other => panic!("{i}: expected Verify, got {other:?}"),
                },
            )
            .collect::<Vec<_>>()
    };
    let wrong = basic(b"alice:wrong");
    let guesses = hand_out(&mut auth, &wrong);
    assert_eq!(auth.failures_of(client), 1);
    // Another credential is another check (and failure until verified).
    let logins = hand_out(&mut auth, ALICE);
    assert_eq!(auth.failures_of(client), 2);
    // The first of each is hashed; the others (submitted before it, so
    // that none comes too late) wait for its verdict, and each request
    // gets it; only the login that verified is taken off the count.
    let verifier = Verifier::new(1);
    let (tx, rx) = std::sync::mpsc::channel::<Checked>();
    for (mut checks, credential) in [(guesses, &wrong[..]), (logins, ALICE)] {
        let first = checks.remove(0);
        for c in checks.into_iter().chain([first]) {
            let tx = tx.clone();
            verifier.submit(c, Box::new(move |done| tx.send(done).unwrap()));
        }
        let done: Vec<Checked> = (0..5)
            .map(|_| rx.recv_timeout(Duration::from_secs(20)).unwrap())
            .collect();
        assert_eq!(done.iter().filter(|d| d.hashed()).count(), 1);
        for d in done {
            auth.settle(d);
            let v = auth.check(b"/private/x", b"GET", Some(credential), client, now);
            if credential == ALICE {
                assert_eq!(v, Verdict::Allowed { user: b"alice" });
            } else {
                assert!(challenged(Some(FailureReason::WrongPassword))(&v), "{v:?}");
            }
        }
    }
    assert_eq!(auth.failures_of(client), 1);
}

#[test]
fn a_destination_is_judged_by_its_own_rule_too() {
    let dir = TempDir::new();
    let a = dir.write("a", &format!("alice:{}\n", vector("apr1")));
    // alice:other
    let b = dir.write("b", "alice:$apr1$abcdefgh$Z2c9NiKlv6d.KgXK4n2DD/\n");
    let mut auth = auth_with(
        vec![
            rule(prefix("/a/"), "A", &a),
            rule(prefix("/b/"), "B", &b),
            rule(prefix("/a2/"), "A2", &a),
        ],
        0,
    );
    let (client, now) = (ip("192.0.2.7"), Instant::now());
    let realm = |v: &Verdict<'_>| match v {
        Verdict::Challenge { realm_header, .. } => {
            String::from_utf8_lossy(realm_header).into_owned()
        }
        other => format!("{other:?}"),
    };
    // An open path to a covered one, or back: the covered one's rule.
    let v = auth.check_both(
        (b"/pub/x", Reach::Own),
        &[b"/a/x".to_vec()],
        b"COPY",
        None,
        client,
        now,
    );
    assert_eq!(realm(&v), "Basic realm=\"A\", charset=\"UTF-8\"");
    let v = auth.check_both(
        (b"/a/x", Reach::Own),
        &[b"/pub/x".to_vec()],
        b"MOVE",
        None,
        client,
        now,
    );
    assert_eq!(realm(&v), "Basic realm=\"A\", charset=\"UTF-8\"");
    assert_eq!(
        auth.check_both(
            (b"/pub/x", Reach::Own),
            &[b"/pub/y".to_vec()],
            b"COPY",
            None,
            client,
            now
        ),
        Verdict::Open
    );
    assert_eq!(
        auth.check_both(
            (b"/pub/x", Reach::Own),
            &[b"/a/y".to_vec()],
            b"COPY",
            Some(ALICE),
            client,
            now
        ),
        Verdict::Allowed { user: b"alice" }
    );
    // Rules of the same file: one check. Of two files: both must take
    // the credentials, and the one that does not answers.
    assert_eq!(
        auth.check_both(
            (b"/a/x", Reach::Own),
            &[b"/a2/y".to_vec()],
            b"COPY",
            Some(ALICE),
            client,
            now
        ),
        Verdict::Allowed { user: b"alice" }
    );
    let v = auth.check_both(
        (b"/a/x", Reach::Own),
        &[b"/b/y".to_vec()],
        b"COPY",
        Some(ALICE),
        client,
        now,
    );
    assert_eq!(realm(&v), "Basic realm=\"B\", charset=\"UTF-8\"");
    let other = basic(b"alice:other");
    let v = auth.check_both(
        (b"/a/x", Reach::Own),
        &[b"/b/y".to_vec()],
        b"COPY",
        Some(&other),
        client,
        now,
    );
    assert_eq!(realm(&v), "Basic realm=\"A\", charset=\"UTF-8\"");
    // Hashed elsewhere: each file's check in turn, none taken for the
    // other's, and a refusal answered (not asked for again).
    let mut auth = auth_with(
        vec![rule(prefix("/a/"), "A", &a), rule(prefix("/b/"), "B", &b)],
        0,
    );
    auth.offload();
    let mut verified = 0;
    let v = loop {
        match auth.check_both(
            (b"/a/x", Reach::Own),
            &[b"/b/y".to_vec()],
            b"MOVE",
            Some(ALICE),
            client,
            now,
        ) {
            Verdict::Verify(c) => auth.settle(c.run()),
            other => break realm(&other),
        }
        verified += 1;
        assert!(verified <= 2, "asked to verify again and again");
    };
    assert_eq!(
        (v.as_str(), verified),
        ("Basic realm=\"B\", charset=\"UTF-8\"", 2)
    );
}
