//! A [`Release`] drawn directly: its curve as a figure series, its metadata as a caption and a
//! markdown table for `report.md` — so no example copies `release.curve()` by hand.

use plotters::prelude::RGBColor;

use fdp_core::{Release, ReleaseMetadata};

use crate::curves::Series;
use fdp_functional::{Curve, CurveReleaseExt};

impl Series {
    /// The released curve of `release`, labelled with `label`, over its ±2 sd noise band when the
    /// release states its noise's pointwise sd ([`Curve::band`]).
    pub fn from_release(label: impl Into<String>, release: &Release<Curve>, color: RGBColor) -> Self {
        let series = Self::new(label, release.curve().to_vec(), color);
        match release.output().band(2.0) {
            Ok(Some((lower, upper))) => series.with_band(lower, upper),
            _ => series,
        }
    }
}

/// A mechanism's name for readers (`tuned_iclp_rkhs` → `ICLP-RKHS (privately tuned)`,
/// `gaussian_process` → `Gaussian process`, `iclp_kde` → `ICLP-KDE`): acronyms in capitals, names
/// of people capitalised, the ICLP joined to what it releases, the tuning said in words.
pub fn display_name(mechanism: &str) -> String {
    let (tuned, rest) = match mechanism.strip_prefix("tuned_") {
        Some(rest) => (true, rest),
        None => (false, mechanism),
    };
    const ACRONYMS: [&str; 10] = ["iclp", "rkhs", "iid", "kde", "gp", "erm", "kme", "rff", "race", "m2m"];
    const PROPER: [&str; 3] = ["laplace", "gaussian", "bernstein"];
    let mut words: Vec<String> = Vec::new();
    for (i, word) in rest.split('_').filter(|w| !w.is_empty()).enumerate() {
        let shown = if ACRONYMS.contains(&word) {
            word.to_ascii_uppercase()
        } else if i == 0 || PROPER.contains(&word) {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
        } else {
            word.to_string()
        };
        match words.last_mut() {
            Some(last) if last == "ICLP" => *last = format!("ICLP-{shown}"),
            _ => words.push(shown),
        }
    }
    let name = words.join(" ");
    if tuned { format!("{name} (privately tuned)") } else { name }
}

/// One line saying what a release is and guarantees, e.g.
/// `iclp_rkhs: ε = 1, δ = 0 (ReplaceOne), n = 500, clipped at 9.22 (CoefficientL1), seeded`.
pub fn metadata_caption(metadata: &ReleaseMetadata) -> String {
    let g = metadata.guarantee;
    let mut out = format!("{}: ε = {}, δ = {} ({:?})", metadata.mechanism, g.epsilon(), g.delta(), g.relation());
    if let Some(n) = metadata.n {
        out += &format!(", n = {n}");
    }
    if let fdp_core::PrivacyUnit::Person { id_column } = &metadata.privacy_unit {
        out += &format!(", per person ({id_column:?})");
    }
    if let Some(c) = metadata.clipping {
        out += &format!(", clipped at {:.4} ({:?})", c.value(), c.norm());
    }
    if metadata.rng.is_seeded() {
        out += ", seeded (not private against anyone who knows the seed)";
    }
    out
}

/// How the exact samplers spent their time (docs/DESIGN.md section 15.5).
fn sampler_timing(metadata: &ReleaseMetadata) -> &'static str {
    match metadata.sampler_timing.as_str() {
        "padded" => "padded (fixed work, whatever the noise drawn)",
        _ => "variable (a simulation: the running time depends on the noise drawn)",
    }
}

/// The metadata as a two-column markdown table (`| quantity | value |`).
pub fn metadata_table(metadata: &ReleaseMetadata) -> String {
    let g = metadata.guarantee;
    let mut rows = vec![
        ("mechanism".to_string(), metadata.mechanism.clone()),
        ("guarantee".into(), format!("(ε = {}, δ = {})-DP, {:?} neighbours", g.epsilon(), g.delta(), g.relation())),
        ("privacy unit".into(), metadata.privacy_unit.to_string()),
        ("sensitivity".into(), format!("{:.4e} ({:?})", metadata.sensitivity, metadata.sensitivity_norm)),
        ("released numbers".into(), metadata.components.to_string()),
        ("tuning".into(), format!("{:?}", metadata.tuning)),
        ("randomness".into(), format!("{:?}", metadata.rng)),
        ("sampler timing".into(), sampler_timing(metadata).into()),
    ];
    if let Some(n) = metadata.n {
        let what = match metadata.privacy_unit {
            fdp_core::PrivacyUnit::Record => "n (public)",
            _ => "n (public: persons)",
        };
        rows.insert(3, (what.into(), n.to_string()));
    }
    if let Some(c) = metadata.clipping {
        rows.push(("clipping bound".into(), format!("{:.4} in the {:?} norm", c.value(), c.norm())));
    }
    if let Some(r) = metadata.regularisation {
        rows.push(("η, ψ".into(), format!("{:.4}, {:.3e}", r.eta(), r.psi())));
    }
    let mut out = String::from("| quantity | value |\n|---|---|\n");
    for (k, v) in rows {
        out += &format!("| {k} | {v} |\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn names_for_readers() {
        assert_eq!(display_name("tuned_iclp_rkhs"), "ICLP-RKHS (privately tuned)");
        assert_eq!(display_name("iclp_l1"), "ICLP-l1");
        assert_eq!(display_name("iid_laplace"), "IID Laplace");
        assert_eq!(display_name("gaussian_process"), "Gaussian process");
        assert_eq!(display_name("iclp_kde"), "ICLP-KDE");
        assert_eq!(display_name("bernstein"), "Bernstein");
    }
}
