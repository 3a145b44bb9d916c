//! `bport status`: the plan, the position and the stop of the run in progress.

use super::plan_json::Format;
use super::{CliResult, Ui};
use crate::backport::{self, state::Phase, StepResult};
use std::io::Write;

/// Show the bport apply run in progress: every step, where it stands, and why it stopped.
///
/// Example: bport status
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Output format: text for people, or one JSON document (versioned schema: docs/backport.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs `bport status`.
pub fn run(args: StatusArgs, _ui: &Ui) -> CliResult {
    let repo = super::apply::open_repo()?;
    let mut out = std::io::stdout().lock();
    let st = backport::status(&repo)?;
    if args.format == Format::Json {
        writeln!(out, "{:#}", super::plan_json::status(st.as_ref()))?;
        return Ok(());
    }
    let Some(st) = st else {
        writeln!(out, "No bport apply in progress.")?;
        return Ok(());
    };
    let total = st.plan.steps.len();
    match &st.phase {
        Phase::Stopped { paths } => writeln!(
            out,
            "Stopped at {}/{total} {}: conflicts in {}",
            st.position + 1,
            super::apply::step_title(&st.plan.steps[st.position]),
            paths.join(", ")
        )?,
        Phase::Running => writeln!(
            out,
            "Interrupted at {}/{total}; run `bport apply --continue` or `bport apply --abort`",
            // After the last pick, before the branch moved (e.g. a file in the way of the checkout).
            (st.position + 1).min(total)
        )?,
    }
    for (i, step) in st.plan.steps.iter().enumerate() {
        let marker = if i == st.position { ">" } else { " " };
        let what = match (&st.results[i], step.action) {
            (Some(StepResult::Conflict { .. }), _) if i == st.position => {
                "conflict (stopped here)".to_owned()
            }
            (Some(r), _) => super::apply::result_words(r),
            (None, backport::Action::Skip { because }) => {
                format!(
                    "will skip (already applied: {})",
                    super::apply::applied_words(&because)
                )
            }
            (None, backport::Action::Pick { .. }) => "pending".to_owned(),
        };
        writeln!(
            out,
            "{marker} {}/{total} {}: {what}",
            i + 1,
            super::apply::step_title(step)
        )?;
    }
    Ok(())
}
