//! A port of the parts of git's xdiff that decide how a conflict is rendered: line records, the Myers and
//! histogram diffs, change compaction, and the three-way merge with its conflict refinement.
//!
//! Why our own port: git's rerere id hashes the conflict *as git rendered it*, and git renders with merge-ort's
//! histogram diff plus xdiff's merge refinement (xmerge.c). libgit2 only offers Myers/patience, which gives a
//! different hunk split on repetitive input (braces, blank lines). Matching git byte for byte needs the same
//! algorithms with the same tie-breaks, so this follows git v2.47's `xdiff/` (xprepare.c, xdiffi.c,
//! xhistogram.c, xmerge.c) step by step. It owns nothing else: no I/O, no git objects.
//!
//! Known deviation: xhistogram gives up (and git's merge fails) when 64 distinct lines share one bucket of its
//! hash table; that depends on git's table layout and is not reproduced here. It needs at least 65 distinct
//! lines in one region that all collide, which real input does not produce in practice.

mod compact;
mod histogram;
pub mod merge;
mod myers;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// rustc's FxHash: classifying lines under std's SipHash costs ~10% of a real-history backport. Like
/// xdiff's own `xdl_hash_record`, it is not keyed; lines of files one merges locally are not an attack surface
/// worth a slower hash.
#[derive(Clone, Copy, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("chunks of 8")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Which diff algorithm computes the two base→side scripts of a merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// xdiff's Myers with its heuristics (git's default for `git diff`, and what rerere's replay merge uses).
    Myers,
    /// xdiff's histogram diff (merge-ort's default, so the one git renders cherry-pick conflicts with).
    Histogram,
}

/// One hunk of an edit script: `chg1` lines of file 1 from `i1` became `chg2` lines of file 2 from `i2`
/// (0-based line indexes, like xdiff's `xdchange_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// First changed line in file 1.
    pub i1: usize,
    /// First changed line in file 2.
    pub i2: usize,
    /// Number of lines of file 1 in the hunk.
    pub chg1: usize,
    /// Number of lines of file 2 in the hunk.
    pub chg2: usize,
}

/// Splits `data` into lines as xdiff does: each record keeps its `\n`; a last line without one is a record too.
pub fn split_lines(data: &[u8]) -> Vec<&[u8]> {
    let mut lines = Vec::with_capacity(data.len() / 32);
    let mut start = 0;
    for i in memchr::memchr_iter(b'\n', data) {
        lines.push(&data[start..=i]);
        start = i + 1;
    }
    if start < data.len() {
        lines.push(&data[start..]);
    }
    lines
}

/// "changed" flags with one guard slot on each side, as xdiff's `rchg` (indexes -1 and `n` read as false).
#[derive(Clone, Debug)]
pub(crate) struct Changed {
    flags: Vec<bool>,
}

impl Changed {
    fn new(n: usize) -> Self {
        Changed {
            flags: vec![false; n + 2],
        }
    }

    /// Number of records (without the guards).
    fn len(&self) -> usize {
        self.flags.len() - 2
    }

    fn get(&self, i: isize) -> bool {
        self.flags[(i + 1) as usize]
    }

    fn set(&mut self, i: isize, v: bool) {
        self.flags[(i + 1) as usize] = v;
    }
}

/// Two files' lines as class ids: equal lines get equal ids, numbered by first appearance (file 1 first), as
/// xdiff's classifier does. Counts per class and file feed Myers' record cleanup.
pub(crate) struct Classified {
    pub(crate) ids1: Vec<u32>,
    pub(crate) ids2: Vec<u32>,
    pub(crate) count1: Vec<u32>,
    pub(crate) count2: Vec<u32>,
}

pub(crate) fn classify(a: &[&[u8]], b: &[&[u8]]) -> Classified {
    BaseClasses::new(a, b.len()).with(a, b)
}

/// File 1's half of [`classify`]: a merge diffs its base against both sides, and classifies the base once
/// (hashing every line of a big file twice costs ~10% of a real-history run). Since file 1's lines are
/// numbered first, `with` gives exactly what `classify` would.
pub(crate) struct BaseClasses<'d> {
    map: FxHashMap<&'d [u8], u32>,
    ids1: Vec<u32>,
    count1: Vec<u32>,
}

impl<'d> BaseClasses<'d> {
    /// Classifies `a`, with room for `more` lines of a second file.
    pub(crate) fn new(a: &[&'d [u8]], more: usize) -> BaseClasses<'d> {
        let mut map: FxHashMap<&[u8], u32> =
            FxHashMap::with_capacity_and_hasher(a.len() + more, Default::default());
        let mut count1: Vec<u32> = Vec::new();
        let mut ids1 = Vec::with_capacity(a.len());
        for line in a {
            let next = count1.len() as u32;
            let id = *map.entry(line).or_insert(next);
            if id == next {
                count1.push(0);
            }
            count1[id as usize] += 1;
            ids1.push(id);
        }
        BaseClasses { map, ids1, count1 }
    }

    /// Both files classified, `b` as file 2, given file 1's lines `a` again.
    ///
    /// The lines `b` shares with `a` at its start and end take the class of the line they equal, with no
    /// hashing: a lookup would find exactly that class, and no new class is numbered among them, so the ids
    /// are the ones a lookup of every line gives. A merge's sides mostly are their base with a few edits.
    pub(crate) fn with(self, a: &[&'d [u8]], b: &[&'d [u8]]) -> Classified {
        let BaseClasses {
            mut map,
            ids1,
            count1,
        } = self;
        second_file(ids1, count1, a, b, |line, next| {
            *map.entry(line).or_insert(next)
        })
    }

    /// [`Self::with`], keeping the base's classes for another file: `b`'s lines that are not in `a` are
    /// numbered in a map of their own, in the order `with` would number them, so the ids are the same without
    /// copying the base's map (a big file's map is most of a merge's classification).
    pub(crate) fn with_ref(&self, a: &[&'d [u8]], b: &[&'d [u8]]) -> Classified {
        let mut new: FxHashMap<&'d [u8], u32> = FxHashMap::default();
        second_file(
            self.ids1.clone(),
            self.count1.clone(),
            a,
            b,
            |line, next| match self.map.get(line) {
                Some(&id) => id,
                None => *new.entry(line).or_insert(next),
            },
        )
    }
}

/// File 2's classes given file 1's: `class(line, next)` returns the line's class, `next` for a line not seen
/// before (which then takes that number).
fn second_file<'d>(
    ids1: Vec<u32>,
    mut count1: Vec<u32>,
    a: &[&'d [u8]],
    b: &[&'d [u8]],
    mut class: impl FnMut(&'d [u8], u32) -> u32,
) -> Classified {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let mut count2: Vec<u32> = vec![0; count1.len()];
    let mut ids2 = Vec::with_capacity(b.len());
    for &id in &ids1[..prefix] {
        count2[id as usize] += 1;
        ids2.push(id);
    }
    for line in &b[prefix..b.len() - suffix] {
        let next = count1.len() as u32;
        let id = class(line, next);
        if id == next {
            count1.push(0);
            count2.push(0);
        }
        count2[id as usize] += 1;
        ids2.push(id);
    }
    for &id in &ids1[a.len() - suffix..] {
        count2[id as usize] += 1;
        ids2.push(id);
    }
    Classified {
        ids1,
        ids2,
        count1,
        count2,
    }
}

/// Marks changed lines of `a` and `b` with `algorithm`, before compaction (xdiff's `xdl_do_diff`).
fn do_diff(a: &[&[u8]], b: &[&[u8]], algorithm: Algorithm) -> (Classified, Changed, Changed) {
    do_diff_classified(a, b, classify(a, b), algorithm)
}

fn do_diff_classified(
    a: &[&[u8]],
    b: &[&[u8]],
    cls: Classified,
    algorithm: Algorithm,
) -> (Classified, Changed, Changed) {
    let mut ch1 = Changed::new(a.len());
    let mut ch2 = Changed::new(b.len());
    match algorithm {
        Algorithm::Myers => myers::diff(&cls, &mut ch1, &mut ch2),
        Algorithm::Histogram => histogram::diff(a, b, &cls, &mut ch1, &mut ch2),
    }
    (cls, ch1, ch2)
}

/// Diffs `a` against `b` and returns the compacted edit script (xdl_do_diff + xdl_change_compact both ways +
/// xdl_build_script), which is what xdl_merge and the refinement consume.
pub fn diff(a: &[&[u8]], b: &[&[u8]], algorithm: Algorithm) -> Vec<Change> {
    script(do_diff(a, b, algorithm))
}

/// [`diff`] of `a` against `b1` and of `a` against `b2`, classifying `a` once.
pub fn diff_both(
    a: &[&[u8]],
    b1: &[&[u8]],
    b2: &[&[u8]],
    algorithm: Algorithm,
) -> (Vec<Change>, Vec<Change>) {
    let base = BaseClasses::new(a, b1.len().max(b2.len()));
    let first = base.with_ref(a, b1);
    let s1 = script(do_diff_classified(a, b1, first, algorithm));
    let s2 = script(do_diff_classified(a, b2, base.with(a, b2), algorithm));
    (s1, s2)
}

/// The compacted edit script of a marked diff.
fn script((cls, mut ch1, mut ch2): (Classified, Changed, Changed)) -> Vec<Change> {
    compact::change_compact(&cls.ids1, &mut ch1, &mut ch2);
    compact::change_compact(&cls.ids2, &mut ch2, &mut ch1);
    build_script(&ch1, &ch2)
}

/// Collects runs of changed lines into hunks (xdl_build_script), in file order.
fn build_script(ch1: &Changed, ch2: &Changed) -> Vec<Change> {
    let mut script = Vec::new();
    let mut i1 = ch1.len() as isize;
    let mut i2 = ch2.len() as isize;
    while i1 >= 0 || i2 >= 0 {
        if ch1.get(i1 - 1) || ch2.get(i2 - 1) {
            let l1 = i1;
            while ch1.get(i1 - 1) {
                i1 -= 1;
            }
            let l2 = i2;
            while ch2.get(i2 - 1) {
                i2 -= 1;
            }
            script.push(Change {
                i1: i1 as usize,
                i2: i2 as usize,
                chg1: (l1 - i1) as usize,
                chg2: (l2 - i2) as usize,
            });
        }
        i1 -= 1;
        i2 -= 1;
    }
    script.reverse();
    script
}

#[cfg(test)]
mod tests {
    /// Every line looked up in one map, first file first: what xdiff's classifier does.
    fn classify_every_line(a: &[&[u8]], b: &[&[u8]]) -> (Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>) {
        let mut map = std::collections::HashMap::new();
        let (mut c1, mut c2, mut i1, mut i2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (file, lines) in [a, b].iter().enumerate() {
            for line in lines.iter() {
                let next = c1.len() as u32;
                let id = *map.entry(*line).or_insert(next);
                if id == next {
                    c1.push(0);
                    c2.push(0);
                }
                if file == 0 {
                    c1[id as usize] += 1;
                    i1.push(id);
                } else {
                    c2[id as usize] += 1;
                    i2.push(id);
                }
            }
        }
        (i1, i2, c1, c2)
    }

    #[test]
    fn shared_prefix_and_suffix_classify_as_every_line_does() {
        let base = "x\ny\nx\nz\nw\nx\ny\n";
        for side in [
            base,
            "",
            "x\n",
            "x\ny\nnew\nx\nz\nw\nx\ny\n",
            "x\ny\nx\nz\nw\nx\ny\ntail\n",
            "head\nx\ny\nx\nz\nw\nx\ny\n",
            "x\ny\nw\nnew\nx\nagain\nnew\nx\ny\n",
            "x\ny\nx\n",
            "y\n",
        ] {
            for (a, b) in [(base, side), (side, base)] {
                let (a, b) = (split_lines(a.as_bytes()), split_lines(b.as_bytes()));
                let got = classify(&a, &b);
                let want = classify_every_line(&a, &b);
                assert_eq!(
                    (got.ids1, got.ids2, got.count1, got.count2),
                    want,
                    "{a:?} / {b:?}"
                );
                // A merge's first side, classified against a base kept for the second: the same classes,
                // and the base unchanged by it.
                let other = split_lines(b"new\nx\nagain\n");
                let base_classes = BaseClasses::new(&a, b.len().max(other.len()));
                let got = base_classes.with_ref(&a, &b);
                assert_eq!(
                    (got.ids1, got.ids2, got.count1, got.count2),
                    want,
                    "with_ref: {a:?} / {b:?}"
                );
                let got = base_classes.with(&a, &other);
                assert_eq!(
                    (got.ids1, got.ids2, got.count1, got.count2),
                    classify_every_line(&a, &other),
                    "with after with_ref: {a:?} / {other:?}"
                );
            }
        }
    }

    use super::*;

    fn lines(s: &str) -> Vec<&[u8]> {
        split_lines(s.as_bytes())
    }

    #[test]
    fn split_keeps_newlines_and_a_last_partial_line() {
        assert_eq!(split_lines(b"a\nb\r\nc"), vec![&b"a\n"[..], b"b\r\n", b"c"]);
        assert!(split_lines(b"").is_empty());
    }

    #[test]
    fn both_algorithms_find_a_simple_replacement() {
        for alg in [Algorithm::Myers, Algorithm::Histogram] {
            let script = diff(&lines("a\nb\nc\n"), &lines("a\nB\nc\n"), alg);
            assert_eq!(
                script,
                vec![Change {
                    i1: 1,
                    i2: 1,
                    chg1: 1,
                    chg2: 1
                }],
                "{alg:?}"
            );
        }
    }

    #[test]
    fn insertion_between_equal_lines_slides_down_as_git_does() {
        // "}\n" inserted after a "}\n": compaction slides the group to its last possible position.
        for alg in [Algorithm::Myers, Algorithm::Histogram] {
            let script = diff(&lines("a\n}\nb\n"), &lines("a\n}\n}\nb\n"), alg);
            assert_eq!(
                script,
                vec![Change {
                    i1: 2,
                    i2: 2,
                    chg1: 0,
                    chg2: 1
                }],
                "{alg:?}"
            );
        }
    }
}
