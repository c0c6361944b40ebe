//! A worker's connections, in a slab: connection `i` lives in slot `i`
//! (its epoll token), and the slot of a closed connection is the next
//! one's. Each lives in a box of its own, allocated when it opens: a
//! connection is taken out of its slot and put back for every event
//! (to be driven while the worker is borrowed), and a pointer moves
//! where the whole connection would be copied twice (four `memcpy`s, 160
//! instructions a keep-alive request, callgrind).

use super::Conn;

/// Slots of connections; a slot is empty while its connection is being
/// driven (taken out), and once it is closed.
pub(super) struct Slab<T = Conn> {
    slots: Vec<Option<Box<T>>>,
    /// Slots free for the next connection.
    free: Vec<usize>,
    /// Connections open (whether in their slot or taken out).
    live: usize,
}

impl<T> Slab<T> {
    /// No slot.
    pub(super) fn new() -> Slab<T> {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// A slot for a new connection: a free one, else a new one at the end.
    pub(super) fn reserve(&mut self) -> usize {
        match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        }
    }

    /// Slot `i`, reserved, is not used after all.
    pub(super) fn unreserve(&mut self, i: usize) {
        self.free.push(i);
    }

    /// Puts new connection `conn` in its reserved slot `i`.
    pub(super) fn insert(&mut self, i: usize, conn: T) {
        self.slots[i] = Some(Box::new(conn));
        self.live += 1;
    }

    /// The connection closed in slot `i` (taken out) is gone: the slot is
    /// free for the next.
    pub(super) fn free(&mut self, i: usize) {
        self.free.push(i);
        self.live -= 1;
    }

    /// Connection `i`, if it is in its slot.
    pub(super) fn get(&self, i: usize) -> Option<&T> {
        self.slots.get(i).and_then(Option::as_deref)
    }

    /// Connection `i`, if it is in its slot.
    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.slots.get_mut(i).and_then(Option::as_deref_mut)
    }

    /// Takes connection `i` out of its slot (to drive or close it).
    pub(super) fn take(&mut self, i: usize) -> Option<Box<T>> {
        self.slots.get_mut(i).and_then(Option::take)
    }

    /// Puts connection `i`, taken out, back in its slot.
    pub(super) fn put(&mut self, i: usize, conn: Box<T>) {
        self.slots[i] = Some(conn);
    }

    /// How many slots there are (connection indexes are below).
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// How many connections are open.
    pub(super) fn live(&self) -> usize {
        self.live
    }

    /// The connections in their slots.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten().map(|c| &**c)
    }

    /// Frees the tail of slots that only closed connections used (the
    /// slots of connections still open stay where they are).
    pub(super) fn shrink(&mut self) {
        while matches!(self.slots.last(), Some(None)) {
            self.slots.pop();
        }
        let n = self.slots.len();
        self.free.retain(|&i| i < n);
        self.slots.shrink_to_fit();
        self.free.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(slab: &mut Slab<&'static str>, conn: &'static str) -> usize {
        let i = slab.reserve();
        slab.insert(i, conn);
        i
    }

    #[test]
    fn insert_take_and_put_back() {
        let mut slab = Slab::new();
        assert_eq!(open(&mut slab, "a"), 0);
        assert_eq!(open(&mut slab, "b"), 1);
        assert_eq!(slab.live(), 2);
        assert_eq!(slab.get(1), Some(&"b"));
        assert_eq!(slab.take(1).map(|b| *b), Some("b"));
        // (Taken out to be driven: still open, its slot empty.)
        assert_eq!(slab.get(1), None);
        assert_eq!(slab.take(1).map(|b| *b), None);
        assert_eq!(slab.live(), 2);
        slab.put(1, Box::new("b"));
        *slab.get_mut(1).unwrap() = "b2";
        assert_eq!(slab.iter().copied().collect::<Vec<_>>(), ["a", "b2"]);
        assert_eq!(slab.get(7), None);
        assert_eq!(slab.take(7).map(|b| *b), None);
    }

    #[test]
    fn a_freed_slot_is_the_next_connections() {
        let mut slab = Slab::new();
        for c in ["a", "b", "c"] {
            open(&mut slab, c);
        }
        slab.take(1);
        slab.free(1);
        assert_eq!(slab.live(), 2);
        assert_eq!(open(&mut slab, "d"), 1);
        assert_eq!(open(&mut slab, "e"), 3);
        assert_eq!(slab.slots(), 4);
        assert_eq!(slab.live(), 4);
        // A slot reserved and not used is free again.
        let i = slab.reserve();
        slab.unreserve(i);
        assert_eq!(slab.reserve(), i);
        assert_eq!(slab.live(), 4);
    }

    #[test]
    fn shrink_drops_the_closed_tail_only() {
        let mut slab = Slab::new();
        for c in ["a", "b", "c", "d"] {
            open(&mut slab, c);
        }
        for i in [0, 2, 3] {
            slab.take(i);
            slab.free(i);
        }
        slab.shrink();
        assert_eq!(slab.slots(), 2);
        assert_eq!(slab.get(1), Some(&"b"));
        // Only the freed slot below the end is left to reuse.
        assert_eq!(slab.reserve(), 0);
        assert_eq!(slab.reserve(), 2);
    }
}
