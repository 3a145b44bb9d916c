//! Build-ids of a recording (`buildid-list`) and a bundle of the files its samples hit, in the build-id cache's
//! layout (`archive`), so the recording symbolizes on another machine.
//!
//! Follows tools/perf/builtin-buildid-list.c (the BUILD_ID table in file order; `--with-hits` keeps the DSOs a
//! sample's IP fell into) and tools/perf/perf-archive.sh, which tars `.build-id/xx/yyyy…` links together with
//! their targets under `~/.debug`. The cache layout is perf 6.x's: `.build-id/xx/yyyy… → ../../PATH/BUILD-ID`,
//! a directory holding `elf` (or `kallsyms`, `vdso`). Unpacking with `tar xf BUNDLE -C ~/.debug` makes both
//! `bport script` and `perf script` find the files.

use crate::perf::abi::{HEADER_BUILD_ID, PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL};
use crate::perf::data::{Mmap2Inode, PerfFile, Record};
use crate::perf::script::machine::dso_name;
use crate::perf::script::session::{samples, ScriptError};
use crate::perf::script::Options;
use crate::perf::symbols::{build_id_link, hex, FileLookup, FsLookup, Symbolizer};
use std::io::Write;
use std::path::PathBuf;

/// One build-id entry as `perf buildid-list` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdLine {
    /// The build-id, hex.
    pub build_id: String,
    /// The DSO name (`[kernel.kallsyms]`, `[vdso]` or a path).
    pub name: String,
}

/// The build-ids `perf buildid-list` prints for `file`.
///
/// With a BUILD_ID table (file mode, as `perf record` writes it): the table in file order; with `with_hits`, only
/// DSOs that a sample's IP fell into (this reads every sample). Without one — pipe mode, where build-ids can only
/// come as HEADER_BUILD_ID records, and `perf record -z`, which skips the build-id pass — perf 6.1 reads every
/// sample and lists each DSO a sample's IP hit (`with_hits` forced on), in the order its session met the DSOs,
/// with the build-id a HEADER_BUILD_ID or MMAP2 record gave it and a blank one otherwise
/// (builtin-buildid-list.c: `if (!perf_header__has_feat(.., HEADER_BUILD_ID)) with_hits = true`).
pub fn buildid_list(
    file: &PerfFile,
    options: &Options,
    with_hits: bool,
) -> Result<Vec<BuildIdLine>, ScriptError> {
    let has_table = !file.is_pipe() && file.feature_ids().contains(&HEADER_BUILD_ID);
    let hits = if with_hits || !has_table {
        let mut it = samples(file, options);
        while let Some(item) = it.next_sample() {
            item?;
        }
        Some(it.hits)
    } else {
        None
    };
    if !has_table {
        let hits = hits.unwrap_or_default();
        return Ok(dsos_met(file)
            .into_iter()
            .filter(|dso| hits.contains(dso.name.as_str()))
            .map(|dso| BuildIdLine {
                build_id: dso.build_id.map_or_else(String::new, |b| hex(&b)),
                name: dso.long_name,
            })
            .collect());
    }
    let mut seen = std::collections::HashSet::new();
    let mut lines: Vec<BuildIdLine> = file
        .build_ids()
        .iter()
        .filter(|e| {
            hits.as_ref()
                .is_none_or(|h| h.contains(e.filename.as_str()))
        })
        .filter(|e| seen.insert((e.filename.clone(), e.build_id.clone())))
        .map(|e| BuildIdLine {
            build_id: hex(&e.build_id),
            name: e.filename.clone(),
        })
        .collect();
    if let Some(hits) = hits {
        // perf makes the table's DSOs while it reads the header and the others at their first MMAP, then
        // lists every DSO with a hit: one the table does not name (linked with `--build-id=none`, as Go
        // binaries often are) follows the table's, with a blank id.
        let tabled: std::collections::HashSet<&str> = file
            .build_ids()
            .iter()
            .map(|e| e.filename.as_str())
            .collect();
        let extra: Vec<BuildIdLine> = dsos_met(file)
            .into_iter()
            .filter(|dso| hits.contains(dso.name.as_str()))
            .filter(|dso| {
                !tabled.contains(dso.name.as_str()) && !tabled.contains(dso.long_name.as_str())
            })
            .map(|dso| BuildIdLine {
                build_id: dso.build_id.map_or_else(String::new, |b| hex(&b)),
                name: dso.long_name,
            })
            .collect();
        lines.extend(extra);
    }
    Ok(lines)
}

/// Every DSO the records map, in the order perf's session creates them (`dsos__findnew`): those of build-id
/// records ahead of every kernel record, the kernel image (perf makes its DSO at the first record), then each name at its first MMAP/MMAP2 record in time
/// order, with the build-id of that MMAP2 record or of a HEADER_BUILD_ID record naming it.
fn dsos_met(file: &PerfFile) -> Vec<MetDso> {
    const KERNEL: &str = "[kernel.kallsyms]";
    // A stream's build-id records ahead of every kernel record make their DSOs first (bport's pipe streams
    // send the vdso's there); perf makes the kernel's at the first record.
    let mut order: Vec<MetDso> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for b in file.leading_build_ids() {
        let kernel = b.misc & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
        let name = dso_name(&b.filename, kernel, 0).into_owned();
        if !index.contains_key(&name) {
            index.insert(name.clone(), order.len());
            order.push(MetDso {
                long_name: b.filename.clone(),
                name,
                build_id: Some(b.build_id.clone()),
            });
        }
    }
    if !index.contains_key(KERNEL) {
        index.insert(KERNEL.to_string(), order.len());
        order.push(MetDso {
            name: KERNEL.to_string(),
            long_name: KERNEL.to_string(),
            build_id: None,
        });
    }
    let kernel_at = index[KERNEL];
    let mut meet = |name: String, long_name: &str, build_id: Option<Vec<u8>>| {
        let i = *index.entry(name.clone()).or_insert_with(|| {
            order.push(MetDso {
                name,
                long_name: long_name.to_owned(),
                build_id: None,
            });
            order.len() - 1
        });
        if order[i].build_id.is_none() {
            order[i].build_id = build_id;
        }
    };
    // The other HEADER_BUILD_ID records come at a stream's end, after the MMAPs of the DSOs they name: only
    // their build-ids matter.
    let recorded: std::collections::HashMap<std::borrow::Cow<'_, str>, &[u8]> = file
        .build_ids()
        .iter()
        .map(|b| {
            let kernel = b.misc & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
            // The entries' pid is the machine's (-1 for the host), not a process's.
            (dso_name(&b.filename, kernel, 0), &b.build_id[..])
        })
        .collect();
    for record in file.records().flatten() {
        let (filename, kernel, pid, build_id) = match &record {
            Record::Mmap(m) => (
                m.filename,
                m.meta.cpumode() == PERF_RECORD_MISC_KERNEL,
                m.pid as i32,
                None,
            ),
            Record::Mmap2(m) => (
                m.filename,
                m.meta.cpumode() == PERF_RECORD_MISC_KERNEL,
                m.pid as i32,
                match m.inode {
                    Mmap2Inode::BuildId(b) => Some(b.to_vec()),
                    Mmap2Inode::Inode { .. } => None,
                },
            ),
            _ => continue,
        };
        let filename = String::from_utf8_lossy(filename.split(|&b| b == 0).next().unwrap_or(&[]));
        let name = dso_name(&filename, kernel, pid).into_owned();
        let build_id = build_id.or_else(|| recorded.get(name.as_str()).map(|b| b.to_vec()));
        // perf lists a DSO by its long name: a module's path, where script shows `[name]`.
        let long_name: &str = if (kernel || pid == -1) && name != KERNEL && name.starts_with('[') {
            &filename
        } else {
            &name
        };
        meet(name.clone(), long_name, build_id);
    }
    if let Some(bid) = recorded.get(KERNEL) {
        if order[kernel_at].build_id.is_none() {
            order[kernel_at].build_id = Some(bid.to_vec());
        }
    }
    order
}

/// A DSO of the records: its name as samples' frames show it (`[ath9k_hw]`), as buildid-list lists it (a
/// module's path), and its build-id when a record gave one.
struct MetDso {
    name: String,
    long_name: String,
    build_id: Option<Vec<u8>>,
}

/// What went into a bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchiveOutcome {
    /// `(DSO name, file it was taken from)` for each bundled DSO.
    pub bundled: Vec<(String, PathBuf)>,
    /// DSOs with hits that could not be bundled (no file with the recorded build-id), with the reason.
    pub missing: Vec<(String, String)>,
}

/// The directory (relative to `~/.debug`) and file name the cache keeps a DSO under.
fn cache_place(name: &str, build_id: &str) -> (String, &'static str) {
    let file = if name.starts_with("[kernel.kallsyms]") {
        "kallsyms"
    } else if name == "[vdso]" {
        "vdso"
    } else {
        "elf"
    };
    let dir = format!("{}/{build_id}", name.trim_start_matches('/'));
    (dir, file)
}

/// Why no archive was made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// The recording could not be read.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// A DSO name of the recording would put a file outside the build-id cache's directory when the archive is
    /// unpacked (`tar xf … -C ~/.debug`).
    #[error("the recording names the DSO {name:?}, whose place in the archive would be outside ~/.debug ({why}); no archive was made")]
    BadName {
        /// The name as the recording gives it.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Writing the archive failed.
    #[error("cannot write the archive: {0}")]
    Io(#[from] std::io::Error),
}

/// Why `name` cannot be a directory under `~/.debug`: a `..` component (a recording from anywhere must not
/// place files outside the cache), or nothing left of it.
fn bad_name(name: &str) -> Option<&'static str> {
    let rel = name.trim_start_matches('/');
    if rel.is_empty() {
        Some("no file name")
    } else if rel.split('/').any(|c| c == "..") {
        Some("a `..` component")
    } else {
        None
    }
}

/// Writes a tar of the hit DSOs of `file` in build-id cache layout to `out`. Every name is checked before
/// anything is written; the caller makes the output file appear only when this succeeds.
pub fn archive(
    file: &PerfFile,
    options: &Options,
    out: impl Write,
) -> Result<ArchiveOutcome, ArchiveError> {
    archive_with(file, options, FsLookup, out)
}

/// Like [`archive`], reading DSOs through `lookup`.
pub fn archive_with<L: FileLookup>(
    file: &PerfFile,
    options: &Options,
    lookup: L,
    out: impl Write,
) -> Result<ArchiveOutcome, ArchiveError> {
    let lines = buildid_list(file, options, true)?;
    if let Some((name, why)) = lines
        .iter()
        .filter(|l| parse_hex(&l.build_id).is_some())
        .find_map(|l| bad_name(&l.name).map(|why| (&l.name, why)))
    {
        return Err(ArchiveError::BadName {
            name: name.clone(),
            why,
        });
    }
    let mut symbolizer = Symbolizer::new(lookup, options.symbolizer.clone());
    let mut tar = tar::Builder::new(out);
    tar.mode(tar::HeaderMode::Deterministic);
    let mut outcome = ArchiveOutcome::default();
    let mut dirs = std::collections::BTreeSet::new();
    for line in lines {
        let Some(bid) = parse_hex(&line.build_id) else {
            continue;
        };
        let source = if line.name.starts_with("[kernel.kallsyms]") {
            symbolizer.kallsyms_source(Some(&bid))
        } else {
            let dso = symbolizer.dso(&line.name, Some(&bid));
            match (&dso.runtime_file, &dso.problem) {
                (Some(p), None) => symbolizer.read_object(p).ok().map(|b| (p.clone(), b)),
                (_, Some(problem)) => {
                    outcome
                        .missing
                        .push((line.name.clone(), problem.to_string()));
                    continue;
                }
                (None, None) => None,
            }
        };
        let Some((path, bytes)) = source else {
            outcome.missing.push((
                line.name.clone(),
                "no file with this build-id found".to_owned(),
            ));
            continue;
        };
        let (dir, name) = cache_place(&line.name, &line.build_id);
        // Parent directories first, so `tar xf` creates them with sane modes on any tar.
        let mut prefix = String::new();
        for part in dir.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if dirs.insert(prefix.clone()) {
                append_dir(&mut tar, &prefix)?;
            }
        }
        let data: &[u8] = (*bytes).as_ref();
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(if name == "kallsyms" { 0o644 } else { 0o755 });
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, format!("{dir}/{name}"), data)?;
        let link = build_id_link(&bid);
        let (xx, _) = link.split_at(2);
        let link_dir = format!(".build-id/{xx}");
        for d in [".build-id".to_owned(), link_dir] {
            if dirs.insert(d.clone()) {
                append_dir(&mut tar, &d)?;
            }
        }
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        header.set_mode(0o777);
        tar.append_link(
            &mut header,
            format!(".build-id/{link}"),
            format!("../../{dir}"),
        )?;
        outcome.bundled.push((line.name.clone(), path));
    }
    tar.finish()?;
    Ok(outcome)
}

fn append_dir<W: Write>(tar: &mut tar::Builder<W>, path: &str) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Directory);
    header.set_size(0);
    header.set_mode(0o755);
    tar.append_data(&mut header, format!("{path}/"), std::io::empty())
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_places_follow_perf() {
        assert_eq!(
            cache_place("/tmp/w/chain-fp", "ab"),
            ("tmp/w/chain-fp/ab".to_owned(), "elf")
        );
        assert_eq!(
            cache_place("[kernel.kallsyms]", "cd"),
            ("[kernel.kallsyms]/cd".to_owned(), "kallsyms")
        );
        assert_eq!(
            cache_place("[vdso]", "ef"),
            ("[vdso]/ef".to_owned(), "vdso")
        );
        assert_eq!(parse_hex("0a1b"), Some(vec![0x0a, 0x1b]));
        assert_eq!(
            bad_name("/tmp/../../etc/cron.d/x"),
            Some("a `..` component")
        );
        assert_eq!(bad_name(".."), Some("a `..` component"));
        assert_eq!(bad_name("///"), Some("no file name"));
        assert_eq!(bad_name("/usr/lib/libc.so.6"), None);
        assert_eq!(bad_name("/opt/a..b/x"), None);
        assert_eq!(parse_hex("0a1"), None);
    }
}
