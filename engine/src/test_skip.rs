//! Saying that a test skips: for the library's unit tests and the
//! integration tests alike (their harness, `tests/common`, includes this
//! file), so that `scripts/test` counts both.

use std::io::Write as _;
use std::path::PathBuf;

/// Where skipped tests are listed for `scripts/test` to count at the end
/// of the run: `tmp/skipped-tests.txt` in cargo's target directory.
pub fn skipped_list() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    target.join("tmp").join("skipped-tests.txt")
}

/// Says that the calling test (or a part of it) is skipped and why, on
/// stderr (`skipped: …`) and in [`skipped_list`], so that a skip is never
/// a silent pass: `scripts/test` prints how many tests skipped and why.
/// For conditions only known when the test runs (not root, no Landlock,
/// a tool missing); a test that can never run here is `#[ignore = "…"]`.
pub fn skip(why: &str) {
    // The test harness names each test's thread after the test.
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let line = format!("{}::{test}: {why}\n", env!("CARGO_CRATE_NAME"));
    eprint!("skipped: {line}");
    let list = skipped_list();
    let recorded = list
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&list)
        })
        // One write of one line: appends from parallel tests never mix.
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = recorded {
        eprintln!("(cannot record the skip in {}: {e})", list.display());
    }
}
