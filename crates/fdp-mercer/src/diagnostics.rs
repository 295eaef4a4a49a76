//! Accuracy checks of a basis: orthonormality, reconstruction, and the distance to the closed-form
//! Brownian eigenpairs. Used by the tests and the `mercer_accuracy` example, and available to users who
//! want to check a basis on their own grid.

use crate::basis::{MercerBasis, brownian_eigenfunction, brownian_eigenvalue};

/// `max_{k,l} |<φ_k, φ_l> - δ_kl|` in the grid's weighted inner product.
pub fn orthonormality_error(basis: &MercerBasis) -> f64 {
    let gram = basis.eigenfunctions().transpose() * basis.weighted_eigenfunctions();
    let j = basis.len();
    let mut worst = 0.0_f64;
    for r in 0..j {
        for c in 0..j {
            let target = if r == c { 1.0 } else { 0.0 };
            worst = worst.max((gram[(r, c)] - target).abs());
        }
    }
    worst
}

/// Errors of the first `count` eigenpairs of a basis of the Brownian kernel `σ² min(s, t)` on
/// `[0, length]`, against the closed forms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BrownianErrors {
    /// `max_j |λ_j - λ_j^*| / λ_j^*`.
    pub eigenvalue_rel: f64,
    /// `max_j ||φ_j - s_j φ_j^*||_{L2}` with the sign `s_j = ±1` that aligns them.
    pub eigenfunction_l2: f64,
}

/// Compares the first `count` eigenpairs of `basis` with `λ_j = σ² T²/((j-1/2)²π²)` and
/// `φ_j(t) = sqrt(2/T) sin((j-1/2)πt/T)`.
pub fn brownian_errors(basis: &MercerBasis, variance: f64, length: f64, count: usize) -> BrownianErrors {
    let grid = basis.grid();
    let phi = basis.eigenfunctions();
    let count = count.min(basis.len());
    let mut out = BrownianErrors { eigenvalue_rel: 0.0, eigenfunction_l2: 0.0 };
    for j in 1..=count {
        let exact = brownian_eigenvalue(variance, length, j);
        out.eigenvalue_rel = out.eigenvalue_rel.max((basis.eigenvalues()[j - 1] - exact).abs() / exact);
        let reference: Vec<f64> = grid.points().iter().map(|&t| brownian_eigenfunction(length, j, t)).collect();
        let col: Vec<f64> = phi.col(j - 1).iter().copied().collect();
        let sign = if grid.inner(&col, &reference).unwrap_or(0.0) < 0.0 { -1.0 } else { 1.0 };
        let diff: Vec<f64> = col.iter().zip(&reference).map(|(a, b)| a - sign * b).collect();
        out.eigenfunction_l2 = out.eigenfunction_l2.max(grid.norm_l2(&diff).unwrap_or(f64::INFINITY));
    }
    out
}
