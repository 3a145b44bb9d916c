//! Faulting in the pages of a large mapped perf.data file on another thread, ahead of the reader.
//!
//! A DWARF recording is mostly 8 KB stack copies, so `bport script` touches every page of a file of hundreds of
//! megabytes while doing little work per page; mapping those pages (the kernel's page-fault path: ~0.12 s per GB
//! on this project's VM) was a third of a run. Here a second thread takes those faults while the reader parses,
//! staying at most [`LEAD`] bytes ahead of it so a file larger than memory is not read far ahead of use. Nothing
//! is copied and the reader needs no change: the pages are simply mapped by the time it reaches them.

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

struct Shared {
    reader: AtomicUsize,
    stop: AtomicBool,
}

/// A running prefetcher; stops when dropped (with the file that owns it).
pub(super) struct Prefetch {
    shared: Arc<Shared>,
}

impl Prefetch {
    /// Starts prefetching `range` of `map`; `None` (nothing to do) for small ranges, on one CPU, or when no
    /// thread can be started.
    pub(super) fn start(map: Arc<memmap2::Mmap>, range: Range<usize>) -> Option<Prefetch> {
        let parallel = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        if !parallel || range.len() < MIN_LEN || range.end > map.len() {
            return None;
        }
        let shared = Arc::new(Shared {
            reader: AtomicUsize::new(range.start),
            stop: AtomicBool::new(false),
        });
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("perf.data prefetch".into())
            .spawn(move || run(&map, range, &theirs))
            .ok()?;
        Some(Prefetch { shared })
    }

    /// The reader has reached `pos`.
    pub(super) fn advance(&self, pos: usize) {
        self.shared.reader.store(pos, Ordering::Relaxed);
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn run(map: &[u8], range: Range<usize>, shared: &Shared) {
    let mut pos = range.start;
    while pos < range.end {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let limit = shared
            .reader
            .load(Ordering::Relaxed)
            .saturating_add(LEAD)
            .min(range.end);
        if pos >= limit {
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
