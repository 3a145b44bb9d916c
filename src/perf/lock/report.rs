//! The contention report: entries named (callers from kallsyms, tasks, lock symbols), sorted and printed as
//! `perf lock contention` prints them (tools/perf/builtin-lock.c, `print_contention_result`: the columns
//! `contended`, `total wait`, `max wait`, `avg wait` and then `type caller`, `pid comm` or `address symbol`; times
//! with two decimals and a unit, the value computed in single precision as perf's `float` table does).
//!
//! Callers are named as perf names them: drop the frames of the BPF program and the tracepoint glue (live
//! stacks start inside `bpf_get_stackid`'s caller chain), skip `--stack-skip` frames, then the lock functions
//! (addresses in `__sched_text_start..__sched_text_end` or `__lock_text_start..__lock_text_end`, perf's
//! `machine__is_lock_function`), and print the first remaining frame as `sym+0xoff`.

use std::io::{self, Write};

use super::live::RawStat;
use super::progs::{Aggr, LCD_F_MMAP_LOCK, LCD_F_SIGHAND_LOCK};
use crate::perf::symbols::kallsyms::Kallsyms;

/// The sort key (`-k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Number of contentions.
    Contended,
    /// Sum of the waits (perf's default `wait_total`).
    #[default]
    Total,
    /// Longest wait.
    Max,
    /// Shortest wait.
    Min,
    /// Average wait.
    Avg,
}

impl SortKey {
    /// Parses perf's names (`contended`, `wait_total`, `wait_max`, `wait_min`, `avg_wait`) and the short ones
    /// of the issue (`total`, `max`, `min`, `avg`).
    pub fn parse(text: &str) -> Option<SortKey> {
        Some(match text {
            "contended" => SortKey::Contended,
            "total" | "wait_total" => SortKey::Total,
            "max" | "wait_max" => SortKey::Max,
            "min" | "wait_min" => SortKey::Min,
            "avg" | "avg_wait" => SortKey::Avg,
            _ => return None,
        })
    }

    /// The column's title and width (perf's `contention_keys`).
    fn column(self) -> (&'static str, usize) {
        match self {
            SortKey::Contended => ("contended", 10),
            SortKey::Total => ("total wait", 12),
            SortKey::Max => ("max wait", 12),
            SortKey::Min => ("min wait", 12),
            SortKey::Avg => ("avg wait", 12),
        }
    }
}

/// perf's default output fields: `contended,wait_total,wait_max,avg_wait`.
pub const DEFAULT_FIELDS: [SortKey; 4] = [
    SortKey::Contended,
    SortKey::Total,
    SortKey::Max,
    SortKey::Avg,
];

/// The columns for `-F LIST` and sort key `sort`, as perf's `setup_output_field` and `select_key` make them:
/// the fields in the order given, each once, then the sort key when it is not among them. `Err` names the first
/// field perf does not know (an empty one included, as perf splits `a,` into `a` and ``).
pub fn output_fields(spec: Option<&str>, sort: SortKey) -> Result<Vec<SortKey>, String> {
    let mut fields = Vec::new();
    match spec {
        None => fields.extend(DEFAULT_FIELDS),
        Some(spec) => {
            for name in spec.split(',') {
                let f = SortKey::parse(name).ok_or_else(|| name.to_string())?;
                if !fields.contains(&f) {
                    fields.push(f);
                }
            }
        }
    }
    if !fields.contains(&sort) {
        fields.push(sort);
    }
    Ok(fields)
}

/// How to name and print.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// The aggregation the entries were made with.
    pub aggr: Aggr,
    /// The sort key.
    pub sort: SortKey,
    /// Print at most this many entries (`-E`).
    pub entries: Option<usize>,
    /// Frames skipped before looking for the caller (`--stack-skip`, perf's meaning: raw frames, the BPF program's
    /// and the tracepoint's included); `None`: bport finds and drops the BPF and tracepoint frames itself.
    pub stack_skip: Option<usize>,
    /// Frames considered (`--max-stack`).
    pub max_stack: usize,
    /// Print each entry's call stack (`-v` / `--callstack`).
    pub callstack: bool,
    /// Machine-readable output with this separator (`-x`).
    pub field_sep: Option<String>,
    /// No header (`-q`).
    pub quiet: bool,
    /// The tasks are lock owners (`-o`): the name column is `owner`, a missing owner `Unknown`.
    pub owner: bool,
    /// The value columns, in order (`-F`, see [`output_fields`]).
    pub fields: Vec<SortKey>,
    /// Only contentions whose call stack has a function whose name contains one of these (`-S`).
    pub callstack_filter: Vec<String>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            aggr: Aggr::Caller,
            sort: SortKey::Total,
            entries: None,
            stack_skip: None,
            max_stack: 8,
            callstack: false,
            field_sep: None,
            quiet: false,
            owner: false,
            fields: DEFAULT_FIELDS.to_vec(),
            callstack_filter: Vec::new(),
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contention {
    /// Number of contentions.
    pub count: u64,
    /// Sum of the waits, ns.
    pub total: u64,
    /// Longest wait, ns.
    pub max: u64,
    /// Shortest wait, ns.
    pub min: u64,
    /// The lock flags.
    pub flags: u32,
    /// Caller (`sym+0xoff`), task name, or lock symbol, by aggregation.
    pub name: String,
    /// Waiting thread (task aggregation).
    pub tid: u32,
    /// Lock address (address aggregation).
    pub lock: u64,
    /// Contentions that ended (the average's divisor; perf's `nr_acquired` in record mode).
    pub acquired: u64,
    /// The call stack from the lock function outwards, named.
    pub callstack: Vec<(u64, String)>,
}

impl Contention {
    /// The average wait (integer ns, as perf).
    pub fn avg(&self) -> u64 {
        self.total.checked_div(self.acquired).unwrap_or(0)
    }

    /// The value of a column or sort key.
    pub fn key(&self, sort: SortKey) -> u64 {
        match sort {
            SortKey::Contended => self.count,
            SortKey::Total => self.total,
            SortKey::Max => self.max,
            // perf's "never waited" marker (ULLONG_MAX) sorts and prints as 0.
            SortKey::Min if self.min == u64::MAX => 0,
            SortKey::Min => self.min,
            SortKey::Avg => self.avg(),
        }
    }
}

/// A named, sorted report.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The aggregation.
    pub aggr: Aggr,
    /// The entries, sorted.
    pub entries: Vec<Contention>,
    /// What the input lost, in perf's words (a file read with `-i`); printed before the report, on stderr.
    pub warning: Option<String>,
}

/// The address of kernel symbol `name` in kallsyms text (first match; `None` when absent or hidden by
/// kptr_restrict).
pub fn address_of(kallsyms: &str, name: &str) -> Option<u64> {
    addresses_of(kallsyms, &[name])[0]
}

/// The addresses of several symbols (a kernel's table is ~200,000 lines: each name is found by a substring
/// search for ` T NAME\n`-shaped text instead of splitting every line).
fn addresses_of(kallsyms: &str, names: &[&str]) -> Vec<Option<u64>> {
    names
        .iter()
        .map(|name| {
            let needle = format!(" {name}\n");
            let mut from = 0;
            while let Some(at) = kallsyms[from..].find(&needle) {
                let end = from + at;
                let line_start = kallsyms[..end].rfind('\n').map_or(0, |i| i + 1);
                let mut fields = kallsyms[line_start..end].split(' ');
                if let (Some(addr), Some(_ty), None) = (fields.next(), fields.next(), fields.next())
                {
                    return u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0);
                }
                from = end + needle.len();
            }
            None
        })
        .collect()
}

/// At most this many frames at the top of a live stack belong to BPF and the tracepoint.
const GLUE_FRAMES: usize = 6;

/// Kernel symbols and the lock-function ranges.
#[derive(Debug, Default)]
pub struct Symbolizer {
    kallsyms: Kallsyms,
    text: String,
    lock_ranges: Vec<(u64, u64)>,
}

impl Symbolizer {
    /// From the running kernel's `/proc/kallsyms` (empty when unreadable: callers are then hex addresses).
    pub fn running() -> Self {
        Self::from_text(std::fs::read_to_string("/proc/kallsyms").unwrap_or_default())
    }

    /// From kallsyms text.
    pub fn from_text(text: String) -> Self {
        let kallsyms = Kallsyms::parse(&text);
        let mut s = Symbolizer {
            kallsyms,
            text,
            lock_ranges: Vec::new(),
        };
        let names = [
            "__sched_text_start",
            "__sched_text_end",
            "__lock_text_start",
            "__lock_text_end",
        ];
        let found = addresses_of(&s.text, &names);
        for pair in found.chunks_exact(2) {
            if let [Some(a), Some(b)] = pair {
                s.lock_ranges.push((*a, *b));
            }
        }
        s
    }

    /// The address of kernel symbol `name`.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        address_of(&self.text, name)
    }

    /// Whether `addr` is in a lock function (perf's `machine__is_lock_function`).
    pub fn is_lock_function(&self, addr: u64) -> bool {
        self.lock_ranges
            .iter()
            .any(|&(a, b)| (a..b).contains(&addr))
    }

    /// Whether `addr` is in the tracepoint glue that calls a BPF program.
    fn is_glue(&self, addr: u64) -> bool {
        self.kallsyms.lookup_start(addr).is_some_and(|(n, _)| {
            n.starts_with("bpf_trace_run")
                || n.starts_with("__bpf_trace_")
                || n.starts_with("__traceiter_")
        })
    }

    /// `sym+0xoff` (`sym` at offset 0), or the address in hex when no symbol contains it.
    pub fn name(&self, addr: u64) -> String {
        match self.kallsyms.lookup_start(addr) {
            Some((name, start)) if addr > start => format!("{name}+{:#x}", addr - start),
            Some((name, _)) => name.to_string(),
            None => format!("{addr:#x}"),
        }
    }

    /// The symbol a lock address falls in (a global lock), empty when none.
    pub fn lock_name(&self, addr: u64) -> String {
        self.kallsyms
            .lookup(addr)
            .map_or_else(String::new, |s| s.name.to_string())
    }

    /// Where a live (BPF) stack's kernel frames start: after the BPF program (which kallsyms lists only with
    /// `bpf_jit_kallsyms`) and the tracepoint glue that called it (`bpf_trace_run2`, `__bpf_trace_*`,
    /// `__traceiter_*`; which of them appear depends on the kernel's static calls and inlining).
    pub fn strip_glue<'a>(&self, stack: &'a [u64]) -> &'a [u64] {
        let head = &stack[..stack.len().min(GLUE_FRAMES)];
        match head.iter().rposition(|&ip| self.is_glue(ip)) {
            Some(i) => &stack[i + 1..],
            None => stack,
        }
    }

    /// The caller of a live stack that starts at the lock function (perf's BPF mode, `lock_contention_get_name`:
    /// skip lock functions but never the last frame kept, name what is left even without a symbol).
    pub fn caller(&self, stack: &[u64], max_stack: usize) -> String {
        if stack.is_empty() {
            return String::new();
        }
        let last = stack.len().min(max_stack.max(1)) - 1;
        let mut i = 0;
        while i < last && self.is_lock_function(stack[i]) {
            i += 1;
        }
        self.name(stack[i])
    }

    /// The caller of a recorded callchain (perf's record mode, `lock_contention_caller`: the first frame with a
    /// symbol that is not a lock function; `Unknown` when there is none, as perf prints it).
    pub fn caller_named(&self, stack: &[u64]) -> String {
        stack
            .iter()
            .find(|&&ip| self.kallsyms.lookup_start(ip).is_some() && !self.is_lock_function(ip))
            .map_or_else(|| "Unknown".to_string(), |&ip| self.name(ip))
    }

    /// perf's `match_callstack_filter` (`-S`): whether a function of the first `max_stack` frames (up to a zero
    /// frame; frames without a kernel symbol pass over) has a name containing one of `filters`. No filter: true.
    pub fn callstack_matches(&self, stack: &[u64], max_stack: usize, filters: &[String]) -> bool {
        filters.is_empty()
            || stack
                .iter()
                .take(max_stack)
                .take_while(|&&ip| ip != 0)
                .filter_map(|&ip| self.kallsyms.lookup_start(ip))
                .any(|(name, _)| filters.iter().any(|f| name.contains(f.as_str())))
    }

    /// A frame's `sym+0xoff`, empty without a kernel symbol (perf's `get_symbol_name_offset`).
    pub fn frame_name(&self, addr: u64) -> String {
        match self.kallsyms.lookup_start(addr) {
            Some(_) => self.name(addr),
            None => String::new(),
        }
    }
}

/// A lock address's name as perf's BPF mode gives it (util/bpf_lock_contention.c, `lock_contention_get_name`):
/// the waiter's `mmap_lock` or `siglock` as the program marked them, else the global symbol it falls in, else
/// `rq_lock` for a CPU's run-queue lock, else nothing.
pub fn addr_name(flags: u32, lock: u64, sym: &Symbolizer, rq_locks: &[u64]) -> String {
    if flags & LCD_F_MMAP_LOCK != 0 {
        return "mmap_lock".into();
    }
    if flags & LCD_F_SIGHAND_LOCK != 0 {
        return "siglock".into();
    }
    match sym.lock_name(lock) {
        name if name.is_empty() && rq_locks.contains(&lock) => "rq_lock".into(),
        name => name,
    }
}

/// Names, sorts and cuts live entries into a report; `rq_locks` are the run-queue locks (for `-l`).
pub fn from_live(
    stats: &[RawStat],
    sym: &Symbolizer,
    options: &ReportOptions,
    rq_locks: &[u64],
) -> Report {
    let stack_of = |s: &RawStat| -> Vec<u64> {
        match options.stack_skip {
            Some(n) => s.stack[n.min(s.stack.len())..].to_vec(),
            None => sym.strip_glue(&s.stack).to_vec(),
        }
    };
    let mut entries: Vec<Contention> = stats
        .iter()
        .filter(|s| {
            sym.callstack_matches(&stack_of(s), options.max_stack, &options.callstack_filter)
        })
        .map(|s| {
            let stack = &stack_of(s)[..];
            let name = match options.aggr {
                Aggr::Caller => sym.caller(stack, options.max_stack),
                Aggr::Task => s.comm.clone().unwrap_or_default(),
                Aggr::Addr => addr_name(s.flags, s.lock, sym, rq_locks),
            };
            Contention {
                count: u64::from(s.count),
                total: s.total,
                max: s.max,
                min: s.min,
                flags: s.flags,
                name,
                tid: s.tid,
                lock: s.lock,
                acquired: u64::from(s.count),
                callstack: stack
                    .iter()
                    .take(options.max_stack)
                    .map(|&ip| (ip, sym.name(ip)))
                    .collect(),
            }
        })
        .collect();
    if options.aggr != Aggr::Caller && !options.callstack && !options.callstack_filter.is_empty() {
        // The stacks were collected for -S alone, which split a task's or a lock's contentions by stack.
        entries = merge_split(entries, options.aggr);
    }
    finish(entries, options)
}

/// One entry per task (`-t`) or lock (`-l`) of entries split by call stack, in first-seen order.
fn merge_split(entries: Vec<Contention>, aggr: Aggr) -> Vec<Contention> {
    let mut out: Vec<Contention> = Vec::new();
    for e in entries {
        let same = |o: &&mut Contention| match aggr {
            Aggr::Task => o.tid == e.tid,
            _ => o.lock == e.lock,
        };
        match out.iter_mut().find(|o| same(o)) {
            Some(o) => {
                o.count += e.count;
                o.total += e.total;
                o.acquired += e.acquired;
                o.max = o.max.max(e.max);
                o.min = o.min.min(e.min);
                o.callstack.clear();
            }
            None => out.push(e),
        }
    }
    out
}

/// Sorts (descending by the key, ties in input order, as perf's rb-tree insertion keeps them) and cuts.
pub fn finish(mut entries: Vec<Contention>, options: &ReportOptions) -> Report {
    entries.sort_by_key(|e| std::cmp::Reverse(e.key(options.sort)));
    if let Some(n) = options.entries {
        entries.truncate(n);
    }
    Report {
        aggr: options.aggr,
        entries,
        warning: None,
    }
}

/// perf's `lock_stat_key_print_time`: the value in the largest unit it reaches, computed as perf does in
/// single precision, `len - 3` wide with two decimals.
fn time(ns: u64, len: usize) -> String {
    const UNITS: [(f32, &str); 5] = [
        (1e9 * 3600.0, "h "),
        (1e9 * 60.0, "m "),
        (1e9, "s "),
        (1e6, "ms"),
        (1e3, "us"),
    ];
    for (base, unit) in UNITS {
        if (ns as f32) < base {
            continue;
        }
        let v = f64::from(ns as f32 / base);
        return format!("{v:>w$.2} {unit}", w = len - 3);
    }
    format!("{ns:>w$} ns", w = len - 3)
}

/// Writes the report as perf prints it.
pub fn write(report: &Report, options: &ReportOptions, out: &mut dyn Write) -> io::Result<()> {
    if let Some(sep) = &options.field_sep {
        return write_csv(report, options, sep, out);
    }
    if !options.quiet {
        for f in &options.fields {
            let (title, width) = f.column();
            write!(out, "{title:>width$} ")?;
        }
        match report.aggr {
            Aggr::Caller => writeln!(out, "  {:>10}   caller\n", "type")?,
            Aggr::Task => writeln!(out, "  {:>10}   {}\n", "pid", task_column(options))?,
            Aggr::Addr => writeln!(out, "  {:>16}   symbol\n", "address")?,
        }
    }
    for e in &report.entries {
        for &f in &options.fields {
            match f {
                SortKey::Contended => write!(out, "{:>10} ", e.count)?,
                _ => write!(out, "{} ", time(e.key(f), f.column().1))?,
            }
        }
        match report.aggr {
            Aggr::Caller => writeln!(out, "  {:>10}   {}", super::type_name(e.flags), e.name)?,
            Aggr::Task => writeln!(out, "  {:>10}   {}", e.tid as i32, task_name(e, options))?,
            Aggr::Addr => writeln!(out, "  {:>16x}   {}", e.lock, e.name)?,
        }
        if options.callstack {
            for (ip, name) in &e.callstack {
                writeln!(out, "\t\t\t{ip:#x}  {name}")?;
            }
        }
    }
    Ok(())
}

/// The task column's title: perf 6.3+ says `owner` with `-o`.
fn task_column(options: &ReportOptions) -> &'static str {
    if options.owner {
        "owner"
    } else {
        "comm"
    }
}

/// A task entry's name; a lock without an owner (pid -1) is perf's `Unknown`.
fn task_name<'a>(e: &'a Contention, options: &ReportOptions) -> &'a str {
    if options.owner && e.tid as i32 == -1 {
        "Unknown"
    } else {
        &e.name
    }
}

/// perf's `-x SEP` output (perf 6.4+): a `# output:` header, raw nanoseconds.
fn write_csv(
    report: &Report,
    options: &ReportOptions,
    sep: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    if !options.quiet {
        write!(out, "# output: ")?;
        for f in &options.fields {
            write!(out, "{}{sep} ", f.column().0)?;
        }
        match report.aggr {
            Aggr::Caller => {
                write!(out, "type{sep} caller")?;
                if options.callstack {
                    write!(out, "{sep} stacktrace")?;
                }
                writeln!(out)?;
            }
            Aggr::Task => writeln!(out, "pid{sep} {}", task_column(options))?,
            Aggr::Addr => writeln!(out, "address{sep} symbol{sep} type")?,
        }
    }
    for e in &report.entries {
        for &f in &options.fields {
            write!(out, "{}{sep} ", e.key(f))?;
        }
        match report.aggr {
            Aggr::Caller => {
                write!(out, "{}{sep} {}", super::type_name(e.flags), e.name)?;
                if options.callstack {
                    for (i, (ip, name)) in e.callstack.iter().enumerate() {
                        let lead = if i == 0 { sep } else { ":" };
                        write!(out, "{lead} {ip:#x} {name}")?;
                    }
                }
                writeln!(out)?;
            }
            Aggr::Task => writeln!(out, "{}{sep} {}", e.tid as i32, task_name(e, options))?,
            // perf: the address without 0x, the type by its long name (`rwsem`, not `rwsem:W`).
            Aggr::Addr => writeln!(
                out,
                "{:x}{sep} {}{sep} {}",
                e.lock,
                e.name,
                super::type_long_name(e.flags)
            )?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_as_perf_prints_them() {
        assert_eq!(time(495_160_000, 12), "   495.16 ms");
        assert_eq!(time(2_460, 12), "     2.46 us");
        assert_eq!(time(999, 12), "      999 ns");
        assert_eq!(time(3_000_000_000, 12), "     3.00 s ");
    }

    fn entry(count: u64, total: u64, max: u64, name: &str) -> Contention {
        Contention {
            count,
            total,
            max,
            min: 1,
            flags: super::super::progs::LCB_F_WRITE,
            name: name.into(),
            tid: 0,
            lock: 0,
            acquired: count,
            callstack: vec![],
        }
    }

    #[test]
    fn sorts_by_the_key_and_cuts_to_entries() {
        let e = vec![
            entry(1, 900, 900, "a"),
            entry(5, 500, 200, "b"),
            entry(3, 600, 300, "c"),
        ];
        let names = |o: &ReportOptions| -> Vec<String> {
            finish(e.clone(), o)
                .entries
                .into_iter()
                .map(|c| c.name)
                .collect()
        };
        let mut o = ReportOptions::default();
        assert_eq!(names(&o), ["a", "c", "b"]);
        o.sort = SortKey::Contended;
        assert_eq!(names(&o), ["b", "c", "a"]);
        o.sort = SortKey::Avg;
        assert_eq!(names(&o), ["a", "c", "b"]);
        o.entries = Some(1);
        assert_eq!(names(&o), ["a"]);
    }

    #[test]
    fn callers_skip_glue_and_lock_functions() {
        let text = "ffffffff81000000 T __traceiter_contention_begin\n\
                    ffffffff81000100 T bpf_trace_run2\n\
                    ffffffff81001000 T __vm_munmap\n\
                    ffffffff81002000 T __sched_text_start\n\
                    ffffffff81002000 T rwsem_down_write_slowpath\n\
                    ffffffff81002800 T down_write_killable\n\
                    ffffffff81003000 T __sched_text_end\n\
                    ffffffff81003000 T __x64_sys_munmap\n\
                    ffffffff81004000 T zzz\n";
        let s = Symbolizer::from_text(text.into());
        let stack = [
            0xffffffff81000110,
            0xffffffff81000010,
            0xffffffff810023cc,
            0xffffffff8100285c,
            0xffffffff810010a7,
            0xffffffff81003017,
        ];
        let kernel = s.strip_glue(&stack);
        assert_eq!(kernel.len(), 4);
        assert_eq!(s.caller(kernel, 8), "__vm_munmap+0xa7");
        // perf 6.1's record-mode default (--stack-skip 3) lands one frame further out.
        assert_eq!(s.caller_named(&kernel[3..]), "__x64_sys_munmap+0x17");
        assert_eq!(s.caller_named(kernel), "__vm_munmap+0xa7");
        // The last frame considered is named even when it is a lock function.
        assert_eq!(s.caller(kernel, 2), "down_write_killable+0x5c");
        assert_eq!(s.frame_name(0x10), "");
        assert_eq!(s.name(0xffffffff81001000), "__vm_munmap");
        assert_eq!(s.name(0x10), "0x10");
    }

    #[test]
    fn lock_addresses_are_named_as_perfs_bpf_mode_names_them() {
        let s = Symbolizer::from_text(
            "ffffffff82000000 D jiffies_lock\nffffffff82000100 D other\n".into(),
        );
        let w = super::super::progs::LCB_F_WRITE;
        let rq = [0xffff_8880_0001_0000];
        assert_eq!(addr_name(w | LCD_F_MMAP_LOCK, 0x1234, &s, &rq), "mmap_lock");
        assert_eq!(
            addr_name(1 | LCD_F_SIGHAND_LOCK, 0x1234, &s, &rq),
            "siglock"
        );
        assert_eq!(addr_name(1, 0xffff_ffff_8200_0008, &s, &rq), "jiffies_lock");
        assert_eq!(addr_name(1, rq[0], &s, &rq), "rq_lock");
        assert_eq!(addr_name(1, 0x1234, &s, &rq), "");
    }
}
