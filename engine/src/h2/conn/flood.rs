//! The flood budgets: each kind of frame that costs us work without
//! serving a request is counted per `flood_window`; going over a budget
//! ends the connection with GOAWAY ENHANCE_YOUR_CALM.

use super::*;

impl Conn {
    /// Starts a new flood window when the current one is over.
    fn flood_tick(&mut self, now: Instant) {
        if now.saturating_duration_since(self.flood.since) >= self.limits.flood_window {
            self.flood = Flood {
                since: now,
                resets: 0,
                control: 0,
                empty: 0,
            };
        }
    }

    /// A stream cancelled by the client, refused, or malformed (rapid
    /// reset, CVE-2023-44487: each costs a request's work).
    pub(super) fn spend_reset<'a>(&mut self, now: Instant) -> Option<Event<'a>> {
        self.flood_tick(now);
        self.flood.resets += 1;
        (self.flood.resets > self.limits.max_resets).then(|| {
            self.fail(
                ErrorCode::EnhanceYourCalm,
                "too many streams reset or refused",
            )
        })
    }

    /// A SETTINGS, PING or PRIORITY frame.
    pub(super) fn spend_control<'a>(&mut self, now: Instant) -> Option<Event<'a>> {
        self.flood_tick(now);
        self.flood.control += 1;
        (self.flood.control > self.limits.max_control_frames).then(|| {
            self.fail(
                ErrorCode::EnhanceYourCalm,
                "too many SETTINGS, PING or PRIORITY frames",
            )
        })
    }

    /// A frame that carries nothing: empty DATA without END_STREAM, an
    /// empty CONTINUATION, a frame on a closed stream.
    pub(super) fn spend_empty<'a>(&mut self, now: Instant) -> Option<Event<'a>> {
        self.flood_tick(now);
        self.flood.empty += 1;
        (self.flood.empty > self.limits.max_empty_frames).then(|| {
            self.fail(
                ErrorCode::EnhanceYourCalm,
                "too many empty frames or frames on closed streams",
            )
        })
    }
}
