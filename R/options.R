#' Package options
#'
#' The package reads these options with [getOption()] each time they matter,
#' so they can be changed at any moment.
#'
#' \describe{
#'   \item{`zarr.num_threads`}{Number of threads used to decode and encode
#'     chunks. Defaults to the number of cores, and to at most 2 when the
#'     environment variable `_R_CHECK_LIMIT_CORES_` is set. With 1 thread the
#'     results are identical.}
#'   \item{`zarr.fill_as_na`}{`TRUE` (default): elements equal to an array's
#'     fill value are read as `NA`, and `NA` is written as the fill value.
#'     `FALSE`: the stored values are returned as they are, which is what you
#'     want for arrays written elsewhere that use `0` as their fill value.
#'     Floating point arrays whose fill value is `NaN` keep `NaN` and `NA`
#'     apart either way.}
#'   \item{`zarr.format`}{The Zarr format of new stores made by
#'     [create_zarr()] and [as_zarr()]: 3 (default) or 2, for readers that only
#'     know Zarr v2. Groups and arrays follow the format of their store.}
#'   \item{`zarr.int64`}{How 64-bit integers are returned: `"integer64"`
#'     (default when the \pkg{bit64} package is installed) or `"double"`
#'     (with a warning when a value cannot be represented exactly).}
#'   \item{`zarr.range_gap`, `zarr.range_max`}{How a read of part of a
#'     sharded array asks for the inner chunks it needs, and how a
#'     [zarr_refstore] reads the chunks of a referenced file: byte ranges of
#'     one shard (or file) closer than `zarr.range_gap` bytes (default 1 MiB)
#'     are fetched in one request, up to `zarr.range_max` bytes per request
#'     (default 16 MiB). Smaller values move fewer bytes; larger ones make fewer
#'     requests, which pays off on remote stores.}
#'   \item{`zarr.http_concurrency`}{HTTP requests in flight at once
#'     (default 32, as tensorstore uses).}
#'   \item{`zarr.http_retries`}{Further attempts after a request fails on a
#'     connection error, a timeout, a truncated body or a status 408, 429,
#'     500, 502, 503 or 504 (default 5).}
#'   \item{`zarr.http_backoff`, `zarr.http_backoff_max`}{The wait before the
#'     first retry in seconds (default 0.25), doubled for each further one,
#'     with random jitter, and its cap (default 32). A `Retry-After` header
#'     is honoured up to the cap.}
#'   \item{`zarr.http_connect_timeout`, `zarr.http_low_speed_time`}{Seconds
#'     to wait for a connection (default 10), and seconds a transfer may go
#'     on without receiving a byte before it is abandoned (default 30).
#'     These apply to S3 stores ([zarr_s3store]) too.}
#'   \item{`zarr.s3_multipart_size`}{Values larger than this many bytes
#'     (default 64 MiB, at least 5 MiB) are written to S3 in parts of this
#'     size, uploaded concurrently (a multipart upload).}
#' }
#' @name zarr-options
NULL

zarr_num_threads <- function() {
  n <- getOption("zarr.num_threads")
  if (is.null(n)) {
    n <- .Call(ffi_num_cores)
    limit <- Sys.getenv("_R_CHECK_LIMIT_CORES_", "")
    if (nzchar(limit) && !identical(tolower(limit), "false")) n <- min(n, 2L)
  }
  n <- suppressWarnings(as.integer(n))
  if (length(n) != 1L || is.na(n) || n < 1L) 1L else n
}

# What the engine is told besides the selection.
engine_opts <- function(fill_as_na = zarr_fill_as_na()) {
  list(nthreads = zarr_num_threads(), fill_as_na = fill_as_na,
       range_gap = zarr_num_option("zarr.range_gap", 1048576, 0),
       range_max = zarr_num_option("zarr.range_max", 16777216, 1))
}

# A numeric option: its default when unset, an error when not a number >= min.
zarr_num_option <- function(name, default, min = 0) {
  v <- getOption(name, default)
  v <- suppressWarnings(as.numeric(v))
  if (length(v) != 1L || is.na(v) || v < min)
    zarr_abort("argument", sprintf("option %s must be a number of at least %s", name, format(min)))
  v
}

zarr_fill_as_na <- function(value = getOption("zarr.fill_as_na", TRUE)) {
  isTRUE(value)
}

zarr_int64_mode <- function() {
  mode <- getOption("zarr.int64")
  if (is.null(mode)) mode <- if (requireNamespace("bit64", quietly = TRUE)) "integer64" else "double"
  match.arg(mode, c("integer64", "double"))
}

#' Default for `NULL`
#'
#' `x %||% y` is `y` when `x` is `NULL`, else `x`, as in base R from 4.4.0.
#' Exported on older versions of R only, for code (such as domain packages
#' written for R 4.4) that uses the operator of base R.
#' @param x,y Any values.
#' @return `x`, or `y` when `x` is `NULL`.
#' @name null-default
#' @rawNamespace if (getRversion() < "4.4.0") export("%||%")
`%||%` <- function(x, y) if (is.null(x)) y else x

`%|NA|%` <- function(a, b) if (length(a) != 1L || is.na(a)) b else a

zarr_default_format <- function() {
  f <- suppressWarnings(as.integer(getOption("zarr.format", 3L)))
  if (length(f) != 1L || !f %in% c(2L, 3L)) zarr_abort("argument", "option zarr.format must be 2 or 3")
  f
}
