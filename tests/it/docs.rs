//! The documentation keeps true: README.md, the book (`docs/src/`) and
//! `bench/RESULTS.md`. Their configuration examples pass
//! `--check-config`, README's tour runs as written, the servlet and CGI
//! examples are the shipped files, every relative link and `#anchor`
//! resolves, every repository path they name exists, and the figures
//! they quote that the program can compute are the program's. The
//! configuration reference has one source: `brisk.example.toml` and
//! `man/brisk.toml.5` name every key the loader accepts
//! (`brisk::config::known_keys`, itself checked against the loader's
//! own error messages) and no key it refuses.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn readme() -> String {
    read("README.md")
}

/// A document as mdBook renders it: each `{{#include PATH}}` line
/// replaced by the file it names (relative to the document).
fn expand(path: &Path, text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        match include_target(line) {
            Some(rel) => {
                let file = path.parent().unwrap().join(rel);
                let body = fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{}: {{{{#include {rel}}}}}: {e}", path.display()));
                out.push_str(&body);
                if !body.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The path of an mdBook `{{#include PATH}}` line.
fn include_target(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix("{{#include ")
        .and_then(|r| r.strip_suffix("}}"))
        .map(str::trim)
}

/// Every document this test keeps true, as (path from the top, text
/// with its includes expanded): README.md, the book's chapters, and the
/// benchmark results.
fn documents() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string(), "bench/RESULTS.md".to_string()];
    let mut chapters: Vec<String> = fs::read_dir(repo().join("docs/src"))
        .expect("docs/src")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/src/{n}"))
        .collect();
    chapters.sort();
    assert!(chapters.len() >= 12, "{chapters:?}");
    names.extend(chapters);
    names
        .into_iter()
        .map(|n| {
            let text = expand(&repo().join(&n), &read(&n));
            (n, text)
        })
        .collect()
}

/// Every fenced block of `lang` with the `#` heading it is under.
fn blocks(text: &str, lang: &str) -> Vec<(String, String)> {
    let fence = format!("```{lang}");
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with('#') && line.contains("# ") && !line.starts_with("#!") {
            heading = line.trim_start_matches('#').trim().to_string();
        } else if line == fence {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            out.push((heading.clone(), body.join("\n") + "\n"));
        } else if line.starts_with("```") {
            // Another language's block: its lines are no headings.
            lines.by_ref().take_while(|l| *l != "```").for_each(drop);
        }
    }
    out
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            out.push(line);
        }
    }
    out
}

/// The id mdBook gives a heading (and GitHub, for README): its text
/// without markup, lower case, spaces as `-`, other punctuation but `-`
/// and `_` dropped.
fn heading_id(heading: &str) -> String {
    // Links keep their text only.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(end)) if close < end => {
                text.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The ids of a document's headings (mdBook numbers a repeated one
/// `-1`, `-2`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let id = heading_id(line[hashes..].trim());
            let mut unique = id.clone();
            let mut n = 1;
            while out.contains(&unique) {
                unique = format!("{id}-{n}");
                n += 1;
            }
            out.insert(unique);
        }
    }
    out
}

/// The targets of the inline links `[text](target)` of a document's
/// prose (not inside code spans).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        // Code spans are no links.
        let plain: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push(after[..end].trim().to_string());
            rest = &after[end.min(after.len())..];
        }
    }
    out
}

#[test]
fn every_link_and_anchor_resolves() {
    let docs = documents();
    let mut checked = 0;
    let mut broken = Vec::new();
    for (name, _) in &docs {
        // Links are checked in the file as written (an included file's
        // links would resolve from the including chapter: keep them out
        // of included files, which say paths in code spans instead).
        let raw = read(name);
        let dir = Path::new(name).parent().unwrap().to_path_buf();
        for line in raw.lines() {
            if let Some(rel) = include_target(line) {
                if !repo().join(&dir).join(rel).is_file() {
                    broken.push(format!("{name}: include {rel}"));
                }
            }
        }
        for target in links(&raw) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                PathBuf::from(name)
            } else {
                normalise(&dir.join(file))
            };
            if !repo().join(&path).exists() {
                broken.push(format!("{name}: {target} (no {})", path.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let text = expand(&repo().join(&path), &read(&path.to_string_lossy()));
                if !path.to_string_lossy().ends_with(".md") || !anchors(&text).contains(anchor) {
                    broken.push(format!(
                        "{name}: {target} (no heading with the id {anchor:?} in {}; ids: {:?})",
                        path.display(),
                        anchors(&text)
                    ));
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `a/b/../c` as `a/c` (without touching the file system).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                assert!(out.pop(), "{} leaves the repository", path.display());
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn heading_ids_are_mdbooks() {
    assert_eq!(heading_id("HTTPS (`bench/tls`)"), "https-benchtls");
    assert_eq!(
        heading_id("Access by address, request rates (`[[access]]`, `[[rate_limit]]`)"),
        "access-by-address-request-rates-access-rate_limit"
    );
    assert_eq!(
        heading_id("What brisk does not do (yet)"),
        "what-brisk-does-not-do-yet"
    );
    assert_eq!(heading_id("[Linked](x.md) text"), "linked-text");
    let ids = anchors("# A\n## A\n```\n# not a heading\n```\n### B c\n");
    assert_eq!(
        ids,
        ["a", "a-1", "b-c"].iter().map(|s| s.to_string()).collect()
    );
    assert_eq!(
        links("[a](b.md#c) `[x](y)` [d](https://e)"),
        ["b.md#c", "https://e"]
    );
}

/// Repository paths the documents name in code spans: the engine's as
/// `engine/src/…`, the command's `src/main.rs`, the integration tests'
/// `tests/it/…`.
const PATH_ROOTS: &[&str] = &[
    "engine/",
    "src/",
    "tests/",
    "bench/",
    "deploy/",
    "scripts/",
    "man/",
    "examples/",
    "docs/",
    "fuzz/",
    "completions/",
    ".cargo/",
    ".ci/",
];

#[test]
fn every_path_the_documents_name_exists() {
    let mut missing = Vec::new();
    let mut old_style = Vec::new();
    let mut checked = 0;
    for (name, text) in documents() {
        for line in prose(&text) {
            for (i, span) in line.split('`').enumerate() {
                let path = span.trim_end_matches([',', '.', ':', ';']);
                if i % 2 == 0
                    || !PATH_ROOTS.iter().any(|r| path.starts_with(r))
                    || path.contains([' ', '*', '$', '{', '<', '|'])
                {
                    continue;
                }
                checked += 1;
                if !repo().join(path).exists() {
                    missing.push(format!("{name}: {path}"));
                }
                if path.starts_with("src/") && path != "src/main.rs" {
                    old_style.push(format!("{name}: {path}"));
                }
            }
        }
    }
    assert!(checked >= 100, "only {checked} paths found");
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
    assert!(
        old_style.is_empty(),
        "the engine's code is engine/src/, the command's src/main.rs:\n{}",
        old_style.join("\n")
    );
}

/// Whether this build has every cargo feature (a build without one
/// refuses that feature's keys, by name).
const ALL_FEATURES: bool = cfg!(all(
    feature = "tls",
    feature = "http2",
    feature = "servlets",
    feature = "compress",
    feature = "sites",
    feature = "ops",
    feature = "upstreams",
    feature = "webdav"
));

#[test]
fn the_toml_examples_pass_check_config() {
    let mut examples = Vec::new();
    for (name, text) in documents() {
        for (heading, toml) in blocks(&text, "toml") {
            examples.push((name.clone(), heading, toml));
        }
    }
    assert!(examples.len() >= 12, "{}", examples.len());
    let mut refused = 0;
    for (name, heading, toml) in &examples {
        let dir = TempDir::new("docs-toml");
        // What the examples name beside the file.
        for d in [
            "cgi-bin",
            "www",
            "servlets",
            "public",
            "sites/example",
            "dav",
        ] {
            fs::create_dir_all(dir.path.join(d)).unwrap();
        }
        let user = "alice:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
        fs::write(dir.path.join("htpasswd"), user).unwrap();
        // An external account binding's MAC key (base64url).
        let mac = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY\n";
        fs::write(dir.path.join("eab.key"), mac).unwrap();
        let certs = repo().join("engine/src/tls/testdata");
        fs::copy(certs.join("a.pem"), dir.path.join("fullchain.pem")).unwrap();
        fs::copy(certs.join("a.key"), dir.path.join("privkey.pem")).unwrap();
        let file = dir.path.join("brisk.toml");
        fs::write(&file, toml).unwrap();
        let (status, _, err) = run_brisk(&["--check-config", "--config", file.to_str().unwrap()]);
        // A build without some features refuses their keys, by name.
        if !ALL_FEATURES && err.contains("this brisk was built without") {
            refused += 1;
            continue;
        }
        if toml.contains("handler = \"guestbook\"") {
            // A handler the embedding program registers itself.
            assert!(
                err.contains("no handler is registered as"),
                "{name} under {heading:?}: {err}"
            );
        } else {
            assert!(status.success(), "{name} under {heading:?}:\n{toml}\n{err}");
        }
    }
    if refused > 0 {
        skip(&format!(
            "{refused} of {} toml examples need cargo features this build leaves out",
            examples.len()
        ));
    }
}

/// README's tour shows `examples/site/` as it is: its configuration,
/// its servlet and its CGI program; the servlets chapter shows the same
/// servlet.
#[test]
fn the_examples_shown_are_the_shipped_files() {
    let site = repo().join("examples/site");
    let servlet = fs::read_to_string(site.join("servlets/hello.lua")).unwrap();
    let program = fs::read_to_string(site.join("cgi-bin/hello.sh")).unwrap();
    let config = fs::read_to_string(site.join("brisk.toml")).unwrap();
    let config: String = config
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let text = readme();
    assert!(
        blocks(&text, "lua").iter().any(|(_, b)| *b == servlet),
        "README's servlet is not examples/site/servlets/hello.lua"
    );
    assert!(
        blocks(&text, "sh").iter().any(|(_, b)| *b == program),
        "README's CGI program is not examples/site/cgi-bin/hello.sh"
    );
    assert!(
        blocks(&text, "toml").iter().any(|(_, b)| *b == config),
        "README's configuration is not examples/site/brisk.toml"
    );
    let chapter = read("docs/src/servlets.md");
    assert!(
        blocks(&chapter, "lua").iter().any(|(_, b)| *b == servlet),
        "the servlets chapter's example is not examples/site/servlets/hello.lua"
    );
}

/// (Its servlet needs the cargo feature `servlets`.)
#[cfg(feature = "servlets")]
#[test]
fn the_example_toml_passes_check_config() {
    let file = repo().join("examples/site/brisk.toml");
    let (status, _, err) = run_brisk(&["--check-config", "--config", file.to_str().unwrap()]);
    let ok = status.success();
    assert!(ok, "{err}");
}

/// One step of README's tour: a `brisk …` line starts a server, each
/// `curl URL … # → TEXT` line after it asks it for URL's path and finds
/// TEXT in the answer.
struct Step {
    args: Vec<String>,
    gets: Vec<(bool, String, String)>,
}

/// The tour's steps, from its `sh` blocks.
fn tour_steps(text: &str) -> Vec<Step> {
    let start = text
        .find("## A five-minute tour")
        .expect("README has a tour");
    let tour = &text[start..];
    let tour = &tour[..tour[3..].find("\n## ").map_or(tour.len(), |i| i + 3)];
    let mut steps: Vec<Step> = Vec::new();
    for (_, block) in blocks(tour, "sh") {
        for line in block.lines() {
            if let Some(rest) = line.strip_prefix("brisk ") {
                let args = rest.split('#').next().unwrap();
                steps.push(Step {
                    args: args.split_whitespace().map(String::from).collect(),
                    gets: Vec::new(),
                });
            } else if let Some(rest) = line.strip_prefix("curl ") {
                let (cmd, want) = rest
                    .split_once("# → ")
                    .expect("a curl line says what it prints");
                let url = cmd
                    .split_whitespace()
                    .find(|w| w.starts_with("http"))
                    .expect("a URL");
                let https = url.starts_with("https://");
                let after = url.split_once("://").unwrap().1;
                let path = &after[after.find('/').unwrap_or(after.len())..];
                let step = steps.last_mut().expect("a brisk line before curl");
                step.gets
                    .push((https, path.to_string(), want.trim().to_string()));
            }
        }
    }
    steps
}

#[test]
fn the_tour_runs() {
    let steps = tour_steps(&readme());
    assert!(steps.len() >= 3, "{}", steps.len());
    for step in steps {
        let tls = step.args.iter().any(|a| a == "--tls-cert");
        let servlets = step
            .args
            .iter()
            .any(|a| a.ends_with("examples/site/brisk.toml"));
        if (tls && !cfg!(feature = "tls")) || (servlets && !cfg!(feature = "servlets")) {
            skip(&format!(
                "README's tour step `brisk {}` needs a cargo feature this build leaves out",
                step.args.join(" ")
            ));
            continue;
        }
        let dir = TempDir::new("tour");
        // The command line as README writes it, from the top of the
        // repository, on a free port; the certificate it makes with
        // openssl is the tests' own.
        let mut args = vec!["--access-log".to_string(), "off".to_string()];
        let mut words = step.args.iter();
        while let Some(a) = words.next() {
            match a.as_str() {
                "--listen" | "--port" => {
                    words.next();
                }
                "--tls-cert" | "--tls-key" => {
                    words.next();
                    let name = if a == "--tls-cert" { "a.pem" } else { "a.key" };
                    args.push(a.clone());
                    let cert = repo().join("engine/src/tls/testdata").join(name);
                    args.push(cert.display().to_string());
                }
                _ if repo().join(a).exists() => args.push(repo().join(a).display().to_string()),
                _ => args.push(a.clone()),
            }
        }
        args.extend(["--listen".to_string(), "127.0.0.1:0".to_string()]);
        let (child, addrs) = spawn_brisk(&args, &dir.path.join("stderr"));
        let _server = KillOnDrop(child);
        for (https, path, want) in &step.gets {
            let mut c = if *https {
                connect_https(addrs[0])
            } else {
                Client::connect(addrs[0])
            };
            c.send(
                format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            );
            let r = c.response();
            assert_eq!(r.status, 200, "brisk {args:?}: GET {path}");
            assert!(
                r.text().contains(want.as_str()),
                "brisk {args:?}: GET {path} lacks {want:?}:\n{}",
                r.text()
            );
        }
    }
}

/// A TLS connection to the tour's HTTPS step (with the tests'
/// certificate, `a.test`).
#[cfg(feature = "tls")]
fn connect_https(addr: std::net::SocketAddr) -> Client {
    Client::connect_tls(addr, tls::client_conn("a.test"))
}

#[cfg(not(feature = "tls"))]
fn connect_https(_: std::net::SocketAddr) -> Client {
    unreachable!("the tour's HTTPS step is skipped without the feature tls")
}

#[test]
fn the_system_call_count_is_the_filters() {
    let n = brisk::sys::syscalls::ALLOWED.len();
    let text = read("docs/src/security.md");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // (The build with HTTP/3 allows one more: recvmmsg.)
    let quoted = match cfg!(feature = "http3") {
        true => format!("of the {n} system calls it uses ("),
        false => format!("({n} without the cargo feature `http3`"),
    };
    assert!(
        flat.contains(&quoted),
        "the security chapter quotes another count than the seccomp filter's {n}"
    );
}

// The configuration reference: one source, checked.

/// A key a document names: its section (`""` for the top level,
/// `tls.certificate`, `site.static`) and name, with the value it shows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Named {
    section: String,
    key: String,
    value: String,
}

impl Named {
    /// `section.key`, as `known_keys` spells it.
    fn dotted(&self) -> String {
        match self.section.as_str() {
            "" => self.key.clone(),
            s => format!("{s}.{}", self.key),
        }
    }
}

/// The keys `brisk.example.toml` names: active lines and those
/// commented out with one `# ` (`# key = value`, after a `[section]` or
/// `# [section]` line); commentary, indented deeper, is not read.
fn example_keys() -> Vec<Named> {
    let text = read("brisk.example.toml");
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let body = match line.strip_prefix("# ") {
            Some(b) => b,
            None if line.starts_with('#') => continue,
            None => line,
        };
        if body.starts_with(' ') || body.is_empty() {
            continue;
        }
        let head = body.split(" #").next().unwrap().trim_end();
        if head.starts_with('[') && head.ends_with(']') {
            let array = head.starts_with("[[");
            section = head.trim_matches(['[', ']']).to_string();
            // The header names its table as a key of the one around it.
            let (outer, name) = section.rsplit_once('.').unwrap_or(("", &section));
            out.push(Named {
                section: outer.to_string(),
                key: name.to_string(),
                value: if array { "[]" } else { "{}" }.to_string(),
            });
            continue;
        }
        let Some((key, value)) = body.split_once(" = ") else {
            continue;
        };
        let bare = key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if bare && !key.is_empty() {
            out.push(Named {
                section: section.clone(),
                key: key.to_string(),
                value: value.to_string(),
            });
        }
    }
    out
}

/// The keys `man/brisk.toml.5` names: in each `.SS [section]` (or
/// `.SS Top level`), the bold words of the line after each `.TP`.
fn man_keys() -> Vec<Named> {
    let text = read("man/brisk.toml.5");
    let mut section = None;
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix(".SS ") {
            section = match name {
                "Top level" => Some(String::new()),
                _ if name.starts_with('[') => Some(name.trim_matches(['[', ']']).to_string()),
                _ => None,
            };
        } else if line.starts_with(".SH ") {
            section = None;
        } else if line == ".TP" {
            let (Some(section), Some(tag)) = (&section, lines.next()) else {
                continue;
            };
            let words: Vec<&str> = if let Some(w) = tag.strip_prefix(".B ") {
                vec![w]
            } else if let Some(w) = tag.strip_prefix(".BR ") {
                // Bold and roman alternate: the words outside quotes.
                w.split('"')
                    .step_by(2)
                    .flat_map(str::split_whitespace)
                    .collect()
            } else {
                Vec::new()
            };
            for w in words {
                out.push(Named {
                    section: section.clone(),
                    key: w.to_string(),
                    value: String::new(),
                });
            }
        }
    }
    out
}

/// Loads `toml` (written to a file in `dir`) with the real loader, as
/// `brisk --config FILE --check-config` would.
fn load(dir: &Path, toml: &str) -> Result<(), String> {
    let file = dir.join("brisk.toml");
    fs::write(&file, toml).unwrap();
    let args: Vec<OsString> = vec![
        "--check-config".into(),
        "--config".into(),
        file.clone().into(),
    ];
    match brisk::config::from_args(args) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// A small document that sets `section.key` to `value`, in the table
/// or array of tables it belongs to (a site's tables inside a site).
fn one_key(section: &str, key: &str, value: &str) -> String {
    const ARRAYS: &[&str] = &[
        "headers",
        "cgi",
        "reverse_proxy",
        "fastcgi",
        "throttle",
        "auth",
        "handlers",
        "redirect",
        "rewrite",
        "cors",
        "access",
        "rate_limit",
        "site",
        "vhost",
        "tls.certificate",
    ];
    let open = |table: &str, last: &str| match ARRAYS.contains(&last) {
        true => format!("[[{table}]]\n"),
        false => format!("[{table}]\n"),
    };
    let mut doc = String::new();
    if let Some(inner) = section
        .strip_prefix("site.")
        .or(section.strip_prefix("vhost."))
    {
        doc.push_str("[[site]]\nhosts = [\"probe.example\"]\nroot = \".\"\n");
        doc.push_str(&open(&format!("site.{inner}"), inner));
    } else if !section.is_empty() {
        doc.push_str(&open(section, section));
    }
    doc.push_str(&format!("{key} = {value}\n"));
    doc
}

/// Whether the loader refused `key` as unknown in `err`.
fn unknown(err: &str) -> bool {
    err.contains("unknown key \"")
}

#[test]
fn the_example_file_and_the_man_page_name_every_key() {
    let known = brisk::config::known_keys();
    assert!(known.len() >= 150, "{}", known.len());
    let example: BTreeSet<String> = example_keys().iter().map(Named::dotted).collect();
    let man: BTreeSet<String> = man_keys().iter().map(Named::dotted).collect();
    let lacking = |doc: &BTreeSet<String>| -> Vec<&String> {
        known.iter().filter(|k| !doc.contains(*k)).collect()
    };
    assert!(
        lacking(&example).is_empty(),
        "brisk.example.toml lacks {:?}",
        lacking(&example)
    );
    assert!(
        lacking(&man).is_empty(),
        "man/brisk.toml.5 lacks {:?}",
        lacking(&man)
    );
    // And the man page names no key the loader does not know (it shows
    // no values: its keys are checked against the schema; a site's own
    // tables are the top level's).
    let top = |k: &str| known.iter().any(|x| x == k);
    let strange: Vec<&String> = man
        .iter()
        .filter(|k| {
            let site_key = k.strip_prefix("site.").or(k.strip_prefix("vhost."));
            !top(k) && !site_key.is_some_and(|s| top(s) || top(&format!("site.{s}")))
        })
        .collect();
    assert!(
        strange.is_empty(),
        "man/brisk.toml.5 names {strange:?}, which the loader refuses"
    );
}

/// Every key the example file shows, with the value it shows, is one
/// the loader takes: loaded alone (in its table), it is never refused
/// as unknown (it may be refused for what it needs besides: a file, a
/// sibling key, a feature).
#[test]
fn the_example_files_keys_are_the_loaders() {
    let dir = TempDir::new("docs-keys");
    let keys = example_keys();
    assert!(keys.len() >= 150, "{}", keys.len());
    let mut refused = Vec::new();
    for k in &keys {
        let doc = one_key(&k.section, &k.key, &k.value);
        if let Err(e) = load(&dir.path, &doc) {
            if unknown(&e) || e.contains("TOML") {
                refused.push(format!("{}:\n{doc}{e}", k.dotted()));
            }
        }
    }
    assert!(
        refused.is_empty(),
        "brisk.example.toml names keys the loader refuses:\n{}",
        refused.join("\n\n")
    );
}

/// `brisk::config::known_keys` (what the two documents are held to) is
/// the loader's own list: for every table it names, a key the loader
/// does not know is refused with a message listing exactly those keys.
#[test]
fn the_known_keys_are_the_loaders() {
    if !ALL_FEATURES {
        // A build without a feature refuses its tables before their keys.
        skip("the loader names every table's keys only with every cargo feature");
        return;
    }
    let dir = TempDir::new("docs-schema");
    let known = brisk::config::known_keys();
    let mut by_table: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for k in &known {
        let (table, key) = k.rsplit_once('.').unwrap_or(("", k));
        by_table
            .entry(table.to_string())
            .or_default()
            .insert(key.to_string());
    }
    // Every top-level key, as a table too: those that are tables list
    // their keys; the others (and `mime`, `errors`: any key) refuse
    // none by name.
    let mut tables: BTreeSet<String> = by_table.keys().cloned().collect();
    tables.extend(by_table[""].iter().cloned());
    tables.insert("tls.certificate".to_string());
    for table in tables {
        let listed = |doc: &str| -> Option<BTreeSet<String>> {
            let e = load(&dir.path, doc).err()?;
            if !unknown(&e) {
                return None;
            }
            let list = e.split("expected one of ").nth(1)?;
            Some(
                list.split('"')
                    .skip(1)
                    .step_by(2)
                    .map(String::from)
                    .collect(),
            )
        };
        let probe = "zz_probe_key";
        let (first, then) = match table.as_str() {
            "" => (format!("{probe} = 1\n"), String::new()),
            t => (
                format!("[{t}]\n{probe} = 1\n"),
                format!("[[{t}]]\n{probe} = 1\n"),
            ),
        };
        let loader = listed(&first).or_else(|| listed(&then));
        let ours = by_table.get(&table);
        match (table.as_str(), loader, ours) {
            // A site holds the top level's per-site keys (listed there)
            // and its own `hosts`.
            ("site" | "vhost", Some(l), _) => {
                let site = &by_table["site"];
                let bad: Vec<&String> = l
                    .iter()
                    .filter(|k| !site.contains(*k) && !by_table[""].contains(*k))
                    .collect();
                assert!(
                    bad.is_empty(),
                    "[[{table}]] takes {bad:?}, which known_keys lacks"
                );
            }
            (_, Some(l), Some(o)) => assert_eq!(&l, o, "[{table}]: the loader's keys"),
            (_, Some(l), None) => panic!("[{table}] takes {l:?}, which known_keys lacks"),
            (_, None, Some(o)) if !table.is_empty() => {
                panic!("[{table}]: known_keys lists {o:?}, the loader named none")
            }
            _ => {}
        }
    }
}

/// The command line as the documents give it is `--help`'s: the synopsis
/// of the configuration chapter names every flag, and the list of flags
/// that override the file at the top of `brisk.example.toml` names every
/// flag that sets something (all but the actions: `--config`,
/// `--check-config`, the signals, `--version`, `--help`).
#[test]
fn the_documents_name_every_flag() {
    let (status, help, _) = run_brisk(&["--help"]);
    assert!(status.success());
    // (An option's line starts with two spaces and its flag; the lines
    // that go on with its text are indented deeper.)
    let flags: BTreeSet<&str> = help
        .lines()
        .filter(|l| l.starts_with("  --"))
        .filter_map(|l| l.trim_start().split([' ', ',']).next())
        .collect();
    assert!(flags.len() >= 20, "{flags:?}");
    let chapter = read("docs/src/configuration.md");
    let synopsis = blocks_any(&chapter)
        .into_iter()
        .find(|b| b.starts_with("brisk [--config FILE]"))
        .expect("the configuration chapter's synopsis");
    let example = read("brisk.example.toml");
    let overriding: String = example
        .lines()
        .skip_while(|l| !l.starts_with("# Flags ("))
        .take_while(|l| !l.contains(") override"))
        .chain(example.lines().filter(|l| l.contains(") override")).take(1))
        .collect();
    let actions = [
        "--config",
        "--check-config",
        "--reload",
        "--stop",
        "--upgrade",
        "--reopen-logs",
        "--version",
        "--help",
    ];
    let named = |text: &str, flag: &str| {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .any(|w| w == flag)
    };
    for flag in &flags {
        assert!(
            named(&synopsis, flag),
            "configuration.md's synopsis lacks {flag}"
        );
        if !actions.contains(flag) {
            assert!(
                named(&overriding, flag),
                "brisk.example.toml's \"Flags (...) override\" lacks {flag}: {overriding}"
            );
        }
    }
}

/// The text of every fenced block of `text`, whatever its language.
fn blocks_any(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            match block.take() {
                Some(b) => out.push(b),
                None => block = Some(String::new()),
            }
        } else if let Some(b) = block.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    out
}
