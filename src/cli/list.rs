//! `bport list <range>`: write the patch list for a revision range.

use super::{CliResult, Ui};
use crate::backport::patchlist;
use std::io::Write;
use std::path::PathBuf;

/// Write the patch list for a revision range: `<abbrev-sha> <subject>` lines, oldest first.
///
/// The output is byte-identical to `git log --reverse --oneline [--no-merges] [--first-parent] <range>`, so lists
/// from either tool mix.
///
/// Example: bport list v6.1..perf-fixes > perf-fixes.txt
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The revision range (`A..B`, `B ^A`, or one revision for its whole history).
    pub range: String,

    /// Leave merge commits out (as `git log --no-merges`): `bport apply` picks a merge only with `-m N`.
    #[arg(long)]
    pub no_merges: bool,

    /// Follow only the first parent of each merge (as `git log --first-parent`): the merges themselves are
    /// listed, the commits they brought in are not.
    #[arg(long)]
    pub first_parent: bool,

    /// Write the list to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `bport list`.
pub fn run(args: ListArgs, _ui: &Ui) -> CliResult {
    let repo = super::apply::open_repo()?;
    let opts = patchlist::ListOptions {
        no_merges: args.no_merges,
        first_parent: args.first_parent,
    };
    let list = patchlist::list_range(&repo, &args.range, opts)?;
    let text = list.to_text();
    match args.output {
        Some(path) => std::fs::write(&path, text)
            .map_err(|e| super::CliError::file_context(e, format!("writing {}", path.display())))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(())
}
