//! One case-blind comparison for the engine, out of line.
//!
//! `<[u8]>::eq_ignore_ascii_case` is inlined at each of its call sites,
//! and at opt-level 3 each copy against a literal (`b"content-length"`)
//! becomes an unrolled, vectorised compare of that literal's length:
//! ~700 bytes a site, 17 KiB over the engine's 116 sites. Through
//! [`IgnoreCase`] a site costs its length check inline and, only when
//! the lengths agree, one call to a single shared loop. For field names
//! and tokens of a few to twenty bytes, the call is a handful of
//! instructions beside the compare itself.

/// `eq_ignore_case`: ASCII case-insensitive equality, as the standard
/// library's `eq_ignore_ascii_case`, for byte strings and `str`.
pub(crate) trait IgnoreCase {
    fn eq_ignore_case(&self, other: &Self) -> bool;
}

impl IgnoreCase for [u8] {
    #[inline]
    fn eq_ignore_case(&self, other: &[u8]) -> bool {
        self.len() == other.len() && same_length(self, other)
    }
}

impl IgnoreCase for str {
    #[inline]
    fn eq_ignore_case(&self, other: &str) -> bool {
        self.as_bytes().eq_ignore_case(other.as_bytes())
    }
}

/// Eight bytes at a time, then a byte at a time, with an early exit,
/// which LLVM leaves unvectorised: for the short names compared here, the
/// standard library's vectorised loop spent ~80 instructions on a
/// four-byte `Host` (its set-up), a byte loop ~25 and ~100 on a matching
/// `Content-Type`. The first bytes, told apart as `| 0x20` tells them
/// (which never parts two bytes equal but for case), end most mismatches
/// at once.
#[inline(never)]
fn same_length(mut a: &[u8], mut b: &[u8]) -> bool {
    if let (Some(x), Some(y)) = (a.first(), b.first()) {
        if x | 0x20 != y | 0x20 {
            return false;
        }
    }
    while let (Some((x, rest_a)), Some((y, rest_b))) =
        (a.split_first_chunk::<8>(), b.split_first_chunk::<8>())
    {
        let (x, y) = (u64::from_le_bytes(*x), u64::from_le_bytes(*y));
        if x != y && lower(x) != lower(y) {
            return false;
        }
        (a, b) = (rest_a, rest_b);
    }
    for (x, y) in a.iter().zip(b) {
        if !x.eq_ignore_ascii_case(y) {
            return false;
        }
    }
    true
}

/// The eight bytes of `w` with their ASCII capitals in small letters.
#[inline]
fn lower(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    // Of each byte's low seven bits (no carry leaves a byte): the high
    // bit set past `Z`, and from `A` on; a byte of 0x80 or more is no
    // letter.
    let low = w & (LO * 0x7f);
    let past_z = low + LO * u64::from(0x7f - b'Z');
    let from_a = low + LO * u64::from(0x80 - b'A');
    let capital = from_a & !past_z & !w & (LO * 0x80);
    w | capital >> 2
}

#[cfg(test)]
mod tests {
    use super::IgnoreCase;

    #[test]
    fn equal_but_for_ascii_case() {
        assert!(b"Content-Length"[..].eq_ignore_case(b"content-length"));
        assert!("HOST".eq_ignore_case("host"));
        assert!(b""[..].eq_ignore_case(b""));
        assert!(!b"content-length"[..].eq_ignore_case(b"content-lengt"));
        assert!(!b"close"[..].eq_ignore_case(b"closf"));
        // Only ASCII folds: these differ in a byte no case maps.
        assert!(!"\u{c4}".eq_ignore_case("\u{e4}"));
        assert!(!b"a@"[..].eq_ignore_case(b"a`"));
        assert!(!b"@"[..].eq_ignore_case(b"`"));
    }

    /// Against the standard library's, for every pair of bytes at every
    /// place in a word and in the tail after it.
    #[test]
    fn as_the_standard_library_at_every_place() {
        let base = *b"content-type-x";
        for at in 0..base.len() {
            for x in 0..=255u8 {
                for y in [
                    x,
                    x ^ 0x20,
                    x.to_ascii_lowercase(),
                    x.to_ascii_uppercase(),
                    b'a',
                ] {
                    let (mut a, mut b) = (base, base);
                    a[at] = x;
                    b[at] = y;
                    assert_eq!(
                        a[..].eq_ignore_case(&b[..]),
                        a.eq_ignore_ascii_case(&b),
                        "{x:#x} {y:#x} at {at}"
                    );
                }
            }
        }
    }
}
