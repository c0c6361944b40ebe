//! htpasswd files: every line checked when the file is loaded, and a
//! watched copy per worker that follows changes to the file.
//!
//! The format is Apache's: one `user:hash` per line; blank lines and lines
//! starting with `#` are skipped; leading and trailing whitespace is
//! ignored; a `:` after the hash ends it (Apache ignores further fields
//! too). A user listed twice is an error rather than a guess which line
//! wins. The hash formats are those `htpasswd` writes; see
//! `brisk.example.toml`.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Error;
use brisk_hash::Hash;

/// Larger files are refused: a password file that big is a mistake.
pub(super) const MAX_FILE: u64 = 16 << 20;

/// How often a worker looks at the file's metadata for a change.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Verified credentials remembered per file and worker.
pub const CACHE_ENTRIES: usize = 1024;

/// A parsed htpasswd file.
#[derive(Clone, Default)]
pub struct Htpasswd {
    /// User name → index into `hashes`.
    users: HashMap<Box<[u8]>, usize>,
    hashes: Vec<Hash>,
    /// The entry an unknown user's password is hashed against: the
    /// costliest, so that no user's answer comes later than an unknown
    /// name's (the first entry would do only if all cost the same).
    decoy: usize,
}

/// A line that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it (never includes the hash or a password).
    pub message: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LineError {}

impl Htpasswd {
    /// Parses the text of an htpasswd file. Plaintext entries are accepted
    /// only with `allow_plaintext`. A UTF-8 byte order mark at the start
    /// (editors on Windows write one) is not part of the first name.
    pub fn parse(text: &[u8], allow_plaintext: bool) -> Result<Htpasswd, LineError> {
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        let mut table = Htpasswd::default();
        let mut first_line: HashMap<Box<[u8]>, usize> = HashMap::new();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            let l = raw.trim_ascii();
            if l.is_empty() || l[0] == b'#' {
                continue;
            }
            let fail = |message: String| LineError { line, message };
            let Some(colon) = l.iter().position(|&b| b == b':') else {
                return Err(fail("expected user:hash".into()));
            };
            let user = &l[..colon];
            if user.is_empty() {
                return Err(fail("empty user name".into()));
            }
            if user.iter().any(|&b| b < 0x20 || b == 0x7f) {
                return Err(fail("control character in the user name".into()));
            }
            let rest = &l[colon + 1..];
            let field = &rest[..rest.iter().position(|&b| b == b':').unwrap_or(rest.len())];
            let hash = Hash::parse(field, allow_plaintext).map_err(|e| fail(e.to_string()))?;
            if let Some(&before) = first_line.get(user) {
                return Err(fail(format!(
                    "user {} is already defined on line {before}",
                    escape(user)
                )));
            }
            first_line.insert(user.into(), line);
            table.users.insert(user.into(), table.hashes.len());
            if table
                .hashes
                .get(table.decoy)
                .is_none_or(|d| hash.cost() > d.cost())
            {
                table.decoy = table.hashes.len();
            }
            table.hashes.push(hash);
        }
        Ok(table)
    }

    /// Reads and parses a file. Errors read `PATH: …` or `PATH:LINE: …`.
    pub fn read(path: &Path, allow_plaintext: bool) -> Result<Htpasswd, Error> {
        read_file(path, allow_plaintext).map(|(table, _)| table)
    }

    /// Number of users.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether the file lists nobody (every login then fails).
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Whether `user` is listed.
    pub fn contains(&self, user: &[u8]) -> bool {
        self.users.contains_key(user)
    }

    /// `Some(matches)` for a listed user, `None` for an unknown one. An
    /// unknown user costs as much as the costliest known one (that entry's
    /// hash is computed and its result thrown away), so response times do
    /// not tell which user names exist.
    pub(crate) fn verify(&self, user: &[u8], password: &[u8]) -> Option<bool> {
        match self.users.get(user) {
            Some(&i) => Some(self.hashes[i].verify(password)),
            None => {
                if let Some(decoy) = self.hashes.get(self.decoy) {
                    std::hint::black_box(decoy.verify(password));
                }
                None
            }
        }
    }

    /// The user-id an unknown user's password is hashed against.
    #[cfg(test)]
    pub(crate) fn decoy(&self) -> Option<&[u8]> {
        self.users
            .iter()
            .find(|(_, &i)| i == self.decoy)
            .map(|(u, _)| &u[..])
    }

    /// The scheme of `user`'s hash (`"bcrypt"`, …), for diagnostics.
    pub fn scheme(&self, user: &[u8]) -> Option<&'static str> {
        self.users.get(user).map(|&i| self.hashes[i].scheme())
    }
}

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Signature {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Signature {
    fn of(m: &std::fs::Metadata) -> Signature {
        Signature {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

fn read_file(path: &Path, allow_plaintext: bool) -> Result<(Htpasswd, Signature), Error> {
    let cannot_read = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    // The signature comes from the open file, so it describes exactly the
    // bytes read even if the file is replaced meanwhile.
    let meta = file.metadata().map_err(cannot_read)?;
    if !meta.is_file() {
        return Err(Error::NotAFile(path.to_path_buf()));
    }
    if meta.len() > MAX_FILE {
        return Err(Error::TooLarge(path.to_path_buf()));
    }
    let mut text = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE + 1)
        .read_to_end(&mut text)
        .map_err(cannot_read)?;
    let table = Htpasswd::parse(&text, allow_plaintext).map_err(|error| Error::Line {
        path: path.to_path_buf(),
        error,
    })?;
    Ok((table, Signature::of(&meta)))
}

/// One worker's copy of an htpasswd file, re-read when the file changes,
/// with the credentials it has verified.
pub(crate) struct Watched {
    path: PathBuf,
    allow_plaintext: bool,
    table: Arc<Htpasswd>,
    signature: Option<Signature>,
    /// The version last reported as unusable (`None` inside: missing), so
    /// that a broken file is reported once, not once a second.
    reported: Option<Option<Signature>>,
    next_check: Instant,
    /// Keys of credentials that verified against `table`: keyed SHA-256
    /// digests (see `Auth`), never passwords. Emptied when `table` changes.
    verified: HashSet<[u8; 32]>,
}

impl Watched {
    pub(crate) fn open(path: &Path, allow_plaintext: bool, now: Instant) -> Result<Watched, Error> {
        let (table, sig) = read_file(path, allow_plaintext)?;
        Ok(Watched {
            path: path.to_path_buf(),
            allow_plaintext,
            table: Arc::new(table),
            signature: Some(sig),
            reported: None,
            next_check: now + CHECK_INTERVAL,
            verified: HashSet::new(),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn allow_plaintext(&self) -> bool {
        self.allow_plaintext
    }

    /// At most once per [`CHECK_INTERVAL`]: if the file changed, loads it.
    /// A file that became unreadable or invalid leaves the last good
    /// version in force, with one warning per bad version.
    pub(crate) fn refresh(&mut self, now: Instant, warnings: &mut Vec<String>) {
        if now < self.next_check {
            return;
        }
        self.next_check = now + CHECK_INTERVAL;
        let current = std::fs::metadata(&self.path)
            .ok()
            .map(|m| Signature::of(&m));
        if current.is_some() && current == self.signature {
            return;
        }
        if self.reported == Some(current) {
            return;
        }
        match read_file(&self.path, self.allow_plaintext) {
            Ok((table, sig)) => {
                self.table = Arc::new(table);
                self.signature = Some(sig);
                self.reported = None;
                self.verified.clear();
            }
            Err(e) => {
                self.reported = Some(current);
                warnings.push(format!(
                    "{e}; still using the version of {} loaded before",
                    self.path.display()
                ));
            }
        }
    }

    /// Like [`Htpasswd::verify`], answering from the cache of verified
    /// credentials when it can. `key` identifies the whole credential.
    pub(crate) fn verify(&mut self, key: &[u8; 32], user: &[u8], password: &[u8]) -> Option<bool> {
        if self.verified.contains(key) && self.table.contains(user) {
            return Some(true);
        }
        let ok = self.table.verify(user, password)?;
        if ok {
            self.remember(key);
        }
        Some(ok)
    }

    /// Whether checking this credential would cost a hash: it is not
    /// among the verified ones and the file lists anybody (an unknown
    /// user costs the decoy's hash, [`Htpasswd::verify`], as much as a
    /// known one: it must not be hashed on an event loop either).
    pub(crate) fn needs_hash(&self, key: &[u8; 32], user: &[u8]) -> bool {
        let verified = self.verified.contains(key) && self.table.contains(user);
        !self.table.is_empty() && !verified
    }

    /// Writes which version of the file is in force to `out`: the
    /// signature of the one `table` was read from, the same in every
    /// worker's copy (as `refresh` trusts it to tell a change).
    pub(crate) fn version(&self, out: &mut [u8]) {
        if let Some(s) = self.signature {
            let words = [s.dev, s.ino, s.size];
            let times = [s.mtime.0, s.mtime.1, s.ctime.0, s.ctime.1];
            let words = words.into_iter().chain(times.map(|t| t as u64));
            for (bytes, word) in out.chunks_exact_mut(8).zip(words) {
                bytes.copy_from_slice(&word.to_ne_bytes());
            }
        }
    }

    /// Whether `user` is listed in the current version of the file.
    pub(crate) fn knows(&self, user: &[u8]) -> bool {
        self.table.contains(user)
    }

    /// The current version of the file's entries, to verify against
    /// elsewhere (see `auth::Check`).
    pub(crate) fn shared_table(&self) -> &Arc<Htpasswd> {
        &self.table
    }

    /// Remembers that the credential `key` verified against `table`, if
    /// that is still the file's current version.
    pub(crate) fn remember_for(&mut self, table: &Arc<Htpasswd>, key: &[u8; 32]) {
        if Arc::ptr_eq(table, &self.table) {
            self.remember(key);
        }
    }

    fn remember(&mut self, key: &[u8; 32]) {
        if self.verified.len() >= CACHE_ENTRIES {
            // Any entry will do: a forgotten one costs one slow
            // verification the next time it is used.
            if let Some(&k) = self.verified.iter().next() {
                self.verified.remove(&k);
            }
        }
        self.verified.insert(*key);
    }

    #[cfg(test)]
    pub(crate) fn cached(&self) -> usize {
        self.verified.len()
    }

    #[cfg(test)]
    pub(crate) fn table(&self) -> &Htpasswd {
        &self.table
    }
}

/// A user name for a log line: printable ASCII as is (except `"` and `\`),
/// everything else as `\xNN`, in double quotes.
pub fn escape(user: &[u8]) -> String {
    let mut s = String::with_capacity(user.len() + 2);
    s.push('"');
    for &b in user {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s.push('"');
    s
}
