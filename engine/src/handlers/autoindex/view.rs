//! How a listing is asked for: the sort order from the query
//! (`?sort=size&order=desc`, as Caddy's browse spells it) and the format
//! from the query (`?format=json`) or, failing that, from `Accept`.

use crate::ascii::IgnoreCase;
use crate::http::grammar::trim_ows;

/// The column a listing is sorted by. Directories always come first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// File name, bytewise.
    Name,
    /// Size in bytes (directories, which show none, by name).
    Size,
    /// Modification time.
    Time,
}

/// What a listing is rendered as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// An HTML page.
    Html,
    /// A JSON array of entries.
    Json,
}

/// The listing a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct View {
    /// Sorted by.
    pub sort: SortKey,
    /// Descending order.
    pub desc: bool,
    /// HTML or JSON.
    pub format: Format,
    /// The format was chosen from `Accept` (the query named none), so the
    /// answer says `Vary: Accept` (RFC 9110 §12.5.5).
    pub by_accept: bool,
}

impl Default for View {
    fn default() -> View {
        View {
            sort: SortKey::Name,
            desc: false,
            format: Format::Html,
            by_accept: false,
        }
    }
}

/// A listing parameter with a value it does not take: the query's
/// `name=value` as sent, and the values allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadParam {
    /// `sort`, `order` or `format`.
    pub name: &'static str,
    /// What the parameter takes.
    pub allowed: &'static str,
}

/// The view a query (`None`: no `?`) and an `Accept` field ask for.
/// Parameters other than `sort`, `order` and `format` are ignored (a
/// cache-busting `?v=2` lists as usual); a repeated one counts as its
/// last value; an unknown value of one of the three is an error.
pub fn choose(query: Option<&[u8]>, accept: Option<&[u8]>) -> Result<View, BadParam> {
    let mut view = View::default();
    let mut format = None;
    let mut order = None;
    for pair in query.unwrap_or_default().split(|&b| b == b'&') {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(eq) => (&pair[..eq], &pair[eq + 1..]),
            None => (pair, &b""[..]),
        };
        match name {
            b"sort" => {
                view.sort = match value {
                    b"name" => SortKey::Name,
                    b"size" => SortKey::Size,
                    b"time" | b"date" => SortKey::Time,
                    _ => return Err(bad("sort", "name, size, time or date")),
                }
            }
            b"order" => {
                order = Some(match value {
                    b"asc" => false,
                    b"desc" => true,
                    _ => return Err(bad("order", "asc or desc")),
                })
            }
            b"format" => {
                format = Some(match value {
                    b"html" => Format::Html,
                    b"json" => Format::Json,
                    _ => return Err(bad("format", "html or json")),
                })
            }
            _ => {}
        }
    }
    view.desc = order.unwrap_or(false);
    view.format = match format {
        Some(f) => f,
        None => {
            view.by_accept = true;
            match accept.is_some_and(prefers_json) {
                true => Format::Json,
                false => Format::Html,
            }
        }
    };
    Ok(view)
}

fn bad(name: &'static str, allowed: &'static str) -> BadParam {
    BadParam { name, allowed }
}

/// Whether an `Accept` field names `application/json` itself and weighs
/// it at least as high as `text/html` (RFC 9110 §12.5.1: the most
/// specific range that matches gives a type's weight). A browser's
/// `text/html,…,*/*;q=0.8` and a bare `*/*` get HTML; `curl -H 'Accept:
/// application/json'` gets JSON.
fn prefers_json(accept: &[u8]) -> bool {
    match (
        weight(accept, b"application", b"json"),
        weight(accept, b"text", b"html"),
    ) {
        (Some((json, 2)), html) => json > 0 && json >= html.map_or(0, |(q, _)| q),
        _ => false,
    }
}

/// The weight (thousandths) `accept` gives `ty/subtype`, with how specific
/// the range that gave it is (2: the type itself, 1: `ty/*`, 0: `*/*`);
/// `None` when no range matches. Invalid q-values count as 1.
fn weight(accept: &[u8], ty: &[u8], subtype: &[u8]) -> Option<(u16, u8)> {
    let mut best: Option<(u16, u8)> = None;
    for item in accept.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let range = trim_ows(parts.next().unwrap_or_default());
        let Some(slash) = range.iter().position(|&b| b == b'/') else {
            continue;
        };
        let (t, s) = (&range[..slash], &range[slash + 1..]);
        let specificity = match (t, s) {
            (b"*", b"*") => 0,
            (t, b"*") if t.eq_ignore_case(ty) => 1,
            (t, s) if t.eq_ignore_case(ty) && s.eq_ignore_case(subtype) => 2,
            _ => continue,
        };
        let mut q = 1000;
        for param in parts {
            let param = trim_ows(param);
            if param.len() >= 2 && param[..2].eq_ignore_case(b"q=") {
                q = qvalue(trim_ows(&param[2..])).unwrap_or(1000);
            }
        }
        if best.is_none_or(|(_, spec)| specificity > spec) {
            best = Some((q, specificity));
        }
    }
    best
}

/// An RFC 9110 §12.4.2 qvalue (`0`, `0.5`, `1.000`…) in thousandths.
fn qvalue(q: &[u8]) -> Option<u16> {
    let (int, frac) = match q.iter().position(|&b| b == b'.') {
        Some(dot) => (&q[..dot], &q[dot + 1..]),
        None => (q, &b""[..]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths: u16 = match int {
        b"0" => 0,
        b"1" if frac.iter().all(|&b| b == b'0') => return Some(1000),
        _ => return None,
    };
    for (i, &d) in frac.iter().enumerate() {
        thousandths += u16::from(d - b'0') * [100, 10, 1][i];
    }
    Some(thousandths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_and_order_from_the_query() {
        let v = choose(Some(b"sort=size&order=desc"), None).unwrap();
        assert_eq!(
            (v.sort, v.desc, v.format),
            (SortKey::Size, true, Format::Html)
        );
        let v = choose(Some(b"v=2&sort=date&x&sort=time"), None).unwrap();
        assert_eq!((v.sort, v.desc), (SortKey::Time, false));
        assert_eq!(
            choose(None, None).unwrap(),
            View {
                by_accept: true,
                ..View::default()
            }
        );
        assert_eq!(choose(Some(b"sort=Size"), None).unwrap_err().name, "sort");
        assert_eq!(choose(Some(b"order="), None).unwrap_err().name, "order");
        assert_eq!(
            choose(Some(b"format=xml"), None).unwrap_err().name,
            "format"
        );
    }

    #[test]
    fn format_from_the_query_or_accept() {
        let json = |q: Option<&[u8]>, a: &[u8]| {
            let v = choose(q, Some(a)).unwrap();
            (v.format == Format::Json, v.by_accept)
        };
        assert_eq!(json(Some(b"format=json"), b"text/html"), (true, false));
        assert_eq!(
            json(Some(b"format=html"), b"application/json"),
            (false, false)
        );
        assert_eq!(json(None, b"application/json"), (true, true));
        assert_eq!(json(None, b"Application/JSON; q=0.5"), (true, true));
        assert_eq!(json(None, b"application/json, text/html"), (true, true));
        assert_eq!(
            json(None, b"text/html, application/json;q=0.9"),
            (false, true)
        );
        assert_eq!(
            json(None, b"text/html;q=0.5, application/json;q=0.9"),
            (true, true)
        );
        assert_eq!(json(None, b"*/*"), (false, true));
        assert_eq!(json(None, b"application/*"), (false, true));
        assert_eq!(json(None, b"application/json;q=0"), (false, true));
        assert_eq!(
            json(
                None,
                b"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
            ),
            (false, true)
        );
        // HTML weighs 1 through `*/*`, more than the named JSON's 0.5.
        assert_eq!(json(None, b"*/*, application/json;q=0.5"), (false, true));
    }

    #[test]
    fn qvalues() {
        for (q, want) in [
            (&b"0"[..], Some(0)),
            (b"0.", Some(0)),
            (b"0.5", Some(500)),
            (b"0.125", Some(125)),
            (b"1", Some(1000)),
            (b"1.000", Some(1000)),
            (b"1.5", None),
            (b"0.1234", None),
            (b"2", None),
            (b"", None),
            (b"0.x", None),
        ] {
            assert_eq!(qvalue(q), want, "{q:?}");
        }
    }
}
