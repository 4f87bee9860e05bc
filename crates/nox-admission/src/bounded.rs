//! A capacity-bounded map that evicts the least recently touched entry.

use std::collections::BTreeMap;

/// A map with at most `capacity` entries; inserting into a full map evicts the entry touched
/// least recently. Every operation is O(log n); eviction never scans. Ordered maps (no hashing)
/// keep it deterministic and immune to hash flooding.
#[derive(Debug, Clone)]
pub struct BoundedLru<K: Ord + Clone, V> {
    entries: BTreeMap<K, (V, u64)>,
    recency: BTreeMap<u64, K>,
    next_stamp: u64,
    capacity: usize,
}

impl<K: Ord + Clone, V> BoundedLru<K, V> {
    /// An empty map holding at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Self { entries: BTreeMap::new(), recency: BTreeMap::new(), next_stamp: 0, capacity: capacity.max(1) }
    }

    fn stamp(&mut self) -> u64 {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        stamp
    }

    /// The value for `key` without changing recency.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(value, _)| value)
    }

    /// The value for `key`, marking it most recently used.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let stamp = self.stamp();
        let (value, old_stamp) = self.entries.get_mut(key)?;
        self.recency.remove(old_stamp);
        *old_stamp = stamp;
        self.recency.insert(stamp, key.clone());
        Some(value)
    }

    /// The value for `key`, created with `make` if absent (evicting the least recently used
    /// entry if full), marked most recently used. Returns the evicted entry, if any.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> (&mut V, Option<(K, V)>) {
        let mut evicted = None;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            evicted = self.pop_least_recent();
        }
        let stamp = self.stamp();
        let slot = self.entries.entry(key.clone()).or_insert_with(|| (make(), stamp));
        if slot.1 != stamp {
            self.recency.remove(&slot.1);
            slot.1 = stamp;
        }
        self.recency.insert(stamp, key);
        (&mut slot.0, evicted)
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (value, stamp) = self.entries.remove(key)?;
        self.recency.remove(&stamp);
        Some(value)
    }

    /// Removes and returns the least recently used entry.
    pub fn pop_least_recent(&mut self) -> Option<(K, V)> {
        let (_, key) = self.recency.pop_first()?;
        let (value, _) = self.entries.remove(&key)?;
        Some((key, value))
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        let recency = &mut self.recency;
        self.entries.retain(|key, (value, stamp)| {
            let kept = keep(key, value);
            if !kept {
                recency.remove(stamp);
            }
            kept
        });
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The maximum number of entries.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_touched() {
        let mut map = BoundedLru::new(2);
        map.get_or_insert_with(1, || "a");
        map.get_or_insert_with(2, || "b");
        assert!(map.get_mut(&1).is_some()); // 2 is now the oldest
        let (_, evicted) = map.get_or_insert_with(3, || "c");
        assert_eq!(evicted, Some((2, "b")));
        assert_eq!(map.len(), 2);
        assert_eq!(map.peek(&1), Some(&"a"));
        assert_eq!(map.remove(&1), Some("a"));
        assert_eq!(map.pop_least_recent(), Some((3, "c")));
        assert!(map.is_empty());
    }

    #[test]
    fn retain_keeps_recency_consistent() {
        let mut map = BoundedLru::new(10);
        for key in 0..10 {
            map.get_or_insert_with(key, || key * 10);
        }
        map.retain(|key, _| key % 2 == 0);
        assert_eq!(map.len(), 5);
        assert_eq!(map.pop_least_recent(), Some((0, 0)));
        for key in 10..20 {
            map.get_or_insert_with(key, || 0);
        }
        assert_eq!(map.len(), 10);
    }
}
