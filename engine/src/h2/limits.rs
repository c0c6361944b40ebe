//! The limits one HTTP/2 connection is held to: what it advertises in
//! its SETTINGS, and the defences' budgets. `[http2]` sets them (see
//! [`Http2Config`] for what each means); the defaults are safe for a
//! public server.

use std::time::Duration;

use crate::config::Http2Config;

/// Limits and settings of a connection: [`Http2Config`]'s, and the
/// window the flood budgets count in.
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
}

impl Limits {
    /// The limits `[http2]` sets.
    pub fn new(c: &Http2Config) -> Limits {
        Limits {
            max_concurrent_streams: c.max_concurrent_streams,
            stream_window: c.stream_window,
            connection_window: c.connection_window,
            max_frame_size: c.max_frame_size,
            max_header_list_size: c.max_header_list_size,
            header_table_size: c.header_table_size,
            max_continuations: c.max_continuations,
            max_resets: c.max_resets,
            max_control_frames: c.max_control_frames,
            max_empty_frames: c.max_empty_frames,
            flood_window: Duration::from_secs(10),
        }
    }
}

impl Default for Limits {
    /// `[http2]`'s defaults.
    fn default() -> Limits {
        Limits::new(&crate::config::Config::default().http2)
    }
}
