//! A report row's call graph: perf's callchain trees (util/callchain.c `callchain_append`, `match_chain` with
//! the `function` key) built per entry in one arena, their runs of frames sorted and cut at perf's threshold,
//! and the graph text of hist.c's `callchain__fprintf_graph`.
//!
//! Owns the trees and their printing only; which chains an entry gets (Children or Self, the caller or callee
//! order) is decided in `report`, and the row above the graph is printed by `write_report` in `mod.rs`.

use super::GraphNode;
use crate::perf::script::Frame;
use std::collections::HashMap;
use std::io::{self, Write};
use std::rc::Rc;

/// A frame as callchain.c's `match_chain` tells frames apart with the `function` key: an inline frame by its
/// name, a resolved one by DSO and symbol start, an unresolved one by DSO and address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum GraphFrame {
    Inlined(Rc<str>),
    Sym(Option<Rc<str>>, u64),
    Ip(Option<Rc<str>>, u64),
}

/// The call-graph trees of one event's entries: one node per frame (runs are formed when printing), in one
/// arena, with an edge index so that appending a chain costs one lookup per frame.
#[derive(Default)]
pub(super) struct Graphs {
    frames: HashMap<GraphFrame, u32>,
    /// Per frame id: the printed name and the order `match_chain` gives siblings (DSO, then address).
    names: Vec<(Rc<str>, usize, u64)>,
    nodes: Vec<GNode>,
    edges: HashMap<(u32, u32), u32>,
}

#[derive(Clone, Copy)]
struct GNode {
    frame: u32,
    /// Period of the chains that end here (perf's `hit`).
    hit: u64,
    /// Period of the chains through here (`hit + children_hit`).
    cumul: u64,
    children: u32,
    first_child: u32,
    next_sibling: u32,
}

pub(super) const NONE: u32 = u32::MAX;

impl Graphs {
    pub(super) fn new_node(&mut self, frame: u32) -> u32 {
        self.nodes.push(GNode {
            frame,
            hit: 0,
            cumul: 0,
            children: 0,
            first_child: NONE,
            next_sibling: NONE,
        });
        (self.nodes.len() - 1) as u32
    }

    /// The id of a frame; `dso_rank` orders DSOs (see [`super::report`]).
    pub(super) fn frame_id(
        &mut self,
        frame: &Frame,
        raw_ip: u64,
        dso_rank: &mut HashMap<Option<Rc<str>>, usize>,
    ) -> u32 {
        let key = match &frame.sym {
            Some(s) if frame.inlined => GraphFrame::Inlined(s.clone()),
            Some(_) => GraphFrame::Sym(frame.dso.clone(), frame.addr.wrapping_sub(frame.offset)),
            None => GraphFrame::Ip(frame.dso.clone(), raw_ip),
        };
        if let Some(&id) = self.frames.get(&key) {
            return id;
        }
        let name: Rc<str> = match &frame.sym {
            // callchain_list__sym_name: `%s%s` with the inline mark, else `%#lx` of the raw address.
            Some(s) if frame.inlined => Rc::from(format!("{s} (inlined)")),
            Some(s) => s.clone(),
            // C's `#` writes no `0x` before a zero.
            None if raw_ip == 0 => Rc::from("0"),
            None => Rc::from(format!("{raw_ip:#x}")),
        };
        let addr = match &key {
            GraphFrame::Inlined(_) => frame.addr,
            GraphFrame::Sym(_, a) | GraphFrame::Ip(_, a) => *a,
        };
        let next = dso_rank.len();
        let rank = *dso_rank.entry(frame.dso.clone()).or_insert(next);
        self.names.push((name, rank, addr));
        let id = (self.names.len() - 1) as u32;
        self.frames.insert(key, id);
        id
    }

    /// perf's `callchain_append`: the chain's frames from the root down, its period on every node passed.
    pub(super) fn append(&mut self, root: u32, chain: impl Iterator<Item = u32>, period: u64) {
        let mut node = root;
        let mut any = false;
        for frame in chain {
            any = true;
            let child = self.child(node, frame);
            self.nodes[child as usize].cumul += period;
            node = child;
        }
        if any {
            self.nodes[root as usize].cumul += period;
            self.nodes[node as usize].hit += period;
        }
    }

    /// callchain.c's `callchain_merge`: `src`'s tree added into `dst`'s, node by node (the periods of the
    /// chains through and ending at each frame summed; siblings' order comes from their frames, not from
    /// when they were added).
    pub(super) fn merge(&mut self, dst: u32, src: u32) {
        let (cumul, hit) = (self.nodes[src as usize].cumul, self.nodes[src as usize].hit);
        self.nodes[dst as usize].cumul += cumul;
        self.nodes[dst as usize].hit += hit;
        let mut c = self.nodes[src as usize].first_child;
        while c != NONE {
            let frame = self.nodes[c as usize].frame;
            let child = self.child(dst, frame);
            self.merge(child, c);
            c = self.nodes[c as usize].next_sibling;
        }
    }

    /// The child of `node` for `frame`, made when missing.
    fn child(&mut self, node: u32, frame: u32) -> u32 {
        if let Some(&c) = self.edges.get(&(node, frame)) {
            return c;
        }
        let c = self.new_node(frame);
        let parent = &mut self.nodes[node as usize];
        let first = parent.first_child;
        parent.first_child = c;
        parent.children += 1;
        self.nodes[c as usize].next_sibling = first;
        self.edges.insert((node, frame), c);
        c
    }

    /// The printed tree below `node`: runs of frames, those of at least `min_hit`, largest first; siblings of
    /// equal period in the order of perf's tree of children, where `match_chain` puts a new frame left of a
    /// smaller one: by DSO and address, descending.
    pub(super) fn sorted(&self, node: u32, min_hit: u64) -> Vec<GraphNode> {
        let mut kids = Vec::new();
        let mut c = self.nodes[node as usize].first_child;
        while c != NONE {
            let n = &self.nodes[c as usize];
            if n.cumul >= min_hit {
                kids.push(c);
            }
            c = n.next_sibling;
        }
        kids.sort_by(|&a, &b| {
            let (x, y) = (
                &self.names[self.nodes[a as usize].frame as usize],
                &self.names[self.nodes[b as usize].frame as usize],
            );
            (y.1, y.2).cmp(&(x.1, x.2))
        });
        kids.sort_by(|&a, &b| {
            self.nodes[b as usize]
                .cumul
                .cmp(&self.nodes[a as usize].cumul)
        });
        kids.into_iter()
            .map(|start| {
                let mut names = Vec::new();
                let mut at = start;
                loop {
                    let n = &self.nodes[at as usize];
                    names.push(self.names[n.frame as usize].0.to_string());
                    if n.hit != 0 || n.children != 1 {
                        break;
                    }
                    at = n.first_child;
                }
                GraphNode {
                    names,
                    period: self.nodes[start as usize].cumul,
                    children: self.sorted(at, min_hit),
                }
            })
            .collect()
    }
}

/// The bit of a depth in hist.c's `int depth_mask`: `1 << depth` as x86 shifts it (the count taken mod 32),
/// so that graphs deeper than 31 levels print as perf's do.
fn depth_bit(depth: usize) -> u32 {
    1u32 << (depth % 32)
}

/// Writes a row's call graph as hist.c's `callchain__fprintf_graph` (graph mode, percent values): `parent` is
/// the row's own period (Children with children), `total` the event's.
pub(super) fn write_graph(
    out: &mut impl Write,
    graph: &[GraphNode],
    total: u64,
    parent: u64,
    skip_first: bool,
) -> io::Result<()> {
    let mut margin = 0;
    let mut printed = false;
    let mut level = graph;
    // One top node holding the whole row needs no percentage: its frames print after `---`.
    if let [only] = graph {
        if only.period == parent {
            for (i, name) in only.names.iter().enumerate() {
                if i == 0 && skip_first {
                    continue;
                }
                if !printed {
                    writeln!(out, "{:1$}|", "", 12 + margin)?;
                    write!(out, "{:1$}---", "", 12 + margin)?;
                    margin += 3;
                    printed = true;
                } else {
                    write!(out, "{:1$}", "", 12 + margin)?;
                }
                writeln!(out, "{name}")?;
            }
            level = &only.children;
        }
    }
    let wrote = write_graph_level(out, level, total, 1, 1, margin)?;
    if printed || wrote {
        writeln!(out)?;
    }
    Ok(())
}

/// hist.c's `__callchain__fprintf_graph`: each node under a separator line, its first frame with its share
/// between `--`, the nodes below one level deeper; `mask` has a bit for every level whose `|` continues.
fn write_graph_level(
    out: &mut impl Write,
    nodes: &[GraphNode],
    total: u64,
    depth: usize,
    mask: u32,
    margin: usize,
) -> io::Result<bool> {
    let mut new_mask = mask;
    for (n, node) in nodes.iter().enumerate() {
        if n + 1 == nodes.len() {
            new_mask &= !depth_bit(depth - 1);
        }
        write!(out, "{:1$}", "", 12 + margin)?;
        for i in 0..depth {
            let bar = if mask & depth_bit(i) != 0 { '|' } else { ' ' };
            write!(out, "{bar}          ")?;
        }
        writeln!(out)?;
        for (at, name) in node.names.iter().enumerate() {
            write!(out, "{:1$}", "", 12 + margin)?;
            for i in 0..depth {
                let bar = if new_mask & depth_bit(i) != 0 {
                    '|'
                } else {
                    ' '
                };
                if at == 0 && i == depth - 1 {
                    let pct = if total == 0 {
                        0.0
                    } else {
                        node.period as f64 * 100.0 / total as f64
                    };
                    write!(out, "{bar}--{pct:.2}%--")?;
                } else {
                    write!(out, "{bar}          ")?;
                }
            }
            writeln!(out, "{name}")?;
        }
        write_graph_level(
            out,
            &node.children,
            total,
            depth + 1,
            new_mask | depth_bit(depth),
            margin,
        )?;
    }
    Ok(!nodes.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(names: &[&str], period: u64, children: Vec<GraphNode>) -> GraphNode {
        GraphNode {
            names: names.iter().map(|s| s.to_string()).collect(),
            period,
            children,
        }
    }

    /// The layout of a graph perf 6.1 printed for `perf.data.callgraph-3.4` (kworker/1:2's top row), cut to
    /// three levels: the one top node after `---`, then `|--` for a sibling with more below, ` --` for the
    /// last, and `|` continuing only where a level has siblings left.
    #[test]
    fn graph_text_matches_perf_layout() {
        let graph = vec![node(
            &["0xffffffff814713d4", "0xffffffff81045510"],
            2360,
            vec![node(
                &["0xffffffff8104156f"],
                2352,
                vec![
                    node(&["0xffffffff81371cf6"], 2262, vec![]),
                    node(&["0xffffffff81371bb1", "0xffffffff813718c1"], 75, vec![]),
                ],
            )],
        )];
        let mut out = Vec::new();
        write_graph(&mut out, &graph, 10000, 2360, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        let want = [
            "            |",
            "            ---0xffffffff814713d4",
            "               0xffffffff81045510",
            "               |          ",
            "                --23.52%--0xffffffff8104156f",
            "                          |          ",
            "                          |--22.62%--0xffffffff81371cf6",
            "                          |          ",
            "                           --0.75%--0xffffffff81371bb1",
            "                                     0xffffffff813718c1",
            "",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), want);
        // Under a row sorted by symbol first, the top frame repeats the row and is left out.
        let mut out = Vec::new();
        write_graph(&mut out, &graph, 10000, 2360, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.lines().take(2).collect::<Vec<_>>(),
            ["            |", "            ---0xffffffff81045510"]
        );
        // Two top nodes, or one that does not hold the whole row, print with their shares.
        let mut out = Vec::new();
        write_graph(&mut out, &graph, 10000, 5000, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.lines().take(3).collect::<Vec<_>>(),
            [
                "            |          ",
                "             --23.60%--0xffffffff814713d4",
                "                       0xffffffff81045510",
            ]
        );
    }

    #[test]
    fn runs_break_where_a_chain_ends_or_branches() {
        let mut g = Graphs::default();
        let mut rank = HashMap::new();
        let dso: Rc<str> = Rc::from("[kernel.kallsyms]");
        let ids: Vec<u32> = (1..=4u64)
            .map(|a| g.frame_id(&Frame::unsymbolized(a, &dso), a, &mut rank))
            .collect();
        let root = g.new_node(NONE);
        // a→b→c (3), a→b (1), a→b→d (2): `a b` is one run, ending where a chain ends; c and d below it.
        g.append(root, [ids[0], ids[1], ids[2]].into_iter(), 3);
        g.append(root, [ids[0], ids[1]].into_iter(), 1);
        g.append(root, [ids[0], ids[1], ids[3]].into_iter(), 2);
        let tree = g.sorted(root, 0);
        assert_eq!(
            tree,
            vec![node(
                &["0x1", "0x2"],
                6,
                vec![node(&["0x3"], 3, vec![]), node(&["0x4"], 2, vec![])]
            )]
        );
        // Under the 0.5% threshold of perf's default (here 3 of 6), d's node is dropped.
        assert_eq!(
            g.sorted(root, 3)[0].children,
            vec![node(&["0x3"], 3, vec![])]
        );
    }
}
