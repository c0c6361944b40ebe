//! brisk: a small, fast, secure web server.
//!
//! The crate is layered (README: Architecture); dependencies point
//! downwards only (the unit test `layers` holds the crate to it):
//!
//! - [`process`]: what `brisk` does around the engine: signals, daemon,
//!   pid file, chroot, user switch, sandbox, CGI launcher, reload.
//! - [`server`]: the engine (event loops, listeners, connections, timers,
//!   draining) and the embedding API ([`server::Server`]).
//! - [`handlers`]: decide *what* to send (static files, directory index,
//!   CGI, Lua servlets, and embedded handlers mounted at paths:
//!   [`handlers::app`]).
//! - [`config`]: schema, compiled-in defaults, validation with clear errors.
//! - [`access`]: basic authentication (RFC 7617), failure limits, address
//!   rules and rate limits.
//! - `tls` (cargo feature `tls`): HTTPS with rustls: certificates, SNI,
//!   session resumption, one connection's record layer, sans-IO.
//! - [`log`]: access log and error log.
//! - `h2` (cargo feature `http2`): HTTP/2, sans-IO: frames, streams,
//!   flow control, HPACK, and the defences against its floods.
//! - `h3` (cargo feature `http3`): HTTP/3's frames and QPACK, sans-IO.
//! - [`http`]: sans-IO protocol code: bytes in, values out.
//! - [`sys`]: raw syscalls and the operating system's primitives,
//!   behind safe functions.
//!
//! `unsafe` is denied everywhere but in [`sys`] and in the servlets' calls
//! into Lua's C API (`handlers::servlets::ffi`), where each block says
//! why it is sound in a `// SAFETY:` line.

#![deny(unsafe_code)]
#![warn(missing_docs)]
// (Tests may resolve paths with realpath: clippy.toml.)
#![cfg_attr(test, allow(clippy::disallowed_methods))]

// The system layer takes file sizes, offsets and times as 64-bit (glibc's
// 32-bit ABIs default to 32-bit `off_t`: a file past 2 GiB would fail),
// and the seccomp filter knows x86_64's and aarch64's calls: a 32-bit
// target stops here, saying so, rather than at the types it would trip on.
#[cfg(not(target_pointer_width = "64"))]
compile_error!(
    "brisk builds for 64-bit targets only (x86_64, aarch64; \
     docs/src/install.md, \"Other architectures\"): 32-bit ones (armv7, mips) are not supported yet"
);

pub mod access;
#[cfg(feature = "acme")]
pub mod acme;
pub(crate) mod ascii;
pub(crate) mod channel;
pub mod config;
#[cfg(feature = "http2")]
pub mod h2;
#[cfg(feature = "http3")]
pub mod h3;
pub mod handlers;
pub(crate) mod hash;
pub mod http;
pub mod log;
pub(crate) mod offload;
pub mod process;
pub mod server;
pub(crate) mod sort;
#[cfg(any(feature = "upstreams", feature = "http2"))]
pub(crate) mod spare;
#[allow(unsafe_code)]
pub mod sys;
#[cfg(feature = "tls")]
pub mod tls;

/// The embedding API's entry point, as `brisk::Server` (see
/// [`server::Server`] and docs/src/embedding.md).
pub use server::Server;

/// The top directory of the source tree (where README.md is): the
/// engine package's (engine/) parent. Where tests find their fixtures
/// (`engine/src/tls/testdata`, `brisk.example.toml`).
#[doc(hidden)]
pub fn source_dir() -> &'static std::path::Path {
    let engine = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    engine.parent().unwrap_or(engine)
}

#[cfg(test)]
mod test_skip;

/// The bytes an idle connection costs in its worker's slab (with or
/// without the default features), once the connection became an enum
/// over its protocols (issue #26; 288 and 280 before it): not more,
/// whatever moves.
const _: () = assert!(size_of::<server::conn::Conn>() <= 272);

#[cfg(test)]
mod layers;
