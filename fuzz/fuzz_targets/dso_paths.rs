//! DSO names and build-ids from a recording, and the files found for them: any name (`..`, absolute escapes,
//! NULs, bytes that are not UTF-8), any build-id (empty, short, long) and any file bytes (raw, or a real ELF file
//! with bytes changed) give a DSO or a problem, never a panic; a DSO whose build-id was recorded takes its
//! symbols only from a file with that build-id; a name that is no file ("a FIFO") is "not a DSO"; and `archive`
//! over a recording that maps the name either refuses it (exit 2: a `..` in it) or writes a tar whose every
//! entry and link stays inside the directory it is unpacked into (`tar xf … -C ~/.debug`).
//!
//! Input: a flags byte, then the name, the build-id and the file bytes, separated by 0xff bytes. With flag 4 the
//! file bytes are (u16 offset, byte) patches to a real ELF file (the frame-pointer workload), so the ELF parser
//! is reached at once.

#![no_main]

use bport::perf::abi::*;
use bport::perf::data::{
    BuildIdEntry, CommRecord, Features, Mmap2Inode, Mmap2Record, PerfEventAttr, PerfFile,
    PerfFileWriter, Record, RecordMeta, SampleId, SampleRecord, WriterOptions,
};
use bport::perf::script::Options;
use bport::perf::symbols::{
    build_id_link, elf, hex, DsoProblem, FileLookup, MemLookup, Symbolizer, SymbolizerOptions,
    Unread,
};
use bport::perf::tools::archive::{archive_with, ArchiveError};
use bport::perf::workloads::Build;
use libfuzzer_sys::fuzz_target;
use std::path::{Component, Path, PathBuf};

const HOME: &str = "/home/f";

fn symbolizer_options(symfs: bool) -> SymbolizerOptions {
    SymbolizerOptions {
        demangle: true,
        symfs: symfs.then(|| PathBuf::from("/symfs")),
        home: Some(PathBuf::from(HOME)),
        debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
        kallsyms: None,
        running_kernel: false,
    }
}

/// A recording of one process mapping `name` with a sample in it, and `build_id` recorded for it.
fn recording(name: &[u8], build_id: Option<&[u8]>) -> Option<PerfFile> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER5,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period_or_freq: 1000,
        sample_type: PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
        flags: ATTR_FLAG_SAMPLE_ID_ALL | ATTR_FLAG_MMAP | ATTR_FLAG_COMM | ATTR_FLAG_MMAP2,
        ..Default::default()
    };
    let meta = |ty, misc, time| RecordMeta {
        ty,
        misc,
        attr_index: Some(0),
        sample_id: SampleId {
            pid: Some(7),
            tid: Some(7),
            time: Some(time),
            id: Some(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut w =
        PerfFileWriter::new(std::io::Cursor::new(Vec::new()), WriterOptions::default()).ok()?;
    w.add_attr(&attr, &[1]).ok()?;
    w.write_record(&Record::Comm(CommRecord {
        meta: meta(PERF_RECORD_COMM, 0, 1),
        pid: 7,
        tid: 7,
        comm: b"fuzz",
    }))
    .ok()?;
    w.write_record(&Record::Mmap2(Mmap2Record {
        meta: meta(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 2),
        pid: 7,
        tid: 7,
        addr: 0x40_0000,
        len: 0x10_0000,
        pgoff: 0,
        inode: Mmap2Inode::Inode {
            maj: 0,
            min: 0,
            ino: 0,
            ino_generation: 0,
        },
        prot: 5,
        flags: 2,
        filename: name,
    }))
    .ok()?;
    w.write_record(&Record::Sample(SampleRecord {
        meta: meta(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 3),
        id: Some(1),
        ip: Some(0x40_1234),
        pid: Some(7),
        tid: Some(7),
        time: Some(3),
        ..Default::default()
    }))
    .ok()?;
    let features = Features {
        build_ids: build_id
            .map(|b| BuildIdEntry {
                misc: PERF_RECORD_MISC_USER,
                pid: -1,
                build_id: b.to_vec(),
                filename: String::from_utf8_lossy(name).into_owned(),
            })
            .into_iter()
            .collect(),
        ..Default::default()
    };
    let (out, _) = w.finish(&features).ok()?;
    PerfFile::from_bytes(out.into_inner()).ok()
}

/// Whether a tar entry's path, unpacked in a directory, stays in it.
fn stays_inside(path: &Path) -> bool {
    let mut depth = 0i32;
    for c in path.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(3, |&b| b == 0xff);
    let name = parts.next().unwrap_or_default();
    let build_id = parts.next().unwrap_or_default();
    let contents = parts.next().unwrap_or_default();
    let build_id = (flags & 1 != 0).then_some(&build_id[..build_id.len().min(64)]);
    let bytes: Vec<u8> = if flags & 4 != 0 {
        let mut elf = Build::FramePointer.bytes().to_vec();
        for patch in contents.chunks_exact(3) {
            let at = usize::from(u16::from_le_bytes([patch[0], patch[1]]));
            if let Some(b) = elf.get_mut(at) {
                *b = patch[2];
            }
        }
        elf
    } else {
        contents.to_vec()
    };

    // Build-id spellings: two hex digits, a slash, the rest.
    if let Some(bid) = build_id {
        let h = hex(bid);
        assert_eq!(h.len(), 2 * bid.len());
        let link = build_id_link(bid);
        assert_eq!(link.replacen('/', "", 1), h);
    }

    // The files: under the name itself, in the build-id cache, in the debug directory, or a FIFO there.
    let name_text =
        String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
    let symfs = flags & 64 != 0;
    let root = |p: &Path| -> PathBuf {
        if symfs {
            Path::new("/symfs").join(p.strip_prefix("/").unwrap_or(p))
        } else {
            p.to_path_buf()
        }
    };
    let mut lookup = MemLookup::new();
    let own = root(Path::new(&name_text));
    if flags & 2 != 0 {
        lookup.insert_unreadable(own.clone(), Unread::NotRegular("a FIFO"));
    } else if flags & 16 != 0 {
        lookup.insert(own.clone(), bytes.clone());
    }
    if let Some(bid) = build_id.filter(|b| !b.is_empty()) {
        let link = build_id_link(bid);
        if flags & 8 != 0 {
            lookup.insert(format!("{HOME}/.debug/.build-id/{link}/elf"), bytes.clone());
        }
        if flags & 32 != 0 {
            lookup.insert(
                root(Path::new(&format!("/usr/lib/debug/.build-id/{link}.debug"))),
                bytes.clone(),
            );
        }
    }

    let mut symbolizer = Symbolizer::new(lookup.clone(), symbolizer_options(symfs));
    let dso = symbolizer.dso(&name_text, build_id);
    let _ = dso.problem.as_ref().map(ToString::to_string);
    if let (Some(bid), Some(file)) = (build_id, &dso.symbols_file) {
        // Symbols come only from a file with the recorded build-id.
        let got = lookup
            .read_object(file)
            .ok()
            .and_then(|b| elf::build_id((*b).as_ref()));
        assert_eq!(got.as_deref(), Some(bid), "{}", file.display());
    }
    if flags & 2 != 0 && flags & (8 | 32) == 0 {
        assert!(
            matches!(dso.problem, Some(DsoProblem::NotADso { .. })),
            "{name_text:?}: {:?}",
            dso.problem
        );
    }
    for addr in [0u64, 0x1000, 0x40_1234, u64::MAX] {
        if let Some(hit) = dso.symbolize(addr) {
            assert!(hit.offset <= addr);
        }
        let _ = dso.bias(addr, addr);
        let _ = dso.inline_names(addr);
    }

    // `archive` over a recording of the name: refused for a `..`, else every entry stays inside.
    let Some(file) = recording(name, build_id) else {
        return;
    };
    let mut options = Options::default();
    options.symbolizer = symbolizer_options(symfs);
    let mut tar = Vec::new();
    match archive_with(&file, &options, lookup, &mut tar) {
        Ok(_) => {
            let mut archive = tar::Archive::new(&tar[..]);
            for entry in archive.entries().expect("bport's own tar reads") {
                let entry = entry.expect("bport's own tar entry reads");
                let path = entry.path().expect("entry path").into_owned();
                assert!(stays_inside(&path), "entry {}", path.display());
                if let Ok(Some(target)) = entry.link_name() {
                    let resolved = path.parent().unwrap_or(Path::new("")).join(&target);
                    assert!(
                        stays_inside(&resolved),
                        "link {} -> {}",
                        path.display(),
                        target.display()
                    );
                }
            }
        }
        Err(ArchiveError::BadName { name: bad, .. }) => {
            let rel = bad.trim_start_matches('/');
            assert!(
                rel.is_empty() || rel.split('/').any(|c| c == ".."),
                "{bad:?} refused"
            );
        }
        Err(_) => {}
    }
});
