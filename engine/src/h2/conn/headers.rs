//! Header blocks: HEADERS and its CONTINUATION frames gathered (bounded
//! in frames and bytes), decoded (HPACK stays in step even for blocks
//! that are refused), checked, and turned into a stream's request or
//! trailers; streams over the concurrent limit are refused here.

use super::*;

impl Conn {
    pub(super) fn headers<'a>(
        &mut self,
        id: u32,
        block: &[u8],
        self_dep: bool,
        end_stream: bool,
        end_headers: bool,
        now: Instant,
    ) -> Option<Event<'a>> {
        if id.is_multiple_of(2) {
            return Some(self.fail(ErrorCode::Protocol, "even stream id from a client"));
        }
        let then = if let Some(s) = self.stream(id) {
            if !s.recv_open {
                // §5.1 half-closed (remote): STREAM_CLOSED.
                Then::Refuse(ErrorCode::StreamClosed)
            } else if !end_stream {
                // §8.1: trailers end the stream.
                Then::Refuse(ErrorCode::Protocol)
            } else {
                Then::Trailers
            }
        } else if id <= self.last_stream {
            if self.was_reset(id) {
                Then::Drop
            } else if self.closed_lately.contains(&id) {
                // §5.1: a closed stream takes no HEADERS.
                return Some(self.fail(ErrorCode::StreamClosed, "HEADERS on a closed stream"));
            } else {
                // §5.1.1: ids only grow.
                return Some(self.fail(ErrorCode::Protocol, "stream id lower than a previous one"));
            }
        } else {
            self.last_stream = id;
            self.last_opened = now;
            if matches!(self.goaway, Goaway::Final(last) if id > last) {
                Then::Drop
            } else if self_dep {
                Then::Refuse(ErrorCode::Protocol)
            } else if self.streams.len() >= self.limits.max_concurrent_streams as usize {
                // §5.1.2: over SETTINGS_MAX_CONCURRENT_STREAMS.
                Then::Refuse(ErrorCode::RefusedStream)
            } else {
                Then::Open
            }
        };
        self.block_buf.clear();
        self.block = Some(Block {
            stream: id,
            end_stream,
            frames: 0,
            then,
        });
        self.gather(block, end_headers, now)
    }

    pub(super) fn continuation<'a>(
        &mut self,
        id: u32,
        block: &[u8],
        end_headers: bool,
        now: Instant,
    ) -> Option<Event<'a>> {
        let (stream, frames) = match &mut self.block {
            Some(b) => {
                b.frames += 1;
                (b.stream, b.frames)
            }
            None => return Some(self.fail(ErrorCode::Protocol, "CONTINUATION without HEADERS")),
        };
        if stream != id {
            return Some(self.fail(ErrorCode::Protocol, "CONTINUATION on another stream"));
        }
        if frames > self.limits.max_continuations {
            return Some(self.fail(ErrorCode::EnhanceYourCalm, "too many CONTINUATION frames"));
        }
        if block.is_empty() && !end_headers {
            if let Some(ev) = self.spend_empty(now) {
                return Some(ev);
            }
        }
        self.gather(block, end_headers, now)
    }

    /// Adds a fragment to the header block; once it is complete, decodes it.
    fn gather<'a>(
        &mut self,
        fragment: &[u8],
        end_headers: bool,
        now: Instant,
    ) -> Option<Event<'a>> {
        // CONTINUATION flood: the encoded block is bounded too (twice the
        // header list size: between the two, the request gets 431).
        let bound = 2 * self.limits.max_header_list_size as usize;
        if self.block_buf.len() + fragment.len() > bound {
            return Some(self.fail(ErrorCode::EnhanceYourCalm, "header block too large"));
        }
        if !end_headers {
            self.block_buf.extend_from_slice(fragment);
            return None;
        }
        let b = self.block.take()?;
        let block = if self.block_buf.is_empty() {
            fragment
        } else {
            self.block_buf.extend_from_slice(fragment);
            &self.block_buf[..]
        };
        let max_list = self.limits.max_header_list_size as usize;
        let request = self.request.get_or_insert_with(Box::default);
        request.clear(max_list, b.then == Then::Trailers);
        let decoded = self
            .decoder
            .decode(block, 2 * max_list + 1024, &mut |n, v| request.field(n, v));
        self.block_buf.clear();
        if let Err(e) = decoded {
            let code = match e {
                hpack::HpackError::TooLarge => ErrorCode::EnhanceYourCalm,
                _ => ErrorCode::Compression,
            };
            return Some(self.fail(code, e.reason()));
        }
        let malformed = self.request.as_mut().and_then(|r| r.finish());
        match b.then {
            Then::Drop => None,
            // Refused, like a cancel, costs us a block's decoding: it is
            // counted with resets.
            Then::Refuse(code) => self.fault_stream(b.stream, code, now),
            Then::Trailers => {
                if malformed.is_some() {
                    return self.fault_stream(b.stream, ErrorCode::Protocol, now);
                }
                self.end_body(b.stream, &[], true, now)
            }
            Then::Open => {
                if malformed.is_some() {
                    // §8.1.1: a malformed request is a stream error.
                    self.last_stream = b.stream;
                    return self.fault_stream(b.stream, ErrorCode::Protocol, now);
                }
                self.open(b.stream, b.end_stream, now)
            }
        }
    }

    /// Opens stream `id` for the request just decoded.
    pub(super) fn open<'a>(
        &mut self,
        id: u32,
        end_stream: bool,
        now: Instant,
    ) -> Option<Event<'a>> {
        let content_length = self.request().content_length();
        if end_stream && content_length.is_some_and(|n| n > 0) {
            // §8.1.1: content-length and the DATA sent must agree.
            return self.fault_stream(id, ErrorCode::Protocol, now);
        }
        self.streams.push(Stream {
            id,
            recv_open: !end_stream,
            send_open: true,
            recv_window: self.limits.stream_window as i64,
            recv_unacked: 0,
            send_window: self.peer.initial_window,
            content_length,
            received: 0,
            remaining: 0,
            discard: None,
            paused: false,
        });
        if self.request().too_large() {
            // 431 (RFC 6585 §5): the head is over the header list size.
            let mut block = Vec::with_capacity(8);
            self.encoder().begin(&mut block);
            hpack::encode_status(431, &mut block);
            self.send_headers(id, &block, true);
            if !end_stream {
                // Its body is not wanted: read and dropped, up to a
                // connection window's worth (§8.1).
                self.discard_body(id, self.limits.connection_window as u64);
            }
            return None;
        }
        Some(Event::Request {
            stream: id,
            end_stream,
        })
    }
}
