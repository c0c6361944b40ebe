//! Bakes a configuration into the binary: when `BRISK_DEFAULT_CONFIG`
//! names a TOML file at build time, that file becomes the configuration
//! used without `--config` (for embedded builds that ship no file).
//! Without it, an empty document is baked in and the compiled-in defaults
//! apply. The file is only copied here; it is validated by the same loader
//! as any other at start-up (`brisk --check-config` reports on it).
//! It also asks the linker to fold identical functions in release builds
//! (see `fold_identical_code`).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=BRISK_DEFAULT_CONFIG");
    fold_identical_code();
    let out_dir = match std::env::var_os("OUT_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => fail("OUT_DIR is not set; build with cargo"),
    };
    let dest = out_dir.join("default.toml");
    let text = match std::env::var_os("BRISK_DEFAULT_CONFIG") {
        Some(src) if !src.is_empty() => {
            let src = PathBuf::from(src);
            println!("cargo:rerun-if-changed={}", src.display());
            match std::fs::read_to_string(&src) {
                Ok(text) => text,
                Err(e) => fail(&format!(
                    "BRISK_DEFAULT_CONFIG={}: cannot read it as UTF-8 text: {e} \
                     (a relative path is relative to the crate directory)",
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

/// Release builds of the `brisk` command for x86_64 Linux with glibc are
/// linked with identical code folding (lld's `--icf=all`): functions whose
/// machine code is the same (monomorphised copies of one generic, drop glue
/// of look-alike types) are kept once. It changes no instruction that runs,
/// only where functions live: -12 KiB without features, -19 KiB with TLS,
/// -24 KiB in the default build (stripped, measured on 2026-11-23). Rust
/// gives no guarantee that distinct functions have distinct addresses, and
/// brisk compares none. Only there, because rustc links that target with
/// its own lld by default; the static (musl) build links with musl-gcc's
/// ld, which has no such option, and a build that chose its own linker
/// (a `linker` setting, `-C linker`, `-C link-arg`, `-C linker-features`)
/// is left as it asked.
///
/// The same builds pack their relative relocations (`-z
/// pack-relative-relocs`, DT_RELR): the position-independent binary's
/// table of addresses to adjust at load shrinks from 24 bytes an entry to
/// a bitmap (-36 KiB without features, most of 75 KiB with TLS; see README,
/// "Sizes per feature set"). The loader applies it at start, before
/// `main`; nothing that runs later changes. It needs glibc 2.36 or later
/// (Debian 12) at run time, where the older loader would refuse the
/// binary (a missing GLIBC_ABI_DT_RELR version); the static build (musl)
/// is the one for older systems.
fn fold_identical_code() {
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = !var("RUSTC_LINKER").is_empty() || rustflags.contains("link");
    if var("TARGET") == "x86_64-unknown-linux-gnu" && var("PROFILE") == "release" && !own_linker {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}
