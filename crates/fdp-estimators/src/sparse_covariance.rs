//! **The private covariance operator and FPCA of sparse or irregular curves** ([`SparseCovariance`]):
//! each record's own kernel-ridge smoother onto the J leading Mercer components, then the privately
//! tuned covariance of those coefficient vectors ([`TunedCovariance`]'s stages, sums and noise,
//! reused as they are).
//!
//! **The record's smoother.** Record i has `m_i >= 0` observations `(t_ij, y_ij)` on the public
//! domain (non-finite ones and those outside it already dropped by [`SparseCurves`]). Each time is
//! snapped to the nearest point `g_ij` of the public grid, each value clamped to the public range and
//! centred at the public centre, `e_ij = clamp(y_ij, lo, hi) − c(g_ij)`. With `φ_ij = (φ_1(t_{g_ij}),
//! …, φ_J(t_{g_ij}))` the J leading eigenfunctions of the basis (orthonormal in the grid's L², so a
//! dense curve's coefficients are its L² projection, as in [`crate::covariance`]), the record's
//! coefficients are the kernel-ridge fit
//!
//! `c_i = argmin_c Σ_j (e_ij − φ_ijᵀ c)² + ρ Σ_a (λ_1/λ_a) c_a² = (Φ_iᵀΦ_i + ρ P)⁻¹ Φ_iᵀ e_i`,
//!
//! `P = diag(λ_1/λ_a)` from the basis' public eigenvalues and ρ > 0 the public ridge: the posterior
//! mean of the coefficients under the prior `N(0, (σ²/ρ) diag(λ_a/λ_1))` (the RKHS penalty of the
//! basis' kernel), the sparse-FPCA score estimate of PACE (Yao, Müller & Wang 2005) with the prior
//! fixed in advance instead of estimated. It is defined for every record: `ρ P ⪰ ρ I` keeps the
//! system positive definite with one point, with every point at one time, or with none (`c_i = 0`,
//! the centre); it converges to the record's L² projection as `m_i` grows (the penalty is not
//! divided by `m_i`), and it shrinks towards the centre where the record says little.
//!
//! **Sensitivity, for records with different `m_i`.** `c_i` is a function of record i and public
//! quantities only, whatever `m_i`; the release then treats `c_i` exactly as the dense covariance
//! treats a projected curve `x_i` — clipped in l2 at τ, summed as `[τ m ; U(S)]` — so replacing one
//! record moves the summary at each τ by at most the dense constants of docs/DESIGN.md §17.2:
//! `Δ₁ = (√J + 1)² τ²/n` (Laplace, pure ε) and `Δ₂ = 3τ²/(√2 n)` (Gaussian, (ε, δ)), and the bound
//! stage's clamped mean log norm by `ln(F/f)/n`. The number of a record's observations does not
//! enter: a record with 5000 points and one with a single point are each one clipped vector (the
//! privacy unit is the whole record, user-level). A row that is not finite (a factorisation that
//! fails in floating point: not seen at ridges >= `MIN_RIDGE`, but checked) adds 0 and counts at the
//! floor of the bound search. Unlike a dense projection, a fit's norm is **not** bounded by the
//! range-derived ceiling (a one-point record's fit at a small ridge can exceed it): such records are
//! clipped at every τ, a bias, never a privacy loss, since clipping precedes the sums. By sequential composition the pipeline is `(ε, δ)`-DP, as
//! [`TunedCovariance`].
//!
//! **Release.** The bound stage picks τ on the public 64-point grid, the release stage adds Laplace
//! or Gaussian noise to that τ's `[τ m ; U(S)]`; the output is a [`Covariance`] of the coefficients
//! (about the public centre), so [`Covariance::fpca`] (PSD projection, top k) and every door's FPCA
//! report apply unchanged. The summary holds exact fixed-point sums at every τ: partial states of
//! any partition merge bit for bit ([`MergeableMechanism`]).
//!
//! **What the covariance estimates.** `Cov(c_i)`: for sparse records the covariance of the shrunk
//! scores, not of the curves — its eigenvalues are biased down and the subspace tilted towards the
//! components the prior favours, less as `m_i` grows (docs/DESIGN.md §18.6 measures it
//! against the full-data FPCA).

use faer::Mat;

use fdp_core::{Accuracy, Charge, ClippingBound, Mechanism, MergeableMechanism, Release, Stage, SummaryState};
use fdp_data::{CurveSet, SparseCurves};
use fdp_mercer::MercerBasis;
use fdp_noise::{Delta, Epsilon, NoiseRng, PrivacyGuarantee};

use crate::covariance::{Covariance, Truncation};
use crate::error::{EstimatorError, Result};
use crate::sparse::SparseFrame;
use crate::tuned_covariance::TunedCovariance;

/// **The privately tuned covariance operator of sparse curves** (module docs: the per-record
/// kernel-ridge smoother, the sensitivity, the proof sketch).
///
/// ```
/// use fdp_core::{ClippingBound, Mechanism, Session};
/// use fdp_data::SparseCurves;
/// use fdp_estimators::{SparseCovariance, SparseFrame};
/// use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};
/// use fdp_noise::Epsilon;
/// let basis = MercerBasis::build(Stationary::matern32(0.1)?, Grid::midpoint(0.0, 1.0, 40)?, BasisOptions::default())?;
/// let records: Vec<(Vec<f64>, Vec<f64>)> = (0..200)
///     .map(|i| {
///         let t: Vec<f64> = (0..5).map(|j| ((i * 7 + j * 13) % 40) as f64 / 40.0).collect();
///         let y = t.iter().map(|t| 0.5 + 0.2 * (i % 7) as f64 / 7.0 * (6.0 * t).sin()).collect();
///         (t, y)
///     })
///     .collect();
/// let data = SparseCurves::new((0.0, 1.0), &records)?;
/// let frame = SparseFrame::new(basis.grid(), (0.0, 1.0))?;
/// let ceiling = ClippingBound::l2(0.5)?;
/// let covariance = SparseCovariance::laplace(&basis, 200, Epsilon::new(1.0)?, frame, ceiling, 4, 1.0)?;
/// let mut session = Session::pure(Epsilon::new(1.0)?)?;
/// let release = session.release(&covariance, &data)?;
/// assert_eq!(session.ledger().len(), covariance.stages().len()); // the bound, then the covariance
/// let fpca = release.output().fpca(2)?;
/// assert!(fpca.explained_variance().iter().sum::<f64>() <= 1.0 + 1e-9);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SparseCovariance {
    tuned: TunedCovariance,
    frame: SparseFrame,
    /// `φ_a(t_g)` of the J released components, K × J row-major.
    phi: Vec<f64>,
    /// `ρ λ_1/λ_a`, the ridge on each coefficient.
    penalty: Vec<f64>,
    ridge: f64,
    n: usize,
}

impl SparseCovariance {
    /// **Laplace (pure ε)**: J = `components` leading components of `basis`, the public L2 `ceiling`
    /// of the bound search, the public frame (range, centre; a stated design is refused: the
    /// smoother does not use one), the public `ridge` ρ > 0.
    pub fn laplace(
        basis: &MercerBasis,
        n: usize,
        epsilon: Epsilon,
        frame: SparseFrame,
        ceiling: ClippingBound,
        components: usize,
        ridge: f64,
    ) -> Result<Self> {
        let centre = Self::centre_of(&frame, basis)?;
        let tuned = TunedCovariance::laplace(basis, n, epsilon, ceiling, components, centre)?;
        Self::new(tuned, basis, n, frame, ridge)
    }

    /// **Gaussian ((ε, δ))**: as [`laplace`](Self::laplace), δ spent by the release stage.
    #[allow(clippy::too_many_arguments)]
    pub fn gaussian(
        basis: &MercerBasis,
        n: usize,
        epsilon: Epsilon,
        delta: Delta,
        frame: SparseFrame,
        ceiling: ClippingBound,
        components: usize,
        ridge: f64,
    ) -> Result<Self> {
        let centre = Self::centre_of(&frame, basis)?;
        let tuned = TunedCovariance::gaussian(basis, n, epsilon, delta, ceiling, components, centre)?;
        Self::new(tuned, basis, n, frame, ridge)
    }

    /// The frame's checks, before the covariance is built: its grid is the basis', no stated design.
    fn centre_of(frame: &SparseFrame, basis: &MercerBasis) -> Result<Option<Vec<f64>>> {
        if frame.grid() != basis.grid() {
            return Err(EstimatorError::GridMismatch);
        }
        if frame.design_stated() {
            return Err(EstimatorError::BadParameter {
                name: "design",
                value: fdp_core::ParamValue::Missing,
                reason: "the sparse covariance fits each record on its own and uses no design: leave it unstated",
            });
        }
        Ok(Some(frame.centre().to_vec()))
    }

    /// The smallest ridge accepted. Below it the per-record systems of one- and two-point records
    /// stop factorising in floating point (an independent review found every such record of a
    /// 30-point grid failing at 1e-300), and such a record would silently drop out of the estimate
    /// (a non-finite row adds 0); at 1e-8 the fits already reach 275x the range's ceiling, so they
    /// are all clipped. 1e-6 keeps both away from the public choices a user can make.
    pub const MIN_RIDGE: f64 = 1e-6;

    /// Every check before a mechanism exists (so before any charge): the frame ([`Self::centre_of`]),
    /// the ridge finite and >= [`Self::MIN_RIDGE`] with every `ρ λ_1/λ_a` finite (J and the ceiling:
    /// [`TunedCovariance`]).
    fn new(tuned: TunedCovariance, basis: &MercerBasis, n: usize, frame: SparseFrame, ridge: f64) -> Result<Self> {
        let j = tuned.components();
        let values = &basis.eigenvalues()[..j];
        let penalty: Vec<f64> = values.iter().map(|l| ridge * (values[0] / l)).collect();
        if !(ridge.is_finite() && ridge >= Self::MIN_RIDGE) || penalty.iter().any(|p| !(p.is_finite() && *p > 0.0)) {
            return Err(EstimatorError::BadParameter {
                name: "ridge",
                value: ridge.into(),
                reason: "must be finite and >= 1e-6, with ridge * lambda_1 / lambda_J finite",
            });
        }
        let f = basis.eigenfunctions();
        let phi = (0..f.nrows()).flat_map(|g| (0..j).map(move |a| f[(g, a)])).collect();
        Ok(Self { tuned, frame, phi, penalty, ridge, n })
    }

    /// The default ridge ρ (chosen on DTI cca, Adelaide Mondays and S-2 at m = 5, ε = 1:
    /// docs/DESIGN.md §18.6).
    pub const DEFAULT_RIDGE: f64 = 1.0;

    /// The ridge ρ.
    pub fn ridge(&self) -> f64 {
        self.ridge
    }

    /// The number of components J.
    pub fn components(&self) -> usize {
        self.tuned.components()
    }

    /// The same mechanism whose releases choose their FPCA's components by `truncation`
    /// ([`TunedCovariance::with_truncation`]; post-processing).
    pub fn with_truncation(mut self, truncation: Truncation) -> Self {
        self.tuned = self.tuned.with_truncation(truncation);
        self
    }

    /// The ε of the bound stage (0: released at the ceiling) and of the covariance release.
    pub fn epsilons(&self) -> (f64, f64) {
        self.tuned.epsilons()
    }

    /// The charged stages and their total ([`TunedCovariance::plan`]).
    pub fn plan(&self) -> &fdp_core::StagePlan {
        self.tuned.plan()
    }

    /// **For audits: the exact loss of each stage** between the summaries of two neighbouring
    /// datasets, divided by its budget ([`TunedCovariance::stage_losses`]: the layout is the same).
    pub fn stage_losses(&self, a: &[f64], b: &[f64]) -> Result<Vec<(&'static str, f64)>> {
        self.tuned.stage_losses(a, b)
    }

    /// **The record's smoother** `c = (ΦᵀΦ + ρP)⁻¹ Φᵀ e` (module docs) of one record's observations
    /// (times on the grid's domain, as [`SparseCurves::record`] gives them). Not private on its own:
    /// what [`summarize`](Mechanism::summarize) clips and sums, public for studies (the non-private
    /// sparse benchmark).
    pub fn coefficients(&self, times: &[f64], values: &[f64]) -> Vec<f64> {
        let j = self.components();
        let (lo, hi) = self.frame.range();
        let centre = self.frame.centre();
        let grid = self.frame.grid();
        let mut gram = Mat::<f64>::from_fn(j, j, |a, b| if a == b { self.penalty[a] } else { 0.0 });
        let mut rhs = vec![0.0; j];
        let mut seen = false;
        for (t, y) in times.iter().zip(values) {
            // Times are finite (SparseCurves drops the rest), so `nearest` always answers.
            let Some(g) = grid.nearest(&[*t]) else { continue };
            let e = y.clamp(lo, hi) - centre[g];
            let row = &self.phi[g * j..(g + 1) * j];
            for a in 0..j {
                rhs[a] += e * row[a];
                for b in 0..j {
                    gram[(a, b)] += row[a] * row[b];
                }
            }
            seen = true;
        }
        if !seen {
            return vec![0.0; j];
        }
        // Positive definite (ρP ⪰ ρI); a factorisation that fails in floating point (not seen at
        // ridges >= MIN_RIDGE) gives a non-finite row, which adds 0 to every sum.
        fdp_mercer::linalg::solve_spd(gram.as_ref(), &rhs).unwrap_or_else(|| vec![f64::NAN; j])
    }

    fn sums(&self, data: &SparseCurves) -> Result<Vec<i128>> {
        self.frame.check_domain(data)?;
        let rows = self.tuned.row_sums();
        let mut acc = vec![0i128; self.tuned.width()];
        for i in 0..data.n() {
            let (times, values) = data.record(i);
            rows.add(&mut acc, &self.coefficients(times, values));
        }
        Ok(acc)
    }

    fn fingerprint(&self) -> u64 {
        let (lo, hi) = self.frame.range();
        let words = [self.tuned.fingerprint(), self.ridge.to_bits(), lo.to_bits(), hi.to_bits(), 0x7370_6172_7365_6376];
        fdp_core::state::fingerprint_of(words.into_iter().chain(self.frame.centre().iter().map(|c| c.to_bits())))
    }
}

impl Mechanism<SparseCurves> for SparseCovariance {
    type Output = Covariance;

    fn name(&self) -> &'static str {
        match Mechanism::<CurveSet<'_>>::guarantee(&self.tuned).delta() > 0.0 {
            true => "sparse_covariance_gaussian",
            false => "sparse_covariance_laplace",
        }
    }

    fn n(&self) -> Option<usize> {
        Some(self.n)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        Mechanism::<CurveSet<'_>>::guarantee(&self.tuned)
    }

    fn stages(&self) -> Vec<Stage> {
        Mechanism::<CurveSet<'_>>::stages(&self.tuned)
    }

    fn summarize(&self, data: &SparseCurves) -> Result<Vec<f64>> {
        if data.n() != self.n {
            return Err(EstimatorError::Shape { what: "number of records", expected: self.n, got: data.n() });
        }
        Ok(self.tuned.summary_of(&self.sums(data)?))
    }

    fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> Result<Release<Covariance>> {
        let (output, mut metadata) =
            Mechanism::<CurveSet<'_>>::privatize(&self.tuned, summary, rng, charge)?.into_parts();
        metadata.mechanism = self.name().into();
        if let Some(release) = metadata.stages.last_mut() {
            release.outcome += &format!(", each record's coefficients its own kernel-ridge fit (ridge {})", self.ridge);
        }
        Ok(Release::new(output, metadata))
    }

    /// An upper bound: the covariance's noise at the public ceiling.
    fn accuracy(&self) -> Accuracy {
        Mechanism::<CurveSet<'_>>::accuracy(&self.tuned)
    }

    fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<fdp_core::Result<Vec<(&'static str, f64)>>> {
        Some(self.stage_losses(a, b))
    }
}

impl MergeableMechanism<SparseCurves> for SparseCovariance {
    fn empty_state(&self) -> SummaryState {
        SummaryState::new(self.fingerprint(), self.tuned.width())
    }

    fn update_state(&self, state: &mut SummaryState, part: &SparseCurves) -> Result<()> {
        state.add(part.n() as u64, &self.sums(part)?)
    }

    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
        fdp_core::state::check_state_layout(state, &self.empty_state(), Some(self.n))?;
        Ok(self.tuned.summary_of(state.sums()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::tests::{adversarial, basis, ordinary};
    use fdp_core::{ClipNorm, Session};
    use fdp_mercer::Grid;

    fn build(b: &MercerBasis, n: usize, delta: Option<f64>, ceiling: f64, j: usize) -> SparseCovariance {
        let frame = SparseFrame::new(b.grid(), (0.0, 1.0)).unwrap();
        let (eps, ceiling) = (Epsilon::new(1.0).unwrap(), ClippingBound::l2(ceiling).unwrap());
        match delta {
            Some(d) => SparseCovariance::gaussian(b, n, eps, Delta::new(d).unwrap(), frame, ceiling, j, 1.0),
            None => SparseCovariance::laplace(b, n, eps, frame, ceiling, j, 1.0),
        }
        .unwrap()
    }

    /// The summaries of `n − 1` ordinary records plus each adversarial record in turn (huge values,
    /// NaN/∞, one point, all points at one time, 5000 points, outside the domain, empty; then
    /// records aimed at the constants: one point each at ±the range's edge at the two ends).
    fn neighbours(m: &SparseCovariance, n: usize) -> Vec<Vec<f64>> {
        let base = ordinary(n - 1);
        let aimed = [(vec![0.0], vec![1.0]), (vec![1.0], vec![0.0]), (vec![0.25, 0.75], vec![1.0, 0.0])];
        adversarial()
            .into_iter()
            .chain(aimed)
            .chain(ordinary(3))
            .map(|r| {
                let mut data = base.clone();
                data.push(r);
                m.summarize(&SparseCurves::new((0.0, 1.0), &data).unwrap()).unwrap()
            })
            .collect()
    }

    /// The worst ratio of each stage over every pair of `summaries` under `m`'s exact-loss law.
    fn worst(m: &SparseCovariance, summaries: &[Vec<f64>]) -> [f64; 2] {
        let mut worst = [0.0f64; 2];
        for a in summaries {
            for c in summaries {
                for (i, (_, ratio)) in m.stage_losses(a, c).unwrap().into_iter().enumerate() {
                    worst[i] = worst[i].max(ratio);
                }
            }
        }
        worst
    }

    /// **Exact loss** from the lattice indices over adversarial neighbours, both variants, J = 1, 3:
    /// every stage within its budget at every τ of the bound grid, and the release stage reached
    /// (> 0.5). **Power**: summaries clipped 100 times above what the noise was calibrated for (a
    /// miscalibrated mechanism) are caught.
    #[test]
    fn exact_loss_of_adversarial_neighbours_is_within_the_budget_and_the_check_has_power() {
        let b = basis();
        let n = 40;
        for delta in [None, Some(1e-6)] {
            for j in [1, 3] {
                let m = build(&b, n, delta, 1.0, j);
                let w = worst(&m, &neighbours(&m, n));
                assert!(w.iter().all(|r| *r <= 1.0 + 1e-12), "{delta:?} J = {j}: {w:?}");
                assert!(w[1] > 0.5, "{delta:?} J = {j}: the release stage reaches only {}", w[1]);
                // Calibrated for a ceiling of 0.01 (its bound grid 1e-4 ..= 0.01) while the records
                // are clipped at up to 1: the same pairs exceed the budget.
                let loose = build(&b, n, delta, 1.0, j);
                let tight = build(&b, n, delta, 0.01, j);
                let w = worst(&tight, &neighbours(&loose, n));
                assert!(w[1] > 1.5, "{delta:?} J = {j}: a miscalibrated release is not caught: {w:?}");
            }
        }
    }

    /// The record's smoother: zero without observations, finite on one point and on every point at
    /// one time, the L² projection of a dense record as the points grow, the range clamp on huge
    /// values; and bad records release a finite covariance charging exactly ε.
    #[test]
    fn the_smoother_on_edge_records_and_a_release_with_them() {
        let b = basis();
        let m = build(&b, 300, None, 1.0, 3);
        assert_eq!(m.coefficients(&[], &[]), vec![0.0; 3]);
        for (t, y) in adversarial() {
            let data = SparseCurves::new((0.0, 1.0), &[(t, y)]).unwrap();
            let (t, y) = data.record(0);
            let c = m.coefficients(t, y);
            assert!(c.iter().all(|v| v.is_finite()), "{c:?}");
        }
        // 1e300 at one time is the range's edge at that time.
        assert_eq!(m.coefficients(&[0.3; 5], &[1e300; 5]), m.coefficients(&[0.3; 5], &[1.0; 5]));
        // A dense record (every grid point, many times over): the projection of the centred curve.
        let points = b.grid().points().to_vec();
        let curve: Vec<f64> = points.iter().map(|t| 0.5 + 0.3 * (4.0 * t).sin()).collect();
        let reps = 200;
        let t: Vec<f64> = (0..reps).flat_map(|_| points.iter().copied()).collect();
        let y: Vec<f64> = (0..reps).flat_map(|_| curve.iter().copied()).collect();
        let c = m.coefficients(&t, &y);
        let phi = b.eigenfunctions();
        for (a, ca) in c.iter().enumerate() {
            let x: f64 = (0..40).map(|g| b.grid().weights()[g] * phi[(g, a)] * (curve[g] - 0.5)).sum();
            assert!((ca - x).abs() < 0.02 * x.abs().max(0.01), "component {a}: {ca} vs the projection {x}");
        }
        let mut records = ordinary(300 - adversarial().len());
        records.extend(adversarial());
        let data = SparseCurves::new((0.0, 1.0), &records).unwrap();
        let mut session = Session::pure(Epsilon::new(1.0).unwrap()).unwrap().with_seed(5);
        let release = session.release(&m, &data).unwrap();
        assert!(release.output().matrix().iter().all(|v| v.is_finite()));
        assert!(release.output().fpca(3).unwrap().eigenvalues().iter().all(|v| v.is_finite()));
        assert_eq!(session.ledger().len(), 2);
        assert!(session.remaining().0 < 1e-12);
        assert_eq!(release.metadata().mechanism, "sparse_covariance_laplace");
    }

    /// States merged from any partition, in any order, equal the one-pass summary bit for bit; a
    /// state of another mechanism is refused.
    #[test]
    fn merged_states_are_bit_identical() {
        let b = basis();
        let mut records = ordinary(500);
        records.extend(adversarial());
        let n = records.len();
        let data = SparseCurves::new((0.0, 1.0), &records).unwrap();
        let m = build(&b, n, Some(1e-6), 1.0, 4);
        let one_pass = m.summarize(&data).unwrap();
        let cuts = [0, 7, 130, 131, 400, n];
        let parts: Vec<Vec<usize>> = cuts.windows(2).map(|w| (w[0]..w[1]).collect()).collect();
        for order in [vec![0, 1, 2, 3, 4], vec![4, 3, 2, 1, 0], vec![2, 0, 4, 1, 3]] {
            let mut state = m.empty_state();
            for p in order {
                let mut part = m.empty_state();
                m.update_state(&mut part, &data.subset(&parts[p])).unwrap();
                state.merge(&part).unwrap();
            }
            assert_eq!(m.state_summary(&state).unwrap(), one_pass);
        }
        let other = build(&b, n, None, 1.0, 4);
        assert!(other.empty_state().merge(&m.empty_state()).is_err());
    }

    /// At a huge ε the release is the covariance of the records' coefficients (the estimator is
    /// right, not only private).
    #[test]
    fn accurate_at_large_epsilon() {
        let b = basis();
        let records = ordinary(2000);
        let data = SparseCurves::new((0.0, 1.0), &records).unwrap();
        let frame = SparseFrame::new(b.grid(), (0.0, 1.0)).unwrap();
        let eps = Epsilon::new(1e9).unwrap();
        let m = SparseCovariance::laplace(&b, 2000, eps, frame, ClippingBound::l2(1.0).unwrap(), 3, 1.0).unwrap();
        let release = m.release(&data, &mut NoiseRng::seeded(1), Charge::unaccounted()).unwrap();
        let rows: Vec<Vec<f64>> = (0..2000).map(|i| m.coefficients(data.record(i).0, data.record(i).1)).collect();
        let tau = release.metadata().clipping.unwrap().value();
        assert!(rows.iter().all(|r| ClipNorm::L2.norm(r) < tau), "no record is clipped at {tau}");
        let mean: Vec<f64> = (0..3).map(|a| rows.iter().map(|r| r[a]).sum::<f64>() / 2000.0).collect();
        for a in 0..3 {
            for c in 0..3 {
                let s = rows.iter().map(|r| r[a] * r[c]).sum::<f64>() / 2000.0 - mean[a] * mean[c];
                let got = release.output().matrix()[a * 3 + c];
                assert!((got - s).abs() < 1e-6 * (1.0 + s.abs()), "({a}, {c}): {got} vs {s}");
            }
        }
    }

    /// Every parameter is checked when the mechanism is built (before any charge): the ridge, a
    /// stated design, the grid, J, the bound's norm; and the data's n and domain before the summary.
    #[test]
    fn parameters_are_refused_up_front() {
        let b = basis();
        let frame = SparseFrame::new(b.grid(), (0.0, 1.0)).unwrap();
        let (eps, ceiling) = (Epsilon::new(1.0).unwrap(), ClippingBound::l2(1.0).unwrap());
        let make = |frame: SparseFrame, ceiling: ClippingBound, j: usize, ridge: f64| {
            SparseCovariance::laplace(&b, 50, eps, frame, ceiling, j, ridge)
        };
        for ridge in [0.0, -1.0, 5e-324, 1e-300, 9.9e-7, f64::NAN, f64::INFINITY, f64::MAX] {
            assert!(make(frame.clone(), ceiling, 3, ridge).is_err(), "ridge {ridge}");
        }
        assert!(make(frame.clone(), ceiling, 3, SparseCovariance::MIN_RIDGE).is_ok());
        assert!(make(frame.clone().with_design(&[1.0 / 40.0; 40]).unwrap(), ceiling, 3, 1.0).is_err());
        assert!(make(frame.clone(), ceiling, 0, 1.0).is_err());
        assert!(make(frame.clone(), ceiling, 65, 1.0).is_err());
        assert!(make(frame.clone(), ClippingBound::coefficient_l1(1.0).unwrap(), 3, 1.0).is_err());
        let other = SparseFrame::new(&Grid::midpoint(0.0, 1.0, 30).unwrap(), (0.0, 1.0)).unwrap();
        assert!(matches!(make(other, ceiling, 3, 1.0), Err(EstimatorError::GridMismatch)));
        let m = make(frame, ceiling, 3, 1.0).unwrap();
        let short = SparseCurves::new((0.0, 1.0), &ordinary(49)).unwrap();
        assert!(m.summarize(&short).is_err());
        let wide = SparseCurves::new((-1.0, 2.0), &ordinary(50)).unwrap();
        assert!(m.summarize(&wide).is_err());
    }
}
