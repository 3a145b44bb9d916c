//! `bport script`: perf-script text of a perf.data file, with DWARF/FP/LBR callchains chosen from the sample type.

use super::ui::Ui;
use super::{CliError, CliResult, Kind};
use crate::perf::data::PerfFile;
use crate::perf::script::format::FieldSpec;
use crate::perf::script::{self, CallchainMode, Options};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `bport script`.
#[derive(Debug, clap::Args)]
pub struct ScriptArgs {
    /// The perf.data file to read.
    #[arg(short, long, default_value = "perf.data")]
    pub input: PathBuf,

    /// Output fields, as in perf: `comm,tid,time,ip,sym` replaces the default set, `+pid,-period` changes it.
    /// Known: comm, tid, pid, cpu, time, event, ip, sym, symoff, dso, period.
    #[arg(short = 'F', long = "fields")]
    pub fields: Option<String>,

    /// Print symbol names as stored (no C++/Rust demangling).
    #[arg(long)]
    pub no_demangle: bool,

    /// Kernel symbols from this kallsyms file instead of the build-id cache or /proc/kallsyms.
    #[arg(long, value_name = "PATH")]
    pub kallsyms: Option<PathBuf>,

    /// Look for every DSO under this directory (perf's --symfs).
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,

    /// Force the callchain mode instead of choosing it from the sample type (fp, dwarf, lbr).
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub call_graph: Option<CallchainMode>,

    /// At most this many frames per sample.
    #[arg(long, default_value_t = 127)]
    pub max_stack: usize,
}

fn parse_mode(s: &str) -> Result<CallchainMode, String> {
    match s {
        "fp" => Ok(CallchainMode::Fp),
        "dwarf" => Ok(CallchainMode::Dwarf),
        "lbr" => Ok(CallchainMode::Lbr),
        other => Err(format!(
            "unknown callchain mode `{other}` (fp, dwarf or lbr)"
        )),
    }
}

impl ScriptArgs {
    /// The library options these arguments stand for.
    pub fn options(&self) -> CliResult<Options> {
        let mut options = Options::default();
        options.symbolizer.demangle = !self.no_demangle;
        options.symbolizer.kallsyms = self.kallsyms.clone();
        options.symbolizer.symfs = self.symfs.clone();
        options.mode = self.call_graph;
        options.max_stack = self.max_stack;
        if let Some(f) = &self.fields {
            let spec: FieldSpec = f
                .parse()
                .map_err(|e| CliError::user(format!("bad -F value `{f}`: {e}")))?;
            options.fields = Some(spec);
        }
        Ok(options)
    }
}

/// Opens a perf.data file with a CLI error that says what to do.
pub fn open(path: &Path) -> CliResult<PerfFile> {
    PerfFile::open(path).map_err(|e| {
        CliError::new(Kind::User, e).hint(format!(
            "record one with `bport record -g -o {} -- CMD` or `perf record -g`",
            path.display()
        ))
    })
}

pub fn run(args: ScriptArgs, ui: &Ui) -> CliResult {
    let options = args.options()?;
    let file = open(&args.input)?;
    // The script writes 64 KB pieces from its output thread: straight to the file descriptor (a `File` on a
    // duplicate of it), not through stdout's line buffering.
    let mut out = {
        use std::os::fd::AsFd;
        std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?)
    };
    let outcome =
        script::session::write_script(&file, &options, &mut out).map_err(|e| match e {
            script::session::ScriptError::Io(io) => CliError::from(io),
            other => CliError::new(Kind::User, other),
        })?;
    out.flush()?;
    for w in &outcome.warnings {
        ui.warn(w);
    }
    Ok(())
}
