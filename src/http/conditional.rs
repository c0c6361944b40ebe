//! Conditional requests (RFC 9110 §13) and entity tags.
//!
//! STUB: signatures are the contract; bodies are filled in by the semantics work.

use super::Method;

/// The validators of the selected representation.
#[derive(Debug, Clone, Copy)]
pub struct Validators<'a> {
    /// The entity tag with its quotes, e.g. `"5f3a1c2b-1a4"` (a strong tag).
    pub etag: &'a [u8],
    /// Last modification time, whole seconds since the Unix epoch.
    pub last_modified: u64,
}

/// The precondition header values of a request (raw, as sent).
#[derive(Debug, Clone, Copy, Default)]
pub struct Preconditions<'a> {
    pub if_match: Option<&'a [u8]>,
    pub if_none_match: Option<&'a [u8]>,
    pub if_modified_since: Option<&'a [u8]>,
    pub if_unmodified_since: Option<&'a [u8]>,
}

/// The result of evaluating preconditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Go on with the request.
    Proceed,
    /// 304 Not Modified (GET/HEAD only).
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// Evaluates preconditions in the order of RFC 9110 §13.2.2.
pub fn evaluate(pre: &Preconditions, v: &Validators, method: super::Method) -> Precondition {
    let _ = (pre, v, method, Method::Get);
    todo!()
}

/// Whether an `If-Range` value (an entity tag or an HTTP-date) still matches,
/// so the Range header applies (RFC 9110 §13.1.5): strong comparison for
/// tags, exact equality for dates.
pub fn if_range_matches(if_range: &[u8], v: &Validators) -> bool {
    let _ = (if_range, v);
    todo!()
}

/// Writes the strong entity tag brisk uses for a file, with quotes:
/// `"<mtime seconds hex>-<size hex>"`.
pub fn write_etag(mtime_secs: u64, size: u64, out: &mut Vec<u8>) {
    let _ = (mtime_secs, size, out);
    todo!()
}
