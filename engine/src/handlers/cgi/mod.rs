//! CGI/1.1 (RFC 3875) building blocks, without any I/O of their own:
//!
//! - [`resolve()`] / [`Resolver`]: which `[[cgi]]` rule a request path
//!   falls under, and which program runs with which `SCRIPT_NAME` and
//!   `PATH_INFO` (or why the request is refused).
//! - [`build_env`]: the script's whole environment (RFC 3875 §4.1).
//! - [`parse_head`]: the header block a script prints before its body
//!   (RFC 3875 §6), turned into a status, header lines and a kind of reply.
//! - [`Cgi`]: one worker's rules and programs: starting a script for a
//!   request makes its answer a [`crate::handlers::pipe::Pipe`] body,
//!   whose reply object ([`ScriptReply`]) reads the header block and stops
//!   the program when asked; [`Children`] reaps what outlives a request.
//! - [`Programs`]: which files under the document root are programs, so
//!   that the static handler never serves their source.
//!
//! The raw system calls are [`crate::sys::spawn`]; the event loop in
//! `server/` pumps the pipes without knowing what CGI is.

mod env;
mod head;
mod nph;
pub mod pipe_body;
mod process;
mod programs;
mod reply;
mod resolve;
mod runner;

#[cfg(test)]
pub(crate) mod tests;

pub use env::{
    build_env, content_length, request_env, request_vars, vars, EnvRequest, Names, SliceHeaders,
    VarSink, DEFAULT_PATH, SERVER_SOFTWARE,
};
pub use head::{parse_head, parse_head_in, CgiHead, CgiReply, DROPPED};
pub use process::{Children, Process};
pub use programs::Programs;
pub use reply::{reply_head, ScriptReply};
pub use resolve::{resolve, takes_root, takes_url, Resolved, Resolver, Script};
pub use runner::{Cgi, Ends};
