//! `[[cgi]]` rules and the CGI limits and timeout. Each test builds its
//! own tree: `public/` (the root), `cgi-bin/` with an executable `tool`
//! and a plain `data.txt`, then loads `site.toml` from it.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use super::{args, load, TempDir};
use crate::config::{CgiRule, CgiTarget, Command, Config, ConfigError};

fn tree() -> TempDir {
    let dir = TempDir::new();
    let tool = dir.write("cgi-bin/tool", "#!/bin/sh\necho\n");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir.write("cgi-bin/data.txt", "data");
    dir
}

fn run(dir: &TempDir, text: &str) -> Result<Config, ConfigError> {
    let file = dir.write("site.toml", &format!("root = \"public\"\n{text}"));
    match args(&["--config", file.to_str().unwrap()]) {
        Ok(Command::Run(c)) => Ok(c),
        Ok(other) => panic!("expected Run, got {other:?}"),
        Err(e) => Err(e),
    }
}

/// The error message with the temporary directory replaced by `DIR`.
fn err(text: &str) -> String {
    let dir = tree();
    match run(&dir, text) {
        Ok(c) => panic!("expected an error, got {:?}", c.site.cgi),
        Err(e) => e.message.replace(dir.path().to_str().unwrap(), "DIR"),
    }
}

#[test]
fn defaults() {
    let c = load("").unwrap();
    assert!(c.site.cgi.is_empty());
    assert_eq!(c.limits.cgi_processes, 64);
    assert_eq!(c.limits.cgi_header_bytes, 16384);
    assert_eq!(c.timeouts.cgi, Duration::from_secs(60));
}

#[test]
fn limits_and_timeout() {
    let c = load(
        "[limits]\ncgi_processes = 8\ncgi_header_bytes = \"4KiB\"\n[timeouts]\ncgi = \"90s\"\n",
    )
    .unwrap();
    assert_eq!(c.limits.cgi_processes, 8);
    assert_eq!(c.limits.cgi_header_bytes, 4096);
    assert_eq!(c.timeouts.cgi, Duration::from_secs(90));
    assert_eq!(
        super::load_err("[limits]\ncgi_processes = 0\n"),
        "DIR/site.toml:3: limits.cgi_processes: expected an integer from 1 to 100000; got 0"
    );
    assert!(super::load_err("[limits]\ncgi_header_bytes = 10\n")
        .contains("limits.cgi_header_bytes: expected a size from 256 to"));
    assert_eq!(
        super::load_err("[timeouts]\ncgi = 0\n"),
        "DIR/site.toml:3: timeouts.cgi: expected a duration greater than zero; got 0"
    );
}

#[test]
fn three_kinds_of_rules_in_file_order() {
    let dir = tree();
    let c = run(
        &dir,
        r#"
[[cgi]]
url = "/cgi-bin/"
dir = "cgi-bin"

[[cgi]]
url = "/tool"
program = "cgi-bin/tool"
env = { TOOL_ROOT = "/srv/tool", B = "2" }

[[cgi]]
pattern = "*.pl"
interpreter = "/bin/sh"

[[cgi]]
url = "/data"
program = "cgi-bin/data.txt"
interpreter = "/bin/sh"
"#,
    )
    .unwrap();
    let base = dir.path().to_path_buf();
    assert_eq!(
        c.site.cgi,
        [
            CgiRule {
                target: CgiTarget::Dir {
                    url: "/cgi-bin/".into(),
                    dir: base.join("cgi-bin").canonicalize().unwrap()
                },
                interpreter: None,
                env: vec![],
                writable: Vec::new(),
                max_body: None,
            },
            CgiRule {
                target: CgiTarget::Program {
                    url: "/tool".into(),
                    program: base.join("cgi-bin/tool")
                },
                interpreter: None,
                env: vec![
                    ("TOOL_ROOT".into(), "/srv/tool".into()),
                    ("B".into(), "2".into())
                ],
                writable: Vec::new(),
                max_body: None,
            },
            CgiRule {
                target: CgiTarget::Pattern("*.pl".into()),
                interpreter: Some(PathBuf::from("/bin/sh")),
                env: vec![],
                writable: Vec::new(),
                max_body: None,
            },
            CgiRule {
                target: CgiTarget::Program {
                    url: "/data".into(),
                    program: base.join("cgi-bin/data.txt")
                },
                interpreter: Some(PathBuf::from("/bin/sh")),
                env: vec![],
                writable: Vec::new(),
                max_body: None,
            },
        ]
    );
}

#[test]
fn each_rule_has_exactly_one_target() {
    assert_eq!(
        err("[[cgi]]\nurl = \"/x/\"\n"),
        "DIR/site.toml:2: cgi[1]: needs one of dir = \"cgi-bin\", program = \"/path/to/program\" or pattern = \"*.cgi\""
    );
    assert_eq!(
        err("[[cgi]]\nurl = \"/x/\"\ndir = \"cgi-bin\"\nprogram = \"cgi-bin/tool\"\n"),
        "DIR/site.toml:5: cgi[1].program: give only one of dir, program, pattern (this rule already has dir)"
    );
    assert_eq!(
        err("[[cgi]]\ndir = \"cgi-bin\"\n"),
        "DIR/site.toml:2: cgi[1]: needs url = \"/prefix/\" with dir"
    );
    assert_eq!(
        err("[[cgi]]\nurl = \"/x\"\npattern = \"*.cgi\"\n"),
        "DIR/site.toml:3: cgi[1].url: not used with pattern, which matches file names anywhere under the root"
    );
    assert_eq!(
        err("cgi = 1\n"),
        "DIR/site.toml:2: cgi: expected an array of tables ([[cgi]]); got 1"
    );
    assert_eq!(
        err("[[cgi]]\npattern = \"*.cgi\"\nscript = \"x\"\n"),
        "DIR/site.toml:4: unknown key \"cgi[1].script\"; expected one of \"url\", \"dir\", \"program\", \"pattern\", \"interpreter\", \"env\", \"writable\", \"max_body\""
    );
}

#[test]
fn url_and_pattern_syntax() {
    assert_eq!(
        err("[[cgi]]\nurl = \"cgi-bin/\"\ndir = \"cgi-bin\"\n"),
        "DIR/site.toml:3: cgi[1].url: expected a URL prefix starting with \"/\" without \".\", \"..\" or empty segments; got \"cgi-bin/\""
    );
    assert!(err("[[cgi]]\nurl = \"/a/../b\"\ndir = \"cgi-bin\"\n").contains("cgi[1].url: expected"));
    assert_eq!(
        err("[[cgi]]\npattern = \"/x/*.cgi\"\n"),
        "DIR/site.toml:3: cgi[1].pattern: expected a glob on the file name like \"*.cgi\" (no \"/\"); got \"/x/*.cgi\""
    );
    assert!(err("[[cgi]]\npattern = \"\"\n").contains("cgi[1].pattern: expected a glob"));
}

#[test]
fn dir_and_program_must_exist() {
    assert!(err("[[cgi]]\nurl = \"/c/\"\ndir = \"nowhere\"\n")
        .starts_with("DIR/site.toml:4: cgi[1].dir: cannot use DIR/nowhere as a CGI directory:"));
    assert_eq!(
        err("[[cgi]]\nurl = \"/c/\"\ndir = \"cgi-bin/tool\"\n"),
        "DIR/site.toml:4: cgi[1].dir: DIR/cgi-bin/tool is not a directory"
    );
    assert!(
        err("[[cgi]]\nurl = \"/t\"\nprogram = \"cgi-bin/none\"\n").starts_with(
            "DIR/site.toml:4: cgi[1].program: cannot use DIR/cgi-bin/none as a CGI program:"
        )
    );
    assert_eq!(
        err("[[cgi]]\nurl = \"/t\"\nprogram = \"cgi-bin\"\n"),
        "DIR/site.toml:4: cgi[1].program: DIR/cgi-bin is not a regular file"
    );
    assert_eq!(
        err("[[cgi]]\nurl = \"/t\"\nprogram = \"cgi-bin/data.txt\"\n"),
        "DIR/site.toml:4: cgi[1].program: DIR/cgi-bin/data.txt is not executable (chmod +x it, or give an interpreter)"
    );
    assert_eq!(
        err("[[cgi]]\npattern = \"*.pl\"\ninterpreter = \"cgi-bin/data.txt\"\n"),
        "DIR/site.toml:4: cgi[1].interpreter: DIR/cgi-bin/data.txt is not an executable file"
    );
    assert!(
        err("[[cgi]]\npattern = \"*.pl\"\ninterpreter = \"/no/perl\"\n")
            .starts_with("DIR/site.toml:4: cgi[1].interpreter: cannot use /no/perl:")
    );
}

#[test]
fn env_names_and_values() {
    assert_eq!(
        err("[[cgi]]\npattern = \"*.cgi\"\nenv = { \"A-B\" = \"x\" }\n"),
        "DIR/site.toml:4: cgi[1].env.A-B: not a valid environment variable name (letters, digits and _, not starting with a digit)"
    );
    assert!(
        err("[[cgi]]\npattern = \"*.cgi\"\nenv = { \"A=B\" = \"x\" }\n")
            .contains("cgi[1].env.A=B: not a valid environment variable name")
    );
    assert_eq!(
        err("[[cgi]]\npattern = \"*.cgi\"\nenv = { A = \"x\\u0000y\" }\n"),
        "DIR/site.toml:4: cgi[1].env.A: NUL is not allowed in a value"
    );
    assert_eq!(
        err("[[cgi]]\npattern = \"*.cgi\"\nenv = { A = 1 }\n"),
        "DIR/site.toml:4: cgi[1].env.A: expected a string; got 1"
    );
}

#[test]
fn second_rule_errors_name_their_index() {
    assert!(err("[[cgi]]\npattern = \"*.cgi\"\n[[cgi]]\nurl = \"/x\"\n")
        .starts_with("DIR/site.toml:4: cgi[2]: needs one of"));
}

#[test]
fn temp_dir_holds_bodies_for_cgi_and_must_exist() {
    // Relative to the config file, canonical; checked only with [[cgi]].
    let dir = tree();
    std::fs::create_dir(dir.path().join("spool")).unwrap();
    let rule = "[[cgi]]\nurl = \"/cgi-bin/\"\ndir = \"cgi-bin\"\n";
    let c = run(&dir, &format!("temp_dir = \"spool\"\n{rule}")).unwrap();
    assert_eq!(c.temp_dir, dir.path().join("spool").canonicalize().unwrap());
    let c = run(&dir, rule).unwrap();
    assert_eq!(c.temp_dir, std::env::temp_dir().canonicalize().unwrap());
    assert!(run(&dir, "temp_dir = \"missing\"\n").is_ok());
    assert_eq!(
        err(&format!("temp_dir = \"missing\"\n{rule}")),
        "DIR/site.toml:2: temp_dir: cannot use DIR/missing as the directory for request bodies held for CGI programs: No such file or directory (os error 2)"
    );
    assert_eq!(
        err(&format!("temp_dir = \"cgi-bin/tool\"\n{rule}")),
        "DIR/site.toml:2: temp_dir: DIR/cgi-bin/tool is not a directory"
    );
}

#[test]
fn writable_paths_exist_and_are_canonical() {
    let dir = tree();
    std::fs::create_dir_all(dir.path().join("repos/a")).unwrap();
    let rule = "[[cgi]]\nurl = \"/git/\"\ndir = \"cgi-bin\"\n";
    let c = run(
        &dir,
        &format!("{rule}writable = [\"repos\", \"repos/../repos\", \"cgi-bin/../repos/a\"]\n"),
    )
    .unwrap();
    let repos = dir.path().join("repos").canonicalize().unwrap();
    assert_eq!(c.site.cgi[0].writable, [repos.clone(), repos.join("a")]);
    // A single string is one path.
    let c = run(&dir, &format!("{rule}writable = \"repos\"\n")).unwrap();
    assert_eq!(c.site.cgi[0].writable, [repos]);
    assert_eq!(
        err(&format!("{rule}writable = [\"missing\"]\n")),
        "DIR/site.toml:5: cgi[1].writable: cannot use DIR/missing as a directory CGI programs may write to: No such file or directory (os error 2)"
    );
    assert_eq!(
        err(&format!("{rule}writable = [\"cgi-bin/tool\"]\n")),
        "DIR/site.toml:5: cgi[1].writable: DIR/cgi-bin/tool is not a directory"
    );
    assert_eq!(
        err(&format!("{rule}writable = [\"/\"]\n")),
        "DIR/site.toml:5: cgi[1].writable: the whole file system cannot be writable (set sandbox = false for that)"
    );
    assert!(err(&format!("{rule}writable = [3]\n")).contains("cgi[1].writable: expected a string"));
    assert!(err(&format!("{rule}writable = [\"\"]\n"))
        .contains("cgi[1].writable: expected a non-empty path"));
}
