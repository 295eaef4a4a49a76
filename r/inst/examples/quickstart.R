# fdpriv quickstart: a private mean curve on simulated data, its ledger and a plotted report.
#
#   Rscript quickstart.R [OUT]      (OUT: the report's directory, default ./fdpriv_quickstart)
#
# Writes OUT/mean.png (base graphics: the release with its noise band), fdp's own report
# (OUT/release.json, OUT/curves.svg, OUT/report.md) and the session's ledger OUT/ledger.json.
library(fdpriv)
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args)) args[[1]] else "fdpriv_quickstart"
dir.create(out, showWarnings = FALSE, recursive = TRUE)

set.seed(1)
grid <- seq(0, 1, length.out = 50)                                   # public: the observation points
values <- outer(rep(1, 500), 0.5 + 0.2 * sin(6 * grid)) + matrix(rnorm(500 * 50, sd = 0.05), 500)
curves <- fdp_curves(values, grid)                                   # 500 simulated curves: your data here

session <- fdp_session(epsilon = 1, seed = 1)                        # the budget; the seed is opt-in and recorded
spec <- fdp_mean(epsilon = 1, kernel = "matern32:0.1", range = c(0, 1))   # public frame, fixed in advance
mechanism <- fdp_build(spec, curves)
print(preview(mechanism))                                            # no budget spent
r <- release(session, mechanism, curves)                             # charged, one ledger entry per stage
print(r)
print(ledger(session))

grDevices::png(file.path(out, "mean.png"), width = 800, height = 500)
plot(r, xlab = "t", ylab = "value")
lines(grid, 0.5 + 0.2 * sin(6 * grid), lty = 2)
legend("bottomleft", lty = 2, legend = "the simulation's true mean", bty = "n")
invisible(grDevices::dev.off())
report <- write_report(r, out, session, title = "fdpriv quickstart: a private mean curve",
                       notes = "500 simulated curves; public range [0, 1]; seed 1 (experiments only)")
fdp_session_save(session, file.path(out, "ledger.json"))
cat("wrote", report, "and", file.path(out, "mean.png"), "\n")
