//! Stable sorts through one compiled sort. The standard library's stable sort is compiled anew
//! for every element type and comparison (about 3 KB of wasm each, a dozen in the crate); here
//! each call sorts the positions 0..n (one compiled unstable sort of `usize`, the comparison
//! passed by reference, ties broken by position: hence stable) and then moves the elements into
//! that order, the only part compiled per type (a few swaps).

use std::cmp::Ordering;

/// `items` sorted stably by `compare`, as `slice::sort_by` sorts them.
pub fn sort_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let order = sorted_positions(items.len(), &mut |a, b| compare(&items[a], &items[b]));
    permute(items, order);
}

/// `items` sorted stably by `key`, as `slice::sort_by_key` sorts them.
pub fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// `items` sorted stably, as `slice::sort` sorts them.
pub fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

#[inline(never)]
fn sorted_positions(n: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| compare(a, b).then(a.cmp(&b)));
    order
}

/// Reorders `items` so that position `i` holds what was at `order[i]`, one cycle at a time.
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    for start in 0..items.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sorts_as_the_standard_stable_sort(items in proptest::collection::vec((0u8..6, any::<u16>()), 0..200)) {
            let mut ours = items.clone();
            let mut theirs = items.clone();
            sort_by_key(&mut ours, |&(key, _)| key);
            theirs.sort_by_key(|&(key, _)| key);
            prop_assert_eq!(&ours, &theirs, "equal keys keep their order");
            let (mut ours, mut theirs) = (items.clone(), items);
            sort(&mut ours);
            theirs.sort();
            prop_assert_eq!(ours, theirs);
        }
    }
}
