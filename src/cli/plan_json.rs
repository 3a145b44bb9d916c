//! `--format json` of `bport status` and `bport apply --dry-run`: one JSON document on stdout, versioned by its
//! `"schema"` field. docs/backport.md documents the schema; a change that breaks a reader raises [`SCHEMA`].
//!
//! The document is built here from the run's state, field by field, rather than by serializing library types:
//! `.git/bport/state.json` may change with the engine, this output may not.

use crate::backport::{self, state::Phase, Action, State, Step, StepResult};
use serde_json::{json, Map, Value};

/// The version of both documents' schema.
pub const SCHEMA: u32 = 1;

/// Output formats of `status` and `apply --dry-run`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON document (schema in docs/backport.md).
    Json,
}

/// `bport status --format json`: `None` when no run is in progress.
pub fn status(st: Option<&State>) -> Value {
    let Some(st) = st else {
        return json!({ "schema": SCHEMA, "in_progress": false });
    };
    let (phase, conflicts) = match &st.phase {
        Phase::Stopped { paths } => ("stopped", paths.clone()),
        Phase::Running => ("interrupted", Vec::new()),
    };
    let total = st.plan.steps.len();
    let steps: Vec<Value> = st
        .plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| step_value(i, step, st.results.get(i).and_then(Option::as_ref), false))
        .collect();
    json!({
        "schema": SCHEMA,
        "in_progress": true,
        "phase": phase,
        "position": (st.position + 1).min(total),
        "total": total,
        "conflicts": conflicts,
        "branch": st.branch,
        "orig_head": st.orig_head.to_string(),
        "steps": steps,
    })
}

/// `bport apply --dry-run --format json`: the plan with every step's predicted outcome and the summary.
pub fn dry_run(st: &State) -> Value {
    let steps: Vec<Value> = st
        .plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| step_value(i, step, st.results.get(i).and_then(Option::as_ref), true))
        .collect();
    let (mut pick, mut conflicts, mut by_rule) = (0, 0, Map::new());
    for r in st.results.iter().flatten() {
        let rule = match r {
            StepResult::Picked { .. } => {
                pick += 1;
                continue;
            }
            StepResult::Conflict { .. } => {
                pick += 1;
                conflicts += 1;
                continue;
            }
            StepResult::Applied { because } => rule_name(because.rule),
            StepResult::Empty => "empty",
            StepResult::SkippedByUser => continue,
        };
        let n = by_rule.get(rule).and_then(Value::as_u64).unwrap_or(0);
        by_rule.insert(rule.to_owned(), json!(n + 1));
    }
    let skip: u64 = by_rule.values().filter_map(Value::as_u64).sum();
    json!({
        "schema": SCHEMA,
        "dry_run": true,
        "steps": steps,
        "summary": {
            "pick": pick,
            "conflicts": conflicts,
            "skip": skip,
            "skip_by_rule": by_rule,
        },
    })
}

/// One step: where it is in the list, what it names, and its outcome (`dry_run`: a prediction, so no new commit).
fn step_value(index: usize, step: &Step, result: Option<&StepResult>, dry_run: bool) -> Value {
    let mut v = Map::new();
    v.insert("index".into(), json!(index + 1));
    v.insert("line".into(), json!(step.line));
    v.insert("commit".into(), json!(step.commit.to_string()));
    v.insert("subject".into(), json!(step.subject));
    let outcome = match (result, &step.action) {
        (Some(StepResult::Picked { new }), _) => {
            if !dry_run {
                v.insert("new".into(), json!(new.to_string()));
            }
            "picked"
        }
        (Some(StepResult::Conflict { paths }), _) => {
            v.insert("paths".into(), json!(paths));
            "conflict"
        }
        (Some(StepResult::Applied { because }), _) | (None, Action::Skip { because }) => {
            v.insert("rule".into(), json!(rule_name(because.rule)));
            v.insert("by".into(), json!(because.by.to_string()));
            if let Some(c) = because.confirmed {
                v.insert("confirmed".into(), json!(c.to_string()));
            }
            if result.is_some() {
                "applied"
            } else {
                "will-skip"
            }
        }
        (Some(StepResult::Empty), _) => "empty",
        (Some(StepResult::SkippedByUser), _) => "skipped-by-user",
        (None, Action::Pick { .. }) => "pending",
    };
    v.insert("outcome".into(), json!(outcome));
    Value::Object(v)
}

fn rule_name(rule: backport::matcher::Rule) -> &'static str {
    match rule {
        backport::matcher::Rule::Trailer => "trailer",
        backport::matcher::Rule::Subject => "subject",
        backport::matcher::Rule::PatchId => "patch-id",
    }
}
