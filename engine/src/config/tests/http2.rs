//! `[http2]`: its defaults, every key, and its errors (file, line, key).

use super::{load, load_err};

/// The defaults are written twice (here for a build without HTTP/2, and
/// in h2::Limits): they agree, and every key reaches the limits.
#[cfg(feature = "http2")]
#[test]
fn the_limits_are_the_configuration_s() {
    use crate::h2::Limits;
    assert_eq!(Limits::from(&load("").unwrap().http2), Limits::default());
    let c = load(
        r#"
[http2]
max_concurrent_streams = 7
stream_window = 70000
connection_window = 80000
max_frame_size = 20000
max_header_list_size = 9000
header_table_size = 100
max_continuations = 3
max_resets = 4
max_control_frames = 5
max_empty_frames = 6
"#,
    )
    .unwrap();
    let expected = Limits {
        max_concurrent_streams: 7,
        stream_window: 70_000,
        connection_window: 80_000,
        max_frame_size: 20_000,
        max_header_list_size: 9000,
        header_table_size: 100,
        max_continuations: 3,
        max_resets: 4,
        max_control_frames: 5,
        max_empty_frames: 6,
        ..Limits::default()
    };
    assert_eq!(Limits::from(&c.http2), expected);
}

#[cfg(feature = "http2")]
#[test]
fn every_key_loads_and_the_defaults_are_on() {
    let d = load("").unwrap().http2;
    assert!(d.enable && d.cleartext);
    assert_eq!(
        (d.max_concurrent_streams, d.stream_window),
        (128, 256 * 1024)
    );
    let c = load(
        r#"
[http2]
enable = false
cleartext = true
max_concurrent_streams = 64
stream_window = "1MiB"
connection_window = "8MiB"
max_frame_size = "64KiB"
max_header_list_size = "32KiB"
header_table_size = 8192
max_continuations = 8
max_resets = 100
max_control_frames = 500
max_empty_frames = 200
"#,
    )
    .unwrap()
    .http2;
    assert!(!c.enable && c.cleartext);
    assert_eq!(c.max_concurrent_streams, 64);
    assert_eq!((c.stream_window, c.connection_window), (1 << 20, 8 << 20));
    assert_eq!((c.max_frame_size, c.max_header_list_size), (65_536, 32_768));
    assert_eq!(c.header_table_size, 8192);
    assert_eq!((c.max_continuations, c.max_resets), (8, 100));
    assert_eq!((c.max_control_frames, c.max_empty_frames), (500, 200));
}

#[test]
fn errors_name_the_file_line_and_key() {
    assert_eq!(
        load_err("[http2]\nmax_resets = 0\n"),
        "DIR/site.toml:3: http2.max_resets: expected an integer from 1 to 1000000; got 0"
    );
    assert!(load_err("[http2]\n\nstream_window = 1000\n")
        .starts_with("DIR/site.toml:4: http2.stream_window: expected a size from 65535 to"));
    assert!(load_err("[http2]\nmax_frame_size = \"1KiB\"\n")
        .contains("http2.max_frame_size: expected a size from 16384 to 16777215"));
    assert!(load_err("[http2]\nenable = \"yes\"\n").contains("http2.enable: expected"));
    let unknown = load_err("[http2]\nmax_stream = 5\n");
    assert!(
        unknown.starts_with("DIR/site.toml:3: ") && unknown.contains("max_concurrent_streams"),
        "{unknown}"
    );
}

#[cfg(not(feature = "http2"))]
#[test]
fn a_build_without_http2_refuses_to_turn_it_on() {
    assert!(!load("").unwrap().http2.enable);
    assert!(load_err("[http2]\ncleartext = true\n")
        .starts_with("DIR/site.toml:3: http2.cleartext: this brisk was built without HTTP/2"));
    assert!(load("[http2]\nenable = false\ncleartext = false\n").is_ok());
}

#[test]
#[cfg(feature = "ops")] // the report
fn check_config_says_where_http2_is_spoken() {
    use super::TempDir;
    use crate::config::cli::run;
    use crate::config::Command;
    let dir = TempDir::new();
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n[http2]\nenable = false\ncleartext = false\n",
    );
    let argv = ["--check-config", "--config", file.to_str().unwrap()];
    let report = |argv: &[&str]| match run(argv.iter().map(std::ffi::OsString::from), "") {
        Ok(Command::CheckOk(s)) => s,
        other => panic!("{other:?}"),
    };
    assert!(report(&argv).contains("\nhttp2: off\n"));
    #[cfg(feature = "http2")]
    {
        let file = dir.write("site.toml", "root = \"public\"\n[http2]\nmax_resets = 50\n");
        let s = report(&["--check-config", "--config", file.to_str().unwrap()]);
        assert!(
            s.contains("\nhttp2: on TLS listeners (ALPN h2) and as h2c with prior knowledge on plain ones\nhttp2 limits: max_resets 50 (default 200)\n"),
            "{s}"
        );
    }
}
