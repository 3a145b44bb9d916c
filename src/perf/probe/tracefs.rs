//! The dynamic probe files of tracefs: `uprobe_events` and `kprobe_events` (Documentation/trace/uprobetracer.rst,
//! kprobetrace.rst). Reading them lists probes (also those a crashed run left behind); writing `p:`/`r:` lines adds
//! probes and `-:GROUP/EVENT` removes them, through the shared tracefs layer (`perf::trace::Tracefs`). An add that fails part-way removes what it wrote, so a failed
//! `bport probe` leaves no half-defined event.

use super::Error;
use std::path::Path;

/// Which probe file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `uprobe_events`.
    Uprobe,
    /// `kprobe_events`.
    Kprobe,
}

impl Kind {
    fn file(self) -> &'static str {
        match self {
            Kind::Uprobe => "uprobe_events",
            Kind::Kprobe => "kprobe_events",
        }
    }
}

/// One line of a probe file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeLine {
    /// `p` or `r`.
    pub retprobe: bool,
    /// The event's group.
    pub group: String,
    /// The event's name.
    pub event: String,
    /// `PATH:0xOFFSET` (uprobes) or `SYMBOL+OFFSET` (kprobes).
    pub place: String,
    /// The fetchargs, `NAME=FETCH[:TYPE]` each.
    pub args: Vec<String>,
}

impl ProbeLine {
    /// Parses a line as the kernel prints it (`p:GROUP/EVENT PLACE ARGS...`).
    pub fn parse(line: &str) -> Option<ProbeLine> {
        let mut words = line.split_whitespace();
        let head = words.next()?;
        let (kind, name) = head.split_once(':')?;
        let retprobe = match kind {
            "p" => false,
            "r" => true,
            _ => return None,
        };
        let (group, event) = name.split_once('/')?;
        Some(ProbeLine {
            retprobe,
            group: group.into(),
            event: event.into(),
            place: words.next()?.into(),
            args: words.map(String::from).collect(),
        })
    }

    /// `GROUP:EVENT`, the name perf tools take.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.group, self.event)
    }
}

/// The probe files of a tracefs (found, or mounted, by the shared tracefs layer `perf::trace::Tracefs`).
#[derive(Clone, Debug)]
pub struct Tracefs {
    fs: crate::perf::trace::Tracefs,
}

impl Tracefs {
    /// Finds tracefs, mounting it at `/sys/kernel/tracing` when it is not mounted. `BPORT_TRACEFS` names another
    /// directory to use (and to mount on).
    pub fn open() -> Result<Tracefs, Error> {
        if let Some(dir) = std::env::var_os("BPORT_TRACEFS") {
            return Self::at(Path::new(&dir));
        }
        match crate::perf::trace::Tracefs::find_or_mount() {
            Ok(fs) => Ok(Tracefs { fs }),
            Err(crate::perf::trace::Error::Mount { path, source }) => {
                Err(Error::TracefsUnavailable {
                    path,
                    reason: format!("mount -t tracefs failed: {source}"),
                })
            }
            Err(e) => Err(Error::TracefsUnavailable {
                path: "/sys/kernel/tracing".into(),
                reason: e.to_string(),
            }),
        }
    }

    /// Uses `root`, mounting tracefs there when it holds no events.
    pub fn at(root: &Path) -> Result<Tracefs, Error> {
        if !root.join("events").is_dir() {
            crate::perf::sys::mount_tracefs(root).map_err(|e| Error::TracefsUnavailable {
                path: root.into(),
                reason: format!("mount -t tracefs failed: {e}"),
            })?;
        }
        Ok(Tracefs {
            fs: crate::perf::trace::Tracefs::at(root),
        })
    }

    /// The mount point.
    pub fn root(&self) -> &Path {
        self.fs.root()
    }

    /// The lines of a probe file.
    pub fn read(&self, kind: Kind) -> Result<Vec<ProbeLine>, Error> {
        let path = self.root().join(kind.file());
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(s.lines().filter_map(ProbeLine::parse).collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(Error::Tracefs { path, source }),
        }
    }

    /// The `GROUP:EVENT` names of every probe event defined now, uprobes then kprobes.
    pub fn event_names(&self) -> Result<Vec<String>, Error> {
        let mut names = Vec::new();
        for kind in [Kind::Uprobe, Kind::Kprobe] {
            names.extend(self.read(kind)?.iter().map(|l| l.full_name()));
        }
        Ok(names)
    }

    /// Whether the kernel offers this probe kind.
    pub fn has(&self, kind: Kind) -> bool {
        self.root().join(kind.file()).exists()
    }

    fn write_line(&self, kind: Kind, line: &str) -> Result<(), Error> {
        match self.fs.write_control(kind.file(), line) {
            Ok(()) => Ok(()),
            Err(crate::perf::trace::Error::Control {
                line,
                kernel_says,
                source,
                ..
            }) => Err(Error::Write {
                definition: line,
                source,
                detail: kernel_says,
            }),
            Err(crate::perf::trace::Error::Io { path, source }) => {
                Err(Error::Tracefs { path, source })
            }
            Err(e) => Err(Error::Unsupported(e.to_string())),
        }
    }

    /// Writes definitions in order; when one fails, removes the events this call created and reports the
    /// kernel's reason (its `error_log` entry).
    pub fn add(&self, kind: Kind, defs: &[String]) -> Result<(), Error> {
        if !self.has(kind) {
            return Err(Error::NoProbeFile {
                path: self.root().join(kind.file()),
            });
        }
        let before: Vec<String> = self.read(kind)?.iter().map(|l| l.full_name()).collect();
        for def in defs {
            if let Err(e) = self.write_line(kind, def) {
                let mut created: Vec<String> = self
                    .read(kind)
                    .unwrap_or_default()
                    .iter()
                    .map(|l| l.full_name())
                    .filter(|n| !before.contains(n))
                    .collect();
                created.dedup();
                for name in &created {
                    let _ = self.write_line(kind, &format!("-:{}", name.replacen(':', "/", 1)));
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes an event (all its probes).
    pub fn delete(&self, kind: Kind, group: &str, event: &str) -> Result<(), Error> {
        self.write_line(kind, &format!("-:{group}/{event}"))
    }
}

/// perf's `strglobmatch`, shared with `record -e` globs.
pub use crate::perf::trace::tracefs::glob_match;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_the_kernel_prints_them() {
        let l = ProbeLine::parse(
            "p:probe_prog0/work_L4 /tmp/i15/prog0:0x000000000000117c a=-20(%bp):s32 i=-8(%bp):s32",
        )
        .unwrap();
        assert_eq!(l.full_name(), "probe_prog0:work_L4");
        assert_eq!(l.place, "/tmp/i15/prog0:0x000000000000117c");
        assert_eq!(l.args, ["a=-20(%bp):s32", "i=-8(%bp):s32"]);
        let r = ProbeLine::parse("r:probe_prog0/work__return /tmp/p:0x115e arg1=$retval").unwrap();
        assert!(r.retprobe);
        assert!(ProbeLine::parse("garbage").is_none());
    }

    #[test]
    fn globs() {
        assert!(glob_match("probe_prog*:*", "probe_prog0:work_L4"));
        assert!(glob_match("work_L?", "work_L4"));
        assert!(!glob_match("work", "work_L4"));
    }
}
