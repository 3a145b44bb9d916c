//! `perf report --stdio -g none`: the overhead table of a perf.data file by sort keys, with perf's Children and
//! Self columns when the samples carry callchains (`--no-children`: one Overhead column).
//!
//! Follows tools/perf/ui/stdio/hist.c (column headers, dotted rule, two-space separators, every column padded to
//! its widest value) and util/sort.c (keys comm, pid, dso, sym; `[k]`/`[.]` symbol prefixes; unresolved symbols
//! as `0x%016x`). Overhead is each entry's share of the event's total period, as perf computes it. Children
//! (util/hist.c `hist_entry_iter__cumulative`): a sample's period counts once for every distinct entry of its
//! callchain, its IP's entry included; Self is the IP's entry only. Events print in the file's attr order.
//! Not yet: perf's call-graph text under each row (perf's default with callchains; `-g none` turns it off).

use crate::perf::data::PerfFile;
use crate::perf::script::machine::module_short_name;
use crate::perf::script::resolve::MISC_KERNEL;
use crate::perf::script::session::{samples, ScriptError};
use crate::perf::script::Options;
use std::collections::HashMap;
use std::io::{self, Write};

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
}

impl SortKey {
    fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            // sort.c's `se_header` carries the leading spaces.
            SortKey::Pid => "    Pid:Command",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
        }
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
            other => Err(format!("unknown sort key `{other}` (comm, pid, dso, sym)")),
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
}

/// The row keys of one frame: comm, `pid:comm`, short DSO name, `[k]`/`[.]` and symbol.
fn frame_keys(
    sort: &[SortKey],
    info: &crate::perf::script::SampleInfo,
    frame: &crate::perf::script::Frame,
    kernel: bool,
) -> Vec<String> {
    let dso_long = frame.dso_name();
    // A kernel module named by its path (the build-id table's) keeps perf's short name `[name]`.
    let dso_short = if kernel && dso_long.starts_with('/') {
        module_short_name(dso_long)
    } else {
        dso_long.rsplit('/').next().unwrap_or(dso_long).to_owned()
    };
    sort.iter()
        .map(|k| match k {
            SortKey::Comm => info.comm.to_string(),
            SortKey::Pid => format!("{:>7}:{}", info.pid, info.comm),
            SortKey::Dso => dso_short.clone(),
            SortKey::Sym => {
                let level = if kernel { 'k' } else { '.' };
                match &frame.sym {
                    // sort.c writes an inline node's name with its ` (inlined)` mark.
                    Some(s) if frame.inlined => format!("[{level}] {s} (inlined)"),
                    Some(s) => format!("[{level}] {s}"),
                    // `%-#.*llx`: C's `#` writes no `0x` before a zero.
                    None if frame.addr == 0 => format!("[{level}] {:016x}", 0),
                    None => format!("[{level}] {:#018x}", frame.addr),
                }
            }
        })
        .collect()
}

/// Whether a callchain frame is the kernel's (`[k]`): one in a kernel map; a frame no map covers keeps the
/// level of the entry perf looked at before it. perf walks a sample's chain from the outermost caller inward
/// (children mode orders callchains caller first) after the IP's own entry, and `fill_callchain_info` leaves
/// the level alone for a frame without a map: so the outermost `[unknown]` of a sample taken in the kernel is
/// `[k]`, even in the user part of the chain.
fn frame_level(frame: &crate::perf::script::Frame, before: bool) -> bool {
    match frame.dso.as_deref() {
        None => before,
        Some(d) => {
            d.starts_with("[kernel") || frame.addr >= 0xffff_8000_0000_0000 && !frame.inlined
        }
    }
}

/// Computes the tables of every event with samples, in the file's attr order.
pub fn report(file: &PerfFile, options: &ReportOptions) -> Result<Vec<EventTable>, ScriptError> {
    let mut it = samples(file, &options.script);
    struct Acc {
        attr_index: usize,
        event: String,
        samples: u64,
        total_period: u64,
        /// By the keys without the symbol's level (perf's `sort__sym_cmp` compares symbols, or addresses
        /// for unresolved ones, not levels): the first entry's keys, Children and Self.
        rows: HashMap<Vec<String>, (Vec<String>, u64, u64)>,
    }
    let sym_column = options.sort.iter().position(|k| *k == SortKey::Sym);
    let merge_key = |keys: &[String]| -> Vec<String> {
        let mut k = keys.to_vec();
        if let Some(i) = sym_column {
            k[i] = k[i].get(4..).unwrap_or_default().to_owned();
        }
        k
    };
    let mut tables: Vec<Acc> = Vec::new();
    let wanted = |frame: &crate::perf::script::Frame| match &options.dsos {
        None => true,
        Some(list) => {
            let long = frame.dso_name();
            let short = long.rsplit('/').next().unwrap_or(long);
            let module = long.contains(".ko").then(|| module_short_name(long));
            list.iter()
                .any(|d| d == long || d == short || module.as_deref() == Some(d.as_str()))
        }
    };
    let mut seen: Vec<Vec<String>> = Vec::new();
    while let Some(item) = it.next_sample() {
        let (info, frames) = item?;
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
                    rows: HashMap::new(),
                });
                tables.len() - 1
            }
        };
        let t = &mut tables[index];
        let key = frame_keys(&options.sort, &info, &frame, info.cpumode == MISC_KERNEL);
        let self_wanted = wanted(&frame);
        if !options.children && !self_wanted {
            continue;
        }
        t.samples += 1;
        t.total_period += period;
        if self_wanted {
            let row = t
                .rows
                .entry(merge_key(&key))
                .or_insert_with(|| (key.clone(), 0, 0));
            row.2 += period;
            if options.children {
                row.1 += period;
            }
        }
        if options.children && info.has_callchain {
            seen.clear();
            seen.push(key);
            let mut kernel = info.cpumode == MISC_KERNEL;
            for f in frames.iter().rev() {
                kernel = frame_level(f, kernel);
                let shown;
                let unresolved = if kernel && f.sym.is_none() {
                    Some(it.kernel_report_address(f.addr))
                } else {
                    it.unresolved_address(&info, f)
                };
                let f = match unresolved {
                    Some(addr) => {
                        shown = crate::perf::script::Frame { addr, ..f.clone() };
                        &shown
                    }
                    None => f,
                };
                let key = frame_keys(&options.sort, &info, f, kernel);
                if seen.iter().any(|k| merge_key(k) == merge_key(&key)) || !wanted(f) {
                    continue;
                }
                t.rows
                    .entry(merge_key(&key))
                    .or_insert_with(|| (key.clone(), 0, 0))
                    .1 += period;
                seen.push(key);
            }
        }
    }
    tables.sort_by_key(|t| t.attr_index);
    let keys = options.sort.clone();
    Ok(tables
        .into_iter()
        .map(|t| {
            let mut rows: Vec<Row> = t
                .rows
                .into_values()
                .map(|(keys, children, period)| Row {
                    keys,
                    children,
                    period,
                })
                .collect();
            // Children, then Self, then each key by its value, symbols by name (not by the [k]/[.] prefix),
            // as sort.c's `se_sort` callbacks do.
            rows.sort_by(|a, b| {
                b.children
                    .cmp(&a.children)
                    .then(b.period.cmp(&a.period))
                    .then_with(|| {
                        keys.iter()
                            .enumerate()
                            .map(|(i, k)| match k {
                                // An unresolved symbol or an address without a map sorts after every
                                // named one (sort.c's `cmp_null`).
                                SortKey::Sym => {
                                    let (x, y) = (a.keys[i].get(4..), b.keys[i].get(4..));
                                    let unresolved = |s: Option<&str>| {
                                        s.is_some_and(|s| {
                                            s.starts_with("0x") || s == "0000000000000000"
                                        })
                                    };
                                    unresolved(x).cmp(&unresolved(y)).then(x.cmp(&y))
                                }
                                SortKey::Dso => {
                                    let (x, y) = (&a.keys[i], &b.keys[i]);
                                    (x == "[unknown]").cmp(&(y == "[unknown]")).then(x.cmp(y))
                                }
                                _ => a.keys[i].cmp(&b.keys[i]),
                            })
                            .find(|o| o.is_ne())
                            .unwrap_or(std::cmp::Ordering::Equal)
                    })
            });
            EventTable {
                event: t.event,
                samples: t.samples,
                total_period: t.total_period,
                rows,
                children: options.children,
            }
        })
        .collect())
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

/// Writes the tables as `perf report --stdio` prints them (without the random tip line).
pub fn write_report(
    out: &mut impl Write,
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
            "# Samples: {} of event '{}'",
            short_count(t.samples),
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
                        v.chars().count()
                    })
                    .max()
                    .unwrap_or(0)
                    .max(k.header().len())
            })
            .collect();
        if t.children {
            write!(out, "# Children      Self")?;
        } else {
            write!(out, "# Overhead")?;
        }
        for (k, &w) in sort.iter().zip(&widths) {
            write!(out, "  {:<w$}", k.header())?;
        }
        writeln!(out)?;
        write!(out, "# ........")?;
        if t.children {
            write!(out, "  ........")?;
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
        for row in &t.rows {
            if t.children {
                write!(
                    out,
                    "{:>9.2}%  {:>7.2}%",
                    pct(row.children),
                    pct(row.period)
                )?;
            } else {
                write!(out, "{:>9.2}%", pct(row.period))?;
            }
            for ((v, &w), k) in row.keys.iter().zip(&widths).zip(sort) {
                // sort.c pads every column with `%-*.*s` except the symbol, printed with `%-.*s`.
                if *k == SortKey::Sym {
                    write!(out, "  {v}")?;
                } else {
                    write!(out, "  {v:<w$}")?;
                }
            }
            writeln!(out)?;
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
                },
                Row {
                    keys: vec![
                        "chain-fp".into(),
                        "[kernel.kallsyms]".into(),
                        "[k] __get_user_8".into(),
                    ],
                    children: 0,
                    period: 6,
                },
            ],
            children: false,
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
