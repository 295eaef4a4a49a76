//! The long CSV layout: `(id, t, y)` rows, put on a public grid, become the same curve set as the
//! wide layout.

use fdp_data::{CsvSpec, read_long_csv, read_wide_csv};
use fdp_mercer::Grid;

fn public_grid() -> Grid {
    Grid::trapezoid_points(vec![0.0, 0.5, 1.0]).unwrap()
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fdp-long-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn long_rows_pivot_to_the_wide_curves_with_missing_pairs_repaired() {
    let long = write("long.csv", "id,t,y\nb,0.5,2\na,0,1\na,0.5,3\nb,0,NA\na,1,5\nb,1,4\nc,1,7\n");
    let wide = write("wide.csv", "id,y_0,y_0.5,y_1\na,1,3,5\nb,,2,4\nc,,,7\n");
    let from_long = read_long_csv(&long, "id", "t", "y", &public_grid(), None).unwrap();
    let from_wide = read_wide_csv(&wide, &CsvSpec::prefix("y_"), None).unwrap();
    // ids in order of first appearance: b, a, c.
    assert_eq!(from_long.ids, vec![vec!["b".to_string()], vec!["a".into()], vec!["c".into()]]);
    assert_eq!(from_long.curves.grid().points(), from_wide.curves.grid().points());
    assert_eq!(from_long.curves.row(0), from_wide.curves.row(1));
    assert_eq!(from_long.curves.row(1), from_wide.curves.row(0));
    assert_eq!(from_long.curves.row(2), &[7.0, 7.0, 7.0]);
    // Every id has an observation, so none is defaulted; the gaps were filled on the grid.
    assert_eq!(from_long.report.defaulted, 0);
}

#[test]
fn the_grid_is_the_public_one_whatever_the_observation_times() {
    // Observation times nowhere near the grid: the grid stays the public one, each id is
    // interpolated onto it (constant beyond its first and last observation).
    let long = write(
        "offgrid.csv",
        "id,t,y
a,0.1,1
a,0.3,2
b,0.77,4
b,0.31,0
c,,NA
",
    );
    let loaded = read_long_csv(&long, "id", "t", "y", &public_grid(), None).unwrap();
    assert_eq!(loaded.curves.grid().points(), &[0.0, 0.5, 1.0]);
    assert_eq!(loaded.curves.row(0), &[1.0, 2.0, 2.0]);
    let b = loaded.curves.row(1);
    assert_eq!((b[0], b[2]), (0.0, 4.0));
    assert!((b[1] - 4.0 * 0.19 / 0.46).abs() < 1e-12, "{b:?}");
    assert_eq!(loaded.curves.row(2), &[0.0; 3]); // no usable observation: the public default
    assert_eq!(loaded.report.defaulted, 1);
    assert!(!loaded.notes.iter().any(|n| n.contains("0.31") || n.contains("0.77")), "{:?}", loaded.notes);
}

#[test]
fn no_cell_of_a_long_file_is_an_error_but_a_missing_column_is() {
    // Two observations at the same time are averaged; an unreadable time is a missing observation.
    let twice = write("twice.csv", "id,t,y\na,0,1\na,0,2\n");
    assert_eq!(read_long_csv(&twice, "id", "t", "y", &public_grid(), None).unwrap().curves.row(0), &[1.5; 3]);
    let bad_t = write("bad_t.csv", "id,t,y\na,zero,1\na,1,3\n");
    assert_eq!(read_long_csv(&bad_t, "id", "t", "y", &public_grid(), None).unwrap().curves.row(0), &[3.0; 3]);
    assert!(read_long_csv(&twice, "id", "time", "y", &public_grid(), None).is_err());
}
