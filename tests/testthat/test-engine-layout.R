# The read and write engine's fast paths: C-order chunks copied in tiles,
# chunks handed out in per-thread shares, one thread for small calls, no
# copy of the result in R, and whole-chunk writes that never read the chunk.

c_order_array <- function(type, dims, chunks, fill = NULL) {
  def <- define_array(type, dims)
  def$portable <- TRUE # no transpose: chunks in C order, R's in column-major order
  def$chunk_shape <- chunks
  if (!is.null(fill)) def$fill_value <- fill
  z <- create_zarr(tempfile(fileext = ".zarr"))
  z$add_array("/", "a", def)
}

test_that("C-order chunks of a matrix read and write right through the tiled copy", {
  set.seed(11)
  x <- matrix(runif(130 * 90), 130, 90)
  x[5, 7] <- NA
  a <- c_order_array("float64", dim(x), c(64, 40), fill = -1)
  expect_identical(vapply(a$codecs, function(cd) cd$name, ""), c("bytes", "zstd"))
  for (nt in 1:2) {
    withr::with_options(list(zarr.num_threads = nt), {
      a$write(x)
      expect_identical(a[, ], x)
      expect_identical(a[3:129, 5:88], x[3:129, 5:88])
      expect_identical(a[64:128, 40:79], x[64:128, 40:79]) # whole chunks
      expect_identical(a[c(1, 70, 2), 33:34], x[c(1, 70, 2), 33:34])
      expect_identical(a[100, ], x[100, ])
    })
  }
  # a part written through the tiled copy R -> chunk, then read back
  y <- x
  y[10:100, 20:60] <- -y[10:100, 20:60]
  a[10:100, 20:60] <- -x[10:100, 20:60]
  expect_identical(a[, ], y)
  # the fill value reads as NA, other values as they are
  a[1:64, 1:40] <- -1
  y[1:64, 1:40] <- NA
  expect_identical(a[, ], y)
})

test_that("C-order chunks of 3-d integer arrays read and write through the tiled copy", {
  x <- array(seq_len(70 * 50 * 3) - 1000L, c(70, 50, 3))
  a <- c_order_array("int32", dim(x), c(40, 33, 2))
  a$write(x)
  expect_identical(a[, , ], x)
  expect_identical(a[2:69, 3:50, 2:3], x[2:69, 3:50, 2:3])
  expect_identical(a[, 10, ], x[, 10, ])
  a[5:60, 1:40, 1] <- x[5:60, 1:40, 1] * 2L
  x[5:60, 1:40, 1] <- x[5:60, 1:40, 1] * 2L
  expect_identical(a[, , ], x)
})

test_that("a read result carries its dimensions and no internal attribute", {
  x <- matrix(as.double(1:(300 * 200)), 300, 200)
  z <- create_zarr(tempfile(fileext = ".zarr"))
  def <- define_array("float64", dim(x))
  def$chunk_shape <- c(100, 100)
  arr <- z$add_array("/", "a", def)
  arr$write(x)
  v <- arr[, ]
  expect_identical(attributes(v), list(dim = c(300L, 200L)))
  expect_identical(v, x)
  expect_identical(attributes(arr[2:3, 4:9]), list(dim = c(2L, 6L)))
})

test_that("many chunks on 2 threads read the same values as on 1, in any order of arrival", {
  set.seed(12)
  x <- matrix(rnorm(400 * 300), 400, 300)
  z <- create_zarr(tempfile(fileext = ".zarr"))
  def <- define_array("float64", dim(x))
  def$chunk_shape <- c(50, 60)
  a <- z$add_array("/", "a", def)
  withr::with_options(list(zarr.num_threads = 2), a$write(x))
  one <- withr::with_options(list(zarr.num_threads = 1), a[, ])
  two <- withr::with_options(list(zarr.num_threads = 2), a[, ])
  three <- withr::with_options(list(zarr.num_threads = 3), a[17:399, 2:299])
  expect_identical(one, x)
  expect_identical(two, x)
  expect_identical(three, x[17:399, 2:299])
})

test_that("a write of whole chunks never reads them; a partial write does", {
  x <- matrix(as.double(1:(40 * 30)), 40, 30)
  p <- tempfile(fileext = ".zarr")
  z <- create_zarr(p)
  def <- define_array("float64", dim(x))
  def$chunk_shape <- c(20, 15)
  a <- z$add_array("/", "a", def)
  a$write(x)
  files <- list.files(p, recursive = TRUE, full.names = TRUE)
  files <- files[!grepl("zarr\\.json$|\\.z[a-z]+$", basename(files))]
  expect_length(files, 4)
  for (f in files) writeBin(as.raw(c(1, 2, 3)), f) # every chunk corrupt
  # whole chunks: written without reading what is there
  a[1:20, 16:30] <- -x[1:20, 16:30]
  expect_identical(a[1:20, 16:30], -x[1:20, 16:30])
  # a partial chunk must merge with the existing (corrupt) content: an error
  expect_error(a[21:30, 1:5] <- 0, class = "zarr_error")
})

test_that("one large chunk read alone is copied by several threads, in either layout, with NA and selections", {
  # 2^20 elements and more in a read of fewer chunks than threads: the copy
  # into R is split between the threads along the dimension slowest in R
  x <- array(as.integer((seq_len(128 * 96 * 90) * 7L) %% 65535L), c(128, 96, 90))
  x[3, 5, 7] <- NA
  for (layout in c("C", "F")) {
    a <- if (layout == "C") c_order_array("uint16", dim(x), dim(x)) else {
      def <- define_array("uint16", dim(x))
      def$chunk_shape <- dim(x)
      create_zarr()$add_array("/", "a", def)
    }
    a[, , ] <- x
    for (nt in 1:3) withr::with_options(list(zarr.num_threads = nt), {
      expect_identical(a[, , ], x, info = paste(layout, nt))
      expect_identical(a[2:127, , 3:90], x[2:127, , 3:90], info = paste(layout, nt))
      expect_identical(a[seq(1, 128, 2), 96:1, ], x[seq(1, 128, 2), 96:1, ], info = paste(layout, nt))
      expect_identical(a$read(), x, info = paste(layout, nt))
    })
  }
  # double results (a float32 array) through the same split
  y <- array(seq_len(2^20) / 4, c(64, 128, 128))
  b <- c_order_array("float32", dim(y), dim(y))
  b[, , ] <- y
  withr::with_options(list(zarr.num_threads = 2), expect_identical(b[, , ], y))
})
