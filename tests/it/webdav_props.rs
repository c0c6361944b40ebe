//! Dead properties: the sidecar store (`properties = "sidecar"`, what
//! `auto` uses on a filesystem without user extended attributes) and
//! COPY of dead properties in either store.

use super::webdav::{litmus, names, propfind, proppatch, send, start, transfer, LITMUS_PASSES};
use super::webdav_clients::have;
use super::webdav_locks::send as send_with;
use crate::common::*;
use std::fs;

const SIDECAR: &str = "properties = \"sidecar\"\n";

/// Sets `{urn:z}tint` of `path` to `value`.
fn tint(s: &Server, path: &str, value: &str) -> u16 {
    let body = format!(
        "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><Z:tint xmlns:Z=\"urn:z\">{value}</Z:tint>\
         </D:prop></D:set></D:propertyupdate>"
    );
    proppatch(s, path, &body).status
}

/// The `{urn:z}tint` PROPFIND gives `path` (empty: none).
fn tint_of(s: &Server, path: &str) -> String {
    let ask = "<propfind xmlns=\"DAV:\"><prop><tint xmlns=\"urn:z\"/></prop></propfind>";
    let r = propfind(s, path, "0", ask);
    assert_eq!(r.status, 207, "{path}");
    let body = String::from_utf8_lossy(&r.body).into_owned();
    match body.split_once("<R:tint xmlns:R=\"urn:z\">") {
        Some((_, rest)) => rest.split_once("</R:tint>").unwrap().0.to_string(),
        None => String::new(),
    }
}

/// A static site over the WebDAV tree, dotfiles allowed and directories
/// listed: brisk's own files there (the sidecar store, a PUT's link in
/// its moment) are neither served nor listed, whatever their case; other
/// dotfiles are.
#[test]
fn a_static_site_over_the_tree_never_serves_or_lists_brisks_own_files() {
    let mut b = Builder::new();
    let dav = b.root().join("shared");
    fs::create_dir(&dav).unwrap();
    b.config(&format!(
        "[[webdav]]\npath = \"/dav/\"\nroot = \"{}\"\n{SIDECAR}\n[static]\ndotfiles = \"allow\"\nautoindex = true\n",
        dav.display()
    ));
    let s = b.start();
    write_file(&dav.join("f"), b"1");
    write_file(&dav.join(".seen"), b"2");
    write_file(&dav.join(".brisk-put.1f"), b"partial");
    // (What vfat would open for its short alias of `.brisk-props`; no
    // vfat here, so a file of that name stands in for it.)
    write_file(&dav.join("BRISK-~1"), b"alias");
    assert_eq!(tint(&s, "/dav/f", "blue"), 207);
    assert!(dav.join(".brisk-props").is_file());
    for path in [
        "/shared/.brisk-props",
        "/shared/.BRISK-PROPS.",
        "/shared/.brisk-props/x",
        "/shared/.brisk-put.1f",
        "/shared/.Brisk-Put.1f",
        // (vfat's short alias of `.brisk-props`, which it finds it by.)
        "/shared/BRISK-~1",
    ] {
        assert_eq!(send(&s, "GET", path, b"").status, 404, "{path}");
    }
    let r = send(&s, "GET", "/shared/.seen", b"");
    assert_eq!((r.status, &r.body[..]), (200, &b"2"[..]));
    let r = send(&s, "GET", "/shared/", b"");
    let listing = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.status, 200);
    assert!(listing.contains("href=\".seen\""), "{listing}");
    assert!(listing.contains("href=\"f\""), "{listing}");
    assert!(
        !listing.contains(".brisk-") && !listing.contains("BRISK-~1"),
        "{listing}"
    );
    // Nor through WebDAV, which lists the collection without them.
    let listing = String::from_utf8_lossy(&propfind(&s, "/dav/", "1", "").body).into_owned();
    assert!(listing.contains("<D:href>/dav/.seen</D:href>"), "{listing}");
    assert!(!listing.contains(".brisk-"), "{listing}");
    assert!(!listing.contains("BRISK-~1"), "{listing}");
    assert_eq!(send(&s, "GET", "/dav/.brisk-put.1f", b"").status, 404);
    assert_eq!(send(&s, "GET", "/dav/BRISK-~1", b"").status, 404);
}

/// litmus's `props` suite (and `basic`, `copymove`, which set and move
/// properties too) against the sidecar store: all pass.
#[test]
fn litmus_passes_with_the_sidecar_store() {
    if !have("litmus") {
        return;
    }
    let (s, dav) = start(SIDECAR, &[]);
    let (summaries, ok, text) = litmus(&s, "basic copymove props", &[]);
    assert_eq!(summaries, LITMUS_PASSES[..3], "{text}");
    assert!(ok, "{text}");
    // (No store ever served; what litmus leaves: its collection.)
    assert!(!text.contains("brisk-props"), "{text}");
    // (`prop2`, which `propmove` made, and the store with its
    // properties; none of `prop`, which `propcleanup` deleted.)
    assert_eq!(names(&dav.join("litmus")), [".brisk-props", "prop2"]);
    let store = fs::read(dav.join("litmus/.brisk-props")).unwrap();
    let store = String::from_utf8_lossy(&store);
    assert!(
        store.starts_with("brisk-props 1\n") && store.contains("\nprop2{"),
        "{store}"
    );
    assert!(!store.contains("\nprop{"), "{store}");
}

/// The store: its bytes as documented, and never served, listed or
/// named by a request, even with `dotfiles = "allow"`.
#[test]
fn the_sidecar_store_is_never_served() {
    let extra = format!("{SIDECAR}\n[static]\ndotfiles = \"allow\"\n");
    let (s, dav) = start(&extra, &[("f", b"1"), (".seen", b"2")]);
    assert_eq!(tint(&s, "/dav/f", "blue"), 207);
    assert_eq!(tint(&s, "/dav/", "red"), 207);
    let store = b"brisk-props 1\n0 11 3\n{urn:z}tintred\n1 11 4\nf{urn:z}tintblue\n";
    assert_eq!(fs::read(dav.join(".brisk-props")).unwrap(), store);
    assert_eq!(names(&dav), [".brisk-props", ".seen", "f"]);
    assert_eq!(
        (tint_of(&s, "/dav/f"), tint_of(&s, "/dav/")),
        ("blue".into(), "red".into())
    );
    // (vfat and exFAT ignore ASCII case and trailing dots: so does the
    // check.)
    for path in [
        "/dav/.brisk-props",
        "/dav/.brisk-props.new",
        "/dav/.brisk-props/x",
        "/dav/.Brisk-PROPS.",
    ] {
        for method in [
            "GET",
            "HEAD",
            "PROPFIND",
            "DELETE",
            "PROPPATCH",
            "MKCOL",
            "OPTIONS",
        ] {
            assert_eq!(send(&s, method, path, b"").status, 404, "{method} {path}");
        }
        assert_eq!(send(&s, "PUT", path, b"x").status, 404, "{path}");
        assert_eq!(transfer(&s, "COPY", path, "/dav/g", "").status, 404);
        assert_eq!(transfer(&s, "MOVE", "/dav/f", path, "").status, 403);
        assert_eq!(transfer(&s, "COPY", "/dav/f", path, "").status, 403);
    }
    let listing = String::from_utf8_lossy(&propfind(&s, "/dav/", "1", "").body).into_owned();
    assert!(listing.contains("<D:href>/dav/.seen</D:href>"), "{listing}");
    assert!(listing.contains("<D:href>/dav/f</D:href>"), "{listing}");
    assert!(!listing.contains("brisk-props"), "{listing}");
    assert_eq!(fs::read(dav.join(".brisk-props")).unwrap(), store);
    assert_eq!(fs::read(dav.join("f")).unwrap(), b"1");
    // (A damaged store: read as empty, never written over; 500 for a
    // change, logged.)
    fs::write(dav.join(".brisk-props"), b"brisk-props 1\n9 9 9\n").unwrap();
    assert_eq!(tint_of(&s, "/dav/f"), "");
    let r = proppatch(
        &s,
        "/dav/f",
        "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><Z:a xmlns:Z=\"urn:z\">1</Z:a>\
         <Z:b xmlns:Z=\"urn:z\">2</Z:b></D:prop></D:set></D:propertyupdate>",
    );
    let body = String::from_utf8_lossy(&r.body).into_owned();
    assert!(body.contains("<R:a xmlns:R=\"urn:z\"/></D:prop><D:status>HTTP/1.1 500 Internal Server Error</D:status>"), "{body}");
    assert!(
        body.contains(
            "<R:b xmlns:R=\"urn:z\"/></D:prop><D:status>HTTP/1.1 424 Failed Dependency</D:status>"
        ),
        "{body}"
    );
    assert_eq!(
        fs::read(dav.join(".brisk-props")).unwrap(),
        b"brisk-props 1\n9 9 9\n"
    );
    assert_eq!(names(&dav), [".brisk-props", ".seen", "f"]);
}

/// A file removed beside brisk (not by a DELETE) leaves its entries in
/// the sidecar store; a PUT that makes a new file of that name (201)
/// starts with none, as a new resource has none.
#[test]
fn a_new_file_does_not_take_a_removed_ones_sidecar_entries() {
    let (s, dav) = start(SIDECAR, &[("f.txt", b"f")]);
    assert_eq!(tint(&s, "/dav/f.txt", "secret"), 207);
    std::fs::remove_file(dav.join("f.txt")).unwrap();
    assert_eq!(send(&s, "PUT", "/dav/f.txt", b"new").status, 201);
    assert_eq!(tint_of(&s, "/dav/f.txt"), "");
    // A file replaced (204) keeps its own, as before.
    assert_eq!(tint(&s, "/dav/f.txt", "kept"), 207);
    assert_eq!(send(&s, "PUT", "/dav/f.txt", b"newer").status, 204);
    assert_eq!(tint_of(&s, "/dav/f.txt"), "kept");
}

/// The sidecar store's entries follow MOVE (within a collection, across
/// collections, over a member that had its own), COPY (of a file, of a
/// collection with `Depth: 0` and infinity) and DELETE.
#[test]
fn sidecar_entries_follow_move_copy_and_delete() {
    let files: &[(&str, &[u8])] = &[("a/f", b"f"), ("a/g", b"g"), ("b/h", b"h"), ("c/i", b"i")];
    let (s, dav) = start(SIDECAR, files);
    for (path, value) in [
        ("/dav/a/f", "blue"),
        ("/dav/a/g", "green"),
        ("/dav/b/h", "gray"),
    ] {
        assert_eq!(tint(&s, path, value), 207);
    }
    assert_eq!(tint(&s, "/dav/c/", "red"), 207);
    assert_eq!(tint(&s, "/dav/c/i", "ink"), 207);
    let moved = |from: &str, to: &str, status: u16| {
        assert_eq!(
            transfer(&s, "MOVE", from, to, "").status,
            status,
            "MOVE {from} {to}"
        );
    };
    let copied = |from: &str, to: &str, depth: &str, status: u16| {
        let r = transfer(&s, "COPY", from, to, depth);
        assert_eq!(r.status, status, "COPY {from} {to}");
    };
    moved("/dav/a/f", "/dav/a/f2", 201);
    assert_eq!(tint_of(&s, "/dav/a/f2"), "blue");
    assert_eq!(propfind(&s, "/dav/a/f", "0", "").status, 404);
    // (Over b/h, whose own goes with it.)
    moved("/dav/a/f2", "/dav/b/h", 204);
    assert_eq!(tint_of(&s, "/dav/b/h"), "blue");
    assert_eq!(
        fs::read(dav.join("a/.brisk-props")).unwrap(),
        b"brisk-props 1\n1 11 5\ng{urn:z}tintgreen\n"
    );
    assert_eq!(
        fs::read(dav.join("b/.brisk-props")).unwrap(),
        b"brisk-props 1\n1 11 4\nh{urn:z}tintblue\n"
    );
    copied("/dav/a/g", "/dav/b/g", "", 201);
    assert_eq!(
        (tint_of(&s, "/dav/a/g"), tint_of(&s, "/dav/b/g")),
        ("green".into(), "green".into())
    );
    // (A collection: its own and its members' go with it.)
    moved("/dav/c/", "/dav/b/c", 201);
    assert_eq!(
        (tint_of(&s, "/dav/b/c/"), tint_of(&s, "/dav/b/c/i")),
        ("red".into(), "ink".into())
    );
    copied("/dav/b/c/", "/dav/c0/", "Depth: 0\r\n", 201);
    assert_eq!(tint_of(&s, "/dav/c0/"), "red");
    assert_eq!(names(&dav.join("c0")), [".brisk-props"]);
    copied("/dav/b/c/", "/dav/c1/", "", 201);
    assert_eq!(
        (tint_of(&s, "/dav/c1/"), tint_of(&s, "/dav/c1/i")),
        ("red".into(), "ink".into())
    );
    // (A file that replaces a collection has none of the collection's.)
    copied("/dav/a/g", "/dav/c1", "", 204);
    assert_eq!(tint_of(&s, "/dav/c1"), "green");
    // DELETE: a new file of the same name has none.
    assert_eq!(send(&s, "DELETE", "/dav/b/h", b"").status, 204);
    assert_eq!(send(&s, "PUT", "/dav/b/h", b"new").status, 201);
    assert_eq!(tint_of(&s, "/dav/b/h"), "");
    assert_eq!(
        fs::read(dav.join("b/.brisk-props")).unwrap(),
        b"brisk-props 1\n1 11 5\ng{urn:z}tintgreen\n"
    );
    // (The last one gone, the store is too.)
    assert_eq!(send(&s, "DELETE", "/dav/b/g", b"").status, 204);
    assert_eq!(names(&dav.join("b")), ["c", "h"]);
    assert_eq!(send(&s, "DELETE", "/dav/b/", b"").status, 204);
    assert_eq!(names(&dav), [".brisk-props", "a", "c0", "c1"]);
    assert_eq!(
        fs::read(dav.join(".brisk-props")).unwrap(),
        b"brisk-props 1\n2 11 5\nc1{urn:z}tintgreen\n"
    );
}

/// COPY takes the dead properties along (a file, a tree), in extended
/// attributes as in the sidecar store.
#[test]
fn dead_properties_go_with_a_copy() {
    for extra in ["", SIDECAR] {
        let (s, _dav) = start(extra, &[("d/f", b"f"), ("g", b"g")]);
        match tint(&s, "/dav/d/f", "blue") {
            507 => {
                skip("the temporary directory's filesystem has no user extended attributes");
                continue;
            }
            status => assert_eq!(status, 207),
        }
        assert_eq!(tint(&s, "/dav/d/", "red"), 207);
        assert_eq!(tint(&s, "/dav/g", "gray"), 207);
        assert_eq!(transfer(&s, "COPY", "/dav/d/f", "/dav/f2", "").status, 201);
        assert_eq!(transfer(&s, "COPY", "/dav/d/", "/dav/e/", "").status, 201);
        assert_eq!(transfer(&s, "COPY", "/dav/g", "/dav/e/f", "").status, 204);
        let got: Vec<String> = ["/dav/f2", "/dav/e/", "/dav/d/f", "/dav/e/f"]
            .iter()
            .map(|p| tint_of(&s, p))
            .collect();
        assert_eq!(got, ["blue", "red", "blue", "gray"], "{extra:?}");
        // (Listed in the copy's collection too.)
        let listing = String::from_utf8_lossy(&propfind(&s, "/dav/e/", "1", "").body).into_owned();
        assert_eq!(listing.matches(">gray</R:tint>").count(), 1, "{listing}");
    }
}

/// `properties = "auto"` (the default) on a filesystem without user
/// extended attributes (a ramfs, which has none: mounted as root) keeps
/// dead properties in the sidecar store.
#[test]
fn auto_uses_the_sidecar_store_where_there_are_no_user_xattrs() {
    let (b, dav) = super::webdav::builder("");
    let Some(_mounted) = super::webdav::mount("ramfs", &dav) else {
        return;
    };
    fs::write(dav.join("f"), b"1").unwrap();
    let s = b.start();
    assert_eq!(tint(&s, "/dav/f", "blue"), 207);
    assert_eq!(
        fs::read(dav.join(".brisk-props")).unwrap(),
        b"brisk-props 1\n1 11 4\nf{urn:z}tintblue\n"
    );
    assert_eq!(tint_of(&s, "/dav/f"), "blue");
    assert_eq!(send(&s, "GET", "/dav/.brisk-props", b"").status, 404);
    drop(s);
}

/// A PROPPATCH whose properties the extended attributes cannot take is
/// 507, and the error log says why and what keeps more: ext4 holds about
/// 4 KiB of them a file (one block); a filesystem without user extended
/// attributes (a ramfs, mounted as root) with `properties = "xattr"`
/// holds none. It was a silent 507 in the 207.
#[test]
fn properties_extended_attributes_cannot_take_are_507_and_logged() {
    let (s, dav) = start("", &[("f", b"f")]);
    if statfs_type(&dav) == Some(0xEF53) {
        assert_eq!(tint(&s, "/dav/f", &"x".repeat(8192)), 207);
        let line = s.wait_stderr_line("its dead properties cannot be kept as extended attributes");
        assert!(
            line.contains(&format!("\"{}\": ", dav.join("f").display())),
            "{line}"
        );
        assert!(
            line.contains("about 4 KiB on ext4; properties = \"sidecar\""),
            "{line}"
        );
        // (None kept, and the file answers as before.)
        assert_eq!(tint_of(&s, "/dav/f"), "");
        assert_eq!(tint(&s, "/dav/f", "blue"), 207);
        assert_eq!(tint_of(&s, "/dav/f"), "blue");
    } else {
        skip("the temporary directory is not on ext4, whose 4 KiB limit this shows");
    }
    drop(s);
    let (b, dav) = super::webdav::builder("properties = \"xattr\"\n");
    let Some(_mounted) = super::webdav::mount("ramfs", &dav) else {
        return;
    };
    fs::write(dav.join("f"), b"1").unwrap();
    let s = b.start();
    let r = proppatch(
        &s,
        "/dav/f",
        "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><Z:tint xmlns:Z=\"urn:z\">blue</Z:tint>\
         </D:prop></D:set></D:propertyupdate>",
    );
    assert_eq!(r.status, 207);
    assert!(r
        .text()
        .contains("<D:status>HTTP/1.1 507 Insufficient Storage</D:status>"));
    let line = s.wait_stderr_line("(this filesystem keeps none: properties = \"sidecar\"");
    assert!(line.contains("[warn] webdav: PROPPATCH /dav/f: "), "{line}");
    drop(s);
}

/// The filesystem type of `path` (`statfs`'s `f_type`).
fn statfs_type(path: &std::path::Path) -> Option<i64> {
    let out = std::process::Command::new("stat")
        .args(["-f", "-c", "%t"])
        .arg(path)
        .output()
        .ok()?;
    i64::from_str_radix(String::from_utf8_lossy(&out.stdout).trim(), 16).ok()
}

/// A value with elements inside (RFC 4918 §4.4) is kept as XML, in
/// either store: PROPFIND gives it back as it came, but for the
/// namespaces in force, declared on each element it starts with.
#[test]
fn values_with_elements_are_kept_as_xml() {
    for extra in ["", SIDECAR] {
        let (s, _dav) = start(extra, &[("f", b"f")]);
        let body = "<?xml version=\"1.0\"?>\n<propertyupdate xmlns=\"DAV:\" xmlns:Z=\"urn:z\"><set><prop>\
                    <Z:v>a <Z:b k=\"1\">&amp;<c xmlns=\"urn:c\"/></Z:b><![CDATA[<]]> é&#x1F600;</Z:v>\
                    </prop></set></propertyupdate>";
        match proppatch(&s, "/dav/f", body).status {
            507 => {
                skip("the temporary directory's filesystem has no user extended attributes");
                continue;
            }
            status => assert_eq!(status, 207),
        }
        let want = "<R:v xmlns:R=\"urn:z\">a <Z:b xmlns=\"DAV:\" xmlns:Z=\"urn:z\" k=\"1\">&amp;<c xmlns=\"urn:c\"/>\
                    </Z:b><![CDATA[<]]> é&#x1F600;</R:v>";
        let ask = "<propfind xmlns=\"DAV:\"><prop><v xmlns=\"urn:z\"/></prop></propfind>";
        for (depth, path) in [("0", "/dav/f"), ("1", "/dav/")] {
            let r = propfind(&s, path, depth, ask);
            let text = String::from_utf8_lossy(&r.body).into_owned();
            assert_eq!(text.matches(want).count(), 1, "{extra:?} {depth}: {text}");
        }
        // (A NUL, which XML has none of, is refused: 400.)
        let nul = "<propertyupdate xmlns=\"DAV:\"><set><prop><v xmlns=\"urn:z\">\0<x/></v></prop></set></propertyupdate>";
        assert_eq!(proppatch(&s, "/dav/f", nul).status, 400);
    }
}

/// A dead property's `xml:lang`, its own or one in force where it was
/// (RFC 4918 §4.3: MUST be kept), comes back on it, in either store, for
/// a text value and an XML one; a property without one gets none. It was
/// dropped (Apache keeps it).
#[test]
fn a_dead_propertys_language_is_kept() {
    for extra in ["", SIDECAR] {
        let (s, _dav) = start(extra, &[("f", b"f")]);
        let body = "<propertyupdate xmlns=\"DAV:\" xmlns:Z=\"urn:z\" xml:lang=\"en\"><set><prop>\
                    <Z:own xml:lang=\"fr\">bonjour</Z:own><Z:inherited>hello</Z:inherited>\
                    <Z:x xml:lang=\"de\"><Z:b>hallo</Z:b></Z:x></prop></set>\
                    <set><prop xml:lang=\"\"><Z:none>plain</Z:none></prop></set></propertyupdate>";
        match proppatch(&s, "/dav/f", body).status {
            507 => {
                skip("the temporary directory's filesystem has no user extended attributes");
                continue;
            }
            status => assert_eq!(status, 207),
        }
        let r = propfind(
            &s,
            "/dav/f",
            "0",
            "<propfind xmlns=\"DAV:\"><allprop/></propfind>",
        );
        let text = String::from_utf8_lossy(&r.body).into_owned();
        for want in [
            "<R:own xmlns:R=\"urn:z\" xml:lang=\"fr\">bonjour</R:own>",
            "<R:inherited xmlns:R=\"urn:z\" xml:lang=\"en\">hello</R:inherited>",
            "<R:x xmlns:R=\"urn:z\" xml:lang=\"de\"><Z:b xmlns=\"DAV:\" xmlns:Z=\"urn:z\">hallo</Z:b></R:x>",
            "<R:none xmlns:R=\"urn:z\" xml:lang=\"\">plain</R:none>",
        ] {
            assert_eq!(text.matches(want).count(), 1, "{extra:?}: {want} in {text}");
        }
        // Set again without one: none.
        assert_eq!(tint(&s, "/dav/f", "blue"), 207);
        assert_eq!(tint_of(&s, "/dav/f"), "blue");
    }
}

/// A PROPFIND is well-formed XML whatever was stored or named: a dead
/// property value with `]]>` in its text, a processing instruction
/// without a target or named `xml`, is refused (400, nothing stored);
/// one with a PI of its own, or CDATA, comes back as sent. A name with a
/// character XML cannot carry (U+FFFE) is listed: its href
/// percent-encoded, U+FFFD in its displayname.
#[test]
fn a_propfind_is_well_formed_whatever_was_stored_or_named() {
    let (s, _) = start("", &[("f", b"1")]);
    for bad in [
        "x ]]> y",
        "<w>]]></w>",
        "<w><?xml version=\"1.0\"?></w>",
        "<w><? nopi ?></w>",
    ] {
        assert_eq!(tint(&s, "/dav/f", bad), 400, "{bad}");
    }
    assert_eq!(tint_of(&s, "/dav/f"), "");
    let good = "<w xmlns=\"urn:w\"><?pi data?><![CDATA[a]]b <]]>]] &gt;</w>";
    assert_eq!(tint(&s, "/dav/f", good), 207);
    // (With the namespaces in force where it was: RFC 4918 §4.4.)
    assert_eq!(
        tint_of(&s, "/dav/f"),
        "<w xmlns:Z=\"urn:z\" xmlns:D=\"DAV:\" xmlns=\"urn:w\"><?pi data?><![CDATA[a]]b <]]>]] &gt;</w>"
    );
    assert_eq!(send(&s, "MKCOL", "/dav/names/", b"").status, 201);
    assert_eq!(
        send(&s, "PUT", "/dav/names/ctl%EF%BF%BEx", b"x").status,
        201
    );
    let r = propfind(&s, "/dav/names/", "1", "");
    assert_eq!(r.status, 207);
    let body = String::from_utf8(r.body.clone()).unwrap();
    assert!(!body.contains('\u{FFFE}'), "{body}");
    assert!(
        body.contains("<D:href>/dav/names/ctl%EF%BF%BEx</D:href>"),
        "{body}"
    );
    assert!(
        body.contains("<D:displayname>ctl\u{FFFD}x</D:displayname>"),
        "{body}"
    );
}

/// An XML body may start with a UTF-8 byte order mark (XML 1.0 §4.3.3),
/// as Apache takes it: PROPFIND, PROPPATCH and LOCK read it as without.
/// A UTF-16 body is 415, saying why.
#[test]
fn an_xml_body_may_start_with_a_utf8_byte_order_mark() {
    let (s, _) = start("locks = true\n", &[("f", b"1")]);
    let bom = "\u{FEFF}";
    let ask = format!("{bom}<?xml version=\"1.0\"?><propfind xmlns=\"DAV:\"><prop><getcontentlength/></prop></propfind>");
    let r = propfind(&s, "/dav/f", "0", &ask);
    assert_eq!(r.status, 207, "{}", r.head);
    assert!(String::from_utf8_lossy(&r.body).contains("<D:getcontentlength>1</D:getcontentlength>"));
    assert_eq!(tint(&s, "/dav/f", "red"), 207);
    let body = format!(
        "{bom}<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><Z:tint xmlns:Z=\"urn:z\">blue</Z:tint>\
         </D:prop></D:set></D:propertyupdate>"
    );
    assert_eq!(proppatch(&s, "/dav/f", &body).status, 207);
    assert_eq!(tint_of(&s, "/dav/f"), "blue");
    let lockinfo = format!(
        "{bom}<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope>\
         <D:locktype><D:write/></D:locktype></D:lockinfo>"
    );
    let r = send_with(&s, "LOCK", "/dav/f", "", lockinfo.as_bytes());
    assert_eq!(r.status, 200, "{}", r.head);
    // UTF-16 (little-endian, by its mark): 415, with why.
    let mut raw =
        b"PROPFIND /dav/f HTTP/1.1\r\nHost: localhost\r\nDepth: 0\r\nContent-Length: 10\r\n\r\n"
            .to_vec();
    raw.extend_from_slice(&[0xFF, 0xFE, b'<', 0, b'a', 0, b'/', 0, b'>', 0]);
    let r = s.request(&raw);
    assert_eq!(r.status, 415, "{}", r.head);
    assert_eq!(
        r.body,
        b"A UTF-16 body: WebDAV bodies are read as UTF-8 only.\n"
    );
}

/// A body in another encoding (ISO-8859-1's `é`) is 415, and one that is
/// not well-formed 400: each with its reason, in the answer and in the
/// log at `info` (both were 400 with nothing said anywhere).
#[test]
fn an_xml_body_that_cannot_be_read_says_why() {
    let (s, _) = start("", &[("f", b"1")]);
    let mut latin = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><D:propfind xmlns:D=\"DAV:\"><D:prop><x:caf".to_vec();
    latin.extend_from_slice(b"\xe9 xmlns:x=\"urn:x\"/></D:prop></D:propfind>");
    let mut raw = format!(
        "PROPFIND /dav/f HTTP/1.1\r\nHost: localhost\r\nDepth: 0\r\nContent-Length: {}\r\n\r\n",
        latin.len()
    )
    .into_bytes();
    raw.extend_from_slice(&latin);
    let r = s.request(&raw);
    assert_eq!(r.status, 415, "{}", r.head);
    assert_eq!(
        r.body,
        b"A body that is not UTF-8: WebDAV bodies are read as UTF-8 only.\n"
    );
    let body = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop><x:a xmlns:x=\"urn:x\">1</D:prop></D:set></D:propertyupdate>";
    let r = proppatch(&s, "/dav/f", body);
    assert_eq!(r.status, 400, "{}", r.head);
    assert!(
        String::from_utf8_lossy(&r.body)
            .starts_with("An XML body brisk cannot read: not well-formed"),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    s.wait_stderr_line("webdav: PROPPATCH /dav/f: An XML body brisk cannot read");
}
