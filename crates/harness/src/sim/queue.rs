//! The event queue of the discrete-event core, shared by [`crate::sim::World`] and the bare
//! loop of [`crate::bare`] so that the benchmark's floor is this very design.
//!
//! A binary heap of small (time, sequence, slot) keys over a slab of events: a sift moves
//! 24-byte keys, never whole events, and slots are reused through a free list. Events pop in
//! (time, sequence) order, so events at equal times pop in push order. Deterministic: nothing
//! depends on addresses or hashing.
//!
//! Events pushed for the current time (the time of the last pop) skip the heap: nearly half of
//! a campaign's pushes are zero-delay (a node's outputs to itself, the checker's and the
//! world's follow-ups), and they go to a FIFO. The order stays exactly (time, sequence): every
//! heap entry at the current time was pushed before time reached it, so its sequence is below
//! every FIFO entry's, and `pop` takes the heap's top while it is not later than now.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The body of [`EventQueue::push`] and [`EventQueue::push_inlined`]: one text, two inlining
/// choices.
macro_rules! push_body {
    ($q:ident, $t:ident, $ev:ident) => {{
        $q.seq += 1;
        if $t == $q.now {
            $q.fifo.push_back(($q.seq, $ev));
            return;
        }
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
    /// The time of the last pop: pushes for it go to `fifo`.
    now: u64,
    /// Events for `now`, in push order, with their sequence numbers.
    fifo: VecDeque<(u64, E)>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
            now: 0,
            fifo: VecDeque::new(),
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
    /// to the compiler's choice) as measured before, so the benchmark's floor is
    /// unchanged; `reports/bench.md` says what forcing it there too would do.
    #[inline(always)]
    pub fn push_inlined(&mut self, t: u64, ev: E) {
        push_body!(self, t, ev)
    }

    /// The earliest event and its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.pop_seq().map(|(t, _, ev)| (t, ev))
    }

    /// [`EventQueue::pop`], with the sequence number the event was pushed with.
    #[inline]
    pub fn pop_seq(&mut self) -> Option<(u64, u64, E)> {
        if !self.fifo.is_empty() {
            // A heap entry at (or, never in practice, before) now precedes every FIFO entry.
            let heap_first = matches!(self.heap.peek(), Some(Reverse((t, _, _))) if *t <= self.now);
            if !heap_first {
                return self.fifo.pop_front().map(|(seq, ev)| (self.now, seq, ev));
            }
        }
        loop {
            let Reverse((t, seq, slot)) = self.heap.pop()?;
            self.free.push(slot);
            if let Some(ev) = self.slab[slot as usize].take() {
                self.now = self.now.max(t);
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
        self.slab
            .iter()
            .flatten()
            .chain(self.fifo.iter().map(|(_, ev)| ev))
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.heap.len() + self.fifo.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.fifo.is_empty()
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

    /// The same-time FIFO keeps exactly (time, push order): a long random interleaving of
    /// pushes (a third at the current time, the rest later, some at equal later times) and
    /// pops, against a reference that sorts by (time, sequence).
    #[test]
    fn same_time_fifo_keeps_time_then_push_order() {
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = Vec::new(); // (time, seq) still queued
        let (mut now, mut seq, mut x) = (0u64, 0u64, 0x9e37_79b9_7f4a_7c15u64);
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let r = next();
            if r % 5 < 3 {
                let t = match r % 3 {
                    0 => now,
                    1 => now + (r >> 8) % 4,
                    _ => now + (r >> 8) % 1000,
                };
                seq += 1;
                q.push(t, seq);
                reference.push((t, seq));
            } else if let Some((t, got_seq, v)) = q.pop_seq() {
                let i = (0..reference.len()).min_by_key(|&i| reference[i]).unwrap();
                let want = reference.swap_remove(i);
                assert_eq!((t, v), want);
                assert_eq!(got_seq, v);
                now = t;
            }
        }
        assert_eq!(q.len(), reference.len());
    }
}
