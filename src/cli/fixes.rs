//! `bport fixes`: the upstream follow-ups (`Fixes:` and reverts) of what a branch carries, as a patch list; and the
//! pieces `bport apply --dry-run`/`--with-fixes` share with it (the upstream, the reason lines).

use super::plan_json::Format;
use super::{CliError, CliResult, Ui};
use crate::backport::fixes::{self, FollowUp, Reason, Report, Seeds, TargetIs};
use crate::backport::patchlist::Resolved;
use crate::backport::PatchList;
use crate::git;
use git2::{Oid, Repository};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

/// The version of the `--format json` document.
pub const SCHEMA: u32 = 1;

/// List the upstream fixes and reverts of the branch's commits that it lacks, as a patch list.
///
/// A commit of the upstream range is a follow-up when a `Fixes: <sha> ("subject")` line or git's `This reverts
/// commit <sha>` names a commit the branch carries (in its history, or ported under another id by the rules of
/// `bport apply`: upstream trailer, subject, patch-id) or the patch list adds, or another follow-up; and the
/// branch does not carry it under any id. Ids of 7 to 40 hex digits are read; when the id names no commit of the
/// repository, the subject in the line decides. Each entry comes after `# fixes <sha> "subject"` lines saying
/// why; the output is ready for `bport apply`.
///
/// Example: bport fixes --upstream origin/master > follow-ups.txt && bport apply follow-ups.txt
#[derive(Debug, clap::Args)]
pub struct FixesArgs {
    /// A patch list about to be applied (`-` reads stdin): its commits count as carried and are never listed.
    pub patchlist: Option<PathBuf>,

    /// Where to look for follow-ups (a branch or any revision; repeatable). Default: with a patch list, the
    /// branches that contain its last commit; without one it is required.
    #[arg(long, value_name = "REF")]
    pub upstream: Vec<String>,

    /// The branch whose commits to follow up (any revision).
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub branch: String,

    /// Rules that count an upstream commit as carried (comma-separated: trailer,subject,patch-id; or none).
    #[arg(long, value_name = "KINDS", default_value = "trailer,subject,patch-id")]
    pub r#match: String,

    /// Output: a patch list with reason comments, or one JSON document (`"schema": 1`).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The upstream a run searches: names (for people) and tips.
pub struct Upstream {
    /// How the user or the default named each tip.
    pub names: Vec<String>,
    /// The tips.
    pub tips: Vec<Oid>,
}

/// The `--upstream` revisions, or by default the branches that contain the list's last commit (`None` when there
/// is neither).
pub fn upstream(
    repo: &Repository,
    given: &[String],
    list: &[Resolved],
) -> CliResult<Option<Upstream>> {
    if !given.is_empty() {
        let mut tips = Vec::new();
        for name in given {
            let tip = repo
                .revparse_single(name)
                .and_then(|o| o.peel_to_commit())
                .map_err(|source| crate::backport::Error::BadRange {
                    range: name.clone(),
                    source,
                })?
                .id();
            tips.push(tip);
        }
        return Ok(Some(Upstream {
            names: given.to_vec(),
            tips,
        }));
    }
    let Some(last) = list.last() else {
        return Ok(None);
    };
    let found = fixes::branches_containing(repo, last.oid)?;
    if found.is_empty() {
        return Ok(None);
    }
    Ok(Some(Upstream {
        names: found.iter().map(|(n, _)| n.clone()).collect(),
        tips: found.iter().map(|&(_, t)| t).collect(),
    }))
}

/// Runs `bport fixes`.
pub fn run(args: FixesArgs, ui: &Ui) -> CliResult {
    let repo = git::discover(&std::env::current_dir()?)?;
    let head = repo
        .revparse_single(&args.branch)
        .and_then(|o| o.peel_to_commit())
        .map_err(|source| crate::backport::Error::BadRange {
            range: args.branch.clone(),
            source,
        })?
        .id();
    let resolved = match &args.patchlist {
        Some(path) => {
            let text = if path.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(path)
                    .map_err(|e| CliError::file_context(e, format!("reading {}", path.display())))?
            };
            let list = PatchList::parse(&text)?;
            list.resolve(&repo, Some(1))?
        }
        None => Vec::new(),
    };
    let Some(up) = upstream(&repo, &args.upstream, &resolved)? else {
        return Err(if resolved.is_empty() {
            CliError::user("no upstream to search").hint(
                "name it: bport fixes --upstream origin/master (or give a patch list: its branch is the default)",
            )
        } else {
            CliError::user("no branch contains the patch list's last commit")
                .hint("name the upstream: bport fixes --upstream REF LIST")
        });
    };
    let rules = super::rules::parse_rules(&args.r#match)?;
    let report = fixes::find(
        &repo,
        &fixes::Request {
            head,
            upstream: &up.tips,
            list: &resolved,
            rules,
            seeds: Seeds::BranchAndList,
        },
    )?;
    let text = match args.format {
        Format::Text => list_text(&repo, &report.follow_ups)?,
        Format::Json => format!("{:#}\n", json_report(&repo, head, &up, &report)?),
    };
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| CliError::file_context(e, format!("writing {}", path.display())))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    ui.status(summary(&up, &report));
    Ok(())
}

/// The stderr summary line.
pub fn summary(up: &Upstream, report: &Report) -> String {
    let mut s = format!(
        "{} follow-up{} in {} ({} commits scanned",
        report.follow_ups.len(),
        if report.follow_ups.len() == 1 {
            ""
        } else {
            "s"
        },
        up.names.join(", "),
        report.scanned
    );
    if !report.already_carried.is_empty() {
        s.push_str(&format!(
            "; {} more already on the branch under another id",
            report.already_carried.len()
        ));
    }
    if report.unresolved > 0 {
        s.push_str(&format!(
            "; {} Fixes:/revert line{} a commit this repository lacks",
            report.unresolved,
            if report.unresolved == 1 {
                " names"
            } else {
                "s name"
            }
        ));
    }
    s.push_str(").");
    s
}

/// The patch list: for each follow-up its reason lines, then `<sha> <subject>` as `git log --oneline` writes it.
pub fn list_text(repo: &Repository, follow_ups: &[FollowUp]) -> CliResult<String> {
    let min = git::abbrev_len(repo);
    let mut out = String::new();
    for f in follow_ups {
        for r in &f.reasons {
            out.push_str(&format!("# {}\n", reason_words(repo, r, min)?));
        }
        out.push_str(&format!(
            "{} {}\n",
            git::short_id(repo, f.commit, min)?,
            f.subject
        ));
    }
    Ok(out)
}

/// `fixes 1a2b3c4 "subject" (on the branch as 9f8e7d6, upstream trailer)`.
pub fn reason_words(repo: &Repository, r: &Reason, min: usize) -> CliResult<String> {
    let mut s = r.kind.word().to_owned();
    if let Some(t) = r.target {
        s.push_str(&format!(" {}", git::short_id(repo, t, min)?));
    }
    s.push_str(&format!(" \"{}\"", r.target_subject));
    let how = match r.target_is {
        TargetIs::OnBranch => "on the branch".to_owned(),
        TargetIs::Ported(b) => format!(
            "on the branch as {}, {}",
            git::short_id(repo, b.by, min)?,
            super::rules::applied_words(&b)
        ),
        TargetIs::Listed { line } => format!("in the list, line {line}"),
        TargetIs::FollowUp => "a follow-up above".to_owned(),
    };
    s.push_str(&format!(" ({how}"));
    if r.by_subject {
        match &r.named_as {
            Some(hex) => s.push_str(&format!("; matched by subject, not by {hex}")),
            None => s.push_str("; matched by subject"),
        }
    }
    s.push(')');
    Ok(s)
}

/// `--format json`.
fn json_report(repo: &Repository, head: Oid, up: &Upstream, report: &Report) -> CliResult<Value> {
    let min = git::abbrev_len(repo);
    let mut follow = Vec::new();
    for f in &report.follow_ups {
        follow.push(json!({
            "commit": f.commit.to_string(),
            "short": git::short_id(repo, f.commit, min)?,
            "subject": f.subject,
            "reasons": f.reasons.iter().map(reason_json).collect::<Vec<_>>(),
        }));
    }
    let already: Vec<Value> = report
        .already_carried
        .iter()
        .map(|a| {
            json!({
                "commit": a.commit.to_string(),
                "subject": a.subject,
                "rule": rule_name(a.because.rule),
                "by": a.because.by.to_string(),
            })
        })
        .collect();
    Ok(json!({
        "schema": SCHEMA,
        "branch": head.to_string(),
        "upstream": up.names.iter().zip(&up.tips).map(|(n, t)| json!({"name": n, "commit": t.to_string()})).collect::<Vec<_>>(),
        "scanned": report.scanned,
        "unresolved": report.unresolved,
        "follow_ups": follow,
        "already_on_branch": already,
    }))
}

/// One reason as JSON (also used by `bport apply --dry-run --format json`).
pub fn reason_json(r: &Reason) -> Value {
    let mut v = json!({
        "kind": r.kind.word(),
        "target": r.target.map(|t| t.to_string()),
        "named_as": r.named_as,
        "target_subject": r.target_subject,
        "by_subject": r.by_subject,
    });
    let (is, extra) = match r.target_is {
        TargetIs::OnBranch => ("on-branch", None),
        TargetIs::Ported(b) => (
            "ported",
            Some(json!({"rule": rule_name(b.rule), "by": b.by.to_string()})),
        ),
        TargetIs::Listed { line } => ("listed", Some(json!({ "line": line }))),
        TargetIs::FollowUp => ("follow-up", None),
    };
    v["target_is"] = json!(is);
    if let (Some(Value::Object(extra)), Value::Object(map)) = (extra, &mut v) {
        map.extend(extra);
    }
    v
}

fn rule_name(rule: crate::backport::Rule) -> &'static str {
    match rule {
        crate::backport::Rule::Trailer => "trailer",
        crate::backport::Rule::Subject => "subject",
        crate::backport::Rule::PatchId => "patch-id",
    }
}

/// The follow-ups section of `bport apply --dry-run`, as text lines and as JSON.
pub struct DryRunFollowUps {
    /// Printed after the plan's summary.
    pub text: String,
    /// The `follow_ups` value of the JSON plan.
    pub json: Value,
}

/// What `bport apply` does with follow-ups before planning: `--with-fixes` adds them to the list at their upstream
/// place (said on stderr); a dry run without it gets them to name after the plan. Follow-ups are those of the
/// listed commits (the branch only excludes what it has). A list that does not resolve is passed on unchanged, so
/// that `apply` reports it as always.
pub fn for_apply(
    repo: &Repository,
    list: PatchList,
    given: &[String],
    rules: crate::backport::Rules,
    mainline: Option<u32>,
    with_fixes: bool,
    ui: &Ui,
) -> CliResult<(PatchList, Option<DryRunFollowUps>)> {
    let Ok(resolved) = list.resolve(repo, mainline) else {
        return Ok((list, None));
    };
    let Some(head) = repo.head().ok().and_then(|h| h.target()) else {
        return Ok((list, None));
    };
    if resolved.is_empty() {
        return Ok((list, None));
    }
    let Some(up) = upstream(repo, given, &resolved)? else {
        if with_fixes {
            return Err(CliError::user(
                "--with-fixes: no branch contains the patch list's last commit",
            )
            .hint("name where to look: bport apply --with-fixes --upstream REF LIST"));
        }
        return Ok((list, None));
    };
    let report = fixes::find(
        repo,
        &fixes::Request {
            head,
            upstream: &up.tips,
            list: &resolved,
            rules,
            seeds: Seeds::List,
        },
    )?;
    if with_fixes {
        if !report.follow_ups.is_empty() {
            let min = git::abbrev_len(repo);
            let mut msg = format!(
                "--with-fixes: {} follow-up{} from {} added to the plan:",
                report.follow_ups.len(),
                if report.follow_ups.len() == 1 {
                    ""
                } else {
                    "s"
                },
                up.names.join(", ")
            );
            for f in &report.follow_ups {
                msg.push_str(&format!(
                    "\n  {} {}",
                    git::short_id(repo, f.commit, min)?,
                    f.subject
                ));
                for r in &f.reasons {
                    msg.push_str(&format!("\n    {}", reason_words(repo, r, min)?));
                }
            }
            ui.status(msg);
        }
        let merged =
            fixes::with_follow_ups(repo, head, &up.tips, &list, &resolved, &report.follow_ups)?;
        return Ok((merged, None));
    }
    if report.follow_ups.is_empty() {
        return Ok((list, None));
    }
    let min = git::abbrev_len(repo);
    let mut follow = Vec::new();
    for f in &report.follow_ups {
        follow.push(json!({
            "commit": f.commit.to_string(),
            "short": git::short_id(repo, f.commit, min)?,
            "subject": f.subject,
            "reasons": f.reasons.iter().map(reason_json).collect::<Vec<_>>(),
        }));
    }
    let text = format!(
        "Follow-ups of the listed commits in {}, not in the list (--with-fixes adds them):\n{}",
        up.names.join(", "),
        list_text(repo, &report.follow_ups)?
    );
    Ok((
        list,
        Some(DryRunFollowUps {
            text,
            json: Value::Array(follow),
        }),
    ))
}
