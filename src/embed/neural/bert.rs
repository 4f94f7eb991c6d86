//! BERT's encoder forward pass over one unpadded sequence, on the CPU in f32.
//!
//! Owns the weights (`model.safetensors` mapped into memory, the large matrices read
//! in place: `weights`) and the arithmetic: embeddings, then per layer the query, key
//! and value projections, per-head attention, output projection, GELU feed-forward and
//! the two layer norms, exactly as Hugging Face's `BertModel` computes them. Each
//! sequence runs alone at its own length, so no work is spent on padding and no
//! attention mask is needed; the caller runs many sequences at once on different
//! cores. The linear layers multiply on AMX tiles in bf16 where the CPU has them
//! (`amx`); every other matrix product goes through the `gemm` crate (AVX-512/AVX2
//! kernels picked at run time). It never panics on a malformed file: a missing or
//! mis-shaped tensor is an error naming it.

use std::path::Path;

use candle_transformers::models::bert::{Config, HiddenAct};
use gemm::Parallelism;

use super::amx::{self, PackedWeight};
use super::ops::{activation, layer_norm, linear, linear_acc, mm, softmax_rows};
use super::weights::{Floats, Mapped};
use super::NeuralError;

/// A linear layer's weight matrix (`out × inp`, PyTorch's layout): f32 for `ops` (read
/// in place from the mapped file when it can be), or packed into AMX tiles when this
/// process may use them and the shape fills them.
enum Weight {
    F32(Floats),
    Tiles(PackedWeight),
}

impl Weight {
    fn new(w: Floats, out: usize, inp: usize) -> Weight {
        if amx::available() {
            if let Some(p) = PackedWeight::pack(&w, out, inp) {
                return Weight::Tiles(p);
            }
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
    // Query, key and value (H, H) each: three products rather than one over a stacked
    // (3H, H) matrix, so each is read in place from the file instead of being copied
    // into a new one at every load.
    qkv_w: [Weight; 3],
    qkv_b: [Vec<f32>; 3],
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
    /// the copy of the small tensors and of the fused query/key/value matrices.
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
            let part_w = |part: &str| -> Result<Weight, NeuralError> {
                let m = w.floats(&format!("{p}attention.self.{part}.weight"), &[h, h])?;
                Ok(Weight::new(m, h, h))
            };
            let part_b = |part: &str| w.load(&format!("{p}attention.self.{part}.bias"), &[h]);
            layers.push(Layer {
                qkv_w: [part_w("query")?, part_w("key")?, part_w("value")?],
                qkv_b: [part_b("query")?, part_b("key")?, part_b("value")?],
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

    /// `"bf16 on AMX tiles"` when every linear layer's weights were packed for AMX,
    /// else `"f32"` (a layer whose shape does not fill tiles stays f32).
    pub fn matmul_kind(&self) -> &'static str {
        let tiled = |w: &Weight| matches!(w, Weight::Tiles(_));
        if self
            .layers
            .iter()
            .all(|l| l.qkv_w.iter().all(tiled) && tiled(&l.o_w) && tiled(&l.i_w) && tiled(&l.out_w))
        {
            "bf16 on AMX tiles"
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
        let (d, nh, i) = (h / self.heads, self.heads, self.inter);
        let scale = 1.0 / (d as f32).sqrt();
        let mut qkv = [vec![0f32; l * h], vec![0f32; l * h], vec![0f32; l * h]];
        let mut scores = vec![0f32; l * l];
        let mut ctx = vec![0f32; l * h];
        let mut tmp = vec![0f32; l * h];
        let mut mid = vec![0f32; l * i];
        for layer in &self.layers {
            for ((dst, w), b) in qkv.iter_mut().zip(&layer.qkv_w).zip(&layer.qkv_b) {
                w.project(dst, &x, l, (h, h), b, false, par);
            }
            for head in 0..nh {
                let q = &qkv[0][head * d..];
                let k = &qkv[1][head * d..];
                let v = &qkv[2][head * d..];
                // scores = q · kᵀ / √d   (l × l; rows are h apart)
                mm(
                    &mut scores,
                    l,
                    l,
                    d,
                    (l, 1),
                    q,
                    (h, 1),
                    k,
                    (1, h),
                    scale,
                    false,
                    par,
                );
                softmax_rows(&mut scores, l);
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
                    (h, 1),
                    1.0,
                    false,
                    par,
                );
            }
            tmp.copy_from_slice(&x);
            layer
                .o_w
                .project(&mut tmp, &ctx, l, (h, h), &layer.o_b, true, par);
            layer_norm(&mut tmp, h, &layer.ln1, self.eps);
            layer
                .i_w
                .project(&mut mid, &tmp, l, (h, i), &layer.i_b, false, par);
            activation(&mut mid, self.act);
            x.copy_from_slice(&tmp);
            layer
                .out_w
                .project(&mut x, &mid, l, (i, h), &layer.out_b, true, par);
            layer_norm(&mut x, h, &layer.ln2, self.eps);
        }
        Ok(x)
    }
}
