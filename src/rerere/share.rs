//! Copying complete resolutions (preimage + postimage) between `.git/rr-cache` and a shared cache directory,
//! `bport rerere export` and `import`. Entries keep git's layout, so a committed `rerere-cache/` can be copied
//! back into any clone's `.git/rr-cache` by hand, too.

use super::cache::{Image, RrCache, Warning};
use super::decision;
use super::record::import_resolution;
use super::{ConflictId, Error};

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CopyOutcome {
    /// Resolutions written to the destination.
    pub copied: Vec<ConflictId>,
    /// Resolutions the destination already had.
    pub already_present: usize,
    /// Modify/delete decisions written to the destination.
    pub decisions_copied: usize,
    /// Source entries that were incomplete (no postimage) and not copied.
    pub incomplete: usize,
    /// Entries skipped in either cache.
    pub warnings: Vec<Warning>,
}

/// Copies every complete resolution of `from` into `to`; an identical pair already in `to` is not duplicated,
/// a different one goes to the next free variant.
pub fn copy_resolutions(from: &RrCache, to: &RrCache) -> Result<CopyOutcome, Error> {
    let (entries, warnings) = from.scan()?;
    let mut out = CopyOutcome {
        warnings,
        ..CopyOutcome::default()
    };
    for entry in entries {
        for (&v, files) in &entry.variants {
            if !files.complete() {
                out.incomplete += 1;
                continue;
            }
            let pre = from.read(&entry.id, Image::Preimage, v)?;
            let post = from.read(&entry.id, Image::Postimage, v)?;
            if import_resolution(to, &entry.id, &pre, &post, &mut out.warnings)? {
                out.copied.push(entry.id);
            } else {
                out.already_present += 1;
            }
        }
    }
    for key in decision::keys(from, &mut out.warnings)? {
        let Some(d) = decision::read(from, &key, &mut out.warnings)? else {
            continue;
        };
        if decision::read(to, &key, &mut out.warnings)?.is_some() {
            out.already_present += 1;
        } else {
            decision::write(to, &key, &d)?;
            out.decisions_copied += 1;
        }
    }
    Ok(out)
}

/// The `.gitattributes` an exported cache gets: preimages and postimages must survive commits byte for byte (a
/// CRLF conflict normalized by `core.autocrlf` would no longer match its id).
pub const ATTRIBUTES: &str = "* -text\n";

/// `export`: copies resolutions into `to` and makes sure `to/.gitattributes` keeps them byte-exact in git.
pub fn export(from: &RrCache, to: &RrCache) -> Result<CopyOutcome, Error> {
    if let Some(w) = to.refused_link(to.dir()) {
        return Err(Error::BadCacheEntry {
            path: w.path,
            reason: w.reason,
        });
    }
    let out = copy_resolutions(from, to)?;
    let attrs = to.dir().join(".gitattributes");
    let dir_is_real = std::fs::symlink_metadata(to.dir()).is_ok_and(|m| m.is_dir());
    if std::fs::symlink_metadata(&attrs).is_err() && dir_is_real {
        super::cache::write_atomic(&attrs, ATTRIBUTES.as_bytes())?;
    }
    Ok(out)
}
