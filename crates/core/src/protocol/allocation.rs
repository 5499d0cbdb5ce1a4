//! Shard allocation strategies (docs/akka-reference.md §10). Pure functions of the coordinator's view:
//! no time, no randomness, no I/O. Ties are broken by the suitability ordering of §10.1, so the
//! result never depends on map iteration order.

use crate::ids::{RegionRef, ShardId};
use crate::protocol::{Member, MemberStatus};
use serde::{Deserialize, Serialize};
use std::cmp::{min, Reverse};
use std::collections::BTreeSet;

/// One region as the strategy sees it (Akka's `RegionEntry`, MIX:30-55).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionEntry {
    /// The region (node and incarnation) shards may be allocated to or rebalanced from.
    pub region: RegionRef,
    /// The member's age: lower is older (Akka's `upNumber`).
    pub up_number: u32,
    /// The member is Leaving, Exiting or Down (sorted last).
    pub leaving: bool,
    /// The member's app version (`akka.cluster.app-version`): the highest sorts first (§10.1).
    pub app_version: u32,
    /// Shards allocated to the region, in allocation order (oldest first).
    pub shards: Vec<ShardId>,
}

/// What the strategy is told about the cluster besides the allocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterHealth {
    /// `isAGoodTimeToRebalance` (MIX; see [`is_a_good_time_to_rebalance`]). When false,
    /// `rebalance` returns nothing.
    pub good_time_to_rebalance: bool,
}

/// Akka's `isAGoodTimeToRebalance(regionEntries)` (ClusterShardAllocationMixin, PR akka#29548,
/// 2.6.10; §12 B38): a rebalance only when
/// - there is a region at all (an empty list is not a good time: akka#29709 threw on it),
/// - every region's member runs the same app version (no rolling update in progress; members
///   without a region, such as proxy-only ones or joining ones, are not looked at),
/// - no member is unreachable in the coordinator's view (a hand-off needs every region's and
///   proxy's ack), and
/// - no member is Joining (it should be Up soon; Akka also counts WeaklyUp, not modelled).
///
/// `members` is the coordinator node's view, `unreachable` its unreachable members.
pub fn is_a_good_time_to_rebalance(
    entries: &[RegionEntry],
    members: &[Member],
    unreachable: &[RegionRef],
) -> bool {
    let Some(first) = entries.first() else {
        return false;
    };
    let same_version = entries.iter().all(|e| e.app_version == first.app_version);
    let reachable = !members.iter().any(|m| unreachable.contains(&m.region()));
    let joining = members.iter().any(|m| m.status == MemberStatus::Joining);
    same_version && reachable && !joining
}

/// The pluggable strategy (Akka's `ShardAllocationStrategy`). Akka returns a `Future`; ours
/// returns a value.
pub trait ShardAllocationStrategy: Send {
    /// The region that should host `shard`, or `None` to leave the request unanswered (Akka
    /// retries after 50 ms when it has no region entries).
    fn allocate_shard(
        &self,
        requester: RegionRef,
        shard: ShardId,
        regions: &[RegionEntry],
    ) -> Option<RegionRef>;

    /// The shards to hand off now, given those already being rebalanced.
    fn rebalance(
        &self,
        regions: &[RegionEntry],
        in_progress: &BTreeSet<ShardId>,
        health: ClusterHealth,
    ) -> BTreeSet<ShardId>;
}

/// Regions in Akka's `ShardSuitabilityOrdering` (docs/akka-reference.md §10.1, MIX:30-55), most
/// suitable first; `by_app_version` false drops step 2 (Akka before 2.6.10, §12 B38).
fn suitability_sorted(regions: &[RegionEntry], by_app_version: bool) -> Vec<&RegionEntry> {
    // docs/akka-reference.md §10.1: not leaving first; the highest app version first; fewer shards
    // first; older (lower up_number) first; then region ordering, which makes the order total.
    let mut sorted: Vec<&RegionEntry> = regions.iter().collect();
    sorted.sort_by_key(|e| {
        let version = if by_app_version { e.app_version } else { 0 };
        (
            e.leaving,
            Reverse(version),
            e.shards.len(),
            e.up_number,
            e.region,
        )
    });
    sorted
}

/// Settings of [`LeastShardAllocationStrategy`]
/// (`akka.cluster.sharding.least-shard-allocation-strategy.*`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct LeastShardSettings {
    /// `rebalance-threshold`: old algorithm only; rebalance when the difference exceeds this.
    pub rebalance_threshold: u32,
    /// `max-simultaneous-rebalance`: old algorithm only; cap on shards being rebalanced at once.
    pub max_simultaneous_rebalance: u32,
    /// `rebalance-absolute-limit`: 0 selects the old (deprecated) algorithm of §10.3; a positive
    /// value selects the new algorithm of §10.4 and caps the shards moved per round.
    pub rebalance_absolute_limit: u32,
    /// `rebalance-relative-limit`: new algorithm only; fraction of all shards moved per round.
    pub rebalance_relative_limit: f64,
}

impl Default for LeastShardSettings {
    /// Akka's reference.conf defaults (threshold 1, max-simultaneous 3, absolute 0, relative 0.1).
    fn default() -> Self {
        LeastShardSettings {
            rebalance_threshold: 1,
            max_simultaneous_rebalance: 3,
            rebalance_absolute_limit: 0,
            rebalance_relative_limit: 0.1,
        }
    }
}

/// Akka's `LeastShardAllocationStrategy`: allocate to the most suitable (least loaded) region and
/// rebalance from the most loaded ones, with the old or new rebalance algorithm (§10.3 / §10.4).
#[derive(Clone, Debug, PartialEq)]
pub struct LeastShardAllocationStrategy {
    /// The settings the strategy was built with.
    pub settings: LeastShardSettings,
    /// The suitability ordering prefers regions on the highest app version (2.6.10, PR
    /// akka#29548). Off: Akka before 2.6.10 (the `rebalance-during-rolling-update` option).
    pub prefers_newest_app_version: bool,
    /// The `new-allocation-rounds-down` mutation: the new algorithm's `optimal` is ⌊N / R⌋.
    pub optimal_rounds_down: bool,
}

impl LeastShardAllocationStrategy {
    /// A strategy with the given settings (Akka's current ordering).
    pub fn new(settings: LeastShardSettings) -> Self {
        LeastShardAllocationStrategy {
            settings,
            prefers_newest_app_version: true,
            optimal_rounds_down: false,
        }
    }

    fn sorted<'a>(&self, regions: &'a [RegionEntry]) -> Vec<&'a RegionEntry> {
        suitability_sorted(regions, self.prefers_newest_app_version)
    }

    /// The deprecated `ShardCoordinator.LeastShardAllocationStrategy` (2.5.20+, with the 2.6.10
    /// suitability ordering and `isAGoodTimeToRebalance`).
    fn rebalance_old(
        &self,
        regions: &[RegionEntry],
        in_progress: &BTreeSet<ShardId>,
        health: ClusterHealth,
    ) -> BTreeSet<ShardId> {
        // docs/akka-reference.md §10.3, "2.5.20+ / current deprecated" pseudocode.
        let max_sim = i64::from(self.settings.max_simultaneous_rebalance);
        let threshold = i64::from(self.settings.rebalance_threshold);
        let in_progress_len = i64::try_from(in_progress.len()).unwrap_or(i64::MAX);
        if in_progress_len >= max_sim {
            return BTreeSet::new();
        }
        let sorted = self.sorted(regions);
        if !health.good_time_to_rebalance {
            return BTreeSet::new();
        }
        // Akka throws on an empty allocation map (the future fails); we rebalance nothing.
        let Some(least) = sorted.first() else {
            return BTreeSet::new();
        };
        // `maxBy` keeps the first maximal element in (suitability) iteration order; replacing
        // only on strictly greater does the same (a maximum of 0 shards is the empty list anyway).
        let mut most: Vec<ShardId> = Vec::new();
        for entry in &sorted {
            let mut free = entry.shards.clone();
            free.retain(|s| !in_progress.contains(s));
            if free.len() > most.len() {
                most = free;
            }
        }
        let diff = most.len() as i64 - least.shards.len() as i64;
        if diff <= threshold {
            // strictly greater is required (akka#26012)
            return BTreeSet::new();
        }
        let n = min(min(diff - threshold, threshold), max_sim - in_progress_len);
        most.sort(); // the lowest shard ids
        most.into_iter()
            .take(usize::try_from(n).unwrap_or(0))
            .collect()
    }

    /// The new algorithm (internal `LeastShardAllocationStrategy`, akka#29543).
    fn rebalance_new(
        &self,
        regions: &[RegionEntry],
        in_progress: &BTreeSet<ShardId>,
        health: ClusterHealth,
    ) -> BTreeSet<ShardId> {
        // docs/akka-reference.md §10.4
        if !in_progress.is_empty() {
            return BTreeSet::new(); // one round at a time
        }
        let sorted = self.sorted(regions);
        if !health.good_time_to_rebalance {
            return BTreeSet::new();
        }
        let shard_count: usize = sorted.iter().map(|e| e.shards.len()).sum();
        let region_count = sorted.len();
        if region_count == 0 || shard_count == 0 {
            return BTreeSet::new();
        }
        // limit(N) = max(1, min(floor(relative * N), absolute)); `as` truncates like Scala's toInt
        // and saturates (NaN -> 0), so odd relative limits cannot panic.
        let relative = (self.settings.rebalance_relative_limit * shard_count as f64) as i64;
        let absolute = i64::from(self.settings.rebalance_absolute_limit);
        let limit = usize::try_from(relative.min(absolute).max(1)).unwrap_or(1);
        let optimal = if self.optimal_rounds_down {
            shard_count / region_count // broken variant (tests only)
        } else {
            shard_count.div_ceil(region_count)
        };

        // Phase 1: the oldest allocations above `optimal` of every over-loaded region.
        let mut selected: Vec<ShardId> = Vec::new();
        for entry in &sorted {
            if entry.shards.len() > optimal {
                let excess = entry.shards.len() - optimal;
                selected.extend(entry.shards.iter().take(excess));
            }
        }
        let result1: BTreeSet<ShardId> = selected.into_iter().take(limit).collect();
        if !result1.is_empty() {
            return result1;
        }

        // Phase 2: regions at least 2 below optimal take one head shard from each full region.
        let below: usize = sorted
            .iter()
            .map(|e| optimal.saturating_sub(1).saturating_sub(e.shards.len()))
            .sum();
        if below == 0 {
            return BTreeSet::new();
        }
        sorted
            .iter()
            .filter(|e| e.shards.len() >= optimal)
            .filter_map(|e| e.shards.first().copied())
            .take(below.min(limit))
            .collect()
    }
}

impl ShardAllocationStrategy for LeastShardAllocationStrategy {
    fn allocate_shard(
        &self,
        _requester: RegionRef,
        _shard: ShardId,
        regions: &[RegionEntry],
    ) -> Option<RegionRef> {
        // docs/akka-reference.md §10.2: the most suitable region; the requester is ignored.
        self.sorted(regions).first().map(|e| e.region)
    }

    fn rebalance(
        &self,
        regions: &[RegionEntry],
        in_progress: &BTreeSet<ShardId>,
        health: ClusterHealth,
    ) -> BTreeSet<ShardId> {
        // docs/akka-reference.md §10.4: the new algorithm is enabled by rebalance-absolute-limit > 0.
        if self.settings.rebalance_absolute_limit == 0 {
            self.rebalance_old(regions, in_progress, health)
        } else {
            self.rebalance_new(regions, in_progress, health)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{NodeId, NodeInc};

    const UP: ClusterHealth = ClusterHealth {
        good_time_to_rebalance: true,
    };

    fn region(i: u32) -> RegionRef {
        RegionRef {
            node: NodeId(i),
            inc: NodeInc(1),
        }
    }

    /// Regions A, B, C, ... (node i, up_number i, A oldest); shards numbered from 1 across them.
    fn allocations(counts: &[u32]) -> Vec<RegionEntry> {
        let mut next = 1;
        let mut out = Vec::new();
        for (i, &n) in (1u32..).zip(counts) {
            let shards = (next..next + n).map(ShardId).collect();
            next += n;
            out.push(RegionEntry {
                region: region(i),
                up_number: i,
                leaving: false,
                app_version: 0,
                shards,
            });
        }
        out
    }

    fn ids(v: &[u32]) -> BTreeSet<ShardId> {
        v.iter().copied().map(ShardId).collect()
    }

    fn old(threshold: u32, max: u32) -> LeastShardAllocationStrategy {
        LeastShardAllocationStrategy::new(LeastShardSettings {
            rebalance_threshold: threshold,
            max_simultaneous_rebalance: max,
            ..LeastShardSettings::default()
        })
    }

    fn new(absolute: u32, relative: f64) -> LeastShardAllocationStrategy {
        LeastShardAllocationStrategy::new(LeastShardSettings {
            rebalance_absolute_limit: absolute,
            rebalance_relative_limit: relative,
            ..LeastShardSettings::default()
        })
    }

    /// Akka's `afterRebalance`: deallocate, then allocate each shard (ascending) to the choice.
    fn after(
        s: &LeastShardAllocationStrategy,
        regions: &[RegionEntry],
        moved: &BTreeSet<ShardId>,
    ) -> Vec<RegionEntry> {
        let mut out = regions.to_vec();
        for e in &mut out {
            e.shards.retain(|x| !moved.contains(x));
        }
        for &shard in moved {
            let to = s.allocate_shard(region(99), shard, &out).expect("a region");
            out.iter_mut()
                .filter(|e| e.region == to)
                .for_each(|e| e.shards.push(shard));
        }
        out
    }

    fn sizes(regions: &[RegionEntry]) -> Vec<usize> {
        regions.iter().map(|e| e.shards.len()).collect()
    }

    #[test]
    fn suitability_order() {
        // docs/akka-reference.md §10.1
        let mut r = allocations(&[0, 2, 1, 0, 0]);
        r[0].leaving = true;
        r[4].up_number = 0; // E is the oldest
        let order = |r: &[RegionEntry]| -> Vec<u32> {
            suitability_sorted(r, true)
                .iter()
                .map(|e| e.region.node.0)
                .collect()
        };
        assert_eq!(order(&r), vec![5, 4, 3, 2, 1]);
        r[3].up_number = 0; // D and E equally old: region ordering decides
        assert_eq!(order(&r), vec![4, 5, 3, 2, 1]);
    }

    #[test]
    fn allocate_shard_picks_most_suitable() {
        // docs/akka-reference.md §10.2
        let s = new(0, 0.1);
        assert_eq!(
            s.allocate_shard(region(1), ShardId(3), &allocations(&[1, 1, 0])),
            Some(region(3))
        );
        assert_eq!(
            s.allocate_shard(region(3), ShardId(1), &allocations(&[0, 0, 0])),
            Some(region(1))
        );
        let mut r = allocations(&[0, 0]);
        r[0].up_number = 7; // B is now older
        assert_eq!(s.allocate_shard(region(1), ShardId(1), &r), Some(region(2)));
        let mut r = allocations(&[0, 5]);
        r[0].leaving = true;
        assert_eq!(s.allocate_shard(region(1), ShardId(9), &r), Some(region(2)));
        r[1].leaving = true; // all leaving: least loaded of them
        assert_eq!(s.allocate_shard(region(1), ShardId(9), &r), Some(region(1)));
        assert_eq!(s.allocate_shard(region(1), ShardId(1), &[]), None);
    }

    /// Beyond Akka's spec vectors (whose thresholds of 1 and 2 give the same count for
    /// `diff - threshold` and `diff / threshold`, so a cargo-mutants survivor went unseen):
    /// `min(min(most - least - threshold, threshold), max - in progress)` (§10.3) with
    /// threshold 3 and 8 against 0 shards moves three, and with 5 against 0 moves two.
    #[test]
    fn deprecated_rebalance_count_follows_the_formula() {
        let got = old(3, 10).rebalance(&allocations(&[8, 0]), &BTreeSet::new(), UP);
        assert_eq!(got, ids(&[1, 2, 3]));
        let got = old(3, 10).rebalance(&allocations(&[5, 0]), &BTreeSet::new(), UP);
        assert_eq!(got, ids(&[1, 2]));
        // max-simultaneous-rebalance caps it: 2 allowed, 1 in progress.
        let got = old(3, 2).rebalance(&allocations(&[8, 0]), &ids(&[9]), UP);
        assert_eq!(got, ids(&[1]));
    }

    #[test]
    fn deprecated_spec_vectors() {
        // docs/akka-reference.md §10.3 (DeprecatedLeastShardAllocationStrategySpec; max 10 unless given)
        type Step = (&'static [u32], &'static [u32]); // (in progress, expected)
        #[rustfmt::skip]
        let cases: &[(u32, u32, &[u32], &[Step])] = &[
            (1, 10, &[2, 0, 0], &[(&[], &[1]), (&[1], &[])]),
            (1, 10, &[1, 1, 0], &[(&[], &[])]),
            (1, 10, &[1, 2, 0], &[(&[], &[2]), (&[2], &[])]),
            (1, 10, &[3, 0, 0], &[(&[], &[1]), (&[1], &[2])]),
            (1, 10, &[4, 4, 0], &[(&[], &[1]), (&[1], &[5])]),
            (1, 10, &[4, 4, 2], &[(&[], &[1]), (&[1], &[5])]),
            (2, 10, &[1, 2, 0], &[(&[], &[])]),
            (2, 10, &[1, 3, 0], &[(&[], &[2]), (&[2], &[])]),
            (2, 10, &[2, 2, 0], &[(&[], &[])]),
            (2, 10, &[3, 3, 0], &[(&[], &[1]), (&[1], &[4]), (&[1, 4], &[])]),
            (2, 10, &[4, 4, 0], &[(&[], &[1, 2]), (&[1, 2], &[5, 6]), (&[1, 2, 5, 6], &[])]),
            (2, 10, &[5, 5, 0], &[(&[], &[1, 2]), (&[1, 2], &[6, 7]), (&[1, 2, 6, 7], &[3])]),
            (2, 100, &[50, 50, 0], &[(&[], &[1, 2]), (&[1, 2], &[51, 52]),
                                     (&[1, 2, 51, 52], &[3, 4])]),
            (3, 2, &[1, 10, 0], &[(&[], &[2, 3]), (&[2, 3], &[])]),
            (3, 4, &[10, 0, 0], &[(&[2, 3], &[1, 4])]),
        ];
        for &(threshold, max, counts, steps) in cases {
            let (s, r) = (old(threshold, max), allocations(counts));
            for &(in_progress, expected) in steps {
                let got = s.rebalance(&r, &ids(in_progress), UP);
                assert_eq!(
                    got,
                    ids(expected),
                    "threshold {threshold} max {max} {counts:?} {in_progress:?}"
                );
            }
        }
        assert_eq!(
            old(3, 10).allocate_shard(region(1), ShardId(3), &allocations(&[1, 1, 0])),
            Some(region(3))
        );
    }

    #[test]
    fn new_spec_vectors() {
        // docs/akka-reference.md §10.4 (LeastShardAllocationStrategySpec; no limits = 1000 / 1.0).
        // Each round: expected result, then sizes after moving it; the next round starts there.
        let fifty: Vec<u32> = (1..=16).chain(51..=66).collect();
        type Round = (Vec<u32>, Vec<usize>); // (expected, sizes after the move)
        #[rustfmt::skip]
        let cases: Vec<(u32, f64, &[u32], Vec<Round>)> = vec![
            (1000, 1.0, &[1, 2, 0], vec![(vec![2], vec![1, 1, 1])]),
            (1000, 1.0, &[2, 0, 0], vec![(vec![1], vec![1, 1, 0])]),
            (1000, 1.0, &[1, 1, 0], vec![(vec![], vec![1, 1, 0])]),
            (1000, 1.0, &[3, 0, 0], vec![(vec![1, 2], vec![1, 1, 1])]),
            (1000, 1.0, &[4, 4, 0], vec![(vec![1, 5], vec![3, 3, 2])]),
            (1000, 1.0, &[4, 4, 2], vec![(vec![1], vec![3, 4, 3])]),
            (1000, 1.0, &[5, 5, 0], vec![(vec![1, 6], vec![4, 4, 2]), (vec![2], vec![3, 4, 3])]),
            (1000, 1.0, &[50, 50, 0], vec![(fifty, vec![34, 34, 32]),
                                           (vec![17], vec![33, 34, 33])]),
            (3, 1.0, &[1, 9, 0], vec![(vec![2, 3, 4], vec![2, 6, 2])]),
            (5, 0.3, &[1, 9, 0], vec![(vec![2, 3, 4], vec![2, 6, 2])]),
        ];
        for (absolute, relative, counts, rounds) in cases {
            let (s, mut r) = (new(absolute, relative), allocations(counts));
            for (expected, after_sizes) in rounds {
                let got = s.rebalance(&r, &BTreeSet::new(), UP);
                assert_eq!(got, ids(&expected), "{absolute}/{relative} {counts:?}");
                r = after(&s, &r, &got);
                assert_eq!(sizes(&r), after_sizes, "{absolute}/{relative} {counts:?}");
            }
        }
        // one round at a time
        assert_eq!(
            new(1000, 1.0).rebalance(&allocations(&[10, 0, 0]), &ids(&[2, 3]), UP),
            ids(&[])
        );
    }

    #[test]
    fn no_rebalance_at_a_bad_time() {
        let bad = ClusterHealth {
            good_time_to_rebalance: false,
        };
        let r = allocations(&[5, 5, 0]);
        assert!(old(1, 10).rebalance(&r, &BTreeSet::new(), bad).is_empty());
        assert!(new(1000, 1.0)
            .rebalance(&r, &BTreeSet::new(), bad)
            .is_empty());
    }

    fn member(i: u32, status: MemberStatus, app_version: u32) -> Member {
        Member {
            node: NodeId(i),
            inc: NodeInc(1),
            up_number: i,
            status,
            hosting: true,
            app_version,
        }
    }

    #[test]
    fn is_a_good_time_to_rebalance_vectors() {
        // §12 B38, MIX `isAGoodTimeToRebalance` (PR akka#29548, akka#29709).
        let up = |v: &[u32]| -> Vec<Member> {
            (1u32..)
                .zip(v)
                .map(|(i, &a)| member(i, MemberStatus::Up, a))
                .collect()
        };
        let entries = |v: &[u32]| -> Vec<RegionEntry> {
            let mut r = allocations(&vec![2; v.len()]);
            for (e, &a) in r.iter_mut().zip(v) {
                e.app_version = a;
            }
            r
        };
        // One version, all reachable, none joining: a good time.
        assert!(is_a_good_time_to_rebalance(
            &entries(&[1, 1, 1]),
            &up(&[1, 1, 1]),
            &[]
        ));
        // A rolling update in progress: two versions among the regions.
        assert!(!is_a_good_time_to_rebalance(
            &entries(&[1, 2, 1]),
            &up(&[1, 2, 1]),
            &[]
        ));
        // Versions of members without a region (proxy-only, joining) are not looked at.
        let mut m = up(&[1, 1, 1]);
        m.push(Member {
            hosting: false,
            ..member(9, MemberStatus::Up, 2)
        });
        assert!(is_a_good_time_to_rebalance(&entries(&[1, 1, 1]), &m, &[]));
        // An unreachable member (a region's or a proxy's: a hand-off needs every ack).
        assert!(!is_a_good_time_to_rebalance(
            &entries(&[1, 1, 1]),
            &m,
            &[region(9)]
        ));
        assert!(!is_a_good_time_to_rebalance(
            &entries(&[1, 1, 1]),
            &m,
            &[region(2)]
        ));
        // An unreachable node that is no longer a member does not count.
        assert!(is_a_good_time_to_rebalance(
            &entries(&[1, 1, 1]),
            &m,
            &[region(42)]
        ));
        // A member joining.
        m.push(member(10, MemberStatus::Joining, 1));
        assert!(!is_a_good_time_to_rebalance(&entries(&[1, 1, 1]), &m, &[]));
        // akka#29709: no region at all is not a good time (and does not panic).
        assert!(!is_a_good_time_to_rebalance(&[], &up(&[1]), &[]));
    }

    #[test]
    fn allocation_prefers_the_newest_app_version() {
        // §10.1 step 2 (MIX:30-55): the highest app version first, then fewer shards; leaving
        // members still last.
        let mut r = allocations(&[0, 3, 5]);
        r[2].app_version = 2; // C runs the new version, with the most shards
        let s = new(0, 0.1);
        assert_eq!(
            s.allocate_shard(region(1), ShardId(99), &r),
            Some(region(3))
        );
        r[2].leaving = true; // ... but it is leaving
        assert_eq!(
            s.allocate_shard(region(1), ShardId(99), &r),
            Some(region(1))
        );
        // Akka before 2.6.10 (`rebalance-during-rolling-update`): no version preference.
        r[2].leaving = false;
        let pre = LeastShardAllocationStrategy {
            prefers_newest_app_version: false,
            ..new(0, 0.1)
        };
        assert_eq!(
            pre.allocate_shard(region(1), ShardId(99), &r),
            Some(region(1))
        );
        // The order itself: C (the newest) first, then by shard count.
        let order: Vec<u32> = suitability_sorted(&r, true)
            .iter()
            .map(|e| e.region.node.0)
            .collect();
        assert_eq!(order, vec![3, 1, 2]);
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let none = BTreeSet::new();
        for s in [
            old(1, 3),
            old(0, 0),
            new(1000, 1.0),
            new(1, f64::NAN),
            new(u32::MAX, -1.0),
        ] {
            assert!(s.rebalance(&[], &none, UP).is_empty());
            assert!(s.rebalance(&allocations(&[0, 0]), &none, UP).is_empty());
            let _ = s.rebalance(&allocations(&[7, 0]), &ids(&[40, 41]), UP);
            let _ = s.rebalance(&allocations(&[7]), &none, UP);
        }
        // unknown in-progress shards still count against max-simultaneous-rebalance
        assert_eq!(
            old(1, 3).rebalance(&allocations(&[3, 0]), &ids(&[40]), UP),
            ids(&[1])
        );
        assert!(old(1, 3)
            .rebalance(&allocations(&[3, 0]), &ids(&[40, 41, 42]), UP)
            .is_empty());
    }

    #[test]
    fn settings_defaults_and_kebab_case() {
        let d = LeastShardSettings::default();
        let got = (
            d.rebalance_threshold,
            d.max_simultaneous_rebalance,
            d.rebalance_absolute_limit,
        );
        assert_eq!((got, d.rebalance_relative_limit), ((1, 3, 0), 0.1));
        let json = r#"{"rebalance-absolute-limit": 20, "max-simultaneous-rebalance": 5}"#;
        let s: LeastShardSettings = serde_json::from_str(json).unwrap();
        assert_eq!(
            s,
            LeastShardSettings {
                rebalance_absolute_limit: 20,
                max_simultaneous_rebalance: 5,
                ..d
            }
        );
        assert!(serde_json::from_str::<LeastShardSettings>(r#"{"threshold": 1}"#).is_err());
    }
}
