//! Issue 25, the FPCA half: the private covariance operator ([`PrivateCovariance`], Laplace, pure
//! ε, and Gaussian, (ε, 10⁻⁶)) and its principal components by post-processing, on DTI (cca, FA in [0, 1], centre 0.5),
//! Adelaide Mondays (demand in [0, 3.5] GW, centre 1.75) and the simulated scenarios, against the
//! **full-data non-private FPCA** on the grid (the weighted sample covariance of the curves).
//!
//! One record per cell:
//!
//! `fpca data=D noise=laplace|gaussian epsilon=E k=3 J=J tau=T eigval_rel_err=X subspace_dist=Y nonprivate_subspace_dist=Z`
//!
//! - `subspace_dist`: the spectral norm `‖P̃ − P‖` of the top-k projectors in `L²` of the grid
//!   (the sine of the largest principal angle), mean over the releases;
//! - `nonprivate_subspace_dist`: the same for the non-private FPCA in the J-component basis (the
//!   truncation's own error, what the release converges to as ε grows);
//! - `eigval_rel_err`: `‖λ̃_{1..k} − λ_{1..k}‖₂ / ‖λ_{1..k}‖₂`, mean over the releases.
//!
//! The clipping bound is **public** in the main columns: the frame's half range (the L² ceiling of
//! any curve in the physical range on [0, 1], centred at the public centre), the scenario's design
//! bound for the simulations. The `tuned_*` columns are private end to end: 10% of ε on a private
//! bound ([`CovarianceBound`], searched down to the public τ / 100), 90% on the covariance at it.
//! The `oracle_*` columns are NOT private (a bound from the data's norms), a benchmark only.
//! The sparse-curve half of the issue is not built yet.
//!
//! `cargo run --release --example sparse_and_fpca [-- --quick] [-- --data-dir DIR]` writes
//! `reports/sparse_and_fpca[_quick]/{report.md,results.json}`.

#[path = "common/mod.rs"]
mod common;

use std::fmt::Write as _;

use common::{AnyResult, FRAMES, finish_report, flag_value, quick_flag};
use fdp::data::{CurveSet, Scenario, data_dir, simulate};
use fdp::estimators::{BoundSearch, CovarianceBound, MeanSetup, Mechanism, PrivateCovariance};
use fdp::mercer::linalg::{symmetric_eigen, symmetric_eigenvalues};
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::report::ReportDir;
use serde::Serialize;

/// One cell of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub data: String,
    /// `laplace` (pure ε) or `gaussian` ((ε, 10⁻⁶)).
    pub noise: &'static str,
    pub n: usize,
    pub epsilon: f64,
    pub k: usize,
    pub components: usize,
    pub tau: f64,
    pub eigval_rel_err: f64,
    pub subspace_dist: f64,
    pub subspace_dist_se: f64,
    pub nonprivate_subspace_dist: f64,
    /// NOT PRIVATE: the 0.9 quantile of the records' centred projected norms, a benchmark of what a
    /// private bound stage could reach.
    pub oracle_tau: f64,
    pub oracle_tau_subspace_dist: f64,
    /// Private end to end: 10% of ε on [`CovarianceBound`] (ceiling = the public τ, floor τ/100,
    /// the means' factor rule), 90% on the covariance at the released bound.
    pub tuned_tau: f64,
    pub tuned_subspace_dist: f64,
    pub tuned_eigval_rel_err: f64,
}

/// A dataset with its public centre and bound.
struct Problem {
    label: String,
    curves: CurveSet<'static>,
    reference: Option<Vec<f64>>,
    tau: f64,
}

const K: usize = 3;
/// The share of ε the private bound spends in the two-release pipeline.
const BOUND_SHARE: f64 = 0.1;
/// δ of the Gaussian variant.
const DELTA: f64 = 1e-6;

fn main() -> AnyResult<()> {
    let dir = flag_value("--data-dir").map(std::path::PathBuf::from);
    run(quick_flag(), dir.as_deref()).map(|_| ())
}

/// `√w ⊙ f` for each function: coordinates in which the grid's L² is the Euclidean inner product.
fn whitened(grid: &Grid, functions: &[Vec<f64>]) -> Vec<Vec<f64>> {
    functions.iter().map(|f| f.iter().zip(grid.weights()).map(|(v, w)| v * w.sqrt()).collect()).collect()
}

/// `‖U Uᵀ − V Vᵀ‖₂` for orthonormal columns `u`, `v` (whitened).
fn projector_distance(u: &[Vec<f64>], v: &[Vec<f64>]) -> AnyResult<f64> {
    let k = u[0].len();
    let d = faer::Mat::from_fn(k, k, |a, b| {
        u.iter().map(|x| x[a] * x[b]).sum::<f64>() - v.iter().map(|x| x[a] * x[b]).sum::<f64>()
    });
    Ok(symmetric_eigenvalues(d.as_ref())?.iter().map(|x| x.abs()).fold(0.0, f64::max))
}

/// The full-data non-private FPCA on the grid: eigenpairs of `W^{1/2} Σ W^{1/2}` (Σ the sample
/// covariance of the curves), eigenfunctions orthonormal in the grid's L² (whitened here).
fn grid_fpca(curves: &CurveSet) -> AnyResult<(Vec<f64>, Vec<Vec<f64>>)> {
    let (n, grid) = (curves.n(), curves.grid());
    let kk = grid.len();
    let mean = curves.mean_curve();
    let sw: Vec<f64> = grid.weights().iter().map(|w| w.sqrt()).collect();
    let centred: Vec<Vec<f64>> =
        (0..n).map(|i| curves.row(i).iter().zip(&mean).zip(&sw).map(|((y, m), s)| (y - m) * s).collect()).collect();
    let c = faer::Mat::from_fn(kk, kk, |a, b| centred.iter().map(|r| r[a] * r[b]).sum::<f64>() / n as f64);
    let (values, vectors) = symmetric_eigen(c.as_ref())?;
    let top = (0..K).map(|c| (0..kk).map(|a| vectors[(a, c)]).collect()).collect();
    Ok((values[..K].to_vec(), top))
}

/// The non-private FPCA in the J-component basis (no clipping): eigenfunctions on the grid.
fn basis_fpca(curves: &CurveSet, basis: &MercerBasis, reference: Option<&[f64]>) -> AnyResult<Vec<Vec<f64>>> {
    let j = basis.len();
    let n = curves.n();
    let offset = match reference {
        Some(r) => basis.project(r)?,
        None => vec![0.0; j],
    };
    let x: Vec<Vec<f64>> = (0..n)
        .map(|i| Ok(basis.project(curves.row(i))?.iter().zip(&offset).map(|(a, b)| a - b).collect()))
        .collect::<AnyResult<_>>()?;
    let mean: Vec<f64> = (0..j).map(|a| x.iter().map(|r| r[a]).sum::<f64>() / n as f64).collect();
    let c =
        faer::Mat::from_fn(j, j, |a, b| x.iter().map(|r| (r[a] - mean[a]) * (r[b] - mean[b])).sum::<f64>() / n as f64);
    let (_, vectors) = symmetric_eigen(c.as_ref())?;
    (0..K).map(|c| Ok(basis.synthesize(&(0..j).map(|a| vectors[(a, c)]).collect::<Vec<_>>())?)).collect()
}

/// The subspace distances and eigenvalue errors of `releases` Laplace releases at `tau`.
#[allow(clippy::too_many_arguments)]
fn releases_at(
    noise: &str,
    problem: &Problem,
    basis: &MercerBasis,
    j: usize,
    eps: f64,
    tau: f64,
    releases: usize,
    values: &[f64],
    truth: &[Vec<f64>],
) -> AnyResult<(Vec<f64>, Vec<f64>)> {
    let curves = &problem.curves;
    let mut setup = MeanSetup::new(curves.n(), Epsilon::new(eps)?, ClippingBound::l2(tau)?)?;
    if let Some(r) = &problem.reference {
        setup = setup.centred_at(r.clone())?;
    }
    let mechanism = if noise == "gaussian" {
        PrivateCovariance::gaussian(basis, setup, j, Delta::new(DELTA)?)?
    } else {
        PrivateCovariance::laplace(basis, setup, j)?
    };
    let summary = mechanism.summarize(curves)?;
    let mut rng = NoiseRng::seeded(25 + j as u64);
    let (mut dists, mut errs) = (Vec::new(), Vec::new());
    for _ in 0..releases {
        let release = mechanism.privatize(&summary, &mut rng)?;
        let fpca = release.output().fpca(K)?;
        dists.push(projector_distance(&whitened(curves.grid(), fpca.eigenfunctions()), truth)?);
        let num: f64 = fpca.eigenvalues().iter().zip(values).map(|(a, b)| (a - b).powi(2)).sum();
        let den: f64 = values.iter().map(|b| b * b).sum();
        errs.push((num / den).sqrt());
    }
    Ok((dists, errs))
}

/// Private end to end, per release: the bound at `BOUND_SHARE · ε`, then the covariance at the rest
/// with the released bound. Mean released bound, distances and eigenvalue errors.
#[allow(clippy::too_many_arguments)]
fn tuned_releases(
    noise: &str,
    problem: &Problem,
    basis: &MercerBasis,
    j: usize,
    eps: f64,
    releases: usize,
    values: &[f64],
    truth: &[Vec<f64>],
) -> AnyResult<(f64, Vec<f64>, Vec<f64>)> {
    let curves = &problem.curves;
    let n = curves.n();
    let centred = |setup: MeanSetup| -> AnyResult<MeanSetup> {
        Ok(match &problem.reference {
            Some(r) => setup.centred_at(r.clone())?,
            None => setup,
        })
    };
    let bound_eps = Epsilon::new(BOUND_SHARE * eps)?;
    let factor = BoundSearch::default().factor(n, eps);
    let bound = CovarianceBound::new(
        basis,
        centred(MeanSetup::new(n, bound_eps, ClippingBound::l2(problem.tau)?)?)?,
        j,
        100.0,
        factor,
    )?;
    let bound_summary = bound.summarize(curves)?;
    let mut rng = NoiseRng::seeded(250 + j as u64);
    let (mut taus, mut dists, mut errs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..releases {
        let tau = bound.bound_of(&bound.privatize(&bound_summary, &mut rng)?)?;
        let setup = centred(MeanSetup::new(n, Epsilon::new((1.0 - BOUND_SHARE) * eps)?, tau)?)?;
        let mechanism = if noise == "gaussian" {
            PrivateCovariance::gaussian(basis, setup, j, Delta::new(DELTA)?)?
        } else {
            PrivateCovariance::laplace(basis, setup, j)?
        };
        let fpca = mechanism.release(curves, &mut rng)?.output().fpca(K)?;
        taus.push(tau.value());
        dists.push(projector_distance(&whitened(curves.grid(), fpca.eigenfunctions()), truth)?);
        let num: f64 = fpca.eigenvalues().iter().zip(values).map(|(a, b)| (a - b).powi(2)).sum();
        let den: f64 = values.iter().map(|b| b * b).sum();
        errs.push((num / den).sqrt());
    }
    Ok((taus.iter().sum::<f64>() / releases as f64, dists, errs))
}

/// NOT PRIVATE (a benchmark only): the 0.9 quantile of the centred projected record norms.
fn oracle_bound(curves: &CurveSet, block: &MercerBasis, reference: Option<&[f64]>) -> AnyResult<f64> {
    let offset = match reference {
        Some(r) => block.project(r)?,
        None => vec![0.0; block.len()],
    };
    let mut norms: Vec<f64> = (0..curves.n())
        .map(|i| {
            let x = block.project(curves.row(i))?;
            Ok(x.iter().zip(&offset).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt())
        })
        .collect::<AnyResult<_>>()?;
    norms.sort_by(f64::total_cmp);
    Ok(norms[(0.9 * (norms.len() - 1) as f64) as usize].max(1e-6))
}

pub fn run(quick: bool, data: Option<&std::path::Path>) -> AnyResult<Vec<Cell>> {
    // Many draws for statistics, nothing published about a person: variable-time sampling
    // (the same draws as the padded samplers; docs/DESIGN.md 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let start = std::time::Instant::now();
    let out = ReportDir::create(common::report_path("sparse_and_fpca", quick))?;
    let releases = if quick { 5 } else { 50 };
    let epsilons: &[f64] = if quick { &[1.0] } else { &[0.25, 1.0, 4.0, 16.0] };
    let components: &[usize] = if quick { &[4] } else { &[3, 4, 6, 8] };
    let kernel = Stationary::matern32(0.1)?;

    let mut problems = Vec::new();
    let data = data_dir(data);
    for frame in &FRAMES {
        match frame.load(&data) {
            Ok((curves, _)) => problems.push(Problem {
                label: frame.label.into(),
                reference: Some(frame.reference(curves.grid())),
                tau: frame.bounds().l2,
                curves,
            }),
            Err(e) => println!("fpca skipped={} reason=\"{e}\"", frame.label),
        }
    }
    let sim_basis = MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, 100)?, BasisOptions::default())?;
    let scenarios: &[Scenario] = if quick { &[Scenario::S2] } else { &Scenario::ALL };
    for &scenario in scenarios {
        let n = 1000;
        let sim = simulate(scenario, &sim_basis, n, 2500 + n as u64)?;
        problems.push(Problem {
            label: format!("{}-n{n}", scenario.label()),
            curves: sim.curves,
            reference: None,
            tau: scenario.design_bounds(&sim_basis)?.l2,
        });
    }

    let mut md = String::from("# Private FPCA (issue 25, dense curves)\n\n");
    md.push_str(
        "`PrivateCovariance::laplace` (pure ε) and `::gaussian` ((ε, 10⁻⁶)): records centred at the public centre, projected on the J leading \
         Matérn 3/2 (ρ = 0.1) components, clipped in L2 at the public τ, the mean and the second moments released \
         with Laplace noise, C = S − m mᵀ, FPCA by post-processing (PSD projection). Against the full-data \
         non-private FPCA on the grid: `subspace` = ‖P̃ − P‖₂ of the top-3 projectors (mean ± se over the \
         releases), `eigval` = ‖λ̃ − λ‖/‖λ‖ over the top 3, `truncation` = the non-private FPCA in the J-component \
         basis.\n\n",
    );
    let mut cells = Vec::new();
    for problem in &problems {
        let curves = &problem.curves;
        let (n, grid) = (curves.n(), curves.grid().clone());
        let (values, truth) = grid_fpca(curves)?;
        let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default())?;
        writeln!(
            md,
            "## {} (n = {n}, K = {}, public τ = {:.4}; non-private top-3 eigenvalues {:.4e}, {:.4e}, {:.4e})\n",
            problem.label,
            grid.len(),
            problem.tau,
            values[0],
            values[1],
            values[2]
        )?;
        println!("fpca_eigenvalues data={} top3={:?}", problem.label, values);
        writeln!(
            md,
            "| noise | ε | J | subspace ± se | eigval | truncation | oracle τ (not private) | subspace at oracle τ | private τ̂ (mean) | subspace, private τ̂ |\n|---|---|---|---|---|---|---|---|---|---|"
        )?;
        for &j in components {
            let block = basis.truncated(j)?;
            let nonprivate = projector_distance(
                &whitened(&grid, &basis_fpca(curves, &block, problem.reference.as_deref())?),
                &truth,
            )?;
            for (&eps, noise) in epsilons.iter().flat_map(|e| [(e, "laplace"), (e, "gaussian")]) {
                let (dists, errs) =
                    releases_at(noise, problem, &basis, j, eps, problem.tau, releases, &values, &truth)?;
                let oracle_tau = oracle_bound(curves, &block, problem.reference.as_deref())?;
                let (oracle_dists, _) =
                    releases_at(noise, problem, &basis, j, eps, oracle_tau, releases, &values, &truth)?;
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let (dist, err) = (mean(&dists), mean(&errs));
                let oracle_dist = mean(&oracle_dists);
                let (tuned_tau, tuned_dists, tuned_errs) =
                    tuned_releases(noise, problem, &basis, j, eps, releases, &values, &truth)?;
                let (tuned_dist, tuned_err) = (mean(&tuned_dists), mean(&tuned_errs));
                let se = (dists.iter().map(|d| (d - dist).powi(2)).sum::<f64>()
                    / (dists.len() as f64 * (dists.len() as f64 - 1.0)).max(1.0))
                .sqrt();
                println!(
                    "fpca data={} noise={noise} epsilon={eps} k={K} J={j} tau={} eigval_rel_err={err:.4} subspace_dist={dist:.4} \
                     nonprivate_subspace_dist={nonprivate:.4} oracle_tau={oracle_tau:.4} \
                     oracle_tau_subspace_dist={oracle_dist:.4} tuned_tau={tuned_tau:.4} \
                     tuned_subspace_dist={tuned_dist:.4} tuned_eigval_rel_err={tuned_err:.4}",
                    problem.label, problem.tau
                );
                writeln!(
                    md,
                    "| {noise} | {eps} | {j} | {dist:.3} ± {se:.3} | {err:.3} | {nonprivate:.3} | {oracle_tau:.3} | {oracle_dist:.3} | {tuned_tau:.3} | {tuned_dist:.3} |"
                )?;
                cells.push(Cell {
                    data: problem.label.clone(),
                    noise,
                    n,
                    epsilon: eps,
                    k: K,
                    components: j,
                    tau: problem.tau,
                    eigval_rel_err: err,
                    subspace_dist: dist,
                    subspace_dist_se: se,
                    nonprivate_subspace_dist: nonprivate,
                    oracle_tau,
                    oracle_tau_subspace_dist: oracle_dist,
                    tuned_tau,
                    tuned_subspace_dist: tuned_dist,
                    tuned_eigval_rel_err: tuned_err,
                });
            }
        }
        md.push('\n');
    }
    finish_report(&out, &mut md, &cells, start)?;
    Ok(cells)
}
