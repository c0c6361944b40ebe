//! HPACK's Huffman code (RFC 7541 §5.2 and Appendix B): the table is the
//! RFC's data (code, length in bits); decoding is table driven, one
//! symbol per step: codes of up to 8 bits (the common ones: digits,
//! lower-case letters, `/`, `-`, `.`) are found with one look-up in a
//! 256-entry table built at compile time, longer ones through the
//! code's canonical form (RFC 7541's code is canonical: within a length,
//! codes follow the symbols' order, and `tests` checks that it is).

/// `(code, bits)` of each symbol 0..=255 and EOS (256), RFC 7541 Appendix B.
#[rustfmt::skip]
pub(super) const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28),
    (0xfffffe4, 28), (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28),
    (0xfffffe8, 28), (0xffffea, 24), (0x3ffffffc, 30), (0xfffffe9, 28),
    (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28), (0xfffffec, 28),
    (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28),
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28),
    (0xffffff4, 28), (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28),
    (0xffffff8, 28), (0xffffff9, 28), (0xffffffa, 28), (0xffffffb, 28),
    // ' ' ! " # $ % & '
    (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11),
    // ( ) * + , - . /
    (0x3fa, 10), (0x3fb, 10), (0xf9, 8), (0x7fb, 11),
    (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6),
    // 0 1 2 3 4 5 6 7
    (0x0, 5), (0x1, 5), (0x2, 5), (0x19, 6),
    (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6),
    // 8 9 : ; < = > ?
    (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8),
    (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10),
    // @ A B C D E F G
    (0x1ffa, 13), (0x21, 6), (0x5d, 7), (0x5e, 7),
    (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7),
    // H I J K L M N O
    (0x63, 7), (0x64, 7), (0x65, 7), (0x66, 7),
    (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7),
    // P Q R S T U V W
    (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7),
    (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7),
    // X Y Z [ \ ] ^ _
    (0xfc, 8), (0x73, 7), (0xfd, 8), (0x1ffb, 13),
    (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6),
    // ` a b c d e f g
    (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5),
    (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6),
    // h i j k l m n o
    (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7),
    (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5),
    // p q r s t u v w
    (0x2b, 6), (0x76, 7), (0x2c, 6), (0x8, 5),
    (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7),
    // x y z { | } ~ DEL
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15),
    (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28),
    // 128..
    (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20),
    (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23),
    (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23),
    (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23),
    (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23),
    (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23),
    (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23),
    (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24),
    // 160..
    (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22),
    (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21),
    (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24),
    (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23),
    (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21),
    (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23),
    (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22),
    (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23),
    // 192..
    (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19),
    (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25),
    (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27),
    (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25),
    (0x7fff2, 19), (0x1fffe3, 21), (0x3ffffe6, 26), (0x7ffffe0, 27),
    (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24),
    (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26),
    (0xffffffd, 28), (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27),
    // 224..
    (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21),
    (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23),
    (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25), (0x1ffffef, 25),
    (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23),
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26),
    (0x7ffffe7, 27), (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27),
    (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27),
    (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26),
    // EOS
    (0x3fffffff, 30),
];

/// The EOS symbol: never in a string (RFC 7541 §5.2).
const EOS: u16 = 256;
/// The longest code, in bits.
const MAX_BITS: usize = 30;

/// The decoding tables, computed once at compile time from [`CODES`].
struct Tables {
    /// For the next 8 bits of input: the symbol whose code they start
    /// with and its length, if that code has at most 8 bits (length 0:
    /// look further).
    fast: [(u16, u8); 256],
    /// Symbols sorted by (length, symbol): the canonical order.
    sorted: [u16; 257],
    /// The first (smallest) code of each length.
    first: [u32; MAX_BITS + 1],
    /// How many codes each length has.
    count: [u16; MAX_BITS + 1],
    /// Where each length's symbols start in `sorted`.
    offset: [u16; MAX_BITS + 1],
}

const fn tables() -> Tables {
    let mut count = [0u16; MAX_BITS + 1];
    let mut s = 0;
    while s < 257 {
        count[CODES[s].1 as usize] += 1;
        s += 1;
    }
    let mut first = [0u32; MAX_BITS + 1];
    let mut offset = [0u16; MAX_BITS + 1];
    let (mut code, mut at, mut len) = (0u32, 0u16, 1);
    while len <= MAX_BITS {
        code = (code + count[len - 1] as u32) << 1;
        first[len] = code;
        offset[len] = at;
        at += count[len];
        len += 1;
    }
    let mut sorted = [0u16; 257];
    let mut fill = offset;
    s = 0;
    while s < 257 {
        let l = CODES[s].1 as usize;
        sorted[fill[l] as usize] = s as u16;
        fill[l] += 1;
        s += 1;
    }
    let mut fast = [(0u16, 0u8); 256];
    s = 0;
    while s < 257 {
        let (c, l) = CODES[s];
        if l <= 8 {
            let shift = 8 - l as u32;
            let base = (c << shift) as usize;
            let mut k = 0;
            while k < (1 << shift) {
                fast[base + k] = (s as u16, l);
                k += 1;
            }
        }
        s += 1;
    }
    Tables {
        fast,
        sorted,
        first,
        count,
        offset,
    }
}

static TABLES: Tables = tables();

/// Why a Huffman string is invalid (RFC 7541 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HuffmanError {
    /// The string holds the EOS symbol.
    Eos,
    /// More than 7 bits of padding, or padding that is not EOS's prefix.
    Padding,
}

/// The length in bytes of `s` Huffman-coded.
pub fn encoded_len(s: &[u8]) -> usize {
    let bits: usize = s.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Appends `s` Huffman-coded to `out` (padded with ones, EOS's prefix).
pub fn encode(s: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for &b in s {
        let (code, len) = CODES[b as usize];
        acc = (acc << len) | code as u64;
        bits += len as u32;
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        let pad = 8 - bits;
        out.push(((acc << pad) as u8) | ((1u8 << pad) - 1));
    }
}

/// Appends the Huffman-coded string `input`, decoded, to `out`.
///
/// A string decoded lately on this thread is not decoded again: clients
/// that use no dynamic table (QPACK's, with Go's quic-go or hyperium's
/// h3; HPACK's, with some) send the same `:authority`, `user-agent` and
/// the like, coded alike, in every request. [`Memo`] keeps the last few
/// short ones.
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    if input.len() > MEMO_LEN {
        return decode_uncached(input, out);
    }
    MEMO.with_borrow_mut(|m| {
        if let Some(plain) = m.get(input) {
            out.extend_from_slice(plain);
            return Ok(());
        }
        let start = out.len();
        decode_uncached(input, out)?;
        m.put(input, &out[start..]);
        Ok(())
    })
}

/// The longest coded string [`Memo`] keeps.
const MEMO_LEN: usize = 64;

/// How many strings [`Memo`] keeps.
const MEMO_SLOTS: usize = 4;

std::thread_local! {
    static MEMO: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(Memo::new()) };
}

/// The last [`MEMO_SLOTS`] coded strings of up to [`MEMO_LEN`] bytes
/// decoded on a thread, and what they decode to (the oldest makes room
/// for a new one): at most ~1 KiB a worker.
struct Memo {
    /// `(coded, decoded)`.
    slots: Vec<(Vec<u8>, Vec<u8>)>,
    /// The slot the next new string takes, once all are used.
    next: usize,
}

impl Memo {
    const fn new() -> Memo {
        Memo {
            slots: Vec::new(),
            next: 0,
        }
    }

    fn get(&self, coded: &[u8]) -> Option<&[u8]> {
        let hit = self.slots.iter().find(|(c, _)| c == coded);
        hit.map(|(_, plain)| plain.as_slice())
    }

    fn put(&mut self, coded: &[u8], plain: &[u8]) {
        if self.slots.len() < MEMO_SLOTS {
            self.slots.push((coded.to_vec(), plain.to_vec()));
            return;
        }
        // (The slot's buffers are reused.)
        let (c, p) = &mut self.slots[self.next];
        c.clear();
        c.extend_from_slice(coded);
        p.clear();
        p.extend_from_slice(plain);
        self.next = (self.next + 1) % MEMO_SLOTS;
    }
}

/// [`decode`], without its memo.
fn decode_uncached(input: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let start = out.len();
    // (At most a symbol for each 5 bits, the shortest code.)
    out.resize(start + input.len() * 8 / 5, 0);
    let r = decode_into(input, &mut out[start..]);
    out.truncate(start + *r.as_ref().unwrap_or(&0));
    r.map(|_| ())
}

/// Decodes `input` into `out` (room for a symbol each 5 bits); how many
/// symbols it held.
fn decode_into(input: &[u8], out: &mut [u8]) -> Result<usize, HuffmanError> {
    let t = &TABLES;
    // Bits not yet decoded, left-aligned in `acc`: `bits` of them (those
    // below are the input's next bits, or zeros past its end).
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    let (mut at, mut n) = (0, 0);
    loop {
        if let Some(word) = input.get(at..at + 8).filter(|_| bits <= 56) {
            // Eight bytes at once: as many whole ones as fit count.
            let word = u64::from_be_bytes(word.try_into().unwrap_or_default());
            acc |= word >> bits;
            let took = (64 - bits) / 8;
            at += took as usize;
            bits += took * 8;
        }
        while bits <= 56 {
            let Some(&b) = input.get(at) else { break };
            acc |= (b as u64) << (56 - bits);
            at += 1;
            bits += 8;
        }
        // Codes of up to 8 bits while 8 bits are there: a look-up each,
        // with no other test (none of them is EOS).
        while bits >= 8 {
            let (sym, len) = t.fast[(acc >> 56) as usize];
            if len == 0 {
                break;
            }
            out[n] = sym as u8;
            n += 1;
            acc <<= len;
            bits -= len as u32;
        }
        if at < input.len() && bits <= 56 {
            continue;
        }
        // A longer code (with all its bits in `acc`), or the string's last
        // bits.
        if bits == 0 {
            return Ok(n);
        }
        let (sym, len) = t.fast[(acc >> 56) as usize];
        let (sym, len) = if len != 0 {
            (sym, len as u32)
        } else {
            match long_code(acc) {
                Some(found) => found,
                None => return padding(acc, bits).map(|()| n),
            }
        };
        if len > bits {
            // The last bits are a code's prefix: padding, if all ones.
            return padding(acc, bits).map(|()| n);
        }
        if sym == EOS {
            return Err(HuffmanError::Eos);
        }
        out[n] = sym as u8;
        n += 1;
        acc <<= len;
        bits -= len;
    }
}

/// The symbol of the code of 9 bits or more at the top of `acc`.
fn long_code(acc: u64) -> Option<(u16, u32)> {
    let t = &TABLES;
    for len in 9..=MAX_BITS {
        let code = (acc >> (64 - len)) as u32;
        let first = t.first[len];
        let n = t.count[len] as u32;
        if code >= first && code < first + n {
            let sym = t.sorted[(t.offset[len] as u32 + code - first) as usize];
            return Some((sym, len as u32));
        }
    }
    None
}

/// The `bits` left at the top of `acc` end the string: at most 7, all ones.
fn padding(acc: u64, bits: u32) -> Result<(), HuffmanError> {
    let ones = (1u64 << bits) - 1;
    if bits <= 7 && (acc >> (64 - bits)) == ones {
        Ok(())
    } else {
        Err(HuffmanError::Padding)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::hex;
    use super::*;

    #[test]
    fn the_table_is_a_complete_canonical_code() {
        // Kraft's sum is exactly 1: every bit string decodes.
        let kraft: u64 = CODES
            .iter()
            .map(|&(_, l)| 1u64 << (MAX_BITS - l as usize))
            .sum();
        assert_eq!(kraft, 1 << MAX_BITS);
        // Canonical: each code is its length's first code plus its rank,
        // so a mistyped length or code in CODES shows here.
        let t = &TABLES;
        for len in 1..=MAX_BITS {
            for k in 0..t.count[len] {
                let sym = t.sorted[(t.offset[len] + k) as usize] as usize;
                assert_eq!(
                    CODES[sym],
                    (t.first[len] + k as u32, len as u8),
                    "symbol {sym}"
                );
            }
        }
    }

    #[test]
    fn rfc_7541_examples() {
        // Appendix C.4 and C.6.
        let cases: [(&str, &str); 8] = [
            ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            ("no-cache", "a8eb 1064 9cbf"),
            ("custom-key", "25a8 49e9 5ba9 7d7f"),
            ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
            ("302", "6402"),
            ("private", "aec3 771a 4b"),
            ("Mon, 21 Oct 2013 20:13:21 GMT", "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"),
            ("foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
             "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07"),
        ];
        for (plain, coded) in cases {
            let coded = hex(coded);
            let mut out = Vec::new();
            encode(plain.as_bytes(), &mut out);
            assert_eq!(out, coded, "{plain}");
            assert_eq!(encoded_len(plain.as_bytes()), coded.len());
            let mut back = Vec::new();
            decode(&coded, &mut back).unwrap();
            assert_eq!(back, plain.as_bytes());
        }
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        let mut coded = Vec::new();
        encode(&all, &mut coded);
        let mut back = Vec::new();
        decode(&coded, &mut back).unwrap();
        assert_eq!(back, all);
    }

    type Codes = std::collections::HashMap<(u32, u8), u16>;

    /// The code read bit by bit, straight from `CODES`: what `decode`'s
    /// tables must agree with.
    fn decode_bit_by_bit(input: &[u8], codes: &Codes) -> Result<Vec<u8>, HuffmanError> {
        let (mut out, mut code, mut len) = (Vec::new(), 0u32, 0u8);
        for i in 0..input.len() * 8 {
            code = code << 1 | (input[i / 8] >> (7 - i % 8) & 1) as u32;
            len += 1;
            match codes.get(&(code, len)) {
                Some(&EOS) => return Err(HuffmanError::Eos),
                Some(&sym) => (out.push(sym as u8), code = 0, len = 0).0,
                None => {}
            }
        }
        match len <= 7 && code == (1 << len) - 1 {
            true => Ok(out),
            false => Err(HuffmanError::Padding),
        }
    }

    #[test]
    fn decoding_agrees_with_the_code_read_bit_by_bit() {
        let codes: Codes = CODES.iter().zip(0..).map(|(&c, sym)| (c, sym)).collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..20_000 {
            let len = (random() % 40) as usize;
            let input: Vec<u8> = match round % 3 {
                // Any bytes (mostly bad padding, some EOS).
                0 => (0..len).map(|_| random() as u8).collect(),
                // A string's code: short codes mostly, long ones at times.
                _ => {
                    let plain: Vec<u8> = (0..len)
                        .map(|_| match random() % 8 {
                            0 => random() as u8,
                            _ => b"/index.html127:0-_abc"[(random() % 21) as usize],
                        })
                        .collect();
                    let mut coded = Vec::new();
                    encode(&plain, &mut coded);
                    assert_eq!(decode_bit_by_bit(&coded, &codes).as_deref(), Ok(&plain[..]));
                    coded
                }
            };
            let mut out = b"kept".to_vec();
            let got = decode(&input, &mut out).map(|()| out[4..].to_vec());
            assert_eq!(got, decode_bit_by_bit(&input, &codes), "{input:02x?}");
        }
    }

    #[test]
    fn strings_decoded_again_come_from_the_memo_as_they_decode() {
        let plain: Vec<&[u8]> = vec![
            b"127.0.0.1:8443",
            b"/index.html",
            b"www.example.com",
            b"Go-http-client/3.0",
            b"/a",
            b"x",
            b"",
        ];
        let coded: Vec<Vec<u8>> = plain
            .iter()
            .map(|p| {
                let mut c = Vec::new();
                encode(p, &mut c);
                c
            })
            .collect();
        // More strings than slots, in an order that hits and misses.
        for round in 0..40 {
            let i = (round * 5 + round / 3) % plain.len();
            let mut out = b"kept".to_vec();
            assert_eq!(decode(&coded[i], &mut out), Ok(()));
            assert_eq!(&out[4..], plain[i], "round {round}");
            // (A bad string is never kept: refused each time.)
            let mut bad = coded[i].clone();
            bad.extend_from_slice(&[0xff; 4]);
            assert!(decode(&bad, &mut out).is_err());
            assert_eq!(&out[4..], plain[i]);
        }
        // One too long for the memo decodes as well.
        let long = [b'a'; 200];
        let mut c = Vec::new();
        encode(&long, &mut c);
        for _ in 0..2 {
            let mut out = Vec::new();
            assert_eq!((decode(&c, &mut out), &out[..]), (Ok(()), &long[..]));
        }
    }

    #[test]
    fn eos_and_bad_padding_are_refused() {
        // EOS (30 ones) in the string.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()),
            Err(HuffmanError::Eos)
        );
        // 'a' (00011) then 3 bits of zeros: padding must be ones.
        assert_eq!(
            decode(&[0b0001_1000], &mut Vec::new()),
            Err(HuffmanError::Padding)
        );
        // 'a' then a whole byte of ones: more than 7 bits of padding.
        assert_eq!(
            decode(&[0b0001_1111, 0xff], &mut Vec::new()),
            Err(HuffmanError::Padding)
        );
        // Ones alone (7 bits) are valid padding of an empty string... but
        // a whole byte of ones is not.
        assert_eq!(decode(&[0xff], &mut Vec::new()), Err(HuffmanError::Padding));
        let mut out = Vec::new();
        assert_eq!(decode(&[0b0001_1111], &mut out), Ok(()));
        assert_eq!(out, b"a");
    }
}
