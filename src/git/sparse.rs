//! Sparse checkouts (`core.sparseCheckout`): which paths live only in the index, as git's `unpack_trees` decides.
//!
//! A path outside the sparse patterns keeps the index flag skip-worktree: git never writes it to the worktree and
//! never looks at the worktree for it. A pick that changes such a path updates the index entry alone (and an added
//! path outside the patterns gets the flag); a conflicted path is written out, as git materialises it.

use super::{Change, Context, Error};
use git2::{IndexEntry, IndexTime, Repository};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The index entry flag `git update-index --skip-worktree` and sparse checkout set (`CE_SKIP_WORKTREE`, in the
/// extended flags).
pub const SKIP_WORKTREE: u16 = 1 << 14;
/// `CE_EXTENDED` in the entry's flags: the entry carries extended flags.
const EXTENDED: u16 = 1 << 14;

/// The patterns of `.git/info/sparse-checkout` as git reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sparse {
    /// `core.sparseCheckoutCone`: directories taken whole (`/dir/`) and the parents of those (`/dir/*` with
    /// `!/dir/*/`), whose own files are in; files at the root are always in.
    Cone {
        recursive: Vec<String>,
        parents: Vec<String>,
    },
    /// gitignore-style patterns, the last match deciding (`!` excludes again).
    Patterns(Vec<Pattern>),
}

/// One non-cone pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    negated: bool,
    dir_only: bool,
    anchored: bool,
    glob: String,
}

impl Sparse {
    /// The repository's sparse patterns, or `None` when the checkout is not sparse.
    pub fn load(repo: &Repository) -> Result<Option<Sparse>, Error> {
        let config = repo.config().context_git(|| "reading the config")?;
        if !config.get_bool("core.sparseCheckout").unwrap_or(false) {
            return Ok(None);
        }
        let cone = config.get_bool("core.sparseCheckoutCone").unwrap_or(true);
        let file = repo.path().join("info").join("sparse-checkout");
        let text = match std::fs::read(&file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(Error::Io { path: file, source }),
        };
        Ok(Some(Sparse::parse(&text, cone)))
    }

    /// Parses the file's text; a cone-mode file git would reject falls back to pattern matching, as git does.
    pub fn parse(text: &str, cone: bool) -> Sparse {
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        if cone {
            if let Some(c) = parse_cone(&lines) {
                return c;
            }
        }
        Sparse::Patterns(
            lines
                .iter()
                .map(|l| {
                    let (negated, rest) = match l.strip_prefix('!') {
                        Some(r) => (true, r),
                        None => (false, *l),
                    };
                    let (dir_only, rest) = match rest.strip_suffix('/') {
                        Some(r) => (true, r),
                        None => (false, rest),
                    };
                    let anchored = rest.contains('/');
                    Pattern {
                        negated,
                        dir_only,
                        anchored,
                        glob: rest.trim_start_matches('/').to_owned(),
                    }
                })
                .collect(),
        )
    }

    /// Whether `path` (a file's path from the root) is checked out.
    pub fn includes(&self, path: &str) -> bool {
        match self {
            Sparse::Cone { recursive, parents } => {
                let Some((dir, _)) = path.rsplit_once('/') else {
                    return true;
                };
                if parents.iter().any(|p| p == dir) {
                    return true;
                }
                let mut prefix = dir;
                loop {
                    if recursive.iter().any(|r| r == prefix) {
                        return true;
                    }
                    match prefix.rsplit_once('/') {
                        Some((up, _)) => prefix = up,
                        None => return false,
                    }
                }
            }
            Sparse::Patterns(patterns) => {
                // git matches the path itself first, the last matching pattern deciding; a path no pattern
                // names takes the decision of the nearest directory above it that one names.
                let mut candidate = path;
                let mut is_dir = false;
                loop {
                    if let Some(p) = patterns
                        .iter()
                        .rev()
                        .find(|p| (is_dir || !p.dir_only) && p.matches(candidate))
                    {
                        return !p.negated;
                    }
                    match candidate.rsplit_once('/') {
                        Some((up, _)) => {
                            candidate = up;
                            is_dir = true;
                        }
                        None => break,
                    }
                }
                false
            }
        }
    }
}

fn parse_cone(lines: &[&str]) -> Option<Sparse> {
    let mut recursive = Vec::new();
    let mut parents = Vec::new();
    for l in lines {
        if *l == "/*" || *l == "!/*/" {
            continue;
        }
        if let Some(neg) = l.strip_prefix('!') {
            // `/dir/` then `!/dir/*/`: only dir's own files are in (a parent of a directory taken whole).
            let dir = unescape(neg.strip_prefix('/')?.strip_suffix("/*/")?);
            recursive.retain(|r| *r != dir);
            parents.push(dir);
            continue;
        }
        let body = l.strip_prefix('/')?;
        match body.strip_suffix("/*") {
            Some(dir) => parents.push(unescape(dir)),
            None => recursive.push(unescape(body.strip_suffix('/')?)),
        }
    }
    Some(Sparse::Cone { recursive, parents })
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

impl Pattern {
    fn matches(&self, path: &str) -> bool {
        if self.anchored {
            wildmatch(self.glob.as_bytes(), path.as_bytes())
        } else {
            let base = path.rsplit('/').next().unwrap_or(path);
            wildmatch(self.glob.as_bytes(), base.as_bytes())
        }
    }
}

/// `*` and `?` within one component, `**` across them, `[...]` classes, `\` escapes (git's wildmatch with
/// WM_PATHNAME).
fn wildmatch(p: &[u8], t: &[u8]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some(b'*') => {
            if p.get(1) == Some(&b'*') {
                let rest = &p[2..];
                let rest = rest.strip_prefix(b"/").unwrap_or(rest);
                (0..=t.len()).any(|i| {
                    (i == 0 || t[i - 1] == b'/' || rest.is_empty()) && wildmatch(rest, &t[i..])
                }) || wildmatch(&p[2..], t)
            } else {
                let rest = &p[1..];
                (0..=t.len())
                    .take_while(|&i| i == 0 || t[i - 1] != b'/')
                    .any(|i| wildmatch(rest, &t[i..]))
            }
        }
        Some(b'?') => t.first().is_some_and(|&c| c != b'/') && wildmatch(&p[1..], &t[1..]),
        Some(b'[') => {
            let Some(&c) = t.first() else { return false };
            let Some(end) = p[1..].iter().position(|&b| b == b']').map(|e| e + 1) else {
                return c == b'[' && wildmatch(&p[1..], &t[1..]);
            };
            let class = &p[1..end];
            let (negate, class) = match class.first() {
                Some(b'!') | Some(b'^') => (true, &class[1..]),
                _ => (false, class),
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == b'-' {
                    hit |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            c != b'/' && hit != negate && wildmatch(&p[end + 1..], &t[1..])
        }
        Some(b'\\') if p.len() > 1 => t.first() == Some(&p[1]) && wildmatch(&p[2..], &t[1..]),
        Some(&c) => t.first() == Some(&c) && wildmatch(&p[1..], &t[1..]),
    }
}

/// Splits `changes` into the paths to write to the worktree and those that live only in the index: a path whose
/// entry has skip-worktree, or an added path outside the sparse patterns.
pub fn split_changes(
    index: &git2::Index,
    sparse: Option<&Sparse>,
    changes: Vec<Change>,
) -> (Vec<Change>, Vec<Change>) {
    changes.into_iter().partition(|c| {
        let skipped = match index.get_path(Path::new(&c.path), 0) {
            Some(e) => e.flags_extended & SKIP_WORKTREE != 0,
            None => sparse.is_some_and(|s| !s.includes(&c.path)),
        };
        !skipped
    })
}

/// Records index-only changes: each path takes its new blob with skip-worktree set, or leaves the index.
pub fn update_index_only(index: &mut git2::Index, changes: &[Change]) -> Result<(), Error> {
    for c in changes {
        let path = Path::new(&c.path);
        match c.new {
            Some(side) => {
                let entry = IndexEntry {
                    ctime: IndexTime::new(0, 0),
                    mtime: IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode: side.mode,
                    uid: 0,
                    gid: 0,
                    file_size: 0,
                    id: side.oid,
                    flags: EXTENDED | (c.path.len().min(0xfff) as u16),
                    flags_extended: SKIP_WORKTREE,
                    path: c.path.as_bytes().to_vec(),
                };
                index
                    .add(&entry)
                    .context_git(|| format!("staging {}", c.path))?;
            }
            None => {
                let _ = index.remove(path, 0);
            }
        }
    }
    Ok(())
}

/// Applies the patterns to the rest of the index as git's checkout does at every pick: a stage-0 entry outside
/// them that is still in the worktree gets skip-worktree and its file goes, when the file is exactly the index's
/// blob (a file with the user's changes stays, as git leaves it). `except`: paths the caller writes itself.
pub fn reapply(
    repo: &Repository,
    index: &mut git2::Index,
    sparse: &Sparse,
    except: &[&str],
) -> Result<(), Error> {
    let Some(workdir) = repo.workdir() else {
        return Ok(());
    };
    let mut hidden = Vec::new();
    for e in index.iter() {
        if (e.flags >> 12) & 3 != 0 || e.flags_extended & SKIP_WORKTREE != 0 {
            continue;
        }
        let path = String::from_utf8_lossy(&e.path).into_owned();
        if sparse.includes(&path) || except.contains(&path.as_str()) {
            continue;
        }
        let file = workdir.join(&path);
        let clean = match std::fs::symlink_metadata(&file) {
            Ok(m) if m.is_file() => {
                git2::Oid::hash_file(git2::ObjectType::Blob, &file).ok() == Some(e.id)
                    && (m.permissions().mode() & 0o111 != 0) == (e.mode == 0o100755)
            }
            Ok(m) if m.file_type().is_symlink() => {
                std::fs::read_link(&file).ok().and_then(|t| {
                    git2::Oid::hash_object(git2::ObjectType::Blob, t.as_os_str().as_bytes()).ok()
                }) == Some(e.id)
            }
            // Already gone: nothing to lose.
            Err(_) => true,
            Ok(_) => false,
        };
        if clean {
            hidden.push((e, file));
        }
    }
    for (mut e, file) in hidden {
        let _ = std::fs::remove_file(&file);
        let mut dir = file.parent();
        while let Some(d) = dir {
            if d == workdir || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        e.flags |= EXTENDED;
        e.flags_extended |= SKIP_WORKTREE;
        let path = String::from_utf8_lossy(&e.path).into_owned();
        index
            .add(&e)
            .context_git(|| format!("marking {path} skip-worktree"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cone_takes_root_files_parents_and_whole_directories() {
        let s = Sparse::parse("/*\n!/*/\n/a/\n/b/\n!/b/*/\n/b/c/\n", true);
        assert!(s.includes("top"));
        assert!(s.includes("a/x/y"));
        assert!(s.includes("b/f"));
        assert!(s.includes("b/c/d/e"));
        assert!(!s.includes("b/d/e"));
        assert!(!s.includes("out/f"));
    }

    #[test]
    fn patterns_last_match_wins() {
        let s = Sparse::parse("/*\n!/out/\n/out/keep\n*.md\n", false);
        assert!(s.includes("top"));
        assert!(s.includes("in/a"));
        assert!(!s.includes("out/b"));
        assert!(s.includes("out/keep"));
        assert!(s.includes("out/x.md"));
        let s = Sparse::parse("in/\n", false);
        assert!(s.includes("in/a"));
        assert!(s.includes("x/in/a"));
        assert!(!s.includes("top"));
    }
}
