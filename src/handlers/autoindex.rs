//! Directory listings (`[static] autoindex = true`): sorted, escaped HTML.
//!
//! STUB: signatures are the contract; bodies are filled in by the semantics work.

/// One directory entry to list.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The file name as bytes (Unix file names need not be UTF-8).
    pub name: Vec<u8>,
    pub is_dir: bool,
    pub size: u64,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: u64,
}

/// Renders a listing of `entries` for the directory at decoded URL path
/// `url_path` (ends with `/`) into `out` as a complete HTML document.
/// Entries are sorted (directories first, then by name, bytewise); names
/// are percent-encoded in links and HTML-escaped in text.
pub fn render(url_path: &[u8], entries: &mut [Entry], out: &mut Vec<u8>) {
    let _ = (url_path, entries, out);
    todo!()
}
