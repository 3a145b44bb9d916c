//! `bport script`: perf-script text of a perf.data file, with DWARF/FP/LBR callchains chosen from the sample type.

use super::ui::Ui;
use super::{CliError, CliResult};
use crate::perf::data::PerfFile;
use crate::perf::script::format::FieldSpec;
use crate::perf::script::{self, CallchainMode, Options};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `bport script`.
#[derive(Debug, clap::Args)]
pub struct ScriptArgs {
    /// The perf.data file to read; `-` reads stdin. Default: stdin when it is a pipe, else perf.data (as perf).
    #[arg(short, long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Output fields, as in perf: `comm,tid,time,ip,sym` replaces the default set, `+pid,-period` changes it.
    /// Known: comm, tid, pid, cpu, time, event, ip, sym, symoff, dso, period, addr, data_src, weight, ins_lat.
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

/// The file to read when `-i` was not given: stdin when it is a pipe (`perf record -o - | bport script`),
/// otherwise `perf.data` — perf's rule (tools/perf/util/data.c, `check_pipe`: a FIFO on stdin and no path).
pub fn input_or_stdin(input: Option<PathBuf>) -> PathBuf {
    input.unwrap_or_else(|| {
        PathBuf::from(if super::ui::stdin_is_pipe() {
            STDIN
        } else {
            "perf.data"
        })
    })
}

/// The input name that means stdin, as in perf.
pub const STDIN: &str = "-";

/// Opens a perf.data file (`-`: stdin) with a CLI error that says what to do.
pub fn open(path: &Path) -> CliResult<PerfFile> {
    let opened = if path.as_os_str() == STDIN {
        use std::os::fd::AsFd;
        let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
        PerfFile::from_file(stdin, "stdin")
    } else {
        PerfFile::open(path)
    };
    opened.map_err(|e| {
        CliError::from(e).hint(format!(
            "record one with `bport record -g -o {} -- CMD` or `perf record -g`",
            path.display()
        ))
    })
}

pub fn run(args: ScriptArgs, ui: &Ui) -> CliResult {
    let options = args.options()?;
    let file = open(&input_or_stdin(args.input))?;
    // The script writes 64 KB pieces from its output thread: straight to the file descriptor (a `File` on a
    // duplicate of it), not through stdout's line buffering.
    let mut out = {
        use std::os::fd::AsFd;
        std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?)
    };
    grow_if_pipe(&out);
    let outcome = script::write_script(&file, &options, &mut out).map_err(|e| match e {
        script::session::ScriptError::Io(io) => CliError::from(io),
        other => {
            // The samples before the damage are printed; what the header already told about it goes first.
            for w in file.warnings() {
                ui.warn(w);
            }
            CliError::from(other).hint("the samples before the damage, if any, are printed above")
        }
    })?;
    out.flush()?;
    for w in &outcome.warnings {
        ui.warn(w);
    }
    Ok(())
}

/// Script output is usually piped into a folding tool. With the default 64 KB pipe every piece the output thread
/// writes fills the pipe, and writer and reader take turns (measured: 50 MB through `| cat` took 0.15 s with 64 KB
/// and 0.11 s with 1 MB, against 0.10 s to /dev/null). 1 MB is the default `pipe-max-size`, which an unprivileged
/// user may ask for; when the kernel refuses (quota, or not a pipe), the output is written just the same.
fn grow_if_pipe(out: &std::fs::File) {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    const PIPE_BYTES: usize = 1 << 20;
    if out.metadata().is_ok_and(|m| m.file_type().is_fifo()) {
        if let Err(e) = crate::perf::sys::set_pipe_size(out.as_fd(), PIPE_BYTES) {
            log::debug!("output pipe stays at its size: F_SETPIPE_SZ {PIPE_BYTES}: {e}");
        }
    }
}
