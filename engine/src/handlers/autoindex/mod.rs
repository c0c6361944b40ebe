//! Directory listings (`[static] autoindex = true`): sorted, escaped HTML,
//! or JSON ([`json`]), as the query or `Accept` asks ([`view`]).
//!
//! File names are attacker-controlled (anyone who can upload can name a
//! file `<script>…`), so every name goes through two escapers: percent-
//! encoding for the `href` and HTML escaping for the visible text.
//!
//! Sizes are shown like `ls -h`: below 1024 the exact byte count (`512`),
//! above it binary units with one decimal under ten (`1.2K`, `15M`, `3.0G`);
//! the exact byte count is in the cell's `title`. Times are
//! `YYYY-MM-DD HH:MM` in UTC, which the column header says.

use crate::http::date::{civil_time, two_digits};
use crate::http::grammar::hex_pair;
use crate::http::push_u64;

pub mod json;
pub mod pages;
pub mod view;

pub use view::{Format, SortKey, View};

/// One directory entry to list.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The file name as bytes (Unix file names need not be UTF-8).
    pub name: Vec<u8>,
    /// Whether the entry is a directory (listed first, linked with a `/`).
    pub is_dir: bool,
    /// Size in bytes (not shown for directories).
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: u64,
}

const HEAD: &[u8] = b"<!DOCTYPE html>\n\
<html>\n\
<head>\n\
<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>Index of ";

const STYLE: &[u8] = b"</title>\n\
<style>\
body{font-family:system-ui,sans-serif;margin:1.5em}\
table{border-collapse:collapse}\
th,td{padding:.15em 1.5em .15em 0;text-align:left;white-space:nowrap}\
td.s{text-align:right}\
</style>\n\
</head>\n\
<body>\n\
<h1>Index of ";

const TABLE: &[u8] = b"</h1>\n<table>\n<thead><tr>";

const COLUMNS: [(SortKey, &[u8], &[u8]); 3] = [
    (SortKey::Name, b"name", b"Name"),
    (SortKey::Size, b"size", b"Size"),
    (SortKey::Time, b"time", b"Modified (UTC)"),
];

const TBODY: &[u8] = b"</tr></thead>\n<tbody>\n";

const PARENT_ROW: &[u8] =
    b"<tr><td><a href=\"../\">../</a></td><td class=\"s\">-</td><td></td></tr>\n";

const TABLE_END: &[u8] = b"</tbody>\n</table>\n";

const TAIL: &[u8] = b"</body>\n</html>\n";

/// U+FFFD REPLACEMENT CHARACTER in UTF-8.
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// Sorts `entries` as `view` asks: directories first, then by the key in
/// the order asked, ties by name (bytewise, ascending). Directories show
/// no size, so among themselves they are sorted by name when sorting by
/// size.
pub fn sort(entries: &mut [Entry], view: &View) {
    crate::sort::sort_by(entries, |a, b| {
        let by_key = match view.sort {
            SortKey::Name => a.name.cmp(&b.name),
            SortKey::Size if a.is_dir => a.name.cmp(&b.name),
            SortKey::Size => a.size.cmp(&b.size),
            SortKey::Time => a.mtime.cmp(&b.mtime),
        };
        let by_key = if view.desc { by_key.reverse() } else { by_key };
        b.is_dir
            .cmp(&a.is_dir)
            .then(by_key)
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// Whether `e` can be a real directory entry: not `.` or `..`, not empty,
/// no `/` (hiding dotfiles is the caller's decision).
fn listable(e: &Entry) -> bool {
    !matches!(&e.name[..], b"" | b"." | b"..")
        && !e.name.contains(&b'/')
        && crate::http::path::is_nameable(&e.name)
}

/// Renders a listing of `entries` for the directory at decoded URL path
/// `url_path` (ends with `/`) into `out` as a complete HTML document.
/// Entries are sorted as `view` says ([`sort`]); names are percent-encoded
/// in links and HTML-escaped in text. The column heads link to the
/// listing sorted by that column: the current one in the other order,
/// the others ascending by name, largest and newest first by size and time.
///
/// Links are relative to the directory, which is why `url_path` must end
/// with `/`. Entries that cannot be real directory entries, or that no
/// request can name ([`listable`]), are skipped. `cut` is the most
/// entries read when the directory had more: the page says so.
pub fn render(
    url_path: &[u8],
    entries: &mut [Entry],
    view: &View,
    cut: Option<usize>,
    out: &mut Vec<u8>,
) {
    sort(entries, view);
    out.extend_from_slice(HEAD);
    push_html_text(out, url_path);
    out.extend_from_slice(STYLE);
    push_html_text(out, url_path);
    out.extend_from_slice(TABLE);
    for (key, param, label) in COLUMNS {
        let active = key == view.sort;
        let next_desc = match active {
            true => !view.desc,
            false => key != SortKey::Name,
        };
        out.extend_from_slice(b"<th");
        if active {
            out.extend_from_slice(match view.desc {
                true => &b" aria-sort=\"descending\""[..],
                false => b" aria-sort=\"ascending\"",
            });
        }
        out.extend_from_slice(b"><a href=\"?sort=");
        out.extend_from_slice(param);
        out.extend_from_slice(match next_desc {
            true => &b"&amp;order=desc"[..],
            false => b"&amp;order=asc",
        });
        out.extend_from_slice(b"\">");
        out.extend_from_slice(label);
        out.extend_from_slice(b"</a></th>");
    }
    out.extend_from_slice(TBODY);
    if url_path != b"/" {
        out.extend_from_slice(PARENT_ROW);
    }
    for e in entries.iter() {
        if !listable(e) {
            continue;
        }
        out.extend_from_slice(b"<tr><td><a href=\"");
        push_href(out, &e.name);
        if e.is_dir {
            out.push(b'/');
        }
        out.extend_from_slice(b"\">");
        push_html_text(out, &e.name);
        if e.is_dir {
            out.extend_from_slice(b"/</a></td><td class=\"s\">-</td><td>");
        } else {
            out.extend_from_slice(b"</a></td><td class=\"s\" title=\"");
            push_u64(out, e.size);
            out.extend_from_slice(b"\">");
            push_size(out, e.size);
            out.extend_from_slice(b"</td><td>");
        }
        push_time(out, e.mtime);
        out.extend_from_slice(b"</td></tr>\n");
    }
    out.extend_from_slice(TABLE_END);
    if let Some(n) = cut {
        out.extend_from_slice(b"<p>Cut short: this directory has more than ");
        push_u64(out, n as u64);
        out.extend_from_slice(b" entries, and only that many are read for its listing.</p>\n");
    }
    out.extend_from_slice(TAIL);
}

/// Appends `bytes` as HTML text (also safe inside a quoted attribute):
/// `& < > " '` become character references, invalid UTF-8 and control
/// characters (a parse error in HTML) become U+FFFD.
pub fn push_html_text(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        for &b in chunk.valid().as_bytes() {
            match b {
                b'&' => out.extend_from_slice(b"&amp;"),
                b'<' => out.extend_from_slice(b"&lt;"),
                b'>' => out.extend_from_slice(b"&gt;"),
                b'"' => out.extend_from_slice(b"&quot;"),
                b'\'' => out.extend_from_slice(b"&#39;"),
                0..=0x1f | 0x7f => out.extend_from_slice(REPLACEMENT),
                _ => out.push(b),
            }
        }
        if !chunk.invalid().is_empty() {
            out.extend_from_slice(REPLACEMENT);
        }
    }
}

/// Whether a byte may appear as is in a listing link: RFC 3986 unreserved
/// characters and a few sub-delims that mean nothing in a path segment or
/// in HTML. `:` is encoded (a first segment `javascript:x` would be read as
/// a scheme), and so are `/ ? # % & '` and everything else.
fn is_href_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(b, b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'(' | b')')
        || matches!(b, b'*' | b'+' | b',' | b';' | b'=' | b'@')
}

/// Appends a file name percent-encoded as one relative path segment, the
/// exact bytes preserved (a non-UTF-8 name still links to itself).
pub fn push_href(out: &mut Vec<u8>, name: &[u8]) {
    for &b in name {
        if is_href_safe(b) {
            out.push(b);
        } else {
            out.push(b'%');
            out.extend_from_slice(&hex_pair(b));
        }
    }
}

/// Human-readable size as described in the module documentation.
fn push_size(out: &mut Vec<u8>, size: u64) {
    const UNITS: &[u8; 6] = b"KMGTPE";
    if size < 1024 {
        push_u64(out, size);
        return;
    }
    let size = u128::from(size);
    let mut unit = 1024u128;
    for (i, &suffix) in UNITS.iter().enumerate() {
        // Round to the nearest tenth, then to the nearest whole; a value
        // that rounds up to 1024 moves on to the next unit.
        let tenths = (size * 10 + unit / 2) / unit;
        if tenths < 100 {
            push_u64(out, (tenths / 10) as u64);
            out.push(b'.');
            push_u64(out, (tenths % 10) as u64);
            out.push(suffix);
            return;
        }
        let whole = (size + unit / 2) / unit;
        if whole < 1024 || i == UNITS.len() - 1 {
            push_u64(out, whole as u64);
            out.push(suffix);
            return;
        }
        unit *= 1024;
    }
}

/// `YYYY-MM-DD HH:MM`, UTC.
fn push_time(out: &mut Vec<u8>, secs: u64) {
    push_date_time(out, secs, b' ', false);
}

/// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC).
fn push_rfc3339(out: &mut Vec<u8>, secs: u64) {
    push_date_time(out, secs, b'T', true);
    out.push(b'Z');
}

/// The date, `sep`, hours and minutes, and `:SS` if `seconds`.
fn push_date_time(out: &mut Vec<u8>, secs: u64, sep: u8, seconds: bool) {
    let t = civil_time(secs);
    let two = |out: &mut Vec<u8>, n: u32| out.extend_from_slice(&two_digits(n));
    two(out, t.year / 100);
    two(out, t.year % 100);
    out.push(b'-');
    two(out, t.month);
    out.push(b'-');
    two(out, t.day);
    out.push(sep);
    two(out, t.hour);
    out.push(b':');
    two(out, t.minute);
    if seconds {
        out.push(b':');
        two(out, t.second);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &[u8], size: u64, mtime: u64) -> Entry {
        Entry {
            name: name.to_vec(),
            is_dir: false,
            size,
            mtime,
        }
    }

    fn dir(name: &[u8]) -> Entry {
        Entry {
            name: name.to_vec(),
            is_dir: true,
            size: 4096,
            mtime: 0,
        }
    }

    fn page(url_path: &[u8], entries: &mut [Entry]) -> String {
        let mut out = Vec::new();
        render(url_path, entries, &View::default(), None, &mut out);
        String::from_utf8(out).expect("listing is valid UTF-8")
    }

    /// The `<tbody>` rows, one string each.
    fn rows(html: &str) -> Vec<&str> {
        let start = html.find("<tbody>\n").unwrap() + "<tbody>\n".len();
        let end = html.find("</tbody>").unwrap();
        html[start..end].lines().collect()
    }

    #[test]
    fn complete_document() {
        let html = page(b"/docs/", &mut [file(b"a.txt", 5, 1_795_312_200)]);
        assert!(html.starts_with("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"));
        assert!(html.contains("<title>Index of /docs/</title>"));
        assert!(html.contains("<h1>Index of /docs/</h1>"));
        assert!(html.ends_with("</tbody>\n</table>\n</body>\n</html>\n"));
        assert_eq!(
            rows(&html),
            [
                "<tr><td><a href=\"../\">../</a></td><td class=\"s\">-</td><td></td></tr>",
                "<tr><td><a href=\"a.txt\">a.txt</a></td><td class=\"s\" title=\"5\">5</td>\
                 <td>2026-11-22 01:50</td></tr>",
            ]
        );
        for tag in [
            "html", "head", "title", "style", "body", "h1", "table", "thead", "tbody",
        ] {
            assert_eq!(html.matches(&format!("<{tag}>")).count(), 1, "<{tag}>");
            assert_eq!(html.matches(&format!("</{tag}>")).count(), 1, "</{tag}>");
        }
        assert_eq!(html.matches("<tr>").count(), html.matches("</tr>").count());
    }

    #[test]
    fn root_has_no_parent_link() {
        let html = page(b"/", &mut []);
        assert!(!html.contains("../"));
        assert!(rows(&html).is_empty());
        let html = page(b"/a/", &mut []);
        assert_eq!(rows(&html).len(), 1);
    }

    #[test]
    fn directories_first_then_bytewise() {
        let mut entries = [
            file(b"b", 1, 0),
            dir(b"zdir"),
            file(b"B", 1, 0),
            file(b"a", 1, 0),
            dir(b"Adir"),
            file(b"\xc3\xa9", 1, 0),
            file(b"_", 1, 0),
        ];
        let html = page(b"/", &mut entries);
        let names: Vec<&str> = rows(&html)
            .iter()
            .map(|r| {
                let s = r.find("\">").unwrap() + 2;
                &r[s..s + r[s..].find("</a>").unwrap()]
            })
            .collect();
        assert_eq!(names, ["Adir/", "zdir/", "B", "_", "a", "b", "\u{e9}"]);
        // The caller's slice is left sorted.
        assert_eq!(entries[0].name, b"Adir");
    }

    #[test]
    fn directories_link_with_a_slash_and_show_no_size() {
        let html = page(b"/", &mut [dir(b"sub dir")]);
        assert_eq!(
            rows(&html),
            [
                "<tr><td><a href=\"sub%20dir/\">sub dir/</a></td><td class=\"s\">-</td>\
              <td>1970-01-01 00:00</td></tr>"
            ]
        );
    }

    #[test]
    fn hostile_names_are_escaped() {
        let mut entries = [
            file(b"<script>alert(1)", 1, 0),
            file(b"a\"onmouseover=\"x", 1, 0),
            file(b"it's", 1, 0),
            file(b"a&b", 1, 0),
            file(b"100%", 1, 0),
            file(b"q?x=1", 1, 0),
            file(b"frag#top", 1, 0),
            file(b"two  spaces", 1, 0),
            file(b"javascript:alert(1)", 1, 0),
            file(b"back\\slash", 1, 0),
        ];
        let html = page(b"/", &mut entries);
        let body = &html[html.find("<tbody>").unwrap()..];
        assert!(!body.contains("<script"));
        assert!(!body.contains("\"onmouseover"));
        assert!(!body.contains("href=\"javascript:"));
        let want = [
            ("100%", "100%25", "100%"),
            (
                "<script>alert(1)",
                "%3Cscript%3Ealert(1)",
                "&lt;script&gt;alert(1)",
            ),
            (
                "a\"onmouseover=\"x",
                "a%22onmouseover=%22x",
                "a&quot;onmouseover=&quot;x",
            ),
            ("a&b", "a%26b", "a&amp;b"),
            ("back\\slash", "back%5Cslash", "back\\slash"),
            ("frag#top", "frag%23top", "frag#top"),
            ("it's", "it%27s", "it&#39;s"),
            (
                "javascript:alert(1)",
                "javascript%3Aalert(1)",
                "javascript:alert(1)",
            ),
            ("q?x=1", "q%3Fx=1", "q?x=1"),
            ("two  spaces", "two%20%20spaces", "two  spaces"),
        ];
        let rows = rows(&html);
        assert_eq!(rows.len(), want.len());
        for (row, (name, href, text)) in rows.iter().zip(want) {
            let link = format!("<a href=\"{href}\">{text}</a>");
            assert!(row.contains(&link), "{name:?}: {row}");
        }
    }

    #[test]
    fn non_utf8_names_keep_their_bytes_in_links() {
        let html = page(
            b"/",
            &mut [file(b"caf\xe9.txt", 1, 0), file(b"\xff\xfe", 1, 0)],
        );
        assert!(html.contains("<a href=\"caf%E9.txt\">caf\u{fffd}.txt</a>"));
        assert!(html.contains("<a href=\"%FF%FE\">\u{fffd}\u{fffd}</a>"));
        let html = page(b"/", &mut [file("\u{1f600}.png".as_bytes(), 1, 0)]);
        assert!(html.contains("<a href=\"%F0%9F%98%80.png\">\u{1f600}.png</a>"));
    }

    #[test]
    fn url_path_is_escaped_in_title_and_heading() {
        let html = page(b"/<b>&\"x'/\xff/", &mut []);
        let esc = "/&lt;b&gt;&amp;&quot;x&#39;/\u{fffd}/";
        assert!(html.contains(&format!("<title>Index of {esc}</title>")));
        assert!(html.contains(&format!("<h1>Index of {esc}</h1>")));
        assert!(!html.contains("<b>"));
    }

    #[test]
    fn impossible_entries_are_skipped() {
        let html = page(
            b"/x/",
            &mut [
                file(b".", 1, 0),
                dir(b".."),
                file(b"", 1, 0),
                file(b"a/b", 1, 0),
                file(b"new\nline", 1, 0),
                file(b"tab\tx", 1, 0),
                file(b"del\x7f", 1, 0),
                file(b".ok", 1, 0),
            ],
        );
        let rows = rows(&html);
        assert_eq!(rows.len(), 2);
        assert!(rows[1].contains("<a href=\".ok\">.ok</a>"));
    }

    #[test]
    fn human_readable_sizes() {
        let cases: &[(u64, &str)] = &[
            (0, "0"),
            (1, "1"),
            (1023, "1023"),
            (1024, "1.0K"),
            (1229, "1.2K"),
            (1536, "1.5K"),
            (10_188, "9.9K"),
            (10_189, "10K"),
            (10_240, "10K"),
            (1_048_063, "1023K"),
            (1_048_064, "1.0M"),
            (1_048_576, "1.0M"),
            (5 * 1024 * 1024 * 1024, "5.0G"),
            (3 << 40, "3.0T"),
            (1 << 50, "1.0P"),
            (1 << 60, "1.0E"),
            (u64::MAX, "16E"),
        ];
        for &(size, want) in cases {
            let mut out = Vec::new();
            push_size(&mut out, size);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{size}");
        }
    }

    #[test]
    fn listing_times_are_utc_minutes() {
        let mut out = Vec::new();
        for (secs, want) in [
            (0, "1970-01-01 00:00"),
            (1_795_312_200, "2026-11-22 01:50"),
            (1_795_312_259, "2026-11-22 01:50"),
            (951_825_599, "2000-02-29 11:59"),
            (u64::MAX, "9999-12-31 23:59"),
        ] {
            out.clear();
            push_time(&mut out, secs);
            assert_eq!(out, want.as_bytes(), "{secs}");
        }
    }
}
