//! QPACK's dynamic table, the decoder's side (RFC 9204 §3.2, §4.3): what
//! the client's encoder stream inserts, bounded by the capacity brisk
//! advertises, looked up by absolute index from field sections. brisk
//! advertises no blocked streams, so a section never waits for an
//! insertion: the client references only entries brisk acknowledged
//! (Insert Count Increment, sent by the caller as [`Table::unacked`]
//! says).

use std::collections::VecDeque;

use super::{string, STATIC};
use crate::h2::hpack::{read_int, HpackError};
use crate::h3::{Code, Error};

/// The dynamic table's capacity brisk advertises
/// (`SETTINGS_QPACK_MAX_TABLE_CAPACITY`): the most bytes (names, values
/// and 32 a field, §3.2.1) a client may keep in it, per connection.
pub const MAX_CAPACITY: usize = 4096;

/// The longest encoder-stream instruction kept while its end has not
/// come: an entry as large as the capacity, Huffman-coded at its worst
/// (30 bits a byte), and its integers.
const MAX_INSTRUCTION: usize = MAX_CAPACITY * 4 + 32;

fn encoder_error(reason: &'static str) -> Error {
    Error::new(Code::QPACK_ENCODER_STREAM_ERROR, reason)
}

/// One connection's dynamic table, as its client's encoder builds it.
#[derive(Debug, Default)]
pub struct Table {
    /// The capacity the encoder set (at most [`MAX_CAPACITY`]).
    capacity: usize,
    /// The entries' size (§3.2.1).
    size: usize,
    /// The entries, oldest first: the name's length, then name and value.
    entries: VecDeque<(usize, Box<[u8]>)>,
    /// Insertions so far (the Insert Count, §3.2.4).
    inserted: u64,
    /// Insertions acknowledged to the encoder so far.
    acked: u64,
    /// An instruction whose end has not come yet.
    partial: Vec<u8>,
}

impl Table {
    /// The Insert Count: entries inserted since the connection began.
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// Insertions not yet acknowledged to the encoder, now counted as
    /// acknowledged: the caller sends them as an Insert Count Increment
    /// (§4.4.3) when not 0.
    pub fn unacked(&mut self) -> u64 {
        let n = self.inserted - self.acked;
        self.acked = self.inserted;
        n
    }

    /// A section acknowledged with Required Insert Count `required`
    /// acknowledges the insertions up to it too (§4.4.1).
    pub fn acked_to(&mut self, required: u64) {
        self.acked = self.acked.max(required);
    }

    /// The entry of absolute index `index` (§3.2.4), if it is still in.
    pub fn get(&self, index: u64) -> Option<(&[u8], &[u8])> {
        let first = self.inserted - self.entries.len() as u64;
        let at = usize::try_from(index.checked_sub(first)?).ok()?;
        let (name_len, bytes) = self.entries.get(at)?;
        Some(bytes.split_at(*name_len))
    }

    /// Reads the encoder stream's bytes `input` (§4.3): the instructions
    /// they complete are carried out, a partial one kept for the next.
    pub fn encoder_stream(&mut self, input: &[u8]) -> Result<(), Error> {
        let mut partial = std::mem::take(&mut self.partial);
        partial.extend_from_slice(input);
        let mut pos = 0;
        let (mut name, mut value) = (Vec::new(), Vec::new());
        while pos < partial.len() {
            match self.instruction(&partial[pos..], (&mut name, &mut value))? {
                Some(n) => pos += n,
                None => break,
            }
        }
        partial.drain(..pos);
        if partial.len() > MAX_INSTRUCTION {
            return Err(encoder_error("an encoder instruction too long"));
        }
        self.partial = partial;
        Ok(())
    }

    /// Carries out the instruction at the start of `b`: its length, or
    /// `None` if it is not all there yet.
    fn instruction(
        &mut self,
        b: &[u8],
        (name, value): (&mut Vec<u8>, &mut Vec<u8>),
    ) -> Result<Option<usize>, Error> {
        let first = b[0];
        name.clear();
        value.clear();
        if first & 0x80 != 0 {
            // Insert with Name Reference: 1 T index(6), then the value.
            let Some((index, n)) = int(b, 6)? else {
                return Ok(None);
            };
            let Some(m) = text(&b[n..], 7, value)? else {
                return Ok(None);
            };
            if first & 0x40 != 0 {
                let &(sn, _) = STATIC
                    .get(index as usize)
                    .ok_or(encoder_error("static index out of range"))?;
                name.extend_from_slice(sn.as_bytes());
            } else {
                let (sn, _) = self.relative(index)?;
                name.extend_from_slice(sn);
            }
            self.insert(name, value)?;
            Ok(Some(n + m))
        } else if first & 0x40 != 0 {
            // Insert with Literal Name: 0 1 H length(5), the name, then
            // the value.
            let Some(n) = text(b, 5, name)? else {
                return Ok(None);
            };
            let Some(m) = text(&b[n..], 7, value)? else {
                return Ok(None);
            };
            self.insert(name, value)?;
            Ok(Some(n + m))
        } else if first & 0x20 != 0 {
            // Set Dynamic Table Capacity: 0 0 1 capacity(5).
            let Some((capacity, n)) = int(b, 5)? else {
                return Ok(None);
            };
            if capacity as usize > MAX_CAPACITY {
                return Err(encoder_error("a capacity above the one advertised"));
            }
            self.capacity = capacity as usize;
            self.evict(0);
            Ok(Some(n))
        } else {
            // Duplicate: 0 0 0 index(5).
            let Some((index, n)) = int(b, 5)? else {
                return Ok(None);
            };
            let (sn, sv) = self.relative(index)?;
            name.extend_from_slice(sn);
            value.extend_from_slice(sv);
            self.insert(name, value)?;
            Ok(Some(n))
        }
    }

    /// The entry an encoder instruction names by relative index (§3.2.5).
    fn relative(&self, index: u32) -> Result<(&[u8], &[u8]), Error> {
        self.inserted
            .checked_sub(u64::from(index) + 1)
            .and_then(|abs| self.get(abs))
            .ok_or(encoder_error("a reference to no entry"))
    }

    /// Inserts `name` and `value`, evicting the oldest entries for room
    /// (§3.2.2).
    fn insert(&mut self, name: &[u8], value: &[u8]) -> Result<(), Error> {
        let size = name.len() + value.len() + 32;
        if size > self.capacity {
            return Err(encoder_error("an entry larger than the table"));
        }
        self.evict(size);
        let mut bytes = Vec::with_capacity(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        self.entries
            .push_back((name.len(), bytes.into_boxed_slice()));
        self.size += size;
        self.inserted += 1;
        Ok(())
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.capacity {
            let Some((_, bytes)) = self.entries.pop_front() else {
                break;
            };
            self.size -= bytes.len() + 32;
        }
    }

    /// The Required Insert Count a field section's prefix encodes as
    /// `encoded` (§4.5.1.1).
    pub fn required(&self, encoded: u64) -> Result<u64, Error> {
        if encoded == 0 {
            return Ok(0);
        }
        let bad = Error::new(
            Code::QPACK_DECOMPRESSION_FAILED,
            "a Required Insert Count out of range",
        );
        let max_entries = (MAX_CAPACITY / 32) as u64;
        let full_range = 2 * max_entries;
        if encoded > full_range {
            return Err(bad);
        }
        let max_value = self.inserted + max_entries;
        let max_wrapped = max_value / full_range * full_range;
        let mut required = max_wrapped + encoded - 1;
        if required > max_value {
            if required <= full_range {
                return Err(bad);
            }
            required -= full_range;
        }
        match required {
            0 => Err(bad),
            n => Ok(n),
        }
    }
}

/// An integer with an `n`-bit prefix: `None` if it is not all there.
fn int(b: &[u8], n: u32) -> Result<Option<(u32, usize)>, Error> {
    match read_int(b, n) {
        Ok(v) => Ok(Some(v)),
        Err(HpackError::Truncated) => Ok(None),
        Err(_) => Err(encoder_error("an integer too large")),
    }
}

/// A string literal with an `n`-bit length prefix into `out`: the bytes
/// it took, or `None` if it is not all there.
fn text(b: &[u8], n: u32, out: &mut Vec<u8>) -> Result<Option<usize>, Error> {
    let Some((len, used)) = int(b, n)? else {
        return Ok(None);
    };
    if len as usize > MAX_INSTRUCTION {
        return Err(encoder_error("a string longer than the table"));
    }
    if b.len() < used + len as usize {
        return Ok(None);
    }
    string(b, n, out)
        .map(Some)
        .map_err(|_| encoder_error("a bad string literal"))
}
