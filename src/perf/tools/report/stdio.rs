//! The text of `perf report --stdio` (tools/perf/ui/stdio/hist.c): the header lines, the column headers and
//! dotted rule, every column padded to its widest value, the overhead values (a column per member for an event
//! group), and each row's call graph below it.
//!
//! Owns the layout of finished tables only; what the rows hold and their order are decided in `mod.rs`
//! (`report`), `order.rs` and `branch.rs`, the graph text in `graph.rs`.

use super::graph::write_graph;
use super::order::unresolved_sym;
use super::{EventTable, Row, SortKey};
use std::io::{self, Write};

/// perf's sample count shorthand (`"%lu%c"` with a unit char): `1K`, `12M`, and `202 ` (a space for no unit).
pub(super) fn short_count(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 {
        format!("{}K", n / 1000)
    } else {
        format!("{n} ")
    }
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
            writeln!(out, "# Total Lost Samples: {}", t.lost_samples)?;
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
            .map(|(i, &k)| column_width(t, i, k))
            .collect();
        write_column_headers(out, t, sort, &widths)?;
        for row in &t.rows {
            write_overheads(out, t, row)?;
            write_keys(out, sort, &widths, row)?;
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

/// The width of column `i` (sort key `k`): its widest value as hist.c measures it, at least its header.
fn column_width(t: &EventTable, i: usize, k: SortKey) -> usize {
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
                SortKey::Sym | SortKey::SymFrom | SortKey::SymTo if unresolved_sym(v) => 22,
                SortKey::Sym | SortKey::SymFrom | SortKey::SymTo | SortKey::Cycles => {
                    v.chars().count()
                }
                // Only entries whose source resolved count (hist.c `hists__calc_col_len`).
                SortKey::DsoFrom => t.dso_width,
                // Only lines perf had rendered when it sized the column count: a lone entry is never
                // compared, so its column keeps the header's width and the line is cut to it.
                SortKey::Trace => t.trace_width,
            }
        })
        .max()
        .unwrap_or(0)
        .max(k.header().len())
}

/// The column headers and the dotted rule under them.
fn write_column_headers<W: Write>(
    out: &mut W,
    t: &EventTable,
    sort: &[SortKey],
    widths: &[usize],
) -> io::Result<()> {
    // A group's columns hold a value per member, 8 wide each (hist.c `hpp__width_fn`).
    let overhead = 8 * t.group_totals.len().max(1);
    if t.children {
        write!(out, "# {:>overhead$}  {:>overhead$}", "Children", "Self")?;
    } else {
        write!(out, "# {:>overhead$}", "Overhead")?;
    }
    for (k, &w) in sort.iter().zip(widths) {
        write!(out, "  {:<w$}", k.header())?;
    }
    writeln!(out)?;
    write!(out, "# {}", ".".repeat(overhead))?;
    if t.children {
        write!(out, "  {}", ".".repeat(overhead))?;
    }
    for w in widths {
        write!(out, "  {}", ".".repeat(*w))?;
    }
    writeln!(out)?;
    writeln!(out, "#")
}

/// A row's percentages: Children and Self, or Overhead; a value per member in a group's table.
fn write_overheads<W: Write>(out: &mut W, t: &EventTable, row: &Row) -> io::Result<()> {
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
    Ok(())
}

/// A row's sort-key columns, each padded or cut as sort.c prints it.
fn write_keys<W: Write>(
    out: &mut W,
    sort: &[SortKey],
    widths: &[usize],
    row: &Row,
) -> io::Result<()> {
    for (i, ((v, &w), k)) in row.keys.iter().zip(widths).zip(sort).enumerate() {
        // sort.c pads every column with `%-*.*s` except a symbol, printed with `%-.*s`, which hist.c
        // pads only when a column follows (`hist_entry__snprintf_alignment`). The comm columns cut a
        // longer comm: `%-*.*s`.
        let last = i + 1 == sort.len();
        match k {
            SortKey::Sym | SortKey::SymFrom | SortKey::SymTo if last => write!(out, "  {v}")?,
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
            // sort.c `hist_entry__trace_snprintf`: `%-.*s`, padded only when a column follows.
            SortKey::Trace if last => write!(out, "  {v:.w$}")?,
            SortKey::Trace => write!(out, "  {v:<w$.w$}")?,
        }
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
