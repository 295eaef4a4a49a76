//! The command line end to end: releases, the persistent ledger, refusals and exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fdp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fdp")).args(args).arg("--quiet").output().expect("the fdp binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fdp-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// 120 wide curves `y_t` on 25 points with a few missing cells and one unreadable record.
fn curves_csv(dir: &Path) -> PathBuf {
    let mut text = String::from("id");
    (0..25).for_each(|j| text += &format!(",y_{}", j as f64 / 24.0));
    text += "\n";
    for i in 0..120 {
        text += &format!("r{i}");
        for j in 0..25 {
            let t = j as f64 / 24.0;
            let cell = if (i + j) % 37 == 0 {
                "NA".to_string()
            } else {
                format!("{:.5}", 0.5 + 0.3 * (6.0 * t + i as f64 * 0.1).sin())
            };
            text += &format!(",{cell}");
        }
        text += "\n";
    }
    text += "bad"; // every value missing: the public default curve
    text += &",".repeat(25);
    text += "\n";
    let path = dir.join("curves.csv");
    std::fs::write(&path, text).unwrap();
    path
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn mean_release_then_a_refusal_from_the_same_ledger() {
    let dir = scratch("mean");
    let csv = curves_csv(&dir);
    let ledger = dir.join("ledger.json");
    let (csv_s, ledger_s) = (csv.to_str().unwrap(), ledger.to_str().unwrap());
    let out = dir.join("release");
    let first = fdp(&[
        "mean",
        "--csv",
        csv_s,
        "--columns",
        "y_",
        "--epsilon",
        "0.6",
        "--budget-epsilon",
        "1",
        "--bound",
        "l1:2",
        "--centre",
        "0.5",
        "--ledger",
        ledger_s,
        "--out",
        out.to_str().unwrap(),
        "--seed",
        "4",
    ]);
    assert!(first.status.success(), "{}", text(&first));
    for file in ["release.json", "report.md", "curves.svg"] {
        assert!(out.join(file).exists(), "{file} missing");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("121 records") && report.contains("1 replaced by the public default"), "{report}");
    let release: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("release.json")).unwrap()).unwrap();
    assert_eq!(release["metadata"]["n"], 121);
    // 0.4 left: a second ε = 0.6 is refused, naming what was spent, and nothing is charged.
    let second =
        fdp(&["mean", "--csv", csv_s, "--columns", "y_", "--epsilon", "0.6", "--bound", "l1:2", "--ledger", ledger_s]);
    assert_eq!(second.status.code(), Some(1));
    assert!(text(&second).contains("spent (ε = 0.6"), "{}", text(&second));
    let show = fdp(&["ledger", "show", ledger_s]);
    assert!(text(&show).contains("spent   epsilon=0.600000") && text(&show).contains("seeded=true"), "{}", text(&show));
    // Same seed, same data, same ledger state: the same release, bit for bit.
    let again = dir.join("again");
    let third = fdp(&[
        "mean",
        "--csv",
        csv_s,
        "--columns",
        "y_",
        "--epsilon",
        "0.6",
        "--bound",
        "l1:2",
        "--centre",
        "0.5",
        "--out",
        again.to_str().unwrap(),
        "--seed",
        "4",
    ]);
    assert!(third.status.success(), "{}", text(&third));
    let curve = |p: &Path| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(p.join("release.json")).unwrap()).unwrap()["output"]["values"].clone()
    };
    assert_eq!(curve(&out), curve(&again));
}

#[test]
fn long_layout_and_every_other_subcommand() {
    let dir = scratch("others");
    let mut long = String::from("id,t,y\n");
    for i in 0..60 {
        for j in 0..10 {
            long += &format!("s{i},{},{}\n", j as f64, (i % 7) as f64 / 7.0 + j as f64 / 20.0);
        }
    }
    std::fs::write(dir.join("long.csv"), long).unwrap();
    let mut points = String::from("x1,x2\n");
    for i in 0..300 {
        points += &format!("{},{}\n", (i % 17) as f64 / 17.0, (i % 5) as f64 / 5.0);
    }
    std::fs::write(dir.join("points.csv"), points).unwrap();
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let runs: Vec<Vec<String>> = vec![
        vec![
            "mean",
            "--csv",
            &p("long.csv"),
            "--long",
            "id,t,y",
            "--epsilon",
            "1",
            "--bound",
            "l2:2",
            "--mechanism",
            "iid-laplace",
            "--tuning",
            "plug-in",
            "--out",
            &p("m"),
        ],
        vec!["kde", "--csv", &p("points.csv"), "--column", "x1", "--domain", "0,1", "--epsilon", "1", "--out", &p("k")],
        vec![
            "kme",
            "--csv",
            &p("points.csv"),
            "--columns",
            "x",
            "--centre",
            "0.5,0.5",
            "--scale",
            "0.5",
            "--rho",
            "0.3",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--out",
            &p("e"),
        ],
        vec!["sketch", "--csv", &p("points.csv"), "--columns", "x", "--epsilon", "1", "--out", &p("s")],
        vec!["preview", "--csv", &p("long.csv"), "--long", "id,t,y", "--epsilon", "1", "--bound", "l1:2"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = fdp(&args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    assert!(
        dir.join("e/synthetic.csv").exists() && dir.join("s/report.md").exists() && dir.join("k/curves.svg").exists()
    );
    let preview = fdp(&["preview", "--csv", &p("long.csv"), "--long", "id,t,y", "--epsilon", "1", "--bound", "l1:2"]);
    assert!(text(&preview).contains("expected_sq_error="), "{}", text(&preview));
}

#[test]
fn bad_flags_exit_with_code_2_and_a_clear_message() {
    for (args, needle) in [
        (vec!["mean", "--csv", "x.csv", "--columns", "y_", "--epsilon", "0", "--bound", "l1:1"], "epsilon"),
        (vec!["mean", "--csv", "x.csv", "--columns", "y_", "--epsilon", "1", "--bound", "l9:1"], "NORM must be"),
        (
            vec![
                "mean",
                "--csv",
                "x.csv",
                "--columns",
                "y_",
                "--epsilon",
                "1",
                "--bound",
                "l1:1",
                "--kernel",
                "cauchy:1",
            ],
            "SHAPE",
        ),
        (vec!["mean", "--csv", "x.csv", "--epsilon", "1", "--bound", "l1:1"], "--columns"),
        (vec!["kde", "--csv", "x.csv", "--column", "x", "--domain", "1,0", "--epsilon", "1"], "LO < HI"),
        (vec!["nonsense"], "unrecognized subcommand"),
    ] {
        let o = fdp(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(needle), "{args:?}: {}", text(&o));
    }
    // A well-formed command on a missing file fails with exit code 1 and says which file.
    let o = fdp(&["mean", "--csv", "/nonexistent/x.csv", "--columns", "y_", "--epsilon", "1", "--bound", "l1:1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("/nonexistent/x.csv"), "{}", text(&o));
}

#[test]
fn dti_cca_with_its_missing_values_when_the_data_are_present() {
    let csv = fdp::data::data_dir(None).join("dti_cca.csv");
    if !csv.exists() {
        eprintln!("{} not found: the real-data run is skipped", csv.display());
        return;
    }
    let dir = scratch("dti");
    let ledger = dir.join("ledger.json");
    let args = |out: &str| {
        vec![
            "mean".to_string(),
            "--csv".into(),
            csv.display().to_string(),
            "--columns".into(),
            "cca_".into(),
            "--epsilon".into(),
            "1".into(),
            "--bound".into(),
            "l1:1".into(),
            "--centre".into(),
            "0.5".into(),
            "--ledger".into(),
            ledger.display().to_string(),
            "--out".into(),
            dir.join(out).display().to_string(),
        ]
    };
    let first: Vec<String> = args("release");
    let o = fdp(&first.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o));
    let report = std::fs::read_to_string(dir.join("release/report.md")).unwrap();
    assert!(report.contains("382 records") && report.contains("interpolated"), "{report}");
    let second: Vec<String> = args("again");
    let o = fdp(&second.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("privacy budget exceeded") && text(&o).contains("spent (ε = 1"), "{}", text(&o));
}

/// Regression (issue 29): requests that fail after the release would be charged are refused before
/// the ledger is opened — zero M2M prior points, a sketch whose M2M Gram matrix cannot be allocated,
/// a KDE grid whose dense basis cannot be, and an `--out` that is not a writable directory. The
/// ledger is never created; an existing ledger is left byte for byte.
#[test]
fn requests_that_would_fail_after_the_charge_are_refused_before_it() {
    let dir = scratch("refused");
    let mut points = String::from("x1,x2\n");
    for i in 0..200 {
        points += &format!("{},{}\n", (i % 13) as f64 / 13.0, (i % 7) as f64 / 7.0);
    }
    std::fs::write(dir.join("points.csv"), points).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (ledger, csv) = (p("ledger.json"), p("points.csv"));
    let sketch = |extra: &[&str], out: &str| -> Vec<String> {
        let mut args = vec!["sketch", "--csv", csv.as_str(), "--columns", "x", "--epsilon", "1"];
        args.extend(extra);
        args.extend(["--ledger", ledger.as_str(), "--out", out]);
        args.into_iter().map(String::from).collect()
    };
    let kde = |extra: &[&str], out: &str| -> Vec<String> {
        let mut args = vec!["kde", "--csv", csv.as_str(), "--column", "x1", "--domain", "0,1", "--epsilon", "1"];
        args.extend(extra);
        args.extend(["--ledger", ledger.as_str(), "--out", out]);
        args.into_iter().map(String::from).collect()
    };
    let refused = [
        sketch(&["--prior-points", "0"], &p("s0")),
        sketch(&["--map", "rff", "--size", "100000"], &p("s1")),
        sketch(&[], &format!("{}/inside", file.display())),
        kde(&["--grid-points", "100000"], &p("k0")),
        kde(&[], file.to_str().unwrap()),
    ];
    for args in &refused {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = fdp(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(!Path::new(&ledger).exists(), "{args:?} charged the ledger: {}", text(&o));
    }
    // With a ledger already there, a refusal leaves it unchanged.
    let first = fdp(&sketch(&[], &p("ok")).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(first.status.success(), "{}", text(&first));
    let before = std::fs::read(&ledger).unwrap();
    for args in &refused {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(fdp(&args).status.code(), Some(1), "{args:?}");
        assert_eq!(std::fs::read(&ledger).unwrap(), before, "{args:?} changed the ledger");
    }
}
