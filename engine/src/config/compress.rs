//! `[compress]`: on-the-fly gzip, brotli and zstd (see
//! `crate::handlers::compress`). Off by default, as nginx's `gzip` and
//! Caddy's `encode`: compression costs CPU and an operator turns it on.
//! A build without the cargo feature `compress` refuses `enable = true`.

use toml::de::DeValue;
use toml::Spanned;

use super::load::{sorted, Loader, SET_FALSE};
use super::ConfigError;

pub(super) const COMPRESS_KEYS: &[&str] = &[
    "enable",
    "encodings",
    "types",
    "min_size",
    "max_size",
    "levels",
    "static_levels",
    "cache_size",
    "threads",
];

/// A content coding brisk produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coding {
    /// `zstd` (RFC 8878).
    Zstd,
    /// `br` (RFC 7932).
    Br,
    /// `gzip` (RFC 1952).
    Gzip,
}

impl Coding {
    /// Every coding, in the default order of preference.
    pub const ALL: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// Its name in `Accept-Encoding` and `Content-Encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Br => "br",
            Coding::Gzip => "gzip",
        }
    }

    /// A small index (0..3), for per-coding tables.
    pub fn index(self) -> usize {
        match self {
            Coding::Br => 0,
            Coding::Zstd => 1,
            Coding::Gzip => 2,
        }
    }

    /// The levels a coding takes.
    fn levels(self) -> (i64, i64) {
        match self {
            Coding::Zstd => (1, 22),
            Coding::Br => (0, 11),
            Coding::Gzip => (1, 9),
        }
    }
}

/// A compression level per coding, indexed by [`Coding::index`].
pub type Levels = [u32; 3];

/// `[compress]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressConfig {
    /// Compress answers for clients that accept it.
    pub enable: bool,
    /// The codings brisk offers, in its order of preference (used when the
    /// client weighs several alike).
    pub encodings: Vec<Coding>,
    /// Compressible content types: `type/subtype`, or `type/*`.
    pub types: Vec<String>,
    /// Bodies shorter than this are sent as they are.
    pub min_size: u64,
    /// Static files larger than this are sent as they are (their
    /// variants would crowd the cache out).
    pub max_size: u64,
    /// Levels for output compressed as it streams (CGI, servlets, handlers).
    pub levels: Levels,
    /// Levels for static files' variants (made once, then cached).
    pub static_levels: Levels,
    /// Memory the cached variants of static files may take, all workers
    /// together.
    pub cache_size: u64,
    /// Threads that compress static files' variants.
    pub threads: usize,
}

/// The content types compressed by default: text, and the structured
/// formats that are text underneath (nginx's and Caddy's usual lists).
pub const DEFAULT_TYPES: &[&str] = &[
    "text/*",
    "application/javascript",
    "application/json",
    "application/ld+json",
    "application/manifest+json",
    "application/xml",
    "application/xhtml+xml",
    "application/rss+xml",
    "application/atom+xml",
    "application/wasm",
    "image/svg+xml",
    "image/x-icon",
    // (What the built-in table calls `.ico`, IANA's name.)
    "image/vnd.microsoft.icon",
    "font/ttf",
    "font/otf",
];

/// `[compress]` defaults: off.
pub(super) fn defaults() -> CompressConfig {
    CompressConfig {
        enable: false,
        encodings: Coding::ALL.to_vec(),
        types: DEFAULT_TYPES.iter().map(|t| t.to_string()).collect(),
        min_size: 512,
        max_size: 8 << 20,
        // Streamed output is compressed as it goes, on the worker: fast
        // levels (nginx's gzip default is 1, Caddy's 5).
        levels: [4, 3, 5],
        // Static variants are made once per file version, off the event
        // loops: the smallest output worth the time.
        static_levels: [11, 19, 9],
        cache_size: 64 << 20,
        threads: 2,
    }
}

impl Loader<'_> {
    pub(super) fn compress(
        &self,
        v: &Spanned<DeValue<'_>>,
        c: &mut CompressConfig,
    ) -> Result<(), ConfigError> {
        for (key, value) in sorted(self.table("compress", v)?) {
            let name = key.get_ref().as_ref();
            let full = format!("compress.{name}");
            match name {
                "enable" => {
                    c.enable = self.boolean(&full, value)?;
                    if c.enable {
                        require!(self, "compress", value, &full, "compression", SET_FALSE);
                    }
                }
                "encodings" => {
                    let mut list = Vec::new();
                    for (s, item) in self.strings(&full, value)? {
                        let coding = coding(s).ok_or_else(|| {
                            self.expected(item, &full, "\"br\", \"zstd\" or \"gzip\"")
                        })?;
                        if list.contains(&coding) {
                            return Err(self.fail(item, &full, &format!("{s} is listed twice")));
                        }
                        list.push(coding);
                    }
                    if list.is_empty() {
                        // (Compression on with no coding would only add
                        // `Vary` to every answer; `enable = false` is
                        // what turns it off.)
                        return Err(self.fail(
                            value,
                            &full,
                            "names no coding: expected one or more of \"br\", \"zstd\" and \"gzip\" (enable = false turns compression off)",
                        ));
                    }
                    c.encodings = list;
                }
                "types" => {
                    let mut list = Vec::new();
                    for (s, item) in self.strings(&full, value)? {
                        if !is_type_pattern(s) {
                            return Err(self.expected(
                                item,
                                &full,
                                "a content type such as \"application/json\" or \"text/*\"",
                            ));
                        }
                        list.push(s.to_ascii_lowercase());
                    }
                    c.types = list;
                }
                "min_size" => c.min_size = self.size(&full, value, 0, 1 << 30)?,
                "max_size" => c.max_size = self.size(&full, value, 1, 1 << 30)?,
                "cache_size" => c.cache_size = self.size(&full, value, 0, 1 << 40)?,
                "levels" | "static_levels" => {
                    let levels = match name {
                        "levels" => &mut c.levels,
                        _ => &mut c.static_levels,
                    };
                    for (k, level) in sorted(self.table(&full, value)?) {
                        let kname = k.get_ref().as_ref();
                        let kfull = format!("{full}.{kname}");
                        let Some(coding) = coding(kname) else {
                            return Err(self.unknown(k, &full, &["br", "zstd", "gzip"]));
                        };
                        let (min, max) = coding.levels();
                        levels[coding.index()] = self.integer(&kfull, level, min, max)? as u32;
                    }
                }
                "threads" => c.threads = self.integer(&full, value, 1, 64)? as usize,
                _ => return Err(self.unknown(key, "compress", COMPRESS_KEYS)),
            }
        }
        Ok(())
    }
}

fn coding(name: &str) -> Option<Coding> {
    Coding::ALL.into_iter().find(|c| c.name() == name)
}

/// `type/subtype` or `type/*`, in the token characters of RFC 9110 §5.6.2.
fn is_type_pattern(s: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    match s.split_once('/') {
        Some((t, sub)) => token(t) && t != "*" && token(sub),
        None => false,
    }
}

/// The report's line of `[compress]`.
#[cfg(feature = "ops")]
pub(super) fn summary(c: &CompressConfig) -> String {
    if !c.enable {
        return "compress: off".to_string();
    }
    let names: Vec<&str> = c.encodings.iter().map(|c| c.name()).collect();
    let levels = |l: &Levels| {
        c.encodings
            .iter()
            .map(|e| format!("{} {}", e.name(), l[e.index()]))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "compress: {} for {}; bodies of {} bytes and more (static files up to {}); \
         streamed levels {}; static levels {}; cache {} bytes of memory, {} thread(s)",
        names.join(", "),
        c.types.join(", "),
        c.min_size,
        c.max_size,
        levels(&c.levels),
        levels(&c.static_levels),
        c.cache_size,
        c.threads,
    )
}
