# Shared helpers for the test suite.

# The suite checks the plain-text printing (test-api-1.0.R and
# test-meta-print.R check printing through cli).
options(zarr.cli = FALSE)

# Where ../shared/fixtures is: ZARR_FIXTURES_DIR, or next to the source tree.
fixtures_dir <- function() {
  d <- Sys.getenv("ZARR_FIXTURES_DIR", "")
  if (nzchar(d) && dir.exists(d)) return(normalizePath(d))
  for (cand in c("../../../shared/fixtures", "../../../../shared/fixtures")) {
    if (dir.exists(cand)) return(normalizePath(cand))
  }
  ""
}

# Under CI, resources that CI has must be there: fail instead of skipping.
require_or_skip <- function(ok, what) {
  if (ok) return(invisible(TRUE))
  if (identical(Sys.getenv("ZARR_REQUIRE_INTEROP"), "true"))
    testthat::fail(sprintf("%s is required under CI but is not available", what))
  testthat::skip(sprintf("%s is not available", what))
}

skip_without_fixtures <- function() {
  require_or_skip(nzchar(fixtures_dir()), "../shared/fixtures")
}

interop_dir <- function() {
  d <- Sys.getenv("ZARR_INTEROP_DIR", "")
  if (nzchar(d) && dir.exists(file.path(d, "node_modules", "zarrita"))) return(normalizePath(d))
  ""
}

skip_without_zarrita <- function() {
  ok <- nzchar(Sys.which("node")) && nzchar(interop_dir())
  require_or_skip(ok, "node with zarrita (tools/interop)")
}

# Run one of the tools/interop scripts; returns the parsed JSON output.
run_node <- function(script, args) {
  out <- suppressWarnings(system2("node", c(shQuote(file.path(interop_dir(), script)), shQuote(args)),
                                  stdout = TRUE, stderr = TRUE))
  status <- attr(out, "status") %||% 0L
  txt <- paste(out, collapse = "\n")
  res <- tryCatch(jsonlite::parse_json(txt, simplifyVector = FALSE), error = function(e) NULL)
  if (status != 0L || is.null(res) || !is.null(res$error))
    stop(sprintf("node %s failed (status %s): %s", script, status, substr(txt, 1, 2000)))
  res
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# zarrita's C-order flat data -> the R array with dim == shape
c_order_array <- function(data, shape) {
  if (length(shape) <= 1L) return(data)
  aperm(array(data, rev(shape)), rev(seq_along(shape)))
}

# Expected values in fixtures and zarrita output: numbers, "NaN", ... -> double
json_numbers <- function(x) {
  vapply(x, function(v) {
    if (is.null(v)) return(NA_real_)
    if (is.character(v)) return(switch(v, `NaN` = NaN, Infinity = Inf, `-Infinity` = -Inf, as.numeric(v)))
    as.numeric(v)
  }, 0)
}

local_store_path <- function(env = parent.frame()) {
  p <- tempfile(fileext = ".zarr")
  withr::defer(unlink(p, recursive = TRUE), envir = env)
  p
}

# ---- helpers for the round-trip / selection / error / store / codec / metadata tests

# A new Zarr object in memory ("memory") or in a temporary directory ("local").
new_test_zarr <- function(kind = c("memory", "local"), env = parent.frame()) {
  kind <- match.arg(kind)
  if (kind == "memory") create_zarr() else create_zarr(local_store_path(env))
}

# The R storage the package returns for each Zarr data type.
zarr_rtype <- c(bool = "logical", int8 = "integer", int16 = "integer", int32 = "integer",
                int64 = "integer64", uint8 = "integer", uint16 = "integer", uint32 = "double",
                uint64 = "integer64", float16 = "double", float32 = "double", float64 = "double",
                complex64 = "complex", complex128 = "complex")

# n test values of a data type, in the R type the package reads it back as,
# all exactly representable in that type and none equal to its default fill.
dtype_values <- function(dtype, n) {
  v <- switch(dtype,
    bool = rep_len(c(TRUE, FALSE, FALSE, TRUE, TRUE), n),
    int8 = rep_len(c(-127L, 127L, 0L, -1L, 1L, 42L), n),
    int16 = rep_len(c(-32767L, 32767L, 0L, -1L, 300L, 12345L), n),
    int32 = rep_len(c(-2147483647L, 2147483647L, 0L, -1L, 70000L, 1L), n),
    int64 = bit64::as.integer64(rep_len(c("-9223372036854775807", "9223372036854775807", "0",
                                          "-1", "4294967296", "123456789012"), n)),
    uint8 = rep_len(c(0L, 254L, 1L, 128L, 77L), n),
    uint16 = rep_len(c(0L, 65534L, 1L, 32768L, 4321L), n),
    uint32 = rep_len(c(0, 4294967294, 1, 2147483648, 65536), n),
    uint64 = bit64::as.integer64(rep_len(c("0", "9223372036854775807", "1", "4294967296",
                                           "18014398509481984"), n)),
    float16 = rep_len(c(0, 1.5, -2.25, 65504, 2^-14, 2^-24, -1024, 1638 / 16384), n),
    float32 = rep_len(c(0, 1.5, -3.25, 2^-126, 3.4028234663852886e38, -16777216, 13421773 * 2^-27), n),
    float64 = rep_len(c(0, pi, -1e300, .Machine$double.xmin, .Machine$double.eps, -exp(1)), n),
    complex64 = rep_len(complex(real = c(1.5, -2, 0, 1e6), imaginary = c(0.25, 3, -7.5, -1)), n),
    complex128 = rep_len(complex(real = c(pi, -1e300, 0), imaginary = c(-exp(1), 2, 1e-300)), n),
    stop("unknown dtype ", dtype)
  )
  v
}

# dtype_values() shaped like an array of `shape` (a plain vector for 0-d and 1-d).
dtype_array <- function(dtype, shape) {
  v <- dtype_values(dtype, max(1, prod(shape)))
  if (prod(shape) == 0) v <- v[0]
  if (length(shape) > 1L) dim(v) <- shape
  v
}

# Files a local store left behind from interrupted atomic writes.
partial_files <- function(path) {
  list.files(path, pattern = "\\.partial$", recursive = TRUE, all.files = TRUE)
}

# Compare values read from an array with what was written; integer64 values
# are compared through their decimal representation.
expect_same_values <- function(object, expected) {
  if (inherits(expected, "integer64")) {
    testthat::expect_s3_class(object, "integer64")
    testthat::expect_identical(dim(object), dim(expected))
    testthat::expect_identical(as.character(object), as.character(expected))
  } else {
    testthat::expect_identical(object, expected)
  }
}

# $read() and $write() take each selection element as a range (c(5, 1) is
# 1..5); tests that pick scattered indices pass them through this to mean
# exactly those indices, as `[` does.
exact_sel <- function(arr, sel) if (is.null(sel)) NULL else zarr:::resolved_selection(sel, arr$shape, arr$path)

# A 40 x 40 float64 array "/s" in shards of 20 x 20 holding 5 x 5 chunks,
# written with `x`.
sharded_fixture <- function(z, x) {
  d <- define_array("float64", c(40, 40))
  d$chunk_shape <- c(20, 20)
  d$add_codec("sharding_indexed", list(chunk_shape = c(5, 5)))
  a <- z$add_array("/", "s", d)
  a$write(x)
  a
}
