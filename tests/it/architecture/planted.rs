//! The checks checked: each kind of breach planted in files fed to the scanner (or in a temporary source tree),
//! and each check seen to catch it, naming the file and line; the lookalikes beside them are seen to pass.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::{self, SourceFile};
use super::*;

fn named(file: &SourceFile) -> Vec<(usize, String)> {
    file.named().iter().map(|n| (n.line, n.joined())).collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_scanner_resolves_paths_as_the_compiler_does() {
    let file = SourceFile::new(
        "perf/record/session.rs",
        "//! see crate::cli for why\n\
         use crate::{\n    verify::workloads::Build,\n    perf::{data::{PerfFile, Record as R, self}, abi::*},\n};\n\
         use super::super::trace::Format;\n\
         use super::sys;\n\
         fn f() {\n\
         \x20   let s = \"crate::backport::x\";\n\
         \x20   let r = r#\"use crate::git; \"quoted\" \"#;\n\
         \x20   let c = '{';\n\
         \x20   let x = crate::rerere::cache::open(p);\n\
         \x20   let y = mycrate::git::thing();\n\
         \x20   /* crate::git in a /* nested */ block comment */\n\
         }\n\
         #[cfg(test)]\n\
         mod tests {\n\
         \x20   use super::*;\n\
         \x20   use super::super::ring::{self as r, Ring};\n\
         }\n\
         pub(crate) fn g<'a>(x: &'a str) -> crate::git::Oid { super::super::super::cli::run() }\n",
    );
    assert_eq!(file.module, ["perf", "record", "session"]);
    assert_eq!(
        named(&file),
        [
            (2, "verify::workloads::Build"),
            (2, "perf::data::PerfFile"),
            (2, "perf::data::Record"),
            (2, "perf::data"),
            (2, "perf::abi::*"),
            (6, "perf::trace::Format"),
            (7, "perf::record::sys"),
            (12, "rerere::cache::open"),
            (18, "perf::record::session::*"),
            (19, "perf::record::ring"),
            (19, "perf::record::ring::Ring"),
            (21, "git::Oid"),
            (21, "cli::run"),
        ]
        .map(|(l, p)| (l, p.to_string()))
    );
    // A facade's `super` is its folder's parent; the root has no `super`.
    assert_eq!(
        named(&SourceFile::new(
            "perf/record/mod.rs",
            "use super::trace;\n"
        )),
        [(1, "perf::trace".to_string())]
    );
    assert_eq!(named(&SourceFile::new("lib.rs", "use super::x;\n")), []);
    assert_eq!(
        scan::module_of("perf/abi/consts.rs".as_ref()),
        ["perf", "abi", "consts"]
    );
}

#[test]
fn a_layer_breach_is_caught_however_it_is_spelled() {
    let files = [
        SourceFile::new(
            "perf/script/a.rs",
            "fn f() {}\nuse crate::{\n    git,\n    verify::x,\n};\n",
        ),
        SourceFile::new("perf/script/b.rs", "use super::super::super::cli::Ui;\n"),
        SourceFile::new(
            "perf/script/c.rs",
            "fn f() {\n    crate::backport::apply(x);\n}\n",
        ),
        SourceFile::new(
            "perf/script/d.rs",
            "// crate::cli\nlet s = \"crate::cli\";\nuse x::crate_cli;\n",
        ),
        SourceFile::new("verify/e.rs", "use crate::perf::data;\n"),
    ];
    assert_eq!(
        layer_breaches(&files),
        [
            "perf/script/a.rs:2 names crate::git",
            "perf/script/a.rs:2 names crate::verify",
            "perf/script/b.rs:1 names crate::cli",
            "perf/script/c.rs:2 names crate::backport",
        ]
    );
}

#[test]
fn verify_naming_backports_engine_is_caught() {
    let files = [
        SourceFile::new(
            "verify/branch.rs",
            "use crate::backport::{matcher::presence, patchlist::PatchList};\nfn f(e: crate::backport::Error) {}\n",
        ),
        SourceFile::new("verify/x.rs", "use crate::backport::{\n    execute::run,\n};\nuse crate::backport;\n"),
    ];
    assert_eq!(
        verify_breaches(&files),
        [
            "verify/x.rs:1 names crate::backport::execute::run",
            "verify/x.rs:4 names crate::backport"
        ]
    );
}

#[test]
fn perf_parts_are_read_from_the_table_and_held_to_it() {
    let doc = "text\n\n| part of perf | owns | may name |\n| --- | --- | --- |\n\
               | `abi` | numbers | — |\n| `data` | perf.data | `abi` |\n\
               | `record` | recording, `perf_event_open` | `abi`, `data` |\n\nafter\n| `tools` | x | `record` |\n";
    let parts = perf_parts(doc);
    assert_eq!(
        parts,
        BTreeMap::from([
            ("abi".to_string(), set(&[])),
            ("data".to_string(), set(&["abi"])),
            ("record".to_string(), set(&["abi", "data"])),
        ])
    );
    let files = [
        SourceFile::new("perf/abi.rs", "pub const X: u32 = 1;\n"),
        SourceFile::new("perf/data/mod.rs", "use crate::perf::abi::X;\n"),
        // A folder part reached by a `super` chain from deep inside another folder part.
        SourceFile::new(
            "perf/data/reader.rs",
            "fn f() { super::super::record::ring::read() }\n",
        ),
        SourceFile::new(
            "perf/record/mod.rs",
            "use super::{abi, data};\nuse crate::perf::record::x;\n",
        ),
        SourceFile::new("perf/trace/mod.rs", "use crate::perf::abi;\n"),
    ];
    assert_eq!(
        perf_part_breaches(&files, &parts),
        [
            "perf::trace has no row in ARCHITECTURE.md's table of perf's parts",
            "perf/data/reader.rs:1 names crate::perf::record::ring::read (perf::data may name {\"abi\"})",
            "perf/trace/mod.rs:1 names crate::perf::abi (perf::trace may name {})",
        ]
    );
}

#[test]
fn loops_through_folder_modules_and_files_are_caught() {
    // record ↔ trace, each a folder, tied by a `super::super` path one way and an inline path the other.
    let perf_loop = [
        SourceFile::new("perf/mod.rs", "pub mod record;\npub mod trace;\n"),
        SourceFile::new("perf/record/mod.rs", "pub mod session;\n"),
        SourceFile::new(
            "perf/record/session.rs",
            "use super::super::trace::Format;\n",
        ),
        SourceFile::new("perf/trace/mod.rs", "pub mod tracefs;\n"),
        SourceFile::new(
            "perf/trace/tracefs.rs",
            "fn mount() {\n    crate::perf::record::sys::mount_tracefs(p)\n}\n",
        ),
        SourceFile::new("perf/abi.rs", "pub mod consts;\n"),
        SourceFile::new("perf/abi/consts.rs", "use super::super::record;\n"),
    ];
    assert_eq!(
        folder_loops(&perf_loop, &[]),
        ["src/perf: modules import each other in a loop: record → trace → record"]
    );
    // A known loop passes only while it is there, exactly.
    let without_abi = &perf_loop[..5];
    assert_eq!(
        folder_loops(without_abi, &[("perf", &["record", "trace"])]),
        Vec::<String>::new()
    );
    assert_eq!(
        folder_loops(&perf_loop[..2], &[("perf", &["record", "trace"])]),
        ["src/perf no longer has its known loop: remove it from KNOWN_LOOPS"]
    );
    // Files of one folder, through a multi-line group; the facade naming its children is no loop.
    let files = [
        SourceFile::new("rerere/mod.rs", "use record::x;\nuse cache::y;\n"),
        SourceFile::new(
            "rerere/record.rs",
            "use super::{\n    cache::Cache,\n    Error,\n};\n",
        ),
        SourceFile::new("rerere/cache.rs", "fn f() { crate::rerere::record::g() }\n"),
    ];
    assert_eq!(
        folder_loops(&files, &[]),
        ["src/rerere: modules import each other in a loop: cache → record → cache"]
    );
    // Between top-level parts.
    let files = [
        SourceFile::new("git/mod.rs", "use crate::perf::x;\n"),
        SourceFile::new("perf/mod.rs", "use crate::git::y;\n"),
    ];
    assert_eq!(
        folder_loops(&files, &[]),
        ["src/: modules import each other in a loop: git → perf → git"]
    );
}

#[test]
fn unsafe_outside_its_homes_or_without_a_reason_is_caught() {
    let doc = "## Invariants\n\n- **No panic.** x\n- **`unsafe` lives in two places**: `perf/sys/` (the calls) and\n  \
               `perf/data/map.rs` (the map), each block with a SAFETY comment.\n- **git2.** `src/git/`\n";
    let homes = unsafe_homes(doc);
    assert_eq!(homes, ["perf/sys/", "perf/data/map.rs"]);
    let file = |rel: &str, text: &str| (SourceFile::new(rel, text), text.to_string());
    let files = [
        file(
            "perf/sys/event.rs",
            "fn f() {\n    // SAFETY: why.\n    // More.\n    let x = unsafe { g() };\n}\n",
        ),
        file(
            "perf/sys/ring.rs",
            "// SAFETY: why.\n\nunsafe impl Send for R {}\n",
        ),
        file(
            "perf/data/map.rs",
            "// not unsafe in a comment, \"unsafe\" in a string\nfn unsafe_name() {}\n",
        ),
        file("perf/record/x.rs", "fn f() {\n    unsafe { g() }\n}\n"),
    ];
    assert_eq!(
        unsafe_breaches(&files, &homes),
        [
            "perf/sys/ring.rs:3: `unsafe` without a SAFETY comment above it",
            "perf/record/x.rs:2: `unsafe` outside [\"perf/sys/\", \"perf/data/map.rs\"]",
        ]
    );
}

#[test]
fn perf_abi_numbers_outside_abi_are_caught() {
    let files = [
        SourceFile::new("perf/abi/consts.rs", "pub const PERF_TYPE_RAW: u32 = 4;\n"),
        SourceFile::new(
            "perf/script/fields.rs",
            "fn f() {\n    const PERF_TYPE_RAW: u32 = 4;\n}\n",
        ),
        SourceFile::new(
            "perf/unwind/mod.rs",
            "pub const PERF_REG_IP: u32 = crate::perf::abi::PERF_REG_X86_IP;\n",
        ),
        SourceFile::new(
            "perf/script/mem.rs",
            "// const PERF_MEM_X: u64 = 1;\nconst LVL: [&str; 2] = [\"a\", \"b\"];\n",
        ),
    ];
    assert_eq!(
        abi_constants_outside_abi(&files),
        ["perf/script/fields.rs:2: const PERF_TYPE_RAW: u32 = 4;"]
    );
}

#[test]
fn exit_codes_chosen_outside_cli_error_are_caught() {
    let files = [
        SourceFile::new("cli/error/perf.rs", "CliError::new(Kind::Environment, e)\n"),
        SourceFile::new(
            "cli/lock.rs",
            "// CliError::new(Kind::User, e)\nlet e = CliError::new(Kind::User, e);\n",
        ),
        SourceFile::new(
            "cli/verify.rs",
            "Ok(ExitCode::SUCCESS)\nif failed { ExitCode::from(3) }\nlet k = Kind::CheckFailed;\n\
             for kind in [tracefs::Kind::Uprobe] {}\nErrorKind::BrokenPipe\nstd::process::exit(0);\n",
        ),
    ];
    assert_eq!(
        exit_code_breaches(&files),
        [
            "cli/lock.rs:2: let e = CliError::new(Kind::User, e);",
            "cli/verify.rs:2: if failed { ExitCode::from(3) }",
            "cli/verify.rs:3: let k = Kind::CheckFailed;",
            "cli/verify.rs:6: std::process::exit(0);",
        ]
    );
}

#[test]
fn the_cli_naming_record_layouts_is_caught() {
    let file = SourceFile::new(
        "cli/dump.rs",
        "use crate::perf::data::{PerfFile, ReadError};\n\
         use crate::perf::abi::{table, *};\n\
         // crate::perf::data::Record in a comment\n\
         use crate::perf::{\n    data::{Record as R, self},\n    tools::dump,\n};\n\
         let f = crate::perf::data::PerfFile::open(p)?;\n\
         let v: crate::perf::abi::KernelVersion = s.parse()?;\n\
         if x & super::super::perf::abi::PERF_SAMPLE_CALLCHAIN != 0 {}\n\
         let y = notcrate::perf::data::Record::Sample;\n",
    );
    assert_eq!(
        cli_format_breaches(&[file]),
        [
            "cli/dump.rs:2 names crate::perf::abi::table",
            "cli/dump.rs:2 names crate::perf::abi::*",
            "cli/dump.rs:4 names crate::perf::data::Record",
            "cli/dump.rs:4 names crate::perf::data",
            "cli/dump.rs:10 names crate::perf::abi::PERF_SAMPLE_CALLCHAIN",
        ]
    );
}

#[test]
fn a_planted_source_tree_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod perf;\n");
    write("main.rs", "use crate::cli;\n");
    write("perf/mod.rs", "pub mod record;\npub mod trace;\n");
    write("perf/record/mod.rs", "pub mod sys;\n");
    write("perf/record/sys.rs", "use crate::perf::trace::tracefs;\n");
    write("perf/trace/mod.rs", "pub mod tracefs;\n");
    write(
        "perf/trace/tracefs/mod.rs",
        "use super::super::record::sys::mount;\n",
    );
    let files = scan::library_files(dir.path());
    let rels: Vec<String> = files.iter().map(|f| f.rel.display().to_string()).collect();
    assert_eq!(
        rels,
        [
            "lib.rs",
            "perf/mod.rs",
            "perf/record/mod.rs",
            "perf/record/sys.rs",
            "perf/trace/mod.rs",
            "perf/trace/tracefs/mod.rs"
        ]
    );
    assert_eq!(
        folder_loops(&files, &[]),
        ["src/perf: modules import each other in a loop: record → trace → record"]
    );
}
