//! The functional layer's descriptions in a release's metadata: a basis and a kernel recorded as
//! [`Descriptor`]s (the release path does not know their types), and read back typed.
//!
//! A mechanism describes its basis or kernel once, when it is built (before any budget is
//! charged), and copies the description into every release: `privatize` never describes.

use fdp_core::{Descriptor, ReleaseMetadata, Result};
use fdp_mercer::{BasisSummary, Kernel, KernelSpec, MercerBasis};

/// The description of `basis` recorded in [`ReleaseMetadata::basis`]: its [`BasisSummary`].
pub fn basis(basis: &MercerBasis) -> Result<Descriptor> {
    Descriptor::of(&basis.summary())
}

/// The description of `kernel` recorded in [`ReleaseMetadata::kernel`]: its [`KernelSpec`].
pub fn kernel(kernel: &dyn Kernel) -> Result<Descriptor> {
    Descriptor::of(&kernel.spec())
}

/// The functional layer's fields of a [`ReleaseMetadata`], typed.
pub trait MetadataExt {
    /// The basis the release lives in, if it records one; an error if it records something else.
    fn basis_summary(&self) -> Result<Option<BasisSummary>>;
    /// The kernel the release records (outside a basis), if any; an error if it records something
    /// else.
    fn kernel_spec(&self) -> Result<Option<KernelSpec>>;
}

impl MetadataExt for ReleaseMetadata {
    fn basis_summary(&self) -> Result<Option<BasisSummary>> {
        self.basis.as_ref().map(Descriptor::to).transpose()
    }

    fn kernel_spec(&self) -> Result<Option<KernelSpec>> {
        self.kernel.as_ref().map(Descriptor::to).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdp_core::SensitivityNorm;
    use fdp_mercer::{BasisOptions, Grid, Stationary};
    use fdp_noise::{Epsilon, PrivacyGuarantee};

    /// Recorded in the metadata, a basis and a kernel are written exactly as their own types
    /// serialise (the JSON of releases did not change when the core stopped knowing them), and
    /// read back equal.
    #[test]
    fn basis_and_kernel_descriptions_round_trip_byte_for_byte() {
        let kernel = Stationary::matern32(0.1).unwrap();
        let b = MercerBasis::build(kernel, Grid::midpoint(0.0, 1.0, 40).unwrap(), BasisOptions::default()).unwrap();
        let guarantee = PrivacyGuarantee::pure(Epsilon::new(1.0).unwrap());
        let mut metadata = ReleaseMetadata::new("test", guarantee, 1.0, SensitivityNorm::L2, 10);
        metadata.basis = Some(basis(&b).unwrap());
        metadata.kernel = Some(super::kernel(&kernel).unwrap());
        let json = serde_json::to_string_pretty(&metadata).unwrap();
        let direct_basis = serde_json::to_string_pretty(&b.summary()).unwrap();
        let direct_kernel = serde_json::to_string_pretty(&kernel.spec()).unwrap();
        let indent = |text: &str| text.replace('\n', "\n  ");
        assert!(json.contains(&format!("\"basis\": {}", indent(&direct_basis))), "{json}");
        assert!(json.contains(&format!("\"kernel\": {}", indent(&direct_kernel))), "{json}");
        assert_eq!(metadata.basis_summary().unwrap(), Some(b.summary()));
        assert_eq!(metadata.kernel_spec().unwrap(), Some(kernel.spec()));
        let read: ReleaseMetadata = serde_json::from_str(&json).unwrap();
        assert_eq!(read.basis_summary().unwrap(), Some(b.summary()));
        metadata.basis = metadata.kernel.clone();
        assert!(metadata.basis_summary().is_err());
    }
}
