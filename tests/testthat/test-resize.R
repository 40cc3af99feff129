# $resize() and $append(): values, the chunk files left in the store, the
# metadata written (and the consolidated copy).

resize_fixture <- function(path, format = 3L, name = "a", fill = NULL) {
  z <- withr::with_options(list(zarr.format = format), create_zarr(path))
  d <- define_array("int32", c(20, 30))
  d$chunk_shape <- c(8, 10)
  d$format <- format
  if (!is.null(fill)) d$fill_value <- fill
  a <- z$add_array("/", name, d)
  x <- matrix(1:600, 20, 30)
  a$write(x)
  list(z = z, a = a, x = x, path = path)
}

chunk_files <- function(path, name = "a") {
  f <- list.files(file.path(path, name), recursive = TRUE, all.files = TRUE)
  sort(f[!basename(f) %in% c("zarr.json", ".zarray", ".zattrs")])
}

test_that("growing keeps the values and adds fill values", {
  f <- resize_fixture(local_store_path())
  f$a$resize(c(25, 42))
  expect_equal(f$a$shape, c(25, 42))
  got <- f$a$read(fill_as_na = FALSE)
  expect_identical(got[1:20, 1:30], f$x)
  expect_true(all(is.na(got[21:25, ])) && all(is.na(got[, 31:42]))) # int32's default fill is NA
  # the metadata in the store, read by another process
  a2 <- open_zarr(f$path, read_only = TRUE)[["/a"]]
  expect_equal(a2$shape, c(25, 42))
  expect_identical(a2$read(fill_as_na = FALSE), got)
  expect_equal(jsonlite::read_json(file.path(f$path, "a", "zarr.json"))$shape, list(25L, 42L))
})

test_that("shrinking erases the chunks past the edge and clears the cut ones", {
  f <- resize_fixture(local_store_path())
  before <- chunk_files(f$path)
  expect_length(before, 9) # 3 x 3 chunks
  f$a$resize(c(13, 20))
  expect_equal(chunk_files(f$path), c("c.0.0", "c.0.1", "c.1.0", "c.1.1"))
  expect_identical(f$a[], f$x[1:13, 1:20])
  # growing again: the elements that were cut read as the fill value
  f$a$resize(c(20, 30))
  got <- f$a$read(fill_as_na = FALSE)
  expect_identical(got[1:13, 1:20], f$x[1:13, 1:20])
  expect_true(all(is.na(got[14:20, ])))
  expect_true(all(is.na(got[, 21:30])))
  # an explicit fill value
  g <- resize_fixture(local_store_path(), fill = -7L)
  g$a$resize(c(13, 25))
  g$a$resize(c(20, 30))
  got <- g$a$read(fill_as_na = FALSE)
  expect_identical(got[1:13, 1:25], g$x[1:13, 1:25])
  expect_true(all(got[14:20, ] == -7L) && all(got[, 26:30] == -7L))
  # to zero along a dimension: no chunks left
  f$a$resize(c(0, 30))
  expect_length(chunk_files(f$path), 0)
  expect_equal(dim(f$a[]), c(0, 30))
})

test_that("append() grows one dimension and writes the new slab", {
  f <- resize_fixture(local_store_path())
  f$a$append(matrix(1001:1040, 20, 2)) # along the last dimension
  expect_equal(f$a$shape, c(20, 32))
  expect_identical(f$a[], cbind(f$x, matrix(1001:1040, 20, 2)))
  f$a$append(2001:2032, along = 1) # one slice, one dimension fewer
  expect_equal(f$a$shape, c(21, 32))
  expect_identical(f$a[21, ], 2001:2032)
  expect_true("c.2.3" %in% chunk_files(f$path))
  a2 <- open_zarr(f$path, read_only = TRUE)[["/a"]]
  expect_identical(a2[], f$a[])
  expect_error(f$a$append(matrix(1, 5, 5)), class = "zarr_error_value")
  expect_error(f$a$append(1, along = 3), class = "zarr_error_argument")
  # a 1-d time series
  z <- create_zarr()
  d <- define_array("float64", 5)
  d$chunk_shape <- 4
  ts <- z$add_array("/", "t", d)
  ts$write(1:5)
  for (i in 1:3) ts$append(c(10 * i, 10 * i + 1))
  expect_equal(ts[], c(1:5, 10, 11, 20, 21, 30, 31))
})

test_that("resize(low, high) works as in CRAN's zarr: whole chunks at the start", {
  f <- resize_fixture(local_store_path())
  f$a$resize(low = c(0, 10), high = c(2, 0))
  expect_equal(f$a$shape, c(22, 40))
  got <- f$a$read(fill_as_na = FALSE)
  expect_identical(got[1:20, 11:40], f$x)
  expect_true(all(is.na(got[, 1:10])))
  # growing at the start rounds up to whole chunks
  f$a$resize(low = c(0, 3))
  expect_equal(f$a$shape, c(22, 50))
  expect_identical(f$a[1:20, 21:50], f$x)
  # shrinking at the start removes whole chunks (rounded toward zero)
  f$a$resize(c(0, -25), c(-2, 0)) # unnamed, as code written for CRAN's zarr 1.0.0 calls it
  expect_equal(f$a$shape, c(20, 30))
  expect_identical(f$a[], f$x)
  expect_length(chunk_files(f$path), 9)
  # the chunks moved through temporary keys, which are gone
  expect_false(any(grepl("__zarr_move", list.files(f$path, recursive = TRUE, include.dirs = TRUE))))
  expect_error(f$a$resize(c(1, 1), high = c(1, 1)), class = "zarr_error_argument")
  expect_error(f$a$resize(c(1, 1, 1)), class = "zarr_error_argument")
  expect_error(f$a$resize(high = c(-21, 0)), class = "zarr_error_argument")
})

test_that("Zarr v2 arrays resize and append too", {
  f <- resize_fixture(local_store_path(), format = 2L)
  f$a$resize(c(12, 30))
  expect_equal(jsonlite::read_json(file.path(f$path, "a", ".zarray"))$shape, list(12L, 30L))
  expect_length(chunk_files(f$path), 6)
  f$a$append(matrix(-(1:90), 3, 30), along = 1)
  expect_identical(open_zarr(f$path)[["/a"]][], rbind(f$x[1:12, ], matrix(-(1:90), 3, 30)))
})

test_that("resize updates consolidated metadata once, and refuses read-only stores", {
  f <- resize_fixture(local_store_path())
  zarr_consolidate(f$z)
  f$a$resize(c(10, 10))
  root <- jsonlite::read_json(file.path(f$path, "zarr.json"))
  expect_equal(root$consolidated_metadata$metadata$a$shape, list(10L, 10L))
  ro <- open_zarr(f$path, read_only = TRUE)[["/a"]]
  expect_error(ro$resize(c(5, 5)), class = "zarr_error_read_only")
  expect_equal(ro$shape, c(10, 10))
})

test_that("a sharded array shrinks by whole shards and clears the cut shard", {
  z <- create_zarr(local_store_path())
  x <- matrix(as.numeric(1:1600), 40, 40)
  a <- sharded_fixture(z, x)
  a$resize(c(30, 40))
  expect_identical(a[], x[1:30, ])
  a$resize(c(40, 40))
  expect_identical(a[1:30, ], x[1:30, ])
  expect_true(all(is.na(a[31:40, ])))
})

test_that("a memory store resizes too (keys found by listing)", {
  z <- create_zarr()
  d <- define_array("float64", c(10, 10))
  d$chunk_shape <- c(3, 3)
  a <- z$add_array("/", "m", d)
  a$write(matrix(1, 10, 10))
  a$resize(c(4, 4))
  keys <- z$store$keys
  expect_setequal(keys[startsWith(keys, "m/c")], c("m/c.0.0", "m/c.0.1", "m/c.1.0", "m/c.1.1"))
  a$resize(c(6, 6))
  expect_equal(sum(a[] == 1, na.rm = TRUE), 16)
})

test_that("zarr-python 2 reads a v2 array resized and appended here", {
  skip_without_python_zarr()
  f <- resize_fixture(local_store_path(), format = 2L)
  f$a$resize(c(13, 25))
  f$a$append(matrix(-(1:50), 2, 25), along = 1)
  f$a$resize(c(15, 32))
  got <- run_python("emit(dump(sys.argv[1]))", f$path)$arrays[["/a"]]
  expect_equal(unlist(got$shape), c(15, 32))
  want <- matrix(NA_integer_, 15, 32)
  want[1:13, 1:25] <- f$x[1:13, 1:25]
  want[14:15, 1:25] <- matrix(-(1:50), 2, 25)
  vals <- vapply(got$data, function(v) if (is.null(v)) NA_real_ else as.numeric(v), 0)
  py <- matrix(vals, 15, 32, byrow = TRUE) # C order
  fill <- as.numeric(got$fill_value)
  py[py == fill] <- NA
  expect_equal(py, array(as.numeric(want), dim(want)))
})
