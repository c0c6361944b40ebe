//! Lua 5.1's patterns (`string.find`, `match`, `gmatch`, `gsub`), matched
//! under a step budget: brisk's own matcher, written from the Lua 5.1
//! reference manual (§5.4.1), for servlets.
//!
//! Why: LuaJIT's matcher is one C call, and the CPU-time hook
//! (`ffi::cpu`) fires only between Lua instructions, so a pattern
//! that backtracks, `("a*"):rep(4) .. "b"` against 200 `a`s, held its
//! worker 32 s under `cpu_time = "1s"`, and any servlet matching request
//! data was a ReDoS vector. Other means were weighed: bounding the
//! subject's length or the pattern's items still leaves exponential
//! cases; a watchdog thread cannot take a state off a worker stuck inside
//! C (the state's memory is the worker's); a process per state costs a
//! process switch per request. Here every step of the matcher counts,
//! and every [`CHECK_EVERY`] steps the budget is read (two thread-local
//! loads: `cpu::check_spent`); once spent, the match fails with the
//! CPU limit's error, as the hook raises it (a `pcall` that catches it
//! meets the hook at its next instruction). A long set (`[...]`) counts
//! as more steps, as it is scanned at each use, and a plain search is
//! linear (two-way, `memchr::memmem`: LuaJIT's compares at each place,
//! so a plain `find` of a long needle was slow too). Recursion is
//! bounded ([`MAX_DEPTH`]) as in Lua 5.2 and later ("pattern too
//! complex"), so no pattern can overflow the worker's stack. What it
//! costs: `strings::tests::speed` (the call is the larger part: `find`,
//! `match` and `gmatch` are C functions, `ffi::str`).
//!
//! The semantics are 5.1's, as LuaJIT's: `%z` and `%f` are there, a `%`
//! before a non-digit in a `gsub` replacement stands for that character,
//! `gmatch` takes `^` literally.

/// Most captures in a pattern (Lua's `LUA_MAXCAPTURES`).
pub const MAX_CAPTURES: usize = 32;
/// Deepest recursion of the matcher (Lua 5.2's `MAXCCALLS`).
const MAX_DEPTH: u32 = 200;
/// Steps between reads of the CPU budget.
pub const CHECK_EVERY: u32 = 4096;

/// A capture's length while it is open.
const UNFINISHED: isize = -1;
/// A position capture `()`.
const POSITION: isize = -2;

/// Why a match stopped without an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The pattern is malformed (Lua's message).
    Pattern(&'static str),
    /// The step budget's check said stop.
    Stopped,
}

/// The characters that make a pattern more than plain text.
pub fn has_specials(p: &[u8]) -> bool {
    p.iter().any(|c| b"^$*+?.([%-".contains(c))
}

/// A leading `^` anchors the pattern: whether it does, and where the
/// rest starts.
pub fn anchored(pat: &[u8]) -> (bool, usize) {
    match pat.first() {
        Some(b'^') => (true, 1),
        _ => (false, 0),
    }
}

/// One capture's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capture {
    /// The subject's bytes `start..end`.
    Span(usize, usize),
    /// A position capture (1-based, as Lua gives it).
    Position(usize),
}

/// A matcher of one pattern against one subject.
pub struct Matcher<'a, F: FnMut() -> bool> {
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    capture: [(usize, isize); MAX_CAPTURES],
    depth: u32,
    steps: u32,
    /// Called every [`CHECK_EVERY`] steps: true stops the match.
    stop: F,
}

impl<'a, F: FnMut() -> bool> Matcher<'a, F> {
    /// A matcher of `pat` against `src`, asking `stop` now and then.
    pub fn new(src: &'a [u8], pat: &'a [u8], stop: F) -> Self {
        Matcher {
            src,
            pat,
            level: 0,
            capture: [(0, 0); MAX_CAPTURES],
            depth: 0,
            steps: 0,
            stop,
        }
    }

    /// The end of a match of the pattern from byte `p` on, starting at
    /// `s` in the subject (the captures are then set).
    pub fn at(&mut self, s: usize, p: usize) -> Result<Option<usize>, Error> {
        self.level = 0;
        self.depth = 0;
        self.do_match(s, p)
    }

    /// Counts a step, and every [`CHECK_EVERY`] asks whether to stop.
    #[inline]
    fn step(&mut self) -> Result<(), Error> {
        self.steps += 1;
        if self.steps >= CHECK_EVERY {
            self.steps = 0;
            if (self.stop)() {
                return Err(Error::Stopped);
            }
        }
        Ok(())
    }

    /// The index after the single-character class at `p` (a long set
    /// counts as steps: it is scanned at each use).
    fn class_end(&mut self, p: usize) -> Result<usize, Error> {
        let end = self.class_end_of(p)?;
        self.steps = self.steps.saturating_add(((end - p) >> 5) as u32);
        Ok(end)
    }

    fn class_end_of(&self, mut p: usize) -> Result<usize, Error> {
        let pat = self.pat;
        let c = pat[p];
        p += 1;
        if c == b'%' {
            if p >= pat.len() {
                return Err(Error::Pattern("malformed pattern (ends with '%')"));
            }
            return Ok(p + 1);
        }
        if c == b'[' {
            if pat.get(p) == Some(&b'^') {
                p += 1;
            }
            // The first character is part of the set, even a `]`.
            loop {
                if p >= pat.len() {
                    return Err(Error::Pattern("malformed pattern (missing ']')"));
                }
                let c = pat[p];
                p += 1;
                if c == b'%' {
                    if p >= pat.len() {
                        return Err(Error::Pattern("malformed pattern (missing ']')"));
                    }
                    p += 1;
                }
                if pat.get(p) == Some(&b']') {
                    return Ok(p + 1);
                }
            }
        }
        Ok(p)
    }

    /// Whether `c` is in the set `[...]` from `p` (its `[`) to `ec` (its
    /// `]`).
    fn bracket(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let pat = self.pat;
        let mut sig = true;
        if pat[p + 1] == b'^' {
            sig = false;
            p += 1;
        }
        p += 1;
        while p < ec {
            if pat[p] == b'%' && p + 1 < ec {
                p += 1;
                if class(c, pat[p]) {
                    return sig;
                }
            } else if p + 2 < ec && pat[p + 1] == b'-' {
                if pat[p] <= c && c <= pat[p + 2] {
                    return sig;
                }
                p += 2;
            } else if pat[p] == c {
                return sig;
            }
            p += 1;
        }
        !sig
    }

    /// Whether `c` matches the single-character class at `p..ep`.
    fn single(&self, c: u8, p: usize, ep: usize) -> bool {
        match self.pat[p] {
            b'.' => true,
            b'%' => class(c, self.pat[p + 1]),
            b'[' => self.bracket(c, p, ep - 1),
            pc => pc == c,
        }
    }

    fn do_match(&mut self, s: usize, p: usize) -> Result<Option<usize>, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(Error::Pattern("pattern too complex"));
        }
        self.depth += 1;
        let r = self.match_here(s, p);
        self.depth -= 1;
        r
    }

    fn match_here(&mut self, mut s: usize, mut p: usize) -> Result<Option<usize>, Error> {
        let (src, pat) = (self.src, self.pat);
        loop {
            self.step()?;
            let Some(&pc) = pat.get(p) else {
                return Ok(Some(s));
            };
            match pc {
                b'(' if pat.get(p + 1) == Some(&b')') => {
                    return self.start_capture(s, p + 2, POSITION)
                }
                b'(' => return self.start_capture(s, p + 1, UNFINISHED),
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == pat.len() => {
                    return Ok((s == src.len()).then_some(s));
                }
                b'%' if pat.get(p + 1) == Some(&b'b') => match self.balance(s, p + 2)? {
                    Some(e) => {
                        s = e;
                        p += 4;
                        continue;
                    }
                    None => return Ok(None),
                },
                b'%' if pat.get(p + 1) == Some(&b'f') => {
                    p += 2;
                    if pat.get(p) != Some(&b'[') {
                        return Err(Error::Pattern("missing '[' after '%f' in pattern"));
                    }
                    let ep = self.class_end(p)?;
                    let prev = if s == 0 { 0 } else { src[s - 1] };
                    let cur = src.get(s).copied().unwrap_or(0);
                    if !self.bracket(prev, p, ep - 1) && self.bracket(cur, p, ep - 1) {
                        p = ep;
                        continue;
                    }
                    return Ok(None);
                }
                b'%' if pat.get(p + 1).is_some_and(u8::is_ascii_digit) => {
                    match self.back_reference(s, pat[p + 1])? {
                        Some(e) => {
                            s = e;
                            p += 2;
                            continue;
                        }
                        None => return Ok(None),
                    }
                }
                _ => {}
            }
            let ep = self.class_end(p)?;
            let m = s < src.len() && self.single(src[s], p, ep);
            match pat.get(ep) {
                Some(b'?') => {
                    if m {
                        if let Some(e) = self.do_match(s + 1, ep + 1)? {
                            return Ok(Some(e));
                        }
                    }
                    p = ep + 1;
                }
                Some(b'*') => return self.max_expand(s, p, ep),
                Some(b'+') => {
                    return if m {
                        self.max_expand(s + 1, p, ep)
                    } else {
                        Ok(None)
                    }
                }
                Some(b'-') => return self.min_expand(s, p, ep),
                _ => {
                    if !m {
                        return Ok(None);
                    }
                    s += 1;
                    p = ep;
                }
            }
        }
    }

    /// `x*` from `s`: as many as match, then fewer.
    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Result<Option<usize>, Error> {
        let mut i = 0;
        // (A set is scanned for each character.)
        let weight = ((ep - p) >> 5) as u32;
        while s + i < self.src.len() && self.single(self.src[s + i], p, ep) {
            self.steps = self.steps.saturating_add(weight);
            self.step()?;
            i += 1;
        }
        loop {
            if let Some(e) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(e));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    /// `x-` from `s`: as few as match, then more.
    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Result<Option<usize>, Error> {
        loop {
            if let Some(e) = self.do_match(s, ep + 1)? {
                return Ok(Some(e));
            }
            if s < self.src.len() && self.single(self.src[s], p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: isize) -> Result<Option<usize>, Error> {
        if self.level >= MAX_CAPTURES {
            return Err(Error::Pattern("too many captures"));
        }
        self.capture[self.level] = (s, what);
        self.level += 1;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.level -= 1;
        }
        Ok(r)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Result<Option<usize>, Error> {
        let Some(l) = (0..self.level)
            .rev()
            .find(|&l| self.capture[l].1 == UNFINISHED)
        else {
            return Err(Error::Pattern("invalid pattern capture"));
        };
        self.capture[l].1 = (s - self.capture[l].0) as isize;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.capture[l].1 = UNFINISHED;
        }
        Ok(r)
    }

    /// `%bxy` (`p` at `x`) from `s`.
    fn balance(&mut self, s: usize, p: usize) -> Result<Option<usize>, Error> {
        let Some(&[open, close]) = self.pat.get(p..p + 2) else {
            return Err(Error::Pattern(
                "malformed pattern (missing arguments to '%b')",
            ));
        };
        if self.src.get(s) != Some(&open) {
            return Ok(None);
        }
        let mut depth = 1;
        for i in s + 1..self.src.len() {
            self.step()?;
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
        }
        Ok(None)
    }

    /// `%1`..`%9` from `s`.
    fn back_reference(&mut self, s: usize, digit: u8) -> Result<Option<usize>, Error> {
        let l = usize::from(digit - b'0');
        if l == 0 || l > self.level || self.capture[l - 1].1 == UNFINISHED {
            return Err(Error::Pattern("invalid capture index"));
        }
        let (start, len) = self.capture[l - 1];
        if len == POSITION {
            // (Lua compares a length of (size_t)-2 bytes: no match.)
            return Ok(None);
        }
        let len = len as usize;
        let src = self.src;
        self.steps = self.steps.saturating_add((len / 64) as u32);
        Ok((src.len() - s >= len && src[start..start + len] == src[s..s + len]).then_some(s + len))
    }

    /// Captures of the last match, `start..end` (or the whole match when
    /// the pattern has none).
    pub fn captures(&self, start: usize, end: usize) -> Result<Vec<Capture>, Error> {
        let n = if self.level == 0 { 1 } else { self.level };
        (0..n).map(|i| self.capture(i, start, end)).collect()
    }

    /// Capture `i` (0-based) of the last match `start..end`.
    pub fn capture(&self, i: usize, start: usize, end: usize) -> Result<Capture, Error> {
        if i >= self.level {
            if i == 0 {
                return Ok(Capture::Span(start, end));
            }
            return Err(Error::Pattern("invalid capture index"));
        }
        match self.capture[i] {
            (_, UNFINISHED) => Err(Error::Pattern("unfinished capture")),
            (at, POSITION) => Ok(Capture::Position(at + 1)),
            (at, len) => Ok(Capture::Span(at, at + len as usize)),
        }
    }

    /// The number of captures the last match set.
    pub fn level(&self) -> usize {
        self.level
    }
}

/// Whether `c` is in the class `%cl` (C's locale: ASCII).
fn class(c: u8, cl: u8) -> bool {
    let r = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return cl == c,
    };
    if cl.is_ascii_uppercase() {
        !r
    } else {
        r
    }
}

/// A start position as Lua gives it (1-based, negative from the end) as
/// an index into a subject of `len` bytes, clamped to `0..=len` (5.1's
/// `str_find_aux`).
pub fn start_index(init: i64, len: usize) -> usize {
    let len = len as i64;
    let i = if init < 0 { len + init + 1 } else { init };
    (i.max(1) - 1).min(len) as usize
}

/// Where `pat` first occurs in `src` from `from` on, as plain text.
pub fn find_plain(src: &[u8], pat: &[u8], from: usize) -> Option<usize> {
    memchr::memmem::find(&src[from..], pat).map(|i| i + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `string.find(src, pat)`'s start, end and captures, as text.
    fn find(src: &str, pat: &str) -> Result<Option<String>, Error> {
        let (src, pat) = (src.as_bytes(), pat.as_bytes());
        let (anchor, p) = if pat.first() == Some(&b'^') {
            (true, 1)
        } else {
            (false, 0)
        };
        let mut m = Matcher::new(src, pat, || false);
        for s in 0..=src.len() {
            if let Some(e) = m.at(s, p)? {
                let mut out = format!("{} {}", s + 1, e);
                if m.level() > 0 {
                    for c in m.captures(s, e)? {
                        match c {
                            Capture::Span(a, b) => {
                                out += &format!(" '{}'", std::str::from_utf8(&src[a..b]).unwrap())
                            }
                            Capture::Position(p) => out += &format!(" {p}"),
                        }
                    }
                }
                return Ok(Some(out));
            }
            if anchor {
                break;
            }
        }
        Ok(None)
    }

    /// Answers checked against LuaJIT 2.1's `string.find`.
    #[test]
    fn as_lua_5_1() {
        for (src, pat, want) in [
            ("hello world", "o w", Some("5 7")),
            ("hello world", "l+", Some("3 4")),
            ("hello world", "^h", Some("1 1")),
            ("hello world", "^w", None),
            ("hello world", "d$", Some("11 11")),
            ("hello", "l*", Some("1 0")),
            ("hello", "x?h", Some("1 1")),
            ("hello", "h.-l", Some("1 3")),
            ("hello", "h.*l", Some("1 4")),
            (
                "key = value",
                "(%w+)%s*=%s*(%w+)",
                Some("1 11 'key' 'value'"),
            ),
            ("abc", "()b()", Some("2 2 2 3")),
            ("f(a(b)c)d", "%b()", Some("2 8")),
            ("THE (quick) fox", "%f[%a]%a+", Some("1 3")),
            ("THE (quick) fox", "%f[%l]%a+", Some("6 10")),
            ("abcabc", "(abc)%1", Some("1 6 'abc'")),
            ("a]b", "[]]", Some("2 2")),
            ("a-b", "[a%-]+", Some("1 2")),
            ("x9y", "[^%a]", Some("2 2")),
            ("Z", "[a-z]", None),
            ("m", "[a-z]", Some("1 1")),
            ("a.b", "%.", Some("2 2")),
            ("a\0b", "%z", Some("2 2")),
            ("  x", "%S", Some("3 3")),
            ("aaa", "a-$", Some("1 3")),
            ("a$b", "$b", Some("2 3")),
            ("", "", Some("1 0")),
            ("x", "()", Some("1 0 1")),
        ] {
            assert_eq!(find(src, pat).unwrap().as_deref(), want, "{src:?} {pat:?}");
        }
        for (pat, why) in [
            ("%", "malformed pattern (ends with '%')"),
            ("[a", "malformed pattern (missing ']')"),
            ("(a", "unfinished capture"),
            ("a)", "invalid pattern capture"),
            ("%1", "invalid capture index"),
            ("%f", "missing '[' after '%f' in pattern"),
            ("%b", "malformed pattern (missing arguments to '%b')"),
        ] {
            assert_eq!(find("a", pat), Err(Error::Pattern(why)), "{pat:?}");
        }
        let deep = "a?".repeat(300);
        assert_eq!(
            find(&"a".repeat(300), &deep),
            Err(Error::Pattern("pattern too complex"))
        );
    }

    /// A pattern that backtracks for ever is stopped by its budget.
    #[test]
    fn a_backtracking_pattern_stops() {
        let src = "a".repeat(200);
        let pat = "a*".repeat(4) + "b";
        let mut asked = 0;
        let mut m = Matcher::new(src.as_bytes(), pat.as_bytes(), || {
            asked += 1;
            asked == 10
        });
        let mut r = Ok(None);
        for s in 0..=src.len() {
            r = m.at(s, 0);
            if r != Ok(None) {
                break;
            }
        }
        assert_eq!(r, Err(Error::Stopped));
        assert_eq!(asked, 10);
    }
}
