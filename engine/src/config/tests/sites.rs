//! `[[site]]` / `[[vhost]]` as loaded: one parser for the top level and
//! each site, what a site inherits, and errors naming file, line and key.

use super::*;

/// Loads `text` from a directory holding `public/`, `a/` and `b/`.
fn sites(text: &str) -> Result<Config, String> {
    let dir = TempDir::new();
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let file = dir.write("site.toml", text);
    match args(&["--config", file.to_str().unwrap()]) {
        Ok(Command::Run(c)) => Ok(c),
        Ok(other) => panic!("expected Run, got {other:?}"),
        Err(e) => Err(e.message.replace(dir.path().to_str().unwrap(), "DIR")),
    }
}

fn err(text: &str) -> String {
    match sites(text) {
        Ok(c) => panic!("expected an error, got {:?}", c.sites),
        Err(e) => e,
    }
}

#[test]
fn a_site_reads_the_same_keys_as_the_top_level() {
    let c = sites(
        "root = \"public\"\n\
         [static]\nindex = [\"home.html\"]\ndotfiles = \"ignore\"\n\
         [mime]\nfoo = \"text/x-foo\"\n\
         [[headers]]\npath = \"/\"\nset = { X-Top = \"1\" }\n\
         [[site]]\nhosts = [\"Example.ORG.\", \"*.example.org\"]\nroot = \"a\"\n\
         [site.static]\nautoindex = true\n\
         [[site.headers]]\npattern = \"*.css\"\nset = { X-Site = \"a\" }\n\
         [[vhost]]\nhosts = \"b.test\"\nroot = \"b\"\n\
         [vhost.static]\nindex = [\"b.html\"]\n",
    )
    .unwrap();
    assert!(c.site.hosts.is_empty());
    assert_eq!(c.sites.len(), 2);
    let (a, b) = (&c.sites[0], &c.sites[1]);
    assert_eq!(a.hosts, ["example.org", "*.example.org"]);
    assert!(a.root.ends_with("a") && b.root.ends_with("b"));
    // [static] and [mime] are inherited key by key; rules are not.
    assert_eq!(a.static_files.index, ["home.html"]);
    assert!(a.static_files.autoindex && !c.site.static_files.autoindex);
    assert_eq!(a.static_files.dotfiles, crate::config::Dotfiles::Ignore);
    assert_eq!(a.mime, [("foo".to_string(), "text/x-foo".to_string())]);
    assert_eq!(a.headers.len(), 1);
    assert_eq!(a.headers[0].set, [("X-Site".to_string(), "a".to_string())]);
    assert_eq!(c.site.headers[0].set[0].0, "X-Top");
    assert_eq!(b.hosts, ["b.test"]);
    assert_eq!(b.static_files.index, ["b.html"]);
    assert!(b.headers.is_empty());
}

/// A site's own table written before any `[[site]]` (the tables of the
/// default site are the top level's: `[[access]]`, not
/// `[[site.access]]`): the error names the header the file wrote.
#[test]
fn a_site_table_with_no_site_above_it_is_named_as_written() {
    let fix = "with no [[site]] above it: it belongs to the [[site]] written before it, \
               so write that [[site]] first";
    assert_eq!(
        err("root = \"public\"\n[[site.access]]\npath = \"/x/\"\nallow = [\"10.0.0.1\"]\n"),
        format!(
            "DIR/site.toml:2: site: expected an array of tables ([[site]]); got [[site.access]] {fix}"
        )
    );
    assert_eq!(
        err("root = \"public\"\n[vhost.static]\nautoindex = true\n"),
        "DIR/site.toml:2: vhost: expected an array of tables ([[vhost]]); got [vhost.static] \
         with no [[vhost]] above it: it belongs to the [[vhost]] written before it, so write \
         that [[vhost]] first"
    );
    // A table of keys is still just a table.
    assert_eq!(
        err("root = \"public\"\n[site]\nhosts = [\"a.test\"]\n"),
        "DIR/site.toml:2: site: expected an array of tables ([[site]]); got a table"
    );
}

#[test]
fn errors_inside_a_site_name_the_site_line_and_key() {
    let top = "root = \"public\"\n[[site]]\nhosts = [\"a.test\"]\nroot = \"a\"\n";
    assert_eq!(
        err(&format!("{top}workers = 2\n")),
        "DIR/site.toml:5: site[1].workers: is server-wide: set it at the top level of the file, outside every [[site]]"
    );
    assert_eq!(
        err(&format!("{top}[site.limits]\nmax_body = 1\n")),
        "DIR/site.toml:5: site[1].limits: is server-wide: set it at the top level of the file, outside every [[site]]"
    );
    assert_eq!(
        err(&format!("{top}[site.static]\nopen_file_cache = 5\n")),
        "DIR/site.toml:6: site[1].static.open_file_cache: is server-wide (every site shares it): set it at the top level of the file, outside every [[site]]"
    );
    assert_eq!(
        err(&format!("{top}[site.static]\ndotfiles = \"maybe\"\n")),
        "DIR/site.toml:6: site[1].static.dotfiles: expected one of \"deny\", \"ignore\", \"allow\"; got \"maybe\""
    );
    assert!(err(&format!("{top}hostz = 1\n"))
        .starts_with("DIR/site.toml:5: unknown key \"site[1].hostz\"; did you mean \"hosts\"?"));
    assert_eq!(
        err(&format!("{top}[[site.cgi]]\nurl = \"/x/\"\n")),
        "DIR/site.toml:5: site[1].cgi[1]: needs one of dir = \"cgi-bin\", program = \"/path/to/program\" or pattern = \"*.cgi\""
    );
}

#[test]
fn a_site_needs_hosts_and_a_root_and_hosts_are_unique() {
    assert_eq!(
        err("root = \"public\"\n[[site]]\nroot = \"a\"\n"),
        "DIR/site.toml:2: site[1].hosts: missing: a [[site]] answers the host names it lists, such as hosts = [\"example.org\", \"*.example.org\"]"
    );
    assert_eq!(
        err("root = \"public\"\n[[site]]\nhosts = \"a.test\"\n"),
        "DIR/site.toml:2: site[1].root: missing: every [[site]] names its own document root"
    );
    assert_eq!(
        err("root = \"public\"\n[[site]]\nhosts = [\"a.test\"]\nroot = \"a\"\n[[site]]\nhosts = [\"A.test.\"]\nroot = \"b\"\n"),
        "DIR/site.toml:6: site[2].hosts: a.test is already a host of site[1]"
    );
    assert_eq!(
        err("root = \"public\"\n[[site]]\nhosts = [\"a.test\", \"a.test\"]\nroot = \"a\"\n"),
        "DIR/site.toml:3: site[1].hosts: a.test is listed twice"
    );
    assert_eq!(
        err("root = \"public\"\n[[site]]\nhosts = []\nroot = \"a\"\n"),
        "DIR/site.toml:3: site[1].hosts: expected at least one host name; got an array"
    );
    assert_eq!(
        err("root = \"public\"\n[[site]]\nhosts = [\"a\"]\nroot = \"missing\"\n"),
        "DIR/site.toml:4: site[1].root: cannot use DIR/missing as the document root: No such file or directory (os error 2)"
    );
    for bad in [
        "a.test:80",
        "http://a.test",
        "*",
        "a.*.test",
        "a..test",
        "*.",
        "",
    ] {
        let e = err(&format!(
            "root = \"public\"\n[[site]]\nhosts = [\"{bad}\"]\nroot = \"a\"\n"
        ));
        assert!(
            e.starts_with("DIR/site.toml:3: site[1].hosts: expected a host name such as"),
            "{bad}: {e}"
        );
    }
    assert!(
        err("root = \"public\"\n[[site]]\nhosts = [\"bücher.de\"]\nroot = \"a\"\n")
            .contains("xn--")
    );
}

#[test]
fn host_names_are_made_canonical() {
    use crate::config::site::host_name;
    assert_eq!(host_name("WWW.Example.Org.").unwrap(), "www.example.org");
    assert_eq!(host_name("*.Example.org").unwrap(), "*.example.org");
    assert_eq!(host_name("127.0.0.1").unwrap(), "127.0.0.1");
    assert_eq!(host_name("::1").unwrap(), "[::1]");
    assert_eq!(host_name("[::FFFF:1]").unwrap(), "[::ffff:1]");
    assert_eq!(host_name("my_host").unwrap(), "my_host");
}

#[test]
fn unknown_host_and_the_default_sites_hosts() {
    use crate::config::UnknownHost;
    let c = sites("root = \"public\"\nunknown_host = 421\nhosts = [\"Main.Test\"]\n").unwrap();
    assert_eq!(c.unknown_host, UnknownHost::Refuse(421));
    assert_eq!(c.site.hosts, ["main.test"]);
    let c = sites("root = \"public\"\nunknown_host = \"default\"\n").unwrap();
    assert_eq!(c.unknown_host, UnknownHost::Default);
    for bad in ["200", "\"421\"", "\"none\"", "true"] {
        assert_eq!(
            err(&format!("root = \"public\"\nunknown_host = {bad}\n")),
            format!(
                "DIR/site.toml:2: unknown_host: expected \"default\" (the top-level site answers), 421 or 404; got {}",
                bad
            ),
        );
    }
    assert_eq!(
        err("root = \"public\"\nhosts = \"a.test\"\n[[site]]\nhosts = [\"A.TEST\"]\nroot = \"a\"\n"),
        "DIR/site.toml:4: site[1].hosts: a.test is already a host of the default site (the top-level hosts)"
    );
}

/// `unknown_host` refusing while the top level names no `hosts`: valid,
/// but the default site then answers no request, and with no `[[site]]`
/// every request is refused. Said as a warning (at start, at a reload,
/// by --check-config), and the report says what an unknown host gets.
#[test]
fn an_unknown_host_refusal_without_default_hosts_is_warned_of() {
    let warned = |text: &str| -> Vec<String> {
        let c = sites(text).unwrap();
        let all = c.warnings();
        all.into_iter()
            .filter(|w| w.starts_with("unknown_host"))
            .collect()
    };
    assert_eq!(
        warned("root = \"public\"\nunknown_host = 404\n"),
        ["unknown_host = 404 and no site names a host (no hosts, no [[site]]): every request is answered 404; list the names this server answers in hosts = [\"example.org\"], or leave unknown_host out"]
    );
    let w = warned(
        "root = \"public\"\nunknown_host = 421\n[[site]]\nhosts = [\"a.test\"]\nroot = \"a\"\n",
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("unknown_host = 421 and the top level names no hosts: the default site (root ")
            && w[0].ends_with("/public) answers no request, and a host no [[site]] names gets 421; list the default site's names in hosts = [\"example.org\"] if it is to answer"),
        "{w:?}"
    );
    // With the default site's names, or answering unknown hosts: nothing.
    assert!(warned("root = \"public\"\nunknown_host = 421\nhosts = [\"main.test\"]\n").is_empty());
    assert!(warned("root = \"public\"\n[[site]]\nhosts = [\"a.test\"]\nroot = \"a\"\n").is_empty());
    #[cfg(feature = "ops")]
    {
        let c = sites("root = \"public\"\nunknown_host = 404\n").unwrap();
        let s = crate::config::summary::summary(&c, "site.toml");
        assert!(
            s.contains("\nsites: 0 besides the default one; a host no site names gets 404\n"),
            "{s}"
        );
    }
}
