//! A `model.safetensors` file mapped into memory, its f32 tensors used where they lie.
//!
//! Owns reading the safetensors header (a little-endian length, then JSON naming each
//! tensor's dtype, shape and byte range) and handing out each tensor as [`Floats`]: for
//! f32 data on a little-endian machine, a view of the mapping (nothing is copied; the
//! pages are read from the page cache when first touched, so a query touches only the
//! rows of the word-embedding table its tokens use); for f16, bf16 or f64 data, or a
//! misaligned range, an owned f32 copy. Loading the model thus costs a header parse,
//! not a copy of its 90 MB of weights. Every range and shape is checked against the
//! file before use; a malformed file is an error naming the tensor, never a panic or
//! an out-of-bounds read. It never writes the file.

use std::collections::HashMap;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::NeuralError;

/// A tensor's f32 values: borrowed from the mapping, or owned.
pub enum Floats {
    /// `len` f32 values at byte `start` of `map` (checked: in bounds and 4-aligned).
    Mapped {
        map: Arc<memmap2::Mmap>,
        start: usize,
        len: usize,
    },
    Owned(Vec<f32>),
}

impl Deref for Floats {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match self {
            Floats::Owned(v) => v,
            Floats::Mapped { map, start, len } => {
                let bytes = &map[*start..*start + len * 4];
                // Alignment and length were checked when the value was made, so this
                // cast cannot fail; an empty slice would be the answer if it did.
                <[f32] as zerocopy::FromBytes>::ref_from_bytes(bytes).unwrap_or_default()
            }
        }
    }
}

impl Floats {
    /// The values as an owned vector (a copy when mapped).
    pub fn into_vec(self) -> Vec<f32> {
        match self {
            Floats::Owned(v) => v,
            mapped => mapped.to_vec(),
        }
    }

    /// True when the values are read from the mapping in place.
    #[cfg(test)]
    pub fn is_mapped(&self) -> bool {
        matches!(self, Floats::Mapped { .. })
    }
}

#[derive(Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

/// A mapped safetensors file and its table of tensors.
pub struct Mapped {
    path: PathBuf,
    map: Arc<memmap2::Mmap>,
    /// Byte offset of the data section (after the header).
    data: usize,
    tensors: HashMap<String, Entry>,
}

impl Mapped {
    /// Map `path` and read its header.
    pub fn open(path: &Path) -> Result<Mapped, NeuralError> {
        let bad = |reason: String| NeuralError::Parse {
            path: path.to_path_buf(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(|source| NeuralError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        // SAFETY: the mapping is read-only and engram never writes model files. A file
        // replaced while mapped (tools/setup.sh and `engram model fetch` put new files
        // in place by rename) leaves this mapping on the old inode, which stays valid;
        // only truncating the file in place under a running process could fault.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| NeuralError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let head: [u8; 8] = map
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad("shorter than a safetensors header".into()))?;
        let n = usize::try_from(u64::from_le_bytes(head))
            .ok()
            .filter(|n| n.checked_add(8).is_some_and(|end| end <= map.len()))
            .ok_or_else(|| bad("the header length runs past the end of the file".into()))?;
        let mut table: HashMap<String, serde_json::Value> = serde_json::from_slice(&map[8..8 + n])
            .map_err(|e| bad(format!("the header is not a JSON table: {e}")))?;
        table.remove("__metadata__");
        let data = 8 + n;
        let room = map.len() - data;
        let mut tensors = HashMap::with_capacity(table.len());
        for (name, v) in table {
            let e: Entry =
                serde_json::from_value(v).map_err(|err| bad(format!("tensor {name}: {err}")))?;
            let [b, end] = e.data_offsets;
            if b > end || end > room {
                return Err(bad(format!(
                    "tensor {name}: bytes {b}..{end} are outside the data section ({room} bytes)"
                )));
            }
            tensors.insert(name, e);
        }
        Ok(Mapped {
            path: path.to_path_buf(),
            map: Arc::new(map),
            data,
            tensors,
        })
    }

    /// True when the file holds a tensor called `name`.
    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The tensor `name`, which must have `shape`, as f32 values (row-major).
    pub fn floats(&self, name: &str, shape: &[usize]) -> Result<Floats, NeuralError> {
        let bad = |reason: String| NeuralError::Unsupported {
            path: self.path.clone(),
            reason: format!("tensor {name}: {reason}"),
        };
        let e = self
            .tensors
            .get(name)
            .ok_or_else(|| bad("not in the file".into()))?;
        if e.shape != shape {
            return Err(bad(format!("shape {:?}, expected {shape:?}", e.shape)));
        }
        let count: usize = shape.iter().product();
        let [b, end] = e.data_offsets;
        let bytes = &self.map[self.data + b..self.data + end];
        let width = match e.dtype.as_str() {
            "F32" => 4,
            "F16" | "BF16" => 2,
            "F64" => 8,
            other => {
                return Err(bad(format!(
                    "dtype {other}; f32, f16, bf16 or f64 expected"
                )))
            }
        };
        if bytes.len() != count * width {
            return Err(bad(format!(
                "{} bytes for {count} {} values",
                bytes.len(),
                e.dtype
            )));
        }
        let start = self.data + b;
        let aligned = (self.map.as_ptr() as usize + start).is_multiple_of(4);
        if e.dtype == "F32" && aligned && cfg!(target_endian = "little") {
            return Ok(Floats::Mapped {
                map: self.map.clone(),
                start,
                len: count,
            });
        }
        let values = match e.dtype.as_str() {
            "F32" => bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            "F64" => bytes
                .chunks_exact(8)
                .map(|c| {
                    f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32
                })
                .collect(),
            "BF16" => bytes
                .chunks_exact(2)
                .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
                .collect(),
            _ => bytes
                .chunks_exact(2)
                .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
        };
        Ok(Floats::Owned(values))
    }
}

/// IEEE half precision to single, exactly (subnormals, infinities and NaN included).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value = frac · 2^-24.
            return if sign != 0 { -1.0 } else { 1.0 } * frac as f32 * (2f32).powi(-24);
        }
        (0x1f, _) => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 112) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file with the given (name, dtype, shape, raw bytes) tensors.
    fn file(tensors: &[(&str, &str, Vec<usize>, Vec<u8>)]) -> tempfile::NamedTempFile {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            header.insert(
                name.to_string(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [data.len(), data.len() + bytes.len()]}),
            );
            data.extend_from_slice(bytes);
        }
        let mut h = serde_json::to_vec(&header).unwrap();
        while !h.len().is_multiple_of(8) {
            h.push(b' ');
        }
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend(h);
        out.extend(data);
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), out).unwrap();
        f
    }

    #[test]
    fn f32_tensors_are_read_in_place_others_are_converted() {
        let f32s: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bf16: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
            .collect();
        // 1.0, -2.5, 65504 (largest f16), 2^-24 (smallest subnormal)
        let f16: Vec<u8> = [0x3c00u16, 0xc100, 0x7bff, 0x0001]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let f = file(&[
            ("a", "F32", vec![2, 2], f32s),
            ("b", "BF16", vec![2], bf16),
            ("c", "F16", vec![4], f16),
        ]);
        let m = Mapped::open(f.path()).unwrap();
        let a = m.floats("a", &[2, 2]).unwrap();
        assert!(a.is_mapped());
        assert_eq!(&*a, &[1.5, -2.0, 3.25, 0.0]);
        assert_eq!(&*m.floats("b", &[2]).unwrap(), &[1.5, -2.0]);
        assert_eq!(
            &*m.floats("c", &[4]).unwrap(),
            &[1.0, -2.5, 65504.0, (2f32).powi(-24)]
        );
        let err = m.floats("a", &[4]).err().unwrap().to_string();
        assert!(
            err.contains("tensor a") && err.contains("shape [2, 2]"),
            "{err}"
        );
        assert!(m.floats("zz", &[1]).is_err());
    }

    #[test]
    fn a_malformed_file_is_an_error_not_a_panic() {
        let f = file(&[("a", "F32", vec![3], vec![0; 8])]);
        let m = Mapped::open(f.path()).unwrap();
        let err = m.floats("a", &[3]).err().unwrap().to_string();
        assert!(err.contains("8 bytes for 3 F32 values"), "{err}");
        let short = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(short.path(), [200u8, 0, 0, 0, 0, 0, 0, 0, b'{']).unwrap();
        assert!(Mapped::open(short.path()).is_err());
        let mut h = b"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,400]}}".to_vec();
        let mut bytes = (h.len() as u64).to_le_bytes().to_vec();
        bytes.append(&mut h);
        std::fs::write(short.path(), bytes).unwrap();
        let err = Mapped::open(short.path()).err().unwrap().to_string();
        assert!(err.contains("outside the data section"), "{err}");
    }
}
