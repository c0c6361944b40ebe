//! Glob matching for the rules' `pattern = …` (`[[headers]]`, `[[auth]]`,
//! `[[access]]`…), and [`PathMatch`], a rule's `path` or `pattern`.
//!
//! Deliberately small: `*` and `?` only, no classes and no `**`, because a
//! subtree is already expressed by `path = "/prefix/"`. `*` never crosses a
//! `/`, so `/assets/*.css` does not reach into `/assets/old/x.css`; this is
//! what shell globs do and what people expect from them.

/// Whether `path` matches `pattern` (see the module docs). Never allocates.
pub(crate) fn matches(pattern: &[u8], path: &[u8]) -> bool {
    if !pattern.contains(&b'/') {
        // `*.css` names files wherever they are: test the last segment.
        let last = match path.iter().rposition(|&b| b == b'/') {
            Some(i) => &path[i + 1..],
            None => path,
        };
        return segment_matches(pattern, last);
    }
    let mut pats = pattern.split(|&b| b == b'/');
    let mut segs = path.split(|&b| b == b'/');
    loop {
        match (pats.next(), segs.next()) {
            (None, None) => return true,
            (Some(p), Some(s)) if segment_matches(p, s) => {}
            _ => return false,
        }
    }
}

/// Whether `path` or one of its leading parts (up to a `/`) matches
/// `pattern`: where a guard's glob must reach, since a CGI or FastCGI
/// script a leading part names runs with the rest as its `PATH_INFO`
/// (`/admin.php/x` runs `admin.php`), so `*.php` must cover it as
/// Apache's `<Files>` does. Never allocates.
fn matches_leading(pattern: &[u8], path: &[u8]) -> bool {
    matches(pattern, path)
        || (1..path.len()).any(|i| path[i] == b'/' && matches(pattern, &path[..i]))
}

/// How far beneath its own path a request reaches: a WebDAV method
/// that acts on a collection's members (`Depth`, RFC 4918 §10.2). (A
/// `Depth: 1` PROPFIND reaches its own path: the members the guards
/// would refuse are left out of its listing, `webdav::Viewer`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reach {
    /// Its own path only.
    #[default]
    Own,
    /// All beneath it (`Depth: infinity`; COPY, MOVE, DELETE).
    All,
}

/// Whether `path` and a `/` matches `pattern` (not allocating): its last
/// segment takes the empty one (`*`, or nothing) and the rest matches
/// `path`.
fn glob_without_slash(pattern: &[u8], path: &[u8]) -> bool {
    match pattern.iter().rposition(|&b| b == b'/') {
        Some(i) if !path.ends_with(b"/") && pattern[i + 1..].iter().all(|&b| b == b'*') => {
            pattern[..i].contains(&b'/') && matches(&pattern[..i], path)
        }
        _ => false,
    }
}

/// [`PathMatch::covers_beneath`] of the prefix (else pattern) `rule`.
fn beneath(rule: &[u8], glob: bool, path: &[u8]) -> bool {
    let dir = path.strip_suffix(b"/").unwrap_or(path);
    if !glob {
        return rule
            .strip_prefix(dir)
            .and_then(|r| r.strip_prefix(b"/"))
            .is_some();
    }
    if !rule.contains(&b'/') {
        return true;
    }
    let mut pats = rule.split(|&b| b == b'/');
    for seg in dir.split(|&b| b == b'/') {
        match pats.next() {
            Some(p) if segment_matches(p, seg) => {}
            _ => return false,
        }
    }
    pats.next().is_some()
}

/// Matches one segment (no `/` on either side) with the classic
/// single-backtrack algorithm: on a mismatch, only the most recent `*` needs
/// to absorb one more byte, which keeps the worst case at O(n·m) without
/// recursion or allocation.
fn segment_matches(pattern: &[u8], text: &[u8]) -> bool {
    // `*.php`, the usual pattern, is a test of the end (~200 instructions
    // of the loop below a FastCGI request, for `hello.php`).
    if let [b'*', end @ ..] = pattern {
        if !end.iter().any(|&c| c == b'*' || c == b'?') {
            return text.ends_with(end);
        }
    }
    segment_walk(pattern, text)
}

/// [`segment_matches`] by walking both, back to the last `*` on a miss.
fn segment_walk(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // Position after the last `*` seen, and the text position it resumes at.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                p += 1;
                star = Some((p, t));
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Which requests a rule covers (`path` prefix or `pattern` glob): of
/// `[[headers]]`, `[[auth]]`, `[[access]]`, `[[rate_limit]]` and more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMatch {
    /// URL path starts with this.
    Prefix(String),
    /// Glob (`*`, `?`) over the URL path; a pattern without `/` is matched
    /// against the last path segment only.
    Glob(String),
}

impl PathMatch {
    /// Whether the decoded URL path matches. Never allocates.
    ///
    /// `Prefix` is a plain byte-prefix test. `Glob` follows the module's
    /// rules: `*` matches any run of bytes within one path segment (never
    /// a `/`), `?` exactly one byte other than `/`; a pattern without `/`
    /// is matched against the last segment of the path, a pattern with `/`
    /// against the whole path, segment by segment.
    pub fn matches(&self, path: &[u8]) -> bool {
        match self {
            PathMatch::Prefix(prefix) => path.starts_with(prefix.as_bytes()),
            PathMatch::Glob(pattern) => matches(pattern.as_bytes(), path),
        }
    }
}

impl PathMatch {
    /// Whether a guard (`[[auth]]`, `[[access]]`, `[[rate_limit]]`)
    /// covers `path`: [`PathMatch::matches`], the collection a prefix
    /// ending in `/` names without its slash (`path = "/private/"`
    /// guards `/private`, which WebDAV takes for the same collection, and
    /// whose MOVE, DELETE or PROPFIND would reach all it holds), and where
    /// `folding` says the path is found whatever its case, matching in any
    /// case as well: `/PRIVATE/x` and `/prıvate/x` are matched by
    /// `path = "/private/"` there (see [`fold`]). A pattern covers a path
    /// one of whose leading parts it matches too (`*.php` covers
    /// `/admin.php/x`: see [`matches_leading`]).
    pub fn matches_in(&self, path: &[u8], folding: &Folding) -> bool {
        self.guards(path)
            || self.names_without_slash(path)
            || folding.covers(path) && self.matches_folded(path)
    }

    /// [`PathMatch::matches`], but a pattern as [`matches_leading`] has it.
    fn guards(&self, path: &[u8]) -> bool {
        match self {
            PathMatch::Prefix(prefix) => path.starts_with(prefix.as_bytes()),
            PathMatch::Glob(pattern) => matches_leading(pattern.as_bytes(), path),
        }
    }

    /// Whether `path` is a collection the rule covers, less its final
    /// `/`: a prefix that is `path` and a `/`; a pattern that matches
    /// `path` and a `/` (`/dav/private/*` covers `/dav/private/`, and so
    /// `/dav/private`).
    fn names_without_slash(&self, path: &[u8]) -> bool {
        match self {
            PathMatch::Prefix(prefix) => prefix.as_bytes().strip_suffix(b"/") == Some(path),
            PathMatch::Glob(pattern) => glob_without_slash(pattern.as_bytes(), path),
        }
    }

    /// Whether the rule covers a path that a request for the collection
    /// `path` reaching `reach` beneath it also reaches (a WebDAV COPY,
    /// MOVE or DELETE of a collection, a LOCK with a `Depth`): any path
    /// beneath it (`Reach::All`). Matched in any case where `folding`
    /// says so. A pattern without `/` names files wherever they are:
    /// it may cover one beneath any collection.
    pub fn covers_beneath(&self, path: &[u8], reach: Reach, folding: &Folding) -> bool {
        if reach == Reach::Own {
            return false;
        }
        let (rule, glob) = match self {
            PathMatch::Prefix(p) => (p.as_bytes(), false),
            PathMatch::Glob(g) => (g.as_bytes(), true),
        };
        beneath(rule, glob, path) || folding.covers(path) && beneath(&fold(rule), glob, &fold(path))
    }

    /// Whether the rule and `path` match once both are [`fold`]ed.
    #[cold]
    #[inline(never)]
    fn matches_folded(&self, path: &[u8]) -> bool {
        let path = fold(path);
        match self {
            PathMatch::Prefix(prefix) => {
                let prefix = fold(prefix.as_bytes());
                path.starts_with(&prefix) || prefix.strip_suffix(b"/") == Some(&path[..])
            }
            PathMatch::Glob(pattern) => {
                let pattern = fold(pattern.as_bytes());
                matches_leading(&pattern, &path) || glob_without_slash(&pattern, &path)
            }
        }
    }

    /// Whether the rule may cover a path beneath the URL prefix `area`,
    /// in any case: a prefix on the way to `area` or beneath it, a
    /// pattern whose fixed start is, or any pattern without `/` (it
    /// names files wherever they are).
    pub fn reaches(&self, area: &str) -> bool {
        let (start, any) = match self {
            PathMatch::Prefix(p) => (p.as_str(), false),
            PathMatch::Glob(g) => {
                let fixed = g.find(['*', '?']).map_or(g.as_str(), |i| &g[..i]);
                (fixed, !g.contains('/'))
            }
        };
        let (start, area) = (fold(start.as_bytes()), fold(area.as_bytes()));
        any || start.starts_with(&area) || area.starts_with(&start)
    }
}

/// Where a site's trees find a name whatever its case (exFAT, vfat,
/// SMB: `sys::fs::folding_dirs`): there a rule matches a path in any
/// case ([`PathMatch::matches_in`]). Empty almost everywhere.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folding {
    /// The site's `[[webdav]]` prefixes, in rule order: a path one of
    /// them takes is in that tree, any other in the document root.
    trees: Vec<String>,
    /// Each part that folds: its tree (`None`: the document root,
    /// `Some(i)`: `trees[i]`'s) and the URL prefix it is served at,
    /// ending in `/`.
    areas: Vec<(Option<usize>, String)>,
}

impl Folding {
    /// No part: every path is matched as spelt.
    pub const NONE: Folding = Folding {
        trees: Vec::new(),
        areas: Vec::new(),
    };

    /// The parts `areas` of the trees of a site whose `[[webdav]]`
    /// prefixes are `trees`.
    pub fn new(trees: Vec<String>, areas: Vec<(Option<usize>, String)>) -> Folding {
        Folding { trees, areas }
    }

    /// Whether no part folds (almost everywhere).
    pub fn is_empty(&self) -> bool {
        self.areas.is_empty()
    }

    /// The URL prefixes of the parts that fold.
    pub fn areas(&self) -> impl Iterator<Item = &str> {
        self.areas.iter().map(|(_, a)| a.as_str())
    }

    /// Whether `path` lies beneath a part that folds of the tree that
    /// serves it (a share at `/dav/` on ext4 does not fold because the
    /// document root around it does).
    pub fn covers(&self, path: &[u8]) -> bool {
        if !cfg!(feature = "webdav") || self.is_empty() {
            return false;
        }
        let tree = self.trees.iter().position(|t| {
            let t = t.as_bytes();
            path.starts_with(t) || path == t.strip_suffix(b"/").unwrap_or(t)
        });
        let beneath = |a: &str| path.starts_with(a.as_bytes());
        self.areas.iter().any(|(t, a)| *t == tree && beneath(a))
    }
}

/// `s` with every letter in one case, so that two spellings a
/// filesystem that ignores case may take for one name fold alike: each
/// letter to its lower case, as its upper case has it (`I`, `ı` and `i`
/// all fold to `i`, `ſ` and `S` to `s`, the Kelvin sign to `k`: see
/// [`fold_char`] for which letters); bytes that are not UTF-8 stay as
/// they are. Folding more than a given filesystem does only makes a rule
/// cover more.
#[inline(never)]
pub fn fold(s: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if s.iter().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len());
    for chunk in s.utf8_chunks() {
        for c in chunk.valid().chars() {
            out.extend_from_slice(fold_char(c).encode_utf8(&mut [0; 4]).as_bytes());
        }
        out.extend_from_slice(chunk.invalid());
    }
    std::borrow::Cow::Owned(out)
}

/// One character's fold: the letters of the Latin alphabets (Basic,
/// Latin-1, Extended-A and Additional, full-width), Greek, Cyrillic and
/// Armenian, and the Kelvin, Ångström and ohm signs, each as Unicode's
/// upper case of it, then that upper case's lower case, makes them; any
/// other character is itself. (By hand rather than with the standard
/// library's tables, which would weigh 26 KB in the smallest build; the
/// tests hold the two to each other.)
fn fold_char(c: char) -> char {
    if !cfg!(feature = "webdav") {
        return c.to_ascii_lowercase();
    }
    let n = c as u32;
    let to = match n {
        0x41..=0x5a | 0xc0..=0xd6 | 0xd8..=0xde | 0x391..=0x3a1 | 0x3a3..=0x3ab => n + 32,
        0x410..=0x42f | 0xff21..=0xff3a => n + 32,
        // (Pairs, the capital first: even, or odd.)
        0x100..=0x12f | 0x132..=0x137 | 0x14a..=0x177 | 0x460..=0x481 | 0x48a..=0x4bf => n | 1,
        0x4d0..=0x52f | 0x1e00..=0x1e95 | 0x1ea0..=0x1eff => n | 1,
        0x139..=0x148 | 0x179..=0x17e | 0x4c1..=0x4ce => n + (n & 1),
        0xb5 => 0x3bc,
        0x131 => u32::from(b'i'),
        0x178 => 0xff,
        0x17f => u32::from(b's'),
        0x370..=0x373 | 0x376 | 0x377 | 0x3d8..=0x3ef | 0x3fa | 0x3fb => n | 1,
        0x3f7 | 0x3f8 => 0x3f8,
        0x37f => 0x3f3,
        0x3cf => 0x3d7,
        0x3d0 => 0x3b2,
        0x3d1 | 0x3f4 => 0x3b8,
        0x3d5 => 0x3c6,
        0x3d6 => 0x3c0,
        0x3f0 => 0x3ba,
        0x3f1 => 0x3c1,
        0x3f5 => 0x3b5,
        0x3f9 => 0x3f2,
        0x3fd..=0x3ff => n - 0x82,
        0x386 => 0x3ac,
        0x388..=0x38a => n + 37,
        0x38c => 0x3cc,
        0x38e | 0x38f => n + 63,
        0x3c2 => 0x3c3,
        0x400..=0x40f => n + 80,
        0x4c0 => 0x4cf,
        0x531..=0x556 => n + 48,
        0x1e9b => 0x1e61,
        0x1e9e => 0xdf,
        0x2126 => 0x3c9,
        0x212a => u32::from(b'k'),
        0x212b => 0xe5,
        _ => n,
    };
    char::from_u32(to).unwrap_or(c)
}

impl std::fmt::Display for PathMatch {
    /// As a log line names a rule: `path /api/`, `pattern *.php`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathMatch::Prefix(p) => write!(f, "path {p}"),
            PathMatch::Glob(g) => write!(f, "pattern {g}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_guards_pattern_covers_a_script_with_a_path_after_it() {
        use super::{Folding, PathMatch};
        let g = |p: &str| PathMatch::Glob(p.into());
        let covers = |m: &PathMatch, path: &str| m.matches_in(path.as_bytes(), &Folding::NONE);
        for path in [
            "/adm.cgi",
            "/sub/adm.cgi",
            "/sub/adm.cgi/x",
            "/sub/adm.cgi/x/y.txt",
        ] {
            assert!(covers(&g("adm.cgi"), path), "{path}");
        }
        assert!(covers(&g("*.php"), "/admin.php/x"));
        assert!(covers(&g("/cgi-bin/admin.sh"), "/cgi-bin/admin.sh/x"));
        assert!(covers(&g("/cgi-bin/*.sh"), "/cgi-bin/a.sh/b/c"));
        for path in ["/sub/adm.cgix", "/adm.cgi.bak", "/xadm.cgi/y", "/"] {
            assert!(!covers(&g("adm.cgi"), path), "{path}");
        }
        assert!(!covers(
            &g("/cgi-bin/admin.sh"),
            "/other/cgi-bin/admin.sh/x"
        ));
        // Matching itself (headers, upstream rules) is unchanged.
        assert!(!g("*.php").matches(b"/admin.php/x"));
    }

    #[test]
    fn pattern_without_slash_tests_the_last_segment() {
        assert!(matches(b"*.css", b"/a/b/site.css"));
        assert!(matches(b"*.css", b"/site.css"));
        assert!(!matches(b"*.css", b"/site.css/x"));
        assert!(!matches(b"*.css", b"/site.cssx"));
        assert!(matches(b"robots.txt", b"/robots.txt"));
        assert!(!matches(b"robots.txt", b"/xrobots.txt"));
        assert!(matches(b"?.js", b"/a.js"));
        assert!(!matches(b"?.js", b"/ab.js"));
        assert!(matches(b"*", b"/"));
        assert!(matches(b"*", b"/anything"));
    }

    #[test]
    fn pattern_with_slash_goes_segment_by_segment() {
        assert!(matches(b"/assets/*.css", b"/assets/a.css"));
        assert!(!matches(b"/assets/*.css", b"/assets/old/a.css"));
        assert!(matches(b"/*/index.html", b"/docs/index.html"));
        assert!(!matches(b"/*/index.html", b"/index.html"));
        assert!(matches(b"/a*b*c/x", b"/aXbYbZc/x"));
        assert!(!matches(b"/a*b*c/x", b"/aXbYbZ/x"));
        assert!(matches(b"/dir/", b"/dir/"));
        assert!(!matches(b"/dir/", b"/dir/x"));
        assert!(matches(b"/dir/*", b"/dir/"));
    }

    /// A leading `*` and a plain end is a test of the text's end: the
    /// same verdict as the walk's, whatever the end and the text.
    #[test]
    fn a_star_and_a_plain_end_judge_as_the_walk_does() {
        for pattern in [
            &b"*.php"[..],
            b"*",
            b"*a",
            b"*aa",
            b"*.tar.gz",
            b"*?",
            b"**.php",
            b"*a*",
        ] {
            for text in [
                &b""[..],
                b"a",
                b"aa",
                b"aaa",
                b"x.php",
                b".php",
                b"php",
                b"a.tar.gz",
                b"tar.gz",
                b"x.phpx",
            ] {
                assert_eq!(
                    super::segment_matches(pattern, text),
                    super::segment_walk(pattern, text),
                    "{:?} {:?}",
                    String::from_utf8_lossy(pattern),
                    String::from_utf8_lossy(text)
                );
            }
        }
        assert!(super::segment_matches(b"*.php", b"index.php"));
        assert!(!super::segment_matches(b"*.php", b"index.phps"));
    }

    #[test]
    fn stars_backtrack() {
        assert!(super::segment_matches(b"*a*a*a", b"aaaa"));
        assert!(super::segment_matches(b"a*", b"a"));
        assert!(super::segment_matches(b"**", b""));
        assert!(!super::segment_matches(b"*b", b"aaaa"));
        assert!(super::segment_matches(b"*ab", b"aab"));
        assert!(!super::segment_matches(b"?", b""));
    }

    #[test]
    #[cfg(feature = "webdav")]
    fn folded_matching_only_where_names_fold() {
        use super::{fold, Folding, PathMatch};
        let area = Folding::new(vec!["/dav/".into()], vec![(None, "/usb/".into())]);
        let private = PathMatch::Prefix("/usb/private/".into());
        for spelt in [
            "/usb/PRIVATE/x",
            "/usb/Private/x",
            "/usb/prıvate/x",
            "/usb/private/x",
        ] {
            assert!(private.matches_in(spelt.as_bytes(), &area), "{spelt}");
        }
        assert!(!private.matches_in(b"/usb/privatex", &area));
        assert!(private.matches_in(b"/usb/PRIVATE", &area));
        assert!(!private.matches_in(b"/usb/PRIVATE", &Folding::NONE));
        assert!(!private.matches_in(b"/usb/PRIVATE/x", &Folding::NONE));
        // Outside the area, as spelt only.
        let top = PathMatch::Prefix("/top/".into());
        assert!(!top.matches_in(b"/TOP/x", &area));
        let pdf = PathMatch::Glob("*.pdf".into());
        assert!(pdf.matches_in(b"/usb/a/B.PDF", &area));
        assert!(!pdf.matches_in(b"/a/B.PDF", &area));
        // A share on a tree that tells case apart, inside one that does not.
        let root = Folding::new(vec!["/dav/".into()], vec![(None, "/".into())]);
        assert!(root.covers(b"/x/Y") && !root.covers(b"/dav/x") && !root.covers(b"/dav"));
        let share = Folding::new(vec!["/dav/".into()], vec![(Some(0), "/dav/".into())]);
        assert!(share.covers(b"/dav/x") && !share.covers(b"/x"));
        assert_eq!(&*fold("ſK\u{212a}İß".as_bytes()), "skkİß".as_bytes());
        assert_eq!(&*fold(b"a\xffB"), b"a\xffb");
        assert!(matches!(fold(b"/plain/"), std::borrow::Cow::Borrowed(_)));
    }

    /// What `fold_char` gives is what Unicode's case mappings give for
    /// every letter it folds, and for every character of the blocks it
    /// covers; elsewhere it leaves characters as they are.
    #[test]
    #[cfg(feature = "webdav")]
    fn folding_by_hand_is_unicode_s() {
        fn one(mut it: impl Iterator<Item = char>, or: char) -> char {
            match (it.next(), it.next()) {
                (Some(c), None) => c,
                _ => or,
            }
        }
        let unicode = |c: char| {
            let up = one(c.to_uppercase(), c);
            one(up.to_lowercase(), up)
        };
        let covered = [
            0..0x250,
            0x370..0x400,
            0x400..0x530,
            0x531..0x590,
            0x1e00..0x1f00,
        ];
        for c in (0..0x3_0000).filter_map(char::from_u32) {
            let mine = super::fold_char(c);
            let whole = covered.iter().any(|r| r.contains(&(c as u32)))
                && !(0x180..0x250).contains(&(c as u32));
            if whole || mine != c || ['\u{212a}', '\u{212b}', '\u{2126}'].contains(&c) {
                assert_eq!(mine, unicode(c), "U+{:04X}", c as u32);
            }
            assert_eq!(
                super::fold_char(mine),
                mine,
                "U+{:04X} folds once",
                c as u32
            );
        }
    }

    #[test]
    fn what_a_rule_may_reach() {
        use super::PathMatch;
        let p = |s: &str| PathMatch::Prefix(s.into());
        let g = |s: &str| PathMatch::Glob(s.into());
        assert!(p("/USB/cgi/").reaches("/usb/"));
        assert!(p("/").reaches("/usb/"));
        assert!(!p("/cgi-bin/").reaches("/usb/"));
        assert!(g("*.php").reaches("/usb/"));
        assert!(g("/usb/*.php").reaches("/usb/"));
        assert!(g("/*/x.php").reaches("/usb/"));
        assert!(!g("/app/*.php").reaches("/usb/"));
    }

    #[test]
    fn path_match_enum() {
        use super::PathMatch;
        assert!(PathMatch::Prefix("/assets/".into()).matches(b"/assets/x.png"));
        assert!(!PathMatch::Prefix("/assets/".into()).matches(b"/assets"));
        assert!(PathMatch::Glob("*.png".into()).matches(b"/assets/x.png"));
    }

    #[test]
    fn a_guard_covers_its_collection_without_the_slash() {
        use super::{Folding, PathMatch};
        let private = PathMatch::Prefix("/dav/private/".into());
        for (path, covered) in [
            ("/dav/private/x", true),
            ("/dav/private/", true),
            ("/dav/private", true),
            ("/dav/privatex", false),
            ("/dav/privat", false),
            ("/dav/", false),
        ] {
            assert_eq!(
                private.matches_in(path.as_bytes(), &Folding::NONE),
                covered,
                "{path}"
            );
        }
        // Routing is not changed: only guards.
        assert!(!private.matches(b"/dav/private"));
        // A prefix without a slash as before; a pattern as written.
        let file = PathMatch::Prefix("/admin".into());
        assert!(file.matches_in(b"/admin.php", &Folding::NONE));
        // A pattern that covers a collection covers it without its slash.
        assert!(PathMatch::Glob("/a/*/".into()).matches_in(b"/a/b", &Folding::NONE));
        let glob = PathMatch::Glob("/dav/private/*".into());
        assert!(glob.matches_in(b"/dav/private", &Folding::NONE));
        assert!(!glob.matches_in(b"/dav/privat", &Folding::NONE));
        assert!(!PathMatch::Glob("/dav/private/*.txt".into())
            .matches_in(b"/dav/private", &Folding::NONE));
        assert!(!PathMatch::Glob("/dav/*".into()).matches_in(b"/", &Folding::NONE));
    }

    #[test]
    fn a_guard_covers_what_a_depth_operation_reaches_beneath() {
        use super::{Folding, PathMatch, Reach};
        let (p, g) = (
            |s: &str| PathMatch::Prefix(s.into()),
            |s: &str| PathMatch::Glob(s.into()),
        );
        let none = &Folding::NONE;
        let private = p("/dav/a/private/");
        for (path, reach, covered) in [
            ("/dav/a", Reach::All, true),
            ("/dav/a/", Reach::All, true),
            ("/dav/", Reach::All, true),
            ("/", Reach::All, true),
            ("/dav/a", Reach::Own, false),
            ("/dav/b", Reach::All, false),
            ("/dav/a/pri", Reach::All, false),
        ] {
            assert_eq!(
                private.covers_beneath(path.as_bytes(), reach, none),
                covered,
                "{path} {reach:?}"
            );
        }
        let glob = g("/dav/private/*");
        for (path, reach, covered) in [
            ("/dav/private", Reach::All, true),
            ("/dav/private/", Reach::All, true),
            ("/dav", Reach::All, true),
            ("/", Reach::All, true),
            ("/dav/private", Reach::Own, false),
            ("/dav/public", Reach::All, false),
            ("/dav/private/x", Reach::All, false),
        ] {
            assert_eq!(
                glob.covers_beneath(path.as_bytes(), reach, none),
                covered,
                "{path} {reach:?}"
            );
        }
        // Files by name wherever they are: beneath any collection.
        assert!(g("*.key").covers_beneath(b"/dav/x/", Reach::All, none));
        assert!(!g("*.key").covers_beneath(b"/dav/x/", Reach::Own, none));
    }
}
