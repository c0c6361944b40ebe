//! `[http2]`: HTTP/2 by ALPN on TLS listeners (`enable`), with prior
//! knowledge on plain ones (`cleartext`), and the limits each HTTP/2
//! connection is held to (see `h2::Limits` for what each defends).
//! A build without the cargo feature `http2` refuses to turn it on.

use toml::de::DeValue;
use toml::Spanned;

use super::load::{sorted, Loader, SET_FALSE};
use super::{ConfigError, Http2Config};

pub(super) const HTTP2_KEYS: &[&str] = &[
    "enable",
    "cleartext",
    "max_concurrent_streams",
    "stream_window",
    "connection_window",
    "max_frame_size",
    "max_header_list_size",
    "header_table_size",
    "max_continuations",
    "max_resets",
    "max_control_frames",
    "max_empty_frames",
];

/// The limits of each HTTP/2 connection that `[http2]` sets; the flood
/// window is h2's own.
#[cfg(feature = "http2")]
impl From<&Http2Config> for crate::h2::Limits {
    fn from(c: &Http2Config) -> crate::h2::Limits {
        crate::h2::Limits {
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
            ..crate::h2::Limits::default()
        }
    }
}

/// `[http2]` defaults: on where the build has it.
pub(super) fn defaults() -> Http2Config {
    let on = cfg!(feature = "http2");
    Http2Config {
        enable: on,
        cleartext: on,
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
    }
}

impl Loader<'_> {
    pub(super) fn http2(
        &self,
        v: &Spanned<DeValue<'_>>,
        h: &mut Http2Config,
    ) -> Result<(), ConfigError> {
        const MIB: u64 = 1 << 20;
        const WINDOW_MAX: u64 = (1 << 31) - 1;
        for (key, value) in sorted(self.table("http2", v)?) {
            let name = key.get_ref().as_ref();
            let full = format!("http2.{name}");
            let count = |min, max| self.integer(&full, value, min, max).map(|n| n as u32);
            match name {
                "enable" | "cleartext" => {
                    let on = self.boolean(&full, value)?;
                    if on {
                        require!(self, "http2", value, &full, "HTTP/2", SET_FALSE);
                    }
                    match name {
                        "enable" => h.enable = on,
                        _ => h.cleartext = on,
                    }
                }
                "max_concurrent_streams" => h.max_concurrent_streams = count(1, 10_000)?,
                // At least the protocol's default: a client may send that
                // much before it has read our SETTINGS.
                "stream_window" => {
                    h.stream_window = self.size(&full, value, 65_535, WINDOW_MAX)? as u32
                }
                "connection_window" => {
                    h.connection_window = self.size(&full, value, 65_535, WINDOW_MAX)? as u32
                }
                // RFC 9113 §6.5.2's range.
                "max_frame_size" => {
                    h.max_frame_size = self.size(&full, value, 16_384, (1 << 24) - 1)? as u32
                }
                "max_header_list_size" => {
                    h.max_header_list_size = self.size(&full, value, 1024, 16 * MIB)? as u32
                }
                "header_table_size" => {
                    h.header_table_size = self.size(&full, value, 0, MIB)? as u32
                }
                "max_continuations" => h.max_continuations = count(1, 10_000)?,
                "max_resets" => h.max_resets = count(1, 1_000_000)?,
                "max_control_frames" => h.max_control_frames = count(1, 1_000_000)?,
                "max_empty_frames" => h.max_empty_frames = count(1, 1_000_000)?,
                _ => return Err(self.unknown(key, "http2", HTTP2_KEYS)),
            }
        }
        Ok(())
    }
}

/// The `[http2]` limits as `(key, value)` pairs, for the report.
#[cfg(feature = "ops")]
pub(super) fn values(h: &Http2Config) -> Vec<(&'static str, String)> {
    vec![
        (
            "max_concurrent_streams",
            h.max_concurrent_streams.to_string(),
        ),
        ("stream_window", h.stream_window.to_string()),
        ("connection_window", h.connection_window.to_string()),
        ("max_frame_size", h.max_frame_size.to_string()),
        ("max_header_list_size", h.max_header_list_size.to_string()),
        ("header_table_size", h.header_table_size.to_string()),
        ("max_continuations", h.max_continuations.to_string()),
        ("max_resets", h.max_resets.to_string()),
        ("max_control_frames", h.max_control_frames.to_string()),
        ("max_empty_frames", h.max_empty_frames.to_string()),
    ]
}
