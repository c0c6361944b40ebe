//! HPACK (RFC 7541), the header compression of HTTP/2: a decoder with a
//! bounded dynamic table and a bound on the decoded size (against HPACK
//! bombs: a few bytes that name a large table entry again and again),
//! and encoders: free functions that use the static table and Huffman
//! coding where it is shorter, and [`Encoder`], which also puts the
//! fields that repeat from answer to answer into the client's dynamic
//! table, within the size the client allows.

mod encoder;
pub(crate) mod huffman;
mod table;

#[cfg(test)]
mod tests;

pub use encoder::Encoder;
pub use huffman::HuffmanError;
pub use table::{static_name_index, DynTable, STATIC};

/// Why a header block cannot be decoded. Any of these is a connection
/// error (`COMPRESSION_ERROR`, RFC 9113 §4.3), since the dynamic table
/// can no longer be trusted to match the peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpackError {
    /// The block ends in the middle of a representation.
    Truncated,
    /// An integer does not fit in 32 bits.
    IntegerOverflow,
    /// An index is 0 or beyond both tables.
    BadIndex,
    /// A Huffman string is invalid (EOS, or bad padding).
    Huffman(HuffmanError),
    /// A table size update above the size we allowed, or one that is
    /// not at the start of the block (RFC 7541 §4.2).
    BadSizeUpdate,
    /// The fields decode to more than the hard bound given to
    /// [`Decoder::decode`]: an HPACK bomb.
    TooLarge,
}

impl HpackError {
    /// A short description, for logs and GOAWAY debug data.
    pub fn reason(self) -> &'static str {
        match self {
            HpackError::Truncated => "truncated header block",
            HpackError::IntegerOverflow => "HPACK integer overflow",
            HpackError::BadIndex => "HPACK index out of range",
            HpackError::Huffman(HuffmanError::Eos) => "EOS in a Huffman string",
            HpackError::Huffman(HuffmanError::Padding) => "bad Huffman padding",
            HpackError::BadSizeUpdate => "bad dynamic table size update",
            HpackError::TooLarge => "header block decodes too large",
        }
    }
}

/// Reads an integer with an `n`-bit prefix (RFC 7541 §5.1) from the start
/// of `input`; returns it and the bytes it took.
pub(crate) fn read_int(input: &[u8], n: u32) -> Result<(u32, usize), HpackError> {
    let first = *input.first().ok_or(HpackError::Truncated)?;
    let max = (1u32 << n) - 1;
    let mut value = (first as u32) & max;
    if value < max {
        return Ok((value, 1));
    }
    let mut shift = 0u32;
    for (i, &b) in input.iter().enumerate().skip(1) {
        // Five continuation bytes hold 35 bits: more can only overflow.
        if shift > 28 {
            return Err(HpackError::IntegerOverflow);
        }
        let add = ((b & 0x7f) as u64) << shift;
        let sum = value as u64 + add;
        if sum > u32::MAX as u64 {
            return Err(HpackError::IntegerOverflow);
        }
        value = sum as u32;
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
        shift += 7;
    }
    Err(HpackError::Truncated)
}

/// Appends `value` with an `n`-bit prefix whose other bits are `flags`.
pub(crate) fn write_int(value: usize, n: u32, flags: u8, out: &mut Vec<u8>) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Decodes header blocks of one connection (its dynamic table lives from
/// block to block).
#[derive(Debug)]
pub struct Decoder {
    table: DynTable,
    /// The largest table size the peer may ask for: our
    /// SETTINGS_HEADER_TABLE_SIZE.
    max_size: usize,
    /// Where literal names and values are decoded (reused).
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// A decoder whose table may hold at most `max_size` bytes (RFC 7541
    /// §4.1's size: names, values and 32 bytes an entry).
    pub fn new(max_size: usize) -> Decoder {
        Decoder {
            table: DynTable::new(max_size),
            max_size,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Gives back the scratch buffers (the table stays).
    pub fn shrink(&mut self) {
        self.name = Vec::new();
        self.value = Vec::new();
        self.table.shrink();
    }

    /// Takes the buffers literals are decoded into from `spare` if it has
    /// none (see `h2::Conn::lend`).
    pub fn lend(&mut self, spare: &mut (Vec<u8>, Vec<u8>)) {
        if self.name.capacity() == 0 && self.value.capacity() == 0 {
            std::mem::swap(&mut self.name, &mut spare.0);
            std::mem::swap(&mut self.value, &mut spare.1);
        }
    }

    /// Gives those buffers into `spare`.
    pub fn give_back(&mut self, spare: &mut (Vec<u8>, Vec<u8>)) {
        std::mem::swap(&mut self.name, &mut spare.0);
        std::mem::swap(&mut self.value, &mut spare.1);
    }

    /// The dynamic table's size now (RFC 7541 §4.1).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Decodes the header block `block`, handing each field to `field`
    /// (name, value) in order. Decoding stops with
    /// [`HpackError::TooLarge`] once the fields' size (RFC 9113 §6.5.2:
    /// name, value and 32 bytes each) passes `max_decoded`: a bound on
    /// the work an HPACK bomb can cause, well above the header list size
    /// that is answered 431 (the caller counts that one).
    pub fn decode(
        &mut self,
        block: &[u8],
        max_decoded: usize,
        field: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut decoded = 0usize;
        let mut first = true;
        while pos < block.len() {
            let b = block[pos];
            let rest = &block[pos..];
            if b & 0x80 != 0 {
                // Indexed field (§6.1).
                let (index, n) = read_int(rest, 7)?;
                pos += n;
                let (name, value) = lookup(&self.table, index)?;
                decoded += name.len() + value.len() + 32;
                if decoded > max_decoded {
                    return Err(HpackError::TooLarge);
                }
                field(name, value);
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only at the start.
                let (size, n) = read_int(rest, 5)?;
                pos += n;
                if !first || size as usize > self.max_size {
                    return Err(HpackError::BadSizeUpdate);
                }
                self.table.set_max(size as usize);
                continue;
            } else {
                // A literal (§6.2): with incremental indexing (01),
                // without (0000) or never indexed (0001).
                let (prefix, index_it) = if b & 0xc0 == 0x40 {
                    (6, true)
                } else {
                    (4, false)
                };
                let (index, n) = read_int(rest, prefix)?;
                pos += n;
                self.name.clear();
                if index == 0 {
                    pos += read_string(&block[pos..], &mut self.name)?;
                } else {
                    let (name, _) = lookup(&self.table, index)?;
                    // (Copied: inserting may evict the entry it names.)
                    self.name.extend_from_slice(name);
                }
                self.value.clear();
                pos += read_string(&block[pos..], &mut self.value)?;
                decoded += self.name.len() + self.value.len() + 32;
                if decoded > max_decoded {
                    return Err(HpackError::TooLarge);
                }
                field(&self.name, &self.value);
                if index_it {
                    self.table.insert(&self.name, &self.value);
                }
            }
            first = false;
        }
        Ok(())
    }
}

/// The name and value at `index` (1-based: the static table, then the
/// dynamic one, newest first).
fn lookup(table: &DynTable, index: u32) -> Result<(&[u8], &[u8]), HpackError> {
    let i = index as usize;
    if i == 0 {
        return Err(HpackError::BadIndex);
    }
    if let Some(&(name, value)) = STATIC.get(i - 1) {
        return Ok((name.as_bytes(), value.as_bytes()));
    }
    table.get(i - STATIC.len()).ok_or(HpackError::BadIndex)
}

/// Reads a string literal (§5.2) from the start of `input` into `out`;
/// returns the bytes it took.
fn read_string(input: &[u8], out: &mut Vec<u8>) -> Result<usize, HpackError> {
    let huffman = input.first().ok_or(HpackError::Truncated)? & 0x80 != 0;
    let (len, n) = read_int(input, 7)?;
    let end = n.checked_add(len as usize).ok_or(HpackError::Truncated)?;
    let raw = input.get(n..end).ok_or(HpackError::Truncated)?;
    if huffman {
        huffman::decode(raw, out).map_err(HpackError::Huffman)?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(end)
}

/// Appends a string literal, Huffman-coded when that is shorter.
fn write_string(s: &[u8], out: &mut Vec<u8>) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        write_int(coded, 7, 0x80, out);
        huffman::encode(s, out);
    } else {
        write_int(s.len(), 7, 0, out);
        out.extend_from_slice(s);
    }
}

/// Appends `:status` (an indexed field for the seven codes the static
/// table has, a literal otherwise).
pub fn encode_status(status: u16, out: &mut Vec<u8>) {
    let index = match status {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => 0,
    };
    if index != 0 {
        out.push(0x80 | index);
        return;
    }
    // Literal without indexing, name `:status` (index 8).
    out.push(0x08);
    let mut digits = [0u8; 3];
    let s = status.min(999);
    digits[0] = b'0' + (s / 100) as u8;
    digits[1] = b'0' + (s / 10 % 10) as u8;
    digits[2] = b'0' + (s % 10) as u8;
    write_string(&digits, out);
}

/// Appends a field as a literal without indexing (RFC 7541 §6.2.2): its
/// name by static index when the static table has it. `name` must be
/// lower case already (RFC 9113 §8.2.1).
pub fn encode_field(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    match static_name_index(name) {
        Some(i) => write_int(i, 4, 0, out),
        None => {
            out.push(0);
            write_string(name, out);
        }
    }
    write_string(value, out);
}
