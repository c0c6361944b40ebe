//! Every format against hashes made by the real tools
//! (`testdata/vectors.htpasswd`, see `testdata/gen.sh`).

use super::{ct_eq, Hash};

const VECTORS: &str = include_str!("../testdata/vectors.htpasswd");

/// The passwords `gen.sh` gave each user.
fn password(user: &str) -> Vec<u8> {
    match user {
        "bcrypt4" | "apr1" | "sha1" | "sha256" | "sha512" | "argon2id" => b"correct horse".to_vec(),
        "bcrypt5" | "apr1colon" | "sha256r" | "sha512r" | "argon2idp" => {
            "pa:ss wörd".as_bytes().to_vec()
        }
        "apr1bin" => b"bin\xffary".to_vec(),
        "long" => format!("{:080}", 7).into_bytes(),
        other => panic!("no password for {other}"),
    }
}

fn vectors() -> Vec<(&'static str, &'static str)> {
    VECTORS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split_once(':').unwrap())
        .collect()
}

fn parse(s: &str) -> Hash {
    Hash::parse(s.as_bytes(), false).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn every_vector_verifies_with_its_password_only() {
    let all = vectors();
    assert_eq!(all.len(), 13);
    for (user, hash) in all {
        let h = parse(hash);
        let pw = password(user);
        assert!(h.verify(&pw), "{user} ({}) right password", h.scheme());
        for i in [0, pw.len() / 2, pw.len() - 1] {
            let mut wrong = pw.clone();
            wrong[i] ^= 1;
            // bcrypt reads 72 bytes only (see the test below).
            let beyond_72 = h.scheme() == "bcrypt" && i >= 72;
            assert_eq!(h.verify(&wrong), beyond_72, "{user} wrong byte {i}");
        }
        assert!(!h.verify(b""), "{user} empty password");
        if user != "long" {
            assert!(!h.verify(&pw[..pw.len() - 1]), "{user} truncated password");
        }
    }
}

#[test]
fn schemes_are_recognised() {
    let schemes: Vec<&str> = vectors().iter().map(|(_, h)| parse(h).scheme()).collect();
    for s in [
        "bcrypt",
        "apr1",
        "{SHA}",
        "SHA-256-crypt",
        "SHA-512-crypt",
        "argon2id",
    ] {
        assert!(schemes.contains(&s), "{s}");
    }
}

#[test]
fn bcrypt_2b_and_2a_are_the_same_algorithm_as_2y() {
    let (_, h) = vectors()[0];
    for prefix in ["$2b$", "$2a$"] {
        let relabelled = format!("{prefix}{}", &h[4..]);
        assert!(parse(&relabelled).verify(b"correct horse"), "{prefix}");
        assert!(!parse(&relabelled).verify(b"correct horsf"), "{prefix}");
    }
}

#[test]
fn bcrypt_uses_the_first_72_bytes_only() {
    let (_, h) = *vectors().iter().find(|(u, _)| *u == "long").unwrap();
    let mut pw = password("long");
    pw.truncate(72);
    assert!(parse(h).verify(&pw));
    pw.extend_from_slice(b"anything");
    assert!(parse(h).verify(&pw));
    pw.truncate(71);
    assert!(!parse(h).verify(&pw));
}

#[test]
fn sha_crypt_rounds_below_the_minimum_are_clamped() {
    // Same salt and password, rounds=10 and rounds=1000 give one digest
    // (Drepper's specification clamps to 1000).
    let (_, h) = *vectors().iter().find(|(u, _)| *u == "sha512r").unwrap();
    let low = h.replace("rounds=1000$", "rounds=10$");
    assert!(parse(&low).verify("pa:ss wörd".as_bytes()));
}

#[test]
fn plaintext_only_when_allowed() {
    let e = Hash::parse(b"secret", false).err().unwrap().to_string();
    assert!(e.contains("allow_plaintext = true"), "{e}");
    let h = Hash::parse(b"secret", true).unwrap();
    assert_eq!(h.scheme(), "plaintext");
    assert!(h.verify(b"secret"));
    assert!(!h.verify(b"secreT"));
    assert!(!h.verify(b"secret "));
}

#[test]
fn unsupported_and_broken_hashes_are_refused_with_a_reason() {
    let cases: &[(&str, &str)] = &[
        ("S5HmsE3xRKxgw", "crypt(3) DES"),
        ("", "empty"),
        ("$1$abcdefgh$0123456789012345678901", "MD5-crypt ($1$)"),
        ("$y$j9T$salt$hash", "unknown password hash scheme $y$"),
        ("{SSHA}abcd", "unknown password hash scheme {SSHA}"),
        ("$argon2i$v=19$m=1024,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g", "argon2id variant"),
        ("{SHA}L55TUjtiq8FBorTWAZ0jy6g129A", "{SHA} must be"),
        ("{SHA}L55TUjtiq8FBorTWAZ0jy6g129B=", "{SHA} must be"),
        ("$2y$05$u4jtTYVQLJzSo8YlTO8Q5eDQ4L0r2Nmgg9rZGEDZQYmQnVm9RdN/", "bcrypt hashes look like"),
        ("$2y$03$u4jtTYVQLJzSo8YlTO8Q5eDQ4L0r2Nmgg9rZGEDZQYmQnVm9RdN/.", "bcrypt cost"),
        ("$2y$31$u4jtTYVQLJzSo8YlTO8Q5eDQ4L0r2Nmgg9rZGEDZQYmQnVm9RdN/.", "bcrypt cost"),
        ("$2y$05$u4jtTYVQLJzSo8YlTO8Q5eDQ4L0r2Nmgg9rZGEDZQYmQnVm9RdN/!", "bcrypt base64"),
        ("$5$salt", "look like $5$salt$digest"),
        ("$5$salt$short", "43 characters"),
        ("$6$rounds=$salt$x", "rounds= must be a number"),
        ("$6$rounds=99999999$salt$x", "at most 10000000"),
        ("$5$rounds=1000000000$salt$x", "at most 10000000"),
        // (A number however written: 1, clamped to 1000; then the digest.)
        ("$5$rounds=00000000000000000001$salt$x", "43 characters"),
        ("$6$rounds=1e3$salt$x", "rounds= must be a number"),
        ("$apr1$saltsalty$PaOrrN0JjvvvvnROjdTQv/", "at most 8"),
        ("$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv", "22 characters"),
        ("$argon2id$v=19$m=1024,t=2$c2FsdHNhbHRzYWx0$H5rnCvoHJK5J3ADJ9mc9NL74Ow2lIMZ5zI+CyR256y0", "look like"),
        ("$argon2id$v=19$m=1024,t=2,p=1$c2FsdHNhbHRzYWx0", "look like"),
        ("$argon2id$v=18$m=1024,t=2,p=1$c2FsdHNhbHRzYWx0$H5rnCvoHJK5J3ADJ9mc9NL74Ow2lIMZ5zI+CyR256y0", "v=19 or v=16"),
        ("$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0$H5rnCvoHJK5J3ADJ9mc9NL74Ow2lIMZ5zI+CyR256y0", "at most m="),
        ("$argon2id$v=19$m=1024,t=2,p=1$c2FsdA$H5rnCvoHJK5J3ADJ9mc9NL74Ow2lIMZ5zI+CyR256y0", "salt must be 8"),
        ("$argon2id$v=19$m=1024,t=2,p=1$c2FsdHNhbHRzYWx0$H5rnCvoHJK5J3ADJ9mc9NL74Ow2lIMZ5zI+CyR256y0=", "not unpadded base64"),
    ];
    for (hash, want) in cases {
        match Hash::parse(hash.as_bytes(), false) {
            Ok(h) => panic!("{hash}: accepted as {}", h.scheme()),
            Err(e) => assert!(e.to_string().contains(want), "{hash}: {e} (wanted {want})"),
        }
    }
}

#[test]
fn argon2id_without_version_is_v16() {
    // v=16 and v=19 differ, so the v=19 vector must fail when relabelled.
    let (_, h) = *vectors().iter().find(|(u, _)| *u == "argon2id").unwrap();
    let v16 = h.replace("v=19$", "");
    assert!(!parse(&v16).verify(b"correct horse"));
    assert!(parse(h).verify(b"correct horse"));
}

#[test]
fn constant_time_equality() {
    assert!(ct_eq(b"", b""));
    assert!(ct_eq(b"abc", b"abc"));
    assert!(!ct_eq(b"abc", b"abd"));
    assert!(!ct_eq(b"abc", b"ab"));
    assert!(!ct_eq(b"\x00bc", b"abc"));
}
