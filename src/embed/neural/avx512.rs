//! The linear layers' matrix products on CPUs with AVX-512 but without AMX (AMD Zen 4
//! and later, Intel Ice Lake / Cooper Lake): in int8 with AVX512-VNNI (`vpdpbusd`) or
//! in bf16 with AVX512-BF16 (`vdpbf16ps`), accumulated in i32 or f32.
//!
//! Owns: which of the two this process may use (the CPU says so; `ENGRAM_NEURAL_AVX512`
//! can pin or refuse it), packing a weight matrix once at load (bf16 pairs, or int8
//! quads quantised per output channel with their scales and column sums), converting
//! the activations per call (rounded to bf16, or quantised per row to u8 between the
//! row's minimum and maximum), and `dst += x · Wᵀ` over a packed matrix in register
//! tiles of 6 rows × 64 outputs. Both stay within a cosine of 0.999 of the f32 path
//! on whole sentence vectors (`tests/neural_reference.rs`).
//!
//! Must never execute an instruction the CPU lacks: the kernels are compiled for their
//! features and only called after [`kind`] found them. Every pointer a kernel reads or
//! writes through lies inside a slice whose length was checked first. When the switch
//! says `0`, or the CPU lacks the features, the f32 products of `ops` run.

use std::cell::RefCell;
use std::sync::OnceLock;

/// Outputs per panel: four AVX-512 vectors of 16 lanes.
const NR: usize = 64;
/// Rows per register tile: 6 × 4 accumulators, 4 weight vectors and a broadcast fit
/// the 32 vector registers.
const MR: usize = 6;

/// Which reduced-precision products the linear layers use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// u8 activations × i8 weights, i32 sums (`vpdpbusd`).
    Int8,
    /// bf16 × bf16, f32 sums (`vdpbf16ps`).
    Bf16,
}

/// What this process uses (decided once): `ENGRAM_NEURAL_AVX512=0` refuses both,
/// `=bf16` or `=int8` pins one (when the CPU has it), unset or anything else takes
/// int8 where the CPU has VNNI, else bf16.
pub(super) fn kind() -> Option<Kind> {
    static K: OnceLock<Option<Kind>> = OnceLock::new();
    *K.get_or_init(|| {
        let want = std::env::var("ENGRAM_NEURAL_AVX512").unwrap_or_default();
        let (int8, bf16) = detect();
        match want.as_str() {
            "0" => None,
            "bf16" => bf16.then_some(Kind::Bf16),
            "int8" => int8.then_some(Kind::Int8),
            _ if int8 => Some(Kind::Int8),
            _ => bf16.then_some(Kind::Bf16),
        }
    })
}

/// Whether the f32 AVX-512 kernels (attention) may run: the switch is not `0` and the
/// CPU has AVX-512F.
pub(super) fn f32_kernels() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        std::env::var("ENGRAM_NEURAL_AVX512").map_or(true, |v| v != "0") && {
            #[cfg(target_arch = "x86_64")]
            {
                std::arch::is_x86_feature_detected!("avx512f")
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                false
            }
        }
    })
}

/// Whether the CPU has what `kind`'s kernels were compiled for.
fn supports(kind: Kind) -> bool {
    static HAS: OnceLock<(bool, bool)> = OnceLock::new();
    let (int8, bf16) = *HAS.get_or_init(detect);
    match kind {
        Kind::Int8 => int8,
        Kind::Bf16 => bf16,
    }
}

/// (VNNI usable, BF16 usable).
#[cfg(target_arch = "x86_64")]
fn detect() -> (bool, bool) {
    use std::arch::is_x86_feature_detected as has;
    let base = has!("avx512f") && has!("avx512bw");
    (base && has!("avx512vnni"), base && has!("avx512bf16"))
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> (bool, bool) {
    (false, false)
}

/// One vector's worth of packed weights, aligned so no load splits a cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// A weight matrix W (`out × inp`, PyTorch's layout for `y = x · Wᵀ`) in panels of 64
/// outputs. Within a panel, one step along the inner dimension is four lines: bf16
/// holds for each of the 64 outputs the pair `W[n][2j], W[n][2j+1]`; int8 the quad
/// `W[n][4j..4j+4]`, quantised as `round(W / scale[n])`.
pub(super) struct PackedWeight {
    kind: Kind,
    out: usize,
    inp: usize,
    lines: Vec<Line>,
    /// Int8 only: per output, the weights' scale and the sum of its quantised weights
    /// (what the activations' zero offset contributes).
    scale: Vec<f32>,
    colsum: Vec<f32>,
}

impl PackedWeight {
    /// Pack `w` for `kind`, or `None` when the CPU lacks `kind` or the shape does not
    /// fill whole panels (`out` a multiple of 64, `inp` of 32): such layers stay in f32.
    pub(super) fn pack(w: &[f32], out: usize, inp: usize, kind: Kind) -> Option<PackedWeight> {
        if !supports(kind)
            || out == 0
            || inp == 0
            || !out.is_multiple_of(NR)
            || !inp.is_multiple_of(32)
        {
            return None;
        }
        if w.len() != out * inp {
            return None;
        }
        let group = group(kind);
        let steps = inp / group;
        let mut lines = vec![Line([0; 64]); out / NR * steps * 4];
        let (mut scale, mut colsum) = (Vec::new(), Vec::new());
        if kind == Kind::Int8 {
            for row in w.chunks_exact(inp) {
                let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
                let s = if max > 0.0 { max / 127.0 } else { 1.0 };
                scale.push(s);
                colsum.push(row.iter().map(|v| quantise(*v, s) as f32).sum());
            }
        }
        for (n, row) in w.chunks_exact(inp).enumerate() {
            let (panel, lane) = (n / NR, n % NR);
            for (j, vals) in row.chunks_exact(group).enumerate() {
                let line = &mut lines[(panel * steps + j) * 4 + lane / 16].0;
                let at = (lane % 16) * 4;
                match kind {
                    Kind::Bf16 => {
                        line[at..at + 2].copy_from_slice(&bf16(vals[0]).to_le_bytes());
                        line[at + 2..at + 4].copy_from_slice(&bf16(vals[1]).to_le_bytes());
                    }
                    Kind::Int8 => {
                        for (b, v) in line[at..at + 4].iter_mut().zip(vals) {
                            *b = quantise(*v, scale[n]) as u8;
                        }
                    }
                }
            }
        }
        Some(PackedWeight {
            kind,
            out,
            inp,
            lines,
            scale,
            colsum,
        })
    }

    /// What the products run in, for `matmul_kind`.
    pub(super) fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Int8 => "int8 (AVX512-VNNI)",
            Kind::Bf16 => "bf16 (AVX512-BF16)",
        }
    }

    /// `dst (l × out) += x (l × inp) · Wᵀ`, with x rounded to bf16 or quantised to u8
    /// per row. Only ever constructed when the CPU has the matrix's kind.
    pub(super) fn matmul_acc(&self, dst: &mut [f32], x: &[f32], l: usize) {
        let (out, inp) = (self.out, self.inp);
        assert!(
            supports(self.kind) && l > 0 && x.len() >= l * inp && dst.len() >= l * out,
            "packed product out of bounds or not available"
        );
        let x = &x[..l * inp];
        let dst = &mut dst[..l * out];
        SCRATCH.with(|scratch| {
            let (a, rows) = &mut *scratch.borrow_mut();
            // Four bytes per step of the inner dimension: a bf16 pair or a u8 quad.
            a.clear();
            a.resize(l * inp / group(self.kind), 0);
            rows.clear();
            // SAFETY: `supports` found the CPU has the features
            // the kernels were compiled for. `a` holds l rows of `inp / group` words,
            // `dst` l rows of `out`, `self.lines` out/64 panels of `inp / group` steps
            // of 4 lines; `run` only reaches rows < l, panels < out/64 and steps within
            // a row.
            unsafe {
                match self.kind {
                    Kind::Bf16 => convert_bf16(a, x),
                    Kind::Int8 => quantise_rows(a, rows, x, inp),
                }
                self.run(dst, a, rows, l);
            }
        });
    }

    /// The register tiles over every panel and block of rows.
    ///
    /// # Safety
    /// The CPU has this matrix's kind; `a` and `dst` have l rows as `matmul_acc` sets
    /// them up, and `rows` one (scale, minimum) per row for int8.
    #[cfg(target_arch = "x86_64")]
    unsafe fn run(&self, dst: &mut [f32], a: &[u32], rows: &[(f32, f32)], l: usize) {
        let steps = self.inp / group(self.kind);
        debug_assert!(a.len() == l * steps && dst.len() == l * self.out);
        for panel in 0..self.out / NR {
            let b = self.lines[panel * steps * 4..].as_ptr();
            for m in (0..l).step_by(MR) {
                let c = dst.as_mut_ptr().add(m * self.out + panel * NR);
                let ap = a.as_ptr().add(m * steps);
                let t = Tile {
                    a: ap,
                    steps,
                    b,
                    c,
                    ldc: self.out,
                };
                match self.kind {
                    Kind::Bf16 => match l - m {
                        1 => t.bf16::<1>(),
                        2 => t.bf16::<2>(),
                        3 => t.bf16::<3>(),
                        4 => t.bf16::<4>(),
                        5 => t.bf16::<5>(),
                        _ => t.bf16::<MR>(),
                    },
                    Kind::Int8 => {
                        let q = Dequant {
                            rows: rows[m..].as_ptr(),
                            scale: self.scale[panel * NR..].as_ptr(),
                            colsum: self.colsum[panel * NR..].as_ptr(),
                        };
                        match l - m {
                            1 => t.int8::<1>(q),
                            2 => t.int8::<2>(q),
                            3 => t.int8::<3>(q),
                            4 => t.int8::<4>(q),
                            5 => t.int8::<5>(q),
                            _ => t.int8::<MR>(q),
                        }
                    }
                }
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn run(&self, _: &mut [f32], _: &[u32], _: &[(f32, f32)], _: usize) {
        unreachable!("the AVX-512 products are only ever chosen on x86_64")
    }
}

/// Inner-dimension elements per 32-bit word of the activations.
fn group(kind: Kind) -> usize {
    match kind {
        Kind::Bf16 => 2,
        Kind::Int8 => 4,
    }
}

fn quantise(v: f32, scale: f32) -> i8 {
    (v / scale).round().clamp(-127.0, 127.0) as i8
}

/// f32 to bf16, rounding to nearest even (as `vcvtne2ps2bf16` does for finite values).
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

thread_local! {
    /// Per thread: the activations as bf16 pairs or u8 quads, and for int8 each row's
    /// (scale, minimum). Kept between calls: every layer of every text needs them at
    /// about the same size.
    static SCRATCH: RefCell<(Vec<u32>, Vec<(f32, f32)>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// One register tile's operands: `a` the first of up to 6 rows of activation words
/// (`steps` apart), `b` the panel's packed weights, `c` the destination's first row at
/// the panel's first column (`ldc` apart).
#[cfg(target_arch = "x86_64")]
struct Tile {
    a: *const u32,
    steps: usize,
    b: *const Line,
    c: *mut f32,
    ldc: usize,
}

/// For int8: each row's (scale, minimum) from `rows`, and the panel's 64 weight scales
/// and column sums.
#[cfg(target_arch = "x86_64")]
struct Dequant {
    rows: *const (f32, f32),
    scale: *const f32,
    colsum: *const f32,
}

#[cfg(target_arch = "x86_64")]
impl Tile {
    /// `c[r][0..64] += Σ_j a[r][j] · b[j]` over `R` rows, in bf16 pairs.
    ///
    /// # Safety
    /// AVX512-BF16 present; `R` rows of `steps` words at `a`, `steps` × 4 lines at
    /// `b`, `R` rows of 64 floats at `c`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn bf16<const R: usize>(&self) {
        use std::arch::x86_64::*;
        let mut acc = [[_mm512_setzero_ps(); 4]; R];
        for j in 0..self.steps {
            let b = self.b.add(j * 4);
            let w: [__m512bh; 4] =
                std::array::from_fn(|v| std::mem::transmute(_mm512_load_si512(b.add(v).cast())));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x: __m512bh =
                    std::mem::transmute(_mm512_set1_epi32(*self.a.add(r * self.steps + j) as i32));
                for v in 0..4 {
                    acc[v] = _mm512_dpbf16_ps(acc[v], x, w[v]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (v, s) in acc.iter().enumerate() {
                let c = self.c.add(r * self.ldc + v * 16);
                _mm512_storeu_ps(c, _mm512_add_ps(_mm512_loadu_ps(c), *s));
            }
        }
    }

    /// `c[r][n] += scale[n] · (row scale · Σ_j a[r][j] · b[j] + row min · colsum[n])`
    /// over `R` rows, in u8 × i8 quads.
    ///
    /// # Safety
    /// AVX512-VNNI and AVX512-BW present; as for `bf16`, plus `R` rows at `q.rows` and
    /// 64 floats at `q.scale` and `q.colsum`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn int8<const R: usize>(&self, q: Dequant) {
        use std::arch::x86_64::*;
        let mut acc = [[_mm512_setzero_si512(); 4]; R];
        for j in 0..self.steps {
            let b = self.b.add(j * 4);
            let w: [__m512i; 4] = std::array::from_fn(|v| _mm512_load_si512(b.add(v).cast()));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_epi32(*self.a.add(r * self.steps + j) as i32);
                for v in 0..4 {
                    acc[v] = _mm512_dpbusd_epi32(acc[v], x, w[v]);
                }
            }
        }
        for v in 0..4 {
            let s = _mm512_loadu_ps(q.scale.add(v * 16));
            let cs = _mm512_mul_ps(s, _mm512_loadu_ps(q.colsum.add(v * 16)));
            for (r, acc) in acc.iter().enumerate() {
                let (rs, rmin) = *q.rows.add(r);
                let y = _mm512_fmadd_ps(
                    _mm512_cvtepi32_ps(acc[v]),
                    _mm512_mul_ps(s, _mm512_set1_ps(rs)),
                    _mm512_mul_ps(cs, _mm512_set1_ps(rmin)),
                );
                let c = self.c.add(r * self.ldc + v * 16);
                _mm512_storeu_ps(c, _mm512_add_ps(_mm512_loadu_ps(c), y));
            }
        }
    }
}

/// `a` = `x` in bf16, two per word (low half first), rounding to nearest even.
///
/// # Safety
/// AVX512-BF16 present; `a.len() * 2 == x.len()`, a multiple of 32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn convert_bf16(a: &mut [u32], x: &[f32]) {
    use std::arch::x86_64::*;
    debug_assert!(a.len() * 2 == x.len() && x.len().is_multiple_of(32));
    for (d, s) in a.chunks_exact_mut(16).zip(x.chunks_exact(32)) {
        let lo = _mm512_loadu_ps(s.as_ptr());
        let hi = _mm512_loadu_ps(s.as_ptr().add(16));
        let v: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
        _mm512_storeu_si512(d.as_mut_ptr().cast(), v);
    }
}

/// Each row of `x` (`inp` wide) as u8 between its minimum (0) and maximum (255), four
/// per word, and its (scale, minimum) pushed onto `rows`: `x ≈ scale · q + minimum`.
///
/// # Safety
/// AVX-512F and BW present; `a.len() * 4 == x.len()`, `inp` a multiple of 16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantise_rows(a: &mut [u32], rows: &mut Vec<(f32, f32)>, x: &[f32], inp: usize) {
    use std::arch::x86_64::*;
    debug_assert!(a.len() * 4 == x.len() && inp.is_multiple_of(16));
    for (d, s) in a.chunks_exact_mut(inp / 4).zip(x.chunks_exact(inp)) {
        let (mut lo, mut hi) = (_mm512_set1_ps(f32::MAX), _mm512_set1_ps(f32::MIN));
        for c in s.chunks_exact(16) {
            let v = _mm512_loadu_ps(c.as_ptr());
            lo = _mm512_min_ps(lo, v);
            hi = _mm512_max_ps(hi, v);
        }
        let (min, max) = (_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi));
        let scale = if max > min { (max - min) / 255.0 } else { 1.0 };
        rows.push((scale, min));
        let (vmin, inv) = (_mm512_set1_ps(min), _mm512_set1_ps(1.0 / scale));
        for (dc, c) in d.chunks_exact_mut(4).zip(s.chunks_exact(16)) {
            let v = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(c.as_ptr()), vmin), inv);
            // Round to nearest; never below 0 (an unsigned narrowing would wrap it).
            let i = _mm512_max_epi32(_mm512_cvtps_epi32(v), _mm512_setzero_si512());
            _mm_storeu_si128(dc.as_mut_ptr().cast(), _mm512_cvtusepi32_epi8(i));
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn convert_bf16(_: &mut [u32], _: &[f32]) {
    unreachable!("the AVX-512 products are only ever chosen on x86_64")
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn quantise_rows(_: &mut [u32], _: &mut Vec<(f32, f32)>, _: &[f32], _: usize) {
    unreachable!("the AVX-512 products are only ever chosen on x86_64")
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
                ((s % 2001) as f32 - 1000.0) / 500.0
            })
            .collect()
    }

    /// x · Wᵀ in f64 over the operands as the kernel sees them: bf16-rounded, or
    /// dequantised from u8 rows and per-channel i8 weights.
    fn reference(kind: Kind, x: &[f32], w: &[f32], l: usize, inp: usize, out: usize) -> Vec<f64> {
        let (xs, ws): (Vec<f64>, Vec<f64>) = match kind {
            Kind::Bf16 => {
                let r = |v: &f32| f64::from(f32::from_bits(u32::from(bf16(*v)) << 16));
                (x.iter().map(r).collect(), w.iter().map(r).collect())
            }
            Kind::Int8 => {
                let mut xs = Vec::new();
                for row in x.chunks_exact(inp) {
                    let min = row.iter().copied().fold(f32::MAX, f32::min);
                    let max = row.iter().copied().fold(f32::MIN, f32::max);
                    let s = (max - min) / 255.0;
                    // As the kernel rounds: times the reciprocal, ties to even.
                    let inv = 1.0 / s;
                    xs.extend(row.iter().map(|v| {
                        f64::from(s) * f64::from(((v - min) * inv).round_ties_even())
                            + f64::from(min)
                    }));
                }
                let mut ws = Vec::new();
                for row in w.chunks_exact(inp) {
                    let s = row.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
                    ws.extend(
                        row.iter()
                            .map(|v| f64::from(quantise(*v, s)) * f64::from(s)),
                    );
                }
                (xs, ws)
            }
        };
        let mut y = vec![0f64; l * out];
        for i in 0..l {
            for o in 0..out {
                y[i * out + o] = (0..inp).map(|k| xs[i * inp + k] * ws[o * inp + k]).sum();
            }
        }
        y
    }

    #[test]
    fn shapes_that_do_not_fill_panels_are_not_packed() {
        for kind in [Kind::Bf16, Kind::Int8] {
            assert!(PackedWeight::pack(&[0.0; 48 * 32], 48, 32, kind).is_none());
            assert!(PackedWeight::pack(&[0.0; 64 * 48], 64, 48, kind).is_none());
            assert!(PackedWeight::pack(&[0.0; 10], 64, 32, kind).is_none());
        }
    }

    #[test]
    fn packed_products_equal_their_reference() {
        for kind in [Kind::Bf16, Kind::Int8] {
            if !supports(kind) {
                eprintln!("SKIPPED: this CPU lacks {kind:?}; the f32 path runs instead");
                continue;
            }
            // Row counts below, at and past a tile, two panels, and a residual already
            // in dst.
            for (l, inp, out) in [(1, 32, 64), (5, 64, 64), (6, 96, 128), (13, 384, 192)] {
                let x = values(l * inp, 7 + l as u64);
                let w = values(out * inp, 11 + out as u64);
                let packed = PackedWeight::pack(&w, out, inp, kind).expect("whole panels");
                let mut dst = vec![1.0f32; l * out];
                packed.matmul_acc(&mut dst, &x, l);
                let want = reference(kind, &x, &w, l, inp, out);
                for (i, (got, want)) in dst.iter().zip(&want).enumerate() {
                    let tol = 1e-4 * (1.0 + want.abs());
                    assert!(
                        (f64::from(*got) - 1.0 - want).abs() <= tol,
                        "{kind:?} l={l} inp={inp} out={out} at {i}: {got} - 1 vs {want}"
                    );
                }
            }
        }
    }
}
