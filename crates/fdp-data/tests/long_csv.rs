//! The long CSV layout: `(id, t, y)` rows become the same curve set as the wide layout.

use fdp_data::{CsvSpec, read_long_csv, read_wide_csv};

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
    let from_long = read_long_csv(&long, "id", "t", "y", None).unwrap();
    let from_wide = read_wide_csv(&wide, &CsvSpec::prefix("y_"), None).unwrap();
    // ids in order of first appearance: b, a, c.
    assert_eq!(from_long.ids, vec![vec!["b".to_string()], vec!["a".into()], vec!["c".into()]]);
    assert_eq!(from_long.curves.grid().points(), from_wide.curves.grid().points());
    assert_eq!(from_long.curves.row(0), from_wide.curves.row(1));
    assert_eq!(from_long.curves.row(1), from_wide.curves.row(0));
    assert_eq!(from_long.curves.row(2), &[7.0, 7.0, 7.0]);
    assert_eq!((from_long.report.complete, from_long.report.interpolated), (1, 2));
}

#[test]
fn long_layout_errors_name_the_problem() {
    let twice = write("twice.csv", "id,t,y\na,0,1\na,0,2\n");
    assert!(read_long_csv(&twice, "id", "t", "y", None).unwrap_err().to_string().contains("two observations"));
    let bad_t = write("bad_t.csv", "id,t,y\na,zero,1\n");
    assert!(read_long_csv(&bad_t, "id", "t", "y", None).unwrap_err().to_string().contains("row 2"));
    assert!(read_long_csv(&twice, "id", "time", "y", None).is_err());
}
