//! The branch check: inside a kernel tree, the target's branch must carry every commit of its required patch
//! lists, by the backport engine's already-applied rules (trailer, subject, patch-id). Missing fixes are named
//! with the `bport apply` command that adds them.
//!
//! Read-only: uses [`crate::backport::matcher::presence`], never changes the repository.

use super::{BranchCheck, BranchEntry, BranchReport};
use crate::backport::matcher::{self, Rules, Verdict};
use crate::backport::patchlist::PatchList;
use std::path::{Path, PathBuf};

/// Why the branch check could not be completed (a missing fix is a result, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A required list could not be read.
    #[error("cannot read the patch list {path}")]
    Read {
        /// The list.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A required list is malformed, or the matcher failed on the repository.
    #[error("patch list {path}")]
    List {
        /// The list.
        path: PathBuf,
        /// What the backport engine reported (names the line).
        #[source]
        source: crate::backport::Error,
    },
}

/// Checks `branch` of the repository containing `dir` against `lists`.
///
/// Not inside a repository, or a repository without that branch, gives [`BranchCheck::Skipped`] with the reason:
/// verify still reports the matrix for a target whose tree is elsewhere.
pub fn check(dir: &Path, branch: &str, lists: &[PathBuf]) -> Result<BranchCheck, Error> {
    crate::git::read_objects_as_git_does();
    let repo = match git2::Repository::discover(dir) {
        Ok(r) => r,
        Err(_) => {
            return Ok(BranchCheck::Skipped {
                reason: format!(
                    "{} is not inside a git repository (run bport verify in the kernel tree)",
                    dir.display()
                ),
            })
        }
    };
    if repo.revparse_single(branch).is_err() {
        return Ok(BranchCheck::Skipped {
            reason: format!("this repository has no branch or ref {branch:?}"),
        });
    }
    let root = repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf();
    let mut entries = Vec::new();
    let mut apply_commands = Vec::new();
    for path in lists {
        let text = super::targets::read_list(path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        let list_err = |source| Error::List {
            path: path.clone(),
            source,
        };
        let list = PatchList::parse(&text).map_err(list_err)?;
        let found =
            matcher::presence(&repo, branch, &list, Rules::default(), None).map_err(list_err)?;
        let mut missing = false;
        for p in found {
            let present_by = match p.verdict {
                Verdict::Applied(because) => Some(rule_name(because.rule).to_owned()),
                Verdict::Missing { .. } => None,
            };
            missing |= present_by.is_none();
            entries.push(BranchEntry {
                list: path.clone(),
                sha: p.entry.sha,
                subject: p.entry.subject,
                present_by,
            });
        }
        if missing {
            // apply skips what the branch already carries by the same rules, so the whole list is the fix.
            apply_commands.push(format!(
                "git checkout {branch} && bport apply {}",
                shell_path(path)
            ));
        }
    }
    Ok(BranchCheck::Checked(BranchReport {
        repo: root,
        branch: branch.to_owned(),
        entries,
        apply_commands,
    }))
}

fn rule_name(rule: matcher::Rule) -> &'static str {
    match rule {
        matcher::Rule::Trailer => "trailer",
        matcher::Rule::Subject => "subject",
        matcher::Rule::PatchId => "patch-id",
    }
}

/// The path quoted for a shell when it needs it.
fn shell_path(path: &Path) -> String {
    let s = path.to_string_lossy();
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_repository_the_check_is_skipped_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let got = check(dir.path(), "vendor/4.1", &[]).unwrap();
        assert_eq!(
            got,
            BranchCheck::Skipped {
                reason: format!(
                    "{} is not inside a git repository (run bport verify in the kernel tree)",
                    dir.path().display()
                )
            }
        );
    }

    #[test]
    fn paths_are_quoted_only_when_needed() {
        assert_eq!(
            shell_path(Path::new("patchlists/a-b.txt")),
            "patchlists/a-b.txt"
        );
        assert_eq!(
            shell_path(Path::new("my lists/it's.txt")),
            r"'my lists/it'\''s.txt'"
        );
    }
}
