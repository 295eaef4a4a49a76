//! Gaussian-process paths by Cholesky factorisation of the kernel matrix on the grid: the classic
//! O(K³) route, kept for comparison with the basis samplers (Table 1 of the ICLP paper). Its normals
//! come from the exact lattice Gaussian sampler like every other fdp draw.

use faer::linalg::matmul::triangular::{BlockStructure, matmul};
use faer::{Accum, Mat, MatRef};
use rayon::prelude::*;

use fdp_mercer::linalg::{cholesky_owned, fixed_par};
use fdp_mercer::{Grid, Kernel, grid_kernel_matrix};

use fdp_noise::{LatticeGaussian, NoiseError, NoiseRng, Result};

/// Paths `L z` with `C + jitter·I = L L^T` on a grid and `z` standard normal.
///
/// **Cost.** The kernel matrix from the kernel's profile when it is Toeplitz (a stationary kernel
/// on a uniform grid: K evaluations; K² otherwise), the blocked Cholesky factorisation in place
/// (`K³/3` flops), the `m K` exact lattice normals (a column per path, each from its own child
/// stream, in parallel), and the paths as one triangular product `Zᵀ Lᵀ` (`m K²` flops: the
/// zero half of L is skipped). The dense operations split into a fixed number of pieces, so the
/// paths do not depend on the thread count.
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
        let mut c = grid_kernel_matrix(kernel, grid);
        for i in 0..grid.len() {
            c[(i, i)] += jitter;
        }
        let factor = cholesky_owned(c).ok_or(NoiseError::BadParameter {
            name: "jitter",
            value: jitter,
            reason: "the kernel matrix is not positive definite; increase the jitter",
        })?;
        Ok(Self { factor, normal: LatticeGaussian::with_sigma(1.0)? })
    }

    /// `m` paths on the grid, m x K: path i is `L z_i`, `z_i` the K normals of the i-th child
    /// stream of `rng`, in order.
    pub fn sample_paths(&self, m: usize, rng: &mut NoiseRng) -> Mat<f64> {
        let k = self.factor.nrows();
        let mut normals = vec![0.0; k * m];
        let mut streams = rng.split(m);
        normals.par_chunks_mut(k.max(1)).zip(streams.par_iter_mut()).for_each(|(column, r)| {
            self.normal.fill_samples(r, column);
        });
        let z = MatRef::from_column_major_slice(&normals, k, m);
        let mut paths = Mat::<f64>::zeros(m, k);
        matmul(
            paths.as_mut(),
            BlockStructure::Rectangular,
            Accum::Replace,
            z.transpose(),
            BlockStructure::Rectangular,
            self.factor.transpose(),
            BlockStructure::TriangularUpper,
            1.0,
            fixed_par(),
        );
        paths
    }
}
