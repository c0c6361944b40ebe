//! Bakes a configuration into the binary: when `BRISK_DEFAULT_CONFIG`
//! names a TOML file at build time, that file becomes the configuration
//! used without `--config` (for embedded builds that ship no file).
//! Without it, an empty document is baked in and the compiled-in defaults
//! apply. The file is only copied here; it is validated by the same loader
//! as any other at start-up (`brisk --check-config` reports on it).
//! A relative path is relative to the top directory of the source tree
//! (where README.md is), wherever cargo runs this script from.

use std::path::PathBuf;

fn main() {
    lua_user_cfg();
    println!("cargo:rerun-if-env-changed=BRISK_DEFAULT_CONFIG");
    let out_dir = match std::env::var_os("OUT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => fail("OUT_DIR is not set; build with cargo"),
    };
    let dest = out_dir.join("default.toml");
    let text = match std::env::var_os("BRISK_DEFAULT_CONFIG") {
        Some(src) if !src.is_empty() => {
            let src = top_dir().join(src);
            println!("cargo:rerun-if-changed={}", src.display());
            match std::fs::read_to_string(&src) {
                Ok(text) => text,
                Err(e) => fail(&format!(
                    "BRISK_DEFAULT_CONFIG={}: cannot read it as UTF-8 text: {e} \
                     (a relative path is relative to the source tree's top directory)",
                    src.display()
                )),
            }
        }
        _ => String::new(),
    };
    if let Err(e) = std::fs::write(&dest, text) {
        fail(&format!("cannot write {}: {e}", dest.display()));
    }
}

/// Sets `brisk_lua_user` when the vendored Lua is built with brisk's
/// header (`.cargo/config.toml`'s `[env]` CFLAGS name it): then the Lua
/// library holds the C parts that `src/sys/lua_raw.rs` calls. Built as
/// another project's dependency, without that `[env]`, Lua is stock and
/// brisk uses its C API walk instead.
fn lua_user_cfg() {
    println!("cargo:rustc-check-cfg=cfg(brisk_lua_user)");
    println!("cargo:rerun-if-env-changed=CFLAGS");
    let cflags = std::env::var("CFLAGS").unwrap_or_default();
    if cflags.contains("brisk_lua_user.h") {
        println!("cargo:rustc-cfg=brisk_lua_user");
    }
}

/// The source tree's top directory: this package's parent (engine/..).
fn top_dir() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    PathBuf::from(manifest).join("..")
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}
