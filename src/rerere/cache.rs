//! The rr-cache layout, byte for byte as git's rerere.c writes it: `<dir>/<id>/preimage`, `postimage`, and
//! numbered variants `preimage.1`, `postimage.1`, … for different resolutions of conflicts with the same id.
//!
//! One type serves `.git/rr-cache` and the shared `rerere-cache/` directory, so entries copy between them
//! unchanged. Everything read from disk is distrusted: an entry whose name is not a conflict id, a symlink, a
//! directory where a file belongs, or an empty file is skipped with a [`Warning`] and never followed, so nothing
//! outside the cache directory is ever read or written because of a name found in it.
//!
//! The shared cache is content someone else committed, so an [`RrCache::untrusted`] cache also refuses a symlink
//! in its own place (a committed `rerere-cache` link to elsewhere) and opens files without following links. Every
//! cache caps what it reads at [`MAX_IMAGE`]: a conflicted text file larger than that is not something rerere
//! resolves, and a planted huge file must not be read whole.

use super::conflict_id::ConflictId;
use super::Error;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The subdirectory of a cache where bport keeps its modify/delete decisions (`decision.rs`), beside the
/// rr-cache entries; the cache owns its layout, so the entry scan knows to pass it by.
pub const DECISIONS_DIR: &str = "bport-decisions";

/// The largest preimage, postimage or decision read from a cache (32 MiB); larger files are skipped with a
/// warning that says so.
pub const MAX_IMAGE: u64 = 32 << 20;

/// Which file of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Image {
    /// The normalized conflict as it was recorded.
    Preimage,
    /// The user's resolution.
    Postimage,
}

impl Image {
    /// The file name stem git uses.
    pub fn stem(self) -> &'static str {
        match self {
            Image::Preimage => "preimage",
            Image::Postimage => "postimage",
        }
    }
}

/// The file name of `image` for `variant` (0 has no suffix, as in git's `rerere_path`).
pub fn file_name(image: Image, variant: u32) -> String {
    if variant == 0 {
        image.stem().to_owned()
    } else {
        format!("{}.{variant}", image.stem())
    }
}

/// Something in a cache directory that was skipped, with the reason; callers show it as a warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The offending path.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipping {}: {}", self.path.display(), self.reason)
    }
}

/// What one variant of an entry holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VariantFiles {
    /// A usable preimage file exists.
    pub preimage: bool,
    /// A usable postimage file exists.
    pub postimage: bool,
}

impl VariantFiles {
    /// Both files: a recorded resolution.
    pub fn complete(self) -> bool {
        self.preimage && self.postimage
    }
}

/// One `<id>/` directory: its variants by number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The conflict id (the directory name).
    pub id: ConflictId,
    /// Variant number → files present.
    pub variants: BTreeMap<u32, VariantFiles>,
}

impl Entry {
    /// Variant numbers that hold a complete resolution, in order.
    pub fn resolutions(&self) -> impl Iterator<Item = u32> + '_ {
        self.variants
            .iter()
            .filter(|(_, f)| f.complete())
            .map(|(&v, _)| v)
    }

    /// The first variant number with no files (git's `assign_variant`).
    pub fn free_variant(&self) -> u32 {
        (0..)
            .find(|v| {
                self.variants
                    .get(v)
                    .is_none_or(|f| !f.preimage && !f.postimage)
            })
            .expect("u32 range is never exhausted by a directory listing")
    }
}

/// An rr-cache directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RrCache {
    dir: PathBuf,
    untrusted: bool,
    /// For an untrusted cache inside a work tree: the work tree, below which no directory on the way to the cache
    /// may be a link either.
    root: Option<PathBuf>,
}

impl RrCache {
    /// A cache rooted at `dir` (it need not exist yet).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RrCache {
            dir: dir.into(),
            untrusted: false,
            root: None,
        }
    }

    /// A cache whose content others wrote (the shared `rerere-cache/`): the directory itself must not be a
    /// symlink either, and no file is opened through a link.
    pub fn untrusted(dir: impl Into<PathBuf>) -> Self {
        RrCache {
            dir: dir.into(),
            untrusted: true,
            root: None,
        }
    }

    /// [`RrCache::untrusted`] for a cache in the work tree `root`: a committed link anywhere on the way from the
    /// work tree to the cache is refused too.
    pub fn untrusted_within(dir: impl Into<PathBuf>, root: impl Into<PathBuf>) -> Self {
        RrCache {
            dir: dir.into(),
            untrusted: true,
            root: Some(root.into()),
        }
    }

    /// Why `path` (the cache directory or a directory in it) must not be used: it is a symlink and the cache is
    /// untrusted. `None` when it may be used (or does not exist).
    pub fn refused_link(&self, path: &Path) -> Option<Warning> {
        if !self.untrusted {
            return None;
        }
        let is_link = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        // The path itself, then (inside a work tree) every directory between the work tree and it.
        let below_root = self
            .root
            .as_deref()
            .filter(|root| path.starts_with(root) && path != *root);
        let mut candidates = vec![path];
        if let Some(root) = below_root {
            candidates.extend(path.ancestors().skip(1).take_while(|a| *a != root));
        }
        candidates
            .into_iter()
            .find(|p| is_link(p))
            .map(|p| Warning {
                path: p.to_path_buf(),
                reason: "a symbolic link; links in the shared cache are never followed".into(),
            })
    }

    /// Refuses to write through a refused link.
    fn check_writable(&self, path: &Path) -> Result<(), Error> {
        match self.refused_link(path) {
            Some(w) => Err(Error::BadCacheEntry {
                path: w.path,
                reason: w.reason,
            }),
            None => Ok(()),
        }
    }

    /// Reads a file of the cache: never through a symlink in an untrusted cache, never more than [`MAX_IMAGE`].
    pub fn read_capped(&self, path: &Path) -> Result<Vec<u8>, Error> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        self.check_writable(&self.dir)?;
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut opts = fs::File::options();
        opts.read(true);
        if self.untrusted {
            opts.custom_flags(libc::O_NOFOLLOW);
        }
        let file = opts.open(path).map_err(io)?;
        let mut data = Vec::new();
        file.take(MAX_IMAGE + 1)
            .read_to_end(&mut data)
            .map_err(io)?;
        if data.len() as u64 > MAX_IMAGE {
            return Err(Error::BadCacheEntry {
                path: path.to_path_buf(),
                reason: too_large(),
            });
        }
        Ok(data)
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory of `id`.
    pub fn entry_dir(&self, id: &ConflictId) -> PathBuf {
        self.dir.join(id.to_string())
    }

    /// The path of one file of one variant.
    pub fn path(&self, id: &ConflictId, image: Image, variant: u32) -> PathBuf {
        self.entry_dir(id).join(file_name(image, variant))
    }

    /// All valid entries, sorted by id, and warnings for everything skipped. A missing directory is empty.
    pub fn scan(&self) -> Result<(Vec<Entry>, Vec<Warning>), Error> {
        let mut entries = Vec::new();
        let mut warnings = Vec::new();
        if let Some(w) = self.refused_link(&self.dir) {
            warnings.push(w);
            return Ok((entries, warnings));
        }
        let read = match fs::read_dir(&self.dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((entries, warnings)),
            Err(source) => {
                return Err(Error::Io {
                    path: self.dir.clone(),
                    source,
                })
            }
        };
        for dirent in read {
            let dirent = dirent.map_err(|source| Error::Io {
                path: self.dir.clone(),
                source,
            })?;
            let path = dirent.path();
            let name = dirent.file_name();
            if name == DECISIONS_DIR {
                continue; // bport's modify/delete decisions, not an rr-cache entry
            }
            if is_documentation(&name) && dirent.file_type().is_ok_and(|t| t.is_file()) {
                continue; // a committed rerere-cache/ may carry a README or .gitattributes; not entries
            }
            let Some(id) = name.to_str().and_then(|n| n.parse::<ConflictId>().ok()) else {
                warnings.push(Warning {
                    path,
                    reason: "name is not a conflict id (40 lowercase hex digits)".into(),
                });
                continue;
            };
            match self.entry(&id, &mut warnings)? {
                Some(entry) => entries.push(entry),
                None => continue,
            }
        }
        entries.sort_by_key(|e| e.id);
        Ok((entries, warnings))
    }

    /// The entry for `id`, or `None` if there is no usable directory for it; problems go to `warnings`.
    pub fn entry(
        &self,
        id: &ConflictId,
        warnings: &mut Vec<Warning>,
    ) -> Result<Option<Entry>, Error> {
        if let Some(w) = self.refused_link(&self.dir) {
            warnings.push(w);
            return Ok(None);
        }
        let dir = self.entry_dir(id);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                warnings.push(Warning {
                    path: dir,
                    reason: "not a directory (symlinks are never followed)".into(),
                });
                return Ok(None);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(Error::Io { path: dir, source }),
        }
        let read = fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let mut variants: BTreeMap<u32, VariantFiles> = BTreeMap::new();
        for dirent in read {
            let dirent = dirent.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let Some(name) = dirent.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let Some((image, variant)) = parse_file_name(&name) else {
                // thisimage and foreign files: git ignores them too.
                continue;
            };
            let path = dirent.path();
            let meta = fs::symlink_metadata(&path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            if !meta.is_file() {
                warnings.push(Warning {
                    path,
                    reason: "not a regular file".into(),
                });
                continue;
            }
            if meta.len() == 0 {
                warnings.push(Warning {
                    path,
                    reason: "empty file".into(),
                });
                continue;
            }
            if meta.len() > MAX_IMAGE {
                warnings.push(Warning {
                    path,
                    reason: format!("{} bytes: {}", meta.len(), too_large()),
                });
                continue;
            }
            let files = variants.entry(variant).or_default();
            match image {
                Image::Preimage => files.preimage = true,
                Image::Postimage => files.postimage = true,
            }
        }
        Ok(Some(Entry { id: *id, variants }))
    }

    /// Reads one file of a variant the entry listed as present.
    pub fn read(&self, id: &ConflictId, image: Image, variant: u32) -> Result<Vec<u8>, Error> {
        self.read_capped(&self.path(id, image, variant))
    }

    /// Writes one file of a variant (temp file + rename, so a crash never leaves a half-written resolution).
    pub fn write(
        &self,
        id: &ConflictId,
        image: Image,
        variant: u32,
        content: &[u8],
    ) -> Result<(), Error> {
        self.check_writable(&self.dir)?;
        let dir = self.entry_dir(id);
        if fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            return Err(Error::BadCacheEntry {
                path: dir,
                reason: "not a directory".into(),
            });
        }
        fs::create_dir_all(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(file_name(image, variant));
        write_atomic(&path, content)
    }

    /// Removes one file of a variant if present.
    pub fn remove(&self, id: &ConflictId, image: Image, variant: u32) -> Result<bool, Error> {
        let path = self.path(id, image, variant);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(Error::Io { path, source }),
        }
    }

    /// Removes the directory of `id` if it is empty.
    pub fn remove_dir_if_empty(&self, id: &ConflictId) {
        // A non-empty or missing directory is fine to leave; this is tidying only.
        let _ = fs::remove_dir(self.entry_dir(id));
    }
}

/// Why a file above [`MAX_IMAGE`] is not read.
fn too_large() -> String {
    format!(
        "larger than the {} MiB bport reads from a cache file (no conflicted text file that large is resolved by rerere)",
        MAX_IMAGE >> 20
    )
}

/// Dotfiles and READMEs (regular files only) sit in a committed shared cache legitimately and are neither entries
/// nor worth a warning.
fn is_documentation(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| n.starts_with('.') || n.starts_with("README"))
}

/// `preimage`, `postimage.3` → (image, variant); anything else → None (as git's `is_rr_file`).
pub fn parse_file_name(name: &str) -> Option<(Image, u32)> {
    for image in [Image::Preimage, Image::Postimage] {
        if let Some(rest) = name.strip_prefix(image.stem()) {
            if rest.is_empty() {
                return Some((image, 0));
            }
            let digits = rest.strip_prefix('.')?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            return digits.parse().ok().map(|v| (image, v));
        }
    }
    None
}

/// [`crate::git::write_atomic`] with this module's error.
pub(crate) fn write_atomic(path: &Path, content: &[u8]) -> Result<(), Error> {
    crate::git::write_atomic(path, content).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "b5af61297bb440010b5deb18d272d0976716bc1f";

    #[test]
    fn file_names_round_trip() {
        assert_eq!(file_name(Image::Preimage, 0), "preimage");
        assert_eq!(file_name(Image::Postimage, 2), "postimage.2");
        assert_eq!(parse_file_name("postimage.2"), Some((Image::Postimage, 2)));
        assert_eq!(parse_file_name("preimage"), Some((Image::Preimage, 0)));
        assert_eq!(parse_file_name("thisimage"), None);
        assert_eq!(parse_file_name("preimage.x"), None);
        assert_eq!(parse_file_name("preimage."), None);
    }

    #[test]
    fn scan_skips_bad_entries_with_warnings() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = RrCache::new(tmp.path().join("rr-cache"));
        let id: ConflictId = ID.parse().unwrap();
        cache.write(&id, Image::Preimage, 0, b"pre\n").unwrap();
        cache.write(&id, Image::Postimage, 0, b"post\n").unwrap();
        cache.write(&id, Image::Preimage, 1, b"pre1\n").unwrap();
        // Variant 2: empty postimage; variant 3: a directory where a file belongs.
        cache.write(&id, Image::Preimage, 2, b"pre2\n").unwrap();
        fs::write(cache.path(&id, Image::Postimage, 2), b"").unwrap();
        fs::create_dir(cache.path(&id, Image::Postimage, 3)).unwrap();
        fs::create_dir_all(cache.dir().join("not-hex")).unwrap();
        fs::write(cache.dir().join("README.md"), b"shared resolutions\n").unwrap();
        fs::write(cache.dir().join(".gitattributes"), b"* -text\n").unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("preimage"), b"x").unwrap();
        std::os::unix::fs::symlink(
            &outside,
            cache.dir().join("0000000000000000000000000000000000000000"),
        )
        .unwrap();

        let (entries, warnings) = cache.scan().unwrap();
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!(e.resolutions().collect::<Vec<_>>(), vec![0]);
        assert_eq!(
            e.variants.get(&1),
            Some(&VariantFiles {
                preimage: true,
                postimage: false
            })
        );
        assert_eq!(e.free_variant(), 3);
        let mut reasons: Vec<String> = warnings
            .iter()
            .map(|w| {
                format!(
                    "{} {}",
                    w.path.file_name().unwrap().to_string_lossy(),
                    w.reason
                )
            })
            .collect();
        reasons.sort();
        assert_eq!(
            reasons,
            vec![
                "0000000000000000000000000000000000000000 not a directory (symlinks are never followed)",
                "not-hex name is not a conflict id (40 lowercase hex digits)",
                "postimage.2 empty file",
                "postimage.3 not a regular file",
            ]
        );
    }

    #[test]
    fn an_untrusted_cache_follows_no_link_and_reads_nothing_oversized() {
        let tmp = tempfile::tempdir().unwrap();
        let id: ConflictId = ID.parse().unwrap();
        let outside = RrCache::new(tmp.path().join("outside"));
        outside.write(&id, Image::Preimage, 0, b"pre\n").unwrap();
        outside.write(&id, Image::Postimage, 0, b"post\n").unwrap();
        let link = tmp.path().join("rerere-cache");
        std::os::unix::fs::symlink(outside.dir(), &link).unwrap();

        // Trusted (a clone's own .git/rr-cache may be a link the user made): followed.
        assert_eq!(RrCache::new(&link).scan().unwrap().0.len(), 1);
        // Untrusted: neither read nor written through.
        let shared = RrCache::untrusted(&link);
        let (entries, warnings) = shared.scan().unwrap();
        assert!(entries.is_empty());
        assert!(warnings[0].reason.contains("symbolic link"), "{warnings:?}");
        assert!(shared.read(&id, Image::Postimage, 0).is_err());
        assert!(shared.write(&id, Image::Postimage, 1, b"x\n").is_err());
        assert!(!outside.path(&id, Image::Postimage, 1).exists());

        // A postimage linked to a file elsewhere is not opened.
        let real = RrCache::untrusted(tmp.path().join("real"));
        real.write(&id, Image::Preimage, 0, b"pre\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path(&id, Image::Postimage, 0),
            real.path(&id, Image::Postimage, 0),
        )
        .unwrap();
        assert!(real.read(&id, Image::Postimage, 0).is_err());

        // Above the cap: listed as skipped, with the size and the limit, never read.
        let big = real.path(&id, Image::Postimage, 2);
        real.write(&id, Image::Preimage, 2, b"pre\n").unwrap();
        fs::File::create(&big)
            .unwrap()
            .set_len(MAX_IMAGE + 1)
            .unwrap();
        let mut w = Vec::new();
        let entry = real.entry(&id, &mut w).unwrap().unwrap();
        assert!(!entry.variants[&2].postimage);
        let reasons: Vec<&str> = w.iter().map(|w| w.reason.as_str()).collect();
        assert!(
            reasons
                .iter()
                .any(|r| r.starts_with("33554433 bytes: larger than the 32 MiB")),
            "{reasons:?}"
        );
        assert!(matches!(
            real.read(&id, Image::Postimage, 2),
            Err(Error::BadCacheEntry { .. })
        ));
    }

    #[test]
    fn a_link_on_the_way_from_the_work_tree_to_the_cache_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let id: ConflictId = ID.parse().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        let outside = RrCache::new(elsewhere.join("cache"));
        outside.write(&id, Image::Preimage, 0, b"pre\n").unwrap();
        outside.write(&id, Image::Postimage, 0, b"post\n").unwrap();
        let work = tmp.path().join("work");
        fs::create_dir_all(&work).unwrap();
        std::os::unix::fs::symlink(&elsewhere, work.join("sub")).unwrap();
        let shared = RrCache::untrusted_within(work.join("sub/cache"), &work);
        let (entries, warnings) = shared.scan().unwrap();
        assert!(entries.is_empty());
        assert_eq!(warnings[0].path, work.join("sub"));
        assert!(shared.write(&id, Image::Postimage, 1, b"x\n").is_err());
        assert!(!outside.path(&id, Image::Postimage, 1).exists());
        // The work tree itself may be reached through a link (a user's checkout layout): only what is inside counts.
        std::os::unix::fs::symlink(&work, tmp.path().join("work-link")).unwrap();
        fs::remove_file(work.join("sub")).unwrap();
        let real = RrCache::untrusted_within(
            tmp.path().join("work-link/rerere-cache"),
            tmp.path().join("work-link"),
        );
        real.write(&id, Image::Preimage, 0, b"pre\n").unwrap();
        assert_eq!(real.scan().unwrap().0.len(), 1);
    }
}
