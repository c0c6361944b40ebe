//! `[[handlers]]`: named handlers mounted at paths, as the Gerbil
//! httpd's `handlers:` list: the brisk binary's built-ins (`echo`) and
//! those an embedding program registers with
//! [`crate::server::Server::register`]. The names are checked against
//! what is registered when the configuration is loaded by the `brisk`
//! command (its built-ins) and again when a server starts with it (an
//! embedder's), each time naming the file, line and key.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::load::{sorted, Loader};
use super::value::Value;
use super::{units, Config, ConfigError};

pub(super) const HANDLER_KEYS: &[&str] = &["path", "handler", "config"];

/// The handlers the `brisk` command registers (see
/// `crate::handlers::builtin`), which its configuration may name: the
/// health, readiness, metrics and status handlers only with the cargo
/// feature `ops`.
pub const BUILT_IN_HANDLERS: &[&str] = if cfg!(feature = "ops") {
    &["echo", "health", "ready", "metrics", "status"]
} else {
    &["echo"]
};

/// The built-in handlers of the cargo feature `ops`.
const OPS_HANDLERS: &[&str] = &["health", "ready", "metrics", "status"];

/// One `[[handlers]]` entry: the handler registered as `handler`,
/// mounted at `path`, initialised with `config`.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerRule {
    /// A normalised absolute path: one ending in `/` takes every path
    /// below it, any other exactly that path (as `Server::mount`).
    pub path: String,
    /// The registered name.
    pub handler: String,
    /// The `config` table, handed to the handler's init (empty without one).
    pub config: Value,
    /// `site.toml:12: handlers[1].handler`, for errors found later (an
    /// unknown name, an init that fails).
    pub origin: String,
}

impl Config {
    /// Checks that every `[[handlers]]` entry names one of `registered`;
    /// the error names the file, line and key, and lists them.
    pub fn check_handlers(&self, registered: &[&str]) -> Result<(), ConfigError> {
        if let Some(h) = super::SiteConfig::all(self)
            .flat_map(|site| &site.handlers)
            .find(|h| !registered.contains(&h.handler.as_str()))
        {
            return Err(ConfigError {
                message: unknown_handler(h, registered),
            });
        }
        // An entry that one above it on its site covers never answers.
        for site in super::SiteConfig::all(self) {
            for (i, rule) in site.handlers.iter().enumerate() {
                let above = &site.handlers[..i];
                if let Some(before) = above.iter().find(|b| covers(&b.path, &rule.path)) {
                    return Err(ConfigError {
                        message: shadowed_handler(rule, &before.path),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Whether a mount at `before` takes every path of one at `path` (see
/// `Mount::rest`): the same path, or one below a prefix ending in `/`.
fn covers(before: &str, path: &str) -> bool {
    before == path || (before.ends_with('/') && path.starts_with(before))
}

/// `site.toml:4: handlers[2].handler: the handler "x" at /a/b would never
/// answer: …`, for an entry that the mount at `before` covers.
pub fn shadowed_handler(rule: &HandlerRule, before: &str) -> String {
    format!(
        "{}: the handler \"{}\" at {} would never answer: the one at {before} before it takes every path there (the first match answers: list the longer path first)",
        rule.origin, rule.handler, rule.path
    )
}

/// `site.toml:4: handlers[1].handler: no handler is registered as "x"; …`.
pub fn unknown_handler(rule: &HandlerRule, registered: &[&str]) -> String {
    if !cfg!(feature = "ops") && OPS_HANDLERS.contains(&rule.handler.as_str()) {
        return format!(
            "{}: this brisk was built without the built-in handler \"{}\" (the cargo feature \
             `ops`); remove it, or build with the feature",
            rule.origin, rule.handler
        );
    }
    let known = match registered {
        [] => "none is registered".to_string(),
        names => format!("registered: {}", units::one_of(names)),
    };
    let hint = match units::nearest(&rule.handler, registered) {
        Some(n) => format!("did you mean \"{n}\"? "),
        None => String::new(),
    };
    format!(
        "{}: no handler is registered as \"{}\"; {hint}{known}",
        rule.origin, rule.handler
    )
}

impl Loader<'_> {
    pub(super) fn handlers(
        &self,
        v: &Spanned<DeValue<'_>>,
    ) -> Result<Vec<HandlerRule>, ConfigError> {
        self.each_table("handlers", v, |section, item, table| {
            self.handler_rule(section, item, table)
        })
    }

    fn handler_rule(
        &self,
        section: &str,
        item: &Spanned<DeValue<'_>>,
        table: &DeTable<'_>,
    ) -> Result<HandlerRule, ConfigError> {
        let (mut path, mut handler, mut config) = (None, None, Value::default());
        for (key, value) in sorted(table) {
            let name = key.get_ref().as_ref();
            let full = format!("{section}.{name}");
            match name {
                "path" => {
                    let s = self.string(&full, value)?;
                    let mut norm = Vec::new();
                    let normal = s.starts_with('/')
                        && crate::http::path::decode_and_normalize(s.as_bytes(), &mut norm).is_ok()
                        && norm == s.as_bytes();
                    if !normal {
                        return Err(self.expected(
                            value,
                            &full,
                            "a normalised absolute path (\"/api/\" for everything below it, \
                             \"/status\" for that path only; no %-escapes, no . or .. \
                             segments, no //)",
                        ));
                    }
                    path = Some(s.to_string());
                }
                "handler" => {
                    let s = self.string(&full, value)?;
                    if s.is_empty() {
                        return Err(self.expected(value, &full, "a handler's name"));
                    }
                    handler = Some((s.to_string(), self.origin(&full, value)));
                }
                "config" => config = self.config_table(&full, value)?,
                _ => return Err(self.unknown(key, section, HANDLER_KEYS)),
            }
        }
        let path = path.ok_or_else(|| self.fail(item, section, "needs path = \"/prefix/\""))?;
        let (handler, origin) =
            handler.ok_or_else(|| self.fail(item, section, "needs handler = \"name\""))?;
        Ok(HandlerRule {
            path,
            handler,
            config,
            origin,
        })
    }
}
