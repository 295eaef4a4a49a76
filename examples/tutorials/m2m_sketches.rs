//! Private sketches and M2M estimation (Houssiau et al.) on LifeSci and Occupancy: mean relative
//! error of column means and second moments, EMD of the marginal CDFs, Frobenius error of the
//! covariance, counting-query MAE, and logistic-regression AUC (implicit-M2M weights) on a 10% test
//! split, for ε from 0.01 to 100 and three feature maps (RFF, RACE, marginal histograms).
//!
//! Then the paper's Table 1: the error of the column means from the exact sketch (ε = ∞) and from
//! private sketches (ε = 1), RFF and HIST, on Random10 (no distribution shift) and LifeSci, beside the
//! published values (`m2m_table1 ...` records).
//!
//! `cargo run --release --example m2m_sketches [-- --quick] [-- --data-dir DIR]` writes
//! `reports/m2m_sketches/`.

#[path = "../common/mod.rs"]
mod common;

use fdp::release::Charge;
use std::fmt::Write as _;
use std::time::Instant;

use common::{AnyResult, finish_report, flag_value, quick_flag};
use fdp::data::data_dir;
use fdp::kme::{
    FeatureMap, M2mDesign, M2mEstimator, PointSet, PrivateSketch, Query, implicit_logistic_regression,
    noise_aware_lambda, uniform_prior,
};
use fdp::noise::Epsilon;
use fdp::noise::NoiseRng;
use fdp::release::{Mechanism, Release, Sketch};
use fdp::report::ReportDir;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

/// A table scaled to [0, 1]^d with binary labels.
struct Table {
    name: &'static str,
    x: Vec<Vec<f64>>,
    y: Vec<bool>,
}

/// Reads numeric feature columns and a 0/1 label column and maps each feature to [0, 1] (clamped)
/// by public ranges. Occupancy has physical ones (sensor ranges); LifeSci's anonymised features have
/// none, so their observed ranges stand in as schema bounds, as the M2M paper assumes data in
/// [0, 1]^d — a real release would take them from documentation, not from the records.
fn load(
    path: &std::path::Path,
    name: &'static str,
    features: &[&str],
    label: &str,
    ranges: Option<&[(f64, f64)]>,
) -> AnyResult<Table> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| {
        format!("{}: {e} (the datasets live in ../shared/data; set FDP_DATA_DIR or --data-dir)", path.display())
    })?;
    let headers = reader.headers()?.clone();
    let col = |c: &str| headers.iter().position(|h| h == c).ok_or_else(|| format!("{}: no column {c}", path.display()));
    let idx: Vec<usize> = features.iter().map(|c| col(c)).collect::<Result<_, _>>()?;
    let li = col(label)?;
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for record in reader.records() {
        let record = record?;
        x.push(idx.iter().map(|&i| record[i].trim().parse::<f64>().unwrap_or(0.0)).collect::<Vec<f64>>());
        y.push(record[li].trim().parse::<f64>().unwrap_or(0.0) > 0.5);
    }
    let d = features.len();
    for j in 0..d {
        let (lo, hi) = match ranges {
            Some(r) => r[j],
            None => x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), r| (l.min(r[j]), h.max(r[j]))),
        };
        let span = if hi > lo { hi - lo } else { 1.0 };
        x.iter_mut().for_each(|r| r[j] = ((r[j] - lo) / span).clamp(0.0, 1.0));
    }
    Ok(Table { name, x, y })
}

#[derive(Serialize)]
struct Row {
    dataset: &'static str,
    map: &'static str,
    epsilon: f64,
    /// `eq5` (the paper's σ²/(n + ζ), the library default) or `theorem_3_1` (σ²/(n + ζ)²), on the
    /// same release.
    lambda: &'static str,
    mean_rel_err: f64,
    second_moment_rel_err: f64,
    cdf_emd: f64,
    cov_frobenius: f64,
    count_mae: f64,
    auc: f64,
}

impl Row {
    /// The six metrics, named as in the records, in the table's column order.
    fn metrics(&self) -> [(&'static str, f64); 6] {
        [
            ("mean_rel_err", self.mean_rel_err),
            ("second_moment_rel_err", self.second_moment_rel_err),
            ("cdf_emd", self.cdf_emd),
            ("cov_frobenius", self.cov_frobenius),
            ("count_mae", self.count_mae),
            ("auc", self.auc),
        ]
    }
}

/// Houssiau et al., Table 1: mean relative error of the column means, (dataset, map, ε, MRE).
const PAPER_TABLE1: [(&str, &str, f64, f64); 8] = [
    ("random10", "rff", f64::INFINITY, 6.25e-8),
    ("random10", "hist", f64::INFINITY, 1.87e-5),
    ("random10", "rff", 1.0, 9.55e-3),
    ("random10", "hist", 1.0, 9.10e-4),
    ("lifesci", "rff", f64::INFINITY, 1.67e-6),
    ("lifesci", "hist", f64::INFINITY, 5.91e-5),
    ("lifesci", "rff", 1.0, 4.20e-2),
    ("lifesci", "hist", 1.0, 3.8e-3),
];

#[derive(Serialize)]
struct DecompositionRow {
    dataset: &'static str,
    map: &'static str,
    /// `None` for the exact sketch (ε = ∞).
    epsilon: Option<f64>,
    /// The ridge rule: `1e-9` (exact sketch), `eq5` (the paper's σ²/(n + ζ)), `theorem_3_1` (σ²/(n + ζ)²).
    lambda: &'static str,
    mean_rel_err: f64,
    se: f64,
    paper: f64,
}

/// The two ridge rules on the same releases: for each (dataset, map), in how many (ε, metric) cells
/// Theorem 3.1's λ beats eq. 5's (lower error, higher AUC), and the median error ratio.
fn lambda_rule_section(rows: &[Row], md: &mut String) -> AnyResult<()> {
    writeln!(
        md,
        "\n## Which ridge rule, task by task\n\nPaired on the same releases: the cells (ε × 6 metrics) where Theorem 3.1's λ = σ²/(n + ζ)² does better than eq. 5's σ²/(n + ζ), and the median ratio theorem/eq5 of the five error metrics (below 1: the theorem's rule is better).\n\n| dataset | map | theorem better | median error ratio | at the smallest ε | at the largest ε |\n|---|---|---|---|---|---|"
    )?;
    // Each eq. 5 row with the Theorem 3.1 row of the same release, in run order.
    let pairs: Vec<(&Row, &Row)> = rows
        .iter()
        .filter(|a| a.lambda == "eq5")
        .filter_map(|a| {
            let same = |b: &&Row| {
                b.lambda == "theorem_3_1" && b.dataset == a.dataset && b.map == a.map && b.epsilon == a.epsilon
            };
            rows.iter().find(same).map(|b| (a, b))
        })
        .collect();
    // Metric k of the pair: (eq. 5's value, the theorem's, whether the theorem's is strictly better).
    let compare = |(a, b): (&Row, &Row), k: usize| {
        let ((name, x), (_, y)) = (a.metrics()[k], b.metrics()[k]);
        (x, y, if name == "auc" { y > x } else { y < x })
    };
    let keys: Vec<(&str, &str)> = pairs.iter().fold(Vec::new(), |mut v, (r, _)| {
        if !v.contains(&(r.dataset, r.map)) {
            v.push((r.dataset, r.map));
        }
        v
    });
    for (dataset, map) in keys {
        let (mut better, mut cells, mut ratios) = (0, 0, Vec::new());
        let mut by_eps: Vec<(f64, usize)> = Vec::new();
        for &(a, b) in pairs.iter().filter(|(a, _)| a.dataset == dataset && a.map == map) {
            let mut wins = 0;
            for k in 0..6 {
                let (x, y, theorem_better) = compare((a, b), k);
                wins += usize::from(theorem_better);
                cells += 1;
                if a.metrics()[k].0 != "auc" && x > 0.0 {
                    ratios.push(y / x);
                }
            }
            better += wins;
            by_eps.push((a.epsilon, wins));
        }
        ratios.sort_by(f64::total_cmp);
        let median = ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN);
        let (first, last) =
            (by_eps.first().copied().unwrap_or((f64::NAN, 0)), by_eps.last().copied().unwrap_or((f64::NAN, 0)));
        println!("m2m_lambda dataset={dataset} map={map} theorem_better={better}/{cells} median_ratio={median:.3}");
        writeln!(
            md,
            "| {dataset} | {map} | {better} of {cells} | {median:.3} | ε = {}: {} of 6 | ε = {}: {} of 6 |",
            first.0, first.1, last.0, last.1
        )?;
    }
    // By metric and ε regime, over every dataset and map.
    let mut regimes = Vec::new();
    for (regime, in_regime) in [("ε ≤ 1", (|e: f64| e <= 1.0) as fn(f64) -> bool), ("ε > 1", |e: f64| e > 1.0)] {
        let mut parts = Vec::new();
        for (k, name) in ["means", "second moments", "CDF", "covariance", "box counts", "AUC"].iter().enumerate() {
            let (mut wins, mut ties, mut total) = (0, 0, 0);
            for &pair in pairs.iter().filter(|(a, _)| in_regime(a.epsilon)) {
                let (x, y, theorem_better) = compare(pair, k);
                let tie = (x - y).abs() <= 0.01 * x.abs().max(y.abs());
                ties += usize::from(tie);
                wins += usize::from(!tie && theorem_better);
                total += 1;
            }
            parts.push(format!("{name} {wins}–{}–{ties}", total - wins - ties));
        }
        regimes.push(format!("at {regime}: {}", parts.join(", ")));
    }
    writeln!(
        md,
        "\nBy metric, Theorem 3.1's rule better–worse–within 1% of eq. 5's: {}. At small ε eq. 5 shrinks the coefficients to almost nothing (its column means are ~100% off at ε = 0.01: it returns nearly the zero measure), which is why it holds up only on the metrics where zero is a fair answer (covariances, small box fractions); at large ε both λ are tiny and the rules mostly agree. Neither rule dominates every metric: the library keeps eq. 5 as the default (the paper's choice, robust where Theorem 3.1's rule can blow up second moments, e.g. Occupancy RFF at ε = 0.01) and takes any λ through `M2mEstimator::from_design`; for means, moments, CDFs and classifiers at ε ≤ 1 pass Theorem 3.1's.",
        regimes.join("; ")
    )?;
    Ok(())
}

/// Mean relative error of estimated column statistics (means, second moments),
/// `(1/d) Σ_j |μ̂_j - μ_j| / max(|μ_j|, 1e-3)`.
fn mean_relative_error(estimate: &[f64], truth: &[f64]) -> f64 {
    estimate.iter().zip(truth).map(|(e, t)| (e - t).abs() / t.abs().max(1e-3)).sum::<f64>() / truth.len() as f64
}

/// The paper's Table 1 decomposition: column means by explicit M2M (ridge coefficients of the d
/// coordinate functions on the prior) from the exact sketch `Σ Φ(x_i)/n` with λ = 1e-9 (ε = ∞: what
/// is left is the approximation error, plus distribution shift on LifeSci) and from `trials` private
/// sketches at ε = 1 with the noise-aware λ.
fn table1_decomposition(
    lifesci: &Table,
    prior_size: usize,
    trials: usize,
    noise: &mut NoiseRng,
) -> AnyResult<Vec<DecompositionRow>> {
    let (n, d) = (lifesci.x.len(), lifesci.x[0].len());
    // Random10: uniform on [0, 1]^d with LifeSci's shape — the prior's own law, so no shift.
    let mut uniform = StdRng::seed_from_u64(10);
    let random10: Vec<Vec<f64>> = (0..n).map(|_| (0..d).map(|_| uniform.random::<f64>()).collect()).collect();
    let prior = uniform_prior(d, prior_size, 4)?;
    let coordinate_fns: Vec<Box<Query>> = (0..d).map(|j| Box::new(move |x: &[f64]| x[j]) as Box<Query>).collect();
    let coordinates: Vec<&Query> = coordinate_fns.iter().map(|f| f.as_ref()).collect();
    let mut rows = Vec::new();
    for (name, data) in [("random10", &random10), ("lifesci", &lifesci.x)] {
        let truth: Vec<f64> = (0..d).map(|j| data.iter().map(|r| r[j]).sum::<f64>() / n as f64).collect();
        let points = points(&data.iter().collect::<Vec<_>>(), d)?;
        for (map_name, map) in [("rff", FeatureMap::rff(d, 200, 1.0, 1)?), ("hist", FeatureMap::hist(d, 100)?)] {
            let design = M2mDesign::new(&map, prior.clone())?;
            let estimate = |sketch: &[f64], lambda: f64| -> AnyResult<Vec<f64>> {
                let a = design.query_coefficients(&coordinates, lambda)?;
                Ok(a.iter().map(|a_j| a_j.iter().zip(sketch).map(|(a, s)| a * s).sum()).collect())
            };
            let paper = |epsilon: f64| {
                PAPER_TABLE1.iter().find(|p| p.0 == name && p.1 == map_name && p.2 == epsilon).map_or(f64::NAN, |p| p.3)
            };
            let exact: Vec<f64> = map.feature_sum(&points)?.iter().map(|v| v / n as f64).collect();
            let err = mean_relative_error(&estimate(&exact, 1e-9)?, &truth);
            let paper_inf = paper(f64::INFINITY);
            println!(
                "m2m_table1 dataset={name} map={map_name} epsilon=inf lambda=1e-9 mean_rel_err={err:.3e} paper={paper_inf:.3e}"
            );
            let exact_row = |lambda, mean_rel_err, se, paper| DecompositionRow {
                dataset: name,
                map: map_name,
                epsilon: None,
                lambda,
                mean_rel_err,
                se,
                paper,
            };
            rows.push(exact_row("1e-9", err, 0.0, paper_inf));
            let mechanism = PrivateSketch::new(map.clone(), Epsilon::new(1.0)?)?;
            // Each release scored with the paper's λ (its eq. 5, σ²/(n + ζ)) and with its Theorem 3.1's
            // σ²/(n + ζ)², the λ under which its loss bounds the estimate's mean squared error.
            let errors: Vec<[f64; 2]> = (0..trials)
                .map(|_| -> AnyResult<[f64; 2]> {
                    let release = mechanism.release(&points, noise, Charge::unaccounted())?;
                    let lambda = noise_aware_lambda(&mechanism, &release);
                    let sketch = &release.output().sketch;
                    Ok([
                        mean_relative_error(&estimate(sketch, lambda)?, &truth),
                        mean_relative_error(&estimate(sketch, lambda / release.output().noisy_count)?, &truth),
                    ])
                })
                .collect::<AnyResult<_>>()?;
            let paper_one = paper(1.0);
            for (rule, i) in [("eq5", 0), ("theorem_3_1", 1)] {
                let mean = errors.iter().map(|e| e[i]).sum::<f64>() / trials as f64;
                let spread = errors.iter().map(|e| (e[i] - mean).powi(2)).sum::<f64>() / (trials.max(2) - 1) as f64;
                let se = (spread / trials as f64).sqrt();
                println!(
                    "m2m_table1 dataset={name} map={map_name} epsilon=1 lambda={rule} mean_rel_err={mean:.3e} se={se:.1e} trials={trials} paper={paper_one:.3e}"
                );
                rows.push(DecompositionRow { epsilon: Some(1.0), ..exact_row(rule, mean, se, paper_one) });
            }
        }
    }
    Ok(rows)
}

/// The Table 1 section: ours beside the paper's, then what holds of the paper's reading.
fn write_table1_section(md: &mut String, rows: &[DecompositionRow], prior: usize, trials: usize) -> AnyResult<()> {
    writeln!(
        md,
        "\n## Houssiau et al. Table 1: approximation, privacy and distribution-shift errors\n\n\
         Mean relative error of the 10 column means by explicit M2M (ridge coefficients of the coordinate \
         functions on {prior} uniform prior points; the paper used 10^5). ε = ∞: the exact sketch Σ Φ(x_i)/n \
         with λ = 1e-9 (the paper's choice for HIST; we use it for RFF too). ε = 1: {trials} private sketches \
         (ε split 0.98/0.02, noise-aware λ), mean ± standard error. RFF: 200 frequency pairs (400 features), \
         σ = 1; HIST: 100 bins per column. Random10 is uniform on [0, 1]^10 with LifeSci's n, so the prior \
         is its law (no shift); LifeSci is scaled by its observed ranges.\n\n\
         | dataset | map | ε | λ | MRE (ours) | ± se | MRE (paper) | ours / paper |\n|---|---|---|---|---|---|---|---|"
    )?;
    for r in rows {
        let eps = r.epsilon.map_or("∞".to_string(), |e| e.to_string());
        writeln!(
            md,
            "| {} | {} | {eps} | {} | {:.3e} | {:.1e} | {:.3e} | {:.2} |",
            r.dataset,
            r.map,
            r.lambda,
            r.mean_rel_err,
            r.se,
            r.paper,
            r.mean_rel_err / r.paper
        )?;
    }
    // ε = ∞ rows have one rule (λ = 1e-9); ε = 1 rows are looked up under `rule`.
    let get = |rule: &str, data: &str, map: &str, eps: Option<f64>| {
        rows.iter()
            .find(|r| r.dataset == data && r.map == map && r.epsilon == eps && (eps.is_none() || r.lambda == rule))
            .map_or(f64::NAN, |r| r.mean_rel_err)
    };
    type Claim<'a> = (&'static str, Box<dyn Fn(&str) -> bool + 'a>);
    let claims: [Claim; 5] = [
        (
            "the approximation error (Random10, ε = ∞) is lower for RFF than for HIST",
            Box::new(|rule| get(rule, "random10", "rff", None) < get(rule, "random10", "hist", None)),
        ),
        (
            "at ε = 1 the DP error dominates RFF (ε = 1 error > 100x its ε = ∞ error on Random10)",
            Box::new(|rule| get(rule, "random10", "rff", Some(1.0)) > 100.0 * get(rule, "random10", "rff", None)),
        ),
        (
            "at ε = 1 HIST is more accurate than RFF on both datasets",
            Box::new(|rule| {
                ["random10", "lifesci"].iter().all(|d| get(rule, d, "hist", Some(1.0)) < get(rule, d, "rff", Some(1.0)))
            }),
        ),
        (
            "distribution shift: LifeSci's errors exceed Random10's for both maps at ε = ∞",
            Box::new(|rule| {
                ["rff", "hist"].iter().all(|m| get(rule, "lifesci", m, None) > get(rule, "random10", m, None))
            }),
        ),
        (
            "distribution shift: LifeSci's errors exceed Random10's for both maps at ε = 1",
            Box::new(|rule| {
                ["rff", "hist"].iter().all(|m| get(rule, "lifesci", m, Some(1.0)) > get(rule, "random10", m, Some(1.0)))
            }),
        ),
    ];
    let verdict = |holds: bool| if holds { "holds" } else { "does not hold" };
    writeln!(md, "\n### What holds, what does not, and why\n")?;
    for (claim, holds) in &claims {
        writeln!(
            md,
            "- The paper's reading that {claim}: **{}** with eq. 5's λ, **{}** with Theorem 3.1's.",
            verdict(holds("eq5")),
            verdict(holds("theorem_3_1"))
        )?;
    }
    let ratio = |data: &str, map: &str| {
        let of = |rule: &str| {
            rows.iter()
                .find(|r| r.dataset == data && r.map == map && r.epsilon.is_some() && r.lambda == rule)
                .map_or(f64::NAN, |r| r.mean_rel_err)
        };
        of("eq5") / of("theorem_3_1")
    };
    let ratios: Vec<String> = ["random10", "lifesci"]
        .iter()
        .flat_map(|d| ["rff", "hist"].map(|m| format!("{d}/{m} {:.0}x", ratio(d, m))))
        .collect();
    writeln!(
        md,
        "\nWhy digits differ. **The ridge λ decides the ε = 1 rows.** The paper's text sets λ = σ²/(n + ζ) \
         (its eq. 5, which fdp's `M2mEstimator` follows) after finding σ²/n² too weak; with eq. 5 our errors \
         are far above the published ones, with Theorem 3.1's σ²/(n + ζ)² they land within a small factor of \
         them. Eq. 5 over Theorem 3.1, same releases: {}. So either the published runs used a smaller λ than \
         eq. 5, or a feature scaling under which eq. 5 shrinks less; eq. 5 shrinks every coefficient of a \
         100-bin histogram towards 0 (a bias of about 8% on the column means at this n). The other differences: our prior has {prior} points, not 10^5 (its sampling error is part \
         of every ε = ∞ cell: that is why our ε = ∞ cells sit above the paper's); LifeSci is scaled by its \
         observed ranges (the paper's normalisation is not stated); the paper's RFF frequency convention is \
         not given beyond σ = 1.",
        ratios.join(", ")
    )?;
    Ok(())
}

fn points(rows: &[&Vec<f64>], d: usize) -> AnyResult<PointSet> {
    Ok(PointSet::new(d, rows.iter().flat_map(|r| r.iter().copied()).collect())?)
}

/// AUC of scores against labels (Mann-Whitney).
fn auc(scores: &[f64], labels: &[bool]) -> f64 {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let (mut rank_sum, mut pos) = (0.0, 0.0);
    for (r, &i) in idx.iter().enumerate() {
        if labels[i] {
            rank_sum += (r + 1) as f64;
            pos += 1.0;
        }
    }
    let neg = labels.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 { 0.5 } else { (rank_sum - pos * (pos + 1.0) / 2.0) / (pos * neg) }
}

fn main() -> AnyResult<()> {
    let dir = flag_value("--data-dir").map(std::path::PathBuf::from);
    run(quick_flag(), dir.as_deref())
}

pub fn run(quick: bool, data: Option<&std::path::Path>) -> AnyResult<()> {
    // Many draws for statistics, nothing published about a person: variable-time sampling, the
    // same draws as the padded samplers releases use, without the padding (docs/DESIGN.md 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let start = Instant::now();
    let data = data_dir(data);
    let out = ReportDir::create(common::report_path("m2m_sketches", quick))?;
    let lifesci_cols: Vec<String> = (1..=10).map(|i| format!("x{i}")).collect();
    let tables = [
        load(
            &data.join("lifesci_ds1_10.csv"),
            "lifesci",
            &lifesci_cols.iter().map(String::as_str).collect::<Vec<_>>(),
            "label",
            None,
        )?,
        load(
            &data.join("occupancy.csv"),
            "occupancy",
            &["Temperature", "Humidity", "Light", "CO2", "HumidityRatio"],
            "Occupancy",
            // Indoor sensor ranges: °C, % relative humidity, lux, ppm, kg water per kg air.
            Some(&[(15.0, 30.0), (0.0, 100.0), (0.0, 2000.0), (0.0, 2500.0), (0.0, 0.01)]),
        )?,
    ];
    let epsilons: &[f64] = if quick { &[1.0] } else { &[0.01, 0.1, 1.0, 10.0, 100.0] };
    let prior_size = if quick { 1500 } else { 6000 };
    let mut noise = NoiseRng::seeded(77);
    let mut rows = Vec::new();
    let mut md = String::from("# Private sketches and M2M estimation\n\n");
    writeln!(
        md,
        "Sketch S = (Σ Φ(x_i) + ξ)/(n + ζ), Laplace noise for Δ₁ = max ||Φ||₁ (RFF √2 m', RACE R, HIST d) with ε split 0.98 / 0.02 between the sum and the count (add/remove neighbours); M2M ridge regression on {prior_size} points uniform on [0, 1]^d with λ = 2Δ₁²/(ε_num²(n + ζ)). Logistic regression: one sketch per class (disjoint records, parallel composition), implicit weights on the prior points, weighted Newton fit; AUC on a 10% test split. Errors are against the non-private values of the (scaled) training split. Occupancy is scaled by public sensor ranges; LifeSci's anonymised features by their observed ranges, standing in for schema bounds. The paper prints these tasks only as figures (no values to quote); its Table 1 is reproduced below.\n"
    )?;
    writeln!(
        md,
        "Each release is evaluated under both ridge rules, the paper's eq. 5 λ = σ²/(n + ζ) (the library default) and its Theorem 3.1's λ = σ²/(n + ζ)² — the same sketches, so the comparison is paired.\n\n| dataset | map | ε | λ rule | mean rel. err | 2nd moment rel. err | CDF EMD | cov. Frobenius | count MAE | AUC |\n|---|---|---|---|---|---|---|---|---|---|"
    )?;
    for table in &tables {
        let d = table.x[0].len();
        let mut split_rng = StdRng::seed_from_u64(5);
        let is_test: Vec<bool> = (0..table.x.len()).map(|_| split_rng.random::<f64>() < 0.1).collect();
        let train: Vec<&Vec<f64>> = table.x.iter().zip(&is_test).filter(|(_, t)| !**t).map(|(r, _)| r).collect();
        let train_y: Vec<bool> = table.y.iter().zip(&is_test).filter(|(_, t)| !**t).map(|(y, _)| *y).collect();
        let test: Vec<&Vec<f64>> = table.x.iter().zip(&is_test).filter(|(_, t)| **t).map(|(r, _)| r).collect();
        let test_y: Vec<bool> = table.y.iter().zip(&is_test).filter(|(_, t)| **t).map(|(y, _)| *y).collect();
        let n = train.len() as f64;
        let truth_mean: Vec<f64> = (0..d).map(|j| train.iter().map(|r| r[j]).sum::<f64>() / n).collect();
        let truth_m2: Vec<f64> = (0..d).map(|j| train.iter().map(|r| r[j] * r[j]).sum::<f64>() / n).collect();
        let thresholds: Vec<f64> = (1..20).map(|k| k as f64 / 20.0).collect();
        let truth_cdf: Vec<Vec<f64>> = (0..d)
            .map(|j| thresholds.iter().map(|t| train.iter().filter(|r| r[j] <= *t).count() as f64 / n).collect())
            .collect();
        let mut box_rng = StdRng::seed_from_u64(9);
        let boxes: Vec<Vec<(f64, f64)>> = (0..50)
            .map(|_| {
                (0..d)
                    .map(|_| {
                        let a: f64 = box_rng.random();
                        let b: f64 = box_rng.random();
                        (a.min(b), a.max(b).max(a.min(b) + 0.3))
                    })
                    .collect()
            })
            .collect();
        let inside = |x: &[f64], b: &[(f64, f64)]| x.iter().zip(b).all(|(v, (lo, hi))| (lo..=hi).contains(&v));
        let truth_counts: Vec<f64> =
            boxes.iter().map(|b| train.iter().filter(|r| inside(r, b)).count() as f64 / n).collect();
        let train_points = points(&train, d)?;
        let (pos, neg): (Vec<&Vec<f64>>, Vec<&Vec<f64>>) = {
            let p = train.iter().zip(&train_y).filter(|(_, y)| **y).map(|(r, _)| *r).collect();
            let q = train.iter().zip(&train_y).filter(|(_, y)| !**y).map(|(r, _)| *r).collect();
            (p, q)
        };
        let (pos_points, neg_points) = (points(&pos, d)?, points(&neg, d)?);
        let prior = uniform_prior(d, prior_size, 3)?;
        let maps: Vec<(&'static str, FeatureMap)> = vec![
            ("rff", FeatureMap::rff(d, 200, 0.3, 1)?),
            ("race", FeatureMap::race(d, 100, 8, 0.5, 2)?),
            ("hist", FeatureMap::hist(d, 20)?),
        ];
        let progress = fdp::report::progress::steps((maps.len() * epsilons.len()) as u64, "m2m_sketches", false);
        for (mname, map) in &maps {
            let design = M2mDesign::new(map, prior.clone())?;
            for &eps in epsilons {
                progress.inc(1);
                let mechanism = PrivateSketch::new(map.clone(), Epsilon::new(eps)?)?;
                let sketch = mechanism.release(&train_points, &mut noise, Charge::unaccounted())?;
                // Class sketches at the same ε (disjoint records: parallel composition).
                let sp = mechanism.release(&pos_points, &mut noise, Charge::unaccounted())?;
                let sn = mechanism.release(&neg_points, &mut noise, Charge::unaccounted())?;
                // Theorem 3.1's λ is eq. 5's over the noisy count once more.
                for (rule, over_count) in [("eq5", false), ("theorem_3_1", true)] {
                    let fit = |release: &Release<Sketch>| -> AnyResult<M2mEstimator> {
                        let count = if over_count { release.output().noisy_count } else { 1.0 };
                        let lambda = noise_aware_lambda(&mechanism, release) / count;
                        Ok(M2mEstimator::from_design(&design, &release.output().sketch, lambda)?)
                    };
                    let m2m = fit(&sketch)?;
                    let (mean, m2, cov) = (m2m.means(), m2m.second_moments(), m2m.covariance());
                    let emd = (0..d)
                        .map(|j| {
                            thresholds.iter().zip(&truth_cdf[j]).map(|(t, c)| (m2m.cdf(j, *t) - c).abs()).sum::<f64>()
                                / thresholds.len() as f64
                        })
                        .sum::<f64>()
                        / d as f64;
                    let frob = (0..d * d)
                        .map(|i| {
                            let (a, b) = (i / d, i % d);
                            let truth =
                                train.iter().map(|r| r[a] * r[b]).sum::<f64>() / n - truth_mean[a] * truth_mean[b];
                            (cov[i] - truth).powi(2)
                        })
                        .sum::<f64>();
                    let count_mae =
                        boxes.iter().zip(&truth_counts).map(|(b, t)| (m2m.fraction_in_box(b) - t).abs()).sum::<f64>()
                            / boxes.len() as f64;
                    let theta = implicit_logistic_regression((&fit(&sp)?, &sp), (&fit(&sn)?, &sn))?;
                    let scores: Vec<f64> = test
                        .iter()
                        .map(|r| theta[0] + r.iter().zip(&theta[1..]).map(|(a, b)| a * b).sum::<f64>())
                        .collect();
                    let row = Row {
                        dataset: table.name,
                        map: mname,
                        epsilon: eps,
                        lambda: rule,
                        mean_rel_err: mean_relative_error(&mean, &truth_mean),
                        second_moment_rel_err: mean_relative_error(&m2, &truth_m2),
                        cdf_emd: emd,
                        cov_frobenius: frob.sqrt(),
                        count_mae,
                        auc: auc(&scores, &test_y),
                    };
                    let metrics = row.metrics();
                    let record: Vec<String> = metrics.iter().map(|(key, value)| format!("{key}={value:.4}")).collect();
                    let cells: Vec<String> = metrics.iter().map(|(_, value)| format!("{value:.4}")).collect();
                    println!("m2m dataset={} map={mname} epsilon={eps} lambda={rule} {}", table.name, record.join(" "));
                    writeln!(md, "| {} | {mname} | {eps} | {rule} | {} |", table.name, cells.join(" | "))?;
                    rows.push(row);
                }
            }
        }
    }
    lambda_rule_section(&rows, &mut md)?;
    let (table1_prior, table1_trials) = if quick { (3000, 5) } else { (20_000, 100) };
    let lifesci = tables.iter().find(|t| t.name == "lifesci").ok_or("LifeSci not loaded")?;
    let table1 = table1_decomposition(lifesci, table1_prior, table1_trials, &mut noise)?;
    write_table1_section(&mut md, &table1, table1_prior, table1_trials)?;
    writeln!(
        md,
        "\nReading the table: marginal histograms see each coordinate separately, so their covariance and multi-dimensional counting errors stop improving as ε grows (cross terms come from the prior, not the data); with eq. 5's λ every map is shrunk hard at small ε. The RACE and RFF maps carry joint information at the price of more noise per coordinate."
    )?;
    #[derive(Serialize)]
    struct Results<'a> {
        tasks: &'a [Row],
        table1: &'a [DecompositionRow],
    }
    let wall_s = finish_report(&out, &mut md, &Results { tasks: &rows, table1: &table1 }, start)?;
    println!("m2m wall_s={wall_s:.1} report={}", out.path().display());
    Ok(())
}
