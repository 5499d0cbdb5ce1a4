//! Settings, with Akka's defaults (akka-sharding.md §9), and the protocol options: named
//! deviations from Akka (fixes for known hazards) and deliberately broken variants that prove
//! the checkers catch what they claim to.

use crate::protocol::allocation::LeastShardSettings;
use crate::time::Duration;
use serde::{Deserialize, Serialize};

/// `akka.cluster.sharding` settings (§9.1). Durations are in milliseconds in scenario files.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Settings {
    /// `retry-interval` (2 s): the region's Retry tick.
    pub retry_interval_ms: u64,
    /// `buffer-size` (100 000): total messages a region buffers.
    pub buffer_size: usize,
    /// `handoff-timeout` (60 s): a hand-off gives up after this, both phases.
    pub handoff_timeout_ms: u64,
    /// `shard-start-timeout` (10 s): HostShard is resent after this.
    pub shard_start_timeout_ms: u64,
    /// `rebalance-interval` (10 s).
    pub rebalance_interval_ms: u64,
    /// `akka.cluster.min-nr-of-members` (1): GetShardHome is ignored until this many regions
    /// registered.
    pub min_nr_of_members: usize,
    /// `least-shard-allocation-strategy.*`.
    pub least_shard_allocation_strategy: LeastShardSettings,
    /// `akka.cluster.down-removal-margin` (off): the coordinator delays a removed region's
    /// termination by this much (§3.5); the singleton take-over waits as long (§9.2).
    pub down_removal_margin_ms: u64,
    /// Journal call-timeout: an unacknowledged write fails after this and the coordinator stops
    /// (Akka persistence `circuit-breaker.call-timeout`, 10 s).
    pub journal_call_timeout_ms: u64,
    /// `coordinator-failure-backoff` (5 s): delay before the singleton restarts a stopped
    /// coordinator.
    pub coordinator_failure_backoff_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        // akka-sharding.md §9.1
        Settings {
            retry_interval_ms: 2_000,
            buffer_size: 100_000,
            handoff_timeout_ms: 60_000,
            shard_start_timeout_ms: 10_000,
            rebalance_interval_ms: 10_000,
            min_nr_of_members: 1,
            least_shard_allocation_strategy: LeastShardSettings::default(),
            down_removal_margin_ms: 0,
            journal_call_timeout_ms: 10_000,
            coordinator_failure_backoff_ms: 5_000,
        }
    }
}

impl Settings {
    /// `retry-interval`.
    pub fn retry_interval(&self) -> Duration {
        Duration::from_millis(self.retry_interval_ms)
    }
    /// `handoff-timeout`.
    pub fn handoff_timeout(&self) -> Duration {
        Duration::from_millis(self.handoff_timeout_ms)
    }
    /// `shard-start-timeout`.
    pub fn shard_start_timeout(&self) -> Duration {
        Duration::from_millis(self.shard_start_timeout_ms)
    }
    /// `rebalance-interval`.
    pub fn rebalance_interval(&self) -> Duration {
        Duration::from_millis(self.rebalance_interval_ms)
    }
    /// First delay of the registration back-off: `max(100 ms, retry-interval / 8)` (SR:663).
    pub fn register_backoff_start(&self) -> Duration {
        Duration::from_millis((self.retry_interval_ms / 8).max(100))
    }
}

/// A deliberately broken protocol variant. Each must be caught by a checker; the test suite
/// proves it. Never enable one outside a test or a demonstration.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutation {
    /// The faithful protocol.
    #[default]
    None,
    /// The coordinator deallocates a shard as soon as every region acked BeginHandOff,
    /// without waiting for ShardStopped (breaks at-most-one).
    CoordinatorSkipsShardStopped,
    /// A region delivers a shard's buffer newest first (breaks per-sender order).
    BufferOutOfOrder,
    /// A region delivers the first message of a flushed buffer twice (breaks no-duplicate).
    BufferDuplicate,
    /// The coordinator allocates to regions it knows are downed, removed or terminating (the
    /// pre-fix behaviour of akka#18314/akka#29131; breaks allocation-to-downed).
    AllocateToDowned,
    /// A region never asks GetShardHome again for a shard with buffered messages (no Retry
    /// re-ask, none after RegisterAck): a lost request strands the buffer (breaks liveness).
    RegionNeverReasks,
    /// A region buffers past `buffer-size` instead of dropping with `buffer_full` (SR:1281-1305):
    /// memory grows without bound while a coordinator is unreachable. No delivery checker sees
    /// it; the region's own `buffered-total-within-buffer-size` rule does (role-invariant).
    RegionIgnoresBufferSize,
}

/// Named protocol options. The defaults are Akka's behaviour.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProtocolOptions {
    /// Fix for the re-ordering hazard of akka-sharding.md §11.3: a region that last forwarded a
    /// shard's messages to another region sends its BeginHandOffAck through that region
    /// (`BeginHandOffAckRelay`), so the coordinator sends HandOff only after every message
    /// forwarded before the ack reached the owner. Off = Akka.
    pub handoff_ack_via_owner: bool,
    /// A deliberately broken variant, for checker tests.
    pub mutation: Mutation,
}
