//! The handlers the `brisk` command registers by name for
//! `[[handlers]]` (the names are listed in
//! [`crate::config::BUILT_IN_HANDLERS`]): `echo`, which answers with the
//! request it got, for tests and for seeing what a client or a proxy
//! sends. `crate::process` registers them.

use std::io::Write as _;

use super::app::{Handler, Init, Request, Response};

/// `echo`: answers `text/plain` with the request line, the header lines
/// and the body as received (the body within `limits.max_body`), after
/// an optional first line (`config = { say = "…" }`).
#[derive(Debug, Clone, Default)]
pub struct Echo {
    say: Option<String>,
}

impl Handler for Echo {
    fn init(&mut self, init: &Init<'_>) -> Result<(), String> {
        for key in init.config.keys() {
            match (key, init.config.get(key)) {
                ("say", Some(v)) => match v.as_str() {
                    Some(s) => self.say = Some(s.to_string()),
                    None => return Err("config.say: expected a string".to_string()),
                },
                _ => return Err(format!("config.{key}: unknown key; expected \"say\"")),
            }
        }
        Ok(())
    }

    fn handle(&self, req: &Request<'_>, resp: &mut Response<'_>) {
        // (A fixed, valid header: it cannot be refused.)
        let _ = resp.header("Content-Type", "text/plain; charset=utf-8");
        let out = resp.body();
        if let Some(say) = &self.say {
            let _ = writeln!(out, "{say}");
        }
        out.extend_from_slice(req.method);
        out.push(b' ');
        out.extend_from_slice(req.target);
        out.push(b'\n');
        for h in req.headers {
            out.extend_from_slice(h.name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(h.value);
            out.push(b'\n');
        }
        out.push(b'\n');
        out.extend_from_slice(req.body);
    }
}
