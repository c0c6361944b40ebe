//! Directory listings (`[static] autoindex = true`) on the wire: what a
//! symlink leads to is listed as the server would serve it, and what can
//! never be served is left out.

use crate::common;

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use common::*;

/// Gives the directory `dir` the harness's modification time.
fn set_dir_mtime(dir: &Path) {
    std::fs::File::open(dir)
        .and_then(|f| f.set_modified(UNIX_EPOCH + Duration::from_secs(MTIME)))
        .expect("set directory mtime");
}

/// The `<tbody>` rows of a listing.
fn rows(html: &str) -> Vec<&str> {
    let start = html.find("<tbody>\n").expect("tbody") + "<tbody>\n".len();
    let end = html.find("</tbody>").expect("/tbody");
    html[start..end].lines().collect()
}

fn file_row(name: &str, size: usize) -> String {
    format!(
        "<tr><td><a href=\"{name}\">{name}</a></td><td class=\"s\" title=\"{size}\">{size}</td>\
         <td>2024-01-02 03:04</td></tr>"
    )
}

fn dir_row(name: &str) -> String {
    format!(
        "<tr><td><a href=\"{name}/\">{name}/</a></td><td class=\"s\">-</td>\
         <td>2024-01-02 03:04</td></tr>"
    )
}

/// A tree with symlinks of every kind under `/list/`, and a directory
/// outside the root.
fn symlink_site(config: &str) -> Server {
    let mut b = Builder::new();
    b.file("list/real/f.txt", b"12345");
    b.file("list/big.bin", &pattern(3000));
    b.file("list/.hidden-target", b"hidden");
    write_file(&b.base().join("outside/secret.txt"), b"secret");
    let root = b.root().to_path_buf();
    let list = root.join("list");
    let base = b.base().to_path_buf();
    symlink("real", list.join("link_dir")).expect("symlink");
    symlink(list.join("real"), list.join("abs_dir")).expect("symlink");
    symlink("real/f.txt", list.join("link_file")).expect("symlink");
    symlink("big.bin", list.join("link_big")).expect("symlink");
    symlink(".hidden-target", list.join("to_dotfile")).expect("symlink");
    symlink("nowhere", list.join("dangling")).expect("symlink");
    symlink("../../outside/secret.txt", list.join("out_file")).expect("symlink");
    symlink(base.join("outside"), list.join("out_dir")).expect("symlink");
    symlink("/etc/passwd", list.join("passwd")).expect("symlink");
    symlink("loop", list.join("loop")).expect("symlink");
    let fifo =
        std::ffi::CString::new(list.join("fifo").as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    set_dir_mtime(&list.join("real"));
    b.config(config);
    b.start()
}

#[test]
fn symlinks_are_listed_as_what_they_lead_to() {
    let s = symlink_site("[static]\nautoindex = true\n");
    let r = s.get("/list/");
    assert_eq!(r.status, 200);
    let html = r.text();
    // Links to directories end in "/" and show no size; links to files
    // show the target's size and time; what can never be served (a
    // dangling link, one out of the root, a loop, a FIFO) is left out.
    assert_eq!(
        rows(&html),
        [
            "<tr><td><a href=\"../\">../</a></td><td class=\"s\">-</td><td></td></tr>".to_string(),
            dir_row("abs_dir"),
            dir_row("link_dir"),
            dir_row("real"),
            "<tr><td><a href=\"big.bin\">big.bin</a></td><td class=\"s\" title=\"3000\">2.9K</td>\
             <td>2024-01-02 03:04</td></tr>"
                .to_string(),
            "<tr><td><a href=\"link_big\">link_big</a></td><td class=\"s\" title=\"3000\">2.9K</td>\
             <td>2024-01-02 03:04</td></tr>"
                .to_string(),
            file_row("link_file", 5),
            file_row("to_dotfile", 6),
        ]
    );
    // What is listed is served: through a linked directory too.
    for path in ["/list/link_dir/f.txt", "/list/abs_dir/f.txt"] {
        let r = s.get(path);
        assert_file(&r, b"12345", "text/plain; charset=utf-8", "", Conn::Close);
    }
    // (The type comes from the name asked for.)
    let r = s.get("/list/link_file");
    assert_file(&r, b"12345", "application/octet-stream", "", Conn::Close);
    assert_eq!(s.get("/list/link_dir/").status, 200);
    assert_eq!(s.get("/list/to_dotfile").body, b"hidden");
    // And what is left out is not.
    for path in [
        "/list/dangling",
        "/list/out_file",
        "/list/out_dir/secret.txt",
        "/list/passwd",
        "/list/loop",
        "/list/fifo",
    ] {
        let r = s.get(path);
        assert!(r.status == 403 || r.status == 404, "{path}: {}", r.status);
    }
}

#[test]
fn links_out_of_the_root_are_listed_when_they_may_be_followed() {
    let s =
        symlink_site("sandbox = false\n[static]\nautoindex = true\nsymlinks_outside_root = true\n");
    let html = s.get("/list/").text();
    assert!(html.contains("<a href=\"out_dir/\">out_dir/</a>"), "{html}");
    assert!(
        html.contains("<a href=\"out_file\">out_file</a></td><td class=\"s\" title=\"6\">"),
        "{html}"
    );
    assert_eq!(s.get("/list/out_dir/secret.txt").body, b"secret");
    // Still never: dangling links, loops, FIFOs.
    for gone in ["dangling", "loop", "fifo"] {
        assert!(!html.contains(&format!("href=\"{gone}")), "{gone}: {html}");
    }
}

#[test]
fn special_files_are_not_listed() {
    let mut b = Builder::new();
    b.file("d/a.txt", b"a");
    let fifo = std::ffi::CString::new(b.root().join("d/pipe").as_os_str().as_encoded_bytes())
        .expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    b.config("[static]\nautoindex = true\n");
    let s = b.start();
    let html = s.get("/d/").text();
    assert_eq!(rows(&html).len(), 2, "{html}");
    assert!(html.contains("href=\"a.txt\""), "{html}");
    assert!(!html.contains("pipe"), "{html}");
}

/// Sets the modification time of `path` to `MTIME + delta` seconds.
fn set_mtime_by(path: &Path, delta: i64) {
    let t = UNIX_EPOCH + Duration::from_secs(MTIME.saturating_add_signed(delta));
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(t))
        .expect("set mtime");
}

/// `/d/` holds three files of different sizes and times and two
/// directories; returns the server and the directories' size.
fn sortable_site(config: &str) -> (Server, u64) {
    let mut b = Builder::new();
    b.file("d/a.txt", &[b'a'; 30]);
    b.file("d/b.txt", &[b'b'; 10]);
    b.file("d/c.txt", &[b'c'; 20]);
    b.dir("d/zdir");
    b.dir("d/adir");
    let d = b.root().join("d");
    set_mtime_by(&d.join("a.txt"), 0);
    set_mtime_by(&d.join("b.txt"), -100);
    set_mtime_by(&d.join("c.txt"), 100);
    set_mtime_by(&d.join("zdir"), 0);
    set_mtime_by(&d.join("adir"), 0);
    let dir_size = std::fs::metadata(d.join("adir")).expect("stat").len();
    b.config(config);
    (b.start(), dir_size)
}

/// The names in a listing's rows, without the parent row.
fn names(html: &str) -> Vec<String> {
    rows(html)
        .iter()
        .skip(1)
        .map(|r| {
            let s = r.find("\">").expect("link") + 2;
            r[s..s + r[s..].find("</a>").expect("</a>")].to_string()
        })
        .collect()
}

#[test]
fn listings_sort_by_name_size_and_time_directories_first() {
    let (s, _) = sortable_site("[static]\nautoindex = true\n");
    let cases = [
        ("", ["adir/", "zdir/", "a.txt", "b.txt", "c.txt"]),
        (
            "?sort=name&order=desc",
            ["zdir/", "adir/", "c.txt", "b.txt", "a.txt"],
        ),
        ("?sort=size", ["adir/", "zdir/", "b.txt", "c.txt", "a.txt"]),
        (
            "?sort=size&order=desc",
            ["zdir/", "adir/", "a.txt", "c.txt", "b.txt"],
        ),
        ("?sort=time", ["adir/", "zdir/", "b.txt", "a.txt", "c.txt"]),
        // (Ties, as the directories' equal times, go by name ascending.)
        (
            "?order=desc&sort=date",
            ["adir/", "zdir/", "c.txt", "a.txt", "b.txt"],
        ),
        // Other parameters (a cache buster) change nothing.
        (
            "?v=2&sort=size",
            ["adir/", "zdir/", "b.txt", "c.txt", "a.txt"],
        ),
    ];
    for (query, want) in cases {
        let r = s.get(&format!("/d/{query}"));
        assert_eq!(r.status, 200, "{query}");
        assert_eq!(names(&r.text()), want, "{query}");
        assert_eq!(r.header("vary"), Some("Accept"), "{query}");
    }
    // The column heads link to the other orders, the current one marked.
    let html = s.get("/d/?sort=size&order=desc").text();
    assert!(
        html.contains(
            "<thead><tr>\
             <th><a href=\"?sort=name&amp;order=asc\">Name</a></th>\
             <th aria-sort=\"descending\"><a href=\"?sort=size&amp;order=asc\">Size</a></th>\
             <th><a href=\"?sort=time&amp;order=desc\">Modified (UTC)</a></th>\
             </tr></thead>\n<tbody>\n"
        ),
        "{html}"
    );
    let html = s.get("/d/").text();
    assert!(
        html.contains(
            "<th aria-sort=\"ascending\"><a href=\"?sort=name&amp;order=desc\">Name</a></th>"
        ),
        "{html}"
    );
}

#[test]
fn json_listings_by_query_or_accept() {
    let (s, dir_size) = sortable_site("[static]\nautoindex = true\n");
    let t = |delta: i64| {
        let secs = MTIME.saturating_add_signed(delta);
        // MTIME is 2024-01-02T03:04:05Z.
        format!(
            "2024-01-02T{:02}:{:02}:{:02}Z",
            secs % 86400 / 3600,
            secs % 3600 / 60,
            secs % 60
        )
    };
    let body = format!(
        "[\n\
         {{\"name\":\"zdir\",\"url\":\"zdir/\",\"is_dir\":true,\"size\":{dir_size},\"mtime\":\"{t0}\"}},\n\
         {{\"name\":\"adir\",\"url\":\"adir/\",\"is_dir\":true,\"size\":{dir_size},\"mtime\":\"{t0}\"}},\n\
         {{\"name\":\"a.txt\",\"url\":\"a.txt\",\"is_dir\":false,\"size\":30,\"mtime\":\"{t0}\"}},\n\
         {{\"name\":\"c.txt\",\"url\":\"c.txt\",\"is_dir\":false,\"size\":20,\"mtime\":\"{tc}\"}},\n\
         {{\"name\":\"b.txt\",\"url\":\"b.txt\",\"is_dir\":false,\"size\":10,\"mtime\":\"{tb}\"}}\n\
         ]\n",
        t0 = t(0),
        tb = t(-100),
        tc = t(100),
    );
    assert_eq!(t(-100), "2024-01-02T03:02:25Z");
    let json_head = |vary: &str| {
        head(
            "200 OK",
            &format!(
                "Content-Type: application/json\r\n{vary}Content-Length: {}\r\nConnection: close\r\n",
                body.len()
            ),
        )
    };
    // Asked for in the query: the answer does not vary with Accept.
    let r = s.get("/d/?format=json&sort=size&order=desc");
    assert_eq!(r.masked_head(), json_head(""));
    assert_eq!(r.text(), body);
    // Chosen by Accept: it does.
    let r = s.get_with("/d/?sort=size&order=desc", "Accept: application/json\r\n");
    assert_eq!(r.masked_head(), json_head("Vary: Accept\r\n"));
    assert_eq!(r.text(), body);
    // A browser's Accept, and ?format=html over a JSON Accept, get HTML.
    let browser = "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n";
    let r = s.get_with("/d/", browser);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("vary"), Some("Accept"));
    let r = s.get_with("/d/?format=html", "Accept: application/json\r\n");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("vary"), None);
    // HEAD: the same head, no body.
    let mut c = s.connect();
    c.send(b"HEAD /d/?format=json&sort=size&order=desc HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let r = c.head_response();
    assert_eq!(r.masked_head(), json_head(""));
}

#[test]
fn hostile_names_are_escaped_in_json_and_html() {
    let mut b = Builder::new();
    let names: [&[u8]; 4] = [b"<script>x\"'", b"line\nbreak", b"back\\slash&", b"caf\xe9"];
    for name in names {
        let path = b.root().join("h").join(std::ffi::OsStr::from_bytes(name));
        write_file(&path, b"x");
    }
    b.config("[static]\nautoindex = true\n");
    let s = b.start();
    let json = s.get("/h/?format=json").text();
    let entry = |name: &str, url: &str| {
        format!(
            "{{\"name\":\"{name}\",\"url\":\"{url}\",\"is_dir\":false,\"size\":1,\"mtime\":\"2024-01-02T03:04:05Z\"}}"
        )
    };
    let want = [
        entry("\\u003cscript\\u003ex\\\"'", "%3Cscript%3Ex%22%27"),
        entry("back\\\\slash\\u0026", "back%5Cslash%26"),
        entry("caf\u{fffd}", "caf%E9"),
    ];
    assert_eq!(json, format!("[\n{}\n]\n", want.join(",\n")));
    let html = s.get("/h/").text();
    assert!(
        html.contains("<a href=\"%3Cscript%3Ex%22%27\">&lt;script&gt;x&quot;&#39;</a>"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"back%5Cslash%26\">back\\slash&amp;</a>"),
        "{html}"
    );
    assert!(!html.contains("<script>"), "{html}");
    // The links lead to the files. A name with a control character,
    // which no request can name (400), is left out of both listings.
    assert_eq!(s.get("/h/caf%E9").body, b"x");
    assert_eq!(s.get("/h/%3Cscript%3Ex%22%27").body, b"x");
    assert!(!html.contains("line"), "{html}");
    assert_eq!(s.get("/h/line%0Abreak").status, 400);
}

#[test]
fn unknown_listing_parameters_are_a_bad_request() {
    let (s, _) = sortable_site("[static]\nautoindex = true\n");
    for (query, name, allowed) in [
        ("sort=weight", "sort", "name, size, time or date"),
        ("order=up", "order", "asc or desc"),
        ("format=xml", "format", "html or json"),
    ] {
        let r = s.get(&format!("/d/?{query}"));
        let body = format!("Bad Request: the listing parameter {name} takes {allowed}.\n");
        assert_eq!(
            r.masked_head(),
            head(
                "400 Bad Request",
                &format!(
                    "Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                )
            ),
            "{query}"
        );
        assert_eq!(r.text(), body);
    }
    // Files are not listings: their query is not looked at.
    assert_eq!(s.get("/d/a.txt?sort=weight").status, 200);
}

/// A listing's only style is an inline `<style>`, which a site-wide
/// `Content-Security-Policy` from `[[headers]]` without `style-src` would
/// block (Chromium logs it, and the listing shows unstyled): the book
/// gives the source that allows it, the style's SHA-256, which must be
/// the one the listing has.
#[test]
fn the_books_csp_source_is_the_listings_style_hash() {
    use sha2::Digest as _;
    let mut b = Builder::new();
    b.file("dir/a.txt", b"a");
    b.config("[static]\nautoindex = true\n");
    let s = b.start();
    let html = s.get("/dir/").text();
    let start = html.find("<style>").expect("<style>") + "<style>".len();
    let end = html.find("</style>").expect("</style>");
    let digest = sha2::Sha256::digest(&html.as_bytes()[start..end]);
    let source = format!("'sha256-{}'", base64(&digest));
    let book =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/static.md"))
            .expect("docs/src/static.md");
    assert!(
        book.contains(&source),
        "docs/src/static.md should name the listing's style as {source}"
    );
}

/// A directory whose index file is there but cannot be served (a FIFO,
/// a link out of the root, one brisk may not read) answers as the index
/// would, 403, not with the listing the index was put there to hide (as
/// nginx); an index that is missing (a dangling link) or is a directory
/// still leaves the listing.
#[test]
fn an_index_that_cannot_be_served_hides_the_listing() {
    let mut b = Builder::new();
    for d in ["fifo", "out", "dangling", "dir"] {
        b.file(&format!("{d}/private-{d}.txt"), b"not for listing");
    }
    b.file("dir/index.html/inner.txt", b"x");
    write_file(&b.base().join("outside/index.html"), b"outside");
    let root = b.root().to_path_buf();
    let fifo = std::ffi::CString::new(root.join("fifo/index.html").as_os_str().as_encoded_bytes())
        .expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    symlink("../../outside/index.html", root.join("out/index.html")).expect("symlink");
    symlink("nowhere", root.join("dangling/index.html")).expect("symlink");
    b.config("[static]\nautoindex = true\n");
    let s = b.start();
    for d in ["fifo", "out"] {
        let r = s.get(&format!("/{d}/"));
        assert_eq!(r.status, 403, "/{d}/: {}", r.text());
        assert!(!r.text().contains("private-"), "/{d}/: {}", r.text());
        // The same answer as the index itself gets.
        assert_eq!(
            s.get(&format!("/{d}/index.html")).status,
            403,
            "/{d}/index.html"
        );
    }
    for d in ["dangling", "dir"] {
        let r = s.get(&format!("/{d}/"));
        assert_eq!(r.status, 200, "/{d}/");
        assert!(
            r.text().contains(&format!("private-{d}.txt")),
            "/{d}/: {}",
            r.text()
        );
    }
}

/// The same for an index the user brisk runs as may not read (needs
/// root, to start brisk as `nobody`).
#[test]
fn an_unreadable_index_hides_the_listing() {
    use std::os::unix::fs::PermissionsExt;
    let nobody = brisk::sys::privileges::lookup_user("nobody").ok().flatten();
    let (Some(_), true) = (nobody, brisk::sys::privileges::euid() == 0) else {
        skip("needs root and a nobody user");
        return;
    };
    let mut b = Builder::new();
    b.file("d/private.txt", b"not for listing");
    b.file("d/index.html", b"<p>the index");
    std::fs::set_permissions(
        b.root().join("d/index.html"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    b.config("user = \"nobody\"\n[static]\nautoindex = true\n");
    let s = b.start();
    let r = s.get("/d/");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(!r.text().contains("private.txt"), "{}", r.text());
    // The log names the index, not the directory.
    s.wait_stderr_line("d/index.html\": cannot be opened: Permission denied");
}

/// A directory `list/` holding `a.txt` (5 bytes), the directory dated
/// [`MTIME`], listed with pages trusted for an hour (`extra` added to
/// `[static]`, then `more` after it).
fn kept_site(extra: &str, more: &str) -> Server {
    let mut b = Builder::new();
    b.file("list/a.txt", b"12345");
    set_dir_mtime(&b.root().join("list"));
    b.config(&format!(
        "[static]\nautoindex = true\nopen_file_cache_valid = \"1h\"\n{extra}{more}"
    ));
    b.start()
}

/// Rewrites `list/a.txt` in place (its directory's times stay the same).
fn grow_in_place(s: &Server) {
    use std::io::Write as _;
    let path = s.root.join("list/a.txt");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .expect("open a.txt");
    f.write_all(b"1234567").expect("write a.txt");
    set_mtime(&path);
}

/// The listing of an unchanged directory is rendered once and shared by
/// the requests that follow, whichever protocol they come by: a file
/// rewritten in place (which changes neither the directory's mtime nor
/// its ctime) shows in them only once `open_file_cache_valid` has
/// passed, as its content does. Another view of it (sort order, format)
/// is another page; a file added changes the directory, which is then
/// listed again.
#[test]
fn an_unchanged_directory_is_listed_from_one_shared_page() {
    let s = kept_site("", "");
    let first = s.get("/list/");
    assert_eq!(first.status, 200);
    let page = first.text();
    assert_eq!(rows(&page)[1], file_row("a.txt", 5));
    grow_in_place(&s);
    // The same page, by HTTP/1.1 (the direct file shows its new size).
    assert_eq!(s.get("/list/").text(), page);
    assert_eq!(s.get("/list/a.txt").body, b"1234567");
    #[cfg(feature = "http2")]
    {
        let mut c = common::h2::H2::connect(s.addr(), &[], 0);
        let ids: Vec<u32> = (0..4).map(|_| c.get("/list/", &[])).collect();
        for a in c.answers(&ids) {
            assert_eq!(a.status(), "200");
            assert_eq!(a.field("content-type"), Some("text/html; charset=utf-8"));
            assert_eq!(String::from_utf8_lossy(&a.body), page);
        }
    }
    // Another view is rendered now, and kept in turn.
    let by_size = s.get("/list/?sort=size").text();
    assert_eq!(rows(&by_size)[1], file_row("a.txt", 7));
    let json = s.get("/list/?format=json");
    assert_eq!(json.status, 200);
    assert!(json.text().contains("\"size\":7"), "{}", json.text());
    // A file added: the directory changed (its mtime is no longer
    // MTIME), and its listing is made again.
    write_file(&s.root.join("list/b.txt"), b"b");
    let again = s.get("/list/").text();
    assert_eq!(
        rows(&again)[1..],
        [file_row("a.txt", 7), file_row("b.txt", 1)]
    );
}

/// A compressed listing is made once from the shared page and kept
/// beside it: what it decodes to is the page the identity answer has.
#[cfg(feature = "compress")]
#[test]
fn a_compressed_listing_is_made_from_the_shared_page() {
    use std::io::Read as _;
    let s = kept_site("", "[compress]\nenable = true\nmin_size = 0\n");
    let page = s.get("/list/").text();
    let gzip = |s: &Server| {
        let r = s.get_with("/list/", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        let mut out = String::new();
        flate2::read::GzDecoder::new(&r.body[..])
            .read_to_string(&mut out)
            .expect("gzip decodes");
        out
    };
    assert_eq!(gzip(&s), page);
    grow_in_place(&s);
    assert_eq!(gzip(&s), page);
    assert_eq!(s.get("/list/").text(), page);
}

/// A directory with more entries than `autoindex_max_entries` is listed
/// cut short, and the page says so; one with as many is listed whole.
#[test]
fn a_listing_reads_at_most_autoindex_max_entries() {
    let mut b = Builder::new();
    for i in 0..12 {
        b.file(&format!("big/f{i:02}.txt"), b"x");
    }
    for i in 0..10 {
        b.file(&format!("ten/f{i:02}.txt"), b"x");
    }
    b.config("[static]\nautoindex = true\nautoindex_max_entries = 10\n");
    let s = b.start();
    let note = "<p>Cut short: this directory has more than 10 entries, \
                and only that many are read for its listing.</p>\n";
    let big = s.get("/big/").text();
    // The parent row and ten of the twelve files.
    assert_eq!(rows(&big).len(), 11, "{big}");
    assert!(
        big.ends_with(&format!("</table>\n{note}</body>\n</html>\n")),
        "{big}"
    );
    let json = s.get("/big/?format=json").text();
    assert_eq!(json.matches("\"name\":").count(), 10, "{json}");
    let ten = s.get("/ten/").text();
    assert_eq!(rows(&ten).len(), 11, "{ten}");
    assert!(!ten.contains("Cut short"), "{ten}");
}

/// A site whose `big/` holds 100,000 empty files, `f000000` on.
fn big_site() -> Builder {
    let b = Builder::new();
    let big = b.root().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..100_000 {
        std::fs::File::create(big.join(format!("f{i:06}"))).unwrap();
    }
    b
}

/// A listing that is not kept is made off the event loop: a directory of
/// 100,000 entries takes a quarter of a second to read and render here,
/// seconds on a cold or slow disk (a router's USB drive), and the worker
/// answers its other clients meanwhile. (Made on the loop, it held them
/// until its page was written: the small file's answer came after it.)
#[test]
fn a_listing_being_made_keeps_no_other_client_waiting() {
    let mut b = big_site();
    b.file("small.txt", b"small");
    b.config("[static]\nautoindex = true\nautoindex_max_entries = 0\n");
    let s = b.start();
    // (The worker reads the listing's request first.)
    let (mut slow, small) = s.slow_then_quick(
        b"GET /big/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"GET /small.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
    );
    assert_eq!(small.status, 200);
    assert_eq!(small.body, b"small");
    assert!(
        slow.nothing_came(),
        "the listing came before the small file"
    );
    let listing = slow.response();
    assert_eq!(listing.status, 200, "{}", listing.head);
    assert_eq!(rows(&listing.text()).len(), 100_001);
    assert!(listing.text().contains("<a href=\"f099999\">"));
}

/// Listings waiting for the threads that make them are bounded: past 64
/// a request for one is refused at once (503, `Retry-After: 1`), so that
/// a client asking for many (here 100 streams of one HTTP/2 connection,
/// each a page of 100,000 entries to render) holds neither memory nor
/// descriptors for them; the rest are answered, and so is the next one.
#[cfg(feature = "http2")]
#[test]
fn listings_waiting_to_be_made_are_bounded() {
    let mut b = big_site();
    b.config("[static]\nautoindex = true\nautoindex_max_entries = 0\n");
    let s = b.start();
    let mut c = common::h2::H2::connect(s.addr(), &[], 0);
    let ids: Vec<u32> = (0..100)
        .map(|_| c.request("HEAD", "/big/", &[], None))
        .collect();
    let answers = c.answers(&ids);
    let refused: Vec<_> = answers.iter().filter(|a| a.status() == "503").collect();
    assert!(!refused.is_empty(), "none refused");
    assert!(refused.len() <= 100 - 64, "{} refused", refused.len());
    assert!(refused.iter().all(|a| a.field("retry-after") == Some("1")));
    assert!(answers
        .iter()
        .all(|a| a.status() == "200" || a.status() == "503"));
    assert_eq!(s.get("/big/?sort=size").status, 200);
}
