//! HTTP/2 frames (RFC 9113 §4 and §6), sans-IO: a frame header's nine
//! bytes, each frame type's payload checked and read (padding removed),
//! and the frames a server writes.

use super::ErrorCode;

/// Bytes of a frame header.
pub const HEAD_LEN: usize = 9;
/// The smallest SETTINGS_MAX_FRAME_SIZE, and its default (§6.5.2).
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The largest SETTINGS_MAX_FRAME_SIZE (§6.5.2).
pub const MAX_MAX_FRAME: u32 = (1 << 24) - 1;
/// The largest flow-control window (§6.9.1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

/// Frame types (§6).
pub mod kind {
    /// DATA.
    pub const DATA: u8 = 0x0;
    /// HEADERS.
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY.
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM.
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS.
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE.
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING.
    pub const PING: u8 = 0x6;
    /// GOAWAY.
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE.
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION.
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags (§6).
pub mod flag {
    /// END_STREAM (DATA, HEADERS).
    pub const END_STREAM: u8 = 0x1;
    /// ACK (SETTINGS, PING).
    pub const ACK: u8 = 0x1;
    /// END_HEADERS (HEADERS, CONTINUATION).
    pub const END_HEADERS: u8 = 0x4;
    /// PADDED (DATA, HEADERS).
    pub const PADDED: u8 = 0x8;
    /// PRIORITY (HEADERS).
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS parameters (§6.5.2).
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH.
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE.
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 §3).
    pub const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;
}

/// A frame header (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Payload length.
    pub len: u32,
    /// Type.
    pub kind: u8,
    /// Flags.
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl Head {
    /// Reads a frame header from the first nine bytes of `b`.
    pub fn read(b: &[u8; HEAD_LEN]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    /// The header's nine bytes.
    pub fn bytes(&self) -> [u8; HEAD_LEN] {
        let l = self.len.to_be_bytes();
        let s = self.stream.to_be_bytes();
        [
            l[1], l[2], l[3], self.kind, self.flags, s[0], s[1], s[2], s[3],
        ]
    }

    /// Whether `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// A HEADERS frame's priority fields (§6.2; RFC 9218 deprecates the
/// scheme, but the fields are still there to be read and checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    /// The stream it depends on.
    pub depends_on: u32,
    /// Exclusive dependency.
    pub exclusive: bool,
    /// Weight, less one.
    pub weight: u8,
}

/// A frame, its payload checked and its padding removed.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA (§6.1). `flow` counts the whole payload, padding included:
    /// it is what flow control charges.
    Data {
        /// Stream.
        stream: u32,
        /// Its data.
        data: &'a [u8],
        /// The payload's whole length.
        flow: u32,
        /// END_STREAM.
        end_stream: bool,
    },
    /// HEADERS (§6.2).
    Headers {
        /// Stream.
        stream: u32,
        /// The header block fragment.
        block: &'a [u8],
        /// Priority fields, if the PRIORITY flag is set.
        priority: Option<Priority>,
        /// END_STREAM.
        end_stream: bool,
        /// END_HEADERS.
        end_headers: bool,
    },
    /// PRIORITY (§6.3).
    Priority {
        /// Stream.
        stream: u32,
        /// Its fields.
        priority: Priority,
    },
    /// RST_STREAM (§6.4).
    RstStream {
        /// Stream.
        stream: u32,
        /// Error code (unknown ones are kept as they are).
        code: u32,
    },
    /// SETTINGS (§6.5): `params` is a whole number of 6-byte entries.
    Settings {
        /// ACK.
        ack: bool,
        /// The parameters (see [`settings`]).
        params: &'a [u8],
    },
    /// PUSH_PROMISE (§6.6): a client never sends one.
    PushPromise {
        /// Stream.
        stream: u32,
    },
    /// PING (§6.7).
    Ping {
        /// ACK.
        ack: bool,
        /// Opaque data.
        data: [u8; 8],
    },
    /// GOAWAY (§6.8).
    GoAway {
        /// Last stream the peer processed.
        last_stream: u32,
        /// Error code.
        code: u32,
    },
    /// WINDOW_UPDATE (§6.9); an increment of 0 is for the caller to refuse
    /// (a stream error on a stream, a connection error on 0).
    WindowUpdate {
        /// Stream (0: the connection).
        stream: u32,
        /// Increment.
        increment: u32,
    },
    /// CONTINUATION (§6.10).
    Continuation {
        /// Stream.
        stream: u32,
        /// The header block fragment.
        block: &'a [u8],
        /// END_HEADERS.
        end_headers: bool,
    },
    /// A type this implementation does not know: ignored (§5.5).
    Unknown,
}

/// What is wrong with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// A connection error (§5.4.1): GOAWAY with this code.
    Connection(ErrorCode, &'static str),
    /// A stream error (§5.4.2): RST_STREAM on this stream.
    Stream(u32, ErrorCode, &'static str),
}

fn conn(code: ErrorCode, why: &'static str) -> FrameError {
    FrameError::Connection(code, why)
}

/// Reads the payload of a frame with header `h` (its length checked by
/// the caller against SETTINGS_MAX_FRAME_SIZE, §4.2).
pub fn decode<'a>(h: &Head, payload: &'a [u8]) -> Result<Frame<'a>, FrameError> {
    use ErrorCode::{FrameSize, Protocol};
    let stream = h.stream;
    let need_stream = |what| {
        if stream == 0 {
            Err(conn(Protocol, what))
        } else {
            Ok(())
        }
    };
    let no_stream = |what| {
        if stream != 0 {
            Err(conn(Protocol, what))
        } else {
            Ok(())
        }
    };
    match h.kind {
        kind::DATA => {
            need_stream("DATA on stream 0")?;
            let data = unpad(h, payload)?;
            Ok(Frame::Data {
                stream,
                data,
                flow: payload.len() as u32,
                end_stream: h.has(flag::END_STREAM),
            })
        }
        kind::HEADERS => {
            need_stream("HEADERS on stream 0")?;
            let mut block = unpad(h, payload)?;
            let mut priority = None;
            if h.has(flag::PRIORITY) {
                if block.len() < 5 {
                    return Err(conn(FrameSize, "HEADERS too short for its priority"));
                }
                priority = Some(read_priority(&block[..5]));
                block = &block[5..];
            }
            Ok(Frame::Headers {
                stream,
                block,
                priority,
                end_stream: h.has(flag::END_STREAM),
                end_headers: h.has(flag::END_HEADERS),
            })
        }
        kind::PRIORITY => {
            need_stream("PRIORITY on stream 0")?;
            if payload.len() != 5 {
                return Err(FrameError::Stream(
                    stream,
                    FrameSize,
                    "PRIORITY is not 5 bytes",
                ));
            }
            Ok(Frame::Priority {
                stream,
                priority: read_priority(payload),
            })
        }
        kind::RST_STREAM => {
            need_stream("RST_STREAM on stream 0")?;
            if payload.len() != 4 {
                return Err(conn(FrameSize, "RST_STREAM is not 4 bytes"));
            }
            Ok(Frame::RstStream {
                stream,
                code: be32(payload),
            })
        }
        kind::SETTINGS => {
            no_stream("SETTINGS on a stream")?;
            let ack = h.has(flag::ACK);
            if ack && !payload.is_empty() {
                return Err(conn(FrameSize, "SETTINGS ack with a payload"));
            }
            if !payload.len().is_multiple_of(6) {
                return Err(conn(FrameSize, "SETTINGS not a multiple of 6 bytes"));
            }
            Ok(Frame::Settings {
                ack,
                params: payload,
            })
        }
        kind::PUSH_PROMISE => Ok(Frame::PushPromise { stream }),
        kind::PING => {
            no_stream("PING on a stream")?;
            let data: [u8; 8] = payload
                .try_into()
                .map_err(|_| conn(FrameSize, "PING is not 8 bytes"))?;
            Ok(Frame::Ping {
                ack: h.has(flag::ACK),
                data,
            })
        }
        kind::GOAWAY => {
            no_stream("GOAWAY on a stream")?;
            if payload.len() < 8 {
                return Err(conn(FrameSize, "GOAWAY shorter than 8 bytes"));
            }
            Ok(Frame::GoAway {
                last_stream: be32(payload) & 0x7fff_ffff,
                code: be32(&payload[4..]),
            })
        }
        kind::WINDOW_UPDATE => {
            if payload.len() != 4 {
                return Err(conn(FrameSize, "WINDOW_UPDATE is not 4 bytes"));
            }
            Ok(Frame::WindowUpdate {
                stream,
                increment: be32(payload) & 0x7fff_ffff,
            })
        }
        kind::CONTINUATION => {
            need_stream("CONTINUATION on stream 0")?;
            Ok(Frame::Continuation {
                stream,
                block: payload,
                end_headers: h.has(flag::END_HEADERS),
            })
        }
        _ => Ok(Frame::Unknown),
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn read_priority(b: &[u8]) -> Priority {
    let dep = be32(b);
    Priority {
        depends_on: dep & 0x7fff_ffff,
        exclusive: dep & 0x8000_0000 != 0,
        weight: b[4],
    }
}

/// The payload less its padding (§6.1, §6.2): padding as long as the
/// payload or longer is a connection error.
fn unpad<'a>(h: &Head, payload: &'a [u8]) -> Result<&'a [u8], FrameError> {
    if !h.has(flag::PADDED) {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(conn(
            ErrorCode::FrameSize,
            "padded frame without a pad length",
        ));
    };
    let pad = pad as usize;
    if pad > rest.len() {
        return Err(conn(ErrorCode::Protocol, "padding longer than the payload"));
    }
    Ok(&rest[..rest.len() - pad])
}

/// The `(identifier, value)` pairs of a SETTINGS payload.
pub fn settings(params: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    params
        .chunks_exact(6)
        .map(|p| (u16::from_be_bytes([p[0], p[1]]), be32(&p[2..])))
}

/// Appends a frame header.
pub fn write_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let h = Head {
        len: len as u32,
        kind,
        flags,
        stream,
    };
    out.extend_from_slice(&h.bytes());
}

/// Appends a SETTINGS frame with `params`.
pub fn write_settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    write_head(out, params.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, v) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Appends a SETTINGS acknowledgement.
pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// Appends a PING acknowledgement of `data`.
pub fn write_ping_ack(out: &mut Vec<u8>, data: &[u8; 8]) {
    write_head(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(data);
}

/// Appends a PING of `data` (the peer answers it with an ACK of the same).
pub fn write_ping(out: &mut Vec<u8>, data: &[u8; 8]) {
    write_head(out, 8, kind::PING, 0, 0);
    out.extend_from_slice(data);
}

/// Appends a WINDOW_UPDATE.
pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends an RST_STREAM.
pub fn write_rst(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    write_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&(code as u32).to_be_bytes());
}

/// Appends a GOAWAY with `debug` data (a reason for a person reading a
/// trace; never a secret).
pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode, debug: &[u8]) {
    write_head(out, 8 + debug.len(), kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&(code as u32).to_be_bytes());
    out.extend_from_slice(debug);
}

/// Appends the header block `block` as a HEADERS frame and as many
/// CONTINUATION frames as `max_frame` requires.
pub fn write_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: usize,
) {
    let mut chunks = block.chunks(max_frame.max(1));
    let first = chunks.next().unwrap_or(&[]);
    let mut more = chunks.peekable();
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    if more.peek().is_none() {
        flags |= flag::END_HEADERS;
    }
    write_head(out, first.len(), kind::HEADERS, flags, stream);
    out.extend_from_slice(first);
    while let Some(c) = more.next() {
        let f = if more.peek().is_none() {
            flag::END_HEADERS
        } else {
            0
        };
        write_head(out, c.len(), kind::CONTINUATION, f, stream);
        out.extend_from_slice(c);
    }
}

/// A DATA frame's header, for `len` bytes that follow it.
pub fn data_head(stream: u32, len: usize, end_stream: bool) -> [u8; HEAD_LEN] {
    Head {
        len: len as u32,
        kind: kind::DATA,
        flags: if end_stream { flag::END_STREAM } else { 0 },
        stream,
    }
    .bytes()
}
