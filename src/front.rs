//! Mechanisms chosen by name: what the `fdp` command line and the Python package share.
//!
//! A front door receives text and numbers (`--kernel matern32:0.1`, `mechanism="iclp_rkhs"`) and must
//! build exactly the mechanism a Rust user would, then release it through a
//! [`Session`]. Each request type here is validated once into the typed
//! parameters ([`Epsilon`], [`ClippingBound`], [`Stationary`]) and builds one value that implements
//! [`Mechanism`] — [`AnyMean`] on curve sets, [`AnyKde`] on points snapped to a grid, and the
//! KME layer's own mechanisms — so the front doors add no release path of their own and a release
//! made from Python or the shell is the one the same Rust call makes, bit for bit at a fixed seed.

use std::str::FromStr;

use fdp_core::{
    Accuracy, Charge, ClipNorm, ClippingBound, Error, LedgerFile, Mechanism, MergeableMechanism, ParamValue, Release,
    Result, Session, Sketch, Stage, SummaryState,
};
use fdp_data::CurveSet;
use fdp_estimators::covariance::Covariance;
use fdp_estimators::frame::{ceiling_from_range, range_floor_ratio, range_radius};
use fdp_estimators::{
    BasisKde, BasisMean, BernsteinKde, BernsteinMean, BoundSearch, GaussianMean, GridPoints, LaplaceMean, MeanSetup,
    PlugIn, SparseBinnedMean, SparseCovariance, SparseFrame, Truncation, TunedCovariance, TunedKind, TunedMean,
    density_kernel, plug_in_bandwidth,
};
use fdp_functional::{Curve, CurveReleaseExt};
use fdp_kme::{FeatureMap, M2mEstimator, PrivateSketch, SyntheticData, SyntheticSubspace, uniform_prior};
use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary, StationaryShape};
use fdp_noise::{Delta, Epsilon, NeighbourRelation, NoiseRng, PrivacyGuarantee};

/// **The grid rule every front door shares**: a 1-D curve grid is mapped affinely onto `[0, 1]` (its
/// first point to 0, its last to 1, the weights scaled alike) before a kernel meets it, so a kernel's
/// length-scale (`matern32:0.1`) is a fraction of the domain whatever the data's units — ages in
/// years, positions along a tract, half-hours. The grid is public, so the map is too. The command
/// line and Python both call this: the same data and spec give the same mechanism and, at a fixed
/// seed, the same bytes (the release lives on the mapped grid; the doors show it in the data's units).
/// A grid of one point, or already on `[0, 1]`, is unchanged.
pub fn unit_grid(grid: &Grid) -> Result<Grid> {
    Ok(if maps_to_unit(grid) { grid.rescaled(0.0, 1.0)? } else { grid.clone() })
}

/// Curves on their grid mapped by [`unit_grid`] (values unchanged: they were read, and repaired, on
/// the grid as given), as a view: the values are borrowed, never copied.
pub fn on_unit_interval<'b>(curves: &'b CurveSet<'_>) -> Result<CurveSet<'b>> {
    let view = curves.view();
    Ok(if maps_to_unit(curves.grid()) { view.rescaled(0.0, 1.0)? } else { view })
}

/// Whether [`unit_grid`] moves `grid`: a 1-D grid of an interval other than `[0, 1]`.
fn maps_to_unit(grid: &Grid) -> bool {
    matches!(grid.domain(), [(a, b)] if grid.dim() == 1 && a < b && (*a, *b) != (0.0, 1.0))
}

/// A δ given to a pure ε-DP mechanism would be silently ignored (and a reader of the request would
/// believe the release is (ε, δ)): refused, for the Gaussian-process mechanisms only take one.
fn no_delta_unless(takes_delta: bool, delta: Option<Delta>) -> Result<()> {
    match delta {
        Some(d) if !takes_delta => Err(Error::BadParameter {
            name: "delta",
            value: d.get().into(),
            reason: "only the Gaussian-process mechanisms take a δ; this one is pure ε-DP (δ = 0): drop δ",
        }),
        _ => Ok(()),
    }
}

/// Refuses the parameter `name`, given, under a `method` that does not use it (`users`: the
/// methods that do), instead of ignoring it.
fn only_for(name: &'static str, given: bool, used: bool, method: &str, users: &str) -> Result<()> {
    if given && !used {
        return Err(Error::NotApplicable { name, other: "method", value: method.into(), users: users.into() });
    }
    Ok(())
}

fn bad_name(what: &'static str, spec: &str, reason: &'static str) -> Error {
    Error::BadSpec { what, spec: spec.into(), reason }
}

/// The mean-curve mechanisms, by the names the front doors use (`iclp_rkhs` or `iclp-rkhs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MeanMethod {
    /// ICLP-RKHS, bound in the coefficient l1 norm (`l1:TAU`).
    IclpRkhs,
    /// ICLP-l1, bound in L2.
    IclpL1,
    /// IID Laplace on the leading components, bound in L2.
    IidLaplace,
    /// The Gaussian process ((ε, δ)-DP), bound in L2.
    GaussianProcess,
    /// Bernstein polynomials through a noisy lattice, bound in the sup norm.
    Bernstein,
}

impl MeanMethod {
    /// Its name at the front doors (what [`FromStr`] reads).
    pub fn name(self) -> &'static str {
        match self {
            Self::IclpRkhs => "iclp_rkhs",
            Self::IclpL1 => "iclp_l1",
            Self::IidLaplace => "iid_laplace",
            Self::GaussianProcess => "gaussian_process",
            Self::Bernstein => "bernstein",
        }
    }

    /// The norm the mechanism clips records in (its bound's norm).
    pub fn norm(self) -> ClipNorm {
        match self {
            Self::IclpRkhs => ClipNorm::CoefficientL1,
            Self::IclpL1 | Self::IidLaplace | Self::GaussianProcess => ClipNorm::L2,
            Self::Bernstein => ClipNorm::Sup,
        }
    }
}

impl FromStr for MeanMethod {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "iclp_rkhs" => Self::IclpRkhs,
            "iclp_l1" => Self::IclpL1,
            "iid_laplace" => Self::IidLaplace,
            "gaussian_process" | "gp" => Self::GaussianProcess,
            "bernstein" => Self::Bernstein,
            _ => {
                return Err(bad_name(
                    "the mean mechanism",
                    s,
                    "expected iclp_rkhs, iclp_l1, iid_laplace, gaussian_process or bernstein",
                ));
            }
        })
    }
}

/// How a mechanism's bound and regularisation are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TuningMode {
    /// From the data under DP, inside the same ε ([`TunedMean`]); the bound given is the ceiling.
    #[default]
    Private,
    /// The bound as given and the plug-in rule (public quantities only), or the values given.
    PlugIn,
}

impl FromStr for TuningMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "private" => Ok(Self::Private),
            "plug_in" | "plugin" => Ok(Self::PlugIn),
            _ => Err(bad_name("the tuning", s, "expected private or plug_in")),
        }
    }
}

/// A private mean curve, as the front doors ask for it.
#[derive(Debug, Clone, PartialEq)]
pub struct MeanRequest {
    /// Which mechanism.
    pub method: MeanMethod,
    /// The kernel, on the curves' grid.
    pub kernel: Stationary,
    /// The clipping bound in the mechanism's norm (the ceiling under private tuning). `None`: the
    /// ceiling that follows from the public `range` ([`ceiling_from_range`]).
    pub bound: Option<ClippingBound>,
    /// The total ε of the release (every stage included).
    pub epsilon: Epsilon,
    /// δ, for the Gaussian process only.
    pub delta: Option<Delta>,
    /// Private (default) or plug-in tuning.
    pub tuning: TuningMode,
    /// A public constant the records are centred at before clipping (added back to the release).
    /// With a `range` and no centre: the middle of the range.
    pub centre: Option<f64>,
    /// **The public range** `(lo, hi)` of the curves' values (what was measured, never the records):
    /// every release is clamped to it (post-processing, [`TunedMean::within`]) and, without a
    /// `bound`, the ceiling in the mechanism's norm follows from it. Private tuning only.
    pub range: Option<(f64, f64)>,
    /// Plug-in tuning only: ψ instead of the plug-in rule's (ICLP-RKHS, ICLP-l1, Gaussian process).
    pub psi: Option<f64>,
    /// Plug-in tuning only: the number of components of IID Laplace (default `⌊n^{1/3}⌋`).
    pub components: Option<usize>,
    /// Plug-in tuning only: the Bernstein degree (default 10).
    pub degree: Option<usize>,
}

impl MeanRequest {
    /// The privately tuned `method` with everything else at its default.
    pub fn new(method: MeanMethod, kernel: Stationary, bound: ClippingBound, epsilon: Epsilon) -> Self {
        Self { bound: Some(bound), range: None, ..Self::in_range(method, kernel, (0.0, 1.0), epsilon) }
    }

    /// The privately tuned `method` in a public frame: values in `[lo, hi]`, centred at the middle
    /// of the range, the ceiling in the method's norm derived from the range
    /// ([`ceiling_from_range`]), every release clamped to the range.
    pub fn in_range(method: MeanMethod, kernel: Stationary, (lo, hi): (f64, f64), epsilon: Epsilon) -> Self {
        Self {
            method,
            kernel,
            bound: None,
            epsilon,
            delta: None,
            tuning: TuningMode::Private,
            centre: None,
            range: Some((lo, hi)),
            psi: None,
            components: None,
            degree: None,
        }
    }

    /// The centre the records are centred at: the one given, else the middle of the range, if any.
    pub fn effective_centre(&self) -> Option<f64> {
        self.centre.or(self.range.map(|(lo, hi)| lo + (hi - lo) / 2.0))
    }

    /// **Public choices that are almost certainly mistakes**, as sentences for the curator (they
    /// depend on the request and the grid only, never on the data): a kernel length-scale below half
    /// the grid's smallest spacing (neighbouring grid points are then nearly uncorrelated under the
    /// kernel — Matérn 3/2 correlation 0.14 at 2ρ — so the basis can follow nothing smoother than the
    /// noise). `grid` is the one the kernel meets: [`unit_grid`]'s, at every front door.
    pub fn warnings(&self, grid: &Grid) -> Vec<String> {
        let mut warnings = Vec::new();
        let points = grid.points();
        if grid.dim() == 1 && points.len() > 1 {
            let spacing = points.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min);
            let rho = self.kernel.rho();
            if rho < spacing / 2.0 {
                warnings.push(format!(
                    "the kernel's length-scale {rho} is below half the grid's spacing {spacing:.4} (on the grid the \
                     kernel meets, [{:.4}, {:.4}]): the basis can follow nothing smoother than the noise; choose a \
                     length-scale of at least {:.4} (a tenth of the domain, or the spacing if larger)",
                    points[0],
                    points[points.len() - 1],
                    ((points[points.len() - 1] - points[0]) / 10.0).max(spacing)
                ));
            }
        }
        warnings
    }

    /// The mechanism for `n` curves on `grid` (public; the curves are not read).
    pub fn build(&self, grid: &Grid, n: usize) -> Result<AnyMean> {
        no_delta_unless(self.method == MeanMethod::GaussianProcess, self.delta)?;
        if let Some(c) = self.centre.filter(|c| !c.is_finite()) {
            return Err(Error::BadParameter { name: "centre", value: c.into(), reason: "must be finite" });
        }
        let centre = self.effective_centre();
        if let Some((lo, hi)) = self.range {
            range_radius(lo, hi, centre)?;
            if self.tuning != TuningMode::Private {
                return Err(Error::BadParameter {
                    name: "public range",
                    value: (lo, hi).into(),
                    reason: "is used by private tuning (the default); with plug-in tuning give the bound",
                });
            }
        }
        let basis = MercerBasis::build(self.kernel, grid.clone(), BasisOptions::default())?;
        let reference = centre.map(|c| vec![c; grid.len()]);
        let bound = match (self.bound, self.range) {
            (Some(bound), _) => bound,
            (None, Some((lo, hi))) => ceiling_from_range(self.method.norm(), &basis, lo, hi, centre)?,
            (None, None) => {
                return Err(Error::BadParameter {
                    name: "bound",
                    value: ParamValue::Missing,
                    reason: "give a clipping bound in the mechanism's norm or a public range of the values",
                });
            }
        };
        let plug_in_only = [
            (self.psi.map(ParamValue::from), "psi"),
            (self.components.map(ParamValue::from), "components"),
            (self.degree.map(ParamValue::from), "degree"),
        ];
        if self.tuning == TuningMode::Private
            && let Some((Some(value), name)) = plug_in_only.into_iter().find(|(given, _)| given.is_some())
        {
            return Err(Error::BadParameter {
                name,
                value,
                reason: "is chosen privately under private tuning; give it with plug-in tuning only",
            });
        }
        let method = self.method.name();
        let penalised = matches!(self.method, MeanMethod::IclpRkhs | MeanMethod::IclpL1 | MeanMethod::GaussianProcess);
        only_for("psi", self.psi.is_some(), penalised, method, "iclp_rkhs, iclp_l1 or gaussian_process")?;
        only_for(
            "components",
            self.components.is_some(),
            self.method == MeanMethod::IidLaplace,
            method,
            "iid_laplace",
        )?;
        only_for("degree", self.degree.is_some(), self.method == MeanMethod::Bernstein, method, "bernstein")?;
        let delta = || {
            self.delta.ok_or(Error::BadParameter {
                name: "delta",
                value: ParamValue::Missing,
                reason: "the Gaussian process needs δ > 0",
            })
        };
        if self.tuning == TuningMode::Private {
            let kind = match self.method {
                MeanMethod::IclpRkhs => TunedKind::IclpRkhs,
                MeanMethod::IclpL1 => TunedKind::IclpL1,
                MeanMethod::IidLaplace => TunedKind::IidLaplace,
                MeanMethod::GaussianProcess => TunedKind::GaussianProcess(delta()?),
                MeanMethod::Bernstein => TunedKind::Bernstein,
            };
            let mut tuned = TunedMean::new(kind, &basis, n, self.epsilon, bound)?;
            if let Some(r) = reference {
                tuned = tuned.centred_at(r)?;
            }
            if let Some((lo, hi)) = self.range {
                tuned = tuned.within(lo, hi)?;
                if self.bound.is_none() {
                    tuned = tuned
                        .with_bound_search(BoundSearch::down_to(range_floor_ratio(self.method.norm(), &basis))?)?;
                }
            }
            return Ok(AnyMean::Tuned(tuned));
        }
        let mut setup = MeanSetup::new(n, self.epsilon, bound)?;
        if let Some(r) = reference {
            setup = setup.centred_at(r)?;
        }
        // Each method's own plug-in rule only (a ψ that overflows stops only the methods that use it).
        Ok(match self.method {
            MeanMethod::IclpRkhs => {
                let regularisation = PlugIn::rkhs_for(&basis, &setup, self.psi)?;
                AnyMean::Laplace(BasisMean::iclp_rkhs(&basis, setup, regularisation)?)
            }
            MeanMethod::IclpL1 => {
                let regularisation = PlugIn::l1_for(&basis, &setup, self.psi)?;
                AnyMean::Laplace(BasisMean::iclp_l1(&basis, setup, regularisation)?)
            }
            MeanMethod::IidLaplace => {
                let components = self.components.unwrap_or(PlugIn::iid_components_for(&basis, n));
                AnyMean::Laplace(BasisMean::iid_laplace(&basis, setup, components)?)
            }
            MeanMethod::GaussianProcess => {
                let regularisation = PlugIn::rkhs_for(&basis, &setup, self.psi)?;
                AnyMean::Gaussian(BasisMean::gaussian_process(&basis, setup, regularisation, delta()?)?)
            }
            MeanMethod::Bernstein => AnyMean::Bernstein(BernsteinMean::new(grid, setup, self.degree.unwrap_or(10))?),
        })
    }
}

/// Implements [`Mechanism`] for an enum whose variants each hold a mechanism on `$data` with output
/// `$output`, by dispatch.
macro_rules! dispatch_mechanism {
    ($enum:ident, $data:ty, $output:ty, [$($variant:ident),+]) => {
        impl Mechanism<$data> for $enum {
            type Output = $output;
            fn name(&self) -> &'static str {
                match self { $(Self::$variant(m) => m.name()),+ }
            }
            fn n(&self) -> Option<usize> {
                match self { $(Self::$variant(m) => m.n()),+ }
            }
            fn guarantee(&self) -> PrivacyGuarantee {
                match self { $(Self::$variant(m) => m.guarantee()),+ }
            }
            fn summarize(&self, data: &$data) -> Result<Vec<f64>> {
                match self { $(Self::$variant(m) => m.summarize(data)),+ }
            }
            fn privatize(&self, summary: &[f64], rng: &mut NoiseRng, charge: Charge) -> Result<Release<$output>> {
                match self { $(Self::$variant(m) => m.privatize(summary, rng, charge)),+ }
            }
            fn accuracy(&self) -> Accuracy {
                match self { $(Self::$variant(m) => m.accuracy()),+ }
            }
            fn stages(&self) -> Vec<Stage> {
                match self { $(Self::$variant(m) => m.stages()),+ }
            }
            fn exact_losses(&self, a: &[f64], b: &[f64]) -> Option<Result<Vec<(&'static str, f64)>>> {
                match self { $(Self::$variant(m) => m.exact_losses(a, b)),+ }
            }
        }
    };
}

/// Implements [`MergeableMechanism`] for an enum of mergeable mechanisms on `$data`, by dispatch.
macro_rules! dispatch_mergeable {
    ($enum:ident, $data:ty, [$($variant:ident),+]) => {
        impl MergeableMechanism<$data> for $enum {
            fn empty_state(&self) -> SummaryState {
                match self { $(Self::$variant(m) => m.empty_state()),+ }
            }
            fn update_state(&self, state: &mut SummaryState, part: &$data) -> Result<()> {
                match self { $(Self::$variant(m) => m.update_state(state, part)),+ }
            }
            fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>> {
                match self { $(Self::$variant(m) => m.state_summary(state)),+ }
            }
        }
    };
}

/// **The default mean of sparse curves** ([`SparseBinnedMean`]: privately tuned) for `n` records on
/// the public `grid` (after the front doors' grid rule: [`unit_grid`]), values in the public
/// `range`, centred at `centre` (default: the middle of the range), with the public `design` (the
/// probability of an observation at each grid point) if one is stated, else the design estimated
/// privately; `kernel` sets the basis the release is represented in; pure ε-DP (a δ is refused).
/// Public quantities only.
#[allow(clippy::too_many_arguments)]
pub fn sparse_mean(
    grid: &Grid,
    kernel: Stationary,
    range: (f64, f64),
    centre: Option<f64>,
    design: Option<&[f64]>,
    epsilon: Epsilon,
    delta: Option<Delta>,
    n: usize,
) -> Result<SparseBinnedMean> {
    no_delta_unless(false, delta)?;
    let frame = SparseFrame::new(grid, range)?;
    let frame = match design {
        Some(p) => frame.with_design(p)?,
        None => frame,
    };
    let frame = match centre {
        Some(c) => {
            range_radius(range.0, range.1, Some(c))?;
            frame.centred_at(vec![c; grid.len()])?
        }
        None => frame,
    };
    let basis = MercerBasis::build(kernel, grid.clone(), BasisOptions::default())?;
    SparseBinnedMean::new(&basis, n, epsilon, frame)
}

/// Any mean-curve mechanism a [`MeanRequest`] builds; one [`Mechanism`] on curve sets.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum AnyMean {
    /// Privately tuned (bound, then pilot or release, then SURE).
    Tuned(TunedMean),
    /// ICLP-RKHS, ICLP-l1 or IID Laplace with public parameters.
    Laplace(LaplaceMean),
    /// The Gaussian process with public parameters.
    Gaussian(GaussianMean),
    /// Bernstein with public parameters.
    Bernstein(BernsteinMean),
}

dispatch_mechanism!(AnyMean, CurveSet<'_>, Curve, [Tuned, Laplace, Gaussian, Bernstein]);
dispatch_mergeable!(AnyMean, CurveSet<'_>, [Tuned, Laplace, Gaussian, Bernstein]);

/// The density mechanisms (on a 1-D grid), by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KdeMethod {
    /// The ICLP KDE (Theorem 14), pure ε-DP.
    Iclp,
    /// Hall et al.'s Gaussian-process KDE, (ε, δ)-DP.
    GaussianProcess,
    /// IID Laplace on the leading components of the KDE.
    IidLaplace,
    /// Bernstein polynomials through the KDE on a noisy lattice.
    Bernstein,
}

impl KdeMethod {
    /// Its name at the front doors (what [`FromStr`] reads).
    pub fn name(self) -> &'static str {
        match self {
            Self::Iclp => "iclp",
            Self::GaussianProcess => "gaussian_process",
            Self::IidLaplace => "iid_laplace",
            Self::Bernstein => "bernstein",
        }
    }
}

impl FromStr for KdeMethod {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "iclp" => Self::Iclp,
            "gaussian_process" | "gp" => Self::GaussianProcess,
            "iid_laplace" => Self::IidLaplace,
            "bernstein" => Self::Bernstein,
            _ => {
                return Err(bad_name(
                    "the density mechanism",
                    s,
                    "expected iclp, gaussian_process, iid_laplace or bernstein",
                ));
            }
        })
    }
}

/// A private density estimate of points in a public interval, as the front doors ask for it.
#[derive(Debug, Clone, PartialEq)]
pub struct KdeRequest {
    /// Which mechanism.
    pub method: KdeMethod,
    /// The public domain `[lo, hi]`; points outside go to the nearest end.
    pub domain: (f64, f64),
    /// Grid points on the domain (midpoint rule).
    pub grid_points: usize,
    /// Gaussian or exponential density kernel.
    pub shape: StationaryShape,
    /// The bandwidth; `None`: the public plug-in `0.15 (hi - lo) n^{-1/5}`.
    pub bandwidth: Option<f64>,
    /// The total ε.
    pub epsilon: Epsilon,
    /// δ, for the Gaussian process only.
    pub delta: Option<Delta>,
    /// The operator power η of the ICLP and GP KDEs (default 1.25).
    pub eta: f64,
    /// IID Laplace components (default `⌊n^{1/3}⌋`).
    pub components: Option<usize>,
    /// Bernstein degree (default 20).
    pub degree: Option<usize>,
}

impl KdeRequest {
    /// `method` on `[lo, hi]` with 200 grid points, a Gaussian kernel and the plug-in bandwidth.
    pub fn new(method: KdeMethod, domain: (f64, f64), epsilon: Epsilon) -> Self {
        Self {
            method,
            domain,
            grid_points: 200,
            shape: StationaryShape::Gaussian,
            bandwidth: None,
            epsilon,
            delta: None,
            eta: 1.25,
            components: None,
            degree: None,
        }
    }

    /// The grid the density is released on (at most 2^27 points; the basis methods 4096).
    pub fn grid(&self) -> Result<Grid> {
        Ok(Grid::midpoint(self.domain.0, self.domain.1, self.grid_points)?)
    }

    /// The mechanism for `n` points (public).
    pub fn build(&self, n: usize) -> Result<AnyKde> {
        no_delta_unless(self.method == KdeMethod::GaussianProcess, self.delta)?;
        let method = self.method.name();
        only_for("components", self.components.is_some(), self.method == KdeMethod::IidLaplace, method, "iid_laplace")?;
        only_for("degree", self.degree.is_some(), self.method == KdeMethod::Bernstein, method, "bernstein")?;
        if self.method != KdeMethod::Bernstein {
            // The basis' own cap, before the grid is built (a count of 10^8 would take seconds and
            // gigabytes to be refused there).
            MercerBasis::dense_points("grid_points", self.grid_points)?;
        }
        let grid = self.grid()?;
        let bandwidth =
            self.bandwidth.unwrap_or_else(|| plug_in_bandwidth(n, 1, 0.15 * (self.domain.1 - self.domain.0)));
        let kernel = density_kernel(self.shape, bandwidth, 1)?;
        if self.method == KdeMethod::Bernstein {
            return Ok(AnyKde::Bernstein(BernsteinKde::new(
                kernel,
                &grid,
                n,
                self.epsilon,
                self.degree.unwrap_or(20),
            )?));
        }
        let basis = MercerBasis::build(kernel, grid, BasisOptions::default())?;
        Ok(match self.method {
            KdeMethod::Iclp => AnyKde::Laplace(BasisKde::iclp(&basis, n, self.epsilon, self.eta)?),
            KdeMethod::IidLaplace => {
                let m = self.components.unwrap_or(PlugIn::iid_components_for(&basis, n));
                AnyKde::Laplace(BasisKde::iid_laplace(&basis, n, self.epsilon, m)?)
            }
            _ => {
                let delta = self.delta.ok_or(Error::BadParameter {
                    name: "delta",
                    value: ParamValue::Missing,
                    reason: "the Gaussian-process KDE needs δ > 0",
                })?;
                AnyKde::Gaussian(BasisKde::gaussian_process(&basis, n, self.epsilon, self.eta, delta)?)
            }
        })
    }
}

/// Any density mechanism a [`KdeRequest`] builds; one [`Mechanism`] on snapped points.
#[derive(Debug, Clone)]
pub enum AnyKde {
    /// ICLP or IID Laplace KDE.
    Laplace(BasisKde<fdp_noise::LatticeLaplace>),
    /// Gaussian-process KDE.
    Gaussian(BasisKde<fdp_noise::LatticeGaussian>),
    /// Bernstein KDE.
    Bernstein(BernsteinKde),
}

dispatch_mechanism!(AnyKde, GridPoints, Curve, [Laplace, Gaussian, Bernstein]);
dispatch_mergeable!(AnyKde, GridPoints, [Laplace, Gaussian, Bernstein]);

/// Balog et al.'s Algorithm 1 as the front doors ask for it: M public synthetic points drawn from
/// `N(centre, scale² I)` with a public seed, weights released by the Gaussian mechanism.
#[derive(Debug, Clone, PartialEq)]
pub struct KmeRequest {
    /// A Gaussian kernel on `R^D` (its ρ).
    pub kernel: Stationary,
    /// The public centre of the synthetic points (length D).
    pub centre: Vec<f64>,
    /// Their public spread.
    pub scale: f64,
    /// How many synthetic points.
    pub synthetic_points: usize,
    /// The seed of the synthetic points (public randomness; not the noise).
    pub points_seed: u64,
    /// ε and δ of the release.
    pub epsilon: Epsilon,
    pub delta: Delta,
}

impl KmeRequest {
    /// The mechanism for `n` records (public).
    pub fn build(&self, n: usize) -> Result<SyntheticData> {
        if let Some(c) = self.centre.iter().find(|c| !c.is_finite()) {
            return Err(Error::BadParameter { name: "centre", value: (*c).into(), reason: "must be finite" });
        }
        let subspace = SyntheticSubspace::from_wide_gaussian(
            self.kernel,
            &self.centre,
            self.scale,
            self.synthetic_points,
            self.points_seed,
        )?;
        subspace.mechanism(n, self.epsilon, self.delta)
    }
}

/// The sketch feature maps, by name, as the front doors ask for them (points in `[0, 1]^D`).
#[derive(Debug, Clone, PartialEq)]
pub struct SketchRequest {
    /// `rff`, `race` or `hist`.
    pub map: String,
    /// D.
    pub dim: usize,
    /// RFF frequency pairs, RACE repetitions, or histogram bins.
    pub size: usize,
    /// RFF bandwidth σ, or RACE bucket width.
    pub width: f64,
    /// RACE buckets per repetition.
    pub buckets: usize,
    /// The seed of the random features (public randomness).
    pub map_seed: u64,
    /// ε (add/remove-one neighbours: the sketch is a sum with a noisy count).
    pub epsilon: Epsilon,
}

impl SketchRequest {
    /// The sketch mechanism.
    pub fn build(&self) -> Result<PrivateSketch> {
        let map = match self.map.trim().to_ascii_lowercase().as_str() {
            "rff" => FeatureMap::rff(self.dim, self.size, self.width, self.map_seed)?,
            "race" => FeatureMap::race(self.dim, self.size, self.buckets, self.width, self.map_seed)?,
            "hist" => FeatureMap::hist(self.dim, self.size)?,
            _ => return Err(bad_name("the feature map", &self.map, "expected rff, race or hist")),
        };
        PrivateSketch::new(map, self.epsilon)
    }
}

/// What M2M estimation reads off a released sketch: per-coordinate means, the covariance (row-major
/// D x D), from the implicit weights on `prior_points` public uniform points of `[0, 1]^D`.
#[derive(Debug, Clone)]
pub struct M2mSummary {
    /// Estimated `E x_j`.
    pub means: Vec<f64>,
    /// Estimated covariance, row-major.
    pub covariance: Vec<f64>,
    /// The M2M estimator itself, for further queries (CDFs, box fractions).
    pub estimator: M2mEstimator,
}

/// The number of public uniform prior points M2M estimation uses unless told otherwise: every front
/// door's default.
pub const M2M_PRIOR_POINTS: usize = 2000;
/// The seed of those prior points (public randomness) unless told otherwise: every front door's
/// default, so the CLI and Python read the same estimates off the same sketch.
pub const M2M_PRIOR_SEED: u64 = 0;

/// M2M estimates from a released sketch (post-processing: no budget).
pub fn m2m_summary(
    mechanism: &PrivateSketch,
    release: &Release<Sketch>,
    prior_points: usize,
    prior_seed: u64,
) -> Result<M2mSummary> {
    let prior = uniform_prior(mechanism.map().dim(), prior_points, prior_seed)?;
    let estimator = M2mEstimator::new(mechanism, release, prior)?;
    Ok(M2mSummary { means: estimator.means(), covariance: estimator.covariance(), estimator })
}

/// A session for a front door: continued from the ledger file at `ledger` if it exists, else a new
/// one with budget `(total_epsilon, total_delta)` under `relation` (the ledger's own budget wins when
/// it exists). With a ledger file the file stays locked from this load until the [`FrontSession`] is
/// dropped, so parallel runs against one ledger never overspend or lose an entry; a ledger that
/// does not verify is refused. `seed`: reproducible noise (recorded in every release and ledger
/// entry).
pub fn open_session(
    ledger: Option<&std::path::Path>,
    relation: NeighbourRelation,
    total_epsilon: Epsilon,
    total_delta: Option<Delta>,
    seed: Option<u64>,
) -> Result<FrontSession> {
    let create = || Session::new(relation, total_epsilon, total_delta);
    let seeded = |session: Session| match seed {
        Some(s) => session.with_seed(s),
        None => session,
    };
    Ok(match ledger {
        Some(path) => FrontSession::File(LedgerFile::open(path, create)?.with_seed(seed)),
        None => FrontSession::Memory(seeded(create()?)),
    })
}

/// The session a front door releases through: in memory, or kept in a locked ledger file.
#[derive(Debug)]
pub enum FrontSession {
    /// A ledger file, locked until this value is dropped.
    File(LedgerFile),
    /// No ledger file: the session lives as long as the process.
    Memory(Session),
}

impl FrontSession {
    /// The session.
    pub fn session(&self) -> &Session {
        match self {
            Self::File(file) => file.session(),
            Self::Memory(session) => session,
        }
    }

    /// The session, mutably (to release through it).
    pub fn session_mut(&mut self) -> &mut Session {
        match self {
            Self::File(file) => file.session_mut(),
            Self::Memory(session) => session,
        }
    }

    /// Writes the ledger file atomically (nothing to do in memory).
    pub fn commit(&self) -> Result<()> {
        match self {
            Self::File(file) => file.commit(),
            Self::Memory(_) => Ok(()),
        }
    }
}

/// Writes `release.json`, `curves.svg` (the released curve only: a report is for publication, so no
/// record is drawn) and `report.md` (what was released, each stage, the privacy unit, the session's
/// ledger and `notes`) into `out`; returns the report's path. Everything written is the release,
/// its public metadata, or `notes`: give no note that describes the data (repair counts, rows per
/// person) — those go to [`write_local_log`].
pub fn write_curve_report(
    out: &std::path::Path,
    title: &str,
    release: &Release<Curve>,
    session: &Session,
    notes: &[String],
    axes: &FigureAxes,
) -> Result<std::path::PathBuf> {
    use fdp_report::{PALETTE, ReportDir, Series};
    let report_err = |e: fdp_report::ReportError| Error::Write(e.to_string());
    let dir = ReportDir::create(out).map_err(report_err)?;
    dir.write_text("release.json", &release.to_json()?).map_err(report_err)?;
    let series = vec![Series::from_release(
        if release.output().noise_sd().is_some() { "private release (±2 sd noise band)" } else { "private release" },
        release,
        PALETTE[1],
    )];
    let figure = axes.figure(release.metadata(), release.grid().points(), series)?;
    figure.write_svg(&dir.file("curves.svg"), 900, 560).map_err(report_err)?;
    let mut md = format!("# {title}\n\n![release](curves.svg)\n\n");
    md += &release_tables(release.metadata(), session, notes);
    dir.write_text("report.md", &md).map_err(report_err)
}

/// A figure's title: the mechanism's display name, ε (and δ), and n (persons where the unit is one).
fn figure_title(metadata: &fdp_core::ReleaseMetadata) -> String {
    let mut title = format!("{}: ε = {}", fdp_report::display_name(&metadata.mechanism), metadata.guarantee.epsilon());
    if metadata.guarantee.delta() > 0.0 {
        title += &format!(", δ = {:e}", metadata.guarantee.delta());
    }
    if let Some(n) = metadata.n {
        title += &format!(", n = {n}");
    }
    if let fdp_core::PrivacyUnit::Person { .. } = metadata.privacy_unit {
        title += " persons";
    }
    title
}

/// **A privately tuned covariance operator and its FPCA** ([`TunedCovariance`]) in a public frame:
/// values in `range`, centred at `centre` (default: the middle of the range), J = `components`
/// leading components of `kernel`'s basis, the L2 ceiling from the range
/// ([`ceiling_from_range`]); Laplace (pure ε) or, with δ, Gaussian.
#[derive(Debug, Clone)]
pub struct FpcaRequest {
    /// The kernel whose eigenbasis the covariance is released in (on the grid mapped onto [0, 1]).
    pub kernel: Stationary,
    /// The public range of the values.
    pub range: (f64, f64),
    /// The public centre (default: the middle of the range).
    pub centre: Option<f64>,
    /// J, the number of leading basis components (1 ..= `TunedCovariance::MAX_COMPONENTS`).
    pub components: usize,
    /// The total ε (the bound stage and the release).
    pub epsilon: Epsilon,
    /// δ for the Gaussian variant; `None`: Laplace, pure ε.
    pub delta: Option<Delta>,
    /// How the FPCA chooses its components among the J released ([`Truncation`]).
    pub truncation: Truncation,
}

impl FpcaRequest {
    /// The mechanism for `n` curves on `grid` (after the grid rule, [`unit_grid`]); public only.
    pub fn build(&self, grid: &Grid, n: usize) -> Result<TunedCovariance> {
        let (basis, ceiling, centre) = self.frame(grid)?;
        let reference = Some(vec![centre; grid.len()]);
        let mechanism = match self.delta {
            Some(d) => TunedCovariance::gaussian(&basis, n, self.epsilon, d, ceiling, self.components, reference),
            None => TunedCovariance::laplace(&basis, n, self.epsilon, ceiling, self.components, reference),
        };
        Ok(mechanism?.with_truncation(self.truncation))
    }

    /// **The same request for sparse curves** ([`SparseCovariance`]): each record's own kernel-ridge
    /// fit (public `ridge`) onto the J components, then the same stages, in the same frame (the
    /// range, the centre, the ceiling). `grid` after the grid rule; public only.
    pub fn build_sparse(&self, grid: &Grid, n: usize, ridge: f64) -> Result<SparseCovariance> {
        let (basis, ceiling, centre) = self.frame(grid)?;
        let frame = SparseFrame::new(grid, self.range)?.centred_at(vec![centre; grid.len()])?;
        let mechanism = match self.delta {
            Some(d) => SparseCovariance::gaussian(&basis, n, self.epsilon, d, frame, ceiling, self.components, ridge),
            None => SparseCovariance::laplace(&basis, n, self.epsilon, frame, ceiling, self.components, ridge),
        };
        Ok(mechanism?.with_truncation(self.truncation))
    }

    /// The basis on `grid`, the L2 ceiling from the range, the centre (checked inside the range).
    fn frame(&self, grid: &Grid) -> Result<(MercerBasis, ClippingBound, f64)> {
        let (lo, hi) = self.range;
        let centre = self.centre.unwrap_or(lo + (hi - lo) / 2.0);
        range_radius(lo, hi, Some(centre))?;
        let basis = MercerBasis::build(self.kernel, grid.clone(), BasisOptions::default())?;
        let ceiling = ceiling_from_range(ClipNorm::L2, &basis, lo, hi, Some(centre))?;
        Ok((basis, ceiling, centre))
    }
}

/// Writes a covariance release's report into `out`: `release.json`, `fpca.svg` (the leading `k`
/// eigenfunctions in the data's units, each with its share of the released covariance) and `report.md` (the
/// eigenvalues, the stages, the metadata, the ledger and the notes). Returns the report's path.
pub fn write_fpca_report(
    out: &std::path::Path,
    title: &str,
    release: &Release<Covariance>,
    k: usize,
    session: &Session,
    notes: &[String],
    axes: &FigureAxes,
) -> Result<std::path::PathBuf> {
    use fdp_report::{PALETTE, ReportDir, Series};
    let report_err = |e: fdp_report::ReportError| Error::Write(e.to_string());
    let fpca = release.output().fpca(k)?;
    let dir = ReportDir::create(out).map_err(report_err)?;
    dir.write_text("release.json", &release.to_json()?).map_err(report_err)?;
    let series = fpca
        .eigenfunctions()
        .iter()
        .zip(fpca.explained_variance())
        .enumerate()
        .map(|(i, (f, share))| {
            Series::new(
                format!("component {} ({:.0}% of the released covariance)", i + 1, 100.0 * share),
                f.clone(),
                PALETTE[i % PALETTE.len()],
            )
        })
        .collect();
    let figure = axes.figure(release.metadata(), release.output().grid().points(), series)?;
    figure.write_svg(&dir.file("fpca.svg"), 900, 560).map_err(report_err)?;
    let mut md = format!(
        "# {title}\n\n![principal components](fpca.svg)\n\n| component | eigenvalue | share of the released covariance's trace |\n|---|---|---|\n"
    );
    for (i, (value, share)) in fpca.eigenvalues().iter().zip(fpca.explained_variance()).enumerate() {
        md += &format!("| {} | {value:.4e} | {:.1}% |\n", i + 1, 100.0 * share);
    }
    md += "\nThe shares are of the released covariance's trace (its projection onto the positive semidefinite \
           cone, over the components the decomposition used), not of the data's variance: at a small n ε the \
           release keeps fewer directions and the leading share reads high. A component with eigenvalue 0 \
           carries no released variance; its function is arbitrary.\n";
    let released = release.output().components();
    md += &match release.output().truncation() {
        Truncation::Risk => format!(
            "\nThe principal components use the leading {} of the {released} released components: the truncation \
             with the smallest estimated error of the operator (post-processing; docs/DESIGN.md section 17.9).\n",
            fpca.components()
        ),
        _ => format!("\nThe principal components use all {released} released components.\n"),
    };
    md += "\n";
    md += &release_tables(release.metadata(), session, notes);
    dir.write_text("report.md", &md).map_err(report_err)
}

/// How a release's figure speaks to its readers: the argument's and the values' names (with units)
/// and, if the release's grid was mapped (the command line maps every grid onto `[0, 1]`), the grid
/// points in the data's own units.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureAxes {
    /// e.g. `age (years)`.
    pub x_label: String,
    /// e.g. `height (cm)`.
    pub y_label: String,
    /// The grid in the data's units (as many points as the release's grid), or `None`: the
    /// release's own grid.
    pub x: Option<Vec<f64>>,
}

impl FigureAxes {
    /// Axes named `x_label` and `y_label` on the release's own grid.
    pub fn named(x_label: impl Into<String>, y_label: impl Into<String>) -> Self {
        Self { x_label: x_label.into(), y_label: y_label.into(), x: None }
    }

    /// The figure of `series` on a release's grid `points`, titled from its `metadata`: x in the
    /// data's units if given (as many points), else the release's own points.
    fn figure(
        &self,
        metadata: &fdp_core::ReleaseMetadata,
        points: &[f64],
        series: Vec<fdp_report::Series>,
    ) -> Result<fdp_report::CurveFigure> {
        let grid = match &self.x {
            Some(x) if x.len() == points.len() => x.clone(),
            Some(x) => return Err(Error::Shape { what: "figure x points", expected: points.len(), got: x.len() }),
            None => points.to_vec(),
        };
        Ok(fdp_report::CurveFigure {
            title: figure_title(metadata),
            x_label: self.x_label.clone(),
            y_label: self.y_label.clone(),
            grid,
            background: Vec::new(),
            series,
        })
    }
}

/// The first line of `local-log.txt`.
pub const LOCAL_LOG_TITLE: &str = "NOT FOR PUBLICATION: describes the private data";

/// Writes `local-log.txt` into `out`: [`LOCAL_LOG_TITLE`], then `lines` (what reading the data did:
/// rows read, repairs, rows per person). These describe the private data — publishing them would
/// spend privacy that no ledger has charged — so they never enter `release.json`, `report.md` or a
/// figure; this file is for the curator alone. Returns its path.
pub fn write_local_log(out: &std::path::Path, lines: &[String]) -> Result<std::path::PathBuf> {
    let report_err = |e: fdp_report::ReportError| Error::Write(e.to_string());
    let dir = fdp_report::ReportDir::create(out).map_err(report_err)?;
    let mut text = format!("{LOCAL_LOG_TITLE}\n\n");
    for line in lines {
        text += &format!("- {line}\n");
    }
    dir.write_text("local-log.txt", &text).map_err(report_err)
}

/// Writes `release.json` and `report.md` for a release that is not a curve (a weighted sample, a
/// sketch), with `extra` (markdown) after the tables; returns the report's path.
pub fn write_report<O: fdp_core::Output>(
    out: &std::path::Path,
    title: &str,
    release: &Release<O>,
    session: &Session,
    notes: &[String],
    extra: &str,
) -> Result<std::path::PathBuf> {
    let report_err = |e: fdp_report::ReportError| Error::Write(e.to_string());
    let dir = fdp_report::ReportDir::create(out).map_err(report_err)?;
    dir.write_text("release.json", &release.to_json()?).map_err(report_err)?;
    let md = format!("# {title}\n\n{}\n{extra}", release_tables(release.metadata(), session, notes));
    dir.write_text("report.md", &md).map_err(report_err)
}

/// The stages, the metadata, the ledger and the notes of a release, as markdown.
fn release_tables(metadata: &fdp_core::ReleaseMetadata, session: &Session, notes: &[String]) -> String {
    let mut md = String::new();
    if !metadata.stages.is_empty() {
        md += "| stage | ε | δ | outcome |\n|---|---|---|---|\n";
        for s in &metadata.stages {
            md += &format!("| {} | {:.4} | {:.2e} | {} |\n", s.stage, s.epsilon, s.delta, s.outcome);
        }
        md += "\n";
    }
    md += &fdp_report::metadata_table(metadata);
    let (spent_e, spent_d) = session.spent();
    let (left_e, left_d) = session.remaining();
    md += &format!(
        "\n## Ledger\n\nSpent ε = {spent_e:.4}, δ = {spent_d:.2e}; left ε = {left_e:.4}, δ = {left_d:.2e}.\n\n| # | mechanism | ε | δ | released |\n|---|---|---|---|---|\n"
    );
    for e in session.ledger() {
        md += &format!("| {} | {} | {:.4} | {:.2e} | {} |\n", e.index, e.mechanism, e.epsilon, e.delta, e.released);
    }
    if !notes.is_empty() {
        md += "\n## Notes\n\n";
        for n in notes {
            md += &format!("- {n}\n");
        }
    }
    md
}

// ------------------------------------------------------------------ what the language bindings share

/// **The grid of curves observed at `points`** (in the data's units, increasing): trapezoid weights,
/// as for a CSV's numeric column names; a single point weighs 1. The bindings (Python, R) build every
/// curve grid they are handed with it, so a curve set has the same grid, and a release the same
/// bytes, at every door.
pub fn observation_grid(points: &[f64]) -> Result<Grid> {
    let grid = if points.len() == 1 {
        Grid::with_weights(points.to_vec(), vec![1.0])
    } else {
        Grid::trapezoid_points(points.to_vec())
    };
    Ok(grid?)
}

/// A long table's observations grouped by record: `codes[r]` (in `0..records`) is the record of
/// observation `r`, at time `t[r]` (the data's units) with value `y[r]`; a record without
/// observations stays a record (empty). An error only for columns of different lengths or a code
/// outside `0..records` — public shape checks, never about a value (codes are the binding's own
/// numbering of the ids, in order of first appearance).
fn long_records<C: Copy + TryInto<usize>>(
    codes: &[C],
    t: &[f64],
    y: &[f64],
    records: usize,
) -> Result<Vec<(Vec<f64>, Vec<f64>)>> {
    if t.len() != codes.len() || y.len() != codes.len() {
        return Err(Error::BadParameter {
            name: "the long table",
            value: ParamValue::Count(codes.len()),
            reason: "ids, t and y must have the same length",
        });
    }
    let mut grouped = vec![(Vec::new(), Vec::new()); records];
    for ((&code, &t), &y) in codes.iter().zip(t).zip(y) {
        let record = code.try_into().ok().filter(|&c| c < records).ok_or(Error::BadParameter {
            name: "a record code",
            value: ParamValue::Count(records),
            reason: "record codes must lie in 0..n (the number of records)",
        })?;
        grouped[record].0.push(t);
        grouped[record].1.push(y);
    }
    Ok(grouped)
}

/// **A long table as sparse curves** on the public `domain` (the data's units): the `records`
/// records grouped by their codes, read by [`SparseCurves::new`](fdp_data::SparseCurves::new)
/// (observations outside the domain or not finite are dropped and counted, never an error).
pub fn long_to_sparse<C: Copy + TryInto<usize>>(
    codes: &[C],
    t: &[f64],
    y: &[f64],
    records: usize,
    domain: (f64, f64),
) -> Result<fdp_data::SparseCurves> {
    Ok(fdp_data::SparseCurves::new(domain, &long_records(codes, t, y, records)?)?)
}

/// **A long table on the public grid `points`**: one row per record (`0..records`), each record's
/// observations interpolated onto the grid by [`onto_grid`](fdp_data::onto_grid) (NaN where a record
/// has no usable observation, repaired later like any missing value); row-major `records x K`. The
/// grid is the curator's, never the observation times (private).
pub fn long_onto_grid<C: Copy + TryInto<usize>>(
    codes: &[C],
    t: &[f64],
    y: &[f64],
    points: &[f64],
    records: usize,
) -> Result<Vec<f64>> {
    let grouped = long_records(codes, t, y, records)?;
    Ok(grouped.iter().flat_map(|(t, y)| fdp_data::onto_grid(t, y, points)).collect())
}

#[cfg(test)]
mod binding_tests {
    use super::*;

    #[test]
    fn the_observation_grid_is_the_trapezoid_grid_and_one_point_weighs_one() -> Result<()> {
        let points = vec![1.0, 2.0, 4.0];
        let grid = observation_grid(&points)?;
        let trapezoid = Grid::trapezoid_points(points)?;
        assert_eq!((grid.points(), grid.weights()), (trapezoid.points(), trapezoid.weights()));
        assert_eq!(observation_grid(&[3.0])?.weights(), &[1.0]);
        assert!(observation_grid(&[2.0, 1.0]).is_err());
        Ok(())
    }

    #[test]
    fn a_long_table_is_grouped_by_record_code_whatever_the_code_type() -> Result<()> {
        let (t, y) = ([0.0, 1.0, 0.5, 0.1, 0.1], [1.0, 3.0, 7.0, 1.0, 3.0]);
        // Record 0 observed at 0 and 1, record 1 at 0.5, record 2 twice at 0.1 (averaged), record 3 never.
        let rows = long_onto_grid(&[0_i32, 0, 1, 2, 2], &t, &y, &[0.0, 0.5, 1.0], 4)?;
        let wide = long_onto_grid(&[0_i64, 0, 1, 2, 2], &t, &y, &[0.0, 0.5, 1.0], 4)?;
        assert_eq!(rows[..9], [1.0, 2.0, 3.0, 7.0, 7.0, 7.0, 2.0, 2.0, 2.0]);
        assert!(rows[9..].iter().all(|v| v.is_nan()));
        assert_eq!(rows.len(), wide.len());
        let sparse = long_to_sparse(&[0_i32, 0, 1, 2, 2], &t, &y, 4, (0.0, 1.0))?;
        assert_eq!(sparse.n(), 4);
        assert_eq!(sparse.record(1), (&[0.5][..], &[7.0][..]));
        assert!(sparse.record(3).0.is_empty());
        Ok(())
    }

    #[test]
    fn a_long_table_with_a_code_out_of_range_or_ragged_columns_is_refused() {
        let shape = long_onto_grid(&[0_i32, 1], &[0.0], &[1.0, 2.0], &[0.0, 1.0], 2).map(|_| ());
        assert!(shape.is_err_and(|e| e.to_string().contains("same length")));
        for codes in [[0_i32, 2], [0, -1]] {
            let out = long_to_sparse(&codes, &[0.0, 1.0], &[1.0, 2.0], 2, (0.0, 1.0)).map(|_| ());
            assert!(out.is_err_and(|e| e.to_string().contains("0..n")));
        }
    }
}
