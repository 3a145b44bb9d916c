//! Flame graphs: folded stacks and an SVG, with inferno.
//!
//! The folded stacks are made by inferno's collapse-perf from bport's own `perf script` text, so they are what
//! `bport script | inferno-collapse-perf` (and, for perf's output, `perf script | inferno-collapse-perf`) gives,
//! by construction; the SVG is inferno's flamegraph of those stacks.

use crate::perf::data::PerfFile;
use crate::perf::script::session::{self, Outcome, ScriptError};
use crate::perf::script::Options;
use inferno::collapse::Collapse;
use std::io::Write;

/// Folded stacks (`comm;outer;…;leaf COUNT` lines) of `file`.
pub fn folded(file: &PerfFile, options: &Options) -> Result<(Vec<u8>, Outcome), ScriptError> {
    let mut text = Vec::new();
    let outcome = session::write_script(file, options, &mut text)?;
    Ok((collapse_perf_script(&text)?, outcome))
}

/// inferno-collapse-perf over `perf script` text, with its default options.
pub fn collapse_perf_script(text: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut folded = Vec::new();
    let mut folder =
        inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default());
    folder.collapse(text, &mut folded)?;
    Ok(folded)
}

/// Writes an SVG flame graph of `file` titled `title`.
pub fn svg(
    file: &PerfFile,
    options: &Options,
    title: &str,
    out: &mut impl Write,
) -> Result<Outcome, ScriptError> {
    let (folded, outcome) = folded(file, options)?;
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_owned();
    inferno::flamegraph::from_reader(&mut opts, &folded[..], out).map_err(|e| {
        ScriptError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("inferno could not draw the flame graph: {e}"),
        ))
    })?;
    Ok(outcome)
}
