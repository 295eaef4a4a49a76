#' A privacy session
#'
#' The budget of one dataset, its randomness and its ledger. Every release goes through
#' [release()], which checks the whole cost against the budget **before** the data are read,
#' charges it (one ledger entry per stage) and releases. The ledger is the same JSON the command
#' line (`fdp ledger show`) and Python (`fdp.Session.load`) read and write: a curator can switch
#' tools mid-project.
#'
#' @param epsilon,delta The total budget (`delta = NULL`: pure DP only).
#' @param seed Opt-in reproducible noise, recorded in every release and ledger entry. Experiments
#'   only: anyone who knows the seed can remove the noise. Without it the noise comes from the
#'   operating system's CSPRNG.
#' @param neighbours `"replace_one"` (n public; means, densities, KME) or `"add_remove_one"`
#'   (sketches).
#' @return An object of class `fdp_session` (a reference: releases charge it in place).
#' @examples
#' session <- fdp_session(epsilon = 1, seed = 7)
#' session
#' @export
fdp_session <- function(epsilon, delta = NULL, seed = NULL, neighbours = c("replace_one", "add_remove_one")) {
  neighbours <- match.arg(neighbours)
  if (!is.null(delta) && delta > 1e-3 && delta < 1) {
    warning(sprintf("delta = %g is a large failure probability: delta is usually far below 1/n (e.g. 1e-6)", delta), call. = FALSE)
  }
  .session(.rs(.Call(wrap__session_new, as.double(epsilon), if (is.null(delta)) NULL else as.double(delta), neighbours == "add_remove_one",
                           if (is.null(seed)) NULL else .count(seed, "seed"))))
}

.session <- function(ptr) structure(list(ptr = ptr), class = "fdp_session")

#' @describeIn fdp_session A session continued from the ledger file at `path` (verified: an edited,
#'   truncated or reordered ledger, a raised budget or a lowered spend is refused).
#' @param path The ledger file.
#' @export
fdp_session_load <- function(path, seed = NULL) {
  text <- paste(readLines(path, warn = FALSE, encoding = "UTF-8"), collapse = "\n")
  .session(.rs(.Call(wrap__session_from_json, text, if (is.null(seed)) NULL else .count(seed, "seed"))))
}

#' @describeIn fdp_session Writes the ledger, atomically (a reader never sees half a ledger).
#' @param session An `fdp_session`.
#' @export
fdp_session_save <- function(session, path) {
  stopifnot(inherits(session, "fdp_session"))
  .rs(.Call(wrap__session_save, session$ptr, path.expand(path)))
  invisible(path)
}

#' @describeIn fdp_session `c(epsilon, delta)` spent so far.
#' @export
spent <- function(session) .totals(session)[1:2]

#' @describeIn fdp_session `c(epsilon, delta)` left.
#' @export
remaining <- function(session) .totals(session)[3:4]

.totals <- function(session) {
  stopifnot(inherits(session, "fdp_session"))
  stats::setNames(.rs(.Call(wrap__session_state, session$ptr))$totals, c("epsilon", "delta", "epsilon", "delta"))
}

#' @describeIn fdp_session Every charge so far, one row per stage: index, mechanism, epsilon, delta,
#'   what was released and the noise's provenance.
#' @export
ledger <- function(session) {
  stopifnot(inherits(session, "fdp_session"))
  entries <- .json(to_json(session))$entries
  if (!length(entries)) {
    return(data.frame(index = integer(), mechanism = character(), epsilon = double(), delta = double(), released = character()))
  }
  rows <- lapply(entries, function(e) {
    data.frame(index = e$index, mechanism = e$mechanism, epsilon = e$epsilon, delta = e$delta, released = e$released,
               stringsAsFactors = FALSE)
  })
  do.call(rbind, rows)
}

#' @export
print.fdp_session <- function(x, ...) {
  state <- .rs(.Call(wrap__session_state, x$ptr))
  t <- state$totals
  cat(sprintf("<fdp_session> spent (epsilon = %g, delta = %g), remaining (epsilon = %g, delta = %g), %s neighbours\n",
              t[1], t[2], t[3], t[4], if (state$add_remove) "add/remove-one" else "replace-one"))
  cat(sprintf("  ledger head %s\n", state$head))
  invisible(x)
}

#' JSON of a release or a session
#'
#' A release as the command line writes `release.json`; a session as its ledger file.
#' @param x An `fdp_release` or an `fdp_session`.
#' @param ... Unused.
#' @return A JSON string.
#' @export
to_json <- function(x, ...) UseMethod("to_json")

#' @export
to_json.fdp_session <- function(x, ...) .rs(.Call(wrap__session_to_json, x$ptr))

#' Release a mechanism on data
#'
#' Builds `mechanism` for the data's public frame (if it is a spec), charges it to `session` stage
#' by stage and releases it on `data`. Nothing is charged when the data are not what the mechanism
#' was built for (their n, grid or privacy unit: a mechanism built per person refuses
#' curves not grouped by that id) or the budget would be exceeded (an error of class `fdpriv_budget_exceeded`).
#'
#' @param session An `fdp_session`.
#' @param mechanism An `fdp_spec` (built here for `data`) or an `fdp_mechanism`.
#' @param data `fdp_curves` (means, FPCA), `fdp_sparse` (sparse means), a numeric vector or an
#'   n x D matrix of points (densities, synthetic data, sketches), or `list(x, y)` (regressions).
#' @param grid For sparse curves: the public grid (its ends are the domain).
#' @return An object of class `fdp_release`.
#' @examples
#' grid <- seq(0, 1, length.out = 20)
#' values <- outer(rep(1, 100), 0.5 + 0.2 * sin(2 * pi * grid)) + matrix(rnorm(2000, sd = 0.05), 100)
#' session <- fdp_session(epsilon = 1, seed = 1)
#' r <- release(session, fdp_mean(epsilon = 1, range = c(0, 1)), fdp_curves(values, grid))
#' r
#' @export
release <- function(session, mechanism, data, grid = NULL) {
  if (!inherits(session, "fdp_session")) stop("session must be an fdp_session", call. = FALSE)
  if (inherits(mechanism, "fdp_spec")) mechanism <- fdp_build(mechanism, data, grid = grid)
  if (!inherits(mechanism, "fdp_mechanism")) stop("mechanism must be an fdp_spec or an fdp_mechanism", call. = FALSE)
  ptr <- .rs(.Call(wrap__session_release, session$ptr, mechanism$ptr, .glue_data(data, mechanism$info$input)))
  .release(ptr, mechanism)
}

#' Summary states: release from parts of the data
#'
#' The exact summary state of one part of the data (a file, a chunk, a partition): states of the
#' parts merge, bit for bit whatever the partitioning, into the state of the whole, which
#' [release_state()] releases — the same release as [release()] on all the data at the same seed.
#' @param mechanism An `fdp_mechanism`.
#' @param data A part of the data (any number of records).
#' @return A raw vector.
#' @export
part_state <- function(mechanism, data) {
  stopifnot(inherits(mechanism, "fdp_mechanism"))
  .rs(.Call(wrap__part_state, mechanism$ptr, .glue_data(data, mechanism$info$input)))
}

#' @describeIn part_state Two states merged (exact).
#' @param a,b States (raw vectors).
#' @export
merge_states <- function(a, b) .rs(.Call(wrap__merge_states, a, b))

#' @describeIn part_state Charges `mechanism` and releases it from a complete state.
#' @param session An `fdp_session`.
#' @param state The merged state of all the data.
#' @export
release_state <- function(session, mechanism, state) {
  stopifnot(inherits(session, "fdp_session"), inherits(mechanism, "fdp_mechanism"))
  .release(.rs(.Call(wrap__session_release_state, session$ptr, mechanism$ptr, state)), mechanism)
}
