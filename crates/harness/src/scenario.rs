//! Scenario files: TOML, documented in `sim-scenarios/README.md`. An error names the file, the
//! line and the field.

use crate::fault::{FaultError, TimedFault};
pub use crate::fault::{FaultKind, FaultSpec};
use crate::options::OptionsByName;
use serde::{Deserialize, Serialize};
use shardsim_core::membership::MembershipConfig;
use shardsim_core::protocol::entity::ExtractorKind;
use shardsim_core::protocol::settings::{ProtocolOptions, RememberStore, Settings, StateStoreMode};
use std::fmt;
use std::path::{Path, PathBuf};

/// A whole scenario.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Scenario {
    /// Short name, used in reports and replay commands.
    pub name: String,
    /// What the scenario exercises.
    #[serde(default)]
    pub description: String,
    /// Cluster shape.
    pub cluster: ClusterSpec,
    /// Entity population.
    #[serde(default)]
    pub entities: EntitySpec,
    /// Client traffic.
    #[serde(default)]
    pub workload: WorkloadSpec,
    /// Link latencies.
    #[serde(default)]
    pub network: NetworkSpec,
    /// The coordinator's journal.
    #[serde(default)]
    pub journal: JournalSpec,
    /// Akka settings (defaults: Akka's).
    #[serde(default)]
    pub settings: Settings,
    /// Protocol options (defaults: Akka's behaviour).
    #[serde(default)]
    pub options: ProtocolOptions,
    /// Run length.
    #[serde(default)]
    pub run: RunSpec,
    /// The expected outcome.
    #[serde(default)]
    pub expect: ExpectSpec,
    /// Cluster membership: heartbeats, gossip, the downing provider.
    #[serde(default)]
    pub membership: MembershipConfig,
    /// An explicit fault plan: at time t, do this.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// Targeted delays: hold back a message kind or a node pair's messages for a while
    /// ([`crate::sim::delays`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delays: Vec<crate::delay::DelaySpec>,
    /// Faults generated per seed (swarm testing).
    #[serde(default)]
    pub swarm: SwarmSpec,
    /// The final liveness phase.
    #[serde(default)]
    pub liveness: LivenessSpec,
}

/// Swarm testing (TigerBeetle): each seed draws which fault kinds are on and at what rates.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct SwarmSpec {
    /// Generate faults per seed.
    pub enabled: bool,
    /// Faults start after this, ms.
    pub start_ms: u64,
    /// At most this many faults of each enabled kind per schedule.
    pub max_per_kind: u32,
    /// Longest pause, ms (keep below the downing provider's stable-after + margin, or pauses
    /// become the documented zombie hazard, hazards/long-pause-zombie.toml).
    pub max_pause_ms: u64,
    /// Longest time a crashed node stays down before it restarts, ms.
    pub max_down_ms: u64,
    /// Longest partition, ms.
    pub max_partition_ms: u64,
    /// Fault kinds the swarm may draw from (default: all but operator down and leave).
    pub kinds: Vec<FaultKind>,
    /// Let faults overlap. Off (the default): each fault heals, and the cluster gets the
    /// failure detector's pause + stable-after + down-removal-margin to settle, before the
    /// next one starts — the assumption under which the split-brain resolver is documented to
    /// be safe. On: faults are placed independently; overlapping faults can make one side's
    /// decision late (see hazards/sbr-overlapping-faults.toml).
    pub overlap: bool,
    /// Also draw the entity layer per seed: each of the workload's passivate,
    /// ignore-stop, self-stop, crash and shard-failure probabilities is on with probability
    /// 1/2, at a value up to the scenario's; the longest entity stop is drawn up to
    /// `entities.stop-ms`'s upper bound. The scenario's values are the maxima.
    pub entity_knobs: bool,
    /// Also draw targeted delays per seed ([`crate::sim::delays::draw`]):
    /// one to `max-per-kind` of them, each holding a message kind or a node pair's messages.
    pub delays: bool,
    /// Longest hold of a drawn delay, ms.
    pub max_hold_ms: u64,
}

impl Default for SwarmSpec {
    fn default() -> Self {
        SwarmSpec {
            enabled: false,
            start_ms: 5_000,
            max_per_kind: 2,
            max_pause_ms: 2_000,
            max_down_ms: 20_000,
            max_partition_ms: 30_000,
            kinds: vec![
                FaultKind::Partition,
                FaultKind::Isolate,
                FaultKind::OneWay,
                FaultKind::Bridge,
                FaultKind::Crash,
                FaultKind::Pause,
                FaultKind::JournalUnavailable,
                FaultKind::JournalSlow,
                FaultKind::JournalFailing,
            ],
            overlap: false,
            entity_knobs: false,
            delays: false,
            max_hold_ms: 1_000,
        }
    }
}

/// The liveness phase: at `duration - quiet-ms` every fault heals and crashed nodes restart;
/// at the end, whatever is still pending fails the run with kind `liveness`.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct LivenessSpec {
    /// Check liveness at the end.
    pub enabled: bool,
    /// Length of the final quiet period, ms.
    pub quiet_ms: u64,
    /// Also fail the run if a region's graceful shutdown gives up at its
    /// `GracefulShutdownTimeout` (invariant `graceful-shutdown-timeout`; off by default: a
    /// fault during a leave can make Akka's shutdown time out).
    pub check_graceful_shutdown: bool,
}

impl Default for LivenessSpec {
    fn default() -> Self {
        LivenessSpec {
            enabled: false,
            quiet_ms: 30_000,
            check_graceful_shutdown: false,
        }
    }
}

/// Nodes and when they join.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClusterSpec {
    /// Number of nodes (1..=1000).
    pub nodes: u32,
    /// Join time of each node in ms; missing entries join at 0. The oldest member is the first
    /// to join (ties: lower node id).
    #[serde(default)]
    pub join_at_ms: Vec<u64>,
    /// Nodes whose region is proxy-only (no entities, never coordinator): nodes without the
    /// sharding role, whatever `roles` says.
    #[serde(default)]
    pub proxy_nodes: Vec<u32>,
    /// `akka.cluster.roles` per node (missing entries: no roles). With `[settings] role` set,
    /// only the nodes with that role host shards and the coordinator.
    #[serde(default)]
    pub roles: Vec<Vec<String>>,
    /// `akka.cluster.app-version` of each node's first incarnation (missing entries: 0, Akka's
    /// `0.0.0`); higher is newer.
    #[serde(default)]
    pub app_version: Vec<u32>,
    /// A rolling update: every new incarnation of a node (its restart after a crash or a
    /// graceful leave) runs the next app version after its previous incarnation's. Off: a node
    /// keeps its version.
    #[serde(default)]
    pub upgrade_on_restart: bool,
}

/// Entity population.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct EntitySpec {
    /// Number of entity ids (e0..e{count-1}).
    pub count: u32,
    /// Number of shards (Akka's `maxNumberOfShards` for the `akka-hash-code` extractor).
    pub shards: u32,
    /// The shard extractor: `fnv` (the default), `akka-hash-code` (Akka's
    /// `HashCodeMessageExtractor`), or `per-incarnation` (a hash seeded per node incarnation,
    /// as .NET Core's `string.GetHashCode()`: §12 B8, akka.net#3361).
    pub extractor: ExtractorKind,
    /// How long an entity takes from processing its stop message to its termination
    /// (postStop, finishing its work), uniform in [min, max] ms; also a stop by force.
    pub stop_ms: [u64; 2],
    /// Delay of a message between actors of one node (region, Shard, entity), in µs. Even at
    /// 0 such a message is its own event, so a message can arrive while a stop is in flight.
    pub local_delay_us: u64,
    /// How long a new Shard initialises (lease, remember-entities load) before it sends
    /// `ShardInitialized`, uniform in [min, max] ms.
    pub shard_init_ms: [u64; 2],
}

impl Default for EntitySpec {
    fn default() -> Self {
        EntitySpec {
            count: 100,
            shards: 10,
            extractor: ExtractorKind::Fnv,
            stop_ms: [0, 0],
            local_delay_us: 0,
            shard_init_ms: [0, 0],
        }
    }
}

/// Client traffic: senders attached to nodes, each sending sequenced messages through its
/// node's region.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct WorkloadSpec {
    /// Senders on each node.
    pub senders_per_node: u32,
    /// Gap between two sends of one sender, uniform in [min, max] ms.
    pub interval_ms: [u64; 2],
    /// First send (ms), at the earliest when the sender's node has joined.
    pub start_ms: u64,
    /// No sends after this time (ms).
    pub stop_ms: u64,
    /// Each sender addresses only this many entities (0: the whole population), chosen per
    /// sender from the seed. Small focus sets make per-entity ordering races likelier.
    pub focus: u32,
    /// Chance that an entity, after processing a message, sends `Passivate` to its Shard
    /// (entity-initiated passivation, docs/akka-reference.md §8).
    pub passivate_probability: f64,
    /// Chance that such a `Passivate` names a stop message the entity never handles, so it
    /// stays passivating until `passivation-stop-timeout` stops it by force (§12 B32).
    pub ignore_stop_probability: f64,
    /// Chance that an entity, after processing a message, stops itself without passivating
    /// (`context.stop(self)`, akka#29359, §12 B31).
    pub self_stop_probability: f64,
    /// Chance that an entity, after processing a message, throws: its supervision stops it
    /// (Akka Typed's default); remembered, it restarts after `entity-restart-backoff` (§6.4).
    pub crash_probability: f64,
    /// Chance that an entity's Shard throws after the entity processed a message (an
    /// application bug in the Shard's plug-ins): the Shard restarts in place, killing its
    /// entities (remembered ones are loaded and started again).
    pub shard_failure_probability: f64,
    /// The key space grows over `[from, to]` ms (`[0, 0]`: off, every entity from the
    /// start): until `from` each sender addresses only the first entity of its population (the
    /// whole population, or its focus set), then a share growing linearly to all of it at
    /// `to`. New entities, and new shards, are first addressed all along, e.g. during a journal
    /// outage. Drawn from a stream of its own, so scenarios without it keep their traces.
    pub key_space_growth_ms: [u64; 2],
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            senders_per_node: 1,
            interval_ms: [10, 50],
            start_ms: 0,
            stop_ms: 60_000,
            focus: 0,
            passivate_probability: 0.0,
            ignore_stop_probability: 0.0,
            self_stop_probability: 0.0,
            crash_probability: 0.0,
            shard_failure_probability: 0.0,
            key_space_growth_ms: [0, 0],
        }
    }
}

/// Link latencies. Each message draws its latency; a message never overtakes an earlier one on
/// the same directed link.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct NetworkSpec {
    /// Uniform latency range, ms.
    pub latency_ms: [u64; 2],
    /// Probability that a message takes the slow path instead.
    pub slow_probability: f64,
    /// Slow-path latency range, ms.
    pub slow_latency_ms: [u64; 2],
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            latency_ms: [1, 5],
            slow_probability: 0.0,
            slow_latency_ms: [20, 100],
        }
    }
}

/// The coordinator's journal.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct JournalSpec {
    /// Write latency range, ms.
    pub write_latency_ms: [u64; 2],
    /// Check that only one coordinator writes (journal-single-writer). Scenarios that study
    /// what a split brain does to entities turn it off, so that the run goes on to the
    /// duplicate incarnations.
    pub check_single_writer: bool,
}

impl Default for JournalSpec {
    fn default() -> Self {
        JournalSpec {
            write_latency_ms: [1, 3],
            check_single_writer: true,
        }
    }
}

/// Run length.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct RunSpec {
    /// Simulated duration, ms.
    pub duration_ms: u64,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            duration_ms: 90_000,
        }
    }
}

/// The invariants, by name: the checker's [`Invariant`](crate::check::Invariant).
pub use crate::check::Invariant as Outcome;

/// What the scenario is expected to show.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ExpectSpec {
    /// `none`, or the invariant expected to break in at least one seed of a campaign.
    pub outcome: Outcome,
    /// `rate = [low, high]`: the share of a campaign's schedules expected to break `outcome`
    /// `fuzz` fails when the measured rate is far outside the band: when
    /// the band and the 99.9 % Wilson score interval of the measured rate do not meet
    /// (`shardsim::campaign::rate_check`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Vec<f64>>,
    /// `[[expect.known]]`: known Akka hazards this scenario may show besides `outcome`, at a
    /// rare rate. A failing seed that breaks a known hazard's invariant, and
    /// is clean when re-run with the hazard's fix option on, is reported as that known hazard,
    /// not as a failure; anything else still fails the campaign.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub known: Vec<KnownHazard>,
}

/// A known Akka hazard a faithful scenario may show at a rare rate (`[[expect.known]]`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct KnownHazard {
    /// Its name in reports (kebab-case, e.g. `reorder-across-handoff`).
    pub name: String,
    /// The invariant it breaks.
    pub invariant: Outcome,
    /// The fix option (one of the protocol's fix options, off in this scenario) that removes
    /// it: a failing seed counts as this hazard only if the same seed is clean with the
    /// option on. Without it every failure of `invariant` counts as this hazard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_by: Option<String>,
    /// `rate = [low, high]`: its expected share of schedules; a campaign fails when the
    /// measured rate is far outside (as `[expect] rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Vec<f64>>,
    /// Where it is described (a reference section, a report).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub about: String,
}

impl KnownHazard {
    /// The declared band `[low, high]`, if any (validated: 0 <= low <= high <= 1).
    pub fn rate_band(&self) -> Option<(f64, f64)> {
        match self.rate.as_deref() {
            Some(&[lo, hi]) => Some((lo, hi)),
            _ => None,
        }
    }
}

impl ExpectSpec {
    /// The declared band `[low, high]`, if any (validated: 0 <= low <= high <= 1).
    pub fn rate_band(&self) -> Option<(f64, f64)> {
        match self.rate.as_deref() {
            Some(&[lo, hi]) => Some((lo, hi)),
            _ => None,
        }
    }
}

/// A scenario file that could not be loaded.
#[derive(Debug)]
pub struct ScenarioError {
    /// The scenario's path as given to the loader (or the label of built text), printed first.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The offending field (dotted path), when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// Load and validate a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = crate::input::read_text(path).map_err(|e| ScenarioError {
            file: path.to_path_buf(),
            line: e.line(),
            field: None,
            message: e.message(),
        })?;
        Scenario::parse(&text, path)
    }

    /// Parse and validate scenario text; `path` is used in errors only.
    pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
        let mut sc: Scenario = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of_offset(text, s.start));
            let message = e.message().trim().to_string();
            let field = field_from_message(&message)
                .or_else(|| e.span().and_then(|s| key_at(text, s.start)));
            ScenarioError {
                file: path.to_path_buf(),
                line,
                field,
                message,
            }
        })?;
        sc.membership.resolve_defaults();
        sc.validate().map_err(|(field, message)| ScenarioError {
            file: path.to_path_buf(),
            line: line_of_field_or_table(text, &field),
            field: Some(field),
            message,
        })?;
        Ok(sc)
    }

    /// Semantic checks; returns (dotted field, message).
    pub fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, m: String| Err((f.to_string(), m));
        if self.cluster.nodes == 0 || self.cluster.nodes > 1000 {
            return err(
                "cluster.nodes",
                format!("must be 1..=1000, got {}", self.cluster.nodes),
            );
        }
        if self.cluster.join_at_ms.len() > self.cluster.nodes as usize {
            return err(
                "cluster.join-at-ms",
                format!(
                    "has {} entries for {} nodes",
                    self.cluster.join_at_ms.len(),
                    self.cluster.nodes
                ),
            );
        }
        for p in &self.cluster.proxy_nodes {
            if *p >= self.cluster.nodes {
                return err("cluster.proxy-nodes", format!("node {p} does not exist"));
            }
        }
        if self.cluster.proxy_nodes.len() as u32 >= self.cluster.nodes {
            return err(
                "cluster.proxy-nodes",
                "at least one node must host entities".into(),
            );
        }
        if let Some(e) = self.check_roles() {
            return Err(e);
        }
        if self.entities.count == 0 {
            return err("entities.count", "must be at least 1".into());
        }
        if self.entities.shards == 0 {
            return err("entities.shards", "must be at least 1".into());
        }
        if self.entities.extractor == ExtractorKind::AkkaHashCode
            && i32::try_from(self.entities.shards).is_err()
        {
            return err(
                "entities.shards",
                format!(
                    "akka-hash-code takes a Java Int maxNumberOfShards (at most {}), got {}",
                    i32::MAX,
                    self.entities.shards
                ),
            );
        }
        let [a, b] = self.workload.interval_ms;
        if a == 0 || a > b {
            return err(
                "workload.interval-ms",
                format!("need 0 < min <= max, got [{a}, {b}]"),
            );
        }
        if !(0.0..=1.0).contains(&self.workload.passivate_probability) {
            return err("workload.passivate-probability", "must be in [0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.workload.self_stop_probability) {
            return err("workload.self-stop-probability", "must be in [0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.workload.crash_probability) {
            return err("workload.crash-probability", "must be in [0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.workload.shard_failure_probability) {
            return err(
                "workload.shard-failure-probability",
                "must be in [0, 1]".into(),
            );
        }
        let [a, b] = self.workload.key_space_growth_ms;
        if a > b {
            return err(
                "workload.key-space-growth-ms",
                format!("need from <= to, got [{a}, {b}]"),
            );
        }
        let st = &self.settings;
        // Akka schedules the remember stores' timeouts and the ddata coordinator's reads and
        // writes (§3.3) with these; zero would fire before any replica could answer.
        let needs = if st.remember_entities {
            Some("remember-entities on")
        } else if st.state_store_mode == StateStoreMode::Ddata {
            Some("state-store-mode = ddata")
        } else {
            None
        };
        if let Some(why) = needs {
            for (field, v) in [
                (
                    "settings.updating-state-timeout-ms",
                    st.updating_state_timeout_ms,
                ),
                (
                    "settings.waiting-for-state-timeout-ms",
                    st.waiting_for_state_timeout_ms,
                ),
            ] {
                if v == 0 {
                    return err(field, format!("must be above 0 with {why}"));
                }
            }
        }
        if st.state_store_mode == StateStoreMode::Ddata
            && st.remember_entities
            && st.remember_entities_store == RememberStore::Eventsourced
        {
            // Akka's coordinator then keeps its remembered shards in the journal
            // (EventSourcedRememberEntitiesCoordinatorStore, §3.3): not modelled.
            return err(
                "settings.state-store-mode",
                "ddata with remember-entities-store = eventsourced is not modelled (the \
                 coordinator's eventsourced remember store); use remember-entities-store = \
                 ddata or state-store-mode = persistence"
                    .into(),
            );
        }
        if !(0.0..=1.0).contains(&self.workload.ignore_stop_probability) {
            return err(
                "workload.ignore-stop-probability",
                "must be in [0, 1]".into(),
            );
        }
        for (field, [a, b]) in [
            ("entities.stop-ms", self.entities.stop_ms),
            ("entities.shard-init-ms", self.entities.shard_init_ms),
        ] {
            if a > b {
                return err(field, format!("need min <= max, got [{a}, {b}]"));
            }
        }
        let [a, b] = self.network.latency_ms;
        if a > b {
            return err(
                "network.latency-ms",
                format!("need min <= max, got [{a}, {b}]"),
            );
        }
        let [a, b] = self.network.slow_latency_ms;
        if a > b {
            return err(
                "network.slow-latency-ms",
                format!("need min <= max, got [{a}, {b}]"),
            );
        }
        if !(0.0..=1.0).contains(&self.network.slow_probability) {
            return err("network.slow-probability", "must be in [0, 1]".into());
        }
        let [a, b] = self.journal.write_latency_ms;
        if a > b {
            return err(
                "journal.write-latency-ms",
                format!("need min <= max, got [{a}, {b}]"),
            );
        }
        if self.run.duration_ms == 0 {
            return err("run.duration-ms", "must be positive".into());
        }
        if self.settings.retry_interval_ms == 0 {
            return err("settings.retry-interval-ms", "must be positive".into());
        }
        if self.settings.rebalance_interval_ms == 0 {
            return err("settings.rebalance-interval-ms", "must be positive".into());
        }
        if self.settings.shard_start_timeout_ms == 0 {
            return err("settings.shard-start-timeout-ms", "must be positive".into());
        }
        if self.settings.handoff_timeout_ms == 0 {
            return err("settings.handoff-timeout-ms", "must be positive".into());
        }
        if self.liveness.enabled && self.liveness.quiet_ms >= self.run.duration_ms {
            return err(
                "liveness.quiet-ms",
                "must be shorter than run.duration-ms".into(),
            );
        }
        if let Some(band) = &self.expect.rate {
            if self.expect.outcome == Outcome::None {
                return err(
                    "expect.rate",
                    "a rate needs an expected outcome: with outcome \"none\" no schedule may fail"
                        .into(),
                );
            }
            let ok = matches!(band.as_slice(), &[lo, hi] if (0.0..=hi).contains(&lo) && hi <= 1.0);
            if !ok {
                return err(
                    "expect.rate",
                    format!("need a band [low, high] with 0 <= low <= high <= 1, got {band:?}"),
                );
            }
        }
        for (i, k) in self.expect.known.iter().enumerate() {
            let field = |f: &str| format!("expect.known[{i}].{f}");
            let ok_name = !k.name.is_empty()
                && k.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !ok_name {
                return Err((
                    field("name"),
                    format!("need a kebab-case name, got {:?}", k.name),
                ));
            }
            if self.expect.known[..i].iter().any(|o| o.name == k.name) {
                return Err((field("name"), format!("{:?} is declared twice", k.name)));
            }
            if k.invariant == Outcome::None {
                return Err((
                    field("invariant"),
                    "a known hazard breaks an invariant: `none` is not one".into(),
                ));
            }
            if let Some(fix) = &k.fixed_by {
                match self.options.fix_on(fix) {
                    None => {
                        return Err((
                            field("fixed-by"),
                            format!(
                                "{fix:?} is not a fix option (one of {})",
                                ProtocolOptions::fix_names().join(", ")
                            ),
                        ))
                    }
                    Some(true) => {
                        return Err((
                            field("fixed-by"),
                            format!("{fix:?} is already on in this scenario's [options]"),
                        ))
                    }
                    Some(false) => {}
                }
            }
            if let Some(band) = &k.rate {
                let ok =
                    matches!(band.as_slice(), &[lo, hi] if (0.0..=hi).contains(&lo) && hi <= 1.0);
                if !ok {
                    return Err((
                        field("rate"),
                        format!("need a band [low, high] with 0 <= low <= high <= 1, got {band:?}"),
                    ));
                }
            }
        }
        let n = self.cluster.nodes;
        for (i, f) in self.faults.iter().enumerate() {
            let problem = TimedFault::try_from(f).and_then(|t| t.fault.check(n));
            if let Err(e) = problem {
                return Err(fault_error(i, f, n, e));
            }
        }
        for (i, d) in self.delays.iter().enumerate() {
            if let Err((field, message)) = d.check(n) {
                return Err((format!("delays[{i}].{field}"), message));
            }
        }
        if self.swarm.delays && self.swarm.max_hold_ms == 0 {
            return err(
                "swarm.max-hold-ms",
                "must be at least 1 with swarm.delays".into(),
            );
        }
        Ok(())
    }

    /// The scenario as TOML that [`Scenario::parse`] reads back to an equal scenario. Keys at
    /// their default value are left out (`name` and `cluster.nodes` always stay).
    pub fn to_toml(&self) -> Result<String, String> {
        let full = toml::to_string(self).map_err(|e| e.to_string())?;
        let mut base: Scenario = toml::from_str(&format!(
            "name = \"\"\n[cluster]\nnodes = {}\n",
            self.cluster.nodes
        ))
        .map_err(|e| e.to_string())?;
        base.name.clear();
        let mine = toml::Table::try_from(self).map_err(|e| e.to_string())?;
        let base = toml::Table::try_from(&base).map_err(|e| e.to_string())?;
        let mut doc: toml_edit::DocumentMut = full.parse().map_err(|e| format!("{e}"))?;
        prune_defaults(doc.as_table_mut(), &mine, &base, "");
        Ok(doc.to_string())
    }

    /// Whether `node` hosts shards (has the sharding role): it is not in `proxy-nodes`, and,
    /// with `[settings] role` set, its `roles` include that role.
    pub fn hosting(&self, node: u32) -> bool {
        if self.cluster.proxy_nodes.contains(&node) {
            return false;
        }
        match &self.settings.role {
            None => true,
            Some(r) => self
                .cluster
                .roles
                .get(node as usize)
                .is_some_and(|rs| rs.contains(r)),
        }
    }

    /// The app version of `node`'s first incarnation.
    pub fn app_version(&self, node: u32) -> u32 {
        self.cluster
            .app_version
            .get(node as usize)
            .copied()
            .unwrap_or(0)
    }

    /// `[cluster] roles`, `app-version`, `[settings] role` and `min-nr-of-members` (§9.2).
    pub fn check_roles(&self) -> Option<(String, String)> {
        let n = self.cluster.nodes as usize;
        let e = |f: &str, m: String| Some((f.to_string(), m));
        if self.cluster.roles.len() > n {
            return e(
                "cluster.roles",
                format!("has {} entries for {n} nodes", self.cluster.roles.len()),
            );
        }
        for (i, rs) in self.cluster.roles.iter().enumerate() {
            for (j, r) in rs.iter().enumerate() {
                let ok = !r.is_empty()
                    && r.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
                if !ok {
                    return e(
                        "cluster.roles",
                        format!("node {i}: role {r:?} is not a name (letters, digits, - and _)"),
                    );
                }
                if rs[..j].contains(r) {
                    return e("cluster.roles", format!("node {i}: role {r:?} given twice"));
                }
            }
        }
        if self.cluster.app_version.len() > n {
            return e(
                "cluster.app-version",
                format!(
                    "has {} entries for {n} nodes",
                    self.cluster.app_version.len()
                ),
            );
        }
        if let Some(role) = &self.settings.role {
            let with_role: Vec<usize> = (0..n)
                .filter(|i| {
                    self.cluster
                        .roles
                        .get(*i)
                        .is_some_and(|rs| rs.contains(role))
                })
                .collect();
            if with_role.is_empty() {
                return e(
                    "settings.role",
                    format!("unknown role {role:?}: no node has it in cluster.roles"),
                );
            }
            if let Some(p) = with_role
                .iter()
                .find(|i| self.cluster.proxy_nodes.contains(&(**i as u32)))
            {
                return e(
                    "cluster.proxy-nodes",
                    format!(
                        "node {p} has the sharding role {role:?}: proxy-nodes are the nodes without it"
                    ),
                );
            }
        }
        let hosting = (0..self.cluster.nodes).filter(|i| self.hosting(*i)).count();
        let min = self.settings.min_nr_of_members;
        if min == 0 {
            return e("settings.min-nr-of-members", "must be at least 1".into());
        }
        if min > hosting {
            let of = match &self.settings.role {
                Some(r) => format!("nodes with the role {r:?}"),
                None => "nodes that host shards".into(),
            };
            return e(
                "settings.min-nr-of-members",
                format!("{min} is above the {hosting} {of}: no shard would ever be allocated"),
            );
        }
        None
    }

    /// Join time of `node`, ms.
    pub fn join_at_ms(&self, node: u32) -> u64 {
        self.cluster
            .join_at_ms
            .get(node as usize)
            .copied()
            .unwrap_or(0)
    }
}

/// The (dotted field, message) of fault `i` of the plan, `f`, that does not make a fault or does
/// not fit a cluster of `n` nodes.
fn fault_error(i: usize, f: &FaultSpec, n: u32, e: FaultError) -> (String, String) {
    let field = |k: &str| format!("faults[{i}].{k}");
    match (e.field(), e) {
        (_, FaultError::Extra(x)) => (field(x), format!("{:?} takes no `{x}`", f.kind)),
        ("node", _) => (
            field("node"),
            format!("{:?} needs `node` in 0..{n}", f.kind),
        ),
        ("by", _) => (
            field("by"),
            format!("node {} does not exist", f.by.unwrap_or_default()),
        ),
        ("sides", FaultError::NoSuchNode(_)) => {
            (field("sides"), format!("nodes must be in 0..{n}"))
        }
        ("sides", FaultError::NotDistinct(_)) => (field("sides"), "a node is on both sides".into()),
        ("sides", _) => (field("sides"), "partition needs two non-empty sides".into()),
        ("from" | "to", _) => (
            field("from"),
            "one-way needs distinct `from` and `to` nodes".into(),
        ),
        ("bridge", _) => (
            field("bridge"),
            "bridge needs three distinct nodes [a, b, c]".into(),
        ),
        ("duration-ms", _) => (
            field("duration-ms"),
            "pause needs a positive duration-ms".into(),
        ),
        ("extra-latency-ms", _) => (
            field("extra-latency-ms"),
            "journal-slow needs extra-latency-ms".into(),
        ),
        ("kind", _) => (
            field("kind"),
            "rolling-restart is a swarm kind (swarm.kinds), not a planned fault".into(),
        ),
        (x, e) => (field(x), e.to_string()),
    }
}

/// Remove from `doc` the keys whose value in `mine` equals the one in `base` (tables: key by
/// key; a table left empty goes too). `name` and `cluster.nodes` stay.
fn prune_defaults(doc: &mut toml_edit::Table, mine: &toml::Table, base: &toml::Table, path: &str) {
    for (k, v) in mine {
        let here = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        if here == "name" || here == "cluster.nodes" {
            continue;
        }
        let Some(b) = base.get(k) else { continue };
        match (v, b, doc.get_mut(k).and_then(|i| i.as_table_mut())) {
            (toml::Value::Table(vt), toml::Value::Table(bt), Some(sub)) => {
                prune_defaults(sub, vt, bt, &here);
                if sub.is_empty() {
                    doc.remove(k);
                } else {
                    // No `[membership]` header above a lone `[membership.downing]`.
                    sub.set_implicit(true);
                }
            }
            _ if v == b => {
                doc.remove(k);
            }
            _ => {}
        }
    }
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|b| *b == b'\n')
        .count()
        + 1
}

/// serde's "unknown field `x`" / "missing field `x`" messages name the field.
fn field_from_message(msg: &str) -> Option<String> {
    for pat in ["unknown field `", "missing field `", "unknown variant `"] {
        if let Some(i) = msg.find(pat) {
            if pat == "unknown variant `" {
                return None;
            }
            let rest = &msg[i + pat.len()..];
            return rest.find('`').map(|j| rest[..j].to_string());
        }
    }
    None
}

/// The key on the line containing `offset` (for type errors, where toml points at the value).
fn key_at(text: &str, offset: usize) -> Option<String> {
    let start = text[..offset.min(text.len())]
        .rfind('\n')
        .map(|i| i + 1)
        .unwrap_or(0);
    let line = text[start..].lines().next()?;
    let (k, _) = line.split_once('=')?;
    let k = k.trim();
    (!k.is_empty()).then(|| k.to_string())
}

/// A scenario error about `field` of the file at `path` (its line, or its table's when the
/// file leaves it to its default): for a host that cannot run what the field asks.
pub fn field_error(path: &Path, field: &str, message: String) -> ScenarioError {
    let line = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| line_of_field_or_table(&text, field));
    ScenarioError {
        file: path.to_path_buf(),
        line,
        field: Some(field.to_string()),
        message,
    }
}

/// The line of a dotted field, or, when the file leaves the field to its default, of the
/// nearest table around it that the file has (`[liveness]` for `liveness.quiet-ms`).
fn line_of_field_or_table(text: &str, field: &str) -> Option<usize> {
    let mut f = field;
    loop {
        if let Some(l) = line_of_field(text, f) {
            return Some(l);
        }
        f = &f[..f.rfind('.')?];
    }
}

/// The line of a dotted field (`table.key`), found through toml_edit's spans.
fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let doc = toml_edit::Document::parse(text.to_string()).ok()?;
    let mut item: &toml_edit::Item = doc.as_item();
    let mut span = None;
    for part in field.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let table = item.as_table_like()?;
        let (key, value) = table.get_key_value(name)?;
        span = key.span().or_else(|| value.span());
        item = value;
        if let Some(i) = index {
            let arr = item.as_array_of_tables()?;
            let t = arr.get(i)?;
            span = t.span().or(span);
            return line_of_key_in_table(text, t, field.rsplit('.').next())
                .or(span.map(|s| line_of_offset(text, s.start)));
        }
    }
    span.map(|s| line_of_offset(text, s.start))
}

fn line_of_key_in_table(text: &str, t: &toml_edit::Table, key: Option<&str>) -> Option<usize> {
    let key = key?;
    let (k, v) = t.get_key_value(key)?;
    k.span()
        .or_else(|| v.span())
        .map(|s| line_of_offset(text, s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(t, Path::new("x.toml"))
    }

    #[test]
    fn a_downing_block_that_omits_keys_takes_akkas_defaults() {
        use shardsim_core::membership::{DownAllWhenUnstable, DowningProvider, SbrStrategy};
        let with = |stable, margin, unstable| DowningProvider::SplitBrainResolver {
            strategy: SbrStrategy::KeepMajority,
            stable_after_ms: stable,
            down_removal_margin_ms: margin,
            down_all_when_unstable: unstable,
        };
        let sbr = |stable, margin| with(stable, margin, DownAllWhenUnstable::Off);
        let head = "name = \"a\"\n[cluster]\nnodes = 2\n[membership.downing]\n\
                    provider = \"split-brain-resolver\"\nstrategy = \"keep-majority\"\n";
        let s = parse(head).unwrap();
        assert_eq!(s.membership.downing, sbr(20_000, 20_000));
        // The margin follows stable-after unless it is given.
        let s = parse(&format!("{head}stable-after-ms = 7000\n")).unwrap();
        assert_eq!(s.membership.downing, sbr(7_000, 7_000));
        let s = parse(&format!("{head}down-removal-margin-ms = 0\n")).unwrap();
        assert_eq!(s.membership.downing, sbr(20_000, 0));
        // down-all-when-unstable: "on" (Akka's default), "off" (the model's, for now), or
        // milliseconds above 0.
        for (value, want) in [
            ("\"on\"", DownAllWhenUnstable::On),
            ("\"off\"", DownAllWhenUnstable::Off),
            ("15000", DownAllWhenUnstable::AfterMs(15_000)),
        ] {
            let s = parse(&format!("{head}down-all-when-unstable = {value}\n")).unwrap();
            assert_eq!(s.membership.downing, with(20_000, 20_000, want), "{value}");
        }
        for bad in ["0", "-5", "\"sometimes\""] {
            let e = parse(&format!("{head}down-all-when-unstable = {bad}\n")).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains("down-all-when-unstable") || text.contains("\"on\", \"off\""),
                "{bad}: {text}"
            );
        }
        assert_eq!(DownAllWhenUnstable::On.resolve_ms(20_000), 15_000);
        assert_eq!(DownAllWhenUnstable::On.resolve_ms(4_000), 4_000);
        assert_eq!(DownAllWhenUnstable::Off.resolve_ms(20_000), 0);
    }

    #[test]
    fn roles_app_versions_and_min_members_are_checked() {
        let base = "name = \"a\"\n[cluster]\nnodes = 4\n";
        let roles = "roles = [[\"front\"], [\"shard\"], [\"shard\", \"b\"], [\"shard\"]]\n";
        let s = parse(&format!(
            "{base}{roles}[settings]\nrole = \"shard\"\nmin-nr-of-members = 3\n"
        ))
        .unwrap();
        assert_eq!(
            (0..4).map(|i| s.hosting(i)).collect::<Vec<_>>(),
            vec![false, true, true, true]
        );
        // Without a sharding role every node hosts, whatever its roles.
        assert!(parse(&format!("{base}{roles}")).unwrap().hosting(0));
        let bad = |t: &str, field: &str, line: usize, text: &str| {
            let e = parse(&format!("{base}{t}")).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{e}");
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.message.contains(text), "{e}");
        };
        bad(
            &format!("{roles}[settings]\nrole = \"shards\"\n"),
            "settings.role",
            6,
            "unknown role",
        );
        bad("roles = [[\"\"]]\n", "cluster.roles", 4, "not a name");
        bad("roles = [[\"a\", \"a\"]]\n", "cluster.roles", 4, "twice");
        bad(
            "roles = [[], [], [], [], []]\n",
            "cluster.roles",
            4,
            "5 entries",
        );
        bad(
            "app-version = [1, 1, 1, 1, 1]\n",
            "cluster.app-version",
            4,
            "5 entries",
        );
        bad(
            "[settings]\nmin-nr-of-members = 5\n",
            "settings.min-nr-of-members",
            5,
            "above",
        );
        bad(
            "[settings]\nmin-nr-of-members = 0\n",
            "settings.min-nr-of-members",
            5,
            "at least 1",
        );
        bad(
            &format!("{roles}[settings]\nrole = \"shard\"\nmin-nr-of-members = 4\n"),
            "settings.min-nr-of-members",
            7,
            "3 nodes with the role",
        );
        bad(
            &format!("proxy-nodes = [1]\n{roles}[settings]\nrole = \"shard\"\n"),
            "cluster.proxy-nodes",
            4,
            "has the sharding role",
        );
        // Proxy nodes count out of min-nr-of-members.
        bad(
            "proxy-nodes = [0]\n[settings]\nmin-nr-of-members = 4\n",
            "settings.min-nr-of-members",
            6,
            "the 3 nodes",
        );
    }

    #[test]
    fn a_rate_band_is_checked() {
        let base = "name = \"a\"\n[cluster]\nnodes = 2\n[expect]\n";
        let s = parse(&format!("{base}outcome = \"liveness\"\nrate = [0, 0.5]\n")).unwrap();
        assert_eq!(s.expect.rate_band(), Some((0.0, 0.5)));
        assert_eq!(parse(base).unwrap().expect.rate_band(), None);
        // It survives the shrinker's writer.
        let back = parse(&s.to_toml().unwrap()).unwrap();
        assert_eq!(back.expect.rate_band(), Some((0.0, 0.5)));
        for (t, line, text) in [
            ("outcome = \"liveness\"\nrate = [0.5]\n", 6, "need a band"),
            (
                "outcome = \"liveness\"\nrate = [0.2, 1.5]\n",
                6,
                "need a band",
            ),
            (
                "outcome = \"liveness\"\nrate = [0.3, 0.2]\n",
                6,
                "need a band",
            ),
            (
                "outcome = \"liveness\"\nrate = [nan, 0.2]\n",
                6,
                "need a band",
            ),
            ("rate = [0.1, 0.2]\n", 5, "needs an expected outcome"),
        ] {
            let e = parse(&format!("{base}{t}")).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("expect.rate"), "{e}");
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.message.contains(text), "{e}");
        }
    }

    #[test]
    fn known_hazards_are_checked() {
        let base = "name = \"a\"\n[cluster]\nnodes = 2\n";
        let good = "[[expect.known]]\nname = \"reorder\"\ninvariant = \"per-sender-order\"\n\
                    fixed-by = \"handoff-ack-via-owner\"\nrate = [0, 0.001]\n";
        let s = parse(&format!("{base}{good}")).unwrap();
        assert_eq!(s.expect.known.len(), 1);
        assert_eq!(s.expect.known[0].rate_band(), Some((0.0, 0.001)));
        // It survives the shrinker's writer.
        let back = parse(&s.to_toml().unwrap()).unwrap();
        assert_eq!(back.expect.known, s.expect.known);
        let k = "[[expect.known]]\nname = \"r\"\ninvariant = \"per-sender-order\"\n";
        for (t, field, line, text) in [
            (
                "[[expect.known]]\nname = \"Bad Name\"\ninvariant = \"liveness\"\n".to_string(),
                "expect.known[0].name",
                5,
                "kebab-case",
            ),
            (format!("{k}{k}"), "expect.known[1].name", 8, "declared twice"),
            (
                "[[expect.known]]\nname = \"r\"\ninvariant = \"none\"\n".to_string(),
                "expect.known[0].invariant",
                6,
                "not one",
            ),
            (
                format!("{k}fixed-by = \"mutation\"\n"),
                "expect.known[0].fixed-by",
                7,
                "not a fix option",
            ),
            (
                format!("[options]\nhandoff-ack-via-owner = true\n{k}fixed-by = \"handoff-ack-via-owner\"\n"),
                "expect.known[0].fixed-by",
                9,
                "already on",
            ),
            (
                format!("{k}rate = [0.5, 0.1]\n"),
                "expect.known[0].rate",
                7,
                "need a band",
            ),
        ] {
            let e = parse(&format!("{base}{t}")).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{e}");
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.message.contains(text), "{e}");
        }
        let e = parse(&format!("{base}{k}typo = 1\n")).unwrap_err();
        assert!(e.to_string().contains("typo"), "{e}");
    }

    #[test]
    fn minimal_parses_with_defaults() {
        let s = parse("name = \"a\"\n[cluster]\nnodes = 2\n").unwrap();
        assert_eq!(s.settings.retry_interval_ms, 2000);
        assert_eq!(s.expect.outcome, Outcome::None);
    }

    #[test]
    fn unknown_field_names_line_and_field() {
        let e = parse("name = \"a\"\n[cluster]\nnodes = 2\nnodez = 3\n").unwrap_err();
        assert_eq!(e.line, Some(4), "{e}");
        assert_eq!(e.field.as_deref(), Some("nodez"), "{e}");
    }

    #[test]
    fn wrong_type_names_line_and_field() {
        let e = parse("name = \"a\"\n[cluster]\nnodes = \"two\"\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert_eq!(e.field.as_deref(), Some("nodes"), "{e}");
    }

    #[test]
    fn semantic_error_names_line_and_field() {
        let e =
            parse("name = \"a\"\n[cluster]\nnodes = 2\n\n[entities]\nshards = 0\n").unwrap_err();
        assert_eq!(e.line, Some(6), "{e}");
        assert_eq!(e.field.as_deref(), Some("entities.shards"));
        assert!(
            e.to_string()
                .starts_with("x.toml:6: field `entities.shards`"),
            "{e}"
        );
    }

    #[test]
    fn extractor_is_parsed_and_an_unknown_one_names_line_and_field() {
        let base = "name = \"a\"\n[cluster]\nnodes = 2\n\n[entities]\n";
        assert_eq!(
            parse(base).unwrap().entities.extractor,
            ExtractorKind::Fnv,
            "the default"
        );
        for (name, kind) in [
            ("fnv", ExtractorKind::Fnv),
            ("akka-hash-code", ExtractorKind::AkkaHashCode),
            ("per-incarnation", ExtractorKind::PerIncarnation),
            ("changed-on-restart", ExtractorKind::ChangedOnRestart),
        ] {
            let s = parse(&format!("{base}extractor = \"{name}\"\n")).unwrap();
            assert_eq!(s.entities.extractor, kind);
        }
        let e = parse(&format!("{base}shards = 4\nextractor = \"murmur\"\n")).unwrap_err();
        assert_eq!(e.line, Some(7), "{e}");
        assert_eq!(e.field.as_deref(), Some("extractor"), "{e}");
        assert!(
            e.to_string().starts_with("x.toml:7: field `extractor`"),
            "{e}"
        );
        assert!(e.message.contains("murmur"), "{e}");
        let e = parse(&format!(
            "{base}shards = 3000000000\nextractor = \"akka-hash-code\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("entities.shards"), "{e}");
        assert_eq!(e.line, Some(6), "{e}");
    }

    #[test]
    fn default_extractor_is_left_out_of_to_toml() {
        let s = parse("name = \"a\"\n[cluster]\nnodes = 2\n").unwrap();
        assert!(!s.to_toml().unwrap().contains("extractor"));
        let mut p = s.clone();
        p.entities.extractor = ExtractorKind::PerIncarnation;
        let t = p.to_toml().unwrap();
        assert!(t.contains("extractor = \"per-incarnation\""), "{t}");
        assert_eq!(parse(&t).unwrap(), p);
    }

    fn fault_err(faults: &str) -> ScenarioError {
        parse(&format!("name = \"a\"\n[cluster]\nnodes = 3\n{faults}")).unwrap_err()
    }

    #[test]
    fn fault_errors_name_the_field() {
        let cases = [
            (
                "[[faults]]\nat-ms = 1\nkind = \"crash\"\n",
                "faults[0].node",
                "Crash needs `node` in 0..3",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"pause\"\nnode = 3\nduration-ms = 5\n",
                "faults[0].node",
                "Pause needs `node` in 0..3",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"down\"\nnode = 0\nby = 7\n",
                "faults[0].by",
                "node 7 does not exist",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"partition\"\nsides = [[0], []]\n",
                "faults[0].sides",
                "partition needs two non-empty sides",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"partition\"\nsides = [[0], [3]]\n",
                "faults[0].sides",
                "nodes must be in 0..3",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"partition\"\nsides = [[0, 1], [1]]\n",
                "faults[0].sides",
                "a node is on both sides",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"one-way\"\nfrom = 1\n",
                "faults[0].from",
                "one-way needs distinct `from` and `to` nodes",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"bridge\"\nbridge = [0, 1, 1]\n",
                "faults[0].bridge",
                "bridge needs three distinct nodes [a, b, c]",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"pause\"\nnode = 1\n",
                "faults[0].duration-ms",
                "pause needs a positive duration-ms",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"journal-slow\"\n",
                "faults[0].extra-latency-ms",
                "journal-slow needs extra-latency-ms",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"rolling-restart\"\n",
                "faults[0].kind",
                "rolling-restart is a swarm kind (swarm.kinds), not a planned fault",
            ),
            (
                "[[faults]]\nat-ms = 1\nkind = \"heal\"\n\n[[faults]]\nat-ms = 2\nkind = \"heal\"\nnode = 1\n",
                "faults[1].node",
                "Heal takes no `node`",
            ),
        ];
        for (text, field, message) in cases {
            let e = fault_err(text);
            assert_eq!(e.field.as_deref(), Some(field), "{e}");
            assert_eq!(e.message, message, "{e}");
        }
    }
}
