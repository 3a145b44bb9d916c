//! bport's xdiff port against `git merge-file` (the same xdl_merge, with level zealous-alnum): generated triples
//! full of the repetitive lines (braces, blank lines) where diff algorithms disagree, every style, both
//! algorithms, CRLF and missing final newlines. Output must be byte-identical.

use crate::support::oracle;
use bport::rerere::xdiff::merge::{merge, Level, MergeOptions, Style};
use bport::rerere::xdiff::Algorithm;

/// A small deterministic generator (xorshift), so failures reproduce from the case number.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const POOL: &[&str] = &[
    "{",
    "}",
    "",
    "\treturn 0;",
    "\tint x;",
    "a",
    "b",
    "c",
    "if (x) {",
    "} else {",
    "\tfoo();",
    "\tbar();",
    "#include <a.h>",
    "\t}",
    "/* comment */",
];

/// A base file and two mutated sides; `seed` decides everything.
pub fn triple(seed: u64) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut rng = Rng::new(seed);
    // Every tenth case is large, so that lines occur more than 64 times (histogram falls back to Myers) and
    // Myers' cost heuristics come into play.
    let big = seed % 10 == 0;
    let n = if big {
        150 + rng.below(400)
    } else {
        5 + rng.below(40)
    } as usize;
    let edits = if big { 30 } else { 4 };
    let base: Vec<String> = (0..n)
        .map(|_| POOL[rng.below(POOL.len() as u64) as usize].to_string())
        .collect();
    let side = |rng: &mut Rng, tag: &str| -> Vec<String> {
        let mut lines = base.clone();
        for _ in 0..1 + rng.below(edits) {
            let at = rng.below(lines.len() as u64 + 1) as usize;
            match rng.below(3) {
                0 if at < lines.len() => {
                    lines.remove(at);
                }
                1 => lines.insert(at, POOL[rng.below(POOL.len() as u64) as usize].to_string()),
                _ => {
                    let new = format!("{tag}{}", rng.below(5));
                    if at < lines.len() {
                        lines[at] = new;
                    } else {
                        lines.push(new);
                    }
                }
            }
        }
        lines
    };
    let ours = side(&mut rng, "ours");
    let theirs = side(&mut rng, "theirs");
    let crlf = rng.below(8) == 0;
    let no_final_newline = rng.below(6) == 0;
    let join = |lines: &[String]| -> Vec<u8> {
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut s = lines.join(eol);
        if !lines.is_empty() && !no_final_newline {
            s.push_str(eol);
        }
        s.into_bytes()
    };
    (join(&base), join(&ours), join(&theirs))
}

#[test]
fn xdiff_port_renders_merges_byte_identical_to_git_merge_file() {
    if !oracle::require("git", "apt-get install git") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (b, o, t) = (
        dir.path().join("base"),
        dir.path().join("ours"),
        dir.path().join("theirs"),
    );
    let mut mismatches = Vec::new();
    let mut cases = 0;
    let mut conflicted = 0;
    for seed in 0..120u64 {
        let (base, ours, theirs) = triple(seed);
        std::fs::write(&b, &base).unwrap();
        std::fs::write(&o, &ours).unwrap();
        std::fs::write(&t, &theirs).unwrap();
        for (alg, alg_name) in [
            (Algorithm::Histogram, "histogram"),
            (Algorithm::Myers, "myers"),
        ] {
            for (style, flag) in [
                (Style::Merge, None),
                (Style::Diff3, Some("--diff3")),
                (Style::Zdiff3, Some("--zdiff3")),
            ] {
                cases += 1;
                let mut args = vec![
                    "merge-file",
                    "-p",
                    "-L",
                    "ours",
                    "-L",
                    "base",
                    "-L",
                    "theirs",
                ];
                let alg_arg = format!("--diff-algorithm={alg_name}");
                args.push(&alg_arg);
                if let Some(f) = flag {
                    args.push(f);
                }
                args.extend(["ours", "base", "theirs"]);
                let out = oracle::git(dir.path()).args(&args).output().unwrap();
                let opts = MergeOptions {
                    algorithm: alg,
                    style,
                    level: Level::ZealousAlnum,
                    ours_label: "ours".into(),
                    theirs_label: "theirs".into(),
                    base_label: "base".into(),
                    ..MergeOptions::default()
                };
                let ours_result = merge(&base, &ours, &theirs, &opts);
                let git_conflicts = out.status.code().unwrap_or(-1);
                if git_conflicts > 0 {
                    conflicted += 1;
                }
                if ours_result.content != out.stdout
                    || ours_result.conflicts as i32 != git_conflicts
                {
                    mismatches.push(format!(
                        "seed {seed} {alg_name} {style:?}: git ({git_conflicts} conflicts):\n{}\nbport ({}):\n{}",
                        String::from_utf8_lossy(&out.stdout),
                        ours_result.conflicts,
                        String::from_utf8_lossy(&ours_result.content)
                    ));
                }
            }
        }
    }
    eprintln!(
        "xdiff port vs git merge-file: {} of {cases} identical ({conflicted} with conflicts)",
        cases - mismatches.len()
    );
    // The generator must keep producing conflicts, or this test would prove little.
    assert!(
        conflicted * 3 > cases,
        "only {conflicted} of {cases} cases conflict"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches; first:\n{}",
        mismatches.len(),
        mismatches[0]
    );
}
