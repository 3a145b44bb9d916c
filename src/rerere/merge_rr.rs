//! `.git/MERGE_RR`, git's list of conflicts rerere is tracking in the current operation: records of
//! `<id>[.<variant>] TAB <path> NUL`. bport reads and writes git's format so that `git rerere status`,
//! `git commit` and `bport rerere …` all see the same session.

use super::conflict_id::ConflictId;
use super::Error;
use std::collections::BTreeMap;
use std::path::Path;

/// The tracked conflicts, by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeRr {
    /// Path → (conflict id, variant).
    pub entries: BTreeMap<String, (ConflictId, u32)>,
}

impl MergeRr {
    /// Reads `path`; a missing file is an empty list.
    pub fn read(path: &Path) -> Result<MergeRr, Error> {
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(MergeRr::default()),
            Err(source) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let corrupt = |what: &str| Error::CorruptMergeRr {
            path: path.to_path_buf(),
            reason: what.to_owned(),
        };
        let mut entries = BTreeMap::new();
        for record in data.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let record =
                std::str::from_utf8(record).map_err(|_| corrupt("a record is not UTF-8"))?;
            let (key, file) = record
                .split_once('\t')
                .ok_or_else(|| corrupt("a record has no tab"))?;
            let (hex, variant) = match key.split_once('.') {
                Some((hex, v)) => (
                    hex,
                    v.parse::<u32>()
                        .map_err(|_| corrupt("a variant is not a number"))?,
                ),
                None => (key, 0),
            };
            let id = hex
                .parse::<ConflictId>()
                .map_err(|e| corrupt(&e.to_string()))?;
            entries.insert(file.to_owned(), (id, variant));
        }
        Ok(MergeRr { entries })
    }

    /// Writes the list (atomically); an empty list removes the file.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        if self.entries.is_empty() {
            return match std::fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(Error::Io {
                    path: path.to_path_buf(),
                    source,
                }),
            };
        }
        let mut out = Vec::new();
        for (file, (id, variant)) in &self.entries {
            if *variant > 0 {
                out.extend_from_slice(format!("{id}.{variant}\t{file}").as_bytes());
            } else {
                out.extend_from_slice(format!("{id}\t{file}").as_bytes());
            }
            out.push(0);
        }
        super::cache::write_atomic(path, &out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_gits_format() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("MERGE_RR");
        let id: ConflictId = "b5af61297bb440010b5deb18d272d0976716bc1f".parse().unwrap();
        let mut rr = MergeRr::default();
        rr.entries.insert("README".into(), (id, 0));
        rr.entries.insert("dir/a b.c".into(), (id, 2));
        rr.write(&p).unwrap();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"b5af61297bb440010b5deb18d272d0976716bc1f\tREADME\0\
              b5af61297bb440010b5deb18d272d0976716bc1f.2\tdir/a b.c\0"
        );
        assert_eq!(MergeRr::read(&p).unwrap(), rr);
        MergeRr::default().write(&p).unwrap();
        assert!(!p.exists());
    }

    #[test]
    fn corrupt_records_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("MERGE_RR");
        std::fs::write(&p, b"../x\tREADME\0").unwrap();
        assert!(matches!(
            MergeRr::read(&p),
            Err(Error::CorruptMergeRr { .. })
        ));
    }
}
