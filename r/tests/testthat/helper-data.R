# Simulated curves (public shape, no real data) and the real datasets beside the repository.

simulated_curves <- function(n, k, seed) {
  set.seed(seed)
  grid <- seq(0, 1, length.out = k)
  values <- outer(rep(1, n), 0.5 + 0.2 * sin(6 * grid)) + matrix(stats::rnorm(n * k, sd = 0.05), n)
  list(values = values, grid = grid)
}

# The repository's root when the tests run from r/tests/testthat (R CMD check runs them from a copy:
# then FDP_REPO names it).
repo_root <- function() {
  candidates <- c(Sys.getenv("FDP_REPO"), normalizePath(file.path(testthat::test_path(), "..", "..", ".."), mustWork = FALSE))
  for (c in candidates) if (nzchar(c) && file.exists(file.path(c, "Cargo.toml"))) return(c)
  NULL
}

# A real dataset: FDP_DATA_DIR, else ../shared/data beside the repository. Absent: skip with a
# message, unless FDP_REQUIRE_DATA=1 (CI beside the data), where absence is a failure.
data_file <- function(name) {
  dirs <- c(Sys.getenv("FDP_DATA_DIR"), if (!is.null(repo_root())) file.path(repo_root(), "..", "shared", "data"))
  for (d in dirs) if (nzchar(d) && file.exists(file.path(d, name))) return(normalizePath(file.path(d, name)))
  message <- sprintf("%s not found (set FDP_DATA_DIR, or put the data in ../shared/data beside the repository)", name)
  if (identical(Sys.getenv("FDP_REQUIRE_DATA"), "1")) testthat::fail(paste(message, "and FDP_REQUIRE_DATA=1"))
  testthat::skip(message)
}

# The fdp command line: FDP_CLI, else target/debug/fdp in the repository.
fdp_cli <- function() {
  cli <- Sys.getenv("FDP_CLI")
  if (nzchar(cli)) {
    testthat::expect_true(file.exists(cli), info = paste("FDP_CLI =", cli))
    return(cli)
  }
  root <- repo_root()
  for (profile in c("debug", "release")) {
    path <- if (!is.null(root)) file.path(root, "target", profile, "fdp") else ""
    if (nzchar(path) && file.exists(path)) return(path)
  }
  testthat::skip("the fdp command line is not built (cargo build -p fdp-cli), and FDP_CLI is not set")
}
