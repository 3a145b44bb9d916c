//! `perf report --stdio --no-children -g none`: the overhead table of a perf.data file by sort keys.
//!
//! Follows tools/perf/ui/stdio/hist.c (column headers, dotted rule, two-space separators, every column padded to
//! its widest value) and util/sort.c (keys comm, pid, dso, sym; `[k]`/`[.]` symbol prefixes; unresolved symbols
//! as `0x%016x`). Overhead is each entry's share of the event's total period, as perf computes it.

use crate::perf::data::PerfFile;
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
    /// `(key values, period)`, sorted as perf prints them.
    pub rows: Vec<(Vec<String>, u64)>,
}

/// Computes the tables of every event with samples.
pub fn report(file: &PerfFile, options: &ReportOptions) -> Result<Vec<EventTable>, ScriptError> {
    let mut it = samples(file, &options.script);
    // (event, samples, total period, period per key)
    type Acc = (String, u64, u64, HashMap<Vec<String>, u64>);
    let mut tables: Vec<Acc> = Vec::new();
    while let Some(item) = it.next_sample() {
        let (info, _) = item?;
        let frame = it.ip_frame(&info);
        let dso_long = frame.dso_name().to_owned();
        // A kernel module named by its path (the build-id table's) keeps perf's short name `[name]`.
        let dso_short = if info.cpumode == MISC_KERNEL && dso_long.starts_with('/') {
            crate::perf::script::machine::module_short_name(&dso_long)
        } else {
            dso_long.rsplit('/').next().unwrap_or(&dso_long).to_owned()
        };
        if let Some(list) = &options.dsos {
            if !list.iter().any(|d| *d == dso_long || *d == dso_short) {
                continue;
            }
        }
        let period = info.period.unwrap_or(1);
        let key: Vec<String> = options
            .sort
            .iter()
            .map(|k| match k {
                SortKey::Comm => info.comm.to_string(),
                SortKey::Pid => format!("{:>7}:{}", info.pid, info.comm),
                SortKey::Dso => dso_short.clone(),
                SortKey::Sym => {
                    let level = if info.cpumode == MISC_KERNEL {
                        'k'
                    } else {
                        '.'
                    };
                    match &frame.sym {
                        Some(s) => format!("[{level}] {s}"),
                        None if info.cpumode == MISC_KERNEL => {
                            format!("[{level}] {:#018x}", it.kernel_report_address(frame.addr))
                        }
                        None => format!("[{level}] {:#018x}", frame.addr),
                    }
                }
            })
            .collect();
        let index = match tables.iter().position(|t| *t.0 == *info.event) {
            Some(i) => i,
            None => {
                tables.push((info.event.to_string(), 0, 0, HashMap::new()));
                tables.len() - 1
            }
        };
        let t = &mut tables[index];
        t.1 += 1;
        t.2 += period;
        *t.3.entry(key).or_default() += period;
    }
    Ok(tables
        .into_iter()
        .map(|(event, samples, total_period, rows)| {
            let mut rows: Vec<(Vec<String>, u64)> = rows.into_iter().collect();
            // Ties keep perf's key order: each key compared by its value, symbols by name (not by the [k]/[.]
            // prefix), as sort.c's `se_sort` callbacks do.
            let keys = options.sort.clone();
            rows.sort_by(|a, b| {
                b.1.cmp(&a.1).then_with(|| {
                    keys.iter()
                        .enumerate()
                        .map(|(i, k)| match k {
                            SortKey::Sym => a.0[i].get(4..).cmp(&b.0[i].get(4..)),
                            _ => a.0[i].cmp(&b.0[i]),
                        })
                        .find(|o| o.is_ne())
                        .unwrap_or(std::cmp::Ordering::Equal)
                })
            });
            EventTable {
                event,
                samples,
                total_period,
                rows,
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
    for t in tables {
        writeln!(out, "#")?;
        writeln!(out, "# Total Lost Samples: 0")?;
        writeln!(out, "#")?;
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
                    .map(|(v, _)| v[i].chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(k.header().len())
            })
            .collect();
        write!(out, "# Overhead")?;
        for (k, &w) in sort.iter().zip(&widths) {
            write!(out, "  {:<w$}", k.header())?;
        }
        writeln!(out)?;
        write!(out, "# ........")?;
        for w in &widths {
            write!(out, "  {}", ".".repeat(*w))?;
        }
        writeln!(out)?;
        writeln!(out, "#")?;
        for (values, period) in &t.rows {
            let pct = if t.total_period == 0 {
                0.0
            } else {
                *period as f64 * 100.0 / t.total_period as f64
            };
            write!(out, "{:>9.2}%", pct)?;
            for ((v, &w), k) in values.iter().zip(&widths).zip(sort) {
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
                (
                    vec!["chain-fp".into(), "chain-fp".into(), "[.] chain_c".into()],
                    994,
                ),
                (
                    vec![
                        "chain-fp".into(),
                        "[kernel.kallsyms]".into(),
                        "[k] __get_user_8".into(),
                    ],
                    6,
                ),
            ],
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
