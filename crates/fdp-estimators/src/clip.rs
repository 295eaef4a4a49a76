//! Per-record clipping in the norm a sensitivity is computed in, with a bound τ fixed before the
//! data are seen. Clipping scales a record down onto the ball `{||x|| <= τ}` (and leaves it alone
//! inside), so one record moves a summary by at most what a τ-bounded record can.

use serde::{Deserialize, Serialize};

/// The norm a record is clipped in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ClipNorm {
    /// `Σ_k |x_k|` over the kept basis coefficients (ICLP-RKHS).
    CoefficientL1,
    /// `(Σ_k x_k²)^{1/2}` over the kept coefficients, the L2 norm of the projected curve
    /// (ICLP-l1, IID Laplace, Gaussian process).
    L2,
    /// `max_i |x(t_i)|` on the grid (Bernstein).
    Sup,
}

impl ClipNorm {
    /// The norm of `x`.
    pub fn norm(self, x: &[f64]) -> f64 {
        match self {
            Self::CoefficientL1 => x.iter().map(|v| v.abs()).sum(),
            Self::L2 => x.iter().map(|v| v * v).sum::<f64>().sqrt(),
            Self::Sup => x.iter().fold(0.0, |m, v| m.max(v.abs())),
        }
    }

    /// Scales `x` in place so that its norm is at most `tau` (`tau > 0`).
    ///
    /// A record whose norm is not finite (its projection overflowed) becomes 0, the centre of the
    /// ball: any point of the ball keeps the sensitivity bound, and no record can turn the summary
    /// into NaN.
    pub fn clip(self, x: &mut [f64], tau: f64) {
        let norm = self.norm(x);
        if !norm.is_finite() {
            x.fill(0.0);
        } else if norm > tau {
            let s = tau / norm;
            x.iter_mut().for_each(|v| *v *= s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_lands_on_the_ball() {
        for norm in [ClipNorm::CoefficientL1, ClipNorm::L2, ClipNorm::Sup] {
            let mut x = vec![3.0, -4.0, 1.0];
            norm.clip(&mut x, 2.0);
            assert!((norm.norm(&x) - 2.0).abs() < 1e-12, "{norm:?}");
            let mut small = vec![0.1, 0.0, -0.1];
            norm.clip(&mut small, 2.0);
            assert_eq!(small, vec![0.1, 0.0, -0.1]);
            let mut overflowed = vec![f64::INFINITY, f64::NAN, 1.0];
            norm.clip(&mut overflowed, 2.0);
            assert_eq!(overflowed, vec![0.0; 3]);
        }
    }
}
