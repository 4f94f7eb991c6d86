//! The register tiles of `avx512` and the per-call activation conversions, in
//! AVX-512 intrinsics.
//!
//! Owns the instruction-level code only: every function here is compiled for the
//! features it names and must only be called once `avx512::supports` found them; the
//! callers check every length these functions rely on.

use std::arch::x86_64::*;

use super::super::ops::simd::gelu16;
use super::{Int8, Line, Tiles, GROUP, NR};

/// Rows per bf16 tile: 6 × 4 accumulators, 4 weight vectors and a broadcast fit the 32
/// vector registers.
const MR_BF16: usize = 6;
/// Rows per int8 tile: 3 × 4 integer sums of the current group and 3 × 4 f32 totals.
const MR_INT8: usize = 3;

/// One register tile's operands: `a` the first row of activation words (rows `lda`
/// apart), `b` the panel's packed lines (`steps` of 4), `c` the destination's first
/// row at the panel's first column (rows `ldc` apart), `bias` the panel's 64 biases.
struct Tile {
    a: *const u32,
    lda: usize,
    steps: usize,
    b: *const Line,
    c: *mut f32,
    ldc: usize,
    bias: *const f32,
    accumulate: bool,
    gelu: bool,
}

impl Tiles {
    /// `dst (+)= a · Wᵀ + b` over bf16 lines.
    ///
    /// # Safety
    /// AVX512-BF16 present; `a` holds l rows of `inp / 2` words, `dst` l rows of
    /// `out`, `lines` the matrix packed by `pack_bf16`.
    pub(super) unsafe fn bf16(&self, dst: &mut [f32], a: &[u32], lines: &[Line], l: usize) {
        let steps = self.inp / 2;
        debug_assert!(a.len() == l * steps && dst.len() == l * self.out);
        debug_assert!(lines.len() == self.out / NR * steps * 4);
        for panel in 0..self.out / NR {
            for m in (0..l).step_by(MR_BF16) {
                let t = self.tile(dst, a, lines, (panel, m), steps);
                match l - m {
                    1 => t.bf16::<1>(),
                    2 => t.bf16::<2>(),
                    3 => t.bf16::<3>(),
                    4 => t.bf16::<4>(),
                    5 => t.bf16::<5>(),
                    _ => t.bf16::<MR_BF16>(),
                }
            }
        }
    }

    /// `dst (+)= a · Wᵀ + b` over int8 lines, dequantised per group.
    ///
    /// # Safety
    /// AVX512-VNNI present; `a` holds l rows of `inp / 4` words, `rows` `inp / 64`
    /// (scale, minimum) pairs per row, `dst` l rows of `out`, `q` the matrix packed by
    /// `pack_int8`.
    pub(super) unsafe fn int8(
        &self,
        dst: &mut [f32],
        a: &[u32],
        rows: &[(f32, f32)],
        q: &Int8,
        l: usize,
    ) {
        let (steps, groups) = (self.inp / 4, self.inp / GROUP);
        debug_assert!(a.len() == l * steps && dst.len() == l * self.out);
        debug_assert!(rows.len() == l * groups && q.scale.len() == groups * self.out);
        debug_assert!(q.lines.len() == self.out / NR * steps * 4);
        for panel in 0..self.out / NR {
            for m in (0..l).step_by(MR_INT8) {
                let t = self.tile(dst, a, &q.lines, (panel, m), steps);
                let d = Dequant {
                    rows: rows.as_ptr().add(m * groups),
                    groups,
                    scale: q.scale.as_ptr().add(panel * NR),
                    zsum: q.zsum.as_ptr().add(panel * NR),
                    lds: self.out,
                };
                match l - m {
                    1 => t.int8::<1>(&d),
                    2 => t.int8::<2>(&d),
                    _ => t.int8::<MR_INT8>(&d),
                }
            }
        }
    }

    /// The tile at rows from `m` of panel `panel`.
    ///
    /// # Safety
    /// `m < l` and `panel < out / 64` for the shapes `bf16` and `int8` document.
    unsafe fn tile(
        &self,
        dst: &mut [f32],
        a: &[u32],
        lines: &[Line],
        (panel, m): (usize, usize),
        steps: usize,
    ) -> Tile {
        Tile {
            a: a.as_ptr().add(m * steps),
            lda: steps,
            steps,
            b: lines.as_ptr().add(panel * steps * 4),
            c: dst.as_mut_ptr().add(m * self.out + panel * NR),
            ldc: self.out,
            bias: self.b.add(panel * NR),
            accumulate: self.accumulate,
            gelu: self.gelu,
        }
    }
}

/// For int8: the tile's rows' (scale, minimum) per group (`groups` per row), and the
/// panel's weight scales and offset sums (rows of `lds` per group).
struct Dequant {
    rows: *const (f32, f32),
    groups: usize,
    scale: *const f32,
    zsum: *const f32,
    lds: usize,
}

impl Tile {
    /// `c[r][v]` (+)= `s` + bias, or = GELU(`s` + bias).
    #[target_feature(enable = "avx512f")]
    unsafe fn finish(&self, r: usize, v: usize, s: __m512) {
        let c = self.c.add(r * self.ldc + v * 16);
        let mut y = _mm512_add_ps(s, _mm512_loadu_ps(self.bias.add(v * 16)));
        if self.gelu {
            y = gelu16(y);
        }
        if self.accumulate {
            y = _mm512_add_ps(y, _mm512_loadu_ps(c));
        }
        _mm512_storeu_ps(c, y);
    }

    /// `R` rows × 64 outputs in bf16 pairs.
    ///
    /// # Safety
    /// AVX512-BF16 present; `R` rows of `steps` words at `a`, `steps` × 4 lines at
    /// `b`, `R` rows of 64 floats at `c`, 64 at `bias`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn bf16<const R: usize>(&self) {
        let mut acc = [[_mm512_setzero_ps(); 4]; R];
        for j in 0..self.steps {
            let b = self.b.add(j * 4);
            let w: [__m512bh; 4] =
                std::array::from_fn(|v| std::mem::transmute(_mm512_load_si512(b.add(v).cast())));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*self.a.add(r * self.lda + j) as i32));
                for v in 0..4 {
                    acc[v] = _mm512_dpbf16_ps(acc[v], x, w[v]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (v, s) in acc.iter().enumerate() {
                self.finish(r, v, *s);
            }
        }
    }

    /// `R` rows × 64 outputs in u8 × i8 quads: per group of 16 steps, the integer sums
    /// times the row's and the weights' scales, plus the row's minimum times the
    /// weights' offset sums, added to f32 totals.
    ///
    /// # Safety
    /// AVX512-VNNI present; as for `bf16`, plus `R` rows of `groups` pairs at
    /// `d.rows`, and `groups` rows of 64 floats (`lds` apart) at `d.scale` and
    /// `d.zsum`, with `steps == 16 * groups`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn int8<const R: usize>(&self, d: &Dequant) {
        let mut total = [[_mm512_setzero_ps(); 4]; R];
        for g in 0..d.groups {
            let mut acc = [[_mm512_setzero_si512(); 4]; R];
            for j in g * (GROUP / 4)..(g + 1) * (GROUP / 4) {
                let b = self.b.add(j * 4);
                let w: [__m512i; 4] = std::array::from_fn(|v| _mm512_load_si512(b.add(v).cast()));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_epi32(*self.a.add(r * self.lda + j) as i32);
                    for v in 0..4 {
                        acc[v] = _mm512_dpbusd_epi32(acc[v], x, w[v]);
                    }
                }
            }
            for v in 0..4 {
                let s = _mm512_loadu_ps(d.scale.add(g * d.lds + v * 16));
                let z = _mm512_loadu_ps(d.zsum.add(g * d.lds + v * 16));
                for r in 0..R {
                    let (rs, rmin) = *d.rows.add(r * d.groups + g);
                    let t = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][v]), s);
                    total[r][v] = _mm512_fmadd_ps(t, _mm512_set1_ps(rs), total[r][v]);
                    total[r][v] = _mm512_fmadd_ps(z, _mm512_set1_ps(rmin), total[r][v]);
                }
            }
        }
        for (r, total) in total.iter().enumerate() {
            for (v, s) in total.iter().enumerate() {
                self.finish(r, v, *s);
            }
        }
    }
}

/// `a` = `x` in bf16, two per word (low half first), rounding to nearest even.
///
/// # Safety
/// AVX512-BF16 present; `a.len() * 2 == x.len()`, a multiple of 32.
#[target_feature(enable = "avx512f,avx512bf16")]
pub(super) unsafe fn convert_bf16(a: &mut [u32], x: &[f32]) {
    debug_assert!(a.len() * 2 == x.len() && x.len().is_multiple_of(32));
    for (d, s) in a.chunks_exact_mut(16).zip(x.chunks_exact(32)) {
        let lo = _mm512_loadu_ps(s.as_ptr());
        let hi = _mm512_loadu_ps(s.as_ptr().add(16));
        let v: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
        _mm512_storeu_si512(d.as_mut_ptr().cast(), v);
    }
}

/// Each group of 64 in `x` as u8 between the group's minimum (0) and maximum (255),
/// four per word, and its (scale, minimum) pushed onto `rows`:
/// `x ≈ scale · q + minimum`.
///
/// # Safety
/// AVX-512F and BW present; `a.len() * 4 == x.len()`, a multiple of 64.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) unsafe fn quantise_rows(a: &mut [u32], rows: &mut Vec<(f32, f32)>, x: &[f32]) {
    debug_assert!(a.len() * 4 == x.len() && x.len().is_multiple_of(GROUP));
    for (d, s) in a.chunks_exact_mut(GROUP / 4).zip(x.chunks_exact(GROUP)) {
        let v: [__m512; GROUP / 16] =
            std::array::from_fn(|i| _mm512_loadu_ps(s.as_ptr().add(16 * i)));
        let (lo, hi) = v[1..].iter().fold((v[0], v[0]), |(lo, hi), v| {
            (_mm512_min_ps(lo, *v), _mm512_max_ps(hi, *v))
        });
        let (min, max) = (_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi));
        let scale = if max > min { (max - min) / 255.0 } else { 1.0 };
        rows.push((scale, min));
        let (vmin, inv) = (_mm512_set1_ps(min), _mm512_set1_ps(1.0 / scale));
        for (i, v) in v.iter().enumerate() {
            let f = _mm512_mul_ps(_mm512_sub_ps(*v, vmin), inv);
            // Round to nearest even; never below 0 (an unsigned narrowing would wrap).
            let q = _mm512_max_epi32(_mm512_cvtps_epi32(f), _mm512_setzero_si512());
            _mm_storeu_si128(d.as_mut_ptr().add(4 * i).cast(), _mm512_cvtusepi32_epi8(q));
        }
    }
}

/// Weight rows per pass of `rows_product`: their 4 × `inp` floats stay in L1 while
/// every row of x runs over them.
const ROWS_F32: usize = 4;

/// `dst[m][col + j] += x[m] · w[j]` for the `w.len() / inp` rows of one block of W,
/// straight from W as loaded (no packing): for a short text, each weight is used
/// `l` times only, so what costs is streaming W once, not the arithmetic. `dst` rows
/// are `out` apart.
///
/// # Safety
/// AVX-512F present; `inp` a multiple of 16 and of `w.len()`'s row length,
/// `x.len() >= l * inp`, `dst.len() >= (l - 1) * out + col + w.len() / inp` (the
/// caller checks these).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn rows_product(
    dst: &mut [f32],
    (out, col): (usize, usize),
    x: &[f32],
    l: usize,
    inp: usize,
    w: &[f32],
) {
    let n = w.len() / inp;
    let (x, w, d) = (x.as_ptr(), w.as_ptr(), dst.as_mut_ptr());
    let mut j = 0;
    while j + ROWS_F32 <= n {
        let w0 = w.add(j * inp);
        for m in 0..l {
            let xm = x.add(m * inp);
            let mut s = [_mm512_setzero_ps(); ROWS_F32];
            let mut k = 0;
            while k < inp {
                let xv = _mm512_loadu_ps(xm.add(k));
                for (r, s) in s.iter_mut().enumerate() {
                    *s = _mm512_fmadd_ps(xv, _mm512_loadu_ps(w0.add(r * inp + k)), *s);
                }
                k += 16;
            }
            let dm = d.add(m * out + col + j);
            for (r, s) in s.iter().enumerate() {
                *dm.add(r) += _mm512_reduce_add_ps(*s);
            }
        }
        j += ROWS_F32;
    }
    for j in j..n {
        let wj = w.add(j * inp);
        for m in 0..l {
            let xm = x.add(m * inp);
            let mut s = _mm512_setzero_ps();
            let mut k = 0;
            while k < inp {
                s = _mm512_fmadd_ps(_mm512_loadu_ps(xm.add(k)), _mm512_loadu_ps(wj.add(k)), s);
                k += 16;
            }
            *d.add(m * out + col + j) += _mm512_reduce_add_ps(s);
        }
    }
}
