//! `[servlets]`: Lua files under the listed URL prefixes run as
//! servlets (see `crate::handlers::servlets`); nothing else under the
//! root is ever executed. `enable`, `paths` and `config` are the
//! contract's names; the limits have safe defaults. A build without the
//! cargo feature `servlets` refuses `enable = true`.

use std::time::Duration;

use toml::de::DeValue;
use toml::Spanned;

use super::load::{sorted, Loader, SET_FALSE};
use super::value::Value;
use super::ConfigError;

pub(super) const SERVLET_KEYS: &[&str] = &[
    "enable",
    "paths",
    "config",
    "cpu_time",
    "memory",
    "max_output",
    "shared_memory",
];

/// `[servlets]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServletsConfig {
    /// Run `*.lua` files under `paths` as servlets.
    pub enable: bool,
    /// URL prefixes (normalised, ending in `/`) whose `.lua` files run.
    pub paths: Vec<String>,
    /// Handed to each servlet's `handler_init(cfg)` as `cfg.config`.
    pub config: Value,
    /// CPU time one request may take in Lua (all its pieces together);
    /// past it the servlet is stopped and the client answered 503.
    pub cpu_time: Duration,
    /// Memory one worker's Lua state may hold (all its servlets); an
    /// allocation past it is an error in the servlet (500).
    pub memory: u64,
    /// Bytes one answer may write, its header lines included; past it, an
    /// error (500, or cut short).
    pub max_output: u64,
    /// Bytes of keys and values `brisk.shared` holds, all workers together.
    pub shared_memory: u64,
}

/// `[servlets]` defaults: off; `/servlets/` once turned on.
pub(super) fn defaults() -> ServletsConfig {
    ServletsConfig {
        enable: false,
        paths: vec!["/servlets/".to_string()],
        config: Value::default(),
        cpu_time: Duration::from_secs(1),
        memory: 64 << 20,
        max_output: 16 << 20,
        shared_memory: 1 << 20,
    }
}

impl Loader<'_> {
    pub(super) fn servlets(
        &self,
        v: &Spanned<DeValue<'_>>,
        s: &mut ServletsConfig,
    ) -> Result<(), ConfigError> {
        for (key, value) in sorted(self.table("servlets", v)?) {
            let name = key.get_ref().as_ref();
            let full = format!("servlets.{name}");
            match name {
                "enable" => {
                    s.enable = self.boolean(&full, value)?;
                    if s.enable {
                        require!(self, "servlets", value, &full, "servlets", SET_FALSE);
                    }
                }
                #[cfg(feature = "servlets")]
                "paths" => {
                    let mut paths = Vec::new();
                    for (p, item) in self.strings(&full, value)? {
                        let mut norm = Vec::new();
                        let ok = p.starts_with('/')
                            && p.ends_with('/')
                            && crate::http::path::decode_and_normalize(p.as_bytes(), &mut norm)
                                .is_ok()
                            && norm == p.as_bytes();
                        if !ok {
                            return Err(self.expected(
                                item,
                                &full,
                                "URL prefixes such as \"/servlets/\" (normalised, starting \
                                 and ending with /)",
                            ));
                        }
                        paths.push(p.to_string());
                    }
                    if paths.is_empty() {
                        return Err(self.expected(value, &full, "at least one URL prefix"));
                    }
                    s.paths = paths;
                }
                #[cfg(feature = "servlets")]
                "config" => s.config = self.config_table(&full, value)?,
                #[cfg(feature = "servlets")]
                "cpu_time" => {
                    s.cpu_time = self.duration(&full, value, false)?;
                }
                #[cfg(feature = "servlets")]
                "memory" => s.memory = self.size(&full, value, 1 << 20, 1 << 40)?,
                #[cfg(feature = "servlets")]
                "max_output" => s.max_output = self.size(&full, value, 1, 1 << 40)?,
                #[cfg(feature = "servlets")]
                "shared_memory" => s.shared_memory = self.size(&full, value, 0, 1 << 34)?,
                // (A build without servlets uses none of the others: their
                // names are checked, not their values.)
                #[cfg(not(feature = "servlets"))]
                _ if SERVLET_KEYS.contains(&name) => {}
                _ => return Err(self.unknown(key, "servlets", SERVLET_KEYS)),
            }
        }
        Ok(())
    }
}
