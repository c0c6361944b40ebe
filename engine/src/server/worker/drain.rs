//! Winding a worker down on the main thread's order (see
//! [`crate::server::drain`]).

use super::*;

impl Worker {
    /// Reads the generation's order and carries out what is new in it.
    pub(super) fn take_order(&mut self) {
        let (mode, until) = self.order.get();
        if mode > self.draining {
            self.begin_drain(mode);
        }
        if let Some(u) = until {
            self.drain_until = Some(self.drain_until.map_or(u, |d| d.min(u)));
        }
    }

    /// Stops accepting (the listening sockets close, so that once every
    /// copy is gone new connections are refused, not queued); at a stop,
    /// also closes the idle connections. The rest finish as they would:
    /// each answer from now on says `Connection: close`.
    fn begin_drain(&mut self, mode: Drain) {
        let first = self.draining == Drain::Serve;
        self.draining = mode;
        if first {
            if mode == Drain::Stop {
                // Connections the kernel completed already, with their
                // request (TCP_DEFER_ACCEPT) or without, would be reset
                // when the socket closes: serve them instead.
                for i in 0..self.listeners.len() {
                    self.accept_all(i);
                }
            }
            for (mut l, _) in self.listeners.drain(..) {
                let _ = self.poll.registry().deregister(&mut l);
            }
            // (Closed: the main thread says a reload is done only once
            // every previous worker has told it so, so that no connection
            // made after that is accepted here.)
            self.order.listeners_closed();
        }
        if mode == Drain::Stop {
            for i in 0..self.conns.len() {
                match &self.conns[i] {
                    Some(c)
                        if matches!(c.h1.state(), State::Lingering(_))
                            && c.out.is_empty()
                            && !c.speaks_h2() =>
                    {
                        self.close(i)
                    }
                    // (HTTP/2 connections get their GOAWAY in two steps
                    // at the sweep instead, idle or not, so that requests
                    // already on the wire are served; open streams finish.)
                    Some(c) if c.idle() && !c.speaks_h2() => self.close_idle(i),
                    _ => {}
                }
            }
        }
    }
}
