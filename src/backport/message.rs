//! The message of a picked commit, byte for byte as `git cherry-pick` writes it.
//!
//! git's sequencer starts from the original message, appends `(cherry picked from commit …)` for `-x` and a
//! `Signed-off-by` for `-s` (into the message's trailer block when it ends in one, after a blank line otherwise),
//! then cleans the message up. Which clean-up depends on how the commit is made:
//!
//! - a clean pick is committed in-process: verbatim, unless `-x` or `-s` was given (then whitespace clean-up:
//!   trailing blanks, CR included, go; runs of blank lines collapse; leading and trailing blank lines go), or
//!   `commit.cleanup` names a mode (`verbatim`, `whitespace`, `strip`, `scissors`; scissors acts as whitespace here);
//! - a pick that stopped at a conflict is committed at `--continue` by `git commit --cleanup=strip`, which also drops
//!   every line that starts with the comment string (`core.commentChar`, `#` by default), so lines of the original
//!   message that start with it are lost there too.
//!
//! Trailer blocks are found as git's trailer.c finds them: the last paragraph after the title, when every line is a
//! trailer, or when it holds a git-generated line (`Signed-off-by: `, `(cherry picked from commit `) and at least a
//! quarter of its lines are trailers; trailing comment or blank lines are not part of the message for that search
//! (a `---` line is, as `has_conforming_footer` reads it).

use git2::Repository;

/// `commit.cleanup`, when the repository's config sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// `verbatim`: the message as it is.
    Verbatim,
    /// `whitespace`: blank-line and trailing-space clean-up.
    Whitespace,
    /// `strip`: whitespace clean-up, and comment lines removed.
    Strip,
    /// `scissors`: as `whitespace` for a commit made without an editor.
    Scissors,
}

/// How the repository's config shapes commit messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageRules {
    /// `commit.cleanup`, if set.
    pub cleanup: Option<Cleanup>,
    /// `core.commentString` / `core.commentChar` (`#` by default; `auto` is taken as `#`).
    pub comment: String,
}

impl Default for MessageRules {
    fn default() -> Self {
        MessageRules {
            cleanup: None,
            comment: "#".into(),
        }
    }
}

impl MessageRules {
    /// Reads `commit.cleanup` and the comment string from the repository's config. An unknown clean-up mode is
    /// ignored, as git ignores it (with a warning) for cherry-pick.
    pub fn from_config(repo: &Repository) -> MessageRules {
        let Ok(config) = repo.config() else {
            return MessageRules::default();
        };
        let cleanup = match config.get_string("commit.cleanup").ok().as_deref() {
            Some("verbatim") => Some(Cleanup::Verbatim),
            Some("whitespace") => Some(Cleanup::Whitespace),
            Some("strip") => Some(Cleanup::Strip),
            Some("scissors") => Some(Cleanup::Scissors),
            _ => None,
        };
        let comment = config
            .get_string("core.commentstring")
            .or_else(|_| config.get_string("core.commentchar"))
            .ok()
            .filter(|c| !c.is_empty() && c != "auto")
            .unwrap_or_else(|| "#".into());
        MessageRules { cleanup, comment }
    }
}

/// How the picked commit is being made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Made {
    /// A clean pick.
    Clean,
    /// A pick that stopped at a conflict, committed at `--continue` (or after recorded resolutions resolved it).
    AfterConflict,
}

/// The message for picking a commit whose message is `original` (`oid_hex` = its full id).
pub fn picked_message(
    original: &str,
    oid_hex: &str,
    record_origin: bool,
    signoff: Option<&str>,
    rules: &MessageRules,
    made: Made,
) -> String {
    // `find_commit_subject`: the message starts at its first line that is not blank.
    let mut start = 0;
    for line in original.split_inclusive('\n') {
        if !line.ends_with('\n') || !is_blank_line(line) {
            break;
        }
        start += line.len();
    }
    let mut msg = original[start..].to_owned();
    if record_origin {
        complete_line(&mut msg);
        if trailer_count(&msg, &rules.comment) == 0 {
            msg.push('\n');
        }
        msg.push_str(&format!("(cherry picked from commit {oid_hex})\n"));
    }
    if let Some(sob) = signoff {
        add_signoff(&mut msg, sob, &rules.comment);
    }
    let comments = match made {
        Made::AfterConflict => Some(rules.comment.as_str()),
        Made::Clean => match rules.cleanup {
            Some(Cleanup::Verbatim) => return msg,
            Some(Cleanup::Strip) => Some(rules.comment.as_str()),
            Some(Cleanup::Whitespace | Cleanup::Scissors) => None,
            None if record_origin || signoff.is_some() => None,
            None => return msg,
        },
    };
    stripspace(&msg, comments)
}

/// Appends `sob` (a whole `Signed-off-by: Name <email>` line) as git's `append_signoff` does: not when it is
/// already the last trailer; into the trailer block when there is one, else after a blank line.
pub fn add_signoff(msg: &mut String, sob: &str, comment: &str) {
    complete_line(msg);
    let line = format!("{sob}\n");
    let footer = if *msg == line {
        Footer::SobLast
    } else {
        footer(msg, &line, comment)
    };
    if footer == Footer::None {
        let bytes = msg.as_bytes();
        let len = bytes.len();
        if len == 0 {
            msg.push_str("\n\n");
        } else if len == 1 || bytes[len - 2] != b'\n' {
            msg.push('\n');
        }
    }
    if footer != Footer::SobLast {
        msg.push_str(&line);
    }
}

fn complete_line(msg: &mut String) {
    if !msg.is_empty() && !msg.ends_with('\n') {
        msg.push('\n');
    }
}

/// git's `isspace`: space, tab, LF and CR only.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `strbuf_stripspace`: trailing whitespace off every line, runs of blank lines collapsed to one, blank lines at
/// the start and end removed, a final newline; with `comments`, lines starting with it are dropped first.
pub fn stripspace(msg: &str, comments: Option<&str>) -> String {
    let mut out = String::with_capacity(msg.len() + 1);
    let mut empties = 0usize;
    for line in msg.split_inclusive('\n') {
        if comments.is_some_and(|c| line.starts_with(c)) {
            continue;
        }
        let kept = line.trim_end_matches(|c: char| c.is_ascii() && is_space(c as u8));
        if kept.is_empty() {
            empties += 1;
            continue;
        }
        if empties > 0 && !out.is_empty() {
            out.push('\n');
        }
        empties = 0;
        out.push_str(kept);
        out.push('\n');
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Footer {
    None,
    Some,
    SobLast,
}

/// `has_conforming_footer` with a sign-off line to look for: whether the message has a trailer block, and whether
/// `sob` (with its newline) is its last trailer.
fn footer(msg: &str, sob: &str, comment: &str) -> Footer {
    let trailers = trailers(msg, comment);
    match trailers.last() {
        None => Footer::None,
        Some(last) if last.starts_with(sob) => Footer::SobLast,
        Some(_) => Footer::Some,
    }
}

fn trailer_count(msg: &str, comment: &str) -> usize {
    trailers(msg, comment).len()
}

/// The trailer block's entries, as trailer.c's `trailer_info_get` splits them for `has_conforming_footer` (which
/// reads no `---` divider): one per line, a line starting with whitespace joined to an entry before it that has a
/// separator.
fn trailers(msg: &str, comment: &str) -> Vec<String> {
    let end = msg.len() - ignored_bytes(msg, comment);
    let start = trailer_block_start(&msg[..end], comment);
    let mut out: Vec<String> = Vec::new();
    let mut last: Option<usize> = None;
    for line in msg[start..end].split_inclusive('\n') {
        if let Some(i) = last {
            if line.as_bytes().first().is_some_and(|&b| is_space(b)) {
                out[i].push_str(line);
                continue;
            }
        }
        last = find_separator(line).filter(|&p| p >= 1).map(|_| out.len());
        out.push(line.to_owned());
    }
    out
}

fn is_blank_line(line: &str) -> bool {
    line.bytes()
        .take_while(|&b| b != b'\n')
        .all(|b| b.is_ascii() && is_space(b))
}

/// trailer.c's `find_separator` with `:` as the only separator: the position of the `:` ending a token of
/// alphanumerics and dashes (spaces allowed after the token), or none.
fn find_separator(line: &str) -> Option<usize> {
    let mut whitespace_found = false;
    for (i, b) in line.bytes().enumerate() {
        if b == b':' {
            return Some(i);
        }
        if !whitespace_found && (b.is_ascii_alphanumeric() || b == b'-') {
            continue;
        }
        if i != 0 && (b == b' ' || b == b'\t') {
            whitespace_found = true;
            continue;
        }
        break;
    }
    None
}

const GIT_GENERATED: [&str; 2] = ["Signed-off-by: ", "(cherry picked from commit "];

/// What trails the message proper: trailing comment and blank lines (and an old-style `Conflicts:` block), or
/// everything from a scissors line (`commit.c`'s `ignored_log_message_bytes`).
fn ignored_bytes(buf: &str, comment: &str) -> usize {
    let len = buf.len();
    let cut = format!("{comment} ------------------------ >8 ------------------------");
    let cutoff = if buf.starts_with(&cut) {
        0
    } else if let Some(p) = buf.find(&format!("\n{cut}")) {
        (p + 1).min(len)
    } else {
        len
    };
    let mut boc = 0usize;
    let mut in_conflicts = false;
    let mut bol = 0usize;
    while bol < cutoff {
        let rest = &buf[bol..];
        let next = rest.find('\n').map_or(len, |i| bol + i + 1);
        if buf[bol..cutoff].starts_with(comment) || rest.starts_with('\n') {
            if boc == 0 {
                boc = bol;
            }
        } else if rest.starts_with("Conflicts:\n") {
            in_conflicts = true;
            if boc == 0 {
                boc = bol;
            }
        } else if in_conflicts && rest.starts_with('\t') {
        } else if boc != 0 {
            boc = 0;
            in_conflicts = false;
        }
        bol = next;
    }
    if boc != 0 {
        len - boc
    } else {
        len - cutoff
    }
}

/// trailer.c's `find_trailer_block_start`: the offset of the first line of the trailer block, or `buf.len()`.
fn trailer_block_start(buf: &str, comment: &str) -> usize {
    let len = buf.len();
    // Line starts, so the block can be searched from the end.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            buf.match_indices('\n')
                .map(|(i, _)| i + 1)
                .filter(|&i| i < len),
        )
        .filter(|_| len > 0)
        .collect();
    let mut end_of_title = len;
    for &s in &starts {
        let line = &buf[s..];
        if line.starts_with(comment) {
            continue;
        }
        if is_blank_line(line) {
            end_of_title = s;
            break;
        }
    }
    let mut only_spaces = true;
    let mut recognized_prefix = false;
    let (mut trailer_lines, mut non_trailer_lines, mut possible_continuation) =
        (0usize, 0usize, 0usize);
    for (k, &l) in starts.iter().enumerate().rev() {
        if l < end_of_title {
            break;
        }
        let line = &buf[l..];
        let next_line = starts.get(k + 1).copied().unwrap_or(len);
        if line.starts_with(comment) {
            non_trailer_lines += possible_continuation;
            possible_continuation = 0;
            continue;
        }
        if is_blank_line(line) {
            if only_spaces {
                continue;
            }
            non_trailer_lines += possible_continuation;
            let quarter = recognized_prefix && trailer_lines * 3 >= non_trailer_lines;
            let all = trailer_lines > 0 && non_trailer_lines == 0;
            return if quarter || all { next_line } else { len };
        }
        only_spaces = false;
        if GIT_GENERATED.iter().any(|p| line.starts_with(p)) {
            trailer_lines += 1;
            possible_continuation = 0;
            recognized_prefix = true;
            continue;
        }
        let first_is_space = line.as_bytes().first().is_some_and(|&b| is_space(b));
        if find_separator(line).is_some_and(|p| p >= 1) && !first_is_space {
            trailer_lines += 1;
            possible_continuation = 0;
        } else if first_is_space {
            possible_continuation += 1;
        } else {
            non_trailer_lines += 1 + possible_continuation;
            possible_continuation = 0;
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: &str = "0123456789abcdef0123456789abcdef01234567";
    const SOB: &str = "Signed-off-by: A U Thor <a@example.com>";

    fn pick(msg: &str, x: bool, sob: Option<&str>) -> String {
        picked_message(msg, X, x, sob, &MessageRules::default(), Made::Clean)
    }

    #[test]
    fn origin_goes_after_a_blank_line_or_into_the_trailer_block() {
        assert_eq!(
            pick("subject\n\nbody\n", true, None),
            format!("subject\n\nbody\n\n(cherry picked from commit {X})\n")
        );
        assert_eq!(
            pick("subject\n\nbody\n\nSigned-off-by: B <b@x>\n", true, None),
            format!("subject\n\nbody\n\nSigned-off-by: B <b@x>\n(cherry picked from commit {X})\n")
        );
        assert_eq!(
            pick("subject", true, None),
            format!("subject\n\n(cherry picked from commit {X})\n")
        );
    }

    #[test]
    fn signoff_is_not_repeated_when_last() {
        let once = pick("s\n", false, Some(SOB));
        assert_eq!(once, format!("s\n\n{SOB}\n"));
        assert_eq!(pick(&once, false, Some(SOB)), once);
        assert_eq!(
            pick("s\n", true, Some(SOB)),
            format!("s\n\n(cherry picked from commit {X})\n{SOB}\n")
        );
    }

    #[test]
    fn without_x_or_s_the_message_is_verbatim_and_with_them_cleaned() {
        let raw = "subject  \r\n\r\n\r\nbody\t\r\n\n\n";
        assert_eq!(pick(raw, false, None), raw);
        assert_eq!(
            pick(raw, true, None),
            format!("subject\n\nbody\n\n(cherry picked from commit {X})\n")
        );
    }

    #[test]
    fn after_a_conflict_comment_lines_go_too() {
        let m = picked_message(
            "subject\n\n# not a comment to the author\nbody\n",
            X,
            false,
            None,
            &MessageRules::default(),
            Made::AfterConflict,
        );
        assert_eq!(m, "subject\n\nbody\n");
    }

    #[test]
    fn trailer_blocks_as_git_finds_them() {
        // A block with a git-generated line needs a quarter of trailers; without one, all.
        assert_eq!(trailer_count("s\n\nbody\n\nFixes: x\nnot one\n", "#"), 0);
        assert_eq!(
            trailer_count("s\n\nbody\n\nSigned-off-by: a\nnot one\nnot two\n", "#"),
            3
        );
        assert_eq!(
            trailer_count("s\n\nKey: v\n  continued\nOther: w\n", "#"),
            2
        );
        // The title paragraph is never a trailer block; a divider ends the message.
        assert_eq!(trailer_count("Key: v\n", "#"), 0);
        // has_conforming_footer reads no `---` divider.
        assert_eq!(trailer_count("s\n\nKey: v\n---\nnot: this\n", "#"), 0);
        assert_eq!(trailer_count("s\n\nbody\n\nKey: v\n# comment\n\n", "#"), 1);
        // CRLF lines: "\r" is whitespace, so a CR-only line is blank.
        assert_eq!(trailer_count("s\r\n\r\nbody\r\n\r\nKey: v\r\n", "#"), 1);
    }
}
