//! Calls on files and file systems: a pipe's buffer size, mounting tracefs, the CPU list in sysfs.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::check;

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
}
