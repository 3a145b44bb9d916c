//! Writes objects out of memory as one undeltified pack with its index, as git's `fast-import` and
//! `index-pack` lay them out (Documentation/gitformat-pack.txt: pack version 2, index version 2).
//!
//! A backport run creates its objects in a mempack and writes them out at the end (or at a stop). libgit2's
//! packbuilder searches deltas for every object (`git_delta_create_from_index` was 37% of a real-history run,
//! issue 16), and its indexer then inflates and re-hashes each object to build the index. Neither is needed
//! here: the objects are few, their ids are known, and a later `git gc` deltifies them anyway. So each object
//! is deflated once, its CRC taken as it is written, and the index built from the ids we already have.
//! Objects the object database already holds (a merge whose result is the picked commit's own blob, a tree
//! equal to the original commit's) are left out, as git's `write_object_file` leaves them out.

use super::{Context, Error};
use git2::{ObjectType, Odb, Oid};
use sha1::{Digest, Sha1};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What [`write_pack`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// How many objects went into the pack (0: nothing new, no pack written).
    pub objects: usize,
    /// The pack file (`objects/pack/pack-<sha>.pack`), when one was written.
    pub pack: Option<PathBuf>,
}

/// Writes every object of `oids` that `disk` does not hold yet, read from `source` (the odb holding the new
/// objects), as one pack plus index under `pack_dir`, and refreshes `disk` so that it sees them. Duplicates in
/// `oids` are written once.
pub fn write_pack(
    source: &Odb<'_>,
    disk: &Odb<'_>,
    pack_dir: &Path,
    oids: &[Oid],
) -> Result<Written, Error> {
    let mut todo: Vec<Oid> = oids.to_vec();
    todo.sort_unstable();
    todo.dedup();
    todo.retain(|oid| !disk.exists(*oid));
    if todo.is_empty() {
        return Ok(Written::default());
    }

    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let tmp_pack = pack_dir.join(format!("tmp_pack_bport_{}", std::process::id()));
    let mut pack = PackFile::create(&tmp_pack).map_err(io(&tmp_pack))?;
    pack.write(b"PACK").map_err(io(&tmp_pack))?;
    pack.write(&2u32.to_be_bytes()).map_err(io(&tmp_pack))?;
    pack.write(&(todo.len() as u32).to_be_bytes())
        .map_err(io(&tmp_pack))?;

    // (offset, crc32) per object, in the order of `todo` (sorted by id, as the index wants them).
    let mut entries = Vec::with_capacity(todo.len());
    let mut deflated = Vec::new();
    for &oid in &todo {
        let object = source
            .read(oid)
            .context_git(|| format!("reading the new object {oid}"))?;
        let kind = match object.kind() {
            ObjectType::Commit => 1u8,
            ObjectType::Tree => 2,
            ObjectType::Blob => 3,
            ObjectType::Tag => 4,
            other => {
                return Err(Error::Git {
                    context: format!("packing {oid}"),
                    source: git2::Error::from_str(&format!("unexpected object type {other:?}")),
                })
            }
        };
        let data = object.data();
        deflated.clear();
        // Level 1: these objects are written once and repacked by the next `git gc`; deflate was the larger
        // half of the write at the default level.
        let mut z = flate2::write::ZlibEncoder::new(&mut deflated, flate2::Compression::fast());
        z.write_all(data).map_err(io(&tmp_pack))?;
        z.finish().map_err(io(&tmp_pack))?;
        let offset = pack.len;
        let mut crc = flate2::Crc::new();
        let header = entry_header(kind, data.len() as u64);
        crc.update(&header);
        crc.update(&deflated);
        pack.write(&header).map_err(io(&tmp_pack))?;
        pack.write(&deflated).map_err(io(&tmp_pack))?;
        entries.push((offset, crc.sum()));
    }
    let checksum = pack.finish().map_err(io(&tmp_pack))?;
    let name = hex(&checksum);

    let tmp_idx = pack_dir.join(format!("tmp_idx_bport_{}", std::process::id()));
    let index = index_bytes(&todo, &entries, &checksum);
    write_synced(&tmp_idx, &index).map_err(io(&tmp_idx))?;

    // The pack first: an index is what makes a pack visible, and it must never name a missing pack.
    let pack_path = pack_dir.join(format!("pack-{name}.pack"));
    let idx_path = pack_dir.join(format!("pack-{name}.idx"));
    std::fs::rename(&tmp_pack, &pack_path).map_err(io(&pack_path))?;
    std::fs::rename(&tmp_idx, &idx_path).map_err(io(&idx_path))?;
    sync_dir(pack_dir).map_err(io(pack_dir))?;
    disk.refresh()
        .context_git(|| format!("reading the new pack {}", pack_path.display()))?;
    Ok(Written {
        objects: todo.len(),
        pack: Some(pack_path),
    })
}

/// The pack entry header: type and size, 4 bits of size in the first byte, then 7 bits a byte (pack-format.txt).
fn entry_header(kind: u8, mut size: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    let mut byte = (kind << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size != 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
    out
}

/// Index version 2 for objects `oids` (sorted) at `entries` (offset, crc32) in the pack with `checksum`.
fn index_bytes(oids: &[Oid], entries: &[(u64, u32)], checksum: &[u8; 20]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 256 * 4 + oids.len() * 28 + 40);
    out.extend_from_slice(b"\xfftOc");
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for oid in oids {
        fanout[oid.as_bytes()[0] as usize] += 1;
    }
    let mut total = 0u32;
    for n in fanout {
        total += n;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for oid in oids {
        out.extend_from_slice(oid.as_bytes());
    }
    for (_, crc) in entries {
        out.extend_from_slice(&crc.to_be_bytes());
    }
    // Offsets of 2 GiB and beyond go to the 64-bit table, named by index with the top bit set.
    let mut large = Vec::new();
    for (offset, _) in entries {
        if *offset < 0x8000_0000 {
            out.extend_from_slice(&(*offset as u32).to_be_bytes());
        } else {
            out.extend_from_slice(&(0x8000_0000 | large.len() as u32).to_be_bytes());
            large.push(*offset);
        }
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(checksum);
    let own: [u8; 20] = Sha1::digest(&out).into();
    out.extend_from_slice(&own);
    out
}

/// A pack being written: buffered, hashed as it goes, its length known for the entry offsets.
struct PackFile {
    file: std::io::BufWriter<std::fs::File>,
    hash: Sha1,
    len: u64,
}

impl PackFile {
    fn create(path: &Path) -> std::io::Result<PackFile> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .or_else(|e| {
                // A temp file left by a run that crashed in the same process id slot: it is ours to replace.
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    std::fs::File::create(path)
                } else {
                    Err(e)
                }
            })?;
        Ok(PackFile {
            file: std::io::BufWriter::with_capacity(1 << 16, file),
            hash: Sha1::new(),
            len: 0,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hash.update(bytes);
        self.len += bytes.len() as u64;
        self.file.write_all(bytes)
    }

    /// Appends the trailing checksum, syncs, and returns the checksum (the pack's name).
    fn finish(mut self) -> std::io::Result<[u8; 20]> {
        let checksum: [u8; 20] = self.hash.finalize().into();
        self.file.write_all(&checksum)?;
        let file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(checksum)
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_header_matches_the_pack_format_examples() {
        // A 100-byte blob: type 3, size 100 = 0b110_0100 -> low nibble 0100, then 110.
        assert_eq!(entry_header(3, 100), vec![0x80 | 0x30 | 0x04, 0x06]);
        assert_eq!(entry_header(1, 15), vec![0x1f]);
        assert_eq!(entry_header(2, 16), vec![0xa0, 0x01]);
        // 1 MiB + 1: 0x100001 -> nibble 1, then 0x10000 >> 0 in 7-bit groups.
        assert_eq!(entry_header(3, 0x10_0001), vec![0xb1, 0x80, 0x80, 0x04]);
    }

    /// Objects written through a mempack come out as a pack libgit2 reads back, byte for byte, from a fresh
    /// handle; objects the repository already had are not written again.
    #[test]
    fn mempack_objects_round_trip_through_the_written_pack() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let existing = repo.blob(b"already on disk\n").unwrap();
        let work = git2::Repository::open(dir.path()).unwrap();
        let odb = work.odb().unwrap();
        let mempack = odb.add_new_mempack_backend(1000).unwrap();
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let small = work.blob(b"new\n").unwrap();
        let large = work.blob(&big).unwrap();
        let mut tb = work.treebuilder(None).unwrap();
        tb.insert("a", small, 0o100644).unwrap();
        tb.insert("big", large, 0o100755).unwrap();
        tb.insert("old", existing, 0o100644).unwrap();
        let tree = tb.write().unwrap();
        let disk = repo.odb().unwrap();
        assert!(!disk.exists(small), "the new blob is only in memory");

        let pack_dir = dir.path().join(".git/objects/pack");
        let written = write_pack(
            &odb,
            &disk,
            &pack_dir,
            &[small, large, tree, existing, small],
        )
        .unwrap();
        assert_eq!(written.objects, 3);
        mempack.reset().unwrap();

        let fresh = git2::Repository::open(dir.path()).unwrap();
        assert_eq!(fresh.find_blob(small).unwrap().content(), b"new\n");
        assert_eq!(fresh.find_blob(large).unwrap().content(), &big[..]);
        let t = fresh.find_tree(tree).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.get_name("big").unwrap().filemode(), 0o100755);
        // libgit2's indexer (index-pack) on the same pack bytes: it inflates and hashes every object and checks
        // the trailer; its index must be ours byte for byte.
        let pack = written.pack.unwrap();
        let ours = std::fs::read(pack.with_extension("idx")).unwrap();
        let other = tempfile::tempdir().unwrap();
        let mut indexer = git2::Indexer::new(None, other.path(), 0, false).unwrap();
        indexer.write_all(&std::fs::read(&pack).unwrap()).unwrap();
        let name = indexer.commit().unwrap();
        assert_eq!(
            pack.file_name().unwrap().to_str().unwrap(),
            format!("pack-{name}.pack")
        );
        let theirs = std::fs::read(other.path().join(format!("pack-{name}.idx"))).unwrap();
        assert_eq!(ours, theirs);
        let again = write_pack(&odb, &disk, &pack_dir, &[small, large, tree]).unwrap();
        assert_eq!(again, Written::default(), "nothing new: nothing written");
    }
}
