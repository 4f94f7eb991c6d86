//! The arithmetic kernels of the BERT forward pass: strided matrix products through
//! the `gemm` crate, linear layers with PyTorch's weight layout, layer norm, softmax,
//! the activations and the exp/erf they need.
//!
//! Owns numerics only, on slices it is handed. It checks every matrix product's bounds
//! before the unchecked kernel runs and never allocates beyond a temporary row.

use candle_transformers::models::bert::HiddenAct;
use gemm::Parallelism;

/// dst (m × n, row stride `dst_s.0`) = alpha·lhs·rhs (+ dst when `acc`), with lhs
/// (m × k) and rhs (k × n) given by (row, column) strides. Bounds are checked before
/// the unchecked kernel runs.
#[allow(clippy::too_many_arguments)]
pub(super) fn mm(
    dst: &mut [f32],
    m: usize,
    n: usize,
    k: usize,
    dst_s: (usize, usize),
    lhs: &[f32],
    lhs_s: (usize, usize),
    rhs: &[f32],
    rhs_s: (usize, usize),
    alpha: f32,
    acc: bool,
    par: Parallelism,
) {
    let last = |rows: usize, cols: usize, (rs, cs): (usize, usize)| {
        (rows.max(1) - 1) * rs + (cols.max(1) - 1) * cs
    };
    assert!(
        m > 0
            && n > 0
            && k > 0
            && last(m, n, dst_s) < dst.len()
            && last(m, k, lhs_s) < lhs.len()
            && last(k, n, rhs_s) < rhs.len(),
        "matrix product out of bounds"
    );
    // SAFETY: every index the kernel touches is below the checked last index of its
    // slice, and dst does not alias lhs or rhs (distinct borrows).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_s.1 as isize,
            dst_s.0 as isize,
            acc,
            lhs.as_ptr(),
            lhs_s.1 as isize,
            lhs_s.0 as isize,
            rhs.as_ptr(),
            rhs_s.1 as isize,
            rhs_s.0 as isize,
            1.0,
            alpha,
            false,
            false,
            false,
            par,
        )
    }
}

/// dst (l × out) = x (l × inp) · wᵀ + b, with w stored (out × inp) as in PyTorch.
#[allow(clippy::too_many_arguments)]
pub(super) fn linear(
    dst: &mut [f32],
    x: &[f32],
    l: usize,
    inp: usize,
    out: usize,
    w: &[f32],
    b: &[f32],
    par: Parallelism,
) {
    for row in dst.chunks_exact_mut(out) {
        row.copy_from_slice(b);
    }
    mm(
        dst,
        l,
        out,
        inp,
        (out, 1),
        x,
        (inp, 1),
        w,
        (1, inp),
        1.0,
        true,
        par,
    );
}

/// dst (l × out) += x · wᵀ + b: the residual connection already in dst.
#[allow(clippy::too_many_arguments)]
pub(super) fn linear_acc(
    dst: &mut [f32],
    x: &[f32],
    l: usize,
    inp: usize,
    out: usize,
    w: &[f32],
    b: &[f32],
    par: Parallelism,
) {
    for row in dst.chunks_exact_mut(out) {
        for (d, b) in row.iter_mut().zip(b) {
            *d += b;
        }
    }
    mm(
        dst,
        l,
        out,
        inp,
        (out, 1),
        x,
        (inp, 1),
        w,
        (1, inp),
        1.0,
        true,
        par,
    );
}

/// Defines `$name` over one body compiled three times: for AVX-512, for AVX2 + FMA, and
/// for the crate's baseline target, picked at run time by what the CPU has. The crate is
/// built for any x86-64, so without this the element-wise loops of the forward pass
/// (GELU, softmax, layer norm) would run four lanes wide at best.
macro_rules! simd_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
                unsafe fn avx512($($arg: $ty),*) {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($arg: $ty),*) {
                    body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                {
                    // SAFETY: the CPU has every feature the function was compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}
pub(super) use simd_dispatch;

/// Lanes of the partial sums below: a multiple of every vector width, so the loops
/// vectorise without reordering any one lane's additions.
const LANES: usize = 16;

/// Σ f(x) over `xs`, in `LANES` partial sums (float addition is not associative, so a
/// plain running sum is one serial chain the compiler may not split).
#[inline(always)]
fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += f(*v);
        }
    }
    let tail: f32 = chunks.remainder().iter().map(|v| f(*v)).sum();
    acc.iter().sum::<f32>() + tail
}

/// The largest of `xs` (NaN-free input: scores of finite weights).
#[inline(always)]
fn lane_max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a = if *v > *a { *v } else { *a };
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    acc.iter().copied().fold(tail, f32::max)
}

simd_dispatch! {
    /// Each row of `h` values of `x` normalised to zero mean and unit variance, then
    /// scaled and shifted.
    pub(super) fn layer_norm(x: &mut [f32], h: usize, gb: &(Vec<f32>, Vec<f32>), eps: f32) {
        let (g, b) = gb;
        for row in x.chunks_exact_mut(h) {
            let mean = lane_sum(row, |v| v) / h as f32;
            let var = lane_sum(row, |v| (v - mean) * (v - mean)) / h as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(g).zip(b) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

simd_dispatch! {
    /// Softmax of each row of `n` scores, in place.
    pub(super) fn softmax_rows(scores: &mut [f32], n: usize) {
        for row in scores.chunks_exact_mut(n) {
            let max = lane_max(row);
            for v in row.iter_mut() {
                *v = exp(*v - max);
            }
            let inv = 1.0 / lane_sum(row, |v| v);
            row.iter_mut().for_each(|v| *v *= inv);
        }
    }
}

simd_dispatch! {
    /// GELU, exact (erf) form, in place.
    fn gelu(x: &mut [f32]) {
        x.iter_mut()
            .for_each(|v| *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2)));
    }
}

pub(super) fn activation(x: &mut [f32], act: HiddenAct) {
    match act {
        HiddenAct::Gelu => {
            #[cfg(target_arch = "x86_64")]
            if super::avx512::f32_kernels() {
                // SAFETY: `f32_kernels` found AVX-512F.
                unsafe { simd::gelu(x) };
                return;
            }
            gelu(x)
        }
        HiddenAct::GeluApproximate => x.iter_mut().for_each(|v| {
            let u = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
            *v = 0.5 * *v * (1.0 + u.tanh());
        }),
        HiddenAct::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
    }
}

/// e^x in f32 (relative error about 2e-7; branch-free and without a float-to-integer
/// conversion, so loops over it vectorise).
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Round to nearest by adding and taking away 1.5·2²³ (plain adds vectorise;
    // `f32::round` is a library call without SSE4.1). While 1.5·2²³ + n lies in
    // [2²³, 2²⁴), its bits are those of 1.5·2²³ plus n: n as an integer for free.
    const SHIFT: f32 = 12_582_912.0;
    let t = x * std::f32::consts::LOG2_E + SHIFT;
    let n = t - SHIFT;
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    // e^r on [-ln2/2, ln2/2]: Taylor terms to r⁶.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2ⁿ: n + 127 in the exponent field (n is in [-126, 127] after the clamp).
    let biased = t.to_bits().wrapping_sub(SHIFT.to_bits()).wrapping_add(127);
    p * f32::from_bits(biased << 23)
}

/// erf(x) (Abramowitz and Stegun 7.1.26; absolute error below 1.5e-7).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let y = 1.0
        - t * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))))
            * exp(-a * a);
    y.copysign(x)
}

/// The activations' arithmetic in AVX-512 intrinsics, for what the compiler cannot
/// find by itself: `vrcp14ps` and a Newton step where `erf` divides.
#[cfg(target_arch = "x86_64")]
pub(super) mod simd {
    use std::arch::x86_64::*;

    /// e^x for 16 lanes, as [`super::exp`] computes it.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) fn exp(x: __m512) -> __m512 {
        const SHIFT: f32 = 12_582_912.0;
        let x = _mm512_min_ps(
            _mm512_max_ps(x, _mm512_set1_ps(-87.0)),
            _mm512_set1_ps(88.0),
        );
        let t = _mm512_fmadd_ps(
            x,
            _mm512_set1_ps(std::f32::consts::LOG2_E),
            _mm512_set1_ps(SHIFT),
        );
        let n = _mm512_sub_ps(t, _mm512_set1_ps(SHIFT));
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_145_75), x);
        let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428_606_8e-6), r);
        let mut p = _mm512_set1_ps(1.0 / 720.0);
        for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        let bits = _mm512_add_epi32(
            _mm512_sub_epi32(
                _mm512_castps_si512(t),
                _mm512_set1_epi32(SHIFT.to_bits() as i32),
            ),
            _mm512_set1_epi32(127),
        );
        _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32::<23>(bits)))
    }

    /// erf(x) for 16 lanes, as [`super::erf`] computes it.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) fn erf(x: __m512) -> __m512 {
        let a = _mm512_abs_ps(x);
        let d = _mm512_fmadd_ps(a, _mm512_set1_ps(0.327_591_1), _mm512_set1_ps(1.0));
        let r = _mm512_rcp14_ps(d);
        // One Newton step: 14 bits to about 24.
        let t = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0)));
        let mut p = _mm512_set1_ps(1.061_405_4);
        for c in [-1.453_152_1, 1.421_413_8, -0.284_496_74, 0.254_829_6] {
            p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c));
        }
        let e = exp(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a));
        let y = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, _mm512_set1_ps(1.0));
        // y >= 0: x's sign bit or'ed in.
        let sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
        _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign))
    }

    /// GELU, exact (erf) form, for 16 lanes.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) fn gelu16(v: __m512) -> __m512 {
        let e = erf(_mm512_mul_ps(
            v,
            _mm512_set1_ps(std::f32::consts::FRAC_1_SQRT_2),
        ));
        _mm512_mul_ps(
            _mm512_mul_ps(_mm512_set1_ps(0.5), v),
            _mm512_add_ps(_mm512_set1_ps(1.0), e),
        )
    }

    /// GELU, exact (erf) form, in place.
    ///
    /// # Safety
    /// AVX-512F present.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn gelu(x: &mut [f32]) {
        let g = |v: __m512| gelu16(v);
        let mut chunks = x.chunks_exact_mut(16);
        for c in &mut chunks {
            _mm512_storeu_ps(c.as_mut_ptr(), g(_mm512_loadu_ps(c.as_ptr())));
        }
        let rest = chunks.into_remainder();
        let k: __mmask16 = ((1u32 << rest.len()) - 1) as __mmask16;
        let v = _mm512_maskz_loadu_ps(k, rest.as_ptr());
        _mm512_mask_storeu_ps(rest.as_mut_ptr(), k, g(v));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exp_and_erf_are_accurate() {
        for i in -2000..=2000 {
            let x = i as f32 / 100.0;
            let (e, want) = (super::exp(x), x.exp());
            assert!(
                ((e - want) / want).abs() < 1e-6,
                "exp({x}) = {e}, want {want}"
            );
            // The series is exact enough up to 3; past it erf is within 2.3e-5 of ±1.
            let (want, tol) = if x.abs() <= 3.0 {
                (series_erf(f64::from(x)), 3e-7)
            } else {
                (f64::from(x.signum()), 2.3e-5)
            };
            assert!((f64::from(super::erf(x)) - want).abs() < tol, "erf({x})");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx512f") {
                use std::arch::x86_64::*;
                // SAFETY: AVX-512F was just found.
                let (e16, erf16) = unsafe {
                    let v = _mm512_set1_ps(x);
                    let lane = |v: __m512| _mm512_reduce_max_ps(v);
                    (lane(super::simd::exp(v)), lane(super::simd::erf(v)))
                };
                assert!(
                    ((e16 - x.exp()) / x.exp()).abs() < 1e-6,
                    "simd exp({x}) = {e16}"
                );
                // Its fused multiply-adds round differently: a little more slack.
                assert!(
                    (f64::from(erf16) - want).abs() < tol.max(5e-7),
                    "simd erf({x}) = {erf16}"
                );
            }
        }
    }

    /// The AVX-512 GELU against the scalar one, over a length with a partial vector.
    #[test]
    fn simd_gelu_equals_the_scalar_one() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            let x: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 60.0).collect();
            let (mut a, mut b) = (x.clone(), x.clone());
            super::gelu(&mut a);
            // SAFETY: AVX-512F was just found.
            unsafe { super::simd::gelu(&mut b) };
            for (i, (a, b)) in a.iter().zip(&b).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-6 * (1.0 + a.abs()),
                    "gelu({}) {a} vs {b}",
                    x[i]
                );
            }
            return;
        }
        eprintln!("SKIPPED: no AVX-512F");
    }

    /// erf by its Maclaurin series (accurate in f64 for |x| <= 3).
    fn series_erf(x: f64) -> f64 {
        let (mut term, mut sum, mut n) = (x, x, 0.0);
        while term.abs() > 1e-17 * sum.abs().max(1e-300) {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }
}
