//! Durable replacement of a file under `.git` (bport's state, rr-cache entries, `MERGE_RR`): a crash at any point
//! leaves either the old file or the new one, never a torn mix, and the rename itself survives a power loss.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `content` to `path` through a temp file in the same directory: write, fsync, rename, fsync the directory
/// (without the last step the rename may not be on disk after a crash, and the old file reappears).
///
/// The temp name carries the process id, so two bport processes never write into each other's temp file; a temp
/// left by a crash is a dotfile that readers of these directories ignore.
pub fn write_atomic(path: &Path, content: &[u8]) -> io::Result<()> {
    write_replacing(path, content, true)
}

/// Replaces a cache file (one whose loss costs only the work of making it again) as [`write_atomic`] does, but
/// without the fsyncs: a reader sees the old file or the new one whole while the system runs, and after a power
/// loss the file may be empty or cut short, so its reader must refuse anything that does not parse whole. Each
/// fsync of a stop's state cost ~3 ms of wall time on a busy disk.
pub fn write_cache(path: &Path, content: &[u8]) -> io::Result<()> {
    write_replacing(path, content, false)
}

fn write_replacing(path: &Path, content: &[u8], durable: bool) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let written = (|| {
        // Never through whatever sits at the temp name (a leftover, or a link planted in a shared directory):
        // an exclusive create does not follow links, and a leftover is removed (the link itself, not its target).
        let create = || File::options().write(true).create_new(true).open(&tmp);
        let mut f = match create() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                fs::remove_file(&tmp)?;
                create()?
            }
            other => other?,
        };
        f.write_all(content)?;
        if durable {
            f.sync_all()?;
        }
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    if !durable {
        return Ok(());
    }
    // Best effort: some filesystems refuse to open or fsync a directory, and the data is already renamed into place.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }

    #[test]
    fn a_cache_is_replaced_whole_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("upstream-paths");
        write_cache(&path, b"one").unwrap();
        write_cache(&path, b"two, longer").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two, longer");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("upstream-paths")]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("target");
        // A directory where the file should go: the rename fails after the temp was written.
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inside"), b"old").unwrap();
        assert!(write_atomic(&path, b"new").is_err());
        assert_eq!(fs::read(path.join("inside")).unwrap(), b"old");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("target")]);
    }
}
