//! Gaussian-process paths by Cholesky factorisation of the kernel matrix on the grid: the classic
//! O(K³) route, kept for comparison with the basis samplers (Table 1 of the ICLP paper). Its normals
//! come from the exact lattice Gaussian sampler like every other fdp draw.

use faer::{Mat, Side};
use rayon::prelude::*;

use fdp_mercer::{Grid, Kernel, kernel_matrix};

use fdp_noise::{LatticeGaussian, NoiseError, NoiseRng, Result};

/// Paths `L z` with `C + jitter·I = L L^T` on a grid and `z` standard normal.
#[derive(Debug, Clone)]
pub struct CholeskyGpSampler {
    factor: Mat<f64>,
    normal: LatticeGaussian,
}

impl CholeskyGpSampler {
    /// Factorises `C(t_i, t_j) + jitter δ_ij`; `jitter >= 0` guards against round-off (1e-10 is usual).
    pub fn new(kernel: &dyn Kernel, grid: &Grid, jitter: f64) -> Result<Self> {
        if !(jitter.is_finite() && jitter >= 0.0) {
            return Err(NoiseError::BadParameter { name: "jitter", value: jitter, reason: "must be finite and >= 0" });
        }
        let mut c = kernel_matrix(kernel, grid.points(), grid.points(), grid.dim());
        for i in 0..grid.len() {
            c[(i, i)] += jitter;
        }
        let llt = c.llt(Side::Lower).map_err(|_| NoiseError::BadParameter {
            name: "jitter",
            value: jitter,
            reason: "the kernel matrix is not positive definite; increase the jitter",
        })?;
        Ok(Self { factor: llt.L().to_owned(), normal: LatticeGaussian::with_sigma(1.0)? })
    }

    /// `m` paths on the grid, m x K.
    pub fn sample_paths(&self, m: usize, rng: &mut NoiseRng) -> Mat<f64> {
        let k = self.factor.nrows();
        let mut flat = vec![0.0; m * k];
        let mut streams = rng.split(m);
        flat.par_chunks_mut(k.max(1)).zip(streams.par_iter_mut()).for_each(|(row, r)| {
            row.iter_mut().for_each(|v| *v = self.normal.sample(r));
        });
        Mat::from_fn(m, k, |i, j| flat[i * k + j]) * self.factor.transpose()
    }
}
