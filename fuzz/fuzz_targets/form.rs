//! The decoders servlets hand client bytes to: urlencoded fields,
//! multipart/form-data (its boundary from a Content-Type), and JSON.
//! Beyond "never panics": multipart parts lie inside the body, in order,
//! and a JSON document that decodes encodes its strings back to valid
//! JSON strings.

#![no_main]

use brisk::http::{form, json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Fields: never more than the cap, and each decoded name and value
    // no longer than the input.
    let fields = form::urlencoded(data);
    assert!(fields.len() <= form::MAX_FIELDS);
    for (n, v) in &fields {
        assert!(n.len() + v.len() <= data.len());
    }
    // The first line is a Content-Type, the rest a multipart body.
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (ctype, body) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let boundary = form::boundary(ctype).unwrap_or(b"B");
    if let Ok(parts) = form::multipart(body, boundary) {
        let base = body.as_ptr() as usize;
        let mut last = 0;
        for p in parts {
            let at = p.data.as_ptr() as usize - base;
            assert!(at >= last && at + p.data.len() <= body.len());
            last = at + p.data.len();
        }
    }
    if let Ok(v) = json::decode(data) {
        check(&v);
    }
});

/// Every string of a decoded document encodes to a string that decodes
/// back to itself.
fn check(v: &json::Json) {
    match v {
        json::Json::Str(s) => {
            let mut out = Vec::new();
            json::push_string(s, &mut out);
            assert_eq!(json::decode(&out), Ok(json::Json::Str(s.clone())));
        }
        json::Json::Array(items) => items.iter().for_each(check),
        json::Json::Object(m) => m.iter().for_each(|(_, v)| check(v)),
        _ => {}
    }
}
