//! FastCGI (`[[fastcgi]]`, issue #27): requests handed to an application
//! server such as php-fpm over the FastCGI 1.0 protocol.
//!
//! - [`record`]: the web server's side of the records, sans-IO: encoders
//!   for what brisk sends (BEGIN_REQUEST, PARAMS, STDIN, ABORT_REQUEST)
//!   and a decoder for what the application answers (STDOUT, STDERR,
//!   END_REQUEST). One request per connection at a time (no
//!   multiplexing); `FCGI_KEEP_CONN` lets a connection serve the next.
//! - [`script`]: which script a request path runs (`split_path`,
//!   `index`, `fallback`), found beneath the rule's root before anything
//!   is sent, or why not.
//! - [`body`]: the application's answer as a producer over one
//!   non-blocking socket, the request body streamed to it.
//! - [`peer`]: the application's side, small and allocating where that is
//!   simpler: reads what the encoders write and writes what the decoder
//!   reads, for tests, the fuzz target and stand-in applications.

pub mod body;
pub mod peer;
pub mod record;
pub mod script;

use std::path::Path;

use crate::handlers::cgi::{request_vars, Ends, Names, VarSink};
use crate::http::request::OwnedRequest;

/// A request to hand to an application, as the router decided it: the
/// engine connects to the server `tries` holds (or takes a kept
/// connection; when it cannot connect, to the next one up) and starts a
/// [`body::FastcgiBody`] on the socket.
#[derive(Debug)]
pub struct FastcgiPlan {
    /// The application server picked for it, and those it may go to
    /// next.
    pub tries: crate::handlers::proxy::balance::Tries,
    /// Its parameters, as PARAMS records (their end included).
    pub params: Vec<u8>,
    /// How its body goes.
    pub body: body::BodyIn,
    /// Its method is idempotent (RFC 9110 §9.2.2): without a body, it
    /// may go again on a new connection should a kept one turn out
    /// closed before any byte of the answer.
    pub idempotent: bool,
    /// How the answer is read.
    pub opts: body::Options,
}

/// The PARAMS records of request `script` for `req` (which came from
/// `ends`): CGI/1.1's variables ([`crate::handlers::cgi::request_env`],
/// with `SCRIPT_FILENAME`, `PATH_INFO`, `PATH_TRANSLATED`,
/// `DOCUMENT_ROOT`, `REQUEST_URI`, `HTTPS`, `REQUEST_SCHEME`,
/// `SERVER_SOFTWARE` and `HTTP_AUTHORIZATION`), then the rule's `env`
/// over them (neither FastCGI's parameters nor a program's environment
/// has an order). `PATH`, which only a program started by brisk needs,
/// is left out unless `env` sets it. Written in `out` (empty).
#[allow(clippy::too_many_arguments)]
pub fn params(
    script: &script::Script,
    req: &OwnedRequest,
    ends: Ends,
    document_root: &Path,
    content_length: Option<u64>,
    env: &[(String, String)],
    mut out: Vec<u8>,
) -> Vec<u8> {
    let names = Names {
        name: &script.name,
        filename: &script.filename,
        path_info: &script.path_info,
    };
    // (Room for the ~25 variables, the fields and the paths, nearly
    // always: one allocation.)
    let fields: usize = req
        .headers()
        .map(|h| h.name.len() + h.value.len() + 8)
        .sum();
    let paths = script.filename.as_os_str().len() + document_root.as_os_str().len();
    let guess = 640 + fields + paths + 2 * (req.original_target().len() + script.path_info.len());
    out.reserve(guess);
    let mut w = record::Params::new(&mut out, body::ID);
    request_vars(names, req, ends, document_root, content_length, env, &mut w);
    w.close();
    record::params_end(&mut out, body::ID);
    out
}

/// A FastCGI application's variables go straight into PARAMS records.
impl VarSink for record::Params<'_> {
    const APPLICATION: bool = true;

    fn var(&mut self, name: &[u8], value: &[u8]) {
        self.pair(name, value);
    }
}

#[cfg(test)]
mod tests;
