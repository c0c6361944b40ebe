//! CGI/1.1 (RFC 3875) building blocks, without any I/O of their own:
//!
//! - [`resolve()`] / [`Resolver`]: which `[[cgi]]` rule a request path
//!   falls under, and which program runs with which `SCRIPT_NAME` and
//!   `PATH_INFO` (or why the request is refused).
//! - [`build_env`]: the script's whole environment (RFC 3875 §4.1).
//! - [`parse_head`]: the header block a script prints before its body
//!   (RFC 3875 §6), turned into a status, header lines and a kind of reply.
//!
//! Starting, killing and reaping processes is [`crate::sys::spawn`]; the
//! event loop in `server/` drives the pipes.

mod env;
mod head;
mod resolve;

#[cfg(test)]
mod tests;

pub use env::{build_env, EnvRequest, DEFAULT_PATH, SERVER_SOFTWARE};
pub use head::{parse_head, CgiHead, CgiReply, DROPPED};
pub use resolve::{resolve, Resolved, Resolver, Script};
