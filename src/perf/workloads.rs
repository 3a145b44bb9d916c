//! The built-in profiling workloads, embedded in the binary so `verify` works on a fresh machine.
//!
//! Each runs `main → chain_a → chain_b → chain_c` with the time spent in the leaf `chain_c`; one build keeps frame
//! pointers, one omits them (so frame-pointer unwinding is expected to fail on it). Both are static executables.

use std::io;
use std::path::{Path, PathBuf};

/// The functions of the expected chain, outermost first.
pub const EXPECTED_CHAIN: [&str; 4] = ["main", "chain_a", "chain_b", "chain_c"];

/// The hot leaf function.
pub const LEAF: &str = "chain_c";

/// A workload build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// Compiled with `-fno-omit-frame-pointer`.
    FramePointer,
    /// Compiled with `-fomit-frame-pointer`: only DWARF (or LBR) unwinding can recover the chain.
    NoFramePointer,
}

impl Build {
    /// Both builds.
    pub const ALL: [Build; 2] = [Build::FramePointer, Build::NoFramePointer];

    /// File name of the executable.
    pub fn file_name(self) -> &'static str {
        match self {
            Build::FramePointer => "chain-fp",
            Build::NoFramePointer => "chain-nofp",
        }
    }

    /// The embedded executable.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Build::FramePointer => include_bytes!(concat!(env!("OUT_DIR"), "/chain-fp")),
            Build::NoFramePointer => include_bytes!(concat!(env!("OUT_DIR"), "/chain-nofp")),
        }
    }

    /// Writes the executable into `dir` (mode 0755) and returns its path.
    pub fn write_to(self, dir: &Path) -> io::Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(self.file_name());
        std::fs::write(&path, self.bytes())?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_run_and_carry_the_chain_symbols() {
        let dir = tempfile::tempdir().unwrap();
        for build in Build::ALL {
            let path = build.write_to(dir.path()).unwrap();
            let status = std::process::Command::new(&path)
                .arg("10")
                .status()
                .unwrap();
            assert!(status.success(), "{path:?}");
            use object::{Object, ObjectSymbol};
            let file = object::File::parse(build.bytes()).unwrap();
            let names: Vec<&str> = file.symbols().filter_map(|s| s.name().ok()).collect();
            for sym in EXPECTED_CHAIN {
                assert!(
                    names.contains(&sym),
                    "{sym} missing from the symbol table of {}",
                    build.file_name()
                );
            }
        }
    }
}
