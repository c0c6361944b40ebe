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
//! Closing it takes it out of the watch. The worker tells the pool of
//! every read event under a token ([`Pool::stir`]): an idle connection
//! the upstream spoke on (it closed it, or sent bytes nobody asked for:
//! an answer's late body, as a HEAD's from a broken application) is
//! checked before it is reused, and closed; those bytes never pass for
//! the next request's answer ("response queue poisoning"), as nginx
//! closes an idle connection that turns readable.

use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::link::Link;
use crate::config::Upstream;
use crate::handlers::relay::Socket;
use crate::spare::Spare;
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
    /// A read event came under its token since it was kept.
    stirred: bool,
}

/// The idle connections of one worker, every upstream's.
#[derive(Debug)]
pub struct Pool {
    idle: Vec<Idle>,
    /// Byte buffers an answer gave back (its request head, the answer's
    /// head), for the next ones ([`Pool::buffer`]): a warm request makes
    /// none of its own.
    spare: Spare<Vec<u8>, SPARES, SPARE_BYTES>,
    /// The large read buffer an answer gave back (a FastCGI answer's
    /// records are read in pieces of 64 KiB), for the next
    /// ([`Pool::read_buffer`]); freed when the worker rests.
    read: Vec<u8>,
    /// Bit `t % 64` for each token `t` an idle connection is watched
    /// under: most events are none of theirs, told so at once.
    tokens: u64,
    /// How many idle connections are watched under a token of each bit:
    /// [`Pool::tokens`] kept as connections come and go, with no walk
    /// through them (50 clients at once kept ~40 idle, walked four
    /// times a request).
    watching: [u32; 64],
    /// No idle connection's time is up before this (a bound: one taken
    /// since may have been the one).
    soonest: Option<Instant>,
    /// The boxes of the plans and producers of answers that ended (the
    /// proxy's, FastCGI's), for the next ones: a warm request makes none
    /// of its own.
    pub boxes: crate::sys::boxes::Kept,
}

/// Spare buffers kept at most ([`Pool::give_back`]): as many as the
/// answers under way at once need, as a rule (an answer gives back up to
/// four; with 64, fifty clients at once made ~6 new ones a request).
const SPARES: usize = 256;

/// Spare buffers kept once the worker rests ([`Pool::rest`]).
const RESTING_SPARES: usize = 8;

/// A buffer larger than this is not kept spare (one that held a long
/// head, or a request body on its way), so the spares hold at most
/// `SPARES` times this.
const SPARE_BYTES: usize = 4096;

/// The bit of `token` in [`Pool::tokens`].
fn bit(token: usize) -> u64 {
    1 << (token % 64)
}

/// A pool shared by the router (which hands it to each answer) and the
/// answers that give their connection back.
pub type Shared = Rc<RefCell<Pool>>;

/// The pool `keep` names, if any: where an answer's buffers and boxes
/// go back, and come from.
pub fn pool_of(keep: &Option<Keep>) -> Option<Shared> {
    keep.as_ref().map(|keep| Rc::clone(&keep.pool))
}

/// A buffer an answer before gave back to the pool `keep` names, if any
/// ([`Pool::give_back`]), or a new one.
pub fn spare_buffer(keep: &Option<Keep>) -> Vec<u8> {
    match keep {
        Some(keep) => keep.pool.borrow_mut().buffer(),
        None => Vec::new(),
    }
}

/// Keeps `buf` (the fields of an answer's head, written) in the pool
/// `keep` names, if any, for [`spare_buffer`].
pub fn give_back_to(keep: &Option<Keep>, buf: Vec<u8>) {
    if let Some(keep) = keep {
        keep.pool.borrow_mut().give_back(buf);
    }
}

/// An empty box for a `T`, one an answer before gave back to `pool`
/// ([`recycle`]) if any: `Box::write(empty_box(pool), T { .. })` makes a
/// large value in place.
pub fn empty_box<T: 'static>(pool: Option<&Shared>) -> crate::sys::boxes::Empty<T> {
    match pool {
        Some(pool) => pool.borrow_mut().boxes.empty(),
        None => Box::new_uninit(),
    }
}

/// Keeps `empty` (a box whose value was dropped or moved out) in `pool`,
/// if any, for [`empty_box`].
pub fn keep_box<T: 'static>(pool: Option<&Shared>, empty: crate::sys::boxes::Empty<T>) {
    if let Some(pool) = pool {
        pool.borrow_mut().boxes.keep(empty);
    }
}

/// Drops `b`'s value (an answer's producer, or its plan: a producer's
/// own `Drop` gives its buffers back first) and keeps its box in `pool`,
/// if any, for [`empty_box`].
pub fn recycle<T: 'static>(b: Box<T>, pool: Option<&Shared>) {
    keep_box(pool, crate::sys::boxes::emptied(b));
}

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

impl Keep {
    /// Keeps the connection `sock` uses, over `link`, for the next
    /// request, watched as it is (see [`Pool::put_watched`]): as soon as
    /// its answer was read whole, also while a slow client still takes
    /// what was read ahead for it.
    pub fn keep(&self, sock: &mut Socket, link: Link) {
        if let Some((fd, watched)) = sock.keep() {
            let now = crate::handlers::produce::now();
            (self.pool.borrow_mut()).put_watched(self, fd, link, watched, now);
        }
    }
}

impl Default for Pool {
    fn default() -> Pool {
        Pool {
            idle: Vec::new(),
            spare: Spare::default(),
            read: Vec::new(),
            tokens: 0,
            watching: [0; 64],
            soonest: None,
            boxes: Default::default(),
        }
    }
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
    /// One watched under `token` already, the token of the answer that
    /// takes it, is taken first: watched as it is, it costs that answer
    /// no change of its watch (`EPOLL_CTL_MOD`); else the last kept.
    pub fn take(
        &mut self,
        to: &Upstream,
        fits: impl Fn(&Link) -> bool,
        check: bool,
        now: Instant,
        token: Option<usize>,
    ) -> Option<(OwnedFd, Link, Option<usize>)> {
        self.prune(now);
        let usable = |c: &Idle| c.to == *to && fits(&c.link);
        while let Some(i) = token
            .and_then(|t| {
                self.idle
                    .iter()
                    .rposition(|c| c.watched == Some(t) && usable(c))
            })
            .or_else(|| self.idle.iter().rposition(usable))
        {
            // (Order is kept: the first kept is the one closed when full.)
            let c = self.idle.remove(i);
            self.unwatch(c.watched);
            if !(check || c.stirred) || net::is_quiet(&c.sock) {
                return Some((c.sock, c.link, c.watched));
            }
        }
        None
    }

    /// A read event came under `token`: the idle connections watched
    /// under it are checked before they are used again.
    pub fn stir(&mut self, token: usize) {
        if self.tokens & bit(token) == 0 {
            return;
        }
        for c in self.idle.iter_mut().filter(|c| c.watched == Some(token)) {
            c.stirred = true;
        }
    }

    /// An idle connection watched under `token` came.
    fn watch(&mut self, token: Option<usize>) {
        if let Some(t) = token {
            self.watching[t % 64] += 1;
            self.tokens |= bit(t);
        }
    }

    /// An idle connection watched under `token` went.
    fn unwatch(&mut self, token: Option<usize>) {
        if let Some(t) = token {
            self.watching[t % 64] -= 1;
            if self.watching[t % 64] == 0 {
                self.tokens &= !bit(t);
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
        if keep.max == 0 {
            return;
        }
        // Full: the one kept longest makes room (as nginx's `keepalive`
        // cache drops its least recently used), so that those kept are
        // the last used, whose tokens the next answers are likely to be
        // given (see [`Pool::take`]).
        // (Fewer kept in all than `max`: as few to this one, uncounted.)
        if self.idle.len() >= keep.max {
            let mut kept = self.idle.iter().filter(|c| c.to == keep.to);
            if kept.nth(keep.max - 1).is_some() {
                if let Some(oldest) = self.idle.iter().position(|c| c.to == keep.to) {
                    let c = self.idle.remove(oldest);
                    self.unwatch(c.watched);
                }
            }
        }
        let until = now + keep.timeout;
        self.soonest = Some(self.soonest.map_or(until, |s| s.min(until)));
        self.idle.push(Idle {
            to: keep.to.clone(),
            sock,
            link,
            watched,
            until,
            stirred: false,
        });
        self.watch(watched);
    }

    /// Closes the connections idle past their time.
    pub fn prune(&mut self, now: Instant) {
        if self.soonest.is_none_or(|s| s > now) {
            return;
        }
        self.idle.retain(|c| c.until > now);
        self.soonest = self.idle.iter().map(|c| c.until).min();
        let (mut tokens, mut watching) = (0, [0; 64]);
        for t in self.idle.iter().filter_map(|c| c.watched) {
            watching[t % 64] += 1;
            tokens |= bit(t);
        }
        (self.tokens, self.watching) = (tokens, watching);
    }

    /// An empty byte buffer: a spare one given back before, if any.
    pub fn buffer(&mut self) -> Vec<u8> {
        self.spare.take()
    }

    /// Keeps `buf`, emptied, for [`Pool::buffer`] (unless it has no room
    /// or too much, or enough are kept).
    pub fn give_back(&mut self, buf: Vec<u8>) {
        self.spare.keep(buf);
    }

    /// The large read buffer given back last, or an empty one.
    pub fn read_buffer(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.read)
    }

    /// Keeps `buf`, emptied, for [`Pool::read_buffer`], unless it holds
    /// more than `most` bytes or one as large is kept.
    pub fn give_back_read(&mut self, mut buf: Vec<u8>, most: usize) {
        if buf.capacity() <= most && buf.capacity() > self.read.capacity() {
            buf.clear();
            self.read = buf;
        }
    }

    /// Frees the large read buffer and most spare ones: the worker rests.
    pub fn rest(&mut self) {
        self.read = Vec::new();
        self.boxes.clear();
        self.spare.rest(RESTING_SPARES);
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
    use std::io::{Read as _, Write as _};
    use std::os::unix::net::UnixStream;
    use std::path::Path;

    use super::*;

    fn keep(pool: &Shared, max: usize) -> Keep {
        Keep {
            pool: Rc::clone(pool),
            to: Upstream::Unix(Path::new("/a.sock").into()),
            max,
            timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_connection_stirred_while_idle_is_checked_before_reuse() {
        let pool: Shared = Rc::default();
        let k = keep(&pool, 8);
        let now = Instant::now();
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let (ours2, _theirs2) = UnixStream::pair().unwrap();
        let mut p = pool.borrow_mut();
        p.put_watched(&k, OwnedFd::from(ours), Link::Plain, Some(5), now);
        p.put_watched(&k, OwnedFd::from(ours2), Link::Plain, Some(6), now);
        // Late bytes on the first; an event under another token with the
        // same bit (69 % 64) leaves it be, its own marks it.
        theirs.write_all(b"HTTP/1.1 200 OK\r\n").unwrap();
        p.stir(69);
        assert!(!p.idle[0].stirred);
        p.stir(5);
        assert!(p.idle[0].stirred && !p.idle[1].stirred);
        // Not checked for an idempotent request, it would be reused; it
        // is checked, found spoken on, and closed: the other one comes.
        let (_, _, watched) = p.take(&k.to, |_| true, false, now, Some(5)).unwrap();
        assert_eq!(watched, Some(6));
        assert!(p.is_empty());
        assert_eq!(p.tokens, 0);
        // (Closed with its bytes unread: a reset, or the end.)
        let mut rest = Vec::new();
        assert!(theirs
            .read_to_end(&mut rest)
            .map_or(true, |_| rest.is_empty()));
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
        let other = Upstream::Unix(Path::new("/b.sock").into());
        assert!(
            p.take(&other, |_| true, true, now, None).is_none(),
            "another upstream's"
        );
        // (The last kept is tried first: it left, then the one that
        // spoke; the first is still there.)
        assert!(p.take(&k.to, |_| true, true, now, None).is_some());
        assert!(p.is_empty());
        assert!(p.take(&k.to, |_| true, true, now, None).is_none());
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
        let (_, _, watched) = p.take(&k.to, |_| true, false, now, None).unwrap();
        assert_eq!(watched, None, "the last kept, closed, not looked at");
        let (_, _, watched) = p.take(&k.to, |_| true, false, now, None).unwrap();
        assert_eq!(watched, Some(7));
        drop(theirs);
    }

    /// A pool keeping `max` connections to `/a.sock`, given ones watched
    /// under `tokens` in that order; their other ends (non-blocking), and
    /// what it keeps them by.
    fn kept(max: usize, tokens: &[usize]) -> (Shared, Vec<UnixStream>, Keep) {
        let pool: Shared = Rc::default();
        let k = keep(&pool, max);
        let mut ends = Vec::new();
        for &token in tokens {
            let (ours, theirs) = UnixStream::pair().unwrap();
            theirs.set_nonblocking(true).unwrap();
            ends.push(theirs);
            let now = Instant::now();
            let mut p = pool.borrow_mut();
            p.put_watched(&k, OwnedFd::from(ours), Link::Plain, Some(token), now);
        }
        (pool, ends, k)
    }

    /// The token the connection `pool` gives for `to` is watched under,
    /// when the answer taking it has `token`.
    fn taken(pool: &Shared, to: &Upstream, token: Option<usize>) -> Option<usize> {
        let now = Instant::now();
        let mut p = pool.borrow_mut();
        p.take(to, |_| true, false, now, token).unwrap().2
    }

    #[test]
    fn one_watched_under_the_answers_token_is_taken_first() {
        let (pool, _ends, k) = kept(8, &[5, 7, 9]);
        assert_eq!(taken(&pool, &k.to, Some(7)), Some(7));
        let last = taken(&pool, &k.to, Some(4));
        assert_eq!(last, Some(9), "none under 4: the last kept");
        assert_eq!(taken(&pool, &k.to, None), Some(5));
        assert!(pool.borrow().is_empty());
    }

    #[test]
    fn a_full_pool_closes_the_one_kept_longest() {
        let (pool, ends, k) = kept(2, &[1, 2, 3]);
        assert_eq!(pool.borrow().len(), 2);
        let mut byte = [0u8; 1];
        assert_eq!((&ends[0]).read(&mut byte).unwrap(), 0, "the first, closed");
        assert_eq!(taken(&pool, &k.to, None), Some(3));
        assert_eq!(taken(&pool, &k.to, None), Some(2));
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

    /// The tokens watched and the soonest time kept as connections come
    /// and go, with no walk through them: one of two under the same bit
    /// taken, events under that bit still reach the other; a shorter
    /// timeout kept after a longer one still ends on time, and one taken
    /// leaves the others' times as they were.
    #[test]
    fn tokens_and_times_follow_the_connections_as_they_come_and_go() {
        let pool: Shared = Rc::default();
        let now = Instant::now();
        let keep_for = |secs| Keep {
            timeout: Duration::from_secs(secs),
            ..keep(&pool, 8)
        };
        let (long, short) = (keep_for(60), keep_for(10));
        let mut ends = Vec::new();
        let mut p = pool.borrow_mut();
        for (k, token) in [(&short, 3), (&long, 67), (&short, 4)] {
            let (ours, theirs) = UnixStream::pair().unwrap();
            ends.push(theirs);
            p.put_watched(k, OwnedFd::from(ours), Link::Plain, Some(token), now);
        }
        assert_eq!(
            p.take(&long.to, |_| true, false, now, Some(3)).unwrap().2,
            Some(3)
        );
        p.stir(67);
        assert!(p.idle[0].stirred, "67's bit, shared with 3, still set");
        assert!(!p.idle[1].stirred);
        p.prune(now + Duration::from_secs(11));
        assert_eq!(p.len(), 1, "the one kept for 10 s ended on time");
        assert_eq!(p.tokens, bit(67));
        p.prune(now + Duration::from_secs(59));
        assert_eq!(p.len(), 1);
        p.prune(now + Duration::from_secs(61));
        assert!(p.is_empty());
        assert_eq!((p.tokens, p.soonest), (0, None));
    }

    /// The large read buffer: the largest given back up to the bound is
    /// lent again, empty, once; none after a rest.
    #[test]
    fn the_read_buffer_is_lent_again_until_the_worker_rests() {
        let mut pool = Pool::default();
        assert_eq!(pool.read_buffer().capacity(), 0, "none given back yet");
        let mut buf = Vec::with_capacity(1000);
        buf.extend_from_slice(b"answer");
        pool.give_back_read(buf, 1000);
        pool.give_back_read(Vec::with_capacity(10), 1000);
        pool.give_back_read(Vec::with_capacity(1001), 1000);
        let again = pool.read_buffer();
        assert_eq!((again.len(), again.capacity()), (0, 1000));
        assert_eq!(pool.read_buffer().capacity(), 0, "lent once");
        pool.give_back_read(again, 1000);
        pool.rest();
        assert_eq!(pool.read_buffer().capacity(), 0, "freed by the rest");
    }

    #[test]
    fn a_buffer_given_back_is_given_again_empty_unless_too_large() {
        let mut pool = Pool::default();
        assert_eq!(pool.buffer().capacity(), 0, "none given back yet");
        let mut head = Vec::with_capacity(300);
        head.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        let at = head.as_ptr();
        pool.give_back(head);
        let again = pool.buffer();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), at, "the same buffer, not a new one");
        pool.give_back(Vec::with_capacity(SPARE_BYTES + 1));
        pool.give_back(Vec::new());
        assert_eq!(
            pool.buffer().capacity(),
            0,
            "a large one and an empty one are not kept"
        );
        for _ in 0..SPARES + 8 {
            pool.give_back(Vec::with_capacity(16));
        }
        assert_eq!(pool.spare.len(), SPARES);
    }
}
