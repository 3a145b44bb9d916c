//! xdl_merge (xmerge.c): a three-way line merge that renders conflicts exactly as git does, so the conflict
//! text, and therefore the rerere id, is git's.
//!
//! Steps, as in git: diff base→ours and base→theirs; walk both scripts, taking one-sided changes and marking
//! overlapping ones as conflicts (identical ones are clean at level ≥ eager); at the zealous level re-diff each
//! conflict's two sides to shrink it to the lines that really differ, then join conflicts separated by three
//! or fewer lines; finally print, with the end-of-line style of the surrounding lines on marker lines.

use super::{diff, diff_both, split_lines, Algorithm, Change};

/// How eagerly overlapping changes are resolved (xdiff's `XDL_MERGE_*` levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Every overlap is a conflict.
    Minimal,
    /// Identical overlapping changes are clean.
    Eager,
    /// Conflicts are refined to the lines that differ (what git's merges use).
    Zealous,
    /// As zealous, also joining conflicts separated only by lines without letters or digits.
    ZealousAlnum,
}

/// How a conflict is printed (`merge.conflictStyle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Style {
    /// `<<<<<<<`, ours, `=======`, theirs, `>>>>>>>`.
    #[default]
    Merge,
    /// As merge, plus the base between `|||||||` and `=======`; no refinement.
    Diff3,
    /// diff3 with the lines common to both sides at the start and end moved out of the conflict.
    Zdiff3,
}

impl Style {
    /// Parses a `merge.conflictStyle` value; unknown values give `None` (git warns and uses merge).
    pub fn from_config(value: &str) -> Option<Style> {
        match value {
            "merge" => Some(Style::Merge),
            "diff3" => Some(Style::Diff3),
            "zdiff3" => Some(Style::Zdiff3),
            _ => None,
        }
    }
}

/// Which side wins a conflicting hunk (`-X ours|theirs`, `merge=union`); git's `XDL_MERGE_FAVOR_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Favor {
    /// Take our side of each conflict.
    Ours,
    /// Take their side.
    Theirs,
    /// Take both, ours first.
    Union,
}

/// What to merge with and how to print conflicts.
#[derive(Clone, Debug)]
pub struct MergeOptions {
    /// The diff algorithm for both base→side scripts and for refinement.
    pub algorithm: Algorithm,
    /// Conflict style.
    pub style: Style,
    /// Merge level; git's content merges use [`Level::Zealous`].
    pub level: Level,
    /// Length of the marker runs (`conflict-marker-size`, default 7).
    pub marker_size: usize,
    /// Label after `<<<<<<<` (empty: none).
    pub ours_label: String,
    /// Label after `>>>>>>>` (empty: none).
    pub theirs_label: String,
    /// Label after `|||||||` (empty: none).
    pub base_label: String,
    /// Resolve conflicting hunks in favour of a side instead of writing markers.
    pub favor: Option<Favor>,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            algorithm: Algorithm::Histogram,
            style: Style::Merge,
            level: Level::Zealous,
            marker_size: 7,
            ours_label: String::new(),
            theirs_label: String::new(),
            base_label: String::new(),
            favor: None,
        }
    }
}

/// The merged text and how many conflict hunks it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeOutput {
    /// The result, with conflict markers where needed.
    pub content: Vec<u8>,
    /// Number of conflict hunks (0 = clean).
    pub conflicts: usize,
}

#[derive(Clone, Copy, Debug)]
struct Hunk {
    /// 0 conflict, 1 ours, 2 theirs, 3 both, 4 identical after refinement.
    mode: u8,
    // Signed, as in xdiff: positions computed from the other side's script go negative transiently and are
    // folded back by `append`.
    i0: isize,
    chg0: isize,
    i1: isize,
    chg1: isize,
    i2: isize,
    chg2: isize,
}

/// The signed form of a script hunk.
#[derive(Clone, Copy)]
struct SChange {
    i1: isize,
    i2: isize,
    chg1: isize,
    chg2: isize,
}

impl From<Change> for SChange {
    fn from(c: Change) -> Self {
        SChange {
            i1: c.i1 as isize,
            i2: c.i2 as isize,
            chg1: c.chg1 as isize,
            chg2: c.chg2 as isize,
        }
    }
}

/// `lines[start..start+len]`, clamped to the file so that inconsistent input can never panic.
fn range<'a, 'b>(lines: &'b [&'a [u8]], start: isize, len: isize) -> &'b [&'a [u8]] {
    let n = lines.len() as isize;
    let a = start.clamp(0, n);
    let b = (start + len.max(0)).clamp(a, n);
    &lines[a as usize..b as usize]
}

/// Merges `ours` and `theirs` against `base` the way `xdl_merge` does.
pub fn merge(base: &[u8], ours: &[u8], theirs: &[u8], opts: &MergeOptions) -> MergeOutput {
    let l0 = split_lines(base);
    let l1 = split_lines(ours);
    let l2 = split_lines(theirs);
    let (s1, s2) = diff_both(&l0, &l1, &l2, opts.algorithm);
    if s1.is_empty() {
        return MergeOutput {
            content: theirs.to_vec(),
            conflicts: 0,
        };
    }
    if s2.is_empty() {
        return MergeOutput {
            content: ours.to_vec(),
            conflicts: 0,
        };
    }
    let mut level = opts.level;
    if matches!(opts.style, Style::Diff3 | Style::Zdiff3) && level > Level::Eager {
        // "diff3 -m" output makes no sense for anything more aggressive than eager.
        level = Level::Eager;
    }
    let mut hunks = combine(&s1, &s2, &l0, &l1, &l2, level);
    if opts.style == Style::Zdiff3 {
        refine_zdiff3(&mut hunks, &l1, &l2);
    } else if level >= Level::Zealous {
        hunks = refine_conflicts(hunks, &l1, &l2, opts.algorithm);
        simplify_non_conflicts(&mut hunks, &l1, level > Level::Zealous);
    }
    if let Some(favor) = opts.favor {
        // xdl_fill_merge_buffer: a favoured conflict becomes a clean hunk of that side (or both).
        let mode = match favor {
            Favor::Ours => 1,
            Favor::Theirs => 2,
            Favor::Union => 3,
        };
        for h in hunks.iter_mut().filter(|h| h.mode == 0) {
            h.mode = mode;
        }
    }
    let conflicts = hunks.iter().filter(|h| h.mode == 0).count();
    let content = fill(&hunks, &l0, &l1, &l2, opts);
    MergeOutput { content, conflicts }
}

/// xdl_append_merge: a hunk touching or overlapping the previous one joins it.
fn append(hunks: &mut Vec<Hunk>, h: Hunk) {
    if let Some(m) = hunks.last_mut() {
        if h.i1 <= m.i1 + m.chg1 || h.i2 <= m.i2 + m.chg2 {
            if h.mode != m.mode {
                m.mode = 0;
            }
            m.chg0 = h.i0 + h.chg0 - m.i0;
            m.chg1 = h.i1 + h.chg1 - m.i1;
            m.chg2 = h.i2 + h.chg2 - m.i2;
            return;
        }
    }
    hunks.push(h);
}

/// The main walk of xdl_do_merge over both edit scripts: a change of one side that ends before the other
/// side's next starts is taken as it is; overlapping ones make a conflict unless they are identical (and the
/// level is above minimal); what is left of either script after the other ends is taken.
fn combine(
    s1: &[Change],
    s2: &[Change],
    l0: &[&[u8]],
    l1: &[&[u8]],
    l2: &[&[u8]],
    level: Level,
) -> Vec<Hunk> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let (mut x1, mut x2) = (0usize, 0usize);
    let (n0, n1, n2) = (l0.len() as isize, l1.len() as isize, l2.len() as isize);
    while x1 < s1.len() && x2 < s2.len() {
        let c1 = SChange::from(s1[x1]);
        let c2 = SChange::from(s2[x2]);
        if c1.i1 + c1.chg1 < c2.i1 {
            append(&mut hunks, Hunk::ours(c1, c2.i2 - c2.i1 + c1.i1));
            x1 += 1;
            continue;
        }
        if c2.i1 + c2.chg1 < c1.i1 {
            append(&mut hunks, Hunk::theirs(c2, c1.i2 - c1.i1 + c2.i1));
            x2 += 1;
            continue;
        }
        let identical = c1.i1 == c2.i1
            && c1.chg1 == c2.chg1
            && c1.chg2 == c2.chg2
            && range(l1, c1.i2, c1.chg2) == range(l2, c2.i2, c2.chg2);
        if level == Level::Minimal || !identical {
            append(&mut hunks, Hunk::conflict(c1, c2));
        }
        let e1 = c1.i1 + c1.chg1;
        let e2 = c2.i1 + c2.chg1;
        if e1 >= e2 {
            x2 += 1;
        }
        if e2 >= e1 {
            x1 += 1;
        }
    }
    for &c1 in &s1[x1..] {
        let c1 = SChange::from(c1);
        append(&mut hunks, Hunk::ours(c1, c1.i1 + n2 - n0));
    }
    for &c2 in &s2[x2..] {
        let c2 = SChange::from(c2);
        append(&mut hunks, Hunk::theirs(c2, c2.i1 + n1 - n0));
    }
    hunks
}

impl Hunk {
    /// Our change `c` (base→ours) alone, at line `i2` of theirs.
    fn ours(c: SChange, i2: isize) -> Hunk {
        Hunk {
            mode: 1,
            i0: c.i1,
            chg0: c.chg1,
            i1: c.i2,
            chg1: c.chg2,
            i2,
            chg2: c.chg1,
        }
    }

    /// Their change `c` (base→theirs) alone, at line `i1` of ours.
    fn theirs(c: SChange, i1: isize) -> Hunk {
        Hunk {
            mode: 2,
            i0: c.i1,
            chg0: c.chg1,
            i1,
            chg1: c.chg1,
            i2: c.i2,
            chg2: c.chg2,
        }
    }

    /// The conflict of two overlapping changes: each side's range widened by what the other change covers of
    /// the base beyond it, at either end.
    fn conflict(c1: SChange, c2: SChange) -> Hunk {
        let off = c1.i1 - c2.i1;
        let ffo = off + c1.chg1 - c2.chg1;
        let (mut i0, mut i1, mut i2) = (c1.i1, c1.i2, c2.i2);
        if off > 0 {
            i0 -= off;
            i1 -= off;
        } else {
            i2 += off;
        }
        let mut chg0 = c1.i1 + c1.chg1 - i0;
        let mut chg1 = c1.i2 + c1.chg2 - i1;
        let mut chg2 = c2.i2 + c2.chg2 - i2;
        if ffo < 0 {
            chg0 -= ffo;
            chg1 -= ffo;
        } else {
            chg2 += ffo;
        }
        Hunk {
            mode: 0,
            i0,
            chg0,
            i1,
            chg1,
            i2,
            chg2,
        }
    }
}

/// Line `i`, or `None` outside the file.
fn line<'a>(lines: &[&'a [u8]], i: isize) -> Option<&'a [u8]> {
    usize::try_from(i).ok().and_then(|i| lines.get(i).copied())
}

/// xdl_refine_zdiff3_conflicts: move lines common to both sides at a conflict's start and end out of it.
fn refine_zdiff3(hunks: &mut [Hunk], l1: &[&[u8]], l2: &[&[u8]]) {
    for m in hunks.iter_mut().filter(|m| m.mode == 0) {
        while m.chg1 > 0 && m.chg2 > 0 && line(l1, m.i1) == line(l2, m.i2) {
            m.chg1 -= 1;
            m.chg2 -= 1;
            m.i1 += 1;
            m.i2 += 1;
        }
        while m.chg1 > 0 && m.chg2 > 0 && line(l1, m.i1 + m.chg1 - 1) == line(l2, m.i2 + m.chg2 - 1)
        {
            m.chg1 -= 1;
            m.chg2 -= 1;
        }
    }
}

/// xdl_refine_conflicts: diff the two sides of each conflict and keep only the hunks where they differ.
fn refine_conflicts(hunks: Vec<Hunk>, l1: &[&[u8]], l2: &[&[u8]], alg: Algorithm) -> Vec<Hunk> {
    let mut out = Vec::with_capacity(hunks.len());
    for mut m in hunks {
        if m.mode != 0 || m.chg1 == 0 || m.chg2 == 0 {
            out.push(m);
            continue;
        }
        let t1 = range(l1, m.i1, m.chg1);
        let t2 = range(l2, m.i2, m.chg2);
        let script = diff(t1, t2, alg);
        if script.is_empty() {
            m.mode = 4;
            out.push(m);
            continue;
        }
        let (i1, i2) = (m.i1, m.i2);
        for x in script {
            // The base range stays the whole original conflict's, as in git (only diff3 prints it).
            out.push(Hunk {
                mode: 0,
                i1: x.i1 as isize + i1,
                chg1: x.chg1 as isize,
                i2: x.i2 as isize + i2,
                chg2: x.chg2 as isize,
                ..m
            });
        }
    }
    out
}

fn lines_contain_alnum(lines: &[&[u8]]) -> bool {
    lines
        .iter()
        .any(|l| l.iter().any(|b| b.is_ascii_alphanumeric()))
}

/// xdl_simplify_non_conflicts: conflicts separated by three lines or fewer become one.
fn simplify_non_conflicts(hunks: &mut Vec<Hunk>, l1: &[&[u8]], simplify_if_no_alnum: bool) {
    let mut i = 0;
    while i + 1 < hunks.len() {
        let (m, next) = (hunks[i], hunks[i + 1]);
        let begin = m.i1 + m.chg1;
        let end = next.i1;
        if m.mode != 0
            || next.mode != 0
            || (end - begin > 3
                && (!simplify_if_no_alnum || lines_contain_alnum(range(l1, begin, end - begin))))
        {
            i += 1;
        } else {
            let merged = &mut hunks[i];
            merged.chg1 = next.i1 + next.chg1 - merged.i1;
            merged.chg2 = next.i2 + next.chg2 - merged.i2;
            hunks.remove(i + 1);
        }
    }
}

/// is_eol_crlf: 1 CRLF, 0 LF, -1 unknown, for line `i` (or the line before a last line without newline).
fn is_eol_crlf(lines: &[&[u8]], i: isize) -> i8 {
    let crlf = |l: &[u8]| (l.len() > 1 && l[l.len() - 2] == b'\r') as i8;
    let n = lines.len() as isize;
    if i < n - 1 {
        return line(lines, i).map_or(0, crlf);
    }
    if n == 0 {
        return -1;
    }
    let Some(last) = line(lines, i) else {
        return -1;
    };
    if last.last() == Some(&b'\n') {
        return crlf(last);
    }
    if i == 0 {
        return -1;
    }
    line(lines, i - 1).map_or(0, crlf)
}

fn is_cr_needed(l0: &[&[u8]], l1: &[&[u8]], l2: &[&[u8]], m: &Hunk) -> bool {
    let mut needs = is_eol_crlf(l1, if m.i1 > 0 { m.i1 - 1 } else { 0 });
    if needs != 0 {
        needs = is_eol_crlf(l2, if m.i2 > 0 { m.i2 - 1 } else { 0 });
    }
    if needs != 0 {
        needs = is_eol_crlf(l0, 0);
    }
    needs > 0
}

/// xdl_recs_copy: copies lines; with `add_nl`, a last line without newline gets one (CRLF if `needs_cr`).
fn copy(out: &mut Vec<u8>, lines: &[&[u8]], needs_cr: bool, add_nl: bool) {
    for l in lines {
        out.extend_from_slice(l);
    }
    if add_nl {
        if let Some(last) = lines.last() {
            if last.last() != Some(&b'\n') {
                if needs_cr {
                    out.push(b'\r');
                }
                out.push(b'\n');
            }
        }
    }
}

fn marker(out: &mut Vec<u8>, ch: u8, size: usize, label: &str, needs_cr: bool) {
    out.extend(std::iter::repeat_n(ch, size));
    if !label.is_empty() {
        out.push(b' ');
        out.extend_from_slice(label.as_bytes());
    }
    if needs_cr {
        out.push(b'\r');
    }
    out.push(b'\n');
}

/// xdl_fill_merge_buffer.
fn fill(hunks: &[Hunk], l0: &[&[u8]], l1: &[&[u8]], l2: &[&[u8]], opts: &MergeOptions) -> Vec<u8> {
    let size = if opts.marker_size == 0 {
        7
    } else {
        opts.marker_size
    };
    let mut out = Vec::new();
    let mut i: isize = 0;
    for m in hunks {
        if m.mode == 0 {
            let needs_cr = is_cr_needed(l0, l1, l2, m);
            copy(&mut out, range(l1, i, m.i1 - i), false, false);
            marker(&mut out, b'<', size, &opts.ours_label, needs_cr);
            copy(&mut out, range(l1, m.i1, m.chg1), needs_cr, true);
            if matches!(opts.style, Style::Diff3 | Style::Zdiff3) {
                marker(&mut out, b'|', size, &opts.base_label, needs_cr);
                copy(&mut out, range(l0, m.i0, m.chg0), needs_cr, true);
            }
            marker(&mut out, b'=', size, "", needs_cr);
            copy(&mut out, range(l2, m.i2, m.chg2), needs_cr, true);
            marker(&mut out, b'>', size, &opts.theirs_label, needs_cr);
        } else if m.mode & 3 != 0 {
            copy(&mut out, range(l1, i, m.i1 - i), false, false);
            if m.mode & 1 != 0 {
                let needs_cr = is_cr_needed(l0, l1, l2, m);
                copy(&mut out, range(l1, m.i1, m.chg1), needs_cr, m.mode & 2 != 0);
            }
            if m.mode & 2 != 0 {
                copy(&mut out, range(l2, m.i2, m.chg2), false, false);
            }
        } else {
            continue;
        }
        i = m.i1 + m.chg1;
    }
    copy(&mut out, range(l1, i, l1.len() as isize - i), false, false);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labelled() -> MergeOptions {
        MergeOptions {
            ours_label: "ours".into(),
            theirs_label: "theirs".into(),
            base_label: "base".into(),
            ..MergeOptions::default()
        }
    }

    #[test]
    fn one_sided_changes_merge_cleanly() {
        let out = merge(b"a\nb\nc\n", b"A\nb\nc\n", b"a\nb\nC\n", &labelled());
        assert_eq!(out.content, b"A\nb\nC\n");
        assert_eq!(out.conflicts, 0);
    }

    #[test]
    fn refinement_keeps_only_differing_lines() {
        let out = merge(
            b"a\nb\nc\n",
            b"a\nx\nB1\ny\nc\n",
            b"a\nx\nB2\ny\nc\n",
            &labelled(),
        );
        assert_eq!(
            String::from_utf8(out.content).unwrap(),
            "a\nx\n<<<<<<< ours\nB1\n=======\nB2\n>>>>>>> theirs\ny\nc\n"
        );
        assert_eq!(out.conflicts, 1);
    }

    #[test]
    fn diff3_shows_the_base_and_crlf_markers_follow_the_lines() {
        let opts = MergeOptions {
            style: Style::Diff3,
            ..labelled()
        };
        let out = merge(b"a\r\nb\r\n", b"a\r\nB1\r\n", b"a\r\nB2\r\n", &opts);
        assert_eq!(
            String::from_utf8(out.content).unwrap(),
            "a\r\n<<<<<<< ours\r\nB1\r\n||||||| base\r\nb\r\n=======\r\nB2\r\n>>>>>>> theirs\r\n"
        );
    }

    #[test]
    fn a_missing_final_newline_is_added_inside_the_conflict() {
        let out = merge(b"a\nb", b"a\nB1", b"a\nB2", &labelled());
        assert_eq!(
            String::from_utf8(out.content).unwrap(),
            "a\n<<<<<<< ours\nB1\n=======\nB2\n>>>>>>> theirs\n"
        );
    }
}
