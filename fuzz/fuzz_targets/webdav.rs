//! What WebDAV reads from a client (brisk::handlers::webdav): the XML
//! reader and the PROPFIND, PROPPATCH and LOCK bodies read with it, the
//! `If` header (RFC 4918 §10.4) and `Destination` (§10.3). Beyond "never
//! panics": a document's elements stay within the reader's bounds and
//! within the input, each inside its parent; an element's content given
//! back on its own (a dead property's value, a lock's owner) reads again
//! as XML inside a root of its own, as RFC 4918 §4.4 needs of it; the
//! `If` header's tags and conditions are pieces of the value; a
//! destination that is accepted has no dot-segment left.

#![no_main]

use brisk::handlers::webdav::{self, ifheader, xml};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = xml::parse(data) {
        check_document(&doc, data);
    }
    let _ = webdav::asked(data);
    let _ = webdav::proppatch_ops(data);
    if let Some(lock) = webdav::lockinfo(data) {
        // (The owner is given back inside a `D:owner` element.)
        let mut doc = b"<D:owner xmlns:D=\"DAV:\">".to_vec();
        doc.extend_from_slice(&lock.owner);
        doc.extend_from_slice(b"</D:owner>");
        assert!(
            xml::parse(&doc).is_ok(),
            "an owner that does not read again"
        );
    }
    if let Some(lists) = ifheader::parse(data) {
        let within = |s: &[u8]| {
            let (at, base) = (s.as_ptr() as usize, data.as_ptr() as usize);
            at >= base && at + s.len() <= base + data.len()
        };
        for list in &lists {
            assert!(list.tag.is_none_or(within));
            for c in &list.conditions {
                let (ifheader::Cond::Token(t) | ifheader::Cond::Etag(t)) = c.what;
                assert!(within(t));
            }
        }
    }
    let mut out = Vec::new();
    if webdav::destination(data, Some(b"localhost"), &mut out).is_ok() {
        assert!(out.starts_with(b"/"));
        let dots = out
            .split(|&b| b == b'/')
            .any(|seg| seg == b"." || seg == b"..");
        assert!(!dots, "a dot-segment left in {out:?}");
    }
});

/// The invariants of a document read from `input`.
fn check_document(doc: &xml::Document, input: &[u8]) {
    assert!(!doc.elements.is_empty() && doc.elements.len() <= xml::MAX_ELEMENTS);
    for (i, e) in doc.elements.iter().enumerate() {
        let (from, to) = e.inner;
        assert!(e.start < from && from <= to && to <= input.len());
        let mut depth = 1;
        let mut at = e.parent;
        while let Some(p) = at {
            assert!(p < i, "a parent after its child");
            let parent = &doc.elements[p];
            assert!(parent.inner.0 <= e.start && to <= parent.inner.1);
            depth += 1;
            at = parent.parent;
        }
        assert!(depth <= xml::MAX_DEPTH);
        assert_eq!(e.parent.is_none(), i == 0, "one root, first");
        // Its content on its own, in a root of its own, is XML again.
        let mut alone = b"<r>".to_vec();
        alone.extend_from_slice(&doc.fragment(input, i));
        alone.extend_from_slice(b"</r>");
        if let Err(e) = xml::parse(&alone) {
            panic!(
                "element {i}'s content alone: {e:?}: {}",
                String::from_utf8_lossy(&alone)
            );
        }
    }
}
