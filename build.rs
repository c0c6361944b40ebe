//! Link options of the `brisk` command (see `fold_identical_code`). The
//! engine's build script (engine/build.rs) bakes the default
//! configuration in.

fn main() {
    fold_identical_code();
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
/// a bitmap (-36 KiB without features, most of 75 KiB with TLS; see bench/RESULTS.md,
/// "Sizes per feature set"). The loader applies it at start, before
/// `main`; nothing that runs later changes. It needs glibc 2.36 or later
/// (Debian 12) at run time, where the older loader would refuse the
/// binary (a missing GLIBC_ABI_DT_RELR version); the static build (musl)
/// is the one for older systems.
///
/// And ring's P-256 table (`ecp_nistz256_precomputed`, 148 KiB, aligned
/// to 4 KiB) is put first in `.rodata` (lld's `--symbol-ordering-file`):
/// `.rodata` starts 4 KiB-aligned anyway, so the padding that went before
/// the table wherever it fell (up to 4 KiB; 4,032 bytes with `tls` on
/// 2026-11-29) is gone. Only where it is (a missing symbol is no error).
fn fold_identical_code() {
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = !var("RUSTC_LINKER").is_empty() || rustflags.contains("link");
    if var("TARGET") == "x86_64-unknown-linux-gnu" && var("PROFILE") == "release" && !own_linker {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        let order = std::path::Path::new(&var("OUT_DIR")).join("order");
        std::fs::write(&order, "ecp_nistz256_precomputed\n").unwrap();
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
