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
    // Every release of this test: the same data, ε and bound.
    let mean = |extra: &[&str]| {
        fdp(&[&["mean", "--csv", csv_s, "--columns", "y_", "--epsilon", "0.6", "--bound", "l1:2"][..], extra].concat())
    };
    let first = mean(&[
        "--budget-epsilon",
        "1",
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
    // The repair counts describe the private data: in the local log, never in the report.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("complete") && !report.contains("replaced by the public default (zero)"), "{report}");
    assert!(report.contains("privacy unit: one row; n = 121 rows (public)"), "{report}");
    let log = std::fs::read_to_string(out.join("local-log.txt")).unwrap();
    assert!(log.starts_with("NOT FOR PUBLICATION"), "{log}");
    assert!(log.contains("121 rows") && log.contains("1 replaced by the public default"), "{log}");
    // The column "id" has no repeated value: no warning.
    assert!(!text(&first).contains("warning"), "{}", text(&first));
    let release: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("release.json")).unwrap()).unwrap();
    assert_eq!(release["metadata"]["n"], 121);
    assert_eq!(release["metadata"]["privacy_unit"], "record");
    // 0.4 left: a second ε = 0.6 is refused, naming what was spent, and nothing is charged.
    let scratch = dir.join("second");
    let second = mean(&["--ledger", ledger_s, "--out", scratch.to_str().unwrap()]);
    assert_eq!(second.status.code(), Some(1));
    assert!(text(&second).contains("spent (ε = 0.6"), "{}", text(&second));
    let show = fdp(&["ledger", "show", ledger_s]);
    assert!(text(&show).contains("spent   epsilon=0.600000") && text(&show).contains("seeded=true"), "{}", text(&show));
    // Same seed, same data, same ledger state: the same release, bit for bit.
    let again = dir.join("again");
    let third = mean(&["--centre", "0.5", "--out", again.to_str().unwrap(), "--seed", "4"]);
    assert!(third.status.success(), "{}", text(&third));
    let curve = |p: &Path| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(p.join("release.json")).unwrap()).unwrap()["output"]["curve"].clone()
    };
    assert!(curve(&out).is_array());
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
            "--grid",
            "0,9,10",
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
        vec![
            "preview",
            "--csv",
            &p("long.csv"),
            "--long",
            "id,t,y",
            "--grid",
            "0,9,10",
            "--epsilon",
            "1",
            "--bound",
            "l1:2",
        ],
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
    let long = p("long.csv");
    let base = ["preview", "--csv", &long, "--long", "id,t,y", "--grid", "0,9,10", "--epsilon", "1", "--bound", "l1:2"];
    let preview = fdp(&base);
    assert!(
        text(&preview).contains("expected_sq_error=") && text(&preview).contains("unit=person:id"),
        "{}",
        text(&preview)
    );
    // A preview spends nothing and writes nothing: a release's ledger or seed is refused, not ignored.
    let ledger = p("preview-ledger.json");
    let o = fdp(&[&base[..], &["--ledger", &ledger]].concat());
    assert!(!o.status.success() && text(&o).contains("--ledger does not apply to preview"), "{}", text(&o));
    assert!(!Path::new(&ledger).exists());
    let o = fdp(&[&base[..], &["--overwrite"]].concat());
    assert!(!o.status.success() && text(&o).contains("--overwrite does not apply to preview"), "{}", text(&o));
    let release: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("m/release.json")).unwrap()).unwrap();
    assert_eq!(release["metadata"]["privacy_unit"]["person"]["id_column"], "id");
    assert_eq!(release["metadata"]["n"], 60);
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
        // A long table needs the public grid; the grid is for long tables only.
        (vec!["mean", "--csv", "x.csv", "--long", "id,t,y", "--epsilon", "1", "--bound", "l1:1"], "--grid"),
        (
            vec!["mean", "--csv", "x.csv", "--columns", "y_", "--grid", "0,1,5", "--epsilon", "1", "--bound", "l1:1"],
            "--columns",
        ),
        (
            vec!["mean", "--csv", "x.csv", "--long", "id,t,y", "--grid", "0,1,1", "--epsilon", "1", "--bound", "l1:1"],
            "K",
        ),
        // A count is refused while parsing, before anything of its size is allocated (it panicked).
        (
            vec![
                "mean",
                "--csv",
                "x.csv",
                "--long",
                "id,t,y",
                "--grid",
                "0,1,18446744073709551615",
                "--epsilon",
                "1",
                "--bound",
                "l1:1",
            ],
            "at most 4096",
        ),
        (vec!["kde", "--csv", "x.csv", "--column", "x", "--domain", "1,0", "--epsilon", "1"], "LO < HI"),
        // A mean needs a bound or a public range.
        (vec!["mean", "--csv", "x.csv", "--columns", "y_", "--epsilon", "1"], "--bound"),
        (vec!["mean", "--csv", "x.csv", "--columns", "y_", "--epsilon", "1", "--range", "1,0"], "LO < HI"),
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
            "--id".into(),
            "ID".into(),
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
    // 382 visits of 142 patients: the release protects patients, n = 142; the counts stay local.
    let report = std::fs::read_to_string(dir.join("release/report.md")).unwrap();
    assert!(report.contains("n = 142 persons") && !report.contains("382") && !report.contains("376"), "{report}");
    let log = std::fs::read_to_string(dir.join("release/local-log.txt")).unwrap();
    assert!(log.contains("382 rows") && log.contains("142 persons") && log.contains("up to 8 rows"), "{log}");
    let release: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("release/release.json")).unwrap()).unwrap();
    assert_eq!(release["metadata"]["n"], 142);
    assert_eq!(release["metadata"]["privacy_unit"]["person"]["id_column"], "ID");
    let second: Vec<String> = args("again");
    let o = fdp(&second.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("privacy budget exceeded") && text(&o).contains("spent (ε = 1"), "{}", text(&o));
    // Without --id the ID column's repeats are pointed out (on stderr, not in the release).
    let o = fdp(&[
        "preview",
        "--csv",
        &csv.display().to_string(),
        "--columns",
        "cca_",
        "--epsilon",
        "1",
        "--bound",
        "l1:1",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning: column \"ID\" has repeated values") && err.contains("--id ID"), "{err}");
}

/// Every number in `line` (a run of digits, signs, dots and exponents holding a digit) as `#`.
fn mask_numbers(line: &str) -> String {
    let mut out = String::new();
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        if token.chars().any(|c| c.is_ascii_digit()) {
            out.push('#');
        } else {
            out.push_str(token);
        }
        token.clear();
    };
    for c in line.chars() {
        if c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E') {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// What a release folder publishes, with exactly the released (noisy) quantities masked: the
/// curve, its coefficients, the private bound (and the sensitivity it sets), ψ chosen on the
/// release, each stage's outcome and the accuracy stage's numbers (`own_error`) — in release.json,
/// in report.md's rows that print them, and
/// every coordinate of the figure (which is drawn from the released curve; so is the number of its
/// tick marks and grid lines, so the figure is compared as the set of its distinct masked lines).
fn published(out: &Path) -> (serde_json::Value, String, std::collections::BTreeSet<String>) {
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("release.json")).unwrap()).unwrap();
    // The noise band: set by the private bound and ψ (and present or not with the family chosen).
    for key in ["curve", "coefficients", "noise_sd"] {
        json["output"][key] = "released".into();
    }
    for key in ["clipping", "regularisation", "sensitivity"] {
        json["metadata"][key] = "released".into();
    }
    // The noise scale is calibrated to the private bound's sensitivity.
    for calibration in json["metadata"]["calibration"].as_object_mut().unwrap().values_mut() {
        calibration["scale"] = "released".into();
        calibration["sensitivity"] = "released".into();
    }
    for stage in json["metadata"]["stages"].as_array_mut().unwrap() {
        stage["outcome"] = "released".into();
    }
    // The accuracy stage's numbers (post-processing of the released ones).
    if json["metadata"].get("own_error").is_some() {
        json["metadata"]["own_error"] = "released".into();
    }
    let released_rows = ["| bound |", "| tuning |", "| clipping bound |", "| η, ψ |", "| sensitivity |", "| 0 |"];
    let report = std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .lines()
        .map(|l| {
            if l.starts_with("| accuracy |") {
                // The release's own error estimate and its noise-dominated verdict: computed from the
                // released coefficients (post-processing), so released numbers and words.
                "| accuracy | released |".to_string()
            } else if released_rows.iter().any(|r| l.starts_with(r)) {
                mask_numbers(l)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let svg = std::fs::read_to_string(out.join("curves.svg")).unwrap().lines().map(mask_numbers).collect();
    (json, report, svg)
}

/// Two datasets that differ in one person — in the wide layout that person's rows are replaced by
/// fewer rows with missing and extreme values (so the repair counts and the number of rows differ),
/// in the long layout by observations at other times — give publishable outputs that differ only
/// in the released numbers: nothing else in release.json, report.md or curves.svg depends on them.
#[test]
fn neighbouring_datasets_publish_the_same_outputs_but_for_the_released_numbers() {
    let dir = scratch("neighbours");
    let header = {
        let mut h = String::from("visit,patient_id");
        (0..12).for_each(|j| h += &format!(",y_{}", j as f64 / 11.0));
        h + "\n"
    };
    let row = |visit: usize, person: usize| {
        let mut r = format!("{visit},p{person}");
        (0..12).for_each(|j| r += &format!(",{:.4}", 0.4 + 0.02 * person as f64 + 0.01 * (j + visit) as f64));
        r + "\n"
    };
    let (mut a, mut b) = (header.clone(), header);
    for person in 0..40 {
        for visit in 0..1 + person % 4 {
            a += &row(visit, person);
            if person != 3 {
                b += &row(visit, person);
            }
        }
    }
    // Person p3: four clean visits in A; in B two visits, one with holes, one huge.
    b += &format!("0,p3,NA,0.5{}\n", ",".repeat(10));
    b += &format!("1,p3{}\n", ",1e300".repeat(12));
    std::fs::write(dir.join("a.csv"), a).unwrap();
    std::fs::write(dir.join("b.csv"), b).unwrap();
    let long = |moved: bool| {
        let mut text = String::from("id,t,y\n");
        for person in 0..30 {
            let times: Vec<f64> =
                if moved && person == 5 { vec![0.05, 0.37, 0.81] } else { (0..6).map(|j| j as f64 / 5.0).collect() };
            for (j, t) in times.iter().enumerate() {
                let y = if moved && person == 5 && j == 1 { "NA".to_string() } else { format!("{:.3}", 0.5 + 0.1 * t) };
                text += &format!("s{person},{t},{y}\n");
            }
        }
        text
    };
    std::fs::write(dir.join("la.csv"), long(false)).unwrap();
    std::fs::write(dir.join("lb.csv"), long(true)).unwrap();
    let run = |csv: &str, layout: &[&str], out: &str| {
        let (csv, out) = (dir.join(csv), dir.join(out));
        let mut args = vec!["mean", "--csv", csv.to_str().unwrap()];
        args.extend_from_slice(layout);
        args.extend_from_slice(&["--epsilon", "1", "--bound", "l1:2", "--centre", "0.5", "--seed", "11"]);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        let o = fdp(&args);
        assert!(o.status.success(), "{}", text(&o));
        dir.join(out)
    };
    for (a, b, layout) in [
        ("a.csv", "b.csv", &["--columns", "y_", "--id", "patient_id"][..]),
        ("la.csv", "lb.csv", &["--long", "id,t,y", "--grid", "0,1,8"][..]),
    ] {
        let (out_a, out_b) = (run(a, layout, &format!("{a}-out")), run(b, layout, &format!("{b}-out")));
        let (json_a, report_a, svg_a) = published(&out_a);
        let (json_b, report_b, svg_b) = published(&out_b);
        assert_eq!(json_a, json_b, "{layout:?}");
        assert_eq!(report_a, report_b, "{layout:?}");
        assert!(svg_a == svg_b, "{layout:?}: {:?}", svg_a.symmetric_difference(&svg_b).collect::<Vec<_>>());
        // The grid is the public one (the columns' values, or --grid), never the observed times.
        let grid = &json_a["output"]["grid_points"];
        assert_eq!(grid.as_array().unwrap().len(), if layout[0] == "--long" { 8 } else { 12 }, "{grid}");
        // The data did differ (in what the local log describes, and in the released numbers).
        let read = |p: &Path, f: &str| std::fs::read_to_string(p.join(f)).unwrap();
        // (Unless both releases are the public centre — ψ = ∞, no regularisation recorded — which the
        // default publishes when the signal is not distinguishable from the noise: issue 23.)
        let centre = |p: &Path| {
            let json: serde_json::Value = serde_json::from_str(&read(p, "release.json")).unwrap();
            json["metadata"]["regularisation"].is_null()
        };
        if !(centre(&out_a) && centre(&out_b)) {
            assert_ne!(read(&out_a, "release.json"), read(&out_b, "release.json"));
        }
        if layout[0] != "--long" {
            assert_ne!(read(&out_a, "local-log.txt"), read(&out_b, "local-log.txt"));
        }
    }
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
    // A huge ε makes M2M's noise-aware ridge tiny (2-D marginal histograms: a singular Gram
    // matrix): the sketch paid for is written with its M2M estimates (it used to exit 1 without a
    // release after the charge).
    let huge = ["sketch", "--csv", csv.as_str(), "--columns", "x", "--epsilon", "1e8", "--out", &p("huge")];
    let o = fdp(&huge);
    assert!(o.status.success(), "{}", text(&o));
    let report = std::fs::read_to_string(dir.join("huge").join("report.md")).unwrap();
    assert!(dir.join("huge").join("release.json").exists() && report.contains("| coordinate | mean | variance |"));
    let before = std::fs::read(&ledger).unwrap();
    for args in &refused {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(fdp(&args).status.code(), Some(1), "{args:?}");
        assert_eq!(std::fs::read(&ledger).unwrap(), before, "{args:?} changed the ledger");
    }
}

#[test]
fn parallel_runs_on_one_ledger_never_overspend_and_a_tampered_ledger_is_refused() {
    let dir = scratch("parallel");
    let csv = curves_csv(&dir);
    let ledger = dir.join("ledger.json");
    let (csv_s, ledger_s) = (csv.to_str().unwrap(), ledger.to_str().unwrap());
    // Eight processes at ε = 0.25 each against a budget of 1, started together from threads.
    let successes = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let out = dir.join(format!("par{i}"));
                scope.spawn(move || {
                    Command::new(env!("CARGO_BIN_EXE_fdp"))
                        .args(["mean", "--csv", csv_s, "--columns", "y_", "--epsilon", "0.25", "--budget-epsilon", "1"])
                        .args(["--bound", "l1:2", "--centre", "0.5", "--tuning", "plug-in", "--ledger", ledger_s])
                        .args(["--quiet", "--out"])
                        .arg(&out)
                        .output()
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).filter(|o| o.status.success()).count()
    });
    assert_eq!(successes, 4, "exactly four ε = 0.25 releases fit a budget of 1");
    let entries =
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&ledger).unwrap()).unwrap()["entries"]
            .as_array()
            .unwrap()
            .len();
    assert_eq!(entries, 4, "no charge was lost");
    let shown = fdp(&["ledger", "show", ledger_s]);
    let shown_text = text(&shown);
    assert!(shown.status.success() && shown_text.contains("hash chain verified"), "{shown_text}");
    assert!(shown_text.contains("spent   epsilon=1.000000"), "{shown_text}");
    // Lower the stored spend by hand: the next run is refused, and nothing is released.
    let json = std::fs::read_to_string(&ledger).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value["budget"]["spent_epsilon"] = 0.0.into();
    std::fs::write(&ledger, serde_json::to_string(&value).unwrap()).unwrap();
    let out = dir.join("after-tamper");
    let refused = fdp(&[
        "mean",
        "--csv",
        csv_s,
        "--columns",
        "y_",
        "--epsilon",
        "0.25",
        "--bound",
        "l1:2",
        "--centre",
        "0.5",
        "--ledger",
        ledger_s,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("ledger refused"), "{}", text(&refused));
    assert!(!out.join("release.json").exists());
}

#[test]
fn a_ledger_keeps_one_privacy_unit() {
    let dir = scratch("units");
    let csv = curves_csv(&dir);
    let ledger = dir.join("ledger.json");
    let (csv_s, ledger_s) = (csv.to_str().unwrap(), ledger.to_str().unwrap());
    let run = |id: Option<&str>, out: &str| {
        let out = dir.join(out);
        let mut args = vec![
            "mean",
            "--csv",
            csv_s,
            "--columns",
            "y_",
            "--epsilon",
            "0.5",
            "--budget-epsilon",
            "2",
            "--bound",
            "l1:2",
            "--ledger",
            ledger_s,
            "--out",
            out.to_str().unwrap(),
        ];
        if let Some(id) = id {
            args.extend(["--id", id]);
        }
        fdp(&args)
    };
    let o = run(Some("id"), "per-person");
    assert!(o.status.success(), "{}", text(&o));
    // A record-level release on the same ledger: refused before anything is charged.
    let o = run(None, "per-row");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("budgets of different privacy units do not add up"), "{}", text(&o));
    let shown = fdp(&["ledger", "show", ledger_s]);
    assert!(text(&shown).contains("spent   epsilon=0.500000"), "{}", text(&shown));
    // The same unit again is accepted.
    assert!(run(Some("id"), "per-person-2").status.success());
}

/// `--range LO,HI` is all the frame a curator states: the centre, the ceiling and the clamp follow,
/// the release stays in the range and the report records the clamp; with plug-in tuning the range
/// is refused before anything is charged.
#[test]
fn a_public_range_gives_the_frame() {
    let dir = scratch("range");
    let csv = curves_csv(&dir);
    let (csv_s, out) = (csv.to_str().unwrap(), dir.join("release"));
    let args = ["mean", "--csv", csv_s, "--columns", "y_", "--epsilon", "0.25", "--range", "0.1,0.9", "--seed", "3"];
    let o = fdp(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let release: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("release.json")).unwrap()).unwrap();
    let curve = release["output"]["curve"].as_array().unwrap();
    assert!(curve.iter().all(|v| (0.1..=0.9).contains(&v.as_f64().unwrap())), "{curve:?}");
    let stages = release["metadata"]["stages"].as_array().unwrap();
    assert!(stages.iter().any(|s| s["stage"] == "range"), "{stages:?}");
    // The figure names the mechanism, ε and n, and its axes (the prefix y_ by default).
    let svg = std::fs::read_to_string(out.join("curves.svg")).unwrap();
    for text in ["ICLP-RKHS (privately tuned): ε = 0.25, n = 121", "\ny\n", "\nvalue\n", "private release"] {
        assert!(svg.contains(text), "{text} missing from the figure");
    }
    // A parameter given twice is refused (the second value silently replaced the first).
    let twice = ["release", "mean", "--csv", csv_s, "--columns", "y_", "--epsilon", "1", "--param", "range=[0,1]"];
    let o = fdp(&[&twice[..], &["--param", "range=[0,2]"]].concat());
    assert!(!o.status.success() && text(&o).contains("--param range is given twice"), "{}", text(&o));
    // `fdp release` refuses, as `fdp mean` does, a person column with a long table (where the
    // id of --long is the unit) and a grid with wide columns (whose names give it): both were
    // accepted and ignored, so a --id the user meant as the privacy unit silently was not one.
    for extra in [&["--long", "id,t,y", "--grid", "0,1,20", "--id", "id"][..], &["--columns", "y_", "--grid", "0,1,20"]]
    {
        let o = fdp(
            &[&["release", "mean", "--csv", csv_s, "--epsilon", "1", "--param", "range=[0,1]"][..], extra].concat()
        );
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains("cannot be used with"), "{extra:?}: {}", text(&o));
    }
    let ledger = dir.join("ledger.json");
    let plug_in = fdp(&[&args[..], &["--tuning", "plug-in", "--ledger", ledger.to_str().unwrap()]].concat());
    assert_eq!(plug_in.status.code(), Some(1), "{}", text(&plug_in));
    assert!(text(&plug_in).contains("plug-in"), "{}", text(&plug_in));
    if ledger.exists() {
        let shown = fdp(&["ledger", "show", ledger.to_str().unwrap()]);
        assert!(text(&shown).contains("spent   epsilon=0.000000"), "{}", text(&shown));
    }
}

/// The traps of a new user at the shell: a string column taken as points is refused, points outside
/// the public domain are counted in the local log (not the report), a δ given to a pure mechanism is
/// refused, and a kernel length-scale below half the grid's spacing draws a warning.
#[test]
fn front_door_traps_are_refused_or_reported_locally() {
    let dir = scratch("traps");
    let mut points = String::from("sex,humidity\n");
    for i in 0..200 {
        points += &format!("{},{}\n", if i % 2 == 0 { "M" } else { "F" }, 16.0 + (i % 25) as f64);
    }
    std::fs::write(dir.join("points.csv"), points).unwrap();
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let o = fdp(&[
        "kde",
        "--csv",
        &p("points.csv"),
        "--column",
        "sex",
        "--domain",
        "0,1",
        "--epsilon",
        "1",
        "--out",
        &p("k"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("column \"sex\" holds text and no numbers") && !text(&o).contains("\"M\""),
        "{}",
        text(&o)
    );
    assert!(!dir.join("k").exists(), "nothing is written for a refused request");
    let o = fdp(&["sketch", "--csv", &p("points.csv"), "--columns", "humidity", "--epsilon", "1", "--out", &p("s")]);
    assert!(o.status.success(), "{}", text(&o));
    let log = std::fs::read_to_string(dir.join("s/local-log.txt")).unwrap();
    assert!(log.contains("200 of 200 points have a coordinate outside the public domain [0, 1]"), "{log}");
    assert!(!std::fs::read_to_string(dir.join("s/report.md")).unwrap().contains("outside"));
    let csv = curves_csv(&dir);
    let mean = |extra: &[&str], out: &str| {
        let args = ["mean", "--csv", csv.to_str().unwrap(), "--columns", "y_", "--epsilon", "1", "--bound", "l1:2"];
        fdp(&[&args[..], extra, &["--out", &p(out)]].concat())
    };
    let o = mean(&["--delta", "1e-6"], "m");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("pure ε-DP"), "{}", text(&o));
    let o = mean(&["--kernel", "matern32:0.01"], "m");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("below half the grid's spacing"), "{}", text(&o));
    let o = mean(&[], "m-plain");
    assert!(o.status.success() && !text(&o).contains("warning"), "{}", text(&o));
}

/// Each release has a folder of its own: an `--out` holding a release.json is refused before
/// anything is charged (the ledger byte for byte), `--overwrite` replaces it; a release without
/// `--ledger` says on stderr that its ε is recorded only in its folder; `fdp kde` warns about
/// points outside the domain only when there are some.
#[test]
fn an_out_folder_holds_one_release() {
    let dir = scratch("one-release");
    let csv = curves_csv(&dir);
    let (csv_s, ledger) = (csv.to_str().unwrap(), dir.join("ledger.json"));
    let out = dir.join("release");
    let mean_into = |out: &Path, extra: &[&str]| {
        let args = ["mean", "--csv", csv_s, "--columns", "y_", "--epsilon", "0.25", "--bound", "l1:2"];
        fdp(&[&args[..], &["--out", out.to_str().unwrap()], extra].concat())
    };
    let mean = |extra: &[&str]| mean_into(&out, extra);
    let budget = ["--ledger", ledger.to_str().unwrap(), "--budget-epsilon", "1"];
    let first = mean(&budget);
    assert!(first.status.success() && !text(&first).contains("no --ledger"), "{}", text(&first));
    let before = std::fs::read(&ledger).unwrap();
    let again = mean(&budget);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(
        text(&again).contains("already holds a release") && text(&again).contains("--overwrite"),
        "{}",
        text(&again)
    );
    assert_eq!(std::fs::read(&ledger).unwrap(), before, "nothing charged");
    let first_release = std::fs::read(out.join("release.json")).unwrap();
    let replaced = mean(&[&budget[..], &["--overwrite"]].concat());
    assert!(replaced.status.success(), "{}", text(&replaced));
    assert_ne!(std::fs::read(&ledger).unwrap(), before, "the replacement is charged");
    assert_ne!(std::fs::read(out.join("release.json")).unwrap(), first_release, "and written");
    let unledgered = mean_into(&dir.join("loose"), &[]);
    assert!(unledgered.status.success() && text(&unledgered).contains("no --ledger"), "{}", text(&unledgered));
    // Points inside the domain: no warning about points outside it; one outside: the warning.
    std::fs::write(dir.join("inside.csv"), "x\n0.1\n0.5\n0.9\n").unwrap();
    std::fs::write(dir.join("outside.csv"), "x\n0.1\n0.5\n1.9\n").unwrap();
    for (file, warned) in [("inside.csv", false), ("outside.csv", true)] {
        let o = fdp(&[
            "kde",
            "--csv",
            dir.join(file).to_str().unwrap(),
            "--column",
            "x",
            "--domain",
            "0,1",
            "--epsilon",
            "1",
            "--out",
            dir.join(format!("kde-{file}")).to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(text(&o).contains("points outside the domain"), warned, "{file}: {}", text(&o));
    }
}

/// `fdp mean --sparse`: a long table kept at each id's own times, with missing values, a time
/// outside the domain and a huge value; the release is in the range, one ledger charge of ε, the
/// counts only in local-log.txt; the same seed gives the same bytes; misuse is refused.
#[test]
fn sparse_long_table_release_and_refusals() {
    let dir = scratch("sparse");
    let mut long = String::from("id,age,height\n");
    for i in 0..150 {
        for j in 0..(2 + i % 4) {
            let t = ((i * 7 + j * 5) % 18) as f64 + 1.0;
            long += &format!("c{i},{t},{}\n", 75.0 + 6.0 * t + (i % 9) as f64);
        }
    }
    long += "c3,NaN,90\nc4,40,120\nc5,7,1e300\nc6,8,\n";
    std::fs::write(dir.join("long.csv"), long).unwrap();
    let csv = dir.join("long.csv").to_str().unwrap().to_string();
    let run = |out: &str, extra: &[&str]| {
        let out = dir.join(out).to_str().unwrap().to_string();
        let mut args = vec![
            "mean",
            "--csv",
            &csv,
            "--long",
            "id,age,height",
            "--grid",
            "1,18,35",
            "--range",
            "40,210",
            "--sparse",
            "--epsilon",
            "1",
            "--seed",
            "5",
            "--out",
            &out,
        ];
        args.extend_from_slice(extra);
        (fdp(&args), out)
    };
    let (o, out) = run("a", &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("mechanism=sparse_binned_mean spent_epsilon=1.0000"), "{}", text(&o));
    let release: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(&out).join("release.json")).unwrap()).unwrap();
    let values = release["output"]["curve"].as_array().expect("the curve's values");
    assert_eq!(values.len(), 35);
    assert!(values.iter().all(|v| (40.0..=210.0).contains(&v.as_f64().unwrap())));
    let log = std::fs::read_to_string(Path::new(&out).join("local-log.txt")).unwrap();
    assert!(
        log.contains("150 records") && log.contains("2 observations with a non-finite time or value, 1 outside"),
        "{log}"
    );
    let report = std::fs::read_to_string(Path::new(&out).join("report.md")).unwrap();
    assert!(!report.contains("non-finite time or value, 1 outside"), "the counts stay local");
    let (o, again) = run("b", &[]);
    assert!(o.status.success());
    assert_eq!(
        std::fs::read(Path::new(&out).join("release.json")).unwrap(),
        std::fs::read(Path::new(&again).join("release.json")).unwrap(),
        "a fixed seed gives the same bytes"
    );
    for (extra, says) in [
        (&["--delta", "1e-6"][..], "pure ε-DP"),
        (&["--bound", "l1:3"][..], "drop --bound"),
        (&["--psi", "0.1"][..], "--psi"),
    ] {
        let (o, _) = run("c", extra);
        assert!(!o.status.success() && text(&o).contains(says), "{extra:?}: {}", text(&o));
    }
    let o = fdp(&["mean", "--csv", &csv, "--long", "id,age,height", "--grid", "1,18,35", "--sparse", "--epsilon", "1"]);
    assert!(!o.status.success() && text(&o).contains("--range"), "{}", text(&o));
}

/// `fdp fpca --sparse` on a long table with bad rows: the sparse covariance's report (fpca.svg, one
/// ledger of ε over its two stages), the same bytes at a seed and as `fdp release sparse_fpca`; bad
/// parameters refused before any ledger exists.
#[test]
fn sparse_fpca_releases_the_same_bytes_as_the_registry_and_refuses_before_charging() {
    let dir = scratch("sparse_fpca");
    let mut long = String::from("id,age,height\n");
    for i in 0..150 {
        for j in 0..(1 + i % 5) {
            let t = ((i * 7 + j * 5) % 18) as f64 + 1.0;
            long += &format!("c{i},{t},{}\n", 75.0 + 6.0 * t + (i % 9) as f64 * (t / 6.0).sin());
        }
    }
    long += "c3,NaN,90\nc4,40,120\nc5,7,1e300\nc6,8,\n";
    std::fs::write(dir.join("long.csv"), long).unwrap();
    let csv = dir.join("long.csv").to_str().unwrap().to_string();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let common = ["--csv", &csv, "--long", "id,age,height", "--grid", "1,18,35", "--epsilon", "1", "--seed", "5"];
    let fpca = |out: &str, extra: &[&str]| {
        let args = [&["fpca", "--sparse", "--range", "40,210", "--components", "4"][..], &common[..]].concat();
        let (ledger, out) = (path(&format!("{out}.json")), path(out));
        fdp(&[&args[..], extra, &["--out", &out, "--ledger", &ledger]].concat())
    };
    let o = fpca("a", &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("mechanism=sparse_covariance_laplace spent_epsilon=1.0000"), "{}", text(&o));
    assert!(dir.join("a/fpca.svg").exists());
    let ledger = std::fs::read_to_string(path("a.json")).unwrap();
    assert!(ledger.contains("bound") && ledger.contains("release"), "{ledger}");
    let o = fpca("b", &[]);
    assert!(o.status.success());
    let bytes = |out: &str| std::fs::read(dir.join(out).join("release.json")).unwrap();
    assert_eq!(bytes("a"), bytes("b"), "a fixed seed gives the same bytes");
    let r = path("r");
    let args = [
        &["release", "sparse_fpca", "--param", "range=[40,210]", "--param", "components=4"][..],
        &common[..],
        &["--out", &r],
    ]
    .concat();
    let o = fdp(&args);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(bytes("a"), bytes("r"), "fdp fpca --sparse and fdp release sparse_fpca: the same mechanism");
    // Refused before any charge: no ledger is written.
    for (extra, says) in [
        (&["--ridge", "0"][..], "ridge"),
        (&["--ridge", "nan"][..], "ridge"),
        (&["--centre", "nan"][..], "centre"),
        (&["--k", "5"][..], "--k"),
        (&["--components", "65"][..], "components"),
    ] {
        let o = fpca("c", extra);
        assert!(!o.status.success() && text(&o).contains(says), "{extra:?}: {}", text(&o));
        assert!(!dir.join("c.json").exists(), "{extra:?}: a refused run leaves no ledger");
    }
}

/// The rest of the traps at the shell: a bound without its norm or given as a range, column names
/// that carry no grid (and a file that is likely transposed), a value column of text, values outside
/// the stated range (counted in the local log, never in the report), a large δ, a δ on a pure
/// density, and a density's column named exactly even when another column's name starts with it.
#[test]
fn more_front_door_traps_are_refused_or_reported_locally() {
    let dir = scratch("traps2");
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let csv = curves_csv(&dir);
    let mean = |extra: &[&str], out: &str| {
        let args = ["mean", "--csv", csv.to_str().unwrap(), "--columns", "y_", "--epsilon", "1"];
        fdp(&[&args[..], extra, &["--out", &p(out)]].concat())
    };
    // A bare number has no norm; a pair is a range.
    let o = mean(&["--bound", "300"], "b");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("has no norm") && text(&o).contains("l1:300") && text(&o).contains("--range"),
        "{}",
        text(&o)
    );
    let o = mean(&["--bound", "40,210"], "b");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("give it as --range 40,210"), "{}", text(&o));
    // Values outside the stated range: released (each record is clipped), counted locally only.
    let o = mean(&["--range", "0.4,0.6", "--seed", "1"], "r");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("warning: records with values outside the public range --range 0.4,0.6"), "{}", text(&o));
    let log = std::fs::read_to_string(dir.join("r/local-log.txt")).unwrap();
    assert!(log.contains("of 121 records have values outside the public range [0.4, 0.6]"), "{log}");
    for published in ["report.md", "release.json", "curves.svg"] {
        let text = std::fs::read_to_string(dir.join("r").join(published)).unwrap();
        assert!(!text.contains("outside the public range"), "{published} holds the local count");
    }
    let o = mean(&["--range", "-10,10", "--seed", "1"], "in-range");
    assert!(o.status.success() && !text(&o).contains("warning"), "{}", text(&o));
    let log = std::fs::read_to_string(dir.join("in-range/local-log.txt")).unwrap();
    assert!(log.contains("0 of 121 records have values outside"), "{log}");
    // A large δ warns (a Gaussian process needs one).
    let o = mean(&["--mechanism", "gaussian-process", "--bound", "l2:2", "--delta", "0.5"], "g");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("delta = 0.5 is a large failure probability"), "{}", text(&o));
    assert!(
        !text(&mean(&["--mechanism", "gaussian-process", "--bound", "l2:2", "--delta", "1e-6"], "g2"))
            .contains("warning")
    );
    // Column names that carry no grid, in a file that holds one curve per column (3 rows, 5 columns).
    let mut wide = String::from("id,h_a,h_b,h_c,h_d,h_e\n");
    for i in 0..3 {
        wide += &format!("r{i},1,2,3,4,5\n");
    }
    std::fs::write(dir.join("wide.csv"), wide).unwrap();
    let o = fdp(&["preview", "--csv", &p("wide.csv"), "--columns", "h_", "--epsilon", "1", "--range", "0,10"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("(\"h_a\", ...) carry no grid: the 5 columns are taken as equally spaced"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("3 curves of 5 points each") && text(&o).contains("transpose"), "{}", text(&o));
    let o = fdp(&["preview", "--csv", csv.to_str().unwrap(), "--columns", "y_", "--epsilon", "1", "--range", "0,1"]);
    assert!(o.status.success() && !text(&o).contains("carry no grid"), "{}", text(&o));
    // A prefix that also selects a text column: refused by name, before anything is charged.
    std::fs::write(dir.join("text.csv"), "h_sex,h_1,h_2\nM,1,2\nF,2,3\nF,NA,1\n").unwrap();
    let o = fdp(&[
        "mean",
        "--csv",
        &p("text.csv"),
        "--columns",
        "h_",
        "--epsilon",
        "1",
        "--range",
        "0,5",
        "--out",
        &p("t"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("column \"h_sex\" holds text and no numbers") && !text(&o).contains("\"M\""),
        "{}",
        text(&o)
    );
    assert!(!dir.join("t").exists(), "nothing is written for a refused request");
    // A density's column is the one named, even when another column's name starts with it; δ on the
    // pure ICLP density is refused.
    let mut points = String::from("Humidity,HumidityRatio\n");
    for i in 0..300 {
        points += &format!("{},{}\n", 16.0 + (i % 25) as f64, 0.004);
    }
    std::fs::write(dir.join("points.csv"), points).unwrap();
    let kde = |extra: &[&str]| {
        let args = ["kde", "--csv", &p("points.csv"), "--column", "Humidity", "--domain", "0,100", "--epsilon", "1"];
        fdp(&[&args[..], extra, &["--out", &p("k")]].concat())
    };
    let o = kde(&[]);
    assert!(o.status.success(), "{}", text(&o));
    let o = kde(&["--delta", "1e-6"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("pure ε-DP"), "{}", text(&o));
}

/// `fdp fpca`: the tuned covariance (two ledger entries) and its report with the components'
/// figure; a k above J is refused before anything is charged.
#[test]
fn fpca_releases_a_report_and_refuses_k_above_j_before_the_charge() {
    let dir = scratch("fpca");
    let csv = curves_csv(&dir);
    let out = dir.join("f").to_str().unwrap().to_string();
    let ledger = dir.join("ledger.json").to_str().unwrap().to_string();
    let base = ["fpca", "--csv", csv.to_str().unwrap(), "--columns", "y_", "--range", "-3,3", "--epsilon", "1"];
    let o = fdp(&[&base[..], &["--components", "4", "--k", "5", "--ledger", &ledger, "--out", &out]].concat());
    assert!(!o.status.success() && text(&o).contains("--k must be between 1 and --components (4)"), "{}", text(&o));
    assert!(!Path::new(&ledger).exists(), "nothing was charged");
    let o =
        fdp(&[&base[..], &["--components", "4", "--k", "2", "--seed", "3", "--ledger", &ledger, "--out", &out]]
            .concat());
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("mechanism=tuned_covariance_laplace spent_epsilon=1.0000"), "{}", text(&o));
    for file in ["release.json", "fpca.svg", "report.md", "local-log.txt"] {
        assert!(Path::new(&out).join(file).exists(), "{file}");
    }
    let report = std::fs::read_to_string(Path::new(&out).join("report.md")).unwrap();
    assert!(report.contains("| 1 |") && report.contains("share of the released covariance"), "{report}");
    let ledger: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&ledger).unwrap()).unwrap();
    assert_eq!(ledger["entries"].as_array().unwrap().len(), 2);
}
