//! The examples' `--quick` variants, run as tests so that the reports keep working.

// Each example includes the shared helpers itself; compiled together here they appear twice.
#![allow(clippy::duplicate_mod)]

#[path = "../examples/common/mod.rs"]
mod common;

#[allow(dead_code)]
#[path = "../examples/tutorials/quickstart.rs"]
mod quickstart;

#[allow(dead_code)]
#[path = "../examples/tutorials/kde_report.rs"]
mod kde_report;

#[allow(dead_code)]
#[path = "../examples/reproductions/fig2_mechanisms.rs"]
mod fig2_mechanisms;

#[allow(dead_code)]
#[path = "../examples/reproductions/fig1_pcv_vs_plugin.rs"]
mod fig1_pcv_vs_plugin;

#[allow(dead_code)]
#[path = "../examples/benchmarks/timing_channel.rs"]
mod timing_channel;

/// Checks that the quick report of example `name` (in the temporary folder, never the working tree)
/// holds `files`.
fn assert_files(name: &str, files: &[&str]) {
    let dir = common::report_path(name, true);
    for file in files {
        assert!(dir.join(file).is_file(), "{}/{file} missing", dir.display());
    }
}

#[test]
fn quickstart_writes_its_report() {
    let out = common::report_path("quickstart", true);
    quickstart::run(Some(1), out.to_str().unwrap()).unwrap();
    assert_files("quickstart", &["report.md", "curves.svg", "release.json", "ledger.json"]);
    let json = std::fs::read_to_string(out.join("release.json")).unwrap();
    assert!(json.contains("\"tuned_iclp_rkhs\"") && json.contains("FixedSeed"));
    // Every stage is in the release and in the ledger.
    for stage in ["\"bound\"", "\"release\"", "\"tuning\""] {
        assert!(json.contains(stage), "{stage} missing from release.json");
    }
    let ledger = std::fs::read_to_string(out.join("ledger.json")).unwrap();
    assert!(ledger.contains("bound: tau = ") && ledger.contains("release: "), "{ledger}");
}

#[test]
fn kde_report_quick() {
    kde_report::run(true).unwrap();
    assert_files("kde_report", &["report.md", "kde_1d.svg", "kde_2d.svg", "erm.svg", "results.json"]);
}

#[test]
fn fig2_mechanisms_quick() {
    fig2_mechanisms::run(true).unwrap();
    assert_files("fig2_mechanisms", &["report.md", "fig2_S-1.svg", "fig2_S-4.svg", "results.json"]);
}

#[test]
fn fig1_pcv_vs_plugin_quick() {
    fig1_pcv_vs_plugin::run(true).unwrap();
    assert_files("fig1_pcv_vs_plugin", &["report.md", "fig1_matern32_S-1.svg", "results.json"]);
}

#[allow(dead_code)]
#[path = "../examples/reproductions/table2_real_data.rs"]
mod table2_real_data;

#[allow(dead_code)]
#[path = "../examples/studies/private_tuning.rs"]
mod private_tuning;

#[test]
fn private_tuning_quick() {
    // Without ../shared/data only the simulated scenarios run.
    private_tuning::run(true, shared_data().as_deref()).unwrap();
    assert_files("private_tuning", &["report.md", "results.json"]);
    let json = std::fs::read_to_string(common::report_path("private_tuning", true).join("results.json")).unwrap();
    assert!(json.contains("\"S-2-n300\"") && json.contains("\"oracle_mse\""));
}

#[allow(dead_code)]
#[path = "../examples/studies/sparse_and_fpca.rs"]
mod sparse_and_fpca;

#[test]
fn sparse_and_fpca_quick() {
    // Without ../shared/data only the simulated scenario runs.
    let results = sparse_and_fpca::run(true, shared_data().as_deref()).unwrap();
    assert_files("sparse_and_fpca", &["report.md", "results.json", "sparse_rate.svg", "eigenfunctions_s_2_n1000.svg"]);
    let cells = &results.fpca;
    assert!(cells.iter().any(|c| c.data == "S-2-n1000"));
    for c in &results.sparse {
        assert!(
            c.mse.is_finite() && c.mse > 0.0 && c.dense_mse.is_finite() && c.nonprivate_sparse_mse.is_finite(),
            "{c:?}"
        );
    }
    assert!(results.sparse_rate_slope < 0.0, "the sparse mean's error must fall with n: {}", results.sparse_rate_slope);
    assert!(results.sparse_fpca.iter().any(|c| c.data == "S-2-n1000"));
    for c in &results.sparse_fpca {
        assert!((0.0..=1.0 + 1e-9).contains(&c.subspace_dist) && c.nonprivate_subspace_dist <= 1.0 + 1e-9, "{c:?}");
        assert!(c.eigval_rel_err.is_finite() && c.tuned_tau > 0.0, "{c:?}");
    }
    for c in cells {
        assert!(c.subspace_dist.is_finite() && (0.0..=1.0 + 1e-9).contains(&c.subspace_dist), "{c:?}");
        assert!(c.nonprivate_subspace_dist <= 1.0 + 1e-9 && c.eigval_rel_err.is_finite(), "{c:?}");
    }
}

#[allow(dead_code)]
#[path = "../examples/reproductions/table3_mortality.rs"]
mod table3_mortality;

/// The real datasets, or `None` (with a note) where ../shared/data is not beside the checkout.
fn shared_data() -> Option<std::path::PathBuf> {
    let dir = fdp::data::data_dir(None);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("{} not found: real-data reproductions not run", dir.display());
        None
    }
}

#[test]
fn table2_real_data_quick() {
    let Some(dir) = shared_data() else { return };
    table2_real_data::run(true, Some(&dir), false).unwrap();
    assert_files("table2_real_data", &["report.md", "fig5_adelaide.svg", "fig5_dti_cca.svg", "results.json"]);
}

#[test]
fn table3_mortality_quick() {
    let Some(dir) = shared_data() else { return };
    table3_mortality::run(true, Some(&dir)).unwrap();
    assert_files("table3_mortality", &["report.md", "fig7_World.svg", "results.json"]);
}

#[allow(dead_code)]
#[path = "../examples/tutorials/kme_release.rs"]
mod kme_release;

#[allow(dead_code)]
#[path = "../examples/tutorials/m2m_sketches.rs"]
mod m2m_sketches;

#[test]
fn kme_release_quick() {
    kme_release::run(true).unwrap();
    assert_files("kme_release", &["report.md", "kme_D2_eps1.svg", "results.json"]);
}

#[test]
fn m2m_sketches_quick() {
    let Some(dir) = shared_data() else { return };
    m2m_sketches::run(true, Some(&dir)).unwrap();
    assert_files("m2m_sketches", &["report.md", "results.json"]);
}

#[test]
fn timing_channel_quick() {
    // One line per sampler; the timings themselves are not asserted (no timed tests in CI).
    let lines = timing_channel::run(true).unwrap();
    assert_eq!(lines.len(), 22, "{lines:?}");
    assert!(lines.iter().all(|l| l.starts_with("timing sampler=") && l.contains("distinguisher_advantage=")));
    // Each exact sampler is measured in variable time (before) and padded (after), in one run.
    let sampler = |l: &String| l.split_whitespace().nth(1).unwrap_or_default().to_string();
    let before: Vec<String> = lines.iter().filter(|l| l.contains(" variant=before ")).map(sampler).collect();
    let after: Vec<String> = lines.iter().filter(|l| l.contains(" variant=after ")).map(sampler).collect();
    assert_eq!(before.len(), 10);
    assert_eq!(before, after);
}
