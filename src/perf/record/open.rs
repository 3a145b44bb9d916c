//! Building the attr from a [`Config`] and opening it on the running kernel with perf's fallbacks: E2BIG size
//! read-back and EINVAL feature dropping ([`attr::next_attempt`]), `cycles` → `cpu-clock` without a PMU, user-only
//! when `perf_event_paranoid` forbids the kernel, and clear errors for LBR and permissions.

use std::io;
use std::path::Path;

use super::attr::{self, Retry};
use super::{CallGraph, Config, Error, Event, Sampling};
use crate::perf::abi::{self, KernelAbi};
use crate::perf::data::PerfEventAttr;
use crate::perf::sys::{self, EventFd};

/// x86-64 user registers perf samples for DWARF unwinding (`PERF_REGS_MASK`): AX..R15 except the segment
/// registers DS, ES, FS, GS, which the kernel does not provide on x86-64.
pub const X86_64_USER_REGS: u64 = ((1 << 24) - 1)
    & !((1 << abi::PERF_REG_X86_DS)
        | (1 << abi::PERF_REG_X86_ES)
        | (1 << abi::PERF_REG_X86_FS)
        | (1 << abi::PERF_REG_X86_GS));

/// Where the kernel lists the core PMU; absent in VMs that expose none.
const CPU_PMU: &str = "/sys/bus/event_source/devices/cpu";

/// The attr the config asks for, in the newest layout, before any cap or negotiation.
pub fn initial_attr(config: &Config, data_bytes: usize) -> PerfEventAttr {
    let (type_, config_value) = event_type(config.event);
    let mut sample_type = abi::PERF_SAMPLE_IP
        | abi::PERF_SAMPLE_TID
        | abi::PERF_SAMPLE_TIME
        | abi::PERF_SAMPLE_CPU
        | abi::PERF_SAMPLE_PERIOD;
    let mut flags = abi::ATTR_FLAG_DISABLED
        | abi::ATTR_FLAG_MMAP
        | abi::ATTR_FLAG_COMM
        | abi::ATTR_FLAG_TASK
        | abi::ATTR_FLAG_SAMPLE_ID_ALL
        | abi::ATTR_FLAG_MMAP2
        | abi::ATTR_FLAG_COMM_EXEC
        | abi::ATTR_FLAG_WATERMARK;
    let (period, freq) = match config.sampling {
        Sampling::Frequency(hz) => (hz, true),
        Sampling::Period(n) => (n, false),
    };
    if freq {
        flags |= abi::ATTR_FLAG_FREQ;
    }
    match config.target {
        super::Target::Command(_) => {
            flags |= abi::ATTR_FLAG_INHERIT | abi::ATTR_FLAG_ENABLE_ON_EXEC
        }
        // Threads and processes the attached process starts later are followed too, as perf's -p does.
        super::Target::Process(_) => flags |= abi::ATTR_FLAG_INHERIT,
        super::Target::SystemWide(_) | super::Target::Thread(_) => {}
    }
    let config_value = match (config.event, config.tracepoints.first()) {
        (Event::Tracepoint, Some(tp)) => tp.id,
        _ => config_value,
    };
    if config.event == Event::Tracepoint {
        // perf's tracepoint attrs: RAW carries the record; IDENTIFIER tells events apart when there are several
        // (evsel__config; `perf evlist -v` on a `perf record -e a,b` file).
        sample_type |= abi::PERF_SAMPLE_RAW;
        if config.tracepoints.len() > 1 {
            sample_type |= abi::PERF_SAMPLE_IDENTIFIER;
        }
    }
    let mut attr = PerfEventAttr {
        type_,
        size: abi::PERF_ATTR_SIZE_NEWEST,
        config: config_value,
        sample_period_or_freq: period,
        sample_type,
        read_format: 0,
        flags,
        // Wake the poll loop when a quarter of the ring is full: early enough that a slow wake-up still leaves
        // three quarters of headroom, rare enough to keep wake-ups cheap.
        wakeup_events_or_watermark: (data_bytes / 4) as u32,
        ..PerfEventAttr::default()
    };
    match config.call_graph {
        CallGraph::None => {}
        CallGraph::FramePointer => attr.sample_type |= abi::PERF_SAMPLE_CALLCHAIN,
        CallGraph::Dwarf { stack_size } => {
            sample_type = abi::PERF_SAMPLE_CALLCHAIN
                | abi::PERF_SAMPLE_REGS_USER
                | abi::PERF_SAMPLE_STACK_USER;
            attr.sample_type |= sample_type;
            // The kernel part of the chain still comes from the kernel; user space is unwound from the copy.
            // Data maps let unwinders read .eh_frame_hdr, which sits in a read-only segment (perf does the same).
            attr.flags |= abi::ATTR_FLAG_EXCLUDE_CALLCHAIN_USER | abi::ATTR_FLAG_MMAP_DATA;
            attr.sample_regs_user = X86_64_USER_REGS;
            attr.sample_stack_user = stack_size;
        }
        CallGraph::Lbr => {
            attr.sample_type |= abi::PERF_SAMPLE_CALLCHAIN | abi::PERF_SAMPLE_BRANCH_STACK;
            attr.branch_sample_type =
                abi::PERF_SAMPLE_BRANCH_USER | abi::PERF_SAMPLE_BRANCH_CALL_STACK;
        }
    }
    attr
}

fn event_type(event: Event) -> (u32, u64) {
    match event {
        Event::CpuClock => (abi::PERF_TYPE_SOFTWARE, abi::PERF_COUNT_SW_CPU_CLOCK),
        Event::TaskClock => (abi::PERF_TYPE_SOFTWARE, abi::PERF_COUNT_SW_TASK_CLOCK),
        Event::Cycles => (abi::PERF_TYPE_HARDWARE, abi::PERF_COUNT_HW_CPU_CYCLES),
        Event::Instructions => (abi::PERF_TYPE_HARDWARE, abi::PERF_COUNT_HW_INSTRUCTIONS),
        Event::Tracepoint => (abi::PERF_TYPE_TRACEPOINT, 0),
    }
}

/// Checks the config against the target ABI before touching the kernel, and caps the attr to it.
pub fn apply_target(
    attr: &mut PerfEventAttr,
    config: &Config,
    target: &KernelAbi,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    let kernel = || {
        target
            .version
            .as_ref()
            .map_or("(newest)".to_string(), |v| v.to_string())
    };
    match config.call_graph {
        CallGraph::Dwarf { .. } if !target.supports_dwarf() => {
            return Err(Error::ModeUnsupported {
                mode: "dwarf",
                kernel: kernel(),
                reason: format!(
                    "user registers and stack in samples (PERF_SAMPLE_REGS_USER/STACK_USER) arrived in Linux {}",
                    since(abi::table::SAMPLE_TYPES, abi::PERF_SAMPLE_REGS_USER)
                ),
            })
        }
        CallGraph::Lbr if !target.supports_lbr_callstack() => {
            return Err(Error::ModeUnsupported {
                mode: "lbr",
                kernel: kernel(),
                reason: format!(
                    "LBR call stacks (PERF_SAMPLE_BRANCH_CALL_STACK) arrived in Linux {}",
                    since(abi::table::BRANCH_SAMPLE_TYPES, abi::PERF_SAMPLE_BRANCH_CALL_STACK)
                ),
            })
        }
        _ => {}
    }
    if config.call_graph == CallGraph::Lbr {
        if !config.event.is_hardware() {
            return Err(Error::LbrUnavailable {
                reason: format!("LBR records branches of a hardware event; {} is a software timer (use -e cycles)", config.event.name()),
            });
        }
        if !Path::new(CPU_PMU).exists() {
            return Err(Error::LbrUnavailable {
                reason: format!("this machine exposes no hardware PMU ({CPU_PMU} is missing; virtual machines usually have none)"),
            });
        }
    }
    if let CallGraph::Dwarf { stack_size } = config.call_graph {
        if stack_size == 0 || stack_size % 8 != 0 || stack_size >= 65536 {
            return Err(Error::InvalidConfig(format!(
                "the DWARF stack size must be a non-zero multiple of 8 below 65536, not {stack_size}"
            )));
        }
    }
    for note in attr::cap_to_target(attr, target) {
        log::info!("--kernel cap: {note}");
        notes.push(format!("--kernel {}: {note}", kernel()));
    }
    Ok(())
}

/// Why a hardware event failed to open, in the user's terms.
fn pmu_reason(err: &io::Error) -> String {
    if Path::new(CPU_PMU).exists() {
        format!("the kernel refused it ({err})")
    } else {
        format!("this machine exposes no hardware PMU ({CPU_PMU} is missing; virtual machines usually have none)")
    }
}

/// The kernel version that introduced `value`, as the ABI table says.
fn since(table: &[abi::AbiItem], value: u64) -> String {
    abi::table::find(table, value).map_or_else(|| "?".to_string(), |i| i.since.to_string())
}

/// Opens the first descriptor, negotiating the attr with the kernel. Returns the settled attr (used unchanged
/// for every further descriptor) and the event actually used.
pub fn open_negotiated(
    mut attr: PerfEventAttr,
    mut event: Event,
    call_graph: CallGraph,
    pid: i32,
    cpu: i32,
    notes: &mut Vec<String>,
) -> Result<(EventFd, PerfEventAttr, Event), Error> {
    let mut tried = Vec::new();
    loop {
        let mut buf = attr::encode(&attr);
        match sys::perf_event_open(&mut buf, pid, cpu) {
            Ok(fd) => return Ok((fd, attr, event)),
            Err(err) => {
                let errno = err.raw_os_error().unwrap_or(0);
                tried.push(format!("size {} flags {:#x}: {err}", attr.size, attr.flags));
                if let Some(next) =
                    fallback(&attr, event, call_graph, pid == -1, errno, buf.size(), &err)?
                {
                    let (next_attr, next_event, why) = next;
                    log::info!("perf_event_open: {why}");
                    notes.push(why);
                    attr = next_attr;
                    event = next_event;
                    continue;
                }
                if errno == libc::ESRCH && pid > 0 {
                    return Err(Error::NoSuchTask { pid: pid as u32 });
                }
                return Err(Error::Open {
                    event: event.name(),
                    tried: tried.join("; "),
                    source: err,
                });
            }
        }
    }
}

type Next = (PerfEventAttr, Event, String);

fn fallback(
    attr: &PerfEventAttr,
    event: Event,
    call_graph: CallGraph,
    system_wide: bool,
    errno: i32,
    kernel_size: u32,
    err: &io::Error,
) -> Result<Option<Next>, Error> {
    let hardware = attr.type_ == abi::PERF_TYPE_HARDWARE;
    match errno {
        libc::EACCES | libc::EPERM => {
            let paranoid = Error::read_paranoid();
            // perf_event_paranoid 2 allows user-space-only profiling of one's own tasks: retry that before giving
            // up, as perf does (system-wide needs 0 whatever is excluded).
            if !system_wide
                && attr.flags & abi::ATTR_FLAG_EXCLUDE_KERNEL == 0
                && paranoid.is_some_and(|p| p >= 2)
            {
                let mut next = attr.clone();
                next.flags |= abi::ATTR_FLAG_EXCLUDE_KERNEL;
                return Ok(Some((
                    next,
                    event,
                    format!(
                        "kernel.perf_event_paranoid is {}: recording user space only",
                        paranoid.unwrap_or(2)
                    ),
                )));
            }
            let needed = if system_wide {
                0
            } else if attr.flags & abi::ATTR_FLAG_EXCLUDE_KERNEL == 0 {
                1
            } else {
                2
            };
            return Err(Error::PermissionDenied {
                paranoid,
                needed,
                source: io::Error::from_raw_os_error(errno),
            });
        }
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP if hardware => {
            if call_graph == CallGraph::Lbr {
                let reason = if Path::new(CPU_PMU).exists() {
                    format!("the kernel refused the branch-stack event ({err}); this CPU has no usable LBR")
                } else {
                    format!("no hardware PMU ({CPU_PMU} is missing)")
                };
                return Err(Error::LbrUnavailable { reason });
            }
            if event == Event::Cycles {
                let mut next = attr.clone();
                next.type_ = abi::PERF_TYPE_SOFTWARE;
                next.config = abi::PERF_COUNT_SW_CPU_CLOCK;
                return Ok(Some((
                    next,
                    Event::CpuClock,
                    format!("the cycles event is not supported here ({err}; no hardware PMU?): falling back to cpu-clock"),
                )));
            }
            // Other hardware events have no software stand-in: a timer would measure something else.
            return Err(Error::EventUnavailable {
                event: event.name(),
                reason: pmu_reason(err),
            });
        }
        libc::EOPNOTSUPP if attr.branch_sample_type != 0 => {
            return Err(Error::LbrUnavailable {
                reason: format!(
                    "the kernel refused branch sampling for {} ({err})",
                    event.name()
                ),
            });
        }
        _ => {}
    }
    Ok(match attr::next_attempt(attr, errno, kernel_size) {
        Retry::With(next, why) => Some((next, event, why)),
        Retry::GiveUp => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::record::Target;

    #[test]
    fn dwarf_register_mask_is_perfs() {
        assert_eq!(X86_64_USER_REGS, 0xff0fff);
    }

    #[test]
    fn a_41_cap_keeps_dwarf_but_drops_newer_flags_and_sizes() {
        let mut config = Config::new(Target::Command(vec!["true".into()]));
        config.call_graph = CallGraph::Dwarf { stack_size: 8192 };
        let mut attr = initial_attr(&config, 1 << 19);
        let abi41 = KernelAbi::for_version(&"4.1".parse().unwrap());
        let mut notes = Vec::new();
        apply_target(&mut attr, &config, &abi41, &mut notes).unwrap();
        assert_eq!(attr.size, 112);
        assert!(attr.has_flag(
            abi::ATTR_FLAG_MMAP2 | abi::ATTR_FLAG_COMM_EXEC | abi::ATTR_FLAG_SAMPLE_ID_ALL
        ));
        assert_eq!(notes, Vec::<String>::new());
        // 3.4 has neither DWARF sampling nor MMAP2.
        let abi34 = KernelAbi::for_version(&"3.4".parse().unwrap());
        let err = apply_target(&mut attr.clone(), &config, &abi34, &mut notes).unwrap_err();
        assert!(
            matches!(err, Error::ModeUnsupported { mode: "dwarf", .. }),
            "{err}"
        );
        config.call_graph = CallGraph::FramePointer;
        let mut fp = initial_attr(&config, 1 << 19);
        apply_target(&mut fp, &config, &abi34, &mut notes).unwrap();
        assert_eq!(fp.size, 80);
        assert!(!fp.has_flag(abi::ATTR_FLAG_MMAP2) && !fp.has_flag(abi::ATTR_FLAG_COMM_EXEC));
        assert_eq!(
            notes,
            [
                "--kernel 3.4: comm_exec (Linux 3.16) is not in the target ABI",
                "--kernel 3.4: mmap2 (Linux 3.16) is not in the target ABI"
            ]
        );
    }

    #[test]
    fn lbr_with_a_software_event_is_refused_with_the_reason() {
        let mut config = Config::new(Target::Process(1));
        config.call_graph = CallGraph::Lbr;
        config.event = Event::CpuClock;
        let mut attr = initial_attr(&config, 4096);
        let err =
            apply_target(&mut attr, &config, &KernelAbi::newest(), &mut Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LBR call stacks are not available: LBR records branches of a hardware event; cpu-clock is a software \
             timer (use -e cycles)"
        );
    }
}
