//! All randomness: one ChaCha8 root per schedule, seeded by the schedule's seed and forked
//! once per subsystem, in a fixed order, so adding draws in one subsystem never shifts another's.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// A seeded stream.
#[derive(Clone, Debug)]
pub struct Rng(ChaCha8Rng);

/// The subsystems that get their own stream. Order matters: it fixes each fork's seed.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    /// Network latencies.
    Net = 0,
    /// Workload: entity choice and send intervals.
    Workload = 1,
    /// Journal write latencies.
    Journal = 2,
    /// Fault plans and swarm profiles.
    Faults = 3,
    /// Entity behaviour: stop durations, entity-initiated passivation.
    Entities = 4,
    /// The swarm's draw of entity-layer knobs (`swarm.entity-knobs`).
    SwarmEntities = 5,
    /// The swarm's draw of a rolling restart's order and timing (`rolling-restart`).
    SwarmRolling = 6,
    /// The workload's entity choice while its key space grows (`workload.key-space-growth-ms`).
    WorkloadGrowth = 7,
    /// Gossip target selection, one stream per node incarnation (see [`Rng::fork_keyed`]).
    Gossip = 8,
    /// The swarm's draw of targeted delays (`swarm.delays`).
    SwarmDelays = 9,
    /// `fuzz --guided`: the mutator's draws, seeded by `--seed-start` (not per schedule).
    Guided = 10,
}

impl Rng {
    /// The root stream of a schedule.
    pub fn root(seed: u64) -> Self {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// An independent stream for `s`, derived from the root seed and the stream id only.
    pub fn fork(seed: u64, s: Stream) -> Self {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(s as u64 + 1);
        Rng(r)
    }

    /// An independent stream for `s` and `key` (one per node incarnation, say): the root seed
    /// mixed with `key` (splitmix64), on `s`'s stream id, so it shares no draws with
    /// [`Rng::fork`]'s streams of the same seed.
    pub fn fork_keyed(seed: u64, s: Stream, key: u64) -> Self {
        let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let mut r = ChaCha8Rng::seed_from_u64(seed ^ z);
        r.set_stream(s as u64 + 1);
        Rng(r)
    }

    /// A uniform u64.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `lo..=hi` (returns `lo` when `hi <= lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo + 1;
        lo + ((u128::from(self.0.next_u64()) * u128::from(span)) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answer() {
        // Pinned: if this changes, every recorded seed stops replaying.
        let mut r = Rng::root(42);
        let a = r.next_u64();
        let mut r2 = Rng::root(42);
        assert_eq!(a, r2.next_u64());
        let mut f1 = Rng::fork(42, Stream::Net);
        let mut f2 = Rng::fork(42, Stream::Workload);
        assert_ne!(f1.next_u64(), f2.next_u64());
        assert_eq!(Rng::root(7).range(3, 3), 3);
        let mut r = Rng::root(1);
        for _ in 0..1000 {
            let v = r.range(5, 9);
            assert!((5..=9).contains(&v));
        }
    }
}
