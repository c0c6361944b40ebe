"""An HTTP/3 client for tests/it/h3.rs, on aioquic (PyPI).

Reads one JSON document on stdin:
  {"port": N, "ca": PATH, "sni": NAME,
   "requests": [{"method": M, "path": P, "headers": [[k, v], ...],
                 "body": BASE64 or absent, or "text": the body as text,
                 "raw": [[k, v], ...] instead of the four pseudo-headers
                 and headers, for malformed requests,
                 "trailers": [[k, v], ...] after the body,
                 "raw_after": BASE64, bytes sent on the stream as they
                 are after its HEADERS (frames of the test's making),
                 then its end}, ...]}
sends every request at once (one stream each) on one QUIC connection to
127.0.0.1:port (or "host": ADDRESS), and prints one JSON document on stdout:
  {"alpn": "h3", "settings": {"ID": VALUE, ...} (the server's),
   "senders": the addresses ("IP PORT", IPv4 ones unmapped) every
              datagram the client read came from,
   "retries": how many Retry packets the handshake took,
   "stateless_resets": how many stateless resets the server sent,
   "responses": [{"headers": [[k, v], ...] (in the order received),
                  "body": BASE64, "text": the body as text (UTF-8, lossy),
                  "length": N, "sha256": HEX,
                  "reset": CODE or null,
                  "stop_sending": CODE or null (the server's STOP_SENDING
                  for the request's body, if it sent one)}, ...]}
With "linger": SECONDS, it waits (bounded) after the answers for the
server to close the connection, and says what the server's control
stream carried: "control": HEX (its stream type, SETTINGS, GOAWAY...).
With "sequential": true, each request is sent once the one before it is
answered (so that the client's QPACK encoder may reference what the
server acknowledged); the output's "qpack" says how many of its field
sections referenced the dynamic table ("dynamic") and how many bytes the
server's QPACK decoder stream carried ("decoder_bytes").
With "await_uploads": true, it waits (bounded) after the answers until
every request body was delivered whole or reset, before it says what the
server did (for "stop_sending").
With "hold": SECONDS instead of requests, it prints "connected" once the
handshake is done and then waits for the server to close the connection:
  {"terminated": [CODE, REASON] or null}
With "stream_window": N, each request stream lets the server send N
bytes and no more (QUIC's initial stream flow-control limit, never
raised); a request's own "window": N does the same for its stream
alone. The output's "finished" lists the requests' indices in the
order their answers ended (or were reset). With
"first_byte": true a request is done at the first byte of its answer
(or its reset): its response then says "received", the bytes that came.
With "hold_after": SECONDS, the output is printed (one line) and the
connection kept open until its stdin closes (at most that long).
A request's "open": true leaves its stream open after its body (no
end); with "reset_when_told": [INDEX, ...], once a line comes on stdin
(the spec's own line read) those requests' streams are reset
(RESET_STREAM, H3_REQUEST_CANCELLED), and once they are answered (or
reset), it prints "answered" (a line before the JSON); with
"reset_after": INDEX too, they are reset once that request is answered
instead, nothing read on stdin nor printed before the JSON.
Exit status 2 when aioquic is missing (the test then skips, loudly).
"""

import asyncio
import base64
import hashlib
import json
import sys

try:
    from aioquic.asyncio.client import connect
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import DataReceived, HeadersReceived
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.events import (
        ConnectionTerminated,
        StopSendingReceived,
        StreamDataReceived,
        StreamReset,
    )
except ImportError:
    sys.exit(2)


class Recording:
    """aioquic's QPACK encoder, counting the sections that reference its
    dynamic table (a Required Insert Count, the first byte, not 0)."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.dynamic = 0

    def apply_settings(self, *args, **kwargs):
        return self.encoder.apply_settings(*args, **kwargs)

    def feed_decoder(self, data):
        return self.encoder.feed_decoder(data)

    def encode(self, stream_id, headers):
        stream, section = self.encoder.encode(stream_id, headers)
        self.dynamic += section[:1] != b"\x00"
        return stream, section


class Client(QuicConnectionProtocol):
    stream_window = None
    # The smallest window a request asks for ("window"): QUIC's initial
    # stream limit, which the other requests' streams raise at once.
    each_window = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.h3._encoder = Recording(self.h3._encoder)
        # aioquic (1.7) checks a response's content-length against its
        # DATA even for a HEAD request, whose answer has the length of
        # the GET's and no body (RFC 9110 §9.3.2): not for those.
        self.heads = set()
        check = self.h3._check_content_length
        self.h3._check_content_length = lambda s: (
            None if s.stream_id in self.heads else check(s)
        )
        self.streams = {}
        self.done = {}
        self.terminated = None
        # What the server's control stream (its first unidirectional
        # stream, id 3) carried.
        self.control = bytearray()
        # Stateless resets received (aioquic 1.7 does not look for them:
        # counted here as RFC 9000 §10.3.1 has a client recognise them).
        self.resets = 0
        self.senders = set()
        self.first_byte = False
        self.finished = []
        # Streams given a window of their own ("window"), never raised.
        self.stalled = set()
        q = self._quic
        raise_all = q._write_stream_limits

        def per_stream(builder, space, stream):
            if stream.stream_id not in self.stalled:
                raise_all(builder, space, stream)

        q._write_stream_limits = per_stream
        if self.each_window is not None:
            q._local_max_stream_data_bidi_local = self.each_window
        if self.stream_window is not None:
            # The request streams' limit alone (the server's control and
            # QPACK streams get aioquic's), never raised.
            q = self._quic
            q._local_max_stream_data_bidi_local = self.stream_window
            raise_limits = q._write_stream_limits

            def limits(builder, space, stream):
                if stream.stream_id % 4 != 0:
                    raise_limits(builder, space, stream)

            q._write_stream_limits = limits

    def datagram_received(self, data, addr):
        q = self._quic
        tokens = {c.stateless_reset_token for c in q._peer_cid_available}
        tokens.add(q._peer_cid.stateless_reset_token)
        if len(data) >= 21 and data[0] & 0x80 == 0 and bytes(data[-16:]) in tokens:
            self.resets += 1
        host = addr[0][7:] if addr[0].startswith("::ffff:") else addr[0]
        self.senders.add(f"{host} {addr[1]}")
        super().datagram_received(data, addr)

    def request(self, req):
        sid = self._quic.get_next_available_stream_id()
        q = self._quic
        if "window" in req:
            self.stalled.add(sid)
        if "raw" in req:
            # Exactly these fields, as given (for malformed requests).
            fields = [(k.encode(), v.encode()) for k, v in req["raw"]]
        else:
            fields = [
                (b":method", req["method"].encode()),
                (b":scheme", b"https"),
                (b":authority", req.get("authority", "a.test").encode()),
                (b":path", req["path"].encode()),
            ] + [(k.encode(), v.encode()) for k, v in req.get("headers", [])]
        if req.get("method") == "HEAD":
            self.heads.add(sid)
        body = base64.b64decode(req["body"]) if "body" in req else None
        if "text" in req:
            body = req["text"].encode()
        if "raw_after" in req:
            self.h3.send_headers(sid, fields, end_stream=False)
            q.send_stream_data(sid, base64.b64decode(req["raw_after"]), end_stream=True)
            body = None
        else:
            self.h3.send_headers(sid, fields, end_stream=body is None)
        if self.each_window is not None and sid not in self.stalled:
            # (The other streams get aioquic's usual window at once.)
            q._streams[sid].max_stream_data_local = q._configuration.max_stream_data
        trailers = [(k.encode(), v.encode()) for k, v in req.get("trailers", [])]
        if body is not None:
            self.h3.send_data(sid, body, end_stream=not trailers and not req.get("open"))
        if trailers:
            self.h3.send_headers(sid, trailers, end_stream=True)
        self.streams[sid] = {
            "headers": [],
            "body": bytearray(),
            "reset": None,
            "stop_sending": None,
            "received": 0,
        }
        self.done[sid] = self._loop.create_future()
        self.transmit()
        return sid

    def finish(self, sid):
        if not self.done[sid].done():
            self.finished.append(sid)
            self.done[sid].set_result(None)

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived) and event.stream_id == 3:
            self.control += event.data
        if isinstance(event, StreamDataReceived) and event.stream_id in self.streams:
            self.streams[event.stream_id]["received"] += len(event.data)
            if self.first_byte and event.data:
                self.finish(event.stream_id)
        if isinstance(event, StopSendingReceived) and event.stream_id in self.streams:
            self.streams[event.stream_id]["stop_sending"] = event.error_code
        if isinstance(event, StreamReset) and event.stream_id in self.streams:
            self.streams[event.stream_id]["reset"] = event.error_code
            self.finish(event.stream_id)
            return
        if isinstance(event, ConnectionTerminated):
            self.terminated = [event.error_code, event.reason_phrase]
            for sid in self.streams:
                self.finish(sid)
        for ev in self.h3.handle_event(event):
            s = self.streams.get(ev.stream_id)
            if s is None:
                continue
            if isinstance(ev, HeadersReceived):
                s["headers"].extend([k.decode(), v.decode()] for k, v in ev.headers)
            elif isinstance(ev, DataReceived):
                s["body"] += ev.data
            if ev.stream_ended:
                self.finish(ev.stream_id)


async def main(spec):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.load_verify_locations(spec["ca"])
    config.server_name = spec.get("sni", "a.test")
    Client.stream_window = spec.get("stream_window")
    windows = [r["window"] for r in spec.get("requests", []) if "window" in r]
    Client.each_window = min(windows) if windows else None
    async with connect(
        spec.get("host", "127.0.0.1"), spec["port"], configuration=config,
        create_protocol=Client
    ) as client:
        client.first_byte = spec.get("first_byte", False)
        if "hold" in spec:
            # Connected: say so, then wait (bounded) for the server to
            # close the connection, and say how.
            print("connected", flush=True)
            for _ in range(int(spec["hold"] * 100)):
                if client.terminated is not None:
                    break
                await asyncio.sleep(0.01)
            return {"terminated": client.terminated}
        if spec.get("sequential"):
            sids = []
            for r in spec["requests"]:
                sids.append(client.request(r))
                await asyncio.wait_for(client.done[sids[-1]], spec.get("timeout", 30))
        else:
            sids = [client.request(r) for r in spec["requests"]]
            if "reset_when_told" in spec:
                if "reset_after" in spec:
                    told = client.done[sids[spec["reset_after"]]]
                else:
                    told = asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

                async def reset():
                    await told
                    reset = [sids[i] for i in spec["reset_when_told"]]
                    for sid in reset:
                        client._quic.reset_stream(sid, 0x10C)
                    client.transmit()
                    await asyncio.gather(*(client.done[s] for s in reset))
                    if "reset_after" not in spec:
                        print("answered", flush=True)

                resetting = asyncio.ensure_future(reset())
            await asyncio.wait_for(
                asyncio.gather(*(client.done[s] for s in sids)), spec.get("timeout", 30)
            )
        if spec.get("await_uploads"):
            # Until every request's body is delivered whole or reset (the
            # server's STOP_SENDING, answered with RESET_STREAM): bounded.
            def sent(sid):
                stream = client._quic._streams.get(sid)
                return stream is None or stream.sender.is_finished

            for _ in range(int(spec.get("timeout", 30) * 100)):
                if all(sent(sid) for sid in sids):
                    break
                await asyncio.sleep(0.01)
        # The server's SETTINGS come on its control stream, at the
        # handshake's end: wait for them (bounded) before saying them.
        for _ in range(100):
            if client.h3.received_settings is not None:
                break
            await asyncio.sleep(0.01)
        settings = client.h3.received_settings or {}
        out = {
            "alpn": client._quic.tls.alpn_negotiated,
            "settings": {str(int(k)): v for k, v in settings.items()},
            "retries": client._quic._retry_count,
            "stateless_resets": client.resets,
            "senders": sorted(client.senders),
            "qpack": {
                "dynamic": client.h3._encoder.dynamic,
                "decoder_bytes": client.h3._decoder_bytes_received,
            },
            "responses": [],
        }
        for sid in sids:
            s = client.streams[sid]
            body = bytes(s["body"])
            out["responses"].append(
                {
                    "headers": s["headers"],
                    "body": base64.b64encode(body).decode() if len(body) <= 1 << 20 else "",
                    "text": body.decode("utf-8", "replace") if len(body) <= 1 << 20 else "",
                    "length": len(body),
                    "sha256": hashlib.sha256(body).hexdigest(),
                    "reset": s["reset"],
                    "stop_sending": s["stop_sending"],
                    "received": s["received"],
                }
            )
        for _ in range(int(spec.get("linger", 0) * 100)):
            if client.terminated is not None:
                break
            await asyncio.sleep(0.01)
        out["finished"] = [sids.index(s) for s in client.finished if s in sids]
        out["terminated"] = client.terminated
        out["control"] = client.control.hex()
        if "hold_after" in spec:
            print(json.dumps(out), flush=True)
            # Until stdin closes (the test is done), bounded.
            reader = asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
            await asyncio.wait_for(reader, spec["hold_after"])
            return None
        return out


if __name__ == "__main__":
    spec = json.loads(sys.stdin.readline())
    out = asyncio.run(main(spec))
    if out is not None:
        print(json.dumps(out))
