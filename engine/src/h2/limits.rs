//! The limits one HTTP/2 connection is held to: what it advertises in
//! its SETTINGS, and the defences' budgets. `[http2]` sets them (the
//! configuration makes them from its `Http2Config`, which says what each
//! means); the defaults are safe for a public server.

use std::time::Duration;

/// Limits and settings of a connection: `[http2]`'s, and the window the
/// flood budgets count in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE (at least 65535).
    pub stream_window: u32,
    /// The connection's receive window.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub header_table_size: u32,
    /// CONTINUATION frames per header block.
    pub max_continuations: u32,
    /// Streams cancelled, refused or malformed per flood window.
    pub max_resets: u32,
    /// SETTINGS, PING and PRIORITY frames per flood window.
    pub max_control_frames: u32,
    /// Empty frames and frames on closed streams per flood window.
    pub max_empty_frames: u32,
    /// The window the flood budgets count in.
    pub flood_window: Duration,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL is sent (RFC 8441: a WebSocket
    /// may be opened by an extended CONNECT), where a rule takes them.
    pub connect_protocol: bool,
}

impl Default for Limits {
    /// `[http2]`'s defaults (config/http2.rs holds them too, for a build
    /// without HTTP/2; a unit test there checks that they agree).
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
            connect_protocol: false,
        }
    }
}
