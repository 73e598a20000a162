//! The Extism kernel's memory, kept on the host: one flat byte space addressed by `u64` handles,
//! separate from the module's own linear memory. The module copies bytes in and out of it with
//! `load_*`/`store_*`; the host reads and writes it directly.
//!
//! Semantics follow the Extism kernel (bounds-checked build) so that modules built with the
//! official PDKs behave the same here:
//! - handle 0 is null; `alloc(0)` answers 0; an allocation the budget cannot hold answers 0;
//! - `length` is the used length of the block starting exactly at a handle, 0 for anything else
//!   (an interior pointer, a freed block, a bogus number);
//! - `free` of an unknown or already freed handle does nothing (the PDKs double-free);
//! - loads outside the arena answer 0 and stores outside it are ignored, never a trap; inside the
//!   arena they may cross block boundaries (as-pdk 1.0 writes UTF-8 past a block sized in UTF-16
//!   units), exactly as the kernel allows.

use std::collections::{BTreeSet, HashMap};

/// Handles start here so that 0 is never a real block.
const FIRST_HANDLE: u64 = 1;

#[derive(Debug, Clone, Copy)]
struct Block {
    /// Bytes reserved for the block.
    capacity: u64,
    /// Bytes the block was allocated for (what `length` answers).
    used: u64,
}

#[derive(Debug)]
pub(crate) struct Arena {
    /// Byte `i` of this vector is handle `FIRST_HANDLE + i`.
    bytes: Vec<u8>,
    /// Live blocks by handle.
    active: HashMap<u64, Block>,
    /// Freed blocks by (capacity, handle), for first-fit reuse of the smallest that fits.
    free: BTreeSet<(u64, u64)>,
    /// Upper bound on `bytes.len()`.
    budget: u64,
}

impl Arena {
    /// An empty arena that will not grow past `budget` bytes.
    pub(crate) fn new(budget: u64) -> Self {
        Self {
            bytes: Vec::new(),
            active: HashMap::new(),
            free: BTreeSet::new(),
            budget,
        }
    }

    /// A block of `len` bytes (zeroed when fresh), or 0 for `len == 0` or an exhausted budget.
    pub(crate) fn alloc(&mut self, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        if let Some(&(capacity, handle)) = self.free.range((len, 0)..).next() {
            self.free.remove(&(capacity, handle));
            self.active.insert(
                handle,
                Block {
                    capacity,
                    used: len,
                },
            );
            return handle;
        }
        let Some(end) = (self.bytes.len() as u64).checked_add(len) else {
            return 0;
        };
        if end > self.budget {
            return 0;
        }
        let handle = FIRST_HANDLE + self.bytes.len() as u64;
        self.bytes.resize(end as usize, 0);
        self.active.insert(
            handle,
            Block {
                capacity: len,
                used: len,
            },
        );
        handle
    }

    /// Releases the block starting at `handle`; anything else is ignored.
    pub(crate) fn free(&mut self, handle: u64) {
        if let Some(block) = self.active.remove(&handle) {
            self.free.insert((block.capacity, handle));
        }
    }

    /// Used length of the live block starting at `handle`, else 0.
    pub(crate) fn length(&self, handle: u64) -> u64 {
        self.active.get(&handle).map_or(0, |block| block.used)
    }

    pub(crate) fn load_u8(&self, at: u64) -> u8 {
        self.index(at, 1).map_or(0, |i| self.bytes[i])
    }

    pub(crate) fn load_u64(&self, at: u64) -> u64 {
        self.index(at, 8).map_or(0, |i| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&self.bytes[i..i + 8]);
            u64::from_le_bytes(word)
        })
    }

    pub(crate) fn store_u8(&mut self, at: u64, value: u8) {
        if let Some(i) = self.index(at, 1) {
            self.bytes[i] = value;
        }
    }

    pub(crate) fn store_u64(&mut self, at: u64, value: u64) {
        if let Some(i) = self.index(at, 8) {
            self.bytes[i..i + 8].copy_from_slice(&value.to_le_bytes());
        }
    }

    /// `len` bytes from `at`, when the whole range is inside the arena.
    pub(crate) fn slice(&self, at: u64, len: u64) -> Option<&[u8]> {
        if len == 0 {
            return Some(&[]);
        }
        let len = usize::try_from(len).ok()?;
        self.index(at, len).map(|i| &self.bytes[i..i + len])
    }

    /// The bytes of the live block at `handle` (empty for 0), or `None` for anything that is not
    /// the start of a live block. What host functions read their arguments with.
    pub(crate) fn block(&self, handle: u64) -> Option<&[u8]> {
        if handle == 0 {
            return Some(&[]);
        }
        let block = self.active.get(&handle)?;
        self.slice(handle, block.used)
    }

    /// Allocates a block holding `data`; 0 for empty data. `None` when the budget is exhausted.
    pub(crate) fn put(&mut self, data: &[u8]) -> Option<u64> {
        if data.is_empty() {
            return Some(0);
        }
        let handle = self.alloc(data.len() as u64);
        if handle == 0 {
            return None;
        }
        let start = (handle - FIRST_HANDLE) as usize;
        self.bytes[start..start + data.len()].copy_from_slice(data);
        Some(handle)
    }

    /// True when `[at, at + len)` lies inside the arena (what `output_set` and `error_set`
    /// require).
    pub(crate) fn contains(&self, at: u64, len: u64) -> bool {
        len == 0 && at >= FIRST_HANDLE || self.slice(at, len).is_some()
    }

    /// Forgets every block (the kernel's `reset`); the budget stays.
    pub(crate) fn reset(&mut self) {
        self.bytes.clear();
        self.active.clear();
        self.free.clear();
    }

    /// Bytes handed out so far (`memory_bytes`).
    pub(crate) fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn index(&self, at: u64, len: usize) -> Option<usize> {
        let start = usize::try_from(at.checked_sub(FIRST_HANDLE)?).ok()?;
        let end = start.checked_add(len)?;
        (end <= self.bytes.len()).then_some(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_and_empty_allocations_are_zero() {
        let mut arena = Arena::new(1024);
        assert_eq!(arena.alloc(0), 0);
        assert_eq!(arena.length(0), 0);
        assert_eq!(arena.put(b""), Some(0));
        assert_eq!(arena.block(0), Some(&b""[..]));
    }

    #[test]
    fn blocks_are_contiguous_and_unaligned_words_round_trip() {
        let mut arena = Arena::new(1024);
        let a = arena.alloc(3);
        let b = arena.alloc(13);
        assert_eq!(arena.length(a), 3);
        assert_eq!(arena.length(b), 13);
        assert_eq!(b, a + 3, "no alignment padding");
        arena.store_u64(b + 1, 0x0102_0304_0506_0708);
        assert_eq!(arena.load_u64(b + 1), 0x0102_0304_0506_0708);
        assert_eq!(arena.load_u8(b + 1), 0x08, "little-endian");
        assert_eq!(arena.length(b + 1), 0, "interior pointers have no length");
    }

    #[test]
    fn out_of_range_access_is_harmless() {
        let mut arena = Arena::new(1024);
        let a = arena.alloc(4);
        arena.store_u64(a, u64::MAX); // crosses the end: ignored
        assert_eq!(arena.load_u64(a), 0);
        assert_eq!(arena.load_u8(9999), 0);
        arena.store_u8(9999, 1);
        assert_eq!(arena.load_u8(0), 0);
        assert_eq!(arena.load_u64(u64::MAX - 3), 0);
        assert_eq!(arena.slice(u64::MAX, 2), None);
    }

    #[test]
    fn free_is_idempotent_and_reuses_the_smallest_fitting_block() {
        let mut arena = Arena::new(1024);
        let big = arena.alloc(100);
        let small = arena.alloc(10);
        let _guard = arena.alloc(1);
        arena.free(big);
        arena.free(small);
        arena.free(small);
        arena.free(12345);
        assert_eq!(arena.length(small), 0, "freed blocks have no length");
        assert_eq!(arena.alloc(8), small, "smallest block that fits");
        assert_eq!(arena.length(small), 8);
        assert_eq!(arena.alloc(50), big);
    }

    #[test]
    fn the_budget_bounds_the_arena() {
        let mut arena = Arena::new(100);
        assert_ne!(arena.alloc(60), 0);
        assert_eq!(arena.alloc(60), 0);
        assert_eq!(arena.put(&[1; 60]), None);
        assert_eq!(arena.alloc(u64::MAX), 0);
    }

    #[test]
    fn put_and_block_round_trip() {
        let mut arena = Arena::new(1024);
        let h = arena.put(b"hello").expect("fits");
        assert_eq!(arena.block(h), Some(&b"hello"[..]));
        assert_eq!(arena.block(h + 1), None);
        assert!(arena.contains(h + 1, 4));
        assert!(!arena.contains(h + 1, 5));
    }
}
