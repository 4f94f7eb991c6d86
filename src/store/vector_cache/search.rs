//! Searching a vector cache: checks the query, then dispatches on the scan mode
//! (the rule of [`ScanMode::Auto`] lives with the scans, in `vector_scan`).
//!
//! Owns: the query checks and the choice of scan for each mode.
//! Must never: write to the cache or scan rows itself.

use super::{VectorCache, VectorCacheError};
use crate::format::vector_file;
use crate::store::vector_scan::{self, Metric, ScanMode, Sections, VectorHit};

impl VectorCache {
    /// Top-`k` live rows by `metric`, best first; equal scores by ascending key hash.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        metric: Metric,
        mode: ScanMode,
    ) -> Result<Vec<VectorHit>, VectorCacheError> {
        self.check_vector(query)?;
        if metric == Metric::Cosine && query.iter().all(|&x| x == 0.0) {
            return Err(VectorCacheError::ZeroQuery);
        }
        if k == 0 || self.index.is_empty() {
            return Ok(Vec::new());
        }
        let sections = self.sections()?;
        match mode {
            ScanMode::F32 => Ok(vector_scan::scan_f32(&sections, query, k, metric)),
            ScanMode::I8Rerank {
                candidates,
                threads,
            } => self.search_i8(&sections, query, k, candidates, threads, metric),
            ScanMode::Binary {
                candidates,
                threads,
            } => {
                if !self.header.has_bits() {
                    return Err(VectorCacheError::NoBits);
                }
                Ok(vector_scan::scan_binary_rerank(
                    &sections, query, k, candidates, threads, metric,
                ))
            }
            ScanMode::Auto { threads } => {
                if vector_scan::binary_pays(&sections, query, metric, self.len()) {
                    let candidates = vector_scan::binary_candidates(k, self.len());
                    Ok(vector_scan::scan_binary_rerank(
                        &sections, query, k, candidates, threads, metric,
                    ))
                } else if self.header.has_i8() {
                    let candidates = vector_scan::i8_candidates(k);
                    self.search_i8(&sections, query, k, candidates, threads, metric)
                } else {
                    Ok(vector_scan::scan_f32(&sections, query, k, metric))
                }
            }
        }
    }

    fn search_i8(
        &self,
        sections: &Sections<'_>,
        query: &[f32],
        k: usize,
        candidates: usize,
        threads: usize,
        metric: Metric,
    ) -> Result<Vec<VectorHit>, VectorCacheError> {
        if !self.header.has_i8() {
            return Err(VectorCacheError::NoI8Rows);
        }
        let mut q8 = vec![0i8; query.len()];
        vector_file::quantize_i8(query, &mut q8);
        Ok(vector_scan::scan_i8_rerank(
            sections, query, &q8, k, candidates, threads, metric,
        ))
    }
}
