//! Kernel sandboxing: Landlock (which files may be opened, and how) and a
//! seccomp filter (which system calls may be made).
//!
//! Both are one-way: once applied they hold for the rest of the process's
//! life and are inherited by every thread created afterwards and by child
//! processes, across `exec`. Both are raw system calls; the policy (which
//! paths, which calls) is decided by the caller.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::cvt;

/// Landlock filesystem access rights (`LANDLOCK_ACCESS_FS_*`).
pub mod fs_access {
    /// Execute a file.
    pub const EXECUTE: u64 = 1 << 0;
    /// Open a file for writing.
    pub const WRITE_FILE: u64 = 1 << 1;
    /// Open a file for reading.
    pub const READ_FILE: u64 = 1 << 2;
    /// Open a directory or list its contents.
    pub const READ_DIR: u64 = 1 << 3;
    /// Remove an empty directory or rename one.
    pub const REMOVE_DIR: u64 = 1 << 4;
    /// Unlink (or rename) a file.
    pub const REMOVE_FILE: u64 = 1 << 5;
    /// Create a character device.
    pub const MAKE_CHAR: u64 = 1 << 6;
    /// Create a directory.
    pub const MAKE_DIR: u64 = 1 << 7;
    /// Create a regular file.
    pub const MAKE_REG: u64 = 1 << 8;
    /// Create a UNIX domain socket.
    pub const MAKE_SOCK: u64 = 1 << 9;
    /// Create a named pipe.
    pub const MAKE_FIFO: u64 = 1 << 10;
    /// Create a block device.
    pub const MAKE_BLOCK: u64 = 1 << 11;
    /// Create a symbolic link.
    pub const MAKE_SYM: u64 = 1 << 12;
    /// Link or rename a file from or to another directory (ABI 2).
    pub const REFER: u64 = 1 << 13;
    /// Truncate a file (ABI 3).
    pub const TRUNCATE: u64 = 1 << 14;
    /// `ioctl` on a device file (ABI 5).
    pub const IOCTL_DEV: u64 = 1 << 15;

    /// The rights that make sense on a file (rather than a directory).
    pub const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
}

/// `LANDLOCK_CREATE_RULESET_VERSION`.
const CREATE_RULESET_VERSION: u32 = 1 << 0;
/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;
/// `LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP` (ABI 4).
const NET_ALL: u64 = 0b11;
/// `LANDLOCK_ACCESS_NET_CONNECT_TCP` (ABI 4).
const NET_CONNECT: u64 = 0b10;
/// `LANDLOCK_RULE_NET_PORT`.
const RULE_NET_PORT: libc::c_int = 2;

/// `struct landlock_net_port_attr`.
#[repr(C, packed)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}
/// `LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET` (ABI 6).
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 0b01;
/// `LANDLOCK_SCOPE_SIGNAL` (ABI 6).
const SCOPE_SIGNAL: u64 = 0b10;

/// `struct landlock_ruleset_attr`, the newest layout; older kernels accept
/// it as long as the fields they do not know are zero.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version the kernel offers; `None` when Landlock is
/// not built in or not enabled at boot.
pub fn landlock_abi() -> Option<u32> {
    // SAFETY: with a null attribute and size 0 this flag only asks for the
    // version; no memory is touched.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as u32)
}

/// Every filesystem right the given ABI version knows.
pub fn landlock_rights(abi: u32) -> u64 {
    let mut all = (1 << 13) - 1;
    if abi >= 2 {
        all |= fs_access::REFER;
    }
    if abi >= 3 {
        all |= fs_access::TRUNCATE;
    }
    if abi >= 5 {
        all |= fs_access::IOCTL_DEV;
    }
    all
}

/// A file or directory opened (`O_PATH`) for a Landlock rule. Landlock
/// rules name descriptors, not paths, so they are opened while the
/// process still has the rights to reach them (before `chroot` and the
/// switch to an unprivileged user) and the ruleset is built later.
#[derive(Debug)]
pub struct RulePath {
    fd: OwnedFd,
    is_dir: bool,
}

impl RulePath {
    /// Opens `path` (following symlinks) without reading it; `None` when
    /// it does not exist.
    pub fn open(path: &Path) -> io::Result<Option<RulePath>> {
        let c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let fd = match cvt(unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) }) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(e),
        };
        // SAFETY: just opened, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let is_dir = super::fs::fstat(fd.as_raw_fd())?.kind == super::fs::Kind::Dir;
        Ok(Some(RulePath { fd, is_dir }))
    }

    /// Whether it is a directory (a rule then covers everything beneath).
    pub fn is_dir(&self) -> bool {
        self.is_dir
    }
}

/// What a sandbox under Landlock ABI `abi` allows of TCP when it lets
/// the process connect to `ports` alone (`None`: to none), for
/// `--check-config` and the log.
pub fn tcp_confinement(abi: u32, ports: Option<&[u16]>) -> String {
    // (Only upstreams and an ACME CA are connected to.)
    match ports.filter(|_| cfg!(any(feature = "upstreams", feature = "acme"))) {
        _ if abi < 4 => "TCP not confined (Landlock ABI 4 needed)".into(),
        Some(ports) if !ports.is_empty() => {
            let list: Vec<String> = ports.iter().map(u16::to_string).collect();
            format!("no TCP bind; TCP connects to port {} only", list.join(", "))
        }
        _ => "no TCP bind or connect".into(),
    }
}

/// A Landlock ruleset being built: everything it handles is denied except
/// what a rule allows.
pub struct Ruleset {
    fd: OwnedFd,
    handled: u64,
    abi: u32,
    /// It denies TCP binds and connects ([`Extra::deny_tcp`], ABI 4).
    net: bool,
}

/// What a ruleset restricts besides files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extra {
    /// Deny binding and connecting TCP sockets (ABI 4).
    pub deny_tcp: bool,
    /// Deny signals to processes outside the sandbox (ABI 6): the
    /// sandboxed process and its children signal one another only.
    pub scope_signals: bool,
    /// Deny connecting to the abstract UNIX sockets of processes outside
    /// the sandbox (ABI 6).
    pub scope_abstract_unix: bool,
}

impl Ruleset {
    /// A ruleset handling every filesystem right the kernel knows (and
    /// `extra`, where the kernel supports it). `None` when Landlock is
    /// unavailable.
    pub fn new(extra: Extra) -> io::Result<Option<Ruleset>> {
        let Some(abi) = landlock_abi() else {
            return Ok(None);
        };
        let handled = landlock_rights(abi);
        let net = extra.deny_tcp && abi >= 4;
        let attr = RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: if net { NET_ALL } else { 0 },
            scoped: match abi >= 6 {
                true => {
                    (if extra.scope_signals { SCOPE_SIGNAL } else { 0 })
                        | (if extra.scope_abstract_unix {
                            SCOPE_ABSTRACT_UNIX_SOCKET
                        } else {
                            0
                        })
                }
                false => 0,
            },
        };
        // SAFETY: `attr` is a valid ruleset attribute of the given size.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                std::mem::size_of::<RulesetAttr>(),
                0u32,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor; nobody else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Ok(Some(Ruleset {
            fd,
            handled,
            abi,
            net,
        }))
    }

    /// The kernel's Landlock ABI version.
    pub fn abi(&self) -> u32 {
        self.abi
    }

    /// Allows `access` beneath `target` (or on `target` alone when it is
    /// not a directory: then only the file rights of `access` apply).
    /// Rights the kernel does not know are dropped.
    pub fn allow(&mut self, target: &RulePath, access: u64) -> io::Result<()> {
        let mut allowed = access & self.handled;
        if !target.is_dir {
            allowed &= fs_access::FILE_RIGHTS;
        }
        if allowed == 0 {
            return Ok(());
        }
        let attr = PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: target.fd.as_raw_fd(),
        };
        // SAFETY: `attr`'s descriptor is open and it is a valid rule.
        unsafe { self.add_rule(RULE_PATH_BENEATH, (&attr as *const PathBeneathAttr).cast()) }
    }

    /// Allows TCP connections to `port` (an upstream's) where TCP is
    /// denied; nothing to do where it is not.
    pub fn allow_connect(&mut self, port: u16) -> io::Result<()> {
        if !self.net {
            return Ok(());
        }
        let attr = NetPortAttr {
            allowed_access: NET_CONNECT,
            port: u64::from(port),
        };
        // SAFETY: `attr` is a valid rule.
        unsafe { self.add_rule(RULE_NET_PORT, (&attr as *const NetPortAttr).cast()) }
    }

    /// `landlock_add_rule` of `attr`, a rule of type `kind`.
    ///
    /// # Safety
    /// `attr` points to a valid rule attribute of type `kind`, alive
    /// during the call.
    unsafe fn add_rule(&self, kind: libc::c_int, attr: *const libc::c_void) -> io::Result<()> {
        // SAFETY: the descriptor is an open ruleset; the caller vouches
        // for `attr`.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                kind,
                attr,
                0u32,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Enforces the ruleset on the calling thread and every thread and
    /// process it creates afterwards. Needs [`no_new_privs`] first.
    pub fn restrict_self(self) -> io::Result<()> {
        // SAFETY: the descriptor is an open ruleset.
        let rc =
            unsafe { libc::syscall(libc::SYS_landlock_restrict_self, self.fd.as_raw_fd(), 0u32) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Sets `no_new_privs` on the calling thread (inherited by its children):
/// `exec` can no longer grant privileges (set-user-id bits, file
/// capabilities). Landlock and an unprivileged seccomp filter require it.
pub fn no_new_privs() -> io::Result<()> {
    // SAFETY: plain prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    Ok(())
}

/// `AUDIT_ARCH_*` of the architecture this build runs on, if the seccomp
/// filter supports it.
fn audit_arch() -> Option<u32> {
    if cfg!(target_arch = "x86_64") {
        Some(0xC000_003E)
    } else if cfg!(target_arch = "aarch64") {
        Some(0xC000_00B7)
    } else {
        None
    }
}

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Offsets into `struct seccomp_data`.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// Low 32 bits of argument `i` (little-endian).
const fn off_arg_lo(i: u8) -> u32 {
    16 + 8 * i as u32
}

/// A system call allowed only with these arguments: for each pair, the
/// low 32 bits of argument `.0` equal to `.1` (`ioctl` with one request,
/// `setsockopt` with one level and option).
pub struct Guard {
    /// The call's number.
    pub call: libc::c_long,
    /// (argument's index, the value its low 32 bits must have).
    pub args: &'static [(u8, u32)],
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// Builds the filter program: the architecture check, one
/// "equal → allow" pair per allowed call, then each guarded call allowed
/// only with the arguments its guard names, everything else `EPERM`.
fn program(arch: u32, calls: &[libc::c_long], guards: &[Guard]) -> Vec<libc::sock_filter> {
    let allow = libc::SECCOMP_RET_ALLOW;
    let deny = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let mut p = vec![
        stmt(BPF_LD_W_ABS, OFF_ARCH),
        jump(BPF_JEQ_K, arch, 1, 0),
        stmt(BPF_RET_K, deny),
        stmt(BPF_LD_W_ABS, OFF_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        // x32 calls share the architecture value but set this bit.
        p.push(jump(BPF_JGE_K, 0x4000_0000, 0, 1));
        p.push(stmt(BPF_RET_K, deny));
    }
    for &nr in calls {
        p.push(jump(BPF_JEQ_K, nr as u32, 0, 1));
        p.push(stmt(BPF_RET_K, allow));
    }
    for guard in guards {
        // Each guard: the call's number (loaded again: an argument's
        // check replaced it), its arguments, allow; any mismatch jumps
        // past the allow to the next guard.
        let k = guard.args.len();
        p.push(stmt(BPF_LD_W_ABS, OFF_NR));
        p.push(jump(BPF_JEQ_K, guard.call as u32, 0, (2 * k + 1) as u8));
        for (i, &(arg, value)) in guard.args.iter().enumerate() {
            p.push(stmt(BPF_LD_W_ABS, off_arg_lo(arg)));
            p.push(jump(BPF_JEQ_K, value, 0, (2 * (k - 1 - i) + 1) as u8));
        }
        p.push(stmt(BPF_RET_K, allow));
    }
    p.push(stmt(BPF_RET_K, deny));
    p
}

/// Whether this build can install the seccomp filter (x86_64, aarch64).
pub fn seccomp_supported() -> bool {
    audit_arch().is_some()
}

/// Installs a seccomp filter on every thread of the process: `calls` are
/// allowed, those `guards` name only with their arguments (each guard
/// at most 100), every other call fails with `EPERM` without being run. Needs
/// [`no_new_privs`] (or `CAP_SYS_ADMIN`). `Ok(false)` when the kernel or
/// this architecture has no seccomp filtering.
pub fn seccomp_allow_only(calls: &[libc::c_long], guards: &[Guard]) -> io::Result<bool> {
    let Some(arch) = audit_arch() else {
        return Ok(false);
    };
    if guards.iter().any(|g| g.args.len() > 100) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let filter = program(arch, calls, guards);
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` points at `filter`, which outlives the call; the
    // kernel copies the program.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_TSYNC,
            &prog as *const libc::sock_fprog,
        )
    };
    match rc {
        0 => Ok(true),
        // A thread that could not be synchronised: its id.
        n if n > 0 => Err(io::Error::other(format!(
            "thread {n} could not take the seccomp filter"
        ))),
        _ => {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOSYS) => Ok(false),
                _ => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_shape() {
        let guards = [
            Guard {
                call: libc::SYS_ioctl,
                args: &[(1, 0x5421)],
            },
            Guard {
                call: libc::SYS_setsockopt,
                args: &[(1, 6), (2, 1)],
            },
        ];
        let p = program(0xC000_003E, &[1, 2], &guards);
        // Architecture check, load, (x32 check), pairs, the guards (load,
        // number, two per argument, allow), default.
        let x32 = if cfg!(target_arch = "x86_64") { 2 } else { 0 };
        let start = 4 + x32 + 2 * 2;
        assert_eq!(p.len(), start + (2 + 2 + 1) + (2 + 4 + 1) + 1);
        let last = p.last().unwrap();
        assert_eq!(last.k, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32);
        // Every mismatch in a guard lands on the next guard's load.
        let next = start + 5;
        for (at, insn) in p.iter().enumerate().take(next).skip(start) {
            if insn.code == BPF_JEQ_K {
                assert_eq!(at + 1 + usize::from(insn.jf), next, "{at}");
            }
        }
        for (at, insn) in p.iter().enumerate().skip(next).take(7) {
            if insn.code == BPF_JEQ_K {
                assert_eq!(at + 1 + usize::from(insn.jf), p.len() - 1, "{at}");
            }
        }
        assert_eq!(p[next + 2].k, off_arg_lo(1));
        assert_eq!(p[next + 4].k, off_arg_lo(2));
    }

    #[test]
    fn rights_grow_with_the_abi() {
        assert_eq!(landlock_rights(1), (1 << 13) - 1);
        assert!(landlock_rights(3) & fs_access::TRUNCATE != 0);
        assert!(landlock_rights(2) & fs_access::TRUNCATE == 0);
        assert!(landlock_rights(5) & fs_access::IOCTL_DEV != 0);
    }
}
