test_that("a private mean from a matrix: the release, its band, its ledger", {
  d <- simulated_curves(200, 30, seed = 1)
  curves <- fdp_curves(d$values, d$grid)
  session <- fdp_session(epsilon = 1, seed = 42)
  spec <- fdp_mean(epsilon = 1, range = c(0, 1))
  mechanism <- fdp_build(spec, curves)
  expect_s3_class(preview(mechanism), "fdp_accuracy")
  expect_true(preview(mechanism)$expected_sq_error > 0)
  r <- release(session, mechanism, curves)
  expect_s3_class(r, "fdp_curve_release")
  expect_length(r$curve, 30)
  expect_equal(r$grid, d$grid)
  expect_true(all(is.finite(r$coefficients)))
  b <- band(r)
  expect_true(all(b$lower <= r$curve & r$curve <= b$upper))
  e <- own_error(r)
  expect_named(e, c("estimate", "centre", "upper", "band", "noise_dominated"))
  expect_true(e$upper >= e$estimate && e$upper > 0 && is.logical(e$noise_dominated))
  # A plug-in mean reports none; a pilot-tuned kind its single estimate.
  plug_in <- fdp_build(fdp_mean(epsilon = 1, bound = "l1:5", tuning = "plug_in"), curves)
  expect_null(own_error(release(fdp_session(epsilon = 1, seed = 1), plug_in, curves)))
  pilot <- fdp_build(fdp_mean(epsilon = 1, bound = "l2:5", method = "iid_laplace"), curves)
  p <- own_error(release(fdp_session(epsilon = 1, seed = 2), pilot, curves))
  expect_true(p$estimate >= 0 && is.na(p$upper) && is.na(p$noise_dominated))
  df <- as.data.frame(r)
  expect_named(df, c("t", "value", "lower", "upper"))
  expect_equal(unname(spent(session)), c(1, 0))
  expect_equal(nrow(ledger(session)), length(mechanism$info$stages))
  expect_equal(sum(ledger(session)$epsilon), 1)
  expect_match(to_json(r), '"curve"')
  expect_output(print(r), "curve on 30 points")
  expect_output(print(summary(r)), "Stages")
  # A second release overspends: refused, nothing charged, an R error of its own class.
  expect_error(release(session, mechanism, curves), class = "fdpriv_budget_exceeded")
  expect_equal(nrow(ledger(session)), length(mechanism$info$stages))
})

test_that("the same seed gives the same bits; fda's layout (one curve per column) is read without a copy and gives them too", {
  d <- simulated_curves(150, 25, seed = 2)
  a <- release(fdp_session(1, seed = 7), fdp_mean(1, range = c(0, 1)), fdp_curves(d$values, d$grid))
  b <- release(fdp_session(1, seed = 7), fdp_mean(1, range = c(0, 1)), fdp_curves(t(d$values), d$grid, layout = "columns"))
  expect_identical(a$curve, b$curve)
  expect_identical(a$coefficients, b$coefficients)
})

test_that("grids in the data's units: the release is shown on them and is the one on [0, 1] (to rounding of the map)", {
  d <- simulated_curves(120, 20, seed = 3)
  ages <- seq(1, 18, length.out = 20)
  a <- release(fdp_session(1, seed = 5), fdp_mean(1, range = c(0, 1)), fdp_curves(d$values, ages))
  b <- release(fdp_session(1, seed = 5), fdp_mean(1, range = c(0, 1)), fdp_curves(d$values, d$grid))
  expect_equal(a$grid, ages)
  expect_equal(a$curve, b$curve, tolerance = 1e-12)
})

test_that("bad parameters stop with the Rust message, before anything is charged", {
  d <- simulated_curves(50, 10, seed = 4)
  curves <- fdp_curves(d$values, d$grid)
  session <- fdp_session(epsilon = 1)
  expect_error(release(session, fdp_mean(epsilon = -1, range = c(0, 1)), curves), "epsilon", class = "fdpriv_error")
  expect_error(release(session, fdp_spec("mean", epsilon = 1, range = c(0, 1), colour = "red"), curves), "not a parameter")
  expect_error(release(session, fdp_spec("no_such_mechanism", epsilon = 1), curves), "not a registered mechanism")
  expect_error(release(session, fdp_mean(epsilon = 1, kernel = "matern32:-1", range = c(0, 1)), curves), class = "fdpriv_error")
  # A parameter the method does not use is refused, not ignored.
  plug_in <- fdp_mean(epsilon = 1, bound = "l2:1", method = "iid_laplace", tuning = "plug_in", degree = 5)
  expect_error(release(session, plug_in, curves), "degree does not apply with method = iid_laplace", class = "fdpriv_error")
  expect_error(fdp_session(epsilon = 0), class = "fdpriv_error")
  expect_error(fdp_curves(d$values, rev(d$grid)), "increasing")
  # The mechanism was built for 50 curves: 49 are refused (n is public) and nothing is charged.
  m <- fdp_build(fdp_mean(1, range = c(0, 1)), curves)
  expect_error(release(session, m, fdp_curves(d$values[-1, ], d$grid)), "number of records", class = "fdpriv_error")
  expect_equal(nrow(ledger(session)), 0)
  expect_equal(unname(remaining(session)), c(1, 0))
})

test_that("missing values are repaired (counted for the curator) and the release is finite", {
  d <- simulated_curves(60, 12, seed = 5)
  values <- d$values
  values[3, 4] <- NA
  values[7, ] <- NaN
  curves <- fdp_curves(values, d$grid)
  expect_equal(repairs(curves), c(complete = 58L, interpolated = 1L, defaulted = 1L))
  r <- release(fdp_session(1, seed = 1), fdp_mean(1, range = c(0, 1)), curves)
  expect_true(all(is.finite(r$curve)))
})

test_that("a long data frame is put on the public grid the curator states", {
  set.seed(6)
  grid <- seq(0, 1, length.out = 11)
  long <- data.frame(id = rep(sprintf("p%02d", 1:40), each = 11), t = rep(grid, 40), y = rep(0.5 + 0.1 * grid, 40) + rnorm(440, sd = 0.01))
  from_long <- fdp_curves(long, grid)
  expect_equal(from_long$n, 40)
  wide <- matrix(long$y, nrow = 40, byrow = TRUE)
  a <- release(fdp_session(1, seed = 3), fdp_mean(1, range = c(0, 1)), from_long)
  b <- release(fdp_session(1, seed = 3), fdp_mean(1, range = c(0, 1)), fdp_curves(wide, grid))
  expect_identical(a$curve, b$curve)
  # Ties are averaged and NaN dropped, as in Python's Curves.from_long (fdp::front::long_onto_grid).
  moved <- fdp_curves(data.frame(id = c("a", "a", "a"), t = c(0.1, 0.1, 0.3), y = c(1, 3, NaN)), grid)
  expect_equal(as.vector(moved$values), rep(2, 11))
  expect_error(fdp_curves(data.frame(id = 1, t = 0), grid), "no column y")
})

test_that("a person's rows are one record (person-level privacy)", {
  d <- simulated_curves(90, 10, seed = 7)
  persons <- rep(1:30, each = 3)
  expect_message(curves <- fdp_curves(d$values, d$grid, id = persons, id_name = "ID"), "LOCAL INFORMATION")
  # A unit is what the rows are grouped by, never a name alone.
  expect_error(fdp_curves(d$values, d$grid, id_name = "ID"), "give id")
  expect_equal(curves$n, 30)
  r <- release(fdp_session(1, seed = 2), fdp_mean(1, range = c(0, 1)), curves)
  expect_equal(r$mechanism$person_id, "ID")
  # A mechanism built per person refuses rows not grouped by person (each would count as a person,
  # protecting one only at epsilon times their rows), for a release and a part's state, before any
  # charge; and the other way round.
  rows <- fdp_curves(d$values, d$grid)
  per_person <- fdp_build(fdp_mean(1, range = c(0, 1)), n = 90, grid = d$grid, id_name = "ID")
  session <- fdp_session(1)
  expect_error(release(session, per_person, rows), "built to protect one person")
  expect_error(part_state(per_person, rows), "built to protect one person")
  expect_error(release(session, fdp_build(fdp_mean(1, range = c(0, 1)), n = 30, grid = d$grid), curves), "built to protect one record")
  expect_equal(nrow(ledger(session)), 0L)
})

test_that("fda fd objects are evaluated on the public grid", {
  skip_if_not_installed("fda")
  grid <- seq(0, 1, length.out = 21)
  basis <- fda::create.bspline.basis(c(0, 1), nbasis = 8)
  set.seed(8)
  fd <- fda::fd(matrix(rnorm(8 * 40, 0.5, 0.1), 8, 40), basis)
  curves <- fdp_curves(fd, grid)
  expect_equal(c(curves$n, curves$k), c(40, 21))
  direct <- fdp_curves(fda::eval.fd(grid, fd), grid, layout = "columns")
  a <- release(fdp_session(1, seed = 1), fdp_mean(1, range = c(0, 1)), curves)
  b <- release(fdp_session(1, seed = 1), fdp_mean(1, range = c(0, 1)), direct)
  expect_identical(a$curve, b$curve)
})

test_that("tf/tidyfun tfd vectors are evaluated on the public grid", {
  skip_if_not_installed("tf")
  grid <- seq(0, 1, length.out = 15)
  set.seed(9)
  values <- matrix(runif(30 * 15), 30)
  x <- tf::tfd(values, arg = grid)
  a <- release(fdp_session(1, seed = 1), fdp_mean(1, range = c(0, 1)), fdp_curves(x, grid))
  b <- release(fdp_session(1, seed = 1), fdp_mean(1, range = c(0, 1)), fdp_curves(values, grid))
  expect_identical(a$curve, b$curve)
})
