//! Loaders for the curve datasets in `../shared/data` (see its README for provenance and licences).

use std::path::{Path, PathBuf};

use crate::csv_load::{CsvSpec, LoadedCurves, read_wide_csv};
use crate::error::{DataError, Result};

/// Where datasets are read from: an explicit directory (a `--data-dir` flag), else `FDP_DATA_DIR`,
/// else `../shared/data` relative to the working directory.
pub fn data_dir(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("FDP_DATA_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("../shared/data"))
}

/// The curve datasets fdp knows how to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dataset {
    /// DTI fractional anisotropy along the corpus callosum, 382 x 93, 36 missing values.
    DtiCca,
    /// Half-hourly electricity demand in Adelaide on Mondays, 508 x 48.
    AdelaideMonday,
    /// Berkeley growth study heights, 93 x 31 at uneven ages.
    BerkeleyGrowth,
    /// Daily temperature at 35 Canadian stations, 35 x 365.
    CanadianTemperature,
    /// Daily precipitation at 35 Canadian stations, 35 x 365.
    CanadianPrecipitation,
    /// Tecator absorbance spectra, 215 x 100 wavelengths.
    Tecator,
    /// Medfly egg counts, 789 x 25 days.
    Medfly,
}

impl Dataset {
    /// Every dataset, for listings.
    pub const ALL: [Dataset; 7] = [
        Self::DtiCca,
        Self::AdelaideMonday,
        Self::BerkeleyGrowth,
        Self::CanadianTemperature,
        Self::CanadianPrecipitation,
        Self::Tecator,
        Self::Medfly,
    ];

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Self::DtiCca => "dti_cca",
            Self::AdelaideMonday => "adelaide_monday",
            Self::BerkeleyGrowth => "berkeley_growth",
            Self::CanadianTemperature => "canadian_temperature",
            Self::CanadianPrecipitation => "canadian_precipitation",
            Self::Tecator => "tecator",
            Self::Medfly => "medfly",
        }
    }

    fn file_and_spec(self) -> (&'static str, CsvSpec) {
        match self {
            Self::DtiCca => ("dti_cca.csv", CsvSpec::prefix("cca_").with_ids(&["ID", "visit"])),
            Self::AdelaideMonday => ("adelaide_monday_demand.csv", CsvSpec::prefix("hh_").with_ids(&["date"])),
            Self::BerkeleyGrowth => ("growth_berkeley.csv", CsvSpec::prefix("age_").with_ids(&["id", "sex"])),
            Self::CanadianTemperature => ("canadian_weather_temp.csv", CsvSpec::prefix("day_").with_ids(&["place"])),
            Self::CanadianPrecipitation => {
                ("canadian_weather_precip.csv", CsvSpec::prefix("day_").with_ids(&["place"]))
            }
            Self::Tecator => ("tecator.csv", CsvSpec::prefix("nm_").with_ids(&["Fat"])),
            Self::Medfly => ("medfly25.csv", CsvSpec::prefix("day_").with_ids(&["ID"])),
        }
    }

    /// Loads the dataset from `dir` (see [`data_dir`]); its grid is in the file's own units (the
    /// numbers in the column names, or positions 1..K). Use `curves.rescaled(0.0, 1.0)` to put it on
    /// the unit interval where kernel length-scales are set.
    pub fn load(self, dir: &Path) -> Result<LoadedCurves> {
        let (file, spec) = self.file_and_spec();
        let path = dir.join(file);
        if !path.is_file() {
            return Err(DataError::MissingFile { dataset: self.name(), path });
        }
        read_wide_csv(&path, &spec, None)
    }
}
