//! Rename detection between one side of a merge and its base, deciding as git's `diffcore-rename.c` does for
//! merge-ort: exact renames first (same blob), then files whose basename is unique on both sides at a higher
//! threshold, then the similarity matrix of what is left, each score being git's span-hash estimate so that the
//! threshold (50% by default) accepts and refuses the same pairs as git.
//!
//! Only the sources the caller calls relevant (deleted on this side and changed on the other) take part in the
//! inexact passes, as merge-ort culls them; every source takes part in the exact pass, which can take a
//! destination away from a relevant source.
//!
//! Not owned here: which paths are sources and destinations, and what a rename does to the merge (the pick).

use super::Side;
use git2::Oid;
use std::collections::HashMap;
use std::rc::Rc;

/// git's score scale: 100%.
pub const MAX_SCORE: u32 = 60000;
/// git's default threshold: 50%.
pub const DEFAULT_SCORE: u32 = 30000;
/// merge-ort's rename limit when `merge.renameLimit` / `diff.renameLimit` are unset or not positive.
pub const DEFAULT_LIMIT: u64 = 7000;

/// How a merge detects renames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenameSettings {
    /// Detect at all (`merge.renames`, `diff.renames`, `-X no-renames`).
    pub enabled: bool,
    /// The similarity a rename needs, out of [`MAX_SCORE`] (`-X find-renames=N`).
    pub min_score: u32,
    /// Inexact detection is skipped when destinations × sources exceeds this squared (`merge.renameLimit`).
    pub limit: u64,
    /// What a directory the other side renamed does to a path added inside it (`merge.directoryRenames`).
    pub directories: DirRenames,
}

/// `merge.directoryRenames`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DirRenames {
    /// `false`: a path added into a renamed directory stays where it was added.
    Off,
    /// `true`: it moves into the directory's new name.
    On,
    /// `conflict` (git's default): it moves, and the pick stops on it so the user confirms the location.
    #[default]
    Conflict,
}

impl DirRenames {
    /// git's reading of the value: `conflict`, else a boolean (`None` when neither).
    pub fn parse(value: &str) -> Option<DirRenames> {
        let v = value.to_ascii_lowercase();
        match v.as_str() {
            "conflict" => Some(DirRenames::Conflict),
            "true" | "yes" | "on" | "" => Some(DirRenames::On),
            "false" | "no" | "off" => Some(DirRenames::Off),
            _ => v.parse::<i64>().ok().map(|n| {
                if n != 0 {
                    DirRenames::On
                } else {
                    DirRenames::Off
                }
            }),
        }
    }
}

impl Default for RenameSettings {
    fn default() -> RenameSettings {
        RenameSettings {
            enabled: true,
            min_score: DEFAULT_SCORE,
            limit: DEFAULT_LIMIT,
            directories: DirRenames::Conflict,
        }
    }
}

/// git's `parse_rename_score`: `50`, `50%`, `0.5` and `5` all mean half (digits are a fraction of the next power
/// of ten unless a `%` follows). `None` when anything follows the number.
pub fn parse_score(text: &str) -> Option<u32> {
    let (mut num, mut scale, mut dot) = (0u64, 1u64, false);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let ch = bytes[i];
        if !dot && ch == b'.' {
            scale = 1;
            dot = true;
        } else if ch == b'%' {
            scale = if dot { scale * 100 } else { 100 };
            i += 1;
            break;
        } else if ch.is_ascii_digit() {
            if scale < 100_000 {
                scale *= 10;
                num = num * 10 + u64::from(ch - b'0');
            }
        } else {
            break;
        }
        i += 1;
    }
    if i != bytes.len() {
        return None;
    }
    let max = u64::from(MAX_SCORE);
    Some(if num >= scale { max } else { max * num / scale } as u32)
}

/// A path on one side: a rename source (in the base) or destination (on the side).
#[derive(Clone, Debug)]
pub struct Candidate {
    /// `/`-separated path.
    pub path: String,
    /// The entry.
    pub side: Side,
}

/// Where the detector reads blobs.
pub trait Blobs {
    /// The blob's content.
    fn bytes(&mut self, oid: Oid) -> Result<Rc<[u8]>, super::Error>;
}

fn is_regular(mode: u32) -> bool {
    mode & 0o170000 == 0o100000
}

/// git's `basename_same`: the paths end in the same file name.
fn basename_same(a: &str, b: &str) -> bool {
    basename(a) == basename(b)
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

const HASHBASE: u32 = 107_927;

/// git's `hash_chars`: the file cut into spans (at each newline or every 64 bytes), each span hashed, with the
/// number of bytes per hash; sorted by hash. A CR before LF is skipped in text.
fn span_hashes(buf: &[u8]) -> Vec<(u32, u32)> {
    let is_text = !buf[..buf.len().min(8000)].contains(&0);
    let mut counts: HashMap<u32, u32> = HashMap::new();
    let (mut n, mut accum1, mut accum2) = (0u32, 0u32, 0u32);
    for (i, &c) in buf.iter().enumerate() {
        if is_text && c == b'\r' && buf.get(i + 1) == Some(&b'\n') {
            continue;
        }
        let old1 = accum1;
        accum1 = (accum1 << 7) ^ (accum2 >> 25);
        accum2 = (accum2 << 7) ^ (old1 >> 25);
        accum1 = accum1.wrapping_add(u32::from(c));
        n += 1;
        if n < 64 && c != b'\n' {
            continue;
        }
        let h = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
        *counts.entry(h).or_default() += n;
        n = 0;
        accum1 = 0;
        accum2 = 0;
    }
    if n > 0 {
        let h = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
        *counts.entry(h).or_default() += n;
    }
    let mut v: Vec<(u32, u32)> = counts.into_iter().collect();
    v.sort_unstable();
    v
}

/// git's `diffcore_count_changes`: bytes of `dst` that come from `src`.
fn copied(src: &[(u32, u32)], dst: &[(u32, u32)]) -> u64 {
    let (mut sc, mut j) = (0u64, 0usize);
    for &(h, scnt) in src {
        while j < dst.len() && dst[j].0 < h {
            j += 1;
        }
        if j < dst.len() && dst[j].0 == h {
            sc += u64::from(scnt.min(dst[j].1));
            j += 1;
        }
    }
    sc
}

/// The blobs and span hashes read during one detection, each once.
struct Reader<'b> {
    blobs: &'b mut dyn Blobs,
    bytes: HashMap<Oid, Rc<[u8]>>,
    spans: HashMap<Oid, Rc<[(u32, u32)]>>,
}

impl Reader<'_> {
    fn bytes(&mut self, oid: Oid) -> Result<Rc<[u8]>, super::Error> {
        if let Some(b) = self.bytes.get(&oid) {
            return Ok(b.clone());
        }
        let b = self.blobs.bytes(oid)?;
        self.bytes.insert(oid, b.clone());
        Ok(b)
    }

    fn spans(&mut self, oid: Oid) -> Result<Rc<[(u32, u32)]>, super::Error> {
        if let Some(s) = self.spans.get(&oid) {
            return Ok(s.clone());
        }
        let s: Rc<[(u32, u32)]> = span_hashes(&self.bytes(oid)?).into();
        self.spans.insert(oid, s.clone());
        Ok(s)
    }

    /// git's `estimate_similarity`.
    fn similarity(&mut self, src: Side, dst: Side, min_score: u32) -> Result<u32, super::Error> {
        if !is_regular(src.mode) || !is_regular(dst.mode) {
            return Ok(0);
        }
        let (ss, ds) = (
            self.bytes(src.oid)?.len() as u64,
            self.bytes(dst.oid)?.len() as u64,
        );
        let (max, base) = (ss.max(ds), ss.min(ds));
        let max_score = u64::from(MAX_SCORE);
        if max * (max_score - u64::from(min_score)) < (max - base) * max_score {
            return Ok(0);
        }
        if ds == 0 {
            return Ok(0);
        }
        let c = copied(&self.spans(src.oid)?, &self.spans(dst.oid)?);
        Ok((c * max_score / max) as u32)
    }
}

/// The empty blob's id: git never pairs empty files as renames (merge-ort turns `rename_empty` off).
fn is_empty_blob(oid: Oid) -> bool {
    oid.to_string() == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
}

/// One candidate pair of the similarity matrix (git's `diff_score`); `dst` is `None` for an unused slot.
#[derive(Clone, Copy)]
struct Score {
    src: usize,
    dst: Option<usize>,
    score: u32,
    name: bool,
}

/// git's `score_compare`: unused slots last, then higher score, then a same basename first.
fn score_order(a: &Score, b: &Score) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a.dst, b.dst) {
        (None, None) => Equal,
        (None, Some(_)) => Greater,
        (Some(_), None) => Less,
        _ => b.score.cmp(&a.score).then(b.name.cmp(&a.name)),
    }
}

/// Pairs `(source index, destination index)` of the renames found, as merge-ort's rename detection finds them.
/// `relevant` says which sources the inexact passes consider.
pub fn detect(
    sources: &[Candidate],
    dests: &[Candidate],
    relevant: &dyn Fn(&Candidate) -> bool,
    settings: RenameSettings,
    blobs: &mut dyn Blobs,
) -> Result<Vec<(usize, usize)>, super::Error> {
    if !settings.enabled {
        return Ok(Vec::new());
    }
    let mut run = Detection {
        sources,
        dests,
        srcs: (0..sources.len())
            .filter(|&i| !is_empty_blob(sources[i].side.oid))
            .collect(),
        dsts: (0..dests.len())
            .filter(|&i| !is_empty_blob(dests[i].side.oid))
            .collect(),
        src_used: vec![false; sources.len()],
        dst_used: vec![false; dests.len()],
        pairs: Vec::new(),
    };
    if run.srcs.is_empty() || run.dsts.is_empty() {
        return Ok(run.pairs);
    }
    run.find_exact();
    if settings.min_score >= MAX_SCORE {
        return Ok(run.pairs);
    }
    let mut reader = Reader {
        blobs,
        bytes: HashMap::new(),
        spans: HashMap::new(),
    };
    run.find_by_basename(relevant, settings, &mut reader)?;
    run.find_by_similarity(relevant, settings, &mut reader)?;
    Ok(run.pairs)
}

/// One detection's candidates (the non-empty ones in `srcs` and `dsts`), which of them are paired already, and
/// the pairs in the order they were found.
struct Detection<'c> {
    sources: &'c [Candidate],
    dests: &'c [Candidate],
    srcs: Vec<usize>,
    dsts: Vec<usize>,
    src_used: Vec<bool>,
    dst_used: Vec<bool>,
    pairs: Vec<(usize, usize)>,
}

impl Detection<'_> {
    fn pair(&mut self, s: usize, d: usize) {
        self.src_used[s] = true;
        self.dst_used[d] = true;
        self.pairs.push((s, d));
    }

    /// Exact renames: per destination, an unused source with the same blob, preferring one with the same
    /// basename, the first in path order otherwise (git's LIFO table over sources inserted in reverse).
    fn find_exact(&mut self) {
        let (sources, dests) = (self.sources, self.dests);
        let mut by_oid: HashMap<Oid, Vec<usize>> = HashMap::new();
        for &i in &self.srcs {
            by_oid.entry(sources[i].side.oid).or_default().push(i);
        }
        for di in 0..self.dsts.len() {
            let d = self.dsts[di];
            let target = &dests[d];
            let Some(list) = by_oid.get(&target.side.oid) else {
                continue;
            };
            let mut best: Option<(usize, u32)> = None;
            for &s in list.iter().take(100) {
                let source = &sources[s];
                if (!is_regular(source.side.mode) || !is_regular(target.side.mode))
                    && source.side.mode != target.side.mode
                {
                    continue;
                }
                if self.src_used[s] {
                    continue;
                }
                let score = 1 + u32::from(basename_same(&source.path, &target.path));
                if best.is_none_or(|(_, b)| score > b) {
                    best = Some((s, score));
                    if score == 2 {
                        break;
                    }
                }
            }
            if let Some((s, _)) = best {
                self.pair(s, d);
            }
        }
    }

    /// Basenames unique among the remaining sources and destinations, at a threshold halfway to 100%.
    fn find_by_basename(
        &mut self,
        relevant: &dyn Fn(&Candidate) -> bool,
        settings: RenameSettings,
        reader: &mut Reader<'_>,
    ) -> Result<(), super::Error> {
        let (sources, dests) = (self.sources, self.dests);
        let min_basename = settings.min_score + (MAX_SCORE - settings.min_score) / 2;
        // Each basename among the unused candidates, with its candidate when it is the only one.
        fn unique_basenames<'c>(
            ids: &[usize],
            used: &[bool],
            candidates: &'c [Candidate],
        ) -> HashMap<&'c str, Option<usize>> {
            let mut names: HashMap<&str, Option<usize>> = HashMap::new();
            for &i in ids.iter().filter(|&&i| !used[i]) {
                names
                    .entry(basename(&candidates[i].path))
                    .and_modify(|v| *v = None)
                    .or_insert(Some(i));
            }
            names
        }
        let src_names = unique_basenames(&self.srcs, &self.src_used, sources);
        let dst_names = unique_basenames(&self.dsts, &self.dst_used, dests);
        let remaining: Vec<usize> = self
            .srcs
            .iter()
            .copied()
            .filter(|&i| !self.src_used[i])
            .collect();
        for s in remaining {
            if !relevant(&sources[s]) {
                continue;
            }
            let name = basename(&sources[s].path);
            let (Some(Some(unique_src)), Some(Some(d))) =
                (src_names.get(name), dst_names.get(name))
            else {
                continue;
            };
            if *unique_src != s || self.dst_used[*d] {
                continue;
            }
            let score = reader.similarity(sources[s].side, dests[*d].side, min_basename)?;
            if score >= min_basename {
                self.pair(s, *d);
            }
        }
        Ok(())
    }

    /// The matrix: the four best sources per destination, then the best pairs overall.
    fn find_by_similarity(
        &mut self,
        relevant: &dyn Fn(&Candidate) -> bool,
        settings: RenameSettings,
        reader: &mut Reader<'_>,
    ) -> Result<(), super::Error> {
        let (sources, dests) = (self.sources, self.dests);
        let rest_src: Vec<usize> = self
            .srcs
            .iter()
            .copied()
            .filter(|&i| !self.src_used[i] && relevant(&sources[i]))
            .collect();
        let rest_dst: Vec<usize> = self
            .dsts
            .iter()
            .copied()
            .filter(|&i| !self.dst_used[i])
            .collect();
        if rest_src.is_empty() || rest_dst.is_empty() {
            return Ok(());
        }
        if settings.limit > 0
            && (rest_src.len() as u64).saturating_mul(rest_dst.len() as u64)
                > settings.limit.saturating_mul(settings.limit)
        {
            return Ok(());
        }
        const PER_DST: usize = 4;
        let mut matrix: Vec<Score> = Vec::with_capacity(rest_dst.len() * PER_DST);
        for &d in &rest_dst {
            let mut slots = [Score {
                src: 0,
                dst: None,
                score: 0,
                name: false,
            }; PER_DST];
            for &s in &rest_src {
                let candidate = Score {
                    src: s,
                    dst: Some(d),
                    score: reader.similarity(sources[s].side, dests[d].side, settings.min_score)?,
                    name: basename_same(&sources[s].path, &dests[d].path),
                };
                let mut worst = 0;
                for i in 1..PER_DST {
                    if score_order(&slots[i], &slots[worst]).is_gt() {
                        worst = i;
                    }
                }
                if score_order(&slots[worst], &candidate).is_gt() {
                    slots[worst] = candidate;
                }
            }
            matrix.extend_from_slice(&slots);
        }
        matrix.sort_by(score_order);
        for m in matrix {
            let Some(d) = m.dst else { break };
            if m.score < settings.min_score {
                break;
            }
            if self.dst_used[d] || self.src_used[m.src] {
                continue;
            }
            self.pair(m.src, d);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_as_git_parses_them() {
        assert_eq!(parse_score("50"), Some(30000));
        assert_eq!(parse_score("50%"), Some(30000));
        assert_eq!(parse_score("5"), Some(30000));
        assert_eq!(parse_score("0.5"), Some(30000));
        assert_eq!(parse_score("90"), Some(54000));
        assert_eq!(parse_score("100%"), Some(MAX_SCORE));
        assert_eq!(parse_score("150%"), Some(MAX_SCORE));
        assert_eq!(parse_score("5x"), None);
    }

    #[test]
    fn spans_split_at_newlines_and_every_64_bytes_and_skip_cr_before_lf() {
        let lf = span_hashes(b"one\ntwo\n");
        assert_eq!(lf.iter().map(|s| s.1).sum::<u32>(), 8);
        assert_eq!(lf.len(), 2);
        assert_eq!(span_hashes(b"one\r\ntwo\r\n"), lf);
        let long = span_hashes(&[b'a'; 130]);
        assert_eq!(long.iter().map(|s| s.1).sum::<u32>(), 130);
        // Two identical 64-byte spans share a hash.
        assert_eq!(long.len(), 2);
    }

    #[test]
    fn copied_counts_the_shared_bytes() {
        let a = span_hashes(b"one\ntwo\nthree\n");
        let b = span_hashes(b"one\ntwo\nfour\n");
        assert_eq!(copied(&a, &b), 8);
    }
}
