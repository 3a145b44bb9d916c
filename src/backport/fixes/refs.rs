//! The lines of a commit message that name a commit it repairs: `Fixes: <sha> ("subject")` trailers and git's
//! `This reverts commit <sha>.` line.
//!
//! Ids are taken from 7 to 40 hex digits. The kernel asks for 12 or more, but shorter ones are common in older
//! history and in projects that copied the convention, and a 7-digit id that names the wrong commit is caught by
//! its subject (see `mod.rs`). Six digits or fewer, or a run that goes on into letters, is not an id (`Fixes: #123`,
//! `Fixes: https://…` and bug numbers name no commit).

/// What the line says the commit does to the one it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefKind {
    /// `Fixes:`.
    Fixes,
    /// `This reverts commit`.
    Reverts,
}

impl RefKind {
    /// The word of the reason line: `fixes` or `reverts`.
    pub fn word(self) -> &'static str {
        match self {
            RefKind::Fixes => "fixes",
            RefKind::Reverts => "reverts",
        }
    }
}

/// One commit named by a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitRef {
    /// Fixes or reverts.
    pub kind: RefKind,
    /// The id as written, lower-case hex (7 to 40 digits); `None` when only a subject names the commit.
    pub hex: Option<String>,
    /// The subject as written (`("…")` of a `Fixes:` line; the quoted part of a `Revert "…"` subject).
    pub subject: Option<String>,
}

/// Every commit `message` says it fixes or reverts, in message order, each named once.
pub fn commit_refs(message: &str) -> Vec<CommitRef> {
    let lines: Vec<&str> = message.lines().collect();
    let mut out: Vec<CommitRef> = Vec::new();
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim();
        if let Some(rest) = strip_key(line, "fixes:") {
            let rest = rest.trim_start();
            let rest = strip_key(rest, "commit ").map_or(rest, str::trim_start);
            let Some(hex) = hex_id(rest) else {
                continue;
            };
            let subject = quoted_subject(&rest[hex.len()..], &lines[i + 1..]);
            push(
                &mut out,
                CommitRef {
                    kind: RefKind::Fixes,
                    hex: Some(hex.to_ascii_lowercase()),
                    subject,
                },
            );
        } else if let Some(at) = find_ignore_case(line, "this reverts commit ") {
            let rest = &line[at + "this reverts commit ".len()..];
            if let Some(hex) = hex_id(rest) {
                let subject = reverted_subject(message);
                push(
                    &mut out,
                    CommitRef {
                        kind: RefKind::Reverts,
                        hex: Some(hex.to_ascii_lowercase()),
                        subject,
                    },
                );
            }
        }
    }
    out
}

fn push(out: &mut Vec<CommitRef>, r: CommitRef) {
    if !out.contains(&r) {
        out.push(r);
    }
}

/// `line` after `key` (compared ignoring ASCII case), if it starts with it.
fn strip_key<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let head = line.as_bytes().get(..key.len())?;
    // An ASCII key matched byte for byte ends on a char boundary.
    head.eq_ignore_ascii_case(key.as_bytes())
        .then(|| &line[key.len()..])
}

/// Byte offset of `needle` (ASCII) in `line`, ignoring ASCII case.
fn find_ignore_case(line: &str, needle: &str) -> Option<usize> {
    line.as_bytes()
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// A run of 7–40 hex digits at the start of `s`, ended by the end or a character that is not a letter or digit.
fn hex_id(s: &str) -> Option<&str> {
    let len = s.bytes().take_while(u8::is_ascii_hexdigit).count();
    let clean_end = s[len..]
        .chars()
        .next()
        .is_none_or(|c| !c.is_ascii_alphanumeric());
    ((7..=40).contains(&len) && clean_end).then(|| &s[..len])
}

/// The `("subject")` after an id, also when the line wraps before it closes; `None` without one.
fn quoted_subject(after_id: &str, next_lines: &[&str]) -> Option<String> {
    let rest = after_id.trim_start();
    let inner = rest.strip_prefix('(')?;
    let (open_quote, mut text) = match inner.strip_prefix('"') {
        Some(t) => (true, t.to_owned()),
        None => (false, inner.to_owned()),
    };
    let close = if open_quote { "\")" } else { ")" };
    // A wrapped line continues on the next ones; a trailer block ends at a blank line, so stop there.
    let mut more = next_lines.iter();
    loop {
        if let Some(end) = text.rfind(close) {
            text.truncate(end);
            break;
        }
        match more.next() {
            Some(l) if !l.trim().is_empty() && text.len() < 400 => {
                text.push(' ');
                text.push_str(l.trim());
            }
            // Unclosed: the text so far is the subject (some writers drop the closing parenthesis).
            _ => {
                let t = text.trim_end();
                text = t.strip_suffix('"').unwrap_or(t).to_owned();
                break;
            }
        }
    }
    let s = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!s.is_empty()).then_some(s)
}

/// The reverted commit's subject from git's `Revert "<subject>"` subject line.
fn reverted_subject(message: &str) -> Option<String> {
    let subject = crate::git::commit_subject(message);
    let inner = subject.strip_prefix("Revert \"")?.strip_suffix('"')?;
    (!inner.is_empty()).then(|| inner.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixes(hex: &str, subject: Option<&str>) -> CommitRef {
        CommitRef {
            kind: RefKind::Fixes,
            hex: Some(hex.to_owned()),
            subject: subject.map(str::to_owned),
        }
    }

    #[test]
    fn kernel_fixes_lines_with_and_without_subject() {
        let m = "x: fix\n\nBody.\n\nFixes: 1234567890AB (\"x: add y\")\nfixes: abcdef0\nSigned-off-by: A <a@b>\n";
        assert_eq!(
            commit_refs(m),
            vec![
                fixes("1234567890ab", Some("x: add y")),
                fixes("abcdef0", None)
            ]
        );
    }

    #[test]
    fn wrapped_and_odd_fixes_lines() {
        let m = "s\n\nFixes: commit 1234567890ab (\"x: a very long\n  subject that wraps\")\nFixes: 7654321 (no quotes)\n";
        assert_eq!(
            commit_refs(m),
            vec![
                fixes("1234567890ab", Some("x: a very long subject that wraps")),
                fixes("7654321", Some("no quotes")),
            ]
        );
        let m = "s\n\nFixes: 1234567890ab (\"x: \"quoted\" word\")\n";
        assert_eq!(
            commit_refs(m),
            vec![fixes("1234567890ab", Some("x: \"quoted\" word"))]
        );
        let m = "s\n\nFixes: 1234567890ab (\"unclosed\n\nSigned-off-by: A <a@b>\n";
        assert_eq!(
            commit_refs(m),
            vec![fixes("1234567890ab", Some("unclosed"))]
        );
    }

    #[test]
    fn issue_numbers_urls_and_short_runs_are_not_ids() {
        for m in [
            "s\n\nFixes: #1234\n",
            "s\n\nFixes: https://github.com/o/r/issues/1\n",
            "s\n\nFixes: 123456 (\"six digits\")\n",
            "s\n\nFixes: abcdef0xyz\n",
            "s\n\nThis fixes: nothing\n",
        ] {
            assert_eq!(commit_refs(m), vec![], "{m}");
        }
    }

    #[test]
    fn git_revert_messages() {
        let m = "Revert \"x: add y\"\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567.\n\nIt broke z.\n";
        assert_eq!(
            commit_refs(m),
            vec![CommitRef {
                kind: RefKind::Reverts,
                hex: Some("0123456789abcdef0123456789abcdef01234567".into()),
                subject: Some("x: add y".into()),
            }]
        );
        let m = "Revert \"Revert \"x\"\"\n\nThis reverts commit abcdef0123, reversing\nchanges made to 1234567890.\n";
        let r = commit_refs(m);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].hex.as_deref(), Some("abcdef0123"));
        assert_eq!(r[0].subject.as_deref(), Some("Revert \"x\""));
    }

    #[test]
    fn multibyte_text_never_panics() {
        for m in [
            "s\n\nFixes: é",
            "s\n\nFixé",
            "s\n\nFixes: 1234567 (\"修复",
            "Revert \"\"\n\nthis reverts commit 🐛",
            "s\n\nFIXES:1234567(\"Ω\")",
        ] {
            let _ = commit_refs(m);
        }
        assert_eq!(
            commit_refs("s\n\nFIXES:1234567(\"Ω\")"),
            vec![fixes("1234567", Some("Ω"))]
        );
    }
}
