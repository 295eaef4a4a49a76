# The R layer's plumbing: every call into Rust goes through .rs(), which turns the glue's error
# payload (the Rust message and its kind) into an R condition raised with stop().

#' @useDynLib fdpriv, .registration = TRUE
NULL

.rs <- function(value, call = sys.call(-1)) {
  if (inherits(value, "fdpriv_error_payload")) {
    class <- c(if (identical(value$kind, "budget")) "fdpriv_budget_exceeded", "fdpriv_error", "error", "condition")
    stop(structure(class = class, list(message = value$message, call = call)))
  }
  value
}

.json <- function(text) jsonlite::fromJSON(text, simplifyVector = TRUE, simplifyDataFrame = FALSE, simplifyMatrix = FALSE)

# A parameter as JSON takes it: NULL dropped (the registry's default), a non-finite number as the
# text "nan"/"inf"/"-inf" (which the registry reads back and checks like any number).
.plain <- function(value) {
  if (is.numeric(value) && !is.integer(value)) {
    if (any(!is.finite(value))) {
      return(ifelse(is.nan(value) | is.na(value), "nan", ifelse(value > 0, "inf", "-inf")))
    }
  }
  value
}

.spec_json <- function(spec) {
  params <- lapply(spec$params, function(v) if (inherits(v, "AsIs")) structure(.plain(unclass(v)), class = "AsIs") else .plain(v))
  # Scalars stay scalars; vectors of length > 1 (a range, a centre) and I(x) become arrays.
  params <- lapply(params, function(v) if (length(v) == 1L && !inherits(v, "AsIs")) jsonlite::unbox(v) else v)
  body <- list(mechanism = jsonlite::unbox(spec$mechanism), params = if (length(params)) params else structure(list(), names = character()))
  as.character(jsonlite::toJSON(body, digits = NA, auto_unbox = FALSE, null = "null"))
}

.count <- function(x, name) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || x < 0 || x != floor(x)) {
    stop(sprintf("%s must be a whole number >= 0", name), call. = FALSE)
  }
  as.double(x)
}
