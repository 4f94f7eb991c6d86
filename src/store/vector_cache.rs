//! TEMPORARY compile shim; replaced by the real vector cache.
use std::path::Path;
#[derive(Debug, thiserror::Error)]
pub enum VectorCacheError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
pub enum Metric {
    Cosine,
    Dot,
}
pub enum ScanMode {
    F32,
    I8Rerank { candidates: usize },
}
pub struct VectorHit {
    pub key_hash: u64,
    pub score: f32,
}
pub struct VectorCacheOptions {
    pub dim: u32,
    pub embedder_id: u64,
    pub with_i8: bool,
    pub initial_capacity: u64,
}
pub struct VectorCache;
impl VectorCache {
    pub fn create(_p: &Path, _o: &VectorCacheOptions) -> Result<Self, VectorCacheError> {
        Err(std::io::Error::other("shim").into())
    }
    pub fn open(_p: &Path, _o: &VectorCacheOptions) -> Result<Self, VectorCacheError> {
        Err(std::io::Error::other("shim").into())
    }
    pub fn open_read_only(_p: &Path, _o: &VectorCacheOptions) -> Result<Self, VectorCacheError> {
        Err(std::io::Error::other("shim").into())
    }
    pub fn seq(&self) -> u64 {
        0
    }
    pub fn len(&self) -> u64 {
        0
    }
    pub fn set_seq(&mut self, _s: u64) -> Result<(), VectorCacheError> {
        Ok(())
    }
    pub fn upsert(&mut self, _k: u64, _v: &[f32]) -> Result<(), VectorCacheError> {
        Ok(())
    }
    pub fn remove(&mut self, _k: u64) -> Result<bool, VectorCacheError> {
        Ok(false)
    }
    pub fn get(&self, _k: u64) -> Option<Vec<f32>> {
        None
    }
    pub fn search(
        &self,
        _q: &[f32],
        _k: usize,
        _m: Metric,
        _s: ScanMode,
    ) -> Result<Vec<VectorHit>, VectorCacheError> {
        Ok(vec![])
    }
    pub fn flush(&self) -> Result<(), VectorCacheError> {
        Ok(())
    }
}
