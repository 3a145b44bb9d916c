//! Exit-code choices that must not drift: whose fault a failure is.

use super::*;
use crate::perf::data::ReadError;
use crate::perf::script::session::ScriptError;
use crate::rerere;
use std::io;
use std::path::PathBuf;

fn read_io(kind: io::ErrorKind) -> ReadError {
    ReadError::Io {
        path: PathBuf::from("perf.data"),
        source: io::Error::from(kind),
    }
}

#[test]
fn a_failed_write_of_the_output_is_the_environments_not_the_users() {
    for raw in [
        libc::ENOSPC,
        libc::EACCES,
        libc::EPERM,
        libc::EROFS,
        libc::EDQUOT,
        libc::EIO,
    ] {
        let io = io::Error::from_raw_os_error(raw);
        let err = CliError::from(ScriptError::Io(io));
        assert_eq!(err.kind.exit_code(), 4, "errno {raw}: {}", err.error);
    }
    let err = CliError::from(io::Error::from(io::ErrorKind::StorageFull));
    assert_eq!(err.kind, Kind::Environment);
}

#[test]
fn an_unexpected_io_failure_is_internal() {
    let err = CliError::from(ScriptError::Io(io::Error::other("inferno failed")));
    assert_eq!(err.kind.exit_code(), 70);
}

#[test]
fn a_perf_data_file_the_disk_or_a_permission_keeps_from_being_read_is_exit_4() {
    for kind in [io::ErrorKind::PermissionDenied, io::ErrorKind::StorageFull] {
        assert_eq!(
            CliError::from(read_io(kind)).kind.exit_code(),
            4,
            "{kind:?}"
        );
        let through_script = CliError::from(ScriptError::Read(read_io(kind)));
        assert_eq!(
            through_script.kind.exit_code(),
            4,
            "{kind:?} through ScriptError"
        );
    }
    let eio = ReadError::Io {
        path: PathBuf::from("perf.data"),
        source: io::Error::from_raw_os_error(libc::EIO),
    };
    assert_eq!(CliError::from(eio).kind, Kind::Environment);
}

#[test]
fn a_missing_or_damaged_perf_data_file_is_the_users() {
    let missing = CliError::from(read_io(io::ErrorKind::NotFound));
    assert_eq!(missing.kind.exit_code(), 2);
    let damaged = [
        ReadError::Empty,
        ReadError::BadMagic {
            magic: *b"GIF89a\0\0",
        },
        ReadError::Truncated {
            what: "attr",
            offset: 104,
            needed: 136,
            available: 40,
        },
        ReadError::RecordsLost {
            offset: 4096,
            lost: 100,
            data_len: 8192,
            cause: Box::new(ReadError::Invalid {
                what: "record size",
                offset: 4096,
                reason: "below the 8-byte header".into(),
            }),
        },
    ];
    for e in damaged {
        let shown = e.to_string();
        let err = CliError::from(ScriptError::Read(e));
        assert_eq!(err.kind.exit_code(), 2, "{shown}");
        assert_eq!(err.error.to_string(), shown, "the message is the library's");
    }
}

#[test]
fn a_path_the_user_named_is_theirs_when_wrong_and_the_environments_when_the_disk_fails() {
    let missing = io::Error::from(io::ErrorKind::NotFound);
    assert_eq!(CliError::file(&missing, "cannot create x").kind, Kind::User);
    let full = io::Error::from_raw_os_error(libc::ENOSPC);
    let err = CliError::file_context(full, "writing list.txt");
    assert_eq!(err.kind, Kind::Environment);
    let mut text = Vec::new();
    err.render(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.starts_with("error: writing list.txt\n  caused by: No space left on device"),
        "{text}"
    );
}

#[test]
fn a_repository_file_bport_cannot_write_is_not_an_internal_error() {
    let err = CliError::from(rerere::Error::Io {
        path: PathBuf::from(".git/MERGE_RR"),
        source: io::Error::from_raw_os_error(libc::ENOSPC),
    });
    assert_eq!(err.kind.exit_code(), 4);
}

#[test]
fn closed_stdout_panics_are_told_from_others() {
    // The messages std's print macros and clap_complete panic with.
    assert!(is_closed_stdout_panic(
        "failed printing to stdout: Broken pipe (os error 32)"
    ));
    assert!(is_closed_stdout_panic(
        "failed to write completion file: Os { code: 32, kind: BrokenPipe, message: \"Broken pipe\" }"
    ));
    assert!(!is_closed_stdout_panic(
        "failed printing to stderr: Broken pipe (os error 32)"
    ));
    assert!(!is_closed_stdout_panic(
        "index out of bounds: the len is 3 but the index is 7"
    ));
}
