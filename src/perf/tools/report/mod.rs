//! `perf report --stdio`: the overhead table of a perf.data file by sort keys, with perf's Children and Self
//! columns and the call graph under each row when the samples carry callchains (`--no-children`: one Overhead
//! column; `-g none`: no graph).
//!
//! Follows tools/perf/ui/stdio/hist.c (column headers, dotted rule, two-space separators, every column padded to
//! its widest value, the graph text of `callchain__fprintf_graph`) and util/sort.c (keys comm, pid, dso, sym;
//! `[k]`/`[.]` symbol prefixes; unresolved symbols as `0x%016x`). Overhead is each entry's share of the event's
//! total period, as perf computes it. Children (util/hist.c `hist_entry_iter__cumulative`): a sample's period
//! counts once for every distinct entry of its callchain, its IP's entry included; Self is the IP's entry only.
//! Events print in the file's attr order.
//!
//! The call graph is perf 6.1's default for `report --stdio`, `graph,0.5,caller,function,percent` with
//! children (`callee` without): util/callchain.c builds one tree per entry from the chains appended to it (the
//! whole chain for the IP's entry, the chain from the frame down to the IP for a caller's), frames matched by
//! function (DSO and symbol start, or the address when unresolved); nodes under 0.5% of the event's total are
//! dropped and siblings print by their share, largest first.
//!
//! Also perf 6.1's defaults for event groups (GROUP_DESC: a table per group, a column per member) and branch
//! stacks (HEADER_BRANCH_STACK: branch mode, a row per branch-stack entry by source and target). Rows come out in
//! the order perf's red-black-tree insertion gives them (`rb_order`): its comparison is not a total order.

use crate::perf::data::PerfFile;
use crate::perf::script::machine::module_short_name;
use crate::perf::script::resolve::MISC_KERNEL;
use crate::perf::script::session::{samples, ScriptError};
use crate::perf::script::{Frame, Options, SampleInfo};
use std::collections::HashMap;
use std::io::{self, Write};
use std::rc::Rc;

/// A sort key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// Thread comm.
    Comm,
    /// Process id (`pid:comm`).
    Pid,
    /// DSO short name.
    Dso,
    /// Symbol with `[k]`/`[.]`.
    Sym,
    /// Branch mode: the DSO of a branch's source (`dso_from`).
    DsoFrom,
    /// Branch mode: a branch's source symbol (`symbol_from`).
    SymFrom,
    /// Branch mode: a branch's target symbol (`symbol_to`).
    SymTo,
    /// Branch mode: the cycles of the basic block the branch ends (`cycles`; `-` when not sampled).
    Cycles,
}

/// perf's sort keys in branch mode (sort.c `default_branch_sort_order`).
pub const BRANCH_SORT: [SortKey; 5] = [
    SortKey::Comm,
    SortKey::DsoFrom,
    SortKey::SymFrom,
    SortKey::SymTo,
    SortKey::Cycles,
];

impl SortKey {
    fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            // sort.c's `se_header` carries the leading spaces.
            SortKey::Pid => "    Pid:Command",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
            SortKey::DsoFrom => "Source Shared Object",
            SortKey::SymFrom => "Source Symbol",
            SortKey::SymTo => "Target Symbol",
            SortKey::Cycles => "Basic Block Cycles",
        }
    }

    /// The key's name on the command line (perf's).
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Comm => "comm",
            SortKey::Pid => "pid",
            SortKey::Dso => "dso",
            SortKey::Sym => "sym",
            SortKey::DsoFrom => "dso_from",
            SortKey::SymFrom => "symbol_from",
            SortKey::SymTo => "symbol_to",
            SortKey::Cycles => "cycles",
        }
    }

    /// Whether the key is one of branch mode's.
    pub fn is_branch(self) -> bool {
        matches!(
            self,
            SortKey::DsoFrom | SortKey::SymFrom | SortKey::SymTo | SortKey::Cycles
        )
    }
}

impl std::str::FromStr for SortKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "comm" => Ok(SortKey::Comm),
            "pid" => Ok(SortKey::Pid),
            "dso" => Ok(SortKey::Dso),
            "sym" => Ok(SortKey::Sym),
            "dso_from" => Ok(SortKey::DsoFrom),
            "symbol_from" => Ok(SortKey::SymFrom),
            "symbol_to" => Ok(SortKey::SymTo),
            "cycles" => Ok(SortKey::Cycles),
            other => Err(format!(
                "unknown sort key `{other}` (comm, pid, dso, sym; in branch mode comm, dso_from, symbol_from, \
                 symbol_to, cycles)"
            )),
        }
    }
}

/// Options of a report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Script options (symbols, modes).
    pub script: Options,
    /// Sort keys, in column order.
    pub sort: Vec<SortKey>,
    /// Only samples in these DSOs (short or long names), when set.
    pub dsos: Option<Vec<String>>,
    /// Children and Self columns (perf's default when the samples carry callchains) instead of Overhead.
    pub children: bool,
    /// The call graph under each row (perf's default when the samples carry callchains; `-g none` turns it
    /// off).
    pub graph: bool,
    /// Branch mode (perf's `--branch-stack`, its default for a file with HEADER_BRANCH_STACK): a row per
    /// branch of the samples' branch stacks, by the branch keys of `sort`.
    pub branch: bool,
}

/// One event's table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventTable {
    /// Event name.
    pub event: String,
    /// Samples counted.
    pub samples: u64,
    /// Sum of periods.
    pub total_period: u64,
    /// Rows sorted as perf prints them.
    pub rows: Vec<Row>,
    /// Whether the rows carry Children (else only Self, printed as Overhead).
    pub children: bool,
    /// The longest comm among the threads of the rows as they are at the end of the file: perf sizes the
    /// Command column by it (hist.c `hists__calc_col_len` takes `thread__comm_len`, the thread's last comm)
    /// and cuts a row's comm, the one of its first sample, to that width.
    pub comm_width: usize,
    /// The least width of the Shared Object column: 16 when a row's symbol is unresolved and no DSO filter is
    /// set (hist.c `hists__set_unres_dso_col_len`, room for an address), else 0.
    pub dso_width: usize,
    /// For an event group's table (perf's group view): the total period of each member, leader first, each
    /// the base of its own percentages; empty otherwise (`total_period` is the base then).
    pub group_totals: Vec<u64>,
}

/// An event group of the file's GROUP_DESC feature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventGroup {
    /// The group's name; `None` for an anonymous group (perf writes `{anon_group}`).
    pub name: Option<String>,
    /// The leader's attr index.
    pub leader: usize,
    /// Members, the leader included (attrs `leader..leader + members`).
    pub members: usize,
}

/// The event groups of a file (header.c `process_group_desc`): a u32 count, then per group its name (a u32
/// length and the NUL-padded text), the leader's index and the member count, in the file's byte order.
/// Groups of one member and descriptions that do not fit the file's attrs are left out.
pub fn event_groups(file: &PerfFile) -> Vec<EventGroup> {
    use object::endian::Endian;
    let Some((_, data)) = file
        .features()
        .other
        .iter()
        .find(|(id, _)| *id == crate::perf::abi::HEADER_GROUP_DESC)
    else {
        return Vec::new();
    };
    let e = file.endian();
    let mut at = 0usize;
    let u32_at = |at: &mut usize| -> Option<u32> {
        let b: [u8; 4] = data.get(*at..*at + 4)?.try_into().ok()?;
        *at += 4;
        Some(e.read_u32(b))
    };
    let Some(nr) = u32_at(&mut at) else {
        return Vec::new();
    };
    let mut groups = Vec::new();
    for _ in 0..nr {
        let Some(len) = u32_at(&mut at) else { break };
        let Some(text) = data.get(at..at + len as usize) else {
            break;
        };
        at += len as usize;
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        let name = String::from_utf8_lossy(&text[..end]).into_owned();
        let (Some(leader), Some(members)) = (u32_at(&mut at), u32_at(&mut at)) else {
            break;
        };
        let (leader, members) = (leader as usize, members as usize);
        if members > 1 && leader + members <= file.attrs().len() {
            groups.push(EventGroup {
                name: (name != "{anon_group}").then_some(name),
                leader,
                members,
            });
        }
    }
    groups
}

/// One row of a table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// The sort keys' values, in column order.
    pub keys: Vec<String>,
    /// Period of the samples with a callchain entry in this row (its IP's included); 0 without `children`.
    pub children: u64,
    /// Period of the samples whose IP is in this row.
    pub period: u64,
    /// The call graph's top nodes, largest first, those at or above perf's 0.5% threshold (empty without a
    /// graph).
    pub graph: Vec<GraphNode>,
    /// In an event group's table, the period of the samples of each member after the leader (`period` is the
    /// leader's); empty otherwise.
    pub members: Vec<u64>,
    /// Likewise each member's Children (`children` is the leader's), with children.
    pub members_children: Vec<u64>,
}

/// A node of a row's call graph: a run of frames no chain leaves or ends in before its last one (perf's
/// `callchain_node` and its `val` list).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphNode {
    /// The frames' names: the symbol (with ` (inlined)`), or the address as `0x%x` when unresolved.
    pub names: Vec<String>,
    /// Period of the chains through this node.
    pub period: u64,
    /// The nodes below, largest first.
    pub children: Vec<GraphNode>,
}

/// What perf's sort keys compare for one entry (sort.c's `cmp`/`collapse` callbacks), built per frame without
/// allocating: names are shared with the frames.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EntryKey {
    comm: Option<Rc<str>>,
    pid: Option<i32>,
    dso: Option<Rc<str>>,
    sym: Option<SymKey>,
}

/// A symbol as `sort__sym_cmp` tells symbols apart: by name and start (an inline node by its name and mark),
/// or by address when unresolved; not by the `[k]`/`[.]` level.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum SymKey {
    Name(Rc<str>, bool, u64),
    Addr(u64),
}

/// Short DSO names (sort.c compares `dso->short_name`), made once per DSO.
#[derive(Default)]
struct ShortNames(HashMap<(Rc<str>, bool), Rc<str>>);

impl ShortNames {
    fn get(&mut self, frame: &Frame, kernel: bool) -> Rc<str> {
        let long: Rc<str> = frame.dso.clone().unwrap_or_else(|| Rc::from("[unknown]"));
        // A kernel module named by its path (the build-id table's) keeps perf's short name `[name]`.
        let module = kernel && long.starts_with('/');
        self.0
            .entry((long.clone(), module))
            .or_insert_with(|| {
                if module {
                    Rc::from(module_short_name(&long))
                } else if let Some(tid) = jit_map_tid(&long) {
                    // dsos.c `dso__set_basename`: a JIT map's DSO is `[JIT] tid N`, whether or not the map
                    // file exists.
                    Rc::from(format!("[JIT] tid {tid}"))
                } else {
                    Rc::from(long.rsplit('/').next().unwrap_or(&long))
                }
            })
            .clone()
    }
}

/// The number in a `/tmp/perf-N.map` name, read as C's `sscanf("/tmp/perf-%d.map")` does (digits after an
/// optional sign; what follows them does not matter).
fn jit_map_tid(long: &str) -> Option<i64> {
    let rest = long.strip_prefix("/tmp/perf-")?;
    let digits = rest
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || i == 0 && (c == '-' || c == '+')))
        .map_or(rest.len(), |(i, _)| i);
    rest[..digits].parse().ok()
}

fn entry_key(
    sort: &[SortKey],
    names: &mut ShortNames,
    info: &SampleInfo,
    frame: &Frame,
    kernel: bool,
) -> EntryKey {
    let mut key = EntryKey {
        comm: None,
        pid: None,
        dso: None,
        sym: None,
    };
    for k in sort {
        match k {
            SortKey::Comm => key.comm = Some(info.comm.clone()),
            SortKey::Pid => {
                key.pid = Some(info.pid);
                key.comm = Some(info.comm.clone());
            }
            SortKey::Dso => key.dso = Some(names.get(frame, kernel)),
            SortKey::Sym => {
                key.sym = Some(match &frame.sym {
                    // The start tells apart symbols that print alike (`f` and its `f [clone .warm]`).
                    Some(s) => SymKey::Name(
                        s.clone(),
                        frame.inlined,
                        if frame.inlined {
                            0
                        } else {
                            frame.addr.wrapping_sub(frame.offset)
                        },
                    ),
                    None => SymKey::Addr(frame.addr),
                })
            }
            _ => {}
        }
    }
    key
}

/// The row texts of an entry's first frame: comm, `pid:comm`, short DSO name, `[k]`/`[.]` and symbol.
fn entry_texts(sort: &[SortKey], key: &EntryKey, info: &SampleInfo, kernel: bool) -> Vec<String> {
    sort.iter()
        .map(|k| match k {
            SortKey::Comm => info.comm.to_string(),
            SortKey::Pid => format!("{:>7}:{}", info.pid, info.comm),
            SortKey::Dso => key.dso.as_deref().unwrap_or_default().to_owned(),
            SortKey::Sym => {
                let level = if kernel { 'k' } else { '.' };
                match &key.sym {
                    // sort.c writes an inline node's name with its ` (inlined)` mark.
                    Some(SymKey::Name(s, true, _)) => format!("[{level}] {s} (inlined)"),
                    Some(SymKey::Name(s, false, _)) => format!("[{level}] {s}"),
                    // `%-#.*llx`: C's `#` writes no `0x` before a zero.
                    Some(SymKey::Addr(0)) | None => format!("[{level}] {:016x}", 0),
                    Some(SymKey::Addr(a)) => format!("[{level}] {a:#018x}"),
                }
            }
            _ => String::new(),
        })
        .collect()
}

/// Whether a callchain frame is the kernel's (`[k]`): one in a kernel map; a frame no map covers keeps the
/// level of the entry perf looked at before it. perf walks a sample's chain from the outermost caller inward
/// (children mode orders callchains caller first) after the IP's own entry, and `fill_callchain_info` leaves
/// the level alone for a frame without a map: so the outermost `[unknown]` of a sample taken in the kernel is
/// `[k]`, even in the user part of the chain.
fn frame_level(frame: &Frame, before: bool) -> bool {
    match frame.dso.as_deref() {
        None => before,
        Some(d) => {
            d.starts_with("[kernel") || frame.addr >= 0xffff_8000_0000_0000 && !frame.inlined
        }
    }
}

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
struct Graphs {
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

const NONE: u32 = u32::MAX;

impl Graphs {
    fn new_node(&mut self, frame: u32) -> u32 {
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

    /// The id of a frame; `dso_rank` orders DSOs (see [`report`]).
    fn frame_id(
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
    fn append(&mut self, root: u32, chain: impl Iterator<Item = u32>, period: u64) {
        let mut node = root;
        let mut any = false;
        for frame in chain {
            any = true;
            let child = match self.edges.get(&(node, frame)) {
                Some(&c) => c,
                None => {
                    let c = self.new_node(frame);
                    let parent = &mut self.nodes[node as usize];
                    let first = parent.first_child;
                    parent.first_child = c;
                    parent.children += 1;
                    self.nodes[c as usize].next_sibling = first;
                    self.edges.insert((node, frame), c);
                    c
                }
            };
            self.nodes[child as usize].cumul += period;
            node = child;
        }
        if any {
            self.nodes[root as usize].cumul += period;
            self.nodes[node as usize].hit += period;
        }
    }

    /// The printed tree below `node`: runs of frames, those of at least `min_hit`, largest first; siblings of
    /// equal period in the order of perf's tree of children, where `match_chain` puts a new frame left of a
    /// smaller one: by DSO and address, descending.
    fn sorted(&self, node: u32, min_hit: u64) -> Vec<GraphNode> {
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

/// One entry being summed.
struct EntryAcc {
    keys: Vec<String>,
    children: u64,
    period: u64,
    /// Root of its call-graph tree.
    root: u32,
    /// The thread of its first sample (perf's `he->thread`).
    tid: i32,
    /// The longest chain appended to it (`callchain_root.max_depth`).
    max_depth: usize,
    /// Where `sort__sym_cmp` puts it: unresolved after resolved, then by symbol start or address.
    sym_order: (bool, u64),
    /// Its first frame has no symbol (perf's `he->ms.sym` is NULL), whether or not symbols are a sort key.
    unresolved: bool,
}

/// One event's table being summed.
struct Acc {
    attr_index: usize,
    event: String,
    samples: u64,
    total_period: u64,
    entries: Vec<EntryAcc>,
    /// By what perf's sort keys compare; the entry keeps the texts of its first frame.
    index: HashMap<EntryKey, usize>,
    graphs: Graphs,
}

impl Acc {
    fn entry(
        &mut self,
        sort: &[SortKey],
        key: &EntryKey,
        info: &SampleInfo,
        frame: &Frame,
        kernel: bool,
    ) -> &mut EntryAcc {
        let start = frame.addr.wrapping_sub(frame.offset);
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => {
                let root = self.graphs.new_node(NONE);
                self.entries.push(EntryAcc {
                    keys: entry_texts(sort, key, info, kernel),
                    children: 0,
                    period: 0,
                    root,
                    tid: info.tid,
                    max_depth: 0,
                    unresolved: frame.sym.is_none(),
                    sym_order: match &key.sym {
                        Some(SymKey::Addr(a)) => (true, *a),
                        _ => (false, start),
                    },
                });
                self.index.insert(key.clone(), self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        &mut self.entries[i]
    }
}

/// Computes the tables of every event with samples, in the file's attr order.
pub fn report(file: &PerfFile, options: &ReportOptions) -> Result<Vec<EventTable>, ScriptError> {
    if options.branch {
        return report_branches(file, options);
    }
    // perf keeps `max_stack` entries of a chain from its start in callee order but from its end in caller
    // order (machine.c `thread__resolve_callchain_sample`): with children the outermost callers stay and a
    // long chain loses its IP. So the chain is read whole and cut here.
    let max_stack = options.script.max_stack;
    let mut script = options.script.clone();
    script.max_stack = usize::MAX;
    let mut it = samples(file, &script);
    let sort = &options.sort[..];
    let mut tables: Vec<Acc> = Vec::new();
    let wanted = |frame: &Frame| match &options.dsos {
        None => true,
        Some(list) => {
            let long = frame.dso_name();
            let short = long.rsplit('/').next().unwrap_or(long);
            let module = long.contains(".ko").then(|| module_short_name(long));
            list.iter()
                .any(|d| d == long || d == short || module.as_deref() == Some(d.as_str()))
        }
    };
    let mut names = ShortNames::default();
    // perf orders graph siblings of different DSOs by the address of their `struct dso`, that is by when
    // perf made it: those of the build-id table first, in its order, as it reads the header; the others as
    // met. A frame without a map has a NULL DSO, below every other.
    let mut dso_rank: HashMap<Option<Rc<str>>, usize> = HashMap::new();
    dso_rank.insert(None, 0);
    for entry in file.build_ids() {
        let next = dso_rank.len();
        dso_rank
            .entry(Some(Rc::from(entry.filename.as_str())))
            .or_insert(next);
    }
    let mut seen: Vec<EntryKey> = Vec::new();
    // The sample's chain as graph frame ids, outermost caller first (perf's caller order).
    let mut chain: Vec<u32> = Vec::new();
    // The address perf's callchain cursor holds for each frame (`node->ip`): what names an unresolved entry.
    let mut addrs: Vec<u64> = Vec::new();
    if options.children || options.graph {
        it.track_frame_addresses();
    }
    while let Some(item) = it.next_sample() {
        let (info, mut frames) = item?;
        addrs.clear();
        addrs.extend_from_slice(it.frame_addresses());
        if frames.len() > max_stack {
            if options.children {
                frames.drain(..frames.len() - max_stack);
                if addrs.len() > max_stack {
                    addrs.drain(..addrs.len() - max_stack);
                }
            } else {
                frames.truncate(max_stack);
                addrs.truncate(max_stack);
            }
        }
        let raw = |i: usize, f: &Frame| addrs.get(i).copied().unwrap_or(f.addr);
        let mut frame = it.ip_frame(&info);
        if frame.sym.is_none() && info.cpumode == MISC_KERNEL {
            frame.addr = it.kernel_report_address(frame.addr);
        }
        // Without a PERIOD field every sample stands for the attr's fixed period (perf's
        // `evsel__parse_sample` sets `data->period = evsel->core.attr.sample_period`).
        let period = info.period.unwrap_or_else(|| {
            file.attrs()
                .get(info.attr_index)
                .map(|a| &a.attr)
                .filter(|a| a.flags & crate::perf::abi::ATTR_FLAG_FREQ == 0)
                .map_or(1, |a| a.sample_period_or_freq.max(1))
        });
        let index = match tables.iter().position(|t| t.attr_index == info.attr_index) {
            Some(i) => i,
            None => {
                tables.push(Acc {
                    attr_index: info.attr_index,
                    event: info.event.to_string(),
                    samples: 0,
                    total_period: 0,
                    entries: Vec::new(),
                    index: HashMap::new(),
                    graphs: Graphs::default(),
                });
                tables.len() - 1
            }
        };
        let t = &mut tables[index];
        let kernel = info.cpumode == MISC_KERNEL;
        let key = entry_key(sort, &mut names, &info, &frame, kernel);
        let self_wanted = wanted(&frame);
        if !options.children && !self_wanted {
            continue;
        }
        t.samples += 1;
        t.total_period += period;
        let graph = options.graph && info.has_callchain;
        if graph {
            chain.clear();
            for (i, f) in frames.iter().enumerate().rev() {
                chain.push(t.graphs.frame_id(f, raw(i, f), &mut dso_rank));
            }
        }
        if self_wanted {
            let e = t.entry(sort, &key, &info, &frame, kernel);
            e.period += period;
            if options.children {
                e.children += period;
            }
            let root = e.root;
            if graph {
                e.max_depth = e.max_depth.max(chain.len());
            }
            if graph && options.children {
                t.graphs.append(root, chain.iter().copied(), period);
            } else if graph {
                t.graphs.append(root, chain.iter().rev().copied(), period);
            }
        }
        if options.children && info.has_callchain {
            seen.clear();
            seen.push(key);
            let mut kernel = kernel;
            for (at, (i, f)) in frames.iter().enumerate().rev().enumerate() {
                kernel = frame_level(f, kernel);
                // fill_callchain_info: an unresolved entry is named by the cursor's address (`al->addr =
                // node->ip`), not map-relative as the sample's own IP is.
                let shown;
                let f = if f.sym.is_none() {
                    shown = Frame {
                        addr: raw(i, f),
                        ..f.clone()
                    };
                    &shown
                } else {
                    f
                };
                let key = entry_key(sort, &mut names, &info, f, kernel);
                if seen.contains(&key) || !wanted(f) {
                    continue;
                }
                let e = t.entry(sort, &key, &info, f, kernel);
                e.children += period;
                let root = e.root;
                if graph {
                    e.max_depth = e.max_depth.max(chain.len() - at);
                    t.graphs.append(root, chain[at..].iter().copied(), period);
                }
                seen.push(key);
            }
        }
    }
    tables.sort_by_key(|t| t.attr_index);
    let mut staged: Vec<Staged> = tables
        .into_iter()
        .map(|t| {
            // hist.c's `output_resort`: a graph node needs `min_percent` (0.5) of the event's callchain
            // period, as perf computes it in doubles and truncates.
            let min_hit = (t.total_period as f64 * (0.5 / 100.0)) as u64;
            let graphs = &t.graphs;
            let comm_width = t
                .entries
                .iter()
                .map(|e| it.thread_comm(e.tid).chars().count())
                .max()
                .unwrap_or(0);
            let rows = t
                .entries
                .into_iter()
                .map(|e| StagedRow {
                    row: Row {
                        graph: if options.graph {
                            graphs.sorted(e.root, min_hit)
                        } else {
                            Vec::new()
                        },
                        keys: e.keys,
                        children: e.children,
                        period: e.period,
                        members: Vec::new(),
                        members_children: Vec::new(),
                    },
                    tid: e.tid,
                    depth: e.max_depth,
                    sym_order: e.sym_order,
                    unresolved: e.unresolved,
                })
                .collect();
            Staged {
                attr_index: t.attr_index,
                table: EventTable {
                    event: t.event,
                    samples: t.samples,
                    total_period: t.total_period,
                    rows: Vec::new(),
                    children: options.children,
                    comm_width,
                    dso_width: 0,
                    group_totals: Vec::new(),
                },
                rows,
            }
        })
        .collect();
    // perf 6.1 shows a file's event groups as groups (header.c sets `symbol_conf.event_group` when GROUP_DESC
    // has one): one table per group, a column per member.
    for g in event_groups(file) {
        staged = group_tables(staged, &g, sort, |i| it.event_name(i));
    }
    let by_depth = options.graph && options.children && sort.contains(&SortKey::Sym);
    Ok(staged
        .into_iter()
        .map(|st| {
            let mut table = st.table;
            let mut rows = st.rows;
            table.dso_width = if options.dsos.is_none() && rows.iter().any(|r| r.unresolved) {
                16
            } else {
                0
            };
            // perf's output order comes from inserting the entries, in the order of its collapsed tree, into
            // a red-black tree by `hist_entry__sort`, which is not a total order (see `output_cmp`): the same
            // insertions into the same tree give the same rows.
            rows.sort_by(|a, b| collapse_cmp(sort, &a.row, a.sym_order, &b.row, b.sym_order));
            let order = rb_order(rows.len(), |new, old| {
                let (a, b) = (&rows[new], &rows[old]);
                output_cmp(
                    sort,
                    by_depth,
                    (&a.row, a.tid, a.depth),
                    (&b.row, b.tid, b.depth),
                )
            });
            let mut slots: Vec<Option<Row>> = rows.into_iter().map(|r| Some(r.row)).collect();
            table.rows = order.into_iter().filter_map(|i| slots[i].take()).collect();
            table
        })
        .collect())
}

/// A table whose rows are not yet in perf's order.
struct Staged {
    attr_index: usize,
    table: EventTable,
    rows: Vec<StagedRow>,
}

/// A row with what perf's sort looks at besides its columns.
struct StagedRow {
    row: Row,
    tid: i32,
    depth: usize,
    sym_order: (bool, u64),
    unresolved: bool,
}

/// Folds the tables of group `g`'s members into one, in the leader's place (hist.c `hists__link`: an entry
/// of a member that the leader lacks joins as a row with the leader's share 0). Its header counts every
/// member's samples and period (builtin-report.c `hists__fprintf_nr_sample_events`) and names the group as
/// `evsel__group_desc` does.
fn group_tables(
    staged: Vec<Staged>,
    g: &EventGroup,
    sort: &[SortKey],
    name_of: impl Fn(usize) -> Option<Rc<str>>,
) -> Vec<Staged> {
    let in_group = |i: usize| (g.leader..g.leader + g.members).contains(&i);
    if !staged.iter().any(|s| in_group(s.attr_index)) {
        return staged;
    }
    let n = g.members - 1;
    let names: Vec<String> = (g.leader..g.leader + g.members)
        .map(|i| name_of(i).map(|n| n.to_string()).unwrap_or_default())
        .collect();
    let mut merged = Staged {
        attr_index: g.leader,
        table: EventTable {
            event: format!(
                "{} {{ {} }}",
                g.name.as_deref().unwrap_or("anon group"),
                names.join(", ")
            ),
            group_totals: vec![0; g.members],
            ..EventTable::default()
        },
        rows: Vec::new(),
    };
    // Entries match as `hist_entry__cmp` compares them: by every key, a symbol without its level.
    let key_of = |r: &Row| -> Vec<String> {
        r.keys
            .iter()
            .zip(sort)
            .map(|(v, k)| match k {
                SortKey::Sym => v.get(4..).unwrap_or_default().to_owned(),
                _ => v.clone(),
            })
            .collect()
    };
    let mut index: HashMap<Vec<String>, usize> = HashMap::new();
    let mut rest = Vec::new();
    let mut members: Vec<Staged> = Vec::new();
    for st in staged {
        if in_group(st.attr_index) {
            members.push(st);
        } else {
            rest.push(st);
        }
    }
    members.sort_by_key(|m| m.attr_index);
    for m in members {
        let slot = m.attr_index - g.leader;
        let t = &mut merged.table;
        t.samples += m.table.samples;
        t.total_period += m.table.total_period;
        t.group_totals[slot] = m.table.total_period;
        t.comm_width = t.comm_width.max(m.table.comm_width);
        t.children = m.table.children;
        for mut r in m.rows {
            let key = key_of(&r.row);
            let period = r.row.period;
            match index.get(&key) {
                Some(&i) => {
                    let row = &mut merged.rows[i].row;
                    if slot == 0 {
                        row.period = period;
                        row.children = r.row.children;
                    } else {
                        row.members[slot - 1] = period;
                        row.members_children[slot - 1] = r.row.children;
                    }
                }
                None => {
                    r.row.members = vec![0; n];
                    r.row.members_children = vec![0; n];
                    // A member's entry the leader lacks has no callchain of the leader's to print.
                    if slot > 0 {
                        r.row.period = 0;
                        r.row.members[slot - 1] = period;
                        r.row.members_children[slot - 1] = r.row.children;
                        r.row.children = 0;
                        r.row.graph.clear();
                        r.depth = 0;
                    }
                    index.insert(key, merged.rows.len());
                    merged.rows.push(r);
                }
            }
        }
    }
    rest.push(merged);
    rest.sort_by_key(|s| s.attr_index);
    rest
}

/// Whether a row's symbol text is an address (`[k] 0x…`, or `[k] 0000000000000000` for zero).
fn unresolved_sym(v: &str) -> bool {
    v.get(4..)
        .is_some_and(|s| s.starts_with("0x") || s == "0000000000000000")
}

/// Whether a row's DSO is perf's NULL one (no map): sort.c's `cmp_null` puts it last.
fn no_dso(v: &str) -> bool {
    v == "[unknown]"
}

/// The order of perf's collapsed tree (`hist_entry__collapse`, ascending): comm and DSO names by `strcmp`, then
/// symbols by `sort__sym_cmp` (resolved before unresolved, then by start or address).
fn collapse_cmp(
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
fn output_cmp(
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
fn rb_order(n: usize, cmp: impl Fn(usize, usize) -> std::cmp::Ordering) -> Vec<usize> {
    const NIL: usize = usize::MAX;
    let (mut left, mut right, mut parent) = (vec![NIL; n], vec![NIL; n], vec![NIL; n]);
    let mut red = vec![false; n];
    let mut root = NIL;
    fn rotate(
        x: usize,
        to_left: bool,
        root: &mut usize,
        left: &mut [usize],
        right: &mut [usize],
        parent: &mut [usize],
    ) {
        // to_left: x's right child y takes x's place and x becomes y's left child (and the mirror).
        let y = if to_left { right[x] } else { left[x] };
        let inner = if to_left { left[y] } else { right[y] };
        if to_left {
            right[x] = inner;
        } else {
            left[x] = inner;
        }
        if inner != NIL {
            parent[inner] = x;
        }
        let p = parent[x];
        parent[y] = p;
        if p == NIL {
            *root = y;
        } else if left[p] == x {
            left[p] = y;
        } else {
            right[p] = y;
        }
        if to_left {
            left[y] = x;
        } else {
            right[y] = x;
        }
        parent[x] = y;
    }
    for z in 0..n {
        let (mut y, mut x, mut went_left) = (NIL, root, false);
        while x != NIL {
            y = x;
            went_left = cmp(z, x) == std::cmp::Ordering::Greater;
            x = if went_left { left[x] } else { right[x] };
        }
        parent[z] = y;
        if y == NIL {
            root = z;
        } else if went_left {
            left[y] = z;
        } else {
            right[y] = z;
        }
        red[z] = true;
        let mut z = z;
        while z != root && red[parent[z]] {
            let p = parent[z];
            let g = parent[p];
            let p_is_left = left[g] == p;
            let uncle = if p_is_left { right[g] } else { left[g] };
            if uncle != NIL && red[uncle] {
                red[p] = false;
                red[uncle] = false;
                red[g] = true;
                z = g;
                continue;
            }
            let mut p = p;
            let inner = if p_is_left {
                right[p] == z
            } else {
                left[p] == z
            };
            if inner {
                rotate(p, p_is_left, &mut root, &mut left, &mut right, &mut parent);
                z = p;
                p = parent[z];
            }
            red[p] = false;
            red[g] = true;
            rotate(g, !p_is_left, &mut root, &mut left, &mut right, &mut parent);
        }
        red[root] = false;
    }
    let mut order = Vec::with_capacity(n);
    let mut stack = Vec::new();
    let mut at = root;
    while at != NIL || !stack.is_empty() {
        while at != NIL {
            stack.push(at);
            at = left[at];
        }
        let top = stack.pop().expect("the loop condition saw a node");
        order.push(top);
        at = right[top];
    }
    order
}

/// perf's sample count shorthand (`"%lu%c"` with a unit char): `1K`, `12M`, and `202 ` (a space for no unit).
fn short_count(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 {
        format!("{}K", n / 1000)
    } else {
        format!("{n} ")
    }
}

/// The bit of a depth in hist.c's `int depth_mask`: `1 << depth` as x86 shifts it (the count taken mod 32),
/// so that graphs deeper than 31 levels print as perf's do.
fn depth_bit(depth: usize) -> u32 {
    1u32 << (depth % 32)
}

/// Writes a row's call graph as hist.c's `callchain__fprintf_graph` (graph mode, percent values): `parent` is
/// the row's own period (Children with children), `total` the event's.
fn write_graph(
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

/// Writes the tables as `perf report --stdio` prints them (without the random tip line).
pub fn write_report<W: Write>(
    out: &mut W,
    sort: &[SortKey],
    tables: &[EventTable],
) -> io::Result<()> {
    writeln!(
        out,
        "# To display the perf.data header info, please use --header/--header-only options."
    )?;
    writeln!(out, "#")?;
    for (i, t) in tables.iter().enumerate() {
        // perf states the lost samples once, before the first event's table.
        if i == 0 {
            writeln!(out, "#")?;
            writeln!(out, "# Total Lost Samples: 0")?;
            writeln!(out, "#")?;
        }
        writeln!(
            out,
            "# Samples: {} of event{} '{}'",
            short_count(t.samples),
            if t.group_totals.len() > 1 { "s" } else { "" },
            t.event
        )?;
        writeln!(out, "# Event count (approx.): {}", t.total_period)?;
        writeln!(out, "#")?;
        let widths: Vec<usize> = sort
            .iter()
            .enumerate()
            .map(|(i, k)| {
                t.rows
                    .iter()
                    // hist.c sizes the symbol column by the name alone (`namelen + 4`), without the
                    // ` (inlined)` mark it then prints.
                    .map(|r| {
                        let v = &r.keys[i];
                        let v = match k {
                            SortKey::Sym => v.strip_suffix(" (inlined)").unwrap_or(v),
                            _ => v,
                        };
                        match k {
                            SortKey::Comm => t.comm_width,
                            // `%7d:` and the comm (sort.c `hist_entry__thread_snprintf`).
                            SortKey::Pid => t.comm_width + 8,
                            SortKey::Dso => v.chars().count().max(t.dso_width),
                            // An unresolved symbol counts as `[k] 0x` and 16 digits, also `0` (printed
                            // without `0x`).
                            SortKey::Sym | SortKey::SymFrom | SortKey::SymTo
                                if unresolved_sym(v) =>
                            {
                                22
                            }
                            SortKey::Sym | SortKey::SymFrom | SortKey::SymTo | SortKey::Cycles => {
                                v.chars().count()
                            }
                            // Only entries whose source resolved count (hist.c `hists__calc_col_len`).
                            SortKey::DsoFrom => t.dso_width,
                        }
                    })
                    .max()
                    .unwrap_or(0)
                    .max(k.header().len())
            })
            .collect();
        // A group's columns hold a value per member, 8 wide each (hist.c `hpp__width_fn`).
        let overhead = 8 * t.group_totals.len().max(1);
        if t.children {
            write!(out, "# {:>overhead$}  {:>overhead$}", "Children", "Self")?;
        } else {
            write!(out, "# {:>overhead$}", "Overhead")?;
        }
        for (k, &w) in sort.iter().zip(&widths) {
            write!(out, "  {:<w$}", k.header())?;
        }
        writeln!(out)?;
        write!(out, "# {}", ".".repeat(overhead))?;
        if t.children {
            write!(out, "  {}", ".".repeat(overhead))?;
        }
        for w in &widths {
            write!(out, "  {}", ".".repeat(*w))?;
        }
        writeln!(out)?;
        writeln!(out, "#")?;
        let pct = |v: u64| {
            if t.total_period == 0 {
                0.0
            } else {
                v as f64 * 100.0 / t.total_period as f64
            }
        };
        // `" %*.2f%%"` per member, after the row's leading two spaces (hist.c `__hpp__fmt`).
        let group_values = |out: &mut W, first: u64, rest: &[u64]| -> io::Result<()> {
            for (v, total) in std::iter::once(&first).chain(rest).zip(&t.group_totals) {
                let p = if *total == 0 {
                    0.0
                } else {
                    *v as f64 * 100.0 / *total as f64
                };
                write!(out, " {p:>6.2}%")?;
            }
            Ok(())
        };
        for row in &t.rows {
            if !t.group_totals.is_empty() {
                write!(out, "  ")?;
                if t.children {
                    group_values(out, row.children, &row.members_children)?;
                    write!(out, "  ")?;
                }
                group_values(out, row.period, &row.members)?;
            } else if t.children {
                write!(
                    out,
                    "{:>9.2}%  {:>7.2}%",
                    pct(row.children),
                    pct(row.period)
                )?;
            } else {
                write!(out, "{:>9.2}%", pct(row.period))?;
            }
            for (i, ((v, &w), k)) in row.keys.iter().zip(&widths).zip(sort).enumerate() {
                // sort.c pads every column with `%-*.*s` except a symbol, printed with `%-.*s`, which hist.c
                // pads only when a column follows (`hist_entry__snprintf_alignment`). The comm columns cut a
                // longer comm: `%-*.*s`.
                let last = i + 1 == sort.len();
                match k {
                    SortKey::Sym | SortKey::SymFrom | SortKey::SymTo if last => {
                        write!(out, "  {v}")?
                    }
                    SortKey::Sym | SortKey::SymFrom | SortKey::SymTo => write!(out, "  {v:<w$}")?,
                    // sort.c `_hist_entry__dso_snprintf`: `%-*.*s`, a longer name cut.
                    SortKey::DsoFrom => write!(out, "  {v:<w$.w$}")?,
                    SortKey::Cycles => write!(out, "  {v:<w$}")?,
                    SortKey::Comm => write!(out, "  {v:<w$.w$}")?,
                    SortKey::Pid => {
                        let (pid, comm) = v.split_at(v.find(':').map_or(0, |i| i + 1));
                        let c = w.saturating_sub(8);
                        write!(out, "  {pid}{comm:<c$.c$}")?;
                    }
                    SortKey::Dso => write!(out, "  {v:<w$}")?,
                }
            }
            writeln!(out)?;
            if !row.graph.is_empty() {
                let parent = if t.children { row.children } else { row.period };
                // hist.c leaves out a top frame that repeats the row's symbol when the sort starts with it.
                let skip_first = sort.first() == Some(&SortKey::Sym);
                // A group's graph is its leader's, in shares of the leader's total.
                let total = t.group_totals.first().copied().unwrap_or(t.total_period);
                write_graph(out, &row.graph, total, parent, skip_first)?;
            }
        }
        writeln!(out)?;
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_layout_matches_perf() {
        let t = EventTable {
            event: "cpu-clock:ppp".into(),
            samples: 1180,
            total_period: 1000,
            rows: vec![
                Row {
                    keys: vec!["chain-fp".into(), "chain-fp".into(), "[.] chain_c".into()],
                    children: 0,
                    period: 994,
                    ..Row::default()
                },
                Row {
                    keys: vec![
                        "chain-fp".into(),
                        "[kernel.kallsyms]".into(),
                        "[k] __get_user_8".into(),
                    ],
                    children: 0,
                    period: 6,
                    ..Row::default()
                },
            ],
            children: false,
            comm_width: 8,
            ..EventTable::default()
        };
        let mut out = Vec::new();
        write_report(&mut out, &[SortKey::Comm, SortKey::Dso, SortKey::Sym], &[t]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let body: Vec<&str> = text.lines().skip(5).collect();
        assert_eq!(
            body[..6],
            [
                "# Samples: 1K of event 'cpu-clock:ppp'",
                "# Event count (approx.): 1000",
                "#",
                "# Overhead  Command   Shared Object      Symbol          ",
                "# ........  ........  .................  ................",
                "#",
            ]
        );
        assert_eq!(
            body[6],
            "    99.40%  chain-fp  chain-fp           [.] chain_c"
        );
        assert_eq!(short_count(999), "999 ");
    }
}

#[cfg(test)]
mod graph_tests {
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
    fn rb_order_of_a_total_order_is_sorted_and_ties_keep_insertion_order() {
        let values: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 101).collect();
        let order = rb_order(values.len(), |new, old| values[new].cmp(&values[old]));
        let mut want: Vec<usize> = (0..values.len()).collect();
        want.sort_by(|&a, &b| values[b].cmp(&values[a]));
        assert_eq!(order, want);
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

/// What a file's events sample, as perf's report decides its modes from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileModes {
    /// Some event samples callchains and the file is not a pipe: perf's default is Children/Self and a call
    /// graph (builtin-report.c `report__setup_sample_type`; for a pipe it has not read the events then).
    pub callchains: bool,
    /// Some event samples branch stacks (what `--branch-stack` needs).
    pub branch_data: bool,
    /// Branch mode is perf's default: the file has HEADER_BRANCH_STACK and no event samples user stacks.
    pub branch_default: bool,
}

impl FileModes {
    /// The modes of `file`.
    pub fn of(file: &PerfFile) -> FileModes {
        use crate::perf::abi::{
            HEADER_BRANCH_STACK, PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_CALLCHAIN,
            PERF_SAMPLE_STACK_USER,
        };
        let sample_types = file.attrs().iter().fold(0, |t, a| t | a.attr.sample_type);
        FileModes {
            callchains: !file.is_pipe()
                && file
                    .attrs()
                    .iter()
                    .any(|a| a.attr.sample_type & PERF_SAMPLE_CALLCHAIN != 0),
            branch_data: sample_types & PERF_SAMPLE_BRANCH_STACK != 0,
            branch_default: file.feature_ids().contains(&HEADER_BRANCH_STACK)
                && sample_types & PERF_SAMPLE_STACK_USER == 0,
        }
    }
}

/// A branch's end as `ip__resolve_ams` leaves it: the symbol, or the address for one without.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum BranchEnd {
    Sym(Rc<str>, bool),
    Addr(u64),
}

/// What branch mode's keys compare (sort.c `sort__dso_from_cmp`, `sort__sym_from_cmp`, `sort__sym_to_cmp`,
/// `sort__cycles_cmp`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BranchKey {
    comm: Option<Rc<str>>,
    dso_from: Option<Rc<str>>,
    from: Option<BranchEnd>,
    to: Option<BranchEnd>,
    cycles: Option<u64>,
}

/// One branch-mode entry being summed.
struct BranchEntryAcc {
    keys: Vec<String>,
    period: u64,
    tid: i32,
    key: BranchKey,
    /// Where `_sort__sym_cmp` puts each end: unresolved after resolved; the symbol's start or the raw address.
    from_order: (bool, u64),
    to_order: (bool, u64),
}

/// Branch mode (builtin-report.c with `sort__mode == SORT_MODE__BRANCH`, hist.c `hist_iter_branch`): every
/// entry of a sample's branch stack counts as a sample of period 1 (the report shows the share of branches, not
/// of events), its ends resolved kernel first, then in the process; samples without a branch stack are left
/// out.
fn report_branches(
    file: &PerfFile,
    options: &ReportOptions,
) -> Result<Vec<EventTable>, ScriptError> {
    struct Table {
        attr_index: usize,
        event: String,
        samples: u64,
        entries: Vec<BranchEntryAcc>,
        index: HashMap<BranchKey, usize>,
        /// Widest source DSO among entries whose source resolved, 16 if one did not (`hists__calc_col_len`).
        dso_width: usize,
    }
    let sort = &options.sort[..];
    let mut it = samples(file, &options.script);
    it.track_branches();
    let mut names = ShortNames::default();
    let mut tables: Vec<Table> = Vec::new();
    let mut branches: Vec<(u64, u64, u64)> = Vec::new();
    while let Some(item) = it.next_sample() {
        let (info, _) = item?;
        branches.clear();
        branches.extend_from_slice(it.branches());
        if branches.is_empty() {
            continue;
        }
        let index = match tables.iter().position(|t| t.attr_index == info.attr_index) {
            Some(i) => i,
            None => {
                tables.push(Table {
                    attr_index: info.attr_index,
                    event: info.event.to_string(),
                    samples: 0,
                    entries: Vec::new(),
                    index: HashMap::new(),
                    dso_width: 0,
                });
                tables.len() - 1
            }
        };
        for &(from, to, flags) in &branches {
            let (mut f, f_level) = it.branch_frame(&info, from);
            let (mut t_frame, t_level) = it.branch_frame(&info, to);
            // `al_addr` is map-relative: in a module, from the module's start.
            for (fr, level) in [(&mut f, f_level), (&mut t_frame, t_level)] {
                if level == 'k' && fr.sym.is_none() {
                    fr.addr = it.kernel_report_address(fr.addr);
                }
            }
            // struct perf_branch_entry: mispred, predicted, in_tx, abort (1 bit each), then cycles:16.
            let cycles = (flags >> 4) & 0xffff;
            let end = |fr: &Frame, raw: u64| match &fr.sym {
                Some(s) => BranchEnd::Sym(s.clone(), fr.inlined),
                None => BranchEnd::Addr(raw),
            };
            let dso_from = names.get(&f, f_level == 'k');
            let key = BranchKey {
                comm: sort.contains(&SortKey::Comm).then(|| info.comm.clone()),
                // A source no map holds has perf's NULL DSO (printed `[unknown]`).
                dso_from: (sort.contains(&SortKey::DsoFrom) && f.dso.is_some())
                    .then(|| dso_from.clone()),
                from: sort.contains(&SortKey::SymFrom).then(|| end(&f, from)),
                to: sort.contains(&SortKey::SymTo).then(|| end(&t_frame, to)),
                cycles: sort.contains(&SortKey::Cycles).then_some(cycles),
            };
            let tb = &mut tables[index];
            tb.samples += 1;
            tb.dso_width = tb.dso_width.max(if f.sym.is_some() {
                dso_from.chars().count()
            } else if options.dsos.is_none() {
                16
            } else {
                0
            });
            let i = match tb.index.get(&key) {
                Some(&i) => i,
                None => {
                    let sym_text = |fr: &Frame, level: char| match &fr.sym {
                        Some(s) if fr.inlined => format!("[{level}] {s} (inlined)"),
                        Some(s) => format!("[{level}] {s}"),
                        None if fr.addr == 0 => format!("[{level}] {:016x}", 0),
                        None => format!("[{level}] {:#018x}", fr.addr),
                    };
                    let keys = sort
                        .iter()
                        .map(|k| match k {
                            SortKey::Comm => info.comm.to_string(),
                            SortKey::DsoFrom => dso_from.to_string(),
                            SortKey::SymFrom => sym_text(&f, f_level),
                            SortKey::SymTo => sym_text(&t_frame, t_level),
                            SortKey::Cycles if cycles == 0 => "-".to_owned(),
                            // `%-*hd`: the 16 bits as a signed short.
                            SortKey::Cycles => (cycles as u16 as i16).to_string(),
                            _ => String::new(),
                        })
                        .collect();
                    let order = |fr: &Frame, raw: u64| match fr.sym {
                        Some(_) => (false, fr.addr.wrapping_sub(fr.offset)),
                        None => (true, raw),
                    };
                    tb.entries.push(BranchEntryAcc {
                        keys,
                        period: 0,
                        tid: info.tid,
                        key: key.clone(),
                        from_order: order(&f, from),
                        to_order: order(&t_frame, to),
                    });
                    tb.index.insert(key, tb.entries.len() - 1);
                    tb.entries.len() - 1
                }
            };
            tb.entries[i].period += 1;
        }
    }
    tables.sort_by_key(|t| t.attr_index);
    Ok(tables
        .into_iter()
        .map(|mut t| {
            let comm_width = t
                .entries
                .iter()
                .map(|e| it.thread_comm(e.tid).chars().count())
                .max()
                .unwrap_or(0);
            // Entries reach perf's output sort in the order of its collapsed tree, and equal ones keep it.
            t.entries
                .sort_by(|a, b| branch_cmp(sort, a, b, true).reverse());
            let order = rb_order(t.entries.len(), |new, old| {
                branch_cmp(sort, &t.entries[new], &t.entries[old], false)
            });
            let mut slots: Vec<Option<BranchEntryAcc>> = t.entries.into_iter().map(Some).collect();
            let rows = order
                .into_iter()
                .filter_map(|i| slots[i].take())
                .map(|e| Row {
                    keys: e.keys,
                    period: e.period,
                    ..Row::default()
                })
                .collect();
            EventTable {
                event: t.event,
                samples: t.samples,
                total_period: t.samples,
                rows,
                comm_width,
                dso_width: t.dso_width,
                ..EventTable::default()
            }
        })
        .collect())
}

/// Branch mode's order, `Greater` when `a` goes first: with `collapse`, the order of perf's collapsed tree
/// (`hist_entry__collapse`: comm ascending, source DSO descending, ends by symbol start or address ascending
/// with resolved ones first, cycles descending); else `hist_entry__sort`'s: the period, then each key's
/// `se_cmp` (branch keys have no `se_sort`), in which two unresolved ends compare by address.
fn branch_cmp(
    sort: &[SortKey],
    a: &BranchEntryAcc,
    b: &BranchEntryAcc,
    collapse: bool,
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    // `_sort__sym_cmp(a, b)` / `_sort__addr_cmp(a, b)` as "a goes first": perf subtracts and takes the sign
    // as an s64, so a kernel address sorts before a user one; for addresses within 2^63 of each other that is
    // the order of the addresses as signed numbers.
    let ends = |x: (bool, u64), y: (bool, u64)| match (x.0, y.0) {
        (true, true) | (false, false) => (y.1 as i64).cmp(&(x.1 as i64)),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    };
    let first = if collapse {
        Ordering::Equal
    } else {
        a.period.cmp(&b.period)
    };
    first.then_with(|| {
        sort.iter()
            .map(|k| match k {
                SortKey::Comm => b.key.comm.cmp(&a.key.comm),
                // `_sort__dso_cmp` answers `cmp_null(right, left)` for a NULL DSO: it goes first.
                SortKey::DsoFrom => match (&a.key.dso_from, &b.key.dso_from) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Greater,
                    (Some(_), None) => Ordering::Less,
                    (Some(x), Some(y)) if collapse => y.cmp(x),
                    (Some(x), Some(y)) => x.cmp(y),
                },
                SortKey::SymFrom => ends(a.from_order, b.from_order),
                SortKey::SymTo => ends(a.to_order, b.to_order),
                SortKey::Cycles => a.key.cycles.cmp(&b.key.cycles),
                _ => Ordering::Equal,
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    })
}
