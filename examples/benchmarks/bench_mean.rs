//! Throughput of a private mean release against the machine's floor: n = 10^6 curves x K = 100 grid
//! points, ICLP-RKHS with the plug-in rule and the privately tuned pipeline (`MeanCurve::build`, what
//! the Python package's default runs, the basis build included) from an in-memory curve set.
//!
//! Every figure is the median of `--reps` runs (5 by default) after one warm-up, with the min and max:
//! - `roof`: the dgemm roof, GFLOP per CPU second of faer's sequential product of two 1024 x 1024
//!   matrices (the best the projection's kernel can do on one core); the floor takes the best run;
//! - `read`: CPU seconds to read the data once (an 8-lane sum of every value, on rayon's threads);
//! - `floor`: the projection `n x K` by `K x J` (`2 n K J` flops) at the roof (its best run), plus
//!   reading the data once (the median): the CPU seconds below which no release of the clipped mean
//!   can go;
//! - each release's CPU seconds (every thread of the process, `/proc/self/task/*/schedstat`), its
//!   wall seconds, its CPU over the floor, its peak resident memory over the data, and a checksum of
//!   the release's bits at a fixed seed (the same build of the data and the same seed give the same
//!   checksum on any thread count);
//! - `growth`: the tuned release's CPU seconds at n = 10^4 ... 3 x 10^6 (prefixes of one simulated
//!   set) and the exponent `ln(T(3·10^6)/T(10^4)) / ln 300` (the least-squares slope of ln T on ln n
//!   over every size beside it). `--no-growth` skips it (it simulates 3 x 10^6 curves, 2.4 GB).
//!
//! `--profile tuned|plugin` runs only that release, `--reps` times (for `perf record`).
//!
//! `cargo run --release --example bench_mean [-- --n N] [--reps R] [--no-growth] [--profile KIND]`

use fdp::release::Charge;
use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use rayon::prelude::*;

use fdp::data::{CurveSet, Scenario, simulate};
use fdp::estimators::{BasisMean, MeanSetup, Mechanism, PlugIn};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// A `kB` field of /proc/self/status, in bytes.
fn status_bytes(field: &str) -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse::<f64>().ok().map(|kb| kb * 1024.0)
}

/// CPU seconds of every live thread of the process (the first field of each thread's schedstat, in
/// nanoseconds); NaN where /proc is not readable. rayon's workers live as long as the process, so a
/// difference of two readings is the CPU spent in between.
fn cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return f64::NAN };
    let mut ns = 0u64;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    }
    ns as f64 * 1e-9
}

/// Median, min and max.
#[derive(Debug, Clone, Copy)]
struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

impl Stats {
    fn of(values: &[f64]) -> Self {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        let median = if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 };
        Self { median, min: v[0], max: v[v.len() - 1] }
    }

    /// `name=median name_min=min name_max=max`.
    fn show(&self, name: &str, digits: usize) -> String {
        format!("{name}={:.d$} {name}_min={:.d$} {name}_max={:.d$}", self.median, self.min, self.max, d = digits)
    }
}

/// One warm-up call of `f`, then `reps` timed calls: (CPU seconds, wall seconds, the last result).
fn measure<T>(reps: usize, mut f: impl FnMut() -> BoxResult<T>) -> BoxResult<(Vec<f64>, Vec<f64>, T)> {
    let mut last = f()?;
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let (c0, w0) = (cpu_seconds(), Instant::now());
        last = f()?;
        wall.push(w0.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c0);
    }
    Ok((cpu, wall, last))
}

/// GFLOP per CPU second of faer's sequential product of two 1024 x 1024 matrices.
fn dgemm_roof(reps: usize) -> BoxResult<Vec<f64>> {
    let size = 1024;
    let a = Mat::<f64>::from_fn(size, size, |i, j| ((i * 7 + j * 13) % 17) as f64 / 17.0 - 0.5);
    let b = Mat::<f64>::from_fn(size, size, |i, j| ((i * 11 + j * 5) % 19) as f64 / 19.0 - 0.5);
    let mut c = Mat::<f64>::zeros(size, size);
    let flops = 2.0 * (size * size * size) as f64;
    let (cpu, _, _) = measure(reps, || {
        matmul(c.as_mut(), Accum::Replace, a.as_ref(), b.as_ref(), 1.0, Par::Seq);
        Ok(c[(0, 0)])
    })?;
    Ok(cpu.iter().map(|s| flops / s / 1e9).collect())
}

/// CPU seconds to read `values` once (an 8-lane sum on rayon's threads, so it vectorises).
fn read_once(values: &[f64], reps: usize) -> BoxResult<Vec<f64>> {
    let (cpu, _, _) = measure(reps, || {
        Ok(values
            .par_chunks(1 << 16)
            .map(|chunk| {
                let mut lanes = [0.0f64; 8];
                chunk.chunks_exact(8).for_each(|c| lanes.iter_mut().zip(c).for_each(|(l, v)| *l += v));
                lanes.iter().sum::<f64>() + chunk.chunks_exact(8).remainder().iter().sum::<f64>()
            })
            .sum::<f64>())
    })?;
    Ok(cpu)
}

/// A 64-bit checksum of a release's bits.
fn checksum(values: &[f64]) -> u64 {
    values.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, v| (h ^ v.to_bits()).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The benchmark's two mechanisms on one basis.
struct Job {
    basis: MercerBasis,
    tau: f64,
}

impl Job {
    fn new() -> BoxResult<Self> {
        let grid = Grid::midpoint(0.0, 1.0, 100)?;
        let basis = MercerBasis::build(Stationary::matern32(0.1)?, grid, BasisOptions::default())?;
        let tau = Scenario::S1.design_bounds(&basis)?.coefficient_l1;
        Ok(Self { basis, tau })
    }

    /// ICLP-RKHS at the public bound with the plug-in rule, at a fixed seed.
    fn plug_in(&self, curves: &CurveSet) -> BoxResult<Vec<f64>> {
        let setup = MeanSetup::new(curves.n(), Epsilon::new(1.0)?, ClippingBound::coefficient_l1(self.tau)?)?;
        let plug = PlugIn::new(&self.basis, &setup)?;
        let mechanism = BasisMean::iclp_rkhs(&self.basis, setup, plug.rkhs)?;
        Ok(mechanism.release(curves, &mut NoiseRng::seeded(1), Charge::unaccounted())?.curve().to_vec())
    }

    /// The privately tuned pipeline (basis build included, as a Python call builds it too).
    fn tuned(&self, curves: &CurveSet) -> BoxResult<Vec<f64>> {
        let tuned = MeanCurve::iclp_rkhs(Stationary::matern32(0.1)?, ClippingBound::coefficient_l1(self.tau)?)
            .build(curves, Epsilon::new(1.0)?)?;
        Ok(tuned.release(curves, &mut NoiseRng::seeded(1), Charge::unaccounted())?.curve().to_vec())
    }
}

fn main() -> BoxResult<()> {
    // A benchmark: variable-time sampling (the same draws; releases are padded by default, which
    // costs the same except a fixed-work division at non-power-of-two Laplace scales, DESIGN 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1));
    let n: usize = value("--n").map_or(Ok(1_000_000), |s| s.parse())?;
    let reps: usize = value("--reps").map_or(Ok(5), |s| s.parse())?;
    let growth = !args.iter().any(|a| a == "--no-growth");
    let job = Job::new()?;
    let (k, j) = (job.basis.n_points(), job.basis.len());

    let start = Instant::now();
    let sim = simulate(Scenario::S1, &job.basis, n, 1)?;
    let simulate_s = start.elapsed().as_secs_f64();
    let data_bytes = (sim.curves.values().len() * 8) as f64;

    if let Some(kind) = value("--profile") {
        for _ in 0..reps {
            let curve = match kind.as_str() {
                "tuned" => job.tuned(&sim.curves)?,
                "plugin" => job.plug_in(&sim.curves)?,
                other => return Err(format!("--profile takes tuned or plugin, not {other}").into()),
            };
            println!("profile {kind} checksum={:016x}", checksum(&curve));
        }
        return Ok(());
    }

    // The roof is the best run (a load on the machine only lowers it), so the floor is the lowest.
    let roof = Stats::of(&dgemm_roof(reps)?);
    let read = Stats::of(&read_once(sim.curves.values(), reps)?);
    let projection_s = 2.0 * (n * k * j) as f64 / (roof.max * 1e9);
    let floor = projection_s + read.median;
    println!(
        "bench floor n={n} K={k} J={j} floor_cpu_s={floor:.4} projection_cpu_s={projection_s:.4} {} {} data_mb={:.0} simulate_s={simulate_s:.3} threads={}",
        roof.show("roof_gflops", 1),
        read.show("read_cpu_s", 4),
        data_bytes / 1e6,
        rayon::current_num_threads()
    );

    for (name, release) in [
        ("iclp_rkhs", &(|c: &CurveSet| job.plug_in(c)) as &dyn Fn(&CurveSet) -> BoxResult<Vec<f64>>),
        ("tuned_iclp_rkhs", &|c: &CurveSet| job.tuned(c)),
    ] {
        // The resident high-water mark is reset before the warm-up, so its peak is a release's own.
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let (cpu, wall, curve) = measure(reps, || release(&sim.curves))?;
        let peak = status_bytes("VmHWM:").map_or(f64::NAN, |p| p / data_bytes);
        let ratios: Vec<f64> = cpu.iter().map(|c| c / floor).collect();
        println!(
            "bench mean={name} n={n} K={k} {} {} {} peak_over_data={peak:.2} hwm_reset={reset} curve_norm={:.3} checksum={:016x}",
            Stats::of(&cpu).show("cpu_s", 4),
            Stats::of(&ratios).show("over_floor", 2),
            Stats::of(&wall).show("wall_s", 4),
            curve.iter().map(|v| v * v).sum::<f64>().sqrt(),
            checksum(&curve)
        );
    }

    if growth {
        drop(sim);
        let sizes = [10_000usize, 30_000, 100_000, 300_000, 1_000_000, 3_000_000];
        let largest = simulate(Scenario::S1, &job.basis, sizes[sizes.len() - 1], 2)?;
        let mut points = Vec::new();
        for m in sizes {
            let (curves, _) =
                CurveSet::borrowed(largest.curves.grid().clone(), &largest.curves.values()[..m * k], None)?;
            let (cpu, wall, _) = measure(reps, || job.tuned(&curves))?;
            let cpu = Stats::of(&cpu);
            println!(
                "bench growth mean=tuned_iclp_rkhs n={m} {} {} per_record_us={:.3}",
                cpu.show("cpu_s", 5),
                Stats::of(&wall).show("wall_s", 5),
                cpu.median / m as f64 * 1e6
            );
            points.push(((m as f64).ln(), cpu.median.ln()));
        }
        let (first, last) = (points[0], points[points.len() - 1]);
        let endpoints = (last.1 - first.1) / (last.0 - first.0);
        let count = points.len() as f64;
        let (mx, my) =
            (points.iter().map(|p| p.0).sum::<f64>() / count, points.iter().map(|p| p.1).sum::<f64>() / count);
        let slope = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
            / points.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
        println!(
            "bench growth exponent={endpoints:.3} least_squares={slope:.3} from_n={} to_n={}",
            sizes[0],
            sizes[sizes.len() - 1]
        );
    }
    Ok(())
}
