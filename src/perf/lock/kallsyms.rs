//! The running kernel's `/proc/kallsyms` as `bport lock` reads it: at most once per command, and only when
//! needed. A `-L SYM` filter needs a scan of the text before counting starts; the report parses the whole table
//! after the session (a debug build takes seconds over a kernel's table, and counting should start at once).

use super::report::{self, Symbolizer};
use super::Error;

/// `/proc/kallsyms`, read on first use and kept for the report.
#[derive(Debug, Default)]
pub struct RunningKallsyms {
    text: Option<String>,
}

impl RunningKallsyms {
    /// A kallsyms table from a file (perf's `--kallsyms`: a copy of the recording machine's /proc/kallsyms),
    /// for the report and `-L SYM` alike.
    pub fn from_file(path: &std::path::Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Kallsyms {
            path: path.to_path_buf(),
            source,
        })?;
        if !text.lines().any(|l| {
            let mut f = l.split_whitespace();
            f.next().is_some_and(|a| u64::from_str_radix(a, 16).is_ok())
                && f.next().is_some()
                && f.next().is_some()
        }) {
            return Err(Error::Kallsyms {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "no `ADDRESS TYPE NAME` line, as /proc/kallsyms has",
                ),
            });
        }
        Ok(RunningKallsyms { text: Some(text) })
    }

    /// The address a `-L` item names: a non-zero hex address (`0x` optional) or a kernel symbol.
    pub fn lock_address(&mut self, item: &str) -> Result<u64, Error> {
        let hex = item.strip_prefix("0x").unwrap_or(item);
        u64::from_str_radix(hex, 16)
            .ok()
            .filter(|&a| a != 0)
            .or_else(|| {
                let text = self.text.get_or_insert_with(|| {
                    std::fs::read_to_string("/proc/kallsyms").unwrap_or_default()
                });
                report::address_of(text, item)
            })
            .ok_or_else(|| Error::BadLock { text: item.into() })
    }

    /// The addresses of a `-L` list (comma-separated, see [`Self::lock_address`]); empty for none.
    pub fn lock_addresses(&mut self, text: Option<&str>) -> Result<Vec<u64>, Error> {
        text.into_iter()
            .flat_map(|t| t.split(','))
            .map(|item| self.lock_address(item.trim()))
            .collect()
    }

    /// The report's symbolizer: over the text read already, or over the running kernel's read now (empty when
    /// unreadable: callers are then hex addresses).
    pub fn into_symbolizer(self) -> Symbolizer {
        match self.text {
            Some(text) => Symbolizer::from_text(text),
            None => Symbolizer::running(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kallsyms_file_must_look_like_kallsyms() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good");
        std::fs::write(&good, "ffffffff82a01234 D jiffies_lock\n").unwrap();
        let mut k = RunningKallsyms::from_file(&good).unwrap();
        assert_eq!(k.lock_address("jiffies_lock").unwrap(), 0xffffffff82a01234);
        let bad = dir.path().join("bad");
        std::fs::write(&bad, "hello\n").unwrap();
        assert!(matches!(
            RunningKallsyms::from_file(&bad),
            Err(Error::Kallsyms { .. })
        ));
        assert!(matches!(
            RunningKallsyms::from_file(&dir.path().join("missing")),
            Err(Error::Kallsyms { .. })
        ));
    }

    #[test]
    fn a_lock_filter_is_an_address_or_a_kernel_symbol() {
        let mut kallsyms = RunningKallsyms {
            text: Some("ffffffff81000000 T _stext\nffffffff82a01234 D jiffies_lock\n".into()),
        };
        assert_eq!(kallsyms.lock_address("0xffff8881").unwrap(), 0xffff8881);
        assert_eq!(kallsyms.lock_address("ffff8881").unwrap(), 0xffff8881);
        assert_eq!(
            kallsyms.lock_address("jiffies_lock").unwrap(),
            0xffffffff82a01234
        );
        for bad in ["0", "0x0", "no_such_lock"] {
            assert!(
                matches!(kallsyms.lock_address(bad), Err(Error::BadLock { text }) if text == bad),
                "{bad}"
            );
        }
    }
}
