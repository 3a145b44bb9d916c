//! The kernel's red-black tree (lib/rbtree.c, the textbook one: CLRS insertion, deletion that moves in the
//! in-order successor), replayed node for node. perf keeps hist entries and symbols in such trees and answers
//! some questions by the tree's shape, not by the keys alone: which of two overlapping symbols a lookup meets
//! first ([`super::symbols`]), the order of report rows whose comparison is not a total order
//! ([`super::tools`]). The tree holds only links and colours; its users keep their keys by node id.

/// No node: a link that `Option<usize>` would spend 16 bytes on.
const NIL: u32 = u32::MAX;
/// The colour bit of [`Node::parent_red`]; the parent id is below it.
const RED: u32 = 1 << 31;
/// [`Node::parent_red`]'s id part when there is no parent.
const NO_PARENT: u32 = RED - 1;

/// A node's key, links and colour: the links in 12 bytes, and the key beside them, as the walk down reads
/// both (replaying librustc_driver's symbol tree walks 175,000 nodes; keys in a separate array cost a second
/// cache miss per level).
#[derive(Clone, Copy, Debug)]
struct Node<K> {
    key: K,
    /// The parent's id ([`NO_PARENT`] for the root), with [`RED`] set for a red node.
    parent_red: u32,
    left: u32,
    right: u32,
}

/// `NIL` as `None`.
fn link(n: u32) -> Option<usize> {
    (n != NIL).then_some(n as usize)
}

/// A red-black tree over node ids `0..`, in insertion order, each with a key `K` (`()` when the caller keeps
/// its keys by id); the caller orders them.
#[derive(Clone, Debug)]
pub(crate) struct RbTree<K> {
    nodes: Vec<Node<K>>,
    root: u32,
}

impl<K> Default for RbTree<K> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<K> RbTree<K> {
    /// An empty tree with room for `n` nodes.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            nodes: Vec::with_capacity(n),
            root: NIL,
        }
    }

    /// Inserts the next node id with `key` (`rb_link_node` + `rb_insert_color`), descending left of an
    /// existing node when `goes_left(existing id, its key)`; returns the new id.
    pub(crate) fn insert_by(
        &mut self,
        key: K,
        mut goes_left: impl FnMut(usize, &K) -> bool,
    ) -> usize {
        let id = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&id| id < NO_PARENT)
            .expect("fewer than 2^31 nodes (a symbol table that large cannot be mapped)");
        let mut parent = NIL;
        let mut at = self.root;
        let mut go_left = false;
        while at != NIL {
            parent = at;
            let p = &self.nodes[at as usize];
            go_left = goes_left(at as usize, &p.key);
            at = if go_left { p.left } else { p.right };
        }
        self.nodes.push(Node {
            key,
            parent_red: if parent == NIL { NO_PARENT } else { parent } | RED,
            left: NIL,
            right: NIL,
        });
        if parent == NIL {
            self.root = id;
        } else if go_left {
            self.nodes[parent as usize].left = id;
        } else {
            self.nodes[parent as usize].right = id;
        }
        self.insert_fixup(id);
        id as usize
    }

    /// The root node.
    pub(crate) fn root(&self) -> Option<usize> {
        link(self.root)
    }

    /// Node `n`'s key.
    pub(crate) fn key(&self, n: usize) -> &K {
        &self.nodes[n].key
    }

    /// Node `n`'s left child.
    pub(crate) fn left(&self, n: usize) -> Option<usize> {
        link(self.nodes[n].left)
    }

    /// Node `n`'s right child.
    pub(crate) fn right(&self, n: usize) -> Option<usize> {
        link(self.nodes[n].right)
    }

    /// The nodes in order (leftmost first).
    pub(crate) fn in_order(&self) -> Vec<usize> {
        let mut order = Vec::with_capacity(self.nodes.len());
        let mut stack = Vec::new();
        let mut at = self.root;
        while at != NIL || !stack.is_empty() {
            while at != NIL {
                stack.push(at);
                at = self.nodes[at as usize].left;
            }
            let Some(top) = stack.pop() else { break };
            order.push(top as usize);
            at = self.nodes[top as usize].right;
        }
        order
    }

    fn parent(&self, n: u32) -> u32 {
        match self.nodes[n as usize].parent_red & !RED {
            NO_PARENT => NIL,
            p => p,
        }
    }

    fn set_parent(&mut self, n: u32, p: u32) {
        let node = &mut self.nodes[n as usize];
        node.parent_red = (node.parent_red & RED) | if p == NIL { NO_PARENT } else { p };
    }

    fn l(&self, n: u32) -> u32 {
        self.nodes[n as usize].left
    }

    fn r(&self, n: u32) -> u32 {
        self.nodes[n as usize].right
    }

    /// Whether `n` is a red node (`NIL` is black).
    fn red(&self, n: u32) -> bool {
        n != NIL && self.nodes[n as usize].parent_red & RED != 0
    }

    fn set_red(&mut self, n: u32, red: bool) {
        let node = &mut self.nodes[n as usize];
        node.parent_red = (node.parent_red & !RED) | if red { RED } else { 0 };
    }

    fn rotate_left(&mut self, x: u32) {
        let y = self.r(x);
        debug_assert_ne!(y, NIL, "rotate_left needs a right child");
        let yl = self.l(y);
        self.nodes[x as usize].right = yl;
        if yl != NIL {
            self.set_parent(yl, x);
        }
        self.replace_child(x, y);
        self.nodes[y as usize].left = x;
        self.set_parent(x, y);
    }

    fn rotate_right(&mut self, x: u32) {
        let y = self.l(x);
        debug_assert_ne!(y, NIL, "rotate_right needs a left child");
        let yr = self.r(y);
        self.nodes[x as usize].left = yr;
        if yr != NIL {
            self.set_parent(yr, x);
        }
        self.replace_child(x, y);
        self.nodes[y as usize].right = x;
        self.set_parent(x, y);
    }

    /// Puts `new` where `old` hangs (under `old`'s parent, or as the root).
    fn replace_child(&mut self, old: u32, new: u32) {
        let parent = self.parent(old);
        self.set_parent(new, parent);
        self.relink(parent, old, new);
    }

    /// Makes `parent`'s link to `old` point to `new` (the root link when `parent` is `NIL`).
    fn relink(&mut self, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if self.l(parent) == old {
            self.nodes[parent as usize].left = new;
        } else {
            self.nodes[parent as usize].right = new;
        }
    }

    fn insert_fixup(&mut self, mut z: u32) {
        loop {
            let p = self.parent(z);
            if !self.red(p) {
                break;
            }
            let g = self.parent(p);
            debug_assert_ne!(g, NIL, "a red node has a parent");
            if self.l(g) == p {
                let uncle = self.r(g);
                if self.red(uncle) {
                    self.set_red(p, false);
                    self.set_red(uncle, false);
                    self.set_red(g, true);
                    z = g;
                    continue;
                }
                let mut p = p;
                if self.r(p) == z {
                    self.rotate_left(p);
                    z = p;
                    p = self.parent(z);
                }
                self.set_red(p, false);
                self.set_red(g, true);
                self.rotate_right(g);
            } else {
                let uncle = self.l(g);
                if self.red(uncle) {
                    self.set_red(p, false);
                    self.set_red(uncle, false);
                    self.set_red(g, true);
                    z = g;
                    continue;
                }
                let mut p = p;
                if self.l(p) == z {
                    self.rotate_right(p);
                    z = p;
                    p = self.parent(z);
                }
                self.set_red(p, false);
                self.set_red(g, true);
                self.rotate_left(g);
            }
        }
        self.set_red(self.root, false);
    }

    /// Removes node `z` (`rb_erase`): a node with two children is replaced by its in-order successor, which
    /// takes its colour.
    pub(crate) fn erase(&mut self, z: usize) {
        let z = z as u32;
        let (zl, zr) = (self.l(z), self.r(z));
        // (the child that moves up, its new parent, whether a black node left the tree)
        let (x, x_parent, removed_black) = if zl == NIL || zr == NIL {
            let child = if zl != NIL { zl } else { zr };
            let parent = self.parent(z);
            if child != NIL {
                self.replace_child(z, child);
            } else {
                self.relink(parent, z, NIL);
            }
            (child, parent, !self.red(z))
        } else {
            let mut y = zr;
            while self.l(y) != NIL {
                y = self.l(y);
            }
            let y_black = !self.red(y);
            let x = self.r(y);
            let x_parent;
            if y == zr {
                x_parent = y;
            } else {
                x_parent = self.parent(y);
                self.nodes[x_parent as usize].left = x;
                if x != NIL {
                    self.set_parent(x, x_parent);
                }
                self.nodes[y as usize].right = zr;
                self.set_parent(zr, y);
            }
            self.replace_child(z, y);
            self.nodes[y as usize].left = zl;
            self.set_parent(zl, y);
            let z_red = self.red(z);
            self.set_red(y, z_red);
            (x, x_parent, y_black)
        };
        if removed_black {
            self.erase_fixup(x, x_parent);
        }
    }

    fn erase_fixup(&mut self, mut x: u32, mut parent: u32) {
        while x != self.root && !self.red(x) {
            let p = parent;
            if p == NIL {
                break;
            }
            if self.l(p) == x {
                let mut w = self.r(p);
                debug_assert_ne!(w, NIL, "a black-height deficit has a sibling");
                if self.red(w) {
                    self.set_red(w, false);
                    self.set_red(p, true);
                    self.rotate_left(p);
                    w = self.r(p);
                }
                if !self.red(self.l(w)) && !self.red(self.r(w)) {
                    self.set_red(w, true);
                    x = p;
                    parent = self.parent(p);
                    continue;
                }
                if !self.red(self.r(w)) {
                    let wl = self.l(w);
                    self.set_red(wl, false);
                    self.set_red(w, true);
                    self.rotate_right(w);
                    w = self.r(p);
                }
                let p_red = self.red(p);
                self.set_red(w, p_red);
                self.set_red(p, false);
                let wr = self.r(w);
                self.set_red(wr, false);
                self.rotate_left(p);
                x = self.root;
                break;
            } else {
                let mut w = self.l(p);
                debug_assert_ne!(w, NIL, "a black-height deficit has a sibling");
                if self.red(w) {
                    self.set_red(w, false);
                    self.set_red(p, true);
                    self.rotate_right(p);
                    w = self.l(p);
                }
                if !self.red(self.l(w)) && !self.red(self.r(w)) {
                    self.set_red(w, true);
                    x = p;
                    parent = self.parent(p);
                    continue;
                }
                if !self.red(self.l(w)) {
                    let wr = self.r(w);
                    self.set_red(wr, false);
                    self.set_red(w, true);
                    self.rotate_left(w);
                    w = self.l(p);
                }
                let p_red = self.red(p);
                self.set_red(w, p_red);
                self.set_red(p, false);
                let wl = self.l(w);
                self.set_red(wl, false);
                self.rotate_right(p);
                x = self.root;
                break;
            }
        }
        if x != NIL {
            self.set_red(x, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks the red-black invariants and that `key` is ordered in order; returns the black height.
    fn check(t: &RbTree<u64>, n: u32, key: &[u64], lo: u64, hi: u64) -> usize {
        if n == NIL {
            return 1;
        }
        let id = n as usize;
        assert_eq!(*t.key(id), key[id]);
        assert!(lo <= key[id] && key[id] <= hi);
        if t.red(n) {
            assert!(
                !t.red(t.l(n)) && !t.red(t.r(n)),
                "red node {id} has a red child"
            );
        }
        for c in [t.l(n), t.r(n)] {
            if c != NIL {
                assert_eq!(t.parent(c), n);
            }
        }
        let l = check(t, t.l(n), key, lo, key[id]);
        let r = check(t, t.r(n), key, key[id], hi);
        assert_eq!(l, r, "black heights differ under {id}");
        l + usize::from(!t.red(n))
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
            let id = t.insert_by(k, |_, &p| k < p);
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
