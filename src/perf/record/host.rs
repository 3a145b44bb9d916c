//! What perf's header says about the recording machine (HOSTNAME, OSRELEASE, ARCH, NRCPUS, CPUDESC, CPUID,
//! TOTAL_MEM; tools/perf/util/header.c `write_*`), read from /proc and /sys without `uname(2)`.

use std::fs;

/// The recording machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostInfo {
    /// `uname -n`.
    pub hostname: Option<String>,
    /// `uname -r`.
    pub osrelease: Option<String>,
    /// `uname -m` as perf writes it (`x86_64`).
    pub arch: String,
    /// CPUs present (highest index + 1), as perf's `nr_cpus_avail`.
    pub cpus_available: u32,
    /// CPUs online.
    pub cpus_online: u32,
    /// The CPU's model name.
    pub cpudesc: Option<String>,
    /// perf's x86 cpuid string `vendor,family,model,stepping`.
    pub cpuid: Option<String>,
    /// MemTotal in kB.
    pub total_mem_kb: Option<u64>,
}

impl HostInfo {
    /// Reads this machine's description; missing pieces stay `None` (a container may hide some of /proc).
    pub fn current() -> HostInfo {
        let read = |p: &str| fs::read_to_string(p).ok().map(|s| s.trim().to_string());
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let count = |p: &str| {
            read(p)
                .and_then(|l| crate::perf::sys::parse_cpu_list(&l))
                .map(|cpus| cpus.into_iter().max().map_or(0, |m| m + 1))
        };
        let online = read("/sys/devices/system/cpu/online")
            .and_then(|l| crate::perf::sys::parse_cpu_list(&l))
            .map_or(1, |c| c.len() as u32);
        HostInfo {
            hostname: read("/proc/sys/kernel/hostname"),
            osrelease: read("/proc/sys/kernel/osrelease"),
            arch: std::env::consts::ARCH.to_string(),
            cpus_available: count("/sys/devices/system/cpu/present").unwrap_or(online),
            cpus_online: online,
            cpudesc: cpuinfo_field(&cpuinfo, "model name")
                .map(|m| m.split_whitespace().collect::<Vec<_>>().join(" ")),
            cpuid: x86_cpuid(&cpuinfo),
            total_mem_kb: fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            }),
        }
    }
}

fn cpuinfo_field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// perf's x86 `get_cpuid`: `GenuineIntel,6,85,7`.
fn x86_cpuid(cpuinfo: &str) -> Option<String> {
    let vendor = cpuinfo_field(cpuinfo, "vendor_id")?;
    let family = cpuinfo_field(cpuinfo, "cpu family")?;
    let model = cpuinfo_field(cpuinfo, "model")?;
    let stepping = cpuinfo_field(cpuinfo, "stepping")?;
    Some(format!("{vendor},{family},{model},{stepping}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuid_is_built_like_perfs() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Intel(R)  Xeon(R)\nstepping\t: 7\n";
        assert_eq!(x86_cpuid(text).as_deref(), Some("GenuineIntel,6,85,7"));
        assert_eq!(cpuinfo_field(text, "model name"), Some("Intel(R)  Xeon(R)"));
    }
}
