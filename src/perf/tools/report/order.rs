//! The order perf prints a table's rows in: the order of its collapsed tree (`hist_entry__collapse`), the
//! output comparison `hist_entry__sort` (not a total order), and a replay of the kernel's red-black tree that
//! perf inserts the rows into, so that rows equal to that comparison come out where perf puts them.
//!
//! Owns the comparisons of normal (non-branch) rows and `rb_order`; branch mode's comparison lives in
//! `branch.rs`, which replays its rows through the same tree.

use super::{Row, SortKey};

/// Whether a row's symbol text is an address (`[k] 0x…`, or `[k] 0000000000000000` for zero).
pub(super) fn unresolved_sym(v: &str) -> bool {
    v.get(4..)
        .is_some_and(|s| s.starts_with("0x") || s == "0000000000000000")
}

/// Whether a row's DSO is perf's NULL one (no map): sort.c's `cmp_null` puts it last.
fn no_dso(v: &str) -> bool {
    v == "[unknown]"
}

/// The order of perf's collapsed tree (`hist_entry__collapse`, ascending): comm and DSO names by `strcmp`, then
/// symbols by `sort__sym_cmp` (resolved before unresolved, then by start or address).
pub(super) fn collapse_cmp(
    sort: &[SortKey],
    a: &Row,
    a_sym: (bool, u64),
    b: &Row,
    b_sym: (bool, u64),
) -> std::cmp::Ordering {
    sort.iter()
        .enumerate()
        .map(|(i, k)| match k {
            SortKey::Dso => {
                let (x, y) = (&a.keys[i], &b.keys[i]);
                no_dso(x).cmp(&no_dso(y)).then(x.cmp(y))
            }
            // `_sort__addr_cmp`/`_sort__sym_cmp` take the sign of an s64 difference: addresses as signed.
            SortKey::Sym => (a_sym.0, a_sym.1 as i64).cmp(&(b_sym.0, b_sym.1 as i64)),
            _ => a.keys[i].cmp(&b.keys[i]),
        })
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// hist.c's `hist_entry__sort(new, old)` as `Greater` when `new` prints first: Children, then (within one
/// thread, with call graphs: `__hpp__sort_acc`'s "put caller above callee") the longer chain, then Self, then
/// each key by its `se_sort`: comm and DSO by name, symbols by name with every unresolved one equal to every
/// other (`cmp_null`), so that ties keep the insertion order.
pub(super) fn output_cmp(
    sort: &[SortKey],
    by_depth: bool,
    (a, a_tid, a_depth): (&Row, i32, usize),
    (b, b_tid, b_depth): (&Row, i32, usize),
) -> std::cmp::Ordering {
    a.children
        .cmp(&b.children)
        .then_with(|| {
            if by_depth && a_tid == b_tid {
                a_depth.cmp(&b_depth)
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .then(a.period.cmp(&b.period))
        // hist.c `__hpp__sort` of a group: then each member's share in turn.
        .then_with(|| a.members.cmp(&b.members))
        .then_with(|| {
            sort.iter()
                .enumerate()
                .map(|(i, k)| match k {
                    SortKey::Sym => {
                        let (x, y) = (a.keys[i].get(4..), b.keys[i].get(4..));
                        let unresolved = |s: Option<&str>| {
                            s.is_some_and(|s| s.starts_with("0x") || s == "0000000000000000")
                        };
                        match (unresolved(x), unresolved(y)) {
                            (true, true) => std::cmp::Ordering::Equal,
                            (ux, uy) => uy.cmp(&ux).then(y.cmp(&x)),
                        }
                    }
                    SortKey::Dso => {
                        let (x, y) = (&a.keys[i], &b.keys[i]);
                        no_dso(y).cmp(&no_dso(x)).then(y.cmp(x))
                    }
                    _ => b.keys[i].cmp(&a.keys[i]),
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
}

/// The in-order sequence of a red-black tree (the kernel's rbtree, as perf's `rb_insert_color`) after
/// inserting `0..n` in turn, a node going left of an existing one when `cmp(new, existing)` is `Greater`.
/// With a comparator that is not a total order the result depends on the tree's shape, so the shape is kept.
pub(super) fn rb_order(n: usize, cmp: impl Fn(usize, usize) -> std::cmp::Ordering) -> Vec<usize> {
    let mut tree = crate::perf::rbtree::RbTree::<()>::default();
    for new in 0..n {
        tree.insert_by((), |old, _| cmp(new, old) == std::cmp::Ordering::Greater);
    }
    tree.in_order()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rb_order_of_a_total_order_is_sorted_and_ties_keep_insertion_order() {
        let values: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 101).collect();
        let order = rb_order(values.len(), |new, old| values[new].cmp(&values[old]));
        let mut want: Vec<usize> = (0..values.len()).collect();
        want.sort_by(|&a, &b| values[b].cmp(&values[a]));
        assert_eq!(order, want);
    }
}
