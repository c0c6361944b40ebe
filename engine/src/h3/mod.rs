//! HTTP/3 (RFC 9114) and QPACK (RFC 9204), sans-IO (feature `http3`):
//! what travels on the QUIC streams quinn-proto carries for
//! `server/worker/quic.rs`.
//!
//! - [`varint`]: QUIC's variable-length integers (RFC 9000 §16);
//! - [`frame`]: frame headers and the frames a server reads (DATA,
//!   HEADERS, SETTINGS, GOAWAY, ...; unknown and reserved types skipped,
//!   HTTP/2's types refused, §7.2.8), each payload bounded;
//! - [`conn`]: one connection's streams: the client's control and QPACK
//!   streams and their rules, each request stream's HEADERS, DATA and
//!   trailers;
//! - [`qpack`]: field sections decoded with the static table and literal
//!   fields only (the server advertises `SETTINGS_QPACK_MAX_TABLE_CAPACITY
//!   = 0`, so a client may not use a dynamic table), into
//!   [`crate::h2::Request`], which checks a request's fields as HTTP/3
//!   asks (§4.2, §4.3: the rules are HTTP/2's); and encoded the same way.
//!
//! Errors carry the RFC's codes ([`Error`]), for CONNECTION_CLOSE or
//! RESET_STREAM.

pub mod conn;
pub mod frame;
pub mod qpack;
pub mod varint;

/// An HTTP/3 or QPACK error code (RFC 9114 §8.1, RFC 9204 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(pub u32);

impl Code {
    /// `H3_NO_ERROR`.
    pub const NO_ERROR: Code = Code(0x100);
    /// `H3_GENERAL_PROTOCOL_ERROR`.
    pub const GENERAL_PROTOCOL_ERROR: Code = Code(0x101);
    /// `H3_INTERNAL_ERROR`.
    pub const INTERNAL_ERROR: Code = Code(0x102);
    /// `H3_STREAM_CREATION_ERROR`.
    pub const STREAM_CREATION_ERROR: Code = Code(0x103);
    /// `H3_CLOSED_CRITICAL_STREAM`.
    pub const CLOSED_CRITICAL_STREAM: Code = Code(0x104);
    /// `H3_FRAME_UNEXPECTED`.
    pub const FRAME_UNEXPECTED: Code = Code(0x105);
    /// `H3_FRAME_ERROR`.
    pub const FRAME_ERROR: Code = Code(0x106);
    /// `H3_EXCESSIVE_LOAD`.
    pub const EXCESSIVE_LOAD: Code = Code(0x107);
    /// `H3_ID_ERROR`.
    pub const ID_ERROR: Code = Code(0x108);
    /// `H3_SETTINGS_ERROR`.
    pub const SETTINGS_ERROR: Code = Code(0x109);
    /// `H3_MISSING_SETTINGS`.
    pub const MISSING_SETTINGS: Code = Code(0x10a);
    /// `H3_REQUEST_REJECTED`.
    pub const REQUEST_REJECTED: Code = Code(0x10b);
    /// `H3_REQUEST_CANCELLED`.
    pub const REQUEST_CANCELLED: Code = Code(0x10c);
    /// `H3_REQUEST_INCOMPLETE`.
    pub const REQUEST_INCOMPLETE: Code = Code(0x10d);
    /// `H3_MESSAGE_ERROR`.
    pub const MESSAGE_ERROR: Code = Code(0x10e);
    /// `QPACK_DECOMPRESSION_FAILED`.
    pub const QPACK_DECOMPRESSION_FAILED: Code = Code(0x200);
    /// `QPACK_ENCODER_STREAM_ERROR`.
    pub const QPACK_ENCODER_STREAM_ERROR: Code = Code(0x201);
    /// `QPACK_DECODER_STREAM_ERROR`.
    pub const QPACK_DECODER_STREAM_ERROR: Code = Code(0x202);
}

/// Why a stream or the connection fails: the code, and a reason for the
/// log and the CONNECTION_CLOSE's phrase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    /// The code the peer is told.
    pub code: Code,
    /// Why, in a few words.
    pub reason: &'static str,
}

impl Error {
    /// An error of `code`, for `reason`.
    pub const fn new(code: Code, reason: &'static str) -> Error {
        Error { code, reason }
    }
}
