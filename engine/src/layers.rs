//! The layer test: dependencies between the engine's modules point
//! downwards only (README: Architecture; issue #26).
//!
//! It reads the engine's own source (`engine/src/**.rs`), strips
//! comments and literals, resolves every `crate::…` and `super::…` path
//! (in `use`, grouped `use crate::{a, b::c}` and in code, such as
//! `crate::config::Foo`), and maps each file to its top-level module, or,
//! under `server/`, to its `server/` submodule. An edge from a module to
//! one that is not below it in [`TOP`] (or [`SERVER`]) fails the test,
//! unless [`EXCEPTIONS`] lists it. The list is a ratchet: an exception
//! that no longer occurs fails the test too, so the stage that removes
//! an edge also removes its entry, and the edge cannot come back.
//!
//! It also counts `Worker`'s fields against [`WORKER_FIELDS`] and checks
//! that `unsafe` is written only where lib.rs allows it ([`UNSAFE_IN`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The top-level modules, lowest first: a module may use those in the
/// groups before its own. Two modules of one group may not use each
/// other.
const TOP: &[&[&str]] = &[
    &["sort", "channel", "hash", "ascii", "spare"],
    &["offload"],
    &["sys"],
    &["http"],
    &["h2"],
    &["h3"],
    &["log"],
    &["tls"],
    &["access"],
    &["acme"],
    &["config"],
    &["handlers"],
    &["server"],
    &["process"],
];

/// Top-level modules outside the order: test support (this file, and
/// the skip helper the integration tests include too).
const TOP_EXEMPT: &[&str] = &["test_skip", "layers"];

/// Inside `server/`, lowest first. The leaves (`error`,
/// `listen`, `counters`, …) are what every part may use; `(root)` is
/// `server/mod.rs`, the embedding API. `listen` (what a listener speaks,
/// its sockets) takes `error`; `inherited` (the sockets a process is
/// given) takes both. `run` drives a produced answer into a protocol's
/// sink; `exchange` holds what waits and what runs, per worker. `h3`
/// (HTTP/3's answers) reuses `h2`'s pieces and head lines.
/// `quic_handover` (QUIC's sockets across an upgrade) is a leaf that
/// `listen` and the workers read.
const SERVER: &[&[&str]] = &[
    &["error", "quic_handover"],
    &["listen", "counters", "drain", "lifecycle", "life"],
    &["inherited"],
    &["transport", "sites"],
    &["router"],
    &["waits"],
    &["run"],
    &["exchange"],
    &["h1", "h2", "tunnel"],
    &["h3"],
    &["conn"],
    &["worker"],
    &["(root)"],
];

/// Upward edges allowed for now: (from, to, file under engine/src, the
/// work that removes it). `server/x` names a `server/` submodule. Each
/// entry must still occur: delete it with the edge. None is left since
/// issue #26; keep it so.
const EXCEPTIONS: &[(&str, &str, &str, &str)] = &[];

/// How many fields `Worker` (server/worker.rs) may have: a ratchet.
/// Issue #26 asked for at most [`WORKER_FIELDS_GOAL`], each a part in a
/// file of its own under worker/, and took the request being answered
/// out of the worker (it travels by argument): 13.
/// The test fails when there are more, and, until the goal, when there
/// are fewer (lower this number then); never raise it.
const WORKER_FIELDS: usize = 13;

/// Issue #26's limit for `Worker`'s fields.
const WORKER_FIELDS_GOAL: usize = 15;

/// Where `unsafe` may be written (lib.rs: `#![deny(unsafe_code)]`, with
/// `#[allow]` on these modules only), each block with its `// SAFETY:`.
const UNSAFE_IN: &[&str] = &["sys/", "handlers/servlets/ffi/"];

/// One token of Rust source: an identifier (or keyword, or number), or
/// punctuation (`::` as one token), with its line.
struct Token {
    text: String,
    line: usize,
}

/// The tokens of `src`, without comments, string, character and
/// number literals, and lifetimes.
fn tokens(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let ident_start = |ch: char| ch == '_' || ch.is_alphabetic();
    let ident_char = |ch: char| ch == '_' || ch.is_alphanumeric();
    // Skips a quoted literal whose opening quote is at `i`; gives the index after it.
    let skip_quoted = |mut i: usize, quote: char, line: &mut usize| {
        i += 1;
        while i < c.len() && c[i] != quote {
            if c[i] == '\\' {
                i += 1;
            }
            if i < c.len() && c[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied().unwrap_or('\0');
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_quoted(i, '"', &mut line);
        } else if ch == '\'' {
            if next == '\\' || c.get(i + 2) == Some(&'\'') {
                i = skip_quoted(i, '\'', &mut line);
            } else {
                // A lifetime or a label.
                i += 1;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ident_start(ch) || ch.is_ascii_digit() {
            let start = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let here = c.get(i).copied().unwrap_or('\0');
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw
                && (here == '"'
                    || (here == '#' && c.get(i + 1).is_some_and(|&n| n == '"' || n == '#')))
            {
                let mut hashes = 0;
                while c.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                i += 1; // the opening quote
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '\n' {
                        line += 1;
                    }
                    if c[i] == '"' && (1..=hashes).all(|h| c.get(i + h) == Some(&'#')) {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
            } else if matches!(word.as_str(), "b" | "c") && (here == '"' || here == '\'') {
                i = skip_quoted(i, here, &mut line);
            } else if word == "r" && here == '#' && c.get(i + 1).is_some_and(|&n| ident_start(n)) {
                // A raw identifier.
                let start = i + 1;
                i = start;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
                out.push(Token {
                    text: c[start..i].iter().collect(),
                    line,
                });
            } else if !word.starts_with(|d: char| d.is_ascii_digit()) {
                out.push(Token { text: word, line });
            }
        } else if ch == ':' && next == ':' {
            out.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                text: ch.into(),
                line,
            });
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c == '_' || c.is_alphabetic())
}

/// Parses the path (or `use` tree) after `crate::`/`super::` at
/// `tokens[*i]`, each path appended to `prefix`, into `out`.
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let text = |i: usize| toks.get(i).map_or("", |t| t.text.as_str());
    match text(*i) {
        "{" => {
            *i += 1;
            while *i < toks.len() && text(*i) != "}" {
                use_tree(toks, i, prefix.clone(), out);
                // `as name`, then the comma.
                while *i < toks.len() && text(*i) != "," && text(*i) != "}" {
                    *i += 1;
                }
                if text(*i) == "," {
                    *i += 1;
                }
            }
            *i += 1;
        }
        "self" => {
            *i += 1;
            out.push(prefix);
        }
        "super" => {
            // `super::super::…`
            let mut prefix = prefix;
            prefix.pop();
            *i += 1;
            if text(*i) == "::" {
                *i += 1;
                use_tree(toks, i, prefix, out);
            } else {
                out.push(prefix);
            }
        }
        word if is_ident(word) => {
            let mut prefix = prefix;
            prefix.push(word.to_string());
            *i += 1;
            if text(*i) == "::" && text(*i + 1) != "<" {
                *i += 1;
                use_tree(toks, i, prefix, out);
            } else {
                out.push(prefix);
            }
        }
        _ => out.push(prefix),
    }
}

/// One use of a path of the crate: the file's module, the line, and the
/// path (from the crate's root).
struct Use {
    line: usize,
    path: Vec<String>,
}

/// Every path of the crate that `src` names, for the file of module
/// `module`. `mod name { … }` blocks count for `super`; `pub(in …)`
/// and `$crate` are not uses.
fn uses(src: &str, module: &[String]) -> Vec<Use> {
    let toks = tokens(src);
    let text = |i: usize| toks.get(i).map_or("", |t| t.text.as_str());
    let mut out = Vec::new();
    // The inline modules open here, with the brace depth inside each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let t = text(i);
        match t {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "mod" if is_ident(text(i + 1)) && text(i + 2) == "{" => {
                inline.push((text(i + 1).to_string(), depth + 1));
            }
            "crate" | "super"
                if text(i + 1) == "::" && !matches!(text(i.wrapping_sub(1)), "$" | "in" | "::") =>
            {
                let line = toks[i].line;
                let prefix = if t == "crate" {
                    Vec::new()
                } else {
                    let mut here: Vec<String> = module.to_vec();
                    here.extend(inline.iter().map(|(name, _)| name.clone()));
                    here.pop();
                    here
                };
                i += 2;
                let mut paths = Vec::new();
                use_tree(&toks, &mut i, prefix, &mut paths);
                out.extend(paths.into_iter().map(|path| Use { line, path }));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The engine's `.rs` files under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file under src/ is (`server/worker/mod.rs` and
/// `server/worker.rs`: `["server", "worker"]`; lib.rs: `[]`).
fn module_of(relative: &str) -> Vec<String> {
    let stem = relative.strip_suffix(".rs").unwrap_or(relative);
    let mut parts: Vec<String> = stem.split('/').map(String::from).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// What the layer test sees in a source tree.
struct Source {
    /// File (relative to src/, with `/`) → its text.
    files: BTreeMap<String, String>,
}

impl Source {
    fn read(root: &Path) -> Source {
        let mut paths = Vec::new();
        rust_files(root, &mut paths);
        let files = paths
            .iter()
            .map(|p| {
                let relative = p
                    .strip_prefix(root)
                    .expect("under src")
                    .to_string_lossy()
                    .replace('\\', "/");
                let text =
                    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                (relative, text)
            })
            .collect();
        Source { files }
    }
}

/// Where a group order places a module: its group's index.
fn rank(order: &[&[&str]], name: &str) -> Option<usize> {
    order.iter().position(|group| group.contains(&name))
}

/// One edge that does not point downwards.
struct Upward {
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// The unit of layering a module path belongs to: its top-level module,
/// or `server/x` for a `server/` submodule (`server/(root)` for
/// server/mod.rs and what it declares itself). `None` for the crate's
/// root (lib.rs and its items).
fn unit(
    path: &[String],
    tops: &BTreeSet<String>,
    server_parts: &BTreeSet<String>,
) -> Option<String> {
    let top = path.first().filter(|t| tops.contains(*t))?;
    if top != "server" {
        return Some(top.clone());
    }
    match path.get(1).filter(|p| server_parts.contains(*p)) {
        Some(part) => Some(format!("server/{part}")),
        None => Some("server/(root)".into()),
    }
}

/// The edges of `source` that break the orders (or name a module the
/// orders do not place), sorted.
fn upward_edges(source: &Source) -> Vec<Upward> {
    let modules: BTreeMap<&String, Vec<String>> =
        source.files.keys().map(|f| (f, module_of(f))).collect();
    let tops: BTreeSet<String> = modules
        .values()
        .filter_map(|m| m.first().cloned())
        .collect();
    let server_parts: BTreeSet<String> = modules
        .values()
        .filter(|m| m.first().is_some_and(|t| t == "server"))
        .filter_map(|m| m.get(1).cloned())
        .collect();
    let mut out = Vec::new();
    for (file, text) in &source.files {
        let module = &modules[file];
        let Some(from) = unit(module, &tops, &server_parts) else {
            continue;
        };
        if TOP_EXEMPT.contains(&module[0].as_str()) {
            continue;
        }
        for u in uses(text, module) {
            let Some(to) = unit(&u.path, &tops, &server_parts) else {
                continue;
            };
            if to == from || TOP_EXEMPT.contains(&u.path[0].as_str()) {
                continue;
            }
            let (order, a, b): (&[&[&str]], &str, &str) =
                match (from.strip_prefix("server/"), to.strip_prefix("server/")) {
                    (Some(a), Some(b)) => (SERVER, a, b),
                    _ => (
                        TOP,
                        from.split('/').next().unwrap_or(""),
                        to.split('/').next().unwrap_or(""),
                    ),
                };
            let downward = match (rank(order, a), rank(order, b)) {
                (Some(ra), Some(rb)) => rb < ra,
                _ => false,
            };
            if !downward {
                let (from, to) = if order == TOP {
                    (a.to_string(), b.to_string())
                } else {
                    (from.clone(), to)
                };
                out.push(Upward {
                    from,
                    to,
                    file: file.clone(),
                    line: u.line,
                });
            }
        }
    }
    out.sort_by(|x, y| (&x.from, &x.to, &x.file, x.line).cmp(&(&y.from, &y.to, &y.file, y.line)));
    out.dedup_by(|x, y| (&x.from, &x.to, &x.file, x.line) == (&y.from, &y.to, &y.file, y.line));
    out
}

/// The orders, as the failure message prints them.
fn orders() -> String {
    let show = |order: &[&[&str]]| {
        order
            .iter()
            .map(|g| g.join(", "))
            .collect::<Vec<_>>()
            .join(" < ")
    };
    format!(
        "top level: {}\ninside server/: {}\n",
        show(TOP),
        show(SERVER)
    )
}

/// What breaks the layering in `source`, given `exceptions`: one line
/// each; empty when all is well.
fn layer_faults(source: &Source, exceptions: &[(&str, &str, &str, &str)]) -> Vec<String> {
    let edges = upward_edges(source);
    let mut faults = Vec::new();
    for e in &edges {
        let listed = exceptions
            .iter()
            .any(|&(f, t, file, _)| f == e.from && t == e.to && file == e.file);
        if !listed {
            let placed = |m: &str| match m.strip_prefix("server/") {
                Some(part) => rank(SERVER, part).is_some(),
                None => rank(TOP, m).is_some(),
            };
            let why = if !placed(&e.from) || !placed(&e.to) {
                "a module the order does not place: add it to TOP or SERVER"
            } else {
                "points upwards"
            };
            faults.push(format!(
                "{}:{}: {} -> {}: {why}",
                e.file, e.line, e.from, e.to
            ));
        }
    }
    for &(from, to, file, stage) in exceptions {
        if !edges
            .iter()
            .any(|e| e.from == from && e.to == to && e.file == file)
        {
            faults.push(format!(
                "{file}: the exception {from} -> {to} ({stage}) no longer occurs: delete it from EXCEPTIONS"
            ));
        }
    }
    faults
}

/// The fields of `struct Worker` in server/worker.rs.
fn worker_fields(src: &str) -> usize {
    let toks = tokens(src);
    let text = |i: usize| toks.get(i).map_or("", |t| t.text.as_str());
    let start = (0..toks.len())
        .find(|&i| text(i) == "struct" && text(i + 1) == "Worker" && text(i + 2) == "{")
        .expect("struct Worker { … } in server/worker.rs");
    let (mut braces, mut nested, mut fields) = (0, 0, 0);
    for i in start + 2..toks.len() {
        match text(i) {
            "{" => braces += 1,
            "}" => {
                braces -= 1;
                if braces == 0 {
                    break;
                }
            }
            "<" | "(" | "[" => nested += 1,
            ">" if text(i - 1) != "-" => nested -= 1,
            ")" | "]" => nested -= 1,
            // A field: `name: Type` at the struct's own level.
            ":" if braces == 1 && nested == 0 => fields += 1,
            _ => {}
        }
    }
    fields
}

/// Files that write `unsafe` outside [`UNSAFE_IN`], with the line.
fn unsafe_outside(source: &Source) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in &source.files {
        if UNSAFE_IN.iter().any(|dir| file.starts_with(dir)) {
            continue;
        }
        for t in tokens(text).iter().filter(|t| t.text == "unsafe") {
            out.push(format!("{file}:{}", t.line));
        }
    }
    out
}

fn engine_source() -> Source {
    Source::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn dependencies_point_downwards() {
    let faults = layer_faults(&engine_source(), EXCEPTIONS);
    let mut message = String::new();
    for f in &faults {
        let _ = writeln!(message, "{f}");
    }
    assert!(
        faults.is_empty(),
        "{message}\nThe allowed order (lowest first):\n{}",
        orders()
    );
}

#[test]
fn worker_has_few_fields() {
    let source = engine_source();
    let fields = worker_fields(&source.files["server/worker.rs"]);
    assert!(
        fields <= WORKER_FIELDS,
        "Worker has {fields} fields, at most {WORKER_FIELDS} allowed (issue #26: {WORKER_FIELDS_GOAL})"
    );
    assert!(
        fields == WORKER_FIELDS || WORKER_FIELDS <= WORKER_FIELDS_GOAL,
        "Worker has {fields} fields now: lower WORKER_FIELDS ({WORKER_FIELDS}) in layers.rs to {}",
        fields.max(WORKER_FIELDS_GOAL)
    );
}

#[test]
fn unsafe_only_where_allowed() {
    let outside = unsafe_outside(&engine_source());
    assert!(
        outside.is_empty(),
        "`unsafe` outside {UNSAFE_IN:?}:\n{}",
        outside.join("\n")
    );
}

// The test's own parts, on made-up sources: that it would fail.

fn source_of(files: &[(&str, &str)]) -> Source {
    Source {
        files: files
            .iter()
            .map(|&(f, t)| (f.to_string(), t.to_string()))
            .collect(),
    }
}

#[test]
fn a_new_upward_edge_fails() {
    let source = source_of(&[
        ("http/mod.rs", "use crate::sys::fs;\nfn f() { crate::config::Config::default(); }"),
        ("sys/mod.rs", ""),
        ("config/mod.rs", "// crate::server::x\nuse crate::{http::x, server::{self}};\nconst S: &str = \"crate::process\";"),
        ("server/mod.rs", "mod worker;"),
        ("server/worker.rs", "use super::Speaks;\nuse super::conn::Conn;\nmod tests { use super::*; }"),
        ("server/conn.rs", "pub(in crate::server) fn f() { super::super::process::x(); }"),
        ("process/mod.rs", ""),
    ]);
    let faults = layer_faults(&source, &[]);
    assert_eq!(
        faults,
        [
            "config/mod.rs:2: config -> server: points upwards",
            "http/mod.rs:2: http -> config: points upwards",
            "server/conn.rs:1: server -> process: points upwards",
            "server/worker.rs:1: server/worker -> server/(root): points upwards",
        ]
    );
    // Listed, they pass; listed but gone, they fail.
    let exceptions = [
        ("config", "server", "config/mod.rs", "test"),
        ("http", "config", "http/mod.rs", "test"),
        ("server", "process", "server/conn.rs", "test"),
        ("server/worker", "server/(root)", "server/worker.rs", "test"),
    ];
    assert_eq!(layer_faults(&source, &exceptions), Vec::<String>::new());
    let gone = [("log", "tls", "log/mod.rs", "L9")];
    assert_eq!(
        layer_faults(&source_of(&[("log/mod.rs", "")]), &gone),
        ["log/mod.rs: the exception log -> tls (L9) no longer occurs: delete it from EXCEPTIONS"]
    );
}

#[test]
fn an_unplaced_module_fails() {
    let source = source_of(&[("http/mod.rs", ""), ("novel/mod.rs", "use crate::http::x;")]);
    assert_eq!(
        layer_faults(&source, &[]),
        ["novel/mod.rs:1: novel -> http: a module the order does not place: add it to TOP or SERVER"]
    );
}

#[test]
fn literals_and_lifetimes_are_not_code() {
    let src = "fn f<'a>(x: &'a str) -> char { let _ = r#\"crate::a\"#; let _ = b\"crate::b\"; '\"' }\nuse crate::c;";
    let found: Vec<(usize, Vec<String>)> = uses(src, &[])
        .into_iter()
        .map(|u| (u.line, u.path))
        .collect();
    assert_eq!(found, [(2, vec!["c".to_string()])]);
}

#[test]
fn worker_fields_are_counted() {
    let src = "pub struct Worker {\n a: Vec<(u8, u16)>,\n /// doc: x\n pub b: Box<dyn Fn(u8) -> u8>,\n #[cfg(x)] c: [u8; 4], }";
    assert_eq!(worker_fields(src), 3);
}

#[test]
fn unsafe_elsewhere_is_found() {
    let source = source_of(&[
        ("sys/fs.rs", "fn f() { unsafe { g() } }"),
        (
            "handlers/servlets/ffi/cpu.rs",
            "unsafe extern \"C\" fn h() {}",
        ),
        (
            "handlers/servlets/api.rs",
            "// unsafe\nconst S: &str = \"unsafe\";\nfn f() { unsafe { g() } }",
        ),
    ]);
    assert_eq!(unsafe_outside(&source), ["handlers/servlets/api.rs:3"]);
}
