//! `[proxy]`: its keys, how its listeners sit with the others, and its
//! errors (file, line, key); which `listen` is the default one, and
//! `timeouts.stop_delay` (both for running under systemd).

use super::{config, load, load_err, TempDir};

#[test]
fn listen_and_trusted_load() {
    let c = load(
        "listen = \"127.0.0.1:8080\"\n[proxy]\nlisten = [\"127.0.0.1:8081\"]\ntrusted = [\"10.0.0.0/8\", \"::1\"]\n",
    )
    .unwrap();
    assert_eq!(c.listen, vec!["127.0.0.1:8080".parse().unwrap()]);
    assert_eq!(c.proxy.listen, vec!["127.0.0.1:8081".parse().unwrap()]);
    let ranges: Vec<String> = c.proxy.trusted.0.iter().map(|r| r.to_string()).collect();
    assert_eq!(ranges, ["10.0.0.0/8", "::1/128"]);
    // Nothing by default: no header is ever believed.
    let d = load("").unwrap();
    assert!(d.proxy.listen.is_empty() && d.proxy.trusted.is_empty());
    // The header read: X-Forwarded-For unless told.
    use crate::access::proxy::forwarded::By;
    assert_eq!(c.proxy.header, By::XForwardedFor);
    let f = load("[proxy]\ntrusted = \"::1\"\nheader = \"Forwarded\"\n").unwrap();
    assert_eq!(f.proxy.header, By::Forwarded);
    let e = load_err("[proxy]\nheader = \"x-real-ip\"\n");
    assert!(e.contains("site.toml:3: proxy.header: expected"), "{e}");
}

#[test]
fn an_ipv4_mapped_trusted_range_is_its_ipv4_range() {
    // Clients are matched by their IPv4 address (a mapped peer too):
    // kept as written, the range would trust nobody, silently.
    let c = load("[proxy]\ntrusted = [\"::ffff:10.0.0.0/104\", \"::ffff:127.0.0.1\"]\n").unwrap();
    let ranges: Vec<String> = c.proxy.trusted.0.iter().map(|r| r.to_string()).collect();
    assert_eq!(ranges, ["10.0.0.0/8", "127.0.0.1/32"]);
    assert!(c.proxy.trusted.contains("10.1.2.3".parse().unwrap()));
    assert!(c
        .proxy
        .trusted
        .contains("::ffff:127.0.0.1".parse().unwrap()));
}

#[test]
fn proxy_listeners_alone_replace_the_default_listen() {
    let c = load("[proxy]\nlisten = \"127.0.0.1:8081\"\n").unwrap();
    assert!(c.listen.is_empty(), "no plain listener without the header");
    // trusted alone keeps the default listener.
    let c = load("[proxy]\ntrusted = \"127.0.0.1\"\n").unwrap();
    assert_eq!(c.listen, vec!["127.0.0.1:8080".parse().unwrap()]);
    // --listen on the command line is kept next to them.
    let dir = TempDir::new();
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n[proxy]\nlisten = \"127.0.0.1:8081\"\n",
    );
    let c = config(&[
        "--config",
        file.to_str().unwrap(),
        "--listen",
        "127.0.0.1:9000",
    ]);
    assert_eq!(c.listen, vec!["127.0.0.1:9000".parse().unwrap()]);
    assert_eq!(c.proxy.listen, vec!["127.0.0.1:8081".parse().unwrap()]);
}

#[test]
fn errors_name_the_file_line_and_key() {
    assert_eq!(
        load_err("[proxy]\ntrusted = [\"10.0.0.0/33\"]\n"),
        "DIR/site.toml:3: proxy.trusted: the prefix length of \"10.0.0.0/33\" must be a number from 0 to 32"
    );
    assert_eq!(
        load_err("[proxy]\n\ntrusted = \"10.1.0.0/8\"\n"),
        "DIR/site.toml:4: proxy.trusted: \"10.1.0.0/8\" has bits set beyond its /8 prefix; did you mean \"10.0.0.0/8\"?"
    );
    assert_eq!(
        load_err("[proxy]\ntrusted = \"proxy.example\"\n"),
        "DIR/site.toml:3: proxy.trusted: expected an IP address or a CIDR range such as \"10.0.0.0/8\" or \"fd00::/8\"; got \"proxy.example\""
    );
    assert!(load_err("[proxy]\nlisten = \"nowhere\"\n")
        .starts_with("DIR/site.toml:3: proxy.listen: expected"));
    assert!(
        load_err("[proxy]\nlisten = []\n").contains("proxy.listen: expected at least one address")
    );
    let e = load_err("[proxy]\nlisen = \"127.0.0.1:1\"\n");
    assert!(
        e.contains("unknown key \"proxy.lisen\"; did you mean \"listen\"?"),
        "{e}"
    );
    assert_eq!(
        load_err("listen = \"127.0.0.1:8081\"\n[proxy]\nlisten = \"127.0.0.1:8081\"\n"),
        "DIR/site.toml:4: proxy.listen: 127.0.0.1:8081 is also in listen or tls.listen; an address either expects a PROXY protocol header on every connection or never"
    );
}

#[test]
fn check_config_shows_the_section() {
    let dir = TempDir::new();
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n[proxy]\nlisten = \"127.0.0.1:8081\"\ntrusted = \"10.0.0.0/8\"\n",
    );
    let out = match super::args(&["--config", file.to_str().unwrap(), "--check-config"]) {
        Ok(crate::config::Command::CheckOk(s)) => s,
        other => panic!("{other:?}"),
    };
    assert!(out.contains("listen: none (see tls and proxy)\n"), "{out}");
    assert!(out.contains("proxy: listen 127.0.0.1:8081 (a PROXY protocol v1 or v2 header required on every connection)\n"), "{out}");
    assert!(out.contains("proxy: trusted 10.0.0.0/8 ("), "{out}");
}

#[test]
fn the_default_listen_is_known_as_such() {
    // (What socket activation replaces: only a listener nobody asked for.)
    assert!(load("").unwrap().listen_default);
    assert!(
        !load("listen = \"127.0.0.1:8080\"\n")
            .unwrap()
            .listen_default
    );
    assert!(
        !load("[proxy]\nlisten = \"127.0.0.1:8081\"\n")
            .unwrap()
            .listen_default
    );
    assert!(
        load("[proxy]\ntrusted = \"127.0.0.1\"\n")
            .unwrap()
            .listen_default
    );
    let dir = TempDir::new();
    let file = dir.write("site.toml", "root = \"public\"\n");
    let file = file.to_str().unwrap();
    assert!(!config(&["--config", file, "--port", "9000"]).listen_default);
    assert!(!config(&["--config", file, "--listen", "127.0.0.1:9000"]).listen_default);
    assert!(config(&["--config", file]).listen_default);
}

#[test]
fn stop_delay_loads() {
    assert_eq!(
        load("").unwrap().timeouts.stop_delay,
        std::time::Duration::ZERO
    );
    let c = load("[timeouts]\nstop_delay = \"5s\"\n").unwrap();
    assert_eq!(c.timeouts.stop_delay, std::time::Duration::from_secs(5));
    assert!(load_err("[timeouts]\nstop_delay = \"soon\"\n")
        .starts_with("DIR/site.toml:3: timeouts.stop_delay: expected"));
}
