//! git's conflict id and preimage normalization (rerere.c `handle_path`/`handle_conflict`).
//!
//! For each top-level conflict hunk the two sides are collected (labels dropped, a diff3 `|||||||` base section
//! dropped, a nested conflict normalized into the side it sits in), ordered bytewise, and hashed as
//! `side1 NUL side2 NUL`; one SHA-1 runs over all hunks of the file in order. The normalized text (sides sorted,
//! bare markers) is the `preimage` git stores. Markers are recognized as `is_conflict_marker_line` does: exactly
//! `marker_size` marker characters, then whitespace, and `<`/`>` markers need a space (a label) after them.

use sha1::{Digest, Sha1};
use std::fmt;
use std::str::FromStr;

/// git's default `conflict-marker-size`.
pub const DEFAULT_MARKER_SIZE: usize = 7;

/// A rerere conflict id: the SHA-1 that names an `rr-cache/<id>/` directory.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConflictId([u8; 20]);

impl ConflictId {
    /// The raw hash bytes.
    pub fn as_bytes(&self) -> &[u8; 20] {
        &self.0
    }
}

impl fmt::Display for ConflictId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ConflictId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConflictId({self})")
    }
}

/// A string that is not 40 lowercase hex digits (the only names git creates under rr-cache).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a conflict id (40 lowercase hex digits)")]
pub struct BadConflictId(pub String);

impl FromStr for ConflictId {
    type Err = BadConflictId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadConflictId(s.to_owned());
        if s.len() != 40 {
            return Err(bad());
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; 20];
        for (i, pair) in s.as_bytes().chunks(2).enumerate() {
            let hi = digit(pair[0]).ok_or_else(bad)?;
            let lo = digit(pair[1]).ok_or_else(bad)?;
            out[i] = hi << 4 | lo;
        }
        Ok(ConflictId(out))
    }
}

/// A conflict hunk that does not close: git's "could not parse conflict hunks".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("conflict hunk starting at line {line} is not terminated or has its markers out of order")]
pub struct ParseError {
    /// 1-based line of the hunk's `<<<<<<<` marker.
    pub line: usize,
}

/// A conflicted file's id and normalized text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// The conflict id over every top-level hunk.
    pub id: ConflictId,
    /// How many top-level conflict hunks the file has.
    pub hunks: usize,
    /// The text git writes as `preimage`/`thisimage`: sides sorted, markers without labels, no base.
    pub preimage: Vec<u8>,
}

/// Which marker a line is, if any (git's `is_conflict_marker_line`).
pub fn marker_of(line: &[u8], marker_size: usize) -> Option<u8> {
    if line.len() < marker_size + 1 {
        return None;
    }
    let first = line[0];
    if !matches!(first, b'<' | b'=' | b'>' | b'|') {
        return None;
    }
    if line[1..marker_size].iter().any(|&c| c != first) {
        return None;
    }
    let next = line[marker_size];
    if matches!(first, b'<' | b'>') && next != b' ' {
        return None;
    }
    // C isspace: space, \t, \n, \v, \f, \r.
    if !matches!(next, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return None;
    }
    Some(first)
}

/// Lines with their newline, as `strbuf_getwholeline` reads them.
struct Lines<'a> {
    rest: &'a [u8],
    number: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let end = self
            .rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.rest.len(), |p| p + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        self.number += 1;
        Some(line)
    }
}

fn put_marker(out: &mut Vec<u8>, ch: u8, size: usize) {
    out.extend(std::iter::repeat_n(ch, size));
    out.push(b'\n');
}

/// Reads one hunk after its `<` marker; appends its normalized form to `out` and hashes it when `hasher` is
/// given (top level only, as in git). Returns false if the hunk does not close properly.
fn handle_conflict(
    lines: &mut Lines<'_>,
    marker_size: usize,
    out: &mut Vec<u8>,
    hasher: Option<&mut Sha1>,
) -> bool {
    #[derive(PartialEq)]
    enum Part {
        One,
        Two,
        Base,
    }
    let mut part = Part::One;
    let mut one = Vec::new();
    let mut two = Vec::new();
    while let Some(line) = lines.next() {
        match marker_of(line, marker_size) {
            Some(b'<') => {
                let mut nested = Vec::new();
                if !handle_conflict(lines, marker_size, &mut nested, None) {
                    return false;
                }
                if part == Part::One {
                    one.extend_from_slice(&nested);
                } else {
                    two.extend_from_slice(&nested);
                }
            }
            Some(b'|') => {
                if part != Part::One {
                    return false;
                }
                part = Part::Base;
            }
            Some(b'=') => {
                if part == Part::Two {
                    return false;
                }
                part = Part::Two;
            }
            Some(b'>') => {
                if part != Part::Two {
                    return false;
                }
                if one > two {
                    std::mem::swap(&mut one, &mut two);
                }
                put_marker(out, b'<', marker_size);
                out.extend_from_slice(&one);
                put_marker(out, b'=', marker_size);
                out.extend_from_slice(&two);
                put_marker(out, b'>', marker_size);
                if let Some(h) = hasher {
                    h.update(&one);
                    h.update([0]);
                    h.update(&two);
                    h.update([0]);
                }
                return true;
            }
            _ => match part {
                Part::One => one.extend_from_slice(line),
                Part::Two => two.extend_from_slice(line),
                Part::Base => {}
            },
        }
    }
    false
}

/// Computes the conflict id and preimage of a conflicted file's content. `Ok(None)` when it has no conflict
/// hunk (git records nothing for it).
pub fn normalize(content: &[u8], marker_size: usize) -> Result<Option<Normalized>, ParseError> {
    let marker_size = if marker_size == 0 {
        DEFAULT_MARKER_SIZE
    } else {
        marker_size
    };
    let mut lines = Lines {
        rest: content,
        number: 0,
    };
    let mut hasher = Sha1::new();
    let mut preimage = Vec::with_capacity(content.len());
    let mut hunks = 0;
    while let Some(line) = lines.next() {
        if marker_of(line, marker_size) == Some(b'<') {
            let start = lines.number;
            if !handle_conflict(&mut lines, marker_size, &mut preimage, Some(&mut hasher)) {
                return Err(ParseError { line: start });
            }
            hunks += 1;
        } else {
            preimage.extend_from_slice(line);
        }
    }
    if hunks == 0 {
        return Ok(None);
    }
    Ok(Some(Normalized {
        id: ConflictId(hasher.finalize().into()),
        hunks,
        preimage,
    }))
}

/// Whether `content` still has a conflict hunk (git's "has the user resolved it?" check). A malformed hunk
/// counts as unresolved, as git refuses to record it.
pub fn has_conflicts(content: &[u8], marker_size: usize) -> bool {
    !matches!(normalize(content, marker_size), Ok(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> String {
        normalize(text.as_bytes(), 7)
            .unwrap()
            .expect("has a conflict")
            .id
            .to_string()
    }

    #[test]
    fn design_test_vector() {
        // The id git 2.47 gives this conflict (sides B\n / C\n).
        assert_eq!(
            id("a\n<<<<<<< HEAD\nB\n=======\nC\n>>>>>>> abc1234 (x)\nd\n"),
            "b5af61297bb440010b5deb18d272d0976716bc1f"
        );
    }

    #[test]
    fn side_order_labels_and_diff3_base_do_not_change_the_id() {
        let plain = id("<<<<<<< HEAD\nB\n=======\nC\n>>>>>>> x\n");
        assert_eq!(id("<<<<<<< other\nC\n=======\nB\n>>>>>>> y\n"), plain);
        assert_eq!(
            id("<<<<<<< HEAD\nB\n||||||| base\nA\n=======\nC\n>>>>>>> x\n"),
            plain
        );
    }

    #[test]
    fn preimage_is_sorted_with_bare_markers() {
        let n = normalize(b"x\n<<<<<<< ours\nZ\n=======\nA\n>>>>>>> theirs\ny\n", 7)
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(n.preimage).unwrap(),
            "x\n<<<<<<<\nA\n=======\nZ\n>>>>>>>\ny\n"
        );
        assert_eq!(n.hunks, 1);
    }

    #[test]
    fn nested_conflicts_are_normalized_into_their_side() {
        let n = normalize(
            b"<<<<<<< a\n<<<<<<< b\nQ\n=======\nP\n>>>>>>> c\n=======\nR\n>>>>>>> d\n",
            7,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            String::from_utf8(n.preimage).unwrap(),
            "<<<<<<<\n<<<<<<<\nP\n=======\nQ\n>>>>>>>\n=======\nR\n>>>>>>>\n"
        );
        let mut h = Sha1::new();
        h.update(b"<<<<<<<\nP\n=======\nQ\n>>>>>>>\n\0R\n\0");
        assert_eq!(n.id.as_bytes()[..], h.finalize()[..]);
    }

    #[test]
    fn markers_follow_conflict_marker_size_and_need_labels_on_angle_markers() {
        assert_eq!(marker_of(b"<<<<<<< x\n", 7), Some(b'<'));
        assert_eq!(marker_of(b"<<<<<<<\n", 7), None);
        assert_eq!(marker_of(b"=======\r\n", 7), Some(b'='));
        assert_eq!(marker_of(b"========\n", 7), None);
        assert_eq!(marker_of(b"=======", 7), None);
        assert_eq!(marker_of(b"<<<<<<<<<< x\n", 10), Some(b'<'));
        assert!(normalize(b"<<<<<<< x\nB\n=======\nC\n>>>>>>> y\n", 10)
            .unwrap()
            .is_none());
    }

    #[test]
    fn crlf_and_missing_newline_are_hashed_as_bytes() {
        let crlf = id("<<<<<<< a\r\nB\r\n=======\r\nC\r\n>>>>>>> b\r\n");
        let mut h = Sha1::new();
        h.update(b"B\r\n\0C\r\n\0");
        assert_eq!(crlf, ConflictId(h.finalize().into()).to_string());
    }

    #[test]
    fn unterminated_or_misordered_hunks_are_errors() {
        assert_eq!(
            normalize(b"a\n<<<<<<< x\nB\n=======\nC\n", 7),
            Err(ParseError { line: 2 })
        );
        assert_eq!(
            normalize(b"<<<<<<< x\nB\n>>>>>>> y\n", 7),
            Err(ParseError { line: 1 })
        );
        assert!(has_conflicts(b"<<<<<<< x\nB\n", 7));
        assert!(!has_conflicts(b"resolved\n", 7));
    }

    #[test]
    fn ids_parse_only_from_lowercase_hex() {
        let s = "b5af61297bb440010b5deb18d272d0976716bc1f";
        assert_eq!(s.parse::<ConflictId>().unwrap().to_string(), s);
        assert!("B5AF61297BB440010B5DEB18D272D0976716BC1F"
            .parse::<ConflictId>()
            .is_err());
        assert!("../etc".parse::<ConflictId>().is_err());
        assert!(format!("{s}0").parse::<ConflictId>().is_err());
    }
}
