#!/usr/bin/env python3
"""A disk that does not answer until told: a FUSE filesystem (the kernel's
protocol on /dev/fuse, spoken here with the standard library alone) of
four read-only files, `large.bin`, `small.txt`, `cold.txt` and
`open.bin`, whose reads of `large.bin`, lookups of `cold.txt` (a name not
yet in the kernel's caches, on a disk that must be read to find it) and
opens of `open.bin` (a server asked at each open, as sshfs's or NFS's
is; its bytes are the first 100,000 of `large.bin`) are held until a
line arrives on stdin (or stdin ends). The
test sees a read held (a line `held` on stdout) and what the server does
meanwhile. A line `count` instead says how many reads of `large.bin`
came so far (a line `reads N` on stdout), and opens nothing; a line
`hold` shuts the gate again (for the reads to come).

    gatefs.py MOUNTPOINT LARGE_FILE [MB_PER_S] [--latency MS]

`large.bin` holds the bytes of LARGE_FILE (read once, at start). With
MB_PER_S, a slow disk instead (bench/cold-disk): no gate, each read of
`large.bin` is answered once a disk of that rate, reading one request
after the other, would have read it. With --latency, a server that far
away instead (bench/cold-disk --remote): no gate, every lookup, attribute
request and open answered MS milliseconds after it came (each on its own
time, as over a network), and 2,000 more small files, `n0000.txt` to
`n1999.txt`. Prints `mounted` once the mount is
made. Ends at EOF on /dev/fuse (unmounted). Needs root (mount(2)).
"""

import ctypes
import errno
import os
import select
import time
import struct
import sys


ROOT, LARGE, SMALL, COLD, OPENED = 1, 2, 3, 4, 5
IN_HEADER = struct.Struct("<IIQQIIIHH")  # 40 bytes
OUT_HEADER = struct.Struct("<IiQ")  # 16 bytes
LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE = 1, 2, 3, 14, 15, 17, 18
GETXATTR, LISTXATTR, FLUSH, INIT, OPENDIR, READDIR = 22, 23, 25, 26, 27, 28
RELEASEDIR, ACCESS, INTERRUPT, DESTROY, BATCH_FORGET = 29, 34, 36, 38, 42


def attr(node, size):
    mode = 0o40555 if node == ROOT else 0o100444
    nlink = 2 if node == ROOT else 1
    # ino, size, blocks, atime, mtime, ctime, their nanoseconds, mode,
    # nlink, uid, gid, rdev, blksize, flags
    return struct.pack(
        "<QQQQQQIIIIIIIIII",
        node, size, (size + 511) // 512, 1_700_000_000, 1_700_000_000,
        1_700_000_000, 0, 0, 0, mode, nlink, 0, 0, 0, 4096, 0,
    )


def main():
    args = sys.argv[1:]
    # The far server: seconds to each answer, and the answers on their
    # way (when each is due, in order).
    latency, later = None, []
    if "--latency" in args:
        at = args.index("--latency")
        latency = float(args[at + 1]) / 1000
        del args[at:at + 2]
    point = args[0]
    # The slow disk: bytes a second, when it is next free, and the reads
    # it is making (when each is done, in order).
    rate = float(args[2]) * 1e6 if len(args) > 2 else None
    disk_free, reading = 0.0, []
    with open(args[1], "rb") as f:
        files = {LARGE: f.read(), SMALL: b"small\n", COLD: b"cold\n"}
    files[OPENED] = files[LARGE][:100_000]
    names = {b"large.bin": LARGE, b"small.txt": SMALL, b"cold.txt": COLD, b"open.bin": OPENED}
    if latency is not None:
        for i in range(2000):
            files[100 + i] = f"n{i:04}\n".encode()
            names[f"n{i:04}.txt".encode()] = 100 + i
    size = {node: len(data) for node, data in files.items()}
    size[ROOT] = 0

    fuse = os.open("/dev/fuse", os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    opts = f"fd={fuse},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"gatefs", point.encode(), b"fuse.gatefs", 0, opts) != 0:
        sys.exit(f"mount: {os.strerror(ctypes.get_errno())}")
    print("mounted", flush=True)

    held, gate_open, large_reads, pending = [], rate is not None or latency is not None, 0, b""
    inputs = [fuse] if gate_open else [fuse, sys.stdin]

    def reply(unique, err=0, body=b""):
        os.write(fuse, OUT_HEADER.pack(16 + len(body), -err, unique) + body)

    def read_reply(unique, node, body):
        fh, offset, n = struct.unpack_from("<QQI", body)
        reply(unique, 0, files[node][offset:offset + n])

    def lookup_reply(unique, node, body):
        child = names.get(body.rstrip(b"\0"))
        if node != ROOT or child is None:
            reply(unique, errno.ENOENT)
        else:
            # nodeid, generation, entry and attribute validity (1 s)
            out = struct.pack("<QQQQII", child, 0, 1, 1, 0, 0)
            reply(unique, 0, out + attr(child, size[child]))

    def open_reply(unique, _node, _body):
        # fh, open_flags, padding
        reply(unique, 0, struct.pack("<QII", 0, 0, 0))

    def readdir_reply(unique, _node, body):
        # (Listed, so that a server can tell the names' case apart.)
        _fh, offset, room = struct.unpack_from("<QQI", body)
        out = b""
        for at, (name, child) in enumerate(sorted(names.items())[offset:], start=offset):
            # ino, the next entry's offset, name length, type (DT_REG), name
            entry = struct.pack("<QQII", child, at + 1, len(name), 8) + name
            entry += b"\0" * (-len(entry) % 8)
            if len(out) + len(entry) > room:
                break
            out += entry
        reply(unique, 0, out)

    def getattr_reply(unique, node, _body):
        # attribute validity (1 s), padding
        reply(unique, 0, struct.pack("<QII", 1, 0, 0) + attr(node, size[node]))

    answer = {LOOKUP: lookup_reply, READ: read_reply, OPEN: open_reply}

    while True:
        while reading and reading[0][0] <= time.monotonic():
            read_reply(*reading.pop(0)[1:])
        while later and later[0][0] <= time.monotonic():
            _, then, *on = later.pop(0)
            then(*on)
        due = [q[0][0] for q in (reading, later) if q]
        wait = max(0.0, min(due) - time.monotonic()) if due else None
        ready, _, _ = select.select(inputs, [], [], wait)
        if sys.stdin in ready:
            # (Read from the descriptor, every line it holds taken: a
            # buffered readline would keep a second line in its buffer,
            # where select does not see it.)
            chunk = os.read(sys.stdin.fileno(), 4096)
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            if not chunk:
                inputs.remove(sys.stdin)  # (at EOF: the gate opens too)
                lines.append(b"open")
            for line in lines:
                if line.strip() == b"count":
                    print(f"reads {large_reads}", flush=True)
                elif line.strip() == b"hold":
                    gate_open = False
                else:
                    gate_open = True
                    for op, unique, node, body in held:
                        answer[op](unique, node, body)
                    held.clear()
        if fuse not in ready:
            continue
        try:
            msg = os.read(fuse, 1 << 20)
        except OSError as e:
            if e.errno in (errno.ENODEV, errno.EBADF):
                return
            if e.errno in (errno.EINTR, errno.ENOENT, errno.EAGAIN):
                continue
            raise
        if not msg:
            return
        _, op, unique, node, *_ = IN_HEADER.unpack_from(msg)
        body = msg[IN_HEADER.size:]
        far = {LOOKUP: lookup_reply, GETATTR: getattr_reply, OPEN: open_reply}
        if latency is not None and op in far:
            later.append((time.monotonic() + latency, far[op], unique, node, body))
            continue
        if op == INIT:
            major, minor, readahead, _flags = struct.unpack_from("<IIII", body)
            # major, minor, max_readahead, flags (FUSE_ASYNC_READ, and
            # FUSE_PARALLEL_DIROPS: a lookup held does not hold the
            # others in the directory, as on a disk), max_background,
            # congestion_threshold, max_write, time_gran, max_pages,
            # map_alignment, flags2, unused
            out = struct.pack("<IIIIHHIIHHI7I", 7, min(minor, 31), readahead, 1 | 1 << 18,
                              16, 12, 128 << 10, 1, 32, 0, 0, *([0] * 7))
            reply(unique, 0, out)
        elif op == LOOKUP:
            if body.rstrip(b"\0") == b"cold.txt" and not gate_open:
                held.append((op, unique, node, body))
                print("held", flush=True)
            else:
                lookup_reply(unique, node, body)
        elif op == GETATTR:
            getattr_reply(unique, node, None)
        elif op == OPEN and node == OPENED and not gate_open:
            held.append((op, unique, node, body))
            print("held", flush=True)
        elif op in (OPEN, OPENDIR):
            open_reply(unique, node, body)
        elif op == READ:
            large_reads += node == LARGE
            if node == LARGE and not gate_open:
                held.append((op, unique, node, body))
                print("held", flush=True)
            elif node == LARGE and rate:
                n = struct.unpack_from("<QQI", body)[2]
                disk_free = max(time.monotonic(), disk_free) + n / rate
                reading.append((disk_free, unique, node, body))
            else:
                read_reply(unique, node, body)
        elif op == READDIR:
            readdir_reply(unique, node, body)
        elif op == STATFS:
            # blocks, bfree, bavail, files, ffree, bsize, namelen, frsize,
            # padding, spare
            reply(unique, 0, struct.pack("<QQQQQIIII6I", 0, 0, 0, 0, 0, 4096, 255, 4096, 0,
                                         *([0] * 6)))
        elif op in (RELEASE, RELEASEDIR, FLUSH, ACCESS):
            reply(unique)
        elif op in (FORGET, BATCH_FORGET, INTERRUPT):
            pass  # (no answer is expected)
        elif op == DESTROY:
            reply(unique)
            return
        else:
            reply(unique, errno.ENOSYS)


if __name__ == "__main__":
    main()
