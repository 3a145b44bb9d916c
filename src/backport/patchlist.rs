//! Patch lists: `<sha> <subject>` lines, oldest first, as `git log --reverse --oneline <range>` prints them.
//!
//! Parsing is two steps: [`PatchList::parse`] checks the text alone (so `verify` can read lists whose commits the
//! repository lacks), [`PatchList::resolve`] looks every line up in a repository. Both keep line numbers, so each
//! error names the line to fix.

use super::Error;
use crate::git::{self, Context};
use git2::{Oid, Repository, Sort};

/// One entry of a patch list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// 1-based line number in the list.
    pub line: usize,
    /// The sha as written (4 to 40 hex digits, lower-cased).
    pub sha: String,
    /// The subject as written (may be empty when the line holds only a sha).
    pub subject: String,
}

/// A parsed patch list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchList {
    /// Entries in file order (oldest first).
    pub entries: Vec<Entry>,
}

/// An entry checked against a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The entry as listed.
    pub entry: Entry,
    /// The commit it names.
    pub oid: Oid,
    /// The commit's own subject (`%s`).
    pub subject: String,
}

impl PatchList {
    /// Parses the text of a list: `<sha> <subject>` lines, `#` comments and blank lines.
    pub fn parse(text: &str) -> Result<PatchList, Error> {
        let mut entries = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (sha, subject) = match trimmed.split_once(char::is_whitespace) {
                Some((sha, subject)) => (sha, subject.trim()),
                None => (trimmed, ""),
            };
            if !(4..=40).contains(&sha.len()) || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Error::MalformedLine {
                    line,
                    text: raw.to_owned(),
                });
            }
            entries.push(Entry {
                line,
                sha: sha.to_ascii_lowercase(),
                subject: subject.to_owned(),
            });
        }
        Ok(PatchList { entries })
    }

    /// Renders the list as `bport list` writes it: one `<sha> <subject>` line per entry.
    pub fn to_text(&self) -> String {
        self.entries
            .iter()
            .map(|e| format!("{} {}\n", e.sha, e.subject))
            .collect()
    }

    /// Looks every entry up: the sha must name exactly one commit, and a listed subject must be that commit's.
    /// A merge commit is an error unless `mainline` names the parent to diff against.
    pub fn resolve(
        &self,
        repo: &Repository,
        mainline: Option<u32>,
    ) -> Result<Vec<Resolved>, Error> {
        let odb = repo.odb().context_git(|| "opening the object database")?;
        let mut out = Vec::with_capacity(self.entries.len());
        for entry in &self.entries {
            let bad = |reason: String| Error::BadCommit {
                line: entry.line,
                sha: entry.sha.clone(),
                reason,
            };
            let padded = format!("{:0<40}", entry.sha);
            let prefix = Oid::from_str(&padded).map_err(|e| bad(e.message().to_owned()))?;
            let oid = match odb.exists_prefix(prefix, entry.sha.len()) {
                Ok(oid) => oid,
                Err(e) if e.code() == git2::ErrorCode::Ambiguous => {
                    return Err(bad(
                        "the abbreviation is ambiguous; write more digits".into()
                    ))
                }
                Err(_) => {
                    return Err(bad(
                        "no such object in this repository (fetch it first?)".into()
                    ))
                }
            };
            let commit = repo
                .find_commit(oid)
                .map_err(|_| bad("not a commit".into()))?;
            let parents = commit.parent_count();
            if parents > 1 && mainline.is_none_or(|m| m == 0 || m as usize > parents) {
                return Err(bad(format!(
                    "a merge commit with {parents} parents; pass -m <parent-number> to pick it"
                )));
            }
            let subject = git::commit_subject(&String::from_utf8_lossy(commit.message_bytes()));
            if !entry.subject.is_empty() && entry.subject != subject {
                return Err(Error::SubjectMismatch {
                    line: entry.line,
                    sha: entry.sha.clone(),
                    listed: entry.subject.clone(),
                    actual: subject,
                });
            }
            out.push(Resolved {
                entry: entry.clone(),
                oid,
                subject,
            });
        }
        Ok(out)
    }
}

/// The patch list for a revision range, oldest first, byte-identical to `git log --reverse --oneline <range>`
/// for `A..B`, `B ^A` and single-revision forms (merges are listed, as git lists them).
pub fn list_range(repo: &Repository, range: &str) -> Result<PatchList, Error> {
    let bad = |source: git2::Error| Error::BadRange {
        range: range.to_owned(),
        source,
    };
    let mut walk = repo.revwalk().context_git(|| "starting a revision walk")?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME | Sort::REVERSE)
        .context_git(|| "sorting the walk")?;
    if range.contains("..") {
        walk.push_range(range).map_err(bad)?;
    } else {
        for word in range.split_whitespace() {
            match word.strip_prefix('^') {
                Some(hidden) => {
                    let oid = repo
                        .revparse_single(hidden)
                        .map_err(bad)?
                        .peel_to_commit()
                        .map_err(bad)?
                        .id();
                    walk.hide(oid).map_err(bad)?;
                }
                None => {
                    let oid = repo
                        .revparse_single(word)
                        .map_err(bad)?
                        .peel_to_commit()
                        .map_err(bad)?
                        .id();
                    walk.push(oid).map_err(bad)?;
                }
            }
        }
    }
    let min_len = git::abbrev_len(repo);
    let mut entries = Vec::new();
    for (i, oid) in walk.enumerate() {
        let oid = oid.context_git(|| format!("walking {range}"))?;
        let commit = repo
            .find_commit(oid)
            .context_git(|| format!("reading commit {oid}"))?;
        entries.push(Entry {
            line: i + 1,
            sha: git::short_id(repo, oid, min_len)?,
            subject: git::commit_subject(&String::from_utf8_lossy(commit.message_bytes())),
        });
    }
    Ok(PatchList { entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_blanks_and_bare_shas() {
        let list = PatchList::parse("# perf fixes\n\n7322d6c98dd2 perf script: Initialize callchain_param.record_mode\nABCDEF0\n").unwrap();
        assert_eq!(
            list.entries,
            vec![
                Entry {
                    line: 3,
                    sha: "7322d6c98dd2".into(),
                    subject: "perf script: Initialize callchain_param.record_mode".into()
                },
                Entry {
                    line: 4,
                    sha: "abcdef0".into(),
                    subject: String::new()
                },
            ]
        );
    }

    #[test]
    fn malformed_lines_name_their_number() {
        let err = PatchList::parse("abc1234 ok\nnot-a-sha subject\n").unwrap_err();
        assert!(
            matches!(err, Error::MalformedLine { line: 2, .. }),
            "{err:?}"
        );
        let err = PatchList::parse("abc subject\n").unwrap_err();
        assert!(
            matches!(err, Error::MalformedLine { line: 1, .. }),
            "{err:?}"
        );
    }
}
