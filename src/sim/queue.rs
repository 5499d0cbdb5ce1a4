//! The event queue of the discrete-event core, shared by [`crate::sim::World`] and the bare
//! loop of [`crate::bare`] so that the benchmark's floor is this very design.
//!
//! A binary heap of small (time, sequence, slot) keys over a slab of events: a sift moves
//! 24-byte keys, never whole events, and slots are reused through a free list. Events pop in
//! (time, sequence) order, so events at equal times pop in push order. Deterministic: nothing
//! depends on addresses or hashing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A time-ordered queue of events of type `E`.
#[derive(Clone, Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedule `ev` at time `t` (µs), after everything already scheduled at `t`.
    #[inline]
    pub fn push(&mut self, t: u64, ev: E) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(ev);
                s
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((t, self.seq, slot)));
    }

    /// The earliest event and its time.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        loop {
            let Reverse((t, _, slot)) = self.heap.pop()?;
            self.free.push(slot);
            if let Some(ev) = self.slab[slot as usize].take() {
                return Some((t, ev));
            }
        }
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_push_order() {
        let mut q = EventQueue::new();
        for (t, v) in [(5, 'a'), (1, 'b'), (5, 'c'), (3, 'd'), (1, 'e')] {
            q.push(t, v);
        }
        assert_eq!(q.len(), 5);
        let mut got = Vec::new();
        while let Some((t, v)) = q.pop() {
            got.push((t, v));
            if v == 'd' {
                q.push(5, 'f'); // reuses a freed slot, still after 'a' and 'c'
            }
        }
        assert_eq!(
            got,
            vec![(1, 'b'), (1, 'e'), (3, 'd'), (5, 'a'), (5, 'c'), (5, 'f')]
        );
        assert!(q.is_empty());
    }
}
