//! xdl_change_compact without the indent heuristic (merges never set it): slide each group of changed lines
//! as far down as it goes, then back up to align with a change on the other side if one can be reached.
//!
//! ```text
//!   a        a          a              groups slide over equal lines; git prefers the lowest
//!  +}       }           }              position unless an earlier one lines up with a group
//!   }   ->  +}    ...   }              in the other file (then the diff has fewer hunks)
//!   b        b         +}
//! ```
//!
//! This is git v2.47's version; later gits also re-diff a group the histogram algorithm moved
//! (e417277ae9), which 2.47 does not do.

use super::Changed;

#[derive(Clone, Copy)]
struct Group {
    start: isize,
    end: isize,
}

fn group_init(ch: &Changed) -> Group {
    let mut g = Group { start: 0, end: 0 };
    while ch.get(g.end) {
        g.end += 1;
    }
    g
}

/// Moves to the next (possibly empty) group; false at the end of the file.
fn group_next(ch: &Changed, g: &mut Group) -> bool {
    if g.end == ch.len() as isize {
        return false;
    }
    g.start = g.end + 1;
    g.end = g.start;
    while ch.get(g.end) {
        g.end += 1;
    }
    true
}

/// Moves to the previous (possibly empty) group; false at the start of the file.
fn group_previous(ch: &Changed, g: &mut Group) -> bool {
    if g.start == 0 {
        return false;
    }
    g.end = g.start - 1;
    g.start = g.end;
    while ch.get(g.start - 1) {
        g.start -= 1;
    }
    true
}

fn group_slide_down(ids: &[u32], ch: &mut Changed, g: &mut Group) -> bool {
    if g.end < ch.len() as isize && ids[g.start as usize] == ids[g.end as usize] {
        ch.set(g.start, false);
        g.start += 1;
        ch.set(g.end, true);
        g.end += 1;
        while ch.get(g.end) {
            g.end += 1;
        }
        true
    } else {
        false
    }
}

fn group_slide_up(ids: &[u32], ch: &mut Changed, g: &mut Group) -> bool {
    if g.start > 0 && ids[(g.start - 1) as usize] == ids[(g.end - 1) as usize] {
        g.start -= 1;
        ch.set(g.start, true);
        g.end -= 1;
        ch.set(g.end, false);
        while ch.get(g.start - 1) {
            g.start -= 1;
        }
        true
    } else {
        false
    }
}

/// Compacts the changes of the file whose line classes are `ids` (`ch`), keeping `other` in step.
pub(super) fn change_compact(ids: &[u32], ch: &mut Changed, other: &mut Changed) {
    let mut g = group_init(ch);
    let mut go = group_init(other);
    loop {
        if g.end != g.start {
            let mut earliest_end;
            let mut end_matching_other;
            loop {
                let groupsize = g.end - g.start;
                end_matching_other = -1;
                while group_slide_up(ids, ch, &mut g) {
                    let synced = group_previous(other, &mut go);
                    debug_assert!(synced, "group sync broken sliding up");
                }
                earliest_end = g.end;
                if go.end > go.start {
                    end_matching_other = g.end;
                }
                while group_slide_down(ids, ch, &mut g) {
                    let synced = group_next(other, &mut go);
                    debug_assert!(synced, "group sync broken sliding down");
                    if go.end > go.start {
                        end_matching_other = g.end;
                    }
                }
                if groupsize == g.end - g.start {
                    break;
                }
            }
            if g.end != earliest_end && end_matching_other != -1 {
                while go.end == go.start {
                    if !group_slide_up(ids, ch, &mut g) {
                        debug_assert!(false, "match disappeared");
                        break;
                    }
                    let synced = group_previous(other, &mut go);
                    debug_assert!(synced, "group sync broken sliding to match");
                }
            }
        }
        if !group_next(ch, &mut g) {
            break;
        }
        let synced = group_next(other, &mut go);
        debug_assert!(synced, "group sync broken moving to next group");
    }
}
