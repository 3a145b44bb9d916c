//! xdiff's Myers diff (xprepare.c + xdiffi.c): trim common ends, discard lines that cannot match, then
//! divide and conquer with `xdl_split`, including its cost heuristics, so hunks split where git's do.

use super::{Changed, Classified};
use std::ops::ControlFlow;

const MAX_COST_MIN: i64 = 256;
const HEUR_MIN_COST: i64 = 256;
const SNAKE_CNT: i64 = 20;
const K_HEUR: i64 = 4;
const KPDIS_RUN: i64 = 4;
const MAX_EQLIMIT: i64 = 1024;
const SIMSCAN_WINDOW: i64 = 100;
const LINE_MAX: i64 = i64::MAX;

/// xdl_bogosqrt: a power-of-two square root estimate.
fn bogosqrt(mut n: i64) -> i64 {
    let mut i = 1;
    while n > 0 {
        i <<= 1;
        n >>= 2;
    }
    i
}

/// The records Myers actually compares after cleanup: class ids plus their original line index.
struct Reff {
    ha: Vec<u32>,
    rindex: Vec<usize>,
}

/// Marks the changed lines of both files (xdl_do_diff for the classic algorithm).
pub(super) fn diff(cls: &Classified, ch1: &mut Changed, ch2: &mut Changed) {
    let n1 = cls.ids1.len() as i64;
    let n2 = cls.ids2.len() as i64;
    // xdl_trim_ends
    let lim = n1.min(n2);
    let mut i = 0;
    while i < lim && cls.ids1[i as usize] == cls.ids2[i as usize] {
        i += 1;
    }
    let dstart = i;
    let rest = lim - dstart;
    let mut j = 0;
    while j < rest && cls.ids1[(n1 - 1 - j) as usize] == cls.ids2[(n2 - 1 - j) as usize] {
        j += 1;
    }
    let dend1 = n1 - j - 1;
    let dend2 = n2 - j - 1;

    let r1 = cleanup(&cls.ids1, &cls.count2, dstart, dend1, ch1);
    let r2 = cleanup(&cls.ids2, &cls.count1, dstart, dend2, ch2);

    let nreff1 = r1.ha.len() as i64;
    let nreff2 = r2.ha.len() as i64;
    let ndiags = nreff1 + nreff2 + 3;
    let mut kvdf = vec![0i64; (ndiags + 1) as usize];
    let mut kvdb = vec![0i64; (ndiags + 1) as usize];
    let mut env = Env {
        r1: &r1,
        r2: &r2,
        kvdf: &mut kvdf,
        kvdb: &mut kvdb,
        base: nreff2 + 1,
        mxcost: bogosqrt(ndiags).max(MAX_COST_MIN),
        ch1,
        ch2,
    };
    env.recs_cmp(0, nreff1, 0, nreff2, false);
}

/// xdl_cleanup_records for one file: keeps lines with matches on the other side (and multi-match lines unless
/// they sit in a run of unmatched ones); the rest are marked changed up front.
fn cleanup(ids: &[u32], other_count: &[u32], dstart: i64, dend: i64, ch: &mut Changed) -> Reff {
    let n = ids.len() as i64;
    let mlim = bogosqrt(n).min(MAX_EQLIMIT);
    let mut dis = vec![0u8; (n + 1).max(1) as usize];
    for i in dstart..=dend {
        let nm = other_count[ids[i as usize] as usize] as i64;
        dis[i as usize] = if nm == 0 {
            0
        } else if nm >= mlim {
            2
        } else {
            1
        };
    }
    let mut reff = Reff {
        ha: Vec::new(),
        rindex: Vec::new(),
    };
    for i in dstart..=dend {
        let d = dis[i as usize];
        if d == 1 || (d == 2 && !clean_mmatch(&dis, i, dstart, dend)) {
            reff.rindex.push(i as usize);
            reff.ha.push(ids[i as usize]);
        } else {
            ch.set(i as isize, true);
        }
    }
    reff
}

/// xdl_clean_mmatch: whether the multi-match line `i` sits inside a run dominated by unmatched lines.
fn clean_mmatch(dis: &[u8], i: i64, mut s: i64, mut e: i64) -> bool {
    if i - s > SIMSCAN_WINDOW {
        s = i - SIMSCAN_WINDOW;
    }
    if e - i > SIMSCAN_WINDOW {
        e = i + SIMSCAN_WINDOW;
    }
    let (mut rdis0, mut rpdis0) = (0i64, 1i64);
    let mut r = 1;
    while i - r >= s {
        match dis[(i - r) as usize] {
            0 => rdis0 += 1,
            2 => rpdis0 += 1,
            _ => break,
        }
        r += 1;
    }
    if rdis0 == 0 {
        return false;
    }
    let (mut rdis1, mut rpdis1) = (0i64, 1i64);
    r = 1;
    while i + r <= e {
        match dis[(i + r) as usize] {
            0 => rdis1 += 1,
            2 => rpdis1 += 1,
            _ => break,
        }
        r += 1;
    }
    if rdis1 == 0 {
        return false;
    }
    rdis1 += rdis0;
    rpdis1 += rpdis0;
    rpdis1 * KPDIS_RUN < rpdis1 + rdis1
}

/// The box `split` searches: lines `off1..lim1` of file 1 against `off2..lim2` of file 2.
#[derive(Clone, Copy)]
struct Bounds {
    off1: i64,
    lim1: i64,
    off2: i64,
    lim2: i64,
}

/// The diagonals `split`'s searches span: forward `fmin..=fmax` around `fmid`, backward `bmin..=bmax` around
/// `bmid`, both within `dmin..=dmax`; `odd` when the two middles differ by an odd number, so the forward
/// search is the one that can meet the other.
struct Reach {
    dmin: i64,
    dmax: i64,
    fmid: i64,
    bmid: i64,
    odd: bool,
    fmin: i64,
    fmax: i64,
    bmin: i64,
    bmax: i64,
}

struct Split {
    i1: i64,
    i2: i64,
    min_lo: bool,
    min_hi: bool,
}

struct Env<'a> {
    r1: &'a Reff,
    r2: &'a Reff,
    kvdf: &'a mut [i64],
    kvdb: &'a mut [i64],
    /// Offset of diagonal 0 in the k-vectors (diagonals run from -(nreff2+1) to nreff1+1).
    base: i64,
    mxcost: i64,
    ch1: &'a mut Changed,
    ch2: &'a mut Changed,
}

impl Env<'_> {
    fn h1(&self, i: i64) -> u32 {
        self.r1.ha[i as usize]
    }
    fn h2(&self, i: i64) -> u32 {
        self.r2.ha[i as usize]
    }
    fn f(&self, d: i64) -> i64 {
        self.kvdf[(d + self.base) as usize]
    }
    fn set_f(&mut self, d: i64, v: i64) {
        self.kvdf[(d + self.base) as usize] = v;
    }
    fn b(&self, d: i64) -> i64 {
        self.kvdb[(d + self.base) as usize]
    }
    fn set_b(&mut self, d: i64, v: i64) {
        self.kvdb[(d + self.base) as usize] = v;
    }

    /// xdl_recs_cmp: shrink the box by its common ends, then split it at the middle snake and recurse.
    fn recs_cmp(
        &mut self,
        mut off1: i64,
        mut lim1: i64,
        mut off2: i64,
        mut lim2: i64,
        need_min: bool,
    ) {
        while off1 < lim1 && off2 < lim2 && self.h1(off1) == self.h2(off2) {
            off1 += 1;
            off2 += 1;
        }
        while off1 < lim1 && off2 < lim2 && self.h1(lim1 - 1) == self.h2(lim2 - 1) {
            lim1 -= 1;
            lim2 -= 1;
        }
        if off1 == lim1 {
            for i in off2..lim2 {
                let line = self.r2.rindex[i as usize];
                self.ch2.set(line as isize, true);
            }
        } else if off2 == lim2 {
            for i in off1..lim1 {
                let line = self.r1.rindex[i as usize];
                self.ch1.set(line as isize, true);
            }
        } else {
            let spl = self.split(off1, lim1, off2, lim2, need_min);
            self.recs_cmp(off1, spl.i1, off2, spl.i2, spl.min_lo);
            self.recs_cmp(spl.i1, lim1, spl.i2, lim2, spl.min_hi);
        }
    }

    /// xdl_split: the middle snake of the box, or a heuristic cut when the edit cost grows too large. Each
    /// round moves the forward and the backward search one edit further; when they have not met, a cut is
    /// taken after a long snake (`snake_cut_*`) or once the cost reaches `mxcost` (`cost_cut`).
    fn split(&mut self, off1: i64, lim1: i64, off2: i64, lim2: i64, need_min: bool) -> Split {
        let bx = Bounds {
            off1,
            lim1,
            off2,
            lim2,
        };
        let fmid = off1 - off2;
        let bmid = lim1 - lim2;
        let mut r = Reach {
            dmin: off1 - lim2,
            dmax: lim1 - off2,
            fmid,
            bmid,
            odd: (fmid - bmid) & 1 != 0,
            fmin: fmid,
            fmax: fmid,
            bmin: bmid,
            bmax: bmid,
        };

        self.set_f(fmid, off1);
        self.set_b(bmid, lim1);

        let mut ec: i64 = 1;
        loop {
            let got_snake = match self.forward(&mut r, bx) {
                ControlFlow::Break(spl) => return spl,
                ControlFlow::Continue(snake) => snake,
            };
            let got_snake = match self.backward(&mut r, bx) {
                ControlFlow::Break(spl) => return spl,
                ControlFlow::Continue(snake) => got_snake || snake,
            };

            if need_min {
                ec += 1;
                continue;
            }

            if got_snake && ec > HEUR_MIN_COST {
                if let Some(spl) = self.snake_cut_forward(&r, bx, ec) {
                    return spl;
                }
                if let Some(spl) = self.snake_cut_backward(&r, bx, ec) {
                    return spl;
                }
            }

            if ec >= self.mxcost {
                return self.cost_cut(&r, bx);
            }
            ec += 1;
        }
    }

    /// One forward round: widens fmin..fmax and follows each diagonal's furthest path and its snake; breaks
    /// with the split where it overlaps the backward search (odd delta), else says whether a snake was long.
    fn forward(&mut self, r: &mut Reach, bx: Bounds) -> ControlFlow<Split, bool> {
        let mut got_snake = false;
        if r.fmin > r.dmin {
            r.fmin -= 1;
            self.set_f(r.fmin - 1, -1);
        } else {
            r.fmin += 1;
        }
        if r.fmax < r.dmax {
            r.fmax += 1;
            self.set_f(r.fmax + 1, -1);
        } else {
            r.fmax -= 1;
        }
        let mut d = r.fmax;
        while d >= r.fmin {
            let mut i1 = if self.f(d - 1) >= self.f(d + 1) {
                self.f(d - 1) + 1
            } else {
                self.f(d + 1)
            };
            let prev1 = i1;
            let mut i2 = i1 - d;
            while i1 < bx.lim1 && i2 < bx.lim2 && self.h1(i1) == self.h2(i2) {
                i1 += 1;
                i2 += 1;
            }
            if i1 - prev1 > SNAKE_CNT {
                got_snake = true;
            }
            self.set_f(d, i1);
            if r.odd && r.bmin <= d && d <= r.bmax && self.b(d) <= i1 {
                return ControlFlow::Break(Split {
                    i1,
                    i2,
                    min_lo: true,
                    min_hi: true,
                });
            }
            d -= 2;
        }
        ControlFlow::Continue(got_snake)
    }

    /// One backward round, the mirror of `forward` (meeting it on an even delta).
    fn backward(&mut self, r: &mut Reach, bx: Bounds) -> ControlFlow<Split, bool> {
        let mut got_snake = false;
        if r.bmin > r.dmin {
            r.bmin -= 1;
            self.set_b(r.bmin - 1, LINE_MAX);
        } else {
            r.bmin += 1;
        }
        if r.bmax < r.dmax {
            r.bmax += 1;
            self.set_b(r.bmax + 1, LINE_MAX);
        } else {
            r.bmax -= 1;
        }
        let mut d = r.bmax;
        while d >= r.bmin {
            let mut i1 = if self.b(d - 1) < self.b(d + 1) {
                self.b(d - 1)
            } else {
                self.b(d + 1) - 1
            };
            let prev1 = i1;
            let mut i2 = i1 - d;
            while i1 > bx.off1 && i2 > bx.off2 && self.h1(i1 - 1) == self.h2(i2 - 1) {
                i1 -= 1;
                i2 -= 1;
            }
            if prev1 - i1 > SNAKE_CNT {
                got_snake = true;
            }
            self.set_b(d, i1);
            if !r.odd && r.fmin <= d && d <= r.fmax && i1 <= self.f(d) {
                return ControlFlow::Break(Split {
                    i1,
                    i2,
                    min_lo: true,
                    min_hi: true,
                });
            }
            d -= 2;
        }
        ControlFlow::Continue(got_snake)
    }

    /// xdl_split's heuristic on the forward paths: the furthest-reaching one (for its cost) that ends in a
    /// snake of SNAKE_CNT lines, if any.
    fn snake_cut_forward(&self, r: &Reach, bx: Bounds, ec: i64) -> Option<Split> {
        let Bounds {
            off1,
            lim1,
            off2,
            lim2,
        } = bx;
        let mut best = 0;
        let mut spl = Split {
            i1: 0,
            i2: 0,
            min_lo: true,
            min_hi: false,
        };
        let mut d = r.fmax;
        while d >= r.fmin {
            let dd = if d > r.fmid { d - r.fmid } else { r.fmid - d };
            let i1 = self.f(d);
            let i2 = i1 - d;
            let v = (i1 - off1) + (i2 - off2) - dd;
            if v > K_HEUR * ec
                && v > best
                && off1 + SNAKE_CNT <= i1
                && i1 < lim1
                && off2 + SNAKE_CNT <= i2
                && i2 < lim2
            {
                let mut k = 1;
                while self.h1(i1 - k) == self.h2(i2 - k) {
                    if k == SNAKE_CNT {
                        best = v;
                        spl.i1 = i1;
                        spl.i2 = i2;
                        break;
                    }
                    k += 1;
                }
            }
            d -= 2;
        }
        (best > 0).then_some(spl)
    }

    /// The same heuristic on the backward paths: one that starts with a snake of SNAKE_CNT lines.
    fn snake_cut_backward(&self, r: &Reach, bx: Bounds, ec: i64) -> Option<Split> {
        let Bounds {
            off1,
            lim1,
            off2,
            lim2,
        } = bx;
        let mut best = 0;
        let mut spl = Split {
            i1: 0,
            i2: 0,
            min_lo: false,
            min_hi: true,
        };
        let mut d = r.bmax;
        while d >= r.bmin {
            let dd = if d > r.bmid { d - r.bmid } else { r.bmid - d };
            let i1 = self.b(d);
            let i2 = i1 - d;
            let v = (lim1 - i1) + (lim2 - i2) - dd;
            if v > K_HEUR * ec
                && v > best
                && off1 < i1
                && i1 <= lim1 - SNAKE_CNT
                && off2 < i2
                && i2 <= lim2 - SNAKE_CNT
            {
                let mut k = 0;
                while self.h1(i1 + k) == self.h2(i2 + k) {
                    if k == SNAKE_CNT - 1 {
                        best = v;
                        spl.i1 = i1;
                        spl.i2 = i2;
                        break;
                    }
                    k += 1;
                }
            }
            d -= 2;
        }
        (best > 0).then_some(spl)
    }

    /// The cut once the cost reaches `mxcost`: the furthest forward or backward path, whichever got further
    /// into the box.
    fn cost_cut(&self, r: &Reach, bx: Bounds) -> Split {
        let Bounds {
            off1,
            lim1,
            off2,
            lim2,
        } = bx;
        let (mut fbest, mut fbest1) = (-1i64, -1i64);
        let mut d = r.fmax;
        while d >= r.fmin {
            let mut i1 = self.f(d).min(lim1);
            let mut i2 = i1 - d;
            if lim2 < i2 {
                i1 = lim2 + d;
                i2 = lim2;
            }
            if fbest < i1 + i2 {
                fbest = i1 + i2;
                fbest1 = i1;
            }
            d -= 2;
        }
        let (mut bbest, mut bbest1) = (LINE_MAX, LINE_MAX);
        d = r.bmax;
        while d >= r.bmin {
            let mut i1 = off1.max(self.b(d));
            let mut i2 = i1 - d;
            if i2 < off2 {
                i1 = off2 + d;
                i2 = off2;
            }
            if i1 + i2 < bbest {
                bbest = i1 + i2;
                bbest1 = i1;
            }
            d -= 2;
        }
        if (lim1 + lim2) - bbest < fbest - (off1 + off2) {
            Split {
                i1: fbest1,
                i2: fbest - fbest1,
                min_lo: true,
                min_hi: false,
            }
        } else {
            Split {
                i1: bbest1,
                i2: bbest - bbest1,
                min_lo: false,
                min_hi: true,
            }
        }
    }
}
