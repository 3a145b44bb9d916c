//! xdiff's histogram diff (xhistogram.c): find the longest common run whose lines are rarest in file 1, split
//! around it, recurse; fall back to Myers on a region whose common lines all occur more than 64 times.

use super::{myers, Changed, Classified};

const MAX_CHAIN_LENGTH: u32 = 64;

/// One distinct line of the region of file 1: its first occurrence and how often it occurs.
struct Record {
    ptr: u32,
    cnt: u32,
}

#[derive(Default, Clone, Copy)]
struct Region {
    begin1: u32,
    end1: u32,
    begin2: u32,
    end2: u32,
}

pub(super) fn diff(
    a: &[&[u8]],
    b: &[&[u8]],
    cls: &Classified,
    ch1: &mut Changed,
    ch2: &mut Changed,
) {
    let mut h = Histogram {
        a,
        b,
        cls,
        ch1,
        ch2,
        by_class: vec![NO_RECORD; cls.count1.len()],
    };
    h.run(1, a.len() as i64, 1, b.len() as i64);
}

struct Histogram<'a, 'c> {
    a: &'a [&'a [u8]],
    b: &'a [&'a [u8]],
    cls: &'a Classified,
    ch1: &'c mut Changed,
    ch2: &'c mut Changed,
    /// The record of each line class in the region being scanned ([`NO_RECORD`] for none), indexed by class id.
    /// Class ids are dense, so a table does what xhistogram's hash of the region does, without hashing; it is
    /// allocated once per diff and only the region's entries are cleared after each scan (a hash
    /// map and its growth cost ~5% of a real-history run).
    by_class: Vec<u32>,
}

/// No record for this class in the current region.
const NO_RECORD: u32 = u32::MAX;

/// The scan of one region of file 1 (xhistogram's `histindex`), lines numbered from 1 as in git.
struct Index {
    records: Vec<Record>,
    by_class: Vec<u32>,
    /// Record of each line of the region.
    line_map: Vec<usize>,
    /// Next occurrence of the same line (0 = none).
    next_ptrs: Vec<u32>,
    ptr_shift: u32,
    cnt: u32,
    has_common: bool,
}

impl Index {
    fn cnt_of(&self, ptr: u32) -> u32 {
        self.records[self.line_map[(ptr - self.ptr_shift) as usize]].cnt
    }
    fn next_ptr(&self, ptr: u32) -> u32 {
        self.next_ptrs[(ptr - self.ptr_shift) as usize]
    }
}

impl Histogram<'_, '_> {
    fn id1(&self, line: u32) -> u32 {
        self.cls.ids1[(line - 1) as usize]
    }
    fn id2(&self, line: u32) -> u32 {
        self.cls.ids2[(line - 1) as usize]
    }

    fn run(&mut self, mut line1: i64, mut count1: i64, mut line2: i64, mut count2: i64) {
        loop {
            if count1 <= 0 && count2 <= 0 {
                return;
            }
            if count1 == 0 {
                for l in line2..line2 + count2 {
                    self.ch2.set((l - 1) as isize, true);
                }
                return;
            }
            if count2 == 0 {
                for l in line1..line1 + count1 {
                    self.ch1.set((l - 1) as isize, true);
                }
                return;
            }
            let (lcs, fall_back) = self.find_lcs(line1, count1, line2, count2);
            if fall_back {
                self.fall_back_to_myers(line1, count1, line2, count2);
                return;
            }
            if lcs.begin1 == 0 && lcs.begin2 == 0 {
                for l in line1..line1 + count1 {
                    self.ch1.set((l - 1) as isize, true);
                }
                for l in line2..line2 + count2 {
                    self.ch2.set((l - 1) as isize, true);
                }
                return;
            }
            self.run(
                line1,
                lcs.begin1 as i64 - line1,
                line2,
                lcs.begin2 as i64 - line2,
            );
            let end1 = line1 + count1 - 1;
            let end2 = line2 + count2 - 1;
            count1 = end1 - lcs.end1 as i64;
            line1 = lcs.end1 as i64 + 1;
            count2 = end2 - lcs.end2 as i64;
            line2 = lcs.end2 as i64 + 1;
        }
    }

    /// xdl_fall_back_diff: a full Myers diff (with its own classification, trimming and cleanup) of the
    /// region, copied back into the changed flags.
    fn fall_back_to_myers(&mut self, line1: i64, count1: i64, line2: i64, count2: i64) {
        let a = &self.a[(line1 - 1) as usize..(line1 - 1 + count1) as usize];
        let b = &self.b[(line2 - 1) as usize..(line2 - 1 + count2) as usize];
        let cls = super::classify(a, b);
        let mut c1 = Changed::new(a.len());
        let mut c2 = Changed::new(b.len());
        myers::diff(&cls, &mut c1, &mut c2);
        for i in 0..a.len() {
            self.ch1
                .set((line1 - 1) as isize + i as isize, c1.get(i as isize));
        }
        for i in 0..b.len() {
            self.ch2
                .set((line2 - 1) as isize + i as isize, c2.get(i as isize));
        }
    }

    /// Returns the chosen common region and whether to fall back to Myers.
    fn find_lcs(&mut self, line1: i64, count1: i64, line2: i64, count2: i64) -> (Region, bool) {
        let line1 = line1 as u32;
        let line2 = line2 as u32;
        let end1 = line1 + count1 as u32 - 1;
        let end2 = line2 + count2 as u32 - 1;
        let mut index = Index {
            records: Vec::new(),
            by_class: std::mem::take(&mut self.by_class),
            line_map: vec![0; count1 as usize],
            next_ptrs: vec![0; count1 as usize],
            ptr_shift: line1,
            cnt: 0,
            has_common: false,
        };
        // scanA: walk file 1's region backwards so each record ends up pointing at its first occurrence.
        let mut ptr = end1;
        while ptr >= line1 {
            let id = self.id1(ptr);
            let slot = (ptr - line1) as usize;
            match index.by_class[id as usize] {
                NO_RECORD => {
                    index.by_class[id as usize] = index.records.len() as u32;
                    index.line_map[slot] = index.records.len();
                    index.records.push(Record { ptr, cnt: 1 });
                }
                r => {
                    let r = r as usize;
                    let rec = &mut index.records[r];
                    index.next_ptrs[slot] = rec.ptr;
                    rec.ptr = ptr;
                    rec.cnt = rec.cnt.saturating_add(1);
                    index.line_map[slot] = r;
                }
            }
            ptr -= 1;
        }

        index.cnt = MAX_CHAIN_LENGTH + 1;
        let mut lcs = Region::default();
        let mut b_ptr = line2;
        while b_ptr <= end2 {
            b_ptr = self.try_lcs(&mut index, &mut lcs, b_ptr, line1, end1, line2, end2);
        }
        let fall_back = index.has_common && MAX_CHAIN_LENGTH < index.cnt;
        for ptr in line1..=end1 {
            index.by_class[self.id1(ptr) as usize] = NO_RECORD;
        }
        self.by_class = index.by_class;
        (lcs, fall_back)
    }

    #[allow(clippy::too_many_arguments)]
    fn try_lcs(
        &self,
        index: &mut Index,
        lcs: &mut Region,
        b_ptr: u32,
        line1: u32,
        end1: u32,
        line2: u32,
        end2: u32,
    ) -> u32 {
        let mut b_next = b_ptr + 1;
        let r = index.by_class[self.id2(b_ptr) as usize];
        if r == NO_RECORD {
            return b_next;
        }
        let r = r as usize;
        let (first, rec_cnt) = (index.records[r].ptr, index.records[r].cnt);
        if rec_cnt > index.cnt {
            index.has_common = true;
            return b_next;
        }
        let mut a_s = first;
        index.has_common = true;
        loop {
            let mut np = index.next_ptr(a_s);
            let mut bs = b_ptr;
            let mut ae = a_s;
            let mut be = bs;
            let mut rc = rec_cnt;
            while line1 < a_s && line2 < bs && self.id1(a_s - 1) == self.id2(bs - 1) {
                a_s -= 1;
                bs -= 1;
                if 1 < rc {
                    rc = rc.min(index.cnt_of(a_s));
                }
            }
            while ae < end1 && be < end2 && self.id1(ae + 1) == self.id2(be + 1) {
                ae += 1;
                be += 1;
                if 1 < rc {
                    rc = rc.min(index.cnt_of(ae));
                }
            }
            if b_next <= be {
                b_next = be + 1;
            }
            if lcs.end1 - lcs.begin1 < ae - a_s || rc < index.cnt {
                *lcs = Region {
                    begin1: a_s,
                    begin2: bs,
                    end1: ae,
                    end2: be,
                };
                index.cnt = rc;
            }
            if np == 0 {
                break;
            }
            while np <= ae {
                np = index.next_ptr(np);
                if np == 0 {
                    return b_next;
                }
            }
            a_s = np;
        }
        b_next
    }
}
