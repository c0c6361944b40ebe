//! Sockets: `SO_REUSEPORT` listeners, `sendfile`, half-close.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use super::{cvt, cvt_size};

fn setsockopt_int(
    fd: libc::c_int,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` lives across the call and its size is passed exactly.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Creates a non-blocking listening socket bound to `addr`.
///
/// With `reuseport`, several sockets (one per worker) may bind the same
/// address and the kernel spreads new connections across them.
///
/// A non-zero `defer` sets `TCP_DEFER_ACCEPT`: the kernel completes the
/// handshake but hands the connection over only once the request's first
/// bytes are there (or, for a silent client, after about `defer`), so the
/// first read after accept usually finds the request and no epoll round
/// trip is spent on a connection that has nothing to say yet.
///
/// `bound_unsent`: its connections hold at most [`NOTSENT_LOWAT`] bytes
/// unsent (plain HTTP), else the system's bound (TLS).
pub fn listen(
    addr: &SocketAddr,
    reuseport: bool,
    backlog: i32,
    defer: Duration,
    bound_unsent: bool,
) -> io::Result<TcpListener> {
    let (fd, owned) = socket(addr, libc::SOCK_STREAM)?;
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if reuseport {
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    if addr.is_ipv6() {
        // `[::]:80` must not also take IPv4: that is `0.0.0.0:80`'s job.
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1)?;
    }
    tune(fd, defer, bound_unsent)?;
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    cvt(unsafe { libc::bind(fd, (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    // SAFETY: plain syscall on a descriptor we own.
    cvt(unsafe { libc::listen(fd, backlog) })?;
    Ok(TcpListener::from(owned))
}

/// A new non-blocking socket of `kind` (`SOCK_STREAM`, `SOCK_DGRAM`)
/// for `addr`'s family: its descriptor, and the owner that closes it.
fn socket(addr: &SocketAddr, kind: libc::c_int) -> io::Result<(libc::c_int, OwnedFd)> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain syscall; the returned descriptor is owned below.
    let fd =
        cvt(unsafe { libc::socket(family, kind | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok((fd, unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A non-blocking UDP socket bound to `addr`, with `SO_REUSEPORT` when
/// `reuseport` (one per worker: the kernel spreads datagrams over them by
/// a hash of their 4-tuple, so one client's datagrams reach one socket).
/// IPv6 addresses take IPv6 only, as [`listen`]'s do.
///
/// Bound to a wildcard address (`0.0.0.0`, `[::]`), it says where each
/// datagram was sent (`IP_PKTINFO`, `IPV6_RECVPKTINFO`: see
/// [`recv_batch`]), so that the answer goes from there ([`send_segments`]'s
/// `from`): the kernel's own choice of source is the address of the
/// route back, which on a host with several addresses may not be the
/// one the client wrote to, and a client drops what comes from another
/// (RFC 9000 §9: it is not its server's path).
pub fn udp(addr: &SocketAddr, reuseport: bool) -> io::Result<std::net::UdpSocket> {
    let (fd, owned) = socket(addr, libc::SOCK_DGRAM)?;
    if reuseport {
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    if addr.is_ipv6() {
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1)?;
    }
    // (Only HTTP/3 reads datagrams.)
    #[cfg(feature = "http3")]
    match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => {
            setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_PKTINFO, 1)?;
        }
        SocketAddr::V6(a) if a.ip().is_unspecified() => {
            setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
        }
        _ => {}
    }
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    cvt(unsafe { libc::bind(fd, (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    Ok(std::net::UdpSocket::from(owned))
}

/// Gives a listening socket brisk did not make (passed by systemd, or
/// by the brisk it replaces) what [`listen`] gives its own: `TCP_NODELAY`
/// for the connections it accepts, the bound on unsent bytes if
/// `bound_unsent` (else the system's, whatever it had), and
/// `TCP_DEFER_ACCEPT` when `defer` is not zero (or off when it is).
pub fn tune_listener(sock: &TcpListener, defer: Duration, bound_unsent: bool) -> io::Result<()> {
    tune(sock.as_raw_fd(), defer, bound_unsent)
}

/// How many bytes a connection may hold written but not yet sent
/// (`TCP_NOTSENT_LOWAT`): beyond it a `sendfile` or `send` stops short and
/// the socket is writable again only once the kernel has sent enough.
///
/// Without a bound, one `sendfile` queues a whole 1 MiB file while the
/// client's receive window takes a fraction; the rest is then sent from
/// the softirq that handles the client's window updates, which on a
/// machine where the client runs too (a proxy, a load generator, a
/// container neighbour) is the client's CPU, not the server's: on
/// loopback with the client's core saturated (bench scenario 3), brisk's
/// answers cost the client's core ~80 µs more softirq each, and brisk
/// served 0.85 × lighttpd's 1 MiB answers; with this bound, 1.05 × (quiet
/// runs, 2026-11-30). Bytes in flight are not limited, so throughput over
/// a long fat path is unchanged; only what waits in the queue is.
///
/// Plain connections only: TLS records that the socket does not take
/// wait in a buffer of the connection's own, allocated for as long as
/// they wait, so a bound there would cost each large answer an
/// allocation (and TLS copies through user space anyway); a plain
/// connection's `sendfile` leaves what waits in the page cache. A TLS
/// listener's connections get 0, the system's bound
/// (`net.ipv4.tcp_notsent_lowat`, unbounded unless an administrator set
/// it).
pub const NOTSENT_LOWAT: libc::c_int = 256 * 1024;

/// `TCP_NODELAY`, `TCP_NOTSENT_LOWAT` ([`NOTSENT_LOWAT`] if
/// `bound_unsent`, else the system's) and `TCP_DEFER_ACCEPT` (off for a
/// zero `defer`) on a listening socket.
fn tune(fd: libc::c_int, defer: Duration, bound_unsent: bool) -> io::Result<()> {
    // Accepted sockets inherit TCP_NODELAY and TCP_NOTSENT_LOWAT from the
    // listener (Linux copies the socket state on accept), which saves a
    // setsockopt each per connection. Responses leave whole, so Nagle
    // would only ever delay a pipelined answer behind an unacknowledged one.
    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    setsockopt_int(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_NOTSENT_LOWAT,
        if bound_unsent { NOTSENT_LOWAT } else { 0 },
    )?;
    let secs = defer.as_secs() + u64::from(defer.subsec_nanos() > 0);
    setsockopt_int(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_DEFER_ACCEPT,
        secs.min(i32::MAX as u64) as i32,
    )
}

/// Sends up to `count` bytes of `file` from `offset` to socket `sock`
/// without copying through user space; advances `offset`.
pub fn sendfile(
    sock: &impl AsRawFd,
    file: &impl AsRawFd,
    offset: &mut u64,
    count: usize,
) -> io::Result<usize> {
    let mut off = *offset as libc::off_t;
    // SAFETY: both descriptors are open for the duration of the call and
    // `off` is a valid, exclusively borrowed off_t.
    let n =
        cvt_size(unsafe { libc::sendfile(sock.as_raw_fd(), file.as_raw_fd(), &mut off, count) })?;
    *offset = off as u64;
    Ok(n)
}

/// Whether an idle connection has nothing to read and is not closed
/// (`recv(MSG_PEEK | MSG_DONTWAIT)` would block): a kept upstream
/// connection that may carry another request.
pub fn is_quiet(sock: &impl AsRawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: one byte of valid memory; the descriptor is open.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}

/// Sends `buf` to `to` on UDP socket `sock`: one datagram, or with
/// `segment` datagrams of that many bytes each (the last may be shorter)
/// in one `sendmsg(2)`, the kernel cutting them (GSO: `UDP_SEGMENT`,
/// Linux 4.18; an older kernel or a device without it says `EIO` or
/// `EINVAL`, and the caller sends them one by one). With `from`, they
/// leave from that address of the host (a wildcard socket's answer: see
/// [`udp`]; `IP_PKTINFO`'s `ipi_spec_dst`, `IPV6_PKTINFO`'s address).
#[cfg(feature = "http3")]
pub fn send_segments(
    sock: &impl AsRawFd,
    buf: &[u8],
    to: &SocketAddr,
    segment: Option<u16>,
    from: Option<std::net::IpAddr>,
) -> io::Result<usize> {
    use std::net::IpAddr;
    let (storage, namelen) = sockaddr(to);
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // Room for the control messages (a u16, and an in6_pktinfo of 20
    // bytes or an in_pktinfo of 12), aligned as cmsghdr is.
    let mut control = [0u64; 10];
    let mut used = 0;
    let mut put = |level, kind, data: &[u8]| {
        // SAFETY: CMSG_LEN and CMSG_SPACE only compute sizes.
        let (len, space) = unsafe {
            let n = data.len() as libc::c_uint;
            (libc::CMSG_LEN(n) as usize, libc::CMSG_SPACE(n) as usize)
        };
        let head = std::mem::size_of::<libc::cmsghdr>();
        let at = control.as_mut_ptr().cast::<u8>();
        // (At most two, 24 + 40 bytes: within `control`'s 80. `used` is
        // a multiple of 8, the header's alignment.)
        debug_assert!(used + space <= std::mem::size_of_val(&control));
        // SAFETY: the header and its data lie inside `control` (above),
        // at an offset aligned for cmsghdr; the data is copied bytewise.
        unsafe {
            let cmsg = at.add(used).cast::<libc::cmsghdr>();
            (*cmsg).cmsg_level = level;
            (*cmsg).cmsg_type = kind;
            (*cmsg).cmsg_len = len as _;
            std::ptr::copy_nonoverlapping(data.as_ptr(), at.add(used + head), data.len());
        }
        used += space;
    };
    if let Some(segment) = segment {
        put(libc::SOL_UDP, libc::UDP_SEGMENT, &segment.to_ne_bytes());
    }
    match (from, to) {
        (Some(IpAddr::V4(ip)), SocketAddr::V4(_)) => {
            // (`ipi_ifindex` 0 and `ipi_addr` unused: the route decides
            // the device, `ipi_spec_dst` the source.)
            let mut info = [0u8; std::mem::size_of::<libc::in_pktinfo>()];
            info[4..8].copy_from_slice(&ip.octets());
            put(libc::IPPROTO_IP, libc::IP_PKTINFO, &info);
        }
        (Some(IpAddr::V6(ip)), SocketAddr::V6(_)) => {
            // (`ipi6_ifindex` 0: the route decides the device.)
            let mut info = [0u8; std::mem::size_of::<libc::in6_pktinfo>()];
            info[..16].copy_from_slice(&ip.octets());
            put(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &info);
        }
        _ => {}
    }
    // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&storage as *const libc::sockaddr_storage)
        .cast_mut()
        .cast();
    msg.msg_namelen = namelen;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if used > 0 {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = used as _;
    }
    // SAFETY: `msg` points at `storage`, `iov` (over `buf`) and `control`,
    // all alive and unmoved during the call.
    cvt_size(unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) })
}

/// Datagrams [`recv_batch`] reads at most in one call.
#[cfg(feature = "http3")]
pub const RECV_BATCH: usize = 32;

/// A datagram [`recv_batch`] read.
#[cfg(feature = "http3")]
#[derive(Debug, Clone, Copy, Default)]
pub struct Datagram {
    /// Its length; 0 when it was cut (longer than its slot).
    pub len: usize,
    /// Who sent it.
    pub from: Option<SocketAddr>,
    /// The address it was sent to, on a socket bound to a wildcard one
    /// (see [`udp`]); `None` on others.
    pub to: Option<std::net::IpAddr>,
}

/// Room for one datagram's control messages in [`recv_batch`]: its
/// destination's pktinfo (40 bytes with its header at most).
#[cfg(feature = "http3")]
pub type Control = [u64; 8];

/// Reads up to [`RECV_BATCH`] datagrams from UDP socket `sock` in one
/// `recvmmsg(2)` (not waiting), datagram `i` into the `i`-th `slot`
/// bytes of `buf`, and what is known of it into `got[i]` (where each
/// was sent only with `controls`, for a socket that says: see [`udp`]);
/// how many came. A datagram longer than `slot` is cut, and told with
/// length 0 (the caller drops it: QUIC takes it as lost). `WouldBlock`
/// when none waits.
#[cfg(feature = "http3")]
pub fn recv_batch(
    sock: &impl AsRawFd,
    buf: &mut [u8],
    slot: usize,
    got: &mut [Datagram; RECV_BATCH],
    mut controls: Option<&mut [Control; RECV_BATCH]>,
) -> io::Result<usize> {
    let n = (buf.len() / slot).min(RECV_BATCH);
    // SAFETY: sockaddr_storage, iovec and mmsghdr are plain old data;
    // all-zero is a valid value of each.
    let mut names: [libc::sockaddr_storage; RECV_BATCH] = unsafe { std::mem::zeroed() };
    let mut iovs: [libc::iovec; RECV_BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; RECV_BATCH] = unsafe { std::mem::zeroed() };
    for (i, chunk) in buf.chunks_exact_mut(slot).take(n).enumerate() {
        iovs[i] = libc::iovec {
            iov_base: chunk.as_mut_ptr().cast(),
            iov_len: slot,
        };
        let h = &mut msgs[i].msg_hdr;
        h.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = 1;
        if let Some(c) = controls.as_deref_mut() {
            h.msg_control = c[i].as_mut_ptr().cast();
            h.msg_controllen = std::mem::size_of::<Control>() as _;
        }
    }
    // SAFETY: the first `n` entries of `msgs` point at their own entries
    // of `names`, `iovs` and `controls`, and those at disjoint
    // `slot`-byte pieces of `buf`; all alive and unmoved during the call.
    let r = unsafe {
        libc::recvmmsg(
            sock.as_raw_fd(),
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            // (An int for glibc, an unsigned one for musl.)
            libc::MSG_DONTWAIT as _,
            std::ptr::null_mut(),
        )
    };
    let came = usize::try_from(cvt(r)?).unwrap_or(0);
    for i in 0..came {
        let m = &msgs[i];
        let cut = m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        got[i] = Datagram {
            len: if cut { 0 } else { m.msg_len as usize },
            from: from_sockaddr(&names[i]),
            to: destination(&m.msg_hdr),
        };
    }
    Ok(came)
}

/// The destination address in `h`'s control messages (`IP_PKTINFO`'s
/// `ipi_addr`, the datagram's own; `IPV6_PKTINFO`'s address), if any.
#[cfg(feature = "http3")]
fn destination(h: &libc::msghdr) -> Option<std::net::IpAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr};
    // SAFETY: `h` was filled by the kernel, its control messages within
    // `msg_control` and `msg_controllen` (cut ones flagged
    // `MSG_CTRUNC`, and then not walked); CMSG_FIRSTHDR and CMSG_NXTHDR
    // keep within it, and each message's data is read bytewise within
    // its own length.
    unsafe {
        if h.msg_flags & libc::MSG_CTRUNC != 0 {
            return None;
        }
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            let len = (*c).cmsg_len as usize - (data as usize - c as usize);
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::IPPROTO_IP, libc::IP_PKTINFO)
                    if len >= std::mem::size_of::<libc::in_pktinfo>() =>
                {
                    let mut ip = [0u8; 4];
                    std::ptr::copy_nonoverlapping(data.add(8), ip.as_mut_ptr(), 4);
                    return Some(Ipv4Addr::from(ip).into());
                }
                (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO)
                    if len >= std::mem::size_of::<libc::in6_pktinfo>() =>
                {
                    let mut ip = [0u8; 16];
                    std::ptr::copy_nonoverlapping(data, ip.as_mut_ptr(), 16);
                    return Some(Ipv6Addr::from(ip).into());
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// The address in `s` (IPv4 or IPv6).
#[cfg(feature = "http3")]
fn from_sockaddr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: its family says it holds a sockaddr_in, which
            // sockaddr_storage is larger than and aligned for.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddrV4::new(ip, u16::from_be(a.sin_port)).into())
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            let port = u16::from_be(a.sin6_port);
            Some(SocketAddrV6::new(ip, port, a.sin6_flowinfo, a.sin6_scope_id).into())
        }
        _ => None,
    }
}

/// `send(2)` with `MSG_MORE` when more data follows at once (a head before
/// a `sendfile` body), so the kernel can put both in one segment.
pub fn send(sock: &impl AsRawFd, buf: &[u8], more: bool) -> io::Result<usize> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    // SAFETY: `buf` is valid for `buf.len()` bytes during the call.
    // (The system call itself, not libc's `send`: see [`raw`].)
    cvt_size(unsafe {
        raw(
            libc::SYS_sendto,
            [
                sock.as_raw_fd() as usize,
                buf.as_ptr() as usize,
                buf.len(),
                flags as usize,
            ],
        )
    })
}

/// A system call of four arguments made directly, the rest zero. libc's
/// wrappers of `read` and `send` are POSIX cancellation points and switch
/// the thread's asynchronous cancellation on and off around the call (~90
/// instructions a request, `bench/cost`); brisk never cancels a thread.
/// Returns as the wrappers do: the result, or -1 with `errno` set.
///
/// # Safety
/// As the call's: every pointer among `args` valid for what it does.
unsafe fn raw(nr: libc::c_long, args: [usize; 4]) -> isize {
    // SAFETY: the caller's.
    unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], 0usize, 0usize) as isize }
}

/// The bytes `sock`'s send queue holds (`SIOCOUTQ`): written and not yet
/// sent, or sent and not yet acknowledged by the peer (its FIN counts as
/// one); 0 once everything written has reached the client's system, which
/// only takes more as its program reads.
pub fn unsent(sock: &impl AsRawFd) -> io::Result<u32> {
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ on Linux) writes one int through the
    // pointer, which points at `n` for the whole call.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::TIOCOUTQ, &mut n) })?;
    Ok(n.max(0) as u32)
}

/// Reads from `sock` into the spare capacity of `buf` (never initialising
/// it first), growing `buf.len()` by the bytes read.
pub fn read_into_spare(sock: &impl AsRawFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    read_at_most(sock, buf, usize::MAX)
}

/// [`read_into_spare`], of at most `max` bytes.
pub fn read_at_most(sock: &impl AsRawFd, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    let spare = (buf.capacity() - buf.len()).min(max);
    // SAFETY: the pointer and length describe (part of) the vector's
    // spare capacity, which the kernel writes; set_len only covers bytes
    // it wrote.
    unsafe {
        let n = cvt_size(raw(
            libc::SYS_read,
            [
                sock.as_raw_fd() as usize,
                buf.as_mut_ptr().add(buf.len()) as usize,
                spare,
                0,
            ],
        ))?;
        buf.set_len(buf.len() + n);
        Ok(n)
    }
}

/// `shutdown(2)` of the writing side of `sock` (TCP or unix): its peer
/// reads an end, and may still send (a half-close).
pub fn shutdown_write(sock: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: a plain system call on a descriptor the caller holds.
    cvt(unsafe { libc::shutdown(sock.as_raw_fd(), libc::SHUT_WR) }).map(drop)
}

/// `write(2)` on any descriptor (a CGI child's stdin pipe).
pub fn write_fd(fd: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes during the call.
    cvt_size(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// A blocking TCP connection to `addr`, given up after `timeout`: made
/// non-blocking (a socket flag, then `fcntl`), waited for in `poll`, its
/// outcome read with `getsockopt(SO_ERROR)`. (std's `connect_timeout`
/// switches blocking with `ioctl(FIONBIO)`, which the sandbox refuses.)
pub fn connect_within(addr: &SocketAddr, timeout: Duration) -> io::Result<std::net::TcpStream> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: socket(2) with constant arguments; the descriptor is owned
    // at once.
    let fd = cvt(unsafe { libc::socket(family, kind, 0) })?;
    // SAFETY: `fd` was just made and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let r = unsafe { libc::connect(fd, (&storage as *const libc::sockaddr_storage).cast(), len) };
    if r != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd.
        let n = loop {
            match cvt(unsafe { libc::poll(&mut pfd, 1, ms) }) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection timed out",
            ));
        }
        let mut err: libc::c_int = 0;
        let mut elen = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `err` and `elen` are valid for getsockopt's output.
        cvt(unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut err as *mut libc::c_int).cast(),
                &mut elen,
            )
        })?;
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
    }
    // SAFETY: fcntl on the owned descriptor.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) })?;
    Ok(std::net::TcpStream::from(sock))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::TcpStream;

    /// An integer socket option of `sock` (the test fails if it cannot
    /// be read).
    pub(crate) fn getsockopt_int(
        sock: &impl AsRawFd,
        level: libc::c_int,
        name: libc::c_int,
    ) -> libc::c_int {
        let mut value: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `value` and `len` are valid for writes of their sizes.
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                level,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        value
    }

    /// The options [`tune`] sets on the listener reach every accepted
    /// connection without a call of their own.
    #[test]
    fn accepted_connections_inherit_the_listeners_tuning() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let listener = listen(&addr, false, 8, Duration::ZERO, true).unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        listener.set_nonblocking(false).unwrap();
        let (conn, _) = listener.accept().unwrap();
        assert_eq!(
            getsockopt_int(&conn, libc::IPPROTO_TCP, libc::TCP_NODELAY),
            1
        );
        assert_eq!(
            getsockopt_int(&conn, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT),
            NOTSENT_LOWAT
        );
        // A TLS listener's connections have the system's bound (0: Linux
        // then reads `net.ipv4.tcp_notsent_lowat`).
        tune_listener(&listener, Duration::ZERO, false).unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (conn, _) = listener.accept().unwrap();
        assert_eq!(
            getsockopt_int(&conn, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT),
            0
        );
    }
}
