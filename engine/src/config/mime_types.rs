//! `[static] mime_types`: a file in the format of `/etc/mime.types`
//! (Debian's media-types package, Apache's `TypesConfig`, nginx's
//! `mime.types` without the braces): one media type a line followed by
//! its extensions, separated by blanks; `#` starts a comment; a type with
//! no extension is allowed and adds nothing. It is read when the
//! configuration is loaded, so at start and again on each reload.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::units;
use crate::http::grammar;

/// A larger file is surely not a types file (Debian's is 74 KB).
const MAX_LEN: u64 = 4 << 20;

/// Why a types file cannot be used; the message names the file (and the
/// line).
#[derive(Debug)]
pub(crate) enum ReadError {
    /// It could not be opened or read.
    Io { path: PathBuf, source: io::Error },
    /// It is larger than [`MAX_LEN`].
    TooLarge(PathBuf),
    /// A line is not `type ext…`: its number and what is wrong.
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl ReadError {
    /// Whether permissions (or the sandbox) refused it.
    pub(crate) fn denied(&self) -> bool {
        matches!(self, ReadError::Io { source, .. } if source.kind() == io::ErrorKind::PermissionDenied)
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            ReadError::TooLarge(path) => write!(
                f,
                "{} is larger than 4 MiB; expected a mime.types file",
                path.display()
            ),
            ReadError::Line {
                path,
                line,
                message,
            } => write!(f, "{}:{line}: {message}", path.display()),
        }
    }
}

/// Reads `path`.
pub(crate) fn read(path: &Path) -> Result<Vec<(String, String)>, ReadError> {
    let failed = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(failed)?;
    let mut text = Vec::new();
    file.take(MAX_LEN + 1)
        .read_to_end(&mut text)
        .map_err(failed)?;
    if text.len() as u64 > MAX_LEN {
        return Err(ReadError::TooLarge(path.to_path_buf()));
    }
    parse(&text).map_err(|(line, message)| ReadError::Line {
        path: path.to_path_buf(),
        line,
        message,
    })
}

/// (extension, type) pairs in file order, or the 1-based line of the
/// first error and what is wrong with it.
fn parse(text: &[u8]) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        let line = line.split(|&b| b == b'#').next().unwrap_or_default();
        let line = std::str::from_utf8(line).map_err(|_| (n, "not valid UTF-8".to_string()))?;
        let mut words = line.split_ascii_whitespace();
        let Some(ty) = words.next() else { continue };
        if !units::is_media_type(ty) || ty.contains(';') {
            return Err((
                n,
                format!("expected a media type such as text/html first; got {ty:?}"),
            ));
        }
        for ext in words {
            if !grammar::is_token(ext.as_bytes()) {
                return Err((n, format!("{ext:?} is not a file extension")));
            }
            // brisk matches the last extension of a name (`a.tar.gz` is
            // `gz`), so a compound one such as `sarif.json` never applies.
            if !ext.contains('.') {
                out.push((ext.to_string(), ty.to_string()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text.as_bytes()).expect("parses")
    }

    #[test]
    fn the_etc_mime_types_format() {
        let got = pairs(
            "# comment line\n\n\
             text/plain\t\t\t\ttxt text pot\n\
             application/x-thing   # no extension: nothing\n\
             image/png png   # trailing comment\r\n\
             application/vnd.ieee.1905\t1905.1\n\
             application/x-eln+zip ELN\n",
        );
        let o = |e: &str, t: &str| (e.to_owned(), t.to_owned());
        assert_eq!(
            got,
            [
                o("txt", "text/plain"),
                o("text", "text/plain"),
                o("pot", "text/plain"),
                o("png", "image/png"),
                o("ELN", "application/x-eln+zip"),
            ]
        );
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            parse(b"text/plain txt\nnot-a-type foo\n"),
            Err((
                2,
                "expected a media type such as text/html first; got \"not-a-type\"".to_string()
            ))
        );
        assert_eq!(
            parse(b"\n\ntext/plain a/b\n"),
            Err((3, "\"a/b\" is not a file extension".to_string()))
        );
        assert_eq!(parse(b"text/plain t\xffxt\n").map_err(|e| e.0), Err(1));
        assert!(parse(b"text/plain;charset=utf-8 txt\n").is_err());
    }

    #[test]
    fn reading_names_the_file() {
        let dir = std::env::temp_dir().join(format!("brisk-mime-types-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("mime.types");
        std::fs::write(&file, "text/plain txt\n\nbad\n").expect("write");
        let err = read(&file).expect_err("bad line");
        assert!(!err.denied());
        assert_eq!(
            err.to_string(),
            format!(
                "{}:3: expected a media type such as text/html first; got \"bad\"",
                file.display()
            )
        );
        let missing = dir.join("none.types");
        assert!(read(&missing)
            .expect_err("missing")
            .to_string()
            .starts_with(&format!("cannot read {}: ", missing.display())));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
