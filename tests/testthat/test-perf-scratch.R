# Read scratch kept between reads (src/engine.c tbufs_take/tbufs_give, option
# zarr.scratch_bytes): values never depend on what an earlier read left in it,
# whatever the arrays, data types, thread counts and caps; a read started
# from inside another one (a store written in R that reads an array) works.

scratch_arrays <- function(z) {
  set.seed(5)
  x <- array(sample.int(60000L, 30 * 20 * 12, TRUE) - 30000L, c(30, 20, 12))
  d <- define_array("int16", dim(x))
  d$chunk_shape <- c(16, 8, 12)
  d$add_codec("zstd", list(level = 1))
  a <- z$add_array("/", "i16", d)
  a$write(x)
  y <- matrix(rnorm(70 * 50), 70, 50)
  d <- define_array("float64", dim(y))
  d$chunk_shape <- c(40, 40)
  d$add_codec("sharding_indexed", list(chunk_shape = c(10, 20)))
  b <- z$add_array("/", "f64", d)
  b$write(y)
  s <- matrix(sprintf("s%d-%s", 1:60, strrep("x", 1:60 %% 7)), 10, 6)
  d <- define_array("string", dim(s))
  d$chunk_shape <- c(4, 4)
  st <- z$add_array("/", "str", d)
  st$write(s)
  list(a = a, x = x, b = b, y = y, st = st, s = s)
}

test_that("reads give the same values with scratch kept, freed, or capped, over mixed arrays and threads", {
  zarr_clear_cache()
  withr::local_options(zarr.chunk_cache_bytes = 0)
  v <- scratch_arrays(create_zarr())
  for (cap in c(256 * 2^20, 0, 3000)) {
    withr::local_options(zarr.scratch_bytes = cap)
    for (nt in c(2L, 1L, 2L)) {
      withr::local_options(zarr.num_threads = nt)
      expect_identical(v$a[], v$x)
      expect_identical(v$st[2:9, 1:5], v$s[2:9, 1:5])
      expect_identical(v$b[3:61, 7:50], v$y[3:61, 7:50])
      expect_identical(v$a[5:20, 3, 2:11], v$x[5:20, 3, 2:11])
      expect_identical(v$st[], v$s)
      expect_identical(v$b[], v$y)
      expect_identical(v$a[17:30, 9:16, ], v$x[17:30, 9:16, ]) # one whole chunk
    }
  }
})

test_that("a read started by a store written in R while another read runs gets its own scratch", {
  withr::local_options(zarr.chunk_cache_bytes = 0, zarr.scratch_bytes = 256 * 2^20)
  v <- scratch_arrays(create_zarr())
  inner <- new.env()
  nested <- R6::R6Class("nested_store", inherit = zarr_memorystore,
    public = list(
      io_spec = function() {
        if (is.null(private$.io2))
          private$.io2 <- zarr:::store_io_r(
            get = function(keys) {
              inner$got <- c(inner$got, list(v$a[2:29, 1:20, 3:12])) # the engine, re-entered
              lapply(keys, function(k) self$get(k))
            },
            set = function(key, value) self$set(key, value),
            erase = function(key) self$erase(key))
        private$.io2
      }
    ),
    private = list(.io2 = NULL))
  st <- nested$new()
  st$create_group("/", "")
  w <- matrix(as.numeric(1:400), 20, 20)
  d <- define_array("float64", dim(w))
  d$chunk_shape <- c(8, 8)
  d$add_codec("gzip", list(level = 1))
  o <- zarr$new(st)$add_array("/", "o", d)
  o$write(w)
  expect_identical(o[], w)
  expect_identical(o[3:17, 2:19], w[3:17, 2:19])
  expect_gt(length(inner$got), 1)
  for (g in inner$got) expect_identical(g, v$x[2:29, 1:20, 3:12])
  # and the scratch kept for the outer reads still serves later ones
  expect_identical(v$b[], v$y)
  expect_identical(v$a[], v$x)
})

test_that("zarr.scratch_bytes must be a number of bytes", {
  a <- create_zarr()$add_array("/", "a", define_array("int32", 4))
  withr::local_options(zarr.scratch_bytes = -1)
  expect_error(a[1:2], class = "zarr_error_argument")
})

test_that("a codec written in R that reads another array while a chunk decodes keeps both right", {
  withr::local_options(zarr.chunk_cache_bytes = 0, zarr.scratch_bytes = 256 * 2^20)
  v <- scratch_arrays(create_zarr())
  got <- list()
  xor_bytes <- function(data, configuration) xor(data, as.raw(configuration$key))
  register_zarr_codec("test.scratchxor", xor_bytes, function(data, configuration) {
    got[[length(got) + 1L]] <<- v$b[]  # the engine, re-entered mid-decode
    xor_bytes(data, configuration)
  })
  def <- define_array("int32", c(30, 20))
  def$chunk_shape <- c(15, 20)
  def$remove_codec("zstd")
  def$add_codec("gzip", list(level = 1)) # so the R codec decodes from the engine's scratch
  def$add_codec("test.scratchxor", list(key = 7L))
  def$add_codec("gzip", list(level = 1))
  w <- matrix(1:600, 30, 20)
  a <- create_zarr()$add_array("/", "x", def)
  a[] <- w
  for (cap in c(256 * 2^20, 3000)) { # 3000: the inner read frees what it kept
    withr::local_options(zarr.scratch_bytes = cap)
    got <- list()
    expect_identical(a[], w)
    expect_identical(a[4:27, 2:19], w[4:27, 2:19])
    expect_length(got, 4L)
    for (g in got) expect_identical(g, v$y)
  }
})
