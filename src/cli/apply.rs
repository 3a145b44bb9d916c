//! `bport apply`: cherry-pick a patch list onto the current branch, with `--continue`, `--skip` and `--abort`.

use super::plan_json::Format;
pub use super::rules::applied_words;
use super::rules::parse_rules;
use super::{CliError, CliResult, Ui};
use crate::backport::{
    self, ApplyOptions, Checkpoint, Favor, Outcome, PatchList, PickOptions, Progress, RenameChoice,
    Resume, Step, StepResult,
};
use crate::git;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Cherry-pick every commit of a patch list onto the current branch, in order.
///
/// Each patch is picked in memory, or skipped because the branch already carries it (by upstream trailer,
/// subject or patch-id; the rule is named), or skipped as empty. At a conflict bport stops with exit code 1,
/// leaving the files with git's conflict markers and the index with the conflict stages; resolve, `git add`, then
/// `bport apply --continue` (or `--skip` / `--abort`).
///
/// Example: bport list v6.1..perf-fixes > fixes.txt && bport apply -x fixes.txt
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("resume").args(["cont", "skip", "abort", "quit"])))]
pub struct ApplyArgs {
    /// The patch list (`<sha> <subject>` lines, as `bport list` writes them), or mail (an mbox, `git
    /// format-patch` output: each mail is committed as `git am -3` commits it); `-` or a pipe on stdin reads stdin.
    #[arg(conflicts_with = "resume")]
    pub patchlist: Option<PathBuf>,

    /// Append "(cherry picked from commit <sha>)" to each message.
    #[arg(short = 'x')]
    pub record_origin: bool,

    /// Append a Signed-off-by line of the committer (kept across --continue).
    #[arg(short = 's', long)]
    pub signoff: bool,

    /// For merge commits in the list, the parent to diff against (1-based).
    #[arg(short = 'm', long, value_name = "PARENT")]
    pub mainline: Option<u32>,

    /// A merge option, as git's `-X` (repeatable): `ours` / `theirs` favour one side in conflicting hunks;
    /// `find-renames[=N]` (or `rename-threshold=N`) and `no-renames` set rename detection.
    #[arg(
        short = 'X',
        long = "strategy-option",
        value_name = "OPTION",
        value_parser = parse_strategy_option
    )]
    pub strategy_option: Vec<StrategyOption>,

    /// Print the plan and predicted conflicts, then the upstream follow-ups (Fixes:, reverts) of the listed
    /// commits that neither the list nor the branch has; touch nothing.
    #[arg(long, conflicts_with = "resume")]
    pub dry_run: bool,

    /// Add the upstream follow-ups (Fixes:, reverts, transitively) of the listed commits to the plan, each at its
    /// upstream place.
    #[arg(long, conflicts_with = "resume")]
    pub with_fixes: bool,

    /// Where --dry-run and --with-fixes look for follow-ups (repeatable). Default: the branches that contain the
    /// list's last commit.
    #[arg(long, value_name = "REF", conflicts_with = "resume")]
    pub upstream: Vec<String>,

    /// Format of the --dry-run plan: text for people, or one JSON document (versioned schema: docs/backport.md).
    #[arg(long, value_enum, default_value_t = Format::Text, requires = "dry_run")]
    pub format: Format,

    /// Not an option of bport: it picks onto the checked-out branch. Accepted only to say so with the command
    /// that does it (`git switch BRANCH` first).
    #[arg(long, value_name = "BRANCH", hide = true)]
    pub onto: Option<String>,

    /// Rules that count a patch as already applied (comma-separated: trailer,subject,patch-id; or none).
    #[arg(long, value_name = "KINDS", default_value = "trailer,subject,patch-id")]
    pub r#match: String,

    /// Stage and continue when recorded resolutions resolved every conflict of a patch.
    #[arg(long)]
    pub autoupdate: bool,

    /// Never prompt. On a terminal a stop otherwise asks what to do (show diff, open $EDITOR, stage and
    /// continue, skip, abort, leave it); without a terminal it never asks.
    #[arg(short, long)]
    pub yes: bool,

    /// Commit the staged resolution of the stopped patch and go on.
    #[arg(long = "continue", id = "cont")]
    pub cont: bool,

    /// Drop the stopped patch and go on.
    #[arg(long)]
    pub skip: bool,

    /// Restore branch, HEAD, index and worktree exactly as before the run (refused when HEAD is no longer where
    /// bport left it: that would drop the commits made since).
    #[arg(long)]
    pub abort: bool,

    /// Forget the run in progress and keep branch, index and worktree as they are (as `git cherry-pick --quit`).
    #[arg(long)]
    pub quit: bool,
}

/// What a text that is not a patch list but mail is (`git format-patch` output, an mbox), if it is one.
fn mail_format(text: &str) -> Option<&'static str> {
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let from_line = first.strip_prefix("From ")?;
    let has_headers = text
        .lines()
        .take(40)
        .any(|l| l.starts_with("Subject: ") || l.starts_with("From: "));
    if !has_headers {
        return None;
    }
    // `git format-patch` starts each mail with the commit id and a fixed date.
    let sha = from_line.split(' ').next().unwrap_or("");
    if sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        Some("`git format-patch` output (mails)")
    } else {
        Some("an mbox (mails)")
    }
}

/// `-X` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrategyOption {
    /// The branch's side wins conflicting hunks.
    Ours,
    /// The picked commit's side wins conflicting hunks.
    Theirs,
    /// `no-renames`.
    NoRenames,
    /// `find-renames[=N]` / `rename-threshold=N`: the threshold out of 60000 (0: git's default).
    FindRenames(u32),
}

/// Parses one `-X` value as git's merge-ort does (`parse_merge_opt`), for the options bport implements.
fn parse_strategy_option(value: &str) -> Result<StrategyOption, String> {
    match value {
        "ours" => return Ok(StrategyOption::Ours),
        "theirs" => return Ok(StrategyOption::Theirs),
        "no-renames" => return Ok(StrategyOption::NoRenames),
        "find-renames" => return Ok(StrategyOption::FindRenames(0)),
        _ => {}
    }
    let score = value
        .strip_prefix("find-renames=")
        .or_else(|| value.strip_prefix("rename-threshold="));
    match score.map(git::parse_rename_score) {
        Some(Some(score)) => Ok(StrategyOption::FindRenames(score)),
        Some(None) => Err(format!("`{value}`: the threshold is a number, as `find-renames=60` or `=60%`")),
        None => Err(format!(
            "`{value}` is not a merge option bport knows: ours, theirs, find-renames[=N], rename-threshold=N, \
             no-renames"
        )),
    }
}

/// Opens the repository around the current directory, with the CLI's hint when there is none.
pub fn open_repo() -> CliResult<git2::Repository> {
    let cwd = std::env::current_dir()?;
    Ok(git::discover(&cwd)?)
}

/// Runs `bport apply`.
pub fn run(args: ApplyArgs, ui: &Ui) -> CliResult<ExitCode> {
    if let Some(branch) = &args.onto {
        let list = args
            .patchlist
            .as_ref()
            .map_or("<patchlist>".into(), |p| p.display().to_string());
        return Err(CliError::user(
            "bport apply picks onto the branch that is checked out; it has no --onto",
        )
        .hint(format!("git switch {branch} && bport apply {list}")));
    }
    let repo = open_repo()?;
    let json = args.format == Format::Json;
    let mut progress = CliProgress::new(ui, args.dry_run);
    progress.json = json;
    let mut follow_ups = None;
    let outcome = match resume_choice(&args) {
        Some(how) => backport::resume(&repo, how, &mut progress)?,
        None => {
            let list = read_list(&repo, &args)?;
            let rules = parse_rules(&args.r#match)?;
            let (list, follow) = if args.with_fixes || args.dry_run {
                super::fixes::for_apply(
                    &repo,
                    list,
                    &args.upstream,
                    rules,
                    args.mainline,
                    args.with_fixes,
                    ui,
                )?
            } else {
                (list, None)
            };
            follow_ups = follow;
            let opts = ApplyOptions {
                pick: pick_options(&args),
                rules,
                dry_run: args.dry_run,
            };
            backport::apply(&repo, &list, &opts, &mut progress)?
        }
    };
    if let (Outcome::DryRun(st), Some(follow)) = (&outcome, &follow_ups) {
        progress.bar.finish_and_clear();
        print_plan_with_follow_ups(st, follow, json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut outcome = outcome;
    loop {
        // Every path that returns an outcome saved the state naming its commits; what is still pending is durable.
        progress.flush_durable();
        progress.bar.finish_and_clear();
        match render(&repo, outcome, ui, args.yes, json)? {
            Next::Exit(code) => return Ok(code),
            // The prompt's skip/abort/continue do exactly what the flag would, then report like it.
            Next::Resume(how) => {
                progress = CliProgress::new(ui, false);
                outcome = backport::resume(&repo, how, &mut progress)?;
            }
        }
    }
}

/// The resume its flag asks for (`--continue`, `--skip`, `--abort`, `--quit`), `None` for a new run.
fn resume_choice(args: &ApplyArgs) -> Option<Resume> {
    if args.cont {
        Some(Resume::Continue)
    } else if args.skip {
        Some(Resume::Skip)
    } else if args.abort {
        Some(Resume::Abort)
    } else if args.quit {
        Some(Resume::Quit)
    } else {
        None
    }
}

/// Reads the patch list named (or piped in); mail becomes the list of the commits it is imported as.
fn read_list(repo: &git2::Repository, args: &ApplyArgs) -> CliResult<PatchList> {
    let path = match args.patchlist.clone() {
        Some(path) => path,
        None if super::ui::stdin_is_pipe() => PathBuf::from("-"),
        None => {
            return Err(CliError::user("no patch list given").hint(
                "bport apply FILE, or pipe one in: bport list v6.1..fixes | bport apply \
                 (bport apply --continue | --skip | --abort resumes a stopped run)",
            ))
        }
    };
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&path)
            .map_err(|e| CliError::file_context(e, format!("reading {}", path.display())))?
    };
    // Mail (an mbox, `git format-patch` files): each becomes a commit as `git am -3` makes it, and the series is
    // applied as a list of those commits.
    if mail_format(&text).is_none() {
        return Ok(PatchList::parse(&text)?);
    }
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .ok_or(backport::Error::UnbornHead)?;
    let mails = backport::mbox::parse(text.as_bytes())?;
    let commits = backport::mbox::import(repo, head, &mails)?;
    let mut entries = Vec::with_capacity(commits.len());
    for (m, c) in mails.iter().zip(&commits) {
        entries.push(backport::patchlist::Entry {
            line: m.index,
            sha: c.to_string(),
            subject: git::commit_subject(&m.message),
        });
    }
    Ok(PatchList { entries })
}

/// The pick options the flags ask for.
fn pick_options(args: &ApplyArgs) -> PickOptions {
    PickOptions {
        record_origin: args.record_origin,
        signoff: args.signoff,
        mainline: args.mainline,
        // The last of several `-X` of a kind wins, as in git.
        favor: args
            .strategy_option
            .iter()
            .rev()
            .find_map(|o| match o {
                StrategyOption::Ours => Some(Favor::Ours),
                StrategyOption::Theirs => Some(Favor::Theirs),
                _ => None,
            })
            .unwrap_or(Favor::None),
        renames: args
            .strategy_option
            .iter()
            .rev()
            .find_map(|o| match o {
                StrategyOption::NoRenames => Some(RenameChoice::Off),
                StrategyOption::FindRenames(n) => Some(RenameChoice::Score(*n)),
                _ => None,
            })
            .unwrap_or_default(),
        autoupdate: args.autoupdate,
    }
}

/// A dry run's plan closed by its summary, then the follow-up fixes found for it.
fn print_plan_with_follow_ups(
    st: &backport::State,
    follow: &super::fixes::DryRunFollowUps,
    json: bool,
) -> CliResult<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut doc = super::plan_json::dry_run(st);
        doc["follow_ups"] = follow.json.clone();
        writeln!(out, "{doc:#}")?;
    } else {
        writeln!(out, "{}", plan_summary(st))?;
        out.write_all(follow.text.as_bytes())?;
    }
    Ok(())
}

/// What `render` leaves to do: exit, or resume the run as the user chose at the prompt.
enum Next {
    Exit(ExitCode),
    Resume(Resume),
}

/// `<sha7> <subject>` of a step.
pub fn step_title(step: &Step) -> String {
    format!("{} {}", &step.commit.to_string()[..7], step.subject)
}

/// How a step's result reads in status lines.
pub fn result_words(result: &StepResult) -> String {
    match result {
        StepResult::Picked { new } => format!("picked as {}", &new.to_string()[..7]),
        StepResult::Applied { because } => {
            format!(
                "skipped (already applied: {}, {})",
                applied_words(because),
                &because.by.to_string()[..7]
            )
        }
        StepResult::Empty => "skipped (empty)".into(),
        StepResult::SkippedByUser => "skipped (--skip)".into(),
        StepResult::Conflict { paths } => format!("conflict in {}", paths.join(", ")),
    }
}

/// How a step of a dry run reads: what *would* happen, never a commit id (the picks were made in memory and
/// dropped).
fn plan_words(result: &StepResult) -> String {
    match result {
        StepResult::Picked { .. } => "pick".to_owned(),
        StepResult::Conflict { paths } => {
            format!("pick, conflict predicted in {}", paths.join(", "))
        }
        StepResult::Applied { because } => format!(
            "skip (already applied: {}, {})",
            applied_words(because),
            &because.by.to_string()[..7]
        ),
        StepResult::Empty => "skip (empty)".to_owned(),
        StepResult::SkippedByUser => "skip (--skip)".to_owned(),
    }
}

struct CliProgress<'u> {
    ui: &'u Ui,
    bar: indicatif::ProgressBar,
    /// A dry run: each predicted step goes to stdout as soon as it is known (so a failure later keeps the plan
    /// made so far), and nothing is said about commits.
    dry_run: bool,
    /// `--format json`: the plan is one document at the end, so no step lines on stdout.
    json: bool,
    /// Status lines of a real run that are not durable yet: picks live in memory until the pack and the state
    /// naming them are written (the `StateSaved` checkpoint). The lines wait for the checkpoint, so a run killed
    /// before it never prints "picked as" for commits that are lost.
    /// `(is_warning, text)`, in the order they happened.
    pending: Vec<(bool, String)>,
    picks: usize,
    crash_after_picks: Option<usize>,
    crash_at: Option<String>,
}

impl<'u> CliProgress<'u> {
    fn new(ui: &'u Ui, dry_run: bool) -> Self {
        CliProgress {
            ui,
            bar: indicatif::ProgressBar::hidden(),
            dry_run,
            json: false,
            pending: Vec::new(),
            picks: 0,
            // Test-only fault injection (tests/it/apply.rs): die like a SIGKILL at a chosen point.
            crash_after_picks: std::env::var("BPORT_TEST_CRASH_AFTER_PICKS")
                .ok()
                .and_then(|v| v.parse().ok()),
            crash_at: std::env::var("BPORT_TEST_CRASH_AT").ok(),
        }
    }
}

impl Progress for CliProgress<'_> {
    fn step(&mut self, index: usize, total: usize, step: &Step, result: &StepResult) {
        if index == 0 || self.bar.length() != Some(total as u64) {
            self.bar = self.ui.progress(total as u64);
        }
        self.bar.set_position(index as u64 + 1);
        self.bar.set_message(step.subject.clone());
        if let backport::Action::Pick {
            ambiguous_subject: true,
        } = step.action
        {
            let warning = format!(
                "{}: the subject occurs more than once in the list or on the branch and neither trailer nor \
                 patch-id decided; {}",
                step_title(step),
                if self.dry_run { "it would be picked" } else { "picked it anyway" }
            );
            if self.dry_run {
                self.bar.suspend(|| self.ui.warn(warning));
            } else {
                self.pending.push((true, warning));
            }
        }
        if self.dry_run {
            // With --format json the plan is one document at the end (render).
            if !self.json {
                let line = format!(
                    "{}/{total} {}: {}",
                    index + 1,
                    step_title(step),
                    plan_words(result)
                );
                self.bar.suspend(|| {
                    let mut out = std::io::stdout().lock();
                    // A closed stdout (`| head`) must not abort the planning; the summary reports nothing more.
                    let _ = writeln!(out, "{line}");
                });
            }
        } else if !matches!(result, StepResult::Conflict { .. }) || self.ui.verbose > 0 {
            self.pending.push((
                false,
                format!(
                    "{}/{total} {}: {}",
                    index + 1,
                    step_title(step),
                    result_words(result)
                ),
            ));
        }
        if matches!(result, StepResult::Picked { .. }) {
            self.picks += 1;
            if self.crash_after_picks == Some(self.picks) {
                std::process::abort();
            }
        }
    }

    fn dropped_empty(&mut self, index: usize, total: usize, step: &Step) {
        // Durable already: the state naming the drop is saved before the run goes on.
        self.pending.push((
            false,
            format!(
                "{}/{total} {}: dropped: the previous cherry-pick is now empty, possibly due to conflict \
                 resolution (git would stop for `--skip` or `git commit --allow-empty`)",
                index + 1,
                step_title(step)
            ),
        ));
    }

    fn rerere(&mut self, outcome: &crate::rerere::RerereOutcome) {
        self.bar.suspend(|| super::rerere::report(self.ui, outcome));
    }

    fn checkpoint(&mut self, at: Checkpoint) {
        if at == Checkpoint::StateSaved {
            self.flush_durable();
        }
        let name = match at {
            Checkpoint::PackWritten => "pack-written",
            Checkpoint::StateSaved => "state-saved",
            Checkpoint::WorktreeUpdated => "worktree-updated",
        };
        if self.crash_at.as_deref() == Some(name) {
            std::process::abort();
        }
    }
}

impl CliProgress<'_> {
    /// Prints the status lines whose steps are now durable.
    fn flush_durable(&mut self) {
        let lines = std::mem::take(&mut self.pending);
        if !lines.is_empty() {
            self.bar.suspend(|| {
                for (warning, line) in lines {
                    if warning {
                        self.ui.warn(line);
                    } else {
                        self.ui.status(line);
                    }
                }
            });
        }
    }
}

/// The one summary line of a dry run: picks, predicted conflicts, skips by rule.
fn plan_summary(st: &backport::State) -> String {
    let (mut picks, mut conflicts, mut by_rule) = (0, 0, std::collections::BTreeMap::new());
    for r in st.results.iter().flatten() {
        match r {
            StepResult::Picked { .. } => picks += 1,
            StepResult::Conflict { .. } => {
                picks += 1;
                conflicts += 1;
            }
            StepResult::Applied { because } => {
                *by_rule.entry(because.rule.to_string()).or_insert(0) += 1
            }
            StepResult::Empty => *by_rule.entry("empty".to_owned()).or_insert(0) += 1,
            StepResult::SkippedByUser => {}
        }
    }
    let skips: usize = by_rule.values().sum();
    let rules: Vec<String> = by_rule.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let skip_part = if rules.is_empty() {
        format!("{skips} to skip")
    } else {
        format!("{skips} to skip ({})", rules.join(", "))
    };
    format!(
        "Plan: {picks} to pick ({conflicts} with predicted conflicts), {skip_part}; dry run, nothing was changed."
    )
}

fn summary(st: &backport::State) -> String {
    let (mut picked, mut by_rule, mut empty, mut user) =
        (0, std::collections::BTreeMap::new(), 0, 0);
    for r in st.results.iter().flatten() {
        match r {
            StepResult::Picked { .. } => picked += 1,
            StepResult::Applied { because } => {
                *by_rule.entry(because.rule.to_string()).or_insert(0) += 1
            }
            StepResult::Empty => empty += 1,
            StepResult::SkippedByUser => user += 1,
            StepResult::Conflict { .. } => {}
        }
    }
    let mut parts: Vec<String> = by_rule.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    if empty > 0 {
        parts.push(format!("empty: {empty}"));
    }
    if user > 0 {
        parts.push(format!("--skip: {user}"));
    }
    let skipped: usize = by_rule.values().sum::<usize>() + empty + user;
    if parts.is_empty() {
        format!("picked {picked}, skipped {skipped}")
    } else {
        format!("picked {picked}, skipped {skipped} ({})", parts.join(", "))
    }
}

fn render(
    repo: &git2::Repository,
    outcome: Outcome,
    ui: &Ui,
    yes: bool,
    json: bool,
) -> CliResult<Next> {
    match outcome {
        Outcome::Done(st) => {
            ui.status(format!("Done: {}.", summary(&st)));
            Ok(Next::Exit(ExitCode::SUCCESS))
        }
        Outcome::Aborted(st) => {
            ui.status(format!(
                "Aborted; {} is back at {}.",
                st.branch.as_deref().unwrap_or("HEAD"),
                &st.orig_head.to_string()[..7]
            ));
            Ok(Next::Exit(ExitCode::SUCCESS))
        }
        Outcome::Quit(st) => {
            ui.status(format!(
                "Forgot the bport apply in progress; {} stays at {}, index and worktree untouched.",
                st.branch.as_deref().unwrap_or("HEAD"),
                repo.head()
                    .ok()
                    .and_then(|h| h.target())
                    .map_or_else(|| "?".into(), |o| o.to_string()[..7].to_owned())
            ));
            Ok(Next::Exit(ExitCode::SUCCESS))
        }
        Outcome::DryRun(st) if json => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{:#}", super::plan_json::dry_run(&st))?;
            Ok(Next::Exit(ExitCode::SUCCESS))
        }
        Outcome::DryRun(st) => {
            // The steps were printed as they were predicted (CliProgress); the summary closes the plan.
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", plan_summary(&st))?;
            Ok(Next::Exit(ExitCode::SUCCESS))
        }
        Outcome::NothingToDo => {
            ui.status("Nothing to do: the patch list has no commits.");
            Ok(Next::Exit(ExitCode::SUCCESS))
        }
        Outcome::Stopped(st, info) => {
            let msg = stop_message(&st, &info);
            // A stop is news even with --quiet: the user must act.
            eprintln!("{msg}");
            if !yes && ui.interactive() {
                if let Some(how) = prompt(repo, &info, ui)? {
                    return Ok(Next::Resume(how));
                }
            }
            Ok(Next::Exit(super::error::stopped()))
        }
    }
}

/// What a stop says: where it stopped, the conflicts left, what recorded resolutions resolved, likely missing
/// dependencies, and how to go on.
fn stop_message(st: &backport::State, info: &backport::StopInfo) -> String {
    let total = st.plan.steps.len();
    let step = &st.plan.steps[info.step];
    // `Resolved 'PATH' using previous resolution.` lines (info.resolved) were printed by the rerere step,
    // in git's order, through Progress::rerere.
    // After recorded resolutions replayed, say plainly what they resolved and what is left.
    let left: Vec<_> = info
        .conflicts
        .iter()
        .filter(|c| !info.resolved.contains(&c.path))
        .collect();
    let mut msg = if left.is_empty() {
        format!(
            "Stopped at {}/{total} {}: recorded resolutions resolved every conflict; none is left.\n",
            info.step + 1,
            step_title(step)
        )
    } else {
        format!(
            "Stopped at {}/{total} {}: conflicts in\n",
            info.step + 1,
            step_title(step)
        )
    };
    for c in &left {
        msg.push_str(&format!("  {}: {}\n", c.kind, c.path));
    }
    if !info.resolved.is_empty() {
        msg.push_str(&format!(
            "Resolved from recorded resolutions ({}): {}\n",
            if st.options.autoupdate {
                "staged"
            } else {
                "review them, then `git add`"
            },
            info.resolved.join(", ")
        ));
    }
    if !info.missing.is_empty() {
        msg.push_str("Likely missing dependencies (they added lines this patch relies on, and are neither earlier in the list nor on the branch):\n");
        for (oid, subject) in &info.missing {
            msg.push_str(&format!("  {} {subject}\n", &oid.to_string()[..7]));
        }
    }
    let todo = if left.is_empty() {
        "Review the resolved files and stage them with `git add`"
    } else {
        "Resolve the conflicts and stage them with `git add`"
    };
    msg.push_str(&format!(
        "So far: {}.\n{todo}, then run one of:\n  \
         bport apply --continue   commit the resolution and go on\n  \
         bport apply --skip       drop this patch and go on\n  \
         bport apply --abort      restore the branch as it was before the run",
        summary(st)
    ));
    msg
}

/// On a terminal: show the diff, open the editor, stage the edits and continue, skip, abort, or leave the stop
/// for later. Returns the resume the user chose (`None`: leave it).
fn prompt(
    repo: &git2::Repository,
    info: &backport::StopInfo,
    ui: &Ui,
) -> CliResult<Option<Resume>> {
    let items = [
        "show diff",
        "open the editor on the conflicted files",
        "stage the conflicted files and continue",
        "skip this patch",
        "abort the run",
        "leave it (resolve later)",
    ];
    let workdir = repo.workdir().map(PathBuf::from).unwrap_or_default();
    loop {
        let choice = dialoguer::Select::new()
            .with_prompt("What now?")
            .items(items)
            .default(5)
            .interact_opt()
            .map_err(CliError::from)?;
        match choice {
            Some(0) => {
                let mut out = std::io::stdout().lock();
                backport::stop::write_stop_diff(repo, info, &mut out)?;
                out.flush()?;
            }
            Some(1) => {
                let config = repo.config().ok();
                let Some(editor) =
                    crate::git::editor(config.as_ref(), &|name| std::env::var(name).ok())
                else {
                    ui.warn("the terminal is dumb and no editor is set (GIT_EDITOR, core.editor or EDITOR)");
                    continue;
                };
                if editor == ":" {
                    // git's "no editor": nothing to run.
                    continue;
                }
                // As git runs it: a shell command line, the files as its arguments.
                let status = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!("{editor} \"$@\""))
                    .arg(&editor)
                    .args(info.conflicts.iter().map(|c| workdir.join(&c.path)))
                    .status();
                match status {
                    Ok(s) if s.success() => {}
                    Ok(s) => ui.status(format!("{editor} exited with {s}")),
                    Err(e) => ui.warn(format!(
                        "could not run {editor}: {e} (set GIT_EDITOR, core.editor or EDITOR)"
                    )),
                }
            }
            Some(2) => match backport::stop::stage_stop(repo, info)? {
                backport::stop::Staged::All => return Ok(Some(Resume::Continue)),
                backport::stop::Staged::MarkersRemain(paths) => ui.status(format!(
                    "Conflict markers remain in {}; edit them first.",
                    paths.join(", ")
                )),
            },
            Some(3) => return Ok(Some(Resume::Skip)),
            Some(4) => return Ok(Some(Resume::Abort)),
            _ => return Ok(None),
        }
    }
}
