//! Figure 1 of the ICLP paper (and Figure 6 of its appendix): MSE against n for IID Laplace, ICLP-l1
//! and ICLP-RKHS, each tuned by the privacy-safe plug-in rule and by private cross-validation (PCV),
//! ε = 1, scenarios S-1 to S-4; Matérn 3/2 (Figure 1) and Matérn 5/2 (Figure 6), ρ = 0.1.
//!
//! `cargo run --release --example fig1_pcv_vs_plugin [-- --quick]` writes `reports/fig1_pcv_vs_plugin/`.
//! PCV looks at the data: its releases are *not* private unless the selection is given its own budget;
//! it is shown, as in the paper, to measure what the plug-in rule gives up.

#[path = "../common/mod.rs"]
mod common;

use fdp::release::Charge;
use std::fmt::Write as _;
use std::time::Instant;

use common::{AnyResult, Estimate, estimate, finish_report, log_log_slope, quick_flag, sq_dist};
use fdp::data::{DesignBounds, Scenario, simulate};
use fdp::estimators::{BasisMean, MeanMechanism, MeanSetup, PlugIn, Tuning, private_cross_validation};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::release::Regularisation;
use fdp::report::{ErrorSeries, LogLogFigure, PALETTE, ReportDir};
use rayon::prelude::*;
use serde::Serialize;

/// A mechanism family with one tuning parameter (ψ, or M for IID Laplace).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
enum Family {
    IidLaplace,
    IclpL1,
    IclpRkhs,
}

impl Family {
    fn name(self) -> &'static str {
        match self {
            Self::IidLaplace => "iid_laplace",
            Self::IclpL1 => "iclp_l1",
            Self::IclpRkhs => "iclp_rkhs",
        }
    }

    /// The design bound in the norm this mechanism clips in.
    fn bound(self, b: &DesignBounds) -> fdp::estimators::Result<ClippingBound> {
        if self == Self::IclpRkhs { ClippingBound::coefficient_l1(b.coefficient_l1) } else { ClippingBound::l2(b.l2) }
    }

    fn setup(self, n: usize, b: &DesignBounds) -> fdp::estimators::Result<MeanSetup> {
        MeanSetup::new(n, Epsilon::new(1.0)?, self.bound(b)?)
    }

    fn plug_in(self, basis: &MercerBasis, n: usize, b: &DesignBounds) -> AnyResult<f64> {
        let p = PlugIn::new(basis, &self.setup(n, b)?)?;
        Ok(match self {
            Self::IidLaplace => p.iid_components as f64,
            Self::IclpL1 => p.l1.psi(),
            Self::IclpRkhs => p.rkhs.psi(),
        })
    }

    fn candidates(self, basis: &MercerBasis, n: usize, b: &DesignBounds) -> AnyResult<Vec<f64>> {
        Ok(match self {
            Self::IidLaplace => {
                [2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0].into_iter().filter(|m| *m <= basis.len() as f64).collect()
            }
            _ => {
                let p = self.plug_in(basis, n, b)?;
                [1.0 / 16.0, 0.25, 1.0, 4.0, 16.0].iter().map(|f| f * p).collect()
            }
        })
    }

    fn build(
        self,
        basis: &MercerBasis,
        n: usize,
        b: &DesignBounds,
        param: f64,
        tuning: Tuning,
    ) -> fdp::estimators::Result<Box<dyn MeanMechanism>> {
        let setup = self.setup(n, b)?.tuned_by(tuning);
        let p = PlugIn::new(basis, &setup)?;
        Ok(match self {
            Self::IidLaplace => Box::new(BasisMean::iid_laplace(basis, setup, param as usize)?),
            Self::IclpL1 => Box::new(BasisMean::iclp_l1(basis, setup, Regularisation::new(p.l1.eta(), param)?)?),
            Self::IclpRkhs => Box::new(BasisMean::iclp_rkhs(basis, setup, Regularisation::new(p.rkhs.eta(), param)?)?),
        })
    }
}

#[derive(Serialize)]
struct Row {
    kernel: &'static str,
    scenario: &'static str,
    mechanism: &'static str,
    tuning: &'static str,
    n: usize,
    mse: Estimate,
}

fn main() -> AnyResult<()> {
    run(quick_flag())
}

/// "What holds, what does not, and why": the paper's reading of Figure 1 (PCV at least as good as the
/// plug-in rule, both errors falling with n) checked cell by cell at the largest n.
fn write_what_holds(md: &mut String, rows: &[Row]) -> std::fmt::Result {
    let largest = rows.iter().map(|r| r.n).max().unwrap_or(0);
    let smallest = rows.iter().map(|r| r.n).min().unwrap_or(0);
    let at = |r: &Row, tuning: &str, n: usize| {
        rows.iter()
            .find(|o| {
                o.kernel == r.kernel
                    && o.scenario == r.scenario
                    && o.mechanism == r.mechanism
                    && o.tuning == tuning
                    && o.n == n
            })
            .map(|o| o.mse)
    };
    let cells: Vec<&Row> = rows.iter().filter(|r| r.n == largest && r.tuning == "plug_in").collect();
    let (mut pcv_better, mut within_se, mut falling) = (0, 0, 0);
    for r in &cells {
        if let (Some(plug), Some(pcv)) = (at(r, "plug_in", largest), at(r, "pcv", largest)) {
            pcv_better += usize::from(pcv.mean < plug.mean);
            within_se += usize::from(pcv.mean <= plug.mean + 2.0 * (plug.se.powi(2) + pcv.se.powi(2)).sqrt());
        }
        if let (Some(first), Some(last)) = (at(r, "plug_in", smallest), at(r, "plug_in", largest)) {
            falling += usize::from(last.mean < first.mean);
        }
    }
    let total = cells.len();
    writeln!(
        md,
        "\n## What holds, what does not, and why (n = {largest})\n\n\
         - PCV is at least as accurate as the plug-in rule: lower mean error in {pcv_better} of {total} \
         (kernel, scenario, mechanism) cells, within two standard errors or lower in {within_se} of {total} — \
         the paper's reading **{}**. PCV may use the data (it is the paper's oracle-like benchmark), so it \
         should win; where it does not, the closed-form expected error it scores and the Monte Carlo error \
         measured here disagree by less than the noise between repetitions.\n\
         - The plug-in error falls from n = {smallest} to n = {largest} in {falling} of {total} cells — the \
         paper's rate results **{}** (the fitted slopes are in the tables above).",
        if within_se == total { "holds" } else { "holds only in part" },
        if falling == total { "hold" } else { "hold only in part" }
    )
}

pub fn run(quick: bool) -> AnyResult<()> {
    // Many draws for statistics, nothing published about a person: variable-time sampling, the
    // same draws as the padded samplers releases use, without the padding (docs/DESIGN.md 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let start = Instant::now();
    let dir = ReportDir::create(common::report_path("fig1_pcv_vs_plugin", quick))?;
    let (sizes, reps): (&[usize], usize) = if quick { (&[100, 300], 4) } else { (&[100, 300, 1000, 3000], 50) };
    let kernels: Vec<(&'static str, Stationary)> = if quick {
        vec![("matern32", Stationary::matern32(0.1)?)]
    } else {
        vec![("matern32", Stationary::matern32(0.1)?), ("matern52", Stationary::matern52(0.1)?)]
    };
    let families = [Family::IidLaplace, Family::IclpL1, Family::IclpRkhs];
    let mut noise = NoiseRng::seeded(11);
    let mut rows = Vec::new();
    let mut md = String::from("# Figure 1 (and appendix Figure 6) — plug-in against PCV tuning\n\n");
    writeln!(
        md,
        "ε = 1, ρ = 0.1, 100-point midpoint grid, {reps} replicates, 5-fold PCV over ψ ∈ plug-in × {{1/16, 1/4, 1, 4, 16}} (M ∈ {{2, 4, 6, 8, 12, 16, 24}} for IID Laplace), scored by validation error plus the closed-form expected noise. Design-fixed τ as in Figure 2.\n"
    )?;
    let progress =
        fdp::report::progress::steps((kernels.len() * Scenario::ALL.len() * sizes.len()) as u64, "fig1", false);
    for (kname, kernel) in &kernels {
        let grid = Grid::midpoint(0.0, 1.0, 100)?;
        let basis = MercerBasis::build(*kernel, grid, BasisOptions::default())?;
        writeln!(
            md,
            "## {kname}\n\n| scenario | mechanism | tuning | {} | slope |\n|---|---|---|{}---|",
            sizes.iter().map(|n| format!("n = {n}")).collect::<Vec<_>>().join(" | "),
            "---|".repeat(sizes.len())
        )?;
        for scenario in Scenario::ALL {
            let bounds = scenario.design_bounds(&basis)?;
            let mut curves: Vec<(String, Vec<Estimate>)> = Vec::new();
            for &n in sizes {
                progress.inc(1);
                let mut streams = noise.split(reps);
                // Per replicate: [plug-in, PCV] squared errors for each family.
                let per_rep: Vec<Vec<[f64; 2]>> = streams
                    .par_iter_mut()
                    .enumerate()
                    .map(|(r, rng)| -> AnyResult<Vec<[f64; 2]>> {
                        let sim = simulate(scenario, &basis, n, (n as u64) << 20 ^ r as u64 ^ 0xF16)?;
                        families
                            .iter()
                            .map(|&f| -> AnyResult<[f64; 2]> {
                                let plug =
                                    f.build(&basis, n, &bounds, f.plug_in(&basis, n, &bounds)?, Tuning::PlugIn)?;
                                let e_plug = sq_dist(
                                    basis.grid(),
                                    plug.release(&sim.curves, rng, Charge::unaccounted())?.curve(),
                                    &sim.truth,
                                );
                                let candidates: Vec<f64> = f
                                    .candidates(&basis, n, &bounds)?
                                    .into_iter()
                                    .filter(|c| {
                                        f.build(&basis, n - n / 5, &bounds, *c, Tuning::CrossValidated).is_ok()
                                            && f.build(&basis, n, &bounds, *c, Tuning::CrossValidated).is_ok()
                                    })
                                    .collect();
                                let choice = private_cross_validation(&sim.curves, 5, &candidates, |c, n_train| {
                                    f.build(&basis, n_train, &bounds, c, Tuning::CrossValidated)
                                })?;
                                let pcv = f.build(&basis, n, &bounds, choice.chosen, Tuning::CrossValidated)?;
                                let e_pcv = sq_dist(
                                    basis.grid(),
                                    pcv.release(&sim.curves, rng, Charge::unaccounted())?.curve(),
                                    &sim.truth,
                                );
                                Ok([e_plug, e_pcv])
                            })
                            .collect()
                    })
                    .collect::<AnyResult<Vec<_>>>()?;
                for (fi, f) in families.iter().enumerate() {
                    for (ti, tuning) in ["plug_in", "pcv"].into_iter().enumerate() {
                        let mse = estimate(&per_rep.iter().map(|v| v[fi][ti]).collect::<Vec<_>>());
                        println!(
                            "mse kernel={kname} scenario={} mechanism={} tuning={tuning} n={n} mse={:.5e} se={:.2e}",
                            scenario.label(),
                            f.name(),
                            mse.mean,
                            mse.se
                        );
                        rows.push(Row {
                            kernel: kname,
                            scenario: scenario.label(),
                            mechanism: f.name(),
                            tuning,
                            n,
                            mse,
                        });
                        let label = format!("{} ({tuning})", f.name());
                        match curves.iter_mut().find(|(k, _)| *k == label) {
                            Some((_, v)) => v.push(mse),
                            None => curves.push((label, vec![mse])),
                        }
                    }
                }
            }
            let ns: Vec<f64> = sizes.iter().map(|&n| n as f64).collect();
            let mut series = Vec::new();
            for (i, (label, values)) in curves.iter().enumerate() {
                let means: Vec<f64> = values.iter().map(|e| e.mean).collect();
                let slope = log_log_slope(&ns, &means);
                let (mech, tuning) = label.split_once(" (").unwrap_or((label.as_str(), ""));
                let cells: Vec<String> = values.iter().map(|e| format!("{:.2e} ± {:.0e}", e.mean, e.se)).collect();
                writeln!(
                    md,
                    "| {} | {mech} | {} | {} | {slope:.2} |",
                    scenario.label(),
                    tuning.trim_end_matches(')'),
                    cells.join(" | ")
                )?;
                series.push(ErrorSeries {
                    label: label.clone(),
                    n: ns.clone(),
                    error: means,
                    standard_error: values.iter().map(|e| e.se).collect(),
                    color: PALETTE[i % PALETTE.len()],
                });
            }
            let file = format!("fig1_{kname}_{}.svg", scenario.label());
            LogLogFigure {
                title: format!("{kname}, {}: plug-in vs PCV (ε = 1)", scenario.label()),
                x_label: "n".into(),
                y_label: "E||μ̃ − μ0||²".into(),
                series,
            }
            .write_svg(&dir.file(&file), 700, 460)?;
            writeln!(md, "\n![{kname} {}]({file})\n", scenario.label())?;
        }
    }
    writeln!(
        md,
        "The paper shows these as curves only; its values are not available to us, so none are quoted. PCV here scores the *expected* error of the private release in closed form instead of averaging Monte Carlo releases, and it uses the data: treat its curves as a benchmark for the plug-in rule, not as private releases."
    )?;
    write_what_holds(&mut md, &rows)?;
    let wall_s = finish_report(&dir, &mut md, &rows, start)?;
    println!("fig1 wall_s={wall_s:.2} reps={reps} report={}", dir.path().display());
    Ok(())
}
