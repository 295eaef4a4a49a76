//! The exact privacy loss of two inputs to a lattice mechanism, computed from the lattice indices the
//! releases are centred at and the noise scales — not from any mechanism's own sensitivity bound.
//!
//! **Laplace.** Component k releases `r_k (i_k + Z_k)` with `P(Z_k = z) ∝ exp(-|z| r_k / b_k)`, so
//! for inputs centred at `i_k` and `i'_k` the log-ratio of the probabilities of any output is at most
//! `Σ_k |i_k - i'_k| r_k / b_k`, with equality on outputs beyond both centres: that sum *is* the
//! privacy loss, and the mechanism is ε-DP on the pair iff it is `<= ε`.
//!
//! **Gaussian.** Component k adds `r_k Z_k` with `Z_k` discrete Gaussian of standard deviation
//! `σ_k / r_k`; the pair's privacy curve is that of the Gaussian mechanism with the whitened distance
//! `d = (Σ_k ((i_k - i'_k) r_k / σ_k)²)^{1/2}`. The mechanism calibrated with the analytic multiplier
//! `s(ε, δ)` is (ε, δ)-DP on the pair iff `s · d <= 1`.
//!
//! **Exponential mechanism.** Candidate i is chosen with probability `∝ exp(-c l_i)` from integer
//! levels; for two inputs with levels `l` and `l'` the loss of outcome i is
//! `|c ((l_i - l_min) - (l'_i - l'_min)) + ln Z' - ln Z|` (Z the normalisers relative to the best
//! level): its maximum over i *is* the pair's privacy loss.
//!
//! Audits and the adversarial edge suite use these to check mechanisms against worst-case records.

use crate::error::{Result, check_len};
use crate::exponential::ExponentialMechanism;
use crate::secure::{LatticeGaussian, LatticeLaplace};

/// `Σ_k |i_k - i'_k| r_k / b_k`: the exact pure-DP loss between inputs `a` and `b`.
pub fn laplace_loss(noise: &[LatticeLaplace], a: &[f64], b: &[f64]) -> Result<f64> {
    check_len("first input", noise.len(), a.len())?;
    check_len("second input", noise.len(), b.len())?;
    Ok(noise
        .iter()
        .zip(a.iter().zip(b))
        .map(|(n, (x, y))| (n.lattice_index(*x) - n.lattice_index(*y)).unsigned_abs() as f64 * n.step() / n.scale())
        .sum())
}

/// `s · (Σ_k ((i_k - i'_k) r_k / σ_k)²)^{1/2}`: at most 1 iff the Gaussian noise, calibrated with
/// the analytic multiplier `s`, is (ε, δ)-DP on the pair.
pub fn gaussian_loss(noise: &[LatticeGaussian], multiplier: f64, a: &[f64], b: &[f64]) -> Result<f64> {
    check_len("first input", noise.len(), a.len())?;
    check_len("second input", noise.len(), b.len())?;
    let squared: f64 = noise
        .iter()
        .zip(a.iter().zip(b))
        .map(|(n, (x, y))| {
            ((n.lattice_index(*x) - n.lattice_index(*y)).unsigned_abs() as f64 * n.step() / n.sigma()).powi(2)
        })
        .sum();
    Ok(multiplier * squared.sqrt())
}

/// `max_i |ln P(i | a) - ln P(i | b)|` for the exponential mechanism on the candidate levels `a`
/// and `b` of two inputs: at most ε iff the selection is ε-DP on the pair.
pub fn exponential_loss(mechanism: &ExponentialMechanism, a: &[i64], b: &[i64]) -> Result<f64> {
    check_len("second input's levels", a.len(), b.len())?;
    let (pa, pb) = (mechanism.log_probabilities(a), mechanism.log_probabilities(b));
    Ok(pa.iter().zip(&pb).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_of_simple_pairs() {
        let l = LatticeLaplace::with_scale(2.0).unwrap();
        let loss = laplace_loss(&[l, l], &[0.0, 0.0], &[1.0, -1.0]).unwrap();
        assert!((loss - 1.0).abs() < 1e-9, "{loss}");
        let g = LatticeGaussian::with_sigma(1.0).unwrap();
        let d = gaussian_loss(&[g, g], 2.0, &[0.0, 0.0], &[0.3, 0.4]).unwrap();
        assert!((d - 2.0 * 0.5 / g.sigma()).abs() < 1e-6, "{d}");
        assert!(laplace_loss(&[l], &[0.0, 1.0], &[0.0]).is_err());
        // Two candidates 20Δ apart whose scores move by Δ towards each other: the unlikely one's
        // loss is ε - ln((1 + e^{-10})/(1 + e^{-9})), within 1e-4 of ε; from a tie the same moves
        // cost ε/2, and one candidate moving alone at most ε/2.
        let em = ExponentialMechanism::new(crate::Sensitivity::new(1.0).unwrap(), crate::Epsilon::new(1.0).unwrap())
            .unwrap();
        let loss =
            |x: &[f64], y: &[f64]| exponential_loss(&em, &em.levels(x).unwrap(), &em.levels(y).unwrap()).unwrap();
        let opposite = loss(&[0.0, 20.0], &[1.0, 19.0]);
        assert!(opposite <= 1.0 && opposite > 1.0 - 1e-4, "{opposite}");
        assert!((loss(&[0.0, 1.0], &[1.0, 0.0]) - 0.5).abs() < 1e-5);
        assert!(loss(&[0.0, 0.0], &[1.0, 0.0]) <= 0.5);
        assert!(exponential_loss(&em, &[0, 1], &[0]).is_err());
    }
}
