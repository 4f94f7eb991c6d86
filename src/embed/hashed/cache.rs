//! A batch's words and features, and the sums of the text being embedded.
//!
//! Words repeat from text to text, and a word's features were most of what embedding
//! it cost (its stop-word and concept lookups, stem and trigram hashes), so each word's
//! features are computed once per batch. Features are numbered as first seen, so a
//! text's sums live in arrays indexed by that number rather than in a map looked up
//! for every occurrence; [`Placement`] gives the order the sums are read in, the one
//! `hash-v2` has always used.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::placement::Placement;
use super::words::WordIndex;
use super::{word_features, FeatureHasher};

/// How many words a batch's cache keeps before it starts again empty.
pub(super) const WORD_CACHE_WORDS: usize = 1 << 16;

/// How many features a batch numbers before it starts again (about 32 bytes each).
const CACHE_FEATURES: usize = 1 << 18;

/// See the module documentation. Bounded: a batch of unique words cannot grow it
/// without end; it empties between two texts once past its bounds, which changes no
/// vector (a word's features are the same computed or cached).
pub(super) struct WordCache {
    /// Word -> its range in `word_features`.
    index: WordIndex,
    /// The cached words' features, (hash, number, weight) in [`word_features`] order.
    word_features: Vec<(u64, u32, f32)>,
    /// Feature hash -> its number. The hash is already well mixed: no hashing again.
    numbers: HashMap<u64, u32, BuildHasherDefault<FeatureHasher>>,
    /// Feature number -> the last text it occurred in, and its summed weight in that
    /// text (side by side: one memory access per occurrence).
    sums: Vec<(u32, f32)>,
    /// The text being embedded, counted from 1 (0 in `sums`: never).
    text: u32,
    /// Where std's map would have put this text's features: their summing order.
    placement: Placement,
    /// Most words cached (0: none, for one text alone).
    capacity: usize,
    /// Scratch space reused from word to word: trigram padding, a lower-cased
    /// identifier, the ranges of its parts, an uncached word's features.
    pub(super) padded: Vec<u8>,
    pub(super) lower: String,
    pub(super) parts: Vec<std::ops::Range<usize>>,
    computed: Vec<(u64, f32)>,
}

impl WordCache {
    pub(super) fn new() -> WordCache {
        WordCache {
            index: WordIndex::default(),
            word_features: Vec::new(),
            numbers: HashMap::default(),
            sums: Vec::new(),
            text: 0,
            placement: Placement::default(),
            capacity: WORD_CACHE_WORDS,
            padded: Vec::with_capacity(80),
            lower: String::new(),
            parts: Vec::new(),
            computed: Vec::new(),
        }
    }

    /// A cache that keeps no word, for one text alone.
    pub(super) fn disabled() -> WordCache {
        WordCache::keeping(0)
    }

    /// A cache that keeps at most `words` words.
    pub(super) fn keeping(words: usize) -> WordCache {
        WordCache {
            capacity: words,
            ..WordCache::new()
        }
    }

    /// Start a text of `len` bytes: its sums empty, its features placed as in a map
    /// made `with_capacity(len)`.
    pub(super) fn begin_text(&mut self, len: usize) {
        if self.index.len() >= self.capacity || self.sums.len() >= CACHE_FEATURES {
            self.index.clear();
            self.word_features.clear();
            self.numbers.clear();
            self.sums.clear();
        }
        self.text = match self.text.checked_add(1) {
            Some(t) => t,
            None => {
                // After 4 billion texts: forget which text each feature was seen in.
                self.sums.fill((0, 0.0));
                1
            }
        };
        self.placement.reset(len);
    }

    /// Calls `f` with each feature of the text (hash, summed weight) in the order
    /// `hash-v2` sums them in.
    pub(super) fn for_each_sum(&self, mut f: impl FnMut(u64, f32)) {
        self.placement
            .for_each(|n, hash| f(hash, self.sums[n as usize].1));
    }

    /// The number of the feature `hash`, numbering it if new.
    fn number(&mut self, hash: u64) -> u32 {
        let next = self.sums.len();
        let n = *self.numbers.entry(hash).or_insert_with(|| {
            // Fewer features than bytes embedded since the last clearing, and the
            // cache clears past CACHE_FEATURES: a text of 4 GiB would be needed here.
            u32::try_from(next).unwrap_or(u32::MAX)
        });
        if n as usize == next {
            self.sums.push((0, 0.0));
        }
        n
    }

    /// Add `w` to the feature `hash`, numbered `n`.
    #[inline(always)]
    fn add(&mut self, hash: u64, n: u32, w: f32) {
        let sum = &mut self.sums[n as usize];
        if sum.0 == self.text {
            sum.1 += w;
        } else {
            // `0.0 + w`, as the map's `or_insert(0.0) += w` computed it.
            *sum = (self.text, 0.0 + w);
            self.placement.insert(n, hash);
        }
    }

    /// Add `w` to the feature `hash`.
    pub(super) fn add_feature(&mut self, hash: u64, w: f32) {
        let n = self.number(hash);
        self.add(hash, n, w);
    }

    /// Add the features of the word `part`.
    pub(super) fn add_word(&mut self, part: &str) {
        if let Some((start, end)) = self.index.get(part) {
            for i in start as usize..end as usize {
                let (h, n, w) = self.word_features[i];
                self.add(h, n, w);
            }
            return;
        }
        let mut computed = std::mem::take(&mut self.computed);
        computed.clear();
        word_features(part, &mut self.padded, |h, w| computed.push((h, w)));
        let keep = self.index.len() < self.capacity;
        let start = self.word_features.len();
        for &(h, w) in &computed {
            let n = self.number(h);
            if keep {
                self.word_features.push((h, n, w));
            }
            self.add(h, n, w);
        }
        if keep {
            // u32 ranges: at most 65,536 words of at most 66 features each.
            let range = (start as u32, self.word_features.len() as u32);
            self.index.insert(part, range);
        }
        self.computed = computed;
    }
}
