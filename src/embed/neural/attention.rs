//! BERT's self-attention over one unpadded sequence: for every head, the scores `q · kᵀ / √d`, their softmax, and the context `softmax · v`.
//!
//! Owns choosing among three ways to compute it, and two of them. With AVX512-BF16
//! (and heads 32 wide, as in MiniLM and bge-small), `attention_bf16`. With AVX-512F
//! only, six query rows at a time go through scores, softmax and context while
//! their scores stay in the L1 cache, in register tiles that read q and v where they
//! lie in the fused QKV rows and a transposed copy of k made once per head; no other
//! copy, no allocation past a per-thread scratch. Otherwise, or with
//! `ENGRAM_NEURAL_AVX512=0`, two strided products per head through the `gemm` crate,
//! as before. The two f32 ways differ only in the order of additions.
//!
//! Must never execute an AVX-512 instruction unless the CPU has it, and never read or
//! write outside the slices it is handed (their lengths are checked first).

use std::cell::RefCell;

use gemm::Parallelism;

use super::avx512;
use super::ops::{mm, softmax_rows};

/// Query rows per block.
const MR: usize = 6;

/// `ctx` (l × h) = attention over `qkv` (l × 3h: queries, keys, values of all heads
/// side by side) with `heads` heads; `scores` is scratch of at least l × l.
pub(super) fn attend(
    ctx: &mut [f32],
    qkv: &[f32],
    scores: &mut [f32],
    (l, h, heads): (usize, usize, usize),
    par: Parallelism,
) {
    let d = h / heads;
    assert!(
        l > 0 && d * heads == h && qkv.len() >= l * 3 * h && ctx.len() >= l * h,
        "attention out of bounds"
    );
    let scale = 1.0 / (d as f32).sqrt();
    #[cfg(target_arch = "x86_64")]
    if d == 32 && avx512::bf16_attention() {
        // SAFETY: `bf16_attention` found AVX512-BF16; the lengths were checked above.
        unsafe { super::attention_bf16::heads32(ctx, qkv, l, h, heads, scale) };
        return;
    }
    if d == 32 && avx512::f32_kernels() {
        // SAFETY: `f32_kernels` found AVX-512F; the lengths were checked above.
        unsafe { f32_heads(ctx, qkv, l, h, heads, scale) };
        return;
    }
    gemm_heads(ctx, qkv, scores, (l, h, heads), scale, par);
}

/// The f32 AVX-512 path for heads of 32.
///
/// # Safety
/// AVX-512F present; `qkv.len() >= l * 3h`, `ctx.len() >= l * h`, `h == 32 * heads`.
unsafe fn f32_heads(ctx: &mut [f32], qkv: &[f32], l: usize, h: usize, heads: usize, scale: f32) {
    SCRATCH.with(|s| {
        let (kt, sc) = &mut *s.borrow_mut();
        heads32(ctx, qkv, l, h, heads, scale, kt, sc)
    });
}

/// Two strided `gemm` products per head: the reference the kernels are held to.
fn gemm_heads(
    ctx: &mut [f32],
    qkv: &[f32],
    scores: &mut [f32],
    (l, h, heads): (usize, usize, usize),
    scale: f32,
    par: Parallelism,
) {
    let d = h / heads;
    assert!(scores.len() >= l * l, "attention scratch too small");
    for head in 0..heads {
        let q = &qkv[head * d..];
        let k = &qkv[h + head * d..];
        let v = &qkv[2 * h + head * d..];
        // scores = q · kᵀ / √d   (l × l; q and k rows are 3h apart)
        mm(
            scores,
            l,
            l,
            d,
            (l, 1),
            q,
            (3 * h, 1),
            k,
            (1, 3 * h),
            scale,
            false,
            par,
        );
        softmax_rows(&mut scores[..l * l], l);
        // ctx[:, head] = scores · v
        mm(
            &mut ctx[head * d..],
            l,
            d,
            l,
            (h, 1),
            scores,
            (l, 1),
            v,
            (3 * h, 1),
            1.0,
            false,
            par,
        );
    }
}

thread_local! {
    /// Per thread: one head's keys transposed and scaled (32 × l rounded up to 16),
    /// and one block's scores (6 × that).
    static SCRATCH: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The AVX-512 path for heads of 32.
///
/// # Safety
/// AVX-512F present; `qkv.len() >= l * 3h`, `ctx.len() >= l * h`, `h == 32 * heads`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn heads32(
    ctx: &mut [f32],
    qkv: &[f32],
    l: usize,
    h: usize,
    heads: usize,
    scale: f32,
    kt: &mut Vec<f32>,
    sc: &mut Vec<f32>,
) {
    let lp = l.next_multiple_of(16);
    kt.clear();
    kt.resize(32 * lp, 0.0);
    sc.clear();
    sc.resize(MR * lp, 0.0);
    for head in 0..heads {
        // kᵀ · scale, 32 rows of lp (the columns past l stay 0: their scores are
        // computed but never read).
        for (j, row) in qkv.chunks_exact(3 * h).take(l).enumerate() {
            for (dd, k) in row[h + head * 32..][..32].iter().enumerate() {
                kt[dd * lp + j] = k * scale;
            }
        }
        for m in (0..l).step_by(MR) {
            let b = Block {
                q: qkv.as_ptr().add(m * 3 * h + head * 32),
                v: qkv.as_ptr().add(2 * h + head * 32),
                ldq: 3 * h,
                kt: kt.as_ptr(),
                s: sc.as_mut_ptr(),
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

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn heads32(
    _: &mut [f32],
    _: &[f32],
    _: usize,
    _: usize,
    _: usize,
    _: f32,
    _: &mut Vec<f32>,
    _: &mut Vec<f32>,
) {
    unreachable!("AVX-512 is only ever found on x86_64")
}

/// One block of up to 6 query rows of one head: `q` its first query (rows `ldq`
/// apart), `v` the head's first value row (also `ldq` apart), `kt` the transposed
/// keys (32 rows of `lp`), `s` scratch for the scores (rows of `lp`), `c` the first
/// context row at the head's column (rows `ldc` apart); `l` tokens.
#[cfg(target_arch = "x86_64")]
struct Block {
    q: *const f32,
    v: *const f32,
    ldq: usize,
    kt: *const f32,
    s: *mut f32,
    lp: usize,
    l: usize,
    c: *mut f32,
    ldc: usize,
}

#[cfg(target_arch = "x86_64")]
impl Block {
    /// Scores, softmax and context for `R` rows.
    ///
    /// # Safety
    /// AVX-512F present; `R` query rows and `l` value rows of 32 floats, 32 × `lp`
    /// keys, `R` × `lp` scores and `R` context rows of 32 floats behind the pointers.
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const R: usize>(&self) {
        use std::arch::x86_64::*;
        let mut col = 0;
        while col + 64 <= self.lp {
            self.scores::<R, 4>(col);
            col += 64;
        }
        while col < self.lp {
            self.scores::<R, 1>(col);
            col += 16;
        }
        for r in 0..R {
            softmax_rows(
                std::slice::from_raw_parts_mut(self.s.add(r * self.lp), self.l),
                self.l,
            );
        }
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        for j in 0..self.l {
            let v = self.v.add(j * self.ldq);
            let (v0, v1) = (_mm512_loadu_ps(v), _mm512_loadu_ps(v.add(16)));
            for (r, acc) in acc.iter_mut().enumerate() {
                let p = _mm512_set1_ps(*self.s.add(r * self.lp + j));
                acc[0] = _mm512_fmadd_ps(p, v0, acc[0]);
                acc[1] = _mm512_fmadd_ps(p, v1, acc[1]);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let c = self.c.add(r * self.ldc);
            _mm512_storeu_ps(c, acc[0]);
            _mm512_storeu_ps(c.add(16), acc[1]);
        }
    }

    /// `s[r][col..col + 16V] = q[r] · kt[.., col..col + 16V]` for `R` rows.
    ///
    /// # Safety
    /// As for `run`, with `col + 16V <= lp`.
    #[target_feature(enable = "avx512f")]
    unsafe fn scores<const R: usize, const V: usize>(&self, col: usize) {
        use std::arch::x86_64::*;
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        for dd in 0..32 {
            let k = self.kt.add(dd * self.lp + col);
            let kv: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(k.add(v * 16)));
            for (r, acc) in acc.iter_mut().enumerate() {
                let q = _mm512_set1_ps(*self.q.add(r * self.ldq + dd));
                for v in 0..V {
                    acc[v] = _mm512_fmadd_ps(q, kv[v], acc[v]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (v, a) in acc.iter().enumerate() {
                _mm512_storeu_ps(self.s.add(r * self.lp + col + v * 16), *a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s % 2001) as f32 - 1000.0) / 400.0
            })
            .collect()
    }

    /// Both AVX-512 kernels against the `gemm` products, for sequences shorter than a
    /// block, past one, and past a 64-key tile: f32 to rounding, bf16 to its precision.
    #[test]
    fn the_kernels_equal_the_gemm_products() {
        let (h, heads) = (96, 3);
        for l in [1, 5, 17, 70] {
            let qkv = values(l * 3 * h, 3 + l as u64);
            let scale = 1.0 / 32f32.sqrt();
            let mut want = vec![0f32; l * h];
            let mut scores = vec![0f32; l * l];
            gemm_heads(
                &mut want,
                &qkv,
                &mut scores,
                (l, h, heads),
                scale,
                Parallelism::None,
            );
            let check = |got: &[f32], tol: f32, what: &str| {
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!((g - w).abs() <= tol, "{what} l={l} at {i}: {g} vs {w}");
                }
            };
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    let mut got = vec![f32::NAN; l * h];
                    // SAFETY: AVX-512F was just found; the shapes are as required.
                    unsafe { f32_heads(&mut got, &qkv, l, h, heads, scale) };
                    check(&got, 1e-5, "f32");
                } else {
                    eprintln!("SKIPPED: no AVX-512F, the f32 kernel cannot run here");
                }
                if std::arch::is_x86_feature_detected!("avx512bf16") {
                    let mut got = vec![f32::NAN; l * h];
                    // SAFETY: AVX512-BF16 was just found; the shapes are as required.
                    unsafe {
                        super::super::attention_bf16::heads32(&mut got, &qkv, l, h, heads, scale)
                    };
                    // Inputs within 2.5 rounded to 8 bits: a context within 3e-2.
                    check(&got, 3e-2, "bf16");
                } else {
                    eprintln!("SKIPPED: no AVX512-BF16, the bf16 kernel cannot run here");
                }
            }
        }
    }
}
