//! The typed plan: what `bport apply` will do with each listed commit, decided before anything is touched.

use super::matcher::AppliedBecause;
use super::oid_hex;
use git2::Oid;
use serde::{Deserialize, Serialize};

/// One listed commit and what to do with it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Line in the patch list.
    pub line: usize,
    /// The listed commit.
    #[serde(with = "oid_hex")]
    pub commit: Oid,
    /// Its subject.
    pub subject: String,
    /// What to do.
    pub action: Action,
}

/// What to do with a listed commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    /// Cherry-pick it.
    Pick {
        /// Its subject is not unique in the list or on the branch and no other rule decided: picked, with a
        /// warning, because it may be a duplicate.
        ambiguous_subject: bool,
    },
    /// Already on the branch.
    Skip {
        /// Which rule, and the branch commit.
        because: AppliedBecause,
    },
}

/// The whole plan, in list order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The steps, oldest first.
    pub steps: Vec<Step>,
}

/// What happened to a step (or, in a dry run, what is predicted to happen).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum StepResult {
    /// Picked as a new commit.
    Picked {
        /// The new commit.
        #[serde(with = "oid_hex")]
        new: Oid,
    },
    /// Skipped, already applied.
    Applied {
        /// Which rule, and the branch commit.
        because: AppliedBecause,
    },
    /// Skipped: the pick changed nothing.
    Empty,
    /// Skipped by the user with `--skip`.
    SkippedByUser,
    /// Stopped (or, in a dry run, would stop) with conflicts in these paths.
    Conflict {
        /// The conflicted paths.
        paths: Vec<String>,
    },
}
