//! Conditional requests (RFC 9110 §13) and entity tags.

use super::date::parse_http_date;
use super::grammar::{is_ows, push_hex};
use super::Method;

/// The validators of the selected representation.
#[derive(Debug, Clone, Copy)]
pub struct Validators<'a> {
    /// The entity tag with its quotes, e.g. `"5f3a1c2b-1a4"` (a strong tag).
    pub etag: &'a [u8],
    /// Last modification time, whole seconds since the Unix epoch.
    pub last_modified: u64,
}

/// The precondition header values of a request (raw, as sent).
#[derive(Debug, Clone, Copy, Default)]
pub struct Preconditions<'a> {
    /// `If-Match` (RFC 9110 §13.1.1).
    pub if_match: Option<&'a [u8]>,
    /// `If-None-Match` (RFC 9110 §13.1.2).
    pub if_none_match: Option<&'a [u8]>,
    /// `If-Modified-Since` (RFC 9110 §13.1.3).
    pub if_modified_since: Option<&'a [u8]>,
    /// `If-Unmodified-Since` (RFC 9110 §13.1.4).
    pub if_unmodified_since: Option<&'a [u8]>,
}

/// The result of evaluating preconditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Go on with the request.
    Proceed,
    /// 304 Not Modified (GET/HEAD only).
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// An entity tag split into its weakness and its opaque part (without quotes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EntityTag<'a> {
    weak: bool,
    opaque: &'a [u8],
}

impl EntityTag<'_> {
    /// RFC 9110 §8.8.3.2: both strong and character-by-character equal.
    fn strong_eq(&self, other: &EntityTag) -> bool {
        !self.weak && !other.weak && self.opaque == other.opaque
    }

    /// RFC 9110 §8.8.3.2: opaque parts equal, weakness ignored.
    fn weak_eq(&self, other: &EntityTag) -> bool {
        self.opaque == other.opaque
    }
}

fn skip_ows(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_ows(s[i]) {
        i += 1;
    }
    i
}

/// Parses one `entity-tag` at `s[i..]` (RFC 9110 §8.8.3):
/// `[ W/ ] DQUOTE *etagc DQUOTE` with etagc = %x21 / %x23-7E / obs-text.
/// Returns the tag and the index just past it.
fn parse_tag(s: &[u8], i: usize) -> Option<(EntityTag<'_>, usize)> {
    let rest = &s[i..];
    // `W/` is case-sensitive (%s"W/").
    let (weak, rest, at) = match rest.strip_prefix(b"W/") {
        Some(r) => (true, r, i + 2),
        None => (false, rest, i),
    };
    let body = rest.strip_prefix(b"\"")?;
    let len = body.iter().position(|&b| b == b'"')?;
    let opaque = &body[..len];
    if !opaque
        .iter()
        .all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
    {
        return None;
    }
    Some((EntityTag { weak, opaque }, at + 1 + len + 1))
}

/// Parses a whole field value that must be exactly one entity tag.
fn parse_single_tag(value: &[u8]) -> Option<EntityTag<'_>> {
    let v = value.trim_ascii();
    match parse_tag(v, 0) {
        Some((tag, end)) if end == v.len() => Some(tag),
        _ => None,
    }
}

/// How an `If-Match` / `If-None-Match` value relates to the current tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListMatch {
    Match,
    NoMatch,
    Malformed,
}

/// Evaluates `"*" / #entity-tag` against `current` with the given
/// comparison. `*` matches, since a representation exists whenever there
/// are validators to compare. Empty list elements are tolerated
/// (RFC 9110 §5.6.1.2); anything else that is not an entity tag makes the
/// whole list malformed, even after a match, so that the answer does not
/// depend on where the garbage is.
fn match_list(value: &[u8], current: &EntityTag, strong: bool) -> ListMatch {
    let v = value.trim_ascii();
    if v == b"*" {
        return ListMatch::Match;
    }
    let mut found = false;
    let mut i = 0;
    loop {
        i = skip_ows(v, i);
        if i == v.len() {
            break;
        }
        if v[i] == b',' {
            i += 1;
            continue;
        }
        let Some((tag, end)) = parse_tag(v, i) else {
            return ListMatch::Malformed;
        };
        found |= if strong {
            tag.strong_eq(current)
        } else {
            tag.weak_eq(current)
        };
        i = skip_ows(v, end);
        if i < v.len() && v[i] != b',' {
            return ListMatch::Malformed;
        }
    }
    if found {
        ListMatch::Match
    } else {
        ListMatch::NoMatch
    }
}

/// Evaluates preconditions in the order of RFC 9110 §13.2.2.
///
/// 1. `If-Match` (strong comparison): no match or malformed → 412.
/// 2. Only without `If-Match`: `If-Unmodified-Since`, when a valid date,
///    → 412 if modified after it.
/// 3. `If-None-Match` (weak comparison): a match → 304 for GET/HEAD, 412
///    otherwise; a malformed value matches nothing.
/// 4. Only without `If-None-Match`, and only for GET/HEAD:
///    `If-Modified-Since`, when a valid date, → 304 if not modified since.
///
/// Invalid dates are ignored (RFC 9110 §13.1.3, §13.1.4).
pub fn evaluate(pre: &Preconditions, v: &Validators, method: Method) -> Precondition {
    if pre.if_match.is_none() && pre.if_none_match.is_none() && pre.if_unmodified_since.is_none() {
        // (The common request: only If-Modified-Since, or nothing, to
        // look at; the current tag need not be read.)
        return match pre.if_modified_since.and_then(parse_http_date) {
            Some(date)
                if v.last_modified <= date && matches!(method, Method::Get | Method::Head) =>
            {
                Precondition::NotModified
            }
            _ => Precondition::Proceed,
        };
    }
    let current = parse_single_tag(v.etag).unwrap_or(EntityTag {
        weak: false,
        opaque: v.etag,
    });
    if let Some(if_match) = pre.if_match {
        if match_list(if_match, &current, true) != ListMatch::Match {
            return Precondition::Failed;
        }
    } else if let Some(date) = pre.if_unmodified_since.and_then(parse_http_date) {
        if v.last_modified > date {
            return Precondition::Failed;
        }
    }
    let safe = matches!(method, Method::Get | Method::Head);
    if let Some(if_none_match) = pre.if_none_match {
        if match_list(if_none_match, &current, false) == ListMatch::Match {
            return if safe {
                Precondition::NotModified
            } else {
                Precondition::Failed
            };
        }
    } else if safe {
        if let Some(date) = pre.if_modified_since.and_then(parse_http_date) {
            if v.last_modified <= date {
                return Precondition::NotModified;
            }
        }
    }
    Precondition::Proceed
}

/// Evaluates preconditions on a representation that has no validators
/// (a directory listing: no `ETag`, no `Last-Modified`): `If-Match` holds
/// only as `*` (it exists), else 412 (RFC 9110 §13.1.1); `If-None-Match:
/// *` fails, 304 for GET and HEAD (§13.1.2), and no tag can match; the
/// dates have nothing to compare with and are ignored.
pub fn evaluate_unvalidated(pre: &Preconditions, method: Method) -> Precondition {
    if pre.if_match.is_some_and(|m| m.trim_ascii() != b"*") {
        return Precondition::Failed;
    }
    match pre.if_none_match {
        Some(n) if n.trim_ascii() == b"*" => match method {
            Method::Get | Method::Head => Precondition::NotModified,
            _ => Precondition::Failed,
        },
        _ => Precondition::Proceed,
    }
}

/// Whether an `If-Range` value (an entity tag or an HTTP-date) still matches,
/// so the Range header applies (RFC 9110 §13.1.5): strong comparison for
/// tags, exact equality for dates.
///
/// A value that is neither (or a weak tag) never matches, so the full
/// representation is sent: the safe answer when in doubt.
pub fn if_range_matches(if_range: &[u8], v: &Validators) -> bool {
    let value = if_range.trim_ascii();
    // §13.1.5: a DQUOTE in the first three characters means an entity tag.
    if value.iter().take(3).any(|&b| b == b'"') {
        let (Some(tag), Some(current)) = (parse_single_tag(value), parse_single_tag(v.etag)) else {
            return false;
        };
        return tag.strong_eq(&current);
    }
    parse_http_date(value) == Some(v.last_modified)
}

/// Writes the strong entity tag brisk uses for a file, with quotes:
/// `"<mtime seconds hex>.<nanoseconds hex>-<size hex>"` (the seconds
/// with a `-` before 1970), or
/// `"<mtime seconds hex>-<size hex>"` where the filesystem keeps no
/// fraction of a second (`mtime_nsec` 0).
///
/// The nanoseconds are in it because brisk writes files too (a WebDAV
/// PUT): two PUTs of the same size within one second must not leave the
/// tag a client holds standing, or its `If-Match` (the lost-update guard,
/// RFC 9110 §13.1.1) passes over the other's change and its
/// `If-None-Match` is answered 304 with the old content (Apache's tag
/// has the time in microseconds). What is left is a change within one
/// tick of the filesystem's clock that keeps the size, as nginx's
/// seconds leave one within a second.
pub fn write_etag(mtime_secs: i64, mtime_nsec: u32, size: u64, out: &mut Vec<u8>) {
    out.push(b'"');
    // Before 1970 (a file of an old archive, a bad clock): `-` and the
    // magnitude, as nginx writes it.
    if mtime_secs < 0 {
        out.push(b'-');
    }
    push_hex(out, mtime_secs.unsigned_abs());
    if mtime_nsec != 0 {
        out.push(b'.');
        push_hex(out, u64::from(mtime_nsec));
    }
    out.push(b'-');
    push_hex(out, size);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    const ETAG: &[u8] = b"\"5f3a1c2b-1a4\"";
    const LM: u64 = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
    const AT_LM: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";
    const BEFORE_LM: &[u8] = b"Sun, 06 Nov 1994 08:49:36 GMT";
    const AFTER_LM: &[u8] = b"Sun, 06 Nov 1994 08:49:38 GMT";

    fn v() -> Validators<'static> {
        Validators {
            etag: ETAG,
            last_modified: LM,
        }
    }

    fn eval(pre: Preconditions, method: Method) -> Precondition {
        evaluate(&pre, &v(), method)
    }

    fn if_match(value: &str) -> Preconditions<'_> {
        Preconditions {
            if_match: Some(value.as_bytes()),
            ..Default::default()
        }
    }

    fn if_none_match(value: &str) -> Preconditions<'_> {
        Preconditions {
            if_none_match: Some(value.as_bytes()),
            ..Default::default()
        }
    }

    use Precondition::*;

    #[test]
    fn without_validators_only_a_star_matches() {
        let un = |pre: Preconditions<'_>, m| evaluate_unvalidated(&pre, m);
        assert_eq!(un(Preconditions::default(), Method::Get), Proceed);
        assert_eq!(un(if_match("*"), Method::Get), Proceed);
        assert_eq!(un(if_match("\"x\""), Method::Get), Failed);
        assert_eq!(un(if_match(""), Method::Get), Failed);
        assert_eq!(un(if_none_match(" * "), Method::Get), NotModified);
        assert_eq!(un(if_none_match("*"), Method::Head), NotModified);
        assert_eq!(un(if_none_match("*"), Method::Post), Failed);
        assert_eq!(un(if_none_match("\"x\", \"\""), Method::Get), Proceed);
        let dates = Preconditions {
            if_modified_since: Some(AFTER_LM),
            if_unmodified_since: Some(BEFORE_LM),
            ..Default::default()
        };
        assert_eq!(un(dates, Method::Get), Proceed);
    }

    #[test]
    fn no_preconditions_proceed() {
        for m in [Method::Get, Method::Head, Method::Put, Method::Post] {
            assert_eq!(eval(Preconditions::default(), m), Proceed);
        }
    }

    #[test]
    fn if_match_uses_strong_comparison() {
        for value in [
            "\"5f3a1c2b-1a4\"",
            "*",
            " * ",
            "\"x\", \"5f3a1c2b-1a4\"",
            "\"x\",\"5f3a1c2b-1a4\",\"y\"",
            ", ,\"5f3a1c2b-1a4\" ,",
            "\t\"5f3a1c2b-1a4\"\t",
        ] {
            assert_eq!(eval(if_match(value), Method::Put), Proceed, "{value:?}");
            assert_eq!(eval(if_match(value), Method::Get), Proceed, "{value:?}");
        }
        for value in [
            "W/\"5f3a1c2b-1a4\"",
            "\"5f3a1c2b-1a5\"",
            "\"5F3A1C2B-1A4\"",
            "\"x\", W/\"5f3a1c2b-1a4\"",
            "",
            ",",
        ] {
            assert_eq!(eval(if_match(value), Method::Put), Failed, "{value:?}");
            assert_eq!(eval(if_match(value), Method::Get), Failed, "{value:?}");
        }
    }

    #[test]
    fn malformed_if_match_fails() {
        for value in [
            "5f3a1c2b-1a4",
            "\"5f3a1c2b-1a4",
            "\"5f3a1c2b-1a4\" \"x\"",
            "\"5f3a1c2b-1a4\"x",
            "*, \"5f3a1c2b-1a4\"",
            "\"5f3a1c2b-1a4\", *",
            "w/\"5f3a1c2b-1a4\"",
            "W/ \"5f3a1c2b-1a4\"",
            "\"5f3a1c2b-1a4\", garbage",
            "\"a b\", \"5f3a1c2b-1a4\"",
            "**",
        ] {
            assert_eq!(eval(if_match(value), Method::Put), Failed, "{value:?}");
        }
    }

    #[test]
    fn if_none_match_uses_weak_comparison() {
        for value in [
            "\"5f3a1c2b-1a4\"",
            "W/\"5f3a1c2b-1a4\"",
            "*",
            "\"a\", W/\"5f3a1c2b-1a4\"",
            "\"a\",,\"5f3a1c2b-1a4\"",
        ] {
            assert_eq!(
                eval(if_none_match(value), Method::Get),
                NotModified,
                "{value:?}"
            );
            assert_eq!(
                eval(if_none_match(value), Method::Head),
                NotModified,
                "{value:?}"
            );
            assert_eq!(eval(if_none_match(value), Method::Put), Failed, "{value:?}");
            assert_eq!(
                eval(if_none_match(value), Method::Delete),
                Failed,
                "{value:?}"
            );
        }
        for value in ["\"a\"", "W/\"a\", \"b\"", "", "\"5f3a1c2b-1a4 \""] {
            assert_eq!(
                eval(if_none_match(value), Method::Get),
                Proceed,
                "{value:?}"
            );
            assert_eq!(
                eval(if_none_match(value), Method::Put),
                Proceed,
                "{value:?}"
            );
        }
    }

    #[test]
    fn malformed_if_none_match_proceeds() {
        for value in [
            "5f3a1c2b-1a4",
            "\"5f3a1c2b-1a4\" junk",
            "\"5f3a1c2b-1a4",
            "*, \"x\"",
            "\"5f3a1c2b-1a4\", \"\x01\"",
        ] {
            assert_eq!(
                eval(if_none_match(value), Method::Get),
                Proceed,
                "{value:?}"
            );
            assert_eq!(
                eval(if_none_match(value), Method::Put),
                Proceed,
                "{value:?}"
            );
        }
    }

    #[test]
    fn if_unmodified_since() {
        let ius = |date: &'static [u8]| Preconditions {
            if_unmodified_since: Some(date),
            ..Default::default()
        };
        assert_eq!(eval(ius(AT_LM), Method::Put), Proceed);
        assert_eq!(eval(ius(AFTER_LM), Method::Put), Proceed);
        assert_eq!(eval(ius(BEFORE_LM), Method::Put), Failed);
        assert_eq!(eval(ius(BEFORE_LM), Method::Get), Failed);
        // Other formats count as dates too.
        assert_eq!(
            eval(ius(b"Sunday, 06-Nov-94 08:49:36 GMT"), Method::Put),
            Failed
        );
        assert_eq!(eval(ius(b"Sun Nov  6 08:49:36 1994"), Method::Put), Failed);
        // An invalid date is ignored.
        assert_eq!(eval(ius(b"yesterday"), Method::Put), Proceed);
        assert_eq!(
            eval(ius(b"Sun, 06 Nov 1994 08:49:36 CET"), Method::Put),
            Proceed
        );
    }

    #[test]
    fn if_match_overrides_if_unmodified_since() {
        let pre = Preconditions {
            if_match: Some(ETAG),
            if_unmodified_since: Some(BEFORE_LM),
            ..Default::default()
        };
        assert_eq!(eval(pre, Method::Put), Proceed);
        let pre = Preconditions {
            if_match: Some(b"\"other\""),
            if_unmodified_since: Some(AFTER_LM),
            ..Default::default()
        };
        assert_eq!(eval(pre, Method::Put), Failed);
    }

    #[test]
    fn if_modified_since() {
        let ims = |date: &'static [u8]| Preconditions {
            if_modified_since: Some(date),
            ..Default::default()
        };
        assert_eq!(eval(ims(AT_LM), Method::Get), NotModified);
        assert_eq!(eval(ims(AFTER_LM), Method::Head), NotModified);
        assert_eq!(eval(ims(BEFORE_LM), Method::Get), Proceed);
        // Only for GET and HEAD.
        assert_eq!(eval(ims(AT_LM), Method::Post), Proceed);
        assert_eq!(eval(ims(AT_LM), Method::Put), Proceed);
        // Invalid dates are ignored.
        assert_eq!(eval(ims(b"Sun, 06 Nov 1994"), Method::Get), Proceed);
        assert_eq!(eval(ims(b""), Method::Get), Proceed);
    }

    #[test]
    fn if_none_match_overrides_if_modified_since() {
        let pre = |inm: &'static [u8]| Preconditions {
            if_none_match: Some(inm),
            if_modified_since: Some(AFTER_LM),
            ..Default::default()
        };
        // The tag changed: the date must not turn this into a 304.
        assert_eq!(eval(pre(b"\"old\""), Method::Get), Proceed);
        assert_eq!(eval(pre(b"junk"), Method::Get), Proceed);
        assert_eq!(eval(pre(ETAG), Method::Get), NotModified);
    }

    #[test]
    fn evaluation_order() {
        // A failing If-Match wins over a matching If-None-Match.
        let pre = Preconditions {
            if_match: Some(b"\"other\""),
            if_none_match: Some(ETAG),
            ..Default::default()
        };
        assert_eq!(eval(pre, Method::Get), Failed);
        // A failing If-Unmodified-Since wins over a matching If-Modified-Since.
        let pre = Preconditions {
            if_unmodified_since: Some(BEFORE_LM),
            if_modified_since: Some(AFTER_LM),
            ..Default::default()
        };
        assert_eq!(eval(pre, Method::Get), Failed);
        // A passing If-Match then a matching If-None-Match.
        let pre = Preconditions {
            if_match: Some(b"*"),
            if_none_match: Some(b"*"),
            ..Default::default()
        };
        assert_eq!(eval(pre, Method::Get), NotModified);
        assert_eq!(eval(pre, Method::Put), Failed);
        // All four, all passing: proceed.
        let pre = Preconditions {
            if_match: Some(ETAG),
            if_none_match: Some(b"\"old\""),
            if_modified_since: Some(AFTER_LM),
            if_unmodified_since: Some(BEFORE_LM),
        };
        assert_eq!(eval(pre, Method::Get), Proceed);
    }

    #[test]
    fn if_range() {
        let v = v();
        assert!(if_range_matches(ETAG, &v));
        assert!(if_range_matches(b" \"5f3a1c2b-1a4\" ", &v));
        assert!(if_range_matches(AT_LM, &v));
        assert!(if_range_matches(b"Sunday, 06-Nov-94 08:49:37 GMT", &v));
        // Weak tags never match (§13.1.5 requires strong comparison).
        assert!(!if_range_matches(b"W/\"5f3a1c2b-1a4\"", &v));
        assert!(!if_range_matches(b"\"5f3a1c2b-1a5\"", &v));
        // Dates must be exactly equal, not merely earlier or later.
        assert!(!if_range_matches(BEFORE_LM, &v));
        assert!(!if_range_matches(AFTER_LM, &v));
        // Garbage, lists and `*` are not validators.
        for bad in [
            &b""[..],
            b"*",
            b"junk",
            b"\"5f3a1c2b-1a4\", \"x\"",
            b"\"5f3a1c2b-1a4",
        ] {
            assert!(
                !if_range_matches(bad, &v),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // A weak current tag cannot be matched strongly either.
        let weak = Validators {
            etag: b"W/\"5f3a1c2b-1a4\"",
            last_modified: LM,
        };
        assert!(!if_range_matches(b"W/\"5f3a1c2b-1a4\"", &weak));
        assert!(!if_range_matches(ETAG, &weak));
    }

    #[test]
    fn entity_tag_grammar() {
        assert_eq!(
            parse_single_tag(b"W/\"x\""),
            Some(EntityTag {
                weak: true,
                opaque: b"x"
            })
        );
        assert_eq!(
            parse_single_tag(b"\"\""),
            Some(EntityTag {
                weak: false,
                opaque: b""
            })
        );
        assert_eq!(
            parse_single_tag(b"\"\xc3\xa9!#~\""),
            Some(EntityTag {
                weak: false,
                opaque: b"\xc3\xa9!#~"
            })
        );
        for bad in [
            &b"x"[..],
            b"\"",
            b"W/",
            b"W/x",
            b"\"a\"b\"",
            b"\"a\x7f\"",
            b"\"\t\"",
        ] {
            assert_eq!(
                parse_single_tag(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn etag_format() {
        let mut out = Vec::new();
        write_etag(0x5f3a_1c2b, 0, 0x1a4, &mut out);
        assert_eq!(out, b"\"5f3a1c2b-1a4\"");
        out.clear();
        write_etag(0, 0, 0, &mut out);
        assert_eq!(out, b"\"0-0\"");
        out.clear();
        write_etag(i64::MAX, 0, 0xABCDEF, &mut out);
        assert_eq!(out, b"\"7fffffffffffffff-abcdef\"");
        // Before 1970, as nginx writes it (1960-01-01).
        out.clear();
        write_etag(-315_619_200, 0, 4, &mut out);
        assert_eq!(out, b"\"-12cff780-4\"");
        out.clear();
        write_etag(i64::MIN, 1, 4, &mut out);
        assert_eq!(out, b"\"-8000000000000000.1-4\"");
        // The fraction of a second, where the filesystem keeps one: two
        // versions of one size written within a second differ.
        out.clear();
        write_etag(0x5f3a_1c2b, 0x1dcd_6500, 0x1a4, &mut out);
        assert_eq!(out, b"\"5f3a1c2b.1dcd6500-1a4\"");
        let mut other = Vec::new();
        write_etag(0x5f3a_1c2b, 0x1dcd_6501, 0x1a4, &mut other);
        assert_ne!(out, other);
        // What brisk writes, brisk matches.
        let mut tag = Vec::new();
        write_etag(1_700_000_000, 123_456_789, 12_345, &mut tag);
        let v = Validators {
            etag: &tag,
            last_modified: 1_700_000_000,
        };
        assert!(if_range_matches(&tag, &v));
        let pre = Preconditions {
            if_none_match: Some(&tag),
            ..Default::default()
        };
        assert_eq!(evaluate(&pre, &v, Method::Get), NotModified);
    }
}
