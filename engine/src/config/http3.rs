//! `[http3]`: HTTP/3 over QUIC on the UDP side of each `[tls] listen`
//! address (`enable`), and the limits of each QUIC connection. A build
//! without the cargo feature `http3` refuses to turn it on; so does a
//! configuration without `[tls]` (QUIC has no plaintext form).

#[cfg(feature = "http3")]
use {
    super::load::{sorted, Loader},
    super::{ConfigError, Http3Config},
    std::time::Duration,
    toml::de::DeValue,
    toml::Spanned,
};

pub(super) const HTTP3_KEYS: &[&str] = &[
    "enable",
    "max_streams",
    "idle_timeout",
    "retry_above",
    "max_cancels",
    "flood_window",
];

#[cfg(feature = "http3")]
impl Loader<'_> {
    pub(super) fn http3(
        &self,
        v: &Spanned<DeValue<'_>>,
        h: &mut Http3Config,
    ) -> Result<(), ConfigError> {
        for (key, value) in sorted(self.table("http3", v)?) {
            let name = key.get_ref().as_ref();
            let full = format!("http3.{name}");
            match name {
                "enable" => h.enable = self.boolean(&full, value)?,
                // Bidirectional (request) streams a client may have open
                // at once (QUIC's initial_max_streams_bidi).
                "max_streams" => h.max_streams = self.integer(&full, value, 1, 10_000)? as u32,
                // QUIC's max_idle_timeout (RFC 9000 §10.1): at most what
                // its varint of milliseconds holds comfortably; the flood
                // window as long.
                "idle_timeout" | "flood_window" => {
                    let d = self.duration(&full, value, false)?;
                    if d > Duration::from_secs(3600) {
                        return Err(self.fail(value, &full, "at most 1h"));
                    }
                    match name {
                        "idle_timeout" => h.idle_timeout = d,
                        _ => h.flood_window = d,
                    }
                }
                // Connections a worker holds before a new client must
                // prove its address (Retry, RFC 9000 §8.1.2); 0: always.
                "retry_above" => h.retry_above = self.integer(&full, value, 0, 1_000_000)? as u32,
                // QUIC's rapid reset: RESET_STREAM and STOP_SENDING frames
                // a client may send per `flood_window` (a stream cancelled
                // both ways is two).
                "max_cancels" => h.max_cancels = self.integer(&full, value, 1, 1_000_000)? as u32,
                _ => return Err(self.unknown(key, "http3", HTTP3_KEYS)),
            }
        }
        Ok(())
    }
}
