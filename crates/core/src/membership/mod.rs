//! Cluster membership of one node incarnation, as a sans-IO state machine: join via seeds,
//! heartbeat failure detection on Akka's ring of monitors, gossip to one chosen node per
//! gossip tick with version digests before full state, a seen set, leader actions under
//! convergence, and the downing providers (none, auto-down, split-brain resolver).
//!
//! Modelled on Akka's `ClusterCoreDaemon` (ClusterDaemon.scala: `gossipTick`, `gossip()`,
//! `receiveGossipStatus`, `receiveGossip`, `isGossipSpeedupNeeded`), `GossipTargetSelector`
//! (MembershipState.scala), `Gossip` with its `VectorClock` version, `Reachability`,
//! `ClusterHeartbeatSender` with its `HeartbeatNodeRing` (ClusterHeartbeat.scala) and
//! `SplitBrainResolver`. Everything is deterministic given the inputs: the one random choice,
//! the gossip target, draws from the node's own seeded stream (`Stream::Gossip`).
//!
//! Layout: this file holds the types, the configuration and the [`Membership`] state machine
//! (inputs, timers, failure detector, leader actions, when to decide on downing);
//! `gossip.rs` the pure logic of the replicated [`GossipState`] (merge, prune, reachability,
//! convergence, leader choice); `downing.rs` the split-brain resolver's pure [`decide`].

use crate::ids::{NodeId, NodeInc};
use crate::time::{Duration, Instant};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

mod downing;
mod gossip;
mod member;
mod ring;
#[cfg(test)]
mod tests;
mod vclock;

/// Incarnation 1 of node `i`: the address the ring and vector-clock unit tests use.
#[cfg(test)]
pub(crate) fn test_addr(i: u32) -> NodeAddr {
    NodeAddr {
        node: crate::ids::NodeId(i),
        inc: crate::ids::NodeInc(1),
    }
}

pub use downing::{decide, Decision, DowningFacts, Outcome};
pub use gossip::{GossipContent, GossipMember, GossipState, ReachRecord};
pub use member::{Member, MemberStatus};
pub use vclock::{VcOrder, VectorClock};

use crate::rng::{Rng, Stream};
use vclock::VcOrder as Vc;

/// ClusterDaemon `MaxGossipsBeforeShuttingDownMyself` and
/// `NumberOfGossipsBeforeShutdownWhenLeaderExits` (both 5): full gossips to random members
/// when this node downs itself or completes its exiting tasks.
const GOSSIPS_BEFORE_SHUTDOWN: usize = 5;

/// reference.conf `akka.cluster.reduce-gossip-different-view-probability = 400`.
const REDUCE_GOSSIP_DIFFERENT_VIEW_PROBABILITY: f64 = 400.0;

/// `GossipTargetSelector.adjustedGossipDifferentViewProbability` (MembershipState.scala) as
/// Akka HEAD has it: ClusterDaemon constructs the selector with
/// `ReduceGossipDifferentViewProbability` (400) in the place of the probability, so
/// `gossip-different-view-probability` (0.8) is read but unused, and up to 400 members the
/// "probability" is 400: a node always prefers members that have not seen its version.
/// Above 400 members it falls linearly to a tenth at 1,200.
fn adjusted_gossip_different_view_probability(cluster_size: usize) -> f64 {
    let p = REDUCE_GOSSIP_DIFFERENT_VIEW_PROBABILITY;
    let low = p;
    let high = low * 3.0;
    let size = cluster_size as f64;
    if size <= low {
        p
    } else {
        let min_p = p / 10.0;
        if size >= high {
            min_p
        } else {
            let k = (min_p - p) / (high - low);
            p + (size - low) * k
        }
    }
}

/// Milliseconds as a `Duration`, saturating (configuration values are not trusted).
fn ms(v: u64) -> Duration {
    Duration(v.saturating_mul(1_000))
}

/// One node incarnation (Akka's `UniqueAddress`): a restarted node has a new `inc`.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
pub struct NodeAddr {
    /// The node's id, the same across its restarts (`inc` tells them apart).
    pub node: NodeId,
    /// Its incarnation.
    pub inc: NodeInc,
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.node.0, self.inc.0)
    }
}

/// The split-brain resolver strategies (Akka `akka.cluster.split-brain-resolver.active-strategy`).
#[derive(Clone, Debug, Deserialize, Eq, PartialEq, Serialize)]
// No `deny_unknown_fields` here or on `DowningProvider`: serde does not support it together
// with `flatten`.
#[serde(
    tag = "strategy",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum SbrStrategy {
    /// The side with more than half of the members survives; on a tie the side with the lowest
    /// address survives.
    KeepMajority,
    /// The side with the oldest member (lowest up-number) survives.
    KeepOldest {
        /// If the oldest is alone on its side (and the other side has more than one member),
        /// the oldest is downed instead. On by default, as in Akka
        /// (`akka.cluster.split-brain-resolver.keep-oldest.down-if-alone = on` in reference.conf).
        #[serde(default = "default_down_if_alone")]
        down_if_alone: bool,
    },
    /// A side with at least `quorum_size` members survives.
    StaticQuorum {
        /// Minimum number of members a side needs to survive.
        quorum_size: u32,
    },
    /// Every member is downed.
    DownAll,
}

/// Akka's default of `keep-oldest.down-if-alone`.
fn default_down_if_alone() -> bool {
    true
}

/// How unreachable members get downed (Akka's `downing-provider-class`).
#[derive(Clone, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(
    tag = "provider",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum DowningProvider {
    /// No automatic downing: only operator [`MInput::DownCommand`].
    #[default]
    None,
    /// The leader of each side downs members unreachable for `after_ms` (Akka's removed
    /// `auto-down-unreachable-after`): unsafe, a partition yields two clusters.
    AutoDown {
        /// How long a member must be unreachable before it is downed.
        after_ms: u64,
    },
    /// Akka's split-brain resolver.
    SplitBrainResolver {
        /// Which side of a partition survives (`active-strategy`).
        #[serde(flatten)]
        strategy: SbrStrategy,
        /// How long reachability must be unchanged before deciding (`stable-after`, 20 s).
        #[serde(default = "default_stable_after_ms")]
        stable_after_ms: u64,
        /// How long the surviving side waits before removing downed members
        /// (`down-removal-margin`; Akka's SBR uses `stable-after` when it is off, and so does
        /// a scenario that omits it: see [`MembershipConfig::resolve_defaults`]).
        #[serde(default = "margin_of_stable_after")]
        down_removal_margin_ms: u64,
        /// Down every member when reachability keeps changing for `stable-after` plus this
        /// long (`down-all-when-unstable`). Akka's default is on; the model's is off until
        /// every scenario has been judged under it.
        #[serde(default)]
        down_all_when_unstable: DownAllWhenUnstable,
    },
}

/// Akka's `split-brain-resolver.down-all-when-unstable` (reference.conf, "on" by default):
/// when reachability has kept changing for `stable-after` plus this long since the first change
/// without a decision, every node downs every member (SplitBrainResolver.scala `tick`,
/// SBR:298-321). Written `"on"`, `"off"` or a number of milliseconds above 0.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub enum DownAllWhenUnstable {
    /// 3/4 of `stable-after`, at least 4 s (SplitBrainResolverSettings.scala, SET:55-68):
    /// Akka's default.
    On,
    /// Never (Akka's `off`). The model's default for now, not Akka's: the scenarios are still
    /// to be judged under Akka's default.
    #[default]
    Off,
    /// After this many milliseconds.
    AfterMs(u64),
}

impl DownAllWhenUnstable {
    /// The duration in ms under `stable-after`, 0 when off (SET:55-68).
    pub fn resolve_ms(self, stable_after_ms: u64) -> u64 {
        match self {
            DownAllWhenUnstable::On => (stable_after_ms * 3 / 4).max(4_000),
            DownAllWhenUnstable::Off => 0,
            DownAllWhenUnstable::AfterMs(ms) => ms,
        }
    }
}

impl Serialize for DownAllWhenUnstable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DownAllWhenUnstable::On => s.serialize_str("on"),
            DownAllWhenUnstable::Off => s.serialize_str("off"),
            DownAllWhenUnstable::AfterMs(ms) => s.serialize_u64(*ms),
        }
    }
}

impl<'de> Deserialize<'de> for DownAllWhenUnstable {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = DownAllWhenUnstable;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"on\", \"off\" or a number of milliseconds above 0")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                match v {
                    "on" => Ok(DownAllWhenUnstable::On),
                    "off" => Ok(DownAllWhenUnstable::Off),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                if v == 0 {
                    return Err(E::invalid_value(serde::de::Unexpected::Unsigned(0), &self));
                }
                Ok(DownAllWhenUnstable::AfterMs(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(serde::de::Unexpected::Signed(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Akka's `ReachabilityChangedStats` (SBR:75-85): when the resolver first and last saw a
/// reachability change (an unreachable, reachable or downed member) since the stats were last
/// reset, and how many; `count == 0` is empty.
#[derive(Clone, Copy, Debug, Default)]
struct ChangeStats {
    first: Instant,
    latest: Instant,
    count: u64,
}

/// Akka's `split-brain-resolver.stable-after`.
fn default_stable_after_ms() -> u64 {
    20_000
}

/// Marks an omitted `down-removal-margin-ms` until [`MembershipConfig::resolve_defaults`]
/// replaces it with `stable-after-ms`.
const MARGIN_OF_STABLE_AFTER: u64 = u64::MAX;

fn margin_of_stable_after() -> u64 {
    MARGIN_OF_STABLE_AFTER
}

/// Membership settings; defaults are Akka's.
#[derive(Clone, Debug, Deserialize, Eq, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct MembershipConfig {
    /// Heartbeat period to every other member (`failure-detector.heartbeat-interval`).
    pub heartbeat_interval_ms: u64,
    /// Silence after which a member is unreachable (`failure-detector.acceptable-heartbeat-pause`).
    pub acceptable_heartbeat_pause_ms: u64,
    /// Gossip and leader-action period (`gossip-interval`, `leader-actions-interval`).
    pub gossip_interval_ms: u64,
    /// The downing provider.
    pub downing: DowningProvider,
    /// The leader's `min-nr-of-members` gate. Not a `[membership]` key: the scenario's one
    /// `[settings] min-nr-of-members` fills it in (with `[settings] role`), see
    /// [`MinMembers`].
    #[serde(skip)]
    pub min_nr_of_members: MinMembers,
    /// The schedule's seed, from which each node incarnation forks its gossip target stream
    /// (`Stream::Gossip`). Not a `[membership]` key: the world fills it in.
    #[serde(skip)]
    pub gossip_seed: u64,
    /// The protocol option `gossip-skips-unreachable-members` (a fix; off = Akka): the gossip
    /// round leaves out members any non-Down member observes as unreachable. Not a
    /// `[membership]` key: the world fills it in from `[options]`.
    #[serde(skip)]
    pub gossip_skips_unreachable: bool,
    /// The protocol option `down-self-gossip-excludes-downed-observers` (a fix; off = Akka):
    /// a Down node's farewell gossip goes to the members no non-Down member observes as
    /// unreachable, its own records not counting. Not a `[membership]` key: the world fills it
    /// in from `[options]`.
    #[serde(skip)]
    pub down_self_gossip_excludes_downed_observers: bool,
}

/// Akka's `akka.cluster.min-nr-of-members` and `akka.cluster.role.<role>.min-nr-of-members`
/// (§9.2): the leader keeps Joining members in Joining until the gossip holds at least `count`
/// members, counting only members with the sharding role when `of_role` (ClusterDaemon
/// `isMinNrOfMembersFulfilled`, `leaderActionsOnConvergence`). The model has one setting, the
/// one the coordinator also reads (§3.4 step 4): without a sharding role it is the cluster-wide
/// `min-nr-of-members`; with one, the role's (and the cluster-wide one is Akka's default, 1).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct MinMembers {
    /// How many members.
    pub count: usize,
    /// Count only members with the sharding role (`hosting`).
    pub of_role: bool,
}

impl Default for MinMembers {
    fn default() -> Self {
        MinMembers {
            count: 1,
            of_role: false,
        }
    }
}

impl MembershipConfig {
    /// Fill in the defaults that depend on another key: an omitted split-brain resolver
    /// `down-removal-margin-ms` is its `stable-after-ms` (Akka's `downRemovalMargin` of the
    /// SBR provider, SplitBrainResolverProvider.scala). Call once after deserializing.
    pub fn resolve_defaults(&mut self) {
        if let DowningProvider::SplitBrainResolver {
            stable_after_ms,
            down_removal_margin_ms,
            ..
        } = &mut self.downing
        {
            if *down_removal_margin_ms == MARGIN_OF_STABLE_AFTER {
                *down_removal_margin_ms = *stable_after_ms;
            }
        }
    }
}

impl Default for MembershipConfig {
    fn default() -> Self {
        MembershipConfig {
            heartbeat_interval_ms: 1000,
            acceptable_heartbeat_pause_ms: 3000,
            gossip_interval_ms: 1000,
            downing: DowningProvider::None,
            min_nr_of_members: MinMembers::default(),
            gossip_seed: 0,
            gossip_skips_unreachable: false,
            down_self_gossip_excludes_downed_observers: false,
        }
    }
}

/// The membership messages between nodes. Plain data.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum MMsg {
    /// A node asks to join (sent to seeds until welcomed).
    Join {
        /// Whether the joiner hosts entities.
        hosting: bool,
        /// The joiner's app version (Akka's `Join` carries it, 2.6.10+).
        app_version: u32,
    },
    /// Reply to `Join`: the joiner is now a Joining member of this state.
    Welcome {
        /// The current state (shared: a broadcast clones a pointer, not the maps).
        gossip: Arc<GossipState>,
    },
    /// Failure-detector heartbeat.
    Heartbeat,
    /// Reply to `Heartbeat`.
    HeartbeatRsp,
    /// The full state (Akka's `GossipEnvelope`).
    Gossip {
        /// The sender's state (shared: a broadcast clones a pointer, not the maps).
        gossip: Arc<GossipState>,
    },
    /// An Exiting member has finished its exiting tasks (coordinated shutdown's
    /// `cluster-exiting`, the singleton hand-over): the leader may remove it (Akka's
    /// `ExitingConfirmed`, ClusterDaemon.scala `receiveExitingConfirmed`).
    ExitingConfirmed,
    /// The version digest of the sender's state (Akka's `GossipStatus(from, version,
    /// seenDigest)`), sent instead of the full state to a member that has seen it.
    GossipStatus {
        /// The sender's version.
        version: Arc<VectorClock>,
        /// A digest of the sender's seen set.
        seen_digest: u64,
    },
}

/// The membership timers of one node. Re-setting a timer replaces it.
#[derive(Clone, Copy, Debug, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize)]
pub enum MTimer {
    /// Gossip push, leader actions and downing checks.
    GossipTick,
    /// Send heartbeats and check the failure detector.
    HeartbeatTick,
    /// Resend `Join` to the seeds.
    JoinRetry,
    /// Akka's `GossipSpeedupTick`: one more gossip round at a third of the interval while the
    /// state is not converged (`isGossipSpeedupNeeded`).
    GossipSpeedupTick,
}

/// Everything the membership can be told.
#[derive(Clone, Debug)]
pub enum MInput {
    /// Start the node: join via the seeds, or form a new cluster when `seeds` holds nobody else.
    Start {
        /// Seed nodes to send `Join` to.
        seeds: Vec<NodeAddr>,
    },
    /// A message arrived.
    Deliver {
        /// The sender.
        from: NodeAddr,
        /// The message.
        msg: MMsg,
    },
    /// A timer fired.
    Timeout(MTimer),
    /// Leave the cluster gracefully.
    Leave,
    /// The operator downs a member from this node.
    DownCommand(NodeAddr),
    /// This Exiting node finished its exiting tasks (`ExitingCompleted`): confirm to the
    /// other members and stop.
    ExitingCompleted,
    /// `Cluster.leave(address)` on this node for another member: it becomes Leaving, spread by
    /// gossip (ClusterDaemon `leaving`); it runs coordinated shutdown when it is Exiting.
    LeaveCommand(NodeAddr),
}

/// Something observable for the trace.
#[derive(Clone, Debug, Deserialize, Eq, Hash, PartialEq, Serialize)]
pub enum MembershipEvent {
    /// This node's failure detector marked `subject` unreachable.
    Unreachable {
        /// This node.
        observer: NodeAddr,
        /// The silent member.
        subject: NodeAddr,
    },
    /// This node's failure detector marked `subject` reachable again.
    Reachable {
        /// This node.
        observer: NodeAddr,
        /// The member heard from again.
        subject: NodeAddr,
    },
    /// The status of a member changed in this node's view.
    StatusChanged {
        /// The member.
        node: NodeAddr,
        /// Its new status.
        status: MemberStatus,
    },
    /// This node, as leader, applied a downing decision.
    DowningDecision {
        /// `auto-down` or `sbr-<strategy>`.
        provider: String,
        /// Human-readable decision.
        decision: String,
        /// The members marked Down.
        downed: Vec<NodeAddr>,
    },
    /// The leader in this node's view changed.
    LeaderChanged {
        /// The new leader.
        leader: Option<NodeAddr>,
    },
}

/// Everything the membership asks its environment to do.
#[derive(Clone, Debug)]
pub enum MOutput {
    /// Send a message.
    Send {
        /// The recipient.
        to: NodeAddr,
        /// The message.
        msg: MMsg,
    },
    /// Set (or replace) a timer.
    SetTimer {
        /// The membership timer to start (gossip, heartbeat, join retry or gossip speed-up).
        timer: MTimer,
        /// Delay from now.
        after: Duration,
    },
    /// Cancel a timer.
    CancelTimer(MTimer),
    /// The members (Removed excluded, oldest first) or a status changed.
    MembersChanged(Vec<Member>),
    /// This node is Exiting: run the exiting tasks (the singleton hand-over), then answer
    /// [`MInput::ExitingCompleted`]. Emitted once.
    SelfExiting,
    /// This node must stop; emitted once, after which every input is ignored.
    Shutdown {
        /// `left`, `downed`, `removed`, `sbr: ...`, ...
        reason: String,
    },
    /// An observation for the trace.
    Observe(MembershipEvent),
}

/// The cluster membership of one node incarnation.
#[derive(Clone, Debug)]
pub struct Membership {
    me: NodeAddr,
    hosting: bool,
    app_version: u32,
    cfg: MembershipConfig,
    started: bool,
    joined: bool,
    stopped: bool,
    seeds: Vec<NodeAddr>,
    /// The kept state, shared copy-on-write with the gossip messages that carry it: a send
    /// shares it, and a change after a send copies it only while a copy is still held.
    gossip: Arc<GossipState>,
    /// Gossip target choice (Akka's `ThreadLocalRandom` in `GossipTargetSelector`).
    rng: Rng,
    /// Speed-up gossip rounds left in this gossip interval (Akka schedules two, at 1/3 and
    /// 2/3 of it, ClusterDaemon `gossipTick`).
    speedup_left: u8,
    /// This node's heartbeat receivers on the ring (`HeartbeatNodeRing.myReceivers`).
    receivers: BTreeSet<NodeAddr>,
    /// Former receivers still heartbeated because they were unreachable when they left the
    /// ring's selection (`ClusterHeartbeatSenderState.oldReceiversNowUnreachable`).
    old_receivers_unreachable: BTreeSet<NodeAddr>,
    /// Bumped on every change of the content (members, reachability).
    rev: u64,
    /// The `rev` whose derived state (statuses, member list, monitoring, reachability
    /// bookkeeping, leader) `post` last brought up to date.
    post_rev: Option<u64>,
    /// The `rev` whose unreachable and live sets `track_unreachable` last recorded.
    tracked_rev: Option<u64>,
    /// Exiting members that confirmed their exiting tasks are done (Akka's leader-local
    /// `exitingConfirmed`): only those, or unreachable ones, are removed.
    exiting_confirmed: BTreeSet<NodeAddr>,
    /// `SelfExiting` was emitted.
    exiting_announced: bool,
    /// This node's own reachability version counter.
    reach_version: u64,
    /// Failure detector: last heartbeat response per monitored member (the active receivers:
    /// `receivers` and `old_receivers_unreachable`).
    last_heard: BTreeMap<NodeAddr, Instant>,
    /// When each member was first seen Down here (for the removal margin).
    down_seen_at: BTreeMap<NodeAddr, Instant>,
    /// Since when each member has been unreachable (for auto-down).
    unreachable_since: BTreeMap<NodeAddr, Instant>,
    /// The resolver's stable deadline minus `stable-after`: the last event that resets it
    /// (SBR `mutateMemberInfo(resetStable = true)`).
    stable_since: Instant,
    /// The live unreachable members other than this node: a resolver decision waits for one.
    unreachable_live: BTreeSet<NodeAddr>,
    /// The subjects of unreachable records the resolver last saw (for its Unreachable and
    /// Reachable events).
    sbr_subjects: BTreeSet<NodeAddr>,
    /// The member statuses the resolver last saw (for its Up, Exited and Downed events).
    sbr_statuses: BTreeMap<NodeAddr, MemberStatus>,
    /// The resolver's reachability changes, for `down-all-when-unstable`.
    changes: ChangeStats,
    last_members: Vec<Member>,
    last_status: BTreeMap<NodeAddr, MemberStatus>,
    last_leader: Option<NodeAddr>,
}

impl Membership {
    /// A node incarnation that has not started yet.
    pub fn new(me: NodeAddr, hosting: bool, cfg: MembershipConfig) -> Self {
        let rng = Self::gossip_rng(cfg.gossip_seed, me);
        Membership {
            me,
            hosting,
            app_version: 0,
            cfg,
            started: false,
            joined: false,
            stopped: false,
            seeds: Vec::new(),
            gossip: Arc::default(),
            rng,
            speedup_left: 0,
            receivers: BTreeSet::new(),
            old_receivers_unreachable: BTreeSet::new(),
            rev: 0,
            post_rev: None,
            tracked_rev: None,
            exiting_confirmed: BTreeSet::new(),
            exiting_announced: false,
            reach_version: 0,
            last_heard: BTreeMap::new(),
            down_seen_at: BTreeMap::new(),
            unreachable_since: BTreeMap::new(),
            stable_since: Instant::ZERO,
            unreachable_live: BTreeSet::new(),
            sbr_subjects: BTreeSet::new(),
            sbr_statuses: BTreeMap::new(),
            changes: ChangeStats::default(),
            last_members: Vec::new(),
            last_status: BTreeMap::new(),
            last_leader: None,
        }
    }

    fn gossip_rng(seed: u64, me: NodeAddr) -> Rng {
        Rng::fork_keyed(
            seed,
            Stream::Gossip,
            u64::from(me.node.0) << 32 | u64::from(me.inc.0),
        )
    }

    /// This incarnation runs app version `v` (`akka.cluster.app-version`; 0 by default). Set
    /// before [`MInput::Start`].
    pub fn set_app_version(&mut self, v: u32) {
        self.app_version = v;
    }

    /// Bumped on every change of the gossip content (members, statuses, reachability): a host
    /// that derives something from the state (the unreachable set) recomputes it only then.
    pub fn content_rev(&self) -> u64 {
        self.rev
    }

    /// This node's address.
    pub fn me(&self) -> NodeAddr {
        self.me
    }

    /// The current members, Removed excluded, sorted by (up-number, node): oldest first,
    /// Joining members (up-number `u32::MAX`, Akka's `Int.MaxValue`) last.
    pub fn members(&self) -> Vec<Member> {
        self.gossip.member_list()
    }

    /// Members unreachable according to any live observer in this node's view.
    pub fn unreachable(&self) -> BTreeSet<NodeAddr> {
        self.gossip.unreachable()
    }

    /// The leader in this node's view (Akka `Gossip.leaderOf`).
    pub fn leader(&self) -> Option<NodeAddr> {
        if !self.joined {
            return None;
        }
        self.gossip.leader(self.me)
    }

    /// Whether this node is the leader in its own view.
    pub fn is_leader(&self) -> bool {
        self.leader() == Some(self.me)
    }

    /// This node's status in its own view (`None` before it was welcomed).
    pub fn status_of_self(&self) -> Option<MemberStatus> {
        self.gossip.status(self.me)
    }

    /// Whether this node has emitted `Shutdown`.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The replicated state as this node sees it.
    pub fn gossip_state(&self) -> &GossipState {
        &self.gossip
    }

    fn hb(&self) -> Duration {
        ms(self.cfg.heartbeat_interval_ms)
    }
    fn gi(&self) -> Duration {
        ms(self.cfg.gossip_interval_ms)
    }
    fn removal_margin(&self) -> Duration {
        match self.cfg.downing {
            // Akka: with SBR, down-removal-margin defaults to stable-after; we use the explicit one.
            DowningProvider::SplitBrainResolver {
                down_removal_margin_ms,
                ..
            } => ms(down_removal_margin_ms),
            _ => Duration::ZERO,
        }
    }

    /// A local change of the content: a new version (ClusterDaemon `updateLatestGossip`:
    /// `gossip :+ vclockNode`, then `onlySeen(selfUniqueAddress)`): only this node has seen it.
    fn touch(&mut self) {
        self.rev += 1;
        let g = Arc::make_mut(&mut self.gossip);
        g.version.bump(self.me);
        g.seen.clear();
        g.seen.insert(self.me);
    }

    /// Move member `a` forward to `status`. Idempotent: a status it already has (or passed)
    /// changes nothing, so the seen set is kept and convergence is not disturbed (Akka's
    /// `joining` downs an old incarnation only `if (m.status != Down)`, ClusterDaemon.scala).
    fn set_status(&mut self, a: NodeAddr, status: MemberStatus, reason: Option<String>) {
        // Checked on the shared state first: an idempotent call copies nothing.
        if self.gossip.status(a).is_none_or(|st| status <= st) {
            return;
        }
        let g = Arc::make_mut(&mut self.gossip);
        let Some(m) = g.members.get_mut(&a) else {
            return;
        };
        m.status = status;
        if status == MemberStatus::Down && m.down_reason.is_none() {
            m.down_reason = reason;
        }
        g.prune();
        self.touch();
    }

    /// Drive the state machine with one input.
    pub fn handle(&mut self, now: Instant, input: MInput, out: &mut Vec<MOutput>) {
        if self.stopped {
            return;
        }
        match input {
            MInput::Start { seeds } => self.on_start(now, seeds, out),
            MInput::Deliver { from, msg } => self.on_deliver(now, from, msg, out),
            MInput::Timeout(t) => self.on_timeout(now, t, out),
            MInput::Leave => {
                // Akka `Cluster.leave`: Joining/Up → Leaving, spread by gossip.
                if matches!(
                    self.status_of_self(),
                    Some(MemberStatus::Joining | MemberStatus::Up)
                ) {
                    self.set_status(self.me, MemberStatus::Leaving, None);
                    self.gossip_after_leaving(self.me, out);
                }
            }
            MInput::ExitingCompleted => {
                if self.status_of_self() == Some(MemberStatus::Exiting) {
                    // ClusterDaemon `exitingCompleted`: mark the state seen, gossip it to
                    // `NumberOfGossipsBeforeShutdownWhenLeaderExits` random members, then
                    // `ExitingConfirmed` to the other members (Akka sends it to the leader
                    // and the other members that may become leader).
                    Arc::make_mut(&mut self.gossip).seen.insert(self.me);
                    self.gossip_random_n(GOSSIPS_BEFORE_SHUTDOWN, out);
                    for a in self.gossip.members.keys() {
                        if *a != self.me && self.gossip.is_live(*a) {
                            out.push(MOutput::Send {
                                to: *a,
                                msg: MMsg::ExitingConfirmed,
                            });
                        }
                    }
                    return self.stop(out, "left".into());
                }
            }
            MInput::LeaveCommand(a) => {
                if self.joined
                    && matches!(
                        self.gossip.status(a),
                        Some(MemberStatus::Joining | MemberStatus::Up)
                    )
                {
                    self.set_status(a, MemberStatus::Leaving, None);
                    self.gossip_after_leaving(a, out);
                }
            }
            MInput::DownCommand(a) => {
                // Akka `Cluster.down`: any member may mark any known member Down.
                if self.joined && matches!(self.gossip.status(a), Some(s) if s < MemberStatus::Down)
                {
                    self.set_status(a, MemberStatus::Down, Some("downed: operator".into()));
                    self.gossip_after_down(a, out);
                }
            }
        }
        self.post(now, out);
    }

    fn on_start(&mut self, now: Instant, seeds: Vec<NodeAddr>, out: &mut Vec<MOutput>) {
        if self.started {
            return;
        }
        self.started = true;
        self.stable_since = now;
        self.seeds = seeds.into_iter().filter(|s| *s != self.me).collect();
        if self.seeds.is_empty() {
            // Akka: the first seed joins itself and forms a new cluster.
            Arc::make_mut(&mut self.gossip).members.insert(
                self.me,
                GossipMember {
                    up_number: 0,
                    status: MemberStatus::Joining,
                    hosting: self.hosting,
                    app_version: self.app_version,
                    down_reason: None,
                },
            );
            self.joined = true;
            self.touch();
        } else {
            self.send_joins(out);
        }
        out.push(MOutput::SetTimer {
            timer: MTimer::GossipTick,
            after: self.gi(),
        });
        out.push(MOutput::SetTimer {
            timer: MTimer::HeartbeatTick,
            after: self.hb(),
        });
    }

    fn send_joins(&mut self, out: &mut Vec<MOutput>) {
        for s in &self.seeds {
            out.push(MOutput::Send {
                to: *s,
                msg: MMsg::Join {
                    hosting: self.hosting,
                    app_version: self.app_version,
                },
            });
        }
        out.push(MOutput::SetTimer {
            timer: MTimer::JoinRetry,
            after: self.gi(),
        });
    }

    fn on_timeout(&mut self, now: Instant, t: MTimer, out: &mut Vec<MOutput>) {
        if !self.started {
            return;
        }
        match t {
            MTimer::JoinRetry => {
                if !self.joined {
                    self.send_joins(out);
                }
            }
            MTimer::HeartbeatTick => {
                out.push(MOutput::SetTimer {
                    timer: MTimer::HeartbeatTick,
                    after: self.hb(),
                });
                if self.joined {
                    self.heartbeat(now, out);
                }
            }
            MTimer::GossipTick => {
                out.push(MOutput::SetTimer {
                    timer: MTimer::GossipTick,
                    after: self.gi(),
                });
                if self.joined {
                    // Refresh the stability bookkeeping before deciding on it.
                    self.track_unreachable(now);
                    let downed_all = self.down_all_when_unstable(now, out);
                    if !downed_all && self.is_leader() {
                        self.leader_actions(now, out);
                    }
                    // ClusterDaemon `gossipTick`: one round, and two speed-up rounds at 1/3
                    // and 2/3 of the interval while `isGossipSpeedupNeeded`.
                    self.gossip_round(out);
                    if self.is_gossip_speedup_needed() {
                        self.speedup_left = 2;
                        out.push(MOutput::SetTimer {
                            timer: MTimer::GossipSpeedupTick,
                            after: Duration(self.gi().0 / 3),
                        });
                    }
                }
            }
            MTimer::GossipSpeedupTick => {
                // ClusterDaemon `gossipSpeedupTick`: `if (isGossipSpeedupNeeded) gossip()`.
                self.speedup_left = self.speedup_left.saturating_sub(1);
                if self.speedup_left > 0 {
                    out.push(MOutput::SetTimer {
                        timer: MTimer::GossipSpeedupTick,
                        after: Duration(self.gi().0 / 3),
                    });
                }
                if self.joined && self.is_gossip_speedup_needed() {
                    self.gossip_round(out);
                }
            }
        }
    }

    /// `ClusterHeartbeatSenderState.membershipChange`: the ring holds the members that are not
    /// Removed (`addMember` on every member event, `removeMember` on `MemberRemoved`), its
    /// unreachable set is the gossip's (`UnreachableMember`/`ReachableMember` events). A
    /// receiver dropped from the selection while its failure detector says unavailable is
    /// still heartbeated (`oldReceiversNowUnreachable`) until it answers or is removed; the
    /// others are forgotten (`failureDetector.remove`). A new receiver starts with a fresh
    /// deadline (Akka's `ExpectedFirstHeartbeat` after `expected-response-after`).
    fn update_receivers(&mut self, now: Instant) {
        let nodes: BTreeSet<NodeAddr> = self.member_addrs().into_iter().collect();
        let unreachable = self.gossip.unreachable();
        let receivers = if nodes.contains(&self.me) {
            ring::receivers(
                self.me,
                &nodes,
                &unreachable,
                ring::MONITORED_BY_NR_OF_MEMBERS,
            )
        } else {
            BTreeSet::new()
        };
        let pause = ms(self.cfg.acceptable_heartbeat_pause_ms);
        for a in self.receivers.difference(&receivers) {
            let available = self
                .last_heard
                .get(a)
                .is_none_or(|l| now - *l <= pause && !self.observes_unreachable(*a));
            if !available && nodes.contains(a) {
                self.old_receivers_unreachable.insert(*a);
            }
        }
        self.old_receivers_unreachable
            .retain(|a| nodes.contains(a) && !receivers.contains(a));
        self.receivers = receivers;
        let (receivers, old) = (&self.receivers, &self.old_receivers_unreachable);
        self.last_heard
            .retain(|a, _| receivers.contains(a) || old.contains(a));
        for a in self.receivers.iter() {
            self.last_heard.entry(*a).or_insert(now);
        }
    }

    fn heartbeat(&mut self, now: Instant, out: &mut Vec<MOutput>) {
        let pause = ms(self.cfg.acceptable_heartbeat_pause_ms);
        let targets: Vec<NodeAddr> = self.last_heard.keys().copied().collect();
        for t in targets {
            out.push(MOutput::Send {
                to: t,
                msg: MMsg::Heartbeat,
            });
            let last = self.last_heard.get(&t).copied().unwrap_or(now);
            // Akka's phi-accrual detector with acceptable-heartbeat-pause; simplified to a
            // plain deadline since the last response.
            if now - last > pause && !self.observes_unreachable(t) {
                self.record_reachability(t, true, out);
            }
        }
    }

    fn observes_unreachable(&self, s: NodeAddr) -> bool {
        self.gossip.observes_unreachable(self.me, s)
    }

    fn record_reachability(&mut self, s: NodeAddr, unreachable: bool, out: &mut Vec<MOutput>) {
        self.reach_version += 1;
        Arc::make_mut(&mut self.gossip).reachability.insert(
            (self.me, s),
            ReachRecord {
                version: self.reach_version,
                unreachable,
            },
        );
        self.touch();
        let ev = if unreachable {
            MembershipEvent::Unreachable {
                observer: self.me,
                subject: s,
            }
        } else {
            MembershipEvent::Reachable {
                observer: self.me,
                subject: s,
            }
        };
        out.push(MOutput::Observe(ev));
    }

    fn on_deliver(&mut self, now: Instant, from: NodeAddr, msg: MMsg, out: &mut Vec<MOutput>) {
        if !self.started || from == self.me {
            return;
        }
        // Akka quarantines removed incarnations: nothing from them is processed.
        if self.gossip.status(from) == Some(MemberStatus::Removed) {
            return;
        }
        match msg {
            MMsg::Heartbeat => out.push(MOutput::Send {
                to: from,
                msg: MMsg::HeartbeatRsp,
            }),
            MMsg::HeartbeatRsp => {
                // `ClusterHeartbeatSenderState.heartbeatRsp`: only from an active receiver; a
                // former receiver back from unreachable is no longer heartbeated.
                if let Some(last) = self.last_heard.get_mut(&from) {
                    *last = now;
                    if self.observes_unreachable(from) {
                        self.record_reachability(from, false, out);
                    }
                    if self.old_receivers_unreachable.remove(&from)
                        && !self.receivers.contains(&from)
                    {
                        self.last_heard.remove(&from);
                    }
                }
            }
            MMsg::Join {
                hosting,
                app_version,
            } => self.on_join(from, hosting, app_version, out),
            // ClusterDaemon `receiveExitingConfirmed`: remembered even before this node
            // has seen the sender Exiting.
            MMsg::ExitingConfirmed => {
                self.exiting_confirmed.insert(from);
            }
            MMsg::Welcome { gossip } | MMsg::Gossip { gossip } => self.on_gossip(from, gossip, out),
            MMsg::GossipStatus {
                version,
                seen_digest,
            } => self.on_gossip_status(from, &version, seen_digest, out),
        }
    }

    fn on_join(&mut self, from: NodeAddr, hosting: bool, app_version: u32, out: &mut Vec<MOutput>) {
        if !self.joined
            || self
                .status_of_self()
                .is_none_or(|s| s >= MemberStatus::Down)
        {
            return;
        }
        if let Some(st) = self.gossip.status(from) {
            // Already a member (the Welcome was lost): welcome again. Removed never rejoin.
            if st != MemberStatus::Removed {
                out.push(MOutput::Send {
                    to: from,
                    msg: MMsg::Welcome {
                        gossip: Arc::clone(&self.gossip),
                    },
                });
            }
            return;
        }
        // Akka: a new incarnation of an existing member makes the old one Down; the new one is
        // admitted (on a retried Join) only once the old one is Removed.
        let olds: Vec<NodeAddr> = self
            .gossip
            .members
            .iter()
            .filter(|(a, m)| a.node == from.node && m.status != MemberStatus::Removed)
            .map(|(a, _)| *a)
            .collect();
        if !olds.is_empty() {
            for o in olds {
                if o.inc < from.inc {
                    self.set_status(
                        o,
                        MemberStatus::Down,
                        Some("downed: replaced by a new incarnation".into()),
                    );
                }
            }
            return;
        }
        Arc::make_mut(&mut self.gossip).members.insert(
            from,
            GossipMember {
                up_number: 0,
                status: MemberStatus::Joining,
                hosting,
                app_version,
                down_reason: None,
            },
        );
        self.touch();
        out.push(MOutput::Send {
            to: from,
            msg: MMsg::Welcome {
                gossip: Arc::clone(&self.gossip),
            },
        });
    }

    fn on_gossip(&mut self, from: NodeAddr, incoming: Arc<GossipState>, out: &mut Vec<MOutput>) {
        // ClusterDaemon `receiveGossip`: ignore gossip that does not contain the receiver, or
        // (once joined) comes from a sender it does not know or observes as unreachable.
        if !incoming.members.contains_key(&self.me) {
            return;
        }
        if self.joined
            && (!self.gossip.members.contains_key(&from) || self.observes_unreachable(from))
        {
            return;
        }
        if !self.joined {
            // The Welcome (or the first gossip naming us) makes us a member.
            self.joined = true;
            out.push(MOutput::CancelTimer(MTimer::JoinRetry));
        }
        // Compare the versions and keep, take or merge (gossip.rs), then `seen(self)`.
        let sender_saw_me = incoming.seen.contains(&self.me);
        let order = GossipState::merge_from(&mut self.gossip, incoming, self.me);
        // The content changed unless it was ours (Same, or an older incoming version).
        if !matches!(order, Vc::Same | Vc::Before) {
            self.rev += 1;
        }
        // `talkback`: Same or newer when the sender has not seen that we have seen it; older
        // or concurrent always (the sender lacks something we have).
        let talkback = match order {
            Vc::Same | Vc::After => !sender_saw_me,
            Vc::Before | Vc::Concurrent => true,
        };
        if talkback {
            self.gossip_to(from, out);
        }
    }

    /// ClusterDaemon `receiveGossipStatus`: from a known, reachable member; a different seen
    /// digest, an older or a concurrent version gets the full state back, a newer one our
    /// own status (so the sender sends its full state), the same one nothing.
    fn on_gossip_status(
        &mut self,
        from: NodeAddr,
        version: &VectorClock,
        seen_digest: u64,
        out: &mut Vec<MOutput>,
    ) {
        if !self.joined
            || !self.gossip.members.contains_key(&from)
            || self.observes_unreachable(from)
        {
            return;
        }
        if seen_digest != self.gossip.seen_digest() {
            return self.gossip_to(from, out);
        }
        match version.compare(&self.gossip.version) {
            Vc::Same => {}
            Vc::After => self.gossip_status_to(from, out),
            Vc::Before | Vc::Concurrent => self.gossip_to(from, out),
        }
    }

    /// Akka `MembershipState.validNodeForGossip`: not self, a member (Akka's members hold no
    /// Removed ones), and reachable from this node. With the fix option
    /// `down-self-gossip-excludes-downed-observers`, while this node is Down (its farewell
    /// gossip before it shuts down), Akka's rule before 2.6.10 instead:
    /// `reachabilityExcludingDownedObservers.isReachable`, where this node's own records, a
    /// Down observer's, do not count.
    fn valid_node_for_gossip(&self, a: NodeAddr) -> bool {
        a != self.me
            && self
                .gossip
                .status(a)
                .is_some_and(|st| st != MemberStatus::Removed)
            && if self.cfg.down_self_gossip_excludes_downed_observers
                && self.status_of_self() == Some(MemberStatus::Down)
            {
                !self.gossip.unreachable().contains(&a)
            } else {
                !self.observes_unreachable(a)
            }
    }

    /// With the fix option `gossip-skips-unreachable-members`: the members a non-Down member
    /// observes as unreachable (Akka before 2.6.10, `reachabilityExcludingDownedObservers`),
    /// which the gossip round leaves out. Empty without the option (Akka).
    fn unreachable_to_skip(&self) -> BTreeSet<NodeAddr> {
        if self.cfg.gossip_skips_unreachable {
            self.gossip.unreachable()
        } else {
            BTreeSet::new()
        }
    }

    /// ClusterDaemon `gossipTo`: the full state to `a` if it is a valid gossip target.
    fn gossip_to(&self, a: NodeAddr, out: &mut Vec<MOutput>) {
        if self.valid_node_for_gossip(a) {
            out.push(MOutput::Send {
                to: a,
                msg: MMsg::Gossip {
                    gossip: Arc::clone(&self.gossip),
                },
            });
        }
    }

    /// ClusterDaemon `gossipStatusTo`: the version digest to `a`.
    fn gossip_status_to(&self, a: NodeAddr, out: &mut Vec<MOutput>) {
        if self.valid_node_for_gossip(a) {
            out.push(MOutput::Send {
                to: a,
                msg: MMsg::GossipStatus {
                    version: Arc::new(self.gossip.version.clone()),
                    seen_digest: self.gossip.seen_digest(),
                },
            });
        }
    }

    /// The members, Removed excluded (Akka's `latestGossip.members`), in address order.
    fn member_addrs(&self) -> Vec<NodeAddr> {
        self.gossip
            .members
            .iter()
            .filter(|(_, m)| m.status != MemberStatus::Removed)
            .map(|(a, _)| *a)
            .collect()
    }

    /// ClusterDaemon `gossip()`: unless this is a singleton cluster, one target chosen by
    /// `GossipTargetSelector.gossipTarget`; a target that has seen this version gets the
    /// status only ("avoid transferring the full state if possible"), another the full state.
    fn gossip_round(&mut self, out: &mut Vec<MOutput>) {
        let members = self.member_addrs();
        if members.len() <= 1 {
            return;
        }
        // `localDcGossipTargets`: with `preferNodesWithDifferentView`, the valid members that
        // have not seen this version; if none (or not preferred), every valid member.
        let p = adjusted_gossip_different_view_probability(members.len());
        let prefer = self.rng.chance(p);
        let skip = self.unreachable_to_skip();
        let valid = |a: &NodeAddr| self.valid_node_for_gossip(*a) && !skip.contains(a);
        let mut targets: Vec<NodeAddr> = Vec::new();
        if prefer {
            targets.extend(
                members
                    .iter()
                    .copied()
                    .filter(|a| !self.gossip.seen.contains(a) && valid(a)),
            );
        }
        if targets.is_empty() {
            targets.extend(members.iter().copied().filter(valid));
        }
        if targets.is_empty() {
            return;
        }
        // `selectRandomNode`: `nodes(ThreadLocalRandom.current.nextInt(nodes.size))`.
        let peer = targets[self.rng.range(0, targets.len() as u64 - 1) as usize];
        if self.gossip.seen.contains(&peer) {
            self.gossip_status_to(peer, out);
        } else {
            self.gossip_to(peer, out);
        }
    }

    /// ClusterDaemon `isGossipSpeedupNeeded` (one data centre): a member Down, Leaving or
    /// Exiting, or fewer than half of the members have seen this version.
    fn is_gossip_speedup_needed(&self) -> bool {
        let mut members = 0;
        let mut seen = 0;
        for (a, m) in &self.gossip.members {
            if m.status == MemberStatus::Removed {
                continue;
            }
            if matches!(
                m.status,
                MemberStatus::Down | MemberStatus::Leaving | MemberStatus::Exiting
            ) {
                return true;
            }
            members += 1;
            seen += usize::from(self.gossip.seen.contains(a));
        }
        seen < members / 2
    }

    /// ClusterDaemon `gossipRandomN`: the full state to `n` random valid members
    /// (`GossipTargetSelector.randomNodesForFullGossip`: all of them if there are no more).
    fn gossip_random_n(&mut self, n: usize, out: &mut Vec<MOutput>) {
        let skip = self.unreachable_to_skip();
        let mut nodes: Vec<NodeAddr> = self
            .member_addrs()
            .into_iter()
            .filter(|a| self.valid_node_for_gossip(*a) && !skip.contains(a))
            .collect();
        if nodes.len() > n {
            // `Random.shuffle(selectedNodes).take(n)`: a partial Fisher-Yates.
            for i in 0..n {
                let j = self.rng.range(i as u64, nodes.len() as u64 - 1) as usize;
                nodes.swap(i, j);
            }
            nodes.truncate(n);
        }
        for a in nodes {
            self.gossip_to(a, out);
        }
    }

    /// ClusterDaemon `leaving`: "immediate gossip to speed up the leaving process",
    /// `gossipToOldest(Set(leavingMember))` then `gossip()`.
    fn gossip_after_leaving(&mut self, a: NodeAddr, out: &mut Vec<MOutput>) {
        self.gossip_to_oldest(&[a], out);
        self.gossip_round(out);
    }

    /// ClusterDaemon `gossipToOldest`: the full state to the targets of
    /// `MembershipState.gossipTargetsForLeavingAndExitingMembers`: the two oldest members, and
    /// the two oldest with the changed members' role (here the sharding role, `hosting`).
    fn gossip_to_oldest(&self, changed: &[NodeAddr], out: &mut Vec<MOutput>) {
        if changed.is_empty() {
            return;
        }
        let by_age = self.gossip.member_list();
        let mut targets: BTreeSet<NodeAddr> = BTreeSet::new();
        let addr = |m: &Member| NodeAddr {
            node: m.node,
            inc: m.inc,
        };
        targets.extend(by_age.iter().take(2).map(addr));
        let role = changed
            .iter()
            .any(|a| self.gossip.members.get(a).is_some_and(|m| m.hosting));
        if role {
            targets.extend(by_age.iter().filter(|m| m.hosting).take(2).map(addr));
        }
        for t in targets {
            self.gossip_to(t, out);
        }
    }

    /// ClusterDaemon `downing`: after marking `a` Down, "spread the word quickly" with
    /// `gossipRandomN(MaxGossipsBeforeShuttingDownMyself)` when it is this node, else try to
    /// gossip to the downed node "as a STONITH signal".
    fn gossip_after_down(&mut self, a: NodeAddr, out: &mut Vec<MOutput>) {
        if a == self.me {
            self.gossip_random_n(GOSSIPS_BEFORE_SHUTDOWN, out);
        } else {
            self.gossip_to(a, out);
        }
    }

    /// Akka `Gossip.convergence` in this node's view.
    fn convergence(&self) -> bool {
        self.gossip.convergence()
    }

    fn track_unreachable(&mut self, now: Instant) {
        // A function of the content (and of `now` for first sightings only): nothing to do
        // while the content is the one last tracked.
        if self.tracked_rev == Some(self.rev) {
            return;
        }
        self.tracked_rev = Some(self.rev);
        let unreachable = self.gossip.unreachable_live();
        self.unreachable_since
            .retain(|a, _| unreachable.contains(a));
        for a in &unreachable {
            self.unreachable_since.entry(*a).or_insert(now);
        }
        self.unreachable_live = unreachable;
        self.unreachable_live.remove(&self.me);
        self.track_resolver_events(now);
    }

    /// The cluster events Akka's resolver takes (SBR:274-291), from the change of this node's
    /// view since it last looked: a member newly the subject of an unreachable record
    /// (`UnreachableMember`, from the whole reachability: ClusterEvent:459-472), one no longer
    /// (`ReachableMember`, ClusterEvent:478-491), one newly Down (`MemberDowned`, taken as
    /// unreachable), none of them this node (SBR:491, 504), each counted as a reachability
    /// change; and a member newly Up or Exiting. Each of these restarts `stable-after`
    /// (`mutateMemberInfo(resetStable = true)`: addUp, exited, unreachableMember,
    /// reachableMember); a join, a leave or a removal does not. The change counts are cleared
    /// when no Up or Leaving member is unreachable any more
    /// (`resetReachabilityChangedStatsIfAllUnreachableDowned`, SBR:200-205).
    fn track_resolver_events(&mut self, now: Instant) {
        let g = &self.gossip;
        let known = |a: &NodeAddr| {
            g.members
                .get(a)
                .is_some_and(|m| m.status != MemberStatus::Removed)
        };
        let subjects: BTreeSet<NodeAddr> = g
            .reachability
            .iter()
            .filter(|((o, s), r)| r.unreachable && known(o) && known(s) && *s != self.me)
            .map(|((_, s), _)| *s)
            .collect();
        let statuses: BTreeMap<NodeAddr, MemberStatus> = g
            .members
            .iter()
            .filter(|(_, m)| m.status != MemberStatus::Removed)
            .map(|(a, m)| (*a, m.status))
            .collect();
        let mut changed = subjects.difference(&self.sbr_subjects).count()
            + self
                .sbr_subjects
                .difference(&subjects)
                .filter(|a| statuses.contains_key(a))
                .count();
        let mut reset = changed > 0;
        for (a, st) in &statuses {
            if self.sbr_statuses.get(a) == Some(st) {
                continue;
            }
            match st {
                MemberStatus::Up | MemberStatus::Exiting => reset = true,
                MemberStatus::Down if *a != self.me => {
                    changed += 1;
                    reset = true;
                }
                _ => {}
            }
        }
        if changed > 0 {
            if self.changes.count == 0 {
                self.changes.first = now;
            }
            self.changes.latest = now;
            self.changes.count += changed as u64;
        }
        if reset {
            self.stable_since = now;
        }
        let all_downed = !subjects.iter().any(|a| {
            matches!(
                statuses.get(a),
                Some(MemberStatus::Up | MemberStatus::Leaving)
            )
        });
        if all_downed {
            self.changes.count = 0;
        }
        self.sbr_subjects = subjects;
        self.sbr_statuses = statuses;
    }

    /// Akka's resolver `tick` before its decision (SBR:298-321), on every node: reachability
    /// that has kept changing for `stable-after + down-all-when-unstable` since the first
    /// change downs every member; with `down-all-when-unstable` off, the counts are cleared
    /// after twice `stable-after` without a change. Whether it downed.
    fn down_all_when_unstable(&mut self, now: Instant, out: &mut Vec<MOutput>) -> bool {
        let DowningProvider::SplitBrainResolver {
            stable_after_ms,
            down_all_when_unstable,
            ..
        } = self.cfg.downing
        else {
            return false;
        };
        if self.changes.count == 0 {
            return false;
        }
        let after = down_all_when_unstable.resolve_ms(stable_after_ms);
        if after > 0 && now - self.changes.first > ms(stable_after_ms + after) {
            // `actOnDecision(DownAll)`: every downable member (DS:260-268).
            let downed: Vec<NodeAddr> = self
                .gossip
                .members
                .iter()
                .filter(|(_, m)| downing::downable(m))
                .map(|(a, _)| *a)
                .collect();
            let text = format!(
                "reachability changing for {} ms since the first change, over stable-after \
                 {stable_after_ms} ms + {after} ms: down everyone",
                (now - self.changes.first).0 / 1_000
            );
            self.act_on_decision(now, "down-all-when-unstable", text, downed, out);
            return true;
        }
        if after == 0 && now - self.changes.latest > ms(2 * stable_after_ms) {
            self.changes.count = 0;
        }
        false
    }

    /// Akka's `actOnDecision` (SBR:436-460): down the members (this node last), then restart
    /// `stable-after` and clear the change counts when anyone was downed.
    fn act_on_decision(
        &mut self,
        now: Instant,
        name: &str,
        decision: String,
        downed: Vec<NodeAddr>,
        out: &mut Vec<MOutput>,
    ) {
        let reason = format!("sbr: {name}: {decision}");
        // The SBR downs through `cluster.down`, i.e. ClusterDaemon `downing` for each,
        // this node last (SplitBrainResolverBase `actOnDecision`: "down selfAddress
        // last, since it may shutdown itself if down alone"): its farewell gossip then
        // carries every member it downed. Downing itself first sent a farewell that
        // showed only itself Down; the others it downed (and stopped by their STONITH
        // gossip) stayed Up in the survivors' views, their stale unreachable records
        // made the survivors look indirectly connected, and the survivors downed
        // themselves (swarm-keep-majority seed 178786).
        let (others, this): (Vec<NodeAddr>, Vec<NodeAddr>) =
            downed.iter().partition(|a| **a != self.me);
        for a in others.iter().chain(this.iter()) {
            self.set_status(*a, MemberStatus::Down, Some(reason.clone()));
            self.gossip_after_down(*a, out);
        }
        if !downed.is_empty() {
            self.changes.count = 0;
            self.stable_since = now;
        }
        out.push(MOutput::Observe(MembershipEvent::DowningDecision {
            provider: format!("sbr-{name}"),
            decision,
            downed,
        }));
    }

    fn leader_actions(&mut self, now: Instant, out: &mut Vec<MOutput>) {
        self.downing(now, out);
        if self.stopped
            || self
                .status_of_self()
                .is_none_or(|s| s >= MemberStatus::Down)
        {
            return;
        }
        // Akka: a newer incarnation of a node makes the older one Down. The members are in
        // (node, incarnation) order, so a node's incarnations are adjacent, oldest first: a
        // backward walk knows whether a newer one of the same node is not Removed. (Downing
        // one changes no other member's status, nor whether any is Removed, so downing them
        // in address order afterwards is the same as downing each as it is found.)
        let mut replaced = Vec::new();
        let mut group = None;
        let mut newer_not_removed = false;
        for (a, m) in self.gossip.members.iter().rev() {
            if group != Some(a.node) {
                group = Some(a.node);
                newer_not_removed = false;
            }
            if newer_not_removed && m.status < MemberStatus::Down {
                replaced.push(*a);
            }
            if m.status != MemberStatus::Removed {
                newer_not_removed = true;
            }
        }
        for a in replaced.into_iter().rev() {
            self.set_status(
                a,
                MemberStatus::Down,
                Some("downed: replaced by a new incarnation".into()),
            );
        }
        // Akka: leader actions (Joining→Up, Leaving→Exiting, Exiting/Down→Removed) only
        // under convergence.
        if !self.convergence() {
            return;
        }
        let margin = self.removal_margin();
        let mut next_up = self
            .gossip
            .members
            .values()
            .map(|m| m.up_number)
            .max()
            .unwrap_or(0);
        let mut changes: Vec<(NodeAddr, MemberStatus)> = Vec::new();
        let enough_members = self.is_min_nr_of_members_fulfilled();
        for (a, m) in &self.gossip.members {
            let to = match m.status {
                // `isJoiningToUp`: Joining → Up only once `min-nr-of-members` are there
                // (ClusterDaemon `leaderActionsOnConvergence`, §9.2).
                MemberStatus::Joining if enough_members => MemberStatus::Up,
                MemberStatus::Leaving => MemberStatus::Exiting,
                // `removedExitingConfirmed` and `removedUnreachable` (ClusterDaemon
                // `leaderActionsOnConvergence`): an Exiting member goes once it confirmed
                // its exiting tasks, or once it is unreachable.
                MemberStatus::Exiting
                    if self.exiting_confirmed.contains(a)
                        || self.gossip.unreachable().contains(a) =>
                {
                    MemberStatus::Removed
                }
                MemberStatus::Exiting => continue,
                MemberStatus::Down => {
                    // Akka `down-removal-margin`: the surviving side waits before removal.
                    let since = self.down_seen_at.get(a).copied().unwrap_or(now);
                    if now - since >= margin {
                        MemberStatus::Removed
                    } else {
                        continue;
                    }
                }
                _ => continue,
            };
            changes.push((*a, to));
        }
        let exiting: Vec<NodeAddr> = changes
            .iter()
            .filter(|(_, to)| *to == MemberStatus::Exiting)
            .map(|(a, _)| *a)
            .collect();
        for (a, to) in changes {
            if to == MemberStatus::Up {
                // Akka: upNumber = highest assigned so far + 1 (oldest is lowest).
                next_up = next_up.saturating_add(1);
                if let Some(m) = Arc::make_mut(&mut self.gossip).members.get_mut(&a) {
                    m.up_number = next_up;
                }
            }
            self.set_status(a, to, None);
        }
        // ClusterDaemon `leaderActionsOnConvergence`:
        // `gossipToOldest(changedMembers.filter(_.status == Exiting))`.
        self.gossip_to_oldest(&exiting, out);
    }

    /// Akka `isMinNrOfMembersFulfilled` (ClusterDaemon.scala): the members of the gossip
    /// (Removed ones are gone from Akka's; every other status counts, Joining included), or only
    /// those with the sharding role, number at least `min-nr-of-members`.
    fn is_min_nr_of_members_fulfilled(&self) -> bool {
        let gate = self.cfg.min_nr_of_members;
        if gate.count <= 1 {
            return true;
        }
        let n = self
            .gossip
            .members
            .values()
            .filter(|m| m.status != MemberStatus::Removed && (m.hosting || !gate.of_role))
            .count();
        n >= gate.count
    }

    fn downing(&mut self, now: Instant, out: &mut Vec<MOutput>) {
        match self.cfg.downing.clone() {
            DowningProvider::None => {}
            DowningProvider::AutoDown { after_ms } => {
                let after = ms(after_ms);
                let downed: Vec<NodeAddr> = self
                    .unreachable_since
                    .iter()
                    .filter(|(_, since)| now - **since >= after)
                    .map(|(a, _)| *a)
                    .collect();
                if !downed.is_empty() {
                    for a in &downed {
                        self.set_status(*a, MemberStatus::Down, Some("downed: auto-down".into()));
                        self.gossip_after_down(*a, out);
                    }
                    out.push(MOutput::Observe(MembershipEvent::DowningDecision {
                        provider: "auto-down".into(),
                        decision: format!("down unreachable after {after_ms} ms"),
                        downed,
                    }));
                }
            }
            DowningProvider::SplitBrainResolver {
                strategy,
                stable_after_ms,
                ..
            } => {
                if now - self.stable_since < ms(stable_after_ms) {
                    return;
                }
                // The decision itself is pure (downing.rs): from this view, on the unreachable
                // set whose stability was just waited for.
                let d = decide(
                    &strategy,
                    &DowningFacts {
                        gossip: &self.gossip,
                        unreachable: &self.unreachable_live,
                    },
                    self.me,
                );
                if d.outcome == Outcome::Nothing {
                    return;
                }
                let Decision {
                    strategy: name,
                    text: decision,
                    downed,
                    ..
                } = d;
                self.act_on_decision(now, name, decision, downed, out);
            }
        }
    }

    /// After every input: shutdown check, change notifications and failure-detector
    /// bookkeeping. A change is gossiped on the next gossip tick (ClusterDaemon
    /// `updateLatestGossip` does not send), or by the immediate gossips Akka has for leaving,
    /// downing and exiting.
    fn post(&mut self, now: Instant, out: &mut Vec<MOutput>) {
        if self.stopped || !self.joined {
            return;
        }
        if self.post_rev != Some(self.rev) {
            self.post_rev = Some(self.rev);
            self.post_content_changed(now, out);
        }
        // A node that sees itself Down, Removed or Exiting stops (Akka: MemberDowned /
        // MemberRemoved(self) → shutdown; Exiting → coordinated shutdown "left").
        let me = self.gossip.members.get(&self.me);
        let reason = match me.map(|m| (m.status, &m.down_reason)) {
            Some((MemberStatus::Down, r)) => Some(r.clone().unwrap_or_else(|| "downed".into())),
            Some((MemberStatus::Exiting, _)) => {
                // Coordinated shutdown's `cluster-exiting` phase runs first; the node stops
                // on `ExitingCompleted`.
                if !self.exiting_announced {
                    self.exiting_announced = true;
                    out.push(MOutput::SelfExiting);
                }
                None
            }
            // Removed without a down reason only happens via Leaving → Exiting → Removed.
            Some((MemberStatus::Removed, r)) => Some(r.clone().unwrap_or_else(|| "left".into())),
            _ => None,
        };
        if let Some(reason) = reason {
            self.stop(out, reason);
        }
    }

    /// This node stops: no more gossip or heartbeats, and every later input is ignored.
    fn stop(&mut self, out: &mut Vec<MOutput>, reason: String) {
        self.stopped = true;
        out.push(MOutput::CancelTimer(MTimer::GossipTick));
        out.push(MOutput::CancelTimer(MTimer::HeartbeatTick));
        out.push(MOutput::Shutdown { reason });
    }

    /// What follows from the content: status events, the member list, failure-detector
    /// monitoring, reachability bookkeeping and the leader. A pure function of the content
    /// (and of `now` for first sightings), so `post` skips it while the content is unchanged.
    fn post_content_changed(&mut self, now: Instant, out: &mut Vec<MOutput>) {
        // Newly Down members start their removal margin now.
        for (a, m) in &self.gossip.members {
            if m.status == MemberStatus::Down {
                self.down_seen_at.entry(*a).or_insert(now);
            }
        }
        // Status changes and MembersChanged.
        for (a, m) in &self.gossip.members {
            if self.last_status.get(a) != Some(&m.status) {
                self.last_status.insert(*a, m.status);
                out.push(MOutput::Observe(MembershipEvent::StatusChanged {
                    node: *a,
                    status: m.status,
                }));
            }
        }
        let members = self.members();
        if members != self.last_members {
            self.last_members = members.clone();
            out.push(MOutput::MembersChanged(members));
        }
        self.update_receivers(now);
        self.track_unreachable(now);
        let leader = self.leader();
        if leader != self.last_leader {
            self.last_leader = leader;
            out.push(MOutput::Observe(MembershipEvent::LeaderChanged { leader }));
        }
    }
}
