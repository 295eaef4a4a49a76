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
//! bound for the simulations. The `tuned_*` columns are private end to end: [`TunedCovariance`] (the
//! private bound, searched down to the public τ / 100 with the means' share rule, then the
//! covariance at it: one mechanism, the front doors' FPCA).
//! The `oracle_*` columns are NOT private (a bound from the data's norms), a benchmark only.
//!
//! **The sparse half**: each curve made sparse by keeping m random grid points (seeded, uniform over
//! the grid's indices: that design is public and given to the mechanism), released by the default
//! sparse mean ([`SparseMean::tuned`]: inverse-probability-weighted pseudo-curves, the privately tuned
//! ICLP-RKHS, clamped to the frame's range). One record per cell:
//!
//! `sparse data=D m=M n=N epsilon=E mse=X dense_mse=Y nonprivate_sparse_mse=Z`
//!
//! - `mse`: `E‖μ̃ − μ̂‖²` (grid L²) against the **full dense sample mean** μ̂, mean over releases (and
//!   over fresh subsamples: each release draws its own sparse data);
//! - `dense_mse`: the same for the dense private default (`MeanRequest::in_range`, the front doors'
//!   default) on the full curves;
//! - `nonprivate_sparse_mse`: the same estimator without privacy — the mean of the pseudo-curves
//!   projected on the basis (no clipping, no noise, no shrinkage).
//!
//! and `sparse_rate data=S m=5 epsilon=1 slope=... ` (the log-log slope of mse against n on a
//! simulated scenario, beside the rates of the terms it is made of), with the figure
//! `sparse_rate.svg`.
//!
//! `cargo run --release --example sparse_and_fpca [-- --quick] [-- --data-dir DIR]` writes
//! `reports/sparse_and_fpca[_quick]/{report.md,results.json}`. `-- --truncation-only` prints one
//! `truncation data=... noise=... epsilon=... fixed_J3=... ... fixed_J8=... risk_J=... risk_subspace=...`
//! record per cell: the truncation chosen by its estimated risk (post-processing of a J = 8 release)
//! against each fixed J released on its own (docs/DESIGN.md §17.9).

#[path = "../common/mod.rs"]
mod common;

use fdp::release::Charge;
use std::fmt::Write as _;

use common::{AnyResult, FRAMES, finish_report, flag_value, quick_flag};
use fdp::data::SparseCurves;
use fdp::data::{CurveSet, Scenario, data_dir, simulate};
use fdp::estimators::sparse::{SparseBinnedMean, SparseFrame, SparseMean};
use fdp::estimators::{MeanSetup, Mechanism, PrivateCovariance, SparseCovariance, Truncation, TunedCovariance};
use fdp::front::{MeanMethod, MeanRequest};
use fdp::mercer::linalg::{symmetric_eigen, symmetric_eigenvalues};
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::report::ReportDir;
use rand::SeedableRng;
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
    /// Private end to end: [`TunedCovariance`] (ceiling = the public τ, floor τ/100, the means'
    /// share and factor rules), the mean of its released bounds.
    pub tuned_tau: f64,
    pub tuned_subspace_dist: f64,
    pub tuned_eigval_rel_err: f64,
}

/// One cell of the sparse-mean half.
#[derive(Debug, Clone, Serialize)]
pub struct SparseCell {
    pub data: String,
    pub m: usize,
    pub n: usize,
    pub epsilon: f64,
    /// `E‖μ̃ − μ̂‖²` of the private sparse default against the full dense sample mean.
    pub mse: f64,
    pub mse_se: f64,
    /// The dense private default (`MeanRequest::in_range`) on the full curves.
    pub dense_mse: f64,
    /// The sparse estimator without privacy (pseudo-curve mean projected on the basis).
    pub nonprivate_sparse_mse: f64,
    /// The pseudo-curves released by the tuned ICLP-RKHS ([`SparseMean::tuned`]).
    pub pseudo_iclp_mse: f64,
    /// The default without the stated design (the bins' weights released privately).
    pub unknown_design_mse: f64,
}

/// Everything `run` measured.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub fpca: Vec<Cell>,
    pub sparse: Vec<SparseCell>,
    /// The log-log slope of the sparse mean's error against n (simulation, m = 5, ε = 1).
    pub sparse_rate_slope: f64,
    /// The sparse FPCA beside the dense private FPCA.
    pub sparse_fpca: Vec<SparseFpcaCell>,
}

/// One cell of the sparse FPCA ([`SparseCovariance`], Laplace, private end to end).
#[derive(Debug, Clone, Serialize)]
pub struct SparseFpcaCell {
    pub data: String,
    pub m: usize,
    pub n: usize,
    pub epsilon: f64,
    pub k: usize,
    pub components: usize,
    pub ridge: f64,
    /// Mean over releases (each on a fresh subsample) of ‖P̃ − P‖₂ against the full-data FPCA.
    pub subspace_dist: f64,
    pub subspace_dist_se: f64,
    pub eigval_rel_err: f64,
    /// The same smoother without clipping or noise: the covariance of the records' own fits.
    pub nonprivate_subspace_dist: f64,
    /// The dense private FPCA ([`TunedCovariance`], the same J and ε) on the full curves.
    pub dense_subspace_dist: f64,
    /// The released bound (mean).
    pub tuned_tau: f64,
}

/// A dataset with its public centre and bound.
struct Problem {
    label: String,
    curves: CurveSet<'static>,
    reference: Option<Vec<f64>>,
    tau: f64,
    /// The public range of the values (the frame's; the simulations': their design sup bound
    /// around 0).
    range: (f64, f64),
}

const K: usize = 3;
/// δ of the Gaussian variant.
const DELTA: f64 = 1e-6;

fn main() -> AnyResult<()> {
    let dir = flag_value("--data-dir").map(std::path::PathBuf::from);
    if std::env::args().any(|a| a == "--sparse-fpca-only") {
        let problems = problems(quick_flag(), dir.as_deref())?;
        let mut md = String::new();
        sparse_fpca_half(quick_flag(), &problems, Stationary::matern32(0.1)?, &mut md)?;
        return Ok(());
    }
    if std::env::args().any(|a| a == "--truncation-only") {
        truncation_by_risk(quick_flag(), &problems(quick_flag(), dir.as_deref())?, Stationary::matern32(0.1)?)?;
        return Ok(());
    }
    if std::env::args().any(|a| a == "--centred-only") {
        centred_at_private_mean(quick_flag(), &problems(quick_flag(), dir.as_deref())?, Stationary::matern32(0.1)?)?;
        return Ok(());
    }
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
        let release = mechanism.privatize(&summary, &mut rng, Charge::unaccounted())?;
        let fpca = release.output().fpca(K)?;
        dists.push(projector_distance(&whitened(curves.grid(), fpca.eigenfunctions()), truth)?);
        let num: f64 = fpca.eigenvalues().iter().zip(values).map(|(a, b)| (a - b).powi(2)).sum();
        let den: f64 = values.iter().map(|b| b * b).sum();
        errs.push((num / den).sqrt());
    }
    Ok((dists, errs))
}

/// [`TunedCovariance`] of `problem`'s curves in the J = `j` leading components of `basis`, at the
/// frame's ceiling and reference: Laplace, or Gaussian at (ε, [`DELTA`]).
fn tuned_covariance(
    noise: &str,
    problem: &Problem,
    basis: &MercerBasis,
    j: usize,
    eps: f64,
) -> AnyResult<TunedCovariance> {
    let n = problem.curves.n();
    let ceiling = ClippingBound::l2(problem.tau)?;
    let reference = problem.reference.clone();
    Ok(if noise == "gaussian" {
        TunedCovariance::gaussian(basis, n, Epsilon::new(eps)?, Delta::new(DELTA)?, ceiling, j, reference)?
    } else {
        TunedCovariance::laplace(basis, n, Epsilon::new(eps)?, ceiling, j, reference)?
    })
}

/// Private end to end, per release: [`TunedCovariance`] (its bound stage, then the covariance at the
/// released bound). Mean released bound, distances and eigenvalue errors.
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
    let mechanism = tuned_covariance(noise, problem, basis, j, eps)?;
    let summary = mechanism.summarize(curves)?;
    let mut rng = NoiseRng::seeded(250 + j as u64);
    let (mut taus, mut dists, mut errs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..releases {
        let release = mechanism.privatize(&summary, &mut rng, Charge::unaccounted())?;
        let fpca = release.output().fpca(K)?;
        taus.push(release.metadata().clipping.map_or(f64::NAN, |c| c.value()));
        dists.push(projector_distance(&whitened(curves.grid(), fpca.eigenfunctions()), truth)?);
        let num: f64 = fpca.eigenvalues().iter().zip(values).map(|(a, b)| (a - b).powi(2)).sum();
        let den: f64 = values.iter().map(|b| b * b).sum();
        errs.push((num / den).sqrt());
    }
    Ok((taus.iter().sum::<f64>() / releases as f64, dists, errs))
}

/// The components of the figures: J = 4 (in both the quick and the full grid of J).
const FIGURE_COMPONENTS: usize = 4;

/// `eigenfunctions_<data>.svg`: the top-3 eigenfunctions of one private release (`TunedCovariance`,
/// Laplace, ε = 1, J = 4, seeded; private end to end) as solid lines beside the full-data
/// non-private FPCA's (dashed, the same colour), each private one signed to agree with its
/// non-private one (an eigenfunction's sign is arbitrary).
fn eigenfunction_figure(
    problem: &Problem,
    basis: &MercerBasis,
    truth: &[Vec<f64>],
    out: &ReportDir,
    md: &mut String,
) -> AnyResult<()> {
    let curves = &problem.curves;
    let grid = curves.grid();
    let mechanism = TunedCovariance::laplace(
        basis,
        curves.n(),
        Epsilon::new(1.0)?,
        ClippingBound::l2(problem.tau)?,
        FIGURE_COMPONENTS,
        problem.reference.clone(),
    )?;
    let release = mechanism.release(curves, &mut NoiseRng::seeded(2501), Charge::unaccounted())?;
    let fpca = release.output().fpca(K)?;
    let nonprivate: Vec<Vec<f64>> =
        truth.iter().map(|f| f.iter().zip(grid.weights()).map(|(v, w)| v / w.sqrt()).collect()).collect();
    let mut series = Vec::new();
    for (c, (private, reference)) in fpca.eigenfunctions().iter().zip(&nonprivate).enumerate() {
        let agree: f64 = private.iter().zip(reference).zip(grid.weights()).map(|((a, b), w)| a * b * w).sum();
        let sign = if agree < 0.0 { -1.0 } else { 1.0 };
        let color = fdp::report::PALETTE[c % fdp::report::PALETTE.len()];
        series.push(fdp::report::Series::new(
            format!("private {}", c + 1),
            private.iter().map(|v| sign * v).collect(),
            color,
        ));
        series.push(fdp::report::Series::new(format!("non-private {}", c + 1), reference.clone(), color).dashed());
    }
    let slug: String =
        problem.label.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    let file = format!("eigenfunctions_{slug}.svg");
    fdp::report::CurveFigure {
        title: format!("{}: top-3 eigenfunctions, private (ε = 1, J = {FIGURE_COMPONENTS}) and not", problem.label),
        x_label: "t".into(),
        y_label: "eigenfunction".into(),
        grid: grid.points().to_vec(),
        background: Vec::new(),
        series,
    }
    .write_svg(&out.file(&file), 720, 480)?;
    writeln!(md, "![the top-3 eigenfunctions, private beside non-private]({file})\n")?;
    Ok(())
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

/// The datasets (DTI cca and Adelaide Mondays when ../shared/data holds them) and the simulated
/// scenarios, each with its public frame.
fn problems(quick: bool, data: Option<&std::path::Path>) -> AnyResult<Vec<Problem>> {
    let kernel = Stationary::matern32(0.1)?;
    let mut problems = Vec::new();
    let data = data_dir(data);
    for frame in &FRAMES {
        match frame.load(&data) {
            Ok((curves, _)) => problems.push(Problem {
                label: frame.label.into(),
                reference: Some(frame.reference(curves.grid())),
                tau: frame.bounds().l2,
                range: (frame.centre - frame.half_range, frame.centre + frame.half_range),
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
            range: {
                let sup = scenario.design_bounds(&sim_basis)?.sup;
                (-sup, sup)
            },
        });
    }

    Ok(problems)
}

pub fn run(quick: bool, data: Option<&std::path::Path>) -> AnyResult<Results> {
    // Many draws for statistics, nothing published about a person: variable-time sampling
    // (the same draws as the padded samplers; docs/DESIGN.md 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let start = std::time::Instant::now();
    let out = ReportDir::create(common::report_path("sparse_and_fpca", quick))?;
    let releases = if quick { 5 } else { 50 };
    let epsilons: &[f64] = if quick { &[1.0] } else { &[0.25, 1.0, 4.0, 16.0] };
    let components: &[usize] = if quick { &[4] } else { &[3, 4, 6, 8] };
    let kernel = Stationary::matern32(0.1)?;

    let problems = problems(quick, data)?;

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
        eigenfunction_figure(problem, &basis, &truth, &out, &mut md)?;
        md.push('\n');
    }
    let (sparse, sparse_rate_slope) = sparse_half(quick, &problems, kernel, &out, &mut md)?;
    let sparse_fpca = sparse_fpca_half(quick, &problems, kernel, &mut md)?;
    let results = Results { fpca: cells, sparse, sparse_rate_slope, sparse_fpca };
    finish_report(&out, &mut md, &results, start)?;
    Ok(results)
}

/// `‖a − b‖²` in the grid's L².
fn sq_error(grid: &Grid, a: &[f64], b: &[f64]) -> AnyResult<f64> {
    Ok(grid.sq_distance(a, b)?)
}

/// The public design of `SparseCurves::subsample`: every grid index with the same probability.
fn index_design(grid: &Grid) -> Vec<f64> {
    vec![1.0 / grid.len() as f64; grid.len()]
}

/// Errors of the sparse default, the dense default and the non-private sparse estimator on
/// `problem` at m points per curve and ε (`releases` releases, each on a fresh seeded subsample).
fn sparse_cell(
    problem: &Problem,
    basis: &MercerBasis,
    kernel: Stationary,
    m: usize,
    eps: f64,
    releases: usize,
    seed: u64,
) -> AnyResult<SparseCell> {
    let curves = &problem.curves;
    let (n, grid) = (curves.n(), curves.grid());
    let target = curves.mean_curve();
    let epsilon = Epsilon::new(eps)?;
    let frame_without_design = match &problem.reference {
        Some(r) => SparseFrame::new(grid, problem.range)?.centred_at(r.clone())?,
        None => SparseFrame::new(grid, problem.range)?,
    };
    let frame = frame_without_design.clone().with_design(&index_design(grid))?;
    let sparse = SparseBinnedMean::new(basis, n, epsilon, frame.clone())?;
    let hajek = SparseBinnedMean::new(basis, n, epsilon, frame_without_design)?;
    let pseudo_iclp = SparseMean::tuned(basis, n, epsilon, frame.clone())?;
    let dense = MeanRequest::in_range(MeanMethod::IclpRkhs, kernel, problem.range, epsilon).build(grid, n)?;
    let mut rng = NoiseRng::seeded(seed);
    let mut sub_rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (mut errs, mut dense_errs, mut np_errs, mut iclp_errs, mut hajek_errs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..releases {
        let data = SparseCurves::subsample(curves, m, &mut sub_rng)?;
        errs.push(sq_error(grid, sparse.release(&data, &mut rng, Charge::unaccounted())?.curve(), &target)?);
        hajek_errs.push(sq_error(grid, hajek.release(&data, &mut rng, Charge::unaccounted())?.curve(), &target)?);
        iclp_errs.push(sq_error(grid, pseudo_iclp.release(&data, &mut rng, Charge::unaccounted())?.curve(), &target)?);
        dense_errs.push(sq_error(grid, dense.release(curves, &mut rng, Charge::unaccounted())?.curve(), &target)?);
        let pseudo = frame.pseudo_curves(&data)?.mean_curve();
        let nonprivate = basis.synthesize(&basis.project(&pseudo)?)?;
        np_errs.push(sq_error(grid, &nonprivate, &target)?);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mse = mean(&errs);
    let se = (errs.iter().map(|e| (e - mse).powi(2)).sum::<f64>()
        / (errs.len() * errs.len().saturating_sub(1)).max(1) as f64)
        .sqrt();
    Ok(SparseCell {
        data: problem.label.clone(),
        m,
        n,
        epsilon: eps,
        mse,
        mse_se: se,
        dense_mse: mean(&dense_errs),
        nonprivate_sparse_mse: mean(&np_errs),
        pseudo_iclp_mse: mean(&iclp_errs),
        unknown_design_mse: mean(&hajek_errs),
    })
}

/// The sparse half: the cells on every problem, then the error against n on a simulation.
fn sparse_half(
    quick: bool,
    problems: &[Problem],
    kernel: Stationary,
    out: &ReportDir,
    md: &mut String,
) -> AnyResult<(Vec<SparseCell>, f64)> {
    let releases = if quick { 4 } else { 40 };
    let ms: &[usize] = if quick { &[5] } else { &[3, 5, 10] };
    let epsilons: &[f64] = if quick { &[1.0] } else { &[0.25, 1.0, 4.0] };
    md.push_str(
        "# Private means of sparse curves\n\nEach curve kept at m random grid points (seeded, a fresh subsample per \
         release; the uniform design over the grid's indices is public). `default` = `SparseBinnedMean` with the design \
         stated (privately tuned bound on the records' deviations, binned sums, SURE-chosen smoothing, clamped to the \
         frame's range); `unknown design` = the same without the design (the bins' weights released too); \
         `pseudo ICLP` = `SparseMean::tuned` (inverse-probability-weighted pseudo-curves released by the tuned \
         ICLP-RKHS). Errors are E‖μ̃ − μ̂‖² against the full dense sample mean; `dense` = the dense private default \
         on the full curves; `non-private sparse` = the pseudo-curve mean projected on the basis (no clipping, no \
         noise).\n\n| data | n | m | ε | default ± se | unknown design | pseudo ICLP | dense | non-private sparse | default / dense |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut cells = Vec::new();
    for problem in problems {
        let basis = MercerBasis::build(kernel, problem.curves.grid().clone(), BasisOptions::default())?;
        for &m in ms {
            for &eps in epsilons {
                let c = sparse_cell(problem, &basis, kernel, m, eps, releases, 7_000 + m as u64)?;
                println!(
                    "sparse data={} m={m} n={} epsilon={eps} mse={:.4e} dense_mse={:.4e} nonprivate_sparse_mse={:.4e} \
                     unknown_design_mse={:.4e} pseudo_iclp_mse={:.4e}",
                    c.data, c.n, c.mse, c.dense_mse, c.nonprivate_sparse_mse, c.unknown_design_mse, c.pseudo_iclp_mse
                );
                writeln!(
                    md,
                    "| {} | {} | {m} | {eps} | {:.3e} ± {:.1e} | {:.3e} | {:.3e} | {:.3e} | {:.3e} | {:.2} |",
                    c.data,
                    c.n,
                    c.mse,
                    c.mse_se,
                    c.unknown_design_mse,
                    c.pseudo_iclp_mse,
                    c.dense_mse,
                    c.nonprivate_sparse_mse,
                    c.mse / c.dense_mse
                )?;
                cells.push(c);
            }
        }
    }

    // Error against n at m = 5, ε = 1 on S-2 (a fresh simulation per n).
    let sim_basis = MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, 100)?, BasisOptions::default())?;
    let ns: &[usize] = if quick { &[200, 800] } else { &[250, 500, 1000, 2000, 4000, 8000] };
    let sup = Scenario::S2.design_bounds(&sim_basis)?.sup;
    let mut rate = Vec::new();
    for &n in ns {
        let sim = simulate(Scenario::S2, &sim_basis, n, 9_100 + n as u64)?;
        let problem =
            Problem { label: format!("S-2-n{n}"), curves: sim.curves, reference: None, tau: 0.0, range: (-sup, sup) };
        rate.push(sparse_cell(&problem, &sim_basis, kernel, 5, 1.0, releases, 9_200 + n as u64)?);
    }
    let logs: Vec<(f64, f64)> = rate.iter().map(|c| ((c.n as f64).ln(), c.mse.ln())).collect();
    let slope = least_squares_slope(&logs);
    let np_logs: Vec<(f64, f64)> = rate.iter().map(|c| ((c.n as f64).ln(), c.nonprivate_sparse_mse.ln())).collect();
    let np_slope = least_squares_slope(&np_logs);
    println!("sparse_rate data=S-2 m=5 epsilon=1 slope={slope:.3} nonprivate_slope={np_slope:.3} theory_parametric=-1");
    writeln!(
        md,
        "\n## Error against n (S-2, m = 5, ε = 1)\n\nFitted log-log slope of the private sparse mean's error: **{slope:.2}** \
         (non-private sparse estimator: {np_slope:.2}). The upper bound of the sparse-mean literature (Cai & Yuan 2011 \
         without privacy; Cai, Chakraborty & Vuursteen 2024 with user-level DP) is a sum of a parametric term n⁻¹, a \
         smoothing term (nm)^(−2α/(2α+1)) and a privacy term that falls faster than the smoothing term in n; for the \
         smooth mean of S-2 (α large) every term approaches n⁻¹, so the reference slope is −1.\n"
    )?;
    fdp::report::LogLogFigure {
        title: "Sparse curves (m = 5, ε = 1, S-2): error against n".into(),
        x_label: "n (curves)".into(),
        y_label: "E‖μ̃ − μ̂‖²".into(),
        series: vec![
            fdp::report::ErrorSeries {
                label: format!("private sparse mean (slope {slope:.2})"),
                n: rate.iter().map(|c| c.n as f64).collect(),
                error: rate.iter().map(|c| c.mse).collect(),
                standard_error: rate.iter().map(|c| c.mse_se).collect(),
                color: fdp::report::PALETTE[0],
            },
            fdp::report::ErrorSeries {
                label: format!("non-private sparse (slope {np_slope:.2})"),
                n: rate.iter().map(|c| c.n as f64).collect(),
                error: rate.iter().map(|c| c.nonprivate_sparse_mse).collect(),
                standard_error: vec![0.0; rate.len()],
                color: fdp::report::PALETTE[1],
            },
        ],
    }
    .write_svg(&out.file("sparse_rate.svg"), 720, 480)?;
    cells.extend(rate);
    Ok((cells, slope))
}

/// The sparse FPCA ([`SparseCovariance`], Laplace, private end to end: its bound stage, then the
/// covariance of the records' own kernel-ridge fits) on each problem made sparse at m points per
/// curve (a fresh seeded subsample per release), beside the dense private FPCA
/// ([`TunedCovariance`]) at the same J and ε on the full curves; against the full-data FPCA.
fn sparse_fpca_half(
    quick: bool,
    problems: &[Problem],
    kernel: Stationary,
    md: &mut String,
) -> AnyResult<Vec<SparseFpcaCell>> {
    let releases = if quick { 3 } else { 20 };
    let ms: &[usize] = if quick { &[5] } else { &[3, 5, 10] };
    let components: &[usize] = if quick { &[4] } else { &[3, 6] };
    let ridges: &[f64] = if quick { &[SparseCovariance::DEFAULT_RIDGE] } else { &[0.1, 1.0, 10.0] };
    md.push_str(
        "\n# Private FPCA of sparse curves\n\nEach curve kept at m random grid points (a fresh seeded subsample per \
         release). `SparseCovariance` (Laplace, ε in total: the private bound, then the covariance): each record's own \
         kernel-ridge fit onto the J components (ridge ρ), clipped in L2, the covariance of the fits. `subspace` = \
         ‖P̃ − P‖₂ of the top-3 projectors against the full-data non-private FPCA; `non-private sparse` = the \
         covariance of the records' fits without clipping or noise; `dense` = `TunedCovariance` on the full curves at \
         the same J and ε.\n\n| data | n | m | ε | J | ρ | subspace ± se | eigval | non-private sparse | dense | τ̂ |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut cells = Vec::new();
    let eps = 1.0;
    for problem in problems {
        let curves = &problem.curves;
        let (n, grid) = (curves.n(), curves.grid().clone());
        let (values, truth) = grid_fpca(curves)?;
        let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default())?;
        let frame = match &problem.reference {
            Some(r) => SparseFrame::new(&grid, problem.range)?.centred_at(r.clone())?,
            None => SparseFrame::new(&grid, problem.range)?,
        };
        for &j in components {
            let (_, dense_dists, _) = tuned_releases("laplace", problem, &basis, j, eps, releases, &values, &truth)?;
            let dense = dense_dists.iter().sum::<f64>() / dense_dists.len() as f64;
            for &m in ms {
                for &ridge in ridges {
                    let ceiling = ClippingBound::l2(problem.tau)?;
                    let mechanism =
                        SparseCovariance::laplace(&basis, n, Epsilon::new(eps)?, frame.clone(), ceiling, j, ridge)?;
                    let mut rng = NoiseRng::seeded(31 + m as u64);
                    let mut sub_rng = rand::rngs::StdRng::seed_from_u64(8_000 + m as u64);
                    let (mut dists, mut errs, mut taus, mut np) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                    for _ in 0..releases {
                        let data = SparseCurves::subsample(curves, m, &mut sub_rng)?;
                        let release = mechanism.release(&data, &mut rng, Charge::unaccounted())?;
                        let fpca = release.output().fpca(K)?;
                        taus.push(release.metadata().clipping.map_or(f64::NAN, |c| c.value()));
                        dists.push(projector_distance(&whitened(&grid, fpca.eigenfunctions()), &truth)?);
                        let num: f64 = fpca.eigenvalues().iter().zip(&values).map(|(a, b)| (a - b).powi(2)).sum();
                        errs.push((num / values.iter().map(|b| b * b).sum::<f64>()).sqrt());
                        np.push(projector_distance(&whitened(&grid, &fits_fpca(&mechanism, &basis, &data)?), &truth)?);
                    }
                    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                    let dist = mean(&dists);
                    let se = (dists.iter().map(|d| (d - dist).powi(2)).sum::<f64>()
                        / (dists.len() as f64 * (dists.len() as f64 - 1.0)).max(1.0))
                    .sqrt();
                    let c = SparseFpcaCell {
                        data: problem.label.clone(),
                        m,
                        n,
                        epsilon: eps,
                        k: K,
                        components: j,
                        ridge,
                        subspace_dist: dist,
                        subspace_dist_se: se,
                        eigval_rel_err: mean(&errs),
                        nonprivate_subspace_dist: mean(&np),
                        dense_subspace_dist: dense,
                        tuned_tau: mean(&taus),
                    };
                    println!(
                        "fpca data={} sparse m={m} n={n} epsilon={eps} k={K} J={j} ridge={ridge} eigval_rel_err={:.4} \
                         subspace_dist={:.4} nonprivate_subspace_dist={:.4} dense_private_subspace_dist={:.4} tuned_tau={:.4}",
                        c.data,
                        c.eigval_rel_err,
                        c.subspace_dist,
                        c.nonprivate_subspace_dist,
                        c.dense_subspace_dist,
                        c.tuned_tau
                    );
                    writeln!(
                        md,
                        "| {} | {n} | {m} | {eps} | {j} | {ridge} | {:.3} ± {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                        c.data,
                        c.subspace_dist,
                        c.subspace_dist_se,
                        c.eigval_rel_err,
                        c.nonprivate_subspace_dist,
                        c.dense_subspace_dist,
                        c.tuned_tau
                    )?;
                    cells.push(c);
                }
            }
        }
    }
    Ok(cells)
}

/// DESIGN 17.6's first suggestion for the dense FPCA: centre at a **privately released mean**
/// instead of the frame's centre — a first release (the dense default, `MeanRequest::in_range`, at
/// a share `s` of ε), then [`TunedCovariance`] centred at it at `(1 − s) ε` (sequential
/// composition: private end to end), beside the frame's centre at the whole ε and (NOT private, a
/// benchmark) the sample mean as the centre. Rows `fpca data=... centred=... epsilon=... J=...`.
fn centred_at_private_mean(quick: bool, problems: &[Problem], kernel: Stationary) -> AnyResult<()> {
    let releases = if quick { 3 } else { 20 };
    let components: &[usize] = if quick { &[4] } else { &[3, 4, 6, 8] };
    let eps = 1.0;
    for problem in problems {
        let curves = &problem.curves;
        let (n, grid) = (curves.n(), curves.grid().clone());
        let (values, truth) = grid_fpca(curves)?;
        let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default())?;
        let (lo, hi) = problem.range;
        for &j in components {
            for share in [0.0, 0.1, 0.25] {
                let mut rng = NoiseRng::seeded(77 + j as u64);
                let mut dists = Vec::new();
                let mut taus = Vec::new();
                for _ in 0..releases {
                    let reference = if share > 0.0 {
                        let mean = MeanRequest::in_range(
                            MeanMethod::IclpRkhs,
                            kernel,
                            problem.range,
                            Epsilon::new(eps * share)?,
                        )
                        .build(&grid, n)?;
                        let released = mean.release(curves, &mut rng, Charge::unaccounted())?;
                        Some(released.curve().iter().map(|v| v.clamp(lo, hi)).collect::<Vec<f64>>())
                    } else {
                        problem.reference.clone()
                    };
                    let ceiling = ClippingBound::l2(problem.tau)?;
                    let covariance =
                        TunedCovariance::laplace(&basis, n, Epsilon::new(eps * (1.0 - share))?, ceiling, j, reference)?;
                    let release = covariance.release(curves, &mut rng, Charge::unaccounted())?;
                    let fpca = release.output().fpca(K)?;
                    dists.push(projector_distance(&whitened(&grid, fpca.eigenfunctions()), &truth)?);
                    taus.push(release.metadata().clipping.map_or(f64::NAN, |c| c.value()));
                }
                let p = Problem {
                    label: problem.label.clone(),
                    curves: curves.clone(),
                    reference: Some(curves.mean_curve()),
                    tau: problem.tau,
                    range: problem.range,
                };
                let (_, oracle, _) = tuned_releases("laplace", &p, &basis, j, eps, releases, &values, &truth)?;
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                println!(
                    "fpca data={} centred={} mean_share={share} epsilon={eps} k={K} J={j} subspace_dist={:.4} tuned_tau={:.4} \
                     sample_mean_centre_subspace_dist={:.4}",
                    problem.label,
                    if share > 0.0 { "private_mean" } else { "public_centre" },
                    mean(&dists),
                    mean(&taus),
                    mean(&oracle)
                );
            }
        }
    }
    Ok(())
}

/// NOT PRIVATE (the benchmark): the top-k eigenfunctions of the covariance of the records' own fits
/// ([`SparseCovariance::coefficients`]), without clipping or noise.
fn fits_fpca(mechanism: &SparseCovariance, basis: &MercerBasis, data: &SparseCurves) -> AnyResult<Vec<Vec<f64>>> {
    let j = mechanism.components();
    let x: Vec<Vec<f64>> = (0..data.n()).map(|i| mechanism.coefficients(data.record(i).0, data.record(i).1)).collect();
    let n = x.len() as f64;
    let mean: Vec<f64> = (0..j).map(|a| x.iter().map(|r| r[a]).sum::<f64>() / n).collect();
    let c = faer::Mat::from_fn(j, j, |a, b| x.iter().map(|r| (r[a] - mean[a]) * (r[b] - mean[b])).sum::<f64>() / n);
    let (_, vectors) = symmetric_eigen(c.as_ref())?;
    let block = basis.truncated(j)?;
    (0..K).map(|c| Ok(block.synthesize(&(0..j).map(|a| vectors[(a, c)]).collect::<Vec<_>>())?)).collect()
}

/// The least-squares slope of `y` on `x`.
fn least_squares_slope(points: &[(f64, f64)]) -> f64 {
    let k = points.len() as f64;
    let (mx, my) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x / k, b + y / k));
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    sxy / sxx
}

/// `--truncation-only`: the truncation chosen by its estimated risk (`Covariance::risk_truncation`,
/// post-processing) of a `TunedCovariance` released at J_max, against every fixed J <= J_max
/// released on its own. Subspace distance (top 3) and the relative Hilbert-Schmidt error of the
/// operator against the non-private covariance of the unclipped data in the J_max components.
fn truncation_by_risk(quick: bool, problems: &[Problem], kernel: Stationary) -> AnyResult<()> {
    fdp::noise::timing::allow_variable_time_for_simulation();
    let releases = if quick { 5 } else { 20 };
    let j_max = 8;
    for problem in problems {
        let curves = &problem.curves;
        let grid = curves.grid().clone();
        let (values, truth) = grid_fpca(curves)?;
        let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default())?;
        for eps in [0.25, 1.0, 4.0, 16.0] {
            for noise in ["laplace", "gaussian"] {
                let mut line = format!("truncation data={} noise={noise} epsilon={eps}", problem.label);
                for j in K..=j_max {
                    let (_, dists, _) = tuned_releases(noise, problem, &basis, j, eps, releases, &values, &truth)?;
                    write!(line, " fixed_J{j}={:.3}", dists.iter().sum::<f64>() / releases as f64)?;
                }
                let mechanism = tuned_covariance(noise, problem, &basis, j_max, eps)?.with_truncation(Truncation::Risk);
                let summary = mechanism.summarize(curves)?;
                let mut rng = NoiseRng::seeded(4250);
                let (mut chosen, mut dists) = (Vec::new(), Vec::new());
                for _ in 0..releases {
                    let fpca = mechanism.privatize(&summary, &mut rng, Charge::unaccounted())?.output().fpca(K)?;
                    chosen.push(fpca.components() as f64);
                    dists.push(projector_distance(&whitened(&grid, fpca.eigenfunctions()), &truth)?);
                }
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                println!("{line} risk_J={:.2} risk_subspace={:.3}", mean(&chosen), mean(&dists));
            }
        }
        // The sparse covariance (Laplace, the default ridge) at m points per curve, ε = 1: fixed J
        // against the risk's truncation of a J = 8 release.
        let frame = match &problem.reference {
            Some(r) => SparseFrame::new(&grid, problem.range)?.centred_at(r.clone())?,
            None => SparseFrame::new(&grid, problem.range)?,
        };
        for m in [5, 10] {
            let mut line = format!("truncation data={} sparse m={m} noise=laplace epsilon=1", problem.label);
            for (j, rule) in
                [(3, Truncation::Fixed), (6, Truncation::Fixed), (8, Truncation::Fixed), (8, Truncation::Risk)]
            {
                let ceiling = ClippingBound::l2(problem.tau)?;
                let mechanism = SparseCovariance::laplace(
                    &basis,
                    curves.n(),
                    Epsilon::new(1.0)?,
                    frame.clone(),
                    ceiling,
                    j,
                    SparseCovariance::DEFAULT_RIDGE,
                )?
                .with_truncation(rule);
                let mut rng = NoiseRng::seeded(31 + m as u64);
                let mut sub_rng = rand::rngs::StdRng::seed_from_u64(8_000 + m as u64);
                let (mut chosen, mut dists) = (Vec::new(), Vec::new());
                for _ in 0..releases {
                    let data = SparseCurves::subsample(curves, m, &mut sub_rng)?;
                    let fpca = mechanism.release(&data, &mut rng, Charge::unaccounted())?.output().fpca(K)?;
                    chosen.push(fpca.components() as f64);
                    dists.push(projector_distance(&whitened(&grid, fpca.eigenfunctions()), &truth)?);
                }
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                match rule {
                    Truncation::Risk => write!(line, " risk_J={:.2} risk_subspace={:.3}", mean(&chosen), mean(&dists))?,
                    _ => write!(line, " fixed_J{j}={:.3}", mean(&dists))?,
                }
            }
            println!("{line}");
        }
    }
    Ok(())
}
