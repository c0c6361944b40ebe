//! QUIC's variable-length integers (RFC 9000 §16): the two top bits of
//! the first byte give the length (1, 2, 4 or 8 bytes), the rest the
//! value, most significant byte first; at most 2^62 - 1.

/// The largest value a varint holds.
pub const MAX: u64 = (1 << 62) - 1;

/// Reads a varint from the start of `input`: its value and its length;
/// `None` when `input` ends first.
pub fn read(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let len = 1usize << (first >> 6);
    let bytes = input.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        v = (v << 8) | u64::from(b);
    }
    Some((v, len))
}

/// How many bytes `v` takes (`v` at most [`MAX`]).
pub fn len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v` (at most [`MAX`]) in its shortest form.
pub fn write(v: u64, out: &mut Vec<u8>) {
    debug_assert!(v <= MAX);
    let n = len(v);
    let tag = match n {
        1 => 0u64,
        2 => 1,
        4 => 2,
        _ => 3,
    };
    let all = v | (tag << (8 * n - 2));
    out.extend_from_slice(&all.to_be_bytes()[8 - n..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9000 §A.1's examples.
    #[test]
    fn the_rfc_examples() {
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, v) in cases {
            assert_eq!(read(bytes), Some((v, bytes.len())));
            let mut out = Vec::new();
            write(v, &mut out);
            assert_eq!(out, bytes);
        }
        // A longer form than needed reads the same (§16: not minimal is allowed).
        assert_eq!(read(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(read(&[0x9d, 0x7f, 0x3e]), None);
        assert_eq!(read(&[]), None);
        let mut out = Vec::new();
        write(MAX, &mut out);
        assert_eq!(read(&out), Some((MAX, 8)));
    }
}
