//! Loaders against ../shared/data (skipped with a message when the folder is absent), the CSV reader on
//! files the test writes itself, and the simulation.

use std::path::PathBuf;

use fdp_data::{CsvSpec, DataError, Dataset, Scenario, read_wide_csv, simulate};
use fdp_mercer::{BasisOptions, Grid, MercerBasis, Stationary};

fn shared_data() -> Option<PathBuf> {
    let dir = fdp_data::data_dir(None);
    let dir = if dir.is_dir() { dir } else { PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data") };
    dir.is_dir().then_some(dir)
}

#[test]
fn real_datasets_load_with_their_shapes() {
    let Some(dir) = shared_data() else {
        eprintln!("../shared/data not found: dataset shapes not checked");
        return;
    };
    let expected = [
        (Dataset::DtiCca, 382, 93),
        (Dataset::AdelaideMonday, 508, 48),
        (Dataset::BerkeleyGrowth, 93, 31),
        (Dataset::CanadianTemperature, 35, 365),
        (Dataset::CanadianPrecipitation, 35, 365),
        (Dataset::Tecator, 215, 100),
        (Dataset::Medfly, 789, 25),
    ];
    for (dataset, n, k) in expected {
        let loaded = dataset.load(&dir).unwrap();
        assert_eq!((loaded.curves.n(), loaded.curves.grid().len()), (n, k), "{}", dataset.name());
        assert!(loaded.curves.values().iter().all(|v| v.is_finite()));
        assert_eq!(loaded.ids.len(), n);
    }
    let dti = Dataset::DtiCca.load(&dir).unwrap();
    assert!(dti.report.interpolated > 0, "DTI has missing values to repair");
    let growth = Dataset::BerkeleyGrowth.load(&dir).unwrap();
    assert_eq!(growth.curves.grid().points()[1], 1.25, "ages come from the column names");
    let unit = growth.curves.rescaled(0.0, 1.0).unwrap();
    assert_eq!(unit.grid().domain(), &[(0.0, 1.0)]);
}

#[test]
fn missing_files_say_where_to_look() {
    let err = Dataset::AdelaideMonday.load(std::path::Path::new("/nonexistent")).unwrap_err();
    assert!(matches!(err, DataError::MissingFile { .. }));
    assert!(err.to_string().contains("FDP_DATA_DIR"));
}

#[test]
fn csv_reader_repairs_records_and_checks_columns() {
    let dir = std::env::temp_dir().join(format!("fdp-data-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("toy.csv");
    std::fs::write(&path, "id,x_0,x_0.5,x_1,other\na,1,NA,3,9\nb,,,,9\nc,oops,2,2,9\n").unwrap();
    let loaded = read_wide_csv(&path, &CsvSpec::prefix("x_").with_ids(&["id"]), Some(&[7.0, 7.0, 7.0])).unwrap();
    assert_eq!(loaded.curves.grid().points(), &[0.0, 0.5, 1.0]);
    assert_eq!(loaded.curves.row(0), &[1.0, 2.0, 3.0]);
    assert_eq!(loaded.curves.row(1), &[7.0; 3]);
    assert_eq!(loaded.curves.row(2), &[2.0, 2.0, 2.0]);
    assert_eq!(loaded.ids[2], vec!["c".to_string()]);
    assert!(matches!(read_wide_csv(&path, &CsvSpec::prefix("y_"), None), Err(DataError::NoValueColumns { .. })));
    let missing_id = CsvSpec::prefix("x_").with_ids(&["nope"]);
    assert!(matches!(read_wide_csv(&path, &missing_id, None), Err(DataError::MissingColumn { .. })));
    assert!(loaded.notes.is_empty(), "{:?}", loaded.notes);

    // Unsorted grid columns are read in grid order, a padded header is trimmed, and both are said.
    std::fs::write(&path, "id, x_1,x_0,x_0.5\na,3,1,2\n").unwrap();
    let loaded = read_wide_csv(&path, &CsvSpec::prefix("x_").with_ids(&["id"]), None).unwrap();
    assert_eq!(loaded.curves.grid().points(), &[0.0, 0.5, 1.0]);
    assert_eq!(loaded.curves.row(0), &[1.0, 2.0, 3.0]);
    assert_eq!(loaded.columns, vec!["x_0", "x_0.5", "x_1"]);
    assert_eq!(loaded.notes.len(), 2, "{:?}", loaded.notes);
    // Two columns at the same grid value are an error naming them.
    std::fs::write(&path, "x_1,x_1.0\n3,1\n").unwrap();
    let err = read_wide_csv(&path, &CsvSpec::prefix("x_"), None).unwrap_err();
    assert!(err.to_string().contains("same grid value"), "{err}");
    // Names that are not numbers: positions in file order, and a note saying so.
    std::fs::write(&path, "x_b,x_a\n3,1\n").unwrap();
    let loaded = read_wide_csv(&path, &CsvSpec::prefix("x_"), None).unwrap();
    assert_eq!((loaded.curves.grid().points(), loaded.notes.len()), (&[1.0, 2.0][..], 1));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn simulation_is_reproducible_and_centred_on_the_truth() {
    let grid = Grid::trapezoid(0.0, 1.0, 101).unwrap();
    let basis = MercerBasis::build(Stationary::matern32(0.1).unwrap(), grid, BasisOptions::default()).unwrap();
    for scenario in Scenario::ALL {
        let a = simulate(scenario, &basis, 2000, 1).unwrap();
        let b = simulate(scenario, &basis, 2000, 1).unwrap();
        assert_eq!(a.curves, b.curves);
        let mean = a.curves.mean_curve();
        let err: f64 = mean.iter().zip(&a.truth).map(|(m, t)| (m - t).powi(2)).sum::<f64>() / 101.0;
        // Var of the mean ≈ Σ j^-4 (4/3) / n per unit of ||φ_j||², so the error is tiny.
        assert!(err < 1e-2, "{}: {err}", scenario.label());
    }
    // S-4's truth does not depend on the sample seed.
    let s4a = simulate(Scenario::S4, &basis, 5, 1).unwrap();
    let s4b = simulate(Scenario::S4, &basis, 5, 2).unwrap();
    assert_eq!(s4a.truth, s4b.truth);
    assert!(simulate(Scenario::S1, &basis, 0, 1).is_err());
}
