#' Extract or replace parts of a Zarr array
#'
#' Indexing follows base R: a missing index selects the whole extent (an
#' index missing in a calling function too, as in
#' `f <- function(a, i) a[i, 1]`); indices may be positive (in any order,
#' with repeats), negative (to exclude), logical (recycled) or `NA` (which
#' selects `NA`); `drop` drops extents of length one. Only the chunks that
#' hold selected elements are read, each once.
#'
#' A single index on an array with more than one dimension selects elements
#' as for base arrays: a numeric matrix with one column per dimension selects
#' one element per row (`a[cbind(i, j)]`); any other index (a logical matrix
#' too) selects elements by their position in column-major order, and
#' positions past the end read `NA`. Such selections read only the chunks
#' holding the elements (each decoded whole), however far apart the
#' elements are.
#'
#' Replacement writes the values into the store, recycled as base R does
#' when their number divides the number of elements selected; with a single
#' value, `NA` indices are ignored. A replacement cannot grow the array
#' (see `$resize()`).
#'
#' The selection of [`$read()`][zarr_array] is the one of zarr 1.0.0 instead:
#' there `c(2, 7)` is the range of elements 2 to 7.
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
#' @param encode For `[<-`: whether to encode the values as the CF
#'   conventions say (pack, times to offsets, `NA` to `_FillValue`), the
#'   inverse of `decode` (default: the `zarr.decode_cf` option, `TRUE`); see
#'   `write()` of [zarr_array].
#' @param value The values to write.
#' @return For `[`, a vector, matrix or array. For `[<-`, the array, invisibly.
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

# The index arguments of a `[` or `[<-` call, read from the method's frame
# `env`: `n` of them, empty ones included. A missing index (empty, or an
# argument missing in the caller, as in `f <- function(m, i) m[i, 1]`) is NULL
# (the whole extent); an explicit NULL selects nothing, as in base R. A single
# index on an array of several dimensions is a point selection (`points`).
index_args <- function(n, env, shape, path, replace = FALSE) {
  nd <- length(shape)
  args <- vector("list", n)
  if (n > length(index_syms))
    zarr_abort("index", sprintf("the array has %d dimension(s) but %d index(es) were given", nd, n), array = path)
  for (k in seq_len(n)) {
    if (!eval(index_missing[[k]], env)) args[k] <- list(eval(index_syms[[k]], env) %||% integer())
  }
  if (n == 1L && (nd != 1L || beyond_extent(args[[1L]], shape))) {
    if (is.null(args[[1L]])) return(structure(rep(list(NULL), nd), whole = TRUE)) # x[]
    return(list(points = point_index(args[[1L]], shape, path, replace)))
  }
  if (n != nd)
    zarr_abort("index", sprintf("the array has %d dimension(s) but %d index(es) were given", nd, n), array = path)
  args
}

# The index arguments of `[` and `[<-` by position, and the calls asking
# whether each is missing: built once, not on every call.
index_syms <- lapply(c("i", "j", paste0("..", seq_len(62))), as.name)
index_missing <- lapply(index_syms, function(s) call("missing", s))

# How many index arguments a call of the method `fun` has, empty ones
# included: all but x and the method's named arguments given (drop, value
# and any other), so that adding an argument to `[` needs no change here.
index_count <- function(nargs, env, fun) {
  # the calls asking whether each named argument is missing, made once per
  # method (keyed by its argument names)
  key <- paste(names(formals(fun)), collapse = ",")
  asks <- index_count_calls[[key]]
  if (is.null(asks)) {
    named <- setdiff(names(formals(fun)), c("x", "i", "j", "..."))
    asks <- index_count_calls[[key]] <- lapply(named, function(a) call("missing", as.name(a)))
  }
  given <- 0L
  for (q in asks) if (!eval(q, env)) given <- given + 1L
  nargs - 1L - given
}
index_count_calls <- new.env(parent = emptyenv())

# Indices of `[` resolved in base-R terms, so that $read() and $write() (whose
# selection elements are ranges) take them as they are.
resolved_selection <- function(sel, shape, path) {
  out <- vector("list", length(shape))
  for (d in seq_along(shape)) out[[d]] <- resolved_index(sel[[d]], shape, d, path)
  out
}

resolved_index <- function(e, shape, d, path) {
  # the common case, a run such as i:(i + 99), without the general checks
  if ((is.integer(e) || is.double(e)) && !is.object(e) && (len <- length(e))) {
    a <- e[[1L]]
    b <- e[[len]]
    # doubles must be whole numbers (base R truncates 1.5 to 1)
    if (!is.na(a) && !is.na(b) && a >= 1 && b <= shape[d] && b - a == len - 1 &&
        isFALSE(is.unsorted(e, strictly = TRUE)) && (is.integer(e) || all(e == trunc(e))))
      return(zarr_range(a - 1, len))
  }
  r <- resolve_index(e, shape[d], d, path)
  if (inherits(r, "zarr_range")) r else structure(r, class = "zarr_index")
}

# A single index on an array of several dimensions, as base R takes it: a
# numeric matrix with one column per dimension selects one element per row;
# any other index (logical matrices too) selects elements by their position
# in column-major order. The result: one row of 0-based coordinates per
# selected element, NA where base R gives NA (NA indices, positions past the
# end; past the end is an error for a replacement, which cannot grow the array).
point_index <- function(i, shape, path, replace = FALSE) {
  nd <- length(shape)
  if (is.character(i) || is.factor(i))
    zarr_abort("index", "character indices are not supported", array = path)
  if (is.matrix(i) && is.numeric(i) && ncol(i) == nd) {
    if (any(i < 0, na.rm = TRUE))
      zarr_abort("index", "negative values are not allowed in a matrix index", array = path)
    i <- trunc(i)
    i <- i[!rowSums(i == 0, na.rm = TRUE), , drop = FALSE] # base R skips rows holding a 0
    if (any(t(i) > shape, na.rm = TRUE)) zarr_abort("index", "subscript out of bounds", array = path)
    i[rowSums(is.na(i)) > 0, ] <- NA
    storage.mode(i) <- "double"
    return(unname(i - 1))
  }
  n <- prod(shape)
  # as.vector() only for a matrix: it would drop the class of integer64
  # positions, leaving their bits read as tiny doubles
  pos <- linear_index(if (is.null(dim(i))) i else as.vector(i), n, path)
  if (replace && any(pos > n, na.rm = TRUE))
    zarr_abort("index", sprintf("subscript out of bounds: the array has %s elements", format(n)), array = path)
  pos[pos > n] <- NA
  arrayInd(pos, shape) - 1
}

# Whether a 1-d index has NA or goes past the end: base R gives NA there (a
# point selection does).
beyond_extent <- function(i, shape) {
  (is.numeric(i) || is.logical(i)) && length(i) > 0L &&
    (anyNA(i) || (is.numeric(i) && any(i > shape)) || (is.logical(i) && length(i) > shape))
}

# A linear index -> 1-based positions (NA where base R gives NA).
linear_index <- function(i, n, path) {
  if (!length(i)) return(numeric())
  if (is.logical(i)) {
    if (length(i) < n) i <- rep_len(i, n)
    pos <- which(i | is.na(i))
    pos[is.na(i[pos])] <- NA
    return(pos)
  }
  if (!is.numeric(i)) zarr_abort("index", "indices must be numeric or logical", array = path)
  i <- trunc(as.numeric(i))
  if (any(i < 0, na.rm = TRUE)) {
    if (anyNA(i) || any(i > 0)) zarr_abort("index", "positive and negative indices cannot be mixed", array = path)
    return(setdiff(seq_len(n), -i))
  }
  i[is.na(i) | i != 0]
}

# NA in per-dimension indices, as base R takes them: an element of NA (of a
# logical index too) selects a slice of NAs. Returns the indices with NA
# replaced by 1 (read, then overwritten with NA) and, per dimension, which
# positions of the result are NA (NULL where none).
split_na <- function(sel, shape) {
  na <- vector("list", length(sel))
  for (d in which(vapply(sel, anyNA, TRUE))) { # only dimensions holding NA
    i <- sel[[d]]
    if (is.logical(i)) {
      if (length(i) < shape[d]) i <- rep_len(i, shape[d])
      keep <- i | is.na(i)
      i <- ifelse(is.na(i[keep]), NA, which(keep))
    } else if (is.numeric(i) && !any(i < 0, na.rm = TRUE)) {
      i <- trunc(as.numeric(i))
      i <- i[is.na(i) | i != 0]
    } else next # negative with NA: resolve_index() says why not
    if (shape[d] == 0) next
    na[[d]] <- is.na(i)
    i[na[[d]]] <- 1
    sel[[d]] <- i
  }
  list(sel = sel, na = na)
}

#' @rdname array-indexing
#' @export
`[.zarr_array` <- function(x, i, j, ..., drop = TRUE, fill_as_na = getOption("zarr.fill_as_na", TRUE),
                          decode = getOption("zarr.decode_cf", TRUE)) {
  # the index arguments: all but x and the named ones given (index_count()'s
  # count, spelt out for this method's formals as it runs on every call)
  n <- nargs() - 1L - (!missing(drop)) - (!missing(fill_as_na)) - (!missing(decode))
  # a[i, j] of plain runs (1:3, 5) on a matrix, the common case: read at once
  if (n == 2L && !missing(i) && !missing(j)) {
    runs <- .Call(ffi_index_runs, list(i, j), .subset2(x, ".__enclos_env__")$private$.shape)
    if (!is.null(runs)) return(read_runs(x, runs, drop, fill_as_na, decode))
  }
  shape <- x$shape
  nd <- length(shape)
  if (nd == 0L) return(x$read(fill_as_na = fill_as_na, decode = decode))
  if (n == 0L) return(x[, fill_as_na = fill_as_na, decode = decode]) # x[fill_as_na = ]: as x[]
  # x[i, j] with both given (the common case): index_args() without its
  # per-argument eval(); missing() sees through to the caller as there
  sel <- if (n == 2L && nd == 2L && !missing(i) && !missing(j)) list(i %||% integer(), j %||% integer())
         else index_args(n, environment(), shape, x$path)
  if (!is.null(sel$points)) return(read_points(x, sel$points, fill_as_na = fill_as_na, decode = decode))
  # The result is never bound in this frame (see read_indexed())
  read_indexed(x, sel, shape, drop, fill_as_na, decode)
}

# The read of `[`, from the per-dimension indices of index_args().
# A frame that is alive while a large result is allocated is promoted by the
# collection that allocation triggers; if it still binds the result when it
# returns (R clears the bindings of a returning frame only when nothing else
# refers to it: a closure made in it, environment(), a promise not forced),
# the result outlives the call until a full collection, and a loop of large
# reads then forces one per read. So every frame on the read path unbinds
# its result on exit.
read_indexed <- function(x, sel, shape, drop, fill_as_na, decode) {
  on.exit(out <- NULL)
  nd <- length(shape)
  # plain runs such as 1:3 in every dimension: no NA to split, nothing to resolve
  # (ffi_index_runs: zarr_range()s when every index is an ascending run of
  # whole numbers inside the extent, as a[1:3, 1:3] and a[5, 7], else NULL)
  runs <- .Call(ffi_index_runs, sel, shape)
  if (!is.null(runs)) {
    # x[] is x whole, as in base R: nothing dropped
    return(read_runs(x, runs, drop = is.null(attr(sel, "whole")) && isTRUE(drop), fill_as_na, decode))
  }
  s <- split_na(sel, shape)
  out <- x$read(resolved_selection(s$sel, shape, x$path), fill_as_na = fill_as_na, decode = decode)
  for (d in which(!vapply(s$na, is.null, TRUE))) { # NA slices
    at <- rep(list(quote(expr = )), nd)
    at[[d]] <- which(s$na[[d]])
    out <- do.call(`[<-`, c(list(out), at, list(value = NA)))
  }
  # x[] is x whole, as in base R: nothing dropped
  if (nd > 1L && isTRUE(drop) && is.null(attr(sel, "whole")) && !inherits(out, "CFTime")) out <- drop(out)
  out
}

# The read of plain runs (from ffi_index_runs()): the array's own (see its
# private read_runs()), unless a class derived from zarr_array has a read()
# of its own.
read_runs <- function(x, runs, drop, fill_as_na, decode) {
  on.exit(out <- NULL) # see read_indexed()
  out <- if (identical(body(.subset2(x, "read")), zarr_array_read_body))
    .subset2(x, ".__enclos_env__")$private$read_runs(runs, fill_as_na, decode)
    else x$read(runs, fill_as_na = fill_as_na, decode = decode)
  if (length(runs) > 1L && isTRUE(drop) && !inherits(out, "CFTime")) out <- drop(out)
  out
}
zarr_array_read_body <- body(zarr_array$public_methods$read)

# Elements at points (rows of 0-based coordinates; NA rows read NA): only the
# chunks holding them are read, in one call. Points filling at least half of
# the block around them (a[1:n]) are picked from that block, read as usual:
# faster than one by one. `...` goes to x$read(). Values are decoded (CF)
# after they are picked: times and CFtime objects have no dim to pick from.
read_points <- function(x, pts, ..., decode = getOption("zarr.decode_cf", TRUE)) {
  ok <- !is.na(pts[, 1L])
  pts <- pts[ok, , drop = FALSE]
  dense <- FALSE
  if (nrow(pts)) {
    lo <- apply(pts, 2L, min)
    ext <- apply(pts, 2L, max) - lo + 1
    dense <- prod(ext) <= 2 * nrow(pts)
  }
  out <- if (dense) {
    block <- x$read(Map(zarr_range, lo, ext), ..., decode = FALSE)
    block[as.vector(sweep(pts, 2L, lo) %*% cumprod(c(1, ext))[seq_along(ext)]) + 1]
  } else x$read(structure(pts, class = "zarr_points"), ..., decode = FALSE)
  how <- if (!isTRUE(x$raw_read)) cf_decode_settings(decode, x$path)
  enc <- if (!is.null(how)) cf_encoding(x$attributes, x$data_type, x$path, how$valid_range)
  if (!is.null(enc)) out <- cf_decode(out, enc)
  if (all(ok)) return(out)
  if (inherits(out, "CFTime")) out <- out$as_timestamp()
  res <- out[rep(NA_integer_, length(ok))] # NA of out's type and class
  res[ok] <- out
  res
}

#' @rdname array-indexing
#' @export
`[<-.zarr_array` <- function(x, i, j, ..., encode = getOption("zarr.decode_cf", TRUE), value) {
  shape <- x$shape
  nd <- length(shape)
  if (nd == 0L) {
    x$write(value, encode = encode)
    return(invisible(x))
  }
  sel <- index_args(index_count(nargs(), environment(), sys.function()), environment(), shape, x$path,
                    replace = TRUE)
  if (!is.null(sel$points)) {
    pts <- sel$points
    ok <- !is.na(pts[, 1L])
    if (!all(ok)) {
      if (length(value) > 1L) zarr_abort("index", "NA indices are not allowed in a replacement of several values", array = x$path)
      pts <- pts[ok, , drop = FALSE]
    }
    sel <- structure(pts, class = "zarr_points")
    n <- nrow(pts)
  } else {
    s <- split_na(sel, shape)
    if (any(unlist(s$na))) { # base R ignores NA positions when one value is given
      if (length(value) > 1L) zarr_abort("index", "NA indices are not allowed in a replacement of several values", array = x$path)
      sel <- Map(function(i, na) if (is.null(na)) i else i[!na], s$sel, s$na)
    } else sel <- s$sel
    sel <- resolved_selection(sel, shape, x$path)
    n <- prod(sel_lengths(sel))
  }
  if (n == 0) return(invisible(x))
  x$write(recycle_value(value, n, x$path), sel, encode = encode)
  invisible(x)
}

# Values for n elements, recycled as base R does (whole copies only).
recycle_value <- function(value, n, path) {
  k <- if (is.data.frame(value)) nrow(value) else length(value) # records of a struct array recycle by rows
  if (k == n || k == 1L) return(value)
  if (is.data.frame(value) && k > 0L && n %% k == 0) return(value[rep_len(seq_len(k), n), , drop = FALSE])
  if (k == 0L || n %% k != 0)
    zarr_abort("value", sprintf("%s value(s) given for a selection of %s element(s)", format(k), format(n)),
               array = path)
  value[rep_len(seq_len(k), n)] # keeps the class (Date, POSIXct, integer64)
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
