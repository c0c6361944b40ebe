//! Directory listings (`[static] autoindex = true`) on the wire: what a
//! symlink leads to is listed as the server would serve it, and what can
//! never be served is left out.

mod common;

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
