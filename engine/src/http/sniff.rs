//! Content sniffing for files without an extension (`[static] sniff`):
//! the type is read from the first bytes of the file, as `file --mime-type`
//! would tell it, from a table of magic numbers. Only formats whose
//! signature cannot be mistaken are named; anything else gets the default
//! type.
//!
//! HTML is recognised the way browsers do it (the WHATWG MIME Sniffing
//! Standard, §7.1 "identifying a resource with an unknown MIME type"): a
//! leading tag such as `<!DOCTYPE HTML` or `<html` after optional
//! whitespace, case-insensitively. That is why sniffing is off by
//! default: a site that takes uploads without extensions would otherwise
//! serve an uploaded page as HTML.

use crate::ascii::IgnoreCase;

/// How many bytes of a file sniffing looks at (the WHATWG standard's
/// resource header is 512 bytes too).
pub const SNIFF_LEN: usize = 512;

/// Signatures at the start of the file: bytes, `Content-Type`.
static MAGIC: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),
    (b"\x1f\x8b\x08", "application/gzip"),
    (b"BZh", "application/x-bzip2"),
    (b"\xfd7zXZ\x00", "application/x-xz"),
    (b"\x28\xb5\x2f\xfd", "application/zstd"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"\x7fELF", "application/x-executable"),
    (b"\x00asm", "application/wasm"),
    (b"wOFF", "font/woff"),
    (b"wOF2", "font/woff2"),
    (b"OggS\x00", "application/ogg"),
    (b"fLaC", "audio/flac"),
    (b"ID3", "audio/mpeg"),
    (b"\x1aE\xdf\xa3", "video/webm"),
    (b"%!PS-Adobe-", "application/postscript"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
];

/// Signatures with a hole: `RIFF` + 4 bytes of size + a form type, and
/// ISO BMFF's `ftyp` box at offset 4 followed by a brand.
static RIFF: &[(&[u8; 4], &str)] = &[
    (b"WEBP", "image/webp"),
    (b"WAVE", "audio/wav"),
    (b"AVI ", "video/x-msvideo"),
];
static FTYP: &[(&[u8; 4], &str)] = &[
    (b"avif", "image/avif"),
    (b"avis", "image/avif"),
    (b"heic", "image/heic"),
    (b"isom", "video/mp4"),
    (b"iso2", "video/mp4"),
    (b"mp41", "video/mp4"),
    (b"mp42", "video/mp4"),
    (b"M4A ", "audio/mp4"),
    (b"qt  ", "video/quicktime"),
];

/// Tags that start an HTML document (WHATWG MIME Sniffing §7.1), each to
/// be followed by a space or `>` (a "tag-terminating byte").
static HTML_TAGS: &[&[u8]] = &[
    b"<!DOCTYPE HTML",
    b"<HTML",
    b"<HEAD",
    b"<SCRIPT",
    b"<IFRAME",
    b"<H1",
    b"<DIV",
    b"<FONT",
    b"<TABLE",
    b"<A",
    b"<STYLE",
    b"<TITLE",
    b"<B",
    b"<BODY",
    b"<BR",
    b"<P",
    b"<!--",
];

/// The `Content-Type` the first bytes of a file (`head`, at most
/// [`SNIFF_LEN`] of them) show, if any. `whole` says whether `head` is the
/// entire file, so that a UTF-8 sequence cut at the end of `head` is not
/// taken for invalid text. An empty file shows nothing.
pub fn sniff(head: &[u8], whole: bool) -> Option<&'static str> {
    if head.is_empty() {
        return None;
    }
    if let Some(&(_, ty)) = MAGIC.iter().find(|(magic, _)| head.starts_with(magic)) {
        return Some(ty);
    }
    if head.len() >= 12 {
        let (tag, kind) = (&head[..4], &head[8..12]);
        let found = match tag {
            b"RIFF" => RIFF.iter().find(|(form, _)| &form[..] == kind),
            _ if &head[4..8] == b"ftyp" => FTYP.iter().find(|(brand, _)| &brand[..] == kind),
            _ => None,
        };
        if let Some(&(_, ty)) = found {
            return Some(ty);
        }
    }
    let text = text_prefix(head, whole)?;
    let utf8 = match text {
        Text::Utf8 => true,
        Text::Other => false,
    };
    let body = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = body
        .iter()
        .position(|b| !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' '))
        .unwrap_or(body.len());
    let body = &body[start..];
    let is_html = HTML_TAGS.iter().any(|tag| {
        body.len() > tag.len()
            && body[..tag.len()].eq_ignore_case(tag)
            && matches!(body[tag.len()], b' ' | b'>')
    });
    Some(match (is_html, utf8) {
        (true, true) => "text/html; charset=utf-8",
        (true, false) => "text/html",
        (false, true) => "text/plain; charset=utf-8",
        // Bytes that are neither binary nor UTF-8 (Latin-1 text, say) are
        // left to the default type rather than guessed at.
        (false, false) => return None,
    })
}

enum Text {
    Utf8,
    /// No binary bytes, but not UTF-8 either.
    Other,
}

/// Whether `head` looks like text: no NUL and no control characters but
/// tab, line feed, form feed, carriage return and escape (what `file` also
/// accepts in text), and whether it is UTF-8.
fn text_prefix(head: &[u8], whole: bool) -> Option<Text> {
    if head
        .iter()
        .any(|&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | 0x1b)) || b == 0x7f)
    {
        return None;
    }
    let valid = match std::str::from_utf8(head) {
        Ok(_) => true,
        // A sequence cut by the end of the sniffed bytes is not an error.
        Err(e) => !whole && e.error_len().is_none(),
    };
    Some(if valid { Text::Utf8 } else { Text::Other })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers() {
        let cases: &[(&[u8], &str)] = &[
            (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
            (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
            (b"GIF89a\x01\x00", "image/gif"),
            (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
            (b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav"),
            (b"%PDF-1.7\n", "application/pdf"),
            (b"PK\x03\x04\x14\x00", "application/zip"),
            (b"\x1f\x8b\x08\x00\x00\x00", "application/gzip"),
            (b"\x7fELF\x02\x01\x01", "application/x-executable"),
            (b"\x00asm\x01\x00\x00\x00", "application/wasm"),
            (b"\x00\x00\x00\x20ftypisom\x00\x00", "video/mp4"),
            (b"\x00\x00\x00\x1cftypavif\x00\x00", "image/avif"),
            (b"\x28\xb5\x2f\xfd\x04\x00", "application/zstd"),
        ];
        for &(head, want) in cases {
            assert_eq!(sniff(head, true), Some(want), "{head:?}");
        }
    }

    #[test]
    fn html_as_browsers_see_it() {
        for head in [
            &b"<!DOCTYPE html>\n<html>"[..],
            b"  \n<HTML lang=en>",
            b"\xef\xbb\xbf<html>",
            b"<p>hi",
            b"<!-- x -->",
            b"<script>alert(1)</script>",
        ] {
            assert_eq!(
                sniff(head, true),
                Some("text/html; charset=utf-8"),
                "{head:?}"
            );
        }
        // A tag must end where the table's does: `<pre>` is not `<p`.
        for head in [&b"<pre>x"[..], b"<html", b"x <html>", b"<abbr>"] {
            assert_eq!(
                sniff(head, true),
                Some("text/plain; charset=utf-8"),
                "{head:?}"
            );
        }
        assert_eq!(sniff(b"<html>caf\xe9", true), Some("text/html"));
    }

    #[test]
    fn text_and_binary() {
        assert_eq!(
            sniff(b"#!/bin/sh\necho hi\n", true),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(
            sniff("h\u{e9}llo\r\n\t".as_bytes(), true),
            Some("text/plain; charset=utf-8")
        );
        // NULs and other controls are binary; Latin-1 text is not guessed.
        assert_eq!(sniff(b"ab\x00cd", true), None);
        assert_eq!(sniff(b"ab\x01cd", true), None);
        assert_eq!(sniff(b"caf\xe9", true), None);
        assert_eq!(sniff(b"", true), None);
        assert_eq!(sniff(b" \n ", true), Some("text/plain; charset=utf-8"));
        // A character cut by the end of the sniffed bytes is still text,
        // unless those bytes are the whole file.
        let cut = &"ab\u{20ac}".as_bytes()[..3];
        assert_eq!(sniff(cut, false), Some("text/plain; charset=utf-8"));
        assert_eq!(sniff(cut, true), None);
    }
}
