//! `fuzz --coverage`: a campaign that collects behaviour coverage ([`shardsim_harness::sim::coverage`],
//! the features the world records) over a range of seeds, and the thread pool that guided
//! exploration shares.

pub use shardsim_harness::sim::coverage::{Bitmap, BITS};

/// Run `f` over `inputs` on `jobs` threads; the outputs in input order (so a caller that merges
/// them in order gets the same answer for any `jobs`).
pub fn run_batch<I: Sync, O: Send>(
    inputs: &[I],
    jobs: usize,
    f: impl Fn(&I) -> O + Sync,
) -> Vec<O> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let jobs = jobs.max(1).min(inputs.len().max(1));
    if jobs == 1 {
        return inputs.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<O>>> = Mutex::new((0..inputs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= inputs.len() {
                    break;
                }
                let o = f(&inputs[i]);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(o);
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|o| o.expect("every input ran"))
        .collect()
}

/// What `fuzz --coverage` found over a campaign of seeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverageReport {
    /// First seed.
    pub seed_start: u64,
    /// Schedules run.
    pub schedules: u64,
    /// Features reached by the campaign (bits set in the union).
    pub features: u32,
    /// The schedule (1-based count) after which no new feature appeared.
    pub last_new_at: u64,
    /// (schedules run, features reached) at 1, 2, 4, ... schedules and at the end.
    pub growth: Vec<(u64, u32)>,
    /// Schedules whose run broke an invariant (any), with the seed of the first.
    pub failing: u64,
    /// The first failing seed, its invariant and time (µs).
    pub first_failure: Option<(u64, String, u64)>,
    /// Every schedule's features, unioned.
    pub map: Bitmap,
}

/// Run seeds `seed_start..seed_start + schedules` of `sc` with coverage on, `jobs` threads;
/// the answer does not depend on `jobs` (chunks of seeds run in parallel, merged in seed order).
pub fn campaign(
    sc: &std::sync::Arc<shardsim_harness::scenario::Scenario>,
    seed_start: u64,
    schedules: u64,
    jobs: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> CoverageReport {
    use shardsim_harness::sim::World;
    use shardsim_harness::trace::TraceMode;
    let mut rep = CoverageReport {
        seed_start,
        schedules: 0,
        features: 0,
        last_new_at: 0,
        growth: Vec::new(),
        failing: 0,
        first_failure: None,
        map: Bitmap::new(),
    };
    const CHUNK: u64 = 256;
    let mut next_mark = 1u64;
    let mut done = 0u64;
    while done < schedules {
        let n = CHUNK.min(schedules - done);
        let seeds: Vec<u64> = (0..n).map(|i| seed_start + done + i).collect();
        let results = run_batch(&seeds, jobs, |&seed| {
            let (r, _) = World::new(sc.clone(), seed, TraceMode::Off)
                .with_coverage()
                .run();
            r
        });
        for r in results {
            done += 1;
            if let Some(m) = &r.coverage {
                if rep.map.merge(m) > 0 {
                    rep.last_new_at = done;
                }
            }
            if let Some(v) = &r.violation {
                rep.failing += 1;
                if rep.first_failure.is_none() {
                    rep.first_failure = Some((r.seed, v.invariant.name().to_string(), v.t.0));
                }
            }
            if done == next_mark {
                rep.growth.push((done, rep.map.count()));
                next_mark *= 2;
            }
        }
        progress(done);
    }
    rep.schedules = done;
    rep.features = rep.map.count();
    if rep.growth.last().map(|g| g.0) != Some(done) {
        rep.growth.push((done, rep.features));
    }
    rep
}
