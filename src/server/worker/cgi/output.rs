//! A CGI child's output on its way to the client: the header block
//! parsed into a response head, the body framed (Content-Length, chunked
//! or close-delimited), failures answered 502/504.

use super::*;

impl Worker {
    /// Handles bytes the child wrote to stdout.
    pub(super) fn cgi_output(&mut self, c: &mut Conn, data: &[u8]) {
        let Some(g) = c.cgi.as_mut() else { return };
        match g.encoder.as_mut() {
            Some(encoder) => {
                let start = c.out.buf_mut().len();
                encoder.encode(data, c.out.buf_mut());
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
                        let framing = if status.is_bodiless() {
                            Framing::Bodiless
                        } else if let Some(n) = head.content_length {
                            Framing::Length(n)
                        } else if !g.head_only && g.keep_alive && g.version == Version::Http11 {
                            Framing::Chunked
                        } else {
                            // (A HEAD answer has no body to delimit: its
                            // connection may stay open all the same.)
                            Framing::Close
                        };
                        let delimits = framing == Framing::Close && !g.head_only;
                        let keep = g.keep_alive && self.draining == Drain::Serve && !delimits;
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
                        let parts = head_parts(
                            &self.cfg,
                            &self.date,
                            Connection::new(keep, g.version),
                            false,
                        );
                        let start = c.out.buf_mut().len();
                        let response_head = Head {
                            status: head.status,
                            reason,
                            headers: &head.headers,
                            framing,
                            connection: parts.connection,
                        };
                        response_head.write(&parts.stamp, c.out.buf_mut());
                        // (The head is counted, committed or not.)
                        g.body_from = c.sent + c.out.unsent() + self.stage.unsent();
                        let rest = g.head_buf.split_off(head.head_len);
                        g.head_buf = Vec::new();
                        let mut encoder = Encoder::new(framing, g.head_only);
                        encoder.encode(&rest, c.out.buf_mut());
                        g.encoder = Some(encoder);
                        g.sent_any = true;
                        c.out.commit(start);
                    }
                }
            }
        }
    }

    /// The child closed its stdout: end the response.
    pub(super) fn cgi_output_done(&mut self, c: &mut Conn) {
        let Some(g) = c.cgi.as_mut() else { return };
        let Some(encoder) = g.encoder.as_mut() else {
            self.logger.log(
                Level::Error,
                format_args!(
                    "cgi {}: exited without a complete response header",
                    g.script
                ),
            );
            self.cgi_fail(c, Status::BAD_GATEWAY);
            return;
        };
        let start = c.out.buf_mut().len();
        let missing = encoder.finish(c.out.buf_mut());
        c.out.commit(start);
        if missing > 0 {
            self.logger.log(
                Level::Error,
                format_args!(
                    "cgi {}: output {missing} bytes shorter than its Content-Length",
                    g.script
                ),
            );
            g.broken = true;
        }
        if *encoder == Encoder::Close {
            g.keep_alive = false;
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
            let parts = head_parts(&self.cfg, &self.date, Connection::Close, g.head_only);
            let body = response::queue(&mut c.out, plan, &self.scratch, &parts).unwrap_or(0);
            g.body_from = (c.sent + c.out.unsent() + self.stage.unsent()).saturating_sub(body);
            g.sent_any = true;
        }
        self.cgi_end(c);
    }
}
