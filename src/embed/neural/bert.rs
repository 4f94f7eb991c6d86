//! BERT's encoder forward pass over one unpadded sequence, on the CPU in f32.
//!
//! Owns the weights (`model.safetensors` mapped into memory, the large matrices read
//! in place: `weights`) and the arithmetic: embeddings, then per layer the query, key
//! and value projections, per-head attention, output projection, GELU feed-forward and
//! the two layer norms, exactly as Hugging Face's `BertModel` computes them. Each
//! sequence runs alone at its own length, so no work is spent on padding and no
//! attention mask is needed; the caller runs many sequences at once on different
//! cores. The linear layers multiply on AMX tiles in bf16 where the CPU has them
//! (`amx`), else in int8 or bf16 with AVX-512 (`avx512`, packed from the mapped
//! matrices on first use), else in f32 through the `gemm` crate (AVX-512/AVX2 kernels
//! picked at run time); attention has its own kernels (`attention`). It never panics
//! on a malformed file: a missing or mis-shaped tensor is an error naming it.

use std::path::Path;

use candle_transformers::models::bert::{Config, HiddenAct};
use gemm::Parallelism;

use super::amx::{self, PackedWeight};
use super::attention::attend;
use super::avx512;
use super::ops::{activation, layer_norm, linear, linear_acc, mm};
use super::weights::{Floats, Mapped};
use super::NeuralError;

/// A linear layer's weight matrix (`out × inp`, PyTorch's layout): f32 for `ops` (read
/// in place from the mapped file when it can be), or packed into AMX tiles when this
/// process may use them and the shape fills them, or else prepared for AVX-512's int8
/// or bf16 products (`avx512`).
enum Weight {
    F32(Floats),
    Tiles(PackedWeight),
    Packed(avx512::PackedWeight),
}

impl Weight {
    fn new(w: Floats, out: usize, inp: usize) -> Weight {
        if amx::available() {
            if let Some(p) = PackedWeight::pack(&w, out, inp) {
                return Weight::Tiles(p);
            }
        } else if let Some(kind) = avx512::kind() {
            return match avx512::PackedWeight::pack(vec![w], out, inp, kind) {
                Ok(p) => Weight::Packed(p),
                Err(mut w) => Weight::F32(w.remove(0)),
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

/// Query, key and value (H, H) each, read in place from the file. Their products
/// land side by side in one (l × 3H) buffer, as attention reads them.
enum Qkv {
    /// Stacked when packed for AVX-512: one product of 3H outputs.
    Fused(avx512::PackedWeight),
    /// Three products, each writing its own H columns (boxed: a Weight is large, and
    /// there is one Qkv per layer).
    Split(Box<[Weight; 3]>),
}

impl Qkv {
    fn new(q: Floats, k: Floats, v: Floats, h: usize) -> Qkv {
        if !amx::available() {
            if let Some(kind) = avx512::kind() {
                match avx512::PackedWeight::pack(vec![q, k, v], 3 * h, h, kind) {
                    Ok(p) => return Qkv::Fused(p),
                    Err(parts) => {
                        let mut it = parts.into_iter().map(Weight::F32);
                        if let (Some(q), Some(k), Some(v)) = (it.next(), it.next(), it.next()) {
                            return Qkv::Split(Box::new([q, k, v]));
                        }
                        unreachable!("pack hands back the three blocks it was given");
                    }
                }
            }
        }
        Qkv::Split(Box::new([q, k, v].map(|w| Weight::new(w, h, h))))
    }

    /// `qkv` (l × 3h) = x · [Wq; Wk; Wv]ᵀ + b; `part` is scratch of l × h.
    #[allow(clippy::too_many_arguments)]
    fn project(
        &self,
        qkv: &mut [f32],
        part: &mut [f32],
        x: &[f32],
        (l, h): (usize, usize),
        b: &[f32],
        par: Parallelism,
    ) {
        let ws = match self {
            Qkv::Fused(p) => return p.matmul(qkv, x, l, b, (false, false), par),
            Qkv::Split(ws) => ws,
        };
        for (p, (w, b)) in ws.iter().zip(b.chunks_exact(h)).enumerate() {
            match w {
                // Straight into its columns: rows 3h apart.
                Weight::F32(w) => {
                    for row in qkv[..l * 3 * h].chunks_exact_mut(3 * h) {
                        row[p * h..][..h].copy_from_slice(b);
                    }
                    mm(
                        &mut qkv[p * h..],
                        l,
                        h,
                        h,
                        (3 * h, 1),
                        x,
                        (h, 1),
                        w,
                        (1, h),
                        1.0,
                        true,
                        par,
                    );
                }
                w => {
                    w.project(part, x, l, (h, h), b, false, par);
                    for (dst, src) in qkv.chunks_exact_mut(3 * h).zip(part.chunks_exact(h)) {
                        dst[p * h..][..h].copy_from_slice(src);
                    }
                }
            }
        }
    }
}

struct Layer {
    qkv_w: Qkv,
    qkv_b: Vec<f32>, // 3H: query, key, value
    o_w: Weight,     // (H, H)
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
    word: Floats,
    pos: Floats,
    token_type0: Vec<f32>,
    emb_ln: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
}

struct Weights {
    file: Mapped,
    prefix: &'static str,
}

impl Weights {
    fn has(&self, name: &str) -> bool {
        self.file.has(&format!("{}{name}", self.prefix))
    }

    fn floats(&self, name: &str, shape: &[usize]) -> Result<Floats, NeuralError> {
        self.file.floats(&format!("{}{name}", self.prefix), shape)
    }

    /// A small tensor (a bias, a norm's scale), copied out.
    fn load(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, NeuralError> {
        self.floats(name, shape).map(Floats::into_vec)
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
    /// Map the weights of `path` for the model `cfg` describes: the large matrices are
    /// read in place from the mapping (see `weights`), so this costs a header parse and
    /// the copy of the small tensors. Nothing is packed here: the AVX-512 products pack
    /// each matrix on its first use (`avx512`); AMX tiles are packed here.
    pub fn load(path: &Path, cfg: &Config) -> Result<Bert, NeuralError> {
        let mut w = Weights {
            file: Mapped::open(path)?,
            prefix: "",
        };
        if !w.has("embeddings.word_embeddings.weight") {
            w.prefix = "bert.";
        }
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let word = w.floats("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let pos = w.floats(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let types = w.load(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let token_type0 = types
            .get(..h)
            .ok_or_else(|| NeuralError::Unsupported {
                path: path.to_path_buf(),
                reason: "type_vocab_size is 0: no token type embedding".into(),
            })?
            .to_vec();
        let emb_ln = w.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}.");
            let part_w =
                |part: &str| w.floats(&format!("{p}attention.self.{part}.weight"), &[h, h]);
            let part_b = |part: &str| w.load(&format!("{p}attention.self.{part}.bias"), &[h]);
            layers.push(Layer {
                qkv_w: Qkv::new(part_w("query")?, part_w("key")?, part_w("value")?, h),
                qkv_b: [part_b("query")?, part_b("key")?, part_b("value")?].concat(),
                o_w: Weight::new(
                    w.floats(&format!("{p}attention.output.dense.weight"), &[h, h])?,
                    h,
                    h,
                ),
                o_b: w.load(&format!("{p}attention.output.dense.bias"), &[h])?,
                ln1: w.norm(&format!("{p}attention.output.LayerNorm"), h)?,
                i_w: Weight::new(
                    w.floats(&format!("{p}intermediate.dense.weight"), &[i, h])?,
                    i,
                    h,
                ),
                i_b: w.load(&format!("{p}intermediate.dense.bias"), &[i])?,
                out_w: Weight::new(w.floats(&format!("{p}output.dense.weight"), &[h, i])?, h, i),
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
            token_type0,
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
        let all: Vec<&'static str> = self
            .layers
            .iter()
            .flat_map(|l| {
                let qkv = match &l.qkv_w {
                    Qkv::Fused(p) => vec![p.describe()],
                    Qkv::Split(ws) => ws.iter().map(kind).collect(),
                };
                qkv.into_iter()
                    .chain([kind(&l.o_w), kind(&l.i_w), kind(&l.out_w)])
            })
            .collect();
        let first = all.first().copied().unwrap_or("f32");
        if all.iter().all(|k| *k == first) {
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
                .project(&mut qkv, &mut ctx, &x, (l, h), &layer.qkv_b, par);
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
