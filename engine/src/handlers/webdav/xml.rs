//! A small XML reader for the bodies WebDAV requests carry (PROPFIND,
//! later PROPPATCH and LOCK): elements with their namespaces resolved,
//! attributes read only for `xmlns` declarations, text with the five
//! predefined entities and character references. Hardened by what it
//! leaves out: no DTD at all (`<!DOCTYPE` is an error, so no entity can
//! be declared: no external entities, no billion laughs), and bounded:
//! the caller bounds the input's size, [`MAX_DEPTH`] its nesting and
//! [`MAX_ELEMENTS`] its elements. Anything not well-formed (XML 1.0 §2.1,
//! Namespaces in XML §3, §5) is an error (400 for the caller).
//!
//! Written for brisk rather than taken from `quick-xml`: the bodies need
//! elements, namespaces and text only, and a reader that cannot expand
//! entities needs no setting to be safe; a few hundred lines that do
//! only this, checked here (see docs/src/webdav.md).

use crate::ascii::IgnoreCase;

/// Nesting deeper than this is refused.
pub const MAX_DEPTH: usize = 32;
/// More elements than this are refused.
pub const MAX_ELEMENTS: usize = 4096;

/// One element: its namespace and local name, its parent (an index into
/// the document's elements; `None` for the root), its text (character
/// data directly inside it, entities replaced).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// The namespace URI (empty: none).
    pub ns: String,
    /// The local name.
    pub name: String,
    /// The parent element.
    pub parent: Option<usize>,
    /// Its own character data.
    pub text: String,
    /// Where its start tag begins in the input (its `<`).
    pub start: usize,
    /// Where its content begins and ends in the input.
    pub inner: (usize, usize),
    /// The namespaces it declares: prefix (empty: the default), URI.
    pub decls: Vec<(String, String)>,
    /// Its `xml:lang` attribute, if it has one.
    pub lang: Option<String>,
}

/// A document read whole: its elements in document order (the root
/// first).
#[derive(Debug, Default)]
pub struct Document {
    /// Every element.
    pub elements: Vec<Element>,
}

impl Document {
    /// The children of element `i`, in order.
    pub fn children(&self, i: usize) -> impl Iterator<Item = (usize, &Element)> + '_ {
        self.elements
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.parent == Some(i))
    }

    /// The content of element `i` of the document read from `input`, as
    /// XML that means the same on its own (RFC 4918 §4.4: a property
    /// value's namespaces "MUST be preserved"): each child element's
    /// start tag also declares the namespaces in force there that it does
    /// not declare itself.
    pub fn fragment(&self, input: &[u8], i: usize) -> Vec<u8> {
        self.fragment_in(input, i, &[])
    }

    /// [`Document::fragment`], to be written where the declarations
    /// `known` (prefix, URI) are in force: those are not declared again.
    pub fn fragment_in(&self, input: &[u8], i: usize, known: &[(&str, &str)]) -> Vec<u8> {
        let mut scope: Vec<&(String, String)> = Vec::new();
        let mut at = Some(i);
        while let Some(e) = at.map(|k| &self.elements[k]) {
            for d in &e.decls {
                if !scope.iter().any(|s| s.0 == d.0) {
                    scope.push(d);
                }
            }
            at = e.parent;
        }
        scope.retain(|(p, u)| !known.contains(&(p.as_str(), u.as_str())));
        let (from, to) = self.elements[i].inner;
        let mut out = Vec::with_capacity(to - from);
        let mut done = from;
        for (_, child) in self.children(i) {
            let name_end = std::str::from_utf8(input)
                .map_or(child.start + 1, |s| scan_name(s, child.start + 1));
            out.extend_from_slice(&input[done..name_end]);
            for (prefix, uri) in scope
                .iter()
                .filter(|s| !child.decls.iter().any(|d| d.0 == s.0))
            {
                out.extend_from_slice(b" xmlns");
                if !prefix.is_empty() {
                    out.push(b':');
                    out.extend_from_slice(prefix.as_bytes());
                }
                out.extend_from_slice(b"=\"");
                super::multistatus::escape(&mut out, uri.as_bytes());
                out.push(b'"');
            }
            done = name_end;
        }
        out.extend_from_slice(&input[done..to]);
        out
    }

    /// The `xml:lang` in force at element `i`: its own, or its nearest
    /// ancestor's (XML 1.0 §2.12).
    pub fn lang(&self, i: usize) -> Option<&str> {
        let mut at = Some(i);
        while let Some(e) = at.map(|k| &self.elements[k]) {
            if let Some(lang) = &e.lang {
                return Some(lang);
            }
            at = e.parent;
        }
        None
    }

    /// Whether element `i` is `name` in the `DAV:` namespace.
    pub fn is_dav(&self, i: usize, name: &str) -> bool {
        self.elements
            .get(i)
            .is_some_and(|e| e.ns == "DAV:" && e.name == name)
    }
}

/// Why a document was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Reads `input` (UTF-8, as RFC 4918 §8.2 expects of a body without a
/// charset) into a [`Document`].
pub fn parse(input: &[u8]) -> Result<Document, Malformed> {
    let text = std::str::from_utf8(input).map_err(|_| Malformed("not UTF-8"))?;
    // (XML 1.0 §2.2: no document holds a NUL, stored values rely on it;
    // nor any other character outside `Char`, which a reader of a stored
    // value sent back would refuse.)
    if input.contains(&0) {
        return Err(Malformed("a NUL character"));
    }
    if !text.chars().all(is_char) {
        return Err(Malformed("a character XML does not allow"));
    }
    // (A UTF-8 byte order mark may start it, XML 1.0 §4.3.3, F.1: what
    // follows is read where it is, so that positions stay the input's.)
    let bom = match text.starts_with('\u{FEFF}') {
        true => '\u{FEFF}'.len_utf8(),
        false => 0,
    };
    let mut r = Reader {
        s: text,
        at: bom,
        bom,
        doc: Document::default(),
        open: Vec::new(),
        scopes: Vec::new(),
    };
    r.document()?;
    Ok(r.doc)
}

struct Reader<'a> {
    s: &'a str,
    at: usize,
    /// The byte order mark's length (0: none).
    bom: usize,
    doc: Document,
    /// The elements open: (index, qualified name).
    open: Vec<(usize, &'a str)>,
    /// Namespace declarations in force: (prefix, URI, depth declared at).
    scopes: Vec<(&'a str, String, usize)>,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.at..]
    }

    fn document(&mut self) -> Result<(), Malformed> {
        let mut seen_root = false;
        loop {
            self.skip_space();
            let rest = self.rest();
            if rest.is_empty() {
                return match seen_root {
                    true => Ok(()),
                    false => Err(Malformed("no element")),
                };
            }
            if rest.starts_with("<?") {
                // (The XML declaration only first, XML 1.0 §2.8.)
                let first = self.at == self.bom;
                self.pi(first)?;
            } else if rest.starts_with("<!--") {
                self.comment()?;
            } else if rest.starts_with("<!") {
                return Err(Malformed("a DTD or declaration"));
            } else if rest.starts_with('<') && !seen_root {
                seen_root = true;
                self.element()?;
            } else {
                return Err(Malformed("text outside the root element"));
            }
        }
    }

    /// The root element and everything in it.
    fn element(&mut self) -> Result<(), Malformed> {
        loop {
            let rest = self.rest();
            if rest.is_empty() {
                return Err(Malformed("unclosed element"));
            }
            if let Some(after) = rest.strip_prefix("</") {
                let end = after.find('>').ok_or(Malformed("unclosed end tag"))?;
                let name = after[..end].trim_end();
                let (index, open) = self.open.pop().ok_or(Malformed("end tag without start"))?;
                if name != open {
                    return Err(Malformed("mismatched end tag"));
                }
                self.doc.elements[index].inner.1 = self.at;
                let depth = self.open.len() + 1;
                self.scopes.retain(|(_, _, d)| *d < depth);
                self.at += 2 + end + 1;
                if self.open.is_empty() {
                    return Ok(());
                }
            } else if rest.starts_with("<!--") {
                self.comment()?;
            } else if let Some(after) = rest.strip_prefix("<![CDATA[") {
                let end = after.find("]]>").ok_or(Malformed("unclosed CDATA"))?;
                self.text_raw(&after[..end]);
                self.at += 9 + end + 3;
            } else if rest.starts_with("<!") {
                return Err(Malformed("a declaration inside an element"));
            } else if rest.starts_with("<?") {
                self.pi(false)?;
            } else if rest.starts_with('<') {
                let closed = self.start_tag()?;
                if closed && self.open.is_empty() {
                    return Ok(());
                }
            } else {
                let end = rest.find('<').unwrap_or(rest.len());
                // (XML 1.0 §2.4: not in character data, where it would
                // end a CDATA section it is copied into.)
                if rest[..end].contains("]]>") {
                    return Err(Malformed("']]>' in text"));
                }
                let decoded = unescape(&rest[..end])?;
                self.text_raw(&decoded);
                self.at += end;
            }
        }
    }

    /// Appends character data to the innermost open element.
    fn text_raw(&mut self, text: &str) {
        if let Some(&(i, _)) = self.open.last() {
            self.doc.elements[i].text.push_str(text);
        }
    }

    /// A start tag (or an empty-element tag: then `true`).
    fn start_tag(&mut self) -> Result<bool, Malformed> {
        let s = self.s;
        let start = self.at + 1;
        let mut i = start;
        let name_end = scan_name(s, i);
        if name_end == i {
            return Err(Malformed("a tag without a name"));
        }
        let qname = &s[start..name_end];
        i = name_end;
        let depth = self.open.len() + 1;
        if depth > MAX_DEPTH {
            return Err(Malformed("nested too deep"));
        }
        let mut prefixed_attrs = Vec::new();
        let mut attrs: Vec<&str> = Vec::new();
        let mut decls = Vec::new();
        let mut lang = None;
        let closed = loop {
            let before = i;
            i = skip_ws(s, i);
            let rest = &s[i..];
            if rest.starts_with("/>") {
                i += 2;
                break true;
            }
            if rest.starts_with('>') {
                i += 1;
                break false;
            }
            if i == before || rest.is_empty() {
                return Err(Malformed("a malformed tag"));
            }
            let a_end = scan_name(s, i);
            if a_end == i {
                return Err(Malformed("a malformed attribute"));
            }
            let attr = &s[i..a_end];
            // (XML 1.0 §3.1: "Unique Att Spec".)
            if attrs.contains(&attr) {
                return Err(Malformed("an attribute twice in a tag"));
            }
            attrs.push(attr);
            i = skip_ws(s, a_end);
            if !s[i..].starts_with('=') {
                return Err(Malformed("an attribute without a value"));
            }
            i = skip_ws(s, i + 1);
            let quote = s[i..].chars().next().ok_or(Malformed("unclosed tag"))?;
            if quote != '"' && quote != '\'' {
                return Err(Malformed("an unquoted attribute"));
            }
            let v_end = s[i + 1..]
                .find(quote)
                .ok_or(Malformed("unclosed attribute"))?
                + i
                + 1;
            let raw = &s[i + 1..v_end];
            if raw.contains('<') {
                return Err(Malformed("'<' in an attribute"));
            }
            let value = unescape(raw)?;
            i = v_end + 1;
            // (Namespaces in XML §3: `xml` is bound to its namespace and
            // nothing else is; `xmlns`'s is never declared.)
            let reserved =
                |prefix: &str| (prefix == "xml") != (value == XML_NS) || value == XMLNS_NS;
            if attr == "xmlns" {
                if value == XML_NS || value == XMLNS_NS {
                    return Err(Malformed("an invalid namespace declaration"));
                }
                decls.push((String::new(), value.clone()));
                self.scopes.push(("", value, depth));
            } else if let Some(prefix) = attr.strip_prefix("xmlns:") {
                // (Namespaces in XML §3: a prefix may not be undeclared.)
                if value.is_empty() || prefix == "xmlns" || prefix.contains(':') || reserved(prefix)
                {
                    return Err(Malformed("an invalid namespace declaration"));
                }
                decls.push((prefix.to_string(), value.clone()));
                self.scopes.push((prefix, value, depth));
            } else if let Some((p, local)) = attr.split_once(':') {
                if attr == "xml:lang" {
                    lang = Some(value);
                }
                prefixed_attrs.push((p, local));
            }
        };
        // (Namespaces in XML §6.3: nor twice by another prefix bound to
        // the same namespace.)
        let mut expanded: Vec<(&str, &str)> = Vec::new();
        for (p, local) in prefixed_attrs {
            let ns = self
                .lookup(p)
                .ok_or(Malformed("an attribute's prefix is not declared"))?;
            if expanded.contains(&(ns, local)) {
                return Err(Malformed("an attribute twice in a tag"));
            }
            expanded.push((ns, local));
        }
        let (prefix, local) = match qname.split_once(':') {
            Some((p, l)) => (p, l),
            None => ("", qname),
        };
        if local.is_empty() || local.contains(':') {
            return Err(Malformed("a malformed name"));
        }
        let ns = match self.lookup(prefix) {
            Some(ns) => ns.to_string(),
            None if prefix.is_empty() => String::new(),
            None => return Err(Malformed("an element's prefix is not declared")),
        };
        if self.doc.elements.len() >= MAX_ELEMENTS {
            return Err(Malformed("too many elements"));
        }
        let index = self.doc.elements.len();
        self.doc.elements.push(Element {
            ns,
            name: local.to_string(),
            parent: self.open.last().map(|&(i, _)| i),
            text: String::new(),
            start: start - 1,
            inner: (i, i),
            decls,
            lang,
        });
        self.at = i;
        if closed {
            self.scopes.retain(|(_, _, d)| *d < depth);
        } else {
            self.open.push((index, qname));
        }
        Ok(closed)
    }

    /// The URI `prefix` is bound to (`""`: the default namespace).
    fn lookup(&self, prefix: &str) -> Option<&str> {
        if prefix == "xml" {
            return Some(XML_NS);
        }
        self.scopes
            .iter()
            .rev()
            .find(|(p, _, _)| *p == prefix)
            .map(|(_, uri, _)| uri.as_str())
    }

    fn comment(&mut self) -> Result<(), Malformed> {
        let body = &self.rest()[4..];
        let end = body.find("--").ok_or(Malformed("unclosed comment"))?;
        if !body[end..].starts_with("-->") {
            return Err(Malformed("'--' in a comment"));
        }
        self.at += 4 + end + 3;
        Ok(())
    }

    /// A processing instruction (XML 1.0 §2.6): a target that is a
    /// name, without `:` (Namespaces in XML §7), and not `xml` in any
    /// case but for the XML declaration (`decl`: first in the document).
    fn pi(&mut self, decl: bool) -> Result<(), Malformed> {
        let start = self.at + 2;
        let rest = &self.s[start..];
        let len = rest
            .find(|c: char| c == '?' || c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let target = &rest[..len];
        let named = len > 0 && scan_name(self.s, start) >= start + len && !target.contains(':');
        let after = &rest[len..];
        if !named
            || !(after.starts_with("?>") || after.starts_with(|c: char| c.is_ascii_whitespace()))
        {
            return Err(Malformed("a processing instruction without a target"));
        }
        if target.eq_ignore_case("xml") && !(decl && target == "xml") {
            return Err(Malformed("an XML declaration not first"));
        }
        self.skip_past("?>")
    }

    fn skip_past(&mut self, end: &str) -> Result<(), Malformed> {
        let n = self
            .rest()
            .find(end)
            .ok_or(Malformed("unclosed instruction"))?;
        self.at += n + end.len();
        Ok(())
    }

    fn skip_space(&mut self) {
        self.at = skip_ws(self.s, self.at);
    }
}

/// The namespace `xml` is bound to, and `xmlns`'s (Namespaces in XML §3).
const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// XML 1.0 §2.2's `Char` (a `char` is never a surrogate).
pub fn is_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='\u{FFFD}' | '\u{10000}'..)
}

fn skip_ws(s: &str, mut i: usize) -> usize {
    let b = s.as_bytes();
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// The end of the name starting at `i` (XML names, leniently: anything
/// but space, `/`, `>`, `=`, quotes and `<`).
fn scan_name(s: &str, mut i: usize) -> usize {
    let b = s.as_bytes();
    if i < b.len() && (b[i].is_ascii_digit() || matches!(b[i], b'-' | b'.')) {
        return i;
    }
    while i < b.len()
        && !matches!(
            b[i],
            b' ' | b'\t' | b'\r' | b'\n' | b'/' | b'>' | b'=' | b'"' | b'\'' | b'<' | b'&'
        )
    {
        i += 1;
    }
    i
}

/// `raw` with its entity and character references replaced; any other
/// `&` is an error (no DTD declares more).
fn unescape(raw: &str) -> Result<String, Malformed> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let end = after
            .find(';')
            .ok_or(Malformed("an unterminated reference"))?;
        let name = &after[..end];
        let c = match name {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let n = match (name.strip_prefix("#x"), name.strip_prefix('#')) {
                    (Some(hex), _) => u32::from_str_radix(hex, 16).ok(),
                    (None, Some(dec)) => dec.parse().ok(),
                    _ => None,
                };
                n.and_then(char::from_u32)
                    .filter(|&c| is_char(c))
                    .ok_or(Malformed("an unknown entity"))?
            }
        };
        out.push(c);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(d: &Document) -> Vec<(String, String, Option<usize>)> {
        d.elements
            .iter()
            .map(|e| (e.ns.clone(), e.name.clone(), e.parent))
            .collect()
    }

    #[test]
    fn a_propfind_with_namespaces() {
        let d = parse(
            br#"<?xml version="1.0" encoding="utf-8" ?>
<!-- a comment -->
<D:propfind xmlns:D="DAV:" xmlns:x="http://example.org/ns"><D:prop>
  <D:getetag/><x:color xmlns="urn:default"><inner>a &amp; b &#x41;&#66;<![CDATA[<c>]]></inner></x:color>
</D:prop></D:propfind>"#,
        )
        .unwrap();
        let dav = "DAV:".to_string();
        assert_eq!(
            names(&d),
            [
                (dav.clone(), "propfind".into(), None),
                (dav.clone(), "prop".into(), Some(0)),
                (dav, "getetag".into(), Some(1)),
                ("http://example.org/ns".into(), "color".into(), Some(1)),
                ("urn:default".into(), "inner".into(), Some(3)),
            ]
        );
        assert_eq!(d.elements[4].text, "a & b AB<c>");
        assert!(d.is_dav(0, "propfind"));
        assert_eq!(d.children(1).count(), 2);
    }

    #[test]
    fn what_is_refused() {
        let bad: &[&[u8]] = &[
            b"",
            b"   ",
            b"<a>",
            b"<a></b>",
            b"<a/><b/>",
            b"text<a/>",
            b"<a/>text",
            b"<a>&unknown;</a>",
            b"<a>&#0;</a>",
            b"<a>& b</a>",
            b"<x:a/>",
            b"<a xmlns:x=\"\"/>",
            b"<a b/>",
            b"<a b=c/>",
            b"<a b=\"<\"/>",
            b"<a><!-- x -- y --></a>",
            b"<!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>",
            b"<!DOCTYPE a SYSTEM \"file:///etc/passwd\"><a/>",
            b"<a><!ENTITY e \"x\"></a>",
            b"\xff<a/>",
            b"<1a/>",
            // Not `Char`s, as such or by reference (XML 1.0 §2.2).
            b"<a>\x01</a>",
            b"<a>&#1;</a>",
            b"<a>&#xFFFE;</a>",
            "<a>\u{FFFF}</a>".as_bytes(),
            b"<a b=\"\x1f\"/>",
            // An attribute twice (XML 1.0 §3.1; Namespaces in XML §6.3).
            b"<a x=\"1\" x=\"2\"/>",
            b"<a xmlns:q=\"u\" q:x=\"1\" q:x=\"2\"/>",
            b"<a xmlns:q=\"u\" xmlns:q=\"v\"/>",
            b"<a xmlns:p=\"u\" xmlns:q=\"u\" p:x=\"1\" q:x=\"2\"/>",
            // The reserved prefixes and namespaces (Namespaces in XML §3).
            b"<a xmlns:xml=\"urn:evil\"/>",
            b"<a xmlns:x=\"http://www.w3.org/XML/1998/namespace\"/>",
            b"<a xmlns=\"http://www.w3.org/2000/xmlns/\"/>",
            // What no copy of a value may hold (XML 1.0 §2.4, §2.6, §2.8):
            // `]]>` in text, a PI without a target or named `xml`, the
            // XML declaration anywhere but first.
            b"<a>]]></a>",
            b"<a>x]]>y</a>",
            b"<a><b/>]]></a>",
            b"<a><?xml version=\"1.0\"?></a>",
            b"<a><?XmL x?></a>",
            b"<a><? nopi ?></a>",
            b"<a><??></a>",
            b"<a><?p:q x?></a>",
            b"<a/><?xml version=\"1.0\"?>",
            b" <?xml version=\"1.0\"?><a/>",
            "<a/>\u{FEFF}".as_bytes(),
            "\u{FEFF}\u{FEFF}<a/>".as_bytes(),
        ];
        for input in bad {
            assert!(parse(input).is_err(), "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn what_is_allowed_beside_it() {
        for input in [
            "<a x=\"1\" y=\"1\" z:x=\"1\" xmlns:z=\"u\">\t\r\n\u{10FFFF}&#x9;&#xD7FF;</a>",
            "<a xmlns:xml=\"http://www.w3.org/XML/1998/namespace\" xml:lang=\"en\"/>",
            "<a xmlns:p=\"u\" xmlns:q=\"v\" p:x=\"1\" q:x=\"2\"/>",
            "<?xml version=\"1.0\"?><a><?pi data?><?pi?>]]&gt;]] ><![CDATA[a]]b]]></a><?end?>",
            "<?xml-stylesheet href=\"x\"?><a/>",
            // A UTF-8 byte order mark (XML 1.0 §4.3.3).
            "\u{FEFF}<?xml version=\"1.0\"?><a/>",
            "\u{FEFF}<a/>",
        ] {
            assert!(parse(input.as_bytes()).is_ok(), "{input}");
        }
    }

    #[test]
    fn depth_and_count_are_bounded() {
        let deep = |n: usize| format!("{}{}", "<a>".repeat(n), "</a>".repeat(n));
        assert!(parse(deep(MAX_DEPTH).as_bytes()).is_ok());
        assert_eq!(
            parse(deep(MAX_DEPTH + 1).as_bytes()).unwrap_err(),
            Malformed("nested too deep")
        );
        let wide = format!("<a>{}</a>", "<b/>".repeat(MAX_ELEMENTS));
        assert_eq!(
            parse(wide.as_bytes()).unwrap_err(),
            Malformed("too many elements")
        );
    }

    #[test]
    fn a_prefix_is_scoped_to_its_element() {
        assert!(parse(b"<a><b xmlns:x=\"u\"/><x:c/></a>").is_err());
        assert!(parse(b"<a><b xmlns:x=\"u\"><x:c/></b></a>").is_ok());
        // An empty default namespace undeclares it.
        let d = parse(b"<a xmlns=\"u\"><b xmlns=\"\"/></a>").unwrap();
        assert_eq!(
            (d.elements[0].ns.as_str(), d.elements[1].ns.as_str()),
            ("u", "")
        );
    }

    #[test]
    fn a_fragment_declares_the_namespaces_in_force() {
        let input: &[u8] =
            b"<D:u xmlns:D=\"DAV:\" xmlns=\"urn:d\"><p xmlns:z=\"urn:&amp;\"> t &lt; \
              <z:a k=\"1\"><b/></z:a><!-- c --><c xmlns=\"\"/><d xmlns:z=\"urn:own\"/></p></D:u>";
        let d = parse(input).unwrap();
        assert_eq!(
            String::from_utf8(d.fragment(input, 1)).unwrap(),
            " t &lt; <z:a xmlns:z=\"urn:&amp;\" xmlns:D=\"DAV:\" xmlns=\"urn:d\" k=\"1\"><b/></z:a>\
             <!-- c --><c xmlns:z=\"urn:&amp;\" xmlns:D=\"DAV:\" xmlns=\"\"/>\
             <d xmlns:D=\"DAV:\" xmlns=\"urn:d\" xmlns:z=\"urn:own\"/>"
        );
        // (Text only, or nothing: as it came.)
        let input: &[u8] = b"<a><b>x &amp; y</b><c/></a>";
        let d = parse(input).unwrap();
        assert_eq!(d.fragment(input, 1), b"x &amp; y");
        assert_eq!(d.fragment(input, 2), b"");
        assert_eq!(
            parse(b"<a>\0</a>").unwrap_err(),
            Malformed("a NUL character")
        );
    }
}
