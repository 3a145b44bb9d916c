//! The CI scripts' own logic: `.ci/fetch-kernels` takes its Debian mirror from the machine's apt configuration
//! (one-line `deb` entries and deb822 stanzas), never from a host it names.

use std::path::Path;
use std::process::Command;

/// What `debian_mirror` prints for an apt configuration made of `files` (path under /etc/apt, content).
fn mirror(files: &[(&str, &str)]) -> (String, bool) {
    let etc = tempfile::tempdir().unwrap();
    std::fs::create_dir(etc.path().join("sources.list.d")).unwrap();
    for (name, text) in files {
        std::fs::write(etc.path().join(name), text).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/fetch-kernels");
    let out = Command::new("bash")
        .args(["-c", "source \"$1\" && debian_mirror", "bash"])
        .arg(&script)
        .env("APT_ETC", etc.path())
        .output()
        .expect("bash");
    (
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        out.status.success(),
    )
}

#[test]
fn fetch_kernels_takes_the_debian_mirror_from_apt_configuration() {
    // One-line format, options in brackets, the security suite first: the main suite's URI wins.
    assert_eq!(
        mirror(&[(
            "sources.list",
            "# a comment\ndeb [signed-by=/k.gpg] http://mirror.example/debian-security bookworm-security main\n\
             deb http://mirror.example/debian bookworm main contrib\n",
        )]),
        ("http://mirror.example/debian".to_owned(), true)
    );
    // deb822, the main suite in the last stanza of a file without a final blank line.
    assert_eq!(
        mirror(&[(
            "sources.list.d/debian.sources",
            "Types: deb\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\n\n\
             Types: deb\nURIs: http://proxy.example:3142/debian\nSuites: bookworm bookworm-updates\nComponents: main",
        )]),
        ("http://proxy.example:3142/debian".to_owned(), true)
    );
    // Disabled files and deb-src entries are not sources of binary packages.
    let (uri, ok) = mirror(&[
        (
            "sources.list.d/other.list.disabled",
            "deb http://disabled.example/debian bookworm main\n",
        ),
        (
            "sources.list",
            "deb-src http://src.example/debian bookworm main\n",
        ),
    ]);
    assert_eq!(uri, "");
    assert!(ok, "an empty answer is for the caller to report");
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/fetch-kernels"))
            .unwrap();
    assert!(
        !script.contains("deb.debian.org"),
        ".ci/fetch-kernels names a mirror host"
    );
}
