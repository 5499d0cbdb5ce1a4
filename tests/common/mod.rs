//! Helpers shared by the integration tests: the repository root, scratch folders and running
//! the `shardsim` binary. Each test crate uses a part of it.
#![allow(dead_code)]

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

/// The one scenario loader of the tests: a file under `sim-scenarios/` (`"hazards/x.toml"`), or
/// a path from the repository root (`"sim-scenarios/x.toml"`, `"tests/data/x.toml"`). A bad
/// file fails the test with its file, line and field.
pub fn scenario(name: &str) -> shardsim_harness::scenario::Scenario {
    let path = if name.starts_with("sim-scenarios/") || name.starts_with("tests/") {
        root().join(name)
    } else {
        root().join("sim-scenarios").join(name)
    };
    shardsim_harness::scenario::Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// [`scenario`], shared as the runners take it.
pub fn load(name: &str) -> std::sync::Arc<shardsim_harness::scenario::Scenario> {
    std::sync::Arc::new(scenario(name))
}

/// A scenario kept for the tests under `tests/data/` (not fuzzed by the scenario walker).
pub fn data_scenario(name: &str) -> shardsim_harness::scenario::Scenario {
    shardsim_harness::scenario::Scenario::load(&root().join("tests/data").join(name)).unwrap()
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
