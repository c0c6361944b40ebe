//! `[[webdav]]`: a tree served and written by WebDAV (RFC 4918), per
//! site; the cargo feature `webdav` (without it the key is refused).

use std::path::PathBuf;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::load::{sorted, Loader};
use super::ConfigError;

pub(super) const WEBDAV_KEYS: &[&str] = &["path", "root", "read_only", "max_upload", "locks"];

/// One `[[webdav]]` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebdavRule {
    /// The URL prefix it answers beneath, ending in `/` (`/dav/`).
    pub path: String,
    /// The tree it serves and writes (absolute, canonical): the only one
    /// the sandbox lets the server write.
    pub root: PathBuf,
    /// Only the reading methods (GET, HEAD, OPTIONS, PROPFIND).
    pub read_only: bool,
    /// The largest PUT body; `None`: `limits.max_body`.
    pub max_upload: Option<u64>,
}

impl Loader<'_> {
    /// One table of the `[[webdav]]` array (`webdav[N]`, `section`).
    pub(super) fn webdav_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<WebdavRule, ConfigError> {
        let (mut path, mut root) = (None, None);
        let (mut read_only, mut max_upload) = (false, None);
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            match name {
                "path" => {
                    let s = self.string(&full, value)?;
                    if !super::cgi::is_url_prefix(s) {
                        let what = "a URL prefix starting with \"/\" without \".\", \"..\" or empty segments";
                        return Err(self.expected(value, &full, what));
                    }
                    let mut s = s.to_string();
                    if !s.ends_with('/') {
                        s.push('/');
                    }
                    path = Some(s);
                }
                "root" => {
                    let p = self.path(&full, value)?;
                    root = Some(self.existing_dir(&full, value, &p, "the WebDAV root")?);
                }
                "read_only" => read_only = self.boolean(&full, value)?,
                "max_upload" => max_upload = Some(self.size(&full, value, 0, u64::MAX)?),
                "locks" => {
                    if self.boolean(&full, value)? {
                        return Err(self.fail(
                            value,
                            &full,
                            "LOCK and UNLOCK (class 2) are not built yet; remove it or set it to false",
                        ));
                    }
                }
                _ => return Err(self.unknown(key, section, WEBDAV_KEYS)),
            }
        }
        let Some(path) = path else {
            return Err(self.fail(item, section, "needs path = \"/dav/\""));
        };
        let Some(root) = root else {
            return Err(self.fail(item, section, "needs root = \"/srv/dav\""));
        };
        Ok(WebdavRule {
            path,
            root,
            read_only,
            max_upload,
        })
    }
}
