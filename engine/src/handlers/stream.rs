//! Bodies that an embedded handler does not hand over whole: one
//! produced in pieces on the worker thread as the client takes them
//! ([`BodyStream`]), and an answer given later from another thread
//! ([`Later`]): a handler that waits on a database returns at once,
//! and the thread that has the rows answers through it, waking the
//! worker with its waker as the password-hashing threads do. The event
//! loop never waits for either.
//!
//! The engine writes the head when the answer starts and frames the
//! pieces: by the length the handler gave, else chunked (HTTP/1.1),
//! else by closing the connection (HTTP/1.0). A later answer that makes
//! no progress for `timeouts.handler` is answered 504 (or, once started,
//! cut short), as is one whose [`Later`] is dropped unanswered (500).

use std::fmt;
use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::app::{check_header, InvalidHeader};
use super::pipe::ReplyHead;
use super::produce::{Cx, Gave, Produce};
use crate::config::Level;
use crate::http::Status;

/// A body produced in pieces on the worker thread, while the client
/// takes them: the engine asks for more only when the connection's
/// output has room, so a large body never sits whole in memory.
pub trait BodyStream {
    /// Appends the next piece of the body to `out` (about `room` bytes is
    /// a good size). Returns `Ok(true)` while more follows and
    /// `Ok(false)` once the body is complete; `Err` ends the answer cut
    /// short (the reason goes to the error log), or, from the first call
    /// (made before the head goes, HEAD requests' too), has it answered
    /// 500 instead. A call that appends
    /// nothing and says more follows is taken as an error: the worker
    /// cannot wait for it.
    fn fill(&mut self, out: &mut Vec<u8>, room: usize) -> Result<bool, String>;
}

/// How the engine learns that a later answer has moved: the connection
/// it is for goes into the worker's channel, and the worker's waker wakes
/// its event loop.
#[derive(Clone)]
pub struct Wake {
    /// The worker's channel of connections to look at.
    pub tx: crate::channel::Sender<usize>,
    /// Wakes the worker's event loop.
    pub waker: Arc<mio::Waker>,
    /// The connection the answer is for.
    pub conn: usize,
}

impl Wake {
    /// Has the worker look at the connection. (Fails only once the
    /// worker has exited: then there is nothing to look at.)
    pub fn now(&self) {
        let _ = self.tx.send(self.conn);
        let _ = self.waker.wake();
    }
}

impl fmt::Debug for Wake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wake").field("conn", &self.conn).finish()
    }
}

/// Body bytes a later answer may have in flight (given but not yet taken
/// by the worker) before [`Later::write`] waits for the client.
pub const LATER_CAP: usize = 256 * 1024;

/// What a later answer has given so far, and not yet taken by the worker.
#[derive(Debug, Default)]
pub struct Given {
    /// The head, until the worker writes it.
    pub head: Option<ReplyHead>,
    /// Body bytes.
    pub data: Vec<u8>,
    /// The whole body as a file and its length ([`Later::send_file`]),
    /// sent by the engine as static files are (`sendfile` when large).
    pub file: Option<(File, u64)>,
    /// The body, to be produced on the worker thread as the client
    /// takes it ([`Later::stream`]): given with the head.
    #[cfg(feature = "webdav")]
    pub stream: Option<Handed>,
    /// The answer is complete (`Some(true)`) or abandoned (`Some(false)`:
    /// dropped unanswered, or unfinished).
    pub end: Option<bool>,
    /// The client is gone, or the answer timed out: nothing more is taken.
    pub gone: bool,
    /// Why the answer was given up ([`Later::fail`]): the status for
    /// the client, what the error log says.
    #[cfg(feature = "webdav")]
    pub failure: Option<(Status, String)>,
    /// A line for the error log, at its level, after the answer's
    /// label ([`Later::note`]): why a change was refused.
    #[cfg(feature = "webdav")]
    pub note: Option<(crate::config::Level, String)>,
    /// The worker has been told and has not looked yet.
    notified: bool,
}

/// The meeting point of a later answer's thread and the worker.
#[derive(Debug, Default)]
pub struct Channel {
    given: Mutex<Given>,
    /// Signalled when the worker takes data (or the client goes).
    taken: Condvar,
}

impl Channel {
    /// The worker's side: takes what was given (and lets a waiting
    /// writer go on).
    pub fn take(&self) -> Given {
        let mut g = lock(&self.given);
        let taken = Given {
            head: g.head.take(),
            data: std::mem::take(&mut g.data),
            file: g.file.take(),
            #[cfg(feature = "webdav")]
            stream: g.stream.take(),
            end: g.end,
            gone: g.gone,
            #[cfg(feature = "webdav")]
            failure: g.failure.take(),
            #[cfg(feature = "webdav")]
            note: g.note.take(),
            notified: false,
        };
        g.notified = false;
        drop(g);
        self.taken.notify_all();
        taken
    }

    /// The worker's side: the client is gone (or the answer timed out);
    /// the answering thread learns it from its next call.
    pub fn abandon(&self) {
        lock(&self.given).gone = true;
        self.taken.notify_all();
    }
}

/// A body made on another thread and handed to the worker, which
/// produces it as a [`BodyStream`] of its own ([`Later::stream`]).
#[cfg(feature = "webdav")]
pub struct Handed(pub Box<dyn BodyStream + Send>);

#[cfg(feature = "webdav")]
impl fmt::Debug for Handed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Handed")
    }
}

/// The engine's hold on a later answer's [`Channel`]. However it ends
/// (the answer given on, or dropped unused: a handler that deferred and
/// then panicked, deferred again or answered otherwise), dropping it
/// tells the answering thread that nothing more is taken: its next call
/// is [`LaterError::Gone`], and a [`Later::write`] waiting for room
/// returns, rather than waiting for ever.
#[derive(Debug)]
pub struct Awaited(Arc<Channel>);

impl Awaited {
    /// Holds `channel` for the engine.
    pub(crate) fn new(channel: Arc<Channel>) -> Awaited {
        Awaited(channel)
    }
}

impl std::ops::Deref for Awaited {
    type Target = Channel;

    fn deref(&self) -> &Channel {
        &self.0
    }
}

impl Drop for Awaited {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// A poisoned lock only means a thread panicked while holding it; what
/// it guards is still consistent (plain fields, each set in one step).
fn lock(m: &Mutex<Given>) -> MutexGuard<'_, Given> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a later answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaterError {
    /// The client is gone, the answer took longer than
    /// `timeouts.handler`, or it is not wanted any more (the handler
    /// that deferred it panicked or answered otherwise): nothing more is
    /// sent.
    Gone,
    /// A header line that may not be sent (see
    /// [`crate::handlers::app::Response::header`]).
    Header(InvalidHeader),
    /// Not a final status (200–599).
    Status(u16),
    /// Body bytes before [`Later::start`], a second start, or more body
    /// than the length given to it (none of those bytes is sent).
    Order(&'static str),
    /// The file of [`Later::send_file`] could not be measured.
    File(String),
}

impl fmt::Display for LaterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaterError::Gone => f.write_str("the client is gone or the answer timed out"),
            LaterError::Header(e) => write!(f, "{e}"),
            LaterError::Status(s) => write!(f, "{s} is not a final status (200-599)"),
            LaterError::Order(why) => f.write_str(why),
            LaterError::File(why) => write!(f, "the file to send: {why}"),
        }
    }
}

impl std::error::Error for LaterError {}

/// The answer to a request, to be given later from any thread (see
/// [`crate::handlers::app::Response::defer`]): at once whole with
/// [`Later::answer`], or as a head ([`Later::start`]) and pieces
/// ([`Later::write`], [`Later::finish`]). Dropping it unanswered answers
/// 500 (or cuts short an answer that has started).
#[derive(Debug)]
pub struct Later {
    channel: Arc<Channel>,
    wake: Wake,
    started: bool,
    done: bool,
    /// The worker thread that made it (in the handler): there, nothing
    /// it gives is taken before the handler returns.
    worker: std::thread::ThreadId,
    /// The body's length given to [`Later::start`], if any, and what is
    /// left of it to write.
    left: Option<u64>,
}

impl Later {
    /// A later answer through `channel`, for the connection `wake` names.
    pub(crate) fn new(channel: Arc<Channel>, wake: Wake) -> Later {
        Later {
            channel,
            wake,
            started: false,
            done: false,
            worker: std::thread::current().id(),
            left: None,
        }
    }

    /// Answers whole: `status`, header lines, and `body` (sent with its
    /// `Content-Length`).
    pub fn answer(
        mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(), LaterError> {
        self.start(status, headers, Some(body.len() as u64))?;
        self.write(body)?;
        self.finish()
    }

    /// Answers whole with `file` (from its start to its size now, given
    /// as the `Content-Length`): the worker sends it as it sends static
    /// files, by `sendfile` when large (over HTTP/2 and HTTPS, read into
    /// DATA frames and records), without the bytes passing through this
    /// thread. Set its `Content-Type` in `headers`. A file that shrinks
    /// before it is sent ends the connection short, as a static file does.
    /// [`LaterError::File`] for one that is not a regular file the engine
    /// can read: nothing of it is sent, and the client gets a 500 (the
    /// `Later` is gone with the call).
    pub fn send_file(
        mut self,
        status: u16,
        headers: &[(&str, &str)],
        file: File,
    ) -> Result<(), LaterError> {
        let len = super::app::sendable(&file).map_err(|e| LaterError::File(e.to_string()))?;
        let head = self.head(status, headers, Some(len))?;
        self.started = true;
        self.done = true;
        // Head and file in one step: the worker never sees one without
        // the other.
        self.give(|g| {
            g.head = Some(head);
            g.file = Some((file, len));
            g.end = Some(true);
        })
    }

    /// Starts the answer: `status` and header lines, and the body's
    /// length if known (else it is sent chunked, or to the close of an
    /// HTTP/1.0 connection). `Content-Length`, `Transfer-Encoding`,
    /// `Connection`, `Date` and `Server` are brisk's to write.
    pub fn start(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        length: Option<u64>,
    ) -> Result<(), LaterError> {
        let head = self.head(status, headers, length)?;
        self.give(|g| g.head = Some(head))?;
        self.started = true;
        self.left = length;
        Ok(())
    }

    /// The head [`Later::start`] gives, checked.
    fn head(
        &self,
        status: u16,
        headers: &[(&str, &str)],
        length: Option<u64>,
    ) -> Result<ReplyHead, LaterError> {
        if self.started {
            return Err(LaterError::Order("the answer has started already"));
        }
        if !(200..=599).contains(&status) {
            return Err(LaterError::Status(status));
        }
        let mut lines = Vec::new();
        for (name, value) in headers {
            check_header(name, value).map_err(LaterError::Header)?;
            lines.extend_from_slice(name.as_bytes());
            lines.extend_from_slice(b": ");
            lines.extend_from_slice(value.trim().as_bytes());
            lines.extend_from_slice(b"\r\n");
        }
        Ok(reply_head(status, lines, length))
    }

    /// Answers whole with header lines brisk made itself (`Name: value`
    /// CRLF each, not checked as a handler's are) and `body`, moved in.
    pub(crate) fn answer_lines(
        mut self,
        status: Status,
        lines: Vec<u8>,
        body: Vec<u8>,
    ) -> Result<(), LaterError> {
        let head = reply_head(status.0, lines, Some(body.len() as u64));
        self.started = true;
        self.done = true;
        self.give(|g| {
            g.head = Some(head);
            g.data = body;
            g.end = Some(true);
        })
    }

    /// Answers with `status`, header lines brisk made itself and a body
    /// of unknown length that the worker produces from `body` as the
    /// client takes it (as a local stream: nothing of it waits here).
    #[cfg(feature = "webdav")]
    pub(crate) fn stream(
        mut self,
        status: Status,
        lines: Vec<u8>,
        body: Box<dyn BodyStream + Send>,
    ) -> Result<(), LaterError> {
        let head = reply_head(status.0, lines, None);
        self.started = true;
        self.done = true;
        self.give(|g| {
            g.head = Some(head);
            g.stream = Some(Handed(body));
            g.end = Some(true);
        })
    }

    /// Sends more of the body. Waits while more than [`LATER_CAP`] bytes
    /// given earlier have not been taken yet (the client reads slowly),
    /// so a fast producer cannot fill the server's memory. On the worker
    /// thread (in the handler that deferred it) it never waits: the
    /// worker takes nothing before the handler returns, so it would wait
    /// for ever; the bytes are held as a body written into the response
    /// would be.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), LaterError> {
        if !self.started {
            return Err(LaterError::Order("start the answer before its body"));
        }
        if bytes.is_empty() {
            return Ok(());
        }
        if let Some(left) = self.left.as_mut() {
            // (Nothing of it is taken: the client would never see it.)
            *left = left
                .checked_sub(bytes.len() as u64)
                .ok_or(LaterError::Order("more body than the length given"))?;
        }
        let waits = std::thread::current().id() != self.worker;
        let mut g = lock(&self.channel.given);
        while waits && !g.gone && g.data.len() >= LATER_CAP {
            g = self
                .channel
                .taken
                .wait(g)
                .unwrap_or_else(|e| e.into_inner());
        }
        drop(g);
        self.give(|g| g.data.extend_from_slice(bytes))
    }

    /// Ends the answer.
    pub fn finish(mut self) -> Result<(), LaterError> {
        if !self.started {
            return Err(LaterError::Order("start the answer before finishing it"));
        }
        self.done = true;
        self.give(|g| g.end = Some(true))
    }

    /// Gives the answer up: the client gets `status` (once the head is
    /// out, the answer is cut short) and the error log says `why` after
    /// the answer's label.
    #[cfg(feature = "webdav")]
    pub(crate) fn fail(mut self, status: Status, why: String) -> Result<(), LaterError> {
        self.done = true;
        self.give(|g| {
            g.end = Some(false);
            g.failure = Some((status, why));
        })
    }

    /// Has the error log say `text` at `level` after the answer's
    /// label, as the worker takes the answer given next.
    #[cfg(feature = "webdav")]
    pub(crate) fn note(&self, level: crate::config::Level, text: String) {
        lock(&self.channel.given).note = Some((level, text));
    }

    /// Whether the client is gone (or the answer timed out): work for
    /// it can stop.
    pub fn is_gone(&self) -> bool {
        lock(&self.channel.given).gone
    }

    /// Changes what was given, and tells the worker if it has not been
    /// told since it last looked.
    fn give(&mut self, f: impl FnOnce(&mut Given)) -> Result<(), LaterError> {
        let mut g = lock(&self.channel.given);
        if g.gone {
            return Err(LaterError::Gone);
        }
        f(&mut g);
        let tell = !g.notified;
        g.notified = true;
        drop(g);
        if tell {
            self.wake.now();
        }
        Ok(())
    }
}

impl Drop for Later {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.give(|g| g.end = Some(false));
        }
    }
}

/// A body the engine pumps while the connection waits for it.
pub enum Source {
    /// Produced on the worker thread.
    Local(Box<dyn BodyStream>),
    /// Given later by another thread.
    Later(Awaited),
    /// To be given later by work that the router starts, handing it the
    /// [`Later`] (a listing made off the event loop): the router makes
    /// it a [`Source::Later`] before the answer starts.
    Start(Box<dyn FnOnce(Later) + Send>),
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Local(_) => f.write_str("Local"),
            Source::Later(_) => f.write_str("Later"),
            Source::Start(_) => f.write_str("Start"),
        }
    }
}

/// An embedded handler's streamed or later answer (see the module
/// documentation), as the router hands it to the engine.
#[derive(Debug)]
pub struct Streamed {
    /// Where the body comes from.
    pub source: Source,
    /// The body's length, if the handler gave it (a local stream).
    pub length: Option<u64>,
    /// Names the handler in log lines (`handler at /api/`).
    pub label: String,
    /// A later answer that waits however long its thread takes, with no
    /// `timeouts.handler`: the server's own work (a WebDAV change, a
    /// PUT's end), which a 504 would not stop.
    pub patient: bool,
}

/// What a local stream is asked for at a time.
const PIECE: usize = 64 * 1024;

/// The body of a [`Source::Start`] that no one started: a 500.
struct NotStarted;

impl BodyStream for NotStarted {
    fn fill(&mut self, _: &mut Vec<u8>, _: usize) -> Result<bool, String> {
        Err("the work of a later answer was never started".into())
    }
}

/// The head of an answer: `status`, header `lines`, the body's length if
/// known.
fn reply_head(status: u16, lines: Vec<u8>, length: Option<u64>) -> ReplyHead {
    ReplyHead {
        len: 0,
        status,
        reason: None,
        headers: lines,
        content_length: length,
        chunked: false,
        own: Default::default(),
    }
}

impl Streamed {
    /// The producer that answers with it: `status` and `headers` (the
    /// handler's header lines, and `[[headers]]` rules) make a local
    /// stream's head now; a later answer's head comes from its thread,
    /// and these lines go with it.
    pub fn producer(self, status: Status, headers: &[u8]) -> Box<dyn Produce> {
        match self.source {
            Source::Local(body) => Box::new(LocalBody::new(
                body,
                reply_head(status.0, headers.to_vec(), self.length),
                self.label,
            )),
            Source::Later(channel) => Box::new(LaterBody {
                channel,
                early_headers: headers.to_vec(),
                label: self.label,
                patient: self.patient,
                started: false,
                held: Given::default(),
                #[cfg(feature = "webdav")]
                local: None,
            }),
            // (The router starts it first: see `Router::route`.)
            Source::Start(_) => Box::new(LocalBody::new(
                Box::new(NotStarted),
                reply_head(status.0, Vec::new(), None),
                self.label,
            )),
        }
    }
}

/// A handler's body produced in pieces on the worker thread
/// ([`BodyStream`]), as a producer: its head is known from the start.
struct LocalBody {
    body: Box<dyn BodyStream>,
    /// The head, until it is given.
    head: Option<ReplyHead>,
    /// What the length the handler gave leaves to send, if it gave one.
    left: Option<u64>,
    label: String,
    /// The first piece, made before the head went, and what it was.
    first: Option<(Vec<u8>, Gave)>,
}

impl fmt::Debug for LocalBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBody")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl LocalBody {
    /// Produces `body` after `head` (whose length, if any, it keeps to).
    fn new(body: Box<dyn BodyStream>, head: ReplyHead, label: String) -> LocalBody {
        LocalBody {
            body,
            left: head.content_length,
            head: Some(head),
            label,
            first: None,
        }
    }
}

impl Produce for LocalBody {
    fn label(&self) -> &str {
        &self.label
    }

    fn next(&mut self, _room: usize, buf: &mut Vec<u8>, cx: &mut Cx<'_>) -> Gave {
        if let Some(head) = self.head.take() {
            // The first piece is made before the head goes (unless the
            // status has no body): a body that fails at once is
            // answered 500, not 200 and a cut.
            if matches!(head.status, 100..=199 | 204 | 304) {
                return Gave::Head(head, None);
            }
            return match self.piece(buf, cx) {
                failed @ Gave::Fail(..) => failed,
                gave => {
                    self.first = Some((std::mem::take(buf), gave));
                    Gave::Head(head, None)
                }
            };
        }
        if let Some((piece, gave)) = self.first.take() {
            *buf = piece;
            return gave;
        }
        self.piece(buf, cx)
    }

    fn stops_at_bodiless_head(&self) -> bool {
        true
    }

    fn stop(&mut self) {}
}

impl LocalBody {
    /// The next piece of the body, into `buf`.
    fn piece(&mut self, buf: &mut Vec<u8>, cx: &mut Cx<'_>) -> Gave {
        if self.left == Some(0) {
            // (Its length given: nothing more is sent, whatever follows.)
            return Gave::End;
        }
        buf.clear();
        // A panic in the handler's code is its answer's failure, as one
        // in `Handler::handle` is: not the connection's (over HTTP/2, all
        // its streams) nor the worker's.
        let filled = catch_unwind(AssertUnwindSafe(|| self.body.fill(buf, PIECE)))
            .unwrap_or_else(|_| Err("panicked".into()));
        match filled {
            // (The worker cannot wait for a body on its own thread.)
            Ok(true) if buf.is_empty() => Gave::Fail(
                Status::INTERNAL_SERVER_ERROR,
                "produced nothing but said more follows".into(),
            ),
            Ok(more) => {
                let Some(left) = self.left.as_mut() else {
                    return if more { Gave::Bytes } else { Gave::Last };
                };
                // A body longer than the length it was given is cut there,
                // the same over every protocol (HTTP/1.1 dropped the rest
                // silently, HTTP/2 and HTTP/3 reset the stream), and the
                // error log says so.
                let long = buf.len() as u64 > *left;
                if long {
                    buf.truncate(*left as usize);
                }
                *left -= buf.len() as u64;
                // (More to follow once the length is reached is as long.)
                let over = long || (more && *left == 0);
                if over {
                    cx.log.log(
                        Level::Error,
                        format_args!(
                            "{}: body longer than its Content-Length; cut there",
                            self.label
                        ),
                    );
                }
                match more && !over {
                    true => Gave::Bytes,
                    false => Gave::Last,
                }
            }
            Err(why) => Gave::Fail(Status::INTERNAL_SERVER_ERROR, why),
        }
    }
}

/// A handler's answer given later by another thread ([`Later`]), as a
/// producer: what the thread gave is taken when it woke the worker, and
/// given on in order (head, then body); the header lines set before the
/// answer was deferred go with its head.
#[derive(Debug)]
struct LaterBody {
    /// (Dropped with it: the answering thread learns it is gone.)
    channel: Awaited,
    /// Header lines set before the answer was deferred, and `[[headers]]`
    /// rules.
    early_headers: Vec<u8>,
    label: String,
    /// No idle timeout (see [`Streamed::patient`]).
    patient: bool,
    /// Its head was given.
    started: bool,
    /// Taken from the thread and not given on yet.
    held: Given,
    /// The body the thread handed over to be produced here
    /// ([`Later::stream`]), once its head came.
    #[cfg(feature = "webdav")]
    local: Option<LocalBody>,
}

impl Produce for LaterBody {
    fn label(&self) -> &str {
        &self.label
    }

    fn idle_timeout(&self, handler: std::time::Duration) -> std::time::Duration {
        match self.patient {
            true => std::time::Duration::MAX,
            false => handler,
        }
    }

    fn next(&mut self, room: usize, buf: &mut Vec<u8>, cx: &mut Cx<'_>) -> Gave {
        #[cfg(feature = "webdav")]
        if let Some(local) = &mut self.local {
            return local.next(room, buf, cx);
        }
        let _ = (room, &cx);
        let h = &mut self.held;
        if h.head.is_none() && h.data.is_empty() && h.file.is_none() && h.end.is_none() {
            *h = self.channel.take();
        }
        if h.end == Some(false) {
            #[cfg(feature = "webdav")]
            if let Some((status, why)) = h.failure.take() {
                return Gave::Fail(status, why);
            }
            let why = if self.started || h.head.is_some() {
                "the later answer was dropped unfinished"
            } else {
                "the later answer was dropped without an answer"
            };
            return Gave::Fail(Status::INTERNAL_SERVER_ERROR, why.into());
        }
        #[cfg(feature = "webdav")]
        if let Some((level, text)) = h.note.take() {
            cx.log.log(level, format_args!("{}: {text}", self.label));
        }
        if let Some(mut head) = h.head.take() {
            if !self.early_headers.is_empty() {
                let mut lines = std::mem::take(&mut self.early_headers);
                lines.extend_from_slice(&head.headers);
                head.headers = lines;
            }
            self.started = true;
            #[cfg(feature = "webdav")]
            if let Some(Handed(body)) = h.stream.take() {
                let local = self
                    .local
                    .insert(LocalBody::new(body, head, self.label.clone()));
                return local.next(room, buf, cx);
            }
            // (A file comes with its head: `Later::send_file`.)
            return Gave::Head(head, h.file.take());
        }
        if !self.started || h.file.is_some() {
            // (`Later` gives neither a body before its head nor a file
            // after it.)
            return match h.data.is_empty() && h.file.is_none() {
                true => Gave::Pending,
                false => Gave::Fail(
                    Status::INTERNAL_SERVER_ERROR,
                    "the later answer gave a body out of order".into(),
                ),
            };
        }
        let end = h.end == Some(true);
        if !h.data.is_empty() {
            std::mem::swap(buf, &mut h.data);
            h.data.clear();
            return if end { Gave::Last } else { Gave::Bytes };
        }
        if end {
            Gave::End
        } else {
            Gave::Pending
        }
    }

    fn stops_at_bodiless_head(&self) -> bool {
        true
    }

    fn stop(&mut self) {
        self.channel.abandon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AccessFormat, Level};
    use crate::log::{memory, Memory};

    /// A body that gives its script, one step a call.
    struct Script(Vec<Result<(&'static [u8], bool), String>>);

    impl BodyStream for Script {
        fn fill(&mut self, out: &mut Vec<u8>, _room: usize) -> Result<bool, String> {
            let (bytes, more) = self.0.remove(0)?;
            out.extend_from_slice(bytes);
            Ok(more)
        }
    }

    fn local(script: Script, length: Option<u64>) -> Box<dyn Produce> {
        let streamed = Streamed {
            source: Source::Local(Box::new(script)),
            length,
            label: "handler at /s/".into(),
            patient: false,
        };
        streamed.producer(Status::OK, b"X-A: 1\r\n")
    }

    /// Calls `next` until it gives `Pending` or an end, and writes down
    /// what it gave (body bytes in place of `Bytes`).
    fn run(p: &mut dyn Produce, m: &Memory) -> Vec<String> {
        let mut logger = m.service.handle();
        let mut cx = Cx {
            log: &mut logger,
            raw_ok: false,
        };
        let mut seen = Vec::new();
        loop {
            let mut buf = Vec::new();
            let gave = p.next(1024, &mut buf, &mut cx);
            let text = String::from_utf8_lossy(&buf);
            let (line, more) = match gave {
                Gave::Pending => ("pending".to_string(), false),
                Gave::Head(h, file) => {
                    let lines = String::from_utf8_lossy(&h.headers).into_owned();
                    let file = file.map(|(_, n)| format!(" file {n}")).unwrap_or_default();
                    let len = h.content_length;
                    (
                        format!("head {} {len:?} {lines:?}{file}", h.status),
                        file.is_empty(),
                    )
                }
                Gave::Interim(h) => (format!("interim {}", h.status), true),
                Gave::Bytes => (format!("bytes {text}"), true),
                Gave::Last => (format!("last {text}"), false),
                Gave::End => ("end".into(), false),
                Gave::Redirect(to) => (format!("redirect {to:?}"), false),
                Gave::Cut(why) => (format!("cut {why}"), false),
                Gave::Fail(s, why) => (format!("fail {} {why}", s.0), false),
            };
            seen.push(line);
            if !more {
                return seen;
            }
        }
    }

    fn logs() -> Memory {
        memory(AccessFormat::Common, Level::Info, 16)
    }

    #[test]
    fn a_local_body_gives_its_head_then_its_pieces() {
        let m = logs();
        let script = Script(vec![Ok((b"ab", true)), Ok((b"cd", false))]);
        let mut p = local(script, Some(4));
        assert_eq!(p.label(), "handler at /s/");
        assert_eq!(
            run(&mut *p, &m),
            ["head 200 Some(4) \"X-A: 1\\r\\n\"", "bytes ab", "last cd"]
        );
    }

    #[test]
    fn a_local_body_that_fails_or_stalls_is_a_500() {
        let m = logs();
        let script = Script(vec![Ok((b"ab", true)), Err("db gone".into())]);
        let mut p = local(script, None);
        assert_eq!(run(&mut *p, &m)[1..], ["bytes ab", "fail 500 db gone"]);
        // (A first piece is made before the head: no head goes.)
        let mut p = local(Script(vec![Ok((b"", true))]), None);
        assert_eq!(
            run(&mut *p, &m),
            ["fail 500 produced nothing but said more follows"]
        );
        let mut p = local(Script(vec![Err("db gone".into())]), None);
        assert_eq!(run(&mut *p, &m), ["fail 500 db gone"]);
    }

    /// A later answer and its producer (the early header lines `X-E: 1`).
    fn later() -> (Later, Box<dyn Produce>, mio::Poll) {
        let poll = mio::Poll::new().unwrap();
        let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let (tx, _rx) = crate::channel::channel();
        let channel = Arc::new(Channel::default());
        let wake = Wake { tx, waker, conn: 3 };
        let later = Later::new(Arc::clone(&channel), wake);
        let streamed = Streamed {
            source: Source::Later(Awaited::new(channel)),
            length: None,
            label: "handler at /l/".into(),
            patient: false,
        };
        (later, streamed.producer(Status::OK, b"X-E: 1\r\n"), poll)
    }

    #[test]
    fn a_later_answer_gives_what_its_thread_gave_in_order() {
        let m = logs();
        let (mut l, mut p, _poll) = later();
        assert_eq!(run(&mut *p, &m), ["pending"]);
        l.start(201, &[("X-L", "2")], None).unwrap();
        assert_eq!(
            run(&mut *p, &m),
            ["head 201 None \"X-E: 1\\r\\nX-L: 2\\r\\n\"", "pending"]
        );
        l.write(b"one").unwrap();
        l.write(b"two").unwrap();
        assert_eq!(run(&mut *p, &m), ["bytes onetwo", "pending"]);
        l.write(b"three").unwrap();
        l.finish().unwrap();
        assert_eq!(run(&mut *p, &m), ["last three"]);
    }

    #[test]
    fn a_whole_later_answer_comes_at_once() {
        let m = logs();
        let (l, mut p, _poll) = later();
        l.answer(200, &[], b"all").unwrap();
        assert_eq!(
            run(&mut *p, &m),
            ["head 200 Some(3) \"X-E: 1\\r\\n\"", "last all"]
        );
        let (mut l, mut p, _poll) = later();
        l.start(200, &[], None).unwrap();
        l.finish().unwrap();
        assert_eq!(run(&mut *p, &m)[1..], ["end"]);
    }

    #[cfg(feature = "webdav")]
    #[test]
    fn a_later_answer_may_hand_its_body_to_the_worker() {
        let m = logs();
        let (l, mut p, _poll) = later();
        let body = Script(vec![Ok((b"ab", true)), Ok((b"cd", false))]);
        l.stream(Status(207), b"X-L: 2\r\n".to_vec(), Box::new(body))
            .unwrap();
        assert_eq!(
            run(&mut *p, &m),
            [
                "head 207 None \"X-E: 1\\r\\nX-L: 2\\r\\n\"",
                "bytes ab",
                "last cd"
            ]
        );
        // One that fails at once is a 500, its head never sent.
        let (l, mut p, _poll) = later();
        let body = Script(vec![Err("no such collection".into())]);
        l.stream(Status(207), Vec::new(), Box::new(body)).unwrap();
        assert_eq!(run(&mut *p, &m), ["fail 500 no such collection"]);
    }

    #[test]
    fn a_later_file_comes_with_its_head() {
        let m = logs();
        let (l, mut p, _poll) = later();
        let mut f = tempfile();
        std::io::Write::write_all(&mut f, b"12345").unwrap();
        l.send_file(200, &[("Content-Type", "text/plain")], f)
            .unwrap();
        assert_eq!(
            run(&mut *p, &m),
            ["head 200 Some(5) \"X-E: 1\\r\\nContent-Type: text/plain\\r\\n\" file 5"]
        );
    }

    #[test]
    fn a_later_answer_dropped_fails() {
        let m = logs();
        let (l, mut p, _poll) = later();
        drop(l);
        assert_eq!(
            run(&mut *p, &m),
            ["fail 500 the later answer was dropped without an answer"]
        );
        let (mut l, mut p, _poll) = later();
        l.start(200, &[], None).unwrap();
        drop(l);
        assert_eq!(
            run(&mut *p, &m),
            ["fail 500 the later answer was dropped unfinished"]
        );
    }

    #[test]
    fn stopping_a_later_answer_tells_its_thread() {
        let (mut l, mut p, _poll) = later();
        l.start(200, &[], None).unwrap();
        p.stop();
        assert!(l.is_gone());
        assert_eq!(l.write(b"x"), Err(LaterError::Gone));
        // Dropped, as an answer cut short is, it tells the thread too.
        let (mut l, p, _poll) = later();
        l.start(200, &[], None).unwrap();
        drop(p);
        assert_eq!(l.write(b"x"), Err(LaterError::Gone));
    }

    fn tempfile() -> File {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("brisk-later-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        f
    }
}
