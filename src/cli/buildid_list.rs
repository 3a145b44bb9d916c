//! `bport buildid-list`: the build-ids a perf.data file recorded, as `perf buildid-list` prints them.

use super::script::{input_or_stdin, open};
use super::CliResult;
use crate::perf::script::Options;
use crate::perf::tools::archive;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `bport buildid-list`.
#[derive(Debug, clap::Args)]
pub struct BuildidListArgs {
    /// The perf.data file to read; `-` reads stdin. Default: stdin when it is a pipe, else perf.data (as perf).
    #[arg(short, long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Only the DSOs that samples hit (reads every sample).
    #[arg(short = 'H', long)]
    pub with_hits: bool,
}

pub fn run(args: BuildidListArgs) -> CliResult {
    let file = open(&input_or_stdin(args.input))?;
    let lines = archive::buildid_list(&file, &Options::default(), args.with_hits)?;
    let mut out = std::io::stdout().lock();
    for l in lines {
        // perf: "%-40s %s", so a DSO without a build-id gets 40 blanks.
        writeln!(out, "{:<40} {}", l.build_id, l.name)?;
    }
    Ok(())
}
