//! Helpers shared by the integration tests: the repository root, scratch folders, running the
//! `shardsim` binary, and an `Output` with equality for exact comparisons of role outputs.
//! Each test crate uses a part of it.
#![allow(dead_code)]

pub mod coordinator_fixtures;
pub mod harness;

use shardsim::ids::ShardId;
use shardsim::protocol::coordinator::CoordinatorState;
use shardsim::protocol::Addr;
use shardsim::protocol::{CoordinatorEvent, Local, Msg, Observation, Output, StoreRequest, Timer};
use shardsim::time::Duration;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every `.toml` file under `dir`, recursively, in sorted path order.
pub fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for p in entries {
        if p.is_dir() {
            out.extend(toml_files(&p));
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
    out
}

/// A scenario kept for the tests under `tests/data/` (not fuzzed by the scenario walker).
pub fn data_scenario(name: &str) -> shardsim::scenario::Scenario {
    shardsim::scenario::Scenario::load(&root().join("tests/data").join(name)).unwrap()
}

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch folder for this test crate and process.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "shardsim-{}-{}-{name}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run the `shardsim` binary from the repository root: (exit code, stdout, stderr).
pub fn shardsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `shardsim` with the slice variables (Kubernetes, Slurm) removed from its environment, then
/// `env` set: (exit code, stdout, stderr).
pub fn shardsim_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_shardsim"));
    c.args(args).current_dir(root());
    for v in [
        "JOB_COMPLETION_INDEX",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_STEP",
        "SLURM_ARRAY_TASK_COUNT",
    ] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An `Output` with equality, for exact comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum O {
    Send(Addr, Msg),
    Set(Timer, Duration),
    Cancel(Timer),
    Persist(CoordinatorEvent),
    Obs(Observation),
    Local(Local),
    Store(StoreRequest),
    Stop(&'static str),
    /// ddata mode: a state read with its additional replicas and timeout.
    StateRead(usize, Duration),
    /// ddata mode: a state write (the whole new state), additional replicas, timeout.
    StateWrite(Box<CoordinatorState>, usize, Duration),
    /// ddata mode with remember-entities: the remember store's read of its shard set.
    RememberedShardsRead(usize, Duration),
    /// ddata mode with remember-entities: `AddShard`.
    RememberShardAdd(ShardId, usize, Duration),
}

/// The comparable form of an output.
pub fn norm(o: &Output) -> O {
    match o {
        Output::Send { to, msg } => O::Send(*to, *msg),
        Output::SetTimer { timer, after } => O::Set(*timer, *after),
        Output::CancelTimer(t) => O::Cancel(*t),
        Output::Persist(e) => O::Persist(*e),
        Output::Observe(ob) => O::Obs(ob.clone()),
        Output::Local { msg, .. } => O::Local(*msg),
        Output::Store(req) => O::Store((**req).clone()),
        Output::Stop { reason } => O::Stop(reason),
        Output::StateRead {
            additional,
            timeout,
        } => O::StateRead(*additional, *timeout),
        Output::StateWrite {
            state,
            additional,
            timeout,
        } => O::StateWrite(state.clone(), *additional, *timeout),
        Output::RememberedShardsRead {
            additional,
            timeout,
        } => O::RememberedShardsRead(*additional, *timeout),
        Output::RememberShardAdd {
            shard,
            additional,
            timeout,
        } => O::RememberShardAdd(*shard, *additional, *timeout),
    }
}

/// The journal call-timeout timer that accompanies every persist, and the allocation-decision
/// observation, are checked by their own tests; elsewhere they are left out of exact
/// comparisons.
pub fn not_persist_timer(o: &O) -> bool {
    !matches!(
        o,
        O::Set(Timer::PersistTimeout, _)
            | O::Cancel(Timer::PersistTimeout)
            | O::Obs(Observation::AllocationDecided { .. })
    )
}
