//! The kernel's red-black tree (lib/rbtree.c, the textbook one: CLRS insertion, deletion that moves in the
//! in-order successor), replayed node for node. perf keeps hist entries and symbols in such trees and answers
//! some questions by the tree's shape, not by the keys alone: which of two overlapping symbols a lookup meets
//! first ([`super::symbols`]), the order of report rows whose comparison is not a total order
//! ([`super::tools`]). The tree holds only links and colours; its users keep their keys by node id.

/// A node's links and colour.
#[derive(Clone, Copy, Debug)]
struct Node {
    red: bool,
    parent: Option<usize>,
    left: Option<usize>,
    right: Option<usize>,
}

/// A red-black tree over node ids `0..`, in insertion order; the caller orders them.
#[derive(Clone, Debug, Default)]
pub(crate) struct RbTree {
    nodes: Vec<Node>,
    root: Option<usize>,
}

impl RbTree {
    /// Inserts the next node id (`rb_link_node` + `rb_insert_color`), descending left of an existing node
    /// when `goes_left(existing)`; returns the new id.
    pub(crate) fn insert_by(&mut self, mut goes_left: impl FnMut(usize) -> bool) -> usize {
        let id = self.nodes.len();
        let mut parent = None;
        let mut link = self.root;
        let mut go_left = false;
        while let Some(p) = link {
            parent = Some(p);
            go_left = goes_left(p);
            link = if go_left {
                self.nodes[p].left
            } else {
                self.nodes[p].right
            };
        }
        self.nodes.push(Node {
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

    /// The root node.
    pub(crate) fn root(&self) -> Option<usize> {
        self.root
    }

    /// Node `n`'s left child.
    pub(crate) fn left(&self, n: usize) -> Option<usize> {
        self.nodes[n].left
    }

    /// Node `n`'s right child.
    pub(crate) fn right(&self, n: usize) -> Option<usize> {
        self.nodes[n].right
    }

    /// The nodes in order (leftmost first).
    pub(crate) fn in_order(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity(self.nodes.len());
        let mut stack = Vec::new();
        let mut at = self.root;
        while at.is_some() || !stack.is_empty() {
            while let Some(n) = at {
                stack.push(n);
                at = self.nodes[n].left;
            }
            let Some(top) = stack.pop() else { break };
            order.push(top);
            at = self.nodes[top].right;
        }
        order
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

    /// Checks the red-black invariants and that `key` is ordered in order; returns the black height.
    fn check(t: &RbTree, n: Option<usize>, key: &[u64], lo: u64, hi: u64) -> usize {
        let Some(id) = n else { return 1 };
        let node = &t.nodes[id];
        assert!(lo <= key[id] && key[id] <= hi);
        if node.red {
            assert!(
                !t.red(node.left) && !t.red(node.right),
                "red node {id} has a red child"
            );
        }
        for c in [node.left, node.right].into_iter().flatten() {
            assert_eq!(t.nodes[c].parent, Some(id));
        }
        let l = check(t, node.left, key, lo, key[id]);
        let r = check(t, node.right, key, key[id], hi);
        assert_eq!(l, r, "black heights differ under {id}");
        l + usize::from(!node.red)
    }

    #[test]
    fn inserts_and_erases_keep_a_valid_red_black_tree() {
        let mut t = RbTree::default();
        let mut key = Vec::new();
        // A fixed pseudo-random sequence with repeated keys, as symbol aliases and equal rows give.
        let mut x = 12345u64;
        for _ in 0..500 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (x >> 40) % 200;
            let id = t.insert_by(|p| k < key[p]);
            assert_eq!(id, key.len());
            key.push(k);
            check(&t, t.root, &key, 0, u64::MAX);
        }
        for id in (0..key.len()).step_by(3) {
            t.erase(id);
            check(&t, t.root, &key, 0, u64::MAX);
        }
        let kept: Vec<u64> = t.in_order().into_iter().map(|i| key[i]).collect();
        assert_eq!(kept.len(), key.len() - key.len().div_ceil(3));
        assert!(kept.windows(2).all(|w| w[0] <= w[1]), "{kept:?}");
    }
}
