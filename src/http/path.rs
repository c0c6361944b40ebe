//! Request-target to file-path mapping rules: percent-decoding (once),
//! dot-segment resolution, dotfile detection. Never touches the disk.
//!
//! STUB: signatures are the contract; bodies are filled in by the semantics work.

use super::Status;

/// Why a path was refused, and with which status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathError {
    pub status: Status,
    pub reason: &'static str,
}

/// Splits an origin-form target into its raw path and raw query (without `?`).
pub fn split_target(target: &[u8]) -> (&[u8], Option<&[u8]>) {
    let _ = target;
    todo!()
}

/// Percent-decodes `path` exactly once into `out` (cleared first), then
/// resolves dot-segments (RFC 3986 §5.2.4) and merges repeated slashes.
/// The result starts with `/` and keeps a trailing slash if there was one.
pub fn decode_and_normalize(path: &[u8], out: &mut Vec<u8>) -> Result<(), PathError> {
    let _ = (path, out);
    todo!()
}

/// Whether any segment of a normalised path starts with `.`
/// (`/.git/config`, `/a/.htpasswd`); a first segment `.well-known` is exempt.
pub fn has_dotfile_segment(path: &[u8]) -> bool {
    let _ = path;
    todo!()
}
