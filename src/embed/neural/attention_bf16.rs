//! Self-attention for heads 32 wide with AVX512-BF16: the scores `q · kᵀ / √d` and the
//! context `softmax · v` as bf16 products (`vdpbf16ps`) summed in f32, the softmax
//! itself in f32.
//!
//! Owns, per head: q rounded to bf16 pairs, k (scaled by 1/√d) and v packed into the
//! pair-interleaved lines `vdpbf16ps` reads, then for six query rows at a time their
//! scores, max, exponentials and sum while they sit in the L1 cache, the exponentials
//! rounded to bf16 pairs, and the context scaled by 1/sum. Rounding q, k, v and the
//! softmax weights to bf16 moves MiniLM's sentence vectors by a cosine of about 2e-6
//! (next to about 1.5e-5 for the linear layers in bf16).
//!
//! Must never run without AVX512-BF16 (the caller checks, `avx512::kind`), and never
//! read or write outside the scratch it sizes itself and the slices it is handed
//! (their lengths are checked by the caller, `attention::attend`).

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;
use std::cell::RefCell;

use super::ops::simd::exp;

/// Query rows per block.
const MR: usize = 6;

/// Per-thread scratch, reused across calls.
#[derive(Default)]
struct Scratch {
    /// The head's queries as bf16 pairs: l rows of 16 words.
    q: Vec<u32>,
    /// Keys × scale: for each of 16 pairs of dimensions, `lp / 16` lines of 16 keys.
    k: Vec<[u32; 16]>,
    /// Values: for each pair of keys, two lines of 16 dimensions.
    v: Vec<[u32; 16]>,
    /// One block's scores (6 rows of `lp`).
    s: Vec<f32>,
    /// One block's exponentials as bf16 pairs (6 rows of `lp / 2`).
    p: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// `ctx` (l × h) from `qkv` (l × 3h) with `heads` heads of 32.
///
/// # Safety
/// AVX512-BF16 present; `qkv.len() >= l * 3h`, `ctx.len() >= l * h`, `h == 32 * heads`,
/// `l > 0`.
pub(super) unsafe fn heads32(
    ctx: &mut [f32],
    qkv: &[f32],
    l: usize,
    h: usize,
    heads: usize,
    scale: f32,
) {
    SCRATCH.with(|s| run(&mut s.borrow_mut(), ctx, qkv, l, h, heads, scale));
}

#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn run(
    sc: &mut Scratch,
    ctx: &mut [f32],
    qkv: &[f32],
    l: usize,
    h: usize,
    heads: usize,
    scale: f32,
) {
    debug_assert!(qkv.len() >= l * 3 * h && ctx.len() >= l * h && h == 32 * heads);
    // Keys padded to a whole number of 32 (pairs of 16-key lines); the padding keys and
    // values are 0, and their scores are masked out of the softmax.
    let lp = l.next_multiple_of(32);
    sc.q.clear();
    sc.q.resize(l * 16, 0);
    sc.k.clear();
    sc.k.resize(16 * lp / 16, [0; 16]);
    sc.v.clear();
    sc.v.resize(lp, [0; 16]);
    sc.s.clear();
    sc.s.resize(MR * lp, 0.0);
    sc.p.clear();
    sc.p.resize(MR * lp / 2, 0);
    let scale = _mm512_set1_ps(scale);
    // Value lines interleave two keys' dimensions: words (a[c], b[c]) for c in 0..16,
    // then for c in 16..32 (vpermt2w: index bit 5 picks the second operand).
    let idx0 = _mm512_loadu_si512(INTERLEAVE.as_ptr().cast());
    let idx1 = _mm512_add_epi16(idx0, _mm512_set1_epi16(16));
    let lines = lp / 16;
    let mut words = [0u32; 16];
    for head in 0..heads {
        for (j, row) in qkv.chunks_exact(3 * h).take(l).enumerate() {
            let q = &row[head * 32..][..32];
            _mm512_storeu_si512(sc.q[j * 16..][..16].as_mut_ptr().cast(), pairs(q, None));
            let k = &row[h + head * 32..][..32];
            _mm512_storeu_si512(words.as_mut_ptr().cast(), pairs(k, Some(scale)));
            for (t, w) in words.iter().enumerate() {
                sc.k[t * lines + j / 16][j % 16] = *w;
            }
        }
        let mut rows = qkv.chunks_exact(3 * h).take(l);
        let mut t = 0;
        while let Some(first) = rows.next() {
            let a = pairs(&first[2 * h + head * 32..][..32], None);
            let b = rows.next().map_or(_mm512_setzero_si512(), |r| {
                pairs(&r[2 * h + head * 32..][..32], None)
            });
            _mm512_storeu_si512(
                sc.v[2 * t].as_mut_ptr().cast(),
                _mm512_permutex2var_epi16(a, idx0, b),
            );
            _mm512_storeu_si512(
                sc.v[2 * t + 1].as_mut_ptr().cast(),
                _mm512_permutex2var_epi16(a, idx1, b),
            );
            t += 1;
        }
        for m in (0..l).step_by(MR) {
            let b = Block {
                q: sc.q.as_ptr().add(m * 16),
                k: sc.k.as_ptr(),
                v: sc.v.as_ptr(),
                s: sc.s.as_mut_ptr(),
                p: sc.p.as_mut_ptr(),
                lp,
                l,
                c: ctx.as_mut_ptr().add(m * h + head * 32),
                ldc: h,
            };
            match l - m {
                1 => b.run::<1>(),
                2 => b.run::<2>(),
                3 => b.run::<3>(),
                4 => b.run::<4>(),
                5 => b.run::<5>(),
                _ => b.run::<MR>(),
            }
        }
    }
}

/// For word i of a value line: even i take word i/2 of the first key, odd i word
/// i/2 of the second (32 + i/2).
const INTERLEAVE: [u16; 32] = {
    let mut t = [0u16; 32];
    let mut i = 0;
    while i < 32 {
        t[i] = if i % 2 == 0 {
            (i / 2) as u16
        } else {
            32 + (i / 2) as u16
        };
        i += 1;
    }
    t
};

/// 32 floats (times `scale`) as 16 bf16 pairs, rounded to nearest even.
#[target_feature(enable = "avx512f,avx512bf16")]
fn pairs(x: &[f32], scale: Option<__m512>) -> __m512i {
    let x = &x[..32];
    // SAFETY: x holds 32 floats; unaligned loads.
    let (mut lo, mut hi) = unsafe {
        (
            _mm512_loadu_ps(x.as_ptr()),
            _mm512_loadu_ps(x.as_ptr().add(16)),
        )
    };
    if let Some(s) = scale {
        lo = _mm512_mul_ps(lo, s);
        hi = _mm512_mul_ps(hi, s);
    }
    // SAFETY: same size, any bit pattern is a valid integer vector.
    unsafe { std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo)) }
}

/// One block of up to 6 query rows of one head (see [`Scratch`] for the layouts):
/// `q` its first query, `c` its first context row at the head's column (rows `ldc`
/// apart), `l` tokens padded to `lp`.
struct Block {
    q: *const u32,
    k: *const [u32; 16],
    v: *const [u32; 16],
    s: *mut f32,
    p: *mut u32,
    lp: usize,
    l: usize,
    c: *mut f32,
    ldc: usize,
}

impl Block {
    /// Scores, softmax and context for `R` rows.
    ///
    /// # Safety
    /// AVX512-BF16 present; the scratch behind the pointers as `run` sized it, `R` rows
    /// of queries and of context.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn run<const R: usize>(&self) {
        let mut col = 0;
        while col + 64 <= self.lp {
            self.scores::<R, 4>(col);
            col += 64;
        }
        while col < self.lp {
            self.scores::<R, 1>(col);
            col += 16;
        }
        let mut inv = [0f32; R];
        for (r, inv) in inv.iter_mut().enumerate() {
            *inv = 1.0 / self.softmax_row(r);
        }
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        for t in 0..self.lp / 2 {
            let v = self.v.add(t * 2);
            let v0: __m512bh = std::mem::transmute(_mm512_loadu_si512(v.cast()));
            let v1: __m512bh = std::mem::transmute(_mm512_loadu_si512(v.add(1).cast()));
            for (r, acc) in acc.iter_mut().enumerate() {
                let p: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*self.p.add(r * self.lp / 2 + t) as i32));
                acc[0] = _mm512_dpbf16_ps(acc[0], p, v0);
                acc[1] = _mm512_dpbf16_ps(acc[1], p, v1);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let c = self.c.add(r * self.ldc);
            let s = _mm512_set1_ps(inv[r]);
            _mm512_storeu_ps(c, _mm512_mul_ps(acc[0], s));
            _mm512_storeu_ps(c.add(16), _mm512_mul_ps(acc[1], s));
        }
    }

    /// `s[r][col..col + 16V] = q[r] · k[.., col..col + 16V]` for `R` rows.
    ///
    /// # Safety
    /// As for `run`, with `col + 16V <= lp`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn scores<const R: usize, const V: usize>(&self, col: usize) {
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        let blocks = self.lp / 16;
        for t in 0..16 {
            let k = self.k.add(t * blocks + col / 16);
            let kv: [__m512bh; V] =
                std::array::from_fn(|v| std::mem::transmute(_mm512_loadu_si512(k.add(v).cast())));
            for (r, acc) in acc.iter_mut().enumerate() {
                let q: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*self.q.add(r * 16 + t) as i32));
                for v in 0..V {
                    acc[v] = _mm512_dpbf16_ps(acc[v], q, kv[v]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (v, a) in acc.iter().enumerate() {
                _mm512_storeu_ps(self.s.add(r * self.lp + col + v * 16), *a);
            }
        }
    }

    /// Row `r`'s exponentials `e^(s - max)` over its first `l` scores (0 past them),
    /// stored as bf16 pairs in `p`; returns their sum.
    ///
    /// # Safety
    /// As for `run`, with `r < 6`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn softmax_row(&self, r: usize) -> f32 {
        let s = self.s.add(r * self.lp);
        let mask = |col: usize| -> __mmask16 {
            let valid = self.l.saturating_sub(col).min(16);
            ((1u32 << valid) - 1) as __mmask16
        };
        let mut max = _mm512_set1_ps(f32::NEG_INFINITY);
        for col in (0..self.lp).step_by(16) {
            max = _mm512_mask_max_ps(max, mask(col), max, _mm512_loadu_ps(s.add(col)));
        }
        let max = _mm512_set1_ps(_mm512_reduce_max_ps(max));
        let mut sum = _mm512_setzero_ps();
        let p = self.p.add(r * self.lp / 2);
        for col in (0..self.lp).step_by(32) {
            let lo = _mm512_maskz_mov_ps(
                mask(col),
                exp(_mm512_sub_ps(_mm512_loadu_ps(s.add(col)), max)),
            );
            let hi = _mm512_maskz_mov_ps(
                mask(col + 16),
                exp(_mm512_sub_ps(_mm512_loadu_ps(s.add(col + 16)), max)),
            );
            sum = _mm512_add_ps(sum, _mm512_add_ps(lo, hi));
            let pairs: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_storeu_si512(p.add(col / 2).cast(), pairs);
        }
        _mm512_reduce_add_ps(sum)
    }
}
