//! Every structured eigensolver against the plain dense solve of the same matrix: eigenvalues to
//! 1e-10 relative, and the same eigenspaces (per cluster of near-equal eigenvalues).

use std::sync::Arc;

use fdp_mercer::{BasisOptions, BasisOrigin, Grid, Kernel, MercerBasis, Product, Solver, Stationary, Structure};

fn structure(basis: &MercerBasis) -> Structure {
    match basis.origin() {
        BasisOrigin::Nystrom { structure, .. } => structure,
        other => panic!("unexpected origin {other:?}"),
    }
}

/// Eigenvalues above `1e-6 λ_1` agree to `1e-10` relative, and for every cluster of them (relative
/// gaps below 1e-6) the two sets of eigenfunctions span the same space: `M = Φ_aᵀ W Φ_b` restricted
/// to the cluster is orthogonal.
fn assert_same_basis(a: &MercerBasis, b: &MercerBasis, leading: usize) {
    let (la, lb) = (a.eigenvalues(), b.eigenvalues());
    let count = la.iter().take(leading).take_while(|l| **l > 1e-6 * la[0]).count();
    assert!(count > 3 && lb.len() >= count, "{count} {}", lb.len());
    for k in 0..count {
        assert!((la[k] - lb[k]).abs() <= 1e-10 * la[k], "eigenvalue {k}: {} vs {}", la[k], lb[k]);
    }
    let w = a.grid().weights();
    let (pa, pb) = (a.eigenfunctions(), b.eigenfunctions());
    let mut start = 0;
    while start < count {
        let mut end = start + 1;
        while end < count && (la[end - 1] - la[end]) <= 1e-6 * la[end - 1] {
            end += 1;
        }
        let m: Vec<Vec<f64>> = (start..end)
            .map(|r| (start..end).map(|c| (0..w.len()).map(|i| w[i] * pa[(i, r)] * pb[(i, c)]).sum()).collect())
            .collect();
        for r in 0..m.len() {
            for c in 0..m.len() {
                let dot: f64 = (0..m.len()).map(|q| m[q][r] * m[q][c]).sum();
                let want = if r == c { 1.0 } else { 0.0 };
                assert!((dot - want).abs() < 1e-8, "cluster {start}..{end}: {dot}");
            }
        }
        start = end;
    }
}

/// The reference: the plain dense solve of the kernel evaluated at every pair of points (a 1-D grid
/// is rebuilt as a custom grid, so no Toeplitz fill either).
fn plain(kernel: Arc<dyn Kernel>, grid: &Grid) -> MercerBasis {
    let grid = if grid.dim() == 1 {
        Grid::with_weights(grid.points().to_vec(), grid.weights().to_vec()).unwrap()
    } else {
        grid.clone()
    };
    MercerBasis::build_shared(kernel, grid, BasisOptions::default().structure(Structure::Plain)).unwrap()
}

#[test]
fn centrosymmetric_split_matches_the_dense_solve() {
    let kernels: Vec<Arc<dyn Kernel>> = vec![
        Stationary::matern32(0.1).unwrap().into(),
        Stationary::exponential(0.3).unwrap().into(),
        Stationary::gaussian(0.2).unwrap().into(),
    ];
    let grids = [
        Grid::midpoint(0.0, 1.0, 200).unwrap(),
        Grid::midpoint(-1.0, 3.0, 201).unwrap(),
        Grid::trapezoid(0.0, 1.0, 101).unwrap(),
        // A non-separable kernel on a tensor grid symmetric about its centre (point reversal).
        Grid::tensor(&Grid::midpoint(0.0, 1.0, 12).unwrap(), &Grid::trapezoid(0.0, 2.0, 9).unwrap()).unwrap(),
    ];
    for kernel in &kernels {
        for grid in &grids {
            if grid.dim() == 2 && kernel.factors(2).is_some() {
                continue; // separable: the Kronecker path (tested below)
            }
            let split = MercerBasis::build_shared(kernel.clone(), grid.clone(), BasisOptions::default()).unwrap();
            assert_eq!(structure(&split), Structure::Centrosymmetric, "{:?} on {} points", kernel.spec(), grid.len());
            let dense = plain(kernel.clone(), grid);
            assert_eq!(structure(&dense), Structure::Plain);
            assert_same_basis(&dense, &split, usize::MAX);
        }
    }
}

#[test]
fn kronecker_basis_matches_the_dense_solve() {
    let grid = Grid::tensor(&Grid::midpoint(0.0, 1.0, 20).unwrap(), &Grid::trapezoid(-1.0, 1.0, 15).unwrap()).unwrap();
    let kernels: Vec<Arc<dyn Kernel>> = vec![
        Stationary::gaussian(0.3).unwrap().with_variance(2.0).unwrap().into(),
        Arc::new(
            Product::new(vec![Stationary::exponential(0.2).unwrap().into(), Stationary::matern32(0.5).unwrap().into()])
                .unwrap(),
        ),
        Arc::new(fdp_mercer::Brownian::new()),
    ];
    for kernel in kernels {
        let grid = if kernel.spec().name == "brownian" {
            Grid::tensor(&Grid::midpoint(0.0, 1.0, 20).unwrap(), &Grid::midpoint(0.0, 2.0, 15).unwrap()).unwrap()
        } else {
            grid.clone()
        };
        let kron = MercerBasis::build_shared(kernel.clone(), grid.clone(), BasisOptions::default()).unwrap();
        assert_eq!(structure(&kron), Structure::Kronecker, "{:?}", kernel.spec());
        assert_same_basis(&plain(kernel.clone(), &grid), &kron, usize::MAX);
        // The cap and the cut-off apply to the products.
        let capped = MercerBasis::build_shared(kernel, grid, BasisOptions::default().max_components(17)).unwrap();
        assert_eq!(capped.len(), 17);
        assert_eq!(capped.eigenvalues(), &kron.eigenvalues()[..17]);
    }
}

#[test]
fn top_j_paths_match_the_dense_solve() {
    // Uniform grids: FFT products, split or (forced) plain; a custom symmetric grid: the dense
    // matrix, split. Every requested eigenpair is as accurate as the dense solve.
    let kernel: Arc<dyn Kernel> = Stationary::matern32(0.1).unwrap().into();
    let uniform = Grid::midpoint(0.0, 1.0, 600).unwrap();
    let custom = Grid::with_weights(uniform.points().to_vec(), uniform.weights().to_vec()).unwrap();
    let top = BasisOptions::default().max_components(60).solver(Solver::Randomized { power_iterations: 4 });
    let reference = plain(kernel.clone(), &uniform);
    for (grid, options, want) in [
        (&uniform, top, Structure::Centrosymmetric),
        (&uniform, top.structure(Structure::Plain), Structure::Plain),
        (&custom, top, Structure::Centrosymmetric),
        (&Grid::trapezoid(0.0, 1.0, 601).unwrap(), top, Structure::Centrosymmetric),
    ] {
        let basis = MercerBasis::build_shared(kernel.clone(), grid.clone(), options).unwrap();
        assert_eq!(structure(&basis), want);
        assert_eq!(basis.len(), 60);
        let reference = if grid.len() == 601 { plain(kernel.clone(), grid) } else { reference.clone() };
        assert_same_basis(&reference, &basis, 60);
    }
}

#[test]
fn a_structure_that_does_not_hold_is_an_error() {
    let kernel: Arc<dyn Kernel> = Stationary::matern32(0.1).unwrap().into();
    let uneven = Grid::trapezoid_points(vec![0.0, 0.1, 0.3, 0.35, 0.9, 1.0]).unwrap();
    let centro = BasisOptions::default().structure(Structure::Centrosymmetric);
    assert!(MercerBasis::build_shared(kernel.clone(), uneven.clone(), centro).is_err());
    let detected = MercerBasis::build_shared(kernel.clone(), uneven, BasisOptions::default()).unwrap();
    assert_eq!(structure(&detected), Structure::Plain);
    let kron = BasisOptions::default().structure(Structure::Kronecker);
    assert!(MercerBasis::build_shared(kernel, Grid::midpoint(0.0, 1.0, 10).unwrap(), kron).is_err());
}
