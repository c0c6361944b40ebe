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
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};

use super::app::{check_header, InvalidHeader};
use super::pipe::ReplyHead;

/// A body produced in pieces on the worker thread, while the client
/// takes them: the engine asks for more only when the connection's
/// output has room, so a large body never sits whole in memory.
pub trait BodyStream {
    /// Appends the next piece of the body to `out` (about `room` bytes is
    /// a good size). Returns `Ok(true)` while more follows and
    /// `Ok(false)` once the body is complete; `Err` ends the answer cut
    /// short (the reason goes to the error log). A call that appends
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
    pub tx: mpsc::Sender<usize>,
    /// Wakes the worker's event loop.
    pub waker: Arc<mio::Waker>,
    /// The connection the answer is for.
    pub conn: usize,
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
    /// The answer is complete (`Some(true)`) or abandoned (`Some(false)`:
    /// dropped unanswered, or unfinished).
    pub end: Option<bool>,
    /// The client is gone, or the answer timed out: nothing more is taken.
    pub gone: bool,
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
            end: g.end,
            gone: g.gone,
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

/// A poisoned lock only means a thread panicked while holding it; what
/// it guards is still consistent (plain fields, each set in one step).
fn lock(m: &Mutex<Given>) -> MutexGuard<'_, Given> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a later answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaterError {
    /// The client is gone, or the answer took longer than
    /// `timeouts.handler`: nothing more is sent.
    Gone,
    /// A header line that may not be sent (see
    /// [`crate::handlers::app::Response::header`]).
    Header(InvalidHeader),
    /// Not a final status (200–599).
    Status(u16),
    /// Body bytes before [`Later::start`], or a second start.
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
}

impl Later {
    /// A later answer through `channel`, for the connection `wake` names.
    pub(crate) fn new(channel: Arc<Channel>, wake: Wake) -> Later {
        Later {
            channel,
            wake,
            started: false,
            done: false,
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
    pub fn send_file(
        mut self,
        status: u16,
        headers: &[(&str, &str)],
        file: File,
    ) -> Result<(), LaterError> {
        let len = file
            .metadata()
            .map_err(|e| LaterError::File(e.to_string()))?
            .len();
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
        let head = ReplyHead {
            len: 0,
            status,
            reason: None,
            headers: lines,
            content_length: length,
            chunked: false,
        };
        Ok(head)
    }

    /// Sends more of the body. Waits while more than [`LATER_CAP`] bytes
    /// given earlier have not been taken yet (the client reads slowly),
    /// so a fast producer cannot fill the server's memory.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), LaterError> {
        if !self.started {
            return Err(LaterError::Order("start the answer before its body"));
        }
        if bytes.is_empty() {
            return Ok(());
        }
        let mut g = lock(&self.channel.given);
        while !g.gone && g.data.len() >= LATER_CAP {
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
            // Fails only once the worker has exited: the answer is moot.
            let _ = self.wake.tx.send(self.wake.conn);
            let _ = self.wake.waker.wake();
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
    Later(Arc<Channel>),
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Local(_) => f.write_str("Local"),
            Source::Later(_) => f.write_str("Later"),
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
}
