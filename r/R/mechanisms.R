#' The registered mechanisms
#'
#' Every mechanism of fdp's Rust registry (`fdp mechanisms` on the command line,
#' `fdp.registered()` in Python): its name, what it releases, the data it reads, its parameters with
#' their defaults, and an example spec. The defaults are the registry's: this package has none of
#' its own.
#' @return A list, one element per mechanism.
#' @examples
#' vapply(fdp_mechanisms(), function(m) m$mechanism, "")
#' @export
fdp_mechanisms <- function() .json(.rs(.Call(wrap__registered)))

#' A mechanism spec
#'
#' A registered mechanism's name and the parameters given (plain values; a parameter not given, or
#' NULL, takes the registry's default). `fdp_spec()` reaches any registered mechanism by name; the
#' constructors below write the spec of one mechanism each, with the registry's parameter names.
#' Nothing is checked here: [fdp_build()] and [release()] check every parameter, before anything is
#' charged, and stop with the Rust message.
#'
#' @param mechanism A registered name (see [fdp_mechanisms()]).
#' @param ... Its parameters, by name.
#' @return An object of class `fdp_spec`.
#' @examples
#' fdp_spec("kme_exponential", epsilon = 1, dim = 2)
#' fdp_mean(epsilon = 1, range = c(0, 1))
#' @export
fdp_spec <- function(mechanism, ...) {
  params <- Filter(Negate(is.null), list(...))
  if (length(params) && (is.null(names(params)) || any(names(params) == ""))) stop("every parameter must be named", call. = FALSE)
  structure(list(mechanism = mechanism, params = params), class = "fdp_spec")
}

#' @describeIn fdp_spec A private mean curve of curves on a public grid (`mean`): privately tuned
#'   ICLP-RKHS unless `method`/`tuning` say otherwise; `range` (the public range of the values) or
#'   `bound` (`"l1:10"`, the clipping bound in the mechanism's norm) with `centre` frame it.
#' @param epsilon The total ε of one release (every stage included).
#' @param range,bound,centre,kernel,method,tuning,delta,psi,components,degree,truncation The registry's
#'   parameters of the mechanism (see `fdp_mechanisms()` for what each is and its default). A
#'   parameter a method does not use (`degree` but for Bernstein, a `width` for a histogram
#'   sketch, ...) is refused with an error, never silently ignored; `fdp_mechanisms()` lists under
#'   `only_with` what each such parameter needs.
#' @export
fdp_mean <- function(epsilon, range = NULL, bound = NULL, centre = NULL, kernel = NULL, method = NULL, tuning = NULL,
                     delta = NULL, psi = NULL, components = NULL, degree = NULL) {
  fdp_spec("mean", epsilon = epsilon, range = range, bound = bound, centre = centre, kernel = kernel, method = method,
           tuning = tuning, delta = delta, psi = psi, components = components, degree = degree)
}

#' @describeIn fdp_spec A private mean of sparse, irregularly observed curves (`sparse_mean`).
#' @param design The sparse mean's design (see `fdp_mechanisms()`).
#' @export
fdp_sparse_mean <- function(epsilon, range, kernel = NULL, centre = NULL, design = NULL, delta = NULL) {
  fdp_spec("sparse_mean", epsilon = epsilon, range = range, kernel = kernel, centre = centre, design = design, delta = delta)
}

#' @describeIn fdp_spec A private covariance operator and, by post-processing, its principal
#'   components (`fpca`).
#' @export
fdp_fpca <- function(epsilon, range, components = NULL, kernel = NULL, centre = NULL, delta = NULL, truncation = NULL) {
  fdp_spec("fpca", epsilon = epsilon, range = range, components = components, kernel = kernel, centre = centre, delta = delta,
           truncation = truncation)
}

#' @describeIn fdp_spec A private density of points on a public domain (`kde`).
#' @param domain,bandwidth,grid_points,eta The density's parameters (`domain`, `grid_points`, `eta`
#'   also the regression's: the public interval of its inputs).
#' @export
fdp_density <- function(epsilon, domain = NULL, method = NULL, kernel = NULL, bandwidth = NULL, grid_points = NULL,
                        eta = NULL, delta = NULL, components = NULL, degree = NULL) {
  fdp_spec("kde", epsilon = epsilon, domain = domain, method = method, kernel = kernel, bandwidth = bandwidth,
           grid_points = grid_points, eta = eta, delta = delta, components = components, degree = degree)
}

#' @describeIn fdp_spec A synthetic weighted dataset from a private kernel mean embedding (`kme`);
#'   `centre` is the points' public centre (one number per dimension). In `fdp_spec()`, wrap a
#'   list parameter of one number in `I()` to send it as a list.
#' @param scale,rho,synthetic_points,points_seed The synthetic dataset's parameters.
#' @export
fdp_synthetic <- function(epsilon, delta, centre, scale, rho = NULL, synthetic_points = NULL, points_seed = NULL) {
  fdp_spec("kme", epsilon = epsilon, delta = delta, centre = I(as.double(centre)), scale = scale, rho = rho,
           synthetic_points = synthetic_points, points_seed = points_seed)
}

#' @describeIn fdp_spec A private sketch of points (`sketch`; add/remove-one neighbours).
#' @param dim The points' dimension.
#' @param map,size,width,buckets,map_seed The sketch's parameters.
#' @export
fdp_sketch <- function(epsilon, dim, map = NULL, size = NULL, width = NULL, buckets = NULL, map_seed = NULL) {
  fdp_spec("sketch", epsilon = epsilon, dim = dim, map = map, size = size, width = width, buckets = buckets, map_seed = map_seed)
}

#' @describeIn fdp_spec A private kernel regression (`erm`) of responses on 1-D inputs (on the
#'   public `domain` of the inputs).
#' @param response_bound The regression's public bound on |y| (default 1; responses beyond it are
#'   clipped; squared loss only).
#' @param loss `"squared"` (kernel ridge, the default) or `"logistic"` (labels +/-1).
#' @export
fdp_regression <- function(epsilon, psi, response_bound = NULL, eta = NULL, kernel = NULL, grid_points = NULL,
                           components = NULL, delta = NULL, loss = NULL, domain = NULL) {
  fdp_spec("erm", epsilon = epsilon, psi = psi, response_bound = response_bound, eta = eta, kernel = kernel,
           grid_points = grid_points, components = components, delta = delta, loss = loss, domain = domain)
}

#' @export
print.fdp_spec <- function(x, ...) {
  cat(sprintf("<fdp_spec> %s\n", .spec_json(x)))
  invisible(x)
}

#' Build a mechanism for its public frame
#'
#' Builds the registered mechanism `spec` names for the data's public frame: the number of records
#' n, the grid (curves) and the privacy unit, all public; the data's values are not read. Every
#' parameter is checked here, before anything is charged.
#'
#' @param spec An `fdp_spec` (or a registered name with `...` its parameters).
#' @param data The data it will release (only its public shape is read), or NULL with `n`/`grid`.
#' @param n,grid The public frame, when `data` is not given.
#' @param id_name The person id's name (person-level privacy), when `data` is not given.
#' @param ... Parameters, when `spec` is a name.
#' @return An object of class `fdp_mechanism`: [print()] it, [preview()] its accuracy.
#' @export
fdp_build <- function(spec, data = NULL, n = NULL, grid = NULL, id_name = NULL, ...) {
  if (is.character(spec)) spec <- fdp_spec(spec, ...)
  if (!inherits(spec, "fdp_spec")) stop("spec must be an fdp_spec (e.g. fdp_mean(...)) or a registered name", call. = FALSE)
  if (!is.null(data)) {
    if (inherits(data, "fdp_curves")) {
      n <- data$n
      grid <- data$grid
      id_name <- data$id_name
    } else if (inherits(data, "fdp_sparse")) {
      n <- data$n
      id_name <- data$id_name
      if (is.null(grid)) stop("a sparse mean is built on a public grid (grid = ...): the domain and where the mean is shown", call. = FALSE)
    } else if (is.matrix(data)) {
      n <- nrow(data)
    } else if (is.list(data) && !is.null(data$x)) {
      n <- length(data$x)
    } else {
      n <- length(data)
    }
  }
  if (is.null(n)) stop("give the data, or the public n", call. = FALSE)
  inner <- .rs(.Call(wrap__build, .spec_json(spec), .count(n, "n"), if (is.null(grid)) NULL else as.double(grid), id_name))
  info <- .json(.rs(.Call(wrap__mechanism_info, inner)))
  for (w in info$warnings) warning(w, call. = FALSE)
  structure(list(ptr = inner, info = info, n = n, grid = if (is.null(grid)) NULL else as.double(grid)), class = "fdp_mechanism")
}

#' Accuracy preview
#'
#' The mechanism's expected squared error of the noise, computed from public quantities only: no
#' budget is spent. For a privately tuned mean it is the noise at the public ceiling of the bound
#' (an upper bound).
#' @param mechanism An `fdp_mechanism` (or an `fdp_spec` with `data` to build it for).
#' @param data The data (only its public shape is read), when `mechanism` is a spec.
#' @return A list of class `fdp_accuracy`: `expected_sq_error`, `sq_error_sd` (or NULL) and
#'   `upper_bound`.
#' @export
preview <- function(mechanism, data = NULL) {
  if (inherits(mechanism, "fdp_spec")) mechanism <- fdp_build(mechanism, data)
  structure(mechanism$info$accuracy, class = "fdp_accuracy")
}

#' @export
print.fdp_accuracy <- function(x, ...) {
  cat(sprintf("<fdp_accuracy> E||noise||^2 %s %.4g%s\n", if (isTRUE(x$upper_bound)) "<=" else "=", x$expected_sq_error,
              if (is.null(x$sq_error_sd)) "" else sprintf(" (sd %.3g)", x$sq_error_sd)))
  invisible(x)
}

#' @export
print.fdp_mechanism <- function(x, ...) {
  i <- x$info
  cat(sprintf("<fdp_mechanism> %s (%s, registered as %s): (epsilon = %g, delta = %g)-DP, %s\n", i$display_name, i$name,
              i$registered, i$epsilon, i$delta, if (is.null(i$person_id)) "one record per unit" else paste("per person:", i$person_id)))
  for (s in i$stages) cat(sprintf("  stage %-28s epsilon = %.4g, delta = %.3g\n", s$stage, s$epsilon, s$delta))
  print(preview(x))
  invisible(x)
}
