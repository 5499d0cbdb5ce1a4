//! The [`Replicator`] of one node incarnation, after Akka's `Replicator.scala`
//! (akka-distributed-data): local replicas of every key, `Get` and `Update` with a read/write
//! consistency, the `ReadAggregator`/`WriteAggregator` that collect replies from the other
//! replicators, read repair, durable keys, and gossip.
//!
//! Sans-IO: [`Replicator::handle`] takes one [`ReplInput`] and pushes [`ReplOutput`]s; the host
//! delivers messages, runs the timers and writes durable keys to node-local disk. Nothing here
//! reads a clock or draws a random number.
//!
//! What is Akka's, and where (file `Replicator.scala` unless said otherwise):
//! - `calculateMajority` ([`calculate_majority`], `ReadWriteAggregator`), and the
//!   `doneWhenRemainingSize = N - required` bookkeeping of both aggregators, N counting self.
//! - An update applies to the local replica first (`receiveUpdate`) and, durable, is stored
//!   before anything answers (the durable store's `StoreReply`; here [`ReplOutput::Durable`],
//!   which the host applies synchronously, Akka's LMDB store with `write-behind-interval = off`).
//! - Read/write targets (`nodesForReadWrite`, `primaryAndSecondaryNodes`): the members oldest
//!   first (`prefer-oldest = on`, as sharding sets it, §9.1), Exiting members excluded (Akka
//!   excludes them for `ReadMajorityPlus`/`WriteMajorityPlus`/`ReadAll`/`WriteAll`), reachable
//!   ones before unreachable ones; the first `required - 1` get the request at once (the
//!   primaries), up to `MaxSecondaryNodes` = 10 more after `timeout / 5` (`SendToSecondary`).
//! - A write succeeds when `remaining <= doneWhenRemainingSize`, else times out: the local
//!   replica and every replica reached keep the value (`UpdateTimeout`, "partially
//!   succeeded"). A read answers when `remaining == doneWhenRemainingSize`, merging the replies
//!   into the local value it started from; the merged value is written back to the local
//!   replica only (`ReadRepair` to the parent; late replies are dropped, no remote repair),
//!   then `GetSuccess`/`NotFound`; `GetFailure` on timeout.
//! - `Read`/`Write` from a node that is not a member are ignored (`isKnownNode`).
//!
//! Simplified:
//! - Consistencies: `Local`, `Majority { additional }` (Akka's `ReadMajorityPlus` /
//!   `WriteMajorityPlus`, which sharding uses since 2.6.5, akka#28856; plain `ReadMajority` is
//!   the same with `additional = 0` except that it also counts Exiting members) and `All`.
//!   Since a majority is capped at the nodes there are (`calculateMajority`), no request fails
//!   early for lack of nodes: with unreachable targets it waits for its timeout, as Akka does
//!   (Akka's early `notEnoughNodes` failure only concerns `ReadFrom`/`WriteTo(n)`).
//! - Gossip is a full-state push of every key to one member per `gossip-interval`, round-robin
//!   in member order, instead of Akka's digest exchange (`Status` then `Gossip`) to a random
//!   node. Gossip from a node that is not a member is ignored (in Akka, Artery quarantines a
//!   removed node, so its gossip does not arrive either).
//! - No delta-CRDT propagation, no pruning of removed replicas, no subscriptions, no `Delete`,
//!   no `WriteNack`/`StoreFailure` (the host's disk does not fail), no expiry.
//! - Request ids on the wire and in timers are the replicator's own (one counter per
//!   incarnation): Akka's aggregators are per-request actors, so a caller's `req` may repeat
//!   without one request counting another's replies.

use super::{Data, DataKind, Key};
use crate::membership::NodeAddr;
use crate::protocol::coordinator::CoordinatorState;
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet};

/// `ReadWriteAggregator.MaxSecondaryNodes`: at most this many secondaries get the request
/// after `timeout / 5`.
const MAX_SECONDARY_NODES: usize = 10;

/// Akka's `ReadWriteAggregator.calculateMajority`, `number_of_nodes` counting this node:
/// `min(N, max(N / 2 + 1 + additional, min_cap))`.
pub fn calculate_majority(min_cap: usize, number_of_nodes: usize, additional: usize) -> usize {
    let majority = number_of_nodes / 2 + 1;
    number_of_nodes.min(majority.saturating_add(additional).max(min_cap))
}

/// The durability rule sharding configures (`distributed-data.durable.keys = ["shard-*"]`,
/// §3.3, §9.1): the remember-entities keys and the coordinator's remember store are durable;
/// the coordinator state register (`<TypeName>CoordinatorState`) is not.
pub fn default_durable(key: &Key) -> bool {
    match key {
        Key::ShardEntities { .. } | Key::AllShards => true,
        Key::CoordinatorState => false,
    }
}

/// Replicator settings; defaults are those of sharding's replicator (§9.1).
#[derive(Clone, Debug)]
pub struct ReplicatorConfig {
    /// Full-state gossip period (`distributed-data.gossip-interval`, 2 s).
    pub gossip_interval: Duration,
    /// Lower bound of a majority (`majority-min-cap`, 5 in sharding's replicator).
    pub majority_min_cap: usize,
    /// Which keys are durable (`durable.keys`).
    pub durable: fn(&Key) -> bool,
}

impl Default for ReplicatorConfig {
    fn default() -> Self {
        ReplicatorConfig {
            gossip_interval: Duration::from_secs(2),
            majority_min_cap: 5,
            durable: default_durable,
        }
    }
}

/// How many replicas a `Get` reads (`ReadLocal`, `ReadMajorityPlus`, `ReadAll`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum ReadConsistency {
    /// This replica only.
    Local,
    /// `calculate_majority(majority_min_cap, N, additional)` replicas, this one included.
    Majority {
        /// Replicas beyond the majority (sharding's `coordinator-state.read-majority-plus`, 5).
        additional: usize,
    },
    /// Every replica (`read-majority-plus = all`).
    All,
}

/// How many replicas an `Update` must reach (`WriteLocal`, `WriteMajorityPlus`, `WriteAll`).
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum WriteConsistency {
    /// This replica only.
    Local,
    /// `calculate_majority(majority_min_cap, N, additional)` replicas, this one included.
    Majority {
        /// Replicas beyond the majority (sharding's `coordinator-state.write-majority-plus`, 3).
        additional: usize,
    },
    /// Every replica (`write-majority-plus = all`).
    All,
}

/// The modification an `Update` applies to the local value (Akka's `modify` function), the
/// key's empty value standing in when there is none yet.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum UpdateOp {
    /// Add ids to an [`OrSet`](super::OrSet).
    OrSetAdd(Vec<u32>),
    /// Remove ids from an [`OrSet`](super::OrSet).
    OrSetRemove(Vec<u32>),
    /// Add, then remove, in one update (the remember-entities store's batch of started and
    /// stopped entities of one key, §6.4).
    OrSetUpdate {
        /// Ids added.
        add: Vec<u32>,
        /// Ids removed, after the adds.
        remove: Vec<u32>,
    },
    /// Add ids to a [`GSet`](super::GSet).
    GSetAdd(Vec<u32>),
    /// `reg.withValueOf(state)` on an [`LwwRegister`](super::LwwRegister) (the ddata
    /// coordinator's update, §3.3): the writer is this replica, the clock the simulated time.
    LwwAssign {
        /// The new coordinator state.
        value: Box<CoordinatorState>,
        /// The simulated time of the update (µs).
        now_us: u64,
    },
}

impl UpdateOp {
    fn kind(&self) -> DataKind {
        match self {
            UpdateOp::OrSetAdd(_) | UpdateOp::OrSetRemove(_) | UpdateOp::OrSetUpdate { .. } => {
                DataKind::OrSet
            }
            UpdateOp::GSetAdd(_) => DataKind::GSet,
            UpdateOp::LwwAssign { .. } => DataKind::Lww,
        }
    }

    /// Apply to `data` (of the op's kind) as replica `me`.
    fn apply(&self, me: NodeAddr, data: &mut Data) {
        match (self, data) {
            (UpdateOp::OrSetAdd(add), Data::OrSet(s)) => add.iter().for_each(|&x| s.add(me, x)),
            (UpdateOp::OrSetRemove(rm), Data::OrSet(s)) => rm.iter().for_each(|&x| s.remove(x)),
            (UpdateOp::OrSetUpdate { add, remove }, Data::OrSet(s)) => {
                add.iter().for_each(|&x| s.add(me, x));
                remove.iter().for_each(|&x| s.remove(x));
            }
            (UpdateOp::GSetAdd(add), Data::GSet(s)) => add.iter().for_each(|&x| s.add(x)),
            (UpdateOp::LwwAssign { value, now_us }, Data::Lww(r)) => {
                **r = r.with_value(me, (**value).clone(), *now_us);
            }
            // Kinds are checked before; a mismatch changes nothing.
            _ => {}
        }
    }
}

/// The messages between replicators. Owned payloads: full states travel by value.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum ReplMsg {
    /// Ask for the receiver's value of `key` (`Read`).
    Read {
        /// The sender's request id, echoed in the reply.
        req: u64,
        /// The key whose value the sender asks for.
        key: Key,
    },
    /// Reply to `Read`: the value, `None` if the receiver has none (`ReadResult`).
    ReadResult {
        /// The request id of the `Read`.
        req: u64,
        /// The receiver's value.
        data: Option<Data>,
    },
    /// Merge this full state of `key` into your replica and ack (`Write`).
    Write {
        /// The sender's request id, echoed in the ack.
        req: u64,
        /// The key the receiver merges `data` into.
        key: Key,
        /// The writer's value after its update.
        data: Data,
    },
    /// The `Write` is merged (and stored, if durable) (`WriteAck`).
    WriteAck {
        /// The request id of the `Write`.
        req: u64,
    },
    /// Full-state push of every key the sender has.
    Gossip {
        /// Every (key, value) of the sender, in key order.
        entries: Vec<(Key, Data)>,
    },
}

/// The replicator's timers. Re-setting a timer replaces it.
#[derive(Clone, Copy, Debug, Eq, Hash, Ord, PartialEq, PartialOrd)]
pub enum ReplTimer {
    /// The timeout of a request (the replicator's own id of it).
    Request(u64),
    /// Send a request to its secondary nodes (`SendToSecondary`, after `timeout / 5`).
    SendToSecondary(u64),
    /// Gossip to the next member.
    Gossip,
}

/// The answer to a `Get`.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum GetResult {
    /// The value (the local one, or merged from enough replicas) (`GetSuccess`).
    Success(Data),
    /// No replica read has a value (`NotFound`).
    NotFound,
    /// Not enough replicas replied within the timeout (`GetFailure`).
    Failure,
}

/// The answer to an `Update`.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum UpdateResult {
    /// Enough replicas have the value (`UpdateSuccess`).
    Success,
    /// Not enough replicas acked within the timeout (`UpdateTimeout`). The update may still
    /// have partially succeeded: the local replica has it, and so may some others, from which
    /// gossip spreads it.
    Timeout,
    /// The op does not fit the key's data kind; nothing changed (`ModifyFailure`).
    ModifyFailure,
}

/// Everything the replicator can be told.
#[derive(Clone, Debug)]
pub enum ReplInput {
    /// Read `key` (`Replicator.Get`).
    Get {
        /// The caller's id, echoed in the response.
        req: u64,
        /// The key to read, e.g. one part of a shard's remembered entities.
        key: Key,
        /// How many replicas to read.
        consistency: ReadConsistency,
        /// Give up (`GetFailure`) after this long.
        timeout: Duration,
    },
    /// Modify `key` (`Replicator.Update`).
    Update {
        /// The caller's id, echoed in the response.
        req: u64,
        /// The key `op` modifies; its data kind must fit the op (else `ModifyFailure`).
        key: Key,
        /// How many replicas must have the result.
        consistency: WriteConsistency,
        /// Answer `UpdateResult::Timeout` after this long.
        timeout: Duration,
        /// The modification.
        op: UpdateOp,
    },
    /// The other replica nodes, oldest first (Up, Leaving and Exiting members with the
    /// sharding role; this node is skipped if present). Requests in flight keep the nodes they
    /// started with. `Read`/`Write`/`Gossip` from a node not in this list are ignored (Akka's
    /// `isKnownNode` also accepts Joining and WeaklyUp members).
    Members(Vec<NodeAddr>),
    /// The members that are Exiting (replaces the previous set): not asked by reads and
    /// writes (`nodesForReadWrite(excludeExiting = true)`), still gossiped to.
    Exiting(Vec<NodeAddr>),
    /// The members this node's failure detector sees as unreachable (replaces the previous
    /// set): asked after the reachable ones.
    Unreachable(Vec<NodeAddr>),
    /// A message from another replicator.
    Msg {
        /// The sender.
        from: NodeAddr,
        /// The message.
        msg: ReplMsg,
    },
    /// A timer fired.
    Timeout(ReplTimer),
}

/// Everything the replicator asks its host to do.
#[derive(Clone, Debug, Eq, PartialEq)]
pub enum ReplOutput {
    /// Send a message to another replicator.
    Send {
        /// The recipient.
        to: NodeAddr,
        /// The message.
        msg: ReplMsg,
    },
    /// Set (or replace) a timer.
    SetTimer {
        /// The replicator timer to start: a request's timeout, its send to secondaries, or gossip.
        timer: ReplTimer,
        /// Delay from now.
        after: Duration,
    },
    /// Cancel a timer.
    CancelTimer(ReplTimer),
    /// The answer to a `Get`.
    GetResponse {
        /// The caller's id.
        req: u64,
        /// The key the `Get` read.
        key: Key,
        /// The answer.
        result: GetResult,
    },
    /// The answer to an `Update`.
    UpdateResponse {
        /// The caller's id.
        req: u64,
        /// The key the `Update` modified.
        key: Key,
        /// The answer.
        result: UpdateResult,
    },
    /// Write the new value of a durable key to node-local disk, now (before the outputs that
    /// follow, which may depend on it). The map of these is what a restarted incarnation gets
    /// in [`Replicator::new`].
    Durable {
        /// The durable key: a `shard-*` key (remembered entities or the coordinator's shard set).
        key: Key,
        /// Its whole new value.
        data: Data,
    },
}

/// What an aggregator is collecting.
#[derive(Clone, Debug)]
enum Collect {
    /// A `ReadAggregator`: the local value at the start, merged with every reply so far.
    Read { result: Option<Data> },
    /// A `WriteAggregator`: the value written (sent again to the secondaries).
    Write { data: Data },
}

/// One request in flight (Akka's per-request aggregator actor).
#[derive(Clone, Debug)]
struct Pending {
    /// The caller's id.
    req: u64,
    key: Key,
    /// Nodes that have not replied yet (all targets, not only the primaries).
    remaining: BTreeSet<NodeAddr>,
    /// Done when `remaining` has shrunk to this (`doneWhenRemainingSize`).
    done_when: usize,
    /// Asked when `SendToSecondary` fires; emptied then.
    secondary: Vec<NodeAddr>,
    what: Collect,
}

/// The replicator of one node incarnation.
#[derive(Clone, Debug)]
pub struct Replicator {
    me: NodeAddr,
    cfg: ReplicatorConfig,
    /// The local replica of every key.
    data: BTreeMap<Key, Data>,
    /// The other replica nodes, oldest first.
    members: Vec<NodeAddr>,
    exiting: BTreeSet<NodeAddr>,
    unreachable: BTreeSet<NodeAddr>,
    /// Requests in flight, by the replicator's own id.
    pending: BTreeMap<u64, Pending>,
    /// The last id given to a request.
    last_id: u64,
    /// Whether the gossip timer runs (armed by the first input).
    gossiping: bool,
    /// Gossip goes to `members[cursor % len]` next.
    gossip_cursor: usize,
}

impl Replicator {
    /// The replicator of a new incarnation `me`, with the durable keys read back from this
    /// node's disk (what the `Durable` outputs of earlier incarnations wrote; Akka loads the
    /// durable store before handling anything, `Replicator.load`). Values whose kind does not
    /// fit their key are dropped.
    pub fn new(me: NodeAddr, cfg: ReplicatorConfig, durable: BTreeMap<Key, Data>) -> Self {
        let data = durable
            .into_iter()
            .filter(|(k, d)| k.kind() == d.kind())
            .collect();
        Replicator {
            me,
            cfg,
            data,
            members: Vec::new(),
            exiting: BTreeSet::new(),
            unreachable: BTreeSet::new(),
            pending: BTreeMap::new(),
            last_id: 0,
            gossiping: false,
            gossip_cursor: 0,
        }
    }

    /// This replicator's node incarnation.
    pub fn me(&self) -> NodeAddr {
        self.me
    }

    /// The local value of `key`.
    pub fn local(&self, key: &Key) -> Option<&Data> {
        self.data.get(key)
    }

    /// Every local (key, value), in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&Key, &Data)> + '_ {
        self.data.iter()
    }

    /// The other replica nodes, oldest first.
    pub fn members(&self) -> &[NodeAddr] {
        &self.members
    }

    /// Number of `Get`/`Update` requests waiting for replies.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Handle one input. Never panics: replies and timers for requests that are done or
    /// unknown, messages from unknown nodes and values of the wrong kind are ignored.
    pub fn handle(&mut self, now: Instant, input: ReplInput, out: &mut Vec<ReplOutput>) {
        // Time only matters through the timers the host runs.
        let _ = now;
        if !self.gossiping {
            self.gossiping = true;
            out.push(ReplOutput::SetTimer {
                timer: ReplTimer::Gossip,
                after: self.gossip_interval(),
            });
        }
        match input {
            ReplInput::Get {
                req,
                key,
                consistency,
                timeout,
            } => self.get(req, key, consistency, timeout, out),
            ReplInput::Update {
                req,
                key,
                consistency,
                timeout,
                op,
            } => self.update(req, key, consistency, timeout, op, out),
            ReplInput::Members(nodes) => {
                let mut seen = BTreeSet::new();
                self.members = nodes
                    .into_iter()
                    .filter(|n| *n != self.me && seen.insert(*n))
                    .collect();
            }
            ReplInput::Exiting(nodes) => self.exiting = nodes.into_iter().collect(),
            ReplInput::Unreachable(nodes) => self.unreachable = nodes.into_iter().collect(),
            ReplInput::Msg { from, msg } => self.message(from, msg, out),
            ReplInput::Timeout(timer) => self.timeout(timer, out),
        }
    }

    fn gossip_interval(&self) -> Duration {
        Duration(self.cfg.gossip_interval.0.max(1))
    }

    fn is_durable(&self, key: &Key) -> bool {
        (self.cfg.durable)(key)
    }

    /// Set the local value of `key`, storing it first if durable and changed.
    fn set_local(&mut self, key: Key, value: Data, out: &mut Vec<ReplOutput>) {
        if self.data.get(&key) == Some(&value) {
            return;
        }
        if self.is_durable(&key) {
            out.push(ReplOutput::Durable {
                key,
                data: value.clone(),
            });
        }
        self.data.insert(key, value);
    }

    /// Merge `incoming` into the local replica of `key` (`Replicator.write` and the store of
    /// `writeAndStore`). False, and nothing changes, if `incoming` is not of the key's kind.
    fn merge_local(&mut self, key: Key, incoming: &Data, out: &mut Vec<ReplOutput>) -> bool {
        if incoming.kind() != key.kind() {
            return false;
        }
        let merged = match self.data.get(&key) {
            Some(mine) => match mine.merged(incoming) {
                Some(m) => m,
                None => return false,
            },
            None => incoming.clone(),
        };
        self.set_local(key, merged, out);
        true
    }

    /// The nodes a read or write asks (`nodesForReadWrite(excludeExiting = true)` with
    /// `prefer-oldest`, then reachable before unreachable, `primaryAndSecondaryNodes`).
    fn targets(&self) -> Vec<NodeAddr> {
        let eligible = self.members.iter().filter(|n| !self.exiting.contains(n));
        let (reachable, unreachable): (Vec<NodeAddr>, Vec<NodeAddr>) =
            eligible.partition(|n| !self.unreachable.contains(n));
        reachable.into_iter().chain(unreachable).collect()
    }

    /// `doneWhenRemainingSize` for `targets` other nodes: `N - required`, N counting self.
    fn done_when(&self, targets: usize, majority_plus: Option<usize>) -> usize {
        let n = targets + 1;
        let required = match majority_plus {
            Some(additional) => calculate_majority(self.cfg.majority_min_cap, n, additional),
            None => n,
        };
        n - required
    }

    /// Start an aggregator for `key` over the current targets: send its request to the
    /// primaries and arm its timers, or answer at once if no reply is needed (no other nodes,
    /// or a majority of one).
    fn start(
        &mut self,
        req: u64,
        key: Key,
        majority_plus: Option<usize>,
        timeout: Duration,
        what: Collect,
        out: &mut Vec<ReplOutput>,
    ) {
        let targets = self.targets();
        let done_when = self.done_when(targets.len(), majority_plus);
        self.last_id += 1;
        let id = self.last_id;
        // `primaryAndSecondaryNodes`: `required - 1` primaries, up to 10 secondaries.
        let primary_size = targets.len() - done_when;
        let secondary: Vec<NodeAddr> = targets
            .iter()
            .skip(primary_size)
            .take(MAX_SECONDARY_NODES)
            .copied()
            .collect();
        let pending = Pending {
            req,
            key,
            remaining: targets.iter().copied().collect(),
            done_when,
            secondary,
            what,
        };
        for to in &targets[..primary_size] {
            out.push(ReplOutput::Send {
                to: *to,
                msg: request_msg(id, &pending),
            });
        }
        if pending.remaining.len() <= done_when {
            self.finish(pending, true, out);
            return;
        }
        out.push(ReplOutput::SetTimer {
            timer: ReplTimer::Request(id),
            after: timeout,
        });
        if !pending.secondary.is_empty() {
            out.push(ReplOutput::SetTimer {
                timer: ReplTimer::SendToSecondary(id),
                after: Duration(timeout.0 / 5),
            });
        }
        self.pending.insert(id, pending);
    }

    fn get(
        &mut self,
        req: u64,
        key: Key,
        consistency: ReadConsistency,
        timeout: Duration,
        out: &mut Vec<ReplOutput>,
    ) {
        let local = self.data.get(&key).cloned();
        let majority_plus = match consistency {
            ReadConsistency::Local => {
                let result = match local {
                    Some(d) => GetResult::Success(d),
                    None => GetResult::NotFound,
                };
                out.push(ReplOutput::GetResponse { req, key, result });
                return;
            }
            ReadConsistency::Majority { additional } => Some(additional),
            ReadConsistency::All => None,
        };
        let what = Collect::Read { result: local };
        self.start(req, key, majority_plus, timeout, what, out);
    }

    fn update(
        &mut self,
        req: u64,
        key: Key,
        consistency: WriteConsistency,
        timeout: Duration,
        op: UpdateOp,
        out: &mut Vec<ReplOutput>,
    ) {
        if op.kind() != key.kind() {
            out.push(ReplOutput::UpdateResponse {
                req,
                key,
                result: UpdateResult::ModifyFailure,
            });
            return;
        }
        // The local replica first (`receiveUpdate`), stored before anything else happens.
        let mut value = self
            .data
            .get(&key)
            .cloned()
            .unwrap_or_else(|| Data::empty(key.kind()));
        op.apply(self.me, &mut value);
        self.set_local(key, value.clone(), out);
        let majority_plus = match consistency {
            WriteConsistency::Local => {
                out.push(ReplOutput::UpdateResponse {
                    req,
                    key,
                    result: UpdateResult::Success,
                });
                return;
            }
            WriteConsistency::Majority { additional } => Some(additional),
            WriteConsistency::All => None,
        };
        let what = Collect::Write { data: value };
        self.start(req, key, majority_plus, timeout, what, out);
    }

    fn message(&mut self, from: NodeAddr, msg: ReplMsg, out: &mut Vec<ReplOutput>) {
        match msg {
            ReplMsg::Read { req, key } => {
                if self.is_member(from) {
                    let data = self.data.get(&key).cloned();
                    out.push(ReplOutput::Send {
                        to: from,
                        msg: ReplMsg::ReadResult { req, data },
                    });
                }
            }
            ReplMsg::Write { req, key, data } => {
                // Stored (the `Durable` output) before the ack, as Akka's `StoreReply`.
                if self.is_member(from) && self.merge_local(key, &data, out) {
                    out.push(ReplOutput::Send {
                        to: from,
                        msg: ReplMsg::WriteAck { req },
                    });
                }
            }
            ReplMsg::Gossip { entries } => {
                if self.is_member(from) {
                    for (key, data) in &entries {
                        self.merge_local(*key, data, out);
                    }
                }
            }
            ReplMsg::ReadResult { req, data } => self.reply(req, from, data, out),
            ReplMsg::WriteAck { req } => self.reply(req, from, None, out),
        }
    }

    fn is_member(&self, node: NodeAddr) -> bool {
        self.members.contains(&node)
    }

    /// A `ReadResult` (with its value) or `WriteAck` (without) from `from` for request `id`.
    /// Counted once per node asked; anything else is ignored.
    fn reply(&mut self, id: u64, from: NodeAddr, data: Option<Data>, out: &mut Vec<ReplOutput>) {
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        if !p.remaining.remove(&from) {
            return;
        }
        if let Collect::Read { result } = &mut p.what {
            // A value of the wrong kind counts as a reply without a value.
            if let Some(d) = data.filter(|d| d.kind() == p.key.kind()) {
                *result = match result.take() {
                    Some(r) => Some(r.merged(&d).unwrap_or(r)),
                    None => Some(d),
                };
            }
        }
        if p.remaining.len() <= p.done_when {
            if let Some(p) = self.pending.remove(&id) {
                out.push(ReplOutput::CancelTimer(ReplTimer::Request(id)));
                if !p.secondary.is_empty() {
                    out.push(ReplOutput::CancelTimer(ReplTimer::SendToSecondary(id)));
                }
                self.finish(p, true, out);
            }
        }
    }

    fn timeout(&mut self, timer: ReplTimer, out: &mut Vec<ReplOutput>) {
        match timer {
            ReplTimer::Gossip => {
                self.gossip(out);
                out.push(ReplOutput::SetTimer {
                    timer: ReplTimer::Gossip,
                    after: self.gossip_interval(),
                });
            }
            ReplTimer::SendToSecondary(id) => {
                if let Some(p) = self.pending.get_mut(&id) {
                    let msg = request_msg(id, p);
                    for to in std::mem::take(&mut p.secondary) {
                        out.push(ReplOutput::Send {
                            to,
                            msg: msg.clone(),
                        });
                    }
                }
            }
            ReplTimer::Request(id) => {
                if let Some(p) = self.pending.remove(&id) {
                    if !p.secondary.is_empty() {
                        out.push(ReplOutput::CancelTimer(ReplTimer::SendToSecondary(id)));
                    }
                    self.finish(p, false, out);
                }
            }
        }
    }

    /// Answer a request: `ok` when enough replied, else timed out.
    fn finish(&mut self, p: Pending, ok: bool, out: &mut Vec<ReplOutput>) {
        let (req, key) = (p.req, p.key);
        match p.what {
            Collect::Write { .. } => {
                let result = if ok {
                    UpdateResult::Success
                } else {
                    UpdateResult::Timeout
                };
                out.push(ReplOutput::UpdateResponse { req, key, result });
            }
            Collect::Read { result } => {
                let result = match (ok, result) {
                    (false, _) => GetResult::Failure,
                    (true, None) => GetResult::NotFound,
                    (true, Some(d)) => {
                        // Read repair of the local replica before the answer (`ReadRepair`).
                        self.merge_local(key, &d, out);
                        GetResult::Success(d)
                    }
                };
                out.push(ReplOutput::GetResponse { req, key, result });
            }
        }
    }

    /// Push every key to the next member, round-robin (Akka: digests to a random node).
    fn gossip(&mut self, out: &mut Vec<ReplOutput>) {
        if self.members.is_empty() || self.data.is_empty() {
            return;
        }
        let to = self.members[self.gossip_cursor % self.members.len()];
        self.gossip_cursor = self.gossip_cursor.wrapping_add(1);
        let entries = self.data.iter().map(|(k, d)| (*k, d.clone())).collect();
        out.push(ReplOutput::Send {
            to,
            msg: ReplMsg::Gossip { entries },
        });
    }
}

/// The message request `id` sends to the nodes it asks.
fn request_msg(id: u64, p: &Pending) -> ReplMsg {
    match &p.what {
        Collect::Read { .. } => ReplMsg::Read {
            req: id,
            key: p.key,
        },
        Collect::Write { data } => ReplMsg::Write {
            req: id,
            key: p.key,
            data: data.clone(),
        },
    }
}
