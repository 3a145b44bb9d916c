//! The order perf prints a table's rows in: the order of its collapsed tree (`hist_entry__collapse`), the
//! output comparison `hist_entry__sort` (not a total order), and a replay of the kernel's red-black tree that
//! perf inserts the rows into, so that rows equal to that comparison come out where perf puts them.
//!
//! Owns the comparisons of normal (non-branch) rows and `rb_order`; branch mode's comparison lives in
//! `branch.rs`, which replays its rows through the same tree.

use super::{EntryKey, Row, SortKey, SymKey};
use crate::perf::rbtree::RbTree;
use std::cmp::Ordering;
use std::rc::Rc;

/// Whether a row's symbol text is an address (`[k] 0x…`, or `[k] 0000000000000000` for zero).
pub(super) fn unresolved_sym(v: &str) -> bool {
    v.get(4..)
        .is_some_and(|s| s.starts_with("0x") || s == "0000000000000000")
}

/// Whether a row's DSO is perf's NULL one (no map): sort.c's `cmp_null` puts it last.
fn no_dso(v: &str) -> bool {
    v == "[unknown]"
}

/// hist.c's `hist_entry__cmp(existing, new)` (and `hist_entry__collapse`, the same for these keys) as perf
/// descends its trees of entries: `Less` sends `new` left of `existing`, `Equal` is the same entry. Comm and
/// DSO names by `strcmp` (a DSO-less entry last); symbols by `sort__sym_cmp`, a resolved one before an
/// unresolved one, resolved ones by start, unresolved ones by `_sort__addr_cmp`: the sign of the *wrapped*
/// difference `(int64_t)(new - existing)`. That last one is not an order: callchains of code without frame
/// pointers carry stack garbage as return addresses (`0x8000000000000017`, `0x7f02af823f18`, ...), and two
/// addresses more than 2^63 apart compare the other way round, so the tree's shape decides where a row goes.
pub(super) fn hist_cmp(sort: &[SortKey], existing: &EntryKey, new: &EntryKey) -> Ordering {
    // Names are shared per thread and per DSO: most comparisons on a tree's path meet the same `Rc`.
    fn names(existing: &Option<Rc<str>>, new: &Option<Rc<str>>, null_last: bool) -> Ordering {
        match (existing, new) {
            (Some(e), Some(n)) if Rc::ptr_eq(e, n) => Ordering::Equal,
            _ if null_last => {
                let null = |d: &Option<Rc<str>>| d.as_deref().is_none_or(no_dso);
                null(new)
                    .cmp(&null(existing))
                    .then_with(|| new.cmp(existing))
            }
            _ => new.cmp(existing),
        }
    }
    for k in sort {
        let o = match k {
            SortKey::Comm => names(&existing.comm, &new.comm, false),
            SortKey::Pid => new.pid.cmp(&existing.pid),
            SortKey::Dso => names(&existing.dso, &new.dso, true),
            SortKey::Sym => match (&existing.sym, &new.sym) {
                (Some(SymKey::Addr(e)), Some(SymKey::Addr(n))) => {
                    (n.wrapping_sub(*e) as i64).cmp(&0)
                }
                _ if sym_dsos(existing, new).is_ne() => sym_dsos(existing, new),
                (Some(SymKey::Addr(_)), _) => Ordering::Less,
                (_, Some(SymKey::Addr(_))) => Ordering::Greater,
                (Some(SymKey::Name(en, ei, es)), Some(SymKey::Name(nn, ni, ns))) => {
                    // `_sort__sym_cmp`: inline nodes by name first (`strcmp(left, right)`), then by start.
                    let by_name = if *ei || *ni {
                        en.cmp(nn)
                    } else {
                        Ordering::Equal
                    };
                    by_name
                        .then_with(|| (ns.wrapping_sub(*es) as i64).cmp(&0))
                        // Two symbols at one start are one symbol to perf; bport names a symbol once per
                        // start, so this only keeps the tree consistent with the entries' keys.
                        .then_with(|| nn.cmp(en))
                        .then_with(|| ni.cmp(ei))
                }
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
            },
            // sort.c `sort__trace_cmp`: `strcmp(right, left)`; events that are not tracepoints compare equal.
            SortKey::Trace => match (&existing.trace, &new.trace) {
                (Some(e), Some(n)) => n.as_bytes().cmp(e.as_bytes()),
                _ => Ordering::Equal,
            },
            _ => Ordering::Equal,
        };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
}

/// perf 6.1's `sort__sym_cmp` compares the DSOs (`sort__dso_cmp`: short names, a map-less entry last) before
/// the symbols whenever one of them is resolved.
fn sym_dsos(existing: &EntryKey, new: &EntryKey) -> Ordering {
    match (&existing.sym_dso, &new.sym_dso) {
        (Some(e), Some(n)) if Rc::ptr_eq(e, n) => Ordering::Equal,
        (e, n) => {
            let null = |d: &Option<Rc<str>>| d.as_deref().is_none_or(no_dso);
            null(n).cmp(&null(e)).then_with(|| n.cmp(e))
        }
    }
}

/// Looks `key` up in a tree of entries as perf's `hists__findnew_entry` does, descending by [`hist_cmp`]. A
/// search that missed an equal entry in a tree not built by an order would make perf add a second one
/// (merged later, in `hists__collapse_resort`); searching the way perf does keeps that case perf's too.
/// `visit` sees every node the search compares `key` with.
pub(super) fn tree_find<'a>(
    tree: &RbTree<()>,
    sort: &[SortKey],
    key_of: impl Fn(usize) -> &'a EntryKey,
    key: &EntryKey,
    mut visit: impl FnMut(usize),
) -> Option<usize> {
    let mut at = tree.root();
    while let Some(n) = at {
        visit(n);
        at = match hist_cmp(sort, key_of(n), key) {
            Ordering::Equal => return Some(n),
            Ordering::Less => tree.left(n),
            Ordering::Greater => tree.right(n),
        };
    }
    None
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
    rb_order_then(n, cmp, |_| {})
}

/// [`rb_order`], calling `inserted` with each node right after its insertion (where perf sizes its columns).
pub(super) fn rb_order_then(
    n: usize,
    cmp: impl Fn(usize, usize) -> std::cmp::Ordering,
    mut inserted: impl FnMut(usize),
) -> Vec<usize> {
    let mut tree = crate::perf::rbtree::RbTree::<()>::default();
    for new in 0..n {
        tree.insert_by((), |old, _| cmp(new, old) == std::cmp::Ordering::Greater);
        inserted(new);
    }
    tree.in_order()
}

/// Whether comparing two entries by `sort` reaches the `trace` key, given whether the keys before it compare
/// equal: sort.c's `sort__trace_cmp` renders both entries' trace lines then (`he->trace_output`), and only an
/// entry whose line is rendered when hist.c sizes its columns widens the `Trace output` column.
pub(super) fn reaches_trace(sort: &[SortKey], before_equal: impl Fn(&[SortKey]) -> bool) -> bool {
    sort.iter()
        .position(|k| *k == SortKey::Trace)
        .is_some_and(|at| before_equal(&sort[..at]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(a: u64) -> EntryKey {
        EntryKey {
            comm: Some(Rc::from("cc1plus")),
            pid: None,
            dso: Some(Rc::from("[unknown]")),
            sym: Some(SymKey::Addr(a)),
            sym_dso: None,
            trace: None,
        }
    }

    /// Under `--sort sym` (no `dso` key) perf's `sort__sym_cmp` compares DSOs first: `libz`'s symbol at a
    /// low start and `libc`'s at a high one order by DSO name, against their starts; two unresolved
    /// addresses still compare by address alone, whatever their DSOs.
    #[test]
    fn symbols_compare_their_dsos_first_without_a_dso_key() {
        let sort = [SortKey::Sym];
        let named = |dso: &str, name: &str, start: u64| EntryKey {
            comm: None,
            pid: None,
            dso: None,
            sym: Some(SymKey::Name(Rc::from(name), false, start)),
            sym_dso: Some(Rc::from(dso)),
            trace: None,
        };
        let (libc, libz) = (
            named("libc.so.6", "f", 0x9000),
            named("libz.so.1", "f", 0x1000),
        );
        // `new` libz against `existing` libc: strcmp("libz", "libc") > 0, though its start is lower.
        assert_eq!(hist_cmp(&sort, &libc, &libz), Ordering::Greater);
        assert_eq!(hist_cmp(&sort, &libz, &libc), Ordering::Less);
        let unresolved = |dso: &str| EntryKey {
            sym: Some(SymKey::Addr(0x40)),
            ..named(dso, "", 0)
        };
        assert_eq!(
            hist_cmp(&sort, &unresolved("a"), &unresolved("b")),
            Ordering::Equal
        );
        // A resolved symbol against an unresolved address: the DSOs decide before `cmp_null`.
        assert_eq!(
            hist_cmp(&sort, &unresolved("libc.so.6"), &libz),
            Ordering::Greater
        );
        // One DSO: `cmp_null` puts the unresolved (`existing`, NULL symbol) side first.
        assert_eq!(
            hist_cmp(&sort, &unresolved("libz.so.1"), &libz),
            Ordering::Less
        );
    }

    /// Three stack-garbage addresses 2^62 apart form a cycle under perf's `_sort__addr_cmp`, so where each
    /// lands depends on what the tree meets on the way down; a resolved symbol still goes before them all.
    #[test]
    fn unresolved_addresses_compare_by_their_wrapped_difference() {
        let sort = [SortKey::Comm, SortKey::Dso, SortKey::Sym];
        let (a, b, c) = (0x10, 0x7000_0000_0000_0000, 0xe000_0000_0000_0000);
        assert_eq!(hist_cmp(&sort, &addr(a), &addr(b)), Ordering::Greater);
        assert_eq!(hist_cmp(&sort, &addr(b), &addr(c)), Ordering::Greater);
        assert_eq!(hist_cmp(&sort, &addr(c), &addr(a)), Ordering::Greater);
        assert_eq!(hist_cmp(&sort, &addr(a), &addr(a)), Ordering::Equal);
        let resolved = EntryKey {
            sym: Some(SymKey::Name(Rc::from("main"), false, 0x1000)),
            ..addr(0)
        };
        assert_eq!(hist_cmp(&sort, &addr(c), &resolved), Ordering::Less);
        assert_eq!(hist_cmp(&sort, &resolved, &addr(a)), Ordering::Greater);
        // Inserted c, b, a: b goes left of c (b - c wraps to negative), a right of c (a - c wraps to
        // positive): the tree's order is b, c, a, which neither a signed nor an unsigned sort gives.
        let keys = [addr(c), addr(b), addr(a)];
        let mut tree = RbTree::<()>::default();
        for k in &keys {
            tree.insert_by((), |n, _| hist_cmp(&sort, &keys[n], k) == Ordering::Less);
        }
        assert_eq!(tree.in_order(), [1, 0, 2]);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(tree_find(&tree, &sort, |n| &keys[n], k, |_| {}), Some(i));
        }
        assert_eq!(
            tree_find(&tree, &sort, |n| &keys[n], &addr(0x20), |_| {}),
            None
        );
    }

    #[test]
    fn rb_order_of_a_total_order_is_sorted_and_ties_keep_insertion_order() {
        let values: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 101).collect();
        let order = rb_order(values.len(), |new, old| values[new].cmp(&values[old]));
        let mut want: Vec<usize> = (0..values.len()).collect();
        want.sort_by(|&a, &b| values[b].cmp(&values[a]));
        assert_eq!(order, want);
    }
}
