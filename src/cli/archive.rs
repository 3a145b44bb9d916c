//! `bport archive`: the files a recording's samples hit, bundled in build-id cache layout.

use super::script::open;
use super::ui::Ui;
use super::{CliError, CliResult};
use crate::perf::script::Options;
use crate::perf::tools::archive;
use std::path::PathBuf;

/// Arguments of `bport archive`.
#[derive(Debug, clap::Args)]
pub struct ArchiveArgs {
    /// The perf.data file to read.
    #[arg(short, long, default_value = "perf.data")]
    pub input: PathBuf,

    /// The tar file to write (default: the input's name with `.tar` appended).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: ArchiveArgs, ui: &Ui) -> CliResult {
    let file = open(&args.input)?;
    let output = args.output.unwrap_or_else(|| {
        let mut p = args.input.clone().into_os_string();
        p.push(".tar");
        PathBuf::from(p)
    });
    let out = std::fs::File::create(&output)
        .map_err(|e| CliError::file(&e, format!("cannot create {}: {e}", output.display())))?;
    // Flushed here: a BufWriter dropped inside the library would swallow a full disk and report success.
    let mut out = std::io::BufWriter::new(out);
    let outcome = archive::archive(&file, &Options::default(), &mut out)?;
    std::io::Write::flush(&mut out)?;
    for (name, why) in &outcome.missing {
        ui.warn(format!("{name} not bundled: {why}"));
    }
    ui.status(format!(
        "Wrote {} with {} file(s). On the analysis machine: mkdir -p ~/.debug && tar xf {} -C ~/.debug",
        output.display(),
        outcome.bundled.len(),
        output.display()
    ));
    Ok(())
}
