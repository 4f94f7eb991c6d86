//! BERT's encoder forward pass over one unpadded sequence, on the CPU in f32.
//!
//! Owns the weights (read once from `model.safetensors` through candle) and the
//! arithmetic: embeddings, then per layer fused QKV projection, per-head attention,
//! output projection, GELU feed-forward and the two layer norms, exactly as Hugging
//! Face's `BertModel` computes them. Each sequence runs alone at its own length, so no
//! work is spent on padding and no attention mask is needed; the caller runs many
//! sequences at once on different cores. Matrix products go through the `gemm` crate
//! (AVX-512/AVX2 kernels picked at run time). It never panics on a malformed file: a
//! missing or mis-shaped tensor is an error naming it.

use std::path::Path;

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device};
use candle_transformers::models::bert::{Config, HiddenAct};
use gemm::Parallelism;

use super::NeuralError;

struct Layer {
    qkv_w: Vec<f32>, // (3H, H): query, key, value rows stacked
    qkv_b: Vec<f32>,
    o_w: Vec<f32>, // (H, H)
    o_b: Vec<f32>,
    ln1: (Vec<f32>, Vec<f32>),
    i_w: Vec<f32>, // (I, H)
    i_b: Vec<f32>,
    out_w: Vec<f32>, // (H, I)
    out_b: Vec<f32>,
    ln2: (Vec<f32>, Vec<f32>),
}

/// A loaded BERT encoder.
pub struct Bert {
    hidden: usize,
    heads: usize,
    inter: usize,
    eps: f32,
    max_positions: usize,
    act: HiddenAct,
    word: Vec<f32>,
    pos: Vec<f32>,
    token_type0: Vec<f32>,
    emb_ln: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
}

struct Weights<'a> {
    st: MmapedSafetensors,
    prefix: &'a str,
    path: &'a Path,
}

impl Weights<'_> {
    fn has(&self, name: &str) -> bool {
        self.st.get(&format!("{}{name}", self.prefix)).is_ok()
    }

    fn load(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, NeuralError> {
        let full = format!("{}{name}", self.prefix);
        let bad = |reason: String| NeuralError::Unsupported {
            path: self.path.to_path_buf(),
            reason: format!("tensor {full}: {reason}"),
        };
        let t = self
            .st
            .load(&full, &Device::Cpu)
            .map_err(|e| bad(e.to_string()))?;
        if t.dims() != shape {
            return Err(bad(format!("shape {:?}, expected {shape:?}", t.dims())));
        }
        t.to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| bad(e.to_string()))
    }

    /// A layer norm's scale and shift (`weight`/`bias`, or old checkpoints' `gamma`/`beta`).
    fn norm(&self, name: &str, h: usize) -> Result<(Vec<f32>, Vec<f32>), NeuralError> {
        if self.has(&format!("{name}.weight")) {
            Ok((
                self.load(&format!("{name}.weight"), &[h])?,
                self.load(&format!("{name}.bias"), &[h])?,
            ))
        } else {
            Ok((
                self.load(&format!("{name}.gamma"), &[h])?,
                self.load(&format!("{name}.beta"), &[h])?,
            ))
        }
    }
}

impl Bert {
    /// Read the weights of `path` for the model `cfg` describes.
    pub fn load(path: &Path, cfg: &Config) -> Result<Bert, NeuralError> {
        // SAFETY: the file is mapped read-only and engram never writes model files; the
        // tensors are copied out before the mapping is dropped at the end of this call.
        let st =
            unsafe { MmapedSafetensors::new(path) }.map_err(|source| NeuralError::Weights {
                path: path.to_path_buf(),
                source,
            })?;
        let mut w = Weights {
            st,
            prefix: "",
            path,
        };
        if !w.has("embeddings.word_embeddings.weight") {
            w.prefix = "bert.";
        }
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let word = w.load("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let pos = w.load(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let types = w.load(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let emb_ln = w.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}.");
            let mut qkv_w = Vec::with_capacity(3 * h * h);
            let mut qkv_b = Vec::with_capacity(3 * h);
            for part in ["query", "key", "value"] {
                qkv_w.extend(w.load(&format!("{p}attention.self.{part}.weight"), &[h, h])?);
                qkv_b.extend(w.load(&format!("{p}attention.self.{part}.bias"), &[h])?);
            }
            layers.push(Layer {
                qkv_w,
                qkv_b,
                o_w: w.load(&format!("{p}attention.output.dense.weight"), &[h, h])?,
                o_b: w.load(&format!("{p}attention.output.dense.bias"), &[h])?,
                ln1: w.norm(&format!("{p}attention.output.LayerNorm"), h)?,
                i_w: w.load(&format!("{p}intermediate.dense.weight"), &[i, h])?,
                i_b: w.load(&format!("{p}intermediate.dense.bias"), &[i])?,
                out_w: w.load(&format!("{p}output.dense.weight"), &[h, i])?,
                out_b: w.load(&format!("{p}output.dense.bias"), &[h])?,
                ln2: w.norm(&format!("{p}output.LayerNorm"), h)?,
            });
        }
        Ok(Bert {
            hidden: h,
            heads: cfg.num_attention_heads,
            inter: i,
            eps: cfg.layer_norm_eps as f32,
            max_positions: cfg.max_position_embeddings,
            act: cfg.hidden_act,
            token_type0: types[..h].to_vec(),
            word,
            pos,
            emb_ln,
            layers,
        })
    }

    /// The last hidden state of `ids` (one row of `hidden` floats per token). Ids
    /// outside the vocabulary and tokens past the position table are refused.
    pub fn forward(&self, ids: &[u32], par: Parallelism) -> Result<Vec<f32>, NeuralError> {
        let (h, l) = (self.hidden, ids.len());
        if l > self.max_positions {
            return Err(NeuralError::Tokenize(format!(
                "{l} tokens, more than the model's {} positions",
                self.max_positions
            )));
        }
        let mut x = vec![0f32; l * h];
        for (t, &id) in ids.iter().enumerate() {
            let id = id as usize;
            let word = self.word.get(id * h..(id + 1) * h).ok_or_else(|| {
                NeuralError::Tokenize(format!("token id {id} is outside the vocabulary"))
            })?;
            let row = &mut x[t * h..(t + 1) * h];
            let pos = &self.pos[t * h..(t + 1) * h];
            for j in 0..h {
                row[j] = word[j] + pos[j] + self.token_type0[j];
            }
        }
        layer_norm(&mut x, h, &self.emb_ln, self.eps);
        let (d, nh, i) = (h / self.heads, self.heads, self.inter);
        let scale = 1.0 / (d as f32).sqrt();
        let mut qkv = vec![0f32; l * 3 * h];
        let mut scores = vec![0f32; l * l];
        let mut ctx = vec![0f32; l * h];
        let mut tmp = vec![0f32; l * h];
        let mut mid = vec![0f32; l * i];
        for layer in &self.layers {
            linear(&mut qkv, &x, l, h, 3 * h, &layer.qkv_w, &layer.qkv_b, par);
            for head in 0..nh {
                let q = &qkv[head * d..];
                let k = &qkv[h + head * d..];
                let v = &qkv[2 * h + head * d..];
                // scores = q · kᵀ / √d   (l × l; q and k rows are 3h apart)
                mm(
                    &mut scores,
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
                for row in scores.chunks_exact_mut(l) {
                    softmax(row);
                }
                // ctx[:, head] = scores · v
                mm(
                    &mut ctx[head * d..],
                    l,
                    d,
                    l,
                    (h, 1),
                    &scores,
                    (l, 1),
                    v,
                    (3 * h, 1),
                    1.0,
                    false,
                    par,
                );
            }
            tmp.copy_from_slice(&x);
            linear_acc(&mut tmp, &ctx, l, h, h, &layer.o_w, &layer.o_b, par);
            layer_norm(&mut tmp, h, &layer.ln1, self.eps);
            linear(&mut mid, &tmp, l, h, i, &layer.i_w, &layer.i_b, par);
            activation(&mut mid, self.act);
            x.copy_from_slice(&tmp);
            linear_acc(&mut x, &mid, l, i, h, &layer.out_w, &layer.out_b, par);
            layer_norm(&mut x, h, &layer.ln2, self.eps);
        }
        Ok(x)
    }
}

/// dst (m × n, row stride `dst_s.0`) = alpha·lhs·rhs (+ dst when `acc`), with lhs
/// (m × k) and rhs (k × n) given by (row, column) strides. Bounds are checked before
/// the unchecked kernel runs.
#[allow(clippy::too_many_arguments)]
fn mm(
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
fn linear(
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
fn linear_acc(
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

fn layer_norm(x: &mut [f32], h: usize, (g, b): &(Vec<f32>, Vec<f32>), eps: f32) {
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(g).zip(b) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = exp(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inv);
}

fn activation(x: &mut [f32], act: HiddenAct) {
    match act {
        HiddenAct::Gelu => x
            .iter_mut()
            .for_each(|v| *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2))),
        HiddenAct::GeluApproximate => x.iter_mut().for_each(|v| {
            let u = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
            *v = 0.5 * *v * (1.0 + u.tanh());
        }),
        HiddenAct::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
    }
}

/// e^x in f32 (relative error about 2e-7; branch-free, so loops over it vectorise).
#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Round to nearest by adding and taking away 1.5·2²³ (plain adds vectorise;
    // `f32::round` is a library call without SSE4.1).
    const SHIFT: f32 = 12_582_912.0;
    let n = (x * std::f32::consts::LOG2_E + SHIFT) - SHIFT;
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    // e^r on [-ln2/2, ln2/2]: Taylor terms to r⁶.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    p * f32::from_bits(((n as i32 + 127) as u32) << 23)
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
        }
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
