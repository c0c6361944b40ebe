//! Who the process is: user and group look-ups, `chroot`, and the one-way
//! switch from root to an unprivileged user.
//!
//! The switch follows the order that leaves no privilege behind:
//! supplementary groups first (the user's own, as `initgroups` sets
//! them; they can only be set while still root),
//! then the group id, then the user id, and then it checks the result,
//! including that root cannot be regained.

use std::ffi::{CStr, CString};
use std::io;
use std::path::Path;

use super::cvt;

/// An account from the user database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The user id.
    pub uid: u32,
    /// The primary group id.
    pub gid: u32,
}

/// Largest buffer tried for one `getpwnam_r`/`getgrnam_r` record.
const MAX_RECORD: usize = 1 << 20;

/// Runs a `get*nam_r` call with a growing buffer until it fits.
fn with_record_buf(mut call: impl FnMut(&mut [libc::c_char]) -> libc::c_int) -> io::Result<bool> {
    let mut size = 1024;
    loop {
        let mut buf = vec![0 as libc::c_char; size];
        match call(&mut buf) {
            0 => return Ok(true),
            libc::ERANGE if size < MAX_RECORD => size *= 4,
            // "Not found" is reported as 0 with a null result by glibc, but
            // POSIX lets an implementation use these codes for it too.
            libc::ENOENT | libc::ESRCH | libc::EBADF | libc::EPERM => return Ok(false),
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a name"))
}

/// Looks `name` up in the user database; `None` if there is no such user.
pub fn lookup_user(name: &str) -> io::Result<Option<Account>> {
    let c = c_name(name)?;
    let mut found = None;
    with_record_buf(|buf| {
        // SAFETY: `passwd` is plain old data filled in by the call.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; `buf` outlives it
        // and its length is passed along.
        let rc = unsafe {
            libc::getpwnam_r(
                c.as_ptr(),
                &mut pw,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if rc == 0 && !result.is_null() {
            found = Some(Account {
                uid: pw.pw_uid,
                gid: pw.pw_gid,
            });
        }
        rc
    })?;
    Ok(found)
}

/// Looks `name` up in the group database; `None` if there is no such group.
pub fn lookup_group(name: &str) -> io::Result<Option<u32>> {
    let c = c_name(name)?;
    let mut found = None;
    with_record_buf(|buf| {
        // SAFETY: `group` is plain old data filled in by the call.
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: as in `lookup_user`.
        let rc = unsafe {
            libc::getgrnam_r(
                c.as_ptr(),
                &mut gr,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if rc == 0 && !result.is_null() {
            found = Some(gr.gr_gid);
        }
        rc
    })?;
    Ok(found)
}

/// The groups user `name` is a member of in the group database, besides
/// its primary group `gid` (what `initgroups` would add to it); none for
/// a user the database does not list in any, or that it cannot tell.
pub fn member_groups(name: &str, gid: u32) -> Vec<u32> {
    let Ok(c) = c_name(name) else {
        return Vec::new();
    };
    // Asked with no room, the call says how many there are (glibc and
    // musl alike), then fills a list of that length.
    let mut n: libc::c_int = 0;
    // SAFETY: a zero length: the call writes no id, only `n`.
    unsafe { libc::getgrouplist(c.as_ptr(), gid, std::ptr::null_mut(), &mut n) };
    let mut list = vec![0 as libc::gid_t; n.max(0) as usize];
    // SAFETY: `list` has room for `n` ids, and `n` says so.
    if unsafe { libc::getgrouplist(c.as_ptr(), gid, list.as_mut_ptr(), &mut n) } < 0 {
        return Vec::new();
    }
    list.truncate(n as usize);
    list.retain(|&g| g != gid);
    list
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: plain syscall without arguments; it cannot fail.
    unsafe { libc::geteuid() }
}

/// The real, effective user ids and the real, effective group ids.
pub fn ids() -> (u32, u32, u32, u32) {
    // SAFETY: plain syscalls without arguments; they cannot fail.
    unsafe {
        (
            libc::getuid(),
            libc::geteuid(),
            libc::getgid(),
            libc::getegid(),
        )
    }
}

/// Supplementary group ids of the process.
pub fn groups() -> io::Result<Vec<u32>> {
    // SAFETY: a zero size asks only for the count.
    let n = cvt(unsafe { libc::getgroups(0, std::ptr::null_mut()) })?;
    let mut out = vec![0 as libc::gid_t; n as usize];
    // SAFETY: `out` has room for `n` ids.
    let n = cvt(unsafe { libc::getgroups(n, out.as_mut_ptr()) })?;
    out.truncate(n as usize);
    Ok(out)
}

/// Changes the root directory to `dir`, then the working directory to the
/// new `/`, so that no descriptor-free path leads back out.
pub fn chroot(dir: &Path) -> io::Result<()> {
    let c = c_name_path(dir)?;
    // SAFETY: `c` is a valid NUL-terminated string.
    cvt(unsafe { libc::chroot(c.as_ptr()) })?;
    // SAFETY: a static NUL-terminated string.
    cvt(unsafe { libc::chdir(c"/".as_ptr()) })?;
    Ok(())
}

fn c_name_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// Why switching users failed.
#[derive(Debug)]
pub enum SwitchError {
    /// A call failed; the name says which.
    Call(&'static str, io::Error),
    /// The calls succeeded but the process is not what was asked for.
    Verify(String),
}

impl std::fmt::Display for SwitchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SwitchError::Call(what, e) => write!(f, "{what} failed: {e}"),
            SwitchError::Verify(what) => write!(f, "verification failed: {what}"),
        }
    }
}

impl std::error::Error for SwitchError {}

/// Switches the whole process (every thread: glibc broadcasts the id
/// changes) to `uid`/`gid` with `gid` and `more` as its supplementary
/// groups (the user's memberships, as `initgroups` sets them), then
/// verifies the real and effective ids, the group list, and — when
/// leaving root — that `setuid(0)` is refused.
///
/// Meant to run while the process is root; a process that already has
/// exactly these ids is left alone.
pub fn switch_user(uid: u32, gid: u32, more: &[u32]) -> Result<(), SwitchError> {
    let (ruid, euid, rgid, egid) = ids();
    if (ruid, euid, rgid, egid) == (uid, uid, gid, gid) {
        return Ok(());
    }
    let list = group_list(gid, more);
    // SAFETY: `list` holds `list.len()` valid gids.
    cvt(unsafe { libc::setgroups(list.len(), list.as_ptr()) })
        .map_err(|e| SwitchError::Call("setgroups", e))?;
    // SAFETY: plain syscall.
    cvt(unsafe { libc::setgid(gid) }).map_err(|e| SwitchError::Call("setgid", e))?;
    // SAFETY: plain syscall.
    cvt(unsafe { libc::setuid(uid) }).map_err(|e| SwitchError::Call("setuid", e))?;
    verify(uid, gid, &list, euid == 0)
}

/// `gid`, then each of `more` that is not `gid`.
pub fn group_list(gid: u32, more: &[u32]) -> Vec<u32> {
    let mut list = vec![gid];
    list.extend(more.iter().filter(|&&g| g != gid));
    list
}

fn verify(uid: u32, gid: u32, list: &[u32], was_root: bool) -> Result<(), SwitchError> {
    let now = ids();
    if now != (uid, uid, gid, gid) {
        return Err(SwitchError::Verify(format!(
            "ids are uid {}/{} gid {}/{}, wanted uid {uid} gid {gid}",
            now.0, now.1, now.2, now.3
        )));
    }
    let groups = groups().map_err(|e| SwitchError::Call("getgroups", e))?;
    if groups.iter().any(|g| !list.contains(g)) || list.iter().any(|g| !groups.contains(g)) {
        return Err(SwitchError::Verify(
            "the supplementary groups are not the user's".to_string(),
        ));
    }
    if was_root && uid != 0 {
        // SAFETY: plain syscall; success would be the failure we test for.
        if unsafe { libc::setuid(0) } == 0 {
            return Err(SwitchError::Verify("setuid(0) succeeded".to_string()));
        }
        // SAFETY: plain syscall, as above.
        if unsafe { libc::setgid(0) } == 0 && gid != 0 {
            return Err(SwitchError::Verify("setgid(0) succeeded".to_string()));
        }
    }
    Ok(())
}

/// `CAP_CHOWN`: give a file another owner (the log files `brisk-priv`
/// makes belong to the user brisk serves as).
pub const CAP_CHOWN: u32 = 0;
/// `CAP_DAC_OVERRIDE`: open and create files whatever their permissions.
pub const CAP_DAC_OVERRIDE: u32 = 1;
/// `CAP_NET_BIND_SERVICE`: bind ports below 1024.
pub const CAP_NET_BIND_SERVICE: u32 = 10;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`; version 3 takes two of them.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`.
const CAP_VERSION_3: u32 = 0x2008_0522;

/// Keeps only `caps` (of those the process has) in its effective and
/// permitted sets, and none inheritable: for a process that stays root
/// but needs only a little of what root may do. Cannot be undone.
pub fn keep_capabilities(caps: &[u32]) -> io::Result<()> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: a valid header and room for the two data structs version 3
    // writes.
    cvt(unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } as libc::c_int)?;
    let mut keep = [0u32; 2];
    for &c in caps {
        if let Some(word) = keep.get_mut((c / 32) as usize) {
            *word |= 1 << (c % 32);
        }
    }
    for (d, keep) in data.iter_mut().zip(keep) {
        d.permitted &= keep;
        d.effective = d.permitted;
        d.inheritable = 0;
    }
    // SAFETY: as above; the kernel only reads the two structs.
    cvt(unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } as libc::c_int)?;
    Ok(())
}

/// Whether capability `cap` (`CAP_SYS_CHROOT` is 18) is in the
/// process's effective set; `false` if the kernel cannot say.
pub fn has_capability(cap: u32) -> bool {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: a valid header and room for the two data structs version 3
    // writes.
    let got = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    got == 0
        && data
            .get((cap / 32) as usize)
            .is_some_and(|d| d.effective & (1 << (cap % 32)) != 0)
}

/// Looks user id `uid` up in the user database: its name and account;
/// `None` if no entry has that id.
pub fn lookup_uid(uid: u32) -> io::Result<Option<(String, Account)>> {
    let mut found = None;
    with_record_buf(|buf| {
        // SAFETY: as in `lookup_user`.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: as in `lookup_user`.
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut result) };
        if rc == 0 && !result.is_null() {
            let name = if pw.pw_name.is_null() {
                String::new()
            } else {
                // SAFETY: the record points into `buf`, NUL-terminated.
                unsafe { CStr::from_ptr(pw.pw_name) }
                    .to_string_lossy()
                    .into_owned()
            };
            found = Some((
                name,
                Account {
                    uid: pw.pw_uid,
                    gid: pw.pw_gid,
                },
            ));
        }
        rc
    })?;
    Ok(found)
}

/// The user name of a user id, for messages; `None` if unknown.
pub fn user_name(uid: u32) -> Option<String> {
    lookup_uid(uid).ok().flatten().map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_exists_and_nonsense_does_not() {
        let root = lookup_user("root")
            .unwrap()
            .expect("root in the user database");
        assert_eq!(root.uid, 0);
        assert_eq!(lookup_user("no-such-user-brisk-test").unwrap(), None);
        assert_eq!(lookup_group("no-such-group-brisk-test").unwrap(), None);
        assert_eq!(user_name(0).as_deref(), Some("root"));
        assert_eq!(
            lookup_uid(0).unwrap(),
            Some(("root".to_string(), Account { uid: 0, gid: 0 }))
        );
        // No system gives every id an entry.
        assert_eq!(lookup_uid(4_000_000_123).unwrap(), None);
        assert!(lookup_user("a\0b").is_err());
    }

    #[test]
    fn ids_are_consistent() {
        let (_, e, _, _) = ids();
        assert_eq!(e, euid());
        assert!(groups().is_ok());
    }
}
