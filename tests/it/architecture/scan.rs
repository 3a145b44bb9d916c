//! Reading the crate's source for the names it uses, as the compiler resolves them: comments and literals blanked,
//! `use` trees expanded across lines, `super::` chains and `crate::` paths (in `use` lines or inline) turned into
//! paths from the crate root, with inline `mod x { … }` blocks counted. A textual reader, so it cannot see a name
//! that arrives by a glob (`use super::*`) or a re-export; the rules built on it say so where it matters.

use std::path::{Path, PathBuf};

/// One source file of the library.
pub struct SourceFile {
    /// The path under `src/`, e.g. `perf/sys/event.rs`.
    pub rel: PathBuf,
    /// Its module path from the crate root: `perf/record/mod.rs` → `[perf, record]`, `perf/abi/consts.rs` →
    /// `[perf, abi, consts]`, `lib.rs` → `[]`.
    pub module: Vec<String>,
    /// The text with comments and string/char literals blanked (lines kept).
    pub code: String,
}

impl SourceFile {
    /// A file read from `text`, as if it stood at `rel` under `src/`.
    pub fn new(rel: &str, text: &str) -> SourceFile {
        SourceFile {
            rel: PathBuf::from(rel),
            module: module_of(Path::new(rel)),
            code: blank(text),
        }
    }

    /// Every path this file names, resolved from the crate root.
    pub fn named(&self) -> Vec<Named> {
        named_paths(&self.code, &self.module)
    }
}

/// Every `.rs` file of the library under `src` (the binary's `main.rs`, a crate of its own that names the
/// library as `bport::`, is left out), sorted by path.
pub fn library_files(src: &Path) -> Vec<SourceFile> {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let rel = path.strip_prefix(src).unwrap().to_path_buf();
            if rel == Path::new("main.rs") {
                return None;
            }
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            Some(SourceFile {
                module: module_of(&rel),
                code: blank(&text),
                rel,
            })
        })
        .collect()
}

/// Every `.rs` file under `dir`, recursively.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

/// The module path of a file under `src/`: `lib.rs` is the root, `x/mod.rs` and `x.rs` are `x`.
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut module: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = module.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if !(stem == "mod" || (module.is_empty() && stem == "lib")) {
        module.push(stem.to_owned());
    }
    module
}

/// `source` with every comment (line, block, doc) and the inside of every string and character literal replaced
/// by spaces, newlines kept: what is left is code, so a doc link or a string that spells a path names nothing,
/// and a `'{'` does not open a block.
pub fn blank(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let keep_newline = |c: char| if c == '\n' { '\n' } else { ' ' };
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && is_ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep_newline(chars[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i).filter(|_| !prev_ident) {
            // `r#"…"#` (or `br…`): no escapes; it ends at a quote followed by as many hashes.
            let open = chars[i..].iter().position(|&c| c == '"').unwrap() + 1;
            for _ in 0..open {
                out.push(' ');
            }
            i += open;
            while i < chars.len() {
                if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += 1 + hashes;
                    break;
                }
                out.push(keep_newline(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for k in 0..step {
                    if let Some(&c) = chars.get(i + k) {
                        out.push(keep_newline(c));
                    }
                }
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal (`'x'`, `'\n'`, `'\u{7f}'`); a lifetime or label (`'a`) has no closing quote.
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for _ in 0..step {
                    out.push(' ');
                }
                i += step;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// At `chars[i]`, the number of `#`s of a raw string literal that starts there (`r"`, `r#"`, `br##"`), if one does.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// A path that code names: the line it starts on (1-based) and its segments from the crate root
/// (`super::super::trace::Format` in `perf/record/session.rs` → `[perf, trace, Format]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    pub line: usize,
    pub path: Vec<String>,
}

impl Named {
    /// The path joined with `::`.
    pub fn joined(&self) -> String {
        self.path.join("::")
    }
}

/// Every `crate::…` and `super::…` path in `code` (blanked by [`blank`]) of the module `module`, `use` trees
/// expanded (`use crate::{git, perf::{data, abi::*}}` gives `git`, `perf::data`, `perf::abi::*`) wherever their
/// lines break, resolved from the crate root. `super` counts from the innermost inline `mod x { … }` around it.
pub fn named_paths(code: &str, module: &[String]) -> Vec<Named> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    // Inline modules open around the current position: (name, the brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let mut depth = 0usize;
    let mut line = 1;
    let mut at = 0;
    while let Some(c) = code[at..].chars().next() {
        let prev = code[..at].chars().next_back();
        match c {
            '\n' => line += 1,
            '{' => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            '}' => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            ';' => pending_mod = None,
            c if is_ident(c) && !prev.is_some_and(is_ident) => {
                let word: String = code[at..].chars().take_while(|&c| is_ident(c)).collect();
                let rest = &code[at + word.len()..];
                let path_start = !prev.is_some_and(|p| p == ':' || p == '$');
                if word == "mod" {
                    let mut after = rest.trim_start().splitn(2, |c: char| !is_ident(c));
                    let name = after.next().unwrap_or("");
                    let tail = &rest.trim_start()[name.len()..];
                    if !name.is_empty() && tail.trim_start().starts_with('{') {
                        pending_mod = Some(name.to_owned());
                    }
                } else if (word == "crate" || word == "super")
                    && path_start
                    && rest.starts_with("::")
                {
                    let (tokens, len) = use_tree_tokens(&code[at..]);
                    let mut paths = Vec::new();
                    expand_use_tree(&tokens, &mut 0, &mut Vec::new(), &mut paths);
                    let mut here = module.to_vec();
                    here.extend(inline.iter().map(|(name, _)| name.clone()));
                    for path in paths {
                        if let Some(path) = resolve(&path, &here).filter(|p| !p.is_empty()) {
                            found.push(Named { line, path });
                        }
                    }
                    // Skip the tree (its braces are balanced), so `use super::{super::x}` is read once, but keep
                    // counting its lines.
                    line += code[at..at + len].matches('\n').count();
                    at += len;
                    continue;
                }
                at += word.len();
                continue;
            }
            _ => {}
        }
        at += c.len_utf8();
    }
    found
}

/// `path` (starting with `crate` or `super`s) from the crate root, seen from module `here`; `None` for more
/// `super`s than `here` is deep.
fn resolve(path: &[String], here: &[String]) -> Option<Vec<String>> {
    if path.first().is_some_and(|s| s == "crate") {
        return Some(path[1..].to_vec());
    }
    let up = path.iter().take_while(|s| *s == "super").count();
    let base = here.get(..here.len().checked_sub(up)?)?;
    Some(base.iter().chain(&path[up..]).cloned().collect())
}

/// The tokens of the use tree (or path) at the start of `text`, and the bytes it spans: identifiers, `*`, `{`, `}`
/// and `,`, with the `::` separators and `as` aliases dropped. It stops where the path ends (`;`, `(`, `<`, an
/// operator, a `{` that follows no `::`) and spans only balanced groups.
fn use_tree_tokens(text: &str) -> (Vec<String>, usize) {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut tokens = Vec::new();
    let mut depth = 0usize;
    // Whether a segment (or group) was just read: then `::`, `,`, `}` or `as` may follow, else a segment may.
    let mut after_segment = false;
    let mut at = 0;
    let mut end = 0;
    while let Some(c) = text[at..].chars().next() {
        let rest = &text[at..];
        if c.is_whitespace() {
            at += c.len_utf8();
            continue;
        }
        if after_segment {
            if rest.starts_with("::") {
                at += 2;
                after_segment = false;
            } else if rest.starts_with("as") && !rest[2..].starts_with(is_ident) {
                // `X as Y`: Y is a local name, not a path.
                let alias = rest[2..].trim_start();
                let alias_len = alias.chars().take_while(|&c| is_ident(c)).count();
                at = text.len() - alias.len() + alias_len;
            } else if c == ',' && depth > 0 {
                tokens.push(",".into());
                at += 1;
                after_segment = false;
            } else if c == '}' && depth > 0 {
                tokens.push("}".into());
                at += 1;
                depth -= 1;
            } else {
                break;
            }
        } else if is_ident(c) {
            let ident: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            at += ident.len();
            tokens.push(ident);
            after_segment = true;
        } else if c == '*' {
            tokens.push("*".into());
            at += 1;
            after_segment = true;
        } else if c == '{' {
            tokens.push("{".into());
            at += 1;
            depth += 1;
        } else if c == '}' && depth > 0 {
            // After a trailing comma.
            tokens.push("}".into());
            at += 1;
            depth -= 1;
            after_segment = true;
        } else {
            break;
        }
        if depth == 0 {
            end = at;
        }
    }
    // An unclosed group is no use tree: keep what came before it.
    let mut open = 0usize;
    let mut keep = tokens.len();
    for (i, t) in tokens.iter().enumerate() {
        match t.as_str() {
            "{" => {
                if open == 0 {
                    keep = i;
                }
                open += 1;
            }
            "}" => {
                open -= 1;
                if open == 0 {
                    keep = tokens.len();
                }
            }
            _ => {}
        }
    }
    if open > 0 {
        tokens.truncate(keep);
    }
    (tokens, end)
}

/// The paths of a token list from [`use_tree_tokens`]: `a { b , c { d } }` → `a::b`, `a::c::d`; `self` in a group
/// names the group's prefix.
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
