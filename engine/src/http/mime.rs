//! Content types by file extension: a built-in table, optionally the
//! types of a `mime.types` file over it, and `[mime]` overrides over both.
//!
//! The three are merged once, when the table is made, into one index of
//! complete `Content-Type` values (charset included): an extension of up
//! to 8 bytes is looked up as one integer (its lower-cased bytes packed
//! into a `u64`) in a hashed table, a longer one in a second sorted list,
//! compared lower-casing as it goes. No allocation on the hot path, and
//! no byte-string comparison for the usual `html`, `css` or `js`: the
//! lookup ran once per static answer and was 8 % of the user-space
//! instructions of a 100-byte file's request (callgrind, 2026-11-29)
//! when it searched a `mime.types` table of ~1,000 extensions by
//! `memcmp`.

/// The type for files whose extension is unknown, unless configured
/// otherwise (`[static] default_type`).
pub const DEFAULT_TYPE: &str = "application/octet-stream";

/// Longest extension in the built-in table (the tests check it).
#[cfg(test)]
const MAX_EXT_LEN: usize = 16;
/// Longest extension looked up in a `mime.types` file's table.
const MAX_FILE_EXT_LEN: usize = 64;

/// Built-in types: IANA-registered where a registration exists (RFC 9239
/// `text/javascript`, RFC 9512 `application/yaml`, RFC 9559 Matroska…),
/// otherwise the type browsers and other servers agree on. Program sources
/// and shell scripts are `text/plain` so that a browser shows them rather
/// than offering a download or guessing. Sorted bytewise by extension,
/// lower case; the tests check both, and that the charset rule holds.
static BUILTIN: &[(&str, &str)] = &[
    ("3g2", "video/3gpp2"),
    ("3gp", "video/3gpp"),
    ("7z", "application/x-7z-compressed"),
    ("aac", "audio/aac"),
    ("apk", "application/vnd.android.package-archive"),
    ("apng", "image/apng"),
    ("appcache", "text/cache-manifest; charset=utf-8"),
    ("asc", "application/pgp-signature"),
    ("atom", "application/atom+xml; charset=utf-8"),
    ("avi", "video/x-msvideo"),
    ("avif", "image/avif"),
    ("bash", "text/plain; charset=utf-8"),
    ("bin", "application/octet-stream"),
    ("bmp", "image/bmp"),
    ("br", "application/x-brotli"),
    ("bz2", "application/x-bzip2"),
    ("c", "text/plain; charset=utf-8"),
    ("cc", "text/plain; charset=utf-8"),
    ("cer", "application/pkix-cert"),
    ("cjs", "text/javascript; charset=utf-8"),
    ("cpp", "text/plain; charset=utf-8"),
    ("crl", "application/pkix-crl"),
    ("crt", "application/x-x509-ca-cert"),
    ("css", "text/css; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("cur", "image/vnd.microsoft.icon"),
    ("deb", "application/vnd.debian.binary-package"),
    ("der", "application/x-x509-ca-cert"),
    ("diff", "text/x-diff; charset=utf-8"),
    ("dll", "application/vnd.microsoft.portable-executable"),
    ("dmg", "application/x-apple-diskimage"),
    ("doc", "application/msword"),
    (
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    ("dot", "application/msword"),
    ("ear", "application/java-archive"),
    ("eot", "application/vnd.ms-fontobject"),
    ("epub", "application/epub+zip"),
    ("exe", "application/vnd.microsoft.portable-executable"),
    ("flac", "audio/flac"),
    ("gif", "image/gif"),
    ("go", "text/plain; charset=utf-8"),
    ("gpg", "application/pgp-encrypted"),
    ("gz", "application/gzip"),
    ("h", "text/plain; charset=utf-8"),
    ("heic", "image/heic"),
    ("heif", "image/heif"),
    ("hpp", "text/plain; charset=utf-8"),
    ("htm", "text/html; charset=utf-8"),
    ("html", "text/html; charset=utf-8"),
    ("ico", "image/vnd.microsoft.icon"),
    ("ics", "text/calendar; charset=utf-8"),
    ("img", "application/octet-stream"),
    ("iso", "application/x-iso9660-image"),
    ("jar", "application/java-archive"),
    ("java", "text/plain; charset=utf-8"),
    ("jfif", "image/jpeg"),
    ("jpe", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("jpg", "image/jpeg"),
    ("js", "text/javascript; charset=utf-8"),
    ("json", "application/json; charset=utf-8"),
    ("jsonld", "application/ld+json; charset=utf-8"),
    ("jxl", "image/jxl"),
    ("log", "text/plain; charset=utf-8"),
    ("lz", "application/x-lzip"),
    ("lzma", "application/x-lzma"),
    ("m3u", "audio/x-mpegurl"),
    ("m3u8", "application/vnd.apple.mpegurl"),
    ("m4a", "audio/mp4"),
    ("m4v", "video/mp4"),
    ("manifest", "text/cache-manifest; charset=utf-8"),
    ("map", "application/json; charset=utf-8"),
    ("markdown", "text/markdown; charset=utf-8"),
    ("md", "text/markdown; charset=utf-8"),
    ("mid", "audio/midi"),
    ("midi", "audio/midi"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("mka", "audio/matroska"),
    ("mkv", "video/matroska"),
    ("mov", "video/quicktime"),
    ("mp3", "audio/mpeg"),
    ("mp4", "video/mp4"),
    ("mpd", "application/dash+xml"),
    ("mpeg", "video/mpeg"),
    ("mpg", "video/mpeg"),
    ("msi", "application/x-msi"),
    ("odg", "application/vnd.oasis.opendocument.graphics"),
    ("odp", "application/vnd.oasis.opendocument.presentation"),
    ("ods", "application/vnd.oasis.opendocument.spreadsheet"),
    ("odt", "application/vnd.oasis.opendocument.text"),
    ("oga", "audio/ogg"),
    ("ogg", "audio/ogg"),
    ("ogv", "video/ogg"),
    ("opus", "audio/ogg"),
    ("otf", "font/otf"),
    ("p12", "application/pkcs12"),
    ("patch", "text/x-diff; charset=utf-8"),
    ("pdf", "application/pdf"),
    ("pem", "application/x-pem-file"),
    ("pfx", "application/pkcs12"),
    ("pgp", "application/pgp-encrypted"),
    ("pjp", "image/jpeg"),
    ("pjpeg", "image/jpeg"),
    ("pl", "text/plain; charset=utf-8"),
    ("png", "image/png"),
    ("ppt", "application/vnd.ms-powerpoint"),
    (
        "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    ("py", "text/plain; charset=utf-8"),
    ("qt", "video/quicktime"),
    ("rar", "application/vnd.rar"),
    ("rb", "text/plain; charset=utf-8"),
    ("rpm", "application/x-rpm"),
    ("rs", "text/plain; charset=utf-8"),
    ("rss", "application/rss+xml; charset=utf-8"),
    ("rtf", "application/rtf"),
    ("sh", "text/plain; charset=utf-8"),
    ("shtml", "text/html; charset=utf-8"),
    ("sig", "application/pgp-signature"),
    ("spx", "audio/ogg"),
    ("srt", "application/x-subrip"),
    ("svg", "image/svg+xml; charset=utf-8"),
    ("svgz", "image/svg+xml; charset=utf-8"),
    ("swf", "application/vnd.adobe.flash.movie"),
    ("tar", "application/x-tar"),
    ("text", "text/plain; charset=utf-8"),
    ("tgz", "application/gzip"),
    ("tif", "image/tiff"),
    ("tiff", "image/tiff"),
    ("toml", "application/toml"),
    ("torrent", "application/x-bittorrent"),
    ("ts", "video/mp2t"),
    ("tsv", "text/tab-separated-values; charset=utf-8"),
    ("ttf", "font/ttf"),
    ("txt", "text/plain; charset=utf-8"),
    ("vcf", "text/vcard; charset=utf-8"),
    ("vtt", "text/vtt; charset=utf-8"),
    ("war", "application/java-archive"),
    ("wasm", "application/wasm"),
    ("wav", "audio/wav"),
    ("weba", "audio/webm"),
    ("webm", "video/webm"),
    ("webmanifest", "application/manifest+json; charset=utf-8"),
    ("webp", "image/webp"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("xhtml", "application/xhtml+xml; charset=utf-8"),
    ("xls", "application/vnd.ms-excel"),
    (
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    ("xml", "application/xml; charset=utf-8"),
    ("xsl", "application/xml; charset=utf-8"),
    ("xz", "application/x-xz"),
    ("yaml", "application/yaml"),
    ("yml", "application/yaml"),
    ("zip", "application/zip"),
    ("zst", "application/zstd"),
];

/// Whether a media type (without parameters, lower case) is text that
/// brisk serves as UTF-8, so its `Content-Type` gets `; charset=utf-8`:
/// every `text/*` and the textual JSON and XML application types.
pub fn is_textual(essence: &str) -> bool {
    essence.starts_with("text/")
        || matches!(
            essence,
            "application/json"
                | "application/ld+json"
                | "application/manifest+json"
                | "application/xml"
                | "application/xhtml+xml"
                | "image/svg+xml"
                | "application/atom+xml"
                | "application/rss+xml"
        )
}

/// Extension → content-type table: the built-in types, those of a
/// `mime.types` file, and configured overrides.
#[derive(Debug, Clone)]
pub struct MimeTable {
    /// Extensions of at most 8 bytes, by [`pack`], with their index in
    /// `types`: an open-addressed table (linear probing, at most half
    /// full, 0 for a free slot: no extension packs to 0) of a power of
    /// two slots, found at [`slot`] (one multiplication instead of a
    /// binary search's ten steps, for every static answer).
    short: Vec<(u64, u32)>,
    /// Longer extensions, lower case, sorted bytewise, with their index
    /// in `types`.
    long: Vec<(Box<[u8]>, u32)>,
    /// The full `Content-Type` values.
    types: Vec<Box<str>>,
    /// For files with no extension, or an unknown one.
    default: Box<str>,
}

/// An extension of at most 8 bytes as one integer: its bytes lower-cased,
/// big-endian, zero-padded. Only extensions without a NUL byte are packed
/// (the table keeps none, and a lookup with one finds nothing), so two
/// pack to the same integer only when they are equal ignoring case.
fn pack(ext: &[u8]) -> u64 {
    debug_assert!(ext.len() <= 8);
    let mut key = 0u64;
    for &b in ext {
        key = key << 8 | u64::from(b.to_ascii_lowercase());
    }
    key << (8 * (8 - ext.len()))
}

/// Adds `; charset=utf-8` to a textual type that has no charset yet.
fn with_charset(content_type: &str) -> String {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let has_charset = content_type.to_ascii_lowercase().contains("charset=");
    if is_textual(&essence) && !has_charset {
        format!("{}; charset=utf-8", content_type.trim())
    } else {
        content_type.trim().to_owned()
    }
}

/// The last extension of the last segment of `path`, if any. A leading
/// dot names a dotfile (`.bashrc`), not an extension.
pub fn extension(path: &[u8]) -> Option<&[u8]> {
    // One scan back to the last dot or slash: a slash first means none.
    match path.iter().rposition(|&b| b == b'.' || b == b'/') {
        Some(dot)
            if path[dot] == b'.' && dot > 0 && path[dot - 1] != b'/' && dot + 1 < path.len() =>
        {
            Some(&path[dot + 1..])
        }
        _ => None,
    }
}

/// Whether the last segment of `path` has an extension that a type table
/// could name (`a.txt`, not `Makefile`, `.profile` or `file.`).
pub fn has_extension(path: &[u8]) -> bool {
    extension(path).is_some()
}

impl MimeTable {
    /// The built-in table with `overrides` (extension without dot → full
    /// content type) taking precedence.
    ///
    /// Extensions are matched case-insensitively (a leading dot is
    /// tolerated); for a repeated extension the last override wins. The
    /// charset rule of [`is_textual`] applies to overrides too unless they
    /// name a `charset=` themselves. An override whose type contains a
    /// control character could split the response head, so it is dropped;
    /// the config layer is expected to have refused it already.
    pub fn new(overrides: &[(String, String)]) -> MimeTable {
        MimeTable::with_file(overrides, &[], DEFAULT_TYPE)
    }

    /// As [`MimeTable::new`], with the types read from a `mime.types` file
    /// (extension → type, in file order: for an extension listed twice the
    /// later line wins, as in Apache) between the overrides and the
    /// built-in table, and `default_type` for files the tables do not
    /// name. The charset rule applies to all of them; entries the config
    /// layer should have refused (control characters) are dropped.
    pub fn with_file(
        overrides: &[(String, String)],
        file_types: &[(String, String)],
        default_type: &str,
    ) -> MimeTable {
        let usable = |ext: &str, ty: &str| {
            !ext.is_empty()
                && !ext.contains('\0')
                && !ty.trim().is_empty()
                && !ty.bytes().any(|b| b < 0x20 || b == 0x7f)
        };
        // Lowest precedence first, each later insertion replacing: the
        // built-in types (sorted already), the file's in file order (its
        // last line for an extension wins, as in Apache), the overrides in
        // order. Kept sorted by binary-search insertion (a map type would
        // add ~14 KB of code to the binary for this one use).
        let mut merged: Vec<(Vec<u8>, String)> = BUILTIN
            .iter()
            .map(|(ext, ty)| (ext.as_bytes().to_vec(), (*ty).to_owned()))
            .collect();
        let mut insert = |ext: &str, ty: String| {
            let ext = ext.to_ascii_lowercase().into_bytes();
            match merged.binary_search_by(|(e, _)| e.cmp(&ext)) {
                Ok(i) => merged[i].1 = ty,
                Err(i) => merged.insert(i, (ext, ty)),
            }
        };
        for (ext, ty) in file_types {
            if usable(ext, ty) && ext.len() <= MAX_FILE_EXT_LEN {
                insert(ext, with_charset(ty));
            }
        }
        for (ext, ty) in overrides {
            let ext = ext.strip_prefix('.').unwrap_or(ext);
            if usable(ext, ty) {
                insert(ext, with_charset(ty));
            }
        }
        let shorts = merged.iter().filter(|(e, _)| e.len() <= 8).count();
        let mut table = MimeTable {
            short: vec![(0, 0); (2 * shorts).next_power_of_two().max(16)],
            long: Vec::new(),
            types: Vec::with_capacity(merged.len()),
            default: if usable("-", default_type) {
                with_charset(default_type).into()
            } else {
                DEFAULT_TYPE.into()
            },
        };
        // In bytewise order: `long` comes out sorted.
        for (ext, ty) in merged {
            let i = u32::try_from(table.types.len()).unwrap_or(u32::MAX);
            table.types.push(ty.into_boxed_str());
            if ext.len() <= 8 {
                let key = pack(&ext);
                let mask = table.short.len() - 1;
                let mut at = slot(key, mask);
                while table.short[at].0 != 0 {
                    at = (at + 1) & mask;
                }
                table.short[at] = (key, i);
            } else {
                table.long.push((ext.into_boxed_slice(), i));
            }
        }
        table
    }

    /// The value given to files no table names.
    pub fn default_type(&self) -> &str {
        &self.default
    }

    /// The full `Content-Type` value for a file name or path (by its last
    /// extension, case-insensitive), with `; charset=utf-8` on text types.
    ///
    /// `a.tar.gz` is `gz`; no extension or an unknown one gives the
    /// default type ([`DEFAULT_TYPE`] unless configured). Never allocates.
    pub fn lookup(&self, path: &[u8]) -> &str {
        let Some(ext) = extension(path) else {
            return &self.default;
        };
        let found = if ext.len() <= 8 {
            let key = pack(ext);
            let mask = self.short.len() - 1;
            let mut at = slot(key, mask);
            loop {
                match self.short[at] {
                    (0, _) => break None,
                    (k, i) if k == key => break Some(i).filter(|_| !has_nul(key, ext.len())),
                    _ => at = (at + 1) & mask,
                }
            }
        } else if ext.contains(&0) {
            None
        } else {
            let lower = ext.iter().map(u8::to_ascii_lowercase);
            self.long
                .binary_search_by(|(e, _)| e.iter().copied().cmp(lower.clone()))
                .ok()
                .map(|i| self.long[i].1)
        };
        match found {
            Some(i) => &self.types[i as usize],
            None => &self.default,
        }
    }
}

/// Whether the `len` bytes `key` packs ([`pack`]) hold a NUL, which packs
/// as padding would (such a name is no key): its bytes with the padding
/// set, by the "has a zero byte" test.
fn has_nul(key: u64, len: usize) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    let padding = u64::MAX.checked_shr(8 * len as u32).unwrap_or(0);
    let word = key | padding;
    word.wrapping_sub(LO) & !word & (LO << 7) != 0
}

/// Where the search for the packed extension `key` starts in a table of
/// `mask + 1` slots (a power of two): Fibonacci hashing, the product's
/// top bits.
fn slot(key: u64, mask: usize) -> usize {
    // (The product's top bits, which every bit of the key reaches: a key
    // packs to the left, so an extension of three letters has its low 40
    // bits zero, and so had the product; the bits from 32 up that this
    // took were zero for every such extension, all in one probe chain.)
    // (`mask + 1` is 16 or more: the shift is 60 at most.)
    let bits = (mask + 1).trailing_zeros();
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
}

impl Default for MimeTable {
    /// The built-in table alone.
    fn default() -> Self {
        MimeTable::new(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> MimeTable {
        MimeTable::new(&[])
    }

    #[test]
    fn table_is_sorted_lower_case_and_short() {
        for pair in BUILTIN.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        for (ext, _) in BUILTIN {
            assert!(!ext.is_empty() && ext.len() <= MAX_EXT_LEN, "{ext}");
            assert!(ext
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        }
    }

    #[test]
    fn table_follows_the_charset_rule() {
        for (ext, value) in BUILTIN {
            let (essence, params) = match value.split_once("; ") {
                Some((e, p)) => (e, Some(p)),
                None => (*value, None),
            };
            if is_textual(essence) {
                assert_eq!(params, Some("charset=utf-8"), "{ext}");
            } else {
                assert_eq!(params, None, "{ext}");
            }
            assert!(!value.bytes().any(|b| b.is_ascii_uppercase()), "{ext}");
        }
    }

    #[test]
    fn every_requested_extension_is_known() {
        let t = builtin();
        let wanted = "html htm shtml css js mjs cjs json jsonld map xml xhtml txt text csv tsv \
            md markdown ics vcf vtt srt svg svgz wasm woff woff2 ttf otf eot ico png apng jpg \
            jpeg jfif pjpeg gif webp avif heic heif bmp tif tiff jxl mp4 m4v webm ogv ogg oga \
            opus mp3 m4a aac flac wav mid midi mov mkv avi mpeg mpg 3gp ts m3u8 mpd pdf epub \
            zip gz tgz br zst bz2 xz 7z tar rar jar war apk deb rpm iso dmg exe msi swf rtf \
            doc docx xls xlsx ppt pptx odt ods odp atom rss yaml yml toml webmanifest manifest \
            appcache sh pl py rb c h cc cpp java go rs log patch diff asc sig pem crt cer der \
            p12 gpg torrent";
        for ext in wanted.split_whitespace() {
            let name = format!("file.{ext}");
            assert!(
                BUILTIN.iter().any(|(e, _)| *e == ext),
                "{ext} missing from the table"
            );
            assert!(!t.lookup(name.as_bytes()).is_empty());
        }
        // bin and img are listed, and simply are octet-stream.
        assert_eq!(t.lookup(b"x.bin"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"x.img"), DEFAULT_TYPE);
    }

    #[test]
    fn common_types() {
        let t = builtin();
        assert_eq!(t.lookup(b"index.html"), "text/html; charset=utf-8");
        assert_eq!(t.lookup(b"app.js"), "text/javascript; charset=utf-8");
        assert_eq!(t.lookup(b"app.mjs"), "text/javascript; charset=utf-8");
        assert_eq!(t.lookup(b"data.json"), "application/json; charset=utf-8");
        assert_eq!(
            t.lookup(b"site.webmanifest"),
            "application/manifest+json; charset=utf-8"
        );
        assert_eq!(t.lookup(b"logo.svg"), "image/svg+xml; charset=utf-8");
        assert_eq!(t.lookup(b"app.wasm"), "application/wasm");
        assert_eq!(t.lookup(b"font.woff2"), "font/woff2");
        assert_eq!(t.lookup(b"photo.jpg"), "image/jpeg");
        assert_eq!(
            t.lookup(b"feed.atom"),
            "application/atom+xml; charset=utf-8"
        );
        assert_eq!(t.lookup(b"feed.rss"), "application/rss+xml; charset=utf-8");
        assert_eq!(
            t.lookup(b"page.xhtml"),
            "application/xhtml+xml; charset=utf-8"
        );
        assert_eq!(t.lookup(b"doc.pdf"), "application/pdf");
        assert_eq!(t.lookup(b"README.md"), "text/markdown; charset=utf-8");
        assert_eq!(t.lookup(b"clip.mp4"), "video/mp4");
    }

    #[test]
    fn extension_rules() {
        let t = builtin();
        assert_eq!(t.lookup(b"a.tar.gz"), "application/gzip");
        assert_eq!(t.lookup(b"/dir/INDEX.HTML"), "text/html; charset=utf-8");
        assert_eq!(t.lookup(b"Photo.JpEg"), "image/jpeg");
        assert_eq!(t.lookup(b"/a.d/file"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"/a.html/"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"Makefile"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b".html"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"/x/.css"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"file."), DEFAULT_TYPE);
        assert_eq!(t.lookup(b""), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"."), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"x.unknownext"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"x.averyveryverylongextension"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"x.\xff\xfe"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"x.HTML\0"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"..css"), "text/css; charset=utf-8");
    }

    #[test]
    fn overrides_take_precedence() {
        let o = |e: &str, t: &str| (e.to_owned(), t.to_owned());
        let t = MimeTable::new(&[
            o("md", "text/markdown"),
            o(".JS", "application/javascript"),
            o("html", "text/html; charset=iso-8859-1"),
            o("geo", "application/geo+json"),
            o("xyz", "text/x-xyz"),
            o("data", "Application/JSON"),
            o("bad", "text/plain\r\nSet-Cookie: a=b"),
            o("", "text/plain"),
            o("empty", "  "),
            o("dup", "image/png"),
            o("dup", "image/gif"),
            o("averyveryverylongextension", "text/x-long"),
        ]);
        assert_eq!(t.lookup(b"a.md"), "text/markdown; charset=utf-8");
        assert_eq!(t.lookup(b"a.js"), "application/javascript");
        assert_eq!(t.lookup(b"a.Js"), "application/javascript");
        assert_eq!(t.lookup(b"a.html"), "text/html; charset=iso-8859-1");
        assert_eq!(t.lookup(b"a.geo"), "application/geo+json");
        assert_eq!(t.lookup(b"a.xyz"), "text/x-xyz; charset=utf-8");
        assert_eq!(t.lookup(b"a.data"), "Application/JSON; charset=utf-8");
        assert_eq!(t.lookup(b"a.bad"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"a.empty"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"a.dup"), "image/gif");
        assert_eq!(
            t.lookup(b"a.averyveryverylongextension"),
            "text/x-long; charset=utf-8"
        );
        // Untouched built-ins still work.
        assert_eq!(t.default_type(), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"a.css"), "text/css; charset=utf-8");
        assert_eq!(
            MimeTable::default().lookup(b"a.md"),
            "text/markdown; charset=utf-8"
        );
    }

    #[test]
    fn a_large_table_finds_each_of_its_extensions() {
        // Thousands of short keys in the hashed table: each is found
        // (either case) past whatever collided with it, and none of the
        // built-in ones is lost.
        let file: Vec<(String, String)> = (0..3000)
            .map(|i| (format!("x{i}"), format!("application/x-{i}")))
            .collect();
        let t = MimeTable::with_file(&[], &file, DEFAULT_TYPE);
        for i in 0..3000 {
            assert_eq!(
                t.lookup(format!("a.X{i}").as_bytes()),
                format!("application/x-{i}")
            );
        }
        assert_eq!(t.lookup(b"a.x3000"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"a.x1\0"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"a.x\x001"), DEFAULT_TYPE);
        assert_eq!(t.lookup(b"a.x1234567"), DEFAULT_TYPE);
        assert!(!has_nul(pack(b"x1234567"), 8) && has_nul(pack(b"x123456\0"), 8));
        for (ext, ty) in BUILTIN {
            assert_eq!(t.lookup(format!("f.{ext}").as_bytes()), *ty);
        }
    }

    /// Every short extension sits within a few slots of where it hashes,
    /// in the built-in table and with a system's `mime.types` (~800
    /// extensions of one to eight letters): a lookup is a probe or two,
    /// whatever the extension's length.
    #[test]
    fn short_extensions_are_found_in_a_few_probes() {
        let letters = |i: usize, n: usize| -> String {
            (0..n)
                .map(|k| (b'a' + ((i >> (4 * k)) % 26) as u8) as char)
                .collect()
        };
        let file: Vec<(String, String)> = (0..800)
            .map(|i| (letters(i * 7 + 3, 1 + i % 8), format!("application/x-{i}")))
            .collect();
        for t in [builtin(), MimeTable::with_file(&[], &file, DEFAULT_TYPE)] {
            let mask = t.short.len() - 1;
            let mut longest = 0;
            for (at, &(key, _)) in t.short.iter().enumerate() {
                if key != 0 {
                    longest = longest.max(at.wrapping_sub(slot(key, mask)) & mask);
                }
            }
            assert!(longest <= 12, "a chain of {longest} probes");
        }
    }

    #[test]
    fn file_types_sit_between_overrides_and_the_built_in_table() {
        let o = |e: &str, t: &str| (e.to_owned(), t.to_owned());
        let file = [
            o("csh", "application/x-csh"),
            o("md", "text/x-markdown"),
            o("CSH", "text/x-csh"),
            o("ELN", "application/x-eln+zip"),
            o("a-thirty-character-extension00", "application/x-long"),
            o("bad", "text/plain\nX: y"),
            // Either side of the 8 bytes that are looked up as one integer.
            o("Eightchr", "application/x-eight"),
            o("ninechars", "application/x-nine"),
            o("nul\0", "application/x-nul"),
        ];
        let t = MimeTable::with_file(&[o("md", "text/markdown")], &file, "text/plain");
        // The override beats the file; the file's later line beats its earlier one.
        assert_eq!(t.lookup(b"a.md"), "text/markdown; charset=utf-8");
        assert_eq!(t.lookup(b"a.csh"), "text/x-csh; charset=utf-8");
        assert_eq!(t.lookup(b"a.eln"), "application/x-eln+zip");
        assert_eq!(
            t.lookup(b"x.A-Thirty-Character-Extension00"),
            "application/x-long"
        );
        assert_eq!(t.lookup(b"a.EIGHTCHR"), "application/x-eight");
        assert_eq!(t.lookup(b"a.eightch"), "text/plain; charset=utf-8");
        assert_eq!(t.lookup(b"a.NineChars"), "application/x-nine");
        assert_eq!(t.lookup(b"a.ninechar"), "text/plain; charset=utf-8");
        assert_eq!(t.lookup(b"a.nul\0"), "text/plain; charset=utf-8");
        assert_eq!(t.lookup(b"a.nul"), "text/plain; charset=utf-8");
        // Not in the file: the built-in table, then the default type.
        assert_eq!(t.lookup(b"a.css"), "text/css; charset=utf-8");
        assert_eq!(t.lookup(b"a.bad"), "text/plain; charset=utf-8");
        assert_eq!(t.lookup(b"README"), "text/plain; charset=utf-8");
        assert_eq!(t.lookup(b"x.unknownext"), "text/plain; charset=utf-8");
        assert_eq!(t.default_type(), "text/plain; charset=utf-8");
        // A default with its own charset keeps it.
        let t = MimeTable::with_file(&[], &[], "text/plain; charset=iso-8859-1");
        assert_eq!(t.lookup(b"copyright"), "text/plain; charset=iso-8859-1");
        assert_eq!(t.lookup(b"a.html"), "text/html; charset=utf-8");
    }
}
