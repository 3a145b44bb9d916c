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
//! This module replays those inserts and erases with the same algorithm (lib/rbtree.c is the textbook
//! red-black tree: CLRS insertion, and deletion that moves in the in-order successor) and walks the tree as
//! `symbols__find` does. It owns no symbols; [`super::elf`] feeds it starts and ranges.

/// A node: a symbol's start and, once ends are known, its range.
#[derive(Clone, Copy, Debug)]
struct Node {
    start: u64,
    end: u64,
    red: bool,
    parent: Option<usize>,
    left: Option<usize>,
    right: Option<usize>,
}

/// A red-black tree keyed by start, equal keys to the right, as perf's symbol tree.
#[derive(Clone, Debug, Default)]
pub(crate) struct SymbolTree {
    nodes: Vec<Node>,
    root: Option<usize>,
}

impl SymbolTree {
    /// Inserts a symbol starting at `start` (`__symbols__insert` + `rb_insert_color`); returns its node id.
    pub(crate) fn insert(&mut self, start: u64) -> usize {
        let id = self.nodes.len();
        let mut parent = None;
        let mut link = self.root;
        let mut go_left = false;
        while let Some(p) = link {
            parent = Some(p);
            go_left = start < self.nodes[p].start;
            link = if go_left {
                self.nodes[p].left
            } else {
                self.nodes[p].right
            };
        }
        self.nodes.push(Node {
            start,
            end: start,
            red: true,
            parent,
            left: None,
            right: None,
        });
        match parent {
            None => self.root = Some(id),
            Some(p) if go_left => self.nodes[p].left = Some(id),
            Some(p) => self.nodes[p].right = Some(id),
        }
        self.insert_fixup(id);
        id
    }

    /// The start of node `id`.
    pub(crate) fn start(&self, id: usize) -> u64 {
        self.nodes[id].start
    }

    /// Sets the range `symbols__find` compares with.
    pub(crate) fn set_end(&mut self, id: usize, end: u64) {
        self.nodes[id].end = end;
    }

    /// The node `symbols__find(ip)` returns: the first on the way down whose range holds `ip` (a zero-size
    /// symbol holds its start).
    pub(crate) fn find(&self, ip: u64) -> Option<usize> {
        let mut n = self.root;
        while let Some(id) = n {
            let s = &self.nodes[id];
            if ip < s.start {
                n = s.left;
            } else if ip > s.end || (ip == s.end && ip != s.start) {
                n = s.right;
            } else {
                return Some(id);
            }
        }
        None
    }

    fn red(&self, n: Option<usize>) -> bool {
        n.is_some_and(|n| self.nodes[n].red)
    }

    fn rotate_left(&mut self, x: usize) {
        let y = self.nodes[x]
            .right
            .expect("rotate_left needs a right child");
        let yl = self.nodes[y].left;
        self.nodes[x].right = yl;
        if let Some(yl) = yl {
            self.nodes[yl].parent = Some(x);
        }
        self.replace_child(x, y);
        self.nodes[y].left = Some(x);
        self.nodes[x].parent = Some(y);
    }

    fn rotate_right(&mut self, x: usize) {
        let y = self.nodes[x].left.expect("rotate_right needs a left child");
        let yr = self.nodes[y].right;
        self.nodes[x].left = yr;
        if let Some(yr) = yr {
            self.nodes[yr].parent = Some(x);
        }
        self.replace_child(x, y);
        self.nodes[y].right = Some(x);
        self.nodes[x].parent = Some(y);
    }

    /// Puts `new` where `old` hangs (under `old`'s parent, or as the root).
    fn replace_child(&mut self, old: usize, new: usize) {
        let parent = self.nodes[old].parent;
        self.nodes[new].parent = parent;
        match parent {
            None => self.root = Some(new),
            Some(p) if self.nodes[p].left == Some(old) => self.nodes[p].left = Some(new),
            Some(p) => self.nodes[p].right = Some(new),
        }
    }

    fn insert_fixup(&mut self, mut z: usize) {
        while let Some(p) = self.nodes[z].parent.filter(|&p| self.nodes[p].red) {
            let g = self.nodes[p].parent.expect("a red node has a parent");
            if self.nodes[g].left == Some(p) {
                let uncle = self.nodes[g].right;
                if self.red(uncle) {
                    self.nodes[p].red = false;
                    self.nodes[uncle.expect("red")].red = false;
                    self.nodes[g].red = true;
                    z = g;
                    continue;
                }
                let mut p = p;
                if self.nodes[p].right == Some(z) {
                    self.rotate_left(p);
                    z = p;
                    p = self.nodes[z].parent.expect("rotated under a parent");
                }
                self.nodes[p].red = false;
                self.nodes[g].red = true;
                self.rotate_right(g);
            } else {
                let uncle = self.nodes[g].left;
                if self.red(uncle) {
                    self.nodes[p].red = false;
                    self.nodes[uncle.expect("red")].red = false;
                    self.nodes[g].red = true;
                    z = g;
                    continue;
                }
                let mut p = p;
                if self.nodes[p].left == Some(z) {
                    self.rotate_right(p);
                    z = p;
                    p = self.nodes[z].parent.expect("rotated under a parent");
                }
                self.nodes[p].red = false;
                self.nodes[g].red = true;
                self.rotate_left(g);
            }
        }
        let root = self.root.expect("a tree with a node has a root");
        self.nodes[root].red = false;
    }

    /// Removes node `z` (`rb_erase`): a node with two children is replaced by its in-order successor, which
    /// takes its colour.
    pub(crate) fn erase(&mut self, z: usize) {
        let (zl, zr) = (self.nodes[z].left, self.nodes[z].right);
        // (the child that moves up, its new parent, whether a black node left the tree)
        let (x, x_parent, removed_black) = match (zl, zr) {
            (None, _) | (_, None) => {
                let child = zl.or(zr);
                let parent = self.nodes[z].parent;
                match child {
                    Some(c) => self.replace_child(z, c),
                    None => match parent {
                        None => self.root = None,
                        Some(p) if self.nodes[p].left == Some(z) => self.nodes[p].left = None,
                        Some(p) => self.nodes[p].right = None,
                    },
                }
                (child, parent, !self.nodes[z].red)
            }
            (Some(l), Some(r)) => {
                let mut y = r;
                while let Some(yl) = self.nodes[y].left {
                    y = yl;
                }
                let y_black = !self.nodes[y].red;
                let x = self.nodes[y].right;
                let x_parent;
                if y == r {
                    x_parent = y;
                } else {
                    x_parent = self.nodes[y].parent.expect("below r");
                    self.nodes[x_parent].left = x;
                    if let Some(x) = x {
                        self.nodes[x].parent = Some(x_parent);
                    }
                    self.nodes[y].right = Some(r);
                    self.nodes[r].parent = Some(y);
                }
                self.replace_child(z, y);
                self.nodes[y].left = Some(l);
                self.nodes[l].parent = Some(y);
                self.nodes[y].red = self.nodes[z].red;
                (x, Some(x_parent), y_black)
            }
        };
        if removed_black {
            self.erase_fixup(x, x_parent);
        }
    }

    fn erase_fixup(&mut self, mut x: Option<usize>, mut parent: Option<usize>) {
        while x != self.root && !self.red(x) {
            let Some(p) = parent else { break };
            if self.nodes[p].left == x {
                let mut w = self.nodes[p]
                    .right
                    .expect("a black-height deficit has a sibling");
                if self.nodes[w].red {
                    self.nodes[w].red = false;
                    self.nodes[p].red = true;
                    self.rotate_left(p);
                    w = self.nodes[p].right.expect("sibling after rotation");
                }
                if !self.red(self.nodes[w].left) && !self.red(self.nodes[w].right) {
                    self.nodes[w].red = true;
                    x = Some(p);
                    parent = self.nodes[p].parent;
                    continue;
                }
                if !self.red(self.nodes[w].right) {
                    let wl = self.nodes[w].left.expect("red");
                    self.nodes[wl].red = false;
                    self.nodes[w].red = true;
                    self.rotate_right(w);
                    w = self.nodes[p].right.expect("sibling after rotation");
                }
                self.nodes[w].red = self.nodes[p].red;
                self.nodes[p].red = false;
                let wr = self.nodes[w].right.expect("red");
                self.nodes[wr].red = false;
                self.rotate_left(p);
                x = self.root;
                break;
            } else {
                let mut w = self.nodes[p]
                    .left
                    .expect("a black-height deficit has a sibling");
                if self.nodes[w].red {
                    self.nodes[w].red = false;
                    self.nodes[p].red = true;
                    self.rotate_right(p);
                    w = self.nodes[p].left.expect("sibling after rotation");
                }
                if !self.red(self.nodes[w].left) && !self.red(self.nodes[w].right) {
                    self.nodes[w].red = true;
                    x = Some(p);
                    parent = self.nodes[p].parent;
                    continue;
                }
                if !self.red(self.nodes[w].left) {
                    let wr = self.nodes[w].right.expect("red");
                    self.nodes[wr].red = false;
                    self.nodes[w].red = true;
                    self.rotate_left(w);
                    w = self.nodes[p].left.expect("sibling after rotation");
                }
                self.nodes[w].red = self.nodes[p].red;
                self.nodes[p].red = false;
                let wl = self.nodes[w].left.expect("red");
                self.nodes[wl].red = false;
                self.rotate_right(p);
                x = self.root;
                break;
            }
        }
        if let Some(x) = x {
            self.nodes[x].red = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks the red-black invariants and the in-order key order; returns the black height.
    fn check(t: &SymbolTree, n: Option<usize>, lo: u64, hi: u64) -> usize {
        let Some(id) = n else { return 1 };
        let node = &t.nodes[id];
        assert!(lo <= node.start && node.start <= hi);
        if node.red {
            assert!(
                !t.red(node.left) && !t.red(node.right),
                "red node {id} has a red child"
            );
        }
        for c in [node.left, node.right].into_iter().flatten() {
            assert_eq!(t.nodes[c].parent, Some(id));
        }
        let l = check(t, node.left, lo, node.start);
        let r = check(t, node.right, node.start, hi);
        assert_eq!(l, r, "black heights differ under {id}");
        l + usize::from(!node.red)
    }

    #[test]
    fn inserts_and_erases_keep_a_valid_red_black_tree() {
        let mut t = SymbolTree::default();
        // A fixed pseudo-random sequence with repeated keys, as aliases give.
        let mut x = 12345u64;
        let mut ids = Vec::new();
        for _ in 0..500 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ids.push(t.insert((x >> 40) % 200));
            check(&t, t.root, 0, u64::MAX);
        }
        for id in ids.iter().step_by(3) {
            t.erase(*id);
            check(&t, t.root, 0, u64::MAX);
        }
        // Every remaining key is found by its start.
        for (i, node) in t.nodes.iter().enumerate() {
            if !ids.iter().step_by(3).any(|&e| e == i) {
                let found = t.find(node.start).expect("key present");
                assert_eq!(t.nodes[found].start, node.start);
            }
        }
    }

    #[test]
    fn the_first_enclosing_node_on_the_way_down_is_found() {
        // _init at 0x1000 stretched to 0x1080 over the PLT.
        let mut t = SymbolTree::default();
        let init = t.insert(0x1000);
        let text = t.insert(0x1080);
        let main = t.insert(0x1100);
        t.set_end(init, 0x1080);
        t.set_end(text, 0x1100);
        t.set_end(main, 0x1200);
        // 0x1000 is a leaf under the root 0x1080: a PLT entry inserted now hangs below it, so _init is met
        // first.
        let plt = t.insert(0x1030);
        t.set_end(plt, 0x1040);
        assert_eq!(t.find(0x1034), Some(init));
        // The next entry's insertion rotates: 0x1030 rises above _init, and each entry is found itself.
        let plt2 = t.insert(0x1040);
        t.set_end(plt2, 0x1050);
        assert_eq!(t.find(0x1044), Some(plt2));
        assert_eq!(t.find(0x1020), Some(init));
    }
}
