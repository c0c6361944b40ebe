//! Feeds arbitrary field sections to the QPACK decoder (`brisk::h3::qpack`,
//! static table and literals only). Beyond "never panics": what is
//! decoded stays within the bound given, and every section decoded
//! encodes (by brisk's encoder) and decodes back the same.

#![no_main]

use brisk::h3::qpack;
use libfuzzer_sys::fuzz_target;

const MAX: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let mut scratch = (Vec::new(), Vec::new());
    let mut fields = Vec::new();
    let mut size = 0usize;
    let r = qpack::decode(data, MAX, &mut scratch, &mut |n, v| {
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
    qpack::decode(&again, MAX, &mut scratch, &mut |n, v| {
        back.push((n.to_vec(), v.to_vec()))
    })
    .expect("brisk's own section decodes");
    assert_eq!(back, fields);
});
