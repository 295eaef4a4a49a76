//! Helpers shared by the reproduction examples (included with `#[path]`; not an example itself).

#![allow(dead_code)]

use fdp::data::{CurveSet, Dataset, DesignBounds, LoadedCurves, Scenario, simulate};
use fdp::estimators::{BasisMean, BernsteinMean, MeanMechanism, MeanSetup, PlugIn};
use fdp::functional::CurveReleaseExt;
use fdp::mercer::{Grid, MercerBasis};
use fdp::noise::NoiseRng;
use fdp::prelude::*;
use fdp::release::Charge;
use fdp::release::ClippingBound;
use fdp::report::ReportDir;
use rayon::prelude::*;
use serde::Serialize;

pub type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Where an example writes its report: `reports/NAME` for a full run; for `--quick` (what the tests
/// run) `$TMPDIR/fdp-reports/NAME_quick`, so that tests never write into the working tree.
pub fn report_path(name: &str, quick: bool) -> std::path::PathBuf {
    if quick {
        std::env::temp_dir().join("fdp-reports").join(format!("{name}_quick"))
    } else {
        std::path::Path::new("reports").join(name)
    }
}

/// `--quick` on the command line.
pub fn quick_flag() -> bool {
    std::env::args().any(|a| a == "--quick")
}

/// The value after `--name` on the command line.
pub fn flag_value(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

/// A dataset with its public scale and bounds, all fixed from what the measurement is, not from the
/// records: the unit the curves are expressed in, a reference curve to centre at, and the bounds.
pub struct PublicFrame {
    pub dataset: Dataset,
    pub label: &'static str,
    /// Values are divided by this (public unit change).
    pub unit: f64,
    /// The centre of the physically possible range (the reference curve is this constant).
    pub centre: f64,
    /// Half-width of the physically possible range around the centre.
    pub half_range: f64,
    pub why: &'static str,
}

pub const FRAMES: [PublicFrame; 2] = [
    PublicFrame {
        dataset: Dataset::AdelaideMonday,
        label: "adelaide",
        unit: 1000.0,
        centre: 1.75,
        half_range: 1.75,
        why: "demand in GW lies in [0, 3.5]: South Australia's grid has never drawn more than about 3.4 GW",
    },
    PublicFrame {
        dataset: Dataset::DtiCca,
        label: "dti_cca",
        unit: 1.0,
        centre: 0.5,
        half_range: 0.5,
        why: "fractional anisotropy lies in [0, 1] by definition",
    },
];

impl PublicFrame {
    /// The dataset on `[0, 1]` in the frame's unit (the loader's repair report alongside).
    pub fn load(&self, dir: &std::path::Path) -> AnyResult<(CurveSet<'static>, LoadedCurves)> {
        let loaded = self.dataset.load(dir)?;
        let raw = loaded.curves.rescaled(0.0, 1.0)?;
        let values: Vec<f64> = raw.values().iter().map(|v| v / self.unit).collect();
        let (curves, _) = CurveSet::from_flat(raw.grid().clone(), values, None)?;
        Ok((curves, loaded))
    }

    /// The public reference curve: the centre of the range, on `grid`.
    pub fn reference(&self, grid: &Grid) -> Vec<f64> {
        vec![self.centre; grid.len()]
    }

    /// On the unit interval a curve within `half_range` of the centre has sup and L2 norm at most
    /// `half_range`; the coefficient-l1 bound is a public choice of twice that (records beyond it
    /// are clipped).
    pub fn bounds(&self) -> DesignBounds {
        DesignBounds { coefficient_l1: 2.0 * self.half_range, l2: self.half_range, sup: self.half_range }
    }
}

/// A table transcribed from a paper (`../shared/papers/NAME.csv`, or `FDP_PAPERS_DIR/NAME.csv`):
/// one map from column name to value per row. `None` (reports then say so) where it is missing.
pub fn paper_table(name: &str) -> Option<Vec<std::collections::HashMap<String, String>>> {
    let dir = std::env::var_os("FDP_PAPERS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| fdp::data::data_dir(None).join("../papers"));
    let mut reader = csv::Reader::from_path(dir.join(format!("{name}.csv"))).ok()?;
    let header: Vec<String> = reader.headers().ok()?.iter().map(str::to_string).collect();
    let rows = reader
        .records()
        .filter_map(Result::ok)
        .map(|r| header.iter().cloned().zip(r.iter().map(str::to_string)).collect())
        .collect();
    Some(rows)
}

/// The numeric column `value` of the first row of `table` whose columns equal `keys`.
pub fn paper_value(
    table: &[std::collections::HashMap<String, String>],
    keys: &[(&str, &str)],
    value: &str,
) -> Option<f64> {
    let same = |a: &str, b: &str| a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y);
    table
        .iter()
        .find(|row| keys.iter().all(|(k, v)| row.get(*k).is_some_and(|x| same(x, v))))
        .and_then(|row| row.get(value)?.parse().ok())
}

/// Mean and standard error.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Estimate {
    pub mean: f64,
    pub se: f64,
}

pub fn estimate(values: &[f64]) -> Estimate {
    let m = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / m;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (m - 1.0).max(1.0);
    Estimate { mean, se: (var / m).sqrt() }
}

/// Least-squares slope of `ln y` on `ln x`.
pub fn log_log_slope(x: &[f64], y: &[f64]) -> f64 {
    let lx: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let ly: Vec<f64> = y.iter().map(|v| v.ln()).collect();
    let k = lx.len() as f64;
    let (mx, my) = (lx.iter().sum::<f64>() / k, ly.iter().sum::<f64>() / k);
    lx.iter().zip(&ly).map(|(a, b)| (a - mx) * (b - my)).sum::<f64>() / lx.iter().map(|a| (a - mx).powi(2)).sum::<f64>()
}

/// `||a - b||²` in the grid's L2 geometry.
pub fn sq_dist(grid: &Grid, a: &[f64], b: &[f64]) -> f64 {
    grid.sq_distance(a, b).unwrap_or(f64::NAN)
}

/// The four mean mechanisms of the paper with plug-in tuning and design-fixed bounds:
/// IID Laplace (M = ⌊n^{1/3}⌋, L2 bound), Bernstein (k = 20, sup bound), ICLP-l1 and ICLP-RKHS.
pub fn plug_in_mechanisms(
    basis: &MercerBasis,
    n: usize,
    epsilon: f64,
    bounds: &DesignBounds,
) -> AnyResult<Vec<(&'static str, Box<dyn MeanMechanism>)>> {
    centred_plug_in_mechanisms(basis, n, epsilon, bounds, None)
}

/// As [`plug_in_mechanisms`], with records centred at a public reference curve before clipping.
pub fn centred_plug_in_mechanisms(
    basis: &MercerBasis,
    n: usize,
    epsilon: f64,
    bounds: &DesignBounds,
    reference: Option<&[f64]>,
) -> AnyResult<Vec<(&'static str, Box<dyn MeanMechanism>)>> {
    let setup = |bound: ClippingBound| -> AnyResult<MeanSetup> {
        let s = MeanSetup::new(n, Epsilon::new(epsilon)?, bound)?;
        Ok(match reference {
            Some(r) => s.centred_at(r.to_vec())?,
            None => s,
        })
    };
    let (l1, l2, sup) = (
        setup(ClippingBound::coefficient_l1(bounds.coefficient_l1)?)?,
        setup(ClippingBound::l2(bounds.l2)?)?,
        setup(ClippingBound::sup(bounds.sup)?)?,
    );
    let (p, p2) = (PlugIn::new(basis, &l1)?, PlugIn::new(basis, &l2)?);
    Ok(vec![
        ("iid_laplace", Box::new(BasisMean::iid_laplace(basis, l2.clone(), p2.iid_components)?)),
        ("bernstein", Box::new(BernsteinMean::new(basis.grid(), sup, 20)?)),
        ("iclp_l1", Box::new(BasisMean::iclp_l1(basis, l2, p2.l1)?)),
        ("iclp_rkhs", Box::new(BasisMean::iclp_rkhs(basis, l1, p.rkhs)?)),
    ])
}

/// `||μ̃ - μ0||²` over `reps` replicates, each with fresh data (seeded by scenario, n and replicate)
/// and one release from its own child noise stream, in parallel.
pub fn simulated_mse(
    m: &dyn MeanMechanism,
    basis: &MercerBasis,
    scenario: Scenario,
    n: usize,
    reps: usize,
    noise: &mut NoiseRng,
) -> AnyResult<Estimate> {
    let mut streams = noise.split(reps);
    let values: Vec<f64> = streams
        .par_iter_mut()
        .enumerate()
        .map(|(r, rng)| -> AnyResult<f64> {
            let seed = (scenario as u64) << 48 ^ (n as u64) << 16 ^ r as u64;
            let sim = simulate(scenario, basis, n, seed)?;
            let release = m.release(&sim.curves, rng, Charge::unaccounted())?;
            Ok(sq_dist(basis.grid(), release.curve(), &sim.truth))
        })
        .collect::<AnyResult<Vec<f64>>>()?;
    Ok(estimate(&values))
}

/// Ends a report: appends the wall time since `start` to `md`, writes `report.md` and
/// `results.json` into `dir`, and returns the wall time in seconds for the example's record.
pub fn finish_report(
    dir: &ReportDir,
    md: &mut String,
    results: &impl Serialize,
    start: std::time::Instant,
) -> AnyResult<f64> {
    let wall_s = start.elapsed().as_secs_f64();
    md.push_str(&format!("\nWall time: {wall_s:.1} s.\n"));
    dir.write_text("report.md", md)?;
    dir.write_json("results.json", results)?;
    Ok(wall_s)
}
