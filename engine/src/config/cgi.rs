//! `[[cgi]]`: which requests run a program (RFC 3875), checked key by key.
//!
//! Directories and programs must exist when the file is loaded, so that a
//! typo is reported with its line rather than as a 404 or a 502 later.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::load::{sorted, Loader};
use super::{CgiRule, CgiTarget, ConfigError};
use crate::http::grammar;

/// `(key, "file:line: cgi[N].key")` for each path key of one rule.
pub(crate) type PathOrigins = Vec<(&'static str, String)>;

pub(super) const CGI_KEYS: &[&str] = &[
    "url",
    "dir",
    "program",
    "pattern",
    "interpreter",
    "env",
    "writable",
    "max_body",
];

/// Whether `name` is a portable environment variable name: ASCII letters,
/// digits and `_`, not starting with a digit (what a shell can read back).
fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether `url` is a URL prefix that a normalised request path can start
/// with: a leading `/`, no `.`, `..` or empty segments (one trailing `/`
/// is fine), no control characters.
pub(super) fn is_url_prefix(url: &str) -> bool {
    let Some(rest) = url.strip_prefix('/') else {
        return false;
    };
    let mut segments = rest.split('/').peekable();
    while let Some(s) = segments.next() {
        let last = segments.peek().is_none();
        if (s.is_empty() && !last) || s == "." || s == ".." {
            return false;
        }
    }
    grammar::is_field_value(url.as_bytes())
}

/// A regular file with at least one execute bit. Whether the server's
/// user may run it is checked per request, after privileges are dropped.
fn is_executable(path: &Path) -> Result<bool, std::io::Error> {
    let meta = std::fs::metadata(path)?;
    Ok(meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

impl Loader<'_> {
    /// The rules, and per rule where each path it names (`dir`,
    /// `program`, `interpreter`) was set, for the checks made later.
    pub(super) fn cgi(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<(Vec<CgiRule>, Vec<PathOrigins>), ConfigError> {
        let items = match v.get_ref() {
            DeValue::Array(items) => items,
            _ => return Err(self.expected(v, "cgi", "an array of tables ([[cgi]])")),
        };
        let mut rules = Vec::with_capacity(items.len());
        let mut origins = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let section = format!("cgi[{}]", i + 1);
            let table = self.table(&section, item)?;
            rules.push(self.cgi_rule(&section, item, table)?);
            let mut here = Vec::new();
            for (key, value) in sorted(table) {
                let name: &'static str = match key.get_ref().as_ref() {
                    "dir" => "dir",
                    "program" => "program",
                    "interpreter" => "interpreter",
                    "writable" => "writable",
                    _ => continue,
                };
                here.push((name, self.origin(&format!("{section}.{name}"), value)));
            }
            origins.push(here);
        }
        Ok((rules, origins))
    }

    fn cgi_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<CgiRule, ConfigError> {
        let mut url: Option<(String, &Spanned<DeValue<'_>>)> = None;
        // (key, value, span) of the one of dir/program/pattern given.
        let mut target: Option<(&str, &Spanned<DeValue<'_>>)> = None;
        let mut interpreter = None;
        let mut env = Vec::new();
        let mut writable = Vec::new();
        let mut max_body = None;
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            match name {
                "url" => {
                    let s = self.string(&full, value)?;
                    if !is_url_prefix(s) {
                        return Err(self.expected(
                            value,
                            &full,
                            "a URL prefix starting with \"/\" without \".\", \"..\" or empty segments",
                        ));
                    }
                    url = Some((s.to_string(), value));
                }
                "dir" | "program" | "pattern" => {
                    if let Some((other, _)) = target {
                        return Err(self.fail(
                            key,
                            &full,
                            &format!("give only one of dir, program, pattern (this rule already has {other})"),
                        ));
                    }
                    target = Some((name, value));
                }
                "interpreter" => {
                    let path = self.path(&full, value)?;
                    match is_executable(&path) {
                        Ok(true) => {}
                        Ok(false) => {
                            return Err(self.fail(
                                value,
                                &full,
                                &format!("{} is not an executable file", path.display()),
                            ))
                        }
                        Err(e) => {
                            return Err(self.fail(
                                value,
                                &full,
                                &format!("cannot use {}: {e}", path.display()),
                            ))
                        }
                    }
                    interpreter = Some(path);
                }
                "env" => env = self.cgi_env(&full, value)?,
                "writable" => writable = self.cgi_writable(&full, value)?,
                "max_body" => max_body = Some(self.size(&full, value, 0, u64::MAX)?),
                _ => return Err(self.unknown(key, section, CGI_KEYS)),
            }
        }
        let Some((kind, value)) = target else {
            return Err(self.fail(
                item,
                section,
                "needs one of dir = \"cgi-bin\", program = \"/path/to/program\" or pattern = \"*.cgi\"",
            ));
        };
        let full = format!("{section}.{kind}");
        let target = match kind {
            "pattern" => {
                if let Some((_, u)) = url {
                    return Err(self.fail(
                        u,
                        &format!("{section}.url"),
                        "not used with pattern, which matches file names anywhere under the root",
                    ));
                }
                let s = self.string(&full, value)?;
                if s.is_empty() || s.contains('/') || !grammar::is_field_value(s.as_bytes()) {
                    return Err(self.expected(
                        value,
                        &full,
                        "a glob on the file name like \"*.cgi\" (no \"/\")",
                    ));
                }
                CgiTarget::Pattern(s.to_string())
            }
            _ => {
                let Some((url, _)) = url else {
                    return Err(self.fail(
                        item,
                        section,
                        &format!("needs url = \"/prefix/\" with {kind}"),
                    ));
                };
                let path = self.path(&full, value)?;
                if kind == "dir" {
                    CgiTarget::Dir {
                        url,
                        dir: self.cgi_dir(&full, value, &path)?,
                    }
                } else {
                    self.cgi_program(&full, value, &path, interpreter.is_some())?;
                    CgiTarget::Program { url, program: path }
                }
            }
        };
        Ok(CgiRule {
            target,
            interpreter,
            env,
            writable,
            max_body,
        })
    }

    /// The directory must exist; it is stored canonical, like the root.
    fn cgi_dir(
        &self,
        full: &str,
        value: &Spanned<DeValue<'_>>,
        path: &Path,
    ) -> Result<PathBuf, ConfigError> {
        self.existing_dir(full, value, path, "a CGI directory")
    }

    /// `path` (used as `role`) must be an existing directory; returns it
    /// canonical.
    pub(super) fn existing_dir(
        &self,
        full: &str,
        value: &Spanned<DeValue<'_>>,
        path: &Path,
        role: &str,
    ) -> Result<PathBuf, ConfigError> {
        let canonical = crate::sys::fs::canonical(path).map_err(|e| {
            self.fail(
                value,
                full,
                &format!("cannot use {} as {role}: {e}", path.display()),
            )
        })?;
        if !canonical.is_dir() {
            return Err(self.fail(
                value,
                full,
                &format!("{} is not a directory", path.display()),
            ));
        }
        Ok(canonical)
    }

    /// The program must be a regular file, executable unless an
    /// interpreter runs it.
    fn cgi_program(
        &self,
        full: &str,
        value: &Spanned<DeValue<'_>>,
        path: &Path,
        interpreted: bool,
    ) -> Result<(), ConfigError> {
        let meta = std::fs::metadata(path).map_err(|e| {
            self.fail(
                value,
                full,
                &format!("cannot use {} as a CGI program: {e}", path.display()),
            )
        })?;
        if !meta.is_file() {
            return Err(self.fail(
                value,
                full,
                &format!("{} is not a regular file", path.display()),
            ));
        }
        if !interpreted && meta.permissions().mode() & 0o111 == 0 {
            return Err(self.fail(
                value,
                full,
                &format!(
                    "{} is not executable (chmod +x it, or give an interpreter)",
                    path.display()
                ),
            ));
        }
        Ok(())
    }

    /// `writable`: directories (relative to the file) that must exist;
    /// stored canonical, sorted and without duplicates, so that two rules
    /// naming the same places share one CGI launcher.
    fn cgi_writable(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<PathBuf>, ConfigError> {
        let mut out = Vec::new();
        for (s, item) in self.strings(full, v)? {
            if s.is_empty() || s.contains('\0') {
                return Err(self.expected(item, full, "a non-empty path"));
            }
            let path = self.src.base.join(s);
            let canonical =
                self.existing_dir(full, item, &path, "a directory CGI programs may write to")?;
            if canonical == Path::new("/") {
                return Err(self.fail(
                    item,
                    full,
                    "the whole file system cannot be writable (set sandbox = false for that)",
                ));
            }
            out.push(canonical);
        }
        crate::sort::sort_by(&mut out, |a, b| a.cmp(b));
        out.dedup();
        Ok(out)
    }

    pub(super) fn cgi_env(
        &self,
        full: &str,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        let mut out = Vec::new();
        for (key, value) in sorted(self.table(full, v)?) {
            let name = key.get_ref().as_ref();
            let key_name = format!("{full}.{name}");
            if !is_env_name(name) {
                return Err(self.fail(
                    key,
                    &key_name,
                    "not a valid environment variable name (letters, digits and _, not starting with a digit)",
                ));
            }
            let s = self.string(&key_name, value)?;
            if s.contains('\0') {
                return Err(self.fail(value, &key_name, "NUL is not allowed in a value"));
            }
            out.push((name.to_string(), s.to_string()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::{is_env_name, is_url_prefix};

    #[test]
    fn env_names() {
        assert!(is_env_name("TOOL_ROOT"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name(""));
        assert!(!is_env_name("1A"));
        assert!(!is_env_name("A=B"));
        assert!(!is_env_name("A-B"));
        assert!(!is_env_name("A\0"));
    }

    #[test]
    fn url_prefixes() {
        for ok in ["/", "/cgi-bin/", "/tool", "/a/b/"] {
            assert!(is_url_prefix(ok), "{ok}");
        }
        for bad in [
            "", "cgi-bin/", "//", "/a//b", "/./", "/a/../b", "/a\n", "/a/..",
        ] {
            assert!(!is_url_prefix(bad), "{bad}");
        }
    }
}
