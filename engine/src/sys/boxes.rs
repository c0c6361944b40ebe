//! Boxes kept for the next value of their type: a warm proxied or
//! FastCGI request's plan and producer (most of a KiB each, made and
//! dropped once a request) go in the boxes the last ones went in, not in
//! new allocations (issue #27 asks for none a warm proxied request).
//!
//! A box is kept empty ([`Empty`]): its value is dropped when it is
//! given back ([`emptied`]), so a kept box holds nothing alive (no
//! descriptor, no rule of a configuration reloaded since), only its
//! memory.

use std::any::{Any, TypeId};
use std::mem::MaybeUninit;

/// A box whose value was dropped or moved out: memory for one `T`.
pub type Empty<T> = Box<MaybeUninit<T>>;

/// Drops `b`'s value, keeping its memory for another.
pub fn emptied<T>(b: Box<T>) -> Empty<T> {
    // SAFETY: `MaybeUninit<T>` has the size and alignment of `T`, so the
    // memory of a `Box<T>` is that of a `Box<MaybeUninit<T>>`; the value
    // in it is initialised, and is dropped once, here (the new box never
    // drops what it holds: should the drop panic, the unwinding frees the
    // memory alone).
    let mut empty: Empty<T> = unsafe { Box::from_raw(Box::into_raw(b).cast()) };
    // SAFETY: as above: initialised, and dropped this once.
    unsafe { empty.assume_init_drop() };
    empty
}

/// Moves `b`'s value out, keeping its memory for another.
pub fn take<T>(b: Box<T>) -> (T, Empty<T>) {
    // SAFETY: as in `emptied`; the value is read out once, and the new
    // box never drops it again.
    let empty: Empty<T> = unsafe { Box::from_raw(Box::into_raw(b).cast()) };
    // SAFETY: initialised; read this once, the box then counts as empty.
    let value = unsafe { empty.assume_init_read() };
    (value, empty)
}

/// Empty boxes of any type, kept for the next values of each (at most
/// [`MOST`] a type). The owner need not know the types (a worker's
/// upstream pool keeps the proxy's and FastCGI's).
#[derive(Default)]
pub struct Kept {
    kinds: Vec<(TypeId, Vec<Box<dyn Any>>)>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = self.kinds.iter().map(|(_, boxes)| boxes.len());
        f.debug_list().entries(counts).finish()
    }
}

/// Empty boxes kept at most of one type: as many as answers run at once
/// in a worker, as a rule (fifty clients at once in `bench/proxy`).
const MOST: usize = 64;

impl Kept {
    /// `value` in a box: a kept one if there is one.
    #[cfg(test)]
    pub fn boxed<T: 'static>(&mut self, value: T) -> Box<T> {
        Box::write(self.empty(), value)
    }

    /// An empty box for a `T`: a kept one if there is one. (A large value
    /// written into it where it is made, `Box::write(kept.empty(), T {
    /// .. })`, is made in place rather than on the stack and copied.)
    pub fn empty<T: 'static>(&mut self) -> Empty<T> {
        let id = TypeId::of::<T>();
        let kept = (self.kinds.iter_mut())
            .find(|(kind, _)| *kind == id)
            .and_then(|(_, boxes)| boxes.pop())
            .and_then(|b| b.downcast::<MaybeUninit<T>>().ok());
        kept.unwrap_or_else(Box::new_uninit)
    }

    /// Keeps `empty` for [`Kept::empty`], unless enough of its type are.
    pub fn keep<T: 'static>(&mut self, empty: Empty<T>) {
        let id = TypeId::of::<T>();
        let at = match self.kinds.iter().position(|(kind, _)| *kind == id) {
            Some(at) => at,
            None => {
                self.kinds.push((id, Vec::new()));
                self.kinds.len() - 1
            }
        };
        let boxes = &mut self.kinds[at].1;
        if boxes.len() < MOST {
            boxes.push(empty);
        }
    }

    /// Frees them all: the worker rests.
    pub fn clear(&mut self) {
        self.kinds = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn a_kept_box_holds_nothing_alive_and_serves_the_next_value() {
        let alive = Rc::new(());
        let b = Box::new((Rc::clone(&alive), [7u8; 100]));
        let at = std::ptr::from_ref(&*b).cast::<u8>();
        let mut spares = Kept::default();
        spares.keep(emptied(b));
        spares.keep(emptied(Box::new(5u32)));
        assert_eq!(Rc::strong_count(&alive), 1, "dropped when given back");
        let again = spares.boxed((Rc::clone(&alive), [9u8; 100]));
        assert_eq!(
            std::ptr::from_ref(&*again).cast::<u8>(),
            at,
            "the same memory"
        );
        assert_eq!(again.1, [9u8; 100]);
        let (value, empty) = take(again);
        assert_eq!(Rc::strong_count(&alive), 2, "moved out, not dropped");
        drop(value);
        spares.keep(empty);
        assert_eq!(Rc::strong_count(&alive), 1);
        assert!(spares.boxed((alive, [0; 100])).1 == [0; 100]);
    }

    #[test]
    fn no_more_than_most_are_kept_of_each_type() {
        let mut spares = Kept::default();
        for _ in 0..MOST + 5 {
            spares.keep(emptied(Box::new(1u64)));
            spares.keep(emptied(Box::new(1u8)));
        }
        assert_eq!(spares.kinds.len(), 2);
        assert!(spares.kinds.iter().all(|(_, boxes)| boxes.len() == MOST));
        assert_eq!(*spares.boxed(2u64), 2);
        spares.clear();
        assert!(spares.kinds.is_empty());
    }
}
