//! Bakes a configuration into the binary: when `BRISK_DEFAULT_CONFIG`
//! names a TOML file at build time, that file becomes the configuration
//! used without `--config` (for embedded builds that ship no file).
//! Without it, an empty document is baked in and the compiled-in defaults
//! apply. The file is only copied here; it is validated by the same loader
//! as any other at start-up (`brisk --check-config` reports on it).
//! A relative path is relative to the top directory of the source tree
//! (where README.md is), wherever cargo runs this script from.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=BRISK_DEFAULT_CONFIG");
    let out_dir = match std::env::var_os("OUT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => fail("OUT_DIR is not set; build with cargo"),
    };
    lua_walk_cfg(&out_dir);
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

/// Sets `brisk_lj_walk` when the LuaJIT library that mlua-sys built holds
/// the functions of engine/src/handlers/servlets/ffi/c/brisk_lj.c
/// ([`BRISK_LJ`]: brisk.json.encode's walk, a request's steps): LuaJIT's
/// Makefile compiles it in when `.cargo/config.toml`'s `[env]` names it
/// (LJCORE_O). Built as another project's dependency, without
/// that `[env]`, LuaJIT is stock and brisk uses its C API walk instead.
///
/// The library itself is looked at, not the environment: cargo does not
/// rebuild LuaJIT when brisk_lj.c or the `[env]` changes, and a library
/// built before would fail the link. mlua-sys tells dependents nothing of
/// where LuaJIT lies (luajit-src prints only `rustc-link-search`, so there
/// is no DEP_LUA_LIB as with Lua 5.4): it is mlua-sys's OUT_DIR/lib, a
/// sibling of this script's OUT_DIR (cargo runs this script after
/// mlua-sys's, a `links` dependency). The newest such library is taken.
fn lua_walk_cfg(out_dir: &Path) {
    println!("cargo:rustc-check-cfg=cfg(brisk_lj_walk)");
    println!("cargo:rerun-if-env-changed=LJCORE_O");
    if std::env::var_os("CARGO_FEATURE_SERVLETS").is_none() {
        return; // (no LuaJIT)
    }
    let source = top_dir().join("engine/src/handlers/servlets/ffi/c/brisk_lj.c");
    println!("cargo:rerun-if-changed={}", source.display());
    let Some(lib) = luajit_library(out_dir) else {
        return;
    };
    println!("cargo:rerun-if-changed={}", lib.display());
    let bytes = std::fs::read(&lib).unwrap_or_default();
    // Every function of brisk_lj.c that brisk calls (a library built
    // from an older brisk_lj.c lacks the newer ones: the C API then).
    let holds = BRISK_LJ
        .iter()
        .all(|name| bytes.windows(name.len()).any(|w| w == name.as_bytes()));
    let wanted = std::env::var("LJCORE_O").is_ok_and(|o| o.contains("brisk_lj.o"));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let stale = holds && modified(&source) > modified(&lib);
    if holds {
        println!("cargo:rustc-cfg=brisk_lj_walk");
    }
    if (wanted && !holds) || stale {
        let build = lib.ancestors().nth(3).unwrap_or(&lib).display().to_string();
        let fingerprint = build.replace("/build/mlua-sys-", "/.fingerprint/mlua-sys-");
        println!(
            "cargo:warning=the vendored LuaJIT ({}) was built before \
             engine/src/handlers/servlets/ffi/c/ or .cargo/config.toml changed: delete {build} and {fingerprint} \
             (`cargo clean -p mlua-sys` does not) to rebuild it",
            lib.display()
        );
    }
}

/// The functions of brisk_lj.c that the engine calls under `brisk_lj_walk`.
const BRISK_LJ: [&str; 4] = [
    "brisk_json_table",
    "brisk_prepare",
    "brisk_new_request",
    "brisk_write_args",
];

/// The newest `mlua-sys-*/out/lib/libluajit*.a` beside this script's
/// `OUT_DIR` (`target/<profile>/build/brisk-engine-*/out`).
fn luajit_library(out_dir: &Path) -> Option<PathBuf> {
    let build = out_dir.parent()?.parent()?;
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for dir in std::fs::read_dir(build).ok()?.flatten() {
        if !dir.file_name().to_string_lossy().starts_with("mlua-sys-") {
            continue;
        }
        let Ok(libs) = std::fs::read_dir(dir.path().join("out/lib")) else {
            continue;
        };
        for lib in libs.flatten() {
            let name = lib.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("libluajit") && name.ends_with(".a")) {
                continue;
            }
            let Ok(when) = lib.metadata().and_then(|m| m.modified()) else {
                continue;
            };
            if newest.as_ref().is_none_or(|(t, _)| when > *t) {
                newest = Some((when, lib.path()));
            }
        }
    }
    newest.map(|(_, p)| p)
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
