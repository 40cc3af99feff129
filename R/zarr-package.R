#' zarr: Zarr arrays for R, with a C core
#'
#' Read and write Zarr v3 (and v2) stores: chunked, compressed
#' n-dimensional arrays in a directory or in memory. Start with
#' [open_zarr()], [create_zarr()] or [as_zarr()], and index arrays with
#' `[` as you would base R arrays. Decoding, encoding and copying between
#' chunks and R arrays run in C, in parallel (see [zarr-options]).
#'
#' @seealso The vignettes: `vignette("zarr", package = "zarr")` to start,
#'   `vignette("remote", package = "zarr")` for HTTP, S3 and references.
#' @examples
#' z <- as_zarr(volcano, name = "volcano")
#' z
#' z[["/volcano"]][1:2, 1:4]
#' @name zarr-package
#' @aliases zarr-package
#' @docType package
#' @keywords internal
#' @useDynLib zarr, .registration = TRUE
#' @importFrom utils str
#' @importFrom R6 R6Class
#' @importFrom stats setNames
NULL
