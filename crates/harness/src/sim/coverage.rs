//! Behaviour coverage: what a schedule exercised, as a fixed-size bitmap of
//! hashed features, collected by the world when asked ([`super::World::with_coverage`])
//! without changing the schedule: the collector only reads what the world delivers, sends and
//! traces, and draws nothing.
//!
//! The features:
//!
//! - **region transitions**: (message kind arriving at a region, the region's abstract phase for
//!   the message's shard before, after). The phases follow the hand-off of §5 as the region sees
//!   it: unknown, home known, hosting (`HostShard`), hand-off begun (`BeginHandOff`, buffering,
//!   SR:936-962), handing off (`HandOff` at the owner), stopped (its `ShardStopped` sent).
//! - **user messages per hand-off phase**: a `User` message arriving at a region, forwarded by
//!   another region or from a local sender, by the phase of its shard there (the §11.3 reorder
//!   lives in "a forwarded message reaches the owner while it hands off or after").
//! - **Shard transitions**: (message kind arriving at a Shard or from it, the Shard's phase before,
//!   after): initialising, active (`ShardInitialized`), handing off (`HandOff` forwarded, §5.3 and
//!   the HandOffStopper), terminated.
//! - **coordinator operations in flight for one shard**: the set of allocation
//!   (`GetShardHome` until `ShardHome`), hosting (`HostShard` until `ShardStarted`), rebalance
//!   (`BeginHandOff` until `HandOff`) and hand-off (`HandOff` until `ShardStopped`) in progress
//!   for the shard at the coordinator (SC:957-961, §5), before and after each of its messages.
//! - **happens-before pairs across nodes**: (kind of the last message a node received from
//!   another node, kind of the next message it sends to another node), Mallory-style.
//! - **trace transitions**: (kind of the previous checked trace event, kind of this one).
//!
//! A feature is hashed to one of [`BITS`] bits. Off unless asked: the world then pays one branch
//! per message.

use crate::trace::TraceEvent;
use shardsim_core::ids::{NodeId, ShardId};
use shardsim_core::protocol::{Addr, Local, Msg, Role, ShardMsg};

/// Bits in a schedule's bitmap (64 Ki).
pub const BITS: usize = 1 << 16;
const WORDS: usize = BITS / 64;

/// The features one schedule (or a campaign, as their union) reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bitmap(Box<[u64]>);

impl Default for Bitmap {
    fn default() -> Self {
        Bitmap(vec![0u64; WORDS].into_boxed_slice())
    }
}

impl Bitmap {
    /// An empty bitmap.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set the bit of feature hash `h`.
    #[inline]
    pub fn hit(&mut self, h: u64) {
        let i = (h >> 48) as usize;
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Features set.
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// How many of `other`'s features this one lacks.
    pub fn new_in(&self, other: &Bitmap) -> u32 {
        self.0
            .iter()
            .zip(other.0.iter())
            .map(|(a, b)| (b & !a).count_ones())
            .sum()
    }

    /// Add `other`'s features; returns how many were new.
    pub fn merge(&mut self, other: &Bitmap) -> u32 {
        let mut n = 0;
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            n += (b & !*a).count_ones();
            *a |= b;
        }
        n
    }
}

/// SplitMix64's finaliser: the feature hash.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[inline]
fn feature(parts: &[u64]) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    for p in parts {
        h = mix(h ^ p.wrapping_mul(0x0100_0000_01b3));
    }
    h
}

/// A stable small hash of a name (FNV-1a).
#[inline]
fn name_hash(s: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in s.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const T_REGION: u64 = 1;
const T_USER: u64 = 2;
const T_SHARD: u64 = 3;
const T_COORD: u64 = 4;
const T_HB: u64 = 5;
const T_EVENT: u64 = 6;

// Region phases of a shard (0: unknown).
const R_HOME: u8 = 1;
const R_HOSTING: u8 = 2;
const R_BEGUN: u8 = 3;
const R_HANDING_OFF: u8 = 4;
const R_STOPPED: u8 = 5;

// Shard phases.
const S_NONE: u8 = 0;
const S_INIT: u8 = 1;
const S_ACTIVE: u8 = 2;
const S_HANDING_OFF: u8 = 3;

// Coordinator operations in flight for a shard (bits).
const C_ALLOC: u8 = 1;
const C_HOST: u8 = 2;
const C_REBALANCE: u8 = 4;
const C_HANDOFF: u8 = 8;

/// The collector of one schedule.
#[derive(Clone, Debug)]
pub struct Collector {
    map: Bitmap,
    nodes: usize,
    shards: usize,
    /// Per (node, shard): the region's phase.
    region: Vec<u8>,
    /// Per (node, shard): the Shard's phase.
    shard: Vec<u8>,
    /// Per (coordinator node, shard): operations in flight.
    coord: Vec<u8>,
    /// Per node: the kind of the last message it received from another node.
    last_in: Vec<u64>,
    /// The kind of the previous checked trace event.
    last_event: u64,
}

impl Collector {
    /// A collector for `nodes` nodes and `shards` shards.
    pub fn new(nodes: u32, shards: u32) -> Self {
        let (n, s) = (nodes as usize, shards.clamp(1, 4096) as usize);
        Collector {
            map: Bitmap::new(),
            nodes: n,
            shards: s,
            region: vec![0; n * s],
            shard: vec![0; n * s],
            coord: vec![0; n * s],
            last_in: vec![0; n],
            last_event: 0,
        }
    }

    /// The features reached.
    pub fn into_bitmap(self) -> Bitmap {
        self.map
    }

    #[inline]
    fn slot(&self, node: NodeId, shard: ShardId) -> Option<usize> {
        let (n, s) = (node.0 as usize, shard.0 as usize);
        (n < self.nodes).then_some(n * self.shards + s % self.shards)
    }

    /// A protocol message leaves `from` for `to`.
    pub fn sent(&mut self, from: Addr, to: Addr, msg: &Msg) {
        let kind = name_hash(msg.name());
        if from.node != to.node {
            let n = from.node.0 as usize;
            if n < self.nodes {
                self.map.hit(feature(&[T_HB, self.last_in[n], kind]));
            }
        }
        if from.role == Role::Coordinator {
            if let Some(sh) = msg.shard() {
                self.coordinator(from.node, sh, kind, 0, |ops| match msg {
                    Msg::ShardHome { .. } => ops & !C_ALLOC,
                    Msg::HostShard { .. } => ops | C_HOST,
                    Msg::BeginHandOff { .. } => ops | C_REBALANCE,
                    Msg::HandOff { .. } => (ops & !C_REBALANCE) | C_HANDOFF,
                    _ => ops,
                });
            }
        }
        if from.role == Role::Region {
            // The owner's `ShardStopped`: its hand-off of the shard is done.
            if let Msg::ShardStopped { shard } = msg {
                if let Some(i) = self.slot(from.node, *shard) {
                    let before = self.region[i];
                    self.region[i] = R_STOPPED;
                    let f = feature(&[T_REGION, kind, 1, u64::from(before), u64::from(R_STOPPED)]);
                    self.map.hit(f);
                }
            }
        }
    }

    fn coordinator(
        &mut self,
        node: NodeId,
        sh: ShardId,
        kind: u64,
        dir: u64,
        f: impl Fn(u8) -> u8,
    ) {
        if let Some(i) = self.slot(node, sh) {
            let before = self.coord[i];
            let after = f(before);
            self.coord[i] = after;
            self.map.hit(feature(&[
                T_COORD,
                kind,
                dir,
                u64::from(before),
                u64::from(after),
            ]));
        }
    }

    /// A protocol message from `from` reaches `to`; `user_shard` is the shard of a user
    /// message there.
    pub fn delivered(&mut self, from: Addr, to: Addr, msg: &Msg, user_shard: Option<ShardId>) {
        let kind = name_hash(msg.name());
        let n = to.node.0 as usize;
        if from.node != to.node && n < self.nodes {
            self.last_in[n] = kind;
        }
        match to.role {
            Role::Coordinator => {
                if let Some(sh) = msg.shard() {
                    self.coordinator(to.node, sh, kind, 1, |ops| match msg {
                        Msg::GetShardHome { .. } => ops | C_ALLOC,
                        Msg::ShardStarted { .. } => ops & !C_HOST,
                        Msg::ShardStopped { .. } => ops & !C_HANDOFF,
                        _ => ops,
                    });
                }
            }
            Role::Region => {
                if let Msg::User(_) = msg {
                    if let Some(i) = user_shard.and_then(|s| self.slot(to.node, s)) {
                        let forwarded = u64::from(from.node != to.node);
                        self.map
                            .hit(feature(&[T_USER, forwarded, u64::from(self.region[i])]));
                    }
                    return;
                }
                let Some(i) = msg.shard().and_then(|s| self.slot(to.node, s)) else {
                    self.map.hit(feature(&[T_REGION, kind, 0]));
                    return;
                };
                let before = self.region[i];
                let after = match msg {
                    Msg::HostShard { .. } => R_HOSTING,
                    Msg::ShardHome { region, .. } => {
                        if region.node == to.node {
                            R_HOSTING
                        } else {
                            R_HOME
                        }
                    }
                    Msg::BeginHandOff { .. } => R_BEGUN,
                    Msg::HandOff { .. } => R_HANDING_OFF,
                    _ => before,
                };
                self.region[i] = after;
                self.map.hit(feature(&[
                    T_REGION,
                    kind,
                    0,
                    u64::from(before),
                    u64::from(after),
                ]));
            }
            Role::SingletonManager => {
                self.map.hit(feature(&[T_REGION, kind, 2]));
            }
        }
    }

    /// A message between the actors of `node` is handled.
    pub fn local(&mut self, node: NodeId, msg: &Local) {
        let (kind, shard): (u64, ShardId) = match msg {
            Local::ToShard { shard, msg, .. } => (
                match msg {
                    ShardMsg::InitDone => 10,
                    ShardMsg::User(_) => 11,
                    ShardMsg::HandOff { .. } => 12,
                    ShardMsg::StartEntity { .. } => 13,
                    ShardMsg::EntityMoved { .. } => 14,
                    _ => 15,
                },
                *shard,
            ),
            Local::ShardInitialized { shard, .. } => (1, *shard),
            Local::ShardTerminated { shard, .. } => (2, *shard),
            Local::ToEntity { shard, .. } => (3, *shard),
            Local::StopEntity { shard, .. } => (4, *shard),
            Local::Passivate { shard, .. } => (5, *shard),
            Local::StartRemembered { shard, .. } => (6, *shard),
            Local::EntityTerminated { shard, .. } => (7, *shard),
        };
        let Some(i) = self.slot(node, shard) else {
            return;
        };
        let before = self.shard[i];
        let after = match kind {
            1 => S_ACTIVE,
            2 => S_NONE,
            12 => S_HANDING_OFF,
            _ if before == S_NONE => S_INIT,
            _ => before,
        };
        self.shard[i] = after;
        let region = u64::from(self.region[i]);
        self.map.hit(feature(&[
            T_SHARD,
            kind,
            u64::from(before),
            u64::from(after),
            region,
        ]));
    }

    /// A trace event reaches the checker.
    pub fn event(&mut self, ev: &TraceEvent) {
        let k = name_hash(ev.kind());
        self.map.hit(feature(&[T_EVENT, self.last_event, k]));
        self.last_event = k;
    }
}
