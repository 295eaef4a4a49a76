//! **The public frame**: ceilings in each clipping norm that follow from a public range of values.
//!
//! A curator knows the physical range of what was measured (FA in `[0, 1]`, heights in
//! `[40, 210]` cm, demand in `[0, 3.5]` GW) long before seeing the data; a bound in the coefficient
//! l1 norm of a Mercer basis is not something anyone knows. [`ceiling_from_range`] turns the first
//! into the second: the smallest number this module can prove is at least the norm of every record
//! whose values lie in the range, after centring at the public centre. Used as the **ceiling** of a
//! privately tuned mean ([`crate::TunedMean`]), it is a valid clipping bound for every record in
//! the range (records outside it are clipped like any other), and the private bound stage searches
//! below it, down to `ceiling / RANGE_SEARCH_FLOOR_RATIO` ([`RANGE_SEARCH_FLOOR_RATIO`]).
//!
//! With `d = x − c` the deviation of a record from the centre `c` (`c = 0` when the records are not
//! centred) and `R = max(hi − c, c − lo)` (or `max(|lo|, |hi|)` without a centre), every in-range
//! record has `|d(t_i)| ≤ R` on the grid, and:
//!
//! - **sup** (Bernstein): `max_i |d(t_i)| ≤ R`;
//! - **L2** of the kept coefficients (ICLP-l1, IID Laplace, Gaussian process): the coefficients are
//!   the `L²(w)` projection onto orthonormal eigenfunctions, so by Bessel's inequality
//!   `(Σ_k d_k²)^{1/2} ≤ (Σ_i w_i d(t_i)²)^{1/2} ≤ R (Σ_i w_i)^{1/2}`;
//! - **coefficient l1** (ICLP-RKHS): `d_k = Σ_i w_i φ_k(t_i) d(t_i)`, so
//!   `Σ_k |d_k| ≤ R Σ_k Σ_i |w_i φ_k(t_i)|` (the triangle inequality; attained when one sign
//!   pattern of `d` is worst for every `k` at once, as for a single component) and
//!   `Σ_k |d_k| ≤ √J (Σ_k d_k²)^{1/2} ≤ √J R (Σ_i w_i)^{1/2}` (Cauchy–Schwarz, then Bessel); the
//!   ceiling is the smaller, which for J of more than a few components is the second (on DTI's 93
//!   components with `R = 1/2`: 4.8 against 41.9).
//!
//! All three are computed from public quantities (the range, the centre, the grid's weights and
//! the basis), so using them costs no privacy. Bessel's inequality needs the eigenfunctions
//! orthonormal in the grid's weighted inner product `Σ_i w_i f(t_i) g(t_i)`, which every basis
//! the library builds is (Nyström, randomized and structured solvers, tensor grids, truncations).

use fdp_core::error::public_range;
use fdp_core::{ClipNorm, ClippingBound, Error, Result};
use fdp_mercer::MercerBasis;

/// How far below a range-derived ceiling the private bound search reaches (the floor is
/// `ceiling / 1000`; for the coefficient l1 norm see [`range_floor_ratio`]). The ceiling holds for
/// **every** record in the range, so it is far above a typical record's norm (for the coefficient
/// l1 norm's triangle bound on DTI FA in `[0, 1]`, 41.9 against a private bound near 0.3); the
/// default search (down to ceiling / 10) would leave the bound at its floor, 15x too loose.
/// Measured with the CLI (`--range` against the hand-chosen ceilings of the examples, 12 seeded
/// releases, ε ∈ {1/4, 1, 4}): DTI 1.28x, 1.35x, 1.55x, Adelaide Mondays 1.01x, 1.04x, 1.05x the
/// error of the hand-chosen ceiling; with floor ratio 10: DTI 13x-170x.
pub const RANGE_SEARCH_FLOOR_RATIO: f64 = 1000.0;

/// The narrowest search a range-derived frame is narrowed to (the default search's ratio, ten):
/// [`range_floor_ratio`] and the tuned mean's block frame narrow no search below it (a search
/// given narrower stays as given).
pub(crate) const NARROWEST_FLOOR_RATIO: f64 = 10.0;

/// The search's floor ratio below [`ceiling_from_range`] in `norm`: [`RANGE_SEARCH_FLOOR_RATIO`],
/// except in the coefficient l1 norm, where the floor stays at 1/1000 of the triangle bound (where
/// it was measured) below the tighter Cauchy–Schwarz ceiling: `max(10, 1000 · ceiling / triangle)`
/// (about 115 on DTI). A narrower search is a cheaper bound stage (its noise is `ln(ratio)/(n
/// ε_bound)` on the log scale, docs/DESIGN.md section 16.10).
pub fn range_floor_ratio(norm: ClipNorm, basis: &MercerBasis) -> f64 {
    match norm {
        ClipNorm::CoefficientL1 => {
            let (ceiling, triangle) = coefficient_l1_factors(basis, None);
            (RANGE_SEARCH_FLOOR_RATIO * ceiling / triangle).max(NARROWEST_FLOOR_RATIO)
        }
        _ => RANGE_SEARCH_FLOOR_RATIO,
    }
}

/// `(F / R, triangle / R)` for the coefficient-l1 norm of `basis`' components weighted by
/// `weights` (each 1 when `None`; one per component): the triangle bound
/// `Σ_k w_k Σ_i |w_i φ_k(t_i)|`, and the ceiling factor, the smaller of it and Cauchy–Schwarz's
/// `(Σ_k w_k²)^{1/2} (Σ_i w_i)^{1/2}` (module docs).
pub(crate) fn coefficient_l1_factors(basis: &MercerBasis, weights: Option<&[f64]>) -> (f64, f64) {
    let wphi = basis.weighted_eigenfunctions();
    let w = |k: usize| weights.map_or(1.0, |w| w[k]);
    let triangle: f64 = (0..wphi.ncols()).map(|k| w(k) * wphi.col(k).iter().map(|v| v.abs()).sum::<f64>()).sum();
    let squares: f64 = (0..wphi.ncols()).map(|k| w(k) * w(k)).sum();
    let cauchy_schwarz = (squares * basis.grid().weights().iter().sum::<f64>()).sqrt();
    (triangle.min(cauchy_schwarz), triangle)
}

/// The largest deviation `R` from the centre of any value in `[lo, hi]`: `max(hi − c, c − lo)`
/// with a centre `c`, `max(|lo|, |hi|)` without one. Checks the range ([`public_range`]) and, with a centre,
/// that it lies in the range.
pub fn range_radius(lo: f64, hi: f64, centre: Option<f64>) -> Result<f64> {
    public_range(lo, hi)?;
    match centre {
        Some(c) if !(lo..=hi).contains(&c) => {
            Err(Error::BadParameter { name: "centre", value: c.into(), reason: "must lie in the public range" })
        }
        Some(c) => Ok((hi - c).max(c - lo)),
        None => Ok(lo.abs().max(hi.abs())),
    }
}

/// **The ceiling in `norm` for records with values in `[lo, hi]`**, centred at `centre` (if any),
/// on `basis`' grid and components: `R`, `R (Σ_i w_i)^{1/2}` or `R min(Σ_k Σ_i |w_i φ_k(t_i)|,
/// (J Σ_i w_i)^{1/2})` for the sup, L2 and coefficient-l1 norms (module docs for the proofs). An error if the range is not
/// finite and ordered, the centre lies outside it, or the ceiling is not a valid clipping bound
/// (e.g. it overflows).
///
/// ```
/// use fdp_core::ClipNorm;
/// use fdp_estimators::frame::ceiling_from_range;
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
/// let grid = Grid::trapezoid(0.0, 1.0, 50)?;
/// let basis = MercerBasis::build(Stationary::matern32(0.1)?, grid, BasisOptions::default())?;
/// // FA values lie in [0, 1]; centred at 0.5 every record is within 0.5 of the centre.
/// let sup = ceiling_from_range(ClipNorm::Sup, &basis, 0.0, 1.0, Some(0.5))?;
/// assert_eq!(sup.value(), 0.5);
/// let l2 = ceiling_from_range(ClipNorm::L2, &basis, 0.0, 1.0, Some(0.5))?;
/// assert!((l2.value() - 0.5).abs() < 1e-12); // the grid's weights sum to 1
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ceiling_from_range(
    norm: ClipNorm,
    basis: &MercerBasis,
    lo: f64,
    hi: f64,
    centre: Option<f64>,
) -> Result<ClippingBound> {
    let radius = range_radius(lo, hi, centre)?;
    let factor = match norm {
        ClipNorm::Sup => 1.0,
        ClipNorm::L2 => basis.grid().weights().iter().sum::<f64>().sqrt(),
        ClipNorm::CoefficientL1 => coefficient_l1_factors(basis, None).0,
        _ => {
            return Err(Error::BadSpec {
                what: "the clipping norm",
                spec: format!("{norm:?}"),
                reason: "no ceiling from a range is derived for this norm",
            });
        }
    };
    ClippingBound::new(radius * factor, norm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdp_mercer::{BasisOptions, Grid, Stationary};

    fn basis() -> MercerBasis {
        let grid = Grid::trapezoid(0.0, 2.0, 40).unwrap();
        MercerBasis::build(Stationary::matern32(0.2).unwrap(), grid, BasisOptions::default()).unwrap()
    }

    /// Every record in the range has its norm below the ceiling, in each norm: random records, the
    /// corners (constant at an end of the range) and the worst sign pattern of each component.
    #[test]
    fn every_in_range_record_is_within_the_ceiling_and_the_l1_term_is_attained() {
        let basis = basis();
        let (lo, hi, c) = (40.0, 210.0, 100.0);
        let radius = range_radius(lo, hi, Some(c)).unwrap();
        assert_eq!(radius, 110.0);
        // Scattered values in the range (a low-discrepancy sequence: the golden-ratio rotation).
        let mut records: Vec<Vec<f64>> = (0..200)
            .map(|r| (0..40).map(|i| lo + (hi - lo) * ((r * 40 + i) as f64 * 0.618_033_988_75).fract()).collect())
            .collect();
        records.push(vec![lo; 40]);
        records.push(vec![hi; 40]);
        let wphi = basis.weighted_eigenfunctions();
        for k in 0..wphi.ncols() {
            records.push((0..40).map(|i| if wphi[(i, k)] >= 0.0 { hi } else { lo.max(c - radius) }).collect());
        }
        for norm in [ClipNorm::Sup, ClipNorm::L2, ClipNorm::CoefficientL1] {
            let ceiling = ceiling_from_range(norm, &basis, lo, hi, Some(c)).unwrap().value();
            for r in &records {
                let d: Vec<f64> = r.iter().map(|v| v - c).collect();
                let value = match norm {
                    ClipNorm::Sup => norm.norm(&d),
                    _ => norm.norm(&basis.project(&d).unwrap()),
                };
                assert!(value <= ceiling * (1.0 + 1e-12), "{norm:?}: {value} > {ceiling}");
            }
        }
        // The k-th term R Σ_i |w_i φ_k(t_i)| of the triangle bound is attained by d = R sign(φ_k):
        // it is tight per component; over all J components Cauchy–Schwarz's is the smaller.
        let (factor, triangle) = coefficient_l1_factors(&basis, None);
        let root_j = (wphi.ncols() as f64 * basis.grid().weights().iter().sum::<f64>()).sqrt();
        assert!(factor == root_j && root_j < triangle / 2.0, "{factor} {root_j} {triangle}");
        assert!(range_floor_ratio(ClipNorm::CoefficientL1, &basis) < RANGE_SEARCH_FLOOR_RATIO / 2.0);
        assert_eq!(range_floor_ratio(ClipNorm::L2, &basis), RANGE_SEARCH_FLOOR_RATIO);
        let k0: f64 = (0..40).map(|i| wphi[(i, 0)].abs()).sum::<f64>() * radius;
        let d: Vec<f64> = (0..40).map(|i| radius * wphi[(i, 0)].signum()).collect();
        assert!((basis.project(&d).unwrap()[0].abs() - k0).abs() < 1e-9 * k0);
        // Sup: attained by a constant at the far end.
        assert_eq!(ceiling_from_range(ClipNorm::Sup, &basis, lo, hi, Some(c)).unwrap().value(), radius);
    }

    #[test]
    fn without_a_centre_the_radius_is_the_largest_magnitude() {
        assert_eq!(range_radius(-3.0, 2.0, None).unwrap(), 3.0);
        assert_eq!(range_radius(40.0, 210.0, None).unwrap(), 210.0);
    }

    #[test]
    fn bad_ranges_and_centres_are_refused() {
        let basis = basis();
        for (lo, hi, c) in [(1.0, 1.0, None), (2.0, 1.0, None), (f64::NAN, 1.0, None), (0.0, f64::INFINITY, None)] {
            assert!(ceiling_from_range(ClipNorm::L2, &basis, lo, hi, c).is_err(), "{lo} {hi}");
        }
        let outside = ceiling_from_range(ClipNorm::L2, &basis, 0.0, 1.0, Some(2.0)).unwrap_err();
        assert!(outside.to_string().contains("centre"), "{outside}");
        // A finite range whose ceiling overflows is refused by the bound's own check.
        assert!(ceiling_from_range(ClipNorm::CoefficientL1, &basis, -1e308, 1e308, None).is_err());
    }
}
