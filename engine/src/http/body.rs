//! Request body framing: Content-Length and chunked decoding, sans-IO.
//!
//! The decoder is a byte-level state machine so that input may arrive split
//! at any point (even one byte at a time) and give the same result. Chunk
//! data and Content-Length bodies are handed to the sink in slices of the
//! input, never copied.

use super::grammar::{hex_value, is_field_byte, is_ows, is_tchar};
use super::parse::{BodyFraming, ParseError};
use super::Status;

/// Limits applied while reading a body.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// Largest decoded body; larger → 413.
    pub max_body: u64,
    /// Longest chunk-extension per chunk; longer → 400.
    pub max_chunk_ext: usize,
    /// Largest trailer section; larger → 431.
    pub max_trailers: usize,
}

/// Where the decoder is inside a chunk-ext (RFC 9112 §7.1.1):
/// `*( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ext {
    /// Right after the last size digit.
    AfterSize,
    /// Whitespace after the size: only `;` may follow.
    BwsSemi,
    /// After `;`, before the name.
    NameStart,
    Name,
    /// Whitespace after a name: `=`, `;` or the end may follow.
    AfterName,
    /// After `=`, before the value.
    ValueStart,
    Token,
    Quoted,
    QuotedEscape,
    /// After a value: `;` or the end may follow.
    AfterValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Content-Length body with this many bytes still to come.
    Length(u64),
    /// Reading chunk-size hex digits.
    Size,
    /// Reading a chunk-ext (or waiting for the CR that ends the size line).
    Ext(Ext),
    /// CR of the chunk-size line seen, LF expected.
    SizeLf,
    /// Chunk data with this many bytes still to come.
    Data(u64),
    /// CR expected after chunk data.
    DataCr,
    /// LF expected after chunk data.
    DataLf,
    /// At the start of a trailer line, or of the final CRLF.
    TrailerStart,
    TrailerName,
    TrailerValue,
    /// CR of a trailer line seen, LF expected.
    TrailerLf,
    /// CR of the final CRLF seen, LF expected.
    EndLf,
    Done,
    /// A previous error; every later call repeats it.
    Failed(ParseError),
}

/// Decodes a request body incrementally.
#[derive(Debug)]
pub struct BodyDecoder {
    state: State,
    limits: BodyLimits,
    /// Body bytes decoded so far (chunked only), against `max_body`.
    decoded: u64,
    /// The chunk size being read, and how many digits it had.
    size: u64,
    digits: u8,
    /// Bytes of the current chunk-ext.
    ext_len: usize,
    /// Bytes of trailer field lines so far.
    trailer_len: usize,
}

const fn bad(reason: &'static str) -> ParseError {
    ParseError::bad_request(reason)
}

const TOO_LARGE: ParseError = ParseError {
    status: Status::CONTENT_TOO_LARGE,
    reason: "request body too large",
};

/// A u64 chunk size has at most 16 hex digits; more is refused rather than
/// risking an overflow (leading zeros that long are not sent in practice).
const MAX_SIZE_DIGITS: u8 = 16;

/// qdtext / the character after a backslash in a quoted-string (RFC 9110 §5.6.4).
fn is_qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff)
}

impl BodyDecoder {
    /// Starts decoding a body with this framing. A `Content-Length` over
    /// the limit is refused at once with 413.
    pub fn new(framing: BodyFraming, limits: &BodyLimits) -> Result<BodyDecoder, ParseError> {
        let state = match framing {
            BodyFraming::None | BodyFraming::Length(0) => State::Done,
            BodyFraming::Length(n) if n > limits.max_body => return Err(TOO_LARGE),
            BodyFraming::Length(n) => State::Length(n),
            BodyFraming::Chunked => State::Size,
        };
        Ok(BodyDecoder {
            state,
            limits: *limits,
            decoded: 0,
            size: 0,
            digits: 0,
            ext_len: 0,
            trailer_len: 0,
        })
    }

    /// Bounds the body at `max` bytes from now on: the router has found
    /// whose body it is (`limits.max_body`, or a `[[webdav]]` rule's
    /// `max_upload`), after the decoder was made with the largest bound
    /// any request may have.
    pub fn bound(&mut self, max: u64) {
        self.limits.max_body = max;
    }

    /// Passes every byte on, with no end of its own: the client's side of
    /// a tunnel (after a 101, RFC 9110 §7.8), which ends with the
    /// connection.
    pub fn tunnel() -> BodyDecoder {
        BodyDecoder {
            state: State::Length(u64::MAX),
            limits: BodyLimits {
                max_body: u64::MAX,
                max_chunk_ext: 0,
                max_trailers: 0,
            },
            decoded: 0,
            size: 0,
            digits: 0,
            ext_len: 0,
            trailer_len: 0,
        }
    }

    /// Feeds `input`; every piece of decoded body data is passed to `sink`.
    /// Returns how many bytes of `input` were consumed. Bytes after the end
    /// of the body are not consumed (they belong to the next request).
    pub fn decode(
        &mut self,
        input: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<usize, ParseError> {
        self.decode_keeping(input, sink, None)
    }

    /// As [`BodyDecoder::decode`], and a chunked body's trailer field
    /// lines kept in `trailers` as [`BodyDecoder::decode_in_place`] does.
    pub fn decode_keeping(
        &mut self,
        input: &[u8],
        sink: &mut dyn FnMut(&[u8]),
        mut trailers: Option<&mut Vec<u8>>,
    ) -> Result<usize, ParseError> {
        let mut pos = 0;
        while let Some((n, data)) = self.step_at(input, pos, trailers.as_deref_mut())? {
            if data {
                sink(&input[pos..pos + n]);
            }
            pos += n;
        }
        Ok(pos)
    }

    /// Decodes `buf` where it is: its body data moved to its start (never
    /// forward: a chunk's framing only shrinks it; a `Content-Length`
    /// body stays where it is), and the rest cut off. Returns how many
    /// bytes of the input it consumed (fewer than it had: bytes followed
    /// the body's end). On an error, `buf` holds what decoded before it.
    /// A chunked body's trailer field lines, as they came (`Name: value`
    /// CRLF each, checked), are appended to `trailers` when given: they
    /// go on with the body (a proxied answer's to the client, RFC 9110
    /// §6.5).
    pub fn decode_in_place(
        &mut self,
        buf: &mut Vec<u8>,
        mut trailers: Option<&mut Vec<u8>>,
    ) -> Result<usize, ParseError> {
        let (mut pos, mut out) = (0, 0);
        let consumed = loop {
            match self.step_at(buf, pos, trailers.as_deref_mut()) {
                Ok(Some((n, data))) => {
                    if data {
                        if out != pos {
                            buf.copy_within(pos..pos + n, out);
                        }
                        out += n;
                    }
                    pos += n;
                }
                Ok(None) => break Ok(pos),
                Err(e) => break Err(e),
            }
        };
        buf.truncate(out);
        consumed
    }

    /// One step of decoding at `input[pos..]`: how many bytes it took,
    /// and whether they are body data (else framing, a trailer line's
    /// byte appended to `trailers` if given); none at the end of the
    /// input or of the body. An error fails the decoder for good.
    fn step_at(
        &mut self,
        input: &[u8],
        pos: usize,
        trailers: Option<&mut Vec<u8>>,
    ) -> Result<Option<(usize, bool)>, ParseError> {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        if pos >= input.len() {
            return Ok(None);
        }
        let b = input[pos];
        let step = match self.state {
            State::Done => return Ok(None),
            State::Length(remaining) | State::Data(remaining) => {
                let n = take(remaining, input.len() - pos);
                self.after_data(remaining - n as u64);
                return Ok(Some((n, true)));
            }
            State::TrailerStart | State::TrailerName | State::TrailerValue | State::TrailerLf
                if trailers.is_some() =>
            {
                // (The CR of the section's last, empty line is not a
                // field's.)
                let ends = self.state == State::TrailerStart && b == b'\r';
                let step = self.step(b);
                if let (Some(t), false, Ok(())) = (trailers, ends, &step) {
                    t.push(b);
                }
                step
            }
            _ => self.step(b),
        };
        match step {
            Ok(()) => Ok(Some((1, false))),
            Err(e) => {
                self.state = State::Failed(e);
                Err(e)
            }
        }
    }

    /// A body framed by its length, not complete: how many bytes are
    /// still to come.
    pub fn length_left(&self) -> Option<u64> {
        match self.state {
            State::Length(left) => Some(left),
            _ => None,
        }
    }

    /// `n` bytes of a body framed by its length went by without passing
    /// through the decoder (relayed as they are, see [`Self::length_left`]).
    pub fn skip_length(&mut self, n: u64) {
        if let State::Length(left) = self.state {
            self.after_data(left - n.min(left));
        }
    }

    /// Whether the whole body (and for chunked, the trailers) has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    fn after_data(&mut self, remaining: u64) {
        self.state = match (self.state, remaining) {
            (State::Length(_), 0) => State::Done,
            (State::Length(_), r) => State::Length(r),
            (_, 0) => State::DataCr,
            (_, r) => State::Data(r),
        };
    }

    /// Advances over one byte of framing (everything but data).
    fn step(&mut self, b: u8) -> Result<(), ParseError> {
        self.state = match self.state {
            State::Size => return self.size_digit(b),
            State::Ext(ext) => {
                if b == b'\r' {
                    return self.end_size_line(ext);
                }
                self.ext_len += 1;
                if self.ext_len > self.limits.max_chunk_ext {
                    return Err(bad("chunk extension too long"));
                }
                State::Ext(next_ext(ext, b)?)
            }
            State::SizeLf if b == b'\n' => self.start_chunk(),
            State::SizeLf => return Err(bad("chunk-size line not ended by CRLF")),
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataLf if b == b'\n' => {
                self.size = 0;
                self.digits = 0;
                self.ext_len = 0;
                State::Size
            }
            State::DataCr | State::DataLf => return Err(bad("chunk data not followed by CRLF")),
            State::TrailerStart => match b {
                b'\r' => State::EndLf,
                // RFC 9112 §5.2: obs-fold is refused in trailers as in heads.
                b' ' | b'\t' => return Err(bad("obsolete line folding in trailer")),
                b if is_tchar(b) => self.trailer_byte(State::TrailerName)?,
                _ => return Err(bad("invalid character in trailer name")),
            },
            State::TrailerName => match b {
                b':' => self.trailer_byte(State::TrailerValue)?,
                b if is_tchar(b) => self.trailer_byte(State::TrailerName)?,
                _ => return Err(bad("invalid character in trailer name")),
            },
            State::TrailerValue => match b {
                b'\r' => self.trailer_byte(State::TrailerLf)?,
                b if is_field_byte(b) => self.trailer_byte(State::TrailerValue)?,
                _ => return Err(bad("invalid character in trailer value")),
            },
            State::TrailerLf if b == b'\n' => self.trailer_byte(State::TrailerStart)?,
            State::TrailerLf => return Err(bad("trailer line not ended by CRLF")),
            State::EndLf if b == b'\n' => State::Done,
            State::EndLf => return Err(bad("trailer section not ended by CRLF")),
            // Data states and the end states are handled by `decode`.
            State::Length(_) | State::Data(_) | State::Done | State::Failed(_) => self.state,
        };
        Ok(())
    }

    fn size_digit(&mut self, b: u8) -> Result<(), ParseError> {
        let Some(v) = hex_value(b) else {
            if self.digits == 0 {
                return Err(bad("invalid chunk size"));
            }
            self.state = State::Ext(Ext::AfterSize);
            return self.step(b);
        };
        self.digits += 1;
        if self.digits > MAX_SIZE_DIGITS {
            return Err(bad("chunk size too long"));
        }
        self.size = (self.size << 4) | u64::from(v);
        // The size only grows with more digits: refuse as soon as it is
        // certain the body will not fit.
        if self.decoded.saturating_add(self.size) > self.limits.max_body {
            return Err(TOO_LARGE);
        }
        Ok(())
    }

    fn end_size_line(&mut self, ext: Ext) -> Result<(), ParseError> {
        match ext {
            Ext::AfterSize | Ext::Name | Ext::AfterName | Ext::Token | Ext::AfterValue => {
                self.state = State::SizeLf;
                Ok(())
            }
            Ext::BwsSemi => Err(bad("whitespace after chunk size")),
            Ext::Quoted | Ext::QuotedEscape => Err(bad("unterminated quoted chunk extension")),
            Ext::NameStart | Ext::ValueStart => Err(bad("incomplete chunk extension")),
        }
    }

    fn start_chunk(&mut self) -> State {
        if self.size == 0 {
            State::TrailerStart
        } else {
            self.decoded += self.size;
            State::Data(self.size)
        }
    }

    /// Counts one byte of a trailer field line and moves to `next`.
    fn trailer_byte(&mut self, next: State) -> Result<State, ParseError> {
        self.trailer_len += 1;
        if self.trailer_len > self.limits.max_trailers {
            return Err(ParseError {
                status: Status::HEADER_FIELDS_TOO_LARGE,
                reason: "trailer section too large",
            });
        }
        Ok(next)
    }
}

/// How many of `avail` input bytes belong to a body part with `remaining` left.
fn take(remaining: u64, avail: usize) -> usize {
    usize::try_from(remaining).map_or(avail, |r| r.min(avail))
}

/// The chunk-ext state after byte `b` (never CR, handled by the caller).
fn next_ext(ext: Ext, b: u8) -> Result<Ext, ParseError> {
    let ws = is_ows(b);
    let next = match ext {
        Ext::AfterSize | Ext::BwsSemi if ws => Ext::BwsSemi,
        Ext::AfterSize | Ext::BwsSemi | Ext::Name | Ext::AfterName | Ext::AfterValue
            if b == b';' =>
        {
            Ext::NameStart
        }
        Ext::Token if b == b';' => Ext::NameStart,
        Ext::NameStart if ws => Ext::NameStart,
        Ext::NameStart | Ext::Name if is_tchar(b) => Ext::Name,
        Ext::Name | Ext::AfterName if ws => Ext::AfterName,
        Ext::Name | Ext::AfterName if b == b'=' => Ext::ValueStart,
        Ext::ValueStart if ws => Ext::ValueStart,
        Ext::ValueStart if b == b'"' => Ext::Quoted,
        Ext::ValueStart | Ext::Token if is_tchar(b) => Ext::Token,
        Ext::Token | Ext::AfterValue if ws => Ext::AfterValue,
        Ext::Quoted if b == b'"' => Ext::AfterValue,
        Ext::Quoted if b == b'\\' => Ext::QuotedEscape,
        Ext::Quoted | Ext::QuotedEscape if is_qdtext(b) || b == b'"' || b == b'\\' => Ext::Quoted,
        _ => return Err(bad("invalid chunk extension")),
    };
    Ok(next)
}

#[cfg(test)]
mod tests;
