//! The request being answered, kept in the worker so that its buffers
//! are reused from one request to the next. (Temporary: a later stage
//! of #26 passes the request by argument instead.)

use std::time::Instant;

use crate::handlers::Scratch;
use crate::http::request::OwnedRequest;

/// The request being answered and the buffers its answer is made in.
pub(super) struct Current {
    /// The request (its buffers reused from one to the next).
    pub(super) req: OwnedRequest,
    /// When its first byte arrived (kept here rather than in every
    /// connection: only a request that waits, for its body, a password
    /// check or a CGI program, keeps its own).
    pub(super) start: Instant,
    /// Buffers its handler writes the answer's head and body in.
    pub(super) scratch: Scratch,
}

impl Current {
    /// No request yet.
    pub(super) fn new(now: Instant) -> Current {
        Current {
            req: OwnedRequest::default(),
            start: now,
            scratch: Scratch::default(),
        }
    }

    /// Frees the buffers (a quiet worker rests): the next request grows
    /// them again.
    pub(super) fn rest(&mut self) {
        self.scratch = Scratch::default();
        self.req = OwnedRequest::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rest_frees_the_buffers_grown() {
        let mut current = Current::new(Instant::now());
        current.scratch.headers.extend_from_slice(&[b'x'; 4096]);
        current.scratch.body.extend_from_slice(&[b'y'; 4096]);
        current.rest();
        assert_eq!(current.scratch.headers.capacity(), 0);
        assert_eq!(current.scratch.body.capacity(), 0);
    }
}
