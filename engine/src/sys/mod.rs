//! Every raw syscall, and the operating system's primitives that need
//! `unsafe`, behind safe functions.
//!
//! Nothing outside this module may use `unsafe` but the servlets' calls
//! into Lua's C API (`handlers::servlets::ffi`); each block carries a
//! `// SAFETY:` line saying why it is sound.

#[cfg(feature = "upstreams")]
pub mod boxes;
pub mod cached;
pub mod dir;
pub mod fs;
#[cfg(feature = "ops")]
pub mod init;
pub mod interleave;
pub mod launcher;
#[cfg(feature = "webdav")]
pub mod listing;
pub mod mapped;
pub mod memory;
pub mod net;
pub mod privileged;
pub mod privileges;
pub mod process;
pub mod sandbox;
pub mod service;
pub mod signal;
pub mod spawn;
#[cfg(any(feature = "upstreams", feature = "webdav"))]
pub mod splice;
#[cfg(not(any(feature = "upstreams", feature = "webdav")))]
#[path = "splice_none.rs"]
pub mod splice;
pub mod syscalls;
pub mod systemd;
pub mod upgrade;

use std::io;

/// Turns a `-1` syscall return into the current `errno` as an `io::Error`.
fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Like [`cvt`] for `ssize_t` returns.
fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}
