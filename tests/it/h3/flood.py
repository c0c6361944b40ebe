"""Abusive HTTP/3 clients for tests/it/h3/floods.rs, on aioquic (PyPI).

Reads one JSON document on stdin: {"port": N, "ca": PATH, "mode": M, ...}
and prints one JSON document on stdout. Modes:

  "reset": on one connection, opens up to "streams" request streams one
    after the other (GET "path"), each cancelled at once (RESET_STREAM and
    STOP_SENDING, H3_REQUEST_CANCELLED), waiting for the server's stream
    credit when it runs out; stops when the server closes the connection.
      {"cancelled": N, "terminated": [CODE, REASON] or null}
    With "overrun": true, each stream is instead made to be reset by the
    server: its HEADERS say content-length 1, then come 2 bytes of DATA
    and the stream's end (a stream error, H3_MESSAGE_ERROR, RFC 9114
    §4.1.2; the client never cancels anything, and it does not answer
    the server's STOP_SENDING with a RESET_STREAM, as an attacker would
    not). With "underrun": true, the same with content-length 10 and 3
    bytes of DATA: the server reads the short body's end after it
    answered (it wanted no body), where it is as much the client's fault.
    With "malformed": true, each is the head of a POST whose
    user-agent ends in a space (malformed, RFC 9114 §4.2), its 5-byte
    body to follow, which the server resets; the client, its body still
    to send, answers the server's STOP_SENDING with RESET_STREAM (RFC 9000
    §3.5, as aioquic does), and once every stream was reset asks for
    "path" again:
      {"cancelled": N, "terminated": ..., "server_resets": {CODE: N},
       "after": STATUS or null}
  "shared": "reset" on the second of two connections from one UDP socket
    (so one address and port), once the first has closed and the server
    has let go of it (a datagram of its connection ID is then answered
    with a stateless reset, waited for up to "timeout" seconds):
      {"forgotten": BOOL, "cancelled": N, "terminated": [CODE, REASON] or null}
  "critical": on one connection, once the server's SETTINGS came, closes
    a critical stream: "reset" one of the client's own ("control",
    "encoder" or "decoder": RESET_STREAM) or "stop" the server's control
    stream (STOP_SENDING on stream 3); then waits up to "wait" seconds for
    the connection's close:
      {"terminated": [CODE, REASON] or null}
  "raw": on one connection, "request" (hex) written on a new request
    stream (ended, unless "open": true), and "encoder" (hex) on the
    client's own QPACK encoder stream (after its type byte, which aioquic
    sent); then waits up to "wait" seconds for an answer, a reset or the
    connection's close (with "until_close": true, for the close alone).
    With "ping": true, a PING goes every 0.2 s meanwhile (so QUIC's own
    idle timeout never ends the connection), and with it "drip" (hex), if
    given, on the request stream.
      {"headers": [[k, v], ...], "reset": CODE or null,
       "terminated": [CODE, REASON] or null}
  "initials": for each address of "sources" (each "IP" or "IP:PORT"), a
    client's first flight (its Initial, padded to 1200 bytes) sent from
    a UDP socket bound there, one after the other; nothing is ever sent
    again (as from spoofed addresses); then, for "wait" seconds, what
    comes back to each socket is counted and read by that client:
      {"clients": [{"sent": BYTES, "datagrams": N, "bytes": BYTES, "sizes": [...],
                    "first": "initial" | "retry" | "handshake" | "other" | null,
                    "terminated": CODE or null}, ...]}
  "stray": on one connection (answered a GET of "path" first), the
    server's token for the connection ID the client sends to (its
    transport parameter), then "tries" datagrams of that connection ID
    (a short header and 40 random bytes, as a client whose address
    changed sends), each from a new UDP socket, so from a new port (the
    kernel then hands each to the socket of any worker): what comes back
    to each within "wait" seconds, then the status of another GET from
    the connection's own address:
      {"token": HEX, "status": CODE, "replies": [HEX, ...], "after": CODE}
Exit status 2 when aioquic is missing (the test then skips, loudly).
"""

import asyncio
import json
import os
import socket
import sys
import time

try:
    from aioquic.asyncio.client import connect
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import DataReceived, HeadersReceived
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset
except ImportError:
    sys.exit(2)

H3_REQUEST_CANCELLED = 0x10C


def configuration(spec):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.load_verify_locations(spec["ca"])
    config.server_name = spec.get("sni", "a.test")
    return config


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.terminated = None
        self.headers = {}
        self.resets = {}
        # What the server's control stream (id 3) carried.
        self.control = bytearray()

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived) and event.stream_id == 3:
            self.control += event.data
        if isinstance(event, ConnectionTerminated):
            self.terminated = [event.error_code, event.reason_phrase]
        if isinstance(event, StreamReset):
            self.resets[event.stream_id] = event.error_code
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self.headers.setdefault(ev.stream_id, []).extend(
                    [k.decode(), v.decode("utf-8", "replace")] for k, v in ev.headers
                )


async def resets(spec, client):
    quic = client._quic
    fields = [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"a.test"),
        (b":path", spec.get("path", "/").encode()),
    ]
    short = spec.get("underrun")
    if spec.get("overrun") or short:
        # (aioquic answers STOP_SENDING with RESET_STREAM even for a stream
        # it has ended: here the frame is read and ignored.)
        handlers = quic._QuicConnection__frame_handlers
        handlers[0x05] = (lambda ctx, kind, buf: (buf.pull_uint_var(), buf.pull_uint_var()),
                          handlers[0x05][1])
    malformed = spec.get("malformed")
    if malformed:
        fields = [(b":method", b"POST")] + fields[1:] + [
            (b"content-length", b"5"),
            (b"user-agent", b"tester/1.0 "),
        ]
    cancelled = 0
    deadline = time.monotonic() + spec.get("timeout", 30)
    while cancelled < spec["streams"] and client.terminated is None:
        sid = quic.get_next_available_stream_id()
        # (Within the server's stream credit: it gives more as streams close.)
        while sid // 4 >= quic._remote_max_streams_bidi and client.terminated is None:
            if time.monotonic() > deadline:
                return {"cancelled": cancelled, "terminated": None, "stuck": True}
            await asyncio.sleep(0.002)
        if client.terminated is not None:
            break
        if spec.get("overrun") or short:
            length = b"10" if short else b"1"
            client.h3.send_headers(sid, fields + [(b"content-length", length)])
            client.h3.send_data(sid, b"xyz" if short else b"xy", end_stream=True)
        elif malformed:
            client.h3.send_headers(sid, fields, end_stream=False)
        else:
            client.h3.send_headers(sid, fields, end_stream=False)
            quic.reset_stream(sid, H3_REQUEST_CANCELLED)
            quic.stop_stream(sid, H3_REQUEST_CANCELLED)
        client.transmit()
        cancelled += 1
        if cancelled % 20 == 0:
            # (Lets the datagrams go and the server's answers come.)
            await asyncio.sleep(0.001)
    for _ in range(300):
        if client.terminated is not None or (malformed and len(client.resets) >= cancelled):
            break
        await asyncio.sleep(0.01)
    out = {"cancelled": cancelled, "terminated": client.terminated}
    if malformed:
        codes = {}
        for code in client.resets.values():
            codes[str(code)] = codes.get(str(code), 0) + 1
        out["server_resets"] = codes
        out["after"] = None if client.terminated else await get(spec, client)
        out["terminated"] = client.terminated
    return out


async def raw(spec, client):
    quic = client._quic
    sid = None
    if spec.get("encoder"):
        quic.send_stream_data(
            client.h3._local_encoder_stream_id, bytes.fromhex(spec["encoder"]), False
        )
    if spec.get("request") is not None:
        sid = quic.get_next_available_stream_id()
        end = not spec.get("open", False)
        quic.send_stream_data(sid, bytes.fromhex(spec["request"]), end)
    client.transmit()
    answered = not spec.get("until_close", False)
    for i in range(int(spec.get("wait", 5) * 100)):
        if client.terminated is not None:
            break
        if answered and sid is not None and (sid in client.headers or sid in client.resets):
            break
        if spec.get("ping") and i % 20 == 0:
            quic.send_ping(i)
            if spec.get("drip") and sid is not None:
                quic.send_stream_data(sid, bytes.fromhex(spec["drip"]), False)
            client.transmit()
        await asyncio.sleep(0.01)
    return {
        "headers": client.headers.get(sid, []),
        "reset": client.resets.get(sid),
        "terminated": client.terminated,
    }


async def critical(spec, client):
    quic = client._quic
    wait = int(spec.get("wait", 5) * 100)
    for _ in range(wait):
        if client.control or client.terminated is not None:
            break
        await asyncio.sleep(0.01)
    if "stop" in spec:
        quic.stop_stream(3, 0x100)
    else:
        ids = {"control": client.h3._local_control_stream_id,
               "encoder": client.h3._local_encoder_stream_id,
               "decoder": client.h3._local_decoder_stream_id}
        quic.reset_stream(ids[spec["reset"]], 0x100)
    client.transmit()
    for _ in range(wait):
        if client.terminated is not None:
            break
        await asyncio.sleep(0.01)
    return {"terminated": client.terminated}


async def get(spec, client):
    """The status of a GET of spec's "path" on client's connection."""
    sid = client._quic.get_next_available_stream_id()
    client.h3.send_headers(sid, [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"a.test"),
        (b":path", spec.get("path", "/").encode()),
    ], end_stream=True)
    client.transmit()
    for _ in range(500):
        if sid in client.headers or client.terminated is not None:
            break
        await asyncio.sleep(0.01)
    return dict(client.headers.get(sid, [])).get(":status")


async def stray(spec, client):
    quic = client._quic
    status = await get(spec, client)
    cid, token = quic._peer_cid.cid, quic._peer_cid.stateless_reset_token
    replies = []
    for _ in range(spec.get("tries", 16)):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(spec.get("wait", 0.3))
        # (A short header: fixed bit set, then the connection ID.)
        sock.sendto(bytes([0x40 | 0x01]) + cid + os.urandom(40), ("127.0.0.1", spec["port"]))
        try:
            data, _ = sock.recvfrom(65536)
            replies.append(data.hex())
        except socket.timeout:
            pass
        sock.close()
    after = await get(spec, client)
    return {"token": token.hex(), "status": status, "replies": replies, "after": after}


def long_type(datagram):
    if not datagram or datagram[0] & 0x80 == 0:
        return "other"
    # QUIC version 1's long header types (RFC 9000 §17.2).
    return ["initial", "0rtt", "handshake", "retry"][(datagram[0] & 0x30) >> 4]


def initials(spec):
    config = configuration(spec)
    server = ("127.0.0.1", spec["port"])
    clients = []
    for source in spec["sources"]:
        host, _, port = source.partition(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((host, int(port or 0)))
        sock.setblocking(False)
        conn = QuicConnection(configuration=config)
        conn.connect(server, now=time.monotonic())
        sent = 0
        for data, _ in conn.datagrams_to_send(now=time.monotonic()):
            sock.sendto(data, server)
            sent += len(data)
        clients.append({"sock": sock, "conn": conn, "sent": sent, "datagrams": 0,
                        "bytes": 0, "sizes": [], "first": None, "terminated": None})
        # (One after the other, in order.)
        time.sleep(spec.get("gap", 0.01))
    end = time.monotonic() + spec.get("wait", 2)
    while time.monotonic() < end:
        quiet = True
        for c in clients:
            try:
                data, _ = c["sock"].recvfrom(65536)
            except BlockingIOError:
                continue
            quiet = False
            c["datagrams"] += 1
            c["bytes"] += len(data)
            if c["first"] is None:
                c["first"] = long_type(data)
            c["conn"].receive_datagram(data, server, now=time.monotonic())
            c["sizes"].append(len(data))
            # (aioquic tells a close it received once it has drained: it
            # is kept until then.)
            closed = c["conn"]._close_event
            if closed is not None and c["terminated"] is None:
                c["terminated"] = closed.error_code
        if quiet:
            time.sleep(0.005)
    return {"clients": [{k: c[k] for k in ("sent", "datagrams", "bytes", "sizes", "first", "terminated")}
                        for c in clients]}


class Shared(asyncio.DatagramProtocol):
    """One UDP socket's datagrams, handed to each of its connections
    (each drops those of another's connection ID); `reset` is set once a
    stateless reset for token `token` came."""

    def __init__(self, clients):
        self.clients = clients
        self.token = None
        self.reset = asyncio.Event()

    def connection_made(self, transport):
        for c in self.clients:
            c.connection_made(transport)

    def datagram_received(self, data, addr):
        if self.token is not None and data[-16:] == self.token:
            self.reset.set()
        for c in self.clients:
            c.datagram_received(data, addr)


async def shared(spec):
    loop = asyncio.get_running_loop()
    config = configuration(spec)
    first, second = (Client(QuicConnection(configuration=config)) for _ in range(2))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    mux = Shared([first, second])
    transport, _ = await loop.create_datagram_endpoint(lambda: mux, sock=sock)
    server = ("127.0.0.1", spec["port"])
    for c in (first, second):
        c.connect(server)
        await c.wait_connected()
    # The first goes; once the server has forgotten it, its connection ID
    # gets a stateless reset (a short header, then random bytes).
    peer = first._quic._peer_cid
    mux.token = peer.stateless_reset_token
    first.close()
    await first.wait_closed()
    deadline = time.monotonic() + spec.get("timeout", 30)
    while not mux.reset.is_set() and time.monotonic() < deadline:
        transport.sendto(bytes([0x40 | 0x01]) + peer.cid + os.urandom(60), server)
        try:
            await asyncio.wait_for(mux.reset.wait(), 0.05)
        except asyncio.TimeoutError:
            pass
    out = {"forgotten": mux.reset.is_set()}
    out.update(await resets(spec, second))
    second.close()
    transport.close()
    return out


async def main(spec):
    if spec["mode"] == "initials":
        return initials(spec)
    if spec["mode"] == "shared":
        return await shared(spec)
    async with connect(
        "127.0.0.1", spec["port"], configuration=configuration(spec), create_protocol=Client
    ) as client:
        if spec["mode"] == "reset":
            return await resets(spec, client)
        if spec["mode"] == "stray":
            return await stray(spec, client)
        if spec["mode"] == "critical":
            return await critical(spec, client)
        return await raw(spec, client)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
