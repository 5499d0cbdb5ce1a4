//! Akka's unit specs of the least-shard allocation strategy as conformance vectors for the model's
//! `shardsim_core::protocol::allocation::LeastShardAllocationStrategy`
//! (crates/core/src/protocol/allocation.rs).
//!
//! # What is ported
//!
//! Every case of Akka's `LeastShardAllocationStrategySpec` (16) and
//! `DeprecatedLeastShardAllocationStrategySpec` (19) at `akka/akka` commit
//! `9892c5e415e41599db095469c5963f155a0d736d` (both specs last changed in `3c1e5d23f6`, a
//! copyright bump), from `akka-cluster-sharding/src/test/scala/akka/cluster/sharding/`, and the
//! rules they pin in `akka-cluster-sharding/src/main/scala/akka/cluster/sharding/`:
//! `internal/LeastShardAllocationStrategy.scala` (the new algorithm),
//! `internal/ClusterShardAllocationMixin.scala` (`RegionEntry`, `ShardSuitabilityOrdering`,
//! `isAGoodTimeToRebalance`, `regionEntriesFor`),
//! `internal/AbstractLeastShardAllocationStrategy.scala` (`allocateShard`) and
//! `ShardCoordinator.scala` (the deprecated `LeastShardAllocationStrategy(rebalanceThreshold,
//! maxSimultaneousRebalance)`). Citations: `Spec:N` is the line of a test's name in
//! `LeastShardAllocationStrategySpec.scala` and `DSpec:N` in
//! `DeprecatedLeastShardAllocationStrategySpec.scala`; `LSAS:`, `MIX:`, `ALSAS:` and `SC:` are
//! lines of the four production files in that order, `Member:` of
//! `akka-cluster/src/main/scala/akka/cluster/Member.scala`, and `allocation.rs:` of the model.
//! The expected values were read from the Scala sources; no JVM ran them.
//!
//! A test is named after its case: the suite in snake_case, then the test's words in snake_case
//! (`[4, 4, 0]` is `4_4_0`). Where that would pass 100 columns the words are shortened: "least
//! number of shards" is `least_shards`, "rebalance from region with most number of shards" is
//! `rebalance_from_most_shards`, "not rebalance when diff equal to threshold" is
//! `not_rebalance_at_threshold`, `rebalanceThreshold=N` is `threshold_N`, and "prefer least
//! shards, latest version, non downed, leaving or exiting nodes" is
//! `prefer_least_shards_latest_version_not_leaving`. A test's doc opens with
//! `Suite, Spec:N: "case".` (`DSpec:N` for the deprecated suite), wrapped at a space where it
//! passes 100 columns: its first paragraph, its lines joined by spaces, is that line.
//!
//! # Regions and members
//!
//! Akka's regions are fake actor refs on members `127.0.0.1`, `127.0.0.2`, ... (Spec:72-79,
//! 85-91); each is a `RegionEntry` on node 1, 2, ... (incarnation 1) in that address order, so
//! regions A, B, C are nodes 1, 2, 3 and the ordering case's five members are nodes 1..5. Akka's
//! `newUpMember` builds a Joining member with `upNumber = Int.MaxValue` (Member:108-109) and
//! `copy(Up)` keeps it (Member:82-89): every member has the same up-number, here
//! [`UP_NUMBER`], and the address decides ties (MIX:54-58; the model's region order,
//! allocation.rs:81-96). `leaving` is set for Leaving, Exiting and Down (MIX:33). App versions:
//! Akka's `Version("1.0.0")` is 0 and `Version("1.0.1")` is 1. Akka's allocation `Map` (a `Map3`,
//! which keeps A, B, C in insertion order, the order `countShardsPerRegion` reads, Spec:53-55)
//! is a `Vec<RegionEntry>` in A, B, C order. Akka's `regionEntriesFor` (MIX:98-112) drops
//! regions whose member the cluster state lacks; every region of these cases has its member.
//!
//! # Shards
//!
//! Akka's ids are zero-padded strings, `"001"` to `"999"` (Spec:93) or to the case's total
//! (DSpec:33); `"051"` is `ShardId(51)`, which keeps their order. The ordering case's `"ShardId1"`
//! .. `"ShardId3"` are `ShardId(1)` .. `ShardId(3)`. Both specs' `createAllocations` give A the
//! first `aCount` ids, B the next `bCount` and C the next `cCount` (Spec:95-100, DSpec:32-38):
//! [`allocations`]. So the "[50, 50, 0]" cases, which call `createAllocations(aCount = 50,
//! cCount = 50)`, have A 001-050, B none and C 051-100, as ported.
//!
//! # Strategies and calls
//!
//! The new strategy is `LeastShardSettings` with Akka's `absoluteLimit` and `relativeLimit`
//! (LSAS:43); a positive absolute limit selects the new algorithm (allocation.rs:270-282).
//! "Without limits" is 1000 / 1.0 (Spec:102-103). The deprecated strategy is
//! `rebalance_threshold` and `max_simultaneous_rebalance` with an absolute limit of 0 (SC:360).
//! Akka's `allocateShard(requester, shard, allocations).futureValue` is
//! `allocate_shard(requester, shard, &regions)` and
//! `rebalance(allocations, rebalanceInProgress).futureValue` is
//! `rebalance(&regions, &in_progress, health)`. Akka's `afterRebalance` (Spec:38-51) is
//! [`after_rebalance`]: the moved shards leave their regions, then each, in ascending order, is
//! appended to the region `allocate_shard` picks.
//!
//! # Cluster health
//!
//! Akka's fake cluster state has A, B and C Up on one app version, none unreachable
//! (Spec:105-111, DSpec:40-46), so `isAGoodTimeToRebalance` (MIX:76-96) holds: the cases pass
//! `ClusterHealth { good_time_to_rebalance: true }`. The three cases that fake another state (a
//! rolling update, an unreachable member, a joining member) build those members as the model's
//! `Member`s, compute the gate with the model's `is_a_good_time_to_rebalance` and pass its
//! answer. Akka filters the members by the self member's data centre; all of them are in the
//! default one, and the model has none.
//!
//! # The suitability ordering
//!
//! The ordering cases sort `RegionEntry`s with `ShardSuitabilityOrdering` (MIX:37-62). The
//! model's ordering (allocation.rs:81-96) is private, but `allocate_shard` answers its first
//! region (allocation.rs:260-268, as Akka's `mostSuitableRegion` takes the minimum, ALSAS:56-60):
//! [`suitability_order`] reads the whole order by taking the most suitable region and dropping
//! it until none is left, which yields the sorted order of a total order.
//!
//! # Departures
//!
//! A case the model cannot express would be in `DEPARTURES`, with why and Akka's lines; a case it
//! expresses but answers differently would be ported with Akka's values and
//! `#[ignore = "departure: ..."]` naming Akka's lines and the model's, its doc saying what the
//! model gives instead. By our reading of allocation.rs there is neither: every case is ported
//! and expected to pass (the model's new algorithm is LSAS:47-121 step by step, its deprecated
//! one SC:364-387, its ordering MIX:39-62 with one total key). `DEPARTURES` is empty.
//! `every_catalogued_case_is_ported_or_a_departure` checks that the lists cover all 35 cases, and
//! `the_conformance_table_is_current` that the tests' doc headers name the cases of `PORTED`
//! (and writes `reports/conformance/allocation.md`).

use shardsim_core::ids::{NodeId, NodeInc, RegionRef, ShardId};
use shardsim_core::membership::{Member, MemberStatus};
use shardsim_core::protocol::allocation::{
    is_a_good_time_to_rebalance, ClusterHealth, LeastShardAllocationStrategy, LeastShardSettings,
    RegionEntry, ShardAllocationStrategy,
};
use std::collections::BTreeSet;

mod conformance;

/// The cases of the two Akka specs: 16 in `LeastShardAllocationStrategySpec`, 19 in
/// `DeprecatedLeastShardAllocationStrategySpec`.
const CATALOGUE_TOTAL: usize = 35;

const LSAS: &str = "LeastShardAllocationStrategy";
const DEPRECATED: &str = "DeprecatedLeastShardAllocationStrategy";

/// The suites (Akka's `"..." must { }` blocks, one per spec) with their case counts.
const SUITES: &[(&str, usize)] = &[(LSAS, 16), (DEPRECATED, 19)];

/// The cases the model cannot express, as (suite, Akka test name, why with Akka's file:line).
/// None: see the module doc.
const DEPARTURES: &[(&str, &str, &str)] = &[];

/// The cases ported as tests below, as (suite, Akka test name); a test that the model answers
/// differently would be `#[ignore]`d with its reason.
const PORTED: &[(&str, &str)] = &[
    (LSAS, "allocate to region with least number of shards"),
    (LSAS, "rebalance shards [1, 2, 0]"),
    (LSAS, "rebalance shards [2, 0, 0]"),
    (LSAS, "not rebalance shards [1, 1, 0]"),
    (LSAS, "rebalance shards [3, 0, 0]"),
    (LSAS, "rebalance shards [4, 4, 0]"),
    (LSAS, "rebalance shards [4, 4, 2]"),
    (LSAS, "rebalance shards [5, 5, 0]"),
    (LSAS, "rebalance shards [50, 50, 0]"),
    (LSAS, "respect absolute limit of number shards"),
    (LSAS, "respect relative limit of number shards"),
    (LSAS, "not rebalance when in progress"),
    (
        LSAS,
        "prefer least shards, latest version, non downed, leaving or exiting nodes",
    ),
    (LSAS, "not rebalance when rolling update in progress"),
    (LSAS, "not rebalance when regions are unreachable"),
    (LSAS, "not rebalance when members are joining dc"),
    (
        DEPRECATED,
        "allocate to region with least number of shards [1, 1, 0]",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [2, 0, 0], rebalanceThreshold=1",
    ),
    (
        DEPRECATED,
        "not rebalance when diff equal to threshold, [1, 1, 0], rebalanceThreshold=1",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [1, 2, 0], rebalanceThreshold=1",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [3, 0, 0], rebalanceThreshold=1",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [4, 4, 0], rebalanceThreshold=1",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [4, 4, 2], rebalanceThreshold=1",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [1, 3, 0], rebalanceThreshold=2",
    ),
    (
        DEPRECATED,
        "not rebalance when diff equal to threshold, [2, 2, 0], rebalanceThreshold=2",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [3, 3, 0], rebalanceThreshold=2",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [4, 4, 0], rebalanceThreshold=2",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [5, 5, 0], rebalanceThreshold=2",
    ),
    (
        DEPRECATED,
        "rebalance from region with most number of shards [50, 50, 0], rebalanceThreshold=2",
    ),
    (
        DEPRECATED,
        "limit number of simultaneous rebalance [1, 10, 0]",
    ),
    (
        DEPRECATED,
        "not pick shards that are in progress [10, 0, 0]",
    ),
    (
        DEPRECATED,
        "prefer least shards, latest version, non downed, leaving or exiting nodes",
    ),
    (DEPRECATED, "not rebalance when rolling update in progress"),
    (DEPRECATED, "not rebalance when regions are unreachable"),
    (DEPRECATED, "not rebalance when members are joining dc"),
];

#[test]
fn every_catalogued_case_is_ported_or_a_departure() {
    assert_eq!(
        PORTED.len() + DEPARTURES.len(),
        CATALOGUE_TOTAL,
        "{} ported + {} departures",
        PORTED.len(),
        DEPARTURES.len()
    );
    conformance::check_catalogue(SUITES, PORTED, DEPARTURES);
}

// ---- regions, shards and strategies ----

/// Akka's `upNumber` of every member of these specs: `Int.MaxValue` (Member:108-109), which
/// `copy(Up)` keeps (Member:82-89).
const UP_NUMBER: u32 = 2_147_483_647;

/// Akka's `isAGoodTimeToRebalance` in the cases with the spec's fake cluster state (Spec:105-111,
/// DSpec:40-46): A, B and C Up on one version, none unreachable.
const GOOD_TIME: ClusterHealth = ClusterHealth {
    good_time_to_rebalance: true,
};

/// The region on the member with the `i`-th address (127.0.0.`i`).
const fn region(i: u32) -> RegionRef {
    RegionRef {
        node: NodeId(i),
        inc: NodeInc(1),
    }
}

const A: RegionRef = region(1);
const C: RegionRef = region(3);

/// Akka's `DummyActorRef` (Spec:32-36), the requester of `afterRebalance`: no region's.
const DUMMY: RegionRef = RegionRef {
    node: NodeId(0),
    inc: NodeInc(0),
};

fn ids(v: &[u32]) -> BTreeSet<ShardId> {
    v.iter().copied().map(ShardId).collect()
}

/// The region on node `node`, Up on app version 0 with Akka's up-number, holding `shards`.
fn entry(node: u32, shards: impl IntoIterator<Item = u32>) -> RegionEntry {
    RegionEntry {
        region: region(node),
        up_number: UP_NUMBER,
        leaving: false,
        app_version: 0,
        shards: shards.into_iter().map(ShardId).collect(),
    }
}

/// Akka's `createAllocations(aCount, bCount, cCount)` (Spec:95-100, DSpec:32-38): regions A, B
/// and C with the first `a` shards, the next `b` and the next `c`.
fn allocations(a: u32, b: u32, c: u32) -> Vec<RegionEntry> {
    vec![
        entry(1, 1..=a),
        entry(2, a + 1..=a + b),
        entry(3, a + b + 1..=a + b + c),
    ]
}

/// Akka's `new LeastShardAllocationStrategy(absoluteLimit, relativeLimit)` (LSAS:43).
fn least_shard(absolute: u32, relative: f64) -> LeastShardAllocationStrategy {
    LeastShardAllocationStrategy::new(LeastShardSettings {
        rebalance_absolute_limit: absolute,
        rebalance_relative_limit: relative,
        ..LeastShardSettings::default()
    })
}

/// Akka's `strategyWithoutLimits` (Spec:102-103).
fn without_limits() -> LeastShardAllocationStrategy {
    least_shard(1000, 1.0)
}

/// Akka's deprecated `ShardCoordinator.LeastShardAllocationStrategy(rebalanceThreshold,
/// maxSimultaneousRebalance)` (SC:360): an absolute limit of 0 selects it.
fn deprecated(threshold: u32, max_simultaneous: u32) -> LeastShardAllocationStrategy {
    LeastShardAllocationStrategy::new(LeastShardSettings {
        rebalance_threshold: threshold,
        max_simultaneous_rebalance: max_simultaneous,
        rebalance_absolute_limit: 0,
        ..LeastShardSettings::default()
    })
}

/// Akka's `rebalance(allocations, rebalanceInProgress).futureValue` at a good time.
fn rebalance(
    s: &LeastShardAllocationStrategy,
    regions: &[RegionEntry],
    in_progress: &[u32],
) -> BTreeSet<ShardId> {
    s.rebalance(regions, &ids(in_progress), GOOD_TIME)
}

/// Akka's `afterRebalance` (Spec:38-51): the moved shards leave their regions, then each, in
/// ascending order, goes to the region `allocate_shard` picks.
fn after_rebalance(
    s: &LeastShardAllocationStrategy,
    regions: &[RegionEntry],
    moved: &BTreeSet<ShardId>,
) -> Vec<RegionEntry> {
    let mut acc = regions.to_vec();
    for e in &mut acc {
        e.shards.retain(|x| !moved.contains(x));
    }
    for &shard in moved {
        let to = s
            .allocate_shard(DUMMY, shard, &acc)
            .expect("Akka's allocateShard answers");
        acc.iter_mut()
            .find(|e| e.region == to)
            .expect("the answer is one of the regions")
            .shards
            .push(shard);
    }
    acc
}

/// Akka's `allocationCountsAfterRebalance` (Spec:61-66): shards per region, A, B, C.
fn counts_after(
    s: &LeastShardAllocationStrategy,
    regions: &[RegionEntry],
    moved: &BTreeSet<ShardId>,
) -> Vec<usize> {
    after_rebalance(s, regions, moved)
        .iter()
        .map(|e| e.shards.len())
        .collect()
}

fn sorted(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v
}

/// The regions of `entries`, most suitable first, read through `allocate_shard` (see the module
/// doc): take the answer, drop its region, ask again.
fn suitability_order(s: &LeastShardAllocationStrategy, entries: &[RegionEntry]) -> Vec<RegionRef> {
    let mut left = entries.to_vec();
    let mut order = Vec::new();
    while !left.is_empty() {
        let best = s
            .allocate_shard(DUMMY, ShardId(0), &left)
            .expect("a region while some are left");
        let before = left.len();
        left.retain(|e| e.region != best);
        assert_eq!(left.len() + 1, before, "{best} is not one region left");
        order.push(best);
    }
    order
}

/// The ordering case (Spec:223-260, DSpec:168-205): the entries in Akka's `Seq` order and the
/// order Akka expects. Members 127.0.0.1 .. 127.0.0.5: the old app version Up (`fakeLocalRegion`,
/// no shards), Leaving on the old version (`fakeRegionA`, none), then Up on the new version
/// `fakeRegionB` (none), `fakeRegionC` (ShardId1) and `fakeRegionD` (ShardId2, ShardId3).
fn suitability_case() -> (Vec<RegionEntry>, Vec<RegionRef>) {
    fn on(node: u32, leaving: bool, app_version: u32, shards: &[u32]) -> RegionEntry {
        RegionEntry {
            leaving,
            app_version,
            ..entry(node, shards.iter().copied())
        }
    }
    let local = on(1, false, 0, &[]);
    let a = on(2, true, 0, &[]);
    let b = on(3, false, 1, &[]);
    let c = on(4, false, 1, &[1]);
    let d = on(5, false, 1, &[2, 3]);
    let expected = vec![b.region, c.region, d.region, local.region, a.region];
    (vec![b, a, d, local, c], expected)
}

/// The member with the `node`-th address, `status` and `app_version`, Akka's up-number.
fn member(node: u32, status: MemberStatus, app_version: u32) -> Member {
    Member {
        node: NodeId(node),
        inc: NodeInc(1),
        up_number: UP_NUMBER,
        status,
        hosting: true,
        app_version,
    }
}

/// The fake-state cases (Spec:262-318, DSpec:207-264): the gate, computed from `members` and
/// `unreachable` by the model's `is_a_good_time_to_rebalance`, is closed (MIX:76-96), and
/// `rebalance` answers nothing with none, {001, 002} and {001, 002, 051, 052} in progress.
fn assert_no_rebalance_at_this_time(
    s: &LeastShardAllocationStrategy,
    regions: &[RegionEntry],
    members: &[Member],
    unreachable: &[RegionRef],
) {
    let good = is_a_good_time_to_rebalance(regions, members, unreachable);
    assert!(!good, "isAGoodTimeToRebalance should be false");
    let health = ClusterHealth {
        good_time_to_rebalance: good,
    };
    let in_progress: [&[u32]; 3] = [&[], &[1, 2], &[1, 2, 51, 52]];
    for p in in_progress {
        assert_eq!(s.rebalance(regions, &ids(p), health), ids(&[]), "{p:?}");
    }
}

/// Akka's "rolling update in progress" state: A, B, C Up on versions 1.0.0, 1.0.1, 1.0.0
/// (Spec:266-272, DSpec:211-217), with `createAllocations(5, 5)`.
fn assert_not_during_rolling_update(s: &LeastShardAllocationStrategy) {
    let mut regions = allocations(5, 5, 0);
    regions[1].app_version = 1;
    let members = [
        member(1, MemberStatus::Up, 0),
        member(2, MemberStatus::Up, 1),
        member(3, MemberStatus::Up, 0),
    ];
    assert_no_rebalance_at_this_time(s, &regions, &members, &[]);
}

/// Akka's "regions are unreachable" state: A, B, C Up, B unreachable (Spec:287-289,
/// DSpec:232-234), with `createAllocations(5, 5)`.
fn assert_not_with_unreachable_region(s: &LeastShardAllocationStrategy) {
    let members = [
        member(1, MemberStatus::Up, 0),
        member(2, MemberStatus::Up, 0),
        member(3, MemberStatus::Up, 0),
    ];
    assert_no_rebalance_at_this_time(s, &allocations(5, 5, 0), &members, &[region(2)]);
}

/// Akka's "members are joining" state: A and C Up, B Joining (`Member.apply`, Member:108-109),
/// one version, one data centre (Spec:301-310, DSpec:247-256), with `createAllocations(5, 5)`.
fn assert_not_while_joining(s: &LeastShardAllocationStrategy) {
    let members = [
        member(1, MemberStatus::Up, 0),
        member(2, MemberStatus::Joining, 0),
        member(3, MemberStatus::Up, 0),
    ];
    assert_no_rebalance_at_this_time(s, &allocations(5, 5, 0), &members, &[]);
}

// ---- LeastShardAllocationStrategySpec, in the spec's order ----

/// LeastShardAllocationStrategy, Spec:114: "allocate to region with least number of shards".
///
/// [1, 1, 0]: shard 003, asked for by A, goes to C, the region with no shard (ALSAS:41-54).
#[test]
fn least_shard_allocation_strategy_allocate_to_region_with_least_number_of_shards() {
    let s = without_limits();
    let got = s.allocate_shard(A, ShardId(3), &allocations(1, 1, 0));
    assert_eq!(got, Some(C));
}

/// LeastShardAllocationStrategy, Spec:120: "rebalance shards [1, 2, 0]".
///
/// Three shards on three regions: optimal 1, so phase 1 takes B's oldest, 002, which goes to C.
#[test]
fn least_shard_allocation_strategy_rebalance_shards_1_2_0() {
    let s = without_limits();
    let r = allocations(1, 2, 0);
    let got = rebalance(&s, &r, &[]);
    assert_eq!(got, ids(&[2]));
    assert_eq!(counts_after(&s, &r, &got), vec![1, 1, 1]);
}

/// LeastShardAllocationStrategy, Spec:128: "rebalance shards [2, 0, 0]".
///
/// Optimal 1: A gives up 001, which goes to B (equal with C, the lower address).
#[test]
fn least_shard_allocation_strategy_rebalance_shards_2_0_0() {
    let s = without_limits();
    let r = allocations(2, 0, 0);
    let got = rebalance(&s, &r, &[]);
    assert_eq!(got, ids(&[1]));
    assert_eq!(counts_after(&s, &r, &got), vec![1, 1, 0]);
}

/// LeastShardAllocationStrategy, Spec:136: "not rebalance shards [1, 1, 0]".
///
/// Optimal 1: no region is above it, and none is two below it (phase 2 finds nothing).
#[test]
fn least_shard_allocation_strategy_not_rebalance_shards_1_1_0() {
    let s = without_limits();
    assert_eq!(rebalance(&s, &allocations(1, 1, 0), &[]), ids(&[]));
}

/// LeastShardAllocationStrategy, Spec:142: "rebalance shards [3, 0, 0]".
///
/// Optimal 1: A gives up its two oldest, 001 and 002, one to B and one to C.
#[test]
fn least_shard_allocation_strategy_rebalance_shards_3_0_0() {
    let s = without_limits();
    let r = allocations(3, 0, 0);
    let got = rebalance(&s, &r, &[]);
    assert_eq!(got, ids(&[1, 2]));
    assert_eq!(counts_after(&s, &r, &got), vec![1, 1, 1]);
}

/// LeastShardAllocationStrategy, Spec:150: "rebalance shards [4, 4, 0]".
///
/// Optimal ⌈8 / 3⌉ = 3: A and B each give up their oldest (001, 005), both to C.
#[test]
fn least_shard_allocation_strategy_rebalance_shards_4_4_0() {
    let s = without_limits();
    let r = allocations(4, 4, 0);
    let got = rebalance(&s, &r, &[]);
    assert_eq!(got, ids(&[1, 5]));
    assert_eq!(counts_after(&s, &r, &got), vec![3, 3, 2]);
}

/// LeastShardAllocationStrategy, Spec:158: "rebalance shards [4, 4, 2]".
///
/// Optimal 4: nothing above it, but C is two below, so phase 2 (LSAS:71-93) moves the head of the
/// first full region in suitability order, A's 001, to C.
#[test]
fn least_shard_allocation_strategy_rebalance_shards_4_4_2() {
    let s = without_limits();
    let r = allocations(4, 4, 2);
    let got = rebalance(&s, &r, &[]);
    assert_eq!(got, ids(&[1]));
    assert_eq!(counts_after(&s, &r, &got), vec![3, 4, 3]);
}

/// LeastShardAllocationStrategy, Spec:167: "rebalance shards [5, 5, 0]".
///
/// Two rounds: phase 1 moves 001 and 006 to C ([4, 4, 2]), then phase 2 moves 002 ([3, 4, 3]).
#[test]
fn least_shard_allocation_strategy_rebalance_shards_5_5_0() {
    let s = without_limits();
    let r = allocations(5, 5, 0);
    let got1 = rebalance(&s, &r, &[]);
    assert_eq!(got1, ids(&[1, 6]));
    assert_eq!(counts_after(&s, &r, &got1), vec![4, 4, 2]);
    let r2 = after_rebalance(&s, &r, &got1);
    let got2 = rebalance(&s, &r2, &[]);
    assert_eq!(got2, ids(&[2]));
    assert_eq!(counts_after(&s, &r2, &got2), vec![3, 4, 3]);
}

/// LeastShardAllocationStrategy, Spec:182: "rebalance shards [50, 50, 0]".
///
/// A has 001-050, B none, C 051-100 (the case's `createAllocations(aCount = 50, cCount = 50)`).
/// Optimal 34: A and C give up their 16 oldest each, all to B ([34, 32, 34], compared sorted);
/// then phase 2 moves A's head, 017, to B ([33, 33, 34]).
#[test]
fn least_shard_allocation_strategy_rebalance_shards_50_50_0() {
    let s = without_limits();
    let r = allocations(50, 0, 50);
    let got1 = rebalance(&s, &r, &[]);
    let want1: BTreeSet<ShardId> = (1..=16).chain(51..=66).map(ShardId).collect();
    assert_eq!(got1, want1);
    assert_eq!(
        sorted(counts_after(&s, &r, &got1)),
        sorted(vec![34, 34, 32])
    );
    let r2 = after_rebalance(&s, &r, &got1);
    let got2 = rebalance(&s, &r2, &[]);
    assert_eq!(got2, ids(&[17]));
    assert_eq!(
        sorted(counts_after(&s, &r2, &got2)),
        sorted(vec![33, 34, 33])
    );
}

/// LeastShardAllocationStrategy, Spec:199: "respect absolute limit of number shards".
///
/// [1, 9, 0], optimal 4: B has 5 above it, but the absolute limit 3 (LSAS:53-54) moves only 002,
/// 003 and 004, to C, A and C.
#[test]
fn least_shard_allocation_strategy_respect_absolute_limit_of_number_shards() {
    let s = least_shard(3, 1.0);
    let r = allocations(1, 9, 0);
    let got = rebalance(&s, &r, &[]);
    assert_eq!(got, ids(&[2, 3, 4]));
    assert_eq!(counts_after(&s, &r, &got), vec![2, 6, 2]);
}

/// LeastShardAllocationStrategy, Spec:208: "respect relative limit of number shards".
///
/// As the absolute limit case, with absolute 5 and relative 0.3: ⌊0.3 × 10⌋ = 3 shards.
#[test]
fn least_shard_allocation_strategy_respect_relative_limit_of_number_shards() {
    let s = least_shard(5, 0.3);
    let r = allocations(1, 9, 0);
    let got = rebalance(&s, &r, &[]);
    assert_eq!(got, ids(&[2, 3, 4]));
    assert_eq!(counts_after(&s, &r, &got), vec![2, 6, 2]);
}

/// LeastShardAllocationStrategy, Spec:217: "not rebalance when in progress".
///
/// [10, 0, 0] with 002 and 003 in progress: one round at a time (LSAS:95-97), so nothing.
#[test]
fn least_shard_allocation_strategy_not_rebalance_when_in_progress() {
    let s = without_limits();
    assert_eq!(rebalance(&s, &allocations(10, 0, 0), &[2, 3]), ids(&[]));
}

/// LeastShardAllocationStrategy, Spec:223: "prefer least shards, latest version, non downed,
/// leaving or exiting nodes".
///
/// `ShardSuitabilityOrdering` (MIX:39-62): not leaving first, then the newest app version, then
/// the fewest shards: fewest, one shard, most (new version), the old version, the leaving one.
#[test]
fn least_shard_allocation_strategy_prefer_least_shards_latest_version_not_leaving() {
    let (entries, expected) = suitability_case();
    assert_eq!(suitability_order(&without_limits(), &entries), expected);
}

/// LeastShardAllocationStrategy, Spec:262: "not rebalance when rolling update in progress".
///
/// Two app versions among the regions' members: not a good time (MIX:82-83), nothing moves.
#[test]
fn least_shard_allocation_strategy_not_rebalance_when_rolling_update_in_progress() {
    assert_not_during_rolling_update(&without_limits());
}

/// LeastShardAllocationStrategy, Spec:283: "not rebalance when regions are unreachable".
///
/// B is unreachable: a hand-off could not complete (MIX:85-88), nothing moves.
#[test]
fn least_shard_allocation_strategy_not_rebalance_when_regions_are_unreachable() {
    assert_not_with_unreachable_region(&without_limits());
}

/// LeastShardAllocationStrategy, Spec:297: "not rebalance when members are joining dc".
///
/// B is Joining: wait until it is Up (MIX:90-92), nothing moves.
#[test]
fn least_shard_allocation_strategy_not_rebalance_when_members_are_joining_dc() {
    assert_not_while_joining(&without_limits());
}

// ---- DeprecatedLeastShardAllocationStrategySpec, in the spec's order ----

/// DeprecatedLeastShardAllocationStrategy, DSpec:49: "allocate to region with least number of
/// shards [1, 1, 0]".
///
/// Threshold 3, max 10: shard 003, asked for by A, goes to C, the region with no shard.
#[test]
fn deprecated_least_shard_allocation_strategy_allocate_to_region_with_least_shards_1_1_0() {
    let s = deprecated(3, 10);
    let got = s.allocate_shard(A, ShardId(3), &allocations(1, 1, 0));
    assert_eq!(got, Some(C));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:55: "rebalance from region with most number of
/// shards [2, 0, 0], rebalanceThreshold=1".
///
/// A has 2, B none: 2 - 0 > 1 moves min(2 - 1, 1) = 1 shard, 001 (SC:377-382); with 001 in
/// progress A counts 1, not above the threshold.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_2_0_0_threshold_1() {
    let s = deprecated(1, 10);
    let r = allocations(2, 0, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1]));
    assert_eq!(rebalance(&s, &r, &[1]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:63: "not rebalance when diff equal to threshold,
/// [1, 1, 0], rebalanceThreshold=1".
///
/// 1 - 0 is not above the threshold 1: the difference must exceed it (SC:378).
#[test]
fn deprecated_least_shard_allocation_strategy_not_rebalance_at_threshold_1_1_0_threshold_1() {
    let s = deprecated(1, 10);
    assert_eq!(rebalance(&s, &allocations(1, 1, 0), &[]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:69: "rebalance from region with most number of
/// shards [1, 2, 0], rebalanceThreshold=1".
///
/// B's 2 against C's 0 moves 002; with 002 in progress the largest has 1, nothing more.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_1_2_0_threshold_1() {
    let s = deprecated(1, 10);
    let r = allocations(1, 2, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[2]));
    assert_eq!(rebalance(&s, &r, &[2]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:77: "rebalance from region with most number of
/// shards [3, 0, 0], rebalanceThreshold=1".
///
/// One shard at a time: 001, then with 001 in progress A still has 2 free, so 002.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_3_0_0_threshold_1() {
    let s = deprecated(1, 10);
    let r = allocations(3, 0, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1]));
    assert_eq!(rebalance(&s, &r, &[1]), ids(&[2]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:85: "rebalance from region with most number of
/// shards [4, 4, 0], rebalanceThreshold=1".
///
/// A is the first of the two largest (address order): 001; with 001 in progress B is the
/// largest: 005.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_4_4_0_threshold_1() {
    let s = deprecated(1, 10);
    let r = allocations(4, 4, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1]));
    assert_eq!(rebalance(&s, &r, &[1]), ids(&[5]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:93: "rebalance from region with most number of
/// shards [4, 4, 2], rebalanceThreshold=1".
///
/// 4 against C's 2: 001; with 001 in progress, B's 4 against 2: 005.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_4_4_2_threshold_1() {
    let s = deprecated(1, 10);
    let r = allocations(4, 4, 2);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1]));
    assert_eq!(rebalance(&s, &r, &[1]), ids(&[5]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:101: "rebalance from region with most number of
/// shards [1, 3, 0], rebalanceThreshold=2".
///
/// [1, 2, 0]: 2 - 0 is not above 2, nothing; [1, 3, 0]: 002, and with 002 in progress nothing.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_1_3_0_threshold_2() {
    let s = deprecated(2, 10);
    assert_eq!(rebalance(&s, &allocations(1, 2, 0), &[]), ids(&[]));
    let r2 = allocations(1, 3, 0);
    assert_eq!(rebalance(&s, &r2, &[]), ids(&[2]));
    assert_eq!(rebalance(&s, &r2, &[2]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:113: "not rebalance when diff equal to threshold,
/// [2, 2, 0], rebalanceThreshold=2".
///
/// 2 - 0 is not above the threshold 2.
#[test]
fn deprecated_least_shard_allocation_strategy_not_rebalance_at_threshold_2_2_0_threshold_2() {
    let s = deprecated(2, 10);
    assert_eq!(rebalance(&s, &allocations(2, 2, 0), &[]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:119: "rebalance from region with most number of
/// shards [3, 3, 0], rebalanceThreshold=2".
///
/// 3 - 0 moves min(1, 2) = 1: 001; then B's 004; with both in progress the largest has 2.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_3_3_0_threshold_2() {
    let s = deprecated(2, 10);
    let r = allocations(3, 3, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1]));
    assert_eq!(rebalance(&s, &r, &[1]), ids(&[4]));
    assert_eq!(rebalance(&s, &r, &[1, 4]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:127: "rebalance from region with most number of
/// shards [4, 4, 0], rebalanceThreshold=2".
///
/// 4 - 0 moves min(2, 2) = 2: 001 and 002; then B's 005 and 006; then the largest has 2.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_4_4_0_threshold_2() {
    let s = deprecated(2, 10);
    let r = allocations(4, 4, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1, 2]));
    assert_eq!(rebalance(&s, &r, &[1, 2]), ids(&[5, 6]));
    assert_eq!(rebalance(&s, &r, &[1, 2, 5, 6]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:136: "rebalance from region with most number of
/// shards [5, 5, 0], rebalanceThreshold=2".
///
/// 001 and 002; then B's 006 and 007; then A and B have 3 free each, A first: 3 - 0 moves 1, 003.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_5_5_0_threshold_2() {
    let s = deprecated(2, 10);
    let r = allocations(5, 5, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1, 2]));
    assert_eq!(rebalance(&s, &r, &[1, 2]), ids(&[6, 7]));
    assert_eq!(rebalance(&s, &r, &[1, 2, 6, 7]), ids(&[3]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:146: "rebalance from region with most number of
/// shards [50, 50, 0], rebalanceThreshold=2".
///
/// A has 001-050, B none, C 051-100 (`createAllocations(aCount = 50, cCount = 50)`), max 100:
/// two at a time, 001 and 002, then C's 051 and 052, then A's 003 and 004.
#[test]
fn deprecated_least_shard_allocation_strategy_rebalance_from_most_shards_50_50_0_threshold_2() {
    let s = deprecated(2, 100);
    let r = allocations(50, 0, 50);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[1, 2]));
    assert_eq!(rebalance(&s, &r, &[1, 2]), ids(&[51, 52]));
    assert_eq!(rebalance(&s, &r, &[1, 2, 51, 52]), ids(&[3, 4]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:155: "limit number of simultaneous rebalance
/// [1, 10, 0]".
///
/// Threshold 3, max 2: min(min(7, 3), 2) = 2, so 002 and 003; with those 2 in progress, nothing
/// (SC:367).
#[test]
fn deprecated_least_shard_allocation_strategy_limit_number_of_simultaneous_rebalance_1_10_0() {
    let s = deprecated(3, 2);
    let r = allocations(1, 10, 0);
    assert_eq!(rebalance(&s, &r, &[]), ids(&[2, 3]));
    assert_eq!(rebalance(&s, &r, &[2, 3]), ids(&[]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:162: "not pick shards that are in progress [10,
/// 0, 0]".
///
/// Threshold 3, max 4, 002 and 003 in progress: A has 8 free, min(min(5, 3), 4 - 2) = 2, the
/// lowest free ids 001 and 004 (SC:374, 382).
#[test]
fn deprecated_least_shard_allocation_strategy_not_pick_shards_that_are_in_progress_10_0_0() {
    let s = deprecated(3, 4);
    assert_eq!(rebalance(&s, &allocations(10, 0, 0), &[2, 3]), ids(&[1, 4]));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:168: "prefer least shards, latest version, non
/// downed, leaving or exiting nodes".
///
/// The same `ShardSuitabilityOrdering` case as Spec:223, through the deprecated strategy's
/// `allocate_shard` (the same ALSAS:41-54).
#[test]
fn deprecated_least_shard_allocation_strategy_prefer_least_shards_latest_version_not_leaving() {
    let (entries, expected) = suitability_case();
    assert_eq!(suitability_order(&deprecated(1, 3), &entries), expected);
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:207: "not rebalance when rolling update in
/// progress".
///
/// Threshold 2, max 100: two app versions among the regions' members, nothing moves (SC:369).
#[test]
fn deprecated_least_shard_allocation_strategy_not_rebalance_when_rolling_update_in_progress() {
    assert_not_during_rolling_update(&deprecated(2, 100));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:228: "not rebalance when regions are
/// unreachable".
///
/// Threshold 2, max 100: B is unreachable, nothing moves.
#[test]
fn deprecated_least_shard_allocation_strategy_not_rebalance_when_regions_are_unreachable() {
    assert_not_with_unreachable_region(&deprecated(2, 100));
}

/// DeprecatedLeastShardAllocationStrategy, DSpec:243: "not rebalance when members are joining
/// dc".
///
/// Threshold 2, max 100: B is Joining, nothing moves.
#[test]
fn deprecated_least_shard_allocation_strategy_not_rebalance_when_members_are_joining_dc() {
    assert_not_while_joining(&deprecated(2, 100));
}

#[test]
fn the_conformance_table_is_current() {
    let port = conformance::Port {
        title: "Conformance: Akka's least-shard allocation strategy specs against the model",
        about: "The cases are those of Akka's `LeastShardAllocationStrategySpec` and \
                `DeprecatedLeastShardAllocationStrategySpec` at akka/akka 9892c5e415, ported in \
                `crates/core/tests/allocation_spec.rs` as tests of \
                `protocol::allocation::LeastShardAllocationStrategy` (`Spec:N` and `DSpec:N` are \
                the lines of the two spec files; the file's header says how a case becomes a \
                test).",
        file: "allocation_spec.rs",
        suites: SUITES,
        listed: PORTED,
        not_expressible: DEPARTURES,
    };
    let table = conformance::report(&port, include_str!("allocation_spec.rs"));
    conformance::check("allocation.md", "allocation_spec.rs", &table);
}
