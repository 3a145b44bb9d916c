//! `verify`'s errors to exit codes: a bad version or target list is the user's, a missing qemu, kernel support
//! or permission the environment's.

use std::process::ExitCode;

use super::{CliError, Kind};
use crate::verify::{self, qemu};

/// The status of a finished `bport verify`: 0 when every required check passed, 3 when one failed.
pub fn verdict(report: &verify::Report) -> ExitCode {
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        Kind::CheckFailed.into()
    }
}

/// The guest's status when it could not run the checks (it printed why on the console, which the host shows
/// with the boot failure): the environment's, 4.
pub fn guest_failed() -> ExitCode {
    Kind::Environment.into()
}

impl From<verify::Error> for CliError {
    fn from(e: verify::Error) -> Self {
        match e {
        verify::Error::BadVersion { .. } | verify::Error::Targets(_) => CliError::new(Kind::User, e),
        verify::Error::Qemu(qemu::Error::NoQemu(_)) => CliError::new(Kind::Environment, e)
            .hint("install qemu: apt-get install qemu-system-x86"),
        verify::Error::Qemu(qemu::Error::NoImage(_)) => CliError::new(Kind::User, e).hint(
            "Debian kernels: apt-get download linux-image-6.1.0-NN-cloud-amd64-unsigned, then dpkg -x (see .ci/fetch-kernels)",
        ),
        verify::Error::Record(crate::perf::record::Error::PermissionDenied { .. }) => {
            CliError::new(Kind::Environment, e).hint(
                "allow profiling: sudo sysctl -w kernel.perf_event_paranoid=1, or run bport verify as root",
            )
        }
        verify::Error::NoRunningVersion => CliError::new(Kind::Environment, e)
            .hint("give the target kernel version: bport verify --kernel 4.1"),
        _ => CliError::new(Kind::Environment, e),
    }
    }
}
