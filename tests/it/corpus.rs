//! bport against Linux perf 6.1 on perf.data files nobody here wrote, the public test data of
//! google/perf_data_converter (tests/fixtures/quipper, see its README): kernels 3.2–6.12, x86_64, i686 and
//! armv7, file and pipe mode, branch stacks, load-latency samples, Intel PT.
//!
//! Symbols are neutralised for both tools (an empty `--symfs`, `--kallsyms /dev/null`, an empty `HOME` so that
//! no build-id cache answers): what is compared is bport's reading of the file, not this machine's binaries.
//! Each test prints a summary (`N of M identical`). A difference fails the test unless it is listed in
//! [`EXPECTED_FAILURES`] (known gaps: an entry must go once its file matches, and the
//! test fails while a listed file already matches) or [`DEVIATIONS`] (kept on purpose, with a weaker check).

use crate::support::{bport, oracle};
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/quipper");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Script,
    Report,
    BuildidList,
}

// Why an entry is in a table (kept short so that each entry stays on one line).
const VDSO: &str = "perf 6.1 names a hit [vdso] by its deleted temp copy /tmp/perf-vdso.so-XXXXXX";
const NO_PT: &str = "no Intel PT decoding";

/// Known differences from perf 6.1 still to be fixed: (file, tool, who and why).
#[rustfmt::skip]
const EXPECTED_FAILURES: &[(&str, Tool, &str)] = &[
];

/// Differences kept on purpose: (file, tool, why). Each still gets the weaker check of [`deviation_holds`].
///
/// perf decodes the Intel PT trace (intel-pt-decoder) and prints synthesized branch, psb, cbr and "instruction
/// trace error" lines, and its event-name column is as wide as its synthesized events' names. bport does not
/// decode AUX traces: it prints the file's own samples.
///
/// perf 6.1's buildid-list names a hit `[vdso]` of a file without a BUILD_ID table by the random temp copy it
/// made of its own vDSO and already deleted (`/tmp/perf-vdso.so-HOFe5B`): a name of nothing. bport prints
/// `[vdso]`; the check maps perf's temp name to `[vdso]` and then wants every line equal.
#[rustfmt::skip]
const DEVIATIONS: &[(&str, Tool, &str)] = &[
    ("perf.data.piped.hw_and_sw-3.4", Tool::BuildidList, VDSO),
    ("perf.data.piped.target-3.4", Tool::BuildidList, VDSO),
    ("perf.data.piped.target-3.8", Tool::BuildidList, VDSO),
    ("perf.data.intel_pt-4.14", Tool::Script, NO_PT),
    ("perf.data.intel_pt-4.14", Tool::Report, NO_PT),
];

/// The weaker check of a deviation: every line bport prints, spaces collapsed, is one of perf's, in order; for a
/// report, every row's key (comm, dso, symbol: the percentages differ when perf counts samples bport does not
/// have) is one of perf's.
fn deviation_holds(tool: Tool, perf: &str, ours: &str) -> Result<(), String> {
    if tool == Tool::BuildidList {
        let perf: Vec<String> = perf
            .lines()
            .map(|l| match l.find("/tmp/perf-vdso.so-") {
                Some(at) => format!("{}[vdso]", &l[..at]),
                None => l.to_owned(),
            })
            .collect();
        let ours: Vec<&str> = ours.lines().collect();
        return if perf == ours && !ours.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "not perf's lines with [vdso] for its temp copy: perf {perf:?}, bport {ours:?}"
            ))
        };
    }
    let squash = |l: &str| {
        l.split_whitespace()
            .filter(|w| tool != Tool::Report || !w.ends_with('%'))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let theirs: Vec<String> = perf.lines().map(squash).collect();
    let mut at = 0;
    for line in ours.lines().map(squash) {
        let from = if tool == Tool::Report { 0 } else { at };
        match theirs[from..].iter().position(|t| *t == line) {
            Some(i) => at = from + i + 1,
            None => {
                return Err(format!(
                    "bport line not in perf's output (in order): {line}"
                ))
            }
        }
    }
    if ours.trim().is_empty() {
        return Err("bport printed nothing".into());
    }
    Ok(())
}

struct Corpus {
    _dir: tempfile::TempDir,
    home: PathBuf,
    symfs: PathBuf,
    files: Vec<(String, PathBuf)>,
}

/// Every vendored file, unpacked into a temporary directory.
fn corpus() -> Corpus {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let symfs = dir.path().join("empty-symfs");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&symfs).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".zst").map(str::to_owned))
        .collect();
    names.sort();
    let files = names
        .into_iter()
        .map(|name| {
            let packed =
                std::fs::File::open(Path::new(FIXTURES).join(format!("{name}.zst"))).unwrap();
            let mut decoder = zstd::stream::read::Decoder::new(packed)
                .unwrap_or_else(|e| panic!("{name}.zst: {e}"));
            let path = dir.path().join(&name);
            let mut out = std::fs::File::create(&path).unwrap();
            std::io::copy(&mut decoder, &mut out).unwrap_or_else(|e| panic!("{name}.zst: {e}"));
            (name, path)
        })
        .collect();
    Corpus {
        _dir: dir,
        home,
        symfs,
        files,
    }
}

impl Corpus {
    /// perf's output of `tool` on `file`; `None` when perf cannot read the file.
    fn perf(&self, tool: Tool, file: &Path) -> Option<String> {
        let f = file.to_str().unwrap();
        let s = self.symfs.to_str().unwrap();
        let args: Vec<&str> = match tool {
            Tool::Script => vec!["script", "-i", f, "--symfs", s, "--kallsyms", "/dev/null"],
            Tool::Report => vec![
                "report",
                "--stdio",
                "-i",
                f,
                "--symfs",
                s,
                "--kallsyms",
                "/dev/null",
            ],
            Tool::BuildidList => vec!["buildid-list", "-i", f],
        };
        let out = oracle::perf(&self.home)
            .args(&args)
            .output()
            .expect("spawn perf");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && !(tool == Tool::Script && text.is_empty())).then_some(text)
    }

    fn bport(&self, tool: Tool, file: &Path) -> bport::CommandOutput {
        let f = file.to_str().unwrap();
        let s = self.symfs.to_str().unwrap();
        let args: Vec<&str> = match tool {
            Tool::Script => vec![
                "script",
                "-q",
                "-i",
                f,
                "--symfs",
                s,
                "--kallsyms",
                "/dev/null",
            ],
            Tool::Report => vec![
                "report",
                "--stdio",
                "-q",
                "-i",
                f,
                "--symfs",
                s,
                "--kallsyms",
                "/dev/null",
            ],
            Tool::BuildidList => vec!["buildid-list", "-q", "-i", f],
        };
        bport::run(&self.home, &args)
    }
}

/// The rows of a `report --stdio` table and the call graph under each, with the totals above each table (lost
/// samples, samples, event count): no other `#` comments (column headers, perf's random tip), no blank lines.
fn report_rows(text: &str) -> String {
    const TOTALS: [&str; 3] = ["# Total Lost Samples:", "# Samples:", "# Event count"];
    text.lines()
        .filter(|l| {
            (!l.starts_with('#') || TOTALS.iter().any(|t| l.starts_with(t))) && !l.trim().is_empty()
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

fn first_difference(theirs: &str, ours: &str) -> String {
    let (t, o): (Vec<&str>, Vec<&str>) = (theirs.lines().collect(), ours.lines().collect());
    let i = t
        .iter()
        .zip(&o)
        .position(|(a, b)| a != b)
        .unwrap_or(t.len().min(o.len()));
    format!(
        "line {}: perf {:?}, bport {:?} ({} vs {} lines)",
        i + 1,
        t.get(i).unwrap_or(&"<end>"),
        o.get(i).unwrap_or(&"<end>"),
        t.len(),
        o.len()
    )
}

/// Compares `tool` over the corpus; fails on any difference not listed, and on any listed one that is gone.
fn compare(tool: Tool) {
    skip_unless!(oracle::has_perf());
    let corpus = corpus();
    let (mut same, mut compared, mut unreadable) = (0, 0, 0);
    let mut problems = Vec::new();
    for (name, path) in &corpus.files {
        // Files perf cannot read have their snapshot test instead.
        if corpus.perf(Tool::Script, path).is_none() {
            unreadable += 1;
            continue;
        }
        let theirs = corpus.perf(tool, path).unwrap_or_default();
        let out = corpus.bport(tool, path);
        let (theirs, ours) = match tool {
            Tool::Report => (report_rows(&theirs), report_rows(&out.stdout)),
            _ => (theirs, out.stdout.clone()),
        };
        compared += 1;
        let equal = out.code == Some(0) && theirs == ours;
        same += usize::from(equal);
        let expected = EXPECTED_FAILURES
            .iter()
            .find(|(f, t, _)| f == name && *t == tool);
        let deviation = DEVIATIONS.iter().find(|(f, t, _)| f == name && *t == tool);
        match (equal, expected, deviation) {
            (true, Some((_, _, why)), _) => problems.push(format!(
                "{name}: now identical to perf; remove its EXPECTED_FAILURES entry ({why})"
            )),
            (true, None, Some(_)) => problems.push(format!(
                "{name}: now identical; remove its DEVIATIONS entry"
            )),
            (true, None, None) | (false, Some(_), _) => {}
            (false, None, Some((_, _, why))) => {
                if let Err(e) = deviation_holds(tool, &theirs, &ours) {
                    problems.push(format!("{name} (deviation: {why}): {e}"));
                }
            }
            (false, None, None) => problems.push(format!(
                "{name}: {}{}",
                first_difference(&theirs, &ours),
                if out.code == Some(0) {
                    String::new()
                } else {
                    format!("\n{}", out.transcript())
                }
            )),
        }
    }
    eprintln!(
        "corpus {tool:?}: {same} of {compared} files identical to perf 6.1 ({} expected failures listed, {} \
         deviations, {unreadable} files perf cannot read)",
        EXPECTED_FAILURES.iter().filter(|e| e.1 == tool).count(),
        DEVIATIONS.iter().filter(|e| e.1 == tool).count(),
    );
    assert!(compared > 0, "no corpus file was compared");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn corpus_script_equals_perf_script() {
    compare(Tool::Script);
}

#[test]
fn corpus_report_rows_equal_perf_report() {
    compare(Tool::Report);
}

#[test]
fn corpus_buildid_list_equals_perf_buildid_list() {
    compare(Tool::BuildidList);
}

/// Files perf 6.1 cannot read (newer format, corrupt) are read by bport; its output was checked by hand once
/// and is kept as a golden transcript beside the file (`BPORT_UPDATE_GOLDEN=1` rewrites them):
/// - `perf.data.piped.intel_pt-4.14`: perf stops at "bad event header size" (it mis-sizes the pipe-mode AUX
///   records); bport prints the 11 `cycles` samples, which are the same samples as in the file-mode sibling's
///   perf output; the PT trace is not decoded (see DEVIATIONS).
/// - `perf.data.piped.corrupted.zero_size_sample-3.2`: a sample record of size 0; perf fails with "bad event
///   header size", bport with the offset and type of the record.
#[test]
fn corpus_files_perf_cannot_read_match_their_snapshots() {
    skip_unless!(oracle::has_perf());
    let corpus = corpus();
    let bless = std::env::var_os("BPORT_UPDATE_GOLDEN").is_some();
    let mut checked = Vec::new();
    let mut problems = Vec::new();
    for (name, path) in &corpus.files {
        if corpus.perf(Tool::Script, path).is_some() {
            continue;
        }
        let ours = corpus.bport(Tool::Script, path).transcript();
        let golden = Path::new(FIXTURES).join(format!("{name}.script.golden"));
        if bless {
            std::fs::write(&golden, &ours).unwrap();
        }
        match std::fs::read_to_string(&golden) {
            Ok(want) if want == ours => {}
            Ok(want) => problems.push(format!("{name}: {}", first_difference(&want, &ours))),
            Err(e) => problems.push(format!(
                "{name}: no golden file {} ({e}); run with BPORT_UPDATE_GOLDEN=1",
                golden.display()
            )),
        }
        checked.push(name.clone());
    }
    eprintln!(
        "corpus: {} files perf cannot read, checked against their snapshots: {checked:?}",
        checked.len()
    );
    assert_eq!(
        checked,
        [
            "perf.data.piped.corrupted.zero_size_sample-3.2",
            "perf.data.piped.intel_pt-4.14"
        ],
        "the files perf cannot read changed"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn corpus_fixtures_are_documented() {
    let readme = std::fs::read_to_string(Path::new(FIXTURES).join("README.md")).unwrap();
    assert!(
        Path::new(FIXTURES).join("LICENSE").exists(),
        "the licence notice must stay beside the files"
    );
    let mut n = 0;
    for entry in std::fs::read_dir(FIXTURES).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".zst") {
            n += 1;
            assert!(
                readme.contains(&format!("`{name}`")),
                "{name} is not listed in the README"
            );
        }
    }
    for (file, _, _) in EXPECTED_FAILURES.iter().chain(DEVIATIONS) {
        assert!(
            readme.contains(&format!("`{file}.zst`")),
            "{file} is listed in a table but not vendored"
        );
    }
    assert_eq!(n, 49);
}

/// Pipe-mode files carry no build-id table, and with `--symfs` alone perf 6.1 does not use the
/// running kernel's symbols for them ("do not try local files if a symfs was given", dso__load_kernel_sym):
/// kernel addresses stay `[unknown]`. bport named them with this machine's /proc/kallsyms
/// (`srso_alias_return_thunk+0xa524d`).
#[test]
fn corpus_pipe_files_with_symfs_only_keep_the_running_kernel_out() {
    skip_unless!(oracle::has_perf());
    let corpus = corpus();
    let s = corpus.symfs.to_str().unwrap();
    let mut compared = 0;
    for (name, path) in corpus.files.iter().filter(|(n, _)| n.contains(".piped.")) {
        let f = path.to_str().unwrap();
        let out = oracle::perf(&corpus.home)
            .args(["script", "-i", f, "--symfs", s])
            .output()
            .expect("spawn perf");
        if !out.status.success() || out.stdout.is_empty() {
            continue;
        }
        let ours = bport::run(&corpus.home, &["script", "-q", "-i", f, "--symfs", s]);
        let theirs = String::from_utf8_lossy(&out.stdout);
        assert!(
            ours.code == Some(0) && ours.stdout == theirs,
            "{name}: {}",
            first_difference(&theirs, &ours.stdout)
        );
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} pipe-mode files compared");
}

/// Branch mode and the sample mode sort by different keys: a key of the other mode, or `--branch-stack` on a
/// file without branch stacks, is refused with the reason (exit 2), not answered with an empty table.
#[test]
fn corpus_report_refuses_sort_keys_of_the_other_mode() {
    let corpus = corpus();
    let path = |name: &str| {
        let (_, p) = corpus.files.iter().find(|(n, _)| n == name).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let (branch, plain) = (path("perf.data.branch-4.14"), path("perf.data.busy.0-3.4"));
    let cases: [(&[&str], &str); 3] = [
        (
            &["-i", &branch, "--sort", "comm,sym"],
            "sort key `sym` needs the sample mode",
        ),
        (
            &["-i", &plain, "--sort", "symbol_to"],
            "sort key `symbol_to` needs branch mode",
        ),
        (&["-i", &plain, "-b"], "has no branch data"),
    ];
    for (args, want) in cases {
        let mut all = vec!["report", "--stdio", "-q"];
        all.extend_from_slice(args);
        let out = bport::run(&corpus.home, &all);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.transcript());
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    }
    // --no-branch-stack gives the sample mode's table for a branch file.
    let out = bport::run(
        &corpus.home,
        &[
            "report",
            "--stdio",
            "-q",
            "-i",
            &branch,
            "--no-branch-stack",
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(
        out.stdout.contains("# Overhead  Command  Shared Object"),
        "{}",
        out.stdout
    );
}
