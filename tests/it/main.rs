//! The integration tests: the real `brisk` binary (or the engine embedded
//! through the library) on ephemeral ports of 127.0.0.1, driven by raw
//! clients and real tools. One binary, so the harness (`tests/common`)
//! compiles once; one module per subject. The tests that count the heap
//! are in `tests/alone`, a process of their own.

// (Tests may resolve paths with realpath: clippy.toml.)
#![allow(clippy::disallowed_methods)]

#[path = "../common/mod.rs"]
mod common;

mod access_log;
#[cfg(feature = "acme")]
mod acme;
#[cfg(feature = "acme")]
mod acme_ari;
#[cfg(feature = "acme")]
mod acme_eab;
#[cfg(feature = "acme")]
mod acme_edges;
#[cfg(all(feature = "acme", feature = "ops"))]
mod acme_fleet;
#[cfg(feature = "acme")]
mod acme_rsa;
mod admission;
mod auth;
mod body_limits;
mod cgi;
mod cli;
mod cold_disk;
#[cfg(feature = "compress")]
mod compress;
mod confinement;
#[cfg(feature = "sites")]
mod cors;
mod debug_log;
mod deploy;
mod docs;
mod embedded;
mod embedded_streams;
#[cfg(feature = "sites")]
mod error_pages;
#[cfg(feature = "upstreams")]
mod fastcgi;
#[cfg(feature = "http2")]
mod h2;
#[cfg(feature = "http2")]
mod h2_reload;
#[cfg(feature = "http3")]
mod h3;
mod http_vectors;
#[cfg(feature = "tls")]
mod https;
#[cfg(feature = "tls")]
mod https_clients;
mod idle_close;
mod interop;
mod lifecycle;
mod limits;
mod listings;
mod memory;
mod named_handlers;
#[cfg(feature = "ops")]
mod operations;
mod own_files;
mod pgo;
#[cfg(all(feature = "ops", target_os = "linux"))]
mod pid1;
mod precompressed;
mod privileged;
mod protocol;
#[cfg(feature = "ops")]
mod proxy;
#[cfg(feature = "upstreams")]
mod proxy_balance;
#[cfg(feature = "upstreams")]
mod proxy_buffering;
#[cfg(feature = "upstreams")]
mod proxy_continue;
#[cfg(feature = "upstreams")]
mod proxy_hardening;
#[cfg(all(feature = "upstreams", feature = "http2"))]
mod proxy_log;
#[cfg(feature = "upstreams")]
mod proxy_more;
#[cfg(feature = "upstreams")]
mod proxy_smuggling;
#[cfg(feature = "upstreams")]
mod proxy_splice;
#[cfg(feature = "upstreams")]
mod proxy_streaming;
#[cfg(feature = "upstreams")]
mod proxy_timing;
#[cfg(feature = "upstreams")]
mod proxy_trailers;
mod ranges_conditionals;
#[cfg(feature = "sites")]
mod redirects;
mod reload;
#[cfg(feature = "upstreams")]
mod reverse_proxy;
#[cfg(feature = "ops")]
mod scale_out;
mod security;
mod sendfile;
#[cfg(feature = "servlets")]
mod servlets;
mod smuggling;
mod sniff;
#[cfg(feature = "sites")]
mod spa;
mod static_files;
mod survival;
mod systemd;
mod throttle;
#[cfg(all(feature = "tls", feature = "ops"))]
mod tls_fleet;
mod turns;
#[cfg(feature = "ops")]
mod upgrade;
#[cfg(feature = "sites")]
mod vhosts;
#[cfg(feature = "webdav")]
mod webdav;
#[cfg(feature = "webdav")]
mod webdav_cache;
#[cfg(feature = "webdav")]
mod webdav_clients;
#[cfg(feature = "webdav")]
mod webdav_fuse;
#[cfg(feature = "webdav")]
mod webdav_locks;
#[cfg(feature = "webdav")]
mod webdav_props;
#[cfg(feature = "webdav")]
mod webdav_replay;
#[cfg(feature = "webdav")]
mod webdav_uploads;
#[cfg(feature = "upstreams")]
mod websocket_proxy;
