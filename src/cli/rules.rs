//! The `--match` rules of `apply` and `fixes`, and how a skip by one of them reads: a leaf both commands (and
//! `status`) use.

use super::{CliError, CliResult};
use crate::backport::{self, Rules};

/// Parses `--match` (comma-separated trailer, subject, patch-id; or none).
pub fn parse_rules(kinds: &str) -> CliResult<Rules> {
    let mut rules = Rules {
        trailer: false,
        subject: false,
        patch_id: false,
    };
    for kind in kinds.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        match kind {
            "trailer" => rules.trailer = true,
            "subject" => rules.subject = true,
            "patch-id" => rules.patch_id = true,
            "none" => {}
            other => {
                return Err(CliError::user(format!("--match: unknown rule {other:?}"))
                    .hint("use a comma-separated list of trailer, subject, patch-id (or none)"))
            }
        }
    }
    Ok(rules)
}

/// The rule of a skip and, for a subject match, what confirmed it: `subject + same files`.
pub fn applied_words(because: &backport::AppliedBecause) -> String {
    match because.confirmed {
        Some(c) => format!("{} + {c}", because.rule),
        None => because.rule.to_string(),
    }
}
