//! The servlets' `string.find`, `string.match`, `string.gmatch` and
//! `string.gsub` (and so the string methods `s:find(...)`...; the first
//! three as C functions, `ffi::str`): brisk's
//! matcher ([`super::pattern`]), which stops when the request's CPU
//! budget is spent, in place of LuaJIT's, which cannot be stopped (see
//! `pattern`'s comment for why and what else was weighed). `gsub` builds
//! its result outside Lua's heap, within [`heap::outside_room`].

use mlua::{Lua, LuaString, MultiValue, Table, Value};

use super::ffi::{self, cpu, heap, stack};
use super::pattern::{anchored, Capture, Error, Matcher};

/// Puts brisk's matcher in `string` (the table the string metatable's
/// `__index` is: the methods too).
pub fn install(lua: &Lua, string: &Table) -> mlua::Result<()> {
    ffi::str::install(lua, string)?;
    string.raw_set("gsub", lua.create_function(gsub)?)?;
    Ok(())
}

fn lua_error(e: Error) -> mlua::Error {
    match e {
        // The hook's error (`State::failure` sees `cpu::stopped`).
        Error::Stopped => mlua::Error::runtime(cpu::CPU_LIMIT),
        Error::Pattern(why) => mlua::Error::runtime(why),
    }
}

fn too_long(what: &str) -> mlua::Error {
    mlua::Error::MemoryError(format!(
        "{what}: the result does not fit in servlets.memory"
    ))
}

fn capture_value(lua: &Lua, src: &[u8], c: Capture) -> mlua::Result<Value> {
    Ok(match c {
        Capture::Span(a, b) => Value::String(lua.create_string(&src[a..b])?),
        Capture::Position(p) => Value::Integer(p as i64),
    })
}

/// The last match's captures (the whole match when it has none).
fn captures<F: FnMut() -> bool>(
    lua: &Lua,
    m: &Matcher<'_, F>,
    src: &[u8],
    s: usize,
    e: usize,
    out: &mut MultiValue,
) -> mlua::Result<()> {
    for c in m.captures(s, e).map_err(lua_error)? {
        out.push_back(capture_value(lua, src, c)?);
    }
    Ok(())
}

/// `string.gsub(s, pattern, repl, n)`.
fn gsub(
    lua: &Lua,
    (s, p, repl, max): (LuaString, LuaString, Value, Option<f64>),
) -> mlua::Result<(LuaString, i64)> {
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let (src, pat) = (&src[..], &pat[..]);
    let text = match &repl {
        Value::String(_) | Value::Integer(_) | Value::Number(_) => {
            lua.coerce_string(repl.clone())?
        }
        Value::Table(_) | Value::Function(_) => None,
        _ => {
            return Err(mlua::Error::runtime(
                "bad argument #3 to 'gsub' (string/function/table expected)",
            ))
        }
    };
    let text = text.as_ref().map(|t| t.as_bytes());
    let max = max.map_or(src.len() as f64 + 1.0, f64::trunc);
    let room = heap::outside_room(lua);
    let (anchor, p0) = anchored(pat);
    // The matcher's `stop`: the request's CPU budget is spent. The same
    // function as `ffi::str`'s matchers', so that the matcher is built once.
    let mut m = Matcher::new(src, pat, cpu::check_spent);
    let mut out = Vec::new();
    let (mut at, mut n) = (0usize, 0i64);
    while (n as f64) < max {
        let e = m.at(at, p0).map_err(lua_error)?;
        if let Some(e) = e {
            n += 1;
            let piece = Piece {
                lua,
                src,
                s: at,
                e,
                room,
            };
            match &text {
                Some(t) => piece.add_text(&m, t, &mut out)?,
                None => piece.add_value(&m, &repl, &mut out)?,
            }
        }
        match e {
            Some(e) if e > at => at = e,
            _ if at < src.len() => {
                out.push(src[at]);
                at += 1;
            }
            _ => break,
        }
        if anchor {
            break;
        }
    }
    if out.len() + (src.len() - at) > room {
        return Err(too_long("string.gsub"));
    }
    out.extend_from_slice(&src[at..]);
    Ok((lua.create_string(&out)?, n))
}

/// One match of `gsub`, `src[s..e]`, and what the output may reach.
struct Piece<'a> {
    lua: &'a Lua,
    src: &'a [u8],
    s: usize,
    e: usize,
    room: usize,
}

impl Piece<'_> {
    fn push(&self, out: &mut Vec<u8>, bytes: &[u8]) -> mlua::Result<()> {
        if out.len() + bytes.len() > self.room {
            return Err(too_long("string.gsub"));
        }
        out.extend_from_slice(bytes);
        Ok(())
    }

    /// A replacement string: `%0` the match, `%1`..`%9` its captures,
    /// `%` before anything else that character (5.1; a `%` at the end
    /// stands for itself).
    fn add_text<F: FnMut() -> bool>(
        &self,
        m: &Matcher<'_, F>,
        t: &[u8],
        out: &mut Vec<u8>,
    ) -> mlua::Result<()> {
        let mut i = 0;
        while i < t.len() {
            let plain = t[i..]
                .iter()
                .position(|&b| b == b'%')
                .unwrap_or(t.len() - i);
            self.push(out, &t[i..i + plain])?;
            i += plain;
            if i >= t.len() {
                break;
            }
            i += 1;
            match t.get(i) {
                None => self.push(out, b"%")?,
                Some(b'0') => self.push(out, &self.src[self.s..self.e])?,
                Some(&d) if d.is_ascii_digit() => {
                    match m
                        .capture(usize::from(d - b'1'), self.s, self.e)
                        .map_err(lua_error)?
                    {
                        Capture::Span(a, b) => self.push(out, &self.src[a..b])?,
                        Capture::Position(p) => self.push(out, p.to_string().as_bytes())?,
                    }
                }
                Some(&c) => self.push(out, &[c])?,
            }
            i += 1;
        }
        Ok(())
    }

    /// A table (indexed by the first capture) or a function (called with
    /// the captures): its answer, or the match itself for nil or false.
    fn add_value<F: FnMut() -> bool>(
        &self,
        m: &Matcher<'_, F>,
        repl: &Value,
        out: &mut Vec<u8>,
    ) -> mlua::Result<()> {
        let (lua, src) = (self.lua, self.src);
        // A table's `__index` or the function may call gsub again, each
        // depth with Rust frames on the worker's stack: nested deep
        // enough, they overflowed it and the process died.
        if matches!(repl, Value::Table(_) | Value::Function(_)) && !stack::has_room() {
            return Err(mlua::Error::runtime(format!(
                "string.gsub: {}",
                stack::TOO_DEEP
            )));
        }
        let v: Value = match repl {
            Value::Table(t) => {
                let key = m.capture(0, self.s, self.e).map_err(lua_error)?;
                t.get(capture_value(lua, src, key)?)?
            }
            Value::Function(f) => {
                let mut args = MultiValue::new();
                captures(lua, m, src, self.s, self.e, &mut args)?;
                f.call(args)?
            }
            _ => Value::Nil,
        };
        match v {
            Value::Nil | Value::Boolean(false) => self.push(out, &src[self.s..self.e]),
            Value::String(_) | Value::Integer(_) | Value::Number(_) => {
                let s = lua.coerce_string(v)?.unwrap_or(lua.create_string("")?);
                self.push(out, &s.as_bytes())
            }
            v => Err(mlua::Error::runtime(format!(
                "invalid replacement value (a {})",
                v.type_name()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nanoseconds a call of LuaJIT's functions and of brisk's take on
    /// ordinary patterns (the report's table): `cargo test --release -p
    /// brisk-engine --lib strings::tests::speed -- --ignored --nocapture`.
    ///
    /// 2026-11-28, release, the machine loaded ~2.4 (ns a call, LuaJIT's
    /// / brisk's): find plain 25 / 124, find without specials 26 / 173,
    /// find `%d` 463 / 655, match with 2 captures 3,096 / 4,143, trim
    /// 1,263 / 1,805, gmatch `%a+` 1,082 / 4,284, gsub with a string
    /// 630 / 1,636, with a table 1,774 / 3,168. LuaJIT compiles its own
    /// plain `find` into the trace; brisk's is a C call (about 100 ns),
    /// and `gsub` goes through mlua's callback (about 700 ns).
    #[test]
    #[ignore = "a measurement, not a check: run it with --ignored --nocapture"]
    fn speed() {
        let lua = Lua::new();
        let ours = lua.create_table().unwrap();
        install(&lua, &ours).unwrap();
        lua.globals().raw_set("ours", ours).unwrap();
        let time = lua
            .load(
                r#"local lib, body = ...
                -- (Subjects that change with i, so the JIT cannot hoist a call.)
                local f = load("local lib = ... local t = {'GET /index.html HTTP/1.1', 'key = value', '  some text  ', 'one two three four'} return function(n) for i = 1, n do local s = t[i % 4 + 1] " .. body .. " end end")(lib)
                f(1000)
                local t0 = os.clock()
                f(200000)
                return (os.clock() - t0) / 200000 * 1e9"#,
            )
            .into_function()
            .unwrap();
        let cases = [
            ("find, plain", "lib.find(s, 'HTTP', 1, true)"),
            ("find, no specials", "lib.find(s, 'HTTP')"),
            ("find, class", "lib.find(s, '%d')"),
            ("match, 2 captures", "lib.match(s, '(%w+)%s*=%s*(%w+)')"),
            ("match, trim", "lib.match(s, '^%s*(.-)%s*$')"),
            ("gmatch, words", "for w in lib.gmatch(s, '%a+') do end"),
            ("gsub, string", "lib.gsub(s, 'o', '0')"),
            (
                "gsub, table",
                "lib.gsub(s, '[<>&e]', {['<'] = '&lt;', ['>'] = '&gt;', ['&'] = '&amp;'})",
            ),
        ];
        println!("| case | LuaJIT ns | brisk ns |");
        for (name, body) in cases {
            let string: Table = lua.globals().get("string").unwrap();
            let ours: Table = lua.globals().get("ours").unwrap();
            let a: f64 = time.call((string, body)).unwrap();
            let b: f64 = time.call((ours, body)).unwrap();
            println!("| {name} | {a:.0} | {b:.0} |");
        }
    }
}
