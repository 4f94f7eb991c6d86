//! The word cache's index: word -> the range of its features.
//!
//! Looked up for every word of every text. A `HashMap<String, _>` reached each key
//! through its own heap allocation, a cache miss on most lookups; here the words sit
//! back to back in one buffer and each slot keeps the word's full hash, so a slot
//! that is not the word is told apart without reading the word at all.

use std::hash::BuildHasher;

/// A slot of the open-addressing table (linear probing).
#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    /// Where the word starts in `WordIndex::bytes`; `EMPTY` for a free slot.
    at: u32,
    len: u32,
    /// The word's features: a range of the cache's `word_features`.
    features: (u32, u32),
}

const EMPTY: u32 = u32::MAX;

const FREE: Slot = Slot {
    hash: 0,
    at: EMPTY,
    len: 0,
    features: (0, 0),
};

/// Byte-wise equality of two words of the same length, inline: words are short, and
/// a call to `memcmp` cost more than comparing them here.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

#[derive(Default)]
pub(super) struct WordIndex {
    /// A power of two long, at most half full.
    slots: Vec<Slot>,
    bytes: Vec<u8>,
    len: usize,
    hasher: foldhash::fast::FixedState,
}

impl WordIndex {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn clear(&mut self) {
        self.slots.fill(FREE);
        self.bytes.clear();
        self.len = 0;
    }

    /// The slot holding `word`, or the free slot where it would go.
    #[inline]
    fn find(&self, word: &[u8], hash: u64) -> Option<usize> {
        let mask = self.slots.len().checked_sub(1)?;
        let mut i = hash as usize & mask;
        loop {
            let s = &self.slots[i];
            if s.at == EMPTY
                || (s.hash == hash
                    && s.len as usize == word.len()
                    && same(&self.bytes[s.at as usize..][..word.len()], word))
            {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// The features of `word`, if it is indexed.
    #[inline]
    pub(super) fn get(&self, word: &str) -> Option<(u32, u32)> {
        let hash = self.hasher.hash_one(word);
        let s = &self.slots[self.find(word.as_bytes(), hash)?];
        (s.at != EMPTY).then_some(s.features)
    }

    /// Index `word` (not indexed yet) with its features. The caller bounds the
    /// number of words (65,536 of at most 64 bytes), so offsets fit in a `u32`.
    pub(super) fn insert(&mut self, word: &str, features: (u32, u32)) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let hash = self.hasher.hash_one(word);
        let at = self.bytes.len();
        self.bytes.extend_from_slice(word.as_bytes());
        if let Some(i) = self.find(word.as_bytes(), hash) {
            self.slots[i] = Slot {
                hash,
                at: at as u32,
                len: word.len() as u32,
                features,
            };
            self.len += 1;
        }
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(1024);
        let old = std::mem::replace(&mut self.slots, vec![FREE; size]);
        let mask = size - 1;
        for s in old.into_iter().filter(|s| s.at != EMPTY) {
            let mut i = s.hash as usize & mask;
            while self.slots[i].at != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WordIndex;

    #[test]
    fn words_are_found_with_their_features_and_others_are_not() {
        let mut index = WordIndex::default();
        assert_eq!(index.get("parse"), None);
        let words: Vec<String> = (0..5000).map(|i| format!("w{i}x")).collect();
        for (i, w) in words.iter().enumerate() {
            index.insert(w, (i as u32, i as u32 * 2));
        }
        assert_eq!(index.len(), 5000);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(index.get(w), Some((i as u32, i as u32 * 2)), "{w}");
        }
        // Prefixes and extensions of indexed words are other words.
        assert_eq!(index.get("w1"), None);
        assert_eq!(index.get("w1xy"), None);
        index.clear();
        assert_eq!(index.get("w1x"), None);
        index.insert("w1x", (7, 9));
        assert_eq!(index.get("w1x"), Some((7, 9)));
    }
}
