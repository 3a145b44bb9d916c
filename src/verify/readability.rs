//! Readability of a recorded file for the target's era: only attr sizes, attr bits, record types and header
//! features that a perf of that kernel's era reads (the `perf::abi` table), so an old vendor perf does not reject
//! it ("file uses a more recent and unsupported ABI", "failed to process type: N"; perf's `read_attr` and `perf_session__process_event`).
//!
//! The Linux perf cross-check lives in [`super::perf_check`].

use crate::perf::abi::{table, KernelAbi};
use crate::perf::data::{PerfFile, ReadError};
use std::collections::BTreeSet;
use std::path::Path;

/// What in `file` a perf of `abi`'s era would not read, one line each, in a fixed order (attrs, records,
/// features). Empty when the file is fine.
pub fn era_problems(file: &PerfFile, abi: &KernelAbi) -> Result<Vec<String>, ReadError> {
    let era = abi
        .version
        .as_ref()
        .map_or_else(|| "the newest kernel".to_owned(), |v| format!("Linux {v}"));
    let mut problems = Vec::new();
    for (i, entry) in file.attrs().iter().enumerate() {
        let attr = &entry.attr;
        if attr.size > abi.attr_size {
            problems.push(format!(
                "attr {i}: size {} > {} (the largest perf_event_attr of {era})",
                attr.size, abi.attr_size
            ));
        }
        let sample = attr.sample_type & !abi.sample_types;
        if sample != 0 {
            problems.push(format!(
                "attr {i}: sample_type {} unknown to {era}",
                table::bit_names(table::SAMPLE_TYPES, sample)
            ));
        }
        let flags = attr.flags & !abi.attr_flags;
        if flags != 0 {
            problems.push(format!(
                "attr {i}: flags {} unknown to {era}",
                table::bit_names(table::ATTR_FLAGS, flags)
            ));
        }
    }
    let mut types = BTreeSet::new();
    for record in file.records_in_file_order() {
        types.insert(record?.meta().ty);
    }
    for ty in types {
        if !abi.supports_record(ty) {
            problems.push(format!(
                "record type {ty} ({}) unknown to perf of {era}",
                table::record_type_name(ty).unwrap_or("?")
            ));
        }
    }
    for &id in file.feature_ids() {
        if !abi.supports_feature(id) {
            problems.push(format!(
                "header feature {id} ({}) unknown to perf of {era}",
                table::feature_name(id).unwrap_or("?")
            ));
        }
    }
    Ok(problems)
}

/// [`era_problems`] of the file at `path`; a file that does not even parse is one problem.
pub fn era_problems_at(path: &Path, abi: &KernelAbi) -> Vec<String> {
    match PerfFile::open(path).and_then(|f| era_problems(&f, abi)) {
        Ok(p) => p,
        Err(e) => vec![format!("bport cannot read {}: {e}", path.display())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::abi::{self, KernelVersion};
    use crate::perf::data::writer::{PerfFileWriter, WriterOptions};
    use crate::perf::data::{Features, PerfEventAttr, SampleId};

    /// A file as a modern perf writes it: a 128-byte attr with IDENTIFIER, COMM, FINISHED_ROUND, OSRELEASE.
    fn modern_file() -> PerfFile {
        let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), WriterOptions::default())
            .unwrap();
        let attr = PerfEventAttr {
            size: abi::PERF_ATTR_SIZE_VER7,
            sample_type: abi::PERF_SAMPLE_IP | abi::PERF_SAMPLE_TID | abi::PERF_SAMPLE_IDENTIFIER,
            ..Default::default()
        };
        w.add_attr(&attr, &[7]).unwrap();
        w.write_comm(1, 1, b"chain-fp", true, SampleId::default())
            .unwrap();
        w.write_finished_round().unwrap();
        let features = Features {
            osrelease: Some("6.1.0".into()),
            ..Default::default()
        };
        let (out, _) = w.finish(&features).unwrap();
        PerfFile::from_bytes(out.into_inner()).unwrap()
    }

    #[test]
    fn a_modern_file_is_fine_for_6_1_and_names_what_3_10_lacks() {
        let file = modern_file();
        let v61: KernelVersion = "6.1".parse().unwrap();
        assert_eq!(
            era_problems(&file, &KernelAbi::for_version(&v61)).unwrap(),
            Vec::<String>::new()
        );
        let v310: KernelVersion = "3.10".parse().unwrap();
        assert_eq!(
            era_problems(&file, &KernelAbi::for_version(&v310)).unwrap(),
            vec![
                "attr 0: size 128 > 96 (the largest perf_event_attr of Linux 3.10)".to_owned(),
                "attr 0: sample_type IDENTIFIER unknown to Linux 3.10".to_owned(),
            ]
        );
    }
}
