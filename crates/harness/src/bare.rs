//! A bare discrete-event loop: the floor under the simulator's cost per event.
//!
//! The same skeleton as [`crate::sim::World`]: the same [`EventQueue`] (a binary heap of
//! (time, sequence, slot) keys over a slab), events of the same size as the world's, and a
//! ChaCha8 stream for latencies, with none of the protocol, checkers or tracing: each event is
//! popped, folded into a checksum, and schedules one follow-up after a random latency.
//! `shardsim bench` runs it for the same number of events as the benchmark scenario to show
//! what fraction of the bare loop's speed the full simulator reaches.

use crate::sim::queue::EventQueue;
use shardsim_core::rng::{Rng, Stream};

/// Events in flight at once (about what the benchmark scenario keeps queued).
pub const IN_FLIGHT: u32 = 64;

/// A bare event: as large as the world's event type (a unit test checks), so queue and slab
/// traffic match.
#[derive(Clone, Copy, Debug)]
pub struct BareEvent {
    /// Which of the [`IN_FLIGHT`] chains this event belongs to.
    pub chain: u32,
    /// Stand-in for the message payload.
    pub payload: [u64; 6],
}

/// Process `events` events and return a checksum of their (time, payload) sequence, so the
/// work cannot be optimised away. Deterministic in `seed`.
pub fn bare_loop(events: u64, seed: u64) -> u64 {
    let mut rng = Rng::fork(seed, Stream::Net);
    let mut queue: EventQueue<BareEvent> = EventQueue::new();
    for p in 0..IN_FLIGHT {
        queue.push(
            rng.range(1_000, 3_000),
            BareEvent {
                chain: p,
                payload: [u64::from(p); 6],
            },
        );
    }
    let mut sum = 0xcbf2_9ce4_8422_2325u64;
    let mut done = 0u64;
    while done < events {
        let Some((t, ev)) = queue.pop() else {
            break;
        };
        done += 1;
        sum =
            (sum ^ t ^ (u64::from(ev.chain) << 40) ^ ev.payload[5]).wrapping_mul(0x0100_0000_01b3);
        let next = ev.chain.wrapping_mul(31).wrapping_add(7) % IN_FLIGHT;
        queue.push(
            t + rng.range(1_000, 3_000),
            BareEvent {
                chain: next,
                payload: [sum; 6],
            },
        );
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

    #[test]
    fn bare_loop_events_are_as_large_as_world_events() {
        assert_eq!(
            std::mem::size_of::<crate::sim::Ev>(),
            std::mem::size_of::<super::BareEvent>()
        );
    }
}
