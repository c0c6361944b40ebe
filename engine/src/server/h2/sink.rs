//! HTTP/2's sink for produced answers ([`crate::server::run::Sink`]): the
//! head goes as HEADERS at once, the body joins the stream's pieces,
//! which the worker frames as DATA within the windows (`h2_send`). The
//! producer is asked for more only while less than [`STREAM_OUT_CAP`]
//! of its body waits for a window, so a client that reads slowly holds a
//! bounded amount. A request's `Expect: 100-continue` is answered with an
//! interim HEADERS (`:status 100`) when its producer reads its body.
//! HTTP/2 frames the body itself: no chunked coding, and
//! the connection stays open. A HEAD answer (or a bodiless status) ends
//! at its HEADERS and its producer is stopped. A body past the length
//! the head gave is cut there, and a cut answer's stream is reset
//! (INTERNAL_ERROR) once what it queued is framed, instead of ended.

use std::fs::File;
use std::rc::Rc;

use super::{Answer, Piece, Scratch, Session};
use crate::handlers::pipe::ReplyHead;
use crate::http::response::{Connection, Framing, Head, Stamp};
use crate::http::Status;
use crate::server::run::{Sink, Wanted};

/// A stream's body buffered for its window before its producer is asked
/// for more.
pub const STREAM_OUT_CAP: u64 = 64 * 1024;

/// The head a producer's `head` is written as by a protocol that frames
/// bodies itself (HTTP/2, HTTP/3), for a request that is `head_only`
/// (HEAD) or not, and whether the answer ends with it.
pub fn framed_head(head: &ReplyHead, head_only: bool) -> (Head<'_>, bool) {
    let status = Status(head.status);
    let framing = match head.content_length {
        _ if status.is_bodiless() => Framing::Bodiless,
        Some(n) => Framing::Length(n),
        None => Framing::Close,
    };
    let ends = head_only || status.is_bodiless();
    // (No reason phrase: a process's own is dropped.)
    let written = Head {
        status: head.status,
        reason: b"",
        headers: &head.headers,
        framing,
        connection: Connection::Default,
    };
    (written, ends)
}

/// What a protocol that frames bodies itself does with a produced
/// answer's head, interim answers and the request body its producer
/// takes; the rest of [`StreamSink`] (the body's pieces, its length,
/// trailers, a cut) is the same for HTTP/2 and HTTP/3.
pub trait Frames {
    /// What the protocol keeps of an answer of its own.
    type Own;
    /// Bytes of `a` that wait for its stream (counted against
    /// [`STREAM_OUT_CAP`]).
    fn waiting(a: &Answer<Self::Own>) -> u64;
    /// Sends `head` (stamped) as `a`'s HEADERS; `ends`: the stream ends
    /// with it.
    fn head(
        &mut self,
        a: &mut Answer<Self::Own>,
        head: (&Head<'_>, &Stamp<'_>, bool),
        scratch: &mut Scratch,
    );
    /// Sends an interim answer `status` with field `lines` on `a`'s
    /// stream.
    fn interim(&mut self, a: &mut Answer<Self::Own>, interim: (u16, &[u8]), s: &mut Scratch);
    /// `a`'s producer took `n` bytes of its request's body.
    fn took_body(&mut self, a: &mut Answer<Self::Own>, n: usize);
}

/// HTTP/2 frames a stream's head and interim answers in its session,
/// and gives flow-control credit back for the body its producer took.
impl Frames for &mut Session {
    type Own = ();

    fn waiting(a: &Answer) -> u64 {
        a.queued()
    }

    fn head(
        &mut self,
        a: &mut Answer,
        (head, stamp, ends): (&Head<'_>, &Stamp<'_>, bool),
        scratch: &mut Scratch,
    ) {
        self.send_head(a.id, ends, head, stamp, scratch);
    }

    fn interim(&mut self, a: &mut Answer, interim: (u16, &[u8]), scratch: &mut Scratch) {
        self.send_interim(a.id, interim, scratch);
    }

    fn took_body(&mut self, a: &mut Answer, n: usize) {
        // (The window credit of body bytes its producer has read.)
        self.conn.release(a.id, n);
    }
}

/// The sink of one produced answer on one stream of a protocol that
/// frames bodies itself (`F`: HTTP/2 or HTTP/3), borrowed for one pump
/// (the answer is out of its session's list meanwhile).
pub struct StreamSink<'a, F: Frames> {
    /// The protocol's framing (HTTP/2: the connection's session).
    pub frames: F,
    /// The stream's answer: its pieces, length and flags.
    pub answer: &'a mut Answer<F::Own>,
    /// The worker's scratch space (an HPACK or QPACK block, a name).
    pub scratch: &'a mut Scratch,
    /// `Server` and `Date`.
    pub stamp: &'a Stamp<'a>,
    /// A HEAD request.
    pub head_only: bool,
}

/// HTTP/2's sink.
pub type H2Sink<'a> = StreamSink<'a, &'a mut Session>;

impl<F: Frames> Sink for StreamSink<'_, F> {
    fn room(&self) -> usize {
        STREAM_OUT_CAP.saturating_sub(F::waiting(self.answer)) as usize
    }

    fn head(&mut self, reply: &ReplyHead) -> Wanted {
        let a = &mut *self.answer;
        let (written, ends) = framed_head(reply, self.head_only);
        let stamp = reply.own.stamp(self.stamp);
        self.frames.head(a, (&written, &stamp, ends), self.scratch);
        a.discard = ends;
        a.expect = reply.content_length;
        match ends {
            // (Its stream ended with the HEADERS; the answer ends when the
            // run says so: a process's output is still read and dropped.)
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
            // (In a buffer of a piece sent before, if any.)
            a.pieces.push_back(Piece::Bytes(self.scratch.copy(take), 0));
        }
        over == 0
    }

    fn file(&mut self, file: File, len: u64) {
        // (Framed as DATA read from the file as a static file's are.)
        let a = &mut *self.answer;
        a.body_len += len;
        a.pieces.push_back(Piece::File(Rc::new(file), 0, len));
    }

    fn finish(&mut self, trailers: &[u8]) -> u64 {
        let a = &mut *self.answer;
        a.open = false;
        if !a.discard {
            // (Sent as the stream's last HEADERS once its DATA is out.)
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

    fn interim(&mut self, status: u16, lines: &[u8]) {
        // (A 100 for a client that waits for it before its DATA, RFC 9110
        // §10.1.1; an upstream's 103.)
        self.frames
            .interim(self.answer, (status, lines), self.scratch);
    }

    fn took_body(&mut self, n: usize) {
        self.frames.took_body(self.answer, n);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;
    use crate::h2::frame::{self, flag, kind, Head as FrameHead, HEAD_LEN};
    use crate::h2::{hpack, Limits, PREFACE};

    /// A session with stream 1 open (a GET for `/`), its SETTINGS taken.
    fn session() -> Session {
        let now = Instant::now();
        let mut s = Session::new(Arc::new(Limits::default()), now);
        let mut input = PREFACE.to_vec();
        frame::write_settings(&mut input, &[]);
        // :method GET, :scheme http, :path /, :authority h
        let block = [0x82, 0x86, 0x84, 0x01, 0x01, b'h'];
        frame::write_head(
            &mut input,
            block.len(),
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            1,
        );
        input.extend_from_slice(&block);
        let mut pos = 0;
        while !matches!(s.conn.read(&input, &mut pos, now), crate::h2::Event::Stall) {}
        assert_eq!(pos, input.len());
        s.conn.drain_out(&mut Vec::new());
        s
    }

    /// A frame sent: kind, flags, stream, payload.
    type Frame = (u8, u8, u32, Vec<u8>);

    /// The frames the session queued.
    fn sent(s: &mut Session) -> Vec<Frame> {
        let mut out = Vec::new();
        s.conn.drain_out(&mut out);
        let mut b = &out[..];
        let mut v = Vec::new();
        while b.len() >= HEAD_LEN {
            let h = FrameHead::read(b[..HEAD_LEN].try_into().unwrap());
            let end = HEAD_LEN + h.len as usize;
            v.push((h.kind, h.flags, h.stream, b[HEAD_LEN..end].to_vec()));
            b = &b[end..];
        }
        v
    }

    fn fields(block: &[u8]) -> Vec<String> {
        let mut d = hpack::Decoder::new(4096);
        let mut v = Vec::new();
        d.decode(block, 1 << 16, &mut |n, val| {
            v.push(format!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(val)
            ))
        })
        .unwrap();
        v
    }

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

    const STAMP: Stamp<'static> = Stamp {
        server: b"brisk",
        date: b"<date>",
        #[cfg(feature = "http3")]
        alt_svc: b"",
    };

    /// Runs `f` on a sink for stream 1, a HEAD request or not; returns
    /// the answer and the frames sent.
    fn with_sink(head_only: bool, f: impl FnOnce(&mut H2Sink<'_>)) -> (Answer, Vec<Frame>) {
        let mut s = session();
        let mut a = Answer::waiting(1, Instant::now());
        a.open = true;
        let mut scratch = Scratch::default();
        let mut sink = StreamSink {
            frames: &mut s,
            answer: &mut a,
            scratch: &mut scratch,
            stamp: &STAMP,
            head_only,
        };
        f(&mut sink);
        let frames = sent(&mut s);
        (a, frames)
    }

    fn bytes(a: &Answer) -> Vec<String> {
        let show = |p: &Piece| match p {
            Piece::Bytes(b, at) => String::from_utf8_lossy(&b[*at..]).into_owned(),
            Piece::File(_, _, len) => format!("<file {len}>"),
            other => format!("{other:?}"),
        };
        a.pieces.iter().map(show).collect()
    }

    #[test]
    fn the_head_goes_as_headers_and_the_body_as_pieces() {
        let (a, frames) = with_sink(false, |sink| {
            assert_eq!(sink.head(&reply(200, Some(5))), Wanted::Body);
            assert!(sink.data(b"hel"));
            assert_eq!(sink.room() as u64, STREAM_OUT_CAP - 3);
            assert!(sink.data(b"lo"));
            assert_eq!(sink.finish(b""), 0);
        });
        assert_eq!(frames.len(), 1);
        let (k, flags, stream, block) = &frames[0];
        assert_eq!((*k, *flags, *stream), (kind::HEADERS, flag::END_HEADERS, 1));
        assert_eq!(
            fields(block),
            [
                ":status: 200",
                "server: brisk",
                "date: <date>",
                "x-a: 1",
                "content-length: 5"
            ]
        );
        assert_eq!(bytes(&a), ["hel", "lo"]);
        assert_eq!(
            (a.body_len, a.open, a.broken, a.discard),
            (5, false, false, false)
        );
    }

    #[test]
    fn body_bytes_the_producer_took_give_their_credit_back() {
        let half = Limits::default().connection_window / 2;
        let (_, frames) = with_sink(false, |sink| {
            sink.took_body(half as usize - 1);
            sink.took_body(1);
        });
        // (In one WINDOW_UPDATE once half the connection's window is due.)
        assert_eq!(frames.len(), 1);
        let (k, _, stream, payload) = &frames[0];
        assert_eq!((*k, *stream), (kind::WINDOW_UPDATE, 0));
        assert_eq!(payload[..], half.to_be_bytes());
    }

    #[test]
    fn a_continue_is_an_interim_headers_before_the_answers() {
        let (_, frames) = with_sink(false, |sink| {
            sink.interim(100, b"");
            sink.head(&reply(201, Some(0)));
        });
        let shown: Vec<(u8, u8, Vec<String>)> = frames
            .iter()
            .map(|(k, f, _, block)| (*k, *f, fields(block)))
            .collect();
        assert_eq!(
            shown[0],
            (
                kind::HEADERS,
                flag::END_HEADERS,
                vec![":status: 100".to_string()]
            )
        );
        assert_eq!(shown[1].2[0], ":status: 201");
    }

    #[test]
    fn trailers_wait_for_the_last_data_and_a_head_answer_has_none() {
        let (a, frames) = with_sink(false, |sink| {
            sink.head(&reply(200, None));
            assert!(sink.data(b"hi"));
            assert_eq!(sink.finish(b"grpc-status: 0\r\n"), 0);
        });
        // (Only the HEADERS went: the worker frames the rest.)
        assert_eq!(frames.len(), 1);
        assert_eq!(bytes(&a), ["hi"]);
        assert_eq!(a.trailers, b"grpc-status: 0\r\n");
        assert!(!a.open);
        let (a, _) = with_sink(true, |sink| {
            sink.head(&reply(200, None));
            sink.finish(b"grpc-status: 0\r\n");
        });
        assert!(a.trailers.is_empty());
    }

    #[test]
    fn a_head_answer_ends_at_its_headers() {
        let (a, frames) = with_sink(true, |sink| {
            assert_eq!(sink.head(&reply(200, Some(5))), Wanted::Stop);
        });
        let (k, flags, ..) = &frames[0];
        assert_eq!(
            (*k, *flags),
            (kind::HEADERS, flag::END_HEADERS | flag::END_STREAM)
        );
        assert!(a.discard && a.pieces.is_empty());
        let (_, frames) = with_sink(false, |sink| {
            assert_eq!(sink.head(&reply(304, None)), Wanted::Stop);
        });
        assert_eq!(frames[0].1, flag::END_HEADERS | flag::END_STREAM);
    }

    #[test]
    fn a_body_past_its_length_is_cut_there_and_a_short_one_counted() {
        let (a, _) = with_sink(false, |sink| {
            sink.head(&reply(200, Some(4)));
            assert!(sink.data(b"ab"));
            assert!(!sink.data(b"cdef"));
            sink.cut();
        });
        assert_eq!(bytes(&a), ["ab", "cd"]);
        assert!(a.broken && !a.open);
        let (a, _) = with_sink(false, |sink| {
            sink.head(&reply(200, Some(4)));
            sink.data(b"ab");
            assert_eq!(sink.finish(b""), 2);
        });
        assert_eq!(a.body_len, 2);
    }

    #[test]
    fn room_is_what_waits_for_the_window() {
        let (a, _) = with_sink(false, |sink| {
            sink.head(&reply(200, None));
            assert!(sink.data(&[b'x'; STREAM_OUT_CAP as usize]));
            assert_eq!(sink.room(), 0);
            sink.answer.pieces.clear();
            assert_eq!(sink.room() as u64, STREAM_OUT_CAP);
            sink.file(File::open("/dev/null").unwrap(), 7);
            sink.abort();
        });
        assert!(a.pieces.is_empty() && a.broken);
        assert_eq!(a.body_len, STREAM_OUT_CAP + 7);
    }
}
