//! The ICLP paper's simulation (Lin & Reimherr 2023, Section 5): curves
//! `X_i(t) = μ0(t) + Σ_{j=1}^{100} j^{-2} U_ij φ_j(t)`, `U_ij ~ U[-2, 2]`, with φ_j the eigenfunctions
//! of the basis kernel (the ICLP kernel, Matérn 3/2 with ρ = 0.1 in the paper), and four mean curves.
//!
//! The authors' script draws `sqrt(λ_j) U_ij` with `U ~ U[-4, 4]` (and S-4's coefficients from
//! U[-0.5, 0.5]); we follow the paper's text, which the issue restates.

use faer::Mat;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use fdp_mercer::MercerBasis;

use crate::curves::CurveSet;
use crate::error::{DataError, Result};

/// The four mean curves (`f_{a,b}` is the N(a, b²) density).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scenario {
    /// `μ0(t) = 10 t e^{-t}`.
    S1,
    /// `μ0 = 0.3 f_{0.3,0.05} + 0.7 f_{0.8,0.05}`.
    S2,
    /// `μ0 = 0.2 (f_{0,0.03} + f_{0.2,0.05} + f_{0.5,0.05} - f_{0.75,0.03} + f_{1,0.03})`.
    S3,
    /// `μ0 = Σ_{j=1}^{25} a_j φ_j`, `a_j ~ U[-1, 1]` drawn once from a fixed seed (the same truth for
    /// every n and every replicate).
    S4,
}

/// The seed of S-4's mean-curve coefficients (the authors' `set.seed(2021)`).
pub const S4_MEAN_SEED: u64 = 2021;

fn normal_density(t: f64, mean: f64, sd: f64) -> f64 {
    (-0.5 * ((t - mean) / sd).powi(2)).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt())
}

impl Scenario {
    /// All four, in order.
    pub const ALL: [Scenario; 4] = [Self::S1, Self::S2, Self::S3, Self::S4];

    /// `S-1` .. `S-4`.
    pub fn label(self) -> &'static str {
        match self {
            Self::S1 => "S-1",
            Self::S2 => "S-2",
            Self::S3 => "S-3",
            Self::S4 => "S-4",
        }
    }

    /// The true mean curve on the basis grid.
    pub fn mean_curve(self, basis: &MercerBasis) -> Vec<f64> {
        let t = basis.grid().points();
        let f = normal_density;
        match self {
            Self::S1 => t.iter().map(|&t| 10.0 * t * (-t).exp()).collect(),
            Self::S2 => t.iter().map(|&t| 0.3 * f(t, 0.3, 0.05) + 0.7 * f(t, 0.8, 0.05)).collect(),
            Self::S3 => t
                .iter()
                .map(|&t| {
                    0.2 * (f(t, 0.0, 0.03) + f(t, 0.2, 0.05) + f(t, 0.5, 0.05) - f(t, 0.75, 0.03) + f(t, 1.0, 0.03))
                })
                .collect(),
            Self::S4 => {
                let mut rng = StdRng::seed_from_u64(S4_MEAN_SEED);
                let phi = basis.eigenfunctions();
                let mut mean = vec![0.0; t.len()];
                for j in 0..25.min(basis.len()) {
                    let a: f64 = rng.random_range(-1.0..=1.0);
                    mean.iter_mut().zip(phi.col(j).iter()).for_each(|(m, p)| *m += a * p);
                }
                mean
            }
        }
    }
}

/// Norm bounds implied by the simulation design: no curve the model can produce exceeds them.
/// They come from the model (μ0 and `|U| <= 2`), never from a sample, so they are valid
/// pre-specified clipping bounds τ for experiments.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DesignBounds {
    /// `Σ_k |X_k|` over the basis coefficients: `Σ_k |μ0_k| + 2 Σ_{j<=100} j^{-2}`.
    pub coefficient_l1: f64,
    /// `||X||_{L2}` of the projected curve: `||P μ0||_2 + 2 (Σ_{j<=100} j^{-4})^{1/2}`.
    pub l2: f64,
    /// `max_t |X(t)|` on the grid: `max_t (|μ0(t)| + 2 Σ_j j^{-2} |φ_j(t)|)`.
    pub sup: f64,
}

impl Scenario {
    /// The design bounds of this scenario on `basis`.
    pub fn design_bounds(self, basis: &MercerBasis) -> Result<DesignBounds> {
        let mean = self.mean_curve(basis);
        let coef = basis.project(&mean)?;
        let terms = 100.min(basis.len());
        let w = |j: usize| 2.0 * ((j + 1) as f64).powi(-2);
        let phi = basis.eigenfunctions();
        let sup = (0..mean.len())
            .map(|i| mean[i].abs() + (0..terms).map(|j| w(j) * phi[(i, j)].abs()).sum::<f64>())
            .fold(0.0, f64::max);
        Ok(DesignBounds {
            coefficient_l1: coef.iter().map(|c| c.abs()).sum::<f64>() + (0..terms).map(w).sum::<f64>(),
            l2: coef.iter().map(|c| c * c).sum::<f64>().sqrt() + (0..terms).map(|j| w(j).powi(2)).sum::<f64>().sqrt(),
            sup,
        })
    }
}

/// A simulated sample and its truth.
#[derive(Debug, Clone)]
pub struct Simulation {
    pub curves: CurveSet<'static>,
    /// μ0 on the grid.
    pub truth: Vec<f64>,
}

/// Draws n curves of `scenario` on the basis grid from `seed` (reproducible).
pub fn simulate(scenario: Scenario, basis: &MercerBasis, n: usize, seed: u64) -> Result<Simulation> {
    if n == 0 {
        return Err(DataError::BadParameter { name: "n", value: 0.0, reason: "need at least one curve" });
    }
    let terms = 100.min(basis.len());
    let mut rng = StdRng::seed_from_u64(seed);
    let truth = scenario.mean_curve(basis);
    let phi_t = basis.eigenfunctions().subcols(0, terms).transpose();
    let k = truth.len();
    // Row blocks keep the working memory at one block of scores and paths beside the data.
    const BLOCK: usize = 4096;
    let mut values = vec![0.0; n * k];
    for block in values.chunks_mut(BLOCK * k) {
        let rows = block.len() / k;
        let scores = Mat::from_fn(rows, terms, |_, j| ((j + 1) as f64).powi(-2) * rng.random_range(-2.0..=2.0));
        let paths = scores * phi_t;
        for (i, row) in block.chunks_mut(k).enumerate() {
            row.iter_mut().enumerate().for_each(|(t, v)| *v = truth[t] + paths[(i, t)]);
        }
    }
    let (curves, _) = CurveSet::from_flat(basis.grid().clone(), values, None)?;
    Ok(Simulation { curves, truth })
}

/// `n` curves of scenario S-2 of the ICLP paper on a 100-point midpoint grid of [0, 1] (Matérn 3/2,
/// ρ = 0.1), reproducible from `seed`: the embedded default data of the README and the quickstart.
pub fn example_curves(n: usize, seed: u64) -> Result<CurveSet<'static>> {
    let grid = fdp_mercer::Grid::midpoint(0.0, 1.0, 100)?;
    let basis = MercerBasis::build(fdp_mercer::Stationary::matern32(0.1)?, grid, fdp_mercer::BasisOptions::default())?;
    Ok(simulate(Scenario::S2, &basis, n, seed)?.curves)
}
