//! Request-target to file-path mapping rules: percent-decoding (once),
//! dot-segment resolution, dotfile detection. Never touches the disk.
//!
//! The order matters for security: the path is decoded exactly once and
//! *then* normalised, so an encoded dot or slash (`%2e`, `%2F`) is resolved
//! like a literal one and can never smuggle a `..` past normalisation, while
//! a double-encoded one (`%252e`) stays the literal file name `%2e`.

use super::grammar::hex_value;
use super::Status;
use crate::ascii::IgnoreCase;

/// Why a path was refused, and with which status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathError {
    /// The status to answer with (always 400 today).
    pub status: Status,
    /// A short human-readable reason, for the error log.
    pub reason: &'static str,
}

const fn bad(reason: &'static str) -> PathError {
    PathError {
        status: Status::BAD_REQUEST,
        reason,
    }
}

const NO_LEADING_SLASH: PathError = bad("path does not start with '/'");
const BAD_ESCAPE: PathError = bad("malformed percent-encoding in path");
const CONTROL_BYTE: PathError = bad("control character in path");
const ABOVE_ROOT: PathError = bad("path climbs above the root");

/// Splits an origin-form target into its raw path and raw query (without `?`).
///
/// The split is at the first `?` (RFC 3986 §3.4): a `?` can never be part of
/// a raw path, only of its percent-encoded form `%3F`.
pub fn split_target(target: &[u8]) -> (&[u8], Option<&[u8]>) {
    match target.iter().position(|&b| b == b'?') {
        Some(i) => (&target[..i], Some(&target[i + 1..])),
        None => (target, None),
    }
}

/// Closes the segment `out[seg_start..]` that a `/` (or the end of the path)
/// just terminated. On entry `out[..seg_start]` is a normalised prefix that
/// ends with `/`. Returns whether the segment was a dot-segment or empty,
/// i.e. whether `out` now ends with `/` already.
fn close_segment(out: &mut Vec<u8>, seg_start: usize) -> Result<bool, PathError> {
    match &out[seg_start..] {
        // `//`: merged into one slash.
        b"" => Ok(true),
        // RFC 3986 §5.2.4 step 2B/2D: `.` vanishes.
        b"." => {
            out.truncate(seg_start);
            Ok(true)
        }
        // Step 2C: `..` removes the segment before it. At the root there is
        // none; RFC 3986 would silently stay at `/`, but such a request is
        // either broken or an attack, so it is refused as nginx does.
        b".." => {
            out.truncate(seg_start);
            if seg_start <= 1 {
                return Err(ABOVE_ROOT);
            }
            // out ends with the slash that closed the previous segment;
            // drop back to the slash before that one.
            let parent_end = out[..seg_start - 1]
                .iter()
                .rposition(|&b| b == b'/')
                .map_or(1, |p| p + 1);
            out.truncate(parent_end);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Percent-decodes `path` exactly once into `out` (cleared first), then
/// resolves dot-segments (RFC 3986 §5.2.4) and merges repeated slashes.
/// The result starts with `/` and keeps a trailing slash if there was one.
///
/// Refused with 400: a path not starting with `/` (or empty), a malformed
/// escape (`%zz`, `%4`), a control byte (0x00–0x1F, 0x7F, raw or decoded),
/// and a `..` that would climb above the root. A decoded `%2F` is a
/// separator like any other `/`; a backslash and bytes ≥ 0x80 are ordinary
/// name bytes. The result is never longer than `path`, so `out` allocates
/// at most once and not at all when it already has the capacity. On error
/// `out` is left empty.
pub fn decode_and_normalize(path: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    let result = decode_into(path, out);
    if result.is_err() {
        // Never leave a half-normalised path behind for a careless caller.
        out.clear();
    }
    result
}

/// The decoded, normalised path a COPY or MOVE's `Destination` (RFC 4918
/// §10.3) names: an absolute URI on the request's own host (`host`), or
/// an absolute path. Another host, or a scheme other than HTTP's, is 502
/// (§9.8.5: "the destination is on another server"); a malformed one 400,
/// a fragment too (§10.3: a `simple-ref` has none; a request target with
/// `#` is refused the same way).
pub fn destination(value: &[u8], host: Option<&[u8]>, out: &mut Vec<u8>) -> Result<(), Status> {
    let raw = match value.iter().position(|&b| b == b':') {
        Some(i)
            if value[..i].iter().all(u8::is_ascii_alphabetic) && value[i..].starts_with(b"://") =>
        {
            let rest = &value[i + 3..];
            let end = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
            // (The scheme's own port, written or not, is the same host:
            // RFC 9110 §4.2.3.)
            let port: &[u8] = match value[..i].to_ascii_lowercase().as_slice() {
                b"http" => b":80",
                b"https" => b":443",
                _ => return Err(Status::BAD_GATEWAY),
            };
            let bare = |a: &'_ [u8]| -> Vec<u8> {
                let a = a.to_ascii_lowercase();
                match a.strip_suffix(port).filter(|_| !port.is_empty()) {
                    Some(h) => h.to_vec(),
                    None => a,
                }
            };
            if host.is_some_and(|h| bare(h) != bare(&rest[..end])) {
                return Err(Status::BAD_GATEWAY);
            }
            &rest[end..]
        }
        _ => value,
    };
    if raw.contains(&b'#') {
        return Err(Status::BAD_REQUEST);
    }
    let (raw, _) = split_target(raw);
    decode_and_normalize(raw, out).map_err(|_| Status::BAD_REQUEST)
}

/// What a path byte asks of [`is_plain`]: nothing (0), a look at the
/// byte after it (`/`: 1), or the full decoder (`%`, a control byte: 2).
static PLAIN: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = 2;
        i += 1;
    }
    table[0x7f] = 2;
    table[b'%' as usize] = 2;
    table[b'/' as usize] = 1;
    table
};

/// Whether `path` (starting with `/`) is its own decoded, normalised
/// form: no `%`, no control byte, and no `/` followed by `/` or `.` (so
/// no empty segment but a trailing one, no dot-segment). Most requests'
/// paths are; they are copied whole, the rest decoded byte by byte.
fn is_plain(path: &[u8]) -> bool {
    let mut after_slash = false;
    for &b in path {
        match PLAIN[b as usize] {
            0 => {
                if after_slash && b == b'.' {
                    return false;
                }
                after_slash = false;
            }
            1 => {
                if after_slash {
                    return false;
                }
                after_slash = true;
            }
            _ => return false,
        }
    }
    true
}

fn decode_into(path: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    out.clear();
    if path.first() != Some(&b'/') {
        return Err(NO_LEADING_SLASH);
    }
    if is_plain(path) {
        out.extend_from_slice(path);
        return Ok(());
    }
    decode_bytes(path, out)
}

/// [`decode_into`] byte by byte, for a path that starts with `/`.
fn decode_bytes(path: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    out.reserve(path.len());
    out.push(b'/');
    let mut seg_start = 1;
    let mut i = 1;
    while i < path.len() {
        let mut b = path[i];
        i += 1;
        if b == b'%' {
            let hi = path.get(i).copied().and_then(hex_value);
            let lo = path.get(i + 1).copied().and_then(hex_value);
            match (hi, lo) {
                (Some(hi), Some(lo)) => b = hi << 4 | lo,
                _ => return Err(BAD_ESCAPE),
            }
            i += 2;
        }
        if b < 0x20 || b == 0x7f {
            return Err(CONTROL_BYTE);
        }
        if b == b'/' {
            if !close_segment(out, seg_start)? {
                out.push(b'/');
            }
            seg_start = out.len();
        } else {
            out.push(b);
        }
    }
    // The last segment has no slash after it: a dot-segment there leaves
    // the trailing slash of its parent (`/a/.` → `/a/`, `/a/..` → `/`).
    close_segment(out, seg_start)?;
    Ok(())
}

/// The start of the names brisk itself makes in the trees it serves (the
/// WebDAV dead properties' store, `.brisk-props`, and the moment-long link
/// of a PUT, `.brisk-put.*`).
pub const OWN_PREFIX: &[u8] = b".brisk-";

/// Whether `name` (one path segment) is one of brisk's own: it starts with
/// [`OWN_PREFIX`], ASCII case ignored (vfat and exFAT, where the WebDAV
/// store lives when there are no extended attributes, look names up so),
/// or is the short (8.3) alias vfat gives such a name and also finds it
/// by (`.brisk-props` is `BRISK-~1`, `.brisk-props.new` `BRISK-~1.NEW`:
/// the leading dot dropped, the rest cut to six, `~` and a number). Such
/// a name is never served, listed or named by a request, whatever
/// `[static] dotfiles` says.
pub fn is_own_name(name: &[u8]) -> bool {
    const ALIAS: &[u8] = b"brisk-~";
    let starts = |p: &[u8]| name.get(..p.len()).is_some_and(|n| n.eq_ignore_case(p));
    starts(OWN_PREFIX) || starts(ALIAS)
}

/// Whether a request can name a file called `name`: not if it holds a
/// control character (a newline, a tab: refused in any path, 400), so
/// listings leave it out rather than link to a 400.
pub fn is_nameable(name: &[u8]) -> bool {
    !name.iter().any(|&b| b < 0x20 || b == 0x7f)
}

/// Whether a server behind brisk could read the decoded, normalised
/// `path` as another path than brisk did (its rules matched this one):
/// if a segment's name before `;` is `.` or `..` (Tomcat, Jetty and
/// Spring drop a segment's parameters, RFC 3986 §3.3, before they
/// resolve dot-segments: `/a/..;/b` is `/b` to them), or is empty and
/// not last (`/;x/b` is `/b`), or if a `.` or `..` stands between
/// backslashes (a separator to Windows servers: `/a/..\b`).
pub fn read_otherwise(path: &[u8]) -> bool {
    let mut pieces = path.split(|&b| b == b'/' || b == b'\\').skip(1).peekable();
    while let Some(piece) = pieces.next() {
        let (name, params) = match piece.iter().position(|&b| b == b';') {
            Some(i) => (&piece[..i], true),
            None => (piece, false),
        };
        let last = pieces.peek().is_none();
        if name == b"." || name == b".." || (name.is_empty() && params && !last) {
            return true;
        }
    }
    false
}

/// `path` without its segments' parameters (from a `;` to the segment's
/// end, RFC 3986 §3.3): the path Tomcat, Jetty and Spring route on
/// (`/admin;x/secret` is `/admin/secret` to them).
pub fn without_params(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut skipping = false;
    for &b in path {
        skipping = match b {
            b'/' => false,
            b';' => true,
            _ => skipping,
        };
        if !skipping {
            out.push(b);
        }
    }
    out
}

/// Whether the raw path `raw` (as the client spelt it, escapes and all)
/// holds a dot segment, `.` or `..` spelt with `%2e` or not, between
/// `/` or `%2F`. brisk resolved it before its rules matched the path; a
/// server behind that routes on the path as sent, unresolved (Express's
/// router, a framework reading `REQUEST_URI`), would read another one:
/// `/secret/../api/x` is `/api/x` to brisk's rules, and under
/// `/secret/` to such a router. Browsers and HTTP libraries resolve dot
/// segments before they send (RFC 3986 §5.2.4), so none sends one.
pub fn has_dot_segment(raw: &[u8]) -> bool {
    let (mut dots, mut other, mut i) = (0u8, false, 0);
    loop {
        let (dot, sep, len) = match raw.get(i..) {
            None | Some([]) => (false, true, 1),
            Some([b'/', ..]) => (false, true, 1),
            Some([b'%', b'2', b'f' | b'F', ..]) => (false, true, 3),
            Some([b'.', ..]) => (true, false, 1),
            Some([b'%', b'2', b'e' | b'E', ..]) => (true, false, 3),
            Some(_) => (false, false, 1),
        };
        if sep {
            if !other && (dots == 1 || dots == 2) {
                return true;
            }
            if i >= raw.len() {
                return false;
            }
            (dots, other) = (0, false);
        } else if dot {
            dots = dots.saturating_add(1);
        } else {
            other = true;
        }
        i += len;
    }
}

/// Whether any segment of `path` is one of brisk's own names.
pub fn has_own_segment(path: &[u8]) -> bool {
    path.split(|&b| b == b'/').any(is_own_name)
}

/// In one pass over a normalised `path`: whether a segment starts with
/// `.` (as [`has_dotfile_segment`] says) and whether it holds a `~`.
/// Every request's path goes through it (`Dotfiles::refuses`), so it
/// looks at eight bytes at a time.
#[inline]
pub fn dots_and_tildes(path: &[u8]) -> (bool, bool) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `w` that is `c`, and no other.
    let eq = |w: u64, c: u8| {
        let x = w ^ (LO * u64::from(c));
        !(((x & !HI) + !HI) | x) & HI
    };
    // A first segment `.well-known` is exempt (RFC 8615): the scan starts
    // after it.
    let first = path.iter().position(|&b| b != b'/').unwrap_or(path.len());
    let rest = match path[first..].strip_prefix(b".well-known") {
        Some(after) if after.first().is_none_or(|&b| b == b'/') => after,
        _ => path,
    };
    // (The byte before the first is a separator, as a `/` is; the last
    // word has zeros after the path's bytes, and a zero is none of the
    // three.)
    let (mut after_slash, mut dot, mut tilde) = (0x80u64, 0u64, 0u64);
    let mut at = 0;
    while at < rest.len() {
        let w = match rest.get(at..at + 8) {
            Some(word) => u64::from_le_bytes(word.try_into().expect("8 bytes")),
            None => (rest[at..].iter().rev()).fold(0u64, |w, &b| w << 8 | u64::from(b)),
        };
        let slash = eq(w, b'/');
        dot |= ((slash << 8) | after_slash) & eq(w, b'.');
        tilde |= eq(w, b'~');
        after_slash = slash >> 56;
        at += 8;
    }
    (dot != 0, tilde != 0)
}

/// Whether any segment of a normalised path starts with `.`
/// (`/.git/config`, `/a/.htpasswd`); a first segment `.well-known` is exempt.
///
/// `.well-known` (RFC 8615) is exempt only at the top, where the RFC puts
/// it; anything dotted below it (`/.well-known/.secret`) still counts.
pub fn has_dotfile_segment(path: &[u8]) -> bool {
    dots_and_tildes(path).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_come_off_each_segment() {
        for (path, bare) in [
            ("/admin;x/secret", "/admin/secret"),
            ("/a;b=1;c/d;e", "/a/d"),
            ("/;x/y", "//y"),
            ("/no/params", "/no/params"),
            ("/cart;jsessionid=1", "/cart"),
        ] {
            assert_eq!(
                super::without_params(path.as_bytes()),
                bare.as_bytes(),
                "{path}"
            );
        }
    }

    #[test]
    fn dot_segments_are_found_however_spelt() {
        for p in [
            "/a/../b",
            "/a/./b",
            "/..",
            "/a/.",
            "/a/%2e%2E/b",
            "/a/.%2e/b",
            "/a%2F..%2Fb",
            "/a%2f.",
            "..",
        ] {
            assert!(has_dot_segment(p.as_bytes()), "{p}");
        }
        for p in [
            "/",
            "/a/b",
            "/a/.b",
            "/a/b.",
            "/a/.../b",
            "/a/..b/c",
            "/%2e%2e%2e",
            "//a",
            "/a%2Fb",
            "",
        ] {
            assert!(!has_dot_segment(p.as_bytes()), "{p}");
        }
    }

    #[test]
    fn paths_a_server_behind_could_read_otherwise_are_told_apart() {
        for p in [
            "/a/..;/b",
            "/a/..;x=1/b",
            "/a/.;/b",
            "/;/b",
            "/;jsessionid=1/b",
            "/a/..\\b",
            "/a\\..\\b",
            "/a/.\\b",
            "/a/..;",
        ] {
            assert!(read_otherwise(p.as_bytes()), "{p}");
        }
        for p in [
            "/",
            "/a/b",
            "/a;x=1/b",
            "/a/b;jsessionid=1",
            "/;jsessionid=1",
            "/a/...;/b",
            "/a/b.\\c",
            "/a\\\\b",
            "/a/..x/b",
        ] {
            assert!(!read_otherwise(p.as_bytes()), "{p}");
        }
    }

    fn norm(p: &str) -> Result<String, PathError> {
        let mut out = Vec::new();
        decode_and_normalize(p.as_bytes(), &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn ok(p: &str, want: &str) {
        assert_eq!(norm(p).as_deref(), Ok(want), "normalising {p:?}");
    }

    fn err(p: &str, reason: PathError) {
        assert_eq!(norm(p), Err(reason), "normalising {p:?}");
        assert_eq!(reason.status, Status::BAD_REQUEST);
    }

    #[test]
    fn split_at_first_question_mark() {
        assert_eq!(split_target(b"/a/b"), (&b"/a/b"[..], None));
        assert_eq!(split_target(b"/a?x=1"), (&b"/a"[..], Some(&b"x=1"[..])));
        assert_eq!(split_target(b"/a?x?y"), (&b"/a"[..], Some(&b"x?y"[..])));
        assert_eq!(split_target(b"/a?"), (&b"/a"[..], Some(&b""[..])));
        assert_eq!(split_target(b"?q"), (&b""[..], Some(&b"q"[..])));
        assert_eq!(split_target(b""), (&b""[..], None));
        // An encoded question mark is not a separator.
        assert_eq!(split_target(b"/a%3Fb"), (&b"/a%3Fb"[..], None));
    }

    /// Every path of up to six bytes from an alphabet of the bytes that
    /// matter: the plain paths' shortcut gives what the decoder gives.
    #[test]
    fn the_plain_shortcut_agrees_with_the_decoder() {
        let alphabet = b"/.a%2ef\x01";
        let mut paths = vec![b"/".to_vec()];
        let mut last = paths.clone();
        for _ in 0..5 {
            let mut next = Vec::new();
            for p in &last {
                for &b in alphabet {
                    let mut q = p.clone();
                    q.push(b);
                    next.push(q);
                }
            }
            paths.extend(next.iter().cloned());
            last = next;
        }
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        for p in &paths {
            let a = decode_and_normalize(p, &mut fast);
            slow.clear();
            let b = decode_bytes(p, &mut slow);
            assert_eq!(a, b, "{p:?}");
            if b.is_ok() {
                assert_eq!(fast, slow, "{p:?}");
            }
        }
    }

    #[test]
    fn plain_paths_are_unchanged() {
        ok("/", "/");
        ok("/index.html", "/index.html");
        ok("/a/b/c.txt", "/a/b/c.txt");
        ok("/a/b/", "/a/b/");
        ok("/a.b.c", "/a.b.c");
    }

    #[test]
    fn percent_decoding_happens_once() {
        ok("/a%20b", "/a b");
        ok("/%41%62%63", "/Abc");
        ok("/%e2%82%ac", "/\u{20ac}");
        ok("/%252e%252e/", "/%2e%2e/");
        ok("/%252e", "/%2e");
        ok("/%2525", "/%25");
        ok("/a%3Fb", "/a?b");
        ok("/a%23b", "/a#b");
        ok("/a+b", "/a+b");
    }

    #[test]
    fn malformed_escapes_are_refused() {
        for p in [
            "/%", "/%4", "/%zz", "/%g0", "/%0g", "/a%", "/a%2", "/%%41", "/% 1",
        ] {
            err(p, BAD_ESCAPE);
        }
    }

    #[test]
    fn control_bytes_are_refused() {
        for p in [
            "/%00",
            "/a%00.html",
            "/%0a",
            "/%0D%0A",
            "/%1f",
            "/%7f",
            "/%7F",
        ] {
            err(p, CONTROL_BYTE);
        }
        let mut out = Vec::new();
        for raw in [&b"/a\0b"[..], b"/a\nb", b"/\t", b"/\x7f"] {
            assert_eq!(decode_and_normalize(raw, &mut out), Err(CONTROL_BYTE));
        }
        // Space and DEL's neighbours are fine.
        ok("/%20%7e%80", "/ ~\u{fffd}");
    }

    #[test]
    fn leading_slash_is_required() {
        for p in [
            "",
            "a",
            "a/b",
            ".",
            "..",
            "%2F",
            "%2fetc/passwd",
            "*",
            "\\a",
        ] {
            err(p, NO_LEADING_SLASH);
        }
    }

    #[test]
    fn dot_segments_are_resolved() {
        ok("/./", "/");
        ok("/.", "/");
        ok("/a/.", "/a/");
        ok("/a/./b", "/a/b");
        ok("/a/b/..", "/a/");
        ok("/a/..", "/");
        ok("/a/../", "/");
        ok("/a/b/../c", "/a/c");
        ok("/a/b/../../c", "/c");
        ok("/a/./b/./../c/.", "/a/c/");
        ok("/a/b/c/../../..", "/");
        ok("/a/%2e/b", "/a/b");
        ok("/a/%2e%2e/b", "/b");
        ok("/a/.%2e/b", "/b");
        ok("/a/%2E./b", "/b");
        ok("/a/b%2f..%2fc", "/a/c");
        ok("/a/b%2F%2E%2E", "/a/");
    }

    #[test]
    fn climbing_above_the_root_is_refused() {
        for p in [
            "/..",
            "/../",
            "/../etc/passwd",
            "/%2e%2e/",
            "/%2E%2e%2f",
            "/%2e%2e",
            "/.%2e/",
            "/%2e./",
            "/..%2f..%2fetc/passwd",
            "/%2F..",
            "/a/../../",
            "/a/../..",
            "/a/b/../../../etc",
            "/./../",
            "//../",
            "/a/..//../",
            "/a%2f..%2f..%2f",
        ] {
            err(p, ABOVE_ROOT);
        }
    }

    #[test]
    fn repeated_slashes_are_merged() {
        ok("//", "/");
        ok("///", "/");
        ok("//a//b//", "/a/b/");
        ok("/a%2F%2Fb", "/a/b");
        ok("/%2F", "/");
        ok("//etc/passwd", "/etc/passwd");
        ok("/a//../b", "/b");
    }

    #[test]
    fn dot_lookalikes_are_ordinary_names() {
        // Three dots, trailing dots, dots inside names, backslashes: all plain
        // bytes in a Linux file name, none of them a dot-segment.
        ok("/...", "/...");
        ok("/.../", "/.../");
        ok("/a./b..", "/a./b..");
        ok("/..a", "/..a");
        ok("/a..", "/a..");
        ok("/..\\", "/..\\");
        ok("/..\\..\\etc", "/..\\..\\etc");
        ok("/a/..%5c..%5cetc", "/a/..\\..\\etc");
        ok("/%252e%252e%252f", "/%2e%2e%2f");
        ok("/.hidden", "/.hidden");
        ok("/a/. /b", "/a/. /b");
    }

    #[test]
    fn high_bytes_are_kept_as_is() {
        let mut out = Vec::new();
        decode_and_normalize(b"/\xff\xfe/%C0%AE%C0%AE/x", &mut out).unwrap();
        // Overlong UTF-8 for '.' is not a dot: bytes are compared, not chars.
        assert_eq!(out, b"/\xff\xfe/\xc0\xae\xc0\xae/x");
    }

    #[test]
    fn output_never_outgrows_input_and_reuses_capacity() {
        let mut out = Vec::with_capacity(64);
        let ptr = out.as_ptr();
        for p in ["/a/b/c/d", "/%41%42", "/a/../b/./c//d/", "/x"] {
            decode_and_normalize(p.as_bytes(), &mut out).unwrap();
            assert!(out.len() <= p.len());
            assert_eq!(out.as_ptr(), ptr, "no reallocation for {p:?}");
        }
        // A failed call leaves no partial path that could be used by mistake.
        assert!(decode_and_normalize(b"/a/../../x", &mut out).is_err());
        assert!(out.is_empty());
        assert_eq!(out.as_ptr(), ptr);
    }

    #[test]
    fn normalisation_is_idempotent_and_confined() {
        // Every output of a successful normalisation is a fixed point, starts
        // with '/', and contains no dot-segment or empty segment.
        let samples = [
            "/a/b/../c/./d//e/",
            "/%2e%2e%2fx/..",
            "/x/%2e%2E/y/%2F/z",
            "/...//..../.",
            "/a/b/c/../../../d",
        ];
        for p in samples {
            if let Ok(n) = norm(p) {
                assert!(n.starts_with('/'));
                assert_eq!(norm(&n).as_deref(), Ok(n.as_str()), "fixed point {p:?}");
                for seg in n[1..].split('/') {
                    assert!(seg != "." && seg != "..", "dot-segment left in {n:?}");
                }
                assert!(!n.contains("//"));
            }
        }
    }

    /// A straightforward model: decode everything, split on '/', use a stack.
    fn model(p: &[u8]) -> Option<Vec<u8>> {
        if p.first() != Some(&b'/') {
            return None;
        }
        let mut decoded = Vec::new();
        let mut i = 0;
        while i < p.len() {
            if p[i] == b'%' {
                let hex = std::str::from_utf8(p.get(i + 1..i + 3)?).ok()?;
                decoded.push(
                    u8::from_str_radix(hex, 16)
                        .ok()
                        .filter(|_| !hex.starts_with('+'))?,
                );
                i += 3;
            } else {
                decoded.push(p[i]);
                i += 1;
            }
        }
        if decoded.iter().any(|&b| b < 0x20 || b == 0x7f) {
            return None;
        }
        let mut stack: Vec<&[u8]> = Vec::new();
        let segs: Vec<&[u8]> = decoded[1..].split(|&b| b == b'/').collect();
        let last = segs.len() - 1;
        let mut trailing = false;
        for (n, seg) in segs.into_iter().enumerate() {
            trailing = n == last && matches!(seg, b"" | b"." | b"..");
            match seg {
                b"" | b"." => {}
                b".." => {
                    stack.pop()?;
                }
                _ => stack.push(seg),
            }
        }
        let mut out = b"/".to_vec();
        out.extend_from_slice(&stack.join(&b'/'));
        if trailing && out.len() > 1 {
            out.push(b'/');
        }
        Some(out)
    }

    #[test]
    fn agrees_with_a_simple_model_on_generated_paths() {
        const TOKENS: [&[u8]; 14] = [
            b"/", b"/", b".", b"..", b"%2e", b"%2E%2e", b"%2f", b"%2F", b"a", b"bc", b"%", b"%00",
            b"%41", b"%252e",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut out = Vec::new();
        let mut path = Vec::new();
        for _ in 0..50_000 {
            path.clear();
            if next() % 8 != 0 {
                path.push(b'/');
            }
            for _ in 0..next() % 10 {
                path.extend_from_slice(TOKENS[(next() % TOKENS.len() as u64) as usize]);
            }
            let got = decode_and_normalize(&path, &mut out)
                .ok()
                .map(|()| out.clone());
            assert_eq!(got, model(&path), "{:?}", String::from_utf8_lossy(&path));
        }
    }

    #[test]
    fn own_names_whatever_their_case() {
        assert!(is_own_name(b".brisk-props"));
        assert!(is_own_name(b".BRISK-PROPS."));
        assert!(is_own_name(b".brisk-put.1f"));
        assert!(is_own_name(b".Brisk-"));
        assert!(is_own_name(b"BRISK-~1"));
        assert!(is_own_name(b"brisk-~2.new"));
        assert!(!is_own_name(b"brisk-1"));
        assert!(!is_own_name(b".brisk"));
        assert!(!is_own_name(b"brisk-props"));
        assert!(!is_own_name(b"a.brisk-props"));
        assert!(has_own_segment(b"/dav/a/.brisk-props"));
        assert!(has_own_segment(b"a/.brisk-props/b"));
        assert!(has_own_segment(b".brisk-props.new"));
        assert!(!has_own_segment(b"/dav/.bri/sk-props"));
        assert!(!has_own_segment(b"/"));
    }

    #[test]
    fn dotfile_segments() {
        assert!(has_dotfile_segment(b"/.git/config"));
        assert!(has_dotfile_segment(b"/.git"));
        assert!(has_dotfile_segment(b"/.git/"));
        assert!(has_dotfile_segment(b"/a/.htpasswd"));
        assert!(has_dotfile_segment(b"/a/b/.env"));
        assert!(has_dotfile_segment(b"/.well-known/.secret"));
        assert!(has_dotfile_segment(b"/a/.well-known/x"));
        assert!(has_dotfile_segment(b"/.well-knownx/x"));
        assert!(has_dotfile_segment(b"/.WELL-KNOWN/x"));
        assert!(has_dotfile_segment(b"/..."));
        assert!(!has_dotfile_segment(b"/"));
        assert!(!has_dotfile_segment(b""));
        assert!(!has_dotfile_segment(b"/.well-known/acme-challenge/tok"));
        assert!(!has_dotfile_segment(b"/.well-known/"));
        assert!(!has_dotfile_segment(b"/a/b.c/d."));
        assert!(!has_dotfile_segment(b"/index.html"));
        assert!(!has_dotfile_segment(b"/a/x.git/"));
        // Across the eight-byte words it reads (a `/` ending one, the `.`
        // beginning the next), and bytes past 0x7f.
        assert!(has_dotfile_segment(b"/aaaaaa/.x"));
        assert!(has_dotfile_segment(b"/aaaaaaaaaaaaaa/.x"));
        assert!(!has_dotfile_segment(b"/aaaaaa\xff.x/\xae\xaf"));
        assert_eq!(dots_and_tildes(b"/aaaaaaaaaaaaaa~"), (false, true));
        // The same as splitting the path into its segments, for every path
        // of up to six bytes of `/`, `.`, `a`, `~` and `.well-known` pieces.
        let pieces: [&[u8]; 5] = [b"/", b".", b"a", b"~", b".well-known"];
        let mut paths: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = paths
                .iter()
                .flat_map(|p| pieces.iter().map(move |x| [&p[..], x].concat()))
                .collect();
            paths.extend(longer);
        }
        for p in &paths {
            let split = p
                .split(|&b| b == b'/')
                .filter(|seg| !seg.is_empty())
                .enumerate()
                .any(|(i, seg)| seg[0] == b'.' && !(i == 0 && seg == b".well-known"));
            assert_eq!(dots_and_tildes(p), (split, p.contains(&b'~')), "{:?}", p);
        }
    }

    #[test]
    fn encoded_dotfiles_are_seen_after_normalisation() {
        let mut out = Vec::new();
        decode_and_normalize(b"/%2egit/config", &mut out).unwrap();
        assert!(has_dotfile_segment(&out));
        decode_and_normalize(b"/a/b/..%2F.htpasswd", &mut out).unwrap();
        assert!(has_dotfile_segment(&out));
        decode_and_normalize(b"/.well-known/../.env", &mut out).unwrap();
        assert!(has_dotfile_segment(&out));
    }
}
