//! The packed products against a plain f64 product over the operands as the kernels
//! see them (rounded to bf16, or dequantised from their int8 groups), for row counts
//! below, at and past a tile, several panels and groups, a bias, and a residual; and a
//! matrix given in row blocks (query, key and value) against the same matrix whole.

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

/// x · Wᵀ in f64 over the operands `path` gives the kernel (`None`: the f32 product).
fn reference(
    path: Option<Kind>,
    x: &[f32],
    w: &[f32],
    l: usize,
    inp: usize,
    out: usize,
) -> Vec<f64> {
    let (xs, ws): (Vec<f64>, Vec<f64>) = match path {
        None => (
            x.iter().copied().map(f64::from).collect(),
            w.iter().copied().map(f64::from).collect(),
        ),
        Some(Kind::Bf16) => {
            let r = |v: &f32| f64::from(f32::from_bits(u32::from(bf16(*v)) << 16));
            (x.iter().map(r).collect(), w.iter().map(r).collect())
        }
        Some(Kind::Int8) => {
            let mut xs = Vec::new();
            for part in x.chunks_exact(GROUP) {
                let min = part.iter().copied().fold(f32::MAX, f32::min);
                let max = part.iter().copied().fold(f32::MIN, f32::max);
                let s = (max - min) / 255.0;
                // As the kernel rounds: times the reciprocal, ties to even.
                let inv = 1.0 / s;
                xs.extend(part.iter().map(|v| {
                    f64::from(s) * f64::from(((v - min) * inv).round_ties_even()) + f64::from(min)
                }));
            }
            let mut ws = Vec::new();
            for part in w.chunks_exact(GROUP) {
                let s = part.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
                ws.extend(
                    part.iter()
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
        let m = |n: usize| vec![Floats::Owned(vec![0.0; n])];
        assert!(PackedWeight::pack(m(48 * 64), 48, 64, kind).is_err());
        assert!(PackedWeight::pack(m(64 * (GROUP + 32)), 64, GROUP + 32, kind).is_err());
        assert!(PackedWeight::pack(m(10), 64, 64, kind).is_err());
    }
}

#[test]
fn packed_products_equal_their_reference() {
    for kind in [Kind::Bf16, Kind::Int8] {
        if !supports(kind) {
            eprintln!("SKIPPED: this CPU lacks {kind:?}; the f32 path runs instead");
            continue;
        }
        for (l, inp, out) in [
            (1, GROUP, 64),
            (5, GROUP, 64),
            (16, 2 * GROUP, 64),
            (19, 384, 192),
            (40, 3 * GROUP, 128),
        ] {
            let x = values(l * inp, 7 + l as u64);
            let w = values(out * inp, 11 + out as u64);
            let bias = values(out, 5);
            let packed = PackedWeight::pack(vec![Floats::Owned(w.clone())], out, inp, kind)
                .unwrap_or_else(|_| panic!("whole panels"));
            // int8 only from INT8_MIN_TOKENS rows; below, f32.
            let path = match kind {
                Kind::Int8 if l < INT8_MIN_TOKENS => None,
                k => Some(k),
            };
            let want = reference(path, &x, &w, l, inp, out);
            for (accumulate, gelu) in [(false, false), (true, false), (false, true)] {
                let mut dst = vec![1.0f32; l * out];
                packed.matmul(
                    &mut dst,
                    &x,
                    l,
                    &bias,
                    (accumulate, gelu),
                    Parallelism::None,
                );
                for (i, (got, want)) in dst.iter().zip(&want).enumerate() {
                    let mut want = want + f64::from(bias[i % out]);
                    if accumulate {
                        want += 1.0;
                    }
                    if gelu {
                        let mut g = [want as f32];
                        activation(&mut g, HiddenAct::Gelu);
                        want = f64::from(g[0]);
                    }
                    let tol = 1e-4 * (1.0 + want.abs());
                    assert!(
                        (f64::from(*got) - want).abs() <= tol,
                        "{kind:?} l={l} inp={inp} out={out} {accumulate} {gelu} at {i}: {got} vs {want}"
                    );
                }
            }
        }
    }
}

/// Query, key and value given as three blocks give what the stacked matrix gives, on
/// every path (the blocks are stacked when packed, or write their own columns in f32).
#[test]
fn a_matrix_in_blocks_equals_it_whole() {
    let (inp, out) = (128, 192);
    let w = values(out * inp, 3);
    let bias = values(out, 4);
    for kind in [Kind::Bf16, Kind::Int8] {
        if !supports(kind) {
            eprintln!("SKIPPED: this CPU lacks {kind:?}");
            continue;
        }
        let whole = PackedWeight::pack(vec![Floats::Owned(w.clone())], out, inp, kind)
            .unwrap_or_else(|_| panic!("whole panels"));
        let blocks = w
            .chunks_exact(64 * inp)
            .map(|b| Floats::Owned(b.to_vec()))
            .collect();
        let blocks =
            PackedWeight::pack(blocks, out, inp, kind).unwrap_or_else(|_| panic!("whole panels"));
        for l in [3, 20] {
            let x = values(l * inp, 9 + l as u64);
            let (mut a, mut b) = (vec![0f32; l * out], vec![0f32; l * out]);
            whole.matmul(&mut a, &x, l, &bias, (false, false), Parallelism::None);
            blocks.matmul(&mut b, &x, l, &bias, (false, false), Parallelism::None);
            assert!(
                a.iter().any(|v| *v != 0.0),
                "{kind:?} l={l}: nothing computed"
            );
            for (i, (a, b)) in a.iter().zip(&b).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * (1.0 + a.abs()),
                    "{kind:?} l={l} at {i}: {a} vs {b}"
                );
            }
        }
    }
}

/// The short-text product writes only its block's columns, for a block whose rows
/// are not a multiple of the four it takes at a time.
#[test]
fn the_row_product_writes_its_columns_of_a_short_text() {
    if !f32_kernels() {
        eprintln!("SKIPPED: this CPU lacks AVX-512F");
        return;
    }
    let (l, inp, n, out, col) = (3, 32, 7, 12, 4);
    let x = values(l * inp, 3);
    let w = values(n * inp, 9);
    let want = reference(None, &x, &w, l, inp, n);
    let mut dst = vec![0.5f32; l * out];
    // SAFETY: AVX-512F found; inp is a multiple of 16, x holds l rows, dst l rows of
    // `out` reaching column col + n.
    unsafe { rows_product(&mut dst, (out, col), &x, l, inp, &w) };
    for m in 0..l {
        for c in 0..out {
            let got = f64::from(dst[m * out + c]);
            let want = match c.checked_sub(col) {
                Some(j) if j < n => 0.5 + want[m * n + j],
                _ => 0.5,
            };
            assert!(
                (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "row {m} column {c}: {got} vs {want}"
            );
        }
    }
}
