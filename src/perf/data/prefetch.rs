//! Faulting in the pages of a large mapped perf.data file on another thread, ahead of the reader.
//!
//! A DWARF recording is mostly 8 KB stack copies, so `bport script` touches every page of a file of hundreds of
//! megabytes while doing little work per page; mapping those pages (the kernel's page-fault path: ~0.12 s per GB
//! on this project's VM) was a third of a run. Here a second thread takes those faults while the reader parses,
//! staying at most [`LEAD`] bytes ahead of it so a file larger than memory is not read far ahead of use. Nothing
//! is copied and the reader needs no change: the pages are simply mapped by the time it reaches them.
//!
//! The same thread unmaps the pages behind the reader that no record it handed out can still borrow from (see
//! `Records`: the records of the last two rounds), with MADV_DONTNEED. Otherwise the page tables of the whole
//! mapping are torn down when the file is closed, at the end of the run, on the main thread: `munmap` of a
//! 167 MB recording took 7-14 ms of a 30 ms `bport script` (pages cached as small folios, as after perf wrote
//! the file; files read from disk are mostly mapped by 2 MB entries and cost little). A page released too early
//! is only faulted in again, with the same bytes.

use super::map::FileMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Files smaller than this are read without a prefetcher: starting a thread costs more than their faults.
const MIN_LEN: usize = 32 << 20;
/// How far ahead of the reader the prefetcher may run.
const LEAD: usize = 256 << 20;
/// The stride of the touches: the kernel's default fault-around window (`fault_around_bytes`, 64 KB), the pages it
/// maps around a faulting one, so one touch maps all of them. Touching every 4 KB page instead made this thread
/// wait on a cache miss for each of the 15 pages already mapped, competing with the reader for the CPU; a page
/// left unmapped by a smaller window is faulted in by the reader itself.
const STRIDE: usize = 64 << 10;
/// The unit of release: large enough that each call's TLB flush (an interrupt of the reader's CPU) is rare, small
/// enough that little is left mapped at the end. A multiple of every page size.
const RELEASE_CHUNK: usize = 8 << 20;

struct Shared {
    reader: AtomicUsize,
    /// No record the reader handed out or still holds starts before this offset.
    held_from: AtomicUsize,
    /// Bytes released so far (for tests).
    released: AtomicUsize,
    stop: AtomicBool,
}

/// A running prefetcher; stops when dropped (with the file that owns it).
pub(super) struct Prefetch {
    shared: Arc<Shared>,
}

impl Prefetch {
    /// Starts prefetching `range` of `map`; `None` (nothing to do) for small ranges, on one CPU, or when no
    /// thread can be started.
    pub(super) fn start(map: Arc<FileMap>, range: Range<usize>) -> Option<Prefetch> {
        let parallel = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        if !parallel || range.len() < MIN_LEN || range.end > map.len() {
            return None;
        }
        let shared = Arc::new(Shared {
            reader: AtomicUsize::new(range.start),
            held_from: AtomicUsize::new(range.start),
            released: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("perf.data prefetch".into())
            .spawn(move || run(&map, range, &theirs))
            .ok()?;
        Some(Prefetch { shared })
    }

    /// The reader has reached `pos`, and holds no record that starts before `held_from`.
    pub(super) fn advance(&self, pos: usize, held_from: usize) {
        self.shared.reader.store(pos, Ordering::Relaxed);
        self.shared.held_from.store(held_from, Ordering::Relaxed);
    }

    /// How many bytes of the file have been released behind the reader so far.
    #[cfg(test)]
    pub(super) fn released(&self) -> usize {
        self.shared.released.load(Ordering::Relaxed)
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn run(map: &FileMap, range: Range<usize>, shared: &Shared) {
    let mut pos = range.start;
    let mut released = range.start.next_multiple_of(RELEASE_CHUNK);
    while !shared.stop.load(Ordering::Relaxed) {
        let held_from = shared.held_from.load(Ordering::Relaxed);
        let release_to = held_from / RELEASE_CHUNK * RELEASE_CHUNK;
        if release_to > released {
            match map.release_pages(released..release_to) {
                Ok(()) => {
                    shared
                        .released
                        .fetch_add(release_to - released, Ordering::Relaxed);
                    released = release_to;
                }
                Err(e) => {
                    // Nothing is lost: the pages stay mapped until the file is closed, as without this.
                    log::debug!("perf.data pages not released: {e}");
                    released = usize::MAX;
                }
            }
        }
        let reader = shared.reader.load(Ordering::Relaxed);
        let limit = reader.saturating_add(LEAD).min(range.end);
        if pos >= limit {
            // Done once everything is released, or once the reader is at the end (it reports nothing more, so
            // its last rounds, and the last partial chunk, stay mapped until the file is closed): a file kept
            // open after reading (`report`) does not keep this thread waking up.
            let all_released = released >= range.end / RELEASE_CHUNK * RELEASE_CHUNK;
            if pos >= range.end && (all_released || reader >= range.end) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        }
        // A batch between checks: the atomics stay off the hot path.
        let batch_end = limit.min(pos + 64 * 4096);
        while pos < batch_end {
            std::hint::black_box(map[pos]);
            pos += STRIDE;
        }
    }
}
