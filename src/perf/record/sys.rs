//! The system interface of recording: `perf_event_open`, the ring-buffer mapping, the ioctls, the workload's
//! fork/exec, `poll`, `waitpid` and the SIGINT flag; also the pipe-size call `bport script` makes on its output.
//!
//! One of the three homes of `unsafe` (ARCHITECTURE.md). Every block says why it is sound. Everything
//! above it (`ring`, `session`) is safe code over the types here: an [`EventFd`] owns its descriptor, a [`RingMap`]
//! owns its mapping and hands out only the bytes the kernel has published (between `data_tail` and `data_head`).
//!
//! Follows perf_event_open(2) ("MMAP layout": read `data_head`, then an rmb, consume, then an mb before writing
//! `data_tail`) and the kernel's tools/include/linux/ring_buffer.h (`ring_buffer_read_head` is a load-acquire,
//! `ring_buffer_write_tail` a store-release).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use perf_event_open_sys::bindings;

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

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

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

    /// Size of the data area in bytes (a power of two).
    pub fn data_size(&self) -> usize {
        self.data_size
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

/// A workload forked and waiting, before `exec`, for the events to be opened on its pid (perf's
/// `evlist__prepare_workload`): the events get `enable_on_exec`, so sampling starts exactly at the exec.
/// Dropped without [`PausedChild::start`] (opening the events failed), the child sees EOF instead of the go byte,
/// exits without running anything, and is reaped, so a library caller is left with no zombie.
#[derive(Debug)]
pub struct PausedChild {
    /// The child's pid.
    pub pid: i32,
    go: Option<OwnedFd>,
    exec_error: OwnedFd,
}

/// Forks a child that waits for [`PausedChild::start`] and then executes `program` with `argv`. With
/// `stdout_to_stderr` the child's stdout is its stderr: perf.data is being written to our stdout (`-o -`), and
/// the command's output must not land in the middle of it (perf's `evlist__prepare_workload`, `pipe_output`).
///
/// `program` must be a path (resolve `PATH` before calling): after fork the child only calls async-signal-safe
/// functions (read, dup2, execv, write, _exit), as required in a multi-threaded parent.
pub fn fork_paused(
    program: &CString,
    argv: &[CString],
    stdout_to_stderr: bool,
) -> io::Result<PausedChild> {
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let (go_read, go_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    // SAFETY: fork has no memory-safety preconditions; the child branch below touches only memory prepared before
    // the fork (argv_ptrs, program, the pipe descriptors) and calls only async-signal-safe functions.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: child process after fork: only async-signal-safe calls on pre-built data, ending in execv or
        // _exit, never returning into Rust code of the parent's state.
        unsafe {
            libc::close(go_write.as_raw_fd());
            libc::close(err_read.as_raw_fd());
            let mut byte = 0u8;
            // Wait for the parent: EOF (parent died) or one byte (go).
            let n = libc::read(go_read.as_raw_fd(), (&mut byte as *mut u8).cast(), 1);
            if n != 1 {
                libc::_exit(127);
            }
            if stdout_to_stderr && libc::dup2(2, 1) < 0 {
                libc::_exit(127);
            }
            libc::execv(program.as_ptr(), argv_ptrs.as_ptr());
            // exec failed: report errno through the close-on-exec pipe, which the parent reads.
            let errno = *libc::__errno_location();
            let bytes = errno.to_ne_bytes();
            libc::write(err_write.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127);
        }
    }
    drop(go_read);
    drop(err_write);
    Ok(PausedChild {
        pid,
        go: Some(go_write),
        exec_error: err_read,
    })
}

impl PausedChild {
    /// Lets the child exec and waits until it did: Ok when exec succeeded, the exec errno otherwise.
    pub fn start(mut self) -> io::Result<()> {
        let go = self
            .go
            .take()
            .expect("start consumes the child, so go is still there");
        write_all(&go, &[1])?;
        drop(go);
        let mut buf = [0u8; 4];
        let n = read_full(&self.exec_error, &mut buf)?;
        if n == 4 {
            return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(buf)));
        }
        Ok(())
    }
}

impl Drop for PausedChild {
    fn drop(&mut self) {
        if let Some(go) = self.go.take() {
            drop(go);
            let mut status = 0;
            // SAFETY: waitpid writes the status into a live local; the child exits as soon as it reads EOF.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the 2-element array.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    check(rc)?;
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn write_all(fd: &OwnedFd, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: pointer/length of a live slice; fd is open.
    let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: pointer/length of the unfilled rest of a live, exclusively borrowed buffer.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[got..].as_mut_ptr().cast(),
                buf.len() - got,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    Ok(got)
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildExit {
    /// exit(code).
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// Reaps `pid` if it has ended (`waitpid(WNOHANG)`).
pub fn try_wait(pid: i32) -> io::Result<Option<ChildExit>> {
    let mut status = 0;
    // SAFETY: waitpid writes the status into a live local.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if rc == 0 {
        return Ok(None);
    }
    if libc::WIFEXITED(status) {
        Ok(Some(ChildExit::Code(libc::WEXITSTATUS(status))))
    } else if libc::WIFSIGNALED(status) {
        Ok(Some(ChildExit::Signal(libc::WTERMSIG(status))))
    } else {
        Ok(None)
    }
}

/// Waits for `pid` to end and reaps it.
pub fn wait(pid: i32) -> io::Result<ChildExit> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a live local.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        if libc::WIFEXITED(status) {
            return Ok(ChildExit::Code(libc::WEXITSTATUS(status)));
        }
        if libc::WIFSIGNALED(status) {
            return Ok(ChildExit::Signal(libc::WTERMSIG(status)));
        }
    }
}

/// Sends `signal` to `pid`.
pub fn kill(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill has no memory effects.
    check(unsafe { libc::kill(pid, signal) })
}

/// Asks for a pipe buffer of `bytes` (F_SETPIPE_SZ) and returns the size the kernel set. Fails with EBADF on a
/// descriptor that is not a pipe, and EPERM beyond `/proc/sys/fs/pipe-max-size` or the user's pipe page quota.
pub fn set_pipe_size(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<usize> {
    let bytes =
        libc::c_int::try_from(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: fcntl(F_SETPIPE_SZ) takes an int and only changes the kernel's buffer; the descriptor is borrowed,
    // so it stays open for the call.
    let size = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) };
    check(size)?;
    Ok(size as usize)
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The signals that end a run with its output, as perf handles them: `perf record` and `perf lock contention`
/// catch SIGINT and SIGTERM (and SIGCHLD, which the callers see through `waitpid`), so `timeout` and service
/// managers get the file or the report, while other signals keep their default action.
pub const STOP_SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// Installs, for each of [`STOP_SIGNALS`], a handler that only sets a flag (no SA_RESTART, so a blocked `poll`
/// returns) and returns the flag. Ctrl-C or SIGTERM then ends a recording cleanly: the loop sees the flag, drains
/// the buffers and writes the file.
pub fn stop_flag() -> io::Result<&'static AtomicBool> {
    for signal in STOP_SIGNALS {
        // SAFETY: zeroed sigaction is a valid "no flags, empty mask" value; the handler is an extern "C" fn that
        // only performs an atomic store (async-signal-safe); sigaction copies the struct.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            check(libc::sigaction(signal, &action, std::ptr::null_mut()))?;
        }
    }
    Ok(&INTERRUPTED)
}

/// The number of online CPUs' highest index + 1 (from /sys/devices/system/cpu/online, e.g. `0-1`).
pub fn online_cpus() -> io::Result<Vec<u32>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(text.trim())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("bad CPU list {text:?}")))
}

/// Parses the kernel's CPU list format (`0-3,5,7-8`).
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// Mounts tracefs at `target` (`mount -t tracefs nodev TARGET`), for `perf::trace` when no tracefs is mounted;
/// kept here so that `trace`'s system call sits with the others and their `unsafe`.
pub fn mount_tracefs(target: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let target = CString::new(target.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in the mount path"))?;
    let (source, fstype) = (c"nodev", c"tracefs");
    // SAFETY: all three pointers are NUL-terminated strings that live across the call; `data` may be null for
    // tracefs (no mount options).
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_grows_to_a_megabyte_and_a_file_is_refused() {
        use std::os::fd::AsFd;
        let (_reader, writer) = std::io::pipe().unwrap();
        assert!(set_pipe_size(writer.as_fd(), 1 << 20).unwrap() >= 1 << 20);
        let file = tempfile::tempfile().unwrap();
        assert!(set_pipe_size(file.as_fd(), 1 << 20).is_err());
    }

    #[test]
    fn cpu_lists_parse_like_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-1"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

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

    #[test]
    fn a_child_dropped_before_start_exits_without_running_and_is_reaped() {
        let program = CString::new("/bin/true").unwrap();
        let child = fork_paused(&program, std::slice::from_ref(&program), false).unwrap();
        let pid = child.pid;
        drop(child);
        // Reaped by the drop: waitpid now finds no such child.
        assert_eq!(
            try_wait(pid).unwrap_err().raw_os_error(),
            Some(libc::ECHILD)
        );
    }

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

    #[test]
    fn exec_failure_is_reported_with_its_errno() {
        let program = CString::new("/nonexistent/bport-test").unwrap();
        let child = fork_paused(&program, std::slice::from_ref(&program), false).unwrap();
        let pid = child.pid;
        let err = child.start().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(wait(pid).unwrap(), ChildExit::Code(127));
    }
}
