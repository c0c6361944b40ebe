//! One sort for the engine's lists, so that no sort is built per type:
//! each `slice::sort*` call on a type of its own makes a copy of the
//! standard library's whole algorithm (quicksort, its small-slice sorts,
//! heapsort, pivot choice: 3.4 to 8.5 KiB of machine code a type at
//! opt-level 3), and the configuration's lists alone asked for six.
//! [`sort_by`] heapsorts indices through a `dyn` comparison (one small
//! function for every type) and then swaps the elements into place (a
//! few instructions a type). For lists read at start (rules, paths, MIME
//! types) and directory listings, where an indirect call a comparison is
//! nothing beside the work around it; not for a request's hot path.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably (equal elements keep their order).
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let order = order(v.len(), &mut |a, b| cmp(&v[a], &v[b]));
    permute(v, order);
}

/// Sorts `v` by the key `key` gives, stably.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Which of `n` elements comes where once sorted by `cmp` (on their
/// indices). Ties are broken by index, so that the order is total and
/// the (unstable) heapsort orders as a stable sort would; O(n log n)
/// comparisons, no allocation but the indices.
#[inline(never)]
fn order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    let mut less = |a: usize, b: usize| cmp(a, b).then(a.cmp(&b)) == Ordering::Less;
    // A max-heap of the indices, then the greatest to the end, in turn.
    for root in (0..n / 2).rev() {
        sift_down(&mut idx, root, &mut less);
    }
    for end in (1..n).rev() {
        idx.swap(0, end);
        sift_down(&mut idx[..end], 0, &mut less);
    }
    idx
}

/// Moves `heap[root]` down until neither child is greater.
fn sift_down(heap: &mut [usize], mut root: usize, less: &mut dyn FnMut(usize, usize) -> bool) {
    loop {
        let mut child = 2 * root + 1;
        if child >= heap.len() {
            return;
        }
        if child + 1 < heap.len() && less(heap[child], heap[child + 1]) {
            child += 1;
        }
        if !less(heap[root], heap[child]) {
            return;
        }
        heap.swap(root, child);
        root = child;
    }
}

/// Puts element `order[i]` of `v` at `i`, cycle by cycle (each element is
/// swapped once at most).
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..v.len() {
        let mut at = start;
        loop {
            let from = std::mem::replace(&mut order[at], DONE);
            if from == start || from == DONE {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every permutation of up to 6 elements (with repeated keys) sorts as
    /// the standard library's stable sort does.
    #[test]
    fn sorts_as_the_stable_sort_does() {
        fn perms(n: usize) -> Vec<Vec<usize>> {
            if n == 0 {
                return vec![vec![]];
            }
            let mut out = Vec::new();
            for p in perms(n - 1) {
                for i in 0..n {
                    let mut q = p.clone();
                    q.insert(i, n - 1);
                    out.push(q);
                }
            }
            out
        }
        for n in 0..=6 {
            for p in perms(n) {
                // (key, original position): keys repeat, so stability shows.
                let items: Vec<(usize, usize)> =
                    p.iter().enumerate().map(|(i, &k)| (k / 2, i)).collect();
                let mut ours = items.clone();
                sort_by_key(&mut ours, |&(k, _)| k);
                let mut std = items;
                std.sort_by_key(|&(k, _)| k);
                assert_eq!(ours, std);
            }
        }
        // Longer lists, keys from a linear congruential generator.
        let mut x = 12345u32;
        for n in [7, 100, 1000, 4097] {
            let items: Vec<(u32, usize)> = (0..n)
                .map(|i| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    ((x >> 16) % (n as u32 / 3 + 1), i)
                })
                .collect();
            let mut ours = items.clone();
            sort_by_key(&mut ours, |&(k, _)| k);
            let mut std = items;
            std.sort_by_key(|&(k, _)| k);
            assert_eq!(ours, std);
        }
        let mut words = vec!["pear", "apple", "fig", "apple", "kiwi"];
        sort_by(&mut words, |a, b| b.cmp(a));
        assert_eq!(words, ["pear", "kiwi", "fig", "apple", "apple"]);
    }
}
