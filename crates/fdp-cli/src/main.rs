//! `fdp`: differentially private functional data from the shell.
//!
//! Every subcommand reads a CSV, builds the mechanism through `fdp::front` (the same code the Rust
//! and Python APIs run), charges a session whose ledger persists in `--ledger`, and writes
//! `release.json` and `report.md` (and an SVG figure) into `--out`. Exit codes: 0 released, 1 refused
//! or failed (budget, file, mechanism), 2 bad command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgGroup, Args, Parser, Subcommand};

use fdp::data::{CsvSpec, CurveSet, LoadedCurves, read_long_csv, read_sparse_csv, read_wide_csv};
use fdp::front::{
    FigureAxes, FrontSession, KdeMethod, MeanMethod, TuningMode, open_session, write_curve_report, write_fpca_report,
    write_local_log, write_report,
};
use fdp::mercer::{Grid, Stationary};
use fdp::noise::{Delta, Epsilon, NeighbourRelation};
use fdp::registry::{self, Built, Frame, Input, InputKind, Released, Spec};
use fdp::release::{ClippingBound, PrivacyUnit, Session};
use fdp::report::progress::ProgressBar;

type Failure = Box<dyn std::error::Error>;

const AFTER_HELP: &str = "\
PRIVACY
  Bounds, kernels, domains and centres are PUBLIC choices: fix them before looking at the data.
  Under the default private tuning the bound you give is a ceiling; a tighter bound and the
  regularisation are chosen from the data under DP inside the same ε (each stage in the ledger).
  --seed makes the noise reproducible and is recorded in every release: never use it for a real
  release (anyone who knows the seed can remove the noise).
  The privacy unit is one row unless --id COLUMN names the persons: then each person's rows are
  combined into one record (their mean curve) and ε protects the whole person. A person with m
  rows is otherwise protected only at m ε. With --long the id column is the unit.
  report.md, release.json and curves.svg are for publication; local-log.txt (repair counts, rows
  per person) describes the private data and is NOT.

EXAMPLES
  fdp mean --csv dti_cca.csv --columns cca_ --id ID --epsilon 1 --bound l1:1 --centre 0.5 \\
           --kernel matern32:0.1 --ledger ledger.json --out release/
  fdp mean --csv dti_cca.csv --columns cca_ --id ID --epsilon 1 --range 0,1 --out release/
           (FA lies in [0, 1]: the centre 0.5, the ceiling and the clamp follow from the range)
  fdp mean --csv long.csv --long id,t,y --grid 0,1,50 --epsilon 1 --bound l1:1 --out release/
  fdp preview --csv dti_cca.csv --columns cca_ --epsilon 1 --bound l1:1 --centre 0.5
  fdp ledger show ledger.json";

/// Differentially private releases of functional data: mean curves, densities, kernel mean
/// embeddings and sketches, each charged to a privacy ledger kept in a file.
#[derive(Debug, Parser)]
#[command(name = "fdp", version, after_long_help = AFTER_HELP)]
struct Cli {
    /// No progress display.
    #[arg(long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Release a private mean curve of the curves in a CSV (wide: one curve per row; long: one
    /// (id, t, y) observation per row).
    #[command(
        after_long_help = "EXAMPLE\n  fdp mean --csv dti_cca.csv --columns cca_ --id ID --epsilon 1 --bound l1:1 --centre 0.5 --ledger ledger.json --out release/"
    )]
    Mean(MeanArgs),
    /// Print the expected squared error of a mean release without spending any budget (public
    /// quantities only: n, the grid, the kernel, the bound, ε).
    #[command(
        after_long_help = "EXAMPLE\n  fdp preview --csv dti_cca.csv --columns cca_ --epsilon 1 --bound l1:1 --tuning plug-in"
    )]
    Preview(MeanArgs),
    /// Release the private covariance operator of the curves in a CSV and its principal components
    /// (FPCA by post-processing), with a private clipping bound inside ε.
    #[command(
        after_long_help = "EXAMPLE\n  fdp fpca --csv dti_cca.csv --columns cca_ --id ID --range 0,1 --epsilon 1 --ledger ledger.json --out fpca/"
    )]
    Fpca(FpcaArgs),
    /// Release a private density of one numeric column on a public interval.
    #[command(
        after_long_help = "EXAMPLE\n  fdp kde --csv points.csv --column x --domain 0,1 --epsilon 1 --ledger ledger.json --out kde/"
    )]
    Kde(KdeArgs),
    /// Release a private synthetic weighted dataset of points in R^D (Balog et al.'s Algorithm 1).
    #[command(
        after_long_help = "EXAMPLE\n  fdp kme --csv points.csv --columns x --centre 0,0 --scale 2 --epsilon 1 --delta 1e-6 --out kme/"
    )]
    Kme(KmeArgs),
    /// Release a private sketch of points in [0, 1]^D and its M2M estimates (means, covariance).
    #[command(
        after_long_help = "EXAMPLE\n  fdp sketch --csv points.csv --columns x --map hist --size 10 --epsilon 1 --out sketch/"
    )]
    Sketch(SketchArgs),
    /// Release any registered mechanism by name (`fdp mechanisms` lists them, their parameters and
    /// defaults): the same registry, spec and bytes as Rust's `fdp::registry` and Python's
    /// `fdp.Mechanism.from_spec`.
    #[command(
        after_long_help = "EXAMPLES\n  fdp mechanisms\n  fdp release mean --csv dti_cca.csv --columns cca_ --id ID --param range=[0,1] --epsilon 1 --out release/\n  fdp release kme_exponential --csv points.csv --columns x --param dim=2 --epsilon 1 --out kme/"
    )]
    Release(ReleaseArgs),
    /// List the registered mechanisms with their inputs, parameters, defaults and an example (JSON).
    Mechanisms,
    /// Inspect a ledger file.
    #[command(subcommand)]
    Ledger(LedgerCommand),
}

#[derive(Debug, Args)]
struct ReleaseArgs {
    /// The registered mechanism (`fdp mechanisms` lists them).
    mechanism: String,
    /// A parameter NAME=VALUE of the mechanism (repeatable); VALUE is JSON (`range=[0,1]`,
    /// `components=4`) or else text (`kernel=matern32:0.1`). ε and δ come from --epsilon/--delta.
    #[arg(long = "param", value_name = "NAME=VALUE", allow_hyphen_values = true)]
    params: Vec<String>,
    /// The CSV file.
    #[arg(long)]
    csv: PathBuf,
    /// Curves (wide) or points: the columns whose names start with PREFIX.
    #[arg(long, value_name = "PREFIX")]
    columns: Option<String>,
    /// Wide curves: the public column naming the persons (one record per person).
    #[arg(long, value_name = "COLUMN", conflicts_with = "long")]
    id: Option<String>,
    /// Long or sparse curves: the id, t and y column names (one record per id). Needs --grid.
    #[arg(long, value_name = "ID,T,Y", conflicts_with = "columns", requires = "grid")]
    long: Option<String>,
    /// Labelled points (a regression): the response column; the inputs are --columns.
    #[arg(long, value_name = "COLUMN")]
    response: Option<String>,
    /// Long or sparse curves: the PUBLIC grid LO,HI,K.
    #[arg(long, value_name = "LO,HI,K", value_parser = parse_grid, conflicts_with = "columns")]
    grid: Option<Grid>,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

#[derive(Debug, Subcommand)]
enum LedgerCommand {
    /// Print the budget, what has been spent and every charge.
    Show {
        /// The ledger file.
        ledger: PathBuf,
    },
}

/// The budget and the randomness, shared by every release.
#[derive(Debug, Args)]
struct PrivacyArgs {
    /// ε of this release (every stage included), > 0.
    #[arg(long, value_parser = parse_epsilon, allow_hyphen_values = true)]
    epsilon: Epsilon,
    /// δ of this release, in (0, 1); only (ε, δ) mechanisms take it.
    #[arg(long, value_parser = parse_delta, allow_hyphen_values = true)]
    delta: Option<Delta>,
    /// The ledger file: continued if it exists (its budget then applies), else created.
    #[arg(long)]
    ledger: Option<PathBuf>,
    /// Total ε of a new ledger (default: this release's ε).
    #[arg(long, value_parser = parse_epsilon)]
    budget_epsilon: Option<Epsilon>,
    /// Total δ of a new ledger (default: this release's δ).
    #[arg(long, value_parser = parse_delta)]
    budget_delta: Option<Delta>,
    /// Reproducible noise from this seed (recorded; experiments only).
    #[arg(long)]
    seed: Option<u64>,
    /// Where release.json, report.md and the figure go. A folder that already holds a
    /// release.json is refused (each release has its own folder) unless --overwrite is given.
    #[arg(long, default_value = "fdp-release")]
    out: PathBuf,
    /// Replace the release already in --out (its numbers were published or not: the budget it
    /// spent stays spent).
    #[arg(long)]
    overwrite: bool,
}

/// Where the curves come from: a wide or long CSV (shared by `mean`, `preview` and `fpca`).
#[derive(Debug, Args)]
struct CurveSource {
    /// The CSV file.
    #[arg(long)]
    csv: PathBuf,
    /// Wide layout: the value columns are those whose names start with PREFIX (their numeric
    /// suffixes, if all numeric, give the grid).
    #[arg(long, value_name = "PREFIX", required_unless_present = "long")]
    columns: Option<String>,
    /// Wide layout: the public column naming the persons. Each person's rows are combined into one
    /// record (the mean of their repaired curves) and the release protects the whole person (n =
    /// the number of persons). Without it the unit is one row.
    #[arg(long, value_name = "COLUMN", conflicts_with = "long")]
    id: Option<String>,
    /// Long layout: the id, t and y column names, comma-separated (e.g. id,t,y). One record per id:
    /// the id column is the privacy unit. Needs --grid.
    #[arg(long, value_name = "ID,T,Y", conflicts_with = "columns", requires = "grid")]
    long: Option<String>,
    /// Long layout: the PUBLIC grid LO,HI,K (K equally spaced points from LO to HI), fixed before
    /// reading the data; each id's observations are interpolated onto it (linear, constant beyond
    /// its first and last observation). The observed times are private and never become the grid.
    #[arg(long, value_name = "LO,HI,K", value_parser = parse_grid, conflicts_with = "columns")]
    grid: Option<Grid>,
}

impl CurveSource {
    /// The long layout's `[id, t, y]` column names (empty for the wide layout).
    fn long_names(&self) -> Vec<&str> {
        self.long.as_deref().map(|l| l.split(',').map(str::trim).collect()).unwrap_or_default()
    }

    /// A figure's default x label: the column prefix (wide), the t column (long), else `t`.
    fn argument_name(&self) -> String {
        match (&self.columns, self.long_names().get(1)) {
            (Some(prefix), _) => prefix.trim_end_matches(['_', '.', '-']).to_string(),
            (None, Some(t)) => t.to_string(),
            (None, None) => "t".into(),
        }
    }

    /// A figure's default y label: the long layout's y column, else `value`.
    fn value_name(&self) -> String {
        self.long_names().get(2).map_or("value".into(), |y| y.to_string())
    }
}

/// The report note of every door that maps the grid onto [0, 1].
const GRID_MAPPED_NOTE: &str =
    "the grid was mapped onto [0, 1] (where the kernel's length-scale is set); the figure shows it in the data's units";

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("frame").args(["bound", "range"]).required(true).multiple(true)))]
struct MeanArgs {
    #[command(flatten)]
    source: CurveSource,
    /// The mechanism: iclp-rkhs, iclp-l1, iid-laplace, gaussian-process or bernstein (default:
    /// the registry's, iclp-rkhs; `fdp mechanisms` lists every default).
    #[arg(long, value_parser = checked::<MeanMethod>)]
    mechanism: Option<String>,
    /// The kernel SHAPE:RHO (exponential, matern32, matern52, gaussian), on the grid mapped to [0, 1]
    /// (default: the registry's, matern32:0.1).
    #[arg(long, value_parser = checked::<Stationary>)]
    kernel: Option<String>,
    /// The clipping bound NORM:VALUE in the mechanism's norm: l1 (coefficient l1; ICLP-RKHS), l2
    /// (ICLP-l1, IID Laplace, GP) or sup (Bernstein). Public; under private tuning, a ceiling.
    /// Optional with --range (the ceiling then follows from the range).
    #[arg(long, value_parser = parse_bound, allow_hyphen_values = true)]
    bound: Option<String>,
    /// The public range LO,HI of the values (what is measured, e.g. 0,1 for FA, 40,210 for heights in
    /// cm): every release is clamped to it, the centre defaults to its middle, without --bound the
    /// ceiling in the mechanism's norm follows from it, and ICLP-RKHS may use its pointwise-clipped
    /// binned family on rough curves. Private tuning only.
    #[arg(long, value_parser = parse_pair, allow_hyphen_values = true)]
    range: Option<(f64, f64)>,
    /// private (a private bound and regularisation inside ε; the default) or plug-in (the bound as
    /// given).
    #[arg(long, value_parser = checked::<TuningMode>)]
    tuning: Option<String>,
    /// A public constant the curves are centred at before clipping (added back).
    #[arg(long, allow_hyphen_values = true)]
    centre: Option<f64>,
    /// Plug-in only: ψ instead of the plug-in rule's.
    #[arg(long)]
    psi: Option<f64>,
    /// Plug-in only: IID Laplace components.
    #[arg(long)]
    components: Option<usize>,
    /// Plug-in only: Bernstein degree.
    #[arg(long)]
    degree: Option<usize>,
    /// Long layout: keep each id's observations at their own times (sparse or irregular curves)
    /// instead of interpolating them onto the grid, and release the sparse default (binned sums of
    /// the deviations from the centre and of the observation counts, a private bound, smoothing by
    /// SURE). Needs --long, --grid (the public grid the release lives on; its LO,HI is the domain)
    /// and --range.
    #[arg(long, requires = "long", requires = "range")]
    sparse: bool,
    /// The figure's x-axis label, with units (default: the column prefix, or the long layout's t).
    #[arg(long)]
    x_label: Option<String>,
    /// The figure's y-axis label, with units (default: "value", or the long layout's y).
    #[arg(long)]
    y_label: Option<String>,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

#[derive(Debug, Args)]
struct FpcaArgs {
    #[command(flatten)]
    source: CurveSource,
    /// The public range LO,HI of the values (what is measured): the centre defaults to its middle and
    /// the ceiling of the private bound (in L2) follows from it.
    #[arg(long, value_parser = parse_pair, allow_hyphen_values = true)]
    range: (f64, f64),
    /// The number J of basis components the covariance is released in (default: the registry's).
    #[arg(long)]
    components: Option<usize>,
    /// The number of principal components reported (1 ..= J).
    #[arg(long, default_value_t = 3)]
    k: usize,
    /// How the principal components choose among the J released components: `risk` (the leading
    /// j >= k with the smallest estimated error) or `fixed` (all J) (default: the registry's).
    #[arg(long, value_parser = ["risk", "fixed"])]
    truncation: Option<String>,
    /// The kernel SHAPE:RHO of the basis, on the grid mapped to [0, 1] (default: the registry's).
    #[arg(long, value_parser = checked::<Stationary>)]
    kernel: Option<String>,
    /// A public constant the curves are centred at (default: the middle of the range).
    #[arg(long, allow_hyphen_values = true)]
    centre: Option<f64>,
    /// Long layout: keep each id's observations at their own times (sparse or irregular curves)
    /// and release the sparse covariance (each record's own kernel-ridge fit onto the basis, then
    /// the same private bound and covariance). Needs --long and --grid (its LO,HI is the domain).
    #[arg(long, requires = "long")]
    sparse: bool,
    /// --sparse only: the public ridge of each record's fit (default: the registry's).
    #[arg(long, requires = "sparse")]
    ridge: Option<f64>,
    /// The figure's x-axis label, with units (default: the column prefix, or the long layout's t).
    #[arg(long)]
    x_label: Option<String>,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

#[derive(Debug, Args)]
struct KdeArgs {
    /// The CSV file.
    #[arg(long)]
    csv: PathBuf,
    /// The column of points (its exact name).
    #[arg(long)]
    column: String,
    /// The public interval LO,HI (points outside go to the nearest end).
    #[arg(long, value_parser = parse_pair)]
    domain: (f64, f64),
    /// iclp, gaussian-process, iid-laplace or bernstein (default: the registry's, iclp).
    #[arg(long, value_parser = checked::<KdeMethod>)]
    mechanism: Option<String>,
    /// gaussian or exponential (default: the registry's, gaussian).
    #[arg(long, value_parser = parse_shape)]
    kernel: Option<String>,
    /// The bandwidth (default: 0.15 (HI - LO) n^(-1/5), public).
    #[arg(long)]
    bandwidth: Option<f64>,
    /// Grid points (default: the registry's).
    #[arg(long)]
    grid_points: Option<usize>,
    /// η of the ICLP and GP KDEs (default: the registry's).
    #[arg(long)]
    eta: Option<f64>,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

#[derive(Debug, Args)]
struct KmeArgs {
    /// The CSV file.
    #[arg(long)]
    csv: PathBuf,
    /// The coordinates are the columns whose names start with PREFIX.
    #[arg(long, value_name = "PREFIX")]
    columns: String,
    /// Gaussian kernel length-scale ρ (default: the registry's).
    #[arg(long)]
    rho: Option<f64>,
    /// Public centre of the synthetic points, comma-separated (length D).
    #[arg(long, value_delimiter = ',', required = true, allow_hyphen_values = true)]
    centre: Vec<f64>,
    /// Public spread of the synthetic points.
    #[arg(long)]
    scale: f64,
    /// Number of synthetic points M (default: the registry's).
    #[arg(long)]
    synthetic_points: Option<usize>,
    /// Seed of the synthetic points (public randomness; default: the registry's).
    #[arg(long)]
    points_seed: Option<u64>,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

#[derive(Debug, Args)]
struct SketchArgs {
    /// The CSV file.
    #[arg(long)]
    csv: PathBuf,
    /// The coordinates (in [0, 1]) are the columns whose names start with PREFIX.
    #[arg(long, value_name = "PREFIX")]
    columns: String,
    /// hist (marginal histograms, ||Φ||₁ = D), rff or race (default: the registry's, hist).
    #[arg(long)]
    map: Option<String>,
    /// Histogram bins, RFF frequency pairs or RACE repetitions (default: the registry's).
    #[arg(long)]
    size: Option<usize>,
    /// RFF bandwidth σ or RACE bucket width (default: the registry's).
    #[arg(long)]
    width: Option<f64>,
    /// RACE buckets (default: the registry's).
    #[arg(long)]
    buckets: Option<usize>,
    /// Seed of the feature map (public randomness; default: the registry's).
    #[arg(long)]
    map_seed: Option<u64>,
    /// M2M prior points (public uniform points of [0, 1]^D).
    #[arg(long, default_value_t = fdp::front::M2M_PRIOR_POINTS)]
    prior_points: usize,
    /// Seed of the M2M prior points (public randomness; the same default as Python's).
    #[arg(long, default_value_t = fdp::front::M2M_PRIOR_SEED)]
    prior_seed: u64,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

fn parse_epsilon(s: &str) -> Result<Epsilon, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    Epsilon::new(v).map_err(|e| e.to_string())
}

fn parse_delta(s: &str) -> Result<Delta, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    Delta::new(v).map_err(|e| e.to_string())
}

fn parse_from_str<T: std::str::FromStr<Err: std::fmt::Display>>(s: &str) -> Result<T, String> {
    s.parse().map_err(|e: T::Err| e.to_string())
}

/// `NORM:VALUE`; the two almost-right forms are refused with the fix: a bare number (which norm?)
/// and a pair `LO,HI` (a range of the values, which goes in `--range`).
/// `s` as given, once it reads as a `T` (a mechanism, a kernel, a tuning): the registry reads the
/// spec's text again, so the command line and the spec name the same value.
fn checked<T: std::str::FromStr<Err: std::fmt::Display>>(s: &str) -> Result<String, String> {
    parse_from_str::<T>(s).map(|_| s.trim().to_string())
}

fn parse_bound(s: &str) -> Result<String, String> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return Err(format!(
            "{s:?} has no norm: give NORM:VALUE, e.g. l1:{v} for iclp-rkhs (the default; coefficient l1), \
             l2:{v} for iclp-l1, iid-laplace and gaussian-process, sup:{v} for bernstein; or the values' public \
             range as --range LO,HI"
        ));
    }
    if parse_pair(s).is_ok() {
        return Err(format!(
            "{s:?} looks like a range of the values: give it as --range {s} (the bound then follows from it)"
        ));
    }
    checked::<ClippingBound>(s)
}

fn parse_pair(s: &str) -> Result<(f64, f64), String> {
    let list: Vec<f64> = s
        .split(',')
        .map(|x| x.trim().parse::<f64>().map_err(|_| format!("{x:?} is not a number")))
        .collect::<Result<_, _>>()?;
    match list.as_slice() {
        &[lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi => Ok((lo, hi)),
        _ => Err("expected LO,HI with LO < HI".into()),
    }
}

fn parse_grid(s: &str) -> Result<Grid, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [lo, hi, k] = parts.as_slice() else {
        return Err("expected LO,HI,K".into());
    };
    let (lo, hi) = parse_pair(&format!("{lo},{hi}"))?;
    let k: usize = k.parse().map_err(|_| format!("{k:?} is not a number of points"))?;
    if k < 2 {
        return Err("K must be at least 2".into());
    }
    // The curves' basis is built on this grid: its cap, before the grid is allocated.
    fdp::mercer::MercerBasis::dense_points("K", k).map_err(|e| e.to_string())?;
    let points = (0..k).map(|i| if i + 1 == k { hi } else { lo + (hi - lo) * i as f64 / (k - 1) as f64 }).collect();
    Grid::trapezoid_points(points).map_err(|e| e.to_string())
}

fn parse_shape(s: &str) -> Result<String, String> {
    match s {
        "gaussian" | "exponential" => Ok(s.into()),
        _ => Err("expected gaussian or exponential".into()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let bar = fdp::report::progress::spinner(cli.quiet);
    let result = run(cli.command, &bar);
    bar.finish_and_clear();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fdp: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command, bar: &ProgressBar) -> Result<(), Failure> {
    match command {
        Command::Mean(args) => mean(args, bar, false),
        Command::Preview(args) => mean(args, bar, true),
        Command::Fpca(args) => fpca(args, bar),
        Command::Kde(args) => kde(args, bar),
        Command::Kme(args) => kme(args, bar),
        Command::Sketch(args) => sketch(args, bar),
        Command::Release(args) => release_registered(args, bar),
        Command::Mechanisms => {
            let entries: Vec<serde_json::Value> = registry::REGISTRY.iter().map(registry::Entry::describe).collect();
            println!("{}", serde_json::to_string_pretty(&entries)?);
            Ok(())
        }
        Command::Ledger(LedgerCommand::Show { ledger }) => ledger_show(&ledger),
    }
}

/// A δ above this draws a warning (Python's `Session` warns at the same value): δ is the probability
/// that the guarantee fails outright, usually far below 1/n.
const LARGE_DELTA: f64 = 1e-3;

/// The session of this run: with `--ledger`, the ledger file locked until the run ends.
fn session(p: &PrivacyArgs, relation: NeighbourRelation) -> Result<FrontSession, Failure> {
    let total_delta = p.budget_delta.or(p.delta);
    if let Some(d) = [p.delta, p.budget_delta].into_iter().flatten().map(Delta::get).find(|&d| d > LARGE_DELTA) {
        eprintln!(
            "fdp: warning: delta = {d} is a large failure probability: an (ε, δ) release may expose a record outright \
             with probability up to δ; δ is usually far below 1/n (e.g. 1e-6)"
        );
    }
    if p.ledger.is_none() {
        eprintln!(
            "fdp: note: no --ledger: this release's ε is recorded only in its own folder; a later release of the same \
             data starts from a fresh budget unless you keep a ledger (--ledger ledger.json)"
        );
    }
    Ok(open_session(p.ledger.as_deref(), relation, p.budget_epsilon.unwrap_or(p.epsilon), total_delta, p.seed)?)
}

/// The registered mechanism `spec` built for `frame`, its warnings on stderr.
fn build(spec: &Spec, frame: &Frame) -> Result<Built, Failure> {
    let built = registry::build(spec, frame)?;
    for warning in &built.warnings {
        eprintln!("fdp: warning: {warning}");
    }
    Ok(built)
}

/// **The one release path of the command line**: the data checked against the built mechanism,
/// `--out` checked, the session (ledger) opened under the mechanism's neighbour relation, the
/// mechanism released on `input` and the ledger committed — a charge stands even if the release
/// then fails, so the ledger is committed either way.
fn release_committed(p: &PrivacyArgs, built: &Built, input: Input<'_>) -> Result<(FrontSession, Released), Failure> {
    // The data's kind, n, dimension and grid, before the ledger is opened or anything charged.
    built.check(input)?;
    writable_out(p)?;
    let mut session = session(p, built.guarantee().relation())?;
    let released = built.release(session.session_mut(), input);
    session.commit()?;
    Ok((session, released?))
}

/// The spec `name` with ε (and δ, if given) of `p`.
fn spec_with_budget(name: &str, p: &PrivacyArgs) -> Spec {
    let spec = Spec::new(name).with("epsilon", p.epsilon.get());
    match p.delta {
        Some(d) => spec.with("delta", d.get()),
        None => spec,
    }
}

/// The spec with `name = value` where a value is given.
fn with_given(spec: Spec, name: &str, value: Option<serde_json::Value>) -> Spec {
    match value {
        Some(v) => spec.with(name, v),
        None => spec,
    }
}

/// A number flag as a spec value: JSON has no NaN or ∞ (`serde_json` turns them into `null`, which
/// would take the parameter's default), so they cross as the registry's text `"nan"`, `"inf"`,
/// `"-inf"` and meet the parameter's own check.
fn number(value: f64) -> serde_json::Value {
    match value {
        v if v.is_nan() => "nan".into(),
        v if v == f64::INFINITY => "inf".into(),
        v if v == f64::NEG_INFINITY => "-inf".into(),
        v => v.into(),
    }
}

/// What a mechanism of the expected kind released (a registry entry's output kind is fixed).
fn unexpected(released: &Released) -> Failure {
    format!("the mechanism released {} numbers of another kind than this command reports", released.values().len())
        .into()
}

/// `--out` as a directory that can be written to, created if missing, checked **before** the session
/// is opened: a release charged and then not written is a budget spent for nothing.
fn writable_out(p: &PrivacyArgs) -> Result<(), Failure> {
    let out = &p.out;
    if !p.overwrite && out.join("release.json").exists() {
        return Err(format!(
            "--out {} already holds a release (release.json): give each release a folder of its own, or --overwrite \
             to replace it (its budget stays spent)",
            out.display()
        )
        .into());
    }
    std::fs::create_dir_all(out).map_err(|e| format!("--out {}: cannot create the directory: {e}", out.display()))?;
    let probe = out.join(format!(".fdp-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("--out {}: not writable: {e}", out.display()))?;
    std::fs::remove_file(&probe).map_err(|e| format!("--out {}: {e}", out.display()))?;
    Ok(())
}

/// The records the mechanism sees, the privacy unit they stand for, and what reading them did
/// (lines for the local log, never for the report: they describe the private data).
struct Records {
    notes: Vec<String>,
    curves: CurveSet<'static>,
    unit: PrivacyUnit,
    local: Vec<String>,
}

impl Records {
    /// Counts, for the local log only, the records with values outside the public `range` (they are
    /// clipped like any record and the release is clamped), and warns on stderr when there are any.
    fn note_outside(&mut self, (lo, hi): (f64, f64)) {
        let n = self.curves.n();
        let count = count_outside(self.curves.values(), self.curves.grid().len(), lo, hi);
        self.local.push(format!(
            "{count} of {n} records have values outside the public range [{lo}, {hi}] (each record is clipped at the \
             mechanism's bound, and the release clamped to the range)"
        ));
        if count > 0 {
            eprintln!(
                "fdp: warning: records with values outside the public range --range {lo},{hi} are counted in local-log.txt \
                 (NOT FOR PUBLICATION): check the range and the data's units"
            );
        }
    }
}

/// A column name that usually names persons or subjects: `id`, `ID`, `*_id`, `*.id`, `subject`,
/// `patient`, `person`, `participant`.
fn looks_like_id(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    lower == "id"
        || lower.ends_with("_id")
        || lower.ends_with(".id")
        || lower.ends_with(" id")
        || ["subject", "patient", "person", "participant"]
            .iter()
            .any(|w| lower == *w || lower.starts_with(&format!("{w}_")))
}

/// The header of a CSV (trimmed names).
fn csv_headers(path: &Path) -> Result<Vec<String>, Failure> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(reader.headers()?.iter().map(|h| h.trim().to_string()).collect())
}

fn load_curves(args: &CurveSource) -> Result<Records, Failure> {
    let mut local = Vec::new();
    let (loaded, unit) = match (&args.columns, &args.long) {
        (_, Some(_)) => {
            let parts = args.long_names();
            let [id, t, y] = parts.as_slice() else {
                return Err("--long takes three column names, ID,T,Y".into());
            };
            let grid = args.grid.as_ref().ok_or("--long needs the public grid: --grid LO,HI,K")?;
            (read_long_csv(&args.csv, id, t, y, grid, None)?, PrivacyUnit::person(*id))
        }
        (Some(prefix), None) => {
            let headers = csv_headers(&args.csv)?;
            let suspects: Vec<&str> = match &args.id {
                Some(_) => Vec::new(),
                None => headers
                    .iter()
                    .map(String::as_str)
                    .filter(|h| looks_like_id(h) && !h.starts_with(prefix.as_str()))
                    .collect(),
            };
            let id_columns: Vec<&str> = args.id.as_deref().map_or_else(|| suspects.clone(), |id| vec![id]);
            // A value column with text and no number (a prefix that also selects `sex`) is refused
            // by name, as Python's from_pandas does; the loader below would take its cells as missing.
            read_columns(&args.csv, Columns::Prefix(prefix))?;
            let loaded = read_wide_csv(&args.csv, &CsvSpec::prefix(prefix.as_str()).with_ids(&id_columns), None)?;
            let (rows, k) = (loaded.curves.n(), loaded.columns.len());
            let numbered =
                loaded.columns.iter().all(|c| c[prefix.len()..].trim().parse::<f64>().is_ok_and(f64::is_finite));
            if !numbered && k >= 2 {
                eprintln!(
                    "fdp: warning: the column names after {prefix:?} ({:?}, ...) carry no grid: the {k} columns are taken as \
                     equally spaced (the positions 1..{k}); name them {prefix}<point> (e.g. {prefix}1.5) if the curves were \
                     observed at other points",
                    loaded.columns[0]
                );
                if rows < k {
                    eprintln!(
                        "fdp: warning: {rows} curves of {k} points each, and no grid in the column names: if the file holds \
                         one curve per column (R's fda layout), transpose it (fdp reads one curve per row)"
                    );
                }
            }
            for (c, name) in suspects.iter().enumerate() {
                let mut seen = std::collections::HashSet::new();
                if loaded.ids.iter().any(|row| !seen.insert(row[c].as_str())) {
                    eprintln!(
                        "fdp: warning: column {name:?} has repeated values: if it names persons, this release protects one \
                         row, and a person with m rows only at m ε. Give --id {name} to protect whole persons."
                    );
                }
            }
            let unit = PrivacyUnit::of_id(args.id.as_ref());
            (loaded, unit)
        }
        (None, None) => return Err("give --columns PREFIX (wide) or --long ID,T,Y".into()),
    };
    let rows = loaded.curves.n();
    local.push(format!(
        "{rows} rows read from {}: {} complete, {} with missing values interpolated, {} replaced by the public default (zero) curve",
        args.csv.display(),
        loaded.report.complete,
        loaded.report.interpolated,
        loaded.report.defaulted
    ));
    let LoadedCurves { curves, ids, notes, .. } = loaded;
    let curves = match (&unit, &args.id) {
        (PrivacyUnit::Person { id_column }, Some(_)) => {
            let keys: Vec<&str> = ids.iter().map(|row| row[0].as_str()).collect();
            let persons = curves.per_person(&keys)?;
            local.push(format!(
                "{} persons ({id_column:?}), up to {} rows each; each person's record is the mean of their repaired rows",
                persons.curves.n(),
                persons.max_rows()
            ));
            persons.curves
        }
        (PrivacyUnit::Person { id_column }, None) => {
            local.push(format!("{rows} ids ({id_column:?}), one record each"));
            curves
        }
        _ => curves,
    };
    Ok(Records { notes, curves, unit, local })
}

fn mean(args: MeanArgs, bar: &ProgressBar, preview: bool) -> Result<(), Failure> {
    // A preview spends nothing and writes nothing: the flags of a release would be ignored.
    let privacy = &args.privacy;
    let release_only = [
        ("--ledger", privacy.ledger.is_some()),
        ("--seed", privacy.seed.is_some()),
        ("--budget-epsilon", privacy.budget_epsilon.is_some()),
        ("--budget-delta", privacy.budget_delta.is_some()),
        ("--overwrite", privacy.overwrite),
    ];
    if let Some((flag, _)) = release_only.iter().find(|(_, given)| preview && *given) {
        return Err(format!("{flag} does not apply to preview (it spends nothing and writes no file)").into());
    }
    if args.sparse {
        return sparse_mean(args, bar, preview);
    }
    bar.set_message(format!("reading {}", args.source.csv.display()));
    let mut records = load_curves(&args.source)?;
    let (n, k) = (records.curves.n(), records.curves.grid().len());
    if let Some(range) = args.range {
        records.note_outside(range);
    }
    let mut spec = spec_with_budget("mean", &args.privacy);
    spec = with_given(spec, "method", args.mechanism.clone().map(serde_json::Value::from));
    spec = with_given(spec, "kernel", args.kernel.clone().map(serde_json::Value::from));
    spec = with_given(spec, "tuning", args.tuning.clone().map(serde_json::Value::from));
    spec = with_given(spec, "bound", args.bound.clone().map(serde_json::Value::from));
    spec = with_given(spec, "range", args.range.map(|(lo, hi)| serde_json::json!([lo, hi])));
    spec = with_given(spec, "centre", args.centre.map(number));
    spec = with_given(spec, "psi", args.psi.map(number));
    spec = with_given(spec, "components", args.components.map(serde_json::Value::from));
    spec = with_given(spec, "degree", args.degree.map(serde_json::Value::from));
    let frame = Frame::new(n, Some(records.curves.grid().clone())).protecting(records.unit.clone());
    bar.set_message(format!("building the mechanism for {n} curves on {k} points"));
    let mechanism = build(&spec, &frame)?;
    if preview {
        let accuracy = mechanism.accuracy();
        bar.finish_and_clear();
        println!(
            "preview mechanism={} unit={} n={n} k={k} epsilon={} expected_sq_error={:.4e} bound95={:.4e} note={}",
            mechanism.name(),
            match &records.unit {
                PrivacyUnit::Person { id_column } => format!("person:{id_column}"),
                _ => "record".into(),
            },
            args.privacy.epsilon.get(),
            accuracy.expected_sq_error,
            accuracy.bound(0.05),
            if accuracy.upper_bound {
                "upper_bound:_the_noise_at_the_public_ceiling_before_shrinkage_(each_release_reports_its_own_estimate)"
            } else if mechanism.spec().params["tuning"].as_str().unwrap_or_default().parse::<TuningMode>()?
                == TuningMode::Private
            {
                "noise_only_at_the_ceiling_bound_(a_private_bound_below_it_lowers_it)"
            } else {
                "noise_only"
            }
        );
        return Ok(());
    }
    bar.set_message("releasing");
    let (session, released) =
        release_committed(&args.privacy, &mechanism, Input::Curves { curves: &records.curves, unit: &records.unit })?;
    let Released::Curve(release) = released else { return Err(unexpected(&released)) };
    let mut notes = records.notes.clone();
    notes.push(match &records.unit {
        PrivacyUnit::Person { id_column } => format!(
            "privacy unit: one person — every row with the same {id_column:?} combined into one record (the mean of the person's repaired curves); n = {n} persons (public)"
        ),
        _ => format!("privacy unit: one row; n = {n} rows (public)"),
    });
    notes.push("missing values were repaired per record (interpolation along the grid, else the public default curve); the counts describe the private data and are in local-log.txt, not here".into());
    notes.push(GRID_MAPPED_NOTE.into());
    let title = format!("Private mean curve ({}), ε = {}", mechanism.name(), args.privacy.epsilon.get());
    let axes = FigureAxes {
        x_label: args.x_label.clone().unwrap_or_else(|| args.source.argument_name()),
        y_label: args.y_label.clone().unwrap_or_else(|| args.source.value_name()),
        x: Some(records.curves.grid().points().to_vec()),
    };
    let report = write_curve_report(&args.privacy.out, &title, &release, session.session(), &notes, &axes)?;
    let log = write_local_log(&args.privacy.out, &records.local)?;
    eprintln!("fdp: what was read and repaired (NOT FOR PUBLICATION) is in {}", log.display());
    bar.finish_and_clear();
    announce(session.session(), release.metadata().mechanism.as_str(), &report);
    Ok(())
}

/// `fdp mean --sparse`: the long table's records at their own times, the sparse default.
fn sparse_mean(args: MeanArgs, bar: &ProgressBar, preview: bool) -> Result<(), Failure> {
    let names = args.source.long_names();
    let [id, t, y] = names.as_slice() else {
        return Err("--long takes three column names, ID,T,Y".into());
    };
    let grid = args.source.grid.as_ref().ok_or("--sparse needs the public grid: --grid LO,HI,K")?;
    let range = args.range.ok_or("--sparse needs the public range of the values: --range LO,HI")?;
    let plug_in = args.psi.is_some() || args.components.is_some() || args.degree.is_some();
    let matched =
        args.mechanism.as_deref().map(str::parse::<MeanMethod>).transpose()?.is_none_or(|m| m == MeanMethod::IclpRkhs);
    let private =
        args.tuning.as_deref().map(str::parse::<TuningMode>).transpose()?.is_none_or(|t| t == TuningMode::Private);
    if args.bound.is_some() || !private || !matched || plug_in {
        return Err(
            "--sparse releases the privately tuned sparse default: drop --bound, --tuning, --mechanism, --psi, \
                    --components and --degree"
                .into(),
        );
    }
    bar.set_message(format!("reading {}", args.source.csv.display()));
    let domain = grid.domain()[0];
    let (data, _ids) = read_sparse_csv(&args.source.csv, id, t, y, domain)?;
    let n = data.n();
    let spec = spec_with_budget("sparse_mean", &args.privacy).with("range", serde_json::json!([range.0, range.1]));
    let spec = with_given(spec, "kernel", args.kernel.clone().map(serde_json::Value::from));
    let spec = with_given(spec, "centre", args.centre.map(number));
    let frame = Frame::new(n, Some(grid.clone())).protecting(PrivacyUnit::person(*id));
    let mechanism = build(&spec, &frame)?;
    if preview {
        let accuracy = mechanism.accuracy();
        bar.finish_and_clear();
        println!(
            "preview mechanism={} unit=person:{id} n={n} k={} epsilon={} expected_sq_error={:.4e} bound95={:.4e} note=upper_bound:_the_noise_at_the_public_ceiling",
            mechanism.name(),
            grid.len(),
            args.privacy.epsilon.get(),
            accuracy.expected_sq_error,
            accuracy.bound(0.05),
        );
        return Ok(());
    }
    bar.set_message("releasing");
    let (session, released) =
        release_committed(&args.privacy, &mechanism, Input::Sparse { curves: &data, unit: &frame.unit })?;
    let Released::Curve(release) = released else { return Err(unexpected(&released)) };
    let local = sparse_local_log(&args.source.csv, &data);
    let notes = vec![
        format!("sparse layout: each {id:?}'s observations of {y:?} kept at their own times {t:?} (snapped to the public grid of {} points); nothing interpolated", grid.len()),
        format!("privacy unit: one person — every row with the same {id:?} is one record; n = {n} persons (public)"),
        "observations with a missing time or value, or outside the grid's domain, were dropped; the counts describe the private data and are in local-log.txt, not here".into(),
        GRID_MAPPED_NOTE.into(),
    ];
    let title = format!("Private mean of sparse curves, ε = {}", args.privacy.epsilon.get());
    let axes = FigureAxes {
        x_label: args.x_label.clone().unwrap_or_else(|| t.to_string()),
        y_label: args.y_label.clone().unwrap_or_else(|| y.to_string()),
        x: Some(grid.points().to_vec()),
    };
    let report = write_curve_report(&args.privacy.out, &title, &release, session.session(), &notes, &axes)?;
    let log = write_local_log(&args.privacy.out, &local)?;
    eprintln!("fdp: what was read and dropped (NOT FOR PUBLICATION) is in {}", log.display());
    bar.finish_and_clear();
    announce(session.session(), release.metadata().mechanism.as_str(), &report);
    Ok(())
}

/// What was read from a sparse long table and dropped (for local-log.txt only: it describes the
/// private data).
fn sparse_local_log(csv: &Path, data: &fdp::data::SparseCurves) -> Vec<String> {
    let (n, repairs, domain) = (data.n(), data.repairs(), data.domain());
    vec![
        format!("{n} records (ids) read from {}, {} observations kept", csv.display(), data.observations()),
        format!(
            "dropped: {} observations with a non-finite time or value, {} outside the domain [{}, {}]; {} records left empty (they count in n)",
            repairs.non_finite, repairs.outside_domain, domain.0, domain.1, repairs.empty_records
        ),
    ]
}

/// `fdp fpca`: the privately tuned covariance (one Session call: the bound, then the covariance) and
/// its leading principal components; with `--sparse`, of the long table's records at their own times.
fn fpca(args: FpcaArgs, bar: &ProgressBar) -> Result<(), Failure> {
    bar.set_message(format!("reading {}", args.source.csv.display()));
    let names = args.source.long_names();
    let sparse = match (args.sparse, names.as_slice()) {
        (false, _) => None,
        (true, [id, t, y]) => {
            let grid = args.source.grid.clone().ok_or("--sparse needs the public grid: --grid LO,HI,K")?;
            let (data, _ids) = read_sparse_csv(&args.source.csv, id, t, y, grid.domain()[0])?;
            Some((data, grid, [*id, *t, *y]))
        }
        (true, _) => return Err("--long takes three column names, ID,T,Y".into()),
    };
    let mut dense = if args.sparse { None } else { Some(load_curves(&args.source)?) };
    if let Some(records) = dense.as_mut() {
        records.note_outside(args.range);
    }
    let person;
    let (mut notes, local, input, frame, name) = match (&sparse, &dense) {
        (Some((data, grid, [id, t, y])), _) => {
            let (n, local) = (data.n(), sparse_local_log(&args.source.csv, data));
            let notes = vec![
                format!("sparse layout: each {id:?}'s observations of {y:?} kept at their own times {t:?} (snapped to the public grid of {} points); each record's coefficients are its own kernel-ridge fit onto the basis", grid.len()),
                format!("privacy unit: one person — every row with the same {id:?} is one record; n = {n} persons (public)"),
                "observations with a missing time or value, or outside the grid's domain, were dropped; the counts describe the private data and are in local-log.txt, not here".into(),
            ];
            person = PrivacyUnit::person(*id);
            let frame = Frame::new(n, Some(grid.clone())).protecting(person.clone());
            (notes, local, Input::Sparse { curves: data, unit: &person }, frame, "sparse_fpca")
        }
        (None, Some(records)) => {
            let frame =
                Frame::new(records.curves.n(), Some(records.curves.grid().clone())).protecting(records.unit.clone());
            let input = Input::Curves { curves: &records.curves, unit: &records.unit };
            (records.notes.clone(), records.local.clone(), input, frame, "fpca")
        }
        (None, None) => return Err("no curves were read".into()),
    };
    let spec = spec_with_budget(name, &args.privacy).with("range", serde_json::json!([args.range.0, args.range.1]));
    let spec = with_given(spec, "kernel", args.kernel.clone().map(serde_json::Value::from));
    let spec = with_given(spec, "components", args.components.map(serde_json::Value::from));
    let spec = with_given(spec, "truncation", args.truncation.clone().map(serde_json::Value::from));
    let spec = with_given(spec, "centre", args.centre.map(number));
    let spec = with_given(spec, "ridge", args.ridge.map(number));
    let n = frame.n;
    let grid = frame.grid.clone().ok_or("the curves' grid")?;
    bar.set_message(format!("building the covariance of {n} curves"));
    let mechanism = build(&spec, &frame)?;
    // --k (a report setting) against J, before anything is charged.
    let components = mechanism.spec().params["components"].as_u64().unwrap_or(0) as usize;
    if args.k == 0 || args.k > components {
        return Err(format!("--k must be between 1 and --components ({components}), got {}", args.k).into());
    }
    bar.set_message("releasing");
    let (session, released) = release_committed(&args.privacy, &mechanism, input)?;
    let Released::Covariance(release) = released else { return Err(unexpected(&released)) };
    let kernel = mechanism.spec().params["kernel"].as_str().unwrap_or_default().to_string();
    notes.push(format!(
        "the covariance is released in the {components} leading components of the {} basis; the principal components are its \
         eigenfunctions (post-processing), orthonormal on the grid mapped onto [0, 1]",
        kernel.split(':').next().unwrap_or_default()
    ));
    notes.push(GRID_MAPPED_NOTE.into());
    let axes = FigureAxes {
        x_label: args.x_label.clone().unwrap_or_else(|| args.source.argument_name()),
        y_label: "principal component".into(),
        x: Some(grid.points().to_vec()),
    };
    let title = format!("Private principal components, ε = {}", args.privacy.epsilon.get());
    let report = write_fpca_report(&args.privacy.out, &title, &release, args.k, session.session(), &notes, &axes)?;
    let log = write_local_log(&args.privacy.out, &local)?;
    eprintln!("fdp: what was read and repaired (NOT FOR PUBLICATION) is in {}", log.display());
    bar.finish_and_clear();
    announce(session.session(), release.metadata().mechanism.as_str(), &report);
    Ok(())
}

fn announce(session: &Session, mechanism: &str, report: &Path) {
    let (spent, _) = session.spent();
    let (left, _) = session.remaining();
    println!(
        "released mechanism={mechanism} spent_epsilon={spent:.4} remaining_epsilon={left:.4} ledger_head={} report={}",
        session.head(),
        report.display()
    );
}

/// Which columns of a CSV hold the points' coordinates.
#[derive(Debug, Clone, Copy)]
enum Columns<'a> {
    /// The one column of this name (a density's `--column`).
    Named(&'a str),
    /// Every column whose name starts with this prefix, in file order (`--columns`).
    Prefix(&'a str),
}

/// The selected columns of a CSV, in file order, as points (n never changes: a record with a cell
/// that is not a finite number is kept, and the mechanism gives it its public default).
fn read_points(path: &Path, columns: Columns<'_>) -> Result<Points, Failure> {
    let (dim, data) = read_columns(path, columns)?;
    Ok(Points { dim, data })
}

/// Points as read (a cell that is not a number is NaN): the mechanism's reader applies its public
/// default to such a record.
struct Points {
    dim: usize,
    data: Vec<f64>,
}

impl Points {
    fn len(&self) -> usize {
        self.data.len() / self.dim.max(1)
    }

    fn input(&self) -> Input<'_> {
        Input::Points { data: &self.data, dim: self.dim }
    }
}

/// The number of selected columns and their cells, row by row (a cell that is not a number is NaN);
/// a selected column with text and no number at all (`sex`, a date) is refused by name.
fn read_columns(path: &Path, columns: Columns<'_>) -> Result<(usize, Vec<f64>), Failure> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let headers: Vec<String> = reader.headers()?.iter().map(|h| h.trim().to_string()).collect();
    let idx: Vec<usize> = (0..headers.len())
        .filter(|&i| match columns {
            Columns::Named(name) => headers[i] == name,
            Columns::Prefix(prefix) => headers[i].starts_with(prefix),
        })
        .collect();
    if idx.is_empty() {
        return Err(match columns {
            Columns::Named(name) => format!("{}: no column is named {name:?}", path.display()),
            Columns::Prefix(prefix) => format!("{}: no column name starts with {prefix:?}", path.display()),
        }
        .into());
    }
    let mut data = Vec::new();
    // Per column: whether a cell is not empty and not a number (e.g. "M"), and whether any cell is a
    // number. The cell itself is never quoted: the message would carry a private value.
    let mut text = vec![false; idx.len()];
    let mut numeric = vec![false; idx.len()];
    for record in reader.records() {
        let record = record?;
        for (j, &i) in idx.iter().enumerate() {
            let cell = record[i].trim();
            let value = cell.parse::<f64>();
            numeric[j] |= value.is_ok();
            text[j] |= value.is_err() && !cell.is_empty() && !cell.eq_ignore_ascii_case("na");
            data.push(value.unwrap_or(f64::NAN));
        }
    }
    // A column with text and no number at all is not a numeric variable (a local refusal, before
    // anything is charged: the curator holds the file).
    if let Some(j) = (0..idx.len()).find(|&j| !numeric[j] && text[j]) {
        return Err(format!(
            "{}: column {:?} holds text and no numbers: choose numeric columns",
            path.display(),
            headers[idx[j]]
        )
        .into());
    }
    Ok((idx.len(), data))
}

/// How many records (consecutive rows of `width` values) have a finite value outside `[lo, hi]`: a
/// count of the private data, for the local log only.
fn count_outside(data: &[f64], width: usize, lo: f64, hi: f64) -> usize {
    data.chunks(width.max(1)).filter(|row| row.iter().any(|v| v.is_finite() && !(lo..=hi).contains(v))).count()
}

/// How many points have a coordinate outside `[lo, hi]` (snapped or clamped by the mechanism): a
/// count of the private data, for the local log only.
/// Writes the local log's line counting the points outside `[lo, hi]` in any coordinate and, when
/// there are any, says so on stderr (the count itself only in the log: it describes the data).
fn log_outside(out: &std::path::Path, points: &Points, lo: f64, hi: f64, flag: &str) -> Result<(), Failure> {
    let count = count_outside(&points.data, points.dim, lo, hi);
    let line = format!(
        "{count} of {} points have a coordinate outside the public domain [{lo}, {hi}] (moved to its nearest end)",
        points.len()
    );
    let log = write_local_log(out, &[line])?;
    if count > 0 {
        eprintln!(
            "fdp: warning: points outside the domain {flag} are counted in {} (NOT FOR PUBLICATION): check the domain \
             and the data's units",
            log.display()
        );
    }
    Ok(())
}

fn kde(args: KdeArgs, bar: &ProgressBar) -> Result<(), Failure> {
    bar.set_message(format!("reading {}", args.csv.display()));
    let points = read_points(&args.csv, Columns::Named(&args.column))?;
    if points.dim != 1 {
        return Err(format!("{} columns are named {:?}; a density needs one", points.dim, args.column).into());
    }
    let spec = spec_with_budget("kde", &args.privacy).with("domain", serde_json::json!([args.domain.0, args.domain.1]));
    let spec = with_given(spec, "method", args.mechanism.clone().map(serde_json::Value::from));
    let spec = with_given(spec, "kernel", args.kernel.clone().map(serde_json::Value::from));
    let spec = with_given(spec, "grid_points", args.grid_points.map(serde_json::Value::from));
    let spec = with_given(spec, "eta", args.eta.map(number));
    let spec = with_given(spec, "bandwidth", args.bandwidth.map(number));
    let mechanism = build(&spec, &Frame::new(points.len(), None))?;
    bar.set_message("releasing");
    let (session, released) = release_committed(&args.privacy, &mechanism, points.input())?;
    let Released::Curve(release) = released else { return Err(unexpected(&released)) };
    let notes = vec![format!(
        "{} points of column {:?}, snapped to {} grid points of [{}, {}] (outside: the nearest end; not a number: the centre)",
        points.len(),
        args.column,
        mechanism.spec().params["grid_points"],
        args.domain.0,
        args.domain.1
    )];
    let title = format!("Private density ({}), ε = {}", mechanism.name(), args.privacy.epsilon.get());
    let axes = FigureAxes::named(args.column.clone(), "density");
    let report = write_curve_report(&args.privacy.out, &title, &release, session.session(), &notes, &axes)?;
    bar.finish_and_clear();
    announce(session.session(), mechanism.name(), &report);
    let flag = format!("--domain {},{}", args.domain.0, args.domain.1);
    log_outside(&args.privacy.out, &points, args.domain.0, args.domain.1, &flag)
}

fn kme(args: KmeArgs, bar: &ProgressBar) -> Result<(), Failure> {
    bar.set_message(format!("reading {}", args.csv.display()));
    let points = read_points(&args.csv, Columns::Prefix(&args.columns))?;
    args.privacy.delta.ok_or("kme is (ε, δ)-DP: give --delta")?;
    if args.centre.len() != points.dim {
        return Err(format!("--centre has {} numbers, the data have {} columns", args.centre.len(), points.dim).into());
    }
    let spec = spec_with_budget("kme", &args.privacy).with("centre", args.centre.clone()).with("scale", args.scale);
    let spec = with_given(spec, "rho", args.rho.map(number));
    let spec = with_given(spec, "synthetic_points", args.synthetic_points.map(serde_json::Value::from));
    let spec = with_given(spec, "points_seed", args.points_seed.map(serde_json::Value::from));
    bar.set_message(format!("building the synthetic subspace and releasing from {} points", points.len()));
    let mechanism = build(&spec, &Frame::new(points.len(), None))?;
    let (session, released) = release_committed(&args.privacy, &mechanism, points.input())?;
    let Released::Weighted(release) = released else { return Err(unexpected(&released)) };
    let csv_path = args.privacy.out.join("synthetic.csv");
    std::fs::create_dir_all(&args.privacy.out)?;
    std::fs::write(&csv_path, release.output().to_csv())?;
    let extra = format!(
        "\nThe synthetic weighted dataset ({} points, weights may be negative) is in `synthetic.csv`.\n",
        mechanism.spec().params["synthetic_points"]
    );
    let report =
        write_report(&args.privacy.out, "Private synthetic dataset (KME)", &release, session.session(), &[], &extra)?;
    bar.finish_and_clear();
    announce(session.session(), mechanism.name(), &report);
    Ok(())
}

fn sketch(args: SketchArgs, bar: &ProgressBar) -> Result<(), Failure> {
    bar.set_message(format!("reading {}", args.csv.display()));
    let points = read_points(&args.csv, Columns::Prefix(&args.columns))?;
    let spec = spec_with_budget("sketch", &args.privacy).with("dim", points.dim);
    let spec = with_given(spec, "map", args.map.clone().map(serde_json::Value::from));
    let spec = with_given(spec, "size", args.size.map(serde_json::Value::from));
    let spec = with_given(spec, "width", args.width.map(number));
    let spec = with_given(spec, "buckets", args.buckets.map(serde_json::Value::from));
    let spec = with_given(spec, "map_seed", args.map_seed.map(serde_json::Value::from));
    // The M2M estimates are computed after the release: their prior must be valid before the charge.
    let mechanism = build(&spec, &Frame::new(points.len(), None))?;
    mechanism.check_m2m_prior(args.prior_points)?;
    bar.set_message("releasing");
    let (session, released) = release_committed(&args.privacy, &mechanism, points.input())?;
    let Released::Sketch(release) = released else { return Err(unexpected(&released)) };
    bar.set_message("M2M estimates");
    // Post-processing of a release already paid for: if it fails, the release is still written.
    let d = points.dim;
    let mut extra = String::from("\n## M2M estimates (post-processing)\n\n");
    match mechanism.m2m(&release, args.prior_points, args.prior_seed) {
        Ok(m2m) => {
            extra += "| coordinate | mean | variance |\n|---|---|---|\n";
            for j in 0..d {
                extra += &format!("| {j} | {:.4} | {:.4} |\n", m2m.means[j], m2m.covariance[j * d + j]);
            }
        }
        Err(e) => extra += &format!("Not available for this release: {e}.\n"),
    }
    let report = write_report(&args.privacy.out, "Private sketch", &release, session.session(), &[], &extra)?;
    bar.finish_and_clear();
    announce(session.session(), mechanism.name(), &report);
    log_outside(&args.privacy.out, &points, 0.0, 1.0, "[0, 1]^D")
}

/// `NAME=VALUE` as a spec parameter: VALUE as JSON if it is JSON, else as text.
fn spec_param(text: &str) -> Result<(String, serde_json::Value), Failure> {
    let (name, value) = text.split_once('=').ok_or_else(|| format!("--param {text:?}: expected NAME=VALUE"))?;
    let value = serde_json::from_str(value.trim()).unwrap_or_else(|_| serde_json::Value::String(value.trim().into()));
    Ok((name.trim().to_string(), value))
}

/// `fdp release NAME`: any registered mechanism, built from its spec by `fdp::registry` and
/// released through the one path (`release_committed`).
fn release_registered(args: ReleaseArgs, bar: &ProgressBar) -> Result<(), Failure> {
    let (name, csv, privacy) = (args.mechanism.as_str(), &args.csv, &args.privacy);
    let entry = registry::entry(name)?;
    let flags = [
        ("--id", args.id.is_some(), matches!(entry.input, InputKind::Curves)),
        ("--long", args.long.is_some(), matches!(entry.input, InputKind::Curves | InputKind::SparseCurves)),
        ("--grid", args.grid.is_some(), matches!(entry.input, InputKind::Curves | InputKind::SparseCurves)),
        ("--columns", args.columns.is_some(), !matches!(entry.input, InputKind::SparseCurves)),
        ("--response", args.response.is_some(), matches!(entry.input, InputKind::Labelled)),
    ];
    if let Some((flag, _, _)) = flags.iter().find(|(_, given, applies)| *given && !applies) {
        return Err(format!("{flag} does not apply to {} (it reads {:?} data)", entry.name, entry.input).into());
    }
    let mut spec = spec_with_budget(entry.name, privacy);
    for text in &args.params {
        let (key, value) = spec_param(text)?;
        if key == "epsilon" || key == "delta" {
            return Err(format!("--param {key}: give it as --{key}").into());
        }
        // A second value would silently replace the first.
        if spec.params.contains_key(&key) {
            return Err(format!("--param {key} is given twice").into());
        }
        spec = spec.with(&key, value);
    }
    bar.set_message(format!("reading {}", csv.display()));
    let mut notes = Vec::new();
    let mut local = Vec::new();
    let sparse;
    let person;
    let records;
    let points;
    let responses;
    let (frame, input) = match entry.input {
        InputKind::Curves => {
            let source = CurveSource {
                csv: csv.clone(),
                columns: args.columns.clone(),
                id: args.id.clone(),
                long: args.long.clone(),
                grid: args.grid.clone(),
            };
            records = load_curves(&source)?;
            notes.clone_from(&records.notes);
            notes.push(GRID_MAPPED_NOTE.into());
            local.clone_from(&records.local);
            let frame =
                Frame::new(records.curves.n(), Some(records.curves.grid().clone())).protecting(records.unit.clone());
            (frame, Input::Curves { curves: &records.curves, unit: &records.unit })
        }
        InputKind::SparseCurves => {
            let names: Vec<&str> = args.long.as_deref().unwrap_or_default().split(',').map(str::trim).collect();
            let [id, t, y] = names.as_slice() else {
                return Err("sparse curves are read from a long table: --long ID,T,Y --grid LO,HI,K".into());
            };
            let grid = args.grid.clone().ok_or("sparse curves need the public grid: --grid LO,HI,K")?;
            let (read, _ids) = read_sparse_csv(csv, id, t, y, grid.domain()[0])?;
            sparse = read;
            person = PrivacyUnit::person(*id);
            let frame = Frame::new(sparse.n(), Some(grid)).protecting(person.clone());
            (frame, Input::Sparse { curves: &sparse, unit: &person })
        }
        InputKind::Points => {
            let prefix = args.columns.as_deref().ok_or("points are read from the columns --columns PREFIX")?;
            points = read_points(csv, Columns::Prefix(prefix))?;
            (Frame::new(points.len(), None), points.input())
        }
        InputKind::Labelled => {
            let prefix = args.columns.as_deref().ok_or("the inputs are read from the column --columns NAME")?;
            let response =
                args.response.as_deref().ok_or("a regression needs its response column: --response COLUMN")?;
            points = read_points(csv, Columns::Prefix(prefix))?;
            responses = read_columns(csv, Columns::Named(response))?.1;
            (Frame::new(points.len(), None), Input::Labelled { x: &points.data, y: &responses })
        }
    };
    bar.set_message("releasing");
    let built = build(&spec, &frame)?;
    let (session, released) = release_committed(privacy, &built, input)?;
    let title = format!("{} ({}), ε = {}", entry.name, built.name(), privacy.epsilon.get());
    let (out, s) = (&privacy.out, session.session());
    let report = match released {
        Released::Curve(release) => {
            let x = built.display_grid().map(|g| g.points().to_vec());
            let axes = FigureAxes { x, ..FigureAxes::named("t", "value") };
            write_curve_report(out, &title, &release, s, &notes, &axes)?
        }
        Released::Covariance(release) => {
            let x = built.display_grid().map(|g| g.points().to_vec());
            let axes = FigureAxes { x, ..FigureAxes::named("t", "principal component") };
            write_fpca_report(out, &title, &release, release.output().components().min(3), s, &notes, &axes)?
        }
        Released::Weighted(release) => write_report(out, &title, &release, s, &notes, "")?,
        Released::Sketch(release) => write_report(out, &title, &release, s, &notes, "")?,
        Released::Coefficients(release) => write_report(out, &title, &release, s, &notes, "")?,
        _ => return Err("a release of a kind this command line does not know: update fdp".into()),
    };
    if !local.is_empty() {
        let log = write_local_log(out, &local)?;
        eprintln!("fdp: what was read and repaired (NOT FOR PUBLICATION) is in {}", log.display());
    }
    bar.finish_and_clear();
    announce(s, built.name(), &report);
    Ok(())
}

fn ledger_show(path: &Path) -> Result<(), Failure> {
    let session = Session::load(path)?;
    let (spent_e, spent_d) = session.spent();
    let (left_e, left_d) = session.remaining();
    println!(
        "ledger {} ({:?} neighbours): hash chain verified, head {}",
        path.display(),
        session.relation(),
        session.head()
    );
    let (total_e, total_d) = session.budget();
    println!("budget  epsilon={total_e:.6} delta={total_d:.3e}");
    println!("spent   epsilon={spent_e:.6} delta={spent_d:.3e}");
    println!("left    epsilon={left_e:.6} delta={left_d:.3e}");
    for e in session.ledger() {
        println!(
            "#{:<3} {:<24} epsilon={:.6} delta={:.3e} seeded={} released={}",
            e.index,
            e.mechanism,
            e.epsilon,
            e.delta,
            e.rng.is_seeded(),
            e.released
        );
    }
    Ok(())
}
