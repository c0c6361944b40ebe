//! HTTP/3's sink for produced answers ([`crate::server::run::Sink`]): the
//! head goes as a HEADERS frame ahead of the stream's body, the body
//! joins the stream's pieces, which the worker frames as DATA as fast as
//! the stream takes them (`h3_send`). The producer is asked for more only
//! while less than [`STREAM_OUT_CAP`] of its body waits, so a client that
//! reads slowly holds a bounded amount. As over HTTP/2: no chunked
//! coding, a HEAD answer (or a bodiless status) has no DATA and its
//! producer is stopped, a body past the length the head gave is cut
//! there and the stream of a cut answer is reset (H3_INTERNAL_ERROR)
//! instead of finished; `Expect: 100-continue` is answered with an
//! interim HEADERS when the producer reads the body.

use std::fs::File;
use std::rc::Rc;

use super::{head, Answer};
use crate::handlers::pipe::ReplyHead;
use crate::http::response::Stamp;
use crate::server::h2::sink::{framed_head, STREAM_OUT_CAP};
use crate::server::h2::{Piece, Scratch};
use crate::server::run::{Sink, Wanted};

/// The sink of one produced answer on one stream, borrowed for one pump.
pub struct H3Sink<'a> {
    /// The stream's answer: its frames and pieces, length and flags.
    pub answer: &'a mut Answer,
    /// The worker's scratch space (a QPACK section, a field name).
    pub scratch: &'a mut Scratch,
    /// `Server` and `Date`.
    pub stamp: &'a Stamp<'a>,
    /// A HEAD request.
    pub head_only: bool,
}

impl Sink for H3Sink<'_> {
    fn room(&self) -> usize {
        STREAM_OUT_CAP.saturating_sub(self.answer.buffered()) as usize
    }

    fn head(&mut self, reply: &ReplyHead) -> Wanted {
        let a = &mut *self.answer;
        let (written, ends) = framed_head(reply, self.head_only);
        let Scratch { block, name, .. } = self.scratch;
        let stamp = reply.own.stamp(self.stamp);
        head::encode(&written, &stamp, &mut a.framed, (block, name), None);
        a.discard = ends;
        a.expect = reply.content_length;
        match ends {
            true => Wanted::Stop,
            false => Wanted::Body,
        }
    }

    fn data(&mut self, bytes: &[u8]) -> bool {
        let a = &mut *self.answer;
        // A body past the length the head gave is cut there.
        let over = a
            .expect
            .map_or(0, |n| (a.body_len + bytes.len() as u64).saturating_sub(n));
        let take = &bytes[..bytes.len() - over as usize];
        if !take.is_empty() && !a.discard {
            a.body_len += take.len() as u64;
            a.pieces.push_back(Piece::Bytes(take.to_vec(), 0));
        }
        over == 0
    }

    fn file(&mut self, file: File, len: u64) {
        let a = &mut *self.answer;
        a.body_len += len;
        a.pieces.push_back(Piece::File(Rc::new(file), 0, len));
    }

    fn finish(&mut self, trailers: &[u8]) -> u64 {
        let a = &mut *self.answer;
        a.open = false;
        if !a.discard {
            a.trailers.extend_from_slice(trailers);
        }
        a.expect.map_or(0, |n| n.saturating_sub(a.body_len))
    }

    fn cut(&mut self) {
        self.answer.open = false;
        self.answer.broken = true;
    }

    fn abort(&mut self) {
        self.cut();
        self.answer.pieces.clear();
    }

    fn continue_body(&mut self) {
        // (A client that waits for it before its DATA, RFC 9110 §10.1.1.)
        head::encode_interim(100, &mut self.answer.framed, &mut self.scratch.block);
    }

    fn took_body(&mut self, n: usize) {
        // (Its stream, read no further than the producer's input had
        // room, is read on: QUIC gives the credit back as it is read.)
        self.answer.read_more |= n > 0;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

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
        f(&mut H3Sink {
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
            sink.continue_body();
            assert_eq!(sink.head(&reply(200, Some(4))), Wanted::Body);
            assert!(sink.data(b"ab"));
            assert_eq!(
                sink.room() as u64,
                STREAM_OUT_CAP - 2 - sink.answer.framed.len() as u64
            );
            assert!(!sink.data(b"cdef"));
            sink.cut();
        });
        // The interim 100 (HEADERS of 4 bytes: the section's prefix and
        // static entry 63, `:status 100`), then the answer's HEADERS.
        assert_eq!(a.framed[..6], [0x01, 0x04, 0x00, 0x00, 0xff, 0x00]);
        assert_eq!(a.framed[6], 0x01);
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
