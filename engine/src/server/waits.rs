//! What a connection holds while its request cannot be answered yet: the
//! request itself ([`Held`]) and what it waits for. The protocol state
//! ([`crate::server::h1::State`]) keeps these in its variants.

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
}

/// A request held while its password is hashed off the loop; it is
/// routed again once the outcome is in (`ready`).
#[derive(Debug)]
pub struct AuthWait {
    /// Tells the outcome of this check from a stale one.
    pub id: u64,
    /// The request.
    pub held: Held,
    /// The outcome is in.
    pub ready: bool,
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
    /// Who answers once the body is in.
    pub resume: Resume,
    /// The request.
    pub held: Held,
    /// The body so far.
    pub body: Spool,
}
