//! RKHS geometry of weighted point sets: `<μ_P, μ_Q>_H = Σ_i Σ_j p_i q_j k(x_i, y_j)`.
//!
//! Kernel sums are computed in blocks of rows in parallel (rayon) and in a single pass with no
//! N x M matrix: N = 10^5 against itself is 10^10 kernel evaluations and stays within memory.

use rayon::prelude::*;

use fdp_mercer::Kernel;

use crate::error::{KmeError, Result};
use crate::points::WeightedPoints;

/// `Σ_i Σ_j a_i b_j k(x_i, y_j)`.
pub fn kernel_sum<K: Kernel + ?Sized>(kernel: &K, a: &WeightedPoints, b: &WeightedPoints) -> Result<f64> {
    if a.points.dim() != b.points.dim() {
        return Err(KmeError::Shape { what: "dimension", expected: a.points.dim(), got: b.points.dim() });
    }
    const BLOCK: usize = 256;
    // The self term of a measure is symmetric: sum the pairs j > i once and double them.
    let symmetric = std::ptr::eq(a, b);
    let rows: Vec<usize> = (0..a.points.len()).collect();
    // Block totals are collected, then added in block order: the same sum on any thread count.
    let totals: Vec<f64> = rows
        .par_chunks(BLOCK)
        .map(|block| {
            let mut total = 0.0;
            for &i in block {
                let x = a.points.point(i);
                let first = if symmetric { i + 1 } else { 0 };
                let inner: f64 =
                    (first..b.points.len()).map(|j| b.weights[j] * kernel.eval(x, b.points.point(j))).sum();
                total += a.weights[i] * if symmetric { 2.0 * inner + a.weights[i] * kernel.eval(x, x) } else { inner };
            }
            total
        })
        .collect();
    Ok(totals.iter().sum())
}

/// `||μ_P - μ_Q||²_H = <P,P> - 2 <P,Q> + <Q,Q>`; pass a precomputed `<Q,Q>` (e.g. the data's own
/// term, the expensive one) to skip it.
pub fn rkhs_distance_sq<K: Kernel + ?Sized>(
    kernel: &K,
    p: &WeightedPoints,
    q: &WeightedPoints,
    qq: Option<f64>,
) -> Result<f64> {
    let qq = match qq {
        Some(v) => v,
        None => kernel_sum(kernel, q, q)?,
    };
    Ok((kernel_sum(kernel, p, p)? - 2.0 * kernel_sum(kernel, p, q)? + qq).max(0.0))
}

/// The (biased, V-statistic) maximum mean discrepancy between two samples.
pub fn mmd<K: Kernel + ?Sized>(kernel: &K, x: &WeightedPoints, y: &WeightedPoints) -> Result<f64> {
    rkhs_distance_sq(kernel, x, y, None).map(f64::sqrt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::points::PointSet;
    use fdp_mercer::Stationary;

    #[test]
    fn distances_match_direct_sums_and_vanish_on_equal_measures() {
        let k = Stationary::gaussian(0.7).unwrap();
        let x = PointSet::new(2, vec![0.0, 0.0, 1.0, 0.5, -0.3, 2.0]).unwrap();
        let y = PointSet::new(2, vec![0.2, 0.1, 1.5, -1.0]).unwrap();
        let (px, py) = (WeightedPoints::uniform(x.clone()), WeightedPoints::uniform(y.clone()));
        let mut direct = 0.0;
        for i in 0..3 {
            for j in 0..2 {
                direct += k.eval(x.point(i), y.point(j)) / 6.0;
            }
        }
        assert!((kernel_sum(&k, &px, &py).unwrap() - direct).abs() < 1e-15);
        // The symmetric shortcut for a measure against itself agrees with the full double sum.
        let copy = px.clone();
        assert!((kernel_sum(&k, &px, &px).unwrap() - kernel_sum(&k, &px, &copy).unwrap()).abs() < 1e-14);
        assert!(rkhs_distance_sq(&k, &px, &px.clone(), None).unwrap() < 1e-15);
        // Merging duplicate points into one weight leaves the embedding unchanged.
        let dup = WeightedPoints::new(PointSet::new(2, vec![1.0, 1.0, 1.0, 1.0]).unwrap(), vec![0.5, 0.5]).unwrap();
        let single = WeightedPoints::new(PointSet::new(2, vec![1.0, 1.0]).unwrap(), vec![1.0]).unwrap();
        assert!(rkhs_distance_sq(&k, &dup, &single, None).unwrap() < 1e-15);
        assert!(mmd(&k, &px, &py).unwrap() > 0.0);
        let z = WeightedPoints::uniform(PointSet::new(3, vec![0.0; 3]).unwrap());
        assert!(kernel_sum(&k, &px, &z).is_err());
    }
}
