//! `run --perfetto`: the Chrome trace-event JSON that ui.perfetto.dev and chrome://tracing
//! open. Checks the fields those viewers need (traceEvents, ph, ts, pid, tid, name), the
//! metadata naming every process and track, flows whose start and end match by id and bind to
//! a slice, instants for faults and violations, and that the JSON Lines trace and its hash do
//! not change.

mod common;
use common::*;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn export(scenario: &str, seed: &str, name: &str) -> (Value, String, std::path::PathBuf) {
    let d = tmp(name);
    let (p, t) = (d.join("p.json"), d.join("t.jsonl"));
    let (code, out, err) = shardsim(&[
        "run",
        scenario,
        "--seed",
        seed,
        "--trace",
        t.to_str().unwrap(),
        "--perfetto",
        p.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("perfetto trace written to"), "{out}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    (doc, out, t)
}

/// A slice: ts, dur, name.
type Slice = (f64, f64, String);

fn num(e: &Value, k: &str) -> f64 {
    e[k].as_f64()
        .unwrap_or_else(|| panic!("`{k}` is not a number in {e}"))
}

/// Every event has the fields the viewers read; returns the events.
fn check_shape(doc: &Value) -> &Vec<Value> {
    let ev = doc["traceEvents"].as_array().expect("traceEvents array");
    assert!(!ev.is_empty());
    for e in ev {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(["X", "s", "f", "i", "M"].contains(&ph), "{e}");
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        if ph != "M" {
            assert!(num(e, "ts") >= 0.0, "{e}");
        }
        if ph == "X" {
            assert!(num(e, "dur") > 0.0, "{e}");
        }
        if ph == "i" {
            assert!(["g", "p", "t"].contains(&e["s"].as_str().unwrap()), "{e}");
        }
    }
    ev
}

#[test]
fn a_hazard_run_exports_tracks_flows_and_the_violation() {
    let (doc, out, trace) = export(
        "sim-scenarios/hazards/reorder-across-handoff.toml",
        "41",
        "hazard",
    );
    let ev = check_shape(&doc);
    // Metadata: a named process per pid and a named track per (pid, tid) used.
    let mut proc_names: BTreeMap<u64, String> = BTreeMap::new();
    let mut thread_names: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for e in ev.iter().filter(|e| e["ph"] == "M") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match e["name"].as_str().unwrap() {
            "process_name" => {
                proc_names.insert(key.0, e["args"]["name"].as_str().unwrap().into());
            }
            "thread_name" => {
                thread_names.insert(key, e["args"]["name"].as_str().unwrap().into());
            }
            _ => {}
        }
    }
    for e in ev.iter().filter(|e| e["ph"] != "M") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(proc_names.contains_key(&key.0), "unnamed process: {e}");
        assert!(thread_names.contains_key(&key), "unnamed track: {e}");
    }
    let procs: BTreeSet<&str> = proc_names.values().map(String::as_str).collect();
    for p in ["node 0", "node 1", "node 2", "node 3", "node 4"] {
        assert!(procs.contains(p), "{procs:?}");
    }
    let tracks: BTreeSet<&str> = thread_names.values().map(String::as_str).collect();
    for t in ["region", "coordinator", "membership"] {
        assert!(tracks.contains(t), "{tracks:?}");
    }
    assert!(tracks.iter().any(|t| t.starts_with("shard ")), "{tracks:?}");
    // Thread ids are unique over the file.
    let tids: BTreeSet<u64> = thread_names.keys().map(|k| k.1).collect();
    assert_eq!(tids.len(), thread_names.len());

    // Slices: never partly overlapping on a track; keyed for the flows' binding.
    let mut slices: BTreeMap<(u64, u64), Vec<Slice>> = BTreeMap::new();
    for e in ev.iter().filter(|e| e["ph"] == "X") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        slices.entry(key).or_default().push((
            num(e, "ts"),
            num(e, "dur"),
            e["name"].as_str().unwrap().to_string(),
        ));
    }
    for v in slices.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in v.windows(2) {
            assert!(
                w[1].0 >= w[0].0 + w[0].1 - 1e-6 || w[1].0 == w[0].0,
                "{w:?}"
            );
        }
    }
    let enclosing = |e: &Value| -> Option<String> {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let ts = num(e, "ts");
        // The slice open at ts: the one starting there (viewers close a slice at its end).
        let v = slices.get(&key)?;
        let at: Vec<&String> = v
            .iter()
            .filter(|(s, _, _)| *s == ts)
            .map(|x| &x.2)
            .collect();
        assert!(at.len() <= 1, "two slices start at {ts}: {at:?}");
        at.first().map(|n| (*n).clone())
    };
    // Flows: each id starts once and ends once, with the same name and category; the start
    // binds to a `send` slice, the end (binding point "e") to the delivery's slice, not before
    // the start.
    let mut starts: BTreeMap<u64, &Value> = BTreeMap::new();
    let mut ends: BTreeMap<u64, &Value> = BTreeMap::new();
    for e in ev {
        let id = || e["id"].as_u64().expect("flow id");
        match e["ph"].as_str().unwrap() {
            "s" => assert!(starts.insert(id(), e).is_none(), "two starts: {e}"),
            "f" => {
                assert_eq!(e["bp"], "e", "{e}");
                assert!(ends.insert(id(), e).is_none(), "two ends: {e}");
            }
            _ => {}
        }
    }
    assert!(starts.len() > 1000, "{}", starts.len());
    assert_eq!(
        starts.keys().collect::<Vec<_>>(),
        ends.keys().collect::<Vec<_>>()
    );
    let mut host_shard = 0;
    for (id, s) in &starts {
        let f = ends[id];
        assert_eq!((&s["name"], &s["cat"]), (&f["name"], &f["cat"]), "{s} {f}");
        assert!(num(s, "ts") <= num(f, "ts"), "{s} {f}");
        let from = enclosing(s).unwrap_or_else(|| panic!("unbound start {s}"));
        assert_eq!(from, format!("send {}", s["name"].as_str().unwrap()));
        let to = enclosing(f).unwrap_or_else(|| panic!("unbound end {f}"));
        assert!(to.ends_with(s["name"].as_str().unwrap()), "{to} {f}");
        if s["name"] == "HostShard" {
            host_shard += 1;
            // The coordinator sends HostShard to a region.
            let k = |e: &Value| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            assert_eq!(thread_names[&k(s)], "coordinator");
            assert_eq!(thread_names[&k(f)], "region");
        }
    }
    assert!(host_shard > 0);
    // The violation: a global instant at its simulated time.
    let v: Vec<&Value> = ev
        .iter()
        .filter(|e| e["ph"] == "i" && e["cat"] == "violation")
        .collect();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["s"], "g");
    assert_eq!(v[0]["name"], "VIOLATION per-sender-order");
    assert_eq!(num(v[0], "ts"), 12_023_814.0);
    // ts is simulated µs: every slice's whole µs is the time of a trace event.
    let trace_text = std::fs::read_to_string(&trace).unwrap();
    let times: BTreeSet<u64> = trace_text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["t"]
                .as_u64()
                .unwrap()
        })
        .collect();
    for e in ev.iter().filter(|e| e["ph"] == "X" && e["cat"] != "msg") {
        assert!(times.contains(&(num(e, "ts").floor() as u64)), "{e}");
    }
    // The trace and its hash are those of a run without --perfetto.
    let d = tmp("hazard-plain");
    let plain = d.join("t.jsonl");
    let (code, out2, _) = shardsim(&[
        "run",
        "sim-scenarios/hazards/reorder-across-handoff.toml",
        "--seed",
        "41",
        "--trace",
        plain.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(&plain).unwrap(), trace_text);
    let hash = |o: &str| {
        o.lines()
            .find(|l| l.starts_with("trace hash"))
            .map(str::to_string)
    };
    assert_eq!(hash(&out), hash(&out2));
    assert!(doc["otherData"]["seed"] == "41");
}

#[test]
fn faults_are_global_instants() {
    let (doc, _, _) = export(
        "sim-scenarios/shrunk/swarm-auto-down-seed260.toml",
        "260",
        "faults",
    );
    let ev = check_shape(&doc);
    let faults: Vec<&Value> = ev
        .iter()
        .filter(|e| e["ph"] == "i" && e["cat"] == "fault")
        .collect();
    assert!(!faults.is_empty());
    assert!(faults.iter().all(|e| e["s"] == "g"));
    assert!(faults
        .iter()
        .all(|e| e["name"].as_str().unwrap().starts_with("fault ")));
    assert!(ev
        .iter()
        .any(|e| e["ph"] == "i" && e["name"] == "VIOLATION at-most-one"));
}

#[test]
fn an_unwritable_perfetto_file_exits_2() {
    let d = tmp("unwritable");
    let file = d.join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let target = file.join("p.json");
    let (code, _, err) = shardsim(&[
        "run",
        "sim-scenarios/one-node.toml",
        "--seed",
        "1",
        "--perfetto",
        target.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    // Refused before the run, naming the flag and the path.
    assert!(
        err.contains("--perfetto") && err.contains("cannot write there"),
        "{err}"
    );
}
