//! The kernel perf ABI by version: the one table every version-dependent decision asks.
//!
//! Owns: the raw numbers ([`consts`], re-exported here), when each appeared ([`table`]), [`KernelVersion`] parsing,
//! and [`KernelAbi`] — the profile of one kernel (and of the perf of its era) that the reader, the writer, `record`
//! and `verify` consult. No other module compares versions.
//!
//! Follows include/uapi/linux/perf_event.h, perf_event_open(2) and tools/perf/util/header.h; `abi::table` names
//! the source of each fact.

pub(crate) mod consts;
pub mod table;

pub use consts::*;
pub use table::{AbiItem, Since};

use std::fmt;
use std::str::FromStr;

/// A kernel version as `uname -r` prints it: `4.1`, `4.1.15`, `5.14.0-331.el9`, `6.18.44-fc`.
///
/// Ordering and equality look at the numbers only (`4.1` == `4.1.0`; the vendor suffix does not change the ABI the
/// table knows about); [`fmt::Display`] gives the text back as it was written.
#[derive(Clone, Debug)]
pub struct KernelVersion {
    /// Major number (`4` in `4.1.15`).
    pub major: u32,
    /// Minor number (`1` in `4.1.15`).
    pub minor: u32,
    /// Patch level (`15` in `4.1.15`), if given.
    pub patch: Option<u32>,
    /// Everything after the numbers (`-331.el9`), kept for display.
    pub suffix: String,
}

impl KernelVersion {
    /// `major.minor.patch` without a suffix.
    pub fn new(major: u32, minor: u32, patch: u32) -> Self {
        KernelVersion {
            major,
            minor,
            patch: Some(patch),
            suffix: String::new(),
        }
    }

    /// The version of the running kernel (`uname -r`), if it can be read and parsed.
    pub fn running() -> Option<Self> {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn key(&self) -> (u32, u32, u32) {
        (self.major, self.minor, self.patch.unwrap_or(0))
    }

    /// Whether this kernel has what appeared in `since` (a patch level counts only in the 2.6.x series).
    pub fn has(&self, since: Since) -> bool {
        let patch = if (self.major, self.minor) == (2, 6) {
            self.patch.unwrap_or(0)
        } else {
            0
        };
        (self.major, self.minor, patch) >= (since.major, since.minor, since.patch)
    }
}

/// Why a kernel version string was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid kernel version {text:?}: {reason} (expected MAJOR.MINOR[.PATCH][suffix], e.g. 4.1.15 or 5.14.0-331.el9)")]
pub struct ParseKernelVersionError {
    /// The text given.
    pub text: String,
    /// What was wrong with it.
    pub reason: &'static str,
}

impl FromStr for KernelVersion {
    type Err = ParseKernelVersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseKernelVersionError {
            text: text.to_string(),
            reason,
        };
        let s = text.trim();
        // `v4.1` is how git tags spell it; accept it.
        let s = s.strip_prefix('v').unwrap_or(s);
        let (numbers, suffix) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
            Some(i) => s.split_at(i),
            None => (s, ""),
        };
        // A trailing dot belongs to the suffix ("4.1." is odd but harmless); numbers must not be empty.
        let mut parts = numbers.trim_end_matches('.').split('.');
        let num = |p: Option<&str>| -> Result<Option<u32>, ParseKernelVersionError> {
            match p {
                None => Ok(None),
                Some("") => Err(err("empty number")),
                Some(p) => p.parse().map(Some).map_err(|_| err("number too large")),
            }
        };
        let major = num(parts.next())?.ok_or_else(|| err("no major number"))?;
        let minor = num(parts.next())?.ok_or_else(|| err("no minor number"))?;
        let patch = num(parts.next())?;
        // A fourth number (`2.6.32.1`) is a stable release of 2.6.32; keep it in the suffix for display.
        let rest: Vec<&str> = parts.collect();
        let mut full_suffix = String::new();
        if !rest.is_empty() {
            full_suffix.push('.');
            full_suffix.push_str(&rest.join("."));
        }
        full_suffix.push_str(suffix);
        if major == 0 && minor == 0 {
            return Err(err("version 0.0"));
        }
        Ok(KernelVersion {
            major,
            minor,
            patch,
            suffix: full_suffix,
        })
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if let Some(p) = self.patch {
            write!(f, ".{p}")?;
        }
        f.write_str(&self.suffix)
    }
}

impl PartialEq for KernelVersion {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for KernelVersion {}
impl PartialOrd for KernelVersion {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for KernelVersion {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}
impl std::hash::Hash for KernelVersion {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

/// What one kernel's perf ABI offers, and what the perf of that era reads in perf.data.
///
/// Built from the [`table`] by [`KernelAbi::for_version`]; the masks are plain bit sets so callers can cap an attr
/// with `attr.sample_type & abi.sample_types`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelAbi {
    /// The version this profile is for (`None` for [`KernelAbi::newest`]).
    pub version: Option<KernelVersion>,
    /// The largest `perf_event_attr` size this kernel accepts (and its perf reads).
    pub attr_size: u32,
    /// Attr flag bits (the bitfield word) this kernel knows.
    pub attr_flags: u64,
    /// `PERF_SAMPLE_*` bits this kernel knows.
    pub sample_types: u64,
    /// `PERF_FORMAT_*` bits this kernel knows.
    pub read_formats: u64,
    /// `PERF_SAMPLE_BRANCH_*` bits this kernel knows (0 before branch sampling, 3.4).
    pub branch_sample_types: u64,
    /// Kernel record types (bit N set = type N) this kernel can produce.
    pub record_types: u64,
    /// User record types (bit N set = type 64+N) the perf of this era knows.
    pub user_record_types: u64,
    /// Header feature ids (bit N set = feature N) the perf of this era knows.
    pub features: u64,
}

fn mask(items: &[AbiItem], version: Option<&KernelVersion>) -> u64 {
    items
        .iter()
        .filter(|i| version.is_none_or(|v| v.has(i.since)))
        .fold(0, |m, i| m | i.value)
}

fn numbers(items: &[AbiItem], base: u64, version: Option<&KernelVersion>) -> u64 {
    items
        .iter()
        .filter(|i| version.is_none_or(|v| v.has(i.since)))
        .filter(|i| i.value >= base && i.value - base < 64)
        .fold(0, |m, i| m | 1 << (i.value - base))
}

impl KernelAbi {
    fn build(version: Option<&KernelVersion>) -> Self {
        let attr_size = table::ATTR_SIZES
            .iter()
            .filter(|i| version.is_none_or(|v| v.has(i.since)))
            .map(|i| i.value as u32)
            .max()
            .unwrap_or(PERF_ATTR_SIZE_VER0);
        KernelAbi {
            version: version.cloned(),
            attr_size,
            attr_flags: mask(table::ATTR_FLAGS, version),
            sample_types: mask(table::SAMPLE_TYPES, version),
            read_formats: mask(table::READ_FORMATS, version),
            branch_sample_types: mask(table::BRANCH_SAMPLE_TYPES, version),
            record_types: numbers(table::RECORD_TYPES, 0, version),
            user_record_types: numbers(
                table::USER_RECORD_TYPES,
                u64::from(PERF_RECORD_USER_TYPE_START),
                version,
            ),
            features: numbers(table::HEADER_FEATURES, 0, version),
        }
    }

    /// The ABI of kernel `version` and the perf of its era.
    pub fn for_version(version: &KernelVersion) -> Self {
        Self::build(Some(version))
    }

    /// Everything bport knows (no cap).
    pub fn newest() -> Self {
        Self::build(None)
    }

    /// Whether `PERF_SAMPLE_*` bit(s) `bits` are all offered.
    pub fn supports_sample(&self, bits: u64) -> bool {
        self.sample_types & bits == bits
    }

    /// Whether attr flag bit(s) `bits` are all offered.
    pub fn supports_flag(&self, bits: u64) -> bool {
        self.attr_flags & bits == bits
    }

    /// Whether `PERF_SAMPLE_BRANCH_*` bit(s) `bits` are all offered.
    pub fn supports_branch(&self, bits: u64) -> bool {
        self.branch_sample_types & bits == bits
    }

    /// Whether `PERF_FORMAT_*` bit(s) `bits` are all offered.
    pub fn supports_read_format(&self, bits: u64) -> bool {
        self.read_formats & bits == bits
    }

    /// Whether record type `ty` (kernel or user) is produced by this kernel / read by this era's perf.
    pub fn supports_record(&self, ty: u32) -> bool {
        if ty < PERF_RECORD_USER_TYPE_START {
            ty < 64 && self.record_types & (1 << ty) != 0
        } else {
            let n = ty - PERF_RECORD_USER_TYPE_START;
            n < 64 && self.user_record_types & (1 << n) != 0
        }
    }

    /// Whether header feature `id` is read by this era's perf.
    pub fn supports_feature(&self, id: u32) -> bool {
        id < 64 && self.features & (1 << id) != 0
    }

    /// Whether DWARF unwinding is possible: user registers and user stack in samples (3.7).
    pub fn supports_dwarf(&self) -> bool {
        self.supports_sample(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
    }

    /// Whether LBR call-stack sampling is offered (4.1).
    pub fn supports_lbr_callstack(&self) -> bool {
        self.supports_sample(PERF_SAMPLE_BRANCH_STACK)
            && self.supports_branch(PERF_SAMPLE_BRANCH_CALL_STACK)
    }

    /// `size` capped to the largest attr this ABI accepts: the `attr.size` a writer puts in a file for this target.
    pub fn cap_attr_size(&self, size: u32) -> u32 {
        size.min(self.attr_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(s: &str) -> KernelVersion {
        s.parse().unwrap()
    }

    #[test]
    fn parses_the_version_forms_users_type() {
        let cases = [
            ("4.1", (4, 1, None, "")),
            ("4.1.15", (4, 1, Some(15), "")),
            ("5.14.0-331.el9", (5, 14, Some(0), "-331.el9")),
            ("6.18.44-fc", (6, 18, Some(44), "-fc")),
            ("6.18.44-fc-v657", (6, 18, Some(44), "-fc-v657")),
            (
                "3.10.0-1160.el7.x86_64",
                (3, 10, Some(0), "-1160.el7.x86_64"),
            ),
            ("2.6.32.1", (2, 6, Some(32), ".1")),
            ("v4.19", (4, 19, None, "")),
            ("6.1.0-18-amd64", (6, 1, Some(0), "-18-amd64")),
            ("4.1-rc3", (4, 1, None, "-rc3")),
        ];
        for (text, (maj, min, patch, suffix)) in cases {
            let v = kv(text);
            assert_eq!(
                (v.major, v.minor, v.patch, v.suffix.as_str()),
                (maj, min, patch, suffix),
                "{text}"
            );
            assert_eq!(
                v.to_string(),
                text.trim_start_matches('v'),
                "display of {text}"
            );
        }
    }

    #[test]
    fn rejects_what_is_not_a_version() {
        for bad in [
            "",
            "4",
            "four.one",
            ".1",
            "4..1",
            "x4.1",
            "99999999999.1",
            "0.0",
        ] {
            let e = bad.parse::<KernelVersion>().unwrap_err();
            assert_eq!(e.text, bad);
        }
    }

    #[test]
    fn orders_by_numbers_only() {
        assert!(kv("4.1") < kv("4.1.15"));
        assert!(kv("4.1.15") < kv("4.2"));
        assert!(kv("4.9") < kv("4.10"));
        assert!(kv("5.14.0-331.el9") < kv("6.1"));
        assert_eq!(kv("4.1"), kv("4.1.0"));
        assert_eq!(kv("5.14.0-331.el9"), kv("5.14.0"));
    }

    #[test]
    fn attr_size_per_kernel() {
        let cases = [
            ("2.6.31", PERF_ATTR_SIZE_VER0),
            ("2.6.32", PERF_ATTR_SIZE_VER0),
            ("2.6.33", PERF_ATTR_SIZE_VER1),
            ("2.6.32-754.el6", PERF_ATTR_SIZE_VER0),
            ("3.2", PERF_ATTR_SIZE_VER1),
            ("3.4", PERF_ATTR_SIZE_VER2),
            ("3.10.0-1160.el7", PERF_ATTR_SIZE_VER3),
            ("3.19", PERF_ATTR_SIZE_VER4),
            ("4.1.15", PERF_ATTR_SIZE_VER5),
            ("4.19", PERF_ATTR_SIZE_VER5),
            ("5.4", PERF_ATTR_SIZE_VER5),
            ("5.10", PERF_ATTR_SIZE_VER6),
            ("5.14.0-331.el9", PERF_ATTR_SIZE_VER7),
            ("6.1", PERF_ATTR_SIZE_VER7),
            ("6.3", PERF_ATTR_SIZE_VER8),
            ("6.18.44-fc", PERF_ATTR_SIZE_VER8),
        ];
        for (text, size) in cases {
            assert_eq!(KernelAbi::for_version(&kv(text)).attr_size, size, "{text}");
        }
        assert_eq!(KernelAbi::newest().attr_size, PERF_ATTR_SIZE_NEWEST);
    }

    #[test]
    fn profile_of_4_1() {
        let abi = KernelAbi::for_version(&kv("4.1.15"));
        assert!(abi.supports_dwarf());
        assert!(abi.supports_lbr_callstack());
        assert!(abi.supports_sample(PERF_SAMPLE_IDENTIFIER));
        assert!(!abi.supports_sample(PERF_SAMPLE_PHYS_ADDR));
        assert!(abi.supports_flag(ATTR_FLAG_MMAP2 | ATTR_FLAG_USE_CLOCKID));
        assert!(!abi.supports_flag(ATTR_FLAG_CONTEXT_SWITCH));
        assert!(abi.supports_record(PERF_RECORD_MMAP2));
        assert!(abi.supports_record(PERF_RECORD_ITRACE_START));
        assert!(!abi.supports_record(PERF_RECORD_LOST_SAMPLES));
        assert!(abi.supports_record(PERF_RECORD_FINISHED_ROUND));
        assert!(abi.supports_record(PERF_RECORD_ID_INDEX));
        assert!(!abi.supports_record(PERF_RECORD_THREAD_MAP));
        assert!(!abi.supports_record(PERF_RECORD_TIME_CONV));
        assert!(!abi.supports_record(PERF_RECORD_FINISHED_INIT));
        assert!(abi.supports_feature(HEADER_EVENT_DESC));
        assert!(abi.supports_feature(HEADER_AUXTRACE));
        assert!(!abi.supports_feature(HEADER_STAT));
        assert!(!abi.supports_read_format(PERF_FORMAT_LOST));
        assert!(!abi.supports_branch(PERF_SAMPLE_BRANCH_CALL));
    }

    #[test]
    fn the_2_6_series_counts_patch_levels() {
        let abi = KernelAbi::for_version(&kv("2.6.32"));
        assert!(!abi.supports_flag(ATTR_FLAG_SAMPLE_ID_ALL));
        assert!(!abi.supports_feature(HEADER_BUILD_ID));
        assert!(abi.supports_record(PERF_RECORD_SAMPLE));
        assert!(KernelAbi::for_version(&kv("2.6.33")).supports_feature(HEADER_BUILD_ID));
        assert!(!abi.supports_record(PERF_RECORD_FINISHED_ROUND));
        let abi = KernelAbi::for_version(&kv("2.6.38"));
        assert!(
            abi.supports_flag(ATTR_FLAG_SAMPLE_ID_ALL | ATTR_FLAG_MMAP_DATA | ATTR_PRECISE_IP_MASK)
        );
        assert!(abi.supports_record(PERF_RECORD_FINISHED_ROUND));
        // Patch levels do not matter after 2.6: 4.1.15 has what 4.1 has.
        assert_eq!(
            KernelAbi::for_version(&kv("4.1.15")).attr_flags,
            KernelAbi::for_version(&kv("4.1")).attr_flags
        );
    }

    #[test]
    fn old_kernels_lack_dwarf_and_lbr() {
        let abi = KernelAbi::for_version(&kv("3.2"));
        assert!(!abi.supports_dwarf());
        assert!(!abi.supports_lbr_callstack());
        assert!(!abi.supports_record(PERF_RECORD_MMAP2));
        assert!(abi.supports_feature(HEADER_HOSTNAME));
        let abi = KernelAbi::for_version(&kv("3.7"));
        assert!(abi.supports_dwarf());
        assert!(!abi.supports_lbr_callstack());
    }

    #[test]
    fn newest_knows_every_table_entry() {
        let abi = KernelAbi::newest();
        for i in table::RECORD_TYPES.iter().chain(table::USER_RECORD_TYPES) {
            assert!(abi.supports_record(i.value as u32), "{}", i.name);
        }
        for i in table::HEADER_FEATURES {
            assert!(abi.supports_feature(i.value as u32), "{}", i.name);
        }
        assert!(abi.supports_sample(PERF_SAMPLE_WEIGHT_STRUCT));
        assert!(abi.supports_flag(ATTR_FLAG_SIGTRAP));
    }

    #[test]
    fn table_entries_are_in_version_order_and_unique() {
        for t in [
            table::ATTR_SIZES,
            table::ATTR_FLAGS,
            table::SAMPLE_TYPES,
            table::READ_FORMATS,
            table::BRANCH_SAMPLE_TYPES,
            table::RECORD_TYPES,
            table::USER_RECORD_TYPES,
            table::HEADER_FEATURES,
        ] {
            for w in t.windows(2) {
                assert!(
                    w[0].since <= w[1].since,
                    "{} after {}",
                    w[1].name,
                    w[0].name
                );
                assert!(w[0].value < w[1].value, "{} not ascending", w[1].name);
            }
        }
    }

    #[test]
    fn when_each_item_appeared() {
        let since = |t, v| table::find(t, v).unwrap().since.to_string();
        assert_eq!(since(table::ATTR_FLAGS, ATTR_FLAG_MMAP2), "3.16");
        assert_eq!(since(table::ATTR_FLAGS, ATTR_FLAG_SAMPLE_ID_ALL), "2.6.38");
        assert_eq!(since(table::SAMPLE_TYPES, PERF_SAMPLE_REGS_USER), "3.7");
        assert_eq!(
            since(table::HEADER_FEATURES, u64::from(HEADER_EVENT_DESC)),
            "3.2"
        );
        assert!(table::find(table::ATTR_FLAGS, 1 << 60).is_none());
    }

    #[test]
    fn names_for_dumps() {
        assert_eq!(table::record_type_name(PERF_RECORD_MMAP2), Some("MMAP2"));
        assert_eq!(
            table::record_type_name(PERF_RECORD_FINISHED_ROUND),
            Some("FINISHED_ROUND")
        );
        assert_eq!(table::record_type_name(63), None);
        assert_eq!(
            table::bit_names(
                table::SAMPLE_TYPES,
                PERF_SAMPLE_IP | PERF_SAMPLE_TID | 1 << 40
            ),
            "IP|TID|0x10000000000"
        );
    }
}
