//! The module dependency rules of DESIGN.md ("Dependencies point down"), checked on the source text: a layer that
//! names a module above it fails here, tests and `#[cfg(test)]` code included, so `perf` stays a library that could
//! move into its own crate by moving a directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// For each top-level module, the top-level modules it must never name.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("perf", &["cli", "verify", "backport", "rerere", "git"]),
    ("git", &["cli", "verify", "backport", "rerere", "perf"]),
    ("rerere", &["cli", "verify", "backport", "perf"]),
    ("backport", &["cli", "verify", "perf"]),
    ("verify", &["cli"]),
];

/// `crate::NAME` paths named in code (comment lines skipped: a doc link is no dependency), as (line, NAME).
fn crate_paths(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in source.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let preceded_by_ident = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
            let after = &rest[at + "crate::".len()..];
            if !preceded_by_ident {
                for name in first_segments(after) {
                    found.push((i + 1, name));
                }
            }
            rest = after;
        }
    }
    found
}

/// The first path segment after `crate::`: `perf::data` → [perf]; a group `{git, perf::data}` → [git, perf].
fn first_segments(after: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = after.strip_prefix('{') else {
        return vec![ident(after)]
            .into_iter()
            .filter(|n| !n.is_empty())
            .collect();
    };
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut segment_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => segment_start = true,
            c if segment_start && !c.is_whitespace() => {
                segment_start = false;
                let name = ident(&group[i..]);
                if !name.is_empty() {
                    names.push(name);
                }
            }
            _ => {}
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
    {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn violations(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (layer, forbidden) in FORBIDDEN {
        let mut files = Vec::new();
        let dir = src.join(layer);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let flat = src.join(format!("{layer}.rs"));
        if flat.is_file() {
            files.push(flat);
        }
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, name) in crate_paths(&text) {
                if forbidden.contains(&name.as_str()) {
                    found
                        .entry(layer.to_string())
                        .or_default()
                        .push(format!("{}:{line} names crate::{name}", file.display()));
                }
            }
        }
    }
    found
}

#[test]
fn no_layer_names_a_module_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "modules that import a layer above them (DESIGN.md, module map):\n{found:#?}"
    );
}

#[test]
fn the_scan_sees_imports_and_ignores_comments_and_lookalikes() {
    let text = "use crate::verify::workloads::Build;\n\
                // see crate::backport for why\n\
                let x = crate::perf::data::Reader::open(p);\n\
                let y = mycrate::git::thing();\n\
                use crate::{git, perf};\n";
    assert_eq!(
        crate_paths(text),
        vec![
            (1, "verify".to_string()),
            (3, "perf".to_string()),
            (5, "git".to_string()),
            (5, "perf".to_string())
        ]
    );

    // The whole check on a tree with one bad import fails, naming the file and line.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("perf/script")).unwrap();
    std::fs::write(
        dir.path().join("perf/script/x.rs"),
        "fn f() {}\n#[cfg(test)]\nuse crate::verify::workloads::Build;\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("verify.rs"), "use crate::perf::data;\n").unwrap();
    let found = violations(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found["perf"][0].ends_with("x.rs:3 names crate::verify"),
        "{found:?}"
    );
}

/// Lines of a command file that choose an error's exit code themselves (`CliError::new`, which takes a `Kind`),
/// as (line, text); that choice belongs to `cli/error.rs` alone (issue 17).
fn inline_error_kinds(source: &str) -> Vec<(usize, String)> {
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//") && l.contains("CliError::new("))
        .map(|(i, l)| (i + 1, l.trim().to_owned()))
        .collect()
}

#[test]
fn only_cli_error_rs_maps_errors_to_exit_codes() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut files = Vec::new();
    rust_files(&cli, &mut files);
    assert!(files.len() > 10, "the scan found the command files");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("error.rs")) {
        let source = std::fs::read_to_string(file).unwrap();
        for (line, text) in inline_error_kinds(&source) {
            found.push(format!("{}:{line}: {text}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "command files choose exit codes inline; add a From impl in src/cli/error.rs instead:\n{}",
        found.join("\n")
    );
    assert_eq!(
        inline_error_kinds(
            "// CliError::new(Kind::User, e)\nlet e = CliError::new(Kind::User, e);"
        )
        .len(),
        1,
        "the scan sees code and skips comments"
    );
}
