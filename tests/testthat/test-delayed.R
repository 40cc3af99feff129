# The DelayedArray backend (R/delayed.R): ZarrRArraySeed, ZarrRArray,
# write_zarr_delayed() and as_zarr() of a DelayedArray.

skip_if_not_installed("DelayedArray")
suppressPackageStartupMessages(library(DelayedArray))
# the tests run in zarr's namespace, where base's colSums() and cbind() come
# before the S4 generics that DelayedArray's methods belong to
da <- function(f) get(f, envir = asNamespace("DelayedArray"))

# A local store at `fn` with the array "/a" holding `x`, written through `def`.
delayed_fixture <- function(x, def = NULL, fn = withr::local_tempfile(fileext = ".zarr", .local_envir = parent.frame())) {
  if (is.null(def)) def <- define_array(zarr:::r_data_type(x), dim(x))
  v2 <- identical(as.integer(def$format), 2L)
  z <- withr::with_options(list(zarr.format = if (v2) 2L else 3L), create_zarr(fn))
  a <- z$add_array("/", "a", def)
  a$write(x)
  list(fn = fn, z = z, a = a)
}

# Rscript in a new process (the installed package, as R_LIBS says); its output.
run_fresh_r <- function(code) {
  skip_if_not_installed("processx")
  out <- processx::run(file.path(R.home("bin"), "Rscript"), c("-e", code), error_on_status = FALSE)
  if (out$status != 0L) stop("the child R process failed: ", out$stderr, out$stdout)
  out$stdout
}

test_that("a ZarrRArray reads the values of the array: v3, v2 in C and F order, sharded, 3-d", {
  set.seed(1)
  m <- matrix(rnorm(60 * 45), 60)
  cases <- list(
    v3 = function() { d <- define_array("float64", dim(m)); d$chunk_shape <- c(16, 10); d },
    v3_c = function() { d <- define_array("float64", dim(m)); d$chunk_shape <- c(16, 10); d$portable <- TRUE; d },
    v2_f = function() { d <- define_array("float64", dim(m)); d$chunk_shape <- c(16, 10); d$format <- 2L; d },
    v2_c = function() { d <- define_array("float64", dim(m)); d$chunk_shape <- c(16, 10); d$format <- 2L; d$portable <- TRUE; d },
    sharded = function() {
      d <- define_array("float64", dim(m)); d$chunk_shape <- c(20, 15)
      d$add_codec("sharding_indexed", list(chunk_shape = c(5, 5))); d
    })
  for (nm in names(cases)) {
    f <- delayed_fixture(m, cases[[nm]]())
    D <- zarr_delayed(f$a)
    expect_s4_class(D, "ZarrRMatrix")
    expect_identical(dim(D), dim(m), info = nm)
    expect_identical(type(D), "double")
    expect_identical(as.matrix(D), m, info = nm)
    # scattered, repeated and reversed indices, and a pair that is not a range
    expect_identical(as.matrix(D[c(3, 9), c(40, 2, 2, 7)]), m[c(3, 9), c(40, 2, 2, 7)], info = nm)
    expect_identical(as.matrix(D[60:1, 45]), as.matrix(m[60:1, 45]), info = nm)
    expect_identical(extract_array(seed(D), list(c(2L, 5L), integer())), m[c(2, 5), integer(0)])
    expect_identical(path(D), normalizePath(f$fn), info = nm)
    expect_false(is_sparse(D))
    expect_identical(chunkdim(D), if (nm == "sharded") c(5L, 5L) else c(16L, 10L), info = nm)
    # the same through a path and the array's path in the store
    expect_identical(as.matrix(zarr_delayed(f$fn, "/a")), m, info = nm)
  }
  a3 <- array(1:(7 * 8 * 9), c(7, 8, 9))
  f <- delayed_fixture(a3)
  D <- zarr_delayed(f$fn, "a")
  expect_s4_class(D, "ZarrRArray")
  expect_identical(type(D), "integer")
  expect_identical(as.array(D), a3)
  expect_identical(as.array(D[2:3, c(8, 1), 5]), a3[2:3, c(8, 1), 5])
})

test_that("DelayedArray() and as() take a zarr_array; types; dimension names become dimnames", {
  lg <- matrix(c(TRUE, FALSE, FALSE, TRUE), 2)
  f <- delayed_fixture(lg)
  expect_identical(type(DelayedArray(f$a)), "logical")
  expect_identical(as.matrix(as(f$a, "DelayedArray")), lg)
  expect_s4_class(as(f$a, "ZarrRArray"), "ZarrRMatrix")
  ch <- matrix(c("a", "bb", "", "dddd"), 2)
  f <- delayed_fixture(ch)
  expect_identical(as.matrix(DelayedArray(f$a)), ch)
  i64 <- define_array("int64", c(3, 2))
  f <- delayed_fixture(matrix(c(1, 2, -3, 4, 5, 2^40), 3), i64)
  D <- zarr_delayed(f$a)
  expect_identical(type(D), "double")
  expect_identical(as.matrix(D), matrix(c(1, 2, -3, 4, 5, 2^40), 3))

  # v3 dimension_names and v2 _ARRAY_DIMENSIONS
  x <- array(1:24, c(2, 3, 4), dimnames = list(y = NULL, x = NULL, time = NULL))
  z <- as_zarr(x)
  D <- DelayedArray(z[["/"]])
  expect_identical(dimnames(D), list(y = NULL, x = NULL, time = NULL))
  expect_identical(unname(as.array(D)), unname(x))
  d <- define_array("int32", c(2, 3)); d$format <- 2L; d$dimension_names <- c("lat", "lon")
  f2 <- delayed_fixture(matrix(1:6, 2), d)
  expect_match(paste(readLines(file.path(f2$fn, "a", ".zattrs")), collapse = ""), "_ARRAY_DIMENSIONS")
  fn <- f2$fn
  expect_identical(dimnames(zarr_delayed(fn, "a")), list(lat = NULL, lon = NULL))
  expect_error(zarr_delayed(fn, "nothing"), class = "zarr_error_not_found")
})

test_that("block processing decodes each chunk once", {
  set.seed(2)
  m <- matrix(sample.int(1000L, 400 * 300, TRUE), 400)
  d <- define_array("int32", dim(m))
  d$chunk_shape <- c(50, 60)
  f <- delayed_fixture(m, d)
  a <- open_zarr(f$fn, read_only = TRUE)[["/a"]]
  D <- zarr_delayed(a)
  n_chunks <- (400 / 50) * (300 / 60)
  old <- getAutoBlockSize()
  withr::defer(suppressMessages(setAutoBlockSize(old)))
  # blocks of a few chunks each, never cutting one
  suppressMessages(setAutoBlockSize(4 * 50 * 60 * 4))
  expect_gt(length(defaultAutoGrid(D)), 4L)
  st <- a$store
  base <- st$io_stats()[["requests"]]
  expect_identical(da("colSums")(D), colSums(m))
  expect_identical(st$io_stats()[["requests"]] - base, n_chunks)
  expect_identical(da("rowSums")(D), rowSums(m))
  expect_identical(st$io_stats()[["requests"]] - base, 2 * n_chunks)
  sums <- blockApply(D, sum)
  expect_identical(sum(unlist(sums)), sum(m))
  expect_identical(st$io_stats()[["requests"]] - base, 3 * n_chunks)
  # blocks of a whole shard read each inner chunk once: no more bytes than a full read
  s <- define_array("int32", dim(m)); s$chunk_shape <- c(100, 100)
  s$add_codec("sharding_indexed", list(chunk_shape = c(50, 50)))
  f2 <- delayed_fixture(m, s)
  a2 <- open_zarr(f2$fn, read_only = TRUE)[["/a"]]
  b0 <- a2$store$io_stats()[["bytes"]]
  a2$read()
  full <- a2$store$io_stats()[["bytes"]] - b0
  D2 <- zarr_delayed(a2)
  expect_identical(chunkdim(D2), c(50L, 50L))
  b1 <- a2$store$io_stats()[["bytes"]]
  expect_identical(da("colSums")(D2), colSums(m))
  expect_lte(a2$store$io_stats()[["bytes"]] - b1, full)
})

test_that("one open array per array in the session; a changed shape is an error", {
  handles <- zarr:::delayed_state$handles
  m <- matrix(as.numeric(1:200), 20)
  f <- delayed_fixture(m)
  n0 <- length(ls(handles))
  D1 <- zarr_delayed(f$fn, "/a")
  D2 <- zarr_delayed(f$fn, "a")
  expect_identical(length(ls(handles)), n0 + 1L)
  mem <- as_zarr(m)[["/"]]
  D3 <- zarr_delayed(mem)
  D4 <- DelayedArray(mem)
  expect_identical(length(ls(handles)), n0 + 2L)
  # as_zarr() of a DelayedArray keeps no open array
  z <- as_zarr(D3 + 1)
  expect_identical(length(ls(handles)), n0 + 2L)
  expect_identical(z[["/"]]$read(), m + 1)
  # wrapping the writable array makes it the open one of that array
  D5 <- zarr_delayed(f$a)
  expect_identical(length(ls(handles)), n0 + 2L)
  f$a$resize(c(30, 10))
  expect_error(as.matrix(D1), "changed shape", class = "zarr_error_value")
})

test_that("chunks of several sizes (rectilinear grid) give the blocks' edges", {
  m <- matrix(as.numeric(1:(30 * 12)), 30)
  d <- define_array("float64", dim(m))
  d$chunk_shape <- list(c(10, 5, 15), c(4, 8))
  f <- delayed_fixture(m, d)
  a <- open_zarr(f$fn, read_only = TRUE)[["/a"]]
  D <- zarr_delayed(a)
  expect_null(chunkdim(D))
  g <- chunkGrid(seed(D))
  expect_s4_class(g, "ArbitraryArrayGrid")
  expect_identical(dims(g), matrix(c(10L, 5L, 15L, 10L, 5L, 15L, 4L, 4L, 4L, 8L, 8L, 8L), 6))
  expect_identical(as.matrix(D), m)
  r0 <- a$store$io_stats()[["requests"]]
  expect_identical(da("colSums")(D), colSums(m))
  expect_lte(a$store$io_stats()[["requests"]] - r0, 6)
})

test_that("a seed holds a location, not a handle: saveRDS() then readRDS() in a new R process", {
  m <- matrix(as.numeric(1:5000), 50)
  f <- delayed_fixture(m)
  D <- zarr_delayed(f$fn, "/a") * 2 + 1
  rds <- withr::local_tempfile(fileext = ".rds")
  saveRDS(D, rds)
  expect_lt(file.size(rds), 2000)
  # DelayedArray first: the seed's class loads zarr
  out <- run_fresh_r(sprintf(
    'suppressPackageStartupMessages(library(DelayedArray)); D <- readRDS("%s"); cat(sum(D), colSums(D)[1:2], chunkdim(seed(D)), isNamespaceLoaded("zarr"))',
    rds))
  expect_identical(out, paste(sum(m * 2 + 1), sum(m[, 1] * 2 + 1), sum(m[, 2] * 2 + 1), "50 100 TRUE"))
  # zarr first, DelayedArray loaded afterwards
  out <- run_fresh_r(sprintf(
    'library(zarr); D <- readRDS("%s"); suppressPackageStartupMessages(library(DelayedArray)); cat(sum(D))', rds))
  expect_identical(out, as.character(sum(m * 2 + 1)))
  # an array in a memory store lives in its session only
  Dm <- zarr_delayed(as_zarr(m)[["/"]])
  expect_identical(sum(Dm), sum(m))
  saveRDS(Dm, rds)
  out <- run_fresh_r(sprintf(
    'suppressPackageStartupMessages(library(DelayedArray)); D <- readRDS("%s"); cat(class(tryCatch(sum(D), error = identity))[1:2])', rds))
  expect_identical(out, "zarr_error_not_found zarr_error")
})

test_that("a seed of an array on a web server opens it again over HTTP in a new process", {
  skip_if_not_installed("processx")
  m <- matrix(1:600, 20)
  f <- delayed_fixture(m)
  srv <- http_server(f$fn)
  D <- zarr_delayed(srv$url_of(), "/a")
  expect_identical(path(D), srv$url_of())
  expect_identical(as.matrix(D), m)
  rds <- withr::local_tempfile(fileext = ".rds")
  saveRDS(D, rds)
  out <- run_fresh_r(sprintf(
    'Sys.setenv(no_proxy = "127.0.0.1"); suppressPackageStartupMessages(library(DelayedArray)); D <- readRDS("%s"); cat(sum(D))', rds))
  expect_identical(out, as.character(sum(m)))
})

test_that("an S3 seed keeps the store options but no keys; the keys come from the environment", {
  s3 <- s3_server()
  local_s3_fast()
  m <- matrix(as.numeric(1:400), 20)
  st <- s3$store("private", "delayed")
  st$create_group("/", "")
  z <- zarr$new(st)
  z[["/"]]$add_array("m", define_array("float64", dim(m)))$write(m)
  D <- zarr_delayed(z[["/m"]])
  expect_identical(as.matrix(D), m)
  s <- seed(D)
  expect_identical(s@location, "s3://private/delayed")
  expect_identical(s@store_options$endpoint, s3$endpoint)
  rds <- withr::local_tempfile(fileext = ".rds")
  saveRDS(D, rds, compress = FALSE)
  bytes <- readBin(rds, "raw", file.size(rds))
  expect_length(grepRaw(s3$secret, bytes, fixed = TRUE), 0L)
  expect_length(grepRaw(s3$key, bytes, fixed = TRUE), 0L)
  code <- sprintf('suppressPackageStartupMessages(library(DelayedArray)); D <- readRDS("%s"); cat(sum(D))', rds)
  withr::with_envvar(c(AWS_ACCESS_KEY_ID = s3$key, AWS_SECRET_ACCESS_KEY = s3$secret),
                     expect_identical(run_fresh_r(code), as.character(sum(m))))
  # without keys the private bucket refuses
  out <- run_fresh_r(sub("cat\\(sum\\(D\\)\\)", "cat(class(tryCatch(sum(D), error = identity))[1])", code))
  expect_identical(out, "zarr_error_s3")
})

test_that("BiocParallel SnowParam workers read a Zarr-backed DelayedArray", {
  skip_if_not_installed("BiocParallel")
  skip_on_cran()
  m <- matrix(as.numeric(1:20000), 200)
  d <- define_array("float64", dim(m)); d$chunk_shape <- c(50, 100)
  f <- delayed_fixture(m, d)
  D <- zarr_delayed(f$fn, "/a")
  old <- getAutoBlockSize()
  withr::defer(suppressMessages(setAutoBlockSize(old)))
  suppressMessages(setAutoBlockSize(50 * 100 * 8))
  # (snow itself matches arguments partially)
  withr::local_options(warnPartialMatchArgs = FALSE, warnPartialMatchDollar = FALSE, warnPartialMatchAttr = FALSE)
  bp <- BiocParallel::SnowParam(2)
  sums <- blockApply(D, sum, BPPARAM = bp)
  expect_length(sums, 4L)
  expect_identical(sum(unlist(sums)), sum(m))
  # forked workers open the store again (their own process id) ...
  skip_on_os("windows")
  sums <- blockApply(D, sum, BPPARAM = BiocParallel::MulticoreParam(2))
  expect_identical(sum(unlist(sums)), sum(m))
  # ... and use the arrays of a memory store they inherit
  Dm <- zarr_delayed(as_zarr(m)[["/"]])
  sums <- blockApply(Dm, sum, BPPARAM = BiocParallel::MulticoreParam(2))
  expect_identical(sum(unlist(sums)), sum(m))
})

test_that("write_zarr_delayed() realises a DelayedArray block by block into a new Zarr array", {
  set.seed(3)
  m <- matrix(rnorm(120 * 80), 120)
  f <- delayed_fixture(m)
  D <- zarr_delayed(f$fn, "/a")
  out <- withr::local_tempfile(fileext = ".zarr")
  old <- getAutoBlockSize()
  withr::defer(suppressMessages(setAutoBlockSize(old)))
  suppressMessages(setAutoBlockSize(40 * 80 * 8))
  msgs <- testthat::capture_messages(W <- write_zarr_delayed(D * 2 + 1, out, "w", chunk_shape = c(40, 20), verbose = TRUE))
  # one block at a time, of whole chunks: never the whole array
  expect_gte(sum(grepl("Writing it", msgs)), 3L)
  expect_s4_class(W, "ZarrRMatrix")
  expect_identical(chunkdim(W), c(40L, 20L))
  expect_identical(as.matrix(W), m * 2 + 1)
  back <- open_zarr(out, read_only = TRUE)[["/w"]]
  expect_identical(back$read(), m * 2 + 1)
  expect_identical(back$chunking$chunk_shape, c(40, 20))
  # an ordinary matrix, an integer array with dimension names, into memory
  x <- array(1:60, c(3, 4, 5), dimnames = list(a = NULL, b = NULL, c = NULL))
  W2 <- write_zarr_delayed(x)
  expect_identical(type(W2), "integer")
  expect_identical(dimnames(W2), dimnames(x))
  expect_identical(as.array(W2), x)
  # the coercion DelayedArray users know
  W3 <- as(DelayedArray(m) + 1, "ZarrRArray")
  expect_identical(as.matrix(W3), m + 1)
})

test_that("as_zarr() takes a DelayedArray and writes it block by block", {
  m <- matrix(1:3000, 60, dimnames = list(cell = NULL, gene = NULL))
  D <- DelayedArray(m) * 2L
  z <- as_zarr(D)
  expect_s3_class(z, "zarr")
  expect_identical(z[["/"]]$read(), unname(m) * 2L)
  expect_identical(z[["/"]]$dimension_names, c("cell", "gene"))
  g <- create_zarr()
  a <- as_zarr(D, "d", location = g[["/"]])
  expect_s3_class(a, "zarr_array")
  expect_identical(a$read(), unname(m) * 2L)
  fn <- withr::local_tempfile(fileext = ".zarr")
  as_zarr(zarr_delayed(a)[1:10, ], location = fn)
  expect_identical(open_zarr(fn)[["/"]]$read(), unname(m[1:10, ]) * 2L)
})

test_that("ZarrRArray and HDF5Array objects are used together", {
  skip_if_not_installed("HDF5Array")
  suppressPackageStartupMessages(library(HDF5Array))
  m <- matrix(as.numeric(1:600), 30)
  f <- delayed_fixture(m)
  h5 <- withr::local_tempfile(fileext = ".h5")
  H <- writeHDF5Array(m, h5, "m")
  Z <- zarr_delayed(f$fn, "/a")
  both <- da("cbind")(Z, H)
  expect_identical(dim(both), c(30L, 40L))
  expect_identical(da("colSums")(both), c(colSums(m), colSums(m)))
  # HDF5 to Zarr and back, block by block
  W <- write_zarr_delayed(H + 1)
  expect_identical(as.matrix(writeHDF5Array(W)), m + 1)
  expect_false(any(c("ZarrArray", "ZarrArraySeed", "writeZarrArray") %in% getNamespaceExports("zarr")))
})

test_that("write_zarr_delayed() and as_zarr() keep dimnames: names as dimension names, labels as coordinate arrays", {
  m <- matrix(1:12, 3, dimnames = list(cell = c("c1", "c2", "c3"), gene = c("g1", "g2", "g3", "g4")))
  fn <- withr::local_tempfile(fileext = ".zarr")
  W <- write_zarr_delayed(DelayedArray(m) * 2L, location = fn, name = "X")
  expect_identical(dimnames(W), dimnames(m))
  z <- open_zarr(fn, read_only = TRUE)
  expect_setequal(z$arrays, c("/X", "/cell", "/gene"))
  expect_identical(z[["/X"]]$dimension_names, c("cell", "gene"))
  expect_identical(z[["/gene"]]$read(), c("g1", "g2", "g3", "g4"))
  expect_identical(z[["/gene"]]$dimension_names, "gene")
  # read back in a new seed (and so in another session) with the labels
  R <- zarr_delayed(fn, "X")
  expect_identical(dimnames(R), dimnames(m))
  expect_identical(as.matrix(R), m * 2L)
  expect_identical(dimnames(R[2:3, "g4", drop = FALSE]), list(cell = c("c2", "c3"), gene = "g4"))
  # as_zarr() of a matrix writes the same
  z2 <- as_zarr(m, name = "X")
  expect_identical(z2[["/cell"]]$read(), c("c1", "c2", "c3"))
  expect_identical(dimnames(zarr_delayed(z2, "X")), dimnames(m))
  # a root array has no group for the labels: the dimension names only
  expect_identical(dimnames(write_zarr_delayed(DelayedArray(m))), list(cell = NULL, gene = NULL))
  # a name already taken in the group is left as it is
  g <- create_zarr()
  g$add_array("/", "gene", define_array("int32", 2))$write(7:8)
  as_zarr(DelayedArray(m), "X", location = g$root)
  expect_identical(g[["/gene"]]$read(), 7:8)
  expect_identical(dimnames(zarr_delayed(g, "X")), list(cell = c("c1", "c2", "c3"), gene = NULL))
})

test_that("dimnames written as Zarr v2 coordinates are what xarray reads", {
  m <- matrix(as.numeric(1:6), 2, dimnames = list(cell = c("a", "b"), gene = c("x1", "x2", "x3")))
  fn <- withr::local_tempfile(fileext = ".zarr")
  withr::with_options(list(zarr.format = 2), write_zarr_delayed(DelayedArray(m), location = fn, name = "X"))
  expect_true(file.exists(file.path(fn, "X", ".zarray")))
  expect_identical(dimnames(zarr_delayed(fn, "X")), dimnames(m))
  skip_on_cran()
  skip_without_xarray()
  got <- run_python('
import xarray as xr
ds = xr.open_zarr(sys.argv[1], consolidated=False)
emit({"dims": list(ds["X"].dims), "cell": [str(v) for v in ds["cell"].values],
      "gene": [str(v) for v in ds["gene"].values], "x": ds["X"].sel(cell="b", gene="x3").item()})
', fn)
  expect_identical(unlist(got$dims), c("cell", "gene"))
  expect_identical(unlist(got$cell), c("a", "b"))
  expect_identical(unlist(got$gene), c("x1", "x2", "x3"))
  expect_identical(got$x, 6)
})
