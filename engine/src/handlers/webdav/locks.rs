//! The lock table (RFC 4918 §6, §7: write locks, exclusive or shared,
//! depth 0 or infinity), in memory.
//!
//! One table per process, shared by every worker thread through one
//! mutex: a lock taken through one worker is seen by all the others.
//! It is keyed by the rule's root directory (each root's locks apart, so
//! that one tree's bound is not another's), then by the resource's path
//! relative to that root. A reload keeps it (the workers of the new
//! configuration find the locks of every root it still serves); a
//! restart or an upgrade (a new process) loses it, like a timeout would.
//!
//! Each root holds at most [`MAX_LOCKS`] locks at once (a LOCK beyond
//! is answered 503); a lock lives at most [`MAX_TIMEOUT`] seconds
//! unless refreshed ([`DEFAULT_TIMEOUT`] when the client names none).
//! Expired locks are dropped whenever the root's table is used.

use crate::ascii::IgnoreCase;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

/// The most locks one `[[webdav]]` root holds at once.
pub const MAX_LOCKS: usize = 1024;
/// A lock's life when the LOCK names none it can have (seconds).
pub const DEFAULT_TIMEOUT: u64 = 3600;
/// The longest life a lock is granted (seconds), `Infinite` included.
pub const MAX_TIMEOUT: u64 = 86_400;
/// The longest `<D:owner>` kept (bytes of XML); a longer one is 400.
pub const MAX_OWNER: usize = 1024;

/// `urn:uuid:` and the 36 characters of a UUID.
pub const TOKEN_LEN: usize = 45;

/// One lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// Its token, `urn:uuid:…` (RFC 4918 §6.5, RFC 4122).
    pub token: [u8; TOKEN_LEN],
    /// The locked resource (its lock root), relative to the rule's root,
    /// without a trailing slash: empty for the root itself.
    pub root: Vec<u8>,
    /// `root` lies where names are found whatever their case (a share on
    /// exFAT): it is kept folded (`http::glob::fold`), and so is a path
    /// before it is compared with it.
    pub folded: bool,
    /// The lock root's href (percent-encoded), for `<D:lockroot>`.
    pub href: Vec<u8>,
    /// Exclusive (else shared).
    pub exclusive: bool,
    /// Depth infinity (else 0).
    pub infinite: bool,
    /// What the client gave as `<D:owner>`, as XML, to give back.
    pub owner: Vec<u8>,
    /// When it expires, by [`now`].
    pub expires: u64,
    /// Who made it: the user the LOCK request authenticated as
    /// (`[[auth]]`), none without one. Only its creator may use it
    /// (RFC 4918 §6.4; see [`Lock::usable_by`]).
    pub principal: Option<Vec<u8>>,
}

impl Lock {
    /// Whether a request that authenticated as `user` (or did not) may
    /// use this lock's token: to change what it locks, refresh it or
    /// remove it. Its creator's requests only (RFC 4918 §6.4: "a server
    /// MUST check that the authenticated principal matches the lock
    /// creator"); anyone's for a lock made without authentication.
    pub fn usable_by(&self, user: Option<&[u8]>) -> bool {
        self.principal.is_none() || self.principal.as_deref() == user
    }

    /// Whether the lock applies to the resource at `path` (relative to
    /// the root, without a trailing slash): its root, or beneath a root
    /// locked to depth infinity.
    pub fn covers(&self, path: &[u8]) -> bool {
        let path = self.spelt(path);
        self.root == *path || self.infinite && beneath(&self.root, &path)
    }

    /// Whether the lock is rooted at `path`.
    pub fn covers_exactly(&self, path: &[u8]) -> bool {
        self.root == *self.spelt(path)
    }

    /// Whether the lock is rooted strictly beneath `path`.
    pub fn beneath(&self, path: &[u8]) -> bool {
        beneath(&self.spelt(path), &self.root)
    }

    /// `path` as `root` is kept: folded if it is.
    fn spelt<'a>(&self, path: &'a [u8]) -> Cow<'a, [u8]> {
        Lock::kept(path, self.folded)
    }

    /// `path` as a lock's `root` keeps it: folded if `folded`.
    pub fn kept(path: &[u8], folded: bool) -> Cow<'_, [u8]> {
        match folded {
            true => crate::http::glob::fold(path),
            false => Cow::Borrowed(path),
        }
    }
}

/// Whether `path` lies strictly beneath `dir` (both relative to the
/// root, without a trailing slash; the root is empty).
pub fn beneath(dir: &[u8], path: &[u8]) -> bool {
    match dir.is_empty() {
        true => !path.is_empty(),
        false => path.len() > dir.len() && path.starts_with(dir) && path[dir.len()] == b'/',
    }
}

/// The table is full (503).
#[derive(Debug, PartialEq, Eq)]
pub struct Full;

/// The locks of one root.
#[derive(Debug, Default)]
pub struct Locks {
    locks: Vec<Lock>,
}

impl Locks {
    /// Drops the locks expired at `now`.
    pub fn prune(&mut self, now: u64) {
        self.locks.retain(|l| l.expires > now);
    }

    /// How many locks it holds.
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Every lock.
    pub fn all(&self) -> &[Lock] {
        &self.locks
    }

    /// The locks that apply to `path`.
    pub fn covering<'a>(&'a self, path: &'a [u8]) -> impl Iterator<Item = &'a Lock> + 'a {
        self.locks.iter().filter(move |l| l.covers(path))
    }

    /// The locks that apply to `path` and, if `deep`, those rooted
    /// beneath it: what a change of that resource (and, `deep`, of all
    /// it holds) must hold a token of.
    pub fn guarding<'a>(
        &'a self,
        path: &'a [u8],
        deep: bool,
    ) -> impl Iterator<Item = &'a Lock> + 'a {
        self.locks
            .iter()
            .filter(move |l| l.covers(path) || deep && l.beneath(path))
    }

    /// A lock that keeps a new one (`exclusive`, `infinite`) from being
    /// taken on `path` (§6.1, §6.2): an exclusive one over it, or any
    /// over it when the new one is exclusive; with depth infinity, those
    /// rooted beneath it too.
    pub fn conflict(&self, path: &[u8], exclusive: bool, infinite: bool) -> Option<&Lock> {
        self.locks
            .iter()
            .find(|l| (l.covers(path) || infinite && l.beneath(path)) && (exclusive || l.exclusive))
    }

    /// Adds `lock`, unless `cap` locks are held already.
    pub fn add(&mut self, lock: Lock, cap: usize) -> Result<(), Full> {
        if self.locks.len() >= cap {
            return Err(Full);
        }
        self.locks.push(lock);
        Ok(())
    }

    /// Refreshes the first lock over `path` whose token is one of
    /// `tokens` and which `user` may use (§9.10.2): it now expires at
    /// `expires`.
    pub fn refresh(
        &mut self,
        path: &[u8],
        tokens: &[&[u8]],
        user: Option<&[u8]>,
        expires: u64,
    ) -> Option<&Lock> {
        let lock = self
            .locks
            .iter_mut()
            .find(|l| l.covers(path) && tokens.contains(&&l.token[..]) && l.usable_by(user))?;
        lock.expires = expires;
        Some(lock)
    }

    /// Removes the lock `token` if it applies to `path` and `user` may
    /// use it (§9.11): `Some(true)` if it did, `Some(false)` if that lock
    /// is another principal's (kept), `None` if there is no such lock.
    pub fn unlock(&mut self, path: &[u8], token: &[u8], user: Option<&[u8]>) -> Option<bool> {
        let lock = self
            .locks
            .iter()
            .position(|l| l.token[..] == *token && l.covers(path))?;
        if !self.locks[lock].usable_by(user) {
            return Some(false);
        }
        self.locks.remove(lock);
        Some(true)
    }

    /// Drops the locks rooted at `path` or beneath it (it is gone).
    pub fn forget(&mut self, path: &[u8]) {
        self.locks
            .retain(|l| !l.covers_exactly(path) && !l.beneath(path));
    }
}

/// Every root's locks.
type Table = HashMap<PathBuf, Locks>;

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

/// Runs `f` on the locks of `root`, expired ones dropped, with the
/// table held (briefly: no file is touched meanwhile by callers).
pub fn with<T>(root: &Path, f: impl FnOnce(&mut Locks) -> T) -> T {
    let now = now();
    let mut table = table().lock().unwrap_or_else(PoisonError::into_inner);
    let out;
    if let Some(locks) = table.get_mut(root) {
        locks.prune(now);
        out = f(locks);
        if locks.is_empty() {
            table.remove(root);
        }
    } else {
        let mut locks = Locks::default();
        out = f(&mut locks);
        if !locks.is_empty() {
            table.insert(root.to_path_buf(), locks);
        }
    }
    out
}

/// The lock clock: whole seconds since the process first asked, plus 1
/// (monotonic; a lock with `expires` ≤ `now()` is gone).
pub fn now() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs() + 1
}

/// The seconds `Timeout` asks for (§10.7: a list of `Second-N` and
/// `Infinite`, the first the server can grant), bounded by
/// [`MAX_TIMEOUT`]; [`DEFAULT_TIMEOUT`] without one.
pub fn timeout(value: Option<&[u8]>) -> u64 {
    for item in value.unwrap_or_default().split(|&b| b == b',') {
        let item = item.trim_ascii();
        if item.eq_ignore_case(b"Infinite") {
            return MAX_TIMEOUT;
        }
        let Some(n) = item
            .strip_prefix(b"Second-")
            .filter(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
        else {
            continue;
        };
        let n = std::str::from_utf8(n).ok().and_then(|n| n.parse().ok());
        return n.unwrap_or(MAX_TIMEOUT).clamp(1, MAX_TIMEOUT);
    }
    DEFAULT_TIMEOUT
}

/// A new lock token: `urn:uuid:` and a random (version 4) UUID.
pub fn new_token() -> [u8; TOKEN_LEN] {
    // (Unguessable enough: a token is no secret, RFC 4918 §6.5, only
    // never to be issued twice.)
    let mut r = crate::access::auth::random_secret();
    r[6] = (r[6] & 0x0f) | 0x40;
    r[8] = (r[8] & 0x3f) | 0x80;
    token_of(&r)
}

/// `urn:uuid:` and UUID `r` in its textual form.
fn token_of(r: &[u8; 16]) -> [u8; TOKEN_LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; TOKEN_LEN];
    out[..9].copy_from_slice(b"urn:uuid:");
    let mut at = 9;
    for (i, b) in r.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out[at] = b'-';
            at += 1;
        }
        out[at] = HEX[usize::from(b >> 4)];
        out[at + 1] = HEX[usize::from(b & 15)];
        at += 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(root: &str, exclusive: bool, infinite: bool, expires: u64) -> Lock {
        Lock {
            token: new_token(),
            root: root.as_bytes().to_vec(),
            folded: false,
            href: Vec::new(),
            exclusive,
            infinite,
            owner: Vec::new(),
            expires,
            principal: None,
        }
    }

    #[test]
    fn tokens_are_urn_uuids_of_version_4() {
        let t = new_token();
        let text = std::str::from_utf8(&t).unwrap();
        assert!(text.starts_with("urn:uuid:"), "{text}");
        let uuid = &text[9..];
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"), "{uuid}");
        assert_ne!(new_token(), t);
        assert_eq!(
            &token_of(&[0x12; 16]),
            b"urn:uuid:12121212-1212-1212-1212-121212121212"
        );
    }

    #[test]
    fn timeouts_are_bounded() {
        assert_eq!(timeout(None), DEFAULT_TIMEOUT);
        assert_eq!(timeout(Some(b"Second-1")), 1);
        assert_eq!(timeout(Some(b"Second-0")), 1);
        assert_eq!(timeout(Some(b"Infinite, Second-4100000000")), MAX_TIMEOUT);
        assert_eq!(timeout(Some(b"Second-4100000000")), MAX_TIMEOUT);
        assert_eq!(
            timeout(Some(b"Second-99999999999999999999999")),
            MAX_TIMEOUT
        );
        assert_eq!(timeout(Some(b"Fortnight, Second-60")), 60);
        assert_eq!(timeout(Some(b"Second-x")), DEFAULT_TIMEOUT);
    }

    #[test]
    fn depth_decides_what_a_lock_covers() {
        let deep = lock("a", true, true, 10);
        assert!(deep.covers(b"a") && deep.covers(b"a/b/c"));
        assert!(!deep.covers(b"ab") && !deep.covers(b"") && !deep.covers(b"b"));
        let flat = lock("a", true, false, 10);
        assert!(flat.covers(b"a") && !flat.covers(b"a/b"));
        let root = lock("", false, true, 10);
        assert!(root.covers(b"") && root.covers(b"x/y"));
        assert!(beneath(b"", b"x") && !beneath(b"", b""));
        assert!(beneath(b"a", b"a/b") && !beneath(b"a", b"a") && !beneath(b"a", b"ab/c"));
    }

    #[test]
    fn conflicts_follow_scope_and_depth() {
        let mut t = Locks::default();
        t.add(lock("d/f", false, false, 10), 8).unwrap();
        // Shared with shared: fine; exclusive over shared: not.
        assert!(t.conflict(b"d/f", false, false).is_none());
        assert!(t.conflict(b"d/f", true, false).is_some());
        // A depth-infinity lock of the collection meets the member's.
        assert!(t.conflict(b"d", true, false).is_none());
        assert!(t.conflict(b"d", true, true).is_some());
        assert!(t.conflict(b"d", false, true).is_none());
        t.add(lock("x", true, true, 10), 8).unwrap();
        assert!(t.conflict(b"x/y/z", false, false).is_some());
        assert!(t.conflict(b"xy", true, true).is_none());
    }

    #[test]
    fn a_lock_expires_by_the_clock_given() {
        // (A lock taken at time 5 with `Timeout: Second-1`.)
        let mut t = Locks::default();
        let l = lock("f", true, false, 5 + timeout(Some(b"Second-1")));
        let token = l.token;
        t.add(l, 8).unwrap();
        t.prune(5);
        assert_eq!(t.len(), 1);
        // Refreshed at 5 for 10 seconds more: alive at 6, gone at 15.
        assert!(t.refresh(b"f", &[&token[..]], None, 15).is_some());
        t.prune(6);
        assert_eq!(t.len(), 1);
        t.prune(15);
        assert!(t.is_empty());
        assert!(t.refresh(b"f", &[&token[..]], None, 30).is_none());
    }

    #[test]
    fn refresh_and_unlock_need_the_token_and_a_covered_path() {
        let mut t = Locks::default();
        let l = lock("c", true, true, 10);
        let token = l.token;
        t.add(l, 8).unwrap();
        assert!(t.refresh(b"c/m", &[b"urn:uuid:other"], None, 20).is_none());
        assert_eq!(
            t.refresh(b"c/m", &[&token[..]], None, 20).unwrap().expires,
            20
        );
        assert_eq!(t.unlock(b"d", &token, None), None);
        assert_eq!(t.unlock(b"c", b"urn:uuid:other", None), None);
        assert_eq!(t.unlock(b"c/m", &token, None), Some(true));
        assert!(t.is_empty());
    }

    #[test]
    fn only_the_creator_of_a_lock_may_use_it() {
        let mut t = Locks::default();
        let mut l = lock("c", true, true, 10);
        l.principal = Some(b"alice".to_vec());
        let token = l.token;
        t.add(l, 8).unwrap();
        let taken = &t.all()[0];
        assert!(taken.usable_by(Some(b"alice")));
        assert!(!taken.usable_by(Some(b"bob")) && !taken.usable_by(None));
        assert!(t.refresh(b"c", &[&token[..]], Some(b"bob"), 20).is_none());
        assert!(t.refresh(b"c", &[&token[..]], None, 20).is_none());
        assert_eq!(
            t.refresh(b"c", &[&token[..]], Some(b"alice"), 20)
                .unwrap()
                .expires,
            20
        );
        assert_eq!(t.unlock(b"c", &token, Some(b"bob")), Some(false), "kept");
        assert_eq!(t.len(), 1);
        assert_eq!(t.unlock(b"c", &token, Some(b"alice")), Some(true));
        // A lock made without authentication serves whoever holds its token.
        let l = lock("d", true, false, 10);
        assert!(l.usable_by(None) && l.usable_by(Some(b"bob")));
    }

    #[test]
    fn the_table_is_bounded() {
        let mut t = Locks::default();
        for _ in 0..3 {
            t.add(lock("f", false, false, 10), 3).unwrap();
        }
        assert_eq!(t.add(lock("f", false, false, 10), 3), Err(Full));
        t.prune(10);
        assert!(t.add(lock("f", false, false, 20), 3).is_ok());
    }

    #[test]
    fn forget_drops_a_tree() {
        let mut t = Locks::default();
        for root in ["a", "a/b", "ab", ""] {
            t.add(lock(root, true, false, 10), 8).unwrap();
        }
        t.forget(b"a");
        let left: Vec<_> = t.all().iter().map(|l| l.root.clone()).collect();
        assert_eq!(left, [b"ab".to_vec(), b"".to_vec()]);
    }

    #[test]
    fn roots_are_kept_apart_and_dropped_once_empty() {
        let dir = Path::new("/nonexistent/brisk-locks-test");
        let token = with(dir, |t| {
            let l = lock("f", true, false, now() + 60);
            let token = l.token;
            t.add(l, 8).unwrap();
            token
        });
        assert!(with(Path::new("/nonexistent/other"), |t| t.is_empty()));
        assert_eq!(with(dir, |t| t.unlock(b"f", &token, None)), Some(true));
        assert!(table().lock().unwrap().get(dir).is_none());
    }
}
