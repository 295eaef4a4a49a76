# The R layer's overhead on a large release (not a test): n = 10^6 curves x K = 100 points, the
# registry's default mean (privately tuned ICLP-RKHS), in both matrix layouts.
#
#   Rscript r/bench/overhead.R [N]          (N: the number of curves, default 1e6)
#
# For each layout it prints the wall time of release() from R (a built mechanism, so the basis is
# not counted twice) and `core_seconds`, the time of fdp::registry::Built::release itself measured
# inside the same call (what the command line and Python run): their ratio is R's overhead. The
# core time is attached to the release's pointer only under FDPRIV_CORE_TIMING (set here): a
# running time depends on the data, so ordinary releases never carry it. One
# curve per column (fda's K x n layout) is fdp's row order already and is read without a copy; one
# curve per row (n x K) is transposed once.
Sys.setenv(FDPRIV_CORE_TIMING = "1")
library(fdpriv)
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args)) as.numeric(args[[1]]) else 1e6
k <- 100
grid <- (seq_len(k) - 0.5) / k
set.seed(1)
shape <- 0.5 + 0.2 * sin(6 * grid)
columns <- matrix(rnorm(n * k, sd = 0.1), k, n) + shape   # K x n: one curve per column
spec <- fdp_mean(epsilon = 1, range = c(0, 1))
cat(sprintf("n = %g, K = %d, data %.0f MB\n", n, k, n * k * 8 / 1e6))
for (layout in c("columns", "rows")) {
  values <- if (layout == "columns") columns else t(columns)
  curves <- fdp_curves(values, grid, layout = layout)
  mechanism <- fdp_build(spec, curves)
  best <- c(total = Inf, core = Inf)
  for (run in 1:2) {
    gc()
    total <- system.time(r <- release(fdp_session(epsilon = 1), mechanism, curves))[["elapsed"]]
    if (total < best[["total"]]) best <- c(total = total, core = attr(r$ptr, "core_seconds"))
  }
  cat(sprintf("layout = %-7s R release() %.3f s, Rust core %.3f s, ratio %.3f\n", layout, best[["total"]], best[["core"]],
              best[["total"]] / best[["core"]]))
  rm(values, curves)
}
