# Property tests: `[`, `[<-`, $read() and $write() on a zarr array against
# the same operations on a base R array (issue 19).
#
# Each case draws a shape (1 to 4 dimensions, small, extents of 0 included),
# a chunk grid (regular, or rectilinear in Zarr v3), a storage order (Zarr v2
# order "C" or "F"; in v3 a transpose codec with a random permutation, or
# none; sometimes sharding), a data type family (logical, integer types,
# uint32, double, float32, complex, string, int64 through bit64 when it is
# installed) with a sentinel fill value, then a sequence of random writes
# and reads. Selections are positive, negative, logical (recycled too),
# zero-length, repeated, out of order, fractional, NA, missing (also through a
# function's missing argument), matrix and linear indices, with drop = TRUE
# or FALSE; values hold NA, NaN and the fill value itself; reads use
# fill_as_na = TRUE and FALSE. The base R model stores what the array
# stores (NA as the fill value, except where the fill value is NaN) and reads
# the fill value as NA when fill_as_na is TRUE.
#
# Fill values equal to the type's zero are avoided: whether they read as NA
# is a separate decision (issue 19, "fill").
#
# The seed is fixed. Environment variables:
#   ZARR_PROPERTY_N     cases (default 300, about 20 s); for a long
#                       run, e.g. ZARR_PROPERTY_N=5000
#   ZARR_PROPERTY_SEED  the seed (default 19)
#   ZARR_PROPERTY_CASE  run only this case (as reported by a failure)
# e.g. ZARR_PROPERTY_N=5000 bash /work/rt.sh . trust-properties

prop_n <- as.integer(Sys.getenv("ZARR_PROPERTY_N", "300"))
prop_seed <- as.integer(Sys.getenv("ZARR_PROPERTY_SEED", "19"))
prop_only <- as.integer(Sys.getenv("ZARR_PROPERTY_CASE", NA))

# ---- data type families: how values are drawn and how the store keeps them

prop_families <- function() {
  ints <- function(lo, hi) function(n) sample(c(lo, hi, lo:min(hi, lo + 300L), NA), n, TRUE)
  fams <- list(
    bool = list(dtype = "bool", fill = TRUE, gen = function(n) sample(c(TRUE, FALSE, NA), n, TRUE)),
    int8 = list(dtype = "int8", fill = -7L, gen = ints(-128L, 127L)),
    int16 = list(dtype = "int16", fill = 1234L, gen = ints(-32768L, 32767L)),
    int32 = list(dtype = "int32", fill = -99999L, gen = ints(-.Machine$integer.max, .Machine$integer.max)),
    uint8 = list(dtype = "uint8", fill = 200L, gen = ints(0L, 255L)),
    uint16 = list(dtype = "uint16", fill = 999L, gen = ints(0L, 65535L)),
    uint32 = list(dtype = "uint32", fill = 4e9, gen = function(n) sample(c(0, 1, 4294967295, 4e9, 17, NA), n, TRUE)),
    float32 = list(dtype = "float32", fill = -9999,
                   gen = function(n) sample(c((-40:40) / 4, Inf, -Inf, NaN, NA), n, TRUE)),
    float16 = list(dtype = "float16", fill = -2.5,
                   gen = function(n) sample(c((-40:40) / 8, 65504, Inf, -Inf, NaN, NA), n, TRUE)),
    bfloat16 = list(dtype = "bfloat16", fill = 3,
                    gen = function(n) sample(c((-40:40) / 8, 2^100, -Inf, NaN, NA), n, TRUE)),
    float64 = list(dtype = "float64", fill = 1.5,
                   gen = function(n) sample(c(round(stats::rnorm(20), 3), 1e300, Inf, -Inf, NaN, NA), n, TRUE)),
    float64_nan = list(dtype = "float64", fill = NaN,
                       gen = function(n) sample(c(round(stats::rnorm(20), 3), -Inf, NaN, NA), n, TRUE)),
    complex = list(dtype = "complex128", fill = 1 + 2i,
                   gen = function(n) sample(c(complex(real = -3:3, imaginary = 3:-3), 0i, NA), n, TRUE)),
    string = list(dtype = "string", fill = "fill",
                  gen = function(n) sample(c("a", "bb", "", "\u00e9t\u00e9", "x y", "fill", NA), n, TRUE))
  )
  if (requireNamespace("bit64", quietly = TRUE))
    fams$int64 <- list(dtype = "int64", fill = 7, gen = function(n) sample(c(-2^53 + 1, 2^53 - 1, 0, 7, 123456789012, NA), n, TRUE))
  fams
}

# The fill value written into the family's R type
prop_fill_r <- function(fam) fam$fill

# What the store keeps of values written: NA is the fill value (bool too),
# except NA and NaN under a NaN fill value.
prop_stored <- function(fam, v) {
  if (is.double(fam$fill) && is.nan(fam$fill)) return(v)
  na <- if (is.double(v)) is.na(v) & !is.nan(v) else is.na(v)
  v[na] <- fam$fill
  v
}

# What reading shows of stored values.
prop_shown <- function(fam, v, fill_as_na) {
  if (!fill_as_na || fam$dtype == "bool" || (is.double(fam$fill) && is.nan(fam$fill))) return(v)
  v[!is.na(v) & v == fam$fill] <- NA
  v
}

# Values to hand to the array: the family's R type (integer64 for int64).
prop_values <- function(fam, v) if (fam$dtype == "int64") bit64::as.integer64(v) else v

# Results made comparable: integer64 as double, 1-d arrays as vectors.
prop_norm <- function(x) {
  if (inherits(x, "integer64")) {
    d <- dim(x)
    x <- as.double(x)
    if (length(d) > 1L) dim(x) <- d
  }
  if (length(dim(x)) == 1L) x <- as.vector(x)
  x
}

# ---- arrays

prop_partition <- function(n) { # random chunk lengths summing to n
  cuts <- sort(sample(seq_len(n - 1L), sample(0:min(3L, n - 1L), 1L)))
  diff(c(0L, cuts, n))
}

prop_array <- function(case, fam, kind) {
  nd <- sample(1:4, 1L, prob = c(3, 4, 3, 2))
  max_ext <- c(9L, 7L, 5L, 4L)[nd]
  shape <- sample(c(0L, seq_len(max_ext)), nd, TRUE, prob = c(0.3, rep(1, max_ext)))
  fmt <- sample(2:3, 1L, prob = c(1, 2))
  z <- if (kind == "memory") create_zarr() else create_zarr(tempfile("prop-"))
  withr::local_options(zarr.format = fmt)
  def <- define_array(fam$dtype, shape)
  def$fill_value <- fam$fill
  rect <- fmt == 3L && all(shape > 0L) && stats::runif(1) < 0.3
  chunk <- if (rect) lapply(shape, prop_partition) else vapply(shape, function(s) sample(seq_len(s + 1L), 1L), 1L)
  def$chunk_shape <- chunk
  order <- "default"
  if (nd > 1L) {
    if (fmt == 2L) {
      order <- sample(c("C", "F"), 1L)
      def$portable <- order == "C"
    } else {
      perm <- sample(nd) - 1L
      order <- paste("transpose", paste(perm, collapse = ","))
      def$portable <- TRUE
      if (stats::runif(1) < 0.8) def$add_codec("transpose", list(order = perm), .position = 1)
      else order <- "none"
    }
  }
  shard <- NULL
  if (fmt == 3L && !rect && fam$dtype != "string" && stats::runif(1) < 0.2) {
    shard <- vapply(chunk, function(c) { d <- seq_len(c); sample(d[c %% d == 0], 1L) }, 1L)
    def$add_codec("sharding_indexed", list(chunk_shape = shard))
  }
  arr <- z$add_array("/", "a", def)
  desc <- sprintf("case %d: %s, v%d %s store, shape %s, chunks %s%s, order %s%s", case, fam$dtype, fmt, kind,
                  paste(shape, collapse = "x"),
                  if (rect) "rectilinear " else "",
                  paste(vapply(chunk, paste, "", collapse = "+"), collapse = "x"), order,
                  if (is.null(shard)) "" else paste(", shards of", paste(shard, collapse = "x")))
  list(arr = arr, shape = shape, desc = desc)
}

# ---- selections

# One index for an extent n (NULL: missing).
prop_index <- function(n, write = FALSE) {
  kinds <- c("missing", "positive", "range", "negative", "logical", "empty", "zero", "fraction", "na", "logical_na")
  k <- sample(kinds, 1L, prob = c(2, 4, 2, 1.5, 1.5, 0.5, 0.5, 0.5, 0.5, 0.5))
  if (n == 0L && k %in% c("positive", "range", "fraction", "na", "logical_na")) k <- "empty"
  switch(k,
    missing = NULL,
    positive = sample(n, sample(1:(n + 2L), 1L), TRUE),           # repeats, any order
    range = { a <- sample(n, 1L); b <- sample(a:n, 1L); if (stats::runif(1) < 0.5) a:b else b:a },
    negative = -sample(n + 1L, sample(0:(n + 1L), 1L)),           # past the end is ignored
    logical = if (n) sample(c(TRUE, FALSE), sample(n, 1L), TRUE) else logical(), # recycled when shorter
    empty = integer(),
    zero = c(0L, sample(seq_len(max(n, 1L)), 1L) * (n > 0L)),
    fraction = sample(n, 2L, TRUE) + 0.75,
    na = sample(c(sample(n, sample(0:3, 1L), TRUE), NA)),
    logical_na = sample(c(TRUE, FALSE, NA), sample(n, 1L), TRUE))
}

# Index arguments of a call: a list with the empty symbol for missing ones.
prop_args <- function(idx) lapply(idx, function(i) if (is.null(i)) quote(expr = ) else i)

# A point (single) index on an array of this shape: a matrix with one
# column per dimension, or a linear index.
prop_point_index <- function(shape, write = FALSE) {
  n <- prod(shape)
  k <- sample(c("matrix", "linear", "negative", "logical", "lmatrix"), 1L, prob = c(3, 3, 1, 1, 1))
  if (n == 0L) return(integer())
  switch(k,
    matrix = {
      m <- vapply(shape, function(s) sample(s, 6L, TRUE), numeric(6))
      m <- matrix(m, ncol = length(shape))[seq_len(sample(0:6, 1L)), , drop = FALSE]
      if (!write && nrow(m) && stats::runif(1) < 0.2) m[1L, 1L] <- NA
      if (nrow(m) && stats::runif(1) < 0.2) m[nrow(m), 1L] <- 0
      m
    },
    linear = {
      i <- sample(n, sample(0:8, 1L), TRUE)
      if (!write && stats::runif(1) < 0.3) i <- c(i, NA, n + 1L)
      i
    },
    negative = -sample(n, sample(0:min(n, 4L), 1L)),
    logical = sample(c(TRUE, FALSE), sample(1:n, 1L), TRUE),
    lmatrix = if (length(shape) > 1L) array(sample(c(TRUE, FALSE), n, TRUE), shape) else sample(c(TRUE, FALSE), n, TRUE))
}

# $read()/$write() selections: each element NULL, c(from, to) (a range in
# either order), or a longer or shorter vector indexing as base R.
prop_api_index <- function(n) {
  if (n == 0L) return(sample(list(NULL, integer()), 1L)[[1L]])
  k <- sample(c("null", "range", "vector", "negative", "logical"), 1L)
  switch(k, null = NULL, range = sample(n, 2L, TRUE),
         vector = { v <- sample(n, sample(1:(n + 2L), 1L), TRUE); if (length(v) == 2L) v[1L] else v },
         negative = -sample(n, 1L), logical = sample(c(TRUE, FALSE), n, TRUE))
}
prop_api_as_base <- function(e) {
  if (is.numeric(e) && length(e) == 2L && !anyNA(e) && all(e > 0)) seq.int(min(e), max(e)) else e
}

# ---- running a case

# Evaluate a call on the zarr array and on the base model; both must fail
# or both must give the same value.
prop_compare <- function(label, z_expr, r_expr) {
  zres <- tryCatch(list(ok = TRUE, value = force(z_expr)), error = function(e) list(ok = FALSE, msg = conditionMessage(e)))
  rres <- tryCatch(list(ok = TRUE, value = force(r_expr)), error = function(e) list(ok = FALSE, msg = conditionMessage(e)))
  if (!rres$ok || !zres$ok) {
    expect(rres$ok == zres$ok,
           sprintf("%s: %s", label, if (rres$ok) paste("zarr failed:", zres$msg) else "base R failed, zarr did not"))
    return(invisible(FALSE))
  }
  got <- prop_norm(zres$value)
  want <- prop_norm(rres$value)
  same <- identical(got, want)
  expect(same, sprintf("%s:\n  zarr:   %s\n  base R: %s", label, prop_show(got), prop_show(want)))
  invisible(same)
}

prop_show <- function(x) paste(deparse(x, width.cutoff = 500L), collapse = "")

wrappers <- list(function(a, i1) a[i1], function(a, i1, i2) a[i1, i2],
                 function(a, i1, i2, i3) a[i1, i2, i3], function(a, i1, i2, i3, i4) a[i1, i2, i3, i4])

prop_case <- function(case, fams) {
  fam <- fams[[sample(length(fams), 1L)]]
  kind <- if (stats::runif(1) < 0.2) "local" else "memory"
  made <- prop_array(case, fam, kind)
  A <- made$arr
  shape <- made$shape
  nd <- length(shape)
  # the base model: what the store holds; unwritten elements hold the fill value
  R <- array(fam$fill, if (nd) shape else 1L)
  for (step in seq_len(8L)) {
    op <- sample(c("assign", "write", "index", "read", "wrapper"), 1L, prob = c(3, 2, 3, 2, 1))
    fna <- stats::runif(1) < 0.5
    label <- sprintf("%s; step %d (%s, fill_as_na = %s)", made$desc, step, op, fna)
    if (op %in% c("assign", "index", "wrapper")) {
      point <- nd > 1L && stats::runif(1) < 0.3
      idx <- if (point) list(prop_point_index(shape, op == "assign"))
             else lapply(shape, prop_index, write = op == "assign")
      label <- paste0(label, "; index ", paste(deparse(idx, width.cutoff = 500L), collapse = ""))
    }
    if (op == "assign") {
      n <- tryCatch(length(do.call(`[`, c(list(R), prop_args(idx)))), error = function(e) 1L)
      # a single value, one per element, or a whole fraction of them
      len <- sample(unique(c(1L, n, if (n %% 2L == 0L && n) n %/% 2L)), 1L)
      v <- fam$gen(len)
      label <- paste0(label, "; values ", paste(deparse(v, width.cutoff = 500L), collapse = ""))
      vz <- prop_values(fam, v)
      cz <- as.call(list(as.name("<-"), as.call(c(list(as.name("["), quote(A)), prop_args(idx))), quote(vz)))
      cr <- as.call(list(as.name("<-"), as.call(c(list(as.name("["), quote(R)), prop_args(idx))), quote(vs)))
      vs <- prop_stored(fam, v)
      e <- environment()
      ok <- prop_compare(label, {eval(cz, e); TRUE}, {R2 <- R; eval(cr, list(R = R2, vs = vs)); TRUE})
      if (isTRUE(ok)) {
        eval(cr, e)
        # a replacement must not grow or reshape the model (base R would)
        expect_identical(dim(R), as.integer(if (nd) shape else 1L), label = label)
      }
    } else if (op == "write") {
      sel <- lapply(shape, prop_api_index)
      base_sel <- lapply(sel, prop_api_as_base)
      n <- tryCatch(length(do.call(`[`, c(list(R), prop_args(base_sel)))), error = function(e) 0L)
      v <- fam$gen(sample(unique(c(1L, n)), 1L))
      label <- paste0(label, "; selection ", paste(deparse(sel, width.cutoff = 500L), collapse = ""),
                      "; values ", paste(deparse(v, width.cutoff = 500L), collapse = ""))
      cr <- as.call(list(as.name("<-"), as.call(c(list(as.name("["), quote(R)), prop_args(base_sel))), quote(vs)))
      vs <- prop_stored(fam, v)
      ok <- prop_compare(label, {A$write(prop_values(fam, v), sel); TRUE},
                         {R2 <- R; eval(cr, list(R = R2, vs = vs)); TRUE})
      if (isTRUE(ok)) eval(cr, environment())
    } else if (op == "index") {
      drop <- sample(list(NULL, TRUE, FALSE), 1L)[[1L]]
      extra <- if (is.null(drop)) list() else list(drop = drop)
      cz <- as.call(c(list(as.name("["), quote(A)), prop_args(idx), extra))
      cr <- as.call(c(list(as.name("["), quote(R)), prop_args(idx), extra))
      label <- paste(label, "drop =", format(drop))
      withr::with_options(list(zarr.fill_as_na = fna),
        prop_compare(label, eval(cz), prop_shown(fam, eval(cr), fna)))
    } else if (op == "wrapper") {
      # indices missing in the caller, passed on as missing arguments
      f <- wrappers[[length(idx)]]
      cz <- as.call(c(list(f, quote(A)), prop_args(idx)))
      cr <- as.call(c(list(f, quote(R)), prop_args(idx)))
      withr::with_options(list(zarr.fill_as_na = fna),
        prop_compare(label, eval(cz), prop_shown(fam, eval(cr), fna)))
    } else {
      sel <- if (stats::runif(1) < 0.15) NULL else lapply(shape, prop_api_index)
      label <- paste0(label, "; selection ", paste(deparse(sel, width.cutoff = 500L), collapse = ""))
      base_sel <- if (is.null(sel)) rep(list(NULL), nd) else lapply(sel, prop_api_as_base)
      cr <- as.call(c(list(as.name("["), quote(R)), prop_args(base_sel), list(drop = FALSE)))
      prop_compare(label, A$read(sel, fill_as_na = fna), prop_shown(fam, eval(cr), fna))
    }
  }
  # the whole array, at the end
  withr::with_options(list(zarr.fill_as_na = FALSE),
    prop_compare(paste(made$desc, "; all of it"), A[], R))
}

test_that("indexing, replacement, read() and write() agree with base R on random cases", {
  skip_on_cran()
  fams <- prop_families()
  withr::local_seed(prop_seed)
  seeds <- sample.int(.Machine$integer.max, prop_n)
  for (case in seq_len(prop_n)) {
    if (!is.na(prop_only) && case != prop_only) next
    withr::with_seed(seeds[case], prop_case(case, fams))
  }
})
