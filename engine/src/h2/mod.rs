//! HTTP/2 (RFC 9113), sans-IO: frames, HPACK, streams, flow control and
//! the defences against the protocol's known floods. Bytes in, events
//! and bytes out: nothing here touches a socket, a file or the engine;
//! `server/h2` drives it as `server/h1` drives HTTP/1.1.
//!
//! - [`frame`]: the frame codec (RFC 9113 §4, §6), padding, the frames
//!   a server writes;
//! - [`hpack`]: header compression (RFC 7541) with a bounded dynamic
//!   table and a bound on what a block may decode to;
//! - [`Request`]: a request's header block, checked (§8.2, §8.3);
//! - [`Conn`]: one connection's streams (§5.1), windows (§5.2, §6.9),
//!   SETTINGS, PING, GOAWAY, RST_STREAM, CONTINUATION assembly, and the
//!   budgets of [`Limits`].

mod conn;
pub mod frame;
pub mod hpack;
mod limits;
mod request;

#[cfg(test)]
mod tests;

pub use conn::{Buffers, Conn, Event, ANY_STREAM, GOAWAY_PING, GOAWAY_WAIT};
pub use limits::Limits;
pub use request::Request;

/// The client connection preface (§3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Error codes (§7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ErrorCode {
    /// NO_ERROR.
    NoError = 0x0,
    /// PROTOCOL_ERROR.
    Protocol = 0x1,
    /// INTERNAL_ERROR.
    Internal = 0x2,
    /// FLOW_CONTROL_ERROR.
    FlowControl = 0x3,
    /// SETTINGS_TIMEOUT.
    SettingsTimeout = 0x4,
    /// STREAM_CLOSED.
    StreamClosed = 0x5,
    /// FRAME_SIZE_ERROR.
    FrameSize = 0x6,
    /// REFUSED_STREAM.
    RefusedStream = 0x7,
    /// CANCEL.
    Cancel = 0x8,
    /// COMPRESSION_ERROR.
    Compression = 0x9,
    /// CONNECT_ERROR.
    Connect = 0xa,
    /// ENHANCE_YOUR_CALM.
    EnhanceYourCalm = 0xb,
    /// INADEQUATE_SECURITY.
    InadequateSecurity = 0xc,
    /// HTTP_1_1_REQUIRED.
    Http11Required = 0xd,
}
