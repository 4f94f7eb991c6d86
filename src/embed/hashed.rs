//! The built-in embedder: hashed features of code-aware words, offline and instant.
//!
//! Each word of the text (identifiers cut into their words, lower-cased) contributes
//! features: its stem, the idea it names when the lexicon knows one (so `remove` and
//! `delete` meet), its character trigrams (so `auth` meets `authenticator` and a typo
//! still lands near), and for a compound identifier the whole identifier. Features are
//! hashed with a sign into a fixed number of dimensions (the "hashing trick"), weighted
//! sublinearly by how often they occur, and the vector is L2-normalised, so cosine
//! similarity is a dot product.
//!
//! It knows nothing of a corpus (no IDF): vectors depend on the text alone, which is
//! what lets a vector stored today be compared with a query embedded next year.

use std::hash::Hasher;

use cache::WordCache;
#[cfg(test)]
use cache::WORD_CACHE_WORDS;
use scan::{for_each_word, WordKind};

use super::lexicon::{concept, is_stop_word, stem};
use super::{EmbedError, Embedder};
use crate::text::{split_ascii_identifier, split_identifier};

/// Weight of a word's stem, the feature that says most.
const STEM_WEIGHT: f32 = 1.0;
/// Weight of the idea a word names: a synonym match is good evidence, a bit less
/// than the same word.
const CONCEPT_WEIGHT: f32 = 1.0;
/// Weight of a compound identifier as a whole (`parse_request`).
const IDENT_WEIGHT: f32 = 0.7;
/// Total weight of one word's trigrams, spread over them.
const TRIGRAM_WEIGHT: f32 = 0.5;

/// Hashed sub-word features of code-aware tokens; see the module documentation.
#[derive(Debug, Clone)]
pub struct HashedEmbedder {
    dims: usize,
    name: String,
}

impl Default for HashedEmbedder {
    /// 256 dimensions: enough to keep collisions rare for the words of one chunk,
    /// small enough that scanning 100K vectors stays within a few milliseconds.
    fn default() -> Self {
        HashedEmbedder::new(256)
    }
}

impl HashedEmbedder {
    /// An embedder with `dims` dimensions (at least 16). Its name records the
    /// dimension, so stores made with other sizes never mix.
    pub fn new(dims: usize) -> HashedEmbedder {
        let dims = dims.max(16);
        HashedEmbedder {
            dims,
            name: format!("hash-v2-{dims}"),
        }
    }

    /// The vector of one text (all zeros when it has no word worth a feature).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        self.embed_with(text, &mut WordCache::disabled())
    }

    /// [`HashedEmbedder::embed_one`], taking each word's features from `cache` when
    /// it has them: the same features in the same order, so the same bits.
    fn embed_with(&self, text: &str, cache: &mut WordCache) -> Vec<f32> {
        // Features are summed in the order std's `HashMap` (keyed by the feature hash,
        // made with the text's length as capacity) iterated them, which is part of
        // `hash-v2`; the cache replays that order (see `placement`).
        cache.begin_text(text.len());
        for_each_word(text, |raw, kind| {
            if raw.len() > 64 {
                return;
            }
            match kind {
                // Most words are one lower-case ASCII word: no split, no allocation.
                WordKind::OneWord => cache.add_word(raw),
                WordKind::Ascii => {
                    let mut parts = std::mem::take(&mut cache.parts);
                    split_ascii_identifier(raw, &mut parts);
                    let mut lower = std::mem::take(&mut cache.lower);
                    lower.clear();
                    lower.push_str(raw);
                    lower.make_ascii_lowercase();
                    if parts.len() > 1 {
                        cache.add_feature(feature_hash(b'i', lower.as_bytes()), IDENT_WEIGHT);
                    }
                    for part in &parts {
                        cache.add_word(&lower[part.clone()]);
                    }
                    cache.parts = parts;
                    cache.lower = lower;
                }
                WordKind::Other => {
                    let parts = split_identifier(raw);
                    if parts.len() > 1 {
                        let ident = feature_hash(b'i', raw.to_lowercase().as_bytes());
                        cache.add_feature(ident, IDENT_WEIGHT);
                    }
                    for part in &parts {
                        cache.add_word(part);
                    }
                }
            }
        });
        let mut v = vec![0.0f32; self.dims];
        // The remainder by a power of two is a mask; a 64-bit division per feature
        // was a visible part of embedding a text (a `map_or` computed it even when
        // the mask was there, its argument being evaluated eagerly).
        let dims = self.dims as u64;
        let mask = dims.is_power_of_two().then(|| dims - 1);
        cache.for_each_sum(|h, w| {
            // Sublinear in repetition: a word said ten times is not ten times the topic.
            let value = w.sqrt();
            let slot = match mask {
                Some(m) => h & m,
                None => h % dims,
            } as usize;
            // The top bit is the sign. `x - y` is `x + (-y)` in IEEE arithmetic, bit
            // for bit; flipping the sign bit spares a branch that went either way at
            // random.
            v[slot] += f32::from_bits(value.to_bits() ^ (((h >> 63) as u32) << 31));
        });
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            for x in &mut v {
                *x /= norm;
            }
        }
        v
    }
}

/// The features of one lower-case word of a text, in order: its stem, the idea it
/// names, its trigrams. `padded` is scratch space, reused from word to word.
fn word_features(part: &str, padded: &mut Vec<u8>, mut emit: impl FnMut(u64, f32)) {
    if part.len() < 2 || is_stop_word(part) || part.bytes().all(|b| b.is_ascii_digit()) {
        return;
    }
    let s = stem(part);
    emit(feature_hash(b'w', s.as_bytes()), STEM_WEIGHT);
    if let Some(c) = concept(s) {
        emit(feature_hash(b'c', c.as_bytes()), CONCEPT_WEIGHT);
    }
    padded.clear();
    padded.push(b'<');
    padded.extend_from_slice(s.as_bytes());
    padded.push(b'>');
    let n = padded.len().saturating_sub(2);
    if n > 1 {
        let w = TRIGRAM_WEIGHT / (n as f32).sqrt();
        for g in padded.windows(3) {
            emit(feature_hash(b'g', g), w);
        }
    }
}

impl Embedder for HashedEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn dimensions(&self) -> usize {
        self.dims
    }

    /// Large batches are split across the machine's cores (scoped threads), in order,
    /// except inside [`super::on_this_thread`].
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let threads = if super::is_on_this_thread() {
            1
        } else {
            crate::cores::available()
        };
        if threads < 2 || texts.len() < PARALLEL_BATCH {
            let mut cache = WordCache::new();
            return Ok(texts
                .iter()
                .map(|t| self.embed_with(t, &mut cache))
                .collect());
        }
        let per_thread = texts.len().div_ceil(threads);
        let parts: Vec<Vec<Vec<f32>>> = std::thread::scope(|s| {
            let handles: Vec<_> = texts
                .chunks(per_thread)
                .map(|part| {
                    s.spawn(move || {
                        let mut cache = WordCache::new();
                        part.iter()
                            .map(|t| self.embed_with(t, &mut cache))
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join())
                .collect::<Result<_, _>>()
        })
        .map_err(|_| EmbedError::Failed {
            embedder: self.name.clone(),
            reason: "an embedding thread panicked".into(),
        })?;
        Ok(parts.into_iter().flatten().collect())
    }
}

/// Batches at least this long are embedded on every core; below it, thread start-up
/// costs more than it saves (a text of 1 KiB takes about 20 µs).
const PARALLEL_BATCH: usize = 64;

/// A `Hasher` for keys that are [`feature_hash`] values: it passes the value through.
#[derive(Default)]
struct FeatureHasher(u64);

impl Hasher for FeatureHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed here; fold anything else in all the same.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// FNV-1a over a tag byte and the feature, then a SplitMix64 finish so the low bits
/// (the slot) and the top bit (the sign) are independent. Fixed forever for `hash-v2`
/// (v2: digits stay with their word when identifiers are split).
fn feature_hash(tag: u8, bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in std::iter::once(&tag).chain(bytes) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

mod cache;
#[cfg(test)]
mod pin;
mod placement;
mod scan;
mod words;

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn a_large_batch_gives_the_same_vectors_on_this_thread_as_split_across_cores() {
        let e = HashedEmbedder::default();
        let texts: Vec<String> = (0..PARALLEL_BATCH * 3)
            .map(|i| format!("fn handler_{i}(req: Request) -> Response {{ route({i}) }}"))
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        assert!(!super::super::is_on_this_thread());
        let split = e.embed(&texts).unwrap();
        let here = super::super::on_this_thread(|| {
            assert!(super::super::is_on_this_thread());
            // Nested calls keep the flag, and leaving the inner one restores it.
            super::super::on_this_thread(|| ());
            assert!(super::super::is_on_this_thread());
            e.embed(&texts).unwrap()
        });
        assert!(!super::super::is_on_this_thread());
        assert_eq!(split, here);
        assert_eq!(here.len(), texts.len());
    }

    #[test]
    fn vectors_are_unit_length_deterministic_and_zero_for_no_words() {
        let e = HashedEmbedder::default();
        let v = e.embed_one("fn parse_http_request(buf: &[u8]) -> Request");
        assert_eq!(v.len(), 256);
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4, "norm² {norm}");
        assert_eq!(
            v,
            e.embed_one("fn parse_http_request(buf: &[u8]) -> Request")
        );
        assert!(super::super::is_zero(&e.embed_one("  {}();  ")));
        assert!(super::super::is_zero(&e.embed_one("")));
        assert_eq!(e.name(), "hash-v2-256");
    }

    #[test]
    fn the_word_cache_changes_no_bit() {
        let e = HashedEmbedder::default();
        let texts: Vec<&str> = super::golden::TEXTS
            .iter()
            .chain(super::golden::TEXTS)
            .copied()
            .collect();
        // Uncached, cached and emptied when full (every few words), cached.
        for capacity in [0, 5, WORD_CACHE_WORDS] {
            let mut cache = WordCache::keeping(capacity);
            for t in &texts {
                assert_eq!(e.embed_with(t, &mut cache), e.embed_one(t), "{t}");
            }
        }
        // A batch long enough to be split across threads, each with its own cache.
        let many: Vec<&str> = texts
            .iter()
            .cycle()
            .take(PARALLEL_BATCH * 3)
            .copied()
            .collect();
        let batch = e.embed(&many).expect("embed");
        for (t, v) in many.iter().zip(&batch) {
            assert_eq!(v, &e.embed_one(t), "{t}");
        }
    }

    #[test]
    fn meaning_beyond_exact_words() {
        let e = HashedEmbedder::default();
        let q = e.embed_one("remove a user account");
        let synonym = e.embed_one("fn delete_member(db: &Db, id: MemberId) { db.erase(id) }");
        let unrelated = e.embed_one("fn render_thumbnail(img: &Image) -> Png { scale(img) }");
        assert!(
            cos(&q, &synonym) > cos(&q, &unrelated) + 0.1,
            "synonym {} vs unrelated {}",
            cos(&q, &synonym),
            cos(&q, &unrelated)
        );
        // Inflections and identifier styles meet.
        let a = e.embed_one("parsing configuration files");
        let b = e.embed_one("fn parseConfigFile(path)");
        let c = e.embed_one("struct ThreadPool { workers: Vec<Worker> }");
        assert!(
            cos(&a, &b) > cos(&a, &c) + 0.2,
            "{} vs {}",
            cos(&a, &b),
            cos(&a, &c)
        );
    }
}

#[cfg(test)]
mod golden {
    use super::*;

    /// Texts covering every path of `embed_one`: plain words, stop words, digits,
    /// compound identifiers in each style, non-ASCII letters (whose lower case is
    /// longer), words of 64 bytes and more, and repetition.
    pub(super) const TEXTS: &[&str] = &[
        "fn parse_http_request(buf: &[u8]) -> Request { Request::read(buf) }",
        "the quick brown fox removes deleted entries from the cache",
        "class HTTPServer2Handler(BaseHTTPRequestHandler): pass  # sha256 utf8 base64",
        "İstanbul ÖZEL straße Überprüfung naïve café MAßE ǅemal",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "retry retry retry retrying retried getUserById get_user_by_id GetUserByID",
        "",
        "{}();",
    ];

    /// FNV-1a over the bits of every vector: a change to any feature, weight or the
    /// order features are summed in changes it.
    pub(super) fn digest(e: &HashedEmbedder) -> u64 {
        super::pin::digest(e, TEXTS)
    }

    /// `hash-v2` is fixed forever: vectors stored by any engram are compared with
    /// queries embedded by any later one, so its output must not move by one bit.
    #[test]
    fn hash_v2_output_is_bit_for_bit_what_it_always_was() {
        assert_eq!(
            digest(&HashedEmbedder::default()),
            7_993_287_798_939_684_523
        );
    }
}
