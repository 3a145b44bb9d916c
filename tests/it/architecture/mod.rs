//! The rules of ARCHITECTURE.md, checked on the source text, tests and `#[cfg(test)]` code included: the layers
//! ("Dependencies point down"), the parts inside `perf` (read from ARCHITECTURE.md's own table, so the page and
//! the check cannot drift apart), no import loop in any folder, where `unsafe` lives, that `abi` alone holds perf
//! ABI numbers, that only `cli/error/` chooses exit codes and that the CLI names no perf.data record internals.
//!
//! Each check is a function over the crate's files ([`scan::SourceFile`]) returning what breaks it, so that
//! `planted.rs` can feed it files with each kind of breach and see it caught.

mod graph;
mod long_fns;
mod planted;
mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use scan::SourceFile;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn architecture_md() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap()
}

fn assert_none(problems: Vec<String>, what: &str) {
    assert!(problems.is_empty(), "{what}:\n{}", problems.join("\n"));
}

/// For each top-level module, the top-level modules it must never name.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("perf", &["cli", "verify", "backport", "rerere", "git"]),
    ("git", &["cli", "verify", "backport", "rerere", "perf"]),
    ("rerere", &["cli", "verify", "backport", "perf"]),
    ("backport", &["cli", "verify", "perf"]),
    ("verify", &["cli"]),
];

/// Paths that name a layer above the file's own, as `file:line names crate::X`.
fn layer_breaches(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let Some((_, forbidden)) = FORBIDDEN
            .iter()
            .find(|(layer, _)| file.module.first().is_some_and(|m| m == layer))
        else {
            continue;
        };
        for named in file.named() {
            if named
                .path
                .first()
                .is_some_and(|top| forbidden.contains(&top.as_str()))
            {
                found.push(format!(
                    "{}:{} names crate::{}",
                    file.rel.display(),
                    named.line,
                    named.path[0]
                ));
            }
        }
    }
    found
}

#[test]
fn no_layer_names_a_module_above_it() {
    let files = scan::library_files(&src());
    assert!(
        files.len() > 150
            && files
                .iter()
                .any(|f| f.rel == Path::new("perf/sys/event.rs")),
        "the scan read the crate"
    );
    assert_none(
        layer_breaches(&files),
        "modules that name a layer above them (ARCHITECTURE.md, the parts)",
    );
}

/// What `verify` may name of `backport`: its read-only face (patch lists, the already-applied matcher, and the
/// error both return). Applying, state and rerere are the engine's.
const VERIFY_MAY_NAME_OF_BACKPORT: &[&str] = &["patchlist", "matcher", "Error"];

fn verify_breaches(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| m == "verify"))
    {
        for named in file.named() {
            if named.path.first().is_some_and(|m| m == "backport")
                && named
                    .path
                    .get(1)
                    .is_none_or(|item| !VERIFY_MAY_NAME_OF_BACKPORT.contains(&item.as_str()))
            {
                found.push(format!(
                    "{}:{} names crate::{}",
                    file.rel.display(),
                    named.line,
                    named.joined()
                ));
            }
        }
    }
    found
}

#[test]
fn verify_uses_only_the_read_only_face_of_backport() {
    let files = scan::library_files(&src());
    let matcher_users = files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| m == "verify"))
        .flat_map(|f| f.named())
        .filter(|n| {
            n.path
                .starts_with(&["backport".to_string(), "matcher".to_string()])
        })
        .count();
    assert!(matcher_users > 0, "the scan sees verify use the matcher");
    assert_none(
        verify_breaches(&files),
        "verify names parts of backport beyond patch lists and the matcher",
    );
}

/// The parts of `perf` and what each may name of the others, read from ARCHITECTURE.md's table whose header row
/// starts `| part of perf |`: the first cell names the part, the last lists the parts it may name (`—` for
/// none).
fn perf_parts(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    doc.lines()
        .skip_while(|l| !l.starts_with("| part of perf |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
            let part = ticked(cells.first()?).into_iter().next()?;
            Some((part, ticked(cells.last()?).into_iter().collect()))
        })
        .collect()
}

/// Paths inside `perf` that name a part of `perf` its row in `parts` does not list, and parts on disk that the
/// table lacks.
fn perf_part_breaches(
    files: &[SourceFile],
    parts: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let perf = ["perf".to_string()];
    let on_disk = graph::children_graph(files, &perf);
    let mut found: Vec<String> = on_disk
        .keys()
        .filter(|p| !parts.contains_key(*p))
        .map(|p| format!("perf::{p} has no row in ARCHITECTURE.md's table of perf's parts"))
        .collect();
    for file in files
        .iter()
        .filter(|f| f.module.len() > 1 && f.module[0] == "perf")
    {
        let part = &file.module[1];
        let may = parts.get(part).cloned().unwrap_or_default();
        for named in file.named() {
            let Some(other) = named.path.get(1).filter(|_| named.path[0] == "perf") else {
                continue;
            };
            if other != part && on_disk.contains_key(other) && !may.contains(other) {
                found.push(format!(
                    "{}:{} names crate::{} (perf::{part} may name {may:?})",
                    file.rel.display(),
                    named.line,
                    named.joined()
                ));
            }
        }
    }
    found
}

#[test]
fn perf_parts_name_only_what_architecture_md_allows() {
    let parts = perf_parts(&architecture_md());
    assert!(
        parts.len() > 10 && parts["data"] == BTreeSet::from(["abi".to_string()]),
        "ARCHITECTURE.md's table of perf's parts was read: {parts:?}"
    );
    // The table itself is layered, and nothing inside perf may name the tools: they sit on top.
    assert_eq!(
        graph::find_cycle(&parts),
        None,
        "ARCHITECTURE.md's table of perf's parts has a loop"
    );
    let users_of_tools: Vec<_> = parts
        .iter()
        .filter(|(_, may)| may.contains("tools"))
        .collect();
    assert!(users_of_tools.is_empty(), "{users_of_tools:?}");
    let files = scan::library_files(&src());
    assert_none(
        perf_part_breaches(&files, &parts),
        "perf's parts name parts that ARCHITECTURE.md does not allow them",
    );
}

/// Folders whose files may still import each other in a loop, as (folder, the modules on the loop). An entry is
/// for a loop that must wait; a stale one fails the test, so the list only shrinks.
const KNOWN_LOOPS: &[(&str, &[&str])] = &[];

/// Every folder's children (files and subfolders, see [`graph::children_graph`]) that name each other in a loop.
fn folder_loops(files: &[SourceFile], known: &[(&str, &[&str])]) -> Vec<String> {
    let mut folders = BTreeSet::new();
    for file in files {
        let folder = scan::module_of(&file.rel.parent().unwrap_or(Path::new("")).join("mod.rs"));
        folders.extend((0..=folder.len()).map(|n| folder[..n].to_vec()));
    }
    let mut problems = Vec::new();
    for folder in &folders {
        let name = folder.join("/");
        let graph = graph::children_graph(files, folder);
        let known = known.iter().find(|(f, _)| *f == name).map(|(_, m)| *m);
        match (graph::find_cycle(&graph), known) {
            (None, None) => {}
            (None, Some(_)) => problems.push(format!(
                "src/{name} no longer has its known loop: remove it from KNOWN_LOOPS"
            )),
            (Some(cycle), known) => {
                let mut on_loop: Vec<&str> = cycle.iter().map(String::as_str).collect();
                on_loop.sort();
                on_loop.dedup();
                if known != Some(&on_loop[..]) {
                    problems.push(format!(
                        "src/{name}: modules import each other in a loop: {}",
                        cycle.join(" → ")
                    ));
                }
            }
        }
    }
    problems
}

#[test]
fn no_folder_imports_itself_in_a_loop() {
    let files = scan::library_files(&src());
    // The scan sees what it must: files, folders and `super::super` paths alike.
    let data = graph::children_graph(&files, &["perf".into(), "data".into()]);
    assert!(
        data["reader"].contains("source") && data["source"].contains("map"),
        "{data:#?}"
    );
    let perf = graph::children_graph(&files, &["perf".into()]);
    assert!(
        perf["record"].contains("data") && perf["tools"].contains("script"),
        "{perf:#?}"
    );
    let top = graph::children_graph(&files, &[]);
    assert!(
        top["cli"].contains("perf") && top["backport"].contains("rerere"),
        "{top:#?}"
    );
    assert_none(folder_loops(&files, KNOWN_LOOPS), "import loops");
}

/// The modules of `perf/data` from the bottom up, as ARCHITECTURE.md lists them: none names one after it.
const DATA_ORDER: &[&str] = &[
    "map", "cursor", "raw", "records", "sample", "codec", "source", "iter", "reader",
];

#[test]
fn perf_data_is_layered_as_architecture_md_lists_it() {
    let doc = architecture_md();
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let listed = "`map` and `cursor` at the bottom, then `raw` (record framing), `records`, `sample`, `codec` \
                  (record layouts), `source` (what the iterator reads), `iter`, and `reader` on top";
    assert!(
        words(&doc).contains(&words(listed)),
        "ARCHITECTURE.md lists perf/data's order as this test does"
    );
    let files = scan::library_files(&src());
    let graph = graph::children_graph(&files, &["perf".into(), "data".into()]);
    for (i, module) in DATA_ORDER.iter().enumerate() {
        let above: Vec<_> = graph[*module]
            .iter()
            .filter(|m| DATA_ORDER[i + 1..].contains(&m.as_str()))
            .collect();
        assert!(
            above.is_empty(),
            "perf/data/{module} names {above:?}, listed above it"
        );
    }
}

/// The files and folders under `src/` that ARCHITECTURE.md's invariant "`unsafe` lives in …" names.
fn unsafe_homes(doc: &str) -> Vec<String> {
    let bullet = doc
        .lines()
        .skip_while(|l| !l.starts_with("- **`unsafe` lives in"))
        .take_while(|l| !l.is_empty())
        .take_while({
            let mut first = true;
            move |l| std::mem::take(&mut first) || !l.starts_with("- ")
        })
        .collect::<Vec<_>>()
        .join(" ");
    bullet
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("perf/") || s.starts_with("src/"))
        .map(|s| s.trim_start_matches("src/").to_owned())
        .collect()
}

/// Files with `unsafe` in code outside `homes`, and `unsafe` in a home without a `// SAFETY:` comment in the
/// comment lines right above it.
fn unsafe_breaches(files: &[(SourceFile, String)], homes: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, text) in files {
        let rel = file.rel.to_string_lossy();
        let at_home = homes.iter().any(|h| {
            if h.ends_with('/') {
                rel.starts_with(h.as_str())
            } else {
                rel == h.as_str()
            }
        });
        let lines: Vec<&str> = text.lines().collect();
        for (i, code) in file.code.lines().enumerate() {
            let uses = code
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == "unsafe");
            if !uses {
                continue;
            }
            if !at_home {
                found.push(format!("{rel}:{}: `unsafe` outside {homes:?}", i + 1));
                continue;
            }
            let explained = lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.trim_start().starts_with("//"))
                .any(|l| l.contains("SAFETY:"));
            if !explained {
                found.push(format!(
                    "{rel}:{}: `unsafe` without a SAFETY comment above it",
                    i + 1
                ));
            }
        }
    }
    found
}

#[test]
fn unsafe_lives_only_where_architecture_md_says() {
    let homes = unsafe_homes(&architecture_md());
    assert!(
        homes.len() >= 3,
        "ARCHITECTURE.md's unsafe rule was read: {homes:?}"
    );
    let src = src();
    let files: Vec<(SourceFile, String)> = scan::library_files(&src)
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(src.join(&f.rel)).unwrap();
            (f, text)
        })
        .collect();
    for home in &homes {
        let found = files
            .iter()
            .any(|(f, _)| f.rel.to_string_lossy().starts_with(home.as_str()));
        assert!(
            found,
            "ARCHITECTURE.md names {home} as a home of unsafe, but no such file exists"
        );
    }
    assert_none(unsafe_breaches(&files, &homes), "unsafe code");
}

/// `const PERF_…` definitions with a value of their own outside `perf/abi` (an alias of an `abi` constant is
/// fine): the kernel's perf ABI numbers live in `abi`.
fn abi_constants_outside_abi(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files
        .iter()
        .filter(|f| !f.module.starts_with(&["perf".into(), "abi".into()]))
    {
        for (i, line) in file.code.lines().enumerate() {
            let Some(at) = line.find("const PERF_") else {
                continue;
            };
            let value = line[at..].split_once('=').map_or("", |(_, v)| v);
            if !value.contains("abi::") {
                found.push(format!("{}:{}: {}", file.rel.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn perf_abi_numbers_live_in_abi() {
    let files = scan::library_files(&src());
    assert_none(
        abi_constants_outside_abi(&files),
        "perf ABI constants defined outside perf/abi (add them to perf/abi/consts.rs)",
    );
}

/// Lines that choose an exit status, as (line, text): `CliError::new` (which takes a `Kind`), the CLI's own
/// `Kind::…` (not `tracefs::Kind` or `ErrorKind`), `ExitCode::from(…)` or `process::exit(…)`. In a command file
/// that choice is a breach: it belongs to the `cli/error/` folder alone.
fn exit_code_choices(file: &SourceFile) -> Vec<(usize, String)> {
    let bare_kind = |line: &str| {
        line.match_indices("Kind::").any(|(at, _)| {
            !line[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
    };
    file.code
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            ["CliError::new(", "ExitCode::from(", "process::exit("]
                .iter()
                .any(|s| l.contains(s))
                || bare_kind(l)
        })
        .map(|(i, l)| (i + 1, l.trim().to_owned()))
        .collect()
}

fn exit_code_breaches(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        if file.module.first().is_none_or(|m| m != "cli")
            || file.module.get(1).is_some_and(|m| m == "error")
        {
            continue;
        }
        for (line, text) in exit_code_choices(file) {
            found.push(format!("{}:{line}: {text}", file.rel.display()));
        }
    }
    found
}

#[test]
fn only_cli_error_maps_errors_to_exit_codes() {
    let files = scan::library_files(&src());
    // The exemption covers the folder that really maps errors, nothing else.
    let mappers = files
        .iter()
        .filter(|f| f.module.starts_with(&["cli".into(), "error".into()]))
        .filter(|f| !exit_code_choices(f).is_empty())
        .count();
    assert!(
        mappers >= 3,
        "src/cli/error/ holds the From impls (found {mappers} files choosing kinds)"
    );
    assert_none(
        exit_code_breaches(&files),
        "command files choose exit codes themselves; add a From impl or a status function in src/cli/error/ \
         instead",
    );
}

/// What `src/cli` may name of `perf::data` and `perf::abi`: opening a recording and reading a kernel version.
/// Record layouts, ABI constants and their name tables are for the tools under `perf/tools` (and `script`) to
/// format; a command file that needs them is doing engine work (a record formatter in `cli/dump.rs`, say).
const CLI_MAY_NAME: &[(&str, &[&str])] = &[
    ("data", &["PerfFile", "ReadError", "Warning"]),
    ("abi", &["KernelVersion", "ParseKernelVersionError"]),
];

/// The paths under `crate::perf::` that a CLI file names outside [`CLI_MAY_NAME`], as `file:line names path`.
fn cli_format_breaches(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| m == "cli"))
    {
        for named in file.named() {
            let p = &named.path;
            if p.first().is_none_or(|m| m != "perf") {
                continue;
            }
            let Some((_, allowed)) = CLI_MAY_NAME
                .iter()
                .find(|(m, _)| p.get(1).is_some_and(|x| x == m))
            else {
                continue;
            };
            // Naming the module itself (`use crate::perf::data;`) would let anything of it through.
            if p.get(2)
                .is_none_or(|item| !allowed.contains(&item.as_str()))
            {
                found.push(format!(
                    "{}:{} names crate::{}",
                    file.rel.display(),
                    named.line,
                    named.joined()
                ));
            }
        }
    }
    found
}

#[test]
fn the_cli_formats_no_perf_data_records_itself() {
    let files = scan::library_files(&src());
    let opens = files
        .iter()
        .filter(|f| f.module.first().is_some_and(|m| m == "cli"))
        .flat_map(|f| f.named())
        .filter(|n| n.joined().starts_with("perf::data::PerfFile"))
        .count();
    assert!(
        opens >= 3,
        "the scan sees the command files open recordings through perf::data::PerfFile"
    );
    assert_none(
        cli_format_breaches(&files),
        "command files that name perf.data record internals or ABI constants; format in perf::tools (or add \
         what they need to its API) instead",
    );
}
