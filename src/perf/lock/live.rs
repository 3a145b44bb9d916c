//! The live session of `bport lock contention`: create the maps, fill the filters, load and attach the two
//! programs, let the workload run (a command, a duration, or until Ctrl-C), detach, and read the statistics.
//!
//! Every kernel object is an owned descriptor held by this function's locals, so returning early, failing or
//! being interrupted releases all of them (the kernel frees a map once no descriptor and no program holds it).

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::layout::Layout;
use super::progs::{self, Aggr, Maps, ProgConfig};
use super::Error;
use crate::perf::abi::KernelVersion;
use crate::perf::bpf;
use crate::perf::sys;

/// Whose contention is counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every task (`-a`, also the default without a command).
    All,
    /// These processes (`-p`, every thread of each).
    Pids(Vec<i32>),
    /// These threads (`--tid`).
    Tids(Vec<i32>),
    /// A command bport starts; counted until it exits (its threads; not processes it forks).
    Command(Vec<OsString>),
}

/// Options of a live session.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// Whose contention.
    pub target: Target,
    /// Stop after this long (for `-a`/`-p`/`--tid`; a command ends the session when it exits).
    pub duration: Option<Duration>,
    /// The aggregation key.
    pub aggr: Aggr,
    /// Collect stacks even when not aggregating by caller (to print them).
    pub callstack: bool,
    /// Frames kept per stack (perf's `--max-stack`, default 8).
    pub max_stack: u32,
    /// Entries of the BPF maps (perf's `--map-nr-entries`).
    pub map_entries: u32,
    /// Only these lock flags (`-Y`), empty for all.
    pub types: Vec<u32>,
    /// Only these lock addresses (`-L`), empty for all.
    pub addrs: Vec<u64>,
    /// Only contentions that begin on these CPUs (`-C`), empty for all.
    pub cpus: Vec<u32>,
    /// The kernel to assume (`--kernel`), `None` for the running one.
    pub kernel: Option<KernelVersion>,
    /// With a command: count every task while it runs (`-a -- CMD`), not only the command's.
    pub system_wide: bool,
    /// With [`Aggr::Task`]: one entry per lock owner instead of per waiter (perf's `-o`).
    pub owner: bool,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            target: Target::All,
            duration: None,
            aggr: Aggr::Caller,
            callstack: false,
            max_stack: 8,
            map_entries: 16384,
            types: Vec::new(),
            addrs: Vec::new(),
            cpus: Vec::new(),
            kernel: None,
            system_wide: false,
            owner: false,
        }
    }
}

/// One aggregated entry as the programs left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawStat {
    /// Stack id (negative: none).
    pub stack_id: i32,
    /// Waiting thread id (task aggregation).
    pub tid: u32,
    /// Lock address (address aggregation).
    pub lock: u64,
    /// Sum of the waits, ns.
    pub total: u64,
    /// Longest wait, ns.
    pub max: u64,
    /// Shortest wait, ns.
    pub min: u64,
    /// Number of contentions.
    pub count: u32,
    /// The lock's flags (its type).
    pub flags: u32,
    /// The kernel stack (return addresses, innermost first), empty without one.
    pub stack: Vec<u64>,
    /// The waiting task's name (task aggregation).
    pub comm: Option<String>,
}

/// What a live session collected.
#[derive(Debug, Default)]
pub struct LiveOutcome {
    /// The entries.
    pub stats: Vec<RawStat>,
    /// How the command ended, when there was one.
    pub exit: Option<sys::ChildExit>,
    /// Whether Ctrl-C ended the session.
    pub interrupted: bool,
    /// How long the programs were attached.
    pub elapsed: Duration,
    /// The run-queue locks, one per possible CPU (with [`Aggr::Addr`], when the kernel lets bport find them).
    pub rq_locks: Vec<u64>,
    /// What could not be named and why (a kernel without BTF, or without `runqueues` in kallsyms).
    pub notes: Vec<String>,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes in range"))
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes in range"))
}

fn check_task(what: &'static str, id: i32) -> Result<(), Error> {
    if id <= 0 || !std::path::Path::new(&format!("/proc/{id}")).exists() {
        return Err(Error::NoSuchTask { what, id });
    }
    Ok(())
}

/// Whether the running kernel (or the `--kernel` one) has the tracepoints; tracefs decides for the running
/// kernel when it is mounted, the version otherwise.
fn check_kernel(kernel: Option<&KernelVersion>) -> Result<(), Error> {
    if let Some(v) = kernel {
        if !super::kernel_has_tracepoints(v) {
            return Err(Error::KernelTooOld {
                kernel: v.to_string(),
            });
        }
        return Ok(());
    }
    let running = KernelVersion::running();
    if let Some(v) = &running {
        if !super::kernel_has_tracepoints(v) {
            return Err(Error::KernelTooOld {
                kernel: v.to_string(),
            });
        }
    }
    Ok(())
}

fn fork_command(argv: &[OsString]) -> Result<sys::PausedChild, Error> {
    let command = sys::Command::new(argv).map_err(|e| match e {
        sys::CommandError::Empty => Error::InvalidOptions("an empty command".into()),
        sys::CommandError::Exec { program, source } => Error::Exec { program, source },
    })?;
    // Said before anything is attached (exec would fail only once counting had begun).
    std::fs::metadata(command.path()).map_err(|source| Error::Exec {
        program: argv[0].clone(),
        source,
    })?;
    command.fork_paused(false).map_err(|source| Error::System {
        what: "fork",
        source,
    })
}

fn deny_or(err: bpf::Error) -> Error {
    match err.os_error() {
        Some(libc::EPERM) => Error::BpfDenied { source: err },
        _ => Error::Bpf(err),
    }
}

fn map_err(name: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| {
        Error::Bpf(bpf::Error::Map {
            name: name.into(),
            source,
        })
    }
}

/// Runs a live session until the command exits, the duration passes, or `interrupted` is set (Ctrl-C).
/// `on_attached` runs once the programs are attached (and before the command starts), so a caller can say that
/// counting has begun.
pub fn contention(
    options: &LiveOptions,
    interrupted: &AtomicBool,
    on_attached: &mut dyn FnMut(),
) -> Result<LiveOutcome, Error> {
    check_options(options)?;
    let mut config = prog_config(options);
    let mut notes = Vec::new();
    let rq_locks = read_kernel_layout(&mut config, &mut notes);
    let maps = Maps::create(&config).map_err(deny_or)?;
    fill_filters(&maps, options)?;
    let begin =
        bpf::load_raw_tracepoint("lock_begin", &progs::begin(&maps, &config)?).map_err(deny_or)?;
    let end =
        bpf::load_raw_tracepoint("lock_end", &progs::end(&maps, &config)?).map_err(deny_or)?;

    // The command is forked before attaching (its pid goes into the filter) and released after.
    let child = match &options.target {
        Target::Command(argv) => {
            let child = fork_command(argv)?;
            if config.filter_tgid {
                maps.tgid_filter
                    .update(&(child.pid as u32).to_ne_bytes(), &YES)
                    .map_err(map_err("lock_tgid_filter"))?;
            }
            Some((child, argv[0].clone()))
        }
        _ => None,
    };
    // End first: a begin without its end would leave slots that a later end of the same lock would close.
    let end_link = attach("contention_end", &end)?;
    let begin_link = attach("contention_begin", &begin)?;
    let started = Instant::now();
    on_attached();
    let pid = child.as_ref().map(|(c, _)| c.pid);
    if let Some((child, program)) = child {
        child
            .start()
            .map_err(|source| Error::Exec { program, source })?;
    }
    let mut outcome = LiveOutcome {
        rq_locks,
        notes,
        ..LiveOutcome::default()
    };
    wait_for_the_end(options, interrupted, pid, started, &mut outcome)?;
    drop(begin_link);
    drop(end_link);
    outcome.elapsed = started.elapsed();
    if let (Some(pid), None) = (pid, outcome.exit) {
        // Ctrl-C reached bport but not the command (a signal to bport alone): do not leave it running.
        let _ = sys::kill(pid, libc::SIGTERM);
        outcome.exit = sys::wait(pid).ok();
    }
    outcome.stats = read_stats(&maps, &config)?;
    add_seen_run_queue_locks(&maps, &config, &mut outcome.rq_locks)?;
    Ok(outcome)
}

/// The value of a filter map's entries: present means counted.
const YES: [u8; 1] = [1];

/// Refuses what the session could not count: a kernel without the tracepoints, a task or CPU that does not
/// exist.
fn check_options(options: &LiveOptions) -> Result<(), Error> {
    check_kernel(options.kernel.as_ref())?;
    match &options.target {
        Target::Pids(p) => p.iter().try_for_each(|&id| check_task("process", id))?,
        Target::Tids(t) => t.iter().try_for_each(|&id| check_task("thread", id))?,
        Target::All | Target::Command(_) => {}
    }
    if let Some(&cpu) = options
        .cpus
        .iter()
        .find(|&&c| c >= possible_cpus().unwrap_or(1))
    {
        return Err(Error::InvalidOptions(format!(
            "CPU {cpu} does not exist here (/sys/devices/system/cpu/possible lists {} CPUs)",
            possible_cpus().unwrap_or(1)
        )));
    }
    Ok(())
}

/// What the programs are built for, before the kernel's struct layout is known.
fn prog_config(options: &LiveOptions) -> ProgConfig {
    ProgConfig {
        aggr: options.aggr,
        callstack: options.aggr == Aggr::Caller || options.callstack,
        kernel_skip: 0,
        max_stack: options.max_stack.clamp(1, 127),
        map_entries: options.map_entries,
        filter_tid: matches!(options.target, Target::Tids(_)),
        filter_tgid: match options.target {
            Target::Pids(_) => true,
            Target::Command(_) => !options.system_wide,
            Target::All | Target::Tids(_) => false,
        },
        filter_type: !options.types.is_empty(),
        filter_addr: !options.addrs.is_empty(),
        filter_cpu: !options.cpus.is_empty(),
        owner: options.owner && options.aggr == Aggr::Task,
        layout: Layout::default(),
        cpus: possible_cpus().unwrap_or(1).min(MAX_CPUS),
    }
}

/// For `-l` and `-o`: the kernel's struct offsets into `config`, and with `-l` the run-queue locks found now.
/// What is missing only leaves locks or owners unnamed, and is said in `notes`.
fn read_kernel_layout(config: &mut ProgConfig, notes: &mut Vec<String>) -> Vec<u64> {
    if config.aggr == Aggr::Addr || config.owner {
        let (layout, why) = Layout::running();
        config.layout = layout;
        if let Some(why) = why {
            notes.push(format!(
                "no kernel BTF, so per-object locks and owners go unnamed: {why}"
            ));
        } else if config.owner && layout.owner().is_none() {
            notes.push("the kernel's BTF lacks mutex/rw_semaphore owner or task_struct pid/comm: owners unknown (-1)".into());
        }
    }
    if config.aggr != Aggr::Addr {
        return Vec::new();
    }
    match run_queue_locks(&config.layout) {
        Ok(locks) => locks,
        // The end program still learns each CPU's rq from the tasks it sees.
        Err(_) if config.layout.task_rq().is_some() && config.layout.rq_lock.is_some() => {
            Vec::new()
        }
        Err(why) => {
            notes.push(format!("run-queue locks go unnamed: {why}"));
            Vec::new()
        }
    }
}

/// The filter maps' entries: the processes or threads, lock types, lock addresses and CPUs counted.
fn fill_filters(maps: &Maps, options: &LiveOptions) -> Result<(), Error> {
    match &options.target {
        Target::Pids(ids) => {
            for &id in ids {
                (maps.tgid_filter.update(&(id as u32).to_ne_bytes(), &YES))
                    .map_err(map_err("lock_tgid_filter"))?;
            }
        }
        Target::Tids(ids) => {
            for &id in ids {
                (maps.tid_filter.update(&(id as u32).to_ne_bytes(), &YES))
                    .map_err(map_err("lock_tid_filter"))?;
            }
        }
        Target::All | Target::Command(_) => {}
    }
    for &flags in &options.types {
        maps.type_filter
            .update(&flags.to_ne_bytes(), &YES)
            .map_err(map_err("lock_type_filter"))?;
    }
    for &addr in &options.addrs {
        maps.addr_filter
            .update(&addr.to_ne_bytes(), &YES)
            .map_err(map_err("lock_addr_filter"))?;
    }
    for &cpu in &options.cpus {
        maps.cpu_filter
            .update(&cpu.to_ne_bytes(), &YES)
            .map_err(map_err("lock_cpu_filter"))?;
    }
    Ok(())
}

/// Attaches a program to a contention tracepoint.
fn attach(name: &str, prog: &bpf::ProgFd) -> Result<bpf::Attachment, Error> {
    bpf::attach_raw_tracepoint(name, prog).map_err(|e| match e.os_error() {
        // No such raw tracepoint: a kernel without them (a backport of the version string, or a config).
        Some(libc::ENOENT) => Error::KernelTooOld {
            kernel: KernelVersion::running().map_or_else(|| "(unknown)".into(), |v| v.to_string()),
        },
        _ => deny_or(e),
    })
}

/// Waits, polling, until Ctrl-C, the command's exit or the duration's end; notes which in `outcome`.
fn wait_for_the_end(
    options: &LiveOptions,
    interrupted: &AtomicBool,
    pid: Option<i32>,
    started: Instant,
    outcome: &mut LiveOutcome,
) -> Result<(), Error> {
    loop {
        if interrupted.load(Ordering::SeqCst) {
            outcome.interrupted = true;
            return Ok(());
        }
        if let Some(pid) = pid {
            if let Some(exit) = sys::try_wait(pid).map_err(|source| Error::System {
                what: "waitpid",
                source,
            })? {
                outcome.exit = Some(exit);
                return Ok(());
            }
        }
        if options.duration.is_some_and(|d| started.elapsed() >= d) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// With `-l`: the run-queue locks of the `struct rq`s the end program saw, added to `rq_locks` when new.
fn add_seen_run_queue_locks(
    maps: &Maps,
    config: &ProgConfig,
    rq_locks: &mut Vec<u64>,
) -> Result<(), Error> {
    let (Aggr::Addr, Some(lock_off)) = (config.aggr, config.layout.rq_lock) else {
        return Ok(());
    };
    for cpu in 0..config.cpus {
        let rq = (maps.rq_seen.lookup(&cpu.to_ne_bytes()))
            .map_err(map_err("lock_rq_seen"))?
            .map_or(0, |v| le_u64(&v, 0));
        let lock = rq + u64::from(lock_off);
        if rq != 0 && !rq_locks.contains(&lock) {
            rq_locks.push(lock);
        }
    }
    Ok(())
}

/// CPUs bport names run-queue locks for (more would make the unrolled `runqueues` program too long).
const MAX_CPUS: u32 = 4096;

/// The number of possible CPUs (`/sys/devices/system/cpu/possible`, e.g. `0-63`): per-CPU data exists for each.
fn possible_cpus() -> Option<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").ok()?;
    let last = text
        .trim()
        .split(',')
        .filter_map(|r| r.rsplit('-').next()?.parse::<u32>().ok())
        .max()?;
    Some(last + 1)
}

/// Each possible CPU's run-queue lock (`&per_cpu(runqueues, cpu).__lock`), found by a BPF program run once: the
/// per-CPU variable's address needs the kernel (`bpf_per_cpu_ptr`). The error says what was missing; it only
/// leaves rq locks unnamed.
pub fn run_queue_locks(layout: &Layout) -> Result<Vec<u64>, String> {
    let (Some(id), Some(lock_off)) = (layout.runqueues, layout.rq_lock) else {
        return Err("the kernel's BTF has no runqueues variable or struct rq lock".into());
    };
    let cpus = possible_cpus()
        .ok_or("cannot read /sys/devices/system/cpu/possible")?
        .min(MAX_CPUS);
    let out = bpf::map(bpf::MAP_ARRAY, 4, 8, cpus, "lock_rq").map_err(|e| e.to_string())?;
    let insns = progs::runqueues(&out, id, cpus).map_err(|e| e.to_string())?;
    let prog = bpf::load_raw_tracepoint("lock_rq", &insns).map_err(|e| match e {
        // The verifier's line that names the cause ("ldimm64 failed to find the address for kernel symbol
        // 'runqueues'"), before its statistics.
        bpf::Error::Load { log, source, .. } => log
            .lines()
            .find(|l| !l.starts_with("processed ") && !l.trim().is_empty())
            .map_or_else(|| source.to_string(), str::to_string),
        e => e.to_string(),
    })?;
    prog.test_run()
        .map_err(|e| format!("running the program: {e}"))?;
    let mut locks = Vec::new();
    for cpu in 0..cpus {
        let rq = (out.lookup(&cpu.to_ne_bytes()))
            .map_err(|e| e.to_string())?
            .map_or(0, |v| le_u64(&v, 0));
        if rq != 0 {
            locks.push(rq + u64::from(lock_off));
        }
    }
    Ok(locks)
}

fn read_stats(maps: &Maps, config: &ProgConfig) -> Result<Vec<RawStat>, Error> {
    let mut stats = Vec::new();
    let mut key: Option<Vec<u8>> = None;
    let err = map_err("lock_stat");
    while let Some(next) = maps.stat.next_key(key.as_deref()).map_err(&err)? {
        if let Some(value) = maps.stat.lookup(&next).map_err(&err)? {
            let stack_id = le_u32(&next, 0) as i32;
            let tid = le_u32(&next, 4);
            let stack = if stack_id >= 0 && config.callstack {
                maps.stacks
                    .lookup(&(stack_id as u32).to_ne_bytes())
                    .map_err(map_err("lock_stacks"))?
                    .map(|b| {
                        b.chunks_exact(8)
                            .map(|c| le_u64(c, 0))
                            .take_while(|&ip| ip != 0)
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            let comm = if config.aggr == Aggr::Task {
                maps.comm
                    .lookup(&tid.to_ne_bytes())
                    .map_err(map_err("lock_comm"))?
                    .map(|b| {
                        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                        String::from_utf8_lossy(&b[..end]).into_owned()
                    })
            } else {
                None
            };
            stats.push(RawStat {
                stack_id,
                tid,
                lock: le_u64(&next, 8),
                total: le_u64(&value, 0),
                max: le_u64(&value, 8),
                min: le_u64(&value, 16),
                count: le_u32(&value, 24),
                flags: le_u32(&value, 28),
                stack,
                comm,
            });
        }
        key = Some(next);
    }
    Ok(stats)
}
