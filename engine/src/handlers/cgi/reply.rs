//! A CGI program's reply protocol as the engine's pipe pump sees it
//! ([`PipeReply`]): the header block at the start of its output (RFC 3875
//! §6, parsed by [`parse_head_in`]) becomes a response head or a local
//! redirect; an `nph-` script's output is a whole response already
//! (RFC 3875 §5).

use super::head::{parse_head_in, CgiHead, CgiReply as Kind};
use super::nph::parse_nph_head;
use super::process::Process;
use crate::handlers::pipe::{PipeReply, ReplyHead, ReplyStart};

/// The reply of one running CGI program.
#[derive(Debug)]
pub struct ScriptReply {
    process: Process,
    /// An `nph-` script.
    nph: bool,
    /// Longest header block accepted (`limits.cgi_header_bytes`).
    max_head: usize,
}

impl ScriptReply {
    /// The reply of `process`; `nph` for an `nph-` script.
    pub fn new(process: Process, nph: bool, max_head: usize) -> ScriptReply {
        ScriptReply {
            process,
            nph,
            max_head,
        }
    }
}

impl PipeReply for ScriptReply {
    fn is_raw(&self) -> bool {
        self.nph
    }

    fn start(&mut self, output: &[u8], ended: bool) -> ReplyStart {
        if self.nph {
            return match parse_nph_head(output, self.max_head) {
                Ok(None) => ReplyStart::Incomplete,
                Ok(Some(head)) => ReplyStart::Head(head),
                Err(why) => ReplyStart::Invalid(why),
            };
        }
        match parse_head_in(output, self.max_head, ended, Vec::new) {
            Ok(None) => ReplyStart::Incomplete,
            Err(why) => ReplyStart::Invalid(why),
            Ok(Some(head)) => match head.kind {
                Kind::LocalRedirect(target) => ReplyStart::Redirect(target),
                Kind::Document | Kind::ClientRedirect => ReplyStart::Head(reply_head(head)),
            },
        }
    }

    fn stop(&mut self) {
        self.process.kill();
    }
}

/// The response head a CGI head (a document or a client redirect) makes.
pub fn reply_head(head: CgiHead) -> ReplyHead {
    ReplyHead {
        len: head.head_len,
        status: head.status,
        reason: head.reason,
        headers: head.headers,
        content_length: head.content_length,
        chunked: false,
        own: Default::default(),
    }
}
