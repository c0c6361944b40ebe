//! DER (ITU-T X.690) as brisk reads and writes it: the tags of the
//! structures it handles (X.509 certificates, RFC 5280; certification
//! requests, RFC 2986), and a writer for those it makes itself (the
//! requests and challenge certificates of ACME, a local CA's
//! certificates). The reader is `tls::x509`'s.
//!
//! The writer builds in one buffer: an element's contents are written
//! after its tag, then its length is slipped in between (DER wants the
//! definite, shortest length first, known only once the contents are).

/// `BOOLEAN`.
pub const BOOLEAN: u8 = 0x01;
/// `INTEGER`.
pub const INTEGER: u8 = 0x02;
/// `BIT STRING`.
pub const BIT_STRING: u8 = 0x03;
/// `OCTET STRING`.
pub const OCTET_STRING: u8 = 0x04;
/// `NULL`.
pub const NULL: u8 = 0x05;
/// `OBJECT IDENTIFIER`.
pub const OID: u8 = 0x06;
/// `UTF8String`.
pub const UTF8_STRING: u8 = 0x0c;
/// `UTCTime`.
pub const UTC_TIME: u8 = 0x17;
/// `GeneralizedTime`.
pub const GENERALIZED_TIME: u8 = 0x18;
/// `SEQUENCE` (constructed).
pub const SEQUENCE: u8 = 0x30;
/// `SET` (constructed).
pub const SET: u8 = 0x31;
/// `[n]`, context-specific and constructed (an `EXPLICIT` tag, or an
/// `IMPLICIT` one on a constructed type).
pub const fn context(n: u8) -> u8 {
    0xa0 | n
}
/// GeneralName `dNSName [2] IA5String`, implicitly tagged.
pub const DNS_NAME: u8 = 0x82;
/// GeneralName `iPAddress [7] OCTET STRING`, implicitly tagged.
pub const IP_ADDRESS: u8 = 0x87;

/// A DER document being written.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty document.
    pub fn new() -> Writer {
        Writer::default()
    }

    /// The bytes written.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    /// An element `tag` whose contents `contents` writes.
    pub fn nest(&mut self, tag: u8, contents: impl FnOnce(&mut Writer)) {
        self.buf.push(tag);
        let start = self.buf.len();
        contents(self);
        let len = self.buf.len() - start;
        let mut head = [0u8; 9];
        let n = encode_len(len, &mut head);
        self.buf.splice(start..start, head[..n].iter().copied());
    }

    /// A `SEQUENCE` whose elements `contents` writes.
    pub fn seq(&mut self, contents: impl FnOnce(&mut Writer)) {
        self.nest(SEQUENCE, contents);
    }

    /// An element `tag` holding `bytes` as they are.
    pub fn prim(&mut self, tag: u8, bytes: &[u8]) {
        self.nest(tag, |w| w.buf.extend_from_slice(bytes));
    }

    /// Bytes that are DER already (a key's `SubjectPublicKeyInfo`, a
    /// `Name` copied from a certificate).
    pub fn raw(&mut self, der: &[u8]) {
        self.buf.extend_from_slice(der);
    }

    /// An `OBJECT IDENTIFIER` of `arcs` (at least two; the first 0 to 2,
    /// the second below 40 unless the first is 2).
    pub fn oid(&mut self, arcs: &[u64]) {
        self.nest(OID, |w| {
            let (first, rest) = match arcs {
                [a, b, rest @ ..] => (a * 40 + b, rest),
                _ => unreachable!("an OID has two arcs at least"),
            };
            for &arc in std::iter::once(&first).chain(rest) {
                // Base 128, most significant group first, each but the
                // last with its top bit set.
                let groups = (64 - arc.leading_zeros()).div_ceil(7).max(1);
                for g in (0..groups).rev() {
                    let more = if g > 0 { 0x80 } else { 0 };
                    w.buf.push(((arc >> (7 * g)) & 0x7f) as u8 | more);
                }
            }
        });
    }

    /// A non-negative `INTEGER` from its big-endian magnitude (leading
    /// zeros dropped; a zero byte put first where the top bit would make
    /// it negative).
    pub fn uint(&mut self, magnitude: &[u8]) {
        let skip = magnitude.iter().take_while(|&&b| b == 0).count();
        let m = &magnitude[skip..];
        self.nest(INTEGER, |w| {
            if m.first().is_none_or(|&b| b & 0x80 != 0) {
                w.buf.push(0);
            }
            w.buf.extend_from_slice(m);
        });
    }

    /// A `BOOLEAN` (DER: true is 0xff).
    pub fn boolean(&mut self, value: bool) {
        self.prim(BOOLEAN, &[if value { 0xff } else { 0 }]);
    }

    /// A `BIT STRING` of whole bytes (no unused bits).
    pub fn bits(&mut self, bytes: &[u8]) {
        self.nest(BIT_STRING, |w| {
            w.buf.push(0);
            w.buf.extend_from_slice(bytes);
        });
    }

    /// A time (seconds since the Unix epoch) as RFC 5280 §4.1.2.5 wants
    /// it: `UTCTime` through 2049, `GeneralizedTime` from 2050 on.
    pub fn time(&mut self, secs: u64) {
        let t = crate::http::date::civil_time(secs);
        let two = crate::http::date::two_digits;
        let mut text = Vec::with_capacity(15);
        let tag = if t.year < 2050 {
            UTC_TIME
        } else {
            text.extend_from_slice(&two(t.year / 100));
            GENERALIZED_TIME
        };
        for n in [t.year, t.month, t.day, t.hour, t.minute, t.second] {
            text.extend_from_slice(&two(n));
        }
        text.push(b'Z');
        self.prim(tag, &text);
    }
}

/// Writes the DER length `len` into `out`; how many bytes it took.
fn encode_len(len: usize, out: &mut [u8; 9]) -> usize {
    if len < 0x80 {
        out[0] = len as u8;
        return 1;
    }
    let bytes = len.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    let n = bytes.len() - skip;
    out[0] = 0x80 | n as u8;
    out[1..=n].copy_from_slice(&bytes[skip..]);
    n + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::new();
        f(&mut w);
        w.finish()
    }

    #[test]
    fn lengths_are_the_shortest_definite_form() {
        for (len, want) in [
            (0, &[0x04, 0x00][..]),
            (127, &[0x04, 0x7f]),
            (128, &[0x04, 0x81, 0x80]),
            (255, &[0x04, 0x81, 0xff]),
            (256, &[0x04, 0x82, 0x01, 0x00]),
            (70_000, &[0x04, 0x83, 0x01, 0x11, 0x70]),
        ] {
            let der = one(|w| w.prim(OCTET_STRING, &vec![7; len]));
            assert_eq!(&der[..want.len()], want, "{len}");
            assert_eq!(der.len(), want.len() + len);
        }
    }

    #[test]
    fn object_identifiers() {
        // X.690 §8.19.5's example, and those brisk writes.
        assert_eq!(one(|w| w.oid(&[2, 999, 3])), [0x06, 0x03, 0x88, 0x37, 0x03]);
        assert_eq!(
            one(|w| w.oid(&[1, 2, 840, 10045, 2, 1])),
            [0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
        );
        assert_eq!(
            one(|w| w.oid(&[1, 3, 6, 1, 5, 5, 7, 1, 31])),
            [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x1f]
        );
        assert_eq!(
            one(|w| w.oid(&[2, 5, 29, 17])),
            [0x06, 0x03, 0x55, 0x1d, 0x11]
        );
    }

    #[test]
    fn integers_are_minimal_and_never_negative() {
        assert_eq!(one(|w| w.uint(&[])), [0x02, 0x01, 0x00]);
        assert_eq!(one(|w| w.uint(&[0, 0, 0])), [0x02, 0x01, 0x00]);
        assert_eq!(one(|w| w.uint(&[0, 0x7f])), [0x02, 0x01, 0x7f]);
        assert_eq!(one(|w| w.uint(&[0x80])), [0x02, 0x02, 0x00, 0x80]);
        assert_eq!(one(|w| w.uint(&[0, 1, 2])), [0x02, 0x02, 0x01, 0x02]);
    }

    #[test]
    fn times_switch_to_generalized_in_2050() {
        // 2049-12-31T23:59:59Z and 2050-01-01T00:00:00Z.
        assert_eq!(one(|w| w.time(2_524_607_999)), b"\x17\x0d491231235959Z");
        assert_eq!(one(|w| w.time(2_524_608_000)), b"\x18\x0f20500101000000Z");
        assert_eq!(one(|w| w.time(0)), b"\x17\x0d700101000000Z");
    }

    #[test]
    fn nested_elements_and_the_rest() {
        let der = one(|w| {
            w.seq(|w| {
                w.boolean(true);
                w.bits(&[1, 2]);
                w.nest(context(3), |w| w.prim(NULL, &[]));
            })
        });
        assert_eq!(
            der,
            [0x30, 0x0c, 0x01, 0x01, 0xff, 0x03, 0x03, 0x00, 0x01, 0x02, 0xa3, 0x02, 0x05, 0x00]
        );
    }
}
