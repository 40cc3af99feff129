#' Empty the decoded-chunk cache
#'
#' Reads that select part of a chunk keep the decoded chunk in a cache of
#' `zarr.chunk_cache_bytes` bytes (see [zarr-options]), and writes through
#' this package drop the chunks they change. A cached chunk of a local store
#' is checked against its file's size and modification time before use, so
#' changes made by other processes are seen; chunks of remote stores (HTTP,
#' S3, GCS, Azure) are not checked with the server: after a change made
#' elsewhere, drop what the cache holds of them with this function.
#'
#' @param x `NULL` (default): every store's chunks. A [zarr_store], or a
#'   [zarr], [zarr_group] or [zarr_array] of one: that store's chunks.
#' @return `NULL`, invisibly.
#' @seealso [zarr-options] (`zarr.chunk_cache_bytes`), [zarr_array]
#'   (`chunk_cache_bytes`)
#' @export
#' @examples
#' z <- as_zarr(matrix(1:16, 4, 4))
#' z$root[1:2, 1:2]
#' zarr_clear_cache(z)
zarr_clear_cache <- function(x = NULL) {
  if (is.null(x)) return(invisible(.Call(ffi_cache_drop, NULL, NULL, NULL)))
  st <- if (inherits(x, "zarr_store")) x else x$store
  if (!inherits(st, "zarr_store")) zarr_abort("argument", "x must be NULL, a store, or a zarr object, group or array of one")
  invisible(.Call(ffi_cache_drop, st$io_spec(), NULL, ""))
}

# A store's set() and erase(): what the cache holds of these keys (and of
# the keys under `prefix`) is no longer what the store holds.
cache_forget <- function(store, keys = NULL, prefix = NULL) {
  if (.Call(ffi_cache_count) > 0) .Call(ffi_cache_drop, store$io_spec(), keys, prefix)
  invisible()
}
