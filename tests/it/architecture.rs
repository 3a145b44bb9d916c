//! The module dependency rules of ARCHITECTURE.md ("Dependencies point down"), checked on the source text: a layer that
//! names a module above it fails here, tests and `#[cfg(test)]` code included, so `perf` stays a library that could
//! move into its own crate by moving a directory. Inside the layers: only `cli/error/` chooses exit codes; the CLI
//! names no perf.data record internals (formatting is `perf::tools`'); nothing in the engine imports
//! `perf::tools`; `perf/data`'s files import each other as a tree.

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
        "modules that import a layer above them (ARCHITECTURE.md, the parts):\n{found:#?}"
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
/// as (line, text); that choice belongs to the `cli/error/` folder alone.
fn inline_error_kinds(source: &str) -> Vec<(usize, String)> {
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//") && l.contains("CliError::new("))
        .map(|(i, l)| (i + 1, l.trim().to_owned()))
        .collect()
}

#[test]
fn only_cli_error_maps_errors_to_exit_codes() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mapping = cli.join("error");
    let mut files = Vec::new();
    rust_files(&cli, &mut files);
    assert!(files.len() > 10, "the scan found the command files");
    let (mappers, commands): (Vec<_>, Vec<_>) = files.iter().partition(|f| f.starts_with(&mapping));
    // The exemption covers the folder that really maps errors, nothing else.
    let mapped = mappers
        .iter()
        .filter(|f| !inline_error_kinds(&std::fs::read_to_string(f).unwrap()).is_empty())
        .count();
    assert!(
        mapped >= 3,
        "src/cli/error/ holds the From impls (found {mapped} files choosing kinds in {mappers:?})"
    );
    let mut found = Vec::new();
    for file in commands {
        let source = std::fs::read_to_string(file).unwrap();
        for (line, text) in inline_error_kinds(&source) {
            found.push(format!("{}:{line}: {text}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "command files choose exit codes inline; add a From impl in src/cli/error/ instead:\n{}",
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

/// The sibling modules of `dir` (its `*.rs` files but `mod.rs`, the facade that declares and re-exports them)
/// that each one names — `super::X`, `super::{X, …}`, `crate::perf::data::X` — as module → the modules it
/// names. Comment lines are skipped (a doc link is no dependency), and so is a module naming itself.
fn sibling_imports(
    dir: &Path,
    crate_path: &str,
) -> BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
    {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.extension().is_some_and(|e| e == "rs") && stem != "mod" {
            modules.insert(stem, std::fs::read_to_string(&path).unwrap());
        }
    }
    let prefixes = ["super::".to_string(), format!("{crate_path}::")];
    let mut graph = BTreeMap::new();
    for (name, text) in &modules {
        let mut named = std::collections::BTreeSet::new();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for prefix in &prefixes {
                for (at, _) in line.match_indices(prefix.as_str()) {
                    // `super::super::x` or `foo_super::x` is not a sibling.
                    let preceded_by_path = line[..at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
                    if preceded_by_path {
                        continue;
                    }
                    for segment in first_segments(&line[at + prefix.len()..]) {
                        if modules.contains_key(&segment) && &segment != name {
                            named.insert(segment);
                        }
                    }
                }
            }
        }
        graph.insert(name.clone(), named);
    }
    graph
}

/// A cycle of `graph`, as the modules along it with the first repeated at the end (`a → b → a`), or `None`.
fn find_cycle(graph: &BTreeMap<String, std::collections::BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit<'g>(
        node: &'g str,
        graph: &'g BTreeMap<String, std::collections::BTreeSet<String>>,
        marks: &mut BTreeMap<&'g str, Mark>,
        path: &mut Vec<&'g str>,
    ) -> Option<Vec<String>> {
        marks.insert(node, Mark::OnPath);
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next.as_str()).copied().unwrap_or(Mark::New) {
                Mark::OnPath => {
                    let from = path.iter().position(|n| *n == next).expect("on the path");
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|n| n.to_string()).collect();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(cycle) = visit(next, graph, marks, path) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if marks.get(node.as_str()).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(cycle) = visit(node, graph, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn perf_data_modules_import_each_other_without_a_cycle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/perf/data");
    let graph = sibling_imports(&dir, "crate::perf::data");
    // The scan sees the files it must: the reader imports the record source, which imports the file map.
    assert!(graph["reader"].contains("source"), "{graph:#?}");
    assert!(graph["source"].contains("map"), "{graph:#?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "src/perf/data modules import each other in a loop: {}\nthe whole graph: {graph:#?}",
            cycle.join(" → ")
        );
    }
}

#[test]
fn the_cycle_check_finds_a_planted_loop_and_passes_a_tree() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "mod.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub use a::A;\n",
    );
    write(
        "a.rs",
        "use super::b::B;\nuse super::{Error, d};\n/// see [`super::c`]\n",
    );
    write("b.rs", "fn f() { crate::perf::data::c::g() }\n");
    write("c.rs", "use super::super::a;\nuse super::ReadError;\n");
    write("d.rs", "mod tests { use super::*; }\n");
    let graph = sibling_imports(dir.path(), "crate::perf::data");
    let names = |v: &[&str]| {
        v.iter()
            .map(|s| s.to_string())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(graph["a"], names(&["b", "d"]), "{graph:?}");
    assert_eq!(graph["b"], names(&["c"]), "{graph:?}");
    assert_eq!(graph["c"], names(&[]), "{graph:?}");
    assert_eq!(find_cycle(&graph), None);

    // c → a closes a → b → c → a.
    write("c.rs", "use super::a::A;\n");
    let graph = sibling_imports(dir.path(), "crate::perf::data");
    assert_eq!(
        find_cycle(&graph),
        Some(["a", "b", "c", "a"].map(String::from).to_vec())
    );
}

/// Every path that `source` names under `root` (e.g. `crate::perf::`), use-trees expanded: `use
/// crate::perf::{data::{PerfFile, Record}, abi::*}` gives `data::PerfFile`, `data::Record`, `abi::*`; an inline
/// `crate::perf::data::PerfFile::open(p)` gives `data::PerfFile::open`. Comment lines are skipped.
fn paths_under(source: &str, root: &str) -> Vec<Vec<String>> {
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths = Vec::new();
    for (at, _) in code.match_indices(root) {
        let preceded_by_ident = code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !preceded_by_ident {
            let tokens = use_tree_tokens(&code[at + root.len()..]);
            expand_use_tree(&tokens, &mut 0, &mut Vec::new(), &mut paths);
        }
    }
    paths
}

/// The tokens of the use-tree (or path) at the start of `text`: identifiers, `*`, `{`, `}`, `,`, stopping where the
/// tree ends (`;`, `(`, `.`, an operator, …). `::` separators are dropped: a tree is a sequence of segments and
/// groups.
fn use_tree_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut depth = 0usize;
    let mut chars = text.char_indices().peekable();
    let mut after_segment = false;
    while let Some(&(i, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            ':' if text[i..].starts_with("::") => {
                chars.next();
                chars.next();
                after_segment = false;
            }
            c if (c.is_alphanumeric() || c == '_') && !after_segment => {
                let ident: String = text[i..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                for _ in ident.chars() {
                    chars.next();
                }
                // `X as Y`: Y is a local name, not a path.
                if ident == "as" {
                    after_segment = true;
                    continue;
                }
                tokens.push(ident);
                after_segment = true;
            }
            c if c.is_alphanumeric() || c == '_' => {
                // The alias after `as`.
                while chars
                    .peek()
                    .is_some_and(|&(_, c)| c.is_alphanumeric() || c == '_')
                {
                    chars.next();
                }
            }
            '*' if !after_segment => {
                tokens.push("*".into());
                chars.next();
                after_segment = true;
            }
            '{' => {
                depth += 1;
                tokens.push("{".into());
                chars.next();
                after_segment = false;
            }
            '}' if depth > 0 => {
                depth -= 1;
                tokens.push("}".into());
                chars.next();
                after_segment = true;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth > 0 => {
                tokens.push(",".into());
                chars.next();
                after_segment = false;
            }
            _ => break,
        }
    }
    tokens
}

fn expand_use_tree(
    tokens: &[String],
    at: &mut usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    let depth = prefix.len();
    while let Some(token) = tokens.get(*at) {
        match token.as_str() {
            "{" => {
                *at += 1;
                while tokens.get(*at).is_some_and(|t| t != "}") {
                    expand_use_tree(tokens, at, prefix, out);
                    if tokens.get(*at).is_some_and(|t| t == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                break;
            }
            "}" | "," => break,
            segment => {
                *at += 1;
                if segment != "self" {
                    prefix.push(segment.to_string());
                }
                let continues = tokens.get(*at).is_some_and(|t| t != "}" && t != ",");
                if !continues {
                    out.push(prefix.clone());
                    break;
                }
            }
        }
    }
    prefix.truncate(depth);
}

/// What `src/cli` may name of `perf::data` and `perf::abi`: opening a recording and reading a kernel version.
/// Record layouts, ABI constants and their name tables are for the tools under `perf/tools` (and `script`) to
/// format; a command file that needs them is doing engine work (a record formatter in `cli/dump.rs`, say).
const CLI_MAY_NAME: &[(&str, &[&str])] = &[
    ("data", &["PerfFile", "ReadError", "Warning"]),
    ("abi", &["KernelVersion", "ParseKernelVersionError"]),
];

/// Known breaches, each to be removed when its file is fixed (the test fails while an entry is stale, so the list
/// only shrinks): (file under src/cli, path).
const CLI_KNOWN: &[(&str, &str)] = &[];

/// The paths under `crate::perf::` that `source` names outside [`CLI_MAY_NAME`], joined with `::`.
fn cli_format_breaches(source: &str) -> Vec<String> {
    paths_under(source, "crate::perf::")
        .into_iter()
        .filter(|p| {
            let Some(allowed) = CLI_MAY_NAME
                .iter()
                .find(|(m, _)| *m == p[0])
                .map(|(_, a)| a)
            else {
                return false;
            };
            // Naming the module itself (`use crate::perf::data;`) would let anything of it through.
            p.get(1)
                .is_none_or(|item| !allowed.contains(&item.as_str()))
        })
        .map(|p| p.join("::"))
        .collect()
}

#[test]
fn the_cli_formats_no_perf_data_records_itself() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut files = Vec::new();
    rust_files(&cli, &mut files);
    let mut found = Vec::new();
    let mut seen_known = Vec::new();
    let mut allowed_uses = 0;
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        allowed_uses += paths_under(&source, "crate::perf::")
            .iter()
            .filter(|p| p[0] == "data")
            .count();
        let name = file
            .strip_prefix(&cli)
            .unwrap()
            .to_string_lossy()
            .to_string();
        for breach in cli_format_breaches(&source) {
            if CLI_KNOWN.contains(&(name.as_str(), breach.as_str())) {
                seen_known.push((name.clone(), breach));
            } else {
                found.push(format!("src/cli/{name} names crate::perf::{breach}"));
            }
        }
    }
    assert!(
        allowed_uses >= 3,
        "the scan sees the command files open recordings through perf::data::PerfFile"
    );
    assert!(
        found.is_empty(),
        "command files that name perf.data record internals or ABI constants; format in perf::tools (or add \
         what they need to its API) instead:\n{}",
        found.join("\n")
    );
    for (file, path) in CLI_KNOWN {
        assert!(
            seen_known.iter().any(|(f, p)| f == file && p == path),
            "src/cli/{file} no longer names crate::perf::{path}: remove it from CLI_KNOWN"
        );
    }
}

#[test]
fn the_cli_format_scan_expands_use_trees_and_sees_breaches() {
    let source = "use crate::perf::data::{PerfFile, ReadError};\n\
                  use crate::perf::abi::{table, *};\n\
                  // crate::perf::data::Record in a comment\n\
                  use crate::perf::{\n    data::{Record as R, self},\n    tools::dump,\n};\n\
                  let f = crate::perf::data::PerfFile::open(p)?;\n\
                  let v: crate::perf::abi::KernelVersion = s.parse()?;\n\
                  if x & crate::perf::abi::PERF_SAMPLE_CALLCHAIN != 0 {}\n\
                  let y = notcrate::perf::data::Record::Sample;\n";
    let joined: Vec<String> = paths_under(source, "crate::perf::")
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        joined,
        [
            "data::PerfFile",
            "data::ReadError",
            "abi::table",
            "abi::*",
            "data::Record",
            "data",
            "tools::dump",
            "data::PerfFile::open",
            "abi::KernelVersion",
            "abi::PERF_SAMPLE_CALLCHAIN",
        ]
    );
    assert_eq!(
        cli_format_breaches(source),
        [
            "abi::table",
            "abi::*",
            "data::Record",
            "data",
            "abi::PERF_SAMPLE_CALLCHAIN"
        ]
    );
}

/// Nothing under `src/perf` outside `perf/tools` names `perf::tools`: the tools read through `script` and `data`
/// and sit on top, so they can change (or be dropped) without touching the engine.
#[test]
fn only_the_cli_uses_the_perf_tools() {
    let perf = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/perf");
    let tools = perf.join("tools");
    assert!(tools.join("report/mod.rs").is_file() && tools.join("dump.rs").is_file());
    let mut files = Vec::new();
    rust_files(&perf, &mut files);
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&tools)) {
        let source = std::fs::read_to_string(file).unwrap();
        let by_path = paths_under(&source, "crate::perf::")
            .iter()
            .any(|p| p[0] == "tools");
        let by_super = source
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .any(|l| l.contains("super::tools"));
        if by_path || by_super {
            found.push(file.display().to_string());
        }
    }
    assert!(
        found.is_empty(),
        "engine modules that import perf::tools (a tool above them): {found:?}"
    );
}

/// Folders whose files may still import each other in a loop, as (folder, the modules on the loop): none today
/// (backport's matcher/plan/state loop ended when `oid_hex` became its own leaf, perf/script's format/mem and
/// output/session loops when the field set became `fields.rs` and `write_script` moved to the facade). An entry
/// is for a loop that must wait; a stale one fails the test, so the list only shrinks.
const KNOWN_LOOPS: &[(&str, &[&str])] = &[];

/// Every folder under src, the part's own files import each other as a tree; `perf/data`
/// has its own test above with a check that the scan sees its imports.
#[test]
fn no_folder_imports_itself_in_a_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = Vec::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path.clone());
                pending.push(path);
            }
        }
    }
    dirs.sort();
    assert!(dirs.len() > 15, "the scan found the folders: {dirs:?}");
    let mut problems = Vec::new();
    for dir in &dirs {
        let rel = dir
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let graph = sibling_imports(dir, &format!("crate::{}", rel.replace('/', "::")));
        let known = KNOWN_LOOPS.iter().find(|(f, _)| *f == rel).map(|(_, m)| *m);
        match (find_cycle(&graph), known) {
            (None, None) => {}
            (None, Some(_)) => problems.push(format!(
                "src/{rel} no longer has its known loop: remove it from KNOWN_LOOPS"
            )),
            (Some(cycle), known) => {
                let mut on_loop: Vec<&str> = cycle.iter().map(String::as_str).collect();
                on_loop.sort();
                on_loop.dedup();
                if known != Some(&on_loop[..]) {
                    problems.push(format!(
                        "src/{rel}: files import each other in a loop: {}",
                        cycle.join(" → ")
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
