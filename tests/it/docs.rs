//! The documentation keeps true: README's configuration examples pass
//! `--check-config`, its servlet example is the shipped file and runs,
//! its cross-references name headings that exist, and the figures it
//! quotes that the program can compute are the program's.

use crate::common;

use std::fs;
use std::path::PathBuf;

use common::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// Every fenced block of `lang` with the `## ` or `### ` heading it is
/// under.
fn blocks(text: &str, lang: &str) -> Vec<(String, String)> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with("## ") || line.starts_with("### ") {
            heading = line.trim_start_matches('#').trim().to_string();
        } else if format!("{line}\n") == fence {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            out.push((heading.clone(), body.join("\n") + "\n"));
        }
    }
    out
}

/// The headings of `text`, without their parenthesised key names
/// (`Virtual hosts (\`[[site]]\`)` is "Virtual hosts").
fn headings(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            let h = line.trim_start_matches('#').trim();
            out.push(h.to_string());
            if let Some((short, _)) = h.split_once(" (") {
                out.push(short.to_string());
            }
        }
    }
    out
}

#[test]
fn every_cross_reference_names_a_heading() {
    let text = readme();
    let heads = headings(&text);
    // `see "A"`, `see "A" and "B"`: the quoted names after a "see",
    // across line breaks.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut names = Vec::new();
    for (i, _) in flat
        .match_indices("see \"")
        .chain(flat.match_indices("Sizes: \""))
    {
        let mut rest = &flat[i + flat[i..].find('"').unwrap()..];
        while let Some(after) = rest.strip_prefix('"') {
            let Some(end) = after.find('"') else { break };
            names.push(after[..end].to_string());
            rest = &after[end + 1..];
            match [" and \"", ", \"", " or \""]
                .iter()
                .find_map(|j| rest.strip_prefix(j))
            {
                Some(next) => rest = &rest[rest.len() - next.len() - 1..],
                None => break,
            }
        }
    }
    assert!(names.len() >= 10, "{names:?}");
    let missing: Vec<&String> = names.iter().filter(|n| !heads.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "no heading for {missing:?}; headings: {heads:?}"
    );
}

#[test]
fn the_toml_examples_pass_check_config() {
    let text = readme();
    let examples = blocks(&text, "toml");
    assert!(examples.len() >= 4);
    for (i, (heading, toml)) in examples.iter().enumerate() {
        let dir = TempDir::new("docs-toml");
        // What the examples name beside the file.
        for d in ["cgi-bin", "www", "servlets", "public", "sites/example"] {
            fs::create_dir_all(dir.path.join(d)).unwrap();
        }
        let user = "alice:$2y$10$34Rl/Ysv91EuiTng9PxUSeA32JoBjCFw7vXqKK.Fjw/oWnElaGypu\n";
        fs::write(dir.path.join("htpasswd"), user).unwrap();
        let certs = repo().join("engine/src/tls/testdata");
        fs::copy(certs.join("a.pem"), dir.path.join("fullchain.pem")).unwrap();
        fs::copy(certs.join("a.key"), dir.path.join("privkey.pem")).unwrap();
        let file = dir.path.join("brisk.toml");
        fs::write(&file, toml).unwrap();
        let (status, _, err) = run_brisk(&["--check-config", "--config", file.to_str().unwrap()]);
        let ok = status.success();
        // A build without some features refuses their keys, by name.
        let all = cfg!(all(
            feature = "tls",
            feature = "http2",
            feature = "servlets",
            feature = "compress",
            feature = "sites",
            feature = "ops"
        ));
        if !all && err.contains("this brisk was built without") {
            continue;
        }
        if heading == "Embedding" {
            // A handler the embedding program registers itself.
            assert!(
                err.contains("no handler is registered as"),
                "block {i}: {err}"
            );
        } else {
            assert!(ok, "block {i} under {heading:?}:\n{toml}\n{err}");
        }
    }
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

#[cfg(feature = "servlets")]
#[test]
fn the_example_site_serves_its_servlet_and_program() {
    let site = repo().join("examples/site");
    let shipped = fs::read_to_string(site.join("servlets/hello.lua")).unwrap();
    let text = readme();
    let lua = blocks(&text, "lua");
    assert!(
        lua.iter().any(|(_, body)| *body == shipped),
        "README's servlet example is not examples/site/servlets/hello.lua"
    );
    let mut b = Builder::new();
    b.arg("--config")
        .arg(site.join("brisk.toml").to_str().unwrap())
        .arg("--root")
        .arg(site.to_str().unwrap());
    let s = b.start();
    let r = s.get("/servlets/hello.lua");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        b"hello! I am a servlet and my state is initialized\n"
    );
    let r = s.get("/cgi-bin/hello.sh");
    assert_eq!(r.status, 200);
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        format!(
            "hello from brisk/{}, asked for /cgi-bin/hello.sh\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[test]
fn the_system_call_count_is_the_filters() {
    let n = brisk::sys::syscalls::ALLOWED.len();
    let flat = readme().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("of the {n} system calls it uses")),
        "README quotes another count than the seccomp filter's {n}"
    );
}
