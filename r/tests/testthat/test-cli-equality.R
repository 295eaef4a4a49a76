# The same CSV and spec give the same bits from R as from fdp's command line (which Python is pinned
# to bit for bit by python/tests/test_fdp.py::test_python_release_equals_the_rust_cli_release_bit_for_bit).

cli_release <- function(cli, args) {
  out <- tempfile("fdp-cli-")
  status <- system2(cli, c(args, "--seed", "42", "--out", out, "--quiet"), stdout = TRUE, stderr = TRUE)
  expect_null(attr(status, "status"), info = paste(status, collapse = "\n"))
  jsonlite::fromJSON(file.path(out, "release.json"), simplifyVector = TRUE)$output
}

dti_curves <- function(path, ...) {
  dti <- utils::read.csv(path, check.names = FALSE)
  columns <- grep("^cca_", names(dti), value = TRUE)
  grid <- as.numeric(sub("^cca_", "", columns))
  list(frame = dti, values = as.matrix(dti[columns]), grid = grid)
}

test_that("the DTI mean released from R at a fixed seed is the command line's, bit for bit", {
  path <- data_file("dti_cca.csv")
  cli <- fdp_cli()
  dti <- dti_curves(path)
  expect_true(anyNA(dti$values)) # repaired records on both sides
  rust <- cli_release(cli, c("mean", "--csv", path, "--columns", "cca_", "--range", "0,1", "--epsilon", "1"))
  r <- release(fdp_session(epsilon = 1, seed = 42), fdp_mean(epsilon = 1, range = c(0, 1)), fdp_curves(dti$values, dti$grid))
  expect_identical(r$curve, rust$curve)
  expect_identical(r$coefficients, rust$coefficients)
  expect_equal(r$grid, dti$grid)
  # One person (all their visits) as the privacy unit, as `--id ID`.
  rust <- cli_release(cli, c("mean", "--csv", path, "--columns", "cca_", "--id", "ID", "--range", "0,1", "--epsilon", "1"))
  persons <- suppressMessages(fdp_curves(dti$values, dti$grid, id = dti$frame$ID, id_name = "ID"))
  r <- release(fdp_session(epsilon = 1, seed = 42), fdp_mean(epsilon = 1, range = c(0, 1)), persons)
  expect_identical(r$curve, rust$curve)
  expect_identical(r$coefficients, rust$coefficients)
})

test_that("a simulated CSV (with a missing value) and a plug-in Bernstein spec give the command line's bits", {
  cli <- fdp_cli()
  d <- simulated_curves(150, 30, seed = 9)
  d$values[4, 5] <- NA
  csv <- tempfile(fileext = ".csv")
  columns <- sprintf("y_%s", format(d$grid, digits = 17, trim = TRUE))
  frame <- data.frame(id = sprintf("r%d", seq_len(150)), d$values)
  names(frame) <- c("id", columns)
  utils::write.csv(frame, csv, row.names = FALSE, na = "NA")
  grid <- as.numeric(sub("^y_", "", columns))
  rust <- cli_release(cli, c("mean", "--csv", csv, "--columns", "y_", "--epsilon", "1", "--bound", "sup:2", "--mechanism", "bernstein",
                             "--centre", "0.5"))
  spec <- fdp_mean(epsilon = 1, bound = "sup:2", method = "bernstein", centre = 0.5)
  r <- release(fdp_session(epsilon = 1, seed = 42), spec, fdp_curves(d$values, grid))
  expect_identical(r$curve, rust$curve)
  expect_identical(r$coefficients, rust$coefficients)
})
