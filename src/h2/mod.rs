//! HTTP/2 (RFC 9113), sans-IO: frames, HPACK, streams, flow control and
//! the defences against the protocol's known floods. Bytes in, events
//! and bytes out: nothing here touches a socket, a file or the engine;
//! `server/h2` drives it as `server/h1` drives HTTP/1.1.

pub mod hpack;
