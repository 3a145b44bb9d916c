//! Builds the built-in profiling workloads (src/perf/workloads/*.c) with the system C compiler, once with frame
//! pointers and once without, statically linked so the same bytes run on the host and inside the verify
//! initramfs. The binaries are embedded into bport (`perf::workloads`).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src = "src/perf/workloads/chain.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CC");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let variants: [(&str, &[&str]); 2] = [
        (
            "chain-fp",
            &[
                "-fno-omit-frame-pointer",
                "-mno-omit-leaf-frame-pointer",
                "-DCHAIN_LEAF_FRAME",
            ],
        ),
        ("chain-nofp", &["-fomit-frame-pointer"]),
    ];
    for (name, flags) in variants {
        let status = Command::new(&cc)
            .args(["-O2", "-static", "-fasynchronous-unwind-tables", "-fno-inline"])
            // Static links get no .eh_frame_hdr by default, and perf's DWARF unwinders (libunwind, libdw) need
            // that table to find the CFI: without it `perf script` stops every chain at the leaf.
            .arg("-Wl,--eh-frame-hdr")
            .args(flags)
            .arg("-o")
            .arg(out.join(name))
            .arg(src)
            .status()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` to build {name}: {e}; install gcc and libc6-dev"));
        assert!(
            status.success(),
            "`{cc}` failed to build {name} from {src}; is libc6-dev (static libc.a) installed?"
        );
    }
}
