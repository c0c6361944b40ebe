//! `[servlets]` and `[[handlers]]` as loaded: defaults, limits, errors.

use super::*;

#[test]
fn servlets_are_off_by_default_and_their_limits_have_safe_defaults() {
    let s = load("").unwrap().site.servlets;
    assert!(!s.enable);
    assert_eq!(s.paths, ["/servlets/"]);
    assert_eq!(s.cpu_time, std::time::Duration::from_secs(1));
    assert_eq!(s.memory, 64 << 20);
    assert_eq!(s.max_output, 16 << 20);
}

#[cfg(feature = "servlets")]
#[test]
fn servlets_load_with_their_config_table_kept_whole() {
    let s = load("[servlets]\nenable = true\npaths = [\"/a/\", \"/b/c/\"]\nconfig = { greeting = \"hello\", n = [1, 2.5, true], t = { x = \"y\" } }\ncpu_time = \"250ms\"\nmemory = \"8MiB\"\n")
        .unwrap()
        .site
        .servlets;
    assert!(s.enable);
    assert_eq!(s.paths, ["/a/", "/b/c/"]);
    use crate::config::Value as V;
    assert_eq!(
        s.config,
        V::Table(vec![
            ("greeting".into(), V::String("hello".into())),
            (
                "n".into(),
                V::Array(vec![V::Integer(1), V::Float(2.5), V::Boolean(true)])
            ),
            (
                "t".into(),
                V::Table(vec![("x".into(), V::String("y".into()))])
            ),
        ])
    );
    assert_eq!(s.cpu_time, std::time::Duration::from_millis(250));
    assert_eq!(s.memory, 8 << 20);
    for (text, want) in [
        (
            "[servlets]\npaths = [\"/a\"]\n",
            "DIR/site.toml:3: servlets.paths: expected URL prefixes",
        ),
        (
            "[servlets]\npaths = []\n",
            "DIR/site.toml:3: servlets.paths: expected at least one URL prefix",
        ),
        (
            "[servlets]\ncpu_time = 0\n",
            "DIR/site.toml:3: servlets.cpu_time: expected a duration greater than zero",
        ),
        (
            "[servlets]\nmemory = 5\n",
            "DIR/site.toml:3: servlets.memory: expected a size from 1048576",
        ),
        (
            "[servlets]\nconfig = 1\n",
            "DIR/site.toml:3: servlets.config: expected a table",
        ),
        (
            "[servlets]\nenabled = true\n",
            "DIR/site.toml:3: unknown key \"servlets.enabled\"; did you mean \"enable\"?",
        ),
    ] {
        let e = load_err(text);
        assert!(e.starts_with(want), "{text}: {e}");
    }
}

#[cfg(not(feature = "servlets"))]
#[test]
fn a_build_without_servlets_refuses_to_turn_them_on() {
    assert!(load_err("[servlets]\nenable = true\n")
        .starts_with("DIR/site.toml:3: servlets.enable: this brisk was built without servlets"));
    assert!(load("[servlets]\nenable = false\n").is_ok());
    // The other keys, which it never uses, by name only.
    assert!(load("[servlets]\npaths = [\"/a\"]\nmemory = 5\n").is_ok());
    assert!(load_err("[servlets]\nenabled = false\n").starts_with(
        "DIR/site.toml:3: unknown key \"servlets.enabled\"; did you mean \"enable\"?"
    ));
}
