//! Feeds arbitrary encoder-stream bytes, then an arbitrary field
//! section, to the QPACK decoder (`brisk::h3::qpack`: its dynamic table
//! and the section's lines). The first byte says how many of the rest
//! go to the encoder stream (in two reads, cut at half). Beyond "never
//! panics": what is decoded stays within the bound given, and every
//! section decoded encodes (by brisk's encoder, static table and
//! literals) and decodes back the same.

#![no_main]

use brisk::h3::qpack;
use libfuzzer_sys::fuzz_target;

const MAX: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&n, data)) = data.split_first() else {
        return;
    };
    let (stream, data) = data.split_at((n as usize).min(data.len()));
    let mut table = qpack::Table::default();
    let (a, b) = stream.split_at(stream.len() / 2);
    if table
        .encoder_stream(a)
        .and_then(|()| table.encoder_stream(b))
        .is_err()
    {
        return;
    }
    let mut scratch = (Vec::new(), Vec::new());
    let mut fields = Vec::new();
    let mut size = 0usize;
    let r = qpack::decode(data, MAX, &table, &mut scratch, &mut |n, v| {
        size += n.len() + v.len() + 32;
        fields.push((n.to_vec(), v.to_vec()));
    });
    assert!(size <= MAX);
    if r.is_err() {
        return;
    }
    let mut again = Vec::new();
    qpack::begin(&mut again);
    for (n, v) in &fields {
        qpack::field(n, v, &mut again);
    }
    let mut back = Vec::new();
    qpack::decode(&again, MAX, &table, &mut scratch, &mut |n, v| {
        back.push((n.to_vec(), v.to_vec()))
    })
    .expect("brisk's own section decodes");
    assert_eq!(back, fields);
});
