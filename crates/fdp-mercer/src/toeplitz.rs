//! The weighted kernel matrix of a stationary kernel on a uniform 1-D grid, `A = D T D` with
//! `T_ij = g(|i - j| h)` (symmetric Toeplitz) and `D = diag(√w)`: filled from K values of g, and
//! applied to a block of vectors in O(K log K) per vector by embedding T in a circulant of size
//! `N >= 2K` and diagonalising that by the FFT (`T x = (F⁻¹ (F c ⊙ F [x; 0]))_{0..K}`).

use std::sync::Arc;

use faer::{Mat, MatRef};
use rayon::prelude::*;
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use crate::error::{MercerError, Result};
use crate::grid::{Grid, GridLayout};
use crate::kernel::Kernel;

/// `A = D T D` for a radial kernel on a midpoint or trapezoid grid.
pub(crate) struct WeightedToeplitz {
    /// `g(d h)`, d = 0..K-1.
    profile: Vec<f64>,
    sqrt_w: Vec<f64>,
}

/// `A` as an operator: the circulant embedding of T, diagonalised by the FFT.
pub(crate) struct ToeplitzProduct<'a> {
    matrix: &'a WeightedToeplitz,
    /// The circulant's eigenvalues `F c` (real: c is symmetric).
    spectrum: Vec<f64>,
    forward: Arc<dyn Fft<f64>>,
    inverse: Arc<dyn Fft<f64>>,
}

impl WeightedToeplitz {
    /// `None` unless `kernel` is radial and `grid` a uniform 1-D grid (midpoint or trapezoid) of at
    /// least two points; an error if the kernel is not finite at some grid distance.
    pub(crate) fn new(kernel: &dyn Kernel, grid: &Grid) -> Option<Result<Self>> {
        kernel.radial(0.0)?;
        let k = grid.len();
        let h = match grid.layout() {
            GridLayout::Midpoint { start, end } if k >= 2 => (end - start) / k as f64,
            GridLayout::Trapezoid { start, end } if k >= 2 => (end - start) / (k - 1) as f64,
            _ => return None,
        };
        let profile: Vec<f64> = (0..k).map(|d| kernel.radial(d as f64 * h).unwrap_or(f64::NAN)).collect();
        if let Some(d) = profile.iter().position(|v| !v.is_finite()) {
            return Some(Err(MercerError::NonFiniteKernel { kernel: kernel.spec().name, row: d, col: 0 }));
        }
        let sqrt_w = grid.weights().iter().map(|w| w.sqrt()).collect();
        Some(Ok(Self { profile, sqrt_w }))
    }

    /// `A_ij = √w_i √w_j g(|i - j| h)`.
    #[inline]
    fn entry(&self, i: usize, j: usize) -> f64 {
        self.sqrt_w[i] * self.sqrt_w[j] * self.profile[i.abs_diff(j)]
    }

    /// Whether `w_i = w_{K-1-i}` exactly (then `A` is centrosymmetric).
    pub(crate) fn symmetric_weights(&self) -> bool {
        let k = self.sqrt_w.len();
        (0..k / 2).all(|i| self.sqrt_w[i] == self.sqrt_w[k - 1 - i])
    }

    /// The FFT product with `A` (plans the transforms of size `N = 2^⌈log₂ 2K⌉`).
    pub(crate) fn product(&self) -> ToeplitzProduct<'_> {
        let k = self.profile.len();
        let n = (2 * k).next_power_of_two();
        let mut planner = FftPlanner::<f64>::new();
        let (forward, inverse) = (planner.plan_fft_forward(n), planner.plan_fft_inverse(n));
        let mut column = vec![Complex::new(0.0, 0.0); n];
        for d in 0..k {
            column[d].re = self.profile[d];
            if d > 0 {
                column[n - d].re = self.profile[d];
            }
        }
        forward.process(&mut column);
        let spectrum = column.iter().map(|z| z.re).collect();
        ToeplitzProduct { matrix: self, spectrum, forward, inverse }
    }

    /// The unweighted kernel matrix `T_ij = g(|i - j| h)`, filled column-parallel from the profile.
    pub(crate) fn kernel_dense(&self) -> Mat<f64> {
        let k = self.profile.len();
        let mut t = Mat::<f64>::zeros(k, k);
        t.par_col_iter_mut().enumerate().for_each(|(j, mut col)| {
            for i in 0..k {
                col[i] = self.profile[i.abs_diff(j)];
            }
        });
        t
    }

    /// The K x K matrix, filled column-parallel (exactly symmetric and, for symmetric weights,
    /// centrosymmetric).
    pub(crate) fn dense(&self) -> Mat<f64> {
        let k = self.profile.len();
        let mut a = Mat::<f64>::zeros(k, k);
        a.par_col_iter_mut().enumerate().for_each(|(j, mut col)| {
            for i in 0..k {
                col[i] = self.entry(i, j);
            }
        });
        a
    }

    /// The symmetric and antisymmetric halves of `A` (symmetric weights; see `centrosymmetric_halves`
    /// in basis.rs) straight from the profile, without the K x K matrix: with `m = ⌊K/2⌋` and the
    /// mirror `i' = K-1-i`, `A_{i'j'} = A_ij`, so for i, j < m the symmetric half is `A_ij + A_{ij'}`,
    /// the antisymmetric `A_ij - A_{ij'}`, and for odd K the middle row/column of the symmetric half
    /// is `√2 A_im` with corner `A_mm`.
    pub(crate) fn centrosymmetric_halves(&self) -> (Mat<f64>, Mat<f64>) {
        debug_assert!(self.symmetric_weights());
        let k = self.profile.len();
        let m = k / 2;
        let odd = k % 2 == 1;
        let a = |i: usize, j: usize| self.entry(i, j);
        let mut sym = Mat::<f64>::zeros(m + odd as usize, m + odd as usize);
        let mut anti = Mat::<f64>::zeros(m, m);
        sym.par_col_iter_mut().enumerate().for_each(|(j, mut col)| {
            for i in 0..col.nrows() {
                col[i] = match (i < m, j < m) {
                    (true, true) => a(i, j) + a(i, k - 1 - j),
                    (true, false) => std::f64::consts::SQRT_2 * a(i, m),
                    (false, true) => std::f64::consts::SQRT_2 * a(m, j),
                    (false, false) => a(m, m),
                };
            }
        });
        anti.par_col_iter_mut().enumerate().for_each(|(j, mut col)| {
            for i in 0..m {
                col[i] = a(i, j) - a(i, k - 1 - j);
            }
        });
        (sym, anti)
    }
}

impl ToeplitzProduct<'_> {
    /// `A X` for a K x L block, one FFT pair per column (columns in parallel; each column's result
    /// does not depend on the thread count).
    pub(crate) fn apply(&self, x: MatRef<'_, f64>) -> Mat<f64> {
        let (k, n) = (self.matrix.profile.len(), self.spectrum.len());
        let sqrt_w = &self.matrix.sqrt_w;
        let columns: Vec<Vec<f64>> = (0..x.ncols())
            .into_par_iter()
            .map(|c| {
                let mut buffer = vec![Complex::new(0.0, 0.0); n];
                for i in 0..k {
                    buffer[i].re = sqrt_w[i] * x[(i, c)];
                }
                self.forward.process(&mut buffer);
                buffer.iter_mut().zip(&self.spectrum).for_each(|(z, s)| *z *= *s);
                self.inverse.process(&mut buffer);
                (0..k).map(|i| sqrt_w[i] * buffer[i].re / n as f64).collect()
            })
            .collect();
        Mat::from_fn(k, x.ncols(), |i, c| columns[c][i])
    }
}
