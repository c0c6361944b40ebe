//! Reading a file into an output buffer in pieces, each behind a few
//! bytes of the caller's (HTTP/2's DATA frames: a 9-byte frame header,
//! then up to 16 KiB of the file), with one `preadv(2)` for all of them
//! rather than a `pread` per piece, and without zeroing the buffer first.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::cvt_size;

/// Most pieces one call reads.
pub const MAX_PIECES: usize = 32;

/// Appends to `buf`, for each `(prefix, len)` of `pieces` (at most
/// [`MAX_PIECES`]), `prefix` and then the next `len` bytes of `file`,
/// reading from `offset` on. On an error (a read error, or the file
/// ending before all of it: `UnexpectedEof`) `buf` is left as it was.
pub fn read_behind_prefixes(
    buf: &mut Vec<u8>,
    file: &File,
    offset: u64,
    pieces: &[(&[u8], usize)],
) -> io::Result<()> {
    if pieces.len() > MAX_PIECES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many pieces",
        ));
    }
    let total: usize = pieces.iter().map(|(p, n)| p.len() + n).sum();
    let start = buf.len();
    buf.reserve(total);
    // The prefixes go into the spare capacity; each data region's place
    // after them becomes one iovec.
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_PIECES];
    let base = buf.as_mut_ptr();
    let mut at = start;
    for (i, (prefix, len)) in pieces.iter().enumerate() {
        // SAFETY: `at + prefix.len() + len <= start + total`, within the
        // capacity reserved above; the prefix is copied into spare
        // capacity that nothing else refers to.
        unsafe {
            std::ptr::copy_nonoverlapping(prefix.as_ptr(), base.add(at), prefix.len());
            iov[i] = libc::iovec {
                iov_base: base.add(at + prefix.len()).cast(),
                iov_len: *len,
            };
        }
        at += prefix.len() + len;
    }
    let mut iov = &mut iov[..pieces.len()];
    let mut offset = offset;
    while iov.iter().any(|v| v.iov_len > 0) {
        // SAFETY: each iovec covers spare capacity of `buf` reserved
        // above, disjoint from the others, valid for the call.
        let read = unsafe {
            libc::preadv(
                file.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                offset as libc::off_t,
            )
        };
        let mut n = match cvt_size(read) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        offset += n as u64;
        // A short read: skip what was filled, and read the rest.
        while n > 0 {
            let Some(first) = iov.first_mut() else { break };
            let take = n.min(first.iov_len);
            // SAFETY: moving the pointer within the region it covers.
            first.iov_base = unsafe { first.iov_base.cast::<u8>().add(take).cast() };
            first.iov_len -= take;
            n -= take;
            if first.iov_len == 0 {
                iov = &mut iov[1..];
            }
        }
    }
    // SAFETY: every byte of `start..start + total` was written: the
    // prefixes by the copies, the data regions by the reads above.
    unsafe { buf.set_len(start + total) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn pieces_follow_their_prefixes_and_a_short_file_is_an_error() {
        let path = std::env::temp_dir().join(format!("brisk-interleave-{}", std::process::id()));
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&data)
            .unwrap();
        let file = File::open(&path).unwrap();
        let mut buf = b"head".to_vec();
        let pieces = [(&b"AB"[..], 40_000), (b"C", 30_000), (b"", 10)];
        read_behind_prefixes(&mut buf, &file, 5, &pieces).unwrap();
        let mut want = b"headAB".to_vec();
        want.extend_from_slice(&data[5..40_005]);
        want.push(b'C');
        want.extend_from_slice(&data[40_005..70_005]);
        want.extend_from_slice(&data[70_005..70_015]);
        assert!(buf == want);
        // Past the end: an error, and the buffer as it was.
        let before = buf.clone();
        let err = read_behind_prefixes(&mut buf, &file, 99_990, &[(b"x", 20)]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(buf == before);
        std::fs::remove_file(&path).unwrap();
    }
}
