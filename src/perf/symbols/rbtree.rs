//! The shape of perf's per-DSO symbol tree, to answer one question: which symbol perf's lookup meets first
//! where two symbols' ranges overlap.
//!
//! perf 6.1 keeps a DSO's symbols in a red-black tree keyed by start address (util/symbol.c
//! `__symbols__insert`: an equal start goes right), fixes zero sizes and drops aliases (`symbols__fixup_end`,
//! `symbols__fixup_duplicate`), and only then inserts the synthesized `NAME@plt` symbols
//! (`dso__synthesize_plt_symbols`). The zero-size `_init` before `.plt` has by then been stretched over the
//! whole PLT, so a PLT address lies in two symbols, and `symbols__find` returns the first one on its way down
//! from the root: `_init` when it is an ancestor of the `NAME@plt` node, else the `NAME@plt` symbol. On a small
//! program calling strcmp alone, perf prints `_init+0x30`; with twenty PLT entries, `_init+0x30` for the
//! first and `NAME@plt+0x0` for the others.
//!
//! This module replays those inserts and erases on the kernel's tree ([`crate::perf::rbtree`]) and walks it as
//! `symbols__find` does. It owns no symbols; [`super::elf`] feeds it starts and ranges.

use crate::perf::rbtree::RbTree;

/// perf's symbol tree: keyed by start, equal keys to the right. The ranges `symbols__find` compares with are the
/// caller's, asked for by node id during a walk: a large DSO's tree is replayed at the start of a run, its
/// memory fresh pages, and a copy of every end cost a sixth of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct SymbolTree {
    /// Keyed by start.
    tree: RbTree<u64>,
}

impl SymbolTree {
    /// An empty tree with room for `n` symbols.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            tree: RbTree::with_capacity(n),
        }
    }

    /// Inserts a symbol starting at `start` (`__symbols__insert`); returns its node id.
    pub(crate) fn insert(&mut self, start: u64) -> usize {
        self.tree.insert_by(start, |_, &p| start < p)
    }

    /// Removes node `id` (`rb_erase`).
    pub(crate) fn erase(&mut self, id: usize) {
        self.tree.erase(id);
    }

    /// The node `symbols__find(ip)` returns: the first on the way down whose range holds `ip` (a zero-size
    /// symbol holds its start). `end(id, start)` is the end of node `id`'s range.
    pub(crate) fn find(&self, ip: u64, end: impl Fn(usize, u64) -> u64) -> Option<usize> {
        let mut n = self.tree.root();
        while let Some(id) = n {
            let start = *self.tree.key(id);
            if ip < start {
                n = self.tree.left(id);
                continue;
            }
            let end = end(id, start);
            if ip > end || (ip == end && ip != start) {
                n = self.tree.right(id);
            } else {
                return Some(id);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_enclosing_node_on_the_way_down_is_found() {
        // _init at 0x1000 stretched to 0x1080 over the PLT.
        let mut t = SymbolTree::default();
        let mut ends = Vec::new();
        let init = t.insert(0x1000);
        let text = t.insert(0x1080);
        let main = t.insert(0x1100);
        ends.extend([0x1080, 0x1100, 0x1200]);
        assert_eq!((init, text, main), (0, 1, 2));
        // 0x1000 is a leaf under the root 0x1080: a PLT entry inserted now hangs below it, so _init is met
        // first.
        let plt = t.insert(0x1030);
        ends.push(0x1040);
        assert_eq!(t.find(0x1034, |id, _| ends[id]), Some(init));
        // The next entry's insertion rotates: 0x1030 rises above _init, and each entry is found itself.
        let plt2 = t.insert(0x1040);
        ends.push(0x1050);
        assert_eq!(plt2, 4);
        assert_eq!(t.find(0x1044, |id, _| ends[id]), Some(plt2));
        assert_eq!(t.find(0x1020, |id, _| ends[id]), Some(init));
        assert_eq!(t.find(0x1034, |id, _| ends[id]), Some(plt));
        // A range whose end is its start holds that address only: 0x1048 goes past the empty entry.
        let empty = |id: usize, start: u64| if id == plt2 { start } else { ends[id] };
        assert_eq!(t.find(0x1040, empty), Some(plt2));
        assert_ne!(t.find(0x1048, empty), Some(plt2));
    }
}
