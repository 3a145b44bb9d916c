//! Branch mode (perf's default for a file with HEADER_BRANCH_STACK): a row per branch-stack entry by source
//! and target, each branch counting as a sample of period 1, and the order perf gives those rows.
//!
//! Owns branch mode's entries, keys and comparison; when branch mode applies is `FileModes`' decision in
//! `mod.rs`, the red-black-tree replay is `order.rs`'s, the table text `write_report`'s.

use super::order::rb_order;
use super::{EventTable, ReportOptions, Row, ShortNames, SortKey};
use crate::perf::data::PerfFile;
use crate::perf::script::session::{samples, Samples, ScriptError};
use crate::perf::script::{Frame, SampleInfo};
use std::collections::HashMap;
use std::rc::Rc;

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

/// One event's branch-mode table being summed.
struct BranchTable {
    attr_index: usize,
    event: String,
    samples: u64,
    entries: Vec<BranchEntryAcc>,
    index: HashMap<BranchKey, usize>,
    /// Widest source DSO among entries whose source resolved, 16 if one did not (`hists__calc_col_len`).
    dso_width: usize,
}

/// One branch-stack entry with its ends resolved.
struct Branch {
    /// The raw source and target addresses.
    from: u64,
    to: u64,
    /// The cycles field of its flags.
    cycles: u64,
    /// The source's frame and level (`k` or `.`).
    src: Frame,
    src_level: char,
    /// The target's frame and level.
    dst: Frame,
    dst_level: char,
}

impl Branch {
    /// Resolves an entry `(from, to, flags)` of a sample's branch stack.
    fn resolve(
        it: &mut Samples<'_>,
        info: &SampleInfo,
        (from, to, flags): (u64, u64, u64),
    ) -> Self {
        let (mut src, src_level) = it.branch_frame(info, from);
        let (mut dst, dst_level) = it.branch_frame(info, to);
        // `al_addr` is map-relative: in a module, from the module's start.
        for (fr, level) in [(&mut src, src_level), (&mut dst, dst_level)] {
            if level == 'k' && fr.sym.is_none() {
                fr.addr = it.kernel_report_address(fr.addr);
            }
        }
        Branch {
            from,
            to,
            // struct perf_branch_entry: mispred, predicted, in_tx, abort (1 bit each), then cycles:16.
            cycles: (flags >> 4) & 0xffff,
            src,
            src_level,
            dst,
            dst_level,
        }
    }

    /// What the branch keys of `sort` compare; `dso_from` is the source's short DSO name.
    fn key(&self, sort: &[SortKey], info: &SampleInfo, dso_from: &Rc<str>) -> BranchKey {
        let end = |fr: &Frame, raw: u64| match &fr.sym {
            Some(s) => BranchEnd::Sym(s.clone(), fr.inlined),
            None => BranchEnd::Addr(raw),
        };
        BranchKey {
            comm: sort.contains(&SortKey::Comm).then(|| info.comm.clone()),
            // A source no map holds has perf's NULL DSO (printed `[unknown]`).
            dso_from: (sort.contains(&SortKey::DsoFrom) && self.src.dso.is_some())
                .then(|| dso_from.clone()),
            from: sort
                .contains(&SortKey::SymFrom)
                .then(|| end(&self.src, self.from)),
            to: sort
                .contains(&SortKey::SymTo)
                .then(|| end(&self.dst, self.to)),
            cycles: sort.contains(&SortKey::Cycles).then_some(self.cycles),
        }
    }

    /// A new entry for this branch: its row texts and where `_sort__sym_cmp` puts its ends.
    fn entry(
        &self,
        sort: &[SortKey],
        info: &SampleInfo,
        dso_from: &Rc<str>,
        key: BranchKey,
    ) -> BranchEntryAcc {
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
                SortKey::SymFrom => sym_text(&self.src, self.src_level),
                SortKey::SymTo => sym_text(&self.dst, self.dst_level),
                SortKey::Cycles if self.cycles == 0 => "-".to_owned(),
                // `%-*hd`: the 16 bits as a signed short.
                SortKey::Cycles => (self.cycles as u16 as i16).to_string(),
                _ => String::new(),
            })
            .collect();
        let order = |fr: &Frame, raw: u64| match fr.sym {
            Some(_) => (false, fr.addr.wrapping_sub(fr.offset)),
            None => (true, raw),
        };
        BranchEntryAcc {
            keys,
            period: 0,
            tid: info.tid,
            key,
            from_order: order(&self.src, self.from),
            to_order: order(&self.dst, self.to),
        }
    }
}

/// Branch mode (builtin-report.c with `sort__mode == SORT_MODE__BRANCH`, hist.c `hist_iter_branch`): every
/// entry of a sample's branch stack counts as a sample of period 1 (the report shows the share of branches, not
/// of events), its ends resolved kernel first, then in the process; samples without a branch stack are left
/// out.
pub(super) fn report_branches(
    file: &PerfFile,
    options: &ReportOptions,
) -> Result<Vec<EventTable>, ScriptError> {
    let sort = &options.sort[..];
    let mut it = samples(file, &options.script);
    it.track_branches();
    let mut names = ShortNames::default();
    let mut tables: Vec<BranchTable> = Vec::new();
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
                tables.push(BranchTable {
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
        for &entry in &branches {
            let branch = Branch::resolve(&mut it, &info, entry);
            let dso_from = names.get(&branch.src, branch.src_level == 'k');
            let key = branch.key(sort, &info, &dso_from);
            let tb = &mut tables[index];
            tb.samples += 1;
            tb.dso_width = tb.dso_width.max(if branch.src.sym.is_some() {
                dso_from.chars().count()
            } else if options.dsos.is_none() {
                16
            } else {
                0
            });
            let i = match tb.index.get(&key) {
                Some(&i) => i,
                None => {
                    tb.entries
                        .push(branch.entry(sort, &info, &dso_from, key.clone()));
                    tb.index.insert(key, tb.entries.len() - 1);
                    tb.entries.len() - 1
                }
            };
            tb.entries[i].period += 1;
        }
    }
    tables.sort_by_key(|t| t.attr_index);
    let lost_samples = it.lost_samples;
    Ok(tables
        .into_iter()
        .map(|t| output_table(t, sort, |tid| it.thread_comm(tid), lost_samples))
        .collect())
}

/// A summed table with its rows in perf's output order; `comm` gives a thread's comm at the end of the file.
fn output_table(
    mut t: BranchTable,
    sort: &[SortKey],
    comm: impl Fn(i32) -> Rc<str>,
    lost_samples: u64,
) -> EventTable {
    let comm_width = super::comm_width(t.entries.iter().map(|e| e.tid), comm);
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
        lost_samples,
        ..EventTable::default()
    }
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
