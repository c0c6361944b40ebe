//! What a request holds while it cannot be answered yet: the request
//! itself ([`Held`]) and what it waits for ([`Wait`]), one model for both
//! protocols. It is kept in the worker's table of exchanges
//! ([`crate::server::exchange`]); the protocol state names it there
//! (HTTP/1.1: [`crate::server::h1::State::Body`],
//! [`crate::server::h1::State::Waiting`]; HTTP/2: `h2::Answer::wait`),
//! and the worker reaches it by the stream (`Conn::wait_id`), `None` for
//! HTTP/1.1, and acts on each outcome once, whatever the protocol
//! (`worker/waits.rs`).

use std::time::Instant;

use super::router::Resume;
use crate::handlers::spool::Spool;
use crate::http::request::OwnedRequest;

/// A request that waits (for its password check, its body, a process):
/// the request itself, when its first byte arrived, and how many CGI
/// local redirects led to it.
#[derive(Debug)]
pub struct Held {
    /// The request.
    pub req: OwnedRequest,
    /// When its first byte arrived (for the access log's duration).
    pub started: Instant,
    /// CGI local redirects that led to it.
    pub redirects: u8,
    /// The largest body its route takes (`limits.max_body`, or its
    /// rule's): a body that streams to a producer is cut past it.
    pub body_max: u64,
    /// The times it waited for a cold disk's lookups (see
    /// [`crate::server::router::Deferred::Cold`]).
    #[cfg(feature = "cold-lookups")]
    pub colds: u8,
}

/// What a request waits for, whatever its protocol.
#[derive(Debug)]
pub enum Wait {
    /// Its password check, off the loop.
    Check(AuthWait),
    /// Its body, for an embedded handler.
    Handler(HandlerWait),
    /// Its body, held whole before its answer starts.
    Whole(WholeBody),
}

impl Wait {
    /// Body bytes that arrived go where the wait keeps them (`temp_dir`:
    /// where a body held whole goes once it outgrows memory).
    pub fn push(&mut self, data: &[u8], temp_dir: &std::path::Path) {
        match self {
            Wait::Check(w) => w.body.extend_from_slice(data),
            Wait::Handler(w) => w.body.extend_from_slice(data),
            Wait::Whole(w) => w.body.push(data, temp_dir),
        }
    }

    /// The request held.
    pub fn held(&self) -> &Held {
        match self {
            Wait::Check(w) => &w.held,
            Wait::Handler(w) => &w.held,
            Wait::Whole(w) => &w.held,
        }
    }

    /// Whether it is a password check whose outcome is in.
    pub fn is_checked(&self) -> bool {
        matches!(self, Wait::Check(w) if w.ready)
    }

    /// Whether it waits for its request's body.
    pub fn wants_body(&self) -> bool {
        matches!(self, Wait::Handler(_) | Wait::Whole(_))
    }
}

/// A request held while its password is hashed off the loop, or (over
/// HTTP/2 or HTTP/3, `turn`) while its connection has no room for one more
/// upstream request; it is routed again once the outcome is in, or its
/// turn has come (`ready`).
#[derive(Debug)]
pub struct AuthWait {
    /// The request.
    pub held: Held,
    /// The outcome is in (or its turn came).
    pub ready: bool,
    /// It waits for its turn, not for a check: made `ready` when one of
    /// its connection's upstream requests ends.
    pub turn: bool,
    /// HTTP/2: its body so far, held until the request is routed again,
    /// its stream's window credit with it (so that the stream's window
    /// bounds it). HTTP/1.1 reads no body meanwhile, so this stays empty.
    pub body: Vec<u8>,
    /// HTTP/2: how much of `body` (from its start) had its connection
    /// window credit given back: all of it for a request waiting for its
    /// turn (the requests under way share that window and must not wait
    /// on this one), none for a password check's (the connection's
    /// window bounds those). Owed once the request is routed again and
    /// its body given where it goes (`h2::Conn::owe`). HTTP/3, waiting
    /// for its turn: the connection credit its body, unread, may take
    /// meanwhile (counted in `h3::Session::turn_held`).
    pub paid: usize,
    /// HTTP/2: the body is all in.
    pub body_done: bool,
    /// HTTP/2: the request's trailer section that ended it, if any (a
    /// proxied request passes it on).
    pub trailers: Option<Vec<u8>>,
}

impl AuthWait {
    /// Holds `held` (its body to come) until a check or its turn.
    pub fn new(held: Held, turn: bool) -> AuthWait {
        AuthWait {
            held,
            ready: false,
            turn,
            body: Vec::new(),
            paid: 0,
            body_done: false,
            trailers: None,
        }
    }
}

/// A request whose embedded handler runs once the body is in.
#[derive(Debug)]
pub struct HandlerWait {
    /// Index of the mount in the router's list.
    pub mount: usize,
    /// The request.
    pub held: Held,
    /// The body so far, de-chunked (`limits.max_body` bounds it).
    pub body: Vec<u8>,
    /// How much of it counts against `limits.handler_bodies` already.
    pub counted: usize,
}

/// A request whose chunked body is held whole before its answer starts
/// (a CGI program must be told the body's length).
#[derive(Debug)]
pub struct WholeBody {
    /// Who answers once the body is in (boxed: every exchange's slot is
    /// as large as the largest wait, and an exchange that lasts, such as
    /// a WebSocket tunnel's, holds its slot for its life).
    pub resume: Box<Resume>,
    /// The request.
    pub held: Held,
    /// The body so far.
    pub body: Spool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> Held {
        Held {
            req: OwnedRequest::default(),
            started: Instant::now(),
            redirects: 0,
            body_max: u64::MAX,
            #[cfg(feature = "cold-lookups")]
            colds: 0,
        }
    }

    #[test]
    fn body_bytes_go_where_the_wait_keeps_them_and_the_predicates_tell_the_kinds() {
        let dir = std::path::Path::new("/nonexistent");
        let mut check = Wait::Check(AuthWait::new(held(), false));
        check.push(b"ab", dir);
        check.push(b"c", dir);
        assert!(matches!(check, Wait::Check(_)));
        assert!(!check.is_checked() && !check.wants_body());
        let Wait::Check(w) = &mut check else {
            unreachable!()
        };
        assert_eq!(w.body, b"abc");
        w.ready = true;
        assert!(check.is_checked());

        let mut handler = Wait::Handler(HandlerWait {
            mount: 0,
            held: held(),
            body: Vec::new(),
            counted: 0,
        });
        handler.push(b"xyz", dir);
        assert!(handler.wants_body() && !handler.is_checked());
        assert!(matches!(&handler, Wait::Handler(w) if w.body == b"xyz" && w.counted == 0));
    }

    #[test]
    fn a_wait_names_the_request_it_holds() {
        let with = |redirects| Held {
            redirects,
            ..held()
        };
        let waits = [
            Wait::Check(AuthWait::new(with(1), false)),
            Wait::Handler(HandlerWait {
                mount: 0,
                held: with(2),
                body: Vec::new(),
                counted: 0,
            }),
        ];
        let redirects: Vec<u8> = waits.iter().map(|w| w.held().redirects).collect();
        assert_eq!(redirects, [1, 2]);
    }
}
