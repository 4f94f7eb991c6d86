//! Distils all-MiniLM-L6-v2 into static token tables for `engram::embed::StaticEmbedder`
//! (model2vec-style; see `tools/search-eval/README.md`, "Static token tables").
//!
//! 1. Every WordPiece of the model's vocabulary runs through the model alone, as
//!    `[CLS] piece [SEP]`; its output is mean-pooled over the three positions (as
//!    sentence-transformers pools MiniLM), or for a `tok-` variant the piece's own
//!    position is taken, into one 384-float row. Cached in `OUT/minilm-rows-mean.f32`
//!    and `OUT/minilm-rows-tok.f32`, since this is the slow step (about 7 minutes on
//!    two busy cores).
//! 2. For each variant asked for: rows centred and projected on their top principal
//!    components (PCA), scaled by a frequency weight, quantised to int8 with one scale
//!    per row, and written as `OUT/static-minilm-VARIANT.bin`.
//!
//! ```text
//! cargo run --profile ci --features neural --example distil_static -- \
//!     --model-dir DIR [--out target/static-minilm] [--variants 128-sif,256-none,...] \
//!     [--freq-corpus DIR,DIR...]
//! ```
//!
//! A variant is `[tok-]DIMS-WEIGHTING`: `tok-` for the piece's own output row, DIMS the kept components (or `full`, no PCA);
//! WEIGHTING one of `none`, `sif` (the vocabulary's order as a Zipf rank, model2vec's
//! default, a = 1e-4), `log` (log(1 + rank) as model2vec first did), or `df` (SIF with
//! frequencies counted over the `--freq-corpus` source trees, which must share no
//! package with the eval).

#[path = "distil_static/pca.rs"]
mod pca;
#[path = "distil_static/weights.rs"]
mod weights;

use std::path::{Path, PathBuf};

use engram::embed::neural::NeuralEmbedder;
use engram::embed::static_table::{StaticTable, Vocab};
use rayon::prelude::*;

const HIDDEN: usize = 384;

struct Args {
    model_dir: PathBuf,
    out: PathBuf,
    variants: Vec<String>,
    freq_corpus: Vec<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut model_dir = std::env::var_os("ENGRAM_MODEL_DIR").map(PathBuf::from);
    let mut out = PathBuf::from("target/static-minilm");
    let mut variants = vec!["128-sif".to_string()];
    let mut freq_corpus = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--model-dir" => model_dir = Some(PathBuf::from(val()?)),
            "--out" => out = PathBuf::from(val()?),
            "--variants" => variants = val()?.split(',').map(str::to_string).collect(),
            "--freq-corpus" => {
                freq_corpus = val()?.split(',').map(PathBuf::from).collect();
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(Args {
        model_dir: model_dir.ok_or("--model-dir (or ENGRAM_MODEL_DIR) is needed")?,
        out,
        variants,
        freq_corpus,
    })
}

fn main() {
    let args = args().unwrap_or_else(|e| {
        eprintln!("distil_static: {e}");
        std::process::exit(2)
    });
    if let Err(e) = run(&args) {
        eprintln!("distil_static: {e}");
        std::process::exit(1)
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(&args.out)?;
    let vocab_text = std::fs::read_to_string(args.model_dir.join("vocab.txt"))?;
    let vocab = Vocab::new(vocab_text.lines().map(str::to_string).collect())?;
    let mut rows = [None, None];
    let counts = if args.variants.iter().any(|v| v.ends_with("-df")) {
        Some(weights::corpus_counts(&vocab, &args.freq_corpus)?)
    } else {
        None
    };
    for variant in &args.variants {
        let (pool, spec) = match variant.strip_prefix("tok-") {
            Some(rest) => (Pool::Token, rest),
            None => (Pool::Mean, variant.as_str()),
        };
        let rows = match &mut rows[pool as usize] {
            Some(r) => r,
            slot => slot.insert(token_rows(args, &vocab, pool)?),
        };
        let (dims, weighting) = spec
            .split_once('-')
            .ok_or(format!("variant {variant:?}: DIMS-WEIGHTING"))?;
        let mut table = if dims == "full" {
            rows.clone()
        } else {
            let d: usize = dims.parse()?;
            pca::project(rows, HIDDEN, d, &usable(&vocab))
        };
        let d = table.len() / vocab.len();
        let w = weights::weights(weighting, &vocab, counts.as_deref())?;
        for (row, w) in table.chunks_exact_mut(d).zip(&w) {
            row.iter_mut().for_each(|x| *x *= w);
        }
        let name = format!("static-minilm-{variant}");
        let t = StaticTable::quantize(&name, vocab.clone(), d, &table)?;
        let path = args.out.join(format!("{name}.bin"));
        std::fs::write(&path, t.to_bytes())?;
        eprintln!("wrote {} ({} bytes)", path.display(), t.to_bytes().len());
    }
    Ok(())
}

/// Which vocabulary entries get a row: not the special and `[unusedN]` ones.
fn usable(vocab: &Vocab) -> Vec<bool> {
    (0..vocab.len())
        .map(|i| !vocab.piece(i).starts_with('['))
        .collect()
}

/// Which of the model's output rows make a piece's row.
#[derive(Clone, Copy)]
enum Pool {
    /// The mean over `[CLS] piece [SEP]`, as sentence-transformers pools.
    Mean = 0,
    /// The piece's own row.
    Token = 1,
}

/// The model's output for each vocabulary entry alone, pooled by `pool`, cached.
fn token_rows(
    args: &Args,
    vocab: &Vocab,
    pool: Pool,
) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let tag = match pool {
        Pool::Mean => "mean",
        Pool::Token => "tok",
    };
    let cache = args.out.join(format!("minilm-rows-{tag}.f32"));
    if let Ok(bytes) = std::fs::read(&cache) {
        if bytes.len() == vocab.len() * HIDDEN * 4 {
            eprintln!("using cached rows {}", cache.display());
            return Ok(bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect());
        }
    }
    let model = NeuralEmbedder::load("all-minilm-l6-v2", &args.model_dir)?;
    let (cls, sep) = (special(vocab, "[CLS]")?, special(vocab, "[SEP]")?);
    let usable = usable(vocab);
    let t = std::time::Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let rows: Vec<Vec<f32>> = (0..vocab.len())
        .into_par_iter()
        .map(|i| {
            if !usable[i] {
                return Ok(vec![0f32; HIDDEN]);
            }
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n.is_multiple_of(5000) {
                eprintln!("{n} pieces, {:.0}s", t.elapsed().as_secs_f64());
            }
            let hidden = model.last_hidden(&[cls, i as u32, sep])?;
            Ok::<_, engram::embed::neural::NeuralError>(match pool {
                Pool::Token => hidden[HIDDEN..2 * HIDDEN].to_vec(),
                Pool::Mean => (0..HIDDEN)
                    .map(|j| (hidden[j] + hidden[HIDDEN + j] + hidden[2 * HIDDEN + j]) / 3.0)
                    .collect(),
            })
        })
        .collect::<Result<_, _>>()?;
    let flat: Vec<f32> = rows.concat();
    write_f32(&cache, &flat)?;
    eprintln!(
        "distilled {} pieces in {:.0}s",
        vocab.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(flat)
}

fn special(vocab: &Vocab, piece: &str) -> Result<u32, String> {
    vocab
        .id(piece)
        .ok_or(format!("the vocabulary has no {piece}"))
}

fn write_f32(path: &Path, xs: &[f32]) -> std::io::Result<()> {
    let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes)
}
