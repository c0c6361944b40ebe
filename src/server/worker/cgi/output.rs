//! A CGI child's output on its way to the client: the header block
//! parsed into a response head, the body framed (Content-Length, chunked
//! or close-delimited), failures answered 502/504.

use super::*;

impl Worker {
    pub(super) fn head_parts(&self, keep: bool, version: Version) -> HeadParts<'_> {
        let connection = match (keep, version) {
            (false, _) => ConnHeader::Close,
            (true, Version::Http10) => ConnHeader::KeepAlive,
            (true, _) => ConnHeader::None,
        };
        HeadParts {
            server: self.cfg.server_header.as_bytes(),
            date: self.date.get(),
            connection,
            head_only: false,
            sendfile: self.cfg.static_files.sendfile,
        }
    }

    /// Handles bytes the child wrote to stdout.
    pub(super) fn cgi_output(&mut self, c: &mut Conn, data: &[u8]) {
        let Some(g) = c.cgi.as_mut() else { return };
        match g.body_out {
            Some(out) => {
                let start = c.out.buf_mut().len();
                emit_body(g, out, data, c.out.buf_mut());
                c.out.commit(start);
            }
            None => {
                g.head_buf.extend_from_slice(data);
                let max = self.cfg.limits.cgi_header_bytes;
                match parse_head(&g.head_buf, max) {
                    Ok(None) => {}
                    Err(why) => {
                        self.logger.log(
                            Level::Error,
                            format_args!("cgi {}: invalid response header: {why}", g.script),
                        );
                        self.cgi_fail(c, Status::BAD_GATEWAY);
                    }
                    Ok(Some(head)) => {
                        if let CgiReply::LocalRedirect(target) = &head.kind {
                            let target = target.clone();
                            self.cgi_local_redirect(c, &target);
                            return;
                        }
                        let status = Status(head.status);
                        let bodiless = status.is_bodiless();
                        let out = if g.head_only || bodiless {
                            BodyOut::Discard
                        } else if let Some(n) = head.content_length {
                            BodyOut::Length(n)
                        } else if g.keep_alive && g.version == Version::Http11 {
                            BodyOut::Chunked
                        } else {
                            BodyOut::Close
                        };
                        let framing = match (out, head.content_length) {
                            (_, _) if bodiless => Framing::Bodiless,
                            (_, Some(n)) => Framing::Length(n),
                            (BodyOut::Chunked, None) => Framing::Chunked,
                            _ => Framing::Close,
                        };
                        if out == BodyOut::Close || (g.head_only && head.content_length.is_none()) {
                            g.keep_alive = g.keep_alive && g.head_only;
                        }
                        let keep =
                            g.keep_alive && self.draining == Drain::Serve && out != BodyOut::Close;
                        g.keep_alive = keep;
                        g.status = head.status;
                        let reason_owned;
                        let reason: &[u8] = match &head.reason {
                            Some(r) if status.reason() == "Unknown" => {
                                reason_owned = r.clone();
                                &reason_owned
                            }
                            _ => status.reason().as_bytes(),
                        };
                        let parts = self.head_parts(keep, g.version);
                        let start = c.out.buf_mut().len();
                        response::write_head(
                            c.out.buf_mut(),
                            head.status,
                            reason,
                            &head.headers,
                            framing,
                            &parts,
                        );
                        // (The head is counted, committed or not.)
                        g.body_from = c.sent + c.out.unsent() + self.stage.unsent();
                        let rest = g.head_buf.split_off(head.head_len);
                        g.head_buf = Vec::new();
                        g.body_out = Some(out);
                        g.sent_any = true;
                        emit_body(g, out, &rest, c.out.buf_mut());
                        c.out.commit(start);
                    }
                }
            }
        }
    }

    /// The child closed its stdout: end the response.
    pub(super) fn cgi_output_done(&mut self, c: &mut Conn) {
        let Some(g) = c.cgi.as_mut() else { return };
        match g.body_out {
            None => {
                self.logger.log(
                    Level::Error,
                    format_args!(
                        "cgi {}: exited without a complete response header",
                        g.script
                    ),
                );
                self.cgi_fail(c, Status::BAD_GATEWAY);
                return;
            }
            Some(BodyOut::Chunked) => c.out.push_bytes(b"0\r\n\r\n"),
            Some(BodyOut::Length(left)) if left > 0 => {
                self.logger.log(
                    Level::Error,
                    format_args!(
                        "cgi {}: output {left} bytes shorter than its Content-Length",
                        g.script
                    ),
                );
                g.broken = true;
            }
            Some(BodyOut::Close | BodyOut::Raw) => g.keep_alive = false,
            Some(_) => {}
        }
        self.cgi_end(c);
    }

    /// Answers `status` if nothing was sent yet (else cuts the response
    /// short), and ends the CGI request.
    pub(super) fn cgi_fail(&mut self, c: &mut Conn, status: Status) {
        let Some(g) = c.cgi.as_mut() else { return };
        self.kill_child(g.pid);
        if g.sent_any {
            g.broken = true;
        } else {
            g.keep_alive = false;
            g.status = status.0;
            self.scratch.clear();
            let plan = Plan::error(status, &mut self.scratch);
            let parts = self.head_parts(false, g.version);
            let parts = HeadParts {
                head_only: g.head_only,
                ..parts
            };
            let body = response::queue(&mut c.out, plan, &self.scratch, &parts).unwrap_or(0);
            g.body_from = (c.sent + c.out.unsent() + self.stage.unsent()).saturating_sub(body);
            g.sent_any = true;
        }
        self.cgi_end(c);
    }
}

/// Frames `data` from the child's stdout into `buf` for the client.
fn emit_body(g: &mut CgiRun, out: BodyOut, data: &[u8], buf: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    match out {
        BodyOut::Discard => {}
        BodyOut::Raw | BodyOut::Close => buf.extend_from_slice(data),
        BodyOut::Length(left) => {
            let n = (data.len() as u64).min(left) as usize;
            buf.extend_from_slice(&data[..n]);
            g.body_out = Some(BodyOut::Length(left - n as u64));
        }
        BodyOut::Chunked => {
            // RFC 9112 §7.1: chunk-size in hex, CRLF, data, CRLF.
            let mut hex = [0u8; 16];
            let mut i = hex.len();
            let mut n = data.len();
            loop {
                i -= 1;
                hex[i] = b"0123456789abcdef"[n & 0xf];
                n >>= 4;
                if n == 0 {
                    break;
                }
            }
            buf.extend_from_slice(&hex[i..]);
            buf.extend_from_slice(b"\r\n");
            buf.extend_from_slice(data);
            buf.extend_from_slice(b"\r\n");
        }
    }
}
