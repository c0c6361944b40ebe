//! htpasswd files seen through `Auth`: loading, reloading on change,
//! the cache of verified credentials, and the line format.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::{auth_with, basic, ip, load, prefix, rule, vector, TempDir, ALICE};
use crate::access::auth::{Failure, FailureReason, Verdict};
use crate::access::htpasswd::{Htpasswd, LineError};

#[test]
fn plaintext_entries_only_where_allowed() {
    let dir = TempDir::new();
    let file = dir.write("htpasswd", "carol:hunter2\n");
    let mut rules = vec![rule(prefix("/"), "R", &file)];
    let e = load(&rules, 0).err().unwrap().to_string();
    assert!(e.ends_with("htpasswd:1: not a supported password hash (a plaintext password needs allow_plaintext = true; better, hash it with htpasswd -B)"), "{e}");
    rules[0].allow_plaintext = true;
    let mut auth = load(&rules, 0).unwrap();
    let v = auth.check(
        b"/x",
        b"GET",
        Some(&basic(b"carol:hunter2")),
        ip("192.0.2.1"),
        Instant::now(),
    );
    assert_eq!(v, Verdict::Allowed { user: b"carol" });
}

/// Rewrites `path` and moves its mtime forward, as an editor would.
fn rewrite(path: &Path, text: &str, age: u64) {
    std::fs::write(path, text).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(age))
        .unwrap();
}

#[test]
fn the_file_is_reloaded_when_it_changes() {
    let dir = TempDir::new();
    let file = dir.write("htpasswd", &format!("alice:{}\n", vector("apr1")));
    let mut auth = auth_with(vec![rule(prefix("/"), "R", &file)], 0);
    let t0 = Instant::now();
    let client = ip("192.0.2.1");
    let bob = basic(b"bob:correct horse");
    assert_eq!(
        auth.check(b"/", b"GET", Some(ALICE), client, t0),
        Verdict::Allowed { user: b"alice" }
    );
    assert_eq!(auth.file(0).cached(), 1);

    rewrite(&file, &format!("bob:{}\n", vector("sha1")), 10);
    // Within the second: the old version still answers.
    assert_eq!(
        auth.check(
            b"/",
            b"GET",
            Some(ALICE),
            client,
            t0 + Duration::from_millis(500)
        ),
        Verdict::Allowed { user: b"alice" }
    );
    let t1 = t0 + Duration::from_secs(1);
    let v = auth.check(b"/", b"GET", Some(ALICE), client, t1);
    assert!(
        matches!(
            v,
            Verdict::Challenge {
                failure: Some(Failure {
                    reason: FailureReason::UnknownUser,
                    ..
                }),
                ..
            }
        ),
        "{v:?}"
    );
    assert_eq!(auth.file(0).cached(), 0, "cache emptied by the reload");
    assert_eq!(
        auth.check(b"/", b"GET", Some(&bob), client, t1),
        Verdict::Allowed { user: b"bob" }
    );
    assert!(auth.take_warnings().is_empty());

    // A broken version is reported once and the last good one stays.
    rewrite(&file, "bob\n", 20);
    let t2 = t1 + Duration::from_secs(2);
    assert_eq!(
        auth.check(b"/", b"GET", Some(&bob), client, t2),
        Verdict::Allowed { user: b"bob" }
    );
    let w = auth.take_warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("htpasswd:1: expected user:hash; still using the version"),
        "{w:?}"
    );
    let t3 = t2 + Duration::from_secs(5);
    assert_eq!(
        auth.check(b"/", b"GET", Some(&bob), client, t3),
        Verdict::Allowed { user: b"bob" }
    );
    assert!(auth.take_warnings().is_empty(), "reported once");

    // A missing file, likewise; then a good one again.
    std::fs::remove_file(&file).unwrap();
    let t4 = t3 + Duration::from_secs(2);
    assert_eq!(
        auth.check(b"/", b"GET", Some(&bob), client, t4),
        Verdict::Allowed { user: b"bob" }
    );
    let w = auth.take_warnings();
    assert!(w.len() == 1 && w[0].contains("cannot read"), "{w:?}");
    rewrite(&file, &format!("alice:{}\n", vector("apr1")), 30);
    let t5 = t4 + Duration::from_secs(2);
    assert_eq!(
        auth.check(b"/", b"GET", Some(ALICE), client, t5),
        Verdict::Allowed { user: b"alice" }
    );
    assert!(auth.take_warnings().is_empty());
}

#[test]
fn the_cache_remembers_successes_only_and_keys_the_whole_credential() {
    let dir = TempDir::new();
    let file = dir.write("htpasswd", &format!("a:{}\n", vector("bcrypt4")));
    let mut auth = auth_with(vec![rule(prefix("/"), "R", &file)], 0);
    let now = Instant::now();
    let client = ip("192.0.2.1");
    let good = basic(b"a:correct horse");
    let v = auth.check(b"/", b"GET", Some(&basic(b"a:wrong")), client, now);
    assert!(matches!(v, Verdict::Challenge { .. }));
    assert_eq!(auth.file(0).cached(), 0);
    for _ in 0..3 {
        assert_eq!(
            auth.check(b"/", b"GET", Some(&good), client, now),
            Verdict::Allowed { user: b"a" }
        );
    }
    assert_eq!(auth.file(0).cached(), 1);
    let v = auth.check(b"/", b"GET", Some(&basic(b"a:correct horsE")), client, now);
    assert!(matches!(v, Verdict::Challenge { .. }), "{v:?}");
    assert_eq!(auth.file(0).cached(), 1);
}

#[test]
fn rules_sharing_a_file_share_one_copy() {
    let dir = TempDir::new();
    let file = dir.write("htpasswd", &format!("alice:{}\n", vector("apr1")));
    let auth = auth_with(
        vec![
            rule(prefix("/a/"), "A", &file),
            rule(prefix("/b/"), "B", &file),
        ],
        0,
    );
    assert_eq!(auth.file(0).table().len(), 1);
}

#[test]
fn htpasswd_lines() {
    let apr1 = vector("apr1");
    let text =
        format!("# comment\r\n\r\n  alice:{apr1}  \r\n\tbob:{apr1}:extra:fields\n   \n# end");
    let t = Htpasswd::parse(text.as_bytes(), false).unwrap();
    assert_eq!(t.len(), 2);
    assert!(t.contains(b"alice") && t.contains(b"bob"));
    assert_eq!(t.scheme(b"bob"), Some("apr1"));
    assert_eq!(t.verify(b"bob", b"correct horse"), Some(true));
    assert_eq!(t.verify(b"carol", b"correct horse"), None);
    assert!(Htpasswd::parse(b"", false).unwrap().is_empty());

    let err = |text: String| Htpasswd::parse(text.as_bytes(), false).err().unwrap();
    assert_eq!(
        err(format!("alice:{apr1}\nbob\n")),
        LineError {
            line: 2,
            message: "expected user:hash".into()
        }
    );
    assert_eq!(err(format!(":{apr1}")).message, "empty user name");
    assert_eq!(
        err(format!("a\x01b:{apr1}")).message,
        "control character in the user name"
    );
    assert_eq!(
        err(format!("alice:{apr1}\n#\nalice:{apr1}")),
        LineError {
            line: 3,
            message: "user \"alice\" is already defined on line 1".into()
        }
    );
    assert_eq!(err("x:S5HmsE3xRKxgw".into()).line, 1);
    assert!(err("x:".into()).message.contains("empty password hash"));
}

#[test]
fn a_byte_order_mark_before_the_first_user_is_not_part_of_its_name() {
    // Notepad and other editors on Windows start a UTF-8 file with one:
    // it hid the first user (its name began with EF BB BF).
    let apr1 = vector("apr1");
    let text = format!("\u{feff}alice:{apr1}\nbob:{apr1}\n");
    let t = Htpasswd::parse(text.as_bytes(), false).unwrap();
    assert!(t.contains(b"alice") && t.contains(b"bob"));
    assert_eq!(t.verify(b"alice", b"correct horse"), Some(true));
    // Anywhere else it is not taken off: a name is what the file says.
    let text = format!("alice:{apr1}\n\u{feff}bob:{apr1}\n");
    let t = Htpasswd::parse(text.as_bytes(), false).unwrap();
    assert!(!t.contains(b"bob"));
}

#[test]
fn a_file_that_went_bad_before_start_up_is_an_error() {
    let dir = TempDir::new();
    let file = dir.write("htpasswd", "alice:$2y$05$broken\n");
    let mut rules = vec![rule(prefix("/"), "R", &file)];
    let e = load(&rules, 0).err().unwrap().to_string();
    assert!(
        e.ends_with("htpasswd:1: bcrypt hashes look like $2y$05$ followed by 53 characters"),
        "{e}"
    );
    rules[0].htpasswd = dir.0.join("missing");
    let e = load(&rules, 0).err().unwrap().to_string();
    assert!(e.contains("missing: cannot read: "), "{e}");
}

#[test]
fn an_unknown_user_is_hashed_against_the_costliest_entry() {
    // Not the first entry: with cheaper hashes before a costly one (old
    // APR1 lines, then bcrypt), an unknown name would be answered sooner
    // than the bcrypt users, and times would tell their names.
    let text = "old:$apr1$abcdefgh$Z2c9NiKlv6d.KgXK4n2DD/\n\
                slow:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n\
                fast:$2y$04$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n\
                sha:$6$rounds=5000$saltsalt$cA2Ww5YJM5mk7QZcMfIj9Ox7Myg6bF0aR4ANmHhGR1CN7Mt7ZBspa2pi4y7x1h6oZ1ZnCDm1TwTKc1i6Wv7pV/\n";
    let table = super::super::htpasswd::Htpasswd::parse(text.as_bytes(), false).unwrap();
    assert_eq!(table.decoy(), Some(&b"slow"[..]));
}
