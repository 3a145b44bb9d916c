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
//! the order perf's red-black trees give them: the entries are kept in a replay of its `entries_in` tree,
//! re-inserted into its collapsed tree, then into its output tree (`rb_order`); neither comparison is a
//! total order (unresolved addresses compare by a wrapped difference, and with each other by address but with
//! resolved symbols by DSO name; callers by depth only within a thread), so the trees' shapes place the rows
//! the comparisons do not, and every entry is found by searching the tree as perf searches it: a search that
//! misses an entry makes a second one, as in perf.
//!
//! This file owns the public surface (options, sort keys, tables, rows, `FileModes`) and the summing of samples
//! into entries (`report`); the rest is one concept a file: `graph` (callchain trees and their text), `group`
//! (GROUP_DESC groups and their fold), `branch` (branch mode), `order` (perf's row order and the red-black-tree
//! replay), `stdio` (the table text).

use crate::perf::data::PerfFile;
use crate::perf::script::machine::module_short_name;
use crate::perf::script::resolve::MISC_KERNEL;
use crate::perf::script::session::{samples, ScriptError};
use crate::perf::script::{Frame, Options, SampleInfo};
use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

mod branch;
mod graph;
mod group;
mod order;
mod stdio;

use crate::perf::rbtree::RbTree;
use branch::report_branches;
use graph::{Graphs, NONE};
use group::group_tables;
pub use group::{event_groups, EventGroup};
use order::{hist_cmp, output_cmp, rb_order, rb_order_then, reaches_trace, tree_find};
pub use stdio::write_report;

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
    /// A tracepoint sample's trace line (`trace`: its print fmt rendered, as `perf script` prints it); perf's
    /// default key when every event of the file is a tracepoint.
    Trace,
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
            SortKey::Trace => "Trace output",
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
            SortKey::Trace => "trace",
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
            "trace" => Ok(SortKey::Trace),
            other => Err(format!(
                "unknown sort key `{other}` (comm, pid, dso, sym, trace; in branch mode comm, dso_from, \
                 symbol_from, symbol_to, cycles)"
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
    /// The graph in caller order, outermost caller at the top (perf's default unless `--no-children`, also
    /// for a pipe, whose report has no Children column); callee order, the sample's IP at the top, without.
    pub caller: bool,
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
    /// The lost counts of the file's PERF_RECORD_LOST_SAMPLES records: perf's evlist-wide `Total Lost
    /// Samples`, printed once above the first table (the same in every table of a report).
    pub lost_samples: u64,
    /// The longest trace line perf had rendered when it sized the `Trace output` column (at least the
    /// header's width is printed).
    pub trace_width: usize,
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
#[derive(Clone, Debug)]
struct EntryKey {
    comm: Option<Rc<str>>,
    pid: Option<i32>,
    dso: Option<Rc<str>>,
    sym: Option<SymKey>,
    /// The frame's short DSO name under the `sym` key when `dso` is not a key of its own: perf's
    /// `sort__sym_cmp` then compares DSOs before symbols whenever one side is resolved, so one symbol name in
    /// two DSOs is two entries, and resolved symbols order by DSO first. Two unresolved addresses compare by
    /// address alone.
    sym_dso: Option<Rc<str>>,
    trace: Option<Rc<str>>,
}

/// A symbol as `sort__sym_cmp` tells symbols apart: by name and start (an inline node by its name and mark),
/// or by address when unresolved; not by the `[k]`/`[.]` level.
#[derive(Clone, Debug, PartialEq, Eq)]
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
        sym_dso: None,
        trace: None,
    };
    for k in sort {
        match k {
            SortKey::Comm => key.comm = Some(info.comm.clone()),
            // sort.c `sort__thread_cmp`: the thread, by tid; its comm is printed as it is at the end.
            SortKey::Pid => key.pid = Some(info.tid),
            SortKey::Dso => key.dso = Some(names.get(frame, kernel)),
            SortKey::Sym => {
                if !sort.contains(&SortKey::Dso) {
                    key.sym_dso = Some(names.get(frame, kernel));
                }
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
            SortKey::Trace => key.trace = info.trace.as_deref().map(Rc::from),
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
            // Replaced by the thread's last comm once every sample is read.
            SortKey::Pid => String::new(),
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
            SortKey::Trace => key.trace.as_deref().unwrap_or_default().to_owned(),
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
    /// What perf's trees of entries compare (`hist_cmp`).
    key: EntryKey,
    /// Its first frame has no symbol (perf's `he->ms.sym` is NULL), whether or not symbols are a sort key.
    unresolved: bool,
    /// perf has rendered its trace line (see `reaches_trace`).
    trace_made: bool,
}

/// One event's table being summed.
struct Acc {
    attr_index: usize,
    event: String,
    samples: u64,
    total_period: u64,
    entries: Vec<EntryAcc>,
    /// perf's `hists->entries_in`: every entry, node id = entry index, in perf's shape (see `hist_cmp`).
    tree: RbTree<()>,
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
        let mut trace_made = false;
        let found = {
            // Under the `trace` key the search's path decides which entries have their lines rendered.
            let tracing = sort.contains(&SortKey::Trace);
            let mut path = Vec::new();
            let found = tree_find(
                &self.tree,
                sort,
                |n| &self.entries[n].key,
                key,
                |n| {
                    if tracing {
                        path.push(n)
                    }
                },
            );
            for n in path {
                let e = &mut self.entries[n];
                if reaches_trace(sort, |before| hist_cmp(before, &e.key, key).is_eq()) {
                    e.trace_made = true;
                    trace_made = true;
                }
            }
            found
        };
        let i = match found {
            Some(i) => {
                // hist.c `hists__findnew_entry` moves an existing entry to the new sample's map: an unresolved
                // address's DSO (compared under the `sym` key) is its latest sample's.
                if matches!(key.sym, Some(SymKey::Addr(_))) {
                    self.entries[i].key.sym_dso = key.sym_dso.clone();
                }
                i
            }
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
                    key: key.clone(),
                    // hist.c's `hist_entry__new` copies the searched template, its rendered line with it.
                    trace_made,
                });
                let entries = &self.entries;
                let id = self.tree.insert_by((), |n, _| {
                    hist_cmp(sort, &entries[n].key, key) == std::cmp::Ordering::Less
                });
                debug_assert_eq!(id, entries.len() - 1);
                id
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
    // order (machine.c `thread__resolve_callchain_sample`): in caller order the outermost callers stay and a
    // long chain loses its IP. So the chain is read whole and cut here.
    let max_stack = options.script.max_stack;
    let mut script = options.script.clone();
    script.max_stack = usize::MAX;
    let mut it = samples(file, &script);
    let sort = &options.sort[..];
    let mut tables: Vec<Acc> = Vec::new();
    let mut scratch = Scratch::new(file);
    if options.children || options.graph {
        it.track_frame_addresses();
    }
    while let Some(item) = it.next_sample() {
        let (info, mut frames) = item?;
        scratch.addrs.clear();
        scratch.addrs.extend_from_slice(it.frame_addresses());
        cut_chain(&mut frames, &mut scratch.addrs, max_stack, options.caller);
        let mut frame = it.ip_frame(&info);
        if frame.sym.is_none() && info.cpumode == MISC_KERNEL {
            frame.addr = it.kernel_report_address(frame.addr);
        }
        let sample = Sample {
            period: sample_period(file, &info),
            info: &info,
            frames: &frames,
            ip: &frame,
        };
        let t = table_for(&mut tables, &info);
        add_sample(t, &mut scratch, options, &sample);
    }
    tables.sort_by_key(|t| t.attr_index);
    let mut staged: Vec<Staged> = tables
        .into_iter()
        .map(|t| stage(t, options, |tid| it.thread_comm(tid)))
        .collect();
    // perf 6.1 shows a file's event groups as groups (header.c sets `symbol_conf.event_group` when GROUP_DESC
    // has one): one table per group, a column per member.
    for g in event_groups(file) {
        staged = group_tables(staged, &g, sort, |i| it.event_name(i));
    }
    let lost_samples = it.lost_samples;
    Ok(staged
        .into_iter()
        .map(|st| output_table(st, options, lost_samples))
        .collect())
}

/// What `report` keeps from one sample to the next: short names, DSO ranks and buffers reused per sample.
struct Scratch {
    names: ShortNames,
    /// perf orders graph siblings of different DSOs by the address of their `struct dso`, that is by when
    /// perf made it: those of the build-id table first, in its order, as it reads the header; the others as
    /// met. A frame without a map has a NULL DSO, below every other.
    dso_rank: HashMap<Option<Rc<str>>, usize>,
    /// The entries a sample's chain has counted its period in already.
    seen: Vec<EntryKey>,
    /// The sample's chain as graph frame ids, outermost caller first (perf's caller order).
    chain: Vec<u32>,
    /// The address perf's callchain cursor holds for each frame (`node->ip`): what names an unresolved entry.
    addrs: Vec<u64>,
}

impl Scratch {
    fn new(file: &PerfFile) -> Scratch {
        let mut dso_rank: HashMap<Option<Rc<str>>, usize> = HashMap::new();
        dso_rank.insert(None, 0);
        for entry in file.build_ids() {
            let next = dso_rank.len();
            dso_rank
                .entry(Some(Rc::from(entry.filename.as_str())))
                .or_insert(next);
        }
        Scratch {
            names: ShortNames::default(),
            dso_rank,
            seen: Vec::new(),
            chain: Vec::new(),
            addrs: Vec::new(),
        }
    }
}

/// Cuts a sample's chain (and its cursor addresses) to `max_stack` frames as perf does: the outermost callers
/// stay in caller order, the innermost frames in callee order.
fn cut_chain(frames: &mut Vec<Frame>, addrs: &mut Vec<u64>, max_stack: usize, caller: bool) {
    if frames.len() > max_stack {
        if caller {
            frames.drain(..frames.len() - max_stack);
            if addrs.len() > max_stack {
                addrs.drain(..addrs.len() - max_stack);
            }
        } else {
            frames.truncate(max_stack);
            addrs.truncate(max_stack);
        }
    }
}

/// The address perf's callchain cursor holds for frame `i`, or the frame's own when none was tracked.
fn cursor_addr(addrs: &[u64], i: usize, f: &Frame) -> u64 {
    addrs.get(i).copied().unwrap_or(f.addr)
}

/// The period a sample stands for: its PERIOD field, or without one the attr's fixed period (perf's
/// `evsel__parse_sample` sets `data->period = evsel->core.attr.sample_period`).
fn sample_period(file: &PerfFile, info: &SampleInfo) -> u64 {
    info.period.unwrap_or_else(|| {
        file.attrs()
            .get(info.attr_index)
            .map(|a| &a.attr)
            .filter(|a| a.flags & crate::perf::abi::ATTR_FLAG_FREQ == 0)
            .map_or(1, |a| a.sample_period_or_freq.max(1))
    })
}

/// The table of the sample's event, made empty when it is the event's first sample (even one the DSO filter
/// then drops).
fn table_for<'t>(tables: &'t mut Vec<Acc>, info: &SampleInfo) -> &'t mut Acc {
    let index = match tables.iter().position(|t| t.attr_index == info.attr_index) {
        Some(i) => i,
        None => {
            tables.push(Acc {
                attr_index: info.attr_index,
                event: info.event.to_string(),
                samples: 0,
                total_period: 0,
                entries: Vec::new(),
                tree: RbTree::default(),
                graphs: Graphs::default(),
            });
            tables.len() - 1
        }
    };
    &mut tables[index]
}

/// Whether `--dsos` keeps a frame: by its long name, short name or module name.
fn dso_wanted(dsos: Option<&[String]>, frame: &Frame) -> bool {
    match dsos {
        None => true,
        Some(list) => {
            let long = frame.dso_name();
            let short = long.rsplit('/').next().unwrap_or(long);
            let module = long.contains(".ko").then(|| module_short_name(long));
            list.iter()
                .any(|d| d == long || d == short || module.as_deref() == Some(d.as_str()))
        }
    }
}

/// One sample as `report` sums it.
struct Sample<'a> {
    info: &'a SampleInfo,
    /// Its chain, innermost frame first, cut to `max_stack`.
    frames: &'a [Frame],
    /// The frame of its IP.
    ip: &'a Frame,
    period: u64,
}

/// Sums one sample into its event's table: Self (and Children) of its IP's entry, the Children of every
/// other entry of its chain, and the chain into the call graphs of those entries.
fn add_sample(t: &mut Acc, s: &mut Scratch, options: &ReportOptions, sample: &Sample) {
    let Sample {
        info,
        frames,
        ip: frame,
        period,
    } = *sample;
    let sort = &options.sort[..];
    let kernel = info.cpumode == MISC_KERNEL;
    let key = entry_key(sort, &mut s.names, info, frame, kernel);
    let self_wanted = dso_wanted(options.dsos.as_deref(), frame);
    if !options.children && !self_wanted {
        return;
    }
    t.samples += 1;
    t.total_period += period;
    let graph = options.graph && info.has_callchain;
    if graph {
        s.chain.clear();
        for (i, f) in frames.iter().enumerate().rev() {
            s.chain.push(
                t.graphs
                    .frame_id(f, cursor_addr(&s.addrs, i, f), &mut s.dso_rank),
            );
        }
    }
    if self_wanted {
        let e = t.entry(sort, &key, info, frame, kernel);
        e.period += period;
        if options.children {
            e.children += period;
        }
        let root = e.root;
        if graph {
            e.max_depth = e.max_depth.max(s.chain.len());
        }
        if graph && options.caller {
            t.graphs.append(root, s.chain.iter().copied(), period);
        } else if graph {
            t.graphs.append(root, s.chain.iter().rev().copied(), period);
        }
    }
    if options.children && info.has_callchain {
        add_callers(t, s, options, sample, key, graph);
    }
}

/// Children mode: adds the sample's period to the entry of every frame of its chain, once an entry (the IP's
/// `key` counted already), with the chain from that frame down into the entry's graph.
fn add_callers(
    t: &mut Acc,
    s: &mut Scratch,
    options: &ReportOptions,
    sample: &Sample,
    key: EntryKey,
    graph: bool,
) {
    let Sample {
        info,
        frames,
        period,
        ..
    } = *sample;
    let sort = &options.sort[..];
    let mut kernel = info.cpumode == MISC_KERNEL;
    s.seen.clear();
    s.seen.push(key);
    for (at, (i, f)) in frames.iter().enumerate().rev().enumerate() {
        kernel = frame_level(f, kernel);
        // fill_callchain_info: an unresolved entry is named by the cursor's address (`al->addr =
        // node->ip`), not map-relative as the sample's own IP is.
        let shown;
        let f = if f.sym.is_none() {
            shown = Frame {
                addr: cursor_addr(&s.addrs, i, f),
                ..f.clone()
            };
            &shown
        } else {
            f
        };
        let key = entry_key(sort, &mut s.names, info, f, kernel);
        // hist.c `iter_add_next_cumulative_entry` skips a frame equal, by `hist_entry__cmp`, to one already
        // added for this sample (recursion).
        if s.seen.iter().any(|k| hist_cmp(sort, k, &key).is_eq())
            || !dso_wanted(options.dsos.as_deref(), f)
        {
            continue;
        }
        let e = t.entry(sort, &key, info, f, kernel);
        e.children += period;
        let root = e.root;
        if graph {
            e.max_depth = e.max_depth.max(s.chain.len() - at);
            t.graphs.append(root, s.chain[at..].iter().copied(), period);
        }
        s.seen.push(key);
    }
}

/// The Command column's width: the longest last comm of the entries' threads.
pub(super) fn comm_width(tids: impl Iterator<Item = i32>, comm: impl Fn(i32) -> Rc<str>) -> usize {
    tids.map(|tid| comm(tid).chars().count()).max().unwrap_or(0)
}

/// One event's summed table as rows in the order of perf's collapsed tree, each with its sorted call graph;
/// `comm` gives a thread's comm at the end of the file.
fn stage(mut t: Acc, options: &ReportOptions, comm: impl Fn(i32) -> Rc<str>) -> Staged {
    let order = collapse(&mut t, &options.sort);
    // hist.c's `output_resort`: a graph node needs `min_percent` (0.5) of the event's callchain
    // period, as perf computes it in doubles and truncates.
    let min_hit = (t.total_period as f64 * (0.5 / 100.0)) as u64;
    let graphs = &t.graphs;
    let comm_width = comm_width(t.entries.iter().map(|e| e.tid), &comm);
    let mut slots: Vec<Option<EntryAcc>> = t.entries.into_iter().map(Some).collect();
    let rows = order
        .into_iter()
        .filter_map(|i| slots[i].take())
        .map(|mut e| {
            // sort.c `hist_entry__thread_snprintf`: the thread's comm when the report is printed.
            for (k, text) in options.sort.iter().zip(e.keys.iter_mut()) {
                if *k == SortKey::Pid {
                    *text = format!("{:>7}:{}", e.tid, comm(e.tid));
                }
            }
            e
        })
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
            key: e.key,
            unresolved: e.unresolved,
            trace_made: Cell::new(e.trace_made),
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
            lost_samples: 0,
            trace_width: 0,
        },
        rows,
    }
}

/// A staged table (an event's or a group's) with its rows in perf's output order and its column widths.
fn output_table(st: Staged, options: &ReportOptions, lost_samples: u64) -> EventTable {
    let sort = &options.sort[..];
    let by_depth = options.graph && options.children;
    let mut table = st.table;
    table.lost_samples = lost_samples;
    let mut rows = st.rows;
    table.dso_width = if options.dsos.is_none() && rows.iter().any(|r| r.unresolved) {
        16
    } else {
        0
    };
    // perf's output order comes from inserting the entries, in the order of its collapsed tree, into
    // a red-black tree by `hist_entry__sort`, which is not a total order (see `output_cmp`): the same
    // insertions into the same tree give the same rows. A group's members joined the leader's
    // collapsed tree (hist.c `hists__link` inserts them by `hist_entry__collapse`).
    if !table.group_totals.is_empty() {
        let order = rb_order(rows.len(), |new, old| {
            hist_cmp(sort, &rows[old].key, &rows[new].key).reverse()
        });
        let mut slots: Vec<Option<StagedRow>> = rows.into_iter().map(Some).collect();
        rows = order.into_iter().filter_map(|i| slots[i].take()).collect();
    }
    let cmp = |sort: &[SortKey], a: &StagedRow, b: &StagedRow| {
        output_cmp(
            sort,
            by_depth,
            (&a.row, a.tid, a.depth),
            (&b.row, b.tid, b.depth),
        )
    };
    let trace_at = sort.iter().position(|k| *k == SortKey::Trace);
    let order = rb_order_then(
        rows.len(),
        |new, old| {
            let (a, b) = (&rows[new], &rows[old]);
            if reaches_trace(sort, |before| cmp(before, a, b).is_eq()) {
                a.trace_made.set(true);
                b.trace_made.set(true);
            }
            cmp(sort, a, b)
        },
        // hist.c's `output_resort` sizes the columns by each entry right after inserting it.
        |n| {
            if let (Some(at), true) = (trace_at, rows[n].trace_made.get()) {
                table.trace_width = table.trace_width.max(rows[n].row.keys[at].chars().count());
            }
        },
    );
    let mut slots: Vec<Option<Row>> = rows.into_iter().map(|r| Some(r.row)).collect();
    table.rows = order.into_iter().filter_map(|i| slots[i].take()).collect();
    table
}

/// hist.c's `hists__collapse_resort` (when a sort key needs it): the entries, in the order of perf's
/// `entries_in` tree, inserted into its collapsed tree by the same comparison; an entry equal to one there (a
/// second entry made when a search missed the first, see `tree_find`) is merged into it, which keeps its thread
/// and its callchain root's `max_depth`. Returns the surviving entries in the collapsed tree's order.
fn collapse(t: &mut Acc, sort: &[SortKey]) -> Vec<usize> {
    let entries_in = t.tree.in_order();
    // Only a key with a collapse callback (`comm`, sort.c's `se_collapse`) sets `need_collapse`; without one
    // perf prints from `entries_in` as it is, duplicates and all.
    let need_collapse = sort.contains(&SortKey::Comm);
    if !need_collapse {
        return entries_in;
    }
    let mut tree = RbTree::<()>::default();
    let mut ids: Vec<usize> = Vec::new();
    for e in entries_in {
        let key = &t.entries[e].key;
        let mut path = Vec::new();
        let found = tree_find(
            &tree,
            sort,
            |n| &t.entries[ids[n]].key,
            key,
            |n| path.push(ids[n]),
        );
        for n in path {
            if reaches_trace(sort, |before| {
                hist_cmp(before, &t.entries[n].key, &t.entries[e].key).is_eq()
            }) {
                t.entries[n].trace_made = true;
                t.entries[e].trace_made = true;
            }
        }
        let key = &t.entries[e].key;
        if let Some(n) = found {
            let into = ids[n];
            let (period, children, root) = {
                let from = &t.entries[e];
                (from.period, from.children, from.root)
            };
            let to = &mut t.entries[into];
            to.period += period;
            to.children += children;
            let to_root = to.root;
            t.graphs.merge(to_root, root);
            continue;
        }
        let entries = &t.entries;
        tree.insert_by((), |n, _| {
            hist_cmp(sort, &entries[ids[n]].key, key) == std::cmp::Ordering::Less
        });
        ids.push(e);
    }
    tree.in_order().into_iter().map(|n| ids[n]).collect()
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
    key: EntryKey,
    unresolved: bool,
    /// perf has rendered its trace line (see `reaches_trace`); set while the output tree is built.
    trace_made: Cell<bool>,
}

/// What a file's events sample, as perf's report decides its modes from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileModes {
    /// Some event samples callchains and the file is not a pipe: perf's default is Children/Self and a call
    /// graph (builtin-report.c `report__setup_sample_type`; for a pipe it has not read the events then).
    pub callchains: bool,
    /// The file is a pipe and some event samples callchains: perf 6.1 prints Overhead rows (no Children)
    /// with the call graph under each, in caller order unless `--no-children` (builtin-report.c's
    /// `process_attr` turns call graphs on as the pipe's attrs arrive, after cumulation was decided).
    pub pipe_callchains: bool,
    /// Some event samples branch stacks (what `--branch-stack` needs).
    pub branch_data: bool,
    /// Branch mode is perf's default: the file has HEADER_BRANCH_STACK and no event samples user stacks.
    pub branch_default: bool,
    /// Every event is a tracepoint: perf sorts by `trace` by default (sort.c `get_default_sort_order`).
    pub tracepoints_only: bool,
}

impl FileModes {
    /// The modes of `file`.
    pub fn of(file: &PerfFile) -> FileModes {
        use crate::perf::abi::{
            HEADER_BRANCH_STACK, PERF_SAMPLE_BRANCH_STACK, PERF_SAMPLE_CALLCHAIN,
            PERF_SAMPLE_STACK_USER,
        };
        let sample_types = file.attrs().iter().fold(0, |t, a| t | a.attr.sample_type);
        let callchains = file
            .attrs()
            .iter()
            .any(|a| a.attr.sample_type & PERF_SAMPLE_CALLCHAIN != 0);
        FileModes {
            callchains: !file.is_pipe() && callchains,
            pipe_callchains: file.is_pipe() && callchains,
            branch_data: sample_types & PERF_SAMPLE_BRANCH_STACK != 0,
            branch_default: file.feature_ids().contains(&HEADER_BRANCH_STACK)
                && sample_types & PERF_SAMPLE_STACK_USER == 0,
            tracepoints_only: !file.attrs().is_empty()
                && file
                    .attrs()
                    .iter()
                    .all(|a| a.attr.type_ == crate::perf::abi::PERF_TYPE_TRACEPOINT),
        }
    }
}
