# Releases: S3 objects holding the Rust release, its numbers by kind and the mechanism that made it.

.release <- function(ptr, mechanism) {
  fields <- .rs(.Call(wrap__release_fields, ptr))
  kind <- fields$kind
  obj <- c(list(ptr = ptr, mechanism = mechanism$info, display_grid = mechanism$info$display_grid), fields)
  if (kind %in% c("curve", "covariance") && !is.null(obj$display_grid)) obj$unit_grid <- obj$grid
  if (kind %in% c("curve", "covariance") && !is.null(obj$display_grid)) obj$grid <- as.double(obj$display_grid)
  class(obj) <- c(paste0("fdp_", kind, "_release"), "fdp_release")
  obj
}

#' @export
to_json.fdp_release <- function(x, ...) .rs(.Call(wrap__release_to_json, x$ptr))

#' The release's metadata
#'
#' What the release states about itself: the mechanism, its guarantee, its stages and their
#' outcomes, the privacy unit, the noise's provenance (as in `release.json`).
#' @param release An `fdp_release`.
#' @return A list.
#' @export
metadata <- function(release) .json(to_json(release))$metadata

#' Noise band of a released curve
#'
#' `curve -/+ z sd`, the pointwise noise band (clamped to the release's public range if it has one),
#' or NULL when the mechanism states no pointwise sd.
#' @param release An `fdp_curve_release`.
#' @param z The band's half-width in sds.
#' @return `list(lower, upper)` or NULL.
#' @export
band <- function(release, z = 2) {
  stopifnot(inherits(release, "fdp_curve_release"))
  .rs(.Call(wrap__release_band, release$ptr, as.double(z)))
}

#' The release's own reading of its error
#'
#' For the privately tuned mean curves, the `own_error` of their metadata (in `release.json` too):
#' their `accuracy` stage as numbers (post-processing of the release: free to publish), against the
#' non-private mean: `estimate` (the release's own
#' estimate of its squared L2 error: an average-case number, floored at 0; where the noise swamps
#' the signal it is often 0 though the release is not exact), `centre` (the public centre's
#' estimated squared error), `upper` (the upper-side figure: the estimate plus 2 sd of its noise,
#' the clipping term at an unlucky bound, at most the range's squared diameter; read it when
#' `noise_dominated`. A reading, not a bound: in the package's study it covered the realised error
#' in 93 percent of releases on average over the tuning cells, 88 percent over the validation
#' cells), `band` (the L2 half-width, not squared, of the 2 sd noise band) and `noise_dominated`
#' (no better than the centre by these estimates: do not read shape into the curve). The
#' pilot-tuned kinds (ICLP-l1, IID Laplace, Bernstein, privately tuned) report their estimate only:
#' the other fields are NA there.
#' @param release An `fdp_curve_release`.
#' @return `list(estimate, centre, upper, band, noise_dominated)`, or NULL for a mechanism that
#'   reports none (the plug-in ones, densities).
#' @export
own_error <- function(release) {
  stopifnot(inherits(release, "fdp_curve_release"))
  own <- metadata(release)$own_error
  if (is.null(own)) return(NULL)
  number <- function(x) if (is.null(x)) NA_real_ else as.double(x)
  list(estimate = number(own$estimate), centre = number(own$centre), upper = number(own$upper), band = number(own$band),
       noise_dominated = if (is.null(own$noise_dominated)) NA else isTRUE(own$noise_dominated))
}

#' @export
print.fdp_release <- function(x, ...) {
  m <- x$mechanism
  cat(sprintf("<fdp %s release> %s, (epsilon = %g, delta = %g)-DP\n", x$kind, m$display_name, m$epsilon, m$delta))
  switch(x$kind,
    curve = cat(sprintf("  a curve on %d points [%g, %g], values in [%.4g, %.4g]\n", length(x$curve), x$grid[1], x$grid[length(x$grid)],
                        min(x$curve), max(x$curve))),
    covariance = cat(sprintf("  a covariance in %d components, its mean on %d points\n", x$components, length(x$mean))),
    weighted = cat(sprintf("  %d weighted synthetic points in %d dimensions\n", length(x$weights), x$dim)),
    sketch = cat(sprintf("  a sketch of %d values, noisy count %.4g\n", length(x$sketch), x$noisy_count)),
    coefficients = cat(sprintf("  %d coefficients\n", length(x$values)))
  )
  invisible(x)
}

#' @export
summary.fdp_release <- function(object, ...) {
  m <- metadata(object)
  stages <- do.call(rbind, lapply(m$stages, function(s) data.frame(stage = s$stage, epsilon = s$epsilon, delta = s$delta,
                                                                     outcome = s$outcome, stringsAsFactors = FALSE)))
  structure(list(kind = object$kind, mechanism = object$mechanism$display_name, epsilon = object$mechanism$epsilon,
                 delta = object$mechanism$delta, stages = stages, accuracy = structure(object$mechanism$accuracy, class = "fdp_accuracy"),
                 values = summary(.values(object))),
            class = "summary.fdp_release")
}

#' @export
print.summary.fdp_release <- function(x, ...) {
  cat(sprintf("%s release by %s: (epsilon = %g, delta = %g)-DP\n", x$kind, x$mechanism, x$epsilon, x$delta))
  if (!is.null(x$stages)) {
    cat("Stages:\n")
    print(x$stages, row.names = FALSE)
  }
  print(x$accuracy)
  cat("Released values:\n")
  print(x$values)
  invisible(x)
}

.values <- function(x) {
  switch(x$kind, curve = x$curve, covariance = x$mean, weighted = x$weights, sketch = x$sketch, coefficients = x$values)
}

#' @export
as.data.frame.fdp_release <- function(x, row.names = NULL, optional = FALSE, ...) {
  switch(x$kind,
    curve = {
      out <- data.frame(t = x$grid, value = x$curve)
      b <- band(x)
      if (!is.null(b)) {
        out$lower <- b$lower
        out$upper <- b$upper
      }
      out
    },
    covariance = data.frame(t = x$grid, mean = x$mean),
    weighted = {
      points <- matrix(x$points, ncol = x$dim, byrow = TRUE)
      colnames(points) <- paste0("x", seq_len(x$dim))
      data.frame(points, weight = x$weights)
    },
    sketch = data.frame(index = seq_along(x$sketch), value = x$sketch),
    coefficients = data.frame(index = seq_along(x$values), value = x$values)
  )
}

#' Plot a release
#'
#' A released curve on its grid in the data's units with its +/- 2 sd noise band (base graphics);
#' a covariance's mean curve; a synthetic dataset's points sized by weight; a sketch's values.
#' @param x An `fdp_release`.
#' @param xlab,ylab Axis labels (give the units).
#' @param main The title (the mechanism and epsilon by default).
#' @param ... Passed to [graphics::plot()].
#' @export
plot.fdp_release <- function(x, xlab = "t", ylab = "value", main = NULL, ...) {
  if (is.null(main)) main <- sprintf("%s: epsilon = %g", x$mechanism$display_name, x$mechanism$epsilon)
  switch(x$kind,
    curve = {
      b <- band(x)
      ylim <- range(c(x$curve, if (!is.null(b)) c(b$lower, b$upper)), finite = TRUE)
      graphics::plot(x$grid, x$curve, type = "n", xlab = xlab, ylab = ylab, main = main, ylim = ylim, ...)
      if (!is.null(b)) {
        graphics::polygon(c(x$grid, rev(x$grid)), c(b$lower, rev(b$upper)), col = grDevices::adjustcolor("steelblue", 0.25), border = NA)
      }
      graphics::lines(x$grid, x$curve, col = "steelblue4", lwd = 2)
      graphics::legend("topleft", bty = "n", lwd = c(2, NA), pch = c(NA, 15), col = c("steelblue4", grDevices::adjustcolor("steelblue", 0.25)),
                       legend = c("private release", if (!is.null(b)) "+/- 2 sd noise band")[seq_len(1 + !is.null(b))])
    },
    covariance = graphics::plot(x$grid, x$mean, type = "l", xlab = xlab, ylab = ylab, main = main, ...),
    weighted = {
      points <- matrix(x$points, ncol = x$dim, byrow = TRUE)
      size <- 0.5 + 2.5 * pmax(x$weights, 0) / max(abs(x$weights), .Machine$double.eps)
      if (x$dim == 1) graphics::plot(points[, 1], x$weights, xlab = xlab, ylab = "weight", main = main, ...)
      else graphics::plot(points[, 1], points[, 2], cex = size, xlab = "x1", ylab = "x2", main = main, ...)
    },
    sketch = graphics::plot(x$sketch, type = "h", xlab = "index", ylab = ylab, main = main, ...),
    coefficients = graphics::plot(x$values, type = "h", xlab = "index", ylab = ylab, main = main, ...)
  )
  invisible(x)
}

#' Principal components of a released covariance
#'
#' Post-processing (no budget): the top `k` eigenvalues, eigenfunctions on the grid and each
#' one's share of the released covariance's trace (`explained`: not of the data's variance; at a
#' small n epsilon the release keeps fewer directions and the leading share reads high; a component
#' with eigenvalue 0 carries no released variance and its function is arbitrary), from the leading
#' `components` of the J released basis components (all J, or fewer when the mechanism's
#' `truncation = "risk"` dropped trailing ones whose signal did not pay for their noise).
#' @param release An `fdp_covariance_release`.
#' @param k The number of components.
#' @return `list(values, functions = K x k matrix, explained, grid, components)`.
#' @export
fpca <- function(release, k) {
  stopifnot(inherits(release, "fdp_covariance_release"))
  out <- .rs(.Call(wrap__release_fpca, release$ptr, .count(k, "k")))
  functions <- matrix(out$functions, ncol = length(out$values))
  list(values = out$values, functions = functions, explained = out$explained, grid = release$grid,
       components = out$components)
}

#' M2M estimates from a released sketch
#'
#' Post-processing (no budget): means and covariance of the points, read off the sketch with
#' public uniform prior points.
#' @param release An `fdp_sketch_release`.
#' @param mechanism The `fdp_mechanism` that released it.
#' @param prior_points,prior_seed The public prior (NULL: fdp's defaults, shared by every door).
#' @return `list(means, covariance, weights)`.
#' @export
m2m <- function(release, mechanism, prior_points = NULL, prior_seed = NULL) {
  stopifnot(inherits(release, "fdp_sketch_release"), inherits(mechanism, "fdp_mechanism"))
  defaults <- .rs(.Call(wrap__front_defaults))
  out <- .rs(.Call(wrap__release_m2m, release$ptr, mechanism$ptr, .count(if (is.null(prior_points)) defaults$m2m_prior_points else prior_points, "prior_points"),
                         .count(if (is.null(prior_seed)) defaults$m2m_prior_seed else prior_seed, "prior_seed")))
  d <- length(out$means)
  list(means = out$means, covariance = matrix(out$covariance, d, d, byrow = TRUE), weights = out$weights)
}

#' Write a release's report
#'
#' fdp's own report (the command line's and Python's): `release.json`, the figure (`curves.svg`,
#' or `fpca.svg` for a covariance) and `report.md` with the stages, the metadata and the ledger.
#' @param release An `fdp_curve_release` or `fdp_covariance_release`.
#' @param out The directory.
#' @param session The `fdp_session` it was charged to (its ledger goes in the report).
#' @param title The report's title.
#' @param notes Lines for the report's notes.
#' @param xlab,ylab The figure's axis labels.
#' @param k For a covariance: the components shown.
#' @return The report's path.
#' @export
write_report <- function(release, out, session, title = "Private release", notes = character(), xlab = "t", ylab = "value", k = 3) {
  stopifnot(inherits(release, "fdp_release"), inherits(session, "fdp_session"))
  dir.create(out, showWarnings = FALSE, recursive = TRUE)
  .rs(.Call(wrap__release_write_report, release$ptr, normalizePath(out), title, session$ptr, as.character(notes), c(xlab, ylab),
                           if (is.null(release$display_grid)) NULL else as.double(release$grid), .count(k, "k")))
}
