//! Lines in a commit message that name the commit it was ported from.
//!
//! The six forms seen in real kernel trees:
//!
//! | form | written by |
//! | --- | --- |
//! | `(cherry picked from commit X)`, also opened on one line and closed after a repo URL on the next | `git cherry-pick -x`, Android `FROMGIT:` |
//! | `(cherry-picked from X)` | hand-written ports |
//! | `commit X upstream.` | stable kernel trees |
//! | `[ Upstream commit X ]` | Ubuntu/Debian kernels |
//! | `upstream commit X ("subject")` | vendor kernels, in prose |
//! | `(imported from commit X)` | imports from other trees |
//!
//! `Stable-dep-of: X` names a dependency, not an origin, and is ignored.

/// Which form named the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginForm {
    /// `(cherry picked from commit X)` (one or two lines).
    CherryPicked,
    /// `(cherry-picked from X)`.
    CherryPickedHyphen,
    /// `commit X upstream.`
    StableUpstream,
    /// `[ Upstream commit X ]`.
    BracketUpstream,
    /// `upstream commit X ("subject")` anywhere in a line.
    ProseUpstream,
    /// `(imported from commit X)`.
    Imported,
}

/// One origin named in a message: lower-case hex, 7 to 40 digits (an abbreviation matches by prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The named commit, lower-case hex.
    pub hex: String,
    /// The form that named it.
    pub form: OriginForm,
}

impl Origin {
    /// Whether this origin names the commit `full_hex` (40 hex digits, any case).
    pub fn names(&self, full_hex: &str) -> bool {
        full_hex
            .get(..self.hex.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(&self.hex))
    }
}

/// Normalizes a subject for matching (the *subject* rule; also used by `rerere train`): stacked vendor prefixes and `[PATCH …]` tags stripped, whitespace
/// collapsed.
pub fn normalize_subject(subject: &str) -> String {
    const PREFIXES: [&str; 6] = [
        "UPSTREAM:",
        "BACKPORT:",
        "FROMGIT:",
        "FROMLIST:",
        "ANDROID:",
        "CHROMIUM:",
    ];
    let mut s = subject.trim();
    loop {
        let before = s;
        for p in PREFIXES {
            if let Some(rest) = strip_prefix_ignore_ascii_case(s, p) {
                s = rest.trim_start();
            }
        }
        if let Some(rest) = strip_prefix_ignore_ascii_case(s, "[PATCH") {
            if let Some(end) = rest.find(']') {
                s = rest[end + 1..].trim_start();
            }
        }
        if s == before {
            break;
        }
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` without `prefix` (compared ignoring ASCII case), if it starts with it.
///
/// Never slices `s` by the prefix's length: subjects are arbitrary UTF-8, and a multi-byte character straddling
/// that length would make `s[..len]` panic (kernel subjects such as "ñ…" or "Ω…").
fn strip_prefix_ignore_ascii_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.as_bytes().get(..prefix.len())?;
    // An ASCII prefix matched byte for byte ends on a char boundary, so the slice below cannot split a character.
    head.eq_ignore_ascii_case(prefix.as_bytes())
        .then(|| &s[prefix.len()..])
}

/// Every origin named in `message`, in order.
pub fn origins(message: &str) -> Vec<Origin> {
    let mut out = Vec::new();
    for raw in message.lines() {
        let line = raw.trim().to_ascii_lowercase();
        if line.starts_with("stable-dep-of:") {
            continue;
        }
        let found = after(&line, "(cherry picked from commit ")
            .map(|h| (h, OriginForm::CherryPicked))
            .or_else(|| {
                after(&line, "(cherry-picked from commit ")
                    .or_else(|| after(&line, "(cherry-picked from "))
                    .map(|h| (h, OriginForm::CherryPickedHyphen))
            })
            .or_else(|| {
                line.strip_prefix("commit ").and_then(|rest| {
                    let hex = hex_prefix(rest)?;
                    rest[hex.len()..]
                        .trim_start()
                        .starts_with("upstream")
                        .then_some((hex, OriginForm::StableUpstream))
                })
            })
            .or_else(|| {
                line.strip_prefix('[')
                    .map(str::trim_start)
                    .and_then(|rest| rest.strip_prefix("upstream commit "))
                    .and_then(hex_prefix)
                    .map(|h| (h, OriginForm::BracketUpstream))
            })
            .or_else(|| after(&line, "(imported from commit ").map(|h| (h, OriginForm::Imported)))
            .or_else(|| after(&line, "upstream commit ").map(|h| (h, OriginForm::ProseUpstream)));
        if let Some((hex, form)) = found {
            out.push(Origin {
                hex: hex.to_owned(),
                form,
            });
        }
    }
    out
}

/// The hex run right after the first `marker` in `line`, if it is a plausible commit id.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let at = line.find(marker)?;
    hex_prefix(&line[at + marker.len()..])
}

/// A run of 7–40 hex digits at the start of `s`, ended by a non-hex character or the end.
fn hex_prefix(s: &str) -> Option<&str> {
    let len = s.bytes().take_while(u8::is_ascii_hexdigit).count();
    let ends_cleanly = s[len..]
        .chars()
        .next()
        .is_none_or(|c| !c.is_ascii_alphanumeric());
    ((7..=40).contains(&len) && ends_cleanly).then(|| &s[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: &str = "0123456789abcdef0123456789abcdef01234567";

    fn one(message: &str) -> Option<(String, OriginForm)> {
        let v = origins(message);
        assert!(v.len() <= 1, "{v:?}");
        v.into_iter().next().map(|o| (o.hex, o.form))
    }

    #[test]
    fn all_six_forms() {
        let cases = [
            (format!("s\n\n(cherry picked from commit {X})\n"), OriginForm::CherryPicked),
            (
                format!("FROMGIT: s\n\n(cherry picked from commit {X}\n https://git.kernel.org/pub/scm/linux/kernel/git/perf/perf-tools-next.git perf-tools-next)\n"),
                OriginForm::CherryPicked,
            ),
            (format!("s\n\n(cherry-picked from {X})\n"), OriginForm::CherryPickedHyphen),
            (format!("s\n\ncommit {X} upstream.\n\nbody\n"), OriginForm::StableUpstream),
            (format!("s\n\n[ Upstream commit {X} ]\n"), OriginForm::BracketUpstream),
            (format!("s\n\nThis backports upstream commit {X} (\"perf: fix\").\n"), OriginForm::ProseUpstream),
            (format!("s\n\n(imported from commit {X})\n"), OriginForm::Imported),
        ];
        for (message, form) in cases {
            assert_eq!(one(&message), Some((X.to_owned(), form)), "{message}");
        }
    }

    #[test]
    fn abbreviations_match_by_prefix_and_upper_case_is_fine() {
        let o = origins("s\n\ncommit 0123456789AB upstream.\n");
        assert_eq!(o[0].hex, "0123456789ab");
        assert!(o[0].names(X));
        assert!(!o[0].names("f123456789abcdef0123456789abcdef01234567"));
    }

    #[test]
    fn stable_dep_of_and_non_hex_are_not_origins() {
        assert_eq!(one(&format!("s\n\nStable-dep-of: {X} (\"x\")\n")), None);
        assert_eq!(one("s\n\n(cherry picked from commit nothex)\n"), None);
        assert_eq!(one("s\n\ncommit 0123456 is broken upstream\n"), None);
        assert_eq!(
            one("s\n\ncommit 012345 upstream.\n"),
            None,
            "6 digits is too short to be an id"
        );
    }
}
