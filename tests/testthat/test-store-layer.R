# The store layer: what the engine asks of each store, and how sharded reads
# fetch only what a selection needs.

sharded_400 <- function(z, name = "s", index_location = "end") {
  d <- define_array("float64", c(400, 400))
  d$chunk_shape <- c(400, 400)
  d$add_codec("sharding_indexed", list(chunk_shape = c(20, 20), index_location = index_location))
  a <- z$add_array("/", name, d)
  x <- matrix(as.numeric(seq_len(400 * 400)), 400, 400)
  a$write(x)
  list(a = a, x = x)
}

io_delta <- function(store, expr) {
  before <- store$io_stats()
  force(expr)
  store$io_stats() - before
}

test_that("a sharded read from local disk reads the index and the inner chunks it needs", {
  withr::local_options(zarr.chunk_cache_bytes = 0) # requests counted: none served by the cache
  path <- local_store_path()
  z <- create_zarr(path)
  s <- sharded_400(z)
  z2 <- open_zarr(path, read_only = TRUE)
  a <- z2[["/s"]]
  st <- z2$store
  got <- NULL
  d <- io_delta(st, got <- a[1:20, 1:20])
  expect_identical(got, s$x[1:20, 1:20])
  expect_equal(d[["requests"]], 2)           # the index, then the one inner chunk
  expect_lt(d[["bytes"]], 12000)             # 400 x 16 + 4 index bytes, and one chunk
  expect_gt(d[["bytes"]], 400 * 16 + 4)

  # neighbouring inner chunks (C order: along the last dimension) share one request
  d <- io_delta(st, got <- a[1:20, 1:40])
  expect_identical(got, s$x[1:20, 1:40])
  expect_equal(d[["requests"]], 2)
  # ... unless merging is switched off
  withr::local_options(zarr.range_max = 1)
  d <- io_delta(st, got <- a[1:20, 1:40])
  expect_identical(got, s$x[1:20, 1:40])
  expect_equal(d[["requests"]], 3)
  # a gap larger than zarr.range_gap splits a request too
  withr::local_options(zarr.range_max = 2^24, zarr.range_gap = 0)
  d <- io_delta(st, got <- a[1:20, c(1, 41)])
  expect_identical(got, s$x[1:20, c(1, 41)])
  expect_equal(d[["requests"]], 3)
  # the whole array: one index read and merged ranges of at most range_max bytes
  withr::local_options(zarr.range_gap = 2^20, zarr.range_max = 2^24)
  d <- io_delta(st, got <- a[, ])
  expect_identical(got, s$x)
  expect_equal(d[["requests"]], 2)
})

test_that("shard indexes at the start, missing inner chunks and missing shards read right", {
  for (kind in c("memory", "local")) {
    z <- if (kind == "memory") create_zarr() else create_zarr(local_store_path())
    s <- sharded_400(z, "start", index_location = "start")
    expect_identical(s$a[381:400, 11:30], s$x[381:400, 11:30], info = kind)
    s$a[1:20, 1:20] <- NA   # this inner chunk is now the fill value: not stored
    x <- s$x
    x[1:20, 1:20] <- NA
    expect_identical(s$a[1:25, 1:25], x[1:25, 1:25], info = kind)
    d <- define_array("int32", c(40, 40))
    d$chunk_shape <- c(20, 20)
    d$add_codec("sharding_indexed", list(chunk_shape = c(10, 10)))
    b <- z$add_array("/", "sparse", d)
    b[1:5, 1:5] <- 7L
    m <- matrix(NA_integer_, 40, 40)
    m[1:5, 1:5] <- 7L
    expect_identical(b[, ], m, info = kind)            # three shards were never written
    expect_identical(b[30:40, 1], rep(NA_integer_, 11), info = kind)
  }
})

test_that("a shard index that points past the end of the shard is a classed error", {
  path <- local_store_path()
  z <- create_zarr(path)
  s <- sharded_400(z)
  key <- file.path(path, "s", "c", "0", "0")
  if (!file.exists(key)) key <- file.path(path, "s", "c.0.0")
  bytes <- readBin(key, "raw", file.size(key))
  n <- length(bytes)
  # the first entry's offset, moved far beyond the file; the crc32c of the index is fixed up
  idx <- bytes[(n - 400 * 16 - 4 + 1):(n - 4)]
  idx[1:8] <- as.raw(c(0, 0, 0, 0, 0, 1, 0, 0))
  crc <- .Call(zarr:::ffi_crc32c, idx)
  bytes[(n - 400 * 16 - 4 + 1):(n - 4)] <- idx
  bytes[(n - 3):n] <- writeBin(as.integer(if (crc >= 2^31) crc - 2^32 else crc), raw(),
                               size = 4, endian = "little")
  writeBin(bytes, key)
  a <- open_zarr(path)[["/s"]]
  expect_error(a[1:20, 1:20], class = "zarr_error_corrupt_chunk")
  expect_identical(a[21:40, 1:20], s$x[21:40, 1:20])
})

test_that("a zip store reads shards by range too", {
  skip_if_not(nzchar(Sys.which("zip")), "no zip program")
  path <- local_store_path()
  z <- create_zarr(path)
  s <- sharded_400(z)
  zipfile <- tempfile(fileext = ".zip")
  withr::with_dir(path, utils::zip(zipfile, list.files(".", recursive = TRUE, all.files = TRUE),
                                   flags = "-q0"))  # stored members: ranges are read as ranges
  zz <- open_zarr(zipfile)
  d <- io_delta(zz$store, got <- zz[["/s"]][1:20, 1:20])
  expect_identical(got, s$x[1:20, 1:20])
  expect_equal(d[["requests"]], 2)
  expect_lt(d[["bytes"]], 12000)
})

test_that("an error signalled by a store written in R reaches the caller with its class", {
  failing <- R6::R6Class("failing_store", inherit = zarr_memorystore,
    public = list(
      get = function(key, prototype = NULL, byte_range = NULL) {
        if (grepl("/c", key, fixed = TRUE))
          stop(structure(class = c("my_store_error", "error", "condition"),
                         list(message = "the disk is on fire", call = NULL)))
        super$get(key, prototype, byte_range)
      },
      io_spec = function() {
        if (is.null(private$.io2))
          private$.io2 <- zarr:::store_io_r(
            get = function(keys) lapply(keys, function(k) self$get(k)),
            set = function(key, value) self$set(key, value),
            erase = function(key) self$erase(key))
        private$.io2
      }
    ),
    private = list(.io2 = NULL))
  st <- failing$new()
  st$create_group("/", "")
  a <- zarr$new(st)$add_array("/", "x", define_array("int32", c(4, 4)))
  expect_error(a[1:2, 1:2], class = "my_store_error")
  # the store still works afterwards
  expect_identical(st$get_metadata("x")$node_type, "array")
})

test_that("a shard followed by a bytes-to-bytes codec is read whole, not by ranges", {
  path <- local_store_path()
  z <- create_zarr(path)
  d <- define_array("float64", c(40, 40))
  d$chunk_shape <- c(40, 40)
  d$add_codec("sharding_indexed", list(chunk_shape = c(10, 10), index_location = "end"))
  d$add_codec("gzip", list(level = 1))
  a <- z$add_array("/", "g", d)
  x <- matrix(as.numeric(seq_len(1600)), 40, 40)
  a$write(x)
  z2 <- open_zarr(path, read_only = TRUE)
  st <- z2$store
  got <- NULL
  dd <- io_delta(st, got <- z2[["/g"]][1:10, 11:20])
  expect_identical(got, x[1:10, 11:20])
  expect_equal(dd[["requests"]], 1)  # the whole shard, gunzipped, then its index and chunk
  expect_identical(z2[["/g"]][, ], x)
})
