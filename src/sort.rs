//! One sort for the engine's lists, so that the standard library's sort is
//! built once: each `slice::sort*` call on a type of its own makes a copy
//! of the whole algorithm (quicksort, its small-slice sorts, heapsort,
//! pivot choice: 5 to 8.5 KiB of machine code a type), and the
//! configuration's lists alone asked for six. [`sort_by`] sorts indices
//! with one instance of it, through a `dyn` comparison, and then moves the
//! elements into place (a few instructions a type). For lists read at
//! start (rules, paths, MIME types) and directory listings, where an
//! indirect call a comparison is nothing beside the work around it; not
//! for a request's hot path.

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
/// indices): the one instance of the standard library's sort. Ties are
/// broken by index, so the unstable sort orders as a stable one would.
#[inline(never)]
fn order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_unstable_by(|&a, &b| cmp(a, b).then(a.cmp(&b)));
    idx
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
        let mut words = vec!["pear", "apple", "fig", "apple", "kiwi"];
        sort_by(&mut words, |a, b| b.cmp(a));
        assert_eq!(words, ["pear", "kiwi", "fig", "apple", "apple"]);
    }
}
