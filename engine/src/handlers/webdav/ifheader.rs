//! The `If` header (RFC 4918 §10.4): lists of conditions, untagged (about
//! the request's resource) or tagged with the resource they are about;
//! each condition a state token (`<urn:uuid:…>`, a lock's) or an entity
//! tag (`["…"]`), maybe negated (`Not`). The header holds when any list
//! does; a list holds when every condition does (§10.4.2).
//!
//! Every state token in it, outside `Not`, is "submitted" (§10.4.1): that
//! is how a client shows it holds a lock, whatever the lists evaluate to.

use crate::ascii::IgnoreCase;

/// One condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond<'a> {
    /// A state token (a Coded-URL's inside: `urn:uuid:…`, `DAV:no-lock`).
    Token(&'a [u8]),
    /// An entity tag, with its quotes (and `W/`).
    Etag(&'a [u8]),
}

/// A condition, maybe negated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition<'a> {
    /// `Not`.
    pub not: bool,
    /// What is tested.
    pub what: Cond<'a>,
}

/// One list: the resource it is about (`None`: the request's) and its
/// conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<'a> {
    /// The Resource-Tag's URL.
    pub tag: Option<&'a [u8]>,
    /// All must hold.
    pub conditions: Vec<Condition<'a>>,
}

/// The most lists, and conditions in a list, read (a longer header is
/// refused with 400).
const MAX: usize = 64;

/// The lists of header value `v`; `None` when it is malformed (400).
pub fn parse(v: &[u8]) -> Option<Vec<List<'_>>> {
    let mut lists = Vec::new();
    // (Some(true) once a tag is seen: then every list follows one.)
    let mut tagged: Option<bool> = None;
    let mut tag = None;
    let mut i = 0;
    loop {
        i = skip_ws(v, i);
        match v.get(i) {
            None => break,
            Some(b'<') => {
                if tagged == Some(false) {
                    return None;
                }
                tagged = Some(true);
                let (url, next) = bracketed(v, i, b'>')?;
                tag = Some(url);
                i = next;
                // (A tag is followed by at least one list.)
                if v.get(skip_ws(v, i)) != Some(&b'(') {
                    return None;
                }
            }
            Some(b'(') => {
                tagged.get_or_insert(false);
                let (conditions, next) = list(v, i + 1)?;
                lists.push(List { tag, conditions });
                i = next;
                if lists.len() > MAX {
                    return None;
                }
            }
            Some(_) => return None,
        }
    }
    (!lists.is_empty()).then_some(lists)
}

/// The conditions of a list whose `(` is before `i`, and where it ends.
fn list(v: &[u8], mut i: usize) -> Option<(Vec<Condition<'_>>, usize)> {
    let mut out = Vec::new();
    loop {
        i = skip_ws(v, i);
        let mut not = false;
        if v.len() >= i + 3 && v[i..i + 3].eq_ignore_case(b"Not") {
            not = true;
            i = skip_ws(v, i + 3);
        }
        let (what, next) = match v.get(i)? {
            b')' if !not && !out.is_empty() => return Some((out, i + 1)),
            b'<' => {
                let (t, next) = bracketed(v, i, b'>')?;
                (Cond::Token(t), next)
            }
            b'[' => {
                let (t, next) = etag(v, i + 1)?;
                (Cond::Etag(t), next)
            }
            _ => return None,
        };
        out.push(Condition { not, what });
        if out.len() > MAX {
            return None;
        }
        i = next;
    }
}

/// The inside of `<…>` at `i`, and the index after it.
fn bracketed(v: &[u8], i: usize, close: u8) -> Option<(&[u8], usize)> {
    let len = v[i + 1..].iter().position(|&b| b == close)?;
    let inside = &v[i + 1..i + 1 + len];
    if inside.is_empty() || inside.iter().any(|b| b.is_ascii_whitespace() || *b == b'<') {
        return None;
    }
    Some((inside, i + len + 2))
}

/// An entity tag at `i` (`"x"` or `W/"x"`) closed by `]`, and the index
/// after the `]`.
fn etag(v: &[u8], i: usize) -> Option<(&[u8], usize)> {
    let start = i;
    let i = if v[i..].starts_with(b"W/") { i + 2 } else { i };
    if v.get(i) != Some(&b'"') {
        return None;
    }
    let len = v[i + 1..].iter().position(|&b| b == b'"')?;
    let end = i + 1 + len + 1;
    (v.get(end) == Some(&b']')).then_some((&v[start..end], end + 1))
}

fn skip_ws(v: &[u8], mut i: usize) -> usize {
    while v.get(i).is_some_and(|b| matches!(b, b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// What a resource is, for the conditions about it.
pub trait State {
    /// Whether a lock of token `token` applies to it.
    fn locked_by(&self, token: &[u8]) -> bool;
    /// Whether its entity tag is `etag` (quotes included).
    fn tagged(&self, etag: &[u8]) -> bool;
}

/// Whether the header holds: some list all of whose conditions hold of
/// its resource, as `state` finds it (`None` for a resource it cannot
/// find: no condition but a `Not` holds of it).
pub fn holds<'a, S: State>(
    lists: &[List<'a>],
    state: impl Fn(Option<&'a [u8]>) -> Option<S>,
) -> bool {
    lists.iter().any(|list| {
        let s = state(list.tag);
        list.conditions.iter().all(|c| {
            let is = s.as_ref().is_some_and(|s| match c.what {
                Cond::Token(t) => s.locked_by(t),
                Cond::Etag(e) => s.tagged(e),
            });
            is != c.not
        })
    })
}

/// The state tokens submitted (outside `Not`).
pub fn submitted<'a>(lists: &[List<'a>]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    for c in lists.iter().flat_map(|l| &l.conditions) {
        if let (false, Cond::Token(t)) = (c.not, c.what) {
            out.push(t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(t: &str) -> Condition<'_> {
        Condition {
            not: false,
            what: Cond::Token(t.as_bytes()),
        }
    }

    #[test]
    fn untagged_and_tagged_lists() {
        let l = parse(b"(<urn:uuid:a> [\"e\"]) (Not <DAV:no-lock>)").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].tag, None);
        assert_eq!(
            l[0].conditions,
            [
                tok("urn:uuid:a"),
                Condition {
                    not: false,
                    what: Cond::Etag(b"\"e\"")
                }
            ]
        );
        assert_eq!(
            l[1].conditions,
            [Condition {
                not: true,
                what: Cond::Token(b"DAV:no-lock")
            }]
        );
        let l =
            parse(b"<http://h/a> (<urn:uuid:a>)(<urn:uuid:b>) <http://h/b> ([W/\"x]\"])").unwrap();
        let tags: Vec<_> = l.iter().map(|l| l.tag.unwrap()).collect();
        assert_eq!(tags, [&b"http://h/a"[..], b"http://h/a", b"http://h/b"]);
        assert_eq!(l[2].conditions[0].what, Cond::Etag(b"W/\"x]\""));
        assert_eq!(submitted(&l), [&b"urn:uuid:a"[..], b"urn:uuid:b"]);
    }

    #[test]
    fn malformed_headers_are_refused() {
        for bad in [
            &b""[..],
            b"   ",
            b"()",
            b"(Not)",
            b"(<a>",
            b"<http://h/a>",
            b"<http://h/a> <http://h/b> (<a>)",
            // (Untagged, then tagged: the grammar has one or the other.)
            b"(<a>) <http://h/a> (<b>)",
            b"([e])",
            b"([\"e\"] x)",
            b"(<a b>)",
            b"x",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        let many = "(<a>)".repeat(MAX + 1);
        assert_eq!(parse(many.as_bytes()), None);
    }

    struct Res {
        tokens: &'static [&'static str],
        etag: &'static str,
    }

    impl State for &Res {
        fn locked_by(&self, token: &[u8]) -> bool {
            self.tokens.iter().any(|t| t.as_bytes() == token)
        }
        fn tagged(&self, etag: &[u8]) -> bool {
            self.etag.as_bytes() == etag
        }
    }

    #[test]
    fn evaluation() {
        let file = Res {
            tokens: &["urn:uuid:a"],
            etag: "\"1\"",
        };
        let other = Res {
            tokens: &[],
            etag: "\"2\"",
        };
        let eval = |h: &[u8]| {
            let lists = parse(h).unwrap();
            holds(&lists, |tag| match tag {
                None | Some(b"/file") => Some(&file),
                Some(b"/other") => Some(&other),
                _ => None,
            })
        };
        assert!(eval(b"(<urn:uuid:a>)"));
        assert!(!eval(b"(<urn:uuid:b>)"));
        assert!(eval(b"(<urn:uuid:a> [\"1\"])"));
        assert!(!eval(b"(<urn:uuid:a> [\"2\"])"));
        // (Either list.)
        assert!(eval(b"(<urn:uuid:b>) (Not <DAV:no-lock>)"));
        assert!(!eval(b"(<DAV:no-lock>)"));
        assert!(!eval(
            b"(<urn:uuid:a> [W/\"bad\"]) (Not <DAV:no-lock> [W/\"bad\"])"
        ));
        assert!(eval(b"(Not <urn:uuid:b> [\"1\"])"));
        // Tagged: about the resource named.
        assert!(eval(b"</other> ([\"2\"])"));
        assert!(!eval(b"</other> (<urn:uuid:a>)"));
        assert!(eval(b"</other> (<urn:uuid:a>) </file> (<urn:uuid:a>)"));
        // A resource not found: only `Not` holds of it.
        assert!(!eval(b"</gone> ([\"1\"])"));
        assert!(eval(b"</gone> (Not [\"1\"])"));
    }
}
