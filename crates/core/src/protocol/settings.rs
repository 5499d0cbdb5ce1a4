//! Settings, with Akka's defaults (docs/akka-reference.md §9), and the protocol options: named
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
    /// `akka.cluster.min-nr-of-members` (1), or `akka.cluster.role.<role>.min-nr-of-members`
    /// when `role` is set (§9.2): the coordinator ignores GetShardHome until this many regions
    /// registered (§3.4 step 4), and the leader keeps joining members Joining until the cluster
    /// has this many members (of the role) (ClusterDaemon `isMinNrOfMembersFulfilled`).
    pub min_nr_of_members: usize,
    /// `akka.cluster.sharding.role` (none): only nodes with this role (`[cluster] roles`) host
    /// shards and the coordinator, which runs on the oldest member with the role; the others
    /// run a proxy-only region (§5.6, §9.1).
    pub role: Option<String>,
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
    /// `passivation.stop-timeout` (10 s, akka#32439): a passivating entity that has not
    /// stopped this long after its stop message is stopped by force (0: never, Akka before
    /// 2.9.4, §12 B32).
    pub passivation_stop_timeout_ms: u64,
    /// `passivation.default-idle-strategy.idle-entity.timeout` (120 s): an entity that received
    /// no message this long is passivated, checked every half of it (0: off). Off while
    /// remember-entities is on (§6.4).
    pub passivate_idle_entity_after_ms: u64,
    /// `remember-entities` (off): a Shard records its started entities in a store and starts
    /// them again when it starts (§2.6, §6.4).
    pub remember_entities: bool,
    /// `remember-entities-store` (`ddata` in Akka, `eventsourced` the alternative; §6.4).
    pub remember_entities_store: RememberStore,
    /// `entity-restart-backoff` (10 s): a remembered entity that stopped without passivating
    /// is started again after this (`RestartTerminatedEntity`, §2.7).
    pub entity_restart_backoff_ms: u64,
    /// `shard-failure-backoff` (10 s): a Shard that stopped unexpectedly with remember-entities
    /// on is started again after this (`RestartShard`, SR:1050-1093).
    pub shard_failure_backoff_ms: u64,
    /// `updating-state-timeout` (5 s): a remember-entities write not answered by then makes the
    /// Shard throw (§6.4).
    pub updating_state_timeout_ms: u64,
    /// `waiting-for-state-timeout` (2 s): a Shard whose remembered entities did not load by
    /// then stops (§6.1).
    pub waiting_for_state_timeout_ms: u64,
    /// `akka.coordinated-shutdown.phases.cluster-sharding-shutdown-region.timeout` (10 s): on
    /// a graceful leave the region hands off its shards first; it gives up and stops
    /// `GracefulShutdownTimeout` = this − 1 s after it began (SR:1008-1018, §5.5).
    pub shutdown_region_timeout_ms: u64,
    /// `state-store-mode`: where the coordinator keeps its state (§3.2, §3.3). Default here
    /// `persistence` (Akka.NET's default, and every scenario before ddata mode existed); Akka's
    /// default is `ddata` (§9.1).
    pub state_store_mode: StateStoreMode,
}

/// Where the coordinator keeps its state (`akka.cluster.sharding.state-store-mode`, §9.1).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateStoreMode {
    /// `PersistentShardCoordinator` (§3.2): events in the journal, replayed on start.
    /// Akka.NET's default; deprecated in Akka since 2.6.
    #[default]
    Persistence,
    /// `DDataShardCoordinator` (§3.3): the whole state in an `LWWRegister` of the nodes'
    /// Distributed Data replicators, majority-plus reads and writes. Akka's default.
    Ddata,
}

/// Where remembered entities are stored (`remember-entities-store`, §6.4).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RememberStore {
    /// Replicated data (Akka's default): durable ORSets, majority reads and writes.
    #[default]
    Ddata,
    /// A persistent actor per shard writing `EntitiesStarted`/`EntitiesStopped` to the journal.
    Eventsourced,
}

impl Default for Settings {
    fn default() -> Self {
        // docs/akka-reference.md §9.1
        Settings {
            retry_interval_ms: 2_000,
            buffer_size: 100_000,
            handoff_timeout_ms: 60_000,
            shard_start_timeout_ms: 10_000,
            rebalance_interval_ms: 10_000,
            min_nr_of_members: 1,
            role: None,
            least_shard_allocation_strategy: LeastShardSettings::default(),
            down_removal_margin_ms: 0,
            journal_call_timeout_ms: 10_000,
            coordinator_failure_backoff_ms: 5_000,
            passivation_stop_timeout_ms: 10_000,
            passivate_idle_entity_after_ms: 120_000,
            remember_entities: false,
            remember_entities_store: RememberStore::Ddata,
            entity_restart_backoff_ms: 10_000,
            shard_failure_backoff_ms: 10_000,
            updating_state_timeout_ms: 5_000,
            waiting_for_state_timeout_ms: 2_000,
            shutdown_region_timeout_ms: 10_000,
            state_store_mode: StateStoreMode::Persistence,
        }
    }
}

impl Settings {
    /// `retry-interval`.
    pub fn retry_interval(&self) -> Duration {
        Duration::from_millis(self.retry_interval_ms)
    }
    /// `GracefulShutdownTimeout`: the coordinated-shutdown phase's timeout − 1 s (SR:1013).
    pub fn graceful_shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_region_timeout_ms.saturating_sub(1_000).max(1))
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
    /// The HandOffStopper's stop timeout: `(handoff-timeout - 5 s).max(1 s)` (SR:530-541).
    pub fn handoff_stop_timeout(&self) -> Duration {
        Duration::from_millis(self.handoff_timeout_ms.saturating_sub(5_000).max(1_000))
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
    /// A Shard whose passivating entity terminates forgets the messages buffered for it
    /// without a word, instead of starting the entity again for them (§8 step 4): they
    /// vanish. Only the end-of-run accounting sees it (breaks message-lost).
    ShardForgetsPassivationBuffer,
    /// The region's remember-entities starter never sends `StartEntity`: remembered entities
    /// stay unstarted until a message for them arrives (breaks remembered-entity liveness).
    StarterNeverStarts,
    /// The coordinator ignores `GracefulShutdownReq`: a region shutting down never has its
    /// shards handed off and gives up at its timeout (breaks graceful-shutdown-timeout).
    CoordinatorIgnoresGracefulShutdownReq,
    /// A region's `GracefulShutdown` stops it at once, without asking the coordinator to hand
    /// its shards off (§5.5 steps 3-6 skipped): its entities die with it and what it buffers
    /// is lost, as on a crash, although the node leaves gracefully (breaks
    /// graceful-leave-loss).
    GracefulShutdownWithoutHandOff,
    /// A region that receives `HostShard` discards what it buffered for the shard instead of
    /// delivering it to the Shard (SR:925-934 delivers it): the messages vanish without a
    /// drop. Only the end-of-run accounting sees it (breaks message-lost).
    RegionDiscardsBufferOnHostShard,
    /// The singleton manager of one node (the member with the highest node id in its own
    /// view) orders members by age backwards: as the youngest it takes itself for the
    /// oldest and runs a second coordinator, which no region registers with, so it never
    /// writes to the journal (breaks one-coordinator).
    SingletonReversedAgeOrder,
    /// A region drops a Shard it acknowledged with `ShardStarted` when `BeginHandOff`
    /// arrives, killing its entities, instead of keeping it until `HandOff` (§5.4); the
    /// coordinator still counts it hosted there (breaks hosting-ack).
    RegionForgetsAcknowledgedShard,
    /// The new allocation algorithm (§10.4) computes `optimal` as ⌊N / R⌋ instead of
    /// ⌈N / R⌉: with N not a multiple of R, phase 1 always finds a region above `optimal`, and
    /// its shard goes to a region of the same size, round after round (8,142 →
    /// 160,000 rebalances in 5,000 schedules; breaks rebalance-quiescence).
    NewAllocationRoundsDown,
    /// The coordinator answers `GetShardHome` with `ShardHome` as soon as it decided the
    /// allocation, before its `ShardHomeAllocated` write is acknowledged (Akka replies only in
    /// the persist callback, SC:1396-1441, §4.2). When the write then fails (journal outage,
    /// the coordinator stops and recovers without it), the requester already started the
    /// shard and the next coordinator allocates it again elsewhere (breaks at-most-one).
    CoordinatorAnswersBeforeWrite,
    /// A region keeps the entity actors a Shard had when it was handed off, and revives them
    /// (same incarnations, no new start) when the shard comes back to it: a stale cache of
    /// entity refs across the shard's return, where Akka creates a new Shard with no entity
    /// (`getShard` creates a new Shard, SR:1399-1437, whose `entities` start empty). Deliveries go to an incarnation that
    /// terminated at the hand-off (breaks no-duplicate).
    RegionKeepsStaleEntities,
}

/// Named protocol options. The defaults are Akka's behaviour.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProtocolOptions {
    /// Fix for the re-ordering hazard of docs/akka-reference.md §11.3: a region that last forwarded a
    /// shard's messages to another region sends its BeginHandOffAck through that region
    /// (`BeginHandOffAckRelay`), so the coordinator sends HandOff only after every message
    /// forwarded before the ack reached the owner. Off = Akka.
    pub handoff_ack_via_owner: bool,
    /// Fix for the stale `HostShard` resend found by the remember-entities swarm campaigns
    /// (hazards/stale-host-shard-resend.toml): the coordinator's `ResendShardHost` timer does
    /// not resend `HostShard` for a shard that is being handed off. Akka resends whenever the
    /// shard is still allocated to the region (SC:957-961), which it is until the hand-off
    /// ends; the region then marks itself the shard's home again (SR:891-908) and hosts the
    /// shard after it moved. Off = Akka.
    pub host_shard_resend_skips_handoff: bool,
    /// Akka before 2.4.1 (akka#18945, §12 B1): a region answers `HandOff` for a Shard that has
    /// not sent `ShardInitialized` yet with `ShardStopped` at once, and the Shard keeps running.
    /// Off = Akka's fix (the starting Shard gets the `HandOff`).
    pub handoff_ignores_starting_shard: bool,
    /// Akka before PR akka#32976 (§12 B19): `HostShard` for a shard whose old Shard is still
    /// stopping after a hand-off is acknowledged with `ShardStarted`, but no Shard is started.
    /// Off = the fix (the region starts the shard when the old one has terminated).
    pub host_shard_acked_while_stopping: bool,
    /// Akka before akka#26957 was fixed (§12 B30): with remember-entities, messages that
    /// arrived while a passivating entity's stop was being written are not delivered when
    /// the write completes (`passivateCompleted` forgot the buffer). Off = the fix.
    pub remember_passivation_forgets_buffer: bool,
    /// Akka before PR akka#32749 (§12 B33): the `RestartTerminatedEntity` timer is not
    /// cancelled when a message restarts a `WaitingForRestart` entity early, so it can fire
    /// in a state the Shard does not expect and the Shard throws. Off = the fix.
    pub restart_timer_not_cancelled: bool,
    /// Akka before PR akka#32770 (§12 B34): `StartEntity` for an unknown entity issues a
    /// second remember-entities `Update` while one is in flight, breaking the store's
    /// one-at-a-time contract. Off = the fix (it joins the next batch).
    pub start_entity_concurrent_update: bool,
    /// Akka.NET before PR akka.net#7981 (§12 B35): a remembered entity that failed is marked
    /// `NoState` at once, while its actor is still terminating; a message then creates a
    /// second actor. Off = the fix (it counts as stopping until `Terminated`).
    pub entity_restart_before_terminated: bool,
    /// Akka before akka#22289 was fixed (§12 B9): a Shard creates its remembered entities
    /// directly when it loads them, instead of sending `StartEntity` through the region, so
    /// after the extractor changed an entity can run in its old shard and its new one. Off =
    /// the fix.
    pub remembered_started_directly: bool,
    /// Akka 2.6.7 (akka#29383, §12 B31 schedule B, fixed in 2.6.8): an entity that stops
    /// itself without passivating, remember-entities off, makes the transition Active →
    /// NoState, which that version rejected: the Shard throws and restarts, killing every
    /// entity in it. Off = the fix.
    pub self_stop_illegal_transition: bool,
    /// Akka before PR akka#27860 (2.6.0/2.5.x, §12 B13): `HandOff` decides on the Shard's
    /// entity records (`state.entities.nonEmpty`), which include remembered entities with no
    /// live actor, so a Shard with none running starts a HandOffStopper with an empty set that
    /// never answers: the Shard stays handing off for good. Off = the fix (live actors).
    pub handoff_counts_remembered_entities: bool,
    /// Akka before 2.5.20 (akka#26214, §12 B15): a region shutting down resends
    /// `GracefulShutdownReq` on its Retry tick only to a coordinator it knows, so a request
    /// sent while the coordinator moved is never repeated and the shutdown times out. Off =
    /// the fix (to the coordinator candidates on every tick).
    pub graceful_shutdown_req_not_retried: bool,
    /// Akka before 2.6.10 (PR akka#29707, §12 B16): a region shutting down still accepts
    /// `HostShard` and starts the shard, so its shutdown never completes. Off = the fix (it
    /// ignores `HostShard` and resends `GracefulShutdownReq`).
    pub host_shard_accepted_while_shutting_down: bool,
    /// Akka before akka#28093 was fixed (§12 B5): the singleton stops the coordinator with a
    /// `PoisonPill`, which overtakes a journal write in flight, so the write can land after
    /// the next coordinator recovered. Off = the fix (`Terminate`, stashed during the write:
    /// the hand-over waits for it).
    pub coordinator_stops_during_write: bool,
    /// Akka before PR akka#18293 (2.4.0, §12 B3): the coordinator accepts `Register` from a
    /// region whose member is not Up (Joining), so in ddata mode it writes its state over a
    /// view where it alone is a replica; the next coordinator reads an empty state. Off = the
    /// fix (`isMember`: only Up members, and the local node, register).
    pub register_from_non_up_members: bool,
    /// Akka before PR akka#28895 (2.6.5, §12 B4): the ddata coordinator reads and writes its
    /// state with plain majorities (`ReadMajority`/`WriteMajority`, `majority-min-cap` 5)
    /// instead of `ReadMajorityPlus(5)`/`WriteMajorityPlus(3)`, so a write can miss the nodes
    /// the next coordinator reads after the writers left. Off = the fix.
    pub coordinator_plain_majority: bool,
    /// Akka before 2.6.10 (PR akka#29548, §12 B38): no `isAGoodTimeToRebalance` gate (the
    /// coordinator rebalances while the regions run different app versions, while members are
    /// unreachable or joining) and no app-version preference in the allocation's suitability
    /// ordering, so a rolling update moves shards back and forth. Off = the fix.
    pub rebalance_during_rolling_update: bool,
    /// Akka.NET from akka.net#6065 (2022) to 1.5.26 (akka.net#6973, fixed by PRs
    /// akka.net#7297/#7298 in 1.5.27, §12 B7): the ClusterSingletonManager orders members by a `MemberAgeOrdering` that prefers
    /// the highest app version over age, while the regions locate the coordinator by age; a
    /// node with a newer version takes the coordinator over at once, without a hand-over, while
    /// the oldest still runs it. Off = the fix (`Member.AgeOrdering` everywhere).
    pub singleton_prefers_newest_app_version: bool,
    /// Akka before 2.4.0 (akka#17200, §12 B2): when its node's cluster shuts down (the node
    /// left or was downed) a running coordinator still hears the final `MemberRemoved` of
    /// every other member, takes each as its region's `Terminated` and persists
    /// `ShardRegionTerminated` for regions that live on. Off = the fix (`ClusterShuttingDown`
    /// is published first and the coordinator ignores everything after it, `shuttingDown`).
    pub coordinator_persists_shutdown_removals: bool,
    /// Akka before 2.6.16 (akka#28917, PR akka#30338, §12 B17): the coordinator stops on the
    /// singleton's `Terminate` at once, also while its local region is still handing off its
    /// shards; the next coordinator takes them over "the hard way". Off = the fix
    /// (`waitingForLocalRegionToTerminate`).
    pub coordinator_stops_before_local_region: bool,
    /// Fix for §12 B11 (akka.net#8583, the fix of akka.net PR #8586; Akka JVM HEAD has the
    /// same `terminate()`, SC:1148-1177): on a singleton hand-over the coordinator tells its
    /// live local region `GracefulShutdown` only if that region is already handing off or this
    /// node is Leaving, Exiting or Down; otherwise (a hand-over while the node stays) it stops
    /// and leaves the region running. Off = Akka: the region is shut down and never restarted.
    pub hand_over_keeps_local_region: bool,
    /// Akka before 2.6.2 (akka#28416, §12 B21): a region sends `Register` and
    /// `GracefulShutdownReq` to the oldest member only, also while that member is Leaving or
    /// Exiting and the coordinator already runs on the next one; it reaches the coordinator
    /// only once the old oldest is removed. Off = the fix (the oldest members up to and
    /// including the first Up one).
    pub register_to_oldest_only: bool,
    /// Fix for Akka HEAD's rebalance toward a region in graceful shutdown
    /// (hazards/two-leave-while-joining.toml, §12 B18): the coordinator leaves the regions of
    /// `gracefulShutdownInProgress` out of the rebalance, as it does out of allocation. Akka
    /// gives the strategy every region (SC:1005-1007); a shutting-down region whose member is
    /// still Up and has no shard left is the most suitable, so the strategy keeps taking
    /// shards from the other regions, which allocation gives back to them: the shutting-down
    /// region keeps buffering for shards in hand-off and times out. Off = Akka.
    pub rebalance_skips_shutting_down_regions: bool,
    /// Fix for a second `HandOff` to a Shard that is still handing off
    /// (hazards/handoff-cut-by-hand-over.toml, §11.3 last item): Akka's Shard ignores it
    /// (SH:865-866) and its HandOffStopper answers only the first worker, so when the
    /// coordinator moved mid-hand-off the new worker waits for handoff-timeout, the shard's
    /// `GetShardHome`s stay deferred and a shutting-down region keeps its buffers until its
    /// shutdown times out. With the option the Shard also answers the later worker. Off = Akka.
    pub handoff_during_handoff_answered: bool,
    /// Fix for Akka's slow convergence with dead Down members (scale-100.toml): since PR
    /// akka#29640 (2.6.10) `validNodeForGossip` only asks whether this node itself observes
    /// the target unreachable ("nodes marked as unreachable by others are still valid targets
    /// for gossip", MembershipState.scala), so members that are Down and dead but not yet
    /// removed stay in every node's `preferNodesWithDifferentView` choice (they never enter
    /// `seen`) and soak up most gossip rounds; convergence, and with it the removal of the
    /// dead and the Up of new members, can take tens of seconds at 100 nodes. With the option
    /// the gossip round (`gossip`, `gossipRandomN`) leaves out every member that a non-Down
    /// member observes as unreachable, as Akka did before 2.6.10
    /// (`reachabilityExcludingDownedObservers`). Off = Akka.
    pub gossip_skips_unreachable_members: bool,
    /// Fix for the whole cluster downing itself when a split-brain decision races the heal
    /// (hazards/sbr-heal-race-downs-all.toml): since PR akka#29640 (2.6.10) a node that downs
    /// itself sends its farewell gossip (`gossipRandomN(MaxGossipsBeforeShuttingDownMyself)`)
    /// only to members it does not itself observe as unreachable (`validNodeForGossip`,
    /// MembershipState.scala). A side that downs itself just after a partition healed, before
    /// its own heartbeats saw the other side again, tells only itself; the other side keeps
    /// the dead nodes Up with their stale records that observe it unreachable, finds itself
    /// indirectly connected to them and downs itself too (DowningStrategy
    /// `indirectlyConnected`, `nodesToDown`). With the option a Down node judges its gossip
    /// targets as Akka did before 2.6.10, by `reachabilityExcludingDownedObservers`: its own
    /// records do not count, so the farewell reaches the other side. Off = Akka.
    pub down_self_gossip_excludes_downed_observers: bool,
    /// A deliberately broken variant, for checker tests.
    pub mutation: Mutation,
}

/// The options that are this project's fixes for hazards Akka still has; every other option
/// selects an older Akka (or Akka.NET) behaviour, a pre-fix one.
const FIX_OPTIONS: [&str; 7] = [
    "handoff-ack-via-owner",
    "host-shard-resend-skips-handoff",
    "hand-over-keeps-local-region",
    "rebalance-skips-shutting-down-regions",
    "handoff-during-handoff-answered",
    "gossip-skips-unreachable-members",
    "down-self-gossip-excludes-downed-observers",
];

impl ProtocolOptions {
    /// The fix options' scenario-file names.
    pub fn fix_names() -> &'static [&'static str] {
        &FIX_OPTIONS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SR:663: the registration back-off starts at `max(100 ms, retry-interval / 8)`, and
    /// SR:530-541: the HandOffStopper's timeout is `(handoff-timeout - 5 s).max(1 s)` (a
    /// survivor of cargo-mutants made the first `%`, which only timing shows).
    #[test]
    fn derived_timeouts_follow_akka() {
        let s = |retry, handoff| Settings {
            retry_interval_ms: retry,
            handoff_timeout_ms: handoff,
            ..Settings::default()
        };
        let ms = Duration::from_millis;
        let backoff = [(2_000, 250), (4_000, 500), (400, 100)];
        for (retry, want) in backoff {
            assert_eq!(
                s(retry, 0).register_backoff_start(),
                ms(want),
                "retry {retry}"
            );
        }
        for (handoff, want) in [(60_000, 55_000), (5_500, 1_000)] {
            assert_eq!(
                s(0, handoff).handoff_stop_timeout(),
                ms(want),
                "handoff {handoff}"
            );
        }
    }
}
