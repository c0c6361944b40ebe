//! One HTTP/3 connection's streams, sans-IO (RFC 9114 §6): the client's
//! unidirectional streams by their type (control, QPACK encoder and
//! decoder; push streams refused, unknown types left unread), the rules
//! of the critical ones (SETTINGS first on the control stream, each at
//! most once, never closed), and each request stream's frames: HEADERS,
//! then DATA, then trailers, decoded with [`super::qpack`] into a
//! [`Request`] checked as §4.2 and §4.3 ask. The caller (the worker's
//! QUIC side) moves the bytes and acts on what it is told: a connection
//! error closes the connection with its code, a stream error resets the
//! stream.

use super::frame::{self, Event as FrameEvent, Reader, Settings};
use super::{qpack, varint, Code, Error};
use crate::h2::hpack::write_int;
use crate::h2::Request;

/// Unidirectional stream types (§6.2, RFC 9204 §4.2).
const CONTROL: u64 = 0x00;
const PUSH: u64 = 0x01;
const QPACK_ENCODER: u64 = 0x02;
const QPACK_DECODER: u64 = 0x03;

/// What a connection is held to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections a worker holds before a new client's first packet is
    /// answered with a Retry ([http3] retry_above).
    pub retry_above: usize,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE: larger request heads are answered
    /// 431 (as [`Request::too_large`] says), a HEADERS frame larger than
    /// it unread; one over twice it closes the connection.
    pub max_field_section_size: usize,
}

/// What a request stream's bytes brought.
#[derive(Debug, PartialEq, Eq)]
pub enum RequestEvent<'a> {
    /// The request's head is complete (in [`Conn::request`]).
    Head {
        /// The stream ended with it: the request has no body.
        end: bool,
    },
    /// Bytes of its body.
    Body(&'a [u8]),
    /// Its body ended: with the fields of its trailers that may pass
    /// ([`crate::http::trailers::allowed`]), as field lines (`name:
    /// value\r\n`; empty: none, or none that may pass), as HTTP/2's.
    End(&'a [u8]),
}

/// What is wrong, and whether with the stream alone or the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Reset the stream with this code (and stop reading it).
    Stream(Error),
    /// Close the connection with this code.
    Connection(Error),
}

/// Where a request stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Body,
    Trailers,
}

#[derive(Debug)]
struct RequestStream {
    reader: Reader,
    phase: Phase,
    /// Body bytes so far, for `content-length`.
    body: u64,
    length: Option<u64>,
    /// Its trailers that may pass, as field lines (see [`RequestEvent::End`]).
    trailers: Vec<u8>,
}

/// A client's unidirectional stream.
#[derive(Debug)]
enum Uni {
    /// Its type not read yet: the bytes of it so far.
    Typing(Vec<u8>),
    Control(Reader),
    /// The QPACK encoder stream: what it says builds [`Conn::table`].
    Encoder,
    /// The QPACK decoder stream: only Stream Cancellations may come.
    Decoder(Vec<u8>),
    /// Of a type this server does not know: not read (the caller stops it).
    Ignored,
}

/// A connection's streams by their ID, hashed with FNV-1a rather than
/// SipHash (a lookup or two per stream read: SipHash was 4 % of a small
/// request's instructions). The client picks the IDs, but each map holds
/// at most the streams it may have open (`max_streams`, 4 unidirectional),
/// so colliding IDs cost it probes among those few, no more.
type Streams<V> = crate::hash::FnvMap<u64, V>;

/// One HTTP/3 connection's state.
#[derive(Debug)]
pub struct Conn {
    limits: Limits,
    uni: Streams<Uni>,
    requests: Streams<RequestStream>,
    /// Which critical streams the client opened.
    have: [bool; 3],
    settings: Option<Settings>,
    /// The push IDs of the client's last GOAWAY and MAX_PUSH_ID, which
    /// may not go up and down respectively (§5.2, §7.2.7).
    push_ids: PushIds,
    /// The request being decoded, a trailer section, and QPACK's scratch
    /// space.
    request: Request,
    trailers: Request,
    scratch: (Vec<u8>, Vec<u8>),
    /// The dynamic table the client's QPACK encoder builds.
    table: qpack::Table,
    /// brisk's QPACK decoder stream.
    decoder: DecoderStream,
}

/// brisk's QPACK decoder stream (RFC 9204 §4.2, §4.4): opened the first
/// time it has something to say.
#[derive(Debug, Default)]
struct DecoderStream {
    /// Its bytes not sent yet (its type first): Insert Count Increments,
    /// Section Acknowledgments, Stream Cancellations.
    out: Vec<u8>,
    /// Whether its type is written.
    typed: bool,
}

impl DecoderStream {
    /// Appends an instruction: `value` with an `n`-bit prefix under
    /// `flags`.
    fn say(&mut self, value: u64, n: u32, flags: u8) {
        if !std::mem::replace(&mut self.typed, true) {
            self.out.push(QPACK_DECODER as u8);
        }
        write_int(value as usize, n, flags, &mut self.out);
    }
}

/// A critical stream closed, either side's (§6.2.1, RFC 9204 §4.2):
/// H3_CLOSED_CRITICAL_STREAM, the connection's error.
pub fn closed_critical() -> Error {
    Error::new(
        Code::CLOSED_CRITICAL_STREAM,
        "a control or QPACK stream closed",
    )
}

fn conn_err(code: Code, reason: &'static str) -> Failure {
    Failure::Connection(Error::new(code, reason))
}

impl Conn {
    /// A connection held to `limits`.
    pub fn new(limits: Limits) -> Conn {
        Conn {
            limits,
            uni: Streams::default(),
            requests: Streams::default(),
            have: [false; 3],
            settings: None,
            push_ids: PushIds::default(),
            request: Request::EMPTY,
            trailers: Request::EMPTY,
            scratch: (Vec::new(), Vec::new()),
            table: qpack::Table::default(),
            decoder: DecoderStream::default(),
        }
    }

    /// What the server's control stream starts with: its type and the
    /// server's SETTINGS (§6.2.1).
    pub fn control_stream(&self, out: &mut Vec<u8>) {
        varint::write(CONTROL, out);
        frame::write_settings(self.limits.max_field_section_size as u64, out);
    }

    /// The bytes brisk's QPACK decoder stream has to send (RFC 9204
    /// §4.4), its type first: the caller opens a unidirectional stream
    /// for them the first time there are any, sends them in order, and
    /// says how many went ([`Conn::decoder_sent`]).
    pub fn decoder_bytes(&self) -> &[u8] {
        &self.decoder.out
    }

    /// `n` of [`Conn::decoder_bytes`] went into the stream.
    pub fn decoder_sent(&mut self, n: usize) {
        self.decoder.out.drain(..n);
    }

    /// The client's SETTINGS, once they came.
    pub fn settings(&self) -> Option<&Settings> {
        self.settings.as_ref()
    }

    /// The request whose head was last reported.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// Bytes of the client's unidirectional stream `id` (`fin`: it ended
    /// with them). `Ok(false)`: a stream of a type not read here; the
    /// caller stops it (H3_STREAM_CREATION_ERROR, §6.2) and sends it
    /// nothing more. An error is the connection's.
    pub fn uni(&mut self, id: u64, mut input: &[u8], fin: bool) -> Result<bool, Error> {
        let stream = self.uni.entry(id).or_insert(Uni::Typing(Vec::new()));
        if let Uni::Typing(buf) = stream {
            let had = buf.len();
            buf.extend_from_slice(&input[..input.len().min(8)]);
            let Some((kind, n)) = varint::read(buf) else {
                // (A stream that ends before its type says nothing, and is
                // forgotten: §6.2.)
                if fin {
                    self.uni.remove(&id);
                }
                return Ok(true);
            };
            input = &input[n - had..];
            let slot = match kind {
                CONTROL => Some(0),
                QPACK_ENCODER => Some(1),
                QPACK_DECODER => Some(2),
                PUSH => {
                    return Err(Error::new(
                        Code::STREAM_CREATION_ERROR,
                        "a push stream from a client",
                    ))
                }
                _ => None,
            };
            if let Some(slot) = slot {
                if self.have[slot] {
                    return Err(Error::new(
                        Code::STREAM_CREATION_ERROR,
                        "a second control or QPACK stream",
                    ));
                }
                self.have[slot] = true;
            }
            *stream = match kind {
                CONTROL => Uni::Control(Reader::control()),
                QPACK_ENCODER => Uni::Encoder,
                QPACK_DECODER => Uni::Decoder(Vec::new()),
                _ => Uni::Ignored,
            };
        }
        let (settings, ids) = (&mut self.settings, &mut self.push_ids);
        match stream {
            Uni::Typing(_) => unreachable!("typed above"),
            Uni::Ignored => return Ok(false),
            Uni::Control(reader) => {
                reader.feed(input, &mut |ev| control_frame(settings, ids, ev))?;
            }
            Uni::Encoder => {
                self.table.encoder_stream(input)?;
                // (What it inserted may be referenced from now on.)
                let n = self.table.unacked();
                if n > 0 {
                    // Insert Count Increment (RFC 9204 §4.4.3).
                    self.decoder.say(n, 6, 0x00);
                }
            }
            Uni::Decoder(buf) => decoder_instructions(buf, input)?,
        }
        if fin {
            return Err(closed_critical());
        }
        Ok(true)
    }

    /// The client reset stream `id` (RESET_STREAM): it is forgotten; an
    /// error if it was its control stream or a QPACK one, which may not
    /// close (§6.2.1, RFC 9204 §4.2), by a reset no more than by their end.
    pub fn reset(&mut self, id: u64) -> Result<(), Error> {
        if let Some(Uni::Control(_) | Uni::Encoder | Uni::Decoder(_)) = self.uni.get(&id) {
            return Err(closed_critical());
        }
        self.forget(id);
        Ok(())
    }

    /// Bytes of request stream `id` (`fin`: it ended with them), each
    /// thing they bring told to `on`. After a failure, or at its end, the
    /// stream is forgotten (a stream failure leaves the others as they are).
    pub fn request_data(
        &mut self,
        id: u64,
        input: &[u8],
        fin: bool,
        on: &mut dyn FnMut(RequestEvent<'_>),
    ) -> Result<(), Failure> {
        let max = self.limits.max_field_section_size;
        let stream = self.requests.entry(id).or_insert_with(|| RequestStream {
            reader: Reader::new(max),
            phase: Phase::Head,
            body: 0,
            length: None,
            trailers: Vec::new(),
        });
        let RequestStream {
            reader,
            phase,
            body,
            length,
            trailers: lines,
        } = stream;
        let (request, trailers, scratch) =
            (&mut self.request, &mut self.trailers, &mut self.scratch);
        let (table, decoder) = (&mut self.table, &mut self.decoder);
        // A head is told once it is known whether the stream ends with it.
        let mut pending = false;
        let fed = reader.feed(input, &mut |ev| {
            let failure = match (ev, *phase) {
                (FrameEvent::Data(_), Phase::Head) => {
                    Some(conn_err(Code::FRAME_UNEXPECTED, "DATA before HEADERS"))
                }
                (FrameEvent::Data(d), Phase::Body) => {
                    if std::mem::take(&mut pending) {
                        on(RequestEvent::Head { end: false });
                    }
                    *body += d.len() as u64;
                    match *length {
                        Some(n) if *body > n => Some(Failure::Stream(Error::new(
                            Code::MESSAGE_ERROR,
                            "more body than content-length",
                        ))),
                        // (An empty DATA frame: in its place, and nothing.)
                        _ if d.is_empty() => None,
                        _ => {
                            on(RequestEvent::Body(d));
                            None
                        }
                    }
                }
                (FrameEvent::Frame(frame::HEADERS, p), Phase::Head) => {
                    match head(request, p, (max, false), scratch, (table, decoder, id)) {
                        Err(f) => Some(f),
                        Ok(()) => {
                            *length = request.content_length();
                            *phase = Phase::Body;
                            pending = true;
                            None
                        }
                    }
                }
                (FrameEvent::TooLarge, Phase::Head) => {
                    // Answered 431, its section unread: never to be
                    // acknowledged (RFC 9204 §4.4.2, as `forget` says).
                    request.clear(max, false);
                    request.set_too_large();
                    decoder.say(id, 6, 0x40);
                    (*length, *phase, pending) = (None, Phase::Body, true);
                    None
                }
                (FrameEvent::TooLarge, Phase::Body) => Some(Failure::Stream(Error::new(
                    STREAM,
                    "trailers over the field section size",
                ))),
                (FrameEvent::Frame(frame::HEADERS, p), Phase::Body) => {
                    if std::mem::take(&mut pending) {
                        on(RequestEvent::Head { end: false });
                    }
                    *phase = Phase::Trailers;
                    let decoded = head(trailers, p, (max, true), scratch, (table, decoder, id));
                    if decoded.is_ok() {
                        field_lines(trailers, lines);
                    }
                    decoded.err()
                }
                (
                    FrameEvent::Data(_)
                    | FrameEvent::Frame(frame::HEADERS, _)
                    | FrameEvent::TooLarge,
                    _,
                ) => Some(conn_err(
                    Code::FRAME_UNEXPECTED,
                    "a frame after the trailers",
                )),
                // SETTINGS, GOAWAY, MAX_PUSH_ID, CANCEL_PUSH, PUSH_PROMISE:
                // not on a request stream (§7.2).
                (FrameEvent::Frame(..), _) => Some(conn_err(
                    Code::FRAME_UNEXPECTED,
                    "a control frame on a request stream",
                )),
            };
            // (The reader stops at the first error: carried in an Error.)
            match failure {
                None => Ok(()),
                Some(Failure::Connection(e)) => Err(e),
                Some(Failure::Stream(e)) => Err(Error::new(STREAM, e.reason)),
            }
        });
        let result = match fed {
            Err(e) if e.code == STREAM => {
                Err(Failure::Stream(Error::new(Code::MESSAGE_ERROR, e.reason)))
            }
            Err(e) => Err(Failure::Connection(e)),
            Ok(()) if !fin => {
                if pending {
                    // More may come: the head is told now, its end later.
                    on(RequestEvent::Head { end: false });
                }
                Ok(())
            }
            Ok(()) if !reader.at_boundary() => Err(conn_err(
                Code::FRAME_ERROR,
                "a request stream ends inside a frame",
            )),
            Ok(()) if *phase == Phase::Head => Err(Failure::Stream(Error::new(
                Code::REQUEST_INCOMPLETE,
                "a request stream ends without HEADERS",
            ))),
            Ok(()) if length.is_some_and(|n| n != *body) => Err(Failure::Stream(Error::new(
                Code::MESSAGE_ERROR,
                "less body than content-length",
            ))),
            Ok(()) => {
                if pending {
                    on(RequestEvent::Head { end: true });
                }
                on(RequestEvent::End(lines));
                Ok(())
            }
        };
        if fin || result.is_err() {
            self.requests.remove(&id);
        }
        result
    }

    /// Whether request stream `id` is being read (begun, not ended).
    pub fn reads(&self, id: u64) -> bool {
        self.requests.contains_key(&id)
    }

    /// Whether a request stream has begun its head and not finished it.
    pub fn heads_pending(&self) -> bool {
        self.requests.values().any(|r| r.phase == Phase::Head)
    }

    /// Forgets request stream `id` (reset by the client, or answered and
    /// its rest not wanted).
    pub fn forget(&mut self, id: u64) {
        let stream = self.requests.remove(&id);
        if stream.is_some_and(|r| r.phase != Phase::Trailers) {
            // (Its head, or the trailers that may follow its body, which
            // may reference the dynamic table, will not be read: the
            // encoder no longer waits for their acknowledgement, RFC 9204
            // §4.4.2, "abandons reading".)
            self.decoder.say(id, 6, 0x40);
        }
        self.uni.remove(&id);
    }
}

/// An internal marker: the error the reader stopped at is the stream's
/// (H3_MESSAGE_ERROR), not the connection's. Never sent.
const STREAM: Code = Code(0);

/// Decodes a HEADERS payload into `r` (`trailers`: a trailer section) and
/// checks it: a QPACK failure is the connection's (RFC 9204 §2.2.3), a
/// malformed request the stream's (§4.1.2, H3_MESSAGE_ERROR).
fn head(
    r: &mut Request,
    payload: &[u8],
    (max, trailers): (usize, bool),
    scratch: &mut (Vec<u8>, Vec<u8>),
    (table, decoder, id): (&mut qpack::Table, &mut DecoderStream, u64),
) -> Result<(), Failure> {
    r.clear(max, trailers);
    // Twice the size limit is decoded, so that a request just over it is
    // answered 431 rather than refused (as HTTP/2 does).
    let required = qpack::decode(payload, 2 * max + 1024, table, scratch, &mut |n, v| {
        r.field(n, v)
    })
    .map_err(Failure::Connection)?;
    if required > 0 {
        // Section Acknowledgment (RFC 9204 §4.4.1).
        decoder.say(id, 7, 0x80);
        table.acked_to(required);
    }
    let why = r.finish().or_else(|| {
        // No SETTINGS_ENABLE_CONNECT_PROTOCOL is sent: no :protocol.
        (!trailers && r.protocol().is_some()).then_some("a :protocol without extended CONNECT")
    });
    // (A section over the size is answered 431, whatever it said.)
    let why = why
        .or_else(|| (!trailers && !r.too_large() && !has_authority(r)).then_some("no authority"));
    match why {
        Some(why) => Err(Failure::Stream(Error::new(STREAM, why))),
        None => Ok(()),
    }
}

/// Appends the fields of trailer section `r` that may pass
/// ([`crate::http::trailers::allowed`]) to `lines`, as field lines.
fn field_lines(r: &Request, lines: &mut Vec<u8>) {
    for (name, value) in r.fields() {
        if crate::http::trailers::allowed(name) {
            for part in [name, b": ", value, b"\r\n"] {
                lines.extend_from_slice(part);
            }
        }
    }
}

/// Whether request `r` names its authority as RFC 9114 §4.3.1 wants
/// (unlike HTTP/2's §8.3.1): an `http` or `https` request has a
/// `:authority` or a `host`, and neither is empty.
fn has_authority(r: &Request) -> bool {
    let host = r.fields().find(|(n, _)| *n == b"host").map(|(_, v)| v);
    match (r.authority(), host) {
        (Some([]), _) | (_, Some([])) => false,
        (None, None) => !matches!(r.scheme(), b"http" | b"https"),
        _ => true,
    }
}

/// The client's QPACK decoder stream (RFC 9204 §4.4): brisk's sections
/// reference no dynamic entry, so only a Stream Cancellation may come.
fn decoder_instructions(buf: &mut Vec<u8>, input: &[u8]) -> Result<(), Error> {
    let bad = Error::new(
        Code::QPACK_DECODER_STREAM_ERROR,
        "an acknowledgement or increment for a table that is empty",
    );
    instructions(buf, input, &mut |b, rest| match b & 0xc0 {
        0x40 => match crate::h2::hpack::read_int(rest, 6) {
            Ok((_, n)) => Ok(Some(n)),
            Err(crate::h2::hpack::HpackError::Truncated) => Ok(None),
            Err(_) => Err(bad),
        },
        _ => Err(bad),
    })
}

/// Reads one QPACK stream instruction: given its first byte and the bytes
/// from it on, its length, or `None` when it is not all there yet.
type Instruction<'a> = dyn FnMut(u8, &[u8]) -> Result<Option<usize>, Error> + 'a;

/// Runs `one` over the instructions in `buf` and `input`: it gives the
/// length of the instruction at the start of its slice, or `None` when
/// it is not all there yet (kept for the next bytes, at most 16).
fn instructions(buf: &mut Vec<u8>, input: &[u8], one: &mut Instruction<'_>) -> Result<(), Error> {
    buf.extend_from_slice(input);
    let mut pos = 0;
    while let Some(&b) = buf.get(pos) {
        match one(b, &buf[pos..])? {
            Some(n) => pos += n,
            None => break,
        }
    }
    buf.drain(..pos);
    if buf.len() > 16 {
        return Err(Error::new(
            Code::QPACK_ENCODER_STREAM_ERROR,
            "an instruction too long",
        ));
    }
    Ok(())
}

/// The push IDs a client's GOAWAY and MAX_PUSH_ID frames last named.
#[derive(Debug, Default)]
struct PushIds {
    goaway: Option<u64>,
    max_push_id: Option<u64>,
}

/// A frame of the control stream (§6.2.1, §7.2).
fn control_frame(
    settings: &mut Option<Settings>,
    ids: &mut PushIds,
    ev: FrameEvent<'_>,
) -> Result<(), Error> {
    let (kind, payload) = match ev {
        FrameEvent::Data(_) => (frame::DATA, &[][..]),
        // (Not told on a control stream: its HEADERS are an error.)
        FrameEvent::TooLarge => (frame::HEADERS, &[][..]),
        FrameEvent::Frame(kind, payload) => (kind, payload),
    };
    let id_error = |reason| Err(Error::new(Code::ID_ERROR, reason));
    match (kind, settings.is_some()) {
        (frame::SETTINGS, false) => {
            *settings = Some(frame::parse_settings(payload)?);
            Ok(())
        }
        (_, false) => Err(Error::new(
            Code::MISSING_SETTINGS,
            "the control stream does not open with SETTINGS",
        )),
        (frame::SETTINGS | frame::DATA | frame::HEADERS | frame::PUSH_PROMISE, true) => {
            Err(Error::new(
                Code::FRAME_UNEXPECTED,
                "a frame the control stream may not carry",
            ))
        }
        // A push ID each, and nothing else (§7.1: H3_FRAME_ERROR).
        (frame::GOAWAY | frame::MAX_PUSH_ID | frame::CANCEL_PUSH, true) => {
            let id = match varint::read(payload) {
                Some((id, n)) if n == payload.len() => id,
                _ => return Err(Error::new(Code::FRAME_ERROR, "a malformed push ID")),
            };
            match kind {
                // (The client's last push ID: brisk pushes nothing.)
                frame::GOAWAY if ids.goaway.is_some_and(|last| id > last) => {
                    id_error("a GOAWAY above the one before")
                }
                frame::GOAWAY => {
                    ids.goaway = Some(id);
                    Ok(())
                }
                frame::MAX_PUSH_ID if ids.max_push_id.is_some_and(|last| id < last) => {
                    id_error("a MAX_PUSH_ID below the one before")
                }
                frame::MAX_PUSH_ID => {
                    ids.max_push_id = Some(id);
                    Ok(())
                }
                // §7.2.3: brisk promised no push to cancel.
                _ => id_error("CANCEL_PUSH of a push never promised"),
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
