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

/// Matches one segment (no `/` on either side) with the classic
/// single-backtrack algorithm: on a mismatch, only the most recent `*` needs
/// to absorb one more byte, which keeps the worst case at O(n·m) without
/// recursion or allocation.
fn segment_matches(pattern: &[u8], text: &[u8]) -> bool {
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
    fn path_match_enum() {
        use super::PathMatch;
        assert!(PathMatch::Prefix("/assets/".into()).matches(b"/assets/x.png"));
        assert!(!PathMatch::Prefix("/assets/".into()).matches(b"/assets"));
        assert!(PathMatch::Glob("*.png".into()).matches(b"/assets/x.png"));
    }
}
