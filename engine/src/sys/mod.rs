//! Every `unsafe` block and raw syscall, behind safe functions.
//!
//! Nothing outside this module may use `unsafe`; each block here carries a
//! `// SAFETY:` line saying why it is sound.

pub mod fs;
pub mod interleave;
pub mod launcher;
#[cfg(feature = "servlets")]
pub mod lua_cpu;
#[cfg(feature = "servlets")]
pub mod lua_heap;
#[cfg(feature = "servlets")]
pub mod lua_raw;
#[cfg(feature = "servlets")]
pub mod lua_req;
#[cfg(feature = "servlets")]
pub mod lua_res;
#[cfg(feature = "servlets")]
pub mod lua_str;
pub mod memory;
pub mod net;
pub mod privileged;
pub mod privileges;
pub mod process;
pub mod sandbox;
pub mod service;
pub mod signal;
pub mod spawn;
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
