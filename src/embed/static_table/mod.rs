//! A static token embedder: one stored vector per WordPiece, summed over a text's
//! pieces and normalised. The table is distilled from a sentence-transformer
//! (model2vec-style: every piece run through the model alone, reduced by PCA, weighted
//! by frequency; `examples/distil_static.rs`), so it carries some of the model's sense
//! of which words mean alike at the cost of a lookup per piece: no model run at
//! index or query time.
//!
//! Owns the table file format and turning text into vectors with it. The table is read
//! from a file (`ENGRAM_STATIC_DIR`/NAME.bin); nothing is downloaded.
//!
//! The file, little-endian: the magic `ENGRAMST`, a u32 version (1), the table's name
//! (u32 length, UTF-8), u32 dimensions, u32 piece count, each piece (u8 length,
//! UTF-8), one f32 scale per piece, then one row of int8 per piece (value = scale ×
//! int8).

mod wordpiece;

use std::path::Path;

pub use wordpiece::{Vocab, VocabError};

use super::{EmbedError, Embedder};

const MAGIC: &[u8; 8] = b"ENGRAMST";
const VERSION: u32 = 1;
/// Texts longer than this are embedded from their first this-many bytes: a chunk's
/// meaning is settled long before, and it bounds the cost of a pathological input.
const MAX_TEXT_BYTES: usize = 1 << 20;

/// What can go wrong reading a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("not a static token table: {0}")]
    Format(String),
    #[error("not a static token table: {0}")]
    Vocab(#[from] VocabError),
}

/// A quantised static token table: a vocabulary and one int8 row per piece.
#[derive(Debug, Clone)]
pub struct StaticTable {
    name: String,
    vocab: Vocab,
    dims: usize,
    scales: Vec<f32>,
    rows: Vec<i8>,
}

impl StaticTable {
    /// Quantise float rows (`vocab.len()` rows of `dims`, flat) to int8 with one scale
    /// per row (its largest magnitude over 127).
    pub fn quantize(
        name: &str,
        vocab: Vocab,
        dims: usize,
        rows: &[f32],
    ) -> Result<StaticTable, TableError> {
        if dims == 0 || rows.len() != vocab.len() * dims {
            return Err(TableError::Format(format!(
                "{} floats for {} pieces of {dims} dimensions",
                rows.len(),
                vocab.len()
            )));
        }
        let mut scales = Vec::with_capacity(vocab.len());
        let mut q = Vec::with_capacity(rows.len());
        for row in rows.chunks_exact(dims) {
            let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
            let scale = if max.is_finite() && max > 0.0 {
                max / 127.0
            } else {
                0.0
            };
            scales.push(scale);
            for x in row {
                let v = if scale > 0.0 {
                    (x / scale).round()
                } else {
                    0.0
                };
                q.push(v.clamp(-127.0, 127.0) as i8);
            }
        }
        Ok(StaticTable {
            name: name.into(),
            vocab,
            dims,
            scales,
            rows: q,
        })
    }

    /// The table's name, which names the vector space (`static-minilm-128-sif`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Floats per row.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// The file's bytes (see the module documentation).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rows.len() + self.scales.len() * 5 + 1024);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.name.len() as u32).to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(&(self.dims as u32).to_le_bytes());
        out.extend_from_slice(&(self.vocab.len() as u32).to_le_bytes());
        for p in self.vocab.pieces() {
            // `Vocab::new` refuses pieces over 255 bytes.
            out.push(p.len() as u8);
            out.extend_from_slice(p.as_bytes());
        }
        for s in &self.scales {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend(self.rows.iter().map(|&x| x as u8));
        out
    }

    /// A table from a file's bytes; every length is checked before it is used.
    pub fn from_bytes(bytes: &[u8]) -> Result<StaticTable, TableError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(8)? != MAGIC {
            return Err(TableError::Format("bad magic".into()));
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(TableError::Format(format!(
                "version {version}, not {VERSION}"
            )));
        }
        let n = r.u32()? as usize;
        let name = r.string(n)?;
        let dims = r.u32()? as usize;
        let count = r.u32()? as usize;
        if dims == 0 || dims > 4096 {
            return Err(TableError::Format(format!("{dims} dimensions")));
        }
        let mut pieces = Vec::with_capacity(count.min(1 << 20));
        for _ in 0..count {
            let len = usize::from(r.take(1)?[0]);
            pieces.push(r.string(len)?);
        }
        let vocab = Vocab::new(pieces)?;
        let scales: Vec<f32> = r
            .take(count * 4)?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let rows: Vec<i8> = r.take(count * dims)?.iter().map(|&b| b as i8).collect();
        if r.at != bytes.len() {
            return Err(TableError::Format("trailing bytes".into()));
        }
        Ok(StaticTable {
            name,
            vocab,
            dims,
            scales,
            rows,
        })
    }

    /// A table from a file.
    pub fn read(path: &Path) -> Result<StaticTable, TableError> {
        let bytes = std::fs::read(path).map_err(|source| TableError::Read {
            path: path.display().to_string(),
            source,
        })?;
        StaticTable::from_bytes(&bytes)
    }

    /// The unit vector of `text` (all zeros when no piece of it is in the table).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut end = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut ids = Vec::new();
        self.vocab.tokenize(&text[..end], &mut ids);
        let mut v = vec![0f32; self.dims];
        for id in ids {
            let i = id as usize;
            let scale = self.scales[i];
            if scale == 0.0 {
                continue;
            }
            let row = &self.rows[i * self.dims..(i + 1) * self.dims];
            v.iter_mut()
                .zip(row)
                .for_each(|(s, &x)| *s += scale * f32::from(x));
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 && norm.is_finite() {
            v.iter_mut().for_each(|x| *x /= norm);
        } else {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
        v
    }
}

/// Bounds-checked reading of a table file.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], TableError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| TableError::Format("truncated".into()))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, TableError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn string(&mut self, n: usize) -> Result<String, TableError> {
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| TableError::Format("a string is not UTF-8".into()))
    }
}

/// [`StaticTable`] as an [`Embedder`], named by its table.
#[derive(Debug, Clone)]
pub struct StaticEmbedder {
    table: StaticTable,
}

impl StaticEmbedder {
    /// The embedder of a table.
    pub fn new(table: StaticTable) -> StaticEmbedder {
        StaticEmbedder { table }
    }

    /// The table `name` (`static-…`) from `dir/NAME.bin`; refused when the file's
    /// own name differs, so a renamed file cannot pass for another vector space.
    pub fn load(name: &str, dir: &Path) -> Result<StaticEmbedder, TableError> {
        let table = StaticTable::read(&dir.join(format!("{name}.bin")))?;
        if table.name() != name {
            return Err(TableError::Format(format!(
                "the file for {name} holds the table {}",
                table.name()
            )));
        }
        Ok(StaticEmbedder { table })
    }
}

impl Embedder for StaticEmbedder {
    fn name(&self) -> &str {
        self.table.name()
    }

    fn dimensions(&self) -> usize {
        self.table.dims()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.table.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests;
