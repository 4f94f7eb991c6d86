//! The linear layers' matrix products on CPUs with AVX-512 but without AMX (AMD Zen 4
//! and later, Intel Ice Lake and later): in int8 with AVX512-VNNI (`vpdpbusd`) or in
//! bf16 with AVX512-BF16 (`vdpbf16ps`), summed in i32 or f32.
//!
//! Owns: which of them this process uses (the CPU's features and the switch
//! `ENGRAM_NEURAL_AVX512`), packing a weight matrix on its first use (from the f32
//! matrix as loaded, usually a view of the mapped file), converting the activations
//! per call, and `dst (+)= x · Wᵀ + b` over a packed matrix in register tiles. int8
//! quantises in groups of 128 inputs: the weights per output and group (symmetric), the
//! activations per row and group (between the group's minimum and maximum). That keeps
//! sentence vectors of texts of 16 tokens or more within a cosine of about 8e-4 of the
//! f32 path; shorter texts (queries, mostly, whose vectors one token's noise moves
//! more, and which cost little) run in f32 from the loaded matrix, so a process that
//! only embeds queries never packs. bf16 (`ENGRAM_NEURAL_AVX512=bf16`, or a CPU with
//! AVX512-BF16 but not VNNI) runs every text, about 5e-5 from f32.
//! `tests/it/neural_reference.rs` holds every path to 0.999.
//!
//! Must never execute an instruction the CPU lacks: the kernels are compiled for their
//! features and only run after [`supports`] found them. Every pointer a kernel reads or
//! writes through lies inside a slice whose length was checked first.

use std::cell::RefCell;
use std::sync::OnceLock;

use gemm::Parallelism;
use rayon::prelude::*;

use candle_transformers::models::bert::HiddenAct;

use super::ops::{activation, mm};
use super::weights::Floats;

/// Outputs per panel: four AVX-512 vectors of 16 lanes.
const NR: usize = 64;
/// Inputs per int8 quantisation group: 32 steps of 4.
const GROUP: usize = 128;
/// Texts with fewer tokens than this never run in int8.
const INT8_MIN_TOKENS: usize = 16;

/// Which reduced-precision products the linear layers use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// u8 activations × i8 weights for texts of [`INT8_MIN_TOKENS`] or more, bf16
    /// (or f32) below.
    Int8,
    /// bf16 × bf16 for every text.
    Bf16,
}

/// `ENGRAM_NEURAL_AVX512`, read once.
fn switch() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| std::env::var("ENGRAM_NEURAL_AVX512").unwrap_or_default())
}

/// What the linear layers use (decided once): `ENGRAM_NEURAL_AVX512=0` refuses both,
/// `=bf16` pins bf16, anything else takes int8 where the CPU has VNNI, else bf16 where
/// it has AVX512-BF16.
pub(super) fn kind() -> Option<Kind> {
    match switch() {
        "0" => None,
        "bf16" => supports(Kind::Bf16).then_some(Kind::Bf16),
        _ if supports(Kind::Int8) => Some(Kind::Int8),
        _ => supports(Kind::Bf16).then_some(Kind::Bf16),
    }
}

/// Whether attention may run its bf16 kernels (`attention_bf16`): the switch is not
/// `0` and the CPU has AVX512-BF16.
pub(super) fn bf16_attention() -> bool {
    switch() != "0" && supports(Kind::Bf16)
}

/// Whether attention may run its f32 AVX-512 kernels: the switch is not `0` and the
/// CPU has AVX-512F.
pub(super) fn f32_kernels() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    switch() != "0"
        && *HAS.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                std::arch::is_x86_feature_detected!("avx512f")
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                false
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

/// The int8 form: lines as for bf16 but holding quads `W[n][4j..4j+4]` quantised as
/// `round(W / scale)`, and per group (rows) and output (columns) the scale and
/// `scale · Σ` of the group's quantised weights (what the activations' offset adds).
struct Int8 {
    lines: Vec<Line>,
    scale: Vec<f32>,
    zsum: Vec<f32>,
}

/// A weight matrix W (`out × inp`, PyTorch's layout for `y = x · Wᵀ`), given as row
/// blocks stacked along `out` (one block, or query, key and value: they are stacked
/// here, not in the file, so the file's tensors are read in place), and packed in
/// panels of 64 outputs for the products. Within a panel, one step along the inner
/// dimension is four lines: bf16 holds for each of the 64 outputs the pair
/// `W[n][2j], W[n][2j+1]`.
///
/// The packed forms are made on first use, not at load: a process that embeds only
/// short texts (a CLI search's query) never packs, and one that indexes packs each
/// matrix once (int8: a byte per weight plus two floats per 128; bf16: two bytes).
pub(super) struct PackedWeight {
    kind: Kind,
    out: usize,
    inp: usize,
    /// The f32 matrix as loaded (usually a view of the mapped file), in row blocks:
    /// what short texts multiply with under int8, and what the packed forms come from.
    parts: Vec<Floats>,
    int8: OnceLock<Int8>,
    bf16: OnceLock<Vec<Line>>,
}

impl PackedWeight {
    /// Prepare `parts` (row blocks of `inp` columns, `out` rows in all) for `kind`, or
    /// hand them back when the CPU lacks `kind` or the shape does not fill whole
    /// panels and groups (`out` a multiple of 64, `inp` of 128): such layers stay in
    /// f32. Nothing is packed yet.
    pub(super) fn pack(
        parts: Vec<Floats>,
        out: usize,
        inp: usize,
        kind: Kind,
    ) -> Result<Self, Vec<Floats>> {
        if !supports(kind)
            || out == 0
            || inp == 0
            || !out.is_multiple_of(NR)
            || !inp.is_multiple_of(GROUP)
            || parts.iter().map(|p| p.len()).sum::<usize>() != out * inp
            || parts.iter().any(|p| !p.len().is_multiple_of(inp))
        {
            return Err(parts);
        }
        Ok(PackedWeight {
            kind,
            out,
            inp,
            parts,
            int8: OnceLock::new(),
            bf16: OnceLock::new(),
        })
    }

    /// What the products run in, for `matmul_kind`.
    pub(super) fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Int8 => "int8 (AVX512-VNNI); f32 below 16 tokens",
            Kind::Bf16 => "bf16 (AVX512-BF16)",
        }
    }

    /// W's rows in order, across the blocks.
    fn rows(&self) -> impl Iterator<Item = &[f32]> {
        self.parts.iter().flat_map(|p| p.chunks_exact(self.inp))
    }

    /// The int8 form, packed on first use.
    fn int8(&self) -> &Int8 {
        self.int8.get_or_init(|| {
            let t = std::time::Instant::now();
            let q = pack_int8(self.rows(), self.out, self.inp);
            tracing::debug!(
                "packed a {}x{} matrix in int8 in {:.2} ms",
                self.out,
                self.inp,
                t.elapsed().as_secs_f64() * 1000.0
            );
            q
        })
    }

    /// The bf16 form, packed on first use.
    fn bf16(&self) -> &[Line] {
        self.bf16
            .get_or_init(|| pack_bf16(self.rows(), self.out, self.inp))
    }

    /// `dst (l × out) = x (l × inp) · Wᵀ + b`, or `dst += x · Wᵀ + b` when
    /// `accumulate` (the residual connection already in dst), or `dst = GELU(x · Wᵀ +
    /// b)` when `gelu` (exact form; not with `accumulate`). In int8 when the kind is
    /// int8 and l (the text's tokens) reaches [`INT8_MIN_TOKENS`], in f32 from the
    /// loaded matrix below that; in bf16 when the kind is bf16.
    pub(super) fn matmul(
        &self,
        dst: &mut [f32],
        x: &[f32],
        l: usize,
        b: &[f32],
        (accumulate, gelu): (bool, bool),
        par: Parallelism,
    ) {
        let (out, inp) = (self.out, self.inp);
        assert!(
            l > 0 && x.len() >= l * inp && dst.len() >= l * out && b.len() == out,
            "packed product out of bounds"
        );
        assert!(
            !(accumulate && gelu),
            "GELU after a residual is not a BERT layer"
        );
        let (x, dst) = (&x[..l * inp], &mut dst[..l * out]);
        let path = match self.kind {
            Kind::Int8 if l >= INT8_MIN_TOKENS => Path::Int8(self.int8()),
            Kind::Bf16 => Path::Bf16(self.bf16()),
            Kind::Int8 => {
                self.f32_product(dst, x, l, b, accumulate, par);
                if gelu {
                    activation(dst, HiddenAct::Gelu);
                }
                return;
            }
        };
        assert!(supports(path.kind()), "packed product not available");
        SCRATCH.with(|scratch| {
            let (a, rows) = &mut *scratch.borrow_mut();
            // Four bytes per step of the inner dimension: a bf16 pair or a u8 quad;
            // every word of the first l rows is overwritten below.
            let words = l * inp / group(path.kind());
            if a.len() < words {
                a.resize(words, 0);
            }
            rows.clear();
            let a = &mut a[..words];
            let t = Tiles {
                out,
                inp,
                b: b.as_ptr(),
                accumulate,
                gelu,
            };
            // SAFETY: `supports` found the CPU has the path's features. `a` holds l
            // rows of `inp / group` words, `dst` l rows of `out`, the lines out/64
            // panels of `inp / group` steps of 4 lines, the int8 scales `inp / 64`
            // rows of `out`, `rows` `inp / 64` pairs per row of x, `b` `out` floats;
            // the tiles reach rows < l, panels < out/64 and steps within a row.
            unsafe {
                match path {
                    Path::Bf16(lines) => {
                        convert_bf16(a, x);
                        t.bf16(dst, a, lines, l);
                    }
                    Path::Int8(q) => {
                        quantise_rows(a, rows, x);
                        t.int8(dst, a, rows, q, l);
                    }
                }
            }
        });
    }

    /// `dst (+)= x · Wᵀ + b` in f32 through `gemm`, each row block of W writing its
    /// own columns of dst (rows `out` apart).
    fn f32_product(
        &self,
        dst: &mut [f32],
        x: &[f32],
        l: usize,
        b: &[f32],
        accumulate: bool,
        par: Parallelism,
    ) {
        let (out, inp) = (self.out, self.inp);
        for row in dst.chunks_exact_mut(out) {
            if accumulate {
                row.iter_mut().zip(b).for_each(|(d, b)| *d += b);
            } else {
                row.copy_from_slice(b);
            }
        }
        let mut col = 0;
        for w in &self.parts {
            let n = w.len() / inp;
            // A short text: stream W's rows once rather than have `gemm` pack them
            // (a packed copy of every matrix for a dozen tokens is most of a CLI
            // search's query embedding).
            if l < INT8_MIN_TOKENS && f32_kernels() {
                assert!(
                    inp.is_multiple_of(16)
                        && w.len() == n * inp
                        && x.len() >= l * inp
                        && dst.len() >= (l - 1) * out + col + n,
                    "row product out of bounds"
                );
                match par {
                    // One text on several cores (a query): each streams its share
                    // of W's rows into its own block, added into dst after. A CLI
                    // search reads the whole model once from the page cache, and
                    // one core alone does not reach the memory's bandwidth.
                    Parallelism::Rayon(threads) if threads > 1 && n >= 64 * threads => {
                        let share = n.div_ceil(threads);
                        let parts: Vec<(usize, Vec<f32>)> = w
                            .par_chunks(share * inp)
                            .enumerate()
                            .map(|(i, rows)| {
                                let k = rows.len() / inp;
                                let mut block = vec![0.0f32; l * k];
                                // SAFETY: as below, for `block`: l rows of k.
                                unsafe { rows_product(&mut block, (k, 0), x, l, inp, rows) };
                                (i * share, block)
                            })
                            .collect();
                        for (first, block) in parts {
                            let k = block.len() / l;
                            for (m, r) in block.chunks_exact(k).enumerate() {
                                let d = &mut dst[m * out + col + first..][..k];
                                d.iter_mut().zip(r).for_each(|(d, r)| *d += r);
                            }
                        }
                    }
                    // SAFETY: `f32_kernels` found AVX-512F; the lengths it reads and
                    // writes were checked just above.
                    _ => unsafe { rows_product(dst, (out, col), x, l, inp, w) },
                }
                col += n;
                continue;
            }
            mm(
                &mut dst[col..],
                l,
                n,
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
            col += n;
        }
    }
}

/// The products one call runs.
enum Path<'a> {
    Int8(&'a Int8),
    Bf16(&'a [Line]),
}

impl Path<'_> {
    fn kind(&self) -> Kind {
        match self {
            Path::Int8(_) => Kind::Int8,
            Path::Bf16(_) => Kind::Bf16,
        }
    }
}

/// Inner-dimension elements per 32-bit word of the activations.
fn group(kind: Kind) -> usize {
    match kind {
        Kind::Bf16 => 2,
        Kind::Int8 => 4,
    }
}

fn pack_bf16<'a>(w: impl Iterator<Item = &'a [f32]>, out: usize, inp: usize) -> Vec<Line> {
    let steps = inp / 2;
    let mut lines = vec![Line([0; 64]); out / NR * steps * 4];
    for (n, row) in w.enumerate() {
        let (panel, lane) = (n / NR, n % NR);
        for (j, v) in row.chunks_exact(2).enumerate() {
            let line = &mut lines[(panel * steps + j) * 4 + lane / 16].0;
            let at = (lane % 16) * 4;
            line[at..at + 2].copy_from_slice(&bf16(v[0]).to_le_bytes());
            line[at + 2..at + 4].copy_from_slice(&bf16(v[1]).to_le_bytes());
        }
    }
    lines
}

fn pack_int8<'a>(w: impl Iterator<Item = &'a [f32]>, out: usize, inp: usize) -> Int8 {
    let (steps, groups) = (inp / 4, inp / GROUP);
    let mut lines = vec![Line([0; 64]); out / NR * steps * 4];
    let mut scale = vec![0f32; groups * out];
    let mut zsum = vec![0f32; groups * out];
    for (n, row) in w.enumerate() {
        let (panel, lane) = (n / NR, n % NR);
        for (g, part) in row.chunks_exact(GROUP).enumerate() {
            let max = part.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = if max > 0.0 { max / 127.0 } else { 1.0 };
            scale[g * out + n] = s;
            let mut sum = 0i32;
            for (jj, quad) in part.chunks_exact(4).enumerate() {
                let j = g * GROUP / 4 + jj;
                let line = &mut lines[(panel * steps + j) * 4 + lane / 16].0;
                let at = (lane % 16) * 4;
                for (b, v) in line[at..at + 4].iter_mut().zip(quad) {
                    let q = quantise(*v, s);
                    sum += i32::from(q);
                    *b = q as u8;
                }
            }
            zsum[g * out + n] = s * sum as f32;
        }
    }
    Int8 { lines, scale, zsum }
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
    /// groups' (scale, minimum). Kept between calls: every layer of every text needs
    /// them at about the same size.
    static SCRATCH: RefCell<Scratch> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Activation words, and per row and group (scale, minimum).
type Scratch = (Vec<u32>, Vec<(f32, f32)>);

/// One product's shape, bias and mode, shared by its register tiles.
struct Tiles {
    out: usize,
    inp: usize,
    b: *const f32,
    accumulate: bool,
    gelu: bool,
}

#[cfg(target_arch = "x86_64")]
mod kernels;

#[cfg(not(target_arch = "x86_64"))]
mod kernels {
    impl super::Tiles {
        pub(super) unsafe fn bf16(&self, _: &mut [f32], _: &[u32], _: &[super::Line], _: usize) {
            unreachable!("the AVX-512 products are only ever chosen on x86_64")
        }
        pub(super) unsafe fn int8(
            &self,
            _: &mut [f32],
            _: &[u32],
            _: &[(f32, f32)],
            _: &super::Int8,
            _: usize,
        ) {
            unreachable!("the AVX-512 products are only ever chosen on x86_64")
        }
    }
    pub(super) unsafe fn convert_bf16(_: &mut [u32], _: &[f32]) {
        unreachable!("the AVX-512 products are only ever chosen on x86_64")
    }
    pub(super) unsafe fn quantise_rows(_: &mut [u32], _: &mut Vec<(f32, f32)>, _: &[f32]) {
        unreachable!("the AVX-512 products are only ever chosen on x86_64")
    }
    pub(super) unsafe fn rows_product(
        _: &mut [f32],
        _: (usize, usize),
        _: &[f32],
        _: usize,
        _: usize,
        _: &[f32],
    ) {
        unreachable!("the AVX-512 products are only ever chosen on x86_64")
    }
}

use kernels::{convert_bf16, quantise_rows, rows_product};

#[cfg(test)]
mod tests;
