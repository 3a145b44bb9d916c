//! perf-script-compatible text output of a perf.data file, and the per-sample symbolized callchains behind it.
//!
//! Owns: replaying a file's records into [`machine::Machine`] (threads, comms, maps), choosing each event's
//! callchain mode from its sample type ([`resolve::choose_mode`], the v4.3 fix 7322d6c98dd2 this project exists
//! for), resolving frames ([`resolve::Resolver`]) and printing them as `perf script` does
//! ([`format`](mod@format)). Does not own: parsing perf.data (`perf::data`), unwinding (`perf::unwind`), reading
//! ELF files (`perf::symbols`).
//!
//! Per-sample access (what `verify` and `flamegraph` use):
//!
//! ```no_run
//! use bport::perf::data::PerfFile;
//! use bport::perf::script::{samples, Options};
//!
//! let file = PerfFile::open("perf.data")?;
//! for item in samples(&file, &Options::default()) {
//!     let (info, frames) = item?;
//!     let chain: Vec<&str> = frames.iter().map(|f| f.sym_name()).collect();
//!     println!("{} {:?} {:?}", info.comm, info.mode, chain); // innermost first
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The output format follows tools/perf/builtin-script.c (`process_event`, `perf_sample__fprintf_*`) and
//! tools/perf/util/evsel_fprintf.c (`sample__fprintf_callchain`) of perf 6.1; every deviation is named in the
//! tests.

pub mod format;
pub mod machine;
pub mod mem;
mod output;
pub mod resolve;
pub mod session;

pub use session::{samples, write_script, Outcome, Samples, ScriptError};

use std::rc::Rc;

use crate::perf::symbols::SymbolizerOptions;

/// The environment switch that disables choosing DWARF mode from the sample type, reproducing perf script
/// before v4.3 (kernel callchain only). For `bport verify`'s tests, which must show their check can fail.
pub const TEST_NO_DWARF_MODE_ENV: &str = "BPORT_TEST_SCRIPT_NO_DWARF_MODE";

/// How a sample's callchain is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallchainMode {
    /// The kernel's callchain as recorded (frame pointers, walked by the kernel), split at its context markers.
    Fp,
    /// Kernel part from the callchain, user part unwound from `regs_user` + `stack_user` with DWARF CFI.
    Dwarf,
    /// Kernel part from the callchain, user part from the LBR call stack.
    Lbr,
}

/// Options of a script run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where symbols come from.
    pub symbolizer: SymbolizerOptions,
    /// Force a callchain mode instead of choosing it per event from the sample type.
    pub mode: Option<CallchainMode>,
    /// Pre-4.3 behaviour: never choose DWARF (or LBR) from the sample type. Test-only; see
    /// [`TEST_NO_DWARF_MODE_ENV`].
    pub legacy_mode_selection: bool,
    /// Maximum frames per sample (perf's `--max-stack`, default 127).
    pub max_stack: usize,
    /// Output fields (`-F`); `None` for perf's default choice for the file.
    pub fields: Option<format::FieldSpec>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            symbolizer: SymbolizerOptions::default(),
            mode: None,
            legacy_mode_selection: std::env::var_os(TEST_NO_DWARF_MODE_ENV)
                .is_some_and(|v| v == "1"),
            max_stack: 127,
            fields: None,
        }
    }
}

/// One symbolized frame, as `perf script` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The address as printed: relative to its map (`map_ip`) for files, as is for the kernel and unmapped ones.
    pub addr: u64,
    /// The symbol, or `None` for `[unknown]`.
    pub sym: Option<Rc<str>>,
    /// Offset of the address into the symbol.
    pub offset: u64,
    /// The DSO name (`None` for `[unknown]`: no map covers the address).
    pub dso: Option<Rc<str>>,
    /// perf prints `(inlined)` instead of the DSO for this frame (an inline-frame name from addr2line).
    pub inlined: bool,
}

impl Frame {
    /// A frame in `dso` whose symbol is not known.
    pub fn unsymbolized(addr: u64, dso: &std::rc::Rc<str>) -> Frame {
        Frame {
            addr,
            sym: None,
            offset: 0,
            dso: Some(dso.clone()),
            inlined: false,
        }
    }

    /// The symbol name, `[unknown]` when there is none.
    pub fn sym_name(&self) -> &str {
        self.sym.as_deref().unwrap_or("[unknown]")
    }

    /// The DSO name, `[unknown]` when there is none.
    pub fn dso_name(&self) -> &str {
        self.dso.as_deref().unwrap_or("[unknown]")
    }
}

/// The sample fields a script line shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleInfo {
    /// Index of the event (attr) in the file.
    pub attr_index: usize,
    /// The event's name as perf prints it (`cycles`, `cpu-clock:ppp`, …).
    pub event: Rc<str>,
    /// The thread's comm at the time.
    pub comm: Rc<str>,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// CPU, when sampled.
    pub cpu: Option<u32>,
    /// Timestamp in ns, when sampled.
    pub time: Option<u64>,
    /// The sample's period, or the event's configured one when the sample type has none (perf prints that).
    pub period: Option<u64>,
    /// The memory-access fields (`perf mem`), those sampled.
    pub mem: mem::MemFields,
    /// The sampled IP.
    pub ip: u64,
    /// The record's cpumode (`misc & 7`).
    pub cpumode: u16,
    /// The callchain mode used for this sample.
    pub mode: CallchainMode,
    /// Whether the event has a callchain at all (perf then prints frames on their own lines).
    pub has_callchain: bool,
    /// A tracepoint sample's trace line (its print fmt rendered from the RAW data, as `perf script` prints it).
    pub trace: Option<String>,
}

#[cfg(test)]
mod tests;
