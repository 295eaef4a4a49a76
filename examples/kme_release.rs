//! Balog, Tolstikhin & Schölkopf (2018), Figures 1 and 2, in their setting (Appendix B): private
//! weighted synthetic datasets of a 10-component Gaussian mixture in R^D (D ∈ {2, 5}; means ~
//! N(100·1, 200 I), component covariance 30 I, weights ∝ 1, 1/2, …, 1/10), N = 10^5, kernel
//! exp(−γ‖x − y‖²) with γ = 10^-4/D, by Algorithm 1 (Scenario 1: synthetic points from N(0, 500 I);
//! Scenario 2: the first M rows, published) and Algorithm 2 (J = 10^4 random Fourier features +
//! reduced set), against the data-independent uniform-weight baselines: RKHS distance to the
//! empirical kernel mean embedding against M, for ε ∈ {0.01, 0.1, 1}, δ = 1e-6.
//!
//! `cargo run --release --example kme_release [-- --quick]` writes `reports/kme_release/`.

#[path = "common/mod.rs"]
mod common;

use std::fmt::Write as _;
use std::time::Instant;

use common::{AnyResult, finish_report, quick_flag};
use fdp::kme::{
    PointSet, RandomFourierFeatures, ReducedSetOptions, SyntheticSubspace, WeightedPoints, kernel_sum, rkhs_distance_sq,
};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::release::{Mechanism, Release, WeightedSample};
use fdp::report::{ErrorSeries, LogLogFigure, PALETTE, ReportDir};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

#[derive(Serialize)]
struct Row {
    dim: usize,
    method: &'static str,
    m: usize,
    epsilon: Option<f64>,
    rkhs_dist: f64,
}

/// N draws from Balog et al.'s mixture (Appendix B): 10 components with means ~ N(100·1, 200 I),
/// covariance 30 I, weights ∝ 1, 1/2, …, 1/10.
fn mixture(n: usize, dim: usize, seed: u64) -> AnyResult<PointSet> {
    let normal = |rng: &mut StdRng| -> f64 { Distribution::<f64>::sample(&StandardNormal, rng) };
    let mut means_rng = StdRng::seed_from_u64(1000 + dim as u64);
    let means: Vec<f64> = (0..10 * dim).map(|_| 100.0 + 200f64.sqrt() * normal(&mut means_rng)).collect();
    let weights: Vec<f64> = (1..=10).map(|k| 1.0 / k as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut data = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let mut u = rng.random_range(0.0..total);
        let c = weights.iter().position(|w| {
            u -= w;
            u < 0.0
        });
        let c = c.unwrap_or(9);
        for d in 0..dim {
            data.push(means[c * dim + d] + 30f64.sqrt() * normal(&mut rng));
        }
    }
    Ok(PointSet::new(dim, data)?)
}

fn main() -> AnyResult<()> {
    run(quick_flag())
}

pub fn run(quick: bool) -> AnyResult<()> {
    let start = Instant::now();
    let dir = ReportDir::create(if quick { "reports/kme_release_quick" } else { "reports/kme_release" })?;
    let (n, dims, sizes, features): (usize, &[usize], &[usize], usize) =
        if quick { (2000, &[2], &[10, 40], 500) } else { (100_000, &[2, 5], &[10, 20, 50, 100, 200, 500], 10_000) };
    let epsilons = [0.01, 0.1, 1.0];
    let delta = 1e-6;
    let mut noise = NoiseRng::seeded(2018);
    let mut rows = Vec::new();
    let mut md = String::from("# Private kernel mean embeddings (Balog et al. 2018, Figures 1-2)\n\n");
    writeln!(
        md,
        "Balog et al.'s setting (Appendix B): N = {n} draws from a mixture of 10 Gaussians in R^D, means ~ N(100·1, 200 I), covariance 30 I, weights ∝ 1, 1/2, …, 1/10; kernel exp(−γ‖x − y‖²), γ = 10⁻⁴/D (a Gaussian kernel with ρ = (2γ)^(-1/2)); δ = {delta}; Scenario 1 synthetic points from N(0, 500 I), Scenario 2 the first M rows of the data (published); J = {features} random Fourier features for Algorithm 2. Distances are ||μ_release − μ_X||_H with the exact kernel (the data's own term by a blocked parallel sum over N² pairs).\n"
    )?;
    let progress = fdp::report::progress::steps((dims.len() * sizes.len()) as u64, "kme_release", false);
    for &dim in dims {
        let kernel = Stationary::gaussian((dim as f64 / 2e-4).sqrt())?;
        let data = mixture(n, dim, 7)?;
        let empirical = WeightedPoints::uniform(data.clone());
        let t = Instant::now();
        let self_term = kernel_sum(&kernel, &empirical, &empirical)?;
        println!("kme dim={dim} n={n} self_term_s={:.2}", t.elapsed().as_secs_f64());
        let dist = |p: &WeightedPoints| -> AnyResult<f64> {
            Ok(rkhs_distance_sq(&kernel, p, &empirical, Some(self_term))?.sqrt())
        };
        let mut series: Vec<(String, Option<f64>, Vec<f64>)> = Vec::new();
        let mut push = |label: String, eps: Option<f64>, m: usize, d: f64, method: &'static str| {
            println!(
                "kme algorithm={method} D={dim} M={m} epsilon={} rkhs_dist={d:.5}",
                eps.map_or("none".into(), |e| e.to_string())
            );
            rows.push(Row { dim, method, m, epsilon: eps, rkhs_dist: d });
            match series.iter_mut().find(|(l, _, _)| *l == label) {
                Some((_, _, v)) => v.push(d),
                None => series.push((label, eps, vec![d])),
            }
        };
        for &m in sizes {
            progress.set_message(format!("D = {dim}, M = {m}"));
            progress.inc(1);
            let wide = SyntheticSubspace::from_wide_gaussian(kernel, &vec![0.0; dim], 500f64.sqrt(), m, 11 + m as u64)?;
            let subset = SyntheticSubspace::new(kernel, data.subset(&(0..m).collect::<Vec<_>>()), 1e-8)?;
            push(
                "uniform weights, wide synthetic points".into(),
                None,
                m,
                dist(&WeightedPoints::uniform(wide.points().clone()))?,
                "baseline_synthetic",
            );
            push(
                "uniform weights, first M rows".into(),
                None,
                m,
                dist(&WeightedPoints::uniform(subset.points().clone()))?,
                "baseline_public",
            );
            let (a_wide, a_sub) = (wide.coordinates(&data)?, subset.coordinates(&data)?);
            let rff = RandomFourierFeatures::new(kernel, dim, features / 2, 5)?;
            let mean_features = rff.mean_features(&data)?;
            let sample = |r: &Release<WeightedSample>| WeightedPoints::from_sample(r.output());
            for eps in epsilons {
                let (epsilon, delta) = (Epsilon::new(eps)?, Delta::new(delta)?);
                let alg1_wide = wide.mechanism(n, epsilon, delta)?;
                let r = alg1_wide.privatize(&a_wide, &mut noise)?;
                push(format!("Alg. 1, wide synthetic, ε = {eps}"), Some(eps), m, dist(&sample(&r)?)?, "1_synthetic");
                let regularised = wide.l1_regularised(&r, 1.0, 200)?;
                push(
                    format!("Alg. 1 + l1 (Thm 11), ε = {eps}"),
                    Some(eps),
                    m,
                    dist(&sample(&regularised)?)?,
                    "1_synthetic_l1",
                );
                let r = subset.mechanism(n, epsilon, delta)?.privatize(&a_sub, &mut noise)?;
                push(format!("Alg. 1, first M rows, ε = {eps}"), Some(eps), m, dist(&sample(&r)?)?, "1_public");
                let f = rff.mechanism(n, epsilon, delta)?.privatize(&mean_features, &mut noise)?;
                let fit = rff.reduced_set(
                    &f.output().0,
                    wide.points().clone(),
                    ReducedSetOptions { iterations: if quick { 30 } else { 150 }, l1_bound: 1.0 },
                )?;
                push(format!("Alg. 2, reduced set, ε = {eps}"), Some(eps), m, dist(&fit)?, "2");
                if dim == 2 && m == 100 && eps == 1.0 {
                    let release = alg1_wide.privatize(&a_wide, &mut noise)?;
                    dir.write_text("synthetic_D2_M100_eps1.csv", &release.output().to_csv())?;
                    dir.write_text("synthetic_D2_M100_eps1.json", &release.to_json()?)?;
                }
            }
        }
        let ms: Vec<f64> = sizes.iter().map(|&m| m as f64).collect();
        for eps in epsilons {
            let chosen: Vec<ErrorSeries> = series
                .iter()
                .filter(|(_, e, _)| e.is_none() || *e == Some(eps))
                .enumerate()
                .map(|(i, (label, _, v))| ErrorSeries {
                    label: label.clone(),
                    n: ms.clone(),
                    error: v.clone(),
                    standard_error: vec![0.0; v.len()],
                    color: PALETTE[i % PALETTE.len()],
                })
                .collect();
            let file = format!("kme_D{dim}_eps{eps}.svg");
            LogLogFigure {
                title: format!("D = {dim}, ε = {eps}, δ = 1e-6: RKHS distance to the empirical KME"),
                x_label: "M (synthetic points)".into(),
                y_label: "||μ̃ − μ_X||_H".into(),
                series: chosen,
            }
            .write_svg(&dir.file(&file), 760, 480)?;
            writeln!(md, "![D = {dim}, ε = {eps}]({file})\n")?;
        }
    }
    progress.finish_and_clear();
    writeln!(md, "| D | method | M | ε | RKHS distance |\n|---|---|---|---|---|")?;
    for r in &rows {
        writeln!(
            md,
            "| {} | {} | {} | {} | {:.4} |",
            r.dim,
            r.method,
            r.m,
            r.epsilon.map_or("—".into(), |e| e.to_string()),
            r.rkhs_dist
        )?;
    }
    writeln!(
        md,
        "\nAlgorithm 1 uses Δ₂ = √(2 sup k)/N (valid for k ≥ 0, √2 below the triangle-inequality bound); Algorithm 2 uses random Fourier features of norm exactly 1 (cos/sin pairs over √J), so its Δ₂ = 2/N is right — the reference code's √(2/J) cos(ωx + b) features have norm up to √2. The paper reports its results as plots only (no table), so no number is quoted beside ours; a synthetic dataset (D = 2, M = 100, ε = 1) is in `synthetic_D2_M100_eps1.csv` / `.json`."
    )?;
    what_holds(&rows, &mut md)?;
    let wall_s = finish_report(&dir, &mut md, &rows, start)?;
    println!("kme wall_s={wall_s:.1} report={}", dir.path().display());
    Ok(())
}

/// Balog et al.'s qualitative findings, checked against our rows.
fn what_holds(rows: &[Row], md: &mut String) -> AnyResult<()> {
    let get = |dim: usize, method: &str, m: usize, eps: Option<f64>| {
        rows.iter().find(|r| r.dim == dim && r.method == method && r.m == m && r.epsilon == eps).map(|r| r.rkhs_dist)
    };
    writeln!(md, "\n## What holds, what does not, and why\n")?;
    let dims: Vec<usize> = rows.iter().map(|r| r.dim).fold(Vec::new(), |mut v, d| {
        if !v.contains(&d) {
            v.push(d);
        }
        v
    });
    for dim in dims {
        let ms: Vec<usize> =
            rows.iter().filter(|r| r.dim == dim && r.method == "1_public").map(|r| r.m).fold(Vec::new(), |mut v, m| {
                if !v.contains(&m) {
                    v.push(m);
                }
                v
            });
        let (small, large) = (ms[0], ms[ms.len() - 1]);
        for eps in [0.01, 0.1, 1.0] {
            let e = Some(eps);
            let line = format!(
                "- D = {dim}, ε = {eps}: Alg. 1 on the first M rows {:.4} → {:.4} from M = {small} to {large} (uniform weights on the same rows: {:.4}); wide synthetic points {:.4}; Alg. 2 {:.4}.",
                get(dim, "1_public", small, e).unwrap_or(f64::NAN),
                get(dim, "1_public", large, e).unwrap_or(f64::NAN),
                get(dim, "baseline_public", large, None).unwrap_or(f64::NAN),
                get(dim, "1_synthetic", large, e).unwrap_or(f64::NAN),
                get(dim, "2", large, e).unwrap_or(f64::NAN),
            );
            writeln!(md, "{line}")?;
        }
    }
    // Their three qualitative findings, checked cell by cell.
    let (mut u_shape, mut scenario2, mut beats_uniform) = ((0, 0), (0, 0), (0, 0));
    for r in rows.iter().filter(|r| r.method == "1_public") {
        let e = r.epsilon;
        if let Some(wide) = get(r.dim, "1_synthetic", r.m, e) {
            scenario2 = (scenario2.0 + usize::from(r.rkhs_dist < wide), scenario2.1 + 1);
        }
        if e == Some(1.0)
            && let Some(uniform) = get(r.dim, "baseline_public", r.m, None)
        {
            beats_uniform = (beats_uniform.0 + usize::from(r.rkhs_dist < uniform), beats_uniform.1 + 1);
        }
    }
    let cells: std::collections::BTreeSet<(usize, Option<u64>)> =
        rows.iter().filter(|r| r.method == "1_public").map(|r| (r.dim, r.epsilon.map(f64::to_bits))).collect();
    for (dim, eps) in cells {
        let curve: Vec<f64> = rows
            .iter()
            .filter(|r| r.dim == dim && r.method == "1_public" && r.epsilon.map(f64::to_bits) == eps)
            .map(|r| r.rkhs_dist)
            .collect();
        let min = curve.iter().copied().fold(f64::INFINITY, f64::min);
        let interior = curve.len() > 2 && curve[0] > min && curve[curve.len() - 1] > min;
        u_shape = (u_shape.0 + usize::from(interior), u_shape.1 + 1);
    }
    writeln!(
        md,
        "\nTheir qualitative findings, checked against these numbers: (1) the error of Algorithm 1 first falls with M, then rises once the noise on M coordinates dominates — an interior minimum in {} of {} (D, ε) curves; (2) points from the data's region (Scenario 2) beat points from the broad public N(0, 500 I) (Scenario 1) in {} of {} cells; (3) at ε = 1 the private weights beat data-independent uniform weights on the same rows in {} of {} cells. The kernel is very wide against the data (ρ = (2γ)^(-1/2) = 100 at D = 2 and 158 at D = 5, while a mixture component has sd 5.5 per coordinate), so any M rows of the data already embed close to the whole sample, which flattens the M-curve of Algorithm 1 (few interior minima) and makes uniform weights on those rows a strong baseline.",
        u_shape.0, u_shape.1, scenario2.0, scenario2.1, beats_uniform.0, beats_uniform.1
    )?;
    Ok(())
}
