# Issue 19, defects 11-16: base-R indexing (matrix and linear indices,
# indices missing in the caller), point selections that read only their
# chunks, datetime64 rounding down, NA in the small float formats and the
# int64 precision warning.

# A float64 array of shape `shape` holding 1, 2, ..., chunked by `chunk`.
seq_array <- function(shape, chunk, kind = "memory", env = parent.frame()) {
  z <- new_test_zarr(kind, env)
  def <- define_array("float64", shape)
  def$chunk_shape <- chunk
  arr <- z$add_array("/", "a", def)
  arr$write(array(as.numeric(seq_len(prod(shape))), shape))
  arr
}

test_that("a numeric matrix with one column per dimension selects one element per row (defect 11)", {
  x <- array(as.numeric(1:60), c(4, 5, 3))
  arr <- seq_array(dim(x), c(3, 2, 2))
  m <- matrix(as.numeric(1:20), 4)
  am <- seq_array(dim(m), c(3, 3))
  expect_identical(am[cbind(c(1, 2), c(3, 4))], m[cbind(c(1, 2), c(3, 4))]) # 9 14
  expect_identical(am[cbind(c(1, 2), c(3, 4))], c(9, 14))
  idx <- cbind(c(4, 1, 4, 2, 0, 3), c(5, 1, 5, 3, 2, 1), c(3, 1, 3, 2, 1, 2)) # repeats, a 0 row
  expect_identical(arr[idx], x[idx])
  expect_identical(arr[idx[integer(), , drop = FALSE]], x[idx[integer(), , drop = FALSE]])
  idx_na <- rbind(idx, c(NA, 1, 1))
  expect_identical(arr[idx_na], x[idx_na])
  # integer matrices too; other column counts and logical matrices are linear
  expect_identical(am[cbind(2:3, 4:3)], m[cbind(2:3, 4:3)])
  expect_identical(arr[cbind(1:3, 2:4)], x[cbind(1:3, 2:4)])
  lm <- matrix(c(TRUE, FALSE), 4, 5)
  expect_identical(am[lm], m[lm])
  expect_error(arr[cbind(5, 1, 1)], class = "zarr_error_index", regexp = "out of bounds")
  expect_error(arr[cbind(-1, 1, 1)], class = "zarr_error_index", regexp = "negative")
  # replacement
  y <- x
  idx <- idx[-5, ]
  arr[idx] <- -seq_len(5)
  y[idx] <- -seq_len(5)
  expect_identical(arr[], y)
  arr[cbind(1, 1, 1)] <- 100
  y[cbind(1, 1, 1)] <- 100
  expect_identical(arr[], y)
})

test_that("indices missing in the calling function select the whole extent (defect 12)", {
  m <- matrix(as.numeric(1:20), 4)
  am <- seq_array(dim(m), c(3, 3))
  f <- function(a, i, j) a[i, j]
  expect_identical(f(am, , 2), m[, 2])
  expect_identical(f(am), f(m))
  expect_identical(f(am, 3), m[3, ])
  g <- function(a, i) a[i, 1]
  expect_identical(g(am), m[, 1])
  h <- function(a, ...) a[..., drop = FALSE]
  expect_identical(h(am, 2, ), m[2, , drop = FALSE])
  one <- function(a, i) a[i]
  expect_identical(one(am), m)
  # through `[<-` too
  set <- function(a, i, j, value) {
    a[i, j] <- value
    a
  }
  set(am, , 1, 0)
  m[, 1] <- 0
  expect_identical(am[], m)
  # an explicit NULL selects nothing, as in base R
  expect_identical(am[NULL, 2], m[NULL, 2])
  expect_identical(am[NULL], m[NULL])
})

test_that("linear and matrix selections read only the chunks holding their elements (defect 13)", {
  withr::local_options(zarr.chunk_cache_bytes = 0) # requests counted: none served by the cache
  for (kind in c("memory", "local")) {
    arr <- seq_array(c(40, 40), c(2, 2), kind) # 400 chunks
    st <- arr$store
    before <- st$io_stats()[["requests"]]
    expect_identical(arr[c(1, length(arr))], c(1, 1600))
    expect_identical(st$io_stats()[["requests"]] - before, 2)
    before <- st$io_stats()[["requests"]]
    expect_identical(arr[cbind(c(1, 2, 40, 39), c(1, 2, 40, 40))], c(1, 42, 1600, 1599))
    expect_identical(st$io_stats()[["requests"]] - before, 2) # two chunks hold the four points
    # replacement reads and writes only those chunks too
    before <- st$io_stats()[["requests"]]
    arr[c(1, 1600)] <- c(-1, -2)
    expect_lte(st$io_stats()[["requests"]] - before, 4)
    expect_identical(arr[c(1, 2, 1600)], c(-1, 2, -2))
    # past the end and NA read NA, as in base R; replacement cannot grow
    expect_identical(arr[c(1601, NA, 3)], c(NA, NA, 3))
    expect_error(arr[1601] <- 0, class = "zarr_error_index")
  }
})

test_that("point selections work with sharding, rectilinear grids, strings and times", {
  x <- array(as.numeric(1:(6 * 7)), c(6, 7))
  z <- create_zarr()
  def <- define_array("float64", dim(x))
  def$chunk_shape <- c(2, 3)
  def$add_codec("sharding_indexed", list(chunk_shape = c(1, 1)))
  sh <- z$add_array("/", "sh", def)
  sh$write(x)
  idx <- cbind(c(6, 1, 3, 6), c(7, 1, 2, 7))
  expect_identical(sh[idx], x[idx])
  sh[idx[1:2, ]] <- c(0, -1)
  x[idx[1:2, ]] <- c(0, -1)
  expect_identical(sh[], x)
  s <- matrix(c(letters[1:12]), 3)
  sa <- as_zarr(s)[["/"]]
  expect_identical(sa[c(12, 1, 5)], s[c(12, 1, 5)])
  expect_identical(sa[cbind(3, 4)], s[cbind(3, 4)])
  d <- as.Date("2024-01-01") + 0:19
  dim(d) <- c(4, 5)
  da <- as_zarr(d)[["/"]]
  expect_identical(da[c(20, NA, 1)], d[c(20, NA, 1)])
  expect_identical(da[cbind(c(4, 1), c(5, 1))], d[cbind(c(4, 1), c(5, 1))])
  expect_identical(da[1:20], d[1:20]) # dense: picked from the block
})

test_that("POSIXct written to datetime64 is rounded down to the unit, as numpy casts (defect 14)", {
  z <- create_zarr()
  dt <- function(unit) list(name = "numpy.datetime64", configuration = list(unit = unit, scale_factor = 1L))
  days <- z$add_array("/", "d", define_array(dt("D"), 3))
  t <- as.POSIXct(c("2020-01-01 18:00:00", "1969-12-31 18:00:00", "2020-01-02 00:00:00"), tz = "UTC")
  days$write(t)
  expect_identical(format(days$read()), c("2020-01-01", "1969-12-31", "2020-01-02"))
  secs <- z$add_array("/", "s", define_array(dt("s"), 3))
  secs$write(as.POSIXct(c(0.9, -0.1, 1.3e9 + 0.3), origin = "1970-01-01", tz = "UTC"))
  expect_identical(as.numeric(secs$read()), c(0, -1, 1.3e9))
  ms <- z$add_array("/", "ms", define_array(dt("ms"), 2))
  ms$write(as.POSIXct(c(0.3, 1.7e9 + 0.001), origin = "1970-01-01", tz = "UTC")) # 0.3 s is 0.29999... s
  expect_equal(as.numeric(ms$read()), c(0.3, 1.7e9 + 0.001))
  td <- z$add_array("/", "td", define_array(list(name = "numpy.timedelta64", configuration = list(unit = "m", scale_factor = 1L)), 2))
  td$write(as.difftime(c(59, -1), units = "secs"))
  expect_identical(as.numeric(td$read(), units = "secs"), c(0, -60))
})

test_that("python's numpy reads the days the datetime64 seconds fall in", {
  skip_without_python_zarr()
  withr::local_options(zarr.format = 2) # zarr-python 2
  z <- create_zarr(local_store_path())
  dt <- list(name = "numpy.datetime64", configuration = list(unit = "m", scale_factor = 1L))
  a <- z$add_array("/", "t", define_array(dt, 2))
  a$write(as.POSIXct(c("2020-01-01 18:00:59", "1969-12-31 23:59:59"), tz = "UTC"))
  out <- run_python("import sys, json, zarr; a = zarr.open(sys.argv[1], mode='r')[:]; print(json.dumps([str(v) for v in a]))",
                    file.path(z$store$root, "t"))
  expect_identical(unlist(out), c("2020-01-01T18:00", "1969-12-31T23:59"))
})

test_that("NA survives the small float formats apart from NaN, whatever the fill value (defect 15)", {
  for (dt in c("float16", "bfloat16", "float8_e4m3", "float8_e5m2")) {
    for (fill in list(NaN, 0, 1)) {
      z <- create_zarr()
      def <- define_array(dt, 4)
      def$fill_value <- fill
      arr <- z$add_array("/", "a", def)
      withr::with_options(list(zarr.fill_as_na = FALSE), arr$write(c(NA, NaN, 0.5, -2)))
      for (fna in c(TRUE, FALSE)) {
        out <- arr$read(fill_as_na = fna)
        info <- paste(dt, fill, fna)
        expect_true(is.na(out[1]) && !is.nan(out[1]), info = info)
        expect_true(is.nan(out[2]), info = info)
        expect_identical(out[3:4], c(0.5, -2), info = info)
      }
      # an NA written where the fill value stands for NA reads NA too
      arr$write(c(NA, 1, 1, 1))
      expect_true(is.na(arr$read()[1]), info = dt)
    }
  }
})

test_that("int64 read as double warns for every value a double cannot hold (defect 16)", {
  skip_if_not_installed("bit64")
  z <- create_zarr()
  arr <- z$add_array("/", "a", define_array("int64", 4))
  big <- bit64::as.integer64(c("9007199254740993", "-9007199254740993", "9007199254740994", "1"))
  arr$write(big)
  withr::local_options(zarr.int64 = "double")
  expect_warning(out <- arr$read(), class = "zarr_warning_precision", regexp = "2 value")
  expect_identical(out[3:4], c(9007199254740994, 1))
  expect_no_warning(arr$read(list(3:4)))
  u <- z$add_array("/", "u", define_array("uint64", 2))
  u$write(bit64::as.integer64(c("9007199254740993", "4")))
  expect_warning(u$read(), class = "zarr_warning_precision", regexp = "1 value")
})
