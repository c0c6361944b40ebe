//! The answering side of a connection: heads, body bytes within the
//! windows, the order answers' bytes go in, window credit given back,
//! and the graceful GOAWAY.

use super::*;

/// Room the frame queue has while the connection is lent its buffers.
const OUT_ROOM: usize = 4096;

impl Conn {
    /// Resets stream `id` from our side (its answer cannot go on).
    pub fn reset(&mut self, id: u32, code: ErrorCode) {
        self.reset_stream(id, code);
    }

    /// Refuses stream `id` (RST_STREAM REFUSED_STREAM, RFC 9113 §8.7:
    /// nothing of it was processed, and the client may send it again),
    /// counted with the client's resets: past `max_resets` in a flood
    /// window the connection fails (GOAWAY ENHANCE_YOUR_CALM, queued)
    /// instead. Whether the connection goes on.
    pub fn refuse(&mut self, id: u32, now: Instant) -> bool {
        if self.spend_reset(now).is_some() {
            return false;
        }
        self.reset_stream(id, ErrorCode::RefusedStream);
        true
    }

    /// The connection is closed now, whatever is under way (the server's
    /// deadline to stop has come): the final GOAWAY if it has not gone
    /// (see [`Conn::go_away`]), and each stream still open cancelled
    /// (RST_STREAM CANCEL, RFC 9113 §8.4), so that the client learns
    /// which answers were cut from the frames, not from the close.
    pub fn abandon(&mut self) {
        self.go_away();
        while let Some(id) = self.streams.first().map(|s| s.id) {
            self.reset_stream(id, ErrorCode::Cancel);
        }
    }

    /// `n` body bytes' credit goes back to the connection's window only
    /// (their stream's stays held: see [`Conn::release_stream`]); what
    /// is owed ([`Conn::owe`]) is paid first.
    pub fn release_conn(&mut self, n: u32) {
        let paid = n.min(self.owed);
        self.owed -= paid;
        let n = n - paid;
        if n == 0 {
            return;
        }
        self.recv_window += n as i64;
        self.recv_unacked += n;
        let half = self.limits.connection_window / 2;
        if self.recv_unacked >= half {
            frame::write_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_unacked = 0;
        }
    }

    /// `n` body bytes whose connection credit went back before they were
    /// used (a body held while its request waited for its turn) are
    /// given again to be used, and their use will give it back once more:
    /// that much of the next credit given back is kept instead.
    pub fn owe(&mut self, n: usize) {
        self.owed = self.owed.saturating_add(n as u32);
    }

    /// `n` body bytes of stream `id` were used: their credit goes back
    /// to the client, in WINDOW_UPDATEs of at least half a window, so a
    /// large upload is not throttled to one window per round trip.
    pub fn release(&mut self, id: u32, n: usize) {
        self.release_conn(n as u32);
        self.release_stream(id, n);
    }

    /// `n` body bytes of stream `id`, whose connection credit went back
    /// before (a request held for its turn: see
    /// `Worker::wait_turn`), were used: their stream's credit goes back.
    pub fn release_stream(&mut self, id: u32, n: usize) {
        let n = n as u32;
        let half = self.limits.stream_window / 2;
        let Some(s) = self.streams.iter_mut().find(|s| s.id == id) else {
            return;
        };
        s.recv_window += n as i64;
        s.recv_unacked += n;
        if s.recv_open && s.recv_unacked >= half {
            frame::write_window_update(&mut self.out, id, s.recv_unacked);
            s.recv_unacked = 0;
        }
    }

    /// The rest of stream `id`'s request body is not wanted (it was
    /// answered without it): up to `allowance` more bytes of it are read
    /// and dropped, their credit given back at once, so that a client
    /// that sends its body whole still reads the answer; past that the
    /// stream is reset with NO_ERROR (RFC 9113 §8.1), which some clients
    /// take for an error.
    pub fn discard_body(&mut self, id: u32, allowance: u64) {
        let Some(s) = self.stream(id) else { return };
        if s.recv_open {
            s.discard = Some(allowance.max(1));
        }
    }

    /// Whether stream `id` can still take an answer's head (encode one
    /// only then: the encoder's table changes as it encodes).
    pub fn can_send_headers(&self, id: u32) -> bool {
        self.streams.iter().any(|s| s.id == id && s.send_open)
    }

    /// Sends the answer's head, HPACK block `block`, on stream `id`;
    /// `end_stream` when no body follows. False if the stream is gone.
    pub fn send_headers(&mut self, id: u32, block: &[u8], end_stream: bool) -> bool {
        let max = self.peer.max_frame as usize;
        let Some(s) = self.streams.iter_mut().find(|s| s.id == id) else {
            return false;
        };
        if !s.send_open {
            return false;
        }
        frame::write_headers(&mut self.out, id, block, end_stream, max);
        if end_stream {
            self.end_send(id);
        }
        true
    }

    /// Our side of stream `id` ended.
    fn end_send(&mut self, id: u32) {
        if let Some(s) = self.stream(id) {
            s.send_open = false;
            s.remaining = 0;
            if !s.recv_open {
                self.remove(id);
            }
        }
    }

    /// How many body bytes stream `id` may send now in one frame: its
    /// window, the connection's, and one frame's worth (0 if the stream
    /// is gone).
    pub fn sendable(&self, id: u32) -> usize {
        self.window_room(id).min(self.peer.max_frame as usize)
    }

    /// How many body bytes stream `id` may send now, in as many frames of
    /// at most [`Conn::max_frame`] as it takes: its window and the
    /// connection's (0 if the stream is gone).
    pub fn window_room(&self, id: u32) -> usize {
        let Some(s) = self.streams.iter().find(|s| s.id == id) else {
            return 0;
        };
        if !s.send_open {
            return 0;
        }
        s.send_window.min(self.send_window).max(0) as usize
    }

    /// The largest frame the client takes (SETTINGS_MAX_FRAME_SIZE).
    pub fn max_frame(&self) -> usize {
        self.peer.max_frame as usize
    }

    /// Charges `len` bytes (at most [`Conn::sendable`]) of stream `id`'s
    /// body to the windows and returns the DATA frame header to send
    /// before them; with `end_stream`, the answer ends there.
    pub fn data_head(&mut self, id: u32, len: usize, end_stream: bool) -> [u8; HEAD_LEN] {
        self.send_window -= len as i64;
        self.crossing();
        if let Some(s) = self.stream(id) {
            s.send_window -= len as i64;
            s.remaining = s.remaining.saturating_sub(len as u64);
        }
        if end_stream {
            self.end_send(id);
        }
        frame::data_head(id, len, end_stream)
    }

    /// Sends `data` (at most [`Conn::sendable`]) as one DATA frame.
    pub fn send_data(&mut self, id: u32, data: &[u8], end_stream: bool) {
        let head = self.data_head(id, data.len(), end_stream);
        self.out.extend_from_slice(&head);
        self.out.extend_from_slice(data);
    }

    /// Records how much of stream `id`'s answer is left to send, for
    /// [`Conn::next_stream`].
    pub fn set_remaining(&mut self, id: u32, remaining: u64) {
        if let Some(s) = self.stream(id) {
            s.remaining = remaining;
        }
    }

    /// The stream to send body bytes for next, among those with bytes
    /// left and room in their windows: the one with the fewest bytes
    /// left (the simpler scheduler RFC 9218 allows in place of
    /// priorities: small answers, the page's CSS and scripts, are not
    /// held up behind a large download). `None` when nothing can move.
    pub fn next_stream(&self) -> Option<u32> {
        if self.send_window <= 0 {
            return None;
        }
        self.streams
            .iter()
            .filter(|s| s.send_open && s.remaining > 0 && s.send_window > 0 && !s.paused)
            .min_by_key(|s| (s.remaining, s.id))
            .map(|s| s.id)
    }

    /// Holds stream `id`'s answer back: [`Conn::next_stream`] passes it
    /// over (a throttled answer over its rate) until [`Conn::resume_all`].
    pub fn pause(&mut self, id: u32) {
        if let Some(s) = self.stream(id) {
            s.paused = true;
        }
    }

    /// Lets every paused answer be scheduled again.
    pub fn resume_all(&mut self) {
        for s in &mut self.streams {
            s.paused = false;
        }
    }

    /// Whether stream `id`'s answer waits for the client to open a
    /// window (RFC 9113 §6.9): it has bytes left and its own window has
    /// no room, or, with `conn_too`, the connection's has none. (Not an
    /// answer the caller paused: that is not the client's doing.)
    pub fn waits_for_window(&self, id: u32, conn_too: bool) -> bool {
        let Some(s) = self.streams.iter().find(|s| s.id == id) else {
            return false;
        };
        let shut = s.send_window <= 0 || (conn_too && self.send_window <= 0);
        s.send_open && s.remaining > 0 && !s.paused && shut
    }

    /// Takes, for the parts of its buffers this connection does not
    /// have (it gave them back, or never had them), those of `spare`: a
    /// worker's, reused from connection to connection, so a connection
    /// that has no stream open holds none of them and a busy one
    /// allocates nothing.
    pub fn lend(&mut self, spare: &mut Buffers) {
        if self.streams.capacity() == 0 {
            std::mem::swap(&mut self.streams, &mut spare.streams);
        }
        if self.request.is_none() {
            std::mem::swap(&mut self.request, &mut spare.request);
        }
        if self.out.capacity() == 0 {
            std::mem::swap(&mut self.out, &mut spare.out);
        }
        // Heads and control frames queue here between reads: room for a
        // busy moment's (a new second's heads carry their table's fields
        // again), so it does not grow while warm.
        if self.out.capacity() < OUT_ROOM {
            self.out.reserve(OUT_ROOM - self.out.len());
        }
        self.decoder.lend(&mut spare.literals);
    }

    /// Whether it lacks one of the buffers [`Conn::lend`] gives.
    pub fn lacks_buffers(&self) -> bool {
        self.streams.capacity() == 0 || self.request.is_none() || self.out.capacity() == 0
    }

    /// Whether it holds none of them.
    pub fn holds_no_buffers(&self) -> bool {
        self.streams.capacity() == 0 && self.request.is_none() && self.out.capacity() == 0
    }

    /// Gives its buffers into `spare` (whose own must be empty, as
    /// [`Buffers::default`]) if the connection has no use for them now:
    /// no stream open, no header block half gathered, nothing to send.
    /// Whether it did.
    pub fn give_back(&mut self, spare: &mut Buffers) -> bool {
        if !self.streams.is_empty() || self.block.is_some() || !self.out.is_empty() {
            return false;
        }
        std::mem::swap(&mut self.streams, &mut spare.streams);
        std::mem::swap(&mut self.request, &mut spare.request);
        std::mem::swap(&mut self.out, &mut spare.out);
        self.decoder.give_back(&mut spare.literals);
        true
    }

    /// Gives back the memory an idle connection does not need: its
    /// buffers, and its answers' encoder with its HPACK table (the next
    /// answer's encoder empties the client's copy first); the client's
    /// own table stays, the client counts on it.
    pub fn shrink(&mut self) {
        if self.out.is_empty() {
            self.out = Vec::new();
        }
        if self.block.is_none() {
            self.block_buf = Vec::new();
        }
        self.request = None;
        self.streams.shrink_to_fit();
        self.decoder.shrink();
        if self.encoder.take().is_some() {
            self.rested = true;
        }
    }

    /// Graceful shutdown, as RFC 9113 §6.8 recommends: a GOAWAY naming
    /// [`ANY_STREAM`] and a PING now, so that the client opens no more
    /// streams, and the final GOAWAY, naming the last stream the client
    /// opened, once it has answered that PING (it read the first GOAWAY)
    /// or [`GOAWAY_WAIT`] has passed (see [`Conn::goaway_due`]). Every
    /// stream opened until then is served, so that none of the requests
    /// already on the wire is dropped; the streams open finish.
    pub fn shut_down(&mut self, now: Instant) {
        if self.goaway == Goaway::No && self.phase != Phase::Failed {
            self.goaway = Goaway::Announced(now);
            frame::write_goaway(&mut self.out, ANY_STREAM, ErrorCode::NoError, b"");
            frame::write_ping(&mut self.out, &GOAWAY_PING);
        }
    }

    /// When the final GOAWAY is due, if it waits for the client's answer
    /// to [`GOAWAY_PING`]; past that moment, it is queued now (and
    /// `None` returned).
    pub fn goaway_due(&mut self, now: Instant) -> Option<Instant> {
        let Goaway::Announced(since) = self.goaway else {
            return None;
        };
        let due = since + GOAWAY_WAIT;
        if now < due {
            return Some(due);
        }
        self.final_goaway();
        None
    }

    /// The final GOAWAY (§6.8), naming the last stream the client opened:
    /// streams above it are not served.
    pub(super) fn final_goaway(&mut self) {
        if matches!(self.goaway, Goaway::Announced(_)) && self.phase != Phase::Failed {
            self.goaway = Goaway::Final(self.last_stream);
            frame::write_goaway(&mut self.out, self.last_stream, ErrorCode::NoError, b"");
        }
    }

    /// The final GOAWAY at once, for a connection closed while idle (its
    /// keep-alive time up, or the server stopping): NO_ERROR with the
    /// highest stream the client opened, every one of which was answered
    /// (RFC 9113 §6.8); streams opened after it are not served, and the
    /// client may retry them elsewhere. Nothing if a final GOAWAY went
    /// already (the last stream id it named may not grow), or the
    /// connection failed (its GOAWAY said so).
    pub fn go_away(&mut self) {
        if self.phase != Phase::Failed && !matches!(self.goaway, Goaway::Final(_)) {
            self.goaway = Goaway::Final(self.last_stream);
            frame::write_goaway(&mut self.out, self.last_stream, ErrorCode::NoError, b"");
        }
    }
}
