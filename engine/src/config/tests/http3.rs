//! `[http3]` and `--http3`: the defaults, every key, and the errors
//! (file, line, key).

#[cfg(feature = "http3")]
use super::load;
use super::load_err;

#[cfg(feature = "http3")]
#[test]
fn it_is_off_by_default() {
    let h = load("").unwrap().http3;
    assert!(!h.enable);
    assert_eq!((h.max_streams, h.idle_timeout.as_secs()), (100, 30));
    assert_eq!(h.retry_above, 1000);
    assert_eq!((h.max_cancels, h.flood_window.as_secs()), (400, 10));
}

#[cfg(feature = "http3")]
#[test]
fn errors_name_the_file_line_and_key() {
    assert_eq!(
        load_err("[http3]\nmax_streams = 0\n"),
        "DIR/site.toml:3: http3.max_streams: expected an integer from 1 to 10000; got 0"
    );
    assert_eq!(
        load_err("[http3]\n\nidle_timeout = \"2h\"\n"),
        "DIR/site.toml:4: http3.idle_timeout: at most 1h"
    );
    assert_eq!(
        load_err("[http3]\nretry_above = -1\n"),
        "DIR/site.toml:3: http3.retry_above: expected an integer from 0 to 1000000; got -1"
    );
    assert_eq!(
        load_err("[http3]\nmax_cancels = 0\n"),
        "DIR/site.toml:3: http3.max_cancels: expected an integer from 1 to 1000000; got 0"
    );
    assert_eq!(
        load_err("[http3]\nflood_window = \"2h\"\n"),
        "DIR/site.toml:3: http3.flood_window: at most 1h"
    );
    assert!(load_err("[http3]\nflood_window = \"soon\"\n").starts_with(
        "DIR/site.toml:3: http3.flood_window: expected a number of seconds or a duration"
    ));
    assert!(load_err("[http3]\nidle_timeout = 0\n")
        .starts_with("DIR/site.toml:3: http3.idle_timeout: expected a duration greater than zero"));
    let unknown = load_err("[http3]\nmax_stream = 5\n");
    assert!(
        unknown.starts_with("DIR/site.toml:3: ") && unknown.contains("max_streams"),
        "{unknown}"
    );
}

#[cfg(feature = "http3")]
mod with_tls {
    use super::super::tls::{run, site};

    const TLS: &str = "[tls]\nlisten = [\"127.0.0.1:8443\"]\n[[tls.certificate]]\ncert = \"a.pem\"\nkey = \"a.key\"\n";

    #[test]
    fn every_key_loads() {
        let dir = site();
        let doc =
            format!("{TLS}[http3]\nenable = true\nmax_streams = 50\nidle_timeout = \"10s\"\nretry_above = 0\nmax_cancels = 40\nflood_window = \"1m\"\n");
        let h = run(&dir, &doc, &[]).unwrap().http3;
        assert!(h.enable);
        assert_eq!((h.max_streams, h.idle_timeout.as_secs()), (50, 10));
        assert_eq!(h.retry_above, 0);
        assert_eq!((h.max_cancels, h.flood_window.as_secs()), (40, 60));
    }

    #[test]
    fn the_flag_turns_it_on_with_tls() {
        let dir = site();
        assert!(run(&dir, TLS, &["--http3"]).unwrap().http3.enable);
        let none = "listen = [\"127.0.0.1:8080\"]\n";
        assert_eq!(
            run(&dir, none, &["--http3"]).unwrap_err(),
            "--http3: HTTP/3 runs over QUIC, which is always encrypted: it needs HTTPS ([tls] with a listen address and a certificate, or --tls-cert and --tls-key)"
        );
    }

    #[test]
    fn it_needs_tls() {
        let dir = site();
        assert!(run(&dir, "[http3]\nenable = true\n", &[])
            .unwrap_err()
            .starts_with("DIR/site.toml:2: http3: HTTP/3 runs over QUIC"));
    }
}

#[cfg(not(feature = "http3"))]
#[test]
fn a_build_without_http3_refuses_it() {
    assert!(load_err("[http3]\nenable = false\n")
        .starts_with("DIR/site.toml:2: http3: this brisk was built without HTTP/3"));
}
