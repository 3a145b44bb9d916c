//! The ring buffer a perf event is mapped to: the mapping, its metadata page and the bytes the kernel has
//! published. A [`RingMap`] owns its mapping and hands out only the bytes between `data_tail` and `data_head`.
//!
//! Follows perf_event_open(2) ("MMAP layout": read `data_head`, then an rmb, consume, then an mb before writing
//! `data_tail`) and the kernel's tools/include/linux/ring_buffer.h (`ring_buffer_read_head` is a load-acquire,
//! `ring_buffer_write_tail` a store-release).

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys::bindings;

use super::EventFd;

/// The page size of this machine.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size <= 0 {
        4096
    } else {
        size as usize
    }
}

/// A perf ring buffer mapped from an event: one metadata page (`perf_event_mmap_page`) followed by `2^n` data
/// pages. Unmapped on drop.
#[derive(Debug)]
pub struct RingMap {
    base: NonNull<u8>,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

// The mapping is owned memory; only `&mut self` advances the tail, so moving it to another thread is fine.
// SAFETY: RingMap has no thread-affine state; the kernel side is indifferent to which thread reads.
unsafe impl Send for RingMap {}

impl RingMap {
    /// Maps `1 + data_pages` pages of `fd` read-write (writable so `data_tail` tells the kernel what we consumed;
    /// that is what makes the kernel stop instead of overwriting unread data).
    pub fn new(fd: &EventFd, data_pages: usize) -> io::Result<RingMap> {
        if !data_pages.is_power_of_two() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let page = page_size();
        let len = (1 + data_pages) * page;
        // SAFETY: a fresh shared mapping of a perf descriptor; the kernel validates length and offset 0. The result
        // is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.raw(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned NULL"))?;
        let mut map = RingMap {
            base,
            len,
            data_offset: page,
            data_size: data_pages * page,
        };
        // Kernels since 4.1 say where the data area is (`data_offset`/`data_size`); older ones leave them 0 and
        // the data starts at the second page.
        let (offset, size) = (map.meta_u64(DATA_OFFSET), map.meta_u64(DATA_SIZE));
        if offset != 0 && size != 0 && (offset as usize) + (size as usize) <= len {
            map.data_offset = offset as usize;
            map.data_size = size as usize;
        }
        Ok(map)
    }

    fn meta_u64(&self, offset: usize) -> u64 {
        // SAFETY: `offset` is one of the fixed 8-aligned field offsets inside the first (metadata) page, which is
        // mapped for the lifetime of self; a volatile read because the kernel may change it at any time.
        unsafe { std::ptr::read_volatile(self.base.as_ptr().add(offset).cast::<u64>()) }
    }

    /// `data_head` with acquire ordering: every record byte before it is visible once this returns.
    pub fn data_head(&self) -> u64 {
        // SAFETY: `data_head` is an 8-aligned u64 in the metadata page, mapped while self lives. The kernel writes
        // it concurrently, so it is accessed only atomically; the acquire load pairs with the kernel's
        // smp_store_release of the head (perf_event_open(2): "rmb after reading data_head").
        let head = unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(DATA_HEAD).cast::<u64>()) };
        head.load(Ordering::Acquire)
    }

    /// `data_tail` as we last wrote it.
    pub fn data_tail(&self) -> u64 {
        // SAFETY: as for data_head; only this process writes data_tail.
        let tail = unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(DATA_TAIL).cast::<u64>()) };
        tail.load(Ordering::Relaxed)
    }

    /// Publishes that everything before `tail` was consumed. Takes `&mut self` so no borrowed record of
    /// [`RingMap::published`] can outlive the moment the kernel may overwrite it.
    pub fn set_data_tail(&mut self, tail: u64) {
        // SAFETY: as for data_head. The release store orders all our reads of the consumed records before the
        // kernel can see the new tail and reuse the space (perf_event_open(2): "mb before writing data_tail").
        let t = unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(DATA_TAIL).cast::<u64>()) };
        t.store(tail, Ordering::Release);
    }

    /// The bytes the kernel has published between `tail` and `head` (positions as in `data_tail`/`data_head`,
    /// `head` loaded before this call), as one slice or, when they wrap around the end of the data area, two.
    ///
    /// Only this window is borrowed: the kernel keeps writing the rest of the area concurrently, but never this
    /// part until `data_tail` moves past it, which needs `&mut self` and so ends the borrow first.
    pub fn published(&self, tail: u64, head: u64) -> (&[u8], &[u8]) {
        let (first, second) = window(self.data_size, tail, head);
        // SAFETY: both ranges lie inside the data area (window clamps them to data_size), which lies inside the
        // mapping (checked in new) and lives as long as self; u8 has no invalid values. The kernel does not write
        // published, unconsumed bytes (perf_event_open(2): it stops at data_tail), so they do not change while
        // borrowed.
        unsafe {
            let data = self.base.as_ptr().add(self.data_offset);
            (
                std::slice::from_raw_parts(data.add(first.start), first.len()),
                std::slice::from_raw_parts(data.add(second.start), second.len()),
            )
        }
    }
}

/// The ranges of a ring's data area (of power-of-two `size`) that hold positions `tail..head`: the part up to
/// the end of the area, then the wrapped part from its start (empty when nothing wraps). A window larger than
/// the area (impossible unless the kernel overwrote unread data) is clamped to the area.
pub fn window(
    size: usize,
    tail: u64,
    head: u64,
) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let len = (head.wrapping_sub(tail) as usize).min(size);
    let start = (tail as usize) & (size - 1);
    if start + len <= size {
        (start..start + len, 0..0)
    } else {
        (start..size, 0..start + len - size)
    }
}

// Offsets of fields in `struct perf_event_mmap_page` (the 1 KiB header, then data_head at 1024).
const DATA_HEAD: usize = std::mem::offset_of!(bindings::perf_event_mmap_page, data_head);
const DATA_TAIL: usize = std::mem::offset_of!(bindings::perf_event_mmap_page, data_tail);
const DATA_OFFSET: usize = std::mem::offset_of!(bindings::perf_event_mmap_page, data_offset);
const DATA_SIZE: usize = std::mem::offset_of!(bindings::perf_event_mmap_page, data_size);

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned; no borrow of the data can outlive self.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_window_wraps_into_two_ranges() {
        assert_eq!(window(64, 48, 72), (48..64, 0..8));
        assert_eq!(window(64, 640 + 8, 640 + 40), (8..40, 0..0));
        assert_eq!(window(64, 5 * 64, 5 * 64), (0..0, 0..0));
        // A full ring starting mid-area, and an impossible larger window clamped to the area.
        assert_eq!(window(64, 16, 80), (16..64, 0..16));
        assert_eq!(window(64, 16, 1000), (16..64, 0..16));
    }

    #[test]
    fn mmap_page_offsets_match_the_uapi_layout() {
        assert_eq!(
            (DATA_HEAD, DATA_TAIL, DATA_OFFSET, DATA_SIZE),
            (1024, 1032, 1040, 1048)
        );
    }
}
