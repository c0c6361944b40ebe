//! Memory kept for the next user: the buffers of answers that ended,
//! emptied and kept (at most so many, none larger than a bound) so that
//! a warm worker's requests make none of their own. One type for every
//! such list: the upstream pool's byte buffers, a FastCGI site's script
//! names, an HTTP/2 or HTTP/3 connection's body pieces, piece lists and
//! log lines.

use std::collections::VecDeque;

/// What can be kept spare: emptied, and measured by its capacity.
pub(crate) trait Reuse: Default {
    /// The elements it has room for.
    fn room(&self) -> usize;
    /// Empties it, its room kept.
    fn clear(&mut self);
}

impl<T> Reuse for Vec<T> {
    fn room(&self) -> usize {
        self.capacity()
    }
    fn clear(&mut self) {
        Vec::clear(self)
    }
}

impl<T> Reuse for VecDeque<T> {
    fn room(&self) -> usize {
        self.capacity()
    }
    fn clear(&mut self) {
        VecDeque::clear(self)
    }
}

/// At most `MOST` emptied values of `T`, none with room for more than
/// `ROOM` elements (one that held a long head or a large body is freed,
/// so a list holds at most `MOST × ROOM`), none with no room at all.
#[derive(Debug)]
pub(crate) struct Spare<T, const MOST: usize, const ROOM: usize> {
    kept: Vec<T>,
}

impl<T, const MOST: usize, const ROOM: usize> Default for Spare<T, MOST, ROOM> {
    fn default() -> Self {
        Spare { kept: Vec::new() }
    }
}

impl<T: Reuse, const MOST: usize, const ROOM: usize> Spare<T, MOST, ROOM> {
    /// An empty value: one kept, if any, or a new one (which allocates
    /// nothing until used).
    pub fn take(&mut self) -> T {
        self.kept.pop().unwrap_or_default()
    }

    /// Keeps `value`, emptied, for [`Spare::take`] (unless it has no
    /// room or too much, or `MOST` are kept).
    pub fn keep(&mut self, mut value: T) {
        if (1..=ROOM).contains(&value.room()) && self.kept.len() < MOST {
            value.clear();
            self.kept.push(value);
        }
    }

    /// How many are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Whether the list itself holds no memory (nothing was ever kept,
    /// or it was freed): a connection that lends its lists to the worker
    /// takes them back then.
    #[cfg(feature = "http2")]
    pub fn is_unallocated(&self) -> bool {
        self.kept.capacity() == 0
    }

    /// Frees all but `most` of them (and the list's room beyond): the
    /// worker rests.
    pub fn rest(&mut self, most: usize) {
        self.kept.truncate(most);
        self.kept.shrink_to_fit();
    }
}

impl<const MOST: usize, const ROOM: usize> Spare<Vec<u8>, MOST, ROOM> {
    /// `bytes` in a buffer kept, if any.
    pub fn copy(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = self.take();
        out.extend_from_slice(bytes);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_its_count_emptied_and_none_too_large_or_roomless() {
        let mut s: Spare<Vec<u8>, 2, 64> = Spare::default();
        s.keep(Vec::new());
        s.keep(vec![0; 65]);
        assert_eq!(s.len(), 0, "no room, or too much: freed");
        s.keep(b"abc".to_vec());
        let mut with_room = Vec::with_capacity(64);
        with_room.push(1);
        let at = with_room.as_ptr();
        s.keep(with_room);
        s.keep(vec![1]);
        assert_eq!(s.len(), 2, "at most MOST");
        let again = s.take();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), at, "the last kept comes first");
        assert_eq!(s.copy(b"xy"), b"xy");
        assert_eq!(s.len(), 0);
        assert_eq!(s.take().capacity(), 0, "a new one when none is kept");
    }

    #[test]
    fn resting_frees_all_but_the_few_asked_for() {
        let mut s: Spare<VecDeque<u8>, 8, 64> = Spare::default();
        for _ in 0..8 {
            s.keep(VecDeque::with_capacity(4));
        }
        s.rest(3);
        assert_eq!(s.len(), 3);
        s.rest(0);
        assert_eq!(s.len(), 0);
        assert!(s.kept.capacity() == 0);
    }
}
