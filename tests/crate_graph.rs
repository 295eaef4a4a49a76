//! The crate graph keeps its layers (issue 24): the release path — `fdp-noise` (privacy primitives)
//! and `fdp-core` (mechanisms, releases, sessions) — depends on no functional-data crate. Checked on
//! the resolved graph (`cargo metadata`), transitively, so that a dependency through another crate
//! counts too.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

/// The workspace's resolved graph: package name -> the names of its normal and build dependencies.
fn library_dependencies() -> HashMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let metadata = |offline: bool| {
        Command::new(&cargo)
            .args(["metadata", "--format-version", "1"])
            .args(offline.then_some("--offline"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs")
    };
    // Offline first; a fresh cargo home lacks the manifests of the lock file's packages that no
    // build on this platform downloaded (the full resolve needs them): then fetch them.
    let output = Some(metadata(true)).filter(|o| o.status.success()).unwrap_or_else(|| metadata(false));
    assert!(output.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let names: HashMap<&str, &str> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().expect("id"), p["name"].as_str().expect("name")))
        .collect();
    metadata["resolve"]["nodes"]
        .as_array()
        .expect("resolve.nodes")
        .iter()
        .map(|node| {
            let deps = node["deps"]
                .as_array()
                .expect("deps")
                .iter()
                // A dependency is the library's when one of its kinds is normal (null) or build.
                .filter(|d| {
                    d["dep_kinds"].as_array().expect("dep_kinds").iter().any(|k| k["kind"].as_str() != Some("dev"))
                })
                .map(|d| names[d["pkg"].as_str().expect("pkg")].to_string())
                .collect();
            (names[node["id"].as_str().expect("id")].to_string(), deps)
        })
        .collect()
}

/// Every crate `root` depends on, directly or not.
fn closure(graph: &HashMap<String, Vec<String>>, root: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(name) = todo.pop() {
        for dep in graph.get(&name).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                todo.push(dep.clone());
            }
        }
    }
    seen
}

#[test]
fn the_release_path_depends_on_no_functional_data_crate() {
    let graph = library_dependencies();
    let functional = ["fdp-mercer", "fdp-data", "fdp-functional", "fdp-estimators", "fdp-kme", "fdp-report"];
    for root in ["fdp-noise", "fdp-core"] {
        assert!(graph.contains_key(root), "{root} is not in the workspace graph");
        let deps = closure(&graph, root);
        let bad: Vec<&str> = functional.iter().copied().filter(|f| deps.contains(*f)).collect();
        assert!(bad.is_empty(), "{root} depends on {bad:?} (all of its dependencies: {deps:?})");
    }
    // fdp-core is on the release path's side of the line, and the functional layer is above it.
    assert!(closure(&graph, "fdp-core").contains("fdp-noise"));
    assert!(closure(&graph, "fdp-functional").contains("fdp-core"));
}
