//! A FastCGI application's answer as a producer ([`Produce`] and
//! [`Input`]): one non-blocking socket (TCP or unix) per request, watched
//! for reading and writing at once ([`Want::Both`]), as the reverse
//! proxy's [`ProxyBody`](crate::handlers::proxy::body::ProxyBody) is.
//! BEGIN_REQUEST and the PARAMS go first, then the request body as STDIN
//! records as the engine feeds it (or from a body held whole), then the
//! empty STDIN record. The answer's STDOUT is a CGI head
//! ([`parse_head`]: `Status:`, `Location`, fields), then the body as it
//! comes; STDERR lines go to the error log (warn); END_REQUEST ends it.
//! With `FCGI_KEEP_CONN` (a pool to go back to), a connection whose
//! request ended cleanly goes back to the pool when the answer is
//! dropped.
//!
//! Among several servers of a rule ([`Tries`]): one that cannot be
//! reached before it took a byte (refused, or no connection within
//! `connect_timeout`) counts as failed, and the request goes on a new
//! connection to the next one up that it has not tried, whatever its
//! method (nothing of it went); one silent for `read_timeout` before its
//! answer's head counts as failed too (504). Failures mark a server down
//! for `fail_timeout` ([`crate::handlers::proxy::balance`]).

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::record::{self, Decoder, Event, MAX_CONTENT, STDIN};
use crate::config::{Level, Tried};
use crate::handlers::cgi::{parse_head_in, reply_head, CgiReply};
use crate::handlers::produce::{Cx, Gave, Input, InputEnd, Produce, Want, Wrote};
use crate::handlers::proxy::balance::Tries;
use crate::handlers::proxy::dial;
use crate::handlers::proxy::link::Link;
use crate::handlers::proxy::pool::{give_back_to, pool_of, spare_buffer, Keep};
use crate::handlers::relay::{refill, Answered, Outbox, OutboxError, Socket, Waiting};
use crate::handlers::spool::{ReadAhead, Spool};
use crate::http::Status;
use crate::log::Logger;
use crate::sys::boxes::Empty;
use crate::sys::net::{read_into_spare, send};

/// The request id brisk uses: one request per connection at a time.
pub const ID: u16 = 1;

/// What one read of the socket asks for at most, and about the most
/// answer bytes given at once.
const PIECE: usize = 64 * 1024;

/// How the request body goes to the application.
#[derive(Debug)]
pub enum BodyIn {
    /// There is none: STDIN ends at once.
    None,
    /// As the client sends it (its length is known: `CONTENT_LENGTH`).
    Stream,
    /// Held whole before (a chunked body, counted first).
    Held(Spool),
}

/// What a [`FastcgiBody`] is started with besides its socket.
#[derive(Debug, Clone)]
pub struct Options {
    /// Names it in log lines (`fastcgi /srv/www/a.php`).
    pub label: String,
    /// `connect_timeout`: until the application took the first byte.
    pub connect_timeout: Duration,
    /// `read_timeout`: the longest silence of the application after that.
    pub read_timeout: Duration,
    /// `send_timeout`: the longest wait to write the request to it.
    pub send_timeout: Duration,
    /// The longest CGI head accepted (`limits.cgi_header_bytes`).
    pub max_head: usize,
    /// Where the connection goes once the request ended cleanly (none:
    /// it closes, and the application is not asked to keep it).
    pub keep: Option<Keep>,
    /// `buffer_answer`: the most of the answer read ahead of a slow
    /// client and held for it (0: none, it is read as the client takes
    /// it), in memory then in an unnamed file in `temp_dir`.
    pub hold: u64,
    /// The configuration whose `temp_dir` holds it (none when `hold` is
    /// 0).
    pub temp: Option<std::sync::Arc<crate::config::Config>>,
}

/// A FastCGI application's answer to one request (see the module
/// documentation).
#[derive(Debug)]
pub struct FastcgiBody {
    sock: Socket,
    /// The server it holds among its rule's, and those it tried (none:
    /// the one socket it is given, never another).
    tries: Option<Tries>,
    /// Where the connection is in the addresses of the server in use (a
    /// name's).
    tried: Tried,
    /// What to log next, at what level (attempts that failed and went
    /// on).
    notes: Vec<(Level, String)>,
    /// The request's PARAMS records, kept to go again on a new
    /// connection should its kept one turn out closed before any byte of
    /// the answer (an idempotent request without a body; see
    /// [`FastcgiBody::may_go_again`]).
    again: Option<Vec<u8>>,
    /// The application took or sent a byte: the connection is up.
    connected: bool,
    /// The records on their way: BEGIN_REQUEST, PARAMS, then STDIN.
    outbox: Outbox,
    /// More request body may come from the client.
    body_open: bool,
    /// A body held whole, framed as it drains.
    held: Option<Spool>,
    /// The body was held whole.
    held_body: bool,
    /// STDIN records of a piece (a record header is made here).
    frame: Vec<u8>,
    /// Why the application could not be written to before it took a
    /// byte: the answer is a 502.
    unreachable: Option<String>,
    decoder: Decoder,
    /// What the last read brought, decoded from `at` on.
    inbuf: Vec<u8>,
    at: usize,
    /// STDOUT until the CGI head is complete.
    head_buf: Vec<u8>,
    /// The head was given.
    started: bool,
    /// Body bytes that came with the head, given next.
    pending: Vec<u8>,
    /// The STDERR line being gathered.
    stderr_line: Vec<u8>,
    /// The answer read ahead of a slow client (see
    /// [`Produce::hold_ahead`]), given before anything else; then
    /// `pending`, then how it ended.
    ahead: ReadAhead,
    /// The answer ended (END_REQUEST), or was given up.
    finished: bool,
    /// Stopped: what is left of a STDERR line is logged at the next tend.
    stopped: bool,
    opts: Options,
    /// For the access log: the server (`unix:/run/php.sock`), and once
    /// its head came, its status and after how long.
    answered: Answered,
}

/// The records a request starts with, in one buffer: BEGIN_REQUEST
/// (`keep`: with `FCGI_KEEP_CONN`), its PARAMS records `params` (their
/// end included) and, when it is `whole` (no body comes), the empty STDIN
/// record that ends it.
/// `out`: an empty buffer to write them in.
fn request_records(mut out: Vec<u8>, params: &[u8], keep: bool, whole: bool) -> Vec<u8> {
    out.reserve(3 * record::HEADER + params.len());
    record::begin_request(&mut out, ID, keep);
    out.extend_from_slice(params);
    if whole {
        record::stdin_end(&mut out, ID);
    }
    out
}

/// Appends `data` to `outbox` as STDIN records (unpadded: padding is
/// optional, spec §3.3), the data counted as the client's when `client`.
fn push_stdin(outbox: &mut Outbox, frame: &mut Vec<u8>, data: &[u8], client: bool) {
    for piece in data.chunks(MAX_CONTENT) {
        frame.clear();
        // (At most MAX_CONTENT bytes: a u16.)
        record::header(frame, STDIN, ID, piece.len() as u16, 0);
        outbox.push(frame, false);
        outbox.push(piece, client);
    }
}

/// What php-fpm puts between two PHP messages on the error stream (in
/// one record, or at the start of the next one).
const PHP_NEXT: &[u8] = b"; PHP message: ";

/// Gathers `data` of the error stream of the application `label` names
/// into `line`, logging each line as it ends: at a newline, or where
/// php-fpm begins its next message (each is a line of the log, none
/// lost however many a request has). Of a longer line, the first
/// [`STDERR_LINE`] bytes are kept.
fn gather_stderr(label: &str, line: &mut Vec<u8>, data: &[u8], log: &mut Logger) {
    for &b in data {
        if b == b'\n' {
            log_stderr(label, line, log);
        } else {
            line.push(b);
            if line.ends_with(PHP_NEXT) {
                line.truncate(line.len() - PHP_NEXT.len());
                log_stderr(label, line, log);
                line.extend_from_slice(&PHP_NEXT[2..]);
            } else if line.len() > STDERR_LINE + PHP_NEXT.len() {
                // (Past what is kept, only the end that may begin
                // php-fpm's next message.)
                line.remove(STDERR_LINE);
            }
        }
    }
}

/// The longest line of an application's error stream logged.
const STDERR_LINE: usize = 4096;

/// Logs a STDERR `line` of the application `label` names (warn), if any,
/// and empties it.
fn log_stderr(label: &str, line: &mut Vec<u8>, log: &mut Logger) {
    if !line.is_empty() {
        line.truncate(STDERR_LINE);
        let text = String::from_utf8_lossy(line);
        log.log(Level::Warn, format_args!("{label}: {text}"));
        line.clear();
    }
}

impl FastcgiBody {
    /// The answer to the request whose `params` (PARAMS records, their
    /// end included) go on `sock`, a socket connected, or connecting, to
    /// the application, non-blocking; `kept`: a kept connection, up
    /// already.
    pub fn new(sock: OwnedFd, kept: bool, params: &[u8], body: BodyIn, opts: Options) -> Self {
        *FastcgiBody::new_in(Box::new_uninit(), sock, kept, params, body, opts)
    }

    /// As [`FastcgiBody::new`], made in `empty` (the box of an answer
    /// before, from the worker's pool: see `Drop`), where it is written
    /// at once rather than made on the stack and copied there.
    pub fn new_in(
        empty: Empty<FastcgiBody>,
        sock: OwnedFd,
        kept: bool,
        params: &[u8],
        body: BodyIn,
        opts: Options,
    ) -> Box<Self> {
        let (body_open, held) = match body {
            BodyIn::None => (false, None),
            BodyIn::Stream => (true, None),
            BodyIn::Held(spool) => (false, Some(spool)),
        };
        let held_body = held.is_some();
        let whole = !body_open && !held_body;
        let keep = opts.keep.is_some();
        // (In buffers an answer before gave back to the pool, if any:
        // see `Drop`.)
        let spare = || spare_buffer(&opts.keep);
        let records = request_records(spare(), params, keep, whole);
        let mut outbox = Outbox::starting_with(records);
        let head_buf = spare();
        outbox.body_end = whole;
        // (Not read before the engine says it is readable: see
        // `Socket::new`.)
        Box::write(
            empty,
            FastcgiBody {
                sock: Socket::new(Some(sock)),
                tries: None,
                tried: Tried::default(),
                notes: Vec::new(),
                again: None,
                connected: kept,
                outbox,
                body_open,
                held,
                held_body,
                frame: Vec::new(),
                unreachable: None,
                decoder: Decoder::new(ID),
                inbuf: Vec::new(),
                at: 0,
                head_buf,
                started: false,
                pending: Vec::new(),
                stderr_line: Vec::new(),
                ahead: ReadAhead::new(opts.hold, opts.temp.as_deref()),
                finished: false,
                stopped: false,
                opts,
                answered: Answered::new(),
            },
        )
    }

    /// On a kept connection still watched under the token `watched`, if
    /// it is (see [`Produce::watch_slot`]).
    pub fn watched(&mut self, watched: Option<usize>) {
        self.sock.watched = watched;
    }

    /// On a kept connection, for a request that may go again (an
    /// idempotent one without a body) whose PARAMS records are `params`:
    /// should the connection turn out closed by the application before
    /// any byte of the answer (it rested in the pool unchecked), the
    /// request goes again, once, on a new connection to the same server.
    pub fn may_go_again(&mut self, params: Vec<u8>) {
        self.again = Some(params);
    }

    /// The kept connection failed or was closed (`why`) before any byte
    /// of the answer: whether the request goes again on a new one (see
    /// [`FastcgiBody::may_go_again`]).
    fn go_again(&mut self, why: &str) -> bool {
        let Some(params) = self.again.take() else {
            return false;
        };
        let Some(to) = self.tries.as_ref().map(Tries::to) else {
            return false;
        };
        self.tried = to.tried();
        let Ok(sock) = dial::connect(&to, self.tried) else {
            return false;
        };
        self.sock.replace(sock);
        (self.connected, self.unreachable) = (false, None);
        self.outbox.clear();
        let records = request_records(Vec::new(), &params, self.opts.keep.is_some(), true);
        self.outbox.push(&records, false);
        self.outbox.body_end = true;
        // (A warning, not an error: the client gets its answer, and
        // php-fpm ends its processes after `pm.max_requests` by design.)
        self.notes.push((
            Level::Warn,
            format!(
                "{}: {}: {why}; sent again on a new connection",
                self.opts.label,
                dial::addr_at(&to, self.tried)
            ),
        ));
        true
    }

    /// Sent to the server `tries` holds, `to` at its address `tried`
    /// (the access log names it), and when it cannot be reached, to its
    /// next address, then to the next server up.
    pub fn with_tries(&mut self, tries: Tries, to: &crate::config::Upstream, tried: Tried) {
        self.answered.to(dial::addr_at(to, tried));
        self.tries = Some(tries);
        self.tried = tried;
    }

    /// Why the server could not be reached (`e`), named as the lines of
    /// the servers tried before it are (see [`FastcgiBody::try_again`]).
    fn cannot_connect(&self, e: &io::Error) -> String {
        match self.answered.addr() {
            Some(addr) => format!("{addr}: cannot connect: {e}"),
            None => format!("cannot connect: {e}"),
        }
    }

    /// The server could not be reached before it took a byte (`why`):
    /// whether the request goes on a new connection to the next one up
    /// that it has not tried (see the module documentation). What failed
    /// is noted for the log.
    fn try_again(&mut self, why: &str) -> bool {
        let Some(tries) = self.tries.as_mut().filter(|_| !self.connected) else {
            return false;
        };
        // First the next address of the same server's name, if any (as a
        // reverse proxy request goes: see `ProxyBody::next_address`).
        let to = tries.to();
        while let Some(addr) = to.next_address(&mut self.tried) {
            if let Ok(sock) = dial::connect_tcp(addr) {
                self.sock.replace(sock);
                self.unreachable = None;
                self.answered.to(dial::Addr::Tcp(addr));
                return true;
            }
        }
        let now = Instant::now();
        let mut why = why.to_string();
        while let Some(to) = tries.next(now) {
            let was = self.answered.addr().map(|a| a.to_string());
            self.tried = to.tried();
            self.answered.to(dial::addr_at(&to, self.tried));
            self.notes.push((
                Level::Error,
                format!(
                    "{}: {}: {why}; sent to {}",
                    self.opts.label,
                    was.unwrap_or_default(),
                    dial::addr_at(&to, self.tried)
                ),
            ));
            match dial::connect(&to, self.tried) {
                Ok(sock) => {
                    self.sock.replace(sock);
                    self.unreachable = None;
                    if let Some(keep) = self.opts.keep.as_mut() {
                        keep.to = to;
                    }
                    // (Nothing went: the records wait whole in the outbox.)
                    return true;
                }
                Err(e) => why = format!("cannot connect: {e}"),
            }
        }
        false
    }

    /// Leaves the socket for the engine to take out of its watch and
    /// close; nothing more is written.
    fn retire(&mut self) {
        self.sock.retire();
        self.body_open = false;
        self.held = None;
        self.outbox.clear();
    }

    /// The application failed (`why`): a 502 before the head, the answer
    /// cut short after it.
    fn broken(&mut self, why: String) -> Gave {
        self.retire();
        self.finished = true;
        if self.started {
            Gave::Cut(why)
        } else {
            Gave::Fail(Status::BAD_GATEWAY, why)
        }
    }

    /// STDOUT so far in `head_buf`: the head if complete, none if more is
    /// needed, or its failure.
    fn read_head(&mut self, ended: bool) -> Option<Gave> {
        let spare = || spare_buffer(&self.opts.keep);
        let head = match parse_head_in(&self.head_buf, self.opts.max_head, ended, spare) {
            Ok(None) => return None,
            Err(why) => return Some(self.broken(format!("invalid answer: {why}"))),
            Ok(Some(head)) => head,
        };
        if let CgiReply::LocalRedirect(target) = head.kind {
            self.retire();
            self.finished = true;
            return Some(Gave::Redirect(target));
        }
        self.started = true;
        // (The body's first bytes, in the head's buffer.)
        self.head_buf.drain(..head.head_len);
        self.pending = std::mem::take(&mut self.head_buf);
        let head = reply_head(head);
        self.answered.head(head.status);
        if let Some(tries) = &self.tries {
            tries.answered();
        }
        Some(Gave::Head(head, None))
    }

    /// END_REQUEST: the answer is complete (`buf` holds its last bytes,
    /// if any); the connection goes back to the pool when the request
    /// went whole and nothing followed the end.
    fn ended(&mut self, buf: &[u8], after: bool) -> Gave {
        // (A head that waited for the end, which it was all of: a Status
        // with no body. It goes now, the end at the next call.)
        let head = match self.started {
            true => None,
            false => match self.read_head(true) {
                Some(head @ Gave::Head(..)) => Some(head),
                Some(other) => return other,
                None => {
                    let why = "the application ended the request without a complete head";
                    return self.broken(why.into());
                }
            },
        };
        self.finished = true;
        // (Back to the pool at once, free for another request while the
        // client takes what was read.)
        match (&self.opts.keep, self.outbox.done() && !after) {
            (Some(keep), true) => keep.keep(&mut self.sock, Link::Plain),
            _ => self.retire(),
        }
        if let Some(head) = head {
            return head;
        }
        if buf.is_empty() {
            Gave::End
        } else {
            Gave::Last
        }
    }

    /// Decodes what the last read brought, answer bytes into `buf`, until
    /// something to give other than bytes (a head, the end, a failure),
    /// or `buf` holds a piece.
    fn decode(&mut self, buf: &mut Vec<u8>, log: &mut Logger) -> Option<Gave> {
        let input = std::mem::take(&mut self.inbuf);
        let mut gave = None;
        while self.at < input.len() && buf.len() < PIECE {
            let event = match self.decoder.decode(&input[self.at..]) {
                Ok((n, event)) => {
                    self.at += n;
                    event
                }
                Err(e) => {
                    gave = Some(self.broken(e.to_string()));
                    break;
                }
            };
            match event {
                None => {}
                Some(Event::Stdout(data)) if self.started => buf.extend_from_slice(data),
                Some(Event::Stdout(data)) => {
                    self.head_buf.extend_from_slice(data);
                    gave = self.read_head(false);
                    if gave.is_some() {
                        break;
                    }
                }
                Some(Event::Stderr(data)) => {
                    let label = &self.opts.label;
                    gather_stderr(label, &mut self.stderr_line, data, log);
                }
                Some(Event::End { .. }) => {
                    log_stderr(&self.opts.label, &mut self.stderr_line, log);
                    gave = Some(self.ended(buf, self.at < input.len()));
                    break;
                }
            }
        }
        self.inbuf = input;
        gave
    }

    /// The application closed the connection (or it failed with `e`)
    /// before END_REQUEST.
    fn closed(&mut self, e: Option<io::Error>) -> Gave {
        if let Some(why) = self.unreachable.take() {
            return self.broken(why);
        }
        let why = match (e, self.started || !self.head_buf.is_empty()) {
            (Some(e), _) if !self.connected => self.cannot_connect(&e),
            (Some(e), _) => format!("the connection to the application failed: {e}"),
            (None, false) => "the application closed the connection without answering".into(),
            (None, true) => "the application closed the connection before END_REQUEST".into(),
        };
        self.broken(why)
    }
}

impl Produce for FastcgiBody {
    fn label(&self) -> &str {
        &self.opts.label
    }

    fn head_written(&mut self, headers: Vec<u8>) {
        give_back_to(&self.opts.keep, headers);
    }

    fn recycle(self: Box<Self>) {
        let pool = pool_of(&self.opts.keep);
        crate::handlers::proxy::pool::recycle(self, pool.as_ref());
    }

    fn upstream(&self) -> Option<crate::log::Upstream<'_>> {
        // (Asked at the answer's end, or once it was given up.)
        self.answered
            .upstream(self.finished || self.sock.get().is_none())
    }

    fn idle_timeout(&self, _handler: Duration) -> Duration {
        let o = &self.opts;
        Waiting::now(self.connected, &self.outbox).pick([
            o.connect_timeout,
            o.send_timeout,
            o.read_timeout,
        ])
    }

    fn timeout_why(&self) -> &'static str {
        Waiting::now(self.connected, &self.outbox).pick([
            "no connection to the application within connect_timeout; given up",
            "the application took nothing of the request for send_timeout; given up",
            "the application was silent for read_timeout; given up",
        ])
    }

    fn timed_out(&mut self) -> Option<Status> {
        if self.started {
            return Some(Status::GATEWAY_TIMEOUT);
        }
        if !self.connected {
            // Not reached: the next server, if there is one up.
            return match self.try_again("no connection within connect_timeout") {
                true => None,
                false => Some(Status::BAD_GATEWAY),
            };
        }
        // Silent for read_timeout before its answer: a failure.
        if let (Some(tries), true) = (&self.tries, self.outbox.is_empty()) {
            tries.failed(Instant::now());
        }
        Some(Status::GATEWAY_TIMEOUT)
    }

    fn next(&mut self, _room: usize, buf: &mut Vec<u8>, cx: &mut Cx<'_>) -> Gave {
        // What was read ahead of the client goes first (then what came
        // with the head or could not be held, then its end).
        buf.clear();
        if self.ahead.held() > 0 {
            return match self.ahead.take(buf, PIECE) {
                Ok(_) => Gave::Bytes,
                Err(e) => {
                    self.ahead.after = None;
                    self.broken(format!(
                        "the answer held in temp_dir cannot be read back: {e}"
                    ))
                }
            };
        }
        if let Some(after) = self.ahead.after.take() {
            if self.pending.is_empty() {
                return *after;
            }
            self.ahead.after = Some(after);
        } else if self.finished {
            return Gave::End;
        }
        // (What came with the head, copied into the buffer lent, which
        // stays the worker's: a swap would leave it this small one to
        // grow again, and take its own along to be dropped.)
        buf.extend_from_slice(&self.pending);
        self.pending.clear();
        self.ahead.gave(buf.len());
        if self.ahead.after.is_some() {
            return Gave::Bytes;
        }
        if let (false, Some(why)) = (self.started, self.unreachable.take()) {
            return self.broken(why);
        }
        loop {
            if let Some(gave) = self.decode(buf, cx.log) {
                return gave;
            }
            if !buf.is_empty() {
                self.ahead.gave(buf.len());
                return Gave::Bytes;
            }
            if !self.sock.readable {
                return Gave::Pending;
            }
            // (Everything read before is decoded.)
            self.empty_inbuf();
            let Some(fd) = self.sock.get() else {
                return Gave::Pending;
            };
            match read_into_spare(fd, &mut self.inbuf) {
                Ok(0) if self.try_again("closed without answering") => {}
                Ok(0) if self.go_again("a kept connection was closed by the application") => {}
                Ok(0) => return self.closed(None),
                Ok(_) => {
                    self.connected = true;
                    // (Not needed any more: back to the pool, for the
                    // next request's.)
                    give_back_to(&self.opts.keep, self.again.take().unwrap_or_default());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.sock.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if self.try_again(&format!("cannot connect: {e}")) => {}
                Err(e) if self.go_again(&format!("a kept connection failed: {e}")) => {}
                Err(e) => return self.closed(Some(e)),
            }
        }
    }

    fn stop(&mut self) {
        self.stopped = true;
        // The client is gone: the application is told (spec §5.4) when
        // the records before are whole, then the connection closes.
        if let (false, Some(fd)) = (self.finished, self.sock.get()) {
            if self.connected && self.outbox.is_empty() {
                let mut abort = Vec::with_capacity(record::HEADER);
                record::abort_request(&mut abort, ID);
                let _ = send(fd, &abort, false);
            }
        }
        self.finished = true;
        self.retire();
    }

    fn hold_ahead(&mut self, cx: &mut Cx<'_>, tick: bool) {
        if !self.started || self.finished || !self.sock.readable {
            return;
        }
        let most = self.ahead.most(tick);
        if most == 0 {
            return;
        }
        // (What came with the head goes before.)
        if !self.pending.is_empty() {
            let (temp, label) = (self.opts.temp.as_deref(), &self.opts.label);
            self.ahead.push(&self.pending, temp, label, cx.log);
            self.pending.clear();
        }
        let mut piece = std::mem::take(&mut self.ahead.buf);
        while self.ahead.held() < most {
            piece.clear();
            let gave = self.decode(&mut piece, cx.log);
            if !piece.is_empty() {
                let (temp, label) = (self.opts.temp.as_deref(), &self.opts.label);
                self.ahead.push(&piece, temp, label, cx.log);
            }
            if let Some(gave) = gave {
                // (Its last bytes, if any, are held.)
                self.ahead.after = Some(Box::new(match gave {
                    Gave::Last => Gave::End,
                    gave => gave,
                }));
                break;
            }
            if self.ahead.is_off() {
                break;
            }
            if self.at < self.inbuf.len() {
                continue;
            }
            self.empty_inbuf();
            let Some(fd) = self.sock.get().filter(|_| self.sock.readable) else {
                break;
            };
            match read_into_spare(fd, &mut self.inbuf) {
                Ok(0) => {
                    self.ahead.after = Some(Box::new(self.closed(None)));
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.sock.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.ahead.after = Some(Box::new(self.closed(Some(e))));
                    break;
                }
            }
        }
        self.ahead.buf = piece;
    }

    fn tend(&mut self, cx: &mut Cx<'_>) {
        for (level, note) in self.notes.drain(..) {
            cx.log.log(level, format_args!("{note}"));
        }
        if self.stopped {
            log_stderr(&self.opts.label, &mut self.stderr_line, cx.log);
        }
    }

    fn sources(&self) -> [Option<(RawFd, Want)>; 3] {
        self.sock.sources()
    }

    fn ready(&mut self, i: usize) {
        self.sock.ready(i);
    }

    fn ready_for(&mut self, i: usize, read: bool, write: bool) {
        self.sock.ready_for(i, read, write);
    }

    fn renewed(&mut self) -> Option<(RawFd, Want)> {
        self.sock.renewed()
    }

    fn retired(&mut self) -> Option<OwnedFd> {
        self.sock.retired()
    }

    fn watch_slot(&mut self) -> Option<&mut Option<usize>> {
        Some(&mut self.sock.watched)
    }

    fn awaits_input(&self) -> bool {
        self.body_open && self.outbox.awaits_more()
    }

    fn input(&mut self) -> Option<&mut dyn Input> {
        Some(self)
    }
}

impl FastcgiBody {
    /// Empties the read buffer, with room for a piece: the one the last
    /// answer gave back to the pool, if it may take one (a 64 KiB
    /// allocation and its release cost ~550 instructions a request).
    fn empty_inbuf(&mut self) {
        self.inbuf.clear();
        self.at = 0;
        if let (0, Some(keep)) = (self.inbuf.capacity(), &self.opts.keep) {
            self.inbuf = keep.pool.borrow_mut().read_buffer();
        }
        self.inbuf.reserve(PIECE);
    }
}

impl Drop for FastcgiBody {
    fn drop(&mut self) {
        // (A kept connection went to the pool when its answer ended.)
        // The buffers go back to the pool, for the next answers (the
        // request's records, sent from the outbox's, the answer's head).
        if let Some(keep) = &self.opts.keep {
            let mut pool = keep.pool.borrow_mut();
            pool.give_back(self.outbox.take_buf());
            pool.give_back(std::mem::take(&mut self.head_buf));
            pool.give_back(std::mem::take(&mut self.pending));
            pool.give_back(self.again.take().unwrap_or_default());
            pool.give_back(std::mem::take(&mut self.opts.label).into_bytes());
            pool.give_back_read(std::mem::take(&mut self.inbuf), PIECE);
        }
    }
}

impl Input for FastcgiBody {
    fn room(&self) -> usize {
        match self.body_open {
            true => self.outbox.room(),
            false => usize::MAX,
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if self.body_open && !self.outbox.body_end && !data.is_empty() {
            push_stdin(&mut self.outbox, &mut self.frame, data, true);
        }
    }

    fn write(&mut self) -> Result<Wrote, InputEnd> {
        let Some((fd, writable)) = self.sock.for_writing() else {
            return Ok(Wrote::default());
        };
        let mut wrote = Wrote::default();
        loop {
            if self.outbox.is_empty() && self.held.is_some() {
                self.frame.clear();
                let mut piece = std::mem::take(&mut self.frame);
                let mut framed = Vec::new();
                match refill(&mut self.held, &mut piece) {
                    Ok(true) => push_stdin(&mut self.outbox, &mut framed, &piece, false),
                    Ok(false) => {
                        record::stdin_end(&mut framed, ID);
                        self.outbox.push(&framed, false);
                        self.outbox.body_end = true;
                    }
                    Err(e) => return Err(InputEnd::Unreadable(e.to_string())),
                }
                self.frame = piece;
            }
            match self.outbox.write_to(writable, &mut |b| send(fd, b, false)) {
                Ok(w) => {
                    wrote.moved |= w.moved;
                    wrote.client += w.client;
                    self.connected |= w.moved;
                }
                Err(OutboxError::Held(e)) => return Err(InputEnd::Unreadable(e.to_string())),
                Err(OutboxError::Write(e)) => {
                    let kept_failed = format!("a kept connection failed: {e}");
                    if self.try_again(&format!("cannot connect: {e}"))
                        || self.go_again(&kept_failed)
                    {
                        return Ok(Wrote {
                            moved: true,
                            client: 0,
                        });
                    }
                    if !self.connected {
                        self.unreachable = Some(self.cannot_connect(&e));
                    }
                    // (It may have answered already: its answer is read on.)
                    self.body_open = false;
                    self.held = None;
                    self.outbox.clear();
                    return Err(InputEnd::Refused);
                }
            }
            if !(*writable && self.held.is_some()) {
                break;
            }
        }
        if self.outbox.done() {
            self.body_open = false;
        }
        Ok(wrote)
    }

    fn end(&mut self) {
        if !self.body_open || self.outbox.body_end {
            return;
        }
        self.frame.clear();
        record::stdin_end(&mut self.frame, ID);
        self.outbox.push(&self.frame, false);
        self.outbox.body_end = true;
    }

    fn close(&mut self) {
        // (A request cut short: the application cannot be given the rest.)
        self.body_open = false;
        self.outbox.clear();
    }

    fn is_closed(&self) -> bool {
        !self.body_open
    }

    fn held(&self) -> bool {
        self.held_body
    }
}

#[cfg(test)]
mod tests;
