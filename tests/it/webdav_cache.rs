//! `[[webdav]] listing_cache`: a collection's members, as PROPFIND
//! `Depth: 1` found them, reused while the collection is unchanged, brisk
//! wrote nothing and the age has not passed. Each answer is compared
//! byte for byte with the one a second server over the same tree gives
//! without the cache (`listing_cache = 0`).

use crate::common;

use common::*;
use std::fs;
use std::io::Write;
use std::path::Path;

/// Two servers over one tree of `n` files in `c/`: the first with
/// `cached` keys (and two workers, which share the cache), the second
/// listing each time; and the tree.
fn pair(cached: &str, n: usize) -> (Server, Server, std::path::PathBuf) {
    let mut b = Builder::new();
    let dav = b.base().join("dav");
    fs::create_dir_all(dav.join("c")).unwrap();
    for i in 0..n {
        fs::write(dav.join(format!("c/f{i:02}.txt")), vec![b'x'; i]).unwrap();
    }
    let rule = |extra: &str| {
        format!(
            "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\nlocks = true\n{extra}",
            dav.display()
        )
    };
    b.config(&rule(cached)).workers(2);
    let mut plain = Builder::new();
    plain.config(&rule("listing_cache = 0\n"));
    (b.start(), plain.start(), dav)
}

/// The body of PROPFIND `Depth: 1` of `/dav/c/` (allprop).
fn listing(s: &Server) -> String {
    let r = s.request(b"PROPFIND /dav/c/ HTTP/1.1\r\nHost: localhost\r\nDepth: 1\r\n\r\n");
    assert_eq!(r.status, 207, "{}", r.head);
    String::from_utf8(r.body).unwrap()
}

/// Sends `raw` and answers its status.
fn status(s: &Server, raw: &str) -> u16 {
    s.request(raw.as_bytes()).status
}

/// Appends to `path` in place, as a program beside brisk would: its
/// collection's own mtime and ctime stay as they were.
fn append(path: &Path) {
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(b"more").unwrap();
}

fn proppatch(path: &str, value: &str) -> String {
    let body = format!(
        "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><Z:tint xmlns:Z=\"urn:z\">{value}\
         </Z:tint></D:prop></D:set></D:propertyupdate>"
    );
    format!(
        "PROPPATCH {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn a_cached_listing_is_the_uncached_one_and_brisk_s_writes_show_at_once() {
    let (s, plain, dav) = pair("listing_cache = \"1h\"\n", 40);
    let first = listing(&plain);
    assert_eq!(first.matches("<D:response>").count(), 41);
    // Listed, then reused (by either worker): the same bytes.
    for _ in 0..4 {
        assert_eq!(listing(&s), first);
    }
    // A member written in place beside brisk: within the age the cached
    // listing still says what it was (the documented trade); a member
    // that comes beside brisk changes the collection, and shows at once.
    append(&dav.join("c/f05.txt"));
    assert_ne!(listing(&plain), first);
    assert_eq!(listing(&s), first);
    fs::write(dav.join("c/new.txt"), b"new").unwrap();
    let now = listing(&plain);
    assert!(now.contains("<D:href>/dav/c/new.txt</D:href>"));
    assert_eq!(listing(&s), now);

    // Each write through brisk shows at once, even one that leaves the
    // collection itself as it was (a member's body or properties).
    append(&dav.join("c/f06.txt"));
    assert_eq!(listing(&s), now, "(not yet seen: the age has not passed)");
    let put = "PUT /dav/c/f07.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc";
    assert_eq!(status(&s, put), 204);
    let now = listing(&plain);
    assert!(now.contains("<D:getcontentlength>3</D:getcontentlength>"));
    assert_eq!(listing(&s), now);
    for (method, path, extra) in [
        ("MKCOL", "/dav/c/sub", ""),
        ("COPY", "/dav/c/f08.txt", "Destination: /dav/c/copy.txt\r\n"),
        (
            "MOVE",
            "/dav/c/copy.txt",
            "Destination: /dav/c/moved.txt\r\n",
        ),
        ("DELETE", "/dav/c/f09.txt", ""),
    ] {
        let raw = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n");
        assert!(matches!(status(&s, &raw), 201 | 204), "{method}");
        assert_eq!(listing(&s), listing(&plain), "after {method}");
    }

    // Dead properties: the first PROPPATCH marks the collection (which
    // changes it); the second leaves the collection as it was.
    match status(&s, &proppatch("/dav/c/f01.txt", "red")) {
        507 => {
            skip("the temporary directory's filesystem has no user extended attributes");
            return;
        }
        status => assert_eq!(status, 207),
    }
    let now = listing(&plain);
    assert!(now.contains(">red</R:tint>"), "{now}");
    assert_eq!(listing(&s), now);
    append(&dav.join("c/f10.txt"));
    assert_eq!(status(&s, &proppatch("/dav/c/f02.txt", "blue")), 207);
    let now = listing(&plain);
    assert!(now.contains(">blue</R:tint>"), "{now}");
    assert_eq!(listing(&s), now);

    // A lock shows at once, and goes at once (the locks are never kept
    // with a listing: they are the cached server's own).
    let lock = "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
                <D:locktype><D:write/></D:locktype></D:lockinfo>";
    let r = s.request(
        format!(
            "LOCK /dav/c/f03.txt HTTP/1.1\r\nHost: localhost\r\nTimeout: Second-600\r\n\
             Content-Length: {}\r\n\r\n{lock}",
            lock.len()
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.head);
    let token = r.header("Lock-Token").unwrap().to_string();
    let held = listing(&s);
    let inner = token.trim_matches(|c| c == '<' || c == '>');
    assert!(
        held.contains(&format!("<D:href>{inner}</D:href>")),
        "{held}"
    );
    let unlock =
        format!("UNLOCK /dav/c/f03.txt HTTP/1.1\r\nHost: localhost\r\nLock-Token: {token}\r\n\r\n");
    assert_eq!(status(&s, &unlock), 204);
    assert_eq!(listing(&s), listing(&plain));
}

#[test]
fn a_change_beside_brisk_shows_once_the_age_has_passed() {
    let (s, plain, dav) = pair("listing_cache = \"300ms\"\n", 40);
    let first = listing(&plain);
    assert_eq!(listing(&s), first);
    append(&dav.join("c/f05.txt"));
    let now = listing(&plain);
    assert_ne!(now, first);
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert_eq!(listing(&s), now);
}
