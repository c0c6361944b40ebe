//! The reverse proxy (`[[reverse_proxy]]`, being built: issue #27): a
//! request forwarded to an application behind brisk, re-framed on the
//! way so that no ambiguity the client wrote reaches it
//! ([`request`]), and its answer parsed as strictly as a request
//! ([`crate::http::parse::response`]) before any of it goes on
//! ([`body`]).

pub mod balance;
pub mod body;
pub mod dial;
pub mod health;
pub mod link;
pub mod pool;
pub mod request;
pub mod tunnel;

use crate::config::Upstream;

/// A request to forward, as the router decided it: the engine connects
/// to `to` (non-blocking, on its own event loop) and starts a
/// [`body::ProxyBody`] on the socket.
#[derive(Debug)]
pub struct UpstreamPlan {
    /// The upstream picked for it.
    pub to: Upstream,
    /// The request head it is sent ([`request::write_head`]).
    pub head: Vec<u8>,
    /// How the answer is read and passed on.
    pub opts: body::Options,
    /// The rule's TLS client, for an https upstream.
    pub tls: link::Tls,
    /// The request's body, held whole (`buffer_request`): sent after the
    /// head, by its length; none comes from the client then.
    pub held: Option<crate::handlers::spool::Spool>,
}

#[cfg(test)]
mod tests;
