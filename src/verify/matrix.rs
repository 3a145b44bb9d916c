//! The profiler matrix: built-in workloads × callchain modes, each recorded under the target kernel's ABI cap,
//! scripted with bport, and judged by [`super::checks`].
//!
//! Whether a mode is offered at all is decided here from the `perf::abi` table (DWARF needs REGS_USER and
//! STACK_USER, 3.7; the LBR call stack needs 4.1) and from this machine (LBR needs the hardware). Recording and
//! scripting are `perf`'s; this module only drives them and keeps the samples of the workload.

use super::{
    checks, perf_check, readability, Cell, CellStatus, Frame, Mode, PerfCheck, Readability, Sample,
};
use crate::perf::abi::{KernelAbi, KernelVersion};
use crate::perf::data::PerfFile;
use crate::perf::record;
use crate::perf::script;
use crate::verify::workloads::Build;
use std::path::{Path, PathBuf};

/// How to run the matrix.
#[derive(Clone, Debug)]
pub struct MatrixOptions {
    /// The kernel whose ABI caps the recording.
    pub version: KernelVersion,
    /// How long each workload runs, in milliseconds (its argument).
    pub workload_ms: u32,
    /// Where workloads and perf.data files go (kept for the user when they want to look).
    pub workdir: PathBuf,
    /// The Linux perf to cross-check files with, when installed.
    pub perf: Option<PathBuf>,
}

/// What this machine offers beyond the kernel's ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hardware {
    /// Whether the CPU PMU records LBR call stacks.
    pub lbr: bool,
}

impl Hardware {
    /// Reads what sysfs says about the CPU PMU: Intel's driver publishes `caps/branches` (the LBR depth), and
    /// without a `cpu` PMU (a VM without a virtual PMU, as on these machines) there is no LBR either.
    pub fn detect() -> Hardware {
        let branches = std::fs::read_to_string("/sys/bus/event_source/devices/cpu/caps/branches")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(0);
        Hardware { lbr: branches > 0 }
    }
}

/// Whether `mode` can run for a target of `version` on `hardware`; `Err` holds the reason shown in the cell.
pub fn mode_support(version: &KernelVersion, mode: Mode, hardware: Hardware) -> Result<(), String> {
    let abi = KernelAbi::for_version(version);
    match mode {
        Mode::Fp => Ok(()),
        Mode::Dwarf if !abi.supports_dwarf() => Err(format!(
            "kernel {version} lacks PERF_SAMPLE_REGS_USER/STACK_USER (since 3.7)"
        )),
        Mode::Dwarf => Ok(()),
        Mode::Lbr if !abi.supports_lbr_callstack() => Err(format!(
            "kernel {version} lacks the LBR call stack (PERF_SAMPLE_BRANCH_CALL_STACK, since 4.1)"
        )),
        Mode::Lbr if !hardware.lbr => Err("no LBR hardware".to_owned()),
        Mode::Lbr => Ok(()),
    }
}

/// The cells to run, in report order, with the unsupported ones already decided.
pub fn plan(version: &KernelVersion, hardware: Hardware) -> Vec<(Build, Mode, Option<String>)> {
    Build::ALL
        .iter()
        .flat_map(|&build| Mode::ALL.iter().map(move |&mode| (build, mode)))
        .map(|(build, mode)| (build, mode, mode_support(version, mode, hardware).err()))
        .collect()
}

/// Runs every cell: unsupported ones get their reason, the others are recorded, scripted and judged, and each
/// recorded file is checked for readability (era, and Linux perf when installed).
///
/// A denied `perf_event_open` ends the run with the error: no cell could be recorded, and the fix is the
/// machine's (perf_event_paranoid or privileges), not a failed check.
pub fn run(options: &MatrixOptions, hardware: Hardware) -> Result<Vec<Cell>, record::Error> {
    let abi = KernelAbi::for_version(&options.version);
    let mut cells = Vec::new();
    for (build, mode, unsupported) in plan(&options.version, hardware) {
        let (status, readability) = match unsupported {
            Some(reason) => (CellStatus::Unsupported { reason }, None),
            None => run_cell(options, &abi, build, mode)?,
        };
        cells.push(Cell {
            workload: build.file_name().to_owned(),
            mode,
            status,
            readability,
        });
    }
    Ok(cells)
}

fn run_cell(
    options: &MatrixOptions,
    abi: &KernelAbi,
    build: Build,
    mode: Mode,
) -> Result<(CellStatus, Option<Readability>), record::Error> {
    let data = match record_cell(options, build, mode) {
        Ok(path) => path,
        // The kernel (or this CPU) refused the mode although the table offers it: that is the machine's answer.
        Err(record::Error::LbrUnavailable { reason })
        | Err(record::Error::ModeUnsupported { reason, .. }) => {
            return Ok((CellStatus::Unsupported { reason }, None))
        }
        Err(e @ record::Error::PermissionDenied { .. }) => return Err(e),
        Err(e) => {
            return Ok((
                CellStatus::Error {
                    message: format!("bport record failed: {e}"),
                },
                None,
            ))
        }
    };
    let samples = match script_samples(&data) {
        Ok(s) => s,
        Err(message) => return Ok((CellStatus::Error { message }, None)),
    };
    let readability = Readability {
        era_problems: readability::era_problems_at(&data, abi),
        perf: match &options.perf {
            Some(perf) => perf_check::check(perf, &data, &samples),
            None => PerfCheck::NotInstalled,
        },
    };
    Ok((
        checks::verdict(build, mode, checks::chain_stats(&samples)),
        Some(readability),
    ))
}

/// The workload's samples in `data` as bport's script resolves them: user frames only, innermost first.
pub fn script_samples(data: &Path) -> Result<Vec<Sample>, String> {
    let file =
        PerfFile::open(data).map_err(|e| format!("bport cannot read {}: {e}", data.display()))?;
    let options = script::Options::default();
    let mut samples = script::session::samples(&file, &options);
    let mut out = Vec::new();
    while let Some(next) = samples.next_sample() {
        let (info, frames) =
            next.map_err(|e| format!("bport script failed on {}: {e}", data.display()))?;
        let frames = frames
            .iter()
            .filter(|f| !is_kernel_dso(f.dso_name()))
            .map(|f| Frame {
                address: f.addr,
                symbol: f.sym.as_deref().map(str::to_owned),
                dso: f.dso_name().to_owned(),
            })
            .collect();
        out.push(Sample {
            time: info.time.unwrap_or(0),
            pid: info.pid as u32,
            tid: info.tid as u32,
            in_user: info.cpumode == crate::perf::abi::PERF_RECORD_MISC_USER,
            frames,
        });
    }
    Ok(out)
}

/// Kernel frames (the kernel image and modules) are not part of the workload's chain.
fn is_kernel_dso(dso: &str) -> bool {
    dso.starts_with("[kernel") || dso.ends_with(".ko") || dso.starts_with("[guest.kernel")
}

/// Records `build` in `mode` under the target's ABI cap into [`data_path`].
pub fn record_cell(
    options: &MatrixOptions,
    build: Build,
    mode: Mode,
) -> Result<PathBuf, record::Error> {
    let exe = build
        .write_to(&options.workdir)
        .map_err(|source| record::Error::Exec {
            program: options.workdir.join(build.file_name()).into_os_string(),
            source,
        })?;
    let output = data_path(&options.workdir, build, mode);
    let mut config = record::Config::new(record::Target::Command(vec![
        exe.into_os_string(),
        options.workload_ms.to_string().into(),
    ]));
    // A software timer works everywhere, including VMs without a PMU; LBR needs the hardware cycle counter.
    config.event = match mode {
        Mode::Lbr => record::Event::Cycles,
        _ => record::Event::CpuClock,
    };
    config.sampling = record::Sampling::Frequency(999);
    config.call_graph = match mode {
        Mode::Fp => record::CallGraph::FramePointer,
        Mode::Dwarf => record::CallGraph::Dwarf {
            stack_size: record::CallGraph::DEFAULT_DWARF_STACK,
        },
        Mode::Lbr => record::CallGraph::Lbr,
    };
    config.output = output.clone();
    config.kernel = Some(options.version.clone());
    config.cmdline = vec!["bport".into(), "verify".into()];
    let outcome = record::record(&config)?;
    if outcome.lost > 0 {
        log::warn!("{}: {} events lost", output.display(), outcome.lost);
    }
    Ok(output)
}

/// Where a cell's perf.data goes.
pub fn data_path(workdir: &Path, build: Build, mode: Mode) -> PathBuf {
    workdir.join(format!("{}-{}.data", build.file_name(), mode.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(s: &str) -> KernelVersion {
        s.parse().unwrap()
    }

    #[test]
    fn modes_follow_the_abi_table_and_the_hardware() {
        let no_lbr = Hardware { lbr: false };
        let lbr = Hardware { lbr: true };
        assert_eq!(mode_support(&kv("3.6"), Mode::Fp, lbr), Ok(()));
        assert_eq!(
            mode_support(&kv("3.6"), Mode::Dwarf, lbr),
            Err("kernel 3.6 lacks PERF_SAMPLE_REGS_USER/STACK_USER (since 3.7)".into())
        );
        assert_eq!(mode_support(&kv("3.7"), Mode::Dwarf, no_lbr), Ok(()));
        assert_eq!(
            mode_support(&kv("3.10"), Mode::Lbr, lbr),
            Err(
                "kernel 3.10 lacks the LBR call stack (PERF_SAMPLE_BRANCH_CALL_STACK, since 4.1)"
                    .into()
            )
        );
        assert_eq!(
            mode_support(&kv("4.1"), Mode::Lbr, no_lbr),
            Err("no LBR hardware".into())
        );
        assert_eq!(mode_support(&kv("4.1.15"), Mode::Lbr, lbr), Ok(()));
    }

    #[test]
    fn plan_covers_every_workload_and_mode_in_report_order() {
        let cells: Vec<(Build, Mode, bool)> = plan(&kv("6.1"), Hardware { lbr: false })
            .into_iter()
            .map(|(b, m, u)| (b, m, u.is_some()))
            .collect();
        use Build::*;
        assert_eq!(
            cells,
            vec![
                (FramePointer, Mode::Fp, false),
                (FramePointer, Mode::Dwarf, false),
                (FramePointer, Mode::Lbr, true),
                (NoFramePointer, Mode::Fp, false),
                (NoFramePointer, Mode::Dwarf, false),
                (NoFramePointer, Mode::Lbr, true),
            ]
        );
    }
}
