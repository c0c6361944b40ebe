//! HPACK against RFC 7541 Appendix C, and its refusals.

use super::*;

/// Bytes written in hex, spaces ignored (as the RFC prints them).
pub(super) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn decode(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
    let mut fields = Vec::new();
    d.decode(block, 1 << 20, &mut |n, v| {
        fields.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        ))
    })?;
    Ok(fields)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn rfc_7541_c3_and_c4_requests() {
    let plain = [
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ];
    let huffman = [
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ];
    let expected = [
        pairs(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
        ]),
        pairs(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
            ("cache-control", "no-cache"),
        ]),
        pairs(&[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            (":authority", "www.example.com"),
            ("custom-key", "custom-value"),
        ]),
    ];
    let sizes = [57, 110, 164];
    for blocks in [plain, huffman] {
        let mut d = Decoder::new(4096);
        for i in 0..3 {
            assert_eq!(
                decode(&mut d, &hex(blocks[i])).unwrap(),
                expected[i],
                "block {i}"
            );
            assert_eq!(d.table_size(), sizes[i]);
        }
    }
}

#[test]
fn rfc_7541_c5_responses_evict() {
    let mut d = Decoder::new(256);
    let b1 = "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d";
    let b2 = "4803 3330 37c1 c0bf";
    let b3 = "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31";
    let date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
    let loc = "https://www.example.com";
    assert_eq!(
        decode(&mut d, &hex(b1)).unwrap(),
        pairs(&[
            (":status", "302"),
            ("cache-control", "private"),
            ("date", date1),
            ("location", loc)
        ])
    );
    assert_eq!(d.table_size(), 222);
    assert_eq!(
        decode(&mut d, &hex(b2)).unwrap(),
        pairs(&[
            (":status", "307"),
            ("cache-control", "private"),
            ("date", date1),
            ("location", loc)
        ])
    );
    assert_eq!(d.table_size(), 222);
    let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
    assert_eq!(
        decode(&mut d, &hex(b3)).unwrap(),
        pairs(&[
            (":status", "200"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
            ("location", loc),
            ("content-encoding", "gzip"),
            ("set-cookie", cookie)
        ])
    );
    assert_eq!(d.table_size(), 215);
}

#[test]
fn the_table_stays_within_its_size_however_many_inserts() {
    let mut t = DynTable::new(4096);
    for i in 0..10_000u32 {
        let v = format!("value-{i}-{}", "x".repeat((i % 200) as usize));
        t.insert(b"x-name", v.as_bytes());
        assert!(t.size() <= 4096);
        assert_eq!(t.get(1).unwrap().1, v.as_bytes());
    }
    assert!(t.bytes_capacity() <= 3 * 4096, "the buffer is compacted");
    // At rest it holds what its entries need, and they are still there.
    let newest = t.get(1).map(|(n, v)| (n.to_vec(), v.to_vec()));
    t.shrink();
    assert!(t.bytes_capacity() <= t.size(), "{}", t.bytes_capacity());
    assert_eq!(t.get(1).map(|(n, v)| (n.to_vec(), v.to_vec())), newest);
    // An entry larger than the table empties it.
    t.insert(b"big", &[b'y'; 5000]);
    assert!(t.is_empty() && t.size() == 0);
}

#[test]
fn what_the_encoder_writes_decodes_back() {
    let mut out = Vec::new();
    encode_status(200, &mut out);
    encode_status(418, &mut out);
    encode_field(b"content-type", b"text/html; charset=utf-8", &mut out);
    encode_field(b"x-custom", b"\x01\xff odd bytes", &mut out);
    encode_field(b"etag", b"\"5f-1a2b\"", &mut out);
    let mut d = Decoder::new(4096);
    let fields = decode_raw(&mut d, &out);
    assert_eq!(fields[0], (b":status".to_vec(), b"200".to_vec()));
    assert_eq!(fields[1], (b":status".to_vec(), b"418".to_vec()));
    assert_eq!(fields[2].1, b"text/html; charset=utf-8");
    assert_eq!(
        fields[3],
        (b"x-custom".to_vec(), b"\x01\xff odd bytes".to_vec())
    );
    assert_eq!(d.table_size(), 0, "the encoder never inserts");
    assert_eq!(out[0], 0x88, "200 is static index 8");
}

fn decode_raw(d: &mut Decoder, block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut fields = Vec::new();
    d.decode(block, 1 << 20, &mut |n, v| {
        fields.push((n.to_vec(), v.to_vec()))
    })
    .unwrap();
    fields
}

#[test]
fn integers_round_trip_and_overflow_is_refused() {
    for v in [0usize, 30, 31, 32, 127, 128, 1337, 65535, u32::MAX as usize] {
        let mut out = Vec::new();
        write_int(v, 5, 0xe0, &mut out);
        assert_eq!(read_int(&out, 5), Ok((v as u32, out.len())), "{v}");
    }
    assert_eq!(
        read_int(&hex("1f 9a 0a"), 5),
        Ok((1337, 3)),
        "RFC 7541 C.1.2"
    );
    assert_eq!(
        read_int(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0x7f], 5),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(
        read_int(&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], 5),
        Err(HpackError::IntegerOverflow)
    );
    assert_eq!(read_int(&[0x1f, 0x80], 5), Err(HpackError::Truncated));
}

#[test]
fn bad_blocks_are_compression_errors() {
    let mut d = Decoder::new(4096);
    let mut sink = |_: &[u8], _: &[u8]| {};
    // Index 0, and an index past both tables.
    assert_eq!(
        d.decode(&[0x80], 1 << 20, &mut sink),
        Err(HpackError::BadIndex)
    );
    assert_eq!(
        d.decode(&[0xbe], 1 << 20, &mut sink),
        Err(HpackError::BadIndex)
    );
    // A size update above what we allow, and one after a field.
    assert_eq!(
        d.decode(&hex("3fe2 1f"), 1 << 20, &mut sink),
        Err(HpackError::BadSizeUpdate)
    );
    assert_eq!(
        d.decode(&hex("82 20"), 1 << 20, &mut sink),
        Err(HpackError::BadSizeUpdate)
    );
    // Two updates at the start are fine (§4.2).
    assert_eq!(d.decode(&hex("20 3f01 82"), 1 << 20, &mut sink), Ok(()));
    // A string longer than the block.
    assert_eq!(
        d.decode(&hex("40 05 61"), 1 << 20, &mut sink),
        Err(HpackError::Truncated)
    );
    // A Huffman string with EOS.
    assert_eq!(
        d.decode(&hex("40 84 ffff ffff 00"), 1 << 20, &mut sink),
        Err(HpackError::Huffman(HuffmanError::Eos))
    );
}

#[test]
fn an_hpack_bomb_stops_at_the_bound() {
    // One 4000-byte entry, then a thousand one-byte references to it:
    // 1 KiB on the wire, 4 MB decoded.
    let mut block = vec![0x40, 0x01, b'x'];
    write_int(4000, 7, 0, &mut block);
    block.extend_from_slice(&[b'v'; 4000]);
    block.extend_from_slice(&[0xbe; 1000]);
    let mut d = Decoder::new(4096);
    let mut seen = 0usize;
    let r = d.decode(&block, 64 * 1024, &mut |n, v| seen += n.len() + v.len());
    assert_eq!(r, Err(HpackError::TooLarge));
    assert!(
        seen <= 64 * 1024,
        "it stopped at the bound, not after {seen} bytes"
    );
}
