//! Config tests: every error path of the loader, the flags and their
//! precedence, and the built-in document. Files live in fresh temporary
//! directories; the process cwd is never changed (tests run in parallel).

#[cfg(feature = "acme")]
mod acme;
mod admission;
mod auth;
mod cgi;
mod cli;
mod compress;
mod features;
mod http2;
mod http3;
mod load;
mod own;
#[cfg(feature = "ops")]
mod proxy;
mod servlets;
#[cfg(feature = "sites")]
mod sites;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "upstreams")]
mod upstream;
#[cfg(feature = "webdav")]
mod webdav;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{cli::run, Command, Config, ConfigError};

/// A fresh directory containing `public/` (a valid root) and nothing else.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("brisk-config-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("public")).unwrap();
        TempDir(dir)
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `name` (relative to the directory) and returns its path.
    pub(super) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Runs the command line with an empty built-in document.
pub(super) fn args(a: &[&str]) -> Result<Command, ConfigError> {
    run(os(a), "")
}

/// Runs the command line, expecting a configuration to serve.
pub(super) fn config(a: &[&str]) -> Config {
    match args(a) {
        Ok(Command::Run(c)) => c,
        Ok(other) => panic!("expected Run, got {other:?}"),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// Writes `site.toml` (with `root = "public"` prepended unless the text
/// sets a root) and loads it.
pub(super) fn load(text: &str) -> Result<Config, ConfigError> {
    let dir = TempDir::new();
    let file = dir.write("site.toml", &with_root(text));
    match args(&["--config", file.to_str().unwrap()]) {
        Ok(Command::Run(c)) => Ok(c),
        Ok(other) => panic!("expected Run, got {other:?}"),
        Err(e) => Err(e),
    }
}

fn with_root(text: &str) -> String {
    if text.lines().any(|l| l.trim_start().starts_with("root")) {
        text.to_string()
    } else {
        format!("root = \"public\"\n{text}")
    }
}

/// Loads `text` and returns the error message with the temporary
/// directory replaced by `DIR`, so expectations can be written in full.
pub(super) fn load_err(text: &str) -> String {
    let dir = TempDir::new();
    let file = dir.write("site.toml", &with_root(text));
    match args(&["--config", file.to_str().unwrap()]) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.message.replace(dir.path().to_str().unwrap(), "DIR"),
    }
}

#[test]
fn built_in_empty_document_gives_the_defaults() {
    let c = match run(os(&[]), "") {
        Ok(Command::Run(c)) => c,
        other => panic!("{other:?}"),
    };
    let d = Config::default();
    assert_eq!(c.listen, d.listen);
    assert_eq!(
        c.site.root,
        std::env::current_dir().unwrap().canonicalize().unwrap()
    );
    assert!(c.workers >= 1);
    assert_eq!(c.server_header, "brisk");
    assert_eq!(c.limits.max_body, 1 << 20);
    assert_eq!(c.log.access, super::LogTarget::Stdout);
    assert_eq!(c.log.error, super::LogTarget::Stderr);
}

#[test]
fn built_in_document_is_loaded_relative_to_cwd() {
    let built_in = "root = \"../src\"\nlisten = \"9999\"\nworkers = 3\n";
    let c = match run(os(&[]), built_in) {
        Ok(Command::Run(c)) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        c.site.root,
        std::env::current_dir()
            .unwrap()
            .join("../src")
            .canonicalize()
            .unwrap()
    );
    assert_eq!(c.listen, vec!["0.0.0.0:9999".parse().unwrap()]);
    assert_eq!(c.workers, 3);
}

#[test]
fn built_in_errors_are_named_built_in() {
    let e = run(os(&[]), "\nworkers = -1\n").unwrap_err();
    assert_eq!(
        e.message,
        "<built-in>:2: workers: expected an integer from 0 to 1024; got -1"
    );
}

#[test]
fn config_file_replaces_the_built_in_document() {
    let dir = TempDir::new();
    let file = dir.write("site.toml", "root = \"public\"\n");
    let c = match run(
        os(&["--config", file.to_str().unwrap()]),
        "workers = 7\nlisten = \"1234\"",
    ) {
        Ok(Command::Run(c)) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(c.listen, Config::default().listen);
}

#[test]
fn the_shipped_example_is_valid_and_changes_nothing() {
    // Loaded from the repository root, as a user would run it there:
    // copying it must give exactly the compiled-in defaults (its rules are
    // all commented out), whatever directory it is used from.
    let repo = crate::source_dir();
    let load = |argv: &[&str]| match super::cli::run_in(os(argv), "", repo, Some(1), None) {
        Ok(Command::Run(c)) => c,
        other => panic!("{other:?}"),
    };
    // (An absolute path: the tests run in engine/, cargo's directory of
    // the package.)
    let example_file = repo.join("brisk.example.toml");
    let example_arg = example_file.to_str().expect("a UTF-8 path");
    let mut example = load(&["--config", example_arg]);
    assert_eq!(example.config_file.as_deref(), Some(example_file.as_path()));
    example.config_file = None;
    // (Where its defaults were written is all that differs.)
    example.log_origins = [None, None];
    let defaults = load(&[]);
    assert_eq!(format!("{example:#?}"), format!("{defaults:#?}"));
    assert!(example.site.headers.is_empty() && example.site.throttle.is_empty());
    assert!(
        example.site.cgi.is_empty() && example.site.auth.is_empty() && example.site.mime.is_empty()
    );
    match super::cli::run_in(
        os(&["--config", example_arg, "--check-config"]),
        "",
        repo,
        Some(1),
        None,
    ) {
        #[cfg(feature = "ops")] // the report
        Ok(Command::CheckOk(s)) => {
            for none in [
                "headers: none\n",
                "throttles: none\n",
                "cgi: none\n",
                "auth: none\n",
            ] {
                assert!(s.contains(none), "{s}");
            }
        }
        #[cfg(not(feature = "ops"))]
        Ok(Command::CheckOk(_)) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn from_args_uses_the_compiled_in_document() {
    // Whatever BRISK_DEFAULT_CONFIG baked in, it is named `<built-in>`.
    match super::from_args(os(&["--check-config"])) {
        Ok(Command::CheckOk(summary)) => {
            assert!(summary.starts_with("configuration OK (<built-in>)\n"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn reload_reads_the_file_again_with_the_same_flags() {
    let dir = TempDir::new();
    let file = dir.write("site.toml", "root = \"public\"\nserver_header = \"one\"\n");
    let argv = os(&[
        "--config",
        file.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let mut started = match run(argv.clone(), "") {
        Ok(Command::Run(c)) => c,
        other => panic!("expected Run, got {other:?}"),
    };
    assert_eq!(started.config_file.as_deref(), Some(file.as_path()));
    // What `workers = 0` came to at start is kept, whatever the machine
    // says now.
    started.workers = 7;
    let reload = super::Reload::new(argv, &started).unwrap();

    dir.write(
        "site.toml",
        "root = \"public\"\nserver_header = \"two\"\nlisten = [\"127.0.0.1:1\"]\n",
    );
    let c = reload.load().unwrap();
    assert_eq!(c.server_header, "two");
    assert_eq!(c.workers, 7);
    assert_eq!(
        c.listen,
        ["127.0.0.1:0".parse().unwrap()],
        "the flag still wins"
    );
    assert!(started.restart_only_changes(&c).is_empty());

    dir.write(
        "site.toml",
        "root = \"public\"\nworkers = 3\nsandbox = false\n[log]\nerror = \"err.log\"\n",
    );
    let c = reload.load().unwrap();
    assert_eq!(
        started.restart_only_changes(&c),
        ["workers", "sandbox", "log.error"]
    );

    dir.write("site.toml", "root = \"public\"\nworkers = \"many\"\n");
    let e = reload.load().unwrap_err().message;
    assert!(e.contains("site.toml:2"), "{e}");
}

#[cfg(not(feature = "tls"))]
#[test]
fn a_build_without_tls_refuses_the_tls_section() {
    assert_eq!(
        load_err("[tls]\nlisten = [\"127.0.0.1:8443\"]\n"),
        "DIR/site.toml:2: tls: this brisk was built without TLS (cargo feature \"tls\"); build it with the default features to serve HTTPS"
    );
}
