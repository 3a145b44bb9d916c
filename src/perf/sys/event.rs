//! Perf events: `perf_event_open` on an attr's bytes, the ioctls on the event it returns, and `poll` on events.
//!
//! Follows perf_event_open(2).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use perf_event_open_sys::bindings;

use super::check;

/// A `perf_event_attr` as bytes, aligned as the kernel's struct, large enough for every layout bport knows
/// (VER8 = 136 bytes) and for kernels whose struct grew beyond that (the kernel reads only `size` bytes).
#[derive(Clone)]
#[repr(C, align(8))]
pub struct AttrBuf(pub [u8; AttrBuf::CAPACITY]);

impl AttrBuf {
    /// Bytes available; `size` must not exceed this.
    pub const CAPACITY: usize = 256;

    /// The `size` field (offset 4), which the kernel overwrites with its own size on E2BIG.
    pub fn size(&self) -> u32 {
        u32::from_ne_bytes(self.0[4..8].try_into().expect("4 bytes"))
    }
}

/// An open perf event; the descriptor closes on drop.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

/// Opens an event. `pid`/`cpu` follow perf_event_open(2): (pid, -1) one task on any CPU, (-1, cpu) every task on
/// one CPU, (pid, cpu) one task (and, with `inherit`, its children) on one CPU. The descriptor is close-on-exec,
/// so the workload never inherits it.
pub fn perf_event_open(attr: &mut AttrBuf, pid: i32, cpu: i32) -> io::Result<EventFd> {
    let size = attr.size() as usize;
    if size > AttrBuf::CAPACITY {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    }
    // SAFETY: `attr` points to AttrBuf::CAPACITY writable, 8-aligned bytes and its `size` field (checked above)
    // does not exceed that, so the kernel reads only inside the buffer; on E2BIG it writes the 4-byte `size` field
    // at offset 4, also inside. The kernel does not keep the pointer after the call. group_fd -1 = no group.
    let fd = unsafe {
        perf_event_open_sys::perf_event_open(
            attr.0.as_mut_ptr().cast::<bindings::perf_event_attr>(),
            pid,
            cpu,
            -1,
            bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a fresh descriptor that nothing else owns.
    Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
}

impl EventFd {
    /// Starts counting/sampling (`PERF_EVENT_IOC_ENABLE`).
    pub fn enable(&self) -> io::Result<()> {
        // SAFETY: a valid perf descriptor we own; ENABLE takes no pointer argument.
        let rc = unsafe { perf_event_open_sys::ioctls::ENABLE(self.0.as_raw_fd(), 0) };
        check(rc)
    }

    /// Stops counting/sampling (`PERF_EVENT_IOC_DISABLE`).
    pub fn disable(&self) -> io::Result<()> {
        // SAFETY: a valid perf descriptor we own; DISABLE takes no pointer argument.
        let rc = unsafe { perf_event_open_sys::ioctls::DISABLE(self.0.as_raw_fd(), 0) };
        check(rc)
    }

    /// The event's id as the kernel puts it in `sample_id`/PERF_SAMPLE_ID (`PERF_EVENT_IOC_ID`, Linux 3.12).
    pub fn id(&self) -> io::Result<u64> {
        let mut id = 0u64;
        // SAFETY: ID writes one u64 through the pointer, which points to a live local.
        let rc = unsafe { perf_event_open_sys::ioctls::ID(self.0.as_raw_fd(), &mut id) };
        check(rc).map(|()| id)
    }

    /// Sends this event's records into `target`'s ring buffer (`PERF_EVENT_IOC_SET_OUTPUT`, 2.6.34), so many
    /// events on one CPU share one mapping, as perf does for every thread of an attached process.
    pub fn set_output(&self, target: &EventFd) -> io::Result<()> {
        // SAFETY: both are valid perf descriptors we own; SET_OUTPUT takes a descriptor number, no pointer.
        let rc = unsafe {
            perf_event_open_sys::ioctls::SET_OUTPUT(self.0.as_raw_fd(), target.0.as_raw_fd())
        };
        check(rc)
    }

    /// The raw descriptor, for `poll`.
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Waits until one of `fds` is readable or has hung up, at most `timeout_ms`. EINTR counts as a wake-up (it is
/// how SIGINT and SIGCHLD reach the loop).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: the pointer and length describe a live, exclusively borrowed slice of pollfd.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(err);
    }
    Ok(rc as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_writes_its_attr_size_back_on_e2big() {
        // A byte set beyond any kernel's struct: the kernel must refuse with E2BIG and say what it supports.
        let mut buf = AttrBuf([0; AttrBuf::CAPACITY]);
        buf.0[0..4].copy_from_slice(&1u32.to_ne_bytes()); // PERF_TYPE_SOFTWARE, cpu-clock
        buf.0[4..8].copy_from_slice(&(AttrBuf::CAPACITY as u32).to_ne_bytes());
        buf.0[AttrBuf::CAPACITY - 1] = 1;
        let err = perf_event_open(&mut buf, 0, -1).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::E2BIG));
        let size = buf.size();
        assert!(
            (crate::perf::abi::PERF_ATTR_SIZE_VER0..AttrBuf::CAPACITY as u32).contains(&size)
                && size & 7 == 0,
            "kernel wrote back {size}"
        );
        // At that size, with the extra byte gone, the same attr opens.
        buf.0[AttrBuf::CAPACITY - 1] = 0;
        buf.0[4..8].copy_from_slice(&size.to_ne_bytes());
        perf_event_open(&mut buf, 0, -1).unwrap();
    }
}
