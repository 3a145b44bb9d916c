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
            // git's sequencer: a merge needs `-m N` with 1 <= N <= parents; a non-merge takes only `-m 1` (a root
            // commit any), since its one parent is parent 1.
            match mainline {
                None if parents > 1 => {
                    return Err(Error::MergeWithoutMainline {
                        line: entry.line,
                        sha: entry.sha.clone(),
                        parents,
                    })
                }
                Some(m) if m == 0 || (parents > 0 && m as usize > parents) => {
                    return Err(bad(format!("the commit does not have parent {m}")))
                }
                _ => {}
            }
            let subject = git::commit_subject(&String::from_utf8_lossy(commit.message_bytes()));
            // A list line separates the sha from the subject by whitespace, so a subject's own leading blanks
            // (git keeps them, `git log --oneline` prints them) cannot be told apart from the separator.
            if !entry.subject.is_empty() && entry.subject.trim() != subject.trim() {
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

/// Which commits of a range [`list_range`] lists, as `git log`'s options of the same names choose them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `--no-merges`: leave out commits with more than one parent.
    pub no_merges: bool,
    /// `--first-parent`: follow only the first parent of each merge.
    pub first_parent: bool,
}

/// The patch list for a revision range, oldest first, byte-identical to `git log --reverse --oneline [--no-merges]
/// [--first-parent] <range>` for `A..B`, `B ^A` and single-revision forms (without `--no-merges`, merges are
/// listed, as git lists them).
pub fn list_range(repo: &Repository, range: &str, opts: ListOptions) -> Result<PatchList, Error> {
    let bad = |source: git2::Error| Error::BadRange {
        range: range.to_owned(),
        source,
    };
    let mut walk = repo.revwalk().context_git(|| "starting a revision walk")?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME | Sort::REVERSE)
        .context_git(|| "sorting the walk")?;
    if opts.first_parent {
        walk.simplify_first_parent()
            .context_git(|| "following first parents")?;
    }
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
    for oid in walk {
        let oid = oid.context_git(|| format!("walking {range}"))?;
        let commit = repo
            .find_commit(oid)
            .context_git(|| format!("reading commit {oid}"))?;
        if opts.no_merges && commit.parent_count() > 1 {
            continue;
        }
        entries.push(Entry {
            line: entries.len() + 1,
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

    /// Pieces real subjects, trailers and lists are made of, with the characters that broke byte slicing
    /// (multi-byte text right where the `UPSTREAM:`/`[PATCH` prefixes are compared).
    const PIECES: &[&str] = &[
        "UPSTREAM:",
        "BACKPORT:",
        "FROMGIT:",
        "FROMLIST:",
        "ANDROID:",
        "CHROMIUM:",
        "[PATCH",
        "[PATCH v2 3/7]",
        "]",
        "(cherry picked from commit ",
        "(cherry-picked from ",
        "commit ",
        " upstream.",
        "[ Upstream commit ",
        "upstream commit ",
        "(imported from commit ",
        "Stable-dep-of: ",
        ")",
        "0123456789abcdef",
        "DEADBEEF",
        "7",
        "é",
        "Ω",
        "ж",
        "修复",
        "🐛",
        "ع",
        "\u{301}",
        "\u{85}",
        "\u{2028}",
        "\u{feff}",
        " ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "#",
        ":",
        "x",
        "perf: fix",
        "\n\n",
        "Signed-off-by: A <a@b>",
    ];

    /// A deterministic xorshift generator: the property test needs no new dependency and fails reproducibly.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        /// Pieces, single random chars and raw bytes (made UTF-8 lossily, as bport reads messages).
        fn text(&mut self) -> String {
            let mut bytes = Vec::new();
            for _ in 0..self.below(40) {
                match self.below(10) {
                    0 => bytes.push(self.next() as u8),
                    1 => {
                        let c = char::from_u32(self.below(0x11_0000) as u32).unwrap_or('\u{fffd}');
                        bytes.extend_from_slice(c.to_string().as_bytes());
                    }
                    _ => bytes.extend_from_slice(PIECES[self.below(PIECES.len())].as_bytes()),
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
    }

    /// Property: no patch-list line, subject, message or diff text panics any parser, and what
    /// they return holds its invariants. The cargo-fuzz target `backport_text` checks the same on fuzzer input.
    #[test]
    fn text_parsers_never_panic_and_keep_their_invariants() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let text = g.text();
            // Patch lists: entries are well-formed, in line order, and survive a write/parse round trip.
            let list_text = format!("{}\n{} {}\n{}", g.text(), "abc1234", text, g.text());
            if let Ok(list) = PatchList::parse(&list_text) {
                assert!(
                    list.entries.windows(2).all(|w| w[0].line < w[1].line),
                    "{list_text:?}"
                );
                for e in &list.entries {
                    assert!((4..=40).contains(&e.sha.len()), "{list_text:?}");
                    assert!(e
                        .sha
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
                }
                let again =
                    PatchList::parse(&list.to_text()).expect("bport's own list text parses");
                let strip = |l: &PatchList| -> Vec<(String, String)> {
                    l.entries
                        .iter()
                        .map(|e| (e.sha.clone(), e.subject.clone()))
                        .collect()
                };
                assert_eq!(strip(&again), strip(&list), "{list_text:?}");
            }
            // Subjects: normalizing is idempotent.
            let norm = git::normalize_subject(&text);
            assert_eq!(git::normalize_subject(&norm), norm, "{text:?}");
            let _ = git::commit_subject(&text);
            // Trailers: every origin is 7-40 lower-case hex digits that the message contains.
            let lower = text.to_ascii_lowercase();
            for o in git::origins(&text) {
                assert!((7..=40).contains(&o.hex.len()), "{text:?}");
                assert!(o
                    .hex
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
                assert!(lower.contains(&o.hex), "{text:?}");
            }
            // Without -x or -s a clean pick keeps the original text but its leading blank lines (git commits it
            // verbatim from its first line); with them the
            // clean-up must not panic on any text.
            use super::super::message::{picked_message, Made, MessageRules};
            let rules = MessageRules::default();
            let id = "0123456789abcdef0123456789abcdef01234567";
            let msg = picked_message(&text, id, false, None, &rules, Made::Clean);
            assert!(
                text.ends_with(&msg),
                "{text:?}: only leading blank lines may go"
            );
            let _ = picked_message(
                &text,
                id,
                true,
                Some("Signed-off-by: A <a@b>"),
                &rules,
                Made::AfterConflict,
            );
            let _ = git::patch_id_of_diff_text(text.as_bytes());
        }
    }

    /// Every vendor prefix cut at every byte, followed by a multi-byte character: the exact shape of a byte-slicing
    /// panic, exhaustively.
    #[test]
    fn prefixes_cut_by_multibyte_characters_do_not_panic() {
        for prefix in [
            "UPSTREAM:",
            "BACKPORT:",
            "FROMGIT:",
            "FROMLIST:",
            "ANDROID:",
            "CHROMIUM:",
            "[PATCH",
        ] {
            for cut in 0..=prefix.len() {
                for c in ["é", "修", "🐛", "\u{301}"] {
                    let subject = format!("{}{c}{} rest", &prefix[..cut], &prefix[cut..]);
                    let norm = git::normalize_subject(&subject);
                    assert!(!norm.is_empty(), "{subject:?}");
                    let line = format!("abcdef0 {subject}");
                    let list = PatchList::parse(&line).unwrap();
                    assert_eq!(list.entries[0].subject, subject);
                }
            }
        }
        assert_eq!(git::normalize_subject("UPSTREAM: é"), "é");
        assert_eq!(git::normalize_subject("[PATCH 修] 🐛 fix"), "🐛 fix");
    }
}
