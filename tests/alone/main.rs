//! The tests that count the heap (calls, live bytes, the allocator's own
//! statistics): the server runs in this process, embedded through the
//! library, under one counting allocator (`counting`). Apart from the
//! integration tests (`tests/it`), whose servers would allocate beside
//! them, and one at a time (`counting::alone`).

// (Tests may resolve paths with realpath: clippy.toml.)
#![allow(clippy::disallowed_methods)]

#[path = "../common/mod.rs"]
mod common;
mod counting;
#[cfg(feature = "upstreams")]
mod embedded;
#[cfg(feature = "upstreams")]
mod fastcgi_alloc;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod give_back;
#[cfg(feature = "http2")]
mod h2_idle_memory;
mod log_alloc;
#[cfg(feature = "upstreams")]
mod proxy_alloc;
#[cfg(feature = "servlets")]
mod servlet_alloc;
#[cfg(feature = "tls")]
mod tls_memory;
#[cfg(feature = "upstreams")]
mod tunnel_memory;
mod zero_alloc;
