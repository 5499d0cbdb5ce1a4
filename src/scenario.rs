//! Scenario files: TOML, documented in `sim-scenarios/README.md`. An error names the file, the
//! line and the field.

use crate::protocol::settings::{ProtocolOptions, Settings};
use serde::{Deserialize, Serialize};
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
}

/// Nodes and when they join.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClusterSpec {
    /// Number of nodes (1..=64).
    pub nodes: u32,
    /// Join time of each node in ms; missing entries join at 0. The oldest member is the first
    /// to join (ties: lower node id).
    #[serde(default)]
    pub join_at_ms: Vec<u64>,
    /// Nodes whose region is proxy-only (no entities, never coordinator).
    #[serde(default)]
    pub proxy_nodes: Vec<u32>,
}

/// Entity population.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct EntitySpec {
    /// Number of entity ids (e0..e{count-1}).
    pub count: u32,
    /// Number of shards of the default hash extractor.
    pub shards: u32,
}

impl Default for EntitySpec {
    fn default() -> Self {
        EntitySpec {
            count: 100,
            shards: 10,
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
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            senders_per_node: 1,
            interval_ms: [10, 50],
            start_ms: 0,
            stop_ms: 60_000,
            focus: 0,
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
}

impl Default for JournalSpec {
    fn default() -> Self {
        JournalSpec {
            write_latency_ms: [1, 3],
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

/// The invariants, by name.
#[derive(
    Clone, Copy, Debug, Default, Deserialize, Eq, Hash, Ord, PartialEq, PartialOrd, Serialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// No violation.
    #[default]
    None,
    /// Two live incarnations of one entity, or one shard hosted twice.
    AtMostOne,
    /// A (sender, entity) pair saw its seqs out of order.
    PerSenderOrder,
    /// A message delivered twice, never sent, or to the wrong entity.
    NoDuplicate,
}

impl Outcome {
    /// The kebab-case name used in files and output.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::None => "none",
            Outcome::AtMostOne => "at-most-one",
            Outcome::PerSenderOrder => "per-sender-order",
            Outcome::NoDuplicate => "no-duplicate",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the scenario is expected to show.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ExpectSpec {
    /// `none`, or the invariant expected to break in at least one seed of a campaign.
    pub outcome: Outcome,
}

/// A scenario file that could not be loaded.
#[derive(Debug)]
pub struct ScenarioError {
    /// The file.
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
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.to_path_buf(),
            line: None,
            field: None,
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(&text, path)
    }

    /// Parse and validate scenario text; `path` is used in errors only.
    pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
        let sc: Scenario = toml::from_str(text).map_err(|e| {
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
        sc.validate().map_err(|(field, message)| ScenarioError {
            file: path.to_path_buf(),
            line: line_of_field(text, &field),
            field: Some(field),
            message,
        })?;
        Ok(sc)
    }

    /// Semantic checks; returns (dotted field, message).
    pub fn validate(&self) -> Result<(), (String, String)> {
        let err = |f: &str, m: String| Err((f.to_string(), m));
        if self.cluster.nodes == 0 || self.cluster.nodes > 64 {
            return err(
                "cluster.nodes",
                format!("must be 1..=64, got {}", self.cluster.nodes),
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
        if self.entities.count == 0 {
            return err("entities.count", "must be at least 1".into());
        }
        if self.entities.shards == 0 {
            return err("entities.shards", "must be at least 1".into());
        }
        let [a, b] = self.workload.interval_ms;
        if a == 0 || a > b {
            return err(
                "workload.interval-ms",
                format!("need 0 < min <= max, got [{a}, {b}]"),
            );
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
        Ok(())
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

/// The line of a dotted field (`table.key`), found through toml_edit's spans.
fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let doc = toml_edit::Document::parse(text.to_string()).ok()?;
    let mut item: &toml_edit::Item = doc.as_item();
    let mut span = None;
    for part in field.split('.') {
        let table = item.as_table_like()?;
        let (key, value) = table.get_key_value(part)?;
        span = key.span().or_else(|| value.span());
        item = value;
    }
    span.map(|s| line_of_offset(text, s.start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(t, Path::new("x.toml"))
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
}
