//! A raw HTTP/2 client for the tests, built on brisk's own frame codec
//! and HPACK: every frame the server sends is checked as it arrives.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};

use brisk::h2::frame::{self, flag, kind, setting, Head, HEAD_LEN};
use brisk::h2::{hpack, PREFACE};

use super::IO_TIMEOUT;

/// A frame from the server.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
    /// A HEADERS frame's fields, decoded as it arrived (every block is,
    /// in order: the server's encoder counts on the table it builds).
    pub fields: Vec<(String, String)>,
}

/// A stream's answer as the client saw it.
#[derive(Debug, Default)]
pub struct Answer {
    pub fields: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub reset: Option<u32>,
}

impl Answer {
    pub fn status(&self) -> &str {
        self.field(":status").unwrap_or("")
    }
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Takes in `f`, a frame of its stream: fields, body bytes (their
    /// window credit given back by the frames it writes into `out`), a
    /// reset. Returns whether the stream ended.
    pub fn take(&mut self, f: Frame, out: &mut Vec<u8>) -> bool {
        let ends = f.flags & flag::END_STREAM != 0 && matches!(f.kind, kind::HEADERS | kind::DATA);
        match f.kind {
            kind::HEADERS => self.fields.extend(f.fields),
            kind::DATA => {
                self.body.extend_from_slice(&f.payload);
                if !f.payload.is_empty() {
                    frame::write_window_update(out, 0, f.payload.len() as u32);
                    frame::write_window_update(out, f.stream, f.payload.len() as u32);
                }
            }
            kind::RST_STREAM => {
                self.reset = Some(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
                return true;
            }
            _ => {}
        }
        ends
    }
}

/// What [`H2::frame_or_quiet`] read.
#[derive(Debug)]
pub enum Next {
    Frame(Frame),
    /// Nothing within the socket's read timeout.
    Quiet,
    /// The server closed (or reset) the connection.
    Closed,
}

/// A raw HTTP/2 client.
pub struct H2 {
    pub sock: TcpStream,
    pub buf: Vec<u8>,
    pub decoder: hpack::Decoder,
    pub next: u32,
}

impl H2 {
    /// Connects with prior knowledge; `settings` go in the client's first
    /// SETTINGS frame (and its connection window opens by `window`).
    pub fn connect(addr: SocketAddr, settings: &[(u16, u32)], window: u32) -> H2 {
        let mut c = H2::raw(addr);
        let mut out = PREFACE.to_vec();
        frame::write_settings(&mut out, settings);
        if window > 0 {
            frame::write_window_update(&mut out, 0, window);
        }
        c.send(&out);
        c
    }

    /// A connection that has sent nothing yet.
    pub fn raw(addr: SocketAddr) -> H2 {
        let sock = TcpStream::connect(addr).expect("connect");
        sock.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        H2 {
            sock,
            buf: Vec::new(),
            decoder: hpack::Decoder::new(4096),
            next: 1,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).expect("send");
    }

    /// The next frame, or `None` when the server closed.
    pub fn frame(&mut self) -> Option<Frame> {
        loop {
            if let Some(f) = self.buffered_frame() {
                return Some(f);
            }
            let mut chunk = [0u8; 65536];
            match self.sock.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The next frame, as [`H2::frame`], telling a read that timed out
    /// (the connection open, nothing sent meanwhile) from the end.
    pub fn frame_or_quiet(&mut self) -> Next {
        loop {
            if let Some(f) = self.buffered_frame() {
                return Next::Frame(f);
            }
            let mut chunk = [0u8; 65536];
            match self.sock.read(&mut chunk) {
                Ok(0) => return Next::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Next::Quiet
                }
                Err(_) => return Next::Closed,
            }
        }
    }

    /// The next frame if the bytes read so far hold it whole (nothing is
    /// read from the socket).
    pub fn buffered_frame(&mut self) -> Option<Frame> {
        let h = Head::read(self.buf.get(..HEAD_LEN)?.try_into().unwrap());
        let end = HEAD_LEN + h.len as usize;
        let payload = self.buf.get(HEAD_LEN..end)?.to_vec();
        self.buf.drain(..end);
        let mut fields = Vec::new();
        if h.kind == kind::HEADERS {
            self.decoder
                .decode(&payload, 1 << 20, &mut |n, v| {
                    fields.push((
                        String::from_utf8_lossy(n).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    ))
                })
                .expect("HPACK");
        }
        Some(Frame {
            kind: h.kind,
            flags: h.flags,
            stream: h.stream,
            payload,
            fields,
        })
    }

    /// A request block: method, path, and extra fields.
    pub fn block(method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        hpack::encode_field(b":method", method.as_bytes(), &mut b);
        hpack::encode_field(b":scheme", b"http", &mut b);
        hpack::encode_field(b":path", path.as_bytes(), &mut b);
        hpack::encode_field(b":authority", b"localhost", &mut b);
        for (n, v) in extra {
            hpack::encode_field(n.as_bytes(), v.as_bytes(), &mut b);
        }
        b
    }

    /// Sends a request without a body; returns its stream.
    pub fn get(&mut self, path: &str, extra: &[(&str, &str)]) -> u32 {
        self.request("GET", path, extra, None)
    }

    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> u32 {
        let id = self.next;
        self.next += 2;
        let block = H2::block(method, path, extra);
        let mut out = Vec::new();
        frame::write_headers(&mut out, id, &block, body.is_none(), 16_384);
        if let Some(body) = body {
            for (i, chunk) in body.chunks(16_384).enumerate() {
                let last = (i + 1) * 16_384 >= body.len();
                out.extend_from_slice(&frame::data_head(id, chunk.len(), last));
                out.extend_from_slice(chunk);
            }
            if body.is_empty() {
                out.extend_from_slice(&frame::data_head(id, 0, true));
            }
        }
        self.send(&out);
        id
    }

    /// Reads until every stream of `ids` has ended; answers in that order.
    /// Window credit is given back as data arrives.
    pub fn answers(&mut self, ids: &[u32]) -> Vec<Answer> {
        let mut answers: Vec<(u32, Answer, bool)> = ids
            .iter()
            .map(|&id| (id, Answer::default(), false))
            .collect();
        while answers.iter().any(|a| !a.2) {
            let f = self
                .frame()
                .unwrap_or_else(|| panic!("closed before the answers: {answers:?}"));
            let Some(a) = answers.iter_mut().find(|a| a.0 == f.stream) else {
                continue;
            };
            let mut out = Vec::new();
            a.2 |= a.1.take(f, &mut out);
            if !out.is_empty() {
                self.send(&out);
            }
        }
        answers.into_iter().map(|a| a.1).collect()
    }

    /// GETs `path` and reads its answer's head, giving no window credit
    /// back: its client is one that stopped reading (the stream's window,
    /// 65,535 bytes unless said otherwise, spent). `meanwhile` runs then;
    /// the credit withheld is given and the rest of the answer read.
    pub fn slow_get(&mut self, path: &str, meanwhile: impl FnOnce()) -> Answer {
        let id = self.get(path, &[]);
        let (mut answer, mut credit) = (Answer::default(), Vec::new());
        while answer.status().is_empty() {
            let f = self.frame().expect("the answer's head");
            if f.stream == id {
                answer.take(f, &mut credit);
            }
        }
        meanwhile();
        self.send(&credit);
        let mut ended = false;
        while !ended {
            let f = self.frame().expect("the rest of the answer");
            if f.stream == id {
                let mut out = Vec::new();
                ended = answer.take(f, &mut out);
                self.send(&out);
            }
        }
        answer
    }

    /// Reads frames until a HEADERS frame: its stream.
    pub fn first_headers(&mut self) -> u32 {
        loop {
            let f = self.frame().expect("frames");
            if f.kind == kind::HEADERS {
                return f.stream;
            }
        }
    }

    /// Reads frames until a GOAWAY (its error code) or the end.
    pub fn goaway(&mut self) -> Option<u32> {
        while let Some(f) = self.frame() {
            if f.kind == kind::GOAWAY {
                return Some(u32::from_be_bytes(f.payload[4..8].try_into().unwrap()));
            }
        }
        None
    }
}

/// A client that sends request bodies within the server's windows, as
/// a real one does (`H2::request` sends them whole): it takes in the
/// server's SETTINGS and WINDOW_UPDATEs, and gives credit back for the
/// answers' bytes.
pub struct Uploader {
    pub c: H2,
    /// What the connection, and each stream, may still send.
    conn: i64,
    initial: i64,
    streams: Vec<(u32, i64)>,
    /// Each stream's answer so far, and whether it ended.
    answers: Vec<(u32, Answer, bool)>,
}

impl Uploader {
    pub fn connect(addr: SocketAddr) -> Uploader {
        Uploader {
            c: H2::connect(addr, &[], 0),
            conn: 65_535,
            initial: 65_535,
            streams: Vec::new(),
            answers: Vec::new(),
        }
    }

    /// Reads and takes in one frame; false if none came in IO_TIMEOUT
    /// (or the connection closed).
    pub fn take_frame(&mut self) -> bool {
        let Some(f) = self.c.frame() else {
            return false;
        };
        let mut out = Vec::new();
        match f.kind {
            kind::SETTINGS if f.flags & flag::ACK == 0 => {
                for (k, v) in frame::settings(&f.payload) {
                    if k == setting::INITIAL_WINDOW_SIZE {
                        let delta = i64::from(v) - self.initial;
                        self.initial = i64::from(v);
                        self.streams.iter_mut().for_each(|s| s.1 += delta);
                    }
                }
                frame::write_settings_ack(&mut out);
            }
            kind::WINDOW_UPDATE => {
                let n = u32::from_be_bytes(f.payload[..4].try_into().unwrap()) & 0x7fff_ffff;
                match self.streams.iter_mut().find(|s| s.0 == f.stream) {
                    _ if f.stream == 0 => self.conn += i64::from(n),
                    Some(s) => s.1 += i64::from(n),
                    None => {}
                }
            }
            kind::GOAWAY => panic!("GOAWAY: {:?}", f.payload),
            _ => {}
        }
        if let Some(a) = self.answers.iter_mut().find(|a| a.0 == f.stream) {
            a.2 |= a.1.take(f, &mut out);
        }
        if !out.is_empty() {
            self.c.send(&out);
        }
        true
    }

    /// POSTs `body` to `path` within the windows, with its length if
    /// `sized`; `blocked` is called the first time the stream's window
    /// stops it. Panics if the upload stalls (no window, and nothing
    /// comes). The answer, once it and the upload are over (or the
    /// server reset the stream).
    pub fn post(&mut self, path: &str, body: &[u8], sized: bool, blocked: impl FnOnce()) -> Answer {
        let id = self.c.next;
        self.c.next += 2;
        let len = body.len().to_string();
        let fields: &[(&str, &str)] = match sized {
            true => &[("content-length", &len)],
            false => &[],
        };
        let block = H2::block("POST", path, fields);
        let mut out = Vec::new();
        frame::write_headers(&mut out, id, &block, false, 16_384);
        self.c.send(&out);
        self.streams.push((id, self.initial));
        self.answers.push((id, Default::default(), false));
        let (mut sent, mut blocked) = (0, Some(blocked));
        let reset = |u: &Uploader| u.answers.iter().any(|a| a.0 == id && a.1.reset.is_some());
        while sent < body.len() && !reset(self) {
            let window = self.streams.iter().find(|s| s.0 == id).unwrap().1;
            let n = window.min(self.conn).clamp(0, 16_384) as usize;
            let n = n.min(body.len() - sent);
            if n > 0 {
                let last = sent + n == body.len();
                let mut out = frame::data_head(id, n, last).to_vec();
                out.extend_from_slice(&body[sent..sent + n]);
                self.c.send(&out);
                sent += n;
                self.conn -= n as i64;
                self.streams.iter_mut().find(|s| s.0 == id).unwrap().1 -= n as i64;
                continue;
            }
            if window <= 0 {
                if let Some(blocked) = blocked.take() {
                    blocked();
                }
            }
            assert!(
                self.take_frame(),
                "{path}: the upload stalled after {sent} of {} bytes (windows: connection {}, stream {window})",
                body.len(),
                self.conn
            );
        }
        while !self.answers.iter().any(|a| a.0 == id && a.2) {
            assert!(self.take_frame(), "{path}: no answer");
        }
        let i = self.answers.iter().position(|a| a.0 == id).unwrap();
        self.streams.retain(|s| s.0 != id);
        self.answers.swap_remove(i).1
    }
}
