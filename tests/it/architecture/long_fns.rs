//! No function of the library over 100 lines unless it is listed here with the reason it stays whole. A new long
//! function fails the check, and so does an entry that no longer names one (split, renamed or gone), so the list
//! only shrinks. Lines count from the `fn` line to the closing brace; `#[test]` functions, `#[cfg(test)]` items
//! and files that are test modules do not count.

use super::scan::SourceFile;
use super::*;

/// The longest a function may be without an entry in [`ALLOWED`].
const MAX_LINES: usize = 100;

/// Functions allowed over [`MAX_LINES`]: file under `src/`, name, and why.
const ALLOWED: &[(&str, &str, &str)] = &[
    // One table or one state machine that reads best whole.
    (
        "perf/data/codec.rs",
        "parse_body",
        "one match over the record types, an arm per type",
    ),
    (
        "perf/data/codec.rs",
        "encode",
        "one match over the record types, the mirror of parse_body",
    ),
    (
        "perf/data/sample.rs",
        "parse_sample",
        "the sample fields in the ABI's order, one step each",
    ),
    (
        "perf/data/sample.rs",
        "write_sample",
        "the sample fields in the ABI's order, mirror of parse_sample",
    ),
    ("perf/lock/progs.rs", "begin", "one BPF instruction list"),
    ("perf/lock/progs.rs", "end", "one BPF instruction list"),
    (
        "perf/unwind/dwarf.rs",
        "step",
        "one CFI rule evaluation, register by register",
    ),
];

/// A function of the library and its length.
#[derive(Debug, PartialEq, Eq)]
pub struct LongFn {
    pub file: String,
    pub name: String,
    /// 1-based line of its `fn`.
    pub line: usize,
    pub lines: usize,
}

/// Files that are test modules (`#[cfg(test)] mod x;` in their parent), as paths under `src/`.
fn test_module_files(files: &[SourceFile]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files {
        let lines: Vec<&str> = f.code.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let Some(name) = l
                .trim()
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'))
            else {
                continue;
            };
            let test_attr = lines[..i]
                .iter()
                .rev()
                .map(|l| l.trim())
                .take_while(|l| l.starts_with("#["))
                .any(is_test_attr);
            if test_attr {
                let dir = f.rel.parent().unwrap_or(Path::new(""));
                let here = f
                    .rel
                    .file_name()
                    .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
                let base = if here {
                    dir.to_path_buf()
                } else {
                    dir.join(f.rel.file_stem().unwrap())
                };
                out.insert(base.join(format!("{}.rs", name.trim())));
                out.insert(base.join(name.trim()).join("mod.rs"));
            }
        }
    }
    out
}

fn is_test_attr(attr: &str) -> bool {
    let a: String = attr.chars().filter(|c| !c.is_whitespace()).collect();
    a == "#[test]" || a.starts_with("#[cfg(test)") || a.starts_with("#[cfg(all(test")
}

/// The name a line's `fn` item declares, when the words before `fn` are only qualifiers (`pub(crate)`, `const`,
/// `unsafe`, `extern "C"`...).
fn fn_name(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    loop {
        let w = words.next()?;
        if w == "fn" {
            let name: String = words
                .next()?
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            return (!name.is_empty()).then_some(name);
        }
        let qualifier = w == "pub"
            || w.starts_with("pub(")
            || matches!(w, "const" | "async" | "unsafe" | "extern" | "default")
            || w.starts_with('"');
        if !qualifier {
            return None;
        }
    }
}

/// Every non-test function of `file` with its length (nested ones too), on the blanked code.
pub fn functions(file: &SourceFile) -> Vec<LongFn> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    // Parentheses and brackets open: a `;` inside them (`[u8; 4]`) ends no item.
    let mut nest = 0usize;
    // A `fn` seen whose body has not opened yet: name, line, depth.
    let mut pending: Option<(String, usize, usize)> = None;
    // Open function bodies: name, line, depth outside the body.
    let mut open: Vec<(String, usize, usize)> = Vec::new();
    // A test attribute seen, its item not opened yet; the depth outside an open test item.
    let mut test_next = false;
    let mut in_test: Option<usize> = None;
    for (i, line) in file.code.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("#[") {
            if is_test_attr(trimmed) && in_test.is_none() {
                test_next = true;
            }
            continue;
        }
        if in_test.is_none() && !test_next {
            if let Some(name) = fn_name(trimmed) {
                pending = Some((name, i + 1, depth));
            }
        }
        for c in line.chars() {
            match c {
                '(' | '[' => nest += 1,
                ')' | ']' => nest = nest.saturating_sub(1),
                ';' if nest == 0 => {
                    if pending.as_ref().is_some_and(|p| p.2 == depth) {
                        pending = None;
                    }
                    test_next = false;
                }
                '{' => {
                    if test_next {
                        test_next = false;
                        in_test = Some(depth);
                    }
                    if let Some(p) = pending.take_if(|p| p.2 == depth) {
                        open.push(p);
                    }
                    depth += 1;
                }
                '}' => {
                    depth = depth.saturating_sub(1);
                    if in_test == Some(depth) {
                        in_test = None;
                    }
                    if let Some((name, start, _)) = open.pop_if(|o| o.2 == depth) {
                        out.push(LongFn {
                            file: file.rel.to_string_lossy().into_owned(),
                            name,
                            line: start,
                            lines: i + 1 - start + 1,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Functions over [`MAX_LINES`] that `allowed` does not list, and entries of `allowed` that name no such function.
pub fn long_fn_breaches(files: &[SourceFile], allowed: &[(&str, &str, &str)]) -> Vec<String> {
    let tests = test_module_files(files);
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for f in files.iter().filter(|f| !tests.contains(&f.rel)) {
        for func in functions(f)
            .into_iter()
            .filter(|func| func.lines > MAX_LINES)
        {
            let listed = allowed
                .iter()
                .any(|(file, name, _)| *file == func.file && *name == func.name);
            if listed {
                seen.insert((func.file.clone(), func.name.clone()));
            } else {
                problems.push(format!(
                    "{}:{} fn {} is {} lines (over {MAX_LINES}): split it where a reader would want it, or list it \
                     with the reason it reads best whole",
                    func.file, func.line, func.name, func.lines
                ));
            }
        }
    }
    for (file, name, _) in allowed {
        if !seen.contains(&(file.to_string(), name.to_string())) {
            problems.push(format!(
                "{file} fn {name} is listed as allowed over {MAX_LINES} lines but is not (any more): remove the entry"
            ));
        }
    }
    problems
}

#[test]
fn no_function_is_over_100_lines_unless_listed_with_its_reason() {
    let files = scan::library_files(&src());
    assert_none(long_fn_breaches(&files, ALLOWED), "long functions");
}

#[test]
fn the_length_check_counts_code_not_tests_comments_or_literals() {
    let body = |n: usize| "    let x = 1;\n".repeat(n);
    // 101 lines: the fn line, 99 of body, the closing brace.
    let text = format!(
        "pub(crate) fn long(a: [u8; 4]) -> u8 {{\n{}}}\n\
         fn short() {{\n    let s = \"}}}}}}\"; // }}\n    let c = '{{';\n}}\n\
         fn declared(x: u8) -> [u8; 2];\n\
         #[cfg(test)]\nmod tests {{\n    fn helper() {{\n{}    }}\n}}\n\
         #[test]\nfn a_test() {{\n{}}}\n\
         impl T {{\n    const fn exactly(&self) {{\n{}    }}\n}}\n",
        body(99),
        body(200),
        body(200),
        body(98)
    );
    let file = SourceFile::new("perf/x.rs", &text);
    let found: Vec<(String, usize)> = functions(&file)
        .into_iter()
        .map(|f| (f.name, f.lines))
        .collect();
    assert_eq!(
        found,
        [
            ("long".to_string(), 101),
            ("short".to_string(), 4),
            ("exactly".to_string(), 100)
        ]
    );
    let problems = long_fn_breaches(std::slice::from_ref(&file), &[]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("perf/x.rs:1 fn long is 101 lines"),
        "{problems:?}"
    );
    // Listed: allowed; a listed function that is short, or gone, is a stale entry.
    assert!(
        long_fn_breaches(std::slice::from_ref(&file), &[("perf/x.rs", "long", "why")]).is_empty()
    );
    let stale = long_fn_breaches(
        std::slice::from_ref(&file),
        &[("perf/x.rs", "long", "why"), ("perf/x.rs", "short", "why")],
    );
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(stale[0].contains("fn short is listed"), "{stale:?}");
    // A test module file declared by its parent does not count.
    let parent = SourceFile::new("perf/y/mod.rs", "#[cfg(test)]\nmod tests;\n");
    let tests = SourceFile::new(
        "perf/y/tests.rs",
        &format!("fn big() {{\n{}}}\n", body(150)),
    );
    assert!(long_fn_breaches(&[parent, tests], &[]).is_empty());
}
