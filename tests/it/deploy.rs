//! What ships besides the binary, checked: the man pages against
//! `--help` and the configuration keys, the shell completions against
//! `--help` (and loaded in bash, zsh and fish), the Kubernetes manifests
//! against the Kubernetes schemas (kubernetes-validate), the container
//! recipe by running its files from an empty root as uid 65534, and the
//! Debian package by installing it (as root) and serving a page.

use crate::common;

use std::fs;
#[cfg(feature = "ops")]
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
#[cfg(feature = "ops")]
use std::time::Duration;

use common::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `--flag` of `brisk --help`.
fn flags() -> Vec<String> {
    let (status, out, _) = run_brisk(&["--help"]);
    assert!(status.success());
    let mut flags: Vec<String> = out
        .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_string()
        })
        .collect();
    flags.sort();
    flags.dedup();
    assert!(flags.len() >= 20, "{flags:?}");
    flags
}

/// A flag as roff writes it (`\-\-pid\-file`).
fn roff(flag: &str) -> String {
    flag.replace('-', "\\-")
}

#[test]
fn the_man_pages_cover_every_flag_and_key() {
    let brisk8 = fs::read_to_string(repo().join("man/brisk.8")).unwrap();
    for flag in flags() {
        assert!(
            brisk8.contains(&format!("\\fB{}\\fR", roff(&flag)))
                || brisk8.contains(&format!(".B {}", roff(&flag)))
                || brisk8.contains(&format!(".BI {} ", roff(&flag)))
                || brisk8.contains(&format!(".BR {} ", roff(&flag))),
            "brisk.8 lacks {flag}"
        );
    }
    for sig in ["SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2"] {
        assert!(brisk8.contains(sig), "brisk.8 lacks {sig}");
    }
    let toml5 = fs::read_to_string(repo().join("man/brisk.toml.5")).unwrap();
    // Each key in its section: `.SS [section]` (or `[[section]]`) up to
    // the next `.SS`; top-level keys under `.SS Top level`.
    let section = |name: &str| -> String {
        let heads = [
            format!(".SS [{name}]\n"),
            format!(".SS [[{name}]]\n"),
            format!(".SS {name}\n"),
        ];
        let start = heads
            .iter()
            .find_map(|h| toml5.find(h.as_str()))
            .unwrap_or_else(|| panic!("brisk.toml.5 has no section {name}"));
        let rest = &toml5[start + 4..];
        rest[..rest.find("\n.S").unwrap_or(rest.len())].to_string()
    };
    for key in brisk::config::known_keys() {
        let (sec, k) = match key.rsplit_once('.') {
            Some((s, k)) => (s.to_string(), k.to_string()),
            None => ("Top level".to_string(), key.clone()),
        };
        let text = section(&sec);
        let bold = [
            format!(".B {k}\n"),
            format!(".BR {k} "),
            format!("\" {k} \""),
            format!("\" {k}\n"),
            format!(" {k} \""),
        ];
        assert!(
            bold.iter().any(|b| text.contains(b.as_str())),
            "brisk.toml.5 [{sec}] lacks {k}"
        );
    }
    // man(1) reads them without a warning.
    if Command::new("man").arg("--version").output().is_ok() {
        for page in ["man/brisk.8", "man/brisk.toml.5"] {
            let out = Command::new("man")
                .args(["--warnings", "-l", "-E", "UTF-8"])
                .arg(repo().join(page))
                .env("MANWIDTH", "80")
                .stdout(Stdio::null())
                .output()
                .unwrap();
            assert!(
                String::from_utf8_lossy(&out.stderr).trim().is_empty(),
                "{page}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    } else {
        skip("no man(1) to render the pages");
    }
}

#[test]
fn the_completions_offer_every_flag() {
    let dir = repo().join("completions");
    for file in ["brisk.bash", "_brisk", "brisk.fish"] {
        let text = fs::read_to_string(dir.join(file)).unwrap();
        for flag in flags() {
            let fish = format!("-l {}", &flag[2..]);
            assert!(
                text.contains(&format!("{flag} "))
                    || text.contains(&format!("{flag}["))
                    || text.contains(&format!("{flag}\""))
                    || text.contains(&format!("{{{flag},"))
                    || text.contains(&fish),
                "{file} lacks {flag}"
            );
        }
    }
    // Each parses in its shell (those that are installed).
    let checks: [(&str, &[&str], &str); 3] = [
        ("bash", &["-n"], "brisk.bash"),
        ("zsh", &["-n"], "_brisk"),
        ("fish", &["--no-execute"], "brisk.fish"),
    ];
    for (shell, args, file) in checks {
        match Command::new(shell).args(args).arg(dir.join(file)).output() {
            Ok(out) => assert!(
                out.status.success(),
                "{shell}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(_) => skip(&format!("no {shell} to parse {file}")),
        }
    }
    // bash completes a flag.
    let script = format!(
        "source {}; COMP_WORDS=(brisk --pid); COMP_CWORD=1; _brisk; echo \"${{COMPREPLY[@]}}\"",
        dir.join("brisk.bash").display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "--pid-file");
}

/// What `shell` offers for `brisk --` once its completion file is loaded
/// as the shell loads it, or `None` (said loudly) when the shell is not
/// installed (scripts/test installs zsh and fish as root).
fn offered(shell: &str) -> Option<Vec<String>> {
    let dir = repo().join("completions");
    let out = match shell {
        "bash" => Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=(brisk --); COMP_CWORD=1; _brisk; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                dir.join("brisk.bash").display()
            ))
            .output(),
        // `complete -C` lists what the command line would complete to.
        "fish" => Command::new("fish")
            .args(["--no-config", "-c"])
            .arg(format!(
                "source {}; complete -C 'brisk --'",
                dir.join("brisk.fish").display()
            ))
            .output(),
        // Completion runs only in the line editor: an interactive zsh on
        // a pseudo-terminal (zpty) with `_brisk` found on its fpath by
        // compinit, as installed, types `brisk --` and a Tab; compadd
        // is wrapped to print what it is given.
        _ => {
            let script = TempDir::new("zsh");
            let file = script.path.join("complete.zsh");
            fs::write(&file, ZSH_COMPLETE).unwrap();
            Command::new("zsh")
                .arg("-f")
                .arg(&file)
                .arg(&dir)
                .output()
        }
    };
    let Ok(out) = out else {
        skip(&format!("no {shell} to load its completion for brisk"));
        return None;
    };
    assert!(
        out.status.success(),
        "{shell}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut words: Vec<String> = text
        .lines()
        .map(|l| l.strip_prefix("MATCH:").unwrap_or(l))
        .filter_map(|l| l.split(['\t', ' ']).next())
        .filter(|w| w.starts_with("--"))
        .map(str::to_string)
        .collect();
    words.sort();
    words.dedup();
    Some(words)
}

/// zsh: types `brisk --` and a Tab in an interactive zsh on a pty; prints
/// each match compadd is given as `MATCH:word`. `$1`: the directory of
/// `_brisk`. Waits (bounded) until the output has been quiet a second.
const ZSH_COMPLETE: &str = r#"zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "fpath=($1 \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z 'compadd () { local -a hits; builtin compadd -O hits "$@"; print -rl -- ${hits/#/MATCH:}; builtin compadd "$@" }'
zpty -w -n z $'brisk --\t'
out=""
integer quiet=0 turns=0
while (( turns++ < 400 && quiet < 20 )); do
  if zpty -r -t z line; then out+="$line"; quiet=0
  elif [[ $out == *MATCH:--* ]]; then (( quiet++ ))
  fi
  sleep 0.05
done
zpty -d z
print -r -- "$out" | tr -d '\r' | grep -o 'MATCH:--[^[:space:]]*' | sort -u
"#;

#[test]
fn each_shell_offers_every_flag_for_brisk_dash_dash() {
    let want = flags();
    for shell in ["bash", "zsh", "fish"] {
        if let Some(got) = offered(shell) {
            assert_eq!(got, want, "{shell}");
        }
    }
}

/// Runs kubernetes-validate (PyPI; it ships the Kubernetes JSON schemas,
/// so it needs no network; scripts/test installs it) in strict mode on
/// `file` against Kubernetes 1.30; `None` (said loudly) when it is not
/// installed.
fn kubernetes_validate(file: &Path) -> Option<(bool, String)> {
    let out = Command::new("kubernetes-validate")
        .args(["--strict", "--kubernetes-version", "1.30.0"])
        .arg(file)
        .output();
    let Ok(out) = out else {
        skip("no kubernetes-validate (scripts/test installs it with pip)");
        return None;
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), text))
}

#[test]
fn the_kubernetes_manifests_validate() {
    let manifests = repo().join("deploy/kubernetes/brisk.yaml");
    let Some((ok, text)) = kubernetes_validate(&manifests) else {
        return;
    };
    assert!(ok, "{text}");
    for kind in ["configmap", "deployment", "service", "poddisruptionbudget"] {
        assert!(
            text.contains(&format!("passed for resource {kind}/brisk")),
            "{kind}: {text}"
        );
    }
    // The checker does check: a wrong type, and (strict) a key that
    // Kubernetes does not know, are refused.
    let yaml = fs::read_to_string(&manifests).unwrap();
    let dir = TempDir::new("k8s");
    for (what, bad) in [
        ("replicas", yaml.replacen("replicas: ", "replicas: x", 1)),
        (
            "an unknown key",
            yaml.replacen("replicas: ", "replicaz: ", 1),
        ),
    ] {
        assert_ne!(bad, yaml, "{what}");
        let file = dir.path.join("bad.yaml");
        fs::write(&file, bad).unwrap();
        let (ok, text) = kubernetes_validate(&file).expect("installed");
        assert!(!ok && text.contains("deployment/brisk"), "{what}: {text}");
    }
}

// (Its configuration mounts the built-in health handlers: `ops`.)
#[cfg(feature = "ops")]
#[test]
fn the_kubernetes_config_map_is_a_valid_configuration() {
    // The brisk.toml inside the ConfigMap, checked by brisk itself.
    let yaml = fs::read_to_string(repo().join("deploy/kubernetes/brisk.yaml")).unwrap();
    let start = yaml.find("  brisk.toml: |\n").unwrap() + "  brisk.toml: |\n".len();
    let toml: String = yaml[start..]
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    let dir = TempDir::new("k8s-cfg");
    fs::create_dir_all(dir.path.join("www")).unwrap();
    let cfg = dir.path.join("brisk.toml");
    fs::write(
        &cfg,
        toml.replace(
            "root = \"/www\"",
            &format!("root = \"{}\"", dir.path.join("www").display()),
        ),
    )
    .unwrap();
    let (status, out, err) = run_brisk(&["--config", cfg.to_str().unwrap(), "--check-config"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("stop_delay 5s"), "{out}");
    // The probes name the handlers it mounts.
    for path in ["/-/health", "/-/ready"] {
        assert!(out.contains(path), "{out}");
    }
}

/// Whether `bin` is a static executable (no program interpreter).
#[cfg(feature = "ops")]
fn is_static(bin: &Path) -> bool {
    let data = fs::read(bin).unwrap();
    !data
        .windows(16)
        .any(|w| w.starts_with(b"/lib64/ld-linux") || w.starts_with(b"/lib/ld-linux"))
}

// (Its configuration mounts the built-in health handlers: `ops`.)
#[cfg(feature = "ops")]
#[test]
fn the_container_runs_as_65534_from_an_empty_root() {
    let bin = Path::new(crate::common::brisk_exe());
    if !is_static(bin) {
        skip("the binary is not the static build (scripts/test runs this under --target x86_64-unknown-linux-musl)");
        return;
    }
    if brisk::sys::privileges::euid() != 0 {
        skip("needs root for chroot");
        return;
    }
    let recipe = fs::read_to_string(repo().join("Containerfile")).unwrap();
    let lines: Vec<&str> = recipe
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(lines[0], "FROM scratch");
    let root = TempDir::new("container");
    let mut user = None;
    let mut argv: Vec<String> = Vec::new();
    for l in &lines[1..] {
        let (op, rest) = l.split_once(' ').unwrap();
        match op {
            "COPY" => {
                let (src, dst) = rest.split_once(' ').unwrap();
                let to = root.path.join(dst.trim_start_matches('/'));
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                // The static binary this test run built stands for the
                // release one.
                let from = if src.ends_with("/brisk") {
                    bin.to_path_buf()
                } else {
                    repo().join(src)
                };
                fs::copy(from, &to).unwrap();
            }
            "USER" => user = Some(rest.to_string()),
            "ENTRYPOINT" | "CMD" => {
                let v: Vec<String> = serde_json::from_str(rest).unwrap();
                argv.extend(v);
            }
            _ => {}
        }
    }
    assert_eq!(user.as_deref(), Some("65534:65534"));
    // Nothing else in the root: no passwd, no libc, no shell.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // (Its error log outside the root, which is the container's whole
    // file system, in a directory of its own that goes with the test.)
    let logs = TempDir::new("container-log");
    let err = logs.path.join(format!("container-{port}.err"));
    let mut child = KillOnDrop(
        Command::new("chroot")
            .arg("--userspec=65534:65534")
            .arg(&root.path)
            .args(&argv)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::from(fs::File::create(&err).unwrap()))
            .spawn()
            .expect("chroot"),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    wait_until("the container's brisk to listen", || {
        fs::read_to_string(&err).is_ok_and(|t| t.contains("listening on"))
            || child.0.try_wait().ok().flatten().is_some()
    });
    let text = fs::read_to_string(&err).unwrap();
    assert!(text.contains("listening on"), "{text}");
    let mut c = Client::connect(addr);
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = c.response();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("brisk is serving"));
    let mut c = Client::connect(addr);
    c.send(b"GET /-/ready HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(c.response().status, 200);
    // It runs as 65534.
    let status = fs::read_to_string(format!("/proc/{}/status", child.0.id())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("65534")),
        "{status}"
    );
}

/// Builds the package of this build's binary with scripts/deb.
#[cfg(feature = "ops")]
fn build_deb(out: &Path) -> Option<PathBuf> {
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        skip("no dpkg-deb");
        return None;
    }
    let done = Command::new(repo().join("scripts/deb"))
        .args(["--binary", crate::common::brisk_exe(), "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    Some(PathBuf::from(String::from_utf8_lossy(&done.stdout).trim()))
}

// (Its configuration mounts the built-in health handlers: `ops`.)
#[cfg(feature = "ops")]
#[test]
fn the_debian_package_holds_what_it_should() {
    let dir = TempDir::new("deb");
    let Some(deb) = build_deb(&dir.path) else {
        return;
    };
    let contents = Command::new("dpkg-deb")
        .arg("--contents")
        .arg(&deb)
        .output()
        .unwrap();
    let contents = String::from_utf8_lossy(&contents.stdout);
    for path in [
        "./usr/sbin/brisk",
        "./lib/systemd/system/brisk.service",
        "./lib/systemd/system/brisk.socket",
        "./etc/brisk/brisk.toml",
        "./etc/logrotate.d/brisk",
        "./usr/lib/tmpfiles.d/brisk.conf",
        "./var/www/brisk/index.html",
        "./usr/share/man/man8/brisk.8.gz",
        "./usr/share/man/man5/brisk.toml.5.gz",
        "./usr/share/bash-completion/completions/brisk",
        "./usr/share/zsh/vendor-completions/_brisk",
        "./usr/share/fish/vendor_completions.d/brisk.fish",
        "./usr/share/doc/brisk/copyright",
    ] {
        assert!(
            contents.lines().any(|l| l.ends_with(path)),
            "{path} missing:\n{contents}"
        );
    }
    // README's links into the manual resolve in the installed tree.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut linked = 0;
    for link in readme.split("](").skip(1) {
        let target = link.split([')', '#']).next().unwrap_or("");
        if target.contains("://") || !target.ends_with(".md") {
            continue;
        }
        linked += 1;
        let path = format!("./usr/share/doc/brisk/{target}");
        assert!(
            contents.lines().any(|l| l.ends_with(&path)),
            "README links to {target}, which the package lacks:\n{contents}"
        );
    }
    assert!(linked > 5, "README links into the manual ({linked} links)");
    assert!(
        contents.contains("root/root"),
        "files belong to root:\n{contents}"
    );
    let info = Command::new("dpkg-deb")
        .arg("--info")
        .arg(&deb)
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    for field in [
        " Package: brisk",
        " Architecture: ",
        " postinst",
        " conffiles",
    ] {
        assert!(info.contains(field), "{field}:\n{info}");
    }
    // The packaged configuration is valid (its root and logs as installed).
    let (status, _, err) = run_brisk(&[
        "--config",
        repo().join("deploy/debian/brisk.toml").to_str().unwrap(),
        "--check-config",
    ]);
    if Path::new("/var/www/brisk").is_dir() && Path::new("/var/log/brisk").is_dir() {
        assert!(status.success(), "{err}");
    }
}

// (Its configuration mounts the built-in health handlers: `ops`.)
#[cfg(feature = "ops")]
#[test]
fn the_debian_package_installs_and_serves() {
    if brisk::sys::privileges::euid() != 0 {
        skip("dpkg -i needs root");
        return;
    }
    if Command::new("dpkg")
        .arg("-s")
        .arg("brisk")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip("a brisk package is installed already: not replaced by a test");
        return;
    }
    let dir = TempDir::new("deb-install");
    let Some(deb) = build_deb(&dir.path) else {
        return;
    };
    // One dpkg at a time, whatever else runs this test meanwhile.
    let lock = dir.path.join("..").join("brisk-deb-test.lock");
    let dpkg = |args: &[&str]| {
        let out = Command::new("flock")
            .arg(&lock)
            .arg("dpkg")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "dpkg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    dpkg(&["-i", deb.to_str().unwrap()]);
    struct Purge<'a>(&'a dyn Fn(&[&str]));
    impl Drop for Purge<'_> {
        fn drop(&mut self) {
            (self.0)(&["--purge", "brisk"]);
        }
    }
    let _purge = Purge(&dpkg);
    assert!(
        Command::new("getent")
            .args(["passwd", "brisk"])
            .output()
            .unwrap()
            .status
            .success(),
        "the brisk user"
    );
    let meta = fs::metadata("/var/log/brisk").unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(meta.mode() & 0o777, 0o750);
    // Started as root with the packaged configuration (its own port):
    // it serves the default page as the brisk user.
    fs::create_dir_all("/run/brisk").unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = dir.path.join("err");
    let mut child = KillOnDrop(
        Command::new("/usr/sbin/brisk")
            .args([
                "--config",
                "/etc/brisk/brisk.toml",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--pid-file",
                "/run/brisk/brisk.pid",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::from(fs::File::create(&err).unwrap()))
            .spawn()
            .unwrap(),
    );
    wait_until("the packaged brisk to listen", || {
        fs::read_to_string(&err).is_ok_and(|t| t.contains("listening on"))
    });
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let get = |path: &str| {
        let mut c = Client::connect(addr);
        c.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        c.response()
    };
    let r = get("/");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("brisk is serving"));
    assert_eq!(get("/-/ready").status, 200);
    wait_until("the access log", || {
        fs::read_to_string("/var/log/brisk/access.log").is_ok_and(|l| l.contains("GET / HTTP/1.1"))
    });
    let log = fs::read_to_string("/var/log/brisk/error.log").unwrap();
    assert!(log.contains("running as user \"brisk\""), "{log}");
    // logrotate with the packaged snippet: the log moves, brisk reopens.
    if Command::new("logrotate").arg("--version").output().is_ok() {
        let state = dir.path.join("logrotate.state");
        let out = Command::new("logrotate")
            .args(["-f", "-s"])
            .arg(&state)
            .arg("/etc/logrotate.d/brisk")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(Path::new("/var/log/brisk/access.log.1").exists());
        wait_until("brisk to reopen its logs", || {
            fs::read_to_string("/var/log/brisk/error.log")
                .is_ok_and(|l| l.contains("SIGUSR1: reopened"))
        });
        assert_eq!(get("/after-rotation").status, 404);
        wait_until("the new access log", || {
            fs::read_to_string("/var/log/brisk/access.log")
                .is_ok_and(|l| l.contains("/after-rotation"))
        });
        let owner = fs::metadata("/var/log/brisk/access.log").unwrap().uid();
        let brisk_uid = String::from_utf8(
            Command::new("id")
                .args(["-u", "brisk"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        assert_eq!(owner.to_string(), brisk_uid.trim());
    } else {
        skip("no logrotate to rotate the packaged logs");
    }
    // The packaged configuration names its pid file: `brisk --reload`
    // and `--stop` find the running brisk by it.
    let brisk = |what: &str| {
        Command::new("/usr/sbin/brisk")
            .args(["--config", "/etc/brisk/brisk.toml", what])
            .output()
            .unwrap()
    };
    let out = brisk("--reload");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until("the reload", || {
        fs::read_to_string("/var/log/brisk/error.log")
            .is_ok_and(|l| l.contains("SIGHUP: configuration reloaded"))
    });
    let out = brisk("--stop");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        wait_exit(&mut child.0, Duration::from_secs(10)).is_some(),
        "brisk --stop"
    );
}
