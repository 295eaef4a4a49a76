//! The numerics of the functional layer: tensor Bernstein polynomials (computed in log space, so
//! that no degree overflows), the Bernstein mechanisms' domain check, and linear interpolation of
//! grid values.

use fdp_core::{Error, Result};
use fdp_mercer::Grid;

/// The tensor Bernstein polynomial of `values` on the `(degree + 1)^d` lattice of `domain`, at `point`.
pub fn bernstein_value(values: &[f64], degree: usize, domain: &[(f64, f64)], point: &[f64]) -> f64 {
    let weights: Vec<Vec<f64>> =
        domain.iter().zip(point).map(|((lo, hi), t)| bernstein_weights(degree, (t - lo) / (hi - lo))).collect();
    values
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let mut rest = index;
            let mut w = 1.0;
            for axis in weights.iter().rev() {
                w *= axis[rest % (degree + 1)];
                rest /= degree + 1;
            }
            w * v
        })
        .sum()
}

/// Bernstein basis polynomial values `C(k, j) u^j (1 - u)^{k - j}` for j = 0..=k, in log space
/// (`ln C(k, j)` accumulated as `Σ ln((k - i)/(i + 1))`), so that no degree overflows: the direct
/// product overflows `C(k, j)` from k ≈ 1030 and released an all-NaN curve.
pub fn bernstein_weights(k: usize, u: f64) -> Vec<f64> {
    let u = u.clamp(0.0, 1.0);
    let mut out = vec![0.0; k + 1];
    if u == 0.0 || u == 1.0 {
        out[if u == 0.0 { 0 } else { k }] = 1.0;
        return out;
    }
    let (ln_u, ln_v) = (u.ln(), (-u).ln_1p());
    let mut ln_binom = 0.0;
    for (j, o) in out.iter_mut().enumerate() {
        *o = (ln_binom + j as f64 * ln_u + (k - j) as f64 * ln_v).exp();
        ln_binom += ((k - j) as f64 / (j + 1) as f64).ln();
    }
    out
}

/// **`Σ_j B_j(t_i)²` at each point of `grid`** for the tensor Bernstein weights of `degree` on
/// `domain`, `B_j(t) = Π_a b_{j_a}(u_a)`: the sum over the `(degree + 1)^d` lattice factorises by
/// axis, `Π_a Σ_i b_i(u_a)²` (O(K d k) operations, not O(K (k + 1)^d)). With independent noise of
/// variance σ² on each lattice value, `σ² Σ_j B_j(t)²` is the release's noise variance at t: the
/// pointwise band ([`bernstein_laplace_noise_sd`]) and, weighted by the grid, the expected squared
/// error (the Bernstein mechanisms' previews).
pub fn bernstein_squared_weights(grid: &Grid, degree: usize, domain: &[(f64, f64)]) -> Vec<f64> {
    (0..grid.len())
        .map(|i| {
            domain
                .iter()
                .zip(grid.point(i))
                .map(|((lo, hi), t)| bernstein_weights(degree, (t - lo) / (hi - lo)).iter().map(|b| b * b).sum::<f64>())
                .product()
        })
        .collect()
}

/// **The pointwise standard deviation of a Bernstein release's noise** on `grid` when each lattice
/// value carries Laplace noise of scale `scale`: `√2 scale (Σ_j B_j(t)²)^{1/2}`
/// ([`bernstein_squared_weights`]), if every sd is finite (`√2 · scale` overflows for a scale near
/// `f64::MAX`: then no band, rather than a release that fails after its charge). A function of the
/// noise scale and the public grid: post-processing.
pub fn bernstein_laplace_noise_sd(grid: &Grid, degree: usize, domain: &[(f64, f64)], scale: f64) -> Option<Vec<f64>> {
    let sd: Vec<f64> = bernstein_squared_weights(grid, degree, domain)
        .iter()
        .map(|sq| std::f64::consts::SQRT_2 * scale * sq.sqrt())
        .collect();
    sd.iter().all(|s| s.is_finite()).then_some(sd)
}

/// Bernstein mechanisms map the domain onto `[0, 1]`: it must have a positive, finite width.
pub fn check_bernstein_domain(grid: &Grid) -> Result<()> {
    match grid.domain().iter().find(|(lo, hi)| !(hi > lo && (hi - lo).is_finite())) {
        None => Ok(()),
        Some((lo, hi)) => Err(Error::BadParameter {
            name: "grid domain",
            value: (*lo, *hi).into(),
            reason: "the Bernstein mechanism needs a domain of positive width on every axis (a one-point grid has none)",
        }),
    }
}

/// Linear interpolation of grid values at `t` (constant beyond the ends).
pub fn interpolate(points: &[f64], values: &[f64], t: f64) -> f64 {
    let k = points.len();
    if t <= points[0] || k == 1 {
        return values[0];
    }
    if t >= points[k - 1] {
        return values[k - 1];
    }
    let i = points.partition_point(|p| *p <= t) - 1;
    let s = (t - points[i]) / (points[i + 1] - points[i]);
    values[i] + s * (values[i + 1] - values[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_bernstein_reproduces_lattice_corners_and_constants() {
        let domain = [(0.0, 1.0), (-1.0, 1.0)];
        let values: Vec<f64> = (0..9).map(|i| i as f64).collect();
        assert_eq!(bernstein_value(&values, 2, &domain, &[0.0, -1.0]), 0.0);
        assert_eq!(bernstein_value(&values, 2, &domain, &[0.0, 1.0]), 2.0);
        assert_eq!(bernstein_value(&values, 2, &domain, &[1.0, -1.0]), 6.0);
        assert!((bernstein_value(&[3.0; 9], 2, &domain, &[0.3, 0.2]) - 3.0).abs() < 1e-14);
    }

    #[test]
    fn the_bernstein_noise_sd_is_the_lattice_sum_of_squared_weights() {
        // Brute force over the 3 x 3 lattice of a 2-D degree-2 polynomial: sd(t)² = sd² Σ_j B_j(t)²
        // (sd = 3 on each lattice value: Laplace scale 3/√2).
        let x = Grid::trapezoid_points(vec![0.0, 0.25, 1.0]).unwrap();
        let y = Grid::trapezoid_points(vec![-1.0, 0.5]).unwrap();
        let grid = Grid::tensor(&x, &y).unwrap();
        let domain = grid.domain().to_vec();
        let sd = bernstein_laplace_noise_sd(&grid, 2, &domain, 3.0 / std::f64::consts::SQRT_2).unwrap();
        for (i, got) in sd.iter().enumerate() {
            let variance: f64 = (0..9)
                .map(|j| {
                    let mut unit = vec![0.0; 9];
                    unit[j] = 1.0;
                    bernstein_value(&unit, 2, &domain, grid.point(i)).powi(2)
                })
                .sum();
            assert!((got - 3.0 * variance.sqrt()).abs() < 1e-12, "point {i}: {got}");
        }
        // At a corner one lattice value is the release: the sd is the value's own.
        assert!((sd[0] - 3.0).abs() < 1e-12);
    }

    #[test]
    fn bernstein_weights_partition_unity_and_interpolation_is_linear() {
        let w = bernstein_weights(7, 0.3);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert_eq!(bernstein_weights(3, 0.0), vec![1.0, 0.0, 0.0, 0.0]);
        assert_eq!(bernstein_weights(3, 1.0), vec![0.0, 0.0, 0.0, 1.0]);
        for k in [1, 10, 1100, 5000] {
            let w = bernstein_weights(k, 0.37);
            assert!(w.iter().all(|v| v.is_finite() && *v >= 0.0), "k = {k}");
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-9, "k = {k}");
        }
        let direct = [0.3f64.powi(2), 2.0 * 0.3 * 0.7, 0.7f64.powi(2)];
        bernstein_weights(2, 0.7).iter().zip(direct).for_each(|(a, b)| assert!((a - b).abs() < 1e-15));
        let p = [0.0, 1.0, 3.0];
        let v = [0.0, 2.0, 6.0];
        assert_eq!(interpolate(&p, &v, 2.0), 4.0);
        assert_eq!(interpolate(&p, &v, -1.0), 0.0);
        assert_eq!(interpolate(&p, &v, 9.0), 6.0);
    }
}
