//! The order `hash-v2` sums a text's features in, without the map that defined it.
//!
//! `hash-v2` summed each text's features into its vector in the iteration order of a
//! `std::collections::HashMap<u64, f32>` keyed by the feature hash itself (a
//! pass-through hasher), made `with_capacity(text.len())`, keys inserted in the order
//! they first occur, never removed. Float addition is not associative, so that order
//! shows in the last bits of every slot that three or more features share, and it is
//! part of the vectors stored on disk. std's map is hashbrown (SwissTable): it iterates
//! buckets in index order, and a key's bucket depends only on the table's size, the
//! key, and which buckets earlier keys took. [`Placement`] replays exactly that
//! (probe sequence, group width, small tables, growth) on a bit per bucket, so the
//! embedder can keep its sums elsewhere; the tests check it against std's map itself.

/// Bytes of control data hashbrown compares at once, as std builds it for this target:
/// SSE2 and LSX groups of 16, NEON groups of 8, otherwise one machine word.
#[cfg(any(
    all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "sse2"
    ),
    all(target_arch = "loongarch64", target_feature = "lsx")
))]
const GROUP_WIDTH: usize = 16;
#[cfg(not(any(
    all(
        any(target_arch = "x86", target_arch = "x86_64"),
        target_feature = "sse2"
    ),
    all(target_arch = "loongarch64", target_feature = "lsx")
)))]
const GROUP_WIDTH: usize = if cfg!(target_pointer_width = "64") {
    8
} else {
    4
};

/// The buckets of a table asked to hold `cap` items (hashbrown's
/// `capacity_to_buckets` for 16-byte entries): at least 4, then the next power of two
/// that keeps the load at 7/8 or below.
fn capacity_to_buckets(cap: usize) -> usize {
    if cap < 4 {
        4
    } else if cap < 8 {
        8
    } else {
        (cap.saturating_mul(8) / 7).next_power_of_two()
    }
}

/// How many items `buckets` buckets hold before growing (`bucket_mask_to_capacity`).
fn bucket_capacity(buckets: usize) -> usize {
    let mask = buckets.saturating_sub(1);
    if mask < 8 {
        mask
    } else {
        buckets / 8 * 7
    }
}

/// The buckets a replayed map's items sit in; see the module documentation. An item
/// is a `u32` the caller chooses (its feature's number), inserted with its key.
#[derive(Default)]
pub(super) struct Placement {
    /// Buckets of the table (0 before the first insert of a map made for nothing).
    buckets: usize,
    /// One bit per bucket: taken.
    full: Vec<u64>,
    /// The key and item in each taken bucket.
    entries: Vec<(u64, u32)>,
    items: usize,
    /// Inserts left before the table grows.
    growth_left: usize,
    /// Scratch for growing: the entries in bucket order.
    moving: Vec<(u64, u32)>,
}

impl Placement {
    /// Start a new map, as `HashMap::with_capacity(capacity)` would.
    pub(super) fn reset(&mut self, capacity: usize) {
        let buckets = if capacity == 0 {
            0
        } else {
            capacity_to_buckets(capacity)
        };
        self.make_table(buckets);
        self.items = 0;
    }

    fn make_table(&mut self, buckets: usize) {
        self.buckets = buckets;
        self.full.clear();
        self.full.resize(buckets.div_ceil(64), 0);
        if self.entries.len() < buckets {
            self.entries.resize(buckets, (0, 0));
        }
        self.growth_left = bucket_capacity(buckets);
    }

    /// Insert `item`, a key not inserted since [`Placement::reset`].
    #[inline(always)]
    pub(super) fn insert(&mut self, item: u32, key: u64) {
        if self.growth_left == 0 {
            self.grow();
        }
        let at = self.insert_index(key);
        self.full[at / 64] |= 1 << (at % 64);
        self.entries[at] = (key, item);
        self.items += 1;
        self.growth_left -= 1;
    }

    /// hashbrown's `reserve_rehash` with no removed items: a new table for one more
    /// item (at least one bucket-capacity more), refilled in bucket order.
    fn grow(&mut self) {
        let mut moving = std::mem::take(&mut self.moving);
        moving.clear();
        self.for_each(|item, key| moving.push((key, item)));
        let capacity = (self.items + 1).max(bucket_capacity(self.buckets) + 1);
        self.make_table(capacity_to_buckets(capacity));
        for &(key, item) in &moving {
            let at = self.insert_index(key);
            self.full[at / 64] |= 1 << (at % 64);
            self.entries[at] = (key, item);
        }
        self.growth_left -= moving.len();
        self.moving = moving;
    }

    fn is_full(&self, at: usize) -> bool {
        self.full[at / 64] >> (at % 64) & 1 == 1
    }

    /// Whether the control byte at `pos + k` of the table's control bytes is empty.
    /// Past the last bucket hashbrown keeps a copy of the first `GROUP_WIDTH` control
    /// bytes (so a group read never wraps); a table smaller than a group has empty
    /// padding between its buckets and that copy.
    fn group_byte_empty(&self, pos: usize, k: usize) -> bool {
        let a = pos + k;
        if self.buckets >= GROUP_WIDTH {
            !self.is_full(a & (self.buckets - 1))
        } else if a < self.buckets {
            !self.is_full(a)
        } else if a < GROUP_WIDTH {
            true
        } else {
            !self.is_full(a - GROUP_WIDTH)
        }
    }

    /// hashbrown's `find_insert_index`: the first empty byte of the first group (of the
    /// triangular probe sequence from the hash) that has one; in a table smaller than
    /// a group, a pick that landed on a taken bucket through the padding is replaced
    /// by the first empty bucket (`fix_insert_index`).
    #[inline(always)]
    fn insert_index(&self, hash: u64) -> usize {
        let mask = self.buckets - 1;
        // The hash's low bits are the start: hashbrown's h1 is the hash itself.
        let mut pos = hash as usize & mask;
        let mut stride = 0;
        loop {
            if self.buckets >= 64 {
                // Whole words of buckets, so no padding: the bucket found is empty.
                if let Some(k) = self.first_empty_in_group(pos) {
                    return (pos + k) & mask;
                }
            } else if let Some(k) = (0..GROUP_WIDTH).find(|&k| self.group_byte_empty(pos, k)) {
                let at = (pos + k) & mask;
                if self.is_full(at) {
                    return (0..self.buckets).find(|&b| !self.is_full(b)).unwrap_or(at);
                }
                return at;
            }
            stride += GROUP_WIDTH;
            pos = (pos + stride) & mask;
        }
    }

    /// The first empty bucket of the `GROUP_WIDTH` from `pos` (wrapping), read from the
    /// bits a word at a time: for tables of whole words (64 buckets and more), where
    /// [`Placement::group_byte_empty`] is plain wrapping.
    #[inline(always)]
    fn first_empty_in_group(&self, pos: usize) -> Option<usize> {
        let (word, bit) = (pos / 64, pos % 64);
        let mut taken = self.full[word] >> bit;
        if bit + GROUP_WIDTH > 64 {
            // The group runs into the next word, or wraps to the first.
            let next = if word + 1 == self.full.len() {
                0
            } else {
                word + 1
            };
            taken |= self.full[next] << (64 - bit);
        }
        let empty = !taken & ((1u64 << GROUP_WIDTH) - 1);
        (empty != 0).then(|| empty.trailing_zeros() as usize)
    }

    /// Calls `f` with every item and its key, in the order the map would iterate them.
    pub(super) fn for_each(&self, mut f: impl FnMut(u32, u64)) {
        for (w, &word) in self.full.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let at = w * 64 + bits.trailing_zeros() as usize;
                let (key, item) = self.entries[at];
                f(item, key);
                bits &= bits - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Placement;
    use std::collections::HashMap;
    use std::hash::{BuildHasherDefault, Hasher};

    #[derive(Default)]
    struct PassThrough(u64);

    impl Hasher for PassThrough {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, _: &[u8]) {
            unreachable!("only u64 keys")
        }
        fn write_u64(&mut self, n: u64) {
            self.0 = n;
        }
    }

    /// Items in std's iteration order and in the replay's, for `keys` inserted in
    /// order into a map made with `capacity`. Entries of (u64, u32) are 16 bytes, as
    /// the embedder's (u64, f32) were, so std sizes the table alike.
    fn both(keys: &[u64], capacity: usize) -> (Vec<u32>, Vec<u32>) {
        let mut std_map: HashMap<u64, u32, BuildHasherDefault<PassThrough>> =
            HashMap::with_capacity_and_hasher(capacity, Default::default());
        let mut replay = Placement::default();
        replay.reset(capacity);
        for (i, &k) in keys.iter().enumerate() {
            // `entry`, as the embedder did: it grows the table only for a new key.
            std_map.entry(k).or_insert(i as u32);
            replay.insert(i as u32, k);
        }
        let mut ours = Vec::new();
        replay.for_each(|i, key| {
            assert_eq!(key, keys[i as usize]);
            ours.push(i);
        });
        (std_map.values().copied().collect(), ours)
    }

    /// splitmix64, as the feature hashes are mixed.
    fn mix(mut h: u64) -> u64 {
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^ (h >> 31)
    }

    #[test]
    fn the_replay_iterates_as_std_hashmap_does() {
        let mut checked = 0;
        for capacity in (0..40).chain([63, 64, 100, 500, 1000, 1024, 1100, 2000]) {
            for seed in 0..12u64 {
                // From empty to past twice the capacity, so tables grow, some twice.
                let n = (capacity * 2 + 20) * (seed as usize % 4 + 1) / 4;
                let keys: Vec<u64> = (0..n as u64)
                    .map(|i| mix((seed << 40) ^ i ^ ((capacity as u64) << 20)))
                    .collect();
                for len in [n / 3, n / 2, n] {
                    let (want, got) = both(&keys[..len], capacity);
                    assert_eq!(got, want, "capacity {capacity}, seed {seed}, {len} keys");
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000);
    }

    #[test]
    fn crowded_keys_probe_as_std_hashmap_does() {
        // Keys sharing their low bits pile onto a few buckets and walk the probe
        // sequence far; high bits differ so they are distinct keys.
        for capacity in [1, 3, 7, 8, 14, 15, 16, 30, 64, 300] {
            for low_bits in [0u64, 5, 0xff] {
                let keys: Vec<u64> = (0..(capacity as u64 * 3 + 5))
                    .map(|i| (i << 32) | ((i % 3) * low_bits))
                    .collect();
                let (want, got) = both(&keys, capacity);
                assert_eq!(got, want, "capacity {capacity}, low bits {low_bits}");
            }
        }
    }
}
