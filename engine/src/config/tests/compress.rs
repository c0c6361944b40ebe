//! `[compress]`: its defaults, every key, and its errors (file, line, key).

use super::{load, load_err};
use crate::config::Coding;

#[test]
fn off_by_default() {
    let d = load("").unwrap().site.compress;
    assert!(!d.enable);
    assert_eq!(d.encodings, [Coding::Br, Coding::Zstd, Coding::Gzip]);
    assert_eq!((d.min_size, d.threads), (512, 2));
    assert!(d.types.iter().any(|t| t == "text/*"));
}

#[cfg(feature = "compress")]
#[test]
fn every_key_loads() {
    let c = load(
        r#"
[compress]
enable = true
encodings = ["gzip", "zstd"]
types = ["text/html", "Application/JSON", "image/*"]
min_size = "1KiB"
max_size = "2MiB"
levels = { gzip = 1, br = 2, zstd = 4 }
static_levels = { gzip = 8 }
cache_size = "16MiB"
threads = 3
"#,
    )
    .unwrap()
    .site
    .compress;
    assert!(c.enable);
    assert_eq!(c.encodings, [Coding::Gzip, Coding::Zstd]);
    assert_eq!(c.types, ["text/html", "application/json", "image/*"]);
    assert_eq!((c.min_size, c.max_size), (1024, 2 << 20));
    assert_eq!(c.levels, [2, 4, 1]);
    assert_eq!(c.static_levels, [11, 19, 8]);
    assert_eq!((c.cache_size, c.threads), (16 << 20, 3));
}

#[test]
fn errors_name_the_file_line_and_key() {
    assert_eq!(
        load_err("[compress]\nencodings = [\"gzip\", \"deflate\"]\n"),
        "DIR/site.toml:3: compress.encodings: expected \"br\", \"zstd\" or \"gzip\"; got \"deflate\""
    );
    assert!(load_err("[compress]\nencodings = [\"br\", \"br\"]\n")
        .contains("compress.encodings: br is listed twice"));
    assert_eq!(
        load_err("[compress]\nencodings = []\n"),
        "DIR/site.toml:3: compress.encodings: names no coding: expected one or more of \"br\", \"zstd\" and \"gzip\" (enable = false turns compression off)"
    );
    assert!(load_err("[compress]\ntypes = [\"html\"]\n")
        .starts_with("DIR/site.toml:3: compress.types: expected a content type"));
    assert!(load_err("[compress]\ntypes = [\"*/*\"]\n").contains("compress.types: expected"));
    assert_eq!(
        load_err("[compress]\n\nlevels = { gzip = 10 }\n"),
        "DIR/site.toml:4: compress.levels.gzip: expected an integer from 1 to 9; got 10"
    );
    assert!(load_err("[compress]\nstatic_levels = { brotli = 5 }\n")
        .contains("unknown key \"compress.static_levels.brotli\""));
    assert!(load_err("[compress]\nthreads = 0\n").contains("compress.threads: expected"));
    let unknown = load_err("[compress]\nmin_length = 5\n");
    assert!(
        unknown.starts_with("DIR/site.toml:3: ") && unknown.contains("min_size"),
        "{unknown}"
    );
}

#[cfg(not(feature = "compress"))]
#[test]
fn a_build_without_compress_refuses_to_turn_it_on() {
    assert!(load_err("[compress]\nenable = true\n")
        .starts_with("DIR/site.toml:3: compress.enable: this brisk was built without compression"));
    assert!(load("[compress]\nenable = false\n").is_ok());
}

#[cfg(feature = "compress")]
#[test]
fn check_config_says_what_is_compressed() {
    use super::TempDir;
    use crate::config::cli::run;
    use crate::config::Command;
    let dir = TempDir::new();
    let file = dir.write(
        "site.toml",
        "root = \"public\"\n[compress]\nenable = true\nencodings = [\"gzip\"]\ntypes = [\"text/*\"]\n",
    );
    let argv = ["--check-config", "--config", file.to_str().unwrap()];
    let s = match run(argv.iter().map(std::ffi::OsString::from), "") {
        Ok(Command::CheckOk(s)) => s,
        other => panic!("{other:?}"),
    };
    assert!(
        s.contains("\ncompress: gzip for text/*; bodies of 512 bytes and more (static files up to 8388608); streamed levels gzip 5; static levels gzip 9; cache 67108864 bytes of memory, 2 thread(s)\n"),
        "{s}"
    );
}

#[cfg(feature = "compress")]
#[test]
fn a_site_inherits_compress_and_may_change_it_but_not_the_cache() {
    let c = load(
        "root = \"public\"\n[compress]\nenable = true\nmin_size = 100\n\
         [[site]]\nhosts = [\"a.test\"]\nroot = \"public\"\n\
         [site.compress]\nencodings = [\"gzip\"]\n",
    )
    .unwrap();
    let (top, a) = (&c.site.compress, &c.sites[0].compress);
    assert!(top.enable && a.enable);
    assert_eq!((top.min_size, a.min_size), (100, 100));
    assert_eq!(a.encodings, [Coding::Gzip]);
    assert_eq!(top.encodings.len(), 3);
    let e = load_err(
        "root = \"public\"\n[[site]]\nhosts = [\"a.test\"]\nroot = \"public\"\n\
         [site.compress]\nthreads = 4\n",
    );
    assert_eq!(
        e,
        "DIR/site.toml:6: site[1].compress.threads: is server-wide (every site shares it): \
         set it at the top level of the file, outside every [[site]]"
    );
}
