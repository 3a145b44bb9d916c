//! bport's xdiff port against `git merge-file` (the same xdl_merge, with level zealous-alnum): generated triples
//! full of the repetitive lines (braces, blank lines) where diff algorithms disagree, every style, both
//! algorithms, CRLF and missing final newlines. Output must be byte-identical.

use crate::support::oracle;
use bport::rerere::xdiff::merge::{merge, Favor, Level, MergeOptions, Style};
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
    let big = seed.is_multiple_of(10);
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

/// C-like code: functions of braces, blank lines and bodies; sides add, edit and drop functions and lines.
/// Inserting a function next to an edited one is where Myers and histogram split hunks differently.
pub fn code_triple(seed: u64) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut rng = Rng::new(seed ^ 0xC0DE);
    let function = |rng: &mut Rng, name: &str| -> Vec<String> {
        let mut f = vec![format!("static int {name}(void)"), "{".into()];
        for i in 0..1 + rng.below(4) {
            f.push(match rng.below(4) {
                0 => "\tif (x) {".into(),
                1 => "\t}".into(),
                2 => String::new(),
                _ => format!("\tcall_{name}_{i}();"),
            });
        }
        f.push("\treturn 0;".into());
        f.push("}".into());
        f.push(String::new());
        f
    };
    let n = 3 + rng.below(6);
    let base: Vec<Vec<String>> = (0..n)
        .map(|i| function(&mut rng, &format!("f{i}")))
        .collect();
    let side = |rng: &mut Rng, tag: &str| -> Vec<String> {
        let mut fns = base.clone();
        for k in 0..1 + rng.below(3) {
            let at = rng.below(fns.len() as u64) as usize;
            match rng.below(4) {
                0 => fns.insert(at, function(rng, &format!("{tag}_new{k}"))),
                1 => {
                    let body = &mut fns[at];
                    let line = 2 + rng.below((body.len() - 4) as u64 + 1) as usize;
                    body.insert(line, format!("\t{tag}_{k}();"));
                }
                2 => {
                    let body = &mut fns[at];
                    body[0] = format!("static long {tag}_{k}(void)");
                }
                _ if fns.len() > 1 => {
                    fns.remove(at);
                }
                _ => {}
            }
        }
        fns.concat()
    };
    let ours = side(&mut rng, "ours");
    let theirs = side(&mut rng, "theirs");
    let join = |lines: &[String]| -> Vec<u8> {
        let mut s = lines.join("\n");
        s.push('\n');
        s.into_bytes()
    };
    (join(&base.concat()), join(&ours), join(&theirs))
}

#[test]
fn xdiff_port_renders_merges_byte_identical_to_git_merge_file() {
    skip_unless!(oracle::has_git());
    let dir = tempfile::tempdir().unwrap();
    let (b, o, t) = (
        dir.path().join("base"),
        dir.path().join("ours"),
        dir.path().join("theirs"),
    );
    let mut mismatches = Vec::new();
    let mut cases = 0;
    let mut conflicted = 0;
    let mut favored = 0;
    for seed in 0..160u64 {
        let (base, ours, theirs) = if seed < 120 {
            triple(seed)
        } else {
            code_triple(seed)
        };
        std::fs::write(&b, &base).unwrap();
        std::fs::write(&o, &ours).unwrap();
        std::fs::write(&t, &theirs).unwrap();
        for (alg, alg_name) in [
            (Algorithm::Histogram, "histogram"),
            (Algorithm::Myers, "myers"),
        ] {
            for (favor, favor_flag) in [
                (Favor::Ours, "--ours"),
                (Favor::Theirs, "--theirs"),
                (Favor::Union, "--union"),
            ] {
                favored += 1;
                let alg_arg = format!("--diff-algorithm={alg_name}");
                let out = oracle::git(dir.path())
                    .args([
                        "merge-file",
                        "-p",
                        favor_flag,
                        &alg_arg,
                        "ours",
                        "base",
                        "theirs",
                    ])
                    .output()
                    .unwrap();
                let opts = MergeOptions {
                    algorithm: alg,
                    level: Level::ZealousAlnum,
                    favor: Some(favor),
                    ..MergeOptions::default()
                };
                let mine = merge(&base, &ours, &theirs, &opts);
                if mine.content != out.stdout || out.status.code() != Some(0) || mine.conflicts != 0
                {
                    mismatches.push(format!("seed {seed} {alg_name} {favor:?}"));
                }
            }
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
        "xdiff port vs git merge-file: {} of {} identical ({conflicted} of {cases} with conflicts; \
         {favored} with --ours/--theirs/--union)",
        cases + favored - mismatches.len(),
        cases + favored
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

/// Regression: xdl_merge computes a side's position from the other side's script, which goes negative before
/// `append` folds it back; an unsigned port overflowed on this case (found by the id corpus, seed 1139).
#[test]
fn transiently_negative_positions_merge_like_git() {
    skip_unless!(oracle::has_git());
    let dir = tempfile::tempdir().unwrap();
    let (base, ours, theirs) = code_triple(1139);
    std::fs::write(dir.path().join("base"), &base).unwrap();
    std::fs::write(dir.path().join("ours"), &ours).unwrap();
    std::fs::write(dir.path().join("theirs"), &theirs).unwrap();
    let out = oracle::git(dir.path())
        .args([
            "merge-file",
            "-p",
            "-L",
            "ours",
            "-L",
            "base",
            "-L",
            "theirs",
            "--diff-algorithm=histogram",
        ])
        .args(["ours", "base", "theirs"])
        .output()
        .unwrap();
    let opts = MergeOptions {
        level: Level::ZealousAlnum,
        ours_label: "ours".into(),
        theirs_label: "theirs".into(),
        base_label: "base".into(),
        ..MergeOptions::default()
    };
    let mine = merge(&base, &ours, &theirs, &opts);
    assert_eq!(
        String::from_utf8_lossy(&mine.content),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(mine.conflicts as i32, out.status.code().unwrap());
}

/// No input makes the merge panic: many generated triples, every style, both algorithms (in-process, no oracle).
#[test]
fn merge_never_panics_on_generated_input() {
    for seed in 0..600u64 {
        for (base, ours, theirs) in [triple(seed + 7000), code_triple(seed + 7000)] {
            for algorithm in [Algorithm::Histogram, Algorithm::Myers] {
                for style in [Style::Merge, Style::Diff3, Style::Zdiff3] {
                    let opts = MergeOptions {
                        algorithm,
                        style,
                        ..MergeOptions::default()
                    };
                    // Swapping the sides must give the same number of conflict hunks (the merge is symmetric
                    // in what conflicts, only the order of sides differs).
                    let a = merge(&base, &ours, &theirs, &opts);
                    let b = merge(&base, &theirs, &ours, &opts);
                    assert_eq!(
                        a.conflicts == 0,
                        b.conflicts == 0,
                        "seed {seed} {algorithm:?} {style:?}"
                    );
                }
            }
        }
    }
}
