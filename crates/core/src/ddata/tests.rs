//! A tiny deterministic network of replicators: one FIFO queue of messages (delivered with no
//! latency, in send order, only when a test says so), timers in a map run in (time, node,
//! timer) order, nodes that can be cut off (their messages are dropped, at send and at
//! delivery), stopped, or restarted with what their `Durable` outputs wrote to their disk.

use super::*;
use crate::ids::{NodeId, NodeInc};
use crate::membership::NodeAddr;
use crate::time::{Duration, Instant};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

fn addr(i: usize, inc: u32) -> NodeAddr {
    NodeAddr {
        node: NodeId(i as u32),
        inc: NodeInc(inc),
    }
}

const KEY: Key = Key::ShardEntities {
    shard: ShardId(1),
    part: 0,
};

const TIMEOUT: Duration = Duration::from_secs(1);

fn majority(additional: usize) -> WriteConsistency {
    WriteConsistency::Majority { additional }
}

fn read_majority(additional: usize) -> ReadConsistency {
    ReadConsistency::Majority { additional }
}

fn cfg(min_cap: usize) -> ReplicatorConfig {
    ReplicatorConfig {
        majority_min_cap: min_cap,
        ..ReplicatorConfig::default()
    }
}

fn ids(d: Option<&Data>) -> Vec<u32> {
    d.map(Data::elements).unwrap_or_default()
}

struct Net {
    now: Instant,
    cfg: ReplicatorConfig,
    reps: Vec<Replicator>,
    queue: VecDeque<(NodeAddr, NodeAddr, ReplMsg)>,
    timers: BTreeMap<(usize, ReplTimer), Instant>,
    cut: BTreeSet<usize>,
    stopped: BTreeSet<usize>,
    disks: Vec<BTreeMap<Key, Data>>,
    gets: BTreeMap<(usize, u64), GetResult>,
    updates: BTreeMap<(usize, u64), UpdateResult>,
    /// Every output, for tests that look at order.
    log: Vec<(usize, ReplOutput)>,
    next_req: u64,
}

impl Net {
    /// `n` replicas, each told the others are its members (oldest = lowest index first).
    fn new(n: usize, cfg: ReplicatorConfig) -> Net {
        let mut net = Net {
            now: Instant::ZERO,
            reps: (0..n)
                .map(|i| Replicator::new(addr(i, 1), cfg.clone(), BTreeMap::new()))
                .collect(),
            cfg,
            queue: VecDeque::new(),
            timers: BTreeMap::new(),
            cut: BTreeSet::new(),
            stopped: BTreeSet::new(),
            disks: vec![BTreeMap::new(); n],
            gets: BTreeMap::new(),
            updates: BTreeMap::new(),
            log: Vec::new(),
            next_req: 0,
        };
        net.all_members();
        net
    }

    /// Tell every running node that the other running nodes are its members.
    fn all_members(&mut self) {
        for i in 0..self.reps.len() {
            self.members_of(i);
        }
    }

    fn members_of(&mut self, i: usize) {
        let others = self
            .running()
            .filter(|&j| j != i)
            .map(|j| self.reps[j].me());
        let others = others.collect();
        self.input(i, ReplInput::Members(others));
    }

    fn running(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.reps.len()).filter(|i| !self.stopped.contains(i))
    }

    fn index(&self, a: NodeAddr) -> Option<usize> {
        let i = a.node.0 as usize;
        (i < self.reps.len() && self.reps[i].me() == a && !self.stopped.contains(&i)).then_some(i)
    }

    fn input(&mut self, i: usize, input: ReplInput) {
        if self.stopped.contains(&i) {
            return;
        }
        let mut out = Vec::new();
        self.reps[i].handle(self.now, input, &mut out);
        for o in out {
            self.log.push((i, o.clone()));
            match o {
                ReplOutput::Send { to, msg } => {
                    if !self.cut.contains(&i) {
                        self.queue.push_back((self.reps[i].me(), to, msg));
                    }
                }
                ReplOutput::SetTimer { timer, after } => {
                    self.timers.insert((i, timer), self.now + after);
                }
                ReplOutput::CancelTimer(timer) => {
                    self.timers.remove(&(i, timer));
                }
                ReplOutput::GetResponse { req, result, .. } => {
                    assert!(self.gets.insert((i, req), result).is_none(), "two answers");
                }
                ReplOutput::UpdateResponse { req, result, .. } => {
                    assert!(
                        self.updates.insert((i, req), result).is_none(),
                        "two answers"
                    );
                }
                ReplOutput::Durable { key, data } => {
                    self.disks[i].insert(key, data);
                }
            }
        }
    }

    /// Deliver every queued message (and what they cause) without moving time.
    fn settle(&mut self) {
        while let Some((from, to, msg)) = self.queue.pop_front() {
            let Some(j) = self.index(to) else { continue };
            let cut = self.index(from).is_some_and(|i| self.cut.contains(&i));
            if cut || self.cut.contains(&j) {
                continue;
            }
            self.input(j, ReplInput::Msg { from, msg });
        }
    }

    /// Move time forward by `d`, firing due timers in (time, node, timer) order.
    fn advance(&mut self, d: Duration) {
        let end = self.now + d;
        loop {
            self.settle();
            let next = self
                .timers
                .iter()
                .filter(|(_, &at)| at <= end)
                .min_by_key(|((i, t), &at)| (at, *i, *t))
                .map(|(&k, &at)| (k, at));
            let Some(((i, timer), at)) = next else { break };
            self.timers.remove(&(i, timer));
            self.now = at;
            self.input(i, ReplInput::Timeout(timer));
        }
        self.now = end;
    }

    fn update(&mut self, i: usize, c: WriteConsistency, op: UpdateOp) -> u64 {
        self.update_key(i, KEY, c, op)
    }

    fn update_key(&mut self, i: usize, key: Key, c: WriteConsistency, op: UpdateOp) -> u64 {
        self.next_req += 1;
        let req = self.next_req;
        self.input(
            i,
            ReplInput::Update {
                req,
                key,
                consistency: c,
                timeout: TIMEOUT,
                op,
            },
        );
        req
    }

    fn get(&mut self, i: usize, c: ReadConsistency) -> u64 {
        self.get_key(i, KEY, c)
    }

    fn get_key(&mut self, i: usize, key: Key, c: ReadConsistency) -> u64 {
        self.next_req += 1;
        let req = self.next_req;
        self.input(
            i,
            ReplInput::Get {
                req,
                key,
                consistency: c,
                timeout: TIMEOUT,
            },
        );
        req
    }

    fn updated(&self, i: usize, req: u64) -> Option<UpdateResult> {
        self.updates.get(&(i, req)).copied()
    }

    fn got(&self, i: usize, req: u64) -> Option<GetResult> {
        self.gets.get(&(i, req)).cloned()
    }

    fn local_ids(&self, i: usize) -> Vec<u32> {
        ids(self.reps[i].local(&KEY))
    }

    /// Node `i` stops (leaves); the others drop it from their members.
    fn stop(&mut self, i: usize) {
        self.stopped.insert(i);
        self.timers.retain(|(j, _), _| *j != i);
        self.all_members();
    }

    /// Node `i` restarts as incarnation `inc` with what is on its disk.
    fn restart(&mut self, i: usize, inc: u32) {
        let disk = self.disks[i].clone();
        self.reps[i] = Replicator::new(addr(i, inc), self.cfg.clone(), disk);
        self.stopped.remove(&i);
        self.timers.retain(|(j, _), _| *j != i);
        self.all_members();
    }
}

fn got_ids(r: Option<GetResult>) -> Vec<u32> {
    match r {
        Some(GetResult::Success(d)) => d.elements(),
        other => panic!("expected GetSuccess, got {other:?}"),
    }
}

#[test]
fn calculate_majority_matches_akka() {
    // WriteAggregatorSpec "calculate majority with minCap".
    let min_cap = [
        (3, 3),
        (4, 4),
        (5, 5),
        (6, 5),
        (7, 5),
        (8, 5),
        (9, 5),
        (10, 6),
    ];
    for (n, w) in min_cap.into_iter().chain([(11, 6), (12, 7)]) {
        assert_eq!(calculate_majority(5, n, 0), w, "minCap 5, N {n}");
    }
    // "calculate majority with additional".
    let additional = [
        (3, 1, 3),
        (3, 2, 3),
        (4, 1, 4),
        (5, 1, 4),
        (5, 2, 5),
        (6, 1, 5),
        (7, 1, 5),
        (8, 1, 6),
        (8, 2, 7),
        (9, 1, 6),
        (10, 1, 7),
        (11, 1, 7),
        (11, 3, 9),
    ];
    for (n, add, w) in additional {
        assert_eq!(calculate_majority(0, n, add), w, "N {n}, additional {add}");
    }
    // "calculate majority with additional and minCap".
    assert_eq!(calculate_majority(5, 9, 1), 6);
    assert_eq!(calculate_majority(7, 9, 1), 7);
    assert_eq!(calculate_majority(10, 9, 1), 9);
    // Sharding's defaults (min-cap 5, write +3, read +5), worked from the formula
    // min(N, max(N / 2 + 1 + additional, minCap)).
    assert_eq!(calculate_majority(5, 7, 3), 7);
    assert_eq!(calculate_majority(5, 7, 5), 7);
    assert_eq!(calculate_majority(5, 20, 3), 14);
    assert_eq!(calculate_majority(5, 20, 5), 16);
    assert_eq!(calculate_majority(5, 99, 0), 50);
    assert_eq!(calculate_majority(5, 1, 5), 1);
    assert_eq!(calculate_majority(5, 0, 0), 0);
    assert_eq!(calculate_majority(5, 4, usize::MAX), 4);
}

#[test]
fn java_string_hash_matches_java() {
    assert_eq!(java_string_hash(""), 0);
    assert_eq!(java_string_hash("a"), 97);
    assert_eq!(java_string_hash("abc"), 96354);
    assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
    assert_eq!(java_string_hash("hello"), 99162322);
    // Wraps like Java's int: the well-known string whose hashCode is Integer.MIN_VALUE.
    assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    assert_eq!(java_string_hash("0"), 48);
    assert_eq!(java_string_hash("123"), 48690);
    // UTF-16 code units: a character outside the BMP counts as its two surrogates.
    assert_eq!(
        java_string_hash("\u{1F600}"),
        0xD83D * 31 + 0xDE00,
        "surrogate pair"
    );
}

#[test]
fn entity_key_part_is_abs_of_java_remainder() {
    // "123".hashCode = 48690, 48690 % 5 = 0.
    assert_eq!(entity_key_part(EntityId(123)), 0);
    // "7" = 55 → 0; "8" = 56 → 1; "9" = 57 → 2; "10" = 1567 → 2.
    assert_eq!(entity_key_part(EntityId(7)), 0);
    assert_eq!(entity_key_part(EntityId(8)), 1);
    assert_eq!(entity_key_part(EntityId(9)), 2);
    assert_eq!(entity_key_part(EntityId(10)), 2);
    // A negative hash: Java's remainder keeps the sign, then abs.
    let big = u32::MAX;
    let h = java_string_hash(&big.to_string());
    assert!(h < 0, "{h}");
    assert_eq!(i32::from(entity_key_part(EntityId(big))), (h % 5).abs());
    for e in 0..2000 {
        let part = entity_key_part(EntityId(e));
        assert!(part < ENTITY_KEYS_PER_SHARD);
        assert_eq!(
            Key::for_entity(ShardId(3), EntityId(e)),
            Key::ShardEntities {
                shard: ShardId(3),
                part
            }
        );
    }
}

#[test]
fn local_update_and_get() {
    let mut net = Net::new(3, cfg(5));
    let r = net.get(0, ReadConsistency::Local);
    assert_eq!(net.got(0, r), Some(GetResult::NotFound));
    let u = net.update(0, WriteConsistency::Local, UpdateOp::OrSetAdd(vec![4, 2]));
    // Answered at once, nothing sent.
    assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
    assert!(net.queue.is_empty());
    let r = net.get(0, ReadConsistency::Local);
    assert_eq!(got_ids(net.got(0, r)), vec![2, 4]);
    // Durable by default, stored before the answer.
    let durable = net
        .log
        .iter()
        .position(|(_, o)| matches!(o, ReplOutput::Durable { key, .. } if *key == KEY));
    let answer = net
        .log
        .iter()
        .position(|(_, o)| matches!(o, ReplOutput::UpdateResponse { req, .. } if *req == u));
    assert!(durable.unwrap() < answer.unwrap());
    assert_eq!(ids(net.disks[0].get(&KEY)), vec![2, 4]);
    // Removing what is there; a remove of an absent key creates the empty set (Akka's
    // `Update` with an initial value).
    net.update(0, WriteConsistency::Local, UpdateOp::OrSetRemove(vec![4]));
    assert_eq!(net.local_ids(0), vec![2]);
    let other = Key::ShardEntities {
        shard: ShardId(9),
        part: 4,
    };
    net.update_key(
        1,
        other,
        WriteConsistency::Local,
        UpdateOp::OrSetRemove(vec![1]),
    );
    let r = net.get_key(1, other, ReadConsistency::Local);
    assert_eq!(got_ids(net.got(1, r)), Vec::<u32>::new());
}

#[test]
fn majority_write_then_majority_read_from_another_replica() {
    // 5 nodes, min-cap 1: a majority is 3, so a write reaches the writer and the two oldest
    // others (the primaries), and a read on node 4 asks the two oldest.
    let mut net = Net::new(5, cfg(1));
    let u = net.update(2, majority(0), UpdateOp::OrSetAdd(vec![7]));
    net.settle();
    assert_eq!(net.updated(2, u), Some(UpdateResult::Success));
    let holders: Vec<usize> = (0..5).filter(|&i| net.local_ids(i) == vec![7]).collect();
    assert_eq!(holders, vec![0, 1, 2]);
    // Each holder stored it (durable) before acking.
    for i in [0, 1, 2] {
        assert_eq!(ids(net.disks[i].get(&KEY)), vec![7]);
    }
    let r = net.get(4, read_majority(0));
    net.settle();
    assert_eq!(got_ids(net.got(4, r)), vec![7]);
    // Read repair: the reader's own replica has it now; the nodes it read did not change
    // (Akka repairs only the local replica).
    assert_eq!(net.local_ids(4), vec![7]);
    assert_eq!(ids(net.disks[4].get(&KEY)), vec![7]);
    assert!(net.local_ids(3).is_empty());
    assert_eq!(net.reps[4].in_flight(), 0);
    // No timer left behind but the gossip ticks.
    assert!(net
        .timers
        .keys()
        .all(|(_, t)| matches!(t, ReplTimer::Gossip)));
    // A majority read of a key nobody has: NotFound.
    let r = net.get_key(3, Key::AllShards, read_majority(0));
    net.settle();
    assert_eq!(net.got(3, r), Some(GetResult::NotFound));
}

#[test]
fn write_with_a_node_cut_off_succeeds_by_majority() {
    // Node 1 (a primary of node 0's write) is cut off: the write waits for the secondaries,
    // asked after timeout / 5, and succeeds with nodes 2 and 3.
    let mut net = Net::new(5, cfg(1));
    net.cut.insert(1);
    let u = net.update(0, majority(0), UpdateOp::OrSetAdd(vec![1]));
    net.settle();
    assert_eq!(net.updated(0, u), None, "node 2 acked, one more needed");
    net.advance(Duration(TIMEOUT.0 / 5));
    assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
    // Node 4's late ack was for a finished request: ignored.
    assert_eq!(net.local_ids(4), vec![1]);
    assert!(net.local_ids(1).is_empty());
    assert_eq!(net.reps[0].in_flight(), 0);
    // With node 1 known unreachable, the reachable nodes are the primaries: done at once.
    net.input(0, ReplInput::Unreachable(vec![addr(1, 1)]));
    let u = net.update(0, majority(0), UpdateOp::OrSetAdd(vec![2]));
    net.settle();
    assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
    let sent_to: Vec<NodeAddr> = net
        .log
        .iter()
        .filter_map(|(i, o)| match o {
            ReplOutput::Send {
                to,
                msg: ReplMsg::Write { data, .. },
            } if *i == 0 && data.elements().contains(&2) => Some(*to),
            _ => None,
        })
        .collect();
    assert_eq!(sent_to, vec![addr(2, 1), addr(3, 1)]);
    // The same read: node 1 unreachable for node 4 too, so it reads 0 and 2.
    net.input(4, ReplInput::Unreachable(vec![addr(1, 1)]));
    let r = net.get(4, read_majority(0));
    net.settle();
    assert_eq!(got_ids(net.got(4, r)), vec![1, 2]);
}

#[test]
fn write_times_out_without_a_majority_and_keeps_partial_success() {
    let mut net = Net::new(5, cfg(1));
    for i in [2, 3, 4] {
        net.cut.insert(i);
    }
    let u = net.update(0, majority(0), UpdateOp::OrSetAdd(vec![5]));
    net.advance(TIMEOUT.mul(2));
    assert_eq!(net.updated(0, u), Some(UpdateResult::Timeout));
    // Partially succeeded: the writer and node 1 keep it, on disk too.
    assert_eq!(net.local_ids(0), vec![5]);
    assert_eq!(net.local_ids(1), vec![5]);
    assert_eq!(ids(net.disks[1].get(&KEY)), vec![5]);
    assert!(net.local_ids(2).is_empty());
    // A majority read without a majority fails too.
    let r = net.get(0, read_majority(0));
    net.advance(TIMEOUT.mul(2));
    assert_eq!(net.got(0, r), Some(GetResult::Failure));
    assert_eq!(net.reps[0].in_flight(), 0);
}

#[test]
fn gossip_makes_replicas_converge_after_healing() {
    let mut net = Net::new(5, cfg(5));
    let u = net.update(0, WriteConsistency::All, UpdateOp::OrSetAdd(vec![9]));
    net.settle();
    assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
    net.cut.insert(4);
    // Concurrent: node 0 removes 9 while node 4, cut off, adds it again; and other local
    // writes on both sides.
    net.update(0, WriteConsistency::Local, UpdateOp::OrSetRemove(vec![9]));
    net.update(4, WriteConsistency::Local, UpdateOp::OrSetAdd(vec![9, 40]));
    net.update(2, WriteConsistency::Local, UpdateOp::OrSetAdd(vec![20]));
    net.update_key(
        3,
        Key::AllShards,
        WriteConsistency::Local,
        UpdateOp::GSetAdd(vec![1]),
    );
    net.advance(Duration::from_secs(20));
    // The connected side converged; node 4 is behind.
    for i in 1..4 {
        assert_eq!(net.reps[i].local(&KEY), net.reps[0].local(&KEY));
    }
    assert_eq!(net.local_ids(0), vec![20]);
    assert_eq!(net.local_ids(4), vec![9, 40]);
    net.cut.clear();
    net.advance(Duration::from_secs(20));
    for i in 1..5 {
        assert_eq!(net.reps[i].local(&KEY), net.reps[0].local(&KEY), "node {i}");
        assert_eq!(
            net.reps[i].local(&Key::AllShards),
            net.reps[0].local(&Key::AllShards)
        );
        // And each disk holds what the replica holds.
        assert_eq!(net.disks[i].get(&KEY), net.reps[i].local(&KEY));
    }
    // Add wins over the concurrent remove.
    assert_eq!(net.local_ids(0), vec![9, 20, 40]);
    assert_eq!(ids(net.reps[4].local(&Key::AllShards)), vec![1]);
}

#[test]
fn durable_data_survives_a_restart() {
    // Only the coordinator's set is durable here, to see the difference.
    fn only_all_shards(k: &Key) -> bool {
        *k == Key::AllShards
    }
    let mut net = Net::new(
        3,
        ReplicatorConfig {
            durable: only_all_shards,
            ..ReplicatorConfig::default()
        },
    );
    net.update(0, WriteConsistency::Local, UpdateOp::OrSetAdd(vec![1]));
    net.update_key(
        0,
        Key::AllShards,
        WriteConsistency::Local,
        UpdateOp::GSetAdd(vec![3]),
    );
    assert_eq!(net.disks[0].len(), 1);
    net.stop(0);
    net.restart(0, 2);
    let r = net.get_key(0, Key::AllShards, ReadConsistency::Local);
    assert_eq!(got_ids(net.got(0, r)), vec![3]);
    let r = net.get(0, ReadConsistency::Local);
    assert_eq!(net.got(0, r), Some(GetResult::NotFound));

    // Default rule: the remember-entities keys are durable; the new incarnation is a new
    // replica, so its adds never reuse the dots of the old one.
    let mut net = Net::new(3, ReplicatorConfig::default());
    net.update(0, WriteConsistency::Local, UpdateOp::OrSetAdd(vec![1, 2]));
    net.restart(0, 2);
    assert_eq!(net.local_ids(0), vec![1, 2]);
    net.update(0, WriteConsistency::Local, UpdateOp::OrSetAdd(vec![3]));
    let Some(Data::OrSet(s)) = net.reps[0].local(&KEY) else {
        panic!("no OrSet")
    };
    assert_eq!(s.version_vector().get(&addr(0, 1)), Some(&2));
    assert_eq!(s.version_vector().get(&addr(0, 2)), Some(&1));
    assert_eq!(net.local_ids(0), vec![1, 2, 3]);
}

/// §12 B4 (akka#28856), the schedule 1: 7 nodes, a majority write without
/// `additional` reaches the writer and the oldest others (5 nodes with min-cap 5, 4 with
/// min-cap 1); nodes 0-4 leave before any gossip; the survivors' majority read (2 of 2) misses
/// the value, and so does a majority + 5 read: nobody left has it. This is the hazard Akka
/// closed with `WriteMajorityPlus`/`ReadMajorityPlus` (PR akka#28895, 2.6.5).
#[test]
fn b4_plain_majority_loses_a_write_when_its_holders_leave() {
    for min_cap in [1, 5] {
        let mut net = Net::new(7, cfg(min_cap));
        let u = net.update_key(0, Key::AllShards, majority(0), UpdateOp::GSetAdd(vec![42]));
        net.settle();
        assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
        let holders: Vec<usize> = (0..7)
            .filter(|&i| net.reps[i].local(&Key::AllShards).is_some())
            .collect();
        let w = calculate_majority(min_cap, 7, 0);
        assert_eq!(holders, (0..w).collect::<Vec<_>>(), "min-cap {min_cap}");
        for i in 0..5 {
            net.stop(i);
        }
        let r = net.get_key(5, Key::AllShards, read_majority(0));
        net.settle();
        assert_eq!(net.got(5, r), Some(GetResult::NotFound), "the B4 hazard");
        let r = net.get_key(6, Key::AllShards, read_majority(5));
        net.settle();
        assert_eq!(net.got(6, r), Some(GetResult::NotFound));
    }
}

/// The same schedule with sharding's defaults (min-cap 5, write majority + 3, read majority
/// + 5): on 7 nodes the write must reach all 7, so the survivors have it.
#[test]
fn b4_majority_plus_defaults_keep_the_write() {
    let mut net = Net::new(7, cfg(5));
    let u = net.update_key(0, Key::AllShards, majority(3), UpdateOp::GSetAdd(vec![42]));
    net.settle();
    assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
    for i in 0..5 {
        net.stop(i);
    }
    // Node 6 restarts without its disk, a new replica with nothing: its read of 2 of 2 can
    // only get the value from node 5, and does.
    net.disks[6].clear();
    net.restart(6, 2);
    assert!(net.reps[6].local(&Key::AllShards).is_none());
    let r = net.get_key(6, Key::AllShards, read_majority(5));
    net.settle();
    assert_eq!(got_ids(net.got(6, r)), vec![42]);

    // The price: with one of 7 nodes cut off, a majority + 3 write cannot complete.
    let mut net = Net::new(7, cfg(5));
    net.cut.insert(6);
    let u = net.update(0, majority(3), UpdateOp::OrSetAdd(vec![1]));
    net.advance(TIMEOUT.mul(2));
    assert_eq!(net.updated(0, u), Some(UpdateResult::Timeout));
}

#[test]
fn exiting_members_are_not_asked() {
    let mut net = Net::new(3, cfg(5));
    net.cut.insert(1);
    // WriteAll over 3 nodes would need node 1; once it is Exiting it is not asked.
    net.input(0, ReplInput::Exiting(vec![addr(1, 1)]));
    let u = net.update(0, WriteConsistency::All, UpdateOp::OrSetAdd(vec![1]));
    net.settle();
    assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
    // Still a member: its reads are answered once it is reachable again.
    net.cut.clear();
    let r = net.get(1, ReadConsistency::All);
    net.settle();
    assert_eq!(got_ids(net.got(1, r)), vec![1]);
}

#[test]
fn members_change_does_not_cancel_requests_in_flight() {
    let mut net = Net::new(3, cfg(5));
    // The writer forgets its members while its writes are in flight: the replies (which are
    // matched to the request, not to the members) still complete it.
    let u = net.update(0, WriteConsistency::All, UpdateOp::OrSetAdd(vec![1]));
    net.input(0, ReplInput::Members(vec![]));
    net.settle();
    assert_eq!(net.updated(0, u), Some(UpdateResult::Success));
    // Same for a read (node 0 knows its members again, or it would not answer node 1).
    net.members_of(0);
    let r = net.get(1, ReadConsistency::All);
    net.input(1, ReplInput::Members(vec![addr(2, 1)]));
    net.settle();
    assert_eq!(got_ids(net.got(1, r)), vec![1]);
}

#[test]
fn stale_unknown_and_ill_typed_inputs_are_ignored() {
    let me = addr(0, 1);
    let peer = addr(1, 1);
    let stranger = addr(9, 1);
    let mut rep = Replicator::new(me, cfg(1), BTreeMap::new());
    let mut out = Vec::new();
    let now = Instant::ZERO;
    rep.handle(now, ReplInput::Members(vec![me, peer, peer]), &mut out);
    assert_eq!(rep.members(), &[peer]);
    out.clear();
    let junk = [
        ReplInput::Msg {
            from: peer,
            msg: ReplMsg::WriteAck { req: 77 },
        },
        ReplInput::Msg {
            from: peer,
            msg: ReplMsg::ReadResult {
                req: 77,
                data: Some(Data::GSet(GSet::new())),
            },
        },
        ReplInput::Timeout(ReplTimer::Request(77)),
        ReplInput::Timeout(ReplTimer::SendToSecondary(77)),
        // From a node that is not a member: no reply, no change.
        ReplInput::Msg {
            from: stranger,
            msg: ReplMsg::Read { req: 1, key: KEY },
        },
        ReplInput::Msg {
            from: stranger,
            msg: ReplMsg::Write {
                req: 1,
                key: KEY,
                data: Data::OrSet(OrSet::new()),
            },
        },
        ReplInput::Msg {
            from: stranger,
            msg: ReplMsg::Gossip {
                entries: vec![(KEY, Data::OrSet(OrSet::new()))],
            },
        },
        // The wrong kind for the key: not merged, not acked.
        ReplInput::Msg {
            from: peer,
            msg: ReplMsg::Write {
                req: 2,
                key: Key::AllShards,
                data: Data::OrSet(OrSet::new()),
            },
        },
        ReplInput::Msg {
            from: peer,
            msg: ReplMsg::Gossip {
                entries: vec![(KEY, Data::GSet(GSet::new()))],
            },
        },
    ];
    for input in junk {
        rep.handle(now, input, &mut out);
    }
    assert_eq!(out, vec![]);
    assert_eq!(rep.entries().count(), 0);

    // An op of the wrong kind: ModifyFailure, nothing stored.
    rep.handle(
        now,
        ReplInput::Update {
            req: 5,
            key: Key::AllShards,
            consistency: WriteConsistency::Local,
            timeout: TIMEOUT,
            op: UpdateOp::OrSetAdd(vec![1]),
        },
        &mut out,
    );
    assert_eq!(
        out,
        vec![ReplOutput::UpdateResponse {
            req: 5,
            key: Key::AllShards,
            result: UpdateResult::ModifyFailure
        }]
    );
    out.clear();

    // A write in flight (3 nodes, min-cap 1: one ack needed): acks from a stranger or for
    // another id do not count; the peer's does; a second one is ignored.
    let peer2 = addr(2, 1);
    rep.handle(now, ReplInput::Members(vec![peer, peer2]), &mut out);
    rep.handle(
        now,
        ReplInput::Update {
            req: 6,
            key: KEY,
            consistency: majority(0),
            timeout: TIMEOUT,
            op: UpdateOp::OrSetAdd(vec![1]),
        },
        &mut out,
    );
    let id = out
        .iter()
        .find_map(|o| match o {
            ReplOutput::Send {
                to,
                msg: ReplMsg::Write { req, .. },
            } if *to == peer => Some(*req),
            _ => None,
        })
        .unwrap();
    out.clear();
    for (from, req) in [(stranger, id), (peer, id + 1), (peer2, id + 1)] {
        rep.handle(
            now,
            ReplInput::Msg {
                from,
                msg: ReplMsg::WriteAck { req },
            },
            &mut out,
        );
    }
    assert_eq!(out, vec![]);
    assert_eq!(rep.in_flight(), 1);
    for _ in 0..2 {
        rep.handle(
            now,
            ReplInput::Msg {
                from: peer,
                msg: ReplMsg::WriteAck { req: id },
            },
            &mut out,
        );
    }
    let answers = out
        .iter()
        .filter(|o| matches!(o, ReplOutput::UpdateResponse { req: 6, .. }))
        .count();
    assert_eq!(answers, 1);
    assert_eq!(rep.in_flight(), 0);
    out.clear();
    // Its timers firing late change nothing.
    rep.handle(now, ReplInput::Timeout(ReplTimer::Request(id)), &mut out);
    rep.handle(
        now,
        ReplInput::Timeout(ReplTimer::SendToSecondary(id)),
        &mut out,
    );
    assert_eq!(out, vec![]);
}

#[test]
fn same_caller_req_twice_gets_two_answers() {
    // The caller's ids are only echoed: two requests with one id are two requests.
    let (me, peer) = (addr(0, 1), addr(1, 1));
    let mut rep = Replicator::new(me, cfg(5), BTreeMap::new());
    let mut out = Vec::new();
    rep.handle(Instant::ZERO, ReplInput::Members(vec![peer]), &mut out);
    let update = ReplInput::Update {
        req: 1,
        key: KEY,
        consistency: WriteConsistency::All,
        timeout: TIMEOUT,
        op: UpdateOp::OrSetAdd(vec![1]),
    };
    rep.handle(Instant::ZERO, update.clone(), &mut out);
    rep.handle(Instant::ZERO, update, &mut out);
    assert_eq!(rep.in_flight(), 2);
    let wire: Vec<u64> = out
        .iter()
        .filter_map(|o| match o {
            ReplOutput::Send {
                msg: ReplMsg::Write { req, .. },
                ..
            } => Some(*req),
            _ => None,
        })
        .collect();
    assert_eq!(wire.len(), 2);
    assert_ne!(wire[0], wire[1]);
    out.clear();
    rep.handle(
        Instant::ZERO,
        ReplInput::Msg {
            from: peer,
            msg: ReplMsg::WriteAck { req: wire[1] },
        },
        &mut out,
    );
    rep.handle(
        Instant::ZERO,
        ReplInput::Timeout(ReplTimer::Request(wire[0])),
        &mut out,
    );
    let results: Vec<UpdateResult> = out
        .iter()
        .filter_map(|o| match o {
            ReplOutput::UpdateResponse { req: 1, result, .. } => Some(*result),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec![UpdateResult::Success, UpdateResult::Timeout]);
    assert_eq!(rep.in_flight(), 0);
}
