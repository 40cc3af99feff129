# The decoded-chunk cache (src/chunk_cache.c, option zarr.chunk_cache_bytes):
# values never differ from an uncached read, writes and metadata changes
# through the package drop what they change, the cap holds, hits are counted.

cache_array <- function(z, x, chunk, name = "a", dtype = "float64", shard = NULL) {
  d <- define_array(dtype, dim(x))
  d$chunk_shape <- chunk
  if (!is.null(shard)) d$add_codec("sharding_indexed", list(chunk_shape = shard))
  a <- z$add_array("/", name, d)
  a$write(x)
  a
}

stats_of <- function(a) a$store$io_stats()

# random windows, many overlapping, some crossing chunk edges, some points
check_windows <- function(a, x, n = 60, seed = 1) {
  set.seed(seed)
  d <- dim(x)
  for (k in seq_len(n)) {
    lo <- vapply(d, function(e) sample.int(e, 1L), 1L)
    hi <- pmin(d, lo + vapply(d, function(e) sample.int(max(1L, e %/% 3L), 1L), 1L))
    idx <- lapply(seq_along(d), function(i) lo[i]:hi[i])
    got <- do.call(`[`, c(list(a), idx, drop = FALSE))
    want <- do.call(`[`, c(list(x), idx, drop = FALSE))
    expect_identical(got, want)
  }
  m <- cbind(sample.int(d[1], 50, TRUE), sample.int(d[2], 50, TRUE))
  if (length(d) == 2L) expect_identical(a[m], x[m])
}

test_that("cached and uncached reads give the values of base R, over overlapping windows", {
  zarr_clear_cache()
  withr::local_options(zarr.chunk_cache_bytes = 64 * 2^20)
  z <- new_test_zarr("local")
  set.seed(2)
  x <- matrix(rnorm(120 * 90), 120, 90)
  a <- cache_array(z, x, c(32, 25))
  check_windows(a, x)
  s <- stats_of(a)
  expect_gt(s[["cache_hits"]], 0)
  expect_gt(s[["cache_bytes"]], 0)
  zarr_clear_cache()
  withr::local_options(zarr.chunk_cache_bytes = 0)
  check_windows(a, x)
  expect_identical(stats_of(a)[["cache_bytes"]], 0)
  # 3-d integers, a memory store (an R store)
  withr::local_options(zarr.chunk_cache_bytes = 2^24)
  y <- array(sample.int(1000L, 30 * 20 * 12, TRUE), c(30, 20, 12))
  b <- cache_array(create_zarr(), y, c(7, 6, 5), dtype = "int32")
  check_windows(b, y, n = 40, seed = 3)
  expect_gt(stats_of(b)[["cache_hits"]], 0)
})

test_that("hits make no requests, and whole reads do not fill the cache", {
  zarr_clear_cache()
  withr::local_options(zarr.chunk_cache_bytes = 64 * 2^20)
  z <- new_test_zarr("local")
  x <- matrix(as.numeric(1:4096), 64, 64)
  a <- cache_array(z, x, c(16, 16))
  expect_identical(a[], x)
  expect_identical(stats_of(a)[["cache_bytes"]], 0) # nothing kept
  expect_identical(a[3:10, 3:10], x[3:10, 3:10])    # one chunk, kept
  s0 <- stats_of(a)
  for (i in 1:5) expect_identical(a[2:12, 4:9], x[2:12, 4:9])
  s1 <- stats_of(a)
  expect_identical(s1[["requests"]] - s0[["requests"]], 0)
  expect_identical(s1[["cache_hits"]] - s0[["cache_hits"]], 5)
  # a chunk the cache holds serves a whole read too
  expect_identical(a[], x)
  expect_identical(stats_of(a)[["cache_hits"]] - s1[["cache_hits"]], 1)
  # missing chunks are remembered as missing
  b <- z$add_array("/", "empty", define_array("int32", c(40, 40)))
  b$chunking # (default chunks)
  r0 <- stats_of(b)[["requests"]]
  v1 <- b[2:5, 2:5]
  v2 <- b[2:5, 2:5]
  expect_identical(v1, v2)
  expect_identical(stats_of(b)[["requests"]] - r0, 1)
})

test_that("writes through the package drop what they change", {
  zarr_clear_cache()
  withr::local_options(zarr.chunk_cache_bytes = 64 * 2^20)
  for (kind in c("local", "memory")) {
    z <- new_test_zarr(kind)
    x <- matrix(as.numeric(1:1600), 40, 40)
    a <- cache_array(z, x, c(10, 10))
    expect_identical(a[1:15, 1:15], x[1:15, 1:15])
    a[3, 4] <- -1                           # partial write
    x[3, 4] <- -1
    expect_identical(a[1:15, 1:15], x[1:15, 1:15])
    a[11:20, 1:10] <- matrix(0.5, 10, 10)  # a whole chunk
    x[11:20, 1:10] <- 0.5
    expect_identical(a[1:15, 1:15], x[1:15, 1:15])
    x2 <- x * 2
    a$write(x2)                              # everything
    expect_identical(a[1:15, 1:15], x2[1:15, 1:15])
    # store-level: a chunk's value replaced by another's, then erased
    st <- a$store
    keys <- a$chunking$chunk_keys(rbind(c(0, 0), c(1, 1)))
    st$set(keys[1], st$get(keys[2]))
    expect_identical(a[1:5, 1:5], x2[11:15, 11:15])
    st$erase(keys[1])
    expect_true(all(is.na(a[1:5, 1:5])) || all(a[1:5, 1:5] == 0))
  }
})

test_that("metadata changes (resize, append, a new array with other codecs) drop what they change", {
  zarr_clear_cache()
  withr::local_options(zarr.chunk_cache_bytes = 64 * 2^20)
  z <- new_test_zarr("local")
  x <- matrix(as.numeric(1:1600), 40, 40)
  a <- cache_array(z, x, c(10, 10))
  expect_identical(a[31:40, 31:35], x[31:40, 31:35])
  a$resize(c(35, 40))
  a$resize(c(40, 40)) # elements past row 35 are fill now
  got <- a[31:40, 31:35]
  expect_identical(got[1:5, ], x[31:35, 31:35])
  expect_true(all(is.na(got[6:10, ])))
  a$append(matrix(-1, 5, 40), along = 1)
  expect_identical(a[41:45, 1:3], matrix(-1, 5, 3))
  # the same path, an array of another data type and codecs
  expect_identical(a[1:5, 1:5], x[1:5, 1:5])
  z$delete_array("/a")
  d <- define_array("int32", c(40, 40))
  d$chunk_shape <- c(10, 10)
  d$add_codec("gzip", list(level = 1))
  b <- z$add_array("/", "a", d)
  b$write(matrix(7L, 40, 40))
  expect_identical(b[1:5, 1:5], matrix(7L, 5, 5))
  # another object of the same store path sees the writes of the first
  a2 <- open_zarr(z$store$root)$root[["a"]]
  expect_identical(a2[1:5, 1:5], matrix(7L, 5, 5))
  b[1, 1] <- 8L
  expect_identical(a2[1:2, 1], c(8L, 7L))
})

test_that("the cap holds, for the whole cache and per array", {
  zarr_clear_cache()
  chunk_bytes <- 20 * 20 * 8
  withr::local_options(zarr.chunk_cache_bytes = 3.5 * chunk_bytes + 500)
  z <- new_test_zarr("local")
  x <- matrix(runif(200 * 200), 200, 200)
  a <- cache_array(z, x, c(20, 20))
  cap <- getOption("zarr.chunk_cache_bytes")
  set.seed(4)
  for (k in 1:40) {
    i <- sample.int(190, 1); j <- sample.int(190, 1)
    expect_identical(a[i:(i + 5), j:(j + 5)], x[i:(i + 5), j:(j + 5)])
    expect_lte(stats_of(a)[["cache_bytes"]], cap)
  }
  expect_gt(stats_of(a)[["cache_bytes"]], 2 * chunk_bytes)
  # lowering the option evicts at the next read
  withr::local_options(zarr.chunk_cache_bytes = chunk_bytes + 100)
  invisible(a[1:2, 1:2])
  expect_lte(stats_of(a)[["cache_bytes"]], chunk_bytes + 100)
  # an array's own cap
  withr::local_options(zarr.chunk_cache_bytes = 64 * 2^20)
  zarr_clear_cache()
  a$chunk_cache_bytes <- 2 * chunk_bytes + 200
  for (k in 1:10) invisible(a[(k * 15):(k * 15 + 3), 5:8])
  expect_lte(stats_of(a)[["cache_bytes"]], 2 * chunk_bytes + 200)
  expect_gt(stats_of(a)[["cache_bytes"]], 0)
  a$chunk_cache_bytes <- 0
  zarr_clear_cache()
  invisible(a[5:8, 5:8])
  expect_identical(stats_of(a)[["cache_bytes"]], 0)
  expect_error(a$chunk_cache_bytes <- -1, class = "zarr_error")
  a$chunk_cache_bytes <- NULL
  invisible(a[5:8, 5:8])
  expect_gt(stats_of(a)[["cache_bytes"]], 0)
  zarr_clear_cache(a)
  expect_identical(stats_of(a)[["cache_bytes"]], 0)
})

test_that("sharded arrays cache their inner chunks and index; v2 arrays their chunks", {
  zarr_clear_cache()
  withr::local_options(zarr.chunk_cache_bytes = 64 * 2^20)
  z <- new_test_zarr("local")
  set.seed(5)
  x <- matrix(rnorm(80 * 60), 80, 60)
  a <- cache_array(z, x, c(40, 30), name = "s", shard = c(10, 10))
  check_windows(a, x, n = 50, seed = 6)
  s0 <- stats_of(a)
  expect_gt(s0[["cache_hits"]], 0)
  for (i in 1:3) expect_identical(a[3:7, 3:7], x[3:7, 3:7])
  s1 <- stats_of(a)
  expect_identical(s1[["requests"]] - s0[["requests"]], 0) # index and inner chunk cached
  a[4, 4] <- 100
  x[4, 4] <- 100
  expect_identical(a[3:7, 3:7], x[3:7, 3:7])
  # a gzipped shard is read whole: its inner chunks are still cached
  d <- define_array("float64", dim(x))
  d$chunk_shape <- c(40, 30)
  d$add_codec("sharding_indexed", list(chunk_shape = c(10, 10)))
  d$add_codec("gzip", list(level = 1))
  g <- z$add_array("/", "g", d)
  g$write(x)
  check_windows(g, x, n = 30, seed = 7)
  expect_gt(stats_of(g)[["cache_hits"]], s1[["cache_hits"]])
  # v2
  withr::local_options(zarr.format = 2L)
  z2 <- create_zarr(local_store_path())
  v <- cache_array(z2, x, c(16, 16), name = "v2")
  expect_identical(as.integer(v$metadata$zarr_format), 2L)
  check_windows(v, x, n = 40, seed = 8)
  expect_gt(stats_of(v)[["cache_hits"]], 0)
  v[20, 20] <- -5
  x[20, 20] <- -5
  expect_identical(v[18:22, 18:22], x[18:22, 18:22])
})
