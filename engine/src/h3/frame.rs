//! HTTP/3 frames (RFC 9114 §7): a type and a length, both varints, then
//! the payload. [`Reader`] takes a stream's bytes as they come and hands
//! out DATA payloads as they arrive (never held whole) and every other
//! frame whole, each bounded; frames of unknown types, and the reserved
//! ones (`0x1f * N + 0x21`), are skipped (§7.2.8, §9); HTTP/2's frame
//! types that HTTP/3 has not (PRIORITY, PING, WINDOW_UPDATE, CONTINUATION)
//! are an error (H3_FRAME_UNEXPECTED, §7.2.8).

use super::{varint, Code, Error};

/// DATA (§7.2.1).
pub const DATA: u64 = 0x0;
/// HEADERS (§7.2.2).
pub const HEADERS: u64 = 0x1;
/// CANCEL_PUSH (§7.2.3).
pub const CANCEL_PUSH: u64 = 0x3;
/// SETTINGS (§7.2.4).
pub const SETTINGS: u64 = 0x4;
/// PUSH_PROMISE (§7.2.5): only a server sends it.
pub const PUSH_PROMISE: u64 = 0x5;
/// GOAWAY (§7.2.6).
pub const GOAWAY: u64 = 0x7;
/// MAX_PUSH_ID (§7.2.7).
pub const MAX_PUSH_ID: u64 = 0xd;

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY (RFC 9204 §5).
pub const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
/// SETTINGS_MAX_FIELD_SECTION_SIZE (§7.2.4.1).
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x6;
/// SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §5).
pub const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x7;

/// The largest payload of a frame other than DATA and HEADERS (SETTINGS
/// with many unknown settings, GOAWAY, ...).
pub const MAX_CONTROL_PAYLOAD: usize = 4096;

/// What [`Reader::feed`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Bytes of a DATA frame's payload, as they arrived.
    Data(&'a [u8]),
    /// A whole frame of another known type: its type and payload.
    Frame(u64, &'a [u8]),
    /// A HEADERS frame over the field section size, but within twice it
    /// (as much as is decoded, to answer 431 rather than refuse): its
    /// payload is skipped unread, as an unknown frame's.
    TooLarge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a frame's type and length.
    Head,
    /// In a DATA frame's payload: so many bytes left.
    Data(u64),
    /// Gathering a frame's payload (kept in `buf`): its type, bytes left.
    Whole(u64, u64),
    /// Skipping an unknown frame's payload: bytes left.
    Skip(u64),
}

/// Reads the frames of one stream.
#[derive(Debug)]
pub struct Reader {
    state: State,
    /// A frame head split between two reads, or a payload gathered.
    buf: Vec<u8>,
    /// The largest HEADERS payload taken (the field section size limit).
    max_headers: usize,
    /// A control stream's: DATA, HEADERS and PUSH_PROMISE are told at
    /// once, their payload not read (the control stream carries none of
    /// them: its caller's error).
    control: bool,
}

impl Reader {
    /// A reader taking HEADERS payloads of at most `max_headers` bytes.
    pub fn new(max_headers: usize) -> Reader {
        Reader {
            state: State::Head,
            buf: Vec::new(),
            max_headers,
            control: false,
        }
    }

    /// A reader for a control stream (see `control`).
    pub fn control() -> Reader {
        Reader {
            control: true,
            ..Reader::new(0)
        }
    }

    /// Whether it stands between two frames (a stream may end only there:
    /// §7.1, H3_FRAME_ERROR otherwise).
    pub fn at_boundary(&self) -> bool {
        self.state == State::Head && self.buf.is_empty()
    }

    /// Reads `input`, telling `on` each DATA piece and whole frame; stops
    /// at the first error, its own or `on`'s.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        on: &mut dyn FnMut(Event<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        while !input.is_empty() {
            match self.state {
                State::Head => {
                    let (kind, len, used) = match self.head(input)? {
                        Some(h) => h,
                        None => return Ok(()),
                    };
                    input = &input[used..];
                    if self.control && matches!(kind, DATA | HEADERS | PUSH_PROMISE) {
                        self.state = if len == 0 {
                            State::Head
                        } else {
                            State::Skip(len)
                        };
                        on(Event::Frame(kind, &[]))?;
                        continue;
                    }
                    self.state = self.start(kind, len)?;
                    match self.state {
                        State::Skip(_) if kind == HEADERS => on(Event::TooLarge)?,
                        State::Whole(kind, 0) => {
                            self.state = State::Head;
                            on(Event::Frame(kind, &[]))?;
                        }
                        // (An empty DATA frame is told too: it may be out
                        // of place, §4.1.)
                        State::Data(0) => {
                            self.state = State::Head;
                            on(Event::Data(&[]))?;
                        }
                        _ => {}
                    }
                }
                State::Data(left) => {
                    let n = input.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let (piece, rest) = input.split_at(n);
                    input = rest;
                    self.state = match left - n as u64 {
                        0 => State::Head,
                        left => State::Data(left),
                    };
                    on(Event::Data(piece))?;
                }
                State::Whole(kind, left) => {
                    let n = input.len().min(left as usize);
                    if self.buf.is_empty() && n as u64 == left {
                        // (All of it in this read: read where it is.)
                        let (payload, rest) = input.split_at(n);
                        input = rest;
                        self.state = State::Head;
                        on(Event::Frame(kind, payload))?;
                        continue;
                    }
                    self.buf.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if left - n as u64 == 0 {
                        self.state = State::Head;
                        let payload = std::mem::take(&mut self.buf);
                        let r = on(Event::Frame(kind, &payload));
                        self.buf = payload;
                        self.buf.clear();
                        r?;
                    } else {
                        self.state = State::Whole(kind, left - n as u64);
                    }
                }
                State::Skip(left) => {
                    let n = input.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    input = &input[n..];
                    self.state = match left - n as u64 {
                        0 => State::Head,
                        left => State::Skip(left),
                    };
                }
            }
        }
        Ok(())
    }

    /// A frame's type and length from `buf` (a head begun before) and
    /// `input`, and how much of `input` they took; `None` (the bytes kept)
    /// when they are not all there yet.
    fn head(&mut self, input: &[u8]) -> Result<Option<(u64, u64, usize)>, Error> {
        let parse = |b: &[u8]| {
            varint::read(b)
                .and_then(|(kind, a)| varint::read(&b[a..]).map(|(len, n)| (kind, len, a + n)))
        };
        if self.buf.is_empty() {
            if let Some(whole) = parse(input) {
                return Ok(Some(whole));
            }
        }
        // At most two varints of 8 bytes: 16 bytes decide.
        let had = self.buf.len();
        let take = input.len().min(16 - had);
        self.buf.extend_from_slice(&input[..take]);
        match parse(&self.buf) {
            Some((kind, len, used)) => {
                self.buf.clear();
                Ok(Some((kind, len, used - had)))
            }
            None if self.buf.len() >= 16 => Err(Error::new(Code::FRAME_ERROR, "bad frame head")),
            None => Ok(None),
        }
    }

    /// What a frame of type `kind` and length `len` reads as.
    fn start(&mut self, kind: u64, len: u64) -> Result<State, Error> {
        match kind {
            DATA => Ok(State::Data(len)),
            // HTTP/2's PRIORITY, PING, WINDOW_UPDATE, CONTINUATION.
            0x2 | 0x6 | 0x8 | 0x9 => {
                Err(Error::new(Code::FRAME_UNEXPECTED, "an HTTP/2 frame type"))
            }
            HEADERS | CANCEL_PUSH | SETTINGS | PUSH_PROMISE | GOAWAY | MAX_PUSH_ID => {
                let max = match kind {
                    HEADERS | PUSH_PROMISE => self.max_headers,
                    _ => MAX_CONTROL_PAYLOAD,
                };
                if len > max as u64 {
                    // (A head just over the size is answered 431, as over
                    // HTTP/1.1 and HTTP/2: see `Event::TooLarge`.)
                    if kind == HEADERS && len <= 2 * max as u64 + 1024 {
                        return Ok(State::Skip(len));
                    }
                    return Err(Error::new(Code::EXCESSIVE_LOAD, "frame too large"));
                }
                Ok(State::Whole(kind, len))
            }
            _ => Ok(if len == 0 {
                State::Head
            } else {
                State::Skip(len)
            }),
        }
    }
}

/// The peer's SETTINGS (§7.2.4), as far as a server uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Settings {
    /// The largest field section it takes (unlimited when absent).
    pub max_field_section_size: Option<u64>,
    /// The QPACK dynamic table it lets the server's encoder use.
    pub qpack_max_table_capacity: u64,
    /// Streams its decoder lets wait for the encoder stream.
    pub qpack_blocked_streams: u64,
}

/// Parses a SETTINGS payload: pairs of varints. HTTP/2's settings and a
/// setting given twice are H3_SETTINGS_ERROR (§7.2.4.1); a payload cut in
/// a pair, H3_FRAME_ERROR; unknown settings are ignored.
pub fn parse_settings(mut payload: &[u8]) -> Result<Settings, Error> {
    let mut s = Settings::default();
    let mut seen: Vec<u64> = Vec::new();
    while !payload.is_empty() {
        let pair = varint::read(payload)
            .and_then(|(id, a)| varint::read(&payload[a..]).map(|(v, b)| (id, v, a + b)));
        let Some((id, value, used)) = pair else {
            return Err(Error::new(Code::FRAME_ERROR, "SETTINGS cut short"));
        };
        payload = &payload[used..];
        match id {
            0x0 | 0x2..=0x5 => {
                return Err(Error::new(Code::SETTINGS_ERROR, "an HTTP/2 setting"));
            }
            SETTINGS_QPACK_MAX_TABLE_CAPACITY => s.qpack_max_table_capacity = value,
            SETTINGS_MAX_FIELD_SECTION_SIZE => s.max_field_section_size = Some(value),
            SETTINGS_QPACK_BLOCKED_STREAMS => s.qpack_blocked_streams = value,
            _ => {}
        }
        seen.push(id);
    }
    seen.sort_unstable();
    if seen.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::new(Code::SETTINGS_ERROR, "a setting given twice"));
    }
    Ok(s)
}

/// Appends a frame head: its type and length.
pub fn write_head(kind: u64, len: u64, out: &mut Vec<u8>) {
    varint::write(kind, out);
    varint::write(len, out);
}

/// Appends the server's SETTINGS frame: the QPACK dynamic table's
/// capacity ([`super::qpack::MAX_CAPACITY`]) with no blocked streams (RFC 9204
/// §3.2.3, §2.1.2), and the field section size it takes.
pub fn write_settings(max_field_section_size: u64, out: &mut Vec<u8>) {
    let mut payload = Vec::with_capacity(16);
    for (id, v) in [
        (
            SETTINGS_QPACK_MAX_TABLE_CAPACITY,
            super::qpack::MAX_CAPACITY as u64,
        ),
        (SETTINGS_QPACK_BLOCKED_STREAMS, 0),
        (SETTINGS_MAX_FIELD_SECTION_SIZE, max_field_section_size),
    ] {
        varint::write(id, &mut payload);
        varint::write(v, &mut payload);
    }
    write_head(SETTINGS, payload.len() as u64, out);
    out.extend_from_slice(&payload);
}

/// Appends a GOAWAY frame naming `id`, the first request stream that
/// will not be served (§5.2).
pub fn write_goaway(id: u64, out: &mut Vec<u8>) {
    write_head(GOAWAY, varint::len(id) as u64, out);
    varint::write(id, out);
}

#[cfg(test)]
mod tests;
