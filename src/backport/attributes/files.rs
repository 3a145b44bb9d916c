//! The attribute files a merge reads, matched in process the way git's attr.c matches them.
//!
//! Precedence, lowest first (attr.c `prepare_attr_stack`): the built-in `binary` macro, the system file, the
//! global file, then each directory's `.gitattributes` from the root down to the path's own directory, then
//! `$GIT_DIR/info/attributes`. Within a file a later line wins. Macros (`[attr]name ...`) count only in the
//! built-in list, the system, global and info files and the top-level `.gitattributes`, as in git. A directory's
//! file is read from the worktree only, once per run: merge-ort checks attributes against an index of its own
//! that is empty unless `merge.renormalize` is set, so git's fallback to the index never finds one for a merge
//! (a `.gitattributes` outside a sparse checkout's cone, or deleted in the worktree, does not count). A symbolic
//! link is never followed (git opens attribute files with `O_NOFOLLOW`).
//!
//! A `.gitattributes` comes from whoever wrote the branch: as git does, a file over 100 MB is ignored and a line
//! over 2,048 bytes is dropped, with a warning on stderr. Unlike git, a pattern keeps at most two `**`
//! components once runs of them (`**/**/`, which match what one does) are cut to one; a line with more is
//! dropped with a warning, since matching it takes time exponential in their number.

use gix_attributes::glob::pattern::Case;
use gix_attributes::search::{MetadataCollection, Outcome};
use gix_attributes::{Search, StateRef};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// attr.c's `ATTR_MAX_FILE_SIZE`: larger attribute files are ignored.
const MAX_FILE_SIZE: u64 = 100 * 1024 * 1024;
/// attr.c's `ATTR_MAX_LINE_LENGTH`: longer lines are ignored.
const MAX_LINE_LENGTH: usize = 2048;
/// The most `**` components a pattern may keep once runs of them are collapsed. git's wildmatch backtracks over
/// every way of spreading the path's directories between them (a line of 30 against a path 60 directories deep
/// never finishes in git); real attribute files use one or two (`**/build/**`).
const MAX_GLOBSTARS: usize = 2;

/// The value of an attribute for a path, in the form lookups compare: `"\u{1}true"` for set, `"\u{1}false"`
/// for unset, the value's text otherwise; `None` when unspecified.
pub type Value = Option<String>;

/// Every attribute file of a run and the searches built from them, per directory.
#[derive(Clone, Default)]
pub struct Files {
    /// System and global files: (where from, content), lowest precedence first.
    globals: Vec<(PathBuf, Vec<u8>)>,
    /// `$GIT_DIR/info/attributes`.
    info: Option<Vec<u8>>,
    workdir: Option<PathBuf>,
    case: Case,
    /// Per directory (`""` is the root): its `.gitattributes`, if it has one.
    dirs: HashMap<String, Option<Rc<[u8]>>>,
    /// Per directory: the search over every file that applies to the paths in it.
    searches: HashMap<String, Rc<Search>>,
    collection: MetadataCollection,
    outcome: Outcome,
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files")
            .field("globals", &self.globals.len())
            .field("info", &self.info.is_some())
            .field("dirs", &self.dirs.len())
            .finish_non_exhaustive()
    }
}

impl Files {
    /// The files outside the trees: `system` and `global` (lowest first; absent files are skipped), `info`,
    /// with `workdir` for the directories' files; `ignore_case` is `core.ignorecase`.
    pub fn new(
        system_and_global: &[PathBuf],
        info: &Path,
        workdir: Option<PathBuf>,
        ignore_case: bool,
    ) -> Files {
        let mut files = Files {
            workdir,
            case: if ignore_case {
                Case::Fold
            } else {
                Case::Sensitive
            },
            ..Files::default()
        };
        for p in system_and_global {
            if let Some(content) = read_outside(p) {
                files.globals.push((p.clone(), content));
            }
        }
        files.info = read_outside(info);
        files
    }

    /// Whether a file outside the trees applies to every path.
    pub fn any_outside(&self) -> bool {
        !self.globals.is_empty() || self.info.is_some()
    }

    /// The values of `names` for `path` (relative to the repository, `/`-separated).
    pub fn values(&mut self, path: &str, names: &[&str]) -> Vec<Value> {
        let dir = path.rfind('/').map_or("", |i| &path[..i]);
        let search = match self.searches.get(dir) {
            Some(s) => Rc::clone(s),
            None => {
                let s = Rc::new(self.search_for(dir));
                self.searches.insert(dir.to_owned(), Rc::clone(&s));
                s
            }
        };
        self.outcome
            .initialize_with_selection(&self.collection, names.iter().copied());
        search.pattern_matching_relative_path(
            bstr::BStr::new(path.as_bytes()),
            self.case,
            Some(false),
            &mut self.outcome,
        );
        self.outcome
            .iter_selected()
            .map(|m| match m.assignment.state {
                StateRef::Set => Some("\u{1}true".to_owned()),
                StateRef::Unset => Some("\u{1}false".to_owned()),
                StateRef::Value(v) => Some(String::from_utf8_lossy(v.as_bstr()).into_owned()),
                StateRef::Unspecified => None,
            })
            .collect()
    }

    /// The search for paths in `dir`: every list in precedence order.
    fn search_for(&mut self, dir: &str) -> Search {
        let mut search = Search::default();
        let collection = &mut self.collection;
        search.add_patterns_buffer(
            b"[attr]binary -diff -merge -text",
            "[builtin]".into(),
            None,
            collection,
            true,
        );
        for (source, content) in &self.globals {
            search.add_patterns_buffer(content, source.clone(), None, collection, true);
        }
        let mut end = 0;
        loop {
            let d = &dir[..end];
            let file = if d.is_empty() {
                ".gitattributes".to_owned()
            } else {
                format!("{d}/.gitattributes")
            };
            if !self.dirs.contains_key(d) {
                let content = read_in_worktree(self.workdir.as_deref(), &file).flatten();
                self.dirs.insert(d.to_owned(), content.map(Rc::from));
            }
            if let Some(Some(content)) = self.dirs.get(d) {
                // Patterns in a directory's file are relative to that directory (gix takes the base from
                // the source's parent under `root`).
                search.add_patterns_buffer(
                    content,
                    PathBuf::from(&file),
                    Some(Path::new("")),
                    collection,
                    d.is_empty(),
                );
            }
            if end == dir.len() {
                break;
            }
            end = dir[end..]
                .trim_start_matches('/')
                .find('/')
                .map_or(dir.len(), |i| end + usize::from(end > 0) + i);
        }
        if let Some(info) = &self.info {
            search.add_patterns_buffer(info, "info/attributes".into(), None, collection, true);
        }
        search
    }
}

/// A directory's `.gitattributes` in the worktree: `None` when the worktree has no regular file there;
/// `Some(None)` when it has one that is ignored.
fn read_in_worktree(workdir: Option<&Path>, file: &str) -> Option<Option<Vec<u8>>> {
    let path = workdir?.join(file);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > MAX_FILE_SIZE {
        log::warn!("ignoring overly large gitattributes file '{file}'");
        return Some(None);
    }
    let content = std::fs::read(&path).ok()?;
    Some(within_limits(file, content))
}

/// A file outside the trees, followed through symbolic links as git does for these.
fn read_outside(path: &Path) -> Option<Vec<u8>> {
    let content = std::fs::read(path).ok()?;
    within_limits(&path.display().to_string(), content)
}

/// `content` without its overlong lines; `None` when the whole file is too large.
fn within_limits(name: &str, content: Vec<u8>) -> Option<Vec<u8>> {
    if content.len() as u64 > MAX_FILE_SIZE {
        log::warn!("ignoring overly large gitattributes file '{name}'");
        return None;
    }
    if !content
        .split(|&b| b == b'\n')
        .any(|l| l.len() > MAX_LINE_LENGTH || globstars(l) > 1)
    {
        return Some(content);
    }
    let mut kept = Vec::with_capacity(content.len());
    for (n, line) in content.split(|&b| b == b'\n').enumerate() {
        if line.len() > MAX_LINE_LENGTH {
            log::warn!("ignoring overly long attributes line {} in '{name}'", n + 1);
            // An empty line keeps the numbering of the lines after it.
            kept.push(b'\n');
            continue;
        }
        let line = collapse_globstars(line);
        if globstars(&line) > MAX_GLOBSTARS {
            log::warn!(
                "ignoring attributes line {} in '{name}': more than {MAX_GLOBSTARS} '**' components \
                 (matching them takes time exponential in their number)",
                n + 1
            );
            kept.push(b'\n');
            continue;
        }
        kept.extend_from_slice(&line);
        kept.push(b'\n');
    }
    Some(kept)
}

/// A line's pattern: its first field, up to the first blank (a quoted pattern whole, quotes included).
fn pattern_of(line: &[u8]) -> (usize, usize) {
    let start = line
        .iter()
        .position(|b| !b" \t\r".contains(b))
        .unwrap_or(line.len());
    let rest = &line[start..];
    let len = if rest.first() == Some(&b'"') {
        let mut i = 1;
        while i < rest.len() && rest[i] != b'"' {
            i += if rest[i] == b'\\' { 2 } else { 1 };
        }
        (i + 1).min(rest.len())
    } else {
        rest.iter()
            .position(|b| b" \t\r".contains(b))
            .unwrap_or(rest.len())
    };
    (start, start + len)
}

/// How many of a line's pattern's `/`-separated components are `**`.
fn globstars(line: &[u8]) -> usize {
    let (a, b) = pattern_of(line);
    line[a..b]
        .split(|&c| c == b'/' || c == b'"')
        .filter(|c| *c == b"**")
        .count()
}

/// The line with each run of `**/` components before another component cut to one: in git's wildmatch `**/`
/// matches zero or more directories, so a run of them matches what one does, and each one more multiplies the
/// matcher's backtracking.
fn collapse_globstars(line: &[u8]) -> Vec<u8> {
    let (a, b) = pattern_of(line);
    let pattern = &line[a..b];
    if pattern.first() == Some(&b'"') {
        return line.to_vec();
    }
    let parts: Vec<&[u8]> = pattern.split(|&c| c == b'/').collect();
    let mut out = line[..a].to_vec();
    let mut first = true;
    for (i, part) in parts.iter().enumerate() {
        let redundant = *part == b"**" && i + 2 < parts.len() && parts[i + 1] == b"**";
        if redundant {
            continue;
        }
        if !first {
            out.push(b'/');
        }
        first = false;
        out.extend_from_slice(part);
    }
    out.extend_from_slice(&line[b..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines built from the bytes attribute syntax gives meaning to, and invalid UTF-8: parsing and matching
    /// never panic, whatever a branch's `.gitattributes` holds.
    #[test]
    fn any_bytes_parse_and_match_without_panicking() {
        const PIECES: &[&[u8]] = &[
            b"[attr]",
            b"\"",
            b"\\",
            b"*",
            b"**",
            b"/",
            b"!",
            b"-",
            b"=",
            b" ",
            b"\t",
            b"a",
            b"merge",
            b"text",
            b"[",
            b"]",
            b"?",
            b"\xff",
            b"\xc3",
            b"\r",
            b"\n",
            b"binary",
            b"eol=crlf",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..300 {
            let mut content = Vec::new();
            for _ in 0..(next() % 40) {
                content.extend_from_slice(PIECES[(next() % PIECES.len() as u64) as usize]);
            }
            let content = within_limits("t", content).unwrap_or_default();
            let mut files = Files {
                info: Some(content.clone()),
                ..Files::default()
            };
            for path in ["a", "a/b", "merge/text", "\u{ff}/x"] {
                let got = files.values(path, &["merge", "text", "eol", "binary"]);
                assert_eq!(got.len(), 4);
            }
        }
    }

    #[test]
    fn runs_of_globstars_collapse_to_one_before_another_component() {
        let cut = |l: &str| String::from_utf8(collapse_globstars(l.as_bytes())).unwrap();
        assert_eq!(cut("**/**/**/z merge"), "**/z merge");
        assert_eq!(cut("/a/**/**/b text"), "/a/**/b text");
        // A trailing run is left as written: only a run before another component is the same as one `**/`.
        assert_eq!(cut("a/**/** text"), "a/**/** text");
        assert_eq!(cut("  **/**/x\t-text"), "  **/x\t-text");
        assert_eq!(cut("\"**/**/x\" text"), "\"**/**/x\" text");
        assert_eq!(globstars(b"**/a/**/b/** x"), 3);
        assert_eq!(globstars(b"a**/b x"), 0);
    }
}
