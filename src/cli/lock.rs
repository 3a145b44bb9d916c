//! `bport lock contention`: perf's `perf lock contention` flags → `perf::lock` options; prints the report on
//! stdout as perf does, status on stderr.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::ui::Ui;
use super::{CliError, CliResult};
use crate::perf::abi::KernelVersion;
use crate::perf::lock::{self, report, Aggr, LiveOptions, ReportOptions, SortKey, Target};

/// Kernel lock contention (Linux 5.19+), live through BPF or from a recording.
#[derive(Debug, Args)]
pub struct LockArgs {
    #[command(subcommand)]
    pub command: LockCommand,
}

/// The `lock` subcommands.
#[derive(Debug, Subcommand)]
pub enum LockCommand {
    /// Which kernel locks tasks wait on, for how long, and who waits: live through BPF (no recording).
    ///
    /// Counts contention from the lock:contention_begin/end tracepoints with two small BPF programs (built in
    /// bport: no clang, libbpf or BTF needed), system-wide (-a, the default), for processes (-p), threads
    /// (--tid) or a command, until the command exits, --duration passes, or Ctrl-C or SIGTERM arrives. The
    /// report is perf's: sorted by total wait, one line per call stack named by its caller (first frame outside
    /// the lock functions), or per task (-t) or lock address (-l).
    ///
    /// Example: bport lock contention -a --duration 5 -E 10
    Contention(Box<ContentionArgs>),
    /// Record lock:contention_begin/end with kernel callchains into perf.data, for `lock contention -i`.
    ///
    /// The file is what `perf lock record` writes on Linux 5.19+ (the same events, sampled at every hit, with
    /// callchains), so either tool reports from it, on this machine or another.
    ///
    /// Example: bport lock record -a -o lock.data -- sleep 5 && bport lock contention -i lock.data
    Record(LockRecordArgs),
}

/// `bport lock record` options.
#[derive(Debug, Args)]
pub struct LockRecordArgs {
    /// System-wide until COMMAND exits or Ctrl-C.
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "tid"])]
    pub all_cpus: bool,

    /// Attach to every thread of an existing process.
    #[arg(short = 'p', long = "pid", value_name = "PID", conflicts_with = "tid")]
    pub pid: Option<u32>,

    /// Attach to one existing thread.
    #[arg(long = "tid", value_name = "TID")]
    pub tid: Option<u32>,

    /// Output file; an existing one is kept as FILE.old.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "perf.data"
    )]
    pub output: std::path::PathBuf,

    /// Record only with what kernel VERSION offers (refused below 5.19, which lacks the tracepoints).
    #[arg(long = "kernel", value_name = "VERSION")]
    pub kernel: Option<String>,

    /// The command to run and record.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// `bport lock contention` options (perf's spelling).
#[derive(Debug, Args)]
pub struct ContentionArgs {
    /// System-wide (every task; the default without -p, --tid or a command).
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "tid"])]
    pub all_cpus: bool,

    /// Only these processes (every thread of each), comma-separated.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID]",
        conflicts_with_all = ["tid", "command"]
    )]
    pub pid: Option<String>,

    /// Only these threads, comma-separated.
    #[arg(long = "tid", value_name = "TID[,TID]", conflicts_with = "command")]
    pub tid: Option<String>,

    /// Only contentions that begin on these CPUs (perf's list syntax: 0-2,4). Live: every task on those CPUs
    /// (system-wide there; with a command, while it runs). With -i: the samples recorded on those CPUs (perf 6.1
    /// ignores -C with -i and reports every CPU).
    #[arg(short = 'C', long = "cpu", value_name = "CPU_LIST", conflicts_with_all = ["pid", "tid"])]
    pub cpu: Option<String>,

    /// Use BPF (accepted for perf's muscle memory: live mode always does).
    #[arg(short = 'b', long = "use-bpf")]
    pub use_bpf: bool,

    /// Print this many entries.
    #[arg(short = 'E', long = "entries", value_name = "N")]
    pub entries: Option<usize>,

    /// Sort key: contended, wait_total (total), wait_max (max), wait_min (min) or avg_wait (avg).
    #[arg(
        short = 'k',
        long = "key",
        value_name = "KEY",
        default_value = "wait_total"
    )]
    pub key: String,

    /// The value columns, in this order: contended, wait_total, wait_max, wait_min, avg_wait (comma-separated;
    /// the default is contended,wait_total,wait_max,avg_wait). A sort key (-k) not listed is added last.
    #[arg(short = 'F', long = "field", value_name = "FIELD[,FIELD]")]
    pub field: Option<String>,

    /// One line per waiting task (pid and comm).
    #[arg(short = 't', long = "threads", conflicts_with = "lock_addr")]
    pub threads: bool,

    /// One line per lock address, named as perf's BPF mode names it: the waiter's mmap_lock or siglock,
    /// a global lock's symbol (kernels with CONFIG_KALLSYMS_ALL), a CPU's rq_lock, else blank. The kernel
    /// struct offsets come from /sys/kernel/btf/vmlinux; what a kernel lacks is only left unnamed.
    #[arg(short = 'l', long = "lock-addr")]
    pub lock_addr: bool,

    /// One line per lock owner instead of per waiter (implies -t): for mutex and rwsem contention, the task
    /// holding the lock when the wait began (pid -1 when there is none or its type has no owner, as spinlocks).
    #[arg(short = 'o', long = "lock-owner", conflicts_with_all = ["lock_addr", "input"])]
    pub lock_owner: bool,

    /// Only these lock types, comma-separated: spinlock, rwlock, rwsem, mutex, semaphore, rtmutex, rwlock-rt,
    /// percpu-rwsem, or a side such as rwsem:R, rwlock:W, pcpu-sem:R.
    #[arg(short = 'Y', long = "type-filter", value_name = "TYPE[,TYPE]")]
    pub type_filter: Option<String>,

    /// Only these locks, comma-separated: hex addresses or kernel symbols (global locks).
    #[arg(short = 'L', long = "lock-filter", value_name = "ADDR|SYM[,..]")]
    pub lock_filter: Option<String>,

    /// Only contentions whose call stack (the first --max-stack frames) has a kernel function whose name
    /// contains one of NAMES (comma- or space-separated), as perf 6.2+ does.
    #[arg(short = 'S', long = "callstack-filter", value_name = "NAMES")]
    pub callstack_filter: Option<String>,

    /// Frames of each call stack kept.
    #[arg(long = "max-stack", value_name = "N", default_value_t = 8)]
    pub max_stack: u32,

    /// Skip exactly N frames of each stack before looking for the caller, as perf does (its default: 3);
    /// without it bport finds and drops the BPF and tracepoint frames itself.
    #[arg(long = "stack-skip", value_name = "N")]
    pub stack_skip: Option<usize>,

    /// Report from a recording (`bport lock record` or `perf lock record`) instead of counting live.
    #[arg(short = 'i', long = "input", value_name = "FILE", conflicts_with_all = ["command", "duration", "all_cpus"])]
    pub input: Option<std::path::PathBuf>,

    /// Kernel symbols from FILE (a copy of the recording machine's /proc/kallsyms) instead of this kernel's:
    /// callers, lock symbols and -L SYM are named from it.
    #[arg(long = "kallsyms", value_name = "FILE")]
    pub kallsyms: Option<std::path::PathBuf>,

    /// Accepted for perf's scripts: perf refuses a file another user owns without it; bport reads any file it
    /// can open.
    #[arg(short = 'f', long = "force")]
    pub force: bool,

    /// Refused (perf's raw event dump): `bport dump FILE` prints a file's records.
    #[arg(short = 'D', long = "dump-raw-trace", hide = true)]
    pub dump_raw_trace: bool,

    /// Refused: bport names kernel frames from kallsyms (use --kallsyms).
    #[arg(long = "vmlinux", value_name = "FILE", hide = true)]
    pub vmlinux: Option<std::path::PathBuf>,

    /// Print each entry's call stack (also with -v).
    #[arg(long = "callstack")]
    pub callstack: bool,

    /// Machine-readable output (perf 6.4's form): a `# output:` line naming the columns, then one line per
    /// entry, fields separated by SEP and a space: contended, total wait, max wait, avg wait (integer ns), then
    /// type, caller (with --callstack, a stacktrace field: `0xADDR SYM` frames joined by `:`); pid, comm (or
    /// owner) with -t or -o; address (hex), symbol, type (long name: rwsem) with -l. The same entries and values
    /// as the normal report. SEP may not contain ':', '+' or '.' (they occur inside fields).
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub field_sep: Option<String>,

    /// Stop after SECS seconds (for -a, -p, --tid).
    #[arg(long = "duration", value_name = "SECS")]
    pub duration: Option<f64>,

    /// Entries of the BPF maps.
    #[arg(long = "map-nr-entries", value_name = "N", default_value_t = 16384)]
    pub map_nr_entries: u32,

    /// Assume kernel VERSION (e.g. 5.10): refuse as bport would there.
    #[arg(long = "kernel", value_name = "VERSION")]
    pub kernel: Option<String>,

    /// The command to run; contention is counted for it until it exits.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Runs `bport lock`.
pub fn run(args: LockArgs, ui: &Ui) -> CliResult {
    match args.command {
        LockCommand::Contention(a) => contention(*a, ui),
        LockCommand::Record(a) => record(a, ui),
    }
}

fn ids(text: &str, what: &str) -> CliResult<Vec<i32>> {
    text.split(',')
        .map(|s| {
            s.trim()
                .parse::<i32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    CliError::user(format!("invalid {what} {s:?}: expected a positive number"))
                })
        })
        .collect()
}

/// The largest CPU number `-C` takes (perf's MAX_NR_CPUS is 4096 on x86-64 builds).
const MAX_CPU: u32 = 4095;

/// perf's CPU list (`0-2,4`), each CPU once, in order.
fn cpu_list(text: &str) -> CliResult<Vec<u32>> {
    let bad = || {
        CliError::user(format!(
            "invalid CPU list {text:?}: expected CPU numbers and ranges up to {MAX_CPU}, e.g. 0-2,4"
        ))
    };
    let numbers_ok = text
        .split([',', '-'])
        .all(|n| n.parse::<u32>().is_ok_and(|n| n <= MAX_CPU));
    if text.is_empty() || !numbers_ok {
        return Err(bad());
    }
    let mut cpus = crate::perf::sys::fs::parse_cpu_list(text).ok_or_else(bad)?;
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn contention(args: ContentionArgs, ui: &Ui) -> CliResult {
    let sort = SortKey::parse(&args.key).ok_or_else(|| {
        CliError::user(format!(
            "unknown sort key {:?}: use contended, wait_total, wait_max, wait_min or avg_wait",
            args.key
        ))
    })?;
    let fields = report::output_fields(args.field.as_deref(), sort).map_err(|name| {
        CliError::user(format!(
            "unknown output field {name:?} in -F: use contended, wait_total, wait_max, wait_min or avg_wait"
        ))
    })?;
    let aggr = if args.threads || args.lock_owner {
        Aggr::Task
    } else if args.lock_addr {
        Aggr::Addr
    } else {
        Aggr::Caller
    };
    let types = lock::type_filter(args.type_filter.as_deref()).map_err(CliError::from)?;
    refuse_perf_only(&args)?;
    let mut kallsyms = match &args.kallsyms {
        Some(path) => lock::kallsyms::RunningKallsyms::from_file(path).map_err(CliError::from)?,
        None => lock::kallsyms::RunningKallsyms::default(),
    };
    let addrs = kallsyms
        .lock_addresses(args.lock_filter.as_deref())
        .map_err(CliError::from)?;
    if let Some(sep) = &args.field_sep {
        // perf's rule: these already occur inside fields (rwsem:W, sym+0x1f, symbol.isra.0).
        if sep.is_empty() || sep.contains([':', '+', '.']) {
            return Err(CliError::user(format!(
                "cannot use {sep:?} as the -x separator: it is empty or occurs in the fields (':' in types, \
                 '+' in callers, '.' in symbols); use e.g. ',' or ';'"
            )));
        }
    }
    let cpus = args
        .cpu
        .as_deref()
        .map(cpu_list)
        .transpose()?
        .unwrap_or_default();
    let ropts = ReportOptions {
        aggr,
        sort,
        entries: args.entries,
        stack_skip: args.stack_skip,
        max_stack: args.max_stack as usize,
        callstack: args.callstack || ui.verbose > 0,
        field_sep: args.field_sep.clone(),
        quiet: ui.quiet,
        owner: args.lock_owner,
        fields,
        callstack_filter: args
            .callstack_filter
            .iter()
            .flat_map(|t| t.split([',', ' ']))
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    if let Some(input) = &args.input {
        let filters = lock::file::FileFilters {
            types,
            addrs,
            pids: task_ids(args.pid.as_deref(), "pid")?,
            tids: task_ids(args.tid.as_deref(), "tid")?,
            cpus,
        };
        return from_recording(input, &filters, &ropts, kallsyms);
    }
    let until = if !args.command.is_empty() {
        "until the command exits"
    } else if args.duration.is_some() {
        "for the duration"
    } else {
        "until Ctrl-C"
    };
    let options = live_options(&args, &ropts, types, addrs, cpus)?;
    live(&options, &ropts, kallsyms, until, ui)
}

/// perf's options bport refuses, with what to use instead.
fn refuse_perf_only(args: &ContentionArgs) -> CliResult {
    if args.dump_raw_trace {
        return Err(CliError::user(
            "-D/--dump-raw-trace is perf's raw event dump, not a lock report; bport has it as a command of its own",
        )
        .hint(match &args.input {
            Some(f) => format!("bport dump {}", f.display()),
            None => "bport dump FILE (for a recording made with `bport lock record`)".into(),
        }));
    }
    if args.vmlinux.is_some() {
        return Err(CliError::user(
            "--vmlinux is not supported: bport names kernel frames and locks from a kallsyms table, which a \
             vmlinux's symbol table would have to be relocated into (KASLR)",
        )
        .hint(
            "copy /proc/kallsyms from the machine that recorded (as root, kptr_restrict permitting) and pass \
             --kallsyms FILE",
        ));
    }
    Ok(())
}

/// A `-p` or `--tid` list for the file report (none: every task).
fn task_ids(text: Option<&str>, what: &str) -> CliResult<Vec<u32>> {
    Ok(text
        .map(|t| ids(t, what))
        .transpose()?
        .unwrap_or_default()
        .into_iter()
        .map(|id| id as u32)
        .collect())
}

/// `-i FILE`: the report from a recording.
fn from_recording(
    input: &std::path::Path,
    filters: &lock::file::FileFilters,
    ropts: &ReportOptions,
    kallsyms: lock::kallsyms::RunningKallsyms,
) -> CliResult {
    let file = crate::perf::data::PerfFile::open(input)
        .map_err(|e| CliError::from(e).hint(format!("is {} a perf.data file?", input.display())))?;
    let sym = kallsyms.into_symbolizer();
    let rep = lock::file::from_file(&file, &sym, ropts, filters, ropts.stack_skip)
        .map_err(CliError::from)?;
    if let Some(w) = &rep.warning {
        eprint!("{w}");
    }
    let mut out = std::io::stdout().lock();
    report::write(&rep, ropts, &mut out)?;
    Ok(())
}

/// The live session's options: whose contention, for how long, on which kernel.
fn live_options(
    args: &ContentionArgs,
    ropts: &ReportOptions,
    types: Vec<u32>,
    addrs: Vec<u64>,
    cpus: Vec<u32>,
) -> CliResult<LiveOptions> {
    let target = if let Some(p) = &args.pid {
        Target::Pids(ids(p, "pid")?)
    } else if let Some(t) = &args.tid {
        Target::Tids(ids(t, "tid")?)
    } else if !args.command.is_empty() {
        Target::Command(args.command.clone())
    } else {
        Target::All
    };
    if args.duration.is_some() && matches!(target, Target::Command(_)) {
        return Err(CliError::user(
            "--duration applies to -a, -p and --tid; with a command, contention is counted until it exits",
        ));
    }
    let duration = match args.duration {
        Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(CliError::user(format!(
                "invalid --duration {s}: expected seconds > 0"
            )))
        }
        None => None,
    };
    let kernel = match &args.kernel {
        Some(k) => Some(k.parse::<KernelVersion>()?),
        None => None,
    };
    Ok(LiveOptions {
        target,
        duration,
        aggr: ropts.aggr,
        // -S looks at each entry's stack.
        callstack: ropts.callstack || !ropts.callstack_filter.is_empty(),
        max_stack: args.max_stack,
        map_entries: args.map_nr_entries,
        types,
        addrs,
        // `-a -- CMD`: system-wide while the command runs (perf's behaviour); `-C` is system-wide on its CPUs.
        system_wide: args.all_cpus || !cpus.is_empty(),
        cpus,
        kernel,
        owner: args.lock_owner,
    })
}

/// Counts live, through BPF or, where BPF is denied, from the tracepoints; prints the report. `until` says
/// what ends the count.
fn live(
    options: &LiveOptions,
    ropts: &ReportOptions,
    kallsyms: lock::kallsyms::RunningKallsyms,
    until: &str,
    ui: &Ui,
) -> CliResult {
    let interrupted = crate::perf::sys::stop_flag()?;
    let mut on_attached = || ui.status(format!("bport lock: counting lock contention {until}"));
    let outcome = match lock::contention(options, interrupted, &mut on_attached) {
        Ok(outcome) => outcome,
        Err(lock::Error::BpfDenied { source }) => {
            return fallback(options, ropts, source, kallsyms, ui);
        }
        Err(e) => return Err(CliError::from(e)),
    };
    let sym = kallsyms.into_symbolizer();
    for note in &outcome.notes {
        ui.status(format!("bport lock: {note}"));
    }
    let rep = report::from_live(&outcome.stats, &sym, ropts, &outcome.rq_locks);
    let mut out = std::io::stdout().lock();
    report::write(&rep, ropts, &mut out)?;
    if let Some(crate::perf::record::ChildExit::Code(code)) = outcome.exit {
        if code != 0 {
            ui.warn(format!("the command exited with status {code}"));
        }
    }
    Ok(())
}

/// `bport lock record`: `bport record` of the two contention tracepoints with kernel callchains, as
/// `perf lock record` records them (every hit, `-g`).
fn record(args: LockRecordArgs, ui: &Ui) -> CliResult {
    let kernel = match &args.kernel {
        Some(k) => Some(k.parse::<KernelVersion>()?),
        None => KernelVersion::running(),
    };
    if let Some(v) = &kernel {
        if !lock::kernel_has_tracepoints(v) {
            return Err(CliError::from(lock::Error::KernelTooOld {
                kernel: v.to_string(),
            }));
        }
    }
    let record_args = super::record::RecordArgs {
        freq: None,
        count: Some(1),
        event: vec!["lock:contention_begin".into(), "lock:contention_end".into()],
        all_cpus: args.all_cpus,
        pid: args.pid,
        tid: args.tid,
        g: true,
        call_graph: None,
        output: args.output,
        mmap_pages: None,
        kernel: args.kernel,
        command: args.command,
    };
    super::record::run(record_args, ui)
}

/// Without BPF (no CAP_BPF, BPF disabled) the same report from the tracepoints through perf_event_open, which
/// needs only CAP_PERFMON or a permissive perf_event_paranoid: record into a temporary file, report from it.
fn fallback(
    options: &LiveOptions,
    ropts: &ReportOptions,
    bpf_error: crate::perf::bpf::Error,
    kallsyms: lock::kallsyms::RunningKallsyms,
    ui: &Ui,
) -> CliResult {
    let denied = |extra: Option<String>| {
        let mut e = CliError::from(lock::Error::BpfDenied {
            source: crate::perf::bpf::Error::MapCreate {
                name: "lock_tstamp".into(),
                source: std::io::Error::from_raw_os_error(
                    bpf_error.os_error().unwrap_or(libc::EPERM),
                ),
            },
        });
        if let Some(extra) = extra {
            e = e.hint(format!(
                "recording the tracepoints instead failed too: {extra}"
            ));
        }
        e
    };
    if options.owner {
        // The owner is read from the lock word when the wait begins; the tracepoints do not carry it.
        return Err(denied(Some(
            "-o reads lock owners in BPF; the tracepoints alone do not name them".into(),
        )));
    }
    let one = |ids: &[i32]| (ids.len() == 1).then(|| ids[0] as u32);
    let (all_cpus, pid, tid, mut command) = match &options.target {
        Target::All => (true, None, None, Vec::new()),
        Target::Command(argv) => (options.system_wide, None, None, argv.clone()),
        Target::Pids(p) if one(p).is_some() => (false, one(p), None, Vec::new()),
        Target::Tids(t) if one(t).is_some() => (false, None, one(t), Vec::new()),
        Target::Pids(_) | Target::Tids(_) => return Err(denied(None)),
    };
    if let (Some(d), true) = (options.duration, command.is_empty()) {
        command = vec!["sleep".into(), format!("{}", d.as_secs_f64()).into()];
    }
    ui.status(format!(
        "note: BPF is not available to this process ({}); counting from the tracepoints through \
         perf_event_open instead",
        std::io::Error::from_raw_os_error(bpf_error.os_error().unwrap_or(libc::EPERM))
    ));
    let path = std::env::temp_dir().join(format!("bport-lock-{}.data", std::process::id()));
    let record_args = super::record::RecordArgs {
        freq: None,
        count: Some(1),
        event: vec!["lock:contention_begin".into(), "lock:contention_end".into()],
        all_cpus,
        pid,
        tid,
        g: true,
        call_graph: None,
        output: path.clone(),
        mmap_pages: None,
        kernel: None,
        command,
    };
    let config = record_args.to_config()?;
    let recorded = crate::perf::record::record(&config);
    let result = (|| {
        recorded.map_err(|e| denied(Some(e.to_string())))?;
        let file =
            crate::perf::data::PerfFile::open(&path).map_err(|e| denied(Some(e.to_string())))?;
        let sym = kallsyms.into_symbolizer();
        let filters = lock::file::FileFilters {
            types: options.types.clone(),
            addrs: options.addrs.clone(),
            cpus: options.cpus.clone(),
            ..Default::default()
        };
        let rep = lock::file::from_file(&file, &sym, ropts, &filters, ropts.stack_skip)
            .map_err(CliError::from)?;
        if let Some(w) = &rep.warning {
            eprint!("{w}");
        }
        report::write(&rep, ropts, &mut std::io::stdout().lock())?;
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("data.old"));
    result
}
