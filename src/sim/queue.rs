//! The event queue of the discrete-event core, shared by [`crate::sim::World`] and the bare
//! loop of [`crate::bare`] so that the benchmark's floor is this very design.
//!
//! A binary heap of small (time, sequence, slot) keys over a slab of events: a sift moves
//! 24-byte keys, never whole events, and slots are reused through a free list. Events pop in
//! (time, sequence) order, so events at equal times pop in push order. Deterministic: nothing
//! depends on addresses or hashing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The body of [`EventQueue::push`] and [`EventQueue::push_inlined`]: one text, two inlining
/// choices.
macro_rules! push_body {
    ($q:ident, $t:ident, $ev:ident) => {{
        $q.seq += 1;
        let slot = match $q.free.pop() {
            Some(s) => {
                $q.slab[s as usize] = Some($ev);
                s
            }
            None => {
                $q.slab.push(Some($ev));
                ($q.slab.len() - 1) as u32
            }
        };
        $q.heap.push(Reverse(($t, $q.seq, slot)));
    }};
}

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
        push_body!(self, t, ev)
    }

    /// [`EventQueue::push`], always inlined. The world pushes from a dozen call sites on its
    /// hot path, where the compiler would otherwise keep a call (16 instructions of prologue
    /// and epilogue per push). The bare loop keeps [`EventQueue::push`] (the same body, left
    /// to the compiler's choice) as measured since session 7, so the benchmark's floor is
    /// unchanged; `reports/bench.md` says what forcing it there too would do.
    #[inline(always)]
    pub fn push_inlined(&mut self, t: u64, ev: E) {
        push_body!(self, t, ev)
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

    /// [`EventQueue::pop`], with the sequence number the event was pushed with.
    pub fn pop_seq(&mut self) -> Option<(u64, u64, E)> {
        loop {
            let Reverse((t, seq, slot)) = self.heap.pop()?;
            self.free.push(slot);
            if let Some(ev) = self.slab[slot as usize].take() {
                return Some((t, seq, ev));
            }
        }
    }

    /// The sequence number of the last event pushed (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.seq
    }

    /// Every queued event, in no particular order (for end-of-run accounting).
    pub fn iter(&self) -> impl Iterator<Item = &E> + '_ {
        self.slab.iter().flatten()
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
