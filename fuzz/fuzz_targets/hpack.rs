//! Feeds arbitrary header blocks to an HPACK decoder (`brisk::h2::hpack`),
//! one after another on the same dynamic table (the first byte says
//! where the blocks are cut). Beyond "never panics":
//! the table stays within its size, what is decoded stays within the
//! bound given, and every block decoded encodes (by a connection's
//! encoder, with its table) and decodes back the same.

#![no_main]

use brisk::h2::hpack::{Decoder, Encoder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let mut d = Decoder::new(256);
    // What we decode is encoded again by a connection's encoder, whose
    // table a second decoder must follow block after block.
    let mut enc = Encoder::new();
    enc.set_limit(cut as u32 * 16);
    let mut check = Decoder::new(4096);
    // The first byte says how the rest is cut into blocks.
    for block in rest.chunks(cut as usize + 1) {
        let mut size = 0usize;
        let mut fields = Vec::new();
        let r = d.decode(block, 4096, &mut |n, v| {
            size += n.len() + v.len() + 32;
            fields.push((n.to_vec(), v.to_vec()));
        });
        assert!(d.table_size() <= 256);
        assert!(
            size <= 4096 + 32 + 2 * block.len(),
            "decoded {size} from {}",
            block.len()
        );
        if r.is_err() {
            return;
        }
        let mut block = Vec::new();
        enc.begin(&mut block);
        let fields: Vec<(Vec<u8>, Vec<u8>)> = fields
            .into_iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v))
            .collect();
        for (n, v) in &fields {
            enc.field(n, v, &mut block);
        }
        let mut back = Vec::new();
        check
            .decode(&block, 1 << 22, &mut |n2, v2| {
                back.push((n2.to_vec(), v2.to_vec()))
            })
            .expect("what we encode decodes");
        assert_eq!(back, fields);
    }
});
