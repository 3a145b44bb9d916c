//! The conflict prompt of `bport apply` on a real pseudo-terminal: each choice does exactly what the
//! matching flag does, `show diff` re-prompts, the editor's resolution is what gets committed, and `--yes`
//! never prompts. The pty is opened with libc::openpty; every wait is for text, bounded, and names what it
//! waited for.

use super::*;
use crate::support::oracle::git_ok;
use crate::support::repo;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Generous: the waits end as soon as the text shows, this only bounds a hang.
const WAIT: Duration = Duration::from_secs(60);
const UP: &str = "\x1b[A";
/// The prompt's items in order; the default (where the cursor starts) is the last one.
const ITEMS: [&str; 6] = [
    "show diff",
    "open the editor on the conflicted files",
    "stage the conflicted files and continue",
    "skip this patch",
    "abort the run",
    "leave it (resolve later)",
];

/// Output collected from the pty master, and whether the slave side has closed (the child and its children
/// have exited).
#[derive(Default)]
struct Screen {
    bytes: Vec<u8>,
    closed: bool,
}

/// `bport` running on a pseudo-terminal as its controlling terminal (stdin, stdout and stderr).
struct Term {
    child: std::process::Child,
    master: std::fs::File,
    screen: Arc<(Mutex<Screen>, Condvar)>,
    /// Offset in the plain text up to which earlier waits consumed.
    seen: usize,
}

/// The terminal output without escape sequences and carriage returns: what a reader sees, in order.
fn plain(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    // Parameters and intermediates up to the final byte (@ to ~).
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

impl Term {
    fn spawn(t: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> Term {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: out-pointers to live locals; null name and termios mean defaults.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: openpty returned two fresh descriptors that nothing else owns.
        let (master, slave) = unsafe {
            (
                std::fs::File::from_raw_fd(master),
                std::fs::File::from_raw_fd(slave),
            )
        };
        let mut cmd = bport::bport(t.path());
        cmd.args(args)
            .envs(env.iter().copied())
            .env("TERM", "xterm")
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave);
        // SAFETY: only async-signal-safe calls between fork and exec. A new session with the pty as controlling
        // terminal, so /dev/tty is this pty too.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("spawn bport on a pty");
        // The parent's copies of the slave must be gone, or reading the master never sees the end.
        drop(cmd);
        let screen = Arc::new((Mutex::new(Screen::default()), Condvar::new()));
        let mut reader = master.try_clone().unwrap();
        let shared = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // EIO once every slave descriptor is closed: the end of the output.
                let n = reader.read(&mut buf).unwrap_or(0);
                let (lock, cvar) = &*shared;
                // A failed wait panics holding the lock; the output is still worth collecting.
                let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    s.closed = true;
                    cvar.notify_all();
                    return;
                }
                s.bytes.extend_from_slice(&buf[..n]);
                cvar.notify_all();
            }
        });
        Term {
            child,
            master,
            screen,
            seen: 0,
        }
    }

    /// Waits until `needle` appears after what earlier waits consumed; consumes up to its end.
    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + WAIT;
        let (lock, cvar) = &*self.screen;
        let mut s = lock.lock().unwrap();
        loop {
            let text = plain(&s.bytes);
            if let Some(at) = text.get(self.seen..).and_then(|rest| rest.find(needle)) {
                self.seen += at + needle.len();
                return;
            }
            let now = Instant::now();
            if s.closed || now >= deadline {
                panic!(
                    "waited for {needle:?} ({}); the terminal shows:\n{text}",
                    if s.closed {
                        "bport exited"
                    } else {
                        "timed out"
                    }
                );
            }
            s = cvar.wait_timeout(s, deadline - now).unwrap().0;
        }
    }

    fn send(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    /// At a fresh prompt: moves the cursor from the default to `ITEMS[item]`, waits until it is highlighted, and
    /// picks it.
    fn choose(&mut self, item: usize) {
        self.wait_for("What now?");
        self.send(&UP.repeat(ITEMS.len() - 1 - item));
        if item != ITEMS.len() - 1 {
            self.wait_for(&format!("> {}", ITEMS[item]));
        }
        self.send("\r");
    }

    /// Waits for the end of the output and the exit status; returns the code and the whole plain transcript.
    fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + WAIT;
        let (lock, cvar) = &*self.screen;
        let mut s = lock.lock().unwrap();
        while !s.closed {
            let now = Instant::now();
            assert!(
                now < deadline,
                "bport did not exit; the terminal shows:\n{}",
                plain(&s.bytes)
            );
            s = cvar.wait_timeout(s, deadline - now).unwrap().0;
        }
        let text = plain(&s.bytes);
        drop(s);
        let status = self.child.wait().unwrap();
        (status.code(), text)
    }
}

/// Log (hash and subject; dates are fixed, so equal histories have equal hashes), status and worktree file.
fn state(t: &TestRepo) -> String {
    format!(
        "{}--\n{}--\n{}",
        git_ok(t.path(), &["log", "--format=%H %s", "master..HEAD"]),
        git_ok(t.path(), &["status", "--porcelain"]),
        t.read("README")
    )
}

#[test]
fn skip_at_the_prompt_drops_the_patch_and_picks_the_next_like_the_flag() {
    skip_unless!(has_git());
    let (t, _d, list) = conflict_in_the_middle();
    let oracle = t.copy();
    let stop = bport::run(oracle.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    let skipped = bport::run(oracle.path(), &["apply", "--skip"]);
    assert_eq!(skipped.code, Some(0), "{}", skipped.transcript());

    let mut term = Term::spawn(&t, &["apply", list.to_str().unwrap()], &[]);
    term.wait_for("Stopped at 2/4");
    term.choose(3);
    // The same report as `bport apply --skip`, line by line (the progress bar draws between them).
    for line in skipped.stderr.lines() {
        term.wait_for(line);
    }
    let (code, text) = term.finish();
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(state(&t), state(&oracle));
    assert_eq!(
        t.subjects_since("master"),
        [
            "foo",
            "foo: add a tool",
            "bar: add notes",
            "more bar description",
            "bar: more notes"
        ]
    );
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");
}

#[test]
fn abort_at_the_prompt_restores_the_exact_prior_state() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    let before = t.snapshot();
    let mut term = Term::spawn(&t, &["apply", list.to_str().unwrap()], &[]);
    term.wait_for("Stopped at 1/2");
    term.choose(4);
    term.wait_for(&format!(
        "Aborted; refs/heads/foo is back at {}.",
        short(&t, "foo")
    ));
    let (code, text) = term.finish();
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(t.snapshot(), before, "abort must restore the exact state");
    assert!(!t.path().join(".git/bport/state.json").exists());
    let status = bport::run(t.path(), &["status"]);
    assert_eq!(status.code, Some(0), "{}", status.transcript());
}

#[test]
fn show_diff_prints_the_conflict_and_prompts_again_then_leave_keeps_the_stop() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    let mut term = Term::spawn(&t, &["apply", list.to_str().unwrap()], &[]);
    term.wait_for("Stopped at 1/2");
    term.choose(0);
    // What `git diff HEAD` shows for the conflicted file: the markers with both sides.
    let diff = git_ok(t.path(), &["diff", "HEAD", "--", "README"]);
    assert!(diff.contains("+>>>>>>> "), "{diff}");
    term.wait_for(&format!("What now?: show diff\n{diff}What now?"));
    term.send("\r");
    let (code, text) = term.finish();
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "UU README\n");
}

#[test]
fn the_editors_resolution_is_what_continue_commits() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    let tools = tempfile::tempdir().unwrap();
    let editor = tools.path().join("resolve.sh");
    // Keeps both sides: drops the three marker lines of the one conflict.
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' \"$@\"\necho edited \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = t.read("README");
    let mut term = Term::spawn(
        &t,
        &["apply", list.to_str().unwrap()],
        &[("EDITOR", editor.to_str().unwrap())],
    );
    term.wait_for("Stopped at 1/2");
    // Continue before editing: refused, nothing staged, asked again.
    term.choose(2);
    term.wait_for("Conflict markers remain in README; edit them first.");
    term.choose(1);
    term.wait_for(&format!("edited {}", t.path().join("README").display()));
    term.choose(2);
    term.wait_for("Done: picked 2, skipped 0.");
    let (code, text) = term.finish();
    assert_eq!(code, Some(0), "{text}");
    let resolved = before.replace("WHAT IS LINUX?\nfoo\n", "WHAT IS LINUX?\nfoo\nbar\n");
    assert_eq!(git_ok(t.path(), &["show", "HEAD~1:README"]), resolved);
    assert_eq!(
        t.subjects_since("master"),
        ["foo", "bar description", "more bar description"]
    );
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");
}

#[test]
fn yes_on_a_terminal_stops_without_prompting() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    let term = Term::spawn(&t, &["apply", "--yes", list.to_str().unwrap()], &[]);
    let (code, text) = term.finish();
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("Stopped at 1/2"), "{text}");
    assert!(!text.contains("What now?"), "{text}");
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "UU README\n");
}

impl Drop for Term {
    /// A failed wait must not leave bport waiting on a terminal nobody types into.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_skip_that_runs_into_the_next_conflict_prompts_again() {
    skip_unless!(has_git());
    // A third bar commit that edits the line next to foo's again: it conflicts after the first is skipped.
    let more_bar = repo::README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nbar\n") + "more bar\n";
    let baz = more_bar.replace("WHAT IS LINUX?\nbar\n", "WHAT IS LINUX?\nbaz\n");
    let (t, _d, list) = scenario::foo_bar()
        .theirs("baz instead of bar", &[("README", Some(&baz))])
        .with_list();
    let oracle = t.copy();
    let stop = bport::run(oracle.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    let skipped = bport::run(oracle.path(), &["apply", "--skip"]);
    let mut term = Term::spawn(&t, &["apply", list.to_str().unwrap()], &[]);
    term.wait_for("Stopped at 1/3");
    term.choose(3);
    for line in skipped.stderr.lines() {
        term.wait_for(line);
    }
    term.choose(5);
    let (code, text) = term.finish();
    assert_eq!(skipped.code, Some(1), "{}", skipped.transcript());
    assert!(
        skipped.stderr.contains("Stopped at 3/3"),
        "{}",
        skipped.stderr
    );
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(state(&t), state(&oracle));
}
