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
