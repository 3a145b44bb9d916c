//! The initramfs for the verify VM: a `newc` cpio archive (the format the kernel unpacks into its rootfs,
//! Documentation/driver-api/early-userspace/buffer-format.rst), written by us so that device nodes such as
//! `/dev/console` need no root-owned files on the host and no `cpio` binary.
//!
//! The archive is left uncompressed: every kernel accepts that, and the few megabytes cost qemu nothing.
//! [`elf_closure`] finds what a dynamically linked executable needs (its interpreter and `DT_NEEDED` libraries,
//! what `ldd` would print) so that the host's bport can run as the guest's init.

use object::read::elf::{Dyn, ElfFile64, ProgramHeader};
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What went wrong collecting files for the initramfs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// An executable or library is not a 64-bit ELF file we can read.
    #[error("{path} is not a readable 64-bit ELF file: {message}")]
    Elf {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A needed shared library was found in none of the library directories.
    #[error("{needed_by} needs {library}, which is in none of {dirs}")]
    LibraryNotFound {
        /// The library name (`DT_NEEDED`).
        library: String,
        /// The object that needs it.
        needed_by: PathBuf,
        /// The directories searched.
        dirs: String,
    },
}

/// Where the dynamic loader looks without an ld.so.cache, in its order (Debian multiarch first).
pub const LIBRARY_DIRS: [&str; 6] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Dir,
    File(Vec<u8>),
    Symlink(String),
    CharDev { major: u32, minor: u32 },
}

#[derive(Clone, Debug)]
struct Entry {
    path: String,
    mode: u32,
    kind: Kind,
}

/// An initramfs being assembled; parents of every added path are created as directories.
#[derive(Clone, Debug, Default)]
pub struct Initramfs {
    entries: Vec<Entry>,
    dirs: BTreeSet<String>,
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

impl Initramfs {
    /// An empty archive.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a directory (mode 0755) and its parents.
    pub fn dir(&mut self, path: &str) -> &mut Self {
        let path = normalize(path);
        if path.is_empty() || self.dirs.contains(&path) {
            return self;
        }
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.dirs.insert(path.clone());
        self.entries.push(Entry {
            path,
            mode: S_IFDIR | 0o755,
            kind: Kind::Dir,
        });
        self
    }

    /// Adds a regular file with the given permission bits.
    pub fn file(&mut self, path: &str, contents: Vec<u8>, perm: u32) -> &mut Self {
        self.push(path, S_IFREG | (perm & 0o7777), Kind::File(contents))
    }

    /// Adds a symbolic link.
    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        self.push(path, S_IFLNK | 0o777, Kind::Symlink(target.to_owned()))
    }

    /// Adds a character device node (e.g. `/dev/console`, 5:1), which the kernel opens for init's stdio.
    pub fn char_dev(&mut self, path: &str, major: u32, minor: u32) -> &mut Self {
        self.push(path, S_IFCHR | 0o600, Kind::CharDev { major, minor })
    }

    /// Adds the host file `host` at the same absolute path, following symlinks for its contents.
    pub fn host_file(&mut self, host: &Path) -> Result<&mut Self, Error> {
        let contents = std::fs::read(host).map_err(|source| Error::Read {
            path: host.to_owned(),
            source,
        })?;
        let perm = std::fs::metadata(host)
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()))
            .unwrap_or(0o755);
        Ok(self.file(&host.to_string_lossy(), contents, perm))
    }

    /// Adds a host executable and everything it needs to run (see [`elf_closure`]), each at its host path.
    pub fn host_executable(&mut self, exe: &Path) -> Result<&mut Self, Error> {
        for path in elf_closure(exe)? {
            self.host_file(&path)?;
        }
        Ok(self)
    }

    fn push(&mut self, path: &str, mode: u32, kind: Kind) -> &mut Self {
        let path = normalize(path);
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        // A later addition of the same path wins, as it would when unpacking.
        self.entries.retain(|e| e.path != path);
        self.entries.push(Entry { path, mode, kind });
        self
    }

    /// Writes the archive (`newc`, ending with the `TRAILER!!!` entry).
    pub fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut offset = 0usize;
        for (ino, entry) in self.entries.iter().enumerate() {
            let data: &[u8] = match &entry.kind {
                Kind::File(c) => c,
                Kind::Symlink(t) => t.as_bytes(),
                Kind::Dir | Kind::CharDev { .. } => &[],
            };
            let (rmaj, rmin) = match entry.kind {
                Kind::CharDev { major, minor } => (major, minor),
                _ => (0, 0),
            };
            let nlink = if entry.kind == Kind::Dir { 2 } else { 1 };
            write_entry(
                out,
                &mut offset,
                &entry.path,
                &Header {
                    ino: ino as u32 + 1,
                    mode: entry.mode,
                    nlink,
                    rdev: (rmaj, rmin),
                },
                data,
            )?;
        }
        let trailer = Header {
            ino: 0,
            mode: 0,
            nlink: 1,
            rdev: (0, 0),
        };
        write_entry(out, &mut offset, "TRAILER!!!", &trailer, &[])
    }

    /// The archive as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.write_to(&mut v).expect("writing to a Vec cannot fail");
        v
    }
}

struct Header {
    ino: u32,
    mode: u32,
    nlink: u32,
    rdev: (u32, u32),
}

fn write_entry(
    out: &mut dyn Write,
    offset: &mut usize,
    name: &str,
    h: &Header,
    data: &[u8],
) -> io::Result<()> {
    // uid/gid 0 and mtime 0: the guest runs as root, and a fixed time keeps archives reproducible.
    let fields = [
        h.ino,
        h.mode,
        0,
        0,
        h.nlink,
        0,
        data.len() as u32,
        0,
        0,
        h.rdev.0,
        h.rdev.1,
        name.len() as u32 + 1,
        0,
    ];
    let mut header = String::from("070701");
    for f in fields {
        header.push_str(&format!("{f:08X}"));
    }
    out.write_all(header.as_bytes())?;
    out.write_all(name.as_bytes())?;
    out.write_all(&[0])?;
    *offset += header.len() + name.len() + 1;
    pad4(out, offset)?;
    out.write_all(data)?;
    *offset += data.len();
    pad4(out, offset)
}

fn pad4(out: &mut dyn Write, offset: &mut usize) -> io::Result<()> {
    let pad = (4 - *offset % 4) % 4;
    out.write_all(&[0u8; 3][..pad])?;
    *offset += pad;
    Ok(())
}

fn normalize(path: &str) -> String {
    path.trim_matches('/').to_owned()
}

/// `exe`, its program interpreter and every shared library it needs, transitively (what `ldd` lists), as host
/// paths in load order. A static executable yields just itself.
pub fn elf_closure(exe: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut out = vec![exe.to_owned()];
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue = vec![exe.to_owned()];
    while let Some(object) = queue.pop() {
        let (interp, needed) = dynamic_deps(&object)?;
        if let Some(interp) = interp {
            if seen.insert(interp.clone()) {
                out.push(PathBuf::from(interp));
            }
        }
        for lib in needed {
            if !seen.insert(lib.clone()) {
                continue;
            }
            let found = LIBRARY_DIRS
                .iter()
                .map(|d| Path::new(d).join(&lib))
                .find(|p| p.is_file())
                .ok_or_else(|| Error::LibraryNotFound {
                    library: lib.clone(),
                    needed_by: object.clone(),
                    dirs: LIBRARY_DIRS.join(", "),
                })?;
            out.push(found.clone());
            queue.push(found);
        }
    }
    Ok(out)
}

/// The `PT_INTERP` path and the `DT_NEEDED` names of an ELF file.
fn dynamic_deps(path: &Path) -> Result<(Option<String>, Vec<String>), Error> {
    let data = std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    let elf_err = |e: object::read::Error| Error::Elf {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let file = ElfFile64::<object::Endianness>::parse(&*data).map_err(elf_err)?;
    let endian = file.endian();
    let mut interp = None;
    for segment in file.elf_program_headers() {
        if let Some(i) = segment.interpreter(endian, &*data).map_err(elf_err)? {
            interp = Some(String::from_utf8_lossy(i).into_owned());
        }
    }
    let sections = file.elf_section_table();
    let mut needed = Vec::new();
    if let Some((dyns, link)) = sections.dynamic(endian, &*data).map_err(elf_err)? {
        let strings = sections.strings(endian, &*data, link).map_err(elf_err)?;
        for d in dyns {
            if d.tag(endian) == object::elf::DT_NEEDED {
                let name = d.string(endian, strings).map_err(elf_err)?;
                needed.push(String::from_utf8_lossy(name).into_owned());
            }
        }
    }
    Ok((interp, needed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One archive entry read back: name, mode, rdev, data.
    type Parsed = (String, u32, (u32, u32), Vec<u8>);
    type Summary<'a> = (&'a str, u32, (u32, u32), &'a [u8]);

    /// Reads a newc archive back, trailer excluded.
    fn parse(mut bytes: &[u8]) -> Vec<Parsed> {
        let mut out = Vec::new();
        let mut offset = 0usize;
        loop {
            assert_eq!(&bytes[..6], b"070701", "magic at offset {offset}");
            let field = |i: usize| {
                u32::from_str_radix(
                    std::str::from_utf8(&bytes[6 + i * 8..14 + i * 8]).unwrap(),
                    16,
                )
                .unwrap()
            };
            let (mode, size, rmaj, rmin, namesize) =
                (field(1), field(6), field(9), field(10), field(11));
            let name_end = 110 + namesize as usize;
            let name = std::str::from_utf8(&bytes[110..name_end - 1])
                .unwrap()
                .to_owned();
            let data_start = name_end + (4 - (offset + name_end) % 4) % 4;
            let data = bytes[data_start..data_start + size as usize].to_vec();
            let next = data_start + size as usize;
            let next = next + (4 - (offset + next) % 4) % 4;
            if name == "TRAILER!!!" {
                assert_eq!(next, bytes.len());
                return out;
            }
            out.push((name, mode, (rmaj, rmin), data));
            offset += next;
            bytes = &bytes[next..];
        }
    }

    #[test]
    fn writes_newc_with_parents_devices_and_symlinks() {
        let mut fs = Initramfs::new();
        fs.char_dev("/dev/console", 5, 1)
            .file("/bin/bport", b"ELF!x".to_vec(), 0o755)
            .symlink("/init", "/bin/bport")
            .dir("/proc");
        let entries = parse(&fs.to_bytes());
        let summary: Vec<Summary> = entries
            .iter()
            .map(|(n, m, r, d)| (n.as_str(), *m, *r, d.as_slice()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("dev", 0o040755, (0, 0), &b""[..]),
                ("dev/console", 0o020600, (5, 1), b""),
                ("bin", 0o040755, (0, 0), b""),
                ("bin/bport", 0o100755, (0, 0), b"ELF!x"),
                ("init", 0o120777, (0, 0), b"/bin/bport"),
                ("proc", 0o040755, (0, 0), b""),
            ]
        );
    }

    #[test]
    fn cpio_oracle_lists_the_same_archive() {
        let have_cpio = std::process::Command::new("cpio")
            .arg("--version")
            .output()
            .is_ok();
        if !crate::test_require::require(have_cpio, "cpio not found", "apt-get install cpio") {
            return;
        }
        let mut fs = Initramfs::new();
        fs.file("/a/b/c.txt", b"hello\n".to_vec(), 0o644)
            .symlink("/l", "a/b/c.txt");
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("x.cpio");
        std::fs::write(&archive, fs.to_bytes()).unwrap();
        let out = std::process::Command::new("cpio")
            .args(["-i", "-d", "--quiet", "-F"])
            .arg(&archive)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read(dir.path().join("a/b/c.txt")).unwrap(),
            b"hello\n"
        );
        assert_eq!(
            std::fs::read_link(dir.path().join("l")).unwrap(),
            Path::new("a/b/c.txt")
        );
    }

    #[test]
    fn closure_of_a_static_binary_is_itself_and_of_a_dynamic_one_includes_libc() {
        let dir = tempfile::tempdir().unwrap();
        let workload = crate::verify::workloads::Build::FramePointer
            .write_to(dir.path())
            .unwrap();
        assert_eq!(elf_closure(&workload).unwrap(), vec![workload.clone()]);
        let me = std::env::current_exe().unwrap();
        let closure = elf_closure(&me).unwrap();
        assert_eq!(closure[0], me);
        let names: Vec<String> = closure
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().any(|n| n == "libc.so.6"), "{names:?}");
        assert!(
            names.iter().any(|n| n.starts_with("ld-linux-x86-64")),
            "{names:?}"
        );
    }
}
