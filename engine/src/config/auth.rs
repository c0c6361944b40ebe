//! `[[auth]]`: which requests need a login (RFC 7617 basic authentication)
//! and which htpasswd file holds the passwords.
//!
//! The htpasswd file is read and every line checked when the configuration
//! loads, so that a typo or an unsupported hash is reported with its file
//! and line at start-up (and by `--check-config`) rather than as failing
//! logins. This is the one place where the config layer calls into
//! `access`: the parser there is the only one that knows the formats.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::load::{sorted, Loader};
use super::{AuthRule, ConfigError};
use crate::access::auth::AuthMethods;
use crate::access::htpasswd::Htpasswd;
#[cfg(feature = "sites")]
use crate::http::grammar::is_token;

pub(super) const AUTH_KEYS: &[&str] = &[
    "path",
    "pattern",
    "realm",
    "htpasswd",
    "allow_plaintext",
    "methods",
    "except_methods",
];

/// Methods of RFC 9110 §9 and WebDAV (RFC 4918 §9, RFC 5789's PATCH),
/// which a rule may name in another case by mistake only.
#[cfg(feature = "sites")]
const STANDARD_METHODS: &[&str] = &[
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "CONNECT",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
];

impl Loader<'_> {
    /// `methods` or `except_methods`: HTTP methods, at least one, as
    /// [`AuthMethods`] keeps them (a space between two).
    #[cfg(feature = "sites")]
    #[inline(never)]
    fn methods(&self, full: &str, value: &Spanned<DeValue<'_>>) -> Result<Box<str>, ConfigError> {
        let mut list = String::new();
        for (m, v) in self.strings(full, value)? {
            if !is_token(m.as_bytes()) {
                let what = "HTTP methods (tokens, such as \"PUT\"; case matters)";
                return Err(self.expected(v, full, what));
            }
            // A method is case-sensitive (RFC 9110 §9.1): "get" is no
            // request's GET, so `methods = ["get"]` would ask no GET for a
            // login, and let every one through. A standard method's name
            // in another case is that typo.
            let upper = m.to_ascii_uppercase();
            if upper != m && STANDARD_METHODS.contains(&upper.as_str()) {
                let why = format!(
                    "{m:?} would match no {upper} request (methods are case-sensitive, RFC 9110 §9.1); did you mean \"{upper}\"?"
                );
                return Err(self.fail(v, full, &why));
            }
            if !list.is_empty() {
                list.push(' ');
            }
            list.push_str(m);
        }
        if list.is_empty() {
            return Err(self.expected(value, full, "at least one method"));
        }
        Ok(list.into_boxed_str())
    }

    pub(super) fn auth(&self, v: &Spanned<DeValue<'_>>) -> Result<Vec<AuthRule>, ConfigError> {
        self.each_table("auth", v, |section, item, table| {
            self.auth_rule(section, item, table)
        })
    }

    fn auth_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<AuthRule, ConfigError> {
        let mut matcher = None;
        let mut realm = None;
        let mut htpasswd = None;
        let mut allow_plaintext = false;
        let mut methods = AuthMethods::All;
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            match name {
                "path" | "pattern" => self.set_matcher(&mut matcher, key, name, &full, value)?,
                "realm" => {
                    let s = self.string(&full, value)?;
                    if s.is_empty() || s.chars().any(|c| c.is_control() || c == '"' || c == '\\') {
                        return Err(self.expected(
                            value,
                            &full,
                            "a non-empty name without \", \\ or control characters",
                        ));
                    }
                    realm = Some(s.to_string());
                }
                "htpasswd" => htpasswd = Some((self.path(&full, value)?, full, value)),
                "allow_plaintext" => allow_plaintext = self.boolean(&full, value)?,
                "methods" | "except_methods" => {
                    let what = "per-method rules";
                    require!(self, "sites", key, &full, what, super::load::REMOVE);
                    if methods != AuthMethods::All {
                        let both =
                            "give methods (these only) or except_methods (all but these), not both";
                        return Err(self.fail(key, &full, both));
                    }
                    #[cfg(feature = "sites")]
                    let list = self.methods(&full, value)?;
                    #[cfg(not(feature = "sites"))]
                    let list = Box::from("");
                    methods = match name {
                        "methods" => AuthMethods::Only(list),
                        _ => AuthMethods::Except(list),
                    };
                }
                _ => return Err(self.unknown(key, section, AUTH_KEYS)),
            }
        }
        let matcher = self.required_matcher(matcher, item, section)?;
        let realm = realm
            .ok_or_else(|| self.fail(item, section, "needs realm = \"Name shown at login\""))?;
        let Some((path, full, value)) = htpasswd else {
            return Err(self.fail(item, section, "needs htpasswd = \"path/to/htpasswd\""));
        };
        // Checked now, with allow_plaintext known whatever the key order.
        if let Some(readable) = self.src.readable {
            readable(&path).map_err(|e| self.fail(value, &full, &e.to_string()))?;
        }
        Htpasswd::read(&path, allow_plaintext)
            .map_err(|e| self.fail(value, &full, &e.to_string()))?;
        Ok(AuthRule {
            matcher,
            realm,
            htpasswd: path,
            allow_plaintext,
            methods,
            origin: self.origin(&full, value),
        })
    }
}
