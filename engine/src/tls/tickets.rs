//! Session-ticket keys shared through a file (`[tls] ticket_keys`), so
//! that a client resumes its session on any server of a fleet that names
//! the same file (a shared filesystem), not only on the one that issued
//! its ticket.
//!
//! The file holds three keys and when they were last rotated:
//!
//! ```text
//! rotated 1796000000
//! previous <name, 16 bytes hex> <AES-256-GCM key, 32 bytes hex>
//! current  <name> <key>
//! next     <name> <key>
//! ```
//!
//! A ticket is the key's name, a random 96-bit nonce, and the session
//! sealed with AES-256-GCM (the name as associated data): tickets are
//! made with `current`; opened with `current`, `next` (a server of the
//! fleet that has rotated already makes tickets with it) and, for one
//! more period after the rotation, `previous`. So a ticket lives between
//! one and two periods (`ticket_rotation`, 6 hours by default, as
//! rustls's own ticketer), as rustls's does.
//!
//! Rotation: whichever server first finds it due takes the lock file
//! beside the keys (`<file>.lock`, `sys::fs::lock`, as ACME's storage),
//! reads the file again (another may have rotated a moment ago), shifts
//! the keys (`next` becomes `current`, a new `next`), and writes the file
//! whole (`sys::fs::write_whole`, 0600). The others see that the file
//! changed (its inode, size and time) and read it again. Each server
//! looks at the file from a thread of its own, once a minute and when a
//! rotation is due, never from the event loops. The first server to start
//! makes the file, under the same lock. A damaged file is an error at
//! start, naming it; later, a log line, and the keys in memory serve on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, SystemTime};

use crate::http::grammar::{hex_lower as hex, unhex};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use rustls::server::ProducesTickets;

/// A key's name, carried at the front of each ticket.
const NAME_LEN: usize = 16;
/// An AES-256 key.
const KEY_LEN: usize = 32;
/// What a ticket adds to the session: name, nonce, tag.
const OVERHEAD: usize = NAME_LEN + NONCE_LEN + 16;
/// How often a server looks at the file when no rotation is due sooner.
const CHECK: Duration = Duration::from_secs(60);
/// A rotation's lock is held a few milliseconds: one older than this was
/// left by a server that died.
const STALE_LOCK: Duration = Duration::from_secs(60);
/// How long a starting server waits for another one making the file.
const START_WAIT: Duration = Duration::from_secs(10);

/// One key: its name and its secret.
#[derive(Clone, PartialEq, Eq)]
struct Key {
    name: [u8; NAME_LEN],
    secret: [u8; KEY_LEN],
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({})", hex(&self.name))
    }
}

/// What the file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Keys {
    /// When `current` became current (seconds since the epoch).
    rotated: u64,
    previous: Key,
    current: Key,
    next: Key,
}

const FIELDS: [&str; 3] = ["previous", "current", "next"];

impl Keys {
    /// Three new keys, rotated `now`.
    fn fresh(now: u64, rng: &SystemRandom) -> Result<Keys, String> {
        Ok(Keys {
            rotated: now,
            previous: Key::random(rng)?,
            current: Key::random(rng)?,
            next: Key::random(rng)?,
        })
    }

    /// The keys after a rotation at `now`: `next` becomes current, and a
    /// new `next`. When `current` is more than a period past its time
    /// (the whole fleet was down), its tickets are too old to be
    /// accepted any more: `previous` is new as well.
    fn rotate(&self, now: u64, period: u64, rng: &SystemRandom) -> Result<Keys, String> {
        let stale = now >= self.rotated.saturating_add(2 * period);
        Ok(Keys {
            rotated: now,
            previous: if stale {
                Key::random(rng)?
            } else {
                self.current.clone()
            },
            current: self.next.clone(),
            next: Key::random(rng)?,
        })
    }

    /// Whether a rotation is due at `now`.
    fn due(&self, now: u64, period: u64) -> bool {
        now >= self.rotated.saturating_add(period)
    }

    fn text(&self) -> String {
        let mut s = format!(
            "# brisk's session-ticket keys ([tls] ticket_keys): secret, keep it 0600.\n\
             # Shared by every brisk naming this file, which rotate them: do not edit.\n\
             rotated {}\n",
            self.rotated
        );
        for (field, key) in FIELDS
            .iter()
            .zip([&self.previous, &self.current, &self.next])
        {
            s.push_str(&format!(
                "{field} {} {}\n",
                hex(&key.name),
                hex(&key.secret)
            ));
        }
        s
    }

    /// Reads the file's text; an error names the line.
    fn parse(text: &str) -> Result<Keys, String> {
        let mut rotated = None;
        let mut keys: [Option<Key>; 3] = [None, None, None];
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |what: &str| format!("line {}: {what}", n + 1);
            let words: Vec<&str> = line.split_ascii_whitespace().collect();
            match words[..] {
                ["rotated", t] if rotated.is_none() => {
                    rotated = Some(t.parse().map_err(|_| bad("expected rotated SECONDS"))?)
                }
                [field, name, secret] if FIELDS.contains(&field) => {
                    let i = FIELDS.iter().position(|f| *f == field).unwrap_or(0);
                    let key = Key {
                        name: unhex(name).ok_or_else(|| bad("expected a 16-byte name in hex"))?,
                        secret: unhex(secret)
                            .ok_or_else(|| bad("expected a 32-byte key in hex"))?,
                    };
                    if keys[i].replace(key).is_some() {
                        return Err(bad(&format!("{field} given twice")));
                    }
                }
                _ => return Err(bad("expected rotated, previous, current or next")),
            }
        }
        let [Some(previous), Some(current), Some(next)] = keys else {
            return Err("expected the keys previous, current and next".to_string());
        };
        Ok(Keys {
            rotated: rotated.ok_or_else(|| "expected rotated SECONDS".to_string())?,
            previous,
            current,
            next,
        })
    }
}

impl Key {
    fn random(rng: &SystemRandom) -> Result<Key, String> {
        let mut key = Key {
            name: [0; NAME_LEN],
            secret: [0; KEY_LEN],
        };
        rng.fill(&mut key.name)
            .and_then(|()| rng.fill(&mut key.secret))
            .map_err(|_| "the system's random numbers failed".to_string())?;
        Ok(key)
    }

    fn aead(&self) -> LessSafeKey {
        // (A 32-byte key always makes an AES-256 key.)
        LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &self.secret).expect("AES-256 key"))
    }
}

/// The keys ready to seal and open.
struct Loaded {
    keys: Keys,
    previous: LessSafeKey,
    current: LessSafeKey,
    next: LessSafeKey,
}

impl Loaded {
    fn of(keys: &Keys) -> Loaded {
        Loaded {
            previous: keys.previous.aead(),
            current: keys.current.aead(),
            next: keys.next.aead(),
            keys: keys.clone(),
        }
    }
}

/// rustls's ticket maker, with the keys of the file (see the module).
pub struct Ticketer {
    loaded: Arc<RwLock<Loaded>>,
    /// The rotation period, in seconds.
    period: u64,
    rng: SystemRandom,
}

impl std::fmt::Debug for Ticketer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticketer")
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Ticketer {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Loaded> {
        self.loaded.read().unwrap_or_else(|e| e.into_inner())
    }

    /// [`ProducesTickets::decrypt`] at `now`.
    fn open_at(&self, ticket: &[u8], now: u64) -> Option<Vec<u8>> {
        if ticket.len() < OVERHEAD {
            return None;
        }
        let (name, rest) = ticket.split_at(NAME_LEN);
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let loaded = self.read();
        let k = &loaded.keys;
        let key = if name == k.current.name {
            &loaded.current
        } else if name == k.next.name {
            &loaded.next
        } else if name == k.previous.name && !k.due(now, self.period) {
            // Made before the last rotation: good for one more period.
            &loaded.previous
        } else {
            return None;
        };
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = sealed.to_vec();
        let len = key
            .open_in_place(nonce, Aad::from(name), &mut buf)
            .ok()?
            .len();
        buf.truncate(len);
        Some(buf)
    }
}

impl ProducesTickets for Ticketer {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        u32::try_from(self.period).unwrap_or(u32::MAX)
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        // Random nonces: a key makes far fewer than the 2^32 tickets
        // after which two might share one (NIST SP 800-38D §8.3).
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let loaded = self.read();
        let name = loaded.keys.current.name;
        let mut out = Vec::with_capacity(plain.len() + OVERHEAD);
        out.extend_from_slice(&name);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let tag = loaded
            .current
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(name),
                &mut out[NAME_LEN + NONCE_LEN..],
            )
            .ok()?;
        out.extend_from_slice(tag.as_ref());
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        self.open_at(cipher, unix(SystemTime::now()))
    }
}

/// What tells one version of the file from another: its inode (a file
/// written whole is a new one), size and modification time.
type Stamp = (u64, u64, SystemTime);

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path)?;
    Ok((m.ino(), m.len(), m.modified()?))
}

/// Why the file could not be used.
enum Unread {
    /// It is not there.
    Missing,
    /// It cannot be read, or is damaged: what is wrong.
    Bad(String),
}

fn read(path: &Path) -> Result<(Keys, Stamp), Unread> {
    let missing = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => Unread::Missing,
        _ => Unread::Bad(format!("cannot read it: {e}")),
    };
    let at = stamp(path).map_err(missing)?;
    let text = std::fs::read_to_string(path).map_err(missing)?;
    Ok((Keys::parse(&text).map_err(Unread::Bad)?, at))
}

/// The keeper of one server's copy of the file: reads it when it
/// changes, rotates the keys when due (see the module). Owned by its
/// thread; the [`Ticketer`] it feeds is shared with the workers.
#[derive(Debug)]
pub struct Watcher {
    path: PathBuf,
    lock: PathBuf,
    holder: String,
    period: u64,
    keys: Keys,
    /// The file's version last read (or found damaged).
    seen: Option<Stamp>,
    rng: SystemRandom,
    ticketer: Weak<Ticketer>,
}

impl Watcher {
    /// The keys of `path`, made (under its lock) when no server has made
    /// them yet; rotated every `period`; `holder` names this server in
    /// the lock. An error names the file and says what is wrong.
    pub fn open(path: &Path, period: Duration, holder: &str) -> Result<Watcher, String> {
        let named = |what: String| format!("ticket_keys {}: {what}", path.display());
        let lock = {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(".lock");
            path.with_file_name(name)
        };
        let rng = SystemRandom::new();
        let started = std::time::Instant::now();
        let (keys, seen) = loop {
            match read(path) {
                Ok(found) => break found,
                Err(Unread::Bad(e)) => return Err(named(e)),
                Err(Unread::Missing) => {}
            }
            match crate::sys::fs::lock(&lock, holder, STALE_LOCK) {
                Ok(Some(_held)) => match read(path) {
                    Ok(found) => break found,
                    Err(Unread::Bad(e)) => return Err(named(e)),
                    Err(Unread::Missing) => {
                        let keys = Keys::fresh(unix(SystemTime::now()), &rng).map_err(named)?;
                        write(path, &keys).map_err(named)?;
                        let at = stamp(path).map_err(|e| named(e.to_string()))?;
                        break (keys, at);
                    }
                },
                Ok(None) if started.elapsed() < START_WAIT => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Ok(None) => {
                    return Err(named(format!(
                        "missing, and {} has been held by another server for {} s (remove it if no brisk is starting)",
                        lock.display(),
                        START_WAIT.as_secs()
                    )))
                }
                Err(e) => {
                    return Err(named(format!(
                        "cannot take the lock {}: {e}",
                        lock.display()
                    )))
                }
            }
        };
        Ok(Watcher {
            path: path.to_path_buf(),
            lock,
            holder: holder.to_string(),
            period: period.as_secs().max(1),
            keys,
            seen: Some(seen),
            rng,
            ticketer: Weak::new(),
        })
    }

    /// The ticket maker fed by this watcher (one: a second call makes
    /// another, and the first is fed no more).
    pub fn ticketer(&mut self) -> Arc<Ticketer> {
        let t = Arc::new(Ticketer {
            loaded: Arc::new(RwLock::new(Loaded::of(&self.keys))),
            period: self.period,
            rng: SystemRandom::new(),
        });
        self.ticketer = Arc::downgrade(&t);
        t
    }

    /// Looks at the file at `now` (seconds since the epoch): reads it
    /// again if it changed, rotates the keys if due. Returns how long to
    /// wait before the next look, and what to log (each a sentence).
    pub fn refresh(&mut self, now: u64) -> (Duration, Vec<String>) {
        let mut said = Vec::new();
        let missing = self.reread(&mut said);
        if missing || self.keys.due(now, self.period) {
            match crate::sys::fs::lock(&self.lock, &self.holder, STALE_LOCK) {
                Ok(Some(_held)) => {
                    // Another server may have rotated a moment ago.
                    let missing = self.reread(&mut said);
                    if let Err(e) = self.rotate(now, missing) {
                        said.push(format!(
                            "ticket keys: {e}; the keys in memory serve on, another try in {} s",
                            CHECK.as_secs()
                        ));
                    }
                }
                // Another is at it: its file is read in a moment.
                Ok(None) => return (Duration::from_secs(1), said),
                Err(e) => said.push(format!(
                    "ticket keys: cannot take the lock {}: {e}; no rotation now, another try in {} s",
                    self.lock.display(),
                    CHECK.as_secs()
                )),
            }
        }
        let until_due = self
            .keys
            .rotated
            .saturating_add(self.period)
            .saturating_sub(now);
        let wait = Duration::from_secs(until_due.clamp(1, CHECK.as_secs()));
        (wait, said)
    }

    /// Reads the file if it changed since last seen; a damaged one is
    /// said once. True when it is missing.
    fn reread(&mut self, said: &mut Vec<String>) -> bool {
        let now = stamp(&self.path).ok();
        if now.is_some() && now == self.seen {
            return false;
        }
        match read(&self.path) {
            Ok((keys, at)) => {
                self.seen = Some(at);
                self.adopt(keys);
                false
            }
            Err(Unread::Missing) => true,
            Err(Unread::Bad(e)) => {
                self.seen = now;
                said.push(format!(
                    "ticket keys {}: {e}; the keys in memory serve on until it is mended (the next rotation writes it whole)",
                    self.path.display()
                ));
                false
            }
        }
    }

    /// Rotates the keys if due at `now` (or writes them if the file is
    /// `missing`), under the lock.
    fn rotate(&mut self, now: u64, missing: bool) -> Result<(), String> {
        let due = self.keys.due(now, self.period);
        if !due && !missing {
            return Ok(());
        }
        let keys = if due {
            self.keys.rotate(now, self.period, &self.rng)?
        } else {
            self.keys.clone()
        };
        write(&self.path, &keys)?;
        self.seen = stamp(&self.path).ok();
        self.adopt(keys);
        Ok(())
    }

    fn adopt(&mut self, keys: Keys) {
        if keys == self.keys {
            return;
        }
        if let Some(t) = self.ticketer.upgrade() {
            *t.loaded.write().unwrap_or_else(|e| e.into_inner()) = Loaded::of(&keys);
        }
        self.keys = keys;
    }

    /// Runs the watcher on a thread of its own until its ticketer is
    /// dropped, logging through `log`.
    pub fn spawn(mut self, mut log: crate::log::Logger) -> std::io::Result<()> {
        std::thread::Builder::new()
            .name("brisk-tickets".into())
            .spawn(move || loop {
                let (wait, said) = self.refresh(unix(SystemTime::now()));
                for line in said {
                    log.log(crate::log::Level::Warn, format_args!("{line}"));
                }
                log.flush();
                std::thread::sleep(wait);
                if self.ticketer.strong_count() == 0 {
                    return;
                }
            })
            .map(drop)
    }
}

fn write(path: &Path, keys: &Keys) -> Result<(), String> {
    crate::sys::fs::write_whole(path, keys.text().as_bytes(), 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The ticket maker of the keys in `path`, rotated every `period`, kept
/// by a thread of its own (see the module) that logs through `log`.
pub fn shared(
    path: &Path,
    period: Duration,
    log: crate::log::Logger,
) -> Result<Arc<dyn ProducesTickets>, String> {
    let mut watcher = Watcher::open(path, period, crate::sys::fs::lock_holder())?;
    let ticketer = watcher.ticketer();
    // Due at start (the fleet was down): rotated now, before serving.
    let (_, said) = watcher.refresh(unix(SystemTime::now()));
    if let Some(e) = said.first() {
        return Err(e.clone());
    }
    watcher
        .spawn(log)
        .map_err(|e| format!("cannot start the ticket keys' thread: {e}"))?;
    Ok(ticketer)
}

#[cfg(test)]
mod tests;
