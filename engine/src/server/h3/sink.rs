//! HTTP/3's sink for produced answers: HTTP/2's
//! ([`StreamSink`]: the body joins the stream's pieces, bounded by
//! `STREAM_OUT_CAP`, cut at the length the head gave, no chunked coding,
//! a HEAD answer without DATA) with HTTP/3's framing: the head goes as a
//! HEADERS frame ahead of the body in the answer's framed bytes, which
//! the worker moves into the stream as fast as it takes them
//! (`h3_send`), with the pieces framed as DATA; the stream of a cut
//! answer is reset (H3_INTERNAL_ERROR) instead of finished;
//! `Expect: 100-continue` is answered with an interim HEADERS when the
//! producer reads the body.

use super::{head, Answer};
use crate::http::response::{Head, Stamp};
use crate::server::h2::sink::{Frames, StreamSink};
use crate::server::h2::Scratch;

/// HTTP/3's framing of a produced answer: its HEADERS (and an interim
/// 100) go into the answer's framed bytes ahead of its body's DATA.
pub struct H3Frames;

/// HTTP/3's sink.
pub type H3Sink<'a> = StreamSink<'a, H3Frames>;

impl Frames for H3Frames {
    type Own = super::Framed;

    fn waiting(a: &Answer) -> u64 {
        a.queued() + a.own.left()
    }

    fn head(
        &mut self,
        a: &mut Answer,
        (head, stamp, _): (&Head<'_>, &Stamp<'_>, bool),
        scratch: &mut Scratch,
    ) {
        head::encode(head, stamp, &mut a.own.bytes, &mut scratch.name, None);
    }

    fn interim(&mut self, a: &mut Answer, interim: (u16, &[u8]), scratch: &mut Scratch) {
        let Scratch { block, name, .. } = scratch;
        head::encode_interim(interim, &mut a.own.bytes, block, name);
    }

    fn took_body(&mut self, a: &mut Answer, n: usize) {
        // (Its stream, read no further than the producer's input had
        // room, is read on: QUIC gives the credit back as it is read.)
        a.own.read_more |= n > 0;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::handlers::pipe::ReplyHead;
    use crate::server::h2::sink::STREAM_OUT_CAP;
    use crate::server::run::{Sink, Wanted};

    const STAMP: Stamp<'static> = Stamp {
        server: b"brisk",
        date: b"d",
        #[cfg(feature = "http3")]
        alt_svc: b"",
    };

    fn reply(status: u16, len: Option<u64>) -> ReplyHead {
        ReplyHead {
            len: 0,
            status,
            reason: None,
            headers: b"X-A: 1\r\n".to_vec(),
            content_length: len,
            chunked: false,
            own: Default::default(),
        }
    }

    fn with_sink(head_only: bool, f: impl FnOnce(&mut H3Sink<'_>)) -> Answer {
        let mut a = Answer::waiting(0, Instant::now());
        a.open = true;
        let mut scratch = Scratch::default();
        f(&mut StreamSink {
            frames: H3Frames,
            answer: &mut a,
            scratch: &mut scratch,
            stamp: &STAMP,
            head_only,
        });
        a
    }

    #[test]
    fn the_head_is_a_headers_frame_and_the_body_pieces_cut_at_its_length() {
        let a = with_sink(false, |sink| {
            sink.interim(100, b"");
            assert_eq!(sink.head(&reply(200, Some(4))), Wanted::Body);
            assert!(sink.data(b"ab"));
            assert_eq!(
                sink.room() as u64,
                STREAM_OUT_CAP - 2 - sink.answer.own.bytes.len() as u64
            );
            assert!(!sink.data(b"cdef"));
            sink.cut();
        });
        // The interim 100 (HEADERS of 4 bytes: the section's prefix and
        // static entry 63, `:status 100`), then the answer's HEADERS.
        assert_eq!(a.own.bytes[..6], [0x01, 0x04, 0x00, 0x00, 0xff, 0x00]);
        assert_eq!(a.own.bytes[6], 0x01);
        assert_eq!(a.body_len, 4);
        assert!(a.broken && !a.open);
    }

    #[test]
    fn a_head_answer_has_no_body() {
        let a = with_sink(true, |sink| {
            assert_eq!(sink.head(&reply(200, Some(5))), Wanted::Stop);
            sink.data(b"hello");
            assert_eq!(sink.finish(b"x: 1\r\n"), 5);
        });
        assert!(a.discard && a.pieces.is_empty() && a.trailers.is_empty());
    }
}
