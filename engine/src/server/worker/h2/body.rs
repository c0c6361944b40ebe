//! Request bodies on HTTP/2 streams: DATA frames for a request that
//! waits (for its password check: held with their window credit; for an
//! embedded handler, or held whole for a CGI program: see
//! `worker/waits.rs`, which handles both protocols' waits), bodies nobody
//! wants (read and dropped, their credit given back), and bodies that
//! stop coming (408).

use crate::http::parse::BodyFraming;
use crate::http::Status;
use crate::server::conn::Conn;
use crate::server::run::Fed;
use crate::server::waits::Wait;
use crate::server::worker::Worker;

impl Worker {
    /// Body bytes of stream `id` arrived.
    pub(in crate::server::worker) fn h2_data(
        &mut self,
        c: &mut Conn,
        id: u32,
        data: &[u8],
        end_stream: bool,
        trailers: Option<&[u8]>,
    ) {
        let end = (end_stream, trailers);
        let fed = match c.speaks_h3() {
            #[cfg(feature = "http3")]
            true => Self::h3_run_data(c, &mut self.exchanges, id, data, end),
            _ => Self::h2_run_data(c, &mut self.exchanges, id, data, end),
        };
        match fed {
            Fed::NoInput => {}
            Fed::Fed { .. } => return,
            // (Past its route's largest body, with no length to refuse
            // it by at its head: HTTP/1.1's decoder refuses it the same.
            // These bytes go nowhere: their credit goes back, RFC 9113
            // §6.9; HTTP/3's went back as they were read.)
            Fed::TooLarge => {
                if let Some(s) = c.proto.h2_mut() {
                    s.conn.release(id, data.len());
                }
                if let Some(run) = c.stream_run(id).and_then(|ex| self.exchanges.run(ex)) {
                    // (Held by the exchanges: logged from a copy, once.)
                    let req = &run.request.req;
                    let line = (req.method_token().to_vec(), req.target().to_vec());
                    let length = match req.body() {
                        crate::http::parse::BodyFraming::Length(n) => Some(n),
                        _ => None,
                    };
                    let max = run.request.body_max;
                    self.body_too_large_as(c, (&line.0, &line.1), length, max);
                }
                return self.h2_run_body_refused(c, id, Status::CONTENT_TOO_LARGE);
            }
        }
        let ex = c.wait_id(Some(id));
        let turn = match ex.and_then(|ex| self.exchanges.wait(ex)) {
            Some(Wait::Check(w)) => Some(w.turn),
            _ => None,
        };
        // While its password is checked the body waits, its credit held
        // back, so that the stream's and the connection's windows bound
        // it. While it waits for its turn, the connection's credit goes
        // back (the requests under way, whose ends it waits for, may need
        // it for their bodies) and the stream's is held. Any other body's
        // credit goes back now (one nobody waits for is dropped).
        // (HTTP/3's credit goes back as its bytes are read.)
        let h3 = c.speaks_h3();
        match (c.proto.h2_mut(), turn) {
            (Some(s), None) => s.conn.release(id, data.len()),
            (Some(s), Some(true)) => s.conn.release_conn(data.len() as u32),
            (Some(_), Some(false)) => {}
            (None, _) if h3 => {}
            (None, _) => return,
        }
        let Some(w) = ex.and_then(|ex| self.exchanges.wait_mut(ex)) else {
            return;
        };
        w.push(data, &self.settings.cfg.temp_dir);
        if let Wait::Check(w) = w {
            w.body_done |= end_stream;
            if let Some(t) = trailers {
                w.trailers = Some(t.to_vec());
            }
            if let (true, Some(s)) = (w.turn, c.proto.h2_mut()) {
                w.paid += data.len();
                s.turn_held += data.len();
                if s.turn_held > self.settings.cfg.http2.connection_window as usize {
                    self.h2_refuse_held_turn(c, id);
                }
            }
            return;
        }
        let framing = w.held().req.body();
        if !self.body_grew(c, Some(id)) {
            if !end_stream {
                self.h2_refuse_rest(c, id, framing);
            }
            return;
        }
        if end_stream {
            if let Some(w) = self.take_wait(c, Some(id)) {
                self.body_in(c, Some(id), w);
            }
        }
    }

    /// The bodies held by `c`'s requests waiting for their turn (their
    /// connection credit given back: see [`Worker::h2_data`]) outgrew
    /// the connection's window (`http2.connection_window`), which would
    /// bound them if it were held: stream `id`, whose bytes just came, is
    /// refused (REFUSED_STREAM: nothing of it ran, RFC 9113 §8.7) and its
    /// body let go of.
    fn h2_refuse_held_turn(&mut self, c: &mut Conn, id: u32) {
        let label = match c.wait_id(Some(id)).and_then(|ex| self.exchanges.wait(ex)) {
            Some(w) => String::from_utf8_lossy(w.held().req.target()).into_owned(),
            None => return,
        };
        let why = format!("{label} (its body waiting for its turn past http2.connection_window)");
        self.refuse_stream(c, id, super::super::pipe::NoRoom::Programs(&why));
    }

    /// The rest of stream `id`'s request body (`framing`: its request's)
    /// is not wanted: it was answered without it. What the client said it
    /// would send (up to 64 MiB), or else `limits.max_body`, is read and
    /// dropped, so that a client that sends its whole body before it
    /// reads still gets the answer; beyond that the stream is reset (see
    /// `h2::Conn::discard_body`), or over HTTP/3 stopped
    /// (`Session::refuse_rest`).
    pub(in crate::server::worker) fn h2_refuse_rest(
        &mut self,
        c: &mut Conn,
        id: u32,
        framing: BodyFraming,
    ) {
        let declared = match framing {
            BodyFraming::Length(n) => n.min(64 << 20),
            _ => 0,
        };
        let allowance = declared.max(self.settings.cfg.limits.max_body);
        #[cfg(feature = "http3")]
        if c.speaks_h3() {
            return self.h3_refuse_rest(c, id, allowance);
        }
        if let Some(s) = c.proto.h2_mut() {
            s.conn.discard_body(id, allowance);
        }
    }

    /// The connection has received nothing for `timeouts.body`: every
    /// request still waiting for its body (for a handler, or held whole
    /// for a program) is answered 408 and the rest of its body dropped
    /// (over HTTP/1.1 the connection closes instead: the worker's sweep,
    /// `Timer::Body`; here the connection's other streams go on).
    /// Whether any was.
    pub(in crate::server::worker) fn h2_body_timeouts(&mut self, c: &mut Conn) -> bool {
        let mut any = false;
        loop {
            let wants_body = |ex| self.exchanges.wait(ex).is_some_and(Wait::wants_body);
            let Some(id) = c.find_wait(wants_body).flatten() else {
                break;
            };
            let Some(w) = self.take_wait(c, Some(id)) else {
                break;
            };
            any = true;
            let framing = w.held().req.body();
            self.client_info(format_args!(
                "client {}: request body timed out (408)",
                c.peer.ip()
            ));
            self.refuse_wait(c, Some(id), w, Status::REQUEST_TIMEOUT);
            self.h2_refuse_rest(c, id, framing);
        }
        any
    }
}
