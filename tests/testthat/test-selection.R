# `[` and `[<-` on zarr arrays behave like base R indexing of the same array.

# A zarr array holding x, chunked so that selections cross chunk borders.
sel_array <- function(x, chunk, kind = "memory", env = parent.frame()) {
  z <- new_test_zarr(kind, env)
  dims <- dim(x) %||% length(x)
  def <- define_array(if (is.integer(x)) "int32" else "float64", dims)
  def$chunk_shape <- chunk
  arr <- z$add_array("/", "x", def)
  arr$write(x)
  arr
}

test_that("a missing index selects the whole extent", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  expect_identical(arr[, , ], x[, , ])
  expect_identical(arr[2, , ], x[2, , ])
  expect_identical(arr[, 3, ], x[, 3, ])
  expect_identical(arr[, , 3], x[, , 3])
  expect_identical(arr[4, 5, 3], x[4, 5, 3])
  m <- matrix(as.numeric(1:20), 4)
  am <- sel_array(m, c(3, 3))
  expect_identical(am[, 2], m[, 2])
  expect_identical(am[3, ], m[3, ])
  expect_identical(am[, ], m)
})

test_that("an empty index arr[] returns the whole array, as in base R", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  expect_identical(arr[], x[])
  m <- matrix(1:20, 4)
  expect_identical(sel_array(m, c(3, 3))[], m)
})

test_that("arr[] works on 1-d arrays", {
  v <- as.numeric(1:10)
  arr <- sel_array(v, 3)
  expect_identical(arr[], v)
})

test_that("drop = TRUE (default) and drop = FALSE behave like base R", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  expect_identical(arr[2, , 1], x[2, , 1])
  expect_null(dim(arr[2, , 1]))
  expect_identical(arr[2, , 1, drop = FALSE], x[2, , 1, drop = FALSE])
  expect_identical(dim(arr[2, , 1, drop = FALSE]), c(1L, 5L, 1L))
  expect_identical(arr[2, 3, 1, drop = FALSE], x[2, 3, 1, drop = FALSE])
  expect_identical(arr[1:2, 3, 1:2], x[1:2, 3, 1:2])
  expect_identical(arr[1:2, 3, 1:2, drop = TRUE], x[1:2, 3, 1:2, drop = TRUE])
  expect_identical(arr[drop = FALSE, 1:2, 3, 2], x[drop = FALSE, 1:2, 3, 2])
})

test_that("non-consecutive, reversed, repeated, negative, zero and fractional indices work", {
  x <- array(as.numeric(1:(7 * 6 * 5)), c(7, 6, 5))
  arr <- sel_array(x, c(3, 4, 2))
  expect_identical(arr[c(1, 3, 7), c(2, 6), c(1, 5)], x[c(1, 3, 7), c(2, 6), c(1, 5)])
  expect_identical(arr[7:1, 6:1, 5:1], x[7:1, 6:1, 5:1])
  expect_identical(arr[c(2, 2, 2), c(6, 1, 6), 3], x[c(2, 2, 2), c(6, 1, 6), 3])
  expect_identical(arr[-1, -c(2, 5), -5], x[-1, -c(2, 5), -5])
  expect_identical(arr[-(1:7), 1, 1], x[-(1:7), 1, 1])
  expect_identical(arr[c(0, 2), 1, 1:2], x[c(0, 2), 1, 1:2])
  expect_identical(arr[2.9, 1.1, 5], x[2.9, 1.1, 5])
  expect_identical(arr[integer(0), , 1], x[integer(0), , 1])
  expect_identical(arr[c(7, 1), -3, c(5, 5, 1), drop = FALSE], x[c(7, 1), -3, c(5, 5, 1), drop = FALSE])
})

test_that("logical indices, with recycling, work", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  expect_identical(arr[c(TRUE, FALSE), , ], x[c(TRUE, FALSE), , ])
  expect_identical(arr[c(TRUE, FALSE, TRUE, TRUE), c(FALSE, TRUE), TRUE], x[c(TRUE, FALSE, TRUE, TRUE), c(FALSE, TRUE), TRUE])
  expect_identical(arr[FALSE, 1, 1], x[FALSE, 1, 1])
})

test_that("a single index on a matrix or array selects in column-major order", {
  m <- matrix(1:20, 4)
  am <- sel_array(m, c(3, 3))
  expect_identical(am[c(1, 5, 7)], m[c(1, 5, 7)])
  expect_identical(am[20:17], m[20:17])
  expect_identical(am[c(3, 3, 18)], m[c(3, 3, 18)])
  expect_identical(am[m > 10], m[m > 10])
  expect_identical(am[-(2:19)], m[-(2:19)])
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  expect_identical(arr[c(60, 1, 33)], x[c(60, 1, 33)])
  expect_identical(arr[x %% 7 == 0], x[x %% 7 == 0])
})

test_that("1-d arrays index like vectors", {
  v <- as.numeric(1:10)
  arr <- sel_array(v, 3)
  expect_identical(arr[3:5], v[3:5])
  expect_identical(arr[-1], v[-1])
  expect_identical(arr[c(TRUE, FALSE)], v[c(TRUE, FALSE)])
  expect_identical(arr[10:1], v[10:1])
  expect_identical(arr[c(4, 4, 1)], v[c(4, 4, 1)])
  expect_equal(length(arr), 10)
  expect_null(dim(arr))
})

test_that("indices in variables are evaluated in the caller's frame", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  pick <- function(a, rows) {
    cols <- c(5, 1)
    k <- 2
    a[rows, cols, k]
  }
  expect_identical(pick(arr, 2:3), x[2:3, c(5, 1), 2])
  outer_fn <- function(a) {
    i <- 4
    inner <- function() {
      j <- -1
      a[i, j, 3]
    }
    inner()
  }
  expect_identical(outer_fn(arr), x[4, -1, 3])
  set_fn <- function(a, value) {
    rows <- c(1, 4)
    a[rows, 1, 1] <- value
    invisible(a)
  }
  set_fn(arr, c(-1L, -4L))
  x[c(1, 4), 1, 1] <- c(-1L, -4L)
  expect_identical(arr$read(), x)
  # an index named like an argument of `[` itself
  i <- 2
  drop_it <- 3
  expect_identical(arr[i, drop_it, ], x[i, drop_it, ])
  # in lapply
  got <- lapply(1:3, function(k) arr[, 1, k])
  expect_identical(got, lapply(1:3, function(k) x[, 1, k]))
})

test_that("dim(), length() and as.array() describe the array", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  expect_equal(dim(arr), c(4, 5, 3))
  expect_equal(length(arr), 60)
  expect_identical(as.array(arr), x)
  v <- sel_array(1:5, 2)
  expect_identical(as.array(v), array(1:5, 5))
})

test_that("read() takes a selection list with NULL for a whole extent", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  # each element of a selection is a range: c(2, 4) is 2 to 4
  expect_identical(arr$read(list(NULL, c(2, 4), 3)), x[, 2:4, 3, drop = FALSE])
  expect_identical(arr$read(list(2, NULL, NULL)), x[2, , , drop = FALSE])
  expect_identical(arr$read(NULL), x)
  expect_identical(arr$read(list(4:1, 5:1, 3:1)), x[4:1, 5:1, 3:1])
})

test_that("out-of-bounds and invalid indices are classed errors", {
  x <- array(1:60, c(4, 5, 3))
  arr <- sel_array(x, c(3, 2, 2))
  expect_error(arr[5, 1, 1], class = "zarr_error_index", regexp = "out of bounds")
  expect_error(arr[1, 6, 1], class = "zarr_error_index", regexp = "dimension 2")
  expect_error(arr[1, 1, 1:4], class = "zarr_error_index", regexp = "array '/x'")
  expect_identical(arr[c(61, 1)], x[c(61, 1)]) # NA past the end, as in base R
  expect_error(arr[1, 1], class = "zarr_error_index", regexp = "3 dimension")
  expect_error(arr[1, 1, 1, 1], class = "zarr_error_index")
  expect_error(arr[c(-1, 2), 1, 1], class = "zarr_error_index", regexp = "mixed")
  expect_error(arr["a", 1, 1], class = "zarr_error_index", regexp = "character")
  expect_identical(arr[c(TRUE, NA), 1, 1], x[c(TRUE, NA), 1, 1]) # NA selects NA, as in base R
  expect_error(arr[rep(TRUE, 5), 1, 1], class = "zarr_error_index")
  expect_identical(arr[NA_real_, 1, 1], x[NA_real_, 1, 1])
  expect_error(arr[c(-1, NA), 1, 1], class = "zarr_error_index")
  expect_error(arr$read(list(1:5, 1, 1)), class = "zarr_error_index")
  expect_error(arr$read(list(1, 1)), class = "zarr_error_index")
  expect_error(arr[1:2, 1, 1] <- 1:3, class = "zarr_error_value", regexp = "3 value")
  expect_error(arr[c(1, 61)] <- 0L, class = "zarr_error_index")
  expect_error(arr[5, 1, 1] <- 0L, class = "zarr_error_index")
  # nothing was changed by the failed writes
  expect_identical(arr$read(), x)
  # all of them are zarr errors
  expect_error(arr[5, 1, 1], class = "zarr_error")
})

test_that("partial writes through write(selection =) and `[<-` match base R", {
  for (kind in c("memory", "local")) {
    m <- matrix(as.numeric(1:120), 10, 12)
    arr <- sel_array(m, c(3, 4), kind)
    arr$write(matrix(-1, 2, 5), selection = list(2:3, 5:9))
    m[2:3, 5:9] <- -1
    expect_identical(arr$read(), m, info = kind)
    arr[2:3, 5:9] <- matrix(100 + 1:10, 2, 5)
    m[2:3, 5:9] <- matrix(100 + 1:10, 2, 5)
    expect_identical(arr$read(), m, info = kind)
    arr[1, ] <- 0
    m[1, ] <- 0
    expect_identical(arr$read(), m, info = kind)
    arr[, 12] <- 1:10
    m[, 12] <- 1:10
    expect_identical(arr$read(), m, info = kind)
    arr[c(10, 1, 5), c(12, 1)] <- c(7, 8, 9, 10, 11, 12)
    m[c(10, 1, 5), c(12, 1)] <- c(7, 8, 9, 10, 11, 12)
    expect_identical(arr$read(), m, info = kind)
    arr[-(1:8), -(1:10)] <- 55
    m[-(1:8), -(1:10)] <- 55
    expect_identical(arr$read(), m, info = kind)
    arr[c(TRUE, FALSE), 6] <- -6
    m[c(TRUE, FALSE), 6] <- -6
    expect_identical(arr$read(), m, info = kind)
    arr$write(m * 2, selection = list(NULL, NULL))
    expect_identical(arr$read(), m * 2, info = kind)
    # a write spanning every chunk
    arr[2:9, 2:11] <- 0.5
    m2 <- m * 2
    m2[2:9, 2:11] <- 0.5
    expect_identical(arr$read(), m2, info = kind)
    if (kind == "local") expect_identical(open_zarr(arr$store$root)[["/x"]]$read(), m2)
  }
})

test_that("repeated indices in a write keep the last value, as in base R", {
  m <- matrix(0L, 3, 3)
  arr <- sel_array(m, c(2, 2))
  arr[c(1, 1), 1] <- c(5L, 6L)
  m[c(1, 1), 1] <- c(5L, 6L)
  expect_identical(arr$read(), m)
})

test_that("writes into a 3-d array keep untouched elements", {
  x <- array(1:210, c(5, 6, 7))
  arr <- sel_array(x, c(2, 4, 3))
  arr[2:4, , 7] <- 0L
  x[2:4, , 7] <- 0L
  arr[, c(6, 1), c(1, 4)] <- -(1:20)
  x[, c(6, 1), c(1, 4)] <- -(1:20)
  arr$write(array(9L, c(1, 1, 7)), selection = list(5, 3, NULL))
  x[5, 3, ] <- 9L
  expect_identical(arr$read(), x)
})

test_that("the index of an integer array may be given as a double", {
  v <- 1:10
  arr <- sel_array(v, 4)
  expect_identical(arr[c(2, 9)], c(2L, 9L))
  arr[2] <- 20
  expect_identical(arr[2], 20L)
})

test_that("a single value is recycled over a row, a column and a block of an integer array", {
  for (kind in c("memory", "local")) {
    m <- matrix(1:63, 7, 9)
    arr <- sel_array(m, c(3, 4), kind)
    arr[1, ] <- 0L
    m[1, ] <- 0L
    arr[, 9] <- -1L
    m[, 9] <- -1L
    arr[3:7, 2:8] <- 42L
    m[3:7, 2:8] <- 42L
    expect_identical(arr$read(), m, info = kind)
    arr$write(5L, selection = list(c(2, 7), NULL)) # rows 2 to 7
    m[2:7, ] <- 5L
    expect_identical(arr$read(), m, info = kind)
  }
})
