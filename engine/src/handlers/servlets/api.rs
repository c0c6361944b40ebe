//! What a servlet sees: the request table, the response object, and the
//! `brisk` library (JSON, escaping, forms, the shared dictionary).

use crate::ascii::IgnoreCase;
use std::io::Write as _;
use std::time::{Duration, Instant};

use mlua::{Lua, LuaString, Table, Value};

use super::ffi::{heap, raw, req, res};
use super::shared::{self, Stored};
use crate::handlers::app::{check_header_bytes, Request};
use crate::http::{form, json};

/// Output gathered before it goes to the client in one piece.
pub const PIECE: usize = 64 * 1024;

/// What the response object gathers.
#[derive(Debug, Default)]
pub struct Out {
    pub status: u16,
    /// Header lines (`Name: value\r\n`).
    pub headers: Vec<u8>,
    /// Body bytes not yet handed to the engine.
    pub body: Vec<u8>,
    /// Body bytes written in all.
    pub written: u64,
    /// The head has gone out (a streamed answer): no more header lines.
    pub head_sent: bool,
    /// `servlets.max_output`.
    pub max: u64,
    /// The length of each header line's name, and of the line.
    lines: Vec<(usize, usize)>,
    /// The last answer's `headers` and `lines` (swapped in here when an
    /// answer starts): a line written again where it was passed the
    /// checks then ([`Out::header_text`]).
    checked: Vec<u8>,
    checked_lines: Vec<(usize, usize)>,
    /// The lines so far are the last answer's first ones.
    as_checked: bool,
}

thread_local! {
    /// The `Out` of the request running on this thread (null: none), the
    /// only one its `res` methods serve ([`Running`]).
    static RUNNING_OUT: std::cell::Cell<*const Out> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// While alive, `out`'s request is the one running: its `res` writes
/// there, and a `res` of another request (kept in a global, the worker
/// having handed its object on to a streamed answer) is refused.
pub struct Running(());

impl Running {
    pub fn start(out: &std::rc::Rc<std::cell::RefCell<Out>>) -> Running {
        RUNNING_OUT.set(out.as_ptr().cast_const());
        Running(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING_OUT.set(std::ptr::null());
    }
}

fn lua_err(msg: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(msg.into())
}

fn not_utf8() -> String {
    "res:write: a header that is not UTF-8".to_string()
}

impl Out {
    /// Readies the object for a new answer of at most `max` bytes; the
    /// header lines written go to `checked`.
    pub fn reset(&mut self, max: u64) {
        self.status = 200;
        std::mem::swap(&mut self.headers, &mut self.checked);
        std::mem::swap(&mut self.lines, &mut self.checked_lines);
        self.headers.clear();
        self.lines.clear();
        self.as_checked = true;
        self.body.clear();
        self.written = 0;
        self.head_sent = false;
        self.max = max;
        // What one large answer grew is not kept for the next ones.
        if self.body.capacity() > 2 * PIECE {
            self.body = Vec::new();
        }
        if self.headers.capacity() > PIECE {
            self.headers = Vec::new();
        }
        if self.checked.len() > PIECE {
            self.checked = Vec::new();
            self.checked_lines = Vec::new();
        }
        if self.lines.capacity() > 1024 {
            self.lines = Vec::new();
        }
    }

    /// A header line `name: value` (the value without its surrounding
    /// white space), once `name` and `value` pass [`check_header_bytes`]
    /// (and are UTF-8 if `utf8`; else the caller made sure).
    ///
    /// A servlet writes the same lines answer after answer (checking a
    /// `Content-Type` was 280 of a hello request's 10,000 instructions),
    /// so a line is not checked again if the last answer's line of the
    /// same rank has the same bytes and its name the same length, every
    /// line before it the same: its name and value are this one's, and
    /// passed the checks, which ask the same of a value with or without
    /// white space around it. (Bytes alone would not do: "A" = "b\r\nC: d"
    /// is two valid lines' bytes, and "A: b" = "c" those of "A" = "b: c".)
    fn header_text(&mut self, name: &[u8], value: &[u8], utf8: bool) -> Result<(), String> {
        if self.head_sent {
            return Err("the response head has been sent already".into());
        }
        let start = self.headers.len();
        self.headers.extend_from_slice(name);
        self.headers.extend_from_slice(b": ");
        self.headers
            .extend_from_slice(crate::http::grammar::trim_ows(value));
        self.headers.extend_from_slice(b"\r\n");
        if self.answer_len(1) > self.max {
            // The lines are gathered outside the Lua state, where
            // servlets.memory does not count them: without a bound, a
            // loop of res:header with one 1 MiB value grew the worker by
            // 700 MB within a 1 s cpu_time.
            self.headers.truncate(start);
            return Err(self.too_long());
        }
        let line = &self.headers[start..];
        let shape = (name.len(), line.len());
        self.as_checked = self.as_checked
            && self.checked_lines.get(self.lines.len()) == Some(&shape)
            && self.checked.get(start..start + line.len()) == Some(line);
        if !self.as_checked {
            if let Err(e) = check(name, value, utf8) {
                self.headers.truncate(start);
                return Err(e);
            }
        }
        if !self.lines.is_empty() && is_singleton(name) {
            self.drop_line(name);
        }
        self.lines.push(shape);
        Ok(())
    }

    /// Takes out the header line named `name` (any case), if there is
    /// one (a singleton field's: there is at most one).
    fn drop_line(&mut self, name: &[u8]) {
        let mut at = 0;
        for (i, &(name_len, line_len)) in self.lines.iter().enumerate() {
            if name_len == name.len() && self.headers[at..at + name_len].eq_ignore_case(name) {
                self.headers.drain(at..at + line_len);
                self.lines.remove(i);
                // The lines from here on are not the last answer's.
                self.as_checked = false;
                return;
            }
            at += line_len;
        }
    }
}

/// A field of which an answer has one line (RFC 9110 §5.3: only a list
/// field, or Set-Cookie, may be repeated): written again, the last value
/// replaces the first, as a Lua table's entry (ngx.header's, mod_magnet's
/// resp_header's). Two Content-Type lines went out as written, which a
/// CGI script's head is refused for (502).
fn is_singleton(name: &[u8]) -> bool {
    const ONE: [&[u8]; 10] = [
        b"content-type",
        b"location",
        b"content-location",
        b"content-disposition",
        b"content-range",
        b"etag",
        b"last-modified",
        b"expires",
        b"age",
        b"retry-after",
    ];
    ONE.iter().any(|n| n.eq_ignore_case(name))
}

impl Out {
    /// What the answer holds so far, as `servlets.max_output` counts it:
    /// its body bytes and header lines, each with the shape kept of it
    /// (`lines`), `more` lines of which are not in `lines` yet.
    fn answer_len(&self, more: usize) -> u64 {
        let shapes = (self.lines.len() + more) * std::mem::size_of::<(usize, usize)>();
        self.written
            .saturating_add((self.headers.len() + shapes) as u64)
    }

    fn too_long(&self) -> String {
        format!(
            "the answer is longer than servlets.max_output ({} bytes)",
            self.max
        )
    }

    /// A 205 answer has no content (RFC 9110 §15.3.6: a server must not
    /// generate any): refused as soon as the status and a body meet.
    fn reset_content_is_empty(&self) -> Result<(), String> {
        match (self.status, self.written) {
            (205, 1..) => Err("a 205 (Reset Content) answer has no body".into()),
            _ => Ok(()),
        }
    }
}

/// The checks of [`Out::header_text`].
fn check(name: &[u8], value: &[u8], utf8: bool) -> Result<(), String> {
    if utf8 {
        // (ASCII is UTF-8: only other bytes need the full check.)
        for b in [name, value] {
            if !b.is_ascii() && std::str::from_utf8(b).is_err() {
                return Err(not_utf8());
            }
        }
    }
    check_header_bytes(name, value).map_err(|e| e.0.to_string())
}

/// `res`'s methods (`ffi::res` calls them).
impl res::Answer for Out {
    fn status(&mut self, status: i64) -> Result<(), String> {
        if self.head_sent {
            return Err("the response head has been sent already".into());
        }
        if !(200..=599).contains(&status) {
            return Err(format!("{status} is not a final status (200-599)"));
        }
        self.status = status as u16;
        self.reset_content_is_empty()
    }

    fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), String> {
        self.header_text(name, value, true)
    }

    fn body(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.written += bytes.len() as u64;
        self.reset_content_is_empty()?;
        if self.answer_len(0) > self.max {
            return Err(self.too_long());
        }
        self.body.extend_from_slice(bytes);
        Ok(())
    }

    fn redirect(&mut self, url: &[u8], status: Option<i64>) -> Result<(), String> {
        let status = status.unwrap_or(302);
        if !(300..=399).contains(&status) {
            return Err("a redirect's status is 3xx".into());
        }
        let url = std::str::from_utf8(url).map_err(|_| "res:redirect: a URL that is not UTF-8")?;
        self.status(status)?;
        self.header_text(b"Location", url.as_bytes(), false)
    }

    fn live(&self) -> bool {
        RUNNING_OUT.get() == std::ptr::from_ref(self)
    }

    /// A piece's worth: the servlet yields, and it leaves.
    fn gathered(&self) -> bool {
        self.body.len() >= PIECE
    }
}

/// Runs `run`, a servlet's run for `req`, which makes its request table
/// (`ffi::req::new_request`): `req[1]` one string of the method, path,
/// query, remote_addr and user ([`BASIC`]) and the header fields
/// (`req::parts`), `req[2]` the body (if not empty). Through the
/// metatable's `__index` (the prelude's `Req`), the named fields are made
/// on first use from those two: the strings, `body`, and `headers` and
/// `cookies` from the fields, as `args` from the query ([`lazy_field`];
/// it also gives `form`). A servlet that reads none of them makes none of
/// them (a string made is hashed, a field set is a table insertion: 2,000
/// instructions of a hello servlet's request that reads none).
pub fn request<R>(req: &Request<'_>, run: impl FnOnce() -> R) -> R {
    // In this thread's buffer (taken out while in use: nothing is
    // allocated once it has grown to a request's size).
    let mut raw = RAW.take();
    raw.clear();
    let mut text = [0u8; 64];
    for part in [
        Some(req.method),
        Some(req.path),
        req.query,
        Some(peer_text(req.peer.ip(), &mut text)),
        req.user,
    ] {
        req::put_part(&mut raw, part);
    }
    for h in req.headers {
        for part in [h.name, h.value] {
            req::put_part(&mut raw, Some(part));
        }
    }
    let lent = req::lend(&raw, req.body);
    let r = run();
    drop(lent);
    RAW.set(raw);
    r
}

/// The strings before the header fields in `req[1]`, in order (the
/// prelude's `basic` table, in `mod.rs`, numbers them the same).
pub const BASIC: usize = 5;

/// The client's address as text in `buf` (on the stack: no String).
fn peer_text(ip: std::net::IpAddr, buf: &mut [u8; 64]) -> &[u8] {
    let std::net::IpAddr::V4(v4) = ip else {
        let mut w = &mut buf[..];
        let _ = write!(w, "{ip}");
        let len = 64 - w.len();
        return &buf[..len];
    };
    // (Mostly the same client as the last request's: 60 instructions.)
    let (ip, mut text, len) = LAST_PEER.get();
    let len = if ip == v4 && len > 0 {
        len
    } else {
        let len = crate::http::ipv4_text(v4, &mut text).len();
        LAST_PEER.set((v4, text, len));
        len
    };
    buf[..len].copy_from_slice(&text[..len]);
    &buf[..len]
}

/// The header fields kept in `req[1]` (see [`request`]), after the
/// [`BASIC`] strings. A servlet may have put anything there: what does
/// not parse ends the list.
fn raw_fields(raw: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut parts = req::parts(raw).skip(BASIC);
    std::iter::from_fn(move || Some((parts.next()??, parts.next()??)))
}

/// Which lazy field of the request table [`lazy_field`] makes (the
/// numbers the prelude's `lazy` table gives, in `mod.rs`).
const LAZY_ARGS: i64 = 1;
/// `req.headers`.
const LAZY_HEADERS: i64 = 2;
/// `req.cookies`.
const LAZY_COOKIES: i64 = 3;

/// `req.args` (from `src`, the query: a table of its decoded fields,
/// the first of a repeated name kept), `req.headers` (from `src`, the
/// raw fields: names in lower case, `headers_mt` finds any case, the
/// first of a repeated field kept) or `req.cookies` (from the raw
/// fields' Cookie headers, the first of a repeated name kept).
pub fn lazy_field(lua: &Lua, which: i64, src: Value, headers_mt: &Table) -> mlua::Result<Table> {
    let (mut n, mut v) = DECODED.take();
    let built = req::build(lua, (src, headers_mt), 0, |b| {
        let src = b.arg_bytes(1).unwrap_or_default();
        match which {
            LAZY_ARGS => {
                for (raw_n, raw_v) in form::urlencoded_raw(src) {
                    n.clear();
                    v.clear();
                    form::percent_decode(raw_n, true, &mut n);
                    form::percent_decode(raw_v, true, &mut v);
                    b.set_first(&n, &v);
                }
            }
            LAZY_HEADERS => {
                b.set_metatable_arg(2);
                for (name, value) in raw_fields(src) {
                    // A repeated field keeps its first value.
                    n.clear();
                    n.extend_from_slice(name);
                    n.make_ascii_lowercase();
                    b.set_first(&n, value);
                }
            }
            LAZY_COOKIES => {
                for (name, value) in raw_fields(src) {
                    if !name.eq_ignore_case(b"cookie") {
                        continue;
                    }
                    for c in value.split(|&b| b == b';') {
                        let c = c.trim_ascii();
                        if let Some(eq) = c.iter().position(|&b| b == b'=') {
                            let v = c[eq + 1..].trim_ascii();
                            let v = v
                                .strip_prefix(b"\"")
                                .and_then(|v| v.strip_suffix(b"\""))
                                .unwrap_or(v);
                            // The first of a repeated name, as args and
                            // headers (RFC 6265 §5.4: a user agent sends
                            // the most specific path's first).
                            b.set_first(&c[..eq], v);
                        }
                    }
                }
            }
            _ => {}
        }
    });
    DECODED.set((n, v));
    built
}

thread_local! {
    /// The last client's IPv4 address and its text (`peer_text`).
    static LAST_PEER: std::cell::Cell<(std::net::Ipv4Addr, [u8; 15], usize)> =
        const { std::cell::Cell::new((std::net::Ipv4Addr::UNSPECIFIED, [0; 15], 0)) };
    /// A request's `req[1]` while its table is made (reused by each
    /// request).
    static RAW: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// Names and values decoded or lowered (reused by each call).
    static DECODED: std::cell::Cell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// Adds decoded `name = value` fields to `t` (a repeated name keeps its
/// first value).
fn fill_fields(lua: &Lua, t: &Table, fields: Vec<(Vec<u8>, Vec<u8>)>) -> mlua::Result<()> {
    for (n, v) in fields {
        let n = lua.create_string(n)?;
        if t.raw_get::<Value>(&n)?.is_nil() {
            t.raw_set(n, lua.create_string(v)?)?;
        }
    }
    Ok(())
}

/// `req:form()`: the body's fields, by its Content-Type: urlencoded
/// (`name = value`) or multipart (`name = value`, and an uploaded file
/// as `name = {filename =, type =, data =}`); nil and a message for a
/// body that is neither or is malformed.
pub fn form(lua: &Lua, req: &Table) -> mlua::Result<(Value, Option<String>)> {
    // (`get`: the headers table and the body string may not be made yet.)
    let headers: Table = req.get("headers")?;
    let ctype: Option<LuaString> = headers.raw_get("content-type")?;
    let body: LuaString = req.get("body")?;
    let body = body.as_bytes();
    let ctype = ctype.map(|c| c.as_bytes().to_vec()).unwrap_or_default();
    let out = lua.create_table()?;
    let kind = ctype
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    if kind.eq_ignore_case(b"application/x-www-form-urlencoded") {
        fill_fields(lua, &out, form::urlencoded(&body))?;
        return Ok((Value::Table(out), None));
    }
    let Some(boundary) = form::boundary(&ctype) else {
        return Ok((Value::Nil, Some("not a form (Content-Type)".into())));
    };
    match form::multipart(&body, boundary) {
        Err(e) => Ok((
            Value::Nil,
            Some(format!("malformed multipart body: {}", e.0)),
        )),
        Ok(parts) => {
            for p in parts {
                let name = lua.create_string(&p.name)?;
                if !out.raw_get::<Value>(&name)?.is_nil() {
                    continue;
                }
                match p.filename {
                    None => out.raw_set(name, lua.create_string(p.data)?)?,
                    Some(f) => {
                        let file = lua.create_table()?;
                        file.raw_set("filename", lua.create_string(f)?)?;
                        if let Some(t) = p.content_type {
                            file.raw_set("type", lua.create_string(t)?)?;
                        }
                        file.raw_set("data", lua.create_string(p.data)?)?;
                        out.raw_set(name, file)?;
                    }
                }
            }
            Ok((Value::Table(out), None))
        }
    }
}

/// A decoded JSON value as a Lua value (`null` as `brisk.json.null`).
pub fn json_to_lua(lua: &Lua, v: json::Json, null: &Value) -> mlua::Result<Value> {
    Ok(match v {
        json::Json::Null => null.clone(),
        json::Json::Bool(b) => Value::Boolean(b),
        json::Json::Int(i) => Value::Integer(i),
        json::Json::Float(f) => Value::Number(f),
        json::Json::Str(s) => Value::String(lua.create_string(s)?),
        json::Json::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, json_to_lua(lua, item, null)?)?;
            }
            Value::Table(t)
        }
        json::Json::Object(members) => {
            let t = lua.create_table_with_capacity(0, members.len())?;
            for (k, item) in members {
                t.raw_set(k, json_to_lua(lua, item, null)?)?;
            }
            Value::Table(t)
        }
    })
}

/// The text a Rust helper builds for a servlet, outside Lua's heap, if it
/// fits in `heap::outside_room`: `len` bytes, then made by `make`.
fn within_memory(
    lua: &Lua,
    what: &str,
    len: usize,
    make: impl FnOnce() -> Vec<u8>,
) -> mlua::Result<LuaString> {
    if len > heap::outside_room(lua) {
        return Err(mlua::Error::MemoryError(format!(
            "{what}: the result does not fit in servlets.memory"
        )));
    }
    lua.create_string(make())
}

/// The length of [`html_escape`]'s result.
fn html_escaped_len(s: &[u8]) -> usize {
    s.iter().fold(0, |n, &b| {
        n + match b {
            b'&' | b'\'' => 5,
            b'<' | b'>' => 4,
            b'"' => 6,
            _ => 1,
        }
    })
}

/// The length of [`url_escape`]'s result.
fn url_escaped_len(s: &[u8]) -> usize {
    s.iter().map(|&b| if unreserved(b) { 1 } else { 3 }).sum()
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// The most Rust memory `json::decode` may take for `len` bytes of text,
/// before the value is copied into Lua: a value for each byte that may
/// start one (each `,` `:` `[` `{`, and one), strings at most the text.
fn json_decode_bound(text: &[u8]) -> usize {
    let starts = text
        .iter()
        .filter(|&&b| matches!(b, b',' | b':' | b'[' | b'{'))
        .count()
        + 1;
    starts * (2 * size_of::<json::Json>() + size_of::<String>()) + text.len()
}

/// `&<>"'` as HTML character references.
pub fn html_escape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 16);
    for &b in s {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&#39;"),
            b => out.push(b),
        }
    }
    out
}

/// Percent-encodes all but RFC 3986's unreserved characters.
pub fn url_escape(s: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(s.len() * 3);
    for &b in s {
        if unreserved(b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
    out
}

/// The `brisk.shared` value of a Lua value.
fn stored(v: Value) -> mlua::Result<Stored> {
    Ok(match v {
        Value::String(s) => Stored::Str(s.as_bytes().to_vec()),
        Value::Integer(i) => Stored::Num(i as f64),
        Value::Number(n) => Stored::Num(n),
        Value::Boolean(b) => Stored::Bool(b),
        _ => return Err(lua_err("brisk.shared holds strings, numbers and booleans")),
    })
}

fn unstored(lua: &Lua, v: Option<Stored>) -> mlua::Result<Value> {
    Ok(match v {
        None => Value::Nil,
        Some(Stored::Str(s)) => Value::String(lua.create_string(s)?),
        Some(Stored::Num(n)) if n.fract() == 0.0 && n.abs() < 9e15 => Value::Integer(n as i64),
        Some(Stored::Num(n)) => Value::Number(n),
        Some(Stored::Bool(b)) => Value::Boolean(b),
    })
}

thread_local! {
    /// `brisk.json.encode`'s buffers, reused by each call.
    static JSON_ENC: std::cell::Cell<raw::Encoder> =
        const { std::cell::Cell::new(raw::Encoder::new()) };
}

/// Larger encode buffers are let go after use rather than kept.
const JSON_OUT_KEEP: usize = 1 << 20;

/// The `brisk` library table.
pub fn library(lua: &Lua, site: &[u8]) -> mlua::Result<Table> {
    let brisk = lua.create_table()?;
    let j = lua.create_table()?;
    let null = raw::null_sentinel(lua)?;
    j.raw_set("null", null.clone())?;
    let null_t = null.clone();
    j.raw_set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            // One set per worker, taken out while in use (an encode that
            // runs inside another, from a finalizer, makes its own).
            let mut enc = JSON_ENC.take();
            let encoded = raw::encode(lua, v, &null_t, &mut enc);
            let s = match encoded {
                Ok(Ok(())) => lua.create_string(&enc.out),
                Ok(Err(e)) => Err(lua_err(format!("brisk.json.encode: {e}"))),
                Err(e) => Err(e),
            };
            if enc.capacity() <= JSON_OUT_KEEP {
                JSON_ENC.set(enc);
            }
            s
        })?,
    )?;
    let null_v = Value::UserData(null);
    j.raw_set(
        "decode",
        lua.create_function(move |lua, s: LuaString| {
            let text = s.as_bytes();
            // The value is built in Rust first (outside Lua's heap).
            if json_decode_bound(&text) > heap::outside_room(lua) {
                return Err(mlua::Error::MemoryError(
                    "brisk.json.decode: the value does not fit in servlets.memory".into(),
                ));
            }
            match json::decode(&text) {
                Ok(v) => Ok((json_to_lua(lua, v, &null_v)?, Value::Nil)),
                Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e.to_string())?))),
            }
        })?,
    )?;
    brisk.raw_set("json", j)?;
    brisk.raw_set(
        "html_escape",
        lua.create_function(|lua, s: LuaString| {
            let s = s.as_bytes();
            within_memory(lua, "brisk.html_escape", html_escaped_len(&s), || {
                html_escape(&s)
            })
        })?,
    )?;
    brisk.raw_set(
        "url_escape",
        lua.create_function(|lua, s: LuaString| {
            let s = s.as_bytes();
            within_memory(lua, "brisk.url_escape", url_escaped_len(&s), || {
                url_escape(&s)
            })
        })?,
    )?;
    brisk.raw_set(
        "url_unescape",
        lua.create_function(|lua, s: LuaString| {
            let mut out = Vec::new();
            form::percent_decode(&s.as_bytes(), true, &mut out);
            lua.create_string(out)
        })?,
    )?;
    let sh = lua.create_table()?;
    // (Each key is the site's: shared::site_key.)
    let site: std::rc::Rc<[u8]> = site.into();
    let key = move |k: &LuaString| shared::site_key(&site, &k.as_bytes());
    let (k1, k2, k3, k4) = (key.clone(), key.clone(), key.clone(), key);
    sh.raw_set(
        "get",
        lua.create_function(move |lua, (_, k): (Value, LuaString)| {
            unstored(lua, shared::get(&k1(&k), Instant::now()))
        })?,
    )?;
    sh.raw_set(
        "set",
        lua.create_function(
            move |_, (_, k, v, ttl): (Value, LuaString, Value, Option<f64>)| {
                let k = k2(&k);
                let now = Instant::now();
                let expires = match ttl {
                    Some(t) if t > 0.0 && t.is_finite() => {
                        Some(now + Duration::from_secs_f64(t.min(1e9)))
                    }
                    _ => None,
                };
                if v.is_nil() {
                    shared::delete(&k);
                    return Ok(true);
                }
                Ok(shared::set(&k, stored(v)?, expires, now))
            },
        )?,
    )?;
    sh.raw_set(
        "incr",
        lua.create_function(move |lua, (_, k, by): (Value, LuaString, Option<f64>)| {
            let sum = shared::incr(&k3(&k), by.unwrap_or(1.0), Instant::now());
            unstored(lua, sum.map(Stored::Num))
        })?,
    )?;
    sh.raw_set(
        "delete",
        lua.create_function(move |_, (_, k): (Value, LuaString)| {
            shared::delete(&k4(&k));
            Ok(())
        })?,
    )?;
    brisk.raw_set("shared", sh)?;
    Ok(brisk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use res::Answer as _;

    /// The header lines `out` gathers from `lines` in a new answer, or
    /// the first refusal.
    fn answer(out: &mut Out, lines: &[(&[u8], &[u8])]) -> Result<Vec<u8>, String> {
        out.reset(1 << 20);
        for (name, value) in lines {
            out.header(name, value)?;
        }
        Ok(out.headers.clone())
    }

    #[test]
    fn client_addresses_as_text() {
        let mut buf = [0u8; 64];
        for (ip, text) in [
            ("0.0.0.0", "0.0.0.0"),
            ("127.0.0.1", "127.0.0.1"),
            ("127.0.0.1", "127.0.0.1"),
            ("10.200.3.45", "10.200.3.45"),
            ("::1", "::1"),
            ("127.0.0.1", "127.0.0.1"),
            ("255.255.255.255", "255.255.255.255"),
        ] {
            let ip: std::net::IpAddr = ip.parse().unwrap();
            assert_eq!(peer_text(ip, &mut buf), text.as_bytes());
        }
    }

    #[test]
    fn header_lines_written_again_are_checked_as_the_first_time() {
        let mut out = Out::default();
        let two: [(&[u8], &[u8]); 2] = [(b"A", b"b"), (b"C", b"d")];
        for _ in 0..3 {
            assert_eq!(answer(&mut out, &two).unwrap(), b"A: b\r\nC: d\r\n");
        }
        // The same bytes as the two lines, in one: a value with CR LF.
        let err = answer(&mut out, &[(b"A", b"b\r\nC: d")]).unwrap_err();
        assert!(err.contains("control character"), "{err}");
        assert_eq!(out.headers, b"", "a refused line is not kept");
        // The same bytes as a valid line, with a name holding a colon.
        answer(&mut out, &[(b"A", b"b: c")]).unwrap();
        let err = answer(&mut out, &[(b"A: b", b"c")]).unwrap_err();
        assert!(err.contains("not a valid header name"), "{err}");
        // A line after a different one is checked, white space trimmed
        // or not; a framing field is refused wherever it comes.
        answer(&mut out, &[(b"X", b"1"), (b"A", b" b ")]).unwrap();
        assert_eq!(
            answer(&mut out, &[(b"X", b"2"), (b"A", b"b")]).unwrap(),
            b"X: 2\r\nA: b\r\n"
        );
        let err = answer(&mut out, &[(b"X", b"2"), (b"Content-Length", b"1")]).unwrap_err();
        assert!(err.contains("written by the server"), "{err}");
        assert!(answer(&mut out, &[(b"X", b"\xff")]).is_err(), "not UTF-8");
        assert!(answer(&mut out, &[(b"X", b"\x01")]).is_err());
        assert_eq!(answer(&mut out, &[(b"X", b"2")]).unwrap(), b"X: 2\r\n");
    }

    #[test]
    fn escapes() {
        assert_eq!(
            html_escape(b"<a href=\"x\">'&'</a>"),
            b"&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(url_escape("a b/é~".as_bytes()), b"a%20b%2F%C3%A9~");
        for s in [&b"<a href=\"x\">'&'</a>"[..], "a b/é~".as_bytes(), b""] {
            assert_eq!(html_escaped_len(s), html_escape(s).len());
            assert_eq!(url_escaped_len(s), url_escape(s).len());
        }
    }

    /// A state with the `brisk` library as a global.
    fn with_library() -> Lua {
        let lua = Lua::new();
        lua.globals()
            .raw_set("brisk", library(&lua, b"").unwrap())
            .unwrap();
        lua
    }

    /// `brisk.json.encode` of the Lua expression `expr`.
    fn encode(lua: &Lua, expr: &str) -> Result<String, String> {
        lua.load(format!("return brisk.json.encode({expr})"))
            .eval::<String>()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn json_encode_exact() {
        let lua = with_library();
        for (expr, want) in [
            ("nil", "null"),
            ("true", "true"),
            ("-42", "-42"),
            ("-2^63", "-9223372036854775808"),
            ("-0.0", "-0.0"),
            ("2.5", "2.5"),
            ("1e300", "1e300"),
            ("2^53", "9007199254740992"),
            ("2^63", "9.223372036854776e18"),
            (r#"'a"b\\c\n<&>'"#, r#""a\"b\\c\n\u003c\u0026\u003e""#),
            ("{}", "[]"),
            ("{1, 'two', {3}}", "[1,\"two\",[3]]"),
            ("{k = {x = false}}", "{\"k\":{\"x\":false}}"),
            ("{[7] = 'seven'}", "{\"7\":\"seven\"}"),
            // Every entry, whatever the border: an array of 1..max with
            // its holes null while max is at most twice the entries,
            // else an object.
            ("{1, 2, nil, 4}", "[1,2,null,4]"),
            ("{[1] = 1, [3] = 3}", "[1,null,3]"),
            ("{1, 2, x = 5}", "{\"1\":1,\"2\":2,\"x\":5}"),
            ("{1, 2, [0] = 0}", "{\"0\":0,\"1\":1,\"2\":2}"),
            (
                "(function() local t = {} t[100] = 100 return t end)()",
                "{\"100\":100}",
            ),
            (
                "(function() local t = {1, 2, 3, 4} t[4] = nil t[2] = nil return t end)()",
                "[1,null,3]",
            ),
            ("brisk.json.null", "null"),
            ("{a = brisk.json.null}", "{\"a\":null}"),
            (
                "brisk.json.decode('{\"k\":[1,2.5,\"s\",null]}')",
                "{\"k\":[1,2.5,\"s\",null]}",
            ),
        ] {
            assert_eq!(encode(&lua, expr).as_deref(), Ok(want), "{expr}");
        }
        for (expr, why) in [
            ("0/0", "not a finite number"),
            ("{[true] = 1}", "a key that is not a string"),
            ("{print}", "a value JSON cannot hold"),
            ("'\\xff'", "a string that is not UTF-8"),
            (
                "(function() local t = {} t[1] = t return t end)()",
                "nested too deeply",
            ),
        ] {
            let err = encode(&lua, expr).unwrap_err();
            assert!(
                err.contains(&format!("brisk.json.encode: {why}")),
                "{expr}: {err}"
            );
        }
        // Nested up to the limit, objects and arrays in turn (the stack
        // is grown every 8 levels; debug builds check Lua's API use).
        let deep: String = lua
            .load(
                "local v = 1 for i = 1, 127 do if i % 2 == 0 then v = {v} else v = {k = v} end end \
                 return brisk.json.encode(v)",
            )
            .eval()
            .unwrap();
        let mut want = "1".to_string();
        for i in 1..=127 {
            want = if i % 2 == 0 {
                format!("[{want}]")
            } else {
                format!("{{\"k\":{want}}}")
            };
        }
        assert_eq!(deep, want);
        // The encoder leaves the stack as it found it: many calls in one
        // chunk still work.
        let many: String = lua
            .load("local s for i = 1, 10000 do s = brisk.json.encode({i, {x = i}}) end return s")
            .eval()
            .unwrap();
        assert_eq!(many, "[10000,{\"x\":10000}]");
    }

    #[test]
    fn integers_as_text() {
        // LuaJIT's numbers are doubles, written with "%.14g" in
        // `tostring`, `..` and `string.format("%s")`: an integer of up to
        // 14 digits as Rust's `{}` writes it (beyond, with an exponent;
        // brisk.json.encode writes every integral double in full).
        let lua = Lua::new();
        let mut values = vec![0i64, 1, -1, 9, -9];
        let mut p = 1i64;
        while p < 100_000_000_000_000 {
            values.extend([p - 1, p, p + 1, -p, -(p - 1), -(p + 1)]);
            p *= 10;
        }
        values.extend([p - 1, -(p - 1)]);
        let f = lua
            .load("local n = ... return tostring(n), 'item ' .. n, string.format('%s', n)")
            .into_function()
            .unwrap();
        for n in values {
            let (a, b, c): (String, String, String) = f.call(n).unwrap();
            assert_eq!(
                (a.as_str(), b.as_str(), c.as_str()),
                (
                    n.to_string().as_str(),
                    format!("item {n}").as_str(),
                    n.to_string().as_str()
                )
            );
        }
    }

    #[test]
    fn json_encode_repeated_keys() {
        // Objects sharing keys (the encoder writes a key once a call and
        // copies it after): more keys than its table has slots, keys that
        // need escapes, long keys, integer keys, keys made anew between
        // calls with the old ones collected. Each answer is decoded and
        // compared with the table it came from.
        let lua = with_library();
        let ok: bool = lua
            .load(
                r#"
                local function same(a, b)
                  if type(a) ~= "table" then return a == b end
                  for k, v in pairs(a) do
                    if not same(v, b[tostring(k)] or b[k]) then return false end
                  end
                  for k in pairs(b) do
                    if a[k] == nil and a[tonumber(k)] == nil then return false end
                  end
                  return true
                end
                for round = 1, 20 do
                  local items = {}
                  for i = 1, 150 do
                    local o = { id = i, ['a"b<' .. i % 3] = i, [7] = "seven" }
                    o["k" .. (i * round) % 70] = "v" .. i
                    o[string.rep("x", 45) .. i % 4] = true
                    o["\u{e9}" .. i % 5] = { i, "t" }
                    items[i] = o
                  end
                  local text = brisk.json.encode(items)
                  local back = assert(brisk.json.decode(text))
                  for i = 1, 150 do
                    if not same(items[i], back[i]) then return false end
                  end
                  items, back, text = nil
                  collectgarbage()
                end
                return true
                "#,
            )
            .eval()
            .unwrap();
        assert!(ok);
        // A key that is not UTF-8, met again after it was written.
        let err = encode(&lua, r"{ {a = 1}, {a = 2, ['\xff'] = 3} }").unwrap_err();
        assert!(err.contains("not UTF-8"), "{err}");
    }
}
