//! The linear layers' matrix products in bf16 on Intel AMX (Sapphire Rapids and later),
//! accumulated in f32.
//!
//! Owns: finding out whether this process may use AMX (the CPU says so, and Linux grants
//! the tile state on request, once per process), packing a weight matrix into the tiles
//! `tdpbf16ps` reads, and `dst += x · Wᵀ` over a packed matrix. Rounding the inputs to
//! bf16 moves all-MiniLM-L6-v2's sentence vectors by a cosine of about 1e-5 from the f32
//! ones (`tests/it/neural_reference.rs` holds them to 0.999), and the tiles do 16× the
//! multiply-adds per cycle of AVX-512 in f32.
//!
//! Must never execute a tile instruction unless [`available`] said yes: on any other CPU
//! or kernel they fault. Every address a tile load or store reaches is inside a slice
//! whose length was checked first. `ENGRAM_NEURAL_AMX=0` turns the path off (then the
//! f32 products of `ops` run).

use std::cell::RefCell;
use std::sync::OnceLock;

use super::ops::simd_dispatch;

/// Rows and columns of a tile of f32 results, and bf16 pairs per row of an input tile.
const TILE: usize = 16;
/// Input elements (bf16) one tile covers along the inner dimension: 64 bytes per row.
const K_STEP: usize = 32;

/// Whether this process may run tile instructions (asked once; later calls are a load).
pub(super) fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        if std::env::var("ENGRAM_NEURAL_AMX").is_ok_and(|v| v == "0") {
            return false;
        }
        detect()
    })
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect() -> bool {
    use std::arch::x86_64::__cpuid_count;
    // CPUID.(EAX=7,ECX=0):EDX bit 22 is AMX-BF16, bit 24 AMX-TILE.
    let leaf7 = __cpuid_count(7, 0);
    if leaf7.edx & (1 << 22) == 0 || leaf7.edx & (1 << 24) == 0 {
        return false;
    }
    // Linux hands out the 8 KiB tile state only to processes that ask for it
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); the permission is process-wide.
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl with this request only changes which extended states the
    // process may use; it reads and writes no memory of ours.
    let granted = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    granted == 0
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect() -> bool {
    false
}

/// f32 to bf16, rounding to nearest even (NaN stays NaN: only finite weights and
/// activations reach here, and a NaN input would give NaN either way).
#[inline(always)]
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// A weight matrix W (`out × inp`, PyTorch's layout for `y = x · Wᵀ`) cut into the tiles
/// `tdpbf16ps` multiplies by: for each block of 16 outputs and 32 inputs, 16 rows of
/// 64 bytes, row `r` holding, for each of the 16 outputs `n`, the pair
/// `W[n][2r], W[n][2r+1]` in bf16.
pub(super) struct PackedWeight {
    out: usize,
    inp: usize,
    tiles: Vec<u16>,
}

impl PackedWeight {
    /// Pack `w`, or `None` when its shape does not fill whole tile pairs (`out` a
    /// multiple of 32, `inp` of 32); such layers stay in f32.
    pub(super) fn pack(w: &[f32], out: usize, inp: usize) -> Option<PackedWeight> {
        if out == 0 || inp == 0 || !out.is_multiple_of(2 * TILE) || !inp.is_multiple_of(K_STEP) {
            return None;
        }
        if w.len() != out * inp {
            return None;
        }
        let kbs = inp / K_STEP;
        let mut tiles = vec![0u16; out * inp];
        for nb in 0..out / TILE {
            for kb in 0..kbs {
                let tile = &mut tiles[(nb * kbs + kb) * TILE * K_STEP..][..TILE * K_STEP];
                for r in 0..K_STEP / 2 {
                    for n in 0..TILE {
                        let row = &w[(nb * TILE + n) * inp + kb * K_STEP..];
                        tile[r * K_STEP + 2 * n] = bf16(row[2 * r]);
                        tile[r * K_STEP + 2 * n + 1] = bf16(row[2 * r + 1]);
                    }
                }
            }
        }
        Some(PackedWeight { out, inp, tiles })
    }

    /// `dst (l × out) += x (l × inp) · Wᵀ`, with x rounded to bf16 and the products
    /// summed in f32. Only call when [`available`] is true.
    pub(super) fn matmul_acc(&self, dst: &mut [f32], x: &[f32], l: usize) {
        let (out, inp) = (self.out, self.inp);
        assert!(
            available() && l > 0 && x.len() >= l * inp && dst.len() >= l * out,
            "AMX product out of bounds or not available"
        );
        // Rows padded to whole pairs of tiles with zeros, so every tile is full.
        let rows = l.div_ceil(2 * TILE) * 2 * TILE;
        SCRATCH.with(|scratch| {
            let (xb, acc) = &mut *scratch.borrow_mut();
            // Reused across calls: the rows of x are overwritten, the padding rows
            // zeroed, and the kernel stores every element of `acc` it is given.
            xb.resize(rows * inp, 0);
            acc.resize(rows * out, 0.0);
            let (xb, acc) = (&mut xb[..rows * inp], &mut acc[..rows * out]);
            to_bf16(xb, &x[..l * inp]);
            xb[l * inp..].fill(0);
            // SAFETY: `available` said the CPU has AMX and Linux granted the tile
            // state. Every tile load reads 16 rows of 64 bytes at the given stride: A
            // tiles from `xb` (rows ≤ `rows`, columns < `inp`), B tiles from
            // `self.tiles` (whole tiles inside it); every store writes 16 rows of 16
            // f32 inside `acc` (rows ≤ `rows`, columns < `out`). The slices have
            // exactly those shapes, so none of them leaves its buffer.
            unsafe { kernel(xb, &self.tiles, acc, rows, inp, out) };
            add_into(&mut dst[..l * out], &acc[..l * out]);
        });
    }
}

thread_local! {
    /// Per thread: x in bf16 padded to whole tile pairs, and the products before they
    /// are added to the destination. Kept between calls, since every layer of every
    /// text needs them at about the same size.
    static SCRATCH: RefCell<(Vec<u16>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

simd_dispatch! {
    /// `dst[i] = bf16(src[i])` over the shorter of the two.
    fn to_bf16(dst: &mut [u16], src: &[f32]) {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = bf16(*s);
        }
    }
}

simd_dispatch! {
    /// `dst[i] += src[i]` over the shorter of the two.
    fn add_into(dst: &mut [f32], src: &[f32]) {
        for (d, s) in dst.iter_mut().zip(src) {
            *d += s;
        }
    }
}

/// The tile configuration: palette 1, all eight tiles 16 rows of 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn full() -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t] = 64; // bytes per row, little-endian u16
            c[48 + t] = TILE as u8; // rows
        }
        TileConfig(c)
    }
}

/// `acc (rows × out) = xb (rows × inp, bf16) · Wᵀ` in blocks of 32 × 32 results: four
/// accumulator tiles (tmm0-3), two tiles of rows of x (tmm4-5) and two of packed
/// weights (tmm6-7) per step of 32 inputs.
///
/// # Safety
/// AMX must be available to this process; `rows` and `out` must be multiples of 32,
/// `inp` of 32, `xb.len() == rows * inp`, `w.len() == out * inp` (packed), and
/// `acc.len() == rows * out`.
#[cfg(target_arch = "x86_64")]
unsafe fn kernel(xb: &[u16], w: &[u16], acc: &mut [f32], rows: usize, inp: usize, out: usize) {
    use std::arch::asm;
    debug_assert!(xb.len() == rows * inp && w.len() == out * inp && acc.len() == rows * out);
    let cfg = TileConfig::full();
    let kbs = inp / K_STEP;
    let a_stride = inp * 2;
    let c_stride = out * 4;
    let b_stride = K_STEP * 2;
    asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
    for m in (0..rows).step_by(2 * TILE) {
        for nb in (0..out / TILE).step_by(2) {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem)
            );
            let a0 = xb.as_ptr().add(m * inp);
            let a1 = a0.add(TILE * inp);
            let b0 = w.as_ptr().add(nb * kbs * TILE * K_STEP);
            let b1 = b0.add(kbs * TILE * K_STEP);
            for kb in 0..kbs {
                asm!(
                    "tileloadd tmm4, [{a0} + {sa} * 1]",
                    "tileloadd tmm5, [{a1} + {sa} * 1]",
                    "tileloadd tmm6, [{b0} + {sb} * 1]",
                    "tileloadd tmm7, [{b1} + {sb} * 1]",
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    a0 = in(reg) a0.add(kb * K_STEP),
                    a1 = in(reg) a1.add(kb * K_STEP),
                    b0 = in(reg) b0.add(kb * TILE * K_STEP),
                    b1 = in(reg) b1.add(kb * TILE * K_STEP),
                    sa = in(reg) a_stride,
                    sb = in(reg) b_stride,
                    options(nostack, readonly)
                );
            }
            let c = acc.as_mut_ptr().add(m * out + nb * TILE);
            asm!(
                "tilestored [{c00} + {sc} * 1], tmm0",
                "tilestored [{c01} + {sc} * 1], tmm1",
                "tilestored [{c10} + {sc} * 1], tmm2",
                "tilestored [{c11} + {sc} * 1], tmm3",
                c00 = in(reg) c,
                c01 = in(reg) c.add(TILE),
                c10 = in(reg) c.add(TILE * out),
                c11 = in(reg) c.add(TILE * out + TILE),
                sc = in(reg) c_stride,
                options(nostack)
            );
        }
    }
    asm!("tilerelease", options(nostack, nomem));
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn kernel(_: &[u16], _: &[u16], _: &mut [f32], _: usize, _: usize, _: usize) {
    unreachable!("AMX is only ever available on x86_64")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x · Wᵀ in f64 over the bf16-rounded inputs: what the tiles must give, up to the
    /// order of f32 additions.
    fn reference(x: &[f32], w: &[f32], l: usize, inp: usize, out: usize) -> Vec<f32> {
        let r = |v: f32| f32::from_bits(u32::from(bf16(v)) << 16) as f64;
        let mut y = vec![0f32; l * out];
        for i in 0..l {
            for o in 0..out {
                let s: f64 = (0..inp)
                    .map(|k| r(x[i * inp + k]) * r(w[o * inp + k]))
                    .sum();
                y[i * out + o] = s as f32;
            }
        }
        y
    }

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

    #[test]
    fn shapes_that_do_not_fill_tiles_are_not_packed() {
        assert!(PackedWeight::pack(&[0.0; 48 * 32], 48, 32).is_none());
        assert!(PackedWeight::pack(&[0.0; 32 * 48], 32, 48).is_none());
        assert!(PackedWeight::pack(&[0.0; 10], 32, 32).is_none());
        assert!(PackedWeight::pack(&[0.0; 64 * 96], 64, 96).is_some());
    }

    #[test]
    fn tile_products_equal_the_bf16_reference() {
        if !available() {
            eprintln!("SKIPPED: this CPU or kernel offers no AMX; the f32 path runs instead");
            return;
        }
        // Row counts below, at and past a tile pair, and a residual already in dst.
        for (l, inp, out) in [(1, 32, 32), (17, 96, 64), (32, 384, 128), (45, 64, 96)] {
            let x = values(l * inp, 7 + l as u64);
            let w = values(out * inp, 11 + out as u64);
            let packed = PackedWeight::pack(&w, out, inp).expect("whole tiles");
            let mut dst = vec![1.0f32; l * out];
            packed.matmul_acc(&mut dst, &x, l);
            let want = reference(&x, &w, l, inp, out);
            for (i, (got, want)) in dst.iter().zip(&want).enumerate() {
                let tol = 1e-4 * (1.0 + want.abs());
                assert!(
                    (got - 1.0 - want).abs() <= tol,
                    "l={l} inp={inp} out={out} at {i}: {got} - 1 vs {want}"
                );
            }
        }
    }
}
