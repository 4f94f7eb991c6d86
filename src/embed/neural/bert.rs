//! BERT's encoder forward pass over one unpadded sequence, on the CPU in f32.
//!
//! Owns the weights (read once from `model.safetensors` through candle) and the
//! arithmetic: embeddings, then per layer fused QKV projection, per-head attention,
//! output projection, GELU feed-forward and the two layer norms, exactly as Hugging
//! Face's `BertModel` computes them. Each sequence runs alone at its own length, so no
//! work is spent on padding and no attention mask is needed; the caller runs many
//! sequences at once on different cores. The linear layers multiply on AMX tiles in
//! bf16 where the CPU has them (`amx`), else in int8 or bf16 with AVX-512 (`avx512`),
//! else in f32 through the `gemm` crate; attention has its own kernels (`attention`). It never panics on a malformed file: a
//! missing or mis-shaped tensor is an error naming it.

use std::path::Path;

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device};
use candle_transformers::models::bert::{Config, HiddenAct};
use gemm::Parallelism;

use super::amx::{self, PackedWeight};
use super::attention::attend;
use super::avx512;
use super::ops::{activation, layer_norm, linear, linear_acc};
use super::NeuralError;

/// A linear layer's weight matrix (`out × inp`, PyTorch's layout): f32 for `ops`, or
/// packed into AMX tiles when this process may use them and the shape fills them, or
/// else packed for AVX-512's int8 or bf16 products (`avx512`).
enum Weight {
    F32(Vec<f32>),
    Tiles(PackedWeight),
    Packed(avx512::PackedWeight),
}

impl Weight {
    fn new(w: Vec<f32>, out: usize, inp: usize) -> Weight {
        if amx::available() {
            if let Some(p) = PackedWeight::pack(&w, out, inp) {
                return Weight::Tiles(p);
            }
        } else if let Some(kind) = avx512::kind() {
            return match avx512::PackedWeight::pack(w, out, inp, kind) {
                Ok(p) => Weight::Packed(p),
                Err(w) => Weight::F32(w),
            };
        }
        Weight::F32(w)
    }

    /// dst (l × out) = x · Wᵀ + b, or dst += x · Wᵀ + b when `acc` (the residual
    /// connection already in dst).
    #[allow(clippy::too_many_arguments)]
    fn project(
        &self,
        dst: &mut [f32],
        x: &[f32],
        l: usize,
        (inp, out): (usize, usize),
        b: &[f32],
        acc: bool,
        par: Parallelism,
    ) {
        match self {
            Weight::F32(w) if acc => linear_acc(dst, x, l, inp, out, w, b, par),
            Weight::F32(w) => linear(dst, x, l, inp, out, w, b, par),
            Weight::Packed(p) => p.matmul(dst, x, l, b, (acc, false), par),
            Weight::Tiles(p) => {
                for row in dst[..l * out].chunks_exact_mut(out) {
                    if acc {
                        row.iter_mut().zip(b).for_each(|(d, b)| *d += b);
                    } else {
                        row.copy_from_slice(b);
                    }
                }
                p.matmul_acc(dst, x, l);
            }
        }
    }
}

struct Layer {
    qkv_w: Weight, // (3H, H): query, key, value rows stacked
    qkv_b: Vec<f32>,
    o_w: Weight, // (H, H)
    o_b: Vec<f32>,
    ln1: (Vec<f32>, Vec<f32>),
    i_w: Weight, // (I, H)
    i_b: Vec<f32>,
    out_w: Weight, // (H, I)
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
                qkv_w: Weight::new(qkv_w, 3 * h, h),
                qkv_b,
                o_w: Weight::new(
                    w.load(&format!("{p}attention.output.dense.weight"), &[h, h])?,
                    h,
                    h,
                ),
                o_b: w.load(&format!("{p}attention.output.dense.bias"), &[h])?,
                ln1: w.norm(&format!("{p}attention.output.LayerNorm"), h)?,
                i_w: Weight::new(
                    w.load(&format!("{p}intermediate.dense.weight"), &[i, h])?,
                    i,
                    h,
                ),
                i_b: w.load(&format!("{p}intermediate.dense.bias"), &[i])?,
                out_w: Weight::new(w.load(&format!("{p}output.dense.weight"), &[h, i])?, h, i),
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

    /// `"bf16 on AMX tiles"`, `"int8 (AVX512-VNNI)"` or `"bf16 (AVX512-BF16)"` when
    /// every linear layer's weights were packed so, else `"f32"` (a layer whose shape
    /// does not fill tiles or panels stays f32).
    pub fn matmul_kind(&self) -> &'static str {
        let kind = |w: &Weight| match w {
            Weight::F32(_) => "f32",
            Weight::Tiles(_) => "bf16 on AMX tiles",
            Weight::Packed(p) => p.describe(),
        };
        let first = self.layers.first().map_or("f32", |l| kind(&l.qkv_w));
        if self.layers.iter().all(|l| {
            [&l.qkv_w, &l.o_w, &l.i_w, &l.out_w]
                .iter()
                .all(|w| kind(w) == first)
        }) {
            first
        } else {
            "f32"
        }
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
        let (nh, i) = (self.heads, self.inter);
        let mut qkv = vec![0f32; l * 3 * h];
        let mut scores = vec![0f32; l * l];
        let mut ctx = vec![0f32; l * h];
        let mut tmp = vec![0f32; l * h];
        let mut mid = vec![0f32; l * i];
        for layer in &self.layers {
            layer
                .qkv_w
                .project(&mut qkv, &x, l, (h, 3 * h), &layer.qkv_b, false, par);
            attend(&mut ctx, &qkv, &mut scores, (l, h, nh), par);
            tmp.copy_from_slice(&x);
            layer
                .o_w
                .project(&mut tmp, &ctx, l, (h, h), &layer.o_b, true, par);
            layer_norm(&mut tmp, h, &layer.ln1, self.eps);
            match &layer.i_w {
                // GELU on the products while they are in registers.
                Weight::Packed(p) if self.act == HiddenAct::Gelu => {
                    p.matmul(&mut mid, &tmp, l, &layer.i_b, (false, true), par)
                }
                w => {
                    w.project(&mut mid, &tmp, l, (h, i), &layer.i_b, false, par);
                    activation(&mut mid, self.act);
                }
            }
            x.copy_from_slice(&tmp);
            layer
                .out_w
                .project(&mut x, &mid, l, (i, h), &layer.out_b, true, par);
            layer_norm(&mut x, h, &layer.ln2, self.eps);
        }
        Ok(x)
    }
}
