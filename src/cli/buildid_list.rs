//! `bport buildid-list`: the build-ids a perf.data file recorded, as `perf buildid-list` prints them.

use super::script::open;
use super::{CliError, CliResult, Kind};
use crate::perf::archive;
use crate::perf::script::Options;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `bport buildid-list`.
#[derive(Debug, clap::Args)]
pub struct BuildidListArgs {
    /// The perf.data file to read.
    #[arg(short, long, default_value = "perf.data")]
    pub input: PathBuf,

    /// Only the DSOs that samples hit (reads every sample).
    #[arg(short = 'H', long)]
    pub with_hits: bool,
}

pub fn run(args: BuildidListArgs) -> CliResult {
    let file = open(&args.input)?;
    let lines = archive::buildid_list(&file, &Options::default(), args.with_hits)
        .map_err(|e| CliError::new(Kind::User, e))?;
    let mut out = std::io::stdout().lock();
    for l in lines {
        writeln!(out, "{} {}", l.build_id, l.name)?;
    }
    Ok(())
}
