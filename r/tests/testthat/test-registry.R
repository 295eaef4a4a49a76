# Every mechanism of the registry is reachable from R: built from its own example spec, released on
# data of its input kind, charged exactly its guarantee (one ledger entry per stage).

example_data <- function(entry, n = 200) {
  set.seed(21)
  example <- entry$example
  switch(entry$input,
    curves = {
      d <- simulated_curves(n, 16, seed = 21)
      list(data = fdp_curves(d$values, d$grid), grid = NULL)
    },
    sparse_curves = {
      frame <- data.frame(id = rep(seq_len(n), each = 3), t = runif(3 * n), y = runif(3 * n))
      list(data = fdp_sparse(frame), grid = seq(0, 1, length.out = 16))
    },
    points = {
      d <- if (!is.null(example$dim)) example$dim else if (!is.null(example$centre)) length(example$centre) else 1
      list(data = matrix(runif(n * d), n, d), grid = NULL)
    },
    labelled = {
      x <- runif(n)
      list(data = list(x = x, y = sin(2 * pi * x) / 2), grid = NULL)
    }
  )
}

test_that("every registered mechanism releases from R through the one registry", {
  entries <- fdp_mechanisms()
  expect_setequal(vapply(entries, function(e) e$mechanism, ""),
                  c("mean", "sparse_mean", "fpca", "sparse_fpca", "kde", "kme", "kme_features", "kme_exponential", "sketch", "erm"))
  for (entry in entries) {
    spec <- do.call(fdp_spec, c(list(entry$mechanism), entry$example))
    input <- example_data(entry)
    mechanism <- fdp_build(spec, input$data, grid = input$grid)
    add_remove <- isTRUE(mechanism$info$add_remove)
    session <- fdp_session(epsilon = 10, delta = 1e-5, seed = 1, neighbours = if (add_remove) "add_remove_one" else "replace_one")
    r <- release(session, mechanism, input$data)
    expect_s3_class(r, "fdp_release")
    expect_equal(unname(spent(session)), c(mechanism$info$epsilon, mechanism$info$delta), info = entry$mechanism)
    expect_equal(nrow(ledger(session)), length(mechanism$info$stages), info = entry$mechanism)
    expect_true(is.data.frame(as.data.frame(r)), info = entry$mechanism)
    expect_match(to_json(r), "metadata", info = entry$mechanism)
    grDevices::pdf(NULL)
    plot(r)
    grDevices::dev.off()
  }
})

test_that("the friendly constructors write the registry's specs (no defaults of their own)", {
  expect_identical(fdp_mean(1, range = c(0, 1))$params, list(epsilon = 1, range = c(0, 1)))
  expect_identical(fdp_sketch(1, dim = 2)$params, list(epsilon = 1, dim = 2))
  expect_identical(fdp_regression(1, psi = 0.1, loss = "logistic", domain = c(0, 2))$params,
                   list(epsilon = 1, psi = 0.1, loss = "logistic", domain = c(0, 2)))
  d <- simulated_curves(100, 12, seed = 22)
  m <- fdp_build(fdp_mean(1, range = c(0, 1)), fdp_curves(d$values, d$grid))
  # The built spec states every default the registry filled in.
  registry <- Filter(function(e) e$mechanism == "mean", fdp_mechanisms())[[1]]
  defaults <- Filter(function(p) !is.null(p$default) && !identical(p$default, "(required)"), registry$params)
  for (p in defaults) expect_equal(m$info$spec$params[[p$name]], p$default, info = p$name)
})

test_that("FPCA, M2M and synthetic data read off their releases", {
  d <- simulated_curves(300, 16, seed = 23)
  r <- release(fdp_session(1, seed = 2), fdp_fpca(1, range = c(0, 1), components = 3), fdp_curves(d$values, d$grid))
  f <- fpca(r, 2)
  expect_equal(dim(f$functions), c(16, 2))
  expect_true(f$components >= 2 && f$components <= 3)  # the risk's truncation, by default
  expect_true(all(diff(f$values) <= 0))
  set.seed(24)
  points <- matrix(runif(1000), 500, 2)
  m <- fdp_build(fdp_sketch(1, dim = 2), points)
  s <- release(fdp_session(1, seed = 3, neighbours = "add_remove_one"), m, points)
  est <- m2m(s, m)
  expect_length(est$means, 2)
  expect_equal(dim(est$covariance), c(2, 2))
  k <- release(fdp_session(1, delta = 1e-6, seed = 4), fdp_synthetic(1, delta = 1e-6, centre = c(0.5, 0.5), scale = 0.3, synthetic_points = 20), points)
  expect_equal(ncol(as.data.frame(k)), 3)
})

test_that("summary states of parts merge into the whole's release, bit for bit", {
  d <- simulated_curves(200, 14, seed = 25)
  curves <- fdp_curves(d$values, d$grid)
  m <- fdp_build(fdp_mean(1, range = c(0, 1)), curves)
  a <- part_state(m, fdp_curves(d$values[1:70, ], d$grid))
  b <- part_state(m, fdp_curves(d$values[71:200, ], d$grid))
  merged <- merge_states(a, b)
  expect_identical(merged, part_state(m, curves))
  one <- release_state(fdp_session(1, seed = 8), m, merged)
  whole <- release(fdp_session(1, seed = 8), m, curves)
  expect_identical(one$curve, whole$curve)
})

test_that("a sparse long frame goes to the sparse mean on a public grid", {
  set.seed(26)
  frame <- data.frame(id = rep(1:300, each = 4), t = runif(1200), y = runif(1200))
  grid <- seq(0, 1, length.out = 21)
  r <- release(fdp_session(1, seed = 5), fdp_sparse_mean(1, range = c(0, 1)), fdp_sparse(frame), grid = grid)
  expect_equal(r$grid, grid)
  expect_error(release(fdp_session(1), fdp_sparse_mean(1, range = c(0, 1)), fdp_sparse(frame)), "public grid")
})

test_that("a report is written by fdp's own report writer", {
  d <- simulated_curves(100, 20, seed = 27)
  session <- fdp_session(1, seed = 6)
  r <- release(session, fdp_mean(1, range = c(0, 1)), fdp_curves(d$values, seq(1, 18, length.out = 20)))
  out <- tempfile("report-")
  path <- write_report(r, out, session, title = "A test", notes = "simulated", xlab = "age", ylab = "height")
  expect_true(file.exists(path))
  expect_true(all(file.exists(file.path(out, c("release.json", "curves.svg", "report.md")))))
})

test_that("a one-dimensional synthetic dataset takes its centre as a list of one number", {
  set.seed(28)
  x <- runif(300)
  expect_match(fdpriv:::.spec_json(fdp_synthetic(1, delta = 1e-6, centre = 0.5, scale = 0.3)), '"centre":\\[0.5\\]')
  expect_match(fdpriv:::.spec_json(fdp_spec("kde", epsilon = 1, domain = c(0, 1))), '"epsilon":1,"domain":\\[0,1\\]')
  r <- release(fdp_session(1, delta = 1e-6, seed = 1), fdp_synthetic(1, delta = 1e-6, centre = 0.5, scale = 0.3, synthetic_points = 10), x)
  expect_equal(r$dim, 1)
})
