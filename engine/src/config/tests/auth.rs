//! `[[auth]]` rules, `limits.auth_failures` and
//! `timeouts.auth_failure_window`. Each test writes `site.toml` and an
//! `htpasswd` next to it.

use std::path::PathBuf;
use std::time::Duration;

use super::{args, load, load_err, TempDir};
use crate::config::{AuthRule, Command, Config, ConfigError, PathMatch};

/// `alice`'s APR1 hash from the committed vectors.
const APR1: &str = "$apr1$vJldrM4y$PaOrrN0JjvvvvnROjdTQv/";

fn run(dir: &TempDir, text: &str) -> Result<Config, ConfigError> {
    let file = dir.write("site.toml", &format!("root = \"public\"\n{text}"));
    match args(&["--config", file.to_str().unwrap()]) {
        Ok(Command::Run(c)) => Ok(c),
        Ok(other) => panic!("expected Run, got {other:?}"),
        Err(e) => Err(e),
    }
}

/// The error for `text`, with `htpasswd` containing `passwords`.
fn err(passwords: &str, text: &str) -> String {
    let dir = TempDir::new();
    dir.write("htpasswd", passwords);
    match run(&dir, text) {
        Ok(c) => panic!("expected an error, got {:?}", c.site.auth),
        Err(e) => e.message.replace(dir.path().to_str().unwrap(), "DIR"),
    }
}

fn good() -> String {
    format!("alice:{APR1}\n")
}

#[test]
fn defaults() {
    let c = load("").unwrap();
    assert!(c.site.auth.is_empty());
    assert_eq!(c.limits.auth_failures, 10);
    assert_eq!(c.timeouts.auth_failure_window, Duration::from_secs(60));
}

#[test]
fn limits_and_window() {
    let c =
        load("[limits]\nauth_failures = 0\n[timeouts]\nauth_failure_window = \"5m\"\n").unwrap();
    assert_eq!(c.limits.auth_failures, 0);
    assert_eq!(c.timeouts.auth_failure_window, Duration::from_secs(300));
    assert_eq!(
        load_err("[limits]\nauth_failures = -1\n"),
        "DIR/site.toml:3: limits.auth_failures: expected an integer from 0 to 1000000; got -1"
    );
    assert_eq!(
        load_err("[timeouts]\nauth_failure_window = 0\n"),
        "DIR/site.toml:3: timeouts.auth_failure_window: expected a duration greater than zero; got 0"
    );
}

#[test]
fn rules_in_file_order() {
    let dir = TempDir::new();
    dir.write("htpasswd", &good());
    dir.write("conf/plain", "bob:secret\n");
    let c = run(
        &dir,
        r#"
[[auth]]
path = "/private/"
realm = "Private"
htpasswd = "htpasswd"

[[auth]]
htpasswd = "conf/plain"
allow_plaintext = true
realm = "Documents — ünïcode"
pattern = "*.pdf"
"#,
    )
    .unwrap();
    let base: PathBuf = dir.path().to_path_buf();
    assert_eq!(
        c.site.auth,
        [
            AuthRule {
                matcher: PathMatch::Prefix("/private/".into()),
                realm: "Private".into(),
                htpasswd: base.join("htpasswd"),
                allow_plaintext: false,
                methods: Default::default(),
                origin: format!("{}:6: auth[1].htpasswd", base.join("site.toml").display()),
            },
            AuthRule {
                matcher: PathMatch::Glob("*.pdf".into()),
                realm: "Documents — ünïcode".into(),
                htpasswd: base.join("conf/plain"),
                allow_plaintext: true,
                methods: Default::default(),
                origin: format!("{}:9: auth[2].htpasswd", base.join("site.toml").display()),
            },
        ]
    );
}

#[test]
fn each_rule_needs_a_matcher_a_realm_and_a_file() {
    let pw = good();
    assert_eq!(
        err(&pw, "[[auth]]\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n"),
        "DIR/site.toml:2: auth[1]: needs path = \"/prefix/\" or pattern = \"*.ext\""
    );
    assert_eq!(
        err(&pw, "[[auth]]\npath = \"/p/\"\nhtpasswd = \"htpasswd\"\n"),
        "DIR/site.toml:2: auth[1]: needs realm = \"Name shown at login\""
    );
    assert_eq!(
        err(&pw, "[[auth]]\npath = \"/p/\"\nrealm = \"R\"\n"),
        "DIR/site.toml:2: auth[1]: needs htpasswd = \"path/to/htpasswd\""
    );
    assert_eq!(
        err(
            &pw,
            "[[auth]]\npath = \"/p/\"\npattern = \"*.x\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n"
        ),
        "DIR/site.toml:4: auth[1].pattern: give either path or pattern, not both"
    );
    assert_eq!(
        err(&pw, "[[auth]]\npath = \"p/\"\n"),
        "DIR/site.toml:3: auth[1].path: expected a URL prefix starting with \"/\"; got \"p/\""
    );
    assert_eq!(
        err(&pw, "[[auth]]\npath = \"/p/\"\nrealms = \"R\"\n"),
        "DIR/site.toml:4: unknown key \"auth[1].realms\"; did you mean \"realm\"? expected one of \"path\", \"pattern\", \"realm\", \"htpasswd\", \"allow_plaintext\", \"methods\", \"except_methods\""
    );
    assert_eq!(
        err(&pw, "[auth]\npath = \"/p/\"\n"),
        "DIR/site.toml:2: auth: expected an array of tables ([[auth]]); got a table"
    );
}

#[cfg(feature = "sites")]
#[test]
fn methods_and_except_methods_list_tokens_and_exclude_each_other() {
    use crate::config::AuthMethods;
    let dir = TempDir::new();
    dir.write("htpasswd", &good());
    let rule = "[[auth]]\npath = \"/dav/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n";
    let c = run(
        &dir,
        &format!("{rule}except_methods = [\"GET\", \"PROPFIND\"]\n"),
    )
    .unwrap();
    let list = |m: &[&str]| m.join(" ").into();
    assert_eq!(
        c.site.auth[0].methods,
        AuthMethods::Except(list(&["GET", "PROPFIND"]))
    );
    let c = run(&dir, &format!("{rule}methods = \"PUT\"\n")).unwrap();
    assert_eq!(c.site.auth[0].methods, AuthMethods::Only(list(&["PUT"])));
    let file = dir.write(
        "site.toml",
        &format!("root = \"public\"\n{rule}methods = [\"PUT\", \"DELETE\"]\n"),
    );
    match args(&["--config", file.to_str().unwrap(), "--check-config"]) {
        Ok(Command::CheckOk(s)) => assert!(
            s.contains(&format!(
                "auth: 1 rule\n  path /dav/ (PUT DELETE only): realm \"R\", users from {}\n",
                dir.path().join("htpasswd").display()
            )),
            "{s}"
        ),
        other => panic!("{other:?}"),
    }
    for (extra, want) in [
        (
            "methods = [\"PUT\"]\nexcept_methods = [\"GET\"]\n",
            "DIR/site.toml:7: auth[1].except_methods: give methods (these only) or except_methods (all but these), not both",
        ),
        (
            "methods = [\"PUT\", \"BAD METHOD\"]\n",
            "DIR/site.toml:6: auth[1].methods: expected HTTP methods (tokens, such as \"PUT\"; case matters)",
        ),
        (
            "except_methods = []\n",
            "DIR/site.toml:6: auth[1].except_methods: expected at least one method",
        ),
        (
            "methods = [1]\n",
            "DIR/site.toml:6: auth[1].methods: expected a string",
        ),
        // A standard method in another case is a typo that would let
        // every real GET through without a login.
        (
            "methods = [\"get\", \"POST\"]\n",
            "DIR/site.toml:6: auth[1].methods: \"get\" would match no GET request (methods are case-sensitive, RFC 9110 §9.1); did you mean \"GET\"?",
        ),
        (
            "except_methods = [\"Propfind\"]\n",
            "DIR/site.toml:6: auth[1].except_methods: \"Propfind\" would match no PROPFIND request",
        ),
    ] {
        let e = err(&good(), &format!("{rule}{extra}"));
        assert!(e.starts_with(want), "{extra}: {e}");
    }
}

/// An `[[auth]]` rule an earlier one hides (the same paths, every
/// method it covers) is warned of; one it hides for some methods only is
/// warned of as such (the earlier decides those methods on its paths).
#[cfg(feature = "sites")]
#[test]
fn an_auth_rule_an_earlier_one_hides_is_warned_of() {
    let dir = TempDir::new();
    dir.write("htpasswd", &good());
    let rule = |path: &str, extra: &str| {
        format!("[[auth]]\npath = \"{path}\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n{extra}")
    };
    let text = [
        rule("/dav/", "methods = [\"PUT\"]\n"),
        rule("/dav/a/", ""),
        // (Other methods than auth[1]'s: nothing auth[1] decides.)
        rule("/dav/c/", "methods = [\"GET\"]\n"),
        rule("/", ""),
        rule("/dav/b/", "methods = [\"DELETE\"]\n"),
    ]
    .concat();
    let c = run(&dir, &text).unwrap();
    assert_eq!(
        crate::config::admission::hidden_guards(&c),
        [
            "auth[5] (path \"/dav/b/\") never decides: auth[4] (path \"/\") comes first and \
          matches every path it does, and the first rule that matches decides; put the more \
          specific rule first",
            "auth[2] (path \"/dav/a/\") decides only some methods: auth[1] (path \"/dav/\") \
          comes first, matches every path it does and decides the methods PUT there; put the \
          more specific rule first",
        ]
    );
}

#[test]
fn realms_cannot_break_the_quoted_string() {
    for bad in [
        r#""""#,
        r#""a\"b""#,
        r#""a\\b""#,
        r#""a\nb""#,
        r#""a\u007fb""#,
    ] {
        let e = err(
            &good(),
            &format!("[[auth]]\npath = \"/p/\"\nrealm = {bad}\nhtpasswd = \"htpasswd\"\n"),
        );
        assert!(
            e.starts_with("DIR/site.toml:4: auth[1].realm: expected a non-empty name without \", \\ or control characters"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn the_htpasswd_file_must_exist_and_parse() {
    let rule = "[[auth]]\npath = \"/p/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n";
    let missing = "[[auth]]\npath = \"/p/\"\nrealm = \"R\"\nhtpasswd = \"nothing\"\n";
    let e = err(&good(), missing);
    assert!(
        e.starts_with("DIR/site.toml:5: auth[1].htpasswd: DIR/nothing: cannot read: "),
        "{e}"
    );
    assert_eq!(
        err(&format!("# users\nalice:{APR1}\nbob:S5HmsE3xRKxgw\n"), rule),
        "DIR/site.toml:5: auth[1].htpasswd: DIR/htpasswd:3: crypt(3) DES hashes are not supported (they use only 8 characters of the password); recreate the entry with htpasswd -B"
    );
    assert_eq!(
        err("bob:secret\n", rule),
        "DIR/site.toml:5: auth[1].htpasswd: DIR/htpasswd:1: not a supported password hash (a plaintext password needs allow_plaintext = true; better, hash it with htpasswd -B)"
    );
    assert_eq!(
        err(
            "bob:secret\n",
            &format!("{rule}allow_plaintext = \"yes\"\n")
        ),
        "DIR/site.toml:6: auth[1].allow_plaintext: expected true or false; got \"yes\""
    );
    let dir = TempDir::new();
    dir.write("htpasswd", "bob:secret\n");
    // allow_plaintext counts wherever it stands in the rule.
    let text =
        "[[auth]]\nallow_plaintext = true\nhtpasswd = \"htpasswd\"\npath = \"/\"\nrealm = \"R\"\n";
    assert!(run(&dir, text).unwrap().site.auth[0].allow_plaintext);
}

#[test]
#[cfg(feature = "ops")] // the report
fn check_config_counts_the_rules() {
    let dir = TempDir::new();
    dir.write("htpasswd", &good());
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n[[auth]]\npath = \"/\"\nrealm = \"R\"\nhtpasswd = \"htpasswd\"\n",
    );
    match args(&["--config", file.to_str().unwrap(), "--check-config"]) {
        Ok(Command::CheckOk(s)) => assert!(
            s.contains(&format!(
                "auth: 1 rule\n  path /: realm \"R\", users from {}\n",
                dir.path().join("htpasswd").display()
            )),
            "{s}"
        ),
        other => panic!("{other:?}"),
    }
}
