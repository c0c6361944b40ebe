//! Content types by file extension: a built-in table, overridable.
//!
//! STUB: signatures are the contract; bodies are filled in by the semantics work.

/// The type for files whose extension is unknown.
pub const DEFAULT_TYPE: &str = "application/octet-stream";

/// Extension → content-type table: the built-in types plus configured overrides.
#[derive(Debug, Clone)]
pub struct MimeTable {
    _private: (),
}

impl MimeTable {
    /// The built-in table with `overrides` (extension without dot → full
    /// content type) taking precedence.
    pub fn new(overrides: &[(String, String)]) -> MimeTable {
        let _ = overrides;
        todo!()
    }

    /// The full `Content-Type` value for a file name or path (by its last
    /// extension, case-insensitive), with `; charset=utf-8` on text types.
    pub fn lookup(&self, path: &[u8]) -> &str {
        let _ = path;
        todo!()
    }
}
