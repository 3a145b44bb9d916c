//! `bport archive`: the files a recording's samples hit, bundled in build-id cache layout.

use super::script::open;
use super::ui::Ui;
use super::{CliError, CliResult};
use crate::perf::script::Options;
use crate::perf::tools::archive;
use std::path::{Path, PathBuf};

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
    let outcome = write_atomically(&output, |out| {
        archive::archive(&file, &Options::default(), out).map_err(CliError::from)
    })?;
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

/// Runs `write` on a temporary file beside `path` and renames it to `path` once everything is written and
/// synced: a failed or interrupted archive leaves no partial file and an older archive of that name intact.
/// A `path` that exists and is not a regular file (`/dev/stdout`, a FIFO, a device, a symlink) is written in
/// place: a rename would replace the device or link itself.
fn write_atomically<T>(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<T, CliError>,
) -> Result<T, CliError> {
    let create =
        |e: std::io::Error| CliError::file(&e, format!("cannot create {}: {e}", path.display()));
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_file()) {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(create)?);
        let value = write(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?;
        return Ok(value);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(create)?;
    let result = (|| {
        let mut out = std::io::BufWriter::new(file);
        let value = write(&mut out)?;
        // Flushed here: a BufWriter dropped unflushed would swallow a full disk and report success.
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path).map_err(create)?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
