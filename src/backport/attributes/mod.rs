//! The gitattributes and config that change what a pick merges or writes, read as git's merge-ort and
//! checkout read them: the `merge` driver (`text`, `binary`, `union`, `-merge`, or a `merge.<name>.driver`
//! command), `conflict-marker-size`, and the end-of-line conversion of a conflicted file written to the
//! worktree (`text`, `eol`, `crlf`, `core.autocrlf`, `core.eol`).
//!
//! Attributes come from the worktree's `.gitattributes` files, `info/attributes`, `core.attributesFile` and the
//! system file, matched in process ([`files`]) as git's merge reads them. bport refuses a dirty worktree, so at a run's start these are the branch's
//! files; a pick that changes a `.gitattributes` the run then merges under is refused rather than merged under
//! stale attributes.
//!
//! Nothing is looked up for a path unless some attributes file could apply to it: a `.gitattributes` on its
//! directories in the branch's tree (parsed trees the pick already holds), `info/attributes`, or a global file.
//! A repository without attributes pays one tree lookup per directory of each merged path.

use super::Error;
use crate::git::Context;
use git2::Repository;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Which low-level merge runs for a path (git's `find_ll_merge_driver`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Driver {
    /// xdiff's three-way merge (binaries fall back to [`Driver::Binary`], as in git).
    Text,
    /// No content merge: a conflict unless `-X ours/theirs`; the worktree keeps the branch's version.
    Binary,
    /// xdiff's merge taking both sides' lines of a conflicting hunk.
    Union,
    /// `merge.<name>.driver`, run through the shell.
    External {
        /// The driver's name (the attribute's value).
        name: String,
        /// The command line with its `%` placeholders.
        command: String,
    },
}

/// What the attributes say about one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathAttributes {
    /// The merge driver.
    pub driver: Driver,
    /// `conflict-marker-size` (7 when unset or not a positive number).
    pub marker_size: usize,
    /// How a file is converted when written to the worktree.
    pub crlf: CrlfAction,
}

/// convert.c's `crlf_action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrlfAction {
    /// `-text`: written as stored.
    Binary,
    /// `text` with the configured end of line.
    Text,
    /// `text eol=lf`.
    TextInput,
    /// `text eol=crlf`.
    TextCrlf,
    /// `text=auto` with the configured end of line.
    Auto,
    /// `text=auto eol=lf`, or `core.autocrlf=input` without attributes.
    AutoInput,
    /// `text=auto eol=crlf`, or `core.autocrlf=true` without attributes.
    AutoCrlf,
}

/// `core.autocrlf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AutoCrlf {
    False,
    True,
    Input,
}

mod files;

/// git's reading of a boolean environment variable (`git_env_bool`): false when empty, `0`, `false`, `no` or
/// `off` (any case); true otherwise.
fn env_bool(v: &std::ffi::OsStr) -> bool {
    let v = v.to_string_lossy().to_ascii_lowercase();
    !matches!(v.trim(), "" | "0" | "false" | "no" | "off")
}

/// The attributes a merge reads for a path.
pub const NAMES: [&str; 8] = [
    "filter",
    "working-tree-encoding",
    "ident",
    "merge",
    "conflict-marker-size",
    "text",
    "crlf",
    "eol",
];

/// The system attributes file libgit2 reads (git's is under its build's prefix: `/etc` for distributions'
/// packages).
const SYSTEM_FILE: &str = "/etc/gitattributes";

/// Config and attribute sources read once per run.
#[derive(Clone, Debug)]
pub struct Attributes {
    /// The attribute files and the searches built from them.
    files: files::Files,
    /// `merge.default`.
    merge_default: Option<String>,
    /// `merge.<name>.driver` by name (`None`: the driver is named in config without a command line).
    drivers: HashMap<String, Option<String>>,
    /// Names of `filter.<name>` drivers the config defines.
    filters: Vec<String>,
    autocrlf: AutoCrlf,
    core_eol_crlf: bool,
    workdir: Option<PathBuf>,
}

impl Default for Attributes {
    fn default() -> Attributes {
        Attributes {
            files: files::Files::default(),
            merge_default: None,
            drivers: HashMap::new(),
            filters: Vec::new(),
            autocrlf: AutoCrlf::False,
            core_eol_crlf: false,
            workdir: None,
        }
    }
}

impl Attributes {
    /// Reads the config and looks for attribute files outside the trees.
    pub fn read(repo: &Repository) -> Result<Attributes, Error> {
        let config = repo.config().context_git(|| "reading the git config")?;
        let mut attrs = Attributes {
            workdir: repo.workdir().map(Path::to_path_buf),
            ..Attributes::default()
        };
        // Lowest precedence first: the system file (unless GIT_ATTR_NOSYSTEM, as in git), the global one.
        let mut outside = Vec::new();
        if !std::env::var_os("GIT_ATTR_NOSYSTEM").is_some_and(|v| env_bool(&v)) {
            outside.push(PathBuf::from(SYSTEM_FILE));
        }
        match config.get_path("core.attributesfile") {
            Ok(p) => outside.push(p),
            Err(_) => {
                // git's default global file: $XDG_CONFIG_HOME/git/attributes, else ~/.config/git/attributes.
                let xdg = std::env::var_os("XDG_CONFIG_HOME")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
                    .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")));
                if let Some(dir) = xdg {
                    outside.push(dir.join("git").join("attributes"));
                }
            }
        }
        attrs.files = files::Files::new(
            &outside,
            &repo.path().join("info").join("attributes"),
            attrs.workdir.clone(),
            config.get_bool("core.ignorecase").unwrap_or(false),
        );
        // git then runs every version through its checkin conversion before merging; bport merges the blobs.
        if config.get_bool("merge.renormalize").unwrap_or(false) {
            return Err(Error::UnsupportedConfig {
                key: "merge.renormalize".into(),
                value: "true".into(),
            });
        }
        attrs.merge_default = config.get_string("merge.default").ok();
        if let Ok(entries) = config.entries(Some(r"^(merge|filter)\..+\..+$")) {
            entries
                .for_each(|e| {
                    let Ok(name) = e.name() else { return };
                    let Some((section, rest)) = name.split_once('.') else {
                        return;
                    };
                    let Some((sub, key)) = rest.rsplit_once('.') else {
                        return;
                    };
                    match section {
                        "merge" => {
                            let slot = attrs.drivers.entry(sub.to_owned()).or_insert(None);
                            if key == "driver" {
                                *slot = e.value().ok().map(str::to_owned);
                            }
                        }
                        _ => {
                            if !attrs.filters.iter().any(|f| f == sub) {
                                attrs.filters.push(sub.to_owned());
                            }
                        }
                    }
                })
                .context_git(|| "reading the git config")?;
        }
        attrs.autocrlf = match config.get_string("core.autocrlf").ok().as_deref() {
            Some("input") => AutoCrlf::Input,
            Some(_) if config.get_bool("core.autocrlf").unwrap_or(false) => AutoCrlf::True,
            _ => AutoCrlf::False,
        };
        attrs.core_eol_crlf = config
            .get_string("core.eol")
            .is_ok_and(|v| v.eq_ignore_ascii_case("crlf"));
        Ok(attrs)
    }

    /// Whether attributes files outside the trees apply to every path.
    pub fn global(&self) -> bool {
        self.files.any_outside()
    }

    /// Attributes of `path` with no attributes file in play: git's defaults under the config.
    pub fn defaults(&self) -> Result<PathAttributes, Error> {
        Ok(PathAttributes {
            driver: self.driver(None, "")?,
            marker_size: crate::rerere::conflict_id::DEFAULT_MARKER_SIZE,
            crlf: self.crlf_action(None, None),
        })
    }

    /// The values of `names` for `path`, as `git check-attr` reports them: `"\u{1}true"` for set,
    /// `"\u{1}false"` for unset, `None` for unspecified.
    pub fn values(&mut self, path: &str, names: &[&str]) -> Vec<Option<String>> {
        self.files.values(path, names)
    }

    /// Looks `path` up; refuses attributes bport cannot honour for it.
    pub fn lookup(&mut self, path: &str) -> Result<PathAttributes, Error> {
        let values = self.files.values(path, &NAMES);
        let get = |name: &str| -> Option<&str> {
            NAMES
                .iter()
                .position(|n| *n == name)
                .and_then(|i| values.get(i))
                .and_then(|v| v.as_deref())
        };
        let refuse = |attribute: &str, value: &str| Error::UnsupportedAttribute {
            path: path.to_owned(),
            attribute: attribute.to_owned(),
            value: value.trim_start_matches('\u{1}').to_owned(),
        };
        // git ignores a filter the config does not define; only a defined one changes what git writes.
        if let Some(v) = get("filter") {
            if self.filters.iter().any(|f| f == v) {
                return Err(refuse("filter", v));
            }
        }
        if let Some(v) = get("working-tree-encoding") {
            if v != "\u{1}false" {
                return Err(refuse("working-tree-encoding", v));
            }
        }
        if get("ident") == Some("\u{1}true") {
            return Err(refuse("ident", "set"));
        }
        let marker_size = get("conflict-marker-size")
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|&n| n > 0)
            .map_or(crate::rerere::conflict_id::DEFAULT_MARKER_SIZE, |n| {
                n as usize
            });
        let text = get("text").or_else(|| get("crlf"));
        Ok(PathAttributes {
            driver: self.driver(get("merge"), path)?,
            marker_size,
            crlf: self.crlf_action(text, get("eol")),
        })
    }

    fn driver(&self, attr: Option<&str>, path: &str) -> Result<Driver, Error> {
        let name = match attr {
            Some("\u{1}true") => return Ok(Driver::Text),
            Some("\u{1}false") => return Ok(Driver::Binary),
            None => match &self.merge_default {
                None => return Ok(Driver::Text),
                Some(n) => n.as_str(),
            },
            Some(n) => n,
        };
        if let Some(command) = self.drivers.get(name) {
            return match command {
                Some(c) => Ok(Driver::External {
                    name: name.to_owned(),
                    command: c.clone(),
                }),
                None => Err(Error::MergeDriverWithoutCommand {
                    path: path.to_owned(),
                    name: name.to_owned(),
                }),
            };
        }
        Ok(match name {
            "binary" => Driver::Binary,
            "union" => Driver::Union,
            _ => Driver::Text,
        })
    }

    /// convert.c's `convert_attrs`: the `text` (or legacy `crlf`) and `eol` attributes, then `core.autocrlf`.
    fn crlf_action(&self, text: Option<&str>, eol: Option<&str>) -> CrlfAction {
        let mut action = match text {
            Some("\u{1}true") => Some(CrlfAction::Text),
            Some("\u{1}false") => Some(CrlfAction::Binary),
            Some("input") => Some(CrlfAction::TextInput),
            Some("auto") => Some(CrlfAction::Auto),
            _ => None,
        };
        if action != Some(CrlfAction::Binary) {
            match (eol, action) {
                (Some("lf"), Some(CrlfAction::Auto)) => action = Some(CrlfAction::AutoInput),
                (Some("crlf"), Some(CrlfAction::Auto)) => action = Some(CrlfAction::AutoCrlf),
                (Some("lf"), _) => action = Some(CrlfAction::TextInput),
                (Some("crlf"), _) => action = Some(CrlfAction::TextCrlf),
                _ => {}
            }
        }
        action.unwrap_or(match self.autocrlf {
            AutoCrlf::False => CrlfAction::Binary,
            AutoCrlf::True => CrlfAction::AutoCrlf,
            AutoCrlf::Input => CrlfAction::AutoInput,
        })
    }

    /// convert.c's `output_eol`: whether this action writes CRLF to the worktree.
    fn writes_crlf(&self, action: CrlfAction) -> bool {
        match action {
            CrlfAction::Binary | CrlfAction::TextInput | CrlfAction::AutoInput => false,
            CrlfAction::TextCrlf | CrlfAction::AutoCrlf => true,
            CrlfAction::Text | CrlfAction::Auto => match self.autocrlf {
                AutoCrlf::True => true,
                AutoCrlf::Input => false,
                AutoCrlf::False => self.core_eol_crlf,
            },
        }
    }

    /// The bytes git's checkout writes for `content` (convert.c's `crlf_to_worktree`); `None` when unchanged.
    pub fn to_worktree(&self, action: CrlfAction, content: &[u8]) -> Option<Vec<u8>> {
        if !self.writes_crlf(action) {
            return None;
        }
        let stats = Stats::gather(content);
        if stats.lonelf == 0 {
            return None;
        }
        if matches!(
            action,
            CrlfAction::Auto | CrlfAction::AutoInput | CrlfAction::AutoCrlf
        ) && (stats.lonecr > 0 || stats.crlf > 0 || stats.is_binary())
        {
            return None;
        }
        let mut out = Vec::with_capacity(content.len() + stats.lonelf);
        let mut prev = 0u8;
        for &b in content {
            if b == b'\n' && prev != b'\r' {
                out.push(b'\r');
            }
            out.push(b);
            prev = b;
        }
        Some(out)
    }

    /// The worktree (the directory custom drivers run in).
    pub fn workdir(&self) -> Option<&Path> {
        self.workdir.as_deref()
    }
}

/// convert.c's `text_stat`.
#[derive(Default)]
struct Stats {
    nul: usize,
    lonecr: usize,
    lonelf: usize,
    crlf: usize,
    printable: usize,
    nonprintable: usize,
}

impl Stats {
    fn gather(buf: &[u8]) -> Stats {
        let mut s = Stats::default();
        let mut i = 0;
        while i < buf.len() {
            let c = buf[i];
            if c == b'\r' {
                if buf.get(i + 1) == Some(&b'\n') {
                    s.crlf += 1;
                    i += 1;
                } else {
                    s.lonecr += 1;
                }
                i += 1;
                continue;
            }
            if c == b'\n' {
                s.lonelf += 1;
                i += 1;
                continue;
            }
            if c == 127 {
                s.nonprintable += 1;
            } else if c < 32 {
                match c {
                    b'\x08' | b'\t' | b'\x1b' | b'\x0c' => s.printable += 1,
                    0 => {
                        s.nul += 1;
                        s.nonprintable += 1;
                    }
                    _ => s.nonprintable += 1,
                }
            } else {
                s.printable += 1;
            }
            i += 1;
        }
        // A DOS end-of-file marker at the very end counts as printable.
        if buf.last() == Some(&0x1a) {
            s.nonprintable = s.nonprintable.saturating_sub(1);
        }
        s
    }

    /// convert.c's `convert_is_binary`.
    fn is_binary(&self) -> bool {
        self.lonecr > 0 || self.nul > 0 || (self.printable >> 7) < self.nonprintable
    }
}

/// A `merge.<name>.driver` run as git's merge-ll.c runs it: the three versions in temp files in the worktree,
/// the command line expanded (`%O %A %B` the files, `%L` the marker size, `%P %S %X %Y` the path and labels,
/// shell-quoted) and run by `sh -c`; exit 0 is clean, 1–128 a conflict, a signal an error; the result is `%A`.
pub struct ExternalMerge<'a> {
    /// The command line.
    pub command: &'a str,
    /// The driver's name, for errors.
    pub name: &'a str,
    /// The path merged.
    pub path: &'a str,
    /// Marker size for `%L`.
    pub marker_size: usize,
    /// Labels for `%S`, `%X`, `%Y`.
    pub labels: [&'a str; 3],
}

impl ExternalMerge<'_> {
    /// Runs the driver in `dir`; returns whether it merged cleanly and the result.
    pub fn run(&self, dir: &Path, versions: [&[u8]; 3]) -> Result<(bool, Vec<u8>), Error> {
        let io = |path: &Path, source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut temps: Vec<TempFile> = Vec::new();
        for v in versions {
            temps.push(TempFile::create(dir, v).map_err(|(p, e)| io(&p, e))?);
        }
        let name = |t: &TempFile| {
            t.0.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let mut cmd = String::new();
        let mut chars = self.command.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                cmd.push(c);
                continue;
            }
            match chars.peek().copied() {
                Some('%') => cmd.push('%'),
                Some('O') => cmd.push_str(&name(&temps[0])),
                Some('A') => cmd.push_str(&name(&temps[1])),
                Some('B') => cmd.push_str(&name(&temps[2])),
                Some('L') => cmd.push_str(&self.marker_size.to_string()),
                Some('P') => cmd.push_str(&sq_quote(self.path)),
                Some('S') => cmd.push_str(&sq_quote(self.labels[0])),
                Some('X') => cmd.push_str(&sq_quote(self.labels[1])),
                Some('Y') => cmd.push_str(&sq_quote(self.labels[2])),
                _ => {
                    cmd.push('%');
                    continue;
                }
            }
            chars.next();
        }
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .current_dir(dir)
            .status()
            .map_err(|source| Error::MergeDriverFailed {
                path: self.path.to_owned(),
                name: self.name.to_owned(),
                reason: format!("cannot run `sh -c {cmd}`: {source}"),
            })?;
        let result = std::fs::read(&temps[1].0).unwrap_or_default();
        match status.code() {
            Some(0) => Ok((true, result)),
            Some(n) if n <= 128 => Ok((false, result)),
            _ => Err(Error::MergeDriverFailed {
                path: self.path.to_owned(),
                name: self.name.to_owned(),
                reason: format!("`{cmd}` was killed ({status})"),
            }),
        }
    }
}

/// git's `sq_quote_buf`: single quotes, with `'` and `!` escaped outside them.
fn sq_quote(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        if c == '\'' || c == '!' {
            out.push('\'');
            out.push('\\');
            out.push(c);
            out.push('\'');
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A `.merge_file_XXXXXX` file, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn create(dir: &Path, content: &[u8]) -> Result<TempFile, (PathBuf, std::io::Error)> {
        use std::io::Write;
        let seed = std::process::id() as u64 ^ (content.len() as u64).rotate_left(17);
        for n in 0..1000u64 {
            let tag = format!(
                "{:06x}",
                (seed.wrapping_mul(2654435761).wrapping_add(n)) & 0xffffff
            );
            let path = dir.join(format!(".merge_file_{tag}"));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    let file = TempFile(path.clone());
                    f.write_all(content).map_err(|e| (path, e))?;
                    return Ok(file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err((path, e)),
            }
        }
        let path = dir.join(".merge_file_XXXXXX");
        Err((
            path,
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, "no free temp-file name"),
        ))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_lf_becomes_crlf_only_where_git_converts() {
        let a = Attributes::default();
        assert_eq!(
            a.to_worktree(CrlfAction::TextCrlf, b"a\nb\r\n"),
            Some(b"a\r\nb\r\n".to_vec())
        );
        // text=auto leaves a file that already has CRLF alone, and binaries too.
        assert_eq!(a.to_worktree(CrlfAction::AutoCrlf, b"a\nb\r\n"), None);
        assert_eq!(a.to_worktree(CrlfAction::AutoCrlf, b"a\n\0"), None);
        assert_eq!(a.to_worktree(CrlfAction::TextInput, b"a\n"), None);
        // `text` follows core.eol / core.autocrlf: LF on Linux by default.
        assert_eq!(a.to_worktree(CrlfAction::Text, b"a\n"), None);
    }

    #[test]
    fn environment_booleans_read_as_git_reads_them() {
        for off in ["", "0", "false", "No", "OFF"] {
            assert!(!env_bool(std::ffi::OsStr::new(off)), "{off}");
        }
        for on in ["1", "true", "YES", "on", "2"] {
            assert!(env_bool(std::ffi::OsStr::new(on)), "{on}");
        }
    }

    #[test]
    fn labels_are_shell_quoted_as_git_quotes_them() {
        assert_eq!(sq_quote("a'b!c"), r"'a'\''b'\!'c'");
    }
}
