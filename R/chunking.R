# Chunk shapes chosen for a shape: auto_chunk() (per-dimension cap, as
# define_array() does) and optimal_chunking() (a budget of elements per chunk,
# shared out between dimensions by weight).

#' A chunk shape from a cap on chunk sides
#'
#' Splits each dimension into as few chunks as keep every chunk side at most
#' `max_chunk` long, then makes the chunks along that dimension as even as
#' possible: a dimension of 250 with `max_chunk = 100` gets chunks of 84
#' (3 chunks), not 100, 100 and 50.
#'
#' @param dims Integer vector with the length of the array along each
#'   dimension.
#' @param max_chunk The longest chunk side; defaults to the `chunk_length`
#'   option (100, see [zarr_options()]).
#' @return An integer vector as long as `dims` with the chunk length along
#'   each dimension.
#' @seealso [optimal_chunking()]
#' @export
#' @examples
#' auto_chunk(c(5000L, 43L, 12800L, 4L))
#' auto_chunk(c(5000L, 43L, 12800L, 4L), 1000L)
auto_chunk <- function(dims, max_chunk = zarr_options("chunk_length")) {
  if (!is.numeric(dims) || anyNA(dims) || any(dims < 0))
    zarr_abort("argument", "dims must be non-negative lengths")
  if (!is.numeric(max_chunk) || length(max_chunk) != 1L || is.na(max_chunk) || max_chunk < 1)
    zarr_abort("argument", "max_chunk must be a positive number")
  dims <- pmax(1, trunc(as.numeric(dims)))
  n <- ceiling(dims / trunc(max_chunk))
  as.integer(ceiling(dims / n))
}

#' A chunk shape from a budget of elements per chunk
#'
#' Chooses chunk lengths whose product is at most `chunk_values` elements.
#' Without weights every dimension (longer than 1) gets about the same chunk
#' length; a dimension with weight 2 gets about the square of the length a
#' dimension of weight 1 gets, so reads along it need fewer chunks. Each
#' length is then evened out so that the last chunk along a dimension is not
#' a small remainder. Dimensions shorter than their share are one chunk, and
#' what they leave over goes to the others.
#'
#' @param dim_sizes Integer vector with the length of the array along each
#'   dimension (its `shape`).
#' @param weights Optional positive weights, one per dimension (default: all
#'   1).
#' @param chunk_values The largest number of elements in a chunk (default
#'   4 Mi elements: 16 MiB of float32).
#' @return An integer vector as long as `dim_sizes` with the chunk length
#'   along each dimension.
#' @seealso [auto_chunk()]
#' @export
#' @examples
#' shape <- c(x = 50000L, y = 350L, time = 8192L)
#' optimal_chunking(shape)
#' # longer chunks along time, for time series reads
#' optimal_chunking(shape, weights = c(1, 1, 2))
optimal_chunking <- function(dim_sizes, weights, chunk_values = 4L * 1024L * 1024L) {
  if (!is.numeric(dim_sizes) || !length(dim_sizes) || anyNA(dim_sizes) || any(dim_sizes < 1))
    zarr_abort("argument", "dim_sizes must be positive lengths")
  dims <- trunc(as.numeric(dim_sizes))
  nd <- length(dims)
  if (missing(weights) || is.null(weights)) weights <- rep(1, nd)
  if (!is.numeric(weights) || length(weights) != nd || anyNA(weights))
    zarr_abort("argument", "weights needs one number per dimension")
  if (any(weights <= 0)) zarr_abort("argument", "weights must be positive")
  if (!is.numeric(chunk_values) || length(chunk_values) != 1L || is.na(chunk_values) || chunk_values < 1)
    zarr_abort("argument", "chunk_values must be a positive number")
  chunk <- rep(1, nd)
  free <- dims > 1
  budget <- as.numeric(chunk_values)
  # Dimensions that fit whole in their share take their whole length; share
  # out what is left between the others until none fits whole.
  repeat {
    if (!any(free)) break
    base <- budget^(1 / sum(weights[free]))
    share <- base^weights
    whole <- free & share >= dims
    if (!any(whole)) {
      chunk[free] <- pmax(1, floor(share[free]))
      break
    }
    chunk[whole] <- dims[whole]
    budget <- max(1, budget / prod(dims[whole]))
    free <- free & !whole
  }
  # even out: no near-full chunk followed by a small remainder
  n <- pmax(1, round(dims / chunk))
  chunk <- ifelse(chunk >= dims, dims, ceiling(dims / n))
  # evening out may round up; stay within the budget
  while (prod(chunk) > chunk_values && any(chunk > 1)) {
    d <- which.max(chunk / weights)
    n[d] <- n[d] + 1
    chunk[d] <- ceiling(dims[d] / n[d])
  }
  stats::setNames(as.integer(chunk), names(dim_sizes))
}
