//! Directory listings as JSON (`?format=json` or `Accept:
//! application/json`): an array with one object per entry, in the order
//! the listing is sorted, for scripts (`curl … | jq`):
//!
//! ```json
//! [
//! {"name":"docs","url":"docs/","is_dir":true,"size":4096,"mtime":"2024-01-02T03:04:05Z"},
//! {"name":"a b.txt","url":"a%20b.txt","is_dir":false,"size":5,"mtime":"2024-01-02T03:04:05Z"}
//! ]
//! ```
//!
//! `name` is the file name as text (invalid UTF-8 replaced by U+FFFD,
//! escaped as JSON strings are, `<>&` included); `url` links to the entry
//! relative to the directory, percent-encoded from the exact bytes (so a
//! name that is not UTF-8 still has a working link); `size` is what `stat`
//! says (for a directory too); `mtime` is RFC 3339 in UTC.

use super::{listable, push_href, push_rfc3339, sort, Entry, View};
use crate::http::json::push_string;
use crate::http::push_u64;

/// Renders `entries`, sorted as `view` says, into `out` as a JSON array.
pub fn render(entries: &mut [Entry], view: &View, out: &mut Vec<u8>) {
    sort(entries, view);
    out.push(b'[');
    let mut first = true;
    for e in entries.iter().filter(|e| listable(e)) {
        out.extend_from_slice(if first { b"\n" } else { b",\n" });
        first = false;
        out.extend_from_slice(b"{\"name\":");
        push_string(&String::from_utf8_lossy(&e.name), out);
        out.extend_from_slice(b",\"url\":\"");
        push_href(out, &e.name);
        if e.is_dir {
            out.push(b'/');
        }
        out.extend_from_slice(b"\",\"is_dir\":");
        out.extend_from_slice(if e.is_dir { b"true" } else { b"false" });
        out.extend_from_slice(b",\"size\":");
        push_u64(out, e.size);
        out.extend_from_slice(b",\"mtime\":\"");
        push_rfc3339(out, e.mtime);
        out.extend_from_slice(b"\"}");
    }
    out.extend_from_slice(b"\n]\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handlers::autoindex::SortKey;

    fn entry(name: &[u8], is_dir: bool, size: u64, mtime: u64) -> Entry {
        Entry {
            name: name.to_vec(),
            is_dir,
            size,
            mtime,
        }
    }

    #[test]
    fn exact_document() {
        let mut entries = [
            entry(b"b.txt", false, 5, 1_795_312_259),
            entry(b"sub dir", true, 4096, 0),
            entry(b"<a>\"q\"\\\xff", false, 0, 951_825_599),
            // (No request can name it: left out.)
            entry(b"line\nbreak", false, 0, 0),
            entry(b"..", true, 4096, 0),
        ];
        let mut out = Vec::new();
        render(&mut entries, &View::default(), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[\n\
             {\"name\":\"sub dir\",\"url\":\"sub%20dir/\",\"is_dir\":true,\"size\":4096,\"mtime\":\"1970-01-01T00:00:00Z\"},\n\
             {\"name\":\"\\u003ca\\u003e\\\"q\\\"\\\\\u{fffd}\",\"url\":\"%3Ca%3E%22q%22%5C%FF\",\"is_dir\":false,\"size\":0,\"mtime\":\"2000-02-29T11:59:59Z\"},\n\
             {\"name\":\"b.txt\",\"url\":\"b.txt\",\"is_dir\":false,\"size\":5,\"mtime\":\"2026-11-22T01:50:59Z\"}\n\
             ]\n"
        );
    }

    #[test]
    fn empty_directory_and_sorting() {
        let mut out = Vec::new();
        render(&mut [], &View::default(), &mut out);
        assert_eq!(out, b"[\n]\n");
        let mut entries = [
            entry(b"small", false, 1, 30),
            entry(b"big", false, 100, 10),
            entry(b"mid", false, 50, 20),
        ];
        let names = |entries: &[Entry]| -> Vec<Vec<u8>> {
            entries.iter().map(|e| e.name.clone()).collect()
        };
        let view = View {
            sort: SortKey::Size,
            desc: true,
            ..View::default()
        };
        out.clear();
        render(&mut entries, &view, &mut out);
        assert_eq!(names(&entries), [&b"big"[..], b"mid", b"small"]);
        let view = View {
            sort: SortKey::Time,
            ..View::default()
        };
        render(&mut entries, &view, &mut out);
        assert_eq!(names(&entries), [&b"big"[..], b"mid", b"small"]);
    }
}
