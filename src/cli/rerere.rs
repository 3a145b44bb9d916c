//! `bport rerere`: git's rerere verbs on any conflicted index, plus sharing and training.

use super::ui::Ui;
use super::{CliError, CliResult};
use crate::rerere::verbs::{self, GcOptions};
use crate::rerere::{self, share, train, PathAction, Rerere, RerereOptions, RerereOutcome};
use std::path::PathBuf;
use std::process::ExitCode;

/// Recorded conflict resolutions, compatible with git's rerere and its .git/rr-cache.
///
/// Without a subcommand, runs the rerere step on the current conflicts like `git rerere`: records
/// preimages, replays recorded resolutions, and records the user's resolutions.
///
/// Example: bport rerere export && git add rerere-cache && git commit -m "share resolutions"
#[derive(Debug, clap::Args)]
pub struct RerereArgs {
    /// Stage files resolved from recorded resolutions (like rerere.autoupdate).
    #[arg(long)]
    pub autoupdate: bool,

    #[command(subcommand)]
    pub command: Option<RerereCommand>,
}

/// The rerere verbs.
#[derive(Debug, clap::Subcommand)]
pub enum RerereCommand {
    /// Print the paths rerere is tracking in the current conflict session.
    ///
    /// Example: bport rerere status
    Status,
    /// Print the conflicted paths that still need a resolution.
    ///
    /// Example: bport rerere remaining
    Remaining,
    /// Show what was changed in each tracked file since its conflict was recorded.
    ///
    /// Example: bport rerere diff
    Diff,
    /// Forget the recorded resolution for a path's current conflict, so it is recorded anew.
    ///
    /// Example: bport rerere forget drivers/foo.c
    Forget {
        /// A path that is conflicted in the index.
        path: String,
    },
    /// Prune old entries of .git/rr-cache (gc.rerereResolved, gc.rerereUnresolved days).
    ///
    /// Example: bport rerere gc
    Gc,
    /// Copy complete resolutions from .git/rr-cache into the shared cache (rerere-cache/).
    ///
    /// Example: bport rerere export --to /srv/team/rerere-cache
    Export {
        /// Destination directory instead of rerere-cache/ (or bport.rerereCache).
        #[arg(long)]
        to: Option<PathBuf>,
    },
    /// Copy complete resolutions from the shared cache into .git/rr-cache.
    ///
    /// Example: bport rerere import --from /srv/team/rerere-cache
    Import {
        /// Source directory instead of rerere-cache/ (or bport.rerereCache).
        #[arg(long)]
        from: Option<PathBuf>,
    },
    /// Learn resolutions from an existing port: replay each commit's original and record the port's result.
    ///
    /// Example: bport rerere train v4.1..vendor-4.1 --from v4.1..v4.9
    Train {
        /// The port commits (a range like base..branch, or one commit).
        range: String,
        /// Find originals by subject in this range when a port commit has no cherry-pick trailer.
        #[arg(long)]
        from: Option<String>,
    },
}

fn open_repo() -> CliResult<git2::Repository> {
    git2::Repository::open_from_env().map_err(|e| {
        CliError::environment(format!("not in a git repository ({})", e.message()))
            .hint("run bport inside the work tree of the repository")
    })
}

/// A cache directory named on the command line: the path the user gave is theirs to follow (resolved once here),
/// everything inside it is treated as shared content.
fn untrusted_at(dir: std::path::PathBuf) -> rerere::RrCache {
    rerere::RrCache::untrusted(std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// Where a replayed resolution came from: the postimage file (relative to the work tree when inside it) and, for
/// the shared cache, the commit that added it.
fn provenance(
    source: rerere::Source,
    from: &std::path::Path,
    added_by: Option<git2::Oid>,
) -> String {
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| git2::Repository::discover(cwd).ok())
        .and_then(|r| r.workdir().map(std::path::Path::to_path_buf))
        .and_then(|w| from.strip_prefix(w).ok().map(std::path::Path::to_path_buf))
        .unwrap_or_else(|| from.to_path_buf());
    match (source, added_by) {
        (rerere::Source::Local, _) => format!("{} (this clone's own cache)", shown.display()),
        (rerere::Source::Shared, Some(c)) => format!(
            "{} (shared cache, added by commit {})",
            shown.display(),
            &c.to_string()[..12]
        ),
        (rerere::Source::Shared, None) => format!(
            "{} (shared cache, not committed as it is: someone's uncommitted or modified file)",
            shown.display()
        ),
    }
}

/// Prints rerere's per-path messages in git's words (stderr).
pub(super) fn report(ui: &Ui, outcome: &RerereOutcome) {
    for w in &outcome.warnings {
        ui.warn(w);
    }
    for p in &outcome.paths {
        match &p.action {
            PathAction::RecordedPreimage => ui.status(format!("Recorded preimage for '{}'", p.path)),
            PathAction::ResolutionDidNotApply => ui.status(format!(
                "Recorded resolution for '{}' did not apply; the file stays conflicted (recorded preimage)",
                p.path
            )),
            PathAction::Resolved {
                staged,
                reused,
                source,
                from,
                added_by,
                outside_hunks,
                ..
            } => {
                if *staged {
                    ui.status(format!("Staged '{}' using previous resolution.", p.path));
                } else {
                    ui.status(format!("Resolved '{}' using previous resolution.", p.path));
                }
                ui.status(format!("  from {}", provenance(*source, from, *added_by)));
                if *outside_hunks {
                    ui.warn(format!(
                        "the shared resolution of '{}' changes lines outside the conflict; it is not staged: \
                         review it (git diff -- '{}') before you stage it",
                        p.path, p.path
                    ));
                }
                if *staged || *outside_hunks || *source == rerere::Source::Shared {
                    ui.status(reused.trim_end());
                }
            }
            PathAction::RecordedPostimage => {
                ui.status(format!("Recorded resolution for '{}'.", p.path))
            }
            PathAction::Unparseable { reason } => {
                ui.warn(format!("could not parse conflict hunks in '{}': {reason}", p.path))
            }
            PathAction::NotHandled => {}
            PathAction::DecisionReplayed {
                decision, staged, ..
            } => {
                let verb = if *staged { "Staged" } else { "Resolved" };
                ui.status(format!(
                    "{verb} '{}' using previous decision ({decision}).",
                    p.path
                ))
            }
            PathAction::RecordedDecision { decision } => {
                ui.status(format!("Recorded decision for '{}' ({decision}).", p.path))
            }
        }
    }
}

pub fn run(args: RerereArgs, ui: &Ui) -> CliResult<ExitCode> {
    let repo = open_repo()?;
    let rr = Rerere::open(&repo)?;
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    match args.command {
        // As `git rerere` with `rerere.enabled=false`: nothing recorded, nothing replayed.
        None if !rr.enabled => {}
        None => {
            let outcome = rerere::rerere(
                &rr,
                &RerereOptions {
                    autoupdate: args.autoupdate || rr.autoupdate,
                },
            )?;
            report(ui, &outcome);
        }
        Some(RerereCommand::Status) => {
            for p in verbs::status(&rr)? {
                writeln!(out, "{p}")?;
            }
        }
        Some(RerereCommand::Remaining) => {
            for p in verbs::remaining(&rr)? {
                writeln!(out, "{p}")?;
            }
        }
        Some(RerereCommand::Diff) => {
            for d in verbs::diff(&rr)? {
                write!(out, "{}", d.diff)?;
            }
        }
        Some(RerereCommand::Forget { path }) => {
            verbs::forget(&rr, &path)?;
            ui.status(format!("Updated preimage for '{path}'"));
            ui.status(format!("Forgot resolution for '{path}'"));
        }
        Some(RerereCommand::Gc) => {
            let outcome = verbs::gc(
                &rr,
                &GcOptions::from_config(&repo),
                std::time::SystemTime::now(),
            )?;
            for w in &outcome.warnings {
                ui.warn(w);
            }
            ui.status(format!(
                "Pruned {} old rr-cache entries.",
                outcome.removed.len()
            ));
        }
        Some(RerereCommand::Export { to }) => {
            let dest = to.map_or_else(|| rr.shared.clone(), untrusted_at);
            let outcome = share::export(&rr.local, &dest)?;
            report_copy(ui, &outcome, "Exported", dest.dir());
        }
        Some(RerereCommand::Import { from }) => {
            let src = from.map_or_else(|| rr.shared.clone(), untrusted_at);
            let outcome = share::copy_resolutions(&src, &rr.local)?;
            report_copy(ui, &outcome, "Imported", rr.local.dir());
        }
        Some(RerereCommand::Train { range, from }) => {
            let outcome = train::train(&rr, &train::TrainOptions { range, from })?;
            for w in &outcome.warnings {
                ui.warn(w);
            }
            for l in &outcome.learned {
                let short = &l.commit.to_string()[..7];
                ui.status(format!("Learned resolution for '{}' from {short}", l.path));
            }
            let new = outcome.learned.iter().filter(|l| l.new).count();
            ui.status(format!(
                "Learned {} resolutions ({new} new) from {} commits ({} with a known original).",
                outcome.learned.len(),
                outcome.commits,
                outcome.with_original
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn report_copy(ui: &Ui, outcome: &share::CopyOutcome, verb: &str, dest: &std::path::Path) {
    for w in &outcome.warnings {
        ui.warn(w);
    }
    let decisions = if outcome.decisions_copied > 0 {
        format!(" and {} modify/delete decisions", outcome.decisions_copied)
    } else {
        String::new()
    };
    ui.status(format!(
        "{verb} {} resolutions{decisions} to {} ({} already there, {} incomplete skipped).",
        outcome.copied.len(),
        dest.display(),
        outcome.already_present,
        outcome.incomplete
    ));
}
