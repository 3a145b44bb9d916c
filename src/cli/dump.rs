//! `bport dump`: every record of a perf.data file, one line each (the text is `perf::tools::dump`'s); this file
//! parses the arguments, opens the input and renders warnings and errors.

use super::{CliError, CliResult, Ui};
use crate::perf::data::{PerfFile, ReadError};
use crate::perf::tools::dump::{self, Options};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `bport dump`.
#[derive(Debug, clap::Args)]
pub struct DumpArgs {
    /// The perf.data file to dump (`-`: a pipe-mode stream on stdin; default: stdin when it is a pipe, else
    /// perf.data).
    #[arg(short, long)]
    pub input: Option<PathBuf>,

    /// Records in time order, as `script` sees them (default: file order).
    #[arg(long)]
    pub sorted: bool,

    /// Only the header, attrs and features.
    #[arg(long)]
    pub header_only: bool,
}

fn read_error(e: ReadError, path: &std::path::Path) -> CliError {
    let truncated = e.is_truncation();
    let err = CliError::from(e);
    if truncated {
        err.hint(format!(
            "{} is cut short or damaged; was `perf record` killed before it finished writing?",
            path.display()
        ))
    } else {
        err
    }
}

pub fn run(args: DumpArgs, ui: &Ui) -> CliResult {
    let input = super::script::input_or_stdin(args.input);
    let file = if input.as_os_str() == "-" {
        use std::os::fd::AsFd;
        let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
        PerfFile::from_file(stdin, "stdin")
    } else {
        PerfFile::open(&input)
    }
    .map_err(|e| read_error(e, &input))?;
    for w in file.warnings() {
        ui.warn(w);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let options = Options {
        sorted: args.sorted,
        header_only: args.header_only,
    };
    let outcome = dump::dump(&file, &options, &mut out)?;
    out.flush()?;
    for w in &outcome.warnings {
        ui.warn(w);
    }
    match outcome.failed {
        Some(e) => {
            Err(read_error(e, &input).hint("the records before the damage are printed above"))
        }
        None => Ok(()),
    }
}
