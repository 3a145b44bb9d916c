//! Files mapped read-only, and the release of their pages behind a reader: every `unsafe` of `perf::data`, each
//! with its SAFETY argument, behind a safe API the reader, the page prefetcher and the symbolizer share.
//!
//! Owns: [`FileMap`] (a read-only map of a regular file, as bytes) and its page release, and [`SharedBytes`]
//! (a map or a buffer that gimli reads through without copying). Does not own: when pages
//! are released (that is `prefetch`, which knows which records the reader still borrows) nor what is read
//! from the bytes. Imports nothing from the rest of `perf::data`.
//!
//! Mapping instead of reading saves copying every byte once and touches only the pages a run looks at: perf.data
//! files of DWARF recordings are mostly stack snapshots of which the unwinder reads a few hundred bytes each, and
//! DSOs (debug files especially) are large while a run symbolizes few addresses.

/// A regular file mapped read-only; derefs to its bytes.
#[derive(Debug)]
pub struct FileMap(memmap2::Mmap);

impl FileMap {
    /// Maps `file` (a regular file) read-only. Files that cannot be mapped (some FUSE and procfs-like file
    /// systems) give the error, for the caller to read them instead.
    pub fn map(file: &std::fs::File) -> std::io::Result<FileMap> {
        // This `unsafe` lives here, not with the system calls, because records borrow from the map (no copy of
        // gigabyte files) and `data` names nothing of `perf` but `abi`.
        // SAFETY: the map is read-only and private to its owner; the only hazard is another process truncating or
        // rewriting the file in place while it is mapped (SIGBUS, changing bytes). perf.data files are written
        // once and then only read; DSOs and build-id cache entries are replaced by rename, not rewritten. Every
        // access through the map is bounds-checked against the length seen at open.
        unsafe { memmap2::Mmap::map(file) }.map(FileMap)
    }

    /// Unmaps the pages of `range` (MADV_DONTNEED) but keeps the range mapped: the next access maps them again
    /// from the page cache, with the same bytes. See `prefetch` for why.
    pub fn release_pages(&self, range: std::ops::Range<usize>) -> std::io::Result<()> {
        // Checked here, not left to madvise: a range past the map would drop pages of whatever is mapped after it.
        if range.start > range.end || range.end > self.0.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "pages {}..{} are not inside the {}-byte map",
                    range.start,
                    range.end,
                    self.0.len()
                ),
            ));
        }
        // SAFETY: for a read-only shared file mapping, MADV_DONTNEED only drops this process's page-table
        // entries; a later read faults the page back in from the page cache, so every byte reads as before and
        // borrows of the map stay valid (memmap2 marks DONTNEED unsafe for private writable maps, where it
        // discards written pages). The range is inside the map (checked above). The hazard is the map's own (see
        // `map`).
        unsafe {
            self.0.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                range.start,
                range.len(),
            )
        }
    }
}

impl std::ops::Deref for FileMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for FileMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Bytes shared by cheap clones that never move: a whole mapped file or an owned buffer (a decompressed section).
/// gimli's `EndianReader` reads through it without copying, where `EndianRcSlice` would need every section
/// copied into an `Rc<[u8]>` first (on a 100 MB debug binary that copy was a third of `bport probe`'s time).
#[derive(Clone, Debug)]
pub enum SharedBytes {
    /// A mapped file.
    Map(std::sync::Arc<FileMap>),
    /// Bytes in memory.
    Owned(std::sync::Arc<[u8]>),
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            SharedBytes::Map(m) => m,
            SharedBytes::Owned(b) => b,
        }
    }
}

// SAFETY: both variants deref to bytes owned behind an `Arc`, whose address does not change when the
// `SharedBytes` (or the `Arc`) is moved or cloned: a map stays at its address until the last clone drops it, and
// an `Arc<[u8]>`'s buffer is never reallocated. That is all `StableDeref` asks.
unsafe impl gimli::StableDeref for SharedBytes {}
// SAFETY: a clone shares the same `Arc`, so it derefs to the same address (the `CloneStableDeref` contract).
unsafe impl gimli::CloneStableDeref for SharedBytes {}

#[cfg(test)]
mod tests {
    use super::FileMap;

    #[test]
    fn released_pages_read_back_the_same_bytes() {
        let page = 4096;
        let bytes: Vec<u8> = (0..4 * page).map(|i| (i % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &bytes).unwrap();
        let map = FileMap::map(&std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(&map[..], &bytes[..]);
        map.release_pages(page..3 * page).unwrap();
        assert_eq!(&map[..], &bytes[..]);
        let err = map.release_pages(0..5 * page).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    }
}
