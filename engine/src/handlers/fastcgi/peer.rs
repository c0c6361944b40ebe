//! The application's side of FastCGI, kept small: it reads what
//! [`record`](super::record)'s encoders write and writes what its
//! [`Decoder`](super::record::Decoder) reads. For tests, the fuzz target
//! and stand-in applications; brisk itself never plays this side.

use super::record::{
    end_stream, header, stream, Decoder, Error, Event, END_REQUEST, HEADER, STDERR, STDOUT,
};

/// One whole record, as [`read_record`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The `version` byte.
    pub version: u8,
    /// The record type.
    pub kind: u8,
    /// The request id (0 for management records).
    pub id: u16,
    /// The content.
    pub content: &'a [u8],
    /// The padding after it.
    pub padding: &'a [u8],
}

impl Record<'_> {
    /// The record's size on the wire.
    pub fn size(&self) -> usize {
        HEADER + self.content.len() + self.padding.len()
    }
}

/// The record at the start of `input`, if it is all there.
pub fn read_record(input: &[u8]) -> Option<Record<'_>> {
    let b = input.get(..HEADER)?;
    let len = usize::from(u16::from_be_bytes([b[4], b[5]]));
    let pad = usize::from(b[6]);
    let body = input.get(HEADER..HEADER + len + pad)?;
    Some(Record {
        version: b[0],
        kind: b[1],
        id: u16::from_be_bytes([b[2], b[3]]),
        content: &body[..len],
        padding: &body[len..],
    })
}

/// A name and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The name-value pair at the start of a PARAMS stream's bytes (spec
/// §3.4), and how many bytes it took; `None` if it is not all there.
pub fn read_pair(stream: &[u8]) -> Option<(Pair<'_>, usize)> {
    fn length(s: &[u8], at: &mut usize) -> Option<usize> {
        let first = *s.get(*at)?;
        if first < 0x80 {
            *at += 1;
            return Some(first.into());
        }
        let b = s.get(*at..*at + 4)?;
        *at += 4;
        Some((u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7FFF_FFFF) as usize)
    }
    let mut at = 0;
    let name_len = length(stream, &mut at)?;
    let value_len = length(stream, &mut at)?;
    let name = stream.get(at..at + name_len)?;
    let value = stream.get(at + name_len..at + name_len + value_len)?;
    Some(((name, value), at + name_len + value_len))
}

/// Appends answer bytes as `FCGI_STDOUT` records (nothing for none).
pub fn stdout(out: &mut Vec<u8>, id: u16, data: &[u8]) {
    stream(out, STDOUT, id, data);
}

/// Appends error-stream bytes as `FCGI_STDERR` records (nothing for none).
pub fn stderr(out: &mut Vec<u8>, id: u16, data: &[u8]) {
    stream(out, STDERR, id, data);
}

/// Appends the empty `FCGI_STDOUT` record that ends the answer.
pub fn stdout_end(out: &mut Vec<u8>, id: u16) {
    end_stream(out, STDOUT, id);
}

/// Appends `FCGI_END_REQUEST` (spec §5.5).
pub fn end_request(out: &mut Vec<u8>, id: u16, app_status: u32, protocol_status: u8) {
    header(out, END_REQUEST, id, 8, 0);
    out.extend_from_slice(&app_status.to_be_bytes());
    out.extend_from_slice(&[protocol_status, 0, 0, 0]);
}

/// An [`Event`] owned, with the data of adjacent events of one stream
/// joined, so that feeding the same bytes in other pieces gives the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// STDOUT data.
    Stdout(Vec<u8>),
    /// STDERR data.
    Stderr(Vec<u8>),
    /// END_REQUEST.
    End {
        /// The application's exit status.
        app_status: u32,
        /// How the request ended.
        protocol_status: u8,
    },
}

/// Feeds `pieces` to a [`Decoder`] for request `id` and collects what it
/// says, up to the first error (returned beside).
///
/// # Panics
/// If the decoder breaks its contract: consuming more than it was given,
/// stopping without an event before the end of its input, giving data
/// that is empty or not a slice of its input.
pub fn decode_all<'p>(
    id: u16,
    pieces: impl IntoIterator<Item = &'p [u8]>,
) -> (Vec<Said>, Option<Error>) {
    let mut dec = Decoder::new(id);
    let mut said: Vec<Said> = Vec::new();
    for piece in pieces {
        let mut rest = piece;
        while !rest.is_empty() {
            let (used, event) = match dec.decode(rest) {
                Ok(step) => step,
                Err(e) => return (said, Some(e)),
            };
            assert!(used <= rest.len());
            let Some(event) = event else {
                assert_eq!(used, rest.len(), "stopped early without an event");
                break;
            };
            assert!(used > 0, "an event from no bytes");
            let range = rest[..used].as_ptr_range();
            let mut join = |data: &[u8], stderr: bool| {
                assert!(!data.is_empty());
                assert!(range.start <= data.as_ptr() && data.as_ptr_range().end <= range.end);
                match (said.last_mut(), stderr) {
                    (Some(Said::Stdout(d)), false) | (Some(Said::Stderr(d)), true) => {
                        d.extend_from_slice(data)
                    }
                    _ if stderr => said.push(Said::Stderr(data.to_vec())),
                    _ => said.push(Said::Stdout(data.to_vec())),
                }
            };
            match event {
                Event::Stdout(data) => join(data, false),
                Event::Stderr(data) => join(data, true),
                Event::End {
                    app_status,
                    protocol_status,
                } => said.push(Said::End {
                    app_status,
                    protocol_status,
                }),
            }
            rest = &rest[used..];
        }
    }
    (said, None)
}
