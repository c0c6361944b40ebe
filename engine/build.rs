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

/// Sets `brisk_lua_user` when the Lua library that mlua-sys built holds
/// brisk's C parts (`brisk_json_table`): they are compiled into it when
/// `.cargo/config.toml`'s `[env]` CFLAGS name src/sys/lua_c/brisk_lua_user.h.
/// Built as another project's dependency, without that `[env]`, Lua is
/// stock and brisk uses its C API walk instead. The library itself is
/// looked at, not CFLAGS: cargo does not rebuild Lua when the header or
/// the `[env]` changes, and a Lua built before would fail the link.
fn lua_user_cfg() {
    println!("cargo:rustc-check-cfg=cfg(brisk_lua_user)");
    println!("cargo:rerun-if-env-changed=DEP_LUA_LIB");
    let Some(dir) = std::env::var_os("DEP_LUA_LIB") else {
        return; // (servlets off: no Lua)
    };
    let lib = PathBuf::from(dir).join("liblua5.4.a");
    println!("cargo:rerun-if-changed={}", lib.display());
    let holds = std::fs::read(&lib)
        .map(|bytes| bytes.windows(16).any(|w| w == b"brisk_json_table"))
        .unwrap_or(false);
    if holds {
        println!("cargo:rustc-cfg=brisk_lua_user");
    } else if std::env::var("CFLAGS").is_ok_and(|f| f.contains("brisk_lua_user.h")) {
        println!(
            "cargo:warning=the vendored Lua ({}) was built before src/sys/lua_c/ \
             changed: run `cargo clean -p mlua-sys` (and `--release`) to rebuild it",
            lib.display()
        );
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
