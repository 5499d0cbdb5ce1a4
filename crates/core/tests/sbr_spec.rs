//! Akka's split-brain-resolver unit specs as conformance vectors for the model's downing
//! decision, `shardsim_core::membership::decide` (crates/core/src/membership/downing.rs).
//!
//! # What is ported
//!
//! Every case of Akka's `SplitBrainResolverSpec` (98) and `LeaseMajoritySpec` (2) at `akka/akka`
//! commit `9892c5e415e41599db095469c5963f155a0d736d` (the SBR folders last changed in
//! `3c1e5d23f6`), from `akka-cluster/src/test/scala/akka/cluster/sbr/`: the spec files, their
//! members in `TestAddresses.scala`, and the rules they pin in `akka-cluster/src/main/scala/
//! akka/cluster/sbr/DowningStrategy.scala`, `SplitBrainResolver.scala` and
//! `SplitBrainResolverProvider.scala`. Citations: `Spec:` is the line of a test's name in
//! `SplitBrainResolverSpec.scala`; `DS:`, `SBR:`, `SET:` and `Provider:` are lines of
//! `DowningStrategy.scala`, `SplitBrainResolver.scala`, `SplitBrainResolverSettings.scala` and
//! `SplitBrainResolverProvider.scala`. The expected values were read from the Scala sources; no
//! JVM ran them. A test is named after its Akka case: the suite, `must`, the test's words.
//!
//! # Members
//!
//! A..G are nodes 1..7 (incarnation 1), so the address order is A < B < ... < G, as Akka's
//! `Member.ordering` has it for hosts a..g. The up-numbers are `TestAddresses`' (A 5, B 4, C 3,
//! D 2, E 1, F 5, G 6); the model takes the oldest by (up-number, address) (downing.rs:443-447),
//! Akka's `Member.ageOrdering`: E is the oldest, and A counts as older than F. A member is written
//! as its letter, with a suffix for Akka's status helpers: `j` Joining (up-number 0, the model's
//! "not yet Up"), `l` Leaving, `x` Exiting, `d` Down; no suffix is Up. Roles, WeaklyUp and data
//! centres have no counterpart in the model (see the departures).
//!
//! # A side's view (Akka's `StrategySetup.strategy(side)`, Spec:161-178)
//!
//! A case lists its sides; "from side S" builds one `GossipState` holding every member of every
//! side, one Unreachable record (version 1) from the first-listed member of S (Akka's `S.head`)
//! to each member of the other sides, the case's indirectly connected records (observer ->
//! subject), and S as the seen set. `decide` gets the unreachable set the state machine hands it:
//! the subjects of unreachable records whose observer and subject are neither Down nor Removed
//! (the model's `GossipState::unreachable_live`, which is not public and is mirrored here).
//!
//! # The deciding node
//!
//! Akka's strategy decides with a `self` that is none of A..G, so never in its own unreachable
//! set. The model's `decide` takes `me` out of the unreachable set, as Akka's resolver does with
//! its own node (SBR:491); otherwise the decision does not depend on who makes it. A side decides
//! at its leader as the model picks it (gossip.rs `leader`): the lowest address among the side's
//! live members that no record names unreachable, Up or Leaving first; the side's first-listed
//! member when every member of the side is named. The resolver-actor cases ("Split Brain
//! Resolver") decide at the case's own `self` (A unless the case says otherwise), on the records
//! of its events and with no seen set (the actor never gets `SeenChanged`); their leadership,
//! ticks and timers are the state machine's, not `decide`'s.
//!
//! # Expected values
//!
//! Every assertion is Akka's: the downed set, compared as a set of members, and the decision
//! where the Scala test asserts it or it follows from the production code: DownUnreachable,
//! DownReachable (`Outcome::DownOwnSide`), DownAll, DownIndirectlyConnected. Where a Scala test
//! asserts only the decision, the downed set is the one `nodesToDown` gives for it (DS:260-285).
//! Akka decides DownIndirectlyConnected whenever some members are indirectly connected and
//! decides the rest in a second pass of `nodesToDown` (DS:287-322); the model does the same, and
//! its outcome is Akka's first decision. A second pass that is indirectly connected again makes
//! Akka throw and its resolver down everyone (SBR:436-444): the model's `Outcome::DownAll`.
//!
//! # Departures
//!
//! A case the model cannot express is in `DEPARTURES`, with why and Akka's lines. A case it
//! expresses but answers differently is ported with Akka's values and
//! `#[ignore = "departure: ..."]` naming Akka's lines and the model's ("IC": indirectly
//! connected); its doc says what the model gives instead (`cargo test -- --ignored` shows them
//! failing).
//! `every_catalogued_case_is_ported_or_a_departure` checks that the two lists cover all 100 cases.
//!
//! # The table
//!
//! `the_conformance_table_is_current` writes every case with its result to
//! `reports/conformance/split-brain-resolver.md` when `SHARDSIM_WRITE_REPORTS` is set, and fails
//! when the file is stale; it reads the ported cases from this file's test headers
//! (`Suite, Spec:N: "case"` and the `#[ignore]` reason), checked against `PORTED`.

use shardsim_core::ids::{NodeId, NodeInc};
use shardsim_core::membership::{
    decide, Decision, DowningFacts, GossipMember, GossipState, MemberStatus, NodeAddr, Outcome,
    ReachRecord, SbrStrategy,
};
use std::collections::BTreeSet;

mod conformance;

/// The cases of the two Akka specs: 98 in `SplitBrainResolverSpec`, 2 in `LeaseMajoritySpec`.
const CATALOGUE_TOTAL: usize = 100;

/// The suites (Akka's `"..." must { }` blocks, and `LeaseMajoritySpec`) with their case counts.
const SUITES: &[(&str, usize)] = &[
    ("StaticQuorum", 6),
    ("KeepMajority", 30),
    ("KeepOldest", 19),
    ("DownAllNodes", 2),
    ("LeaseMajority", 5),
    ("Strategy", 4),
    ("Split Brain Resolver", 31),
    ("Split Brain Resolver downing provider", 1),
    ("LeaseMajoritySpec", 2),
];

/// The cases the model cannot express, as (suite, Akka test name, why with Akka's file:line).
const DEPARTURES: &[(&str, &str, &str)] = &[
    (
        "StaticQuorum",
        "down unreachable when enough reachable nodes with role",
        "Spec:204; the model has no SBR role: SbrStrategy (mod.rs:113-131) has no role field, \
        and decide counts every member (downing.rs:230-243); Akka counts and picks among the \
        role's members only (DS:120-165)",
    ),
    (
        "KeepMajority",
        "down minority partition with role: {A*, B*} | {C, D*, E} => {A*, B*}",
        "Spec:295; the model has no SBR role: SbrStrategy (mod.rs:113-131) has no role field, \
        and decide counts every member (downing.rs:230-243); Akka counts and picks among the \
        role's members only (DS:120-165)",
    ),
    (
        "KeepMajority",
        "keep half with lowest address with role when equal size partition: {A, D*, E} | {B, C*} \
        => {B, C*}",
        "Spec:301; the model has no SBR role: SbrStrategy (mod.rs:113-131) has no role field, \
        and decide counts every member (downing.rs:230-243); Akka counts and picks among the \
        role's members only (DS:120-165)",
    ),
    (
        "KeepMajority",
        "down all when no node with role: {C} | {E} => {}",
        "Spec:309; the model has no SBR role: SbrStrategy (mod.rs:113-131) has no role field, \
        and decide counts every member (downing.rs:230-243); Akka counts and picks among the \
        role's members only (DS:120-165)",
    ),
    (
        "KeepOldest",
        "keep partition with oldest with role",
        "Spec:608; the model has no SBR role: SbrStrategy (mod.rs:113-131) has no role field, \
        and decide counts every member (downing.rs:230-243); Akka counts and picks among the \
        role's members only (DS:120-165)",
    ),
    (
        "LeaseMajority",
        "decide AcquireLeaseAndDownUnreachable, and DownReachable as reverse decision",
        "Spec:840; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "LeaseMajority",
        "try to keep half with lowest address when equal size partition",
        "Spec:863; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632; it also needs a role",
    ),
    (
        "LeaseMajority",
        "down indirectly connected: {(A, B), C} => {C}",
        "Spec:882; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "LeaseMajority",
        "down indirectly connected when combined with clean partition: {A, (B, C)} | {D, E} => \
        {A}",
        "Spec:897; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "LeaseMajority",
        "down indirectly connected to already downed node during partition: {A, B, C, D} | {(E, \
        F)} => {A, B, C, D}",
        "Spec:941; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "Strategy",
        "add and remove members with default Member ordering",
        "Spec:968; the model has no strategy object to add members to: decide is a pure function \
        of a GossipState (downing.rs:104), whose members map is keyed by address; Akka \
        DS:181-203",
    ),
    (
        "Strategy",
        "add and remove members with oldest Member ordering",
        "Spec:978; the model has no strategy object to add members to: decide is a pure function \
        of a GossipState (downing.rs:104), whose members map is keyed by address; Akka \
        DS:181-203",
    ),
    (
        "Strategy",
        "collect and filter members with default Member ordering",
        "Spec:1010; pins the strategy's member queries (includingPossiblyUp, \
        excludingPossiblyExiting: DS:108-165) on WeaklyUp members; the model has neither the \
        queries (private helpers of downing.rs) nor WeaklyUp (member.rs:9-22)",
    ),
    (
        "Strategy",
        "collect and filter members with oldest Member ordering",
        "Spec:1019; pins the strategy's member queries (includingPossiblyUp, \
        excludingPossiblyExiting: DS:108-165) on WeaklyUp members; the model has neither the \
        queries (private helpers of downing.rs) nor WeaklyUp (member.rs:9-22)",
    ),
    (
        "Split Brain Resolver",
        "have downRemovalMargin equal to stable-after",
        "Spec:1207; a provider setting (Provider:30-36), not a decision; the model derives the \
        margin from stable-after in its configuration (DowningProvider, mod.rs:146-170)",
    ),
    (
        "Split Brain Resolver",
        "not down unreachable when not leader",
        "Spec:1222; leadership of the resolver actor (SBR:323); in the model only the leader \
        runs the downing (mod.rs:766), decide has no leader input",
    ),
    (
        "Split Brain Resolver",
        "down unreachable when becoming leader",
        "Spec:1231; leadership of the resolver actor (SBR:323); in the model only the leader \
        runs the downing (mod.rs:766), decide has no leader input",
    ),
    (
        "Split Brain Resolver",
        "down unreachable after specified duration",
        "Spec:1244; stable-after timing of the resolver actor (SBR:211-244, 301-359); in the \
        model the wait is the state machine's (mod.rs:1411), not decide's",
    ),
    (
        "Split Brain Resolver",
        "down unreachable when becoming leader inbetween detection and specified duration",
        "Spec:1256; stable-after timing of the resolver actor (SBR:211-244, 301-359); in the \
        model the wait is the state machine's (mod.rs:1411), not decide's",
    ),
    (
        "Split Brain Resolver",
        "not down unreachable when loosing leadership inbetween detection and specified duration",
        "Spec:1270; stable-after timing of the resolver actor (SBR:211-244, 301-359); in the \
        model the wait is the state machine's (mod.rs:1411), not decide's",
    ),
    (
        "Split Brain Resolver",
        "down when becoming Weakly-Up leader",
        "Spec:1284; the model has no WeaklyUp status (member.rs:9-22); Akka SBR:553-555",
    ),
    (
        "Split Brain Resolver",
        "not down when unreachable become reachable inbetween detection and specified duration",
        "Spec:1297; stable-after timing of the resolver actor (SBR:211-244, 301-359); in the \
        model the wait is the state machine's (mod.rs:1411), not decide's",
    ),
    (
        "Split Brain Resolver",
        "not down when unreachable is removed inbetween detection and specified duration",
        "Spec:1310; stable-after timing of the resolver actor (SBR:211-244, 301-359); in the \
        model the wait is the state machine's (mod.rs:1411), not decide's",
    ),
    (
        "Split Brain Resolver",
        "not care about partition across data centers",
        "Spec:1373; the model has no data centres (Akka filters by self DC: DS:167-186, \
        SBR:549-591)",
    ),
    (
        "Split Brain Resolver",
        "not count members from other data centers",
        "Spec:1387; the model has no data centres (Akka filters by self DC: DS:167-186, \
        SBR:549-591)",
    ),
    (
        "Split Brain Resolver",
        "keep oldest in self data centers",
        "Spec:1401; the model has no data centres (Akka filters by self DC: DS:167-186, \
        SBR:549-591)",
    ),
    (
        "Split Brain Resolver",
        "log warning for data center unreachability",
        "Spec:1419; the model has no data centres (Akka filters by self DC: DS:167-186, \
        SBR:549-591); and it pins a log warning",
    ),
    (
        "Split Brain Resolver",
        "down all in self data centers",
        "Spec:1546; the model has no data centres (Akka filters by self DC: DS:167-186, \
        SBR:549-591)",
    ),
    (
        "Split Brain Resolver",
        "down all when unstable, scenario 1",
        "Spec:1557; the timing of down-all-when-unstable (SBR:196-205, 298-321), which is the \
        state machine's (membership/mod.rs `down_all_when_unstable`, tested in membership/tests.rs \
        `sbr_downs_everyone_when_reachability_stays_unstable`), not decide's",
    ),
    (
        "Split Brain Resolver",
        "down all when unstable, scenario 2",
        "Spec:1587; the timing of down-all-when-unstable (SBR:196-205, 298-321), which is the \
        state machine's (membership/mod.rs `down_all_when_unstable`, tested in membership/tests.rs \
        `sbr_downs_everyone_when_reachability_stays_unstable`), not decide's",
    ),
    (
        "Split Brain Resolver",
        "not down all when becoming stable again",
        "Spec:1629; the timing of down-all-when-unstable (SBR:196-205, 298-321), which is the \
        state machine's (membership/mod.rs `down_all_when_unstable`, tested in membership/tests.rs \
        `sbr_downs_everyone_when_reachability_stays_unstable`), not decide's",
    ),
    (
        "Split Brain Resolver",
        "down other side when lease can be acquired",
        "Spec:1662; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "Split Brain Resolver",
        "down own side when lease cannot be acquired",
        "Spec:1676; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "Split Brain Resolver",
        "down indirectly connected when lease can be acquired: {(A, B), C} => {C}",
        "Spec:1690; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "Split Brain Resolver",
        "down indirectly connected when lease cannot be acquired: {(A, B), C} => {C}",
        "Spec:1705; the model has no lease-majority strategy and no lease (SbrStrategy, \
        mod.rs:113-131); Akka DS:603-632",
    ),
    (
        "Split Brain Resolver downing provider",
        "be loadable through the cluster extension",
        "Spec:1724; loads the provider class through the Cluster extension (Provider:30-36): no \
        decision",
    ),
    (
        "LeaseMajoritySpec",
        "read the configured name",
        "LeaseMajoritySpec:31; the lease name setting (SET:99-102): the model has no lease",
    ),
    (
        "LeaseMajoritySpec",
        "use a safe name",
        "LeaseMajoritySpec:37; the lease name setting (SET:139): the model has no lease",
    ),
];

/// The cases ported as tests below, as (suite, Akka test name); a test that the model answers
/// differently is `#[ignore]`d with its reason.
const PORTED: &[(&str, &str)] = &[
    (
        "StaticQuorum",
        "down unreachable when enough reachable nodes",
    ),
    (
        "StaticQuorum",
        "down reachable when not enough reachable nodes",
    ),
    ("StaticQuorum", "down all if N > static-quorum.size * 2 - 1"),
    ("StaticQuorum", "handle joining"),
    ("StaticQuorum", "handle leaving/exiting"),
    (
        "KeepMajority",
        "down minority partition: {A, C, E} | {B, D} => {A, C, E}",
    ),
    (
        "KeepMajority",
        "down minority partition: {A, B} | {C, D, E} => {C, D, E}",
    ),
    (
        "KeepMajority",
        "down self when alone: {B} | {A, C} => {A, C}",
    ),
    (
        "KeepMajority",
        "keep half with lowest address when equal size partition: {A, B} | {C, D} => {A, B}",
    ),
    (
        "KeepMajority",
        "keep node with lowest address in two node cluster: {A} | {B} => {A}",
    ),
    (
        "KeepMajority",
        "not count joining node, but down it: {B, D} | {Aj, C} => {B, D}",
    ),
    (
        "KeepMajority",
        "down minority partition and joining node: {A, Bj} | {C, D, E} => {C, D, E}",
    ),
    (
        "KeepMajority",
        "down each part when split in 3 too small parts: {A, B} | {C, D} | {E} => {}",
    ),
    (
        "KeepMajority",
        "detect edge case of membership change: {A, B, F', G'} | {C, D, E} => {A, B, F, G}",
    ),
    (
        "KeepMajority",
        "detect edge case of membership change when equal size: {A, B, F'} | {C, D, E} => {A, B, \
        F}",
    ),
    (
        "KeepMajority",
        "detect safe edge case of membership change: {A, B} | {C, D, E, F'} => {C, D, E, F}",
    ),
    (
        "KeepMajority",
        "detect edge case of leaving/exiting membership change: {A', B} | {C, D} => {C, D}",
    ),
    ("KeepMajority", "down indirectly connected: {(A, B)} => {}"),
    (
        "KeepMajority",
        "down indirectly connected: {(A, B), C} => {C}",
    ),
    (
        "KeepMajority",
        "down indirectly connected: {(A, B, C)} => {}",
    ),
    (
        "KeepMajority",
        "down indirectly connected: {(A, B, C, D)} => {}",
    ),
    (
        "KeepMajority",
        "down indirectly connected: {(A, B, C), D, E} => {D, E}",
    ),
    (
        "KeepMajority",
        "down indirectly connected{A, (B, C), D, (E, F), G} => {A, D, G}",
    ),
    (
        "KeepMajority",
        "down indirectly connected, detected via seen: {(A, B, C)} => {}",
    ),
    (
        "KeepMajority",
        "down indirectly connected, detected via seen: {(A, B, C, D), E} => {E}",
    ),
    (
        "KeepMajority",
        "down indirectly connected when combined with crashed: {(A, B), D, E} | {C} => {D, E}",
    ),
    (
        "KeepMajority",
        "down indirectly connected when combined with clean partition: {A, (B, C)} | {D, E} => \
        {A}",
    ),
    (
        "KeepMajority",
        "down indirectly connected on minority side, when combined with clean partition: {A, (B, \
        C)} | {D, E, F, G} => {D, E, F, G}",
    ),
    (
        "KeepMajority",
        "down indirectly connected on majority side, when combined with clean partition: {A, B, \
        C} | {(D, E), F, G} => {F, G}",
    ),
    (
        "KeepMajority",
        "down indirectly connected spanning across a clean partition: {A, (B), C} | {D, (E, F), \
        G} => {D, G}",
    ),
    (
        "KeepMajority",
        "down indirectly connected, detected via seen, combined with clean partition: {A, B, C} \
        | {(D, E), (F, G)} => {}",
    ),
    (
        "KeepMajority",
        "double DownIndirectlyConnected when indirectly connected happens before clean \
        partition: {A, B, C} | {(D, E), (F, G)} => {}",
    ),
    ("KeepOldest", "keep partition with oldest"),
    ("KeepOldest", "keep partition with oldest unless alone"),
    (
        "KeepOldest",
        "keep partition with oldest in two nodes cluster",
    ),
    ("KeepOldest", "keep one single oldest"),
    (
        "KeepOldest",
        "keep oldest even when alone when downIfAlone = false",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: keep partition with oldest, scenario 1",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: keep partition with oldest, scenario 2",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: keep partition with oldest, scenario 3",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: keep partition with oldest unless alone, scenario 1",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: keep partition with oldest unless alone, scenario 4",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: keep partition with oldest unless alone, scenario 3",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: DownReachable on both sides when oldest \
        leaving/exiting is alone",
    ),
    (
        "KeepOldest",
        "detect leaving/exiting edge case: when one single oldest",
    ),
    (
        "KeepOldest",
        "detect joining/up edge case: keep partition with oldest unless alone, scenario 1",
    ),
    (
        "KeepOldest",
        "detect joining/up edge case: keep oldest even when alone when downIfAlone = false",
    ),
    (
        "KeepOldest",
        "down indirectly connected: {(A, B), C} => {C}",
    ),
    (
        "KeepOldest",
        "down indirectly connected on younger side, when combined with clean partition: {A, (B, \
        C)} | {D, E, F, G} => {D, E, F, G}",
    ),
    (
        "KeepOldest",
        "down indirectly connected on oldest side, when combined with clean partition: {A, B, C} \
        | {(D, E), F, G} => {F, G}",
    ),
    ("DownAllNodes", "down all"),
    (
        "DownAllNodes",
        "down all when any indirectly connected: {(A, B), C} => {}",
    ),
    ("Split Brain Resolver", "down unreachable when leader"),
    (
        "Split Brain Resolver",
        "not down when unreachable is already Down",
    ),
    ("Split Brain Resolver", "down minority partition"),
    ("Split Brain Resolver", "keep partition with oldest"),
    (
        "Split Brain Resolver",
        "log warning if N > static-quorum.size * 2 - 1",
    ),
    (
        "Split Brain Resolver",
        "down indirectly connected: {(A, B), C} => {C}",
    ),
    (
        "Split Brain Resolver",
        "down indirectly connected when combined with crashed: {(A, B), D, E} | {C} => {D, E}",
    ),
    (
        "Split Brain Resolver",
        "down indirectly connected when combined with clean partition: {A, (B, C)} | {D, E} => \
        {A}",
    ),
    (
        "Split Brain Resolver",
        "down indirectly connected when combined with partition and exiting: {A, B, C, D} | {E, \
        F-exiting} => {A, B, C, D}",
    ),
    (
        "Split Brain Resolver",
        "down indirectly connected when combined with partition and exiting: {A, B, C, D} | \
        {E-exiting, F} => {A, B, C, D}",
    ),
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

// ---- strategies and outcomes ----

const KEEP_MAJORITY: SbrStrategy = SbrStrategy::KeepMajority;
/// Akka's default `down-if-alone = on`.
const KEEP_OLDEST: SbrStrategy = SbrStrategy::KeepOldest {
    down_if_alone: true,
};
const KEEP_OLDEST_EVEN_ALONE: SbrStrategy = SbrStrategy::KeepOldest {
    down_if_alone: false,
};
const QUORUM_2: SbrStrategy = SbrStrategy::StaticQuorum { quorum_size: 2 };
const QUORUM_3: SbrStrategy = SbrStrategy::StaticQuorum { quorum_size: 3 };
const DOWN_ALL: SbrStrategy = SbrStrategy::DownAll;

/// The decision, where the case gives one; `ANY` where it gives only the downed set.
const ANY: Option<Outcome> = None;
const DU: Option<Outcome> = Some(Outcome::DownUnreachable);
/// Akka's DownReachable.
const DR: Option<Outcome> = Some(Outcome::DownOwnSide);
const DA: Option<Outcome> = Some(Outcome::DownAll);
const DIC: Option<Outcome> = Some(Outcome::DownIndirectlyConnected);
const NOTHING: Option<Outcome> = Some(Outcome::Nothing);

// ---- members and views ----

/// A case's sides, each a list of members (`"A"`, `"Bj"`, ...).
type Sides<'a> = &'a [&'a [&'a str]];

/// Indirectly connected records, (observer, subject).
const NO_IC: &[(char, char)] = &[];
const AB_CYCLE: &[(char, char)] = &[('A', 'B'), ('B', 'A')];
const BC_CYCLE: &[(char, char)] = &[('B', 'C'), ('C', 'B')];
const DE_CYCLE: &[(char, char)] = &[('D', 'E'), ('E', 'D')];

const LETTERS: &str = "ABCDEFG";
/// `TestAddresses`' up-numbers of A..G.
const UP_NUMBERS: [u32; 7] = [5, 4, 3, 2, 1, 5, 6];

fn index(letter: char) -> usize {
    LETTERS
        .find(letter)
        .unwrap_or_else(|| panic!("member {letter:?} is not one of A..G"))
}

fn addr(letter: char) -> NodeAddr {
    let node = u32::try_from(index(letter) + 1).expect("seven members");
    NodeAddr {
        node: NodeId(node),
        inc: NodeInc(1),
    }
}

fn letter(a: NodeAddr) -> char {
    let i = usize::try_from(a.node.0)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .expect("a node of A..G");
    LETTERS.chars().nth(i).expect("a node of A..G")
}

/// The letters of `set`, in address order.
fn letters(set: &BTreeSet<NodeAddr>) -> String {
    set.iter().map(|a| letter(*a)).collect()
}

/// `"Cj"` → (C, Joining): the letter, then Akka's status helper as a suffix.
fn token(t: &str) -> (char, MemberStatus) {
    let mut chars = t.chars();
    let letter = chars.next().expect("a member token starts with its letter");
    let status = match chars.as_str() {
        "" => MemberStatus::Up,
        "j" => MemberStatus::Joining,
        "l" => MemberStatus::Leaving,
        "x" => MemberStatus::Exiting,
        "d" => MemberStatus::Down,
        other => panic!("unknown status suffix {other:?} in {t:?}"),
    };
    (letter, status)
}

fn gossip_member(letter: char, status: MemberStatus) -> GossipMember {
    GossipMember {
        // Joining: no up-number yet (the model's 0; Akka's Int.MaxValue), so never the oldest.
        up_number: if status == MemberStatus::Joining {
            0
        } else {
            UP_NUMBERS[index(letter)]
        },
        status,
        hosting: true,
        app_version: 0,
        down_reason: None,
    }
}

/// A gossip state with `members` and an Unreachable record (version 1) per `records` pair.
fn gossip(members: &[&str], records: &[(char, char)]) -> GossipState {
    let mut g = GossipState::default();
    for t in members {
        let (l, status) = token(t);
        let old = g.members.insert(addr(l), gossip_member(l, status));
        assert!(old.is_none(), "member {l} listed twice");
    }
    for &(o, s) in records {
        assert!(
            g.members.contains_key(&addr(o)) && g.members.contains_key(&addr(s)),
            "record {o} -> {s} about a non-member"
        );
        g.reachability.insert(
            (addr(o), addr(s)),
            ReachRecord {
                version: 1,
                unreachable: true,
            },
        );
    }
    g
}

/// Neither Down nor Removed (the model's `GossipState::is_live`).
fn is_live(g: &GossipState, a: NodeAddr) -> bool {
    g.members
        .get(&a)
        .is_some_and(|m| m.status < MemberStatus::Down)
}

/// The unreachable set the state machine hands `decide` (the model's
/// `GossipState::unreachable_live`): subjects of unreachable records whose observer and subject
/// are live.
fn unreachable_live(g: &GossipState) -> BTreeSet<NodeAddr> {
    g.reachability
        .iter()
        .filter(|((o, s), r)| r.unreachable && is_live(g, *o) && is_live(g, *s))
        .map(|((_, s), _)| *s)
        .collect()
}

/// The node that decides for `side` (see the module doc): the side's lowest-address live member
/// that no record by a live observer names unreachable, Up or Leaving first; else the side's
/// first-listed member.
fn decider(g: &GossipState, side: &[&str]) -> NodeAddr {
    let named: BTreeSet<NodeAddr> = g
        .reachability
        .iter()
        .filter(|((o, _), r)| r.unreachable && is_live(g, *o))
        .map(|((_, s), _)| *s)
        .collect();
    let mut clean: Vec<(NodeAddr, MemberStatus)> = side
        .iter()
        .map(|t| token(t))
        .map(|(l, status)| (addr(l), status))
        .filter(|(a, status)| *status < MemberStatus::Down && !named.contains(a))
        .collect();
    clean.sort();
    let head = side.first().expect("the deciding side is not empty");
    clean
        .iter()
        .find(|(_, status)| matches!(status, MemberStatus::Up | MemberStatus::Leaving))
        .or_else(|| clean.first())
        .map_or_else(|| addr(token(head).0), |(a, _)| *a)
}

fn decide_at(strategy: &SbrStrategy, g: &GossipState, me: NodeAddr) -> Decision {
    let unreachable = unreachable_live(g);
    decide(
        strategy,
        &DowningFacts {
            gossip: g,
            unreachable: &unreachable,
        },
        me,
    )
}

/// Asserts Akka's downed set (letters, any order) and, if given, Akka's decision.
fn check(d: &Decision, want: Option<Outcome>, downed: &str, what: &str) {
    let got: BTreeSet<NodeAddr> = d.downed.iter().copied().collect();
    assert_eq!(
        got.len(),
        d.downed.len(),
        "{what}: a member downed twice: {d:?}"
    );
    let want_set: BTreeSet<NodeAddr> = downed.chars().map(addr).collect();
    assert_eq!(letters(&got), letters(&want_set), "{what}: downed; {d:?}");
    if let Some(outcome) = want {
        assert_eq!(d.outcome, outcome, "{what}: outcome; {d:?}");
    }
}

/// The decision from side `from` (0-based) of `sides` with the indirectly connected `ic`.
fn decide_from(
    strategy: &SbrStrategy,
    sides: Sides<'_>,
    ic: &[(char, char)],
    from: usize,
) -> (Decision, NodeAddr) {
    let side = sides[from];
    let (head, _) = token(side.first().expect("the deciding side is not empty"));
    let members: Vec<&str> = sides.iter().flat_map(|s| s.iter().copied()).collect();
    let mut records: Vec<(char, char)> = ic.to_vec();
    for (i, other) in sides.iter().enumerate() {
        if i != from {
            records.extend(other.iter().map(|t| (head, token(t).0)));
        }
    }
    let mut g = gossip(&members, &records);
    g.seen = side.iter().map(|t| addr(token(t).0)).collect();
    let me = decider(&g, side);
    (decide_at(strategy, &g, me), me)
}

/// Akka's `assertDowningSide`, with the decision where the case gives it.
fn assert_side(
    strategy: &SbrStrategy,
    sides: Sides<'_>,
    ic: &[(char, char)],
    from: usize,
    want: Option<Outcome>,
    downed: &str,
) {
    let (d, me) = decide_from(strategy, sides, ic, from);
    let what = format!(
        "{strategy:?} from side {} {:?} at {}, sides {sides:?}, ic {ic:?}",
        from + 1,
        sides[from],
        letter(me)
    );
    check(&d, want, downed, &what);
}

/// Akka's `assertDowning`: every non-empty side downs `downed`.
fn assert_downing(strategy: &SbrStrategy, sides: Sides<'_>, ic: &[(char, char)], downed: &str) {
    for (from, side) in sides.iter().enumerate() {
        if !side.is_empty() {
            assert_side(strategy, sides, ic, from, ANY, downed);
        }
    }
}

/// A resolver-actor case: `me` decides on `members` and the `records` of its events.
fn assert_at(
    strategy: &SbrStrategy,
    members: &[&str],
    records: &[(char, char)],
    me: char,
    want: Option<Outcome>,
    downed: &str,
) {
    let g = gossip(members, records);
    let d = decide_at(strategy, &g, addr(me));
    let what = format!("{strategy:?} at {me}, members {members:?}, records {records:?}");
    check(&d, want, downed, &what);
}

// ---- the cases, in the spec's order ----

/// StaticQuorum, Spec:188: "down unreachable when enough reachable nodes".
///
/// Quorum 3: {A, C, E} keeps 5 - 2 = 3 and downs the other side; {B, D} has 2.
#[test]
fn static_quorum_must_down_unreachable_when_enough_reachable_nodes() {
    let sides: Sides = &[&["A", "C", "E"], &["B", "D"]];
    assert_side(&QUORUM_3, sides, NO_IC, 0, DU, "BD");
    assert_side(&QUORUM_3, sides, NO_IC, 1, DR, "BD");
}

/// StaticQuorum, Spec:194: "down reachable when not enough reachable nodes".
///
/// Quorum 3: each side has 2 of 4, so each downs itself.
#[test]
fn static_quorum_must_down_reachable_when_not_enough_reachable_nodes() {
    let sides: Sides = &[&["A", "B"], &["C", "D"]];
    assert_side(&QUORUM_3, sides, NO_IC, 0, DR, "AB");
    assert_side(&QUORUM_3, sides, NO_IC, 1, DR, "CD");
}

/// StaticQuorum, Spec:210: "down all if N > static-quorum.size * 2 - 1".
///
/// Six members exceed 2 * 3 - 1 = 5: Akka downs all from both sides.
#[test]
fn static_quorum_must_down_all_if_n_above_static_quorum_size_times_2_minus_1() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F"]];
    assert_side(&QUORUM_3, sides, NO_IC, 0, DA, "ABCDEF");
    assert_side(&QUORUM_3, sides, NO_IC, 1, DA, "ABCDEF");
}

/// StaticQuorum, Spec:216: "handle joining".
///
/// Joining members are downed with their side but not counted. Four steps; the last has six Up
/// members, more than 2 * 3 - 1, so both sides down all.
#[test]
fn static_quorum_must_handle_joining() {
    let sides: Sides = &[&["A", "B", "Cj"], &["D", "E", "Fj"]];
    let sides2: Sides = &[&["A", "B", "C"], &["D", "E", "Fj"]];
    let sides3: Sides = &[&["A", "B", "Cj"], &["D", "E", "F"]];
    let sides4: Sides = &[&["A", "B", "C"], &["D", "E", "F"]];
    assert_side(&QUORUM_3, sides, NO_IC, 0, DR, "ABC");
    assert_side(&QUORUM_3, sides, NO_IC, 1, DR, "DEF");
    assert_side(&QUORUM_3, sides2, NO_IC, 0, DU, "DEF");
    assert_side(&QUORUM_3, sides2, NO_IC, 1, DR, "DEF");
    assert_side(&QUORUM_3, sides3, NO_IC, 0, DR, "ABC");
    assert_side(&QUORUM_3, sides3, NO_IC, 1, DU, "ABC");
    assert_side(&QUORUM_3, sides4, NO_IC, 0, DA, "ABCDEF");
    assert_side(&QUORUM_3, sides4, NO_IC, 1, DA, "ABCDEF");
}

/// StaticQuorum, Spec:244: "handle leaving/exiting".
///
/// Leaving is counted (A, B, Cl: 3), Exiting is not (A, B, Cx: 2, and Cx is not downed either).
#[test]
fn static_quorum_must_handle_leaving_exiting() {
    let sides: Sides = &[&["A", "B", "Cl"], &["D", "E"]];
    let sides2: Sides = &[&["A", "B", "Cx"], &["D", "E"]];
    assert_side(&QUORUM_3, sides, NO_IC, 0, DU, "DE");
    assert_side(&QUORUM_3, sides, NO_IC, 1, DR, "DE");
    assert_side(&QUORUM_3, sides2, NO_IC, 0, DR, "AB");
    assert_side(&QUORUM_3, sides2, NO_IC, 1, DR, "DE");
}

/// KeepMajority, Spec:265: "down minority partition: {A, C, E} | {B, D} => {A, C, E}".
///
/// 3 against 2: both sides down {B, D}.
#[test]
fn keep_majority_must_down_minority_partition_ace_bd() {
    let sides: Sides = &[&["A", "C", "E"], &["B", "D"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DU, "BD");
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 1, DR, "BD");
}

/// KeepMajority, Spec:271: "down minority partition: {A, B} | {C, D, E} => {C, D, E}".
///
/// 2 against 3: both sides down {A, B}.
#[test]
fn keep_majority_must_down_minority_partition_ab_cde() {
    let sides: Sides = &[&["A", "B"], &["C", "D", "E"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DR, "AB");
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 1, DU, "AB");
}

/// KeepMajority, Spec:277: "down self when alone: {B} | {A, C} => {A, C}".
///
/// 1 against 2: both sides down {B}.
#[test]
fn keep_majority_must_down_self_when_alone_b_ac() {
    let sides: Sides = &[&["B"], &["A", "C"]];
    assert_downing(&KEEP_MAJORITY, sides, NO_IC, "B");
}

/// KeepMajority, Spec:283: "keep half with lowest address when equal size partition: {A, B} |
/// {C, D} => {A, B}".
///
/// 2 against 2: the side of the lowest address (A) survives.
#[test]
fn keep_majority_must_keep_half_with_lowest_address_when_equal_size_partition_ab_cd() {
    let sides: Sides = &[&["A", "B"], &["C", "D"]];
    assert_downing(&KEEP_MAJORITY, sides, NO_IC, "CD");
}

/// KeepMajority, Spec:289: "keep node with lowest address in two node cluster: {A} | {B} => {A}".
///
/// 1 against 1: the side of the lowest address (A) survives.
#[test]
fn keep_majority_must_keep_node_with_lowest_address_in_two_node_cluster_a_b() {
    let sides: Sides = &[&["A"], &["B"]];
    assert_downing(&KEEP_MAJORITY, sides, NO_IC, "B");
}

/// KeepMajority, Spec:315: "not count joining node, but down it: {B, D} | {Aj, C} => {B, D}".
///
/// Aj is not counted (2 against 1) but is downed with C. From {Aj, C} the deciding node is C, the
/// side's Up member.
#[test]
fn keep_majority_must_not_count_joining_node_but_down_it_bd_ajc() {
    let sides: Sides = &[&["B", "D"], &["Aj", "C"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DU, "AC");
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 1, DR, "AC");
}

/// KeepMajority, Spec:321: "down minority partition and joining node: {A, Bj} | {C, D, E} =>
/// {C, D, E}".
///
/// Bj is not counted (1 against 3) but is downed with A.
#[test]
fn keep_majority_must_down_minority_partition_and_joining_node_abj_cde() {
    let sides: Sides = &[&["A", "Bj"], &["C", "D", "E"]];
    assert_downing(&KEEP_MAJORITY, sides, NO_IC, "AB");
}

/// KeepMajority, Spec:327: "down each part when split in 3 too small parts: {A, B} | {C, D} | {E}
/// => {}".
///
/// Three sides: each sees the two others as one unreachable side and downs itself.
#[test]
fn keep_majority_must_down_each_part_when_split_in_3_too_small_parts_ab_cd_e() {
    let sides: Sides = &[&["A", "B"], &["C", "D"], &["E"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DR, "AB");
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 1, DR, "CD");
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 2, DR, "E");
}

/// KeepMajority, Spec:336: "detect edge case of membership change: {A, B, F', G'} | {C, D, E} =>
/// {A, B, F, G}".
///
/// Phase 1: {A, B, F, G} downs {C, D, E}. Phase 2: F and G are still Joining in the view of
/// {C, D, E}: 3 against 2 counted, but Akka's edge-case pass counts them on the other side
/// (3 against 4) and the disagreement gives down-all.
#[test]
fn keep_majority_must_detect_edge_case_of_membership_change_abfg_cde() {
    let sides: Sides = &[&["A", "B", "F", "G"], &["C", "D", "E"]];
    let sides2: Sides = &[&["A", "B", "Fj", "Gj"], &["C", "D", "E"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DU, "CDE");
    assert_side(&KEEP_MAJORITY, sides2, NO_IC, 1, DA, "ABCDEFG");
}

/// KeepMajority, Spec:356: "detect edge case of membership change when equal size: {A, B, F'} |
/// {C, D, E} => {A, B, F}".
///
/// As the previous case with a 3 against 3 tie: the edge-case pass counts Fj, the lowest address A
/// is unreachable, so down-all.
#[test]
fn keep_majority_must_detect_edge_case_of_membership_change_when_equal_size_abf_cde() {
    let sides: Sides = &[&["A", "B", "F"], &["C", "D", "E"]];
    let sides2: Sides = &[&["A", "B", "Fj"], &["C", "D", "E"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DU, "CDE");
    assert_side(&KEEP_MAJORITY, sides2, NO_IC, 1, DA, "ABCDEF");
}

/// KeepMajority, Spec:378: "detect safe edge case of membership change: {A, B} | {C, D, E, F'} =>
/// {C, D, E, F}".
///
/// The Joining F is on the side that wins anyway: no disagreement.
#[test]
fn keep_majority_must_detect_safe_edge_case_of_membership_change_ab_cdef() {
    let sides: Sides = &[&["A", "B"], &["C", "D", "E", "Fj"]];
    let sides2: Sides = &[&["A", "B"], &["C", "D", "E", "F"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DR, "AB");
    assert_side(&KEEP_MAJORITY, sides2, NO_IC, 1, DU, "AB");
}

/// KeepMajority, Spec:397: "detect edge case of leaving/exiting membership change: {A', B} |
/// {C, D} => {C, D}".
///
/// Phase 1: 2 against 2 (Al counted, Ej not); the edge-case pass leaves out Al and gives {B} 1
/// against 2, so down-all. Phase 2: A is Exiting, neither counted nor downed.
#[test]
fn keep_majority_must_detect_edge_case_of_leaving_exiting_membership_change_ab_cd() {
    let sides: Sides = &[&["Al", "B", "Ej"], &["C", "D"]];
    let sides2: Sides = &[&["Ax", "B"], &["C", "D"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, DA, "ABCDE");
    assert_side(&KEEP_MAJORITY, sides2, NO_IC, 1, DU, "B");
}

/// KeepMajority, Spec:418: "down indirectly connected: {(A, B)} => {}".
///
/// A and B observe each other: both indirectly connected, both downed.
#[test]
fn keep_majority_must_down_indirectly_connected_ab() {
    let sides: Sides = &[&["A", "B"]];
    assert_side(&KEEP_MAJORITY, sides, AB_CYCLE, 0, DIC, "AB");
}

/// KeepMajority, Spec:424: "down indirectly connected: {(A, B), C} => {C}".
///
/// C is not indirectly connected and stays.
#[test]
fn keep_majority_must_down_indirectly_connected_ab_c() {
    let sides: Sides = &[&["A", "B", "C"]];
    assert_downing(&KEEP_MAJORITY, sides, AB_CYCLE, "AB");
}

/// KeepMajority, Spec:431: "down indirectly connected: {(A, B, C)} => {}".
///
/// A cycle A -> B -> C -> A: all three are observers and subjects.
#[test]
fn keep_majority_must_down_indirectly_connected_abc() {
    let sides: Sides = &[&["A", "B", "C"]];
    assert_downing(
        &KEEP_MAJORITY,
        sides,
        &[('A', 'B'), ('B', 'C'), ('C', 'A')],
        "ABC",
    );
}

/// KeepMajority, Spec:437: "down indirectly connected: {(A, B, C, D)} => {}".
///
/// Two pairs, A <-> D and B <-> C: all four downed.
#[test]
fn keep_majority_must_down_indirectly_connected_abcd() {
    let sides: Sides = &[&["A", "B", "C", "D"]];
    let ic = &[('A', 'D'), ('D', 'A'), ('B', 'C'), ('C', 'B')];
    assert_downing(&KEEP_MAJORITY, sides, ic, "ABCD");
}

/// KeepMajority, Spec:443: "down indirectly connected: {(A, B, C), D, E} => {D, E}".
///
/// The cycle A -> B -> C -> A is downed, D and E stay.
#[test]
fn keep_majority_must_down_indirectly_connected_abc_d_e() {
    let sides: Sides = &[&["A", "B", "C", "D", "E"]];
    assert_downing(
        &KEEP_MAJORITY,
        sides,
        &[('A', 'B'), ('B', 'C'), ('C', 'A')],
        "ABC",
    );
}

/// KeepMajority, Spec:450: "down indirectly connected{A, (B, C), D, (E, F), G} => {A, D, G}".
///
/// Two pairs, B <-> C and E <-> F: those four are downed.
#[test]
fn keep_majority_must_down_indirectly_connected_a_bc_d_ef_g() {
    let sides: Sides = &[&["A", "B", "C", "D", "E", "F", "G"]];
    let ic = &[('B', 'C'), ('C', 'B'), ('E', 'F'), ('F', 'E')];
    assert_downing(&KEEP_MAJORITY, sides, ic, "BCEF");
}

/// KeepMajority, Spec:458: "down indirectly connected, detected via seen: {(A, B, C)} => {}".
///
/// A -> B and A -> C form no cycle; Akka finds all three through the seen set
/// (B and C have seen the gossip that records them unreachable).
#[test]
fn keep_majority_must_down_indirectly_connected_detected_via_seen_abc() {
    let sides: Sides = &[&["A", "B", "C"]];
    assert_downing(&KEEP_MAJORITY, sides, &[('A', 'B'), ('A', 'C')], "ABC");
}

/// KeepMajority, Spec:464: "down indirectly connected, detected via seen: {(A, B, C, D), E} =>
/// {E}".
///
/// B <-> C is a cycle; A -> D is found through the seen set only.
#[test]
fn keep_majority_must_down_indirectly_connected_detected_via_seen_abcd_e() {
    let sides: Sides = &[&["A", "B", "C", "D", "E"]];
    assert_downing(
        &KEEP_MAJORITY,
        sides,
        &[('B', 'C'), ('C', 'B'), ('A', 'D')],
        "ABCD",
    );
}

/// KeepMajority, Spec:471: "down indirectly connected when combined with crashed: {(A, B), D, E} |
/// {C} => {D, E}".
///
/// A <-> B is indirectly connected and C crashed. The model decides at D (A and B are named
/// unreachable): DownIndirectlyConnected, and the second pass without A <-> B downs C.
#[test]
fn keep_majority_must_down_indirectly_connected_when_combined_with_crashed_ab_d_e_c() {
    let sides: Sides = &[&["A", "B", "D", "E"], &["C"]];
    assert_side(&KEEP_MAJORITY, sides, AB_CYCLE, 0, DIC, "ABC");
}

/// KeepMajority, Spec:480: "down indirectly connected when combined with clean partition:
/// {A, (B, C)} | {D, E} => {A}".
///
/// (a) From {A, B, C} with B <-> C; (b) no indirect records, from {D, E}; (c) B <-> C again, from
/// {D, E}. Akka's inner pass counts B and C as reachable in (a) (3 against 2) and as unreachable
/// in (c) (records D -> B, D -> C remain).
#[test]
fn keep_majority_must_down_indirectly_connected_when_combined_with_clean_partition_a_bc_de() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E"]];
    assert_side(&KEEP_MAJORITY, sides, BC_CYCLE, 0, DIC, "BCDE");
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 1, DR, "DE");
    assert_side(&KEEP_MAJORITY, sides, BC_CYCLE, 1, DIC, "BCDE");
}

/// KeepMajority, Spec:505: "down indirectly connected on minority side, when combined with clean
/// partition: {A, (B, C)} | {D, E, F, G} => {D, E, F, G}".
///
/// (a) From {A, B, C} with B <-> C; (b) no indirect records, from the majority {D, E, F, G}; (c) B
/// <-> C, from the majority.
#[test]
fn keep_majority_must_down_indirectly_connected_on_minority_side_with_clean_partition() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F", "G"]];
    assert_side(&KEEP_MAJORITY, sides, BC_CYCLE, 0, ANY, "ABC");
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 1, ANY, "ABC");
    assert_side(&KEEP_MAJORITY, sides, BC_CYCLE, 1, ANY, "ABC");
}

/// KeepMajority, Spec:525: "down indirectly connected on majority side, when combined with clean
/// partition: {A, B, C} | {(D, E), F, G} => {F, G}".
///
/// (a) No indirect records, from the minority {A, B, C}; (b) D <-> E, from {A, B, C}: Akka's inner
/// pass keeps A -> D, A -> E, so 3 against 4; (c) D <-> E, from {D, E, F, G} (observer D): 4
/// against 3.
#[test]
fn keep_majority_must_down_indirectly_connected_on_majority_side_with_clean_partition() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F", "G"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, ANY, "ABC");
    assert_side(&KEEP_MAJORITY, sides, DE_CYCLE, 0, DIC, "ABCDE");
    assert_side(&KEEP_MAJORITY, sides, DE_CYCLE, 1, DIC, "ABCDE");
}

/// KeepMajority, Spec:546: "down indirectly connected spanning across a clean partition:
/// {A, (B), C} | {D, (E, F), G} => {D, G}".
///
/// B -> E -> F -> B spans the cut. The records' observers are A (side 1) and D (side 2): the
/// catalogue notes the result depends on them.
#[test]
fn keep_majority_must_down_indirectly_connected_spanning_across_a_clean_partition() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F", "G"]];
    assert_side(
        &KEEP_MAJORITY,
        sides,
        &[('B', 'E'), ('E', 'F'), ('F', 'B')],
        0,
        DIC,
        "ABCEF",
    );
    assert_side(
        &KEEP_MAJORITY,
        sides,
        &[('B', 'E'), ('E', 'F'), ('F', 'B')],
        1,
        DIC,
        "ABCEF",
    );
}

/// KeepMajority, Spec:559: "down indirectly connected, detected via seen, combined with clean
/// partition: {A, B, C} | {(D, E), (F, G)} => {}".
///
/// (a) No indirect records, from {A, B, C}; (b) D -> E and G -> F from {D, E, F, G}: no cycle,
/// Akka finds D, E, F, G through the seen set.
#[test]
fn keep_majority_must_down_indirectly_connected_detected_via_seen_with_clean_partition() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F", "G"]];
    assert_side(&KEEP_MAJORITY, sides, NO_IC, 0, ANY, "ABC");
    assert_side(
        &KEEP_MAJORITY,
        sides,
        &[('D', 'E'), ('G', 'F')],
        1,
        DIC,
        "ABCDEFG",
    );
}

/// KeepMajority, Spec:572: "double DownIndirectlyConnected when indirectly connected happens
/// before clean partition: {A, B, C} | {(D, E), (F, G)} => {}".
///
/// D -> E and G -> F on both views. From {A, B, C} Akka's second decide is again indirectly
/// connected and nodesToDown throws IllegalStateException (the test intercepts it); the resolver
/// actor then downs all (SBR:437-444), which is what is asserted here.
#[test]
fn keep_majority_must_double_down_indirectly_connected_before_clean_partition() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F", "G"]];
    assert_side(
        &KEEP_MAJORITY,
        sides,
        &[('D', 'E'), ('G', 'F')],
        0,
        DA,
        "ABCDEFG",
    );
    assert_side(
        &KEEP_MAJORITY,
        sides,
        &[('D', 'E'), ('G', 'F')],
        1,
        ANY,
        "ABCDEFG",
    );
}

/// KeepOldest, Spec:601: "keep partition with oldest".
///
/// E (up-number 1) is the oldest: its side survives.
#[test]
fn keep_oldest_must_keep_partition_with_oldest() {
    let sides: Sides = &[&["A", "E"], &["B", "C", "D"]];
    assert_downing(&KEEP_OLDEST, sides, NO_IC, "BCD");
}

/// KeepOldest, Spec:615: "keep partition with oldest unless alone".
///
/// The oldest E is alone against 4: it downs itself (down-if-alone).
#[test]
fn keep_oldest_must_keep_partition_with_oldest_unless_alone() {
    let sides: Sides = &[&["E"], &["A", "B", "C", "D"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DR, "E");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, DU, "E");
}

/// KeepOldest, Spec:621: "keep partition with oldest in two nodes cluster".
///
/// B (up-number 4) is older than A (5); 1 against 1 keeps the oldest.
#[test]
fn keep_oldest_must_keep_partition_with_oldest_in_two_nodes_cluster() {
    let sides: Sides = &[&["B"], &["A"]];
    assert_downing(&KEEP_OLDEST, sides, NO_IC, "A");
}

/// KeepOldest, Spec:627: "keep one single oldest".
///
/// Only {A}, nothing unreachable: Akka decides DownUnreachable of nobody; the model makes no
/// decision (downing.rs:107-114). Both down nobody.
#[test]
fn keep_oldest_must_keep_one_single_oldest() {
    let sides: Sides = &[&[], &["A"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, NOTHING, "");
}

/// KeepOldest, Spec:633: "keep oldest even when alone when downIfAlone = false".
///
/// down-if-alone off: the oldest E survives alone.
#[test]
fn keep_oldest_must_keep_oldest_even_when_alone_when_down_if_alone_false() {
    let sides: Sides = &[&["E"], &["A", "B", "C", "D"]];
    assert_downing(&KEEP_OLDEST_EVEN_ALONE, sides, NO_IC, "ABCD");
}

/// KeepOldest, Spec:639: "detect leaving/exiting edge case: keep partition with oldest, scenario
/// 1".
///
/// Phase 1: Ex is not counted, so D is the oldest; Ex is not downed. Phase 2: El is the oldest
/// (main pass) but the edge-case pass leaves out Leaving: down-all.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_keep_partition_with_oldest_scenario_1() {
    let sides: Sides = &[&["A", "B", "D"], &["C", "Ex"]];
    let sides2: Sides = &[&["A", "B", "D"], &["C", "El"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DU, "C");
    assert_side(&KEEP_OLDEST, sides2, NO_IC, 1, DA, "ABCDE");
}

/// KeepOldest, Spec:661: "detect leaving/exiting edge case: keep partition with oldest, scenario
/// 2".
///
/// El is the oldest of the main pass; the edge-case pass picks D (unreachable, 1 against 3):
/// down-all from {A, El}.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_keep_partition_with_oldest_scenario_2() {
    let sides: Sides = &[&["A", "El"], &["B", "C", "D"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DA, "ABCDE");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, DR, "BCD");
}

/// KeepOldest, Spec:671: "detect leaving/exiting edge case: keep partition with oldest, scenario
/// 3".
///
/// E is the oldest on {A, E}; the Leaving B and C do not change it.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_keep_partition_with_oldest_scenario_3() {
    let sides: Sides = &[&["A", "E"], &["Bl", "Cl", "D"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DU, "BCD");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, DR, "BCD");
}

/// KeepOldest, Spec:678: "detect leaving/exiting edge case: keep partition with oldest unless
/// alone, scenario 1".
///
/// E oldest, 2 against 3 without the edge case; leaving out Dl, E is alone: down-all from {Dl, E}.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_oldest_unless_alone_scenario_1() {
    let sides: Sides = &[&["Dl", "E"], &["A", "B", "C"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DA, "ABCDE");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, DR, "ABC");
}

/// KeepOldest, Spec:688: "detect leaving/exiting edge case: keep partition with oldest unless
/// alone, scenario 4".
///
/// E alone against 3 downs itself; the other side agrees.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_oldest_unless_alone_scenario_4() {
    let sides: Sides = &[&["E"], &["A", "B", "Cl"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DR, "E");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, DU, "E");
}

/// KeepOldest, Spec:698: "detect leaving/exiting edge case: keep partition with oldest unless
/// alone, scenario 3".
///
/// From {A, Bl, Cl, Dl}: the main pass keeps it (E alone on the other side), the edge-case pass
/// leaves {A} 1 against 1 with the oldest there: down-all.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_oldest_unless_alone_scenario_3() {
    let sides: Sides = &[&["E"], &["A", "Bl", "Cl", "Dl"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DR, "E");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, DA, "ABCDE");
}

/// KeepOldest, Spec:708: "detect leaving/exiting edge case: DownReachable on both sides when
/// oldest leaving/exiting is alone".
///
/// Phase 1: Ex is not counted, D is the oldest and alone (1 against 3): D downs itself, Ex is not
/// downed. Phase 2: El unreachable is the oldest, the other side has 2.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_down_reachable_on_both_sides() {
    let sides: Sides = &[&["D", "Ex"], &["A", "B", "C"]];
    let sides2: Sides = &[&["D", "El"], &["A", "B", "C"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DR, "D");
    assert_side(&KEEP_OLDEST, sides2, NO_IC, 1, DR, "ABC");
}

/// KeepOldest, Spec:722: "detect leaving/exiting edge case: when one single oldest".
///
/// Phase 1: A alone with Bx, which is neither counted nor downed. Phase 2: Bl is the oldest
/// (1 against 1) but the edge-case pass picks A: down-all.
#[test]
fn keep_oldest_must_detect_leaving_exiting_edge_case_when_one_single_oldest() {
    let sides: Sides = &[&["A"], &["Bx"]];
    let sides2: Sides = &[&["A"], &["Bl"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DU, "");
    assert_side(&KEEP_OLDEST, sides2, NO_IC, 1, DA, "AB");
}

/// KeepOldest, Spec:736: "detect joining/up edge case: keep partition with oldest unless alone,
/// scenario 1".
///
/// Aj is not counted: E is alone against 3. From {B, C, D} the edge-case pass counts Aj, so the
/// other side has 2: down-all.
#[test]
fn keep_oldest_must_detect_joining_up_edge_case_oldest_unless_alone_scenario_1() {
    let sides: Sides = &[&["Aj", "E"], &["B", "C", "D"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, DR, "AE");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, DA, "ABCDE");
}

/// KeepOldest, Spec:748: "detect joining/up edge case: keep oldest even when alone when
/// downIfAlone = false".
///
/// down-if-alone off: Joining is ignored and the oldest E survives.
#[test]
fn keep_oldest_must_detect_joining_up_edge_case_keep_oldest_when_down_if_alone_false() {
    let sides: Sides = &[&["Aj", "E"], &["B", "C", "D"]];
    assert_side(&KEEP_OLDEST_EVEN_ALONE, sides, NO_IC, 0, DU, "BCD");
    assert_side(&KEEP_OLDEST_EVEN_ALONE, sides, NO_IC, 1, DR, "BCD");
}

/// KeepOldest, Spec:759: "down indirectly connected: {(A, B), C} => {C}".
///
/// A <-> B is downed whatever the strategy.
#[test]
fn keep_oldest_must_down_indirectly_connected_ab_c() {
    let sides: Sides = &[&["A", "B", "C"]];
    assert_downing(&KEEP_OLDEST, sides, AB_CYCLE, "AB");
}

/// KeepOldest, Spec:765: "down indirectly connected on younger side, when combined with clean
/// partition: {A, (B, C)} | {D, E, F, G} => {D, E, F, G}".
///
/// (a) From {A, B, C} with B <-> C; (b) no indirect records, from the oldest's side {D, E, F, G};
/// (c) B <-> C, from that side.
#[test]
fn keep_oldest_must_down_indirectly_connected_on_younger_side_with_clean_partition() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F", "G"]];
    assert_side(&KEEP_OLDEST, sides, BC_CYCLE, 0, ANY, "ABC");
    assert_side(&KEEP_OLDEST, sides, NO_IC, 1, ANY, "ABC");
    assert_side(&KEEP_OLDEST, sides, BC_CYCLE, 1, ANY, "ABC");
}

/// KeepOldest, Spec:784: "down indirectly connected on oldest side, when combined with clean
/// partition: {A, B, C} | {(D, E), F, G} => {F, G}".
///
/// (a) No indirect records, from {A, B, C}; (b) D <-> E, from {A, B, C}: Akka's inner pass keeps E
/// (the oldest) unreachable; (c) D <-> E, from {D, E, F, G}.
#[test]
fn keep_oldest_must_down_indirectly_connected_on_oldest_side_with_clean_partition() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E", "F", "G"]];
    assert_side(&KEEP_OLDEST, sides, NO_IC, 0, ANY, "ABC");
    assert_side(&KEEP_OLDEST, sides, DE_CYCLE, 0, ANY, "ABCDE");
    assert_side(&KEEP_OLDEST, sides, DE_CYCLE, 1, DIC, "ABCDE");
}

/// DownAllNodes, Spec:811: "down all".
///
/// Every member is downed from both sides.
#[test]
fn down_all_nodes_must_down_all() {
    let sides: Sides = &[&["A", "B", "C"], &["D", "E"]];
    assert_side(&DOWN_ALL, sides, NO_IC, 0, DA, "ABCDE");
    assert_side(&DOWN_ALL, sides, NO_IC, 1, DA, "ABCDE");
}

/// DownAllNodes, Spec:817: "down all when any indirectly connected: {(A, B), C} => {}".
///
/// Akka's down-all decides DownAll even when members are indirectly connected (DS:573-576), and
/// so does the model (downing.rs, down-all before the indirectly connected).
#[test]
fn down_all_nodes_must_down_all_when_any_indirectly_connected_ab_c() {
    let sides: Sides = &[&["A", "B", "C"]];
    assert_side(&DOWN_ALL, sides, AB_CYCLE, 0, DA, "ABC");
}

/// Split Brain Resolver, Spec:1213: "down unreachable when leader".
///
/// The decision part of the actor case: A (the leader) sees B unreachable. Leadership and the tick
/// are the state machine's (mod.rs:766, 1383).
#[test]
fn split_brain_resolver_must_down_unreachable_when_leader() {
    assert_at(
        &KEEP_MAJORITY,
        &["A", "B", "C"],
        &[('A', 'B')],
        'A',
        ANY,
        "B",
    );
}

/// Split Brain Resolver, Spec:1323: "not down when unreachable is already Down".
///
/// B is already Down: Akka decides DownUnreachable of nobody downable; the model leaves Down
/// members out of the unreachable set and makes no decision.
#[test]
fn split_brain_resolver_must_not_down_when_unreachable_is_already_down() {
    assert_at(
        &KEEP_MAJORITY,
        &["A", "Bd", "C"],
        &[('A', 'B')],
        'A',
        NOTHING,
        "",
    );
}

/// Split Brain Resolver, Spec:1335: "down minority partition".
///
/// A -> B and C -> D: no cycle, 3 against 2.
#[test]
fn split_brain_resolver_must_down_minority_partition() {
    let members = &["A", "B", "C", "D", "E"];
    let records = &[('A', 'B'), ('C', 'D')];
    assert_at(&KEEP_MAJORITY, members, records, 'A', ANY, "BD");
}

/// Split Brain Resolver, Spec:1344: "keep partition with oldest".
///
/// A -> B, A -> C, E -> D: the oldest E is reachable, 2 against 3.
#[test]
fn split_brain_resolver_must_keep_partition_with_oldest() {
    let members = &["A", "B", "C", "D", "E"];
    let records = &[('A', 'B'), ('A', 'C'), ('E', 'D')];
    assert_at(&KEEP_OLDEST, members, records, 'A', ANY, "BCD");
}

/// Split Brain Resolver, Spec:1357: "log warning if N > static-quorum.size * 2 - 1".
///
/// The decision part only (the log warning is not modelled): quorum 2 with 4 members, more than
/// 2q-1 = 3, so Akka downs all.
#[test]
fn split_brain_resolver_must_log_warning_if_n_above_static_quorum_size_times_2_minus_1() {
    assert_at(
        &QUORUM_2,
        &["A", "B", "C", "D"],
        &[('A', 'C'), ('A', 'D')],
        'A',
        DA,
        "ABCD",
    );
}

/// Split Brain Resolver, Spec:1432: "down indirectly connected: {(A, B), C} => {C}".
///
/// Self A is indirectly connected (A <-> B): the actor ignores UnreachableMember(A), the cycle
/// still downs A and B.
#[test]
fn split_brain_resolver_must_down_indirectly_connected_ab_c() {
    assert_at(&KEEP_MAJORITY, &["A", "B", "C"], AB_CYCLE, 'A', ANY, "AB");
}

/// Split Brain Resolver, Spec:1445: "down indirectly connected when combined with crashed:
/// {(A, B), D, E} | {C} => {D, E}".
///
/// Self A is indirectly connected with B, and C crashed (B -> C). Akka's inner pass keeps B -> C
/// and downs C too.
#[test]
fn split_brain_resolver_must_down_indirectly_connected_when_combined_with_crashed_ab_d_e_c() {
    let members = &["A", "B", "C", "D", "E"];
    let records = &[('A', 'B'), ('B', 'A'), ('B', 'C')];
    assert_at(&KEEP_MAJORITY, members, records, 'A', ANY, "ABC");
}

/// Split Brain Resolver, Spec:1459: "down indirectly connected when combined with clean partition:
/// {A, (B, C)} | {D, E} => {A}".
///
/// (a) Self A with B <-> C and the cut to {D, E}: Akka's inner pass counts B and C as reachable, 3
/// against 2. (b) A new resolver at D: 2 against 3.
#[test]
fn split_brain_resolver_must_down_indirectly_connected_with_clean_partition_a_bc_de() {
    let members = &["A", "B", "C", "D", "E"];
    let records = &[
        ('B', 'C'),
        ('C', 'B'),
        ('A', 'D'),
        ('B', 'D'),
        ('B', 'E'),
        ('C', 'E'),
    ];
    assert_at(&KEEP_MAJORITY, members, records, 'A', ANY, "BCDE");
    let records = &[('D', 'A'), ('D', 'B'), ('E', 'B'), ('E', 'C')];
    assert_at(&KEEP_MAJORITY, members, records, 'D', ANY, "DE");
}

/// Split Brain Resolver, Spec:1496: "down indirectly connected when combined with partition and
/// exiting: {A, B, C, D} | {E, F-exiting} => {A, B, C, D}".
///
/// F is Exiting: Akka never downs it and drops the records about it; the cycle makes E indirectly
/// connected.
#[test]
fn split_brain_resolver_must_down_indirectly_connected_with_partition_and_exiting_f() {
    let members = &["A", "B", "C", "D", "E", "Fx"];
    let records = &[
        ('A', 'E'),
        ('A', 'F'),
        ('B', 'E'),
        ('B', 'F'),
        ('C', 'E'),
        ('C', 'F'),
        ('D', 'E'),
        ('D', 'F'),
        ('E', 'F'),
    ];
    assert_at(&KEEP_MAJORITY, members, records, 'A', ANY, "E");
}

/// Split Brain Resolver, Spec:1521: "down indirectly connected when combined with partition and
/// exiting: {A, B, C, D} | {E-exiting, F} => {A, B, C, D}".
///
/// E is Exiting and indirectly connected: Akka does not down it; the inner pass downs F.
#[test]
fn split_brain_resolver_must_down_indirectly_connected_with_partition_and_exiting_e() {
    let members = &["A", "B", "C", "D", "Ex", "F"];
    let records = &[
        ('A', 'E'),
        ('A', 'F'),
        ('B', 'E'),
        ('B', 'F'),
        ('C', 'E'),
        ('C', 'F'),
        ('D', 'E'),
        ('D', 'F'),
        ('E', 'F'),
    ];
    assert_at(&KEEP_MAJORITY, members, records, 'A', ANY, "F");
}

// ---- the conformance table ----

#[test]
fn the_conformance_table_is_current() {
    let port = conformance::Port {
        title: "Conformance: Akka's split-brain-resolver specs against the model",
        about: "The cases are those of Akka's `SplitBrainResolverSpec` and `LeaseMajoritySpec` \
                at akka/akka 9892c5e415, ported in `crates/core/tests/sbr_spec.rs` as tests of \
                `membership::decide`, each named after its case (the file's header says how a \
                case becomes a test). The cases the model cannot express need roles, a lease, \
                WeaklyUp, data centres or the resolver actor's timing.",
        file: "sbr_spec.rs",
        suites: SUITES,
        listed: PORTED,
        not_expressible: DEPARTURES,
    };
    let table = conformance::report(&port, include_str!("sbr_spec.rs"));
    conformance::check("split-brain-resolver.md", "sbr_spec.rs", &table);
}
