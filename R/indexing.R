#' Extract or replace parts of a Zarr array
#'
#' Indexing follows base R: a missing index selects the whole extent;
#' indices may be positive (in any order, with repeats), negative (to
#' exclude) or logical; `drop` drops extents of length one. Only the chunks
#' that hold selected elements are read, each once. A single index on an
#' array with more than one dimension selects elements by their position in
#' column-major order, as for base arrays. Replacement writes the values into
#' the store; a single value is recycled. (The selection of
#' [`$read()`][zarr_array] is the one of zarr 1.0.0 instead: there `c(2, 7)`
#' is the range of elements 2 to 7.)
#'
#' @param x A [zarr_array].
#' @param i,j,... Indices, one per dimension.
#' @param drop Whether to drop extents of length one (default `TRUE`).
#' @param fill_as_na Whether elements equal to a fill value that marks
#'   missing values read as `NA` (default: the `zarr.fill_as_na` option,
#'   `TRUE`); a fill value of zero always reads as itself. See
#'   `zarr.fill_as_na` in [zarr-options].
#' @param decode Whether to decode the values as the CF conventions say,
#'   where the array's attributes ask for it (default: the `zarr.decode_cf`
#'   option, `TRUE`); see `read()` of [zarr_array] and [cf-decoding].
#' @param value The values to write.
#' @return For `[`, a vector, matrix or array. For `[<-`, the array, invisibly.
#' @seealso [zarr_array] (its `read()` and `write()` methods), [zarr-options]
#'   (`zarr.fill_as_na`, `zarr.dimnames`)
#' @name array-indexing
#' @examples
#' x <- array(1:100, c(10, 10))
#' z <- as_zarr(x)
#' arr <- z[["/"]]
#' arr[3:5, 7:9]
#' arr[c(1, 10), -1]
#' arr[2, 2] <- 0L
#' arr[1:3, 2]
NULL

# Collect the index arguments of a `[` call without evaluating missing ones.
index_args <- function(nd, call_args, env, path) {
  n <- length(call_args)
  if (n == 1L && nd != 1L) {
    if (identical(call_args[[1L]], quote(expr = ))) return(rep(list(NULL), nd)) # x[]
    return(list(linear = eval(call_args[[1L]], env)))
  }
  if (n != nd)
    zarr_abort("index", sprintf("the array has %d dimension(s) but %d index(es) were given", nd, n), array = path)
  lapply(call_args, function(a) if (identical(a, quote(expr = ))) NULL else eval(a, env))
}

# Indices of `[` resolved in base-R terms, so that $read() and $write() (whose
# selection elements are ranges) take them as they are.
resolved_selection <- function(sel, shape, path) {
  lapply(seq_along(shape), function(d) {
    e <- sel[[d]]
    # the common case, a run such as i:(i + 99), without the general checks
    if (is.integer(e) && !is.object(e) && (len <- length(e))) {
      a <- e[[1L]]
      b <- e[[len]]
      if (!is.na(a) && !is.na(b) && a >= 1L && b <= shape[d] && b - a == len - 1L &&
          isFALSE(is.unsorted(e, strictly = TRUE)))
        return(zarr_range(a - 1, len))
    }
    r <- resolve_index(e, shape[d], d, path)
    if (inherits(r, "zarr_range")) r else structure(r, class = "zarr_index")
  })
}

#' @rdname array-indexing
#' @export
`[.zarr_array` <- function(x, i, j, ..., drop = TRUE, fill_as_na = getOption("zarr.fill_as_na", TRUE),
                          decode = getOption("zarr.decode_cf", TRUE)) {
  call_args <- as.list(sys.call())[-c(1L, 2L)]
  call_args <- call_args[!names(call_args) %||% rep("", length(call_args)) %in% c("drop", "fill_as_na", "decode")]
  shape <- x$shape
  nd <- length(shape)
  if (nd == 0L) return(x$read(fill_as_na = fill_as_na, decode = decode))
  if (!length(call_args)) call_args <- list(quote(expr = )) # x[fill_as_na = ]: as x[]
  sel <- index_args(nd, call_args, parent.frame(), x$path)
  if (!is.null(sel$linear)) return(read_linear(x, sel$linear, fill_as_na, decode))
  out <- x$read(resolved_selection(sel, shape, x$path), fill_as_na = fill_as_na, decode = decode)
  if (nd > 1L && isTRUE(drop) && !inherits(out, "CFTime")) out <- drop(out)
  out
}

read_linear <- function(x, idx, fill_as_na = getOption("zarr.fill_as_na", TRUE),
                        decode = getOption("zarr.decode_cf", TRUE)) {
  shape <- x$shape
  n <- prod(shape)
  pos <- sel_indices(resolve_index(idx, n, 1L, x$path)) # 0-based linear positions
  if (!length(pos)) return(x$read(lapply(shape, function(s) structure(numeric(), class = "zarr_index")), fill_as_na, decode)[0])
  sub <- arrayInd(pos + 1, shape) # 1-based subscripts per element
  # read the bounding box of the wanted elements once, then pick
  lo <- apply(sub, 2L, min)
  hi <- apply(sub, 2L, max)
  box <- x$read(lapply(seq_along(shape), function(d) zarr_range(lo[d] - 1, hi[d] - lo[d] + 1)), fill_as_na, FALSE)
  dim(box) <- hi - lo + 1
  out <- box[sweep(sub, 2L, lo - 1)]
  dim(out) <- NULL
  # decoded after picking: times and CFtime objects have no dim to pick from
  enc <- if (isTRUE(decode) && !isTRUE(x$raw_read)) cf_encoding(x$attributes, x$data_type, x$path)
  if (is.null(enc)) out else cf_decode(out, enc)
}

#' @rdname array-indexing
#' @export
`[<-.zarr_array` <- function(x, i, j, ..., value) {
  call_args <- as.list(sys.call())[-c(1L, 2L)]
  call_args <- call_args[names(call_args) %||% rep("", length(call_args)) != "value"]
  shape <- x$shape
  nd <- length(shape)
  if (nd == 0L) {
    x$write(value)
    return(invisible(x))
  }
  sel <- index_args(nd, call_args, parent.frame(), x$path)
  if (!is.null(sel$linear)) zarr_abort("index", "replacement needs one index per dimension", array = x$path)
  x$write(value, resolved_selection(sel, shape, x$path))
  invisible(x)
}

#' @export
dim.zarr_array <- function(x) {
  s <- x$shape
  if (length(s) < 2L) NULL else s
}

#' @export
length.zarr_array <- function(x) prod(x$shape)

#' @export
as.array.zarr_array <- function(x, ...) {
  out <- x$read()
  if (inherits(out, "CFTime")) out <- out$as_timestamp()
  if (is.null(dim(out))) dim(out) <- length(out)
  out
}
