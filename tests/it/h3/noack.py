"""An HTTP/3 client for tests/it/h3.rs, on aioquic (PyPI), that never
acknowledges what the server sends once the handshake is done, yet keeps
its connection alive (a PING every 200 ms).

Reads one JSON document on stdin:
  {"port": N, "ca": PATH, "sni": NAME, "path": P, "timeout": SECONDS}
asks for P, and prints, once the server closed the connection or
`timeout` passed, one JSON document:
  {"length": N (body bytes that came), "terminated": [CODE, REASON] or null}
Exit status 2 when aioquic is missing (the test then skips, loudly).
"""

import json
import socket
import sys
import time

try:
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import DataReceived
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic import tls
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.events import ConnectionTerminated
except ImportError:
    sys.exit(2)


def main(spec):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.load_verify_locations(spec["ca"])
    config.server_name = spec.get("sni", "a.test")
    quic = QuicConnection(configuration=config)
    h3 = H3Connection(quic)
    write_ack = quic._write_ack_frame

    def no_ack(builder, space, now):
        # (1-RTT packets are never acknowledged once the handshake is done.)
        if quic._handshake_complete and space is quic._spaces.get(tls.Epoch.ONE_RTT):
            space.ack_at = None
            return
        write_ack(builder, space, now)

    quic._write_ack_frame = no_ack
    server = ("127.0.0.1", spec["port"])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(0.05)
    quic.connect(server, now=time.time())
    out = {"length": 0, "terminated": None}
    sid = None
    ping = 0
    next_ping = time.time()
    deadline = time.time() + spec.get("timeout", 20)
    while time.time() < deadline and out["terminated"] is None:
        for data, _ in quic.datagrams_to_send(now=time.time()):
            sock.sendto(data, server)
        try:
            data, addr = sock.recvfrom(65536)
            quic.receive_datagram(data, addr, now=time.time())
        except socket.timeout:
            pass
        timer = quic.get_timer()
        if timer is not None and time.time() >= timer:
            quic.handle_timer(now=time.time())
        event = quic.next_event()
        while event is not None:
            if isinstance(event, ConnectionTerminated):
                out["terminated"] = [event.error_code, event.reason_phrase]
            for e in h3.handle_event(event):
                if isinstance(e, DataReceived) and e.stream_id == sid:
                    out["length"] += len(e.data)
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
        if sid is not None and time.time() >= next_ping:
            ping += 1
            quic.send_ping(ping)
            next_ping = time.time() + 0.2
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(json.load(sys.stdin))
