//! The examples' `--quick` variants, run as tests so that the reports keep working.

#[allow(dead_code)]
#[path = "../examples/kde_report.rs"]
mod kde_report;

#[test]
fn kde_report_quick() {
    kde_report::run(true).unwrap();
    let dir = std::path::Path::new("reports/kde_report_quick");
    for file in ["report.md", "kde_1d.svg", "kde_2d.svg", "erm.svg", "results.json"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
}
