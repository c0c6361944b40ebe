//! `[static] sniff`: files without an extension are typed by their first
//! bytes, read once per cached file; files with one keep their table type,
//! and without the key nothing is sniffed.

use crate::common;

use common::*;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR";

/// A site of extensionless files; `big` is over the cache's in-memory
/// size, so it is sniffed with a read from its descriptor.
fn site(config: &str) -> Server {
    let mut b = Builder::new();
    b.file("image", PNG);
    let mut big = pattern(100_000);
    big[..PNG.len()].copy_from_slice(PNG);
    b.file("big", &big);
    b.file("doc", b"%PDF-1.7\n%\xe2\xe3\n");
    b.file("page", b"\n  <!DOCTYPE html>\n<title>x</title>");
    b.file("README", "Read me \u{2014} please.\n".as_bytes());
    b.file("blob", b"\x00\x01\x02\x03");
    b.file("empty", b"");
    b.file("Makefile.txt", PNG);
    b.file("notes", b"plain notes\n");
    b.file("notes.gz", b"\x1f\x8b\x08\x00fake");
    b.config(config);
    b.start()
}

fn content_type(s: &Server, path: &str) -> String {
    let r = s.get(path);
    assert_eq!(r.status, 200, "{path}");
    r.header("content-type").unwrap_or_default().to_string()
}

#[test]
fn files_without_an_extension_are_typed_by_their_first_bytes() {
    let s = site("[static]\nsniff = true\ndefault_type = \"application/x-unknown\"\n");
    for (path, want) in [
        ("/image", "image/png"),
        ("/big", "image/png"),
        ("/doc", "application/pdf"),
        ("/page", "text/html; charset=utf-8"),
        ("/README", "text/plain; charset=utf-8"),
        ("/blob", "application/x-unknown"),
        ("/empty", "application/x-unknown"),
        // An extension decides, whatever the bytes.
        ("/Makefile.txt", "text/plain; charset=utf-8"),
        ("/notes", "text/plain; charset=utf-8"),
    ] {
        assert_eq!(content_type(&s, path), want, "{path}");
    }
    // The whole answer, byte for byte, asked twice (the second from the cache).
    for _ in 0..2 {
        assert_file(&s.get("/image"), PNG, "image/png", "", Conn::Close);
    }
    // A range of a sniffed file, and a precompressed sidecar: the type
    // is the identity file's.
    let r = s.get_with("/big", "Range: bytes=50000-50009\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-type"), Some("image/png"));
    let r = s.get_with("/notes", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
}

#[test]
fn without_the_key_nothing_is_sniffed() {
    let s = site("");
    for path in ["/image", "/big", "/page", "/README"] {
        assert_eq!(content_type(&s, path), "application/octet-stream", "{path}");
    }
}

#[test]
fn a_changed_file_is_sniffed_again() {
    let mut b = Builder::new();
    b.file("thing", PNG);
    b.config("[static]\nsniff = true\nopen_file_cache_valid = \"0s\"\n");
    let root = b.root().to_path_buf();
    let s = b.start();
    assert_eq!(content_type(&s, "/thing"), "image/png");
    // A new version (another size, so the cache sees the change).
    write_file(&root.join("thing"), b"GIF89a\x01\x00\x01\x00\x00\x00\x00");
    wait_until("the new type", || content_type(&s, "/thing") == "image/gif");
}
