//! Goodness-of-fit tools used to validate samplers (and available to validate your own):
//! the one-sample Kolmogorov-Smirnov test, the Laplace and normal CDFs and the Laplace quantile.

use statrs::function::erf::erfc;

/// CDF of the Laplace law with location 0 and scale b.
pub fn laplace_cdf(x: f64, b: f64) -> f64 {
    if x < 0.0 { 0.5 * (x / b).exp() } else { 1.0 - 0.5 * (-x / b).exp() }
}

/// Quantile of the Laplace law with location 0 and scale b at `u ∈ (0, 1)`:
/// `−b sgn(u − 1/2) ln(1 − 2|u − 1/2|)`, the inverse of [`laplace_cdf`]. For deterministic designs
/// and tests; it is **not** a sampler for releases (a floating-point inverse CDF leaks through the
/// gaps in its outputs, Mironov 2012: release noise comes from the crate's snapped samplers).
pub fn laplace_quantile(u: f64, b: f64) -> f64 {
    let c = u - 0.5;
    -b * c.signum() * (1.0 - 2.0 * c.abs()).ln()
}

/// CDF of the normal law with mean 0 and standard deviation σ.
pub fn normal_cdf(x: f64, sigma: f64) -> f64 {
    0.5 * erfc(-x / (sigma * std::f64::consts::SQRT_2))
}

/// The KS statistic `D = sup_x |F_n(x) - F(x)|` of a sample against a continuous CDF.
pub fn ks_statistic(sample: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    sample.sort_by(f64::total_cmp);
    let n = sample.len() as f64;
    sample.iter().enumerate().fold(0.0_f64, |d, (i, &x)| {
        let f = cdf(x);
        d.max((f - i as f64 / n).abs()).max(((i + 1) as f64 / n - f).abs())
    })
}

/// Asymptotic p-value of the KS statistic `D` for a sample of size n (Kolmogorov's distribution with
/// Stephens' correction `(sqrt(n) + 0.12 + 0.11/sqrt(n)) D`).
pub fn ks_p_value(d: f64, n: usize) -> f64 {
    let sn = (n as f64).sqrt();
    let x = (sn + 0.12 + 0.11 / sn) * d;
    if x < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let term = (-2.0 * (k * k) as f64 * x * x).exp();
        sum += if k % 2 == 1 { term } else { -term };
        if term < 1e-17 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_laplace_quantile_inverts_the_cdf() {
        for b in [0.5, 2.0] {
            for u in [1e-9, 0.01, 0.3, 0.5, 0.7, 0.99, 1.0 - 1e-9] {
                let x = laplace_quantile(u, b);
                assert!((laplace_cdf(x, b) - u).abs() < 1e-12, "{u} {b}: {x}");
            }
        }
        assert_eq!(laplace_quantile(0.5, 1.0), 0.0);
    }

    #[test]
    fn kolmogorov_tail_values() {
        // P(K > 1.358) = 0.05 and P(K > 1.628) = 0.01 (standard tables), for large n.
        assert!((ks_p_value(1.358 / 1e4, 100_000_000) - 0.05).abs() < 1e-3);
        assert!((ks_p_value(1.628 / 1e4, 100_000_000) - 0.01).abs() < 1e-3);
        let mut s: Vec<f64> = (0..1000).map(|i| (i as f64 + 0.5) / 1000.0).collect();
        assert!(ks_statistic(&mut s, |x| x.clamp(0.0, 1.0)) <= 0.0005 + 1e-12);
        assert!((laplace_cdf(0.0, 2.0) - 0.5).abs() < 1e-15 && (normal_cdf(1.0, 1.0) - 0.841344746).abs() < 1e-9);
    }
}
