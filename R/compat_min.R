# MINIMAL stand-ins for parts of the zarr 1.0.0 API that another branch
# ("api-extras") implements in full: zarr_options(), auto_chunk(),
# optimal_chunking() and array_builder's data_type_from_storage.mode. They
# exist here only so that code written for zarr 1.0.0 (geozarr) runs; when
# the branches are merged, the full versions replace this file.

# Package options of the 1.0.0 form (an environment, as 1.0.0 keeps them).
Zarr.options <- new.env(parent = emptyenv())

zarr_default_options <- function() {
  assign("chunk_length", 100L, envir = Zarr.options)
  assign("min_compress", 100L, envir = Zarr.options)
  assign("eps", sqrt(.Machine$double.eps), envir = Zarr.options)
  assign("group_style", c("blue", "bold"), envir = Zarr.options)
  assign("array_style", c("green", "bold"), envir = Zarr.options)
  assign("label_style", "bold", envir = Zarr.options)
  assign("text_style", "blue", envir = Zarr.options)
  assign("minor_style", "grey", envir = Zarr.options)
  assign("zarr_theme", make_zarr_theme(), envir = Zarr.options)
}

#' Get or set package options (zarr 1.0.0 form)
#'
#' Options kept for the session: `chunk_length` (the longest chunk side
#' [auto_chunk()] makes), `min_compress` (arrays with more elements are
#' compressed), `eps`, and the print styles `group_style`, `array_style`,
#' `label_style`, `text_style` and `minor_style` (cli style names), from
#' which the cli theme `zarr_theme` is made. The options of
#' [zarr-options] (`getOption("zarr.*")`) are separate.
#'
#' @param key The name of an option; missing for all of them.
#' @param value A new value; an invalid one is ignored.
#' @return The value of `key`, or all options as a list, or (when setting)
#'   nothing.
#' @export
#' @examples
#' zarr_options("chunk_length")
zarr_options <- function(key, value) {
  if (missing(key)) {
    out <- as.list(Zarr.options)
    out$zarr_theme <- zarr_theme()
    return(out[sort(names(out))])
  }
  if (missing(value)) return(if (identical(key, "zarr_theme")) zarr_theme() else Zarr.options[[key]])
  ok <- switch(key,
    chunk_length = , min_compress = is.numeric(value) && length(value) >= 1L && isTRUE(value[1L] > 0),
    eps = is.numeric(value) && isTRUE(value[1L] > 0),
    group_style = , array_style = , label_style = , text_style = , minor_style = is.character(value),
    FALSE)
  if (ok) {
    if (key %in% c("chunk_length", "min_compress")) value <- as.integer(value[1L])
    assign(key, value, envir = Zarr.options)
    assign("zarr_theme", make_zarr_theme(), envir = Zarr.options)
  }
  invisible(NULL)
}

#' Chunk shape from an array shape (zarr 1.0.0 form)
#'
#' @param dims The shape of the array.
#' @param max_chunk The longest chunk side.
#' @return An integer vector: for each dimension, the extent split into
#'   equal parts of at most `max_chunk`.
#' @export
#' @examples
#' auto_chunk(c(500L, 40L))
auto_chunk <- function(dims, max_chunk = Zarr.options$chunk_length) {
  n <- ceiling(dims / max_chunk)
  as.integer(ceiling(dims / pmax(n, 1)))
}

#' Chunk shape of about a given number of elements (zarr 1.0.0 form)
#'
#' @param dim_sizes The shape of the array.
#' @param weights Optional positive weights per dimension: a dimension of
#'   larger weight gets longer chunk sides.
#' @param chunk_values The number of elements a chunk should hold at most.
#' @return An integer vector with the chunk shape.
#' @export
#' @examples
#' optimal_chunking(c(3600L, 1800L, 365L))
optimal_chunking <- function(dim_sizes, weights, chunk_values = 4194304) {
  n <- length(dim_sizes)
  if (missing(weights) || is.null(weights)) weights <- rep(1, n)
  if (length(weights) != n) zarr_abort("argument", "dim_sizes and weights need the same length")
  if (any(weights <= 0)) zarr_abort("argument", "weights must be positive")
  total <- sum(weights[dim_sizes > 1])
  if (total == 0) return(as.integer(dim_sizes))
  side <- chunk_values^(1 / total)
  out <- ifelse(dim_sizes <= 1, 1, pmin(floor(side^weights), dim_sizes))
  # equal chunks along each side rather than a full one and a small rest
  out <- ifelse(out >= dim_sizes, dim_sizes, ceiling(dim_sizes / pmax(1, round(dim_sizes / out))))
  as.integer(out)
}

# array_builder$data_type_from_storage.mode: set the data type from an R
# storage mode ("integer", "double", "logical", "character", ...).
array_builder$set("active", "data_type_from_storage.mode", function(value) {
  if (missing(value)) return(NULL)
  dt <- switch(value, logical = "bool", integer = "int32", double = , numeric = "float64",
               complex = "complex128", character = "string",
               zarr_abort("argument", sprintf("no Zarr data type for storage mode '%s'", value)))
  self$data_type <- dt
})

.onLoad <- function(libname, pkgname) {
  zarr_default_options()
}
