//! A bare discrete-event loop: the floor under the simulator's cost per event.
//!
//! The same skeleton as [`crate::sim::World`] (a binary heap ordered by (time, sequence), a
//! ChaCha8 stream for latencies) with none of the protocol, checkers or tracing: each event is
//! popped, folded into a checksum, and schedules one follow-up after a random latency.
//! `shardsim bench` runs it for the same number of events as the benchmark scenario to show
//! what fraction of the bare loop's speed the full simulator reaches.

use crate::rng::{Rng, Stream};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Events in flight at once (about what the benchmark scenario keeps queued).
pub const IN_FLIGHT: u32 = 64;

/// Process `events` events and return a checksum of their (time, payload) sequence, so the
/// work cannot be optimised away. Deterministic in `seed`.
pub fn bare_loop(events: u64, seed: u64) -> u64 {
    let mut rng = Rng::fork(seed, Stream::Net);
    let mut heap: BinaryHeap<Reverse<(u64, u64, u32)>> =
        BinaryHeap::with_capacity(IN_FLIGHT as usize * 2);
    let mut seq = 0u64;
    for p in 0..IN_FLIGHT {
        seq += 1;
        heap.push(Reverse((rng.range(1_000, 3_000), seq, p)));
    }
    let mut sum = 0xcbf2_9ce4_8422_2325u64;
    let mut done = 0u64;
    while done < events {
        let Some(Reverse((t, _, p))) = heap.pop() else {
            break;
        };
        done += 1;
        sum = (sum ^ t ^ (u64::from(p) << 40)).wrapping_mul(0x0100_0000_01b3);
        seq += 1;
        let next = p.wrapping_mul(31).wrapping_add(7) % IN_FLIGHT;
        heap.push(Reverse((t + rng.range(1_000, 3_000), seq, next)));
    }
    sum ^ done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_seed_dependent() {
        assert_eq!(bare_loop(10_000, 1), bare_loop(10_000, 1));
        assert_ne!(bare_loop(10_000, 1), bare_loop(10_000, 2));
        assert_ne!(bare_loop(10_000, 1), bare_loop(10_001, 1));
        assert_eq!(bare_loop(0, 1), bare_loop(0, 1));
    }
}
