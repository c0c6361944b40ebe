//! The sidecar store of dead properties, for filesystems without user
//! extended attributes (tmpfs before Linux 6.6, vfat, some FUSE and NFS
//! mounts) or `properties = "sidecar"`: one hidden file per collection,
//! [`NAME`], holding the properties of the collection itself (member
//! name empty) and of its regular files (by name). A collection's own
//! properties are in its own store, so a MOVE of it carries them and
//! its members' with it, and a DELETE of it drops them with it.
//!
//! The file: `brisk-props 1\n`, then one record a property, in order of
//! member then key: `MLEN KLEN VLEN\n` (decimal lengths), the member
//! name, the key (`{namespace}name`), the value, `\n`. Read strictly: a
//! store that is not exactly that (or above [`MAX`]) is damaged: logged
//! once, read as empty, and never written over (changes to it fail).
//! Written whole to [`TEMP`] then renamed over [`NAME`] (so a reader sees
//! the old store or the new one), under one lock for the process (the
//! workers are its threads) and an `flock` of the collection (another
//! brisk process: an upgrade's overlap). Neither name is ever served, listed, or
//! named by a request: both are brisk's own names
//! ([`crate::http::path::is_own_name`]).

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::sys::dir::Dir;

/// The store's name in each collection.
pub const NAME: &[u8] = b".brisk-props";
/// The name a new store is written under before it is renamed.
const TEMP: &[u8] = b".brisk-props.new";
/// The first line of a store.
const HEADER: &[u8] = b"brisk-props 1\n";
/// The largest store (all of one collection's properties): a change
/// that would make it larger answers 507.
pub const MAX: usize = 1 << 20;

/// Held while a store is read to be changed and written back.
static WRITING: Mutex<()> = Mutex::new(());
/// A damaged store has been logged (once for the process).
static LOGGED: AtomicBool = AtomicBool::new(false);

/// One property: the member it belongs to (empty: the collection), its
/// key (`{namespace}name`), its value.
type Record = (Vec<u8>, Vec<u8>, Vec<u8>);

/// A collection's store, its records sorted by member then key.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Store(Vec<Record>);

impl Store {
    /// The store of `dir`: empty when there is none; an error
    /// (`InvalidData`, logged once) when it is damaged.
    pub fn load(dir: &Dir) -> io::Result<Store> {
        let file = match dir.open_file(NAME) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Store::default()),
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        file.take(MAX as u64 + 1).read_to_end(&mut bytes)?;
        match Store::parse(&bytes).filter(|_| bytes.len() <= MAX) {
            Some(store) => Ok(store),
            None => {
                if !LOGGED.swap(true, Ordering::Relaxed) {
                    crate::log::console::say(format_args!(
                        "webdav: a dead properties' store ({}) is damaged: read as empty, not written over (logged once)",
                        String::from_utf8_lossy(NAME)
                    ));
                }
                Err(io::Error::from(io::ErrorKind::InvalidData))
            }
        }
    }

    /// The store `bytes` hold, if they are one.
    fn parse(bytes: &[u8]) -> Option<Store> {
        let mut rest = bytes.strip_prefix(HEADER)?;
        let mut records: Vec<Record> = Vec::new();
        while !rest.is_empty() {
            let eol = rest.iter().position(|&b| b == b'\n')?;
            let mut lens = rest[..eol].split(|&b| b == b' ').map(number);
            let (m, k, v) = (lens.next()??, lens.next()??, lens.next()??);
            if lens.next().is_some() {
                return None;
            }
            rest = &rest[eol + 1..];
            let total = m.checked_add(k)?.checked_add(v)?;
            if rest.len() <= total || rest[total] != b'\n' {
                return None;
            }
            let (member, key, value) = (&rest[..m], &rest[m..m + k], &rest[m + k..total]);
            let record = (member.to_vec(), key.to_vec(), value.to_vec());
            let valid = (member.is_empty() || crate::sys::dir::is_name(member))
                && key.first() == Some(&b'{')
                && key.contains(&b'}')
                && records
                    .last()
                    .is_none_or(|r| (&r.0, &r.1) < (&record.0, &record.1));
            if !valid {
                return None;
            }
            records.push(record);
            rest = &rest[total + 1..];
        }
        Some(Store(records))
    }

    /// The bytes of the store.
    fn encode(&self) -> Vec<u8> {
        let mut out = HEADER.to_vec();
        for (m, k, v) in &self.0 {
            out.extend_from_slice(format!("{} {} {}\n", m.len(), k.len(), v.len()).as_bytes());
            out.extend_from_slice(m);
            out.extend_from_slice(k);
            out.extend_from_slice(v);
            out.push(b'\n');
        }
        out
    }

    /// Where `member`'s records are.
    fn range(&self, member: &[u8]) -> std::ops::Range<usize> {
        let start = self.0.partition_point(|r| r.0.as_slice() < member);
        let end = start + self.0[start..].partition_point(|r| r.0.as_slice() == member);
        start..end
    }

    /// `member`'s properties: key and value.
    pub fn of(&self, member: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.0[self.range(member)]
            .iter()
            .map(|(_, k, v)| (k.as_slice(), v.as_slice()))
    }

    /// Sets (`Some`) or removes (`None`) `member`'s property `key`.
    pub fn set(&mut self, member: &[u8], key: &[u8], value: Option<&[u8]>) {
        let at = self
            .0
            .binary_search_by(|r| (r.0.as_slice(), r.1.as_slice()).cmp(&(member, key)));
        match (at, value) {
            (Ok(i), Some(v)) => self.0[i].2 = v.to_vec(),
            (Ok(i), None) => drop(self.0.remove(i)),
            (Err(i), Some(v)) => self
                .0
                .insert(i, (member.to_vec(), key.to_vec(), v.to_vec())),
            (Err(_), None) => {}
        }
    }

    /// Removes and gives back `member`'s properties (key, value).
    pub fn take(&mut self, member: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let range = self.range(member);
        self.0.drain(range).map(|(_, k, v)| (k, v)).collect()
    }

    /// Gives `member` exactly the properties `props` (key, value).
    pub fn replace(&mut self, member: &[u8], props: &[(Vec<u8>, Vec<u8>)]) {
        self.take(member);
        for (k, v) in props {
            self.set(member, k, Some(v));
        }
    }

    /// Writes the store into `dir`: to [`TEMP`], synced if `sync`, then
    /// renamed over [`NAME`]; an empty store removes it. Past [`MAX`]:
    /// `ENOSPC` (507), nothing written.
    fn save(&self, dir: &Dir, sync: bool) -> io::Result<()> {
        if self.0.is_empty() {
            return match dir.remove(NAME, false) {
                Err(e) if e.raw_os_error() != Some(libc::ENOENT) => Err(e),
                _ => Ok(()),
            };
        }
        let bytes = self.encode();
        if bytes.len() > MAX {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        // (One left by a crash, or by a write that failed: never served.)
        let _ = dir.remove(TEMP, false);
        let mut file = dir.create(TEMP)?;
        let written = file.write_all(&bytes).and_then(|()| match sync {
            true => file.sync_all(),
            false => Ok(()),
        });
        let renamed = written.and_then(|()| dir.rename(TEMP, dir, NAME, false));
        if renamed.is_err() {
            let _ = dir.remove(TEMP, false);
        }
        renamed?;
        if sync {
            dir.sync()?;
        }
        Ok(())
    }
}

/// Changes the store of `dir` by `change`, written back (see
/// [`Store::save`]) if it changed; one change at a time in the process.
pub fn update<R>(dir: &Dir, sync: bool, change: impl FnOnce(&mut Store) -> R) -> io::Result<R> {
    let _held = WRITING.lock().unwrap_or_else(|p| p.into_inner());
    let _locked = dir.lock()?;
    let mut store = Store::load(dir)?;
    let before = store.clone();
    let r = change(&mut store);
    if store != before {
        store.save(dir, sync)?;
    }
    Ok(r)
}

/// A length in a record's line: decimal digits, no sign, no leading
/// zero (but `0` itself).
fn number(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 8 || (s.len() > 1 && s[0] == b'0') {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(records: &[(&str, &str, &str)]) -> Store {
        let mut s = Store::default();
        for (m, k, v) in records {
            s.set(m.as_bytes(), k.as_bytes(), Some(v.as_bytes()));
        }
        s
    }

    #[test]
    fn a_store_round_trips_byte_for_byte() {
        let s = store(&[
            ("b", "{urn:x}p", "2\n"),
            ("", "{}q", ""),
            ("a", "{urn:x}p", "é"),
        ]);
        let bytes = s.encode();
        assert_eq!(
            bytes,
            "brisk-props 1\n0 3 0\n{}q\n1 8 2\na{urn:x}pé\n1 8 2\nb{urn:x}p2\n\n".as_bytes()
        );
        assert_eq!(Store::parse(&bytes), Some(s.clone()));
        assert_eq!(
            s.of(b"b").collect::<Vec<_>>(),
            [(&b"{urn:x}p"[..], &b"2\n"[..])]
        );
    }

    #[test]
    fn a_damaged_store_is_refused() {
        let good = store(&[("a", "{urn:x}p", "v")]).encode();
        assert!(Store::parse(&good).is_some());
        let mut cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"brisk-props 2\n".to_vec(),
            good[..good.len() - 1].to_vec(),
            [&good[..], b"x"].concat(),
            b"brisk-props 1\n1 8 1\n/{urn:x}pv\n".to_vec(),
            b"brisk-props 1\n1 3 1\nap}qv\n".to_vec(),
            b"brisk-props 1\n01 8 1\na{urn:x}pv\n".to_vec(),
            b"brisk-props 1\n1 8 1 1\na{urn:x}pv\n".to_vec(),
            b"brisk-props 1\n1 8 99999999\na{urn:x}pv\n".to_vec(),
        ];
        // (Out of order, or twice: not what brisk writes.)
        cases.push([&good[..], &good[HEADER.len()..]].concat());
        for case in cases {
            assert_eq!(
                Store::parse(&case),
                None,
                "{:?}",
                String::from_utf8_lossy(&case)
            );
        }
    }

    #[test]
    fn members_are_taken_and_replaced_whole() {
        let mut s = store(&[("a", "{}p", "1"), ("a", "{}q", "2"), ("b", "{}p", "3")]);
        let a = s.take(b"a");
        assert_eq!(a.len(), 2);
        s.replace(b"b", &a);
        assert_eq!(s, store(&[("b", "{}p", "1"), ("b", "{}q", "2")]));
        s.set(b"b", b"{}p", None);
        assert_eq!(s, store(&[("b", "{}q", "2")]));
    }
}
