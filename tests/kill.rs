//! Nothing lost on a kill: `fuzz --corpus` and `shrink --out` are killed by
//! SIGKILL at drawn points of their run, over and over; the file they write is afterwards
//! either the old file or the new complete one, never a torn mix. Half the kills aim at the
//! write itself (a writer that truncates the file in place is caught: tried by hand). Both write through
//! `campaign::write_atomic` (temporary file in the same folder, flushed, then renamed).
#![cfg(unix)]

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{root, tmp};

/// Run the command to its end once (the new file), then `trials` times killed, restoring the
/// old file before each: the even trials at a point drawn uniformly over 1.1 times that run's
/// wall time, the odd ones within 3 ms of the write starting. Returns
/// how many trials left the old file and how many the new one.
fn kill_trials(args: &[&str], file: &Path, old: &[u8], trials: u32, seed: u64) -> (u32, u32) {
    let bin = env!("CARGO_BIN_EXE_shardsim");
    std::fs::write(file, old).unwrap();
    let t0 = Instant::now();
    let st = Command::new(bin)
        .args(args)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let full = t0.elapsed();
    assert!(st.code().is_some(), "{args:?} ended by a signal");
    let new = std::fs::read(file).unwrap();
    assert_ne!(new, old, "{args:?} did not rewrite {}", file.display());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut olds, mut news) = (0, 0);
    for i in 0..trials {
        std::fs::write(file, old).unwrap();
        let at = Duration::from_micros(rng.next_u64() % (full.as_micros() as u64 * 11 / 10 + 1));
        let mut child = Command::new(bin)
            .args(args)
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let how = if i % 2 == 0 {
            std::thread::sleep(at);
            format!("killed after {at:?} of {full:?}")
        } else {
            // Every other trial aims at the write itself: wait until a temporary file appears
            // beside the target or the target changes, then kill within 0-3 ms.
            let dir = file.parent().unwrap();
            loop {
                let others = std::fs::read_dir(dir).unwrap().count() > 1;
                let changed = std::fs::metadata(file).map_or(true, |m| m.len() != old.len() as u64);
                if others || changed || child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            let after = Duration::from_micros(rng.next_u64() % 3_000);
            std::thread::sleep(after);
            format!("killed {after:?} after the write began")
        };
        let _ = child.kill(); // SIGKILL; an error means it had already exited
        child.wait().unwrap();
        let now = std::fs::read(file).unwrap();
        if now == old {
            olds += 1;
        } else if now == new {
            news += 1;
        } else {
            panic!(
                "trial {i} ({how}): {} is neither the old nor the new \
                 file ({} bytes; old {}, new {})",
                file.display(),
                now.len(),
                old.len(),
                new.len()
            );
        }
    }
    eprintln!("{args:?}: {trials} kills over {full:?}: {olds} left the old file, {news} the new");
    (olds, news)
}

#[test]
fn a_killed_fuzz_leaves_the_corpus_whole() {
    let d = tmp("kill-corpus");
    let corpus = d.join("corpus.jsonl");
    // A large existing corpus (entries of another campaign), so rewriting it takes a while and
    // some kills land during the write.
    let mut old = String::new();
    for seed in 0..100_000u64 {
        old.push_str(&format!(
            "{{\"scenario\":\"sim-scenarios/hazards/stale-host-shard-resend.toml\",\"seed\":{},\
             \"invariant\":\"at-most-one\",\"t_us\":{}}}\n",
            1_000_000 + seed,
            seed * 7
        ));
    }
    let c = corpus.to_str().unwrap();
    let args = [
        "fuzz",
        "sim-scenarios/hazards/reorder-across-handoff.toml",
        "--schedules",
        "12",
        "--jobs",
        "1",
        "--quiet",
        "--corpus",
        c,
    ];
    kill_trials(&args, &corpus, old.as_bytes(), 20, 1);
    // The file it leaves still reads as a corpus.
    shardsim::campaign::read_corpus(&corpus).unwrap();
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_killed_shrink_leaves_its_output_whole() {
    let d = tmp("kill-shrink");
    let out = d.join("shrunk.toml");
    let old = b"# an earlier shrink's output\nname = \"earlier\"\n".to_vec();
    let o = out.to_str().unwrap();
    let args = [
        "shrink",
        "sim-scenarios/hazards/reorder-across-handoff.toml",
        "--seed",
        "2",
        "--max-runs",
        "30",
        "--out",
        o,
    ];
    kill_trials(&args, &out, &old, 12, 2);
    let _ = std::fs::remove_dir_all(&d);
}
