//! The targets file (`patchlists/targets.yaml`): per backport target, the kernel version whose perf ABI the
//! profiler matrix is checked against, an optional branch of a kernel tree that must carry the fixes, and the patch
//! lists it requires.
//!
//! Owns parsing and validation only (with the line of every mistake); what the checks do with a target lives in
//! [`super::checks`]. The format is YAML read with serde_norway; unknown keys are errors, so a typo such as
//! `branhc:` is reported instead of silently disabling the branch check.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Where the shipped targets file lives, relative to the bport source tree (the tests read it there; the binary
/// carries its own copy).
#[cfg(test)]
pub const DEFAULT_TARGETS: &str = "patchlists/targets.yaml";

/// The directory the built-in targets file and its lists are named under in messages: they are in the binary, so
/// `bport verify` says the same from any directory.
pub const BUILT_IN_DIR: &str = "<built-in>/patchlists";

/// The shipped targets file and the patch lists it names, built into the binary (`--targets FILE` overrides them).
const BUILT_IN: &[(&str, &str)] = &[
    (
        "targets.yaml",
        include_str!("../../patchlists/targets.yaml"),
    ),
    (
        "perf-callchain-record-mode.txt",
        include_str!("../../patchlists/perf-callchain-record-mode.txt"),
    ),
    (
        "perf-dwarf-unwind.txt",
        include_str!("../../patchlists/perf-dwarf-unwind.txt"),
    ),
    (
        "perf-lbr-callchain.txt",
        include_str!("../../patchlists/perf-lbr-callchain.txt"),
    ),
];

/// The text of a built-in file named `path` (under [`BUILT_IN_DIR`]), if it is one.
fn built_in(path: &Path) -> Option<&'static str> {
    let name = path.strip_prefix(BUILT_IN_DIR).ok()?.to_str()?;
    BUILT_IN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// Reads a patch list named by a target: a built-in one from the binary, any other from disk.
pub fn read_list(path: &Path) -> std::io::Result<String> {
    match built_in(path) {
        Some(text) => Ok(text.to_owned()),
        None => std::fs::read_to_string(path),
    }
}

/// The parsed, validated targets file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets {
    /// The file it came from (patch list paths are relative to its directory).
    pub path: PathBuf,
    /// The targets, in file order.
    pub targets: Vec<Target>,
}

/// One backport target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The kernel version as written (e.g. "4.1"); parsed by `perf::abi` when the matrix runs.
    pub kernel: String,
    /// A branch or ref of the kernel tree that must carry every listed fix; `None` skips the branch check.
    pub branch: Option<String>,
    /// The required patch lists, resolved against the targets file's directory; each exists.
    pub lists: Vec<PathBuf>,
    /// Line of the target's `kernel:` key in the targets file, for messages.
    pub line: usize,
}

/// What is wrong with a targets file. Every variant names the file, and the line where it can.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read the targets file {path}")]
    Read {
        /// The targets file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// YAML syntax or schema error (unknown key, wrong type, missing `kernel`).
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The targets file.
        path: PathBuf,
        /// 1-based line, 0 when the parser could not tell.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// A target's kernel version is empty or does not start with `MAJOR.MINOR`.
    #[error("{path}:{line}: kernel version {kernel:?} is not a version like \"4.1\" or \"5.14.0-331.el9\"")]
    BadVersion {
        /// The targets file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was written.
        kernel: String,
    },
    /// Two targets for the same kernel version: which one `--kernel V` means would be ambiguous.
    #[error("{path}:{line}: kernel {kernel:?} is already a target (line {first_line})")]
    Duplicate {
        /// The targets file.
        path: PathBuf,
        /// 1-based line of the second one.
        line: usize,
        /// 1-based line of the first one.
        first_line: usize,
        /// The repeated version.
        kernel: String,
    },
    /// A required patch list does not exist next to the targets file.
    #[error("{path}:{line}: patch list {list:?} of kernel {kernel:?} does not exist ({resolved})")]
    MissingList {
        /// The targets file.
        path: PathBuf,
        /// 1-based line of the target.
        line: usize,
        /// The target's kernel.
        kernel: String,
        /// The list as written.
        list: String,
        /// Where it was looked for.
        resolved: PathBuf,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    targets: Vec<RawTarget>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    kernel: String,
    #[serde(default)]
    branch: Option<String>,
    #[serde(default)]
    lists: Vec<String>,
}

impl Targets {
    /// The targets file built into the binary.
    pub fn built_in() -> Result<Targets, Error> {
        let path = Path::new(BUILT_IN_DIR).join("targets.yaml");
        let text = built_in(&path).unwrap_or_default();
        Targets::parse(text, &path)
    }

    /// Reads and validates the targets file at `path`.
    pub fn load(path: &Path) -> Result<Targets, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.to_owned(),
            source,
        })?;
        Targets::parse(&text, path)
    }

    /// Parses and validates targets-file text; `path` names it in errors and anchors relative list paths.
    pub fn parse(text: &str, path: &Path) -> Result<Targets, Error> {
        let raw: RawFile = serde_norway::from_str(text).map_err(|e| Error::Syntax {
            path: path.to_owned(),
            line: e.location().map_or(0, |l| l.line()),
            message: e.to_string(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let kernel_lines = kernel_key_lines(text);
        let mut targets: Vec<Target> = Vec::with_capacity(raw.targets.len());
        for (index, raw) in raw.targets.into_iter().enumerate() {
            // serde gives no spans for values; the n-th `kernel:` key is the n-th target's.
            let line = kernel_lines.get(index).copied().unwrap_or(0);
            if !looks_like_version(&raw.kernel) {
                return Err(Error::BadVersion {
                    path: path.to_owned(),
                    line,
                    kernel: raw.kernel,
                });
            }
            if let Some(first) = targets.iter().find(|t| t.kernel == raw.kernel) {
                return Err(Error::Duplicate {
                    path: path.to_owned(),
                    line,
                    first_line: first.line,
                    kernel: raw.kernel,
                });
            }
            let mut lists = Vec::with_capacity(raw.lists.len());
            for list in raw.lists {
                let resolved = dir.join(&list);
                if built_in(&resolved).is_none() && !resolved.is_file() {
                    return Err(Error::MissingList {
                        path: path.to_owned(),
                        line,
                        kernel: raw.kernel,
                        list,
                        resolved,
                    });
                }
                lists.push(resolved);
            }
            targets.push(Target {
                kernel: raw.kernel,
                branch: raw.branch.filter(|b| !b.trim().is_empty()),
                lists,
                line,
            });
        }
        Ok(Targets {
            path: path.to_owned(),
            targets,
        })
    }

    /// The target for exactly this version string, if the file has one.
    pub fn find(&self, kernel: &str) -> Option<&Target> {
        self.targets.iter().find(|t| t.kernel == kernel)
    }
}

/// `MAJOR.MINOR` then anything: the full grammar belongs to `perf::abi::KernelVersion`; this only catches the
/// mistakes worth a line number here (an empty value, a branch name in the `kernel` field).
fn looks_like_version(s: &str) -> bool {
    let mut parts = s.splitn(3, ['.', '-']);
    let major = parts.next().unwrap_or("");
    let minor = parts.next().unwrap_or("");
    !major.is_empty()
        && major.bytes().all(|b| b.is_ascii_digit())
        && !minor.is_empty()
        && minor.bytes().take_while(|b| b.is_ascii_digit()).count() > 0
}

/// 1-based lines holding a `kernel:` key, in order.
fn kernel_key_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start().trim_start_matches('-').trim_start();
            t.starts_with("kernel:") && !l.trim_start().starts_with('#')
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_targets_are_the_shipped_file_with_every_list() {
        let embedded = Targets::built_in().unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("patchlists");
        let shipped = Targets::load(&dir.join("targets.yaml")).unwrap();
        assert_eq!(embedded.targets.len(), shipped.targets.len());
        for (b, s) in embedded.targets.iter().zip(&shipped.targets) {
            assert_eq!(
                (&b.kernel, &b.branch, b.line),
                (&s.kernel, &s.branch, s.line)
            );
            assert_eq!(b.lists.len(), s.lists.len());
            for (bl, sl) in b.lists.iter().zip(&s.lists) {
                assert!(bl.starts_with(BUILT_IN_DIR), "{}", bl.display());
                assert_eq!(read_list(bl).unwrap(), std::fs::read_to_string(sl).unwrap());
            }
        }
        // Every shipped list is built in, whether or not a target names it yet.
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".txt") || name.ends_with(".yaml") {
                assert!(
                    built_in(&Path::new(BUILT_IN_DIR).join(&name)).is_some(),
                    "patchlists/{name} is not built into the binary (targets.rs BUILT_IN)"
                );
            }
        }
    }

    fn dir_with_lists(names: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for n in names {
            std::fs::write(dir.path().join(n), "# empty\n").unwrap();
        }
        dir
    }

    #[test]
    fn parses_targets_with_optional_branch_and_resolved_lists() {
        let dir = dir_with_lists(&["a.txt", "b.txt"]);
        let path = dir.path().join("targets.yaml");
        let text = "targets:\n  - kernel: \"4.1\"\n    branch: vendor/4.1\n    lists: [a.txt, b.txt]\n  - kernel: \"6.1\"\n";
        let t = Targets::parse(text, &path).unwrap();
        assert_eq!(
            t.targets,
            vec![
                Target {
                    kernel: "4.1".into(),
                    branch: Some("vendor/4.1".into()),
                    lists: vec![dir.path().join("a.txt"), dir.path().join("b.txt")],
                    line: 2,
                },
                Target {
                    kernel: "6.1".into(),
                    branch: None,
                    lists: vec![],
                    line: 5,
                },
            ]
        );
        assert_eq!(t.find("6.1").map(|t| t.line), Some(5));
        assert_eq!(t.find("6.2"), None);
    }

    #[test]
    fn unknown_key_is_reported_with_its_line() {
        let path = Path::new("/x/targets.yaml");
        let err =
            Targets::parse("targets:\n  - kernel: \"4.1\"\n    branhc: v\n", path).unwrap_err();
        assert_eq!(
            err.to_string().split(": ").take(2).collect::<Vec<_>>(),
            ["/x/targets.yaml:3", "targets[0]"]
        );
        assert!(err.to_string().contains("unknown field `branhc`"), "{err}");
    }

    #[test]
    fn duplicate_bad_version_and_missing_list_name_their_lines() {
        let dir = dir_with_lists(&[]);
        let path = dir.path().join("targets.yaml");
        let dup = Targets::parse(
            "targets:\n  - kernel: \"4.1\"\n  - kernel: \"5.4\"\n  - kernel: \"4.1\"\n",
            &path,
        )
        .unwrap_err();
        assert_eq!(
            dup.to_string(),
            format!(
                "{}:4: kernel \"4.1\" is already a target (line 2)",
                path.display()
            )
        );
        let bad = Targets::parse("targets:\n  - kernel: vendor-branch\n", &path).unwrap_err();
        assert_eq!(
            bad.to_string(),
            format!(
                "{}:2: kernel version \"vendor-branch\" is not a version like \"4.1\" or \"5.14.0-331.el9\"",
                path.display()
            )
        );
        let missing = Targets::parse(
            "targets:\n  - kernel: \"4.1\"\n    lists: [nope.txt]\n",
            &path,
        )
        .unwrap_err();
        assert!(
            matches!(&missing, Error::MissingList { line: 2, list, .. } if list == "nope.txt"),
            "{missing}"
        );
    }

    #[test]
    fn the_shipped_targets_file_is_valid_and_covers_every_required_kernel() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_TARGETS);
        let t = Targets::load(&path).unwrap();
        let kernels: Vec<&str> = t.targets.iter().map(|t| t.kernel.as_str()).collect();
        assert_eq!(
            kernels,
            ["3.10", "4.1", "4.9", "4.19", "5.4", "5.10", "5.15", "6.1"]
        );
        // The fix this project exists for must be required of the 4.1 target.
        let four_one = t.find("4.1").unwrap();
        let has_fix = four_one.lists.iter().any(|l| {
            std::fs::read_to_string(l).unwrap().lines().any(|line| {
                line == "7322d6c98dd2 perf script: Initialize callchain_param.record_mode"
            })
        });
        assert!(has_fix, "4.1 lists: {:?}", four_one.lists);
    }

    #[test]
    fn shipped_patch_lists_are_sha_subject_lines_and_documented() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("patchlists");
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        let mut lists = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "txt") {
                continue;
            }
            lists += 1;
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(
                readme.contains(&format!("`{name}`")),
                "{name} not in README.md"
            );
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                if line.starts_with('#') || line.trim().is_empty() {
                    continue;
                }
                let (sha, subject) = line.split_once(' ').unwrap();
                assert!(
                    (10..=40).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{name}: {line}"
                );
                assert!(!subject.trim().is_empty(), "{name}: {line}");
            }
        }
        assert_eq!(lists, 3);
    }
}
