//! `bport flamegraph`: folded stacks or an SVG flame graph of a perf.data file (inferno).

use super::script::{open, ScriptArgs};
use super::ui::Ui;
use super::{CliError, CliResult};
use crate::perf::tools::flame;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Arguments of `bport flamegraph`.
#[derive(Debug, clap::Args)]
pub struct FlamegraphArgs {
    /// Write here instead of stdout (an SVG, or folded stacks with --folded).
    #[arg(short, long)]
    pub output: Option<PathBuf>,

    /// Write folded stacks (`comm;outer;…;leaf COUNT`) instead of an SVG.
    #[arg(long)]
    pub folded: bool,

    /// Title of the SVG.
    #[arg(long, default_value = "Flame Graph")]
    pub title: String,

    #[command(flatten)]
    pub script: ScriptArgs,
}

pub fn run(args: FlamegraphArgs, ui: &Ui) -> CliResult {
    if args.output.is_none() && !args.folded && std::io::stdout().is_terminal() {
        // Tens of kilobytes of SVG are no use on a terminal (and can leave it in a strange state).
        return Err(CliError::user("not writing an SVG to a terminal")
            .hint("write it to a file with -o flame.svg, or pipe it (bport flamegraph > flame.svg)")
            .hint("--folded prints the folded stacks as text"));
    }
    let options = args.script.options()?;
    let file = open(&super::script::input_or_stdin(args.script.input.clone()))?;
    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).map_err(
            |e| CliError::file(&e, format!("cannot create {}: {e}", p.display())),
        )?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let outcome = if args.folded {
        let (folded, outcome) = flame::folded(&file, &options)?;
        out.write_all(&folded)?;
        outcome
    } else {
        // Drawn into memory (beside the folded stacks it is made from), so a failure to write the output keeps
        // its cause (a full disk is exit 4) instead of coming back as inferno's failure to draw.
        let mut svg = Vec::new();
        let outcome = flame::svg(&file, &options, &args.title, &mut svg)?;
        out.write_all(&svg)?;
        outcome
    };
    out.flush()?;
    for w in &outcome.warnings {
        ui.warn(w);
    }
    Ok(())
}
