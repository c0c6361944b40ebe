"""A slow HTTP/3 reader for tests/it/h3.rs, on aioquic (PyPI).

Reads one JSON document on stdin:
  {"port": N, "ca": PATH, "sni": NAME, "path": P, "window": BYTES,
   "mark": BYTES, "timeout": SECONDS}
asks for P on one QUIC connection to 127.0.0.1:port, granting the server
`window` bytes of flow-control credit at once (as browsers grant many
MiB), and takes in its datagrams slowly (a pause between turns, so that
the server's data waits unacknowledged), as a client on a slow link
does. Prints "mark" on a line of its own once `mark` body bytes have
come (the test then signals the server), then, once the answer ends,
the connection closes or `timeout` passes, one JSON document:
  {"length": N, "sha256": HEX, "ended": true if the stream ended,
   "reset": CODE or null, "terminated": [CODE, REASON] or null,
   "control": HEX (what the server's control stream, id 3, carried),
   "control_before_end": HEX (what it had carried when the answer ended)}
With "stall": SECONDS, it stops reading once the first body bytes came:
it prints "stalled", waits that long (the server's data unacknowledged,
its credit unspent), then says what it had.
Exit status 2 when aioquic is missing (the test then skips, loudly).
"""

import hashlib
import json
import socket
import sys
import time

try:
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import DataReceived
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset
except ImportError:
    sys.exit(2)


def main(spec):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.load_verify_locations(spec["ca"])
    config.server_name = spec.get("sni", "a.test")
    config.max_data = spec["window"]
    config.max_stream_data = spec["window"]
    quic = QuicConnection(configuration=config)
    h3 = H3Connection(quic)
    server = ("127.0.0.1", spec["port"])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    quic.connect(server, now=time.time())

    def flush():
        for data, _ in quic.datagrams_to_send(now=time.time()):
            try:
                sock.sendto(data, server)
            except BlockingIOError:
                pass

    out = {"length": 0, "sha256": None, "ended": False, "reset": None, "terminated": None,
           "control_before_end": None}
    control = bytearray()
    digest = hashlib.sha256()
    sid = None
    marked = False
    deadline = time.time() + spec.get("timeout", 60)
    flush()
    while time.time() < deadline and out["terminated"] is None:
        # A slow reader: what came waits in the socket meanwhile.
        time.sleep(0.03)
        for _ in range(64):
            try:
                data, addr = sock.recvfrom(65536)
            except BlockingIOError:
                break
            quic.receive_datagram(data, addr, now=time.time())
        timer = quic.get_timer()
        if timer is not None and time.time() >= timer:
            quic.handle_timer(now=time.time())
        event = quic.next_event()
        while event is not None:
            if isinstance(event, ConnectionTerminated):
                out["terminated"] = [event.error_code, event.reason_phrase]
            elif isinstance(event, StreamReset) and event.stream_id == sid:
                out["reset"] = event.error_code
            elif isinstance(event, StreamDataReceived) and event.stream_id == 3:
                control += event.data
            for e in h3.handle_event(event):
                if isinstance(e, DataReceived) and e.stream_id == sid:
                    digest.update(e.data)
                    out["length"] += len(e.data)
                    out["ended"] = out["ended"] or e.stream_ended
                    if e.stream_ended:
                        out["control_before_end"] = control.hex()
            event = quic.next_event()
        if sid is None and quic._handshake_complete:
            sid = quic.get_next_available_stream_id()
            h3.send_headers(
                sid,
                [
                    (b":method", b"GET"),
                    (b":scheme", b"https"),
                    (b":authority", config.server_name.encode()),
                    (b":path", spec["path"].encode()),
                ],
                end_stream=True,
            )
        if not marked and out["length"] >= spec["mark"]:
            marked = True
            print("mark", flush=True)
        flush()
        if "stall" in spec and out["length"] > 0:
            print("stalled", flush=True)
            time.sleep(spec["stall"])
            break
        if out["ended"] or out["reset"] is not None:
            # (Then the server's close, if it comes soon.)
            deadline = min(deadline, time.time() + 2)
    out["sha256"] = digest.hexdigest()
    out["control"] = control.hex()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(json.load(sys.stdin))
