//! The limits one HTTP/2 connection is held to: what it advertises in
//! its SETTINGS, and the defences' budgets. `[http2]` sets them; the
//! defaults are safe for a public server.

use std::time::Duration;

/// Limits and settings of a connection (see `brisk.example.toml`,
/// `[http2]`, for what each means to a user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams a client may have open;
    /// more are refused (RST_STREAM REFUSED_STREAM).
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: how much of a request body a client
    /// may send on a stream before we ask for more (at least 65535).
    pub stream_window: u32,
    /// The connection's receive window, opened by WINDOW_UPDATE at start.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload we accept.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a larger request head is answered
    /// 431; one twice as large (encoded) closes the connection.
    pub max_header_list_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK dynamic table a client may use.
    pub header_table_size: u32,
    /// CONTINUATION frames one header block may take (CONTINUATION flood).
    pub max_continuations: u32,
    /// Streams a client may cancel (RST_STREAM) or have refused per
    /// [`Limits::flood_window`] (rapid reset, CVE-2023-44487).
    pub max_resets: u32,
    /// SETTINGS and PING frames (and PRIORITY) per flood window.
    pub max_control_frames: u32,
    /// Frames that carry nothing per flood window: empty DATA without
    /// END_STREAM, empty CONTINUATION, frames on closed streams.
    pub max_empty_frames: u32,
    /// The window the flood budgets count in.
    pub flood_window: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_concurrent_streams: 128,
            stream_window: 256 * 1024,
            connection_window: 1024 * 1024,
            max_frame_size: 16_384,
            max_header_list_size: 64 * 1024,
            header_table_size: 4096,
            max_continuations: 16,
            max_resets: 200,
            max_control_frames: 1000,
            max_empty_frames: 1000,
            flood_window: Duration::from_secs(10),
        }
    }
}
