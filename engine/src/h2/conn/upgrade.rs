//! HTTP/1.1's `Upgrade: h2c` (RFC 7540 §3.2, which RFC 9113 §3.1
//! deprecates but clients such as `nghttp -u` and curl's `--http2` on
//! `http://` still send): the request that asked becomes stream 1,
//! half-closed (remote), and its `HTTP2-Settings` are the client's first
//! settings.

use super::*;

impl Conn {
    /// Takes an upgraded request, before the client's preface (which
    /// follows the 101): `settings` is the SETTINGS payload the
    /// `HTTP2-Settings` field carried (applied as a SETTINGS frame, and
    /// not acknowledged: the 101 does that, §3.2.1), and `head` fills the
    /// request's header list (pseudo-header fields first, lower-case
    /// names, no connection-specific fields). Stream 1's request is
    /// reported once the client's preface has come (so that its answer
    /// does not arrive with the 101, where some clients, curl 7.88
    /// among them, cannot take more than a few KiB). Refused with why
    /// if HTTP/2 would refuse the settings or the head: the request is
    /// then answered over HTTP/1.1 and this connection dropped.
    pub fn upgrade(
        &mut self,
        settings: &[u8],
        now: Instant,
        head: impl FnOnce(&mut Request),
    ) -> Result<(), &'static str> {
        if self.phase != Phase::Preface || self.last_stream != 0 {
            return Err("the connection has started");
        }
        if !settings.len().is_multiple_of(6) {
            return Err("HTTP2-Settings is not a SETTINGS payload");
        }
        let queued = self.out.len();
        let _ = self.settings(false, settings, now);
        if let Some(why) = self.failure {
            return Err(why);
        }
        // (No SETTINGS ack for settings that came in no frame.)
        self.out.truncate(queued);
        let max_list = self.limits.max_header_list_size as usize;
        let request = self.request.get_or_insert_with(Box::default);
        request.clear(max_list, false);
        head(request);
        if let Some(why) = request.finish() {
            return Err(why);
        }
        self.last_stream = 1;
        self.upgraded = true;
        Ok(())
    }

    /// Opens stream 1 for the upgraded request, once the preface is in.
    pub(super) fn open_upgraded<'a>(&mut self, now: Instant) -> Option<Event<'a>> {
        if !std::mem::take(&mut self.upgraded) {
            return None;
        }
        self.open(1, true, now)
    }
}
