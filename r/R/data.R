#' Curves on a public grid
#'
#' The data of a curve mechanism (`fdp_mean()`, `fdp_fpca()`): `n` curves observed on a common
#' **public** grid, in the data's units (ages, positions along a tract, hours). The grid is stated by
#' the curator, never read off the private data. Missing or non-finite values are repaired from the
#' record's own values (interpolated) or replaced by the public default curve (zero) when a record
#' has none, before any summation.
#'
#' @param x The curves: a numeric matrix (one curve per row with `layout = "rows"`, one per column
#'   with `layout = "columns"`, fda's layout), a long data frame with columns `id`, `t`, `y` (each
#'   record put on the public `grid` by linear interpolation), an fda `fd` object (evaluated on
#'   `grid` with `fda::eval.fd`), or a tidyfun/tf `tfd` vector (evaluated on `grid`).
#' @param grid The public grid, increasing, in the data's units.
#' @param layout For a matrix: `"rows"` (n x K, one curve per row; copied once into fdp's row
#'   order) or `"columns"` (K x n, one curve per column; read without a copy).
#' @param id For a matrix: NULL (one row is one record) or one id per row (a person's rows become
#'   one record, their mean curve: the privacy unit is the person).
#' @param id_name The name of the id variable, recorded as the privacy unit (with `id` only: a unit is
#'   what the records are grouped by, never a label alone).
#' @param ids,t,y For a long data frame: the names of its id, time and value columns (each id is one
#'   record: the id variable is the privacy unit, recorded in the releases).
#' @return An object of class `fdp_curves`.
#' @examples
#' grid <- seq(0, 1, length.out = 20)
#' values <- outer(rep(1, 50), sin(2 * pi * grid)) + matrix(rnorm(1000, sd = 0.1), 50)
#' curves <- fdp_curves(values, grid)
#' curves
#' @export
fdp_curves <- function(x, grid, layout = c("rows", "columns"), id = NULL, id_name = "id", ids = "id", t = "t", y = "y") {
  layout <- match.arg(layout)
  grid <- as.double(grid)
  if (!length(grid) || anyNA(grid) || is.unsorted(grid, strictly = TRUE)) {
    stop("grid must be the public observation points, increasing (stated, not read off the data)", call. = FALSE)
  }
  if (inherits(x, "fd")) {
    if (!requireNamespace("fda", quietly = TRUE)) stop("an fd object needs the fda package to be evaluated", call. = FALSE)
    x <- fda::eval.fd(grid, x)
    layout <- "columns"
  } else if (inherits(x, "tfd")) {
    if (!requireNamespace("tf", quietly = TRUE)) stop("a tfd vector needs the tf package to be evaluated", call. = FALSE)
    x <- as.matrix(x, arg = grid, interpolate = TRUE)
    layout <- "rows"
  } else if (is.data.frame(x)) {
    return(.curves_from_long(x, grid, ids, t, y))
  }
  if (!is.matrix(x) || !is.numeric(x)) stop("x must be a numeric matrix, a long data frame, an fd or a tfd object", call. = FALSE)
  if (!is.double(x)) storage.mode(x) <- "double"
  by_row <- layout == "rows"
  n <- if (by_row) nrow(x) else ncol(x)
  k <- if (by_row) ncol(x) else nrow(x)
  if (k != length(grid)) stop(sprintf("the curves have %d points, the grid %d", k, length(grid)), call. = FALSE)
  if (is.null(id) && !missing(id_name)) {
    stop("id_name names the variable the curves are grouped by: give id (one per curve)", call. = FALSE)
  }
  if (!is.null(id)) {
    if (length(id) != n) stop(sprintf("id must name the person of each of the %d curves", n), call. = FALSE)
    codes <- match(id, unique(id)) - 1L
    persons <- .rs(.Call(wrap__per_person, x, as.double(n), as.double(k), by_row, grid, as.integer(codes)))
    message("LOCAL INFORMATION (not for publication): rows per person range ", min(persons$rows), "-", max(persons$rows))
    x <- persons$values
    dim(x) <- c(k, length(persons$rows))
    return(structure(list(values = x, grid = grid, by_row = FALSE, n = ncol(x), k = k, id_name = id_name), class = "fdp_curves"))
  }
  structure(list(values = x, grid = grid, by_row = by_row, n = n, k = k, id_name = NULL), class = "fdp_curves")
}

.curves_from_long <- function(frame, grid, ids, t, y) {
  for (column in c(ids, t, y)) if (!column %in% names(frame)) stop(sprintf("the long frame has no column %s", column), call. = FALSE)
  key <- frame[[ids]]
  levels <- unique(key)
  codes <- match(key, levels) - 1L
  values <- .rs(.Call(wrap__long_onto_grid, as.integer(codes), as.double(frame[[t]]), as.double(frame[[y]]), grid, as.double(length(levels))))
  dim(values) <- c(length(grid), length(levels))
  structure(list(values = values, grid = grid, by_row = FALSE, n = length(levels), k = length(grid), id_name = ids), class = "fdp_curves")
}

#' Sparse, irregularly observed curves
#'
#' The data of `fdp_sparse_mean()`: a long data frame, one row per observation, each record observed
#' at its own times on the public domain of the mechanism's grid. Observations outside the domain or
#' not finite are dropped (and counted), never an error.
#'
#' @param frame A data frame.
#' @param ids,t,y The names of its id, time and value columns (each id is one record: the id variable
#'   is the privacy unit, recorded in the releases).
#' @return An object of class `fdp_sparse`.
#' @examples
#' frame <- data.frame(id = rep(1:30, each = 4), t = runif(120), y = rnorm(120))
#' fdp_sparse(frame)
#' @export
fdp_sparse <- function(frame, ids = "id", t = "t", y = "y") {
  if (!is.data.frame(frame)) stop("frame must be a data frame with one row per observation", call. = FALSE)
  for (column in c(ids, t, y)) if (!column %in% names(frame)) stop(sprintf("the frame has no column %s", column), call. = FALSE)
  key <- frame[[ids]]
  levels <- unique(key)
  structure(
    list(codes = as.integer(match(key, levels) - 1L), t = as.double(frame[[t]]), y = as.double(frame[[y]]), n = length(levels), id_name = ids),
    class = "fdp_sparse"
  )
}

#' @export
print.fdp_curves <- function(x, ...) {
  cat(sprintf("<fdp_curves> %d curves on a public grid of %d points [%g, %g]%s\n", x$n, x$k, x$grid[1], x$grid[x$k],
              if (is.null(x$id_name)) "" else sprintf(", one per person (%s)", x$id_name)))
  invisible(x)
}

#' @export
print.fdp_sparse <- function(x, ...) {
  cat(sprintf("<fdp_sparse> %d records, %d observations\n", x$n, length(x$t)))
  invisible(x)
}

#' Repairs the curves need (for the curator only)
#'
#' How many curves are complete, how many have missing values interpolated from their own values,
#' and how many are replaced by the public default curve. This describes the private data: it is
#' not for publication.
#' @param curves An `fdp_curves` object.
#' @return A named integer vector.
#' @export
repairs <- function(curves) {
  stopifnot(inherits(curves, "fdp_curves"))
  counts <- .rs(.Call(wrap__repair_counts, curves$values, as.double(curves$n), as.double(curves$k), curves$by_row, curves$grid))
  stats::setNames(as.integer(counts), c("complete", "interpolated", "defaulted"))
}

# The glue's view of the data for a mechanism reading `input`.
.glue_data <- function(data, input) {
  switch(input,
    curves = {
      if (!inherits(data, "fdp_curves")) stop("a curve mechanism releases fdp_curves (see fdp_curves())", call. = FALSE)
      list(values = data$values, n = as.double(data$n), k = as.double(data$k), by_row = data$by_row, grid = data$grid, unit = data$id_name)
    },
    sparse_curves = {
      if (!inherits(data, "fdp_sparse")) stop("a sparse-curve mechanism releases fdp_sparse (see fdp_sparse())", call. = FALSE)
      list(codes = data$codes, t = data$t, y = data$y, n = as.double(data$n), unit = data$id_name)
    },
    points = {
      points <- if (is.matrix(data)) data else matrix(as.double(data), ncol = 1L)
      storage.mode(points) <- "double"
      list(values = points, n = as.double(nrow(points)), d = as.double(ncol(points)))
    },
    labelled = {
      if (!is.list(data) || is.null(data$x) || is.null(data$y)) stop("a regression releases list(x = inputs, y = responses) or a data frame with x and y", call. = FALSE)
      list(x = as.double(data$x), y = as.double(data$y))
    },
    stop(sprintf("a mechanism reading %s: update fdpriv", input), call. = FALSE)
  )
}
