//! Figure 2 of the ICLP paper: MSE against n for IID Laplace, Bernstein, ICLP-l1 and ICLP-RKHS on the
//! simulation scenarios S-1 to S-4 (ε = 1, Matérn 3/2 with ρ = 0.1, 100 replicates, log-log).
//!
//! `cargo run --release --example fig2_mechanisms [-- --quick]` writes `reports/fig2_mechanisms/`.

#[path = "../common/mod.rs"]
mod common;

use std::fmt::Write as _;
use std::time::Instant;

use common::{AnyResult, Estimate, finish_report, log_log_slope, plug_in_mechanisms, quick_flag, simulated_mse};
use fdp::data::Scenario;
use fdp::mercer::{BasisOptions, Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::report::{ErrorSeries, LogLogFigure, PALETTE, ReportDir};
use serde::Serialize;

#[derive(Serialize)]
struct Row {
    scenario: &'static str,
    mechanism: &'static str,
    n: usize,
    mse: Estimate,
}

fn main() -> AnyResult<()> {
    run(quick_flag())
}

pub fn run(quick: bool) -> AnyResult<()> {
    // Many draws for statistics, nothing published about a person: variable-time sampling, the
    // same draws as the padded samplers releases use, without the padding (docs/DESIGN.md 15.5).
    fdp::noise::timing::allow_variable_time_for_simulation();
    let start = Instant::now();
    let dir = ReportDir::create(common::report_path("fig2_mechanisms", quick))?;
    let (sizes, reps): (&[usize], usize) = if quick { (&[100, 1000], 10) } else { (&[100, 300, 1000, 3000], 100) };
    let grid = Grid::midpoint(0.0, 1.0, 100)?;
    let basis = MercerBasis::build(Stationary::matern32(0.1)?, grid, BasisOptions::default())?;
    let mut noise = NoiseRng::seeded(2);
    let mut rows = Vec::new();
    let mut md = String::from("# Figure 2 — MSE of the four mechanisms against n\n\n");
    writeln!(
        md,
        "ε = 1, Matérn 3/2 (ρ = 0.1) on a 100-point midpoint grid of [0, 1], {reps} replicates (fresh data and a fresh release each), plug-in tuning, clipping bounds from each scenario's design (never from the sample): coefficient-l1 τ for ICLP-RKHS, L2 τ for IID Laplace and ICLP-l1, sup τ for Bernstein (k = 20).\n"
    )?;
    writeln!(
        md,
        "| scenario | τ (l1 / L2 / sup) | mechanism | {} | slope |",
        sizes.iter().map(|n| format!("n = {n}")).collect::<Vec<_>>().join(" | ")
    )?;
    writeln!(md, "|---|---|---|{}---|", "---|".repeat(sizes.len()))?;
    let progress = fdp::report::progress::steps((Scenario::ALL.len() * sizes.len()) as u64, "fig2", false);
    let mut bests: Vec<(&'static str, &'static str, f64)> = Vec::new();
    for scenario in Scenario::ALL {
        let bounds = scenario.design_bounds(&basis)?;
        let mut per_mechanism: Vec<(&'static str, Vec<Estimate>)> = Vec::new();
        for &n in sizes {
            progress.inc(1);
            for (name, m) in plug_in_mechanisms(&basis, n, 1.0, &bounds)? {
                let mse = simulated_mse(m.as_ref(), &basis, scenario, n, reps, &mut noise)?;
                println!(
                    "mse scenario={} mechanism={name} n={n} mse={:.5e} se={:.2e}",
                    scenario.label(),
                    mse.mean,
                    mse.se
                );
                rows.push(Row { scenario: scenario.label(), mechanism: name, n, mse });
                match per_mechanism.iter_mut().find(|(k, _)| *k == name) {
                    Some((_, v)) => v.push(mse),
                    None => per_mechanism.push((name, vec![mse])),
                }
            }
        }
        let ns: Vec<f64> = sizes.iter().map(|&n| n as f64).collect();
        let mut series = Vec::new();
        for (i, (name, values)) in per_mechanism.iter().enumerate() {
            let slope = log_log_slope(&ns, &values.iter().map(|e| e.mean).collect::<Vec<_>>());
            println!("slope scenario={} mechanism={name} slope={slope:.3}", scenario.label());
            let cells: Vec<String> = values.iter().map(|e| format!("{:.2e} ± {:.0e}", e.mean, e.se)).collect();
            writeln!(
                md,
                "| {} | {:.2} / {:.2} / {:.2} | {name} | {} | {slope:.2} |",
                scenario.label(),
                bounds.coefficient_l1,
                bounds.l2,
                bounds.sup,
                cells.join(" | ")
            )?;
            series.push(ErrorSeries {
                label: name.to_string(),
                n: ns.clone(),
                error: values.iter().map(|e| e.mean).collect(),
                standard_error: values.iter().map(|e| e.se).collect(),
                color: PALETTE[i],
            });
        }
        let best = per_mechanism
            .iter()
            .min_by(|a, b| {
                a.1.last().map_or(f64::INFINITY, |e| e.mean).total_cmp(&b.1.last().map_or(f64::INFINITY, |e| e.mean))
            })
            .map_or("none", |(k, _)| *k);
        println!("best scenario={} n={} mechanism={best}", scenario.label(), sizes[sizes.len() - 1]);
        let last = |name: &str| {
            per_mechanism.iter().find(|(k, _)| *k == name).and_then(|(_, v)| v.last()).map_or(f64::NAN, |e| e.mean)
        };
        bests.push((scenario.label(), best, last("iclp_rkhs") / last(best)));
        LogLogFigure {
            title: format!("{}: MSE against n (ε = 1)", scenario.label()),
            x_label: "n".into(),
            y_label: "E||μ̃ − μ0||²".into(),
            series,
        }
        .write_svg(&dir.file(&format!("fig2_{}.svg", scenario.label())), 640, 440)?;
    }
    writeln!(md, "\n![S-1](fig2_S-1.svg) ![S-2](fig2_S-2.svg)\n\n![S-3](fig2_S-3.svg) ![S-4](fig2_S-4.svg)\n")?;
    writeln!(
        md,
        "## Beside the paper\n\nThe paper's Figure 2 gives curves, not numbers, and its exact values are not available to us, so none are quoted. Where our ranking differs from the paper's (ICLP-RKHS lowest everywhere), three of the paper's choices explain it: (1) its IID-Laplace baseline is calibrated to 2τM/n instead of 2τ√M/n, i.e. M times the noise variance we use; (2) its ICLP noise is the unit-variance process times Δ/ε, √2 too small in scale (half the variance); (3) its τ is the largest norm in the sample, far below the design bound a data-independent τ must respect. With those corrected, IID Laplace with M = ⌊n^(1/3)⌋ components is a strong baseline for the very smooth S-1, and for S-4, whose mean puts mass on 25 eigenfunctions, the RKHS shrinkage is the limiting bias."
    )?;
    writeln!(md, "\n## What holds, what does not, and why (largest n)\n")?;
    for (label, best, ratio) in &bests {
        writeln!(
            md,
            "- {label}: best {best}; ICLP-RKHS is {} ({ratio:.2}x the best).",
            if *best == "iclp_rkhs" { "the best" } else { "not the best" }
        )?;
    }
    let wins = bests.iter().filter(|b| b.1 == "iclp_rkhs").count();
    writeln!(
        md,
        "\nThe paper's claim — ICLP-RKHS lowest in every scenario — holds in {wins} of {} scenarios with honest calibration and design-fixed bounds; table2_real_data's ablation shows which of the paper's choices (chiefly the IID-Laplace scale) produced it.",
        bests.len()
    )?;
    let wall_s = finish_report(&dir, &mut md, &rows, start)?;
    println!("fig2 wall_s={wall_s:.2} reps={reps} report={}", dir.path().display());
    Ok(())
}
