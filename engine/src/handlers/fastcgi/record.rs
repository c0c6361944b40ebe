//! FastCGI 1.0 records, the web server's side, sans-IO.
//!
//! Every record is an 8-byte header (`version` 1, `type`, `requestId`,
//! `contentLength`, `paddingLength`, a reserved byte; numbers big-endian)
//! followed by the content and the padding (spec §3.3). The encoders
//! append to a caller's `Vec<u8>` and allocate nothing of their own; they
//! pad every record's content to a multiple of 8 bytes, as the spec
//! recommends. The [`Decoder`] reads the application's answer as it
//! arrives, split anywhere, and hands out its STDOUT and STDERR data as
//! slices of the input; it holds at most one 8-byte header (or the 8-byte
//! body of END_REQUEST) of its own.

use std::fmt;

/// The only protocol version (`FCGI_VERSION_1`).
pub const VERSION: u8 = 1;
/// Bytes in a record header (`FCGI_HEADER_LEN`).
pub const HEADER: usize = 8;

/// `FCGI_BEGIN_REQUEST`: the web server starts a request.
pub const BEGIN_REQUEST: u8 = 1;
/// `FCGI_ABORT_REQUEST`: the web server gives a request up.
pub const ABORT_REQUEST: u8 = 2;
/// `FCGI_END_REQUEST`: the application has finished a request.
pub const END_REQUEST: u8 = 3;
/// `FCGI_PARAMS`: the stream of name-value pairs (the CGI variables).
pub const PARAMS: u8 = 4;
/// `FCGI_STDIN`: the stream of the request body.
pub const STDIN: u8 = 5;
/// `FCGI_STDOUT`: the stream of the answer (a CGI head, then the body).
pub const STDOUT: u8 = 6;
/// `FCGI_STDERR`: the stream of the application's error messages.
pub const STDERR: u8 = 7;
/// `FCGI_DATA`: the filter role's second stream (brisk never sends it).
pub const DATA: u8 = 8;
/// `FCGI_GET_VALUES`: a management query (brisk never sends it).
pub const GET_VALUES: u8 = 9;
/// `FCGI_GET_VALUES_RESULT`: the answer to [`GET_VALUES`].
pub const GET_VALUES_RESULT: u8 = 10;
/// `FCGI_UNKNOWN_TYPE`: the application's answer to a management record
/// of a type it does not know.
pub const UNKNOWN_TYPE: u8 = 11;

/// `FCGI_RESPONDER`: the role brisk asks for (the CGI/1.1 role).
pub const RESPONDER: u16 = 1;
/// `FCGI_KEEP_CONN`: the application keeps the connection open after the
/// request, for the next one.
pub const KEEP_CONN: u8 = 1;

/// `FCGI_REQUEST_COMPLETE`: the request ended normally.
pub const REQUEST_COMPLETE: u8 = 0;
/// `FCGI_CANT_MPX_CONN`: the application refused a second request on a
/// connection that already has one.
pub const CANT_MPX_CONN: u8 = 1;
/// `FCGI_OVERLOADED`: the application has no resources for the request.
pub const OVERLOADED: u8 = 2;
/// `FCGI_UNKNOWN_ROLE`: the application does not play the role asked for.
pub const UNKNOWN_ROLE: u8 = 3;

/// The most content the encoders put in one record: the largest multiple
/// of 8 under the 16-bit `contentLength`'s 65,535, so a full record needs
/// no padding. Streams longer than this go in several records.
pub const MAX_CONTENT: usize = 0xFFF8;

/// Padding that brings `len` bytes of content to a multiple of 8.
fn padding(len: usize) -> usize {
    len.wrapping_neg() & 7
}

/// Appends a record header.
pub(super) fn header(out: &mut Vec<u8>, kind: u8, id: u16, len: u16, pad: u8) {
    let [id1, id0] = id.to_be_bytes();
    let [len1, len0] = len.to_be_bytes();
    out.extend_from_slice(&[VERSION, kind, id1, id0, len1, len0, pad, 0]);
}

/// Writes one stream's bytes into records of at most [`MAX_CONTENT`]
/// content bytes each. A record is opened when bytes come and closed
/// (its length and padding filled in) when full or at [`Records::close`],
/// so the pieces a caller pushes may cross record boundaries freely.
struct Records<'o> {
    out: &'o mut Vec<u8>,
    kind: u8,
    id: u16,
    /// Where the open record's header is in `out`.
    open: Option<usize>,
}

impl<'o> Records<'o> {
    fn new(out: &'o mut Vec<u8>, kind: u8, id: u16) -> Records<'o> {
        Records {
            out,
            kind,
            id,
            open: None,
        }
    }

    /// Appends `bytes` to the stream: in the open record when they fit
    /// with room to spare (a PARAMS pair's three pieces, nearly always),
    /// else across records.
    #[inline]
    fn push(&mut self, bytes: &[u8]) {
        if self.room() > bytes.len() {
            self.out.extend_from_slice(bytes)
        } else {
            self.push_across(bytes)
        }
    }

    /// How many bytes the open record has room for (none if none is open).
    fn room(&self) -> usize {
        self.open
            .map_or(0, |start| MAX_CONTENT - (self.out.len() - start - HEADER))
    }

    fn push_across(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let start = match self.open {
                Some(start) => start,
                None => {
                    let start = self.out.len();
                    header(self.out, self.kind, self.id, 0, 0);
                    self.open = Some(start);
                    start
                }
            };
            let room = MAX_CONTENT - (self.out.len() - start - HEADER);
            let n = room.min(bytes.len());
            self.out.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if n == room {
                self.close();
            }
        }
    }

    /// Fills in the open record's length and padding.
    fn close(&mut self) {
        if let Some(start) = self.open.take() {
            let len = self.out.len() - start - HEADER;
            let pad = padding(len);
            // (At most MAX_CONTENT by `push`.)
            self.out[start + 4..start + 6].copy_from_slice(&(len as u16).to_be_bytes());
            self.out[start + 6] = pad as u8;
            self.out.resize(self.out.len() + pad, 0);
        }
    }
}

/// Appends a stream's `data` of type `kind` for request `id`, in as many
/// records as it needs; nothing when `data` is empty (an empty record
/// would end the stream: [`end_stream`] writes that one).
pub fn stream(out: &mut Vec<u8>, kind: u8, id: u16, data: &[u8]) {
    let records = data.len().div_ceil(MAX_CONTENT);
    out.reserve(data.len() + records * (HEADER + 7));
    let mut w = Records::new(out, kind, id);
    w.push(data);
    w.close();
}

/// Appends the empty record that ends the stream `kind` of request `id`.
pub fn end_stream(out: &mut Vec<u8>, kind: u8, id: u16) {
    header(out, kind, id, 0, 0);
}

/// Appends `FCGI_BEGIN_REQUEST` for request `id` in the responder role;
/// with `keep_conn` the application keeps the connection after the
/// request (spec §5.1).
pub fn begin_request(out: &mut Vec<u8>, id: u16, keep_conn: bool) {
    header(out, BEGIN_REQUEST, id, 8, 0);
    let [role1, role0] = RESPONDER.to_be_bytes();
    let flags = if keep_conn { KEEP_CONN } else { 0 };
    out.extend_from_slice(&[role1, role0, flags, 0, 0, 0, 0, 0]);
}

/// Appends name-value pairs as `FCGI_PARAMS` records of request `id`
/// ([`Params`]); the stream ends with [`params_end`], so several calls
/// may add to it.
pub fn params<'p>(out: &mut Vec<u8>, id: u16, pairs: impl Iterator<Item = (&'p [u8], &'p [u8])>) {
    let mut w = Params::new(out, id);
    for (name, value) in pairs {
        w.pair(name, value);
    }
    w.close();
}

/// Writes name-value pairs as `FCGI_PARAMS` records of one request (spec
/// §3.4: each length in one byte below 128, else in four with the high
/// bit set). A pair may span two records, as the spec allows. Writes
/// nothing for no pairs.
pub struct Params<'o>(Records<'o>);

impl<'o> Params<'o> {
    /// Starts writing the pairs of request `id` at the end of `out`.
    pub fn new(out: &'o mut Vec<u8>, id: u16) -> Params<'o> {
        Params(Records::new(out, PARAMS, id))
    }

    /// Appends the pair `name`, `value`.
    ///
    /// # Panics
    /// If a name or value is 2 GiB or longer (four bytes cannot say it).
    pub fn pair(&mut self, name: &[u8], value: &[u8]) {
        // (Both lengths in one piece: a push each cost ~100 instructions
        // a request's ~25 pairs.)
        let (mut lengths, mut n) = ([0u8; 8], 0);
        for len in [name.len(), value.len()] {
            if len < 0x80 {
                lengths[n] = len as u8;
                n += 1;
            } else {
                let len = u32::try_from(len)
                    .ok()
                    .filter(|&l| l < 1 << 31)
                    .expect("a FastCGI name or value under 2 GiB");
                lengths[n..n + 4].copy_from_slice(&(len | 1 << 31).to_be_bytes());
                n += 4;
            }
        }
        let pieces = [&lengths[..n], name, value];
        let total = n + name.len() + value.len();
        let w = &mut self.0;
        if w.room() > total {
            // (One test of the room and one reservation for the three.)
            w.out.reserve(total);
            for piece in pieces {
                w.out.extend_from_slice(piece);
            }
        } else {
            for piece in pieces {
                w.push_across(piece);
            }
        }
    }

    /// Fills in the last record's length and padding (the stream goes on
    /// until [`params_end`]).
    pub fn close(mut self) {
        self.0.close();
    }
}

/// Appends the empty `FCGI_PARAMS` record that ends the pairs.
pub fn params_end(out: &mut Vec<u8>, id: u16) {
    end_stream(out, PARAMS, id);
}

/// Appends request body bytes as `FCGI_STDIN` records of request `id`;
/// nothing when `data` is empty.
pub fn stdin(out: &mut Vec<u8>, id: u16, data: &[u8]) {
    stream(out, STDIN, id, data);
}

/// Appends the empty `FCGI_STDIN` record that ends the request body.
pub fn stdin_end(out: &mut Vec<u8>, id: u16) {
    end_stream(out, STDIN, id);
}

/// Appends `FCGI_ABORT_REQUEST` for request `id` (the client has gone):
/// the application answers with END_REQUEST (spec §5.4).
pub fn abort_request(out: &mut Vec<u8>, id: u16) {
    header(out, ABORT_REQUEST, id, 0, 0);
}

/// What the application said, as the [`Decoder`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// Bytes of the answer (never empty): a CGI head, then the body.
    Stdout(&'a [u8]),
    /// Bytes of the application's error stream (never empty).
    Stderr(&'a [u8]),
    /// The request is over (spec §5.5). `protocol_status` is
    /// [`REQUEST_COMPLETE`], or a value the spec does not define (the
    /// three refusals it does define are [`Error`]s).
    End {
        /// The application's exit status.
        app_status: u32,
        /// How the request ended.
        protocol_status: u8,
    },
}

/// What the application sent that can never be a valid answer to our one
/// request. Once the decoder has returned one, it returns it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A record of a version other than 1.
    Version(u8),
    /// A record for a request id other than ours (brisk never multiplexes).
    OtherRequest(u16),
    /// Under our request id, a record type only the web server sends
    /// (BEGIN_REQUEST, ABORT_REQUEST, PARAMS, STDIN, DATA) or a
    /// management type (GET_VALUES, GET_VALUES_RESULT, UNKNOWN_TYPE),
    /// which belongs to request id 0.
    Unexpected(u8),
    /// An END_REQUEST whose content is not 8 bytes long.
    EndLength(u16),
    /// STDOUT (or STDERR, with the type given) data after the empty record
    /// that ended that stream.
    AfterStreamEnd(u8),
    /// A record for our request after its END_REQUEST.
    AfterEnd,
    /// END_REQUEST with `FCGI_CANT_MPX_CONN`.
    CantMpxConn,
    /// END_REQUEST with `FCGI_OVERLOADED`.
    Overloaded,
    /// END_REQUEST with `FCGI_UNKNOWN_ROLE`.
    UnknownRole,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Version(v) => write!(f, "FastCGI record of version {v}"),
            Error::OtherRequest(id) => write!(f, "FastCGI record for request {id}, not ours"),
            Error::Unexpected(t) => write!(f, "FastCGI record of type {t} from the application"),
            Error::EndLength(n) => write!(f, "FastCGI END_REQUEST of {n} bytes, not 8"),
            Error::AfterStreamEnd(t) => write!(f, "FastCGI stream {t} goes on after its end"),
            Error::AfterEnd => f.write_str("FastCGI record after END_REQUEST"),
            Error::CantMpxConn => f.write_str("FastCGI application cannot multiplex"),
            Error::Overloaded => f.write_str("FastCGI application overloaded"),
            Error::UnknownRole => {
                f.write_str("FastCGI application does not play the responder role")
            }
        }
    }
}

impl std::error::Error for Error {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a record header into `buf`.
    Head,
    /// In STDOUT or STDERR content: `left` bytes of it, then `pad`.
    Data {
        stderr: bool,
        left: u16,
        pad: u8,
    },
    /// Reading END_REQUEST's 8 content bytes into `buf`, then `pad`.
    EndBody {
        pad: u8,
    },
    /// Skipping `left` bytes (padding, or a record ignored); with `end`,
    /// END_REQUEST's padding, after which the end is told.
    Skip {
        left: u32,
        end: bool,
    },
    Failed(Error),
}

/// Reads the application's records for one request, fed as they arrive.
#[derive(Debug, Clone)]
pub struct Decoder {
    id: u16,
    state: State,
    /// The header being read, or END_REQUEST's body.
    buf: [u8; HEADER],
    /// How much of `buf` is read.
    have: u8,
    stdout_ended: bool,
    stderr_ended: bool,
    ended: bool,
}

impl Decoder {
    /// A decoder for the answer to request `id` (not 0, which is for
    /// management records).
    pub fn new(id: u16) -> Decoder {
        debug_assert_ne!(id, 0);
        Decoder {
            id,
            state: State::Head,
            buf: [0; HEADER],
            have: 0,
            stdout_ended: false,
            stderr_ended: false,
            ended: false,
        }
    }

    /// Whether END_REQUEST (and its padding) has been read.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Reads from `input` up to the next event. Returns how many bytes it
    /// consumed and the event, if any; without an event it has consumed
    /// all of `input` (a partial header is kept inside), so the caller
    /// never keeps bytes for it. Call again with the rest after an event.
    ///
    /// Management records (request id 0) and records of types the spec
    /// does not define are skipped: the spec asks nothing of a web server
    /// that receives them (only applications answer unknown management
    /// types, with UNKNOWN_TYPE, spec §4.2).
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Option<Event<'a>>), Error> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match self.state {
                State::Failed(e) => return Err(e),
                State::Skip { left: 0, end } => {
                    self.state = State::Head;
                    if end {
                        self.ended = true;
                        let b = &self.buf;
                        let event = Event::End {
                            app_status: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                            protocol_status: b[4],
                        };
                        return Ok((pos, Some(event)));
                    }
                }
                _ if rest.is_empty() => return Ok((pos, None)),
                State::Skip { left, end } => {
                    let n = rest.len().min(left as usize);
                    pos += n;
                    self.state = State::Skip {
                        left: left - n as u32,
                        end,
                    };
                }
                State::Data { stderr, left, pad } => {
                    let n = rest.len().min(left as usize);
                    let data = &rest[..n];
                    pos += n;
                    self.state = match left - n as u16 {
                        0 => State::Skip {
                            left: pad.into(),
                            end: false,
                        },
                        left => State::Data { stderr, left, pad },
                    };
                    let event = if stderr {
                        Event::Stderr(data)
                    } else {
                        Event::Stdout(data)
                    };
                    return Ok((pos, Some(event)));
                }
                State::Head | State::EndBody { .. } => {
                    let have = self.have as usize;
                    let n = rest.len().min(HEADER - have);
                    self.buf[have..have + n].copy_from_slice(&rest[..n]);
                    pos += n;
                    self.have += n as u8;
                    if self.have as usize == HEADER {
                        self.have = 0;
                        let next = match self.state {
                            State::EndBody { pad } => self.end_body(pad),
                            _ => self.start_record(),
                        };
                        match next {
                            Ok(state) => self.state = state,
                            Err(e) => {
                                self.state = State::Failed(e);
                                return Err(e);
                            }
                        }
                    }
                }
            }
        }
    }

    /// What follows the header in `buf`.
    fn start_record(&mut self) -> Result<State, Error> {
        let b = self.buf;
        if b[0] != VERSION {
            return Err(Error::Version(b[0]));
        }
        let kind = b[1];
        let id = u16::from_be_bytes([b[2], b[3]]);
        let len = u16::from_be_bytes([b[4], b[5]]);
        let pad = b[6];
        let skip = State::Skip {
            left: u32::from(len) + u32::from(pad),
            end: false,
        };
        if id == 0 {
            return Ok(skip);
        }
        if id != self.id {
            return Err(Error::OtherRequest(id));
        }
        if self.ended {
            return Err(Error::AfterEnd);
        }
        match kind {
            STDOUT | STDERR => {
                let stderr = kind == STDERR;
                let ended = if stderr {
                    &mut self.stderr_ended
                } else {
                    &mut self.stdout_ended
                };
                if len == 0 {
                    *ended = true;
                    Ok(skip)
                } else if *ended {
                    Err(Error::AfterStreamEnd(kind))
                } else {
                    Ok(State::Data {
                        stderr,
                        left: len,
                        pad,
                    })
                }
            }
            END_REQUEST if len == 8 => Ok(State::EndBody { pad }),
            END_REQUEST => Err(Error::EndLength(len)),
            BEGIN_REQUEST..=UNKNOWN_TYPE => Err(Error::Unexpected(kind)),
            _ => Ok(skip),
        }
    }

    /// What follows END_REQUEST's body in `buf` (spec §5.5).
    fn end_body(&self, pad: u8) -> Result<State, Error> {
        match self.buf[4] {
            CANT_MPX_CONN => Err(Error::CantMpxConn),
            OVERLOADED => Err(Error::Overloaded),
            UNKNOWN_ROLE => Err(Error::UnknownRole),
            _ => Ok(State::Skip {
                left: pad.into(),
                end: true,
            }),
        }
    }
}
