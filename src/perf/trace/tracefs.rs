//! Finding (and when needed mounting) tracefs, reading event ids and `format` files, listing events, and writing a
//! line to a control file (`uprobe_events`, `kprobe_events`).
//!
//! Where it lives: `/sys/kernel/tracing` since Linux 4.1; before that, and on systems that only mount debugfs,
//! `/sys/kernel/debug/tracing`. perf looks in the same places (tools/lib/api/fs/tracing_path.c), taking mount
//! points from /proc/mounts first.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::format::EventFormat;
use super::Error;

/// A tracefs directory (the one holding `events/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

/// Where tracefs is looked for, in order, when /proc/mounts names none.
const CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Tracefs {
    /// A tracefs at `root` (tests, or a tracefs mounted elsewhere). Nothing is checked until it is used.
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs { root: root.into() }
    }

    /// The mounted tracefs, if any: a `tracefs` mount in /proc/mounts, then the `tracing` directory of a
    /// `debugfs` mount, then the usual paths.
    pub fn find() -> Option<Tracefs> {
        let usable = |p: &Path| p.join("events").is_dir();
        if let Ok(mounts) = std::fs::read_to_string("/proc/mounts") {
            for kind in ["tracefs", "debugfs"] {
                for line in mounts.lines() {
                    let mut it = line.split_whitespace();
                    let (_, dir, fs) = (it.next(), it.next(), it.next());
                    if fs != Some(kind) {
                        continue;
                    }
                    let dir = PathBuf::from(unescape_mount(dir.unwrap_or("")));
                    let dir = if kind == "debugfs" {
                        dir.join("tracing")
                    } else {
                        dir
                    };
                    if usable(&dir) {
                        return Some(Tracefs { root: dir });
                    }
                }
            }
        }
        CANDIDATES
            .iter()
            .map(PathBuf::from)
            .find(|p| usable(p))
            .map(|root| Tracefs { root })
    }

    /// The mounted tracefs, mounting it at `/sys/kernel/tracing` when there is none (as root), with an error that
    /// says what to do when that fails.
    pub fn find_or_mount() -> Result<Tracefs, Error> {
        if let Some(t) = Tracefs::find() {
            return Ok(t);
        }
        let target = PathBuf::from(CANDIDATES[0]);
        crate::perf::sys::mount_tracefs(&target).map_err(|source| Error::Mount {
            path: target.clone(),
            source,
        })?;
        if target.join("events").is_dir() {
            Ok(Tracefs { root: target })
        } else {
            Err(Error::Mount {
                path: target,
                source: std::io::Error::other("mounted, but it has no events/ directory"),
            })
        }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn event_dir(&self, system: &str, name: &str) -> Result<PathBuf, Error> {
        let ok = |s: &str| !s.is_empty() && !s.contains('/') && s != "." && s != "..";
        if !ok(system) || !ok(name) {
            return Err(Error::BadName(format!("{system}:{name}")));
        }
        let dir = self.root.join("events").join(system).join(name);
        if !dir.is_dir() {
            return Err(Error::NoSuchEvent {
                event: format!("{system}:{name}"),
                tracefs: self.root.clone(),
            });
        }
        Ok(dir)
    }

    /// The `format` file's text of `system:name`.
    pub fn format_text(&self, system: &str, name: &str) -> Result<String, Error> {
        let path = self.event_dir(system, name)?.join("format");
        std::fs::read_to_string(&path).map_err(io_err(&path))
    }

    /// The parsed `format` of `system:name`.
    pub fn format(&self, system: &str, name: &str) -> Result<EventFormat, Error> {
        EventFormat::parse(
            &self.format_text(system, name)?,
            &format!("{system}:{name}"),
        )
    }

    /// The id of `system:name` (the `id` file; the same number as the format's `ID:`).
    pub fn id(&self, system: &str, name: &str) -> Result<u64, Error> {
        let path = self.event_dir(system, name)?.join("id");
        let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
        text.trim().parse().map_err(|_| Error::Format {
            what: path.display().to_string(),
            line: 1,
            reason: format!("{:?} is not a number", text.trim()),
        })
    }

    /// A file of the events directory (`header_page`, `header_event`), as text.
    ///
    /// Read in one large `read`: the kernel's handler for these files answers only a read at offset 0
    /// (`show_header_page_file`: `if (*ppos) return 0;`), so std's small first probe read would cut them at
    /// 32 bytes.
    pub fn events_file(&self, name: &str) -> Result<String, Error> {
        use std::io::Read;
        let path = self.root.join("events").join(name);
        let mut f = std::fs::File::open(&path).map_err(io_err(&path))?;
        let mut buf = vec![0u8; 64 * 1024];
        let n = f.read(&mut buf).map_err(io_err(&path))?;
        buf.truncate(n);
        String::from_utf8(buf).map_err(|_| Error::Format {
            what: path.display().to_string(),
            line: 0,
            reason: "not UTF-8".into(),
        })
    }

    /// Every event as `(system, name)`, sorted; with `system` only that system's. Directories without a
    /// `format` file (the `enable`/`filter` files of a system) are not events.
    pub fn events(&self, system: Option<&str>) -> Result<Vec<(String, String)>, Error> {
        let events = self.root.join("events");
        let mut out = Vec::new();
        let systems: Vec<String> = match system {
            Some(s) => vec![s.to_string()],
            None => read_dir_names(&events)?,
        };
        for sys in systems {
            let dir = events.join(&sys);
            if !dir.is_dir() {
                continue;
            }
            for name in read_dir_names(&dir)? {
                if dir.join(&name).join("format").is_file() {
                    out.push((sys.clone(), name));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The events `system:name` names when either part is a glob (`probe_prog:*`, `sched:sched_w*`,
    /// `sch*:*wakeup`), as perf's `add_tracepoint_multi_sys` / `add_tracepoint_multi_event` expand them: systems
    /// and events in directory order (perf reads them with readdir, unsorted), directories without a `format`
    /// file skipped. Nothing matching is an error naming the pattern, as perf refuses it.
    pub fn matching_events(
        &self,
        system: &str,
        name: &str,
    ) -> Result<Vec<(String, String)>, Error> {
        let events = self.root.join("events");
        let systems: Vec<String> = if is_glob(system) {
            read_dir_names(&events)?
                .into_iter()
                .filter(|s| glob_match(system, s))
                .collect()
        } else {
            self.event_dir_name_ok(system)?;
            vec![system.to_string()]
        };
        let mut out = Vec::new();
        for sys in systems {
            let dir = events.join(&sys);
            if !dir.is_dir() {
                continue;
            }
            for event in read_dir_names(&dir)? {
                if glob_match(name, &event) && dir.join(&event).join("format").is_file() {
                    out.push((sys.clone(), event));
                }
            }
        }
        if out.is_empty() {
            return Err(Error::NoMatchingEvent {
                pattern: format!("{system}:{name}"),
                tracefs: self.root.clone(),
            });
        }
        Ok(out)
    }

    fn event_dir_name_ok(&self, part: &str) -> Result<(), Error> {
        if part.is_empty() || part.contains('/') || part == "." || part == ".." {
            return Err(Error::BadName(part.to_string()));
        }
        Ok(())
    }

    /// Appends one line to a control file (`uprobe_events`, `kprobe_events`) in one `write`, as the kernel
    /// parses one definition per write; the kernel's refusal (EINVAL, EEXIST, EBUSY) comes back as the error,
    /// and the file's own `error_log` line is added when the kernel wrote one.
    pub fn write_control(&self, file: &str, line: &str) -> Result<(), Error> {
        let path = self.root.join(file);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        let mut text = line.trim_end_matches('\n').to_string();
        text.push('\n');
        f.write_all(text.as_bytes())
            .map_err(|source| Error::Control {
                path: path.clone(),
                line: line.to_string(),
                kernel_says: self.last_error_log(),
                source,
            })
    }

    /// The last entry of `error_log` (Linux 5.4), where the kernel says why it refused a definition.
    pub fn last_error_log(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.root.join("error_log")).ok()?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        // An entry is a "[time] source: error: text" line, then the command, then a caret line.
        let start = lines.iter().rposition(|l| l.starts_with('['))?;
        Some(lines[start..].join("\n"))
    }
}

/// Whether an event name part is a glob pattern (perf's `strpbrk(name, "*?")`, and `[` for a class).
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// perf's `strglobmatch` (tools/perf/util/string.c): `*` any run, `?` any one character, `[abc]` and `[a-z]` a
/// class, `\` makes the next character literal; the whole text must match.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    fn class(p: &[char], c: char) -> Option<(bool, usize)> {
        // `p` starts after `[`; returns whether `c` is in the class and the length up to and including `]`.
        let mut i = 0;
        let mut hit = false;
        while i < p.len() {
            if p[i] == ']' && i > 0 {
                return Some((hit, i + 1));
            }
            if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                hit |= p[i] <= c && c <= p[i + 2];
                i += 3;
            } else {
                hit |= p[i] == c;
                i += 1;
            }
        }
        None
    }
    fn go(p: &[char], t: &[char]) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some('*') => (0..=t.len()).any(|k| go(&p[1..], &t[k..])),
            Some('?') => !t.is_empty() && go(&p[1..], &t[1..]),
            Some('[') => match (
                class(&p[1..], t.first().copied().unwrap_or('\0')),
                t.first(),
            ) {
                (Some((true, n)), Some(_)) => go(&p[1 + n..], &t[1..]),
                (Some(_), _) => false,
                // An unclosed `[` is a literal, as in perf.
                (None, Some('[')) => go(&p[1..], &t[1..]),
                (None, _) => false,
            },
            Some('\\') if p.len() > 1 => t.first() == Some(&p[1]) && go(&p[2..], &t[1..]),
            Some(c) => t.first() == Some(c) && go(&p[1..], &t[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    go(&p, &t)
}

fn read_dir_names(dir: &Path) -> Result<Vec<String>, Error> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(names)
}

/// /proc/mounts escapes space, tab, newline and backslash as octal (`\040`).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_as_perf_matches_them() {
        assert!(glob_match("*", "sched_switch"));
        assert!(glob_match("sched_w*", "sched_wakeup_new"));
        assert!(!glob_match("sched_w*", "sched_switch"));
        assert!(glob_match("work_L?", "work_L4"));
        assert!(!glob_match("work", "work_L4"));
        assert!(glob_match("probe_prog*:*", "probe_prog0:work_L4"));
        assert!(glob_match("sched_[sw]*", "sched_switch"));
        assert!(glob_match("irq_[a-f]*", "irq_enter"));
        assert!(!glob_match("irq_[a-d]*", "irq_enter"));
        assert!(glob_match("a\\*b", "a*b"));
        assert!(!glob_match("a\\*b", "axb"));
        assert!(glob_match("x[y", "x[y"));
        assert!(is_glob("probe_prog:*") && !is_glob("sched:sched_switch"));
    }

    #[test]
    fn globs_expand_over_an_events_directory_and_an_empty_match_is_an_error() {
        let root = tempfile::tempdir().unwrap();
        for (sys, ev) in [
            ("probe_a", "work"),
            ("probe_a", "show"),
            ("probe_b", "work"),
            ("sched", "x"),
        ] {
            let d = root.path().join("events").join(sys).join(ev);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("format"), "name: x\n").unwrap();
        }
        // A system's own files and a directory without `format` are not events.
        std::fs::create_dir_all(root.path().join("events/probe_a/notanevent")).unwrap();
        std::fs::write(root.path().join("events/probe_a/enable"), "0").unwrap();
        let t = Tracefs::at(root.path());
        let mut got = t.matching_events("probe_a", "*").unwrap();
        got.sort();
        assert_eq!(
            got,
            [
                ("probe_a".into(), "show".into()),
                ("probe_a".into(), "work".into())
            ]
        );
        let mut got = t.matching_events("probe_*", "work").unwrap();
        got.sort();
        assert_eq!(
            got,
            [
                ("probe_a".into(), "work".into()),
                ("probe_b".into(), "work".into())
            ]
        );
        assert!(matches!(
            t.matching_events("probe_a", "nothing*"),
            Err(Error::NoMatchingEvent { .. })
        ));
        assert!(matches!(
            t.matching_events("nosuch", "*"),
            Err(Error::NoMatchingEvent { .. })
        ));
        assert!(matches!(
            t.matching_events("..", "*"),
            Err(Error::BadName(_))
        ));
    }

    #[test]
    fn mount_paths_are_unescaped() {
        assert_eq!(unescape_mount("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape_mount("/x\\"), "/x\\");
    }

    #[test]
    fn names_with_slashes_never_leave_the_events_directory() {
        let t = Tracefs::at("/nonexistent");
        assert!(matches!(t.format("..", "x"), Err(Error::BadName(_))));
        assert!(matches!(t.id("a/b", "x"), Err(Error::BadName(_))));
        assert!(matches!(
            t.id("sched", "nope"),
            Err(Error::NoSuchEvent { .. })
        ));
    }
}
