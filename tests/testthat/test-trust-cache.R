# The decoded-chunk cache is keyed by what a chunk is (issue 26): the file
# itself for local stores (whatever root and key spell it), checked against
# the file's size and times before use; the URL with its query and the
# credentials for remote stores; each memory store its own. Every mutation
# drops what it changes, clear() included.

trust_array <- function(z, path, name, x, chunk) {
  d <- define_array("float64", dim(x))
  d$chunk_shape <- chunk
  a <- z$add_array(path, name, d)
  a$write(x)
  a
}

test_that("store$clear() drops the cached chunks (local and memory stores)", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  for (kind in c("local", "memory")) {
    zarr_clear_cache()
    z <- new_test_zarr(kind)
    x <- matrix(as.numeric(1:64), 8, 8)
    d <- define_array("float64", dim(x))
    d$chunk_shape <- c(4, 4)
    d$fill_value <- 0
    a <- z$add_array("/", "a", d)
    a$write(x)
    expect_identical(a[1:2, 1:2], x[1:2, 1:2]) # kept in the cache
    z$store$clear()
    if (kind == "memory") z$store$create_group("/", "")
    z2 <- zarr$new(z$store) # a fresh view of the cleared store
    b <- z2$add_array("/", "a", d) # the same array, no chunk written yet
    expect_identical(b[1:2, 1:2], matrix(0, 2, 2), info = kind)
    b[5:6, 5:6] <- 1
    expect_identical(zarr$new(z$store)[["/a"]][1:3, 2], c(0, 0, 0), info = kind)
  }
})

test_that("a store opened at a group and one opened at the root share the files' chunks", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  p <- local_store_path()
  z <- create_zarr(p)
  z$add_group("/", "grp")
  x <- matrix(as.numeric(1:100), 10, 10)
  trust_array(z, "/grp", "a", x, c(5, 5))
  root <- open_zarr(p)
  grp <- open_zarr(file.path(p, "grp"))
  expect_identical(root[["/grp/a"]][1:2, 1:2], x[1:2, 1:2]) # cached through each
  expect_identical(grp[["/a"]][1:2, 1:2], x[1:2, 1:2])
  # written through the group: the root sees it, and so do fresh opens
  grp[["/a"]][1:3, 1:3] <- -1
  y <- x
  y[1:3, 1:3] <- -1
  expect_identical(root[["/grp/a"]][1:2, 1:2], y[1:2, 1:2])
  expect_identical(open_zarr(p)[["/grp/a"]][2:4, 1:2], y[2:4, 1:2])
  expect_identical(open_zarr(file.path(p, "grp"))[["/a"]][2:4, 1:2], y[2:4, 1:2])
  # written through the root: the group sees it
  root[["/grp/a"]][1, 1] <- 99
  y[1, 1] <- 99
  expect_identical(grp[["/a"]][1:2, 1:2], y[1:2, 1:2])
  expect_identical(open_zarr(file.path(p, "grp"))[["/a"]][1:2, 1:2], y[1:2, 1:2])
  expect_identical(open_zarr(p)[["/grp/a"]][1:2, 1:2], y[1:2, 1:2])
})

test_that("relative, './'-spelled and symlinked roots of one folder share the files' chunks", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  top <- withr::local_tempdir()
  p <- file.path(top, "s.zarr")
  z <- create_zarr(p)
  x <- matrix(as.numeric(1:100), 10, 10)
  trust_array(z, "/", "a", x, c(5, 5))
  expect_identical(z[["/a"]][1:2, 1:2], x[1:2, 1:2])
  withr::local_dir(top)
  rel <- open_zarr("s.zarr")
  dot <- open_zarr("./s.zarr/")
  expect_identical(rel[["/a"]][1:2, 1:2], x[1:2, 1:2])
  expect_identical(dot[["/a"]][1:2, 1:2], x[1:2, 1:2])
  linked <- NULL
  if (file.symlink(p, file.path(top, "link.zarr"))) {
    linked <- open_zarr(file.path(top, "link.zarr"))
    expect_identical(linked[["/a"]][1:2, 1:2], x[1:2, 1:2])
  }
  rel[["/a"]][1:2, 1:2] <- 0
  y <- x
  y[1:2, 1:2] <- 0
  expect_identical(z[["/a"]][1:2, 1:2], y[1:2, 1:2])
  expect_identical(dot[["/a"]][1:3, 1:2], y[1:3, 1:2])
  if (!is.null(linked)) {
    expect_identical(linked[["/a"]][1:3, 1:2], y[1:3, 1:2])
    linked[["/a"]][3, 3] <- 7
    y[3, 3] <- 7
    expect_identical(rel[["/a"]][3:4, 3:4], y[3:4, 3:4])
    expect_identical(z[["/a"]][3:4, 3:4], y[3:4, 3:4])
  }
})

# a 1-d float64 array of one uncompressed chunk (its file: 8 bytes a value)
plain_array <- function(p, x) {
  z <- create_zarr(p)
  d <- define_array("float64", length(x))
  d$chunk_shape <- length(x)
  d$fill_value <- 0
  d$remove_codec("zstd")
  a <- z$add_array("/", "a", d)
  if (any(x != 0)) a$write(x)
  a
}

test_that("a chunk file changed by other software (same size) is seen on the next partial read", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  p <- local_store_path()
  a <- plain_array(p, as.numeric(1:16))
  expect_identical(a[1:2], c(1, 2))
  s0 <- a$store$io_stats()
  expect_identical(a[1:2], c(1, 2)) # a hit
  expect_identical(a$store$io_stats()[["cache_hits"]] - s0[["cache_hits"]], 1)
  f <- file.path(p, "a", "c.0")
  expect_true(file.exists(f))
  old <- file.mtime(f)
  con <- file(f, "r+b") # in place: the same file, the same size
  writeBin(as.numeric(101:116), con, endian = "little")
  close(con)
  Sys.setFileTime(f, old + 5) # a different time, whatever the clock's resolution
  expect_identical(file.size(f), 128)
  expect_identical(a[1:2], c(101, 102))
  expect_identical(open_zarr(p)[["/a"]][15], 115)
  # another process writes the chunk (through the package)
  skip_if(!nzchar(Sys.which("Rscript")), "Rscript")
  lib <- dirname(find.package("zarr"))
  code <- sprintf("library(zarr, lib.loc = %s); z <- open_zarr(%s); z[['/a']][1:2] <- -5",
                  deparse(lib), deparse(normalizePath(p)))
  out <- system2(file.path(R.home("bin"), "Rscript"), c("-e", shQuote(code)), stdout = TRUE, stderr = TRUE)
  expect_null(attr(out, "status"))
  expect_identical(a[1:3], c(-5, -5, 103))
})

test_that("a missing chunk written by other software is seen on the next partial read", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  p <- local_store_path()
  a <- plain_array(p, numeric(16))
  expect_identical(a[1:2], c(0, 0)) # missing: the fill value, kept
  f <- file.path(p, "a", "c.0")
  writeBin(as.numeric(1:16), f, endian = "little")
  expect_identical(a[1:2], c(1, 2))
  unlink(f)
  expect_identical(a[1:2], c(0, 0))
})

test_that("sharded arrays: a shard changed by other software is seen (index and inner chunks)", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  sharded <- function(p, x) {
    d <- define_array("float64", dim(x))
    d$chunk_shape <- c(16, 16)
    d$add_codec("sharding_indexed", list(chunk_shape = c(4, 4)))
    a <- create_zarr(p)$add_array("/", "a", d)
    a$write(x)
    a
  }
  x <- matrix(as.numeric(1:256), 16, 16)
  p <- local_store_path()
  a <- sharded(p, x)
  expect_identical(a[1:2, 1:2], x[1:2, 1:2])
  expect_identical(a[1:2, 1:2], x[1:2, 1:2])
  # the shard file overwritten in place by a copy of another store's
  q <- local_store_path()
  sharded(q, -x)
  f <- file.path(p, "a", "c.0.0")
  expect_true(file.copy(file.path(q, "a", "c.0.0"), f, overwrite = TRUE))
  Sys.setFileTime(f, Sys.time() + 10)
  expect_identical(a[1:2, 1:2], -x[1:2, 1:2])
  expect_identical(a[5:6, 5:7], -x[5:6, 5:7])
  expect_identical(a[1:2, 1:2], -x[1:2, 1:2])
})

test_that("HTTP stores with different query strings do not share cached chunks", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  dir <- withr::local_tempdir()
  z <- create_zarr(file.path(dir, "d.zarr"))
  x <- matrix(as.numeric(1:100), 10, 10)
  trust_array(z, "/", "a", x, c(5, 5))
  srv <- http_server(dir)
  chunk_gets <- function(q) {
    log <- http_stats(srv$url)$log
    sum(grepl("/a/c[.]0[.]0$", log$path) & log$query %in% q)
  }
  base <- paste0(srv$url, "/d.zarr")
  s1 <- open_zarr(paste0(base, "?sig=one"))
  expect_identical(s1[["/a"]][1:2, 1:2], x[1:2, 1:2])
  expect_identical(s1[["/a"]][1:2, 1:2], x[1:2, 1:2])
  expect_identical(chunk_gets("sig=one"), 1L)
  # the same URL and query: shared
  expect_identical(open_zarr(paste0(base, "?sig=one"))[["/a"]][1:3, 1:2], x[1:3, 1:2])
  expect_identical(chunk_gets("sig=one"), 1L)
  # another query (another signature): its own requests
  s2 <- open_zarr(paste0(base, "?sig=two"))
  expect_identical(s2[["/a"]][1:2, 1:2], x[1:2, 1:2])
  expect_identical(chunk_gets("sig=two"), 1L)
  s3 <- open_zarr(base)
  expect_identical(s3[["/a"]][1:2, 1:2], x[1:2, 1:2])
  expect_identical(chunk_gets(c("", NA)), 1L)
  # user-info in the URL is a credential too
  s4 <- open_zarr(sub("://", "://someone:secret@", base, fixed = TRUE))
  expect_identical(s4[["/a"]][1:2, 1:2], x[1:2, 1:2])
  expect_identical(chunk_gets(c("", NA)), 2L)
  expect_identical(open_zarr(base)[["/a"]][2:3, 1:2], x[2:3, 1:2])
  expect_identical(chunk_gets(c("", NA)), 2L)
})

test_that("a cached partial read with the stat is still much faster than an uncached one", {
  skip_on_cran()
  withr::local_options(zarr.chunk_cache_bytes = 2^26)
  zarr_clear_cache()
  z <- new_test_zarr("local")
  set.seed(1)
  x <- matrix(rnorm(1024 * 1024), 1024, 1024)
  d <- define_array("float64", dim(x))
  d$chunk_shape <- c(1024, 1024)
  a <- z$add_array("/", "a", d)
  a$write(x)
  time_of <- function(n) system.time(for (i in seq_len(n)) a[i, 1:3])[["elapsed"]] / n
  invisible(a[1, 1:3])
  cached <- time_of(100)
  withr::local_options(zarr.chunk_cache_bytes = 0)
  zarr_clear_cache()
  uncached <- time_of(10)
  expect_lt(cached, uncached / 3)
})

test_that("S3 stores with other credentials do not share cached chunks, and a write through either drops them", {
  s3 <- s3_server()
  local_s3_fast()
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  up <- s3$store("public", "trust-cache.zarr")
  up$create_group("/", "")
  d <- define_array("float64", c(6, 5))
  d$chunk_shape <- c(6, 5)
  d$fill_value <- -7
  x <- matrix(as.double(1:30), 6, 5)
  signed <- zarr$new(up)[["/"]]
  signed$add_array("x", d)$write(x)
  anon <- zarr$new(zarr_s3store$new("public", "trust-cache.zarr", endpoint = s3$endpoint, anonymous = TRUE))
  chunk_gets <- function() sum(grepl("trust-cache.zarr/x/c/0/0$", s3$stats()$log$path))
  expect_identical(signed[["x"]][1:2, 1], c(1, 2)) # kept
  s3$reset()
  expect_identical(signed[["x"]][1:2, 2], c(7, 8))
  expect_identical(chunk_gets(), 0L)
  expect_identical(anon[["/x"]][1:2, 1], c(1, 2)) # its own request
  expect_identical(chunk_gets(), 1L)
  expect_identical(anon[["/x"]][1:3, 1], c(1, 2, 3))
  expect_identical(chunk_gets(), 1L)
  # erased through the signed store: the anonymous one reads the fill value
  up$erase("x/c/0/0")
  expect_identical(anon[["/x"]]$read(fill_as_na = FALSE)[1:2, 1], c(-7, -7))
})

test_that("a read-only zip store reads a zip file written again since it was opened anew", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  p <- tempfile(fileext = ".zip")
  withr::defer(unlink(p))
  write_zip <- function(x) {
    st <- zarr_zipstore$new(p, read_only = FALSE)
    if (is.null(st$get_metadata(""))) st$create_group("/", "")
    z <- zarr$new(st)
    if (is.null(z[["/a"]])) {
      d <- define_array("float64", dim(x))
      d$chunk_shape <- c(5, 5)
      z$add_array("/", "a", d)
    }
    z[["/a"]]$write(x)
    st$close()
  }
  x <- matrix(as.numeric(1:100), 10, 10)
  write_zip(x)
  ro <- open_zarr(p)
  expect_identical(ro[["/a"]][1:2, 1:2], x[1:2, 1:2]) # cached
  expect_identical(ro$store$get("a/zarr.json"), open_zarr(p)$store$get("a/zarr.json"))
  write_zip(-x) # the file renamed over: other offsets
  expect_identical(ro[["/a"]][1:2, 1:2], -x[1:2, 1:2])
  expect_identical(ro[["/a"]][6:10, 6:10], -x[6:10, 6:10])
  expect_identical(ro$store$get("a/c/0/0"), open_zarr(p)$store$get("a/c/0/0"))
})

test_that("each memory store is its own: a node deleted and made again through another view reads anew", {
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  zarr_clear_cache()
  d <- define_array("float64", c(8, 8))
  d$chunk_shape <- c(4, 4)
  d$fill_value <- 0
  x <- matrix(as.numeric(1:64), 8, 8)
  z1 <- create_zarr()
  z2 <- create_zarr() # another memory store: the same keys, other values
  z1$add_array("/", "a", d)$write(x)
  z2$add_array("/", "a", d)$write(-x)
  expect_identical(z1[["/a"]][1:2, 1:2], x[1:2, 1:2])
  expect_identical(z2[["/a"]][1:2, 1:2], -x[1:2, 1:2])
  expect_identical(z1[["/a"]][1:2, 2], x[1:2, 2])
  # deleted through one view of z1's store, made again through another
  z1$delete_array("/a")
  z3 <- zarr$new(z1$store)
  z3$add_array("/", "a", d)
  expect_identical(z3[["/a"]][1:2, 1:2], matrix(0, 2, 2))
})
