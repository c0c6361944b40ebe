//! One worker's idle upstream connections (HTTP/1.1 keep-alive): an
//! answer that ended exactly, on a connection the upstream keeps open,
//! leaves its socket here, and the next request to the same upstream
//! takes it instead of connecting. Bounded per upstream (the rule's
//! `keepalive`), closed after `keepalive_timeout` idle, and checked
//! before reuse when the request could not go again should it fail (see
//! [`Pool::take`]): an idle connection that has anything to read (the
//! upstream closed it, or sent bytes nobody asked for) is not reusable.
//!
//! A connection rests here still in the worker's watch, under the token
//! of the answer that left it (kept with it): the next answer to take it
//! watches it again only if its token differs (see `Produce::watch_slot`).
//! Closing it takes it out of the watch.

use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::link::Link;
use crate::config::Upstream;
use crate::sys::net;

/// A connection waiting for its next request.
#[derive(Debug)]
struct Idle {
    to: Upstream,
    sock: OwnedFd,
    /// Its transport (a TLS connection keeps its session).
    link: Link,
    /// The token it is still watched under, if it is.
    watched: Option<usize>,
    /// When it is closed if still unused.
    until: Instant,
}

/// The idle connections of one worker, every upstream's.
#[derive(Debug, Default)]
pub struct Pool {
    idle: Vec<Idle>,
}

/// A pool shared by the router (which hands it to each answer) and the
/// answers that give their connection back.
pub type Shared = Rc<RefCell<Pool>>;

/// What an answer needs to give its connection back.
#[derive(Debug, Clone)]
pub struct Keep {
    /// The worker's pool.
    pub pool: Shared,
    /// The upstream the connection goes to.
    pub to: Upstream,
    /// `keepalive`: idle connections kept to it at most.
    pub max: usize,
    /// `keepalive_timeout`.
    pub timeout: Duration,
}

impl Pool {
    /// An idle connection to `to` whose link `fits` (see
    /// [`Link::fits`]), if one is kept, with the token it is watched
    /// under; those past their time are closed. With `check`, for a
    /// request that could not go again on a new connection should this
    /// one turn out closed (RFC 9110 §9.2.2: a method not idempotent, or
    /// a body), only one found quiet (a system call); those found dead
    /// on the way are closed. (One that can go again finds out by
    /// sending, and goes again once: see `ProxyBody::try_again`.)
    /// The one still watched under the token `token` is taken first (no
    /// change of its token in the watch, a system call), else the last
    /// kept.
    pub fn take(
        &mut self,
        to: &Upstream,
        fits: impl Fn(&Link) -> bool,
        check: bool,
        token: usize,
        now: Instant,
    ) -> Option<(OwnedFd, Link, Option<usize>)> {
        self.prune(now);
        loop {
            let mut found = None;
            for (i, c) in self.idle.iter().enumerate().rev() {
                if c.to != *to || !fits(&c.link) {
                    continue;
                }
                found = found.or(Some(i));
                if c.watched == Some(token) {
                    found = Some(i);
                    break;
                }
            }
            // (Taken out in place: the others keep their order, the last
            // kept last.)
            let c = self.idle.remove(found?);
            if !check || net::is_quiet(&c.sock) {
                return Some((c.sock, c.link, c.watched));
            }
        }
    }

    /// Keeps `sock`, a connection to `keep.to` over `link` that may carry
    /// another request, unless `keep.max` are kept to it already (then it
    /// closes).
    pub fn put(&mut self, keep: &Keep, sock: OwnedFd, link: Link, now: Instant) {
        self.put_watched(keep, sock, link, None, now);
    }

    /// As [`Pool::put`], for a connection still watched under the token
    /// `watched`.
    pub fn put_watched(
        &mut self,
        keep: &Keep,
        sock: OwnedFd,
        link: Link,
        watched: Option<usize>,
        now: Instant,
    ) {
        self.prune(now);
        let kept = self.idle.iter().filter(|c| c.to == keep.to).count();
        if kept < keep.max {
            self.idle.push(Idle {
                to: keep.to.clone(),
                sock,
                link,
                watched,
                until: now + keep.timeout,
            });
        }
    }

    /// Closes the connections idle past their time.
    pub fn prune(&mut self, now: Instant) {
        self.idle.retain(|c| c.until > now);
    }

    /// How many connections are kept.
    pub fn len(&self) -> usize {
        self.idle.len()
    }

    /// None is kept.
    pub fn is_empty(&self) -> bool {
        self.idle.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::os::unix::net::UnixStream;
    use std::path::PathBuf;

    use super::*;

    fn keep(pool: &Shared, max: usize) -> Keep {
        Keep {
            pool: Rc::clone(pool),
            to: Upstream::Unix(PathBuf::from("/a.sock")),
            max,
            timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_kept_connection_is_reused_unless_its_upstream_spoke_or_left() {
        let pool: Shared = Rc::default();
        let k = keep(&pool, 8);
        let now = Instant::now();
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (ours2, mut theirs2) = UnixStream::pair().unwrap();
        let (ours3, theirs3) = UnixStream::pair().unwrap();
        let mut p = pool.borrow_mut();
        p.put(&k, OwnedFd::from(ours), Link::Plain, now);
        p.put(&k, OwnedFd::from(ours2), Link::Plain, now);
        p.put(&k, OwnedFd::from(ours3), Link::Plain, now);
        assert_eq!(p.len(), 3);
        theirs2.write_all(b"x").unwrap();
        drop(theirs3);
        let other = Upstream::Unix(PathBuf::from("/b.sock"));
        assert!(
            p.take(&other, |_| true, true, 0, now).is_none(),
            "another upstream's"
        );
        // (The last kept is tried first: it left, then the one that
        // spoke; the first is still there.)
        assert!(p.take(&k.to, |_| true, true, 0, now).is_some());
        assert!(p.is_empty());
        assert!(p.take(&k.to, |_| true, true, 0, now).is_none());
        drop(theirs);
    }

    #[test]
    fn without_a_check_the_last_kept_is_given_as_it_is_with_its_token() {
        let pool: Shared = Rc::default();
        let k = keep(&pool, 8);
        let now = Instant::now();
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (ours2, theirs2) = UnixStream::pair().unwrap();
        let mut p = pool.borrow_mut();
        p.put_watched(&k, OwnedFd::from(ours), Link::Plain, Some(7), now);
        p.put(&k, OwnedFd::from(ours2), Link::Plain, now);
        drop(theirs2);
        let (_, _, watched) = p.take(&k.to, |_| true, false, 0, now).unwrap();
        assert_eq!(watched, None, "the last kept, closed, not looked at");
        let (_, _, watched) = p.take(&k.to, |_| true, false, 0, now).unwrap();
        assert_eq!(watched, Some(7));
        drop(theirs);
    }

    #[test]
    fn the_one_watched_under_the_token_asked_is_taken_first_then_the_last_kept() {
        let pool: Shared = Rc::default();
        let k = keep(&pool, 8);
        let now = Instant::now();
        let mut ends = Vec::new();
        let mut p = pool.borrow_mut();
        for token in [3, 5, 7, 9] {
            let (ours, theirs) = UnixStream::pair().unwrap();
            ends.push(theirs);
            p.put_watched(&k, OwnedFd::from(ours), Link::Plain, Some(token), now);
        }
        let mut took = |token| p.take(&k.to, |_| true, false, token, now).unwrap().2;
        assert_eq!(took(5), Some(5), "the one watched under 5, from the middle");
        assert_eq!(took(4), Some(9), "none under 4: the last kept");
        assert_eq!(took(4), Some(7), "then the one kept before it");
        assert_eq!(took(3), Some(3));
    }

    #[test]
    fn at_most_keepalive_are_kept_and_none_past_their_time() {
        let pool: Shared = Rc::default();
        let now = Instant::now();
        let mut ends = Vec::new();
        for _ in 0..3 {
            let (ours, theirs) = UnixStream::pair().unwrap();
            ends.push(theirs);
            pool.borrow_mut()
                .put(&keep(&pool, 2), OwnedFd::from(ours), Link::Plain, now);
        }
        assert_eq!(pool.borrow().len(), 2);
        pool.borrow_mut().prune(now + Duration::from_secs(61));
        assert!(pool.borrow().is_empty());
        let (ours, _theirs) = UnixStream::pair().unwrap();
        pool.borrow_mut()
            .put(&keep(&pool, 0), OwnedFd::from(ours), Link::Plain, now);
        assert!(pool.borrow().is_empty(), "keepalive = 0 keeps none");
    }
}
