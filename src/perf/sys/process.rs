//! The workload's process: forked paused until the events are open on its pid, released to `exec`, then
//! waited for or signalled. [`Command`] is the set-up every caller shares (resolving `argv[0]` as `execvp` does,
//! before the fork).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::check;

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

/// The calling thread's id.
#[cfg(test)]
pub fn gettid() -> u32 {
    // SAFETY: gettid has no memory effects and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// The CPU the calling thread runs on now.
#[cfg(test)]
pub fn current_cpu() -> io::Result<usize> {
    // SAFETY: sched_getcpu has no memory effects.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).map_err(|_| io::Error::last_os_error())
}

/// Keeps the calling thread on `cpu` alone.
#[cfg(test)]
pub fn pin_thread_to(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, CPU_SET writes inside it (it ignores a CPU beyond the
    // set's size) and sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(
            0,
            std::mem::size_of::<libc::cpu_set_t>(),
            &set,
        ))
    }
}

/// Sends `signal` to `pid`.
pub fn kill(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill has no memory effects.
    check(unsafe { libc::kill(pid, signal) })
}

/// A command ready to fork: `argv[0]` resolved as `execvp` would resolve it and every argument a C string, all
/// before the fork (the child may not allocate).
#[derive(Debug)]
pub struct Command {
    path: PathBuf,
    program: CString,
    argv: Vec<CString>,
}

/// Why a command line cannot become a [`Command`].
#[derive(Debug)]
pub enum CommandError {
    /// The command line is empty.
    Empty,
    /// `program` cannot be executed, with the errno exec would give: ENOENT when it is not on PATH, EINVAL for a
    /// NUL in an argument.
    Exec {
        /// `argv[0]`.
        program: OsString,
        /// Why.
        source: io::Error,
    },
}

impl Command {
    /// Resolves `argv[0]` on PATH and converts the arguments.
    pub fn new(argv: &[OsString]) -> Result<Command, CommandError> {
        let Some(program) = argv.first() else {
            return Err(CommandError::Empty);
        };
        let exec_err = |errno| CommandError::Exec {
            program: program.clone(),
            source: io::Error::from_raw_os_error(errno),
        };
        let path = resolve_program(program).ok_or_else(|| exec_err(libc::ENOENT))?;
        let cstr = |s: &OsStr| CString::new(s.as_bytes()).map_err(|_| exec_err(libc::EINVAL));
        Ok(Command {
            program: cstr(path.as_os_str())?,
            argv: argv
                .iter()
                .map(|a| cstr(a))
                .collect::<Result<Vec<_>, _>>()?,
            path,
        })
    }

    /// The file that will be executed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Forks the command paused ([`fork_paused`]).
    pub fn fork_paused(&self, stdout_to_stderr: bool) -> io::Result<PausedChild> {
        fork_paused(&self.program, &self.argv, stdout_to_stderr)
    }
}

/// `execvp`'s lookup: a name with a slash is used as is, otherwise the first executable file on PATH.
pub fn resolve_program(program: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.as_bytes().contains(&b'/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn exec_failure_is_reported_with_its_errno() {
        let program = CString::new("/nonexistent/bport-test").unwrap();
        let child = fork_paused(&program, std::slice::from_ref(&program), false).unwrap();
        let pid = child.pid;
        let err = child.start().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(wait(pid).unwrap(), ChildExit::Code(127));
    }

    #[test]
    fn a_command_is_resolved_on_path_and_refused_as_exec_would() {
        let command = Command::new(&["true".into(), "x".into()]).unwrap();
        assert!(command.path().is_absolute() && command.path().ends_with("true"));
        assert!(matches!(Command::new(&[]), Err(CommandError::Empty)));
        let missing = Command::new(&["bport-no-such-program".into()]).unwrap_err();
        assert!(
            matches!(&missing, CommandError::Exec { source, .. } if source.raw_os_error() == Some(libc::ENOENT)),
            "{missing:?}"
        );
        let nul = Command::new(&["/bin/true".into(), "a\0b".into()]).unwrap_err();
        assert!(
            matches!(&nul, CommandError::Exec { source, .. } if source.raw_os_error() == Some(libc::EINVAL)),
            "{nul:?}"
        );
    }
}
